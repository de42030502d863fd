/*
 * bson_to_json.c
 *		BSON -> MongoDB Extended JSON v2 text (bson_to_json), relaxed or
 *		canonical, keys in document order.
 *
 * The text is laid out as PostgreSQL's jsonb output and Python's json.dumps
 * lay it out ({"a": 1, "b": [1, 2]}), strings escaped as both do: \" \\ \b
 * \f \n \r \t, other control characters as \u00XX, everything else as it is.
 * Doubles are the shortest text that reads back as the same double, in the
 * notation of Python's repr (1.0, 1e-05, 1.5e+300), which is what pymongo's
 * json_util writes; the cross-check compares with it byte for byte.
 */
#include "bson_to_json.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "bson_encoding.h"
#include "bson_decode.h"

/*
 * The output: a StringInfo written through a cursor, so that each piece is
 * a bounds check and a copy, not a call (appendBinaryStringInfo per token
 * was a fifth of the time).  out->len is brought up to date only when the
 * buffer grows and at the end.
 */
typedef struct JsonWriter
{
	StringInfo	out;
	char	   *pos;			/* next byte to write */
	char	   *end;			/* last usable byte + 1 (room kept for a NUL) */
	bool		canonical;
	bool		convert;		/* strings need converting to the server encoding */
	uint32		elements;		/* for CHECK_FOR_INTERRUPTS */
} JsonWriter;

static void write_document(JsonWriter *jw, const uint8 *doc, bool array,
						   const BsonDecodePath *parent);

static pg_noinline void
jw_grow(JsonWriter *jw, size_t need)
{
	StringInfo	out = jw->out;

	out->len = (int) (jw->pos - out->data);
	enlargeStringInfo(out, (int) need);
	jw->pos = out->data + out->len;
	jw->end = out->data + out->maxlen - 1;
}

/* Room for n more bytes; n stays small (pieces are written in chunks) */
static inline void
jw_reserve(JsonWriter *jw, size_t n)
{
	if (unlikely((size_t) (jw->end - jw->pos) < n))
		jw_grow(jw, n);
}

static inline void
jw_put(JsonWriter *jw, const char *s, size_t n)
{
	jw_reserve(jw, n);
	memcpy(jw->pos, s, n);
	jw->pos += n;
}

#define jw_literal(jw, s) jw_put((jw), (s), sizeof(s) - 1)

static inline void
jw_char(JsonWriter *jw, char c)
{
	jw_reserve(jw, 1);
	*jw->pos++ = c;
}

/*
 * Does the 8-byte word x hold a byte that JSON must escape: below 0x20, '"'
 * or '\\'?  The classic has-zero-byte test (bit-twiddling hacks), exact for
 * every byte value.
 */
static inline bool
word_needs_escape(uint64 x)
{
	const uint64 ones = UINT64CONST(0x0101010101010101);
	const uint64 highs = UINT64CONST(0x8080808080808080);
	uint64		quote = x ^ (ones * '"');
	uint64		backslash = x ^ (ones * '\\');

	return (((x - ones * 0x20) & ~x) |
			((quote - ones) & ~quote) |
			((backslash - ones) & ~backslash)) & highs;
}

/* How much input append_escaped handles per reservation */
#define ESCAPE_CHUNK 8192

/* s[0..len), text in the server encoding without NUL, as a JSON string body */
static void
append_escaped(JsonWriter *jw, const char *s, size_t len)
{
	while (len > 0)
	{
		size_t		n = Min(len, ESCAPE_CHUNK);
		size_t		i = 0;
		char	   *o;

		/* worst case: every byte as \u00XX */
		jw_reserve(jw, 6 * n);
		o = jw->pos;
		while (i < n)
		{
			unsigned char c;

			if (i + 8 <= n)
			{
				uint64		word;

				memcpy(&word, s + i, 8);
				if (!word_needs_escape(word))
				{
					memcpy(o, &word, 8);
					o += 8;
					i += 8;
					continue;
				}
			}
			c = (unsigned char) s[i++];
			if (likely(c >= 0x20 && c != '"' && c != '\\'))
			{
				*o++ = (char) c;
				continue;
			}
			*o++ = '\\';
			switch (c)
			{
				case '"':
					*o++ = '"';
					break;
				case '\\':
					*o++ = '\\';
					break;
				case '\b':
					*o++ = 'b';
					break;
				case '\f':
					*o++ = 'f';
					break;
				case '\n':
					*o++ = 'n';
					break;
				case '\r':
					*o++ = 'r';
					break;
				case '\t':
					*o++ = 't';
					break;
				default:
					*o++ = 'u';
					*o++ = '0';
					*o++ = '0';
					*o++ = "0123456789abcdef"[c >> 4];
					*o++ = "0123456789abcdef"[c & 15];
					break;
			}
		}
		jw->pos = o;
		s += n;
		len -= n;
	}
}

