/*
 * source.c
 *		What to export, checked against the catalog (see source.h).
 *
 * Every name that reaches an SQL statement is quoted by the server
 * (quote_ident) after the server itself has parsed what the user typed
 * (to_regclass, parse_ident): no user text is spliced into SQL except the
 * --query, which is meant to be SQL.
 */
#include "source.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

#define BYTEAOID	17

static int
fail(char *err, size_t errsize, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, errsize, fmt, ap);
	va_end(ap);
	return -1;
}

/* PQexecParams with text parameters; NULL (and err set) unless it returned rows */
static PGresult *
query_params(PGconn *conn, const char *sql, int n, const char *const *params,
			 const char *what, char *err, size_t errsize)
{
	PGresult   *res = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(conn, res, what, err, errsize);
		PQclear(res);
		return NULL;
	}
	return res;
}

/* bson_out in the database: where, which version, which functions */
typedef struct Extension
{
	char	   *schema;			/* quoted; functions are called by qualified name */
	char		version[64];
	/*
	 * Every release has these; they are checked so that an installation
	 * that lacks one (a function dropped by hand, a half-done upgrade) gets
	 * a message naming it instead of a failed query.
	 */
	int			has_row_to_bson;	/* row_to_bson(record, boolean) */
	int			has_bson_document;	/* bson_document(record, boolean, boolean), 1.1.0 */
	int			has_json_to_bson;	/* json_to_bson(json, boolean, boolean) */
	int			has_to_bson_ext;	/* to_bson(jsonb, boolean, boolean) */
	int			has_check_ids;	/* bson_check_ids(regclass, boolean), 1.2.0 */
} Extension;

static int
extension_info(PGconn *conn, Extension *ext, char *err, size_t errsize)
{
	PGresult   *res;

	memset(ext, 0, sizeof(*ext));
	res = query_params(conn,
					   "SELECT quote_ident(n.nspname), e.extversion, "
					   "  to_regprocedure(quote_ident(n.nspname) || '.row_to_bson(record, boolean)') IS NOT NULL, "
					   "  to_regprocedure(quote_ident(n.nspname) || '.json_to_bson(json, boolean, boolean)') IS NOT NULL, "
					   "  to_regprocedure(quote_ident(n.nspname) || '.to_bson(jsonb, boolean, boolean)') IS NOT NULL, "
					   "  to_regprocedure(quote_ident(n.nspname) || '.bson_document(record, boolean, boolean)') IS NOT NULL, "
					   "  to_regprocedure(quote_ident(n.nspname) || '.bson_check_ids(regclass, boolean)') IS NOT NULL "
					   "FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
					   "WHERE e.extname = 'bson_out'",
					   0, NULL, "could not look up the bson_out extension", err, errsize);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		return fail(err, errsize,
					"the bson_out extension is not installed in database \"%s\"\n"
					"hint: run CREATE EXTENSION bson_out; in that database (or export with --query "
					"from a database that has it)", PQdb(conn));
	}
	snprintf(ext->version, sizeof(ext->version), "%s", PQgetvalue(res, 0, 1));
	ext->has_row_to_bson = strcmp(PQgetvalue(res, 0, 2), "t") == 0;
	ext->has_json_to_bson = strcmp(PQgetvalue(res, 0, 3), "t") == 0;
	ext->has_to_bson_ext = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
	ext->has_bson_document = strcmp(PQgetvalue(res, 0, 5), "t") == 0;
	ext->has_check_ids = strcmp(PQgetvalue(res, 0, 6), "t") == 0;
	ext->schema = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (ext->schema == NULL)
		return fail(err, errsize, "out of memory");
	return 0;
}

/* An export that needs a function the installed bson_out does not have. */
static int
extension_lacks(PGconn *conn, const Extension *ext, const char *what, const char *fn,
				char *err, size_t errsize)
{
	return fail(err, errsize,
				"%s needs the function %s, which the bson_out extension in database \"%s\" "
				"(version %s) does not have\n"
				"hint: reinstall the extension's files (make install) and run DROP EXTENSION "
				"bson_out; CREATE EXTENSION bson_out; or ALTER EXTENSION bson_out UPDATE; in "
				"that database", what, fn, PQdb(conn), ext->version);
}

