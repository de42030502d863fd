/*
 * target_memory.c
 *		The applier's target (client/mongo/target.h) in memory, for the unit
 *		tests of the applier: collections of documents with unique indexes,
 *		and faults on demand (a cut at any write statement, with or without
 *		that statement applied, after which the server is gone; a value the
 *		server refuses; one it closes the connection at; a transient code; a
 *		write concern that can never be met; FerretDB's wrong error index).
 *
 * Only what the applier sends is understood: filters of equality, $in,
 * $ne, $gt, $lte and $exists (dotted paths for $exists), updates of
 * top-level $set and $unset.  Values compare by type and bytes (an int32 1
 * is not an int64 1, unlike in MongoDB): the tests choose their values.
 * Anything else fails the call as FATAL, so a test notices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target_memory.h"

static MemColl *
coll_of(MemStore *s, const char *db, const char *coll, int make)
{
	char		ns[700];

	snprintf(ns, sizeof(ns), "%s.%s", db, coll);
	for (int i = 0; i < s->ncolls; i++)
		if (strcmp(s->colls[i].ns, ns) == 0)
			return &s->colls[i];
	if (!make || s->ncolls == MEM_MAX_COLLS)
		return NULL;
	memset(&s->colls[s->ncolls], 0, sizeof(MemColl));
	snprintf(s->colls[s->ncolls].ns, sizeof(s->colls[0].ns), "%s", ns);
	return &s->colls[s->ncolls++];
}

MemColl *
mem_coll(MemStore *s, const char *db, const char *coll)
{
	return coll_of(s, db, coll, 1);
}

void
mem_unique(MemStore *s, const char *db, const char *coll, const char *field)
{
	MemColl    *c = coll_of(s, db, coll, 1);

	snprintf(c->unique[c->nunique++], sizeof(c->unique[0]), "%s", field);
}

/* two values the same: type and bytes */
static int
same_value(const bson_iter_t *a, const bson_iter_t *b)
{
	bson_t		x = BSON_INITIALIZER;
	bson_t		y = BSON_INITIALIZER;
	int			same;

	bson_append_iter(&x, "v", 1, a);
	bson_append_iter(&y, "v", 1, b);
	same = x.len == y.len && memcmp(bson_get_data(&x), bson_get_data(&y), x.len) == 0;
	bson_destroy(&x);
	bson_destroy(&y);
	return same;
}

static int
find_path(const bson_t *doc, const char *path, bson_iter_t *out)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, doc))
		return 0;
	if (strchr(path, '.'))
		return bson_iter_find_descendant(&it, path, out);
	if (!bson_iter_find(&it, path))
		return 0;
	*out = it;
	return 1;
}

/* Does doc match filter?  -1: a filter not understood */
static int
matches(const bson_t *doc, const bson_t *filter)
{
	bson_iter_t f;

	if (filter == NULL || !bson_iter_init(&f, filter))
		return 1;
	while (bson_iter_next(&f))
	{
		bson_iter_t v;
		int			has = find_path(doc, bson_iter_key(&f), &v);
		bson_iter_t op;

		if (BSON_ITER_HOLDS_DOCUMENT(&f) && bson_iter_recurse(&f, &op) && bson_iter_next(&op) &&
			bson_iter_key(&op)[0] == '$')
		{
			bson_iter_recurse(&f, &op);
			while (bson_iter_next(&op))
			{
				const char *o = bson_iter_key(&op);

				if (strcmp(o, "$in") == 0)
				{
					bson_iter_t el;
					int			any = 0;

					bson_iter_recurse(&op, &el);
					while (has && bson_iter_next(&el))
						any |= same_value(&el, &v);
					if (!any)
						return 0;
				}
				else if (strcmp(o, "$ne") == 0)
				{
					if (has && same_value(&op, &v))
						return 0;
				}
				else if (strcmp(o, "$exists") == 0)
				{
					if (has != bson_iter_as_bool(&op))
						return 0;
				}
				else if (strcmp(o, "$gt") == 0 || strcmp(o, "$lte") == 0)
				{
					int			c;

					if (!has || !BSON_ITER_HOLDS_UTF8(&v) || !BSON_ITER_HOLDS_UTF8(&op))
						return 0;
					c = strcmp(bson_iter_utf8(&v, NULL), bson_iter_utf8(&op, NULL));
					if (o[1] == 'g' ? c <= 0 : c > 0)
						return 0;
				}
				else
					return -1;
			}
			continue;
		}
		if (!has || !same_value(&f, &v))
			return 0;
	}
	return 1;
}

