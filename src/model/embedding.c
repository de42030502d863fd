/*
 * embedding.c
 *		The declarations of child tables embedded in their parent's
 *		document (embedding.h): bson_embed() and bson_unembed(), which
 *		change them, and bson_embeddings_load(), which reads them back and
 *		checks that each still holds.
 *
 * The declarations live in the extension's table bson_embedding, so that
 * pg_dump keeps them (a configuration table) and logical decoding can read
 * them as of a change (a user catalog table).  Users may read it; only the
 * functions here write it, as its owner, after checking the caller owns
 * both tables.
 */
#include "embedding.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "citus_tables.h"
#include "table_model.h"

#define EMBEDDING_TABLE "bson_embedding"
#define NATTS_EMBEDDING 7

/*
 * Why a declaration does not hold, kept where it is found, for the caller
 * to raise as an error (a declaration, a query) or a warning (logical
 * decoding, which must not stop at a declaration broken since it was made:
 * it leaves it out, and the parent's documents change shape)
 */
typedef struct Problem
{
	int			code;
	char	   *message;
	char	   *detail;
	char	   *hint;
} Problem;

static Problem problem;

static void
note_problem(int code, char *message, char *detail, char *hint)
{
	problem.code = code;
	problem.message = message;
	problem.detail = detail;
	problem.hint = hint;
}

#define REFUSE(code, message, detail, hint) \
	do { note_problem(code, message, detail, hint); return false; } while (0)

static void
report_problem(int level)
{
	ereport(level,
			(errcode(problem.code),
			 errmsg_internal("%s", problem.message),
			 problem.detail ? errdetail_internal("%s", problem.detail) : 0,
			 problem.hint ? errhint("%s", problem.hint) : 0));
}

/* What the table holds of one declaration */
typedef struct Declared
{
	Oid			child;
	Oid			parent;
	char	   *constraint_name;
	char	   *field;
	char	   *shape;
	bool		keep_collection;
	ArrayType  *columns;		/* NULL: all but the foreign key's */
} Declared;

static Oid
embedding_table(Oid nsp)
{
	Oid			relid = get_relname_relid(EMBEDDING_TABLE, nsp);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table %s.%s of extension bson_out does not exist",
						get_namespace_name(nsp), EMBEDDING_TABLE),
				 errhint("Update the extension: ALTER EXTENSION bson_out UPDATE.")));
	return relid;
}

/* The rows of bson_embedding as the current query sees them */
static List *
read_declared(Oid nsp, bool latest)
{
	Oid			relid = embedding_table(nsp);
	Relation	rel = table_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);

	/*
	 * As the query sees them; in logical decoding (a user catalog table) as
	 * they were at the change being decoded
	 */
	Snapshot	snapshot = RegisterSnapshot(HistoricSnapshotActive() ?
											GetCatalogSnapshot(relid) :
											latest ? GetLatestSnapshot() :
											ActiveSnapshotSet() ?
											GetActiveSnapshot() :
											GetTransactionSnapshot());
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, snapshot, 0, NULL);
	HeapTuple	tuple;
	List	   *rows = NIL;

	if (desc->natts != NATTS_EMBEDDING)
		elog(ERROR, "table %s has %d columns, not %d", EMBEDDING_TABLE,
			 desc->natts, NATTS_EMBEDDING);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Datum		values[NATTS_EMBEDDING];
		bool		nulls[NATTS_EMBEDDING];
		Declared   *d = palloc0(sizeof(Declared));

		CHECK_FOR_INTERRUPTS();
		heap_deform_tuple(tuple, desc, values, nulls);
		for (int i = 0; i < 6; i++)
			if (nulls[i])
				elog(ERROR, "column %d of %s is null", i + 1, EMBEDDING_TABLE);
		d->child = DatumGetObjectId(values[0]);
		d->parent = DatumGetObjectId(values[1]);
		d->constraint_name = pstrdup(NameStr(*DatumGetName(values[2])));
		d->field = TextDatumGetCString(values[3]);
		d->shape = TextDatumGetCString(values[4]);
		d->keep_collection = DatumGetBool(values[5]);
		d->columns = nulls[6] ? NULL : DatumGetArrayTypePCopy(values[6]);
		rows = lappend(rows, d);
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return rows;
}

/* "the embedding of public.lines into public.orders" */
static char *
declaration_name(const Declared *d)
{
	return psprintf("the embedding of %s into %s",
					get_rel_name(d->child) ? bson_table_name(d->child) :
					psprintf("table %u", d->child),
					get_rel_name(d->parent) ? bson_table_name(d->parent) :
					psprintf("table %u", d->parent));
}

