/*
 * embed_apply.c
 *		A batch's writes into a collection whose documents hold embedded rows
 *		(event_apply.h): the documents the batch touches read in one find
 *		by _id, each event applied to them in memory, and each document
 *		written whole, in the order of the events, by apply_collection (so
 *		with its ordered calls, replays and refusal policy).
 *
 *	parent's columns    the new row's fields, then the embedded fields the
 *	                    document has (embeddedFields' defaults where it has
 *	                    none: an empty array, null)
 *	embedded row        removed from where it was (embeddedFrom), set where
 *	                    it is (embeddedIn): an array's element found by its
 *	                    key, or put where its key orders it; its own
 *	                    embedded fields kept from the element it replaces
 *	its truncate        its field emptied in every document (read by _id,
 *	                    a chunk at a time)
 *
 * Every step sets a value by a key (a document's columns by its _id, an
 * element by its own key), so a replay of events already applied ends
 * where the first run did, on any server: no arrayFilters, no update
 * pipelines (FerretDB has neither).  A document missing at an embedded
 * row's insert (its parent inserted later in the transaction, deferred
 * constraints) is begun with its _id alone; the parent's insert fills in
 * its columns around the embedded fields.
 *
 * A parent's key change moves its rows after it, in its transaction (ON
 * UPDATE CASCADE), and a move whose row the WAL does not hold whole (a
 * TOASTed value unchanged) takes it from the element where the row was:
 * in the old document, which the key change deleted.  The batch keeps it
 * in memory (Doc.gone); for a move in a later batch, or in the next run
 * after a stop, a deleted document's embedded fields are first stored in
 * the progress collection (its "stash", before the segment's writes), and
 * read from there.  A stash's _id sorts after every token of its
 * transaction, so the stashes are removed once the stored position is past
 * it (mongo_apply.c).
 */
#include <stdlib.h>
#include <string.h>

#include "mongo_apply.h"
#include "applier.h"

#define READ_CHUNK	500

/* A document the batch touches: as the server has it, then as the events leave it */
typedef struct Doc
{
	bson_t	   *id;				/* {_id: value}: the key, the write's selector */
	bson_t	   *doc;			/* NULL: not there */
	bson_t	   *gone;			/* deleted by an event of the batch: as it was
								 * (its rows' moves that follow take what the
								 * WAL does not hold from it) */
	uint32_t	hash;
	int			stash_read;		/* its stash looked for in this segment */
} Doc;

typedef struct Docs
{
	Doc		   *d;
	int			n;
	int			max;
	int		   *slots;			/* open addressing over d, -1: free */
	int			nslots;
} Docs;

/* The writes the events make: whole documents, deletes, refusals */
typedef struct Writes
{
	Op		   *ops;
	int			n;
	int			max;
} Writes;

