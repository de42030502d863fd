/*
 * initial.c
 *		pg_bsonstream's first copy under the slot's exported snapshot.
 */
#include "initial.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "export.h"
#include "output.h"
#include "signals.h"

#define MAX_DOCUMENT	((size_t) 16 * 1024 * 1024)

/*
 * Every leaf table the plugin could stream, with what the document query
 * needs: the key's columns (replica identity: the index it names, else the
 * primary key; FULL without a primary key: the whole row) and the other
 * columns, a column named _id left out where there is a key.
 */
static const char *const tables_sql =
"WITH k AS ("
"  SELECT c.oid, n.nspname, c.relname,"
"    (SELECT array_agg(a.attname ORDER BY x.ord)"
"       FROM pg_index i, unnest(i.indkey) WITH ORDINALITY x(attnum, ord)"
"       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = x.attnum"
"      WHERE i.indrelid = c.oid AND CASE c.relreplident WHEN 'i' THEN i.indisreplident"
"                                   WHEN 'n' THEN false ELSE i.indisprimary END) AS keys"
"  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
"  WHERE c.relkind = 'r'"
"    AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
"    AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'"
"    AND c.relpersistence = 'p'),"
" f AS ("
"  SELECT k.*, CASE WHEN keys IS NULL AND c.relreplident = 'f'"
"    THEN (SELECT array_agg(attname ORDER BY attnum) FROM pg_attribute"
"          WHERE attrelid = k.oid AND attnum > 0 AND NOT attisdropped)"
"    ELSE keys END AS idkeys"
"  FROM k JOIN pg_class c ON c.oid = k.oid)"
"SELECT nspname || '.' || relname,"
"  CASE WHEN nspname = 'public' THEN relname ELSE nspname || '.' || relname END,"
"  format('%I.%I', nspname, relname),"
"  CASE WHEN idkeys IS NULL THEN NULL"
"       WHEN cardinality(idkeys) = 1 THEN format('t.%I', idkeys[1])"
"       ELSE '(SELECT k FROM (SELECT ' ||"
"            (SELECT string_agg(format('t.%I', x), ', ' ORDER BY o)"
"               FROM unnest(idkeys) WITH ORDINALITY u(x, o)) || ') k)' END,"
"  (SELECT string_agg(format('t.%I', attname), ', ' ORDER BY attnum) FROM pg_attribute"
"    WHERE attrelid = f.oid AND attnum > 0 AND NOT attisdropped"
"      AND (idkeys IS NULL OR attname <> '_id')),"
"  current_database(),"
"  pg_relation_size(f.oid) / current_setting('block_size')::bigint"
" FROM f ORDER BY 1";

int
table_selected(const char *name, const char *const *include, int ninclude)
{
	if (ninclude == 0)
		return 1;
	for (int i = 0; i < ninclude; i++)
	{
		/* the plugin's patterns: * any run, backslash quotes, blanks trimmed */
		const char *p = include[i];
		const char *s = name;
		const char *star_p = NULL;
		const char *star_s = NULL;

		while (*p == ' ' || *p == '\t')
			p++;
		for (;;)
		{
			if (*p == '*')
			{
				star_p = ++p;
				star_s = s;
				continue;
			}
			if (*p == '\0' || ((*p == ' ' || *p == '\t') && strspn(p, " \t") == strlen(p)))
			{
				if (*s == '\0')
					return 1;
			}
			else
			{
				const char *c = p;

				if (*c == '\\' && c[1])
					c++;
				if (*s && *s == *c)
				{
					p = c + 1;
					s++;
					continue;
				}
			}
			if (star_p == NULL || *star_s == '\0')
				break;
			p = star_p;
			s = ++star_s;
		}
	}
	return 0;
}

/*
 * One table's copy, or a part of it: a large table is copied in block
 * ranges by several connections at once (as pg_bsonexport --jobs does),
 * all into the table's one file, each document whole under the file's
 * lock; a collection's documents need no order.  The output is opened and
 * committed by the main thread (signals.c registers temporary files from
 * the main thread only) on the table's first part; the COPYs run on the
 * worker threads' connections.
 */
typedef struct CopyTask
{
	char	   *path;			/* the table's file (first part only) */
	char	   *sql;
	int			first;			/* index of the table's first part */
	int			nparts;			/* the table's parts (first part only) */
	OutFile		out;			/* first part only */
	pthread_mutex_t lock;		/* first part only, with nparts > 1 */
	int			opened;
	Job			job;
} CopyTask;

