/*
 * bson_encoding.h
 *		Server encoding to UTF-8, for strings bound for BSON.
 *
 * BSON strings and keys are UTF-8.  Every input path hands the writer text in
 * the server encoding; this module knows what that encoding is and how to turn
 * it into UTF-8:
 *   - UTF8: nothing to do, jsonb and text are valid UTF-8 already;
 *   - SQL_ASCII: bytes above 0x7F have no declared encoding, so they are
 *     passed through only if they happen to form valid UTF-8;
 *   - any other encoding: ASCII passes through, the rest goes through the
 *     default conversion procedure, looked up once per session.
 */
#ifndef BSON_ENCODING_H
#define BSON_ENCODING_H

#include "bson_compat.h"

typedef enum BsonEncodingKind
{
	BSON_ENC_UTF8,				/* copy as stored */
	BSON_ENC_SQL_ASCII,			/* check that non-ASCII bytes are UTF-8 */
	BSON_ENC_CONVERT			/* convert non-ASCII with conv_proc */
} BsonEncodingKind;

typedef struct BsonEncoding
{
	BsonEncodingKind kind;
	int			server_encoding;	/* GetDatabaseEncoding() */
	FmgrInfo	conv_proc;		/* server encoding -> UTF8, if kind is CONVERT */
	bool		from_utf8_valid;	/* from_utf8_proc looked up (readers) */
	FmgrInfo	from_utf8_proc; /* UTF8 -> server encoding, if kind is CONVERT */
} BsonEncoding;

/* The session's encoding, looked up on first use and cached. */
extern const BsonEncoding *bson_server_encoding(void);

/*
 * Length of the leading run of ASCII bytes (high bit clear) of s[0..len).
 * Eight bytes at a time; NUL counts as ASCII here.
 */
static inline int
bson_ascii_prefix(const char *s, int len)
{
	int			i = 0;

	for (; i + 8 <= len; i += 8)
	{
		uint64		chunk;

		memcpy(&chunk, s + i, sizeof(chunk));
		if (chunk & UINT64CONST(0x8080808080808080))
			break;
	}
	for (; i < len; i++)
	{
		if ((unsigned char) s[i] & 0x80)
			break;
	}
	return i;
}

/*
 * Convert src[0..len), which contains no NUL byte, from the server encoding
 * to UTF-8 at dest, which has room for len * MAX_CONVERSION_GROWTH + 1 bytes.
 * Returns the number of bytes written (not counting the NUL the conversion
 * leaves after them), or -1 if some character has no UTF-8 equivalent or the
 * input is not valid in the server encoding; *bad_offset then tells where.
 * Only for kind BSON_ENC_CONVERT.
 */
extern int	bson_convert_to_utf8(const BsonEncoding *enc, const char *src,
								 int len, char *dest, int *bad_offset);

/*
 * The other way, for the readers: src[0..len), valid UTF-8 without NUL, in
 * the server encoding, palloc'd and NUL-terminated; NULL if some character
 * has no equivalent, *bad_offset then telling where.  Only for kind
 * BSON_ENC_CONVERT; the procedure is looked up on first use.
 */
extern char *bson_convert_from_utf8(const BsonEncoding *enc, const char *src,
									int len, int *bad_offset);

/* "0xc3 0x28": bytes for an error detail */
extern char *bson_hex_bytes(const char *s, int len);

/*
 * For SQL_ASCII: the offset of the first byte of s[0..len) that does not
 * belong to valid UTF-8, or -1 when all of it is valid.  NUL bytes are
 * accepted (BSON string values may hold them; keys are checked separately).
 */
extern int	bson_invalid_utf8_offset(const char *s, int len);

#endif							/* BSON_ENCODING_H */