static uint32_t
hash_bytes(const uint8_t *p, uint32_t n)
{
	uint32_t	h = 2166136261u;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int
same_key(const bson_t *a, const bson_t *b)
{
	return a->len == b->len && memcmp(bson_get_data(a), bson_get_data(b), a->len) == 0;
}

static Doc *
docs_find(Docs *docs, const bson_t *id)
{
	uint32_t	h = hash_bytes(bson_get_data(id), id->len);

	if (docs->nslots == 0)
		return NULL;
	for (uint32_t i = h & (docs->nslots - 1);; i = (i + 1) & (docs->nslots - 1))
	{
		int			at = docs->slots[i];

		if (at < 0)
			return NULL;
		if (docs->d[at].hash == h && same_key(docs->d[at].id, id))
			return &docs->d[at];
	}
}

static int
docs_rehash(Docs *docs, int nslots)
{
	int		   *slots = malloc(sizeof(int) * nslots);

	if (slots == NULL)
		return -1;
	for (int i = 0; i < nslots; i++)
		slots[i] = -1;
	for (int k = 0; k < docs->n; k++)
	{
		uint32_t	i = docs->d[k].hash & (nslots - 1);

		while (slots[i] >= 0)
			i = (i + 1) & (nslots - 1);
		slots[i] = k;
	}
	free(docs->slots);
	docs->slots = slots;
	docs->nslots = nslots;
	return 0;
}

/* The entry of {_id: the value it points at}, made if new; NULL: out of memory */
static Doc *
docs_add(Docs *docs, bson_iter_t *id)
{
	bson_t	   *key = bson_new();
	Doc		   *found;

	bson_append_iter(key, "_id", 3, id);
	if ((found = docs_find(docs, key)) != NULL)
	{
		bson_destroy(key);
		return found;
	}
	if (docs->n == docs->max)
	{
		int			n = docs->max ? docs->max * 2 : 64;
		Doc		   *d = realloc(docs->d, sizeof(Doc) * n);

		if (d == NULL)
		{
			bson_destroy(key);
			return NULL;
		}
		docs->d = d;
		docs->max = n;
	}
	docs->d[docs->n].id = key;
	docs->d[docs->n].doc = NULL;
	docs->d[docs->n].gone = NULL;
	docs->d[docs->n].stash_read = 0;
	docs->d[docs->n].hash = hash_bytes(bson_get_data(key), key->len);
	docs->n++;
	if (docs->n * 2 > docs->nslots)
	{
		if (docs_rehash(docs, docs->nslots ? docs->nslots * 2 : 256) != 0)
			return NULL;
	}
	else
	{
		uint32_t	i = docs->d[docs->n - 1].hash & (docs->nslots - 1);

		while (docs->slots[i] >= 0)
			i = (i + 1) & (docs->nslots - 1);
		docs->slots[i] = docs->n - 1;
	}
	return &docs->d[docs->n - 1];
}

static void
docs_free(Docs *docs)
{
	for (int i = 0; i < docs->n; i++)
	{
		bson_destroy(docs->d[i].id);
		if (docs->d[i].doc)
			bson_destroy(docs->d[i].doc);
		if (docs->d[i].gone)
			bson_destroy(docs->d[i].gone);
	}
	free(docs->d);
	free(docs->slots);
	memset(docs, 0, sizeof(*docs));
}

/* A document the server has: kept in its entry */
static int
doc_found(const bson_t *doc, void *arg)
{
	Docs	   *docs = arg;
	bson_iter_t id;
	Doc		   *d;

	if (!bson_iter_init_find(&id, doc, "_id") || (d = docs_add(docs, &id)) == NULL)
		return 0;
	if (d->doc)
		bson_destroy(d->doc);
	d->doc = bson_copy(doc);
	return 0;
}

/* The documents of docs' entries from..n-1 as the server has them */
static int
docs_read(Docs *docs, int from, const char *db, const char *coll)
{
	for (int start = from; start < docs->n; start += READ_CHUNK)
	{
		bson_t		filter = BSON_INITIALIZER;
		bson_t		in;
		bson_t		list;
		int			end = start + READ_CHUNK < docs->n ? start + READ_CHUNK : docs->n;
		int			rc;

		BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id", &in);
		BSON_APPEND_ARRAY_BEGIN(&in, "$in", &list);
		for (int i = start; i < end; i++)
		{
			bson_iter_t id;
			char		key[16];
			const char *k;

			bson_iter_init_find(&id, docs->d[i].id, "_id");
			bson_uint32_to_string((uint32_t) (i - start), &k, key, sizeof(key));
			bson_append_iter(&list, k, -1, &id);
		}
		bson_append_array_end(&in, &list);
		bson_append_document_end(&filter, &in);
		rc = target_find("read the documents that hold embedded rows", db, coll, &filter, 0,
						 NULL, doc_found, docs);
		bson_destroy(&filter);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/*
 * Values in MongoDB's order, for the types an element's key can have
 * (integers, strings, binary, dates): numbers by value, strings and binary
 * by their bytes (binary by length first)
 */
static int
value_cmp(const bson_iter_t *a, const bson_iter_t *b)
{
	bson_type_t ta = bson_iter_type(a);
	bson_type_t tb = bson_iter_type(b);

	if ((ta == BSON_TYPE_INT32 || ta == BSON_TYPE_INT64) &&
		(tb == BSON_TYPE_INT32 || tb == BSON_TYPE_INT64))
	{
		int64_t		x = bson_iter_as_int64(a);
		int64_t		y = bson_iter_as_int64(b);

		return x < y ? -1 : x > y;
	}
	if (ta != tb)
		return ta < tb ? -1 : 1;
	switch (ta)
	{
		case BSON_TYPE_UTF8:
			{
				uint32_t	la;
				uint32_t	lb;
				const char *sa = bson_iter_utf8(a, &la);
				const char *sb = bson_iter_utf8(b, &lb);
				int			c = memcmp(sa, sb, la < lb ? la : lb);

				return c != 0 ? (c < 0 ? -1 : 1) : (la < lb ? -1 : la > lb);
			}
		case BSON_TYPE_BINARY:
			{
				bson_subtype_t sa;
				bson_subtype_t sb;
				uint32_t	la;
				uint32_t	lb;
				const uint8_t *pa;
				const uint8_t *pb;
				int			c;

				bson_iter_binary(a, &sa, &la, &pa);
				bson_iter_binary(b, &sb, &lb, &pb);
				if (la != lb)
					return la < lb ? -1 : 1;
				if (sa != sb)
					return sa < sb ? -1 : 1;
				c = memcmp(pa, pb, la);
				return c < 0 ? -1 : c > 0;
			}
		case BSON_TYPE_DATE_TIME:
			{
				int64_t		x = bson_iter_date_time(a);
				int64_t		y = bson_iter_date_time(b);

				return x < y ? -1 : x > y;
			}
		default:
			{
				/* exact: the same bytes */
				bson_t		x = BSON_INITIALIZER;
				bson_t		y = BSON_INITIALIZER;
				int			c;

				bson_append_iter(&x, "v", 1, a);
				bson_append_iter(&y, "v", 1, b);
				c = x.len != y.len ? (x.len < y.len ? -1 : 1) :
					memcmp(bson_get_data(&x), bson_get_data(&y), x.len);
				bson_destroy(&x);
				bson_destroy(&y);
				return c < 0 ? -1 : c > 0;
			}
	}
}

/* element against key ({column: value, ...} in the key's order) */
static int
key_cmp(const bson_t *element, const bson_t *key)
{
	bson_iter_t k;

	if (!bson_iter_init(&k, key))
		return 0;
	while (bson_iter_next(&k))
	{
		bson_iter_t v;
		int			c;

		if (!bson_iter_init_find(&v, element, bson_iter_key(&k)))
			return -1;
		if ((c = value_cmp(&v, &k)) != 0)
			return c;
	}
	return 0;
}

static int
iter_document(const bson_iter_t *it, bson_t *out)
{
	uint32_t	n;
	const uint8_t *d;

	if (BSON_ITER_HOLDS_DOCUMENT(it))
		bson_iter_document(it, &n, &d);
	else if (BSON_ITER_HOLDS_ARRAY(it))
		bson_iter_array(it, &n, &d);
	else
		return 0;
	return bson_init_static(out, d, n);
}

/* A field's {field, shape, key, default} of a path level or field list */
typedef struct Level
{
	const char *field;
	int			array;
	bson_t		key;
	int			has_key;
	bson_iter_t deflt;
	int			has_default;
} Level;

static int
read_level(const bson_t *spec, Level *l)
{
	bson_iter_t it;

	memset(l, 0, sizeof(*l));
	if (!bson_iter_init(&it, spec))
		return -1;
	while (bson_iter_next(&it))
	{
		const char *k = bson_iter_key(&it);

		if (strcmp(k, "field") == 0 && BSON_ITER_HOLDS_UTF8(&it))
			l->field = bson_iter_utf8(&it, NULL);
		else if (strcmp(k, "shape") == 0 && BSON_ITER_HOLDS_UTF8(&it))
			l->array = strcmp(bson_iter_utf8(&it, NULL), "array") == 0;
		else if (strcmp(k, "key") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
			l->has_key = iter_document(&it, &l->key);
		else if (strcmp(k, "default") == 0)
		{
			l->deflt = it;
			l->has_default = 1;
		}
	}
	return l->field ? 0 : -1;
}

/* The i-th level of an array of them (path, embeddedFields) */
static int
nth_level(const bson_t *levels, int i, Level *l)
{
	bson_iter_t it;
	bson_t		spec;
	int			n = 0;

	if (!bson_iter_init(&it, levels))
		return -1;
	while (bson_iter_next(&it))
		if (n++ == i)
			return iter_document(&it, &spec) ? read_level(&spec, l) : -1;
	return -1;
}

static int
count_levels(const bson_t *levels)
{
	bson_iter_t it;
	int			n = 0;

	if (bson_iter_init(&it, levels))
		while (bson_iter_next(&it))
			n++;
	return n;
}

/* What a change does at the end of its path */
typedef enum
{
	CHANGE_SET,					/* the element set (made, or replaced) */
	CHANGE_REMOVE,				/* the element removed */
	CHANGE_CLEAR				/* every element removed (a truncate) */
} ChangeKind;

typedef struct Change
{
	ChangeKind	kind;
	const bson_t *path;			/* array of levels */
	int			nlevels;
	const bson_t *element;		/* SET */
	const bson_t *element_fields;	/* SET: the element's embedded fields, or NULL */
	int			partial;		/* SET: the element's columns the event has, the others kept */
	const bson_t *unchanged;	/* partial: the columns the event left out (an array) */
	const bson_t *base;			/* partial: the element as it was where it was (a move) */
	int			missing;		/* out: a partial SET found no element to complete */
	int			bad;			/* out: the path could not be read */
} Change;

static void change_doc(const bson_t *doc, Change *c, int level, bson_t *out);

/*
 * The element a SET makes from the one it replaces (NULL: none): the
 * event's columns, then the element's own embedded fields as the old one
 * has them (their defaults where it has none); partial: the old one with
 * the event's columns set
 */
/* Is name among the strings of the array names? */
static int
named(const bson_t *names, const char *name)
{
	bson_iter_t it;

	if (names != NULL && bson_iter_init(&it, names))
		while (bson_iter_next(&it))
			if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), name) == 0)
				return 1;
	return 0;
}

/* Is name one of the element's own embedded fields? */
static int
nested_field(const Change *c, const char *name)
{
	int			n = c->element_fields ? count_levels(c->element_fields) : 0;

	for (int i = 0; i < n; i++)
	{
		Level		f;

		if (nth_level(c->element_fields, i, &f) == 0 && strcmp(f.field, name) == 0)
			return 1;
	}
	return 0;
}

/*
 * The element a SET makes from the one it replaces (NULL: none): the
 * event's columns, then the element's own embedded fields as the old one
 * has them (their defaults where it has none).  A partial event's columns
 * left out (unchangedFields) are the old element's, in its order of
 * fields; without an old element (nor the one it moved from), it cannot
 * be made.
 */
static void
new_element(const bson_t *old, Change *c, bson_t *out)
{
	bson_iter_t it;
	const bson_t *nested_from = old;

	if (c->partial)
	{
		const bson_t *from = old ? old : c->base;

		if (from == NULL)
		{
			c->missing = 1;
			return;
		}
		/* the columns in the old element's order, the unchanged ones its own */
		bson_iter_init(&it, from);
		while (bson_iter_next(&it))
		{
			const char *k = bson_iter_key(&it);
			bson_iter_t v;

			if (nested_field(c, k))
				continue;
			if (named(c->unchanged, k))
				bson_append_iter(out, k, -1, &it);
			else if (bson_iter_init_find(&v, c->element, k))
				bson_append_iter(out, k, -1, &v);
			/* else: NULL now, left out (omit_nulls) */
		}
		/* columns the old element did not have (NULL before, left out) */
		bson_iter_init(&it, c->element);
		while (bson_iter_next(&it))
			if (!bson_has_field(from, bson_iter_key(&it)))
				bson_append_iter(out, bson_iter_key(&it), -1, &it);
	}
	else
	{
		bson_iter_init(&it, c->element);
		while (bson_iter_next(&it))
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
	}
	if (c->element_fields)
	{
		int			n = count_levels(c->element_fields);

		for (int i = 0; i < n; i++)
		{
			Level		f;
			bson_iter_t v;

			if (nth_level(c->element_fields, i, &f) != 0)
			{
				c->bad = 1;
				return;
			}
			if (nested_from != NULL && bson_iter_init_find(&v, nested_from, f.field))
				bson_append_iter(out, f.field, -1, &v);
			else if (f.has_default)
				bson_append_iter(out, f.field, -1, &f.deflt);
		}
	}
}

/*
 * The element at the end of path in doc (a copy), or NULL: a moved row's
 * element, for a partial event at its new place
 */
static bson_t *
find_element(const bson_t *doc, const bson_t *path)
{
	int			n = count_levels(path);
	bson_t		cur;

	if (!bson_init_static(&cur, bson_get_data(doc), doc->len))
		return NULL;
	for (int level = 0; level < n; level++)
	{
		Level		l;
		bson_iter_t it;
		bson_t		value;
		int			found = 0;

		if (nth_level(path, level, &l) != 0 || !bson_iter_init_find(&it, &cur, l.field) ||
			!iter_document(&it, &value))
			return NULL;
		if (!l.array)
		{
			cur = value;
			continue;
		}
		{
			bson_iter_t e;

			if (bson_iter_init(&e, &value))
				while (!found && bson_iter_next(&e))
				{
					bson_t		elem;

					if (iter_document(&e, &elem) && l.has_key && key_cmp(&elem, &l.key) == 0)
					{
						cur = elem;
						found = 1;
					}
				}
		}
		if (!found)
			return NULL;
	}
	return bson_copy(&cur);
}

/* Append to array out (at index *n) the element doc as it comes out of the change's next level */
static void
append_element(bson_t *out, uint32_t *n, const bson_t *elem)
{
	char		key[16];
	const char *k;

	bson_uint32_to_string((*n)++, &k, key, sizeof(key));
	bson_append_document(out, k, -1, elem);
}

/*
 * A SET's element where the array has none with its key (at level l, into
 * array out at index *n): made at the last level, else begun with its key
 * and changed below (a row inserted before its parent)
 */
static void
append_new_element(bson_t *out, uint32_t *n, Change *c, int level, const Level *l)
{
	bson_t		made = BSON_INITIALIZER;

	if (level == c->nlevels - 1)
		new_element(NULL, c, &made);
	else
	{
		bson_t		stub = BSON_INITIALIZER;

		bson_concat(&stub, &l->key);
		change_doc(&stub, c, level + 1, &made);
		bson_destroy(&stub);
	}
	if (!c->missing)
		append_element(out, n, &made);
	bson_destroy(&made);
}

/* The value of level l's field (it: what the document has, NULL: nothing) under the change */
static void
change_field(bson_iter_t *it, Change *c, int level, const Level *l, bson_t *out)
{
	int			last = level == c->nlevels - 1;

	if (l->array)
	{
		bson_t		arr;
		bson_t		have;
		bson_iter_t e;
		uint32_t	n = 0;
		int			placed = 0;
		int			has = it != NULL && BSON_ITER_HOLDS_ARRAY(it) && iter_document(it, &have);

		bson_append_array_begin(out, l->field, -1, &arr);
		if (has && bson_iter_init(&e, &have))
			while (bson_iter_next(&e))
			{
				bson_t		elem;
				int			cmp;

				if (!iter_document(&e, &elem))
					continue;
				cmp = l->has_key ? key_cmp(&elem, &l->key) : 0;
				if (c->kind == CHANGE_CLEAR)
				{
					if (!last)
					{
						bson_t		changed = BSON_INITIALIZER;

						change_doc(&elem, c, level + 1, &changed);
						append_element(&arr, &n, &changed);
						bson_destroy(&changed);
					}
					continue;
				}
				/* the key's place, before an element past it */
				if (!placed && cmp > 0 && c->kind == CHANGE_SET)
				{
					append_new_element(&arr, &n, c, level, l);
					placed = 1;
				}
				if (cmp == 0 && !placed)
				{
					placed = 1;
					if (last && c->kind == CHANGE_REMOVE)
						continue;
					{
						bson_t		made = BSON_INITIALIZER;

						if (last)
							new_element(&elem, c, &made);
						else
							change_doc(&elem, c, level + 1, &made);
						append_element(&arr, &n, c->missing ? &elem : &made);
						bson_destroy(&made);
					}
					continue;
				}
				append_element(&arr, &n, &elem);
			}
		if (!placed && c->kind == CHANGE_SET)
		{
			append_new_element(&arr, &n, c, level, l);
		}
		bson_append_array_end(out, &arr);
		return;
	}

	/* one sub-document */
	{
		bson_t		have;
		int			has = it != NULL && BSON_ITER_HOLDS_DOCUMENT(it) && iter_document(it, &have);

		if (last && c->kind != CHANGE_SET)
		{
			if (l->has_default)
				bson_append_iter(out, l->field, -1, &l->deflt);
			return;
		}
		if (last)
		{
			bson_t		made = BSON_INITIALIZER;

			new_element(has ? &have : NULL, c, &made);
			if (c->missing && it != NULL)
				bson_append_iter(out, l->field, -1, it);
			else if (!c->missing)
				bson_append_document(out, l->field, -1, &made);
			bson_destroy(&made);
			return;
		}
		if (!has && c->kind != CHANGE_SET)
		{
			if (it != NULL)
				bson_append_iter(out, l->field, -1, it);
			return;
		}
		{
			bson_t		empty = BSON_INITIALIZER;
			bson_t		made = BSON_INITIALIZER;

			change_doc(has ? &have : &empty, c, level + 1, &made);
			bson_append_document(out, l->field, -1, &made);
			bson_destroy(&made);
			bson_destroy(&empty);
		}
	}
}

/* doc under the change, from its path's level on, into out */
static void
change_doc(const bson_t *doc, Change *c, int level, bson_t *out)
{
	Level		l;
	bson_iter_t it;
	int			found = 0;

	if (nth_level(c->path, level, &l) != 0)
	{
		c->bad = 1;
		bson_concat(out, doc);
		return;
	}
	if (bson_iter_init(&it, doc))
		while (bson_iter_next(&it))
		{
			if (strcmp(bson_iter_key(&it), l.field) == 0)
			{
				found = 1;
				change_field(&it, c, level, &l, out);
			}
			else
				bson_append_iter(out, bson_iter_key(&it), -1, &it);
		}
	/* a field the document lacks: only a SET makes it */
	if (!found && c->kind == CHANGE_SET)
		change_field(NULL, c, level, &l, out);
}

/*
 * A parent's new columns (full) around the embedded fields (fields) the
 * document has now (cur, NULL: none)
 */
static bson_t *
parent_document(const bson_t *full, const bson_t *fields, const bson_t *cur)
{
	bson_t	   *out = bson_copy(full);
	int			n = count_levels(fields);

	for (int i = 0; i < n; i++)
	{
		Level		f;
		bson_iter_t v;

		if (nth_level(fields, i, &f) != 0)
			continue;
		if (cur != NULL && bson_iter_init_find(&v, cur, f.field))
			bson_append_iter(out, f.field, -1, &v);
		else if (f.has_default)
			bson_append_iter(out, f.field, -1, &f.deflt);
	}
	return out;
}

static int
is_embedded_field(const bson_t *fields, const char *name)
{
	int			n = fields ? count_levels(fields) : 0;

	for (int i = 0; i < n; i++)
	{
		Level		f;

		if (nth_level(fields, i, &f) == 0 && strcmp(f.field, name) == 0)
			return 1;
	}
	return 0;
}

/*
 * A parent's update without fullDocument ($set, $unset of columns) on its
 * document: the fields it sets in place, new ones before the embedded fields
 */
static bson_t *
parent_updated(const bson_t *cur, const bson_t *ops, const bson_t *fields)
{
	bson_t	   *out = bson_new();
	bson_t		set = BSON_INITIALIZER;
	bson_t		unset = BSON_INITIALIZER;
	bson_iter_t it;
	bson_iter_t v;
	int			added = 0;

	if (bson_iter_init_find(&it, ops, "$set"))
		iter_document(&it, &set);
	if (bson_iter_init_find(&it, ops, "$unset"))
		iter_document(&it, &unset);
	bson_iter_init(&it, cur);
	while (bson_iter_next(&it))
	{
		const char *k = bson_iter_key(&it);

		if (!added && is_embedded_field(fields, k))
		{
			bson_iter_t s;

			/* the new columns, before the embedded fields */
			if (bson_iter_init(&s, &set))
				while (bson_iter_next(&s))
					if (!bson_has_field(cur, bson_iter_key(&s)))
						bson_append_iter(out, bson_iter_key(&s), -1, &s);
			added = 1;
		}
		if (bson_has_field(&unset, k))
			continue;
		if (bson_iter_init_find(&v, &set, k))
			bson_append_iter(out, k, -1, &v);
		else
			bson_append_iter(out, k, -1, &it);
	}
	if (!added && bson_iter_init(&v, &set))
		while (bson_iter_next(&v))
			if (!bson_has_field(cur, bson_iter_key(&v)))
				bson_append_iter(out, bson_iter_key(&v), -1, &v);
	return out;
}

static void
writes_free(Writes *w)
{
	for (int i = 0; i < w->n; i++)
	{
		/* the event's bytes are the batch's op's */
		w->ops[i].event = NULL;
		event_apply_free(&w->ops[i].ev);
	}
	free(w->ops);
	memset(w, 0, sizeof(*w));
}

/*
 * A write of the document id (doc NULL: its delete) for the event of src,
 * or a refusal (problem); merged into the write before it when that one is
 * of the same document.  before: put it before the last write (a key
 * change's new document written before its old one is deleted).
 */
static int
emit(Writes *w, const bson_t *id, const bson_t *doc, const Op *src, const char *problem,
	 int before)
{
	Op		   *op;

	if (problem == NULL && w->n > 0 && w->ops[w->n - 1].ev.kind != APPLY_REFUSED &&
		same_key(w->ops[w->n - 1].ev.selector, id))
		op = &w->ops[w->n - 1];
	else
	{
		if (w->n == w->max)
		{
			int			n = w->max ? w->max * 2 : 64;
			Op		   *ops = realloc(w->ops, sizeof(Op) * n);

			if (ops == NULL)
				return -1;
			w->ops = ops;
			w->max = n;
		}
		op = &w->ops[w->n++];
		memset(op, 0, sizeof(*op));
		op->ev.selector = bson_copy(id);
		op->ev.doc = bson_new();
		op->ev.unchanged = bson_new();
		if (before && w->n >= 2)
		{
			Op			tmp = w->ops[w->n - 2];

			w->ops[w->n - 2] = *op;
			w->ops[w->n - 1] = tmp;
			op = &w->ops[w->n - 2];
		}
	}
	memcpy(op->ev.token, src->ev.token, sizeof(op->ev.token));
	memcpy(op->ev.db, src->ev.db, sizeof(op->ev.db));
	memcpy(op->ev.coll, src->ev.coll, sizeof(op->ev.coll));
	op->ev.wall_ms = src->ev.wall_ms;
	op->event = src->event;
	op->event_len = src->event_len;
	op->replay |= src->replay;
	bson_reinit(op->ev.doc);
	if (problem != NULL)
	{
		op->ev.kind = APPLY_REFUSED;
		snprintf(op->ev.problem, sizeof(op->ev.problem), "%s", problem);
	}
	else if (doc == NULL)
		op->ev.kind = APPLY_DELETE;
	else if (applier.max_bson_size > 0 && doc->len > (uint32_t) applier.max_bson_size)
	{
		op->ev.kind = APPLY_REFUSED;
		snprintf(op->ev.problem, sizeof(op->ev.problem), "the document with its embedded rows "
				 "would be %u bytes, more than the server takes (%d)", doc->len,
				 applier.max_bson_size);
	}
	else
	{
		op->ev.kind = APPLY_REPLACE;
		bson_concat(op->ev.doc, doc);
	}
	return 0;
}

/* The writes into the collection, applied as a batch's writes are */
static int
apply_writes(Writes *w)
{
	Op		   *ops = applier.ops;
	int			nops = applier.nops;
	int			maxops = applier.maxops;
	int		   *idx;
	int			rc;

	if (w->n == 0)
		return 0;
	if ((idx = malloc(sizeof(int) * w->n)) == NULL)
	{
		fail("out of memory");
		return -1;
	}
	for (int i = 0; i < w->n; i++)
		idx[i] = i;
	applier.ops = w->ops;
	applier.nops = w->n;
	applier.maxops = w->max;
	rc = apply_collection(idx, w->n);
	applier.ops = ops;
	applier.nops = nops;
	applier.maxops = maxops;
	free(idx);
	return rc;
}

/* Deleted documents' embedded fields, stored before a segment's writes */
typedef struct Stashes
{
	bson_t	  **sel;
	bson_t	  **doc;
	int			n;
	int			max;
} Stashes;

/*
 * The stash of the document id deleted in the transaction of token:
 * "<slot>@<its commit LSN>FFFFFFFFFFFFFFFF <db>.<coll> <the _id's BSON in
 * hex>", after every token of the transaction (no event is at position
 * FFFFFFFFFFFFFFFF) and before the next transaction's.  malloc'd.
 */
static char *
doc_stash_id(const char *token, const char *db, const char *coll, const bson_t *id)
{
	const uint8_t *b = bson_get_data(id);
	size_t		n = strlen(applier.o.slot) + RESUME_TOKEN_LEN + strlen(db) + strlen(coll) +
		2 * (size_t) id->len + 8;
	char	   *out = malloc(n);
	char	   *p;

	if (out == NULL)
		return NULL;
	p = out + snprintf(out, n, "%s@%.*sFFFFFFFFFFFFFFFF %s.%s ", applier.o.slot,
					   RESUME_TOKEN_LSN_DIGITS, token, db, coll);
	for (uint32_t i = 0; i < id->len; i++)
		p += snprintf(p, n - (size_t) (p - out), "%02X", b[i]);
	return out;
}

/* Does the value hold anything (an element, a sub-document)? */
static int
holds_rows(const bson_iter_t *v)
{
	uint32_t	len;
	const uint8_t *data;

	if (BSON_ITER_HOLDS_ARRAY(v))
		bson_iter_array(v, &len, &data);
	else if (BSON_ITER_HOLDS_DOCUMENT(v))
		bson_iter_document(v, &len, &data);
	else
		return 0;
	return len > 5;
}

/*
 * The document d, deleted by op, to be stashed if it holds embedded rows
 * (a later move of one of them may need what the WAL does not hold)
 */
static int
stash_add(Stashes *st, const Op *op, const Doc *d)
{
	bson_t	   *doc;
	bson_t	   *sel;
	bson_t		fields;
	char	   *id;
	int			any = 0;
	int			n = count_levels(op->ev.fields);

	for (int i = 0; i < n && !any; i++)
	{
		Level		f;
		bson_iter_t v;

		any = nth_level(op->ev.fields, i, &f) == 0 && bson_iter_init_find(&v, d->doc, f.field) &&
			holds_rows(&v);
	}
	if (!any)
		return 0;
	if (st->n == st->max)
	{
		int			max = st->max ? st->max * 2 : 16;
		bson_t	  **s = realloc(st->sel, sizeof(bson_t *) * max);
		bson_t	  **dd;

		if (s == NULL)
			return -1;
		st->sel = s;
		if ((dd = realloc(st->doc, sizeof(bson_t *) * max)) == NULL)
			return -1;
		st->doc = dd;
		st->max = max;
	}
	if ((id = doc_stash_id(op->ev.token, target_db(op->ev.db), op->ev.coll, d->id)) == NULL)
		return -1;
	sel = bson_new();
	doc = bson_new();
	BSON_APPEND_UTF8(sel, "_id", id);
	BSON_APPEND_UTF8(doc, "_id", id);
	BSON_APPEND_DOCUMENT_BEGIN(doc, "deleted", &fields);
	for (int i = 0; i < n; i++)
	{
		Level		f;
		bson_iter_t v;

		if (nth_level(op->ev.fields, i, &f) == 0 && bson_iter_init_find(&v, d->doc, f.field))
			bson_append_iter(&fields, f.field, -1, &v);
	}
	bson_append_document_end(doc, &fields);
	st->sel[st->n] = sel;
	st->doc[st->n] = doc;
	st->n++;
	if (strncmp(op->ev.token, applier.doc_stashed, RESUME_TOKEN_LSN_DIGITS) > 0 ||
		!applier.doc_stashed[0])
		snprintf(applier.doc_stashed, sizeof(applier.doc_stashed), "%.*s",
				 RESUME_TOKEN_LSN_DIGITS, op->ev.token);
	free(id);
	return 0;
}

static void
stashes_free(Stashes *st)
{
	for (int i = 0; i < st->n; i++)
	{
		bson_destroy(st->sel[i]);
		bson_destroy(st->doc[i]);
	}
	free(st->sel);
	free(st->doc);
	memset(st, 0, sizeof(*st));
}

/*
 * The stashes stored, before the writes that delete their documents.  One
 * the server refuses (a document at the size limit) is said; a move that
 * would need it is refused then.
 */
static int
stashes_write(Stashes *st)
{
	TargetWrite *w;
	TargetResult r;
	int			rc;

	if (st->n == 0)
		return 0;
	if ((w = malloc(sizeof(TargetWrite) * st->n)) == NULL)
	{
		fail("out of memory");
		return -1;
	}
	for (int i = 0; i < st->n; i++)
	{
		w[i].kind = TW_REPLACE;
		w[i].selector = st->sel[i];
		w[i].doc = st->doc[i];
	}
	rc = target_write(applier.progress_db, applier.o.progress_coll, w, st->n, 0, &r);
	free(w);
	if (rc != 0)
		return -1;
	if (r.status == TARGET_REFUSED)
		for (int i = 0; i < r.nrefused; i++)
			fprintf(stderr, "pg_bsonstream: warning: the embedded rows of a deleted document could "
					"not be kept in %s.%s (%s): a move of one of them later in its transaction "
					"that the WAL does not hold whole will be refused\n", applier.progress_db,
					applier.o.progress_coll, target_refusal_message(&r, i));
	else if (r.status != TARGET_DONE)
	{
		fail("MongoDB: could not keep the embedded rows of deleted documents in %s.%s: %s",
			 applier.progress_db, applier.o.progress_coll, r.message);
		return -1;
	}
	return 0;
}

/*
 * A document missing at a move from it (deleted in an earlier batch, or
 * before a stop, by the transaction of op): its embedded fields as its
 * stash kept them, into d->gone
 */
static int
stash_read(Doc *d, const Op *op)
{
	bson_t		filter = BSON_INITIALIZER;
	bson_t	   *found = NULL;
	bson_iter_t it;
	char	   *id;
	int			rc;

	d->stash_read = 1;
	if ((id = doc_stash_id(op->ev.token, target_db(op->ev.db), op->ev.coll, d->id)) == NULL)
	{
		fail("out of memory");
		return -1;
	}
	BSON_APPEND_UTF8(&filter, "_id", id);
	rc = find_one(applier.progress_db, applier.o.progress_coll, &filter, &found);
	bson_destroy(&filter);
	free(id);
	if (rc != 0)
		return -1;
	if (found && bson_iter_init_find(&it, found, "deleted") && BSON_ITER_HOLDS_DOCUMENT(&it))
	{
		bson_t		fields;

		iter_document(&it, &fields);
		d->gone = bson_copy(&fields);
	}
	if (found)
		bson_destroy(found);
	return 0;
}

/* The top document's _id in a position (embeddedIn, embeddedFrom) */
static int
position_id(const bson_t *pos, bson_iter_t *id)
{
	bson_iter_t dk;

	return bson_iter_init_find(&dk, pos, "documentKey") && BSON_ITER_HOLDS_DOCUMENT(&dk) &&
		bson_iter_recurse(&dk, id) && bson_iter_find(id, "_id");
}

static int
position_path(const bson_t *pos, bson_t *path)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, pos, "path") && BSON_ITER_HOLDS_ARRAY(&it) &&
		iter_document(&it, path);
}

