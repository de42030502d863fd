/*
 * fail_rename.c
 *		An LD_PRELOAD shim for test/exporter/run.sh: the rename of one file
 *		fails with EIO, so that a --split commit can be made to fail at
 *		file k, deterministically.
 *
 *	cc -shared -fPIC -o fail_rename.so fail_rename.c -ldl
 *	FAIL_RENAME_SUFFIX=out.0002.bson LD_PRELOAD=./fail_rename.so pg_bsonexport ...
 *
 * rename(2) and renameat2(2) to a path ending in $FAIL_RENAME_SUFFIX fail;
 * every other call goes to the C library.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
doomed(const char *path)
{
	const char *suffix = getenv("FAIL_RENAME_SUFFIX");
	size_t		n;
	size_t		m;

	if (suffix == NULL || suffix[0] == '\0' || path == NULL)
		return 0;
	n = strlen(path);
	m = strlen(suffix);
	return n >= m && strcmp(path + n - m, suffix) == 0;
}

int
rename(const char *from, const char *to)
{
	int			(*real) (const char *, const char *);

	if (doomed(to))
	{
		errno = EIO;
		return -1;
	}
	*(void **) &real = dlsym(RTLD_NEXT, "rename");
	return real(from, to);
}

int
renameat2(int fromdir, const char *from, int todir, const char *to, unsigned int flags)
{
	int			(*real) (int, const char *, int, const char *, unsigned int);

	if (doomed(to))
	{
		errno = EIO;
		return -1;
	}
	*(void **) &real = dlsym(RTLD_NEXT, "renameat2");
	if (real == NULL)
	{
		errno = ENOSYS;
		return -1;
	}
	return real(fromdir, from, todir, to, flags);
}
