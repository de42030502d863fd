/*
 * table_model.c
 *		Which collection a table's rows go to, and how a row becomes its
 *		document: see table_model.h.
 */
#include "table_model.h"

#include "access/attmap.h"
#include "catalog/dependency.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
#include "utils/memutils.h"
#include "utils/relcache.h"

#include "citus_tables.h"
#include "table_patterns.h"

/* A Citus shard's table, else relid itself */
static Oid
unsharded(Oid relid, bool *here)
{
	Oid			table = bson_citus_shard_table(relid, here);

	return OidIsValid(table) ? table : relid;
}

Oid
bson_collection_table(Oid relid, bool partition_root, bool *here)
{
	List	   *ancestors;
	Oid			root;
	bool		here_ignored;

	relid = unsharded(relid, here ? here : &here_ignored);
	if (!partition_root || !get_rel_relispartition(relid))
		return relid;
	/* nearest first: the last is the root */
	ancestors = get_partition_ancestors(relid);
	root = ancestors != NIL ? llast_oid(ancestors) : relid;
	list_free(ancestors);
	return root;
}

/* The current schema and name of relid, which exists */
static void
table_names(Oid relid, char **schema, char **name)
{
	*schema = get_namespace_name(get_rel_namespace(relid));
	*name = get_rel_name(relid);
	if (*schema == NULL || *name == NULL)
		elog(ERROR, "cache lookup failed for relation %u", relid);
}

char *
bson_table_name(Oid relid)
{
	char	   *schema;
	char	   *name;

	table_names(relid, &schema, &name);
	return quote_qualified_identifier(schema, name);
}

/* Does a pattern match the table relid (by its current names)? */
static bool
names_match(List *patterns, Oid relid)
{
	char	   *schema;
	char	   *name;

	table_names(relid, &schema, &name);
	return bson_table_patterns_match(patterns, schema, name);
}

/* Does a pattern match relid or, without partition_root, one above it? */
static bool
table_or_ancestor_matches(List *patterns, Oid relid, bool partition_root)
{
	Oid			table = bson_collection_table(relid, partition_root, NULL);
	bool		matched = names_match(patterns, table);
	bool		here;

	/* a shard is named by its table, and so are the partitions above it */
	relid = unsharded(relid, &here);
	if (!partition_root && get_rel_relispartition(relid))
	{
		List	   *ancestors = get_partition_ancestors(relid);
		ListCell   *lc;

		/* every one, so that each pattern that matches is marked used */
		foreach(lc, ancestors)
			matched |= names_match(patterns, lfirst_oid(lc));
		list_free(ancestors);
	}
	return matched;
}

/*
 * Is schema one of the system's (pg_catalog, pg_toast, the
 * temporary ones, information_schema)?  A user cannot name a schema pg_*;
 * the tables an extension keeps there (Citus's metadata) are not the user's
 * data.
 */
static bool
system_schema(const char *schema)
{
	return schema == NULL || strncmp(schema, "pg_", 3) == 0 ||
		strcmp(schema, "information_schema") == 0;
}

/*
 * Is relid the extension's own table of declarations (embedding.h)?  It
 * configures the documents and is none of them.
 */
static bool
own_table(Oid relid)
{
	char	   *name = get_rel_name(relid);

	return name != NULL && strcmp(name, "bson_embedding") == 0 &&
		getExtensionOfObject(RelationRelationId, relid) == get_extension_oid("bson_out", true);
}

bool
bson_table_selected(List *include, List *exclude, Oid relid,
					bool partition_root)
{
	if (system_schema(get_namespace_name(get_rel_namespace(relid))) ||
		own_table(relid))
		return false;
	if (include != NIL &&
		!table_or_ancestor_matches(include, relid, partition_root))
		return false;
	return !table_or_ancestor_matches(exclude, relid, partition_root);
}

