/*
 * repl.c
 *		The logical replication protocol, as pg_bsonstream speaks it.
 */
#include "repl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>

#include "common.h"
#include "db.h"
#include "progress.h"
#include "signals.h"

/* Seconds in CREATE_REPLICATION_SLOT before saying what it waits for */
#define CREATE_SLOT_SAY_AFTER	5.0

/* microseconds between the Unix epoch and PostgreSQL's (2000-01-01) */
#define PG_EPOCH_OFFSET_US	INT64_C(946684800000000)

/* As the server's pg_lsn reads it: 1 to 8 hexadecimal digits, '/', 1 to 8 more */
int
lsn_parse(const char *s, Lsn *lsn)
{
	const char *hex = "0123456789abcdefABCDEF";
	size_t		hi_len,
				lo_len;

	if (s == NULL)
		return -1;
	hi_len = strspn(s, hex);
	if (hi_len < 1 || hi_len > 8 || s[hi_len] != '/')
		return -1;
	lo_len = strspn(s + hi_len + 1, hex);
	if (lo_len < 1 || lo_len > 8 || s[hi_len + 1 + lo_len] != '\0')
		return -1;
	*lsn = ((Lsn) strtoul(s, NULL, 16) << 32) | (Lsn) strtoul(s + hi_len + 1, NULL, 16);
	return 0;
}

uint64_t
repl_get64(const char *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | (unsigned char) p[i];
	return v;
}

static void
put64(char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--)
	{
		p[i] = (char) (v & 0xff);
		v >>= 8;
	}
}

void
repl_hint(const char *slot, char *err, size_t errsize)
{
	const char *hint = NULL;
	char		buf[512];
	size_t		n = strlen(err);

	if (strstr(err, "wal_level"))
		hint = "Set wal_level = logical in postgresql.conf and restart the server.";
	else if (strstr(err, "already exists"))
	{
		snprintf(buf, sizeof(buf),
				 "Resume it by leaving out --create-slot, or drop it with "
				 "SELECT pg_drop_replication_slot('%s').", slot);
		hint = buf;
	}
	else if (strstr(err, "does not exist") && strstr(err, "replication slot"))
		hint = "Create it with --create-slot.";
	else if (strstr(err, "has been invalidated"))
	{
		snprintf(buf, sizeof(buf),
				 "The slot has been invalidated (it kept too much WAL for max_slot_wal_keep_size, "
				 "or conflicted with recovery): the changes it missed are gone.  Drop it with "
				 "SELECT pg_drop_replication_slot('%s') and start again with --create-slot "
				 "--initial-copy into an empty directory.", slot);
		hint = buf;
	}
	else if (strstr(err, "is active for PID"))
		hint = "Another client is streaming from this slot: stop it, or use another slot.";
	else if (strstr(err, "may not be used as an output plugin"))
		hint = "Add bson_out to output_plugin_libraries and reload the server's configuration.";
	else if (strstr(err, "could not access file") || strstr(err, "No such file"))
		hint = "Install the bson_out extension on the server (make install); the plugin is its library.";
	else if (strstr(err, "replication permission") || strstr(err, "WAL sender") ||
			 strstr(err, "replication role") || strstr(err, "REPLICATION attribute"))
	{
		char	   *generic = strstr(err, "\nhint: check the connection options");

		/* the connection worked: db.c's hint about its options would mislead */
		if (generic)
			*generic = '\0';
		n = strlen(err);
		hint = "Connect as a role with the REPLICATION attribute (ALTER ROLE name REPLICATION).";
	}
	if (hint && n + 8 < errsize && strstr(err, "\nhint: ") == NULL)
		snprintf(err + n, errsize - n, "\nhint: %s", hint);
}

int
repl_retryable(const PGresult *res, int reconnecting)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	/* libpq's own error: the connection, not the server, failed */
	if (state == NULL || strlen(state) != 5)
		return 1;
	/* connection_exception */
	if (strncmp(state, "08", 2) == 0)
		return 1;
	/* admin_shutdown (a fast stop, pg_terminate_backend), crash_shutdown, cannot_connect_now */
	if (strcmp(state, "57P01") == 0 || strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0)
		return 1;
	/* object_in_use: the walsender of the lost connection still holds the slot */
	if (reconnecting && strcmp(state, "55006") == 0)
		return 1;
	return 0;
}

/*
 * CREATE_REPLICATION_SLOT has been waiting for a while: a logical slot
 * starts at a point where no transaction is in progress (PostgreSQL's rule:
 * the slot's snapshot must see each transaction whole), so it waits for
 * every transaction with an xid that runs as it starts, in any database,
 * a prepared one too, which may wait for a person.  Say so, with those
 * transactions as another (ordinary) connection sees them.
 */
