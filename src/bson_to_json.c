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

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "bson_encoding.h"
#include "bson_read.h"

typedef struct JsonWriter
{
	StringInfo	out;
	bool		canonical;
	bool		convert;		/* strings need converting to the server encoding */
	uint32		elements;		/* for CHECK_FOR_INTERRUPTS */
} JsonWriter;

static void write_document(JsonWriter *jw, const uint8 *doc, bool array,
						   const BsonReadPath *parent);

/* s[0..len), text in the server encoding without NUL, as a JSON string body */
static void
append_escaped(StringInfo out, const char *s, size_t len)
{
	size_t		run = 0;

	enlargeStringInfo(out, (int) len);
	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];
		const char *esc;

		if (likely(c >= 0x20 && c != '"' && c != '\\'))
			continue;
		appendBinaryStringInfo(out, s + run, (int) (i - run));
		run = i + 1;
		switch (c)
		{
			case '"':
				esc = "\\\"";
				break;
			case '\\':
				esc = "\\\\";
				break;
			case '\b':
				esc = "\\b";
				break;
			case '\f':
				esc = "\\f";
				break;
			case '\n':
				esc = "\\n";
				break;
			case '\r':
				esc = "\\r";
				break;
			case '\t':
				esc = "\\t";
				break;
			default:
				appendStringInfo(out, "\\u%04x", c);
				continue;
		}
		appendBinaryStringInfo(out, esc, 2);
	}
	appendBinaryStringInfo(out, s + run, (int) (len - run));
}

/* A UTF-8 string from the document as a JSON string, NULs as \u0000 */
static void
append_string(JsonWriter *jw, const char *s, size_t len, const BsonReadPath *path,
			  bool is_key)
{
	StringInfo	out = jw->out;

	appendStringInfoCharMacro(out, '"');
	if (!jw->convert || bson_ascii_prefix(s, (int) len) == (int) len)
		append_escaped(out, s, len);
	else
	{
		size_t		off = 0;

		/* the conversion procedures stop at NUL: convert around each one */
		while (off < len)
		{
			const char *nul = memchr(s + off, '\0', len - off);
			size_t		seg = nul ? (size_t) (nul - (s + off)) : len - off;

			if (seg > 0)
			{
				size_t		outlen;
				const char *text = bson_read_to_server(s + off, seg, &outlen, path, is_key);

				append_escaped(out, text, outlen);
			}
			off += seg;
			if (nul)
			{
				appendStringInfoString(out, "\\u0000");
				off++;
			}
		}
	}
	appendStringInfoCharMacro(out, '"');
}

static inline void
append_literal(JsonWriter *jw, const char *s)
{
	appendStringInfoString(jw->out, s);
}

static inline void
append_int64(JsonWriter *jw, int64 v)
{
	char		buf[MAXINT8LEN + 1];
	int			len = pg_lltoa(v, buf);

	appendBinaryStringInfo(jw->out, buf, len);
}

/* {"$numberLong": "<v>"} and its kind: a wrapper around a quoted integer */
static void
append_quoted_int64(JsonWriter *jw, const char *wrapper, int64 v)
{
	appendStringInfo(jw->out, "{\"%s\": \"", wrapper);
	append_int64(jw, v);
	appendBinaryStringInfo(jw->out, "\"}", 2);
}

static void
append_double(JsonWriter *jw, double d)
{
	char		buf[BSON_DOUBLE_TEXT];
	const char *special = NULL;

	if (isnan(d))
		special = "NaN";
	else if (isinf(d))
		special = d > 0 ? "Infinity" : "-Infinity";
	if (special)
	{
		appendStringInfo(jw->out, "{\"$numberDouble\": \"%s\"}", special);
		return;
	}
	bson_double_text(d, BSON_DOUBLE_JSON, buf);
	if (jw->canonical)
		appendStringInfo(jw->out, "{\"$numberDouble\": \"%s\"}", buf);
	else
		appendStringInfoString(jw->out, buf);
}

