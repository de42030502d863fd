/*
 * test_extjson_scalars.c
 *		Standalone unit test of src/extjson_scalars.c (no server needed).
 *
 * Run with `make -C test/unit check`.  Prints each failure, then a last line
 * "unit: N passed, M failed", and exits non-zero if anything failed.
 *
 * The parsers promise never to read outside [s, s + len), so every input is
 * parsed twice from a copy placed against an inaccessible page: once ending
 * exactly where the page begins, once starting exactly where one ends.  A
 * read past either end is then a crash rather than a silent pass; the crash
 * is reported as a failure, naming the input, and still ends with the
 * "unit:" line.  (Where mmap is unavailable the copy is an exact-size malloc,
 * which still catches reliance on a terminating NUL under a memory checker.)
 *
 * Expected decimal128 encodings were computed independently with pymongo's
 * bson.decimal128.Decimal128(text).bid (python3-bson); where pymongo raises
 * for inexact text, the expectation is false.  Texts that Python's decimal
 * module accepts but the specification's grammar does not (whitespace,
 * underscores, sNaN, NaN payloads) are expected false from the grammar.
 */
#define _DEFAULT_SOURCE			/* mmap's MAP_ANONYMOUS under -std=c99 */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extjson_scalars.h"
#include "decimal128.h"
#include "unit_harness.h"

static const char *show(const char *s, size_t len);

/* A copy of src[0..len) against a guard page (see unit_harness.h) */
static const char *
place(const char *src, size_t len, int where)
{
	snprintf(crash_note, sizeof(crash_note), "%s", show(src, len));
	/* poison the rest of the page so stray reads see non-digits */
	return guard_place(src, len, where, 'x');
}

/* ----------------------------------------------------------------------
 * Reporting
 * ---------------------------------------------------------------------- */

/* The input, escaped and shortened, for failure messages */
static const char *
show(const char *s, size_t len)
{
	static char buf[200];
	size_t		o = 0;

	for (size_t i = 0; i < len && o < sizeof(buf) - 20; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c >= 0x20 && c < 0x7F && c != '\\')
			buf[o++] = (char) c;
		else
			o += (size_t) snprintf(buf + o, sizeof(buf) - o, "\\x%02X", c);
	}
	if (o >= sizeof(buf) - 20)
		o += (size_t) snprintf(buf + o, sizeof(buf) - o, "...(%zu chars)", len);
	buf[o] = '\0';
	return buf;
}

static void
report(bool ok, const char *what, const char *s, size_t len, const char *detail)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s \"%s\": %s\n", what, show(s, len), detail);
	}
}

/* ----------------------------------------------------------------------
 * Per-parser checks: run at both guard positions, compare with expected
 * ---------------------------------------------------------------------- */

static void
check_oid_n(const char *in, size_t len, bool ok, const char *want_hex)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		uint8_t		out[12];
		bool		r = extjson_parse_oid(place(in, len, where), len, out);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok)
		{
			char		hex[25];

			for (int i = 0; i < 12; i++)
				snprintf(hex + 2 * i, 3, "%02x", out[i]);
			if (strcmp(hex, want_hex) != 0)
			{
				snprintf(detail, sizeof(detail), "got %s, want %s", hex, want_hex);
				good = false;
			}
		}
	}
	report(good, "oid", in, len, detail);
}

static void
check_oid(const char *in, bool ok, const char *want_hex)
{
	check_oid_n(in, strlen(in), ok, want_hex);
}

static void
check_uuid_n(const char *in, size_t len, bool ok, const char *want_hex)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		uint8_t		out[16];
		bool		r = extjson_parse_uuid(place(in, len, where), len, out);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok)
		{
			char		hex[33];

			for (int i = 0; i < 16; i++)
				snprintf(hex + 2 * i, 3, "%02x", out[i]);
			if (strcmp(hex, want_hex) != 0)
			{
				snprintf(detail, sizeof(detail), "got %s, want %s", hex, want_hex);
				good = false;
			}
		}
	}
	report(good, "uuid", in, len, detail);
}

static void
check_uuid(const char *in, bool ok, const char *want_hex)
{
	check_uuid_n(in, strlen(in), ok, want_hex);
}

static void
check_subtype_n(const char *in, size_t len, bool ok, unsigned want)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		uint8_t		out = 0;
		bool		r = extjson_parse_hex_subtype(place(in, len, where), len, &out);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok && out != want)
		{
			snprintf(detail, sizeof(detail), "got 0x%02x, want 0x%02x", out, want);
			good = false;
		}
	}
	report(good, "subtype", in, len, detail);
}

static void
check_subtype(const char *in, bool ok, unsigned want)
{
	check_subtype_n(in, strlen(in), ok, want);
}

static void
check_base64_n(const char *in, size_t len, bool ok, const uint8_t *want,
			   size_t wantlen)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		/* exactly decoded_max bytes, with a canary after them */
		size_t		max = extjson_base64_decoded_max(len);
		uint8_t    *out = malloc(max + 1);
		size_t		outlen = 0;
		bool		r;

		if (out == NULL)
			exit(2);
		out[max] = 0xA5;
		r = extjson_parse_base64(place(in, len, where), len, out, &outlen);
		if (out[max] != 0xA5)
		{
			snprintf(detail, sizeof(detail), "wrote past decoded_max (%zu)", max);
			good = false;
		}
		else if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok && (outlen != wantlen || memcmp(out, want, wantlen) != 0))
		{
			snprintf(detail, sizeof(detail), "got %zu bytes, want %zu (or bytes differ)",
					 outlen, wantlen);
			good = false;
		}
		free(out);
	}
	report(good, "base64", in, len, detail);
}

static void
check_base64(const char *in, bool ok, const char *want)
{
	check_base64_n(in, strlen(in), ok, (const uint8_t *) want,
				   want ? strlen(want) : 0);
}

static void
check_int32_n(const char *in, size_t len, bool ok, int32_t want)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		int32_t		out = 0;
		bool		r = extjson_parse_int32(place(in, len, where), len, &out);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok && out != want)
		{
			snprintf(detail, sizeof(detail), "got %ld, want %ld", (long) out, (long) want);
			good = false;
		}
	}
	report(good, "int32", in, len, detail);
}

static void
check_int32(const char *in, bool ok, int32_t want)
{
	check_int32_n(in, strlen(in), ok, want);
}

static void
check_int64_n(const char *in, size_t len, bool ok, int64_t want)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		int64_t		out = 0;
		bool		r = extjson_parse_int64(place(in, len, where), len, &out);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok && out != want)
		{
			snprintf(detail, sizeof(detail), "got %lld, want %lld",
					 (long long) out, (long long) want);
			good = false;
		}
	}
	report(good, "int64", in, len, detail);
}

static void
check_int64(const char *in, bool ok, int64_t want)
{
	check_int64_n(in, strlen(in), ok, want);
}

/* Doubles compare by bits, so -0.0 differs from 0.0 and NaN equals NaN */
static bool
same_double(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return memcmp(&a, &b, sizeof(double)) == 0;
}

static void
check_double_n(const char *in, size_t len, bool ok, double want)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		double		out = 0;
		bool		r = extjson_parse_double(place(in, len, where), len, &out);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok && !same_double(out, want))
		{
			snprintf(detail, sizeof(detail), "got %.17g, want %.17g", out, want);
			good = false;
		}
	}
	report(good, "double", in, len, detail);
}

static void
check_double(const char *in, bool ok, double want)
{
	check_double_n(in, strlen(in), ok, want);
}

static void
check_dec128_n(const char *in, size_t len, bool ok, uint64_t want_high,
			   uint64_t want_low)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		uint64_t	low = 0;
		uint64_t	high = 0;
		bool		r = decimal128_parse(place(in, len, where), len,
												 &low, &high);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok && (low != want_low || high != want_high))
		{
			snprintf(detail, sizeof(detail),
					 "got %016llX %016llX, want %016llX %016llX",
					 (unsigned long long) high, (unsigned long long) low,
					 (unsigned long long) want_high, (unsigned long long) want_low);
			good = false;
		}
	}
	report(good, "decimal128", in, len, detail);
}