/* The document that breaks a unique index of c if doc is written at index self (-1: new), or -1 */
static int
unique_clash(const MemColl *c, const bson_t *doc, int self)
{
	for (int u = -1; u < c->nunique; u++)
	{
		const char *field = u < 0 ? "_id" : c->unique[u];
		bson_iter_t v;
		int			has = find_path(doc, field, &v);

		/* as in MongoDB, a missing field is indexed as null */
		for (int i = 0; i < c->n; i++)
		{
			bson_iter_t w;
			int			other = find_path(c->docs[i], field, &w);

			if (i == self)
				continue;
			if (has && other ? same_value(&v, &w) :
				(has ? BSON_ITER_HOLDS_NULL(&v) : !other || BSON_ITER_HOLDS_NULL(&w)))
				return i;
		}
	}
	return -1;
}

/* doc with _id first: the selector's when the document has none */
static bson_t *
with_id(const bson_t *doc, const bson_t *selector)
{
	bson_t	   *out = bson_new();
	bson_iter_t it;

	if (bson_iter_init_find(&it, doc, "_id") || (selector && bson_iter_init_find(&it, selector, "_id")))
		bson_append_iter(out, "_id", 3, &it);
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), "_id") != 0)
			bson_append_iter(out, NULL, 0, &it);
	return out;
}

/* doc with the update's $set and $unset applied (top-level only); NULL if not understood */
static bson_t *
updated(const bson_t *doc, const bson_t *update)
{
	bson_iter_t op;
	bson_iter_t it;
	bson_t	   *out = bson_new();
	bson_t		set = BSON_INITIALIZER;
	bson_t		unset = BSON_INITIALIZER;

	bson_iter_init(&op, update);
	while (bson_iter_next(&op))
	{
		uint32_t	n;
		const uint8_t *d;
		bson_t		sub;

		if (!BSON_ITER_HOLDS_DOCUMENT(&op))
			goto bad;
		bson_iter_document(&op, &n, &d);
		bson_init_static(&sub, d, n);
		if (strcmp(bson_iter_key(&op), "$set") == 0)
			bson_concat(&set, &sub);
		else if (strcmp(bson_iter_key(&op), "$unset") == 0)
			bson_concat(&unset, &sub);
		else
			goto bad;
	}
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it))
	{
		bson_iter_t x;

		if (bson_iter_init_find(&x, &unset, bson_iter_key(&it)))
			continue;
		if (bson_iter_init_find(&x, &set, bson_iter_key(&it)))
			bson_append_iter(out, bson_iter_key(&it), -1, &x);
		else
			bson_append_iter(out, NULL, 0, &it);
	}
	bson_iter_init(&it, &set);
	while (bson_iter_next(&it))
	{
		bson_iter_t x;

		if (strchr(bson_iter_key(&it), '.'))
			goto bad;
		if (!bson_iter_init_find(&x, doc, bson_iter_key(&it)))
			bson_append_iter(out, NULL, 0, &it);
	}
	bson_destroy(&set);
	bson_destroy(&unset);
	return out;
bad:
	bson_destroy(&set);
	bson_destroy(&unset);
	bson_destroy(out);
	return NULL;
}

static int
holds_string(const bson_t *doc, const char *value)
{
	bson_iter_t it;

	if (value == NULL || doc == NULL || !bson_iter_init(&it, doc))
		return 0;
	while (bson_iter_next(&it))
	{
		if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), value) == 0)
			return 1;
		if (BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			uint32_t	n;
			const uint8_t *d;
			bson_t		sub;

			bson_iter_document(&it, &n, &d);
			if (bson_init_static(&sub, d, n) && holds_string(&sub, value))
				return 1;
		}
	}
	return 0;
}

