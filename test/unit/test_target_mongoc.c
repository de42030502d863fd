/*
 * test_target_mongoc.c
 *		The applier's MongoDB target (client/mongo/target_mongoc.c) reads
 *		from the primary, whatever the URI's readPreference: a key change's
 *		old document, a stash or the progress read from a secondary could
 *		be stale.
 *
 * Against fake_replset.py, two members of a replica set that log which
 * member each command reached: the URI asks for secondaryPreferred; the
 * target's find, listIndexes and commands must reach the primary, while a
 * read through the same URI without a read preference of its own (the
 * control, which shows that the fake set does offer its secondary) reaches
 * the secondary.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mongoc/mongoc.h>

#include "target.h"

static int	passed;
static int	failed;

static void
check(int ok, const char *fmt,...)
{
	va_list		ap;

	if (ok)
	{
		passed++;
		return;
	}
	failed++;
	printf("FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static int
count_doc(const bson_t *doc, void *arg)
{
	(void) doc;
	(*(int *) arg)++;
	return 0;
}

/* How many commands cmd of arg (a collection) the log has on port, and on any other */
static void
logged(const char *log, const char *cmd, const char *arg, int port, int *here, int *elsewhere)
{
	FILE	   *f = fopen(log, "r");
	char		line[256];

	*here = *elsewhere = 0;
	while (f && fgets(line, sizeof(line), f))
	{
		int			p;
		char		name[128];
		char		a[128];

		if (sscanf(line, "%d %127s %127s", &p, name, a) == 3 && strcmp(name, cmd) == 0 &&
			strcmp(a, arg) == 0)
			(*(p == port ? here : elsewhere))++;
	}
	if (f)
		fclose(f);
}

/* what target_mongoc.c asks of mongo_apply.c */
void
apply_mask_uri(const char *uri, char *out, size_t outsize)
{
	snprintf(out, outsize, "%s", uri);
}

int
main(int argc, char **argv)
{
	char		dir[] = "/tmp/test_target_mongoc.XXXXXX";
	char		ports_file[128];
	char		log_file[128];
	char		uri[256];
	char		err[1024];
	char	   *uri_db;
	int			primary = 0;
	int			secondary = 0;
	pid_t		pid;
	Target	   *t;
	TargetResult r;
	int			n = 0;
	int			here;
	int			elsewhere;
	const char *script = argc > 1 ? argv[1] : "./fake_replset.py";
	/* the Python with pymongo's bson (Debian's python3-pymongo) */
	const char *python = getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3";

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(ports_file, sizeof(ports_file), "%s/ports", dir);
	snprintf(log_file, sizeof(log_file), "%s/log", dir);
	pid = fork();
	if (pid == 0)
	{
		execlp(python, python, script, ports_file, log_file, (char *) NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++)
	{
		FILE	   *f = fopen(ports_file, "r");

		if (f)
		{
			if (fscanf(f, "%d %d", &primary, &secondary) != 2)
				primary = 0;
			fclose(f);
			break;
		}
		usleep(100000);
	}
	if (primary == 0)
	{
		printf("FAIL fake_replset.py did not start\nunit: 0 passed, 1 failed\n");
		kill(pid, SIGKILL);
		return 1;
	}
	snprintf(uri, sizeof(uri), "mongodb://127.0.0.1:%d,127.0.0.1:%d/db?replicaSet=rs0&"
			 "readPreference=secondaryPreferred&serverSelectionTimeoutMS=5000", primary, secondary);

	t = target_mongoc_open(uri, NULL, &uri_db, err, sizeof(err));
	check(t != NULL, "the target opens: %s", err);
	if (t)
	{
		bson_t		filter = BSON_INITIALIZER;
		bson_t		ping = BSON_INITIALIZER;

		BSON_APPEND_INT32(&ping, "ping", 1);
		t->ops->command(t, "admin", &ping, NULL, &r);
		check(r.status == TARGET_DONE, "ping: %s", r.message);
		t->ops->find(t, "db", "c", &filter, 1, NULL, count_doc, &n, &r);
		check(r.status == TARGET_DONE && n == 1, "find: %d documents, %s", n, r.message);
		n = 0;
		t->ops->indexes(t, "db", "c", count_doc, &n, &r);
		check(r.status == TARGET_DONE && n == 1, "listIndexes: %d, %s", n, r.message);
		t->ops->close(t);
		free(uri_db);
		bson_destroy(&filter);
		bson_destroy(&ping);
	}

	/* the control: the URI's own read preference, through the driver alone */
	{
		mongoc_client_t *c = mongoc_client_new(uri);
		mongoc_collection_t *coll = mongoc_client_get_collection(c, "db", "control");
		bson_t		filter = BSON_INITIALIZER;
		mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, &filter, NULL, NULL);
		const bson_t *doc;
		bson_error_t e;

		while (mongoc_cursor_next(cur, &doc))
			;
		check(!mongoc_cursor_error(cur, &e), "the control read: %s", e.message);
		mongoc_cursor_destroy(cur);
		mongoc_collection_destroy(coll);
		mongoc_client_destroy(c);
		bson_destroy(&filter);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);

	logged(log_file, "find", "control", secondary, &here, &elsewhere);
	check(here == 1 && elsewhere == 0, "the control read (readPreference=secondaryPreferred) reached the secondary: "
		  "%d there, %d elsewhere", here, elsewhere);
	logged(log_file, "find", "c", primary, &here, &elsewhere);
	check(here == 1 && elsewhere == 0, "the target's find reached the primary: %d there, %d elsewhere", here, elsewhere);
	logged(log_file, "listIndexes", "c", primary, &here, &elsewhere);
	check(here == 1 && elsewhere == 0, "the target's listIndexes reached the primary: %d there, %d elsewhere",
		  here, elsewhere);
	logged(log_file, "ping", "1", primary, &here, &elsewhere);
	check(here == 1 && elsewhere == 0, "the target's ping reached the primary: %d there, %d elsewhere",
		  here, elsewhere);
	unlink(ports_file);
	unlink(log_file);
	rmdir(dir);
	mongoc_cleanup();
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