static const char *
relkind_name(char k)
{
	switch (k)
	{
		case 'i':
		case 'I':
			return "an index";
		case 'S':
			return "a sequence";
		case 'c':
			return "a composite type";
		case 't':
			return "a TOAST table";
		default:
			return "not a table";
	}
}

/* The table's json and jsonb columns, for error messages. */
static char *
json_columns(PGconn *conn, const char *oid)
{
	const char *params[1] = {oid};
	PGresult   *res = PQexecParams(conn,
								   "SELECT coalesce(string_agg(quote_ident(a.attname) || ' ' || "
								   "  format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum), '') "
								   "FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid "
								   "WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped "
								   "  AND (CASE WHEN ty.typtype = 'd' THEN ty.typbasetype ELSE ty.oid END) "
								   "      IN ('json'::regtype, 'jsonb'::regtype)",
								   1, NULL, params, NULL, NULL, 0);
	char	   *s = NULL;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		s = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return s ? s : strdup("");
}

/*
 * Look NAME up: to_regclass parses it as SQL does and applies the
 * search_path.  Fills oid, table, relkind, reltuples, has_children.
 */
static int
lookup_table(PGconn *conn, const char *name, Source *src, char *err, size_t errsize)
{
	const char *params[1] = {name};
	PGresult   *res;

	res = query_params(conn,
					   "SELECT c.oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname), "
					   "  c.relkind, c.reltuples, c.relhassubclass "
					   "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
					   "WHERE c.oid = to_regclass($1)",
					   1, params, "invalid table name", err, errsize);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		return fail(err, errsize,
					"table \"%s\" does not exist\n"
					"hint: names follow SQL rules: unquoted names are folded to lower case, so write a "
					"mixed-case name in double quotes (--table '\"MyTable\"'), and qualify a table that is not "
					"on the search_path with its schema (--table myschema.mytable)", name);
	}
	snprintf(src->oid, sizeof(src->oid), "%s", PQgetvalue(res, 0, 0));
	/* kept when unchanged: db_hint_table may point to it */
	if (src->table == NULL || strcmp(src->table, PQgetvalue(res, 0, 1)) != 0)
	{
		if (db_hint_table == src->table)
			db_hint_table = NULL;
		free(src->table);
		src->table = strdup(PQgetvalue(res, 0, 1));
	}
	src->relkind = PQgetvalue(res, 0, 2)[0];
	src->reltuples = atof(PQgetvalue(res, 0, 3));
	src->has_children = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
	PQclear(res);
	if (src->table == NULL)
		return fail(err, errsize, "out of memory");
	if (strchr("rpvmf", src->relkind) == NULL)
		return fail(err, errsize, "\"%s\" is %s; --table needs a table, view, materialized view or "
					"foreign table", name, relkind_name(src->relkind));
	return 0;
}

int
source_resolve(PGconn *conn, const char *name, Source *src, char *err, size_t errsize)
{
	memset(src, 0, sizeof(*src));
	if (lookup_table(conn, name, src, err, errsize) != 0)
	{
		source_free(src);
		return -1;
	}
	return 0;
}

