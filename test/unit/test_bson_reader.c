/*
 * test_bson_reader.c
 *		Standalone unit test of src/core/bson_reader.c (no server needed).
 *
 * Run with `make -C test/unit check`.  Prints each failure, then a last line
 * "unit: N passed, M failed", and exits non-zero if anything failed.
 *
 * bson_read_validate() promises never to read outside data[0..len), so, with
 * unit_harness.h, every input is validated from a copy placed against an
 * inaccessible page, once ending exactly where the page begins and once
 * starting exactly where one ends: a read past either end is a crash, which
 * is reported as a failure naming the input.
 *
 * The malformed documents each break one rule of bsonspec.org once, and the
 * test checks the byte offset and the message of the rejection, so a change
 * of wording in bson_reader.c has to be made here too.  Expected decimal128
 * strings were computed with pymongo 3.11 (/usr/bin/python3:
 * str(bson.decimal128.Decimal128.from_bid(bits)), which follows the
 * specification's to-string rules; NaN printed as "NaN" whatever its sign or
 * payload), except the non-canonical coefficients of the normal form, which
 * pymongo cannot represent and the specification reads as zero.  Expected
 * datetimes were computed with Python's datetime.
 */
#define _DEFAULT_SOURCE			/* mmap's MAP_ANONYMOUS under -std=c99 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson_reader.h"
#include "decimal128.h"
#include "extjson_scalars.h"
#include "unit_harness.h"

/* A copy of data[0..len) against a guard page (see unit_harness.h) */
static const uint8_t *
place(const char *name, const uint8_t *src, size_t len, int where)
{
	snprintf(crash_note, sizeof(crash_note), "%s", name);
	/* poison the rest of the page: no stray NUL to lean on */
	return guard_place(src, len, where, 0xA5);
}

/* ----------------------------------------------------------------------
 * Reporting
 * ---------------------------------------------------------------------- */

static void
report(bool ok, const char *name, const char *detail)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s: %s\n", name, detail);
	}
}

#define CHECK(name, cond) \
	report((cond), (name), "line " STRINGIFY(__LINE__) ": " #cond)
#define STRINGIFY(x) STRINGIFY2(x)
#define STRINGIFY2(x) #x

/* ----------------------------------------------------------------------
 * A small BSON builder
 * ---------------------------------------------------------------------- */

typedef struct Buf
{
	uint8_t		d[8192];
	size_t		n;
	size_t		open[1024];		/* offsets of documents not yet closed */
	int			depth;
} Buf;

static void
b_reset(Buf *b)
{
	b->n = 0;
	b->depth = 0;
}

static void
b_raw(Buf *b, const void *p, size_t len)
{
	if (b->n + len > sizeof(b->d))
	{
		fprintf(stderr, "test document too large\n");
		exit(2);
	}
	memcpy(b->d + b->n, p, len);
	b->n += len;
}

static void
b_u8(Buf *b, uint8_t v)
{
	b_raw(b, &v, 1);
}

static void
b_i32(Buf *b, int32_t v)
{
	uint32_t	u = (uint32_t) v;

	for (int i = 0; i < 4; i++)
		b_u8(b, (uint8_t) (u >> (8 * i)));
}

static void
b_i64(Buf *b, int64_t v)
{
	uint64_t	u = (uint64_t) v;

	for (int i = 0; i < 8; i++)
		b_u8(b, (uint8_t) (u >> (8 * i)));
}

/* a C string with its NUL */
static void
b_cstr(Buf *b, const char *s)
{
	b_raw(b, s, strlen(s) + 1);
}

/* a BSON string: length with the NUL, the bytes, the NUL */
static void
b_str_n(Buf *b, const char *s, size_t len)
{
	b_i32(b, (int32_t) len + 1);
	b_raw(b, s, len);
	b_u8(b, 0);
}

static void
b_str(Buf *b, const char *s)
{
	b_str_n(b, s, strlen(s));
}

/* an element's type and key; returns the offset of its type byte */
static size_t
b_elem(Buf *b, uint8_t type, const char *key)
{
	size_t		at = b->n;

	b_u8(b, type);
	b_cstr(b, key);
	return at;
}

static void
b_put_u32(Buf *b, size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->d[at + i] = (uint8_t) (v >> (8 * i));
}

/* start a document: returns the offset of its length header */
static size_t
b_open(Buf *b)
{
	size_t		at = b->n;

	b->open[b->depth++] = at;
	b_i32(b, 0);
	return at;
}

/* end the innermost document: its NUL, and its length in the header */
static void
b_close(Buf *b)
{
	size_t		at = b->open[--b->depth];

	b_u8(b, 0);
	b_put_u32(b, at, (uint32_t) (b->n - at));
}

/* code with scope: {total, string code, scope {}} where the scope is empty */
static void
b_cws_empty_scope(Buf *b, const char *code)
{
	size_t		at = b->n;

	b_i32(b, 0);
	b_str(b, code);
	b_open(b);
	b_close(b);
	b_put_u32(b, at, (uint32_t) (b->n - at));
}

/* ----------------------------------------------------------------------
 * Validation checks
 * ---------------------------------------------------------------------- */

/* data[0..len) is rejected at offset want_offset with message want */
static void
expect_invalid_lim(const char *name, const uint8_t *data, size_t len,
				   const BsonReadLimits *limits, size_t want_offset,
				   const char *want)
{
	char		detail[512] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		BsonReadError err;
		const uint8_t *p = place(name, data, len, where);

		memset(&err, 0xFF, sizeof(err));
		if (bson_read_validate(p, len, limits, &err))
		{
			snprintf(detail, sizeof(detail), "accepted, want \"%s\" at %zu", want, want_offset);
			good = false;
		}
		else if (err.offset != want_offset || memchr(err.message, 0, sizeof(err.message)) == NULL ||
				 strcmp(err.message, want) != 0)
		{
			snprintf(detail, sizeof(detail), "got \"%.160s\" at %zu, want \"%s\" at %zu",
					 memchr(err.message, 0, sizeof(err.message)) ? err.message : "(no NUL)",
					 err.offset, want, want_offset);
			good = false;
		}
		/* and the same without an error struct */
		else if (bson_read_validate(place(name, data, len, where), len, limits, NULL))
		{
			snprintf(detail, sizeof(detail), "accepted without an error struct");
			good = false;
		}
	}
	report(good, name, detail);
}

static void
expect_invalid(const char *name, const Buf *b, size_t want_offset, const char *want)
{
	expect_invalid_lim(name, b->d, b->n, NULL, want_offset, want);
}

static void
expect_valid_lim(const char *name, const uint8_t *data, size_t len,
				 const BsonReadLimits *limits)
{
	char		detail[512] = "";
	bool		good = true;

	for (int where = 0; where < 2 && good; where++)
	{
		BsonReadError err;

		memset(&err, 0, sizeof(err));
		if (!bson_read_validate(place(name, data, len, where), len, limits, &err))
		{
			snprintf(detail, sizeof(detail), "rejected: \"%s\" at %zu", err.message, err.offset);
			good = false;
		}
	}
	report(good, name, detail);
}

static void
expect_valid(const char *name, const Buf *b)
{
	expect_valid_lim(name, b->d, b->n, NULL);
}

/* ----------------------------------------------------------------------
 * Documents as a whole
 * ---------------------------------------------------------------------- */

