/*
 * bson_reader.c
 *		Reading BSON: strict validation, the walk over validated bytes, and the
 *		text forms of values that Extended JSON output needs.
 *
 * Plain C99, no PostgreSQL headers: fuzz/ builds this file on its own.
 * Every read in bson_read_validate() is checked against the bound of the
 * innermost enclosing document first; the iterator and the accessors below
 * are only ever run on validated bytes.
 */
#include "bson_reader.h"

#include <stdarg.h>
#include <stdio.h>

typedef struct Validator
{
	const uint8_t *base;		/* the input's first byte: offsets count from it */
	const BsonReadLimits *limits;
	BsonReadError *err;
	uint32_t	elements;		/* for the tick hook */
} Validator;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static bool
fail(Validator *v, const uint8_t *at, const char *fmt,...)
{
	if (v->err)
	{
		va_list		ap;

		v->err->offset = (size_t) (at - v->base);
		va_start(ap, fmt);
		vsnprintf(v->err->message, sizeof(v->err->message), fmt, ap);
		va_end(ap);
	}
	return false;
}

size_t
bson_read_utf8_valid_prefix(const uint8_t *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		uint8_t		c;

		/* ASCII (and NUL) eight bytes at a time */
		if (i + 8 <= len)
		{
			uint64_t	chunk;

			memcpy(&chunk, s + i, sizeof(chunk));
			if ((chunk & UINT64_C(0x8080808080808080)) == 0)
			{
				i += 8;
				continue;
			}
		}
		c = s[i];
		if (c < 0x80)
			i++;
		else if (c < 0xC2)		/* continuation byte, or overlong 2-byte */
			return i;
		else if (c < 0xE0)
		{
			if (i + 1 >= len || (s[i + 1] & 0xC0) != 0x80)
				return i;
			i += 2;
		}
		else if (c < 0xF0)
		{
			if (i + 2 >= len || (s[i + 1] & 0xC0) != 0x80 ||
				(s[i + 2] & 0xC0) != 0x80 ||
				(c == 0xE0 && s[i + 1] < 0xA0) ||	/* overlong */
				(c == 0xED && s[i + 1] >= 0xA0))	/* surrogate */
				return i;
			i += 3;
		}
		else if (c < 0xF5)
		{
			if (i + 3 >= len || (s[i + 1] & 0xC0) != 0x80 ||
				(s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80 ||
				(c == 0xF0 && s[i + 1] < 0x90) ||	/* overlong */
				(c == 0xF4 && s[i + 1] >= 0x90))	/* above U+10FFFF */
				return i;
			i += 4;
		}
		else
			return i;
	}
	return i;
}

/*
 * A key or C string at p, NUL-terminated before end: its size with the NUL.
 * Keys are short, so one byte loop finds the NUL and notes whether any byte
 * is non-ASCII; only then is the UTF-8 check run.
 */
static bool
check_cstring(Validator *v, const uint8_t *p, const uint8_t *end,
			  const char *what, size_t *size)
{
	const uint8_t *q = p;
	uint8_t		high = 0;
	size_t		ok;

	while (q < end && *q)
		high |= *q++;
	if (q == end)
		return fail(v, p, "%s is not NUL-terminated within its document", what);
	if (high & 0x80)
	{
		ok = bson_read_utf8_valid_prefix(p, (size_t) (q - p));
		if (ok != (size_t) (q - p))
			return fail(v, p + ok, "%s is not valid UTF-8", what);
	}
	*size = (size_t) (q - p) + 1;
	return true;
}

/* A string value (int32 length, bytes, NUL) at p with room bytes left */
static bool
check_string(Validator *v, const uint8_t *p, size_t room, const char *what,
			 size_t *size)
{
	int32_t		slen;
	size_t		ok;

	if (room < 4)
		return fail(v, p, "%s length is truncated: %zu of 4 bytes left in its document", what, room);
	slen = (int32_t) bsonr_u32(p);
	if (slen < 1)
		return fail(v, p, "%s length %d is less than 1", what, (int) slen);
	if ((size_t) slen > room - 4)
		return fail(v, p, "%s length %d exceeds the %zu bytes left in its document", what, (int) slen, room - 4);
	/*
	 * The NUL's index as size_t: 4 + slen - 1 in int would overflow for a
	 * length near INT32_MAX, which room allows in an input over 2 GB.
	 */
	if (p[3 + (size_t) slen] != 0)
		return fail(v, p + 3 + (size_t) slen, "%s does not end with a NUL byte", what);
	ok = bson_read_utf8_valid_prefix(p + 4, (size_t) slen - 1);
	if (ok != (size_t) slen - 1)
		return fail(v, p + 4 + ok, "%s is not valid UTF-8", what);
	*size = 4 + (size_t) slen;
	return true;
}

static bool check_document(Validator *v, const uint8_t *p, size_t avail,
						   int depth, const char *what);

