/*
 * export.h
 *		One export job: run a COPY ... TO STDOUT (FORMAT binary) on a
 *		connection, strip the framing, check each document and write it.
 *
 * Without --jobs there is one job; with --jobs N there are N, each on its
 * own connection and thread, over disjoint block ranges of the table.  A
 * job only reads its connection and writes its output; everything else
 * (connecting, files, signals) is the main thread's.  The counters are
 * atomics so that the main thread can show progress while jobs run.
 */
#ifndef EXPORT_H
#define EXPORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "output.h"

typedef struct Job
{
	int			id;				/* 1-based */
	int			njobs;
	PGconn	   *conn;
	const char *sql;			/* the COPY statement */
	OutFile    *out;
	size_t		max_size;
	int64_t		first_block;	/* for messages: the range, -1 = unbounded */
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

/* Run the job to completion; returns 0, or -1 with errmsg set. */
extern int	job_run(Job *job);

#endif							/* EXPORT_H */
