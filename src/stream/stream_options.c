/*
 * stream_options.c
 *		The output plugin's options and table filters.
 *
 * Options are read when a decoding session starts: a mistake then stops the
 * session with a clear error before any change is decoded, rather than
 * showing up as missing events later.
 *
 * Table filters are comma-separated lists of schema.table patterns, where *
 * stands for any run of characters and a backslash takes the next character
 * literally (a dot, comma, star or backslash in a name).  Both parts must be
 * given: "public.*", "*.orders".  A table is streamed if include-tables is
 * not given or one of its patterns matches, and no exclude-tables pattern
 * matches.
 */
#include "stream_options.h"

#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/scansup.h"
#include "utils/builtins.h"

/* One pattern of a filter: each part keeps its escapes, read when matching */
typedef struct TablePattern
{
	char	   *schema;
	char	   *table;
} TablePattern;

#define OPTION_NAMES "include-tables, exclude-tables, full-document, " \
	"full-document-before-change, omit-nulls, ns-db and include-schema"

static const char *
option_value(DefElem *opt)
{
	return opt->arg ? strVal(opt->arg) : NULL;
}

pg_noreturn static void
report_bad_value(DefElem *opt, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for option \"%s\" of output plugin bson_out",
					opt->defname),
			 errdetail("%s", detail)));
}

/* A Boolean option: given without a value, it is on */
static bool
parse_bool_option(DefElem *opt)
{
	const char *value = option_value(opt);
	bool		result;

	if (value == NULL)
		return true;
	if (!parse_bool(value, &result))
		report_bad_value(opt,
						 psprintf("\"%s\" is not a Boolean value: use on, off, true, false, yes, no, 1 or 0.",
								  value));
	return result;
}

/*
 * Where the next unescaped stop character (or the end) is in s, from i on.
 * A backslash at the very end escapes nothing and is an error.
 */
static int
scan_to(DefElem *opt, const char *s, int i, char stop)
{
	while (s[i] != '\0' && s[i] != stop)
	{
		CHECK_FOR_INTERRUPTS();
		if (s[i] == '\\')
		{
			if (s[i + 1] == '\0')
				report_bad_value(opt, "The list ends with a backslash, which must be followed by the character it escapes.");
			i++;
		}
		i++;
	}
	return i;
}

/* s[start, end) without the blanks around it */
static char *
trimmed(const char *s, int start, int end)
{
	while (start < end && scanner_isspace(s[start]))
		start++;
	/* a blank after a backslash belongs to the name */
	while (end > start && scanner_isspace(s[end - 1]) &&
		   !(end - 2 >= start && s[end - 2] == '\\'))
		end--;
	return pnstrdup(s + start, end - start);
}

/* "schema.table, schema.table, ..." as a list of TablePattern */
static List *
parse_table_list(DefElem *opt, List *patterns)
{
	const char *s = option_value(opt);
	int			i = 0;

	if (s == NULL)
		report_bad_value(opt, "The option needs a list of tables, such as public.orders or sales.*.");
	for (;;)
	{
		int			end = scan_to(opt, s, i, ',');
		char	   *item = trimmed(s, i, end);
		int			dot = scan_to(opt, item, 0, '.');
		TablePattern *p;

		if (item[0] == '\0')
			report_bad_value(opt, "The list has an empty entry: a comma too many, or no table at all.");
		if (item[dot] != '.')
			report_bad_value(opt,
							 psprintf("\"%s\" is not of the form schema.table; write public.%s for a table of schema public, or *.%s for any schema.",
									  item, item, item));
		p = palloc(sizeof(TablePattern));
		p->schema = trimmed(item, 0, dot);
		p->table = trimmed(item, dot + 1, strlen(item));
		if (p->schema[0] == '\0' || p->table[0] == '\0')
			report_bad_value(opt,
							 psprintf("\"%s\" lacks a schema or a table name; use * for any.",
									  item));
		patterns = lappend(patterns, p);
		if (s[end] == '\0')
			break;
		i = end + 1;
	}
	return patterns;
}

