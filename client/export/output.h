/*
 * output.h
 *		Writing an output file so that it is never seen half-written.
 *
 * A file output is written to a temporary file in the target's directory
 * (.NAME.tmp.PID), so that the final rename(2) stays within one file system
 * and is atomic.  out_finish
 * flushes and fsyncs it; out_commit renames it into place and fsyncs the
 * directory, so that after a crash there is either the complete old state
 * or the complete new file.  On any error out_abort removes it.  The
 * temporary path is registered with signals.c, which removes it on Ctrl-C.
 *
 * An existing target is refused unless 'force' is set, both when the
 * output is opened (early, before any work) and again at the rename, which
 * then uses renameat2(RENAME_NOREPLACE), so that a file that appeared in the
 * meantime is not overwritten either.
 *
 * "-" is standard output: written directly (it cannot be renamed), fsynced
 * when it is a regular file.  So is an existing file that is not a regular
 * file (a FIFO, a character device such as /dev/null, a block device): it
 * is opened and written in place, never renamed over, which would replace
 * it; a FIFO or character device without 'force' (nothing on it is
 * overwritten), a block device only with it.  A socket is refused.
 *
 * Syncing as we go: on this kind of storage the cost of the final fsync
 * grows with the data not yet made durable (about 0.13 s for 90 MB on the
 * benchmark's virtual disk, even when the kernel has already written the
 * pages back).  So a durable output, every SYNC_STEP bytes, asks a helper
 * thread to fdatasync what has been written so far, while the export goes
 * on; the final fsync then only has the tail left.  An error of such a
 * background fdatasync is kept and reported by out_flush (after an fsync
 * error, Linux may not report it a second time).
 */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct OutFile
{
	int			fd;				/* -1 when closed */
	int			is_stdout;
	int			in_place;		/* an existing non-regular file, written directly */
	char	   *final_path;		/* NULL for standard output */
	char	   *tmp_path;		/* NULL for standard output and in place */
	int			slot;			/* signals.c registration, -1 if none */
	int			committed;		/* renamed to final_path by out_commit */

	char	   *buf;			/* write buffer */
	size_t		used;
	size_t		size;

	uint64_t	bytes;			/* bytes accepted so far */
	uint64_t	flushed;		/* bytes written to the file so far */
	uint64_t	writeback;		/* bytes handed to early writeback so far */

	/* background fdatasync (durable outputs only, see above) */
	int			durable;
	int			syncer_started;
	pthread_t	syncer;
	pthread_mutex_t sync_lock;
	pthread_cond_t sync_cond;
	int			sync_pending;	/* a request not yet taken */
	int			sync_busy;		/* an fdatasync is running */
	int			sync_stop;
	int			sync_errno;		/* first error of a background fdatasync */

	char		errmsg[1024];
} OutFile;

/*
 * Open an output.  path "-" is standard output.  For a file, a temporary
 * file is created next to it.  'durable': it will be fsynced at the end, so
 * sync it as we go.  Returns 0, or -1 with errmsg set (the OutFile then
 * needs no cleanup beyond out_free).
 */
extern int	out_open(OutFile *o, const char *path, int force, int durable);

extern int	out_write(OutFile *o, const void *data, size_t len);

/* Flush; then fsync if 'sync'.  The file stays open and uncommitted. */
extern int	out_flush(OutFile *o, int sync);

/* Keep only the first size bytes written (a file, not standard output). */
extern int	out_truncate(OutFile *o, uint64_t size);

/* Rename the finished temporary file to its final name, then fsync the
 * directory if 'sync'; closes it.  'committed' is set once the rename is
 * done, even if the directory's fsync then fails. */
extern int	out_commit(OutFile *o, int force, int sync);

/* Close and remove the temporary file (no-op for standard output). */
extern void out_abort(OutFile *o);

extern void out_free(OutFile *o);

/*
 * The option that names the outputs' directory, for the hints of a full
 * disk or a directory that cannot be written: "-o" unless set
 * (pg_bsonexport --out-dir sets "--out-dir").
 */
extern const char *out_dir_option;

/*
 * Remove the temporary files of dead processes (what a SIGKILL leaves) in
 * dir; how many.  A process that exists but belongs to another user
 * (kill(2) says EPERM) is alive: its files stay.
 */
extern int	out_remove_stale(const char *dir);

/* The directory part of path ("." if none); malloc'ed. */
extern char *path_dirname(const char *path);

#endif							/* OUTPUT_H */
