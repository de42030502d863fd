/*
 * test_applier.c
 *		Unit tests of pg_bsonstream --to's applier (client/mongo) against the
 *		in-memory target (target_memory.c): batching, key changes,
 *		refusals, retries, and a replay after a cut at every write.
 *
 * Each case writes change segments as the stream does (DIR/changes/
 * <first>-<last>.bson, whole transactions), runs the applier on them as
 * the program does (apply_open_target, apply_start, apply_stop), and
 * compares the collections with what the events say they hold.  A "cut"
 * is the server dying at one write statement (that statement applied, or
 * not), after which nothing reaches it: what a kill -9 of either side
 * leaves.  The applier is then stopped and run again on a connection that
 * works, and must end with the same collections as a run without a cut,
 * for every statement of the run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mongo_apply.h"
#include "applier.h"
#include "node_merge.h"
#include "dump_name.h"
#include "segment_name.h"
#include "target_memory.h"
#include "unit_check.h"


/* ---------------------------------------------------------------------
 * Events and segments
 * --------------------------------------------------------------------- */

#define DB "db"
#define MAX_EVENTS 4096

typedef struct Workload
{
	bson_t	   *events[MAX_EVENTS];
	int			nevents;
	int			txn_start[MAX_EVENTS];	/* the first event of each transaction */
	int			ntxn;
	uint64_t	lsn;
	uint64_t	pos;
	int64_t		wall;			/* the transaction's wallTime; 0: made from its LSN */
} Workload;

static void
begin(Workload *w)
{
	w->lsn += 0x100;
	w->pos = 0;
	w->wall = 0;
	w->txn_start[w->ntxn++] = w->nevents;
}

/* A transaction committed at wall (ms since 1970, by its node's clock) */
static void
begin_at(Workload *w, int64_t wall)
{
	begin(w);
	w->wall = wall;
}

/* An event's first fields: its token first, as the plugin writes it */
static bson_t *
event_start(Workload *w, const char *op)
{
	bson_t	   *e = bson_new();
	bson_t		id;
	char		token[RESUME_TOKEN_LEN + 1];

	resume_token_format(token, w->lsn, ++w->pos);
	token[RESUME_TOKEN_LEN] = '\0';
	BSON_APPEND_DOCUMENT_BEGIN(e, "_id", &id);
	BSON_APPEND_UTF8(&id, "_data", token);
	bson_append_document_end(e, &id);
	BSON_APPEND_UTF8(e, "operationType", op);
	BSON_APPEND_DATE_TIME(e, "wallTime", w->wall ? w->wall : 1700000000000LL + (int64_t) w->lsn);
	return e;
}

/* An event's head: its first fields, then its collection */
static bson_t *
event_head(Workload *w, const char *op, const char *coll)
{
	bson_t	   *e = event_start(w, op);
	bson_t		ns;

	BSON_APPEND_DOCUMENT_BEGIN(e, "ns", &ns);
	BSON_APPEND_UTF8(&ns, "db", DB);
	BSON_APPEND_UTF8(&ns, "coll", coll);
	bson_append_document_end(e, &ns);
	return e;
}

static void
add(Workload *w, bson_t *e)
{
	if (w->nevents < MAX_EVENTS)
		w->events[w->nevents++] = e;
}

static void
key(bson_t *e, int id)
{
	bson_t		k;

	BSON_APPEND_DOCUMENT_BEGIN(e, "documentKey", &k);
	BSON_APPEND_INT32(&k, "_id", id);
	bson_append_document_end(e, &k);
}

/* an insert (or an update with fullDocument): the row {_id, fields...} */
static void
row(Workload *w, const char *op, const char *coll, int id, const bson_t *fields,
	const char *unchanged)
{
	bson_t	   *e = event_head(w, op, coll);
	bson_t		full;
	bson_iter_t it;

	key(e, id);
	BSON_APPEND_DOCUMENT_BEGIN(e, "fullDocument", &full);
	BSON_APPEND_INT32(&full, "_id", id);
	if (bson_iter_init(&it, fields))
		while (bson_iter_next(&it))
			bson_append_iter(&full, NULL, 0, &it);
	bson_append_document_end(e, &full);
	if (unchanged)
	{
		bson_t		arr;

		BSON_APPEND_ARRAY_BEGIN(e, "unchangedFields", &arr);
		BSON_APPEND_UTF8(&arr, "0", unchanged);
		bson_append_array_end(e, &arr);
	}
	add(w, e);
}

static void
ins(Workload *w, const char *coll, int id, const char *f, const char *v)
{
	bson_t	   *fields = BCON_NEW(f, BCON_UTF8(v));

	row(w, "insert", coll, id, fields, NULL);
	bson_destroy(fields);
}

/* an update without fullDocument: $set of one field */
static void
upd(Workload *w, const char *coll, int id, const char *f, const char *v)
{
	bson_t	   *e = event_head(w, "update", coll);
	bson_t		d;
	bson_t		u;

	key(e, id);
	BSON_APPEND_DOCUMENT_BEGIN(e, "updateDescription", &d);
	BSON_APPEND_DOCUMENT_BEGIN(&d, "updatedFields", &u);
	BSON_APPEND_UTF8(&u, f, v);
	bson_append_document_end(&d, &u);
	bson_append_document_end(e, &d);
	add(w, e);
}

static void
del(Workload *w, const char *coll, int id)
{
	bson_t	   *e = event_head(w, "delete", coll);

	key(e, id);
	add(w, e);
}

static void
truncate_all(Workload *w, const char *coll)
{
	add(w, event_head(w, "truncate", coll));
}

/* a key change of id to newid, its field big TOASTed (not in the event) */
static void
key_change(Workload *w, const char *coll, int id, int newid, const char *a)
{
	bson_t	   *fields = BCON_NEW("a", BCON_UTF8(a));

	del(w, coll, id);
	/* the delete and the insert of a key change share the position's LSN */
	row(w, "insert", coll, newid, fields, "big");
	bson_destroy(fields);
}

static void
workload_free(Workload *w)
{
	for (int i = 0; i < w->nevents; i++)
		bson_destroy(w->events[i]);
	w->nevents = 0;
	w->ntxn = 0;
}

static const char *
token_of(const bson_t *e)
{
	return resume_token_of_event((const char *) bson_get_data(e), e->len);
}

/* The segments: per_segment transactions each */
static void write_initial(const char *dir, int n);

static void
write_segments(const Workload *w, const char *dir, int per_segment)
{
	char		path[4200];

	snprintf(path, sizeof(path), "%s/changes", dir);
	mkdir(dir, 0700);
	mkdir(path, 0700);
	for (int t = 0; t < w->ntxn; t += per_segment)
	{
		int			from = w->txn_start[t];
		int			to = t + per_segment < w->ntxn ? w->txn_start[t + per_segment] : w->nevents;
		FILE	   *f;

		if (to <= from)
			continue;
		char		name[SEGMENT_NAME_LEN + 1];

		segment_name_format(name, sizeof(name), token_of(w->events[from]), token_of(w->events[to - 1]));
		snprintf(path, sizeof(path), "%s/changes/%s", dir, name);
		f = fopen(path, "wb");
		for (int i = from; i < to; i++)
			fwrite(bson_get_data(w->events[i]), 1, w->events[i]->len, f);
		fclose(f);
	}
}

