/*
 * citus_tables.h
 *		Citus's tables as the document model sees them: the rows of a
 *		distributed (or reference) table live in shard tables on the nodes,
 *		and belong to the table's collection, not to one per shard.
 *
 * A node of a Citus cluster holds shard tables named after their table
 * (dist_102008 for dist, in dist's schema) and, with Citus's metadata on
 * every node (the default since Citus 11), the table itself as an empty
 * shell.  Which table a shard belongs to is read from pg_dist_shard, by the
 * shard id at the end of its name; the name alone is not enough (Citus
 * shortens long names, and a user's table may end in digits).
 *
 * A reference table has a copy on every node: each node's change stream
 * would carry every change.  Its changes are streamed from the coordinator
 * (group 0) only, as Citus's own change data capture does: every write to a
 * reference table goes to the coordinator's copy, and the coordinator is
 * the node a stream of the cluster always follows.
 *
 * Nothing here reads a catalog unless Citus is loaded and the table's name
 * ends in _<digits>: without Citus the model costs what it did.
 */
#ifndef CITUS_TABLES_H
#define CITUS_TABLES_H

#include "bson_compat.h"

/* bson_out.citus_rows: where bson_collections() reads a Citus table's rows */
typedef enum BsonCitusRows
{
	BSON_CITUS_ROWS_TABLES,		/* through the table (every node's rows) */
	BSON_CITUS_ROWS_NODE		/* this node's shards, as its stream has them */
} BsonCitusRows;

extern int	bson_citus_rows;

/* Is Citus loaded in this server (its settings are defined)?  No catalog access. */
extern bool bson_citus_loaded(void);

/*
 * The table whose shard relid is, or InvalidOid when relid is not a shard
 * (or Citus is not there).  *here is set false for a shard whose changes
 * are streamed from another node (a reference table's copy on a worker).
 */
extern Oid	bson_citus_shard_table(Oid relid, bool *here);

/* Is relid a table whose rows Citus keeps in shards (on this node, a shell)? */
extern bool bson_citus_is_sharded(Oid relid);

#endif							/* CITUS_TABLES_H */
