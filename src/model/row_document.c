/*
 * row_document.c
 *		bson_document(rec record, omit_nulls boolean, partition_root
 *		boolean) returns bytea: the MongoDB document a table's row becomes,
 *		as table_model.h defines it and as the change events' fullDocument
 *		writes it: _id (the key) first, then the columns.
 *
 * bson_embedded_document(rec, fields bytea[], omit_nulls, partition_root)
 * is the same document with its embedded rows given (embedding.h): the
 * queries of bson_collections() read them for all rows at once.
 * bson_document reads those of its one row itself, with the same
 * expressions.
 *
 * The table is the row type's; its model (column mapping, key, a
 * partition's map onto its root, the declarations of what it embeds) is
 * worked out once per query and kept in fn_extra.
 */
#include "bson_compat.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "change_to_bson.h"
#include "embedding.h"
#include "table_model.h"

typedef struct DocumentCache
{
	Oid			typid;			/* the row type it was worked out for */
	bool		partition_root;
	MemoryContext mcxt;			/* everything below */
	TupleDesc	own;			/* the row type's columns */
	int		   *column_map;		/* a partition read as its root: see
								 * bson_partition_column_map; else NULL */
	BsonChangeTable model;
	BsonChangeRow row;			/* each row deformed here, no allocation */
	BsonChangeRow root_row;		/* with column_map: the row as the root's */
	List	   *embeddings;		/* every declaration */
	List	   *into;			/* those into the table, by field */
	SPIPlanPtr	fields_plan;	/* bson_document: one row's embedded fields */
	bool		fields_omit_nulls;	/* what fields_plan was made for */
} DocumentCache;

/* The plan goes with the query's cache */
static void
free_fields_plan(void *arg)
{
	DocumentCache *cache = (DocumentCache *) arg;

	if (cache->fields_plan != NULL)
		SPI_freeplan(cache->fields_plan);
	cache->fields_plan = NULL;
}

static DocumentCache *
document_cache(FmgrInfo *flinfo, Oid typid, bool partition_root)
{
	DocumentCache *cache = (DocumentCache *) flinfo->fn_extra;
	Oid			relid;
	Oid			table;
	Relation	rel;
	Relation	model;
	MemoryContext old;

	if (cache != NULL && cache->typid == typid &&
		cache->partition_root == partition_root)
		return cache;
	relid = get_typ_typrelid(typid);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("bson_document needs a row of a table, not a value of type %s",
						format_type_be(typid)),
				 errhint("Pass the table's row, as in SELECT bson_document(t) FROM t; row_to_bson converts any record.")));

	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(DocumentCache));
		cache->mcxt = AllocSetContextCreate(flinfo->fn_mcxt, "bson_document",
											ALLOCSET_SMALL_SIZES);
		flinfo->fn_extra = cache;
	}
	else
		MemoryContextReset(cache->mcxt);
	/* the reset ran the callback: a new one for the new model */
	{
		MemoryContextCallback *cb = MemoryContextAllocZero(cache->mcxt,
														   sizeof(MemoryContextCallback));

		cb->func = free_fields_plan;
		cb->arg = cache;
		MemoryContextRegisterResetCallback(cache->mcxt, cb);
	}
	cache->typid = InvalidOid;
	cache->partition_root = partition_root;
	cache->column_map = NULL;
	memset(&cache->model, 0, sizeof(cache->model));

	rel = relation_open(relid, AccessShareLock);
	old = MemoryContextSwitchTo(cache->mcxt);
	cache->own = CreateTupleDescCopy(RelationGetDescr(rel));
	cache->model.name = bson_table_name(relid);
	cache->row.values = palloc(sizeof(Datum) * Max(cache->own->natts, 1));
	cache->row.nulls = palloc(sizeof(bool) * Max(cache->own->natts, 1));
	cache->row.missing = NULL;
	MemoryContextSwitchTo(old);
	table = bson_collection_table(relid, partition_root, NULL);
	model = table == relid ? rel : relation_open(table, AccessShareLock);
	if (bson_table_model_build(&cache->model, model, cache->mcxt))
		bson_warn_id_column_left_out(bson_table_name(table));
	old = MemoryContextSwitchTo(cache->mcxt);
	cache->embeddings = bson_embeddings_for(bson_embeddings_load(get_func_namespace(flinfo->fn_oid)),
											partition_root);
	cache->into = bson_embeddings_into(cache->embeddings, table);
	MemoryContextSwitchTo(old);
	cache->model.policy_name = "bson_out.unmappable_values";
	if (model != rel)
	{
		int			root_natts = RelationGetDescr(model)->natts;

		cache->column_map = bson_partition_column_map(RelationGetDescr(rel),
													  RelationGetDescr(model),
													  cache->mcxt);
		cache->root_row.values = MemoryContextAlloc(cache->mcxt,
													sizeof(Datum) * Max(root_natts, 1));
		cache->root_row.nulls = MemoryContextAlloc(cache->mcxt,
												   sizeof(bool) * Max(root_natts, 1));
		relation_close(model, NoLock);
	}
	/* the locks are kept until the transaction ends, as the query's own */
	relation_close(rel, NoLock);
	cache->typid = typid;
	return cache;
}

