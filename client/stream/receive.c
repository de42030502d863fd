/*
 * receive.c
 *		pg_bsonstream's receive loop: see receive.h.
 *
 * Segments hold whole transactions (closed between transactions only); the
 * plugin ends each transaction with a commit marker (commit_marker.h) that
 * names its end, which is confirmed once all of the transaction is durable,
 * and a stop (a signal, --endpos) waits for the transaction in progress to
 * end, so that the next run starts after the last one written and sends
 * nothing twice.  A lost connection or a server restart is followed by a
 * new connection, resuming at the slot's confirmed position; an ERROR from
 * the server (a plugin's error in decoding, an invalidated slot) ends the
 * run: the same request would fail the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "commit_marker.h"
#include "common.h"
#include "mongo_apply.h"
#include "progress.h"
#include "receive.h"
#include "resume_token.h"
#include "segment.h"
#include "signals.h"
#include "status_file.h"

#define PROGNAME	"pg_bsonstream"
/*
 * How long the end of a stream waits for the server's CopyDone: it sends the
 * rest of a transaction first, and reads ours at the latest when half of
 * wal_sender_timeout (default 60 s) has passed without a reply.
 */
#define END_COPY_WAIT	35.0
#define BACKOFF_MIN	0.5			/* seconds before reconnecting after progress */
#define BACKOFF_MAX	8.0			/* seconds between reconnection attempts, at most */
#define WRITE_SAY_AFTER	30.0	/* seconds a write to MongoDB waits before it is said */


/* What the stream loop ended with. */
typedef enum
{
	STREAM_STOPPED,				/* a signal or --endpos: closed and confirmed */
	STREAM_LOST,				/* the connection, a server restart: reconnect */
	STREAM_ERROR,				/* the server's ERROR: give up */
	STREAM_FAILED				/* our side (disk): give up */
} StreamEnd;

/* The MongoDB applier stopped with an error: the stream stops as at a signal */
static int	apply_down;
static char apply_err[2048];

typedef struct State
{
	const StreamCtl *ctl;
	Segments	seg;
	Lsn			confirmed;		/* last flush position sent */
	Lsn			server_end;		/* the server's WAL end, from its messages */
	double		confirmed_at;
	double		last_status;
	Progress	progress;
	uint64_t	reconnects;

	/*
	 * Progress, which alone resets the reconnection backoff: since the last
	 * (re)connection, an event past every event received before (not one
	 * sent again), or a keepalive whose WAL position is past the confirmed
	 * position and every keepalive's before.
	 */
	int			progressed;
	Lsn			keepalive_high;
	double		status_written;	/* DIR/status.json, last written */
	const char *phase;			/* its "state": streaming, reconnecting, exited */

	/*
	 * A transaction is in progress: messages received since the last commit
	 * marker (since the connection started, none).  A stop waits for its
	 * end; a keepalive's position is confirmed only between transactions.
	 */
	int			in_txn;
	uint64_t	txn_messages;
	int			draining_said;
} State;


static void
send_status(PGconn *conn, State *st, int reply)
{
	if (repl_send_status(conn, st->confirmed, reply) == 0)
		st->last_status = now_seconds();
}

/* Raise the position to confirm (never lower it). */
static void
advance_confirmed(State *st, Lsn lsn)
{
	if (lsn > st->confirmed)
	{
		st->confirmed = lsn;
		st->confirmed_at = now_seconds();
	}
}

/* Confirm the segments the closer thread has made durable. */
static int
take_durable(PGconn *conn, State *st)
{
	Lsn			confirm;
	int			rc = segment_durable(&st->seg, &confirm);

	if (rc < 0)
		return -1;
	if (rc > 0 && confirm > st->confirmed)
	{
		advance_confirmed(st, confirm);
		if (conn)
			send_status(conn, st, 0);
	}
	return 0;
}

