/*
 * dump.c
 *		A dump directory from bson_collections() (see dump.h).
 */
#include "dump.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db.h"
#include "dump_name.h"
#include "export.h"
#include "output.h"
#include "signals.h"

/* collections written at a time: a descriptor and a 1 MiB buffer each */
#define BATCH_TABLES		32

/*
 * A source of at least SPLIT_MIN_BLOCKS (16 MiB at the default block size)
 * is read in parts of at least PART_MIN_BLOCKS, up to two a job.
 */
#define SPLIT_MIN_BLOCKS	2048
#define PART_MIN_BLOCKS		1024

/* what the parts waiting for their turn may hold, shared by the jobs */
#define HOLD_BUDGET			((size_t) 64 * 1024 * 1024)
#define MIN_HOLD			((size_t) 4 * 1024 * 1024)

/* the signature that the dump needs, to name it when it is missing */
#define COLLECTIONS_FN		"bson_collections(text[], text[], text, boolean, boolean, boolean)"

typedef struct Collection
{
	const char *db;				/* in the result */
	const char *coll;
	const char *metadata;
	char	   *path;			/* DIR/<db>/<name>.bson */
	char	   *meta_path;		/* DIR/<db>/<name>.metadata.json */
	int			replace;		/* the .bson may replace a file there */
	int			first_part;
	int			nparts;
	int			nsources;
	OutFile		out;
	int			opened;
	ChunkPlan	plan;			/* its parts' turns */
} Collection;

typedef struct Part
{
	int			coll;			/* index into the collections */
	char	   *sql;
	char	   *where;			/* the source and its blocks, for messages */
	Job			job;
} Part;

typedef struct Dump
{
	const DumpOptions *o;
	PGresult   *res;			/* bson_collections' rows */
	Collection *colls;
	int			ncolls;
	Part	   *parts;
	int			nparts;
	int			server_version;

	/* the jobs' connections; 0 is the leader's */
	PGconn	   *conns[DUMP_MAX_JOBS];
	PGcancel   *cancels[DUMP_MAX_JOBS];
	int			cancel_slots[DUMP_MAX_JOBS];
	int			nconns;

	/* the batch running: parts [next, end) left to take */
	atomic_int	next;
	int			end;
	atomic_int	first_failed;	/* the part that failed first, or -1 */
	int			running;		/* jobs still running, under lock */
	pthread_mutex_t lock;
	pthread_cond_t done;

	DumpStats  *stats;
	char	   *err;
	size_t		errsize;
} Dump;

typedef struct Worker
{
	Dump	   *d;
	int			index;			/* its connection */
	pthread_t	thread;
} Worker;

static int
dump_fail(Dump *d, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(d->err, d->errsize, fmt, ap);
	va_end(ap);
	return -1;
}

/* mkdir, and fsync its parent when it is new, so that the entry survives a crash */
static int
make_dir(Dump *d, const char *path)
{
	char	   *parent;
	int			fd;

	if (mkdir(path, 0700) != 0)
	{
		struct stat st;

		if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return 0;
		return dump_fail(d, "could not create directory \"%s\": %s", path,
						 errno == EEXIST ? "a file of that name exists" : strerror(errno));
	}
	if (!d->o->sync)
		return 0;
	parent = path_dirname(path);
	if (parent == NULL)
		return dump_fail(d, "out of memory");
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
	{
		(void) fsync(fd);
		close(fd);
	}
	free(parent);
	return 0;
}

/* "a","b" as an array literal's elements; malloc'ed, or NULL for no array */
static char *
array_literal(const char *const *items, int n)
{
	size_t		size = 3;
	char	   *s;
	char	   *p;

	if (n == 0)
		return NULL;
	for (int i = 0; i < n; i++)
		size += 2 * strlen(items[i]) + 3;
	s = p = malloc(size);
	if (s == NULL)
		return NULL;
	*p++ = '{';
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			*p++ = ',';
		*p++ = '"';
		for (const char *c = items[i]; *c; c++)
		{
			if (*c == '"' || *c == '\\')
				*p++ = '\\';
			*p++ = *c;
		}
		*p++ = '"';
	}
	*p++ = '}';
	*p = '\0';
	return s;
}

/*
 * bson_out's schema, and whether its version has bson_collections: a
 * database whose extension is older needs ALTER EXTENSION ... UPDATE.
 */