/* The row, deformed (as its root's, for a partition) */
static BsonChangeRow *
deform(DocumentCache *cache, HeapTupleHeader rec)
{
	HeapTupleData tuple;
	BsonChangeRow *row = &cache->row;

	tuple.t_len = HeapTupleHeaderGetDatumLength(rec);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = rec;
	heap_deform_tuple(&tuple, cache->own, row->values, row->nulls);
	if (cache->column_map != NULL)
	{
		bson_row_to_root(&cache->root_row, row, cache->column_map,
						 cache->model.tupdesc->natts);
		row = &cache->root_row;
	}
	return row;
}

/*
 * The document of one row with its embedded rows, read by the same
 * expressions as bson_collections()' queries, filtered by its key
 */
static bytea *
document_with_fields(FunctionCallInfo fcinfo, DocumentCache *cache,
					 BsonChangeRow *row, bool omit_nulls)
{
	BsonEmbedding *first = (BsonEmbedding *) linitial(cache->into);
	int			nkey = first->nfk;
	Datum	   *args = palloc(sizeof(Datum) * nkey);
	char	   *argnulls = palloc(nkey + 1);
	MemoryContext caller = CurrentMemoryContext;
	Datum		fields;
	bool		isnull;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	BsonWriter	w;
	Size		doc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (cache->fields_plan == NULL || cache->fields_omit_nulls != omit_nulls)
	{
		Oid		   *types = palloc(sizeof(Oid) * nkey);
		const char *schema = quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)));
		SPIPlanPtr	plan;

		for (int i = 0; i < nkey; i++)
			types[i] = TupleDescAttr(cache->model.tupdesc, first->ref[i] - 1)->atttypid;
		plan = SPI_prepare(bson_embedded_fields_query(cache->embeddings, first->parent, schema,
													  omit_nulls, cache->partition_root),
						   nkey, types);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		free_fields_plan(cache);
		cache->fields_plan = plan;
		cache->fields_omit_nulls = omit_nulls;
	}
	for (int i = 0; i < nkey; i++)
	{
		args[i] = row->values[first->ref[i] - 1];
		argnulls[i] = row->nulls[first->ref[i] - 1] ? 'n' : ' ';
	}
	argnulls[nkey] = '\0';
	if (SPI_execute_plan(cache->fields_plan, args, argnulls, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "the embedded fields' query of %s gave no row", cache->model.name);
	fields = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	Assert(!isnull);
	fields = SPI_datumTransfer(fields, false, -1);
	SPI_finish();
	MemoryContextSwitchTo(caller);

	deconstruct_array(DatumGetArrayTypeP(fields), BYTEAOID, -1, false, TYPALIGN_INT,
					  &values, &nulls, &n);
	doc = bson_row_document_open(&w, &cache->model, row, omit_nulls);
	bson_append_embedded_fields(&w, cache->into, values, nulls, n, omit_nulls);
	bson_close(&w, doc);
	return bson_writer_finish(&w);
}

PG_FUNCTION_INFO_V1(bson_document);
Datum
bson_document(PG_FUNCTION_ARGS)
{
	HeapTupleHeader rec = PG_GETARG_HEAPTUPLEHEADER(0);
	bool		omit_nulls = PG_GETARG_BOOL(1);
	bool		partition_root = PG_GETARG_BOOL(2);
	DocumentCache *cache = document_cache(fcinfo->flinfo,
										  HeapTupleHeaderGetTypeId(rec),
										  partition_root);
	BsonChangeRow *row = deform(cache, rec);

	/* the setting may change between calls; the cache is the query's */
	cache->model.unmappable = (BsonUnmappable) bson_unmappable_values;
	if (cache->into != NIL)
		PG_RETURN_BYTEA_P(document_with_fields(fcinfo, cache, row, omit_nulls));
	PG_RETURN_BYTEA_P(bson_row_document(&cache->model, row, omit_nulls));
}

PG_FUNCTION_INFO_V1(bson_embedded_document);
/* bson_embedded_document(rec, fields bytea[], omit_nulls, partition_root) */
Datum
bson_embedded_document(PG_FUNCTION_ARGS)
{
	HeapTupleHeader rec = PG_GETARG_HEAPTUPLEHEADER(0);
	ArrayType  *fields = PG_GETARG_ARRAYTYPE_P(1);
	bool		omit_nulls = PG_GETARG_BOOL(2);
	bool		partition_root = PG_GETARG_BOOL(3);
	DocumentCache *cache = document_cache(fcinfo->flinfo,
										  HeapTupleHeaderGetTypeId(rec),
										  partition_root);
	BsonChangeRow *row = deform(cache, rec);
	Datum	   *values;
	bool	   *nulls;
	int			n;
	BsonWriter	w;
	Size		doc;

	cache->model.unmappable = (BsonUnmappable) bson_unmappable_values;
	deconstruct_array(fields, BYTEAOID, -1, false, TYPALIGN_INT, &values, &nulls, &n);
	doc = bson_row_document_open(&w, &cache->model, row, omit_nulls);
	bson_append_embedded_fields(&w, cache->into, values, nulls, n, omit_nulls);
	bson_close(&w, doc);
	PG_RETURN_BYTEA_P(bson_writer_finish(&w));
}