/* Close the open segment here, after the one closing, and confirm its end. */
static int
close_segment(PGconn *conn, State *st)
{
	Lsn			confirm = 0;

	if (segment_close(&st->seg, &confirm) != 0 || take_durable(NULL, st) != 0)
		return -1;
	advance_confirmed(st, confirm);
	if (conn)
		send_status(conn, st, 0);
	return 0;
}

/* A full or old segment: closed in the background, confirmed when durable. */
static int
rotate_segment(PGconn *conn, State *st)
{
	if (st->seg.dir == NULL)
		return close_segment(conn, st);
	if (segment_close_async(&st->seg) != 0)
		return -1;
	return take_durable(conn, st);
}

static void write_status(State *st, double elapsed, double lag_secs);

/* The time of day, for the lag behind an event's wallTime */
static double
wall_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * A write MongoDB has not answered for WRITE_SAY_AFTER seconds: said once
 * a write (the driver waits for it as long as socketTimeoutMS, then the
 * applier sends it again), so that a stall is not silent.
 */
static void
say_write_wait(State *st)
{
	static int	said;
	ApplyStats	a;

	apply_stats(&a);
	if (a.write_wait == 0)
		said = 0;
	else if (a.write_wait >= WRITE_SAY_AFTER && !said)
	{
		said = 1;
		progress_clear(&st->progress);
		fprintf(stderr, PROGNAME ": a write to MongoDB has waited %.0f s for its answer (the server "
				"is slow, or does not answer: the write is waited for as long as the URI's "
				"socketTimeoutMS, 300 s by default, then sent again)\n", a.write_wait);
	}
}

static void
show_progress(State *st)
{
	char		line[400];
	char		b[32];
	double		elapsed;
	double		lag_bytes;
	double		lag_secs;

	elapsed = now_seconds() - st->progress.start;
	lag_bytes = st->server_end > st->confirmed ? (double) (st->server_end - st->confirmed) : 0;
	lag_secs = lag_bytes > 0 ? now_seconds() - st->confirmed_at : 0;
	if (strcmp(st->ctl->dir, "-") != 0 && now_seconds() - st->status_written >= 1.0)
		write_status(st, elapsed, lag_secs);
	if (st->ctl->to)
		say_write_wait(st);
	if (!progress_due(&st->progress))
		return;
	snprintf(line, sizeof(line),
			 "%llu events (%.0f/s), %s, %llu segments, server " LSN_FORMAT ", lag %.0f bytes, %.1f s",
			 (unsigned long long) segment_events_received(&st->seg),
			 elapsed > 0 ? segment_events_received(&st->seg) / elapsed : 0,
			 format_bytes((double) st->seg.bytes, b, sizeof(b)),
			 (unsigned long long) st->seg.segments, LSN_ARGS(st->server_end),
			 lag_bytes, lag_secs);
	if (st->ctl->to)
	{
		ApplyStats	a;
		size_t		l = strlen(line);

		apply_stats(&a);
		if (a.state[0])
			snprintf(line + l, sizeof(line) - l, "; MongoDB: %s", a.state);
		else
			snprintf(line + l, sizeof(line) - l, "; applied %llu (%.0f/s), %s behind, %.1f s",
					 (unsigned long long) a.events, elapsed > 0 ? a.events / elapsed : 0,
					 format_bytes((double) a.buffer_bytes, b, sizeof(b)),
					 a.caught_up || a.wall_ms == 0 ? 0.0 : wall_seconds() - a.wall_ms / 1000.0);
	}
	progress_show(&st->progress, line);
}