static void
test_document_frame(void)
{
	Buf			b;
	static const uint8_t empty[5] = {5, 0, 0, 0, 0};

	expect_valid_lim("empty document", empty, 5, NULL);

	expect_invalid_lim("no input", empty, 0, NULL, 0,
					   "input is 0 bytes long, and a BSON document has at least 5");
	expect_invalid_lim("4 bytes", empty, 4, NULL, 0,
					   "input is 4 bytes long, and a BSON document has at least 5");

	b_reset(&b);
	b_i32(&b, 4);
	b_u8(&b, 0);
	expect_invalid("length 4", &b, 0, "document length 4 is less than 5");

	b_reset(&b);
	b_i32(&b, 0);
	b_u8(&b, 0);
	expect_invalid("length 0", &b, 0, "document length 0 is less than 5");

	b_reset(&b);
	b_i32(&b, -1);
	b_u8(&b, 0);
	expect_invalid("length -1", &b, 0, "document length -1 is less than 5");

	b_reset(&b);
	b_i32(&b, INT32_MIN);
	b_raw(&b, "\0\0\0\0", 4);
	expect_invalid("length INT32_MIN", &b, 0, "document length -2147483648 is less than 5");

	b_reset(&b);
	b_i32(&b, 6);
	b_u8(&b, 0);
	expect_invalid("length beyond input", &b, 0, "document length 6 exceeds the 5 bytes available");

	b_reset(&b);
	b_i32(&b, INT32_MAX);
	b_u8(&b, 0);
	expect_invalid("length INT32_MAX", &b, 0,
				   "document length 2147483647 exceeds the 5 bytes available");

	b_reset(&b);
	b_i32(&b, 5);
	b_u8(&b, 1);
	expect_invalid("no final NUL", &b, 4, "document does not end with a NUL byte");

	/* the last byte is an element's type byte, not the NUL */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_NULL, "n");
	b_close(&b);
	b.d[b.n - 1] = BSON_TYPE_NULL;
	expect_invalid("element where the final NUL belongs", &b, b.n - 1,
				   "document does not end with a NUL byte");

	b_reset(&b);
	b_open(&b);
	b_close(&b);
	b_u8(&b, 0);
	expect_invalid("1 trailing byte", &b, 5,
				   "the input goes on for 1 bytes after the document's end");
	b_raw(&b, "\x05\0\0\0", 4);
	expect_invalid("5 trailing bytes (a second document)", &b, 5,
				   "the input goes on for 5 bytes after the document's end");

	/* a valid element, then garbage within the stated length */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_INT32, "i");
	b_i32(&b, 1);
	b_u8(&b, 0);				/* type 0x00 inside the document */
	b_close(&b);
	/* (reported at the stray byte, as an unknown type) */
	expect_invalid("type 0x00 before the end", &b, 11,
				   "unknown element type 0x00");
}

static void
test_types_and_keys(void)
{
	Buf			b;
	static const uint8_t unknown[] = {0x00, 0x14, 0x15, 0x20, 0x7E, 0x80, 0xFE};

	for (size_t i = 0; i < sizeof(unknown); i++)
	{
		char		name[64];
		char		want[64];

		b_reset(&b);
		b_open(&b);
		b_elem(&b, unknown[i], "k");
		b_i32(&b, 0);
		b_close(&b);
		snprintf(name, sizeof(name), "unknown type 0x%02x", unknown[i]);
		snprintf(want, sizeof(want), "unknown element type 0x%02x", unknown[i]);
		expect_invalid(name, &b, 4, want);
	}

	/* a key running into the document's final NUL */
	b_reset(&b);
	b_open(&b);
	b_u8(&b, BSON_TYPE_NULL);
	b_raw(&b, "ab", 2);
	b_close(&b);
	expect_invalid("key without NUL", &b, 5, "key is not NUL-terminated within its document");

	/* a type byte and nothing else */
	b_reset(&b);
	b_open(&b);
	b_u8(&b, BSON_TYPE_NULL);
	b_close(&b);
	expect_invalid("type byte only", &b, 5, "key is not NUL-terminated within its document");

	/* the key's NUL would be the parent's final NUL */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "d");
	b_open(&b);
	b_u8(&b, BSON_TYPE_NULL);
	b_raw(&b, "x", 1);
	b_close(&b);
	b_close(&b);
	expect_invalid("nested key without NUL", &b, 12, "key is not NUL-terminated within its document");

	/* keys that are not UTF-8: each at offset 5, the first key byte */
	{
		static const struct
		{
			const char *name;
			const char *key;
			size_t		bad;	/* offset of the bad sequence in the key */
		}			keys[] = {
			{"key overlong 2-byte (C0 AF)", "\xC0\xAF", 0},
			{"key overlong 2-byte (C1 BF)", "\xC1\xBF", 0},
			{"key overlong 3-byte (E0 80 AF)", "\xE0\x80\xAF", 0},
			{"key overlong 3-byte (E0 9F BF)", "\xE0\x9F\xBF", 0},
			{"key overlong 4-byte (F0 80 80 AF)", "\xF0\x80\x80\xAF", 0},
			{"key overlong 4-byte (F0 8F BF BF)", "\xF0\x8F\xBF\xBF", 0},
			{"key surrogate U+D800", "\xED\xA0\x80", 0},
			{"key surrogate U+DFFF", "\xED\xBF\xBF", 0},
			{"key above U+10FFFF (F4 90 80 80)", "\xF4\x90\x80\x80", 0},
			{"key F5", "\xF5\x80\x80\x80", 0},
			{"key FF", "\xFF", 0},
			{"key lone continuation", "\x80", 0},
			{"key truncated 2-byte", "\xC3", 0},
			{"key truncated 3-byte", "\xE2\x82", 0},
			{"key truncated 4-byte", "\xF0\x9F\x98", 0},
			{"key bad continuation", "\xE2\x28\xA1", 0},
			{"key valid then truncated", "ab\xC3\xA9\xE2\x82", 4},
			{"key valid then overlong", "abcdefghij\xC0\x80", 10},
		};

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		{
			b_reset(&b);
			b_open(&b);
			b_elem(&b, BSON_TYPE_NULL, keys[i].key);
			b_close(&b);
			expect_invalid(keys[i].name, &b, 5 + keys[i].bad, "key is not valid UTF-8");
		}
	}

	/* keys at the edges of valid UTF-8 */
	{
		static const char *const good[] = {
			"", "\x7F", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF",
			"\xEE\x80\x80", "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF",
			"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E",
		};

		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		{
			char		name[64];

			b_reset(&b);
			b_open(&b);
			b_elem(&b, BSON_TYPE_NULL, good[i]);
			b_elem(&b, BSON_TYPE_STRING, "s");
			b_str(&b, good[i]);
			b_close(&b);
			snprintf(name, sizeof(name), "valid UTF-8 key and string #%zu", i);
			expect_valid(name, &b);
		}
	}
}

