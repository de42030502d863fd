/*
 * pg_bsonexport.c
 *		Stream a table or query into a mongorestore-ready .bson file, or
 *		tables into a dump directory.
 *
 *	pg_bsonexport [connection options] (--table NAME [--column COL | --no-id] | --query SQL)
 *				  [--extended-json] [-o FILE | -o -] [--jobs N [--split]] ...
 *	pg_bsonexport [connection options] --out-dir DIR [--include-tables LIST ...]
 *				  [--exclude-tables LIST ...] [--jobs N] ...
 *
 * This file has the options and the main flow: connect, check what is to
 * be exported (source.c), open the outputs (output.c), run the export jobs
 * (export.c) on threads while showing progress (progress.c), then either
 * commit every output or remove every temporary file.  The COPY binary
 * format is parsed in copy_binary.c, documents are checked in bson_check.c
 * (with the extension's validator, src/core/bson_reader.c), and
 * interruptions are handled as signals.c describes.  --out-dir hands the
 * whole dump to dump.c, in the leader's snapshot.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "bson_check.h"
#include "citus.h"
#include "common.h"
#include "db.h"
#include "dump.h"
#include "export.h"
#include "option_parse.h"
#include "output.h"
#include "progress.h"
#include "selection.h"
#include "signals.h"
#include "source.h"

#define PROGNAME	"pg_bsonexport"
#define MAX_JOBS	DUMP_MAX_JOBS
#define MAX_CONNS	256			/* with a distributed table: a job's to each node */
#define MAX_WORKER_HOSTS 64
/* how many times the shards may move under the start of an export */
#define SHARD_PLAN_ATTEMPTS 3
#define MAX_SPLIT_SHARDS 512		/* --split of a Citus table: files open at once */

/*
 * --jobs N into one file (see ChunkPlan in export.h): about CHUNKS_PER_JOB
 * chunks a job, so that the jobs end close together, of at least
 * MIN_CHUNK_BLOCKS blocks (a statement each) and at most MAX_CHUNK_BLOCKS
 * (8 MiB of heap at the default block size), so that a chunk's rows
 * usually fit in what a waiting job may hold: HOLD_BUDGET shared by the
 * jobs, at least MIN_HOLD each.
 */
#define CHUNKS_PER_JOB		8
#define MIN_CHUNK_BLOCKS	32
#define MAX_CHUNK_BLOCKS	1024
#define HOLD_BUDGET			((size_t) 64 * 1024 * 1024)
#define MIN_HOLD			((size_t) 4 * 1024 * 1024)

typedef struct Options
{
	ConnOpts	conn;
	const char *table;
	const char *column;
	const char *query;
	int			extended_json;
	int			no_id;
	const char *output;
	int			output_given;
	const char *out_dir;
	Selection	sel;
	int			force;
	int			no_sync;
	int			no_validate;
	int			jobs;
	int			jobs_given;
	int			split;
	int			quiet;
	int			verbose;
	size_t		max_size;
	int			via_coordinator;
	char	   *worker_hosts[MAX_WORKER_HOSTS];
	int			nworker_hosts;
} Options;

/* everything the cleanup must see */
static Options opt;
static PGconn *conns[MAX_CONNS];	/* 0: the leader's */
static PGcancel *cancels[MAX_CONNS];
static int	cancel_slots[MAX_CONNS];
static int	nconns = 1;
static OutFile *outs;			/* final outputs: 1, or one a job (a shard) with --split */
static int	nouts;
static Progress progress;

/* for waking the main thread when a job ends */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond;	/* cond_init_monotonic in main */

/* What main's phases hand on to each other. */
typedef struct Export
{
	Source		src;
	int			njobs;
	int64_t		nblocks;		/* the table's size (--jobs only) */
	ChunkPlan	plan;			/* --jobs into one file; ready once planned */

	/* a distributed table: its shards, read on their nodes (citus.h) */
	int			distributed;
	CitusTable	citus;
	ChunkTask  *tasks;			/* one a shard */
	char	   *settings;		/* what sets the leader's settings on a node */

	Job			jobs[MAX_JOBS];
	pthread_t	threads[MAX_JOBS];
	int			conn_job[MAX_CONNS];	/* the job (0-based) a connection is for; -1: none */

	/* the summary's totals: the jobs' final counts */
	uint64_t	rows;
	uint64_t	bytes;
	uint64_t	nulls;
} Export;

