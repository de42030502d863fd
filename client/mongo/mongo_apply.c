/*
 * mongo_apply.c
 *		The first copy and the change segments applied into MongoDB
 *		(mongo_apply.h), through the applier's target (target.h): on
 *		MongoDB, target_mongoc.c; in the unit tests, an in-memory one.
 *
 * Batches: the events of up to batch_events (or BATCH_BYTES of events) are
 * gathered, then applied as one ordered call of writes per collection, each
 * collection's writes in stream order, then the position of the batch's
 * last event is stored: at the end of each segment (which is removed only
 * once the stored position covers it), else at most once a second, since
 * each store is a write of its own and the writes are idempotent (a stop
 * applies again at most a second's batches).  Collections are independent
 * (MongoDB has no transactions across them here), so only each one's order
 * matters.
 *
 * A key change whose insert lacks TOASTed fields (unchangedFields) is
 * applied on its own: its new document, with those fields from the old
 * one, is first stored in the progress collection (the "stash", keyed by
 * the insert's token), then the old document deleted and the new one
 * written, then the position stored and the stash removed.  A stop anywhere
 * in between finds the stash on the next run: the old document may be gone
 * by then, the fields are not.  The position and the removal are two
 * commands: a stop between them leaves the stash of a key change already
 * applied, which the next run removes at its start (a stash's _id sorts by
 * its token, so those up to the stored position are one range).
 */
#define _GNU_SOURCE				/* pthread_timedjoin_np */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mongo_apply.h"

/*
 * mongodb://user:password@hosts/...: the password runs from the colon after
 * the user to the last '@' before the hosts end (a '@' in a password must
 * be percent-encoded, but hiding it must not depend on that).
 */
