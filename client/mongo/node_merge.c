/*
 * node_merge.c
 *		pg_bsonstream --citus --to: the change segments of every node of a
 *		Citus cluster (DIR/group-<G>/changes) read side by side and applied
 *		in one commit order (the rule: node_merge.h).
 *
 * Each event goes to the applier as a single server's would, its resume
 * token replaced by its merge key, so that batches, replays, stashes and
 * the stored position work on the merged stream unchanged.  What a node's
 * own position is goes with it: each event fed is noted with its node's
 * token and order, and a store of the position at a merge key stores, in
 * the same progress document, every node's last event at or before it
 * (nodes: {"<group>": {token, order}}).  A restart resumes each node after
 * its own, with its order, so the keys of the events applied again are
 * those they had: the replay is of the same merged stream.
 *
 * A node's segment is removed once its node's stored position covers it.
 * Memory: an event read ahead per node, and the chunk of merged events
 * being fed (MERGE_CHUNK_EVENTS, MERGE_CHUNK_BYTES; one larger event
 * alone), besides the notes of the events fed since the last store.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mongo_apply.h"
#include "applier.h"
#include "node_merge.h"
#include "segment_name.h"

#define MERGE_CHUNK_EVENTS	4000
#define MERGE_CHUNK_BYTES	(16 * 1024 * 1024)
#define MERGE_WAIT_SAID		5.0		/* seconds of waiting for a node before it is said */

typedef struct MergeNode
{
	int			group;
	char		changes[4200];	/* DIR/group-<G>/changes */
	/* its last event taken into the merge (or stored, at the start) */
	char		token[RESUME_TOKEN_LEN + 1];	/* "" none */
	uint64_t	order;
	/* its stored position */
	char		stored[RESUME_TOKEN_LEN + 1];
	uint64_t	stored_order;
	/* the segments being read */
	char	  **names;
	int			next;
	FILE	   *f;
	char		path[4400];
	/* the event read ahead */
	uint8_t    *buf;
	size_t		bufsize;
	uint32_t	len;
	int			has_head;
	char		head_token[RESUME_TOKEN_LEN + 1];
	uint64_t	head_order;
	int64_t		head_wall;		/* its wallTime */
	int			heartbeat;		/* the head is a heartbeat */
} MergeNode;

/* An event fed: what its node's position is once it is stored */
typedef struct Fed
{
	char		key[RESUME_TOKEN_LEN + 1];
	int			node;
	char		token[RESUME_TOKEN_LEN + 1];
	uint64_t	order;
} Fed;

/* A merged event of the chunk */
typedef struct Merged
{
	uint8_t    *data;
	uint32_t	len;
	int			node;
	int			heartbeat;
	uint64_t	order;
	int64_t		wall;
	char		token[RESUME_TOKEN_LEN + 1];	/* the node's */
} Merged;

static struct
{
	MergeNode  *nodes;
	int			n;
	Fed		   *fed;			/* a ring: fed[(first + i) % max] */
	int			first;
	int			nfed;
	int			maxfed;
	int			removed_upto_dirty;	/* a store moved a node's position */
	int64_t		copy_time;		/* the latest node's MERGE_COPY_TIME, 0: none */
	int			off;			/* BSON_OUT_MERGE=off: no merge (tests only) */
} merge;

int
merge_active(void)
{
	return merge.n > 0;
}

int
merge_init(void)
{
	if (applier.o.ngroups <= 0)
		return 0;
	merge.nodes = calloc(applier.o.ngroups, sizeof(MergeNode));
	if (merge.nodes == NULL)
		return -1;
	merge.n = applier.o.ngroups;

	/*
	 * The tests' proof that the merge matters: each node's events applied
	 * as they come, the last group's first, as if each stream were applied
	 * on its own
	 */
	if (getenv("BSON_OUT_MERGE") && strcmp(getenv("BSON_OUT_MERGE"), "off") == 0)
	{
		merge.off = 1;
		fprintf(stderr, "pg_bsonstream: warning: BSON_OUT_MERGE=off: the nodes' streams are "
				"applied each on its own, not in commit order (for tests only)\n");
	}
	for (int i = 0; i < merge.n; i++)
	{
		merge.nodes[i].group = applier.o.groups[i];
		snprintf(merge.nodes[i].changes, sizeof(merge.nodes[i].changes), "%s/group-%d/changes",
				 applier.o.dir, applier.o.groups[i]);
	}
	return 0;
}

/*
 * The latest node's MERGE_COPY_TIME: read once every node streams (its
 * copy made), when the merge starts, not when the applier opens
 */
