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
 * A partition streamed as its root is worked out again when the root is, and
 * so is a Citus shard when its table is.
 *
 * The callbacks cannot be unregistered and outlive the session; the hash
 * table lives in CacheMemoryContext, not in the decoding context, so that
 * what they look at stays valid whichever way the session ends.
 */
#include "stream_tables.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "catalog/partition.h"
#include "miscadmin.h"

#include "citus_tables.h"
#include "collection_rivals.h"
#include "embedding.h"
#include "table_model.h"

static MemoryContext tables_cxt = NULL;
static HTAB *tables = NULL;
static bool tables_have_composites = false;
static bool tables_have_partitions = false;
static bool tables_have_embeddings = false;
static bool callbacks_registered = false;
static uint64 tables_txn = 0;	/* transactions begun in the session */

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

/*
 * Partitions below a table that changed: its name may select them, its
 * definition is their model when they are streamed as their root.
 */
static void
invalidate_partitions_of(Oid ancestor)
{
	HASH_SEQ_STATUS seq;
	BsonStreamTable *entry;

	hash_seq_init(&seq, tables);
	while ((entry = (BsonStreamTable *) hash_seq_search(&seq)) != NULL)
	{
		for (int i = 0; i < entry->nancestors; i++)
			if (entry->ancestors[i] == ancestor)
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
	/*
	 * An entry of embedded rows depends on every table of its chain (their
	 * names, keys and declarations): any of them may be this one
	 */
	if (tables_have_embeddings)
	{
		HASH_SEQ_STATUS seq;

		hash_seq_init(&seq, tables);
		while ((entry = (BsonStreamTable *) hash_seq_search(&seq)) != NULL)
			if (entry->embedding)
				entry->valid = false;
	}
	/* the relid may be a composite type's, or a partitioned table's */
	if (tables_have_composites)
		invalidate_all(true);
	if (tables_have_partitions)
		invalidate_partitions_of(relid);
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
	tables_have_partitions = false;
	tables_txn = 0;
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
 * Does the WAL of partition rel carry the root's key (model's key columns,
 * through the column map) of every row an update or a delete changes?  The
 * partition logs old rows by its own replica identity: whole with FULL, the
 * columns of its identity index when one of them changes (and on every
 * delete), nothing with NOTHING.  Only an identity index whose columns
 * include the root's key logs that key whenever it changes.
 */
static bool
logs_root_key(Relation rel, const BsonChangeTable *model, const int *column_map)
{
	char		identity = rel->rd_rel->relreplident;
	Oid			index;
	Relation	irel;
	bool		logged = true;

	if (model->nkeys == 0 || identity == REPLICA_IDENTITY_FULL)
		return true;
	if (identity == REPLICA_IDENTITY_NOTHING)
		return false;
	index = RelationGetReplicaIndex(rel);
	if (!OidIsValid(index))
		return false;
	irel = RelationIdGetRelation(index);
	if (!RelationIsValid(irel))
		elog(ERROR, "could not open index %u of partition %s", index,
			 RelationGetRelationName(rel));
	for (int k = 0; k < model->nkeys && logged; k++)
	{
		int			column = column_map[model->keys[k]];
		bool		found = false;

		for (int i = 0; i < IndexRelationGetNumberOfKeyAttributes(irel); i++)
			if (irel->rd_index->indkey.values[i] == column + 1)
				found = true;
		logged = found;
	}
	RelationClose(irel);
	return logged;
}

/*
 * A table whose _id is the whole row may hold equal rows, which the events
 * cannot tell apart: the exports refuse such rows (duplicate_ids.h), but the
 * stream sees one change at a time, so it warns once per table and session.
 */
static void
warn_whole_row(const char *name)
{
	ereport(WARNING,
			(errmsg("equal rows of table %s become one document", name),
			 errdetail("Its _id is the whole row (REPLICA IDENTITY FULL without a primary key): equal rows have one _id, so a consumer holds one document for all of them, and the update or delete of one of them changes or deletes that document."),
			 errhint("Give the table a primary key, or set REPLICA IDENTITY USING INDEX on a unique index.")));
}

static void
build_table(BsonStreamTable *entry, Relation rel, const BsonStreamOptions *opts,
			const char *db)
{
	Oid			relid = RelationGetRelid(rel);
	bool		here;
	Oid			table = bson_collection_table(relid, opts->partition_root, NULL);
	Oid			own = bson_collection_table(relid, false, &here);
	char	   *unseen = table == relid ? bson_citus_unseen_shard_name(relid, &here) : NULL;
	BsonChangeTable *t = &entry->change;

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
	entry->root = InvalidOid;
	entry->shard_of = own != relid ? own : InvalidOid;
	entry->column_map = NULL;
	entry->key_unlogged = false;
	entry->citus_table = false;
	entry->embedding = false;
	entry->ancestors = NULL;
	entry->nancestors = 0;
	entry->natts = RelationGetDescr(rel)->natts;
	entry->name = MemoryContextStrdup(entry->mcxt, bson_table_name(relid));
	/* partitions that are tables of their own leave their root no rows */
	/* whether selected or not: a renamed ancestor can change that */
	/* a Citus shard's table decides it too, as a partition's ancestors do */
	if (rel->rd_rel->relispartition || table != relid)
	{
		List	   *ancestors = rel->rd_rel->relispartition ?
			get_partition_ancestors(relid) : NIL;
		ListCell   *lc;

		entry->ancestors = MemoryContextAlloc(entry->mcxt,
											  sizeof(Oid) * (list_length(ancestors) + 1));
		foreach(lc, ancestors)
			entry->ancestors[entry->nancestors++] = lfirst_oid(lc);
		if (!list_member_oid(ancestors, table))
			entry->ancestors[entry->nancestors++] = table;
		list_free(ancestors);
		tables_have_partitions = true;
	}
	/*
	 * A reference table's copy on a worker: the coordinator streams its
	 * changes.  A Citus table's own relation (on the coordinator, the table
	 * the rows were in before it was distributed) holds none of its rows;
	 * its model is worked out for its truncates only.  Its changes made
	 * before the distribution are the collection's, though (Citus's copy of
	 * them to the shards is its own, left out by origin), so it is judged as
	 * it was when the change was made; the relcache invalidation of the
	 * distribution rebuilds the entry at that point of the stream.
	 */
	if (unseen != NULL)
		entry->selected = here &&
			bson_names_selected(opts->include_tables, opts->exclude_tables,
								get_namespace_name(get_rel_namespace(relid)), unseen);
	else
	{
		entry->citus_table = here && bson_citus_sharded_at_change(relid);
		entry->selected = here &&
			(opts->partition_root || rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE) &&
			bson_table_selected(opts->include_tables, opts->exclude_tables, relid,
								opts->partition_root);
	}
	/*
	 * Rows embedded in their parent's documents go where the top document's
	 * table is selected; their own collection is written only where the
	 * declaration keeps it and the filters select it
	 */
	if (unseen == NULL && !entry->citus_table)
	{
		MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext,
													  "bson_out embeddings",
													  ALLOCSET_SMALL_SIZES);
		MemoryContext old = MemoryContextSwitchTo(scratch);
		List	   *embeddings = bson_embeddings_for(bson_embeddings_load_any(),
														 opts->partition_root);
		BsonEmbedding *e = bson_embedding_of(embeddings, table);
		bool		own_selected = entry->selected;
		bool		top_selected = false;

		if (e != NULL)
		{
			Oid			top = e->parent;

			while (bson_embedding_of(embeddings, top) != NULL)
				top = bson_embedding_of(embeddings, top)->parent;
			top_selected = here && bson_table_selected(opts->include_tables, opts->exclude_tables,
													   top, opts->partition_root);
			entry->selected = top_selected || (own_selected && e->keep_collection);
		}
		MemoryContextSwitchTo(old);
		entry->embedding = e != NULL || bson_embeddings_into(embeddings, table) != NIL;
		if (entry->embedding)
			tables_have_embeddings = true;
		if (entry->selected)
		{
			bson_embedding_model(embeddings, table, t, db, opts->include_schema,
								 entry->mcxt);
			if (t->embed != NULL && !top_selected)
				t->embed = NULL;
			else if (t->embed != NULL)
				((BsonEmbedPath *) t->embed)->own_collection = own_selected && e->keep_collection;
		}
		MemoryContextDelete(scratch);
	}
	if (entry->selected)
	{
		Relation	model = rel;
		bool		id_left_out;

		/* as the catalogs were at the change: a table dropped since is no rival */
		if (unseen == NULL && !entry->citus_table)
			bson_check_collection_rivals(table, opts->include_tables, opts->exclude_tables,
										 opts->include_schema, opts->partition_root, NULL);
		bson_change_table_ns(t, db, unseen == NULL ?
							 bson_collection_name(table, opts->include_schema) :
							 bson_collection_name_in(get_namespace_name(get_rel_namespace(relid)),
													 unseen, opts->include_schema),
							 entry->mcxt);
		if (table != relid)
		{
			model = RelationIdGetRelation(table);
			if (!RelationIsValid(model))
				elog(ERROR, "could not open table %u, whose collection holds the rows of %s",
					 table, entry->name);
			entry->root = table;
		}
		id_left_out = bson_table_model_build(t, model, entry->mcxt);
		t->unmappable = opts->unmappable;
		t->policy_name = "unmappable-values";
		t->name = entry->name;
		if (table != relid)
		{
			entry->column_map = bson_partition_column_map(RelationGetDescr(rel),
														  RelationGetDescr(model),
														  entry->mcxt);
			/* the WAL holds old rows as the partition's identity says */
			t->old_row_whole = rel->rd_rel->relreplident == REPLICA_IDENTITY_FULL;
			entry->key_unlogged = !logs_root_key(rel, t, entry->column_map);
			RelationClose(model);
		}
		/* its shards' entries give the warnings */
		if (entry->citus_table)
			entry->warned_lookalike = entry->warned_id_column = entry->warned_whole_row = true;
		if (table == relid && unseen == NULL && !entry->warned_lookalike &&
			OidIsValid(bson_citus_lookalike(relid)))
		{
			entry->warned_lookalike = true;
			ereport(WARNING,
					(errmsg("table %s is named as a shard of %s, which Citus's metadata does not list",
							entry->name, bson_table_name(bson_citus_lookalike(relid))),
					 errdetail("Its changes are streamed under its own name.  A shard that Citus no longer lists is one a split replaced, whose metadata row has been vacuumed away since the change was made."),
					 errhint("A table of your own with such a name is left out of pg_bsonstream's first copy on a Citus node: rename it.")));
		}
		entry->has_composites = bson_record_cache_has_composites(t->columns);
		if (entry->has_composites)
			tables_have_composites = true;
		if (id_left_out && !entry->warned_id_column)
		{
			/* the column is the collection's table's */
			entry->warned_id_column = true;
			bson_warn_id_column_left_out(table == relid ? entry->name :
										 bson_table_name(table));
		}
		if (t->id_whole_row && !entry->warned_whole_row)
		{
			entry->warned_whole_row = true;
			warn_whole_row(table == relid ? entry->name : bson_table_name(table));
		}
	}
	entry->citus_table = entry->citus_table && entry->selected;
	if (entry->citus_table)
		entry->selected = false;
}

