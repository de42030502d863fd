/*
 * event_apply.c
 *		A change event read as the write that applies it (event_apply.h).
 */
#include <stdio.h>
#include <string.h>

#include "event_apply.h"

/* The fields of the event this needs, found in one pass */
typedef struct EventFields
{
	const char *op;
	bson_iter_t id;				/* _id._data */
	int			has_token;
	bson_iter_t ns;
	int			has_ns;
	bson_iter_t key;			/* documentKey._id */
	int			has_key;
	bson_iter_t full;
	int			has_full;
	bson_iter_t update_desc;
	int			has_update;
	bson_iter_t unchanged;
	int			has_unchanged;
	bson_iter_t partitions;
	int			has_partitions;
	bson_iter_t partition_filter;
	int			has_partition_filter;
	bson_iter_t description;
	int			has_description;
	bson_iter_t embed_in;
	int			has_embed_in;
	bson_iter_t embed_from;
	int			has_embed_from;
	bson_iter_t fields;
	int			has_fields;
	int64_t		wall_ms;
} EventFields;

static void
refuse(ApplyEvent *ev, const char *fmt, const char *arg)
{
	ev->kind = APPLY_REFUSED;
	snprintf(ev->problem, sizeof(ev->problem), fmt, arg);
}

/* A copy of the document or array it holds, or NULL */
static bson_t *
sub_copy(const bson_iter_t *it)
{
	uint32_t	n;
	const uint8_t *d;
	bson_t		sub;

	if (BSON_ITER_HOLDS_DOCUMENT(it))
		bson_iter_document(it, &n, &d);
	else if (BSON_ITER_HOLDS_ARRAY(it))
		bson_iter_array(it, &n, &d);
	else
		return NULL;
	if (!bson_init_static(&sub, d, n))
		return NULL;
	return bson_copy(&sub);
}

/* Would $set or $unset read name as a path or an operator? */
static int
not_a_plain_field(const char *name)
{
	return name[0] == '$' || strchr(name, '.') != NULL;
}

static int
array_is_empty(const bson_iter_t *it)
{
	bson_iter_t sub;

	return !BSON_ITER_HOLDS_ARRAY(it) || !bson_iter_recurse(it, &sub) || !bson_iter_next(&sub);
}

/* $set of updatedFields, $unset of removedFields; -1 if a name is a path */
static int
build_update(const bson_iter_t *desc, bson_t *out, const char **bad)
{
	bson_iter_t it;
	bson_iter_t f;
	bson_t		set;
	bson_t		unset;
	int			nset = 0;
	int			nunset = 0;

	if (!BSON_ITER_HOLDS_DOCUMENT(desc) || !bson_iter_recurse(desc, &it))
		return 0;
	while (bson_iter_next(&it))
	{
		const char *k = bson_iter_key(&it);

		if (strcmp(k, "updatedFields") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			bson_iter_recurse(&it, &f);
			while (bson_iter_next(&f))
			{
				if (not_a_plain_field(bson_iter_key(&f)))
				{
					*bad = bson_iter_key(&f);
					return -1;
				}
				if (nset++ == 0)
					bson_append_document_begin(out, "$set", 4, &set);
				bson_append_iter(&set, NULL, 0, &f);
			}
			if (nset)
				bson_append_document_end(out, &set);
		}
	}
	bson_iter_recurse(desc, &it);
	while (bson_iter_next(&it))
	{
		if (strcmp(bson_iter_key(&it), "removedFields") == 0 && BSON_ITER_HOLDS_ARRAY(&it))
		{
			bson_iter_recurse(&it, &f);
			while (bson_iter_next(&f))
			{
				const char *name;

				if (!BSON_ITER_HOLDS_UTF8(&f))
					continue;
				name = bson_iter_utf8(&f, NULL);
				if (not_a_plain_field(name))
				{
					*bad = name;
					return -1;
				}
				if (nunset++ == 0)
					bson_append_document_begin(out, "$unset", 6, &unset);
				bson_append_utf8(&unset, name, -1, "", 0);
			}
			if (nunset)
				bson_append_document_end(out, &unset);
		}
	}
	return nset + nunset;
}

/*
 * A schema event's operationDescription: the table's relid and name, and
 * for a modify its shape
 */
