/*
 * partition_filter.c
 *		Some partitions' documents as a MongoDB filter: see partition_filter.h.
 *
 * The filter of partitions p1..pn is {$or: [c(p1), ..., c(pn)]}, where c(p)
 * is {$and: [the condition of p's bound in its parent, that of its parent's
 * bound in the grandparent, ... up to the root]}.  A condition is written
 * from the bound as partition_bounds_create reads it:
 *
 *	list:		{k: {$in: [v1, ...]}}		(a NULL value matches null and
 *											 a field left out, as rows with
 *											 NULL keys are written)
 *	range:		from (l1..lm) to (u1..um), lexicographic, upper excluded:
 *				{$and: [{$or: [{k1: {$gt: l1}}, {k1: l1, k2: {$gt: l2}}, ...,
 *				 {k1: l1, ..., km: {$gte: lm}}]}, the same with $lt for u]}
 *				(MINVALUE in the lower bound, MAXVALUE in the upper, ends that
 *				side's terms with the equal prefix alone, and the key's
 *				fields are then also {$ne: null}: a NULL key is the default
 *				partition's)
 *	default:	{$nor: [the siblings' conditions]}
 *
 * The catalogs are read as the caller's snapshot shows them (the historic
 * one while decoding: the partitions as they were at the TRUNCATE).  A few
 * syscache lookups per partition and level: once per truncate, never per
 * row.
 */
#include "partition_filter.h"

#include "access/htup_details.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/* One level's partition key, as the root's columns */
typedef struct LevelKey
{
	PartitionKey key;
	int			columns[PARTITION_MAX_KEYS];	/* the root's, 0-based */
	const char *fields[PARTITION_MAX_KEYS];
} LevelKey;

typedef struct FilterState
{
	BsonWriter	w;
	const BsonChangeTable *table;
	BsonRecordOptions value_opts;
	const char *why;			/* set when no filter can be written */
} FilterState;

/* The bound of partition relid in its parent */
static PartitionBoundSpec *
partition_bound(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Datum		d;
	bool		isnull;
	PartitionBoundSpec *bound;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	d = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relpartbound, &isnull);
	if (isnull)
		elog(ERROR, "relation %u has no partition bound", relid);
	bound = castNode(PartitionBoundSpec, stringToNode(TextDatumGetCString(d)));
	ReleaseSysCache(tuple);
	return bound;
}

/* Is BSON's order of the column's values PostgreSQL's for this key column? */
static bool
key_type_ordered(FilterState *f, PartitionKey key, int i, int column)
{
	Oid			type = key->parttypid[i];
	Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	bool		list = key->strategy == PARTITION_STRATEGY_LIST;

	if (!OidIsValid(opclass) || get_opclass_family(opclass) != key->partopfamily[i])
	{
		f->why = "a partition key with an operator class other than its type's default";
		return false;
	}
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case DATEOID:
		case BOOLOID:
		case UUIDOID:
			return true;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			{
				int32		typmod = TupleDescAttr(f->table->tupdesc, column)->atttypmod;

				/* documents keep milliseconds: equal there is not equal here */
				if (list && (typmod < 0 || typmod > 3))
				{
					f->why = "a list partition key of timestamps finer than milliseconds";
					return false;
				}
				return true;
			}
		case TEXTOID:
		case VARCHAROID:
			if (list ? get_collation_isdeterministic(key->partcollation[i]) :
				GetDatabaseEncoding() == PG_UTF8 &&
				bson_collation_is_c(key->partcollation[i]))
				return true;
			f->why = list ? "a list partition key under a nondeterministic collation" :
				"a range partition key of text under a collation that does not "
				"sort by bytes, or in a database that is not UTF-8";
			return false;
		default:
			f->why = psprintf("a partition key of type %s", format_type_be(type));
			return false;
	}
}

