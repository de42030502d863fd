/*
 * initial.c
 *		pg_bsonstream's first copy under the slot's exported snapshot.
 */
#include "initial.h"

#include <errno.h>
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
"  current_database()"
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

static int
copy_table(PGconn *conn, const char *schema, const char *table, const char *idexpr,
		   const char *cols, const char *path, int sync, InitialStats *stats,
		   char *err, size_t errsize)
{
	size_t		n = strlen(schema) + strlen(table) + strlen(cols ? cols : "") +
		strlen(idexpr ? idexpr : "") + 256;
	char	   *sql = malloc(n);
	OutFile		out;
	Job			job;
	int			rc = -1;

	if (sql == NULL)
	{
		snprintf(err, errsize, "out of memory");
		return -1;
	}
	if (idexpr)
		snprintf(sql, n, "COPY (SELECT %s.row_to_bson(s) FROM (SELECT %s AS \"_id\"%s%s "
				 "FROM ONLY %s t) s) TO STDOUT (FORMAT binary)",
				 schema, idexpr, cols ? ", " : "", cols ? cols : "", table);
	else
		snprintf(sql, n, "COPY (SELECT %s.row_to_bson(t) FROM ONLY %s t) TO STDOUT (FORMAT binary)",
				 schema, table);

	if (out_open(&out, path, 1, sync) != 0)
	{
		snprintf(err, errsize, "%s", out.errmsg);
		out_free(&out);
		free(sql);
		return -1;
	}
	memset(&job, 0, sizeof(job));
	job.id = 1;
	job.njobs = 1;
	job.conn = conn;
	job.sql = sql;
	job.out = &out;
	job.max_size = MAX_DOCUMENT;
	if (job_run(&job) != 0)
		snprintf(err, errsize, "%s", job.errmsg);
	else if (out_flush(&out, sync) != 0 || out_commit(&out, 1, sync) != 0)
		snprintf(err, errsize, "%s", out.errmsg);
	else
	{
		stats->tables++;
		stats->docs += atomic_load(&job.rows);
		stats->bytes += atomic_load(&job.bytes);
		rc = 0;
	}
	if (rc != 0)
		out_abort(&out);
	out_free(&out);
	free(sql);
	return rc;
}

int
initial_copy(const ConnOpts *copts, const char *snapshot, const char *dir,
			 const char *const *include, int ninclude, int sync,
			 InitialStats *stats, char *err, size_t errsize)
{
	PGconn	   *conn;
	PGresult   *res = NULL;
	char		sql[256];
	char	   *schema = NULL;
	char		idir[4096];
	int			rc = -1;
	int			cancel_slot = -1;
	PGcancel   *cancel = NULL;

	memset(stats, 0, sizeof(*stats));
	snprintf(idir, sizeof(idir), "%s/initial", dir);
	if (mkdir(idir, 0777) != 0 && errno != EEXIST)
	{
		snprintf(err, errsize, "could not create directory \"%s\": %s", idir, strerror(errno));
		return -1;
	}
	conn = db_connect(copts, err, errsize);
	if (conn == NULL)
		return -1;
	cancel = PQgetCancel(conn);
	if (cancel)
		cancel_slot = signals_register_cancel(cancel);
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
	{
		char		path[8192];

		if (interrupted)
		{
			snprintf(err, errsize, "interrupted during the initial copy");
			goto done;
		}
		if (!table_selected(PQgetvalue(res, i, 0), include, ninclude))
			continue;
		snprintf(path, sizeof(path), "%s/%s.%s.bson", idir, PQgetvalue(res, i, 5),
				 PQgetvalue(res, i, 1));
		if (copy_table(conn, schema, PQgetvalue(res, i, 2),
					   PQgetisnull(res, i, 3) ? NULL : PQgetvalue(res, i, 3),
					   PQgetisnull(res, i, 4) ? NULL : PQgetvalue(res, i, 4),
					   path, sync, stats, err, errsize) != 0)
			goto done;
	}
	rc = db_command(conn, "COMMIT", "could not end the initial copy's transaction", err, errsize);

done:
	PQclear(res);
	free(schema);
	if (cancel_slot >= 0)
		signals_unregister_cancel(cancel_slot);
	if (cancel)
		PQfreeCancel(cancel);
	PQfinish(conn);
	return rc;
}
