/*
 * target_mongoc.c
 *		The applier's target (target.h) on a MongoDB server, with the MongoDB
 *		C driver: the URI and its password, the client, each call, and the
 *		one place where a call's outcome is decided (target_classify).
 *
 * Writes go as libmongoc bulk operations (the driver splits them at the
 * server's limits); every read goes to the primary, whatever the URI's read
 * preference says, since a secondary may lag behind the applier's own
 * writes.  The write concern is the URI's, majority when it gives none.
 */
#define _GNU_SOURCE				/* explicit_bzero */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mongoc/mongoc.h>

#include "target.h"

/* A write the driver refuses when it is added */
typedef struct LeftOut
{
	int			index;
	int			code;
	char		message[256];
} LeftOut;

typedef struct MongocTarget
{
	Target		base;
	mongoc_client_t *client;
	mongoc_read_prefs_t *primary;
} MongocTarget;

/* A server's error code that a new attempt may cure */
static int
transient_code(int code)
{
	static const int codes[] = {6, 7, 64, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (code == codes[i])
			return 1;
	return 0;
}

/*
 * A failure a new attempt may cure: the server unreachable, restarting, a
 * primary stepping down, a write concern not met in time (not one that
 * can never be met).
 */
static int
transient(const bson_error_t *e, const bson_t *reply)
{
	/* a w the deployment can never satisfy (79, 100): no wait cures it */
	if ((e->domain == MONGOC_ERROR_WRITE_CONCERN || e->domain == MONGOC_ERROR_SERVER) &&
		(e->code == 79 || e->code == 100))
		return 0;
	if (e->domain == MONGOC_ERROR_STREAM || e->domain == MONGOC_ERROR_SERVER_SELECTION ||
		e->domain == MONGOC_ERROR_WRITE_CONCERN)
		return 1;
	if (reply && (mongoc_error_has_label(reply, "RetryableWriteError") ||
				  mongoc_error_has_label(reply, "NetworkError")))
		return 1;
	return transient_code((int) e->code);
}

extern void target_classify(const Target *t, bool ok, const bson_error_t *e, const bson_t *reply,
							int nwrites, int ordered, const int *map, TargetResult *r);

/*
 * The outcome of a call (ok, e and reply as the driver gives them; nwrites:
 * the writes of a write call, 0 for a read or a command; map: a write
 * error's index to the call's, or NULL).  The one place that reads the
 * driver's errors.
 */
void
target_classify(const Target *t, bool ok, const bson_error_t *e, const bson_t *reply, int nwrites,
				int ordered, const int *map, TargetResult *r)
{
	bson_iter_t it;
	bson_iter_t arr;

	(void) t;
	target_result_init(r);
	if (ok)
		return;
	snprintf(r->message, sizeof(r->message), "%s", e->message);
	r->code = (int) e->code;

	/*
	 * The connection lost: the writes after the message that was answered
	 * were never sent, whatever the errors of those before it say
	 */
	if (nwrites > 0 && (e->domain == MONGOC_ERROR_STREAM || e->domain == MONGOC_ERROR_SERVER_SELECTION))
	{
		r->status = TARGET_RETRY;
		r->lost = e->domain == MONGOC_ERROR_STREAM;
		return;
	}

	/* the statements' own errors */
	if (nwrites > 0 && reply && bson_iter_init_find(&it, reply, "writeErrors") &&
		BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr))
	{
		int			retry = 0;

		while (bson_iter_next(&arr))
		{
			bson_iter_t w;
			int			index = 0;
			int			code = 0;
			char		msg[1024] = "refused";
			char		full[1100];

			if (!bson_iter_recurse(&arr, &w))
				continue;
			while (bson_iter_next(&w))
			{
				if (strcmp(bson_iter_key(&w), "index") == 0)
					index = (int) bson_iter_as_int64(&w);
				else if (strcmp(bson_iter_key(&w), "code") == 0)
					code = (int) bson_iter_as_int64(&w);
				else if (strcmp(bson_iter_key(&w), "errmsg") == 0 && BSON_ITER_HOLDS_UTF8(&w))
					snprintf(msg, sizeof(msg), "%s", bson_iter_utf8(&w, NULL));
			}
			if (transient_code(code))
			{
				/* a statement's own transient error (a shutdown, a step-down): the writes again */
				retry = 1;
				r->code = code;
				snprintf(r->message, sizeof(r->message), "%.1000s (code %d)", msg, code);
				continue;
			}
			if (index < 0 || index >= nwrites)
				index = -1;
			else if (map)
				index = map[index];
			/* FerretDB 1.x reports the index of an update's error wrong */
			if (ordered && nwrites > 1 && t->index_unreliable)
				index = -1;
			snprintf(full, sizeof(full), "%s (code %d)", msg, code);
			target_refuse(r, index, code, full);
		}
		if (retry)
		{
			r->status = TARGET_RETRY;
			r->nrefused = 0;
			return;
		}
		if (r->status == TARGET_REFUSED)
			return;
	}

	/*
	 * FerretDB (SQLite) answers a duplicate key of an update with a command
	 * error, not a write error 11000: the same here
	 */
	if (nwrites > 0 && strstr(e->message, "UNIQUE constraint failed") != NULL)
	{
		char		full[1100];

		snprintf(full, sizeof(full), "duplicate key: %s (code 11000)", e->message);
		target_refuse(r, nwrites == 1 ? (map ? map[0] : 0) : -1, 11000, full);
		return;
	}
	if (transient(e, reply))
	{
		r->status = TARGET_RETRY;
		r->lost = e->domain == MONGOC_ERROR_STREAM;
		if (e->domain == MONGOC_ERROR_SERVER_SELECTION)
			r->hint = "Check the host and port in the URI and that the server runs; "
				"serverSelectionTimeoutMS in the URI sets how long to wait.";
		if (strstr(e->message, "TLS") || strstr(e->message, "certificate"))
			r->hint = "Check tlsCAFile in the URI: it must name the authority that signed the "
				"server's certificate (or tlsAllowInvalidCertificates=true, for tests only).";
		return;
	}
	/* a document the driver will not send (too large for the server) */
	if (nwrites > 0 && (e->domain == MONGOC_ERROR_BSON || e->domain == MONGOC_ERROR_COMMAND))
	{
		target_refuse(r, nwrites == 1 ? (map ? map[0] : 0) : -1, (int) e->code, e->message);
		return;
	}
	r->status = TARGET_FATAL;
	if (e->domain == MONGOC_ERROR_CLIENT && e->code == MONGOC_ERROR_CLIENT_AUTHENTICATE)
		r->hint = "Check the user name, the password and authSource in the URI.";
}

