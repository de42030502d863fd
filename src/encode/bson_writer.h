/*
 * bson_writer.h
 *		The one BSON writer that every input path of bson_out goes through.
 *
 * The writer fills a single palloc'd buffer that is returned as the bytea
 * itself: VARHDRSZ bytes are reserved at the front and the varlena header is
 * set by bson_writer_finish().  Documents and arrays are opened by reserving
 * their int32 length and closed by writing the terminating 0x00 and
 * back-patching the length, so nothing is ever copied twice.
 *
 * Writing an element is two calls, the element header then the value:
 *
 *		bson_key(w, BSON_TYPE_INT32, key, keylen, 4);	(or bson_index_key)
 *		bson_put_int32(w, 42);
 *
 * The header call guarantees room for the number of value bytes it is told
 * ("valsize"), so the bson_put_* calls that follow do no capacity checks of
 * their own.  Only bson_put_string checks, because a string that needs
 * encoding conversion can grow.  The bson_append_* wrappers do both steps for
 * the common cases.
 *
 * Keys and string values are given in the server encoding; the writer emits
 * UTF-8 (see bson_encoding.h).  Short pure-ASCII keys and strings take the
 * "basic latin" fast path: a tight byte loop into the already reserved room,
 * with no call, no capacity check and no conversion.  Anything longer or not
 * ASCII takes the general path, which produces the same bytes.
 */
#ifndef BSON_WRITER_H
#define BSON_WRITER_H

#include "bson_compat.h"
#include "bson_encoding.h"
#include "bson_types.h"
#include "error_path.h"

#include "lib/stringinfo.h"
#include "utils/memutils.h"
#include "port/pg_bswap.h"


/*
 * Longest key or string, in bytes, that takes the basic-latin fast path.
 * js-bson uses 25 for the same purpose; see BENCHMARKS.md for how this value
 * was checked.
 */
#define BSON_ASCII_FAST_MAX		25

/* Value bytes that a container header must leave room for: its length. */
#define BSON_CONTAINER_VALSIZE	4

/*
 * Value bytes that a header reserves when the walker only learns the value's
 * type after the key (bson_key_deferred): room for any fixed-size value, the
 * largest being a decimal128.  Code that writes such a value without a
 * reserve of its own (the Extended JSON wrappers) relies on this much room;
 * the bson_put_* functions assert it.
 */
#define BSON_SCALAR_VALSIZE		16

/*
 * Where a failing key or string came from, for error details.  Input walkers
 * set this so that an error raised deep in the writer can name the path
 * ("orders[2].at") without the hot path having to track it: the callback is
 * only called once an error is certain, with a pointer to the offending input.
 */
typedef void (*BsonLocateCallback) (void *arg, const char *input, StringInfo path);

typedef struct BsonWriter
{
	char	   *buf;			/* palloc'd; bytea header, then BSON */
	char	   *pos;			/* next byte to write */
	char	   *end;			/* end of allocated room */
	const BsonEncoding *enc;	/* server encoding -> UTF-8 */
	bool		ascii_fast_path;	/* bson_out.ascii_fast_path */
	Size		max_size;		/* bson_out.max_document_size */
	BsonLocateCallback locate;	/* may be NULL */
	void	   *locate_arg;
} BsonWriter;

/* Settings, defined in bson_out.c */
extern bool bson_ascii_fast_path_enabled;	/* bson_out.ascii_fast_path */
extern int	bson_max_document_size; /* bson_out.max_document_size, bytes */

/* The largest BSON a bytea can hold: palloc's limit less the header. */
#define BSON_MAX_DOCUMENT_SIZE	((int) (MaxAllocSize - VARHDRSZ))

/* bson_writer.c */
extern void bson_writer_init(BsonWriter *w, Size estimate);
extern bytea *bson_writer_finish(BsonWriter *w);
extern void bson_writer_grow(BsonWriter *w, Size needed);
extern void bson_key_general(BsonWriter *w, const char *key, int keylen, Size valsize);
extern void bson_string_general(BsonWriter *w, const char *s, int len);
extern void bson_describe_location(BsonWriter *w, const char *input, StringInfo out);


/* Make sure n more bytes fit. */
static inline void
bson_reserve(BsonWriter *w, Size n)
{
	if (unlikely((Size) (w->end - w->pos) < n))
		bson_writer_grow(w, n);
}

/* The room a bson_put_* relies on: reserved by the header before it. */
#define BSON_ASSERT_ROOM(w, n)	Assert((Size) ((w)->end - (w)->pos) >= (Size) (n))

