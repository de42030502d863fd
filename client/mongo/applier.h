/*
 * applier.h
 *		What the parts of pg_bsonstream --to's applier share (inside the
 *		program only; mongo_apply.h is its interface): the applier's state,
 *		one write of a batch, and the helpers every part calls.
 *
 *	mongo_apply.c  the thread: segments read, events batched, each
 *	               collection's writes sent as ordered bulks, their outcomes
 *	               acted on, the position stored
 *	target_call.c  the calls of the target (target.h): the retry loop, the
 *	               refusal policy
 *	target_mongoc.c  the target on a MongoDB server (libmongoc)
 *	copy_load.c    the first copy (DIR/initial) loaded: documents, indexes
 *	replay.c       writes sent again that collide on a unique index
 *	dead_letter.c  the dead-letter file
 *	schema_follow.c  schema events: a table's collection copied again or
 *	               dropped, the shapes the collections have
 *	embed_apply.c  a collection whose documents hold embedded rows: the
 *	               batch's documents read, changed in memory, written whole
 *	node_merge.c   a Citus cluster: the nodes' segments read side by side,
 *	               applied in one commit order
 *
 * One applier a process: its state is the global 'applier', written by the
 * applier's thread only, but for what is under its lock (stats, failed).
 */
#ifndef APPLIER_H
#define APPLIER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>


#include "event_apply.h"
#include "progress.h"
#include "signals.h"
#include "resume_token.h"
#include "target.h"

#define BATCH_BYTES		(8 * 1024 * 1024)
#define IDLE_WAIT_US	100000	/* between looks for a new segment */
#define RETRY_MIN		0.5
#define RETRY_MAX		8.0
#define COPY_BATCH		1000
#define STOP_WAIT		5		/* seconds a signal waits for the write in progress */
#define PROGRESS_EVERY	1.0		/* seconds between stores of the position within a segment */

/* One write of a batch */
typedef struct Op
{
	ApplyEvent	ev;
	uint8_t    *event;			/* the event's bytes, for the dead-letter file */
	uint32_t	event_len;
	int			replay;			/* may have been applied before (replay.c) */
	int			moved;			/* collisions moved aside for it */
} Op;

/* A unique field whose value a replay moved aside in a document */
typedef struct MovedAside
{
	char		db[128];
	char		coll[512];
	char		field[256];
} MovedAside;

#define MAX_MOVED		64
#define MOVED_MARK		"pg_bsonstream_replay"

typedef struct Applier
{
	ApplyOptions o;
	Target	   *target;			/* the server written into (target.h) */
	char	   *uri_db;			/* the URI's database, NULL if none */
	const char *progress_db;
	int32_t		max_bson_size;
	int			max_writes;		/* writes per command, at most (0: the driver's split) */
	int			ferretdb;		/* the server is FerretDB: a write error's index may be wrong */

	/* the progress document */
	char		applied[RESUME_TOKEN_LEN + 1];	/* "" if none */
	char		initial[16];	/* "", "loading", "done" */
	int			deferred;		/* unreachable at the start: the target read by the thread */
	int			fresh;			/* the stored document is an earlier slot's: replaced at the first store */
	double		stored_at;		/* when the position was last stored */
	char		flushed[RESUME_TOKEN_LEN + 1];	/* the last batch applied, "" if none */
	char		replay_until[RESUME_TOKEN_LEN + 1]; /* the events up to it may have been applied */
	char		replay_end[RESUME_TOKEN_LEN + 1];	/* the last event written again in this run */
	char		intent[RESUME_TOKEN_LEN + 1];	/* replayUntil as stored */
	MovedAside	moved[MAX_MOVED];
	int			nmoved;
	char		doc_stashed[RESUME_TOKEN_LSN_DIGITS + 1];	/* the last transaction whose
															 * deleted documents are
															 * stashed, "" if none */
	int64_t		flushed_wall_ms;

	/* the batch */
	Op		   *ops;
	int			nops;
	int			maxops;
	size_t		batch_bytes;
	int			flush_due;		/* the batch is full: applied before the next write */
	Op			held;			/* a delete held back: a key change's insert may follow */
	int			has_held;

	/* a split event's fragments */
	bson_t	   *fragments;
	uint8_t   **fragment_data;
	int			nfragments;
	int			maxfragments;

	int			dead_fd;

	/* what each table's collection holds (schema_follow.c) */
	struct TableShape *tables;
	int			ntables;
	int			maxtables;
	int			tables_dirty;	/* to be stored with the next position */
	uint64_t	skipped;		/* events in a table's copy again, not applied */
	char		passed[RESUME_TOKEN_LEN + 1];	/* the last of them */

	/* the thread and what it shares (under lock) */
	pthread_t	thread;
	int			started;
	int			abandoned;		/* stopped without the thread: it still holds all this */
	pthread_mutex_t lock;
	atomic_int	stop;			/* 1: after the batch, 2: once drained */
	int			failed;
	char		errmsg[2048];
	ApplyStats	stats;
	uint64_t	start_bytes;	/* unapplied segment bytes found at the start */
	atomic_uint_fast64_t applied_bytes; /* segment bytes applied by this run */
	atomic_llong write_since_ms;	/* when the write in flight was sent; 0: none */
	double		retry_said;
} Applier;

extern Applier applier;