int
source_lock(PGconn *conn, const Source *src, int nowait, int may_skip,
			char *err, size_t errsize)
{
	char		sql[1024];
	PGresult   *res;
	const char *sqlstate;

	switch (src->relkind)
	{
		case 'r':
		case 'p':
		case 'v':
			/* a view: LOCK locks the tables it reads too (PostgreSQL 11 and later) */
			snprintf(sql, sizeof(sql), "LOCK TABLE %s IN ACCESS SHARE MODE%s",
					 src->table, nowait ? " NOWAIT" : "");
			break;
		case 'm':

			/*
			 * LOCK TABLE refuses materialized views; a query that opens one
			 * holds ACCESS SHARE to the end of the transaction.  It takes
			 * the snapshot first, which is harmless here: the one thing
			 * that empties a materialized view under a snapshot, REFRESH,
			 * writes its rows frozen, visible to every snapshot.  The
			 * lock_timeout of 1 ms is NOWAIT's equivalent for a query; the
			 * session's own is set again after it.
			 */
			if (nowait)
			{
				PGresult   *r = PQexec(conn, "SELECT pg_catalog.quote_literal("
									   "pg_catalog.current_setting('lock_timeout'))");

				if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ||
					strlen(PQgetvalue(r, 0, 0)) > 64)
				{
					db_error(conn, r, "could not lock the table", err, errsize);
					PQclear(r);
					return -1;
				}
				snprintf(sql, sizeof(sql), "SET LOCAL lock_timeout = 1; SELECT FROM %s LIMIT 0; "
						 "SELECT pg_catalog.set_config('lock_timeout', %s, true)", src->table,
						 PQgetvalue(r, 0, 0));
				PQclear(r);
			}
			else
				snprintf(sql, sizeof(sql), "SELECT FROM %s LIMIT 0", src->table);
			break;
		default:
			/* a foreign table: LOCK refuses it, and it has no local rows to protect */
			return 0;
	}

	/* a savepoint (no snapshot either) lets the transaction go on without the lock */
	if (may_skip && db_command(conn, "SAVEPOINT pg_bsonexport_lock", "could not lock the table",
							   err, errsize) != 0)
		return -1;
	/* waiting, the wait is said (db_exec_waiting) */
	res = nowait ? PQexec(conn, sql) : db_exec_waiting(conn, sql, 0, NULL, NULL);
	if (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK)
	{
		PQclear(res);
		return may_skip ? db_command(conn, "RELEASE SAVEPOINT pg_bsonexport_lock",
									 "could not lock the table", err, errsize) : 0;
	}
	sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	if (may_skip && sqlstate && strcmp(sqlstate, "42501") == 0)
	{
		/*
		 * No table-level SELECT privilege (column privileges are enough to
		 * export a column but not to LOCK), or none on a partition that a
		 * SELECT of the parent does not check: export unlocked, as the COPY
		 * alone would; if it is not allowed either, the COPY says why.
		 */
		PQclear(res);
		return db_command(conn, "ROLLBACK TO SAVEPOINT pg_bsonexport_lock; "
						  "RELEASE SAVEPOINT pg_bsonexport_lock",
						  "could not lock the table", err, errsize) == 0 ? 1 : -1;
	}
	if (nowait && sqlstate && strcmp(sqlstate, "55P03") == 0)
	{
		char		msg[1024];

		db_error(conn, res, "could not lock the table", msg, sizeof(msg));
		PQclear(res);
		return fail(err, errsize,
					"%s\ndetail: another session waits for (or holds) an exclusive lock on %s, "
					"e.g. an ALTER TABLE, TRUNCATE, VACUUM FULL or REFRESH queued behind this "
					"export's own lock; a job waiting behind it would wait forever, since that "
					"session waits for the export to end\n"
					"hint: retry the export once that session is done (pg_stat_activity and "
					"pg_locks show it), or export without --jobs",
					msg, src->table);
	}
	db_lock_error(conn, res, "could not lock the table", src->table, err, errsize);
	PQclear(res);
	return -1;
}

/*
 * The server's check that the rows are documents a collection can hold
 * (equal rows of a table whose _id is the whole row are not), in the
 * export's snapshot.  An extension older than the check has none to make.
 */
static int
check_ids(PGconn *conn, const Extension *ext, const Source *src, char *err, size_t errsize)
{
	const char *params[1] = {src->oid};
	char		sql[512];
	PGresult   *res;

	if (!ext->has_check_ids)
		return 0;
	snprintf(sql, sizeof(sql), "SELECT %s.bson_check_ids($1::oid::regclass)", ext->schema);
	res = query_params(conn, sql, 1, params, "could not export the table", err, errsize);
	if (res == NULL)
		return -1;
	PQclear(res);
	return 0;
}

