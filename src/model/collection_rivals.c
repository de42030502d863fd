/*
 * collection_rivals.c
 *		Two tables whose rows would go to one collection: see
 *		collection_rivals.h.
 *
 * The tables that could take a collection name are found from the name
 * itself: each dot in it may be the one between a schema and a table, and
 * without include-schema the whole name may be a table in public.  Each
 * such (schema, table) is looked up by the catalogs' name indexes, under
 * the caller's snapshot.
 */
#include "collection_rivals.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "table_model.h"

/* The OID of a catalog row found by its name (and namespace), or InvalidOid */
static Oid
lookup_by_name(Oid catalog, Oid index, AttrNumber name_column, const char *name,
			   AttrNumber namespace_column, Oid namespace, Snapshot snapshot,
			   Form_pg_class class_out)
{
	Relation	rel = table_open(catalog, AccessShareLock);
	ScanKeyData keys[2];
	NameData	key_name;
	int			nkeys = 1;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			oid = InvalidOid;

	namestrcpy(&key_name, name);
	ScanKeyInit(&keys[0], name_column, BTEqualStrategyNumber, F_NAMEEQ,
				NameGetDatum(&key_name));
	if (namespace_column != InvalidAttrNumber)
		ScanKeyInit(&keys[nkeys++], namespace_column, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(namespace));
	scan = systable_beginscan(rel, index, true, snapshot, nkeys, keys);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		if (catalog == RelationRelationId)
		{
			*class_out = *(Form_pg_class) GETSTRUCT(tuple);
			oid = class_out->oid;
		}
		else
			oid = ((Form_pg_namespace) GETSTRUCT(tuple))->oid;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return oid;
}

/*
 * The relation schema.name, if it exists and its rows, selected by the
 * filters, go to a collection named after it: a logged table (a partition
 * only when partitions are their own collections), or a partitioned table
 * whose partitions are streamed as it.
 */
static Oid
collection_table_named(const char *schema, const char *name, List *include,
					   List *exclude, bool partition_root, Snapshot snapshot)
{
	FormData_pg_class class;
	Oid			namespace;
	Oid			relid;

	if (strlen(schema) >= NAMEDATALEN || strlen(name) >= NAMEDATALEN)
		return InvalidOid;
	namespace = lookup_by_name(NamespaceRelationId, NamespaceNameIndexId,
							   Anum_pg_namespace_nspname, schema,
							   InvalidAttrNumber, InvalidOid, snapshot, NULL);
	if (!OidIsValid(namespace))
		return InvalidOid;
	relid = lookup_by_name(RelationRelationId, ClassNameNspIndexId,
						   Anum_pg_class_relname, name,
						   Anum_pg_class_relnamespace, namespace, snapshot, &class);
	if (!OidIsValid(relid) || class.relpersistence != RELPERSISTENCE_PERMANENT)
		return InvalidOid;
	if (class.relkind != RELKIND_RELATION &&
		!(class.relkind == RELKIND_PARTITIONED_TABLE && partition_root))
		return InvalidOid;
	/* dropped since the snapshot: its rows are not read either */
	if (get_rel_name(relid) == NULL)
		return InvalidOid;
	if (bson_collection_table(relid, partition_root, NULL) != relid ||
		!bson_table_selected(include, exclude, relid, partition_root))
		return InvalidOid;
	return relid;
}

static Oid
find_rival(Oid table, const char *coll, List *include, List *exclude,
		   bool include_schema, bool partition_root, Snapshot snapshot)
{
	Oid			rival;

	/* the whole name, a table in public, unqualified without include-schema */
	if (!include_schema)
	{
		rival = collection_table_named("public", coll, include, exclude,
									   partition_root, snapshot);
		if (OidIsValid(rival) && rival != table)
			return rival;
	}
	for (const char *dot = strchr(coll, '.'); dot != NULL; dot = strchr(dot + 1, '.'))
	{
		char	   *schema = pnstrdup(coll, dot - coll);

		/* a table in public is named so only with include-schema */
		if (include_schema || strcmp(schema, "public") != 0)
		{
			rival = collection_table_named(schema, dot + 1, include, exclude,
										   partition_root, snapshot);
			if (OidIsValid(rival) && rival != table)
				return rival;
		}
		pfree(schema);
	}
	return InvalidOid;
}

void
bson_check_collection_rivals(Oid table, List *include, List *exclude,
							 bool include_schema, bool partition_root,
							 Snapshot snapshot)
{
	char	   *coll = bson_collection_name(table, include_schema);
	Oid			rival = find_rival(table, coll, include, exclude, include_schema,
								   partition_root, snapshot);
	char	   *first;
	char	   *second;

	if (!OidIsValid(rival))
		return;
	/* in the order of their names, so that every piece says the same */
	first = bson_table_name(table);
	second = bson_table_name(rival);
	if (strcmp(first, second) > 0)
	{
		char	   *swap = first;

		first = second;
		second = swap;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DUPLICATE_OBJECT),
			 errmsg("tables %s and %s both take collection \"%s\"", first, second, coll),
			 errdetail("A collection is named after its table, and a dot in a schema or table name reads as the one between them: one collection would hold the rows of both tables, whose _id values and indexes collide."),
			 include_schema ?
			 errhint("Rename one of the tables, or leave one of them out with exclude-tables.") :
			 errhint("Name the collections with their schemas (include-schema; --include-schema in pg_bsonexport and pg_bsonstream), or leave one of the tables out with exclude-tables.")));
}