static void
remove_dir(const char *dir)
{
	char		cmd[4300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* A first copy of n documents in DIR/initial: collection c, a unique index on u */
static void
write_initial(const char *dir, int n)
{
	char		path[4200];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/initial", dir);
	mkdir(dir, 0700);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/initial/" DB, dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/initial/" DB "/c" DUMP_DATA_SUFFIX, dir);
	f = fopen(path, "wb");
	for (int i = 0; i < n; i++)
	{
		char		u[16];
		bson_t	   *d;

		snprintf(u, sizeof(u), "u%d", i);
		d = BCON_NEW("_id", BCON_INT32(i), "u", BCON_UTF8(u));
		fwrite(bson_get_data(d), 1, d->len, f);
		bson_destroy(d);
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/initial/" DB "/c" DUMP_META_SUFFIX, dir);
	f = fopen(path, "w");
	fputs("{\"collectionName\": \"c\", \"indexes\": [{\"v\": 2, \"key\": {\"_id\": 1}, "
		  "\"name\": \"_id_\"}, {\"v\": 2, \"key\": {\"u\": 1}, \"name\": \"u_1\", "
		  "\"unique\": true}]}", f);
	fclose(f);
}

/* ---------------------------------------------------------------------
 * Runs
 * --------------------------------------------------------------------- */

typedef struct Setup
{
	const char *colls[4];		/* the data collections, compared */
	const char *unique[4];		/* "coll.field": a unique index made before */
	int			batch_events;
	int			per_segment;
	int			ferretdb;
	const char *dead_letter;	/* a file name under DIR, or NULL */
	int			initial;		/* documents of a first copy, in collection "c" */
	const Workload *other;		/* a Citus cluster of two nodes: the events of
								 * group 2, the workload's group 1's; merged */
} Setup;

static const int two_groups[] = {1, 2};

/* The workload's segments: in DIR, or as two nodes' in DIR/group-1 and DIR/group-2 */
static void
write_all(const Setup *s, const Workload *w, const char *dir, int per_segment)
{
	char		g[4200];

	if (s->other == NULL)
	{
		write_segments(w, dir, per_segment);
		return;
	}
	mkdir(dir, 0700);
	snprintf(g, sizeof(g), "%s/group-1", dir);
	write_segments(w, g, per_segment);
	snprintf(g, sizeof(g), "%s/group-2", dir);
	write_segments(s->other, g, per_segment);
}

static char basedir[256];

static void
options(ApplyOptions *o, const Setup *s, const char *dir, char *dl, size_t dlsize)
{
	memset(o, 0, sizeof(*o));
	o->uri = "memory";
	o->dir = dir;
	o->slot = "slot";
	o->system_id = "7000000000000000001";
	o->default_db = DB;
	o->progress_coll = "pg_bsonstream";
	o->batch_events = s->batch_events ? s->batch_events : 1000;
	if (s->other)
	{
		o->groups = two_groups;
		o->ngroups = 2;
	}
	o->sync = 0;
	if (s->dead_letter)
	{
		snprintf(dl, dlsize, "%s/%s", basedir, s->dead_letter);
		o->dead_letter = dl;
	}
}

static MemStore *
store_for(const Setup *s)
{
	MemStore   *st = mem_store_new();

	st->ferretdb = s->ferretdb;
	for (int i = 0; i < 4 && s->unique[i]; i++)
	{
		char		c[64];
		const char *dot = strchr(s->unique[i], '.');

		snprintf(c, sizeof(c), "%.*s", (int) (dot - s->unique[i]), s->unique[i]);
		mem_unique(st, DB, c, dot + 1);
	}
	return st;
}

/*
 * One run of the applier over what DIR/changes holds: until drained, or
 * (until_dead) until the server dies.  0, or -1 with err set.
 */
static int
run_applier(const Setup *s, MemStore *st, const char *dir, int until_dead, char *err, size_t errsize)
{
	ApplyOptions o;
	char		dl[512];
	int			rc;

	options(&o, s, dir, dl, sizeof(dl));
	err[0] = '\0';
	rc = apply_open_target(&o, mem_target(st), NULL, err, errsize);
	if (rc == 0)
		rc = apply_start(err, errsize);
	if (rc == 0 && until_dead)
	{
		/* the cut is reached as in a run without it, or the run ends first */
		for (int waited = 0; !st->dead && waited < 3000; waited++)
		{
			ApplyStats as;

			apply_stats(&as);
			if (apply_failed(NULL, 0) || (as.caught_up && as.buffer_bytes == 0 && waited > 50))
				break;
			usleep(1000);
		}
		rc = apply_stop(0, err, errsize);
	}
	else if (rc == 0)
		rc = apply_stop(1, err, errsize);
	apply_close();
	return rc;
}

/*
 * An empty array as one libbson writes it: "[  ]" (Debian 12's) or "[ ]"
 * (Debian 13's), in place
 */
static void
one_empty_array(char *s)
{
	char	   *p;

	while ((p = strstr(s, "[  ]")) != NULL)
		memmove(p + 1, p + 2, strlen(p + 2) + 1);
}

/* The data collections, for comparison */
static char *
dump_all(MemStore *st, const Setup *s)
{
	size_t		total = 1;
	char	   *out = calloc(1, 1);

	for (int i = 0; i < 4 && s->colls[i]; i++)
	{
		char	   *d = mem_dump(st, DB, s->colls[i]);

		total += strlen(s->colls[i]) + strlen(d) + 4;
		out = realloc(out, total);
		strcat(out, s->colls[i]);
		strcat(out, ": ");
		strcat(out, d);
		strcat(out, "\n");
		free(d);
	}
	one_empty_array(out);
	return out;
}

/* A run without faults: its collections, and the write statements it took */
static char *
clean_run(const Setup *s, const Workload *w, long *statements, char *err, size_t errsize)
{
	char		dir[300];
	MemStore   *st = store_for(s);
	char	   *out;

	snprintf(dir, sizeof(dir), "%s/clean", basedir);
	write_all(s, w, dir, s->per_segment ? s->per_segment : 2);
	if (s->initial)
		write_initial(dir, s->initial);
	if (run_applier(s, st, dir, 0, err, errsize) != 0)
		fprintf(stderr, "clean run: %s\n", err);
	out = dump_all(st, s);
	*statements = st->statements;
	mem_store_free(st);
	remove_dir(dir);
	return out;
}

/*
 * The server dies at every write statement of the run in turn, having
 * applied it or not; a second run must end with the clean run's
 * collections, without error.
 */
static void
cut_at_every_write(const char *name, const Setup *s, const Workload *w, const char *clean)
{
	char		err[4096];
	long		n;
	char	   *expect = clean_run(s, w, &n, err, sizeof(err));
	int			bad = 0;
	int			reached = 0;

	check(n > 0, "%s: the clean run wrote (%ld statements)", name, n);
	check(clean == NULL || strcmp(expect, clean) == 0, "%s: the run without a cut ends with what the "
		  "events say:\n%sexpected:\n%s", name, expect, clean ? clean : "");
	for (long k = 1; k <= n; k++)
		for (int applied = 0; applied <= 1; applied++)
		{
			char		dir[300];
			MemStore   *st = store_for(s);
			char	   *got;
			int			rc;

			snprintf(dir, sizeof(dir), "%s/cut", basedir);
			write_all(s, w, dir, s->per_segment ? s->per_segment : 2);
			if (s->initial)
				write_initial(dir, s->initial);
			st->cut_at = k;
			st->cut_applied = applied;
			(void) run_applier(s, st, dir, 1, err, sizeof(err));
			reached += st->dead;
			st->cut_at = 0;
			rc = run_applier(s, st, dir, 0, err, sizeof(err));
			got = dump_all(st, s);
			if (rc != 0 || strcmp(got, expect) != 0)
			{
				if (bad++ < 3)
					check(0, "%s: cut at statement %ld of %ld (%s): rc %d %s\nexpected:\n%sgot:\n%s",
						  name, k, n, applied ? "applied" : "not applied", rc, err, expect, got);
			}
			else
				passed++;
			free(got);
			mem_store_free(st);
			remove_dir(dir);
		}
	if (bad > 3)
		check(0, "%s: %d more cuts failed", name, bad - 3);
	/* a run's statements may differ by a store of the position (once a second): nearly all */
	check(reached >= 2 * n - 2, "%s: the server died at %d of %ld cuts", name, reached, 2 * n);
	printf("%s: a cut at each of %ld write statements, applied or not: %d of %ld runs "
		   "converged\n", name, n, 2 * (int) n - bad, 2 * n);
	free(expect);
}

/* The records of a dead-letter file under basedir, removed */
static int
dead_letters(const char *name)
{
	char		path[600];
	FILE	   *f;
	int			records = 0;
	uint8_t		len[4];

	snprintf(path, sizeof(path), "%s/%s", basedir, name);
	f = fopen(path, "rb");
	while (f && fread(len, 1, 4, f) == 4)
	{
		uint32_t	l = len[0] | len[1] << 8 | len[2] << 16 | (uint32_t) len[3] << 24;

		records++;
		if (l < 5 || fseek(f, (long) l - 4, SEEK_CUR) != 0)
			break;
	}
	if (f)
		fclose(f);
	unlink(path);
	return records;
}

/* ---------------------------------------------------------------------
 * Cases
 * --------------------------------------------------------------------- */

/* Events batched into few calls; under FerretDB none larger than 49 */
static void
test_batching(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"t"}, .batch_events = 1000, .per_segment = 100};
	char		err[4096];
	char		dir[300];
	MemStore   *st;
	char	   *got;

	begin(w);
	for (int i = 0; i < 300; i++)
		ins(w, "t", i, "a", "x");
	for (int i = 0; i < 300; i += 3)
		upd(w, "t", i, "a", "y");
	snprintf(dir, sizeof(dir), "%s/batch", basedir);
	write_segments(w, dir, 100);
	st = store_for(&s);
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0, "batching: run: %s", err);
	check(mem_coll(st, DB, "t")->n == 300, "batching: 300 documents, got %d", mem_coll(st, DB, "t")->n);
	got = mem_dump(st, DB, "t");
	check(strstr(got, "{ \"_id\" : 3, \"a\" : \"y\" }") != NULL && strstr(got, "{ \"_id\" : 4, \"a\" : \"x\" }") != NULL,
		  "batching: updates applied");
	free(got);
	/* 400 events: the data in one call, the position and the intent around it */
	check(st->calls <= 10, "batching: 400 events in %ld calls", st->calls);
	mem_store_free(st);
	remove_dir(dir);

	/* FerretDB: at most 49 statements a call, the batch as large */
	s.ferretdb = 1;
	write_segments(w, dir, 100);
	st = store_for(&s);
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0, "batching (FerretDB): run: %s", err);
	check(mem_coll(st, DB, "t")->n == 300, "batching (FerretDB): 300 documents");
	check(st->calls >= 9 && st->calls <= 18, "batching (FerretDB): 400 events in %ld calls of at most 49",
		  st->calls);
	mem_store_free(st);
	remove_dir(dir);
	workload_free(w);
	free(w);
}

