/*
 * dump_name.h
 *		The file names of a dump directory, as mongodump writes them and
 *		mongorestore reads them back.
 *
 * mongorestore takes every directory of the dump's root for a database of
 * that name, and in it <name>.bson and <name>.metadata.json for collection
 * <name> URL-query-unescaped.  So the collection's name is escaped as
 * mongodump escapes it (Go's url.QueryEscape): letters, digits and "-_.~"
 * as they are, a blank as "+", every other byte as "%XX".  An escaped name
 * longer than 238 bytes (so that <name>.metadata.json.gz stays within 255)
 * becomes its first 208 bytes, "%24" and the unpadded base64url SHA-1 of
 * the collection's name: 238 bytes, which mongorestore recognizes (a "%24"
 * in a name of exactly 238 bytes) and then takes the name from the
 * metadata file's collectionName.  The database's name is not escaped:
 * mongorestore refuses a directory whose name is longer than 63 bytes or
 * has one of / \ . " $, a blank or NUL.
 */
#ifndef DUMP_NAME_H
#define DUMP_NAME_H

#include <stddef.h>

/* A collection's two files: DIR/<db>/<file name><suffix> */
#define DUMP_DATA_SUFFIX	".bson"
#define DUMP_META_SUFFIX	".metadata.json"

/* One collection of a dump directory, as read back */
typedef struct DumpFile
{
	char		db[256];		/* the database's directory */
	char		data_path[4800];	/* DIR/<db>/<file name>.bson */
	char		meta_path[4800];	/* DIR/<db>/<file name>.metadata.json */
} DumpFile;

/*
 * The collections of the dump directory dir, each one a metadata file
 * (the collection's name is in it): malloc'ed into *files, or none if dir
 * is missing.  0, or -1 with errno set.
 */
extern int	dump_list(const char *dir, DumpFile **files, int *nfiles);

/* The longest escaped collection name, and where a longer one is cut */
#define DUMP_NAME_MAX		238
#define DUMP_NAME_CUT		208

/* The file name of a collection, without its .bson suffix; malloc'ed */
extern char *dump_file_name(const char *coll);

/*
 * NULL if mongorestore takes db for a database directory, else why not
 * (a constant string).
 */
extern const char *dump_db_name_problem(const char *db);

#endif							/* DUMP_NAME_H */
