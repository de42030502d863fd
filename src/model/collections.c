/*
 * collections.c
 *		bson_collections(include_tables, exclude_tables, ns_db,
 *		include_schema, partition_root, omit_nulls): the collections a table
 *		selection gives, one row per table that holds their rows, with the
 *		query that reads its documents and the collection's metadata.
 *
 * This is what the first copy of pg_bsonstream and pg_bsonexport --out-dir
 * ask, so that they select, name and write exactly what the output plugin
 * streams: the filters are table_patterns.c's, the names and the documents
 * table_model.h's.  What no collection can hold is an error here, before
 * anything is written: two tables that take one collection name
 * (collection_rivals.h), equal rows of a table whose _id is the whole row
 * (duplicate_ids.h).
 *
 * A table whose rows are embedded in their parent's documents (embedding.h)
 * is no collection of its own unless its declaration keeps one; its
 * parent's query reads its rows with the parent's, and the "embedded"
 * column says where they go.
 */
#include "bson_compat.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "citus_tables.h"
#include "collection_metadata.h"
#include "collection_rivals.h"
#include "duplicate_ids.h"
#include "embedding.h"
#include "table_model.h"
#include "table_patterns.h"

#define NCOLUMNS 8

typedef struct Source
{
	Oid			relid;			/* read by the query */
	Oid			table;			/* the collection's table */
	char	   *coll;
	char	   *name;			/* relid's qualified name, for the order */
	int64		blocks;			/* its size once locked; -1: dropped */
} Source;

/* The patterns of an array of lists (NULL or empty: none) */
static List *
patterns_of(ArrayType *lists, const char *argname)
{
	Datum	   *items;
	bool	   *nulls;
	int			n;
	List	   *patterns = NIL;
	char	   *errmsg_text = psprintf("invalid value for %s of bson_collections", argname);

	if (lists == NULL)
		return NIL;
	deconstruct_array(lists, TEXTOID, -1, false, TYPALIGN_INT, &items, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s", errmsg_text),
					 errdetail("An element of the array is NULL; each element is a list of schema.table patterns.")));
		patterns = bson_table_patterns_parse(patterns, TextDatumGetCString(items[i]),
											 errmsg_text);
	}
	return patterns;
}

static int
source_cmp(const void *a, const void *b)
{
	const Source *x = (const Source *) a;
	const Source *y = (const Source *) b;
	int			c = strcmp(x->coll, y->coll);

	return c != 0 ? c : strcmp(x->name, y->name);
}

/*
 * The tables that can hold rows and be streamed: regular tables and
 * partitions, logged (the schemas are bson_table_selected's to judge).
 * pg_class is scanned directly, not queried: a planner hook may hide some
 * of its rows from queries (Citus hides its shards), and they are the rows
 * a Citus node's change stream carries.
 */
static Oid *
candidate_tables(int *n)
{
	Relation	rel = table_open(RelationRelationId, AccessShareLock);
	/* the tables as the transaction sees them, as a query of pg_class would */
	Snapshot	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, snapshot, 0, NULL);
	HeapTuple	tuple;
	int			size = 256;
	Oid		   *oids = palloc(sizeof(Oid) * size);

	*n = 0;
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_class c = (Form_pg_class) GETSTRUCT(tuple);

		CHECK_FOR_INTERRUPTS();
		if (c->relkind != RELKIND_RELATION || c->relpersistence != RELPERSISTENCE_PERMANENT)
			continue;
		if (*n == size)
		{
			size *= 2;
			oids = repalloc(oids, sizeof(Oid) * size);
		}
		oids[(*n)++] = c->oid;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return oids;
}

/*
 * The collection's metadata, and whether its _id is the whole row: its
 * table's model, worked out in a scratch context
 */
static char *
metadata_of(Oid table, const char *coll, const char *embedded, bool *id_whole_row)
{
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext,
												  "bson_collections metadata",
												  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(scratch);
	Relation	rel = relation_open(table, AccessShareLock);
	BsonChangeTable model = {0};
	char	   *text;

	bson_table_model_build(&model, rel, scratch);
	model.embedded_shape = embedded;
	text = bson_collection_metadata(rel, &model, coll);
	*id_whole_row = model.id_whole_row;
	/* the lock is kept until the transaction ends */
	relation_close(rel, NoLock);
	MemoryContextSwitchTo(old);
	text = pstrdup(text);
	MemoryContextDelete(scratch);
	return text;
}