static void
coll_put(MemColl *c, int at, bson_t *doc)
{
	if (at >= 0)
	{
		bson_destroy(c->docs[at]);
		c->docs[at] = doc;
		return;
	}
	if (c->n == c->max)
	{
		c->max = c->max ? c->max * 2 : 16;
		c->docs = realloc(c->docs, sizeof(bson_t *) * c->max);
	}
	c->docs[c->n++] = doc;
}

static void
coll_remove(MemColl *c, int at)
{
	bson_destroy(c->docs[at]);
	memmove(&c->docs[at], &c->docs[at + 1], sizeof(bson_t *) * (c->n - at - 1));
	c->n--;
}

/* The first document of filter: its index, -1 if none, -2 if the filter is not understood */
static int
first_match(const MemColl *c, const bson_t *filter)
{
	for (int i = 0; i < c->n; i++)
	{
		int			m = matches(c->docs[i], filter);

		if (m < 0)
			return -2;
		if (m == 1)
			return i;
	}
	return -1;
}

/* One write statement: 0 applied, else the refusal's code with msg set */
static int
apply_one(MemColl *c, const TargetWrite *w, char *msg, size_t msgsize)
{
	int			at;
	int			clash;
	bson_t	   *doc = NULL;

	switch (w->kind)
	{
		case TW_INSERT:
			doc = with_id(w->doc, NULL);
			at = -1;
			break;
		case TW_REPLACE:
			if ((at = first_match(c, w->selector)) == -2)
				goto not_understood;
			doc = with_id(w->doc, w->selector);
			break;
		case TW_UPDATE:
		case TW_UPDATE_UPSERT:
			if ((at = first_match(c, w->selector)) == -2)
				goto not_understood;
			if (at < 0 && w->kind == TW_UPDATE)
				return 0;
			{
				bson_t	   *base = at >= 0 ? bson_copy(c->docs[at]) : with_id(&(bson_t) BSON_INITIALIZER, w->selector);

				doc = updated(base, w->doc);
				bson_destroy(base);
			}
			if (doc == NULL)
			{
				snprintf(msg, msgsize, "memory target: an update it does not understand");
				return -1;
			}
			break;
		case TW_DELETE:
			if ((at = first_match(c, w->selector)) == -2)
				goto not_understood;
			if (at >= 0)
				coll_remove(c, at);
			return 0;
		case TW_DELETE_MANY:
			if (c->n > 0 && first_match(c, w->selector) == -2)
				goto not_understood;
			for (int i = c->n - 1; i >= 0; i--)
				if (matches(c->docs[i], w->selector) == 1)
					coll_remove(c, i);
			return 0;
		default:
			snprintf(msg, msgsize, "memory target: a write it does not know");
			return -1;
	}
	if ((clash = unique_clash(c, doc, at)) >= 0)
	{
		char	   *s = bson_as_relaxed_extended_json(c->docs[clash], NULL);

		snprintf(msg, msgsize, "E11000 duplicate key error collection: %.200s (with %.200s)", c->ns, s);
		bson_free(s);
		bson_destroy(doc);
		return 11000;
	}
	coll_put(c, at, doc);
	return 0;

not_understood:
	snprintf(msg, msgsize, "memory target: a filter it does not understand");
	return -1;
}

static void
gone(MemStore *s, TargetResult *r)
{
	target_result_init(r);
	r->status = TARGET_RETRY;
	r->lost = 1;
	snprintf(r->message, sizeof(r->message), "memory target: the server is gone%s",
			 s->dead ? "" : " (connection lost)");
}

