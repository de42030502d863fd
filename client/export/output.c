/*
 * output.c
 *		Temporary file, fsync, rename, cleanup (see output.h).
 */
#define _GNU_SOURCE
#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "signals.h"

/* Big enough that write(2) calls are few, small enough to stay out of the way. */
#define OUT_BUFFER_SIZE		(1024 * 1024)

/*
 * Start the kernel's writeback of what has been written every this many
 * bytes (sync_file_range, asynchronous): the final fsync then finds little
 * left to write, instead of the whole file.
 */
#define WRITEBACK_STEP		(8 * 1024 * 1024)

/* A durable output asks for a background fdatasync every this many bytes. */
#define SYNC_STEP			(16 * 1024 * 1024)

static int
out_error(OutFile *o, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(o->errmsg, sizeof(o->errmsg), fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * strerror() may use a static buffer, and this file runs in the jobs'
 * threads too: strerror_r into the caller's buffer.  _GNU_SOURCE selects
 * glibc's strerror_r, which returns the message (maybe not in buf); the
 * _Generic also accepts the POSIX one, which returns 0 and fills buf.
 */
static inline const char *
strerror_gnu(char *msg, char *buf)
{
	(void) buf;
	return msg;
}

static inline const char *
strerror_posix(int rc, char *buf)
{
	return rc == 0 ? buf : "unknown error";
}

#define errstr(err, buf) \
	_Generic(strerror_r((err), (buf), sizeof(buf)), \
			 char *: strerror_gnu, \
			 default: strerror_posix)(strerror_r((err), (buf), sizeof(buf)), (buf))

const char *out_dir_option = "-o";

static const char *
out_name(const OutFile *o)
{
	return o->is_stdout ? "standard output" : o->in_place ? o->final_path : o->tmp_path;
}

/* what to add to an errno message to make it actionable (in buf, hence the macro) */
static const char *
errno_hint_in(int err, char *buf, size_t size)
{
	switch (err)
	{
		case ENOSPC:
		case EDQUOT:
			snprintf(buf, size, "; free some space or write to another directory with %s",
					 out_dir_option);
			return buf;
		case EPIPE:
			return " (the reading end of the pipe was closed)";
		case EACCES:
		case EPERM:
		case EROFS:
			snprintf(buf, size, "; choose a directory you can write to with %s", out_dir_option);
			return buf;
		default:
			return "";
	}
}

#define errno_hint(err, buf)	errno_hint_in((err), (buf), sizeof(buf))

char *
path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	char	   *d;

	if (slash == NULL)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	d = malloc(slash - path + 1);
	if (d)
	{
		memcpy(d, path, slash - path);
		d[slash - path] = '\0';
	}
	return d;
}

static const char *
path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int
init_buffer(OutFile *o)
{
	o->size = OUT_BUFFER_SIZE;
	o->buf = malloc(o->size);
	if (o->buf == NULL)
		return out_error(o, "out of memory");
	return 0;
}

/* The part of a file name a temporary name keeps (NAME_MAX is 255) */
#define TMP_BASE_MAX	200

static atomic_uint long_names;

/* Create and register the temporary file dir/.base.tmp.PID. */
static int
create_temp(OutFile *o, const char *dir, const char *base)
{
	size_t		n = strlen(dir) + strlen(base) + 64;

	o->tmp_path = malloc(n);
	if (o->tmp_path == NULL)
		return out_error(o, "out of memory");

	/*
	 * A name near NAME_MAX (a dump's long collection names reach 252 bytes)
	 * has no room for the temporary name's dot and suffix: its start, with
	 * a number that keeps it apart from the other long names of this run.
	 */
	if (strlen(base) > TMP_BASE_MAX)
		snprintf(o->tmp_path, n, "%s/.%.*s~%u.tmp.%ld", dir, TMP_BASE_MAX, base,
				 atomic_fetch_add(&long_names, 1), (long) getpid());
	else
		snprintf(o->tmp_path, n, "%s/.%s.tmp.%ld", dir, base, (long) getpid());

	/* O_EXCL: never write into someone else's file */
	o->fd = open(o->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (o->fd < 0)
	{
		int			err = errno;
		char		eb[256];
		char		hb[128];

		out_error(o, "could not create the temporary output file \"%s\": %s%s",
				  o->tmp_path, errstr(err, eb), errno_hint(err, hb));
		free(o->tmp_path);
		o->tmp_path = NULL;
		return -1;
	}
	o->slot = signals_register_file(o->tmp_path);
	if (o->slot < 0)
	{
		close(o->fd);
		unlink(o->tmp_path);
		o->fd = -1;
		return out_error(o, "too many temporary files");
	}
	return 0;
}

static void
out_reset(OutFile *o)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->slot = -1;
}

/* The helper thread: fdatasync whenever asked, until told to stop. */
static void *
syncer_main(void *arg)
{
	OutFile    *o = arg;

	/* signals are the main thread's business (signals.h): blocked at creation */
	pthread_mutex_lock(&o->sync_lock);
	for (;;)
	{
		while (!o->sync_pending && !o->sync_stop)
			pthread_cond_wait(&o->sync_cond, &o->sync_lock);
		if (o->sync_stop)
			break;
		o->sync_pending = 0;
		o->sync_busy = 1;
		pthread_mutex_unlock(&o->sync_lock);
		if (fdatasync(o->fd) != 0 && o->sync_errno == 0)
			o->sync_errno = errno;
		pthread_mutex_lock(&o->sync_lock);
		o->sync_busy = 0;
	}
	pthread_mutex_unlock(&o->sync_lock);
	return NULL;
}

/* Ask for a background fdatasync, unless one is already pending or running. */
static void
request_sync(OutFile *o)
{
	if (!o->syncer_started)
	{
		sigset_t	all;
		sigset_t	old;
		int			rc;

		pthread_mutex_init(&o->sync_lock, NULL);
		pthread_cond_init(&o->sync_cond, NULL);

		/*
		 * Created with every signal blocked, so that it never runs the
		 * handler, not even before its first instruction (the creating
		 * thread may be the main thread, whose signals are not blocked).
		 */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&o->syncer, NULL, syncer_main, o);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rc != 0)
		{
			/* no helper: the final fsync does all the work, as without one */
			o->durable = 0;
			pthread_mutex_destroy(&o->sync_lock);
			pthread_cond_destroy(&o->sync_cond);
			return;
		}
		o->syncer_started = 1;
	}
	pthread_mutex_lock(&o->sync_lock);
	if (!o->sync_busy)
	{
		o->sync_pending = 1;
		pthread_cond_signal(&o->sync_cond);
	}
	pthread_mutex_unlock(&o->sync_lock);
}

