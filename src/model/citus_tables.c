/*
 * citus_tables.c
 *		Citus's shards and tables, read from its catalogs (citus_tables.h).
 *
 * pg_dist_shard, pg_dist_partition and pg_dist_local_group are ordinary
 * tables in pg_catalog, read here with catalog scans: in a decoding
 * callback the scan sees them as they were at the change (the historic
 * snapshot), elsewhere as the current snapshot does.  Their columns are
 * found by name, so that a later Citus that adds columns still reads.
 */
#include "citus_tables.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_namespace.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* bson_out.citus_rows */
int			bson_citus_rows = BSON_CITUS_ROWS_TABLES;

/* Citus's values: pg_dist_partition.partmethod and .repmodel of a reference table */
#define CITUS_DISTRIBUTE_BY_NONE	'n'
#define CITUS_REPLICATION_2PC		't'
#define CITUS_COORDINATOR_GROUP		0

bool
bson_citus_loaded(void)
{
	static int	loaded = -1;

	/* a library in shared_preload_libraries is there from the start */
	if (loaded < 0)
		loaded = GetConfigOption("citus.node_conninfo", true, false) != NULL;
	return loaded == 1;
}

/* The column of rel named name (1-based), or 0 */
static AttrNumber
column_of(Relation rel, const char *name)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return 0;
}

/*
 * Read the row of catalog (in pg_catalog) whose column key equals value
 * (by the operator proc) into values[]: one entry per name in columns, the
 * column's Datum (by value only), isnull[] for a NULL or a missing column.
 * Returns false when there is no such row or no such catalog.
 */
static bool
catalog_row(const char *catalog, const char *index, const char *key,
			RegProcedure proc, Datum value, const char *const *columns,
			int ncolumns, Datum *values, bool *isnull)
{
	Oid			relid = get_relname_relid(catalog, PG_CATALOG_NAMESPACE);
	Oid			indexid;
	Relation	rel;
	ScanKeyData scankey;
	SysScanDesc scan;
	HeapTuple	tuple;
	AttrNumber	keycol;
	bool		found = false;

	if (!OidIsValid(relid))
		return false;
	indexid = get_relname_relid(index, PG_CATALOG_NAMESPACE);
	rel = table_open(relid, AccessShareLock);
	keycol = column_of(rel, key);
	if (keycol == 0)
	{
		table_close(rel, AccessShareLock);
		return false;
	}
	/* the table's column number: systable_beginscan finds it in the index */
	ScanKeyInit(&scankey, keycol, BTEqualStrategyNumber, proc, value);
	scan = systable_beginscan(rel, indexid, OidIsValid(indexid), NULL, 1, &scankey);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		found = true;
		for (int i = 0; i < ncolumns; i++)
		{
			AttrNumber	col = column_of(rel, columns[i]);

			isnull[i] = true;
			values[i] = (Datum) 0;
			if (col != 0)
				values[i] = heap_getattr(tuple, col, RelationGetDescr(rel), &isnull[i]);
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* This node's group: 0 on the coordinator */
static int32
local_group(void)
{
	Oid			relid = get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	AttrNumber	col;
	int32		group = CITUS_COORDINATOR_GROUP;

	if (!OidIsValid(relid))
		return group;
	rel = table_open(relid, AccessShareLock);
	col = column_of(rel, "groupid");
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	tuple = systable_getnext(scan);
	if (col != 0 && HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, col, RelationGetDescr(rel), &isnull);

		if (!isnull)
			group = DatumGetInt32(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return group;
}

/* The shard id a shard table's name ends with (_<digits>), or -1 */
static int64
shard_id_of(const char *name)
{
	const char *sep = strrchr(name, '_');
	int64		id = 0;

	if (sep == NULL || sep[1] == '\0')
		return -1;
	for (const char *p = sep + 1; *p; p++)
	{
		if (*p < '0' || *p > '9' || id > (PG_INT64_MAX - 9) / 10)
			return -1;
		id = id * 10 + (*p - '0');
	}
	return id;
}

/* Is relid a reference table (pg_dist_partition: method none, two-phase replication)? */
static bool
is_reference_table(Oid relid)
{
	static const char *const columns[] = {"partmethod", "repmodel"};
	Datum		values[2];
	bool		isnull[2];

	if (!catalog_row("pg_dist_partition", "pg_dist_partition_logical_relid_index",
					 "logicalrelid", F_OIDEQ, ObjectIdGetDatum(relid),
					 columns, 2, values, isnull))
		return false;
	return !isnull[0] && !isnull[1] &&
		DatumGetChar(values[0]) == CITUS_DISTRIBUTE_BY_NONE &&
		DatumGetChar(values[1]) == CITUS_REPLICATION_2PC;
}

Oid
bson_citus_shard_table(Oid relid, bool *here)
{
	static const char *const columns[] = {"logicalrelid"};
	char	   *name;
	int64		shardid;
	Datum		value;
	bool		isnull;
	Oid			table;

	*here = true;
	if (!bson_citus_loaded())
		return InvalidOid;
	name = get_rel_name(relid);
	if (name == NULL || (shardid = shard_id_of(name)) < 0)
		return InvalidOid;
	if (!catalog_row("pg_dist_shard", "pg_dist_shard_shardid_index", "shardid",
					 F_INT8EQ, Int64GetDatum(shardid), columns, 1, &value, &isnull) ||
		isnull)
		return InvalidOid;
	table = DatumGetObjectId(value);
	/* a shard is in its table's schema; anything else only has a shard's name */
	if (table == relid || !OidIsValid(get_rel_namespace(table)) ||
		get_rel_namespace(table) != get_rel_namespace(relid))
		return InvalidOid;
	if (is_reference_table(table))
		*here = local_group() == CITUS_COORDINATOR_GROUP;
	return table;
}

bool
bson_citus_is_sharded(Oid relid)
{
	static const char *const columns[] = {"partmethod"};
	Datum		value;
	bool		isnull;

	if (!bson_citus_loaded())
		return false;
	return catalog_row("pg_dist_partition", "pg_dist_partition_logical_relid_index",
					   "logicalrelid", F_OIDEQ, ObjectIdGetDatum(relid),
					   columns, 1, &value, &isnull);
}