static void
mem_write(Target *t, const char *db, const char *coll, const TargetWrite *w, int n, int ordered,
		  TargetResult *r)
{
	MemStore   *s = ((MemTarget *) t)->store;
	MemColl    *c = coll_of(s, db, coll, 1);
	int			faults;

	target_result_init(r);
	if (s->dead)
	{
		gone(s, r);
		return;
	}
	s->calls++;
	faults = s->fault_coll == NULL || strcmp(s->fault_coll, coll) == 0;
	if (faults && s->transient_calls > 0)
	{
		/*
		 * A statement's own transient error (a primary stepping down), after
		 * the statements before it were applied
		 */
		char		msg[512];

		s->transient_calls--;
		for (int i = 0; i < s->transient_applies && i < n; i++)
			(void) apply_one(c, &w[i], msg, sizeof(msg));
		r->status = TARGET_RETRY;
		r->code = 11602;
		snprintf(r->message, sizeof(r->message), "InterruptedDueToReplStateChange (code 11602)");
		return;
	}
	if (faults && s->write_concern_fatal)
	{
		r->status = TARGET_FATAL;
		r->code = 100;
		snprintf(r->message, sizeof(r->message), "cannot satisfy write concern: w 5 (code 100)");
		return;
	}
	for (int i = 0; i < n; i++)
	{
		char		msg[512];
		int			code;

		s->statements++;
		if (s->cut_at && s->statements == s->cut_at)
		{
			/* the server dies at this statement, having applied it or not */
			if (s->cut_applied)
				(void) apply_one(c, &w[i], msg, sizeof(msg));
			s->dead = 1;
			gone(s, r);
			return;
		}
		if (s->lose_at && s->statements == s->lose_at)
		{
			/* the connection is lost at this statement; the server lives on */
			s->lose_at = 0;
			if (s->cut_applied)
				(void) apply_one(c, &w[i], msg, sizeof(msg));
			gone(s, r);
			return;
		}
		if (holds_string(w[i].doc, s->closes_at_value))
		{
			/* FerretDB closes the connection at a value it cannot read */
			gone(s, r);
			return;
		}
		if (holds_string(w[i].doc, s->refused_value))
		{
			code = 2;
			snprintf(msg, sizeof(msg), "memory target: a value it refuses");
		}
		else
			code = apply_one(c, &w[i], msg, sizeof(msg));
		if (code == 0)
			continue;
		if (code < 0)
		{
			r->status = TARGET_FATAL;
			snprintf(r->message, sizeof(r->message), "%s", msg);
			return;
		}
		{
			char		full[600];

			snprintf(full, sizeof(full), "%.400s (code %d)", msg, code);
			/* FerretDB 1.x: the index of an ordered call's error is not to be trusted */
			target_refuse(r, ordered && n > 1 && t->index_unreliable ? -1 : i, code, full);
		}
		s->refusals++;
		if (ordered)
			return;
	}
}

static void
mem_find(Target *t, const char *db, const char *coll, const bson_t *filter, int64_t limit,
		 const bson_t *projection, TargetEach each, void *arg, TargetResult *r)
{
	MemStore   *s = ((MemTarget *) t)->store;
	MemColl    *c = coll_of(s, db, coll, 0);
	int64_t		found = 0;

	(void) projection;
	target_result_init(r);
	if (s->dead)
	{
		gone(s, r);
		return;
	}
	s->calls++;
	for (int i = 0; c && i < c->n && (limit == 0 || found < limit); i++)
	{
		int			m = matches(c->docs[i], filter);

		if (m < 0)
		{
			r->status = TARGET_FATAL;
			snprintf(r->message, sizeof(r->message), "memory target: a filter it does not understand");
			return;
		}
		if (m == 1)
		{
			found++;
			if (each(c->docs[i], arg) != 0)
				break;
		}
	}
}

static void
mem_indexes(Target *t, const char *db, const char *coll, TargetEach each, void *arg, TargetResult *r)
{
	MemStore   *s = ((MemTarget *) t)->store;
	MemColl    *c = coll_of(s, db, coll, 0);

	target_result_init(r);
	if (s->dead)
	{
		gone(s, r);
		return;
	}
	for (int u = 0; c && u < c->nunique; u++)
	{
		bson_t	   *spec = BCON_NEW("key", "{", c->unique[u], BCON_INT32(1), "}", "unique", BCON_BOOL(true));

		each(spec, arg);
		bson_destroy(spec);
	}
}

