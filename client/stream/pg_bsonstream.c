/*
 * pg_bsonstream.c
 *		A consistent first copy of the tables, then every change from exactly
 *		that point, durably, into .bson files.
 *
 *	pg_bsonstream [connection options] --slot NAME [--create-slot [--initial-copy]]
 *				  [--include-tables LIST ...] [--exclude-tables LIST ...] -o DIR | -o -
 *				  [--segment-size SIZE] [--segment-time SECONDS] ...
 *
 * This file has the options and the main flow: with --to the applier set
 * up (mongo_apply.h), create the slot (repl.c), with --initial-copy copy
 * the tables under its exported snapshot into a dump directory (initial.c,
 * dump.c: the dump writer pg_bsonexport --out-dir uses too), then the
 * receive loop (receive.h): the changes into segments of whole
 * transactions, each confirmed once durable, until a stop.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "bson_check.h"
#include "citus_stream.h"
#include "citus_to.h"
#include "commit_marker.h"
#include "common.h"
#include "db.h"
#include "initial.h"
#include "mongo_apply.h"
#include "option_parse.h"
#include "progress.h"
#include "receive.h"
#include "recopy.h"
#include "repl.h"
#include "segment.h"
#include "selection.h"
#include "signals.h"
#include "status_file.h"

#define PROGNAME	"pg_bsonstream"
typedef struct Options
{
	ConnOpts	conn;
	const char *slot;
	int			create_slot;
	int			initial_copy;
	Selection	sel;
	const char *output;
	uint64_t	segment_size;
	double		segment_time;
	double		status_interval;
	int			reconnect;
	int			quiet;
	int			no_sync;
	int			jobs;
	Lsn			endpos;			/* 0: stream until stopped */
	int			segment_time_given;
	int			citus;			/* one stream per node of a Citus cluster */
	char	   *worker_hosts[64];	/* --worker-host */
	int			nworker_hosts;
	ReplEventOptions events;	/* --unmappable-values (NULL: the plugin's
								 * default, fallback, in the copy too),
								 * --full-document-before-change */
	/* --to: applied into MongoDB (mongo_apply.h) */
	const char *to;
	const char *to_password_file;
	const char *progress_collection;
	const char *dead_letter;
	uint64_t	max_buffer;
	int			max_buffer_given;
	int			keep_applied;
	int			batch_size;
} Options;

static Options opt = {
	.segment_size = 64 * 1024 * 1024,
	.segment_time = 10,
	.status_interval = 10,
	.reconnect = 1,
	.jobs = 1,
	.progress_collection = NULL,	/* set in parse_options */
	.max_buffer = 0,
	.batch_size = 0,
};

/*
 * What one stream follows: its server, its directory, and whether its slot
 * and first copy are made now.  The options give it for one server;
 * --citus gives one per node (citus_stream.h), the node's own, so that a
 * node's settings never overwrite the program's.
 */
typedef struct StreamTarget
{
	ConnOpts	conn;
	const char *dir;
	int			create_slot;
	int			initial_copy;
} StreamTarget;

