/*
 * citus_tables.c
 *		Citus's shards and tables, read from its catalogs (citus_tables.h).
 *
 * pg_dist_shard, pg_dist_partition, pg_dist_placement and
 * pg_dist_local_group are ordinary tables in pg_catalog, not catalogs: a
 * decoding callback's historic snapshot does not know their history (it
 * follows only the transactions that changed catalogs, and Citus writes
 * its metadata on a worker in transactions of their own), so they are read
 * as they are now, in a decoding callback as elsewhere in the transaction's
 * snapshot.  Which table a shard belongs to never changes while the shard
 * id exists (ids are never reused), so pg_dist_shard is read with any
 * version of a row, a deleted one too: a shard a split replaced is still
 * known until its row is vacuumed away.  Columns are found by name, so that
 * a later Citus that adds columns still reads.
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
#include "utils/snapmgr.h"

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

	/*
	 * A library in shared_preload_libraries is there from the start; a
	 * setting left in postgresql.conf without it is only a placeholder.
	 */
	if (loaded < 0)
		loaded = GetConfigOption("citus.node_conninfo", true, false) != NULL &&
			!(GetConfigOptionFlags("citus.node_conninfo", true) & GUC_CUSTOM_PLACEHOLDER);
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
 * The metadata as it is now: in a decoding callback not the historic
 * snapshot, elsewhere the transaction's (a first copy's exported one).
 */
static Snapshot
metadata_snapshot(Oid relid)
{
	if (HistoricSnapshotActive())
		return RegisterSnapshot(GetNonHistoricCatalogSnapshot(relid));
	return RegisterSnapshot(GetTransactionSnapshot());
}

/*
 * Read the row of catalog (in pg_catalog) whose column key equals value
 * (by the operator proc; key NULL: its first row) into values[]: one entry
 * per name in columns, the column's Datum (by value only), isnull[] for a
 * NULL or a missing column; any_version: a deleted row too; *xmin (unless
 * NULL): the transaction that wrote the row.  Returns false when there is no
 * such row or no such catalog.
 */
static bool
catalog_row(const char *catalog, const char *index, const char *key,
			RegProcedure proc, Datum value, const char *const *columns,
			int ncolumns, Datum *values, bool *isnull, bool any_version,
			TransactionId *xmin)
{
	Snapshot	snapshot;
	Oid			relid = get_relname_relid(catalog, PG_CATALOG_NAMESPACE);
	Oid			indexid = index ? get_relname_relid(index, PG_CATALOG_NAMESPACE) : InvalidOid;
	Relation	rel;
	ScanKeyData scankey;
	SysScanDesc scan;
	HeapTuple	tuple;
	AttrNumber	keycol = 0;
	bool		found = false;

	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	if (key != NULL)
	{
		keycol = column_of(rel, key);
		if (keycol == 0)
		{
			table_close(rel, AccessShareLock);
			return false;
		}
		/* the table's column number: systable_beginscan finds it in the index */
		ScanKeyInit(&scankey, keycol, BTEqualStrategyNumber, proc, value);
	}
	snapshot = any_version ? SnapshotAny : metadata_snapshot(relid);
	scan = systable_beginscan(rel, indexid, OidIsValid(indexid), snapshot,
							  key != NULL ? 1 : 0, &scankey);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		found = true;
		if (xmin != NULL)
			*xmin = HeapTupleHeaderGetXmin(tuple->t_data);
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
	if (!any_version)
		UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return found;
}

/* This node's group: 0 on the coordinator (and where Citus has no group yet) */
static int32
local_group(void)
{
	static const char *const columns[] = {"groupid"};
	Datum		value;
	bool		isnull;

	if (!catalog_row("pg_dist_local_group", NULL, NULL, InvalidOid, (Datum) 0,
					 columns, 1, &value, &isnull, false, NULL) || isnull)
		return CITUS_COORDINATOR_GROUP;
	return DatumGetInt32(value);
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
					 columns, 2, values, isnull, false, NULL))
		return false;
	return !isnull[0] && !isnull[1] &&
		DatumGetChar(values[0]) == CITUS_DISTRIBUTE_BY_NONE &&
		DatumGetChar(values[1]) == CITUS_REPLICATION_2PC;
}