/* A table that can be embedded or embed: a table of rows, not a partition */
static bool
check_table_kind(Oid relid, const char *role, const Declared *d)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class c;
	char		relkind;
	char		persistence;
	bool		partition;

	if (!HeapTupleIsValid(tuple))
		REFUSE(ERRCODE_UNDEFINED_TABLE, psprintf("%s table of %s no longer exists", role,
						declaration_name(d)), NULL, psprintf("Remove the declaration: SELECT bson_unembed(%u).",
						 d->child));
	c = (Form_pg_class) GETSTRUCT(tuple);
	relkind = c->relkind;
	persistence = c->relpersistence;
	partition = c->relispartition;
	ReleaseSysCache(tuple);
	if ((relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE) ||
		persistence != RELPERSISTENCE_PERMANENT)
		REFUSE(ERRCODE_WRONG_OBJECT_TYPE,
			   psprintf("%s cannot be embedded or embed: it is not a logged table",
						bson_table_name(relid)),
			   psprintf("Only the rows of tables that the change stream carries can be embedded."),
			   NULL);
	if (partition)
		REFUSE(ERRCODE_WRONG_OBJECT_TYPE,
			   psprintf("%s cannot be embedded or embed: it is a partition", bson_table_name(relid)),
			   psprintf("A partition's rows belong to its root table's documents."),
			   psprintf("Declare the embedding on the partitioned table at the root."));
	if (bson_citus_loaded() && bson_citus_is_sharded(relid))
		REFUSE(ERRCODE_FEATURE_NOT_SUPPORTED,
			   psprintf("%s cannot be embedded or embed: it is a Citus table", bson_table_name(relid)),
			   psprintf("Each node streams the changes of its shards, which it cannot embed in documents whose rows are on other nodes."),
			   NULL);
	return true;
}

/*
 * A table opened to read its definition: locked until the transaction
 * ends, as a query's tables are; in logical decoding as the plugin opens
 * its tables, without a lock (a walsender that waits for a lock can wait
 * for a transaction that waits for it, with synchronous replication)
 */
static Relation
open_rel(Oid relid)
{
	Relation	rel;

	if (!HistoricSnapshotActive())
		return relation_open(relid, AccessShareLock);
	rel = RelationIdGetRelation(relid);
	if (!RelationIsValid(rel))
		elog(ERROR, "could not open relation with OID %u", relid);
	return rel;
}

static void
close_rel(Relation rel)
{
	if (HistoricSnapshotActive())
		RelationClose(rel);
	else
		relation_close(rel, NoLock);
}

/* The key model of a table, worked out in the current context */
static void
table_key(Oid relid, BsonChangeTable *model)
{
	Relation	rel = open_rel(relid);

	memset(model, 0, sizeof(*model));
	bson_table_model_build(model, rel, CurrentMemoryContext);
	close_rel(rel);
}

static bool
attnum_in(AttrNumber att, const AttrNumber *set, int n)
{
	for (int i = 0; i < n; i++)
		if (set[i] == att)
			return true;
	return false;
}

static bool
key_has(const BsonChangeTable *model, AttrNumber att)
{
	for (int i = 0; i < model->nkeys; i++)
		if (model->keys[i] + 1 == att)
			return true;
	return false;
}

/*
 * The foreign key: its columns of child mapped onto the parent's key, in
 * the key's order.
 */