static void
usage(FILE *f)
{
	fprintf(f, PROGNAME " streams PostgreSQL changes as MongoDB change events into .bson files,\n"
			"and with --to applies them into MongoDB.\n\n"
			"Usage:\n  " PROGNAME " [OPTION]... --slot NAME -o DIR [--to URI]\n\n"
			"Options:\n"
			"  -d, --dbname=DBNAME        database name or conninfo string\n"
			"  -h, --host=HOST            server host or socket directory\n"
			"  -p, --port=PORT            server port\n"
			"  -U, --username=USER        user name (needs the REPLICATION attribute)\n"
			"  -S, --slot=NAME            logical replication slot\n"
			"      --create-slot          create the slot (with the bson_out plugin)\n"
			"      --initial-copy         with --create-slot: copy every selected table first,\n"
			"                             in the slot's snapshot, into the dump directory\n"
			"                             DIR/initial (<db>/<collection>.bson and\n"
			"                             .metadata.json: mongorestore DIR/initial loads it)\n"
			"  -j, --jobs=N               copy with N connections (default 1): tables in\n"
			"                             parallel, a large one in block ranges\n"
			"      --lock-wait-timeout=DURATION  fail the copy instead of waiting longer than\n"
			"                             DURATION for a table's lock (ms, s, min, h, d; a\n"
			"                             bare number is in milliseconds); default: the\n"
			"                             session's lock_timeout; a wait over 5 s is said\n"
			"Which tables, and their names (the stream's and the copy's alike):\n"
			SELECTION_HELP
			"      --unmappable-values=MODE  values without a BSON mapping (infinite\n"
			"                             dates and timestamps, numerics beyond\n"
			"                             decimal128): fallback (the default: written\n"
			"                             without loss, as the README says) or error (stop\n"
			"                             at such a value), in the copy and the stream alike\n"
			"      --full-document-before-change  updates and deletes of tables with\n"
			"                             REPLICA IDENTITY FULL carry the old row\n"
			"                             (fullDocumentBeforeChange)\n"
			"Output:\n"
			"  -o, --output=DIR           DIR/changes/<first>-<last>.bson (resume tokens), or - for\n"
			"                             standard output (not durable)\n"
			"      --segment-size=SIZE    close a segment at the end of the transaction that\n"
			"                             reaches this size (default 64MB; units kB, MB, GB,\n"
			"                             TB, 1024-based as PostgreSQL's): segments hold\n"
			"                             whole transactions\n"
			"      --segment-time=SECS    ... or this age (default 10s)\n"
			"      --status-interval=SECS standby status updates (default 10s)\n"
			"Into MongoDB:\n"
			"      --to=URI               apply the first copy and every change into the\n"
			"                             MongoDB database of the connection string URI\n"
			"                             (mongodb://host/db; without a database, each\n"
			"                             event's ns.db), from the segments of DIR, which\n"
			"                             are removed once applied\n"
			"      --to-password-file=FILE  the password of the URI's user, from the first\n"
			"                             line of FILE (readable by its owner only), not\n"
			"                             on the command line\n"
			"      --progress-collection=NAME  where the position applied is kept, in the\n"
			"                             target database (default bson_out_progress)\n"
			"      --dead-letter=FILE     append the changes MongoDB refuses to FILE (BSON)\n"
			"                             and go on; default: stop at the first\n"
			"      --max-buffer=SIZE      stop with an error before the segments not yet\n"
			"                             applied exceed SIZE (default 16GB)\n"
			"      --keep-applied         keep the segments and the first copy once applied\n"
			"      --batch-size=N         events per bulk write, at most (default 1000)\n"
			"Citus:\n"
			"      --citus                follow every node of the Citus cluster whose\n"
			"                             coordinator this connects to: a slot and a stream\n"
			"                             per node, in DIR/group-<groupid>; with --to, the\n"
			"                             nodes' streams applied merged in commit order\n"
			"      --worker-host=NAME[:PORT]=HOST[:PORT]  reach the node pg_dist_node\n"
			"                             knows as NAME at HOST (repeatable)\n"
			"Other options:\n"
			"  -E, --endpos=LSN           stop once the stream has passed LSN (the last segment\n"
			"                             closed and confirmed, exit 0); 0/0: no end, as\n"
			"                             pg_recvlogical reads it\n"
			"      --no-reconnect         exit on a lost connection instead of reconnecting\n"
			"      --no-sync              do not fsync (tests only: not durable)\n"
			"  -q, --quiet                no progress line, no summary\n"
			"  -V, --version              print the version and exit\n"
			"  -?, --help                 print this help and exit\n");
}

static const char *const default_progress_collection = "bson_out_progress";
static const uint64_t default_max_buffer = (uint64_t) 16 * 1024 * 1024 * 1024;
static const int default_batch_size = 1000;

/*
 * A password in --to: ps shows its bytes as stars from now on (the URI
 * itself was copied), the arguments rewritten in place.
 */
static void
hide_password(char *arg)
{
	size_t		start;
	size_t		len;

	if (!apply_uri_password(arg, &start, &len) || len == 0)
		return;
	opt.to = strdup(arg);
	if (opt.to == NULL)
		die("out of memory");
	memset(arg + start, '*', len);
}

