/*
 * export.h
 *		One export job: run a COPY ... TO STDOUT (FORMAT binary) on a
 *		connection, strip the framing, check (or validate) each document and
 *		write it.
 *
 * Without --jobs there is one job; with --jobs N there are N, each on its
 * own connection and thread, over disjoint block ranges of the table: one
 * range each with --split, else chunks taking turns (ChunkPlan).  A job
 * only reads its connection and writes its output; everything else
 * (connecting, files, signals) is the main thread's.  The counters are
 * atomics so that the main thread can show progress while jobs run.
 */
#ifndef EXPORT_H
#define EXPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "output.h"
#include "source.h"

/*
 * --jobs N into one file: the table's blocks in chunks, chunk k (from 0)
 * exported by job k mod N + 1, the chunks written in order.  The job whose chunk is next
 * ("has the turn") writes its rows straight to the output; the others keep
 * the rows of their current chunk in memory, up to hold_max bytes, and
 * wait for their turn if that is not enough.  So every job works at once,
 * nothing is written twice, and memory stays bounded by N * hold_max.
 *
 * A dump's collection (dump.c) uses the same turns for its parts: any job
 * takes the next part of any collection, in order, and runs that one chunk
 * (job->sql, job->chunk), so that the turn never waits for a part no job
 * has taken.
 */
/*
 * A distributed table's shards as chunks: chunk k is the COPY 'sql', run on
 * the job's connection to node 'node'; 'where' names it in messages.
 */
typedef struct ChunkTask
{
	char	   *sql;
	char	   *where;
	int			node;
} ChunkTask;

typedef struct ChunkPlan
{
	const Source *src;
	const ChunkTask *tasks;		/* shards instead of block ranges, or NULL */
	OutFile    *outs;			/* --split of shards: chunk k into outs[k], no turns */
	int64_t		chunk_blocks;	/* blocks a chunk */
	int			nchunks;		/* chunk 0 is open below, the last open above */
	size_t		hold_max;		/* bytes a waiting job may hold */
	int			verbose;		/* print each chunk's statement */
	const char *clear_line;		/* to start such a line over the progress line */
	int			ready;			/* set up: the lock and condition exist */

	pthread_mutex_t lock;
	pthread_cond_t turn;		/* 'next' moved on, or stop (on CLOCK_MONOTONIC) */
	atomic_int	next;			/* the chunk whose rows are written now */
} ChunkPlan;

typedef struct Job
{
	int			id;				/* 1-based */
	int			njobs;
	PGconn	   *conn;
	PGconn	  **node_conns;		/* with shards: its connection to each node, or NULL */
	const char *shard;			/* with shards: the current one, for messages */
	const char *sql;			/* the COPY statement; with chunks, that of
								 * chunk 'chunk' alone, or NULL for the job's
								 * turns k, k + N, ... */
	ChunkPlan  *chunks;			/* --jobs into one file, a dump's collection,
								 * else NULL */
	int			chunk;
	OutFile    *out;
	pthread_mutex_t *out_lock;	/* out shared with other jobs (in no order): taken
								 * for each document, or NULL */
	size_t		max_size;
	const char *max_size_option;	/* the option that sets it, for messages */
	int			validate;		/* every element (bson_read_validate), not only the framing */
	int64_t		first_block;	/* for messages: the range (the current
								 * chunk's with chunks), -1 = unbounded */
	int64_t		end_block;

	/* progress, read by the main thread while the job runs */
	_Atomic uint64_t rows;		/* documents written */
	_Atomic uint64_t bytes;		/* their bytes */
	_Atomic uint64_t nulls;		/* NULL rows skipped */

	/* outcome */
	atomic_int	finished;
	int			failed;
	char		errmsg[2048];
} Job;

/*
 * Set by the main thread to stop every job (another job failed, or a
 * signal came): jobs stop at the next row.
 */
extern atomic_int export_stop;

/*
 * Conditions whose waits time out (to look at a flag now and then) use a
 * clock that cannot jump: cond_init_monotonic sets one up, cond_wait_ms
 * waits on it for at most ms milliseconds.
 */
extern void cond_init_monotonic(pthread_cond_t *cond);
extern void cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, long ms);

/* Run the job to completion; returns 0, or -1 with errmsg set. */
extern int	job_run(Job *job);

#endif							/* EXPORT_H */