/* The same figures into DIR/status.json (status_file.h) */
static void
write_status(State *st, double elapsed, double lag_secs)
{
	StreamStatus s;
	ApplyStats	a;

	memset(&s, 0, sizeof(s));
	s.slot = st->ctl->slot;
	s.phase = st->phase ? st->phase : "streaming";
	s.events = segment_events_received(&st->seg);
	s.bytes = st->seg.bytes;
	s.segments = st->seg.segments;
	s.server_lsn = st->server_end;
	s.confirmed_lsn = st->confirmed;
	s.lag_seconds = lag_secs;
	if (st->ctl->to)
	{
		apply_stats(&a);
		s.to = 1;
		s.state = a.state;
		s.applied = a.events;
		s.applied_per_second = elapsed > 0 ? a.events / elapsed : 0;
		s.refused = a.refused;
		s.token = a.token;
		s.wall_ms = a.wall_ms;
		/* counted here, not by the applier, which may be waiting for a write */
		s.buffer_bytes = apply_held_bytes(st->seg.bytes);
		s.caught_up = a.caught_up;
		s.apply_lag_seconds = a.caught_up || a.wall_ms == 0 ? 0.0 :
			wall_seconds() - a.wall_ms / 1000.0;
	}
	/* a view, not state: a failure to write it is said once, and the stream goes on */
	if (status_file_write(st->ctl->dir, &s) != 0 && st->status_written == 0)
		fprintf(stderr, PROGNAME ": warning: could not write \"%s/status.json\": %s\n",
				st->ctl->dir, strerror(errno));
	st->status_written = now_seconds();
}

/* Wait for the socket, at most 'secs'. */
static void
wait_socket(PGconn *conn, double secs)
{
	fd_set		rfds;
	struct timeval tv;
	int			sock = PQsocket(conn);

	if (sock < 0)
		return;
	if (secs < 0)
		secs = 0;
	FD_ZERO(&rfds);
	FD_SET(sock, &rfds);
	tv.tv_sec = (time_t) secs;
	tv.tv_usec = (suseconds_t) ((secs - (double) tv.tv_sec) * 1e6);
	(void) select(sock + 1, &rfds, NULL, NULL, &tv);
}

/*
 * A commit marker: the transaction whose messages came last ended at 'end'.
 * It is confirmed once all of it is durable; a count that differs from the
 * messages received means the stream lost some, and nothing of it may be
 * confirmed.
 */
static int
transaction_end(State *st, Lsn end, uint64_t messages, char *err, size_t errsize)
{
	if (!st->in_txn || messages != st->txn_messages)
	{
		snprintf(err, errsize, "the transaction ending at " LSN_FORMAT " has %llu messages, "
				 "but %llu were received\nhint: Run it again: nothing of that transaction "
				 "was confirmed, and the server sends it whole again.",
				 LSN_ARGS(end), (unsigned long long) messages,
				 (unsigned long long) st->txn_messages);
		return -1;
	}
	st->in_txn = 0;
	st->txn_messages = 0;
	segment_commit(&st->seg, end);
	return 0;
}

/*
 * The end of a run: the open segment closed, its end confirmed, or 'sent'
 * if later (a keepalive's WAL position: everything before it was received).
 */
static StreamEnd
stop_stream(PGconn *conn, State *st, Lsn sent, char *err, size_t errsize)
{
	if (close_segment(conn, st) != 0)
	{
		snprintf(err, errsize, "%s", st->seg.errmsg);
		return STREAM_FAILED;
	}
	advance_confirmed(st, sent);
	send_status(conn, st, 0);
	return STREAM_STOPPED;
}