static void
usage(FILE *f)
{
	fprintf(f,
			"%s streams a table or query into a .bson file that mongorestore and\n"
			"bsondump read: the BSON documents back to back, checked on the way; or\n"
			"tables into a dump directory that mongorestore loads.\n"
			"\n"
			"Usage:\n"
			"  %s [OPTION]... --table NAME [--no-id | --column COL] [DBNAME]\n"
			"  %s [OPTION]... --query 'SELECT <one bytea column>' [DBNAME]\n"
			"  %s [OPTION]... --out-dir DIR [--include-tables LIST]... [DBNAME]\n"
			"\n"
			"What to export:\n"
			"  -t, --table=NAME        every row as the document bson_document(row) makes:\n"
			"                          _id (the primary key or replica identity) first,\n"
			"                          then the typed columns; NAME follows SQL rules\n"
			"                          (schema.table, \"MixedCase\")\n"
			"      --no-id             with --table: row_to_bson(row), the columns alone\n"
			"  -c, --column=COL        with --table: to_bson(COL) of that jsonb column, or\n"
			"                          json_to_bson(COL) of a json column\n"
			"      --extended-json     with --column: Extended JSON wrappers ({\"$oid\": ...})\n"
			"                          become BSON types (extended_json => true)\n"
			"      --query=SQL         any query returning one bytea column of BSON documents\n"
			"\n"
			"Output:\n"
			"  -o, --output=FILE       write FILE (default, or \"-\": standard output); written\n"
			"                          to a temporary file .FILE.tmp.PID beside it, fsynced and\n"
			"                          renamed when complete, removed on any error; an\n"
			"                          existing FIFO or device is written in place\n"
			"  -f, --force             overwrite FILE (with --out-dir: a non-empty\n"
			"                          <collection>.bson), or a block device, if it exists\n"
			"      --no-sync           do not fsync FILE before renaming it (faster; as\n"
			"                          pg_dump --no-sync: an OS crash may then lose it)\n"
			"  -j, --jobs=N            with --table: N connections export disjoint block\n"
			"                          ranges of the table in one snapshot (default 1); a\n"
			"                          Citus table: N shards at a time (see below); with\n"
			"                          --out-dir: N connections, tables in parallel and a\n"
			"                          large one in block ranges\n"
			"      --split             with --jobs: N files FILE.0001.bson ... FILE.000N.bson\n"
			"                          (FILE's .bson suffix, if any, moved after the number)\n"
			"                          instead of one file in table order; a Citus table:\n"
			"                          one file per shard\n"
			"      --max-size=SIZE     refuse documents larger than SIZE bytes (units kB,\n"
			"                          MB, GB, 1024-based as PostgreSQL's; k, M, G too);\n"
			"                          default 16MB, MongoDB's limit; at most 2147483647\n"
			"                          (BSON's int32 length)\n"
			"      --no-validate       check only each document's length header and final\n"
			"                          byte, not its elements (faster; may write invalid BSON)\n"
			"  -q, --quiet             no progress line, no summary\n"
			"  -v, --verbose           also print the statements run\n"
			"\n"
			"A dump directory (mongorestore DIR loads it), in one snapshot:\n"
			"      --out-dir=DIR       DIR/<db>/<collection>.bson and .metadata.json for every\n"
			"                          table selected (the server's bson_collections(): a\n"
			"                          partitioned table is one collection); not with\n"
			"                          --table, --query or --output\n"
			SELECTION_HELP
			"\n"
			"Reading the tables:\n"
			"      --lock-wait-timeout=DURATION  fail instead of waiting longer than DURATION\n"
			"                          for a table's lock (ms, s, min, h, d; a bare number\n"
			"                          is in milliseconds); default: the session's\n"
			"                          lock_timeout; a wait over 5 s is said, with the\n"
			"                          sessions in its way\n"
			"      --enable-row-security  the rows the tables' row-level security policies\n"
			"                          let the role see; without it, a table whose policies\n"
			"                          apply to the role is an error (as pg_dump)\n"
			"\n"
			"Values without a BSON mapping (infinite dates and timestamps, numerics beyond\n"
			"decimal128), in every mode:\n"
			"      --unmappable-values=MODE  error (stop, naming the row) or fallback (written\n"
			"                          without loss: the extension's bson_out.unmappable_values);\n"
			"                          default: the session's setting, error unless set\n"
			"\n"
			"Connection (libpq; the PG* environment variables apply too):\n"
			"  -d, --dbname=DBNAME     database name, or a conninfo string or URI\n"
			"  -h, --host=HOST         server host or socket directory\n"
			"  -p, --port=PORT         server port\n"
			"  -U, --username=USER     user name\n"
			"\n"
			"Citus (a distributed or reference table given to --table):\n"
			"      --worker-host=NAME[:PORT]=HOST[:PORT]\n"
			"                          connect to HOST (PORT) for the node the coordinator's\n"
			"                          pg_dist_node calls NAME (PORT); repeatable\n"
			"      --via-coordinator   one query through the coordinator instead, which\n"
			"                          gathers every row and spills them to its disk\n"
			"\n"
			"  -V, --version           print the version and exit\n"
			"  -?, --help              print this help and exit\n"
			"\n"
			"A NULL row is skipped and counted.  Each document must have a length header\n"
			"equal to its length, a final 0 byte, and at most --max-size bytes, and (unless\n"
			"--no-validate) be valid BSON throughout: every length, type, key and UTF-8\n"
			"string, nested at most %d levels deep.  Otherwise the export stops, naming the\n"
			"row (and the byte offset of an invalid element).  Exit status: 0 on success,\n"
			"1 on an error, 2 on a usage error; killed by the signal after SIGINT, SIGTERM,\n"
			"SIGHUP.\n"
			"\n"
			"A Citus table is read shard by shard, on the worker that holds each (the\n"
			"connection options other than host and port, and the session's IntervalStyle,\n"
			"DateStyle, TimeZone, extra_float_digits and bson_out.* settings, carry over),\n"
			"in the order of the shards' hash ranges; a reference table once.  Each shard\n"
			"is read in one snapshot, that of its job's connection to the shard's node:\n"
			"Citus has no snapshot across nodes, so a row changed during the export is\n"
			"exported as of its shard's snapshot.  Every row is exported exactly once.\n",
			PROGNAME, PROGNAME, PROGNAME, PROGNAME, BSON_CHECK_MAX_DEPTH);
}

/* Print a possibly multi-line message, over the progress line */
static void
show_error(const char *msg)
{
	progress_clear(&progress);
	print_error(msg);
}

/* Remove every temporary file, close every connection; then exit or die of the signal. */
static void
cleanup_and_exit(int status)
{
	int			i;

	/* standard output, a FIFO or a device cannot be taken back: what reached it is there */
	int			stdout_written = nouts > 0 && outs[0].is_stdout && outs[0].flushed > 0;
	int			in_place_written = 0;

	for (i = 0; i < nouts; i++)
		if (outs[i].in_place && outs[i].flushed > 0)
			in_place_written = 1;

	for (i = 0; i < nouts; i++)
		out_abort(&outs[i]);
	for (i = 0; i < MAX_CONNS; i++)
		if (conns[i])
			PQfinish(conns[i]);
	if (interrupted)
	{
		progress_clear(&progress);
		fprintf(stderr, "%s: interrupted by %s; %s\n", PROGNAME,
				interrupted == SIGINT ? "SIGINT" : interrupted == SIGTERM ? "SIGTERM" :
				interrupted == SIGHUP ? "SIGHUP" : "SIGQUIT",
				stdout_written ? "what was written to standard output is incomplete" :
				in_place_written ? "what was written to the FIFO or device is incomplete" :
				opt.out_dir ? "the files renamed into place are complete, the others removed" :
				"no output written");
		signals_reraise();
	}
	exit(status);
}

static void
fail(const char *msg)
{
	if (!interrupted)
		show_error(msg);
	cleanup_and_exit(1);
}

/*
 * After each setup step: a signal that came meanwhile (its handler has
 * already cancelled what was running) ends the export here.
 */
static void
check_interrupted(void)
{
	if (interrupted)
		cleanup_and_exit(1);
}

/* --out-dir takes the table selection, and none of the single-file options */
static void
check_out_dir_options(void)
{
	const char *other = opt.table ? "--table" : opt.query ? "--query" :
		opt.output_given ? "--output" : opt.column ? "--column" :
		opt.extended_json ? "--extended-json" : opt.split ? "--split" :
		opt.no_id ? "--no-id" : opt.via_coordinator ? "--via-coordinator" :
		opt.nworker_hosts ? "--worker-host" : NULL;

	if (other)
		die_usage("--out-dir writes a dump directory of the tables selected (with "
				  "--include-tables, --exclude-tables); it cannot be combined with %s", other);
	if (opt.out_dir[0] == '\0')
		die_usage("--out-dir needs a directory");
}