int
source_table(PGconn *conn, const char *name, const char *column,
			 int extended_json, int no_id, Source *src, char *err, size_t errsize)
{
	const char *params[2];
	PGresult   *res;
	Extension	ext = {NULL, "", 0, 0, 0, 0, 0};
	char		oid[16];
	const char *schema;
	size_t		n;

	/* the relation locked must still be the one the name resolved to */
	snprintf(oid, sizeof(oid), "%s", src->oid);
	if (lookup_table(conn, name, src, err, errsize) != 0)
		goto fail;
	if (strcmp(oid, src->oid) != 0)
	{
		fail(err, errsize, "table \"%s\" was dropped, renamed or replaced while the export "
			 "started\nhint: retry the export", name);
		goto fail;
	}
	if (extension_info(conn, &ext, err, errsize) != 0)
		goto fail;
	schema = ext.schema;

	if (column == NULL)
	{
		if (extended_json)
		{
			fail(err, errsize, "--extended-json needs --column: it applies to a json or jsonb "
				 "column's Extended JSON wrappers, while a whole row is exported with its "
				 "columns' own types");
			goto fail;
		}
		if (no_id && !ext.has_row_to_bson)
		{
			extension_lacks(conn, &ext, "exporting whole rows without _id (--no-id)",
							"row_to_bson", err, errsize);
			goto fail;
		}
		if (!no_id && !ext.has_bson_document)
		{
			extension_lacks(conn, &ext, "exporting whole rows with _id (--table without "
							"--column; --no-id exports them without, with row_to_bson)",
							"bson_document", err, errsize);
			goto fail;
		}
		if (!no_id && check_ids(conn, &ext, src, err, errsize) != 0)
			goto fail;
		n = strlen(schema) + 64;
		src->expr = malloc(n);
		/* t.* rather than t: a column named t would win over the row */
		if (src->expr)
			snprintf(src->expr, n, "%s.%s(t.*)", schema, no_id ? "row_to_bson" : "bson_document");
	}
	else
	{
		const char *qcol;
		const char *base;
		const char *fn;
		int			is_domain;

		params[0] = src->oid;
		params[1] = column;
		/* parse_ident: the column name as SQL reads it ("Doc" quoted, doc folded) */
		res = query_params(conn,
						   "SELECT quote_ident(a.attname), format_type(a.atttypid, a.atttypmod), "
						   "  (CASE WHEN ty.typtype = 'd' THEN ty.typbasetype ELSE ty.oid END)::regtype::text, "
						   "  ty.typtype = 'd', cardinality(parse_ident($2)) "
						   "FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid "
						   "WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped "
						   "  AND a.attname = (parse_ident($2))[1] "
						   "  AND cardinality(parse_ident($2)) = 1",
						   2, params, "invalid column name", err, errsize);
		if (res == NULL)
			goto fail;
		if (PQntuples(res) == 0)
		{
			char	   *cols = json_columns(conn, src->oid);

			PQclear(res);
			if (strchr(column, '.') && column[0] != '"')
				fail(err, errsize, "--column takes a column name, not \"%s\"", column);
			else if (cols && cols[0])
				fail(err, errsize, "column \"%s\" does not exist in table %s\n"
					 "hint: its json and jsonb columns are: %s", column, src->table, cols);
			else
				fail(err, errsize, "column \"%s\" does not exist in table %s\n"
					 "hint: the table has no json or jsonb column; export its rows with --table alone "
					 "(bson_document)", column, src->table);
			free(cols);
			goto fail;
		}
		qcol = PQgetvalue(res, 0, 0);
		base = PQgetvalue(res, 0, 2);
		is_domain = strcmp(PQgetvalue(res, 0, 3), "t") == 0;
		if (strcmp(base, "jsonb") == 0)
			fn = "to_bson";
		else if (strcmp(base, "json") == 0)
			fn = "json_to_bson";
		else
		{
			char	   *cols = json_columns(conn, src->oid);

			fail(err, errsize, "column %s of table %s has type %s; --column needs a jsonb or json "
				 "column\nhint: %s%s%s", qcol, src->table, PQgetvalue(res, 0, 1),
				 cols && cols[0] ? "the table's json and jsonb columns are: " : "",
				 cols && cols[0] ? cols : "export the rows with --table alone (bson_document), ",
				 cols && cols[0] ? "" : "or convert with --query 'SELECT to_bson(col::jsonb) FROM tbl'");
			free(cols);
			PQclear(res);
			goto fail;
		}

		if (fn[0] == 'j' && !ext.has_json_to_bson)
		{
			PQclear(res);
			extension_lacks(conn, &ext, "exporting a json column", "json_to_bson",
							err, errsize);
			goto fail;
		}
		if (fn[0] == 't' && extended_json && !ext.has_to_bson_ext)
		{
			PQclear(res);
			extension_lacks(conn, &ext, "--extended-json", "to_bson(jsonb, boolean)",
							err, errsize);
			goto fail;
		}
		n = strlen(schema) + strlen(qcol) + 64;
		src->expr = malloc(n);
		if (src->expr)
			snprintf(src->expr, n, "%s.%s(t.%s%s%s)", schema, fn, qcol,
					 is_domain ? (fn[0] == 't' ? "::jsonb" : "::json") : "",
					 extended_json ? ", true" : "");
		PQclear(res);
	}
	free(ext.schema);
	if (src->expr == NULL)
		return fail(err, errsize, "out of memory");
	return 0;

fail:
	free(ext.schema);
	source_free(src);
	return -1;
}

