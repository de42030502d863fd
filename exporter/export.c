/*
 * export.c
 *		One export job (see export.h).
 */
#include "export.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
	char		where[160] = "";
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (job->njobs > 1)
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

typedef struct FieldState
{
	Job		   *job;
	uint64_t	rows;
	uint64_t	bytes;
	uint64_t	nulls;
} FieldState;

/* the COPY parser's callback: one field = one row = one document */
static int
on_document(void *arg, uint64_t row, const char *data, size_t len)
{
	FieldState *st = arg;
	Job		   *job = st->job;
	char		why[256];

	if (interrupted || atomic_load_explicit(&export_stop, memory_order_relaxed))
		return 1;
	if (data == NULL)
	{
		st->nulls++;
		atomic_store_explicit(&job->nulls, st->nulls, memory_order_relaxed);
		return 0;
	}
	if (bson_check_document(data, len, job->max_size, why, sizeof(why)) != NULL)
	{
		job_fail(job, row, "%s", why);
		return 1;
	}
	if (out_write(job->out, data, len) != 0)
	{
		job_fail(job, row, "%s", job->out->errmsg);
		return 1;
	}
	st->rows++;
	st->bytes += len;
	atomic_store_explicit(&job->rows, st->rows, memory_order_relaxed);
	atomic_store_explicit(&job->bytes, st->bytes, memory_order_relaxed);
	return 0;
}

int
job_run(Job *job)
{
	PGresult   *res;
	CopyParser	parser;
	FieldState	st = {job, 0, 0, 0};
	int			rc = -1;

	/*
	 * Stopped before it started (a signal or another job's failure while
	 * the threads were being created): the cancel request the stop sent may
	 * have reached the server before this statement, so do not start it.
	 */
	if (interrupted || atomic_load(&export_stop))
	{
		job_fail(job, 0, "%s", interrupted ? "interrupted" : "stopped");
		atomic_store(&job->finished, 1);
		return -1;
	}
	res = PQexec(job->conn, job->sql);
	if (PQresultStatus(res) != PGRES_COPY_OUT)
	{
		db_error(job->conn, res, "the export query failed", job->errmsg, sizeof(job->errmsg));
		job->failed = 1;
		PQclear(res);
		atomic_store(&job->finished, 1);
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
		r = copy_parser_feed(&parser, buf, (size_t) n, on_document, &st);
		PQfreemem(buf);
		if (r == COPY_OK)
			continue;
		if (r == COPY_TOO_LONG)
		{
			char		why[256];

			job_fail(job, parser.too_long_row, "%s",
					 bson_too_large_message(parser.too_long_len, job->max_size, why, sizeof(why)));
		}
		else if (r == COPY_ERROR)
			job_fail(job, 0, "malformed COPY data from the server: %s", copy_parser_error(&parser));
		else if (!job->failed)
			job_fail(job, 0, "%s", interrupted ? "interrupted" : "stopped");

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
	if (out_flush(job->out, 0) != 0)
	{
		job_fail(job, 0, "%s", job->out->errmsg);
		goto done;
	}
	rc = 0;

done:
	copy_parser_free(&parser);
	atomic_store(&job->finished, 1);
	return rc;
}