static void
test_strings(void)
{
	static const struct
	{
		uint8_t		type;
		const char *what;
	}			kinds[] = {
		{BSON_TYPE_STRING, "string"},
		{BSON_TYPE_CODE, "JavaScript code"},
		{BSON_TYPE_SYMBOL, "symbol"},
	};
	Buf			b;

	for (size_t k = 0; k < 3; k++)
	{
		char		name[128];
		char		want[160];
		const char *what = kinds[k].what;
		size_t		v;

#define STRING_DOC(body) \
		do { \
			b_reset(&b); \
			b_open(&b); \
			b_elem(&b, kinds[k].type, "s"); \
			v = b.n; \
			body; \
			b_close(&b); \
		} while (0)

		STRING_DOC(b_i32(&b, 0); b_u8(&b, 0));
		snprintf(name, sizeof(name), "%s length 0", what);
		snprintf(want, sizeof(want), "%s length 0 is less than 1", what);
		expect_invalid(name, &b, v, want);

		STRING_DOC(b_i32(&b, -5); b_u8(&b, 0));
		snprintf(name, sizeof(name), "%s length -5", what);
		snprintf(want, sizeof(want), "%s length -5 is less than 1", what);
		expect_invalid(name, &b, v, want);

		STRING_DOC(b_i32(&b, INT32_MIN));
		snprintf(name, sizeof(name), "%s length INT32_MIN", what);
		snprintf(want, sizeof(want), "%s length -2147483648 is less than 1", what);
		expect_invalid(name, &b, v, want);

		/* 3 bytes follow the length before the final NUL */
		STRING_DOC(b_i32(&b, 4); b_raw(&b, "ab\0", 3));
		snprintf(name, sizeof(name), "%s too long", what);
		snprintf(want, sizeof(want), "%s length 4 exceeds the 3 bytes left in its document", what);
		expect_invalid(name, &b, v, want);

		STRING_DOC(b_i32(&b, INT32_MAX); b_raw(&b, "ab\0", 3));
		snprintf(name, sizeof(name), "%s length INT32_MAX", what);
		snprintf(want, sizeof(want), "%s length 2147483647 exceeds the 3 bytes left in its document", what);
		expect_invalid(name, &b, v, want);

		STRING_DOC(b_i32(&b, 3); b_raw(&b, "abc", 3));
		snprintf(name, sizeof(name), "%s not NUL-terminated", what);
		snprintf(want, sizeof(want), "%s does not end with a NUL byte", what);
		expect_invalid(name, &b, v + 6, want);

		STRING_DOC(b_raw(&b, "\x02\0", 2));
		snprintf(name, sizeof(name), "%s length truncated", what);
		snprintf(want, sizeof(want), "%s length is truncated: 2 of 4 bytes left in its document", what);
		expect_invalid(name, &b, v, want);

		STRING_DOC((void) 0);
		snprintf(name, sizeof(name), "%s missing", what);
		snprintf(want, sizeof(want), "%s length is truncated: 0 of 4 bytes left in its document", what);
		expect_invalid(name, &b, v, want);

		STRING_DOC(b_str(&b, "ok \xED\xA0\x80"));
		snprintf(name, sizeof(name), "%s with a surrogate", what);
		snprintf(want, sizeof(want), "%s is not valid UTF-8", what);
		expect_invalid(name, &b, v + 4 + 3, want);

		STRING_DOC(b_str(&b, "\xC0\x80"));
		snprintf(name, sizeof(name), "%s with an overlong NUL", what);
		expect_invalid(name, &b, v + 4, want);

		STRING_DOC(b_str(&b, "abc\xE2\x82"));
		snprintf(name, sizeof(name), "%s ending in a truncated sequence", what);
		expect_invalid(name, &b, v + 4 + 3, want);

		/* the sequence runs into the string's own NUL */
		STRING_DOC(b_str_n(&b, "\xF0\x9F\x98\0\x80", 5));
		snprintf(name, sizeof(name), "%s with a sequence cut by an embedded NUL", what);
		expect_invalid(name, &b, v + 4, want);

		STRING_DOC(b_str(&b, ""));
		snprintf(name, sizeof(name), "%s empty", what);
		expect_valid(name, &b);

		STRING_DOC(b_str_n(&b, "a\0b\0\0", 5));
		snprintf(name, sizeof(name), "%s with embedded NULs", what);
		expect_valid(name, &b);

		STRING_DOC(b_str(&b, "\xF4\x8F\xBF\xBF\xE6\x97\xA5\xC3\xA9"));
		snprintf(name, sizeof(name), "%s multi-byte UTF-8", what);
		expect_valid(name, &b);
#undef STRING_DOC
	}
}

static void
test_bool_binary(void)
{
	Buf			b;
	size_t		v;

	for (int val = 0; val < 256; val++)
	{
		b_reset(&b);
		b_open(&b);
		b_elem(&b, BSON_TYPE_BOOL, "b");
		v = b.n;
		b_u8(&b, (uint8_t) val);
		b_close(&b);
		if (val <= 1)
			expect_valid(val ? "bool 1" : "bool 0", &b);
		else if (val == 2 || val == 255)
		{
			char		want[64];

			snprintf(want, sizeof(want), "boolean value is %d, not 0 or 1", val);
			expect_invalid(val == 2 ? "bool 2" : "bool 255", &b, v, want);
		}
	}
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_BOOL, "b");
	v = b.n;
	b_close(&b);
	expect_invalid("bool truncated", &b, v, "boolean value is truncated");

	/* binary */
#define BIN_DOC(body) \
	do { \
		b_reset(&b); \
		b_open(&b); \
		b_elem(&b, BSON_TYPE_BINARY, "x"); \
		v = b.n; \
		body; \
		b_close(&b); \
	} while (0)

	BIN_DOC(b_i32(&b, 0); b_u8(&b, 0));
	expect_valid("binary empty", &b);
	BIN_DOC(b_i32(&b, 3); b_u8(&b, 0x80); b_raw(&b, "abc", 3));
	expect_valid("binary subtype 0x80", &b);
	BIN_DOC(b_i32(&b, 16); b_u8(&b, 4); b_raw(&b, "0123456789abcdef", 16));
	expect_valid("binary subtype 4", &b);
	BIN_DOC(b_i32(&b, 7); b_u8(&b, 2); b_i32(&b, 3); b_raw(&b, "abc", 3));
	expect_valid("binary subtype 2", &b);
	BIN_DOC(b_i32(&b, 4); b_u8(&b, 2); b_i32(&b, 0));
	expect_valid("binary subtype 2 empty", &b);

	BIN_DOC(b_i32(&b, -1); b_u8(&b, 0));
	expect_invalid("binary length -1", &b, v, "binary length -1 is negative");
	BIN_DOC(b_i32(&b, INT32_MIN); b_u8(&b, 0));
	expect_invalid("binary length INT32_MIN", &b, v, "binary length -2147483648 is negative");
	BIN_DOC(b_i32(&b, 4); b_u8(&b, 0); b_raw(&b, "abc", 3));
	expect_invalid("binary too long", &b, v,
				   "binary length 4 exceeds the 3 bytes left in its document");
	BIN_DOC(b_i32(&b, INT32_MAX); b_u8(&b, 0));
	expect_invalid("binary length INT32_MAX", &b, v,
				   "binary length 2147483647 exceeds the 0 bytes left in its document");
	BIN_DOC(b_i32(&b, 0));
	expect_invalid("binary subtype missing", &b, v,
				   "binary length and subtype are truncated: 4 of 5 bytes left in its document");
	BIN_DOC(b_raw(&b, "\0", 1));
	expect_invalid("binary length truncated", &b, v,
				   "binary length and subtype are truncated: 1 of 5 bytes left in its document");
	BIN_DOC(b_i32(&b, 7); b_u8(&b, 2); b_i32(&b, 4); b_raw(&b, "abc", 3));
	expect_invalid("binary subtype 2 inner length too big", &b, v + 5,
				   "binary subtype 2 inner length 4 is not its length 7 minus 4");
	BIN_DOC(b_i32(&b, 7); b_u8(&b, 2); b_i32(&b, 2); b_raw(&b, "abc", 3));
	expect_invalid("binary subtype 2 inner length too small", &b, v + 5,
				   "binary subtype 2 inner length 2 is not its length 7 minus 4");
	BIN_DOC(b_i32(&b, 7); b_u8(&b, 2); b_i32(&b, -1); b_raw(&b, "abc", 3));
	expect_invalid("binary subtype 2 inner length -1", &b, v + 5,
				   "binary subtype 2 inner length -1 is not its length 7 minus 4");
	BIN_DOC(b_i32(&b, 3); b_u8(&b, 2); b_raw(&b, "abc", 3));
	expect_invalid("binary subtype 2 shorter than 4", &b, v,
				   "binary subtype 2 length 3 is less than 4");
#undef BIN_DOC
}

