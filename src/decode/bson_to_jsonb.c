/*
 * bson_to_jsonb.c
 *		BSON -> jsonb (from_bson): a walk of a validated document that pushes
 *		jsonb values.
 *
 * JSON's own types come out as themselves; every other BSON type as its
 * relaxed Extended JSON v2 wrapper, so that to_bson(from_bson(b), true)
 * gives b's values and types back.  Where relaxed Extended JSON would lose a
 * type through that round trip, the canonical wrapper is used instead:
 *   - an int64 that fits int32 is {"$numberLong": "7"} (to_bson would make
 *     the plain number an int32);
 *   - a double is a number with its fraction shown (1.0, not 1), since
 *     to_bson reads integers as int32/int64; -0.0, NaN and the infinities,
 *     which jsonb numbers cannot hold, are {"$numberDouble": "..."}.
 */
#include "bson_to_jsonb.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "bson_decode.h"

typedef struct JsonbReader
{
	JsonbParseState *state;
	uint32		elements;		/* for CHECK_FOR_INTERRUPTS */
} JsonbReader;

static JsonbValue *push_document(JsonbReader *r, const uint8 *doc, bool array,
								 const BsonDecodePath *path);

static inline void
push_string(JsonbReader *r, JsonbIteratorToken token, const char *s, size_t len)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = (int) len;
	pushJsonbValue(&r->state, token, &v);
}

static inline void
push_key(JsonbReader *r, const char *s)
{
	push_string(r, WJB_KEY, s, strlen(s));
}

static inline void
push_numeric(JsonbReader *r, JsonbIteratorToken token, Numeric num)
{
	JsonbValue	v;

	v.type = jbvNumeric;
	v.val.numeric = num;
	pushJsonbValue(&r->state, token, &v);
}

/* A number written as text, through numeric_in */
static inline void
push_number_text(JsonbReader *r, JsonbIteratorToken token, const char *text)
{
	push_numeric(r, token,
				 DatumGetNumeric(DirectFunctionCall3(numeric_in,
													 CStringGetDatum(text),
													 ObjectIdGetDatum(InvalidOid),
													 Int32GetDatum(-1))));
}

/* jsonb strings hold at most JENTRY_OFFLENMASK bytes (256 MB) */
static void
check_jsonb_length(size_t len, const BsonDecodePath *path, bool is_key)
{
	StringInfoData where;

	if (likely(len <= JENTRY_OFFLENMASK))
		return;
	initStringInfo(&where);
	bson_decode_path_text(path, &where);
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("%s at %s is too long for jsonb", is_key ? "key" : "string",
					where.data),
			 errdetail("It takes %zu bytes, and a jsonb string holds at most %d.",
					   len, (int) JENTRY_OFFLENMASK),
			 errhint("Use bson_to_json, whose json text has no such limit below 1 GB.")));
}

/* A string value, in the server encoding; jsonb cannot hold NUL */
static void
push_utf8(JsonbReader *r, JsonbIteratorToken token, const char *s, size_t len,
		  const BsonDecodePath *path)
{
	size_t		outlen;
	const char *text;

	if (memchr(s, '\0', len) != NULL)
	{
		StringInfoData where;

		initStringInfo(&where);
		bson_decode_path_text(path, &where);
		ereport(ERROR,
				(errcode(ERRCODE_UNTRANSLATABLE_CHARACTER),
				 errmsg("string at %s contains a NUL character", where.data),
				 errdetail("jsonb strings cannot hold \\u0000."),
				 errhint("Use bson_to_json, whose json text writes it as \\u0000.")));
	}
	check_jsonb_length(len, path, false);
	text = bson_decode_to_server(s, len, &outlen, path, false, 0);
	check_jsonb_length(outlen, path, false);
	push_string(r, token, text, outlen);
}

/* {"<key>": "<text>"}, the shape of most wrappers */
static void
push_wrapper_string(JsonbReader *r, const char *key, const char *text, size_t len)
{
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, key);
	push_string(r, WJB_VALUE, text, len);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
}

/* {"<key>": <number>}, for $minKey and $maxKey */
static void
push_wrapper_int(JsonbReader *r, const char *key, int64 value)
{
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, key);
	push_numeric(r, WJB_VALUE, int64_to_numeric(value));
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
}

/*
 * One reader per BSON type or family of types, each pushing the value of
 * the iterator's current element.  Each is static and called from one
 * place, push_value's switch, so GCC inlines it there and the split costs
 * no call.  token is WJB_VALUE in an object, WJB_ELEM in an array; a wrapper
 * object is pushed whole, its own keys and values inside it.  The jsonb
 * being built keeps pointers to the strings pushed, so their texts are
 * palloc'd, constants or in the document, never in a local buffer.
 */

/*
 * Numbers: JSON numbers where to_bson reads them back as the same type,
 * wrappers otherwise
 */