int
apply_uri_password(const char *uri, size_t *start, size_t *len)
{
	const char *auth = strstr(uri, "://");
	const char *end;
	const char *colon;
	const char *at = NULL;

	if (auth == NULL)
		return 0;
	auth += 3;
	end = auth + strcspn(auth, "/?");
	for (const char *p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	colon = at ? memchr(auth, ':', (size_t) (at - auth)) : NULL;
	if (colon == NULL)
		return 0;
	*start = (size_t) (colon + 1 - uri);
	*len = (size_t) (at - colon - 1);
	return 1;
}

void
apply_mask_uri(const char *uri, char *out, size_t outsize)
{
	size_t		start;
	size_t		len;

	if (apply_uri_password(uri, &start, &len))
		snprintf(out, outsize, "%.*s****%s", (int) start, uri, uri + start + len);
	else
		snprintf(out, outsize, "%s", uri);
}

/*
 * MongoDB's rules for names: a database name of at most 63 bytes without
 * / \\ . space " $ (and * < > : | ? for Windows servers); a collection name,
 * not empty, without $ or a NUL, not system.*; db.coll at most 255 bytes.
 */
const char *
apply_name_problem(const char *db, const char *coll)
{
	if (db[0] == '\0')
		return "the database name is empty";
	if (strlen(db) > 63)
		return "the database name is longer than 63 bytes";
	if (strpbrk(db, "/\\. \"$*<>:|?") != NULL)
		return "the database name holds one of / \\ . space \" $ * < > : | ?";
	if (coll[0] == '\0')
		return "the collection name is empty";
	if (strchr(coll, '$') != NULL)
		return "the collection name holds a $";
	if (strncmp(coll, "system.", 7) == 0)
		return "names that start with system. are the server's own";
	if (strlen(db) + 1 + strlen(coll) > 255)
		return "the namespace db.collection is longer than 255 bytes";
	return NULL;
}

#ifndef HAVE_LIBMONGOC

void
apply_process_init(char **argv)
{
	(void) argv;
}

int
apply_available(void)
{
	return 0;
}

int
apply_open(const ApplyOptions *o, char *err, size_t errsize)
{
	(void) o;
	snprintf(err, errsize, "this pg_bsonstream was built without the MongoDB C driver "
			 "(libmongoc): --to is not available\nhint: Install libmongoc-dev "
			 "(libmongoc-1.0 for pkg-config) and build it again.");
	return -2;
}

int
apply_check_name(const char *db, const char *coll, char *err, size_t errsize)
{
	(void) db;
	(void) coll;
	(void) err;
	(void) errsize;
	return 0;
}

int
apply_start(char *err, size_t errsize)
{
	(void) err;
	(void) errsize;
	return -1;
}

int
apply_failed(char *err, size_t errsize)
{
	(void) err;
	(void) errsize;
	return 0;
}

void
apply_stats(ApplyStats *s)
{
	memset(s, 0, sizeof(*s));
}

uint64_t
apply_held_bytes(uint64_t written_bytes)
{
	(void) written_bytes;
	return 0;
}

int
apply_buffer_full(uint64_t written_bytes, uint64_t more, char *err, size_t errsize)
{
	(void) written_bytes;
	(void) more;
	(void) err;
	(void) errsize;
	return 0;
}

int
apply_stop(int drain, char *err, size_t errsize)
{
	(void) drain;
	(void) err;
	(void) errsize;
	return 0;
}

void
apply_close(void)
{
}

#else

#include "applier.h"
#include "segment_name.h"

Applier applier = {.dead_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

int
apply_available(void)
{
	return 1;
}

/*
 * libmongoc initialises itself when it is loaded (a constructor, before
 * main) and keeps its counters in shared memory, /dev/shm/mongoc-<pid>: a
 * file that a kill -9 leaves behind, and that a later process given the
 * same pid finds in its way ("Falling back to malloc for counters" on
 * standard error).  The counters are of no use here: the program removes
 * the file of its pid (its own, or a dead process's) and starts again,
 * once, with MONGOC_DISABLE_SHM, which keeps them in its own memory.
 */
void
apply_process_init(char **argv)
{
	char		name[64];
	char		self[4096];
	ssize_t		n;

	if (getenv("MONGOC_DISABLE_SHM") != NULL || setenv("MONGOC_DISABLE_SHM", "1", 1) != 0)
		return;
	snprintf(name, sizeof(name), "/mongoc-%u", (unsigned) getpid());
	(void) shm_unlink(name);

	/*
	 * The program's own path, not /proc/self/exe: the kernel names the
	 * process after the file it executes, and pgrep or pidof look for
	 * pg_bsonstream, not exe.
	 */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || n >= (ssize_t) sizeof(self) - 1)
		return;
	self[n] = '\0';
	execv(self, argv);
	/* not started again: this run keeps the counters, in memory unlinked */
}

/* The time of day, in milliseconds since 1970 (now_seconds is monotonic) */
int64_t
wall_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
set_state(const char *fmt,...)
{
	va_list		ap;

	pthread_mutex_lock(&applier.lock);
	va_start(ap, fmt);
	vsnprintf(applier.stats.state, sizeof(applier.stats.state), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&applier.lock);
}

const char *
target_db(const char *event_db)
{
	return applier.uri_db ? applier.uri_db : event_db;
}

int
apply_check_name(const char *db, const char *coll, char *err, size_t errsize)
{
	const char *why = apply_name_problem(target_db(db), coll);

	if (why == NULL)
		return 0;
	snprintf(err, errsize, "MongoDB cannot name the collection of %s.%s: %s\nhint: Give the "
			 "table another collection name (the document model's names), leave it out of the "
			 "selection (--exclude-tables), or give another database in the URI.",
			 target_db(db), coll, why);
	return -1;
}

void
fail(const char *fmt,...)
{
	va_list		ap;

	pthread_mutex_lock(&applier.lock);
	if (!applier.failed)
	{
		va_start(ap, fmt);
		vsnprintf(applier.errmsg, sizeof(applier.errmsg), fmt, ap);
		va_end(ap);
		applier.failed = 1;
	}
	pthread_mutex_unlock(&applier.lock);
}

/* The _id of a selector, as relaxed Extended JSON, for messages */
char *
id_json(const bson_t *selector)
{
	bson_iter_t it;

	if (!bson_iter_init_find(&it, selector, "_id"))
		return bson_strdup("(none)");
	{
		bson_t		one = BSON_INITIALIZER;
		char	   *s;
		char	   *out;
		size_t		n;

		bson_append_iter(&one, "_id", 3, &it);
		s = bson_as_relaxed_extended_json(&one, &n);
		bson_destroy(&one);
		/* { "_id" : X } -> X */
		out = bson_strdup(s && n > 12 ? s + 10 : (s ? s : "?"));
		if (strlen(out) >= 2)
			out[strlen(out) - 2] = '\0';
		bson_free(s);
		return out;
	}
}

/* A write the server refused, or one that cannot be applied: by the refusal policy */
static int
refused(const Op *op, int code, const char *message)
{
	return refuse("event", target_db(op->ev.db), op->ev.coll, op->ev.selector, op->ev.token,
				  op->event, op->event_len, NULL, code, message);
}

/* The write an event makes */
static TargetWrite
op_write(const Op *op)
{
	TargetWrite w = {TW_REPLACE, op->ev.selector, op->ev.doc};

	switch (op->ev.kind)
	{
		case APPLY_UPDATE:
			w.kind = TW_UPDATE;
			break;
		case APPLY_DELETE:
			w.kind = TW_DELETE;
			break;
		case APPLY_DELETE_ALL:
			w.kind = TW_DELETE_MANY;
			break;
		default:
			break;
	}
	return w;
}

int
is_write(ApplyKind k)
{
	return k == APPLY_REPLACE || k == APPLY_UPDATE || k == APPLY_DELETE ||
		k == APPLY_DELETE_ALL || k == APPLY_KEY_CHANGE_INSERT;
}



/*
 * The writes idx[from..upto) failed together for a cause that is one of
 * theirs, which the target cannot name (a value the server cannot take, an
 * index FerretDB reports wrong): the only write among them is refused
 * (code, message); several are written again one at a time, which finds
 * the one.  Those written already may have been applied: written again as
 * a replay, whose collisions on a unique index are its own (move_aside).
 * Returns the next 'from', or -1.
 */
static int
isolate_failure(int *idx, int from, int upto, int nwrites, int code, const char *message)
{
	if (nwrites == 1)
	{
		int			at = from;

		while (!is_write(applier.ops[idx[at]].ev.kind))
			at++;
		return refused(&applier.ops[idx[at]], code, message) != 0 ? -1 : at + 1;
	}
	mark_replay(idx, from, upto);
	for (int i = from; i < upto; i++)
	{
		int			one[1] = {idx[i]};

		if (apply_collection(one, 1) != 0)
			return -1;
	}
	return upto;
}

/*
 * The writes ops[idx[0..n-1]] (one collection's, in order) as ordered
 * calls of the target: a refused one goes by the refusal policy and the
 * rest follows; a RETRY is tried again, from the start of the writes not
 * known to be applied (they are idempotent: a replay).
 */
int
apply_collection(int *idx, int n)
{
	int			from = 0;
	double		backoff = 0;
	int			lost_here = 0;
	TargetWrite *w = malloc(sizeof(TargetWrite) * n);
	int		   *at = malloc(sizeof(int) * n);
	int			rc = 0;

	if (w == NULL || at == NULL)
	{
		free(w);
		free(at);
		fail("out of memory");
		return -1;
	}
	while (from < n && rc == 0)
	{
		const Op   *first = &applier.ops[idx[from]];
		const char *db = target_db(first->ev.db);
		TargetResult r;
		int			upto = from;
		int			nwrites = 0;
		int			deletes_many;

		/* a signal: the rest of the batch comes again on the next run */
		if (applier.stop == 1)
		{
			rc = -1;
			break;
		}

		/*
		 * Up to the next write that cannot be made, or the server's limit;
		 * a delete of many documents (a truncate) in a call of its own, so
		 * that one that runs long holds up no other write.
		 */
		deletes_many = applier.ops[idx[upto]].ev.kind == APPLY_DELETE_ALL;
		while (upto < n && applier.ops[idx[upto]].ev.kind != APPLY_REFUSED &&
			   (applier.max_writes == 0 || nwrites < applier.max_writes) &&
			   (applier.ops[idx[upto]].ev.kind == APPLY_DELETE_ALL) == deletes_many &&
			   !(deletes_many && nwrites == 1))
		{
			if (is_write(applier.ops[idx[upto]].ev.kind))
			{
				w[nwrites] = op_write(&applier.ops[idx[upto]]);
				at[nwrites++] = upto;
			}
			upto++;
		}
		if (nwrites == 0)
		{
			if (upto < n)
			{
				const Op   *o = &applier.ops[idx[upto]];

				if (refused(o, 0, o->ev.problem) != 0)
					rc = -1;
				upto++;
			}
			from = upto;
			continue;
		}
		target_write_once(db, first->ev.coll, w, nwrites, 1, &r);
		switch (r.status)
		{
			case TARGET_DONE:
				retry_over(&backoff);
				from = upto;
				lost_here = 0;
				break;
			case TARGET_REFUSED:
				retry_over(&backoff);
				if (r.refused[0].index < 0)
				{
					/* one of them, not known which */
					if ((from = isolate_failure(idx, from, upto, nwrites, r.refused[0].code,
												target_refusal_message(&r, 0))) < 0)
						rc = -1;
					break;
				}
				{
					/* the index-th write refused, those before it applied */
					int			i = at[r.refused[0].index];
					Op		   *op = &applier.ops[idx[i]];

					if (r.refused[0].code == 11000 && op->replay && op->moved < 3)
					{
						int			m = move_aside(op);

						if (m < 0)
						{
							rc = -1;
							break;
						}
						if (m > 0)
						{
							/* the write again, with what followed it */
							op->moved++;
							from = i;
							break;
						}
					}
					if (refused(op, r.refused[0].code, target_refusal_message(&r, 0)) != 0)
						rc = -1;
					from = i + 1;
				}
				break;
			case TARGET_RETRY:
				/* some of them may have been applied before the failure */
				mark_replay(idx, from, upto);

				/*
				 * Lost twice at the same writes while FerretDB answers: one
				 * of them is the cause (it closes the connection at a value
				 * it cannot read).  Not for a delete of many documents,
				 * which holds no value and may simply run longer than
				 * socketTimeoutMS: it is sent again, on its own.
				 */
				if (r.lost && applier.ferretdb && !deletes_many && server_answers() && ++lost_here < 2)
					break;		/* once more at once: a connection lost by chance */
				if (lost_here >= 2)
				{
					lost_here = 0;
					if ((from = isolate_failure(idx, from, upto, nwrites, 0, LOST_AT_WRITE)) < 0)
						rc = -1;
					break;
				}
				if (retry_wait(&backoff, &r) != 0)
					rc = -1;
				break;
			case TARGET_FATAL:
				fail("MongoDB: %s (writing to %s.%s)", r.message, db, first->ev.coll);
				rc = -1;
				break;
		}
	}
	free(w);
	free(at);
	return rc;
}

/*
 * The stashes of changes applied already (up to the stored position):
 * removed.  A deleted document's stash sorts after every event of its
 * transaction (embed_apply.c), so it stays until the position leaves it.
 */
int
remove_stale_stashes(void)
{
	bson_t		sel = BSON_INITIALIZER;
	bson_t		range;
	char		lo[200];
	char		hi[200];
	TargetWrite w;
	int			rc;

	snprintf(lo, sizeof(lo), "%s@", applier.o.slot);
	snprintf(hi, sizeof(hi), "%s@%s", applier.o.slot, applier.applied);
	BSON_APPEND_DOCUMENT_BEGIN(&sel, "_id", &range);
	BSON_APPEND_UTF8(&range, "$gt", lo);
	BSON_APPEND_UTF8(&range, "$lte", hi);
	bson_append_document_end(&sel, &range);
	w.kind = TW_DELETE_MANY;
	w.selector = &sel;
	w.doc = NULL;
	rc = target_write_must("remove the stashes of key changes applied", applier.progress_db,
						   applier.o.progress_coll, &w, 1);
	bson_destroy(&sel);
	return rc;
}

typedef struct ProgressSet
{
	const char *token;
	const char *replay_until;
	const char *initial;
	int64_t		wall_ms;
	const char *stash_id;		/* removed in the same call, if set */
} ProgressSet;

/* The progress document's fields written, and a stash removed, in one ordered call */
static int
write_progress(const ProgressSet *p)
{
	bson_t		sel = BSON_INITIALIZER;
	bson_t		upd = BSON_INITIALIZER;
	bson_t		set;
	bson_t		s = BSON_INITIALIZER;
	TargetWrite w[2];
	int			n = 1;
	int			rc;

	BSON_APPEND_UTF8(&sel, "_id", applier.o.slot);
	/* an earlier slot's document: replaced whole, none of its fields kept */
	if (applier.fresh)
	{
		BSON_APPEND_UTF8(&upd, "_id", applier.o.slot);
		bson_init(&set);
	}
	else
		BSON_APPEND_DOCUMENT_BEGIN(&upd, "$set", &set);
	BSON_APPEND_UTF8(&set, "systemIdentifier", applier.o.system_id);
	if (p->token)
		BSON_APPEND_UTF8(&set, "token", p->token);
	if (p->replay_until)
		BSON_APPEND_UTF8(&set, "replayUntil", p->replay_until);
	if (p->initial)
		BSON_APPEND_UTF8(&set, "initial", p->initial);
	if (p->wall_ms)
		BSON_APPEND_DATE_TIME(&set, "wallTime", p->wall_ms);
	/* what the collections hold, with the position it is true at */
	if (applier.tables_dirty || applier.fresh)
		tables_append(&set);
	/* a Citus cluster's nodes: each one's position, as of the merged one */
	if (merge_active())
		merge_append_positions(&set, p->token);
	BSON_APPEND_DATE_TIME(&set, "appliedAt", wall_now_ms());
	if (applier.fresh)
	{
		bson_concat(&upd, &set);
		bson_destroy(&set);
		w[0].kind = TW_REPLACE;
	}
	else
	{
		bson_append_document_end(&upd, &set);
		w[0].kind = TW_UPDATE_UPSERT;
	}
	w[0].selector = &sel;
	w[0].doc = &upd;
	if (p->stash_id)
	{
		BSON_APPEND_UTF8(&s, "_id", p->stash_id);
		w[1].kind = TW_DELETE;
		w[1].selector = &s;
		w[1].doc = NULL;
		n = 2;
	}
	rc = target_write_must("store the position", applier.progress_db, applier.o.progress_coll, w, n);
	bson_destroy(&sel);
	bson_destroy(&upd);
	bson_destroy(&s);
	return rc;
}

int
store_progress(const char *token, const char *initial, int64_t wall_ms, const char *stash_id)
{
	ProgressSet p = {token, NULL, initial, wall_ms, stash_id};

	int			dirty = applier.tables_dirty;

	if (write_progress(&p) != 0)
		return -1;
	applier.fresh = 0;
	if (dirty)
		applier.tables_dirty = 0;
	applier.stored_at = now_seconds();
	if (token)
		snprintf(applier.applied, sizeof(applier.applied), "%s", token);
	if (initial)
		snprintf(applier.initial, sizeof(applier.initial), "%s", initial);
	/* past the transaction whose deleted documents were stashed: removed */
	if (token && applier.doc_stashed[0] &&
		strncmp(token, applier.doc_stashed, RESUME_TOKEN_LSN_DIGITS) > 0)
	{
		if (remove_stale_stashes() != 0)
			return -1;
		applier.doc_stashed[0] = '\0';
	}
	return 0;
}

/*
 * Before the events up to 'last' are written: no event after the stored
 * replayUntil was ever written, so a later run knows which of the events
 * it writes again may have been applied (a collision of those on a unique
 * index is the replay's own, and is resolved: move_aside).  Stored once a
 * segment.
 */
int
store_intent(const char *last)
{
	ProgressSet p = {NULL, last, NULL, 0, NULL};

	if (applier.intent[0] && strncmp(last, applier.intent, RESUME_TOKEN_LEN) <= 0)
		return 0;
	if (write_progress(&p) != 0)
		return -1;
	applier.fresh = 0;
	snprintf(applier.intent, sizeof(applier.intent), "%.*s", RESUME_TOKEN_LEN, last);
	return 0;
}

static void
free_op(Op *op)
{
	event_apply_free(&op->ev);
	free(op->event);
}

/*
 * An update without fullDocument carries only the changed columns: where
 * its document is not in the target it matches nothing, and the target
 * silently lacks the row.  So before the writes ops[idx[0..n-1]] (one
 * collection's) are sent, the documents of such updates that no earlier
 * write of the batch makes or removes are looked up (one query); an update
 * whose document is missing is refused (stop or dead-letter), unless it is
 * written again in a replay and a later change of the replay (a delete
 * already applied) explains it.
 */
typedef struct UpdateTargets
{
	int		   *idx;
	int			n;
	char	   *found;
} UpdateTargets;

static int
update_target_found(const bson_t *doc, void *arg)
{
	UpdateTargets *u = arg;
	bson_iter_t got;

	if (!bson_iter_init_find(&got, doc, "_id"))
		return 0;
	for (int i = 0; i < u->n; i++)
	{
		bson_iter_t id;

		if (!u->found[i] && applier.ops[u->idx[i]].ev.kind == APPLY_UPDATE &&
			bson_iter_init_find(&id, applier.ops[u->idx[i]].ev.selector, "_id") && same_id(&id, &got))
			u->found[i] = 1;
	}
	return 0;
}

static int
check_update_targets(int *idx, int n)
{
	bson_t		filter = BSON_INITIALIZER;
	bson_t		in;
	bson_t		list;
	bson_t		proj = BSON_INITIALIZER;
	int			nids = 0;
	int			rc;
	UpdateTargets u = {idx, n, NULL};

	for (int i = 0; i < n; i++)
		if (applier.ops[idx[i]].ev.kind == APPLY_UPDATE)
			nids++;
	if (nids == 0)
		return 0;
	if ((u.found = calloc(n, 1)) == NULL)
	{
		fail("out of memory");
		return -1;
	}
	nids = 0;
	BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id", &in);
	BSON_APPEND_ARRAY_BEGIN(&in, "$in", &list);
	for (int i = 0; i < n; i++)
	{
		Op		   *op = &applier.ops[idx[i]];
		bson_iter_t id;
		int			earlier = 0;

		if (op->ev.kind != APPLY_UPDATE || !bson_iter_init_find(&id, op->ev.selector, "_id"))
			continue;
		/* a write of the same document before it in the batch decides, not the target */
		for (int j = 0; j < i && !earlier; j++)
		{
			bson_iter_t other;

			if (applier.ops[idx[j]].ev.kind == APPLY_DELETE_ALL ||
				(is_write(applier.ops[idx[j]].ev.kind) && applier.ops[idx[j]].ev.kind != APPLY_UPDATE &&
				 bson_iter_init_find(&other, applier.ops[idx[j]].ev.selector, "_id") && same_id(&id, &other)))
				earlier = 1;
		}
		if (earlier)
		{
			u.found[i] = 1;
			continue;
		}
		{
			char		key[16];
			const char *k;

			bson_uint32_to_string((uint32_t) nids, &k, key, sizeof(key));
			bson_append_iter(&list, k, -1, &id);
		}
		nids++;
	}
	bson_append_array_end(&in, &list);
	bson_append_document_end(&filter, &in);
	BSON_APPEND_INT32(&proj, "_id", 1);
	/* those found before a failure are there: found again, or not, the same */
	rc = nids == 0 ? 0 :
		target_find("look up the documents of the updates", target_db(applier.ops[idx[0]].ev.db),
					applier.ops[idx[0]].ev.coll, &filter, 0, &proj, update_target_found, &u);
	bson_destroy(&filter);
	bson_destroy(&proj);
	for (int i = 0; i < n && rc == 0; i++)
	{
		Op		   *op = &applier.ops[idx[i]];
		bson_iter_t id;

		if (op->ev.kind == APPLY_UPDATE && !u.found[i] && op->replay &&
			bson_iter_init_find(&id, op->ev.selector, "_id") &&
			later_change(op->ev.coll, &id, op->ev.token) == 1)
			continue;
		if (op->ev.kind == APPLY_UPDATE && !u.found[i])
		{
			snprintf(op->ev.problem, sizeof(op->ev.problem), "the document to update is not in the "
					 "target (the event carries only the changed columns, so it cannot be made "
					 "from them)");
			op->ev.kind = APPLY_REFUSED;
		}
	}
	free(u.found);
	return rc;
}

/* Apply the batch: each collection's writes, then the position of its last event */
int
flush_batch(int store)
{
	int		   *idx;
	char	   *done;
	int			rc = 0;
	const Op   *last;
	const char *pass_to = NULL;

	applier.flush_due = 0;

	/*
	 * Events passed over (a table's copy again holds them) count as applied:
	 * the position goes past them, unless a delete held back is before them.
	 */
	if (applier.passed[0] && !applier.has_held &&
		(applier.nops == 0 || strcmp(applier.passed, applier.ops[applier.nops - 1].ev.token) > 0))
		pass_to = applier.passed;
	if (applier.nops == 0)
	{
		if (pass_to && strcmp(pass_to, applier.flushed) > 0)
			snprintf(applier.flushed, sizeof(applier.flushed), "%s", pass_to);
		/* the batches were applied as they filled: the position of the last, at a segment's end */
		if (store && applier.nmoved == 0 && applier.flushed[0] && strcmp(applier.flushed, applier.applied) > 0)
			return store_progress(applier.flushed, NULL, applier.flushed_wall_ms, NULL);
		return 0;
	}
	idx = malloc(sizeof(int) * applier.nops);
	done = calloc(applier.nops, 1);
	if (idx == NULL || done == NULL)
	{
		fail("out of memory");
		free(idx);
		free(done);
		return -1;
	}
	for (int i = 0; i < applier.nops && rc == 0; i++)
	{
		int			n = 0;

		if (done[i])
			continue;
		for (int j = i; j < applier.nops; j++)
			if (!done[j] && strcmp(applier.ops[j].ev.coll, applier.ops[i].ev.coll) == 0 &&
				strcmp(applier.ops[j].ev.db, applier.ops[i].ev.db) == 0)
			{
				idx[n++] = j;
				done[j] = 1;
			}
		/* documents that hold embedded rows: read, changed and written whole */
		if (embed_collection(idx, n))
			rc = embed_apply(idx, n);
		else
		{
			rc = check_update_targets(idx, n);
			if (rc == 0)
				rc = apply_collection(idx, n);
		}
	}
	free(idx);
	free(done);
	last = &applier.ops[applier.nops - 1];
	/* the replay over: before its position is stored, nothing may be left moved aside */
	if (rc == 0 && applier.nmoved && strcmp(last->ev.token, applier.replay_end) >= 0)
		rc = check_moved();
	/*
	 * No position stored while values are moved aside: a stop then replays
	 * from before them; none while a delete is held back (the batch may
	 * hold later writes of other collections), nor where the caller stores
	 * its own (store < 0)
	 */
	if (rc == 0 && applier.nmoved == 0 && !applier.has_held && store >= 0 &&
		(store || now_seconds() - applier.stored_at >= PROGRESS_EVERY))
		rc = store_progress(pass_to ? pass_to : last->ev.token, NULL, last->ev.wall_ms, NULL);
	if (rc == 0)
	{
		snprintf(applier.flushed, sizeof(applier.flushed), "%s", pass_to ? pass_to : last->ev.token);
		applier.flushed_wall_ms = last->ev.wall_ms;
		pthread_mutex_lock(&applier.lock);
		applier.stats.events += applier.nops;
		snprintf(applier.stats.token, sizeof(applier.stats.token), "%s", last->ev.token);
		/* never back: a merged stream's heartbeats may have moved it on */
		if (last->ev.wall_ms > applier.stats.wall_ms)
			applier.stats.wall_ms = last->ev.wall_ms;
		pthread_mutex_unlock(&applier.lock);
	}
	for (int i = 0; i < applier.nops; i++)
		free_op(&applier.ops[i]);
	applier.nops = 0;
	applier.batch_bytes = 0;
	return rc;
}

/*
 * The second write of a pair that one batch must hold both of: the second
 * write of one event (its position stored with the batch would cover the
 * first only), a key change's insert whose row the WAL does not hold
 * whole, which takes the fields it lacks from what the write before it
 * removed (embed_apply.c)
 */
static int
second_of_pair(const Op *op)
{
	bson_iter_t it;

	/* the two writes of one event (an embedded row's, into its own collection too) */
	if (applier.nops > 0 && strcmp(applier.ops[applier.nops - 1].ev.token, op->ev.token) == 0)
		return 1;
	return (op->ev.fields != NULL && op->ev.kind == APPLY_KEY_CHANGE_INSERT) ||
		(op->ev.kind == APPLY_EMBEDDED && op->ev.embed_in != NULL &&
		 bson_iter_init_find(&it, op->ev.embed_in, "partial") && bson_iter_as_bool(&it));
}

static int
add_op(Op *op)
{
	/* a full batch is applied before the next write, unless it is the second of a pair */
	if (applier.flush_due && !second_of_pair(op))
	{
		applier.flush_due = 0;
		if (flush_batch(0) != 0)
		{
			free_op(op);
			return -1;
		}
	}
	if (applier.nops == applier.maxops)
	{
		int			n = applier.maxops ? applier.maxops * 2 : 256;
		Op		   *ops = realloc(applier.ops, sizeof(Op) * n);

		if (ops == NULL)
		{
			fail("out of memory");
			return -1;
		}
		applier.ops = ops;
		applier.maxops = n;
	}
	applier.ops[applier.nops++] = *op;
	applier.batch_bytes += op->event_len;
	if (applier.nops >= applier.o.batch_events || applier.batch_bytes >= BATCH_BYTES)
		applier.flush_due = 1;
	return 0;
}

/*
 * A key change's new document stored before its old one is deleted: 0, 1
 * if the server refuses it (then it refuses the document itself: the key
 * change goes by the refusal policy, problem set), -1 on failure
 */
static int
store_stash(const char *id, const bson_t *newdoc, int *code, char *problem, size_t problemsize)
{
	bson_t		sel = BSON_INITIALIZER;
	bson_t		doc = BSON_INITIALIZER;
	TargetWrite w = {TW_REPLACE, &sel, &doc};
	TargetResult r;
	int			rc;

	BSON_APPEND_UTF8(&sel, "_id", id);
	BSON_APPEND_UTF8(&doc, "_id", id);
	BSON_APPEND_DOCUMENT(&doc, "keyChange", newdoc);
	rc = target_write(applier.progress_db, applier.o.progress_coll, &w, 1, 1, &r);
	bson_destroy(&sel);
	bson_destroy(&doc);
	if (rc != 0)
		return -1;
	if (r.status == TARGET_REFUSED)
	{
		*code = r.refused[0].code;
		snprintf(problem, problemsize, "%s", target_refusal_message(&r, 0));
		return 1;
	}
	if (r.status != TARGET_DONE)
	{
		fail("MongoDB: could not store a key change in %s.%s: %s", applier.progress_db,
			 applier.o.progress_coll, r.message);
		return -1;
	}
	return 0;
}

/*
 * A key change: the delete of the old key (del) and the insert of the new
 * row (ins), whose unchangedFields are taken from the old document.
 */
static int
apply_key_change(Op *del, Op *ins)
{
	char		stash_id[200];
	bson_t		filter = BSON_INITIALIZER;
	bson_t	   *stash = NULL;
	bson_t		newdoc;
	bson_iter_t it;
	int			rc;
	int			stash_refused = 0;
	int			code = 0;
	const char *db = target_db(ins->ev.db);

	/*
	 * the key change's own store of the position covers these (the batch
	 * may hold writes of its own events: an embedded row's top document)
	 */
	if (flush_batch(-1) != 0)
		goto failed;
	snprintf(stash_id, sizeof(stash_id), "%s@%s", applier.o.slot, ins->ev.token);
	BSON_APPEND_UTF8(&filter, "_id", stash_id);
	rc = find_one(applier.progress_db, applier.o.progress_coll, &filter, &stash);
	bson_destroy(&filter);
	if (rc != 0)
		goto failed;
	if (stash && bson_iter_init_find(&it, stash, "keyChange") && BSON_ITER_HOLDS_DOCUMENT(&it))
	{
		uint32_t	n;
		const uint8_t *d;
		bson_t		s;

		bson_iter_document(&it, &n, &d);
		bson_init_static(&s, d, n);
		bson_copy_to(&s, &newdoc);
	}
	else
	{
		bson_t	   *old = NULL;
		int			missing;

		if (find_one(db, ins->ev.coll, del->ev.selector, &old) != 0)
			goto failed;
		missing = event_key_change_document(ins->ev.doc, ins->ev.unchanged, old, &newdoc);
		if (old)
			bson_destroy(old);
		if (missing)
		{
			char	   *id = id_json(del->ev.selector);

			/*
			 * The new document would lack what PostgreSQL kept: refused, not
			 * written short.  Never a replay's doing: a run that deleted the
			 * old document had stored the stash first.
			 */
			snprintf(ins->ev.problem, sizeof(ins->ev.problem), "the key change from _id %s found no "
					 "old document in the target to take its %d unchanged (TOASTed) field%s from: "
					 "the new document would lack %s", id, missing, missing == 1 ? "" : "s",
					 missing == 1 ? "it" : "them");
			bson_free(id);
			ins->ev.kind = APPLY_REFUSED;
		}
		/* the server refuses the stash: it refuses the new document itself */
		if (ins->ev.kind != APPLY_REFUSED &&
			(stash_refused = store_stash(stash_id, &newdoc, &code, ins->ev.problem,
										 sizeof(ins->ev.problem))) < 0)
		{
			bson_destroy(&newdoc);
			goto failed;
		}
	}
	if (stash)
		bson_destroy(stash);
	stash = NULL;
	bson_destroy(ins->ev.doc);
	ins->ev.doc = bson_copy(&newdoc);
	{
		/* a refusal of it writes what was refused: the merged document, not the event's part */
		bson_t	   *merged = event_with_document(ins->event, ins->event_len, &newdoc);

		if (merged)
		{
			uint8_t    *bytes = malloc(merged->len);

			if (bytes)
			{
				memcpy(bytes, bson_get_data(merged), merged->len);
				free(ins->event);
				ins->event = bytes;
				ins->event_len = merged->len;
			}
			bson_destroy(merged);
		}
	}
	bson_destroy(&newdoc);

	/*
	 * Its stash refused: the key change by the refusal policy before
	 * anything is written, since the old document may be deleted only once
	 * its fields are kept; dead-lettered, the old key is deleted alone.
	 */
	if (stash_refused)
	{
		if (refused(ins, code, ins->ev.problem) != 0)
			goto failed;
		ins->ev.kind = APPLY_NOTHING;
	}
	{
		int			idx[2] = {0, 1};
		Op		   *saved = applier.ops;
		int			savedn = applier.nops;
		Op			pair[2] = {*del, *ins};

		applier.ops = pair;
		applier.nops = 2;
		rc = apply_collection(idx, 2);
		applier.ops = saved;
		applier.nops = savedn;
	}
	if (rc == 0)
		rc = store_progress(ins->ev.token, NULL, ins->ev.wall_ms, stash_id);
	if (rc == 0)
	{
		pthread_mutex_lock(&applier.lock);
		applier.stats.events += 2;
		snprintf(applier.stats.token, sizeof(applier.stats.token), "%s", ins->ev.token);
		applier.stats.wall_ms = ins->ev.wall_ms;
		pthread_mutex_unlock(&applier.lock);
	}
	free_op(del);
	free_op(ins);
	return rc;

failed:
	if (stash)
		bson_destroy(stash);
	free_op(del);
	free_op(ins);
	return -1;
}

int
release_held(void)
{
	if (!applier.has_held)
		return 0;
	applier.has_held = 0;
	return add_op(&applier.held);
}

static int	take_write(Op *op);

/* One (merged) event of the stream */
static int
take_event(const uint8_t *data, uint32_t len)
{
	Op			op;
	char		err[1200];

	memset(&op, 0, sizeof(op));
	if (event_apply_read(data, len, &op.ev, err, sizeof(err)) != 0)
	{
		event_apply_free(&op.ev);
		fail("%s", err);
		return -1;
	}
	op.event = malloc(len);
	if (op.event == NULL)
	{
		event_apply_free(&op.ev);
		fail("out of memory");
		return -1;
	}
	memcpy(op.event, data, len);
	op.event_len = len;
	op.replay = applier.replay_until[0] && strncmp(op.ev.token, applier.replay_until, RESUME_TOKEN_LEN) <= 0;
	/* a DDL: what came before it applied first, then its rule */
	if (op.ev.kind == APPLY_SCHEMA)
	{
		int			rc = release_held();

		if (rc == 0)
			rc = flush_batch(1);
		if (rc == 0)
			rc = schema_apply(&op.ev);
		/* not while values are moved aside: a stop then replays from before them */
		if (rc == 0 && applier.nmoved == 0)
			rc = store_progress(op.ev.token, NULL, op.ev.wall_ms, NULL);
		if (rc == 0)
		{
			snprintf(applier.flushed, sizeof(applier.flushed), "%s", op.ev.token);
			applier.flushed_wall_ms = op.ev.wall_ms;
		}
		free_op(&op);
		return rc;
	}
	/*
	 * A row embedded in its parent's document: a write into the top
	 * document's collection, and into its own where it keeps one
	 */
	if (op.ev.embed_in != NULL || op.ev.embed_from != NULL)
	{
		Op			e;

		memset(&e, 0, sizeof(e));
		if (event_apply_embedded(&op.ev, &e.ev) != 0 || (e.event = malloc(len)) == NULL)
		{
			event_apply_free(&e.ev);
			free_op(&op);
			fail("an embedded row's event without the collection of its top document, or out of memory");
			return -1;
		}
		memcpy(e.event, data, len);
		e.event_len = len;
		e.replay = op.replay;
		/*
		 * The top document's write first: the own collection's key change
		 * applies the batch, which must hold both writes of a move
		 */
		if (take_write(&e) != 0)
		{
			free_op(&op);
			return -1;
		}
		if (op.ev.embed_own)
			return take_write(&op);
		free_op(&op);
		return 0;
	}
	return take_write(&op);
}

/* A write of the stream, into its batch */
static int
take_write(Op *op_in)
{
	Op			op = *op_in;
	char		err[1200];

	/* a table copied again: its changes that the copy holds */
	if (schema_skips(&op.ev))
	{
		applier.skipped++;
		snprintf(applier.passed, sizeof(applier.passed), "%s", op.ev.token);
		free_op(&op);
		return 0;
	}
	/* a table made while streaming, under a name MongoDB refuses: by the policy */
	if (op.ev.kind != APPLY_NOTHING && op.ev.kind != APPLY_REFUSED &&
		apply_check_name(op.ev.db, op.ev.coll, err, sizeof(err)) != 0)
	{
		snprintf(op.ev.problem, sizeof(op.ev.problem), "%.*s", (int) strcspn(err, "\n"), err);
		op.ev.kind = APPLY_REFUSED;
	}
	/*
	 * A document with embedded rows is written whole: no key change of its
	 * own (a delete held back is another collection's, its key change's
	 * insert may follow: no position is stored while it is held)
	 */
	if (op.ev.kind == APPLY_EMBEDDED || op.ev.fields != NULL)
		return add_op(&op);
	if (op.ev.kind == APPLY_KEY_CHANGE_INSERT)
	{
		if (applier.has_held && strcmp(applier.held.ev.coll, op.ev.coll) == 0 &&
			strncmp(applier.held.ev.token, op.ev.token, RESUME_TOKEN_LSN_DIGITS) == 0)
		{
			applier.has_held = 0;
			return apply_key_change(&applier.held, &op);
		}
		/* no delete before it: a plain upsert of what it has */
		op.ev.kind = APPLY_REPLACE;
	}
	if (release_held() != 0)
	{
		free_op(&op);
		return -1;
	}
	if (op.ev.kind == APPLY_DELETE)
	{
		applier.held = op;
		applier.has_held = 1;
		return 0;
	}
	return add_op(&op);
}

static void
free_fragments(void)
{
	for (int i = 0; i < applier.nfragments; i++)
	{
		bson_destroy(&applier.fragments[i]);
		free(applier.fragment_data[i]);
	}
	applier.nfragments = 0;
}

/* An event of a segment: whole, or a fragment of a split one */
int
read_event(const uint8_t *data, uint32_t len)
{
	int			fragment;
	int			of;

	if (!event_split_info(data, len, &fragment, &of))
	{
		if (applier.nfragments)
		{
			fail("a split event whose fragments end at %d of %d", applier.nfragments, of);
			return -1;
		}
		return take_event(data, len);
	}
	if (fragment != applier.nfragments + 1)
	{
		fail("fragment %d of a split event where %d was expected", fragment, applier.nfragments + 1);
		return -1;
	}
	if (applier.nfragments == applier.maxfragments)
	{
		int			n = applier.maxfragments ? applier.maxfragments * 2 : 4;

		applier.fragments = realloc(applier.fragments, sizeof(bson_t) * n);
		applier.fragment_data = realloc(applier.fragment_data, sizeof(uint8_t *) * n);
		if (applier.fragments == NULL || applier.fragment_data == NULL)
		{
			fail("out of memory");
			return -1;
		}
		applier.maxfragments = n;
	}
	applier.fragment_data[applier.nfragments] = malloc(len);
	if (applier.fragment_data[applier.nfragments] == NULL)
	{
		fail("out of memory");
		return -1;
	}
	memcpy(applier.fragment_data[applier.nfragments], data, len);
	bson_init_static(&applier.fragments[applier.nfragments], applier.fragment_data[applier.nfragments], len);
	applier.nfragments++;
	if (fragment == of)
	{
		bson_t		merged;
		int			rc;

		event_merge_fragments(applier.fragments, applier.nfragments, &merged);
		free_fragments();
		rc = take_event(bson_get_data(&merged), merged.len);
		bson_destroy(&merged);
		return rc;
	}
	return 0;
}

/* Read one BSON document from f into *buf; 1, 0 at the end, -1 on error */
int
read_doc(FILE *f, uint8_t **buf, size_t *bufsize, uint32_t *len)
{
	uint8_t		head[4];
	size_t		n = fread(head, 1, 4, f);

	if (n == 0 && feof(f))
		return 0;
	if (n != 4)
		return -1;
	*len = (uint32_t) head[0] | (uint32_t) head[1] << 8 | (uint32_t) head[2] << 16 |
		(uint32_t) head[3] << 24;
	if (*len < 5 || *len > 0x7fffffff)
		return -1;
	if (*len > *bufsize)
	{
		uint8_t    *b = realloc(*buf, *len);

		if (b == NULL)
			return -1;
		*buf = b;
		*bufsize = *len;
	}
	memcpy(*buf, head, 4);
	return fread(*buf + 4, 1, *len - 4, f) == *len - 4 ? 1 : -1;
}


static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * The closed segments not yet applied, in stream order (their names sort
 * so); *bytes: their size.  NULL-terminated, malloc'ed.
 */
char **
pending_segments(uint64_t *bytes)
{
	char		path[4096];
	DIR		   *d;
	struct dirent *de;
	char	  **names = NULL;
	int			n = 0;
	int			max = 0;

	*bytes = 0;
	snprintf(path, sizeof(path), "%s/changes", applier.o.dir);
	d = opendir(path);
	if (d == NULL)
		return calloc(1, sizeof(char *));
	while ((de = readdir(d)) != NULL)
	{
		struct stat sb;
		char		p[4400];

		if (!segment_name_valid(de->d_name) ||
			(applier.applied[0] && strncmp(segment_name_last(de->d_name), applier.applied, RESUME_TOKEN_LEN) <= 0))
			continue;
		if (n + 1 >= max)
		{
			max = max ? max * 2 : 64;
			names = realloc(names, sizeof(char *) * max);
		}
		names[n++] = strdup(de->d_name);
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		if (stat(p, &sb) == 0)
			*bytes += (uint64_t) sb.st_size;
	}
	closedir(d);
	if (names == NULL)
		return calloc(1, sizeof(char *));
	names[n] = NULL;
	qsort(names, n, sizeof(char *), cmp_names);
	return names;
}

void
free_names(char **names)
{
	for (int i = 0; names[i]; i++)
		free(names[i]);
	free(names);
}

/* Remove the segments wholly applied (all but those kept) */
static void
remove_applied(void)
{
	char		path[4096];
	DIR		   *d;
	struct dirent *de;

	if (applier.o.keep_applied || applier.applied[0] == '\0')
		return;
	snprintf(path, sizeof(path), "%s/changes", applier.o.dir);
	d = opendir(path);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (segment_name_valid(de->d_name) &&
			strncmp(segment_name_last(de->d_name), applier.applied, RESUME_TOKEN_LEN) <= 0)
		{
			char		p[4400];

			snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
			(void) unlink(p);
		}
	closedir(d);
}

/* Apply one segment's events past the applied position */
static int
apply_segment(const char *name)
{
	char		path[4400];
	FILE	   *f;
	uint8_t    *buf = NULL;
	size_t		bufsize = 0;
	uint32_t	len;
	int			r;
	struct stat sb;

	snprintf(path, sizeof(path), "%s/changes/%s", applier.o.dir, name);
	f = fopen(path, "rb");
	if (f == NULL)
	{
		/* replaced by a copy of itself sent again: the next look finds it */
		if (errno == ENOENT)
			return 0;
		fail("could not open segment \"%s\": %s", path, strerror(errno));
		return -1;
	}
	while ((r = read_doc(f, &buf, &bufsize, &len)) == 1)
	{
		const char *token = resume_token_of_event((const char *) buf, len);

		if (token == NULL)
		{
			fail("segment \"%s\" holds a document that is no change event", path);
			r = -1;
			break;
		}
		if (applier.applied[0] && strncmp(token, applier.applied, RESUME_TOKEN_LEN) <= 0 && applier.nfragments == 0)
			continue;
		if (read_event(buf, len) != 0)
		{
			r = -2;
			break;
		}
		if (applier.stop == 1)
		{
			r = -2;
			break;
		}
	}
	if (applier.stop == 1 && !apply_failed(NULL, 0))
	{
		/*
		 * A signal: the batches applied so far keep their position, the
		 * rest of the segment (a transaction may be long) comes again.
		 */
		if (applier.flushed[0] && strcmp(applier.flushed, applier.applied) > 0)
			(void) store_progress(applier.flushed, NULL, applier.flushed_wall_ms, NULL);
		r = -2;
	}
	if (r == -1)
		fail("segment \"%s\" is damaged (a document cut short)", path);
	if (r == 0 && (release_held() != 0 || flush_batch(1) != 0))
		r = -2;
	if (r == 0 && fstat(fileno(f), &sb) == 0)
		applier.applied_bytes += (uint64_t) sb.st_size;
	fclose(f);
	free(buf);
	if (r == 0 && applier.nfragments)
	{
		fail("segment \"%s\" ends in the middle of a split event", path);
		r = -1;
	}
	return r == 0 ? 0 : -1;
}


static int	target_read(char *err, size_t errsize);

static void *
applier_main(void *arg)
{
	sigset_t	all;

	(void) arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (applier.deferred)
	{
		char		err[2048];

		/* find_one waits for the server; a stop ends the wait */
		if (target_read(err, sizeof(err)) != 0)
		{
			if (applier.stop != 1)
				fail("%s", err);
			return NULL;
		}
	}
	if (applier.applied[0] && remove_stale_stashes() != 0)
		return NULL;
	if (load_initial() != 0)
		return NULL;
	if (merge_active())
	{
		(void) merge_apply();
		return NULL;
	}
	for (;;)
	{
		uint64_t	bytes;
		char	  **names;
		int			any;

		if (applier.stop == 1)
			break;
		names = pending_segments(&bytes);
		pthread_mutex_lock(&applier.lock);
		applier.stats.buffer_bytes = bytes;
		applier.stats.caught_up = names[0] == NULL;
		pthread_mutex_unlock(&applier.lock);
		any = names[0] != NULL;
		for (int i = 0; names[i] && applier.stop != 1; i++)
		{
			/* the name's second half: the segment's last token */
			if (store_intent(segment_name_last(names[i])) != 0 || apply_segment(names[i]) != 0)
			{
				free_names(names);
				return NULL;
			}
			/* each segment removed once applied: the buffer shrinks as it goes */
			remove_applied();
		}
		free_names(names);
		if (!any)
		{
			if (applier.stop == 2)
				break;
			usleep(IDLE_WAIT_US);
		}
	}
	return NULL;
}

/*
 * What the applier needs of the target before it writes: the server's
 * limits and the progress document (-1, err set, if it cannot be used).
 */
static int
target_read(char *err, size_t errsize)
{
	const ApplyOptions *o = &applier.o;
	bson_t		reply;
	TargetResult r;
	bson_t	   *progress = NULL;
	bson_t		filter = BSON_INITIALIZER;
	bson_iter_t it;
	uint64_t	bytes;
	char	  **names;

	BSON_APPEND_UTF8(&filter, "_id", o->slot);
	if (find_one(applier.progress_db, o->progress_coll, &filter, &progress) != 0)
	{
		bson_destroy(&filter);
		snprintf(err, errsize, "%s", applier.errmsg);
		return -1;
	}
	bson_destroy(&filter);
	if (progress && o->creating_slot)
	{
		/* the slot is new: its stream starts now, whatever the old one applied */
		fprintf(stderr, "pg_bsonstream: the progress document of slot \"%s\" in %s.%s is from an "
				"earlier slot of that name: this slot starts afresh (the first copy and the "
				"changes are applied again)\n", o->slot, applier.progress_db, o->progress_coll);
		applier.fresh = 1;
		bson_destroy(progress);
		progress = NULL;
	}
	if (progress && bson_iter_init_find(&it, progress, "systemIdentifier") &&
		BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), o->system_id) != 0)
	{
		snprintf(err, errsize, "the progress document of slot \"%s\" in %s.%s belongs to another "
				 "PostgreSQL cluster (system identifier %s; this one is %s): its position means "
				 "nothing here\nhint: Give another --progress-collection or another database in "
				 "the URI, or drop that document if its cluster is gone.", o->slot, applier.progress_db,
				 o->progress_coll, bson_iter_utf8(&it, NULL), o->system_id);
		bson_destroy(progress);
		return -1;
	}
	if (progress)
	{
		if (bson_iter_init_find(&it, progress, "token") && BSON_ITER_HOLDS_UTF8(&it))
			snprintf(applier.applied, sizeof(applier.applied), "%s", bson_iter_utf8(&it, NULL));
		if (bson_iter_init_find(&it, progress, "initial") && BSON_ITER_HOLDS_UTF8(&it))
			snprintf(applier.initial, sizeof(applier.initial), "%s", bson_iter_utf8(&it, NULL));
		if (bson_iter_init_find(&it, progress, "replayUntil") && BSON_ITER_HOLDS_UTF8(&it))
		{
			snprintf(applier.replay_until, sizeof(applier.replay_until), "%s", bson_iter_utf8(&it, NULL));
			snprintf(applier.intent, sizeof(applier.intent), "%s", applier.replay_until);
			snprintf(applier.replay_end, sizeof(applier.replay_end), "%s", applier.replay_until);
		}
		if (merge_active() && merge_read_positions(progress) != 0)
		{
			snprintf(err, errsize, "%s", applier.errmsg);
			bson_destroy(progress);
			return -1;
		}
		if (tables_read(progress) != 0)
		{
			snprintf(err, errsize, "%s", applier.errmsg);
			bson_destroy(progress);
			return -1;
		}
		bson_destroy(progress);
	}
	{
		bson_t		hello = BSON_INITIALIZER;

		applier.max_bson_size = 16 * 1024 * 1024;
		BSON_APPEND_INT32(&hello, "hello", 1);
		if (target_command("admin", &hello, &reply, &r) == 0 && r.status == TARGET_DONE &&
			bson_iter_init_find(&it, &reply, "maxBsonObjectSize"))
			applier.max_bson_size = (int32_t) bson_iter_as_int64(&it);
		bson_destroy(&reply);
		bson_destroy(&hello);

		/*
		 * FerretDB (1.x) never answers an update or delete command of 100
		 * statements or more; two commands of 99 that run together (one
		 * of a run killed while it was sent, one of the next) take its
		 * pool's 100 connections and it never answers again: the batch
		 * stays as large, its writes sent 49 to a command.
		 */
		bson_init(&hello);
		BSON_APPEND_INT32(&hello, "buildInfo", 1);
		if (target_command("admin", &hello, &reply, &r) == 0 && r.status == TARGET_DONE &&
			bson_iter_init_find(&it, &reply, "ferretdbVersion") && BSON_ITER_HOLDS_UTF8(&it))
		{
			applier.max_writes = 49;
			applier.ferretdb = 1;
			applier.target->index_unreliable = 1;
			fprintf(stderr, "pg_bsonstream: the server is FerretDB %s: at most %d writes a command "
					"(it does not answer larger update commands, nor two large ones at once)\n", bson_iter_utf8(&it, NULL),
					applier.max_writes);
		}
		bson_destroy(&reply);
		bson_destroy(&hello);
	}
	if (!applier.deferred && !merge_active())
	{
		names = pending_segments(&bytes);
		free_names(names);
		applier.start_bytes = bytes;
	}
	return 0;
}