/* a character of an identifier or keyword (and so of a dollar-quote tag, but '$') */
static int
ident_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

/*
 * Where --query ends: the offset just past its last token, skipping quoted
 * text and comments as the server's lexer does, so that a trailing ';', a
 * trailing comment and blanks (which COPY (query) would choke on) can be
 * cut off.  -1, with *semi set to its offset, if a ';' outside quotes and
 * comments is followed by more SQL: a second statement.  'std_strings':
 * standard_conforming_strings, without which a backslash escapes in '...'.
 * What this gets wrong, the server then reports as a syntax error.
 */
static long
query_end(const char *q, int std_strings, size_t *semi)
{
	size_t		n = strlen(q);
	size_t		i = 0;
	size_t		end = 0;
	int			after_semi = 0;

	while (i < n)
	{
		unsigned char c = (unsigned char) q[i];

		if (isspace(c))
		{
			i++;
			continue;
		}
		if (c == '-' && q[i + 1] == '-')
		{
			while (i < n && q[i] != '\n')
				i++;
			continue;
		}
		if (c == '/' && q[i + 1] == '*')
		{
			int			depth = 1;	/* they nest */

			for (i += 2; i < n && depth > 0;)
			{
				if (q[i] == '/' && q[i + 1] == '*')
					depth++, i += 2;
				else if (q[i] == '*' && q[i + 1] == '/')
					depth--, i += 2;
				else
					i++;
			}
			continue;
		}
		if (c == ';')
		{
			if (!after_semi)
				*semi = i;
			after_semi = 1;
			i++;
			continue;
		}
		if (after_semi)
			return -1;

		if (c == '\'')
		{
			/* E'...' (the E not ending a longer word) takes backslash escapes */
			int			backslash = !std_strings ||
				(i > 0 && (q[i - 1] == 'E' || q[i - 1] == 'e') &&
				 (i < 2 || !ident_char((unsigned char) q[i - 2])));

			for (i++; i < n; i++)
			{
				if (backslash && q[i] == '\\' && i + 1 < n)
					i++;
				else if (q[i] == '\'' && q[i + 1] == '\'')
					i++;
				else if (q[i] == '\'')
				{
					i++;
					break;
				}
			}
			end = i;
			continue;
		}
		if (c == '"')
		{
			for (i++; i < n; i++)
			{
				if (q[i] == '"' && q[i + 1] == '"')
					i++;
				else if (q[i] == '"')
				{
					i++;
					break;
				}
			}
			end = i;
			continue;
		}
		if (c == '$' && (i == 0 || !ident_char((unsigned char) q[i - 1])))
		{
			/* $tag$ ... $tag$, tag empty or an identifier without '$' ($1 is a parameter) */
			size_t		t = i + 1;

			if (t < n && (isalpha((unsigned char) q[t]) || q[t] == '_' || (unsigned char) q[t] >= 0x80))
				while (t < n && q[t] != '$' && ident_char((unsigned char) q[t]))
					t++;
			if (t < n && q[t] == '$')
			{
				size_t		taglen = t - i + 1;
				const char *close = NULL;
				size_t		k;

				for (k = t + 1; k + taglen <= n; k++)
					if (memcmp(q + k, q + i, taglen) == 0)
					{
						close = q + k;
						break;
					}
				i = close ? (size_t) (close - q) + taglen : n;
				end = i;
				continue;
			}
		}
		i++;
		end = i;
	}
	return (long) end;
}

