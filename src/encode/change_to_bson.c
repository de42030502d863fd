/*
 * change_to_bson.c
 *		Row changes -> BSON change events, shaped as MongoDB's change streams
 *		write them.
 *
 * An event, in this order:
 *
 *	_id						{_data: resume token}: the commit record's LSN
 *							and the event's position in its transaction, laid
 *							out as src/core/resume_token.h says
 *	operationType			"insert", "update", "replace", "delete" or
 *							"truncate"; "modify" or "drop" for a schema
 *							event, which has operationDescription
 *							{relid, table, shape} after ns, then txnNumber
 *	clusterTime				timestamp: the commit's seconds since 1970, and
 *							the position as increment
 *	wallTime				datetime of the commit
 *	ns						{db, coll}
 *	documentKey				{_id}, where the table has a replica identity
 *	fullDocument			insert and replace; update unless a value is
 *							missing
 *	updateDescription		update: {updatedFields, removedFields,
 *							truncatedArrays}
 *	fullDocumentBeforeChange update and delete, where the old row is whole
 *	partitions				truncate of some partitions of a collection
 *							streamed as its root table: their names
 *	partitionFilter			and their documents as a MongoDB filter, where
 *							one can say which (partition_filter.h)
 *	txnNumber				int64: the transaction's id
 *
 * Rows are written column by column through record_to_bson's mapping, so
 * that fullDocument is what row_to_bson writes for the same row, with _id
 * (the key) in front.
 */
#include "change_to_bson.h"

#include "miscadmin.h"

#include "resume_token.h"

/* TimestampTz (microseconds since 2000) as a floored division by unit */
static int64
unix_time(TimestampTz t, int64 unit)
{
	int64		q = t / unit;

	if (t % unit < 0)
		q--;
	return q + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY *
		(USECS_PER_SEC / unit);
}

void
bson_change_table_ns(BsonChangeTable *table, const char *db, const char *coll,
					 MemoryContext mcxt)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	BsonWriter	w;
	Size		ns;
	Size		len;

	bson_writer_init(&w, strlen(db) + strlen(coll) + 32);
	ns = bson_append_document_begin(&w, "ns", 2);
	bson_append_string(&w, "db", 2, db, strlen(db));
	bson_append_string(&w, "coll", 4, coll, strlen(coll));
	bson_close(&w, ns);
	len = w.pos - (w.buf + VARHDRSZ);
	table->ns = palloc(len);
	memcpy(table->ns, w.buf + VARHDRSZ, len);
	table->nslen = len;
	pfree(w.buf);
	MemoryContextSwitchTo(old);
}

/* How a table's values are written: its policy, and omit_nulls */
static inline BsonRecordOptions
record_options(const BsonChangeTable *table, bool omit_nulls)
{
	BsonRecordOptions opts;

	opts.omit_nulls = omit_nulls;
	opts.unmappable = table->unmappable;
	opts.policy_name = table->policy_name;
	opts.table = table->name;
	return opts;
}

void
bson_change_key(BsonChangeKey *key, const BsonChangeTable *table,
				const BsonChangeRow *row)
{
	BsonRecordOptions opts = record_options(table, false);
	BsonWriter	w;

	Assert(table->nkeys > 0);
	bson_writer_init(&w, 64);
	/* a part of a document whose writer holds it to its limit */
	w.max_size = (Size) BSON_MAX_DOCUMENT_SIZE;
	if (table->nkeys == 1)
	{
		int			k = table->keys[0];

		Assert(row->missing == NULL || !row->missing[k]);
		bson_append_record_column(&w, table->columns, k, "_id", 3,
								  row->values[k], row->nulls[k], &opts);
	}
	else
	{
		Size		doc = bson_append_document_begin(&w, "_id", 3);

		for (int i = 0; i < table->nkeys; i++)
		{
			int			k = table->keys[i];

			CHECK_FOR_INTERRUPTS();
			Assert(row->missing == NULL || !row->missing[k]);
			bson_append_record_column(&w, table->columns, k, NULL, 0,
									  row->values[k], row->nulls[k], &opts);
		}
		bson_close(&w, doc);
	}
	key->bytes = w.buf + VARHDRSZ;
	key->len = w.pos - key->bytes;
}

