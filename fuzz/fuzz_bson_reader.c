/*
 * fuzz_bson_reader.c
 *		libFuzzer harness for src/bson_reader.c (and, for round trips, the
 *		text parsers of src/extjson_scalars.c).
 *
 * Built by fuzz/run.sh, either with clang -fsanitize=fuzzer,address,undefined
 * or with fuzz/standalone_main.c (any C compiler, ASan/UBSan) to replay
 * files.  Every check failure calls abort(), which both libFuzzer and the
 * standalone driver report as a crash.
 *
 * For each input:
 *
 *	1. bson_read_utf8_valid_prefix() is compared with a plain reference decoder
 *	   over the whole input, and the text formatters run on raw windows of
 *	   it (decimal128, datetimes, base64, hex), whether or not it is BSON;
 *	2. bson_read_validate() runs with a depth cap of MAX_DEPTH and an enter hook;
 *	   a rejection must give an offset inside the input and a printable
 *	   message, the same with or without an error struct;
 *	3. an accepted document is walked with BsonIter, every accessor called
 *	   for every element, and the walk must agree with the validator: the
 *	   element sizes add up to each document's length, keys and strings are
 *	   valid UTF-8 of the length stated, code-with-scope's scope ends exactly
 *	   where the element does, the number and depth of the documents walked
 *	   match the enter hook's calls, smaller depth caps reject it with the
 *	   expected messages, every strict prefix is rejected, and one more byte
 *	   is reported as trailing at the right offset;
 *	4. truncations of the input whose header is rewritten to the cut length
 *	   (so the validator has to find the damage inside) are validated from
 *	   exact-size copies, so that a read past the end is an ASan report, and
 *	   walked when accepted;
 *	5. the input is split as a stream with bson_read_document_length() and every
 *	   document validated (and walked) on its own.
 *
 * Text forms are checked by round trip through the extjson_scalars.c parsers
 * where one exists: decimal128 strings must parse back to the canonical form
 * of the value, ISO-8601 dates to the same milliseconds, base64 and hex to
 * the same bytes.
 */
#include "bson_reader.h"
#include "decimal128.h"
#include "extjson_scalars.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Nesting cap below the top-level document (which is depth 0) */
#define MAX_DEPTH 200

/* Up to this size every cut point of step 4 is tried; above it, a sample */
#define ALL_CUTS_MAX 128
#define SAMPLED_CUTS 32

/* Exact-size copies of strict prefixes (step 3) up to this size */
#define PREFIX_COPY_MAX 512

/* The last 9999-12-31T23:59:59.999Z in ms since 1970: extjson_format_iso8601's
 * upper bound */
#define ISO8601_MAX_MS INT64_C(253402300799999)

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			check_failed(#cond, __LINE__); \
	} while (0)

static void
check_failed(const char *cond, int line)
{
	fprintf(stderr, "fuzz_bson_reader.c:%d: invariant failed: %s\n", line, cond);
	abort();
}

/* malloc that cannot return NULL; exact sizes so ASan sees overruns */
static void *
xmalloc(size_t n)
{
	void	   *p = malloc(n > 0 ? n : 1);

	if (p == NULL)
		abort();
	return p;
}

/* ----------------------------------------------------------------------
 * UTF-8: a reference decoder, written differently from the one under test
 * (decode the code point, then judge it), for a differential check.
 * ---------------------------------------------------------------------- */

