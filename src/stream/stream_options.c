/*
 * stream_options.c
 *		The output plugin's options and table filters.
 *
 * Options are read when a decoding session starts: a mistake then stops the
 * session with a clear error before any change is decoded, rather than
 * showing up as missing events later.
 *
 * The table filters' grammar is table_patterns.c's, shared with
 * bson_collections(); what they select is table_model.c's.
 */
#include "stream_options.h"

#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "citus_tables.h"
#include "table_patterns.h"

#define OPTION_NAMES "include-tables, exclude-tables, full-document, " \
	"full-document-before-change, omit-nulls, ns-db, include-schema, " \
	"partition-root, unmappable-values, max-event-size, commit-markers, schema-events, heartbeats and origin"

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
 * max-event-size: bytes, with PostgreSQL's units (16MB, 1024-based).  The
 * least leaves room for an event's head and one small field per fragment;
 * the most is BSON's: a length is an int32.
 */
#define MIN_EVENT_SIZE	1024

static Size
parse_size_option(DefElem *opt)
{
	const char *value = option_value(opt);
	int			result;

	if (value == NULL)
		report_bad_value(opt, "The option needs a size, such as 16MB.");
	if (!parse_int(value, &result, GUC_UNIT_BYTE, NULL) || result < MIN_EVENT_SIZE)
		report_bad_value(opt,
						 psprintf("\"%s\" is not a size from %d bytes to 2147483647 bytes (units B, kB, MB and GB are accepted).",
								  value, MIN_EVENT_SIZE));
	return (Size) result;
}

/* "schema.table, schema.table, ..." added to patterns */
static List *
parse_table_list(DefElem *opt, List *patterns)
{
	const char *s = option_value(opt);

	if (s == NULL)
		report_bad_value(opt, "The option needs a list of tables, such as public.orders or sales.*.");
	return bson_table_patterns_parse(patterns, s,
									 psprintf("invalid value for option \"%s\" of output plugin bson_out",
											  opt->defname));
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
	bool		seen_partition_root = false;
	bool		seen_unmappable = false;
	bool		seen_max_event_size = false;
	bool		seen_commit_markers = false;
	bool		seen_heartbeats = false;
	bool		seen_schema_events = false;
	bool		seen_origin = false;

	memset(opts, 0, sizeof(*opts));
	opts->change.full_document = true;
	opts->partition_root = true;
	/* a stream must not stop for good at one value: see BsonUnmappable */
	opts->unmappable = BSON_UNMAPPABLE_FALLBACK;
	/* MongoDB's limit for a document, and so for an event it stores or sends */
	opts->max_event_size = 16 * 1024 * 1024;

	/*
	 * Citus marks the rows its shard moves, splits and distributions copy
	 * with a replication origin: streaming them would send each moved row
	 * again as an insert.  Without Citus, changes that logical replication
	 * applied here are streamed as before.
	 */
	opts->skip_origins = bson_citus_loaded();

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
		else if (strcmp(name, "partition-root") == 0)
		{
			check_once(opt, &seen_partition_root);
			opts->partition_root = parse_bool_option(opt);
		}
		else if (strcmp(name, "unmappable-values") == 0)
		{
			const char *value = option_value(opt);

			check_once(opt, &seen_unmappable);
			if (value != NULL && strcmp(value, "error") == 0)
				opts->unmappable = BSON_UNMAPPABLE_ERROR;
			else if (value != NULL && strcmp(value, "fallback") == 0)
				opts->unmappable = BSON_UNMAPPABLE_FALLBACK;
			else
				report_bad_value(opt, value == NULL
								 ? "The option needs a value: error or fallback."
								 : psprintf("\"%s\" is not a policy for values without a BSON mapping: use error or fallback.",
											value));
		}
		else if (strcmp(name, "max-event-size") == 0)
		{
			check_once(opt, &seen_max_event_size);
			opts->max_event_size = parse_size_option(opt);
		}
		else if (strcmp(name, "commit-markers") == 0)
		{
			check_once(opt, &seen_commit_markers);
			opts->commit_markers = parse_bool_option(opt);
		}
		else if (strcmp(name, "heartbeats") == 0)
		{
			check_once(opt, &seen_heartbeats);
			opts->heartbeats = parse_bool_option(opt);
		}
		else if (strcmp(name, "schema-events") == 0)
		{
			check_once(opt, &seen_schema_events);
			opts->schema_events = parse_bool_option(opt);
		}
		else if (strcmp(name, "origin") == 0)
		{
			const char *value = option_value(opt);

			check_once(opt, &seen_origin);
			if (value != NULL && strcmp(value, "none") == 0)
				opts->skip_origins = true;
			else if (value != NULL && strcmp(value, "any") == 0)
				opts->skip_origins = false;
			else
				report_bad_value(opt, value == NULL
								 ? "The option needs a value: none or any."
								 : psprintf("\"%s\" is not an origin filter: use none (changes made on this server only) or any.",
											value));
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
