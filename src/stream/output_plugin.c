/*
 * output_plugin.c
 *		bson_out as a logical decoding output plugin: one BSON change event
 *		per row change, shaped as MongoDB's change streams write them.
 *
 *		SELECT pg_create_logical_replication_slot('to_mongo', 'bson_out');
 *		SELECT data FROM pg_logical_slot_get_binary_changes('to_mongo', NULL, NULL);
 *
 * The callbacks here decide which events a change makes; stream_tables.c
 * knows the tables, change_to_bson.c writes the documents.
 *
 * PostgreSQL hands a transaction to the plugin once it has committed, its
 * changes in order, rolled-back subtransactions already left out; large
 * transactions spill to disk inside the reorder buffer, not here.  The
 * plugin keeps nothing per transaction but a count of its events: each
 * change is decoded in a memory context that is reset after it, so memory
 * stays bounded by the largest row, whatever the size of the transaction.
 */
#include "bson_compat.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/output_plugin.h"
#include "replication/reorderbuffer.h"
#include "replication/slot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"

#include "change_split.h"
#include "citus_tables.h"
#include "change_to_bson.h"
#include "commit_marker.h"
#include "partition_filter.h"
#include "stream_options.h"
#include "stream_tables.h"
#include "table_model.h"

typedef struct StreamState
{
	BsonStreamOptions options;
	MemoryContext cxt;			/* the session's: the decoding context */
	MemoryContext change_cxt;	/* reset after each change */
	char	   *db;				/* ns.db, found at the first change */
	uint64		position;		/* messages of the current transaction so far
								 * (a split event's fragments each) */
	/* a transaction's truncates of Citus tables (see CitusTruncate) */
	MemoryContext txn_cxt;		/* reset at each transaction's start */
	List	   *citus_truncates;	/* CitusTruncate, in txn_cxt */
	bool		citus_2pc;		/* the transaction prepared others on nodes */
	Oid			dist_transaction;	/* pg_dist_transaction, once looked up */
} StreamState;

static const char *stream_db(StreamState *st);
static void bson_startup_cb(LogicalDecodingContext *ctx,
							OutputPluginOptions *opt, bool is_init);
static void bson_shutdown_cb(LogicalDecodingContext *ctx);
static void bson_begin_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn);
static void bson_commit_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
						   XLogRecPtr commit_lsn);
static void bson_change_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
						   Relation relation, ReorderBufferChange *change);
static void bson_truncate_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
							 int nrelations, Relation relations[],
							 ReorderBufferChange *change);
static bool bson_filter_by_origin_cb(LogicalDecodingContext *ctx,
									 RepOriginId origin_id);
static void bson_message_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
							XLogRecPtr message_lsn, bool transactional,
							const char *prefix, Size message_size,
							const char *message);

void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	AssertVariableIsOfType(&_PG_output_plugin_init, LogicalOutputPluginInit);

	cb->startup_cb = bson_startup_cb;
	cb->begin_cb = bson_begin_cb;
	cb->change_cb = bson_change_cb;
	cb->truncate_cb = bson_truncate_cb;
	cb->commit_cb = bson_commit_cb;
	cb->shutdown_cb = bson_shutdown_cb;
	cb->filter_by_origin_cb = bson_filter_by_origin_cb;
	cb->message_cb = bson_message_cb;
}

/*
 * With origin=none (the default where Citus runs), changes replayed here
 * under a replication origin are not decoded at all: those of a
 * subscription, and the rows Citus copies when it moves, splits or
 * distributes a shard, which the node they came from has streamed already.
 */
static bool
bson_filter_by_origin_cb(LogicalDecodingContext *ctx, RepOriginId origin_id)
{
	StreamState *st = (StreamState *) ctx->output_plugin_private;

	return st->options.skip_origins && origin_id != InvalidRepOriginId;
}