static bool
resolve_foreign_key(BsonEmbedding *e, const Declared *d,
					const BsonChangeTable *parent_key)
{
	Oid			conoid = get_relation_constraint_oid(d->child, d->constraint_name, true);
	HeapTuple	tuple;
	Form_pg_constraint con;
	char		contype;
	Oid			confrelid;
	Datum		datum;
	bool		isnull;
	ArrayType  *conkey;
	ArrayType  *confkey;
	int16	   *from;
	int16	   *to;
	int			n;

	if (!OidIsValid(conoid))
		REFUSE(ERRCODE_UNDEFINED_OBJECT,
			   psprintf("constraint \"%s\" of table %s does not exist",
						d->constraint_name, bson_table_name(d->child)),
			   psprintf("It is the foreign key of %s.", declaration_name(d)),
			   psprintf("Declare the embedding again with the table's foreign key, or remove it: SELECT bson_unembed('%s').",
						bson_table_name(d->child)));
	tuple = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for constraint %u", conoid);
	con = (Form_pg_constraint) GETSTRUCT(tuple);
	contype = con->contype;
	confrelid = con->confrelid;
	datum = SysCacheGetAttr(CONSTROID, tuple, Anum_pg_constraint_conkey, &isnull);
	conkey = isnull ? NULL : DatumGetArrayTypePCopy(datum);
	datum = SysCacheGetAttr(CONSTROID, tuple, Anum_pg_constraint_confkey, &isnull);
	confkey = isnull ? NULL : DatumGetArrayTypePCopy(datum);
	ReleaseSysCache(tuple);
	if (contype != CONSTRAINT_FOREIGN || confrelid != d->parent || conkey == NULL || confkey == NULL)
		REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION,
			   psprintf("constraint \"%s\" of table %s is not a foreign key that references %s",
						d->constraint_name, bson_table_name(d->child),
						bson_table_name(d->parent)),
			   psprintf("A child's rows are embedded by the foreign key that names their parent's row."),
			   NULL);
	n = ARR_DIMS(conkey)[0];
	from = (int16 *) ARR_DATA_PTR(conkey);
	to = (int16 *) ARR_DATA_PTR(confkey);

	/* it must reference the parent's _id: exactly its key's columns */
	if (parent_key->nkeys == 0 || parent_key->id_whole_row || n != parent_key->nkeys)
		goto not_the_key;
	e->nfk = n;
	e->fk = palloc(sizeof(AttrNumber) * n);
	e->ref = palloc(sizeof(AttrNumber) * n);
	for (int k = 0; k < n; k++)
	{
		AttrNumber	want = parent_key->keys[k] + 1;
		int			j;

		for (j = 0; j < n; j++)
			if (to[j] == want)
				break;
		if (j == n)
			goto not_the_key;
		e->fk[k] = from[j];
		e->ref[k] = want;
	}

	/* a row names its parent's _id by its own values: written alike */
	for (int k = 0; k < n; k++)
	{
		Oid			ctype;
		Oid			ptype;
		int32		cmod;
		int32		pmod;
		Oid			coll;

		get_atttypetypmodcoll(d->child, e->fk[k], &ctype, &cmod, &coll);
		get_atttypetypmodcoll(d->parent, e->ref[k], &ptype, &pmod, &coll);
		if (ctype != ptype || cmod != pmod)
			REFUSE(ERRCODE_DATATYPE_MISMATCH,
				   psprintf("column \"%s\" of table %s is of type %s, but the column \"%s\" of %s it references is of type %s",
							get_attname(d->child, e->fk[k], false), bson_table_name(d->child),
							format_type_with_typemod(ctype, cmod),
							get_attname(d->parent, e->ref[k], false), bson_table_name(d->parent),
							format_type_with_typemod(ptype, pmod)),
				   psprintf("An embedded row names its parent's document by the values of its foreign key, which must be written as the parent's _id is."),
				   psprintf("Give the foreign key's columns the types of the columns they reference."));
	}
	return true;

not_the_key:
	REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION,
		   psprintf("foreign key \"%s\" of table %s does not reference the key of %s",
					d->constraint_name, bson_table_name(d->child),
					bson_table_name(d->parent)),
		   psprintf("An embedded row names its parent's document by the parent's _id, which is its replica identity (its primary key, or the index REPLICA IDENTITY USING INDEX names)."),
		   psprintf("Reference the parent's primary key with the foreign key."));
}

/* Is the foreign key unique in child: at most one child per parent? */
static bool
foreign_key_unique(Oid child, const AttrNumber *fk, int nfk)
{
	Relation	rel = open_rel(child);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		unique = false;

	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;
		bool		within = true;

		if (!HeapTupleIsValid(tuple))
			continue;
		index = (Form_pg_index) GETSTRUCT(tuple);
		if (!index->indisunique || !index->indimmediate ||
			!heap_attisnull(tuple, Anum_pg_index_indpred, NULL) ||
			!heap_attisnull(tuple, Anum_pg_index_indexprs, NULL))
			within = false;
		for (int i = 0; within && i < index->indnkeyatts; i++)
			within = attnum_in(index->indkey.values[i], fk, nfk);
		ReleaseSysCache(tuple);
		if (within)
		{
			unique = true;
			break;
		}
	}
	list_free(indexes);
	close_rel(rel);
	return unique;
}

/*
 * Types whose order MongoDB and PostgreSQL share (text compared as COLLATE
 * "C" compares it: bytes), which an element's key may have: the applier
 * keeps an array in its key's order.
 */
static bool
element_key_type(Oid type)
{
	switch (getBaseType(type))
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case TEXTOID:
		case VARCHAROID:
		case UUIDOID:
		case DATEOID:
			return true;
		default:
			return false;
	}
}