static void
parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		DB_CONN_LONGOPTS,
		{"slot", required_argument, NULL, 'S'},
		{"output", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},
		{"jobs", required_argument, NULL, 'j'},
		SELECTION_LONGOPTS,
		DB_UNMAPPABLE_LONGOPT,
		{"create-slot", no_argument, NULL, 1},
		{"initial-copy", no_argument, NULL, 2},
		{"segment-size", required_argument, NULL, 4},
		{"segment-time", required_argument, NULL, 5},
		{"status-interval", required_argument, NULL, 6},
		{"reconnect", no_argument, NULL, 7},
		{"no-reconnect", no_argument, NULL, 8},
		{"no-sync", no_argument, NULL, 9},
		{"help", no_argument, NULL, '?'},
		{"version", no_argument, NULL, 'V'},
		{"endpos", required_argument, NULL, 'E'},
		{"full-document-before-change", no_argument, NULL, 10},
		{"citus", no_argument, NULL, 11},
		{"worker-host", required_argument, NULL, 12},
		{"enable-row-security", no_argument, NULL, 13},
		{"to", required_argument, NULL, 14},
		{"progress-collection", required_argument, NULL, 15},
		{"dead-letter", required_argument, NULL, 16},
		{"max-buffer", required_argument, NULL, 17},
		{"keep-applied", no_argument, NULL, 18},
		{"batch-size", required_argument, NULL, 19},
		{"to-password-file", required_argument, NULL, 20},
		DB_LOCK_WAIT_LONGOPT,
		{NULL, 0, NULL, 0}
	};
	int			c;
	const char *apply_option = NULL;	/* the last option given that is for --to */

	selection_init(&opt.sel);
	common_init(PROGNAME, argc, argv, usage);
	opt.progress_collection = default_progress_collection;
	opt.max_buffer = default_max_buffer;
	opt.batch_size = default_batch_size;
	while ((c = getopt_long(argc, argv, "d:h:p:U:S:o:qj:E:V?", longopts, NULL)) != -1)
	{
		if (db_conn_option(&opt.conn, c, optarg) || selection_option(&opt.sel, c, optarg))
			continue;
		switch (c)
		{
			case 'S':
				opt.slot = optarg;
				break;
			case DB_UNMAPPABLE_VALUES:
				db_unmappable_option(optarg);
				opt.events.unmappable = optarg;
				break;
			case 'o':
				opt.output = optarg;
				break;
			case 10:
				opt.events.before_change = 1;
				break;
			case 11:
				opt.citus = 1;
				break;
			case 12:
				if (opt.nworker_hosts == (int) (sizeof(opt.worker_hosts) / sizeof(opt.worker_hosts[0])))
					die_usage("too many --worker-host (at most %d)",
							  (int) (sizeof(opt.worker_hosts) / sizeof(opt.worker_hosts[0])));
				opt.worker_hosts[opt.nworker_hosts++] = optarg;
				break;
			case 13:
				die_usage("--enable-row-security would copy only the rows that row-level security "
						  "policies let the role see, while the stream carries every row's changes "
						  "(logical decoding does not apply the policies): the copy reads every row, "
						  "or fails");
			case DB_LOCK_WAIT_TIMEOUT:
				db_lock_wait_option(optarg);
				break;
			case 14:
				opt.to = optarg;
				hide_password(optarg);
				break;
			case 20:
				if (optarg[0] == '\0')
					die_usage("--to-password-file takes a file name");
				opt.to_password_file = optarg;
				apply_option = "--to-password-file";
				break;
			case 15:
				if (optarg[0] == '\0' || optarg[0] == '$' || strchr(optarg, '\0') - optarg > 200)
					die_usage("invalid --progress-collection \"%s\": give a collection name", optarg);
				opt.progress_collection = optarg;
				apply_option = "--progress-collection";
				break;
			case 16:
				if (optarg[0] == '\0')
					die_usage("--dead-letter takes a file name");
				opt.dead_letter = optarg;
				apply_option = "--dead-letter";
				break;
			case 17:
				opt.max_buffer = option_parse_size("--max-buffer", optarg, 1, UINT64_MAX, NULL);
				opt.max_buffer_given = 1;
				apply_option = "--max-buffer";
				break;
			case 18:
				opt.keep_applied = 1;
				apply_option = "--keep-applied";
				break;
			case 19:
				opt.batch_size = option_parse_int("--batch-size", optarg, 1, 100000);
				apply_option = "--batch-size";
				break;
			case 'q':
				opt.quiet = 1;
				break;
			case 'j':
				opt.jobs = option_parse_int("--jobs", optarg, 1, DUMP_MAX_JOBS);
				break;
			case 'E':
				/* 0/0, InvalidXLogRecPtr, is no end: pg_recvlogical's reading */
				if (lsn_parse(optarg, &opt.endpos) != 0)
					die_usage("invalid --endpos \"%s\" (an LSN such as 0/16B3748)", optarg);
				break;
			case 1:
				opt.create_slot = 1;
				break;
			case 2:
				opt.initial_copy = 1;
				break;
			case 4:
				opt.segment_size = option_parse_size("--segment-size", optarg, 1, UINT64_MAX, NULL);
				break;
			case 5:
				opt.segment_time = option_parse_seconds("--segment-time", optarg);
				opt.segment_time_given = 1;
				break;
			case 6:
				opt.status_interval = option_parse_seconds("--status-interval", optarg);
				break;
			case 7:
				opt.reconnect = 1;
				break;
			case 8:
				opt.reconnect = 0;
				break;
			case 9:
				opt.no_sync = 1;
				break;
			default:
				common_option(c, argv);
		}
	}
	if (optind < argc)
		die_usage("too many arguments, starting with \"%s\"", argv[optind]);
	/* the first copy writes what the stream writes: the plugin's default */
	if (db_unmappable_values == NULL)
		db_unmappable_values = "fallback";
	db_rls_hint = "the stream carries every row's changes whatever the policies (logical "
		"decoding does not apply them), so the first copy must read every row: run it as a role "
		"that bypasses them (a superuser, the table's owner, a role with BYPASSRLS)";
	if (opt.slot == NULL || opt.slot[0] == '\0')
		die_usage("give the replication slot with --slot NAME");
	if (opt.output == NULL)
		die_usage("give the output directory with -o DIR (or -o - for standard output)");
	if (opt.initial_copy && !opt.create_slot)
		die_usage("--initial-copy needs --create-slot: only a new slot's snapshot matches its stream");
	if (opt.initial_copy && strcmp(opt.output, "-") == 0)
		die_usage("--initial-copy needs -o DIR: the copy is written to DIR/initial");
	if (opt.citus && strcmp(opt.output, "-") == 0)
		die_usage("--citus needs -o DIR: each node's stream is written to DIR/group-<groupid>");
	if (opt.citus && opt.endpos)
		die_usage("--citus cannot stop at --endpos: each node has WAL positions of its own");
	if (opt.nworker_hosts && !opt.citus)
		die_usage("--worker-host is for --citus");
	if (db_lock_wait_arg && !opt.initial_copy)
		die_usage("--lock-wait-timeout is for --initial-copy: the stream itself locks no table");
	if (opt.to && strcmp(opt.output, "-") == 0)
		die_usage("--to needs -o DIR: the changes are made durable in DIR/changes before "
				  "they are applied");
	if (opt.to && opt.citus && opt.max_buffer_given)
		die_usage("--max-buffer is not applied with --citus yet: each node's stream writes its "
				  "segments whatever the applier has done");
	/* the applier follows DDL by the plugin's schema events */
	opt.events.schema_events = opt.to != NULL;
	/*
	 * --citus --to: every node's stream carries heartbeats, and its closed
	 * segments are what the merge reads: closed each second unless asked
	 */
	opt.events.heartbeats = opt.to && opt.citus;
	if (opt.to && opt.citus && !opt.segment_time_given)
		opt.segment_time = 1;
	if (!opt.to && apply_option)
		die_usage("%s is for --to (as are --to-password-file, --progress-collection, "
				  "--dead-letter, --max-buffer, --keep-applied and --batch-size)", apply_option);
	if (opt.to && !apply_available())
		die_usage("--to is not available: this pg_bsonstream was built without the MongoDB C "
				  "driver (libmongoc)");
	if (strcmp(opt.output, "-") == 0 && isatty(STDOUT_FILENO))
		die_usage("refusing to write BSON to a terminal; use -o DIR, or redirect standard output");
	opt.conn.replication = "database";
	opt.conn.appname = PROGNAME;
}

