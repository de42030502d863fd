/*
 * table_model.h
 *		The document model: which collection a table's rows go to, whether
 *		the table filters select it, and how a row becomes a document (its
 *		_id and columns).  The output plugin, bson_document() and
 *		bson_collections() all ask this file, so that the change events, the
 *		first copy and the export agree on every document.
 *
 * A row's document is its _id, then its columns in order as row_to_bson
 * maps them (change_to_bson.c writes it).  _id is the replica identity: the
 * index REPLICA IDENTITY USING INDEX names, else the primary key, its key
 * columns only (never INCLUDE columns) in the index's order, one column as
 * its value and several as an embedded document; with REPLICA IDENTITY FULL
 * and no primary key the whole row; with no identity no _id, left to
 * MongoDB.  A column named _id is left out where the document starts with
 * the key and it is not part of it.
 *
 * A partition's rows belong, by default, to its root partitioned table: one
 * collection under the root's name, the root's columns and key, as
 * pgoutput's publish_via_partition_root; without that, each partition is a
 * table of its own.  A Citus shard's rows belong to its distributed or
 * reference table, on every node, in the same way.
 */
#ifndef TABLE_MODEL_H
#define TABLE_MODEL_H

#include "bson_compat.h"

#include "utils/rel.h"

#include "change_to_bson.h"

/*
 * The table whose collection relid's rows go to: a Citus shard's table
 * (citus_tables.h), then the root of a partition, or relid itself.  here,
 * if not NULL, is set false for a shard whose changes another node's stream
 * carries.
 */
extern Oid	bson_collection_table(Oid relid, bool partition_root, bool *here);

/*
 * Do the filters (Lists of TablePattern, NIL include: every table) select
 * the rows of relid?  With partition_root, by the name of its collection's
 * table; else by its own name or that of any partitioned table above it.
 * A table in a system schema (pg_*, information_schema) never is.
 */
extern bool bson_table_selected(List *include, List *exclude, Oid relid,
								bool partition_root);

/* The same for a table known by its names (one the catalogs do not show) */
extern bool bson_names_selected(List *include, List *exclude, const char *schema,
								const char *name);
/* relid's schema-qualified name, quoted as SQL needs, for messages */
extern char *bson_table_name(Oid relid);

/* ns.coll of a collection's table: schema.table, or table in public */
extern char *bson_collection_name(Oid relid, bool include_schema);
/* The same for a table known by its names */
extern char *bson_collection_name_in(const char *schema, const char *name,
									 bool include_schema);

/*
 * Work out the model of rel's rows into t (allocations in mcxt): the
 * column mapping, the key and the _id column; ns is left to the caller.
 * Returns true where a column named _id is left out of the documents, for
 * the caller to say so once.
 */
extern bool bson_table_model_build(BsonChangeTable *t, Relation rel,
								   MemoryContext mcxt);

/*
 * For each column of root (a partitioned table above the partition), the
 * 0-based column of partition with the same name, -1 for dropped columns.
 */
extern int *bson_partition_column_map(TupleDesc partition, TupleDesc root,
									  MemoryContext mcxt);

/*
 * A partition's row as its root's, by that map, into out->values and
 * out->nulls (root_natts entries, the caller's); out->missing is allocated
 * where a value is missing.
 */
extern void bson_row_to_root(BsonChangeRow *out, const BsonChangeRow *in,
							 const int *map, int root_natts);

/*
 * The shape of t's documents, as text: what decides which fields they have
 * and how each column's values are written (the key's columns, then every
 * column with its type, typmod included, a composite type's attributes
 * with it), in JSON:
 *	{"_id":["id"],"columns":[["id","integer"],["a","numeric(10,2)"]]}
 * Two models make the same documents from the same rows exactly when their
 * shapes are equal: a DDL that changes them (a column added, dropped,
 * renamed or retyped, another key) changes the shape, and one that does
 * not (an index, a grant, a comment) leaves it.  The output plugin's
 * schema events and the collection's metadata both carry it, for a
 * consumer to compare.  Palloc'ed in the current context.
 */
extern char *bson_table_shape(const BsonChangeTable *t);

/*
 * Warn once that a column named _id is left out of table's documents
 * (name: the table's qualified name).
 */
extern void bson_warn_id_column_left_out(const char *name);

#endif							/* TABLE_MODEL_H */
