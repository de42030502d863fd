/*
 * embedded_document.c
 *		A parent's document with its embedded rows (embedding.h): the
 *		queries that read them, their elements (bson_embedded_element), the
 *		arrays they make (the aggregate bson_array_agg) and where those go in
 *		the parent's document.
 *
 * Every document with embedded rows is written by one query, generated
 * here from the declarations, that reads each child table once:
 *
 *	SELECT bson_embedded_document(t.*, ARRAY[e1.v]::bytea[], ...)
 *	FROM ONLY public.orders t
 *	LEFT JOIN (SELECT c1.order_id AS k1,
 *					  bson_array_agg(bson_embedded_element(c1.*, ...)
 *									 ORDER BY c1.line_no) AS v
 *			   FROM ONLY public.order_lines c1
 *			   WHERE c1.order_id IS NOT NULL GROUP BY c1.order_id) e1
 *	  ON e1.k1 = t.id
 *
 * a child's own children joined the same way inside its subquery.  One
 * document's fields (bson_document of one row) are read by the same
 * expressions filtered by its key.  Elements are in their key's order with
 * text compared as COLLATE "C" (bytes), as MongoDB compares strings.
 */
#include "embedding.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "bson_reader.h"
#include "change_to_bson.h"
#include "table_model.h"

/* FROM ONLY a table, or a partitioned table with its partitions */
static const char *
from_clause(Oid relid)
{
	return psprintf("%s%s", get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE ? "" : "ONLY ",
					bson_table_name(relid));
}

static const char *
column(Oid relid, AttrNumber att)
{
	return quote_identifier(get_attname(relid, att, false));
}

static void append_element_expr(StringInfo q, List *all, const BsonEmbedding *e,
								int depth, const char *schema, bool omit_nulls,
								bool partition_root, bool joined);

/* ORDER BY the element's key, text as bytes */
static void
append_element_order(StringInfo q, const BsonEmbedding *e, int depth)
{
	appendStringInfoString(q, " ORDER BY ");
	for (int i = 0; i < e->nelement_key; i++)
	{
		Oid			type = getBaseType(get_atttype(e->child, e->element_key[i]));

		appendStringInfo(q, "%sc%d.%s%s", i > 0 ? ", " : "", depth,
						 column(e->child, e->element_key[i]),
						 type == TEXTOID || type == VARCHAROID ? " COLLATE \"C\"" : "");
	}
}

/*
 * The subquery that gives, for each parent, e's value (v) by the parent's
 * key (k1..kn): every child of e grouped by its foreign key.
 */
static void
append_grouped(StringInfo q, List *all, const BsonEmbedding *e, int depth,
			   const char *schema, bool omit_nulls, bool partition_root)
{
	appendStringInfoString(q, "SELECT ");
	for (int i = 0; i < e->nfk; i++)
		appendStringInfo(q, "c%d.%s AS k%d, ", depth, column(e->child, e->fk[i]), i + 1);
	if (e->array)
	{
		appendStringInfo(q, "%s.bson_array_agg(", schema);
		append_element_expr(q, all, e, depth, schema, omit_nulls, partition_root, true);
		append_element_order(q, e, depth);
		appendStringInfoString(q, ")");
	}
	else
		append_element_expr(q, all, e, depth, schema, omit_nulls, partition_root, true);
	appendStringInfo(q, " AS v FROM %s c%d", from_clause(e->child), depth);

	/* the child's own children, each grouped once */
	{
		List	   *below = bson_embeddings_into(all, e->child);
		ListCell   *lc;

		foreach(lc, below)
		{
			BsonEmbedding *g = (BsonEmbedding *) lfirst(lc);
			int			n = foreach_current_index(lc) + 1;

			appendStringInfoString(q, " LEFT JOIN (");
			append_grouped(q, all, g, depth + 1, schema, omit_nulls, partition_root);
			appendStringInfo(q, ") e%d_%d ON ", depth, n);
			for (int i = 0; i < g->nfk; i++)
				appendStringInfo(q, "%se%d_%d.k%d = c%d.%s", i > 0 ? " AND " : "",
								 depth, n, i + 1, depth, column(e->child, g->ref[i]));
		}
	}
	/* MATCH SIMPLE: a row with a NULL in its foreign key has no parent */
	appendStringInfoString(q, " WHERE ");
	for (int i = 0; i < e->nfk; i++)
		appendStringInfo(q, "%sc%d.%s IS NOT NULL", i > 0 ? " AND " : "", depth,
						 column(e->child, e->fk[i]));
	if (e->array)
	{
		appendStringInfoString(q, " GROUP BY ");
		for (int i = 0; i < e->nfk; i++)
			appendStringInfo(q, "%sc%d.%s", i > 0 ? ", " : "", depth,
							 column(e->child, e->fk[i]));
	}
}