/* Nothing told of the table (any more) */
static void
forget(BsonStreamTable *entry)
{
	if (entry->told_shape != NULL)
		pfree(entry->told_shape);
	if (entry->told_ns != NULL)
		pfree(entry->told_ns);
	entry->told_shape = entry->told_ns = NULL;
	entry->told_nslen = 0;
}

/* What the consumer knows of a selected table: what it is now */
static void
tell(BsonStreamTable *entry, const char *shape)
{
	char	   *own = shape ? NULL : bson_table_shape(&entry->change);

	forget(entry);
	entry->told_shape = MemoryContextStrdup(tables_cxt, shape ? shape : own);
	entry->told_ns = MemoryContextAlloc(tables_cxt, entry->change.nslen);
	memcpy(entry->told_ns, entry->change.ns, entry->change.nslen);
	entry->told_nslen = entry->change.nslen;
	if (own)
		pfree(own);
}

/*
 * Is the entry a collection's own table, whose DDL a schema event tells of
 * (not a partition streamed as its root, not a Citus shard or table)?
 */
static bool
own_collection(const BsonStreamTable *entry)
{
	return entry->selected && !OidIsValid(entry->root) && !OidIsValid(entry->shard_of) &&
		!entry->citus_table &&
		(entry->change.embed == NULL || entry->change.embed->own_collection);
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
		entry->made_in = tables_txn;
	}
	/*
	 * Besides the invalidations, a cheap check that costs nothing to keep:
	 * rows of another column count cannot be read with this mapping.
	 */
	if (!entry->valid ||
		(entry->selected && entry->natts != RelationGetDescr(rel)->natts))
		build_table(entry, rel, opts, db);
	/* with schema events, the stream's first sight of it: as the consumer knows it */
	if (!found && opts->schema_events && own_collection(entry))
		tell(entry, NULL);
	return entry;
}

