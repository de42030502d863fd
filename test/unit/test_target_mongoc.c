/*
 * test_target_mongoc.c
 *		The applier's MongoDB target (client/mongo/target_mongoc.c) reads
 *		from the primary, whatever the URI's readPreference: a key change's
 *		old document, a stash or the progress read from a secondary could
 *		be stale.
 *
 * And the outcome of each kind of error the driver gives, decided in one
 * place (target_classify): done, retry, refused at an index, fatal.
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
#include "unit_check.h"


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

extern void target_classify(const Target *t, bool ok, const bson_error_t *e, const bson_t *reply,
							int nwrites, int ordered, const int *map, TargetResult *r);

/* One outcome of target_classify: the driver's error e (domain, code, message) and reply (JSON) */
static TargetResult *
classify(int unreliable, uint32_t domain, uint32_t code, const char *message, const char *reply_json,
		 int nwrites, int ordered, const int *map)
{
	static TargetResult r;
	Target		t = {NULL, unreliable};
	bson_error_t e;
	bson_t	   *reply = reply_json ? bson_new_from_json((const uint8_t *) reply_json, -1, NULL) : bson_new();

	bson_set_error(&e, domain, code, "%s", message);
	target_classify(&t, domain == 0, &e, reply, nwrites, ordered, map, &r);
	bson_destroy(reply);
	return &r;
}

/* The outcomes of the driver's errors, decided in one place (target_classify) */
static void
test_classify(void)
{
	const char *dup = "{\"writeErrors\": [{\"index\": 1, \"code\": 11000, \"errmsg\": \"E11000 dup\"}]}";
	int			map[3] = {0, 2, 3};
	TargetResult *r;

	r = classify(0, 0, 0, "", NULL, 3, 1, NULL);
	check(r->status == TARGET_DONE, "classify: acknowledged: done");
	r = classify(0, MONGOC_ERROR_SERVER, 11000, "E11000 dup", dup, 3, 1, NULL);
	check(r->status == TARGET_REFUSED && r->nrefused == 1 && r->refused[0].index == 1 &&
		  r->refused[0].code == 11000 && strstr(target_refusal_message(r, 0), "E11000 dup (code 11000)"),
		  "classify: a write error: refused at its index, with its code and message");
	r = classify(0, MONGOC_ERROR_SERVER, 11000, "E11000 dup", dup, 3, 1, map);
	check(r->status == TARGET_REFUSED && r->refused[0].index == 2,
		  "classify: a write error's index mapped to the call's (a write the driver left out before it)");
	r = classify(1, MONGOC_ERROR_SERVER, 11000, "E11000 dup", dup, 3, 1, NULL);
	check(r->status == TARGET_REFUSED && r->refused[0].index == -1,
		  "classify: FerretDB's index of an ordered call: not known which");
	r = classify(0, MONGOC_ERROR_SERVER, 11602, "interrupted",
				 "{\"writeErrors\": [{\"index\": 0, \"code\": 11602, \"errmsg\": \"interrupted\"}]}", 3, 1, NULL);
	check(r->status == TARGET_RETRY, "classify: a statement's own transient code (11602): retry");
	r = classify(0, MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET, "socket error", dup, 3, 0, NULL);
	check(r->status == TARGET_RETRY && r->lost, "classify: the connection lost (with errors of a message "
		  "before it): retry, lost");
	r = classify(0, MONGOC_ERROR_WRITE_CONCERN, 100, "cannot satisfy write concern", NULL, 1, 1, NULL);
	check(r->status == TARGET_FATAL, "classify: a write concern that can never be met (100): fatal");
	r = classify(0, MONGOC_ERROR_WRITE_CONCERN, 79, "unknown replica set tag", NULL, 1, 1, NULL);
	check(r->status == TARGET_FATAL, "classify: an unknown write concern tag (79): fatal");
	r = classify(0, MONGOC_ERROR_WRITE_CONCERN, 64, "waiting for replication timed out", NULL, 1, 1, NULL);
	check(r->status == TARGET_RETRY, "classify: a write concern not met in time (64): retry");
	r = classify(0, MONGOC_ERROR_SERVER, 91, "shutdown in progress", NULL, 2, 1, NULL);
	check(r->status == TARGET_RETRY, "classify: a server shutting down (91): retry");
	r = classify(0, MONGOC_ERROR_SERVER, 1000, "something", "{\"errorLabels\": [\"RetryableWriteError\"]}", 2, 1, NULL);
	check(r->status == TARGET_RETRY, "classify: the RetryableWriteError label: retry");
	r = classify(0, MONGOC_ERROR_SERVER, 2, "UNIQUE constraint failed: x", NULL, 1, 1, map);
	check(r->status == TARGET_REFUSED && r->refused[0].index == 0 && r->refused[0].code == 11000,
		  "classify: FerretDB's duplicate key of an update (a command error): 11000 at the only write");
	r = classify(0, MONGOC_ERROR_SERVER, 2, "UNIQUE constraint failed: x", NULL, 2, 1, NULL);
	check(r->status == TARGET_REFUSED && r->refused[0].index == -1,
		  "classify: the same among several writes: not known which");
	r = classify(0, MONGOC_ERROR_BSON, MONGOC_ERROR_BSON_INVALID, "document too large", NULL, 2, 1, NULL);
	check(r->status == TARGET_REFUSED && r->refused[0].index == -1,
		  "classify: a document the driver will not send: refused, not known which");
	r = classify(0, MONGOC_ERROR_BSON, MONGOC_ERROR_BSON_INVALID, "invalid", NULL, 0, 0, NULL);
	check(r->status == TARGET_FATAL, "classify: the same for a read: fatal");
	r = classify(0, MONGOC_ERROR_CLIENT, MONGOC_ERROR_CLIENT_AUTHENTICATE, "auth failed", NULL, 0, 0, NULL);
	check(r->status == TARGET_FATAL && r->hint && strstr(r->hint, "password"),
		  "classify: authentication: fatal, with what to check");
	r = classify(0, MONGOC_ERROR_SERVER_SELECTION, MONGOC_ERROR_SERVER_SELECTION_FAILURE, "No suitable servers",
				 NULL, 0, 0, NULL);
	check(r->status == TARGET_RETRY && r->hint && strstr(r->hint, "host and port"),
		  "classify: no server to select: retry, with what to check");
	r = classify(0, MONGOC_ERROR_SERVER, 11000, "dups",
				 "{\"writeErrors\": [{\"index\": 0, \"code\": 11000, \"errmsg\": \"a\"}, "
				 "{\"index\": 2, \"code\": 2, \"errmsg\": \"b\"}]}", 3, 0, NULL);
	check(r->status == TARGET_REFUSED && r->nrefused == 2 && r->refused[0].index == 0 &&
		  r->refused[1].index == 2 && r->refused[1].code == 2,
		  "classify: an unordered call: each refused write named");
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

	test_classify();
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
