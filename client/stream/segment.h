/*
 * segment.h
 *		pg_bsonstream's change segments: DIR/changes/<first>-<last>.bson
 *		(segment_name.h).
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
 * A segment is the events of whole transactions back to back, written to a
 * temporary file (see output.c) and, once closed, fsynced, renamed to its
 * final name and the directory fsynced: only then may the end of its last
 * transaction be confirmed to the server.  A segment is closed between
 * transactions only (the caller asks segment_due at a transaction's end), so
 * a transaction is never spread over two segments, and one larger than the
 * segment size makes a larger segment: written through the file's buffer,
 * never held in memory.  So a transaction the stream never finishes (a
 * lost connection, a server ERROR in its middle, a kill) leaves nothing of
 * it in a closed segment: its events are in the open one, which is removed
 * or cut back (segment_cut) and whose temporary file the next run removes.
 * A segment that fails on the way is removed, and nothing of it is
 * confirmed.  To standard output, a "segment" is what has been written
 * since the last flush: not durable.
 *
 * Closing takes time (the file's last fsync, the rename, the directory's
 * fsync) that the stream need not wait for: a full segment is handed to a
 * closer thread while the next one is written, and its end is confirmed
 * once the closer has made it durable (segment_durable).  One segment at a
 * time is closing: the next waits for it, so memory stays two buffers.
 * A stop closes the open segment in the calling thread (segment_close),
 * after the one closing.
 *
 * The temporary file is not registered for removal on a signal (output.c
 * does that for the exporter): a SIGINT or SIGTERM closes and keeps it.  What
 * a SIGKILL leaves is removed by the next run (out_remove_stale).
 */
#ifndef SEGMENT_H
#define SEGMENT_H

#include <pthread.h>
#include <stdint.h>

#include "output.h"
#include "repl.h"
#include "resume_token.h"

typedef struct Segments
{
	char	   *dir;			/* DIR/changes; NULL for standard output */
	int			sync;
	uint64_t	max_bytes;
	double		max_secs;

	OutFile		files[2];
	OutFile    *out;			/* the open segment's file: one of files[] */
	int			open;
	char		first[RESUME_TOKEN_LEN + 1];	/* resume token of the open segment's first event */
	char		last[RESUME_TOKEN_LEN + 1];	/* ... and of its last */
	Lsn			confirm;		/* the end of the last transaction ended
								 * in it, 0 if none */
	double		opened_at;
	uint64_t	seg_bytes;

	/* the closer thread and the segment it closes (under lock) */
	int			closer_started;
	pthread_t	closer;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	OutFile    *closing;		/* NULL when idle */
	Lsn			closing_lsn;
	int			closer_stop;
	int			durable_ready;	/* a segment made durable, not yet taken */
	Lsn			durable;		/* ... the position it confirms, 0 if none */
	int			close_failed;	/* its message in close_err */
	char		close_err[1100];

	/*
	 * Totals, for progress and the summary: only what is written, that is
	 * durable (to standard output: flushed), and each event once.  An event
	 * counts when its resume token is past that of every event counted
	 * before: one sent again after a reconnection (its segment removed
	 * unconfirmed, or its confirmation lost) is not counted twice.
	 */
	uint64_t	events;
	uint64_t	bytes;
	uint64_t	segments;
	char		counted[RESUME_TOKEN_LEN + 1];	/* highest token in a segment durable, closing or open */
	char		counted_open[RESUME_TOKEN_LEN + 1]; /* 'counted' when the open segment opened */
	uint64_t	seg_events;		/* the open segment's events that count */
	uint64_t	seg_new_bytes;
	uint64_t	closing_events; /* ... and the closing segment's, once durable */
	uint64_t	closing_bytes;
	int			closing_pending;	/* the closing segment's counts not yet added */

	/*
	 * The open segment as it was at the end of its last whole transaction
	 * (its last commit marker), for segment_cut; cut_valid 0: none ended in
	 * it yet.
	 */
	int			cut_valid;
	uint64_t	cut_bytes;
	char		cut_last[RESUME_TOKEN_LEN + 1];
	char		cut_counted[RESUME_TOKEN_LEN + 1];
	uint64_t	cut_events;
	uint64_t	cut_new_bytes;

	/* the highest token received at all, and whether segment_write's event passed it */
	char		seen[RESUME_TOKEN_LEN + 1];
	int			new_event;

	char		errmsg[1100];
} Segments;

/* dir NULL: standard output. */
extern int	segment_init(Segments *s, const char *dir, int sync,
						 uint64_t max_bytes, double max_secs);

/* Write one event; new_event tells whether no event received before was as far along. */
extern int	segment_write(Segments *s, const char *doc, size_t len, Lsn lsn);

/* Events received and not sent again: written, closing, or in the open segment. */
extern uint64_t segment_events_received(const Segments *s);

/* Is the open segment full, or old enough?  Asked between transactions only. */
extern int	segment_due(const Segments *s, double now);

/* Seconds until the open segment is due by age (large when none is open). */
extern double segment_wait(const Segments *s, double now);

/*
 * Make the open segment durable and give it its final name, in this
 * thread, after the segment closing in the background; the position to
 * confirm into *confirm: the end of the last transaction that ended in it
 * (segment_commit), 0 if none did.  Called between transactions (or after
 * segment_cut), so that the segment ends with a whole transaction.  -1 with
 * errmsg set: the segment has been removed.
 */
extern int	segment_close(Segments *s, Lsn *confirm);

/*
 * Hand the open segment to the closer thread (to standard output: flush
 * it, as segment_close).  Waits for the segment closing before, if any; -1
 * with errmsg set if that one failed (the open segment is then removed).
 */
extern int	segment_close_async(Segments *s);

/*
 * The segment the closer finished, if any: 1 and the position to confirm,
 * 0 if none finished since the last call, -1 with errmsg set if it failed
 * (it has been removed).
 */
extern int	segment_durable(Segments *s, Lsn *confirm);

/*
 * The transaction whose events were written last ended at end (its commit
 * marker's position): its events are all in the open segment, whose close
 * confirms end (segment_close, segment_durable).
 */
extern void segment_commit(Segments *s, Lsn end);

/*
 * Keep only the open segment's whole transactions: cut it back to the end
 * of the last transaction that ended in it, or remove it if none did (for
 * a stream that ends with an error in the middle of a transaction, whose
 * events are all in the open segment).  To standard output only what is
 * still buffered can be cut.  -1 with errmsg set if the cut failed (the
 * segment has been removed).
 */
extern int	segment_cut(Segments *s);

/* Is a segment closing in the background (or did one fail to)? */
extern int	segment_closing(Segments *s);

/* Remove the open segment, if any (one closing is finished first). */
extern void segment_abort(Segments *s);

extern void segment_finish(Segments *s);

#endif							/* SEGMENT_H */