static void
check_dec128(const char *in, bool ok, uint64_t want_high, uint64_t want_low)
{
	check_dec128_n(in, strlen(in), ok, want_high, want_low);
}

static void
check_digits(bool negative, const char *digits, int64_t exponent, bool ok,
			 uint64_t want_high, uint64_t want_low)
{
	char		detail[200] = "";
	bool		good = true;
	size_t		len = strlen(digits);

	for (int where = 0; where < 2 && good; where++)
	{
		uint64_t	low = 0;
		uint64_t	high = 0;
		bool		r = decimal128_from_digits(negative,
													   place(digits, len, where),
													   len, exponent, &low, &high);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "(exp %lld) returned %d",
					 (long long) exponent, r);
			good = false;
		}
		else if (ok && (low != want_low || high != want_high))
		{
			snprintf(detail, sizeof(detail),
					 "(exp %lld) got %016llX %016llX, want %016llX %016llX",
					 (long long) exponent,
					 (unsigned long long) high, (unsigned long long) low,
					 (unsigned long long) want_high, (unsigned long long) want_low);
			good = false;
		}
	}
	report(good, "decimal128_from_digits", digits, len, detail);
}

static void
check_date_n(const char *in, size_t len, bool ok, int64_t want)
{
	char		detail[200] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		int64_t		out = 0;
		bool		r = extjson_parse_iso8601(place(in, len, where), len, &out);

		if (r != ok)
		{
			snprintf(detail, sizeof(detail), "returned %d", r);
			good = false;
		}
		else if (ok && out != want)
		{
			snprintf(detail, sizeof(detail), "got %lld, want %lld",
					 (long long) out, (long long) want);
			good = false;
		}
	}
	report(good, "iso8601", in, len, detail);
}

static void
check_date(const char *in, bool ok, int64_t want)
{
	check_date_n(in, strlen(in), ok, want);
}

/* ----------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------- */

static void
test_oid(void)
{
	check_oid("507f1f77bcf86cd799439011", true, "507f1f77bcf86cd799439011");
	check_oid("507F1F77BCF86CD799439011", true, "507f1f77bcf86cd799439011");
	check_oid("507f1F77bCf86cD799439011", true, "507f1f77bcf86cd799439011");
	check_oid("000000000000000000000000", true, "000000000000000000000000");
	check_oid("ffffffffffffffffffffffff", true, "ffffffffffffffffffffffff");
	check_oid("0123456789abcdefABCDEF01", true, "0123456789abcdefabcdef01");
	check_oid("", false, NULL);
	check_oid("507f1f77bcf86cd79943901", false, NULL);		/* 23 */
	check_oid("507f1f77bcf86cd7994390111", false, NULL);	/* 25 */
	check_oid("507f1f77bcf86cd79943901g", false, NULL);
	check_oid("g07f1f77bcf86cd799439011", false, NULL);
	check_oid("507f1f77bcf86cd79943901 ", false, NULL);
	check_oid(" 07f1f77bcf86cd799439011", false, NULL);
	check_oid("0x7f1f77bcf86cd799439011", false, NULL);
	check_oid("507f1f77-cf86cd799439011", false, NULL);
	check_oid_n("507f1f77bcf86cd7994\0" "9011", 24, false, NULL);
	/* only len chars count, whatever follows in memory */
	check_oid_n("507f1f77bcf86cd799439011ff", 24, true, "507f1f77bcf86cd799439011");
}

static void
test_uuid(void)
{
	check_uuid("73ffd264-44b3-4c69-90e8-e7d1dfc035d4", true,
			   "73ffd26444b34c6990e8e7d1dfc035d4");
	check_uuid("73FFD264-44B3-4C69-90E8-E7D1DFC035D4", true,
			   "73ffd26444b34c6990e8e7d1dfc035d4");
	check_uuid("00000000-0000-0000-0000-000000000000", true,
			   "00000000000000000000000000000000");
	check_uuid("ffffffff-ffff-ffff-ffff-ffffffffffff", true,
			   "ffffffffffffffffffffffffffffffff");
	check_uuid("", false, NULL);
	check_uuid("73ffd26444b34c6990e8e7d1dfc035d4", false, NULL);	/* no hyphens */
	check_uuid("{73ffd264-44b3-4c69-90e8-e7d1dfc035d4}", false, NULL);
	check_uuid("73ffd264-44b3-4c69-90e8-e7d1dfc035d", false, NULL);
	check_uuid("73ffd264-44b3-4c69-90e8-e7d1dfc035d4a", false, NULL);
	check_uuid("73ffd26-444b3-4c69-90e8-e7d1dfc035d4", false, NULL);
	check_uuid("73ffd264-44b34-c69-90e8-e7d1dfc035d4", false, NULL);
	check_uuid("73ffd264-44b3-4c6990-e8-e7d1dfc035d4", false, NULL);
	check_uuid("73ffd264-44b3-4c69-90e8e-7d1dfc035d4", false, NULL);
	check_uuid("73ffd264_44b3_4c69_90e8_e7d1dfc035d4", false, NULL);
	check_uuid("73ffd264-44b3-4c69-90e8-e7d1dfc035dg", false, NULL);
	check_uuid("73ffd264-44b3-4c69-90e8--7d1dfc035d4", false, NULL);
	check_uuid_n("73ffd264-44b3-4c69-90e8-e7d1dfc035d4-0000", 36, true,
				 "73ffd26444b34c6990e8e7d1dfc035d4");
}

static void
test_subtype(void)
{
	check_subtype("0", true, 0x00);
	check_subtype("00", true, 0x00);
	check_subtype("4", true, 0x04);
	check_subtype("04", true, 0x04);
	check_subtype("80", true, 0x80);
	check_subtype("ff", true, 0xFF);
	check_subtype("FF", true, 0xFF);
	check_subtype("a", true, 0x0A);
	check_subtype("Ab", true, 0xAB);
	check_subtype("", false, 0);
	check_subtype("000", false, 0);
	check_subtype("100", false, 0);
	check_subtype("g", false, 0);
	check_subtype("0g", false, 0);
	check_subtype("0x", false, 0);
	check_subtype("0x04", false, 0);
	check_subtype("-1", false, 0);
	check_subtype(" 1", false, 0);
	check_subtype("1 ", false, 0);
	check_subtype_n("0\0", 2, false, 0);
	check_subtype_n("042", 2, true, 0x04);
}

/* A plain reference encoder, to round-trip every length and byte value */
static size_t
ref_base64(const uint8_t *in, size_t n, char *out)
{
	static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t		o = 0;

	for (size_t i = 0; i < n; i += 3)
	{
		uint32_t	v = (uint32_t) in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t) in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = alphabet[(v >> 18) & 63];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? alphabet[v & 63] : '=';
	}
	return o;
}