static void
bson_startup_cb(LogicalDecodingContext *ctx, OutputPluginOptions *opt,
				bool is_init)
{
	MemoryContext old = MemoryContextSwitchTo(ctx->context);
	StreamState *st = palloc0(sizeof(StreamState));

	(void) is_init;
	st->cxt = ctx->context;
	st->change_cxt = AllocSetContextCreate(ctx->context, "bson_out change",
										   ALLOCSET_DEFAULT_SIZES);
	st->txn_cxt = AllocSetContextCreate(ctx->context, "bson_out transaction",
										ALLOCSET_SMALL_SIZES);
	bson_stream_options_parse(&st->options, ctx->output_plugin_options);
	MemoryContextSwitchTo(old);

	/*
	 * PostgreSQL calls a filter set here for every record, reading the
	 * callback from the context each time: without origin=none it is taken
	 * out, before any record is decoded, so that it costs nothing.
	 */
	if (!st->options.skip_origins)
		ctx->callbacks.filter_by_origin_cb = NULL;

	/* the origin filter leaves out Citus's copies only where Citus marks them */
	if (st->options.skip_origins && bson_citus_loaded())
	{
		const char *cdc = GetConfigOption("citus.enable_change_data_capture", true, false);

		if (cdc != NULL && strcmp(cdc, "off") == 0)
			ereport(WARNING,
					(errmsg("citus.enable_change_data_capture is off on this node"),
					 errdetail("Citus then copies the rows of a shard it moves, splits or distributes without a replication origin, and this stream sends them again as inserts."),
					 errhint("Set citus.enable_change_data_capture = on on every node of the cluster, and reload the configuration.")));
	}

	opt->output_type = OUTPUT_PLUGIN_BINARY_OUTPUT;
	opt->receive_rewrites = false;
	ctx->output_plugin_private = st;
	bson_stream_tables_start();
}

static void
bson_shutdown_cb(LogicalDecodingContext *ctx)
{
	(void) ctx;
	bson_stream_tables_end();
}

static void
bson_begin_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	StreamState *st = (StreamState *) ctx->output_plugin_private;

	(void) txn;
	st->position = 0;
	bson_stream_tables_begin(&st->options, st->options.schema_events ? stream_db(st) : NULL);
	MemoryContextReset(st->txn_cxt);
	st->citus_truncates = NIL;
	st->citus_2pc = false;
}

/*
 * Events are written per change; a commit has none of its own.  With
 * commit-markers, a transaction that wrote messages ends with a marker
 * (commit_marker.h), written at the end of its commit record: a client that
 * confirms that position once the transaction is durable is not sent it
 * again.
 */
static void emit_citus_truncates(LogicalDecodingContext *ctx, StreamState *st,
								 ReorderBufferTXN *txn, bool last_write);
static void emit_schema_events(LogicalDecodingContext *ctx, StreamState *st,
							   ReorderBufferTXN *txn);
static void write_message(LogicalDecodingContext *ctx, const char *bytes, Size len,
						  bool last_write);

static void
bson_commit_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
			   XLogRecPtr commit_lsn)
{
	StreamState *st = (StreamState *) ctx->output_plugin_private;
	char		marker[COMMIT_MARKER_LEN];

	(void) commit_lsn;
	if (st->citus_2pc)
		emit_citus_truncates(ctx, st, txn, !st->options.commit_markers);
	if (st->options.schema_events && rbtxn_has_catalog_changes(txn) &&
		txn->ninvalidations > 0)
		emit_schema_events(ctx, st, txn);
	if (!st->options.commit_markers || st->position == 0)
		return;
	commit_marker_format(marker, st->position);
	OutputPluginPrepareWrite(ctx, true);
	appendBinaryStringInfo(ctx->out, marker, COMMIT_MARKER_LEN);
	OutputPluginWrite(ctx, true);
}

/*
 * With schema-events: a transaction with catalog changes ends with a schema
 * event for each table whose documents its DDL changed (stream_tables.h),
 * worked out at its commit, where the catalogs are as the transaction left
 * them.  Its invalidation messages name the tables; they are run here, as
 * decoding runs them, so that the relation cache holds the tables as they
 * are now (decoding runs them again later, which costs one more rebuild).
 */
static void
emit_schema_events(LogicalDecodingContext *ctx, StreamState *st,
				   ReorderBufferTXN *txn)
{
	MemoryContext old = MemoryContextSwitchTo(st->change_cxt);
	List	   *changes;
	ListCell   *lc;

	for (uint32 i = 0; i < txn->ninvalidations; i++)
		LocalExecuteInvalidationMessage(&txn->invalidations[i]);
	changes = bson_stream_tables_schema_changes(txn->invalidations,
												(int) txn->ninvalidations,
												&st->options, stream_db(st));
	foreach(lc, changes)
	{
		BsonSchemaChange *c = lfirst(lc);
		BsonChangeTxn where;
		bytea	   *doc;

		where.commit_lsn = txn->final_lsn;
		where.commit_time = BSON_TXN_COMMIT_TIME(txn);
		where.xid = txn->xid;
		where.position = ++st->position;
		doc = bson_schema_event(c->shape ? BSON_CHANGE_MODIFY : BSON_CHANGE_DROP,
								c->ns, c->nslen, c->relid, c->name, c->shape, &where);
		write_message(ctx, VARDATA(doc), VARSIZE(doc) - VARHDRSZ,
					  !st->options.commit_markers && lnext(changes, lc) == NULL);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->change_cxt);
}

