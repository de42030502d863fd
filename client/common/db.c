/*
 * db.c
 *		Connections and server error messages (see db.h).
 */
#include "db.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common.h"
#include "option_parse.h"
#include "progress.h"

/* libpq messages end in a newline; ours are assembled line by line */
static void
append_trimmed(char *err, size_t errsize, const char *prefix, const char *msg)
{
	size_t		used = strlen(err);
	size_t		len = strlen(msg);

	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		len--;
	if (used < errsize)
		snprintf(err + used, errsize - used, "%s%.*s", prefix, (int) len, msg);
}

const char *db_hint_table = NULL;

/*
 * The server's WARNINGs and NOTICEs (bson_collections() warns of a pattern
 * that selects no table; a view's functions may RAISE NOTICE): on standard
 * error, named as ours are.  libpq's own would print them without the
 * program's name.
 */
static void
print_notice(void *arg, const char *message)
{
	(void) arg;
	fprintf(stderr, "%s: %s", progname, message);
}

/*
 * TCP keepalives, so that a dead network or server ends the export with an
 * error after about a minute (30 s idle, then 3 probes 10 s apart) instead
 * of a COPY, or a lock wait, that waits forever: statement_timeout is off,
 * lock_timeout usually too, and the kernel's default idle time is 2 hours.
 * Only defaults: whatever the user set (in a conninfo string or URI, or in
 * a service file) wins.  Unix-domain sockets ignore them.
 */
static const char *const keepalive_keys[] = {
	"keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count"
};
static const char *const keepalive_vals[] = {"1", "30", "10", "3"};

#define NKEEPALIVE	4

static int
keepalive_index(const char *keyword)
{
	int			k;

	for (k = 0; k < NKEEPALIVE; k++)
		if (strcmp(keyword, keepalive_keys[k]) == 0)
			return k;
	return -1;
}

/* A service (PGSERVICE, or service= in a conninfo string or URI) is in use. */
static int
uses_service(const char *dbname)
{
	const char *env = getenv("PGSERVICE");
	PQconninfoOption *opts;
	PQconninfoOption *o;
	int			found = 0;

	if (env && *env)
		return 1;
	if (dbname == NULL ||
		(strchr(dbname, '=') == NULL && strncmp(dbname, "postgresql://", 13) != 0 &&
		 strncmp(dbname, "postgres://", 11) != 0))
		return 0;
	opts = PQconninfoParse(dbname, NULL);
	if (opts == NULL)
		return 0;				/* malformed: PQconnectdbParams will say how */
	for (o = opts; o->keyword; o++)
		if (strcmp(o->keyword, "service") == 0 && o->val && *o->val)
			found = 1;
	PQconninfoFree(opts);
	return found;
}

/*
 * After connecting: the keepalive settings nobody set, applied to the
 * socket directly (libpq has already applied the ones that were set).
 * Used when a service is in use: its file is read after the connection
 * keywords and never overrides them, so passing our defaults as keywords
 * would override the service's settings.
 */
static void
keepalives_on_socket(PGconn *conn)
{
	static const int sockopt[NKEEPALIVE] = {SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT};
	PQconninfoOption *opts = PQconninfo(conn);
	PQconninfoOption *o;
	int			set[NKEEPALIVE] = {0, 0, 0, 0};
	int			off = 0;
	struct sockaddr_storage addr;
	socklen_t	len = sizeof(addr);
	int			sock = PQsocket(conn);
	int			k;

	if (opts == NULL)
		return;
	for (o = opts; o->keyword; o++)
		if (o->val && *o->val && (k = keepalive_index(o->keyword)) >= 0)
		{
			set[k] = 1;
			/* keepalives=0 turns them off (unset, libpq turns them on) */
			if (k == 0 && strtol(o->val, NULL, 10) == 0)
				off = 1;
		}
	PQconninfoFree(opts);
	if (off || sock < 0 || getsockname(sock, (struct sockaddr *) &addr, &len) != 0 ||
		(addr.ss_family != AF_INET && addr.ss_family != AF_INET6))
		return;
	for (k = 1; k < NKEEPALIVE; k++)
		if (!set[k])
		{
			int			v = atoi(keepalive_vals[k]);

			(void) setsockopt(sock, IPPROTO_TCP, sockopt[k], &v, sizeof(v));
		}
}

