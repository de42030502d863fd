/*
 * citus_to.h
 *		pg_bsonstream --citus --to: the process that applies the nodes'
 *		streams into MongoDB, and the heartbeats each node's stream writes
 *		on its node (see citus_stream.h for how the processes work together,
 *		client/mongo/node_merge.h for the merge).
 */
#ifndef CITUS_TO_H
#define CITUS_TO_H

#include "citus_stream.h"
#include "mongo_apply.h"

#define HEARTBEAT_SECONDS	1.0

/*
 * The applier's process (a CitusApply): the nodes' clocks checked against
 * the coordinator's (nodes[0] is group 0), MongoDB opened with base's
 * options for the nodes' groups, then the merged streams applied until a
 * signal or a failure.  Returns the exit status.
 */
extern int	citus_apply_run(const CitusStreamNode *nodes, int n, const char *dir,
							const ApplyOptions *base, double status_interval, int quiet);

/*
 * A node's stream: a thread that writes a heartbeat message on the node
 * (conn's server) every HEARTBEAT_SECONDS, so that its stream goes on when
 * the node is idle.  A user not allowed to write one stops the stream
 * (SIGTERM to the process), and heartbeat_failed() then says so.
 */
extern int	heartbeat_start(const ConnOpts *conn, char *err, size_t errsize);
extern int	note_copy_time(const ConnOpts *conn, const char *dir, int sync, char *err, size_t errsize);
extern int	heartbeat_failed(void);

#endif							/* CITUS_TO_H */
