/*
 * replay.c
 *		Writes sent again: after a stop, the events past the stored position
 *		up to replayUntil (stored before each segment is applied), and a
 *		batch sent again after a lost connection.  Such a write may collide on
 *		a unique index with later writes already applied; move_aside resolves
 *		that, check_moved proves the replay put everything back.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mongo_apply.h"
#include "applier.h"
#include "segment_name.h"

/* {_id: the value it} as bytes, to compare two _id values exactly */
int
same_id(bson_iter_t *a, bson_iter_t *b)
{
	bson_t		x = BSON_INITIALIZER;
	bson_t		y = BSON_INITIALIZER;
	int			same;

	bson_append_iter(&x, "_id", 3, a);
	bson_append_iter(&y, "_id", 3, b);
	same = x.len == y.len && memcmp(bson_get_data(&x), bson_get_data(&y), x.len) == 0;
	bson_destroy(&x);
	bson_destroy(&y);
	return same;
}

/*
 * Does a change of the document _id 'id' of collection coll come after the
 * event 'after', within the writes sent again (up to replay_end)?  Read
 * from the segments, only when a replay collides.  1, 0, or -1.
 */
int
later_change(const char *coll, bson_iter_t *id, const char *after)
{
	uint64_t	bytes;
	char	  **names = pending_segments(&bytes);
	uint8_t    *buf = NULL;
	size_t		bufsize = 0;
	int			found = 0;

	for (int i = 0; names[i] && found == 0; i++)
	{
		char		path[4400];
		FILE	   *f;
		uint32_t	len;

		if (strncmp(segment_name_last(names[i]), after, RESUME_TOKEN_LEN) <= 0 ||
			strncmp(names[i], applier.replay_end, RESUME_TOKEN_LEN) > 0)
			continue;
		snprintf(path, sizeof(path), "%s/changes/%s", applier.o.dir, names[i]);
		if ((f = fopen(path, "rb")) == NULL)
			continue;
		while (found == 0 && read_doc(f, &buf, &bufsize, &len) == 1)
		{
			const char *token = resume_token_of_event((const char *) buf, len);
			bson_t		ev;
			bson_iter_t it;
			bson_iter_t k;

			if (token == NULL || strncmp(token, after, RESUME_TOKEN_LEN) <= 0 ||
				strncmp(token, applier.replay_end, RESUME_TOKEN_LEN) > 0 || !bson_init_static(&ev, buf, len))
				continue;
			if (bson_iter_init(&it, &ev) && bson_iter_find_descendant(&it, "ns.coll", &k) &&
				BSON_ITER_HOLDS_UTF8(&k) && strcmp(bson_iter_utf8(&k, NULL), coll) == 0 &&
				bson_iter_init(&it, &ev) && bson_iter_find_descendant(&it, "documentKey._id", &k) &&
				same_id(&k, id))
				found = 1;
		}
		fclose(f);
	}
	free(buf);
	free_names(names);
	return found;
}

/* Writes sent again (a retry, an isolation): they may have been applied */
void
mark_replay(int *idx, int from, int upto)
{
	for (int i = from; i < upto; i++)
	{
		applier.ops[idx[i]].replay = 1;
		if (strcmp(applier.ops[idx[i]].ev.token, applier.replay_end) > 0)
			snprintf(applier.replay_end, sizeof(applier.replay_end), "%s", applier.ops[idx[i]].ev.token);
	}
}

/*
 * A write sent again collided on a unique index other than _id (11000).
 * Its own earlier application was overtaken by later writes, already
 * applied, that gave its value to another document (PostgreSQL passed
 * values between rows in that order); those later writes come again after
 * it.  So the other documents' values are moved aside ({MOVED_MARK: their
 * _id}, unique) for the replay to write them again in order; at the end of
 * the replay none may be left (check_moved).  Returns how many documents
 * were moved, 0 when none holds the value (then it is a real refusal), -1
 * on failure.
 */
typedef struct DocList
{
	bson_t	  **docs;
	int			n;
	int			max;
	int			oom;			/* a document could not be kept */
} DocList;