/*
 * Every table whose collection the filters select, worked out as the
 * catalogs are now, from pg_class (scanned with the decoding's snapshot).
 */
static void
work_out_all(const BsonStreamOptions *opts, const char *db)
{
	Relation	rel = table_open(RelationRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple;
	List	   *oids = NIL;
	ListCell   *lc;

	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_class c = (Form_pg_class) GETSTRUCT(tuple);

		CHECK_FOR_INTERRUPTS();
		if ((c->relkind == RELKIND_RELATION || c->relkind == RELKIND_PARTITIONED_TABLE) &&
			c->relpersistence == RELPERSISTENCE_PERMANENT &&
			c->relnamespace != PG_CATALOG_NAMESPACE && !IsToastNamespace(c->relnamespace))
			oids = lappend_oid(oids, c->oid);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	foreach(lc, oids)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	r;

		CHECK_FOR_INTERRUPTS();
		if (bson_collection_table(relid, opts->partition_root, NULL) != relid)
			continue;
		r = RelationIdGetRelation(relid);
		if (!RelationIsValid(r))
			continue;
		(void) bson_stream_table(r, opts, db);
		RelationClose(r);
	}
	list_free(oids);
}

void
bson_stream_tables_begin(const BsonStreamOptions *opts, const char *db)
{
	/*
	 * With schema events, every selected table is known from the session's
	 * first transaction on (before it: its begin sees the catalogs as they
	 * were), so that a DDL of one the stream has no change of yet (dropped,
	 * its composite type or its schema altered) is told too.
	 */
	if (tables_txn == 0 && opts->schema_events)
		work_out_all(opts, db);
	tables_txn++;
}