/* The value of type type at p, with room bytes left before the terminator */
static bool
check_value(Validator *v, uint8_t type, const uint8_t *elem, const uint8_t *p,
			size_t room, int depth, size_t *size)
{
	size_t		need;

	switch (type)
	{
		case BSON_TYPE_DOUBLE:
		case BSON_TYPE_DATETIME:
		case BSON_TYPE_TIMESTAMP:
		case BSON_TYPE_INT64:
			need = 8;
			break;
		case BSON_TYPE_INT32:
			need = 4;
			break;
		case BSON_TYPE_OBJECTID:
			need = 12;
			break;
		case BSON_TYPE_DECIMAL128:
			need = 16;
			break;
		case BSON_TYPE_UNDEFINED:
		case BSON_TYPE_NULL:
		case BSON_TYPE_MINKEY:
		case BSON_TYPE_MAXKEY:
			need = 0;
			break;
		case BSON_TYPE_BOOL:
			if (room < 1)
				return fail(v, p, "boolean value is truncated");
			if (p[0] > 1)
				return fail(v, p, "boolean value is %u, not 0 or 1", (unsigned) p[0]);
			*size = 1;
			return true;
		case BSON_TYPE_STRING:
			return check_string(v, p, room, "string", size);
		case BSON_TYPE_CODE:
			return check_string(v, p, room, "JavaScript code", size);
		case BSON_TYPE_SYMBOL:
			return check_string(v, p, room, "symbol", size);
		case BSON_TYPE_DOCUMENT:
		case BSON_TYPE_ARRAY:
			if (!check_document(v, p, room, depth + 1,
								type == BSON_TYPE_ARRAY ? "array" : "embedded document"))
				return false;
			*size = bsonr_u32(p);
			return true;
		case BSON_TYPE_BINARY:
			{
				int32_t		blen;

				if (room < 5)
					return fail(v, p, "binary length and subtype are truncated: %zu of 5 bytes left in its document", room);
				blen = (int32_t) bsonr_u32(p);
				if (blen < 0)
					return fail(v, p, "binary length %d is negative", (int) blen);
				if ((size_t) blen > room - 5)
					return fail(v, p, "binary length %d exceeds the %zu bytes left in its document", (int) blen, room - 5);
				if (p[4] == 2)
				{
					int32_t		inner;

					if (blen < 4)
						return fail(v, p, "binary subtype 2 length %d is less than 4", (int) blen);
					inner = (int32_t) bsonr_u32(p + 5);
					if (inner != blen - 4)
						return fail(v, p + 5, "binary subtype 2 inner length %d is not its length %d minus 4", (int) inner, (int) blen);
				}
				*size = 5 + (size_t) blen;
				return true;
			}
		case BSON_TYPE_REGEX:
			{
				size_t		pattern;
				size_t		options;

				if (!check_cstring(v, p, p + room, "regular expression pattern", &pattern) ||
					!check_cstring(v, p + pattern, p + room, "regular expression options", &options))
					return false;
				*size = pattern + options;
				return true;
			}
		case BSON_TYPE_DBPOINTER:
			{
				size_t		ns;

				if (!check_string(v, p, room, "DBPointer namespace", &ns))
					return false;
				if (room - ns < 12)
					return fail(v, p + ns, "DBPointer ObjectId is truncated: %zu of 12 bytes left in its document", room - ns);
				*size = ns + 12;
				return true;
			}
		case BSON_TYPE_CODE_W_SCOPE:
			{
				int32_t		total;
				size_t		code;
				size_t		scope_room;

				if (room < 4)
					return fail(v, p, "code with scope length is truncated: %zu of 4 bytes left in its document", room);
				total = (int32_t) bsonr_u32(p);
				if (total < 14)
					return fail(v, p, "code with scope length %d is less than 14", (int) total);
				if ((size_t) total > room)
					return fail(v, p, "code with scope length %d exceeds the %zu bytes left in its document", (int) total, room);
				if (!check_string(v, p + 4, (size_t) total - 4, "code with scope's code", &code))
					return false;
				scope_room = (size_t) total - 4 - code;
				if (!check_document(v, p + 4 + code, scope_room, depth + 1, "code with scope's scope"))
					return false;
				if (bsonr_u32(p + 4 + code) != scope_room)
					return fail(v, p, "code with scope length %d does not match its parts (%zu bytes)",
								(int) total, 4 + code + bsonr_u32(p + 4 + code));
				*size = (size_t) total;
				return true;
			}
		default:
			return fail(v, elem, "unknown element type 0x%02x", (unsigned) type);
	}
	if (room < need)
		return fail(v, p, "value of type 0x%02x is truncated: %zu of %zu bytes left in its document",
					(unsigned) type, room, need);
	*size = need;
	return true;
}

