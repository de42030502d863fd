/*
 * source.h
 *		What to export: a table (typed rows or a json/jsonb column) or a
 *		query, checked against the catalog before anything is streamed, and
 *		the COPY statements that read it.
 */
#ifndef SOURCE_H
#define SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

typedef struct Source
{
	int			is_query;

	/* table mode */
	char		oid[16];		/* pg_class.oid, as resolved by source_resolve */
	char	   *table;			/* schema-qualified, quoted: safe to splice into SQL */
	char		relkind;		/* pg_class.relkind */
	int			has_children;	/* inheritance children or partitions */
	double		reltuples;		/* the planner's row estimate, <= 0 if unknown */
	char	   *expr;			/* the BSON expression over alias t */

	/* query mode */
	char	   *query;			/* trailing semicolons, comments and blanks removed */
} Source;

/*
 * Resolve --table NAME to a relation (its oid and quoted name), outside the
 * export's transaction: NAME follows SQL rules (case-folded unless
 * double-quoted, optionally schema-qualified).  Then the export's
 * transaction locks it (source_lock) before its first query, and
 * source_table checks the rest.
 */
extern int	source_resolve(PGconn *conn, const char *name, Source *src,
						   char *err, size_t errsize);

/*
 * Take ACCESS SHARE on the resolved relation, as the transaction's first
 * statement: LOCK takes no snapshot, so the snapshot the next query takes
 * is already protected against TRUNCATE (not MVCC-safe: a snapshot taken
 * before a TRUNCATE committed would see the table empty).  A materialized
 * view, which LOCK refuses, is opened by a query instead; a foreign table
 * is not locked.  'nowait' (the jobs of --jobs): fail at once rather than
 * queue behind another session's lock request.  'may_skip': without the
 * privilege that LOCK needs (table-level SELECT, also on every partition or
 * child), go on unlocked, as before; returns 1 then.  0 when locked, -1
 * with err set.
 */
extern int	source_lock(PGconn *conn, const Source *src, int nowait, int may_skip,
						char *err, size_t errsize);

/*
 * Check --table NAME [--column COL] [--extended-json] [--no-id] in the
 * export's transaction: NAME must still be the relation source_resolve
 * found; COL follows SQL rules too; the bson_out functions needed must
 * exist.  A whole row is bson_document(t.*) (_id first, as the change
 * events' fullDocument), or with no_id row_to_bson(t.*).
 */
extern int	source_table(PGconn *conn, const char *name, const char *column,
						 int extended_json, int no_id, Source *src, char *err, size_t errsize);

/*
 * Check that --query is one query (a trailing ';' and comments are removed;
 * a ';' followed by more SQL is refused) returning exactly one bytea
 * column, without running it.
 */
extern int	source_query(PGconn *conn, const char *query, Source *src,
						 char *err, size_t errsize);

/*
 * The planner's row estimate for the export's query ("Plan Rows" of
 * EXPLAIN (FORMAT JSON), which plans it without running it), in a
 * savepoint so that a failure cannot harm the export; -1 if there is none.
 * Returns -1 with err set only if the transaction could not be restored.
 */
extern int	source_estimate(PGconn *conn, const Source *src, double *rows,
							char *err, size_t errsize);

/* The table's size in blocks (for --jobs), or -1 with err set. */
extern int64_t source_blocks(PGconn *conn, const Source *src, char *err, size_t errsize);

/*
 * The COPY statement.  For table mode with block bounds (from < 0: from the
 * first block; to < 0: to the end), only the rows of blocks [from, to),
 * read by a TID Range Scan.  malloc'ed.
 */
extern char *source_copy_sql(const Source *src, int64_t from, int64_t to);

/*
 * The COPY statement of table mode over another table of the same columns
 * (a Citus shard; 'table' quoted and qualified).  malloc'ed.
 */
extern char *source_copy_sql_of(const Source *src, const char *table);

extern void source_free(Source *src);

#endif							/* SOURCE_H */
