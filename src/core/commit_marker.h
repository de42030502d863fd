/*
 * commit_marker.h
 *		The message that ends a transaction in the output plugin's stream
 *		(option commit-markers), shared by the plugin that writes it and
 *		pg_bsonstream, which reads it.
 *
 * A marker follows the last message of every transaction that wrote one.
 * It is not an event: the client keeps it out of what it writes.  Its
 * message's LSN (the 'w' message's start, as the server sends it) is the
 * end of the transaction's commit record: the position to confirm once all
 * of the transaction is durable, so that a restart begins after it.  The
 * marker carries the number of messages of the transaction (its events, a
 * split event's fragments each), for the client to check that it received
 * all of them.
 *
 * The marker is the BSON document {"commit": <int64 messages>}: 21 bytes,
 * whose first element no event has (an event starts with _id).
 *
 * Plain C, no PostgreSQL headers: included by the server and by the client
 * programs alike.
 */
#ifndef COMMIT_MARKER_H
#define COMMIT_MARKER_H

#include <stdint.h>
#include <string.h>

#define COMMIT_MARKER_LEN	21
/* the document's length, then the int64 element's type and name */
#define COMMIT_MARKER_HEAD	"\x15\0\0\0\x12" "commit"
#define COMMIT_MARKER_HEAD_LEN	12	/* with the name's NUL */

/* Write the marker of a transaction of messages (COMMIT_MARKER_LEN bytes) */
static inline void
commit_marker_format(char *out, uint64_t messages)
{
	memcpy(out, COMMIT_MARKER_HEAD, COMMIT_MARKER_HEAD_LEN);
	for (int i = 0; i < 8; i++)
		out[COMMIT_MARKER_HEAD_LEN + i] = (char) ((messages >> (8 * i)) & 0xFF);
	out[COMMIT_MARKER_LEN - 1] = '\0';
}

/*
 * Is the message (len bytes) a marker?  1 and its number of messages into
 * *messages, else 0.
 */
static inline int
commit_marker_read(const char *msg, size_t len, uint64_t *messages)
{
	uint64_t	v = 0;

	if (len != COMMIT_MARKER_LEN ||
		memcmp(msg, COMMIT_MARKER_HEAD, COMMIT_MARKER_HEAD_LEN) != 0 ||
		msg[COMMIT_MARKER_LEN - 1] != '\0')
		return 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | (unsigned char) msg[COMMIT_MARKER_HEAD_LEN + i];
	*messages = v;
	return 1;
}

#endif							/* COMMIT_MARKER_H */
