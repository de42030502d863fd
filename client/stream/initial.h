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

/*
 * The dump of o (into o->dir) under 'snapshot', on a connection of its own
 * made with copts (a replication connection's options: a plain one is
 * made); 0, or -1 with err set.  initial_copy's, and a table's copy again
 * (recopy.h).
 */
extern int	snapshot_dump(const ConnOpts *copts, const char *snapshot, DumpOptions *o,
						  DumpStats *stats, char *err, size_t errsize);

/*
 * An unfinished first copy is marked: DIR/initial/.incomplete, holding the
 * slot's name, is made (with O_EXCL, fsynced with its directory) before the
 * slot is created, and removed (the directory fsynced) only once every file
 * of the copy is durable.  A run that finds it streams nothing: the slot's
 * changes without the copy would lack rows.
 *
 * initial_check: 0, or -1 with err saying what to do when DIR holds an
 * unfinished copy.
 * initial_begin: the marker, in an empty DIR/initial (made if missing);
 * -1 with err set if another copy is unfinished there or DIR/initial holds
 * anything else (nothing is then changed).
 * initial_end: the copy is complete and durable: the marker removed.
 * initial_discard: a failed copy whose slot has been dropped: every file
 * and directory in DIR/initial removed (the marker made sure they were
 * this copy's), then the marker.
 */
extern int	initial_check(const char *dir, char *err, size_t errsize);
extern int	initial_begin(const char *dir, const char *slot, int sync,
						  char *err, size_t errsize);
extern int	initial_end(const char *dir, int sync, char *err, size_t errsize);
extern int	initial_discard(const char *dir, int sync, char *err, size_t errsize);

#endif							/* INITIAL_H */