/* ns.db: the option, or the database's name, looked up once */
static const char *
stream_db(StreamState *st)
{
	if (st->db == NULL)
	{
		const char *name = st->options.ns_db;

		if (name == NULL)
			name = get_database_name(MyDatabaseId);
		if (name == NULL)
			elog(ERROR, "cache lookup failed for database %u", MyDatabaseId);
		st->db = MemoryContextStrdup(st->cxt, name);
	}
	return st->db;
}

static void
write_message(LogicalDecodingContext *ctx, const char *bytes, Size len,
			  bool last_write)
{
	OutputPluginPrepareWrite(ctx, last_write);
	appendBinaryStringInfo(ctx->out, bytes, len);
	OutputPluginWrite(ctx, last_write);
}

/*
 * With heartbeats: a transactional heartbeat message is a "heartbeat" event
 * at its transaction's commit time (a consumer that merges several nodes'
 * streams learns that this node's commits have reached that time).  Other
 * messages, and non-transactional ones (no commit time), are not decoded
 * into anything.
 */
static void
bson_message_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				XLogRecPtr message_lsn, bool transactional, const char *prefix,
				Size message_size, const char *message)
{
	StreamState *st = (StreamState *) ctx->output_plugin_private;
	BsonChangeTxn where;
	bytea	   *doc;

	(void) message_lsn;
	(void) message_size;
	(void) message;
	if (!st->options.heartbeats || !transactional || txn == NULL ||
		strcmp(prefix, BSON_HEARTBEAT_PREFIX) != 0)
		return;
	where.commit_lsn = txn->final_lsn;
	where.commit_time = BSON_TXN_COMMIT_TIME(txn);
	where.xid = txn->xid;
	where.position = ++st->position;
	doc = bson_heartbeat_event(&where);
	write_message(ctx, VARDATA(doc), VARSIZE(doc) - VARHDRSZ, true);
	pfree(doc);
}

/*
 * An event whose field is too large for any fragment: an error, or with
 * the fallback of unmappable-values (the stream's default) a fragment over
 * the limit, written whole rather than lost, and a warning once per table.
 */
static void
report_oversized(BsonStreamTable *table, const BsonEventSplit *split,
				 Size limit)
{
	const char *field = split->field_name[split->oversized];

	if (table->change.unmappable == BSON_UNMAPPABLE_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("change event of table %s is too large to split", table->name),
				 errdetail("Its field \"%s\" alone makes a fragment of %zu bytes, over max-event-size (%zu bytes); events are split between their top-level fields only, as MongoDB splits them.  With unmappable-values set to fallback, such a fragment is written whole, over the limit.",
						   field, split->oversized_size, limit),
				 errhint("Leave the table out of the stream (exclude-tables), or set a larger max-event-size.")));
	if (table->warned_oversized)
		return;
	table->warned_oversized = true;
	ereport(WARNING,
			(errmsg("change event of table %s has a field too large to split", table->name),
			 errdetail("Its field \"%s\" alone makes a fragment of %zu bytes, over max-event-size (%zu bytes): the fragment is written whole, over the limit, and MongoDB refuses to store a document that large.",
					   field, split->oversized_size, limit),
			 errhint("Leave the table out of the stream (exclude-tables), or turn full-document-before-change off where the old row's image is the field; with unmappable-values set to error, decoding stops at such a change instead.")));
}

/*
 * Write one event as one message, or, over max-event-size, as fragments
 * (change_split.c), each a message of its own with the next position.
 */