static bool
add_write(mongoc_bulk_operation_t *bulk, const TargetWrite *w, bson_error_t *e)
{
	bson_t		opts = BSON_INITIALIZER;
	bool		ok = false;

	if (w->kind == TW_REPLACE || w->kind == TW_UPDATE_UPSERT)
		BSON_APPEND_BOOL(&opts, "upsert", true);
	switch (w->kind)
	{
		case TW_INSERT:
			ok = mongoc_bulk_operation_insert_with_opts(bulk, w->doc, NULL, e);
			break;
		case TW_REPLACE:
			ok = mongoc_bulk_operation_replace_one_with_opts(bulk, w->selector, w->doc, &opts, e);
			break;
		case TW_UPDATE:
		case TW_UPDATE_UPSERT:
			ok = mongoc_bulk_operation_update_one_with_opts(bulk, w->selector, w->doc, &opts, e);
			break;
		case TW_DELETE:
			ok = mongoc_bulk_operation_remove_one_with_opts(bulk, w->selector, NULL, e);
			break;
		case TW_DELETE_MANY:
			ok = mongoc_bulk_operation_remove_many_with_opts(bulk, w->selector, NULL, e);
			break;
	}
	bson_destroy(&opts);
	return ok;
}

/*
 * A write the driver refuses when it is added (a key it does not take:
 * "$v", "", invalid UTF-8) never reaches the server: in an ordered call the
 * writes before it go, then it is refused; in an unordered one it is left
 * out and refused, the others go.  Never dropped without a word.
 */