/*
 * The Citus table a shard's name points to: the table named as the part
 * before _<shardid>, in the same schema, if Citus keeps its rows in shards.
 */
static Oid
table_by_name(const char *name, Oid namespace)
{
	const char *sep = strrchr(name, '_');
	char	   *prefix = pnstrdup(name, sep - name);
	Oid			table = get_relname_relid(prefix, namespace);

	pfree(prefix);
	return OidIsValid(table) && bson_citus_is_sharded(table) ? table : InvalidOid;
}

/*
 * The table pg_dist_shard gives for the shard id at the end of relid's
 * name (any version of the row), with that name and id; InvalidOid when
 * Citus is not loaded, the name ends in no id, or no shard has it.
 */
static Oid
listed_table(Oid relid, char **name, int64 *shardid)
{
	static const char *const columns[] = {"logicalrelid"};
	Datum		value;
	bool		isnull;

	if (!bson_citus_loaded())
		return InvalidOid;
	*name = get_rel_name(relid);
	if (*name == NULL || (*shardid = shard_id_of(*name)) < 0 ||
		!catalog_row("pg_dist_shard", "pg_dist_shard_shardid_index", "shardid",
					 F_INT8EQ, Int64GetDatum(*shardid), columns, 1, &value, &isnull, true, NULL) ||
		isnull || DatumGetObjectId(value) == relid)
		return InvalidOid;
	return DatumGetObjectId(value);
}

/* Where a reference table's shard relid streams: on the coordinator only */
static void
set_here(Oid table, bool *here)
{
	*here = !is_reference_table(table) || local_group() == CITUS_COORDINATOR_GROUP;
}

Oid
bson_citus_shard_table(Oid relid, bool *here)
{
	char	   *name = NULL;
	int64		shardid = 0;
	Oid			table = listed_table(relid, &name, &shardid);
	char	   *tname;

	*here = true;
	/*
	 * A shard is in its table's schema, and named after it unless the name
	 * would be too long (Citus then shortens it with a hash): anything else
	 * merely ends in a shard's id.
	 */
	if (!OidIsValid(table) || get_rel_namespace(table) != get_rel_namespace(relid) ||
		(tname = get_rel_name(table)) == NULL)
		return InvalidOid;
	{
		char	   *expected = psprintf("%s_" INT64_FORMAT, tname, shardid);

		if (strlen(expected) < NAMEDATALEN && strcmp(expected, name) != 0)
			return InvalidOid;
	}
	set_here(table, here);
	return table;
}

Oid
bson_citus_lookalike(Oid relid)
{
	bool		here;
	char	   *name;

	if (!bson_citus_loaded() || OidIsValid(bson_citus_shard_table(relid, &here)))
		return InvalidOid;
	name = get_rel_name(relid);
	if (name == NULL || shard_id_of(name) < 0)
		return InvalidOid;
	return table_by_name(name, get_rel_namespace(relid));
}

char *
bson_citus_unseen_shard_name(Oid relid, bool *here)
{
	char	   *name = NULL;
	int64		shardid = 0;
	Oid			table = listed_table(relid, &name, &shardid);
	char	   *suffix;

	*here = true;
	if (!OidIsValid(table) || get_rel_name(table) != NULL)
		return NULL;
	/* unshortened names only: table, then _<shardid> */
	suffix = psprintf("_" INT64_FORMAT, shardid);
	if (strlen(name) + 1 >= NAMEDATALEN || strlen(name) <= strlen(suffix) ||
		strcmp(name + strlen(name) - strlen(suffix), suffix) != 0)
		return NULL;
	set_here(table, here);
	return pnstrdup(name, strlen(name) - strlen(suffix));
}