static StreamEnd
stream(PGconn *conn, State *st, char *err, size_t errsize)
{
	for (;;)
	{
		char	   *buf = NULL;
		int			n;
		double		now;

		if ((interrupted || apply_down) && !st->in_txn)
			return stop_stream(conn, st, 0, err, errsize);
		if (interrupted && !st->draining_said)
		{
			st->draining_said = 1;
			if (!st->ctl->quiet)
			{
				progress_clear(&st->progress);
				fprintf(stderr, PROGNAME ": stopping after the transaction in progress "
						"(a second signal stops at once, as kill -9 does: what is not yet "
						"confirmed comes again with the next run)\n");
			}
		}
		n = PQgetCopyData(conn, &buf, 1);
		now = now_seconds();
		if (n == 0)
		{
			double		wait;

			/* the applier's failure stops the stream, at the end of a transaction */
			if (st->ctl->to && !apply_down && apply_failed(apply_err, sizeof(apply_err)))
				apply_down = 1;

			/*
			 * Standard output: everything received so far is written.  A
			 * segment is closed between transactions only: one due in the
			 * middle of a transaction is closed at its end (below).
			 */
			if ((!st->in_txn && ((st->seg.dir == NULL && st->seg.open) ||
								 segment_due(&st->seg, now))
				 ? rotate_segment(conn, st) : take_durable(conn, st)) != 0)
			{
				snprintf(err, errsize, "%s", st->seg.errmsg);
				return STREAM_FAILED;
			}
			if (now - st->last_status >= st->ctl->status_interval)
				send_status(conn, st, 0);
			show_progress(st);
			wait = st->last_status + st->ctl->status_interval - now;
			/* in a transaction, its next message (its end) is what a due segment waits for */
			if (!st->in_txn && segment_wait(&st->seg, now) < wait)
				wait = segment_wait(&st->seg, now);
			if (st->progress.enabled && wait > 0.25)
				wait = 0.25;
			/* DIR/status.json is rewritten every second */
			if (strcmp(st->ctl->dir, "-") != 0 && wait > 1.0)
				wait = 1.0;
			wait_socket(conn, wait);
			if (PQconsumeInput(conn) == 0)
			{
				db_error(conn, NULL, "lost the connection", err, errsize);
				return STREAM_LOST;
			}
			continue;
		}
		if (n < 0)
		{
			PGresult   *res = n == -1 ? PQgetResult(conn) : NULL;
			StreamEnd	e = STREAM_LOST;

			/* a server restart or a lost connection is retried, an ERROR is not */
			if (PQresultStatus(res) == PGRES_FATAL_ERROR && !repl_retryable(res, 0))
			{
				db_error(conn, res, "the server ended the stream with an error", err, errsize);
				repl_hint(st->ctl->slot, err, errsize);
				db_error_context(res, err, errsize);
				e = STREAM_ERROR;
			}
			else if (PQresultStatus(res) != PGRES_FATAL_ERROR && PQstatus(conn) == CONNECTION_OK)
				/* the walsender ended its COPY without an error: a shutdown, a restart */
				snprintf(err, errsize, "the server ended the stream (it is shutting down or "
						 "restarting)");
			else
				db_error(conn, res, "the stream ended", err, errsize);
			PQclear(res);
			return e;
		}
		if (buf[0] == 'w' && n >= 25)
		{
			Lsn			lsn = repl_get64(buf + 1);
			Lsn			end = repl_get64(buf + 9);
			const char *msg = buf + 25;
			size_t		len = (size_t) n - 25;
			const char *token;
			uint64_t	messages;

			if (end > st->server_end)
				st->server_end = end;

			if (commit_marker_read(msg, len, &messages))
			{
				PQfreemem(buf);
				if (transaction_end(st, lsn, messages, err, errsize) != 0)
					return STREAM_FAILED;
				if (st->ctl->to && !apply_down && apply_failed(apply_err, sizeof(apply_err)))
					apply_down = 1;
				if (interrupted || apply_down)
					return stop_stream(conn, st, 0, err, errsize);
				/* the end of a transaction: where a full or old segment is closed */
				if (segment_due(&st->seg, now) && rotate_segment(conn, st) != 0)
				{
					snprintf(err, errsize, "%s", st->seg.errmsg);
					return STREAM_FAILED;
				}
				continue;
			}

			/*
			 * --endpos: every transaction whose commit record starts at or
			 * before it, and none after (a transaction is never cut).
			 */
			if (st->ctl->endpos && !st->in_txn &&
				(token = resume_token_of_event(msg, len)) != NULL &&
				resume_token_commit_lsn(token) > st->ctl->endpos)
			{
				PQfreemem(buf);
				return stop_stream(conn, st, 0, err, errsize);
			}
			/* the changes MongoDB has not taken yet: at most --max-buffer */
			if (st->ctl->to && apply_buffer_full(st->seg.bytes, st->seg.seg_bytes + len, err, errsize))
			{
				PQfreemem(buf);
				return STREAM_FAILED;
			}
			if (segment_write(&st->seg, msg, len, lsn) != 0)
			{
				PQfreemem(buf);
				snprintf(err, errsize, "%s", st->seg.errmsg);
				return STREAM_FAILED;
			}
			st->in_txn = 1;
			st->txn_messages++;
			if (st->seg.new_event)
				st->progressed = 1;
		}
		else if (buf[0] == 'k' && n >= 18)
		{
			Lsn			end = repl_get64(buf + 1);

			/* a segment the closer failed on must stop us before any confirmation */
			if (take_durable(conn, st) != 0)
			{
				PQfreemem(buf);
				snprintf(err, errsize, "%s", st->seg.errmsg);
				return STREAM_FAILED;
			}

			if (end > st->server_end)
				st->server_end = end;
			if (end > st->keepalive_high)
			{
				if (end > st->confirmed)
					st->progressed = 1;
				st->keepalive_high = end;
			}

			/*
			 * The server has decoded the WAL up to 'end' and sent every
			 * transaction that commits before it (a keepalive may come in
			 * the middle of one: then its end decides).
			 */
			if (st->ctl->endpos && end >= st->ctl->endpos && !st->in_txn)
			{
				PQfreemem(buf);
				return stop_stream(conn, st, end, err, errsize);
			}

			/*
			 * Everything the server sent before its keepalive is in durable
			 * segments: it has nothing more to send for the WAL before
			 * 'end' (other tables' changes, transactions still open are
			 * decoded again from their start), so 'end' can be confirmed;
			 * not in the middle of a transaction, whose rest is still to
			 * come: only its marker says where it may be confirmed.
			 */
			if (!st->in_txn && !st->seg.open && !segment_closing(&st->seg) &&
				end > st->confirmed)
			{
				advance_confirmed(st, end);
				send_status(conn, st, 0);
			}
			else if (buf[17])
				send_status(conn, st, 0);
		}
		PQfreemem(buf);
		show_progress(st);
	}
}