static void
read_copy_times(void)
{
	merge.copy_time = 0;
	for (int i = 0; i < merge.n; i++)
	{
		char		p[4300];
		FILE	   *f;
		long long	ms;

		snprintf(p, sizeof(p), "%s/group-%d/%s", applier.o.dir, merge.nodes[i].group,
				 MERGE_COPY_TIME);
		if ((f = fopen(p, "r")) != NULL)
		{
			if (fscanf(f, "%lld", &ms) == 1 && ms > merge.copy_time)
				merge.copy_time = ms;
			fclose(f);
		}
	}
}

/* Is the event's operationType op? */
static int
operation_is(const uint8_t *data, uint32_t len, const char *op)
{
	bson_t		b;
	bson_iter_t it;

	return bson_init_static(&b, data, len) && bson_iter_init_find(&it, &b, "operationType") &&
		BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), op) == 0;
}

/*
 * A truncate committed while the nodes' first copies were being made
 * (node_merge.h): refused, 0 otherwise
 */
static int
truncate_in_copies(const uint8_t *data, uint32_t len, uint64_t order)
{
	int64_t		ms = (int64_t) (order >> MERGE_SEQ_BITS) + MERGE_EPOCH_MS;
	bson_t		b;
	bson_iter_t it;
	bson_iter_t ns;
	const char *coll = "a table";

	/* two nodes' clocks may differ by MERGE_MAX_SKEW_MS beyond the readings' round trips */
	if (merge.copy_time == 0 || ms > merge.copy_time + 2 * MERGE_MAX_SKEW_MS || !operation_is(data, len, "truncate"))
		return 0;
	if (bson_init_static(&b, data, len) && bson_iter_init_find(&it, &b, "ns") &&
		BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &ns) &&
		bson_iter_find(&ns, "coll") && BSON_ITER_HOLDS_UTF8(&ns))
		coll = bson_iter_utf8(&ns, NULL);
	fail("a TRUNCATE of %s committed while the nodes' first copies were being made (within "
		 "%d ms of the last of them): the copies are of different moments, and it cannot be "
		 "applied so that every node's rows are right\n"
		 "hint: Start over when no TRUNCATE runs: drop every node's slot, the target's "
		 "collections and its progress document, remove the stream's directory, and run with "
		 "--create-slot --initial-copy.", coll, 2 * MERGE_MAX_SKEW_MS);
	return -1;
}

void
merge_free(void)
{
	for (int i = 0; i < merge.n; i++)
	{
		MergeNode  *m = &merge.nodes[i];

		if (m->f)
			fclose(m->f);
		if (m->names)
			free_names(m->names);
		free(m->buf);
	}
	free(merge.nodes);
	free(merge.fed);
	memset(&merge, 0, sizeof(merge));
}

static MergeNode *
node_of_group(int group)
{
	for (int i = 0; i < merge.n; i++)
		if (merge.nodes[i].group == group)
			return &merge.nodes[i];
	return NULL;
}

/* Each node's stored position, from the progress document's nodes */
int
merge_read_positions(const bson_t *progress)
{
	bson_iter_t it;
	bson_iter_t nodes;

	if (!bson_iter_init_find(&it, progress, "nodes") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
		!bson_iter_recurse(&it, &nodes))
		return 0;
	while (bson_iter_next(&nodes))
	{
		MergeNode  *m = node_of_group(atoi(bson_iter_key(&nodes)));
		bson_iter_t f;

		if (m == NULL)
		{
			fail("the progress document names group %s, which is not a node of the cluster "
				 "now: its stream's events not yet applied would be lost\n"
				 "hint: A node left the cluster since the last run. Start over: drop every node's "
				 "slot, the target's collections and its progress document, remove \"%s\", and "
				 "run with --create-slot --initial-copy.",
				 bson_iter_key(&nodes), applier.o.dir);
			return -1;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&nodes) || !bson_iter_recurse(&nodes, &f))
			continue;
		while (bson_iter_next(&f))
			if (strcmp(bson_iter_key(&f), "token") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				snprintf(m->stored, sizeof(m->stored), "%s", bson_iter_utf8(&f, NULL));
			else if (strcmp(bson_iter_key(&f), "order") == 0)
				m->stored_order = (uint64_t) bson_iter_as_int64(&f);
		snprintf(m->token, sizeof(m->token), "%s", m->stored);
		m->order = m->stored_order;
	}
	return 0;
}

/*
 * The nodes' positions as of the merge key token (NULL: as stored), into
 * the progress document's $set
 */