int
source_query(PGconn *conn, const char *query, Source *src, char *err, size_t errsize)
{
	PGresult   *res;
	size_t		len;
	int			nf;
	int			i;
	char		list[1024];
	size_t		used = 0;

	memset(src, 0, sizeof(*src));
	src->is_query = 1;
	src->reltuples = -1;

	/* COPY (query) takes neither a trailing semicolon nor a second statement */
	{
		const char *scs = PQparameterStatus(conn, "standard_conforming_strings");
		size_t		semi = 0;
		long		end = query_end(query, scs == NULL || strcmp(scs, "on") == 0, &semi);

		if (end < 0)
		{
			const char *rest = query + semi + 1;

			while (isspace((unsigned char) *rest))
				rest++;
			return fail(err, errsize,
						"--query takes one query, but this one goes on after a ';': \"%.40s%s\"\n"
						"hint: remove the ';' and what follows it (a ';' at the end, and comments "
						"after it, are fine), or export each query on its own",
						rest, strlen(rest) > 40 ? "..." : "");
		}
		if (end == 0)
			return fail(err, errsize, "the query is empty (only blanks, comments or ';')");
		len = (size_t) end;
	}
	src->query = strndup(query, len);
	if (src->query == NULL)
		return fail(err, errsize, "out of memory");

	/* describe it without running it: the unnamed prepared statement */
	res = PQprepare(conn, "", src->query, 0, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		db_error(conn, res, "the query failed", err, errsize);
		PQclear(res);
		source_free(src);
		return -1;
	}
	PQclear(res);
	res = PQdescribePrepared(conn, "");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		db_error(conn, res, "could not describe the query", err, errsize);
		PQclear(res);
		source_free(src);
		return -1;
	}
	if (PQnparams(res) > 0)
	{
		PQclear(res);
		source_free(src);
		return fail(err, errsize, "the query has parameters ($1, ...); --query takes a query "
					"without parameters");
	}

	/* the server reports a domain's base type, so a domain over bytea passes */
	nf = PQnfields(res);
	if (nf == 1 && PQftype(res, 0) == BYTEAOID)
	{
		PQclear(res);
		return 0;
	}

	list[0] = '\0';
	for (i = 0; i < nf && used < sizeof(list) - 64; i++)
	{
		char		typ[16];
		char		mod[16];
		const char *params[2] = {typ, mod};
		PGresult   *t;

		snprintf(typ, sizeof(typ), "%u", PQftype(res, i));
		snprintf(mod, sizeof(mod), "%d", PQfmod(res, i));
		t = PQexecParams(conn, "SELECT format_type($1::oid, $2::int)", 2, NULL, params,
						 NULL, NULL, 0);
		used += snprintf(list + used, sizeof(list) - used, "%s%s %s", i ? ", " : "",
						 PQfname(res, i),
						 PQresultStatus(t) == PGRES_TUPLES_OK ? PQgetvalue(t, 0, 0) : typ);
		PQclear(t);
	}
	if (i < nf && used < sizeof(list) - 8)
		snprintf(list + used, sizeof(list) - used, ", ...");
	PQclear(res);
	source_free(src);
	if (nf == 0)
		return fail(err, errsize, "query must return exactly one bytea column; it returns no columns");
	return fail(err, errsize,
				"query must return exactly one bytea column; it returns %d column%s: %s\n"
				"hint: make the only column a BSON document, e.g. --query 'SELECT to_bson(doc) FROM tbl' "
				"or 'SELECT row_to_bson(t) FROM tbl t'",
				nf, nf == 1 ? "" : "s", list);
}