static size_t
ref_utf8_valid_prefix(const uint8_t *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		uint32_t	cp = s[i];
		size_t		more;
		uint32_t	min;

		if (cp < 0x80)
		{
			i++;
			continue;
		}
		if ((cp & 0xE0) == 0xC0)
		{
			more = 1;
			cp &= 0x1F;
			min = 0x80;
		}
		else if ((cp & 0xF0) == 0xE0)
		{
			more = 2;
			cp &= 0x0F;
			min = 0x800;
		}
		else if ((cp & 0xF8) == 0xF0)
		{
			more = 3;
			cp &= 0x07;
			min = 0x10000;
		}
		else
			return i;
		if (len - i <= more)
			return i;
		for (size_t k = 1; k <= more; k++)
		{
			if ((s[i + k] & 0xC0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return i;
		i += more + 1;
	}
	return i;
}

static void
check_utf8(const uint8_t *s, size_t len)
{
	CHECK(bson_read_utf8_valid_prefix(s, len) == len);
	CHECK(ref_utf8_valid_prefix(s, len) == len);
}

/* Compare the two decoders over all of s, restarting after each bad byte */
static void
check_utf8_differential(const uint8_t *s, size_t len)
{
	size_t		off = 0;

	while (off < len)
	{
		size_t		got = bson_read_utf8_valid_prefix(s + off, len - off);

		CHECK(got <= len - off);
		CHECK(got == ref_utf8_valid_prefix(s + off, len - off));
		off += got + 1;
	}
}

/* ----------------------------------------------------------------------
 * Text forms
 * ---------------------------------------------------------------------- */

static void
check_hex(const uint8_t *in, size_t len)
{
	char	   *out = xmalloc(2 * len + 1);

	extjson_hex_encode(in, len, out);
	CHECK(strlen(out) == 2 * len);
	for (size_t i = 0; i < len; i++)
	{
		int			hi = extjson_hex_value(out[2 * i]);
		int			lo = extjson_hex_value(out[2 * i + 1]);

		CHECK(hi >= 0 && lo >= 0);
		CHECK((out[2 * i] < 'A' || out[2 * i] > 'F') &&
			  (out[2 * i + 1] < 'A' || out[2 * i + 1] > 'F'));
		CHECK((uint8_t) (hi << 4 | lo) == in[i]);
	}
	free(out);
}

static void
check_base64(const uint8_t *in, size_t len)
{
	size_t		want = 4 * ((len + 2) / 3);
	char	   *out = xmalloc(want + 1);
	uint8_t    *back;
	size_t		backlen = 0;
	size_t		n;

	n = extjson_base64_encode(in, len, out);
	CHECK(n == want);
	CHECK(strlen(out) == n);
	back = xmalloc(extjson_base64_decoded_max(n));
	CHECK(extjson_parse_base64(out, n, back, &backlen));
	CHECK(backlen == len);
	CHECK(len == 0 || memcmp(back, in, len) == 0);
	free(back);
	free(out);
}

static void
check_objectid(const uint8_t *oid)
{
	char	   *hex = xmalloc(25);
	uint8_t		back[12];

	extjson_hex_encode(oid, 12, hex);
	CHECK(strlen(hex) == 24);
	CHECK(extjson_parse_oid(hex, 24, back));
	CHECK(memcmp(back, oid, 12) == 0);
	free(hex);
}

static void
check_iso8601(int64_t ms)
{
	char	   *out = xmalloc(EXTJSON_ISO8601_SIZE);
	int			n = extjson_format_iso8601(ms, out);

	if (ms < 0 || ms > ISO8601_MAX_MS)
		CHECK(n == 0);
	else
	{
		int64_t		back = -1;

		/* "YYYY-MM-DDTHH:MM:SSZ", or with ".mmm" when not a whole second */
		CHECK(n == (ms % 1000 != 0 ? 24 : 20));
		CHECK(strlen(out) == (size_t) n);
		CHECK(out[n - 1] == 'Z');
		CHECK(extjson_parse_iso8601(out, (size_t) n, &back));
		CHECK(back == ms);
	}
	free(out);
}

/* Does s[0..len) have the shape of the to-string output? */
static bool
decimal_text_ok(const char *s, size_t len)
{
	size_t		i = 0;
	size_t		digits = 0;

	if (len == 3 && memcmp(s, "NaN", 3) == 0)
		return true;
	if (i < len && s[i] == '-')
		i++;
	if (len - i == 8 && memcmp(s + i, "Infinity", 8) == 0)
		return true;
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++, digits++;
	if (digits == 0)
		return false;
	if (i < len && s[i] == '.')
	{
		size_t		frac = 0;

		i++;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++, frac++;
		if (frac == 0)
			return false;
	}
	if (i < len && s[i] == 'E')
	{
		size_t		edigits = 0;

		i++;
		if (i >= len || (s[i] != '+' && s[i] != '-'))
			return false;
		i++;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++, edigits++;
		if (edigits == 0)
			return false;
	}
	return i == len;
}

/*
 * The to-string text of (low, high) must parse back to the value, in its
 * canonical encoding: one NaN, infinities without payload, and a
 * coefficient above 10^34 - 1 (which the "11" combination always implies)
 * read as zero with the same exponent.
 */
static void
check_decimal128(uint64_t low, uint64_t high)
{
	char	   *out = xmalloc(DECIMAL128_STRING_SIZE);
	int			n = decimal128_to_string(low, high, out);
	uint64_t	sign = high & (UINT64_C(1) << 63);
	unsigned	combination = (unsigned) (high >> 58) & 0x1F;
	uint64_t	want_low;
	uint64_t	want_high;
	uint64_t	got_low = 0;
	uint64_t	got_high = 0;
	bool		parsed;

	CHECK(n > 0 && n < DECIMAL128_STRING_SIZE);
	CHECK(strlen(out) == (size_t) n);
	CHECK(decimal_text_ok(out, (size_t) n));

	if (combination == 0x1F)
	{
		want_low = 0;
		want_high = UINT64_C(0x7C00000000000000);
	}
	else if (combination == 0x1E)
	{
		want_low = 0;
		want_high = sign | UINT64_C(0x7800000000000000);
	}
	else if ((combination >> 3) == 3)
	{
		uint64_t	biased = (high >> 47) & 0x3FFF;

		/*
		 * The "11" form's exponent field reaches 16383, past the largest
		 * biased exponent 12287; the from-string rules clamp a zero's
		 * exponent into range.
		 */
		if (biased > 12287)
			biased = 12287;
		want_low = 0;
		want_high = sign | (biased << 49);
	}
	else
	{
		uint64_t	chigh = high & UINT64_C(0x1FFFFFFFFFFFF);

		if (chigh > UINT64_C(0x1ED09BEAD87C0) ||
			(chigh == UINT64_C(0x1ED09BEAD87C0) && low > UINT64_C(0x378D8E63FFFFFFFF)))
		{
			want_low = 0;
			want_high = high & ~UINT64_C(0x1FFFFFFFFFFFF);
		}
		else
		{
			want_low = low;
			want_high = high;
		}
	}

	parsed = decimal128_parse(out, (size_t) n, &got_low, &got_high);
	if (!parsed || got_low != want_low || got_high != want_high)
	{
		fprintf(stderr, "decimal128 %016llx %016llx -> \"%s\" -> %s %016llx %016llx, want %016llx %016llx\n",
				(unsigned long long) high, (unsigned long long) low, out,
				parsed ? "parsed" : "not parsed",
				(unsigned long long) got_high, (unsigned long long) got_low,
				(unsigned long long) want_high, (unsigned long long) want_low);
		CHECK(!"decimal128 text does not parse back to the value");
	}
	free(out);
}

/* ----------------------------------------------------------------------
 * Validation
 * ---------------------------------------------------------------------- */

typedef struct Hook
{
	int			calls;
	int			deepest;		/* -1 before the first call */
	int			refuse_above;	/* refuse depths above this; -1: never */
} Hook;

static bool
enter_hook(void *arg, int depth)
{
	Hook	   *h = arg;

	CHECK(depth >= 0 && depth <= MAX_DEPTH);
	h->calls++;
	if (depth > h->deepest)
		h->deepest = depth;
	return h->refuse_above < 0 || depth <= h->refuse_above;
}

static void
hook_init(Hook *h, int refuse_above)
{
	h->calls = 0;
	h->deepest = -1;
	h->refuse_above = refuse_above;
}

/* The error of a rejected input of len bytes: in bounds and printable */
static void
check_error(const BsonReadError *err, size_t len)
{
	size_t		mlen;

	CHECK(err->offset <= len);
	CHECK(len == 0 || err->offset < len);
	CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
	mlen = strlen(err->message);
	CHECK(mlen > 0);
	CHECK(err->message[mlen - 1] != '.');
	for (size_t i = 0; i < mlen; i++)
		CHECK(err->message[i] >= 0x20 && err->message[i] < 0x7F);
}

/* The tick hook: counts calls, which must be one per BSONR_TICK elements */
static size_t ticks;

static void
tick_hook(void *arg)
{
	(void) arg;
	ticks++;
}

/*
 * bson_read_validate with the fuzzer's limits; checks that the answer does not
 * depend on whether an error struct is passed, and the error when there is
 * one.  *hook gets the enter calls.
 */
static bool
validate(const uint8_t *data, size_t len, Hook *hook, BsonReadError *err)
{
	BsonReadLimits limits = {MAX_DEPTH, enter_hook, hook, tick_hook};
	Hook		again;
	BsonReadLimits limits2 = {MAX_DEPTH, enter_hook, &again, NULL};
	bool		ok;

	hook_init(hook, -1);
	hook_init(&again, -1);
	memset(err, 0xFF, sizeof(*err));	/* the message must get its NUL */
	ok = bson_read_validate(data, len, &limits, err);
	CHECK(bson_read_validate(data, len, &limits2, NULL) == ok);
	CHECK(again.calls == hook->calls);
	if (!ok)
		check_error(err, len);
	return ok;
}

/* ----------------------------------------------------------------------
 * The walk over an accepted document
 * ---------------------------------------------------------------------- */

typedef struct Walk
{
	const uint8_t *base;		/* the validated input, for offsets */
	int			documents;		/* documents and arrays entered, scopes too */
	int			deepest;
	size_t		deepest_at;		/* offset of the first document that deep */
} Walk;

static void walk_document(const uint8_t *doc, const uint8_t *limit, int depth,
						  Walk *w);

/* The current element of it, whose value is size bytes, in a document at
 * depth depth */
static void
check_element(const BsonIter *it, size_t size, int depth, Walk *w)
{
	const uint8_t *v = it->value;

	switch (it->type)
	{
		case BSON_TYPE_DOUBLE:
			{
				double		d = bson_iter_double(it);
				uint64_t	bits;

				CHECK(size == 8);
				memcpy(&bits, &d, sizeof(bits));
				CHECK(bits == bsonr_u64(v));
				break;
			}
		case BSON_TYPE_STRING:
		case BSON_TYPE_CODE:
		case BSON_TYPE_SYMBOL:
			{
				size_t		slen;
				const char *s = bson_iter_utf8(it, &slen);

				CHECK(s == (const char *) v + 4);
				CHECK(size == slen + 5);
				CHECK(s[slen] == '\0');
				check_utf8((const uint8_t *) s, slen);
				break;
			}
		case BSON_TYPE_DOCUMENT:
		case BSON_TYPE_ARRAY:
			CHECK(size == bsonr_u32(v));
			walk_document(v, it->end, depth + 1, w);
			break;
		case BSON_TYPE_BINARY:
			{
				uint8_t		subtype;
				size_t		blen;
				const uint8_t *p = bson_read_binary(it, &subtype, &blen);

				CHECK(subtype == v[4]);
				if (subtype == 2)
				{
					CHECK(p == v + 9);
					CHECK(blen + 9 == size);
					CHECK(bsonr_u32(v + 5) == blen);
				}
				else
				{
					CHECK(p == v + 5);
					CHECK(blen + 5 == size);
				}
				check_base64(p, blen);
				check_hex(p, blen);
				break;
			}
		case BSON_TYPE_UNDEFINED:
		case BSON_TYPE_NULL:
		case BSON_TYPE_MINKEY:
		case BSON_TYPE_MAXKEY:
			CHECK(size == 0);
			break;
		case BSON_TYPE_OBJECTID:
			CHECK(size == 12);
			check_objectid(v);
			break;
		case BSON_TYPE_BOOL:
			CHECK(size == 1);
			CHECK(v[0] <= 1);
			break;
		case BSON_TYPE_DATETIME:
			CHECK(size == 8);
			CHECK((uint64_t) bson_iter_int64(it) == bsonr_u64(v));
			check_iso8601(bson_iter_int64(it));
			break;
		case BSON_TYPE_REGEX:
			{
				const char *pattern;
				const char *options;
				size_t		plen;
				size_t		olen;

				bson_read_regex(it, &pattern, &options);
				plen = strlen(pattern);
				olen = strlen(options);
				CHECK(pattern == (const char *) v);
				CHECK(options == pattern + plen + 1);
				CHECK(plen + 1 + olen + 1 == size);
				check_utf8((const uint8_t *) pattern, plen);
				check_utf8((const uint8_t *) options, olen);
				break;
			}
		case BSON_TYPE_DBPOINTER:
			{
				size_t		nslen;
				const uint8_t *oid;
				const char *ns = bson_read_dbpointer(it, &nslen, &oid);

				CHECK(ns == (const char *) v + 4);
				CHECK(ns[nslen] == '\0');
				CHECK(oid == v + 4 + nslen + 1);
				CHECK(oid + 12 == v + size);
				check_utf8((const uint8_t *) ns, nslen);
				check_objectid(oid);
				break;
			}
		case BSON_TYPE_CODE_W_SCOPE:
			{
				size_t		codelen;
				const uint8_t *scope;
				const char *code = bson_read_code_w_scope(it, &codelen, &scope);

				CHECK(size == bsonr_u32(v));
				CHECK(size >= 14);
				CHECK(code == (const char *) v + 8);
				CHECK(bsonr_u32(v + 4) == codelen + 1);
				CHECK(code[codelen] == '\0');
				check_utf8((const uint8_t *) code, codelen);
				/* the scope is inside the element and ends exactly with it */
				CHECK(scope == v + 8 + codelen + 1);
				CHECK(scope + BSON_MIN_DOCUMENT_SIZE <= v + size);
				CHECK(scope + bsonr_u32(scope) == v + size);
				walk_document(scope, v + size, depth + 1, w);
				break;
			}
		case BSON_TYPE_INT32:
			CHECK(size == 4);
			CHECK((uint32_t) bson_iter_int32(it) == bsonr_u32(v));
			break;
		case BSON_TYPE_TIMESTAMP:
			{
				uint32_t	t;
				uint32_t	i;

				CHECK(size == 8);
				bson_iter_timestamp(it, &t, &i);
				CHECK(i == bsonr_u32(v));
				CHECK(t == bsonr_u32(v + 4));
				break;
			}
		case BSON_TYPE_INT64:
			CHECK(size == 8);
			CHECK((uint64_t) bson_iter_int64(it) == bsonr_u64(v));
			break;
		case BSON_TYPE_DECIMAL128:
			{
				uint64_t	low;
				uint64_t	high;

				CHECK(size == 16);
				bson_iter_decimal128(it, &low, &high);
				CHECK(low == bsonr_u64(v));
				CHECK(high == bsonr_u64(v + 8));
				check_decimal128(low, high);
				break;
			}
		default:
			CHECK(!"the validator accepted an unknown element type");
	}
}

/*
 * Walk the document at doc, which must lie within [doc, limit), at depth
 * depth: every element is checked, and the sizes must add up.
 */
static void
walk_document(const uint8_t *doc, const uint8_t *limit, int depth, Walk *w)
{
	size_t		len;
	size_t		sum = 4 + 1;	/* the length header and the final NUL */
	const uint8_t *expect = doc + 4;
	BsonIter	it;

	CHECK(limit - doc >= BSON_MIN_DOCUMENT_SIZE);
	len = bsonr_u32(doc);
	CHECK(len >= BSON_MIN_DOCUMENT_SIZE && len <= (size_t) (limit - doc));
	CHECK(doc[len - 1] == 0);
	CHECK(depth <= MAX_DEPTH);
	w->documents++;
	if (depth > w->deepest)
	{
		/* a pre-order walk, like the validator's: the first one found */
		w->deepest = depth;
		w->deepest_at = (size_t) (doc - w->base);
	}

	bson_iter_init(&it, doc);
	CHECK(it.end == doc + len - 1);
	while (bson_iter_next(&it))
	{
		size_t		size;

		CHECK(it.pos == expect);
		CHECK(it.pos < it.end);
		CHECK(it.type == it.pos[0]);
		CHECK(it.key == (const char *) it.pos + 1);
		CHECK(strlen(it.key) == it.keylen);
		CHECK(it.value == it.pos + 2 + it.keylen);
		CHECK(it.value <= it.end);
		check_utf8((const uint8_t *) it.key, it.keylen);
		size = bson_read_value_size(it.type, it.value);
		CHECK(size <= (size_t) (it.end - it.value));
		check_element(&it, size, depth, w);
		sum += 2 + it.keylen + size;
		expect = it.value + size;
	}
	CHECK(sum == len);
	CHECK(expect == it.end);
	/* and the walk stays finished */
	CHECK(!bson_iter_next(&it));
}

/*
 * data[0..len) was accepted by validate(), whose hook saw *hook: walk it and
 * hold it to everything that follows from being valid.
 */
static void
check_accepted(const uint8_t *data, size_t len, const Hook *hook)
{
	Walk		w = {data, 0, -1, 0};
	BsonReadError err;

	CHECK(len >= BSON_MIN_DOCUMENT_SIZE);
	CHECK(bsonr_u32(data) == len);
	CHECK(bson_read_document_length(data, len, &err) == len);

	walk_document(data, data + len, 0, &w);
	CHECK(w.documents == hook->calls);
	CHECK(w.deepest == hook->deepest);

	/* no limits at all: still valid (nesting is at most MAX_DEPTH here) */
	CHECK(bson_read_validate(data, len, NULL, NULL));

	/*
	 * One level less, by max_depth and by the hook: rejected at the first
	 * document that deep.  (The wording of messages is left to the unit
	 * tests; here only where.)
	 */
	if (w.deepest > 0)
	{
		BsonReadLimits capped = {w.deepest - 1, NULL, NULL, NULL};
		Hook		h;
		BsonReadLimits refusing = {0, enter_hook, &h, NULL};

		if (w.deepest > 1)
		{
			CHECK(!bson_read_validate(data, len, &capped, &err));
			check_error(&err, len);
			CHECK(err.offset == w.deepest_at);
		}
		hook_init(&h, w.deepest - 1);
		CHECK(!bson_read_validate(data, len, &refusing, &err));
		check_error(&err, len);
		CHECK(err.offset == w.deepest_at);
		CHECK(h.deepest == w.deepest);
	}
	{
		BsonReadLimits exact = {w.deepest > 0 ? w.deepest : 0, NULL, NULL, NULL};

		CHECK(bson_read_validate(data, len, &exact, NULL));
	}
}

/*
 * An accepted document of len bytes: every strict prefix is rejected at its
 * length header, and one more byte is reported as trailing.
 */
static void
check_prefixes_and_trailer(const uint8_t *data, size_t len)
{
	BsonReadError err;
	uint8_t    *more;

	for (size_t k = 0; k < len; k++)
	{
		Hook		h;

		if (len <= PREFIX_COPY_MAX)
		{
			uint8_t    *copy = xmalloc(k);

			memcpy(copy, data, k);
			CHECK(!validate(copy, k, &h, &err));
			free(copy);
		}
		else
			CHECK(!validate(data, k, &h, &err));
		CHECK(err.offset == 0);
	}

	more = xmalloc(len + 1);
	memcpy(more, data, len);
	more[len] = 0;
	{
		Hook		h;

		CHECK(!validate(more, len + 1, &h, &err));
		CHECK(err.offset == len);
	}
	free(more);
}

/*
 * data[0..cut) with its header rewritten to cut and its last byte made the
 * terminating NUL, from an exact-size copy.
 */
static void
check_cut(const uint8_t *data, size_t cut)
{
	uint8_t    *copy = xmalloc(cut);
	BsonReadError err;
	Hook		h;

	memcpy(copy, data, cut);
	copy[0] = (uint8_t) cut;
	copy[1] = (uint8_t) (cut >> 8);
	copy[2] = (uint8_t) (cut >> 16);
	copy[3] = (uint8_t) (cut >> 24);
	copy[cut - 1] = 0;
	if (validate(copy, cut, &h, &err))
		check_accepted(copy, cut, &h);
	free(copy);
}

/* ----------------------------------------------------------------------
 * The entry point
 * ---------------------------------------------------------------------- */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	BsonReadError err;
	Hook		hook;
	bool		ok;

	/* 1. the text helpers on the raw bytes */
	check_utf8_differential(data, size);
	check_base64(data, size);
	check_hex(data, size < 64 ? size : 64);
	if (size >= 8)
	{
		uint64_t	first = bsonr_u64(data);
		uint64_t	last = bsonr_u64(data + size - 8);

		check_iso8601((int64_t) first);
		check_iso8601((int64_t) last);
		/* and the same folded into the range that is formatted */
		check_iso8601((int64_t) (first % (uint64_t) (ISO8601_MAX_MS + 1)));
		check_iso8601((int64_t) (last % (uint64_t) (ISO8601_MAX_MS + 1)));
	}
	if (size >= 16)
	{
		check_decimal128(bsonr_u64(data), bsonr_u64(data + 8));
		check_decimal128(bsonr_u64(data + size - 16), bsonr_u64(data + size - 8));
	}

	/* 2. and 3. the input as one document */
	ok = validate(data, size, &hook, &err);
	if (ok)
	{
		check_accepted(data, size, &hook);
		check_prefixes_and_trailer(data, size);
	}
	else if (size >= BSON_MIN_DOCUMENT_SIZE && bsonr_u32(data) == size)
	{
		/* a header that fits: bson_read_document_length must take it */
		CHECK(bson_read_document_length(data, size, NULL) == size);
	}

	/* 4. truncations with the header rewritten */
	if (size > BSON_MIN_DOCUMENT_SIZE)
	{
		if (size - 1 <= ALL_CUTS_MAX)
		{
			for (size_t cut = BSON_MIN_DOCUMENT_SIZE; cut < size; cut++)
				check_cut(data, cut);
		}
		else
		{
			for (size_t i = 0; i < SAMPLED_CUTS; i++)
				check_cut(data, BSON_MIN_DOCUMENT_SIZE + i * (size - BSON_MIN_DOCUMENT_SIZE) / SAMPLED_CUTS);
			for (size_t cut = size - 8; cut < size; cut++)
				check_cut(data, cut);
		}
	}

	/* 5. the input as a stream of documents */
	{
		size_t		off = 0;
		int			count = 0;

		while (off < size && count < 64)
		{
			size_t		n = bson_read_document_length(data + off, size - off, &err);

			if (n == 0)
			{
				check_error(&err, size - off);
				CHECK(err.offset == 0);
				break;
			}
			CHECK(n >= BSON_MIN_DOCUMENT_SIZE && n <= size - off);
			CHECK(n == bsonr_u32(data + off));
			if (!(off == 0 && n == size))	/* that one was step 2 */
			{
				if (validate(data + off, n, &hook, &err))
					check_accepted(data + off, n, &hook);
			}
			off += n;
			count++;
		}
	}
	return 0;
}