static bool
is_missing(const BsonChangeRow *row, int i)
{
	return row->missing != NULL && row->missing[i];
}

static bool
has_missing(const BsonChangeRow *row, int natts)
{
	if (row->missing == NULL)
		return false;
	for (int i = 0; i < natts; i++)
		if (row->missing[i])
			return true;
	return false;
}

/*
 * Is column i left out of a row's documents?  Dropped columns are; so is a
 * column named _id where the document starts with the key.
 */
static bool
skip_column(const BsonChangeTable *table, int i, bool keyed)
{
	return TupleDescAttr(table->tupdesc, i)->attisdropped ||
		(keyed && i == table->id_column);
}

static void
append_column(BsonWriter *w, const BsonChangeTable *table, int i,
			  const BsonChangeRow *row, bool omit_nulls)
{
	BsonRecordOptions opts = record_options(table, omit_nulls);

	bson_append_record_column(w, table->columns, i, NULL, 0, row->values[i],
							  row->nulls[i], &opts);
}

/*
 * A row's elements: the key first (if any), then the columns in their
 * order, missing values left out.  Returns where the columns' elements
 * start in the writer's buffer.
 */
static Size
append_row_elements(BsonWriter *w, const BsonChangeTable *table,
					const BsonChangeKey *key, const BsonChangeRow *row,
					bool omit_nulls)
{
	Size		columns;

	if (key)
		bson_put_raw(w, key->bytes, key->len);
	columns = w->pos - w->buf;
	for (int i = 0; i < table->tupdesc->natts; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (skip_column(table, i, key != NULL) || is_missing(row, i) ||
			(row->nulls[i] && omit_nulls))
			continue;
		append_column(w, table, i, row, omit_nulls);
	}
	return columns;
}

/*
 * A row as a document under name.  Returns where the columns' elements
 * start in the writer's buffer; they end before the document's last byte.
 */
static Size
append_row_document(BsonWriter *w, const char *name, int namelen,
					const BsonChangeTable *table, const BsonChangeKey *key,
					const BsonChangeRow *row, bool omit_nulls)
{
	Size		doc = bson_append_document_begin(w, name, namelen);
	Size		columns = append_row_elements(w, table, key, row, omit_nulls);

	bson_close(w, doc);
	return columns;
}

bytea *
bson_row_document(const BsonChangeTable *table, const BsonChangeRow *row,
				  bool omit_nulls)
{
	BsonChangeKey key;
	bool		keyed = table->nkeys > 0;
	BsonWriter	w;
	Size		doc;

	if (keyed)
		bson_change_key(&key, table, row);
	bson_writer_init(&w, 256 + (keyed ? key.len : 0));
	doc = bson_open(&w);
	append_row_elements(&w, table, keyed ? &key : NULL, row, omit_nulls);
	bson_close(&w, doc);
	return bson_writer_finish(&w);
}

Size
bson_row_document_open(BsonWriter *w, const BsonChangeTable *table,
					   const BsonChangeRow *row, bool omit_nulls)
{
	BsonChangeKey key;
	bool		keyed = table->nkeys > 0;
	Size		doc;

	if (keyed)
		bson_change_key(&key, table, row);
	bson_writer_init(w, 256 + (keyed ? key.len : 0));
	doc = bson_open(w);
	append_row_elements(w, table, keyed ? &key : NULL, row, omit_nulls);
	return doc;
}

void
bson_row_append_columns(BsonWriter *w, const BsonChangeTable *table,
						const BsonChangeRow *row, const bool *included,
						bool omit_nulls)
{
	for (int i = 0; i < table->tupdesc->natts; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (!included[i] || TupleDescAttr(table->tupdesc, i)->attisdropped ||
			is_missing(row, i) || (row->nulls[i] && omit_nulls))
			continue;
		append_column(w, table, i, row, omit_nulls);
	}
}