static void
emit(LogicalDecodingContext *ctx, StreamState *st, ReorderBufferTXN *txn,
	 BsonStreamTable *table, const BsonChangeEvent *ev, bool last_write)
{
	BsonChangeTxn where;
	bytea	   *doc;
	Size		len;
	BsonEventSplit split;

	where.commit_lsn = txn->final_lsn;
	where.commit_time = BSON_TXN_COMMIT_TIME(txn);
	where.xid = txn->xid;
	where.position = ++st->position;
	doc = bson_change_event(ev, &where, &st->options.change);
	len = VARSIZE(doc) - VARHDRSZ;
	if (len <= st->options.max_event_size)
	{
		write_message(ctx, VARDATA(doc), len, last_write);
		return;
	}
	bson_event_split(&split, VARDATA(doc), len, st->options.max_event_size);
	if (split.oversized >= 0)
		report_oversized(table, &split, st->options.max_event_size);
	for (int n = 1; n <= split.nfragments; n++)
	{
		bytea	   *fragment;

		CHECK_FOR_INTERRUPTS();
		fragment = bson_event_fragment(&split, n, (uint64) where.commit_lsn,
									   n == 1 ? where.position : ++st->position);
		write_message(ctx, VARDATA(fragment), VARSIZE(fragment) - VARHDRSZ,
					  last_write && n == split.nfragments);
		pfree(fragment);
	}
}

/*
 * A tuple of the change, deformed with the relation's descriptor (which
 * knows the defaults of columns added since the row was written).  A value
 * the WAL does not carry, because an update left a TOASTed column as it
 * was, is marked missing: it must never pass for a NULL or an old value.
 */
static void
deform_row(BsonChangeRow *row, HeapTuple tuple, TupleDesc desc)
{
	int			natts = desc->natts;

	row->values = palloc(sizeof(Datum) * Max(natts, 1));
	row->nulls = palloc(sizeof(bool) * Max(natts, 1));
	row->missing = NULL;
	heap_deform_tuple(tuple, desc, row->values, row->nulls);
	for (int i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (row->nulls[i] || att->attisdropped || att->attlen != -1)
			continue;
		if (VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(row->values[i])))
		{
			if (row->missing == NULL)
				row->missing = palloc0(sizeof(bool) * natts);
			row->missing[i] = true;
		}
	}
}

/*
 * A row of the change as the table's model reads it: a partition streamed
 * as its root has its values put in the root's columns.
 */
static void
change_row(BsonChangeRow *row, const BsonStreamTable *table, HeapTuple tuple,
		   TupleDesc desc)
{
	deform_row(row, tuple, desc);
	if (table->column_map != NULL)
	{
		BsonChangeRow own = *row;
		int			natts = table->change.tupdesc->natts;

		row->values = palloc(sizeof(Datum) * Max(natts, 1));
		row->nulls = palloc(sizeof(bool) * Max(natts, 1));
		bson_row_to_root(row, &own, table->column_map, natts);
	}
}

/*
 * Values missing from the new row of an update, taken from the old row
 * where the WAL has them: every column of a whole old row (REPLICA IDENTITY
 * FULL), else the key columns of the old key.  Unchanged, by definition.
 */
static void
fill_from_old(BsonChangeRow *row, const BsonChangeRow *old,
			  const BsonChangeTable *t, int natts)
{
	bool		still_missing = false;

	if (row->missing == NULL)
		return;
	for (int i = 0; i < natts; i++)
	{
		if (!row->missing[i])
			continue;
		if ((t->old_row_whole || bson_change_is_key_column(t, i)) && !old->nulls[i] &&
			!VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(old->values[i])))
		{
			row->values[i] = old->values[i];
			row->missing[i] = false;
		}
		else
			still_missing = true;
	}
	if (!still_missing)
		row->missing = NULL;
}

static bool
key_missing(const BsonChangeRow *row, const BsonChangeTable *t)
{
	if (row->missing == NULL)
		return false;
	for (int i = 0; i < t->nkeys; i++)
		if (row->missing[t->keys[i]])
			return true;
	return false;
}

/*
 * Updates and deletes of a table without a replica identity carry nothing
 * to find the row by: they are streamed without documentKey, and the user
 * is told once per table and session.
 */
