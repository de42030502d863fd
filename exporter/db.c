/*
 * db.c
 *		Connections and server error messages (see db.h).
 */
#include "db.h"

#include <stdio.h>
#include <string.h>

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

void
db_error(PGconn *conn, const PGresult *res, const char *what,
		 char *err, size_t errsize)
{
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

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
	if (res && PQresultErrorField(res, PG_DIAG_MESSAGE_HINT))
		append_trimmed(err, errsize, "\nhint: ", PQresultErrorField(res, PG_DIAG_MESSAGE_HINT));
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

PGconn *
db_connect(const ConnOpts *opts, char *err, size_t errsize)
{
	const char *keys[6];
	const char *vals[6];
	int			n = 0;
	PGconn	   *conn;

	/*
	 * dbname first, with expand_dbname: a conninfo string or URI given as
	 * the database name supplies defaults that -h, -p and -U then override
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
	keys[n] = "fallback_application_name";
	vals[n++] = "pg_bsonexport";
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
	return conn;
}

PGconn *
db_connect_like(PGconn *leader, char *err, size_t errsize)
{
	PQconninfoOption *opts = PQconninfo(leader);
	PQconninfoOption *o;
	const char *keys[64];
	const char *vals[64];
	int			n = 0;
	PGconn	   *conn;

	if (opts == NULL)
	{
		snprintf(err, errsize, "could not open another connection: out of memory");
		return NULL;
	}
	for (o = opts; o->keyword && n < 60; o++)
	{
		if (o->val == NULL)
			continue;
		/* the server the leader actually reached, not the whole list */
		if (strcmp(o->keyword, "host") == 0 || strcmp(o->keyword, "hostaddr") == 0 ||
			strcmp(o->keyword, "port") == 0 || strcmp(o->keyword, "dbname") == 0 ||
			strcmp(o->keyword, "target_session_attrs") == 0)
			continue;
		keys[n] = o->keyword;
		vals[n++] = o->val;
	}
	keys[n] = "host";
	vals[n++] = PQhost(leader);
	keys[n] = "port";
	vals[n++] = PQport(leader);
	keys[n] = "dbname";
	vals[n++] = PQdb(leader);
	keys[n] = NULL;
	vals[n] = NULL;

	conn = PQconnectdbParams(keys, vals, 0);
	PQconninfoFree(opts);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
	{
		err[0] = '\0';
		append_trimmed(err, errsize, "could not open another connection for --jobs: ",
					   conn ? PQerrorMessage(conn) : "out of memory");
		append_trimmed(err, errsize, "\nhint: ", "the server may be at max_connections; try fewer --jobs");
		PQfinish(conn);
		return NULL;
	}
	return conn;
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

int
db_begin_export(PGconn *conn, char *err, size_t errsize)
{
	/*
	 * synchronize_seqscans off: a sequential scan then starts at block 0
	 * instead of joining a concurrent scan midway, so that --jobs 1 writes
	 * the rows in the same (physical) order as --jobs N.
	 */
	if (db_command(conn,
				   "SET statement_timeout = 0; SET lock_timeout = 0; "
				   "SET idle_in_transaction_session_timeout = 0; "
				   "SET synchronize_seqscans = off",
				   "could not set up the session", err, errsize) != 0)
		return -1;
	return db_command(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
					  "could not start the export's transaction", err, errsize);
}
