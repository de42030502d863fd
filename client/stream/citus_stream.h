/*
 * citus_stream.h
 *		pg_bsonstream --citus: the change stream of a Citus cluster, as one
 *		stream per node.
 *
 * Each node of a Citus cluster writes its own WAL, and decodes only its own
 * changes: the coordinator's local tables and its copy of the reference
 * tables, a worker's shards (the plugin names them by their table, see
 * src/model/citus_tables.h).  So the cluster's stream is one slot per node
 * (the primary nodes of pg_dist_node, the coordinator always), each followed
 * by a process of its own running the single-node stream into
 * DIR/group-<groupid>, with its first copy of that node's rows under its own
 * slot's snapshot: every row is in exactly one node's copy or stream, and
 * each node's slot is confirmed only once its own events are durable.
 *
 * One directory per node, not one merged stream: the nodes' WAL positions
 * are unrelated (a resume token is unique and ordered within a node only),
 * a node's stream is resumed from its own slot, and a node that stops or
 * restarts holds back no other node's events.
 *
 * The cluster's node list is read again every few seconds: a node that has
 * joined is followed from a new slot, with a first copy of the rows it holds
 * by then (shards moved to it before its slot existed), and said so on
 * standard error; nothing is silently missed.  A node that left the
 * metadata is reported, its stream kept until the run ends.
 *
 * With --to, one more process applies the nodes' streams into MongoDB,
 * merged in commit order (client/mongo/node_merge.h).  It is started first
 * and checks MongoDB and the nodes' clocks before any slot is made; each
 * node's stream then asks for heartbeats and writes them on its node, and
 * marks its directory ready once its first copy is whole and it streams;
 * the applier begins when every node is.  A node that joins or leaves
 * while it runs stops the run, with the way on: the merge cannot place its
 * events yet.
 */
#ifndef CITUS_STREAM_H
#define CITUS_STREAM_H

#include "db.h"

/*
 * One node's stream, run in a child process: conn reaches the node, dir is
 * its directory; create_slot and initial_copy as pg_bsonstream's options.
 * Returns the process's exit status.
 */
typedef int (*CitusNodeStream) (const ConnOpts *conn, const char *dir,
								int create_slot, int initial_copy);

/* A node, as the applier of --to is told of it */
typedef struct CitusStreamNode
{
	int			group;
	const ConnOpts *conn;
	const char *label;
} CitusStreamNode;

/*
 * The applier of --to, run in a child process once the nodes are known:
 * it creates dir/CITUS_TO_READY once MongoDB answers and the nodes' clocks
 * agree (no slot is made before), then applies the nodes' streams once
 * each node's directory holds CITUS_NODE_READY.  Returns the exit status.
 */
typedef int (*CitusApply) (const CitusStreamNode *nodes, int n, const char *dir);

#define CITUS_TO_READY		".to-ready"
#define CITUS_NODE_READY	"streaming"

/*
 * The coordinator's slot is made first, the workers' after it: in
 * DIR/group-0 once it exists (a run with --create-slot).  A TRUNCATE run
 * through the coordinator then either commits before every node's
 * snapshot (in every copy, in no stream) or is in the coordinator's
 * stream; one that commits after a worker's snapshot is also refused by
 * the merge (MERGE_COPY_TIME).
 */
#define CITUS_SLOT_MADE		"slot-made"

/* The markers above: dir/name, empty files */
extern int	marker_exists(const char *dir, const char *name);
extern void marker_remove(const char *dir, const char *name);
extern int	marker_write(const char *dir, const char *name, char *err, size_t errsize);

/*
 * Follow every node of the cluster whose coordinator coord reaches, until a
 * signal (passed on to every node's process) or a node's stream ends (the
 * others are then stopped cleanly).  worker_hosts: --worker-host mappings.
 * Returns the exit status: 0 when every node's stream stopped cleanly.
 */
extern int	citus_stream_run(const ConnOpts *coord, char *const *worker_hosts,
							 int nworker_hosts, const char *dir, int create_slot,
							 int initial_copy, CitusNodeStream run, CitusApply apply);

#endif							/* CITUS_STREAM_H */