/* parent's partition key as fields of the documents, or false */
static bool
level_key(FilterState *f, Relation parent, LevelKey *lk)
{
	PartitionKey key = RelationGetPartitionKey(parent);
	TupleDesc	root = f->table->tupdesc;

	lk->key = key;
	if (key->strategy == PARTITION_STRATEGY_HASH)
	{
		f->why = "hash partitioning";
		return false;
	}
	for (int i = 0; i < key->partnatts; i++)
	{
		const char *name;

		if (key->partattrs[i] == 0)
		{
			f->why = "a partition key expression";
			return false;
		}
		name = NameStr(TupleDescAttr(RelationGetDescr(parent),
									 key->partattrs[i] - 1)->attname);
		lk->columns[i] = -1;
		for (int c = 0; c < root->natts; c++)
			if (!TupleDescAttr(root, c)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(root, c)->attname), name) == 0)
				lk->columns[i] = c;
		/* a dotted name would be a path in a filter, a $ one an operator */
		if (lk->columns[i] < 0 || lk->columns[i] == f->table->id_column ||
			strchr(name, '.') != NULL || name[0] == '$')
		{
			f->why = "a partition key column whose name is no field of the documents";
			return false;
		}
		lk->fields[i] = name;
		if (!key_type_ordered(f, key, i, lk->columns[i]))
			return false;
	}
	return true;
}

/* A bound's value as the documents have it, under key (NULL: the field's) */
static bool
append_value(FilterState *f, const LevelKey *lk, int i, const char *key,
			 Const *value)
{
	if (!value->constisnull)
	{
		Datum		d = value->constvalue;
		Oid			type = lk->key->parttypid[i];

		if ((type == DATEOID && DATE_NOT_FINITE(DatumGetDateADT(d))) ||
			((type == TIMESTAMPOID || type == TIMESTAMPTZOID) &&
			 (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(d)) ||
			  DatumGetTimestamp(d) % 1000 != 0)))
		{
			f->why = "a partition bound that is infinite or finer than a millisecond";
			return false;
		}
	}
	if (key == NULL)
		key = lk->fields[i];
	bson_append_record_column(&f->w, f->table->columns, lk->columns[i],
							  key, strlen(key), value->constvalue,
							  value->constisnull, &f->value_opts);
	return true;
}

/*
 * Close the array opened at start under name, or take the whole element
 * back when it is empty: MongoDB refuses {$and: []}, {$nor: []}.
 */
static void
close_or_drop(BsonWriter *w, Size start, const char *name, bool empty)
{
	if (empty)
		w->pos = w->buf + start - (2 + strlen(name));
	else
		bson_close(w, start);
}

static void
index_key(uint32 index, char *buf)
{
	snprintf(buf, 16, "%u", index);
}

/* The terms of one side of a range bound; -1: none needed (open end) */
static int
range_terms(List *datums, bool lower)
{
	int			n = 0;
	ListCell   *lc;

	foreach(lc, datums)
	{
		PartitionRangeDatum *d = lfirst_node(PartitionRangeDatum, lc);

		if (d->kind == (lower ? PARTITION_RANGE_DATUM_MINVALUE :
						PARTITION_RANGE_DATUM_MAXVALUE))
			return n == 0 ? -1 : n + 1;
		if (d->kind != PARTITION_RANGE_DATUM_VALUE)
			break;				/* nothing is beyond this end */
		n++;
	}
	return n;
}

/*
 * The terms of one side of a range bound (nterms, from range_terms), each
 * saying that the key is at least (lower) or below (upper) the bound, as
 * elements of the array the caller opened, or the one term under key.
 */
static bool
append_range_side(FilterState *f, const LevelKey *lk, List *datums,
				  bool lower, int nterms, const char *key)
{
	int			n = list_length(datums);

	for (int i = 0; i < nterms; i++)
	{
		PartitionRangeDatum *d = list_nth_node(PartitionRangeDatum, datums, i);
		bool		open_end = d->kind != PARTITION_RANGE_DATUM_VALUE;
		char		k[16];
		Size		term;

		index_key((uint32) i, k);
		term = bson_append_document_begin(&f->w, nterms == 1 ? key : k,
										  strlen(nterms == 1 ? key : k));
		for (int j = 0; j < i; j++)
			if (!append_value(f, lk, j, NULL,
							  castNode(Const, list_nth_node(PartitionRangeDatum, datums, j)->value)))
				return false;
		if (!open_end)
		{
			Size		cmp = bson_append_document_begin(&f->w, lk->fields[i],
														 strlen(lk->fields[i]));

			if (!append_value(f, lk, i, lower ? (i == n - 1 ? "$gte" : "$gt") : "$lt",
							  castNode(Const, d->value)))
				return false;
			bson_close(&f->w, cmp);
		}
		bson_close(&f->w, term);
	}
	return true;
}