#define LOST_AT_WRITE "the server closed the connection at this write (a value it cannot read: FerretDB does so for a NaN or an infinity)"

/*
 * A write sent and its answer: between them, the stream's loop can say that
 * it waits long (apply_stats' write_wait)
 */
static inline void
write_sent(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	applier.write_since_ms = (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void
write_answered(void)
{
	applier.write_since_ms = 0;
}

/* mongo_apply.c */
extern int64_t wall_now_ms(void);
extern void set_state(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern const char *target_db(const char *event_db);
extern void fail(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern char *id_json(const bson_t *selector);
extern int	is_write(ApplyKind k);
extern int	store_progress(const char *token, const char *initial, int64_t wall_ms, const char *stash_id);
/* the stashes up to the stored position removed */
extern int	remove_stale_stashes(void);
extern int	read_doc(FILE *f, uint8_t **buf, size_t *bufsize, uint32_t *len);
/* an event of the stream (whole, or a fragment of a split one) into the batch */
extern int	read_event(const uint8_t *data, uint32_t len);
/* the events up to last may be applied from now on: a stop replays them */
extern int	store_intent(const char *last);
/* a delete held back (a key change's insert may follow) into the batch */
extern int	release_held(void);
/* the batch applied; store: 1 the position stored, 0 if due, -1 not */
extern int	flush_batch(int store);
/* ops[idx[0..n-1]], one collection's writes in order, as ordered calls */
extern int	apply_collection(int *idx, int n);
extern char **pending_segments(uint64_t *bytes);
extern void free_names(char **names);

/*
 * The applier on a target of the caller's (the unit tests' in memory):
 * apply_open without the URI; uri_db as the URI's database would be.
 */
extern int	apply_open_target(const ApplyOptions *o, Target *target, const char *uri_db,
							  char *err, size_t errsize);


/* target_call.c */
extern int	retry_wait(double *backoff, const TargetResult *r);
extern void retry_over(double *backoff);
extern void target_write_once(const char *db, const char *coll, const TargetWrite *w, int n,
							  int ordered, TargetResult *r);
extern int	target_write(const char *db, const char *coll, const TargetWrite *w, int n, int ordered,
						 TargetResult *r);
extern int	target_write_must(const char *what, const char *db, const char *coll,
							  const TargetWrite *w, int n);
extern int	target_find(const char *what, const char *db, const char *coll, const bson_t *filter,
						int64_t limit, const bson_t *projection, TargetEach each, void *arg);
extern int	target_indexes(const char *db, const char *coll, TargetEach each, void *arg);
extern int	target_command(const char *db, const bson_t *cmd, bson_t *reply, TargetResult *r);
extern void target_command_once(const char *db, const bson_t *cmd, bson_t *reply, TargetResult *r);
extern int	server_answers(void);
extern int	find_one(const char *db, const char *coll, const bson_t *filter, bson_t **found);
extern int	refuse(const char *kind, const char *db, const char *coll, const bson_t *selector,
				   const char *token, const uint8_t *data, uint32_t len, const char *index,
				   int code, const char *message);

/* copy_load.c: DIR/initial into MongoDB, unless done */
extern int	load_initial(void);
/*
 * A table's copy again (one collection in the dump directory root, made at
 * consistent point at; alias: the name its events had when it was asked
 * for) in place of its collection: 1 with its db and coll out; 0 if the
 * copy holds none (the table is gone since); -1 on failure.
 */
extern int	load_recopy(const char *root, uint64_t at, const char *alias, char *db,
						size_t dbsize, char *coll, size_t collsize);
extern void remove_tree(const char *path);

/* schema_follow.c */
/* a collection loaded from a copy whose metadata is meta (at: its consistent point, 0: the first copy's) */
extern int	tables_note_copy(const char *db, const char *coll, const bson_t *meta, uint64_t at,
							 const char *alias);
extern void tables_append(bson_t *doc);
extern int	tables_read(const bson_t *progress);
extern void tables_free(void);
/* a schema event: applied (the batch before it is) */
extern int	schema_apply(const ApplyEvent *ev);
/* an event of a table copied again that the copy holds: not applied */
extern int	schema_skips(const ApplyEvent *ev);
extern int	drop_collection(const char *db, const char *coll);

/* replay.c */
extern int	same_id(bson_iter_t *a, bson_iter_t *b);
extern int	later_change(const char *coll, bson_iter_t *id, const char *after);
extern void mark_replay(int *idx, int from, int upto);
extern int	move_aside(const Op *op);
extern int	check_moved(void);

/* node_merge.c: a Citus cluster's nodes' streams, merged (node_merge.h) */
extern int	merge_init(void);
extern void merge_free(void);
extern int	merge_active(void);
extern int	merge_read_positions(const bson_t *progress);
extern void merge_append_positions(bson_t *set, const char *token);
extern int	merge_apply(void);

/* embed_apply.c: a collection whose documents hold embedded rows */
extern int	embed_collection(const int *idx, int n);
extern int	embed_apply(int *idx, int n);

/* dead_letter.c: a refused write appended, durably; -1 (failed) if it could not be */
extern int	dead_letter(const char *db, const char *coll, const bson_t *selector, const char *token,
						const uint8_t *event, uint32_t event_len, const char *field, int code,
						const char *message);

#endif							/* APPLIER_H */