/* One declaration, resolved against the catalogs and checked on its own */
static bool
resolve(const Declared *d, BsonEmbedding **out)
{
	BsonEmbedding *e = palloc0(sizeof(BsonEmbedding));
	BsonChangeTable parent_key;
	BsonChangeTable child_key;
	Relation	rel;
	TupleDesc	desc;
	bool		unique;

	*out = NULL;
	if (!check_table_kind(d->child, "the embedded", d) ||
		!check_table_kind(d->parent, "the parent", d))
		return false;
	e->child = d->child;
	e->parent = d->parent;
	e->constraint_name = d->constraint_name;
	e->field = d->field;
	e->keep_collection = d->keep_collection;
	table_key(d->parent, &parent_key);
	table_key(d->child, &child_key);
	if (!resolve_foreign_key(e, d, &parent_key))
		return false;

	unique = foreign_key_unique(d->child, e->fk, e->nfk);
	if (strcmp(d->shape, "array") == 0)
		e->array = true;
	else if (strcmp(d->shape, "document") == 0)
	{
		if (!unique)
			REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION, psprintf("the rows of %s cannot be embedded in %s as one document",
							bson_table_name(d->child), bson_table_name(d->parent)), psprintf("No unique index of %s holds the columns of its foreign key \"%s\" alone: a parent can have several.",
							   bson_table_name(d->child), d->constraint_name), psprintf("Embed them as an array (shape => 'array'), or make the foreign key unique."));
	}
	else
		REFUSE(ERRCODE_INVALID_PARAMETER_VALUE, psprintf("invalid shape \"%s\" of an embedding", d->shape), NULL, psprintf("An embedding's shape is 'array' (one-to-many) or 'document' (one-to-one)."));

	/* the element's key: the child's key without the foreign key */
	if (child_key.nkeys == 0 || child_key.id_whole_row)
		REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION, psprintf("table %s has no key, so its rows cannot be embedded",
						bson_table_name(d->child)), psprintf("An embedded row is found in its parent's document by its key."), psprintf("Give the table a primary key."));
	e->element_key = palloc(sizeof(AttrNumber) * child_key.nkeys);
	for (int i = 0; i < child_key.nkeys; i++)
		if (!attnum_in(child_key.keys[i] + 1, e->fk, e->nfk))
			e->element_key[e->nelement_key++] = child_key.keys[i] + 1;
	if (e->array && e->nelement_key == 0)
		REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION, psprintf("the key of %s is its foreign key \"%s\", so its rows cannot be embedded in %s as an array",
						bson_table_name(d->child), d->constraint_name,
						bson_table_name(d->parent)), psprintf("A parent has at most one such row."), psprintf("Embed it as one document (shape => 'document')."));

	/* a move to another parent must be seen: the old row names its parent */
	if (!child_key.old_row_whole)
		for (int i = 0; i < e->nfk; i++)
			if (!key_has(&child_key, e->fk[i]))
				REFUSE(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, psprintf("the replica identity of %s does not include its foreign key \"%s\"",
								bson_table_name(d->child), d->constraint_name), psprintf("An update that moves a row of %s to another parent would not log the parent it leaves, whose document would keep it.",
								   bson_table_name(d->child)), psprintf("ALTER TABLE %s REPLICA IDENTITY FULL, or give it a replica identity index that includes the foreign key's columns.",
								 bson_table_name(d->child)));

	rel = open_rel(d->child);
	desc = CreateTupleDescCopy(RelationGetDescr(rel));
	close_rel(rel);
	e->natts = desc->natts;
	e->included = palloc0(sizeof(bool) * Max(desc->natts, 1));
	if (d->columns == NULL)
	{
		for (int i = 0; i < desc->natts; i++)
			e->included[i] = !TupleDescAttr(desc, i)->attisdropped &&
				!attnum_in(i + 1, e->fk, e->nfk);
	}
	else
	{
		Datum	   *names;
		bool	   *nulls;
		int			n;

		deconstruct_array(d->columns, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
						  &names, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			AttrNumber	att = nulls[i] ? InvalidAttrNumber :
				get_attnum(d->child, NameStr(*DatumGetName(names[i])));

			if (att <= 0)
				REFUSE(ERRCODE_UNDEFINED_COLUMN, psprintf("column \"%s\" of table %s does not exist",
								nulls[i] ? "(null)" : NameStr(*DatumGetName(names[i])),
								bson_table_name(d->child)), psprintf("It is one of the columns of %s.", declaration_name(d)), NULL);
			e->included[att - 1] = true;
		}
	}
	for (int i = 0; i < e->nelement_key; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, e->element_key[i] - 1);

		if (e->array && !e->included[e->element_key[i] - 1])
			REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION, psprintf("column \"%s\" of table %s must be in its embedded rows",
							NameStr(a->attname), bson_table_name(d->child)), psprintf("It is part of the key by which an element is found in its parent's array."), NULL);
		if (e->array && !element_key_type(a->atttypid))
			REFUSE(ERRCODE_FEATURE_NOT_SUPPORTED, psprintf("column \"%s\" of table %s, of type %s, cannot order the elements of an embedded array",
							NameStr(a->attname), bson_table_name(d->child),
							format_type_be(a->atttypid)), psprintf("Elements are kept in the order of their key, which MongoDB and PostgreSQL must compare alike: integers, text and varchar (as COLLATE \"C\"), uuid and date do."), psprintf("Give the table a key of such columns."));
	}

	/* the field: a name of its own in the parent's documents */
	if (e->field[0] == '\0' || e->field[0] == '$' || strchr(e->field, '.') != NULL ||
		strcmp(e->field, "_id") == 0)
		REFUSE(ERRCODE_INVALID_NAME, psprintf("invalid field name \"%s\" for an embedding", e->field), psprintf("The field of embedded rows cannot be empty or _id, start with $ or hold a dot."), NULL);
	{
		AttrNumber	att = get_attnum(d->parent, e->field);

		if (att > 0)
			REFUSE(ERRCODE_DUPLICATE_COLUMN, psprintf("table %s has a column named \"%s\", the field of %s",
							bson_table_name(d->parent), e->field,
							declaration_name(d)), NULL, psprintf("Name the embedded field differently."));
	}
	*out = e;
	return true;
}

