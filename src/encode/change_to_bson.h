/*
 * change_to_bson.h
 *		Row changes -> BSON change events, shaped as MongoDB's change streams
 *		write them.
 *
 * The output plugin (src/stream/) decides which events a change makes and
 * hands them here with the deformed rows; this file only writes documents.
 */
#ifndef CHANGE_TO_BSON_H
#define CHANGE_TO_BSON_H

#include "bson_writer.h"
#include "record_to_bson.h"

#include "access/tupdesc.h"
#include "access/xlogdefs.h"
#include "datatype/timestamp.h"

typedef enum BsonChangeOp
{
	BSON_CHANGE_INSERT,
	BSON_CHANGE_UPDATE,
	BSON_CHANGE_REPLACE,
	BSON_CHANGE_DELETE,
	BSON_CHANGE_TRUNCATE,
	BSON_CHANGE_MODIFY,			/* schema events (bson_schema_event) */
	BSON_CHANGE_DROP,
	BSON_CHANGE_HEARTBEAT		/* bson_heartbeat_event */
} BsonChangeOp;

/* Where an event is in the stream: its transaction, and its place in it */
typedef struct BsonChangeTxn
{
	XLogRecPtr	commit_lsn;		/* the commit record's LSN */
	TimestampTz commit_time;
	TransactionId xid;
	uint64		position;		/* 1 for the transaction's first event */
} BsonChangeTxn;

/*
 * Rows embedded in their parent's documents (src/model/embedding.h), as
 * their events say where they go.  Columns are the event's table's,
 * 0-based.
 */
typedef struct BsonEmbedField
{
	const char *name;
	bool		array;			/* else one sub-document */
} BsonEmbedField;

/* One level of the path from the top document down to a row's element */
typedef struct BsonEmbedLevel
{
	const char *field;
	bool		array;
	int			nkey;			/* an array's element key: its columns */
	const int  *key_columns;
	const char *const *key_names;
} BsonEmbedLevel;

typedef struct BsonEmbedPath
{
	const char *ns;				/* the top collection's encoded "ns" element */
	Size		nslen;
	int			ntop;			/* the top document's _id: its key columns */
	const int  *top_columns;
	const char *const *top_names;
	int			nlevels;		/* the top's field first, the row's own last */
	const BsonEmbedLevel *levels;
	const bool *included;		/* by column: in the element */
	bool		own_collection; /* the table's own collection is written too */
	Oid			top;			/* the top document's table */
} BsonEmbedPath;

/* What the events of one table share, worked out once per row type */
typedef struct BsonChangeTable
{
	BsonRecordCache *columns;	/* the row type, mapped as row_to_bson maps it */
	TupleDesc	tupdesc;		/* names, types and dropped columns */
	char	   *ns;				/* the encoded "ns" element */
	Size		nslen;
	int			nkeys;			/* documentKey's columns; 0: no replica
								 * identity, so no documentKey */
	int		   *keys;			/* their 0-based numbers, in the key's order */
	bool		id_whole_row;	/* the key is every column (REPLICA IDENTITY
								 * FULL without a primary key): equal rows
								 * have one _id */
	int			id_column;		/* a column named "_id", or -1: documents
								 * that start with the key leave it out */
	bool		old_row_whole;	/* REPLICA IDENTITY FULL: old rows are whole */
	BsonUnmappable unmappable;	/* values without a BSON mapping */
	const char *policy_name;	/* the setting or option that chose it */
	const char *name;			/* schema.table, for messages */
	/* embedded rows: where this table's go, and the fields of its own */
	const BsonEmbedPath *embed; /* NULL: the rows are documents of their own */
	int			nembedded;		/* the embedded fields of its documents (or
								 * elements), in order */
	const BsonEmbedField *embedded;
	const char *embedded_shape; /* their JSON (bson_embedded_shape), NULL
								 * if none; part of bson_table_shape */
} BsonChangeTable;

/*
 * A row of a change, deformed.  missing[i]: a TOASTed value that the update
 * did not change and that the WAL therefore does not carry; missing is NULL
 * when no value is missing.
 */
typedef struct BsonChangeRow
{
	Datum	   *values;
	bool	   *nulls;
	bool	   *missing;
} BsonChangeRow;

