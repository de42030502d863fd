/*
 * mongo_apply.c
 *		The first copy and the change segments applied into MongoDB
 *		(mongo_apply.h), with libmongoc's bulk API.
 *
 * Batches: the events of up to batch_events (or BATCH_BYTES of events) are
 * gathered, then applied as one ordered bulk write per collection, each
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

#else

#include "applier.h"

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

/* A server's error code that a new attempt may cure */
int
transient_code(int code)
{
	static const int codes[] = {6, 7, 64, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (code == codes[i])
			return 1;
	return 0;
}

/*
 * A failure a new attempt may cure: the server unreachable, restarting, a
 * primary stepping down, a write concern not met in time (not one that
 * can never be met).
 */
int
transient(const bson_error_t *e, const bson_t *reply)
{
	/* a w the deployment can never satisfy (79, 100): no wait cures it */
	if ((e->domain == MONGOC_ERROR_WRITE_CONCERN || e->domain == MONGOC_ERROR_SERVER) &&
		(e->code == 79 || e->code == 100))
		return 0;
	if (e->domain == MONGOC_ERROR_STREAM || e->domain == MONGOC_ERROR_SERVER_SELECTION ||
		e->domain == MONGOC_ERROR_WRITE_CONCERN)
		return 1;
	if (reply && (mongoc_error_has_label(reply, "RetryableWriteError") ||
				  mongoc_error_has_label(reply, "NetworkError")))
		return 1;
	return transient_code((int) e->code);
}

/*
 * A server that closes the connection at a write it cannot read (FerretDB
 * does so for a NaN) but answers a ping at once: that write is refused,
 * not the server down.  Asked after a lost connection.
 */
int
server_answers(void)
{
	bson_t		ping = BSON_INITIALIZER;
	bson_error_t e;
	bool		ok;

	BSON_APPEND_INT32(&ping, "ping", 1);
	ok = mongoc_client_command_simple(applier.client, "admin", &ping, NULL, NULL, &e);
	bson_destroy(&ping);
	return ok;
}


/* Wait before the next attempt, saying so once per outage */
int
retry_wait(double *backoff, const bson_error_t *e)
{
	if (*backoff == 0)
	{
		fprintf(stderr, "pg_bsonstream: MongoDB: %s; retrying (the stream goes on into "
				"local segments meanwhile)\n", e->message);
		*backoff = RETRY_MIN;
	}
	set_state("MongoDB unreachable (%s): retrying", e->message);
	for (double w = 0; w < *backoff; w += 0.1)
	{
		/* a signal stops the wait; a drain (--endpos) waits on */
		if (applier.stop == 1)
			return -1;
		usleep(100000);
	}
	*backoff = *backoff * 2 > RETRY_MAX ? RETRY_MAX : *backoff * 2;
	return 0;
}

void
retry_over(double *backoff)
{
	if (*backoff > 0)
		fprintf(stderr, "pg_bsonstream: MongoDB answers again\n");
	*backoff = 0;
	set_state("%s", "");
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

/* A write the server refused, or one that cannot be applied: stop, or dead-letter it */
static int
refused(const Op *op, int code, const char *message)
{
	char	   *id;

	if (applier.o.dead_letter)
		return dead_letter(target_db(op->ev.db), op->ev.coll, op->ev.selector, op->ev.token,
						   op->event, op->event_len, "event", code, message);
	id = id_json(op->ev.selector);
	fail("MongoDB refused the change of _id %s in %s.%s (event %s): %s\n"
		 "hint: Nothing past it was applied, and the next run stops there again. "
		 "Fix the cause, or give --dead-letter=FILE to write such events there and go on.",
		 id, target_db(op->ev.db), op->ev.coll, op->ev.token, message);
	(void) code;
	bson_free(id);
	return -1;
}

/*
 * One write into the bulk.  False when the driver refuses it before
 * anything is sent (a key it does not take: "$v", "", invalid UTF-8), with
 * e set: such a write goes by the refusal policy like one the server
 * refuses, never dropped from the batch without a word.
 */
static bool
add_write_op(mongoc_bulk_operation_t *bulk, const Op *op, bson_error_t *e)
{
	bson_t		opts = BSON_INITIALIZER;
	bool		ok = true;

	switch (op->ev.kind)
	{
		case APPLY_REPLACE:
		case APPLY_KEY_CHANGE_INSERT:
			BSON_APPEND_BOOL(&opts, "upsert", true);
			ok = mongoc_bulk_operation_replace_one_with_opts(bulk, op->ev.selector, op->ev.doc, &opts, e);
			break;
		case APPLY_UPDATE:
			ok = mongoc_bulk_operation_update_one_with_opts(bulk, op->ev.selector, op->ev.doc, NULL, e);
			break;
		case APPLY_DELETE:
			ok = mongoc_bulk_operation_remove_one_with_opts(bulk, op->ev.selector, NULL, e);
			break;
		case APPLY_DELETE_ALL:
			ok = mongoc_bulk_operation_remove_many_with_opts(bulk, op->ev.selector, NULL, e);
			break;
		default:
			break;
	}
	bson_destroy(&opts);
	return ok;
}

/* The first write error of a bulk's reply: its index and what it says */
static int
first_write_error(const bson_t *reply, uint32_t *index, int *code, char *msg, size_t msgsize)
{
	bson_iter_t it;
	bson_iter_t arr;
	bson_iter_t e;

	if (!bson_iter_init_find(&it, reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&it) ||
		!bson_iter_recurse(&it, &arr) || !bson_iter_next(&arr) || !bson_iter_recurse(&arr, &e))
		return 0;
	*index = 0;
	*code = 0;
	snprintf(msg, msgsize, "refused");
	while (bson_iter_next(&e))
	{
		if (strcmp(bson_iter_key(&e), "index") == 0)
			*index = (uint32_t) bson_iter_as_int64(&e);
		else if (strcmp(bson_iter_key(&e), "code") == 0)
			*code = (int) bson_iter_as_int64(&e);
		else if (strcmp(bson_iter_key(&e), "errmsg") == 0 && BSON_ITER_HOLDS_UTF8(&e))
			snprintf(msg, msgsize, "%s", bson_iter_utf8(&e, NULL));
	}
	return 1;
}

int
is_write(ApplyKind k)
{
	return k == APPLY_REPLACE || k == APPLY_UPDATE || k == APPLY_DELETE ||
		k == APPLY_DELETE_ALL || k == APPLY_KEY_CHANGE_INSERT;
}

static int	apply_collection(int *idx, int n);


/*
 * The writes idx[from..upto) failed together for a cause that is one of
 * theirs (a value the server cannot take): the only write among them is
 * refused (code, message); several are written again one at a time (they
 * are idempotent), which finds the one.  Returns the next 'from', or -1.
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
	for (int i = from; i < upto; i++)
	{
		int			one[1] = {idx[i]};

		if (apply_collection(one, 1) != 0)
			return -1;
	}
	return upto;
}

/*
 * The writes ops[idx[0..n-1]] (one collection's, in order) as ordered bulk
 * writes: a refused one stops the run or goes to the dead-letter file and
 * the rest follows; a transient failure is tried again, from the start of
 * the writes not yet known to be applied (they are idempotent).
 */
static int
apply_collection(int *idx, int n)
{
	int			from = 0;
	double		backoff = 0;
	int			lost_here = 0;

	while (from < n)
	{
		const Op   *first = &applier.ops[idx[from]];

		/* a signal: the rest of the batch comes again on the next run */
		if (applier.stop == 1)
			return -1;
		mongoc_collection_t *coll;
		mongoc_bulk_operation_t *bulk;
		bson_t		opts = BSON_INITIALIZER;
		bson_t		reply;
		bson_error_t e;
		int			upto = from;
		int			nwrites = 0;
		int			deletes_many;
		uint32_t	ok;

		/*
		 * Up to the next write that cannot be made, or the server's limit;
		 * a delete of many documents (a truncate) in a command of its own,
		 * so that one that runs long holds up no other write.
		 */
		deletes_many = applier.ops[idx[upto]].ev.kind == APPLY_DELETE_ALL;
		while (upto < n && applier.ops[idx[upto]].ev.kind != APPLY_REFUSED &&
			   (applier.max_writes == 0 || nwrites < applier.max_writes) &&
			   (applier.ops[idx[upto]].ev.kind == APPLY_DELETE_ALL) == deletes_many &&
			   !(deletes_many && nwrites == 1))
			nwrites += is_write(applier.ops[idx[upto++]].ev.kind);
		if (nwrites == 0)
		{
			if (upto < n)
			{
				const Op   *r = &applier.ops[idx[upto]];

				if (refused(r, 0, r->ev.problem) != 0)
					return -1;
				upto++;
			}
			from = upto;
			continue;
		}
		coll = mongoc_client_get_collection(applier.client, target_db(first->ev.db), first->ev.coll);
		BSON_APPEND_BOOL(&opts, "ordered", true);
		bulk = mongoc_collection_create_bulk_operation_with_opts(coll, &opts);
		bson_destroy(&opts);
		nwrites = 0;
		for (int i = from; i < upto; i++)
		{
			Op		   *op = &applier.ops[idx[i]];

			if (!is_write(op->ev.kind))
				continue;
			if (!add_write_op(bulk, op, &e))
			{
				/* the writes before it go now; it is refused on the next turn */
				snprintf(op->ev.problem, sizeof(op->ev.problem),
						 "the MongoDB C driver refuses the write: %s", e.message);
				op->ev.kind = APPLY_REFUSED;
				upto = i;
				break;
			}
			nwrites++;
		}
		if (nwrites == 0)
		{
			mongoc_bulk_operation_destroy(bulk);
			mongoc_collection_destroy(coll);
			from = upto;
			continue;
		}
		write_sent();
		ok = mongoc_bulk_operation_execute(bulk, &reply, &e);
		write_answered();
		mongoc_bulk_operation_destroy(bulk);
		mongoc_collection_destroy(coll);
		if (ok)
		{
			bson_destroy(&reply);
			retry_over(&backoff);
			from = upto;
			lost_here = 0;
			continue;
		}
		{
			uint32_t	windex = 0;
			int			code = 0;
			char		msg[1024];
			int			werr = first_write_error(&reply, &windex, &code, msg, sizeof(msg));

			/*
			 * FerretDB (SQLite) answers a duplicate key of an update with a
			 * command error, not a write error 11000: the same here.
			 */
			if (!werr && strstr(e.message, "UNIQUE constraint failed") != NULL)
			{
				werr = 1;
				windex = 0;
				code = 11000;
				snprintf(msg, sizeof(msg), "duplicate key: %s", e.message);
			}
			if (werr && transient_code(code))
			{
				/* a statement's own transient error (a shutdown, a step-down): the writes again */
				bson_error_t we;

				bson_destroy(&reply);
				bson_set_error(&we, MONGOC_ERROR_SERVER, (uint32_t) code, "%s (code %d)", msg, code);
				if (retry_wait(&backoff, &we) != 0)
					return -1;
				continue;
			}
			if (werr && nwrites > 1 && applier.ferretdb)
			{
				/*
				 * Which write was refused: one at a time (they are
				 * idempotent), since FerretDB 1.24 reports the index wrong
				 * for updates (MongoDB's index is taken as it is: the
				 * writes before it are not sent again).
				 */
				bson_destroy(&reply);
				if ((from = isolate_failure(idx, from, upto, nwrites, code, msg)) < 0)
					return -1;
				continue;
			}
			if (werr)
			{
				/* the windex-th write from 'from' was refused, those before it applied */
				int			at = from;
				int			w = -1;

				bson_destroy(&reply);
				for (; at < upto; at++)
					if (is_write(applier.ops[idx[at]].ev.kind) && ++w == (int) windex)
						break;
				if (at >= upto)
					at = upto - 1;
				if (code == 11000 && applier.ops[idx[at]].replay && applier.ops[idx[at]].moved < 3)
				{
					int			m = move_aside(&applier.ops[idx[at]]);

					if (m < 0)
						return -1;
					if (m > 0)
					{
						/* the write again, with what followed it */
						applier.ops[idx[at]].moved++;
						from = at;
						continue;
					}
				}
				{
					char		full[1100];

					snprintf(full, sizeof(full), "%s (code %d)", msg, code);
					if (refused(&applier.ops[idx[at]], code, full) != 0)
						return -1;
				}
				from = at + 1;
				continue;
			}
			if (transient(&e, &reply))
			{
				bson_destroy(&reply);
				/* some of them may have been applied before the failure */
				mark_replay(idx, from, upto);
				/*
				 * Lost twice at the same writes while the server answers: one
				 * of them is the cause (FerretDB closes the connection at a
				 * value it cannot read).  Not for a delete of many documents,
				 * which holds no value and may simply run longer than
				 * socketTimeoutMS: it is sent again, on its own.
				 */
				if (e.domain == MONGOC_ERROR_STREAM && applier.ferretdb && !deletes_many &&
					server_answers() && ++lost_here < 2)
					continue;	/* once more at once: a connection lost by chance */
				if (lost_here >= 2)
				{
					lost_here = 0;
					if ((from = isolate_failure(idx, from, upto, nwrites, 0, LOST_AT_WRITE)) < 0)
						return -1;
					continue;
				}
				if (retry_wait(&backoff, &e) != 0)
					return -1;
				continue;
			}
			bson_destroy(&reply);
			/* a document too large for the server, found by the driver */
			if (e.domain == MONGOC_ERROR_BSON || e.domain == MONGOC_ERROR_COMMAND)
			{
				if ((from = isolate_failure(idx, from, upto, nwrites, (int) e.code, e.message)) < 0)
					return -1;
				continue;
			}
			fail("MongoDB: %s (writing to %s.%s)", e.message, target_db(first->ev.db), first->ev.coll);
			return -1;
		}
	}
	return 0;
}

/* One command on the progress collection's database, retried while transient */
int
progress_command(const char *what, mongoc_bulk_operation_t *(*build) (mongoc_collection_t *, void *),
				 void *arg)
{
	double		backoff = 0;

	for (;;)
	{
		mongoc_collection_t *coll = mongoc_client_get_collection(applier.client, applier.progress_db,
																 applier.o.progress_coll);
		mongoc_bulk_operation_t *bulk = build(coll, arg);
		bson_t		reply;
		bson_error_t e;
		uint32_t	ok;

		write_sent();
		ok = mongoc_bulk_operation_execute(bulk, &reply, &e);
		write_answered();

		mongoc_bulk_operation_destroy(bulk);
		mongoc_collection_destroy(coll);
		if (ok)
		{
			bson_destroy(&reply);
			retry_over(&backoff);
			return 0;
		}
		if (!transient(&e, &reply))
		{
			bson_destroy(&reply);
			fail("MongoDB: could not %s in %s.%s: %s", what, applier.progress_db, applier.o.progress_coll, e.message);
			return -1;
		}
		bson_destroy(&reply);
		if (retry_wait(&backoff, &e) != 0)
			return -1;
	}
}

/* The stashes of key changes applied already (up to the stored position) */
static mongoc_bulk_operation_t *
build_stale_stashes(mongoc_collection_t *coll, void *arg)
{
	bson_t		opts = BSON_INITIALIZER;
	bson_t		sel = BSON_INITIALIZER;
	bson_t		range;
	char		lo[200];
	char		hi[200];
	mongoc_bulk_operation_t *bulk;
	bson_error_t e;

	(void) arg;
	snprintf(lo, sizeof(lo), "%s@", applier.o.slot);
	snprintf(hi, sizeof(hi), "%s@%s", applier.o.slot, applier.applied);
	BSON_APPEND_BOOL(&opts, "ordered", true);
	bulk = mongoc_collection_create_bulk_operation_with_opts(coll, &opts);
	BSON_APPEND_DOCUMENT_BEGIN(&sel, "_id", &range);
	BSON_APPEND_UTF8(&range, "$gt", lo);
	BSON_APPEND_UTF8(&range, "$lte", hi);
	bson_append_document_end(&sel, &range);
	mongoc_bulk_operation_remove_many_with_opts(bulk, &sel, NULL, &e);
	bson_destroy(&opts);
	bson_destroy(&sel);
	return bulk;
}

typedef struct ProgressSet
{
	const char *token;
	const char *replay_until;
	const char *initial;
	int64_t		wall_ms;
	const char *stash_id;		/* removed in the same bulk, if set */
} ProgressSet;

static mongoc_bulk_operation_t *
build_progress(mongoc_collection_t *coll, void *arg)
{
	ProgressSet *p = arg;
	bson_t		opts = BSON_INITIALIZER;
	bson_t		sel = BSON_INITIALIZER;
	bson_t		upd = BSON_INITIALIZER;
	bson_t		set;
	bson_t		uopts = BSON_INITIALIZER;
	mongoc_bulk_operation_t *bulk;
	bson_error_t e;

	BSON_APPEND_BOOL(&opts, "ordered", true);
	bulk = mongoc_collection_create_bulk_operation_with_opts(coll, &opts);
	BSON_APPEND_UTF8(&sel, "_id", applier.o.slot);
	/* an earlier slot's document: replaced whole, none of its fields kept */
	if (applier.fresh)
		BSON_APPEND_UTF8(&upd, "_id", applier.o.slot);
	else
		BSON_APPEND_DOCUMENT_BEGIN(&upd, "$set", &set);
	if (applier.fresh)
		bson_init(&set);
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
	BSON_APPEND_DATE_TIME(&set, "appliedAt", wall_now_ms());
	BSON_APPEND_BOOL(&uopts, "upsert", true);
	if (applier.fresh)
	{
		bson_concat(&upd, &set);
		bson_destroy(&set);
		mongoc_bulk_operation_replace_one_with_opts(bulk, &sel, &upd, &uopts, &e);
	}
	else
	{
		bson_append_document_end(&upd, &set);
		mongoc_bulk_operation_update_one_with_opts(bulk, &sel, &upd, &uopts, &e);
	}
	if (p->stash_id)
	{
		bson_t		s = BSON_INITIALIZER;

		BSON_APPEND_UTF8(&s, "_id", p->stash_id);
		mongoc_bulk_operation_remove_one_with_opts(bulk, &s, NULL, &e);
		bson_destroy(&s);
	}
	bson_destroy(&opts);
	bson_destroy(&sel);
	bson_destroy(&upd);
	bson_destroy(&uopts);
	return bulk;
}

int
store_progress(const char *token, const char *initial, int64_t wall_ms, const char *stash_id)
{
	ProgressSet p = {token, NULL, initial, wall_ms, stash_id};

	int			dirty = applier.tables_dirty;

	if (progress_command("store the position", build_progress, &p) != 0)
		return -1;
	applier.fresh = 0;
	if (dirty)
		applier.tables_dirty = 0;
	applier.stored_at = now_seconds();
	if (token)
		snprintf(applier.applied, sizeof(applier.applied), "%s", token);
	if (initial)
		snprintf(applier.initial, sizeof(applier.initial), "%s", initial);
	return 0;
}

/*
 * Before the events up to 'last' are written: no event after the stored
 * replayUntil was ever written, so a later run knows which of the events
 * it writes again may have been applied (a collision of those on a unique
 * index is the replay's own, and is resolved: move_aside).  Stored once a
 * segment.
 */
static int
store_intent(const char *last)
{
	ProgressSet p = {NULL, last, NULL, 0, NULL};

	if (applier.intent[0] && strncmp(last, applier.intent, RESUME_TOKEN_LEN) <= 0)
		return 0;
	if (progress_command("store the position", build_progress, &p) != 0)
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
static int
check_update_targets(int *idx, int n)
{
	bson_t		filter = BSON_INITIALIZER;
	bson_t		in;
	bson_t		list;
	int			nids = 0;
	mongoc_collection_t *coll;
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_t		opts = BSON_INITIALIZER;
	bson_t		proj;
	bson_error_t e;
	char	   *found;
	int			rc = 0;
	const bson_t *reply = NULL;
	double		backoff = 0;

	for (int i = 0; i < n; i++)
		if (applier.ops[idx[i]].ev.kind == APPLY_UPDATE)
			nids++;
	if (nids == 0)
		return 0;
	if ((found = calloc(n, 1)) == NULL)
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
			found[i] = 1;
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
	if (nids == 0)
	{
		bson_destroy(&filter);
		free(found);
		return 0;
	}
	BSON_APPEND_DOCUMENT_BEGIN(&opts, "projection", &proj);
	BSON_APPEND_INT32(&proj, "_id", 1);
	bson_append_document_end(&opts, &proj);
	coll = mongoc_client_get_collection(applier.client, target_db(applier.ops[idx[0]].ev.db), applier.ops[idx[0]].ev.coll);
again:
	cur = mongoc_collection_find_with_opts(coll, &filter, &opts, applier.primary);
	while (mongoc_cursor_next(cur, &doc))
	{
		bson_iter_t got;

		if (!bson_iter_init_find(&got, doc, "_id"))
			continue;
		for (int i = 0; i < n; i++)
		{
			bson_iter_t id;

			if (!found[i] && applier.ops[idx[i]].ev.kind == APPLY_UPDATE &&
				bson_iter_init_find(&id, applier.ops[idx[i]].ev.selector, "_id") && same_id(&id, &got))
				found[i] = 1;
		}
	}
	if (mongoc_cursor_error_document(cur, &e, &reply))
	{
		int			t = transient(&e, reply);

		mongoc_cursor_destroy(cur);
		/* those found before the failure are there: only the rest matter */
		if (t && retry_wait(&backoff, &e) == 0)
			goto again;
		if (!t)
			fail("MongoDB: could not look up the documents of the updates of %s.%s: %s",
				 target_db(applier.ops[idx[0]].ev.db), applier.ops[idx[0]].ev.coll, e.message);
		rc = -1;
	}
	else
	{
		mongoc_cursor_destroy(cur);
		retry_over(&backoff);
	}
	mongoc_collection_destroy(coll);
	bson_destroy(&filter);
	bson_destroy(&opts);
	for (int i = 0; i < n && rc == 0; i++)
	{
		Op		   *op = &applier.ops[idx[i]];
		bson_iter_t id;

		if (op->ev.kind == APPLY_UPDATE && !found[i] && op->replay &&
			bson_iter_init_find(&id, op->ev.selector, "_id") &&
			later_change(op->ev.coll, &id, op->ev.token) == 1)
			continue;
		if (op->ev.kind == APPLY_UPDATE && !found[i])
		{
			snprintf(op->ev.problem, sizeof(op->ev.problem), "the document to update is not in the "
					 "target (the event carries only the changed columns, so it cannot be made "
					 "from them)");
			op->ev.kind = APPLY_REFUSED;
		}
	}
	free(found);
	return rc;
}

/* Apply the batch: each collection's writes, then the position of its last event */
static int
flush_batch(int store)
{
	int		   *idx;
	char	   *done;
	int			rc = 0;
	const Op   *last;
	const char *pass_to = NULL;

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
		rc = check_update_targets(idx, n);
		if (rc == 0)
			rc = apply_collection(idx, n);
	}
	free(idx);
	free(done);
	last = &applier.ops[applier.nops - 1];
	/* the replay over: before its position is stored, nothing may be left moved aside */
	if (rc == 0 && applier.nmoved && strcmp(last->ev.token, applier.replay_end) >= 0)
		rc = check_moved();
	/* no position stored while values are moved aside: a stop then replays from before them */
	if (rc == 0 && applier.nmoved == 0 && (store || now_seconds() - applier.stored_at >= PROGRESS_EVERY))
		rc = store_progress(pass_to ? pass_to : last->ev.token, NULL, last->ev.wall_ms, NULL);
	if (rc == 0)
	{
		snprintf(applier.flushed, sizeof(applier.flushed), "%s", pass_to ? pass_to : last->ev.token);
		applier.flushed_wall_ms = last->ev.wall_ms;
		pthread_mutex_lock(&applier.lock);
		applier.stats.events += applier.nops;
		snprintf(applier.stats.token, sizeof(applier.stats.token), "%s", last->ev.token);
		applier.stats.wall_ms = last->ev.wall_ms;
		pthread_mutex_unlock(&applier.lock);
	}
	for (int i = 0; i < applier.nops; i++)
		free_op(&applier.ops[i]);
	applier.nops = 0;
	applier.batch_bytes = 0;
	return rc;
}

static int
add_op(Op *op)
{
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
		return flush_batch(0);
	return 0;
}

/* The first document of filter in db.coll (NULL if none), retried while transient */
int
find_one(const char *db, const char *collname, const bson_t *filter, bson_t **found)
{
	double		backoff = 0;
	*found = NULL;
	for (;;)
	{
		mongoc_collection_t *coll = mongoc_client_get_collection(applier.client, db, collname);
		bson_t		opts = BSON_INITIALIZER;
		mongoc_cursor_t *cur;
		const bson_t *doc;
		bson_error_t e;
		const bson_t *reply = NULL;

		BSON_APPEND_INT64(&opts, "limit", 1);
		cur = mongoc_collection_find_with_opts(coll, filter, &opts, applier.primary);
		if (mongoc_cursor_next(cur, &doc))
			*found = bson_copy(doc);
		if (mongoc_cursor_error_document(cur, &e, &reply))
		{
			int			t = transient(&e, reply);

			mongoc_cursor_destroy(cur);
			mongoc_collection_destroy(coll);
			bson_destroy(&opts);
			if (!t)
			{
				fail("MongoDB: could not read %s.%s: %s", db, collname, e.message);
				return -1;
			}
			if (retry_wait(&backoff, &e) != 0)
				return -1;
			continue;
		}
		mongoc_cursor_destroy(cur);
		mongoc_collection_destroy(coll);
		bson_destroy(&opts);
		retry_over(&backoff);
		return 0;
	}
}

typedef struct StashArg
{
	const char *id;
	const bson_t *doc;
} StashArg;

static mongoc_bulk_operation_t *
build_stash(mongoc_collection_t *coll, void *arg)
{
	StashArg   *s = arg;
	bson_t		opts = BSON_INITIALIZER;
	bson_t		sel = BSON_INITIALIZER;
	bson_t		doc = BSON_INITIALIZER;
	bson_t		uopts = BSON_INITIALIZER;
	mongoc_bulk_operation_t *bulk;
	bson_error_t e;

	bulk = mongoc_collection_create_bulk_operation_with_opts(coll, &opts);
	BSON_APPEND_UTF8(&sel, "_id", s->id);
	BSON_APPEND_UTF8(&doc, "_id", s->id);
	BSON_APPEND_DOCUMENT(&doc, "keyChange", s->doc);
	BSON_APPEND_BOOL(&uopts, "upsert", true);
	mongoc_bulk_operation_replace_one_with_opts(bulk, &sel, &doc, &uopts, &e);
	bson_destroy(&opts);
	bson_destroy(&sel);
	bson_destroy(&doc);
	bson_destroy(&uopts);
	return bulk;
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
	const char *db = target_db(ins->ev.db);

	/* the key change's own store of the position covers these */
	if (flush_batch(0) != 0)
		return -1;
	snprintf(stash_id, sizeof(stash_id), "%s@%s", applier.o.slot, ins->ev.token);
	BSON_APPEND_UTF8(&filter, "_id", stash_id);
	rc = find_one(applier.progress_db, applier.o.progress_coll, &filter, &stash);
	bson_destroy(&filter);
	if (rc != 0)
		return -1;
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
		StashArg	sa;

		if (find_one(db, ins->ev.coll, del->ev.selector, &old) != 0)
			return -1;
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
		sa.id = stash_id;
		sa.doc = &newdoc;
		if (ins->ev.kind != APPLY_REFUSED &&
			progress_command("store a key change", build_stash, &sa) != 0)
		{
			bson_destroy(&newdoc);
			return -1;
		}
	}
	if (stash)
		bson_destroy(stash);
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
}

static int
release_held(void)
{
	if (!applier.has_held)
		return 0;
	applier.has_held = 0;
	return add_op(&applier.held);
}

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
static int
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
is_segment_name(const char *name)
{
	size_t		n = strlen(name);

	return n == 2 * RESUME_TOKEN_LEN + 1 + 5 && name[RESUME_TOKEN_LEN] == '-' &&
		strcmp(name + n - 5, ".bson") == 0 && resume_token_is_valid(name) &&
		resume_token_is_valid(name + RESUME_TOKEN_LEN + 1);
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

		if (!is_segment_name(de->d_name) ||
			(applier.applied[0] && strncmp(de->d_name + RESUME_TOKEN_LEN + 1, applier.applied, RESUME_TOKEN_LEN) <= 0))
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
		if (is_segment_name(de->d_name) &&
			strncmp(de->d_name + RESUME_TOKEN_LEN + 1, applier.applied, RESUME_TOKEN_LEN) <= 0)
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
	if (applier.applied[0] &&
		progress_command("remove the stashes of key changes applied", build_stale_stashes, NULL) != 0)
		return NULL;
	if (load_initial() != 0)
		return NULL;
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
			if (store_intent(names[i] + RESUME_TOKEN_LEN + 1) != 0 || apply_segment(names[i]) != 0)
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
 * The password of --to-password-file: its first line.  Like libpq's
 * .pgpass, a file that others may read is refused: it would not be secret.
 */
static int
read_password_file(const char *path, char *pw, size_t pwsize, char *err, size_t errsize)
{
	struct stat sb;
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t		n;

	if (fd < 0 || fstat(fd, &sb) != 0)
	{
		snprintf(err, errsize, "could not read --to-password-file \"%s\": %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(sb.st_mode) || (sb.st_mode & (S_IRWXG | S_IRWXO)) != 0)
	{
		snprintf(err, errsize, "--to-password-file \"%s\" %s\nhint: Make it a file only its "
				 "owner can read: chmod 0600 \"%s\".", path,
				 S_ISREG(sb.st_mode) ? "has group or world access" : "is not a regular file", path);
		close(fd);
		return -1;
	}
	n = read(fd, pw, pwsize - 1);
	close(fd);
	if (n < 0)
	{
		snprintf(err, errsize, "could not read --to-password-file \"%s\": %s", path, strerror(errno));
		return -1;
	}
	pw[n] = '\0';
	pw[strcspn(pw, "\r\n")] = '\0';
	if (pw[0] == '\0')
	{
		snprintf(err, errsize, "--to-password-file \"%s\" is empty: its first line is the password", path);
		return -1;
	}
	return 0;
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
	bson_error_t e;
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
		if (mongoc_client_command_simple(applier.client, "admin", &hello, NULL, &reply, &e) &&
			bson_iter_init_find(&it, &reply, "maxBsonObjectSize"))
			applier.max_bson_size = (int32_t) bson_iter_as_int64(&it);
		bson_destroy(&reply);
		bson_destroy(&hello);

		/*
		 * FerretDB (1.x) never answers an update or delete command of 100
		 * statements or more: the batch stays as large, its writes sent
		 * 99 to a command.
		 */
		bson_init(&hello);
		BSON_APPEND_INT32(&hello, "buildInfo", 1);
		if (mongoc_client_command_simple(applier.client, "admin", &hello, NULL, &reply, &e) &&
			bson_iter_init_find(&it, &reply, "ferretdbVersion") && BSON_ITER_HOLDS_UTF8(&it))
		{
			applier.max_writes = 99;
			applier.ferretdb = 1;
			fprintf(stderr, "pg_bsonstream: the server is FerretDB %s: at most %d writes a command "
					"(it does not answer larger update commands)\n", bson_iter_utf8(&it, NULL),
					applier.max_writes);
		}
		bson_destroy(&reply);
		bson_destroy(&hello);
	}
	if (!applier.deferred)
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
	bson_error_t e;
	mongoc_uri_t *uri;
	bson_t		ping = BSON_INITIALIZER;
	bson_t		reply;
	const mongoc_write_concern_t *wc;
	char		shown[4096];

	applier.o = *o;
	mongoc_init();
	apply_mask_uri(o->uri, shown, sizeof(shown));
	uri = mongoc_uri_new_with_error(o->uri, &e);
	if (uri == NULL)
	{
		snprintf(err, errsize, "invalid --to \"%s\": %s", shown, e.message);
		return -2;
	}
	if (o->password_file)
	{
		char		pw[1024];

		if (mongoc_uri_get_username(uri) == NULL)
		{
			mongoc_uri_destroy(uri);
			snprintf(err, errsize, "--to-password-file needs a user name in the URI "
					 "(mongodb://user@host/db)");
			return -2;
		}
		if (mongoc_uri_get_password(uri) != NULL)
		{
			mongoc_uri_destroy(uri);
			snprintf(err, errsize, "--to \"%s\" has a password and --to-password-file gives "
					 "one: give it in one place", shown);
			return -2;
		}
		if (read_password_file(o->password_file, pw, sizeof(pw), err, errsize) != 0)
		{
			mongoc_uri_destroy(uri);
			return -2;
		}
		mongoc_uri_set_password(uri, pw);
		explicit_bzero(pw, sizeof(pw));
	}
	if (mongoc_uri_get_database(uri))
		applier.uri_db = strdup(mongoc_uri_get_database(uri));
	applier.progress_db = applier.uri_db ? applier.uri_db : o->default_db;
	/* the write concern: the URI's, majority when it gives none */
	wc = mongoc_uri_get_write_concern(uri);
	if (mongoc_write_concern_get_w(wc) == MONGOC_WRITE_CONCERN_W_DEFAULT &&
		mongoc_write_concern_get_wtag(wc) == NULL)
	{
		mongoc_write_concern_t *maj = mongoc_write_concern_new();

		mongoc_write_concern_set_w(maj, MONGOC_WRITE_CONCERN_W_MAJORITY);
		if (mongoc_write_concern_get_journal(wc))
			mongoc_write_concern_set_journal(maj, true);
		mongoc_uri_set_write_concern(uri, maj);
		mongoc_write_concern_destroy(maj);
	}
	applier.client = mongoc_client_new_from_uri(uri);
	mongoc_uri_destroy(uri);
	if (applier.client == NULL)
	{
		snprintf(err, errsize, "could not use --to \"%s\" (the MongoDB C driver refused it)", shown);
		return -2;
	}
	mongoc_client_set_error_api(applier.client, MONGOC_ERROR_API_VERSION_2);
	/* every read of the applier: a secondary may lag behind its own writes */
	applier.primary = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);
	mongoc_client_set_appname(applier.client, "pg_bsonstream");
	BSON_APPEND_INT32(&ping, "ping", 1);
	if (!mongoc_client_command_simple(applier.client, "admin", &ping, NULL, &reply, &e))
	{
		bson_destroy(&ping);
		if (!o->creating_slot && transient(&e, &reply) && !strstr(e.message, "TLS") &&
			!strstr(e.message, "certificate"))
		{
			/*
			 * A restart: the slot exists and holds the primary's WAL until
			 * the stream confirms it, so the stream goes on into DIR/changes
			 * and the applier reads the target once it answers.
			 */
			bson_destroy(&reply);
			fprintf(stderr, "pg_bsonstream: MongoDB cannot be reached (%s): the stream goes on "
					"into \"%s/changes\", applied once MongoDB answers\n", e.message, o->dir);
			set_state("MongoDB unreachable (%s): retrying", e.message);
			applier.deferred = 1;
			/* the position applied is not known yet: every segment counts against --max-buffer */
			free_names(pending_segments(&applier.start_bytes));
			return 0;
		}
		bson_destroy(&reply);
		snprintf(err, errsize, "could not reach MongoDB at --to: %s\nhint: %s", e.message,
				 e.domain == MONGOC_ERROR_CLIENT && e.code == MONGOC_ERROR_CLIENT_AUTHENTICATE ?
				 "Check the user name, the password and authSource in the URI." :
				 strstr(e.message, "TLS") || strstr(e.message, "certificate") ?
				 "Check tlsCAFile in the URI: it must name the authority that signed the "
				 "server's certificate (or tlsAllowInvalidCertificates=true, for tests only)." :
				 "Check the host and port in the URI and that the server runs; "
				 "serverSelectionTimeoutMS in the URI sets how long to wait.");
		return -1;
	}
	bson_destroy(&ping);
	bson_destroy(&reply);
	return target_read(err, errsize);
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

#endif							/* HAVE_LIBMONGOC */
