/*
 * export.c
 *		One export job (see export.h).
 */
#include "export.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bson_check.h"
#include "copy_binary.h"
#include "db.h"
#include "signals.h"

atomic_int	export_stop = 0;

/*
 * What a job's failure says about where it happened: the row (1-based, in
 * the order of the COPY) when known, and with --jobs the job and its block
 * range, since a job does not know how many rows the jobs before it have.
 */
static void
job_fail(Job *job, uint64_t row, const char *fmt,...)
{
	char		msg[1536];
	char		where[600] = "";
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (job->shard)
		snprintf(where, sizeof(where), "job %d (%s)", job->id, job->shard);
	else if (job->njobs > 1)
	{
		long long	first = job->first_block < 0 ? 0 : (long long) job->first_block;

		if (job->end_block >= 0)
			snprintf(where, sizeof(where), "job %d (blocks %lld to %lld)", job->id, first,
					 (long long) job->end_block - 1);
		else
			snprintf(where, sizeof(where), "job %d (blocks %lld to the end)", job->id, first);
	}
	if (row == 0 && where[0] == '\0')
		snprintf(job->errmsg, sizeof(job->errmsg), "%s", msg);
	else if (row == 0)
		snprintf(job->errmsg, sizeof(job->errmsg), "%s: %s", where, msg);
	else if (where[0] == '\0')
		snprintf(job->errmsg, sizeof(job->errmsg), "row %llu: %s", (unsigned long long) row, msg);
	else
		snprintf(job->errmsg, sizeof(job->errmsg), "row %llu of %s: %s",
				 (unsigned long long) row, where, msg);
	job->failed = 1;
}

/* rows of a chunk kept while its job waits for the turn (ChunkPlan) */
typedef struct Hold
{
	char	   *buf;
	size_t		len;
	size_t		size;
} Hold;

typedef struct FieldState
{
	Job		   *job;
	uint64_t	rows;
	uint64_t	bytes;
	uint64_t	nulls;

	/* with chunks: the current one, and whether its rows go straight out */
	int			chunk;
	int			direct;
	Hold		hold;
} FieldState;

void
cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
}

void
cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L)
	{
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cond, lock, &ts);
}

static int
stopping(void)
{
	return interrupted || atomic_load_explicit(&export_stop, memory_order_relaxed);
}

/* Fail the job for a stop it did not cause: a signal, another job's failure. */
static void
job_stopped(Job *job)
{
	job_fail(job, 0, "%s", interrupted ? "interrupted" : "stopped");
}

/*
 * Wait until chunk 'chunk' has the turn.  Returns 0, or -1 (the job failed)
 * if the export is stopping: then the turn may never come; the main thread
 * wakes the waiting jobs, and the flag is checked every 100 ms anyway.
 */
static int
wait_turn(Job *job, int chunk)
{
	ChunkPlan  *plan = job->chunks;
	int			rc = 0;

	pthread_mutex_lock(&plan->lock);
	while (atomic_load(&plan->next) != chunk)
	{
		if (stopping())
		{
			rc = -1;
			break;
		}
		cond_wait_ms(&plan->turn, &plan->lock, 100);
	}
	pthread_mutex_unlock(&plan->lock);
	if (rc != 0)
		job_stopped(job);
	return rc;
}

/* The turn passes from 'chunk' to the next one. */
static void
pass_turn(ChunkPlan *plan, int chunk)
{
	pthread_mutex_lock(&plan->lock);
	atomic_store(&plan->next, chunk + 1);
	pthread_cond_broadcast(&plan->turn);
	pthread_mutex_unlock(&plan->lock);
}

/* This job has the turn: write what it holds, then go direct. */
static int
take_turn(FieldState *st)
{
	Job		   *job = st->job;

	if (st->hold.len > 0 && out_write(job->out, st->hold.buf, st->hold.len) != 0)
	{
		job_fail(job, 0, "%s", job->out->errmsg);
		return -1;
	}
	st->hold.len = 0;
	st->direct = 1;
	return 0;
}

/* Keep a document of a chunk that does not have the turn; 1 if it did not fit. */
static int
hold_document(FieldState *st, const char *data, size_t len)
{
	Hold	   *h = &st->hold;

	if (len > st->job->chunks->hold_max - h->len)
		return 1;
	if (h->len + len > h->size)
	{
		size_t		size = h->size ? h->size : 256 * 1024;
		char	   *nb;

		while (size < h->len + len)
			size *= 2;
		if (size > st->job->chunks->hold_max)
			size = st->job->chunks->hold_max;
		nb = realloc(h->buf, size);
		if (nb == NULL)
			return 1;			/* no memory to hold it: wait for the turn instead */
		h->buf = nb;
		h->size = size;
	}
	memcpy(h->buf + h->len, data, len);
	h->len += len;
	return 0;
}

