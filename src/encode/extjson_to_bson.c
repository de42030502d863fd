/*
 * extjson_to_bson.c
 *		MongoDB Extended JSON v2 wrappers to native BSON types.
 *
 * Follows MongoDB's Extended JSON v2 specification: canonical and relaxed
 * forms are accepted alike, the key order inside a wrapper does not matter,
 * and the legacy forms of old tools ({"$date": <ms>}, {"$binary": s,
 * "$type": t}, {"$regex": s, "$options": o}) only when asked for.  An object
 * with a wrapper key and anything else wrong is an error naming the wrapper
 * and the path; an object whose "$" keys are not wrapper keys (a DBRef
 * {"$ref", "$id"}, or {"$foo": 1}) is a plain document.
 */
#include "extjson_to_bson.h"

#include "numeric_to_bson.h"
#include "extjson_scalars.h"
#include "decimal128.h"

typedef enum WrapperKind
{
	W_NONE,
	W_OID,
	W_SYMBOL,
	W_NUMBER_INT,
	W_NUMBER_LONG,
	W_NUMBER_DOUBLE,
	W_NUMBER_DECIMAL,
	W_BINARY,
	W_UUID,
	W_CODE,
	W_TIMESTAMP,
	W_REGULAR_EXPRESSION,
	W_DB_POINTER,
	W_DATE,
	W_MIN_KEY,
	W_MAX_KEY,
	W_UNDEFINED,
	W_LEGACY_REGEX				/* "$regex" with a string value */
} WrapperKind;

/*
 * Writing one wrapper: obj is the loaded wrapper object, name its wrapper
 * key (for messages); the writer checks the object's shape, stores the BSON
 * type at *type_at and writes the value, or raises 22P02.
 */
typedef void (*WrapperWriter) (BsonExtJsonInput *in, const EjValue *obj,
							   const char *name, char *type_at);

