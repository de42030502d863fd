/*
 * duplicate_ids.h
 *		Equal rows of a table whose _id is the whole row.
 *
 * With REPLICA IDENTITY FULL and no primary key, a row's _id is all of its
 * columns (table_model.h), and PostgreSQL lets such a table hold equal
 * rows, which MongoDB cannot hold as two documents: the _id_ index refuses
 * the second.  The exports (pg_bsonexport --table and --out-dir,
 * pg_bsonstream's first copy) therefore fail when such a table holds rows
 * whose _id values are equal, byte for byte as written; tables with a key
 * are never read for this.  The stream cannot check its past (the equal
 * rows may be long gone), so the output plugin warns instead.
 */
#ifndef DUPLICATE_IDS_H
#define DUPLICATE_IDS_H

#include "bson_compat.h"

/*
 * Raise an error (23505) if the rows of the sources (qualified names,
 * quoted), read as documents of a table whose _id is the whole row, hold
 * equal _id values.  One grouped pass over the rows, in the caller's
 * snapshot.  name: the table named in the message; schema: bson_out's,
 * quoted; only: read the sources without their children (FROM ONLY);
 * partition_root: bson_document's.
 */
extern void bson_check_duplicate_ids(const char *name, const char *schema,
									 char *const *sources, int nsources,
									 bool only, bool partition_root);

#endif							/* DUPLICATE_IDS_H */