static void
warn_no_identity(BsonStreamTable *table)
{
	if (table->key_unlogged)
	{
		if (table->warned_key_unlogged)
			return;
		table->warned_key_unlogged = true;
		ereport(WARNING,
				(errmsg("partition %s does not log the key of its root table", table->name),
				 errdetail("Its changes are streamed as the root table's, keyed by the root's replica identity, which the partition's own replica identity does not write to the WAL: its updates and deletes are streamed without documentKey."),
				 errhint("Give the partition a replica identity that includes the root table's key columns (its primary key, REPLICA IDENTITY USING INDEX or REPLICA IDENTITY FULL), or stream partitions as their own collections (partition-root off).")));
		return;
	}
	if (table->warned_no_identity)
		return;
	table->warned_no_identity = true;
	ereport(WARNING,
			(errmsg("table %s has no replica identity", table->name),
			 errdetail("Its updates and deletes are streamed without documentKey, so a consumer cannot tell which document they change."),
			 errhint("Add a primary key, or set REPLICA IDENTITY USING INDEX or REPLICA IDENTITY FULL.")));
}

static void
change_insert(LogicalDecodingContext *ctx, StreamState *st,
			  ReorderBufferTXN *txn, BsonStreamTable *table, HeapTuple newtup,
			  TupleDesc desc)
{
	BsonChangeTable *t = &table->change;
	BsonChangeRow row;
	BsonChangeKey key;
	BsonChangeEvent ev = {0};

	change_row(&row, table, newtup, desc);
	ev.op = BSON_CHANGE_INSERT;
	ev.table = t;
	ev.row = &row;
	if (t->nkeys > 0 && !key_missing(&row, t))
	{
		bson_change_key(&key, t, &row);
		ev.key = &key;
	}
	emit(ctx, st, txn, table, &ev, true);
}

/*
 * An update: a plain update event, or, where the key changed (MongoDB never
 * changes an _id), the delete of the old key and the insert of the new row.
 */
static void
change_update(LogicalDecodingContext *ctx, StreamState *st,
			  ReorderBufferTXN *txn, BsonStreamTable *table, HeapTuple oldtup,
			  HeapTuple newtup, TupleDesc desc)
{
	BsonChangeTable *t = &table->change;
	BsonChangeRow row;
	BsonChangeRow old;
	BsonChangeKey key;
	BsonChangeKey old_key;
	BsonChangeEvent ev = {0};
	bool		old_whole = false;

	change_row(&row, table, newtup, desc);
	if (oldtup != NULL)
	{
		change_row(&old, table, oldtup, desc);
		old_whole = t->old_row_whole;
		fill_from_old(&row, &old, t, t->tupdesc->natts);
	}
	ev.table = t;
	ev.old = old_whole ? &old : NULL;
	ev.old_identity = oldtup != NULL ? &old : NULL;

	if (t->nkeys == 0 || table->key_unlogged || key_missing(&row, t))
	{
		warn_no_identity(table);
		ev.op = BSON_CHANGE_UPDATE;
		ev.row = &row;
		emit(ctx, st, txn, table, &ev, true);
		return;
	}
	bson_change_key(&key, t, &row);

	/*
	 * The WAL holds the old key when the key changed (and sometimes when it
	 * did not: a TOASTed key is logged whenever the row is): compare.
	 */
	if (oldtup != NULL && !key_missing(&old, t))
	{
		bson_change_key(&old_key, t, &old);
		if (!bson_change_keys_equal(&key, &old_key))
		{
			ev.op = BSON_CHANGE_DELETE;
			ev.key = &old_key;
			emit(ctx, st, txn, table, &ev, false);

			ev.op = BSON_CHANGE_INSERT;
			ev.key = &key;
			ev.row = &row;
			ev.old = NULL;
			ev.after_key_change = true;
			emit(ctx, st, txn, table, &ev, true);
			return;
		}
	}
	/*
	 * Without the old row, which columns changed is not known: the new row
	 * whole is a replacement, as MongoDB reports one (fullDocument, no
	 * updateDescription), not an update that names every column.  Only a
	 * value the WAL left out (a TOASTed one unchanged) keeps it an update,
	 * of the columns the WAL carries.
	 */
	ev.op = ev.old == NULL && row.missing == NULL ? BSON_CHANGE_REPLACE : BSON_CHANGE_UPDATE;
	ev.key = &key;
	ev.row = &row;
	emit(ctx, st, txn, table, &ev, true);
}

