/*
 * error_path.h
 *		Where a value sits, in error messages: orders[2].at, or ["odd key"]
 *		where a key is not a plain identifier.  The one renderer that the
 *		encoders (jsonb, JSON text, rows) and the decoders all use.
 *
 * Walkers keep their own chain of where they are and hand each step, from
 * the outermost, to these functions.  A chain deeper than
 * BSON_PATH_DEPTH_MAX is shown by its innermost steps after "...", and a key
 * longer than BSON_PATH_KEY_MAX bytes by its start and "...".
 */
#ifndef ERROR_PATH_H
#define ERROR_PATH_H

#include "bson_compat.h"

#include "lib/stringinfo.h"

#define BSON_PATH_DEPTH_MAX	64
#define BSON_PATH_KEY_MAX	64

/* How a key's bytes are to be shown */
typedef enum BsonKeyText
{
	BSON_KEY_SERVER,			/* in the server encoding: as it is */
	BSON_KEY_SERVER_FAILED,		/* the key that failed conversion to UTF-8:
								 * its non-ASCII bytes as \xNN */
	BSON_KEY_UTF8				/* read from BSON: as it is where the server
								 * encoding is UTF-8 (or SQL_ASCII), else
								 * non-ASCII characters as \uXXXX, since the
								 * key may be what does not convert */
} BsonKeyText;

/* .key, or ["key"] (the first step without the dot) */
extern void bson_path_append_key(StringInfo out, const char *key, int keylen,
								 BsonKeyText form);

/* [index] */
extern void bson_path_append_index(StringInfo out, int64 index);

/* An array element by its key as stored in BSON: [3], or ["odd"] */
extern void bson_path_append_array_key(StringInfo out, const char *key, int keylen);

/* The mark in front of a chain cut to its innermost BSON_PATH_DEPTH_MAX steps */
extern void bson_path_append_elided(StringInfo out);

#endif							/* ERROR_PATH_H */