static void
test_code_w_scope(void)
{
	Buf			b;
	size_t		v;

#define CWS_DOC(body) \
	do { \
		b_reset(&b); \
		b_open(&b); \
		b_elem(&b, BSON_TYPE_CODE_W_SCOPE, "c"); \
		v = b.n; \
		body; \
		b_close(&b); \
	} while (0)

	CWS_DOC(b_cws_empty_scope(&b, ""));
	expect_valid("code with scope, minimal (14 bytes)", &b);
	CWS_DOC(b_cws_empty_scope(&b, "function () {}"));
	expect_valid("code with scope, empty scope", &b);
	CWS_DOC(b_i32(&b, 0); b_str(&b, "x"); b_open(&b); b_elem(&b, BSON_TYPE_INT32, "i");
			b_i32(&b, 1); b_close(&b); b_put_u32(&b, v, (uint32_t) (b.n - v)));
	expect_valid("code with scope, scope {i: 1}", &b);

	CWS_DOC(b_i32(&b, 13); b_str(&b, ""); b_raw(&b, "\x04\0\0\0", 4));
	expect_invalid("code with scope total 13", &b, v, "code with scope length 13 is less than 14");
	CWS_DOC(b_i32(&b, -1); b_str(&b, ""); b_raw(&b, "\x05\0\0\0\0", 5));
	expect_invalid("code with scope total -1", &b, v, "code with scope length -1 is less than 14");
	CWS_DOC(b_i32(&b, 15); b_str(&b, ""); b_raw(&b, "\x05\0\0\0\0", 5));
	expect_invalid("code with scope total beyond its document", &b, v,
				   "code with scope length 15 exceeds the 14 bytes left in its document");
	CWS_DOC(b_raw(&b, "\x0e\0", 2));
	expect_invalid("code with scope total truncated", &b, v,
				   "code with scope length is truncated: 2 of 4 bytes left in its document");

	/* total 17 > 4 + 6 + 5: two bytes between the scope and the end */
	CWS_DOC(b_i32(&b, 17); b_str(&b, "x"); b_raw(&b, "\x05\0\0\0\0", 5); b_raw(&b, "\0\0", 2));
	expect_invalid("code with scope total larger than its parts", &b, v,
				   "code with scope length 17 does not match its parts (15 bytes)");
	/* total 14 < 4 + 6 + 5: the scope does not fit in what is left */
	CWS_DOC(b_i32(&b, 14); b_str(&b, "x"); b_raw(&b, "\x05\0\0\0\0", 5));
	expect_invalid("code with scope total smaller than its parts", &b, v + 10,
				   "code with scope's scope length 5 exceeds the 4 bytes available");
	/* the code string claims more than the total leaves */
	CWS_DOC(b_i32(&b, 14); b_i32(&b, 7); b_raw(&b, "x\0\x05\0\0\0", 6));
	expect_invalid("code with scope code longer than the total", &b, v + 4,
				   "code with scope's code length 7 exceeds the 6 bytes left in its document");
	CWS_DOC(b_i32(&b, 14); b_i32(&b, 0); b_raw(&b, "\0\x05\0\0\0\0", 6));
	expect_invalid("code with scope code length 0", &b, v + 4,
				   "code with scope's code length 0 is less than 1");
	CWS_DOC(b_i32(&b, 15); b_str(&b, "\xFF"); b_raw(&b, "\x05\0\0\0\0", 5));
	expect_invalid("code with scope code not UTF-8", &b, v + 8,
				   "code with scope's code is not valid UTF-8");
	CWS_DOC(b_i32(&b, 16); b_str(&b, "x"); b_raw(&b, "\x05\0\0\0\x01\0", 6));
	expect_invalid("code with scope scope without final NUL", &b, v + 14,
				   "code with scope's scope does not end with a NUL byte");
	/* the scope's length says 4 */
	CWS_DOC(b_i32(&b, 15); b_str(&b, "x"); b_raw(&b, "\x04\0\0\0\0", 5));
	expect_invalid("code with scope scope length 4", &b, v + 10,
				   "code with scope's scope length 4 is less than 5");
	/* an element inside the scope is wrong */
	CWS_DOC(b_i32(&b, 0); b_str(&b, "x"); b_open(&b); b_elem(&b, BSON_TYPE_BOOL, "b");
			b_u8(&b, 7); b_close(&b); b_put_u32(&b, v, (uint32_t) (b.n - v)));
	expect_invalid("code with scope scope with bool 7", &b, v + 17,
				   "boolean value is 7, not 0 or 1");
#undef CWS_DOC
}

static void
test_regex_dbpointer(void)
{
	Buf			b;
	size_t		v;

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_REGEX, "r");
	b_cstr(&b, "^a.*b$");
	b_cstr(&b, "imsx");
	b_elem(&b, BSON_TYPE_REGEX, "e");
	b_cstr(&b, "");
	b_cstr(&b, "");
	b_close(&b);
	expect_valid("regex", &b);

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_REGEX, "r");
	v = b.n;
	b_raw(&b, "abc", 3);
	b_close(&b);
	expect_invalid("regex pattern unterminated", &b, v,
				   "regular expression pattern is not NUL-terminated within its document");

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_REGEX, "r");
	v = b.n;
	b_cstr(&b, "abc");
	b_raw(&b, "i", 1);
	b_close(&b);
	expect_invalid("regex options unterminated", &b, v + 4,
				   "regular expression options is not NUL-terminated within its document");

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_REGEX, "r");
	v = b.n;
	b_cstr(&b, "abc");
	b_close(&b);
	expect_invalid("regex options missing", &b, v + 4,
				   "regular expression options is not NUL-terminated within its document");

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_REGEX, "r");
	v = b.n;
	b_cstr(&b, "a\xC3");
	b_cstr(&b, "");
	b_close(&b);
	expect_invalid("regex pattern not UTF-8", &b, v + 1,
				   "regular expression pattern is not valid UTF-8");

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_REGEX, "r");
	v = b.n;
	b_cstr(&b, "a");
	b_cstr(&b, "\x80");
	b_close(&b);
	expect_invalid("regex options not UTF-8", &b, v + 2,
				   "regular expression options is not valid UTF-8");

	/* DBPointer: string namespace, 12-byte ObjectId */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DBPOINTER, "p");
	b_str(&b, "db.c");
	b_raw(&b, "0123456789ab", 12);
	b_close(&b);
	expect_valid("dbpointer", &b);

	for (size_t have = 0; have < 12; have++)
	{
		char		name[64];
		char		want[128];

		b_reset(&b);
		b_open(&b);
		b_elem(&b, BSON_TYPE_DBPOINTER, "p");
		v = b.n;
		b_str(&b, "db.c");
		b_raw(&b, "0123456789ab", have);
		b_close(&b);
		snprintf(name, sizeof(name), "dbpointer ObjectId of %zu bytes", have);
		snprintf(want, sizeof(want), "DBPointer ObjectId is truncated: %zu of 12 bytes left in its document", have);
		expect_invalid(name, &b, v + 9, want);
	}

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DBPOINTER, "p");
	v = b.n;
	b_raw(&b, "\x09\0\0", 3);
	b_close(&b);
	expect_invalid("dbpointer namespace length truncated", &b, v,
				   "DBPointer namespace length is truncated: 3 of 4 bytes left in its document");

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DBPOINTER, "p");
	v = b.n;
	b_i32(&b, 20);
	b_raw(&b, "db.c\0", 5);
	b_raw(&b, "0123456789ab", 12);
	b_close(&b);
	expect_invalid("dbpointer namespace too long", &b, v,
				   "DBPointer namespace length 20 exceeds the 17 bytes left in its document");
}

static void
test_fixed_sizes(void)
{
	static const struct
	{
		uint8_t		type;
		size_t		size;
		const char *name;
	}			fixed[] = {
		{BSON_TYPE_DOUBLE, 8, "double"},
		{BSON_TYPE_OBJECTID, 12, "ObjectId"},
		{BSON_TYPE_DATETIME, 8, "datetime"},
		{BSON_TYPE_INT32, 4, "int32"},
		{BSON_TYPE_TIMESTAMP, 8, "timestamp"},
		{BSON_TYPE_INT64, 8, "int64"},
		{BSON_TYPE_DECIMAL128, 16, "decimal128"},
	};
	static const uint8_t zeros[16] = {0};
	static const uint8_t empty_types[] = {BSON_TYPE_UNDEFINED, BSON_TYPE_NULL, BSON_TYPE_MINKEY, BSON_TYPE_MAXKEY};
	Buf			b;

	for (size_t t = 0; t < sizeof(fixed) / sizeof(fixed[0]); t++)
	{
		for (size_t have = 0; have <= fixed[t].size; have++)
		{
			char		name[64];
			char		want[128];
			size_t		v;

			b_reset(&b);
			b_open(&b);
			b_elem(&b, fixed[t].type, "v");
			v = b.n;
			b_raw(&b, zeros, have);
			b_close(&b);
			snprintf(name, sizeof(name), "%s of %zu bytes", fixed[t].name, have);
			if (have == fixed[t].size)
				expect_valid(name, &b);
			else
			{
				snprintf(want, sizeof(want),
						 "value of type 0x%02x is truncated: %zu of %zu bytes left in its document",
						 fixed[t].type, have, fixed[t].size);
				expect_invalid(name, &b, v, want);
			}
		}
	}

	for (size_t t = 0; t < sizeof(empty_types); t++)
	{
		char		name[64];

		b_reset(&b);
		b_open(&b);
		b_elem(&b, empty_types[t], "v");
		b_elem(&b, empty_types[t], "w");
		b_close(&b);
		snprintf(name, sizeof(name), "type 0x%02x twice", empty_types[t]);
		expect_valid(name, &b);
	}
}