/* A key change keeps the TOASTed field of the old document */
static void
test_key_change(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"k"}, .per_segment = 1};
	char		err[4096];
	long		n;
	char	   *got;
	bson_t	   *f = BCON_NEW("a", BCON_UTF8("x"), "big", BCON_UTF8("TOASTED"));

	begin(w);
	row(w, "insert", "k", 1, f, NULL);
	ins(w, "k", 5, "a", "other");
	begin(w);
	key_change(w, "k", 1, 2, "y");
	begin(w);
	upd(w, "k", 2, "a", "z");
	got = clean_run(&s, w, &n, err, sizeof(err));
	check(strcmp(got, "k: [{ \"_id\" : 2, \"a\" : \"z\", \"big\" : \"TOASTED\" }, { \"_id\" : 5, \"a\" : \"other\" }]\n") == 0,
		  "key change: the TOASTed field taken from the old document: %s", got);
	free(got);
	cut_at_every_write("key change", &s, w,
					   "k: [{ \"_id\" : 2, \"a\" : \"z\", \"big\" : \"TOASTED\" }, { \"_id\" : 5, \"a\" : \"other\" }]\n");
	bson_destroy(f);
	workload_free(w);
	free(w);
}

/*
 * Values passed between rows under a unique index in one transaction, a
 * key change and a truncate: a replay after a cut anywhere converges.
 */
static void
test_unique_replay(int ferretdb)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"uq", "k"}, .unique = {"uq.u"}, .batch_events = 4, .per_segment = 1,
	.ferretdb = ferretdb};

	begin(w);
	for (int g = 0; g < 3; g++)
	{
		char		v[16];

		snprintf(v, sizeof(v), "x%d", g);
		ins(w, "uq", 100 + g, "u", v);
	}
	{
		bson_t	   *f = BCON_NEW("a", BCON_UTF8("x"), "big", BCON_UTF8("T"));

		row(w, "insert", "k", 1, f, NULL);
		bson_destroy(f);
	}
	begin(w);
	for (int g = 0; g < 3; g++)
	{
		char		v[16];
		char		vw[16];

		snprintf(v, sizeof(v), "v%d", g);
		snprintf(vw, sizeof(vw), "w%d", g);
		ins(w, "uq", g, "u", v);
		upd(w, "uq", g, "u", vw);
		upd(w, "uq", 100 + g, "u", v);
	}
	begin(w);
	key_change(w, "k", 1, 2, "y");
	begin(w);
	del(w, "uq", 0);
	truncate_all(w, "k");
	ins(w, "k", 9, "a", "after");
	cut_at_every_write(ferretdb ? "unique index replay (FerretDB)" : "unique index replay", &s, w,
					   "uq: [{ \"_id\" : 1, \"u\" : \"w1\" }, { \"_id\" : 100, \"u\" : \"v0\" }, "
					   "{ \"_id\" : 101, \"u\" : \"v1\" }, { \"_id\" : 102, \"u\" : \"v2\" }, "
					   "{ \"_id\" : 2, \"u\" : \"w2\" }]\n"
					   "k: [{ \"_id\" : 9, \"a\" : \"after\" }]\n");
	workload_free(w);
	free(w);
}

/* A write refused: the run stops naming it, or with --dead-letter goes on */
static void
test_refusal(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"r"}, .per_segment = 1};
	char		err[4096];
	char		dir[300];
	MemStore   *st;

	begin(w);
	ins(w, "r", 1, "a", "ok");
	ins(w, "r", 2, "a", "POISON");
	ins(w, "r", 3, "a", "ok");
	begin(w);
	upd(w, "r", 77, "a", "no such document");
	ins(w, "r", 4, "a", "ok");
	snprintf(dir, sizeof(dir), "%s/refusal", basedir);
	write_segments(w, dir, 1);
	st = store_for(&s);
	st->refused_value = "POISON";
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 &&
		  strstr(err, "_id 2 in db.r") != NULL && strstr(err, "a value it refuses") != NULL,
		  "refusal: the run stops naming the write: %s", err);
	check(mem_coll(st, DB, "r")->n == 1, "refusal: nothing past it applied (%d documents)",
		  mem_coll(st, DB, "r")->n);
	/* the next run stops there again */
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 && strstr(err, "_id 2 in db.r") != NULL,
		  "refusal: the next run stops there again");
	mem_store_free(st);
	remove_dir(dir);

	s.dead_letter = "dead.bson";
	write_segments(w, dir, 1);
	st = store_for(&s);
	st->refused_value = "POISON";
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0, "refusal (dead letter): run: %s", err);
	{
		char	   *got = mem_dump(st, DB, "r");

		check(strcmp(got, "[{ \"_id\" : 1, \"a\" : \"ok\" }, { \"_id\" : 3, \"a\" : \"ok\" }, "
					 "{ \"_id\" : 4, \"a\" : \"ok\" }]") == 0,
			  "refusal (dead letter): the rest applied: %s", got);
		free(got);
	}
	/* the refused value, and the update of a document not in the target */
	{
		int			records = dead_letters("dead.bson");

		check(records == 2, "refusal (dead letter): 2 records, got %d", records);
	}
	mem_store_free(st);
	remove_dir(dir);
	workload_free(w);
	free(w);
}

/*
 * Refused in a call whose error index cannot be trusted (FerretDB): found
 * by writing them again one at a time, which replays writes applied
 * already under a unique index: those collisions are the replay's own.
 */