/*
 * How much of a string is converted to the server encoding at a time: the
 * conversion needs a buffer of up to four times its input, so bounded
 * pieces keep memory flat whatever the string's length.
 */
#define CONVERT_CHUNK 65536

/* A UTF-8 string from the document as a JSON string, NULs as \u0000 */
static void
append_string(JsonWriter *jw, const char *s, size_t len, const BsonDecodePath *path,
			  bool is_key)
{
	jw_char(jw, '"');
	if (!jw->convert || bson_ascii_prefix(s, (int) len) == (int) len)
		append_escaped(jw, s, len);
	else
	{
		size_t		off = 0;

		/*
		 * The conversion procedures stop at NUL: convert the pieces between
		 * NULs, each in chunks cut at character boundaries.
		 */
		while (off < len)
		{
			size_t		piece;

			if (s[off] == '\0')
			{
				jw_literal(jw, "\\u0000");
				off++;
				continue;
			}
			piece = Min(len - off, (size_t) CONVERT_CHUNK);
			if (off + piece < len)
			{
				/* not inside a UTF-8 sequence */
				while ((((const unsigned char *) s)[off + piece] & 0xC0) == 0x80)
					piece--;
			}
			{
				const char *nul = memchr(s + off, '\0', piece);
				size_t		outlen;
				const char *text;

				if (nul)
					piece = (size_t) (nul - (s + off));
				text = bson_decode_to_server(s + off, piece, &outlen, path, is_key, off);
				append_escaped(jw, text, outlen);
				if (text != s + off)
					pfree((void *) text);
			}
			off += piece;
		}
	}
	jw_char(jw, '"');
}

static inline void
append_int64(JsonWriter *jw, int64 v)
{
	jw_reserve(jw, MAXINT8LEN + 1);
	jw->pos += bson_lltoa(v, jw->pos);
}

/* {"$numberLong": "<v>"} and its kind: a wrapper around a quoted integer */
static void
append_quoted_int64(JsonWriter *jw, const char *wrapper, int64 v)
{
	jw_literal(jw, "{\"");
	jw_put(jw, wrapper, strlen(wrapper));
	jw_literal(jw, "\": \"");
	append_int64(jw, v);
	jw_literal(jw, "\"}");
}

/* {"<wrapper>": "<text>"}, text needing no escapes */
static void
append_wrapped_text(JsonWriter *jw, const char *wrapper, const char *text)
{
	jw_literal(jw, "{\"");
	jw_put(jw, wrapper, strlen(wrapper));
	jw_literal(jw, "\": \"");
	jw_put(jw, text, strlen(text));
	jw_literal(jw, "\"}");
}

/*
 * One writer per BSON type or family of types.  Each is static and called
 * from one place, write_value's switch, so GCC inlines it there (and
 * write_value into write_document's loop): the split costs no call.
 */

/* Numbers: relaxed as JSON numbers, canonical in their wrappers */
static void
write_double(JsonWriter *jw, const BsonIter *it)
{
	double		d = bson_iter_double(it);
	const char *special = bson_double_special_text(d);
	char		buf[BSON_DOUBLE_TEXT];
	int			len;

	if (special)
	{
		append_wrapped_text(jw, "$numberDouble", special);
		return;
	}
	len = bson_double_text(d, BSON_DOUBLE_JSON, buf);
	if (jw->canonical)
		append_wrapped_text(jw, "$numberDouble", buf);
	else
		jw_put(jw, buf, len);
}

static void
write_int32(JsonWriter *jw, const BsonIter *it)
{
	if (jw->canonical)
		append_quoted_int64(jw, "$numberInt", bson_iter_int32(it));
	else
		append_int64(jw, bson_iter_int32(it));
}

static void
write_int64(JsonWriter *jw, const BsonIter *it)
{
	if (jw->canonical)
		append_quoted_int64(jw, "$numberLong", bson_iter_int64(it));
	else
		append_int64(jw, bson_iter_int64(it));
}

static void
write_decimal128(JsonWriter *jw, const BsonIter *it)
{
	uint64_t	low;
	uint64_t	high;
	char		text[DECIMAL128_STRING_SIZE];

	bson_iter_decimal128(it, &low, &high);
	decimal128_to_string(low, high, text);
	append_wrapped_text(jw, "$numberDecimal", text);
}