static void
test_nesting(void)
{
	Buf			b;
	size_t		v;

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "d");
	v = b.n;
	b_i32(&b, 40);
	b_close(&b);
	expect_invalid("embedded document longer than its parent", &b, v,
				   "embedded document length 40 exceeds the 4 bytes available");

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_ARRAY, "a");
	v = b.n;
	b_i32(&b, 4);
	b_u8(&b, 0);
	b_close(&b);
	expect_invalid("array length 4", &b, v, "array length 4 is less than 5");

	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_ARRAY, "a");
	v = b.n;
	b_raw(&b, "\x05\0", 2);
	b_close(&b);
	expect_invalid("array length truncated", &b, v, "array length is truncated: 2 of 4 bytes left");

	/* the inner document's NUL is missing: its length takes the parent's */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "d");
	v = b.n;
	b_i32(&b, 6);
	b_u8(&b, 0);
	b_u8(&b, 1);
	b_close(&b);
	expect_invalid("embedded document without final NUL", &b, v + 5,
				   "embedded document does not end with a NUL byte");

	/* the inner document ends where it says but the parent runs on */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "d");
	b_open(&b);
	b_close(&b);
	v = b.n;
	b_u8(&b, 0x42);
	b_close(&b);
	expect_invalid("garbage after an embedded document", &b, v,
				   "unknown element type 0x42");

	/* depth limits: 3 levels below the top */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "a");
	b_open(&b);
	b_elem(&b, BSON_TYPE_ARRAY, "b");
	b_open(&b);
	b_elem(&b, BSON_TYPE_CODE_W_SCOPE, "0");
	v = b.n;
	b_cws_empty_scope(&b, "f");
	b_close(&b);
	b_close(&b);
	b_close(&b);
	{
		BsonReadLimits three = {3, NULL, NULL, NULL};
		BsonReadLimits two = {2, NULL, NULL, NULL};
		BsonReadLimits one = {1, NULL, NULL, NULL};

		expect_valid_lim("depth 3 with max_depth 3", b.d, b.n, &three);
		expect_valid_lim("depth 3 with no limits", b.d, b.n, NULL);
		expect_invalid_lim("depth 3 with max_depth 2", b.d, b.n, &two, v + 10,
						   "code with scope's scope is nested deeper than 2 levels");
		expect_invalid_lim("depth 3 with max_depth 1", b.d, b.n, &one, 14,
						   "array is nested deeper than 1 levels");
	}
}

/* the enter hook: counts, and refuses depths above *(int *) arg */
static int	hook_calls;
static int	hook_deepest;

static bool
refuse_above(void *arg, int depth)
{
	hook_calls++;
	if (depth > hook_deepest)
		hook_deepest = depth;
	return depth <= *(int *) arg;
}

static void
test_enter_hook(void)
{
	Buf			b;
	int			cap = 1000;
	BsonReadLimits limits = {0, refuse_above, &cap, NULL};
	size_t		at2 = 0;

	/* {a: {b: [ {}, {} ]}, c: {}} : 6 documents, deepest 3 */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "a");
	b_open(&b);
	b_elem(&b, BSON_TYPE_ARRAY, "b");
	b_open(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "0");
	at2 = b.n;
	b_open(&b);
	b_close(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "1");
	b_open(&b);
	b_close(&b);
	b_close(&b);
	b_close(&b);
	b_elem(&b, BSON_TYPE_DOCUMENT, "c");
	b_open(&b);
	b_close(&b);
	b_close(&b);

	hook_calls = 0;
	hook_deepest = -1;
	CHECK("enter hook: valid", bson_read_validate(b.d, b.n, &limits, NULL));
	CHECK("enter hook: called once per document", hook_calls == 6);
	CHECK("enter hook: deepest is 3", hook_deepest == 3);

	cap = 2;
	expect_invalid_lim("enter hook refusing depth 3", b.d, b.n, &limits, at2,
					   "embedded document is nested too deeply");
	cap = 0;
	expect_invalid_lim("enter hook refusing depth 1", b.d, b.n, &limits, 7,
					   "embedded document is nested too deeply");
	cap = -1;
	expect_invalid_lim("enter hook refusing the top level", b.d, b.n, &limits, 0,
					   "document is nested too deeply");

	/* deep nesting: 500 levels, no limit, then capped at 200 */
	{
		static Buf	deep;
		BsonReadLimits cap200 = {200, NULL, NULL, NULL};
		size_t		at201 = 0;

		b_reset(&deep);
		b_open(&deep);
		for (int i = 0; i < 500; i++)
		{
			b_elem(&deep, BSON_TYPE_DOCUMENT, "d");
			if (i == 200)
				at201 = deep.n;
			b_open(&deep);
		}
		for (int i = 0; i <= 500; i++)
			b_close(&deep);
		expect_valid_lim("500 levels, no limit", deep.d, deep.n, NULL);
		expect_invalid_lim("500 levels, max_depth 200", deep.d, deep.n, &cap200, at201,
						   "embedded document is nested deeper than 200 levels");
	}
}

/* ----------------------------------------------------------------------
 * A document with every type: accepted, walked, and truncated
 * ---------------------------------------------------------------------- */

static const uint8_t test_oid[12] = {0x5f, 0x0c, 0x6e, 0x8a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82};

/* builds it; starts[] gets the offsets of the top-level elements */
static void
build_all_types(Buf *b, size_t *starts, int *nstarts)
{
	int			n = 0;
	size_t		at;

	b_reset(b);
	b_open(b);
	starts[n++] = b_elem(b, BSON_TYPE_DOUBLE, "double");
	b_i64(b, INT64_C(0x4004000000000000));	/* 2.5 */
	starts[n++] = b_elem(b, BSON_TYPE_STRING, "string");
	b_str_n(b, "s\0\xC3\xA9", 4);
	starts[n++] = b_elem(b, BSON_TYPE_DOCUMENT, "document");
	b_open(b);
	b_elem(b, BSON_TYPE_INT32, "x");
	b_i32(b, 7);
	b_close(b);
	starts[n++] = b_elem(b, BSON_TYPE_ARRAY, "array");
	b_open(b);
	b_elem(b, BSON_TYPE_INT64, "0");
	b_i64(b, -9);
	b_elem(b, BSON_TYPE_STRING, "1");
	b_str(b, "");
	b_close(b);
	starts[n++] = b_elem(b, BSON_TYPE_BINARY, "binary");
	b_i32(b, 2);
	b_u8(b, 0x80);
	b_raw(b, "\x01\x02", 2);
	starts[n++] = b_elem(b, BSON_TYPE_BINARY, "old");
	b_i32(b, 5);
	b_u8(b, 2);
	b_i32(b, 1);
	b_raw(b, "\x03", 1);
	starts[n++] = b_elem(b, BSON_TYPE_UNDEFINED, "undefined");
	starts[n++] = b_elem(b, BSON_TYPE_OBJECTID, "oid");
	b_raw(b, test_oid, 12);
	starts[n++] = b_elem(b, BSON_TYPE_BOOL, "bool");
	b_u8(b, 1);
	starts[n++] = b_elem(b, BSON_TYPE_DATETIME, "date");
	b_i64(b, INT64_C(1709210096789));
	starts[n++] = b_elem(b, BSON_TYPE_NULL, "null");
	starts[n++] = b_elem(b, BSON_TYPE_REGEX, "regex");
	b_cstr(b, "ab+");
	b_cstr(b, "i");
	starts[n++] = b_elem(b, BSON_TYPE_DBPOINTER, "dbpointer");
	b_str(b, "d.c");
	b_raw(b, test_oid, 12);
	starts[n++] = b_elem(b, BSON_TYPE_CODE, "code");
	b_str(b, "x()");
	starts[n++] = b_elem(b, BSON_TYPE_SYMBOL, "symbol");
	b_str(b, "y");
	starts[n++] = b_elem(b, BSON_TYPE_CODE_W_SCOPE, "cws");
	at = b->n;
	b_i32(b, 0);
	b_str(b, "z");
	b_open(b);
	b_elem(b, BSON_TYPE_BOOL, "b");
	b_u8(b, 0);
	b_close(b);
	b_put_u32(b, at, (uint32_t) (b->n - at));
	starts[n++] = b_elem(b, BSON_TYPE_INT32, "int32");
	b_i32(b, -5);
	starts[n++] = b_elem(b, BSON_TYPE_TIMESTAMP, "timestamp");
	b_i32(b, 3);				/* increment */
	b_i32(b, 4);				/* seconds */
	starts[n++] = b_elem(b, BSON_TYPE_INT64, "int64");
	b_i64(b, INT64_C(1) << 33);
	starts[n++] = b_elem(b, BSON_TYPE_DECIMAL128, "decimal128");
	b_i64(b, 15);				/* -1.5E-10: 15 * 10^-11 */
	b_i64(b, (int64_t) UINT64_C(0xB02A000000000000));
	starts[n++] = b_elem(b, BSON_TYPE_MINKEY, "minkey");
	starts[n++] = b_elem(b, BSON_TYPE_MAXKEY, "maxkey");
	starts[n] = b->n;			/* where the final NUL goes */
	b_close(b);
	*nstarts = n;
}