/*
 * A range bound's condition, under key.  One column: {k: {$gte: l, $lt:
 * u}}, which no NULL satisfies; several: each side as the $or of its terms
 * (one term alone), and every key field not NULL, since the terms that
 * stop at an open end would take a NULL in the columns after it.
 */
static bool
append_range(FilterState *f, const LevelKey *lk, PartitionBoundSpec *b,
			 const char *key)
{
	Size		doc = bson_append_document_begin(&f->w, key, strlen(key));
	int			terms[2] = {range_terms(b->lowerdatums, true),
	range_terms(b->upperdatums, false)};

	if (terms[0] == 0 || terms[1] == 0)
	{
		/* a bound nothing satisfies; PostgreSQL does not make one */
		f->why = "an empty range partition";
		return false;
	}
	if (lk->key->partnatts == 1)
	{
		Size		cmp = bson_append_document_begin(&f->w, lk->fields[0],
													 strlen(lk->fields[0]));

		if (terms[0] < 0 && terms[1] < 0)
			bson_append_null(&f->w, "$ne", 3);
		if (terms[0] > 0 &&
			!append_value(f, lk, 0, "$gte",
						  castNode(Const, linitial_node(PartitionRangeDatum, b->lowerdatums)->value)))
			return false;
		if (terms[1] > 0 &&
			!append_value(f, lk, 0, "$lt",
						  castNode(Const, linitial_node(PartitionRangeDatum, b->upperdatums)->value)))
			return false;
		bson_close(&f->w, cmp);
	}
	else
	{
		Size		and;
		uint32		sides = 0;

		for (int i = 0; i < lk->key->partnatts; i++)
		{
			Size		ne = bson_append_document_begin(&f->w, lk->fields[i],
														strlen(lk->fields[i]));

			bson_append_null(&f->w, "$ne", 3);
			bson_close(&f->w, ne);
		}
		and = bson_append_array_begin(&f->w, "$and", 4);
		for (int s = 0; s < 2; s++)
		{
			char		k[16];
			Size		or = 0;

			if (terms[s] < 0)
				continue;
			index_key(sides++, k);
			if (terms[s] > 1)
			{
				Size		side = bson_append_document_begin(&f->w, k, strlen(k));

				or = bson_append_array_begin(&f->w, "$or", 3);
				if (!append_range_side(f, lk, s == 0 ? b->lowerdatums : b->upperdatums,
									   s == 0, terms[s], NULL))
					return false;
				bson_close(&f->w, or);
				bson_close(&f->w, side);
			}
			else if (!append_range_side(f, lk, s == 0 ? b->lowerdatums : b->upperdatums,
										s == 0, 1, k))
				return false;
		}
		/* MINVALUE to MAXVALUE: no side */
		close_or_drop(&f->w, and, "$and", sides == 0);
	}
	bson_close(&f->w, doc);
	return true;
}

static bool append_condition(FilterState *f, Oid parent, const LevelKey *lk,
							 Oid child, const char *key);

/* A default partition's condition: in none of its siblings */
static bool
append_default(FilterState *f, Oid parent, const LevelKey *lk, Oid child,
			   const char *key)
{
	List	   *siblings = find_inheritance_children(parent, NoLock);
	Size		doc = bson_append_document_begin(&f->w, key, strlen(key));
	Size		nor = bson_append_array_begin(&f->w, "$nor", 4);
	uint32		n = 0;
	ListCell   *lc;

	foreach(lc, siblings)
	{
		char		k[16];

		CHECK_FOR_INTERRUPTS();
		if (lfirst_oid(lc) == child)
			continue;
		index_key(n++, k);
		if (!append_condition(f, parent, lk, lfirst_oid(lc), k))
			return false;
	}
	/* the only partition: every key */
	close_or_drop(&f->w, nor, "$nor", n == 0);
	bson_close(&f->w, doc);
	return true;
}