int			db_row_security = 0;
const char *db_rls_hint = NULL;

/*
 * The server's refusal, with row_security off, of a query that row-level
 * security policies would filter: known by the function that raises it
 * (whatever the server's language), or by its English message.
 */
static int
rls_refusal(const PGresult *res, const char *sqlstate, const char *primary)
{
	const char *fn = PQresultErrorField(res, PG_DIAG_SOURCE_FUNCTION);
	static const char msg[] = "query would be affected by row-level security policy";

	return sqlstate && strcmp(sqlstate, "42501") == 0 &&
		((fn && strcmp(fn, "check_enable_rls") == 0) || strncmp(primary, msg, sizeof(msg) - 1) == 0);
}

void
db_error(PGconn *conn, const PGresult *res, const char *what,
		 char *err, size_t errsize)
{
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	int			server_hint;

	snprintf(err, errsize, "%s: ", what);
	if (primary == NULL)
	{
		/* no server error: libpq's own (lost connection, protocol trouble) */
		const char *m = PQerrorMessage(conn);

		append_trimmed(err, errsize, "", (m && *m) ? m : "unknown error");
		if (PQstatus(conn) == CONNECTION_BAD)
			append_trimmed(err, errsize, "\n", "hint: the connection to the server was lost; "
						   "check that the server is running and retry");
		return;
	}
	append_trimmed(err, errsize, "", primary);
	if (res && PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL))
		append_trimmed(err, errsize, "\ndetail: ", PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL));
	server_hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) != NULL;
	if (server_hint)
		append_trimmed(err, errsize, "\nhint: ", PQresultErrorField(res, PG_DIAG_MESSAGE_HINT));
	if (rls_refusal(res, sqlstate, primary))
	{
		char		h[1024];

		/* the server's hint, if any, is for the owner of a table with FORCE: ours too */
		snprintf(h, sizeof(h),
				 "the role \"%s\" is subject to the row-level security policies of that table, "
				 "which may hide rows from it, and %s reads with row_security off (as pg_dump "
				 "does) so as never to leave rows out without a word; %s", PQuser(conn), progname,
				 db_rls_hint ? db_rls_hint : "read it as a role that bypasses the policies");
		append_trimmed(err, errsize, "\nhint: ", h);
	}
	else if (server_hint)
		return;
	else if (sqlstate && strcmp(sqlstate, "42501") == 0)
	{
		char		h[512];

		snprintf(h, sizeof(h),
				 "the role \"%s\" lacks a privilege; ask the owner of the object to grant it, "
				 "e.g. GRANT SELECT ON %s TO \"%s\"", PQuser(conn),
				 db_hint_table ? db_hint_table : "the_table", PQuser(conn));
		append_trimmed(err, errsize, "\nhint: ", h);
	}
	else if (sqlstate && strcmp(sqlstate, "57014") == 0)
		append_trimmed(err, errsize, "\nhint: ", "the export was canceled (by a signal, "
					   "pg_cancel_backend() or statement_timeout)");
}

void
db_error_context(const PGresult *res, char *err, size_t errsize)
{
	const char *context = res ? PQresultErrorField(res, PG_DIAG_CONTEXT) : NULL;

	if (context && *context)
		append_trimmed(err, errsize, "\ncontext: ", context);
}