static void
change_delete(LogicalDecodingContext *ctx, StreamState *st,
			  ReorderBufferTXN *txn, BsonStreamTable *table, HeapTuple oldtup,
			  TupleDesc desc)
{
	BsonChangeTable *t = &table->change;
	BsonChangeRow old;
	BsonChangeKey key;
	BsonChangeEvent ev = {0};

	ev.op = BSON_CHANGE_DELETE;
	ev.table = t;
	if (oldtup != NULL)
	{
		change_row(&old, table, oldtup, desc);
		ev.old_identity = &old;
		if (t->old_row_whole)
			ev.old = &old;
		if (t->nkeys > 0 && !table->key_unlogged && !key_missing(&old, t))
		{
			bson_change_key(&key, t, &old);
			ev.key = &key;
		}
	}
	if (ev.key == NULL)
		warn_no_identity(table);
	emit(ctx, st, txn, table, &ev, true);
}

/*
 * What an error while decoding a change says besides its own message, in
 * its context: the table, the transaction and where its commit ends, and
 * how to skip it.
 * Without that, a change that cannot be written stops the slot for good and
 * the user has to find the LSN to advance to with pg_waldump: the commit's
 * end, since advancing to its start (or to the change's LSN, which the
 * server log shows) decodes the transaction again.
 */
typedef struct DecodeErrorArgs
{
	ReorderBufferTXN *txn;
	const char *table;			/* schema.table, or NULL (a truncate) */
} DecodeErrorArgs;

/*
 * Errors that do not come from the change itself: waiting or retrying gets
 * past them, skipping the transaction is no answer.
 */
static bool
error_is_transient(int sqlerrcode)
{
	int			category = ERRCODE_TO_CATEGORY(sqlerrcode);

	return category == ERRCODE_SUCCESSFUL_COMPLETION ||
		category == ERRCODE_WARNING ||
		category == ERRCODE_NO_DATA ||
		category == ERRCODE_CONNECTION_EXCEPTION ||
		category == ERRCODE_TRANSACTION_ROLLBACK ||
		category == ERRCODE_INSUFFICIENT_RESOURCES ||
		category == ERRCODE_OPERATOR_INTERVENTION ||
		category == ERRCODE_SYSTEM_ERROR;
}

static void
decode_error_callback(void *arg)
{
	DecodeErrorArgs *args = (DecodeErrorArgs *) arg;
	char	   *end_lsn = DatumGetCString(DirectFunctionCall1(pg_lsn_out,
															  LSNGetDatum(args->txn->end_lsn)));

	if (args->table)
		errcontext("decoding a change of table %s in transaction %u, whose commit ends at %s",
				   args->table, args->txn->xid, end_lsn);
	else
		errcontext("decoding a change in transaction %u, whose commit ends at %s",
				   args->txn->xid, end_lsn);
	/*
	 * A context callback runs for warnings too (their code is of class 01);
	 * only an error of the change's own deserves the way past it.  It is a
	 * line of the context, not the hint: the error's own hint (set
	 * unmappable-values to fallback, ...) is the better way, and a context
	 * callback that set one would replace it.
	 */
	if (MyReplicationSlot != NULL && !error_is_transient(geterrcode()))
		errcontext("to skip the transaction, losing all of its changes and those of any earlier transaction not yet confirmed by the consumer, run: SELECT pg_replication_slot_advance(%s, '%s');",
				   quote_literal_cstr(NameStr(MyReplicationSlot->data.name)),
				   end_lsn);
}

static void
bson_change_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
			   Relation relation, ReorderBufferChange *change)
{
	StreamState *st = (StreamState *) ctx->output_plugin_private;
	MemoryContext old = MemoryContextSwitchTo(st->change_cxt);
	DecodeErrorArgs error_args = {txn, RelationGetRelationName(relation)};
	ErrorContextCallback error_context = {error_context_stack,
	decode_error_callback, &error_args};
	BsonStreamTable *table;
	TupleDesc	desc = RelationGetDescr(relation);
	HeapTuple	oldtup = BSON_CHANGE_OLD_TUPLE(change);
	HeapTuple	newtup = BSON_CHANGE_NEW_TUPLE(change);

	error_context_stack = &error_context;
	/* Citus records here the transactions it prepares on other nodes */
	if (st->citus_truncates != NIL && !st->citus_2pc)
	{
		if (!OidIsValid(st->dist_transaction))
			st->dist_transaction = get_relname_relid("pg_dist_transaction",
													 PG_CATALOG_NAMESPACE);
		st->citus_2pc = RelationGetRelid(relation) == st->dist_transaction;
	}
	table = bson_stream_table(relation, &st->options, stream_db(st));
	error_args.table = table->name;

	if (table->selected)
	{
		switch (change->action)
		{
			case REORDER_BUFFER_CHANGE_INSERT:
				/* an insert always logs its row; without one there is nothing to say */
				if (newtup != NULL)
					change_insert(ctx, st, txn, table, newtup, desc);
				break;
			case REORDER_BUFFER_CHANGE_UPDATE:
				if (newtup != NULL)
					change_update(ctx, st, txn, table, oldtup, newtup, desc);
				break;
			case REORDER_BUFFER_CHANGE_DELETE:
				change_delete(ctx, st, txn, table, oldtup, desc);
				break;
			default:
				/* the reorder buffer passes only the three */
				elog(ERROR, "unexpected change type %d", (int) change->action);
		}
	}
	error_context_stack = error_context.previous;
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->change_cxt);
}