BsonEmbedding *
bson_embedding_of(List *embeddings, Oid child)
{
	ListCell   *lc;

	foreach(lc, embeddings)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);

		if (e->child == child)
			return e;
	}
	return NULL;
}

/*
 * The rules between declarations: depth, cycles, a row names the top; false
 * with *bad the first declaration that breaks one
 */
static bool
check_together(List *embeddings, BsonEmbedding **bad)
{
	ListCell   *lc;

	foreach(lc, embeddings)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);
		BsonEmbedding *up = bson_embedding_of(embeddings, e->parent);
		int			depth = 1;
		ListCell   *other;

		CHECK_FOR_INTERRUPTS();
		*bad = e;
		if (up != NULL)
			for (int i = 0; i < up->nfk; i++)
				if (!attnum_in(up->fk[i], e->ref, e->nfk))
					REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION, psprintf("the key of %s does not include its foreign key \"%s\", so the rows of %s cannot be embedded in it",
									bson_table_name(e->parent), up->constraint_name,
									bson_table_name(e->child)), psprintf("A row embedded below the top must name the top document from its own columns: its foreign key references its parent's key, which must hold the key of the parent's parent."), psprintf("Make the foreign key of %s part of its primary key (as in PRIMARY KEY (order_id, line_no)), and reference that key.",
									 bson_table_name(e->parent)));
		for (; up != NULL; up = bson_embedding_of(embeddings, up->parent))
		{
			CHECK_FOR_INTERRUPTS();
			if (up->child == e->child)
				REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION, psprintf("table %s would be embedded in itself",
								bson_table_name(e->child)), psprintf("Its embeddings make a cycle."), NULL);
			if (++depth > BSON_EMBED_MAX_DEPTH)
				REFUSE(ERRCODE_PROGRAM_LIMIT_EXCEEDED, psprintf("table %s would be embedded %d levels deep", bson_table_name(e->child), depth), psprintf("Rows are embedded at most %d levels below a top document.",
								   BSON_EMBED_MAX_DEPTH), NULL);
		}
		for_each_from(other, embeddings, foreach_current_index(lc) + 1)
		{
			BsonEmbedding *o = (BsonEmbedding *) lfirst(other);

			if (o->parent == e->parent && strcmp(o->field, e->field) == 0)
				REFUSE(ERRCODE_DUPLICATE_OBJECT, psprintf("the rows of %s and of %s would both be field \"%s\" of %s",
								bson_table_name(e->child), bson_table_name(o->child),
								e->field, bson_table_name(e->parent)), NULL, psprintf("Name the embedded field differently."));
		}
		if (e->keep_collection && bson_embeddings_into(embeddings, e->child) != NIL)
			REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION, psprintf("table %s keeps a collection of its own and has rows embedded in it",
							bson_table_name(e->child)), psprintf("The rows embedded in it are written into its top document only."), psprintf("Embed %s without keep_collection, or embed no rows in it.",
							 bson_table_name(e->child)));
		if (e->child == e->parent)
			REFUSE(ERRCODE_INVALID_OBJECT_DEFINITION, psprintf("table %s would be embedded in itself",
							bson_table_name(e->child)), NULL, NULL);
	}
	*bad = NULL;
	return true;
}

/*
 * The declarations, resolved and checked; one that does not hold raised at
 * level: an error, or a warning and the declaration left out
 */
static List *
load(Oid nsp, bool latest, int level)
{
	List	   *declared;
	List	   *embeddings = NIL;
	ListCell   *lc;
	BsonEmbedding *bad;

	/* before the update of the extension that makes the table: none */
	if (!OidIsValid(get_relname_relid(EMBEDDING_TABLE, nsp)))
		return NIL;
	declared = read_declared(nsp, latest);
	foreach(lc, declared)
	{
		BsonEmbedding *e;

		if (resolve((Declared *) lfirst(lc), &e))
			embeddings = lappend(embeddings, e);
		else
			report_problem(level);
	}
	while (!check_together(embeddings, &bad))
	{
		report_problem(level);
		embeddings = list_delete_ptr(embeddings, bad);
	}
	return embeddings;
}

List *
bson_embeddings_load(Oid nsp)
{
	return load(nsp, false, ERROR);
}

/* The extension's schema, InvalidOid where it is not installed */
static Oid
extension_namespace(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("bson_out"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)))
		nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

List *
bson_embeddings_load_any(void)
{
	Oid			nsp = extension_namespace();

	/* a stream of a database without the extension */
	if (!OidIsValid(nsp))
		return NIL;
	return load(nsp, false, WARNING);
}