static void
say_waiting(const ConnOpts *opts, PGconn *repl, const char *slot)
{
	ConnOpts	o = *opts;
	char		err[1024];
	char		pid[32];
	const char *params[1] = {pid};
	PGconn	   *conn;
	PGresult   *res = NULL;
	int			shown = 0;

	fprintf(stderr, "%s: creating the replication slot \"%s\" waits for the transactions in "
			"progress to end, prepared ones too (PostgreSQL's rule: a logical slot starts where "
			"none is in progress)\n", progname, slot);
	o.replication = NULL;
	conn = db_connect(&o, err, sizeof(err));
	if (conn != NULL)
	{
		snprintf(pid, sizeof(pid), "%d", PQbackendPID(repl));
		res = PQexecParams(conn,
						   "SELECT pg_catalog.format('prepared transaction %L (database %s, owner %s, "
						   "prepared at %s)', gid, database, owner, prepared::timestamptz(0)) "
						   "FROM pg_catalog.pg_prepared_xacts "
						   "UNION ALL "
						   "SELECT pg_catalog.format('process %s (database %s, user %s, %s, in its "
						   "transaction since %s)', pid, datname, usename, state, "
						   "xact_start::timestamptz(0)) "
						   "FROM pg_catalog.pg_stat_activity "
						   "WHERE backend_xid IS NOT NULL AND pid <> $1::int",
						   1, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(res) == PGRES_TUPLES_OK)
			for (int i = 0; i < PQntuples(res); i++, shown++)
				fprintf(stderr, "%s:   %s\n", progname, PQgetvalue(res, i, 0));
		PQclear(res);
		PQfinish(conn);
	}
	if (!shown)
		fprintf(stderr, "%s:   (none that this role can see in pg_prepared_xacts and "
				"pg_stat_activity)\n", progname);
	fprintf(stderr, "hint: End them (COMMIT or ROLLBACK; COMMIT PREPARED or ROLLBACK PREPARED for a "
			"prepared transaction), or stop this run with Ctrl-C.\n");
}

/*
 * The command's result, waiting on the socket: after CREATE_SLOT_SAY_AFTER
 * seconds say what it waits for, and at a signal cancel it (it may wait for
 * as long as a transaction stays open).  NULL if the connection failed.
 */
static PGresult *
create_slot_result(PGconn *conn, const ConnOpts *opts, const char *slot)
{
	double		say_at = now_seconds() + CREATE_SLOT_SAY_AFTER;
	int			said = 0;
	int			cancelled = 0;
	PGresult   *res;
	PGresult   *more;

	while (PQisBusy(conn))
	{
		int			sock = PQsocket(conn);
		fd_set		rfds;
		struct timeval tv = {1, 0};
		double		left = say_at - now_seconds();

		if (sock < 0)
			break;
		if (!said && left < 1)
			tv.tv_sec = 0, tv.tv_usec = left > 0 ? (suseconds_t) (left * 1e6) : 0;
		FD_ZERO(&rfds);
		FD_SET(sock, &rfds);
		if (select(sock + 1, &rfds, NULL, NULL, &tv) < 0 && errno != EINTR)
			break;
		if (PQconsumeInput(conn) == 0)
			break;
		if (interrupted && !cancelled)
		{
			PGcancel   *cancel = PQgetCancel(conn);
			char		buf[256];

			cancelled = 1;
			if (cancel)
			{
				(void) PQcancel(cancel, buf, sizeof(buf));
				PQfreeCancel(cancel);
			}
		}
		if (!said && !cancelled && now_seconds() >= say_at)
		{
			said = 1;
			say_waiting(opts, conn, slot);
		}
	}
	res = PQgetResult(conn);
	while ((more = PQgetResult(conn)) != NULL)
		PQclear(more);
	return res;
}

int
repl_create_slot(PGconn *conn, const ConnOpts *opts, const char *slot, int temporary,
				 char *snapshot, size_t snapsize, Lsn *start, char *err, size_t errsize)
{
	char		sql[512];
	char	   *ident = PQescapeIdentifier(conn, slot, strlen(slot));
	PGresult   *res;

	if (ident == NULL)
	{
		db_error(conn, NULL, "could not create the replication slot", err, errsize);
		return -1;
	}
	/* 15 takes options in parentheses; before, the bare keyword */
	if (PQserverVersion(conn) >= 150000)
		snprintf(sql, sizeof(sql),
				 "CREATE_REPLICATION_SLOT %s%s LOGICAL bson_out (SNAPSHOT 'export')", ident,
				 temporary ? " TEMPORARY" : "");
	else
		snprintf(sql, sizeof(sql),
				 "CREATE_REPLICATION_SLOT %s%s LOGICAL bson_out EXPORT_SNAPSHOT", ident,
				 temporary ? " TEMPORARY" : "");
	PQfreemem(ident);
	res = PQsendQuery(conn, sql) ? create_slot_result(conn, opts, slot) : NULL;
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQnfields(res) < 3)
	{
		snprintf(sql, sizeof(sql), "could not create replication slot \"%s\"", slot);
		db_error(conn, res, sql, err, errsize);
		repl_hint(slot, err, errsize);
		PQclear(res);
		return -1;
	}
	if (lsn_parse(PQgetvalue(res, 0, 1), start) != 0)
	{
		snprintf(err, errsize, "unexpected consistent point \"%s\"", PQgetvalue(res, 0, 1));
		PQclear(res);
		return -1;
	}
	snprintf(snapshot, snapsize, "%s", PQgetvalue(res, 0, 2));
	PQclear(res);
	return 0;
}

