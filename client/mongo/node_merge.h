/*
 * node_merge.h
 *		The rule that merges the change streams of a Citus cluster's nodes
 *		into one commit order, owned here: pg_bsonstream --citus --to
 *		applies the nodes' streams in that order (node_merge.c), and
 *		docs/citus.md gives it to consumers.
 *
 * Each node's stream is in its own commit order (commit LSNs), but the
 * nodes share no LSN: they are merged by commit time (an event's wallTime,
 * the node's clock at the commit, in milliseconds).  A node's commit times
 * need not grow with its LSNs (two commits in one millisecond, a clock set
 * back), so a node's transaction has an "order": its wallTime, at least
 * one step past the node's transaction before it.  Orders grow along a
 * node's stream, so merging by order keeps every node's own order, and
 * ties between nodes are broken by group id.
 *
 *	order      ((wallTime - 2020-01-01) << 12) + n: up to 4096 transactions
 *	           of a node in one millisecond keep their millisecond
 *	merge key  order << 10 | group, 16 hexadecimal digits, then the
 *	           event's position in its transaction, 16 more: a resume
 *	           token's layout (resume_token.h), unique and sorted in the
 *	           merged order, so that the applier keeps, stores and compares
 *	           it as a single server's token
 *
 * An event is merged only when every other node's stream has passed its
 * order: an event of each node is read ahead, and a node with none read
 * (its closed segments all read) is past its last transaction, since a
 * segment holds whole transactions.  An idle node moves on by the
 * heartbeats that pg_bsonstream writes on every node (the output plugin's
 * heartbeats option): events of their own, merged, never applied.
 *
 * Clock skew: two nodes' events are in their true order when their
 * commits are further apart than the nodes' clocks differ.  Citus blocks
 * writes to a shard it moves while it switches over, so a moved key's
 * events on its old and new node are in order when the clocks differ by
 * less than that switch-over; pg_bsonstream reads every node's clock when
 * it starts, and refuses two nodes whose clocks differ by more than
 * MERGE_MAX_SKEW_MS.
 */
#ifndef NODE_MERGE_H
#define NODE_MERGE_H

#include <stdint.h>

#include "resume_token.h"

#define MERGE_EPOCH_MS		INT64_C(1577836800000)	/* 2020-01-01 */
#define MERGE_SEQ_BITS		12
#define MERGE_GROUP_BITS	10
#define MERGE_MAX_GROUP		((1 << MERGE_GROUP_BITS) - 1)
#define MERGE_MAX_SKEW_MS	100

/*
 * DIR/group-<G>/MERGE_COPY_TIME: the node's clock (ms since 1970, text)
 * read just after its slot and the snapshot of its first copy were made.
 * The nodes' copies are of different moments: a TRUNCATE (one event, of
 * one node, for the rows of every node) that commits before the last of
 * them may have emptied rows that a copy made before it holds, or be
 * older than rows a copy made after it holds, and no order of applying
 * makes both right.  The merge refuses a truncate up to MERGE_MAX_SKEW_MS
 * after the latest of these times.
 */
#define MERGE_COPY_TIME		"copy-time"

/*
 * The order of an event at wall_ms whose token is token, on a node whose
 * last event had prev_token (NULL or "": none) and prev_order
 */
static inline uint64_t
merge_order(const char *prev_token, uint64_t prev_order, const char *token, int64_t wall_ms)
{
	uint64_t	at;

	/* the same transaction: the same order */
	if (prev_token && prev_token[0] &&
		memcmp(prev_token, token, RESUME_TOKEN_LSN_DIGITS) == 0)
		return prev_order;
	at = wall_ms > MERGE_EPOCH_MS ? (uint64_t) (wall_ms - MERGE_EPOCH_MS) << MERGE_SEQ_BITS : 0;
	return at > prev_order ? at : prev_order + 1;
}

/* The merge key of an event (RESUME_TOKEN_LEN characters, no NUL) */
static inline void
merge_key(char *out, uint64_t order, int group, const char *token)
{
	resume_token_put_hex64(out, (order << MERGE_GROUP_BITS) | (uint64_t) group);
	memcpy(out + RESUME_TOKEN_LSN_DIGITS, token + RESUME_TOKEN_LSN_DIGITS,
		   RESUME_TOKEN_POSITION_DIGITS);
}

/*
 * May a node's event of (order, group) be merged now, given another node
 * with no event read ahead whose last one had other_order (other_group)?
 * Its next event is of a later transaction: other_order + 1 at least.
 */
static inline int
merge_passed(uint64_t order, int group, uint64_t other_order, int other_group)
{
	return other_order >= order || (other_order + 1 == order && other_group > group);
}

#endif							/* NODE_MERGE_H */