/*
 * The value of e for the one parent that filter (SQL, over c<depth>)
 * selects: an array's elements aggregated, or the one document.
 */
static void
append_filtered(StringInfo q, List *all, const BsonEmbedding *e, int depth,
				const char *schema, bool omit_nulls, bool partition_root, const char *filter)
{
	appendStringInfoString(q, "(SELECT ");
	if (e->array)
	{
		appendStringInfo(q, "%s.bson_array_agg(", schema);
		append_element_expr(q, all, e, depth, schema, omit_nulls, partition_root, false);
		append_element_order(q, e, depth);
		appendStringInfoString(q, ")");
	}
	else
		append_element_expr(q, all, e, depth, schema, omit_nulls, partition_root, false);
	appendStringInfo(q, " FROM %s c%d WHERE %s)", from_clause(e->child), depth, filter);
}

/*
 * bson_embedded_element(c<depth>.*, ARRAY[its fields]), the fields by the
 * joins of append_grouped, or by correlated subqueries
 */
static void
append_element_expr(StringInfo q, List *all, const BsonEmbedding *e, int depth,
					const char *schema, bool omit_nulls, bool partition_root, bool joined)
{
	List	   *below = bson_embeddings_into(all, e->child);
	ListCell   *lc;

	check_stack_depth();
	appendStringInfo(q, "%s.bson_embedded_element(c%d.*, ARRAY[", schema, depth);
	foreach(lc, below)
	{
		BsonEmbedding *g = (BsonEmbedding *) lfirst(lc);
		int			n = foreach_current_index(lc) + 1;

		if (n > 1)
			appendStringInfoString(q, ", ");
		if (joined)
			appendStringInfo(q, "e%d_%d.v", depth, n);
		else
		{
			StringInfoData filter;

			initStringInfo(&filter);
			for (int i = 0; i < g->nfk; i++)
				appendStringInfo(&filter, "%sc%d.%s = c%d.%s", i > 0 ? " AND " : "",
								 depth + 1, column(g->child, g->fk[i]),
								 depth, column(e->child, g->ref[i]));
			append_filtered(q, all, g, depth + 1, schema, omit_nulls, partition_root, filter.data);
		}
	}
	appendStringInfo(q, "]::bytea[], %s, %s)", omit_nulls ? "true" : "false",
					 partition_root ? "true" : "false");
}

char *
bson_embedded_query(List *embeddings, Oid table, const char *source,
					const char *schema, bool omit_nulls, bool partition_root)
{
	List	   *into = bson_embeddings_into(embeddings, table);
	StringInfoData q;
	ListCell   *lc;

	initStringInfo(&q);
	appendStringInfo(&q, "SELECT %s.bson_embedded_document(t.*, ARRAY[", schema);
	foreach(lc, into)
		appendStringInfo(&q, "%se0_%d.v", foreach_current_index(lc) > 0 ? ", " : "",
						 foreach_current_index(lc) + 1);
	appendStringInfo(&q, "]::bytea[], %s, %s) FROM ONLY %s t",
					 omit_nulls ? "true" : "false", partition_root ? "true" : "false",
					 source);
	foreach(lc, into)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);
		int			n = foreach_current_index(lc) + 1;

		appendStringInfoString(&q, " LEFT JOIN (");
		append_grouped(&q, embeddings, e, 1, schema, omit_nulls, partition_root);
		appendStringInfo(&q, ") e0_%d ON ", n);
		for (int i = 0; i < e->nfk; i++)
			appendStringInfo(&q, "%se0_%d.k%d = t.%s", i > 0 ? " AND " : "", n, i + 1,
							 column(table, e->ref[i]));
	}
	return q.data;
}