static void
test_base64(void)
{
	uint8_t		data[300];
	char		text[400];

	/* RFC 4648, section 10 */
	check_base64("", true, "");
	check_base64("Zg==", true, "f");
	check_base64("Zm8=", true, "fo");
	check_base64("Zm9v", true, "foo");
	check_base64("Zm9vYg==", true, "foob");
	check_base64("Zm9vYmE=", true, "fooba");
	check_base64("Zm9vYmFy", true, "foobar");
	check_base64_n("+/+/", 4, true, (const uint8_t *) "\xfb\xff\xbf", 3);
	check_base64_n("AAAA", 4, true, (const uint8_t *) "\0\0\0", 3);
	check_base64_n("////", 4, true, (const uint8_t *) "\xff\xff\xff", 3);
	check_base64_n("AA==", 4, true, (const uint8_t *) "\0", 1);
	/* bson-corpus binary.json */
	check_base64_n("//8=", 4, true, (const uint8_t *) "\xff\xff", 2);
	check_base64_n("c//SZESzTGmQ6OfR38A11A==", 24, true,
				   (const uint8_t *) "\x73\xff\xd2\x64\x44\xb3\x4c\x69"
				   "\x90\xe8\xe7\xd1\xdf\xc0\x35\xd4", 16);

	/* lengths */
	check_base64("Zg", false, NULL);
	check_base64("Zg=", false, NULL);
	check_base64("Zm9", false, NULL);
	check_base64("Zm9vY", false, NULL);
	check_base64("Z", false, NULL);

	/* padding: only 0-2 '=', only at the very end */
	check_base64("Z===", false, NULL);
	check_base64("====", false, NULL);
	check_base64("=Zg=", false, NULL);
	check_base64("Z=g=", false, NULL);
	check_base64("Zg=A", false, NULL);
	check_base64("Zg==Zg==", false, NULL);
	check_base64("Zm8=Zm9v", false, NULL);
	check_base64("Zg==AAAA", false, NULL);
	check_base64("Zm9vYg=", false, NULL);
	check_base64("Zm9vYg===", false, NULL);

	/* non-canonical: unused bits of the last symbol set */
	check_base64("Zh==", false, NULL);
	check_base64("Zv==", false, NULL);
	check_base64("Zm9=", false, NULL);
	check_base64("Zm/=", false, NULL);
	check_base64("AB==", false, NULL);
	check_base64("AAB=", false, NULL);
	check_base64("AQ==", true, "\x01");
	check_base64_n("AAE=", 4, true, (const uint8_t *) "\x00\x01", 2);

	/* alphabet: no URL-safe symbols, whitespace or NUL */
	check_base64("Zm-8", false, NULL);
	check_base64("Zm_8", false, NULL);
	check_base64("Zm9v YmFy", false, NULL);
	check_base64(" Zm9", false, NULL);
	check_base64("Zm9\n", false, NULL);
	check_base64("Zm8=\n", false, NULL);
	check_base64("Zm9vYmFy\r\n", false, NULL);
	check_base64("Zm9.", false, NULL);
	check_base64_n("Zm\0v", 4, false, NULL, 0);

	/* only len chars count */
	check_base64_n("Zm9vYmFy", 4, true, (const uint8_t *) "foo", 3);

	/* decoded_max */
	report(extjson_base64_decoded_max(0) == 0, "base64_decoded_max", "0", 1, "");
	report(extjson_base64_decoded_max(4) == 3, "base64_decoded_max", "4", 1, "");
	report(extjson_base64_decoded_max(8) == 6, "base64_decoded_max", "8", 1, "");
	report(extjson_base64_decoded_max(400) == 300, "base64_decoded_max", "400", 3, "");

	/* every length 0..300, every byte value, against the reference encoder */
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t) (i * 167 + 13);
	{
		bool		all = true;

		for (size_t n = 0; n <= sizeof(data); n++)
		{
			size_t		tlen = ref_base64(data, n, text);
			uint8_t		out[300];
			size_t		outlen;

			if (!extjson_parse_base64(place(text, tlen, 0), tlen, out, &outlen) ||
				outlen != n || memcmp(out, data, n) != 0)
			{
				printf("FAIL base64 round trip of %zu bytes\n", n);
				all = false;
			}
		}
		report(all, "base64", "round trip 0..300 bytes", 24, "");
	}
}

static void
test_int32(void)
{
	check_int32("0", true, 0);
	check_int32("-0", true, 0);
	check_int32("1", true, 1);
	check_int32("-1", true, -1);
	check_int32("42", true, 42);
	check_int32("1000000000", true, 1000000000);
	check_int32("2147483647", true, INT32_MAX);
	check_int32("-2147483648", true, INT32_MIN);
	check_int32("2147483646", true, INT32_MAX - 1);
	check_int32("-2147483647", true, INT32_MIN + 1);
	check_int32("2147483648", false, 0);
	check_int32("-2147483649", false, 0);
	check_int32("2147483650", false, 0);
	check_int32("4294967296", false, 0);
	check_int32("9999999999", false, 0);
	check_int32("99999999999999999999999", false, 0);
	check_int32("", false, 0);
	check_int32("-", false, 0);
	check_int32("+1", false, 0);
	check_int32("00", false, 0);
	check_int32("01", false, 0);
	check_int32("-01", false, 0);
	check_int32("-00", false, 0);
	check_int32("--1", false, 0);
	check_int32(" 1", false, 0);
	check_int32("1 ", false, 0);
	check_int32("1a", false, 0);
	check_int32("1.0", false, 0);
	check_int32("1e3", false, 0);
	check_int32("0x10", false, 0);
	check_int32_n("1\0", 2, false, 0);
	check_int32_n("123456", 3, true, 123);
	check_int32_n("21474836470", 10, true, INT32_MAX);
}

static void
test_int64(void)
{
	check_int64("0", true, 0);
	check_int64("-0", true, 0);
	check_int64("1", true, 1);
	check_int64("-1", true, -1);
	check_int64("2147483648", true, INT64_C(2147483648));
	check_int64("-2147483649", true, INT64_C(-2147483649));
	check_int64("9223372036854775807", true, INT64_MAX);
	check_int64("-9223372036854775808", true, INT64_MIN);
	check_int64("9223372036854775806", true, INT64_MAX - 1);
	check_int64("-9223372036854775807", true, INT64_MIN + 1);
	check_int64("9223372036854775808", false, 0);
	check_int64("-9223372036854775809", false, 0);
	check_int64("9223372036854775810", false, 0);
	check_int64("18446744073709551615", false, 0);
	check_int64("18446744073709551616", false, 0);
	check_int64("-18446744073709551616", false, 0);
	check_int64("99999999999999999999", false, 0);
	check_int64("100000000000000000000000000000", false, 0);
	check_int64("", false, 0);
	check_int64("-", false, 0);
	check_int64("+1", false, 0);
	check_int64("00", false, 0);
	check_int64("007", false, 0);
	check_int64("-07", false, 0);
	check_int64(" 1", false, 0);
	check_int64("1 ", false, 0);
	check_int64("1.5", false, 0);
	check_int64("1e18", false, 0);
	check_int64("12a", false, 0);
	check_int64_n("92233720368547758070", 19, true, INT64_MAX);
}