static void
test_all_types(void)
{
	static Buf	b;
	size_t		starts[32];
	int			nstarts;
	BsonIter	it;
	int			count = 0;

	build_all_types(&b, starts, &nstarts);
	expect_valid("all types", &b);

	/* the walk: every element where it was put, the accessors' answers */
	bson_iter_init(&it, b.d);
	while (bson_iter_next(&it))
	{
		const char *k = it.key;

		CHECK("all types walk: element offsets", count < nstarts && it.pos == b.d + starts[count]);
		CHECK("all types walk: key length", strlen(k) == it.keylen);
		CHECK("all types walk: value size",
			  it.value + bson_read_value_size(it.type, it.value) == b.d + starts[count + 1]);
		count++;
		switch (it.type)
		{
			case BSON_TYPE_DOUBLE:
				CHECK("double", bson_iter_double(&it) == 2.5);
				break;
			case BSON_TYPE_STRING:
				{
					size_t		len;
					const char *s = bson_iter_utf8(&it, &len);

					CHECK("string", len == 4 && memcmp(s, "s\0\xC3\xA9", 5) == 0);
					break;
				}
			case BSON_TYPE_DOCUMENT:
				{
					BsonIter	in;

					bson_iter_init(&in, it.value);
					CHECK("document", bson_iter_next(&in) && in.type == BSON_TYPE_INT32 &&
						  strcmp(in.key, "x") == 0 && bson_iter_int32(&in) == 7 &&
						  !bson_iter_next(&in));
					break;
				}
			case BSON_TYPE_ARRAY:
				{
					BsonIter	in;
					size_t		len;

					bson_iter_init(&in, it.value);
					CHECK("array 0", bson_iter_next(&in) && in.type == BSON_TYPE_INT64 &&
						  strcmp(in.key, "0") == 0 && bson_iter_int64(&in) == -9);
					CHECK("array 1", bson_iter_next(&in) && in.type == BSON_TYPE_STRING &&
						  strcmp(in.key, "1") == 0 && bson_iter_utf8(&in, &len) != NULL && len == 0);
					CHECK("array end", !bson_iter_next(&in) && !bson_iter_next(&in));
					break;
				}
			case BSON_TYPE_BINARY:
				{
					uint8_t		subtype;
					size_t		len;
					const uint8_t *p = bson_read_binary(&it, &subtype, &len);

					if (strcmp(k, "binary") == 0)
						CHECK("binary", subtype == 0x80 && len == 2 && memcmp(p, "\x01\x02", 2) == 0);
					else
						CHECK("binary subtype 2: payload after the inner length",
							  subtype == 2 && len == 1 && p[0] == 3 && p == it.value + 9);
					break;
				}
			case BSON_TYPE_OBJECTID:
				CHECK("objectid", memcmp(it.value, test_oid, 12) == 0);
				break;
			case BSON_TYPE_BOOL:
				CHECK("bool", it.value[0] == 1);
				break;
			case BSON_TYPE_DATETIME:
				CHECK("datetime", bson_iter_int64(&it) == INT64_C(1709210096789));
				break;
			case BSON_TYPE_REGEX:
				{
					const char *pattern;
					const char *options;

					bson_read_regex(&it, &pattern, &options);
					CHECK("regex", strcmp(pattern, "ab+") == 0 && strcmp(options, "i") == 0);
					break;
				}
			case BSON_TYPE_DBPOINTER:
				{
					size_t		len;
					const uint8_t *oid;
					const char *ns = bson_read_dbpointer(&it, &len, &oid);

					CHECK("dbpointer", len == 3 && strcmp(ns, "d.c") == 0 &&
						  memcmp(oid, test_oid, 12) == 0);
					break;
				}
			case BSON_TYPE_CODE:
			case BSON_TYPE_SYMBOL:
				{
					size_t		len;
					const char *s = bson_iter_utf8(&it, &len);

					CHECK("code, symbol", it.type == BSON_TYPE_CODE ?
						  (len == 3 && strcmp(s, "x()") == 0) : (len == 1 && strcmp(s, "y") == 0));
					break;
				}
			case BSON_TYPE_CODE_W_SCOPE:
				{
					size_t		len;
					const uint8_t *scope;
					const char *code = bson_read_code_w_scope(&it, &len, &scope);
					BsonIter	in;

					CHECK("code with scope: code", len == 1 && strcmp(code, "z") == 0);
					CHECK("code with scope: scope ends with the element",
						  scope + bsonr_u32(scope) == it.value + bsonr_u32(it.value));
					bson_iter_init(&in, scope);
					CHECK("code with scope: scope", bson_iter_next(&in) && in.type == BSON_TYPE_BOOL &&
						  strcmp(in.key, "b") == 0 && in.value[0] == 0 && !bson_iter_next(&in));
					break;
				}
			case BSON_TYPE_INT32:
				CHECK("int32", bson_iter_int32(&it) == -5);
				break;
			case BSON_TYPE_TIMESTAMP:
				{
					uint32_t	t;
					uint32_t	i;

					bson_iter_timestamp(&it, &t, &i);
					CHECK("timestamp", t == 4 && i == 3);
					break;
				}
			case BSON_TYPE_INT64:
				CHECK("int64", bson_iter_int64(&it) == INT64_C(1) << 33);
				break;
			case BSON_TYPE_DECIMAL128:
				{
					uint64_t	low;
					uint64_t	high;
					char		text[DECIMAL128_STRING_SIZE];

					bson_iter_decimal128(&it, &low, &high);
					decimal128_to_string(low, high, text);
					CHECK("decimal128", low == 15 && high == UINT64_C(0xB02A000000000000) &&
						  strcmp(text, "-1.5E-10") == 0);
					break;
				}
			case BSON_TYPE_UNDEFINED:
			case BSON_TYPE_NULL:
			case BSON_TYPE_MINKEY:
			case BSON_TYPE_MAXKEY:
				CHECK("empty values", bson_read_value_size(it.type, it.value) == 0);
				break;
			default:
				CHECK("all types walk: known type", false);
		}
	}
	CHECK("all types walk: every element", count == nstarts);

	/* every strict prefix is rejected */
	{
		bool		all = true;
		char		detail[128] = "";

		for (size_t k = 0; k < b.n && all; k++)
		{
			if (bson_read_validate(place("all types prefix", b.d, k, 0), k, NULL, NULL) ||
				bson_read_validate(place("all types prefix", b.d, k, 1), k, NULL, NULL))
			{
				snprintf(detail, sizeof(detail), "prefix of %zu bytes accepted", k);
				all = false;
			}
		}
		report(all, "all types: every strict prefix rejected", detail);
	}

	/*
	 * Cut at every byte with the header rewritten to the cut and the last
	 * byte made the final NUL: valid exactly when the NUL takes the place of
	 * a top-level element's type byte, so that whole elements remain.
	 */
	{
		bool		all = true;
		char		detail[128] = "";
		static Buf	cut;

		for (size_t k = BSON_MIN_DOCUMENT_SIZE; k < b.n && all; k++)
		{
			bool		boundary = false;
			bool		ok;

			for (int i = 0; i <= nstarts; i++)
				boundary |= (starts[i] == k - 1);
			memcpy(cut.d, b.d, k);
			cut.n = k;
			b_put_u32(&cut, 0, (uint32_t) k);
			cut.d[k - 1] = 0;
			ok = bson_read_validate(place("all types cut", cut.d, k, 0), k, NULL, NULL);
			if (ok != boundary)
			{
				snprintf(detail, sizeof(detail), "cut at %zu %s", k, ok ? "accepted" : "rejected");
				all = false;
			}
		}
		report(all, "all types: cuts valid exactly at element boundaries", detail);
	}
}

