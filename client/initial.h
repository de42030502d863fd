/*
 * initial.h
 *		pg_bsonstream's first copy: every selected table under the slot's
 *		exported snapshot, as a dump directory DIR/initial/<db>/<coll>.bson
 *		with its .metadata.json (dump.h), so that mongorestore DIR/initial
 *		loads it.
 *
 * The tables, their names and their documents are the server's
 * (bson_collections() with the stream's own selection and naming options):
 * the documents are those the change events carry as fullDocument, and a
 * table is in the copy exactly when its changes are in the stream.
 */
#ifndef INITIAL_H
#define INITIAL_H

#include <stddef.h>

#include "db.h"
#include "dump.h"

/*
 * Copy under 'snapshot' into DIR/initial with the selection and naming of
 * o (whose dir is set here); 0, or -1 with err set.
 */
extern int	initial_copy(const ConnOpts *copts, const char *snapshot, const char *dir,
						 DumpOptions *o, DumpStats *stats, char *err, size_t errsize);

#endif							/* INITIAL_H */
