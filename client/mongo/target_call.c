/*
 * target_call.c
 *		The applier's calls of its target (target.h): each noted while in
 *		flight (the stream's loop says when one waits long), the one retry
 *		loop (a wait that doubles up to RETRY_MAX, said once per outage,
 *		ended by a signal), and the one refusal policy (stop, or the
 *		dead-letter file).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mongo_apply.h"
#include "applier.h"

/* Wait before the next attempt after r (a RETRY), saying so once per outage; -1 on a stop */
int
retry_wait(double *backoff, const TargetResult *r)
{
	if (*backoff == 0)
	{
		fprintf(stderr, "pg_bsonstream: MongoDB: %s; retrying (the stream goes on into "
				"local segments meanwhile)\n", r->message);
		*backoff = RETRY_MIN;
	}
	set_state("MongoDB unreachable (%s): retrying", r->message);
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

typedef enum CallKind
{
	CALL_WRITE,
	CALL_FIND,
	CALL_INDEXES,
	CALL_COMMAND
} CallKind;

typedef struct Call
{
	CallKind	kind;
	const char *db;
	const char *coll;
	const TargetWrite *writes;
	int			n;
	int			ordered;
	const bson_t *filter;		/* find's, or the command */
	int64_t		limit;
	const bson_t *projection;
	TargetEach	each;
	void	   *arg;
	bson_t	   *reply;
} Call;

static void
call_once(const Call *c, TargetResult *r)
{
	Target	   *t = applier.target;

	write_sent();
	switch (c->kind)
	{
		case CALL_WRITE:
			t->ops->write(t, c->db, c->coll, c->writes, c->n, c->ordered, r);
			break;
		case CALL_FIND:
			t->ops->find(t, c->db, c->coll, c->filter, c->limit, c->projection, c->each, c->arg, r);
			break;
		case CALL_INDEXES:
			t->ops->indexes(t, c->db, c->coll, c->each, c->arg, r);
			break;
		case CALL_COMMAND:
			t->ops->command(t, c->db, c->filter, c->reply, r);
			break;
	}
	write_answered();
}

/*
 * The retry loop: c again while its outcome is a RETRY.  0 with the
 * outcome in r (DONE, REFUSED or FATAL), -1 on a stop.
 */
static int
call_retrying(const Call *c, TargetResult *r)
{
	double		backoff = 0;

	for (;;)
	{
		call_once(c, r);
		if (r->status != TARGET_RETRY)
		{
			retry_over(&backoff);
			return 0;
		}
		/* the failed attempt's reply (the call initialises it again) */
		if (c->reply)
		{
			bson_destroy(c->reply);
			bson_init(c->reply);
		}
		if (retry_wait(&backoff, r) != 0)
			return -1;
	}
}

void
target_write_once(const char *db, const char *coll, const TargetWrite *w, int n, int ordered,
				  TargetResult *r)
{
	Call		c = {.kind = CALL_WRITE, .db = db, .coll = coll, .writes = w, .n = n, .ordered = ordered};

	call_once(&c, r);
}

int
target_write(const char *db, const char *coll, const TargetWrite *w, int n, int ordered,
			 TargetResult *r)
{
	Call		c = {.kind = CALL_WRITE, .db = db, .coll = coll, .writes = w, .n = n, .ordered = ordered};

	return call_retrying(&c, r);
}

/* Writes of the applier's own (the position, a stash): every one must pass */
int
target_write_must(const char *what, const char *db, const char *coll, const TargetWrite *w, int n)
{
	TargetResult r;

	if (target_write(db, coll, w, n, 1, &r) != 0)
		return -1;
	if (r.status == TARGET_DONE)
		return 0;
	fail("MongoDB: could not %s in %s.%s: %s", what, db, coll,
		 r.status == TARGET_REFUSED ? target_refusal_message(&r, 0) : r.message);
	return -1;
}

int
target_find(const char *what, const char *db, const char *coll, const bson_t *filter, int64_t limit,
			const bson_t *projection, TargetEach each, void *arg)
{
	Call		c = {.kind = CALL_FIND, .db = db, .coll = coll, .filter = filter, .limit = limit,
	.projection = projection, .each = each, .arg = arg};
	TargetResult r;

	if (call_retrying(&c, &r) != 0)
		return -1;
	if (r.status == TARGET_DONE)
		return 0;
	fail("MongoDB: could not %s in %s.%s: %s", what, db, coll, r.message);
	return -1;
}

int
target_indexes(const char *db, const char *coll, TargetEach each, void *arg)
{
	Call		c = {.kind = CALL_INDEXES, .db = db, .coll = coll, .each = each, .arg = arg};
	TargetResult r;

	if (call_retrying(&c, &r) != 0)
		return -1;
	if (r.status == TARGET_DONE)
		return 0;
	fail("MongoDB: could not list the indexes of %s.%s: %s", db, coll, r.message);
	return -1;
}

int
target_command(const char *db, const bson_t *cmd, bson_t *reply, TargetResult *r)
{
	Call		c = {.kind = CALL_COMMAND, .db = db, .filter = cmd, .reply = reply};

	if (reply)
		bson_init(reply);
	return call_retrying(&c, r);
}

void
target_command_once(const char *db, const bson_t *cmd, bson_t *reply, TargetResult *r)
{
	Call		c = {.kind = CALL_COMMAND, .db = db, .filter = cmd, .reply = reply};

	if (reply)
		bson_init(reply);
	call_once(&c, r);
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
	TargetResult r;

	BSON_APPEND_INT32(&ping, "ping", 1);
	target_command_once("admin", &ping, NULL, &r);
	bson_destroy(&ping);
	return r.status == TARGET_DONE;
}

static int
first_document(const bson_t *doc, void *arg)
{
	bson_t	  **found = arg;

	if (*found == NULL)
		*found = bson_copy(doc);
	return 1;
}

/* The first document of filter in db.coll (NULL if none), retried while transient */
int
find_one(const char *db, const char *coll, const bson_t *filter, bson_t **found)
{
	*found = NULL;
	if (target_find("read", db, coll, filter, 1, NULL, first_document, found) == 0)
		return 0;
	if (*found)
		bson_destroy(*found);
	*found = NULL;
	return -1;
}

/*
 * The refusal policy, the one place: what the target refuses, or what
 * cannot be applied, stops the run naming it (and the next run stops there
 * again), or with --dead-letter is appended there and the run goes on.
 * kind: "event" (a change; token set), "document" (of the first copy) or
 * "createIndexes" (an index of the first copy, named by index).
 */
int
refuse(const char *kind, const char *db, const char *coll, const bson_t *selector, const char *token,
	   const uint8_t *data, uint32_t len, const char *index, int code, const char *message)
{
	char	   *id;

	if (applier.o.dead_letter)
		return dead_letter(db, coll, selector, token, data, len, kind, code, message);
	if (strcmp(kind, "createIndexes") == 0)
	{
		fail("MongoDB refused index %s of the first copy's %s.%s: %s\nhint: Give "
			 "--dead-letter=FILE to write the refused index definitions there and go on "
			 "without them.", index, db, coll, message);
		return -1;
	}
	id = selector ? id_json(selector) : bson_strdup("(none)");
	if (strcmp(kind, "event") == 0)
		fail("MongoDB refused the change of _id %s in %s.%s (event %s): %s\n"
			 "hint: Nothing past it was applied, and the next run stops there again. "
			 "Fix the cause, or give --dead-letter=FILE to write such events there and go on.",
			 id, db, coll, token, message);
	else
		fail("MongoDB refused the first copy's document of _id %s in %s.%s: %s\n"
			 "hint: Fix the cause, or give --dead-letter=FILE to write such documents there and go on.",
			 id, db, coll, message);
	bson_free(id);
	return -1;
}