static void
test_document_length(void)
{
	Buf			b;
	BsonReadError err;

	/* a stream of two documents */
	b_reset(&b);
	b_open(&b);
	b_elem(&b, BSON_TYPE_INT32, "a");
	b_i32(&b, 1);
	b_close(&b);
	b_open(&b);
	b_close(&b);
	CHECK("document_length: first of a stream", bson_read_document_length(b.d, b.n, &err) == 12);
	CHECK("document_length: second of a stream", bson_read_document_length(b.d + 12, b.n - 12, &err) == 5);
	CHECK("document_length: does not validate the body",
		  bson_read_document_length((const uint8_t *) "\x06\0\0\0\x99\x99", 6, &err) == 6);

	memset(&err, 0xFF, sizeof(err));
	CHECK("document_length: 3 bytes",
		  bson_read_document_length(b.d, 3, &err) == 0 && err.offset == 0 &&
		  strcmp(err.message, "document length is truncated: 3 of 4 bytes left") == 0);
	memset(&err, 0xFF, sizeof(err));
	CHECK("document_length: beyond",
		  bson_read_document_length(b.d, 11, &err) == 0 && err.offset == 0 &&
		  strcmp(err.message, "document length 12 exceeds the 11 bytes left") == 0);
	memset(&err, 0xFF, sizeof(err));
	CHECK("document_length: 4",
		  bson_read_document_length((const uint8_t *) "\x04\0\0\0\0", 5, &err) == 0 && err.offset == 0 &&
		  strcmp(err.message, "document length 4 is less than 5") == 0);
	CHECK("document_length: no error struct", bson_read_document_length(b.d, 0, NULL) == 0);
}

/* ----------------------------------------------------------------------
 * Text forms
 * ---------------------------------------------------------------------- */

static void
test_decimal128(void)
{
	static const struct
	{
		uint64_t	high;
		uint64_t	low;
		const char *want;
	}			cases[] = {
		/* canonical values: pymongo's Decimal128(text).bid and str() */
		{UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000000), "0"},
		{UINT64_C(0xB040000000000000), UINT64_C(0x0000000000000000), "-0"},
		{UINT64_C(0x3040000000000000), UINT64_C(0x0000000000000001), "1"},
		{UINT64_C(0xB040000000000000), UINT64_C(0x0000000000000001), "-1"},
		{UINT64_C(0x303E000000000000), UINT64_C(0x0000000000000000), "0.0"},
		{UINT64_C(0xB03E000000000000), UINT64_C(0x0000000000000000), "-0.0"},
		{UINT64_C(0x303E000000000000), UINT64_C(0x000000000000000A), "1.0"},
		{UINT64_C(0x303E000000000000), UINT64_C(0x000000000000000B), "1.1"},
		{UINT64_C(0x303E000000000000), UINT64_C(0x0000000000000001), "0.1"},
		{UINT64_C(0xB03E000000000000), UINT64_C(0x0000000000000001), "-0.1"},
		{UINT64_C(0x3034000000000000), UINT64_C(0x0000000000000001), "0.000001"},
		{UINT64_C(0x3032000000000000), UINT64_C(0x0000000000000001), "1E-7"},
		{UINT64_C(0xB02C000000000000), UINT64_C(0x0000000000000064), "-1.00E-8"},
		{UINT64_C(0x2FF23CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2), "0.000001234567890123456789012345678901234"},
		{UINT64_C(0x2FF03CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2), "1.234567890123456789012345678901234E-7"},
		{UINT64_C(0x3046000000000000), UINT64_C(0x0000000000000001), "1E+3"},
		{UINT64_C(0x3042000000000000), UINT64_C(0x000000000000007B), "1.23E+3"},
		{UINT64_C(0x3040000000000000), UINT64_C(0x000000000000007B), "123"},
		{UINT64_C(0x3040000000000000), UINT64_C(0x002BDC545D6B4B87), "12345678901234567"},
		{UINT64_C(0x30403CDE6FFF9732), UINT64_C(0xDE825CD07E96AFF2), "1234567890123456789012345678901234"},
		{UINT64_C(0x3046000000000000), UINT64_C(0x0000000000000000), "0E+3"},
		{UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000000), "0E-6176"},
		{UINT64_C(0xDFFE000000000000), UINT64_C(0x0000000000000000), "-0E+6111"},
		{UINT64_C(0x5FFE000000000000), UINT64_C(0x0000000000000000), "0E+6111"},
		{UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000001), "1E-6176"},
		{UINT64_C(0x8000000000000000), UINT64_C(0x0000000000000001), "-1E-6176"},
		{UINT64_C(0x5FFE314DC6448D93), UINT64_C(0x38C15B0A00000000), "1.000000000000000000000000000000000E+6144"},
		{UINT64_C(0x5FFFED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF), "9.999999999999999999999999999999999E+6144"},
		{UINT64_C(0xDFFFED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF), "-9.999999999999999999999999999999999E+6144"},
		{UINT64_C(0x3034000000000000), UINT64_C(0x00000000000004D2), "0.001234"},
		{UINT64_C(0x303A000000000000), UINT64_C(0x000000000001E240), "123.456"},
		{UINT64_C(0x3042000000000000), UINT64_C(0x0000000000000001), "1E+1"},
		{UINT64_C(0x3042000000000000), UINT64_C(0x0000000000000000), "0E+1"},
		{UINT64_C(0x3036000000000000), UINT64_C(0x0000000000000000), "0.00000"},
		{UINT64_C(0x3034000000000000), UINT64_C(0x0000000000000005), "0.000005"},
		{UINT64_C(0x3032000000000000), UINT64_C(0x0000000000000032), "0.0000050"},
		{UINT64_C(0xB032000000000000), UINT64_C(0x0000000000000005), "-5E-7"},
		{UINT64_C(0x3040000000000000), UINT64_C(0x000000000000000A), "10"},
		{UINT64_C(0x303C000000000000), UINT64_C(0x0000000000000064), "1.00"},
		{UINT64_C(0x3041ED09BEAD87C0), UINT64_C(0x378D8E63FFFFFFFF), "9999999999999999999999999999999999"},
		/* NaN whatever its sign, signalling bit or payload; infinities */
		{UINT64_C(0x7C00000000000000), UINT64_C(0x0000000000000000), "NaN"},
		{UINT64_C(0xFC00000000000000), UINT64_C(0x0000000000000000), "NaN"},
		{UINT64_C(0x7E00000000000000), UINT64_C(0x0000000000000000), "NaN"},
		{UINT64_C(0xFE00000000000000), UINT64_C(0x0000000000000000), "NaN"},
		{UINT64_C(0x7C00000000000000), UINT64_C(0x000000000000000C), "NaN"},
		{UINT64_C(0x7800000000000000), UINT64_C(0x0000000000000000), "Infinity"},
		{UINT64_C(0xF800000000000000), UINT64_C(0x0000000000000000), "-Infinity"},
		{UINT64_C(0x7800000000000001), UINT64_C(0x0000000000000001), "Infinity"},
		{UINT64_C(0x7BFFFFFFFFFFFFFF), UINT64_C(0xFFFFFFFFFFFFFFFF), "Infinity"},
		/* the "11" form: the implied coefficient is above 10^34 - 1, so 0 */
		{UINT64_C(0x6C10000000000000), UINT64_C(0x0000000000000000), "0"},
		{UINT64_C(0x6000000000000000), UINT64_C(0x0000000000000000), "0E-6176"},
		{UINT64_C(0xEFFFFFFFFFFFFFFF), UINT64_C(0xFFFFFFFFFFFFFFFF), "-0E+2015"},
		/* normal form, coefficient above 10^34 - 1: 0 with the exponent */
		{UINT64_C(0x3041ED09BEAD87C0), UINT64_C(0x378D8E6400000000), "0"},
		{UINT64_C(0x3041FFFFFFFFFFFF), UINT64_C(0xFFFFFFFFFFFFFFFF), "0"},
		{UINT64_C(0xB041FFFFFFFFFFFF), UINT64_C(0xFFFFFFFFFFFFFFFF), "-0"},
		{UINT64_C(0x303DFFFFFFFFFFFF), UINT64_C(0xFFFFFFFFFFFFFFFF), "0.00"},
		{UINT64_C(0x3047FFFFFFFFFFFF), UINT64_C(0x0000000000000000), "0E+3"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char		out[DECIMAL128_STRING_SIZE];
		char		name[96];
		char		detail[160] = "";
		int			n;

		memset(out, 'x', sizeof(out));
		n = decimal128_to_string(cases[i].low, cases[i].high, out);
		snprintf(name, sizeof(name), "decimal128 %016llx %016llx",
				 (unsigned long long) cases[i].high, (unsigned long long) cases[i].low);
		if (strcmp(out, cases[i].want) != 0 || n != (int) strlen(cases[i].want))
			snprintf(detail, sizeof(detail), "got \"%s\" (%d), want \"%s\"", out, n, cases[i].want);
		report(detail[0] == '\0', name, detail);
	}

	/* the longest output fits the buffer exactly */
	{
		char		out[DECIMAL128_STRING_SIZE];
		int			n = decimal128_to_string(UINT64_C(0x378D8E63FFFFFFFF),
												  UINT64_C(0x8001ED09BEAD87C0), out);

		CHECK("decimal128 longest", n == 42 && n == (int) strlen(out) &&
			  strcmp(out, "-9.999999999999999999999999999999999E-6143") == 0);
	}
}

