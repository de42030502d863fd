/*
 * extjson_values.h
 *		Parsers for the scalar strings of MongoDB Extended JSON v2.
 *
 * Extended JSON carries most non-JSON BSON values as strings inside wrapper
 * objects ({"$oid": "..."}, {"$numberDecimal": "..."}, {"$date": "..."}, ...).
 * These functions turn one such string into its BSON value bytes.  They are
 * plain C99 with no PostgreSQL headers, so that test/unit can exercise them
 * without a server, and they allocate nothing: callers pass output buffers.
 *
 * Every parser takes (s, len) where s need NOT be NUL-terminated (it usually
 * points into a jsonb string), never reads outside [s, s + len), and returns
 * true if the text is valid, with the value written through the
 * out-parameters.  On false the outputs are unspecified: the caller raises an
 * error and does not look at them.
 */
#ifndef EXTJSON_VALUES_H
#define EXTJSON_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* {"$oid": ...}: exactly 24 hex digits, either case, into 12 bytes */
extern bool extjson_parse_oid(const char *s, size_t len, uint8_t out[12]);

/* {"$uuid": ...}: 8-4-4-4-12 hex digits with hyphens (36 chars), into 16 bytes */
extern bool extjson_parse_uuid(const char *s, size_t len, uint8_t out[16]);

/* $binary's "subType": 1 or 2 hex digits ("0", "04", "80", "ff") */
extern bool extjson_parse_hex_subtype(const char *s, size_t len, uint8_t *out);

/* Bytes extjson_parse_base64 may write for len input chars (an upper bound) */
extern size_t extjson_base64_decoded_max(size_t len);

/*
 * $binary's "base64": strict RFC 4648 standard alphabet, length a multiple
 * of 4, 0-2 '=' only at the end, no whitespace, unused bits zero; the empty
 * string is 0 bytes.  out must hold extjson_base64_decoded_max(len) bytes.
 */
extern bool extjson_parse_base64(const char *s, size_t len, uint8_t *out,
								 size_t *outlen);

/* $numberInt: -?(0|[1-9][0-9]*) within int32 ("-0" is 0) */
extern bool extjson_parse_int32(const char *s, size_t len, int32_t *out);

/* $numberLong: -?(0|[1-9][0-9]*) within int64 ("-0" is 0) */
extern bool extjson_parse_int64(const char *s, size_t len, int64_t *out);

/*
 * $numberDouble: "Infinity", "-Infinity", "NaN", or a JSON number of at most
 * EXTJSON_DOUBLE_MAX_LEN chars that does not overflow to infinity
 */
extern bool extjson_parse_double(const char *s, size_t len, double *out);

/* Longest decimal text extjson_parse_double accepts */
#define EXTJSON_DOUBLE_MAX_LEN	1024

/*
 * $numberDecimal: the decimal128 from-string grammar of the MongoDB
 * specifications (sign, Inf/Infinity/NaN in any case, or digits with an
 * optional '.' and exponent), converted exactly to BID; false if rounding
 * would be needed
 */
extern bool extjson_parse_decimal128(const char *s, size_t len,
									 uint64_t *low, uint64_t *high);

/*
 * The exact decimal128 (BID) of +/- digits * 10^exponent; digits are ASCII
 * '0'-'9' (leading zeros allowed, at least one); false if none exists
 */
extern bool extjson_decimal128_from_digits(bool negative, const char *digits,
										   size_t ndigits, int64_t exponent,
										   uint64_t *low, uint64_t *high);

/*
 * Relaxed $date: "YYYY-MM-DDTHH:MM:SS[.fff...](Z|+HH:MM|-HH:MM|+HHMM|-HHMM)"
 * to milliseconds since the Unix epoch (UTC), proleptic Gregorian, years
 * 0000-9999
 */
extern bool extjson_parse_iso8601(const char *s, size_t len, int64_t *ms);

#endif							/* EXTJSON_VALUES_H */
