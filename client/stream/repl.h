/*
 * repl.h
 *		The logical replication protocol, as pg_bsonstream speaks it.
 *
 * Everything that depends on the server's version is here: the syntax of
 * CREATE_REPLICATION_SLOT, and the hints that turn the server's errors into
 * something a user can act on.
 */
#ifndef REPL_H
#define REPL_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "db.h"
#include "selection.h"

typedef uint64_t Lsn;

#define LSN_FORMAT "%X/%08X"
#define LSN_ARGS(l) (unsigned) ((l) >> 32), (unsigned) (l)

extern int	lsn_parse(const char *s, Lsn *lsn);

/*
 * Create a logical slot with the bson_out plugin that exports a snapshot;
 * its name (valid until the next command on conn) into snapshot, the
 * slot's consistent point into start; a temporary slot lives as long as
 * conn.  While the server waits for the
 * transactions in progress (a prepared one may wait for a person), says so
 * after a few seconds, listing them through another connection made with
 * opts (conn's options); a signal cancels the command.
 */
extern int	repl_create_slot(PGconn *conn, const ConnOpts *opts, const char *slot,
							 int temporary, char *snapshot, size_t snapsize, Lsn *start,
							 char *err, size_t errsize);

/*
 * START_REPLICATION from 'start' (0: the slot's confirmed position) with the
 * plugin's options for the selection (each include-tables and
 * exclude-tables value an option of its own); the connection is then in
 * COPY BOTH mode.  0; or, with err set, -2 when the failure is one to
 * retry (repl_retryable), -1 when it is not (an invalidated or missing
 * slot, a plugin's error).
 */
/* The plugin's options that shape the events */
typedef struct ReplEventOptions
{
	const char *unmappable;		/* unmappable-values, NULL: its default */
	int			before_change;	/* full-document-before-change */
	int			schema_events;	/* schema-events: a DDL's "modify", "drop" */
	int			heartbeats;		/* heartbeats: a heartbeat message's event */
} ReplEventOptions;

extern int	repl_start(PGconn *conn, const char *slot, Lsn start, const Selection *sel,
					   const ReplEventOptions *events, int reconnecting,
					   char *err, size_t errsize);

/*
 * Is the failure that gave 'res' (NULL: none from the server) a lost
 * connection or a server going down, which a new connection may cure?
 * That is: no SQLSTATE (libpq's own error: the connection broke), class 08
 * (connection_exception), 57P01 admin_shutdown (a fast shutdown, or
 * pg_terminate_backend() of the walsender), 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up, shutting down); while 'reconnecting',
 * also 55006 object_in_use (the lost connection's walsender has not yet
 * released the slot).  Every other server ERROR is not: the same request
 * would fail the same way (55000 for an invalidated slot, a plugin's
 * error in decoding).
 */
extern int	repl_retryable(const PGresult *res, int reconnecting);

/* Standby status update: written = flushed = applied = 'flush'. */
extern int	repl_send_status(PGconn *conn, Lsn flush, int reply_requested);

/* Add our hint for a known server error (message already in err). */
extern void repl_hint(const char *slot, char *err, size_t errsize);

/* Big-endian integers of the protocol's messages. */
extern uint64_t repl_get64(const char *p);

#endif							/* REPL_H */