/* Little-endian stores into room already reserved. */
static inline void
bson_put_uint32_at(char *p, uint32 v)
{
#ifdef WORDS_BIGENDIAN
	v = pg_bswap32(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline void
bson_put_uint64_at(char *p, uint64 v)
{
#ifdef WORDS_BIGENDIAN
	v = pg_bswap64(v);
#endif
	memcpy(p, &v, sizeof(v));
}

/*
 * Copy a short string (at most BSON_ASCII_FAST_MAX bytes) if it is pure
 * ASCII without NUL; returns false, having written nothing that counts, if it
 * is not.  The caller has reserved len bytes at dst.
 *
 * Word at a time, never reading or writing outside [0, len): 8-byte words,
 * the last one overlapping its predecessor; for 2 to 7 bytes, two
 * overlapping 4- or 2-byte words.  For every byte c, c | (c - 1) has its high bit set
 * exactly when c is NUL or above 0x7F; done on a whole word, a borrow out of
 * a byte can only come from a NUL byte, so the test stays exact.
 */
#define BSON_BYTES_01	UINT64CONST(0x0101010101010101)
#define BSON_BYTES_80	UINT64CONST(0x8080808080808080)

static pg_attribute_always_inline bool
bson_copy_basic_latin(char *dst, const char *src, int len)
{
	uint64		bad = 0;

	if (len >= 8)
	{
		uint64		v;
		int			i;

		for (i = 0; i + 8 <= len; i += 8)
		{
			memcpy(&v, src + i, 8);
			memcpy(dst + i, &v, 8);
			bad |= v | (v - BSON_BYTES_01);
		}
		if (i < len)
		{
			memcpy(&v, src + len - 8, 8);
			memcpy(dst + len - 8, &v, 8);
			bad |= v | (v - BSON_BYTES_01);
		}
	}
	else if (len >= 4)
	{
		uint32		a;
		uint32		b;

		memcpy(&a, src, 4);
		memcpy(&b, src + len - 4, 4);
		memcpy(dst, &a, 4);
		memcpy(dst + len - 4, &b, 4);
		bad = (uint32) (a | (a - 0x01010101)) | (uint32) (b | (b - 0x01010101));
	}
	else if (len >= 2)
	{
		uint16		a;
		uint16		b;

		memcpy(&a, src, 2);
		memcpy(&b, src + len - 2, 2);
		memcpy(dst, &a, 2);
		memcpy(dst + len - 2, &b, 2);
		bad = (uint16) (a | (a - 0x0101)) | (uint16) (b | (b - 0x0101));
	}
	else if (len == 1)
	{
		unsigned char c = (unsigned char) src[0];

		dst[0] = (char) c;
		bad = c | (unsigned char) (c - 1);
	}
	return (bad & BSON_BYTES_80) == 0;
}

/*
 * Element header whose type is decided after the key is written (an input
 * walker may only know the BSON type once it has looked at the value): writes
 * a placeholder type byte and the key (a C string, converted to UTF-8),
 * leaves room for valsize value bytes, and returns where the type byte is.
 * The caller stores the type there before it reserves anything more.
 */
static inline char *
bson_key_deferred(BsonWriter *w, const char *key, int keylen, Size valsize)
{
	char	   *type_at;
	Size		type_off;

	if (w->ascii_fast_path && keylen <= BSON_ASCII_FAST_MAX)
	{
		bson_reserve(w, keylen + 2 + valsize);
		type_at = w->pos;
		if (likely(bson_copy_basic_latin(type_at + 1, key, keylen)))
		{
			type_at[1 + keylen] = '\0';
			w->pos += keylen + 2;
			return type_at;
		}
	}
	else
		bson_reserve(w, 1);
	/* the general path may move the buffer: remember the type byte's offset */
	type_off = w->pos - w->buf;
	w->pos++;
	bson_key_general(w, key, keylen, valsize);
	return w->buf + type_off;
}

/* Element header: type byte and key, leaving room for valsize value bytes. */
static inline void
bson_key(BsonWriter *w, uint8 type, const char *key, int keylen, Size valsize)
{
	*bson_key_deferred(w, key, keylen, valsize) = (char) type;
}

/* The same for an array element, whose key is its decimal index. */
static inline char *
bson_index_key_deferred(BsonWriter *w, uint32 index, Size valsize)
{
	char	   *type_at;
	char	   *p;

	bson_reserve(w, 12 + valsize);
	type_at = w->pos;
	p = type_at + 1;
	if (index < 10)
		*p++ = (char) ('0' + index);
	else
	{
		char		tmp[10];
		int			n = 0;

		do
		{
			tmp[n++] = (char) ('0' + index % 10);
			index /= 10;
		} while (index > 0);
		while (n > 0)
			*p++ = tmp[--n];
	}
	*p++ = '\0';
	w->pos = p;
	return type_at;
}

static inline void
bson_index_key(BsonWriter *w, uint8 type, uint32 index, Size valsize)
{
	*bson_index_key_deferred(w, index, valsize) = (char) type;
}

/* Values, written into room the header reserved. */
static inline void
bson_put_int32(BsonWriter *w, int32 v)
{
	BSON_ASSERT_ROOM(w, 4);
	bson_put_uint32_at(w->pos, (uint32) v);
	w->pos += 4;
}

static inline void
bson_put_int64(BsonWriter *w, int64 v)
{
	BSON_ASSERT_ROOM(w, 8);
	bson_put_uint64_at(w->pos, (uint64) v);
	w->pos += 8;
}

static inline void
bson_put_double(BsonWriter *w, double v)
{
	uint64		bits;

	BSON_ASSERT_ROOM(w, 8);
	memcpy(&bits, &v, sizeof(bits));
	bson_put_uint64_at(w->pos, bits);
	w->pos += 8;
}

static inline void
bson_put_bool(BsonWriter *w, bool v)
{
	BSON_ASSERT_ROOM(w, 1);
	*w->pos++ = v ? 1 : 0;
}

/* decimal128 as its two 64-bit halves (IEEE 754-2008 BID encoding) */
static inline void
bson_put_decimal128(BsonWriter *w, uint64 low, uint64 high)
{
	BSON_ASSERT_ROOM(w, 16);
	bson_put_uint64_at(w->pos, low);
	bson_put_uint64_at(w->pos + 8, high);
	w->pos += 16;
}

/*
 * String value: int32 byte count including the trailing NUL, UTF-8 bytes,
 * NUL.  Its header must have reserved 4 + len + 1 bytes; conversion may need
 * more, which the general path reserves itself.
 */
static inline void
bson_put_string(BsonWriter *w, const char *s, int len)
{
	if (w->ascii_fast_path && len <= BSON_ASCII_FAST_MAX &&
		bson_copy_basic_latin(w->pos + 4, s, len))
	{
		bson_put_uint32_at(w->pos, (uint32) len + 1);
		w->pos[4 + len] = '\0';
		w->pos += len + 5;
		return;
	}
	bson_string_general(w, s, len);
}

/*
 * A C string value (regular expression pattern and options): UTF-8 and its
 * NUL.  The caller has checked that s holds no NUL.
 */
static inline void
bson_put_cstring(BsonWriter *w, const char *s, int len)
{
	bson_key_general(w, s, len, 0);
}

/* Byte count a string value needs when no conversion grows it. */
#define BSON_STRING_VALSIZE(len) ((Size) (len) + 5)

/*
 * Open a document or array (the top-level document, or the value of an
 * element whose header was just written): reserves its length and returns
 * its offset, to be passed to bson_close.
 */
static inline Size
bson_open(BsonWriter *w)
{
	Size		start = w->pos - w->buf;

	bson_reserve(w, 4);
	w->pos += 4;
	return start;
}

/* Terminate the document or array opened at start and back-patch its length. */
static inline void
bson_close(BsonWriter *w, Size start)
{
	bson_reserve(w, 1);
	*w->pos++ = '\0';
	bson_put_uint32_at(w->buf + start, (uint32) ((w->pos - w->buf) - start));
}

/*
 * Bytes already in BSON form (elements written once by another writer and
 * repeated in several places), copied as they are.
 */
static inline void
bson_put_raw(BsonWriter *w, const char *bytes, Size len)
{
	bson_reserve(w, len);
	memcpy(w->pos, bytes, len);
	w->pos += len;
}

/* One-call forms, for producers that write a single element at a time. */
static inline void
bson_append_int32(BsonWriter *w, const char *key, int keylen, int32 v)
{
	bson_key(w, BSON_TYPE_INT32, key, keylen, 4);
	bson_put_int32(w, v);
}

static inline void
bson_append_int64(BsonWriter *w, const char *key, int keylen, int64 v)
{
	bson_key(w, BSON_TYPE_INT64, key, keylen, 8);
	bson_put_int64(w, v);
}

static inline void
bson_append_double(BsonWriter *w, const char *key, int keylen, double v)
{
	bson_key(w, BSON_TYPE_DOUBLE, key, keylen, 8);
	bson_put_double(w, v);
}

static inline void
bson_append_bool(BsonWriter *w, const char *key, int keylen, bool v)
{
	bson_key(w, BSON_TYPE_BOOL, key, keylen, 1);
	bson_put_bool(w, v);
}

static inline void
bson_append_null(BsonWriter *w, const char *key, int keylen)
{
	bson_key(w, BSON_TYPE_NULL, key, keylen, 0);
}

static inline void
bson_append_string(BsonWriter *w, const char *key, int keylen,
				   const char *s, int len)
{
	bson_key(w, BSON_TYPE_STRING, key, keylen, BSON_STRING_VALSIZE(len));
	bson_put_string(w, s, len);
}

static inline Size
bson_append_document_begin(BsonWriter *w, const char *key, int keylen)
{
	bson_key(w, BSON_TYPE_DOCUMENT, key, keylen, BSON_CONTAINER_VALSIZE);
	return bson_open(w);
}

static inline Size
bson_append_array_begin(BsonWriter *w, const char *key, int keylen)
{
	bson_key(w, BSON_TYPE_ARRAY, key, keylen, BSON_CONTAINER_VALSIZE);
	return bson_open(w);
}

#endif							/* BSON_WRITER_H */