static void
write_value(JsonWriter *jw, const BsonIter *it, const BsonReadPath *path)
{
	StringInfo	out = jw->out;

	switch (it->type)
	{
		case BSONR_DOUBLE:
			append_double(jw, bson_iter_double(it));
			break;
		case BSONR_STRING:
			{
				size_t		len;
				const char *s = bson_iter_utf8(it, &len);

				append_string(jw, s, len, path, false);
				break;
			}
		case BSONR_DOCUMENT:
		case BSONR_ARRAY:
			write_document(jw, it->value, it->type == BSONR_ARRAY, path);
			break;
		case BSONR_BINARY:
			{
				uint8_t		subtype;
				size_t		len;
				const uint8 *data = bson_iter_binary(it, &subtype, &len);
				char		sub[3];

				bson_hex_encode(&subtype, 1, sub);
				append_literal(jw, "{\"$binary\": {\"base64\": \"");
				enlargeStringInfo(out, (int) (4 * ((len + 2) / 3) + 1));
				out->len += (int) bson_base64_encode(data, len, out->data + out->len);
				appendStringInfo(out, "\", \"subType\": \"%s\"}}", sub);
				break;
			}
		case BSONR_UNDEFINED:
			append_literal(jw, "{\"$undefined\": true}");
			break;
		case BSONR_OBJECTID:
			{
				char		hex[25];

				bson_hex_encode(it->value, 12, hex);
				appendStringInfo(out, "{\"$oid\": \"%s\"}", hex);
				break;
			}
		case BSONR_BOOL:
			append_literal(jw, it->value[0] ? "true" : "false");
			break;
		case BSONR_DATETIME:
			{
				int64		ms = bson_iter_int64(it);
				char		iso[BSONR_ISO8601_STRING];

				if (!jw->canonical && bson_format_iso8601(ms, iso) > 0)
					appendStringInfo(out, "{\"$date\": \"%s\"}", iso);
				else
				{
					append_literal(jw, "{\"$date\": ");
					append_quoted_int64(jw, "$numberLong", ms);
					appendStringInfoChar(out, '}');
				}
				break;
			}
		case BSONR_NULL:
			append_literal(jw, "null");
			break;
		case BSONR_REGEX:
			{
				const char *pattern;
				const char *options;
				char	   *sorted;

				bson_iter_regex(it, &pattern, &options);
				sorted = palloc(strlen(options) + 1);
				bson_sorted_options(options, sorted);
				append_literal(jw, "{\"$regularExpression\": {\"pattern\": ");
				append_string(jw, pattern, strlen(pattern), path, false);
				append_literal(jw, ", \"options\": ");
				append_string(jw, sorted, strlen(sorted), path, false);
				append_literal(jw, "}}");
				pfree(sorted);
				break;
			}
		case BSONR_DBPOINTER:
			{
				size_t		len;
				const uint8 *oid;
				const char *ns = bson_iter_dbpointer(it, &len, &oid);
				char		hex[25];

				bson_hex_encode(oid, 12, hex);
				append_literal(jw, "{\"$dbPointer\": {\"$ref\": ");
				append_string(jw, ns, len, path, false);
				appendStringInfo(out, ", \"$id\": {\"$oid\": \"%s\"}}}", hex);
				break;
			}
		case BSONR_CODE:
		case BSONR_SYMBOL:
			{
				size_t		len;
				const char *s = bson_iter_utf8(it, &len);

				append_literal(jw, it->type == BSONR_CODE ? "{\"$code\": " : "{\"$symbol\": ");
				append_string(jw, s, len, path, false);
				appendStringInfoChar(out, '}');
				break;
			}
		case BSONR_CODE_W_SCOPE:
			{
				size_t		len;
				const uint8 *scope;
				const char *code = bson_iter_code_w_scope(it, &len, &scope);

				append_literal(jw, "{\"$code\": ");
				append_string(jw, code, len, path, false);
				append_literal(jw, ", \"$scope\": ");
				write_document(jw, scope, false, path);
				appendStringInfoChar(out, '}');
				break;
			}
		case BSONR_INT32:
			if (jw->canonical)
				append_quoted_int64(jw, "$numberInt", bson_iter_int32(it));
			else
				append_int64(jw, bson_iter_int32(it));
			break;
		case BSONR_TIMESTAMP:
			{
				uint32_t	t;
				uint32_t	i;

				bson_iter_timestamp(it, &t, &i);
				appendStringInfo(out, "{\"$timestamp\": {\"t\": %u, \"i\": %u}}", t, i);
				break;
			}
		case BSONR_INT64:
			if (jw->canonical)
				append_quoted_int64(jw, "$numberLong", bson_iter_int64(it));
			else
				append_int64(jw, bson_iter_int64(it));
			break;
		case BSONR_DECIMAL128:
			{
				uint64_t	low;
				uint64_t	high;
				char		text[BSONR_DECIMAL128_STRING];

				bson_iter_decimal128(it, &low, &high);
				bson_decimal128_to_string(low, high, text);
				appendStringInfo(out, "{\"$numberDecimal\": \"%s\"}", text);
				break;
			}
		case BSONR_MINKEY:
			append_literal(jw, "{\"$minKey\": 1}");
			break;
		case BSONR_MAXKEY:
			append_literal(jw, "{\"$maxKey\": 1}");
			break;
		default:
			elog(ERROR, "unexpected BSON element type 0x%02x after validation", it->type);
	}
}

static void
write_document(JsonWriter *jw, const uint8 *doc, bool array,
			   const BsonReadPath *parent)
{
	BsonIter	it;
	BsonReadPath path = {parent, NULL, 0, array};
	bool		first = true;

	check_stack_depth();
	appendStringInfoCharMacro(jw->out, array ? '[' : '{');
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it))
	{
		if ((++jw->elements & 0xFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!first)
			appendBinaryStringInfo(jw->out, ", ", 2);
		first = false;
		path.key = it.key;
		path.keylen = it.keylen;
		if (!array)
		{
			append_string(jw, it.key, it.keylen, &path, true);
			appendBinaryStringInfo(jw->out, ": ", 2);
		}
		write_value(jw, &it, &path);
	}
	appendStringInfoCharMacro(jw->out, array ? ']' : '}');
}

text *
bson_document_to_json(const uint8 *doc, size_t len, bool canonical)
{
	StringInfoData out;
	JsonWriter	jw;

	bson_read_validate(doc, len, 0);

	/* JSON text is typically a bit longer than its BSON */
	initStringInfo(&out);
	enlargeStringInfo(&out, (int) Min(len + len / 2 + VARHDRSZ, MaxAllocSize / 2));
	appendStringInfoSpaces(&out, VARHDRSZ);
	jw.out = &out;
	jw.canonical = canonical;
	jw.convert = bson_server_encoding()->kind == BSON_ENC_CONVERT;
	jw.elements = 0;
	write_document(&jw, doc, false, NULL);
	SET_VARSIZE(out.data, out.len);
	return (text *) out.data;
}