static void
test_refusal_unknown_index(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"uq"}, .unique = {"uq.u"}, .per_segment = 1, .ferretdb = 1,
	.dead_letter = "dead2.bson"};
	char		err[4096];
	char		dir[300];
	MemStore   *st;
	char	   *got;

	begin(w);
	ins(w, "uq", 1, "u", "v");
	upd(w, "uq", 1, "u", "w");
	ins(w, "uq", 2, "u", "v");
	ins(w, "uq", 3, "u", "POISON");
	ins(w, "uq", 4, "u", "z");
	snprintf(dir, sizeof(dir), "%s/unknown", basedir);
	write_segments(w, dir, 1);
	st = store_for(&s);
	st->refused_value = "POISON";
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0,
		  "refusal at an unknown index: the run goes on: %s", err);
	got = mem_dump(st, DB, "uq");
	check(strcmp(got, "[{ \"_id\" : 1, \"u\" : \"w\" }, { \"_id\" : 2, \"u\" : \"v\" }, "
				 "{ \"_id\" : 4, \"u\" : \"z\" }]") == 0,
		  "refusal at an unknown index: the others applied, the culprit alone refused: %s", got);
	{
		int			records = dead_letters("dead2.bson");

		check(records == 1, "refusal at an unknown index: the culprit alone dead-lettered, %d records",
			  records);
	}
	free(got);
	mem_store_free(st);
	remove_dir(dir);

	/* without --dead-letter: the run stops naming the culprit, not a write applied before it */
	write_segments(w, dir, 1);
	s.dead_letter = NULL;
	st = store_for(&s);
	st->refused_value = "POISON";
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 && strstr(err, "_id 3 in db.uq") != NULL,
		  "refusal at an unknown index: the culprit named: %s", err);
	mem_store_free(st);
	remove_dir(dir);

	/* the same value at which FerretDB closes the connection: named, not retried forever */
	write_segments(w, dir, 1);
	st = store_for(&s);
	st->closes_at_value = "POISON";
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 && strstr(err, "_id 3 in db.uq") != NULL &&
		  strstr(err, "closed the connection") != NULL,
		  "a connection closed at a value: that write named: %s", err);
	mem_store_free(st);
	remove_dir(dir);
	workload_free(w);
	free(w);
}

/* Transient codes are retried; a write concern that can never be met stops the run */
static void
test_retries(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"t"}, .per_segment = 1};
	char		err[4096];
	char		dir[300];
	MemStore   *st;

	begin(w);
	ins(w, "t", 1, "a", "x");
	ins(w, "t", 2, "a", "y");
	begin(w);
	upd(w, "t", 1, "a", "z");
	snprintf(dir, sizeof(dir), "%s/retries", basedir);
	write_segments(w, dir, 1);
	st = store_for(&s);
	st->fault_coll = "t";
	st->transient_calls = 2;
	st->transient_applies = 1;
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0, "transient code: retried: %s", err);
	{
		char	   *got = mem_dump(st, DB, "t");

		check(strcmp(got, "[{ \"_id\" : 1, \"a\" : \"z\" }, { \"_id\" : 2, \"a\" : \"y\" }]") == 0 &&
			  st->transient_calls == 0,
			  "transient code after a statement applied: the writes again, all applied: %s", got);
		free(got);
	}
	mem_store_free(st);
	remove_dir(dir);

	write_segments(w, dir, 1);
	st = store_for(&s);
	st->fault_coll = "t";
	st->write_concern_fatal = 1;
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 && strstr(err, "write concern") != NULL,
		  "write concern never met: the run stops with it: %s", err);
	mem_store_free(st);
	remove_dir(dir);

	/* a connection lost at every statement in turn, applied or not: the same documents */
	{
		long		n;
		char	   *expect = clean_run(&s, w, &n, err, sizeof(err));
		int			bad = 0;

		for (long k = 1; k <= n; k++)
			for (int applied = 0; applied <= 1; applied++)
			{
				char	   *got;

				write_segments(w, dir, 1);
				st = store_for(&s);
				st->lose_at = k;
				st->cut_applied = applied;
				if (run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 ||
					strcmp((got = dump_all(st, &s)), expect) != 0)
					bad++;
				else
					free(got);
				mem_store_free(st);
				remove_dir(dir);
			}
		check(bad == 0, "a connection lost at each of %ld statements: %d runs differ", n, bad);
		free(expect);
	}
	workload_free(w);
	free(w);
}

/* The first copy, then changes that move a unique value: a cut anywhere, loaded again, converges */
static void
test_first_copy(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"c"}, .per_segment = 1, .initial = 40};
	char		err[4096];
	long		n;
	char	   *got;

	begin(w);
	upd(w, "c", 1, "u", "moved");
	upd(w, "c", 2, "u", "u1");
	ins(w, "c", 100, "u", "new");
	got = clean_run(&s, w, &n, err, sizeof(err));
	check(strstr(got, "{ \"_id\" : 2, \"u\" : \"u1\" }") != NULL && strstr(got, "{ \"_id\" : 39, \"u\" : \"u39\" }") != NULL &&
		  strstr(got, "{ \"_id\" : 100, \"u\" : \"new\" }") != NULL, "first copy: loaded, then the changes: %s", got);
	free(got);
	cut_at_every_write("first copy", &s, w, NULL);
	workload_free(w);
	free(w);
}

/*
 * A key change refused: the dead-letter file holds the document that was
 * refused, with the TOASTed field taken from the old document; a key change
 * whose old document is missing is refused, not written short
 */
static void
test_key_change_refused(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"k"}, .per_segment = 1, .dead_letter = "dead3.bson"};
	char		err[4096];
	char		dir[300];
	char		path[600];
	MemStore   *st;
	bson_t	   *f = BCON_NEW("a", BCON_UTF8("x"), "big", BCON_UTF8("TOASTED"));
	FILE	   *fp;
	uint8_t		buf[4096];
	size_t		len;

	begin(w);
	row(w, "insert", "k", 1, f, NULL);
	begin(w);
	key_change(w, "k", 1, 2, "POISON");
	begin(w);
	key_change(w, "k", 50, 51, "no old document");
	snprintf(dir, sizeof(dir), "%s/kcref", basedir);

	/* without --dead-letter: the run stops before the old document is deleted */
	s.dead_letter = NULL;
	write_segments(w, dir, 1);
	st = store_for(&s);
	st->refused_value = "POISON";
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 && strstr(err, "_id 2 in db.k") != NULL,
		  "key change refused: the run stops naming it: %s", err);
	{
		char	   *got = mem_dump(st, DB, "k");

		check(strcmp(got, "[{ \"_id\" : 1, \"a\" : \"x\", \"big\" : \"TOASTED\" }]") == 0,
			  "key change refused: the old document kept, with its TOASTed field: %s", got);
		free(got);
	}
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 && strstr(err, "_id 2 in db.k") != NULL &&
		  strstr(err, "a value it refuses") != NULL,
		  "key change refused: the next run stops there again, for the same reason: %s", err);
	mem_store_free(st);
	remove_dir(dir);

	s.dead_letter = "dead3.bson";
	write_segments(w, dir, 1);
	st = store_for(&s);
	st->refused_value = "POISON";
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0, "key change refused: run: %s", err);
	snprintf(path, sizeof(path), "%s/dead3.bson", basedir);
	fp = fopen(path, "rb");
	len = fp ? fread(buf, 1, sizeof(buf), fp) : 0;
	if (fp)
		fclose(fp);
	check(len > 0 && memmem(buf, len, "TOASTED", 7) != NULL && memmem(buf, len, "POISON", 6) != NULL,
		  "key change refused: the dead letter holds the merged document (its TOASTed field)");
	check(memmem(buf, len, "found no old document", 21) != NULL,
		  "key change without its old document: refused, in the dead-letter file");
	check(dead_letters("dead3.bson") == 2, "key change refused: 2 records");
	check(mem_coll(st, DB, "k")->n == 0, "key change refused (dead letter): the old key deleted, "
		  "neither new document written short (%d documents)",
		  mem_coll(st, DB, "k")->n);
	mem_store_free(st);
	remove_dir(dir);
	bson_destroy(f);
	workload_free(w);
	free(w);
}

