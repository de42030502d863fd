/*
 * extjson_scalars.h
 *		Parsers for the scalar strings of MongoDB Extended JSON v2.
 *
 * Extended JSON carries most non-JSON BSON values as strings inside wrapper
 * objects ({"$oid": "..."}, {"$numberDecimal": "..."}, {"$date": "..."}, ...).
 * These functions turn one such string into its BSON value.  They are plain
 * C99 with no PostgreSQL headers, so that test/unit can exercise them
 * without a server, and they allocate nothing: callers pass output buffers.
 *
 * Every parser takes (s, len) where s need NOT be NUL-terminated (it usually
 * points into a jsonb string), never reads outside [s, s + len), and returns
 * true if the text is valid, with the value written through the
 * out-parameters.  On false the outputs are unspecified: the caller raises an
 * error and does not look at them.
 *
 * The grammars, in short (extjson_scalars.c has the reasons):
 *
 *	oid			exactly 24 hex digits, either case
 *	uuid		8-4-4-4-12 hex digits with hyphens, 36 chars
 *	subtype		1 or 2 hex digits
 *	base64		RFC 4648 standard alphabet, whole quads, 0-2 '=' only at the
 *				end, unused bits zero, no whitespace; "" is 0 bytes
 *	int32/64	-?(0|[1-9][0-9]*) in range; "-0" is 0
 *	double		"Infinity", "-Infinity", "NaN", or a JSON number of at most
 *				EXTJSON_DOUBLE_MAX_LEN chars whose double is finite
 *	decimal128	decimal128.h: [+-] then Inf/Infinity/NaN (any case) or
 *				digits with an optional '.' and [eE][+-]digits; exact or false
 *	iso8601		YYYY-MM-DDTHH:MM:SS[.digits](Z|+HH:MM|-HH:MM|+HHMM|-HHMM),
 *				years 0000-9999, proleptic Gregorian, offset required
 */
#ifndef EXTJSON_SCALARS_H
#define EXTJSON_SCALARS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest number text extjson_parse_double accepts */
#define EXTJSON_DOUBLE_MAX_LEN	1024

/* {"$oid": ...}: 24 hex digits into the 12 ObjectId bytes */
extern bool extjson_parse_oid(const char *s, size_t len, uint8_t out[12]);

/* {"$uuid": ...}: 8-4-4-4-12 hex digits into the 16 UUID bytes */
extern bool extjson_parse_uuid(const char *s, size_t len, uint8_t out[16]);

/* $binary's "subType": 1 or 2 hex digits ("0", "04", "80", "ff") */
extern bool extjson_parse_hex_subtype(const char *s, size_t len, uint8_t *out);

/* Room extjson_parse_base64 needs for len input chars (an upper bound) */
extern size_t extjson_base64_decoded_max(size_t len);

/* $binary's "base64": strict RFC 4648 into out, *outlen bytes written */
extern bool extjson_parse_base64(const char *s, size_t len, uint8_t *out,
								 size_t *outlen);

/* $numberInt: a canonical decimal int32 */
extern bool extjson_parse_int32(const char *s, size_t len, int32_t *out);

/* $numberLong: a canonical decimal int64 */
extern bool extjson_parse_int64(const char *s, size_t len, int64_t *out);

/* $numberDouble: Infinity/-Infinity/NaN or a JSON number that stays finite */
extern bool extjson_parse_double(const char *s, size_t len, double *out);

/* Relaxed $date (ISO-8601 with offset) to milliseconds since 1970-01-01Z */
extern bool extjson_parse_iso8601(const char *s, size_t len, int64_t *ms);

/*
 * Regular expression options in the order BSON requires (alphabetical):
 * copies in[0..len) to out sorted by byte value and returns true when every
 * byte is ASCII.  Otherwise copies in unchanged and returns false: sorting
 * bytes would split UTF-8 characters, and MongoDB's options are ASCII
 * letters, so no order is defined for anything else.  out needs len bytes
 * (no NUL is added).
 */
extern bool extjson_sort_regex_options(const char *in, size_t len, char *out);

/* The value of hex digit c, or -1 */
extern int	extjson_hex_value(char c);

/*
 * Formatters, the other direction, for Extended JSON output; each writes a
 * NUL-terminated string.
 */

/*
 * A datetime (ms since 1970-01-01Z) as ISO-8601 with Z, milliseconds shown
 * only when not zero ("2024-01-02T03:04:05.678Z", "1970-01-01T00:00:00Z"),
 * for years 1970 to 9999; returns its length, or 0 outside that range
 * (relaxed Extended JSON then uses {"$numberLong": ...}).
 */
#define EXTJSON_ISO8601_SIZE 48
extern int	extjson_format_iso8601(int64_t ms, char out[EXTJSON_ISO8601_SIZE]);

/* base64 with padding; out needs 4 * ((len + 2) / 3) + 1 bytes */
extern size_t extjson_base64_encode(const uint8_t *in, size_t len, char *out);

/* Lower-case hex; out needs 2 * len + 1 bytes */
extern void extjson_hex_encode(const uint8_t *in, size_t len, char *out);

#endif							/* EXTJSON_SCALARS_H */