/*
 * ", name 'value'" (the first option opening the list) onto sql; 0, or -1
 * when sql is too small.  The value is quoted as the
 * replication command grammar reads strings: a quote doubled, a backslash
 * as itself (it has no E'' strings, which PQescapeLiteral writes for a
 * value with a backslash, as a table pattern's escape).
 */
static int
add_option(char *sql, size_t size, size_t *n, int *count, const char *name,
		   const char *value)
{
	const char *c;

	*n += snprintf(sql + *n, size - *n, "%s\"%s\" '", (*count)++ ? ", " : " (", name);
	for (c = value; *c != '\0' && *n + 3 < size; c++)
	{
		if (*c == '\'')
			sql[(*n)++] = '\'';
		sql[(*n)++] = *c;
	}
	if (*c != '\0' || *n + 2 > size)
		return -1;
	sql[(*n)++] = '\'';
	sql[*n] = '\0';
	return 0;
}

int
repl_start(PGconn *conn, const char *slot, Lsn start, const Selection *sel,
		   const ReplEventOptions *events, int reconnecting, char *err, size_t errsize)
{
	size_t		size = 512 + strlen(slot) * 2 + (sel->ns_db ? strlen(sel->ns_db) * 2 : 0);
	char	   *sql;
	char	   *ident = PQescapeIdentifier(conn, slot, strlen(slot));
	size_t		n;
	int			count = 0;
	int			rc = 0;
	PGresult   *res;

	for (int i = 0; i < sel->ninclude; i++)
		size += strlen(sel->include[i]) * 2 + 32;
	for (int i = 0; i < sel->nexclude; i++)
		size += strlen(sel->exclude[i]) * 2 + 32;
	sql = malloc(size);
	if (sql == NULL || ident == NULL)
	{
		free(sql);
		PQfreemem(ident);
		snprintf(err, errsize, "out of memory");
		return -1;
	}
	n = snprintf(sql, size, "START_REPLICATION SLOT %s LOGICAL " LSN_FORMAT,
				 ident, LSN_ARGS(start));
	PQfreemem(ident);

	/* each value its own option, as the plugin adds them up */
	for (int i = 0; i < sel->ninclude && rc == 0; i++)
		rc = add_option(sql, size, &n, &count, "include-tables", sel->include[i]);
	for (int i = 0; i < sel->nexclude && rc == 0; i++)
		rc = add_option(sql, size, &n, &count, "exclude-tables", sel->exclude[i]);
	if (rc == 0 && sel->ns_db)
		rc = add_option(sql, size, &n, &count, "ns-db", sel->ns_db);
	if (rc == 0 && sel->include_schema)
		rc = add_option(sql, size, &n, &count, "include-schema", "on");
	if (rc == 0 && !sel->partition_root)
		rc = add_option(sql, size, &n, &count, "partition-root", "off");
	if (rc == 0 && events->unmappable)
		rc = add_option(sql, size, &n, &count, "unmappable-values", events->unmappable);
	if (rc == 0 && events->before_change)
		rc = add_option(sql, size, &n, &count, "full-document-before-change", "on");
	if (rc == 0 && events->schema_events)
		rc = add_option(sql, size, &n, &count, "schema-events", "on");
	if (rc == 0 && events->heartbeats)
		rc = add_option(sql, size, &n, &count, "heartbeats", "on");
	/* where each transaction ends: what a stop confirms (commit_marker.h) */
	if (rc == 0)
		rc = add_option(sql, size, &n, &count, "commit-markers", "on");
	if (rc == 0 && count > 0)
		rc = n + 1 < size ? 0 : -1;
	if (rc != 0)
	{
		free(sql);
		snprintf(err, errsize, "out of memory");
		return -1;
	}
	if (count > 0)
		snprintf(sql + n, size - n, ")");
	res = PQexec(conn, sql);
	free(sql);
	if (PQresultStatus(res) != PGRES_COPY_BOTH)
	{
		char		what[256];

		snprintf(what, sizeof(what), "could not start streaming from slot \"%s\"", slot);
		db_error(conn, res, what, err, errsize);
		repl_hint(slot, err, errsize);
		db_error_context(res, err, errsize);
		rc = repl_retryable(res, reconnecting) ? -2 : -1;
		PQclear(res);
		return rc;
	}
	PQclear(res);
	return 0;
}

int
repl_send_status(PGconn *conn, Lsn flush, int reply_requested)
{
	char		msg[1 + 8 + 8 + 8 + 8 + 1];
	struct timeval tv;
	int64_t		now;

	gettimeofday(&tv, NULL);
	now = (int64_t) tv.tv_sec * 1000000 + tv.tv_usec - PG_EPOCH_OFFSET_US;
	msg[0] = 'r';
	put64(msg + 1, flush);
	put64(msg + 9, flush);
	put64(msg + 17, flush);
	put64(msg + 25, (uint64_t) now);
	msg[33] = (char) reply_requested;
	if (PQputCopyData(conn, msg, sizeof(msg)) <= 0 || PQflush(conn) != 0)
		return -1;
	return 0;
}