/* The tables embedded in table's documents, at any depth, may be read */
static void
check_embedded_readable(List *embeddings, Oid table, const char *coll)
{
	List	   *into = bson_embeddings_into(embeddings, table);
	ListCell   *lc;

	check_stack_depth();
	foreach(lc, into)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);

		if (pg_class_aclcheck(e->child, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for table %s", bson_table_name(e->child)),
					 errdetail("Its rows are embedded in the documents of collection %s.", coll),
					 errhint("Grant SELECT on it.")));
		check_embedded_readable(embeddings, e->child, coll);
	}
}

PG_FUNCTION_INFO_V1(bson_collections);
Datum
bson_collections(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *include = patterns_of(PG_ARGISNULL(0) ? NULL : PG_GETARG_ARRAYTYPE_P(0),
									  "include_tables");
	List	   *exclude = patterns_of(PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1),
									  "exclude_tables");
	char	   *db = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	bool		include_schema = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	bool		partition_root = PG_ARGISNULL(4) || PG_GETARG_BOOL(4);
	bool		omit_nulls = !PG_ARGISNULL(5) && PG_GETARG_BOOL(5);
	char	   *schema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	MemoryContext old;
	Oid		   *oids;
	int			ncandidates;
	Source	   *sources;
	int			nsources = 0;
	ListCell   *lc;
	Snapshot	snapshot;
	char	  **read_names;
	List	   *embeddings;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("bson_collections must be called in a FROM clause")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (db == NULL)
		db = get_database_name(MyDatabaseId);
	if (db == NULL || db[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for ns_db of bson_collections"),
				 errdetail("The database name written in ns.db cannot be empty.")));

	embeddings = bson_embeddings_for(bson_embeddings_load(get_func_namespace(fcinfo->flinfo->fn_oid)),
									 partition_root);
	oids = candidate_tables(&ncandidates);
	sources = palloc(sizeof(Source) * Max(ncandidates, 1));
	read_names = palloc(sizeof(char *) * Max(ncandidates, 1));
	for (int i = 0; i < ncandidates; i++)
	{
		Oid			relid = oids[i];
		char	   *relschema;
		char	   *relname;
		Source	   *s;
		Oid			table;
		bool		here;

		CHECK_FOR_INTERRUPTS();
		relschema = get_namespace_name(get_rel_namespace(relid));
		relname = get_rel_name(relid);
		/* dropped since the list was read */
		if (relschema == NULL || relname == NULL)
			continue;
		if (!bson_table_selected(include, exclude, relid, partition_root))
			continue;
		/*
		 * A Citus table's rows are read through the table, which collects
		 * them from every node, or, with bson_out.citus_rows = node, in this
		 * node's shards, as this node's change stream has them.
		 */
		table = bson_collection_table(relid, partition_root, &here);
		if (bson_citus_rows == BSON_CITUS_ROWS_NODE ?
			!here || bson_citus_is_sharded(relid) ||
			(table != relid && bson_citus_is_sharded(table) && !bson_citus_placed_here(relid)) :
			table != relid && bson_citus_is_sharded(table) && !bson_citus_is_sharded(relid))
			continue;
		if (bson_citus_rows == BSON_CITUS_ROWS_NODE && OidIsValid(bson_citus_lookalike(relid)))
		{
			ereport(WARNING,
					(errmsg("table %s is named as a shard of %s, which Citus's metadata does not list",
							quote_qualified_identifier(relschema, relname),
							bson_table_name(bson_citus_lookalike(relid))),
					 errdetail("It is left out of this node's rows: a shard a split replaced holds rows that are elsewhere now, until Citus drops it."),
					 errhint("A table of your own with such a name is streamed under its own name, but not copied here: rename it.")));
			continue;
		}
		/* embedded rows are in their parent's documents */
		{
			BsonEmbedding *e = bson_embedding_of(embeddings, table);

			if (e != NULL && !e->keep_collection)
				continue;
		}
		s = &sources[nsources++];
		s->relid = relid;
		s->table = table;
		s->coll = bson_collection_name(s->table, include_schema);
		s->name = quote_qualified_identifier(relschema, relname);
	}
	qsort(sources, nsources, sizeof(Source), source_cmp);

	foreach(lc, include)
	{
		TablePattern *p = (TablePattern *) lfirst(lc);

		if (!p->used)
			ereport(WARNING,
					(errmsg("include-tables pattern \"%s\" selects no table", p->text),
					 errhint("Patterns are schema.table, * for any run of characters; a partition is selected by its root table's name unless partition_root is off.")));
	}

	/* two tables that take one collection name: in the tables as listed */
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	for (int i = 0; i < nsources; i++)
		if (i == 0 || sources[i].table != sources[i - 1].table)
			bson_check_collection_rivals(sources[i].table, include, exclude,
										 include_schema, partition_root, snapshot);
	UnregisterSnapshot(snapshot);

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	tupdesc = CreateTupleDescCopy(tupdesc);
	store = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(old);

	/* one collection's sources at a time: they are together in the order */
	for (int first = 0, end; first < nsources; first = end)
	{
		Oid			table = sources[first].table;
		char	   *metadata;
		char	   *embedded;
		bool		id_whole_row;
		int			nread = 0;

		for (end = first; end < nsources && sources[end].table == table; end++)
		{
			Source	   *s = &sources[end];
			Relation	rel;

			CHECK_FOR_INTERRUPTS();
			/*
			 * Only tables the user may read are locked and listed: the
			 * others' documents could not be read anyway, so they are an
			 * error here, not a file that is missing later.
			 */
			if (pg_class_aclcheck(s->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied for table %s", s->name),
						 errdetail("Its rows belong to collection %s.", s->coll),
						 errhint("Grant SELECT on it, or leave it out with exclude_tables.")));
			/* the lock keeps the table as it is listed until the transaction ends */
			rel = try_relation_open(s->relid, AccessShareLock);
			s->blocks = -1;		/* dropped since it was listed */
			if (rel == NULL)
				continue;
			s->blocks = (int64) RelationGetNumberOfBlocks(rel);
			relation_close(rel, NoLock);
			read_names[nread++] = s->name;
		}
		if (nread == 0)
			continue;
		check_embedded_readable(embeddings, table, sources[first].coll);
		embedded = bson_embedded_shape(embeddings, table);
		metadata = metadata_of(table, sources[first].coll, embedded, &id_whole_row);
		/* the rows the exports read, as they read them (FROM ONLY each) */
		if (id_whole_row)
			bson_check_duplicate_ids(bson_table_name(table), quote_identifier(schema),
									 read_names, nread, true, partition_root);

		for (int i = first; i < end; i++)
		{
			Source	   *s = &sources[i];
			Datum		values[NCOLUMNS];
			bool		nulls[NCOLUMNS] = {0};

			if (s->blocks < 0)
				continue;
			values[0] = CStringGetTextDatum(db);
			values[1] = CStringGetTextDatum(s->coll);
			values[2] = ObjectIdGetDatum(s->table);
			values[3] = ObjectIdGetDatum(s->relid);
			values[4] = Int64GetDatum(s->blocks);
			/* t.*, not t: a column named t would win over the row */
			if (embedded != NULL)
				values[5] = CStringGetTextDatum(bson_embedded_query(embeddings, table, s->name,
																	quote_identifier(schema),
																	omit_nulls, partition_root));
			else
				values[5] = CStringGetTextDatum(psprintf("SELECT %s.bson_document(t.*, %s, %s) FROM ONLY %s t",
														 quote_identifier(schema),
														 omit_nulls ? "true" : "false",
														 partition_root ? "true" : "false",
														 s->name));
			values[6] = CStringGetTextDatum(metadata);
			if (embedded != NULL)
				values[7] = CStringGetTextDatum(embedded);
			else
				nulls[7] = true;
			tuplestore_putvalues(store, tupdesc, values, nulls);
		}
	}

	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = tupdesc;
	return (Datum) 0;
}
