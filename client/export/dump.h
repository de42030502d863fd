/*
 * dump.h
 *		A dump directory as mongorestore reads it: DIR/<db>/<coll>.bson and
 *		DIR/<db>/<coll>.metadata.json for every collection that the server's
 *		bson_collections() gives, all in one snapshot.
 *
 * The server decides everything about the documents and the selection:
 * which tables, under which names (the output plugin's own rules, so that
 * a dump and a change stream name the same tables alike), the query that
 * makes the documents (bson_document: _id first), and the metadata.  This
 * module only runs those queries and writes the files:
 *
 *	 - one file per collection, with every source of it (a partitioned
 *	   table's leaf partitions) in the server's order;
 *	 - with several jobs, connections in the leader's snapshot take the
 *	   parts in order, across collections; a large source (PostgreSQL 14
 *	   and later) is split into block ranges, read by TID Range Scans.
 *	   A part's rows are written in its turn (ChunkPlan in export.h), so
 *	   the file is byte for byte what one job writes;
 *	 - BATCH_TABLES collections at a time, each file written to a
 *	   temporary file and renamed into place once complete (output.h), the
 *	   metadata file after its .bson file.
 */
#ifndef DUMP_H
#define DUMP_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "progress.h"
#include "selection.h"

#define DUMP_MAX_JOBS	64

typedef struct DumpOptions
{
	const char *dir;			/* the dump's root: DIR/<db>/... */

	const Selection *sel;		/* bson_collections' arguments */
	unsigned int relation;		/* only the collection of this table (its
								 * OID; bson_collections' relation), 0: all */

	int			jobs;			/* connections, at most DUMP_MAX_JOBS */
	int			sync;			/* fsync every file and directory */
	int			force;			/* replace a non-empty <coll>.bson */
	size_t		max_size;		/* largest document */
	const char *max_size_option;	/* the option that sets it, for messages,
									 * or NULL */
	int			validate;		/* every element, not only the framing */
	int			verbose;		/* print each part's statement */
	int			node_rows;		/* a Citus node: its own shards' rows, as its
								 * change stream has them (bson_out.citus_rows) */
	Progress   *progress;		/* updated while the parts run, or NULL */
	/* called with the documents and bytes so far while the parts run, or NULL */
	void		(*tick) (void *arg, uint64_t docs, uint64_t bytes);
	void	   *tick_arg;
} DumpOptions;

typedef struct DumpStats
{
	int			collections;
	int			sources;
	uint64_t	docs;
	uint64_t	bytes;
} DumpStats;

/*
 * Write the dump.  'leader' is in the dump's REPEATABLE READ transaction,
 * whose snapshot 'snapshot' the other connections import; the caller ends
 * that transaction.  0, or -1 with err set: then no temporary file is left,
 * and the files already renamed into place stay (each is complete).
 */
extern int	dump_write(PGconn *leader, const char *snapshot, const DumpOptions *o,
					   DumpStats *stats, char *err, size_t errsize);

/*
 * The collections a dump of o->sel would write, each (db, coll) given to
 * check, in bson_collections' order, on conn (no snapshot: what the tables
 * are now).  0, or the first non-zero return of check, or -1 with err set.
 */
extern int	dump_names(PGconn *conn, const DumpOptions *o,
					   int (*check) (const char *db, const char *coll, void *arg), void *arg,
					   char *err, size_t errsize);

#endif							/* DUMP_H */