int
apply_open(const ApplyOptions *o, char *err, size_t errsize)
{
	char	   *uri_db;
	Target	   *t = target_mongoc_open(o->uri, o->password_file, &uri_db, err, errsize);
	int			rc;

	if (t == NULL)
		return -2;
	rc = apply_open_target(o, t, uri_db, err, errsize);
	free(uri_db);
	return rc;
}

int
apply_open_target(const ApplyOptions *o, Target *target, const char *uri_db, char *err, size_t errsize)
{
	bson_t		ping = BSON_INITIALIZER;
	TargetResult r;

	applier.o = *o;
	applier.target = target;
	if (merge_init() != 0)
	{
		snprintf(err, errsize, "out of memory");
		return -1;
	}
	if (uri_db)
		applier.uri_db = strdup(uri_db);
	applier.progress_db = applier.uri_db ? applier.uri_db : o->default_db;
	BSON_APPEND_INT32(&ping, "ping", 1);
	target_command_once("admin", &ping, NULL, &r);
	bson_destroy(&ping);
	if (r.status == TARGET_DONE)
		return target_read(err, errsize);
	if (!o->creating_slot && r.status == TARGET_RETRY && !strstr(r.message, "TLS") &&
		!strstr(r.message, "certificate"))
	{
		/*
		 * A restart: the slot exists and holds the primary's WAL until the
		 * stream confirms it, so the stream goes on into DIR/changes and
		 * the applier reads the target once it answers.
		 */
		fprintf(stderr, "pg_bsonstream: MongoDB cannot be reached (%s): the stream goes on "
				"into \"%s/changes\", applied once MongoDB answers\n", r.message, o->dir);
		set_state("MongoDB unreachable (%s): retrying", r.message);
		applier.deferred = 1;
		/* the position applied is not known yet: every segment counts against --max-buffer */
		free_names(pending_segments(&applier.start_bytes));
		return 0;
	}
	snprintf(err, errsize, "could not reach MongoDB at --to: %s\nhint: %s", r.message,
			 r.hint ? r.hint : "Check the host and port in the URI and that the server runs; "
			 "serverSelectionTimeoutMS in the URI sets how long to wait.");
	return -1;
}

