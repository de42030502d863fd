/*
 * collection_metadata.c
 *		<coll>.metadata.json: {"indexes": [...], "collectionName": coll,
 *		"type": "collection", "bson_out": {...}}, canonical Extended JSON.
 *
 * "bson_out" is ours, which mongorestore passes over: the table the
 * documents are the rows of (its OID, "relid") and the shape of its
 * documents (bson_table_shape) in the dump's snapshot, so that a consumer
 * of the dump and of the change stream after it (pg_bsonstream --to) can
 * tell when a DDL has changed the table's documents since.
 *
 * The indexes are the _id index, which every collection has, and one
 * unique index per unique index of the table (UNIQUE constraints have one)
 * other than the key's, so that MongoDB refuses what PostgreSQL refuses:
 * named after the PostgreSQL index, its key columns in order, descending
 * ones as -1.  A unique index whose key a document cannot hold the same way
 * is left out: one with an expression or a predicate (partial), one on a
 * column left out of the documents or whose name MongoDB reads as a path
 * (a dot, a leading $), and one on a column whose values the mapping can
 * make equal where PostgreSQL's are not (timestamps, cut to milliseconds;
 * composites, conservatively), whose rows MongoDB would refuse as
 * duplicates.  PostgreSQL's unique indexes let rows with a NULL
 * key column pass (unless NULLS NOT DISTINCT); MongoDB indexes a null like
 * any value, so those get a partialFilterExpression that indexes only the
 * documents whose nullable key columns are of a type other than null.
 * A DEFERRABLE unique constraint is left out too: PostgreSQL lets a
 * transaction pass through duplicates of it (two rows swapping values),
 * which MongoDB, checking each write as it is applied, would refuse.  An
 * immediate one is checked row by row, as MongoDB checks the same rows
 * applied in the same order.
 */
#include "collection_metadata.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "catalog/pg_index.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "catalog/pg_type.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/relcache.h"

#include "table_model.h"

/* Every BSON type alias of MongoDB's $type but null and undefined */
#define NON_NULL_TYPES "[\"double\",\"string\",\"object\",\"array\",\"binData\"," \
	"\"objectId\",\"bool\",\"date\",\"regex\",\"dbPointer\",\"javascript\"," \
	"\"symbol\",\"javascriptWithScope\",\"int\",\"timestamp\",\"long\"," \
	"\"decimal\",\"minKey\",\"maxKey\"]"

/*
 * Are two distinct values of the type always two distinct BSON values?
 * Timestamps are not: BSON datetimes hold milliseconds, PostgreSQL
 * microseconds.  Composites are not looked into.
 */
static bool
exact_key_type(Oid type)
{
	Oid			base = getBaseType(type);
	Oid			element = get_element_type(base);

	if (OidIsValid(element))
		return exact_key_type(element);
	if (base == TIMESTAMPOID || base == TIMESTAMPTZOID)
		return false;
	return !type_is_rowtype(base);
}

/*
 * Append index irel of rel as a unique index, if a document can hold its
 * key as PostgreSQL does; returns whether it was.
 */
static bool
append_unique_index(StringInfo out, Relation rel, Relation irel,
					const BsonChangeTable *model)
{
	Form_pg_index index = irel->rd_index;
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(irel);
	TupleDesc	desc = RelationGetDescr(rel);
	bool		same_as_key = nkeys == model->nkeys;
	bool		nullable = false;

	if (!index->indisunique || !index->indimmediate || !index->indisvalid || !index->indislive ||
		!heap_attisnull(irel->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(irel->rd_indextuple, Anum_pg_index_indpred, NULL))
		return false;
	for (int i = 0; i < nkeys; i++)
	{
		int			column = index->indkey.values[i] - 1;
		const char *name;

		if (column < 0 || column == model->id_column)
			return false;
		name = NameStr(TupleDescAttr(desc, column)->attname);
		if (name[0] == '$' || strchr(name, '.') != NULL ||
			!exact_key_type(TupleDescAttr(desc, column)->atttypid))
			return false;
		if (!bson_change_is_key_column(model, column))
			same_as_key = false;
		if (!TupleDescAttr(desc, column)->attnotnull)
			nullable = true;
	}
	/* the key's own index is _id's */
	if (same_as_key)
		return false;

	appendStringInfoString(out, ",{\"v\":{\"$numberInt\":\"2\"},\"unique\":true,\"key\":{");
	for (int i = 0; i < nkeys; i++)
	{
		int			column = index->indkey.values[i] - 1;
		bool		desc_order = (irel->rd_indoption[i] & INDOPTION_DESC) != 0;

		if (i > 0)
			appendStringInfoChar(out, ',');
		escape_json(out, NameStr(TupleDescAttr(desc, column)->attname));
		appendStringInfo(out, ":{\"$numberInt\":\"%s\"}", desc_order ? "-1" : "1");
	}
	appendStringInfoString(out, "},\"name\":");
	escape_json(out, RelationGetRelationName(irel));
	if (nullable && !BSON_INDEX_NULLS_NOT_DISTINCT(index))
	{
		bool		first = true;

		appendStringInfoString(out, ",\"partialFilterExpression\":{");
		for (int i = 0; i < nkeys; i++)
		{
			int			column = index->indkey.values[i] - 1;
			Form_pg_attribute att = TupleDescAttr(desc, column);

			if (att->attnotnull)
				continue;
			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			escape_json(out, NameStr(att->attname));
			/*
			 * $exists first: a "$type" that opens a document is read as a
			 * legacy $binary's subtype by Extended JSON parsers (libbson's
			 * fails on the array); the types listed imply it anyway.
			 */
			appendStringInfoString(out, ":{\"$exists\":true,\"$type\":" NON_NULL_TYPES "}");
		}
		appendStringInfoChar(out, '}');
	}
	appendStringInfoChar(out, '}');
	return true;
}

char *
bson_collection_metadata(Relation rel, const BsonChangeTable *model,
						 const char *coll)
{
	StringInfoData out;
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	initStringInfo(&out);
	appendStringInfoString(&out, "{\"indexes\":[{\"v\":{\"$numberInt\":\"2\"},"
						   "\"key\":{\"_id\":{\"$numberInt\":\"1\"}},\"name\":\"_id_\"}");
	foreach(lc, indexes)
	{
		Relation	irel = index_open(lfirst_oid(lc), AccessShareLock);

		append_unique_index(&out, rel, irel, model);
		index_close(irel, AccessShareLock);
	}
	list_free(indexes);
	appendStringInfoString(&out, "],\"collectionName\":");
	escape_json(&out, coll);
	appendStringInfo(&out, ",\"type\":\"collection\",\"bson_out\":{\"relid\":"
					 "{\"$numberLong\":\"%u\"},\"shape\":", RelationGetRelid(rel));
	escape_json(&out, bson_table_shape(model));
	appendStringInfoString(&out, "}}");
	return out.data;
}