static char *
extension_schema(Dump *d, PGconn *conn)
{
	PGresult   *res = PQexec(conn,
							 "SELECT quote_ident(n.nspname), e.extversion, "
							 "  to_regprocedure(quote_ident(n.nspname) || '." COLLECTIONS_FN "') IS NOT NULL "
							 "FROM pg_catalog.pg_extension e "
							 "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
							 "WHERE e.extname = 'bson_out'");
	char	   *schema = NULL;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		db_error(conn, res, "could not look up the bson_out extension", d->err, d->errsize);
	else if (PQntuples(res) == 0)
		dump_fail(d, "the bson_out extension is not installed in database \"%s\"\n"
				  "hint: run CREATE EXTENSION bson_out; in that database", PQdb(conn));
	else if (strcmp(PQgetvalue(res, 0, 2), "t") != 0)
		dump_fail(d, "a dump needs the function %s, which the bson_out extension in database "
				  "\"%s\" (version %s) does not have\n"
				  "hint: install the extension's files (make install) and run ALTER EXTENSION "
				  "bson_out UPDATE; in that database", COLLECTIONS_FN, PQdb(conn),
				  PQgetvalue(res, 0, 1));
	else if ((schema = strdup(PQgetvalue(res, 0, 0))) == NULL)
		dump_fail(d, "out of memory");
	PQclear(res);
	return schema;
}

/*
 * On a node of a Citus cluster, a stream's first copy is of the rows that
 * node's change stream carries: its shards, named by their tables
 * (bson_out.citus_rows), which Citus hides from queries of pg_class, and
 * whose LOCK (ACCESS SHARE, for the copy) it takes for a change, unless
 * told otherwise.  Every connection of the copy is set up so.
 */
static int
node_session(Dump *d, PGconn *conn)
{
	if (!d->o->node_rows)
		return 0;
	return db_command(conn, "SELECT pg_catalog.set_config('bson_out.citus_rows', 'node', false), "
					  "  pg_catalog.set_config('citus.override_table_visibility', 'off', false), "
					  "  pg_catalog.set_config('citus.enable_manual_changes_to_shards', 'on', false) "
					  "FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus'",
					  "could not set up the session", d->err, d->errsize);
}

/* bson_collections' rows, in its order (db, coll, source) */
static int
list_collections(Dump *d, PGconn *conn)
{
	const Selection *o = d->o->sel;
	char	   *schema = extension_schema(d, conn);
	char	   *include = array_literal(o->include, o->ninclude);
	char	   *exclude = array_literal(o->exclude, o->nexclude);
	const char *params[6];
	char		relation[16];
	char		sql[2048];
	int			rc = 0;

	if (schema == NULL)
		rc = -1;
	else if ((o->ninclude && include == NULL) || (o->nexclude && exclude == NULL) ||
			 strlen(schema) > 300)
		rc = dump_fail(d, "out of memory");
	if (rc != 0)
		goto done;
	params[0] = include;
	params[1] = exclude;
	params[2] = o->ns_db;
	params[3] = o->include_schema ? "true" : "false";
	params[4] = o->partition_root ? "true" : "false";
	snprintf(relation, sizeof(relation), "%u", d->o->relation);
	params[5] = relation;

	/*
	 * Names, patterns and metadata in UTF-8, as file names and metadata.json
	 * must be, whatever the database's encoding: the server converts them.
	 */
	if (db_command(conn, "SET client_encoding = 'UTF8'",
				   "could not set the client encoding", d->err, d->errsize) != 0)
	{
		rc = -1;
		goto done;
	}

	if (node_session(d, conn) != 0)
	{
		rc = -1;
		goto done;
	}

	/*
	 * The source's name qualified, whatever the search_path; and for LOCK,
	 * with the tables whose rows its documents embed, which its query reads
	 * too (their names in the server's "embedded", none before 1.3.0)
	 */
	snprintf(sql, sizeof(sql),
			 "SELECT b.db, b.coll, pg_catalog.format('%%I.%%I', n.nspname, c.relname), "
			 "  b.blocks, b.query, b.metadata, "
			 "  pg_catalog.concat_ws(', ', pg_catalog.format('%%I.%%I', n.nspname, c.relname), "
			 "    (SELECT pg_catalog.string_agg(t #>> '{}', ', ') FROM pg_catalog.jsonb_path_query("
			 "       (pg_catalog.to_jsonb(b) ->> 'embedded')::pg_catalog.jsonb, 'strict $.**.table') t)) "
			 "FROM %s.bson_collections($1::text[], $2::text[], $3, $4::boolean, $5::boolean) "
			 "  WITH ORDINALITY b "
			 "JOIN pg_catalog.pg_class c ON c.oid = b.source "
			 "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
			 "WHERE $6::pg_catalog.oid = 0 OR b.relation::pg_catalog.oid = $6::pg_catalog.oid "
			 "ORDER BY b.ordinality", schema);
	/* bson_collections() locks the tables: a wait for one is said (db_exec_waiting) */
	d->res = db_exec_waiting(conn, sql, 6, params, NULL);
	if (PQresultStatus(d->res) != PGRES_TUPLES_OK)
	{
		db_lock_error(conn, d->res, "could not list the tables", NULL, d->err, d->errsize);
		rc = -1;
	}

done:
	free(schema);
	free(include);
	free(exclude);
	return rc;
}