/*
 * Connect and start streaming from the slot's confirmed position: 0 with
 * *connp set; -2 to try again (no connection, or a failure that
 * repl_retryable deems one); -1 for a server error that ends the run (an
 * invalidated or dropped slot).  err is set on failure.
 */
static int
restart(const StreamCtl *ctl, PGconn **connp, char *err, size_t errsize)
{
	PGconn	   *conn = db_connect(ctl->conn, err, errsize);
	int			rc;

	*connp = NULL;
	if (conn == NULL)
		return -2;
	if (conn == NULL)
		repl_hint(ctl->slot, err, errsize);
	rc = conn == NULL ? -2 : repl_start(conn, ctl->slot, 0, ctl->sel, ctl->events, 1, err, errsize);
	if (rc != 0)
	{
		PQfinish(conn);
		return rc;
	}
	*connp = conn;
	return 0;
}

/*
 * A signal during the reconnection backoff: a stop as elsewhere, what is
 * durable confirmed (the lost connection may have taken its last standby
 * status update with it, or never had it: a segment made durable as it was
 * lost).  A new connection for that alone, ended by end_copy, which makes
 * sure the server has taken it; exit 0.  If the server cannot be reached,
 * the next run may send those events again: said, exit 1.
 */
static StreamEnd
stop_reconnecting(State *st, PGconn **connp, char *err, size_t errsize)
{
	char		why[3000];

	if (st->confirmed == 0)
		return STREAM_STOPPED;	/* nothing confirmed in this run: nothing to pass on */
	if (restart(st->ctl, connp, why, sizeof(why)) == 0 &&
		repl_send_status(*connp, st->confirmed, 0) == 0)
		return STREAM_STOPPED;
	if (*connp)
	{
		db_error(*connp, NULL, "the connection was lost again", why, sizeof(why));
		PQfinish(*connp);
		*connp = NULL;
	}
	snprintf(err, errsize, "stopped while reconnecting, without confirming " LSN_FORMAT
			 " (the next run may send again the events after the slot's confirmed position): %s",
			 LSN_ARGS(st->confirmed), why);
	return STREAM_LOST;
}