/* Strings, and code and symbols, which are strings in a wrapper */
static void
write_string(JsonWriter *jw, const BsonIter *it, const BsonDecodePath *path)
{
	size_t		len;
	const char *s = bson_iter_utf8(it, &len);

	append_string(jw, s, len, path, false);
}

static void
write_code_or_symbol(JsonWriter *jw, const BsonIter *it,
					 const BsonDecodePath *path)
{
	size_t		len;
	const char *s = bson_iter_utf8(it, &len);

	if (it->type == BSON_TYPE_CODE)
		jw_literal(jw, "{\"$code\": ");
	else
		jw_literal(jw, "{\"$symbol\": ");
	append_string(jw, s, len, path, false);
	jw_char(jw, '}');
}

static void
write_code_w_scope(JsonWriter *jw, const BsonIter *it,
				   const BsonDecodePath *path)
{
	size_t		len;
	const uint8 *scope;
	const char *code = bson_read_code_w_scope(it, &len, &scope);

	jw_literal(jw, "{\"$code\": ");
	append_string(jw, code, len, path, false);
	jw_literal(jw, ", \"$scope\": ");
	write_document(jw, scope, false, path);
	jw_char(jw, '}');
}

static void
write_binary(JsonWriter *jw, const BsonIter *it)
{
	uint8_t		subtype;
	size_t		len;
	const uint8 *data = bson_read_binary(it, &subtype, &len);
	char		sub[BSON_SUBTYPE_TEXT];

	bson_subtype_text(subtype, sub);
	jw_literal(jw, "{\"$binary\": {\"base64\": \"");
	/* in pieces, so that the reservation stays small */
	while (len > 0)
	{
		size_t		n = Min(len, (size_t) 3 * ESCAPE_CHUNK);

		jw_reserve(jw, bson_base64_length(n) + 1);
		jw->pos += extjson_base64_encode(data, n, jw->pos);
		data += n;
		len -= n;
	}
	jw_literal(jw, "\", \"subType\": \"");
	jw_put(jw, sub, 2);
	jw_literal(jw, "\"}}");
}

static void
write_objectid(JsonWriter *jw, const BsonIter *it)
{
	char		hex[BSON_OID_TEXT];

	bson_oid_text(it->value, hex);
	append_wrapped_text(jw, "$oid", hex);
}

static void
write_datetime(JsonWriter *jw, const BsonIter *it)
{
	char		text[BSON_DATETIME_TEXT];
	int			len;

	if (bson_datetime_text(bson_iter_int64(it), jw->canonical, text, &len))
	{
		jw_literal(jw, "{\"$date\": \"");
		jw_put(jw, text, len);
		jw_literal(jw, "\"}");
	}
	else
	{
		jw_literal(jw, "{\"$date\": {\"$numberLong\": \"");
		jw_put(jw, text, len);
		jw_literal(jw, "\"}}");
	}
}

static void
write_timestamp(JsonWriter *jw, const BsonIter *it)
{
	uint32_t	t;
	uint32_t	i;

	bson_iter_timestamp(it, &t, &i);
	jw_literal(jw, "{\"$timestamp\": {\"t\": ");
	append_int64(jw, t);
	jw_literal(jw, ", \"i\": ");
	append_int64(jw, i);
	jw_literal(jw, "}}");
}

static void
write_regex(JsonWriter *jw, const BsonIter *it, const BsonDecodePath *path)
{
	const char *pattern;
	const char *options;
	char	   *sorted;
	size_t		len;

	bson_read_regex(it, &pattern, &options);
	sorted = bson_regex_options_text(options, &len);
	jw_literal(jw, "{\"$regularExpression\": {\"pattern\": ");
	append_string(jw, pattern, strlen(pattern), path, false);
	jw_literal(jw, ", \"options\": ");
	append_string(jw, sorted, len, path, false);
	jw_literal(jw, "}}");
	pfree(sorted);
}

static void
write_dbpointer(JsonWriter *jw, const BsonIter *it, const BsonDecodePath *path)
{
	size_t		len;
	const uint8 *oid;
	const char *ns = bson_read_dbpointer(it, &len, &oid);
	char		hex[BSON_OID_TEXT];

	bson_oid_text(oid, hex);
	jw_literal(jw, "{\"$dbPointer\": {\"$ref\": ");
	append_string(jw, ns, len, path, false);
	jw_literal(jw, ", \"$id\": ");
	append_wrapped_text(jw, "$oid", hex);
	jw_literal(jw, "}}");
}

static void
write_bool(JsonWriter *jw, const BsonIter *it)
{
	if (it->value[0])
		jw_literal(jw, "true");
	else
		jw_literal(jw, "false");
}