PGconn *
db_connect(const ConnOpts *opts, char *err, size_t errsize)
{
	const char *keys[7 + NKEEPALIVE];
	const char *vals[7 + NKEEPALIVE];
	int			n = 0;
	int			k;
	int			service = uses_service(opts->dbname);
	PGconn	   *conn;

	/*
	 * Our keepalive defaults before dbname: with expand_dbname, a conninfo
	 * string or URI given as the database name overrides what precedes it.
	 * Not with a service: see keepalives_on_socket.
	 */
	if (!service)
		for (k = 0; k < NKEEPALIVE; k++)
		{
			keys[n] = keepalive_keys[k];
			vals[n++] = keepalive_vals[k];
		}

	/*
	 * dbname, with expand_dbname: a conninfo string or URI given as the
	 * database name supplies defaults that -h, -p and -U then override
	 */
	if (opts->dbname)
	{
		keys[n] = "dbname";
		vals[n++] = opts->dbname;
	}
	if (opts->host)
	{
		keys[n] = "host";
		vals[n++] = opts->host;
	}
	if (opts->port)
	{
		keys[n] = "port";
		vals[n++] = opts->port;
	}
	if (opts->user)
	{
		keys[n] = "user";
		vals[n++] = opts->user;
	}
	/* after dbname: a conninfo string must not turn it off */
	if (opts->replication)
	{
		keys[n] = "replication";
		vals[n++] = opts->replication;
	}
	keys[n] = "fallback_application_name";
	vals[n++] = opts->appname ? opts->appname : progname;
	keys[n] = NULL;
	vals[n] = NULL;

	conn = PQconnectdbParams(keys, vals, 1);
	if (conn == NULL)
	{
		snprintf(err, errsize, "could not connect to the database: out of memory");
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK)
	{
		const char *m = PQerrorMessage(conn);

		err[0] = '\0';
		append_trimmed(err, errsize, "could not connect to the database: ", m);
		if (strstr(m, "no password supplied") || strstr(m, "password authentication failed"))
			append_trimmed(err, errsize, "\nhint: ", "give the password in PGPASSWORD or a ~/.pgpass file");
		else
			append_trimmed(err, errsize, "\nhint: ",
						   "check the connection options (-d DBNAME or a conninfo string, -h HOST, "
						   "-p PORT, -U USER, or the PG* environment variables) and that the server runs");
		PQfinish(conn);
		return NULL;
	}
	if (service)
		keepalives_on_socket(conn);
	PQsetNoticeProcessor(conn, print_notice, NULL);
	return conn;
}

/*
 * A connection like the leader's; to host:port when given, else to the
 * leader's server.  'plain': not a replication connection even if the
 * leader's is (for queries with parameters, which a walsender refuses).
 */
static PGconn *
connect_like(PGconn *leader, const char *host, const char *port, int plain,
			 char *err, size_t errsize)
{
	PQconninfoOption *opts = PQconninfo(leader);
	PQconninfoOption *o;
	const char *keys[64 + NKEEPALIVE];
	const char *vals[64 + NKEEPALIVE];
	int			n = 0;
	PGconn	   *conn;

	if (opts == NULL)
	{
		snprintf(err, errsize, "could not open another connection: out of memory");
		return NULL;
	}
	/* the leader's settings in effect, explicitly (a service file's among them) */
	for (o = opts; o->keyword && n < 60; o++)
	{
		if (o->val == NULL || o->val[0] == '\0')
		{
			/*
			 * A keepalive setting nobody set: our default, as the leader has
			 * (applied to its socket when a service is used)
			 */
			if (keepalive_index(o->keyword) >= 0)
			{
				keys[n] = o->keyword;
				vals[n++] = keepalive_vals[keepalive_index(o->keyword)];
			}
			continue;
		}
		/* the server the leader actually reached, not the whole list */
		if (strcmp(o->keyword, "host") == 0 || strcmp(o->keyword, "hostaddr") == 0 ||
			strcmp(o->keyword, "port") == 0 || strcmp(o->keyword, "dbname") == 0 ||
			strcmp(o->keyword, "target_session_attrs") == 0 ||
			(plain && strcmp(o->keyword, "replication") == 0))
			continue;
		keys[n] = o->keyword;
		vals[n++] = o->val;
	}
	keys[n] = "host";
	vals[n++] = host ? host : PQhost(leader);
	keys[n] = "port";
	vals[n++] = port ? port : PQport(leader);
	keys[n] = "dbname";
	vals[n++] = PQdb(leader);
	keys[n] = NULL;
	vals[n] = NULL;

	conn = PQconnectdbParams(keys, vals, 0);
	PQconninfoFree(opts);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
	{
		char		what[600];

		err[0] = '\0';
		if (host)
		{
			snprintf(what, sizeof(what), "could not connect to the node %s port %s: ", host, port);
			append_trimmed(err, errsize, what, conn ? PQerrorMessage(conn) : "out of memory");
			append_trimmed(err, errsize, "\nhint: ",
						   "the address is the one the coordinator's pg_dist_node gives; if this client "
						   "reaches the node by another one, give it with --worker-host NAME[:PORT]=HOST[:PORT]");
		}
		else
		{
			append_trimmed(err, errsize, "could not open another connection for --jobs: ",
						   conn ? PQerrorMessage(conn) : "out of memory");
			append_trimmed(err, errsize, "\nhint: ", "the server may be at max_connections; try fewer --jobs");
		}
		PQfinish(conn);
		return NULL;
	}
	PQsetNoticeProcessor(conn, print_notice, NULL);
	return conn;
}