typedef struct Worker
{
	PGconn	   *conn;
	CopyTask   *tasks;
	int			ntasks;
	atomic_int *next;
	pthread_t	thread;
} Worker;

/* outputs open at a time, at most: a file descriptor and a buffer each */
#define BATCH_TABLES	32

/*
 * A table of at least SPLIT_MIN_BLOCKS is copied in parts of at least
 * PART_MIN_BLOCKS, up to two a connection (PostgreSQL 14 and later, whose
 * TID Range Scan reads only a part's blocks).
 */
#define SPLIT_MIN_BLOCKS	2048
#define PART_MIN_BLOCKS		1024

static void *
worker_main(void *arg)
{
	Worker	   *w = arg;

	for (;;)
	{
		int			i = atomic_fetch_add(w->next, 1);

		if (i >= w->ntasks)
			break;
		w->tasks[i].job.conn = w->conn;
		if (job_run(&w->tasks[i].job) != 0)
		{
			/* the others stop at their next row */
			atomic_store(&export_stop, 1);
			break;
		}
	}
	return NULL;
}

/* The COPY of blocks [from, to) of the table (-1: unbounded). */
static char *
document_sql(const char *schema, const char *table, const char *idexpr, const char *cols,
			 long long from, long long to)
{
	char		where[128] = "";
	size_t		n = strlen(schema) + strlen(table) + strlen(cols ? cols : "") +
		strlen(idexpr ? idexpr : "") + 384;
	char	   *sql = malloc(n);

	if (sql == NULL)
		return NULL;
	if (from >= 0 && to >= 0)
		snprintf(where, sizeof(where), " WHERE t.ctid >= '(%lld,0)'::tid AND t.ctid < '(%lld,0)'::tid",
				 from, to);
	else if (from >= 0)
		snprintf(where, sizeof(where), " WHERE t.ctid >= '(%lld,0)'::tid", from);
	else if (to >= 0)
		snprintf(where, sizeof(where), " WHERE t.ctid < '(%lld,0)'::tid", to);
	if (idexpr)
		snprintf(sql, n, "COPY (SELECT %s.row_to_bson(s) FROM (SELECT %s AS \"_id\"%s%s "
				 "FROM ONLY %s t%s) s) TO STDOUT (FORMAT binary)",
				 schema, idexpr, cols ? ", " : "", cols ? cols : "", table, where);
	else
		snprintf(sql, n, "COPY (SELECT %s.row_to_bson(t) FROM ONLY %s t%s) TO STDOUT (FORMAT binary)",
				 schema, table, where);
	return sql;
}

/* How many parts to copy a table of 'blocks' blocks in. */
static int
table_parts(long long blocks, int jobs, int server_version)
{
	long long	parts;

	if (jobs < 2 || server_version < 140000 || blocks < SPLIT_MIN_BLOCKS)
		return 1;
	parts = blocks / PART_MIN_BLOCKS;
	return parts > 2 * jobs ? 2 * jobs : (int) parts;
}

