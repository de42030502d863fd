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
 *	   PQgetCopyData, or a setup statement waiting for a lock, returns
 *	   promptly with the server's cancellation error.  Connections are
 *	   registered as soon as they are open, before any statement runs.
 * The main flow then notices the flag (it checks it after every setup step,
 * and every job checks it before its COPY and at every row; while jobs still
 * run it re-sends the cancel requests about once a second, in case one
 * arrived before its statement started), tidies up, and re-raises the signal
 * with its default action so that the caller sees "killed by SIGINT".  A
 * second signal, should that cleanup hang, removes the temporary files again
 * and kills the process at once; the handled signals are never blocked while
 * the handler runs (no sa_mask, SA_NODEFER), so that the second signal gets
 * through even while the first handler waits in PQcancel.
 *
 * A signal while a connection is being opened (PQconnectdbParams retries
 * its waits on EINTR) takes effect when the attempt ends; a second one
 * kills at once, and there is nothing to clean up yet.
 *
 * SIGKILL cannot be caught: a killed export leaves its temporary file,
 * named .FILE.tmp.PID, in the output directory; it is never mistaken for a
 * finished export and can be removed.
 *
 * Threads: the worker threads of --jobs and the background-sync helpers are
 * created with these signals blocked, so the handler always runs in the
 * main thread, and only the main thread registers and unregisters (slot
 * contents ordered against the 'used' flag by signal fences; the signals
 * blocked while a slot is cleared), so the handler never sees a slot
 * half-changed or freed.
 *
 * The commit (rename of the finished temporary file) runs with these
 * signals blocked, so that a signal cannot unlink a file that is being
 * renamed into place.
 */
#ifndef SIGNALS_H
#define SIGNALS_H

#include <signal.h>
#include <stdatomic.h>

#include <libpq-fe.h>

/*
 * The signal that interrupted us, or 0.  Set by the handler, read by every
 * thread (the jobs check it at every row): a lock-free atomic, which C11
 * allows in a signal handler, where a volatile sig_atomic_t would be a data
 * race between threads.
 */
extern atomic_int interrupted;

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