int
dump_names(PGconn *conn, const DumpOptions *o,
		   int (*check) (const char *db, const char *coll, void *arg), void *arg,
		   char *err, size_t errsize)
{
	Dump		d;
	int			rc;

	memset(&d, 0, sizeof(d));
	d.o = o;
	d.err = err;
	d.errsize = errsize;
	rc = list_collections(&d, conn);
	for (int i = 0; rc == 0 && i < PQntuples(d.res); i++)
		if (i == 0 || strcmp(PQgetvalue(d.res, i, 0), PQgetvalue(d.res, i - 1, 0)) != 0 ||
			strcmp(PQgetvalue(d.res, i, 1), PQgetvalue(d.res, i - 1, 1)) != 0)
			rc = check(PQgetvalue(d.res, i, 0), PQgetvalue(d.res, i, 1), arg);
	PQclear(d.res);
	return rc;
}

/* How many parts to read a source of 'blocks' blocks in. */
static int
source_parts(const Dump *d, long long blocks)
{
	long long	parts;

	/* before 14 there is no TID Range Scan: each part would read it all */
	if (d->o->jobs < 2 || d->server_version < 140000 || blocks < SPLIT_MIN_BLOCKS)
		return 1;
	parts = blocks / PART_MIN_BLOCKS;
	return parts > 2 * d->o->jobs ? 2 * d->o->jobs : (int) parts;
}

/* Part p of n of a source's query: blocks [from, to), the first open below, the last above. */
static int
make_part(Dump *d, Part *part, const char *source, const char *locks, const char *query,
		  long long blocks, int p, int n)
{
	long long	from = blocks * p / n;
	long long	to = blocks * (p + 1) / n;
	char		where[128] = "";
	size_t		size = strlen(query) + strlen(source) + strlen(locks) + 512;

	part->sql = malloc(size);
	part->where = malloc(strlen(source) + 128);
	if (part->sql == NULL || part->where == NULL)
		return dump_fail(d, "out of memory");
	if (n > 1 && p == 0)
		snprintf(where, sizeof(where), " WHERE t.ctid < '(%lld,0)'::tid", to);
	else if (n > 1 && p == n - 1)
		snprintf(where, sizeof(where), " WHERE t.ctid >= '(%lld,0)'::tid", from);
	else if (n > 1)
		snprintf(where, sizeof(where),
				 " WHERE t.ctid >= '(%lld,0)'::tid AND t.ctid < '(%lld,0)'::tid", from, to);

	/*
	 * The source locked first, without waiting: another connection than
	 * the leader (which holds the lock already) would otherwise queue
	 * behind a session waiting for an exclusive lock behind the leader's,
	 * which waits for the dump to end: forever.  pg_dump's workers do the
	 * same.  So are the tables of the rows its documents embed.
	 */
	snprintf(part->sql, size, "LOCK TABLE %s IN ACCESS SHARE MODE NOWAIT; "
			 "COPY (%s%s) TO STDOUT (FORMAT binary)", locks, query, where);
	if (n == 1)
		snprintf(part->where, strlen(source) + 128, "%s", source);
	else if (p == n - 1)
		snprintf(part->where, strlen(source) + 128, "%s, blocks %lld to the end", source, from);
	else
		snprintf(part->where, strlen(source) + 128, "%s, blocks %lld to %lld", source,
				 n > 1 && p == 0 ? 0 : from, to - 1);
	return 0;
}