/* Copy tasks[0..ntasks) on the workers' connections; all committed, or none. */
static int
run_batch(Worker *workers, int nworkers, CopyTask *tasks, int ntasks, int sync,
		  InitialStats *stats, char *err, size_t errsize)
{
	atomic_int	next = 0;
	int			started = 0;
	int			rc = 0;

	for (int i = 0; i < ntasks; i++)
	{
		CopyTask   *t = &tasks[i];
		CopyTask   *table = &tasks[t->first];

		if (t->first == i)
		{
			if (out_open(&t->out, t->path, 1, sync) != 0)
			{
				snprintf(err, errsize, "%s", t->out.errmsg);
				rc = -1;
				goto done;
			}
			t->opened = 1;
			if (t->nparts > 1)
				pthread_mutex_init(&t->lock, NULL);
		}
		memset(&t->job, 0, sizeof(t->job));
		t->job.id = i + 1;
		t->job.njobs = nworkers;
		t->job.sql = t->sql;
		t->job.out = &table->out;
		t->job.out_lock = table->nparts > 1 ? &table->lock : NULL;
		t->job.max_size = MAX_DOCUMENT;
	}

	if (nworkers > ntasks)
		nworkers = ntasks;
	signals_block();
	for (; started < nworkers; started++)
	{
		workers[started].tasks = tasks;
		workers[started].ntasks = ntasks;
		workers[started].next = &next;
		if (pthread_create(&workers[started].thread, NULL, worker_main, &workers[started]) != 0)
			break;
	}
	signals_unblock();
	if (started == 0)
	{
		snprintf(err, errsize, "could not start a thread for the initial copy");
		rc = -1;
		goto done;
	}
	for (int i = 0; i < started; i++)
		pthread_join(workers[i].thread, NULL);

	for (int i = 0; i < ntasks && rc == 0; i++)
		if (tasks[i].job.failed)
		{
			snprintf(err, errsize, "%s", tasks[i].job.errmsg);
			rc = -1;
		}
	if (rc == 0 && (interrupted || atomic_load(&next) < ntasks))
	{
		snprintf(err, errsize, "interrupted during the initial copy");
		rc = -1;
	}
	for (int i = 0; i < ntasks && rc == 0; i++)
	{
		CopyTask   *t = &tasks[i];

		stats->docs += atomic_load(&t->job.rows);
		stats->bytes += atomic_load(&t->job.bytes);
		if (t->first != i)
			continue;
		if (out_flush(&t->out, sync) != 0 || out_commit(&t->out, 1, sync) != 0)
		{
			snprintf(err, errsize, "%s", t->out.errmsg);
			rc = -1;
			break;
		}
		stats->tables++;
	}

done:
	for (int i = 0; i < ntasks; i++)
	{
		if (tasks[i].opened)
		{
			if (!tasks[i].out.committed)
				out_abort(&tasks[i].out);
			out_free(&tasks[i].out);
			if (tasks[i].nparts > 1)
				pthread_mutex_destroy(&tasks[i].lock);
		}
		tasks[i].opened = 0;
	}
	return rc;
}

