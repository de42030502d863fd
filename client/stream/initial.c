/*
 * initial.c
 *		pg_bsonstream's first copy under the slot's exported snapshot.
 */
#define _GNU_SOURCE				/* nftw */
#include "initial.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "signals.h"

/* DIR/initial/INITIAL_MARKER: the copy there is unfinished; it holds the slot's name */
#define INITIAL_MARKER	".incomplete"

/* fsync a directory, so that an entry made or removed in it survives a crash */
static int
sync_dir(const char *path)
{
	int			fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int			rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

/* The slot named in an existing marker ("" if unreadable); 0 if there is none. */
static int
read_marker(const char *idir, char *slot, size_t size)
{
	char		path[4200];
	FILE	   *f;
	size_t		n;

	snprintf(path, sizeof(path), "%s/" INITIAL_MARKER, idir);
	f = fopen(path, "r");
	if (f == NULL)
		return errno == ENOENT ? 0 : 1;
	n = fread(slot, 1, size - 1, f);
	fclose(f);
	slot[n] = '\0';
	slot[strcspn(slot, "\n")] = '\0';
	return 1;
}

static void
unfinished(const char *dir, const char *slot, char *err, size_t errsize)
{
	/*
	 * The marker is written before the slot is created: one without a name
	 * is of a run killed before it wrote the name, so before any slot.
	 */
	if (slot[0] == '\0')
	{
		snprintf(err, errsize,
				 "the first copy in \"%s/initial\" is unfinished: the run that made it with "
				 "--create-slot --initial-copy was stopped before it created its slot, or is "
				 "still starting\n"
				 "detail: A stream without its complete first copy would lack the rows that were "
				 "never copied, so none is started.\n"
				 "hint: Remove the directory \"%s/initial\" and start again with --create-slot "
				 "--initial-copy.", dir, dir);
		return;
	}
	snprintf(err, errsize,
			 "the first copy in \"%s/initial\" is unfinished: the run that made it with "
			 "--create-slot --initial-copy --slot \"%s\" was stopped before its end, or is "
			 "still copying\n"
			 "detail: A stream without its complete first copy would lack the rows that were "
			 "never copied, so none is started.\n"
			 "hint: Drop the slot (SELECT pg_drop_replication_slot('%s'); if it is gone "
			 "already, skip this), remove the directory \"%s/initial\", and start again with "
			 "--create-slot --initial-copy.", dir, slot, slot, dir);
}

int
initial_check(const char *dir, char *err, size_t errsize)
{
	char		idir[4096];
	char		slot[256];

	snprintf(idir, sizeof(idir), "%s/initial", dir);
	if (read_marker(idir, slot, sizeof(slot)) == 0)
		return 0;
	unfinished(dir, slot, err, errsize);
	return -1;
}

int
initial_begin(const char *dir, const char *slot, int sync, char *err, size_t errsize)
{
	char		idir[4096];
	char		path[4200];
	char		other[256];
	DIR		   *d;
	struct dirent *e;
	const char *found = NULL;
	int			fd;
	size_t		len = strlen(slot);

	snprintf(idir, sizeof(idir), "%s/initial", dir);
	if (mkdir(idir, 0700) == 0)
	{
		if (sync)
			(void) sync_dir(dir);
	}
	else if (errno != EEXIST)
	{
		snprintf(err, errsize, "could not create directory \"%s\": %s", idir, strerror(errno));
		return -1;
	}

	/* made with O_EXCL: one copy at a time, and the marker is ours to remove */
	snprintf(path, sizeof(path), "%s/" INITIAL_MARKER, idir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
	{
		if (read_marker(idir, other, sizeof(other)) == 0)
			other[0] = '\0';
		unfinished(dir, other, err, errsize);
		return -1;
	}
	if (fd < 0 || write(fd, slot, len) != (ssize_t) len || write(fd, "\n", 1) != 1 ||
		(sync && fsync(fd) != 0))
	{
		snprintf(err, errsize, "could not write \"%s\": %s", path, strerror(errno));
		if (fd >= 0)
		{
			close(fd);
			unlink(path);
		}
		return -1;
	}
	close(fd);
	if (sync && sync_dir(idir) != 0)
	{
		snprintf(err, errsize, "could not fsync directory \"%s\": %s", idir, strerror(errno));
		(void) initial_end(dir, sync, NULL, 0);
		return -1;
	}

	/* another copy's files are never replaced: the copy goes into an empty directory */
	d = opendir(idir);
	if (d == NULL)
	{
		snprintf(err, errsize, "could not open directory \"%s\": %s", idir, strerror(errno));
		(void) initial_end(dir, sync, NULL, 0);
		return -1;
	}
	while (found == NULL && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
			strcmp(e->d_name, INITIAL_MARKER) != 0)
			found = e->d_name;
	if (found)
		snprintf(err, errsize,
				 "\"%s\" is not empty (it holds \"%s\"): a first copy is written into an empty "
				 "directory, never over another copy's files\n"
				 "hint: Remove \"%s\" if the copy there is no longer needed, or give another -o DIR.",
				 idir, found, idir);
	closedir(d);
	if (found)
	{
		(void) initial_end(dir, sync, NULL, 0);
		return -1;
	}
	return 0;
}

int
initial_end(const char *dir, int sync, char *err, size_t errsize)
{
	char		idir[4096];
	char		path[4200];

	snprintf(idir, sizeof(idir), "%s/initial", dir);
	snprintf(path, sizeof(path), "%s/" INITIAL_MARKER, idir);
	if (unlink(path) != 0 || (sync && sync_dir(idir) != 0))
	{
		if (err)
			snprintf(err, errsize, "could not remove \"%s\": %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* nftw: everything below DIR/initial but the marker, children first */
static int
discard_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void) st;
	if (ftw->level == 0)
		return 0;
	if (ftw->level == 1 && strcmp(path + ftw->base, INITIAL_MARKER) == 0)
		return 0;
	if (type == FTW_DP)
		return rmdir(path) == 0 ? 0 : -1;
	if (unlink(path) != 0)
		return -1;
	return 0;
}

int
initial_discard(const char *dir, int sync, char *err, size_t errsize)
{
	char		idir[4096];

	snprintf(idir, sizeof(idir), "%s/initial", dir);
	if (nftw(idir, discard_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
	{
		snprintf(err, errsize, "could not remove the files of the copy in \"%s\": %s",
				 idir, strerror(errno));
		return -1;
	}
	if (sync)
		(void) sync_dir(idir);
	return initial_end(dir, sync, err, errsize);
}

int
initial_copy(const ConnOpts *copts, const char *snapshot, const char *dir,
			 DumpOptions *o, DumpStats *stats, char *err, size_t errsize)
{
	char		idir[4096];
	int			rc;

	snprintf(idir, sizeof(idir), "%s/initial", dir);
	o->dir = idir;
	rc = snapshot_dump(copts, snapshot, o, stats, err, errsize);
	if (rc != 0 && strncmp(err, "interrupted", 11) == 0)
		snprintf(err, errsize, "interrupted during the initial copy");
	return rc;
}

int
snapshot_dump(const ConnOpts *copts, const char *snapshot, DumpOptions *o,
			  DumpStats *stats, char *err, size_t errsize)
{
	ConnOpts	query_opts = *copts;
	PGconn	   *conn;
	PGcancel   *cancel;
	int			cancel_slot = -1;
	char		sql[256];
	int			rc = -1;

	memset(stats, 0, sizeof(*stats));

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
		rc = db_command(conn, "COMMIT", "could not end the copy's transaction",
						err, errsize);
	if (cancel_slot >= 0)
		signals_unregister_cancel(cancel_slot);
	if (cancel)
		PQfreeCancel(cancel);
	PQfinish(conn);
	return rc;
}