/*
 * A TRUNCATE of a Citus table, run on one node, truncates the table's own
 * relation there (on a worker, its shell) and, through Citus's trigger,
 * every shard, on each node in a transaction Citus prepares there and
 * commits with COMMIT PREPARED once its own transaction has committed.
 * Until then each node's truncate holds its shards' lock: a write to a shard
 * commits either before every node's PREPARE, so before the commit of the
 * node the TRUNCATE ran on, or after its node's COMMIT PREPARED, so after
 * that commit.  That commit is the one instant at which the whole
 * collection is empty: the truncate event is that node's, one for the
 * cluster, and the shards' truncates make none (each node's, at its own
 * COMMIT PREPARED, would be after some other node's newer rows).
 *
 * Citus truncates a table's own relation for another reason too:
 * truncate_local_data_after_distributing_table removes the rows a table
 * kept on the coordinator when it was distributed, which are in the shards
 * now.  That truncate runs alone on the coordinator; the user's goes with
 * the truncate of a shard here (the coordinator holds a copy of every
 * reference table, a worker that runs it the shards it holds) or with
 * transactions prepared on other nodes, which Citus records in
 * pg_dist_transaction before it commits.  So a Citus table's truncate waits
 * for one of the two, and is dropped at the commit without them.
 */
typedef struct CitusTruncate
{
	Oid			relid;			/* the first of its relations truncated */
	Oid			table;			/* the collection's table */
	bool		whole;			/* the collection's table was truncated */
	List	   *partitions;		/* else these (names) */
	bool		emitted;
} CitusTruncate;

static void
add_citus_truncate(StreamState *st, BsonStreamTable *table, Relation rel)
{
	Oid			collection = OidIsValid(table->root) ? table->root : table->relid;
	CitusTruncate *c = NULL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(st->txn_cxt);

	foreach(lc, st->citus_truncates)
		if (((CitusTruncate *) lfirst(lc))->table == collection)
			c = lfirst(lc);
	if (c == NULL)
	{
		c = palloc0(sizeof(CitusTruncate));
		c->relid = table->relid;
		c->table = collection;
		st->citus_truncates = lappend(st->citus_truncates, c);
	}
	if (!OidIsValid(table->root))
		c->whole = true;
	else if (rel->rd_rel->relkind == RELKIND_RELATION)
		c->partitions = lappend(c->partitions,
								bson_collection_name(table->relid, st->options.include_schema));
	MemoryContextSwitchTo(old);
}

/* The Citus tables' truncates not yet written, as the events of the cluster */
static void
emit_citus_truncates(LogicalDecodingContext *ctx, StreamState *st,
					 ReorderBufferTXN *txn, bool last_write)
{
	ListCell   *lc;

	foreach(lc, st->citus_truncates)
	{
		CitusTruncate *c = lfirst(lc);
		BsonChangeEvent ev = {0};
		Relation	rel;
		BsonStreamTable *table;
		const char **partitions = NULL;
		int			n = 0;
		ListCell   *p;

		if (c->emitted)
			continue;
		c->emitted = true;
		/* dropped later in its transaction: nothing is left to truncate */
		rel = RelationIdGetRelation(c->relid);
		if (!RelationIsValid(rel))
			continue;
		table = bson_stream_table(rel, &st->options, stream_db(st));
		if (!c->whole)
		{
			partitions = palloc(sizeof(char *) * Max(list_length(c->partitions), 1));
			foreach(p, c->partitions)
				partitions[n++] = lfirst(p);
			ev.partitions = partitions;
			ev.npartitions = n;
		}
		ev.op = BSON_CHANGE_TRUNCATE;
		ev.table = &table->change;
		emit(ctx, st, txn, table, &ev, last_write && lnext(st->citus_truncates, lc) == NULL);
		RelationClose(rel);
	}
}