/* A scalar option given twice is a mistake: which one was meant? */
static void
check_once(DefElem *opt, bool *seen)
{
	if (*seen)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" of output plugin bson_out is given more than once",
						opt->defname),
				 errhint("Give it once; only include-tables and exclude-tables may be repeated, their lists adding up.")));
	*seen = true;
}

void
bson_stream_options_parse(BsonStreamOptions *opts, List *options)
{
	ListCell   *lc;
	bool		seen_full_document = false;
	bool		seen_before_change = false;
	bool		seen_omit_nulls = false;
	bool		seen_ns_db = false;
	bool		seen_include_schema = false;

	memset(opts, 0, sizeof(*opts));
	opts->change.full_document = true;

	foreach(lc, options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);
		const char *name = opt->defname;

		CHECK_FOR_INTERRUPTS();
		if (strcmp(name, "include-tables") == 0)
			opts->include_tables = parse_table_list(opt, opts->include_tables);
		else if (strcmp(name, "exclude-tables") == 0)
			opts->exclude_tables = parse_table_list(opt, opts->exclude_tables);
		else if (strcmp(name, "full-document") == 0)
		{
			check_once(opt, &seen_full_document);
			opts->change.full_document = parse_bool_option(opt);
		}
		else if (strcmp(name, "full-document-before-change") == 0)
		{
			check_once(opt, &seen_before_change);
			opts->change.before_change = parse_bool_option(opt);
		}
		else if (strcmp(name, "omit-nulls") == 0)
		{
			check_once(opt, &seen_omit_nulls);
			opts->change.omit_nulls = parse_bool_option(opt);
		}
		else if (strcmp(name, "include-schema") == 0)
		{
			check_once(opt, &seen_include_schema);
			opts->include_schema = parse_bool_option(opt);
		}
		else if (strcmp(name, "ns-db") == 0)
		{
			const char *value = option_value(opt);

			check_once(opt, &seen_ns_db);
			if (value == NULL || value[0] == '\0')
				report_bad_value(opt, "The option needs the database name to write in ns.db.");
			opts->ns_db = pstrdup(value);
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized option \"%s\" for output plugin bson_out",
							name),
					 errdetail("The options are " OPTION_NAMES ".")));
	}
}

/*
 * Does name match pattern (* for any run of characters, \ escaping)?
 * Greedy with one point of return, the last star: linear in practice, and
 * names are at most NAMEDATALEN bytes.
 */
static bool
glob_match(const char *pattern, const char *name)
{
	const char *p = pattern;
	const char *n = name;
	const char *star = NULL;
	const char *star_n = NULL;

	while (*n != '\0')
	{
		if (*p == '*')
		{
			star = ++p;
			star_n = n;
			continue;
		}
		if (*p == '\\' && p[1] != '\0' && p[1] == *n)
		{
			p += 2;
			n++;
			continue;
		}
		if (*p != '\\' && *p != '\0' && *p == *n)
		{
			p++;
			n++;
			continue;
		}
		if (star == NULL)
			return false;
		p = star;
		n = ++star_n;
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

static bool
any_match(List *patterns, const char *schema, const char *name)
{
	ListCell   *lc;

	foreach(lc, patterns)
	{
		TablePattern *p = (TablePattern *) lfirst(lc);

		CHECK_FOR_INTERRUPTS();
		if (glob_match(p->schema, schema) && glob_match(p->table, name))
			return true;
	}
	return false;
}

bool
bson_stream_table_selected(const BsonStreamOptions *opts, const char *schema,
						   const char *name)
{
	if (opts->include_tables != NIL &&
		!any_match(opts->include_tables, schema, name))
		return false;
	return !any_match(opts->exclude_tables, schema, name);
}