/*
 * An embedded row's event on the documents: removed from where it was,
 * then set where it is.  *removed: the element the event took away (for
 * the next event, the insert of a move whose row the WAL does not hold
 * whole); *removed_write: the write that took it away, or -1.
 * removed_later: an event after it in the batch removes its element (a
 * replay that finds no element to complete passes, it is gone for good).
 */
static int
apply_embedded(Docs *docs, Writes *w, const Op *op, bson_t **removed, int *removed_write,
			   int removed_later)
{
	bson_iter_t id;
	Doc		   *d;
	bson_t	   *base = *removed;
	int			base_write = *removed_write;
	int			rc = 0;

	*removed = NULL;
	*removed_write = -1;
	if (op->ev.embed_from && position_id(op->ev.embed_from, &id))
	{
		Change		c = {.kind = CHANGE_REMOVE};
		bson_t		path;

		if ((d = docs_add(docs, &id)) == NULL)
			return -1;
		if (!position_path(op->ev.embed_from, &path))
			return emit(w, d->id, NULL, op, "an embeddedFrom without its path", 0);
		if (d->doc == NULL && d->gone == NULL && !d->stash_read && stash_read(d, op) != 0)
			return -1;
		if (d->doc == NULL && d->gone != NULL)
		{
			/* its document deleted before it in the batch: the element as it was there */
			bson_t	   *out = bson_new();

			if (base)
				bson_destroy(base);
			base = find_element(d->gone, &path);
			c.path = &path;
			c.nlevels = count_levels(&path);
			change_doc(d->gone, &c, 0, out);
			bson_destroy(d->gone);
			d->gone = out;
		}
		else if (d->doc != NULL)
		{
			bson_t	   *out = bson_new();

			if (base)
				bson_destroy(base);
			base = find_element(d->doc, &path);
			c.path = &path;
			c.nlevels = count_levels(&path);
			change_doc(d->doc, &c, 0, out);
			bson_destroy(d->doc);
			d->doc = out;
			if (emit(w, d->id, d->doc, op, c.bad ? "an embeddedFrom whose path cannot be read" : NULL, 0) != 0)
			{
				if (base)
					bson_destroy(base);
				return -1;
			}
			base_write = w->n - 1;
		}
	}
	if (op->ev.embed_in && position_id(op->ev.embed_in, &id))
	{
		Change		c = {.kind = CHANGE_SET};
		bson_t		path;
		bson_t		element;
		bson_t		fields;
		bson_t		unchanged;
		bson_iter_t it;
		bson_t	   *start;
		bson_t	   *out;

		if ((d = docs_add(docs, &id)) == NULL)
			rc = -1;
		else if (!position_path(op->ev.embed_in, &path) ||
				 !bson_iter_init_find(&it, op->ev.embed_in, "element") || !iter_document(&it, &element))
			rc = emit(w, d->id, NULL, op, "an embeddedIn without its path or element", 0);
		else
		{
			c.path = &path;
			c.nlevels = count_levels(&path);
			c.element = &element;
			if (bson_iter_init_find(&it, op->ev.embed_in, "elementFields") && iter_document(&it, &fields))
				c.element_fields = &fields;
			c.partial = bson_iter_init_find(&it, op->ev.embed_in, "partial") && bson_iter_as_bool(&it);
			if (bson_iter_init_find(&it, op->ev.embed_in, "unchangedFields") && iter_document(&it, &unchanged))
				c.unchanged = &unchanged;
			c.base = base;
			/* its parent not there yet: begun with its _id */
			start = d->doc ? d->doc : bson_copy(d->id);
			out = bson_new();
			change_doc(start, &c, 0, out);
			if (start != d->doc)
				bson_destroy(start);
			if (c.missing && op->replay && removed_later)
				bson_destroy(out);	/* a replay's: a later event removes the element */
			else if (c.bad || c.missing)
			{
				bson_destroy(out);
				rc = emit(w, d->id, NULL, op, c.bad ? "an embeddedIn whose path cannot be read" :
						  "an update of an embedded row whose element is not in the target (the "
						  "event carries only the changed columns, so it cannot be made from them)", 0);
			}
			else
			{
				if (d->doc)
					bson_destroy(d->doc);
				d->doc = out;

				/*
				 * a move whose row the WAL does not hold whole: its new place
				 * written before its old one loses it, so that a stop between
				 * the two leaves the element to be found again
				 */
				rc = emit(w, d->id, d->doc, op, NULL,
						  c.partial && base != NULL && base_write >= 0 && base_write == w->n - 1);
			}
		}
		if (base)
			bson_destroy(base);
		return rc;
	}
	*removed = base;
	*removed_write = base_write;
	return 0;
}

