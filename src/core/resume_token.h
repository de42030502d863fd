/*
 * resume_token.h
 *		The layout of a change event's resume token, _id._data, shared by the
 *		output plugin that writes it and pg_bsonstream, which reads it back to
 *		name its segments.
 *
 * A token is 32 upper-case hex digits: 16 of the commit record's LSN, then
 * 16 of the event's position in its transaction (1 for the first).  Both are
 * fixed width, so that tokens sort as strings in stream order.  An event
 * starts with its _id, so the token stands at a fixed place in the event's
 * bytes: {_id: {_data: "<token>"}}.
 *
 * Plain C, no PostgreSQL headers: included by the server and by the client
 * programs alike.
 */
#ifndef RESUME_TOKEN_H
#define RESUME_TOKEN_H

#include <stdint.h>
#include <string.h>

/* The token's segments, in the order written */
#define RESUME_TOKEN_LSN_DIGITS			16
#define RESUME_TOKEN_POSITION_DIGITS	16
#define RESUME_TOKEN_LEN \
	(RESUME_TOKEN_LSN_DIGITS + RESUME_TOKEN_POSITION_DIGITS)

/*
 * An event's first bytes, up to its token: the event's int32 length, the
 * _id document's element header and int32 length, the _data string's
 * element header and its int32 length (the token and its NUL).
 */
#define RESUME_TOKEN_ID_HEAD		"\x03_id\0"
#define RESUME_TOKEN_ID_HEAD_LEN	5
#define RESUME_TOKEN_DATA_HEAD		"\x02_data\0"
#define RESUME_TOKEN_DATA_HEAD_LEN	7
#define RESUME_TOKEN_OFFSET \
	(4 + RESUME_TOKEN_ID_HEAD_LEN + 4 + RESUME_TOKEN_DATA_HEAD_LEN + 4)

static inline void
resume_token_put_hex64(char *out, uint64_t v)
{
	static const char digits[] = "0123456789ABCDEF";

	for (int i = 15; i >= 0; i--)
	{
		out[i] = digits[v & 0xF];
		v >>= 4;
	}
}

/* Write the token (RESUME_TOKEN_LEN characters, no NUL) */
static inline void
resume_token_format(char *out, uint64_t commit_lsn, uint64_t position)
{
	resume_token_put_hex64(out, commit_lsn);
	resume_token_put_hex64(out + RESUME_TOKEN_LSN_DIGITS, position);
}

/* Is s (at least RESUME_TOKEN_LEN characters) a token's digits? */
static inline int
resume_token_is_valid(const char *s)
{
	for (int i = 0; i < RESUME_TOKEN_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	return 1;
}

/*
 * The token of an event (its BSON bytes, len of them), or NULL if the
 * document does not start as an event of the plugin does.
 */
static inline const char *
resume_token_of_event(const char *doc, size_t len)
{
	const unsigned char *lenbytes;

	if (len < RESUME_TOKEN_OFFSET + RESUME_TOKEN_LEN + 1)
		return NULL;
	if (memcmp(doc + 4, RESUME_TOKEN_ID_HEAD, RESUME_TOKEN_ID_HEAD_LEN) != 0 ||
		memcmp(doc + 4 + RESUME_TOKEN_ID_HEAD_LEN + 4, RESUME_TOKEN_DATA_HEAD,
			   RESUME_TOKEN_DATA_HEAD_LEN) != 0)
		return NULL;
	lenbytes = (const unsigned char *) doc + RESUME_TOKEN_OFFSET - 4;
	if (lenbytes[0] != RESUME_TOKEN_LEN + 1 || lenbytes[1] != 0 ||
		lenbytes[2] != 0 || lenbytes[3] != 0)
		return NULL;
	if (!resume_token_is_valid(doc + RESUME_TOKEN_OFFSET) ||
		doc[RESUME_TOKEN_OFFSET + RESUME_TOKEN_LEN] != '\0')
		return NULL;
	return doc + RESUME_TOKEN_OFFSET;
}

/* The commit LSN a token starts with */
static inline uint64_t
resume_token_commit_lsn(const char *token)
{
	uint64_t	v = 0;

	for (int i = 0; i < RESUME_TOKEN_LSN_DIGITS; i++)
	{
		char		c = token[i];

		v = (v << 4) | (uint64_t) (c <= '9' ? c - '0' : c - 'A' + 10);
	}
	return v;
}

#endif							/* RESUME_TOKEN_H */