/* ---------------------------------------------------------------------
 * Rows embedded in their parent's document (embed_apply.c), with events
 * shaped as the plugin writes them (test/expected/embed.out)
 * --------------------------------------------------------------------- */

/* embeddedFields of orders: lines, an array */
static void
parent_fields(bson_t *e)
{
	bson_t		arr;
	bson_t		f;
	bson_t		empty;

	BSON_APPEND_ARRAY_BEGIN(e, "embeddedFields", &arr);
	BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &f);
	BSON_APPEND_UTF8(&f, "field", "lines");
	BSON_APPEND_UTF8(&f, "shape", "array");
	BSON_APPEND_ARRAY_BEGIN(&f, "default", &empty);
	bson_append_array_end(&f, &empty);
	bson_append_document_end(&arr, &f);
	bson_append_array_end(e, &arr);
}

/* an order's insert, replace or delete */
static void
order(Workload *w, const char *op, int id, const char *customer)
{
	bson_t	   *e = event_head(w, op, "orders");

	key(e, id);
	if (customer)
	{
		bson_t		full;

		BSON_APPEND_DOCUMENT_BEGIN(e, "fullDocument", &full);
		BSON_APPEND_INT32(&full, "_id", id);
		BSON_APPEND_INT32(&full, "id", id);
		BSON_APPEND_UTF8(&full, "customer", customer);
		bson_append_document_end(e, &full);
	}
	parent_fields(e);
	add(w, e);
}

/*
 * A position: {ns, documentKey, path: [{lines, line_no}, ({taxes, tax})]}
 * (order < 0: no documentKey and no keys, a truncate's)
 */
static void
position(bson_t *pos, int order, int line_no, const char *tax, int levels)
{
	bson_t		ns;
	bson_t		dk;
	bson_t		path;
	bson_t		lv;
	bson_t		k;

	BSON_APPEND_DOCUMENT_BEGIN(pos, "ns", &ns);
	BSON_APPEND_UTF8(&ns, "db", DB);
	BSON_APPEND_UTF8(&ns, "coll", "orders");
	bson_append_document_end(pos, &ns);
	if (order >= 0)
	{
		BSON_APPEND_DOCUMENT_BEGIN(pos, "documentKey", &dk);
		BSON_APPEND_INT32(&dk, "_id", order);
		bson_append_document_end(pos, &dk);
	}
	BSON_APPEND_ARRAY_BEGIN(pos, "path", &path);
	BSON_APPEND_DOCUMENT_BEGIN(&path, "0", &lv);
	BSON_APPEND_UTF8(&lv, "field", "lines");
	BSON_APPEND_UTF8(&lv, "shape", "array");
	if (order >= 0)
	{
		BSON_APPEND_DOCUMENT_BEGIN(&lv, "key", &k);
		BSON_APPEND_INT32(&k, "line_no", line_no);
		bson_append_document_end(&lv, &k);
	}
	bson_append_document_end(&path, &lv);
	if (levels > 1)
	{
		BSON_APPEND_DOCUMENT_BEGIN(&path, "1", &lv);
		BSON_APPEND_UTF8(&lv, "field", "taxes");
		BSON_APPEND_UTF8(&lv, "shape", "array");
		if (order >= 0)
		{
			BSON_APPEND_DOCUMENT_BEGIN(&lv, "key", &k);
			BSON_APPEND_UTF8(&k, "tax", tax);
			bson_append_document_end(&lv, &k);
		}
		bson_append_document_end(&path, &lv);
	}
	bson_append_array_end(pos, &path);
	BSON_APPEND_BOOL(pos, "ownCollection", false);
}

/*
 * A line's event: op on order_lines, from (order, -1: none) and into
 * (order, -1: none); item NULL for a delete; note: a TOASTed column, NULL
 * for none; partial: the note left out of the event (the WAL does not hold
 * it), named in unchangedFields
 */
static void
line_ex(Workload *w, const char *op, int from, int into, int line_no, const char *item,
		const char *note, int partial);

static void
line(Workload *w, const char *op, int from, int into, int line_no, const char *item)
{
	line_ex(w, op, from, into, line_no, item, NULL, 0);
}

static void
line_ex(Workload *w, const char *op, int from, int into, int line_no, const char *item,
		const char *note, int partial)
{
	bson_t	   *e = event_head(w, op, "order_lines");
	bson_t		k;
	bson_t		id;
	bson_t		pos;

	BSON_APPEND_DOCUMENT_BEGIN(e, "documentKey", &k);
	BSON_APPEND_DOCUMENT_BEGIN(&k, "_id", &id);
	BSON_APPEND_INT32(&id, "order_id", into >= 0 ? into : from);
	BSON_APPEND_INT32(&id, "line_no", line_no);
	bson_append_document_end(&k, &id);
	bson_append_document_end(e, &k);
	if (from >= 0)
	{
		BSON_APPEND_DOCUMENT_BEGIN(e, "embeddedFrom", &pos);
		position(&pos, from, line_no, NULL, 1);
		bson_append_document_end(e, &pos);
	}
	if (into >= 0)
	{
		bson_t		el;
		bson_t		fields;
		bson_t		f;
		bson_t		empty;

		BSON_APPEND_DOCUMENT_BEGIN(e, "embeddedIn", &pos);
		position(&pos, into, line_no, NULL, 1);
		BSON_APPEND_DOCUMENT_BEGIN(&pos, "element", &el);
		BSON_APPEND_INT32(&el, "line_no", line_no);
		BSON_APPEND_UTF8(&el, "item", item);
		if (note && !partial)
			BSON_APPEND_UTF8(&el, "note", note);
		bson_append_document_end(&pos, &el);
		if (partial)
		{
			bson_t		names;

			BSON_APPEND_BOOL(&pos, "partial", true);
			BSON_APPEND_ARRAY_BEGIN(&pos, "unchangedFields", &names);
			BSON_APPEND_UTF8(&names, "0", "note");
			bson_append_array_end(&pos, &names);
		}
		BSON_APPEND_ARRAY_BEGIN(&pos, "elementFields", &fields);
		BSON_APPEND_DOCUMENT_BEGIN(&fields, "0", &f);
		BSON_APPEND_UTF8(&f, "field", "taxes");
		BSON_APPEND_UTF8(&f, "shape", "array");
		BSON_APPEND_ARRAY_BEGIN(&f, "default", &empty);
		bson_append_array_end(&f, &empty);
		bson_append_document_end(&fields, &f);
		bson_append_array_end(&pos, &fields);
		bson_append_document_end(e, &pos);
	}
	add(w, e);
}

/* A line tax's event (from, into as for line) */
static void
tax(Workload *w, const char *op, int from, int into, int line_no, const char *name, int rate)
{
	bson_t	   *e = event_head(w, op, "line_taxes");
	bson_t		k;
	bson_t		id;
	bson_t		pos;

	BSON_APPEND_DOCUMENT_BEGIN(e, "documentKey", &k);
	BSON_APPEND_DOCUMENT_BEGIN(&k, "_id", &id);
	BSON_APPEND_INT32(&id, "order_id", into >= 0 ? into : from);
	BSON_APPEND_INT32(&id, "line_no", line_no);
	BSON_APPEND_UTF8(&id, "tax", name);
	bson_append_document_end(&k, &id);
	bson_append_document_end(e, &k);
	if (from >= 0)
	{
		BSON_APPEND_DOCUMENT_BEGIN(e, "embeddedFrom", &pos);
		position(&pos, from, line_no, name, 2);
		bson_append_document_end(e, &pos);
	}
	if (into >= 0)
	{
		bson_t		el;

		BSON_APPEND_DOCUMENT_BEGIN(e, "embeddedIn", &pos);
		position(&pos, into, line_no, name, 2);
		BSON_APPEND_DOCUMENT_BEGIN(&pos, "element", &el);
		BSON_APPEND_UTF8(&el, "tax", name);
		BSON_APPEND_INT32(&el, "rate", rate);
		bson_append_document_end(&pos, &el);
		bson_append_document_end(e, &pos);
	}
	add(w, e);
}