char *
bson_embedded_fields_query(List *embeddings, Oid table, const char *schema,
						   bool omit_nulls, bool partition_root)
{
	List	   *into = bson_embeddings_into(embeddings, table);
	StringInfoData q;
	ListCell   *lc;

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT ARRAY[");
	foreach(lc, into)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);
		StringInfoData filter;

		initStringInfo(&filter);
		for (int i = 0; i < e->nfk; i++)
			appendStringInfo(&filter, "%sc1.%s = $%d", i > 0 ? " AND " : "",
							 column(e->child, e->fk[i]), i + 1);
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&q, ", ");
		append_filtered(&q, embeddings, e, 1, schema, omit_nulls, partition_root, filter.data);
	}
	appendStringInfoString(&q, "]::bytea[]");
	return q.data;
}

void
bson_append_embedded_fields(BsonWriter *w, List *into, Datum *values,
							bool *nulls, int nvalues, bool omit_nulls)
{
	ListCell   *lc;

	if (nvalues != list_length(into))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d embedded fields given where the declarations have %d",
						nvalues, list_length(into)),
				 errdetail("The query was made for other declarations than the current ones."),
				 errhint("Ask bson_collections() for the query again.")));
	foreach(lc, into)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);
		int			i = foreach_current_index(lc);
		int			len = strlen(e->field);
		bytea	   *bytes;

		if (nulls[i])
		{
			/* no child: an empty array, or no document */
			if (e->array)
			{
				Size		arr = bson_append_array_begin(w, e->field, len);

				bson_close(w, arr);
			}
			else if (!omit_nulls)
				bson_append_null(w, e->field, len);
			continue;
		}
		bytes = DatumGetByteaPP(values[i]);
		bson_key(w, e->array ? BSON_TYPE_ARRAY : BSON_TYPE_DOCUMENT, e->field, len,
				 VARSIZE_ANY_EXHDR(bytes));
		bson_put_raw(w, VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes));
	}
}

/* The JSON shape of the embeddings into table, below it included */
static void
append_shape(StringInfo s, List *embeddings, Oid table)
{
	List	   *into = bson_embeddings_into(embeddings, table);
	ListCell   *lc;

	check_stack_depth();
	appendStringInfoChar(s, '[');
	foreach(lc, into)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);

		if (foreach_current_index(lc) > 0)
			appendStringInfoChar(s, ',');
		appendStringInfoString(s, "{\"field\":");
		escape_json(s, e->field);
		appendStringInfoString(s, ",\"table\":");
		escape_json(s, bson_table_name(e->child));
		appendStringInfo(s, ",\"shape\":\"%s\",\"parent_key\":[",
						 e->array ? "array" : "document");
		for (int i = 0; i < e->nfk; i++)
		{
			if (i > 0)
				appendStringInfoChar(s, ',');
			escape_json(s, get_attname(e->child, e->fk[i], false));
		}
		appendStringInfoString(s, "],\"element_key\":[");
		for (int i = 0; i < e->nelement_key; i++)
		{
			if (i > 0)
				appendStringInfoChar(s, ',');
			escape_json(s, get_attname(e->child, e->element_key[i], false));
		}
		appendStringInfo(s, "],\"keep_collection\":%s,\"fields\":",
						 e->keep_collection ? "true" : "false");
		append_shape(s, embeddings, e->child);
		/* its columns: a DDL of the child changes the parent's documents */
		{
			Relation	rel = HistoricSnapshotActive() ? RelationIdGetRelation(e->child) :
				relation_open(e->child, AccessShareLock);
			BsonChangeTable model = {0};

			if (!RelationIsValid(rel))
				elog(ERROR, "could not open relation with OID %u", e->child);
			bson_table_model_build(&model, rel, CurrentMemoryContext);
			if (HistoricSnapshotActive())
				RelationClose(rel);
			else
				relation_close(rel, NoLock);
			appendStringInfo(s, ",\"model\":%s", bson_table_shape(&model));
		}
		appendStringInfoChar(s, '}');
	}
	appendStringInfoChar(s, ']');
}

