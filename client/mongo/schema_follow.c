/*
 * schema_follow.c
 *		pg_bsonstream --to follows schema changes: the output plugin's schema
 *		events (its option schema-events) say, at the commit of a DDL, that
 *		a table's documents have another shape or collection name ("modify")
 *		or that the table is gone ("drop").
 *
 * What each table's collection holds is kept, by the table's OID, in the
 * progress document ("tables": relid, db, coll, shape, copiedAt), written
 * in the same update as the position it is true at: from the first copy's
 * metadata (bson_out.shape, the shape in the copy's snapshot), then from
 * each copy again.  A "modify" whose shape and collection are those kept
 * changes nothing (an index, a grant).  Any other is the rule of the
 * table: its collection is dropped and copied again, whole, under the
 * snapshot of a temporary slot made now (the program's recopy, as
 * PostgreSQL's own logical replication copies a table added to a
 * subscription), so that its documents are bson_document() of its rows as
 * they are; the table's events that commit before that slot's consistent
 * point (copiedAt) are in the copy and are passed over, the later ones are
 * applied.  A new collection name (a table renamed) takes the copy, and
 * the old collection is dropped.  A "drop" drops the collection.
 *
 * A stop or a kill during a copy again leaves the position before the
 * schema event: the next run copies again, from scratch.
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_apply.h"
#include "applier.h"

typedef struct TableShape
{
	int64_t		relid;
	char		db[128];
	char		coll[512];
	char	   *shape;
	uint64_t	copied_at;		/* the copy's consistent point; 0: the first copy */
	char		alias[512];		/* with copied_at: the name the table's events
								 * had where the copy was asked for, if not coll
								 * (renamed again before the copy) */
} TableShape;

/* copiedAt past which no event is passed over */
static uint64_t skip_below;

static TableShape *
find_table(int64_t relid)
{
	for (int i = 0; i < applier.ntables; i++)
		if (applier.tables[i].relid == relid)
			return &applier.tables[i];
	return NULL;
}

static TableShape *
add_table(int64_t relid)
{
	TableShape *t = find_table(relid);

	if (t != NULL)
		return t;
	if (applier.ntables == applier.maxtables)
	{
		int			n = applier.maxtables ? applier.maxtables * 2 : 16;
		TableShape *a = realloc(applier.tables, sizeof(TableShape) * n);

		if (a == NULL)
		{
			fail("out of memory");
			return NULL;
		}
		applier.tables = a;
		applier.maxtables = n;
	}
	t = &applier.tables[applier.ntables++];
	memset(t, 0, sizeof(*t));
	t->relid = relid;
	return t;
}

static int
set_table(int64_t relid, const char *db, const char *coll, const char *shape, uint64_t at,
		  const char *alias)
{
	TableShape *t = add_table(relid);

	if (t == NULL)
		return -1;
	snprintf(t->db, sizeof(t->db), "%s", db);
	snprintf(t->coll, sizeof(t->coll), "%s", coll);
	snprintf(t->alias, sizeof(t->alias), "%s", alias && strcmp(alias, coll) != 0 ? alias : "");
	free(t->shape);
	t->shape = strdup(shape);
	t->copied_at = at;
	if (at > skip_below)
		skip_below = at;
	applier.tables_dirty = 1;
	return t->shape ? 0 : -1;
}

int
tables_note_copy(const char *db, const char *coll, const bson_t *meta, uint64_t at,
				 const char *alias)
{
	bson_iter_t it;
	bson_iter_t sub;
	int64_t		relid = 0;
	const char *shape = NULL;

	if (!bson_iter_init_find(&it, meta, "bson_out") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
		!bson_iter_recurse(&it, &sub))
		return 0;				/* a dump of an earlier bson_out: nothing known */
	while (bson_iter_next(&sub))
	{
		if (strcmp(bson_iter_key(&sub), "relid") == 0)
			relid = bson_iter_as_int64(&sub);
		else if (strcmp(bson_iter_key(&sub), "shape") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
			shape = bson_iter_utf8(&sub, NULL);
	}
	if (relid == 0 || shape == NULL)
		return 0;
	return set_table(relid, db, coll, shape, at, alias);
}

void
tables_append(bson_t *doc)
{
	bson_t		arr;

	BSON_APPEND_ARRAY_BEGIN(doc, "tables", &arr);
	for (int i = 0; i < applier.ntables; i++)
	{
		const TableShape *t = &applier.tables[i];
		char		key[16];
		bson_t		e;

		snprintf(key, sizeof(key), "%d", i);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &e);
		BSON_APPEND_INT64(&e, "relid", t->relid);
		BSON_APPEND_UTF8(&e, "db", t->db);
		BSON_APPEND_UTF8(&e, "coll", t->coll);
		BSON_APPEND_UTF8(&e, "shape", t->shape);
		BSON_APPEND_INT64(&e, "copiedAt", (int64_t) t->copied_at);
		if (t->alias[0])
			BSON_APPEND_UTF8(&e, "alias", t->alias);
		bson_append_document_end(&arr, &e);
	}
	bson_append_array_end(doc, &arr);
}