static void
mongoc_write(Target *t, const char *db, const char *collname, const TargetWrite *w, int n, int ordered,
			 TargetResult *r)
{
	MongocTarget *m = (MongocTarget *) t;
	mongoc_collection_t *coll = mongoc_client_get_collection(m->client, db, collname);
	bson_t		opts = BSON_INITIALIZER;
	mongoc_bulk_operation_t *bulk;
	LeftOut    *left_out = NULL;	/* allocated at the first */
	int			nleft = 0;
	int		   *map = malloc(sizeof(int) * (n > 0 ? n : 1));
	int			nsent = 0;
	bson_t		reply;
	bson_error_t e;
	bool		ok;

	target_result_init(r);
	if (map == NULL)
	{
		mongoc_collection_destroy(coll);
		r->status = TARGET_FATAL;
		snprintf(r->message, sizeof(r->message), "out of memory");
		return;
	}
	BSON_APPEND_BOOL(&opts, "ordered", ordered != 0);
	bulk = mongoc_collection_create_bulk_operation_with_opts(coll, &opts);
	bson_destroy(&opts);
	for (int i = 0; i < n; i++)
	{
		if (add_write(bulk, &w[i], &e))
		{
			map[nsent++] = i;
			continue;
		}
		if (left_out == NULL && (left_out = malloc(sizeof(LeftOut) * TARGET_MAX_REFUSED)) == NULL)
		{
			/* nothing sent: never a write dropped without a word */
			nsent = 0;
			r->status = TARGET_FATAL;
			snprintf(r->message, sizeof(r->message), "out of memory");
			break;
		}
		if (nleft < TARGET_MAX_REFUSED)
		{
			left_out[nleft].index = i;
			left_out[nleft].code = (int) e.code;
			snprintf(left_out[nleft].message, sizeof(left_out[nleft].message),
					 "the MongoDB C driver refuses the write: %.200s", e.message);
			nleft++;
		}
		else
		{
			/* more than a call's refusals can say: the rest of an unordered call not sent */
			nsent = 0;
			r->status = TARGET_FATAL;
			snprintf(r->message, sizeof(r->message), "more than %d writes the MongoDB C driver "
					 "refuses in one call", TARGET_MAX_REFUSED);
			break;
		}
		if (ordered)
			break;
	}
	if (nsent > 0)
	{
		ok = mongoc_bulk_operation_execute(bulk, &reply, &e);
		target_classify(t, ok, &e, &reply, nsent, ordered, map, r);
		bson_destroy(&reply);
	}
	mongoc_bulk_operation_destroy(bulk);
	mongoc_collection_destroy(coll);
	free(map);
	/* an ordered call refused by the server stopped before the write left out */
	if (r->status == TARGET_DONE || (r->status == TARGET_REFUSED && !ordered))
		for (int i = 0; i < nleft; i++)
			target_refuse(r, left_out[i].index, left_out[i].code, left_out[i].message);
	free(left_out);
}

/* A cursor's documents to each(), its outcome into r; the cursor destroyed */
static void
cursor_each(Target *t, mongoc_cursor_t *cur, TargetEach each, void *arg, TargetResult *r)
{
	const bson_t *doc;
	const bson_t *reply = NULL;
	bson_error_t e;

	while (mongoc_cursor_next(cur, &doc))
		if (each(doc, arg) != 0)
			break;
	if (mongoc_cursor_error_document(cur, &e, &reply))
		target_classify(t, false, &e, reply, 0, 0, NULL, r);
	else
		target_result_init(r);
	mongoc_cursor_destroy(cur);
}

static void
mongoc_find(Target *t, const char *db, const char *collname, const bson_t *filter, int64_t limit,
			const bson_t *projection, TargetEach each, void *arg, TargetResult *r)
{
	MongocTarget *m = (MongocTarget *) t;
	mongoc_collection_t *coll = mongoc_client_get_collection(m->client, db, collname);
	bson_t		opts = BSON_INITIALIZER;
	mongoc_cursor_t *cur;

	if (limit > 0)
		BSON_APPEND_INT64(&opts, "limit", limit);
	if (projection)
		BSON_APPEND_DOCUMENT(&opts, "projection", projection);
	cur = mongoc_collection_find_with_opts(coll, filter, &opts, m->primary);
	cursor_each(t, cur, each, arg, r);
	mongoc_collection_destroy(coll);
	bson_destroy(&opts);
}

static void
mongoc_indexes(Target *t, const char *db, const char *collname, TargetEach each, void *arg,
			   TargetResult *r)
{
	MongocTarget *m = (MongocTarget *) t;
	mongoc_collection_t *coll = mongoc_client_get_collection(m->client, db, collname);

	cursor_each(t, mongoc_collection_find_indexes_with_opts(coll, NULL), each, arg, r);
	mongoc_collection_destroy(coll);
}

/* drop and createIndexes write (the write concern applies); the others read, from the primary */
static void
mongoc_command(Target *t, const char *db, const bson_t *cmd, bson_t *reply, TargetResult *r)
{
	MongocTarget *m = (MongocTarget *) t;
	bson_t		local;
	bson_t	   *out = reply ? reply : &local;
	bson_iter_t it;
	bson_error_t e;
	bool		ok;
	const char *name = bson_iter_init(&it, cmd) && bson_iter_next(&it) ? bson_iter_key(&it) : "";

	if (strcmp(name, "drop") == 0 || strcmp(name, "createIndexes") == 0)
		ok = mongoc_client_write_command_with_opts(m->client, db, cmd, NULL, out, &e);
	else
		ok = mongoc_client_command_simple(m->client, db, cmd, m->primary, out, &e);
	target_classify(t, ok, &e, out, 0, 0, NULL, r);
	if (!reply)
		bson_destroy(&local);
}

static void
mongoc_close(Target *t)
{
	MongocTarget *m = (MongocTarget *) t;

	mongoc_read_prefs_destroy(m->primary);
	mongoc_client_destroy(m->client);
	free(m);
}