char *
bson_embedded_shape(List *embeddings, Oid table)
{
	StringInfoData s;

	if (bson_embeddings_into(embeddings, table) == NIL)
		return NULL;
	initStringInfo(&s);
	append_shape(&s, embeddings, table);
	return s.data;
}

/* What bson_embedded_element keeps of a row type, for a query */
typedef struct ElementCache
{
	Oid			typid;
	bool		partition_root;
	MemoryContext mcxt;
	TupleDesc	desc;
	BsonChangeTable model;
	BsonEmbedding *embedding;
	List	   *below;			/* its own embedded fields */
	BsonChangeRow row;
} ElementCache;

static ElementCache *
element_cache(FunctionCallInfo fcinfo, Oid typid, bool partition_root)
{
	ElementCache *cache = (ElementCache *) fcinfo->flinfo->fn_extra;
	Oid			relid;
	Relation	rel;
	MemoryContext old;
	List	   *all;

	if (cache != NULL && cache->typid == typid && cache->partition_root == partition_root)
		return cache;
	relid = get_typ_typrelid(typid);
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ElementCache));
		cache->mcxt = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt,
											"bson_embedded_element",
											ALLOCSET_SMALL_SIZES);
		fcinfo->flinfo->fn_extra = cache;
	}
	else
		MemoryContextReset(cache->mcxt);
	cache->typid = InvalidOid;
	memset(&cache->model, 0, sizeof(cache->model));
	old = MemoryContextSwitchTo(cache->mcxt);
	all = bson_embeddings_for(bson_embeddings_load(get_func_namespace(fcinfo->flinfo->fn_oid)),
							  partition_root);
	cache->embedding = OidIsValid(relid) ? bson_embedding_of(all, relid) : NULL;
	if (cache->embedding == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("bson_embedded_element needs a row of an embedded table, not a value of type %s",
						format_type_be(typid)),
				 errhint("bson_collections() gives the queries that call it; bson_embed() declares an embedding.")));
	cache->below = bson_embeddings_into(all, relid);
	rel = relation_open(relid, AccessShareLock);
	cache->desc = CreateTupleDescCopy(RelationGetDescr(rel));
	cache->model.name = bson_table_name(relid);
	cache->row.values = palloc(sizeof(Datum) * Max(cache->desc->natts, 1));
	cache->row.nulls = palloc(sizeof(bool) * Max(cache->desc->natts, 1));
	cache->row.missing = NULL;
	MemoryContextSwitchTo(old);
	bson_table_model_build(&cache->model, rel, cache->mcxt);
	cache->model.policy_name = "bson_out.unmappable_values";
	relation_close(rel, NoLock);
	if (cache->embedding->natts != cache->desc->natts)
		elog(ERROR, "the columns of table %s changed during the query",
			 cache->model.name);
	cache->typid = typid;
	cache->partition_root = partition_root;
	return cache;
}

PG_FUNCTION_INFO_V1(bson_embedded_element);
/*
 * bson_embedded_element(rec record, fields bytea[], omit_nulls boolean,
 * partition_root boolean):
 * an embedded row as its parent's document holds it
 */
