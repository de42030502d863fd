/*
 * target.h
 *		What the applier asks of the server it writes into: an ops table, in
 *		the manner of pg_basebackup's walmethods.h.
 *
 *	target_mongoc.c  a MongoDB server, with the MongoDB C driver (the program)
 *	test/unit/target_memory.c  collections in memory, with faults on demand
 *	                 (the unit tests of batching, key changes, refusals,
 *	                 retries and replays)
 *
 * Every call ends in one outcome, decided by the implementation in one
 * place (for libmongoc: target_classify):
 *	TARGET_DONE     acknowledged, every write applied
 *	TARGET_RETRY    a new attempt may cure it (the server unreachable, the
 *	                connection lost, a primary stepping down, a transient
 *	                code): nothing is known of which writes were applied
 *	TARGET_REFUSED  the server (or the driver) refuses writes that will
 *	                never pass: refused[] names them by index, with code and
 *	                message; in an ordered call the writes before the one
 *	                refused are applied and those after it are not, in an
 *	                unordered one every other write is applied.  An index
 *	                of -1: it is one of them, which one is not known (the
 *	                caller finds it by writing them one at a time)
 *	TARGET_FATAL    neither: the run stops with the message
 * What to do with an outcome (wait and try again, stop or dead-letter a
 * refusal) is the applier's, decided once there (mongo_apply.c).
 */
#ifndef TARGET_H
#define TARGET_H

#include <stdint.h>
#include <stdio.h>

#include <bson/bson.h>

typedef enum TargetStatus
{
	TARGET_DONE,
	TARGET_RETRY,
	TARGET_REFUSED,
	TARGET_FATAL
} TargetStatus;

typedef struct TargetRefusal
{
	int			index;			/* of the call's writes; -1: not known which */
	int			code;
} TargetRefusal;

/* an unordered call's refusals, at most: a first copy's batch (COPY_BATCH) */
#define TARGET_MAX_REFUSED 1024
/* the refusals whose messages are kept: the first */
#define TARGET_MESSAGES 4

typedef struct TargetResult
{
	TargetStatus status;
	int			code;			/* RETRY, FATAL: the error's code */
	int			lost;			/* RETRY: the connection was lost during the call */
	char		message[1024];	/* RETRY, FATAL: what the server or driver said */
	const char *hint;			/* FATAL at a connection: what to check, or NULL */
	int			nrefused;		/* REFUSED */
	int			truncated;		/* more were refused than refused[] holds */
	TargetRefusal refused[TARGET_MAX_REFUSED];
	char		messages[TARGET_MESSAGES][256]; /* of the first refusals */
} TargetResult;

typedef enum TargetWriteKind
{
	TW_INSERT,
	TW_REPLACE,					/* replace one, upsert */
	TW_UPDATE,					/* update one with operators */
	TW_UPDATE_UPSERT,			/* the same, inserting when none matches */
	TW_DELETE,					/* delete one */
	TW_DELETE_MANY
} TargetWriteKind;

typedef struct TargetWrite
{
	TargetWriteKind kind;
	const bson_t *selector;		/* TW_INSERT: none */
	const bson_t *doc;			/* the document, replacement or operators */
} TargetWrite;

/* A document found; nonzero stops the listing */
typedef int (*TargetEach) (const bson_t *doc, void *arg);

typedef struct Target Target;

typedef struct TargetOps
{
	/* n writes into db.coll: ordered (stops at the first refusal) or not */
	void		(*write) (Target *t, const char *db, const char *coll, const TargetWrite *w, int n,
						  int ordered, TargetResult *r);

	/*
	 * The documents of filter in db.coll (at most limit, 0: all; projection
	 * or NULL), read from the primary, to each(): on a RETRY some may have
	 * been passed already
	 */
	void		(*find) (Target *t, const char *db, const char *coll, const bson_t *filter,
						 int64_t limit, const bson_t *projection, TargetEach each, void *arg,
						 TargetResult *r);

	/* the index specifications of db.coll, to each() */
	void		(*indexes) (Target *t, const char *db, const char *coll, TargetEach each, void *arg,
							TargetResult *r);

	/*
	 * A command on db (ping, hello, buildInfo, drop, createIndexes): its
	 * reply into *reply if reply is not NULL, which the call initialises
	 * always, over what it held (the caller destroys it)
	 */
	void		(*command) (Target *t, const char *db, const bson_t *cmd, bson_t *reply,
							TargetResult *r);

	void		(*close) (Target *t);
} TargetOps;

struct Target
{
	const TargetOps *ops;
	int			index_unreliable;	/* a write error's index may be wrong (FerretDB
									 * 1.x, for updates): set by the applier */
};

#ifdef HAVE_LIBMONGOC
/*
 * A MongoDB server at uri (with the password of password_file, if given);
 * its database into *uri_db (malloc'ed, NULL if none).  NULL with err set
 * if the URI cannot be used (nothing is connected yet).
 */
extern Target *target_mongoc_open(const char *uri, const char *password_file, char **uri_db,
								  char *err, size_t errsize);
#endif

/* A refusal recorded (status REFUSED) */
static inline void
target_refuse(TargetResult *r, int index, int code, const char *message)
{
	if (r->nrefused < TARGET_MAX_REFUSED)
	{
		if (r->nrefused < TARGET_MESSAGES)
			snprintf(r->messages[r->nrefused], sizeof(r->messages[0]), "%.255s", message);
		r->refused[r->nrefused].index = index;
		r->refused[r->nrefused].code = code;
		r->nrefused++;
	}
	else
		r->truncated = 1;
	r->status = TARGET_REFUSED;
}

/* What the server said of the i-th refusal */
static inline const char *
target_refusal_message(const TargetResult *r, int i)
{
	return i < TARGET_MESSAGES && i < r->nrefused ? r->messages[i] : "refused";
}

static inline void
target_result_init(TargetResult *r)
{
	r->status = TARGET_DONE;
	r->code = 0;
	r->lost = 0;
	r->message[0] = '\0';
	r->hint = NULL;
	r->nrefused = 0;
	r->truncated = 0;
}

#endif							/* TARGET_H */
