/*
 * copy_load.c
 *		The first copy, DIR/initial (a dump directory), loaded into MongoDB
 *		before any change: the documents in unordered batches, then the
 *		indexes of each collection's metadata, one at a time.
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
#include "dump_name.h"

/* A collection of the copy: <db>/<coll>.bson and its metadata */
typedef struct CopyColl
{
	char		db[256];
	char		coll[512];
	char		bson_path[4800];
	bson_t	   *meta;
} CopyColl;

static int
read_file(const char *path, char **out)
{
	FILE	   *f = fopen(path, "rb");
	long		n;

	*out = NULL;
	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
	{
		if (f)
			fclose(f);
		return -1;
	}
	*out = malloc((size_t) n + 1);
	if (*out == NULL || fread(*out, 1, (size_t) n, f) != (size_t) n)
	{
		fclose(f);
		free(*out);
		*out = NULL;
		return -1;
	}
	(*out)[n] = '\0';
	fclose(f);
	return 0;
}

/* Is db.coll empty (or missing)?  1, 0, or -1 (failed) */
static int
collection_empty(const char *db, const char *coll)
{
	bson_t		filter = BSON_INITIALIZER;
	bson_t	   *doc = NULL;
	int			rc = find_one(db, coll, &filter, &doc);

	bson_destroy(&filter);
	if (rc != 0)
		return -1;
	if (doc)
		bson_destroy(doc);
	return doc == NULL;
}

/* A document of the first copy that cannot be written: by the refusal policy */
static int
copy_refused(const char *db, const char *collname, const bson_t *doc, int code, const char *message)
{
	/*
	 * On a Citus cluster a key in two nodes' copies is a shard that moved
	 * between their snapshots: one of them is older, and its changes since
	 * would be applied over the newer
	 */
	if (code == 11000 && applier.o.ngroups > 0)
	{
		fail("a document of %s.%s is in the first copies of two nodes (%s): a shard moved or "
			 "was split while the nodes' first copies were being made\n"
			 "hint: Start over when no shard moves (citus_rebalance_status()): drop every node's "
			 "slot, the target's collections and its progress document, remove the stream's "
			 "directory, and run with --create-slot --initial-copy.",
			 db, collname, message);
		return -1;
	}
	return refuse("document", db, collname, doc, NULL, bson_get_data(doc), doc->len, NULL, code,
				  message);
}

/* Does every refusal of r name one of the n writes? */
static int
indexes_known(const TargetResult *r, int n)
{
	for (int i = 0; i < r->nrefused; i++)
		if (r->refused[i].index < 0 || r->refused[i].index >= n)
			return 0;
	return 1;
}