static void
push_double(JsonbReader *r, const BsonIter *it, JsonbIteratorToken token)
{
	double		d = bson_iter_double(it);
	const char *special = bson_double_special_text(d);
	char		buf[BSON_DOUBLE_TEXT];

	/* a jsonb number has no negative zero either */
	if (special == NULL && d == 0 && signbit(d))
		special = "-0.0";
	if (special)
		push_wrapper_string(r, "$numberDouble", special, strlen(special));
	else
	{
		bson_double_text(d, BSON_DOUBLE_NUMERIC, buf);
		push_number_text(r, token, buf);
	}
}

static void
push_int32(JsonbReader *r, const BsonIter *it, JsonbIteratorToken token)
{
	push_numeric(r, token, int64_to_numeric(bson_iter_int32(it)));
}

static void
push_int64(JsonbReader *r, const BsonIter *it, JsonbIteratorToken token)
{
	int64		i = bson_iter_int64(it);

	if (i >= PG_INT32_MIN && i <= PG_INT32_MAX)
	{
		char	   *text = palloc(MAXINT8LEN + 1);

		push_wrapper_string(r, "$numberLong", text, bson_lltoa(i, text));
	}
	else
		push_numeric(r, token, int64_to_numeric(i));
}

static void
push_decimal128(JsonbReader *r, const BsonIter *it)
{
	uint64_t	low;
	uint64_t	high;
	char	   *text = palloc(DECIMAL128_STRING_SIZE);
	int			len;

	bson_iter_decimal128(it, &low, &high);
	len = decimal128_to_string(low, high, text);
	push_wrapper_string(r, "$numberDecimal", text, len);
}

/* Strings, and code and symbols, which are strings in a wrapper */
static void
push_string_value(JsonbReader *r, const BsonIter *it, JsonbIteratorToken token,
				  const BsonDecodePath *path)
{
	size_t		len;
	const char *s = bson_iter_utf8(it, &len);

	push_utf8(r, token, s, len, path);
}

static void
push_code_or_symbol(JsonbReader *r, const BsonIter *it,
					const BsonDecodePath *path)
{
	size_t		len;
	const char *s = bson_iter_utf8(it, &len);

	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, it->type == BSON_TYPE_CODE ? "$code" : "$symbol");
	push_utf8(r, WJB_VALUE, s, len, path);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
}

static void
push_code_w_scope(JsonbReader *r, const BsonIter *it,
				  const BsonDecodePath *path)
{
	size_t		len;
	const uint8 *scope;
	const char *code = bson_read_code_w_scope(it, &len, &scope);

	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "$code");
	push_utf8(r, WJB_VALUE, code, len, path);
	push_key(r, "$scope");
	push_document(r, scope, false, path);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
}

static void
push_binary(JsonbReader *r, const BsonIter *it, const BsonDecodePath *path)
{
	uint8_t		subtype;
	size_t		len;
	const uint8 *data = bson_read_binary(it, &subtype, &len);
	char	   *b64;
	size_t		b64len;
	char	   *sub;

	check_jsonb_length(bson_base64_length(len), path, false);
	b64 = palloc(bson_base64_length(len) + 1);
	b64len = extjson_base64_encode(data, len, b64);
	sub = palloc(BSON_SUBTYPE_TEXT);
	bson_subtype_text(subtype, sub);

	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "$binary");
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "base64");
	push_string(r, WJB_VALUE, b64, b64len);
	push_key(r, "subType");
	push_string(r, WJB_VALUE, sub, 2);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
}

static void
push_objectid(JsonbReader *r, const BsonIter *it)
{
	char	   *hex = palloc(BSON_OID_TEXT);

	bson_oid_text(it->value, hex);
	push_wrapper_string(r, "$oid", hex, 24);
}

/* Relaxed, as from_bson shows every wrapper */
static void
push_datetime(JsonbReader *r, const BsonIter *it)
{
	char	   *text = palloc(BSON_DATETIME_TEXT);
	int			len;

	if (bson_datetime_text(bson_iter_int64(it), false, text, &len))
		push_wrapper_string(r, "$date", text, len);
	else
	{
		pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
		push_key(r, "$date");
		push_wrapper_string(r, "$numberLong", text, len);
		pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
	}
}

static void
push_timestamp(JsonbReader *r, const BsonIter *it)
{
	uint32_t	t;
	uint32_t	i;

	bson_iter_timestamp(it, &t, &i);
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "$timestamp");
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "t");
	push_numeric(r, WJB_VALUE, int64_to_numeric(t));
	push_key(r, "i");
	push_numeric(r, WJB_VALUE, int64_to_numeric(i));
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
}

static void
push_regex(JsonbReader *r, const BsonIter *it, const BsonDecodePath *path)
{
	const char *pattern;
	const char *options;
	char	   *sorted;
	size_t		len;

	bson_read_regex(it, &pattern, &options);
	sorted = bson_regex_options_text(options, &len);
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "$regularExpression");
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "pattern");
	push_utf8(r, WJB_VALUE, pattern, strlen(pattern), path);
	push_key(r, "options");
	push_utf8(r, WJB_VALUE, sorted, len, path);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
}

static void
push_dbpointer(JsonbReader *r, const BsonIter *it, const BsonDecodePath *path)
{
	size_t		len;
	const uint8 *oid;
	const char *ns = bson_read_dbpointer(it, &len, &oid);
	char	   *hex = palloc(BSON_OID_TEXT);

	bson_oid_text(oid, hex);
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "$dbPointer");
	pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
	push_key(r, "$ref");
	push_utf8(r, WJB_VALUE, ns, len, path);
	push_key(r, "$id");
	push_wrapper_string(r, "$oid", hex, 24);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
	pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
}

