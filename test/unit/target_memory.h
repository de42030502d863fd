/*
 * target_memory.h
 *		The applier's target in memory (target_memory.c), for test_applier.
 */
#ifndef TARGET_MEMORY_H
#define TARGET_MEMORY_H

#include <bson/bson.h>

#include "target.h"

#define MEM_MAX_COLLS 32

typedef struct MemColl
{
	char		ns[700];
	bson_t	  **docs;
	int			n;
	int			max;
	char		unique[4][64];	/* unique indexes: one field each (_id's always) */
	int			nunique;
} MemColl;

/* What outlives one run of the applier: the server's data, and its faults */
typedef struct MemStore
{
	MemColl		colls[MEM_MAX_COLLS];
	int			ncolls;

	long		statements;		/* write statements seen (each one of a call) */
	long		calls;			/* calls seen */
	long		refusals;		/* statements refused */

	long		cut_at;			/* the server dies at this statement (0: never) */
	long		lose_at;		/* the connection is lost at this statement (0: never) */
	int			cut_applied;	/* ... having applied it */
	int			dead;			/* every call: RETRY, nothing changes */
	const char *fault_coll;		/* the faults below: only in this collection (NULL: any) */
	int			transient_calls;	/* this many write calls answer a transient code ... */
	int			transient_applies;	/* ... after applying this many of their statements */
	int			write_concern_fatal;	/* every write: a write concern never met */
	int			ferretdb;		/* buildInfo says FerretDB */
	const char *refused_value;	/* a string value it refuses (code 2) */
	const char *closes_at_value;	/* a string value it closes the connection at */
} MemStore;

typedef struct MemTarget
{
	Target		base;
	MemStore   *store;
} MemTarget;

extern MemStore *mem_store_new(void);
extern void mem_store_free(MemStore *s);
/* a connection to the store (its server alive again) */
extern Target *mem_target(MemStore *s);
extern MemColl *mem_coll(MemStore *s, const char *db, const char *coll);
extern void mem_unique(MemStore *s, const char *db, const char *coll, const char *field);
/* db.coll as relaxed Extended JSON, sorted: malloc'ed */
extern char *mem_dump(MemStore *s, const char *db, const char *coll);

#endif							/* TARGET_MEMORY_H */