/* The _id of a parent's event, or of an embedded row's top documents */
static int
note_ids(Docs *docs, const Op *op)
{
	bson_iter_t id;

	if (op->ev.kind == APPLY_EMBEDDED)
	{
		if (op->ev.embed_from && position_id(op->ev.embed_from, &id) && docs_add(docs, &id) == NULL)
			return -1;
		if (op->ev.embed_in && position_id(op->ev.embed_in, &id) && docs_add(docs, &id) == NULL)
			return -1;
		return 0;
	}
	if (bson_iter_init_find(&id, op->ev.selector, "_id") && docs_add(docs, &id) == NULL)
		return -1;
	return 0;
}

/* The documentKey and path of a position, as bytes to compare two */
static int
same_position(const bson_t *a, const bson_t *b)
{
	static const char *const parts[] = {"documentKey", "path"};

	for (int i = 0; i < 2; i++)
	{
		bson_iter_t x;
		bson_iter_t y;
		bson_t		dx;
		bson_t		dy;

		if (!bson_iter_init_find(&x, a, parts[i]) || !bson_iter_init_find(&y, b, parts[i]) ||
			!iter_document(&x, &dx) || !iter_document(&y, &dy) || !bson_equal(&dx, &dy))
			return 0;
	}
	return 1;
}

