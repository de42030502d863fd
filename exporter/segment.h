/*
 * segment.h
 *		pg_bsonstream's change segments: DIR/changes/<first>-<last>.bson.
 *
 * <first> and <last> are the resume tokens of the segment's first and last
 * events: the LSN of the transaction's commit record, then the event's
 * position in it, 32 hexadecimal digits.  They grow along the stream, so
 * the names sort in stream order (change LSNs do not: a transaction's
 * changes may predate an earlier commit, and the rows of one multi-row
 * insert share an LSN), and a name is never given to two different
 * segments: the same first and last events enclose the same events, so a
 * segment sent again after a restart may replace its earlier copy.
 *
 * A segment is the events back to back, written to a temporary file (see
 * output.c) and, once closed, fsynced, renamed to its final name and the
 * directory fsynced: only then may its last LSN be confirmed to the
 * server.  A segment that fails on the way is removed, and nothing of it is
 * confirmed.  To standard output, a "segment" is what has been written
 * since the last flush: not durable.
 *
 * The temporary file is not registered for removal on a signal (output.c
 * does that for the exporter): a SIGINT or SIGTERM closes and keeps it.  What
 * a SIGKILL leaves is removed by the next run (segment_remove_stale).
 */
#ifndef SEGMENT_H
#define SEGMENT_H

#include <stdint.h>

#include "output.h"
#include "repl.h"

typedef struct Segments
{
	char	   *dir;			/* DIR/changes; NULL for standard output */
	int			sync;
	uint64_t	max_bytes;
	double		max_secs;

	OutFile		out;
	int			open;
	char		first[33];		/* resume token of the open segment's first event */
	char		last[33];		/* ... and of its last */
	Lsn			confirm;		/* the highest change LSN in it */
	double		opened_at;
	uint64_t	seg_bytes;

	/* totals, for progress and the summary */
	uint64_t	events;
	uint64_t	bytes;
	uint64_t	segments;

	char		errmsg[1100];
} Segments;

/* dir NULL: standard output. */
extern int	segment_init(Segments *s, const char *dir, int sync,
						 uint64_t max_bytes, double max_secs);

extern int	segment_write(Segments *s, const char *doc, size_t len, Lsn lsn);

/* Is the open segment full, or old enough? */
extern int	segment_due(const Segments *s, double now);

/* Seconds until the open segment is due by age (large when none is open). */
extern double segment_wait(const Segments *s, double now);

/*
 * Make the open segment durable and give it its final name; the position
 * to confirm into *confirm: its highest change LSN (the server sends again
 * every transaction that commits at or after it, so a transaction cut by
 * the segment's end comes again whole).  -1 with errmsg set: the segment has been removed.
 */
extern int	segment_close(Segments *s, Lsn *confirm);

/* Remove the open segment, if any. */
extern void segment_abort(Segments *s);

extern void segment_finish(Segments *s);

/* Remove temporary files of dead processes in dir; how many. */
extern int	segment_remove_stale(const char *dir);

#endif							/* SEGMENT_H */