/*
 * A truncate (not a MongoDB event): one event per selected collection, in
 * the order the command names the tables, each with its ns.  The partitions
 * of a table streamed as their root make one event, the root's collection's;
 * where the root itself was not truncated, only some of its partitions,
 * that event names them in "partitions", so that a consumer never takes it
 * for the whole collection's.
 */
typedef struct TruncatedCollection
{
	Oid			table;			/* the collection's table */
	BsonStreamTable *entry;		/* the first selected table that is its */
	bool		whole;			/* the collection's table was truncated */
	const char **partitions;	/* else these */
	Relation   *leaves;			/* and their relations */
	int			npartitions;
} TruncatedCollection;

static void
bson_truncate_cb(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				 int nrelations, Relation relations[],
				 ReorderBufferChange *change)
{
	StreamState *st = (StreamState *) ctx->output_plugin_private;
	MemoryContext old = MemoryContextSwitchTo(st->change_cxt);
	TruncatedCollection *colls = palloc0(sizeof(TruncatedCollection) * Max(nrelations, 1));
	int			ncolls = 0;
	bool		shard_truncated = false;
	DecodeErrorArgs error_args = {txn, NULL};
	ErrorContextCallback error_context = {error_context_stack,
	decode_error_callback, &error_args};

	(void) change;
	error_context_stack = &error_context;
	for (int i = 0; i < nrelations; i++)
	{
		BsonStreamTable *table = bson_stream_table(relations[i], &st->options,
												   stream_db(st));
		Oid			collection = OidIsValid(table->root) ? table->root : table->relid;
		TruncatedCollection *c = NULL;

		CHECK_FOR_INTERRUPTS();
		if (table->citus_table)
		{
			add_citus_truncate(st, table, relations[i]);
			continue;
		}
		if (!table->selected)
			continue;
		/* a shard is truncated with its table: its node's truncate says it */
		if (OidIsValid(table->shard_of))
		{
			ListCell   *lc;

			foreach(lc, st->citus_truncates)
				if (((CitusTruncate *) lfirst(lc))->table == collection)
					shard_truncated = true;
			continue;
		}
		for (int j = 0; j < ncolls && c == NULL; j++)
			if (colls[j].table == collection)
				c = &colls[j];
		if (c == NULL)
		{
			c = &colls[ncolls++];
			c->table = collection;
			c->entry = table;
			c->partitions = palloc(sizeof(char *) * nrelations);
			c->leaves = palloc(sizeof(Relation) * nrelations);
		}
		if (!OidIsValid(table->root))
			c->whole = true;
		else if (relations[i]->rd_rel->relkind == RELKIND_RELATION)
		{
			c->leaves[c->npartitions] = relations[i];
			c->partitions[c->npartitions++] =
				bson_collection_name(table->relid, st->options.include_schema);
		}
	}
	if (shard_truncated)
		emit_citus_truncates(ctx, st, txn, ncolls == 0);
	for (int i = 0; i < ncolls; i++)
	{
		BsonChangeEvent ev = {0};

		ev.op = BSON_CHANGE_TRUNCATE;
		ev.table = &colls[i].entry->change;
		if (!colls[i].whole)
		{
			const char *why;

			ev.partitions = colls[i].partitions;
			ev.npartitions = colls[i].npartitions;
			ev.partition_filter =
				bson_partitions_filter(&colls[i].entry->change, colls[i].table,
									   colls[i].leaves, colls[i].npartitions,
									   &ev.partition_filter_len, &why);
			if (ev.partition_filter == NULL)
				ereport(WARNING,
						(errmsg("the truncate event of some partitions of %s has no partitionFilter",
								bson_table_name(colls[i].table)),
						 errdetail("No MongoDB filter expresses %s.", why),
						 errhint("A consumer cannot tell their documents from the other partitions'; truncate the partitioned table, or stream partitions as their own collections (partition-root off).")));
		}
		emit(ctx, st, txn, colls[i].entry, &ev, i == ncolls - 1);
	}
	error_context_stack = error_context.previous;
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->change_cxt);
}
