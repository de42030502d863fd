/*
 * bson_writer.c
 *		Buffer management and the general (non-fast-path) string writer.
 */
#include "bson_writer.h"

#include "bson_decode.h"

/*
 * Encoding conversion is done in pieces of at most this many source bytes,
 * so that reserving room for the worst-case growth of a piece never asks
 * for much more than the result needs.
 */
#define CONVERSION_CHUNK	65536

pg_noreturn static void report_bad_string(BsonWriter *w, const char *s, int len,
										  int bad_offset, bool is_key,
										  bool untranslatable);
pg_noreturn static void report_too_large(BsonWriter *w);

/*
 * Start a writer whose output is expected to take about estimate bytes of
 * BSON.  The buffer grows geometrically if the estimate is exceeded.
 */
void
bson_writer_init(BsonWriter *w, Size estimate)
{
	Size		cap;

	w->max_size = (Size) bson_max_document_size;
	cap = VARHDRSZ + Min(Max(estimate, (Size) 64), (Size) BSON_MAX_DOCUMENT_SIZE);
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

	if ((Size) (w->pos - w->buf) - VARHDRSZ > w->max_size)
		report_too_large(w);
#ifdef USE_ASSERT_CHECKING
	{
		/*
		 * Assertion builds check every document written against the
		 * decoder's validator, which the fuzzer exercises: a writer bug then
		 * fails the test that produced it.
		 */
		BsonReadError err;

		if (!bson_decode_check((const uint8 *) w->buf + VARHDRSZ,
							   (size_t) (w->pos - w->buf) - VARHDRSZ, &err))
			elog(ERROR, "bson_out wrote an invalid BSON document: at byte offset %zu: %s",
				 err.offset, err.message);
	}
#endif
	SET_VARSIZE(result, w->pos - w->buf);
	w->buf = w->pos = w->end = NULL;
	return result;
}

static void
report_too_large(BsonWriter *w)
{
	Size		written = (w->pos - w->buf) - VARHDRSZ;

	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("BSON document exceeds the maximum size of %zu bytes",
					w->max_size),
			 errdetail("%zu bytes had been written when the limit was reached.",
					   written),
			 w->max_size < (Size) BSON_MAX_DOCUMENT_SIZE
			 ? errhint("The limit is set by bson_out.max_document_size.")
			 : errhint("A bytea cannot hold more than %d bytes.",
					   BSON_MAX_DOCUMENT_SIZE)));
}

/*
 * Make room for needed more bytes: at least double the buffer, so that a bad
 * estimate costs O(log n) reallocations.  Requests may be worst cases (room
 * for a string whose conversion could quadruple it), so the buffer may grow
 * up to what palloc allows, whatever bson_out.max_document_size says; the
 * document itself is held to that setting by the bytes actually written,
 * here and in bson_writer_finish.  Either way the check comes before any
 * write, so nothing can overflow.
 */
void
bson_writer_grow(BsonWriter *w, Size needed)
{
	Size		used = w->pos - w->buf;
	Size		cap = w->end - w->buf;
	Size		newcap;

	if (used - VARHDRSZ > w->max_size || needed > MaxAllocSize - used)
		report_too_large(w);
	newcap = Max(cap * 2, used + needed);
	if (newcap > MaxAllocSize)
		newcap = MaxAllocSize;
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
	const char *bytes = bson_hex_bytes(s + bad_offset, Min(len - bad_offset, 4));

	initStringInfo(&where);
	bson_describe_location(w, s, &where);

	ereport(ERROR,
			(errcode(untranslatable ? ERRCODE_UNTRANSLATABLE_CHARACTER
					 : ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
			 errmsg(untranslatable
					? "%s cannot be converted to UTF-8"
					: "%s is not valid UTF-8",
					is_key ? "key" : "string value"),
			 where.len > 0
			 ? errdetail("The %s at %s has the byte sequence %s at byte %d.",
						 is_key ? "key" : "value", where.data, bytes, bad_offset)
			 : errdetail("The %s has the byte sequence %s at byte %d.",
						 is_key ? "key" : "value", bytes, bad_offset),
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
	int			n;

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
		/*
		 * ASCII prefix as is, then the rest converted piece by piece: pieces
		 * end at a NUL (copied as is, since conversion procedures reject it)
		 * or at a character boundary after CONVERSION_CHUNK bytes.
		 */
		Size		start = w->pos - w->buf;
		int			off = ascii;

		bson_reserve(w, ascii + tail);
		memcpy(w->pos, s, ascii);
		w->pos += ascii;
		while (off < len)
		{
			const char *nul = memchr(s + off, '\0', Min(len - off, CONVERSION_CHUNK));
			int			seglen;

			if (nul)
				seglen = (int) (nul - (s + off));
			else if (len - off <= CONVERSION_CHUNK)
				seglen = len - off;
			else
				seglen = pg_encoding_mbcliplen(enc->server_encoding, s + off,
											   len - off, CONVERSION_CHUNK);
			if (seglen > 0)
			{
				int			bad_offset;
				int			converted;

				bson_reserve(w, (Size) seglen * MAX_CONVERSION_GROWTH + 1 + tail);
				converted = bson_convert_to_utf8(enc, s + off, seglen, w->pos, &bad_offset);
				if (converted < 0)
					report_bad_string(w, s, len, off + bad_offset, is_key, true);
				w->pos += converted;
				off += seglen;
			}
			if (nul)
			{
				bson_reserve(w, 1 + tail);
				*w->pos++ = '\0';
				off++;
			}
		}
		bson_reserve(w, tail);
		n = (int) ((w->pos - w->buf) - start);
		w->pos = w->buf + start;
		return n;
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