static void
parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		DB_CONN_LONGOPTS,
		{"table", required_argument, NULL, 't'},
		{"column", required_argument, NULL, 'c'},
		{"query", required_argument, NULL, 1},
		{"extended-json", no_argument, NULL, 2},
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"jobs", required_argument, NULL, 'j'},
		{"split", no_argument, NULL, 3},
		{"max-size", required_argument, NULL, 4},
		{"no-sync", no_argument, NULL, 5},
		{"no-validate", no_argument, NULL, 6},
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, '?'},
		{"via-coordinator", no_argument, NULL, 7},
		{"worker-host", required_argument, NULL, 8},
		{"no-id", no_argument, NULL, 9},
		{"out-dir", required_argument, NULL, 10},
		{"enable-row-security", no_argument, NULL, 11},
		DB_LOCK_WAIT_LONGOPT,
		DB_UNMAPPABLE_LONGOPT,
		SELECTION_LONGOPTS,
		{NULL, 0, NULL, 0}
	};
	int			c;

	opt.jobs = 1;
	opt.max_size = BSON_MONGODB_MAX_SIZE;
	opt.output = "-";
	selection_init(&opt.sel);

	/* --help and --version alone, as PostgreSQL's programs take them */
	common_init(PROGNAME, argc, argv, usage);

	while ((c = getopt_long(argc, argv, "d:h:p:U:t:c:o:fj:qvV?", longopts, NULL)) != -1)
	{
		if (db_conn_option(&opt.conn, c, optarg) || selection_option(&opt.sel, c, optarg))
			continue;
		switch (c)
		{
			case 't':
				opt.table = optarg;
				break;
			case 'c':
				opt.column = optarg;
				break;
			case 1:
				opt.query = optarg;
				break;
			case 2:
				opt.extended_json = 1;
				break;
			case 'o':
				opt.output = optarg;
				opt.output_given = 1;
				break;
			case 'f':
				opt.force = 1;
				break;
			case 'j':
				opt.jobs = option_parse_int("--jobs", optarg, 1, MAX_JOBS);
				opt.jobs_given = 1;
				break;
			case 3:
				opt.split = 1;
				break;
			case 4:
				/* from the smallest document to BSON's int32 length */
				opt.max_size = (size_t) option_parse_size("--max-size", optarg, BSON_MIN_SIZE, INT32_MAX,
														  "(2 GiB - 1, as BSON's length is an int32; "
														  "2047MB is the largest in MB)");
				break;
			case 5:
				opt.no_sync = 1;
				break;
			case 6:
				opt.no_validate = 1;
				break;
			case 7:
				opt.via_coordinator = 1;
				break;
			case 8:
				if (opt.nworker_hosts == MAX_WORKER_HOSTS)
					die_usage("too many --worker-host (at most %d)", MAX_WORKER_HOSTS);
				opt.worker_hosts[opt.nworker_hosts++] = optarg;
				break;
			case 9:
				opt.no_id = 1;
				break;
			case 10:
				opt.out_dir = optarg;
				break;
			case 11:
				db_row_security = 1;
				break;
			case DB_LOCK_WAIT_TIMEOUT:
				db_lock_wait_option(optarg);
				break;
			case DB_UNMAPPABLE_VALUES:
				db_unmappable_option(optarg);
				break;
			case 'q':
				opt.quiet = 1;
				break;
			case 'v':
				opt.verbose = 1;
				break;
			default:
				common_option(c, argv);
		}
	}
	if (optind < argc)
	{
		if (opt.conn.dbname == NULL)
			opt.conn.dbname = argv[optind++];
		if (optind < argc)
			die_usage("too many arguments, starting with \"%s\"", argv[optind]);
	}

	db_rls_hint = "export as a role that bypasses them (a superuser, the table's owner, a role "
		"with BYPASSRLS), or give --enable-row-security to export the rows they let the role see";
	if (opt.out_dir)
	{
		check_out_dir_options();
		/* a full disk's hint names the dump's option */
		out_dir_option = "--out-dir";
		return;
	}
	if (selection_given(&opt.sel))
		die_usage("--include-tables, --exclude-tables, --ns-db, --include-schema and "
				  "--no-partition-root select the tables of a dump: they need --out-dir DIR");
	if ((opt.table == NULL) == (opt.query == NULL))
		die_usage("give either --table NAME, --query SQL or --out-dir DIR");
	if (opt.no_id && !opt.table)
		die_usage("--no-id needs --table (a query makes its own documents)");
	if (opt.no_id && opt.column)
		die_usage("--no-id applies to whole rows; --column exports the column's documents as "
				  "they are");
	if (opt.column && !opt.table)
		die_usage("--column needs --table (with --query, the query picks the column)");
	if (opt.extended_json && !opt.column)
		die_usage("--extended-json needs --table with --column (a query chooses its own "
				  "conversion: to_bson(doc, true))");
	if (opt.jobs > 1 && opt.query)
		die_usage("--jobs needs --table: a query cannot be split into block ranges");
	if (opt.split && !opt.jobs_given)
		die_usage("--split needs --jobs N: it writes one file per job");
	if (opt.split && strcmp(opt.output, "-") == 0)
		die_usage("--split needs -o FILE: it writes numbered files");
	if (strcmp(opt.output, "-") == 0 && isatty(STDOUT_FILENO))
		die_usage("refusing to write BSON to a terminal; use -o FILE, or redirect standard output");
}

/* FILE.0001.bson for --split: FILE's .bson suffix, if any, moved after the number. */
static char *
split_name(const char *path, int k)
{
	size_t		len = strlen(path);
	size_t		n = len + 16;
	char	   *s = malloc(n);

	if (s == NULL)
		return NULL;
	if (len > 5 && strcmp(path + len - 5, ".bson") == 0)
		len -= 5;
	snprintf(s, n, "%.*s.%04d.bson", (int) len, path, k);
	return s;
}

static void *
job_thread(void *arg)
{
	Job		   *job = arg;

	(void) job_run(job);
	pthread_mutex_lock(&done_lock);
	pthread_cond_broadcast(&done_cond);
	pthread_mutex_unlock(&done_lock);
	return NULL;
}