static const TargetOps mongoc_ops = {
	.write = mongoc_write,
	.find = mongoc_find,
	.indexes = mongoc_indexes,
	.command = mongoc_command,
	.close = mongoc_close,
};

/*
 * The password of --to-password-file: its first line.  Like libpq's
 * .pgpass, a file that others may read is refused: it would not be secret.
 */
static int
read_password_file(const char *path, char *pw, size_t pwsize, char *err, size_t errsize)
{
	struct stat sb;
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t		n;

	if (fd < 0 || fstat(fd, &sb) != 0)
	{
		snprintf(err, errsize, "could not read --to-password-file \"%s\": %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(sb.st_mode) || (sb.st_mode & (S_IRWXG | S_IRWXO)) != 0)
	{
		snprintf(err, errsize, "--to-password-file \"%s\" %s\nhint: Make it a file only its "
				 "owner can read: chmod 0600 \"%s\".", path,
				 S_ISREG(sb.st_mode) ? "has group or world access" : "is not a regular file", path);
		close(fd);
		return -1;
	}
	n = read(fd, pw, pwsize - 1);
	close(fd);
	if (n < 0)
	{
		snprintf(err, errsize, "could not read --to-password-file \"%s\": %s", path, strerror(errno));
		return -1;
	}
	pw[n] = '\0';
	pw[strcspn(pw, "\r\n")] = '\0';
	if (pw[0] == '\0')
	{
		snprintf(err, errsize, "--to-password-file \"%s\" is empty: its first line is the password", path);
		return -1;
	}
	return 0;
}

/* The URI with its password, if any, as "****": what messages show */
extern void apply_mask_uri(const char *uri, char *out, size_t outsize);

Target *
target_mongoc_open(const char *uri_string, const char *password_file, char **uri_db, char *err,
				   size_t errsize)
{
	bson_error_t e;
	mongoc_uri_t *uri;
	const mongoc_write_concern_t *wc;
	char		shown[4096];
	MongocTarget *m;

	*uri_db = NULL;
	mongoc_init();
	apply_mask_uri(uri_string, shown, sizeof(shown));
	uri = mongoc_uri_new_with_error(uri_string, &e);
	if (uri == NULL)
	{
		snprintf(err, errsize, "invalid --to \"%s\": %s", shown, e.message);
		return NULL;
	}
	if (password_file)
	{
		char		pw[1024];

		if (mongoc_uri_get_username(uri) == NULL)
		{
			mongoc_uri_destroy(uri);
			snprintf(err, errsize, "--to-password-file needs a user name in the URI "
					 "(mongodb://user@host/db)");
			return NULL;
		}
		if (mongoc_uri_get_password(uri) != NULL)
		{
			mongoc_uri_destroy(uri);
			snprintf(err, errsize, "--to \"%s\" has a password and --to-password-file gives "
					 "one: give it in one place", shown);
			return NULL;
		}
		if (read_password_file(password_file, pw, sizeof(pw), err, errsize) != 0)
		{
			mongoc_uri_destroy(uri);
			return NULL;
		}
		mongoc_uri_set_password(uri, pw);
		explicit_bzero(pw, sizeof(pw));
	}
	/* the write concern: the URI's, majority when it gives none */
	wc = mongoc_uri_get_write_concern(uri);
	if (mongoc_write_concern_get_w(wc) == MONGOC_WRITE_CONCERN_W_DEFAULT &&
		mongoc_write_concern_get_wtag(wc) == NULL)
	{
		mongoc_write_concern_t *maj = mongoc_write_concern_new();

		mongoc_write_concern_set_w(maj, MONGOC_WRITE_CONCERN_W_MAJORITY);
		if (mongoc_write_concern_get_journal(wc))
			mongoc_write_concern_set_journal(maj, true);
		mongoc_uri_set_write_concern(uri, maj);
		mongoc_write_concern_destroy(maj);
	}
	m = calloc(1, sizeof(MongocTarget));
	if (m == NULL)
	{
		mongoc_uri_destroy(uri);
		snprintf(err, errsize, "out of memory");
		return NULL;
	}
	m->base.ops = &mongoc_ops;
	m->client = mongoc_client_new_from_uri(uri);
	if (m->client && mongoc_uri_get_database(uri))
		*uri_db = strdup(mongoc_uri_get_database(uri));
	mongoc_uri_destroy(uri);
	if (m->client == NULL)
	{
		free(m);
		snprintf(err, errsize, "could not use --to \"%s\" (the MongoDB C driver refused it)", shown);
		return NULL;
	}
	mongoc_client_set_error_api(m->client, MONGOC_ERROR_API_VERSION_2);
	m->primary = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);
	mongoc_client_set_appname(m->client, "pg_bsonstream");
	return &m->base;
}