/* The condition of child's bound in parent (whose key is lk), under key */
static bool
append_condition(FilterState *f, Oid parent, const LevelKey *lk, Oid child,
				 const char *key)
{
	PartitionBoundSpec *b = partition_bound(child);

	check_stack_depth();
	if (b->is_default)
		return append_default(f, parent, lk, child, key);
	if (b->strategy == PARTITION_STRATEGY_LIST)
	{
		Size		doc = bson_append_document_begin(&f->w, key, strlen(key));
		Size		in = bson_append_document_begin(&f->w, lk->fields[0],
													strlen(lk->fields[0]));
		Size		arr = bson_append_array_begin(&f->w, "$in", 3);
		uint32		n = 0;
		ListCell   *lc;

		foreach(lc, b->listdatums)
		{
			char		k[16];

			CHECK_FOR_INTERRUPTS();
			index_key(n++, k);
			if (!append_value(f, lk, 0, k, lfirst_node(Const, lc)))
				return false;
		}
		bson_close(&f->w, arr);
		bson_close(&f->w, in);
		bson_close(&f->w, doc);
		return true;
	}
	if (b->strategy == PARTITION_STRATEGY_RANGE)
		return append_range(f, lk, b, key);
	f->why = "hash partitioning";
	return false;
}

/*
 * One partition's condition, up to the root, under key: the $and of its
 * levels', or the one level's alone
 */
static bool
append_partition(FilterState *f, Oid root, Oid partition, const char *key)
{
	List	   *ancestors = get_partition_ancestors(partition);
	int			levels = 0;
	Size		doc = 0;
	Size		and = 0;
	Oid			child = partition;
	ListCell   *lc;

	foreach(lc, ancestors)
	{
		levels++;
		if (lfirst_oid(lc) == root)
			break;
	}
	if (!list_member_oid(ancestors, root))
		elog(ERROR, "relation %u is not a partition of %u", partition, root);
	if (levels > 1)
	{
		doc = bson_append_document_begin(&f->w, key, strlen(key));
		and = bson_append_array_begin(&f->w, "$and", 4);
	}
	for (int level = 0; level < levels; level++)
	{
		Oid			parent = list_nth_oid(ancestors, level);
		Relation	rel = RelationIdGetRelation(parent);
		LevelKey	lk;
		char		k[16];
		bool		ok;

		if (!RelationIsValid(rel))
			elog(ERROR, "could not open relation %u", parent);
		index_key((uint32) level, k);
		ok = level_key(f, rel, &lk) &&
			append_condition(f, parent, &lk, child, levels > 1 ? k : key);
		RelationClose(rel);
		if (!ok)
			return false;
		child = parent;
	}
	if (levels > 1)
	{
		bson_close(&f->w, and);
		bson_close(&f->w, doc);
	}
	return true;
}

char *
bson_partitions_filter(const BsonChangeTable *table, Oid root,
					   Relation *partitions, int npartitions,
					   Size *len, const char **why)
{
	FilterState f = {0};
	Size		doc;
	Size		or;

	f.table = table;
	f.value_opts.unmappable = BSON_UNMAPPABLE_ERROR;
	f.value_opts.policy_name = "partition bounds";
	f.value_opts.table = table->name;
	bson_writer_init(&f.w, 256);
	doc = bson_open(&f.w);
	or = bson_append_array_begin(&f.w, "$or", 3);
	for (int i = 0; i < npartitions; i++)
	{
		char		k[16];

		CHECK_FOR_INTERRUPTS();
		index_key((uint32) i, k);
		if (!append_partition(&f, root, RelationGetRelid(partitions[i]), k))
		{
			*why = f.why;
			pfree(f.w.buf);
			return NULL;
		}
	}
	bson_close(&f.w, or);
	bson_close(&f.w, doc);
	*len = (Size) (f.w.pos - f.w.buf) - doc;
	return f.w.buf + doc;
}