/* path "DIR/db/name.suffix"; malloc'ed */
static char *
file_path(const char *dir, const char *db, const char *name, const char *suffix)
{
	size_t		n = strlen(dir) + strlen(db) + strlen(name) + strlen(suffix) + 3;
	char	   *s = malloc(n);

	if (s)
		snprintf(s, n, "%s/%s/%s%s", dir, db, name, suffix);
	return s;
}

/*
 * The collections and their parts from the rows.  An existing non-empty
 * .bson is refused without --force, here, before anything is written.
 */
static int
plan_dump(Dump *d)
{
	PGresult   *res = d->res;
	int			nrows = PQntuples(res);
	int			maxparts = 0;
	int			exists = 0;
	const char *first_existing = NULL;

	d->colls = calloc(nrows ? nrows : 1, sizeof(Collection));
	for (int i = 0; i < nrows; i++)
		maxparts += source_parts(d, strtoll(PQgetvalue(res, i, 3), NULL, 10));
	d->parts = calloc(maxparts ? maxparts : 1, sizeof(Part));
	if (d->colls == NULL || d->parts == NULL)
		return dump_fail(d, "out of memory");

	for (int i = 0; i < nrows; i++)
	{
		const char *db = PQgetvalue(res, i, 0);
		const char *coll = PQgetvalue(res, i, 1);
		long long	blocks = strtoll(PQgetvalue(res, i, 3), NULL, 10);
		int			n = source_parts(d, blocks);
		Collection *c = d->ncolls ? &d->colls[d->ncolls - 1] : NULL;

		if (c == NULL || strcmp(c->db, db) != 0 || strcmp(c->coll, coll) != 0)
		{
			const char *why = dump_db_name_problem(db);
			char	   *name;
			struct stat st;

			if (why)
				return dump_fail(d, "the database name \"%s\" cannot be a directory of the dump: "
								 "%s, and mongorestore refuses such names\n"
								 "hint: name the database with --ns-db NAME", db, why);
			if (coll[0] == '\0')
				return dump_fail(d, "bson_collections() gave an empty collection name");
			c = &d->colls[d->ncolls++];
			c->db = db;
			c->coll = coll;
			c->metadata = PQgetvalue(res, i, 5);
			c->first_part = d->nparts;
			c->out.fd = -1;
			name = dump_file_name(coll);
			if (name == NULL)
				return dump_fail(d, "out of memory");
			c->path = file_path(d->o->dir, db, name, DUMP_DATA_SUFFIX);
			c->meta_path = file_path(d->o->dir, db, name, DUMP_META_SUFFIX);
			free(name);
			if (c->path == NULL || c->meta_path == NULL)
				return dump_fail(d, "out of memory");
			if (stat(c->path, &st) == 0)
			{
				if (S_ISDIR(st.st_mode))
					return dump_fail(d, "\"%s\" is a directory", c->path);
				if (st.st_size > 0 && !d->o->force)
				{
					if (exists++ == 0)
						first_existing = c->path;
				}
				else
					c->replace = 1;
			}
		}
		c->nsources++;
		for (int p = 0; p < n; p++)
		{
			Part	   *part = &d->parts[d->nparts++];

			part->coll = d->ncolls - 1;
			if (make_part(d, part, PQgetvalue(res, i, 2), PQgetvalue(res, i, 6),
						  PQgetvalue(res, i, 4), blocks, p, n) != 0)
				return -1;
		}
		c->nparts += n;
	}
	if (exists)
		return dump_fail(d, "output file \"%s\" already exists%s; use --force to overwrite "
						 "%s", first_existing, exists > 1 ? " (and others)" : "",
						 exists > 1 ? "them" : "it");
	return 0;
}

/* The dump's root with the directories above it, as pg_basebackup -D makes them */
static int
make_root(Dump *d)
{
	char	   *path = strdup(d->o->dir);
	int			rc = 0;

	if (path == NULL)
		return dump_fail(d, "out of memory");
	for (char *p = path + 1; *p && rc == 0; p++)
		if (*p == '/' && p[-1] != '/')
		{
			*p = '\0';
			rc = make_dir(d, path);
			*p = '/';
		}
	if (rc == 0)
		rc = make_dir(d, path);
	free(path);
	return rc;
}