PGconn *
db_connect_like(PGconn *leader, char *err, size_t errsize)
{
	return connect_like(leader, NULL, NULL, 0, err, errsize);
}

PGconn *
db_connect_node(PGconn *leader, const char *host, const char *port, char *err, size_t errsize)
{
	return connect_like(leader, host, port, 0, err, errsize);
}

/*
 * Every setting that changes what a document says: how intervals, dates and
 * times are written (row_to_bson's strings), float digits, and bson_out's
 * own.
 */
static const char settings_query[] =
	"SELECT name, pg_catalog.current_setting(name) FROM pg_catalog.pg_settings "
	"WHERE name IN ('IntervalStyle', 'DateStyle', 'TimeZone', 'extra_float_digits') "
	"   OR name LIKE 'bson\\_out.%' ORDER BY name";

/*
 * Until bson_out's library is loaded in a session, its settings there are
 * placeholders, which pg_settings does not list: call one of its functions.
 */
static void
load_bson_out(PGconn *conn)
{
	PGresult   *res = PQexec(conn,
							 "SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e "
							 "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
							 "WHERE e.extname = 'bson_out'");
	char		sql[200];

	/* in a savepoint: whatever happens, the export's transaction goes on */
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		strlen(PQgetvalue(res, 0, 0)) < 128)
	{
		snprintf(sql, sizeof(sql),
				 "SAVEPOINT pg_bsonexport_load; SELECT %s.bson_is_valid('\\x0500000000'::bytea)",
				 PQgetvalue(res, 0, 0));
		PQclear(res);
		res = PQexec(conn, sql);
		PQclear(res);
		res = PQexec(conn, "ROLLBACK TO SAVEPOINT pg_bsonexport_load; "
					 "RELEASE SAVEPOINT pg_bsonexport_load");
	}
	PQclear(res);
}

char *
db_settings_sql(PGconn *leader, char *err, size_t errsize)
{
	PGresult   *res;
	size_t		size = 64;
	char	   *sql;
	int			i;

	load_bson_out(leader);
	res = PQexec(leader, settings_query);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(leader, res, "could not read the session's settings", err, errsize);
		PQclear(res);
		return NULL;
	}
	for (i = 0; i < PQntuples(res); i++)
		size += 2 * (strlen(PQgetvalue(res, i, 0)) + strlen(PQgetvalue(res, i, 1))) + 64;
	sql = malloc(size);
	if (sql == NULL)
	{
		PQclear(res);
		snprintf(err, errsize, "out of memory");
		return NULL;
	}
	strcpy(sql, "SELECT 0");
	for (i = 0; i < PQntuples(res); i++)
	{
		char	   *name = PQescapeLiteral(leader, PQgetvalue(res, i, 0), strlen(PQgetvalue(res, i, 0)));
		char	   *value = PQescapeLiteral(leader, PQgetvalue(res, i, 1), strlen(PQgetvalue(res, i, 1)));

		if (name == NULL || value == NULL)
		{
			PQfreemem(name);
			PQfreemem(value);
			free(sql);
			PQclear(res);
			snprintf(err, errsize, "out of memory");
			return NULL;
		}
		snprintf(sql + strlen(sql), size - strlen(sql), ", pg_catalog.set_config(%s, %s, false)",
				 name, value);
		PQfreemem(name);
		PQfreemem(value);
	}
	PQclear(res);
	return sql;
}

int
db_command(PGconn *conn, const char *sql, const char *what, char *err, size_t errsize)
{
	PGresult   *res = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
	{
		db_error(conn, res, what, err, errsize);
		PQclear(res);
		return -1;
	}
	PQclear(res);
	return 0;
}

