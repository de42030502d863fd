/*
 * stream_tables.h
 *		What the output plugin knows about each table it has seen: selected
 *		or not, its ns, its replica identity and its column mapping (the
 *		document model of table_model.h), kept until the table's definition
 *		changes.
 */
#ifndef STREAM_TABLES_H
#define STREAM_TABLES_H

#include "bson_compat.h"

#include "storage/sinval.h"
#include "utils/rel.h"

#include "change_to_bson.h"
#include "stream_options.h"

typedef struct BsonStreamTable
{
	Oid			relid;			/* hash key */
	bool		valid;			/* false once the definition may have changed */
	bool		selected;		/* by the table filters */
	bool		warned_no_identity; /* warnings are given once per session */
	bool		warned_id_column;
	bool		warned_whole_row;	/* its _id is the whole row */
	bool		has_composites; /* its mapping reads named row types */
	Oid			root;			/* a partition streamed as its root table, or
								 * a Citus shard: the table whose collection
								 * it is, else InvalidOid */
	Oid			shard_of;		/* a Citus shard: its table (the root, unless
								 * that table is a partition), else InvalidOid */
	int		   *column_map;		/* with root: each root column's column of
								 * this table, -1 for none */
	int			natts;			/* this table's columns when worked out */
	Oid		   *ancestors;		/* a partition: the tables above it, whose
								 * names and definitions decide its entry (a
								 * shard: its table too) */
	int			nancestors;
	bool		key_unlogged;	/* with root: this partition's own replica
								 * identity does not log the root's key, so
								 * updates and deletes cannot name their
								 * document */
	bool		warned_key_unlogged;
	bool		warned_oversized;	/* an event field over max-event-size */
	bool		warned_lookalike;	/* named as a shard Citus does not list */
	bool		embedding;		/* embedded, or rows are embedded in it: its
								 * entry depends on other tables too */
	bool		citus_table;	/* a Citus table's own relation (on a node, a
								 * shell), selected by the filters but not
								 * selected: it holds none of the rows, and
								 * only its truncate says something (see
								 * the plugin's truncate callback) */
	/*
	 * What the consumer knows of the table's documents: its collection and
	 * shape (bson_table_shape) when the entry was made, or as the last
	 * schema event said; in the cache's context, kept across rebuilds.
	 */
	char	   *told_shape;		/* NULL: nothing told */
	char	   *told_ns;		/* the encoded "ns" element */
	Size		told_nslen;
	uint64		made_in;		/* the transaction (bson_stream_tables_begin's
								 * count) in which the entry was made */
	MemoryContext mcxt;			/* what change and name are made in */
	char	   *name;			/* schema.table, for messages */
	BsonChangeTable change;
} BsonStreamTable;

/*
 * Start a session's table cache, dropping what an earlier session left (one
 * that ended in an error has no chance to clean up).
 */
extern void bson_stream_tables_start(void);

/* End the session's table cache */
extern void bson_stream_tables_end(void);

/*
 * The table of rel, worked out now if it was not or if it changed since;
 * needs catalog access (a decoding callback has it).  db is ns.db.
 */
extern BsonStreamTable *bson_stream_table(Relation rel,
										  const BsonStreamOptions *opts,
										  const char *db);

/*
 * A transaction's decoding starts: counted, for schema changes (with them,
 * the session's first works out every selected table)
 */
extern void bson_stream_tables_begin(const BsonStreamOptions *opts, const char *db);

/*
 * A change of a collection's documents that a transaction's DDL made, for
 * a schema event: the table's documents have another shape or collection
 * name (table is its entry, worked out as the transaction left it), or the
 * table is gone or no longer selected (table is NULL; ns, relid and name
 * are what the stream knew of it).
 */
typedef struct BsonSchemaChange
{
	Oid			relid;
	BsonStreamTable *table;		/* NULL: dropped */
	const char *ns;				/* the encoded "ns" element */
	Size		nslen;
	const char *name;			/* schema.table */
	const char *shape;			/* NULL: dropped */
} BsonSchemaChange;

/*
 * The schema changes of a transaction whose invalidation messages are msgs
 * (the relcache ones name the tables its DDL touched), worked out at its
 * commit, where the catalogs are as it left them: a List of
 * BsonSchemaChange in the current memory context.  A table the stream has
 * not seen in this session is always one (the consumer compares shapes),
 * one it has seen only when its shape or collection name differs from
 * what the consumer knows.  With schema events every selected table is
 * known from the session's first transaction on.
 */
extern List *bson_stream_tables_schema_changes(const SharedInvalidationMessage *msgs,
											   int nmsgs,
											   const BsonStreamOptions *opts,
											   const char *db);

#endif							/* STREAM_TABLES_H */