int64_t
source_blocks(PGconn *conn, const Source *src, char *err, size_t errsize)
{
	const char *params[1] = {src->table};
	PGresult   *res;
	int64_t		blocks;

	res = query_params(conn,
					   "SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int",
					   1, params, "could not get the table's size", err, errsize);
	if (res == NULL)
		return -1;
	blocks = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	return blocks;
}

/* The SELECT of table mode, with a WHERE clause or ""; malloc'ed. */
static char *
table_select(const Source *src, const char *where)
{
	size_t		n = strlen(src->expr) + strlen(src->table) + strlen(where) + 64;
	char	   *sql = malloc(n);

	if (sql)
		snprintf(sql, n, "SELECT %s FROM %s%s t%s",
				 src->expr, where[0] ? "ONLY " : "", src->table, where);
	return sql;
}

int
source_estimate(PGconn *conn, const Source *src, double *rows, char *err, size_t errsize)
{
	char	   *select = src->is_query ? strdup(src->query) : table_select(src, "");
	char	   *sql;
	size_t		n;
	PGresult   *res;
	int			ok = 0;

	*rows = -1;
	if (select == NULL)
		return 0;
	n = strlen(select) + 32;
	sql = malloc(n);
	if (sql == NULL)
	{
		free(select);
		return 0;
	}
	snprintf(sql, n, "EXPLAIN (FORMAT JSON)\n%s", select);
	free(select);

	if (db_command(conn, "SAVEPOINT pg_bsonexport_estimate", "could not estimate the rows",
				   err, errsize) != 0)
	{
		free(sql);
		return -1;
	}
	res = PQexec(conn, sql);
	free(sql);
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
	{
		/* the first "Plan Rows" is the top node's: a node's own fields precede its children */
		const char *p = strstr(PQgetvalue(res, 0, 0), "\"Plan Rows\":");

		ok = 1;
		if (p)
			*rows = strtod(p + strlen("\"Plan Rows\":"), NULL);
	}
	PQclear(res);
	return db_command(conn, ok ? "RELEASE SAVEPOINT pg_bsonexport_estimate" :
					  "ROLLBACK TO SAVEPOINT pg_bsonexport_estimate; "
					  "RELEASE SAVEPOINT pg_bsonexport_estimate",
					  "could not estimate the rows", err, errsize);
}

char *
source_copy_sql(const Source *src, int64_t from, int64_t to)
{
	size_t		n;
	char	   *sql;
	char	   *select;
	char		where[128] = "";

	if (src->is_query)
	{
		/* newlines: kept from when a trailing -- comment could reach here */
		n = strlen(src->query) + 64;
		sql = malloc(n);
		if (sql)
			snprintf(sql, n, "COPY (\n%s\n) TO STDOUT (FORMAT binary)", src->query);
		return sql;
	}
	if (from >= 0 && to >= 0)
		snprintf(where, sizeof(where), " WHERE t.ctid >= '(%lld,0)'::tid AND t.ctid < '(%lld,0)'::tid",
				 (long long) from, (long long) to);
	else if (from >= 0)
		snprintf(where, sizeof(where), " WHERE t.ctid >= '(%lld,0)'::tid", (long long) from);
	else if (to >= 0)
		snprintf(where, sizeof(where), " WHERE t.ctid < '(%lld,0)'::tid", (long long) to);
	select = table_select(src, where);
	if (select == NULL)
		return NULL;
	n = strlen(select) + 64;
	sql = malloc(n);
	if (sql)
		snprintf(sql, n, "COPY (%s) TO STDOUT (FORMAT binary)", select);
	free(select);
	return sql;
}

char *
source_copy_sql_of(const Source *src, const char *table)
{
	size_t		n = strlen(src->expr) + strlen(table) + 64;
	char	   *sql = malloc(n);

	if (sql)
		snprintf(sql, n, "COPY (SELECT %s FROM %s t) TO STDOUT (FORMAT binary)", src->expr, table);
	return sql;
}

void
source_free(Source *src)
{
	free(src->table);
	free(src->expr);
	free(src->query);
	src->table = NULL;
	src->expr = NULL;
	src->query = NULL;
}