static void
test_double(void)
{
	char		buf[1100];

	check_double("0", true, 0.0);
	check_double("-0", true, -0.0);
	check_double("0.0", true, 0.0);
	check_double("-0.0", true, -0.0);
	check_double("1", true, 1.0);
	check_double("1.0", true, 1.0);
	check_double("-1.0", true, -1.0);
	check_double("0.1", true, 0.1);
	check_double("1.5", true, 1.5);
	check_double("-2.5e-3", true, -2.5e-3);
	check_double("1.0001220703125", true, 1.0001220703125);
	check_double("1.2345678921232E+18", true, 1.2345678921232E+18);
	/* bson-corpus double.json */
	check_double("2.0001220703125e10", true, 2.0001220703125e10);
	check_double("-2.0001220703125e10", true, -2.0001220703125e10);
	check_double("1.2345678901234568e+18", true, 1.2345678901234568e+18);
	check_double("1.23456789012345678e+18", true, 1.2345678901234568e+18);
	check_double("-1.2345678921232E+18", true, -1.2345678921232E+18);
	check_double("1E+308", true, 1e308);
	check_double("1e308", true, 1e308);
	check_double("1E308", true, 1e308);
	check_double("1e+0", true, 1.0);
	check_double("1e-0", true, 1.0);
	check_double("1e007", true, 1e7);
	check_double("0e12345", true, 0.0);
	check_double("1.7976931348623157E+308", true, DBL_MAX);
	check_double("-1.7976931348623157e308", true, -DBL_MAX);
	check_double("2.2250738585072014e-308", true, DBL_MIN);
	check_double("4.9E-324", true, 4.9e-324);
	check_double("5e-324", true, 4.9e-324);
	check_double("1e-320", true, 1e-320);
	check_double("-1e-320", true, -1e-320);
	/* underflow to zero keeps the (signed) zero */
	check_double("1e-400", true, 0.0);
	check_double("-1e-400", true, -0.0);
	check_double("1e-99999999999999999999", true, 0.0);
	check_double("Infinity", true, HUGE_VAL);
	check_double("-Infinity", true, -HUGE_VAL);
	check_double("NaN", true, NAN);

	/* overflow to infinity is not a value */
	check_double("1e400", false, 0);
	check_double("-1e400", false, 0);
	check_double("1E+309", false, 0);
	check_double("1.7976931348623159e308", false, 0);
	check_double("1e99999999999999999999", false, 0);

	/* spellings */
	check_double("infinity", false, 0);
	check_double("+Infinity", false, 0);
	check_double("Inf", false, 0);
	check_double("-Inf", false, 0);
	check_double("inf", false, 0);
	check_double("nan", false, 0);
	check_double("-NaN", false, 0);
	check_double("NaN(123)", false, 0);
	check_double("Infinity ", false, 0);

	/* grammar: JSON numbers only */
	check_double("", false, 0);
	check_double("-", false, 0);
	check_double("+1", false, 0);
	check_double("01", false, 0);
	check_double("-01.5", false, 0);
	check_double("1.", false, 0);
	check_double(".5", false, 0);
	check_double("-.5", false, 0);
	check_double("1e", false, 0);
	check_double("1e+", false, 0);
	check_double("1E-", false, 0);
	check_double("1e5.5", false, 0);
	check_double("1.0.0", false, 0);
	check_double("--1", false, 0);
	check_double("0x10", false, 0);
	check_double("0x1p3", false, 0);
	check_double(" 1", false, 0);
	check_double("1 ", false, 0);
	check_double("1,5", false, 0);
	check_double("1_000", false, 0);
	check_double_n("1.5\0", 4, false, 0);

	/* only len chars count */
	check_double_n("1.5e400", 3, true, 1.5);
	check_double_n("1e3000", 3, true, 1000.0);

	/* length limit: 1024 chars accepted, 1025 refused */
	buf[0] = '0';
	buf[1] = '.';
	memset(buf + 2, '5', EXTJSON_DOUBLE_MAX_LEN - 2);
	check_double_n(buf, EXTJSON_DOUBLE_MAX_LEN, true, 0.55555555555555558);
	buf[EXTJSON_DOUBLE_MAX_LEN] = '5';
	check_double_n(buf, EXTJSON_DOUBLE_MAX_LEN + 1, false, 0);
}

/*
 * Each row: text, whether it is valid, and for valid ones the BID encoding
 * (high, low) from pymongo.
 */
typedef struct Dec128Case
{
	const char *text;
	bool		ok;
	uint64_t	high;
	uint64_t	low;
} Dec128Case;

