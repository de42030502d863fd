/*
 * recopy.h
 *		One table's collection copied again while the stream goes on, for a
 *		DDL that changed its documents (pg_bsonstream --to follows schema
 *		changes so): as PostgreSQL's logical replication copies a table added
 *		to a subscription, under the snapshot of a temporary slot made now.
 *		The table's changes that commit before the slot's consistent point
 *		are in the copy; those that commit at or after it are not, and the
 *		stream has them.
 */
#ifndef RECOPY_H
#define RECOPY_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "dump.h"

/*
 * The collection of table relid (a dump directory outdir/<db>/<coll>.bson
 * with its .metadata.json, as the first copy's: o's selection and names),
 * its consistent point into *at; copts are the stream's replication
 * connection's.  0, or -1 with err set (nothing of the slot is left).
 */
extern int	table_recopy(const ConnOpts *copts, DumpOptions *o, unsigned int relid,
						 const char *outdir, uint64_t *at, char *err, size_t errsize);

#endif							/* RECOPY_H */