List *
bson_embeddings_for(List *embeddings, bool partition_root)
{
	List	   *out = NIL;
	ListCell   *lc;

	if (partition_root)
		return embeddings;
	foreach(lc, embeddings)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);
		bool		partitioned = false;

		for (BsonEmbedding *up = e; up != NULL && !partitioned;
			 up = bson_embedding_of(embeddings, up->parent))
			partitioned = get_rel_relkind(up->child) == RELKIND_PARTITIONED_TABLE ||
				get_rel_relkind(up->parent) == RELKIND_PARTITIONED_TABLE;
		if (!partitioned)
			out = lappend(out, e);
	}
	return out;
}

static int
field_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(((BsonEmbedding *) lfirst(a))->field,
				  ((BsonEmbedding *) lfirst(b))->field);
}

List *
bson_embeddings_into(List *embeddings, Oid table)
{
	List	   *into = NIL;
	ListCell   *lc;

	foreach(lc, embeddings)
	{
		BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);

		if (e->parent == table)
			into = lappend(into, e);
	}
	list_sort(into, field_cmp);
	return into;
}

/*
 * Run sql on bson_embedding as the table's owner (users may only read it),
 * with args.
 */
static void
write_as_owner(Oid nsp, const char *sql, int nargs, Oid *types, Datum *values,
			   const char *nulls)
{
	Oid			table = embedding_table(nsp);
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(table));
	Oid			owner;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int			rc;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", table);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	/* nothing of the caller's search_path runs as the owner */
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (rc != SPI_OK_INSERT && rc != SPI_OK_DELETE)
		elog(ERROR, "SPI_execute_with_args failed: %d", rc);
	SPI_finish();
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	CommandCounterIncrement();
}

static void
check_owner(Oid relid)
{
	if (!bson_table_owned_by(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", bson_table_name(relid)),
				 errdetail("Embedding changes the documents of both tables.")));
}

/* The foreign key of child that references parent, when there is one */
static char *
only_foreign_key(Oid child, Oid parent)
{
	Relation	rel = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *found = NULL;
	int			n = 0;

	ScanKeyInit(&key, Anum_pg_constraint_conrelid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(child));
	scan = systable_beginscan(rel, ConstraintRelidTypidNameIndexId, true,
							  NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tuple);

		if (con->contype == CONSTRAINT_FOREIGN && con->confrelid == parent)
		{
			n++;
			found = pstrdup(NameStr(con->conname));
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s has no foreign key that references %s",
						bson_table_name(child), bson_table_name(parent)),
				 errdetail("A child's rows are embedded by the foreign key that names their parent's row."),
				 errhint("Add one: ALTER TABLE %s ADD FOREIGN KEY (...) REFERENCES %s.",
						 bson_table_name(child), bson_table_name(parent))));
	if (n > 1)
		ereport(ERROR,
				(errcode(ERRCODE_AMBIGUOUS_PARAMETER),
				 errmsg("table %s has %d foreign keys that reference %s",
						bson_table_name(child), n, bson_table_name(parent)),
				 errhint("Name the one that embeds its rows: foreign_key => '...'.")));
	return found;
}

/*
 * The 0-based column of the event's table (chain's first child) that holds
 * attribute att of the table depth levels above it: the foreign keys'
 * columns, followed down
 */
static int
column_below(BsonEmbedding **chain, int depth, AttrNumber att)
{
	for (int i = depth; i > 0; i--)
	{
		BsonEmbedding *e = chain[i - 1];
		int			j;

		for (j = 0; j < e->nfk; j++)
			if (e->ref[j] == att)
				break;
		if (j == e->nfk)
			elog(ERROR, "column %d of the table above %s is not in its foreign key",
				 att, bson_table_name(e->child));
		att = e->fk[j];
	}
	return att - 1;
}

