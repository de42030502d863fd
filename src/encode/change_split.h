/*
 * change_split.h
 *		A change event too large for MongoDB cut into fragments, as
 *		MongoDB's $changeStreamSplitLargeEvent cuts one.
 */
#ifndef CHANGE_SPLIT_H
#define CHANGE_SPLIT_H

#include "bson_compat.h"

/*
 * How an event's top-level fields (all but _id) go into fragments: in
 * their order, as many as fit into each, so that the first fragment holds
 * the event's context (operationType, ns, documentKey ...).
 */
typedef struct BsonEventSplit
{
	const char *event;			/* the event's bytes */
	int			nfields;
	Size	   *field_start;	/* offsets in event; field_start[nfields] is
								 * the end of the last field */
	const char **field_name;
	int			nfragments;
	int		   *first_field;	/* of each fragment; first_field[nfragments]
								 * is nfields */
	int			oversized;		/* a field that no fragment can hold, or -1 */
	Size		oversized_size; /* ... and its fragment's size */
} BsonEventSplit;

/*
 * Plan the fragments of the event (len bytes; its _id first) such that none
 * exceeds limit bytes.  A field too large for any fragment has one of its
 * own, larger than limit: split->oversized names the first such field.
 */
extern void bson_event_split(BsonEventSplit *split, const char *event,
							 Size len, Size limit);

/*
 * Fragment n (1-based) of a planned event: {_id: {_data: token},
 * splitEvent: {fragment: n, of: nfragments}, its fields}, the token made of
 * commit_lsn and position (each fragment its own position, so that the
 * tokens sort in stream order).
 */
extern bytea *bson_event_fragment(const BsonEventSplit *split, int n,
								  uint64 commit_lsn, uint64 position);

#endif							/* CHANGE_SPLIT_H */