static void
truncate_taxes(Workload *w)
{
	bson_t	   *e = event_head(w, "truncate", "line_taxes");
	bson_t		pos;

	BSON_APPEND_DOCUMENT_BEGIN(e, "embeddedIn", &pos);
	position(&pos, -1, 0, NULL, 2);
	bson_append_document_end(e, &pos);
	add(w, e);
}

/*
 * Orders with their lines and the lines' taxes: inserts, an update, moves
 * between orders, an order's key change with its rows following (ON UPDATE
 * CASCADE), a line inserted before its order (deferred constraints), a
 * truncate of the taxes, deletes; elements kept in their key's order.  The
 * run without a cut ends with the documents bson_document() makes, and a
 * cut at every write, applied or not, converges on them.
 */
static void
test_embedded(int ferretdb, int batch_events)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"orders", "order_lines"}, .batch_events = batch_events,
	.per_segment = 1, .ferretdb = ferretdb};
	char		name[64];
	const char *want =
		"orders: [{ \"_id\" : 3, \"id\" : 3, \"customer\" : \"cy\", \"lines\" : [ "
		"{ \"line_no\" : 2, \"item\" : \"ink3\", \"taxes\" : [ { \"tax\" : \"eco\", \"rate\" : 3 } ] } ] }, "
		"{ \"_id\" : 4, \"id\" : 4, \"customer\" : \"dee\", \"lines\" : [ "
		"{ \"line_no\" : 1, \"item\" : \"late\", \"taxes\" : [ ] }, "
		"{ \"line_no\" : 10, \"item\" : \"cap2\", \"note\" : \"NOTE\", \"taxes\" : [ { \"tax\" : \"C\", \"rate\" : 1 }, "
		"{ \"tax\" : \"a\", \"rate\" : 1 }, { \"tax\" : \"b\", \"rate\" : 1 } ] } ] }]\n"
		"order_lines: []\n";

	begin(w);
	order(w, "insert", 1, "ann");
	order(w, "insert", 2, "bob");
	line(w, "insert", -1, 1, 2, "ink");
	line(w, "insert", -1, 1, 1, "pen");
	tax(w, "insert", -1, 1, 2, "vat", 1);
	tax(w, "insert", -1, 1, 2, "abc", 2);
	begin(w);
	line(w, "replace", -1, 1, 2, "ink2");
	/* a move to order 2: its key holds the foreign key, a key change */
	line(w, "delete", 1, -1, 1, NULL);
	line(w, "insert", -1, 2, 1, "pen");
	begin(w);
	/* order 1 becomes 3, its rows follow */
	order(w, "delete", 1, NULL);
	order(w, "insert", 3, "ann");
	line(w, "delete", 1, -1, 2, NULL);
	line(w, "insert", -1, 3, 2, "ink2");
	tax(w, "delete", 1, -1, 2, "abc", 0);
	tax(w, "insert", -1, 3, 2, "abc", 2);
	tax(w, "delete", 1, -1, 2, "vat", 0);
	tax(w, "insert", -1, 3, 2, "vat", 1);
	begin(w);
	/* deferred: the line before its order */
	line(w, "insert", -1, 4, 1, "late");
	order(w, "insert", 4, "dee");
	line(w, "insert", -1, 3, 10, "cap");
	begin(w);
	order(w, "replace", 3, "cy");
	truncate_taxes(w);
	tax(w, "insert", -1, 3, 2, "eco", 3);
	begin(w);
	/* order 2 deleted, its line by ON DELETE CASCADE after it */
	order(w, "delete", 2, NULL);
	line(w, "delete", 2, -1, 1, NULL);
	begin(w);
	/* a line's update keeps its taxes; taxes in their key's byte order */
	line(w, "replace", -1, 3, 2, "ink3");
	tax(w, "insert", -1, 3, 10, "b", 1);
	tax(w, "insert", -1, 3, 10, "a", 1);
	tax(w, "insert", -1, 3, 10, "C", 1);
	begin(w);
	/* a TOASTed note: an update that leaves it, then a move that leaves it */
	line_ex(w, "replace", -1, 3, 10, "cap", "NOTE", 0);
	begin(w);
	line_ex(w, "update", -1, 3, 10, "cap2", "NOTE", 1);
	begin(w);
	line(w, "delete", 3, -1, 10, NULL);
	line_ex(w, "insert", -1, 4, 10, "cap2", "NOTE", 1);
	tax(w, "delete", 3, -1, 10, "C", 0);
	tax(w, "insert", -1, 4, 10, "C", 1);
	tax(w, "delete", 3, -1, 10, "a", 0);
	tax(w, "insert", -1, 4, 10, "a", 1);
	tax(w, "delete", 3, -1, 10, "b", 0);
	tax(w, "insert", -1, 4, 10, "b", 1);
	snprintf(name, sizeof(name), "embedded rows (%sbatches of %d)", ferretdb ? "FerretDB, " : "",
			 batch_events);
	cut_at_every_write(name, &s, w, want);
	workload_free(w);
	free(w);
}

/*
 * A kept collection (keep_collection): a row's events written into its own
 * collection too.  A key change whose row the WAL does not hold whole (its
 * TOASTed field left out) keeps that field in both places.
 */
static void
kept_event(Workload *w, const char *op, int id, int code, const char *label, int partial)
{
	bson_t	   *e = event_head(w, op, "loose");
	bson_t		pos;
	bson_t		ns;
	bson_t		dk;
	bson_t		path;
	bson_t		lv;
	bson_t		k;

	key(e, id);
	if (label)
	{
		bson_t		full;

		BSON_APPEND_DOCUMENT_BEGIN(e, "fullDocument", &full);
		BSON_APPEND_INT32(&full, "_id", id);
		BSON_APPEND_INT32(&full, "id", id);
		BSON_APPEND_UTF8(&full, "label", label);
		if (!partial)
			BSON_APPEND_UTF8(&full, "big", "TOASTED");
		bson_append_document_end(e, &full);
		if (partial)
		{
			bson_t		arr;

			BSON_APPEND_ARRAY_BEGIN(e, "unchangedFields", &arr);
			BSON_APPEND_UTF8(&arr, "0", "big");
			bson_append_array_end(e, &arr);
		}
	}
	BSON_APPEND_DOCUMENT_BEGIN(e, label ? "embeddedIn" : "embeddedFrom", &pos);
	BSON_APPEND_DOCUMENT_BEGIN(&pos, "ns", &ns);
	BSON_APPEND_UTF8(&ns, "db", DB);
	BSON_APPEND_UTF8(&ns, "coll", "codes");
	bson_append_document_end(&pos, &ns);
	BSON_APPEND_DOCUMENT_BEGIN(&pos, "documentKey", &dk);
	BSON_APPEND_INT32(&dk, "_id", code);
	bson_append_document_end(&pos, &dk);
	BSON_APPEND_ARRAY_BEGIN(&pos, "path", &path);
	BSON_APPEND_DOCUMENT_BEGIN(&path, "0", &lv);
	BSON_APPEND_UTF8(&lv, "field", "loose");
	BSON_APPEND_UTF8(&lv, "shape", "array");
	BSON_APPEND_DOCUMENT_BEGIN(&lv, "key", &k);
	BSON_APPEND_INT32(&k, "id", id);
	bson_append_document_end(&lv, &k);
	bson_append_document_end(&path, &lv);
	bson_append_array_end(&pos, &path);
	BSON_APPEND_BOOL(&pos, "ownCollection", true);
	if (label)
	{
		bson_t		el;

		BSON_APPEND_DOCUMENT_BEGIN(&pos, "element", &el);
		BSON_APPEND_INT32(&el, "id", id);
		BSON_APPEND_UTF8(&el, "label", label);
		if (!partial)
			BSON_APPEND_UTF8(&el, "big", "TOASTED");
		bson_append_document_end(&pos, &el);
		if (partial)
		{
			bson_t		names;

			BSON_APPEND_BOOL(&pos, "partial", true);
			BSON_APPEND_ARRAY_BEGIN(&pos, "unchangedFields", &names);
			BSON_APPEND_UTF8(&names, "0", "big");
			bson_append_array_end(&pos, &names);
		}
	}
	bson_append_document_end(e, &pos);
	add(w, e);
}