/* Stop and join the helper thread, if any. */
static void
stop_syncer(OutFile *o)
{
	if (!o->syncer_started)
		return;
	pthread_mutex_lock(&o->sync_lock);
	o->sync_stop = 1;
	pthread_cond_signal(&o->sync_cond);
	pthread_mutex_unlock(&o->sync_lock);
	pthread_join(o->syncer, NULL);
	pthread_mutex_destroy(&o->sync_lock);
	pthread_cond_destroy(&o->sync_cond);
	o->syncer_started = 0;
}

/*
 * An existing file that is not a regular file, written where it is (see
 * output.h): renaming a temporary file over it would replace the FIFO or
 * the device node by a regular file, and as root -o /dev/null --force would
 * replace the system's /dev/null.
 */
static int
open_in_place(OutFile *o, const char *path, const struct stat *st, int force)
{
	struct stat now;
	char		eb[256];

	if (S_ISSOCK(st->st_mode))
		return out_error(o, "output \"%s\" is a socket, which cannot be written as a file; give "
						 "a file name to -o", path);
	if (S_ISBLK(st->st_mode) && !force)
		return out_error(o, "output \"%s\" is a block device; use --force to write over what "
						 "it holds", path);
	o->final_path = strdup(path);
	if (o->final_path == NULL)
		return out_error(o, "out of memory");

	/* a FIFO's open waits for a reader; a signal ends the wait */
	do
		o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	while (o->fd < 0 && errno == EINTR && !interrupted);
	if (o->fd < 0)
	{
		int			err = errno;

		if (err == EINTR)
			return out_error(o, "interrupted");
		return out_error(o, "could not open \"%s\" for writing: %s", path, errstr(err, eb));
	}

	/* a regular file put there meanwhile would be overwritten in place, and not atomically */
	if (fstat(o->fd, &now) != 0 || S_ISREG(now.st_mode))
	{
		close(o->fd);
		o->fd = -1;
		return out_error(o, "output \"%s\" was replaced by a regular file while it was being "
						 "opened; run the export again", path);
	}
	o->in_place = 1;
	return 0;
}

