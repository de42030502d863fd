/*
 * collection_rivals.h
 *		Two tables whose rows would go to one collection.
 *
 * A collection is named after its table (bson_collection_name): the table
 * alone in public, else schema.table.  A dot may be part of a name, so two
 * tables can take the same collection name: public."a.b" and a.b, or with
 * include-schema schema "a.b" table "c" and schema "a" table "b.c".  Their
 * documents would share one collection, their _id values collide and one
 * table's indexes win.  That is an error wherever collections are named:
 * in bson_collections() (so in the export and in the first copy) and in the
 * output plugin.  A partition streamed as its root, or a Citus shard, is
 * not a rival of its table: its rows are that table's.
 */
#ifndef COLLECTION_RIVALS_H
#define COLLECTION_RIVALS_H

#include "bson_compat.h"

#include "nodes/pg_list.h"
#include "utils/snapshot.h"

/*
 * Raise an error (42710) if a relation other than table (a collection's
 * table, as bson_collection_table gives it), which the same filters select
 * and which holds a collection's rows, takes the collection name that table
 * takes.  The catalogs are read with snapshot, NULL for the catalog
 * snapshot (the historic one while decoding), so that only relations that
 * exist together with table count.  Costs a few index lookups, one per dot
 * in the name: call it once per table, not per row.
 */
extern void bson_check_collection_rivals(Oid table, List *include, List *exclude,
										 bool include_schema, bool partition_root,
										 Snapshot snapshot);

#endif							/* COLLECTION_RIVALS_H */
