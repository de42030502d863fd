/*
 * initial.c
 *		pg_bsonstream's first copy under the slot's exported snapshot.
 */
#include "initial.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "signals.h"

int
initial_copy(const ConnOpts *copts, const char *snapshot, const char *dir,
			 DumpOptions *o, DumpStats *stats, char *err, size_t errsize)
{
	ConnOpts	query_opts = *copts;
	PGconn	   *conn;
	PGcancel   *cancel;
	int			cancel_slot = -1;
	char		sql[256];
	char		idir[4096];
	int			rc = -1;

	memset(stats, 0, sizeof(*stats));
	snprintf(idir, sizeof(idir), "%s/initial", dir);
	o->dir = idir;

	/*
	 * A plain connection of its own: the replication connection is busy
	 * with the slot, and a walsender takes no extended-protocol queries.
	 */
	query_opts.replication = NULL;
	conn = db_connect(&query_opts, err, errsize);
	if (conn == NULL)
		return -1;
	cancel = PQgetCancel(conn);
	if (cancel)
		cancel_slot = signals_register_cancel(cancel);
	snprintf(sql, sizeof(sql), "SET TRANSACTION SNAPSHOT '%s'", snapshot);
	if (db_begin_export(conn, 1, err, errsize) == 0 &&
		db_command(conn, sql, "could not import the slot's snapshot", err, errsize) == 0 &&
		dump_write(conn, snapshot, o, stats, err, errsize) == 0)
		rc = db_command(conn, "COMMIT", "could not end the initial copy's transaction",
						err, errsize);
	if (rc != 0 && strncmp(err, "interrupted", 11) == 0)
		snprintf(err, errsize, "interrupted during the initial copy");
	if (cancel_slot >= 0)
		signals_unregister_cancel(cancel_slot);
	if (cancel)
		PQfreeCancel(cancel);
	PQfinish(conn);
	return rc;
}
