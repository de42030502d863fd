/*
 * selection.h
 *		Which tables, under which names: the options that both programs pass
 *		to the server as they are, to the output plugin (include-tables,
 *		exclude-tables, ns-db, include-schema, partition-root) and to
 *		bson_collections(), so that a dump, a first copy and a change stream
 *		select and name the same tables alike.  The patterns are never
 *		matched here: the server parses them (the plugin's own code).
 */
#ifndef SELECTION_H
#define SELECTION_H

#define MAX_PATTERNS	64

typedef struct Selection
{
	const char *include[MAX_PATTERNS];	/* include-tables values, each a list */
	int			ninclude;
	const char *exclude[MAX_PATTERNS];	/* exclude-tables values */
	int			nexclude;
	const char *ns_db;			/* NULL: the database's own name */
	int			include_schema;
	int			partition_root; /* set by selection_init */
} Selection;

/* Their getopt_long codes and long forms */
#define SEL_INCLUDE_TABLES		200
#define SEL_EXCLUDE_TABLES		201
#define SEL_NS_DB				202
#define SEL_INCLUDE_SCHEMA		203
#define SEL_NO_PARTITION_ROOT	204

#define SELECTION_LONGOPTS \
	{"include-tables", required_argument, NULL, SEL_INCLUDE_TABLES}, \
	{"exclude-tables", required_argument, NULL, SEL_EXCLUDE_TABLES}, \
	{"ns-db", required_argument, NULL, SEL_NS_DB}, \
	{"include-schema", no_argument, NULL, SEL_INCLUDE_SCHEMA}, \
	{"no-partition-root", no_argument, NULL, SEL_NO_PARTITION_ROOT}

/* The help lines of these options */
#define SELECTION_HELP \
	"      --include-tables=LIST  schema.table patterns, comma-separated (* any run,\n" \
	"                             \\ escapes); repeatable, the lists add up;\n" \
	"                             default: every table\n" \
	"      --exclude-tables=LIST  tables left out, the same way; repeatable\n" \
	"      --ns-db=NAME           the database's name in the namespaces (default:\n" \
	"                             the PostgreSQL database's)\n" \
	"      --include-schema       collections named schema.table even in public\n" \
	"      --no-partition-root    a partition is a collection of its own, not\n" \
	"                             part of its root table's\n"

extern void selection_init(Selection *s);

/*
 * If c is one of the options above, store it (a usage error for too many
 * patterns or an empty --ns-db) and return 1; else 0.
 */
extern int	selection_option(Selection *s, int c, const char *arg);

/* Is anything but the defaults given (for options that exclude them)? */
extern int	selection_given(const Selection *s);

#endif							/* SELECTION_H */
