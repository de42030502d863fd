/*
 * citus.h
 *		Distributed tables: where a Citus table's shards are, so that each
 *		is read on the node that holds it.
 *
 * A distributed (or reference) table's rows are in shard tables on the
 * workers; on the coordinator, the table itself is a shell.  Reading it
 * there pulls every row through the coordinator, and its blocks are not
 * the shards' blocks.  So pg_bsonexport reads each shard table where it is:
 * the shards and their nodes come from Citus's catalogs (pg_dist_partition,
 * pg_dist_shard, pg_dist_placement, pg_dist_node), in the order of their
 * hash ranges; a reference table is one shard, read once.
 */
#ifndef CITUS_H
#define CITUS_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

typedef struct CitusNode
{
	char	   *name;			/* pg_dist_node.nodename */
	char	   *port;			/* pg_dist_node.nodeport */
	const char *host;			/* where the client connects: name, the leader's
								 * for the coordinator, or --worker-host's */
	const char *conn_port;
} CitusNode;

typedef struct CitusShard
{
	char	   *shardid;
	char	   *table;			/* the shard table, schema-qualified and quoted */
	int			node;			/* index into nodes */
} CitusShard;

typedef struct CitusTable
{
	int			reference;		/* a reference table: one shard, copies everywhere */
	CitusNode  *nodes;
	int			nnodes;
	CitusShard *shards;			/* in the order of their hash ranges */
	int			nshards;
	int64_t		local_bytes;	/* what the coordinator's own copy still holds */
} CitusTable;

/*
 * Is the relation with this oid a Citus table whose rows are in shards?
 * 1 and *t filled, 0 (not one, or no Citus), -1 with err set.
 */
extern int	citus_lookup(PGconn *conn, const char *oid, CitusTable *t,
						 char *err, size_t errsize);

/*
 * --worker-host NAME[:PORT]=HOST[:PORT]: connect to HOST (and PORT) for
 * the node Citus knows as NAME (on PORT, or on any port).  Returns 0, or -1
 * with err set for a malformed mapping.
 */
extern int	citus_map_nodes(CitusTable *t, char *const *maps, int nmaps,
							char *err, size_t errsize);

/*
 * The same for one node, NAME:PORT in pg_dist_node: 1 with *host and
 * *conn_port (NULL: the node's port) malloc'ed, 0 if no mapping names it,
 * -1 with err set.
 */
extern int	citus_map_node(char *const *maps, int nmaps, const char *name,
						   const char *port, char **host, char **conn_port,
						   char *err, size_t errsize);

extern void citus_free(CitusTable *t);

#endif							/* CITUS_H */