static void
test_iso8601(void)
{
	static const struct
	{
		int64_t		ms;
		const char *want;
	}			cases[] = {
		{0, "1970-01-01T00:00:00Z"},
		{1, "1970-01-01T00:00:00.001Z"},
		{999, "1970-01-01T00:00:00.999Z"},
		{1000, "1970-01-01T00:00:01Z"},
		{INT64_C(86399999), "1970-01-01T23:59:59.999Z"},
		{INT64_C(94694399999), "1972-12-31T23:59:59.999Z"},
		{INT64_C(951782400000), "2000-02-29T00:00:00Z"},
		{INT64_C(1709210096789), "2024-02-29T12:34:56.789Z"},
		{INT64_C(2147483648000), "2038-01-19T03:14:08Z"},
		{INT64_C(4107542400000), "2100-03-01T00:00:00Z"},
		{INT64_C(253402300799000), "9999-12-31T23:59:59Z"},
		{INT64_C(253402300799999), "9999-12-31T23:59:59.999Z"},
		/* out of range: 0 */
		{-1, NULL},
		{INT64_C(-62135596800000), NULL},
		{INT64_C(253402300800000), NULL},
		{INT64_MAX, NULL},
		{INT64_MIN, NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char		out[EXTJSON_ISO8601_SIZE];
		char		name[64];
		char		detail[160] = "";
		int			n;

		memset(out, 'x', sizeof(out));
		out[sizeof(out) - 1] = '\0';
		n = extjson_format_iso8601(cases[i].ms, out);
		snprintf(name, sizeof(name), "iso8601 %lld", (long long) cases[i].ms);
		if (cases[i].want == NULL)
		{
			if (n != 0)
				snprintf(detail, sizeof(detail), "returned %d, want 0", n);
		}
		else if (n != (int) strlen(cases[i].want) || strcmp(out, cases[i].want) != 0)
			snprintf(detail, sizeof(detail), "got \"%s\" (%d), want \"%s\"", out, n, cases[i].want);
		report(detail[0] == '\0', name, detail);
	}
}

static void
test_base64_hex_utf8(void)
{
	static const char *const want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};

	for (size_t len = 0; len <= 6; len++)
	{
		char		out[16];
		char		name[32];
		size_t		n;

		memset(out, 'x', sizeof(out));
		n = extjson_base64_encode((const uint8_t *) "foobar", len, out);
		snprintf(name, sizeof(name), "base64 of %zu bytes", len);
		CHECK(name, n == strlen(want[len]) && strcmp(out, want[len]) == 0 &&
			  n == 4 * ((len + 2) / 3));
	}
	{
		char		out[16];

		extjson_base64_encode((const uint8_t *) "\xFB\xFF\xBF", 3, out);
		CHECK("base64 + and /", strcmp(out, "+/+/") == 0);
		extjson_base64_encode((const uint8_t *) "\0\0", 2, out);
		CHECK("base64 of zero bytes", strcmp(out, "AAA=") == 0);
	}
	{
		char		out[16];

		memset(out, 'x', sizeof(out));
		extjson_hex_encode((const uint8_t *) "", 0, out);
		CHECK("hex empty", out[0] == '\0');
		extjson_hex_encode((const uint8_t *) "\x00\xFF\x10\xAB", 4, out);
		CHECK("hex", strcmp(out, "00ff10ab") == 0);
	}

	/* the offset of the first bad byte; NUL counts as valid */
	{
		static const struct
		{
			const char *s;
			size_t		len;
			size_t		want;
		}			cases[] = {
			{"", 0, 0},
			{"abc", 3, 3},
			{"a\0b", 3, 3},
			{"0123456789abcdef\xC3\xA9", 18, 18},
			{"0123456789abcdef\xC3", 17, 16},
			{"01234567\x80", 9, 8},
			{"\xF0\x9F\x98\x80\xF0\x9F\x98", 7, 4},
			{"\xE2\x82\xAC\xED\xA0\x80", 6, 3},
			{"\xF4\x8F\xBF\xBF\xF4\x90\x80\x80", 8, 4},
			{"\xC2\x80\xC1\xBF", 4, 2},
			{"\xE0\xA0\x80\xE0\x9F\xBF", 6, 3},
			{"\xF0\x90\x80\x80\xF0\x8F\xBF\xBF", 8, 4},
			{"\xEF\xBF\xBF\xF8\x88\x80\x80\x80", 8, 3},
			{"aaaaaaa\xC3\xA9", 9, 9},
			{"aaaaaaaa\xE2\x82\xAC", 10, 8},	/* the sequence cut by len */
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		{
			char		name[48];
			size_t		len = cases[i].len;

			snprintf(name, sizeof(name), "utf8_valid_prefix #%zu", i);
			CHECK(name, bson_read_utf8_valid_prefix(place(name, (const uint8_t *) cases[i].s, len, 0), len) ==
				  cases[i].want);
		}
	}
}

int
main(void)
{
	unit_start("in");
	test_document_frame();
	test_types_and_keys();
	test_strings();
	test_bool_binary();
	test_code_w_scope();
	test_regex_dbpointer();
	test_fixed_sizes();
	test_nesting();
	test_enter_hook();
	test_all_types();
	test_document_length();
	test_decimal128();
	test_iso8601();
	test_base64_hex_utf8();
	return unit_finish();
}