/* A table the consumer knew, gone from the stream: its last ns and name */
static BsonSchemaChange *
schema_drop(BsonStreamTable *entry)
{
	BsonSchemaChange *c = palloc0(sizeof(BsonSchemaChange));

	c->relid = entry->relid;
	c->ns = palloc(entry->told_nslen);
	memcpy((char *) c->ns, entry->told_ns, entry->told_nslen);
	c->nslen = entry->told_nslen;
	c->name = entry->name ? pstrdup(entry->name) : psprintf("%u", entry->relid);
	forget(entry);
	return c;
}

static void
schema_change_of(List **changes, Oid relid, const BsonStreamOptions *opts, const char *db)
{
	BsonStreamTable *entry = (BsonStreamTable *) hash_search(tables, &relid, HASH_FIND, NULL);
	bool		known = entry != NULL && entry->told_shape != NULL && entry->made_in < tables_txn;
	Relation	rel = RelationIdGetRelation(relid);
	char	   *shape;

	if (!RelationIsValid(rel))
	{
		/* gone: a table the consumer knew loses its collection */
		if (known)
			*changes = lappend(*changes, schema_drop(entry));
		return;
	}
	/*
	 * The collections' tables only: a partition's or a shard's DDL is its
	 * table's, and a table whose rows are not logged has no changes and no
	 * collection
	 */
	if ((rel->rd_rel->relkind != RELKIND_RELATION &&
		 rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE) ||
		rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT ||
		bson_collection_table(relid, opts->partition_root, NULL) != relid)
	{
		RelationClose(rel);
		return;
	}
	entry = bson_stream_table(rel, opts, db);
	RelationClose(rel);
	/* an embedded table's DDL changes its top document's shape */
	if (entry->selected && entry->change.embed != NULL &&
		entry->change.embed->top != relid)
		schema_change_of(changes, entry->change.embed->top, opts, db);
	if (!own_collection(entry))
	{
		/* renamed out of the filters, or distributed by Citus */
		if (known)
			*changes = lappend(*changes, schema_drop(entry));
		return;
	}
	shape = bson_table_shape(&entry->change);
	if (known && strcmp(entry->told_shape, shape) == 0 &&
		entry->told_nslen == entry->change.nslen &&
		memcmp(entry->told_ns, entry->change.ns, entry->change.nslen) == 0)
		return;
	{
		BsonSchemaChange *c = palloc0(sizeof(BsonSchemaChange));

		c->relid = relid;
		c->table = entry;
		c->ns = palloc(entry->change.nslen);
		memcpy((char *) c->ns, entry->change.ns, entry->change.nslen);
		c->nslen = entry->change.nslen;
		c->name = pstrdup(entry->name);
		c->shape = shape;
		*changes = lappend(*changes, c);
	}
	tell(entry, shape);
}

