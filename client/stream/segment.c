/*
 * segment.c
 *		pg_bsonstream's change segments.
 */
#include "segment.h"
#include "segment_name.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "resume_token.h"
#include "signals.h"

int
segment_init(Segments *s, const char *dir, int sync, uint64_t max_bytes, double max_secs)
{
	memset(s, 0, sizeof(*s));
	s->files[0].fd = s->files[1].fd = -1;
	s->out = &s->files[0];
	s->sync = sync;
	s->max_bytes = max_bytes;
	s->max_secs = max_secs;
	if (dir == NULL)
	{
		/* one output for the whole run, flushed as the stream goes */
		if (out_open(s->out, "-", 1, 0) != 0)
		{
			snprintf(s->errmsg, sizeof(s->errmsg), "%s", s->out->errmsg);
			return -1;
		}
		return 0;
	}
	s->dir = strdup(dir);
	if (s->dir == NULL)
	{
		snprintf(s->errmsg, sizeof(s->errmsg), "out of memory");
		return -1;
	}
	return 0;
}

/*
 * The event's resume token, _id._data, read as resume_token.h lays it out.
 * Anything else (not an event of the plugin) is named by its LSN, with a
 * zero position.
 */
static void
event_token(const char *doc, size_t len, Lsn lsn, char *token)
{
	const char *t = resume_token_of_event(doc, len);

	if (t != NULL)
		memcpy(token, t, RESUME_TOKEN_LEN);
	else
		resume_token_format(token, lsn, 0);
	token[RESUME_TOKEN_LEN] = '\0';
}

/* A segment starts with the event of token: nothing of it written or counted yet */
static void
segment_begin(Segments *s, const char *token)
{
	s->open = 1;
	memcpy(s->first, token, sizeof(s->first));
	memcpy(s->counted_open, s->counted, sizeof(s->counted));
	s->confirm = 0;
	s->opened_at = now_seconds();
	s->seg_bytes = 0;
	s->seg_events = 0;
	s->seg_new_bytes = 0;
	s->cut_valid = 0;
}

/* The open segment's events were not written: counted when they come again */
static void
segment_uncount(Segments *s)
{
	memcpy(s->counted, s->counted_open, sizeof(s->counted));
	s->seg_events = 0;
	s->seg_new_bytes = 0;
}

static int
segment_open(Segments *s, const char *token)
{
	char		path[4200];
	char		name[SEGMENT_NAME_LEN + 1];

	/* the final name needs the last event: a placeholder until the rename */
	segment_name_open(name, sizeof(name), token);
	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	if (out_open(s->out, path, 0, s->sync) != 0)
	{
		snprintf(s->errmsg, sizeof(s->errmsg), "%s", s->out->errmsg);
		out_free(s->out);
		return -1;
	}
	/* a signal closes the segment rather than removing it */
	if (s->out->slot >= 0)
	{
		signals_unregister_file(s->out->slot);
		s->out->slot = -1;
	}
	segment_begin(s, token);
	return 0;
}

int
segment_write(Segments *s, const char *doc, size_t len, Lsn lsn)
{
	char		token[RESUME_TOKEN_LEN + 1];

	event_token(doc, len, lsn, token);
	if (!s->open)
	{
		if (s->dir == NULL)
			segment_begin(s, token);
		else if (segment_open(s, token) != 0)
			return -1;
	}
	if (out_write(s->out, doc, len) != 0)
	{
		snprintf(s->errmsg, sizeof(s->errmsg), "%s", s->out->errmsg);
		segment_abort(s);
		return -1;
	}
	memcpy(s->last, token, sizeof(s->last));
	s->seg_bytes += len;
	/* the tokens grow along the stream: one not past the last counted was sent again */
	if (strcmp(token, s->counted) > 0)
	{
		memcpy(s->counted, token, sizeof(s->counted));
		s->seg_events++;
		s->seg_new_bytes += len;
	}
	s->new_event = strcmp(token, s->seen) > 0;
	if (s->new_event)
		memcpy(s->seen, token, sizeof(s->seen));
	return 0;
}

/* The open segment's counts into the totals: it is written (durable, or flushed). */
static void
account_open(Segments *s)
{
	s->events += s->seg_events;
	s->bytes += s->seg_new_bytes;
	s->seg_events = 0;
	s->seg_new_bytes = 0;
}

/* The closing segment is durable: its counts into the totals (once). */
static void
account_closed(Segments *s)
{
	if (!s->closing_pending)
		return;
	s->events += s->closing_events;
	s->bytes += s->closing_bytes;
	s->segments++;
	s->closing_pending = 0;
}