int
out_open(OutFile *o, const char *path, int force, int durable)
{
	struct stat st;
	char	   *dir;
	int			rc;

	out_reset(o);
	if (init_buffer(o) != 0)
		return -1;
	if (strcmp(path, "-") == 0)
	{
		o->is_stdout = 1;
		o->fd = STDOUT_FILENO;
		return 0;
	}

	if (stat(path, &st) == 0)
	{
		if (S_ISDIR(st.st_mode))
			return out_error(o, "output \"%s\" is a directory; give a file name to -o", path);
		if (!S_ISREG(st.st_mode))
			return open_in_place(o, path, &st, force);
		if (!force)
			return out_error(o, "output file \"%s\" already exists; use --force to overwrite it", path);
	}
	o->final_path = strdup(path);
	dir = path_dirname(path);
	if (o->final_path == NULL || dir == NULL)
	{
		free(dir);
		return out_error(o, "out of memory");
	}
	rc = create_temp(o, dir, path_basename(path));
	free(dir);
	o->durable = durable;
	return rc;
}

/* write(2) all of it, across short writes and signals */
static int
write_all(OutFile *o, const char *p, size_t len)
{
	while (len > 0)
	{
		ssize_t		w = write(o->fd, p, len);

		if (w < 0)
		{
			int			err = errno;
			char		eb[256];
			char		hb[128];

			if (err == EINTR && !interrupted)
				continue;
			if (err == EINTR)
				return out_error(o, "interrupted");
			return out_error(o, "could not write to %s%s%s: %s%s",
							 o->is_stdout ? "" : "\"", out_name(o),
							 o->is_stdout ? "" : "\"", errstr(err, eb), errno_hint(err, hb));
		}
		p += w;
		len -= (size_t) w;
		o->flushed += (uint64_t) w;
	}
	return 0;
}

static int
flush_buffer(OutFile *o)
{
	if (o->used == 0)
		return 0;
	if (write_all(o, o->buf, o->used) != 0)
		return -1;
	o->used = 0;

	/*
	 * A durable output: start writing back what is complete (a hint,
	 * errors come with fsync), and make it durable in the background every
	 * SYNC_STEP bytes (see output.h).
	 */
	if (o->durable && o->flushed - o->writeback >= WRITEBACK_STEP)
	{
		(void) sync_file_range(o->fd, (off_t) o->writeback,
							   (off_t) (o->flushed - o->writeback),
							   SYNC_FILE_RANGE_WRITE);
		if (o->flushed / SYNC_STEP != o->writeback / SYNC_STEP)
			request_sync(o);
		o->writeback = o->flushed;
	}
	return 0;
}

int
out_write(OutFile *o, const void *data, size_t len)
{
	o->bytes += len;
	if (o->used + len > o->size)
	{
		if (flush_buffer(o) != 0)
			return -1;
		if (len >= o->size)
			return write_all(o, data, len);
	}
	memcpy(o->buf + o->used, data, len);
	o->used += len;
	return 0;
}

int
out_truncate(OutFile *o, uint64_t size)
{
	char		eb[256];

	if (size >= o->flushed)
	{
		/* all of the cut is still in the buffer */
		o->used = (size_t) (size - o->flushed);
		o->bytes = size;
		return 0;
	}
	/* a background fdatasync meanwhile syncs more or less: the final one decides */
	if (o->is_stdout || o->in_place || ftruncate(o->fd, (off_t) size) != 0 ||
		lseek(o->fd, (off_t) size, SEEK_SET) < 0)
		return out_error(o, "could not truncate \"%s\": %s", out_name(o),
						 o->is_stdout ? "it is standard output" :
						 o->in_place ? "it is not a regular file" : errstr(errno, eb));
	o->used = 0;
	o->bytes = o->flushed = size;
	if (o->writeback > size)
		o->writeback = size;
	return 0;
}