/* Strings as a BSON array under name */
static void
append_string_array(BsonWriter *w, const char *name, int namelen,
					const char *const *strings, int n)
{
	Size		arr = bson_append_array_begin(w, name, namelen);

	for (int i = 0; i < n; i++)
	{
		int			len = strlen(strings[i]);

		CHECK_FOR_INTERRUPTS();
		bson_index_key(w, BSON_TYPE_STRING, (uint32) i, BSON_STRING_VALSIZE(len));
		bson_put_string(w, strings[i], len);
	}
	bson_close(w, arr);
}

/* Column names as a BSON array under name */
static void
append_name_array(BsonWriter *w, const char *name, int namelen,
				  const BsonChangeTable *table, const int *columns, int n)
{
	const char **names = palloc(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
		names[i] = NameStr(TupleDescAttr(table->tupdesc, columns[i])->attname);
	append_string_array(w, name, namelen, names, n);
	pfree(names);
}

/*
 * Did column i change from old to new?  Compared as written: two values are
 * the same when their BSON is, which is what a consumer can tell apart.
 */
static bool
column_changed(BsonWriter *scratch, const BsonChangeTable *table, int i,
			   const BsonChangeRow *old, const BsonChangeRow *row,
			   bool omit_nulls)
{
	Size		start = scratch->pos - scratch->buf;
	Size		oldlen;
	Size		newlen;
	bool		changed;

	if (old->nulls[i] || row->nulls[i])
		return old->nulls[i] != row->nulls[i];
	append_column(scratch, table, i, old, omit_nulls);
	oldlen = (scratch->pos - scratch->buf) - start;
	append_column(scratch, table, i, row, omit_nulls);
	newlen = (scratch->pos - scratch->buf) - start - oldlen;
	/* offsets, not pointers: writing may have moved the buffer */
	changed = newlen != oldlen ||
		memcmp(scratch->buf + start, scratch->buf + start + oldlen, oldlen) != 0;
	scratch->pos = scratch->buf + start;
	return changed;
}

/*
 * updateDescription: with the old row whole, the columns whose values
 * changed; without it (an update that left a TOASTed value out of the WAL,
 * or of a table without a replica identity), every column of the new row
 * that the WAL carries.  With omit_nulls, a column that became NULL is a
 * removed field, as a field $unset in MongoDB.
 */
static void
append_update_description(BsonWriter *w, const BsonChangeTable *table,
						  const BsonChangeEvent *ev, bool omit_nulls)
{
	int			natts = table->tupdesc->natts;
	int		   *removed = palloc(sizeof(int) * Max(natts, 1));
	int			nremoved = 0;
	BsonWriter	scratch = {0};
	Size		desc;
	Size		fields;

	if (ev->old)
	{
		/* values compared, never output: no limit of their own */
		bson_writer_init(&scratch, 256);
		scratch.max_size = (Size) BSON_MAX_DOCUMENT_SIZE;
	}
	desc = bson_append_document_begin(w, "updateDescription", 17);
	fields = bson_append_document_begin(w, "updatedFields", 13);
	for (int i = 0; i < natts; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (skip_column(table, i, ev->key != NULL) || is_missing(ev->row, i))
			continue;
		if (ev->old &&
			!column_changed(&scratch, table, i, ev->old, ev->row, omit_nulls))
			continue;
		if (ev->row->nulls[i] && omit_nulls)
			removed[nremoved++] = i;
		else
			append_column(w, table, i, ev->row, omit_nulls);
	}
	bson_close(w, fields);
	append_name_array(w, "removedFields", 13, table, removed, nremoved);
	/* columns are replaced whole: no array is ever cut short in place */
	bson_close(w, bson_append_array_begin(w, "truncatedArrays", 15));
	bson_close(w, desc);
	if (ev->old)
		pfree(scratch.buf);
	pfree(removed);
}

/*
 * The insert of an update that changed the key lacks the values the WAL did
 * not carry: unchangedFields names them, so that a consumer can take them
 * from the document deleted by the event before.
 */
static void
append_unchanged_fields(BsonWriter *w, const BsonChangeTable *table,
						const BsonChangeRow *row)
{
	int			natts = table->tupdesc->natts;
	int		   *columns = palloc(sizeof(int) * Max(natts, 1));
	int			n = 0;

	for (int i = 0; i < natts; i++)
		if (!skip_column(table, i, true) && is_missing(row, i))
			columns[n++] = i;
	append_name_array(w, "unchangedFields", 15, table, columns, n);
	pfree(columns);
}

static const char *const op_names[] = {
	[BSON_CHANGE_INSERT] = "insert",
	[BSON_CHANGE_UPDATE] = "update",
	[BSON_CHANGE_REPLACE] = "replace",
	[BSON_CHANGE_DELETE] = "delete",
	[BSON_CHANGE_TRUNCATE] = "truncate",
	[BSON_CHANGE_MODIFY] = "modify",
	[BSON_CHANGE_DROP] = "drop",
	[BSON_CHANGE_HEARTBEAT] = "heartbeat",
};

void
bson_change_append_id(BsonWriter *w, uint64 commit_lsn, uint64 position)
{
	char		token[RESUME_TOKEN_LEN];
	Size		id;

	resume_token_format(token, commit_lsn, position);
	id = bson_append_document_begin(w, "_id", 3);
	bson_append_string(w, "_data", 5, token, RESUME_TOKEN_LEN);
	bson_close(w, id);
}

/* _id, operationType, clusterTime, wallTime */
static void
append_head(BsonWriter *w, BsonChangeOp op, const BsonChangeTxn *txn)
{
	uint32		increment;
	int64		seconds;
	const char *opname = op_names[op];

	bson_change_append_id(w, (uint64) txn->commit_lsn, txn->position);

	bson_append_string(w, "operationType", 13, opname, strlen(opname));

	/*
	 * A BSON timestamp is the increment in the low 32 bits and the seconds
	 * in the high 32; a transaction of more than 2^32 - 1 events keeps the
	 * last increment (the resume token still tells them apart).
	 */
	increment = txn->position > PG_UINT32_MAX ? PG_UINT32_MAX : (uint32) txn->position;
	seconds = unix_time(txn->commit_time, USECS_PER_SEC);
	bson_key(w, BSON_TYPE_TIMESTAMP, "clusterTime", 11, 8);
	bson_put_int64(w, (int64) (((uint64) (uint32) seconds << 32) | increment));

	bson_key(w, BSON_TYPE_DATETIME, "wallTime", 8, 8);
	bson_put_int64(w, unix_time(txn->commit_time, 1000));
}

bytea *
bson_heartbeat_event(const BsonChangeTxn *txn)
{
	BsonWriter	w;
	Size		doc;

	bson_writer_init(&w, 128);
	doc = bson_open(&w);
	append_head(&w, BSON_CHANGE_HEARTBEAT, txn);
	bson_append_int64(&w, "txnNumber", 9, (int64) txn->xid);
	bson_close(&w, doc);
	return bson_writer_finish(&w);
}

bytea *
bson_schema_event(BsonChangeOp op, const char *ns, Size nslen, Oid relid,
				  const char *name, const char *shape, const BsonChangeTxn *txn)
{
	BsonWriter	w;
	Size		doc;
	Size		desc;

	Assert(op == BSON_CHANGE_MODIFY || op == BSON_CHANGE_DROP);
	bson_writer_init(&w, 256 + nslen + strlen(name) + (shape ? strlen(shape) : 0));
	doc = bson_open(&w);
	append_head(&w, op, txn);
	bson_put_raw(&w, ns, nslen);
	desc = bson_append_document_begin(&w, "operationDescription", 20);
	bson_append_int64(&w, "relid", 5, (int64) relid);
	bson_append_string(&w, "table", 5, name, strlen(name));
	if (shape != NULL)
		bson_append_string(&w, "shape", 5, shape, strlen(shape));
	bson_close(&w, desc);
	bson_append_int64(&w, "txnNumber", 9, (int64) txn->xid);
	bson_close(&w, doc);
	return bson_writer_finish(&w);
}

/* An embedded row's top document's _id, from its own columns */
static void
append_top_id(BsonWriter *w, const BsonChangeTable *table, const BsonChangeRow *row)
{
	const BsonEmbedPath *p = table->embed;
	BsonRecordOptions opts = record_options(table, false);

	if (p->ntop == 1)
		bson_append_record_column(w, table->columns, p->top_columns[0], "_id", 3,
								  row->values[p->top_columns[0]], false, &opts);
	else
	{
		Size		id = bson_append_document_begin(w, "_id", 3);

		for (int i = 0; i < p->ntop; i++)
			bson_append_record_column(w, table->columns, p->top_columns[i],
									  p->top_names[i], strlen(p->top_names[i]),
									  row->values[p->top_columns[i]], false, &opts);
		bson_close(w, id);
	}
}

/*
 * Does row name its parent: none of the columns of its foreign key (the top
 * document's and the levels' keys above its own) NULL or missing?
 */
static bool
has_parent(const BsonChangeTable *table, const BsonChangeRow *row)
{
	const BsonEmbedPath *p = table->embed;

	for (int i = 0; i < p->ntop; i++)
		if (row->nulls[p->top_columns[i]] || is_missing(row, p->top_columns[i]))
			return false;
	for (int l = 0; l < p->nlevels; l++)
		for (int i = 0; i < p->levels[l].nkey; i++)
			if (row->nulls[p->levels[l].key_columns[i]] ||
				is_missing(row, p->levels[l].key_columns[i]))
				return false;
	return true;
}

/*
 * The embedded fields of a document (or element), in their order, each
 * with the value it has without embedded rows ("default": an empty array,
 * or null; none where omit_nulls leaves the field out):
 *	[{field: "lines", shape: "array", default: []}, ...]
 */
static void
append_embedded_fields_shape(BsonWriter *w, const char *name, int namelen,
							 const BsonChangeTable *table, bool omit_nulls)
{
	Size		arr = bson_append_array_begin(w, name, namelen);

	for (int i = 0; i < table->nembedded; i++)
	{
		const BsonEmbedField *f = &table->embedded[i];
		const char *shape = f->array ? "array" : "document";
		Size		doc;

		bson_index_key(w, BSON_TYPE_DOCUMENT, (uint32) i, BSON_CONTAINER_VALSIZE);
		doc = bson_open(w);
		bson_append_string(w, "field", 5, f->name, strlen(f->name));
		bson_append_string(w, "shape", 5, shape, strlen(shape));
		if (f->array)
		{
			Size		empty = bson_append_array_begin(w, "default", 7);

			bson_close(w, empty);
		}
		else if (!omit_nulls)
			bson_append_null(w, "default", 7);
		bson_close(w, doc);
	}
	bson_close(w, arr);
}

/*
 * Where an embedded row is (row NULL: every element of its level, for a
 * truncate): the top collection, the top document's _id, the path of
 * fields and element keys down to it, as the elements of the document
 * being written
 */
static void
append_position_elements(BsonWriter *w, const BsonChangeTable *table,
						 const BsonChangeRow *row, bool omit_nulls)
{
	const BsonEmbedPath *p = table->embed;
	BsonRecordOptions opts = record_options(table, false);
	Size		path;

	bson_put_raw(w, p->ns, p->nslen);
	if (row != NULL)
	{
		Size		dk = bson_append_document_begin(w, "documentKey", 11);

		append_top_id(w, table, row);
		bson_close(w, dk);
	}
	path = bson_append_array_begin(w, "path", 4);
	for (int l = 0; l < p->nlevels; l++)
	{
		const BsonEmbedLevel *lv = &p->levels[l];
		const char *shape = lv->array ? "array" : "document";
		Size		level;

		bson_index_key(w, BSON_TYPE_DOCUMENT, (uint32) l, BSON_CONTAINER_VALSIZE);
		level = bson_open(w);
		bson_append_string(w, "field", 5, lv->field, strlen(lv->field));
		bson_append_string(w, "shape", 5, shape, strlen(shape));
		/* a sub-document's field without it: null, or none */
		if (!lv->array && !omit_nulls)
			bson_append_null(w, "default", 7);
		if (row != NULL && lv->nkey > 0)
		{
			Size		key = bson_append_document_begin(w, "key", 3);

			for (int i = 0; i < lv->nkey; i++)
				bson_append_record_column(w, table->columns, lv->key_columns[i],
										  lv->key_names[i], strlen(lv->key_names[i]),
										  row->values[lv->key_columns[i]], false, &opts);
			bson_close(w, key);
		}
		bson_close(w, level);
	}
	bson_close(w, path);
	bson_append_bool(w, "ownCollection", 13, p->own_collection);
}

/* The position alone, as a document in scratch (for comparing two) */
static bytea *
position_document(const BsonChangeTable *table, const BsonChangeRow *row,
				  bool omit_nulls)
{
	BsonWriter	w;
	Size		doc;

	bson_writer_init(&w, 128);
	w.max_size = (Size) BSON_MAX_DOCUMENT_SIZE;
	doc = bson_open(&w);
	append_position_elements(&w, table, row, omit_nulls);
	bson_close(&w, doc);
	return bson_writer_finish(&w);
}

/*
 * embeddedFrom (where the row was, when the WAL says and it moved) and
 * embeddedIn (where it is, with its element) of an embedded row's event
 */
static void
append_embedded(BsonWriter *w, const BsonChangeEvent *ev, bool omit_nulls)
{
	const BsonChangeTable *table = ev->table;
	bytea	   *from = NULL;
	bytea	   *in = NULL;

	if (ev->op == BSON_CHANGE_TRUNCATE)
	{
		Size		doc = bson_append_document_begin(w, "embeddedIn", 10);

		append_position_elements(w, table, NULL, omit_nulls);
		/* some partitions only: which elements were theirs is not said */
		if (ev->npartitions > 0)
			append_string_array(w, "partitions", 10, ev->partitions, ev->npartitions);
		bson_close(w, doc);
		return;
	}
	if (ev->row != NULL && has_parent(table, ev->row))
		in = position_document(table, ev->row, omit_nulls);
	if ((ev->op == BSON_CHANGE_DELETE || ev->op == BSON_CHANGE_UPDATE) &&
		ev->old_identity != NULL && has_parent(table, ev->old_identity))
	{
		from = position_document(table, ev->old_identity, omit_nulls);
		if (in != NULL && VARSIZE(from) == VARSIZE(in) &&
			memcmp(VARDATA(from), VARDATA(in), VARSIZE(in) - VARHDRSZ) == 0)
			from = NULL;
	}
	if (from != NULL)
	{
		bson_key(w, BSON_TYPE_DOCUMENT, "embeddedFrom", 12, VARSIZE(from) - VARHDRSZ);
		bson_put_raw(w, VARDATA(from), VARSIZE(from) - VARHDRSZ);
	}
	if (in != NULL)
	{
		Size		doc = bson_append_document_begin(w, "embeddedIn", 10);
		Size		element;
		bool		partial = has_missing(ev->row, table->tupdesc->natts);

		/* the position's elements, without its document's frame */
		bson_put_raw(w, VARDATA(in) + 4, VARSIZE(in) - VARHDRSZ - 5);
		element = bson_append_document_begin(w, "element", 7);
		bson_row_append_columns(w, table, ev->row, table->embed->included, omit_nulls);
		bson_close(w, element);
		/*
		 * values the WAL left out (TOASTed, unchanged): the element's own
		 * are kept, those named here
		 */
		if (partial)
		{
			const char **names = palloc(sizeof(char *) * Max(table->tupdesc->natts, 1));
			int			n = 0;

			for (int i = 0; i < table->tupdesc->natts; i++)
				if (ev->row->missing[i] && table->embed->included[i])
					names[n++] = NameStr(TupleDescAttr(table->tupdesc, i)->attname);
			bson_append_bool(w, "partial", 7, true);
			append_string_array(w, "unchangedFields", 15, names, n);
			pfree(names);
		}
		if (table->nembedded > 0)
			append_embedded_fields_shape(w, "elementFields", 13, table, omit_nulls);
		bson_close(w, doc);
	}
}

bytea *
bson_change_event(const BsonChangeEvent *ev, const BsonChangeTxn *txn,
				  const BsonChangeOptions *opts)
{
	const BsonChangeTable *table = ev->table;
	BsonWriter	w;
	Size		doc;

	bson_writer_init(&w, 256 + table->nslen + (ev->key ? 2 * ev->key->len : 0));
	/* the plugin holds events to its own limit, max-event-size, by splitting */
	w.max_size = (Size) BSON_MAX_DOCUMENT_SIZE;
	doc = bson_open(&w);
	append_head(&w, ev->op, txn);
	bson_put_raw(&w, table->ns, table->nslen);

	if (ev->key && ev->op != BSON_CHANGE_TRUNCATE)
	{
		Size		dk = bson_append_document_begin(&w, "documentKey", 11);

		bson_put_raw(&w, ev->key->bytes, ev->key->len);
		bson_close(&w, dk);
	}

	switch (ev->op)
	{
		case BSON_CHANGE_INSERT:
			append_row_document(&w, "fullDocument", 12, table, ev->key, ev->row,
								opts->omit_nulls);
			if (ev->after_key_change && has_missing(ev->row, table->tupdesc->natts))
				append_unchanged_fields(&w, table, ev->row);
			break;
		case BSON_CHANGE_REPLACE:
			append_row_document(&w, "fullDocument", 12, table, ev->key, ev->row,
								opts->omit_nulls);
			break;
		case BSON_CHANGE_UPDATE:
			/* never a document with a value left out as if it were not there */
			if (opts->full_document && !has_missing(ev->row, table->tupdesc->natts))
				append_row_document(&w, "fullDocument", 12, table, ev->key, ev->row,
									opts->omit_nulls);
			append_update_description(&w, table, ev, opts->omit_nulls);
			break;
		case BSON_CHANGE_TRUNCATE:
			if (ev->npartitions > 0)
			{
				append_string_array(&w, "partitions", 10, ev->partitions,
									ev->npartitions);
				if (ev->partition_filter != NULL)
				{
					bson_key(&w, BSON_TYPE_DOCUMENT, "partitionFilter", 15,
							 ev->partition_filter_len);
					bson_put_raw(&w, ev->partition_filter, ev->partition_filter_len);
				}
			}
			break;
		case BSON_CHANGE_DELETE:
			break;
		case BSON_CHANGE_MODIFY:
		case BSON_CHANGE_DROP:
		case BSON_CHANGE_HEARTBEAT:
			elog(ERROR, "a schema event or a heartbeat is written by a function of its own");
	}

	if (opts->before_change && ev->old &&
		(ev->op == BSON_CHANGE_UPDATE || ev->op == BSON_CHANGE_DELETE))
		append_row_document(&w, "fullDocumentBeforeChange", 24, table, ev->key,
							ev->old, opts->omit_nulls);

	/* rows embedded in a parent's document, and a parent's embedded fields */
	if (table->embed != NULL)
		append_embedded(&w, ev, opts->omit_nulls);
	else if (table->nembedded > 0 && ev->op != BSON_CHANGE_TRUNCATE)
		append_embedded_fields_shape(&w, "embeddedFields", 14, table, opts->omit_nulls);

	bson_append_int64(&w, "txnNumber", 9, (int64) txn->xid);
	bson_close(&w, doc);
	return bson_writer_finish(&w);
}