/*
 * A row of a chunk whose rows do not go straight out yet.  Held, if the
 * turn has not come and there is room; else, once the turn has come
 * (waiting for it if need be), the held rows are written and the chunk goes
 * direct.  Returns 1 if the row was held, 0 if the caller is to write it,
 * -1 if the job failed.
 */
static int
hold_or_take_turn(FieldState *st, const char *data, size_t len)
{
	Job		   *job = st->job;

	if (atomic_load(&job->chunks->next) != st->chunk)
	{
		if (hold_document(st, data, len) == 0)
			return 1;
		/* holding all it may: wait for the turn (its server waits too) */
		if (job->chunks->verbose)
			fprintf(stderr, "%spg_bsonexport: job %d: chunk %d: holding %zu bytes, all it may; "
					"waiting for its turn\n", job->chunks->clear_line, job->id,
					st->chunk + 1, st->hold.len);
		if (wait_turn(job, st->chunk) != 0)
			return -1;
	}
	return take_turn(st);
}

/* the COPY parser's callback: one field = one row = one document */
static int
on_document(void *arg, uint64_t row, const char *data, size_t len)
{
	FieldState *st = arg;
	Job		   *job = st->job;
	char		why[384];
	int			held = 0;

	if (stopping())
		return 1;
	if (data == NULL)
	{
		st->nulls++;
		atomic_store_explicit(&job->nulls, st->nulls, memory_order_relaxed);
		return 0;
	}
	if (bson_check_document(data, len, job->max_size, job->max_size_option, why, sizeof(why)) != NULL ||
		(job->validate && bson_validate_document(data, len, why, sizeof(why)) != NULL))
	{
		job_fail(job, row, "%s", why);
		return 1;
	}
	if (job->chunks && !st->direct && (held = hold_or_take_turn(st, data, len)) < 0)
		return 1;
	if (!held)
	{
		int			rc;

		if (job->out_lock)
			pthread_mutex_lock(job->out_lock);
		rc = out_write(job->out, data, len);
		if (job->out_lock)
			pthread_mutex_unlock(job->out_lock);
		if (rc != 0)
		{
			job_fail(job, row, "%s", job->out->errmsg);
			return 1;
		}
	}
	st->rows++;
	st->bytes += len;
	atomic_store_explicit(&job->rows, st->rows, memory_order_relaxed);
	atomic_store_explicit(&job->bytes, st->bytes, memory_order_relaxed);
	return 0;
}

/* Run one COPY statement to its end, every document through on_document. */
static int
run_copy(Job *job, const char *sql, FieldState *st)
{
	PGresult   *res;
	CopyParser	parser;
	int			rc = -1;

	res = PQexec(job->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_OUT)
	{
		db_error(job->conn, res, "the export query failed", job->errmsg, sizeof(job->errmsg));
		job->failed = 1;
		PQclear(res);
		return -1;
	}
	PQclear(res);

	copy_parser_init(&parser, 1, job->max_size);
	for (;;)
	{
		char	   *buf;
		int			n = PQgetCopyData(job->conn, &buf, 0);
		CopyResult	r;

		if (n == -1)
			break;				/* end of the COPY data; its result follows */
		if (n == -2)
		{
			db_error(job->conn, NULL, "lost the data stream during the export",
					 job->errmsg, sizeof(job->errmsg));
			job->failed = 1;
			goto done;
		}
		r = copy_parser_feed(&parser, buf, (size_t) n, on_document, st);
		PQfreemem(buf);
		if (r == COPY_OK)
			continue;
		if (r == COPY_TOO_LONG)
		{
			char		why[256];

			job_fail(job, parser.too_long_row, "%s",
					 bson_too_large_message(parser.too_long_len, job->max_size,
											job->max_size_option, why, sizeof(why)));
		}
		else if (r == COPY_ERROR)
			job_fail(job, 0, "malformed COPY data from the server: %s", copy_parser_error(&parser));
		else if (!job->failed)
			job_stopped(job);

		/*
		 * We stop reading; the connection, with the rest of the COPY, is
		 * closed by the main thread, which ends the server's transaction.
		 */
		goto done;
	}

	/*
	 * The COPY's own result: an error raised by the server mid-stream lands
	 * here, after every row sent before it (for a plain scan, the failing
	 * row is the next one; a query may compute rows in another order).
	 */
	res = PQgetResult(job->conn);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		char		what[96];
		char		msg[1536];

		snprintf(what, sizeof(what), "the export query failed after %llu row%s",
				 (unsigned long long) copy_parser_rows(&parser),
				 copy_parser_rows(&parser) == 1 ? "" : "s");
		db_error(job->conn, res, what, msg, sizeof(msg));
		job_fail(job, 0, "%s", msg);
		PQclear(res);
		goto done;
	}
	PQclear(res);
	while ((res = PQgetResult(job->conn)) != NULL)
		PQclear(res);
	if (!copy_parser_done(&parser))
	{
		job_fail(job, 0, "the COPY data ended without its end-of-data trailer (after %llu rows)",
				 (unsigned long long) copy_parser_rows(&parser));
		goto done;
	}
	rc = 0;