/* Does an event after ops[idx[i]] in the batch remove the element it sets? */
static int
removed_after(const int *idx, int n, int i)
{
	const Op   *op = &applier.ops[idx[i]];

	if (op->ev.embed_in == NULL)
		return 0;
	for (int j = i + 1; j < n; j++)
	{
		const Op   *later = &applier.ops[idx[j]];

		if (later->ev.kind == APPLY_EMBEDDED && later->ev.embed_from != NULL &&
			same_position(later->ev.embed_from, op->ev.embed_in))
			return 1;
	}
	return 0;
}

/* The events idx[0..n-1] (no truncate among them), on the documents they touch */
static int
apply_segment(int *idx, int n)
{
	Docs		docs = {0};
	Writes		w = {0};
	const Op   *first = &applier.ops[idx[0]];
	const char *db = target_db(first->ev.db);
	bson_t	   *deleted = NULL;		/* the document the event before deleted */
	bson_t	   *removed = NULL;		/* the element the event before removed */
	int			removed_write = -1;
	Stashes		stashes = {0};
	int			rc = 0;

	for (int i = 0; i < n; i++)
		if (note_ids(&docs, &applier.ops[idx[i]]) != 0)
			goto oom;
	if (docs_read(&docs, 0, db, first->ev.coll) != 0)
	{
		docs_free(&docs);
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++)
	{
		const Op   *op = &applier.ops[idx[i]];
		bson_t	   *was_deleted = deleted;
		bson_iter_t id;
		Doc		   *d = NULL;

		deleted = NULL;
		if (op->ev.kind != APPLY_EMBEDDED && removed != NULL)
		{
			bson_destroy(removed);
			removed = NULL;
			removed_write = -1;
		}
		if (op->ev.kind != APPLY_EMBEDDED && bson_iter_init_find(&id, op->ev.selector, "_id") &&
			(d = docs_add(&docs, &id)) == NULL)
			goto oom;
		switch (op->ev.kind)
		{
			case APPLY_NOTHING:
				break;
			case APPLY_REFUSED:
				rc = emit(&w, d ? d->id : op->ev.selector, NULL, op, op->ev.problem, 0);
				break;
			case APPLY_EMBEDDED:
				rc = apply_embedded(&docs, &w, op, &removed, &removed_write,
									removed_after(idx, n, i));
				break;
			case APPLY_REPLACE:
			case APPLY_KEY_CHANGE_INSERT:
				{
					bson_t	   *full = op->ev.doc;
					bson_t		merged = BSON_INITIALIZER;
					bson_t	   *doc;
					bson_t		nofields = BSON_INITIALIZER;

					/*
					 * a key change whose row the WAL does not hold whole: its
					 * fields from the document its delete removed, or from
					 * this one where it is there already (a replay)
					 */
					if (op->ev.kind == APPLY_KEY_CHANGE_INSERT)
					{
						const bson_t *old = was_deleted ? was_deleted : d->doc;

						if (old == NULL)
						{
							/* a replay's: a later change deleted the document */
							if (!op->replay)
								rc = emit(&w, d->id, NULL, op, "a key change whose old document is not "
										  "in the target (the event does not carry all of its columns)", 0);
							bson_destroy(&merged);
							break;
						}
						event_key_change_document(op->ev.doc, op->ev.unchanged, old, &merged);
						full = &merged;
					}
					doc = parent_document(full, op->ev.fields ? op->ev.fields : &nofields, d->doc);
					bson_destroy(&merged);
					if (d->doc)
						bson_destroy(d->doc);
					d->doc = doc;
					/*
					 * a key change's new document before its old one's delete,
					 * so that a stop between the two leaves the fields the
					 * event lacks to be found again
					 */
					rc = emit(&w, d->id, d->doc, op, NULL,
							  op->ev.kind == APPLY_KEY_CHANGE_INSERT && was_deleted != NULL);
					break;
				}
			case APPLY_UPDATE:
				if (d->doc == NULL)
				{
					/* a replay's: the document was deleted by a later change */
					if (!op->replay)
						rc = emit(&w, d->id, NULL, op, "the document to update is not in the "
								  "target (the event carries only the changed columns, so it "
								  "cannot be made from them)", 0);
					break;
				}
				{
					bson_t	   *doc = parent_updated(d->doc, op->ev.doc, op->ev.fields);

					bson_destroy(d->doc);
					d->doc = doc;
					rc = emit(&w, d->id, d->doc, op, NULL, 0);
				}
				break;
			case APPLY_DELETE:
				if (d->doc && op->ev.fields && stash_add(&stashes, op, d) != 0)
				{
					rc = -1;
					break;
				}
				deleted = d->doc;
				if (d->gone)
					bson_destroy(d->gone);
				d->gone = d->doc ? bson_copy(d->doc) : NULL;
				d->doc = NULL;
				rc = emit(&w, d->id, NULL, op, NULL, 0);
				break;
			default:
				rc = emit(&w, op->ev.selector, NULL, op, "an event that cannot be applied to a "
						  "collection of documents with embedded rows", 0);
				break;
		}
		if (was_deleted)
			bson_destroy(was_deleted);
	}
	if (deleted)
		bson_destroy(deleted);
	if (removed)
		bson_destroy(removed);
	if (rc != 0)
		goto oom;
	docs_free(&docs);
	rc = stashes_write(&stashes);
	stashes_free(&stashes);
	if (rc == 0)
		rc = apply_writes(&w);
	writes_free(&w);
	return rc;

oom:
	docs_free(&docs);
	writes_free(&w);
	stashes_free(&stashes);
	/* a read of the target stopped by a signal, or failed and said, is no lack of memory */
	if (applier.stop != 1 && !apply_failed(NULL, 0))
		fail("out of memory");
	return -1;
}