static void
mem_command(Target *t, const char *db, const bson_t *cmd, bson_t *reply, TargetResult *r)
{
	MemStore   *s = ((MemTarget *) t)->store;
	bson_iter_t it;
	const char *name;
	int			dies_after = 0;

	target_result_init(r);
	if (reply)
		bson_init(reply);
	if (s->dead)
	{
		gone(s, r);
		return;
	}
	bson_iter_init(&it, cmd);
	bson_iter_next(&it);
	name = bson_iter_key(&it);
	if (strcmp(name, "drop") == 0 || strcmp(name, "createIndexes") == 0)
	{
		/* a write command is a statement too: the server may die at it */
		if (++s->statements == s->cut_at)
		{
			if (!s->cut_applied)
			{
				s->dead = 1;
				gone(s, r);
				return;
			}
			dies_after = 1;
		}
	}
	if (strcmp(name, "buildInfo") == 0 && reply && s->ferretdb)
		BSON_APPEND_UTF8(reply, "ferretdbVersion", "memory");
	else if (strcmp(name, "hello") == 0 && reply)
		BSON_APPEND_INT32(reply, "maxBsonObjectSize", 16 * 1024 * 1024);
	else if (strcmp(name, "drop") == 0)
	{
		MemColl    *c = coll_of(s, db, bson_iter_utf8(&it, NULL), 0);

		if (c == NULL)
		{
			r->status = TARGET_FATAL;
			r->code = 26;
			snprintf(r->message, sizeof(r->message), "ns not found");
			return;
		}
		for (int i = 0; i < c->n; i++)
			bson_destroy(c->docs[i]);
		c->n = 0;
	}
	else if (strcmp(name, "createIndexes") == 0)
	{
		/* {createIndexes: coll, indexes: [{key: {f: 1}, unique: true, ...}]} */
		bson_iter_t k;
		MemColl    *c = coll_of(s, db, bson_iter_utf8(&it, NULL), 1);
		int			known = 0;

		if (bson_iter_init(&k, cmd) && bson_iter_find_descendant(&k, "indexes.0.unique", &k) &&
			bson_iter_as_bool(&k) && bson_iter_init(&k, cmd) &&
			bson_iter_find_descendant(&k, "indexes.0.key", &k) && bson_iter_recurse(&k, &k) &&
			bson_iter_next(&k))
		{
			for (int u = 0; u < c->nunique; u++)
				known |= strcmp(c->unique[u], bson_iter_key(&k)) == 0;
			if (!known)
				mem_unique(s, db, bson_iter_utf8(&it, NULL), bson_iter_key(&k));
		}
	}
	if (dies_after)
	{
		s->dead = 1;
		gone(s, r);
		return;
	}
	if (reply)
		BSON_APPEND_DOUBLE(reply, "ok", 1.0);
}

static void
mem_close(Target *t)
{
	free(t);
}

static const TargetOps mem_ops = {
	.write = mem_write,
	.find = mem_find,
	.indexes = mem_indexes,
	.command = mem_command,
	.close = mem_close,
};

Target *
mem_target(MemStore *s)
{
	MemTarget  *m = calloc(1, sizeof(MemTarget));

	m->base.ops = &mem_ops;
	m->store = s;
	s->dead = 0;
	return &m->base;
}

MemStore *
mem_store_new(void)
{
	return calloc(1, sizeof(MemStore));
}

void
mem_store_free(MemStore *s)
{
	for (int i = 0; i < s->ncolls; i++)
	{
		for (int j = 0; j < s->colls[i].n; j++)
			bson_destroy(s->colls[i].docs[j]);
		free(s->colls[i].docs);
	}
	free(s);
}

static int
strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The collection as relaxed Extended JSON, documents sorted: for comparisons */
char *
mem_dump(MemStore *s, const char *db, const char *coll)
{
	MemColl    *c = coll_of(s, db, coll, 0);
	char	  **lines;
	size_t		total = 3;
	char	   *out;

	if (c == NULL || c->n == 0)
		return strdup("[]");
	lines = calloc(c->n, sizeof(char *));
	for (int i = 0; i < c->n; i++)
	{
		lines[i] = bson_as_relaxed_extended_json(c->docs[i], NULL);
		total += strlen(lines[i]) + 2;
	}
	qsort(lines, c->n, sizeof(char *), strcmp_ptr);
	out = malloc(total);
	strcpy(out, "[");
	for (int i = 0; i < c->n; i++)
	{
		strcat(out, lines[i]);
		strcat(out, i + 1 < c->n ? ", " : "");
		bson_free(lines[i]);
	}
	strcat(out, "]");
	free(lines);
	return out;
}
