/*
 * bson_decode.h
 *		What the BSON readers inside PostgreSQL share: validation that raises
 *		PostgreSQL errors, the path of the element being read (for error
 *		messages), UTF-8 to the server encoding, and the texts that both
 *		show alike inside Extended JSON wrappers (doubles, ObjectIds, binary
 *		subtypes, datetimes, regular expression options).
 *
 * The decoder's core (bson_reader.h) knows nothing of PostgreSQL; this is
 * its glue.  The readers themselves: bson_to_jsonb.c (from_bson) and
 * bson_to_json.c (bson_to_json, Extended JSON v2 text).
 */
#ifndef BSON_DECODE_H
#define BSON_DECODE_H

#include "bson_compat.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "bson_reader.h"
#include "decimal128.h"
#include "error_path.h"
#include "extjson_scalars.h"

/*
 * Validate data[0..len) as one BSON document or raise 22P03
 * (invalid_binary_representation) with the byte offset (plus base_offset,
 * the document's place in a stream) and the problem.  Nesting is bounded by
 * check_stack_depth().
 */
/*
 * bson_read_validate() with PostgreSQL's hooks (the stack check, raising 54001;
 * interrupts): false and *err for an invalid document, raising nothing else.
 */
extern bool bson_decode_check(const uint8 *data, size_t len, BsonReadError *err);

extern void bson_decode_validate(const uint8 *data, size_t len, size_t base_offset);

/* The same check, as a yes or no; never raises for bad bytes. */
extern bool bson_decode_is_valid(const uint8 *data, size_t len);

/*
 * Where an element is, as a chain through the readers' C stacks: the key of
 * each level, or the index in an array.  Costs nothing until an error needs
 * it printed ("orders[2].at").
 */
typedef struct BsonDecodePath
{
	const struct BsonDecodePath *parent;
	const char *key;			/* NULL for the top-level document */
	size_t		keylen;
	bool		in_array;		/* key is an array index */
} BsonDecodePath;

extern void bson_decode_path_text(const BsonDecodePath *path, StringInfo out);

/*
 * s[0..len), valid UTF-8 from a validated document, in the server encoding:
 * s itself when nothing needs converting, else a palloc'd copy (its length
 * in *outlen).  A character with no equivalent in the server encoding
 * raises 22P05 naming the path (and whether s is the key there or a string
 * value) and the byte offset, counted from at (where s starts in the whole
 * string).  s must not contain NUL.
 */
extern const char *bson_decode_to_server(const char *s, size_t len, size_t *outlen,
									   const BsonDecodePath *path, bool is_key,
									   size_t at);

/*
 * The shortest decimal text that reads back as d (finite), in one of two
 * forms:
 *   BSON_DOUBLE_JSON     as Extended JSON writers print it (Python's repr):
 *                        "1.0", "0.1", "1e-05", "1.5e+300", "-0.0";
 *   BSON_DOUBLE_NUMERIC  for a jsonb number that to_bson maps back to a
 *                        double: a fraction is always shown for integral
 *                        values below 1e19 ("1.0", "100000.0"), as to_bson
 *                        reads scale-0 integers as int32/int64.
 * out needs BSON_DOUBLE_TEXT bytes; returns the length.
 */
typedef enum BsonDoubleStyle
{
	BSON_DOUBLE_JSON,
	BSON_DOUBLE_NUMERIC
} BsonDoubleStyle;

#define BSON_DOUBLE_TEXT 40
extern int	bson_double_text(double d, BsonDoubleStyle style, char *out);

/*
 * The {"$numberDouble": ...} text of a double that no JSON number can show
 * (NaN and the infinities), or NULL for a finite d.
 */
static inline const char *
bson_double_special_text(double d)
{
	if (unlikely(isnan(d)))
		return "NaN";
	if (unlikely(isinf(d)))
		return d > 0 ? "Infinity" : "-Infinity";
	return NULL;
}

/* An ObjectId's 12 bytes as {"$oid": ...} shows them: 24 lower-case hex */
#define BSON_OID_TEXT 25
static inline void
bson_oid_text(const uint8 *oid, char *out)
{
	extjson_hex_encode(oid, 12, out);
}

/* A binary subtype as $binary's "subType": two lower-case hex digits */
#define BSON_SUBTYPE_TEXT 3
static inline void
bson_subtype_text(uint8 subtype, char *out)
{
	extjson_hex_encode(&subtype, 1, out);
}

/* The length of the base64 text of len bytes, with padding, without NUL */
static inline size_t
bson_base64_length(size_t len)
{
	return 4 * ((len + 2) / 3);
}

/*
 * The text inside {"$date": ...}: relaxed Extended JSON shows a datetime as
 * ISO-8601 for the years 1970 to 9999, the only ones it defines that form
 * for; canonical Extended JSON, and relaxed for any other instant, shows
 * {"$numberLong": "<milliseconds>"}.  Writes the ISO-8601 string or the
 * decimal milliseconds to out (BSON_DATETIME_TEXT bytes, NUL-terminated),
 * its length to *len, and returns true for ISO-8601.
 */
#define BSON_DATETIME_TEXT Max(EXTJSON_ISO8601_SIZE, MAXINT8LEN + 1)
static inline bool
bson_datetime_text(int64 ms, bool canonical, char *out, int *len)
{
	if (!canonical && (*len = extjson_format_iso8601(ms, out)) > 0)
		return true;
	*len = bson_lltoa(ms, out);
	return false;
}

/*
 * A regular expression's options as Extended JSON shows them: in the order
 * the BSON specification requires (alphabetical, extjson_sort_regex_options),
 * whatever order the document holds them in; a palloc'd NUL-terminated copy
 * of *len bytes.
 */
extern char *bson_regex_options_text(const char *options, size_t *len);

#endif							/* BSON_DECODE_H */