const char *db_unmappable_values = NULL;

void
db_unmappable_option(const char *arg)
{
	if (strcmp(arg, "error") != 0 && strcmp(arg, "fallback") != 0)
		die_usage("invalid --unmappable-values \"%s\": use error or fallback", arg);
	db_unmappable_values = arg;
}

int32_t		db_lock_wait_ms = -1;
const char *db_lock_wait_arg = NULL;

void
db_lock_wait_option(const char *arg)
{
	db_lock_wait_ms = option_parse_duration_ms("--lock-wait-timeout", arg,
											   "0 waits as long as it takes");
	db_lock_wait_arg = arg;
}

int
db_begin_export(PGconn *conn, int table_order, char *err, size_t errsize)
{
	char		sql[256];

	/*
	 * Values without a BSON mapping as the user chose, in every session
	 * that writes documents (bson_out's setting: settable by anyone, and a
	 * placeholder until the library loads, which then checks it)
	 */
	if (db_unmappable_values)
	{
		snprintf(sql, sizeof(sql), "SET bson_out.unmappable_values = '%s'",
				 db_unmappable_values);
		if (db_command(conn, sql, "could not set up the session", err, errsize) != 0)
			return -1;
	}

	/*
	 * synchronize_seqscans off: a sequential scan then starts at block 0
	 * instead of joining a concurrent scan midway, so that --jobs 1 writes
	 * the rows in the same (physical) order as --jobs N.  lock_timeout only
	 * when --lock-wait-timeout is given: the user's own otherwise (db.h).
	 */
	snprintf(sql, sizeof(sql),
			 "SET statement_timeout = 0; SET idle_in_transaction_session_timeout = 0; "
			 "SET synchronize_seqscans = off; SET row_security = %s",
			 db_row_security ? "on" : "off");
	if (db_lock_wait_ms >= 0)
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), "; SET lock_timeout = %ld",
				 (long) db_lock_wait_ms);
	if (db_command(conn, sql, "could not set up the session", err, errsize) != 0)
		return -1;

	/*
	 * A table's rows in block order: no parallel plan, whose workers would
	 * interleave their blocks' rows in no fixed order (a COPY's query can be
	 * planned in parallel).  Not for --query: its order is the query's, and
	 * it may well profit from parallel workers.
	 */
	if (table_order &&
		db_command(conn, "SET max_parallel_workers_per_gather = 0",
				   "could not set up the session", err, errsize) != 0)
		return -1;
	return db_command(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
					  "could not start the export's transaction", err, errsize);
}

int
db_conn_option(ConnOpts *o, int c, const char *arg)
{
	switch (c)
	{
		case 'd':
			o->dbname = arg;
			return 1;
		case 'h':
			o->host = arg;
			return 1;
		case 'p':
			o->port = arg;
			return 1;
		case 'U':
			o->user = arg;
			return 1;
		default:
			return 0;
	}
}

/* Wait until the connection has something to read, 'secs' at most, or a signal comes. */
static void
wait_readable(PGconn *conn, double secs)
{
	struct pollfd p;

	p.fd = PQsocket(conn);
	p.events = POLLIN;
	p.revents = 0;
	if (p.fd >= 0)
		(void) poll(&p, 1, secs <= 0 ? 0 : (int) (secs * 1000) + 1);
}

/* What db_exec_waiting has found out and said about a wait */
typedef struct LockWatch
{
	PGconn	   *monitor;		/* the second connection, once opened */
	int			no_monitor;		/* it could not be opened (said once) */
	char		said[1024];		/* the last message, said again only when it changes */
} LockWatch;

/*
 * What the session waits for: the relations it waits to lock, or whether it
 * waits for other transactions to end (as the creation of a logical slot
 * does, for every transaction that has written), and the sessions in its
 * way: those holding a conflicting lock, and those queued before it for one.
 */