/* Insert the documents of a copy's batch, unordered; resuming: those there already are no error */
static int
insert_copy_batch(const char *db, const char *collname, bson_t **docs, int n, int resuming)
{
	double		backoff = 0;
	int			lost_here = 0;
	TargetWrite *w = malloc(sizeof(TargetWrite) * n);
	int			rc = 0;

	if (w == NULL)
	{
		fail("out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++)
	{
		w[i].kind = TW_INSERT;
		w[i].selector = NULL;
		w[i].doc = docs[i];
	}
	for (;;)
	{
		TargetResult r;

		target_write_once(db, collname, w, n, 0, &r);
		if (r.status == TARGET_DONE)
		{
			retry_over(&backoff);
			break;
		}
		if (r.status == TARGET_REFUSED && !r.truncated && indexes_known(&r, n))
		{
			/* every other document is written */
			retry_over(&backoff);
			for (int i = 0; i < r.nrefused && rc == 0; i++)
				if (!(r.refused[i].code == 11000 && resuming))
					rc = copy_refused(db, collname, docs[r.refused[i].index], r.refused[i].code,
									  target_refusal_message(&r, i));
			break;
		}
		if (r.status == TARGET_REFUSED)
		{
			/* not known which (or too many to say): each on its own */
			retry_over(&backoff);
			if (n == 1)
			{
				if (!(r.refused[0].code == 11000 && resuming))
					rc = copy_refused(db, collname, docs[0], r.refused[0].code, target_refusal_message(&r, 0));
				break;
			}
			for (int i = 0; i < n && rc == 0; i++)
				rc = insert_copy_batch(db, collname, &docs[i], 1, 1);
			break;
		}
		if (r.status == TARGET_FATAL)
		{
			fail("MongoDB: %s (the first copy of %s.%s)", r.message, db, collname);
			rc = -1;
			break;
		}
		/* RETRY: the documents written before the failure are there now */
		resuming = 1;
		if (r.lost && server_answers() && ++lost_here < 2)
			continue;
		if (lost_here >= 2)
		{
			if (n == 1)
				rc = copy_refused(db, collname, docs[0], 0, LOST_AT_WRITE);
			else
				for (int i = 0; i < n && rc == 0; i++)
					rc = insert_copy_batch(db, collname, &docs[i], 1, 1);
			break;
		}
		if (retry_wait(&backoff, &r) != 0)
		{
			rc = -1;
			break;
		}
	}
	free(w);
	return rc;
}

static int
load_collection_documents(const char *db, const char *coll, const char *path, int resuming)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *buf = NULL;
	size_t		bufsize = 0;
	uint32_t	len;
	bson_t	   *docs[COPY_BATCH];
	int			n = 0;
	int			r;
	int			rc = 0;
	size_t		bytes = 0;

	if (f == NULL)
	{
		fail("could not open \"%s\": %s", path, strerror(errno));
		return -1;
	}
	while (rc == 0 && (r = read_doc(f, &buf, &bufsize, &len)) == 1)
	{
		docs[n] = bson_new_from_data(buf, len);
		if (docs[n] == NULL)
		{
			fail("\"%s\" holds a damaged document", path);
			rc = -1;
			break;
		}
		bytes += len;
		if (++n == COPY_BATCH || bytes >= BATCH_BYTES)
		{
			rc = insert_copy_batch(db, coll, docs, n, resuming);
			for (int i = 0; i < n; i++)
				bson_destroy(docs[i]);
			n = 0;
			bytes = 0;
		}
		if (applier.stop == 1 && rc == 0)
		{
			fprintf(stderr, "pg_bsonstream: stopped while loading the first copy into MongoDB "
					"(%s.%s): the next run goes on with it\n", db, coll);
			rc = -1;
		}
	}
	if (rc == 0 && r == -1)
	{
		fail("\"%s\" is damaged (a document cut short)", path);
		rc = -1;
	}
	if (rc == 0 && n)
		rc = insert_copy_batch(db, coll, docs, n, resuming);
	for (int i = 0; i < n; i++)
		bson_destroy(docs[i]);
	free(buf);
	fclose(f);
	return rc;
}

/*
 * One index of a copy's metadata, as mongorestore makes it: without "ns",
 * and without "v" (the server's own index version; FerretDB refuses the
 * option).  A refusal names the index and leaves the others to be made.
 */
static int
load_index(const char *db, const char *coll, bson_iter_t *def)
{
	bson_iter_t f;
	bson_t		cmd = BSON_INITIALIZER;
	bson_t		list;
	bson_t		spec;
	const char *name = "?";

	BSON_APPEND_UTF8(&cmd, "createIndexes", coll);
	BSON_APPEND_ARRAY_BEGIN(&cmd, "indexes", &list);
	BSON_APPEND_DOCUMENT_BEGIN(&list, "0", &spec);
	bson_iter_recurse(def, &f);
	while (bson_iter_next(&f))
	{
		if (strcmp(bson_iter_key(&f), "ns") == 0 || strcmp(bson_iter_key(&f), "v") == 0)
			continue;
		if (strcmp(bson_iter_key(&f), "name") == 0 && BSON_ITER_HOLDS_UTF8(&f))
			name = bson_iter_utf8(&f, NULL);
		bson_append_iter(&spec, NULL, 0, &f);
	}
	bson_append_document_end(&list, &spec);
	bson_append_array_end(&cmd, &list);
	{
		TargetResult r;
		int			rc = -1;

		if (target_command(db, &cmd, NULL, &r) != 0)
			rc = -1;
		else if (r.status == TARGET_DONE)
			rc = 0;
		else
		{
			const char *msg = r.status == TARGET_REFUSED ? target_refusal_message(&r, 0) : r.message;
			int			code = r.status == TARGET_REFUSED ? r.refused[0].code : r.code;
			char		full[1200];

			snprintf(full, sizeof(full), "%s (code %d)", msg, code);
			rc = refuse("createIndexes", db, coll, NULL, NULL, bson_get_data(&cmd), cmd.len, name,
						code, full);
		}
		bson_destroy(&cmd);
		return rc;
	}
}

/* The indexes of a copy's metadata but _id's, one at a time */
static int
load_collection_indexes(const char *db, const char *coll, const bson_t *meta)
{
	bson_iter_t it;
	bson_iter_t arr;

	if (!bson_iter_init_find(&it, meta, "indexes") || !BSON_ITER_HOLDS_ARRAY(&it) ||
		!bson_iter_recurse(&it, &arr))
		return 0;
	while (bson_iter_next(&arr))
	{
		bson_iter_t f;

		if (!BSON_ITER_HOLDS_DOCUMENT(&arr) ||
			(bson_iter_recurse(&arr, &f) && bson_iter_find(&f, "name") &&
			 BSON_ITER_HOLDS_UTF8(&f) && strcmp(bson_iter_utf8(&f, NULL), "_id_") == 0))
			continue;
		if (load_index(db, coll, &arr) != 0)
			return -1;
	}
	return 0;
}

/* The collections of a dump directory: from each <db>/<file>.metadata.json */
static int
list_copy(const char *root, CopyColl **out, int *nout)
{
	DumpFile   *files;
	int			nfiles;
	CopyColl   *cs;
	int			n = 0;

	*out = NULL;
	*nout = 0;
	if (dump_list(root, &files, &nfiles) != 0)
	{
		fail("could not read the first copy in \"%s\": %s", root, strerror(errno));
		return -1;
	}
	if (nfiles == 0)
		return 0;
	if ((cs = calloc(nfiles, sizeof(CopyColl))) == NULL)
	{
		free(files);
		fail("out of memory");
		return -1;
	}
	for (int i = 0; i < nfiles; i++)
	{
		char	   *json;
		bson_error_t e;
		bson_t	   *meta;
		bson_iter_t it;

		if (read_file(files[i].meta_path, &json) != 0)
		{
			fail("could not read \"%s\": %s", files[i].meta_path, strerror(errno));
			break;
		}
		meta = bson_new_from_json((const uint8_t *) json, -1, &e);
		free(json);
		if (meta == NULL || !bson_iter_init_find(&it, meta, "collectionName") ||
			!BSON_ITER_HOLDS_UTF8(&it))
		{
			fail("\"%s\" is no collection's metadata: %s", files[i].meta_path,
				 meta ? "no collectionName" : e.message);
			if (meta)
				bson_destroy(meta);
			break;
		}
		snprintf(cs[n].db, sizeof(cs[n].db), "%s", files[i].db);
		snprintf(cs[n].coll, sizeof(cs[n].coll), "%s", bson_iter_utf8(&it, NULL));
		snprintf(cs[n].bson_path, sizeof(cs[n].bson_path), "%s", files[i].data_path);
		cs[n].meta = meta;
		n++;
	}
	free(files);
	if (n < nfiles)
	{
		for (int i = 0; i < n; i++)
			bson_destroy(cs[i].meta);
		free(cs);
		return -1;
	}
	*out = cs;
	*nout = n;
	return 0;
}

void
remove_tree(const char *path)
{
	DIR		   *d = opendir(path);
	struct dirent *de;

	if (d == NULL)
	{
		(void) unlink(path);
		return;
	}
	while ((de = readdir(d)) != NULL)
	{
		char		p[4400];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		remove_tree(p);
	}
	closedir(d);
	(void) rmdir(path);
}

/*
 * The first copy's directories: DIR/initial, or on a Citus cluster each
 * node's DIR/group-<G>/initial (its rows, read under its own slot's
 * snapshot: every row in exactly one of them)
 */
static int
copy_roots(char (**roots)[4200], int *n)
{
	int			count = applier.o.ngroups > 0 ? applier.o.ngroups : 1;

	*roots = calloc(count, sizeof(**roots));
	if (*roots == NULL)
	{
		fail("out of memory");
		return -1;
	}
	*n = count;
	if (applier.o.ngroups == 0)
		snprintf((*roots)[0], sizeof((*roots)[0]), "%s/initial", applier.o.dir);
	for (int i = 0; i < applier.o.ngroups; i++)
		snprintf((*roots)[i], sizeof((*roots)[i]), "%s/group-%d/initial", applier.o.dir,
				 applier.o.groups[i]);
	return 0;
}

/* The collections of every root's copy, one after the other */
static int
list_copies(char (*roots)[4200], int nroots, CopyColl **out, int *nout)
{
	*out = NULL;
	*nout = 0;
	for (int r = 0; r < nroots; r++)
	{
		CopyColl   *cs;
		CopyColl   *all;
		int			n;
		char		marker[4300];
		struct stat sb;

		snprintf(marker, sizeof(marker), "%s/.incomplete", roots[r]);
		if (stat(marker, &sb) == 0)
		{
			fail("the first copy in \"%s\" is unfinished: it cannot be loaded", roots[r]);
			return -1;
		}
		if (list_copy(roots[r], &cs, &n) != 0)
			return -1;
		if (n == 0)
			continue;
		all = realloc(*out, sizeof(CopyColl) * (*nout + n));
		if (all == NULL)
		{
			fail("out of memory");
			return -1;
		}
		memcpy(all + *nout, cs, sizeof(CopyColl) * n);
		free(cs);
		*out = all;
		*nout += n;
	}
	return 0;
}

/* Load the first copy into MongoDB, unless done */
int
load_initial(void)
{
	CopyColl   *cs = NULL;
	int			n = 0;
	char		(*roots)[4200];
	int			nroots;
	int			resuming = strcmp(applier.initial, "loading") == 0;
	int			rc = 0;

	if (strcmp(applier.initial, "done") == 0)
		return 0;
	if (copy_roots(&roots, &nroots) != 0)
		return -1;
	if (list_copies(roots, nroots, &cs, &n) != 0)
	{
		free(roots);
		return -1;
	}
	if (n == 0 && resuming)
	{
		/* the changes would be applied on top of a copy loaded in part */
		fail("the first copy was being loaded into MongoDB, and \"%s\" is gone: the "
			 "rest of it cannot be loaded\nhint: Start again: drop the target's collections and "
			 "the progress document of slot \"%s\", drop the slot, remove \"%s\", and run with "
			 "--create-slot --initial-copy.", roots[0], applier.o.slot, applier.o.dir);
		free(roots);
		return -1;
	}
	if (n == 0)
	{
		free(roots);
		return 0;
	}
	if (!resuming)
	{
		for (int i = 0; i < n && rc == 0; i++)
		{
			int			e = collection_empty(target_db(cs[i].db), cs[i].coll);

			if (e < 0)
				rc = -1;
			else if (e == 0)
			{
				fail("collection %s.%s already holds documents: the first copy would be mixed "
					 "with them\nhint: Drop it, or give another database in the URI.",
					 target_db(cs[i].db), cs[i].coll);
				rc = -1;
			}
		}
		if (rc == 0)
			rc = store_progress(NULL, "loading", 0, NULL);
	}
	for (int i = 0; i < n && rc == 0; i++)
	{
		set_state("loading the first copy: %s (%d of %d)", cs[i].coll, i + 1, n);
		/* a Citus table's collection is in several nodes' copies: more of it, not a resume */
		rc = load_collection_documents(target_db(cs[i].db), cs[i].coll, cs[i].bson_path, resuming);
		if (rc == 0)
			rc = load_collection_indexes(target_db(cs[i].db), cs[i].coll, cs[i].meta);
		if (rc == 0)
			rc = tables_note_copy(cs[i].db, cs[i].coll, cs[i].meta, 0, NULL);
	}
	for (int i = 0; i < n; i++)
		bson_destroy(cs[i].meta);
	free(cs);
	/* with the shapes of the tables as copied (applier.tables_dirty) */
	if (rc == 0)
		rc = store_progress(NULL, "done", 0, NULL);
	if (rc == 0)
	{
		set_state("%s", "");
		fprintf(stderr, "pg_bsonstream: the first copy is in MongoDB (%d collection%s)\n",
				n, n == 1 ? "" : "s");
		if (!applier.o.keep_applied)
			for (int r = 0; r < nroots; r++)
				remove_tree(roots[r]);
	}
	free(roots);
	return rc;
}

int
load_recopy(const char *root, uint64_t at, const char *alias, char *db, size_t dbsize,
			char *coll, size_t collsize)
{
	CopyColl   *cs;
	int			n;
	int			rc;

	if (list_copy(root, &cs, &n) != 0)
		return -1;
	if (n == 0)
		rc = 0;
	else if (n != 1)
	{
		fail("the copy again in \"%s\" holds %d collections, where one was expected", root, n);
		rc = -1;
	}
	else
	{
		snprintf(db, dbsize, "%s", cs[0].db);
		snprintf(coll, collsize, "%s", cs[0].coll);
		/* replaced: what the documents are now, none of what they were */
		rc = drop_collection(target_db(cs[0].db), cs[0].coll);
		if (rc == 0)
			rc = load_collection_documents(target_db(cs[0].db), cs[0].coll, cs[0].bson_path, 0);
		if (rc == 0)
			rc = load_collection_indexes(target_db(cs[0].db), cs[0].coll, cs[0].meta);
		if (rc == 0)
			rc = tables_note_copy(cs[0].db, cs[0].coll, cs[0].meta, at, alias);
		if (rc == 0)
			rc = 1;
	}
	for (int i = 0; i < n; i++)
		bson_destroy(cs[i].meta);
	free(cs);
	return rc;
}