void
merge_append_positions(bson_t *set, const char *token)
{
	bson_t		nodes;

	if (token)
		while (merge.nfed > 0 &&
			   strcmp(merge.fed[merge.first].key, token) <= 0)
		{
			Fed		   *f = &merge.fed[merge.first];
			MergeNode  *m = &merge.nodes[f->node];

			snprintf(m->stored, sizeof(m->stored), "%s", f->token);
			m->stored_order = f->order;
			merge.first = (merge.first + 1) % merge.maxfed;
			merge.nfed--;
			merge.removed_upto_dirty = 1;
		}
	BSON_APPEND_DOCUMENT_BEGIN(set, "nodes", &nodes);
	for (int i = 0; i < merge.n; i++)
	{
		MergeNode  *m = &merge.nodes[i];
		char		g[16];
		bson_t		pos;

		if (!m->stored[0])
			continue;
		snprintf(g, sizeof(g), "%d", m->group);
		BSON_APPEND_DOCUMENT_BEGIN(&nodes, g, &pos);
		BSON_APPEND_UTF8(&pos, "token", m->stored);
		BSON_APPEND_INT64(&pos, "order", (int64_t) m->stored_order);
		bson_append_document_end(&nodes, &pos);
	}
	bson_append_document_end(set, &nodes);
}

