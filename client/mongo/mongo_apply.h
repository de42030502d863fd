/*
 * mongo_apply.h
 *		pg_bsonstream --to: the first copy and the change segments applied
 *		into a MongoDB database, with the MongoDB C driver.
 *
 * The stream is made durable locally first: the receive loop writes its
 * segments (segment.h) and confirms them to the slot once they are on
 * disk, whatever MongoDB does; a thread of its own applies the closed
 * segments, in order, then removes them.  So a MongoDB that is down costs
 * local disk, bounded by --max-buffer, not the primary's WAL.
 *
 * Where it is: the position of the last event applied is stored in the
 * target, in the progress collection, one document per slot
 * ({_id: slot, token, initial, ...}), written after each batch.  A restart
 * skips the events up to it and applies the rest in order.  Each batch's
 * writes are idempotent (replace with upsert, $set and $unset, delete one,
 * delete many), so a stop between a batch's writes and its position
 * applies some of them again, which ends with the same documents.
 *
 * The first copy (DIR/initial, a dump directory) is loaded before any
 * change: the documents, then the indexes of its metadata; its state is in
 * the same progress document (initial: "loading", then "done").
 *
 * A write the server refuses (a document over its size limit, a duplicate
 * key on a unique index, a value it does not store) stops the run, naming
 * the event, the collection and the _id, unless a dead-letter file is
 * given: the refused event is appended to it and the run goes on.  A lost
 * connection or a server that is down is retried without end.
 */
#ifndef MONGO_APPLY_H
#define MONGO_APPLY_H

#include <stddef.h>
#include <stdint.h>

typedef struct ApplyOptions
{
	const char *uri;			/* the MongoDB connection string */
	const char *password_file;	/* the password of the URI's user, or NULL */
	const char *dir;			/* DIR: DIR/changes, DIR/initial */
	const char *slot;			/* the progress document's _id */
	const char *system_id;		/* the PostgreSQL cluster's system identifier */
	int			creating_slot;	/* this run makes the slot: a progress document
								 * of that name is from an earlier slot */
	const char *default_db;		/* the progress collection's database when
								 * the URI names none (the events' ns.db
								 * then names each event's) */
	const char *progress_coll;
	const char *dead_letter;	/* NULL: a refused write stops the run */
	int			keep_applied;	/* keep applied segments and the first copy */
	int			sync;
	uint64_t	max_buffer;		/* bytes of segments not yet applied, at most */
	int			batch_events;	/* events per batch, at most */
	/*
	 * A Citus cluster (--citus): the nodes' groups, whose streams are in
	 * DIR/group-<G> (changes, initial), merged (node_merge.h); 0: one
	 * server's, in DIR
	 */
	const int  *groups;
	int			ngroups;

	/*
	 * The collection of table relid copied again, for a DDL that changed
	 * its documents: a dump directory outdir/<db>/<coll>.bson with its
	 * .metadata.json, in the snapshot of a temporary slot whose consistent
	 * point goes into *at (recopy.h).  0, or -1 with err set.
	 */
	int			(*recopy) (void *arg, int64_t relid, const char *outdir, uint64_t *at,
						   char *err, size_t errsize);
	void	   *recopy_arg;
} ApplyOptions;

typedef struct ApplyStats
{
	uint64_t	events;			/* applied in this run */
	uint64_t	refused;		/* written to the dead-letter file */
	char		token[40];		/* the last applied event's, "" if none */
	int64_t		wall_ms;		/* its wallTime */
	uint64_t	buffer_bytes;	/* segments on disk not yet applied */
	int			caught_up;		/* every closed segment applied */
	char		state[200];		/* what it waits for, "" when applying */
	double		write_wait;		/* seconds the write in flight has waited, 0: none */
} ApplyStats;

/*
 * First thing in main: the MongoDB C driver's process-wide set-up (may
 * start the program again; see mongo_apply.c).
 */
extern void apply_process_init(char **argv);

/*
 * The connection string with its password, if it has one, as "****": what
 * messages and the process's arguments show.
 */
extern void apply_mask_uri(const char *uri, char *out, size_t outsize);

/* Where the URI's password is: 1 with its offset and length, 0 if none. */
extern int	apply_uri_password(const char *uri, size_t *start, size_t *len);

/* Built without the MongoDB C driver: --to is refused. */
extern int	apply_available(void);

/*
 * Check the URI (-2: a usage error), connect, check that the server
 * answers and read the progress document (-1, err set).
 */
extern int	apply_open(const ApplyOptions *o, char *err, size_t errsize);

/* Why MongoDB refuses db.coll as a name, or NULL. */
extern const char *apply_name_problem(const char *db, const char *coll);

/*
 * Can the collection coll of the events' database db (the URI's database
 * when it names one) be written?  -1 with err set if not.
 */
extern int	apply_check_name(const char *db, const char *coll, char *err, size_t errsize);

/* Start the applier thread: the first copy if not loaded, then the segments. */
extern int	apply_start(char *err, size_t errsize);

/* Has the applier stopped with an error?  1 and err set. */
extern int	apply_failed(char *err, size_t errsize);

extern void apply_stats(ApplyStats *s);

/* Bytes of segments not yet applied, with written_bytes written by this run */
extern uint64_t apply_held_bytes(uint64_t written_bytes);

/*
 * Would 'more' bytes of events exceed --max-buffer, with open_bytes in the
 * open segment and written_bytes written (durably) by this run?  1 and err
 * set if so.
 */
extern int	apply_buffer_full(uint64_t written_bytes, uint64_t more, char *err, size_t errsize);

/*
 * Stop the applier: with drain, once every closed segment is applied
 * (--endpos), else after the batch in progress (a signal).  0 if it ended
 * without error.
 */
extern int	apply_stop(int drain, char *err, size_t errsize);

/* After apply_stop: everything freed, the target closed, ready for another apply_open */
extern void apply_close(void);

#endif							/* MONGO_APPLY_H */