/* The options that shape events (the plugin's others select tables) */
typedef struct BsonChangeOptions
{
	bool		full_document;	/* updates carry fullDocument */
	bool		before_change;	/* fullDocumentBeforeChange, where the old row
								 * is whole */
	bool		omit_nulls;		/* NULL columns left out of documents */
} BsonChangeOptions;

/*
 * The "_id" element of a row, encoded once: documentKey's content and the
 * first element of fullDocument.
 */
typedef struct BsonChangeKey
{
	char	   *bytes;
	Size		len;
} BsonChangeKey;

/* One event */
typedef struct BsonChangeEvent
{
	BsonChangeOp op;
	const BsonChangeTable *table;
	const BsonChangeKey *key;	/* NULL: no documentKey */
	const BsonChangeRow *row;	/* insert and update: the new row */
	const BsonChangeRow *old;	/* update and delete: the old row when it is
								 * whole, else NULL */
	const BsonChangeRow *old_identity;	/* the old row as the WAL has it
										 * (its identity's columns, or whole);
										 * NULL if it has none */
	bool		after_key_change;	/* an insert made of an update that
									 * changed the key */
	const char *const *partitions;	/* truncate: the partitions truncated
									 * when not all of the collection was */
	int			npartitions;
	const char *partition_filter;	/* with partitions: their documents as a
									 * MongoDB filter (a BSON document), or
									 * NULL where none expresses them */
	Size		partition_filter_len;
} BsonChangeEvent;

/* Is column (0-based) one of the key's? */
static inline bool
bson_change_is_key_column(const BsonChangeTable *table, int column)
{
	for (int i = 0; i < table->nkeys; i++)
		if (table->keys[i] == column)
			return true;
	return false;
}

/* The "ns" element {db, coll} of a table, encoded into table->ns in mcxt */
extern void bson_change_table_ns(BsonChangeTable *table, const char *db,
								 const char *coll, MemoryContext mcxt);

/* The "_id" element of row (none of whose key columns is missing) */
extern void bson_change_key(BsonChangeKey *key, const BsonChangeTable *table,
							const BsonChangeRow *row);

static inline bool
bson_change_keys_equal(const BsonChangeKey *a, const BsonChangeKey *b)
{
	return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

/*
 * A row (none of whose values is missing) as its document: the key as _id,
 * then the columns; the same bytes as the row's fullDocument in an event.
 */
extern bytea *bson_row_document(const BsonChangeTable *table,
								const BsonChangeRow *row, bool omit_nulls);

/*
 * The same document left open, for more elements (a parent's embedded
 * rows): w is initialised; returns the document's start, for bson_close.
 */
extern Size bson_row_document_open(BsonWriter *w, const BsonChangeTable *table,
								   const BsonChangeRow *row, bool omit_nulls);

/*
 * The columns of row that included (by 0-based column) names, in column
 * order, into w's open document: an embedded row's element, which has no
 * _id.
 */
extern void bson_row_append_columns(BsonWriter *w, const BsonChangeTable *table,
									const BsonChangeRow *row, const bool *included,
									bool omit_nulls);

/* The "_id" element of an event: {_data: its resume token} */
extern void bson_change_append_id(BsonWriter *w, uint64 commit_lsn,
								  uint64 position);

/*
 * A schema event: a DDL changed the documents of the table relid (named
 * name), whose collection is ns (an encoded "ns" element): "modify", with
 * the shape of its documents now (bson_table_shape; the collection's name
 * may be new), or "drop" (shape NULL): the table is gone, or no longer
 * selected.  Written as MongoDB writes its own DDL events (showExpandedEvents),
 * the table in operationDescription: {relid, table, shape}.
 */
/*
 * A heartbeat: {_id, operationType: "heartbeat", clusterTime, wallTime,
 * txnNumber}, the commit of a transaction that wrote a heartbeat message
 * (stream_options.h)
 */
extern bytea *bson_heartbeat_event(const BsonChangeTxn *txn);
extern bytea *bson_schema_event(BsonChangeOp op, const char *ns, Size nslen,
								Oid relid, const char *name, const char *shape,
								const BsonChangeTxn *txn);

/* The event as one BSON document (a bytea, as the writer makes them) */
extern bytea *bson_change_event(const BsonChangeEvent *ev,
								const BsonChangeTxn *txn,
								const BsonChangeOptions *opts);

#endif							/* CHANGE_TO_BSON_H */