int
apply_start(char *err, size_t errsize)
{
	int			rc = pthread_create(&applier.thread, NULL, applier_main, NULL);

	if (rc != 0)
	{
		snprintf(err, errsize, "could not start the MongoDB applier: %s", strerror(rc));
		return -1;
	}
	applier.started = 1;
	return 0;
}

int
apply_failed(char *err, size_t errsize)
{
	int			f;

	pthread_mutex_lock(&applier.lock);
	f = applier.failed;
	if (f && err)
		snprintf(err, errsize, "%s", applier.errmsg);
	pthread_mutex_unlock(&applier.lock);
	return f;
}

void
apply_stats(ApplyStats *s)
{
	long long	since = applier.write_since_ms;

	pthread_mutex_lock(&applier.lock);
	*s = applier.stats;
	pthread_mutex_unlock(&applier.lock);
	s->write_wait = since ? (wall_now_ms() - since) / 1000.0 : 0;
}

uint64_t
apply_held_bytes(uint64_t written_bytes)
{
	uint64_t	applied = applier.applied_bytes;
	uint64_t	held = applier.start_bytes + written_bytes;

	return held > applied ? held - applied : 0;
}

int
apply_buffer_full(uint64_t written_bytes, uint64_t more, char *err, size_t errsize)
{
	uint64_t	held = apply_held_bytes(written_bytes);

	if (applier.o.max_buffer == 0 || held + more <= applier.o.max_buffer)
		return 0;
	if (more > applier.o.max_buffer)
	{
		/* the open segment alone: however fast MongoDB is, it can never be held */
		snprintf(err, errsize, "the segment being received, %llu bytes of whole transactions so "
				 "far, does not fit in --max-buffer (%llu bytes), whatever MongoDB applies\nhint: "
				 "Give a --max-buffer larger than --segment-size plus the largest transaction; "
				 "nothing was lost: the slot keeps it.", (unsigned long long) more,
				 (unsigned long long) applier.o.max_buffer);
		return 1;
	}
	snprintf(err, errsize, "the changes not yet applied into MongoDB would exceed --max-buffer "
			 "(%llu bytes in %s/changes)\nhint: MongoDB is behind or unreachable (see the "
			 "messages above); nothing was lost: the slot keeps the rest. Run again once it "
			 "takes writes, or give a larger --max-buffer.",
			 (unsigned long long) held, applier.o.dir);
	return 1;
}

