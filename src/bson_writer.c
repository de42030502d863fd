/*
 * bson_writer.c
 *		Buffer management and the general (non-fast-path) string writer.
 */
#include "bson_writer.h"

#include "utils/memutils.h"

/* Largest bytea: the whole varlena, header included, must fit in palloc. */
#define BSON_MAX_ALLOC	MaxAllocSize

static void report_bad_string(BsonWriter *w, const char *s, int len,
							  int bad_offset, bool is_key,
							  bool untranslatable) pg_attribute_noreturn();

/*
 * Start a writer whose output is expected to take about estimate bytes of
 * BSON.  The buffer grows geometrically if the estimate is exceeded.
 */
void
bson_writer_init(BsonWriter *w, Size estimate)
{
	Size		cap = VARHDRSZ + Max(estimate, (Size) 64);

	if (cap > BSON_MAX_ALLOC)
		cap = BSON_MAX_ALLOC;
	w->buf = palloc(cap);
	w->pos = w->buf + VARHDRSZ;
	w->end = w->buf + cap;
	w->enc = bson_server_encoding();
	w->ascii_fast_path = bson_ascii_fast_path_enabled;
	w->locate = NULL;
	w->locate_arg = NULL;
}

/* The finished BSON as a bytea, without copying it. */
bytea *
bson_writer_finish(BsonWriter *w)
{
	bytea	   *result = (bytea *) w->buf;

	SET_VARSIZE(result, w->pos - w->buf);
	w->buf = w->pos = w->end = NULL;
	return result;
}

/*
 * Make room for needed more bytes: at least double the buffer, so that a bad
 * estimate costs O(log n) reallocations, and never past the bytea limit.
 */
void
bson_writer_grow(BsonWriter *w, Size needed)
{
	Size		used = w->pos - w->buf;
	Size		cap = w->end - w->buf;
	Size		newcap;

	if (needed > BSON_MAX_ALLOC - used)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("BSON document is too large"),
				 errdetail("The encoded document would exceed the maximum bytea size of %zu bytes.",
						   (Size) BSON_MAX_ALLOC - VARHDRSZ)));
	newcap = Max(cap * 2, used + needed);
	if (newcap > BSON_MAX_ALLOC)
		newcap = BSON_MAX_ALLOC;
	w->buf = repalloc(w->buf, newcap);
	w->pos = w->buf + used;
	w->end = w->buf + newcap;
}

/* "at orders[2].at" or nothing, from the input walker's locate callback. */
void
bson_describe_location(BsonWriter *w, const char *input, StringInfo out)
{
	if (w->locate)
		w->locate(w->locate_arg, input, out);
}

/*
 * A key or string that cannot become UTF-8: either invalid in a SQL_ASCII
 * database (22021) or without a UTF-8 equivalent (22P05).
 */
static void
report_bad_string(BsonWriter *w, const char *s, int len, int bad_offset,
				  bool is_key, bool untranslatable)
{
	StringInfoData where;
	StringInfoData bytes;

	initStringInfo(&where);
	bson_describe_location(w, s, &where);
	initStringInfo(&bytes);
	for (int i = bad_offset; i < len && i < bad_offset + 4; i++)
		appendStringInfo(&bytes, "%s0x%02x", i > bad_offset ? " " : "",
						 (unsigned char) s[i]);

	ereport(ERROR,
			(errcode(untranslatable ? ERRCODE_UNTRANSLATABLE_CHARACTER
					 : ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
			 errmsg(untranslatable
					? "%s cannot be converted to UTF-8"
					: "%s is not valid UTF-8",
					is_key ? "key" : "string value"),
			 where.len > 0
			 ? errdetail("The %s at %s has the byte sequence %s at byte %d.",
						 is_key ? "key" : "value", where.data, bytes.data, bad_offset)
			 : errdetail("The %s has the byte sequence %s at byte %d.",
						 is_key ? "key" : "value", bytes.data, bad_offset),
			 untranslatable
			 ? errhint("BSON strings are UTF-8; the character has no UTF-8 equivalent in the default conversion from %s.",
					   GetDatabaseEncodingName())
			 : errhint("In a SQL_ASCII database, bytes above 0x7F are passed to BSON as they are and must already form UTF-8.")));
}

/*
 * Write s[0..len) as UTF-8 at w->pos, reserving what it needs plus tail
 * more bytes; returns the number of bytes written.  NUL bytes are copied as
 * they are (a conversion procedure would reject them).
 */
static int
write_utf8(BsonWriter *w, const char *s, int len, Size tail, bool is_key)
{
	const BsonEncoding *enc = w->enc;
	int			ascii;

	if (enc->kind == BSON_ENC_UTF8)
	{
		bson_reserve(w, len + tail);
		memcpy(w->pos, s, len);
		return len;
	}

	ascii = bson_ascii_prefix(s, len);
	if (ascii == len)
	{
		bson_reserve(w, len + tail);
		memcpy(w->pos, s, len);
		return len;
	}

	if (enc->kind == BSON_ENC_SQL_ASCII)
	{
		int			bad = bson_invalid_utf8_offset(s + ascii, len - ascii);

		if (bad >= 0)
			report_bad_string(w, s, len, ascii + bad, is_key, false);
		bson_reserve(w, len + tail);
		memcpy(w->pos, s, len);
		return len;
	}
	else
	{
		/* ASCII prefix as is, then convert segment by segment between NULs */
		Size		start = w->pos - w->buf;
		char	   *out;
		int			off = ascii;

		bson_reserve(w, (Size) ascii + (Size) (len - ascii) * MAX_CONVERSION_GROWTH + 1 + tail);
		out = w->pos;
		memcpy(out, s, ascii);
		out += ascii;
		while (off < len)
		{
			const char *nul = memchr(s + off, '\0', len - off);
			int			seglen = nul ? (int) (nul - (s + off)) : len - off;

			if (seglen > 0)
			{
				int			bad_offset;
				int			n = bson_convert_to_utf8(enc, s + off, seglen, out, &bad_offset);

				if (n < 0)
					report_bad_string(w, s, len, off + bad_offset, is_key, true);
				out += n;
				off += seglen;
			}
			if (nul)
			{
				*out++ = '\0';
				off++;
			}
		}
		Assert(out <= w->end);
		return (int) (out - (w->buf + start));
	}
}

/* Key (a C string) and its NUL, leaving room for valsize value bytes. */
void
bson_key_general(BsonWriter *w, const char *key, int keylen, Size valsize)
{
	int			n;

	if (memchr(key, '\0', keylen) != NULL)
	{
		StringInfoData where;

		initStringInfo(&where);
		bson_describe_location(w, key, &where);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("key contains a NUL character"),
				 where.len > 0
				 ? errdetail("BSON keys are NUL-terminated and cannot contain \\u0000; the key is at %s.", where.data)
				 : errdetail("BSON keys are NUL-terminated and cannot contain \\u0000.")));
	}
	n = write_utf8(w, key, keylen, 1 + valsize, true);
	w->pos[n] = '\0';
	w->pos += n + 1;
}

/* String value: length, UTF-8 bytes, NUL. */
void
bson_string_general(BsonWriter *w, const char *s, int len)
{
	Size		lenpos;
	int			n;

	bson_reserve(w, 4);
	lenpos = w->pos - w->buf;
	w->pos += 4;
	n = write_utf8(w, s, len, 1, false);
	w->pos[n] = '\0';
	w->pos += n + 1;
	bson_put_uint32_at(w->buf + lenpos, (uint32) n + 1);
}