/*
 * The directories this run made, removed again (those still empty) when it
 * ends before its stream started: a run that fails on a missing database or
 * slot, or a failing --create-slot, leaves no directory behind.  DIR, then
 * what is in it: removed in the reverse order.
 */
static char *made_dirs[3];
static int	nmade_dirs;
static int	stream_started;

static void
remove_made_dirs(void)
{
	if (stream_started)
		return;
	while (nmade_dirs > 0)
		(void) rmdir(made_dirs[--nmade_dirs]);
}

/* Note path as made by this run (removed at a failed start, see above) */
static void
note_made_dir(const char *path)
{
	static int	registered;

	if (nmade_dirs == (int) (sizeof(made_dirs) / sizeof(made_dirs[0])) ||
		(made_dirs[nmade_dirs] = strdup(path)) == NULL)
		return;
	nmade_dirs++;
	if (!registered)
		registered = atexit(remove_made_dirs) == 0;
}

static void
make_dir(const char *path)
{
	if (mkdir(path, 0700) == 0)
		note_made_dir(path);
	else if (errno != EEXIST)
		die("could not create directory \"%s\": %s", path, strerror(errno));
}

/* A replication connection; NULL with err set. */
static PGconn *
connect_replication(const StreamTarget *t, char *err, size_t errsize)
{
	PGconn	   *conn = db_connect(&t->conn, err, errsize);

	if (conn == NULL)
		repl_hint(opt.slot, err, errsize);
	return conn;
}