static int
collect_doc(const bson_t *doc, void *arg)
{
	DocList    *l = arg;

	if (l->n == l->max)
	{
		int			m = l->max ? l->max * 2 : 8;
		bson_t	  **d = realloc(l->docs, sizeof(bson_t *) * m);

		if (d == NULL)
		{
			l->oom = 1;
			return 1;
		}
		l->docs = d;
		l->max = m;
	}
	l->docs[l->n++] = bson_copy(doc);
	return 0;
}

/* The unique indexes' key documents */
static int
collect_unique(const bson_t *index, void *arg)
{
	bson_iter_t k;

	if (bson_iter_init_find(&k, index, "unique") && bson_iter_as_bool(&k) &&
		bson_iter_init_find(&k, index, "key") && BSON_ITER_HOLDS_DOCUMENT(&k))
	{
		uint32_t	n;
		const uint8_t *d;
		bson_t		key;

		bson_iter_document(&k, &n, &d);
		if (bson_init_static(&key, d, n))
			return collect_doc(&key, arg);
	}
	return 0;
}

static void
free_docs(DocList *l)
{
	for (int i = 0; i < l->n; i++)
		bson_destroy(l->docs[i]);
	free(l->docs);
	l->docs = NULL;
	l->n = l->max = 0;
}

int
move_aside(const Op *op)
{
	const char *db = target_db(op->ev.db);
	DocList		keys = {0};
	bson_t		fields;
	bson_iter_t it;
	bson_iter_t id;
	int			moved = 0;

	/* the values the write gives: the replacement, or its $set */
	if (op->ev.kind == APPLY_UPDATE)
	{
		uint32_t	n;
		const uint8_t *d;

		if (!bson_iter_init_find(&it, op->ev.doc, "$set") || !BSON_ITER_HOLDS_DOCUMENT(&it))
			return 0;
		bson_iter_document(&it, &n, &d);
		bson_init_static(&fields, d, n);
	}
	else
		bson_init_static(&fields, bson_get_data(op->ev.doc), op->ev.doc->len);
	if (!bson_iter_init_find(&id, op->ev.selector, "_id"))
		return 0;
	if (target_indexes(db, op->ev.coll, collect_unique, &keys) != 0)
		return -1;
	if (keys.oom)
	{
		free_docs(&keys);
		fail("out of memory");
		return -1;
	}
	for (int ki = 0; ki < keys.n && moved >= 0; ki++)
	{
		bson_iter_t key;
		bson_t		filter = BSON_INITIALIZER;
		bson_t		ne;
		const char *first = NULL;
		int			all = 1;
		DocList		others = {0};

		if (!bson_iter_init(&key, keys.docs[ki]))
			continue;
		while (bson_iter_next(&key))
		{
			bson_iter_t v;

			if (strchr(bson_iter_key(&key), '.') || !bson_iter_init_find(&v, &fields, bson_iter_key(&key)))
			{
				all = 0;
				break;
			}
			if (first == NULL)
				first = bson_iter_key(&key);
			bson_append_iter(&filter, bson_iter_key(&key), -1, &v);
		}
		if (!all || first == NULL || strcmp(first, "_id") == 0 || strlen(first) >= sizeof(applier.moved[0].field))
		{
			bson_destroy(&filter);
			continue;
		}
		BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id", &ne);
		bson_append_iter(&ne, "$ne", 3, &id);
		bson_append_document_end(&filter, &ne);
		/* a RETRY passes some again: each moved aside twice at most, the same */
		if (target_find("read", db, op->ev.coll, &filter, 0, NULL, collect_doc, &others) != 0)
			moved = -1;
		else if (others.oom)
		{
			fail("out of memory");
			moved = -1;
		}
		bson_destroy(&filter);
		for (int oi = 0; oi < others.n && moved >= 0; oi++)
		{
			const bson_t *other = others.docs[oi];
			bson_iter_t oid;
			bson_t		sel = BSON_INITIALIZER;
			bson_t		upd = BSON_INITIALIZER;
			bson_t		set;
			bson_t		mark;
			TargetWrite w = {TW_UPDATE, &sel, &upd};

			/* only a document that a later change of the replay writes again: else a real collision */
			if (!bson_iter_init_find(&oid, other, "_id") ||
				later_change(op->ev.coll, &oid, op->ev.token) != 1)
				continue;
			bson_append_iter(&sel, "_id", 3, &oid);
			BSON_APPEND_DOCUMENT_BEGIN(&upd, "$set", &set);
			BSON_APPEND_DOCUMENT_BEGIN(&set, first, &mark);
			bson_append_iter(&mark, MOVED_MARK, -1, &oid);
			{
				bson_iter_t was;

				/* its value kept: put back if no later change writes it again */
				if (bson_iter_init_find(&was, other, first))
					bson_append_iter(&mark, "was", 3, &was);
			}
			bson_append_document_end(&set, &mark);
			bson_append_document_end(&upd, &set);
			if (target_write_must("move a replayed value aside", db, op->ev.coll, &w, 1) != 0)
				moved = -1;
			else
			{
				int			known = 0;

				for (int i = 0; i < applier.nmoved; i++)
					known |= strcmp(applier.moved[i].db, db) == 0 && strcmp(applier.moved[i].coll, op->ev.coll) == 0 &&
						strcmp(applier.moved[i].field, first) == 0;
				if (!known && applier.nmoved < MAX_MOVED)
				{
					MovedAside *m = &applier.moved[applier.nmoved++];

					snprintf(m->db, sizeof(m->db), "%s", db);
					snprintf(m->coll, sizeof(m->coll), "%s", op->ev.coll);
					snprintf(m->field, sizeof(m->field), "%s", first);
				}
				moved++;
			}
			bson_destroy(&sel);
			bson_destroy(&upd);
		}
		free_docs(&others);
	}
	free_docs(&keys);
	if (moved > 0)
	{
		char	   *sid = id_json(op->ev.selector);

		fprintf(stderr, "pg_bsonstream: the replay of the change of _id %s in %s.%s collided on a "
				"unique index with %d document%s of later changes: moved aside until they are "
				"written again\n", sid, db, op->ev.coll, moved, moved == 1 ? "" : "s");
		bson_free(sid);
	}
	return moved;
}