uint64_t
segment_events_received(const Segments *s)
{
	return s->events + (s->closing_pending ? s->closing_events : 0) + s->seg_events;
}

int
segment_due(const Segments *s, double now)
{
	if (!s->open)
		return 0;
	return s->seg_bytes >= s->max_bytes || now - s->opened_at >= s->max_secs;
}

double
segment_wait(const Segments *s, double now)
{
	if (!s->open)
		return 1e9;
	return s->opened_at + s->max_secs - now;
}

/*
 * Make o durable under its final name, or remove it: 0, or -1 with the
 * message in err.  Either way o is closed and freed.
 */
static int
finish_file(OutFile *o, int sync, char *err, size_t errsize)
{
	/*
	 * The same name again is the same events again (a restart before their
	 * confirmation reached the server): replacing it loses nothing.
	 */
	if (out_flush(o, sync) != 0 || out_commit(o, 1, sync) != 0)
	{
		snprintf(err, errsize, "%s", o->errmsg);
		out_abort(o);
		out_free(o);
		o->fd = -1;
		return -1;
	}
	out_free(o);
	o->fd = -1;
	return 0;
}

/* The final name into the open file: its first and last events' tokens. */
static int
name_segment(Segments *s)
{
	char		path[4200];
	char		name[SEGMENT_NAME_LEN + 1];

	segment_name_format(name, sizeof(name), s->first, s->last);
	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	free(s->out->final_path);
	s->out->final_path = strdup(path);
	if (s->out->final_path == NULL)
	{
		snprintf(s->errmsg, sizeof(s->errmsg), "out of memory");
		segment_abort(s);
		return -1;
	}
	return 0;
}

