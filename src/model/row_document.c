/*
 * row_document.c
 *		bson_document(rec record, omit_nulls boolean, partition_root
 *		boolean) returns bytea: the MongoDB document a table's row becomes,
 *		as table_model.h defines it and as the change events' fullDocument
 *		writes it: _id (the key) first, then the columns.
 *
 * The table is the row type's; its model (column mapping, key, a
 * partition's map onto its root) is worked out once per query and kept in
 * fn_extra.
 */
#include "bson_compat.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "change_to_bson.h"
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
} DocumentCache;

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
	/* the setting may change between calls; the cache is the query's */
	cache->model.unmappable = (BsonUnmappable) bson_unmappable_values;
	PG_RETURN_BYTEA_P(bson_row_document(&cache->model, row, omit_nulls));
}
