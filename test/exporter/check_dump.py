#!/usr/bin/python3
"""Check a dump directory against the server's bson_collections().

    check_dump.py --dbname DB --dir DIR [--include LIST]... [--exclude LIST]...
                  [--ns-db NAME] [--include-schema] [--no-partition-root]

With the same selection as the dump, bson_collections() gives the
collections and, for each of its tables, the query that makes its
documents and the collection's metadata.  The directory must hold exactly
DIR/<db>/<name>.bson and DIR/<db>/<name>.metadata.json for each collection,
<name> escaped as mongodump escapes it (Go's url.QueryEscape; a name longer
than 238 bytes cut to 208, then "%24" and the base64url SHA-1 of the name),
and nothing else (no temporary file).  The .bson file, read by pymongo's
bson.decode_file_iter, must hold the documents of all the collection's
tables, byte for byte (in any order: the dumps of several jobs are compared
with cmp separately); the metadata file must be the metadata column's text,
read by bson.json_util as canonical Extended JSON, with the collection's
name and the _id index first.

Prints one line "N collections, M documents" and exits 0, or prints the
problems and exits 1.  Run with Debian's /usr/bin/python3 (python3-bson,
python3-psycopg2).
"""
import argparse
import base64
import hashlib
import os
import sys
import urllib.parse

import bson
import bson.json_util
import psycopg2
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument


def file_name(coll):
    """mongodump's file name of a collection, without its suffix."""
    name = urllib.parse.quote_plus(coll, safe="-_.~")
    if len(name) > 238:
        digest = hashlib.sha1(coll.encode()).digest()
        name = name[:208] + "%24" + base64.urlsafe_b64encode(digest).decode().rstrip("=")
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dbname", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--ns-db")
    ap.add_argument("--include-schema", action="store_true")
    ap.add_argument("--no-partition-root", action="store_true")
    a = ap.parse_args()

    conn = psycopg2.connect(dbname=a.dbname)
    conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
    cur = conn.cursor()
    cur.execute("SELECT db, coll, query, metadata FROM bson_collections(%s, %s, %s, %s, %s)",
                (a.include or None, a.exclude or None, a.ns_db, a.include_schema,
                 not a.no_partition_root))
    collections = {}
    for db, coll, query, metadata in cur.fetchall():
        c = collections.setdefault((db, coll), {"queries": [], "metadata": metadata})
        c["queries"].append(query)

    problems = []
    expected_files = set()
    ndocs = 0
    raw_opts = CodecOptions(document_class=RawBSONDocument)
    for (db, coll), c in sorted(collections.items()):
        base = os.path.join(a.dir, db, file_name(coll))
        expected_files.update([base + ".bson", base + ".metadata.json"])
        want = []
        for q in c["queries"]:
            cur.execute(q)
            want += [bytes(r[0]) for r in cur if r[0] is not None]
        try:
            with open(base + ".bson", "rb") as f:
                got = [d.raw for d in bson.decode_file_iter(f, raw_opts)]
        except OSError as e:
            problems.append("%s.%s: %s" % (db, coll, e))
            continue
        if sorted(got) != sorted(want):
            problems.append("%s.%s: %d documents in %s.bson, %d from the server, %d differ"
                            % (db, coll, len(got), base, len(want),
                               len(set(got) ^ set(want))))
        ndocs += len(got)
        try:
            with open(base + ".metadata.json", encoding="utf-8") as f:
                text = f.read()
            meta = bson.json_util.loads(text)
        except (OSError, ValueError) as e:
            problems.append("%s.%s: metadata: %s" % (db, coll, e))
            continue
        if text != c["metadata"]:
            problems.append("%s.%s: the metadata file is not the metadata column" % (db, coll))
        if meta.get("collectionName") != coll:
            problems.append("%s.%s: collectionName %r" % (db, coll, meta.get("collectionName")))
        if not meta.get("indexes") or meta["indexes"][0].get("name") != "_id_":
            problems.append("%s.%s: no _id index first: %r" % (db, coll, meta.get("indexes")))
    conn.close()

    found = set()
    for root, dirs, files in os.walk(a.dir):
        found.update(os.path.join(root, f) for f in files)
        # row data: private, whatever the umask (the directories it made 0700, the files 0600)
        for p, want in [(os.path.join(root, d), 0o700) for d in dirs] + [(os.path.join(root, f), 0o600) for f in files]:
            if os.stat(p).st_mode & 0o777 != want:
                problems.append("%s: mode %o, not %o" % (p, os.stat(p).st_mode & 0o777, want))
    for f in sorted(found - expected_files):
        problems.append("unexpected file %s" % f)
    for f in sorted(expected_files - found):
        problems.append("missing file %s" % f)

    if problems:
        print("\n".join(problems[:20]))
        sys.exit(1)
    print("%d collections, %d documents" % (len(collections), ndocs))


if __name__ == "__main__":
    main()