static const char blocked_query[] =
	"SELECT coalesce((SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format('%I.%I', "
	"                          n.nspname, c.relname), ', ') "
	"                 FROM pg_catalog.pg_locks l "
	"                 JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relation "
	"                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
	"                 WHERE l.pid OPERATOR(pg_catalog.=) $1::pg_catalog.int4 AND NOT l.granted "
	"                   AND l.locktype OPERATOR(pg_catalog.=) 'relation'), ''), "
	"  EXISTS (SELECT FROM pg_catalog.pg_locks l "
	"          WHERE l.pid OPERATOR(pg_catalog.=) $1::pg_catalog.int4 AND NOT l.granted "
	"            AND l.locktype OPERATOR(pg_catalog.=) ANY ('{transactionid,virtualxid}')), "
	"  coalesce((SELECT pg_catalog.string_agg(b::pg_catalog.text, ', ' ORDER BY b) "
	"            FROM pg_catalog.unnest(pg_catalog.pg_blocking_pids($1::pg_catalog.int4)) b), '')";

/* 'conn' has waited 'waited' seconds: say for what, and whom, if it waits for a lock. */
static void
report_wait(PGconn *conn, LockWatch *w, double waited)
{
	char		pid[16];
	const char *params[1] = {pid};
	char		line[sizeof(w->said)];
	const char *rels;
	const char *pids;
	int			several;
	int			xact;
	int			rel_wait;
	PGresult   *res;

	if (w->no_monitor)
		return;
	if (w->monitor == NULL)
	{
		char		ignored[1024];

		w->monitor = connect_like(conn, NULL, NULL, 1, ignored, sizeof(ignored));
		if (w->monitor == NULL)
		{
			w->no_monitor = 1;
			fprintf(stderr, "%s: still waiting after %.0f s, for a lock perhaps (a second "
					"connection, to see which session holds it, could not be opened)\n",
					progname, waited);
			return;
		}
	}
	snprintf(pid, sizeof(pid), "%d", PQbackendPID(conn));
	res = PQexecParams(w->monitor, blocked_query, 1, NULL, params, NULL, NULL, 0);

	/* not waiting for a lock, or no longer: nothing to say */
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
		PQgetvalue(res, 0, 2)[0] == '\0')
	{
		PQclear(res);
		return;
	}
	rels = PQgetvalue(res, 0, 0);
	xact = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
	pids = PQgetvalue(res, 0, 2);
	several = strchr(pids, ',') != NULL;
	rel_wait = rels[0] != '\0';
	if (rel_wait)
		snprintf(line, sizeof(line), "waiting for a lock on %s, blocked by the session%s with "
				 "PID%s %s", rels, several ? "s" : "", several ? "s" : "", pids);
	else if (xact)
		snprintf(line, sizeof(line), "waiting for the transaction%s of the session%s with PID%s "
				 "%s to end", several ? "s" : "", several ? "s" : "", several ? "s" : "", pids);
	else
		line[0] = '\0';
	PQclear(res);
	if (line[0] == '\0' || strcmp(line, w->said) == 0)
		return;
	fprintf(stderr, "%s: %s (%.0f s so far)\n", progname, line, waited);
	if (w->said[0] == '\0')
	{
		if (!rel_wait)
			fprintf(stderr, "%s: hint: pg_stat_activity shows what %s (a new replication slot "
					"waits for every transaction that has written, or locked a table exclusively, "
					"to end)\n", progname, several ? "they run" : "it runs");
		else if (db_lock_wait_ms > 0)
			fprintf(stderr, "%s: hint: pg_stat_activity shows what %s; the export gives up after "
					"--lock-wait-timeout %s\n", progname, several ? "they run" : "it runs",
					db_lock_wait_arg);
		else
			fprintf(stderr, "%s: hint: pg_stat_activity shows what %s; "
					"--lock-wait-timeout=DURATION gives up after DURATION instead\n", progname,
					several ? "they run" : "it runs");
	}
	snprintf(w->said, sizeof(w->said), "%s", line);
}

