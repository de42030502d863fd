/*
 * signals.h
 *		Ctrl-C and friends: what must happen when the export is interrupted.
 *
 * On SIGINT, SIGTERM, SIGHUP or SIGQUIT the handler, in this order:
 *	 - sets the 'interrupted' flag, which every loop checks;
 *	 - unlinks every registered temporary file (unlink is async-signal-safe,
 *	   and the paths were fully built before they were registered), so that
 *	   nothing is left behind even if the process never gets back to its own
 *	   cleanup, e.g. because a connection hangs;
 *	 - sends a cancel request for every registered connection (PQcancel is
 *	   documented as safe to call from a signal handler), so that a blocked
 *	   PQgetCopyData returns promptly with the server's cancellation error.
 * The main flow then notices the flag, tidies up, and re-raises the signal
 * with its default action so that the caller sees "killed by SIGINT".  A
 * second signal, should that cleanup hang, kills the process at once.
 *
 * SIGKILL cannot be caught: a killed export leaves its temporary file,
 * named .FILE.tmp.PID (and .FILE.tmp.PID.N for the parts of --jobs), in the
 * output directory; it is never mistaken for a finished export and can be
 * removed.
 *
 * Threads: the worker threads of --jobs run with these signals blocked, so
 * the handler always runs in the main thread, and only the main thread
 * registers and unregisters (with the signals blocked while a slot
 * changes), so the handler never sees a slot half-changed or freed.
 *
 * The commit (rename of the finished temporary file) runs with these
 * signals blocked, so that a signal cannot unlink a file that is being
 * renamed into place.
 */
#ifndef SIGNALS_H
#define SIGNALS_H

#include <signal.h>

#include <libpq-fe.h>

/* the signal that interrupted us, or 0 */
extern volatile sig_atomic_t interrupted;

extern void signals_install(void);

/* Temporary files to remove on a signal; register returns a slot or -1. */
extern int	signals_register_file(const char *path);
extern void signals_unregister_file(int slot);

/* Connections to cancel on a signal; returns a slot or -1. */
extern int	signals_register_cancel(PGcancel *cancel);
extern void signals_unregister_cancel(int slot);

/* Block or unblock the signals above in the calling thread. */
extern void signals_block(void);
extern void signals_unblock(void);

/* After the cleanup: die of the signal that interrupted us. */
extern void signals_reraise(void);

#endif							/* SIGNALS_H */
