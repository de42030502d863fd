/*
 * recopy.c
 *		One table's collection copied again under a temporary slot's
 *		snapshot: see recopy.h.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "initial.h"
#include "recopy.h"
#include "repl.h"

int
table_recopy(const ConnOpts *copts, DumpOptions *o, unsigned int relid,
			 const char *outdir, uint64_t *at, char *err, size_t errsize)
{
	PGconn	   *repl = db_connect(copts, err, errsize);
	char		slot[64];
	char		snapshot[256];
	Lsn			start;
	DumpStats	stats;
	int			rc;

	if (repl == NULL)
		return -1;
	/*
	 * One a process at a time, the server drops it with the connection; the
	 * time too, for a killed run's pid taken again before the server has
	 * seen its connection go
	 */
	snprintf(slot, sizeof(slot), "pg_bsonstream_recopy_%d_%ld", (int) getpid(), (long) time(NULL));
	rc = repl_create_slot(repl, copts, slot, 1, snapshot, sizeof(snapshot), &start,
						  err, errsize);
	if (rc == 0)
	{
		o->dir = outdir;
		o->relation = relid;
		rc = snapshot_dump(copts, snapshot, o, &stats, err, errsize);
	}
	PQfinish(repl);
	if (rc == 0)
		*at = start;
	return rc;
}
