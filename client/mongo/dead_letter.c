/*
 * dead_letter.c
 *		The dead-letter file: the writes that the refusal policy does not stop
 *		at, appended as BSON records, fsynced.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mongo_apply.h"
#include "applier.h"

/*
 * Open the dead-letter file for appending.  A record cut short by a crash
 * in the middle of its write is cut off (a reader would stop there and
 * never see the records after it); a new file's entry is made durable.
 */
static int
dead_letter_open(void)
{
	const char *path = applier.o.dead_letter;
	int			fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	off_t		at = 0;
	off_t		size;
	struct stat sb;

	if (fd < 0 || fstat(fd, &sb) != 0)
	{
		fail("could not open the dead-letter file \"%s\": %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size = sb.st_size;
	while (at < size)
	{
		uint8_t		head[4];
		uint32_t	len;

		if (pread(fd, head, 4, at) != 4)
			break;
		len = (uint32_t) head[0] | (uint32_t) head[1] << 8 | (uint32_t) head[2] << 16 |
			(uint32_t) head[3] << 24;
		if (len < 5 || (off_t) len > size - at)
			break;
		at += len;
	}
	if (at < size)
	{
		fprintf(stderr, "pg_bsonstream: warning: the dead-letter file \"%s\" ends in a record cut "
				"short (%lld bytes from %lld): cut off, the records before it kept\n", path,
				(long long) (size - at), (long long) at);
		if (ftruncate(fd, at) != 0 || fsync(fd) != 0)
		{
			fail("could not cut the dead-letter file \"%s\": %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (size == 0)
	{
		char	   *slash = strrchr(path, '/');
		char		dir[4096];
		int			dfd = -1;

		snprintf(dir, sizeof(dir), "%.*s", slash ? (int) (slash - path) + (slash == path) : 1,
				 slash ? path : ".");
		int			bad = fsync(fd) != 0 ||
			(dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0;

		if (!bad)
		{
			bad = fsync(dfd) != 0;
			close(dfd);
		}
		if (bad)
		{
			fail("could not make the dead-letter file \"%s\" durable: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (lseek(fd, 0, SEEK_END) < 0)
	{
		fail("could not open the dead-letter file \"%s\": %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	applier.dead_fd = fd;
	return 0;
}

/* Append a refused write to the dead-letter file, durably */
int
dead_letter(const char *db, const char *coll, const bson_t *selector, const char *token,
			const uint8_t *event, uint32_t event_len, const char *field, int code,
			const char *message)
{
	bson_t		d = BSON_INITIALIZER;
	bson_t		ns;
	bson_t		e;
	bson_t		inner;
	bson_iter_t it;
	const uint8_t *data;
	ssize_t		w;

	uint32_t	dlen;

	if (applier.dead_fd < 0 && dead_letter_open() != 0)
		return -1;
	if (token && token[0])
		BSON_APPEND_UTF8(&d, "token", token);
	BSON_APPEND_DOCUMENT_BEGIN(&d, "ns", &ns);
	BSON_APPEND_UTF8(&ns, "db", db);
	BSON_APPEND_UTF8(&ns, "coll", coll);
	bson_append_document_end(&d, &ns);
	if (selector && bson_iter_init_find(&it, selector, "_id"))
		bson_append_iter(&d, "_id", 3, &it);
	BSON_APPEND_DOCUMENT_BEGIN(&d, "error", &e);
	BSON_APPEND_INT32(&e, "code", code);
	BSON_APPEND_UTF8(&e, "message", message);
	bson_append_document_end(&d, &e);
	BSON_APPEND_DATE_TIME(&d, "at", wall_now_ms());
	if (event && bson_init_static(&inner, event, event_len))
		BSON_APPEND_DOCUMENT(&d, field, &inner);
	data = bson_get_data(&d);
	dlen = d.len;
	w = write(applier.dead_fd, data, dlen);
	bson_destroy(&d);
	/* fsynced even under --no-sync: the file is the only copy of what it holds */
	if (w != (ssize_t) dlen || fsync(applier.dead_fd) != 0)
	{
		fail("could not write the dead-letter file \"%s\": %s", applier.o.dead_letter,
			 w < 0 ? strerror(errno) : "short write");
		return -1;
	}
	pthread_mutex_lock(&applier.lock);
	applier.stats.refused++;
	pthread_mutex_unlock(&applier.lock);
	fprintf(stderr, "pg_bsonstream: MongoDB refused a write to %s.%s (%s); written to %s\n",
			db, coll, message, applier.o.dead_letter);
	return 0;
}
