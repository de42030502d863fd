/*
 * bson_reader.h
 *		Reading BSON: strict validation, then a walk over validated bytes.
 *
 * Plain C99 with no PostgreSQL headers, so that the same code runs inside the
 * server (from_bson, bson_to_json, bson_is_valid, bson_documents) and in the
 * libFuzzer harness (fuzz/).  The two steps are kept apart on purpose:
 *
 *   bson_read_validate()  checks every rule of the BSON specification once, with
 *                    every read bounds-checked, and says at which byte
 *                    offset and why a document is wrong;
 *   BsonIter         walks a document that bson_read_validate() accepted, so it
 *                    does no checks of its own and stays simple and fast.
 *
 * Never walk bytes that were not validated: the iterator trusts lengths.
 */
#ifndef BSON_READER_H
#define BSON_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bson_types.h"


/* Why a document was rejected: where (byte offset from the start of the
 * input) and what, as a sentence fragment without a final period. */
typedef struct BsonReadError
{
	size_t		offset;
	char		message[160];
} BsonReadError;

/*
 * Hooks for the host: enter() runs once for every nested document or array
 * entered, with its depth (the top-level document is depth 0); it may stop
 * the validation by returning false (the fuzzer's depth cap), or never
 * return (PostgreSQL's check_stack_depth()).  NULL hooks: no depth limit
 * other than max_depth.
 */
typedef struct BsonReadLimits
{
	int			max_depth;		/* 0: no limit of our own */
	bool		(*enter) (void *arg, int depth);
	void	   *arg;
	/* called every BSONR_TICK elements (CHECK_FOR_INTERRUPTS), or NULL */
	void		(*tick) (void *arg);
} BsonReadLimits;

#define BSONR_TICK 4096

/*
 * Is data[0..len) exactly one valid BSON document, with nothing after it?
 * Checks: the total and every nested length (at least 5, within its parent,
 * ending in NUL exactly where the length says), every element type known,
 * every key and C string NUL-terminated within bounds and valid UTF-8
 * (no overlong forms, no surrogates, nothing above U+10FFFF), string lengths
 * at least 1 with the NUL at the end (embedded NULs allowed in string values,
 * as BSON carries their length), booleans 0 or 1, binary lengths not
 * negative and subtype 2's inner length consistent, code-with-scope lengths
 * consistent, and nesting within limits.  On failure returns false and fills
 * *err (if not NULL) with the first problem found.
 */
extern bool bson_read_validate(const uint8_t *data, size_t len,
						  const BsonReadLimits *limits, BsonReadError *err);

/*
 * The length of the first document of data[0..len), for splitting a stream
 * of documents (a .bson file): 0 and *err if its length header is missing,
 * below 5 or beyond len.  Does not validate the document itself.
 */
extern size_t bson_read_document_length(const uint8_t *data, size_t len,
								   BsonReadError *err);

/* Little-endian reads, no alignment assumed */
static inline uint32_t
bsonr_u32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) |
		((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static inline uint64_t
bsonr_u64(const uint8_t *p)
{
	return (uint64_t) bsonr_u32(p) | ((uint64_t) bsonr_u32(p + 4) << 32);
}

/*
 * A walk over the elements of one validated document or array.
 * After bson_iter_next() returns true, type, key/keylen and value describe
 * the current element; value points at the value's first byte.
 */
typedef struct BsonIter
{
	const uint8_t *pos;			/* next element's type byte */
	const uint8_t *end;			/* the document's terminating NUL */
	uint8_t		type;
	const char *key;			/* NUL-terminated */
	size_t		keylen;
	const uint8_t *value;
} BsonIter;

/* Start a walk over the validated document at doc (its length header). */
static inline void
bson_iter_init(BsonIter *it, const uint8_t *doc)
{
	it->pos = doc + 4;
	it->end = doc + bsonr_u32(doc) - 1;
	it->type = 0;
	it->key = NULL;
	it->keylen = 0;
	it->value = NULL;
}

/* The size in bytes of a validated value of type type at v. */
extern size_t bson_read_value_size(uint8_t type, const uint8_t *v);

static inline bool
bson_iter_next(BsonIter *it)
{
	const uint8_t *p;

	if (it->value != NULL)
		it->pos = it->value + bson_read_value_size(it->type, it->value);
	if (it->pos >= it->end)
		return false;
	it->type = it->pos[0];
	it->key = (const char *) it->pos + 1;
	for (p = it->pos + 1; *p; p++)
		;
	it->keylen = (size_t) (p - (it->pos + 1));
	it->value = p + 1;
	return true;
}

/* Accessors for the current element of a walk (validated data only) */

/* string, code, symbol: the text without its NUL, *len bytes */
static inline const char *
bson_iter_utf8(const BsonIter *it, size_t *len)
{
	*len = bsonr_u32(it->value) - 1;
	return (const char *) it->value + 4;
}

static inline int32_t
bson_iter_int32(const BsonIter *it)
{
	return (int32_t) bsonr_u32(it->value);
}

static inline int64_t
bson_iter_int64(const BsonIter *it)
{
	return (int64_t) bsonr_u64(it->value);
}

static inline double
bson_iter_double(const BsonIter *it)
{
	uint64_t	bits = bsonr_u64(it->value);
	double		d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* binary: payload and subtype (for subtype 2, the payload after its
 * inner length, as readers show it) */
extern const uint8_t *bson_read_binary(const BsonIter *it, uint8_t *subtype,
									   size_t *len);

/* regex: pattern and options, both NUL-terminated */
extern void bson_read_regex(const BsonIter *it, const char **pattern,
							const char **options);

/* dbpointer: the namespace (*len bytes, NUL-terminated) and the 12-byte id */
extern const char *bson_read_dbpointer(const BsonIter *it, size_t *len,
									   const uint8_t **oid);

/* code with scope: the code (*len bytes) and the scope document */
extern const char *bson_read_code_w_scope(const BsonIter *it, size_t *len,
										  const uint8_t **scope);

/* timestamp: t (seconds, the high word) and i (the increment) */
static inline void
bson_iter_timestamp(const BsonIter *it, uint32_t *t, uint32_t *i)
{
	*i = bsonr_u32(it->value);
	*t = bsonr_u32(it->value + 4);
}

/* decimal128: the two 64-bit halves, little-endian order on the wire */
static inline void
bson_iter_decimal128(const BsonIter *it, uint64_t *low, uint64_t *high)
{
	*low = bsonr_u64(it->value);
	*high = bsonr_u64(it->value + 8);
}

/*
 * The offset of the first byte of s[0..len) that is not part of valid UTF-8,
 * or len if all of it is valid.  NUL bytes count as valid.
 */
extern size_t bson_read_utf8_valid_prefix(const uint8_t *s, size_t len);

#endif							/* BSON_READER_H */
