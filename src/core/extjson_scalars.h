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
 *	decimal128	[+-] then Inf/Infinity/NaN (any case) or digits with an
 *				optional '.' and optional [eE][+-]digits; exact or false
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

/* $numberDecimal: the spec's from-string grammar, exactly to BID, never rounded */
extern bool extjson_parse_decimal128(const char *s, size_t len,
									 uint64_t *low, uint64_t *high);

/* The exact decimal128 (BID) of +/- digits * 10^exponent, if there is one */
extern bool extjson_decimal128_from_digits(bool negative, const char *digits,
										   size_t ndigits, int64_t exponent,
										   uint64_t *low, uint64_t *high);

/* Relaxed $date (ISO-8601 with offset) to milliseconds since 1970-01-01Z */
extern bool extjson_parse_iso8601(const char *s, size_t len, int64_t *ms);

/* The value of hex digit c, or -1 */
extern int	extjson_hex_value(char c);

/*
 * (hi, lo) = (hi, lo) * 10 + digit.  The coefficient stays below 10^34 <
 * 2^113, so hi never overflows; lo * 10 is done in 32-bit halves because C99
 * has no 128-bit type.
 */
static inline void
extjson_u128_mul10_add(uint64_t *hi, uint64_t *lo, unsigned digit)
{
	uint64_t	l = *lo;
	uint64_t	low_part = (l & UINT64_C(0xFFFFFFFF)) * 10;
	uint64_t	high_part = (l >> 32) * 10;
	uint64_t	new_lo = low_part + (high_part << 32);
	uint64_t	carry = (high_part >> 32) + (new_lo < low_part ? 1 : 0);

	*hi = *hi * 10 + carry;
	*lo = new_lo + digit;
	if (*lo < new_lo)
		(*hi)++;
}

#endif							/* EXTJSON_SCALARS_H */