/* The dump options of the first copy, and of a table's copy again */
static void
copy_options(DumpOptions *o)
{
	memset(o, 0, sizeof(*o));
	o->sel = &opt.sel;
	o->jobs = opt.jobs;
	o->sync = !opt.no_sync;
	/* into an empty directory: a file there now is not ours to replace */
	o->force = 0;
	/*
	 * Into files, a document MongoDB would not take is an error of the copy;
	 * into MongoDB, the server's refusal of it goes by --dead-letter, as a
	 * change's does (the files are the applier's buffer only).
	 */
	o->max_size = opt.to ? (size_t) INT32_MAX : BSON_MONGODB_MAX_SIZE;
	o->validate = 1;
	o->node_rows = 1;
}

/* --to: a table's collection copied again after a DDL (mongo_apply.h) */
static int
recopy_table(void *arg, int64_t relid, const char *outdir, uint64_t *at,
			 char *err, size_t errsize)
{
	const StreamTarget *t = arg;
	DumpOptions o;

	copy_options(&o);
	return table_recopy(&t->conn, &o, (unsigned int) relid, outdir, at, err, errsize);
}

/*
 * DIR/status.json during the first copy ("copying", its documents so far),
 * at most once a second: the copy of a large table is not silent
 */
static void
copy_status(void *arg, uint64_t docs, uint64_t bytes)
{
	const StreamTarget *t = arg;
	static double written;
	StreamStatus s;

	if (strcmp(t->dir, "-") == 0 || (written > 0 && now_seconds() - written < 1.0))
		return;
	written = now_seconds();
	memset(&s, 0, sizeof(s));
	s.slot = opt.slot;
	s.phase = "copying";
	s.copied_docs = docs;
	s.copied_bytes = bytes;
	/* a view: a failure to write it is said by the stream later, if at all */
	(void) status_file_write(t->dir, &s);
}

/* The first copy into DIR/initial, with the stream's selection and names */
static int
copy_tables(const StreamTarget *t, const char *snapshot, DumpStats *stats,
			char *err, size_t errsize)
{
	DumpOptions o;

	copy_options(&o);
	o.tick = copy_status;
	o.tick_arg = (void *) t;
	copy_status((void *) t, 0, 0);
	return initial_copy(&t->conn, snapshot, t->dir, &o, stats, err, errsize);
}

