/*
 * selection.c
 *		The table selection options (see selection.h).
 */
#include "selection.h"

#include <string.h>

#include "common.h"

void
selection_init(Selection *s)
{
	memset(s, 0, sizeof(*s));
	s->partition_root = 1;
}

int
selection_option(Selection *s, int c, const char *arg)
{
	switch (c)
	{
		case SEL_INCLUDE_TABLES:
			if (s->ninclude == MAX_PATTERNS)
				die_usage("too many --include-tables (at most %d; a list may be comma-separated)",
						  MAX_PATTERNS);
			s->include[s->ninclude++] = arg;
			return 1;
		case SEL_EXCLUDE_TABLES:
			if (s->nexclude == MAX_PATTERNS)
				die_usage("too many --exclude-tables (at most %d; a list may be comma-separated)",
						  MAX_PATTERNS);
			s->exclude[s->nexclude++] = arg;
			return 1;
		case SEL_NS_DB:
			if (arg[0] == '\0')
				die_usage("--ns-db needs a database name");
			s->ns_db = arg;
			return 1;
		case SEL_INCLUDE_SCHEMA:
			s->include_schema = 1;
			return 1;
		case SEL_NO_PARTITION_ROOT:
			s->partition_root = 0;
			return 1;
		default:
			return 0;
	}
}

int
selection_given(const Selection *s)
{
	return s->ninclude || s->nexclude || s->ns_db || s->include_schema || !s->partition_root;
}