static void
write_null(JsonWriter *jw)
{
	jw_literal(jw, "null");
}

/*
 * The types that are only a marker, with no value.  They are rare (undefined
 * is deprecated), so a second switch here costs nothing that matters; it is
 * kept out of line because, inlined, that switch leads GCC to a
 * write_document loop that spends a few more instructions on every element
 * of every document (callgrind).
 */
static pg_noinline void
write_marker(JsonWriter *jw, const BsonIter *it)
{
	switch (it->type)
	{
		case BSON_TYPE_UNDEFINED:
			jw_literal(jw, "{\"$undefined\": true}");
			break;
		case BSON_TYPE_MINKEY:
			jw_literal(jw, "{\"$minKey\": 1}");
			break;
		case BSON_TYPE_MAXKEY:
			jw_literal(jw, "{\"$maxKey\": 1}");
			break;
	}
}

static void
write_value(JsonWriter *jw, const BsonIter *it, const BsonDecodePath *path)
{
	switch (it->type)
	{
		case BSON_TYPE_DOUBLE:
			write_double(jw, it);
			break;
		case BSON_TYPE_STRING:
			write_string(jw, it, path);
			break;
		case BSON_TYPE_DOCUMENT:
		case BSON_TYPE_ARRAY:
			write_document(jw, it->value, it->type == BSON_TYPE_ARRAY, path);
			break;
		case BSON_TYPE_BINARY:
			write_binary(jw, it);
			break;
		case BSON_TYPE_UNDEFINED:
		case BSON_TYPE_MINKEY:
		case BSON_TYPE_MAXKEY:
			write_marker(jw, it);
			break;
		case BSON_TYPE_OBJECTID:
			write_objectid(jw, it);
			break;
		case BSON_TYPE_BOOL:
			write_bool(jw, it);
			break;
		case BSON_TYPE_DATETIME:
			write_datetime(jw, it);
			break;
		case BSON_TYPE_NULL:
			write_null(jw);
			break;
		case BSON_TYPE_REGEX:
			write_regex(jw, it, path);
			break;
		case BSON_TYPE_DBPOINTER:
			write_dbpointer(jw, it, path);
			break;
		case BSON_TYPE_CODE:
		case BSON_TYPE_SYMBOL:
			write_code_or_symbol(jw, it, path);
			break;
		case BSON_TYPE_CODE_W_SCOPE:
			write_code_w_scope(jw, it, path);
			break;
		case BSON_TYPE_INT32:
			write_int32(jw, it);
			break;
		case BSON_TYPE_TIMESTAMP:
			write_timestamp(jw, it);
			break;
		case BSON_TYPE_INT64:
			write_int64(jw, it);
			break;
		case BSON_TYPE_DECIMAL128:
			write_decimal128(jw, it);
			break;
		default:
			elog(ERROR, "unexpected BSON element type 0x%02x after validation", it->type);
	}
}

static void
write_document(JsonWriter *jw, const uint8 *doc, bool array,
			   const BsonDecodePath *parent)
{
	BsonIter	it;
	BsonDecodePath path = {parent, NULL, 0, array};
	bool		first = true;

	check_stack_depth();
	jw_char(jw, array ? '[' : '{');
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it))
	{
		if ((++jw->elements & 0xFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!first)
			jw_literal(jw, ", ");
		first = false;
		path.key = it.key;
		path.keylen = it.keylen;
		if (!array)
		{
			append_string(jw, it.key, it.keylen, &path, true);
			jw_literal(jw, ": ");
		}
		write_value(jw, &it, &path);
	}
	jw_char(jw, array ? ']' : '}');
}

text *
bson_document_to_json(const uint8 *doc, size_t len, bool canonical)
{
	StringInfoData out;
	JsonWriter	jw;

	bson_decode_validate(doc, len, 0);

	/* JSON text is typically a bit longer than its BSON */
	initStringInfo(&out);
	enlargeStringInfo(&out, (int) Min(len + len / 2 + VARHDRSZ, MaxAllocSize / 2));
	out.len = VARHDRSZ;
	jw.out = &out;
	jw.pos = out.data + out.len;
	jw.end = out.data + out.maxlen - 1;
	jw.canonical = canonical;
	jw.convert = bson_server_encoding()->kind == BSON_ENC_CONVERT;
	jw.elements = 0;
	write_document(&jw, doc, false, NULL);
	out.len = (int) (jw.pos - out.data);
	out.data[out.len] = '\0';
	SET_VARSIZE(out.data, out.len);
	return (text *) out.data;
}