bool
bson_names_selected(List *include, List *exclude, const char *schema, const char *name)
{
	if (system_schema(schema))
		return false;
	if (include != NIL && !bson_table_patterns_match(include, schema, name))
		return false;
	return !bson_table_patterns_match(exclude, schema, name);
}

char *
bson_collection_name(Oid relid, bool include_schema)
{
	char	   *schema;
	char	   *name;

	table_names(relid, &schema, &name);
	return bson_collection_name_in(schema, name, include_schema);
}

char *
bson_collection_name_in(const char *schema, const char *name, bool include_schema)
{
	if (include_schema || strcmp(schema, "public") != 0)
		return psprintf("%s.%s", schema, name);
	return pstrdup(name);
}

/*
 * _id's columns: the replica identity's index (the primary key by
 * default), its key columns in the index's order; with REPLICA IDENTITY
 * FULL the primary key if there is one, else every column (the whole row is
 * then the identity).  None with REPLICA IDENTITY NOTHING or without a key
 * to use.
 */
static void
find_key_columns(BsonChangeTable *t, Relation rel, MemoryContext mcxt)
{
	char		identity = rel->rd_rel->relreplident;
	Oid			index = InvalidOid;

	t->nkeys = 0;
	t->keys = NULL;
	t->id_whole_row = false;
	t->old_row_whole = identity == REPLICA_IDENTITY_FULL;
	/* views, foreign tables and composite types have no identity */
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return;
	if (identity == REPLICA_IDENTITY_DEFAULT || identity == REPLICA_IDENTITY_INDEX)
		index = RelationGetReplicaIndex(rel);
	else if (identity == REPLICA_IDENTITY_FULL)
		index = bson_primary_key_index(rel);

	if (OidIsValid(index))
	{
		Relation	irel = RelationIdGetRelation(index);

		if (!RelationIsValid(irel))
			elog(ERROR, "could not open index %u of table %s", index,
				 RelationGetRelationName(rel));
		t->nkeys = IndexRelationGetNumberOfKeyAttributes(irel);
		t->keys = MemoryContextAlloc(mcxt, sizeof(int) * Max(t->nkeys, 1));
		for (int i = 0; i < t->nkeys; i++)
		{
			AttrNumber	attnum = irel->rd_index->indkey.values[i];

			/* identity indexes have no expressions */
			if (attnum <= 0)
				elog(ERROR, "index %u of table %s has an expression column",
					 index, RelationGetRelationName(rel));
			t->keys[i] = attnum - 1;
		}
		RelationClose(irel);
	}
	else if (identity == REPLICA_IDENTITY_FULL)
	{
		TupleDesc	desc = t->tupdesc;

		t->keys = MemoryContextAlloc(mcxt, sizeof(int) * Max(desc->natts, 1));
		for (int i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				t->keys[t->nkeys++] = i;
		/* a table without columns has no _id at all */
		t->id_whole_row = t->nkeys > 0;
	}
}

/*
 * A column named _id: documents with a key start with _id, so the column is
 * left out of them.  Where the column is part of the key its value is in
 * _id anyway.  Returns whether a column not in the key is left out.
 */
static bool
find_id_column(BsonChangeTable *t)
{
	t->id_column = -1;
	for (int i = 0; i < t->tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(t->tupdesc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), "_id") == 0)
			t->id_column = i;
	}
	if (t->id_column < 0 || t->nkeys == 0)
		return false;
	for (int i = 0; i < t->nkeys; i++)
		if (t->keys[i] == t->id_column)
			return false;
	return true;
}

bool
bson_table_model_build(BsonChangeTable *t, Relation rel, MemoryContext mcxt)
{
	MemoryContext old;

	t->columns = bson_record_cache_for_tupdesc(RelationGetDescr(rel), mcxt);
	old = MemoryContextSwitchTo(mcxt);
	t->tupdesc = CreateTupleDescCopy(RelationGetDescr(rel));
	MemoryContextSwitchTo(old);
	find_key_columns(t, rel, mcxt);
	return find_id_column(t);
}