static int
read_schema_event(EventFields *f, ApplyEvent *ev, char *err, size_t errsize)
{
	bson_iter_t sub;
	int			has_relid = 0;

	if (f->has_description && bson_iter_recurse(&f->description, &sub))
		while (bson_iter_next(&sub))
		{
			const char *k = bson_iter_key(&sub);

			if (strcmp(k, "relid") == 0 && BSON_ITER_HOLDS_INT64(&sub))
			{
				ev->relid = bson_iter_int64(&sub);
				has_relid = 1;
			}
			else if (strcmp(k, "table") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
				snprintf(ev->table, sizeof(ev->table), "%s", bson_iter_utf8(&sub, NULL));
			else if (strcmp(k, "shape") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
			{
				free(ev->shape);
				ev->shape = strdup(bson_iter_utf8(&sub, NULL));
			}
		}
	if (!has_relid || (strcmp(f->op, "modify") == 0 && ev->shape == NULL))
	{
		snprintf(err, errsize, "a %s event without its table's relid or shape", f->op);
		return -1;
	}
	ev->kind = APPLY_SCHEMA;
	return 0;
}

int
event_apply_read(const uint8_t *data, uint32_t len, ApplyEvent *ev, char *err, size_t errsize)
{
	bson_t		event;
	bson_iter_t it;
	EventFields f;

	memset(&f, 0, sizeof(f));
	memset(ev, 0, sizeof(*ev));
	ev->selector = bson_new();
	ev->doc = bson_new();
	ev->unchanged = bson_new();
	if (!bson_init_static(&event, data, len) || !bson_iter_init(&it, &event))
	{
		snprintf(err, errsize, "a damaged event of %u bytes", (unsigned) len);
		return -1;
	}
	while (bson_iter_next(&it))
	{
		const char *k = bson_iter_key(&it);

		if (strcmp(k, "_id") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			bson_iter_t sub;

			if (bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "_data") &&
				BSON_ITER_HOLDS_UTF8(&sub))
			{
				uint32_t	n;
				const char *s = bson_iter_utf8(&sub, &n);

				if (n == RESUME_TOKEN_LEN && resume_token_is_valid(s))
				{
					memcpy(ev->token, s, RESUME_TOKEN_LEN);
					f.has_token = 1;
				}
			}
		}
		else if (strcmp(k, "operationType") == 0 && BSON_ITER_HOLDS_UTF8(&it))
			f.op = bson_iter_utf8(&it, NULL);
		else if (strcmp(k, "ns") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			f.ns = it;
			f.has_ns = 1;
		}
		else if (strcmp(k, "documentKey") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			bson_iter_t sub;

			if (bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "_id"))
			{
				f.key = sub;
				f.has_key = 1;
			}
		}
		else if (strcmp(k, "fullDocument") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			f.full = it;
			f.has_full = 1;
		}
		else if (strcmp(k, "updateDescription") == 0)
		{
			f.update_desc = it;
			f.has_update = 1;
		}
		else if (strcmp(k, "unchangedFields") == 0)
		{
			f.unchanged = it;
			f.has_unchanged = !array_is_empty(&it);
		}
		else if (strcmp(k, "partitions") == 0)
		{
			f.partitions = it;
			f.has_partitions = !array_is_empty(&it);
		}
		else if (strcmp(k, "partitionFilter") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			f.partition_filter = it;
			f.has_partition_filter = 1;
		}
		else if (strcmp(k, "wallTime") == 0 && BSON_ITER_HOLDS_DATE_TIME(&it))
			f.wall_ms = bson_iter_date_time(&it);
		else if (strcmp(k, "operationDescription") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			f.description = it;
			f.has_description = 1;
		}
		else if (strcmp(k, "embeddedIn") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			f.embed_in = it;
			f.has_embed_in = 1;
		}
		else if (strcmp(k, "embeddedFrom") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
		{
			f.embed_from = it;
			f.has_embed_from = 1;
		}
		else if (strcmp(k, "embeddedFields") == 0 && BSON_ITER_HOLDS_ARRAY(&it))
		{
			f.fields = it;
			f.has_fields = 1;
		}
	}
	if (!f.has_token || f.op == NULL || !f.has_ns)
	{
		snprintf(err, errsize, "a document of %u bytes that is no change event of bson_out "
				 "(no resume token, operationType or ns)", (unsigned) len);
		return -1;
	}
	{
		bson_iter_t sub;

		if (bson_iter_recurse(&f.ns, &sub))
			while (bson_iter_next(&sub))
			{
				if (strcmp(bson_iter_key(&sub), "db") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
					snprintf(ev->db, sizeof(ev->db), "%s", bson_iter_utf8(&sub, NULL));
				else if (strcmp(bson_iter_key(&sub), "coll") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
					snprintf(ev->coll, sizeof(ev->coll), "%s", bson_iter_utf8(&sub, NULL));
			}
	}
	ev->wall_ms = f.wall_ms;
	if (f.has_key)
		bson_append_iter(ev->selector, "_id", 3, &f.key);
	if ((f.has_embed_in && (ev->embed_in = sub_copy(&f.embed_in)) == NULL) ||
		(f.has_embed_from && (ev->embed_from = sub_copy(&f.embed_from)) == NULL) ||
		(f.has_fields && (ev->fields = sub_copy(&f.fields)) == NULL))
	{
		snprintf(err, errsize, "an event with a damaged embeddedIn, embeddedFrom or embeddedFields");
		return -1;
	}
	if (ev->embed_in || ev->embed_from)
	{
		bson_iter_t own;

		ev->embed_own = bson_iter_init_find(&own, ev->embed_in ? ev->embed_in : ev->embed_from,
											"ownCollection") &&
			BSON_ITER_HOLDS_BOOL(&own) && bson_iter_bool(&own);
	}

	if (strcmp(f.op, "modify") == 0 || strcmp(f.op, "drop") == 0)
		return read_schema_event(&f, ev, err, errsize);
	if (strcmp(f.op, "truncate") == 0)
	{
		if (f.has_partitions && !f.has_partition_filter)
			refuse(ev, "a truncate of some partitions of the collection (%s) without a "
				   "partitionFilter (the plugin warned why): their documents cannot be told "
				   "from the other partitions'", ev->coll);
		else
		{
			/* the partitions' documents as the plugin's filter selects them */
			if (f.has_partition_filter)
			{
				uint32_t	n;
				const uint8_t *d;
				bson_t		filter;

				bson_iter_document(&f.partition_filter, &n, &d);
				if (!bson_init_static(&filter, d, n))
				{
					snprintf(err, errsize, "a truncate event with a partitionFilter that is no document");
					return -1;
				}
				bson_concat(ev->selector, &filter);
			}
			ev->kind = APPLY_DELETE_ALL;
		}
		return 0;
	}
	if (!f.has_key)
	{
		refuse(ev, "a change of a table without a replica identity (collection %s): its "
			   "documents have no _id to be found again by", ev->coll);
		return 0;
	}
	if (strcmp(f.op, "insert") == 0 || strcmp(f.op, "replace") == 0 ||
		(strcmp(f.op, "update") == 0 && f.has_full))
	{
		uint32_t	n;
		const uint8_t *d;
		bson_t		full;

		if (!f.has_full)
		{
			refuse(ev, "an %s without fullDocument", f.op);
			return 0;
		}
		bson_iter_document(&f.full, &n, &d);
		if (!bson_init_static(&full, d, n))
		{
			snprintf(err, errsize, "a damaged fullDocument");
			return -1;
		}
		bson_destroy(ev->doc);
		ev->doc = bson_copy(&full);
		if (f.has_unchanged)
		{
			bson_iter_array(&f.unchanged, &n, &d);
			bson_destroy(ev->unchanged);
			bson_init_static(&full, d, n);
			ev->unchanged = bson_copy(&full);
			ev->kind = APPLY_KEY_CHANGE_INSERT;
		}
		else
			ev->kind = APPLY_REPLACE;
		return 0;
	}
	if (strcmp(f.op, "update") == 0)
	{
		const char *bad = NULL;
		int			n = f.has_update ? build_update(&f.update_desc, ev->doc, &bad) : 0;

		if (n < 0)
			refuse(ev, "an update without fullDocument of column \"%s\", which $set and $unset "
				   "would take for a path or an operator", bad);
		else
			ev->kind = n > 0 ? APPLY_UPDATE : APPLY_NOTHING;
		return 0;
	}
	if (strcmp(f.op, "delete") == 0)
	{
		ev->kind = APPLY_DELETE;
		return 0;
	}
	refuse(ev, "an event of unknown operationType \"%s\"", f.op);
	return 0;
}

void
event_apply_free(ApplyEvent *ev)
{
	if (ev->selector)
		bson_destroy(ev->selector);
	if (ev->doc)
		bson_destroy(ev->doc);
	if (ev->unchanged)
		bson_destroy(ev->unchanged);
	ev->selector = ev->doc = ev->unchanged = NULL;
	if (ev->embed_in)
		bson_destroy(ev->embed_in);
	if (ev->embed_from)
		bson_destroy(ev->embed_from);
	if (ev->fields)
		bson_destroy(ev->fields);
	ev->embed_in = ev->embed_from = ev->fields = NULL;
	free(ev->shape);
	ev->shape = NULL;
}

int
event_apply_embedded(const ApplyEvent *ev, ApplyEvent *out)
{
	const bson_t *pos = ev->embed_in ? ev->embed_in : ev->embed_from;
	bson_iter_t it;
	bson_iter_t sub;

	memset(out, 0, sizeof(*out));
	out->kind = APPLY_EMBEDDED;
	memcpy(out->token, ev->token, sizeof(out->token));
	out->wall_ms = ev->wall_ms;
	out->embed_own = ev->embed_own;
	out->selector = bson_new();
	out->doc = bson_new();
	out->unchanged = bson_new();
	out->embed_in = ev->embed_in ? bson_copy(ev->embed_in) : NULL;
	out->embed_from = ev->embed_from ? bson_copy(ev->embed_from) : NULL;
	if (!bson_iter_init_find(&it, pos, "ns") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
		!bson_iter_recurse(&it, &sub))
		return -1;
	while (bson_iter_next(&sub))
	{
		if (strcmp(bson_iter_key(&sub), "db") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
			snprintf(out->db, sizeof(out->db), "%s", bson_iter_utf8(&sub, NULL));
		else if (strcmp(bson_iter_key(&sub), "coll") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
			snprintf(out->coll, sizeof(out->coll), "%s", bson_iter_utf8(&sub, NULL));
	}
	/* the top document, for messages (none: a truncate's every document) */
	if (bson_iter_init_find(&it, pos, "documentKey") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
		bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "_id"))
		bson_append_iter(out->selector, "_id", 3, &sub);
	return out->db[0] && out->coll[0] ? 0 : -1;
}

int
event_split_info(const uint8_t *data, uint32_t len, int *fragment, int *of)
{
	bson_t		event;
	bson_iter_t it;
	bson_iter_t sub;

	/* splitEvent follows _id: the second field */
	if (!bson_init_static(&event, data, len) || !bson_iter_init(&it, &event) ||
		!bson_iter_next(&it) || !bson_iter_next(&it) ||
		strcmp(bson_iter_key(&it), "splitEvent") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return 0;
	*fragment = *of = 0;
	bson_iter_recurse(&it, &sub);
	while (bson_iter_next(&sub))
	{
		if (strcmp(bson_iter_key(&sub), "fragment") == 0 && BSON_ITER_HOLDS_INT32(&sub))
			*fragment = bson_iter_int32(&sub);
		else if (strcmp(bson_iter_key(&sub), "of") == 0 && BSON_ITER_HOLDS_INT32(&sub))
			*of = bson_iter_int32(&sub);
	}
	return *of > 0;
}

void
event_merge_fragments(const bson_t *fragments, int n, bson_t *merged)
{
	bson_iter_t it;

	bson_init(merged);
	if (n > 0 && bson_iter_init_find(&it, &fragments[n - 1], "_id"))
		bson_append_iter(merged, "_id", 3, &it);
	for (int i = 0; i < n; i++)
	{
		if (!bson_iter_init(&it, &fragments[i]))
			continue;
		while (bson_iter_next(&it))
		{
			const char *k = bson_iter_key(&it);

			if (strcmp(k, "_id") != 0 && strcmp(k, "splitEvent") != 0)
				bson_append_iter(merged, k, -1, &it);
		}
	}
}

/* Is name among the strings of the array unchanged? */
static int
named_in(const bson_t *unchanged, const char *name)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, unchanged))
		return 0;
	while (bson_iter_next(&it))
		if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), name) == 0)
			return 1;
	return 0;
}

