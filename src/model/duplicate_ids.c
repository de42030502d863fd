/*
 * duplicate_ids.c
 *		Equal rows of a table whose _id is the whole row: see duplicate_ids.h.
 *
 * bson_check_ids(source regclass, partition_root boolean) is the check of
 * pg_bsonexport --table; bson_collections() makes it for the collections it
 * lists.
 *
 * The rows are grouped by their documents, which bson_document makes as
 * the export writes them: for such a table the document is a function of
 * its _id and the _id a part of it, so equal documents are equal _id
 * values, and grouping by them needs no equality operator on the columns'
 * types (json, point, xml have none).
 */
#include "duplicate_ids.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "table_model.h"

/* what the message shows of a repeated _id, at most */
#define EXAMPLE_MAX 200

void
bson_check_duplicate_ids(const char *name, const char *schema,
						 char *const *sources, int nsources, bool only,
						 bool partition_root)
{
	StringInfoData sql;
	int64		ids = 0;			/* _id values repeated */
	int64		extra = 0;			/* rows that repeat one */
	char	   *example = NULL;
	MemoryContext caller = CurrentMemoryContext;

	initStringInfo(&sql);
	/* the example: the least repeated document's _id, the same every time */
	appendStringInfoString(&sql, "WITH g AS (SELECT d, count(*) AS n FROM (");
	for (int i = 0; i < nsources; i++)
		appendStringInfo(&sql, "%sSELECT %s.bson_document(t.*, false, %s) FROM %s%s t",
						 i > 0 ? " UNION ALL " : "", schema,
						 partition_root ? "true" : "false", only ? "ONLY " : "",
						 sources[i]);
	appendStringInfo(&sql,
					 ") q(d) GROUP BY d HAVING count(*) > 1) "
					 "SELECT count(*), sum(n - 1)::bigint, "
					 "(SELECT (%s.bson_to_json(d)::json -> '_id')::text FROM g ORDER BY d LIMIT 1) "
					 "FROM g",
					 schema);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql.data, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not look for equal _id values in table %s", name);
	{
		TupleDesc	desc = SPI_tuptable->tupdesc;
		HeapTuple	row = SPI_tuptable->vals[0];
		bool		isnull;
		Datum		d;

		ids = DatumGetInt64(SPI_getbinval(row, desc, 1, &isnull));
		d = SPI_getbinval(row, desc, 2, &isnull);
		extra = isnull ? 0 : DatumGetInt64(d);
		if (ids > 0)
		{
			char	   *text = SPI_getvalue(row, desc, 3);
			MemoryContext spi = MemoryContextSwitchTo(caller);

			example = strlen(text) > EXAMPLE_MAX ?
				psprintf("%.*s...", pg_mbcliplen(text, strlen(text), EXAMPLE_MAX), text) :
				pstrdup(text);
			MemoryContextSwitchTo(spi);
		}
	}
	SPI_finish();
	pfree(sql.data);
	if (ids == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("table %s has equal rows, which would be documents with the same _id", name),
			 errdetail_plural("Its _id is the whole row (REPLICA IDENTITY FULL without a primary key), and a collection holds one document per _id: %lld row repeats the _id of another, for example %s.",
							  "Its _id is the whole row (REPLICA IDENTITY FULL without a primary key), and a collection holds one document per _id: %lld rows repeat the _id of another, for example %s.",
							  (unsigned long) extra, (long long) extra, example),
			 errhint("Give the table a primary key, or delete its repeated rows; or leave it out of the export.")));
}

PG_FUNCTION_INFO_V1(bson_check_ids);
Datum
bson_check_ids(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	bool		partition_root = PG_GETARG_BOOL(1);
	const char *schema = quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)));
	MemoryContext scratch;
	MemoryContext old;
	Relation	rel;
	Relation	model;
	Oid			table;
	BsonChangeTable t = {0};
	bool		whole_row = false;
	char	   *source;

	/* the lock is kept until the transaction ends, as the export's own */
	rel = relation_open(relid, AccessShareLock);
	/* views, foreign tables, ...: documents without _id */
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		relation_close(rel, NoLock);
		PG_RETURN_VOID();
	}
	table = bson_collection_table(relid, partition_root, NULL);
	model = table == relid ? rel : relation_open(table, AccessShareLock);
	scratch = AllocSetContextCreate(CurrentMemoryContext, "bson_check_ids",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(scratch);
	bson_table_model_build(&t, model, scratch);
	whole_row = t.id_whole_row;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scratch);
	if (model != rel)
		relation_close(model, NoLock);
	relation_close(rel, NoLock);
	if (!whole_row)
		PG_RETURN_VOID();
	source = bson_table_name(relid);
	bson_check_duplicate_ids(source, schema, &source, 1, false, partition_root);
	PG_RETURN_VOID();
}
