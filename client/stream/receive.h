/*
 * receive.h
 *		pg_bsonstream's receive loop: the messages of one replication
 *		connection into durable segments, each transaction confirmed to the
 *		slot once all of it is durable, a lost connection followed by a new
 *		one, and the end of the run (the applier drained or stopped, the
 *		summary, DIR/status.json's last figures).  As receivelog.h's
 *		StreamCtl drives pg_receivewal's and pg_recvlogical's loops, a
 *		StreamCtl says what this one follows; the program runs it for one
 *		server, and --citus for each node (citus_stream.h).
 */
#ifndef RECEIVE_H
#define RECEIVE_H

#include <stdint.h>

#include <libpq-fe.h>

#include "db.h"
#include "dump.h"
#include "repl.h"
#include "selection.h"

typedef struct StreamCtl
{
	const ConnOpts *conn;		/* the replication connection's, for a new one */
	const char *dir;			/* DIR, or "-": standard output */
	const char *slot;
	const Selection *sel;		/* the plugin's options */
	const ReplEventOptions *events;
	Lsn			endpos;			/* 0: until stopped */
	double		status_interval;
	int			reconnect;		/* a lost connection is followed by a new one */
	int			quiet;
	int			to;				/* the applier (mongo_apply.h) runs: its failure
								 * stops the stream, --max-buffer bounds it, and
								 * the end drains it */
	int			sync;			/* fsync the segments */
	uint64_t	segment_size;
	double		segment_time;
	int			initial_copy;	/* for the summary: copied is this run's copy */
	const DumpStats *copied;
} StreamCtl;

/*
 * Stream from conn (in COPY BOTH mode since repl_start) until a stop (a
 * signal, --endpos, the applier's failure) or an error: 0 when it ended as
 * asked, everything durable confirmed; 1 otherwise (said on stderr).
 * conn is finished here.
 */
extern int	receive_run(const StreamCtl *ctl, PGconn *conn);

#endif							/* RECEIVE_H */