done:
	copy_parser_free(&parser);
	return rc;
}

/*
 * Chunk c with the statement sql: its rows written in its turn (held
 * meanwhile, as far as they fit), then the turn passed on.
 */
static int
run_chunk(Job *job, FieldState *st, int c, const char *sql)
{
	ChunkPlan  *plan = job->chunks;

	if (plan->verbose)
		fprintf(stderr, "%spg_bsonexport: job %d: %s%s%s\n", plan->clear_line, job->id,
				job->shard ? job->shard : "", job->shard ? ": " : "", sql);
	st->chunk = c;
	/* a file of its own needs no turn */
	st->direct = plan->outs || atomic_load(&plan->next) == c;
	st->hold.len = 0;
	if (run_copy(job, sql, st) != 0)
		return -1;
	if (plan->outs)
		return 0;
	if (!st->direct && (wait_turn(job, c) != 0 || take_turn(st) != 0))
		return -1;
	pass_turn(plan, c);
	return 0;
}

/* The chunks of job k (0-based): k, k + N, k + 2N, ... each in its turn. */
static int
run_chunks(Job *job, FieldState *st)
{
	ChunkPlan  *plan = job->chunks;
	int			c;

	for (c = job->id - 1; c < plan->nchunks; c += job->njobs)
	{
		char	   *sql;
		int			rc;

		/* a cancel that reached the server between two chunks was lost */
		if (stopping())
		{
			job_stopped(job);
			return -1;
		}

		if (plan->tasks)
		{
			job->conn = job->node_conns[plan->tasks[c].node];
			job->shard = plan->tasks[c].where;
			if (plan->outs)
				job->out = &plan->outs[c];
			sql = strdup(plan->tasks[c].sql);
		}
		else
		{
			job->first_block = c == 0 ? -1 : c * plan->chunk_blocks;
			job->end_block = c == plan->nchunks - 1 ? -1 : (c + 1) * plan->chunk_blocks;
			sql = source_copy_sql(plan->src, job->first_block, job->end_block);
		}
		if (sql == NULL)
		{
			job_fail(job, 0, "out of memory");
			return -1;
		}
		rc = run_chunk(job, st, c, sql);
		free(sql);
		if (rc != 0)
			return -1;
	}
	return 0;
}

int
job_run(Job *job)
{
	FieldState	st;
	int			rc;

	memset(&st, 0, sizeof(st));
	st.job = job;

	/*
	 * Stopped before it started (a signal or another job's failure while
	 * the threads were being created): the cancel request the stop sent may
	 * have reached the server before this statement, so do not start it.
	 */
	if (stopping())
	{
		job_stopped(job);
		atomic_store(&job->finished, 1);
		return -1;
	}
	if (job->chunks && job->sql)
		rc = run_chunk(job, &st, job->chunk, job->sql);
	else if (job->chunks)
		rc = run_chunks(job, &st);
	else
	{
		rc = run_copy(job, job->sql, &st);
		/* its own output: flushed here; a shared one by the main thread */
		if (rc == 0)
		{
			if (job->out_lock)
				pthread_mutex_lock(job->out_lock);
			if (out_flush(job->out, 0) != 0)
			{
				job_fail(job, 0, "%s", job->out->errmsg);
				rc = -1;
			}
			if (job->out_lock)
				pthread_mutex_unlock(job->out_lock);
		}
	}
	free(st.hold.buf);
	atomic_store(&job->finished, 1);
	return rc;
}
