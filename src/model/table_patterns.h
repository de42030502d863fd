/*
 * table_patterns.h
 *		The table filters of the output plugin (include-tables,
 *		exclude-tables) and of bson_collections(): one grammar, one parser,
 *		one matcher, so that the change stream, the first copy and the export
 *		select the same tables.
 *
 * A filter is a comma-separated list of schema.table patterns, where * stands
 * for any run of characters and a backslash takes the next character
 * literally (a dot, comma, star or backslash in a name); blanks around an
 * entry and around its dot are ignored.  Both parts must be given:
 * "public.*", "*.orders".  A table is selected if no include pattern is
 * given or one matches, and no exclude pattern matches.
 */
#ifndef TABLE_PATTERNS_H
#define TABLE_PATTERNS_H

#include "bson_compat.h"

#include "nodes/pg_list.h"

typedef struct TablePattern
{
	char	   *text;			/* the entry as written, for messages */
	char	   *schema;			/* each part keeps its escapes, read when */
	char	   *table;			/* matching */
	bool		used;			/* has matched a table (for warnings) */
} TablePattern;

/*
 * Add the patterns of one list to patterns (a List of TablePattern *).  A
 * malformed list is an error (22023) whose message is errmsg_text, the
 * DETAIL saying what is wrong.
 */
extern List *bson_table_patterns_parse(List *patterns, const char *list,
									   const char *errmsg_text);

/*
 * Does one of patterns match schema.name?  Each pattern that matches is
 * marked used.
 */
extern bool bson_table_patterns_match(List *patterns, const char *schema,
									  const char *name);

#endif							/* TABLE_PATTERNS_H */
