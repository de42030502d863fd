/*
 * initial.h
 *		pg_bsonstream's first copy: every selected table under the slot's
 *		exported snapshot, one DIR/initial/<ns>.bson file each.
 *
 * The documents are the change events' fullDocument: row_to_bson of the
 * row with _id (the replica identity's value, or a document of its columns
 * in the key's order when there are several) first, and a column named _id
 * left out where the table has a key, exactly as the output plugin writes
 * them.  Tables are listed as the plugin names them: one file per leaf
 * table (a partition under its own name), none for a partitioned parent.
 */
#ifndef INITIAL_H
#define INITIAL_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"

typedef struct InitialStats
{
	int			tables;
	uint64_t	docs;
	uint64_t	bytes;
} InitialStats;

#define MAX_COPY_JOBS	64

/*
 * 'jobs' connections (at most MAX_COPY_JOBS), all in the snapshot, copy the
 * tables in parallel; a table of 2048 blocks (16 MB) or more in parts, by
 * block ranges, several connections at once (PostgreSQL 14 and later).
 */
extern int	initial_copy(const ConnOpts *copts, const char *snapshot, const char *dir,
						 const char *const *include, int ninclude, int jobs, int sync,
						 InitialStats *stats, char *err, size_t errsize);

/* Does "schema.table" match one of the include-tables patterns (none: all)? */
extern int	table_selected(const char *name, const char *const *include, int ninclude);

#endif							/* INITIAL_H */