static void write_oid(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_symbol(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_number_int(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_number_long(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_number_double(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_number_decimal(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_binary(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_uuid(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_code(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_timestamp(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_regular_expression(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_db_pointer(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_date(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_min_key(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_max_key(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_undefined(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);
static void write_legacy_regex(BsonExtJsonInput *in, const EjValue *obj, const char *name, char *type_at);

/* The keys that make an object a wrapper and their writers, by WrapperKind */
#define WK(s, f) {s, sizeof(s) - 1, f}
static const struct
{
	const char *key;
	int			len;
	WrapperWriter write;
}			wrappers[] =
{
	[W_NONE] = WK("", NULL),
	[W_OID] = WK("$oid", write_oid),
	[W_SYMBOL] = WK("$symbol", write_symbol),
	[W_NUMBER_INT] = WK("$numberInt", write_number_int),
	[W_NUMBER_LONG] = WK("$numberLong", write_number_long),
	[W_NUMBER_DOUBLE] = WK("$numberDouble", write_number_double),
	[W_NUMBER_DECIMAL] = WK("$numberDecimal", write_number_decimal),
	[W_BINARY] = WK("$binary", write_binary),
	[W_UUID] = WK("$uuid", write_uuid),
	[W_CODE] = WK("$code", write_code),
	[W_TIMESTAMP] = WK("$timestamp", write_timestamp),
	[W_REGULAR_EXPRESSION] = WK("$regularExpression", write_regular_expression),
	[W_DB_POINTER] = WK("$dbPointer", write_db_pointer),
	[W_DATE] = WK("$date", write_date),
	[W_MIN_KEY] = WK("$minKey", write_min_key),
	[W_MAX_KEY] = WK("$maxKey", write_max_key),
	[W_UNDEFINED] = WK("$undefined", write_undefined),
	[W_LEGACY_REGEX] = WK("$regex", write_legacy_regex),
};

/* Keys are short: a loop beats a call to memcmp */
static inline bool
keys_equal(const char *a, const char *b, int len)
{
	for (int i = 0; i < len; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* Which wrapper key is key, if any: this runs for every "$" key seen. */
static WrapperKind
wrapper_kind(const char *key, int keylen)
{
	WrapperKind first;
	WrapperKind second = W_NONE;

	if (keylen < 4 || key[0] != '$')
		return W_NONE;
	/* at most two candidates share a second letter; check their length */
	switch (key[1])
	{
		case 'o':
			first = W_OID;
			break;
		case 's':
			first = W_SYMBOL;
			break;
		case 'n':
			first = keylen == 10 ? W_NUMBER_INT : keylen == 11 ? W_NUMBER_LONG
				: keylen == 13 ? W_NUMBER_DOUBLE : W_NUMBER_DECIMAL;
			break;
		case 'b':
			first = W_BINARY;
			break;
		case 'u':
			first = W_UUID;
			second = W_UNDEFINED;
			break;
		case 'c':
			first = W_CODE;
			break;
		case 't':
			first = W_TIMESTAMP;
			break;
		case 'r':
			first = W_REGULAR_EXPRESSION;
			second = W_LEGACY_REGEX;
			break;
		case 'd':
			first = W_DB_POINTER;
			second = W_DATE;
			break;
		case 'm':
			first = W_MIN_KEY;
			second = W_MAX_KEY;
			break;
		default:
			return W_NONE;
	}
	if (wrappers[first].len == keylen &&
		keys_equal(wrappers[first].key, key, keylen))
		return first;
	if (second != W_NONE && wrappers[second].len == keylen &&
		keys_equal(wrappers[second].key, key, keylen))
		return second;
	return W_NONE;
}

bool
bson_extjson_is_wrapper_key(const char *key, int keylen, bool value_is_string)
{
	WrapperKind kind = wrapper_kind(key, keylen);

	return kind == W_LEGACY_REGEX ? value_is_string : kind != W_NONE;
}

/*
 * A malformed wrapper: 22P02, "invalid Extended JSON $oid", with the path to
 * the wrapper (whichever part of it was wrong) and what was expected.
 */
pg_noreturn static void
ej_error(BsonExtJsonInput *in, const EjValue *at, const char *wrapper,
		 const char *expected)
{
	StringInfoData where;

	initStringInfo(&where);
	bson_describe_location(in->w, (in->current ? in->current : at)->locator, &where);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid Extended JSON %s", wrapper),
			 errdetail("The %s at %s %s", wrapper, where.len ? where.data : "the top level",
					   expected)));
}

/* A key name and its length, for the lists below */
typedef struct KeyName
{
	const char *key;
	int			len;
} KeyName;

#define KN(s) {s, sizeof(s) - 1}

static const EjField *
get_field_n(const EjValue *obj, const char *key, int keylen)
{
	for (int i = 0; i < obj->nfields; i++)
		if (obj->fields[i].keylen == keylen &&
			keys_equal(obj->fields[i].key, key, keylen))
			return &obj->fields[i];
	return NULL;
}

#define get_field(obj, lit) get_field_n((obj), (lit), sizeof(lit) - 1)

/*
 * obj must have exactly the keys required (all of them) plus any of optional
 * (a NULL-terminated list, or NULL), each once.
 */
static void
check_keys(BsonExtJsonInput *in, const EjValue *obj, const char *wrapper,
		   const KeyName *required, const KeyName *optional,
		   const char *expected)
{
	int			found = 0;

	if (obj->kind != EJ_OBJECT || obj->nfields < 0)
		ej_error(in, obj, wrapper, expected);
	/* the commonest case, a single key */
	if (required[1].key == NULL && optional == NULL && obj->nfields == 1 &&
		obj->fields[0].keylen == required[0].len &&
		keys_equal(obj->fields[0].key, required[0].key, required[0].len))
		return;
	for (const KeyName *r = required; r->key; r++)
	{
		if (!get_field_n(obj, r->key, r->len))
			ej_error(in, obj, wrapper, expected);
		found++;
	}
	for (const KeyName *o = optional; o && o->key; o++)
		if (get_field_n(obj, o->key, o->len))
			found++;
	/* extra keys, and duplicates of the expected ones, leave a difference */
	if (found != obj->nfields)
		ej_error(in, obj, wrapper, expected);
}

/* The string value of field key, or an error */
static const EjValue *
string_field_n(BsonExtJsonInput *in, const EjValue *obj, const char *key,
			   int keylen, const char *wrapper, const char *expected)
{
	const EjField *f = get_field_n(obj, key, keylen);

	if (f == NULL || f->value->kind != EJ_STRING)
		ej_error(in, obj, wrapper, expected);
	return f->value;
}

#define string_field(in, obj, lit, wrapper, expected) \
	string_field_n((in), (obj), (lit), sizeof(lit) - 1, (wrapper), (expected))

/* An integer JSON number (from either input) into *out */
static bool
ej_integer(const EjValue *v, int64 *out)
{
	BsonNumber n;

	if (v->kind != EJ_NUMBER)
		return false;
	if (v->num)
		bson_number_from_json_numeric(v->num, &n);
	else
	{
		bool		is_integer = memchr(v->numtext, '.', v->numlen) == NULL &&
			memchr(v->numtext, 'e', v->numlen) == NULL &&
			memchr(v->numtext, 'E', v->numlen) == NULL;

		if (!is_integer)
			return false;
		bson_number_from_json_text(v->numtext, v->numlen, true, &n);
	}
	if (n.kind == BSON_NUMBER_INT32)
		*out = n.v.i32;
	else if (n.kind == BSON_NUMBER_INT64)
		*out = n.v.i64;
	else
		return false;
	return true;
}

/* A C string (regular expression pattern or options): no NUL, UTF-8 */
static void
put_cstring(BsonExtJsonInput *in, const EjValue *obj, const char *wrapper,
			const char *what, const char *s, int len)
{
	if (memchr(s, '\0', len) != NULL)
	{
		StringInfoData expected;

		initStringInfo(&expected);
		appendStringInfo(&expected, "has %s with \\u0000; BSON stores it as a NUL-terminated string.", what);
		ej_error(in, obj, wrapper, expected.data);
	}
	bson_put_cstring(in->w, s, len);
}

static void
put_binary(BsonExtJsonInput *in, const EjValue *obj, const char *wrapper,
		   const EjValue *base64, uint8 subtype)
{
	BsonWriter *w = in->w;
	size_t		max = extjson_base64_decoded_max(base64->len);
	size_t		n;
	char	   *p;

	bson_reserve(w, 4 + 1 + 4 + max);
	p = w->pos;
	/* subtype 2 (old binary) repeats the length inside the data */
	if (!extjson_parse_base64(base64->str, base64->len,
							  (uint8_t *) p + (subtype == 2 ? 9 : 5), &n))
		ej_error(in, obj, wrapper, "must have a base64 string (RFC 4648, with padding).");
	if (subtype == 2)
	{
		bson_put_uint32_at(p, (uint32) n + 4);
		p[4] = (char) subtype;
		bson_put_uint32_at(p + 5, (uint32) n);
		w->pos += 9 + n;
	}
	else
	{
		bson_put_uint32_at(p, (uint32) n);
		p[4] = (char) subtype;
		w->pos += 5 + n;
	}
}

static const KeyName K_OID[] = {KN("$oid"), {NULL, 0}};
static const KeyName K_SYMBOL[] = {KN("$symbol"), {NULL, 0}};
static const KeyName K_INT[] = {KN("$numberInt"), {NULL, 0}};
static const KeyName K_LONG[] = {KN("$numberLong"), {NULL, 0}};
static const KeyName K_DOUBLE[] = {KN("$numberDouble"), {NULL, 0}};
static const KeyName K_DECIMAL[] = {KN("$numberDecimal"), {NULL, 0}};
static const KeyName K_BINARY[] = {KN("$binary"), {NULL, 0}};
static const KeyName K_LEGACY_BINARY[] = {KN("$binary"), KN("$type"), {NULL, 0}};
static const KeyName K_BINARY_INNER[] = {KN("base64"), KN("subType"), {NULL, 0}};
static const KeyName K_UUID[] = {KN("$uuid"), {NULL, 0}};
static const KeyName K_CODE[] = {KN("$code"), {NULL, 0}};
static const KeyName K_SCOPE[] = {KN("$scope"), {NULL, 0}};
static const KeyName K_TIMESTAMP[] = {KN("$timestamp"), {NULL, 0}};
static const KeyName K_TIMESTAMP_INNER[] = {KN("t"), KN("i"), {NULL, 0}};
static const KeyName K_REGEX[] = {KN("$regularExpression"), {NULL, 0}};
static const KeyName K_REGEX_INNER[] = {KN("pattern"), KN("options"), {NULL, 0}};
static const KeyName K_LEGACY_REGEX[] = {KN("$regex"), {NULL, 0}};
static const KeyName K_OPTIONS[] = {KN("$options"), {NULL, 0}};
static const KeyName K_DBPOINTER[] = {KN("$dbPointer"), {NULL, 0}};
static const KeyName K_DBPOINTER_INNER[] = {KN("$ref"), KN("$id"), {NULL, 0}};
static const KeyName K_DATE[] = {KN("$date"), {NULL, 0}};
static const KeyName K_MINKEY[] = {KN("$minKey"), {NULL, 0}};
static const KeyName K_MAXKEY[] = {KN("$maxKey"), {NULL, 0}};
static const KeyName K_UNDEFINED[] = {KN("$undefined"), {NULL, 0}};

static void
write_regex(BsonExtJsonInput *in, const EjValue *obj, const char *wrapper,
			const EjValue *pattern, const EjValue *options)
{
	char		sorted[64];
	int			n = options ? options->len : 0;

	if (n > (int) sizeof(sorted))
		ej_error(in, obj, wrapper, "has more options than there are regular expression flags.");
	/* options are written sorted, as the specification requires */
	if (n > 0 && !extjson_sort_regex_options(options->str, n, sorted))
		ej_error(in, obj, wrapper, "has options that are not ASCII: MongoDB's regular expression options are letters such as i, m, s and x.");
	put_cstring(in, obj, wrapper, "a pattern", pattern->str, pattern->len);
	put_cstring(in, obj, wrapper, "an options string", sorted, n);
}

bool
bson_extjson_write_string_wrapper(BsonWriter *w, char *type_at,
								  const char *key, int keylen,
								  const char *str, int len)
{
	BSON_ASSERT_ROOM(w, BSON_SCALAR_VALSIZE);
	switch (wrapper_kind(key, keylen))
	{
		case W_OID:
			{
				uint8_t		oid[12];

				if (!extjson_parse_oid(str, (size_t) len, oid))
					return false;
				*type_at = BSON_TYPE_OBJECTID;
				bson_reserve(w, 12);
				memcpy(w->pos, oid, 12);
				w->pos += 12;
				return true;
			}
		case W_DATE:
			{
				int64_t		ms;

				if (!extjson_parse_iso8601(str, (size_t) len, &ms))
					return false;
				*type_at = BSON_TYPE_DATETIME;
				bson_put_int64(w, ms);
				return true;
			}
		case W_NUMBER_INT:
			{
				int32_t		i;

				if (!extjson_parse_int32(str, (size_t) len, &i))
					return false;
				*type_at = BSON_TYPE_INT32;
				bson_put_int32(w, i);
				return true;
			}
		case W_NUMBER_LONG:
			{
				int64_t		i;

				if (!extjson_parse_int64(str, (size_t) len, &i))
					return false;
				*type_at = BSON_TYPE_INT64;
				bson_put_int64(w, i);
				return true;
			}
		case W_NUMBER_DOUBLE:
			{
				double		d;

				if (!extjson_parse_double(str, (size_t) len, &d))
					return false;
				*type_at = BSON_TYPE_DOUBLE;
				bson_put_double(w, d);
				return true;
			}
		default:
			/* the rest are rare here, or not one string: the general path */
			return false;
	}
}

static void
write_oid(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *v;
	uint8_t		oid[12];

	check_keys(in, obj, name, K_OID, NULL, "must be {\"$oid\": \"<24 hexadecimal digits>\"}.");
	v = string_field(in, obj, "$oid", name, "must be a string of 24 hexadecimal digits.");
	if (!extjson_parse_oid(v->str, v->len, oid))
		ej_error(in, obj, name, "must be a string of 24 hexadecimal digits.");
	*type_at = BSON_TYPE_OBJECTID;
	bson_reserve(w, 12);
	memcpy(w->pos, oid, 12);
	w->pos += 12;
}

static void
write_symbol(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *v;

	check_keys(in, obj, name, K_SYMBOL, NULL, "must be {\"$symbol\": \"<string>\"}.");
	v = string_field(in, obj, "$symbol", name, "must be a string.");
	*type_at = BSON_TYPE_SYMBOL;
	bson_reserve(w, BSON_STRING_VALSIZE(v->len));
	bson_put_string(w, v->str, v->len);
}

static void
write_number_int(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *v;
	int32_t		i;

	check_keys(in, obj, name, K_INT, NULL, "must be {\"$numberInt\": \"<int32>\"}.");
	v = string_field(in, obj, "$numberInt", name, "must be a string holding a 32-bit integer.");
	if (!extjson_parse_int32(v->str, v->len, &i))
		ej_error(in, obj, name, "must be a string holding a 32-bit integer.");
	*type_at = BSON_TYPE_INT32;
	bson_put_int32(w, i);
}

static void
write_number_long(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *v;
	int64_t		i;

	check_keys(in, obj, name, K_LONG, NULL, "must be {\"$numberLong\": \"<int64>\"}.");
	v = string_field(in, obj, "$numberLong", name, "must be a string holding a 64-bit integer.");
	if (!extjson_parse_int64(v->str, v->len, &i))
		ej_error(in, obj, name, "must be a string holding a 64-bit integer.");
	*type_at = BSON_TYPE_INT64;
	bson_put_int64(w, i);
}

static void
write_number_double(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *v;
	double		d;

	check_keys(in, obj, name, K_DOUBLE, NULL, "must be {\"$numberDouble\": \"<decimal>\"}.");
	v = string_field(in, obj, "$numberDouble", name, "must be a string holding a decimal number, \"Infinity\", \"-Infinity\" or \"NaN\".");
	if (!extjson_parse_double(v->str, v->len, &d))
		ej_error(in, obj, name, "must be a string holding a decimal number within double's range, \"Infinity\", \"-Infinity\" or \"NaN\".");
	*type_at = BSON_TYPE_DOUBLE;
	bson_put_double(w, d);
}

static void
write_number_decimal(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *v;
	uint64_t	low;
	uint64_t	high;

	check_keys(in, obj, name, K_DECIMAL, NULL, "must be {\"$numberDecimal\": \"<decimal>\"}.");
	v = string_field(in, obj, "$numberDecimal", name, "must be a string holding a decimal number.");
	if (!decimal128_parse(v->str, v->len, &low, &high))
		ej_error(in, obj, name, "must be a string holding a decimal number that decimal128 holds exactly (at most 34 significant digits, exponent from -6176 to 6111), \"Infinity\", \"-Infinity\" or \"NaN\".");
	*type_at = BSON_TYPE_DECIMAL128;
	bson_put_decimal128(w, low, high);
}

static void
write_binary(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	const EjField *f = get_field(obj, "$binary");
	const EjValue *data;
	uint8_t		subtype;

	if (f->value->kind == EJ_STRING)
	{
		const EjValue *type;

		/* legacy: {"$binary": base64, "$type": hex} */
		if (!in->legacy)
			ej_error(in, obj, name, "is in the legacy form {\"$binary\": ..., \"$type\": ...}, accepted only with legacy_extended_json.");
		check_keys(in, obj, name, K_LEGACY_BINARY, NULL, "must be {\"$binary\": \"<base64>\", \"$type\": \"<hex>\"}.");
		data = f->value;
		type = string_field(in, obj, "$type", name, "must have a \"$type\" string of 1 or 2 hexadecimal digits.");
		if (!extjson_parse_hex_subtype(type->str, type->len, &subtype))
			ej_error(in, obj, name, "must have a \"$type\" string of 1 or 2 hexadecimal digits.");
	}
	else
	{
		const EjValue *inner = f->value;
		const EjValue *st;

		check_keys(in, obj, name, K_BINARY, NULL, "must be {\"$binary\": {\"base64\": \"<data>\", \"subType\": \"<hex>\"}}.");
		check_keys(in, inner, name, K_BINARY_INNER, NULL, "must be {\"$binary\": {\"base64\": \"<data>\", \"subType\": \"<hex>\"}}.");
		data = string_field(in, inner, "base64", name, "must have a \"base64\" string.");
		st = string_field(in, inner, "subType", name, "must have a \"subType\" string of 1 or 2 hexadecimal digits.");
		if (!extjson_parse_hex_subtype(st->str, st->len, &subtype))
			ej_error(in, obj, name, "must have a \"subType\" string of 1 or 2 hexadecimal digits.");
	}
	*type_at = BSON_TYPE_BINARY;
	put_binary(in, obj, name, data, subtype);
}

static void
write_uuid(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *v;
	uint8_t		uuid[16];

	check_keys(in, obj, name, K_UUID, NULL, "must be {\"$uuid\": \"<8-4-4-4-12 hexadecimal digits>\"}.");
	v = string_field(in, obj, "$uuid", name, "must be a string of 8-4-4-4-12 hexadecimal digits.");
	if (!extjson_parse_uuid(v->str, v->len, uuid))
		ej_error(in, obj, name, "must be a string of 8-4-4-4-12 hexadecimal digits.");
	*type_at = BSON_TYPE_BINARY;
	bson_reserve(w, 4 + 1 + 16);
	bson_put_uint32_at(w->pos, 16);
	w->pos[4] = 4;
	memcpy(w->pos + 5, uuid, 16);
	w->pos += 21;
}

static void
write_code(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *code;
	const EjField *scope;

	check_keys(in, obj, name, K_CODE, K_SCOPE, "must be {\"$code\": \"<string>\"} or {\"$code\": \"<string>\", \"$scope\": {...}}.");
	code = string_field(in, obj, "$code", name, "must be a string.");
	scope = get_field(obj, "$scope");
	if (scope == NULL)
	{
		*type_at = BSON_TYPE_CODE;
		bson_reserve(w, BSON_STRING_VALSIZE(code->len));
		bson_put_string(w, code->str, code->len);
	}
	else
	{
		Size		total;

		if (scope->value->kind != EJ_OBJECT)
			ej_error(in, obj, name, "must have a \"$scope\" document.");
		*type_at = BSON_TYPE_CODE_W_SCOPE;
		total = bson_open(w);
		bson_reserve(w, BSON_STRING_VALSIZE(code->len));
		bson_put_string(w, code->str, code->len);
		in->write_document(in->arg, scope->value);
		bson_put_uint32_at(w->buf + total, (uint32) ((w->pos - w->buf) - total));
	}
}

static void
write_timestamp(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *inner = get_field(obj, "$timestamp")->value;
	int64		t;
	int64		i;

	check_keys(in, obj, name, K_TIMESTAMP, NULL, "must be {\"$timestamp\": {\"t\": <uint32>, \"i\": <uint32>}}.");
	check_keys(in, inner, name, K_TIMESTAMP_INNER, NULL, "must be {\"$timestamp\": {\"t\": <uint32>, \"i\": <uint32>}}.");
	if (!ej_integer(get_field(inner, "t")->value, &t) || t < 0 || t > PG_UINT32_MAX ||
		!ej_integer(get_field(inner, "i")->value, &i) || i < 0 || i > PG_UINT32_MAX)
		ej_error(in, obj, name, "must have integers from 0 to 4294967295 as \"t\" and \"i\".");
	*type_at = BSON_TYPE_TIMESTAMP;
	bson_reserve(w, 8);
	bson_put_uint32_at(w->pos, (uint32) i);
	bson_put_uint32_at(w->pos + 4, (uint32) t);
	w->pos += 8;
}

static void
write_regular_expression(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	const EjValue *inner = get_field(obj, "$regularExpression")->value;

	check_keys(in, obj, name, K_REGEX, NULL, "must be {\"$regularExpression\": {\"pattern\": \"<string>\", \"options\": \"<string>\"}}.");
	check_keys(in, inner, name, K_REGEX_INNER, NULL, "must be {\"$regularExpression\": {\"pattern\": \"<string>\", \"options\": \"<string>\"}}.");
	*type_at = BSON_TYPE_REGEX;
	write_regex(in, obj, name,
				string_field(in, inner, "pattern", name, "must have a \"pattern\" string."),
				string_field(in, inner, "options", name, "must have an \"options\" string."));
}

static void
write_legacy_regex(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	const EjField *options;

	if (!in->legacy)
		ej_error(in, obj, name, "is in the legacy form {\"$regex\": ..., \"$options\": ...}, accepted only with legacy_extended_json.");
	check_keys(in, obj, name, K_LEGACY_REGEX, K_OPTIONS, "must be {\"$regex\": \"<string>\", \"$options\": \"<string>\"}.");
	options = get_field(obj, "$options");
	if (options && options->value->kind != EJ_STRING)
		ej_error(in, obj, name, "must have an \"$options\" string.");
	*type_at = BSON_TYPE_REGEX;
	write_regex(in, obj, name, get_field(obj, "$regex")->value,
				options ? options->value : NULL);
}

static void
write_db_pointer(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *inner = get_field(obj, "$dbPointer")->value;
	const EjValue *ref;
	const EjValue *id;
	const EjValue *oidstr;
	uint8_t		oid[12];

	check_keys(in, obj, name, K_DBPOINTER, NULL, "must be {\"$dbPointer\": {\"$ref\": \"<namespace>\", \"$id\": {\"$oid\": \"<24 hex>\"}}}.");
	check_keys(in, inner, name, K_DBPOINTER_INNER, NULL, "must be {\"$dbPointer\": {\"$ref\": \"<namespace>\", \"$id\": {\"$oid\": \"<24 hex>\"}}}.");
	ref = string_field(in, inner, "$ref", name, "must have a \"$ref\" string.");
	id = get_field(inner, "$id")->value;
	check_keys(in, id, name, K_OID, NULL, "must have an \"$id\" of the form {\"$oid\": \"<24 hex>\"}.");
	oidstr = string_field(in, id, "$oid", name, "must have an \"$id\" of the form {\"$oid\": \"<24 hex>\"}.");
	if (!extjson_parse_oid(oidstr->str, oidstr->len, oid))
		ej_error(in, obj, name, "must have an \"$id\" of the form {\"$oid\": \"<24 hex>\"}.");
	*type_at = BSON_TYPE_DBPOINTER;
	bson_reserve(w, BSON_STRING_VALSIZE(ref->len));
	bson_put_string(w, ref->str, ref->len);
	bson_reserve(w, 12);
	memcpy(w->pos, oid, 12);
	w->pos += 12;
}

static void
write_date(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	BsonWriter *w = in->w;
	const EjValue *v = get_field(obj, "$date")->value;
	int64		ms;

	check_keys(in, obj, name, K_DATE, NULL, "must be {\"$date\": {\"$numberLong\": \"<ms>\"}} or {\"$date\": \"<ISO-8601 date and time with Z or an offset>\"}.");
	if (v->kind == EJ_STRING)
	{
		int64_t		parsed;

		if (!extjson_parse_iso8601(v->str, v->len, &parsed))
			ej_error(in, obj, name, "must be an ISO-8601 date and time from year 0000 to 9999 with seconds and Z or an offset, such as \"2024-01-02T03:04:05.678Z\".");
		ms = parsed;
	}
	else if (v->kind == EJ_OBJECT)
	{
		const EjValue *s;
		int64_t		parsed;

		check_keys(in, v, name, K_LONG, NULL, "must be {\"$date\": {\"$numberLong\": \"<ms>\"}}.");
		s = string_field(in, v, "$numberLong", name, "must be {\"$date\": {\"$numberLong\": \"<ms>\"}}.");
		if (!extjson_parse_int64(s->str, s->len, &parsed))
			ej_error(in, obj, name, "must be {\"$date\": {\"$numberLong\": \"<ms>\"}} with a 64-bit integer.");
		ms = parsed;
	}
	else if (v->kind == EJ_NUMBER)
	{
		if (!in->legacy)
			ej_error(in, obj, name, "is in the legacy form {\"$date\": <ms>}, accepted only with legacy_extended_json.");
		if (!ej_integer(v, &ms))
			ej_error(in, obj, name, "must be an integer number of milliseconds in its legacy form.");
	}
	else
		ej_error(in, obj, name, "must be {\"$date\": {\"$numberLong\": \"<ms>\"}} or {\"$date\": \"<ISO-8601>\"}.");
	*type_at = BSON_TYPE_DATETIME;
	bson_reserve(w, 8);
	bson_put_int64(w, ms);
}

static void
write_undefined(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			   char *type_at)
{
	check_keys(in, obj, name, K_UNDEFINED, NULL, "must be {\"$undefined\": true}.");
	if (obj->fields[0].value->kind != EJ_TRUE)
		ej_error(in, obj, name, "must be {\"$undefined\": true}.");
	*type_at = BSON_TYPE_UNDEFINED;
}

static void
write_key_bound(BsonExtJsonInput *in, const EjValue *obj, const char *name,
				const KeyName *keys, const char *expected, uint8 type, char *type_at)
{
	int64		one;

	check_keys(in, obj, name, keys, NULL, expected);
	if (!ej_integer(obj->fields[0].value, &one) || one != 1)
		ej_error(in, obj, name, expected);
	*type_at = (char) type;
}

static void
write_min_key(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			  char *type_at)
{
	write_key_bound(in, obj, name, K_MINKEY, "must be {\"$minKey\": 1}.",
					BSON_TYPE_MINKEY, type_at);
}

static void
write_max_key(BsonExtJsonInput *in, const EjValue *obj, const char *name,
			  char *type_at)
{
	write_key_bound(in, obj, name, K_MAXKEY, "must be {\"$maxKey\": 1}.",
					BSON_TYPE_MAXKEY, type_at);
}

bool
bson_extjson_write(BsonExtJsonInput *in, char *type_at, const EjValue *obj)
{
	WrapperKind kind = W_NONE;
	const char *name = NULL;

	BSON_ASSERT_ROOM(in->w, BSON_SCALAR_VALSIZE);
	if (obj->kind != EJ_OBJECT || obj->nfields <= 0)
		return false;
	in->current = obj;
	for (int i = 0; i < obj->nfields; i++)
	{
		const EjField *f = &obj->fields[i];
		WrapperKind k = wrapper_kind(f->key, f->keylen);

		if (k == W_LEGACY_REGEX && f->value->kind != EJ_STRING)
			k = W_NONE;
		if (k == W_NONE)
			continue;
		if (kind != W_NONE)
			ej_error(in, obj, name, "has other keys; an Extended JSON wrapper has no other keys.");
		kind = k;
		name = wrappers[k].key;
	}
	if (kind == W_NONE)
		return false;

	wrappers[kind].write(in, obj, name, type_at);
	return true;
}
