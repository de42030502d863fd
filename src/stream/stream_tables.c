/*
 * stream_tables.c
 *		What the output plugin knows about each table it has seen.
 *
 * Working out a table (its names, whether the filters select it, its replica
 * identity, the BSON mapping of its columns) reads the catalogs, so it is
 * done the first time the table turns up and kept in a hash table by OID.
 * Logical decoding replays the catalog invalidations of the transactions it
 * decodes at the point where they happened, so a relcache invalidation of a
 * table (ALTER TABLE: a column added, dropped, retyped or renamed, a new
 * replica identity) marks its entry for working out again, and the next
 * change is decoded with the row type in force at that change.  An entry
 * whose mapping reads a named composite type cannot tell which relcache
 * invalidation concerns that type, so it is worked out again on any of them;
 * a schema renamed changes the names of its tables, so that marks them all.
 *
 * The callbacks cannot be unregistered and outlive the session; the hash
 * table lives in CacheMemoryContext, not in the decoding context, so that
 * what they look at stays valid whichever way the session ends.
 */
#include "stream_tables.h"

#include "catalog/pg_class.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

static MemoryContext tables_cxt = NULL;
static HTAB *tables = NULL;
static bool tables_have_composites = false;
static bool callbacks_registered = false;

static void
invalidate_all(bool composites_only)
{
	HASH_SEQ_STATUS seq;
	BsonStreamTable *entry;

	hash_seq_init(&seq, tables);
	while ((entry = (BsonStreamTable *) hash_seq_search(&seq)) != NULL)
	{
		if (!composites_only || entry->has_composites)
			entry->valid = false;
	}
}

static void
relcache_changed(Datum arg, Oid relid)
{
	BsonStreamTable *entry;

	(void) arg;
	if (tables == NULL)
		return;
	if (!OidIsValid(relid))
	{
		invalidate_all(false);
		return;
	}
	entry = (BsonStreamTable *) hash_search(tables, &relid, HASH_FIND, NULL);
	if (entry)
		entry->valid = false;
	/* the relid may be a composite type's */
	if (tables_have_composites)
		invalidate_all(true);
}

static void
namespace_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	(void) arg;
	(void) cacheid;
	(void) hashvalue;
	if (tables != NULL)
		invalidate_all(false);
}