PGresult *
db_exec_waiting(PGconn *conn, const char *sql, int nparams, const char *const *params,
				int *ndone)
{
	LockWatch	w;
	PGresult   *kept = NULL;	/* the first error, else the last result */
	PGresult   *res;
	int			done = 0;
	double		start = now_seconds();
	double		next = start + DB_WAIT_REPORT;

	memset(&w, 0, sizeof(w));
	if (ndone)
		*ndone = 0;
	if (nparams > 0 ? !PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0) :
		!PQsendQuery(conn, sql))
		return NULL;
	for (;;)
	{
		double		t;

		/* the results that have come: one a statement */
		while (!PQisBusy(conn))
		{
			res = PQgetResult(conn);
			if (res == NULL)
				goto end;
			if (kept && PQresultStatus(kept) == PGRES_FATAL_ERROR)
				PQclear(res);
			else
			{
				if (PQresultStatus(res) != PGRES_FATAL_ERROR)
					done++;
				PQclear(kept);
				kept = res;
			}
		}
		t = now_seconds();
		if (t >= next)
		{
			report_wait(conn, &w, t - start);
			next = now_seconds() + DB_WAIT_REPORT;
			t = now_seconds();
		}
		wait_readable(conn, next - t);

		/* a lost connection: libpq's error result comes next, then the end */
		if (!PQconsumeInput(conn))
		{
			while ((res = PQgetResult(conn)) != NULL)
			{
				if (kept && PQresultStatus(kept) == PGRES_FATAL_ERROR)
					PQclear(res);
				else
				{
					PQclear(kept);
					kept = res;
				}
			}
			break;
		}
	}
end:
	if (w.monitor)
		PQfinish(w.monitor);
	if (ndone)
		*ndone = done;
	return kept;
}

/*
 * The relations of this database that other sessions hold, or wait for,
 * ACCESS EXCLUSIVE locks on (the one mode that conflicts with ACCESS
 * SHARE), with their PIDs: asked on a connection of its own, as 'conn' is
 * in a failed transaction.  Their own temporary tables left out.  "" when
 * there are none, or they cannot be asked.
 */
static void
exclusive_locks(PGconn *conn, char *buf, size_t size)
{
	char		ignored[1024];
	PGconn	   *c = connect_like(conn, NULL, NULL, 1, ignored, sizeof(ignored));
	PGresult   *res;

	buf[0] = '\0';
	if (c == NULL)
		return;
	res = PQexec(c, "SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I (PID %s)', "
				 "    n.nspname, c.relname, l.pid), ', ' ORDER BY n.nspname, c.relname, l.pid) "
				 "FROM pg_catalog.pg_locks l "
				 "JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) l.database "
				 "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relation "
				 "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
				 "WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database() "
				 "  AND l.locktype OPERATOR(pg_catalog.=) 'relation' "
				 "  AND l.mode OPERATOR(pg_catalog.=) 'AccessExclusiveLock' "
				 "  AND l.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid() "
				 "  AND c.relpersistence OPERATOR(pg_catalog.<>) 't'");
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		snprintf(buf, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(c);
}

void
db_lock_error(PGconn *conn, const PGresult *res, const char *what, const char *table,
			  char *err, size_t errsize)
{
	const char *sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char		setting[128];
	char		which[1024];
	char		detail[2048];

	db_error(conn, res, what, err, errsize);
	if (sqlstate == NULL || strcmp(sqlstate, "55P03") != 0)
		return;
	if (db_lock_wait_arg)
		snprintf(setting, sizeof(setting), "--lock-wait-timeout %s", db_lock_wait_arg);
	else
		snprintf(setting, sizeof(setting), "lock_timeout, the session's setting (from "
				 "PGOPTIONS, the role or the database)");
	which[0] = '\0';
	if (table == NULL)
		exclusive_locks(conn, which, sizeof(which));
	snprintf(detail, sizeof(detail), "another session holds, or waits for, a lock on %s that "
			 "conflicts with the export's ACCESS SHARE lock (as ALTER TABLE, DROP, TRUNCATE, "
			 "VACUUM FULL, CLUSTER, REFRESH MATERIALIZED VIEW and LOCK TABLE take)%s%s; the "
			 "export waits no longer than %s", table ? table : "one of the tables",
			 which[0] ? "; just now such locks are held or awaited on " : "", which, setting);
	append_trimmed(err, errsize, "\ndetail: ", detail);
	append_trimmed(err, errsize, "\nhint: ", "retry once that session is done (pg_stat_activity "
				   "and pg_locks show it), or give a longer --lock-wait-timeout");
}
