/*
 * stream_options.h
 *		The output plugin's options (pg_recvlogical -o name=value, or the
 *		options array of pg_logical_slot_get_binary_changes) and the table
 *		filters they define.
 */
#ifndef STREAM_OPTIONS_H
#define STREAM_OPTIONS_H

#include "bson_compat.h"

#include "nodes/pg_list.h"

#include "change_to_bson.h"

/*
 * The prefix of the logical messages that pg_bsonstream --citus writes on
 * every node (pg_logical_emit_message(true, ...)): with the option
 * heartbeats, each becomes a "heartbeat" event at its transaction's commit,
 * so that an idle node's stream still says how far its commits have gone.
 */
#define BSON_HEARTBEAT_PREFIX "bson_out.heartbeat"

typedef struct BsonStreamOptions
{
	List	   *include_tables; /* of TablePattern; NIL: every table */
	List	   *exclude_tables; /* of TablePattern */
	char	   *ns_db;			/* ns.db; NULL: the database's name */
	bool		include_schema; /* coll is always schema.table */
	bool		partition_root; /* a partition's changes are its root's */
	BsonUnmappable unmappable;	/* unmappable-values */
	Size		max_event_size; /* larger events are split into fragments */
	bool		commit_markers; /* a marker after each transaction's events */
	bool		heartbeats;		/* a "heartbeat" event for each transactional
								 * logical message of prefix
								 * BSON_HEARTBEAT_PREFIX */
	bool		schema_events;	/* "modify" and "drop" events at the commit of
								 * a DDL that changes a table's documents */
	bool		skip_origins;	/* origin=none: leave out changes that carry a
								 * replication origin (applied by logical
								 * replication, or copied by Citus) */
	BsonChangeOptions change;	/* full-document, full-document-before-change,
								 * omit-nulls */
} BsonStreamOptions;

/*
 * Read the options (a List of DefElem) into opts, allocated in the current
 * memory context; an unknown option or a bad value is an error (22023).
 */
extern void bson_stream_options_parse(BsonStreamOptions *opts, List *options);

#endif							/* STREAM_OPTIONS_H */