Oid
bson_embedding_model(List *embeddings, Oid table, BsonChangeTable *t,
					 const char *db, bool include_schema, MemoryContext mcxt)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	List	   *into = bson_embeddings_into(embeddings, table);
	BsonEmbedding *chain[BSON_EMBED_MAX_DEPTH + 1];
	int			n = 0;
	BsonEmbedPath *path;
	BsonEmbedLevel *levels;
	Oid			top;
	BsonChangeTable top_ns = {0};
	ListCell   *lc;

	/* the fields of its documents or elements */
	t->nembedded = list_length(into);
	t->embedded = NULL;
	t->embedded_shape = bson_embedded_shape(embeddings, table);
	if (t->nembedded > 0)
	{
		BsonEmbedField *fields = palloc(sizeof(BsonEmbedField) * t->nembedded);

		foreach(lc, into)
		{
			BsonEmbedding *e = (BsonEmbedding *) lfirst(lc);

			fields[foreach_current_index(lc)].name = pstrdup(e->field);
			fields[foreach_current_index(lc)].array = e->array;
		}
		t->embedded = fields;
	}

	/* where its rows go */
	t->embed = NULL;
	for (BsonEmbedding *e = bson_embedding_of(embeddings, table); e != NULL;
		 e = bson_embedding_of(embeddings, e->parent))
	{
		if (n > BSON_EMBED_MAX_DEPTH)
			elog(ERROR, "embeddings deeper than %d levels", BSON_EMBED_MAX_DEPTH);
		chain[n++] = e;
	}
	if (n == 0)
	{
		MemoryContextSwitchTo(old);
		return InvalidOid;
	}
	top = chain[n - 1]->parent;
	path = palloc0(sizeof(BsonEmbedPath));
	levels = palloc0(sizeof(BsonEmbedLevel) * n);
	bson_change_table_ns(&top_ns, db, bson_collection_name(top, include_schema), mcxt);
	path->ns = top_ns.ns;
	path->nslen = top_ns.nslen;
	{
		BsonEmbedding *e = chain[n - 1];
		int		   *cols = palloc(sizeof(int) * e->nfk);
		const char **names = palloc(sizeof(char *) * e->nfk);

		for (int j = 0; j < e->nfk; j++)
		{
			cols[j] = column_below(chain, n - 1, e->fk[j]);
			names[j] = get_attname(top, e->ref[j], false);
		}
		path->ntop = e->nfk;
		path->top_columns = cols;
		path->top_names = names;
	}
	for (int i = 0; i < n; i++)
	{
		BsonEmbedding *e = chain[i];
		BsonEmbedLevel *l = &levels[n - 1 - i];
		int		   *cols = palloc(sizeof(int) * Max(e->nelement_key, 1));
		const char **names = palloc(sizeof(char *) * Max(e->nelement_key, 1));

		l->field = pstrdup(e->field);
		l->array = e->array;
		for (int j = 0; j < e->nelement_key; j++)
		{
			cols[j] = column_below(chain, i, e->element_key[j]);
			names[j] = get_attname(e->child, e->element_key[j], false);
		}
		l->nkey = e->array ? e->nelement_key : 0;
		l->key_columns = cols;
		l->key_names = names;
	}
	path->nlevels = n;
	path->levels = levels;
	{
		bool	   *included = palloc(sizeof(bool) * Max(chain[0]->natts, 1));

		memcpy(included, chain[0]->included, sizeof(bool) * chain[0]->natts);
		path->included = included;
	}
	path->own_collection = chain[0]->keep_collection;
	path->top = top;
	t->embed = path;
	MemoryContextSwitchTo(old);
	return top;
}

PG_FUNCTION_INFO_V1(bson_embed);
/*
 * bson_embed(child regclass, parent regclass, field text, foreign_key name,
 * shape text, keep_collection boolean, columns name[])
 */
Datum
bson_embed(PG_FUNCTION_ARGS)
{
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	Oid			child;
	Oid			parent;
	char	   *constraint_name;
	char	   *shape;
	List	   *current;
	Oid			types[NATTS_EMBEDDING] = {REGCLASSOID, REGCLASSOID, NAMEOID, TEXTOID,
	TEXTOID, BOOLOID, NAMEARRAYOID};
	Datum		values[NATTS_EMBEDDING];
	char		nulls[NATTS_EMBEDDING] = "       ";
	Name		conname = palloc0(NAMEDATALEN);

	for (int i = 0; i < 3; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the %s of bson_embed cannot be null",
							i == 0 ? "child" : i == 1 ? "parent" : "field")));
	child = PG_GETARG_OID(0);
	parent = PG_GETARG_OID(1);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(child)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(parent)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist",
						SearchSysCacheExists1(RELOID, ObjectIdGetDatum(child)) ? parent : child)));
	check_owner(child);
	check_owner(parent);
	/* one declaration at a time: the checks read them all */
	LockRelationOid(embedding_table(nsp), ShareRowExclusiveLock);
	constraint_name = PG_ARGISNULL(3) ? only_foreign_key(child, parent) :
		NameStr(*PG_GETARG_NAME(3));

	/* the declarations as they are now, the lock held: none made meanwhile */
	current = load(nsp, true, ERROR);
	if (bson_embedding_of(current, child) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table %s is already embedded", bson_table_name(child)),
				 errhint("Remove its embedding first: SELECT bson_unembed('%s').",
						 bson_table_name(child))));

	if (!PG_ARGISNULL(4))
		shape = text_to_cstring(PG_GETARG_TEXT_PP(4));
	else
	{
		/* one-to-one where the foreign key is unique */
		Declared	probe = {child, parent, constraint_name, "", "array", false, NULL};
		BsonEmbedding e = {0};
		BsonChangeTable parent_key;

		table_key(parent, &parent_key);
		if (!resolve_foreign_key(&e, &probe, &parent_key))
			report_problem(ERROR);
		shape = foreign_key_unique(child, e.fk, e.nfk) ? "document" : "array";
	}

	/* the new declaration on its own, then with every other */
	{
		Declared   *d = palloc0(sizeof(Declared));
		BsonEmbedding *e;
		BsonEmbedding *bad;

		d->child = child;
		d->parent = parent;
		d->constraint_name = constraint_name;
		d->field = text_to_cstring(PG_GETARG_TEXT_PP(2));
		d->shape = shape;
		d->keep_collection = !PG_ARGISNULL(5) && PG_GETARG_BOOL(5);
		d->columns = PG_ARGISNULL(6) ? NULL : PG_GETARG_ARRAYTYPE_P(6);
		if (!resolve(d, &e) || !check_together(lappend(current, e), &bad))
			report_problem(ERROR);
	}

	namestrcpy(conname, constraint_name);
	values[0] = ObjectIdGetDatum(child);
	values[1] = ObjectIdGetDatum(parent);
	values[2] = NameGetDatum(conname);
	values[3] = PointerGetDatum(PG_GETARG_TEXT_PP(2));
	values[4] = CStringGetTextDatum(shape);
	values[5] = BoolGetDatum(!PG_ARGISNULL(5) && PG_GETARG_BOOL(5));
	if (PG_ARGISNULL(6))
		nulls[6] = 'n';
	else
		values[6] = PG_GETARG_DATUM(6);
	write_as_owner(nsp,
				   psprintf("INSERT INTO %s.%s VALUES ($1, $2, $3, $4, $5, $6, $7)",
							quote_identifier(get_namespace_name(nsp)), EMBEDDING_TABLE),
				   NATTS_EMBEDDING, types, values, nulls);
	/* the change streams see the tables' documents change here */
	CacheInvalidateRelcacheByRelid(child);
	CacheInvalidateRelcacheByRelid(parent);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(bson_unembed);