int *
bson_partition_column_map(TupleDesc partition, TupleDesc root,
						  MemoryContext mcxt)
{
	AttrMap    *attrmap = bson_attrmap_by_name(partition, root);
	int		   *map = MemoryContextAlloc(mcxt, sizeof(int) * Max(root->natts, 1));

	for (int i = 0; i < root->natts; i++)
		map[i] = attrmap->attnums[i] - 1;
	free_attrmap(attrmap);
	return map;
}

void
bson_row_to_root(BsonChangeRow *out, const BsonChangeRow *in, const int *map,
				 int root_natts)
{
	out->missing = NULL;
	for (int i = 0; i < root_natts; i++)
	{
		int			from = map[i];

		out->values[i] = from >= 0 ? in->values[from] : (Datum) 0;
		out->nulls[i] = from >= 0 ? in->nulls[from] : true;
		if (from >= 0 && in->missing != NULL && in->missing[from])
		{
			if (out->missing == NULL)
				out->missing = palloc0(sizeof(bool) * root_natts);
			out->missing[i] = true;
		}
	}
}

void
bson_warn_id_column_left_out(const char *name)
{
	ereport(WARNING,
			(errmsg("column \"_id\" of table %s is left out of its documents",
					name),
			 errdetail("Documents of a table with a replica identity start with _id, the key, and the column is not part of the key."),
			 errhint("Rename the column, or make it the table's replica identity.")));
}

/*
 * A column's type for its shape: its name with the typmod, and for a
 * composite type (or an array or domain of one) its attributes, which
 * decide the fields of the embedded documents.
 */
static void
append_shape_type(StringInfo out, Oid type, int32 typmod)
{
	Oid			base = getBaseType(type);
	Oid			elem = get_element_type(base);
	Oid			inner = OidIsValid(elem) ? getBaseType(elem) : base;

	check_stack_depth();
	/* qualified whatever the search_path: the plugin's and a copy's alike */
	escape_json(out, format_type_extended(type, typmod,
										  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
	if (type_is_rowtype(inner) && inner != RECORDOID)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(inner, -1);

		appendStringInfoString(out, ",[");
		for (int i = 0, n = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (att->attisdropped)
				continue;
			if (n++)
				appendStringInfoChar(out, ',');
			appendStringInfoChar(out, '[');
			escape_json(out, NameStr(att->attname));
			appendStringInfoChar(out, ',');
			append_shape_type(out, att->atttypid, att->atttypmod);
			appendStringInfoChar(out, ']');
		}
		appendStringInfoChar(out, ']');
		ReleaseTupleDesc(desc);
	}
}

char *
bson_table_shape(const BsonChangeTable *t)
{
	StringInfoData out;
	TupleDesc	desc = t->tupdesc;

	initStringInfo(&out);
	appendStringInfoString(&out, "{\"_id\":[");
	for (int k = 0; k < t->nkeys; k++)
	{
		if (k)
			appendStringInfoChar(&out, ',');
		escape_json(&out, NameStr(TupleDescAttr(desc, t->keys[k])->attname));
	}
	appendStringInfoString(&out, "],\"columns\":[");
	for (int i = 0, n = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (n++)
			appendStringInfoChar(&out, ',');
		appendStringInfoChar(&out, '[');
		escape_json(&out, NameStr(att->attname));
		appendStringInfoChar(&out, ',');
		append_shape_type(&out, att->atttypid, att->atttypmod);
		/* a column dropped and added again under its name and type is another */
		appendStringInfo(&out, ",%d]", (int) att->attnum);
	}
	appendStringInfoChar(&out, ']');
	/* rows embedded in the documents are part of them */
	if (t->embedded_shape != NULL)
		appendStringInfo(&out, ",\"embedded\":%s", t->embedded_shape);
	appendStringInfoChar(&out, '}');
	return out.data;
}