void
bson_stream_tables_start(void)
{
	HASHCTL		ctl;

	bson_stream_tables_end();
	if (CacheMemoryContext == NULL)
		CreateCacheMemoryContext();
	tables_cxt = AllocSetContextCreate(CacheMemoryContext, "bson_out tables",
									   ALLOCSET_DEFAULT_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(BsonStreamTable);
	ctl.hcxt = tables_cxt;
	tables = hash_create("bson_out tables", 64, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	tables_have_composites = false;
	if (!callbacks_registered)
	{
		CacheRegisterRelcacheCallback(relcache_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, namespace_changed, (Datum) 0);
		callbacks_registered = true;
	}
}

void
bson_stream_tables_end(void)
{
	if (tables_cxt != NULL)
		MemoryContextDelete(tables_cxt);
	tables_cxt = NULL;
	tables = NULL;
}

/*
 * documentKey's columns: the replica identity's index (the primary key by
 * default), in the index's order; with REPLICA IDENTITY FULL the primary key
 * if there is one, else every column (the whole row is then the identity).
 * None with REPLICA IDENTITY NOTHING or without a key to use: the WAL then
 * holds nothing to identify an updated or deleted row by.
 */
static void
find_key_columns(BsonStreamTable *entry, Relation rel)
{
	BsonChangeTable *t = &entry->change;
	char		identity = rel->rd_rel->relreplident;
	Oid			index = InvalidOid;

	t->nkeys = 0;
	t->keys = NULL;
	t->old_row_whole = identity == REPLICA_IDENTITY_FULL;
	if (identity == REPLICA_IDENTITY_DEFAULT || identity == REPLICA_IDENTITY_INDEX)
		index = RelationGetReplicaIndex(rel);
	else if (identity == REPLICA_IDENTITY_FULL)
		index = bson_primary_key_index(rel);

	if (OidIsValid(index))
	{
		Relation	irel = RelationIdGetRelation(index);

		if (!RelationIsValid(irel))
			elog(ERROR, "could not open index %u of table %s", index, entry->name);
		t->nkeys = IndexRelationGetNumberOfKeyAttributes(irel);
		t->keys = MemoryContextAlloc(entry->mcxt, sizeof(int) * Max(t->nkeys, 1));
		for (int i = 0; i < t->nkeys; i++)
		{
			AttrNumber	attnum = irel->rd_index->indkey.values[i];

			/* identity indexes have no expressions */
			if (attnum <= 0)
				elog(ERROR, "index %u of table %s has an expression column",
					 index, entry->name);
			t->keys[i] = attnum - 1;
		}
		RelationClose(irel);
	}
	else if (identity == REPLICA_IDENTITY_FULL)
	{
		TupleDesc	desc = t->tupdesc;

		t->keys = MemoryContextAlloc(entry->mcxt, sizeof(int) * Max(desc->natts, 1));
		for (int i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				t->keys[t->nkeys++] = i;
	}
}

/*
 * A column named _id: documents with a key start with _id, so the column is
 * left out of them.  Where the column is part of the key its value is in _id
 * anyway; where it is not, say so once.
 */
static void
find_id_column(BsonStreamTable *entry)
{
	BsonChangeTable *t = &entry->change;
	bool		in_key = false;

	t->id_column = -1;
	for (int i = 0; i < t->tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(t->tupdesc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), "_id") == 0)
			t->id_column = i;
	}
	if (t->id_column < 0 || t->nkeys == 0)
		return;
	for (int i = 0; i < t->nkeys; i++)
		if (t->keys[i] == t->id_column)
			in_key = true;
	if (!in_key && !entry->warned_id_column)
	{
		entry->warned_id_column = true;
		ereport(WARNING,
				(errmsg("column \"_id\" of table %s is left out of its change events",
						entry->name),
				 errdetail("Documents of a table with a replica identity start with _id, the key, and the column is not part of the key."),
				 errhint("Rename the column, or make it the table's replica identity.")));
	}
}

static void
build_table(BsonStreamTable *entry, Relation rel, const BsonStreamOptions *opts,
			const char *db)
{
	const char *schema = get_namespace_name(RelationGetNamespace(rel));
	const char *relname = RelationGetRelationName(rel);
	BsonChangeTable *t = &entry->change;
	MemoryContext old;

	/*
	 * Valid from the start: an invalidation that arrives while the catalogs
	 * are read below sets it back, so that it is not lost.  An error on the
	 * way ends the decoding session, and the next one starts a new cache.
	 */
	entry->valid = true;
	if (entry->mcxt != NULL)
		MemoryContextDelete(entry->mcxt);
	entry->mcxt = AllocSetContextCreate(tables_cxt, "bson_out table",
										ALLOCSET_SMALL_SIZES);
	memset(t, 0, sizeof(*t));
	entry->has_composites = false;
	if (schema == NULL)
		elog(ERROR, "cache lookup failed for namespace %u", RelationGetNamespace(rel));
	entry->name = MemoryContextStrdup(entry->mcxt,
									  quote_qualified_identifier(schema, relname));
	entry->selected = bson_stream_table_selected(opts, schema, relname);
	if (entry->selected)
	{
		const char *coll = relname;

		if (opts->include_schema || strcmp(schema, "public") != 0)
			coll = psprintf("%s.%s", schema, relname);
		bson_change_table_ns(t, db, coll, entry->mcxt);
		t->columns = bson_record_cache_for_tupdesc(RelationGetDescr(rel), entry->mcxt);
		old = MemoryContextSwitchTo(entry->mcxt);
		t->tupdesc = CreateTupleDescCopy(RelationGetDescr(rel));
		MemoryContextSwitchTo(old);
		entry->has_composites = bson_record_cache_has_composites(t->columns);
		if (entry->has_composites)
			tables_have_composites = true;
		find_key_columns(entry, rel);
		find_id_column(entry);
	}
}

BsonStreamTable *
bson_stream_table(Relation rel, const BsonStreamOptions *opts, const char *db)
{
	Oid			relid = RelationGetRelid(rel);
	BsonStreamTable *entry;
	bool		found;

	Assert(tables != NULL);
	entry = (BsonStreamTable *) hash_search(tables, &relid, HASH_ENTER, &found);
	if (!found)
	{
		memset(entry, 0, sizeof(*entry));
		entry->relid = relid;
	}
	/*
	 * Besides the invalidations, a cheap check that costs nothing to keep:
	 * rows of another column count cannot be read with this mapping.
	 */
	if (!entry->valid ||
		(entry->selected && entry->change.tupdesc->natts != RelationGetDescr(rel)->natts))
		build_table(entry, rel, opts, db);
	return entry;
}