/* bson_unembed(child regclass): the child's rows are its own again */
Datum
bson_unembed(PG_FUNCTION_ARGS)
{
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	Oid			child = PG_GETARG_OID(0);
	List	   *declared;
	ListCell   *lc;
	Declared   *found = NULL;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(child)};

	LockRelationOid(embedding_table(nsp), ShareRowExclusiveLock);
	declared = read_declared(nsp, true);
	foreach(lc, declared)
		if (((Declared *) lfirst(lc))->child == child)
			found = (Declared *) lfirst(lc);
	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not embedded",
						get_rel_name(child) ? bson_table_name(child) :
						psprintf("with OID %u", child))));
	/* the owner of either table (a table that is gone is no one's) */
	if (get_rel_name(child) != NULL && get_rel_name(found->parent) != NULL)
	{
		if (!bson_table_owned_by(found->parent, GetUserId()))
			check_owner(child);
	}
	else if (get_rel_name(child) != NULL)
		check_owner(child);
	else if (get_rel_name(found->parent) != NULL)
		check_owner(found->parent);
	else if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to remove the embedding of a dropped table into a dropped table")));
	write_as_owner(nsp,
				   psprintf("DELETE FROM %s.%s WHERE child::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
							quote_identifier(get_namespace_name(nsp)), EMBEDDING_TABLE),
				   1, types, values, NULL);
	if (get_rel_name(child) != NULL)
		CacheInvalidateRelcacheByRelid(child);
	if (get_rel_name(found->parent) != NULL)
		CacheInvalidateRelcacheByRelid(found->parent);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(bson_embedding_dropped);
/*
 * The event trigger of sql_drop: the declarations of tables or foreign keys
 * that a DROP removed are removed with them, so that no declaration is
 * left that no longer holds (a table dropped, its rows gone with it)
 */
Datum
bson_embedding_dropped(PG_FUNCTION_ARGS)
{
	Oid			nsp;
	List	   *declared;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("bson_embedding_dropped must be called as an event trigger")));
	nsp = extension_namespace();
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid(EMBEDDING_TABLE, nsp)))
		PG_RETURN_VOID();
	LockRelationOid(embedding_table(nsp), ShareRowExclusiveLock);
	declared = read_declared(nsp, true);
	foreach(lc, declared)
	{
		Declared   *d = (Declared *) lfirst(lc);
		bool		child = SearchSysCacheExists1(RELOID, ObjectIdGetDatum(d->child));
		bool		parent = SearchSysCacheExists1(RELOID, ObjectIdGetDatum(d->parent));
		Oid			types[1] = {OIDOID};
		Datum		values[1] = {ObjectIdGetDatum(d->child)};

		CHECK_FOR_INTERRUPTS();
		if (child && parent &&
			OidIsValid(get_relation_constraint_oid(d->child, d->constraint_name, true)))
			continue;
		write_as_owner(nsp,
					   psprintf("DELETE FROM %s.%s WHERE child::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
								quote_identifier(get_namespace_name(nsp)), EMBEDDING_TABLE),
					   1, types, values, NULL);
		if (child)
			CacheInvalidateRelcacheByRelid(d->child);
		if (parent)
			CacheInvalidateRelcacheByRelid(d->parent);
	}
	PG_RETURN_VOID();
}