static void
verbose(const char *fmt,...)
{
	va_list		ap;

	if (!opt.verbose)
		return;
	fprintf(stderr, "%s: ", PROGNAME);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * One file from --jobs: cut the table into chunks (see ChunkPlan), and
 * return how many jobs to run: no more than there are chunks, so that no
 * connection is opened for nothing.
 */
static int
plan_chunks(ChunkPlan *plan, const Source *src, int64_t nblocks, int njobs)
{
	int64_t		per = (int64_t) njobs * CHUNKS_PER_JOB;
	int64_t		cb = (nblocks + per - 1) / per;

	if (cb < MIN_CHUNK_BLOCKS)
		cb = MIN_CHUNK_BLOCKS;
	if (cb > MAX_CHUNK_BLOCKS)
		cb = MAX_CHUNK_BLOCKS;
	plan->src = src;
	plan->chunk_blocks = cb;
	plan->nchunks = nblocks <= cb ? 1 : (int) ((nblocks + cb - 1) / cb);
	if (njobs > plan->nchunks)
	{
		verbose("%lld blocks make %d chunk%s: %d job%s instead of %d", (long long) nblocks,
				plan->nchunks, plan->nchunks == 1 ? "" : "s", plan->nchunks,
				plan->nchunks == 1 ? "" : "s", njobs);
		njobs = plan->nchunks;
	}
	plan->hold_max = HOLD_BUDGET / (size_t) njobs;
	if (plan->hold_max < MIN_HOLD)
		plan->hold_max = MIN_HOLD;
	plan->verbose = opt.verbose;
	plan->clear_line = progress.enabled ? "\r\033[K" : "";
	pthread_mutex_init(&plan->lock, NULL);
	cond_init_monotonic(&plan->turn);
	atomic_init(&plan->next, 0);
	plan->ready = 1;
	if (plan->nchunks == 1)
		verbose("1 chunk: the whole table, by job 1");
	else
		verbose("%d chunks of %lld blocks (the last open above); chunk k (from 1) by job "
				"(k - 1) mod %d + 1, written in order; each job holds at most %zu bytes "
				"while it waits for its turn", plan->nchunks, (long long) cb, njobs,
				plan->hold_max);
	return njobs;
}

/* Wake the jobs waiting for their chunk's turn, so that they see the stop. */
static void
wake_waiting_jobs(ChunkPlan *plan)
{
	if (!plan->ready)
		return;
	pthread_mutex_lock(&plan->lock);
	pthread_cond_broadcast(&plan->turn);
	pthread_mutex_unlock(&plan->lock);
}

/*
 * Open connection i (0: the leader, also job 1's) and register its cancel
 * request at once, so that a signal during any later setup statement (a
 * LOCK waiting behind another session, say) cancels it.
 */
static void
open_connection(int i)
{
	conns[i] = i == 0 ? db_connect(&opt.conn, errbuf, sizeof(errbuf)) :
		db_connect_like(conns[0], errbuf, sizeof(errbuf));
	if (conns[i] == NULL)
		fail(errbuf);
	cancels[i] = PQgetCancel(conns[i]);
	cancel_slots[i] = signals_register_cancel(cancels[i]);
	check_interrupted();
}

/*
 * --split: renaming file k failed (or the fsync of its directory did) after
 * files were renamed into place.  Without --force they are new files (the
 * rename refused to replace anything): remove them, so that no part of the
 * set is left.  With --force they have replaced their predecessors, which
 * are gone: say that the set is now a mix.  The message goes to errbuf.
 */
static void
split_commit_failed(int k)
{
	int			i;
	int			first = -1;
	int			last = -1;
	int			count = 0;

	/* a FIFO or device written in place is not part of what can be taken back */
	for (i = 0; i < nouts; i++)
		if (outs[i].committed && !outs[i].in_place)
		{
			if (first < 0)
				first = i;
			last = i;
			count++;
		}
	if (count == 0)
	{
		snprintf(errbuf, sizeof(errbuf), "%s", outs[k].errmsg);
		return;
	}
	if (!opt.force)
	{
		for (i = 0; i < nouts; i++)
			if (outs[i].committed && !outs[i].in_place)
				(void) unlink(outs[i].final_path);
		snprintf(errbuf, sizeof(errbuf),
				 "%s\ndetail: the %d file%s of the set already renamed into place (%s%s%s) %s been "
				 "removed again: none of the %d files is left", outs[k].errmsg, count,
				 count == 1 ? "" : "s", outs[first].final_path, count > 1 ? " ... " : "",
				 count > 1 ? outs[last].final_path : "", count == 1 ? "has" : "have", nouts);
	}
	else
		snprintf(errbuf, sizeof(errbuf),
				 "%s\ndetail: with --force, %d of the %d files (%s%s%s) had already replaced the "
				 "files of that name and stay: the set on disk is incomplete, this export's files "
				 "mixed with what was there before\nhint: rerun the export to write the whole set",
				 outs[k].errmsg, count, nouts, outs[first].final_path, count > 1 ? " ... " : "",
				 count > 1 ? outs[last].final_path : "");
}

/*
 * The leader's part before the export query: resolve and lock the table
 * (table mode) or check the query, in the export's transaction.
 */
static void
open_source(Source *src, int njobs)
{
	int			rc;

	if (opt.table)
	{
		/* the name resolved outside the transaction, so as to lock it first thing in it */
		if (source_resolve(conns[0], opt.table, src, errbuf, sizeof(errbuf)) != 0)
			fail(errbuf);
		db_hint_table = src->table;
		check_interrupted();
	}
	if (db_begin_export(conns[0], opt.table != NULL, errbuf, sizeof(errbuf)) != 0)
		fail(errbuf);
	check_interrupted();

	if (opt.table)
	{
		/*
		 * ACCESS SHARE on the table before the transaction's first query
		 * takes its snapshot: against DROP, and against a TRUNCATE (not
		 * MVCC-safe) committing between the snapshot and the COPY, which
		 * would leave the export empty.  The jobs of --jobs need it held
		 * until they all have theirs; one job can do without it when the
		 * role may not LOCK the table (source.h).
		 */
		rc = source_lock(conns[0], src, 0, njobs == 1, errbuf, sizeof(errbuf));
		if (rc < 0)
			fail(errbuf);
		if (rc > 0)
			verbose("no privilege to LOCK %s: the COPY alone will lock it", src->table);
		check_interrupted();
		if (source_table(conns[0], opt.table, opt.column, opt.extended_json, opt.no_id, src,
						 errbuf, sizeof(errbuf)) != 0)
			fail(errbuf);
		db_hint_table = src->table;
	}
	else if (source_query(conns[0], opt.query, src, errbuf, sizeof(errbuf)) != 0)
		fail(errbuf);
	check_interrupted();
}

/*
 * The row estimate of the progress line, only when there is one to show: a
 * table's reltuples, else the planner's estimate for the query (a view, a
 * partitioned or inherited table, --query).  Not for a foreign table:
 * planning it may ask the remote server.
 */
static void
estimate_rows(const Source *src)
{
	double		estimate = -1;

	if (!progress.enabled)
		return;
	if (!src->is_query && src->relkind != 'v' && src->relkind != 'p' && !src->has_children &&
		src->reltuples > 0)
		estimate = src->reltuples;
	else if (src->is_query || src->relkind != 'f')
	{
		if (source_estimate(conns[0], src, &estimate, errbuf, sizeof(errbuf)) != 0)
			fail(errbuf);
	}
	progress.estimate = estimate;
	check_interrupted();
}

/* --jobs splits a table by its blocks: only a relation that has them all. */
static void
check_splittable(const Source *src)
{
	if (src->relkind != 'r' && src->relkind != 'm')
	{
		snprintf(errbuf, sizeof(errbuf), "--jobs needs a plain table or materialized view "
				 "(it splits the table's blocks); %s is a %s\nhint: export it without --jobs",
				 src->table, src->relkind == 'v' ? "view" : src->relkind == 'p' ?
				 "partitioned table (export each partition with --jobs instead)" : "foreign table");
		fail(errbuf);
	}
	if (src->has_children)
	{
		snprintf(errbuf, sizeof(errbuf), "--jobs cannot split %s: it has inheritance children, "
				 "whose blocks are elsewhere\nhint: export it without --jobs", src->table);
		fail(errbuf);
	}
	if (PQserverVersion(conns[0]) < 140000)
		fprintf(stderr, "%s: warning: the server is older than PostgreSQL 14, which has no "
				"TID Range Scan: every job will scan the whole table\n", PROGNAME);
}

/* The leader's snapshot, which every job's transaction will import. */
static void
export_snapshot(char *snapshot, size_t size)
{
	PGresult   *res = PQexec(conns[0], "SELECT pg_export_snapshot()");

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(conns[0], res, "could not export the snapshot for --jobs", errbuf, sizeof(errbuf));
		PQclear(res);
		fail(errbuf);
	}
	snprintf(snapshot, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
}

/* Connection i of --jobs: in the leader's snapshot, with its own lock. */
static void
open_job_connection(int i, const Source *src, const char *snapshot)
{
	char		sql[1024];

	open_connection(i);
	if (db_begin_export(conns[i], 1, errbuf, sizeof(errbuf)) != 0)
		fail(errbuf);
	snprintf(sql, sizeof(sql), "SET TRANSACTION SNAPSHOT '%s'", snapshot);
	if (db_command(conns[i], sql, "could not import the snapshot for --jobs",
				   errbuf, sizeof(errbuf)) != 0)
		fail(errbuf);

	/*
	 * The job's own ACCESS SHARE, at once and without waiting (as pg_dump's
	 * workers do): its COPY would otherwise take it only when it starts,
	 * and if by then another session queued for an exclusive lock behind the
	 * leader's, the COPY would wait for that session, which waits for the
	 * leader, which waits for the job: forever, lock_timeout being off.
	 */
	if (source_lock(conns[i], src, 1, 0, errbuf, sizeof(errbuf)) != 0)
	{
		char		msg[sizeof(errbuf) + 32];

		snprintf(msg, sizeof(msg), "job %d: %s", i + 1, errbuf);
		fail(msg);
	}
	check_interrupted();
}

/*
 * --jobs N: measure the table, cut it (chunks for one file, N ranges for
 * --split) and open the other jobs' connections in the leader's snapshot.
 */
static void
plan_jobs(Export *ex)
{
	char		snapshot[128];
	int			i;

	check_splittable(&ex->src);
	export_snapshot(snapshot, sizeof(snapshot));
	ex->nblocks = source_blocks(conns[0], &ex->src, errbuf, sizeof(errbuf));
	if (ex->nblocks < 0)
		fail(errbuf);
	verbose("snapshot %s, %lld blocks", snapshot, (long long) ex->nblocks);
	check_interrupted();
	if (!opt.split)
		ex->njobs = plan_chunks(&ex->plan, &ex->src, ex->nblocks, ex->njobs);
	for (i = 1; i < ex->njobs; i++)
		open_job_connection(i, &ex->src, snapshot);
}

/*
 * A Citus table given to --table?  1: its shards are to be read where they
 * are; 0: read it here (not a Citus table, or --via-coordinator).
 */
static int
find_shards(Export *ex)
{
	int			rc = citus_lookup(conns[0], ex->src.oid, &ex->citus, errbuf, sizeof(errbuf));

	if (rc < 0)
		fail(errbuf);
	check_interrupted();
	if (rc == 0)
		return 0;

	/*
	 * Rows the table had when it was distributed stay in the coordinator's
	 * own copy until truncated: no query sees them, and they are not the
	 * table's, but a reader of the blocks would find them.
	 */
	if (ex->citus.local_bytes > 0)
	{
		char		b[32];
		char	   *lit = PQescapeLiteral(conns[0], ex->src.table, strlen(ex->src.table));

		fprintf(stderr, "%s: warning: the coordinator's own copy of %s still holds %s from "
				"before the table was distributed; they are not the table's rows and are not "
				"exported\n%s: hint: remove them with SELECT "
				"truncate_local_data_after_distributing_table(%s)\n", PROGNAME, ex->src.table,
				format_bytes((double) ex->citus.local_bytes, b, sizeof(b)), PROGNAME,
				lit ? lit : "'...'");
		PQfreemem(lit);
	}
	if (!opt.via_coordinator)
		return 1;
	if (ex->njobs > 1)
	{
		snprintf(errbuf, sizeof(errbuf), "--jobs cannot split %s through the coordinator: its "
				 "rows are in shards on the workers, not in the coordinator's blocks\nhint: "
				 "leave out --via-coordinator to export it shard by shard, N shards at a time",
				 ex->src.table);
		fail(errbuf);
	}
	if (!opt.quiet)
		fprintf(stderr, "%s: --via-coordinator: one query through the coordinator, which "
				"gathers every row of %s from the workers and spills them to its disk\n",
				PROGNAME, ex->src.table);
	citus_free(&ex->citus);
	return 0;
}

/*
 * Connection k, to a node, for job i: the leader's options, the leader's
 * settings, and an export transaction of its own.
 */
static PGconn *
open_node_connection(Export *ex, int i, const CitusNode *node)
{
	int			k = nconns;

	if (k == MAX_CONNS)
	{
		snprintf(errbuf, sizeof(errbuf), "--jobs %d on %d nodes needs more than %d connections\n"
				 "hint: try fewer --jobs", ex->njobs, ex->citus.nnodes, MAX_CONNS - 1);
		fail(errbuf);
	}
	conns[k] = db_connect_node(conns[0], node->host, node->conn_port, errbuf, sizeof(errbuf));
	if (conns[k] == NULL)
		fail(errbuf);
	nconns++;
	ex->conn_job[k] = i;
	cancels[k] = PQgetCancel(conns[k]);
	cancel_slots[k] = signals_register_cancel(cancels[k]);
	check_interrupted();
	if (db_command(conns[k], ex->settings, "could not set the session's settings on a node",
				   errbuf, sizeof(errbuf)) != 0 ||
		db_begin_export(conns[k], 1, errbuf, sizeof(errbuf)) != 0)
	{
		char		msg[sizeof(errbuf) + 300];

		snprintf(msg, sizeof(msg), "node %s:%s: %s", node->host, node->conn_port, errbuf);
		fail(msg);
	}
	verbose("job %d: connected to node %s:%s", i + 1, node->host, node->conn_port);
	check_interrupted();
	return conns[k];
}

/* The chunks of a Citus table: one a shard, in the order of their hash ranges. */
static void
shard_tasks(Export *ex)
{
	CitusTable *t = &ex->citus;
	int			c;

	if (citus_map_nodes(t, opt.worker_hosts, opt.nworker_hosts, errbuf, sizeof(errbuf)) != 0)
		fail(errbuf);
	ex->tasks = calloc(t->nshards ? t->nshards : 1, sizeof(ChunkTask));
	if (ex->tasks == NULL)
		fail("out of memory");
	for (c = 0; c < t->nshards; c++)
	{
		const CitusShard *sh = &t->shards[c];
		const CitusNode *node = &t->nodes[sh->node];
		size_t		n = strlen(sh->table) + strlen(node->host) + 64;

		ex->tasks[c].sql = source_copy_sql_of(&ex->src, sh->table);
		ex->tasks[c].where = malloc(n);
		if (ex->tasks[c].sql == NULL || ex->tasks[c].where == NULL)
			fail("out of memory");
		snprintf(ex->tasks[c].where, n, "shard %d of %d, %s on %s:%s", c + 1, t->nshards,
				 sh->table, node->host, node->conn_port);
		ex->tasks[c].node = sh->node;
	}
	verbose("%s is a %s table: %d shard%s on %d node%s", ex->src.table,
			t->reference ? "reference" : "distributed", t->nshards, t->nshards == 1 ? "" : "s",
			t->nnodes, t->nnodes == 1 ? "" : "s");
	if (opt.split && t->nshards == 0)
		fail("--split: the table has no shards, so there is no file to write");

	/* every file is open from the start: a descriptor and a buffer each */
	if (opt.split && t->nshards > MAX_SPLIT_SHARDS)
	{
		snprintf(errbuf, sizeof(errbuf), "--split writes one file per shard, and %s has %d "
				 "shards (at most %d)\nhint: export it into one file, without --split",
				 ex->src.table, t->nshards, MAX_SPLIT_SHARDS);
		fail(errbuf);
	}
	ex->njobs = opt.jobs < t->nshards ? opt.jobs : t->nshards;
}

/*
 * Each job's connections to the nodes of its shards, each with its
 * snapshot taken now, once it holds ACCESS SHARE on those shards (LOCK
 * TABLE takes no snapshot, so the snapshot comes after the lock): a shard
 * cannot be dropped under the job, and a TRUNCATE cannot commit between
 * the snapshot and the COPY.
 */
static void
open_shard_connections(Export *ex)
{
	CitusTable *t = &ex->citus;

	for (int i = 0; i < ex->njobs; i++)
	{
		Job		   *j = &ex->jobs[i];

		j->node_conns = calloc((size_t) t->nnodes, sizeof(PGconn *));
		if (j->node_conns == NULL)
			fail("out of memory");
		for (int c = i; c < t->nshards; c += ex->njobs)
		{
			int			n = t->shards[c].node;
			size_t		size = 160;
			char	   *sql;

			if (j->node_conns[n] != NULL)
				continue;
			j->node_conns[n] = open_node_connection(ex, i, &t->nodes[n]);
			for (int d = c; d < t->nshards; d += ex->njobs)
				if (t->shards[d].node == n)
					size += strlen(t->shards[d].table) + 2;
			sql = malloc(size);
			if (sql == NULL)
				fail("out of memory");
			/* Citus refuses a LOCK of a shard unless told that it is meant */
			strcpy(sql, "SET LOCAL citus.enable_manual_changes_to_shards = on; LOCK TABLE ");
			for (int d = c; d < t->nshards; d += ex->njobs)
				if (t->shards[d].node == n)
				{
					if (d != c)
						strcat(sql, ", ");
					strcat(sql, t->shards[d].table);
				}
			strcat(sql, " IN ACCESS SHARE MODE; SET LOCAL citus.enable_manual_changes_to_shards = off");
			if (db_command(j->node_conns[n], sql, "could not lock the shards", errbuf,
						   sizeof(errbuf)) != 0 ||
				db_command(j->node_conns[n], "SELECT", "could not take the snapshot", errbuf,
						   sizeof(errbuf)) != 0)
			{
				char		msg[sizeof(errbuf) + 300];

				snprintf(msg, sizeof(msg), "node %s:%s: %s", t->nodes[n].host,
						 t->nodes[n].conn_port, errbuf);
				fail(msg);
			}
			free(sql);
			check_interrupted();
		}
	}
}

/* Do a and b place the same shards on the same nodes? */
static int
same_placements(const CitusTable *a, const CitusTable *b)
{
	if (a->nshards != b->nshards)
		return 0;
	for (int c = 0; c < a->nshards; c++)
	{
		const CitusNode *na = &a->nodes[a->shards[c].node];
		const CitusNode *nb = &b->nodes[b->shards[c].node];

		if (strcmp(a->shards[c].shardid, b->shards[c].shardid) != 0 ||
			strcmp(na->name, nb->name) != 0 || strcmp(na->port, nb->port) != 0)
			return 0;
	}
	return 1;
}

/*
 * The placements read again, after every node's snapshot was taken, as
 * they are now (a connection of its own, not the leader's older snapshot):
 * unchanged, no shard moved or split between the first reading and the
 * last snapshot, so each shard is read where it was when its node's
 * snapshot was taken.  Changed: the node connections are closed, and the
 * placements just read replace the first.
 */
static int
placements_held(Export *ex)
{
	CitusTable	now;
	PGconn	   *fresh = db_connect_like(conns[0], errbuf, sizeof(errbuf));
	int			rc;

	if (fresh == NULL)
		fail(errbuf);
	memset(&now, 0, sizeof(now));
	rc = citus_lookup(fresh, ex->src.oid, &now, errbuf, sizeof(errbuf));
	PQfinish(fresh);
	if (rc < 0)
		fail(errbuf);
	if (rc == 0)
	{
		snprintf(errbuf, sizeof(errbuf), "%s is no longer a Citus table\nhint: run the "
				 "export again", ex->src.table);
		fail(errbuf);
	}
	if (same_placements(&ex->citus, &now))
	{
		citus_free(&now);
		return 1;
	}
	for (int k = 1; k < nconns; k++)
	{
		if (cancels[k])
		{
			signals_unregister_cancel(cancel_slots[k]);
			PQfreeCancel(cancels[k]);
			cancels[k] = NULL;
		}
		PQfinish(conns[k]);
		conns[k] = NULL;
		ex->conn_job[k] = -1;
	}
	nconns = 1;
	for (int i = 0; i < ex->njobs; i++)
	{
		free(ex->jobs[i].node_conns);
		ex->jobs[i].node_conns = NULL;
	}
	for (int c = 0; c < ex->citus.nshards; c++)
	{
		free(ex->tasks[c].sql);
		free(ex->tasks[c].where);
	}
	free(ex->tasks);
	ex->tasks = NULL;
	citus_free(&ex->citus);
	ex->citus = now;
	return 0;
}

/*
 * A Citus table: a chunk (ChunkPlan) a shard, chunk k by job k mod N + 1,
 * and each job's connections to the nodes of its shards.  Citus has no
 * snapshot across nodes, and a shard move or split switches a shard's
 * placement at its end: the placements are read again once every node's
 * snapshot is taken, and the plan made again while they change.
 */
static void
plan_shards(Export *ex)
{
	CitusTable *t = &ex->citus;
	int			attempt;

	ex->settings = db_settings_sql(conns[0], errbuf, sizeof(errbuf));
	if (ex->settings == NULL)
		fail(errbuf);
	for (attempt = 1;; attempt++)
	{
		shard_tasks(ex);
		open_shard_connections(ex);
		if (placements_held(ex))
			break;
		if (attempt == SHARD_PLAN_ATTEMPTS)
		{
			snprintf(errbuf, sizeof(errbuf), "the shards of %s moved or were split while the "
					 "export started, %d times in a row\nhint: run the export again once the "
					 "shard moves are done", ex->src.table, SHARD_PLAN_ATTEMPTS);
			fail(errbuf);
		}
		if (!opt.quiet)
			fprintf(stderr, "%s: the shards of %s moved or were split while the export "
					"started; reading them where they are now\n", PROGNAME, ex->src.table);
	}

	ex->plan.src = &ex->src;
	ex->plan.tasks = ex->tasks;
	ex->plan.nchunks = t->nshards;
	ex->plan.hold_max = HOLD_BUDGET / (size_t) (ex->njobs ? ex->njobs : 1);
	if (ex->plan.hold_max < MIN_HOLD)
		ex->plan.hold_max = MIN_HOLD;
	ex->plan.verbose = opt.verbose;
	ex->plan.clear_line = progress.enabled ? "\r\033[K" : "";
	pthread_mutex_init(&ex->plan.lock, NULL);
	cond_init_monotonic(&ex->plan.turn);
	atomic_init(&ex->plan.next, 0);
	ex->plan.ready = 1;
}

/* Connect, check what is to be exported, and with --jobs plan the jobs. */
static void
connect_and_plan(Export *ex)
{
	int			k;

	for (k = 0; k < MAX_CONNS; k++)
		ex->conn_job[k] = k < MAX_JOBS ? k : -1;
	ex->njobs = opt.jobs;
	/* the leader connection, which is also job 1's */
	open_connection(0);
	open_source(&ex->src, ex->njobs);
	if (opt.table && find_shards(ex))
	{
		/* the jobs' connections are to the nodes */
		ex->distributed = 1;
		ex->conn_job[0] = -1;
		plan_shards(ex);
		return;
	}
	estimate_rows(&ex->src);
	if (ex->njobs > 1)
		plan_jobs(ex);
	nconns = ex->njobs;
}

/* The outputs: opened only now, so that a failed check leaves nothing. */
static void
open_outputs(int nfiles)
{
	int			i;

	outs = calloc(nfiles > 1 ? (size_t) nfiles : 1, sizeof(OutFile));
	if (outs == NULL)
		fail("out of memory");
	if (!opt.split)
	{
		if (out_open(&outs[0], opt.output, opt.force, !opt.no_sync) != 0)
			fail(outs[0].errmsg);
		nouts = 1;
		check_interrupted();
		return;
	}
	for (i = 0; i < nfiles; i++)
	{
		char	   *name = split_name(opt.output, i + 1);

		if (name == NULL)
			fail("out of memory");
		if (out_open(&outs[i], name, opt.force, !opt.no_sync) != 0)
		{
			free(name);
			fail(outs[i].errmsg);
		}
		free(name);
		nouts++;
		check_interrupted();
	}
}

/* Each job's connection, output and part of the table. */
static void
set_up_jobs(Export *ex)
{
	int			i;

	for (i = 0; i < ex->njobs; i++)
	{
		Job		   *j = &ex->jobs[i];

		j->id = i + 1;
		j->njobs = ex->njobs;
		j->conn = ex->distributed ? NULL : conns[i];
		j->max_size = opt.max_size;
		j->max_size_option = "--max-size";
		j->validate = !opt.no_validate;
		j->out = opt.split ? &outs[i] : &outs[0];
		j->first_block = -1;
		j->end_block = -1;
		if (ex->plan.ready)
		{
			/* its statements, one a chunk, are the job's to make and print */
			j->chunks = &ex->plan;
			if (ex->distributed && opt.split)
				ex->plan.outs = outs;
			continue;
		}
		if (ex->njobs > 1)
		{
			/* the first range open below, the last open above: nothing is missed */
			if (i > 0)
				j->first_block = ex->nblocks * i / ex->njobs;
			if (i < ex->njobs - 1)
				j->end_block = ex->nblocks * (i + 1) / ex->njobs;
		}
		j->sql = source_copy_sql(&ex->src, j->first_block, j->end_block);
		if (j->sql == NULL)
			fail("out of memory");
		verbose("job %d: %s", j->id, j->sql);
	}
}

/*
 * One thread a job.  The threads inherit a mask with the signals blocked:
 * see signals.h.  A signal after the check here reaches the handler when
 * the mask is restored, and the jobs check the flag before their COPY.
 */
static void
start_jobs(Export *ex)
{
	int			i;

	check_interrupted();
	progress.start = now_seconds();
	signals_block();
	for (i = 0; i < ex->njobs; i++)
		if (pthread_create(&ex->threads[i], NULL, job_thread, &ex->jobs[i]) != 0)
		{
			signals_unblock();
			atomic_store(&export_stop, 1);
			for (int k = 0; k < nconns; k++)
				if (ex->conn_job[k] >= 0 && ex->conn_job[k] < i && cancels[k])
					PQcancel(cancels[k], errbuf, sizeof(errbuf));
			for (int k = 0; k < i; k++)
				pthread_join(ex->threads[k], NULL);
			fail("could not start a thread for --jobs");
		}
	signals_unblock();
}

/* Job i failed first: stop the others, and cancel their statements. */
static void
stop_other_jobs(const Export *ex, int i)
{
	atomic_store(&export_stop, 1);
	for (int k = 0; k < nconns; k++)
		if (ex->conn_job[k] >= 0 && ex->conn_job[k] != i && cancels[k])
			PQcancel(cancels[k], errbuf, sizeof(errbuf));
}

/*
 * Stopping (a signal, or a job failed): the cancel requests went out when
 * that happened, but one that reached a server before its job's statement
 * started was lost, and that job would run to its end.  Send them again to
 * the jobs still running, once a second; *cancel_at is when they last went.
 */
static void
repeat_cancels(Export *ex, double *cancel_at)
{
	double		t = now_seconds();
	int			i;

	wake_waiting_jobs(&ex->plan);
	if (*cancel_at == 0)
		*cancel_at = t;
	else if (t - *cancel_at >= 1.0)
	{
		for (i = 0; i < nconns; i++)
			if (ex->conn_job[i] >= 0 && !atomic_load(&ex->jobs[ex->conn_job[i]].finished) &&
				cancels[i])
				PQcancel(cancels[i], errbuf, sizeof(errbuf));
		*cancel_at = t;
	}
}

/*
 * Wait for the jobs, showing progress; on the first failure, stop the
 * others.  Returns the index of the job that failed first, or -1.
 */
static int
wait_for_jobs(Export *ex)
{
	int			first_failed = -1;
	double		cancel_at = 0;
	int			i;

	for (;;)
	{
		int			running = 0;
		uint64_t	rows = 0;
		uint64_t	bytes = 0;

		for (i = 0; i < ex->njobs; i++)
		{
			Job		   *j = &ex->jobs[i];

			rows += atomic_load_explicit(&j->rows, memory_order_relaxed);
			bytes += atomic_load_explicit(&j->bytes, memory_order_relaxed);
			if (!atomic_load(&j->finished))
				running++;
			else if (j->failed && first_failed < 0 && !interrupted &&
					 !atomic_load(&export_stop))
			{
				first_failed = i;
				stop_other_jobs(ex, i);
			}
		}
		if (running == 0)
			break;
		if (interrupted || atomic_load(&export_stop))
			repeat_cancels(ex, &cancel_at);
		progress_update(&progress, rows, bytes);
		pthread_mutex_lock(&done_lock);
		/* a job that ends between the check and the wait costs at most 100 ms */
		cond_wait_ms(&done_cond, &done_lock, 100);
		pthread_mutex_unlock(&done_lock);
	}
	for (i = 0; i < ex->njobs; i++)
		pthread_join(ex->threads[i], NULL);
	return first_failed;
}

/*
 * The jobs have ended, so only this thread runs: the cancel objects can
 * go, and the totals are final (the waiting loop may have summed them just
 * before the last rows were counted).
 */
static void
collect_totals(Export *ex)
{
	int			i;

	ex->rows = ex->bytes = ex->nulls = 0;
	for (i = 0; i < nconns; i++)
		if (cancels[i])
		{
			signals_unregister_cancel(cancel_slots[i]);
			PQfreeCancel(cancels[i]);
			cancels[i] = NULL;
		}
	for (i = 0; i < ex->njobs; i++)
	{
		ex->rows += atomic_load(&ex->jobs[i].rows);
		ex->bytes += atomic_load(&ex->jobs[i].bytes);
		ex->nulls += atomic_load(&ex->jobs[i].nulls);
	}
}

/* Run the jobs to their end; any failure or signal ends the program here. */
static void
run_export(Export *ex)
{
	int			first_failed;
	int			i;

	start_jobs(ex);
	first_failed = wait_for_jobs(ex);
	collect_totals(ex);
	if (interrupted)
		cleanup_and_exit(1);
	if (first_failed < 0)
		for (i = 0; i < ex->njobs; i++)
			if (ex->jobs[i].failed)
			{
				first_failed = i;
				break;
			}
	if (first_failed >= 0)
		fail(ex->jobs[first_failed].errmsg);
}

/* Flush every output, then rename each into place. */
static void
commit_outputs(void)
{
	int			i;

	for (i = 0; i < nouts; i++)
		if (out_flush(&outs[i], !opt.no_sync) != 0)
			fail(outs[i].errmsg);

	/* no signal may remove a file while it is being renamed */
	signals_block();
	check_interrupted();
	for (i = 0; i < nouts; i++)
		if (out_commit(&outs[i], opt.force, !opt.no_sync) != 0)
		{
			if (nouts > 1)
				split_commit_failed(i);
			else
				/* one file: renamed or not, it is complete (the message says which) */
				snprintf(errbuf, sizeof(errbuf), "%s", outs[i].errmsg);
			signals_unblock();
			fail(errbuf);
		}
	signals_unblock();
}

static void
close_connections(void)
{
	int			i;

	for (i = 0; i < MAX_CONNS; i++)
		if (conns[i])
		{
			PQfinish(conns[i]);
			conns[i] = NULL;
		}
}

/* The summary line, unless --quiet; its totals are the jobs' final counts. */
static void
print_summary(const Export *ex, double elapsed)
{
	char		b[32];
	char		r[32];
	char		where[PATH_MAX + 64];

	if (opt.quiet)
		return;
	if (outs[0].is_stdout)
		snprintf(where, sizeof(where), "standard output");
	else if (nouts > 1)
		snprintf(where, sizeof(where), "%d files %s ... %s", nouts, outs[0].final_path,
				 outs[nouts - 1].final_path);
	else
		snprintf(where, sizeof(where), "%s", outs[0].final_path);
	fprintf(stderr, "%s: %llu documents (%s) written to %s in %.2f s (%s/s)",
			PROGNAME, (unsigned long long) ex->rows, format_bytes((double) ex->bytes, b, sizeof(b)),
			where, elapsed, format_bytes(elapsed > 0 ? ex->bytes / elapsed : 0, r, sizeof(r)));
	if (ex->nulls)
		fprintf(stderr, "; %llu NULL row%s skipped", (unsigned long long) ex->nulls,
				ex->nulls == 1 ? "" : "s");
	fputc('\n', stderr);
}

/* Make the outputs permanent, then report. */
static void
finish_export(Export *ex)
{
	double		elapsed;

	commit_outputs();
	close_connections();
	elapsed = now_seconds() - progress.start;
	progress_clear(&progress);
	print_summary(ex, elapsed);
}

static void
free_export(Export *ex)
{
	int			i;

	for (i = 0; i < ex->njobs; i++)
	{
		free((char *) ex->jobs[i].sql);
		free(ex->jobs[i].node_conns);
	}
	for (i = 0; ex->tasks && i < ex->citus.nshards; i++)
	{
		free(ex->tasks[i].sql);
		free(ex->tasks[i].where);
	}
	free(ex->tasks);
	free(ex->settings);
	citus_free(&ex->citus);
	for (i = 0; i < nouts; i++)
		out_free(&outs[i]);
	free(outs);
	if (ex->plan.ready)
	{
		pthread_mutex_destroy(&ex->plan.lock);
		pthread_cond_destroy(&ex->plan.turn);
	}
	source_free(&ex->src);
}

/*
 * --out-dir: a dump directory in one snapshot, the leader's, which the
 * other jobs import; dump.c does the rest.
 */
static void
export_dir(void)
{
	char		snapshot[128];
	DumpOptions o;
	DumpStats	stats;
	double		elapsed;
	char		b[32];
	char		r[32];

	open_connection(0);
	if (db_begin_export(conns[0], 1, errbuf, sizeof(errbuf)) != 0)
		fail(errbuf);
	check_interrupted();
	export_snapshot(snapshot, sizeof(snapshot));
	verbose("snapshot %s", snapshot);
	check_interrupted();

	memset(&o, 0, sizeof(o));
	o.dir = opt.out_dir;
	o.sel = &opt.sel;
	o.jobs = opt.jobs;
	o.sync = !opt.no_sync;
	o.force = opt.force;
	o.max_size = opt.max_size;
	o.max_size_option = "--max-size";
	o.validate = !opt.no_validate;
	o.verbose = opt.verbose;
	o.progress = &progress;
	progress.start = now_seconds();
	if (dump_write(conns[0], snapshot, &o, &stats, errbuf, sizeof(errbuf)) != 0)
		fail(errbuf);
	if (db_command(conns[0], "COMMIT", "could not end the export's transaction",
				   errbuf, sizeof(errbuf)) != 0)
		fail(errbuf);
	close_connections();
	elapsed = now_seconds() - progress.start;
	progress_clear(&progress);
	if (opt.quiet)
		return;
	fprintf(stderr, "%s: %d collection%s (%d table%s), %llu documents (%s) written to %s in "
			"%.2f s (%s/s)\n", PROGNAME, stats.collections, stats.collections == 1 ? "" : "s",
			stats.sources, stats.sources == 1 ? "" : "s", (unsigned long long) stats.docs,
			format_bytes((double) stats.bytes, b, sizeof(b)), opt.out_dir, elapsed,
			format_bytes(elapsed > 0 ? stats.bytes / elapsed : 0, r, sizeof(r)));
}

int
main(int argc, char **argv)
{
	/* static: the jobs' error messages make it large */
	static Export ex;

	parse_options(argc, argv);
	signals_install();
	progress_init(&progress, !opt.quiet && isatty(STDERR_FILENO), -1);
	cond_init_monotonic(&done_cond);

	if (opt.out_dir)
	{
		export_dir();
		return 0;
	}

	connect_and_plan(&ex);
	open_outputs(ex.distributed ? ex.citus.nshards : ex.njobs);
	set_up_jobs(&ex);
	run_export(&ex);
	finish_export(&ex);
	free_export(&ex);
	return 0;
}