/* Another connection in the same snapshot, its statements cancelled on a signal. */
static PGconn *
open_worker(PGconn *leader, const char *snapshot, int *cancel_slot, PGcancel **cancel,
			char *err, size_t errsize)
{
	PGconn	   *conn = leader ? db_connect_like(leader, err, errsize) : NULL;
	char		sql[256];

	if (conn == NULL)
		return NULL;
	*cancel = PQgetCancel(conn);
	if (*cancel)
		*cancel_slot = signals_register_cancel(*cancel);
	snprintf(sql, sizeof(sql), "SET TRANSACTION SNAPSHOT '%s'", snapshot);
	if (db_begin_export(conn, 1, err, errsize) != 0 ||
		db_command(conn, sql, "could not import the slot's snapshot", err, errsize) != 0)
	{
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

int
initial_copy(const ConnOpts *copts, const char *snapshot, const char *dir,
			 const char *const *include, int ninclude, int jobs, int sync,
			 InitialStats *stats, char *err, size_t errsize)
{
	PGconn	   *conn;
	PGresult   *res = NULL;
	char		sql[256];
	char	   *schema = NULL;
	char		idir[4096];
	int			rc = -1;
	Worker		workers[MAX_COPY_JOBS];
	int			cancel_slots[MAX_COPY_JOBS];
	PGcancel   *cancels[MAX_COPY_JOBS];
	int			nworkers = 0;
	CopyTask   *tasks = NULL;
	int			ntasks = 0;
	int			maxtasks = 0;

	memset(stats, 0, sizeof(*stats));
	memset(workers, 0, sizeof(workers));
	memset(cancels, 0, sizeof(cancels));
	for (int i = 0; i < MAX_COPY_JOBS; i++)
		cancel_slots[i] = -1;
	if (jobs < 1)
		jobs = 1;
	if (jobs > MAX_COPY_JOBS)
		jobs = MAX_COPY_JOBS;
	snprintf(idir, sizeof(idir), "%s/initial", dir);
	if (mkdir(idir, 0777) != 0 && errno != EEXIST)
	{
		snprintf(err, errsize, "could not create directory \"%s\": %s", idir, strerror(errno));
		return -1;
	}
	conn = db_connect(copts, err, errsize);
	if (conn == NULL)
		return -1;
	cancels[0] = PQgetCancel(conn);
	if (cancels[0])
		cancel_slots[0] = signals_register_cancel(cancels[0]);
	workers[nworkers++].conn = conn;
	if (db_begin_export(conn, 1, err, errsize) != 0)
		goto done;
	snprintf(sql, sizeof(sql), "SET TRANSACTION SNAPSHOT '%s'", snapshot);
	if (db_command(conn, sql, "could not import the slot's snapshot", err, errsize) != 0)
		goto done;

	res = PQexec(conn, "SELECT quote_ident(n.nspname) FROM pg_extension e "
				 "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'bson_out'");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(conn, res, "could not look up the bson_out extension", err, errsize);
		goto done;
	}
	if (PQntuples(res) == 0)
	{
		snprintf(err, errsize, "the initial copy needs the bson_out extension in this database\n"
				 "hint: Run CREATE EXTENSION bson_out in it (the change stream itself does not need it).");
		goto done;
	}
	schema = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);

	res = PQexec(conn, tables_sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(conn, res, "could not list the tables", err, errsize);
		goto done;
	}
	for (int i = 0; i < PQntuples(res); i++)
		if (table_selected(PQgetvalue(res, i, 0), include, ninclude))
			maxtasks += table_parts(strtoll(PQgetvalue(res, i, 6), NULL, 10), jobs,
									PQserverVersion(conn));
	tasks = calloc(maxtasks + 1, sizeof(CopyTask));
	if (tasks == NULL || schema == NULL)
	{
		snprintf(err, errsize, "out of memory");
		goto done;
	}
	for (int i = 0; i < PQntuples(res); i++)
	{
		size_t		n;
		long long	blocks = strtoll(PQgetvalue(res, i, 6), NULL, 10);
		int			nparts;
		int			first = ntasks;

		if (!table_selected(PQgetvalue(res, i, 0), include, ninclude))
			continue;
		nparts = table_parts(blocks, jobs, PQserverVersion(conn));
		for (int p = 0; p < nparts; p++)
		{
			CopyTask   *t = &tasks[ntasks++];

			/* the first part open below, the last open above: no row is missed */
			t->first = first;
			t->sql = document_sql(schema, PQgetvalue(res, i, 2),
								  PQgetisnull(res, i, 3) ? NULL : PQgetvalue(res, i, 3),
								  PQgetisnull(res, i, 4) ? NULL : PQgetvalue(res, i, 4),
								  p == 0 ? -1 : blocks * p / nparts,
								  p == nparts - 1 ? -1 : blocks * (p + 1) / nparts);
			if (t->sql == NULL)
			{
				snprintf(err, errsize, "out of memory");
				goto done;
			}
		}
		n = strlen(idir) + strlen(PQgetvalue(res, i, 5)) + strlen(PQgetvalue(res, i, 1)) + 16;
		tasks[first].nparts = nparts;
		tasks[first].path = malloc(n);
		if (tasks[first].path == NULL)
		{
			snprintf(err, errsize, "out of memory");
			goto done;
		}
		snprintf(tasks[first].path, n, "%s/%s.%s.bson", idir, PQgetvalue(res, i, 5),
				 PQgetvalue(res, i, 1));
	}
	PQclear(res);
	res = NULL;

	/* more connections in the same snapshot, no more than there are parts */
	while (nworkers < jobs && nworkers < ntasks)
	{
		workers[nworkers].conn = open_worker(conn, snapshot, &cancel_slots[nworkers],
											 &cancels[nworkers], err, errsize);
		if (workers[nworkers].conn == NULL)
			goto done;
		nworkers++;
	}

	/* BATCH_TABLES tables at a time, each with all its parts */
	for (int first = 0, n; first < ntasks; first += n)
	{
		int			tables = 0;

		for (n = 0; first + n < ntasks; n++)
			if (tasks[first + n].first == first + n && tables++ == BATCH_TABLES)
				break;

		if (interrupted)
		{
			snprintf(err, errsize, "interrupted during the initial copy");
			goto done;
		}
		if (run_batch(workers, nworkers, tasks + first, n, sync, stats, err, errsize) != 0)
			goto done;
	}
	rc = 0;
	for (int i = 0; i < nworkers && rc == 0; i++)
		rc = db_command(workers[i].conn, "COMMIT", "could not end the initial copy's transaction",
						err, errsize);

done:
	PQclear(res);
	free(schema);
	for (int i = 0; i < ntasks; i++)
	{
		free(tasks[i].path);
		free(tasks[i].sql);
	}
	free(tasks);
	for (int i = 0; i < MAX_COPY_JOBS; i++)
	{
		if (cancel_slots[i] >= 0)
			signals_unregister_cancel(cancel_slots[i]);
		if (cancels[i])
			PQfreeCancel(cancels[i]);
	}
	for (int i = 0; i < nworkers; i++)
		PQfinish(workers[i].conn);
	return rc;
}