/*
 * Once the writes sent again are all applied: every value moved aside was
 * written again by its own change.  One left would be a document that
 * differs from its row: an error, never silent.
 */
int
check_moved(void)
{
	for (int i = 0; i < applier.nmoved; i++)
	{
		MovedAside *m = &applier.moved[i];
		bson_t		filter = BSON_INITIALIZER;
		bson_t		ex;
		bson_t	   *left = NULL;
		char		path[300];

		snprintf(path, sizeof(path), "%s." MOVED_MARK, m->field);
		BSON_APPEND_DOCUMENT_BEGIN(&filter, path, &ex);
		BSON_APPEND_BOOL(&ex, "$exists", true);
		bson_append_document_end(&filter, &ex);
		if (find_one(m->db, m->coll, &filter, &left) != 0)
		{
			bson_destroy(&filter);
			return -1;
		}
		bson_destroy(&filter);
		if (left)
		{
			char	   *id = id_json(left);
			bson_iter_t it;
			bson_iter_t was;
			bson_t		sel = BSON_INITIALIZER;
			bson_t		upd = BSON_INITIALIZER;
			bson_t		set;
			TargetWrite w = {TW_UPDATE, &sel, &upd};
			TargetResult r;

			/* its own value back: the document is as it was before the replay touched it */
			if (bson_iter_init_find(&it, left, "_id"))
				bson_append_iter(&sel, "_id", 3, &it);
			BSON_APPEND_DOCUMENT_BEGIN(&upd, "$set", &set);
			if (bson_iter_init_find(&it, left, m->field) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
				bson_iter_recurse(&it, &was) && bson_iter_find(&was, "was"))
				bson_append_iter(&set, m->field, -1, &was);
			bson_append_document_end(&upd, &set);
			(void) target_write(m->db, m->coll, &w, 1, 1, &r);
			bson_destroy(&sel);
			bson_destroy(&upd);
			fail("a change written again collided on a unique index of %s.%s with the document of "
				 "_id %s, which no later change wrote: the collision is not the replay's own (that "
				 "document's %s is as it was)\nhint: Something other than pg_bsonstream wrote "
				 "into the collection; fix that document and run again.",
				 m->db, m->coll, id, m->field);
			bson_free(id);
			bson_destroy(left);
			return -1;
		}
	}
	applier.nmoved = 0;
	return 0;
}