/* Every _id of the collection */
static int
id_found(const bson_t *doc, void *arg)
{
	bson_iter_t id;

	if (bson_iter_init_find(&id, doc, "_id") && docs_add((Docs *) arg, &id) == NULL)
		return 1;
	return 0;
}

/*
 * A truncate of an embedded table: its field emptied in every document of
 * the collection, read by _id a chunk at a time
 */
static int
clear_everywhere(const Op *op)
{
	Docs		ids = {0};
	bson_t		all = BSON_INITIALIZER;
	bson_t		proj = BSON_INITIALIZER;
	bson_t		path;
	bson_iter_t it;
	const char *db = target_db(op->ev.db);
	int			rc;

	if (bson_iter_init_find(&it, op->ev.embed_in, "partitions"))
	{
		Writes		w = {0};

		rc = emit(&w, op->ev.selector, NULL, op, "a truncate of some partitions of a table whose "
				  "rows are embedded in this collection's documents: which elements were theirs "
				  "is not said (copy the collection again: start over with a new slot)", 0);
		if (rc == 0)
			rc = apply_writes(&w);
		writes_free(&w);
		return rc;
	}
	if (!position_path(op->ev.embed_in, &path))
	{
		fail("a truncate's embeddedIn without its path");
		return -1;
	}
	BSON_APPEND_INT32(&proj, "_id", 1);
	rc = target_find("list the documents that hold embedded rows", db, op->ev.coll, &all, 0,
					 &proj, id_found, &ids);
	bson_destroy(&all);
	bson_destroy(&proj);
	for (int start = 0; rc == 0 && start < ids.n; start += READ_CHUNK)
	{
		Docs		docs = {0};
		Writes		w = {0};
		int			end = start + READ_CHUNK < ids.n ? start + READ_CHUNK : ids.n;

		for (int i = start; i < end && rc == 0; i++)
		{
			bson_iter_t id;

			bson_iter_init_find(&id, ids.d[i].id, "_id");
			if (docs_add(&docs, &id) == NULL)
				rc = -1;
		}
		if (rc == 0)
			rc = docs_read(&docs, 0, db, op->ev.coll);
		for (int i = 0; rc == 0 && i < docs.n; i++)
		{
			Change		c = {.kind = CHANGE_CLEAR};
			bson_t	   *out;

			if (docs.d[i].doc == NULL)
				continue;
			c.path = &path;
			c.nlevels = count_levels(&path);
			out = bson_new();
			change_doc(docs.d[i].doc, &c, 0, out);
			if (!bson_equal(out, docs.d[i].doc))
				rc = emit(&w, docs.d[i].id, out, op, NULL, 0);
			bson_destroy(out);
		}
		if (rc == 0)
			rc = apply_writes(&w);
		writes_free(&w);
		docs_free(&docs);
	}
	docs_free(&ids);
	return rc;
}