int
out_flush(OutFile *o, int sync)
{
	char		eb[256];
	char		hb[128];

	if (flush_buffer(o) != 0)
		return -1;
	if (!sync)
		return 0;
	stop_syncer(o);
	if (o->sync_errno != 0)
		return out_error(o, "could not fdatasync \"%s\": %s%s", o->tmp_path,
						 errstr(o->sync_errno, eb), errno_hint(o->sync_errno, hb));
	if (o->is_stdout)
	{
		struct stat st;

		/* a pipe or terminal has nothing to sync; a redirected file has */
		if (fstat(o->fd, &st) != 0 || !S_ISREG(st.st_mode))
			return 0;
		if (fsync(o->fd) != 0 && errno != EINVAL && errno != EROFS)
			return out_error(o, "could not fsync standard output: %s", errstr(errno, eb));
		return 0;
	}
	if (o->in_place)
	{
		/* a FIFO or /dev/null cannot be synced (EINVAL); a block device can */
		if (fsync(o->fd) != 0 && errno != EINVAL && errno != EROFS)
			return out_error(o, "could not fsync \"%s\": %s", o->final_path, errstr(errno, eb));
		return 0;
	}
	if (fsync(o->fd) != 0)
	{
		int			err = errno;

		return out_error(o, "could not fsync \"%s\": %s%s", o->tmp_path,
						 errstr(err, eb), errno_hint(err, hb));
	}
	return 0;
}

/* fsync the directory, so that the rename itself survives a crash */
static int
sync_dir(OutFile *o)
{
	char	   *dir = path_dirname(o->final_path);
	int			fd;
	int			rc = 0;
	char		eb[256];

	if (dir == NULL)
		return out_error(o, "out of memory");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
	{
		/* the rename is then not known to be durable: say so */
		int			err = errno;

		rc = out_error(o, "\"%s\" is complete, but its directory \"%s\" could not be opened "
					   "to fsync the rename: %s", o->final_path, dir, errstr(err, eb));
	}
	else
	{
		/* some file systems cannot sync a directory: nothing more to do there */
		if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
			rc = out_error(o, "\"%s\" is complete, but fsync of its directory failed: %s",
						   o->final_path, errstr(errno, eb));
		close(fd);
	}
	free(dir);
	return rc;
}

int
out_commit(OutFile *o, int force, int sync)
{
	int			rc;
	char		eb[256];

	if (o->is_stdout)
		return 0;
	stop_syncer(o);
	if (close(o->fd) != 0)
	{
		o->fd = -1;
		return out_error(o, "could not close \"%s\": %s", out_name(o), errstr(errno, eb));
	}
	o->fd = -1;
	if (o->in_place)
	{
		/* written where it is: nothing to rename */
		o->committed = 1;
		return 0;
	}

	if (force)
		rc = rename(o->tmp_path, o->final_path);
	else
	{
		rc = renameat2(AT_FDCWD, o->tmp_path, AT_FDCWD, o->final_path, RENAME_NOREPLACE);
		if (rc != 0 && (errno == EINVAL || errno == ENOSYS))
		{
			/* no RENAME_NOREPLACE here: link(2) refuses an existing target too */
			rc = link(o->tmp_path, o->final_path);
			if (rc == 0)
				(void) unlink(o->tmp_path);
		}
	}
	if (rc != 0)
	{
		int			err = errno;

		if (err == EEXIST)
			return out_error(o, "output file \"%s\" appeared during the export; not overwritten "
							 "(use --force to overwrite it)", o->final_path);
		return out_error(o, "could not rename \"%s\" to \"%s\": %s",
						 o->tmp_path, o->final_path, errstr(err, eb));
	}
	o->committed = 1;
	signals_unregister_file(o->slot);
	o->slot = -1;
	free(o->tmp_path);
	o->tmp_path = NULL;
	return sync ? sync_dir(o) : 0;
}

void
out_abort(OutFile *o)
{
	stop_syncer(o);
	if (o->fd >= 0 && !o->is_stdout)
		close(o->fd);
	o->fd = -1;
	if (o->tmp_path)
	{
		(void) unlink(o->tmp_path);
		signals_unregister_file(o->slot);
		o->slot = -1;
		free(o->tmp_path);
		o->tmp_path = NULL;
	}
}

void
out_free(OutFile *o)
{
	free(o->buf);
	free(o->final_path);
	free(o->tmp_path);
	o->buf = NULL;
	o->final_path = NULL;
	o->tmp_path = NULL;
}

int
out_remove_stale(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	int			removed = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
	{
		const char *t;
		long		pid;
		char		path[4400];

		/* the temporary names above: .NAME.tmp.PID */
		if (e->d_name[0] != '.' || (t = strstr(e->d_name, ".tmp.")) == NULL)
			continue;
		/* EPERM: the process exists, another user's */
		pid = strtol(t + 5, NULL, 10);
		if (pid <= 0 || (pid != getpid() && (kill((pid_t) pid, 0) == 0 || errno == EPERM)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