static void *
closer_main(void *arg)
{
	Segments   *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;)
	{
		OutFile    *o;
		char		err[sizeof(s->close_err)];
		int			rc;

		while (s->closing == NULL && !s->closer_stop)
			pthread_cond_wait(&s->cond, &s->lock);
		if (s->closing == NULL)
			break;
		o = s->closing;
		pthread_mutex_unlock(&s->lock);
		rc = finish_file(o, s->sync, err, sizeof(err));
		pthread_mutex_lock(&s->lock);
		if (rc == 0)
		{
			s->durable = s->closing_lsn;
			s->durable_ready = 1;
		}
		else if (!s->close_failed)
		{
			s->close_failed = 1;
			memcpy(s->close_err, err, sizeof(err));
		}
		s->closing = NULL;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Wait until no segment is closing; whether one failed. */
static int
wait_idle(Segments *s)
{
	int			failed;

	if (!s->closer_started)
		return 0;
	pthread_mutex_lock(&s->lock);
	while (s->closing != NULL)
		pthread_cond_wait(&s->cond, &s->lock);
	failed = s->close_failed;
	pthread_mutex_unlock(&s->lock);
	return failed;
}

/* wait_idle, and -1 with errmsg set if a segment failed to close */
static int
wait_closer(Segments *s)
{
	if (!wait_idle(s))
	{
		account_closed(s);
		return 0;
	}
	snprintf(s->errmsg, sizeof(s->errmsg), "%s", s->close_err);
	return -1;
}

static int
start_closer(Segments *s)
{
	sigset_t	all;
	sigset_t	old;
	int			rc;

	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	/* signals are the main thread's: blocked from the thread's first instruction */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&s->closer, NULL, closer_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
	{
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
		return -1;
	}
	s->closer_started = 1;
	return 0;
}

int
segment_close(Segments *s, Lsn *confirm)
{
	if (wait_closer(s) != 0)
	{
		segment_abort(s);
		return -1;
	}
	if (!s->open)
		return 0;
	if (s->dir == NULL)
	{
		if (out_flush(s->out, 0) != 0)
		{
			snprintf(s->errmsg, sizeof(s->errmsg), "%s", s->out->errmsg);
			return -1;
		}
		s->open = 0;
		account_open(s);
		*confirm = s->confirm;
		return 0;
	}
	if (name_segment(s) != 0)
		return -1;
	s->open = 0;
	if (finish_file(s->out, s->sync, s->errmsg, sizeof(s->errmsg)) != 0)
	{
		segment_uncount(s);
		return -1;
	}
	s->segments++;
	account_open(s);
	*confirm = s->confirm;
	return 0;
}

int
segment_close_async(Segments *s)
{
	Lsn			confirm;

	if (s->dir == NULL || !s->open)
		return segment_close(s, &confirm) != 0 ? -1 : 0;
	if (!s->closer_started && start_closer(s) != 0)
	{
		/* no thread: close here, as at a stop (segment_durable passes it on) */
		if (segment_close(s, &confirm) != 0)
			return -1;
		s->durable = confirm;
		s->durable_ready = 1;
		return 0;
	}
	if (wait_closer(s) != 0)
	{
		segment_abort(s);
		return -1;
	}
	if (name_segment(s) != 0)
		return -1;
	s->closing_events = s->seg_events;
	s->closing_bytes = s->seg_new_bytes;
	s->closing_pending = 1;
	s->seg_events = 0;
	s->seg_new_bytes = 0;
	pthread_mutex_lock(&s->lock);
	s->closing = s->out;
	s->closing_lsn = s->confirm;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	s->out = s->out == &s->files[0] ? &s->files[1] : &s->files[0];
	s->open = 0;
	return 0;
}

int
segment_durable(Segments *s, Lsn *confirm)
{
	int			rc = 0;

	if (!s->closer_started)
	{
		/* segment_close_async closed it here, and counted it */
		if (!s->durable_ready)
			return 0;
		*confirm = s->durable;
		s->durable = 0;
		s->durable_ready = 0;
		return 1;
	}
	pthread_mutex_lock(&s->lock);
	if (s->close_failed)
	{
		snprintf(s->errmsg, sizeof(s->errmsg), "%s", s->close_err);
		rc = -1;
	}
	else if (s->durable_ready)
	{
		*confirm = s->durable;
		s->durable = 0;
		s->durable_ready = 0;
		rc = 1;
	}
	pthread_mutex_unlock(&s->lock);
	if (rc == 1)
		account_closed(s);
	return rc;
}

void
segment_commit(Segments *s, Lsn end)
{
	/*
	 * Segments are closed between transactions only, so the events of the
	 * transaction are all in the open one.  (None open: nothing of it was
	 * written, and nothing is confirmed.)
	 */
	if (!s->open)
		return;
	s->confirm = end;
	s->cut_valid = 1;
	s->cut_bytes = s->seg_bytes;
	memcpy(s->cut_last, s->last, sizeof(s->cut_last));
	memcpy(s->cut_counted, s->counted, sizeof(s->cut_counted));
	s->cut_events = s->seg_events;
	s->cut_new_bytes = s->seg_new_bytes;
}

int
segment_cut(Segments *s)
{
	uint64_t	keep;

	if (!s->open || (s->cut_valid && s->cut_bytes == s->seg_bytes))
		return 0;
	if (s->dir != NULL && !s->cut_valid)
	{
		segment_abort(s);
		return 0;
	}
	/* the segment's file holds the segment alone; standard output, the whole run */
	keep = s->out->bytes - s->seg_bytes + (s->cut_valid ? s->cut_bytes : 0);
	if (s->dir == NULL && keep < s->out->flushed)
		return 0;				/* written out already: out of reach */
	if (out_truncate(s->out, keep) != 0)
	{
		snprintf(s->errmsg, sizeof(s->errmsg), "%s", s->out->errmsg);
		segment_abort(s);
		return -1;
	}
	if (!s->cut_valid)
	{
		/* standard output, with nothing of the segment whole */
		segment_uncount(s);
		s->open = 0;
		return 0;
	}
	s->seg_bytes = s->cut_bytes;
	memcpy(s->last, s->cut_last, sizeof(s->last));
	memcpy(s->counted, s->cut_counted, sizeof(s->counted));
	s->seg_events = s->cut_events;
	s->seg_new_bytes = s->cut_new_bytes;
	return 0;
}

int
segment_closing(Segments *s)
{
	int			closing;

	if (!s->closer_started)
		return 0;
	pthread_mutex_lock(&s->lock);
	/* a segment that failed to close is never done: nothing after it is safe */
	closing = s->closing != NULL || s->close_failed;
	pthread_mutex_unlock(&s->lock);
	return closing;
}

void
segment_abort(Segments *s)
{
	if (!wait_idle(s))
		account_closed(s);
	if (!s->open || s->dir == NULL)
		return;
	out_abort(s->out);
	out_free(s->out);
	s->out->fd = -1;
	s->open = 0;
	segment_uncount(s);
}

void
segment_finish(Segments *s)
{
	segment_abort(s);
	if (s->closer_started)
	{
		pthread_mutex_lock(&s->lock);
		s->closer_stop = 1;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->closer, NULL);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
		s->closer_started = 0;
	}
	if (s->dir == NULL)
	{
		out_flush(s->out, 0);
		out_free(s->out);
	}
	free(s->dir);
	s->dir = NULL;
}