int
embed_collection(const int *idx, int n)
{
	for (int i = 0; i < n; i++)
	{
		const Op   *op = &applier.ops[idx[i]];

		if (op->ev.kind == APPLY_EMBEDDED || op->ev.fields != NULL)
			return 1;
	}
	return 0;
}

/* A write that ends what the documents read before it can tell: a truncate */
static int
barrier(const Op *op)
{
	bson_iter_t id;

	return op->ev.kind == APPLY_DELETE_ALL ||
		(op->ev.kind == APPLY_EMBEDDED && op->ev.embed_in != NULL &&
		 !position_id(op->ev.embed_in, &id));
}

int
embed_apply(int *idx, int n)
{
	int			from = 0;

	while (from < n)
	{
		int			upto = from;

		while (upto < n && !barrier(&applier.ops[idx[upto]]))
			upto++;
		if (upto > from && apply_segment(idx + from, upto - from) != 0)
			return -1;
		if (upto < n)
		{
			const Op   *b = &applier.ops[idx[upto]];

			if (b->ev.kind == APPLY_DELETE_ALL)
			{
				if (apply_collection(idx + upto, 1) != 0)
					return -1;
			}
			else if (clear_everywhere(b) != 0)
				return -1;
			upto++;
		}
		from = upto;
	}
	return 0;
}
