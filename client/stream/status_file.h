/*
 * status_file.h
 *		pg_bsonstream's progress in a machine-readable form: DIR/status.json.
 *
 * The status line is for a terminal only; a service has none.  So the same
 * figures (events received, the server's WAL position and the lag behind
 * it, and with --to what is applied, the rate, the local buffer and the
 * lag of MongoDB) are written, at most once a second, into DIR/status.json:
 * one JSON object, replaced whole (written beside it, then renamed), so a
 * reader never sees half of it.  Not fsynced: it is a view, not state.
 */
#ifndef STATUS_FILE_H
#define STATUS_FILE_H

#include <stdint.h>

typedef struct StreamStatus
{
	const char *slot;
	const char *phase;			/* "copying", "streaming", "reconnecting", "exited" */
	uint64_t	copied_docs;	/* "copying": the first copy's documents so far */
	uint64_t	copied_bytes;
	uint64_t	events;			/* received in this run */
	uint64_t	bytes;
	uint64_t	segments;
	uint64_t	server_lsn;		/* the server's WAL end, as last told */
	uint64_t	confirmed_lsn;
	double		lag_seconds;	/* since the confirmed position was that far */
	int			to;				/* the rest is about --to */
	const char *state;			/* what the applier waits for, "" applying */
	uint64_t	applied;
	double		applied_per_second;
	uint64_t	refused;
	const char *token;			/* the last applied event's */
	int64_t		wall_ms;		/* its commit time, 0 if none */
	uint64_t	buffer_bytes;	/* segments not yet applied */
	double		apply_lag_seconds;
	int			caught_up;
} StreamStatus;

/* Replace DIR/status.json with s; -1 (errno set) if it could not be written */
extern int	status_file_write(const char *dir, const StreamStatus *s);

#endif							/* STATUS_FILE_H */