Datum
bson_embedded_element(PG_FUNCTION_ARGS)
{
	HeapTupleHeader rec = PG_GETARG_HEAPTUPLEHEADER(0);
	ArrayType  *fields = PG_GETARG_ARRAYTYPE_P(1);
	bool		omit_nulls = PG_GETARG_BOOL(2);
	bool		partition_root = PG_GETARG_BOOL(3);
	ElementCache *cache = element_cache(fcinfo, HeapTupleHeaderGetTypeId(rec), partition_root);
	HeapTupleData tuple;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	BsonWriter	w;
	Size		doc;

	tuple.t_len = HeapTupleHeaderGetDatumLength(rec);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = rec;
	heap_deform_tuple(&tuple, cache->desc, cache->row.values, cache->row.nulls);
	cache->model.unmappable = (BsonUnmappable) bson_unmappable_values;
	deconstruct_array(fields, BYTEAOID, -1, false, TYPALIGN_INT, &values, &nulls, &n);

	bson_writer_init(&w, 128);
	doc = bson_open(&w);
	bson_row_append_columns(&w, &cache->model, &cache->row, cache->embedding->included,
							omit_nulls);
	bson_append_embedded_fields(&w, cache->below, values, nulls, n, omit_nulls);
	bson_close(&w, doc);
	PG_RETURN_BYTEA_P(bson_writer_finish(&w));
}

/* bson_array_agg's state: the array document being written */
typedef struct ArrayAggState
{
	BsonWriter	w;
	Size		start;
	uint32		n;
} ArrayAggState;

PG_FUNCTION_INFO_V1(bson_array_agg_transfn);
Datum
bson_array_agg_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	MemoryContext old;
	ArrayAggState *state;
	bytea	   *doc;
	Size		len;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "bson_array_agg_transfn called in non-aggregate context");
	state = PG_ARGISNULL(0) ? NULL : (ArrayAggState *) PG_GETARG_POINTER(0);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("an element of bson_array_agg cannot be null"),
				 errdetail("Each element is one BSON document.")));
	doc = PG_GETARG_BYTEA_PP(1);
	len = VARSIZE_ANY_EXHDR(doc);
	if (len < 5 || bsonr_u32((const uint8_t *) VARDATA_ANY(doc)) != len ||
		VARDATA_ANY(doc)[len - 1] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an element of bson_array_agg is not a BSON document"),
				 errdetail("Its length does not match its bytes.")));
	old = MemoryContextSwitchTo(aggcontext);
	if (state == NULL)
	{
		state = palloc(sizeof(ArrayAggState));
		bson_writer_init(&state->w, 1024);
		state->start = bson_open(&state->w);
		state->n = 0;
	}
	CHECK_FOR_INTERRUPTS();
	bson_index_key(&state->w, BSON_TYPE_DOCUMENT, state->n++, len);
	bson_put_raw(&state->w, VARDATA_ANY(doc), len);
	MemoryContextSwitchTo(old);
	PG_RETURN_POINTER(state);
}

PG_FUNCTION_INFO_V1(bson_array_agg_finalfn);
/* The array as a document of its own, the state left as it is */
Datum
bson_array_agg_finalfn(PG_FUNCTION_ARGS)
{
	ArrayAggState *state;
	Size		len;
	bytea	   *result;
	char	   *p;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (ArrayAggState *) PG_GETARG_POINTER(0);
	len = (state->w.pos - state->w.buf) - state->start + 1;
	if (len > state->w.max_size)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("an embedded array of %u elements would be %zu bytes, more than the largest document (%zu bytes)",
						state->n, len, state->w.max_size)));
	result = palloc(VARHDRSZ + len);
	SET_VARSIZE(result, VARHDRSZ + len);
	p = VARDATA(result);
	memcpy(p, state->w.buf + state->start, len - 1);
	p[len - 1] = '\0';
	bson_put_uint32_at(p, (uint32) len);
	PG_RETURN_BYTEA_P(result);
}