int
event_key_change_document(const bson_t *newdoc, const bson_t *unchanged, const bson_t *old,
						  bson_t *out)
{
	bson_iter_t it;
	bson_iter_t found;
	int			missing = 0;

	bson_init(out);
	if (bson_iter_init_find(&it, newdoc, "_id"))
		bson_append_iter(out, "_id", 3, &it);
	/* old's fields, in its order: unchanged ones from old, the rest from the new row */
	if (old != NULL && bson_iter_init(&it, old))
		while (bson_iter_next(&it))
		{
			const char *k = bson_iter_key(&it);

			if (strcmp(k, "_id") == 0)
				continue;
			if (named_in(unchanged, k))
				bson_append_iter(out, k, -1, &it);
			else if (bson_iter_init_find(&found, newdoc, k))
				bson_append_iter(out, k, -1, &found);
		}
	/* the new row's fields old did not have */
	if (bson_iter_init(&it, newdoc))
		while (bson_iter_next(&it))
		{
			const char *k = bson_iter_key(&it);

			if (strcmp(k, "_id") != 0 && (old == NULL || !bson_iter_init_find(&found, old, k)))
				bson_append_iter(out, k, -1, &it);
		}
	if (bson_iter_init(&it, unchanged))
		while (bson_iter_next(&it))
			if (BSON_ITER_HOLDS_UTF8(&it) &&
				(old == NULL || !bson_iter_init_find(&found, old, bson_iter_utf8(&it, NULL))))
				missing++;
	return missing;
}

bson_t *
event_with_document(const uint8_t *event, uint32_t len, const bson_t *doc)
{
	bson_t		in;
	bson_iter_t it;
	bson_t	   *out;

	if (!bson_init_static(&in, event, len) || !bson_iter_init(&it, &in))
		return NULL;
	out = bson_new();
	while (bson_iter_next(&it))
	{
		const char *key = bson_iter_key(&it);

		if (strcmp(key, "unchangedFields") == 0)
			continue;
		if (strcmp(key, "fullDocument") == 0)
			BSON_APPEND_DOCUMENT(out, "fullDocument", doc);
		else
			bson_append_iter(out, key, -1, &it);
	}
	return out;
}