static void
push_bool(JsonbReader *r, const BsonIter *it, JsonbIteratorToken token)
{
	JsonbValue	v;

	v.type = jbvBool;
	v.val.boolean = it->value[0] != 0;
	pushJsonbValue(&r->state, token, &v);
}

static void
push_null(JsonbReader *r, JsonbIteratorToken token)
{
	JsonbValue	v;

	v.type = jbvNull;
	pushJsonbValue(&r->state, token, &v);
}

/*
 * The types that are only a marker, with no value: rare (undefined is
 * deprecated), so that a second switch here costs nothing that matters
 */
static void
push_marker(JsonbReader *r, const BsonIter *it)
{
	JsonbValue	v;

	switch (it->type)
	{
		case BSON_TYPE_UNDEFINED:
			pushJsonbValue(&r->state, WJB_BEGIN_OBJECT, NULL);
			push_key(r, "$undefined");
			v.type = jbvBool;
			v.val.boolean = true;
			pushJsonbValue(&r->state, WJB_VALUE, &v);
			pushJsonbValue(&r->state, WJB_END_OBJECT, NULL);
			break;
		case BSON_TYPE_MINKEY:
			push_wrapper_int(r, "$minKey", 1);
			break;
		case BSON_TYPE_MAXKEY:
			push_wrapper_int(r, "$maxKey", 1);
			break;
	}
}

/* The value of the iterator's current element, as token (WJB_VALUE/ELEM) */
static void
push_value(JsonbReader *r, const BsonIter *it, JsonbIteratorToken token,
		   const BsonDecodePath *path)
{
	switch (it->type)
	{
		case BSON_TYPE_DOUBLE:
			push_double(r, it, token);
			break;
		case BSON_TYPE_STRING:
			push_string_value(r, it, token, path);
			break;
		case BSON_TYPE_DOCUMENT:
		case BSON_TYPE_ARRAY:
			push_document(r, it->value, it->type == BSON_TYPE_ARRAY, path);
			break;
		case BSON_TYPE_BINARY:
			push_binary(r, it, path);
			break;
		case BSON_TYPE_UNDEFINED:
		case BSON_TYPE_MINKEY:
		case BSON_TYPE_MAXKEY:
			push_marker(r, it);
			break;
		case BSON_TYPE_OBJECTID:
			push_objectid(r, it);
			break;
		case BSON_TYPE_BOOL:
			push_bool(r, it, token);
			break;
		case BSON_TYPE_DATETIME:
			push_datetime(r, it);
			break;
		case BSON_TYPE_NULL:
			push_null(r, token);
			break;
		case BSON_TYPE_REGEX:
			push_regex(r, it, path);
			break;
		case BSON_TYPE_DBPOINTER:
			push_dbpointer(r, it, path);
			break;
		case BSON_TYPE_CODE:
		case BSON_TYPE_SYMBOL:
			push_code_or_symbol(r, it, path);
			break;
		case BSON_TYPE_CODE_W_SCOPE:
			push_code_w_scope(r, it, path);
			break;
		case BSON_TYPE_INT32:
			push_int32(r, it, token);
			break;
		case BSON_TYPE_TIMESTAMP:
			push_timestamp(r, it);
			break;
		case BSON_TYPE_INT64:
			push_int64(r, it, token);
			break;
		case BSON_TYPE_DECIMAL128:
			push_decimal128(r, it);
			break;
		default:
			elog(ERROR, "unexpected BSON element type 0x%02x after validation", it->type);
	}
}

/* A document (an object) or an array, at doc; the top level returns the root */
static JsonbValue *
push_document(JsonbReader *r, const uint8 *doc, bool array,
			  const BsonDecodePath *parent)
{
	BsonIter	it;
	BsonDecodePath path = {parent, NULL, 0, array};

	check_stack_depth();
	pushJsonbValue(&r->state, array ? WJB_BEGIN_ARRAY : WJB_BEGIN_OBJECT, NULL);
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it))
	{
		if ((++r->elements & 0xFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		path.key = it.key;
		path.keylen = it.keylen;
		if (!array)
		{
			size_t		keylen;
			const char *key;

			check_jsonb_length(it.keylen, &path, true);
			key = bson_decode_to_server(it.key, it.keylen, &keylen, &path, true, 0);
			check_jsonb_length(keylen, &path, true);

			push_string(r, WJB_KEY, key, keylen);
		}
		push_value(r, &it, array ? WJB_ELEM : WJB_VALUE, &path);
	}
	return pushJsonbValue(&r->state, array ? WJB_END_ARRAY : WJB_END_OBJECT, NULL);
}

Jsonb *
bson_document_to_jsonb(const uint8 *doc, size_t len)
{
	JsonbReader r = {NULL, 0};

	bson_decode_validate(doc, len, 0);
	return JsonbValueToJsonb(push_document(&r, doc, false, NULL));
}
