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
	char	   *table;			/* schema-qualified, quoted: safe to splice into SQL */
	char		relkind;		/* pg_class.relkind */
	int			has_children;	/* inheritance children or partitions */
	double		reltuples;		/* the planner's row estimate, <= 0 if unknown */
	char	   *expr;			/* the BSON expression over alias t */

	/* query mode */
	char	   *query;			/* trailing semicolons and blanks removed */
} Source;

/*
 * Resolve --table NAME [--column COL] [--extended-json].  NAME follows SQL
 * rules (case-folded unless double-quoted, optionally schema-qualified); so
 * does COL.  Runs in the export's transaction.
 */
extern int	source_table(PGconn *conn, const char *name, const char *column,
						 int extended_json, Source *src, char *err, size_t errsize);

/* Check that --query returns exactly one bytea column, without running it. */
extern int	source_query(PGconn *conn, const char *query, Source *src,
						 char *err, size_t errsize);

/* The table's size in blocks (for --jobs), or -1 with err set. */
extern int64_t source_blocks(PGconn *conn, const Source *src, char *err, size_t errsize);

/*
 * The COPY statement.  For table mode with block bounds (from < 0: from the
 * first block; to < 0: to the end), only the rows of blocks [from, to),
 * read by a TID Range Scan.  malloc'ed.
 */
extern char *source_copy_sql(const Source *src, int64_t from, int64_t to);

extern void source_free(Source *src);

#endif							/* SOURCE_H */