void
tables_free(void)
{
	for (int i = 0; i < applier.ntables; i++)
		free(applier.tables[i].shape);
	free(applier.tables);
	applier.tables = NULL;
	applier.ntables = applier.maxtables = 0;
	skip_below = 0;
}

int
tables_read(const bson_t *progress)
{
	bson_iter_t it;
	bson_iter_t arr;

	if (!bson_iter_init_find(&it, progress, "tables") || !BSON_ITER_HOLDS_ARRAY(&it) ||
		!bson_iter_recurse(&it, &arr))
		return 0;
	while (bson_iter_next(&arr))
	{
		bson_iter_t f;
		int64_t		relid = 0;
		int64_t		at = 0;
		const char *db = NULL;
		const char *coll = NULL;
		const char *shape = NULL;
		const char *alias = NULL;

		if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &f))
			continue;
		while (bson_iter_next(&f))
		{
			const char *k = bson_iter_key(&f);

			if (strcmp(k, "relid") == 0)
				relid = bson_iter_as_int64(&f);
			else if (strcmp(k, "copiedAt") == 0)
				at = bson_iter_as_int64(&f);
			else if (strcmp(k, "db") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				db = bson_iter_utf8(&f, NULL);
			else if (strcmp(k, "coll") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				coll = bson_iter_utf8(&f, NULL);
			else if (strcmp(k, "shape") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				shape = bson_iter_utf8(&f, NULL);
			else if (strcmp(k, "alias") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				alias = bson_iter_utf8(&f, NULL);
		}
		if (relid && db && coll && shape && set_table(relid, db, coll, shape, (uint64_t) at, alias) != 0)
			return -1;
	}
	applier.tables_dirty = 0;
	return 0;
}

int
schema_skips(const ApplyEvent *ev)
{
	uint64_t	lsn;

	if (skip_below == 0)
		return 0;
	lsn = resume_token_commit_lsn(ev->token);
	if (lsn >= skip_below)
		return 0;
	for (int i = 0; i < applier.ntables; i++)
	{
		const TableShape *t = &applier.tables[i];

		if (lsn < t->copied_at && strcmp(t->db, ev->db) == 0 &&
			(strcmp(t->coll, ev->coll) == 0 || (t->alias[0] && strcmp(t->alias, ev->coll) == 0)))
			return 1;
	}
	return 0;
}

/* A collection dropped; one that is not there is no error */
int
drop_collection(const char *db, const char *coll)
{
	bson_t		cmd = BSON_INITIALIZER;
	TargetResult r;
	int			rc;

	BSON_APPEND_UTF8(&cmd, "drop", coll);
	rc = target_command(db, &cmd, NULL, &r);
	bson_destroy(&cmd);
	if (rc != 0)
		return -1;
	/* 26 NamespaceNotFound; older servers say "ns not found" */
	if (r.status == TARGET_DONE || r.code == 26 || strstr(r.message, "ns not found") != NULL)
		return 0;
	fail("MongoDB: could not drop collection %s.%s: %s", db, coll, r.message);
	return -1;
}

/* Does a table other than relid hold collection db.coll now? */
static int
owned_by_other(int64_t relid, const char *db, const char *coll)
{
	for (int i = 0; i < applier.ntables; i++)
		if (applier.tables[i].relid != relid && strcmp(applier.tables[i].coll, coll) == 0 &&
			strcmp(applier.tables[i].db, db) == 0)
			return 1;
	return 0;
}

/* A table's collection dropped and forgotten: the table is gone */
static int
table_gone(int64_t relid)
{
	TableShape *t = find_table(relid);

	if (t == NULL)
		return 0;
	if (!owned_by_other(relid, t->db, t->coll) && drop_collection(target_db(t->db), t->coll) != 0)
		return -1;
	free(t->shape);
	*t = applier.tables[--applier.ntables];
	applier.tables_dirty = 1;
	return 0;
}

static int
copy_again(const ApplyEvent *ev, const TableShape *before)
{
	char		root[4200];
	char		err[2048];
	char		db[128];
	char		coll[512];
	uint64_t	at = 0;
	int			rc;

	if (applier.o.recopy == NULL && applier.o.ngroups > 0)
	{
		fail("table %s changed (a DDL) while --citus --to runs: its collection is not copied "
			 "again from every node yet, and its documents would no longer be the table's\n"
			 "hint: Start over after the DDL: drop every node's slot, the target's collections "
			 "and its progress document, remove the stream's directory, and run with "
			 "--create-slot --initial-copy.", ev->table);
		return -1;
	}
	if (applier.o.recopy == NULL)
	{
		fail("table %s changed (a DDL), and this stream cannot copy it again", ev->table);
		return -1;
	}
	fprintf(stderr, "pg_bsonstream: table %s changed (a DDL): its collection %s.%s is copied "
			"again%s%s%s\n", ev->table, target_db(ev->db), ev->coll,
			before && strcmp(before->coll, ev->coll) != 0 ? " (it was " : "",
			before && strcmp(before->coll, ev->coll) != 0 ? before->coll : "",
			before && strcmp(before->coll, ev->coll) != 0 ? ")" : "");
	set_state("copying table %s again after its DDL", ev->table);
	snprintf(root, sizeof(root), "%s/recopy", applier.o.dir);
	remove_tree(root);
	if (applier.o.recopy(applier.o.recopy_arg, ev->relid, root, &at, err, sizeof(err)) != 0)
	{
		fail("could not copy table %s again after its DDL: %s", ev->table, err);
		return -1;
	}
	rc = load_recopy(root, at, ev->coll, db, sizeof(db), coll, sizeof(coll));
	if (rc < 0)
		return -1;
	if (rc == 0)
	{
		/*
		 * Gone since (dropped, or no longer selected): its collection under
		 * either name dropped, and kept as gone until its drop event, its
		 * events before the copy passed over under either name
		 */
		fprintf(stderr, "pg_bsonstream: table %s is gone since: its collection is dropped\n",
				ev->table);
		if ((before && !owned_by_other(ev->relid, before->db, before->coll) &&
			 drop_collection(target_db(before->db), before->coll) != 0) ||
			(!owned_by_other(ev->relid, ev->db, ev->coll) &&
			 drop_collection(target_db(ev->db), ev->coll) != 0) ||
			set_table(ev->relid, ev->db, ev->coll, "(gone)", at,
					  before ? before->coll : NULL) != 0)
			return -1;
	}
	/* renamed: the old name's collection is the table's no more, unless another's now */
	else if (before && (strcmp(before->coll, coll) != 0 || strcmp(before->db, db) != 0) &&
			 !owned_by_other(ev->relid, before->db, before->coll) &&
			 drop_collection(target_db(before->db), before->coll) != 0)
		return -1;
	if (!applier.o.keep_applied)
		remove_tree(root);
	set_state("%s", "");
	return 0;
}

int
schema_apply(const ApplyEvent *ev)
{
	TableShape *t = find_table(ev->relid);
	TableShape	before;

	if (ev->shape == NULL)
	{
		/* only a table whose collection is known to be its own loses it */
		if (t == NULL)
			return 0;

		/*
		 * On a Citus cluster a table leaves a node's stream also when it is
		 * distributed (its rows then go to shards whose copy is not
		 * streamed), and one node's table is not the cluster's: nothing is
		 * dropped, the run stops
		 */
		if (applier.o.ngroups > 0)
		{
			fail("table %s is gone from a node's stream (dropped, distributed, or no longer "
				 "selected) while --citus --to runs: its collection %s.%s is left as it is, "
				 "and would no longer be the table's\n"
				 "hint: Start over after the DDL: drop every node's slot, the target's collections "
				 "and its progress document, remove the stream's directory, and run with "
				 "--create-slot --initial-copy.", ev->table, target_db(t->db), t->coll);
			return -1;
		}
		fprintf(stderr, "pg_bsonstream: table %s is gone from the stream (dropped, or no longer "
				"selected): collection %s.%s is dropped\n", ev->table, target_db(t->db), t->coll);
		return table_gone(ev->relid);
	}
	if (t && strcmp(t->shape, ev->shape) == 0 && strcmp(t->coll, ev->coll) == 0 &&
		strcmp(t->db, ev->db) == 0)
		return 0;
	/* a name MongoDB refuses has no collection: the table's changes go by the refusal policy */
	{
		char		err[1200];

		if (apply_check_name(ev->db, ev->coll, err, sizeof(err)) != 0)
			return 0;
	}
	if (t)
		before = *t;
	return copy_again(ev, t ? &before : NULL);
}
