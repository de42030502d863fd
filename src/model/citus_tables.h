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
 * shard id at the end of its name, and checked against the name (Citus
 * shortens long names; a user's table may end in digits).  A table named
 * like a shard that pg_dist_shard does not list is no shard here: a table of
 * the user's, or a shard a split replaced whose metadata row has been
 * vacuumed away (pg_dist_shard is not a catalog, so its old rows are not
 * kept for decoding); the callers say so rather than guess.
 *
 * A reference table has a copy on every node: each node's change stream
 * would carry every change.  Its changes are streamed from the coordinator
 * (group 0) only, as Citus's own change data capture does: every write to a
 * reference table goes to the coordinator's copy, and the coordinator is
 * the node a stream of the cluster always follows.
 *
 * Nothing here reads a catalog unless Citus is loaded (a look at one of its
 * settings, once per session): without Citus the model costs what it did.
 * With it, a table is looked up in pg_dist_partition, and one whose name
 * ends in _<digits> in pg_dist_shard, when the plugin first meets it.
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

/*
 * bson_citus_is_sharded as it was when the change being decoded was made:
 * false for a change whose transaction committed before the one that
 * distributed the table (create_distributed_table), whose rows were then
 * the table's own, as they are now for a decoding session that starts
 * after the distribution.  Outside a decoding callback, as it is now.
 */
extern bool bson_citus_sharded_at_change(Oid relid);

/*
 * A shard whose table the catalogs do not show yet: in a decoding callback,
 * a change made by a transaction that began before the table was created on
 * this node (Citus creates a table and its shards on a worker over several
 * connections at once).  The table's name, from the shard's (NULL for
 * anything else, or a name Citus shortened); *here as for
 * bson_citus_shard_table.  The shard's own columns and key are its table's.
 */
extern char *bson_citus_unseen_shard_name(Oid relid, bool *here);

/*
 * A table named like a shard of a Citus table (that table's name, then
 * _<digits>) that pg_dist_shard does not list: that Citus table, else
 * InvalidOid.
 */
extern Oid	bson_citus_lookalike(Oid relid);

/*
 * Is the shard relid placed on this node (pg_dist_placement)?  A shard a
 * move left behind, or a split replaced, waits here for Citus to drop it,
 * its rows already elsewhere.
 */
extern bool bson_citus_placed_here(Oid relid);

#endif							/* CITUS_TABLES_H */