List *
bson_stream_tables_schema_changes(const SharedInvalidationMessage *msgs, int nmsgs,
								  const BsonStreamOptions *opts, const char *db)
{
	List	   *relids = NIL;
	List	   *changes = NIL;
	bool		all = false;
	bool		composites = false;
	ListCell   *lc;

	Assert(tables != NULL);
	for (int i = 0; i < nmsgs; i++)
	{
		const SharedInvalidationMessage *m = &msgs[i];

		if (m->id == SHAREDINVALRELCACHE_ID &&
			(m->rc.dbId == MyDatabaseId || m->rc.dbId == InvalidOid))
		{
			if (!OidIsValid(m->rc.relId))
				all = true;
			else if (get_rel_relkind(m->rc.relId) == RELKIND_COMPOSITE_TYPE)
				composites = true;
			else
				relids = list_append_unique_oid(relids, m->rc.relId);
		}
		/* a schema renamed renames its tables' collections */
		else if (m->id == NAMESPACEOID)
			all = true;
	}
	/*
	 * What the message does not name: the tables the stream has seen (a
	 * table it has not seen yet is told of at its next DDL).
	 */
	if (all || composites)
	{
		HASH_SEQ_STATUS seq;
		BsonStreamTable *entry;

		hash_seq_init(&seq, tables);
		while ((entry = (BsonStreamTable *) hash_seq_search(&seq)) != NULL)
			if (entry->told_shape != NULL && (all || entry->has_composites))
				relids = list_append_unique_oid(relids, entry->relid);
	}
	foreach(lc, relids)
	{
		CHECK_FOR_INTERRUPTS();
		schema_change_of(&changes, lfirst_oid(lc), opts, db);
	}
	list_free(relids);
	return changes;
}