static int
check_name(const char *db, const char *coll, void *arg)
{
	char	   *err = arg;

	return apply_check_name(db, coll, err, 4096);
}

/*
 * Before the slot is made: every collection the tables selected become
 * can be named in MongoDB (a name it refuses would stop every run later).
 */
static void
check_names(const StreamTarget *t)
{
	ConnOpts	plain = t->conn;
	DumpOptions o;
	PGconn	   *conn;
	char		err[4096];

	plain.replication = NULL;
	memset(&o, 0, sizeof(o));
	o.sel = &opt.sel;
	o.node_rows = 1;
	if ((conn = db_connect(&plain, err, sizeof(err))) == NULL)
		die("%s", err);
	if (dump_names(conn, &o, check_name, err, err, sizeof(err)) != 0)
		die("%s", err);
	PQfinish(conn);
}

/* 0 once the slot is dropped */
static int
drop_slot(PGconn *conn)
{
	char	   *ident = PQescapeIdentifier(conn, opt.slot, strlen(opt.slot));
	char		sql[300];
	PGresult   *res;
	int			rc;

	if (ident == NULL)
		return -1;
	snprintf(sql, sizeof(sql), "DROP_REPLICATION_SLOT %s", ident);
	PQfreemem(ident);
	res = PQexec(conn, sql);
	rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
	PQclear(res);
	return rc;
}

/* The first copy failed (err says why): the slot dropped, the copy's files removed. */
/* A node's directory is DIR/group-<G>: is it the coordinator's (group 0)? */
static int
is_coordinator_dir(const char *dir)
{
	const char *slash = strrchr(dir, '/');

	return strcmp(slash ? slash + 1 : dir, "group-0") == 0;
}

/*
 * --citus --create-slot: a worker's slot is made once the coordinator's is
 * (CITUS_SLOT_MADE in DIR/group-0; citus_stream.h says why).  A signal
 * ends the wait: the coordinator's stream failed, or the run is stopped.
 */
static void
coordinator_slot_first(const char *dir)
{
	char		coord[4300];
	const char *slash = strrchr(dir, '/');
	double		since = now_seconds();
	int			said = 0;

	if (is_coordinator_dir(dir) || slash == NULL)
		return;
	snprintf(coord, sizeof(coord), "%.*s/group-0", (int) (slash - dir), dir);
	while (!marker_exists(coord, CITUS_SLOT_MADE))
	{
		if (interrupted)
			die("stopped while waiting for the coordinator's slot to be made");
		if (!said && now_seconds() - since >= 5)
		{
			fprintf(stderr, PROGNAME ": waiting for the coordinator's slot to be made first (it "
					"waits for the transactions open on the coordinator)\n");
			said = 1;
		}
		usleep(50 * 1000);
	}
}

static void
copy_failed(const StreamTarget *t, PGconn *conn, const char *err)
{
	char		why[1024];
	int			sync = !opt.no_sync;

	if (drop_slot(conn) != 0)
	{
		PQfinish(conn);
		die("%s\nThe replication slot \"%s\" could not be dropped: \"%s/initial\" stays marked "
			"as an unfinished copy, and no stream starts from it.\n"
			"hint: Drop the slot (SELECT pg_drop_replication_slot('%s')), remove \"%s/initial\", "
			"and start again with --create-slot --initial-copy.",
			err, opt.slot, t->dir, opt.slot, t->dir);
	}
	PQfinish(conn);
	/* without its first copy the slot is of no use: a new run starts over */
	if (initial_discard(t->dir, sync, why, sizeof(why)) != 0)
		die("%s\nThe replication slot \"%s\" has been dropped again, but %s; remove \"%s/initial\" "
			"before starting again.", err, opt.slot, why, t->dir);
	die("%s\nThe replication slot \"%s\" has been dropped again, and the files of the copy removed.",
		err, opt.slot);
}

/*
 * Without --citus on a node of a Citus cluster: its stream has only the
 * rows this node holds, which may not be what the user meant.  Said, not
 * refused: following one node alone is a choice too.  (A replication
 * connection for a database runs plain queries too.)
 */