static void
test_embedded_kept(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"codes", "loose"}, .batch_events = 2, .per_segment = 1};
	bson_t	   *c1 = BCON_NEW("id", BCON_INT32(1));

	begin(w);
	{
		bson_t	   *e = event_head(w, "insert", "codes");
		bson_t		full;
		bson_t		arr;
		bson_t		f;
		bson_t		empty;

		key(e, 1);
		BSON_APPEND_DOCUMENT_BEGIN(e, "fullDocument", &full);
		BSON_APPEND_INT32(&full, "_id", 1);
		BSON_APPEND_INT32(&full, "id", 1);
		bson_append_document_end(e, &full);
		BSON_APPEND_ARRAY_BEGIN(e, "embeddedFields", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &f);
		BSON_APPEND_UTF8(&f, "field", "loose");
		BSON_APPEND_UTF8(&f, "shape", "array");
		BSON_APPEND_ARRAY_BEGIN(&f, "default", &empty);
		bson_append_array_end(&f, &empty);
		bson_append_document_end(&arr, &f);
		bson_append_array_end(e, &arr);
		add(w, e);
	}
	kept_event(w, "insert", 1, 1, "one", 0);
	begin(w);
	/* its key from 1 to 5: the delete, then the insert without the TOASTed field */
	kept_event(w, "delete", 1, 1, NULL, 0);
	kept_event(w, "insert", 5, 1, "five", 1);
	cut_at_every_write("a kept collection's key change", &s, w,
					   "codes: [{ \"_id\" : 1, \"id\" : 1, \"loose\" : [ { \"id\" : 5, \"label\" : \"five\", "
					   "\"big\" : \"TOASTED\" } ] }]\n"
					   "loose: [{ \"_id\" : 5, \"id\" : 5, \"label\" : \"five\", \"big\" : \"TOASTED\" }]\n");
	bson_destroy(c1);
	workload_free(w);
	free(w);
}

/*
 * A document that its embedded rows would make larger than the server
 * takes: refused, naming its _id; with --dead-letter, that change in the
 * file and the rest applied
 */
static void
test_embedded_too_large(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"orders"}, .per_segment = 1};
	char	   *big = malloc(1024 * 1024 + 1);
	char		err[4096];
	char		dir[300];
	MemStore   *st;

	memset(big, 'x', 1024 * 1024);
	big[1024 * 1024] = '\0';
	begin(w);
	order(w, "insert", 1, "ann");
	order(w, "insert", 2, "bob");
	for (int i = 1; i <= 17; i++)
	{
		begin(w);
		line(w, "insert", -1, 1, i, big);
	}
	begin(w);
	line(w, "insert", -1, 2, 1, "small");
	snprintf(dir, sizeof(dir), "%s/toolarge", basedir);
	write_segments(w, dir, 1);
	st = store_for(&s);
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 && strstr(err, "_id 1 in db.orders") != NULL &&
		  strstr(err, "more than the server takes") != NULL,
		  "a document too large with its embedded rows: the run stops naming it: %s", err);
	mem_store_free(st);
	remove_dir(dir);

	s.dead_letter = "dead_large.bson";
	write_segments(w, dir, 1);
	st = store_for(&s);
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0, "too large, --dead-letter: run: %s", err);
	{
		char	   *got = mem_dump(st, DB, "orders");

		check(strstr(got, "\"item\" : \"small\"") != NULL,
			  "too large, --dead-letter: the changes after it applied");
		free(got);
	}
	check(dead_letters("dead_large.bson") == 2, "too large, --dead-letter: the changes that would make it too large in the file");
	mem_store_free(st);
	remove_dir(dir);
	free(big);
	workload_free(w);
	free(w);
}

/*
 * An order's key change that its lines follow (ON UPDATE CASCADE, under
 * REPLICA IDENTITY DEFAULT), a line with a TOASTed note the WAL does not
 * hold: taken from the order's document as it was, in the batch, from the
 * batch before it, or after a stop; a cut at every write converges.  The
 * deleted order's stash is gone once the position is past its transaction.
 */
static void
test_embedded_toast_cascade(void)
{
	Workload   *w = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"orders"}, .per_segment = 1};
	const char *want = "orders: [{ \"_id\" : 3, \"id\" : 3, \"customer\" : \"ann\", \"lines\" : [ "
		"{ \"line_no\" : 1, \"item\" : \"pen\", \"note\" : \"NOTE\", \"taxes\" : [ ] }, "
		"{ \"line_no\" : 2, \"item\" : \"ink\", \"note\" : \"LONG\", \"taxes\" : [ ] } ] }, "
		"{ \"_id\" : 9, \"id\" : 9, \"customer\" : \"bob\", \"lines\" : [ ] }]\n";
	char		err[4096];
	long		n;
	char	   *got;

	begin(w);
	order(w, "insert", 1, "ann");
	line_ex(w, "insert", -1, 1, 1, "pen", "NOTE", 0);
	line_ex(w, "insert", -1, 1, 2, "ink", "LONG", 0);
	begin(w);
	order(w, "delete", 1, NULL);
	order(w, "insert", 3, "ann");
	line(w, "delete", 1, -1, 1, NULL);
	line_ex(w, "insert", -1, 3, 1, "pen", "NOTE", 1);
	line(w, "delete", 1, -1, 2, NULL);
	line_ex(w, "insert", -1, 3, 2, "ink", "LONG", 1);
	begin(w);
	order(w, "insert", 9, "bob");
	got = clean_run(&s, w, &n, err, sizeof(err));
	check(strcmp(got, want) == 0,
		  "an order's key change, its lines' TOASTed notes from the order's document as it was: %s", got);
	free(got);

	/* the batch ends after the order's writes, or after each event */
	for (int batch = 1; batch <= 2; batch++)
	{
		char		dir[300];
		char		name[80];
		MemStore   *st = store_for(&s);

		s.batch_events = batch;
		snprintf(dir, sizeof(dir), "%s/toastcascade", basedir);
		write_segments(w, dir, 1);
		check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0,
			  "batches of %d: the moves after the batch that deleted the order: %s", batch, err);
		got = dump_all(st, &s);
		check(strcmp(got, want) == 0, "batches of %d: the notes from the stash: %s", batch, got);
		free(got);
		got = mem_dump(st, DB, "pg_bsonstream");
		check(strstr(got, "deleted") == NULL,
			  "batches of %d: the stash removed once the position is past its transaction: %s", batch, got);
		free(got);
		mem_store_free(st);
		remove_dir(dir);
		snprintf(name, sizeof(name), "TOASTed notes after a key change, batches of %d", batch);
		cut_at_every_write(name, &s, w, want);
	}
	workload_free(w);

	/* a move from a document the target never had: refused, and again at the next run */
	memset(w, 0, sizeof(*w));
	begin(w);
	line(w, "delete", 5, -1, 1, NULL);
	line_ex(w, "insert", -1, 6, 1, "pen", "NOTE", 1);
	{
		char		dir[300];
		MemStore   *st = store_for(&s);

		snprintf(dir, sizeof(dir), "%s/toastnowhere", basedir);
		write_segments(w, dir, 1);
		for (int run = 1; run <= 2; run++)
			check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 &&
				  strstr(err, "element is not in the target") != NULL,
				  "a move whose TOASTed note is nowhere, run %d: refused, not passed over: %s", run, err);
		mem_store_free(st);
		remove_dir(dir);
	}
	workload_free(w);
	free(w);
}

/* ---------------------------------------------------------------------
 * A Citus cluster: two nodes' streams merged in commit order
 * --------------------------------------------------------------------- */

#define T0 1800000000000LL

