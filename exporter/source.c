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

/*
 * The schema bson_out is installed in, quoted, so that its functions are
 * called by their qualified names whatever the search_path.
 */
static char *
extension_schema(PGconn *conn, int need_row, int need_json, char *err, size_t errsize)
{
	PGresult   *res;
	char	   *schema;

	res = query_params(conn,
					   "SELECT quote_ident(n.nspname), e.extversion, "
					   "  to_regprocedure(quote_ident(n.nspname) || '.row_to_bson(record, boolean)') IS NOT NULL, "
					   "  to_regprocedure(quote_ident(n.nspname) || '.json_to_bson(json, boolean, boolean)') IS NOT NULL, "
					   "  current_database() "
					   "FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
					   "WHERE e.extname = 'bson_out'",
					   0, NULL, "could not look up the bson_out extension", err, errsize);
	if (res == NULL)
		return NULL;
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		fail(err, errsize,
			 "the bson_out extension is not installed in database \"%s\"\n"
			 "hint: run CREATE EXTENSION bson_out; in that database (or export with --query "
			 "from a database that has it)", PQdb(conn));
		return NULL;
	}
	if ((need_row && strcmp(PQgetvalue(res, 0, 2), "t") != 0) ||
		(need_json && strcmp(PQgetvalue(res, 0, 3), "t") != 0))
	{
		fail(err, errsize,
			 "the bson_out extension in database \"%s\" is version %s, which has no %s\n"
			 "hint: update it with ALTER EXTENSION bson_out UPDATE;",
			 PQdb(conn), PQgetvalue(res, 0, 1), need_row ? "row_to_bson" : "json_to_bson");
		PQclear(res);
		return NULL;
	}
	schema = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (schema == NULL)
		fail(err, errsize, "out of memory");
	return schema;
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

int
source_table(PGconn *conn, const char *name, const char *column,
			 int extended_json, Source *src, char *err, size_t errsize)
{
	const char *params[2];
	PGresult   *res;
	char	   *schema;
	char		oid[16];
	size_t		n;

	memset(src, 0, sizeof(*src));
	schema = extension_schema(conn, column == NULL, column != NULL && extended_json, err, errsize);
	if (schema == NULL)
		return -1;

	/* to_regclass parses the name as SQL does and applies the search_path */
	params[0] = name;
	res = query_params(conn,
					   "SELECT c.oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname), "
					   "  c.relkind, c.reltuples, c.relhassubclass "
					   "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
					   "WHERE c.oid = to_regclass($1)",
					   1, params, "invalid table name", err, errsize);
	if (res == NULL)
		goto fail;
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		fail(err, errsize,
			 "table \"%s\" does not exist\n"
			 "hint: names follow SQL rules: unquoted names are folded to lower case, so write a "
			 "mixed-case name in double quotes (--table '\"MyTable\"'), and qualify a table that is not "
			 "on the search_path with its schema (--table myschema.mytable)", name);
		goto fail;
	}
	snprintf(oid, sizeof(oid), "%s", PQgetvalue(res, 0, 0));
	src->table = strdup(PQgetvalue(res, 0, 1));
	src->relkind = PQgetvalue(res, 0, 2)[0];
	src->reltuples = atof(PQgetvalue(res, 0, 3));
	src->has_children = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
	PQclear(res);
	if (src->table == NULL)
	{
		fail(err, errsize, "out of memory");
		goto fail;
	}
	if (strchr("rpvmf", src->relkind) == NULL)
	{
		fail(err, errsize, "\"%s\" is %s; --table needs a table, view, materialized view or "
			 "foreign table", name, relkind_name(src->relkind));
		goto fail;
	}

	if (column == NULL)
	{
		if (extended_json)
		{
			fail(err, errsize, "--extended-json needs --column: it applies to a json or jsonb "
				 "column's Extended JSON wrappers, while a whole row is exported with its "
				 "columns' own types");
			goto fail;
		}
		n = strlen(schema) + 64;
		src->expr = malloc(n);
		if (src->expr)
			/* t.* rather than t: a column named t would win over the row */
			snprintf(src->expr, n, "%s.row_to_bson(t.*)", schema);
	}
	else
	{
		const char *qcol;
		const char *base;
		const char *fn;
		int			is_domain;

		params[0] = oid;
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
			char	   *cols = json_columns(conn, oid);

			PQclear(res);
			if (strchr(column, '.') && column[0] != '"')
				fail(err, errsize, "--column takes a column name, not \"%s\"", column);
			else if (cols && cols[0])
				fail(err, errsize, "column \"%s\" does not exist in table %s\n"
					 "hint: its json and jsonb columns are: %s", column, src->table, cols);
			else
				fail(err, errsize, "column \"%s\" does not exist in table %s\n"
					 "hint: the table has no json or jsonb column; export its rows with --table alone "
					 "(row_to_bson)", column, src->table);
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
			char	   *cols = json_columns(conn, oid);

			fail(err, errsize, "column %s of table %s has type %s; --column needs a jsonb or json "
				 "column\nhint: %s%s%s", qcol, src->table, PQgetvalue(res, 0, 1),
				 cols && cols[0] ? "the table's json and jsonb columns are: " : "",
				 cols && cols[0] ? cols : "export the rows with --table alone (row_to_bson), ",
				 cols && cols[0] ? "" : "or convert with --query 'SELECT to_bson(col::jsonb) FROM tbl'");
			free(cols);
			PQclear(res);
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
	free(schema);
	if (src->expr == NULL)
		return fail(err, errsize, "out of memory");
	return 0;

fail:
	free(schema);
	source_free(src);
	return -1;
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

	/* COPY (query) cannot take a trailing semicolon */
	len = strlen(query);
	while (len > 0 && (query[len - 1] == ';' || query[len - 1] == ' ' ||
					   query[len - 1] == '\n' || query[len - 1] == '\t' || query[len - 1] == '\r'))
		len--;
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

char *
source_copy_sql(const Source *src, int64_t from, int64_t to)
{
	size_t		n;
	char	   *sql;
	char		where[128] = "";

	if (src->is_query)
	{
		/* newlines: a trailing -- comment in the query must not eat the ')' */
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
	n = strlen(src->expr) + strlen(src->table) + strlen(where) + 96;
	sql = malloc(n);
	if (sql)
		snprintf(sql, n, "COPY (SELECT %s FROM %s%s t%s) TO STDOUT (FORMAT binary)",
				 src->expr, where[0] ? "ONLY " : "", src->table, where);
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
