/*
 * db.h
 *		Connections and server error messages.
 */
#ifndef DB_H
#define DB_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

typedef struct ConnOpts
{
	const char *dbname;			/* a database name, or a conninfo string or URI */
	const char *host;
	const char *port;
	const char *user;
	const char *replication;	/* "database" for a walsender, else NULL */
	const char *appname;		/* fallback_application_name; NULL: the program's name */
} ConnOpts;

/*
 * The connection options both programs take: -d, -h, -p, -U.  Returns 1 if c
 * was one of them (stored in o), 0 otherwise.
 */
extern int	db_conn_option(ConnOpts *o, int c, const char *arg);

/* Their long forms, for a program's getopt_long table */
/*
 * --unmappable-values=MODE: bson_out.unmappable_values for the sessions that
 * read documents (error or fallback, as the extension's setting and the
 * output plugin's option unmappable-values).  NULL: the session's own.
 */
#define DB_UNMAPPABLE_VALUES	220
#define DB_UNMAPPABLE_LONGOPT \
	{"unmappable-values", required_argument, NULL, DB_UNMAPPABLE_VALUES}
extern const char *db_unmappable_values;

/* Take --unmappable-values (a usage error for anything but error, fallback) */
extern void db_unmappable_option(const char *arg);

#define DB_CONN_LONGOPTS \
	{"dbname", required_argument, NULL, 'd'}, \
	{"host", required_argument, NULL, 'h'}, \
	{"port", required_argument, NULL, 'p'}, \
	{"username", required_argument, NULL, 'U'}

/*
 * Connect; on failure NULL with an actionable message in err.  TCP
 * keepalives default to on, 30 s idle, 10 s interval, 3 probes, unless the
 * user set them (conninfo string, URI or service file).  The server's
 * warnings and notices are printed on standard error, after the program's
 * name (as are those of the connections below).
 */
extern PGconn *db_connect(const ConnOpts *opts, char *err, size_t errsize);

/*
 * Another connection to exactly the server and database 'leader' is on (for
 * the workers of --jobs: a conninfo listing several hosts must not send a
 * worker to another one), with the leader's settings and keepalives.
 */
extern PGconn *db_connect_like(PGconn *leader, char *err, size_t errsize);

/*
 * The same, to a Citus node at host:port (the same database, user and
 * options: only host and port differ).
 */
extern PGconn *db_connect_node(PGconn *leader, const char *host, const char *port,
							   char *err, size_t errsize);

/*
 * The settings that change what the documents say (IntervalStyle,
 * DateStyle, TimeZone, extra_float_digits, bson_out.*), as they are on
 * 'leader' however they were set there (options, role or database
 * defaults, SET): a statement that sets them on another connection, whose
 * server's defaults may differ.  malloc'ed; NULL with err set.
 */
extern char *db_settings_sql(PGconn *leader, char *err, size_t errsize);

/*
 * --lock-wait-timeout=DURATION (parse_duration_ms): lock_timeout in the
 * sessions that read the tables, as pg_dump's option of that name: fail
 * rather than wait longer for the ACCESS SHARE locks the export takes (0:
 * wait as long as it takes).  Not given (-1): the session's own
 * lock_timeout, as PGOPTIONS, the role or the database set it, never
 * overridden.
 */
#define DB_LOCK_WAIT_TIMEOUT	221
#define DB_LOCK_WAIT_LONGOPT \
	{"lock-wait-timeout", required_argument, NULL, DB_LOCK_WAIT_TIMEOUT}
extern int32_t db_lock_wait_ms;
extern const char *db_lock_wait_arg;	/* as given, for messages */

/* Take --lock-wait-timeout (a usage error for a malformed duration) */
extern void db_lock_wait_option(const char *arg);

/*
 * Row-level security.  The sessions that read the tables run with
 * row_security off, as pg_dump's do: a table whose policies would hide rows
 * from the role is then the server's error, naming the table, instead of a
 * part of the table exported without a word.  db_row_security
 * (pg_bsonexport --enable-row-security): the rows as the policies let the
 * role see them.  db_rls_hint: what the program advises after such an
 * error (a sentence that follows "the role ... would see only some rows of
 * the table: ").
 */
extern int	db_row_security;
extern const char *db_rls_hint;

/*
 * Prepare a connection for exporting: no statement or idle timeouts (an
 * export may legitimately run for hours; pg_dump does the same), lock_timeout
 * as --lock-wait-timeout says, row_security as above, with 'table_order' no
 * parallel query (a table's rows in block order), and the read-only
 * REPEATABLE READ transaction every query then runs in.  BEGIN takes no
 * snapshot: the transaction's first query does.
 */
extern int	db_begin_export(PGconn *conn, int table_order, char *err, size_t errsize);

/*
 * Run statements that may wait for table locks (LOCK TABLE, a query that
 * opens tables; with parameters, one statement) as PQexec or PQexecParams
 * would, but while they wait, about every DB_WAIT_REPORT seconds, say on
 * standard error which relation they wait for and which sessions are in
 * the way (pg_locks and pg_blocking_pids(), asked on a second connection
 * opened only then); said again only when that changes.  Returns the first
 * failed statement's result, else the last one's (NULL: the query could not
 * be sent); *ndone, if not NULL: how many statements completed before.  A
 * signal's cancel request ends the wait as it ends any statement.
 */
#define DB_WAIT_REPORT	5.0
extern PGresult *db_exec_waiting(PGconn *conn, const char *sql, int nparams,
								 const char *const *params, int *ndone);

/*
 * db_error for a statement that waited for table locks: a lock timeout
 * (lock_timeout or --lock-wait-timeout) gets a detail naming the table
 * ('table', quoted; NULL when the statement locks several: the tables that
 * other sessions hold or await ACCESS EXCLUSIVE locks on just then, the one
 * lock mode that conflicts with the export's) and the setting, and a hint.
 */
extern void db_lock_error(PGconn *conn, const PGresult *res, const char *what,
						  const char *table, char *err, size_t errsize);

/* Run a statement that returns no rows (or rows we ignore). */
extern int	db_command(PGconn *conn, const char *sql, const char *what,
					   char *err, size_t errsize);

/*
 * The server's error as "what: message" plus its detail and hint lines, or
 * libpq's message when there is no result (lost connection).  The result
 * may be NULL.
 */
extern void db_error(PGconn *conn, const PGresult *res, const char *what,
					 char *err, size_t errsize);

/*
 * The server's CONTEXT (where in the server the error arose: for an output
 * plugin, its callback and the change's LSN) as a "context:" line after
 * err, if the result has one.
 */
extern void db_error_context(const PGresult *res, char *err, size_t errsize);

/* The table being exported (quoted), named in permission hints; or NULL. */
extern const char *db_hint_table;

#endif							/* DB_H */
