/*
 * gate_rename.c
 *		An LD_PRELOAD shim for test/stream/check.py: the rename that makes a
 *		segment durable waits at a gate, so that a test can act (cut the
 *		connection) while pg_bsonstream's closer thread is in it.
 *
 *	cc -shared -fPIC -o gate_rename.so gate_rename.c -ldl
 *	GATE_DIR=/some/dir LD_PRELOAD=./gate_rename.so pg_bsonstream ...
 *
 * rename(2) to a path ending in ".bson" creates $GATE_DIR/waiting, then
 * waits until $GATE_DIR/go exists, then renames; every other call, and
 * every call once go exists, goes straight to the C library.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
gated(const char *path)
{
	size_t		n = path ? strlen(path) : 0;

	return getenv("GATE_DIR") != NULL && n >= 5 && strcmp(path + n - 5, ".bson") == 0;
}

static void
wait_at_gate(void)
{
	char		waiting[PATH_MAX];
	char		go[PATH_MAX];
	int			fd;

	snprintf(waiting, sizeof(waiting), "%s/waiting", getenv("GATE_DIR"));
	snprintf(go, sizeof(go), "%s/go", getenv("GATE_DIR"));
	if (access(go, F_OK) == 0)
		return;
	fd = open(waiting, O_WRONLY | O_CREAT, 0666);
	if (fd >= 0)
		close(fd);
	while (access(go, F_OK) != 0)
		usleep(10000);
}

int
rename(const char *from, const char *to)
{
	int			(*real) (const char *, const char *);

	if (gated(to))
		wait_at_gate();
	*(void **) &real = dlsym(RTLD_NEXT, "rename");
	return real(from, to);
}