static const Dec128Case dec128_cases[] = {
{"1", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000001)},	/* 1 */
	{"-1", true, UINT64_C(0xB040000000000000), UINT64_C(0x0000000000000001)},	/* -1 */
	{"+1", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000001)},	/* 1 */
	{"0", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000000)},	/* 0 */
	{"-0", true, UINT64_C(0xB040000000000000), UINT64_C(0x0000000000000000)},	/* -0 */
	{"+0", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000000)},	/* 0 */
	{"0.0", true, UINT64_C(0x303E000000000000), UINT64_C(0x0000000000000000)},	/* 0.0 */
	{"-0.0", true, UINT64_C(0xB03E000000000000), UINT64_C(0x0000000000000000)},	/* -0.0 */
	{"0.000", true, UINT64_C(0x303A000000000000), UINT64_C(0x0000000000000000)},	/* 0.000 */
	{"-0.000", true, UINT64_C(0xB03A000000000000), UINT64_C(0x0000000000000000)},	/* -0.000 */
	{"1.00", true, UINT64_C(0x303C000000000000), UINT64_C(0x0000000000000064)},	/* 1.00 */
	{"1.000000000000000000000000000000000000000", true, UINT64_C(0x2FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000 */
	{"0E-6176", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000000)},	/* 0E-6176 */
	{"-0E-6176", true, UINT64_C(0x8000000000000000), UINT64_C(0x0000000000000000)},	/* -0E-6176 */
	{"0E-6177", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000000)},	/* 0E-6176 */
	{"0E-8000", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000000)},	/* 0E-6176 */
	{"-0E-8000", true, UINT64_C(0x8000000000000000), UINT64_C(0x0000000000000000)},	/* -0E-6176 */
	{"0E+6111", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x0000000000000000)},	/* 0E+6111 */
	{"0E+6112", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x0000000000000000)},	/* 0E+6111 */
	{"0E+8000", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x0000000000000000)},	/* 0E+6111 */
	{"-0E+8000", true, UINT64_C(0xDFFE000000000000), UINT64_C(0x0000000000000000)},	/* -0E+6111 */
	{"0e999999999999", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x0000000000000000)},	/* 0E+6111 */
	{"0e-999999999999", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000000)},	/* 0E-6176 */
	{"0e9999999999999999999999999999999999999999", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x0000000000000000)},	/* 0E+6111 */
	{"0.000e-999999999999999999999999999999999", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000000)},	/* 0E-6176 */
	{"1E-6176", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000001)},	/* 1E-6176 */
	{"-1E-6176", true, UINT64_C(0x8000000000000000), UINT64_C(0x0000000000000001)},	/* -1E-6176 */
	{"10E-6177", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000001)},	/* 1E-6176 */
	{"1000E-6179", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000001)},	/* 1E-6176 */
	{"1000E-6180", false, 0, 0},	/* pymongo: Inexact */
	{"1E-6177", false, 0, 0},	/* pymongo: Inexact */
	{"-1E-6177", false, 0, 0},	/* pymongo: Inexact */
	{"15E-6177", false, 0, 0},	/* pymongo: Inexact */
	{"1E-6200", false, 0, 0},	/* pymongo: Inexact */
	{"9.999999999999999999999999999999999E+6144", true, UINT64_C(0x5FFFED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF)},	/* 9.999999999999999999999999999999999E+6144 */
	{"-9.999999999999999999999999999999999E+6144", true, UINT64_C(0xDFFFED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF)},	/* -9.999999999999999999999999999999999E+6144 */
	{"1E+6144", true, UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E+6144 */
	{"-1E+6144", true, UINT64_C(0xDFFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* -1.000000000000000000000000000000000E+6144 */
	{"1E+6111", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x0000000000000001)},	/* 1E+6111 */
	{"1E+6112", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x000000000000000A)},	/* 1.0E+6112 */
	{"1E6144", true, UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E+6144 */
	{"1e+6144", true, UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E+6144 */
	{"1E+6145", false, 0, 0},	/* pymongo: Overflow */
	{"10E+6144", false, 0, 0},	/* pymongo: Overflow */
	{"0.1E+6145", true, UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E+6144 */
	{"0.01E+6146", true, UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E+6144 */
	{"9999999999999999999999999999999999E+6111", true, UINT64_C(0x5FFFED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF)},	/* 9.999999999999999999999999999999999E+6144 */
	{"9999999999999999999999999999999999E+6112", false, 0, 0},	/* pymongo: Overflow */
	{"10000000000000000000000000000000000E+6111", false, 0, 0},	/* pymongo: Overflow */
	{"12345678901234567890123456789012E+6113", true, UINT64_C(0x5FFE3CDE6FFF9732), UINT64_C(0xDE825CD07E96AFD0)},	/* 1.234567890123456789012345678901200E+6144 */
	{"123456789012345678901234567890123E+6113", false, 0, 0},	/* pymongo: Overflow */
	{"1234567890123456789012345678901234", true, UINT64_C(0x30403CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},	/* 1234567890123456789012345678901234 */
	{"-1234567890123456789012345678901234", true, UINT64_C(0xB0403CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},	/* -1234567890123456789012345678901234 */
	{"12345678901234567890123456789012340", true, UINT64_C(0x30423CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},	/* 1.234567890123456789012345678901234E+34 */
	{"12345678901234567890123456789012345", false, 0, 0},	/* pymongo: Inexact */
	{"1234567890123456789012345678901234.0", true, UINT64_C(0x30403CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},	/* 1234567890123456789012345678901234 */
	{"1234567890123456789012345678901234.5", false, 0, 0},	/* pymongo: Inexact */
	{"123456789012345678901234567890.1234", true, UINT64_C(0x30383CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},	/* 123456789012345678901234567890.1234 */
	{"0.1", true, UINT64_C(0x303E000000000000), UINT64_C(0x0000000000000001)},	/* 0.1 */
	{".1", true, UINT64_C(0x303E000000000000), UINT64_C(0x0000000000000001)},	/* 0.1 */
	{"-.1", true, UINT64_C(0xB03E000000000000), UINT64_C(0x0000000000000001)},	/* -0.1 */
	{"+.1", true, UINT64_C(0x303E000000000000), UINT64_C(0x0000000000000001)},	/* 0.1 */
	{"1.", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000001)},	/* 1 */
	{"-1.", true, UINT64_C(0xB040000000000000), UINT64_C(0x0000000000000001)},	/* -1 */
	{"1.e5", true, UINT64_C(0x304A000000000000), UINT64_C(0x0000000000000001)},	/* 1E+5 */
	{"1.E-5", true, UINT64_C(0x3036000000000000), UINT64_C(0x0000000000000001)},	/* 0.00001 */
	{".1e5", true, UINT64_C(0x3048000000000000), UINT64_C(0x0000000000000001)},	/* 1E+4 */
	{"0.", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000000)},	/* 0 */
	{".0", true, UINT64_C(0x303E000000000000), UINT64_C(0x0000000000000000)},	/* 0.0 */
	{"1e-0", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000001)},	/* 1 */
	{"1e+0", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000001)},	/* 1 */
	{"1e0", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000001)},	/* 1 */
	{"1E+00000000000000000000000000000001", true, UINT64_C(0x3042000000000000), UINT64_C(0x0000000000000001)},	/* 1E+1 */
	{"1E-00000000000000000000000000000001", true, UINT64_C(0x303E000000000000), UINT64_C(0x0000000000000001)},	/* 0.1 */
	{"00000000000000000000000000000000000000000001", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000001)},	/* 1 */
	{"00000000000000000000000000000000000000000000", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000000)},	/* 0 */
	{"0.00000000000000000000000000000000000000000000000000000000000001E+10", true, UINT64_C(0x2FD8000000000000), UINT64_C(0x0000000000000001)},	/* 1E-52 */
	{"1e9999999999999999999999999999", false, 0, 0},	/* pymongo: Overflow */
	{"1e-9999999999999999999999", false, 0, 0},	/* pymongo: Inexact */
	{"-1e9999999999999999999999999999", false, 0, 0},	/* pymongo: Overflow */
	{"Inf", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"inf", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"INF", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"Infinity", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"infinity", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"INFINITY", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"iNfInItY", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"-Infinity", true, UINT64_C(0xF800000000000000), UINT64_C(0x0000000000000000)},	/* -Infinity */
	{"+Infinity", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"-inF", true, UINT64_C(0xF800000000000000), UINT64_C(0x0000000000000000)},	/* -Infinity */
	{"+inf", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},	/* Infinity */
	{"NaN", true, UINT64_C(0x7C00000000000000), UINT64_C(0x0000000000000000)},	/* NaN */
	{"nan", true, UINT64_C(0x7C00000000000000), UINT64_C(0x0000000000000000)},	/* NaN */
	{"NAN", true, UINT64_C(0x7C00000000000000), UINT64_C(0x0000000000000000)},	/* NaN */
	{"nAn", true, UINT64_C(0x7C00000000000000), UINT64_C(0x0000000000000000)},	/* NaN */
	{"-NaN", true, UINT64_C(0xFC00000000000000), UINT64_C(0x0000000000000000)},	/* NaN */
	{"+NaN", true, UINT64_C(0x7C00000000000000), UINT64_C(0x0000000000000000)},	/* NaN */
	{"-nan", true, UINT64_C(0xFC00000000000000), UINT64_C(0x0000000000000000)},	/* NaN */
	{"1.234E+3", true, UINT64_C(0x3040000000000000), UINT64_C(0x00000000000004D2)},	/* 1234 */
	{"-12.5e-10", true, UINT64_C(0xB02A000000000000), UINT64_C(0x000000000000007D)},	/* -1.25E-9 */
	{"3.14159", true, UINT64_C(0x3036000000000000), UINT64_C(0x000000000004CB2F)},	/* 3.14159 */
	{"0.001234", true, UINT64_C(0x3034000000000000), UINT64_C(0x00000000000004D2)},	/* 0.001234 */
	{"-0.1", true, UINT64_C(0xB03E000000000000), UINT64_C(0x0000000000000001)},	/* -0.1 */
	{"1E+3", true, UINT64_C(0x3046000000000000), UINT64_C(0x0000000000000001)},	/* 1E+3 */
	{"1E3", true, UINT64_C(0x3046000000000000), UINT64_C(0x0000000000000001)},	/* 1E+3 */
	{"1e3", true, UINT64_C(0x3046000000000000), UINT64_C(0x0000000000000001)},	/* 1E+3 */
	{"123E-1", true, UINT64_C(0x303E000000000000), UINT64_C(0x000000000000007B)},	/* 12.3 */
	{"-2147483649", true, UINT64_C(0xB040000000000000), UINT64_C(0x0000000080000001)},	/* -2147483649 */
	{"2147483648", true, UINT64_C(0x3040000000000000), UINT64_C(0x0000000080000000)},	/* 2147483648 */
	{"9223372036854775808", true, UINT64_C(0x3040000000000000), UINT64_C(0x8000000000000000)},	/* 9223372036854775808 */
	{"18446744073709551616", true, UINT64_C(0x3040000000000001), UINT64_C(0x0000000000000000)},	/* 18446744073709551616 */
	{"340282366920938463463374607431768211456", false, 0, 0},	/* pymongo: Inexact */
	{"10384593717069655257060992658440191", false, 0, 0},	/* pymongo: Inexact */
	{"10384593717069655257060992658440192", false, 0, 0},	/* pymongo: Inexact */
	{"5192296858534827628530496329220095", true, UINT64_C(0x3040FFFFFFFFFFFF), UINT64_C(0xFFFFFFFFFFFFFFFF)},	/* 5192296858534827628530496329220095 */
	{"5192296858534827628530496329220096", true, UINT64_C(0x3041000000000000), UINT64_C(0x0000000000000000)},	/* 5192296858534827628530496329220096 */
	{"9999999999999999999999999999999999", true, UINT64_C(0x3041ED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF)},	/* 9999999999999999999999999999999999 */
	{"99999999999999999999999999999999990", true, UINT64_C(0x3043ED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF)},	/* 9.999999999999999999999999999999999E+34 */
	{"99999999999999999999999999999999999", false, 0, 0},	/* pymongo: Inexact */
	{"1E-6143", true, UINT64_C(0x0042000000000000), UINT64_C(0x0000000000000001)},	/* 1E-6143 */
	{"1E-6142", true, UINT64_C(0x0044000000000000), UINT64_C(0x0000000000000001)},	/* 1E-6142 */
	{"-100E-10", true, UINT64_C(0xB02C000000000000), UINT64_C(0x0000000000000064)},	/* -1.00E-8 */
	{"1.0E+1", true, UINT64_C(0x3040000000000000), UINT64_C(0x000000000000000A)},	/* 10 */
	{"0E+3", true, UINT64_C(0x3046000000000000), UINT64_C(0x0000000000000000)},	/* 0E+3 */
	{"0E-3", true, UINT64_C(0x303A000000000000), UINT64_C(0x0000000000000000)},	/* 0.000 */
	{"-0E3", true, UINT64_C(0xB046000000000000), UINT64_C(0x0000000000000000)},	/* -0E+3 */
	{"7.50", true, UINT64_C(0x303C000000000000), UINT64_C(0x00000000000002EE)},	/* 7.50 */
	{"1.000000000000000000000000000000000E+6144", true, UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E+6144 */
	{"1.0000000000000000000000000000000000E+6144", true, UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E+6144 */
	{"1.00000000000000000000000000000000000E+6143", true, UINT64_C(0x5FFC314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E+6143 */
	{"0.00000000000000000000000000000000001E-6141", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000001)},	/* 1E-6176 */
	{"100000000000000000000000000000000000000000000000000000000000000000000E-6210", true, UINT64_C(0x0002314DC6448D93), UINT64_C(0x38C15B0A00000000)},	/* 1.000000000000000000000000000000000E-6142 */
	{"100000000000000000000000000000000000000000000000000000000000000000001", false, 0, 0},	/* pymongo: Inexact */
	{"1.2345678901234567890123456789012345E+20", false, 0, 0},	/* pymongo: Inexact */
	{"", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"+", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"-", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{".", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"+.", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"-.", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"e5", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"E5", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{".e5", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1e", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1E", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1e+", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1e-", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{" 1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1 ", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{" 1 ", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1_000", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1,000", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"sNaN", false, 0, 0},	/* grammar; pymongo accepts */
	{"-sNaN", false, 0, 0},	/* grammar; pymongo accepts */
	{"NaN1", false, 0, 0},	/* grammar; pymongo: ValueError */
	{"NaN123", false, 0, 0},	/* grammar; pymongo: ValueError */
	{"-NaN0", false, 0, 0},	/* grammar; pymongo accepts */
	{"Infi", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"Infin", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"Infinit", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"Infinityy", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"Infinity ", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"inf1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1inf", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1.2.3", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1..", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"..1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1e1.5", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1e1e1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1E+1E+1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"++1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"+-1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"--1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"0x10", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"\xEF""\xBC""\x91""", false, 0, 0},	/* grammar; pymongo accepts */
	{"NaN.", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"NaNE5", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"InfE5", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1.E", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{".E1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"e", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1e++1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1e+-1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1-", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1+", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"a", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1a", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1\x09""", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"\x09""1", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"1d5", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{".Infinity", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{".NaN", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"-.NaN", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
	{"+Inf.", false, 0, 0},	/* grammar; pymongo: InvalidOperation */
};

/*
 * Vectors of the MongoDB specifications repository (bson-corpus,
 * decimal128-1.json): the text of canonical_extjson or degenerate_extjson
 * and the value bytes of canonical_bson.
 */
static const Dec128Case dec128_corpus[] = {
	{"0.000001234567890123456789012345678901234", true, UINT64_C(0x2FF23CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},
	{"0.001234", true, UINT64_C(0x3034000000000000), UINT64_C(0x00000000000004D2)},
	{"0.00123400000", true, UINT64_C(0x302A000000000000), UINT64_C(0x00000000075AEF40)},
	{"0.1234567890123456789012345678901234", true, UINT64_C(0x2FFC3CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},
	{"-0.0", true, UINT64_C(0xB03E000000000000), UINT64_C(0x0000000000000000)},
	{"2.000", true, UINT64_C(0x303A000000000000), UINT64_C(0x00000000000007D0)},
	{"9.999999999999999999999999999999999E-6143", true, UINT64_C(0x0001ED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF)},
	{"1.234567890123456789012345678901234E-7", true, UINT64_C(0x2FF03CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},
	{"-1.00E-8", true, UINT64_C(0xB02C000000000000), UINT64_C(0x0000000000000064)},
	{"0E+6000", true, UINT64_C(0x5F20000000000000), UINT64_C(0x0000000000000000)},
	{"0E-611", true, UINT64_C(0x2B7A000000000000), UINT64_C(0x0000000000000000)},
	{"1.050E+4", true, UINT64_C(0x3042000000000000), UINT64_C(0x000000000000041A)},
	{"1.05E+3", true, UINT64_C(0x3042000000000000), UINT64_C(0x0000000000000069)},
	{"5192296858534827628530496329220095", true, UINT64_C(0x3040FFFFFFFFFFFF), UINT64_C(0xFFFFFFFFFFFFFFFF)},
	{"1.000000000000000000000000000000000E+6144", true, UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000)},
	{"12345689012345789012345E+12", true, UINT64_C(0x305800000000029D), UINT64_C(0x42DA3A76F9E0D979)},
	{"+1234567890123456789012345678901234", true, UINT64_C(0x30403CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2)},
	{"1E6112", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x000000000000000A)},
	{"10E-6177", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000001)},
	{"0E+9999999999", true, UINT64_C(0x5FFE000000000000), UINT64_C(0x0000000000000000)},
	{"0E-9999999999", true, UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000000)},
	{"-0E+9999999999", true, UINT64_C(0xDFFE000000000000), UINT64_C(0x0000000000000000)},
	{"-0E-9999999999", true, UINT64_C(0x8000000000000000), UINT64_C(0x0000000000000000)},
	{"-NaN", true, UINT64_C(0xFC00000000000000), UINT64_C(0x0000000000000000)},
	{"nAn", true, UINT64_C(0x7C00000000000000), UINT64_C(0x0000000000000000)},
	{"+infinity", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},
	{"infiniTY", true, UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000)},
	{"-infiniTy", true, UINT64_C(0xF800000000000000), UINT64_C(0x0000000000000000)},
	{"-inF", true, UINT64_C(0xF800000000000000), UINT64_C(0x0000000000000000)},
};

static void
test_decimal128(void)
{
	char	   *buf;
	size_t		n;

	/* the vectors of the brief, written out by hand */
	check_dec128("1", true, UINT64_C(0x3040000000000000), 1);
	check_dec128("-1", true, UINT64_C(0xB040000000000000), 1);
	check_dec128("0E-6176", true, 0, 0);
	check_dec128("9.999999999999999999999999999999999E+6144", true,
				 UINT64_C(0x5FFFED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF));
	check_dec128("1E-6176", true, 0, 1);
	check_dec128("NaN", true, UINT64_C(0x7C00000000000000), 0);
	check_dec128("-NaN", true, UINT64_C(0xFC00000000000000), 0);
	check_dec128("Infinity", true, UINT64_C(0x7800000000000000), 0);
	check_dec128("-Infinity", true, UINT64_C(0xF800000000000000), 0);

	/* the table computed with pymongo */
	for (size_t i = 0; i < sizeof(dec128_cases) / sizeof(dec128_cases[0]); i++)
		check_dec128(dec128_cases[i].text, dec128_cases[i].ok,
					 dec128_cases[i].high, dec128_cases[i].low);

	for (size_t i = 0; i < sizeof(dec128_corpus) / sizeof(dec128_corpus[0]); i++)
		check_dec128(dec128_corpus[i].text, dec128_corpus[i].ok,
					 dec128_corpus[i].high, dec128_corpus[i].low);

	/* only len chars count */
	check_dec128_n("1.5E+99999", 3, true, UINT64_C(0x303E000000000000), 15);
	check_dec128_n("1.5E+99999", 4, false, 0, 0);
	check_dec128_n("1\0", 2, false, 0, 0);

	/*
	 * Long inputs, built here: many more digits than 34, exact only because
	 * they are zeros.
	 */
	n = 20000;
	buf = malloc(n + 100);
	if (buf == NULL)
		exit(2);

	/* corpus "Non-Canonical Parsing - Long Decimal String": "." 998 zeros "1" */
	buf[0] = '.';
	memset(buf + 1, '0', 998);
	buf[999] = '1';
	check_dec128_n(buf, 1000, true, UINT64_C(0x2872000000000000), 1);
	/* corpus "Exact rounding": "1" and 999 zeros is 1.000000000000000000000000000000000E+999 */
	buf[0] = '1';
	memset(buf + 1, '0', 999);
	check_dec128_n(buf, 1000, true, UINT64_C(0x37CC314DC6448D93),
				   UINT64_C(0x38C15B0A00000000));

	/* 1 and 9999 zeros, scaled back to 1: coefficient 10^33, exponent -33 */
	buf[0] = '1';
	memset(buf + 1, '0', 9999);
	memcpy(buf + 10000, "E-9999", 6);
	check_dec128_n(buf, 10006, true, UINT64_C(0x2FFE314DC6448D93),
				   UINT64_C(0x38C15B0A00000000));
	/* the same without the exponent: 10^9999, out of range */
	check_dec128_n(buf, 10000, false, 0, 0);
	/* ... followed by a nonzero digit: inexact */
	buf[10000] = '1';
	check_dec128_n(buf, 10001, false, 0, 0);

	/* 0.000...01 with 6175 zeros after the point: 1E-6176 */
	memcpy(buf, "0.", 2);
	memset(buf + 2, '0', 6175);
	buf[6177] = '1';
	check_dec128_n(buf, 6178, true, 0, 1);
	/* one zero more: 1E-6177, would round to 0 */
	memcpy(buf, "0.", 2);
	memset(buf + 2, '0', 6176);
	buf[6178] = '1';
	check_dec128_n(buf, 6179, false, 0, 0);
	/* with a trailing zero it is 10E-6178, still too small */
	buf[6179] = '0';
	check_dec128_n(buf, 6180, false, 0, 0);
	/* ... but scaled up by E+1 it is 10E-6177 = 1E-6176 */
	memcpy(buf + 6180, "E+1", 3);
	check_dec128_n(buf, 6183, true, 0, 1);

	/* 20000 zeros after the point: 0E-20000 clamps to 0E-6176 */
	memcpy(buf, "-0.", 3);
	memset(buf + 3, '0', n - 3);
	check_dec128_n(buf, n, true, UINT64_C(0x8000000000000000), 0);
	free(buf);
}

static void
test_decimal128_from_digits(void)
{
	check_digits(false, "1", 0, true, UINT64_C(0x3040000000000000), 1);
	check_digits(true, "1", 0, true, UINT64_C(0xB040000000000000), 1);
	check_digits(false, "0001", 0, true, UINT64_C(0x3040000000000000), 1);
	check_digits(false, "100", -2, true, UINT64_C(0x303C000000000000), 100);
	check_digits(true, "0", 0, true, UINT64_C(0xB040000000000000), 0);
	check_digits(false, "0000", -3, true, UINT64_C(0x303A000000000000), 0);
	check_digits(false, "1", -6176, true, 0, 1);
	check_digits(false, "1", -6177, false, 0, 0);
	check_digits(false, "10", -6177, true, 0, 1);
	check_digits(false, "1", 6111, true, UINT64_C(0x5FFE000000000000), 1);
	/* 1E+6144: coefficient 10^33 at exponent 6111 */
	check_digits(false, "1", 6144, true, UINT64_C(0x5FFE314DC6448D93),
				 UINT64_C(0x38C15B0A00000000));
	check_digits(false, "1", 6145, false, 0, 0);
	check_digits(false, "9999999999999999999999999999999999", 6111, true,
				 UINT64_C(0x5FFFED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF));
	check_digits(false, "99999999999999999999999999999999990", 6110, true,
				 UINT64_C(0x5FFFED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF));
	check_digits(false, "99999999999999999999999999999999999", 6110, false, 0, 0);
	/* zeros clamp from any exponent, even the extremes of int64 */
	check_digits(false, "0", INT64_MAX, true, UINT64_C(0x5FFE000000000000), 0);
	check_digits(true, "000", INT64_MIN, true, UINT64_C(0x8000000000000000), 0);
	check_digits(false, "0", 6112, true, UINT64_C(0x5FFE000000000000), 0);
	check_digits(false, "0", -6177, true, 0, 0);
	/* nonzero at the extremes of int64: no decimal128, no overflow */
	check_digits(false, "1", INT64_MAX, false, 0, 0);
	check_digits(false, "1", INT64_MIN, false, 0, 0);
	check_digits(false, "1000000000000000000000", INT64_MIN, false, 0, 0);
	check_digits(false, "1000000000000000000000", INT64_MAX, false, 0, 0);
	check_digits(false, "1000000000000000000000", INT64_MAX - 20, false, 0, 0);
	/* malformed digits */
	check_digits(false, "", 0, false, 0, 0);
	check_digits(false, "1.5", 0, false, 0, 0);
	check_digits(false, "-1", 0, false, 0, 0);
	check_digits(false, "1a", 0, false, 0, 0);
	check_digits(false, "a1", 0, false, 0, 0);
	check_digits(false, "0x", 0, false, 0, 0);
	check_digits(false, "10 ", 0, false, 0, 0);
}

/* regular expression options: sorted when ASCII, copied as they are if not */
static void
check_options(const char *in, bool ok, const char *want)
{
	size_t		len = strlen(in);
	char		out[128];
	bool		r;

	memset(out, '#', sizeof(out));
	r = extjson_sort_regex_options(place(in, len, 0), len, out);
	report(r == ok && memcmp(out, want, len) == 0 && out[len] == '#',
		   "regex options", in, len, want);
}

static void
test_regex_options(void)
{
	check_options("", true, "");
	check_options("i", true, "i");
	check_options("xsmi", true, "imsx");
	check_options("uxsmli", true, "ilmsux");
	check_options("iimm", true, "iimm");
	/* past the insertion sort's length: the counting sort, the same order */
	check_options("zyxwvutsrqponmlkjihgfedcbaZYXW!~1", true, "!1WXYZabcdefghijklmnopqrstuvwxyz~");
	/* not ASCII (UTF-8 of e-acute): left as it is */
	check_options("\xC3\xA9i", false, "\xC3\xA9i");
	check_options("i\xC3\xA9", false, "i\xC3\xA9");
}

/* ms of y-m-d 00:00Z, walking the calendar a day at a time from 0000-01-01 */
static void
test_date_walk(void)
{
	/* 0000-01-01: year 1 starts 62135596800 s before 1970, year 0 has 366 days */
	int64_t		ms = (INT64_C(-62135596800) - INT64_C(366) * 86400) * 1000;
	bool		all = true;
	long		days = 0;

	for (int y = 0; y <= 9999 && all; y++)
	{
		bool		leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
		static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

		for (int m = 1; m <= 12 && all; m++)
		{
			int			last = mdays[m - 1] + (m == 2 && leap ? 1 : 0);

			/* one past the month's last day is refused */
			for (int d = 1; d <= last + 1; d++)
			{
				char		text[64];
				int64_t		got = 0;
				bool		r;

				snprintf(text, sizeof(text), "%04d-%02d-%02dT00:00:00Z", y, m, d);
				r = extjson_parse_iso8601(text, strlen(text), &got);
				if (d > last)
				{
					if (r)
					{
						printf("FAIL iso8601 \"%s\": accepted\n", text);
						all = false;
					}
					break;
				}
				if (!r || got != ms)
				{
					printf("FAIL iso8601 \"%s\": returned %d, %lld, want %lld\n",
						   text, r, (long long) got, (long long) ms);
					all = false;
					break;
				}
				ms += 86400000;
				days++;
			}
		}
	}
	/* 10000 years of the proleptic Gregorian calendar are 3652425 days */
	if (all && days != 3652425)
	{
		printf("FAIL iso8601 walk: %ld days\n", days);
		all = false;
	}
	/* and the walk ends at 10000-01-01, 253402300800 s after 1970 */
	if (all && ms != INT64_C(253402300800000))
	{
		printf("FAIL iso8601 walk: ends at %lld\n", (long long) ms);
		all = false;
	}
	report(all, "iso8601", "every day 0000-01-01..9999-12-31", 32, "");
}

static void
test_iso8601(void)
{
	/* the vectors of the brief */
	check_date("1969-12-31T23:59:59.999Z", true, -1);
	check_date("0001-01-01T00:00:00Z", true, INT64_C(-62135596800000));
	check_date("9999-12-31T23:59:59.999Z", true, INT64_C(253402300799999));
	check_date("2024-01-02T03:04:05.678+01:00", true, INT64_C(1704161045678));

	/* bson-corpus datetime.json */
	check_date("2012-12-24T12:15:30.500Z", true, INT64_C(1356351330500));
	check_date("1960-12-24T12:15:30.500Z", true, INT64_C(-284643869500));

	/* the epoch and around it */
	check_date("1970-01-01T00:00:00Z", true, 0);
	check_date("1970-01-01T00:00:00.000Z", true, 0);
	check_date("1970-01-01T00:00:00.001Z", true, 1);
	check_date("1969-12-31T23:59:59Z", true, -1000);
	check_date("1969-12-31T00:00:00Z", true, -86400000);
	check_date("1970-01-01T00:00:00+00:01", true, -60000);
	check_date("1970-01-01T00:00:00-00:01", true, 60000);
	check_date("1970-01-01T00:00:00+00:00", true, 0);
	check_date("1970-01-01T00:00:00-00:00", true, 0);
	check_date("1970-01-01T00:00:00-23:59", true, INT64_C(86340000));
	check_date("1970-01-01T00:00:00+23:59", true, INT64_C(-86340000));

	/* offsets, both forms */
	check_date("2024-01-02T03:04:05.678+0100", true, INT64_C(1704161045678));
	check_date("2024-01-02T02:04:05.678Z", true, INT64_C(1704161045678));
	check_date("2024-01-02T01:04:05.678-01:00", true, INT64_C(1704161045678));
	check_date("2024-01-02T01:04:05.678-0100", true, INT64_C(1704161045678));
	check_date("2024-01-02T07:34:05.678+05:30", true, INT64_C(1704161045678));
	check_date("2024-01-01T20:34:05.678-0530", true, INT64_C(1704161045678));

	/* fractions: floor to milliseconds, any length */
	check_date("2024-01-02T03:04:05.6789Z", true, INT64_C(1704164645678));
	check_date("2024-01-02T03:04:05.6Z", true, INT64_C(1704164645600));
	check_date("2024-01-02T03:04:05.06Z", true, INT64_C(1704164645060));
	check_date("2024-01-02T03:04:05.0000000001Z", true, INT64_C(1704164645000));
	check_date("2024-01-02T03:04:05.9999999999999999999999Z", true,
			   INT64_C(1704164645999));
	check_date("1969-12-31T23:59:59.9999Z", true, -1);
	check_date("0001-01-01T00:00:00.5Z", true, INT64_C(-62135596799500));

	/* leap years */
	check_date("2000-02-29T00:00:00Z", true, INT64_C(951782400000));
	check_date("2024-02-29T12:00:00Z", true, INT64_C(1709208000000));
	check_date("1904-02-29T00:00:00Z", true, INT64_C(-2077747200000));
	check_date("1600-02-29T00:00:00Z", true, INT64_C(-11670998400000));
	check_date("1900-02-29T00:00:00Z", false, 0);
	check_date("2023-02-29T00:00:00Z", false, 0);
	check_date("2100-02-29T00:00:00Z", false, 0);
	check_date("2024-02-30T00:00:00Z", false, 0);
	check_date("0000-02-29T00:00:00Z", true,
			   (INT64_C(-62135596800) - INT64_C(307) * 86400) * 1000);
	check_date("0000-01-01T00:00:00Z", true,
			   (INT64_C(-62135596800) - INT64_C(366) * 86400) * 1000);

	/* before 1970 */
	check_date("1969-07-20T20:17:40Z", true, INT64_C(-14182940000));
	check_date("1900-01-01T00:00:00Z", true, INT64_C(-2208988800000));
	check_date("1583-10-15T00:00:00Z", true, INT64_C(-12187756800000));

	/* calendar bounds */
	check_date("2024-00-10T00:00:00Z", false, 0);
	check_date("2024-13-01T00:00:00Z", false, 0);
	check_date("2024-01-00T00:00:00Z", false, 0);
	check_date("2024-01-32T00:00:00Z", false, 0);
	check_date("2024-04-31T00:00:00Z", false, 0);
	check_date("2024-06-31T00:00:00Z", false, 0);
	check_date("2024-12-31T23:59:59Z", true, INT64_C(1735689599000));
	check_date("2024-01-01T24:00:00Z", false, 0);
	check_date("2024-01-01T23:60:00Z", false, 0);
	check_date("2024-01-01T23:59:60Z", false, 0);
	check_date("2024-01-01T99:00:00Z", false, 0);

	/* shape */
	check_date("", false, 0);
	check_date("2024-01-01", false, 0);
	check_date("2024-01-01T00:00:00", false, 0);	/* no offset */
	check_date("2024-01-01T00:00:00.123", false, 0);
	check_date("2024-01-01T00:00Z", false, 0);
	check_date("2024-01-01 00:00:00Z", false, 0);
	check_date("2024-01-01t00:00:00Z", false, 0);
	check_date("2024-01-01T00:00:00z", false, 0);
	check_date("2024-01-01T00:00:00.Z", false, 0);
	check_date("2024-01-01T00:00:00,5Z", false, 0);
	check_date("2024-01-01T00:00:00ZZ", false, 0);
	check_date("2024-01-01T00:00:00Z ", false, 0);
	check_date(" 2024-01-01T00:00:00Z", false, 0);
	check_date("2024-1-01T00:00:00Z", false, 0);
	check_date("2024-01-1T00:00:00Z", false, 0);
	check_date("2024-01-01T0:00:00Z", false, 0);
	check_date("24-01-01T00:00:00Z", false, 0);
	check_date("10000-01-01T00:00:00Z", false, 0);
	check_date("-2024-01-01T00:00:00Z", false, 0);
	check_date("+2024-01-01T00:00:00Z", false, 0);
	check_date("2024/01/01T00:00:00Z", false, 0);
	check_date("2024-01-01T00-00-00Z", false, 0);
	check_date("2024-01-01T00:00:00.12a3Z", false, 0);
	check_date("20240101T000000Z", false, 0);
	check_date("2024-01-01T00:00:00GMT", false, 0);
	check_date("2024-01-01T00:00:00UTC", false, 0);

	/* offset forms */
	check_date("2024-01-01T00:00:00+01", false, 0);
	check_date("2024-01-01T00:00:00+1:00", false, 0);
	check_date("2024-01-01T00:00:00+01:0", false, 0);
	check_date("2024-01-01T00:00:00+01:000", false, 0);
	check_date("2024-01-01T00:00:00+010", false, 0);
	check_date("2024-01-01T00:00:00+01000", false, 0);
	check_date("2024-01-01T00:00:00+01-00", false, 0);
	check_date("2024-01-01T00:00:00+24:00", false, 0);
	check_date("2024-01-01T00:00:00-24:00", false, 0);
	check_date("2024-01-01T00:00:00+01:60", false, 0);
	check_date("2024-01-01T00:00:00+0160", false, 0);
	check_date("2024-01-01T00:00:00+", false, 0);
	check_date("2024-01-01T00:00:00-", false, 0);
	check_date("2024-01-01T00:00:00Z+01:00", false, 0);
	check_date("2024-01-01T00:00:00+01:00Z", false, 0);
	check_date("2024-01-01T00:00:00+a1:00", false, 0);
	check_date("2024-01-01T00:00:00+01:0a", false, 0);
	check_date("2024-01-01T00:00:00 +01:00", false, 0);
	check_date("2024-01-01T00:00:00+23:59", true, INT64_C(1704067200000) - 86340000);
	check_date("2024-01-01T00:00:00+2359", true, INT64_C(1704067200000) - 86340000);

	/* only len chars count; embedded NUL */
	check_date_n("1970-01-01T00:00:00Z+01:00", 20, true, 0);
	check_date_n("1970-01-01T00:00:00+01:00", 19, false, 0);
	check_date_n("1970-01-01T00:00:00\0", 20, false, 0);

	test_date_walk();
}

int
main(void)
{
	unit_start("parsing");
	test_oid();
	test_uuid();
	test_subtype();
	test_base64();
	test_int32();
	test_int64();
	test_double();
	test_decimal128();
	test_decimal128_from_digits();
	test_regex_options();
	test_iso8601();
	return unit_finish();
}