int
apply_stop(int drain, char *err, size_t errsize)
{
	if (applier.started)
	{
		double		waited = 0;

		applier.stop = drain ? 2 : 1;
		for (;;)
		{
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000)
			{
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			if (pthread_timedjoin_np(applier.thread, NULL, &ts) == 0)
				break;
			/* a signal during a drain (--endpos): stop as for a signal */
			if (applier.stop == 2 && interrupted)
				applier.stop = 1;
			if (applier.stop == 1 && (waited += 0.1) >= STOP_WAIT)
			{
				/*
				 * A write the server has not answered (down, or a command that
				 * runs long): its position is not stored, so the next run
				 * writes it again.  The thread ends with the process.
				 */
				fprintf(stderr, "pg_bsonstream: MongoDB has not answered the write in progress "
						"for %.0f s: stopped without it (the next run applies it again)\n",
						(double) STOP_WAIT);
				applier.started = 0;
				applier.abandoned = 1;
				return apply_failed(err, errsize) ? -1 : 0;
			}
		}
		applier.started = 0;
	}
	if (applier.dead_fd >= 0)
	{
		close(applier.dead_fd);
		applier.dead_fd = -1;
	}
	return apply_failed(err, errsize) ? -1 : 0;
}

void
apply_close(void)
{
	/* a thread left in a write the server does not answer: freed by the process's end */
	if (applier.abandoned)
		return;
	for (int i = 0; i < applier.nops; i++)
		free_op(&applier.ops[i]);
	free(applier.ops);
	if (applier.has_held)
		free_op(&applier.held);
	free_fragments();
	free(applier.fragments);
	free(applier.fragment_data);
	tables_free();
	free(applier.uri_db);
	if (applier.target)
		applier.target->ops->close(applier.target);
	merge_free();
	memset(&applier, 0, sizeof(applier));
	applier.dead_fd = -1;
	pthread_mutex_init(&applier.lock, NULL);
}

#endif							/* HAVE_LIBMONGOC */
