/*
 * table_patterns.c
 *		Table filters: "schema.table, schema.table, ..." with * and \.
 *
 * Read once when a decoding session starts or bson_collections() is called,
 * so that a mistake stops it with a clear error before anything is
 * streamed or copied, rather than showing up later as missing tables.
 */
#include "table_patterns.h"

#include "miscadmin.h"
#include "parser/scansup.h"

pg_noreturn static void
report_bad_list(const char *errmsg_text, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg_internal("%s", errmsg_text),
			 errdetail("%s", detail)));
}

/*
 * Where the next unescaped stop character (or the end) is in s, from i on.
 * A backslash at the very end escapes nothing and is an error.
 */
static int
scan_to(const char *errmsg_text, const char *s, int i, char stop)
{
	while (s[i] != '\0' && s[i] != stop)
	{
		CHECK_FOR_INTERRUPTS();
		if (s[i] == '\\')
		{
			if (s[i + 1] == '\0')
				report_bad_list(errmsg_text, "The list ends with a backslash, which must be followed by the character it escapes.");
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
	/* a blank after an odd run of backslashes is escaped: it belongs to the name */
	while (end > start && scanner_isspace(s[end - 1]))
	{
		int			backslashes = 0;

		while (end - 2 - backslashes >= start && s[end - 2 - backslashes] == '\\')
			backslashes++;
		if (backslashes % 2 == 1)
			break;
		end--;
	}
	return pnstrdup(s + start, end - start);
}

List *
bson_table_patterns_parse(List *patterns, const char *list,
						  const char *errmsg_text)
{
	int			i = 0;

	for (;;)
	{
		int			end = scan_to(errmsg_text, list, i, ',');
		char	   *item = trimmed(list, i, end);
		int			dot = scan_to(errmsg_text, item, 0, '.');
		TablePattern *p;

		if (item[0] == '\0')
			report_bad_list(errmsg_text, "The list has an empty entry: a comma too many, or no table at all.");
		if (item[dot] != '.')
			report_bad_list(errmsg_text,
							psprintf("\"%s\" is not of the form schema.table; write public.%s for a table of schema public, or *.%s for any schema.",
									 item, item, item));
		p = palloc0(sizeof(TablePattern));
		p->text = item;
		p->schema = trimmed(item, 0, dot);
		p->table = trimmed(item, dot + 1, strlen(item));
		if (p->schema[0] == '\0' || p->table[0] == '\0')
			report_bad_list(errmsg_text,
							psprintf("\"%s\" lacks a schema or a table name; use * for any.",
									 item));
		patterns = lappend(patterns, p);
		if (list[end] == '\0')
			break;
		i = end + 1;
	}
	return patterns;
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

bool
bson_table_patterns_match(List *patterns, const char *schema, const char *name)
{
	ListCell   *lc;
	bool		matched = false;

	foreach(lc, patterns)
	{
		TablePattern *p = (TablePattern *) lfirst(lc);

		CHECK_FOR_INTERRUPTS();
		if (glob_match(p->schema, schema) && glob_match(p->table, name))
		{
			p->used = true;
			matched = true;
		}
	}
	return matched;
}