/* A document or array at p, within avail bytes of its parent */
static bool
check_document(Validator *v, const uint8_t *p, size_t avail, int depth,
			   const char *what)
{
	int32_t		len;
	const uint8_t *end;
	const uint8_t *q;

	if (avail < 4)
		return fail(v, p, "%s length is truncated: %zu of 4 bytes left", what, avail);
	len = (int32_t) bsonr_u32(p);
	if (len < BSON_MIN_DOCUMENT_SIZE)
		return fail(v, p, "%s length %d is less than 5", what, (int) len);
	if ((size_t) len > avail)
		return fail(v, p, "%s length %d exceeds the %zu bytes available", what, (int) len, avail);
	end = p + len - 1;
	if (*end != 0)
		return fail(v, end, "%s does not end with a NUL byte", what);
	if (v->limits)
	{
		if (v->limits->max_depth > 0 && depth > v->limits->max_depth)
			return fail(v, p, "%s is nested deeper than %d levels", what, v->limits->max_depth);
		if (v->limits->enter && !v->limits->enter(v->limits->arg, depth))
			return fail(v, p, "%s is nested too deeply", what);
	}

	q = p + 4;
	while (q < end)
	{
		const uint8_t *elem = q;
		size_t		keysize;
		size_t		valsize;

		if (v->limits && v->limits->tick && (++v->elements % BSONR_TICK) == 0)
			v->limits->tick(v->limits->arg);
		/* the type first: a stray byte reads better as a type than as a key */
		if (!(elem[0] >= BSON_TYPE_DOUBLE && elem[0] <= BSON_TYPE_DECIMAL128) &&
			elem[0] != BSON_TYPE_MINKEY && elem[0] != BSON_TYPE_MAXKEY)
			return fail(v, elem, "unknown element type 0x%02x", (unsigned) elem[0]);
		if (!check_cstring(v, q + 1, end, "key", &keysize))
			return false;
		q += 1 + keysize;
		if (!check_value(v, elem[0], elem, q, (size_t) (end - q), depth, &valsize))
			return false;
		q += valsize;
	}
	return true;
}

bool
bson_read_validate(const uint8_t *data, size_t len, const BsonReadLimits *limits,
			  BsonReadError *err)
{
	Validator	v = {data, limits, err, 0};

	if (len < BSON_MIN_DOCUMENT_SIZE)
		return fail(&v, data, "input is %zu bytes long, and a BSON document has at least 5", len);
	if (!check_document(&v, data, len, 0, "document"))
		return false;
	if (bsonr_u32(data) != len)
		return fail(&v, data + bsonr_u32(data),
					"the input goes on for %zu bytes after the document's end",
					len - bsonr_u32(data));
	return true;
}

size_t
bson_read_document_length(const uint8_t *data, size_t len, BsonReadError *err)
{
	Validator	v = {data, NULL, err, 0};
	int32_t		doclen;

	if (len < 4)
	{
		fail(&v, data, "document length is truncated: %zu of 4 bytes left", len);
		return 0;
	}
	doclen = (int32_t) bsonr_u32(data);
	if (doclen < BSON_MIN_DOCUMENT_SIZE)
	{
		fail(&v, data, "document length %d is less than 5", (int) doclen);
		return 0;
	}
	if ((size_t) doclen > len)
	{
		fail(&v, data, "document length %d exceeds the %zu bytes left", (int) doclen, len);
		return 0;
	}
	return (size_t) doclen;
}

size_t
bson_read_value_size(uint8_t type, const uint8_t *v)
{
	switch (type)
	{
		case BSON_TYPE_DOUBLE:
		case BSON_TYPE_DATETIME:
		case BSON_TYPE_TIMESTAMP:
		case BSON_TYPE_INT64:
			return 8;
		case BSON_TYPE_INT32:
			return 4;
		case BSON_TYPE_OBJECTID:
			return 12;
		case BSON_TYPE_DECIMAL128:
			return 16;
		case BSON_TYPE_BOOL:
			return 1;
		case BSON_TYPE_STRING:
		case BSON_TYPE_CODE:
		case BSON_TYPE_SYMBOL:
			return 4 + bsonr_u32(v);
		case BSON_TYPE_DOCUMENT:
		case BSON_TYPE_ARRAY:
		case BSON_TYPE_CODE_W_SCOPE:
			return bsonr_u32(v);
		case BSON_TYPE_BINARY:
			return 5 + bsonr_u32(v);
		case BSON_TYPE_REGEX:
			{
				size_t		pattern = strlen((const char *) v) + 1;

				return pattern + strlen((const char *) v + pattern) + 1;
			}
		case BSON_TYPE_DBPOINTER:
			return 4 + bsonr_u32(v) + 12;
		default:				/* undefined, null, minkey, maxkey */
			return 0;
	}
}

const uint8_t *
bson_read_binary(const BsonIter *it, uint8_t *subtype, size_t *len)
{
	*subtype = it->value[4];
	*len = bsonr_u32(it->value);
	if (*subtype == 2)
	{
		*len -= 4;
		return it->value + 9;
	}
	return it->value + 5;
}

void
bson_read_regex(const BsonIter *it, const char **pattern, const char **options)
{
	*pattern = (const char *) it->value;
	*options = *pattern + strlen(*pattern) + 1;
}

const char *
bson_read_dbpointer(const BsonIter *it, size_t *len, const uint8_t **oid)
{
	*len = bsonr_u32(it->value) - 1;
	*oid = it->value + 4 + *len + 1;
	return (const char *) it->value + 4;
}

const char *
bson_read_code_w_scope(const BsonIter *it, size_t *len, const uint8_t **scope)
{
	*len = bsonr_u32(it->value + 4) - 1;
	*scope = it->value + 8 + *len + 1;
	return (const char *) it->value + 8;
}