/*
 * End the stream as pg_recvlogical does: our CopyDone, then the server's
 * messages read (and dropped) up to its own.  The server handles our
 * messages in order, so it has then taken the last standby status update
 * before it; a connection simply closed could lose it (a walsender blocked
 * on sending to us exits at the closed socket without reading what came
 * before), and the next run would be sent again what this one confirmed.
 */
static void
end_copy(PGconn *conn)
{
	char	   *buf;
	PGresult   *res;
	double		deadline = now_seconds() + END_COPY_WAIT;
	int			n;

	if (PQputCopyEnd(conn, NULL) <= 0 || PQflush(conn) != 0)
		return;
	while ((n = PQgetCopyData(conn, &buf, 1)) != -1)
	{
		if (n > 0)
		{
			PQfreemem(buf);
			continue;
		}
		/* a server that does not answer: give up, as a lost connection */
		if (n < -1 || now_seconds() >= deadline)
			return;
		wait_socket(conn, deadline - now_seconds());
		if (PQconsumeInput(conn) == 0)
			return;
	}
	while ((res = PQgetResult(conn)) != NULL)
		PQclear(res);
}

/*
 * The stream after repl_start: the loop, a new connection after each lost
 * one, then the end of the run.
 */
int
receive_run(const StreamCtl *ctl, PGconn *conn)
{
	State		st;
	char		err[4096];
	char		changes[4096];
	StreamEnd	end;
	double		backoff = BACKOFF_MIN;
	int			to_stdout = strcmp(ctl->dir, "-") == 0;

	memset(&st, 0, sizeof(st));
	st.ctl = ctl;
	snprintf(changes, sizeof(changes), "%s/changes", ctl->dir);
	if (segment_init(&st.seg, to_stdout ? NULL : changes, ctl->sync,
					 ctl->segment_size, ctl->segment_time) != 0)
		die("%s", st.seg.errmsg);
	progress_init(&st.progress, !ctl->quiet && isatty(STDERR_FILENO), 0);
	st.confirmed_at = st.last_status = now_seconds();
	st.progressed = 1;

	for (;;)
	{
		int			rc = -2;

		end = stream(conn, &st, err, sizeof(err));
		if (end != STREAM_LOST)
			break;

		/* not confirmed: the next connection sends these events again */
		segment_abort(&st.seg);
		st.in_txn = 0;
		st.txn_messages = 0;
		PQfinish(conn);
		conn = NULL;
		progress_clear(&st.progress);

		/*
		 * A segment the closer made durable before the loss: its end is
		 * confirmed on the next connection, or by a stop during the backoff.
		 */
		if (take_durable(NULL, &st) != 0)
		{
			snprintf(err, sizeof(err), "%s", st.seg.errmsg);
			end = STREAM_FAILED;
			break;
		}
		if (!ctl->reconnect)
			break;

		/*
		 * The backoff starts again only after progress: a connection that is
		 * lost again before the stream gets any further (a server that
		 * crashes on the same change) waits longer each time.
		 */
		if (st.progressed)
			backoff = BACKOFF_MIN;
		st.progressed = 0;
		fprintf(stderr, PROGNAME ": %s\n" PROGNAME ": reconnecting in %.1f s\n", err, backoff);
		st.phase = "reconnecting";
		while (conn == NULL && !interrupted)
		{
			struct timespec ts;

			if (!to_stdout)
				write_status(&st, now_seconds() - st.progress.start, now_seconds() - st.confirmed_at);

			ts.tv_sec = (time_t) backoff;
			ts.tv_nsec = (long) ((backoff - (double) ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
			if (interrupted)
				break;
			rc = restart(ctl, &conn, err, sizeof(err));
			backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
			if (rc == -1)
				break;
			if (conn == NULL)
				fprintf(stderr, PROGNAME ": %s\n" PROGNAME ": reconnecting in %.1f s\n",
						err, backoff);
		}
		if (rc == -1)
		{
			/* an invalidated or dropped slot: no new connection can help */
			end = STREAM_ERROR;
			break;
		}
		if (conn == NULL)
		{
			end = stop_reconnecting(&st, &conn, err, sizeof(err));
			break;
		}
		st.phase = NULL;
		fprintf(stderr, PROGNAME ": reconnected, resuming at the slot's confirmed position\n");
		st.reconnects++;
		/* what the lost connection may not have passed on, at once */
		if (st.confirmed)
			send_status(conn, &st, 0);
	}

	progress_clear(&st.progress);
	if (end == STREAM_ERROR)
	{
		Lsn			ignored = 0;

		/*
		 * The whole transactions before the error are written, but not
		 * confirmed (the stream is over), so a later run sends them again;
		 * the one the error cut short is left out, a split event's
		 * fragments too.
		 */
		fprintf(stderr, PROGNAME ": error: %s\n", err);
		if (segment_cut(&st.seg) != 0 || segment_close(&st.seg, &ignored) != 0)
			fprintf(stderr, PROGNAME ": error: %s\n", st.seg.errmsg);
		fprintf(stderr, PROGNAME ": a server error ends the run, it is not retried (the same "
				"request would fail the same way); ");
		if (st.confirmed)
			fprintf(stderr, "the slot is confirmed up to " LSN_FORMAT "\n", LSN_ARGS(st.confirmed));
		else
			fprintf(stderr, "the slot's confirmed position is unchanged\n");
	}
	if (end == STREAM_FAILED)
	{
		segment_abort(&st.seg);
		fprintf(stderr, PROGNAME ": error: %s\n", err);
		fprintf(stderr, PROGNAME ": nothing of the unfinished segment was confirmed; "
				"the next run resumes at " LSN_FORMAT "\n", LSN_ARGS(st.confirmed));
	}
	else if (end == STREAM_LOST)
		fprintf(stderr, PROGNAME ": error: %s\n", err);
	if (conn)
	{
		end_copy(conn);
		PQfinish(conn);
	}
	if (ctl->to)
	{
		ApplyStats	a;
		/* --endpos: every segment applied before the end; a signal: the batch in progress */
		int			drain = end == STREAM_STOPPED && !interrupted && !apply_down;

		if (!ctl->quiet && drain)
			fprintf(stderr, PROGNAME ": applying the rest of the segments into MongoDB\n");
		if (apply_stop(drain, apply_err, sizeof(apply_err)) != 0)
		{
			fprintf(stderr, PROGNAME ": error: %s\n", apply_err);
			fprintf(stderr, PROGNAME ": the changes not yet applied stay in \"%s/changes\"; "
					"the next run applies them\n", ctl->dir);
			if (end == STREAM_STOPPED)
				end = STREAM_FAILED;
		}
		apply_stats(&a);
		if (!ctl->quiet)
			fprintf(stderr, PROGNAME ": MongoDB: %llu events applied%s%s, %llu refused\n",
					(unsigned long long) a.events, a.token[0] ? " up to " : "", a.token,
					(unsigned long long) a.refused);
	}
	if (!ctl->quiet)
	{
		char		b[32];

		if (ctl->initial_copy)
			fprintf(stderr, PROGNAME ": initial copy: %d tables, %llu documents; ",
					ctl->copied->sources, (unsigned long long) ctl->copied->docs);
		else
			fprintf(stderr, PROGNAME ": ");
		fprintf(stderr, "%llu events, %s, %llu segments, confirmed up to " LSN_FORMAT
				", %llu reconnections\n",
				(unsigned long long) st.seg.events,
				format_bytes((double) st.seg.bytes, b, sizeof(b)),
				(unsigned long long) st.seg.segments, LSN_ARGS(st.confirmed),
				(unsigned long long) st.reconnects);
	}
	/* the last figures, marked: a reader tells a stopped program from a stalled one */
	if (!to_stdout)
	{
		st.phase = "exited";
		write_status(&st, now_seconds() - st.progress.start, 0);
	}
	segment_finish(&st.seg);
	return end == STREAM_STOPPED ? 0 : 1;
}