static int
note_fed(const Merged *e, const char *key)
{
	Fed		   *f;

	if (merge.nfed == merge.maxfed)
	{
		int			max = merge.maxfed ? merge.maxfed * 2 : 1024;
		Fed		   *fed = malloc(sizeof(Fed) * max);

		if (fed == NULL)
			return -1;
		for (int i = 0; i < merge.nfed; i++)
			fed[i] = merge.fed[(merge.first + i) % merge.maxfed];
		free(merge.fed);
		merge.fed = fed;
		merge.first = 0;
		merge.maxfed = max;
	}
	f = &merge.fed[(merge.first + merge.nfed) % merge.maxfed];
	memcpy(f->key, key, RESUME_TOKEN_LEN);
	f->key[RESUME_TOKEN_LEN] = '\0';
	f->node = e->node;
	memcpy(f->token, e->token, sizeof(f->token));
	f->order = e->order;
	merge.nfed++;
	return 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* A node's closed segments past its last event taken, in order; NULL on failure */
static char **
node_segments(const MergeNode *m, uint64_t *bytes)
{
	DIR		   *d = opendir(m->changes);
	struct dirent *de;
	char	  **names = calloc(1, sizeof(char *));
	int			n = 0;

	if (names == NULL)
		return NULL;
	if (d == NULL)
		return names;
	while ((de = readdir(d)) != NULL)
	{
		char		p[4500];
		struct stat sb;
		char	  **more;

		if (!segment_name_valid(de->d_name) ||
			(m->token[0] && strncmp(segment_name_last(de->d_name), m->token, RESUME_TOKEN_LEN) <= 0))
			continue;
		/* a list cut short would have a later segment read before an earlier one */
		if ((more = realloc(names, sizeof(char *) * (n + 2))) == NULL ||
			(more[n] = strdup(de->d_name)) == NULL)
		{
			if (more)
				names = more;
			names[n] = NULL;
			free_names(names);
			closedir(d);
			return NULL;
		}
		names = more;
		names[++n] = NULL;
		snprintf(p, sizeof(p), "%s/%s", m->changes, de->d_name);
		if (bytes && stat(p, &sb) == 0)
			*bytes += (uint64_t) sb.st_size;
	}
	closedir(d);
	qsort(names, n, sizeof(char *), cmp_names);
	return names;
}

static int64_t
event_wall_ms(const uint8_t *data, uint32_t len)
{
	bson_t		b;
	bson_iter_t it;

	if (bson_init_static(&b, data, len) && bson_iter_init_find(&it, &b, "wallTime") &&
		BSON_ITER_HOLDS_DATE_TIME(&it))
		return bson_iter_date_time(&it);
	return 0;
}

/* The node's next event read ahead: 1, 0 if its closed segments hold none now, -1 */
static int
node_next(MergeNode *m)
{
	for (;;)
	{
		int			r;
		const char *token;

		if (m->f == NULL)
		{
			if (m->names == NULL || m->names[m->next] == NULL)
			{
				if (m->names)
					free_names(m->names);
				m->next = 0;
				if ((m->names = node_segments(m, NULL)) == NULL)
				{
					fail("out of memory");
					return -1;
				}
				if (m->names[0] == NULL)
					return 0;
			}
			snprintf(m->path, sizeof(m->path), "%s/%s", m->changes, m->names[m->next++]);
			if ((m->f = fopen(m->path, "rb")) == NULL)
			{
				/* replaced by a copy of itself sent again: listed again */
				if (errno == ENOENT)
					continue;
				fail("could not open segment \"%s\": %s", m->path, strerror(errno));
				return -1;
			}
		}
		r = read_doc(m->f, &m->buf, &m->bufsize, &m->len);
		if (r == 0)
		{
			fclose(m->f);
			m->f = NULL;
			continue;
		}
		if (r < 0 || (token = resume_token_of_event((const char *) m->buf, m->len)) == NULL)
		{
			fail("segment \"%s\" is damaged (a document cut short, or one that is no change event)",
				 m->path);
			return -1;
		}
		if (m->token[0] && strncmp(token, m->token, RESUME_TOKEN_LEN) <= 0)
			continue;
		memcpy(m->head_token, token, RESUME_TOKEN_LEN);
		m->head_token[RESUME_TOKEN_LEN] = '\0';
		m->head_wall = event_wall_ms(m->buf, m->len);
		m->head_order = merge_order(m->token, m->order, token, m->head_wall);
		m->heartbeat = operation_is(m->buf, m->len, "heartbeat");
		m->has_head = 1;
		return 1;
	}
}

/* Is a's event before b's in the merge? */
static int
before(const MergeNode *a, const MergeNode *b)
{
	if (a->head_order != b->head_order)
		return a->head_order < b->head_order;
	if (a->group != b->group)
		return a->group < b->group;
	return strcmp(a->head_token, b->head_token) < 0;
}

/*
 * The next event that may be merged now: its node, or NULL (none yet).
 * *waiting: the group every other node waits for, or -1.
 */
static MergeNode *
next_merged(int *waiting)
{
	MergeNode  *c = NULL;

	*waiting = -1;
	for (int i = 0; i < merge.n; i++)
	{
		MergeNode  *m = &merge.nodes[i];

		if (!m->has_head && node_next(m) < 0)
			return NULL;
		if (m->has_head && (c == NULL || before(m, c)))
			c = m;
	}
	if (c == NULL)
		return NULL;
	if (merge.off)
	{
		for (int i = 0; i < merge.n; i++)
			if (merge.nodes[i].has_head && merge.nodes[i].group > c->group)
				c = &merge.nodes[i];
		return c;
	}
	for (int i = 0; i < merge.n; i++)
	{
		MergeNode  *m = &merge.nodes[i];

		if (m != c && !m->has_head && !merge_passed(c->head_order, c->group, m->order, m->group))
		{
			*waiting = m->group;
			return NULL;
		}
	}
	return c;
}

/* Remove each node's segments that its stored position covers */
static void
remove_merged(void)
{
	if (applier.o.keep_applied || !merge.removed_upto_dirty)
		return;
	merge.removed_upto_dirty = 0;
	for (int i = 0; i < merge.n; i++)
	{
		MergeNode  *m = &merge.nodes[i];
		DIR		   *d;
		struct dirent *de;

		if (!m->stored[0] || (d = opendir(m->changes)) == NULL)
			continue;
		while ((de = readdir(d)) != NULL)
			if (segment_name_valid(de->d_name) &&
				strncmp(segment_name_last(de->d_name), m->stored, RESUME_TOKEN_LEN) <= 0)
			{
				char		p[4500];

				snprintf(p, sizeof(p), "%s/%s", m->changes, de->d_name);
				(void) unlink(p);
			}
		closedir(d);
	}
}

static void
chunk_free(Merged *chunk, int n)
{
	for (int i = 0; i < n; i++)
		free(chunk[i].data);
}

/*
 * The merged stream applied until a stop: a chunk of the events that may
 * be merged, its last key stored as the replay's bound, each event fed to
 * the applier (a heartbeat passed over), then, once none may be merged,
 * the batch applied and the position stored.
 */
int
merge_apply(void)
{
	Merged	   *chunk = malloc(sizeof(Merged) * MERGE_CHUNK_EVENTS);
	int			waited_for = -1;	/* the group the merge waits for, and since when */
	double		waiting_since = 0;
	int			said = 0;
	int			rc = 0;

	if (chunk == NULL)
	{
		fail("out of memory");
		return -1;
	}
	read_copy_times();
	while (applier.stop != 1 && rc == 0)
	{
		int			n = 0;
		size_t		bytes = 0;
		int			waiting = -1;
		char		last[RESUME_TOKEN_LEN + 1];
		MergeNode  *c;

		while (n < MERGE_CHUNK_EVENTS && bytes < MERGE_CHUNK_BYTES &&
			   (c = next_merged(&waiting)) != NULL)
		{
			Merged	   *e = &chunk[n];

			e->data = malloc(c->len);
			if (e->data == NULL)
			{
				fail("out of memory");
				rc = -1;
				break;
			}
			memcpy(e->data, c->buf, c->len);
			e->len = c->len;
			e->node = (int) (c - merge.nodes);
			e->heartbeat = c->heartbeat;
			e->order = c->head_order;
			e->wall = c->head_wall;
			memcpy(e->token, c->head_token, sizeof(e->token));
			merge_key((char *) e->data + RESUME_TOKEN_OFFSET, c->head_order, c->group, c->head_token);
			bytes += c->len;
			n++;
			/* taken: the node's stream is past it */
			memcpy(c->token, c->head_token, sizeof(c->token));
			c->order = c->head_order;
			c->has_head = 0;
		}
		if (apply_failed(NULL, 0))
			rc = -1;
		if (rc == 0 && n > 0)
		{
			memcpy(last, chunk[n - 1].data + RESUME_TOKEN_OFFSET, RESUME_TOKEN_LEN);
			last[RESUME_TOKEN_LEN] = '\0';
			rc = store_intent(last);
		}
		for (int i = 0; i < n && rc == 0; i++)
		{
			const char *key = (const char *) chunk[i].data + RESUME_TOKEN_OFFSET;

			if (note_fed(&chunk[i], key) != 0)
			{
				fail("out of memory");
				rc = -1;
				break;
			}
			if (chunk[i].heartbeat)
			{
				/* never applied: its position counts as applied */
				memcpy(applier.passed, key, RESUME_TOKEN_LEN);
				applier.passed[RESUME_TOKEN_LEN] = '\0';
				/* the status's lag: the stream is as recent as its heartbeat */
				pthread_mutex_lock(&applier.lock);
				if (chunk[i].wall > applier.stats.wall_ms)
					applier.stats.wall_ms = chunk[i].wall;
				pthread_mutex_unlock(&applier.lock);
			}
			else if (truncate_in_copies(chunk[i].data, chunk[i].len, chunk[i].order) != 0 ||
					 read_event(chunk[i].data, chunk[i].len) != 0)
				rc = -1;
			else if (applier.stop == 1)
				break;
		}
		chunk_free(chunk, n);
		if (rc != 0)
			break;
		if (n == 0)
		{
			/* nothing to merge now: what was fed is applied, its position stored */
			if (release_held() != 0 || flush_batch(1) != 0)
			{
				rc = -1;
				break;
			}
			remove_merged();

			/*
			 * A node's heartbeat comes each second: a wait that lasts is
			 * said (the node is down, or its stream behind)
			 */
			if (waiting != waited_for)
			{
				waited_for = waiting;
				waiting_since = now_seconds();
				if (said)
					set_state("%s", "");
				said = 0;
			}
			else if (waiting >= 0 && now_seconds() - waiting_since >= MERGE_WAIT_SAID)
			{
				set_state("waiting %.0f s for the stream of group %d (the nodes' events are "
						  "applied in commit order)", now_seconds() - waiting_since, waiting);
				said = 1;
			}
			{
				uint64_t	pending = 0;

				for (int i = 0; i < merge.n; i++)
				{
					char	  **names = node_segments(&merge.nodes[i], &pending);

					if (names)
						free_names(names);
				}
				pthread_mutex_lock(&applier.lock);
				applier.stats.buffer_bytes = pending;
				applier.stats.caught_up = pending == 0;
				pthread_mutex_unlock(&applier.lock);
				/* drained: what waits for another node's stream is for the next run */
				if (applier.stop == 2)
					break;
			}
			usleep(IDLE_WAIT_US);
		}
		else
		{
			/*
			 * Heartbeats alone fill no batch: a backlog of them (MongoDB was
			 * down while the cluster was idle) still stores its position
			 * each second, so that the notes of what was fed stay few and
			 * the segments go
			 */
			if (applier.nops == 0 && !applier.has_held &&
				now_seconds() - applier.stored_at >= PROGRESS_EVERY && flush_batch(1) != 0)
			{
				rc = -1;
				break;
			}
			remove_merged();
			if (said)
				set_state("%s", "");
			waited_for = -1;
			said = 0;
		}
	}
	if (applier.stop == 1 && !apply_failed(NULL, 0) && applier.flushed[0] &&
		strcmp(applier.flushed, applier.applied) > 0)
		(void) store_progress(applier.flushed, NULL, applier.flushed_wall_ms, NULL);
	free(chunk);
	return rc;
}