/* Every database's directory, and what dead runs left in it. */
static int
make_dirs(Dump *d)
{
	if (make_root(d) != 0)
		return -1;
	for (int i = 0; i < d->ncolls; i++)
	{
		char	   *dir;
		int			rc;

		if (i > 0 && strcmp(d->colls[i].db, d->colls[i - 1].db) == 0)
			continue;
		dir = file_path(d->o->dir, d->colls[i].db, "", "");
		if (dir == NULL)
			return dump_fail(d, "out of memory");
		dir[strlen(dir) - 1] = '\0';
		rc = make_dir(d, dir);
		if (rc == 0)
			out_remove_stale(dir);
		free(dir);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/*
 * The sources locked on the leader as soon as they are known: against a
 * DROP, and against a TRUNCATE, which is not MVCC-safe (the snapshot would
 * see the table empty).
 */
static int
lock_sources(Dump *d, PGconn *conn)
{
	size_t		size = 64;
	char	   *sql;
	int			rc;

	if (PQntuples(d->res) == 0)
		return 0;
	for (int i = 0; i < PQntuples(d->res); i++)
		size += strlen(PQgetvalue(d->res, i, 6)) + 2;
	sql = malloc(size);
	if (sql == NULL)
		return dump_fail(d, "out of memory");
	strcpy(sql, "LOCK TABLE ");
	for (int i = 0; i < PQntuples(d->res); i++)
	{
		if (i > 0)
			strcat(sql, ", ");
		strcat(sql, PQgetvalue(d->res, i, 6));
	}
	strcat(sql, " IN ACCESS SHARE MODE");
	rc = db_command(conn, sql, "could not lock the tables", d->err, d->errsize);
	free(sql);
	return rc;
}

/* Another connection in the snapshot, its statements cancelled on a signal. */
static int
open_connection(Dump *d, const char *snapshot)
{
	int			i = d->nconns;
	PGconn	   *conn = db_connect_like(d->conns[0], d->err, d->errsize);
	char		sql[256];

	if (conn == NULL)
		return -1;
	d->conns[i] = conn;
	d->nconns++;
	d->cancels[i] = PQgetCancel(conn);
	if (d->cancels[i])
		d->cancel_slots[i] = signals_register_cancel(d->cancels[i]);
	snprintf(sql, sizeof(sql), "SET TRANSACTION SNAPSHOT '%s'", snapshot);
	if (db_begin_export(conn, 1, d->err, d->errsize) != 0 ||
		db_command(conn, sql, "could not import the snapshot", d->err, d->errsize) != 0 ||
		node_session(d, conn) != 0)
		return -1;
	return 0;
}

static void *
worker_main(void *arg)
{
	Worker	   *w = arg;
	Dump	   *d = w->d;

	for (;;)
	{
		int			i = atomic_fetch_add(&d->next, 1);
		int			none = -1;

		if (i >= d->end)
			break;
		d->parts[i].job.conn = d->conns[w->index];
		d->parts[i].job.id = w->index + 1;
		if (job_run(&d->parts[i].job) != 0)
		{
			/* first the culprit, then the stop: the others fail "stopped" after it */
			atomic_compare_exchange_strong(&d->first_failed, &none, i);
			atomic_store(&export_stop, 1);
			break;
		}
	}
	pthread_mutex_lock(&d->lock);
	d->running--;
	pthread_cond_broadcast(&d->done);
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* The totals so far, for the progress line */
static void
show_progress(Dump *d, int first, int end)
{
	uint64_t	rows = d->stats->docs;
	uint64_t	bytes = d->stats->bytes;

	if (d->o->progress == NULL && d->o->tick == NULL)
		return;
	for (int i = first; i < end; i++)
	{
		rows += atomic_load_explicit(&d->parts[i].job.rows, memory_order_relaxed);
		bytes += atomic_load_explicit(&d->parts[i].job.bytes, memory_order_relaxed);
	}
	if (d->o->progress)
		progress_update(d->o->progress, rows, bytes);
	if (d->o->tick)
		d->o->tick(d->o->tick_arg, rows, bytes);
}

/*
 * Stopping: a cancel that reached a server before its statement started
 * was lost; sent again once a second to every connection.
 */
static void
repeat_cancels(Dump *d, double *cancel_at)
{
	double		t = now_seconds();
	char		buf[256];

	if (t - *cancel_at < 1.0)
		return;
	for (int i = 0; i < d->nconns; i++)
		if (d->cancels[i])
			PQcancel(d->cancels[i], buf, sizeof(buf));
	*cancel_at = t;
}

/* Run parts [first, end) on the jobs; -1 with err set if any failed. */
static int
run_parts(Dump *d, int first, int end)
{
	Worker		workers[DUMP_MAX_JOBS];
	int			nworkers = d->nconns < end - first ? d->nconns : end - first;
	int			started = 0;
	double		cancel_at = 0;

	atomic_store(&d->next, first);
	atomic_store(&d->first_failed, -1);
	d->end = end;
	d->running = 0;
	signals_block();
	for (; started < nworkers; started++)
	{
		workers[started].d = d;
		workers[started].index = started;
		pthread_mutex_lock(&d->lock);
		d->running++;
		pthread_mutex_unlock(&d->lock);
		if (pthread_create(&workers[started].thread, NULL, worker_main, &workers[started]) != 0)
		{
			pthread_mutex_lock(&d->lock);
			d->running--;
			pthread_mutex_unlock(&d->lock);
			break;
		}
	}
	signals_unblock();

	pthread_mutex_lock(&d->lock);
	while (d->running > 0)
	{
		pthread_mutex_unlock(&d->lock);
		show_progress(d, first, end);
		if (interrupted || atomic_load(&export_stop))
			repeat_cancels(d, &cancel_at);
		pthread_mutex_lock(&d->lock);
		if (d->running > 0)
			cond_wait_ms(&d->done, &d->lock, 100);
	}
	pthread_mutex_unlock(&d->lock);
	for (int i = 0; i < started; i++)
		pthread_join(workers[i].thread, NULL);

	if (interrupted)
		return dump_fail(d, "interrupted");
	if (atomic_load(&d->first_failed) >= 0)
		return dump_fail(d, "%s", d->parts[atomic_load(&d->first_failed)].job.errmsg);
	if (started == 0 || atomic_load(&d->next) < end)
		return dump_fail(d, "could not start a thread for the dump");
	return 0;
}

/* The collection's metadata file, written whole and renamed into place */
static int
write_metadata(Dump *d, Collection *c)
{
	OutFile		m;
	int			rc = 0;

	if (out_open(&m, c->meta_path, 1, d->o->sync) != 0 ||
		out_write(&m, c->metadata, strlen(c->metadata)) != 0 ||
		out_flush(&m, d->o->sync) != 0 ||
		out_commit(&m, 1, d->o->sync) != 0)
	{
		rc = dump_fail(d, "%s", m.errmsg);
		out_abort(&m);
	}
	out_free(&m);
	return rc;
}

/* Collections [first, end): their files opened, their parts run, their files renamed into place. */
static int
run_batch(Dump *d, int first, int end)
{
	int			rc = 0;
	int			pfirst = d->colls[first].first_part;
	int			pend = end < d->ncolls ? d->colls[end].first_part : d->nparts;
	size_t		hold = HOLD_BUDGET / (size_t) d->nconns;

	if (hold < MIN_HOLD)
		hold = MIN_HOLD;
	for (int i = first; i < end && rc == 0; i++)
	{
		Collection *c = &d->colls[i];
		ChunkPlan  *plan = &c->plan;

		if (out_open(&c->out, c->path, d->o->force || c->replace, d->o->sync) != 0)
		{
			rc = dump_fail(d, "%s", c->out.errmsg);
			out_free(&c->out);
			break;
		}
		c->opened = 1;
		memset(plan, 0, sizeof(*plan));
		plan->nchunks = c->nparts;
		plan->hold_max = hold;
		plan->verbose = d->o->verbose;
		plan->clear_line = d->o->progress && d->o->progress->enabled ? "\r\033[K" : "";
		pthread_mutex_init(&plan->lock, NULL);
		cond_init_monotonic(&plan->turn);
		atomic_init(&plan->next, 0);
		plan->ready = 1;
		for (int p = 0; p < c->nparts; p++)
		{
			Part	   *part = &d->parts[c->first_part + p];
			Job		   *j = &part->job;

			memset(j, 0, sizeof(*j));
			j->njobs = d->nconns;
			j->sql = part->sql;
			j->shard = part->where;
			j->chunks = plan;
			j->chunk = p;
			j->out = &c->out;
			j->max_size = d->o->max_size;
			j->max_size_option = d->o->max_size_option;
			j->validate = d->o->validate;
			j->first_block = j->end_block = -1;
		}
	}
	if (rc == 0 && interrupted)
		rc = dump_fail(d, "interrupted");
	if (rc == 0)
		rc = run_parts(d, pfirst, pend);

	for (int i = first; i < end && rc == 0; i++)
		if (out_flush(&d->colls[i].out, d->o->sync) != 0)
			rc = dump_fail(d, "%s", d->colls[i].out.errmsg);

	/* no signal may remove a file while it is being renamed */
	signals_block();
	if (rc == 0 && interrupted)
		rc = dump_fail(d, "interrupted");
	for (int i = first; i < end && rc == 0; i++)
	{
		Collection *c = &d->colls[i];

		if (out_commit(&c->out, d->o->force || c->replace, d->o->sync) != 0)
			rc = dump_fail(d, "%s", c->out.errmsg);
		else if (write_metadata(d, c) == 0)
		{
			d->stats->collections++;
			d->stats->sources += c->nsources;
		}
		else
			rc = -1;
	}
	signals_unblock();
	for (int p = pfirst; p < pend && rc == 0; p++)
	{
		d->stats->docs += atomic_load(&d->parts[p].job.rows);
		d->stats->bytes += atomic_load(&d->parts[p].job.bytes);
	}

	for (int i = first; i < end; i++)
	{
		Collection *c = &d->colls[i];

		if (c->opened)
		{
			if (!c->out.committed)
				out_abort(&c->out);
			out_free(&c->out);
			c->opened = 0;
		}
		if (c->plan.ready)
		{
			pthread_mutex_destroy(&c->plan.lock);
			pthread_cond_destroy(&c->plan.turn);
			c->plan.ready = 0;
		}
	}
	return rc;
}

static void
free_dump(Dump *d)
{
	for (int i = 1; i < d->nconns; i++)
		PQfinish(d->conns[i]);
	for (int i = 0; i < DUMP_MAX_JOBS; i++)
	{
		if (d->cancel_slots[i] >= 0)
			signals_unregister_cancel(d->cancel_slots[i]);
		if (d->cancels[i])
			PQfreeCancel(d->cancels[i]);
	}
	for (int i = 0; i < d->nparts; i++)
	{
		free(d->parts[i].sql);
		free(d->parts[i].where);
	}
	for (int i = 0; i < d->ncolls; i++)
	{
		free(d->colls[i].path);
		free(d->colls[i].meta_path);
	}
	free(d->parts);
	free(d->colls);
	PQclear(d->res);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->done);
}

int
dump_write(PGconn *leader, const char *snapshot, const DumpOptions *o,
		   DumpStats *stats, char *err, size_t errsize)
{
	Dump		d;
	int			rc = -1;
	int			jobs = o->jobs < 1 ? 1 : o->jobs > DUMP_MAX_JOBS ? DUMP_MAX_JOBS : o->jobs;

	memset(&d, 0, sizeof(d));
	memset(stats, 0, sizeof(*stats));
	for (int i = 0; i < DUMP_MAX_JOBS; i++)
		d.cancel_slots[i] = -1;
	d.o = o;
	d.stats = stats;
	d.err = err;
	d.errsize = errsize;
	d.conns[0] = leader;
	d.nconns = 1;
	d.server_version = PQserverVersion(leader);
	pthread_mutex_init(&d.lock, NULL);
	cond_init_monotonic(&d.done);

	if (list_collections(&d, leader) != 0 || lock_sources(&d, leader) != 0 ||
		plan_dump(&d) != 0 || make_dirs(&d) != 0)
		goto done;

	/* no more connections than parts: none is opened for nothing */
	while (d.nconns < jobs && d.nconns < d.nparts)
		if (open_connection(&d, snapshot) != 0)
			goto done;

	for (int first = 0, end; first < d.ncolls; first = end)
	{
		end = first + BATCH_TABLES < d.ncolls ? first + BATCH_TABLES : d.ncolls;
		if (run_batch(&d, first, end) != 0)
			goto done;
	}
	rc = 0;
	for (int i = 1; i < d.nconns && rc == 0; i++)
		rc = db_command(d.conns[i], "COMMIT", "could not end a job's transaction", err, errsize);

done:
	free_dump(&d);
	return rc;
}