bool
bson_citus_placed_here(Oid relid)
{
	char	   *name = get_rel_name(relid);
	int64		shardid = name ? shard_id_of(name) : -1;
	Oid			relid_placement = get_relname_relid("pg_dist_placement", PG_CATALOG_NAMESPACE);
	Oid			index = get_relname_relid("pg_dist_placement_shardid_index", PG_CATALOG_NAMESPACE);
	int32		group = local_group();
	Relation	rel;
	ScanKeyData scankey;
	SysScanDesc scan;
	HeapTuple	tuple;
	AttrNumber	shardcol;
	AttrNumber	groupcol;
	Snapshot	snapshot;
	bool		found = false;

	if (shardid < 0 || !OidIsValid(relid_placement))
		return false;
	rel = table_open(relid_placement, AccessShareLock);
	shardcol = column_of(rel, "shardid");
	groupcol = column_of(rel, "groupid");
	if (shardcol == 0 || groupcol == 0)
	{
		table_close(rel, AccessShareLock);
		return false;
	}
	ScanKeyInit(&scankey, shardcol, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(shardid));
	snapshot = metadata_snapshot(relid_placement);
	scan = systable_beginscan(rel, index, OidIsValid(index), snapshot, 1, &scankey);
	/* a reference table's shard has a placement on every node */
	while (!found && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, groupcol, RelationGetDescr(rel), &isnull);

		found = !isnull && DatumGetInt32(d) == group;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Does relid have a pg_dist_partition row (as it is now), and which
 * transaction wrote it (*xmin, unless NULL)?
 */
static bool
partition_row(Oid relid, TransactionId *xmin)
{
	static const char *const columns[] = {"partmethod"};
	Datum		value;
	bool		isnull;

	if (!bson_citus_loaded())
		return false;
	return catalog_row("pg_dist_partition", "pg_dist_partition_logical_relid_index",
					   "logicalrelid", F_OIDEQ, ObjectIdGetDatum(relid),
					   columns, 1, &value, &isnull, false, xmin);
}

bool
bson_citus_is_sharded(Oid relid)
{
	return partition_row(relid, NULL);
}

/*
 * Had xid committed when the transaction being decoded did?  The historic
 * snapshot knows it for a transaction that changed catalogs or sent
 * invalidations, as create_distributed_table does (it invalidates the
 * table's relcache entry and adds a trigger): such a transaction below
 * xmax that is not listed among the committed ones was still running.  A
 * transaction without catalog changes is not listed either, so in that
 * window the answer is no; below xmin every transaction had ended, and one
 * whose row is there now committed.  The decoded transaction's own xids
 * (subxip) come after its changes to the table's rows, since a distributed
 * table's rows are no longer written to its own relation.
 */
static bool
committed_before_change(TransactionId xid)
{
	Snapshot	snap;

	if (!HistoricSnapshotActive())
		return true;
	snap = GetCatalogSnapshot(InvalidOid);
	for (int i = 0; i < snap->subxcnt; i++)
		if (TransactionIdEquals(snap->subxip[i], xid))
			return false;
	if (TransactionIdPrecedes(xid, snap->xmin))
		return true;
	if (TransactionIdFollowsOrEquals(xid, snap->xmax))
		return false;
	for (uint32 i = 0; i < snap->xcnt; i++)
		if (TransactionIdEquals(snap->xip[i], xid))
			return true;
	return false;
}

bool
bson_citus_sharded_at_change(Oid relid)
{
	TransactionId xmin;

	/*
	 * pg_dist_partition is no catalog, so the historic snapshot cannot read
	 * it: its row as it is now, and when the transaction that wrote it
	 * committed.
	 */
	return partition_row(relid, &xmin) && committed_before_change(xmin);
}