static void
heartbeat(Workload *w)
{
	add(w, event_start(w, "heartbeat"));
}

/*
 * Key 1 written on node 1, its shard moved to node 2 and written there;
 * node 1's clock set back between two of its commits; node 1's last write
 * merged only once node 2's stream (a heartbeat) is past it.  Applied in
 * commit order, whatever order the nodes' segments are read in; each
 * node's position stored; a cut at every write converges.
 */
static void
test_merge(void)
{
	Workload   *a = calloc(1, sizeof(Workload));
	Workload   *b = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"c"}, .per_segment = 1, .other = b};
	const char *want = "c: [{ \"_id\" : 1, \"v\" : \"moved\" }, { \"_id\" : 2, \"v\" : \"second\" }, "
		"{ \"_id\" : 3, \"v\" : \"late\" }, { \"_id\" : 4, \"v\" : \"b\" }]\n";
	char		err[4096];
	char		dir[300];
	char	   *got;
	MemStore   *st;

	begin_at(a, T0 + 1000);
	ins(a, "c", 1, "v", "before the move");
	ins(a, "c", 2, "v", "first");
	/* the clock set back: later in node 1's stream, so after it */
	begin_at(a, T0 + 990);
	ins(a, "c", 2, "v", "second");
	begin_at(a, T0 + 1020);
	ins(a, "c", 3, "v", "late");

	begin_at(b, T0 + 1010);
	ins(b, "c", 1, "v", "moved");
	ins(b, "c", 4, "v", "b");
	/* node 2's stream before its heartbeat: node 1's write at 1020 waits */
	snprintf(dir, sizeof(dir), "%s/merge", basedir);
	st = store_for(&s);
	{
		Workload	b_early = *b;
		Setup		early = s;

		early.other = &b_early;
		write_all(&early, a, dir, 1);
		check(run_applier(&early, st, dir, 0, err, sizeof(err)) == 0, "merge: a run: %s", err);
		got = dump_all(st, &s);
		check(strcmp(got, "c: [{ \"_id\" : 1, \"v\" : \"moved\" }, { \"_id\" : 2, \"v\" : "
					 "\"second\" }, { \"_id\" : 4, \"v\" : \"b\" }]\n") == 0,
			  "merge: node 1's write at 1020 waits for node 2's stream to pass it; the moved key "
			  "has its new node's value; node 1's order kept when its clock went back: %s", got);
		free(got);
		got = mem_dump(st, DB, "pg_bsonstream");
		check(strstr(got, "\"nodes\" : { \"1\" : { \"token\" : \"0000000000000200") != NULL &&
			  strstr(got, "\"2\" : { \"token\" : \"0000000000000100") != NULL,
			  "merge: each node's position stored, node 1's before its waiting write: %s", got);
		free(got);
	}
	begin_at(b, T0 + 1030);
	heartbeat(b);
	write_all(&s, a, dir, 1);
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0, "merge: the next run: %s", err);
	got = dump_all(st, &s);
	check(strcmp(got, want) == 0, "merge: node 2's heartbeat lets node 1's write at 1020 in: %s", got);
	free(got);
	{
		char		p[4300];
		struct stat sb;

		snprintf(p, sizeof(p), "%s/group-1/changes", dir);
		check(stat(p, &sb) == 0 && sb.st_nlink == 2, "merge: node 1's applied segments removed");
	}
	mem_store_free(st);
	remove_dir(dir);

	cut_at_every_write("two nodes merged", &s, a, want);
	s.batch_events = 1;
	cut_at_every_write("two nodes merged, batches of 1", &s, a, want);
	workload_free(a);
	workload_free(b);
	free(a);
	free(b);
}

/* Write dir/group-<group>/copy-time: the node's clock after its slot was made */
static void
copy_time(const char *dir, int group, int64_t ms)
{
	char		p[4300];
	FILE	   *f;

	snprintf(p, sizeof(p), "%s/group-%d/%s", dir, group, MERGE_COPY_TIME);
	f = fopen(p, "w");
	fprintf(f, "%lld\n", (long long) ms);
	fclose(f);
}

/*
 * A truncate that commits while the nodes' first copies are made cannot be
 * placed between them: refused, and one after them applied
 */
static void
test_merge_truncate_in_copies(void)
{
	Workload   *a = calloc(1, sizeof(Workload));
	Workload   *b = calloc(1, sizeof(Workload));
	Setup		s = {.colls = {"c"}, .per_segment = 1, .other = b};
	char		err[4096];
	char		dir[300];
	char	   *got;
	MemStore   *st;

	begin_at(a, T0 + 1000);
	ins(a, "c", 1, "v", "a");
	begin_at(a, T0 + 1300);
	ins(a, "c", 2, "v", "after");
	begin_at(b, T0 + 1010);
	truncate_all(b, "c");
	begin_at(b, T0 + 1400);
	heartbeat(b);
	snprintf(dir, sizeof(dir), "%s/merge_truncate", basedir);

	/* node 1's copy made after the truncate (its clock then 1050) */
	st = store_for(&s);
	write_all(&s, a, dir, 1);
	copy_time(dir, 1, T0 + 1050);
	copy_time(dir, 2, T0 + 800);
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 &&
		  strstr(err, "a TRUNCATE of c committed while the nodes' first copies were being made") &&
		  strstr(err, "hint: Start over"),
		  "merge: a truncate before the last node's copy was made is refused: %s", err);
	got = dump_all(st, &s);
	check(strstr(got, "after") == NULL, "merge: ... and nothing after it applied: %s", got);
	free(got);
	mem_store_free(st);
	remove_dir(dir);

	/* a shard moved between two nodes' snapshots: its rows in both copies */
	{
		char		g[4300];

		st = store_for(&s);
		write_all(&s, a, dir, 1);
		snprintf(g, sizeof(g), "%s/group-1", dir);
		write_initial(g, 3);
		snprintf(g, sizeof(g), "%s/group-2", dir);
		write_initial(g, 5);
		check(run_applier(&s, st, dir, 0, err, sizeof(err)) != 0 &&
			  strstr(err, "a document of " DB ".c is in the first copies of two nodes") &&
			  strstr(err, "hint: Start over when no shard moves"),
			  "merge: a key in two nodes' first copies stops the load: %s", err);
		mem_store_free(st);
		remove_dir(dir);
	}

	/* every copy made over 200 ms before it (twice the clocks' allowed difference): applied in its place */
	st = store_for(&s);
	write_all(&s, a, dir, 1);
	copy_time(dir, 1, T0 + 805);
	copy_time(dir, 2, T0 + 700);
	check(run_applier(&s, st, dir, 0, err, sizeof(err)) == 0, "merge: a truncate after the copies: %s", err);
	got = dump_all(st, &s);
	check(strcmp(got, "c: [{ \"_id\" : 2, \"v\" : \"after\" }]\n") == 0,
		  "merge: a truncate over 200 ms after the last copy is applied between node 1's writes: %s", got);
	free(got);
	mem_store_free(st);
	remove_dir(dir);
	workload_free(a);
	workload_free(b);
	free(a);
	free(b);
}

int
main(void)
{
	snprintf(basedir, sizeof(basedir), "/tmp/test_applier.%d", (int) getpid());
	if (mkdir(basedir, 0700) != 0)
	{
		perror(basedir);
		return 1;
	}
	/* the applier's messages are the program's stderr: kept out of the result */
	if (getenv("TEST_APPLIER_VERBOSE") == NULL && freopen("/dev/null", "w", stderr) == NULL)
		return 1;
	test_batching();
	test_key_change();
	test_refusal();
	test_refusal_unknown_index();
	test_retries();
	test_first_copy();
	test_key_change_refused();
	test_unique_replay(0);
	test_unique_replay(1);
	test_embedded(0, 5);
	test_embedded(1, 5);
	test_embedded(0, 1);
	test_embedded_kept();
	test_embedded_too_large();
	test_embedded_toast_cascade();
	test_merge();
	test_merge_truncate_in_copies();
	remove_dir(basedir);
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