static void
warn_citus_node(PGconn *conn)
{
	PGresult   *res = PQexec(conn, "SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus'");

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
	{
		PQclear(res);
		res = PQexec(conn, "SELECT count(*) FROM pg_catalog.pg_dist_node WHERE noderole = 'primary' "
					 "AND groupid <> (SELECT groupid FROM pg_catalog.pg_dist_local_group)");
		if (PQresultStatus(res) == PGRES_TUPLES_OK && strcmp(PQgetvalue(res, 0, 0), "0") != 0)
			fprintf(stderr, PROGNAME ": warning: this server is a node of a Citus cluster with %s "
					"other nodes: its stream has the changes of the rows it holds only\n"
					"hint: --citus follows every node of the cluster.\n", PQgetvalue(res, 0, 0));
	}
	PQclear(res);
}

/* The stream of one server, the one t->conn reaches */
static int
stream_server(const StreamTarget *t)
{
	PGconn	   *conn;
	char		err[4096];
	char		changes[4096];
	Lsn			start = 0;
	DumpStats	init;
	StreamCtl	ctl;
	int			to_stdout;
	int			apply_here = opt.to && !opt.citus;	/* --citus: the applier's process applies */
	int			rc;

	to_stdout = strcmp(t->dir, "-") == 0;
	memset(&init, 0, sizeof(init));
	memset(&ctl, 0, sizeof(ctl));

	if (!to_stdout)
	{
		char		initial[4096];
		struct stat sb;

		make_dir(t->dir);
		/* --initial-copy makes it (initial.c): this run's if it is not there yet */
		snprintf(initial, sizeof(initial), "%s/initial", t->dir);
		if (stat(initial, &sb) != 0 && errno == ENOENT)
			note_made_dir(initial);
		snprintf(changes, sizeof(changes), "%s/changes", t->dir);
		make_dir(changes);
		out_remove_stale(changes);
		/* never a stream without its whole first copy */
		if (!(t->create_slot && t->initial_copy) &&
			initial_check(t->dir, err, sizeof(err)) != 0)
			die("%s", err);
	}

	conn = connect_replication(t, err, sizeof(err));
	if (conn == NULL)
		die("%s", err);
	if (!opt.citus)
		warn_citus_node(conn);
	if (apply_here)
	{
		ApplyOptions ao;
		int			rc;
		PGresult   *res;
		static char system_id[32];

		res = PQexec(conn, "IDENTIFY_SYSTEM");
		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
			die("could not identify the server (IDENTIFY_SYSTEM): %s", PQerrorMessage(conn));
		snprintf(system_id, sizeof(system_id), "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		memset(&ao, 0, sizeof(ao));
		ao.uri = opt.to;
		ao.system_id = system_id;
		ao.creating_slot = t->create_slot;
		ao.password_file = opt.to_password_file;
		ao.dir = t->dir;
		ao.slot = opt.slot;
		ao.default_db = opt.sel.ns_db ? opt.sel.ns_db : PQdb(conn);
		ao.progress_coll = opt.progress_collection;
		ao.dead_letter = opt.dead_letter;
		ao.keep_applied = opt.keep_applied;
		ao.sync = !opt.no_sync;
		ao.max_buffer = opt.max_buffer;
		ao.batch_events = opt.batch_size;
		ao.recopy = recopy_table;
		ao.recopy_arg = (void *) t;
		/* before the slot is made: a MongoDB that cannot be used leaves nothing behind */
		rc = apply_open(&ao, err, sizeof(err));
		if (rc == -2)
			die_usage("%s", err);
		if (rc != 0)
			die("%s", err);
	}
	if (apply_here && t->create_slot)
		check_names(t);
	if (t->create_slot)
	{
		char		snapshot[256];

		/* the nodes started by a --create-slot run (one that joins later: the marker is there) */
		if (opt.citus && opt.create_slot)
			coordinator_slot_first(t->dir);
		/* marked unfinished before the slot exists: a kill at any later point leaves the mark */
		if (t->initial_copy &&
			initial_begin(t->dir, opt.slot, !opt.no_sync, err, sizeof(err)) != 0)
			die("%s", err);
		if (repl_create_slot(conn, &t->conn, opt.slot, 0, snapshot, sizeof(snapshot), &start,
							 err, sizeof(err)) != 0)
		{
			char		why[512];

			/* the marker alone is ours: DIR/initial was empty */
			if (t->initial_copy && initial_end(t->dir, !opt.no_sync, why, sizeof(why)) != 0)
				fprintf(stderr, PROGNAME ": warning: %s\n", why);
			die("%s", err);
		}
		if (opt.citus && opt.create_slot && is_coordinator_dir(t->dir) &&
			marker_write(t->dir, CITUS_SLOT_MADE, err, sizeof(err)) != 0)
			die("%s", err);
		if (t->initial_copy)
		{
			if (opt.citus && opt.to &&
				note_copy_time(&t->conn, t->dir, !opt.no_sync, err, sizeof(err)) != 0)
				copy_failed(t, conn, err);
			if (copy_tables(t, snapshot, &init, err, sizeof(err)) != 0)
				copy_failed(t, conn, err);
			/* every file of the copy is durable (dump_write): no longer unfinished */
			if (initial_end(t->dir, !opt.no_sync, err, sizeof(err)) != 0)
				die("%s", err);
		}
	}
	if (repl_start(conn, opt.slot, start, &opt.sel, &opt.events, 0, err, sizeof(err)) != 0)
		die("%s", err);
	stream_started = 1;
	if (apply_here && apply_start(err, sizeof(err)) != 0)
		die("%s", err);
	if (opt.to && opt.citus)
	{
		/* heartbeats, then the applier is told this node streams, its first copy whole */
		if (heartbeat_start(&t->conn, err, sizeof(err)) != 0 ||
			marker_write(t->dir, CITUS_NODE_READY, err, sizeof(err)) != 0)
			die("%s", err);
	}

	ctl.conn = &t->conn;
	ctl.dir = t->dir;
	ctl.slot = opt.slot;
	ctl.sel = &opt.sel;
	ctl.events = &opt.events;
	ctl.endpos = opt.endpos;
	ctl.status_interval = opt.status_interval;
	ctl.reconnect = opt.reconnect;
	ctl.quiet = opt.quiet;
	ctl.to = apply_here;
	ctl.sync = !opt.no_sync;
	ctl.segment_size = opt.segment_size;
	ctl.segment_time = opt.segment_time;
	ctl.initial_copy = t->initial_copy;
	ctl.copied = &init;
	rc = receive_run(&ctl, conn);
	return heartbeat_failed() ? 1 : rc;
}

/* One node's stream of a Citus cluster, in a process of its own (citus_stream.h) */
static int
stream_citus_node(const ConnOpts *conn, const char *dir, int create_slot, int initial_copy)
{
	StreamTarget t = {*conn, dir, create_slot, initial_copy};

	return stream_server(&t);
}

/* --citus --to: the applier's process (citus_to.h) */
static int
apply_cluster(const CitusStreamNode *nodes, int n, const char *dir)
{
	ApplyOptions ao;

	memset(&ao, 0, sizeof(ao));
	ao.uri = opt.to;
	ao.creating_slot = opt.create_slot;
	ao.password_file = opt.to_password_file;
	ao.slot = opt.slot;
	ao.default_db = opt.sel.ns_db;
	ao.progress_coll = opt.progress_collection;
	ao.dead_letter = opt.dead_letter;
	ao.keep_applied = opt.keep_applied;
	ao.sync = !opt.no_sync;
	ao.batch_events = opt.batch_size;
	/* a DDL's collection is not copied again from every node yet: the run stops there */
	ao.recopy = NULL;
	return citus_apply_run(nodes, n, dir, &ao, opt.status_interval, opt.quiet);
}

int
main(int argc, char **argv)
{
	apply_process_init(argv);
	parse_options(argc, argv);
	signals_install();
	if (opt.citus)
		return citus_stream_run(&opt.conn, opt.worker_hosts, opt.nworker_hosts, opt.output,
								opt.create_slot, opt.initial_copy, stream_citus_node,
								opt.to ? apply_cluster : NULL);
	{
		StreamTarget t = {opt.conn, opt.output, opt.create_slot, opt.initial_copy};

		return stream_server(&t);
	}
}
