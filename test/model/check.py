#!/usr/bin/python3
"""The document model's agreement test, run by test/model/run.sh on its
throwaway cluster (wal_level = logical, bson_out allowed as output plugin).

One rule, owned by the server, makes the document of a row: bson_document.
Every piece that writes documents or names collections must agree with it:

keys/...       for every key shape (single; composite with a column named k;
               composite in another order than the columns; INCLUDE;
               REPLICA IDENTITY USING INDEX; FULL with and without a key; no
               key; NOTHING; a key column named _id; a non-key column named
               _id; a schema other than public; names escaped in file names,
               one cut for length; a table of over 2,048 blocks read in block
               ranges; a partitioned table with reordered and dropped-column
               partitions and a sub-partitioned one): SELECT bson_document(t),
               pg_bsonexport --table, pg_bsonexport --out-dir and
               pg_bsonstream's first copy hold the same documents byte for
               byte (multisets of raw documents), equal to the model built
               with row_to_bson, with the _id each shape must have asserted
               explicitly; then an UPDATE of every row (the partitioned root
               altered first), a DELETE of some and a TRUNCATE of the
               partitioned root give events whose documentKey._id is the
               copied document's _id, whose fullDocument is bson_document of
               the new row, and whose ns is the copy's db/coll (partitions
               under the root).
metadata/...   the .metadata.json files of the export and of the first copy,
               read by bson.json_util: collectionName, type, the _id_ index
               and one unique index per unique constraint or index outside
               the key (descending columns as -1; expression, partial, dotted
               and hidden ones left out; a partialFilterExpression on nullable
               columns unless NULLS NOT DISTINCT); the same text in both and
               in bson_collections.
select/...     table selections (one comma-separated list, repeated options,
               wildcards, escapes, --exclude-tables, a pattern selecting
               nothing, a partition named, --no-partition-root,
               --include-schema, --ns-db): the same collections (db and coll)
               in the plugin's events, the first copy, pg_bsonexport
               --out-dir and bson_collections, and the "selects no table"
               warning from both programs and the function.
rivals/...     two tables that take one collection name (public."a.b" and
               a.b): pg_bsonexport --out-dir, pg_bsonstream's first copy and
               its stream exit 1 with the server's error naming both and
               --include-schema, which then gives two collections;
               pg_bsonexport --table of one of them is fine.
equal rows/... REPLICA IDENTITY FULL without a key and equal rows:
               pg_bsonexport --table and --out-dir and the first copy exit 1
               naming the table, how many rows and one _id (--no-id exports
               them); the stream warns once; distinct rows are exported.
replay/...     a consumer with the MongoDB Kafka sink's rules (insert/replace:
               ReplaceOne upsert on documentKey; update: $set updatedFields,
               $unset removedFields, upsert; delete: DeleteOne) replays the
               events of a concurrent random workload (2 sessions; key
               changes, moves between partitions, TOASTed values left
               unchanged, REPLICA IDENTITY FULL's partial updatedFields) onto
               an export taken after the slot was created (events read with
               pg_logical_slot_get_binary_changes), and onto a first copy
               taken under the workload (events from pg_bsonstream's
               segments): the result equals bson_document of every row of the
               final tables, byte for byte.

Prints "ok   <name>" or "FAIL <name>: <detail>" per check; the last line is
"model: N passed, M failed".
"""
import base64
import collections
import glob
import hashlib
import os
import random
import re
import struct
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse

# test/crosscheck_common.py: the raw BSON element reader the cross-checks
# use (imported before bson.json_util, for which it stands in pymongo.errors)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from crosscheck_common import bson_elements  # noqa: E402

import bson  # noqa: E402
import bson.int64
import bson.json_util
import psycopg2
import psycopg2.errors
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from bson.son import SON

EXPORT = os.environ["PG_BSONEXPORT"]
STREAM = os.environ["PG_BSONSTREAM"]
WORK = os.environ["WORK"]
CLUSTER_DIR = os.environ["CLUSTER_DIR"]
RAW = CodecOptions(document_class=RawBSONDocument)
PLAIN = CodecOptions(document_class=SON, uuid_representation=UuidRepresentation.UNSPECIFIED)
ID_INDEX = {"v": 2, "key": {"_id": 1}, "name": "_id_"}
NON_NULL = {"double", "string", "object", "array", "binData", "objectId", "bool", "date", "regex", "int",
            "timestamp", "long", "decimal", "minKey", "maxKey"}
METADATA_HEAD = '{"indexes":[{"v":{"$numberInt":"2"},"key":{"_id":{"$numberInt":"1"}},"name":"_id_"}'

passed = 0
failed = 0


def ok(name):
    global passed
    passed += 1
    print("ok   " + name, flush=True)


def fail(name, detail=""):
    global failed
    failed += 1
    lines = str(detail).strip().splitlines() or [""]
    print("FAIL %s: %s" % (name, lines[0]), flush=True)
    for line in lines[1:40]:
        print("     | " + line, flush=True)


def check(cond, name, detail=""):
    if cond:
        ok(name)
    else:
        fail(name, detail() if callable(detail) else detail)
    return bool(cond)


# ------------------------------------------------------------------ SQL

def connect(db):
    conn = psycopg2.connect(dbname=db)
    conn.autocommit = True
    return conn


def sql(db, query, args=None):
    conn = connect(db)
    try:
        cur = conn.cursor()
        cur.execute(query, args)
        return cur.fetchall() if cur.description else None
    finally:
        conn.close()


def sql_notices(db, query, args=None):
    """(rows, the server's notices and warnings)"""
    conn = connect(db)
    try:
        cur = conn.cursor()
        cur.execute(query, args)
        return (cur.fetchall() if cur.description else None), "".join(conn.notices)
    finally:
        conn.close()


def script(db, statements):
    conn = connect(db)
    try:
        cur = conn.cursor()
        for s in statements:
            cur.execute(s)
    finally:
        conn.close()


def in_xact(db, statements):
    """Run the statements in one transaction; its xid (the events' txnNumber)."""
    conn = psycopg2.connect(dbname=db)
    try:
        cur = conn.cursor()
        for s in statements:
            cur.execute(s)
        cur.execute("SELECT pg_current_xact_id()::text::bigint")
        xid = cur.fetchone()[0]
        conn.commit()
        return xid
    finally:
        conn.close()


def current_lsn(db):
    return sql(db, "SELECT pg_current_wal_lsn()::text")[0][0]


def create_db(db):
    sql("postgres", "DROP DATABASE IF EXISTS " + db)
    sql("postgres", "CREATE DATABASE " + db)
    sql(db, "CREATE EXTENSION bson_out")


def documents(db, query):
    return [bytes(r[0]) for r in sql(db, query)]


# ------------------------------------------------------------------ raw BSON

def elements(raw):
    """A document's top-level elements: [(key, type byte + value bytes)], in order."""
    return [(key, raw[a:a + 1] + raw[a + 2 + len(key.encode()):b]) for key, a, b in bson_elements(raw)]


def build(elems):
    body = b"".join(e[:1] + k.encode() + b"\0" + e[1:] for k, e in elems)
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def id_of(raw):
    """The _id element (type and value bytes) of a document, or None."""
    for k, e in elements(raw):
        if k == "_id":
            return e
    return None


def show(raw, limit=400):
    try:
        s = bson.json_util.dumps(bson.decode(raw, codec_options=PLAIN))
    except Exception as e:          # noqa: BLE001 - only for messages
        s = "<%s: %s>" % (e, raw[:60])
    return s if len(s) <= limit else s[:limit] + "..."


def show_id(e):
    return "<none>" if e is None else show(build([("_id", e)]), 200)


def read_bson(path):
    """The raw documents of a file; the file must be exactly those, back to back."""
    with open(path, "rb") as f:
        docs = [d.raw for d in bson.decode_file_iter(f, codec_options=RAW)]
    if sum(len(d) for d in docs) != os.path.getsize(path):
        raise ValueError("%s: the documents do not fill the file" % path)
    return docs


def dump_name(coll):
    """The file name (less .bson) mongodump gives a collection: Go's
    url.QueryEscape, and a name longer than 238 bytes cut to 208 + "%24" + the
    unpadded base64url SHA-1 of the collection's name."""
    name = urllib.parse.quote_plus(coll)
    if len(name) > 238:
        digest = hashlib.sha1(coll.encode()).digest()
        name = name[:208] + "%24" + base64.urlsafe_b64encode(digest).decode().rstrip("=")
    return name


def coll_of(path):
    """The collection mongorestore takes a .bson or .metadata.json file for."""
    name = os.path.basename(path)
    name = name[:-5] if name.endswith(".bson") else name[:-len(".metadata.json")]
    if len(name) == 238 and name[208:211] == "%24":
        with open(path[:-5] + ".metadata.json" if path.endswith(".bson") else path) as f:
            return bson.json_util.loads(f.read())["collectionName"]
    return urllib.parse.unquote_plus(name)


BAD_NAMES = []      # files named otherwise than mongodump names them


def read_dir(path):
    """{coll: [raw documents]} of DIR/<file>.bson, and {coll: metadata text},
    the collections named as mongorestore reads the file names."""
    docs, meta = {}, {}
    for p in sorted(glob.glob(os.path.join(path, "*.bson"))):
        c = coll_of(p)
        docs[c] = read_bson(p)
        if os.path.basename(p) != dump_name(c) + ".bson":
            BAD_NAMES.append("%s for %r (mongodump: %s.bson)" % (p, c, dump_name(c)))
    for p in sorted(glob.glob(os.path.join(path, "*.metadata.json"))):
        with open(p) as f:
            meta[coll_of(p)] = f.read()
    return docs, meta


def multiset_diff(got, want, limit=3):
    """'' if the two lists of raw documents are the same multiset, else a description."""
    g, w = collections.Counter(got), collections.Counter(want)
    if g == w:
        return ""
    surplus = list((g - w).elements())
    missing = list((w - g).elements())
    lines = ["%d documents, expected %d: %d not expected, %d missing"
             % (len(got), len(want), len(surplus), len(missing))]
    lines += ["not expected: " + show(d) for d in surplus[:limit]]
    lines += ["missing:      " + show(d) for d in missing[:limit]]
    return "\n".join(lines)


class Event:
    """One change event, read through RawBSONDocument."""

    def __init__(self, raw):
        e = bson.decode(raw, codec_options=RAW)
        self.raw = raw
        self.token = e["_id"]["_data"]
        self.op = e["operationType"]
        self.db = e["ns"]["db"]
        self.coll = e["ns"]["coll"]
        self.txn = int(e["txnNumber"]) if "txnNumber" in e else None
        dk = e.get("documentKey")
        self.has_key = dk is not None
        self.key = id_of(dk.raw) if dk is not None else None
        fd = e.get("fullDocument")
        self.full = fd.raw if fd is not None else None
        ud = e.get("updateDescription")
        self.updated = ud["updatedFields"].raw if ud is not None else None
        self.removed = list(ud["removedFields"]) if ud is not None else []
        self.partitions = list(e["partitions"]) if "partitions" in e else None

    def __repr__(self):
        return "%s %s.%s key %s" % (self.op, self.db, self.coll, show_id(self.key))


def segment_events(out):
    """The events of DIR/changes/*.bson in token order, duplicates dropped."""
    by_token = {}
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        for raw in read_bson(path):
            ev = Event(raw)
            by_token.setdefault(ev.token, ev)
    return [by_token[t] for t in sorted(by_token)]


def slot_events(db, slot, options, consume=True):
    fn = "pg_logical_slot_get_binary_changes" if consume else "pg_logical_slot_peek_binary_changes"
    flat = [x for kv in options for x in kv]
    rows = sql(db, "SELECT data FROM %s(%%s, NULL, NULL, VARIADIC %%s::text[])" % fn, (slot, flat))
    return [Event(bytes(r[0])) for r in rows]


# ------------------------------------------------------------------ programs

def run(args, timeout=90):
    """Run a program; (exit status, standard error)."""
    try:
        r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
        return r.returncode, r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        return "timeout after %d s" % timeout, (e.stderr or b"").decode(errors="replace")


def selection_args(include, exclude):
    args = []
    for p in include:
        args += ["--include-tables", p]
    for p in exclude:
        args += ["--exclude-tables", p]
    return args


def export_table(db, table, path):
    return run([EXPORT, "-d", db, "--table", table, "-o", path, "-q"])


def export_dir(db, out, *extra):
    return run([EXPORT, "-d", db, "--out-dir", out] + list(extra))


def first_copy(db, slot, out, *extra):
    """pg_bsonstream --create-slot --initial-copy, stopped by --endpos right after
    the copy (the slot's start is after the LSN given)."""
    endpos = current_lsn(db)
    return run([STREAM, "-d", db, "--slot", slot, "--create-slot", "--initial-copy", "-o", out,
                "--endpos", endpos, "--segment-time", "0.5"] + list(extra))


def stream_to(db, slot, out, *extra):
    """pg_bsonstream resuming the slot up to the WAL position now."""
    endpos = current_lsn(db)
    return run([STREAM, "-d", db, "--slot", slot, "-o", out, "--endpos", endpos,
                "--segment-time", "0.5", "-q"] + list(extra))


def drop_slot(db, slot):
    sql(db, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
        (slot,))


# ------------------------------------------------------------------ key shapes

KEYS_DB = "xkeys"

PT_DDL = [
    "CREATE TABLE pt (id int, region text, v text, n int, PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
    "CREATE TABLE pt_eu PARTITION OF pt FOR VALUES IN ('eu')",
    # columns in another order than the root's
    "CREATE TABLE pt_us (n int, v text, region text NOT NULL, id int NOT NULL)",
    "ALTER TABLE pt ATTACH PARTITION pt_us FOR VALUES IN ('us')",
    # a dropped column before the others
    "CREATE TABLE pt_ap (junk text, id int NOT NULL, region text NOT NULL, v text, n int)",
    "ALTER TABLE pt_ap DROP COLUMN junk",
    "ALTER TABLE pt ATTACH PARTITION pt_ap FOR VALUES IN ('ap')",
    # two levels
    "CREATE TABLE pt_sa PARTITION OF pt FOR VALUES IN ('sa') PARTITION BY HASH (id)",
    "CREATE TABLE pt_sa0 PARTITION OF pt_sa FOR VALUES WITH (MODULUS 2, REMAINDER 0)",
    "CREATE TABLE pt_sa1 PARTITION OF pt_sa FOR VALUES WITH (MODULUS 2, REMAINDER 1)",
]
LONG_SCHEMA = "é" * 31     # 62 bytes: the collection's escaped name is longer than 238 bytes
LONG_TABLE = "ü" * 31
PT_LEAVES = ["pt_eu", "pt_us", "pt_ap", "pt_sa0", "pt_sa1"]


def composite(*cols):
    return "(SELECT x FROM (SELECT %s) x)" % ", ".join("t." + c for c in cols)


# name: the table (SQL), coll: the collection, ddl, fill, expect: the model
# document made with row_to_bson (None: agreement only), ident: what the
# events carry ('key': updates keyed as the copy; 'whole': REPLICA IDENTITY
# FULL without a key, every update a key change; 'none': no documentKey;
# 'agree': whatever the copy has), want_id: (WHERE of one row, its _id,
# the document's keys), update, delete (WHERE), uniques: the unique indexes
# the metadata must list besides _id_ ({name: [columns]}; None: not checked)
SHAPES = [
    dict(table="single", coll="single",
         ddl=["CREATE TABLE single (id int PRIMARY KEY, v text, n numeric, j jsonb, at timestamptz)"],
         fill="INSERT INTO single SELECT g, CASE WHEN g % 4 = 0 THEN NULL ELSE 'v' || g || 'é' END, g / 8.0, "
              "jsonb_build_object('g', g, 'a', jsonb_build_array(g, 'x')), "
              "'2025-01-01 00:00Z'::timestamptz + g * interval '1 hour' FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM single t) s",
         ident="key", want_id=("id = 1", 1, ["_id", "id", "v", "n", "j", "at"]),
         update="v = coalesce(v, '') || '+'", delete="id % 5 = 0", uniques={}),
    dict(table="ck", coll="ck",
         ddl=["CREATE TABLE ck (id int, k int, v text, PRIMARY KEY (id, k))"],
         fill="INSERT INTO ck SELECT g, g + 1, 'c' || g FROM generate_series(1, 20) g "
              "UNION ALL SELECT g, g + 100, 'd' || g FROM generate_series(1, 6) g",
         expect="SELECT row_to_bson(s) FROM (SELECT %s AS _id, t.* FROM ck t) s" % composite("id", "k"),
         ident="key", want_id=("id = 1 AND k = 2", SON([("id", 1), ("k", 2)]), ["_id", "id", "k", "v"]),
         update="v = v || '+'", delete="id % 5 = 0", uniques={}),
    dict(table="ck2", coll="ck2",
         ddl=["CREATE TABLE ck2 (a int, b text, c int, PRIMARY KEY (b, a))"],
         fill="INSERT INTO ck2 SELECT g, 'b' || (g % 3), g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT %s AS _id, t.* FROM ck2 t) s" % composite("b", "a"),
         ident="key", want_id=("a = 1", SON([("b", "b1"), ("a", 1)]), ["_id", "a", "b", "c"]),
         update="c = c + 1", delete="a % 5 = 0", uniques={}),
    dict(table="inc", coll="inc",
         ddl=["CREATE TABLE inc (id int, v text, w int, PRIMARY KEY (id) INCLUDE (v))"],
         fill="INSERT INTO inc SELECT g, 'i' || g, g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM inc t) s",
         ident="key", want_id=("id = 1", 1, ["_id", "id", "v", "w"]),
         # the INCLUDE column changes too: not a key change
         update="v = v || '+', w = w + 1", delete="id % 5 = 0", uniques={}),
    dict(table="ui", coll="ui",
         ddl=["CREATE TABLE ui (id int PRIMARY KEY, code text NOT NULL, v int)",
              "CREATE UNIQUE INDEX ui_code_idx ON ui (code)",
              "ALTER TABLE ui REPLICA IDENTITY USING INDEX ui_code_idx"],
         fill="INSERT INTO ui SELECT g, 'c' || g, g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.code AS _id, t.* FROM ui t) s",
         ident="key", want_id=("id = 1", "c1", ["_id", "id", "code", "v"]),
         update="v = v + 1", delete="id % 5 = 0", uniques={"ui_pkey": ["id"]}),
    dict(table="fpk", coll="fpk",
         ddl=["CREATE TABLE fpk (id int PRIMARY KEY, v text)", "ALTER TABLE fpk REPLICA IDENTITY FULL"],
         fill="INSERT INTO fpk SELECT g, 'f' || g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM fpk t) s",
         ident="key", want_id=("id = 1", 1, ["_id", "id", "v"]),
         update="v = v || '+'", delete="id % 5 = 0", uniques={}),
    dict(table="fk", coll="fk",
         ddl=["CREATE TABLE fk (a int, b text, c numeric)", "ALTER TABLE fk REPLICA IDENTITY FULL"],
         fill="INSERT INTO fk SELECT g, 'x' || g, CASE WHEN g % 3 = 0 THEN NULL ELSE g + 0.5 END "
              "FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t AS _id, t.* FROM fk t) s",
         ident="whole", want_id=("a = 1", SON([("a", 1), ("b", "x1"), ("c", bson.Decimal128("1.5"))]),
                                 ["_id", "a", "b", "c"]),
         update="b = b || '+'", delete="a % 5 = 0", uniques={}),
    dict(table="ni", coll="ni",
         ddl=["CREATE TABLE ni (a int, b text)"],
         fill="INSERT INTO ni SELECT g, CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || g END "
              "FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(t) FROM ni t",
         ident="none", want_id=("a = 1", None, ["a", "b"]),
         update="b = b || '+'", delete="a % 5 = 0", uniques={}),
    dict(table="nothing", coll="nothing",
         ddl=["CREATE TABLE nothing (id int PRIMARY KEY, v text)", "ALTER TABLE nothing REPLICA IDENTITY NOTHING"],
         fill="INSERT INTO nothing SELECT g, 'o' || g FROM generate_series(1, 20) g",
         expect=None, ident="agree", want_id=None, why="REPLICA IDENTITY NOTHING with a primary key",
         update="v = v || '+'", delete="id % 5 = 0", uniques=None),
    dict(table="kid", coll="kid",
         ddl=["CREATE TABLE kid (_id int PRIMARY KEY, v text)"],
         fill="INSERT INTO kid SELECT g, 'k' || g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(t) FROM kid t",
         ident="key", want_id=("_id = 1", 1, ["_id", "v"]),
         update="v = v || '+'", delete="_id % 5 = 0", uniques={}),
    dict(table="nk", coll="nk",
         ddl=["CREATE TABLE nk (id int PRIMARY KEY, _id text, v int)"],
         fill="INSERT INTO nk SELECT g, 'hidden' || g, g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.id, t.v FROM nk t) s",
         ident="key", want_id=("id = 1", 1, ["_id", "id", "v"]),
         update="v = v + 1, _id = _id || '+'", delete="id % 5 = 0", uniques={}),
    dict(table="s1.sk", coll="s1.sk",
         ddl=["CREATE SCHEMA s1", "CREATE TABLE s1.sk (id bigint PRIMARY KEY, v text)"],
         fill="INSERT INTO s1.sk SELECT g, 's' || g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM s1.sk t) s",
         ident="key", want_id=("id = 1", bson.int64.Int64(1), ["_id", "id", "v"]),
         update="v = v || '+'", delete="id % 5 = 0", uniques={}),
    dict(table="mu", coll="mu",
         ddl=["CREATE TABLE mu (id int PRIMARY KEY, email text UNIQUE, code text, a int, b int, "
              "CONSTRAINT mu_a_b UNIQUE (a, b))",
              "CREATE UNIQUE INDEX mu_code_idx ON mu (code)",
              "CREATE INDEX mu_a_idx ON mu (a)"],
         fill="INSERT INTO mu SELECT g, 'e' || g || '@x', 'c' || g, g, g % 3 FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM mu t) s",
         ident="key", want_id=("id = 1", 1, ["_id", "id", "email", "code", "a", "b"]),
         update="b = b + 10", delete="id % 5 = 0",
         uniques={"mu_email_key": ["email"], "mu_code_idx": ["code"], "mu_a_b": ["a", "b"]},
         nullable={"mu_email_key": ["email"], "mu_code_idx": ["code"], "mu_a_b": ["a", "b"]}),
    # unique indexes a document cannot hold as PostgreSQL does are left out
    # (expression, partial, a dotted name, a column left out of the
    # documents); NOT NULL and NULLS NOT DISTINCT keys need no filter
    dict(table="mx", coll="mx",
         ddl=['CREATE TABLE mx (id int PRIMARY KEY, code text NOT NULL, name text, flag bool, d int, "a.b" int, '
              '_id int)',
              "CREATE UNIQUE INDEX mx_code_desc ON mx (code DESC)",
              "CREATE UNIQUE INDEX mx_lower ON mx (lower(name))",
              "CREATE UNIQUE INDEX mx_partial ON mx (d) WHERE flag",
              'CREATE UNIQUE INDEX mx_dot ON mx ("a.b")',
              "CREATE UNIQUE INDEX mx_hidden ON mx (_id)",
              "CREATE UNIQUE INDEX mx_nnd ON mx (name) NULLS NOT DISTINCT"],
         fill="INSERT INTO mx SELECT g, 'c' || g, CASE WHEN g = 3 THEN NULL ELSE 'N' || g END, g % 2 = 0, "
              "CASE WHEN g % 2 = 0 THEN g ELSE 1 END, g, g FROM generate_series(1, 20) g",
         expect='SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.id, t.code, t.name, t.flag, t.d, t."a.b" '
                'FROM mx t) s',
         ident="key", want_id=("id = 1", 1, ["_id", "id", "code", "name", "flag", "d", "a.b"]),
         update="code = code || '+'", delete="id % 5 = 0",
         uniques={"mx_code_desc": [("code", -1)], "mx_nnd": ["name"]}, nullable={}),
    # column kinds: identity, generated, dropped, enum, composite, domain, array
    dict(table="kinds", coll="kinds",
         ddl=["CREATE TYPE mood AS ENUM ('sad', 'ok')", "CREATE TYPE pair AS (x int, y text)",
              "CREATE DOMAIN posint AS int CHECK (VALUE > 0)",
              "CREATE TABLE kinds (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, drop_me int, a int, "
              "b int GENERATED ALWAYS AS (a * 2) STORED, m mood, p pair, d posint, arr int[])",
              "ALTER TABLE kinds DROP COLUMN drop_me"],
         fill="INSERT INTO kinds (a, m, p, d, arr) SELECT g, (ARRAY['sad', 'ok'])[g % 2 + 1]::mood, ROW(g, 'y' || g)::pair, "
              "g, ARRAY[g, NULL] FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM kinds t) s",
         ident="key", want_id=("id = 1", 1, ["_id", "id", "a", "b", "m", "p", "d", "arr"]),
         update="a = a + 1, p = ROW((p).x, NULL)::pair", delete="id % 5 = 0", uniques={}),
    # an identity index in another order than the columns
    dict(table="ui2", coll="ui2",
         ddl=["CREATE TABLE ui2 (a int, b int, c int NOT NULL, d text NOT NULL)",
              "CREATE UNIQUE INDEX ui2_dc ON ui2 (d, c)",
              "ALTER TABLE ui2 REPLICA IDENTITY USING INDEX ui2_dc"],
         fill="INSERT INTO ui2 SELECT g, CASE WHEN g % 2 = 0 THEN g END, g, 'd' || (g % 4) FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT %s AS _id, t.* FROM ui2 t) s" % composite("d", "c"),
         ident="key", want_id=("a = 1", SON([("d", "d1"), ("c", 1)]), ["_id", "a", "b", "c", "d"]),
         update="a = a + 100, b = 7", delete="a % 5 = 0", uniques={}),
    # a composite key of other types, and such values around it
    dict(table="typed", coll="typed",
         ddl=["CREATE TABLE typed (u uuid, at timestamptz, n numeric, b bytea, j jsonb, tags text[], "
              "PRIMARY KEY (u, at, n))"],
         fill="INSERT INTO typed SELECT md5(g::text)::uuid, '2025-01-01 00:00Z'::timestamptz + g * interval '1 day', "
              "g / 3.0, decode(md5(g::text), 'hex'), jsonb_build_object('k', g, 'z', NULL), ARRAY['a' || g, NULL] "
              "FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT %s AS _id, t.* FROM typed t) s" % composite("u", "at", "n"),
         ident="key", want_id=None, why="a uuid, a timestamptz and a numeric: the model document above",
         update="b = NULL, tags = tags || 'x'::text", delete="n < 2", uniques={}),
    # a partitioned root without a key, over partitions with and without one
    dict(table="pn", coll="pn",
         ddl=["CREATE TABLE pn (id int NOT NULL, v text) PARTITION BY RANGE (id)",
              "CREATE TABLE pn_1 PARTITION OF pn (PRIMARY KEY (id)) FOR VALUES FROM (0) TO (10)",
              "CREATE TABLE pn_2 PARTITION OF pn FOR VALUES FROM (10) TO (100)"],
         fill="INSERT INTO pn SELECT g, 'p' || g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(t) FROM pn t",
         ident="agree", want_id=("id = 1", None, ["id", "v"]),
         update="v = v || '+'", delete="id % 5 = 0", uniques={}),
    # a partitioned root REPLICA IDENTITY FULL without a key: its _id is the
    # whole row, which one partition (identity DEFAULT, no key) does not log
    dict(table="pf", coll="pf",
         ddl=["CREATE TABLE pf (id int, v text) PARTITION BY RANGE (id)",
              "CREATE TABLE pf_1 PARTITION OF pf FOR VALUES FROM (0) TO (10)",
              "CREATE TABLE pf_2 PARTITION OF pf FOR VALUES FROM (10) TO (100)",
              "ALTER TABLE pf REPLICA IDENTITY FULL",
              "ALTER TABLE pf_2 REPLICA IDENTITY FULL"],
         fill="INSERT INTO pf SELECT g, 'p' || g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t AS _id, t.* FROM pf t) s",
         ident="partial", want_id=("id = 1", SON([("id", 1), ("v", "p1")]), ["_id", "id", "v"]),
         why="root REPLICA IDENTITY FULL without a key; partition pf_1 logs no old row",
         update="v = v || '+'", delete="id % 5 = 0", uniques={}),
    # the root's identity an index of its own, which the partitions do not log
    dict(table="pu", coll="pu",
         ddl=["CREATE TABLE pu (id int, region text, code text NOT NULL, PRIMARY KEY (id, region)) "
              "PARTITION BY LIST (region)",
              "CREATE TABLE pu_eu PARTITION OF pu FOR VALUES IN ('eu')",
              "CREATE TABLE pu_us PARTITION OF pu FOR VALUES IN ('us')",
              "CREATE UNIQUE INDEX pu_code ON pu (code, region)",
              "ALTER TABLE pu REPLICA IDENTITY USING INDEX pu_code"],
         fill="INSERT INTO pu SELECT g, (ARRAY['eu', 'us'])[g % 2 + 1], 'c' || g FROM generate_series(1, 20) g",
         expect="SELECT row_to_bson(s) FROM (SELECT %s AS _id, t.* FROM pu t) s" % composite("code", "region"),
         ident="partial", want_id=("id = 1", SON([("code", "c1"), ("region", "us")]), ["_id", "id", "region", "code"]),
         why="an UPDATE of the root's identity index column (pu_code); the partitions log their primary key",
         update="code = code || '+'", delete="id % 5 = 0", uniques={"pu_pkey": ["id", "region"]}),
    # a keyed root over a partition with REPLICA IDENTITY NOTHING, keys changed
    dict(table="pkn", coll="pkn",
         ddl=["CREATE TABLE pkn (id int PRIMARY KEY, v text) PARTITION BY RANGE (id)",
              "CREATE TABLE pkn_1 PARTITION OF pkn FOR VALUES FROM (0) TO (5000)",
              "CREATE TABLE pkn_2 PARTITION OF pkn FOR VALUES FROM (5000) TO (10000)",
              "ALTER TABLE pkn_1 REPLICA IDENTITY NOTHING"],
         fill="INSERT INTO pkn SELECT g, 'k' || g FROM generate_series(1, 10) g "
              "UNION ALL SELECT g, 'k' || g FROM generate_series(5001, 5010) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM pkn t) s",
         ident="partial", want_id=("id = 1", 1, ["_id", "id", "v"]),
         why="an UPDATE of the key; partition pkn_1 has REPLICA IDENTITY NOTHING",
         update="id = id + 100", delete="id % 5 = 0", uniques={}),
    # over 2,048 blocks: --jobs 2 reads it in block ranges, in the export and the first copy
    dict(table="big", coll="big",
         # one row a block: few rows, many blocks
         ddl=["CREATE TABLE big (id int PRIMARY KEY, n int, pad text) WITH (fillfactor = 10)"],
         fill="INSERT INTO big SELECT g, 0, repeat(md5(g::text), 25) FROM generate_series(1, 2200) g",
         expect="SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM big t) s",
         ident="key", want_id=("id = 1", 1, ["_id", "id", "n", "pad"]),
         update="n = n + 1", delete="id % 5 = 0", uniques={}),
    # names escaped in file names as mongodump escapes them; a long one cut
    dict(table='"Odd Name/ü"', coll="Odd Name/ü",
         ddl=['CREATE TABLE "Odd Name/ü" (id int PRIMARY KEY, v text)'],
         fill="""INSERT INTO "Odd Name/ü" SELECT g, 'ö' || g FROM generate_series(1, 20) g""",
         expect="""SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM "Odd Name/ü" t) s""",
         ident="key", want_id=("id = 1", 1, ["_id", "id", "v"]),
         update="v = v || '+'", delete="id % 5 = 0", uniques={}),
    dict(table='"%s"."%s"' % (LONG_SCHEMA, LONG_TABLE), coll="%s.%s" % (LONG_SCHEMA, LONG_TABLE),
         ddl=['CREATE SCHEMA "%s"' % LONG_SCHEMA,
              'CREATE TABLE "%s"."%s" (id int PRIMARY KEY, v text)' % (LONG_SCHEMA, LONG_TABLE)],
         fill="""INSERT INTO "%s"."%s" SELECT g, 'l' || g FROM generate_series(1, 20) g""" % (LONG_SCHEMA, LONG_TABLE),
         expect="""SELECT row_to_bson(s) FROM (SELECT t.id AS _id, t.* FROM "%s"."%s" t) s""" % (LONG_SCHEMA,
                                                                                             LONG_TABLE),
         ident="key", want_id=("id = 1", 1, ["_id", "id", "v"]),
         update="v = v || '+'", delete="id % 5 = 0", uniques={}),
    dict(table="pt", coll="pt", ddl=PT_DDL,
         fill="INSERT INTO pt SELECT g, (ARRAY['eu', 'us', 'ap', 'sa'])[g % 4 + 1], 'p' || g, g "
              "FROM generate_series(1, 24) g",
         expect="SELECT row_to_bson(s) FROM (SELECT %s AS _id, t.* FROM pt t) s" % composite("id", "region"),
         ident="key", want_id=("id = 1", SON([("id", 1), ("region", "us")]), ["_id", "id", "region", "v", "n"]),
         mid=["ALTER TABLE pt DROP COLUMN n", "ALTER TABLE pt ADD COLUMN z int DEFAULT 7"],
         update="v = v || '+'", delete="id % 5 = 0", uniques={}),
]


def adapt_to_server(version):
    """What older servers lack: NULLS NOT DISTINCT (15)."""
    if version < 150000:
        for s in SHAPES:
            s["ddl"] = [d for d in s["ddl"] if "NULLS NOT DISTINCT" not in d]
            if s["uniques"]:
                s["uniques"].pop("mx_nnd", None)


def keys_test():
    db = KEYS_DB
    create_db(db)
    version = int(sql(db, "SHOW server_version_num")[0][0])
    adapt_to_server(version)
    for s in list(SHAPES):
        try:
            script(db, s["ddl"] + [s["fill"]])
        except psycopg2.Error as e:
            fail("keys/%s: the table is made" % s["coll"], str(e))
            SHAPES.remove(s)
    colls = {s["coll"] for s in SHAPES}
    w = os.path.join(WORK, "keys")
    os.makedirs(w)

    # every piece's documents; the statements logged with the program's name
    ref = {s["coll"]: documents(db, "SELECT bson_document(t) FROM %s t" % s["table"]) for s in SHAPES}
    script(db, ["ALTER SYSTEM SET log_statement = 'all'", "ALTER SYSTEM SET log_line_prefix = '%m [%p] %a: '",
                "SELECT pg_reload_conf()"])
    time.sleep(0.2)
    rc_dir, err_dir = export_dir(db, os.path.join(w, "export"), "--jobs", "2")
    check(rc_dir == 0, "keys: pg_bsonexport --out-dir exits 0", "exit %s\n%s" % (rc_dir, err_dir))
    exp_docs, exp_meta = read_dir(os.path.join(w, "export", db))
    rc_copy, err_copy = first_copy(db, "keys", os.path.join(w, "stream"), "--jobs", "2")
    check(rc_copy == 0, "keys: pg_bsonstream --create-slot --initial-copy --endpos exits 0",
          "exit %s\n%s" % (rc_copy, err_copy))
    copy_docs, copy_meta = read_dir(os.path.join(w, "stream", "initial", db))
    script(db, ["ALTER SYSTEM RESET log_statement", "ALTER SYSTEM RESET log_line_prefix", "SELECT pg_reload_conf()"])
    with open(os.path.join(CLUSTER_DIR, "server.log"), errors="replace") as f:
        log = f.read()
    ranged = {p: len(re.findall(r"\] %s: .*statement: .*FROM ONLY public\.big t WHERE t\.ctid [<>]" % p, log))
              for p in ("pg_bsonexport", "pg_bsonstream")}
    blocks = sql(db, "SELECT blocks, pg_relation_size('big') / current_setting('block_size')::int "
                     "FROM bson_collections() WHERE coll = 'big'")
    # before 14 there is no TID Range Scan: the programs read a table whole
    split = version >= 140000
    check(blocks and blocks[0][0] == blocks[0][1] >= 2048
          and (min(ranged.values()) >= 2 if split else max(ranged.values()) == 0),
          "keys/big: %s blocks (bson_collections' blocks), read with --jobs 2 %s"
          % (blocks[0][0] if blocks else "?", "in block ranges by both programs" if split
             else "whole (no TID Range Scan before PostgreSQL 14)"),
          "blocks %s, ranged queries %s" % (blocks, ranged))
    if not sql(db, "SELECT 1 FROM pg_replication_slots WHERE slot_name = 'keys'"):
        # the events' checks still run, on a slot made here
        print("note: the slot made by SQL instead (pg_bsonstream did not leave it)")
        sql(db, "SELECT pg_create_logical_replication_slot('keys', 'bson_out')")
    check(not BAD_NAMES, "keys: the files are named as mongodump names them (URL query escapes, long names "
          "cut with a SHA-1)", "\n".join(BAD_NAMES))
    check(set(exp_docs) == colls, "keys: pg_bsonexport --out-dir writes one file per collection (partitions "
          "in their root's)", "files %s, expected %s" % (sorted(exp_docs), sorted(colls)))
    check(set(copy_docs) == colls, "keys: the first copy writes one file per collection (partitions in "
          "their root's)", "files %s, expected %s" % (sorted(copy_docs), sorted(colls)))

    for s in SHAPES:
        c = s["coll"]
        name = "keys/%s" % c
        path = os.path.join(w, "table.%s.bson" % dump_name(c))
        rc, err = export_table(db, s["table"], path)
        table_docs = read_bson(path) if rc == 0 and os.path.exists(path) else None
        check(ref[c] and table_docs is not None and not multiset_diff(table_docs, ref[c]),
              "%s: pg_bsonexport --table %s writes bson_document's documents" % (name, s["table"]),
              lambda: "exit %s %s" % (rc, err) if table_docs is None else multiset_diff(table_docs, ref[c]))
        check(not multiset_diff(exp_docs.get(c, []), ref[c]),
              "%s: pg_bsonexport --out-dir writes bson_document's documents" % name,
              lambda: multiset_diff(exp_docs.get(c, []), ref[c]))
        check(not multiset_diff(copy_docs.get(c, []), ref[c]),
              "%s: the first copy writes bson_document's documents" % name,
              lambda: multiset_diff(copy_docs.get(c, []), ref[c]))
        if s["expect"]:
            want = documents(db, s["expect"])
            check(not multiset_diff(ref[c], want), "%s: bson_document is _id then row_to_bson's columns" % name,
                  lambda: multiset_diff(ref[c], want))
        if s["want_id"]:
            where, want_id, keys = s["want_id"]
            raw = documents(db, "SELECT bson_document(t) FROM %s t WHERE %s" % (s["table"], where))
            d = bson.decode(raw[0], codec_options=PLAIN) if len(raw) == 1 else None
            got_id = d.get("_id") if d else None
            same_id = (want_id is None and d is not None and "_id" not in d) or \
                (d is not None and "_id" in d and got_id == want_id and type(got_id) is type(want_id)
                 and (not isinstance(want_id, dict) or list(got_id) == list(want_id)))
            check(same_id and d is not None and list(d) == keys,
                  "%s: the row %s has %s and the fields %s"
                  % (name, where, "no _id" if want_id is None else "_id " + bson.json_util.dumps(want_id), keys),
                  lambda: "got %s" % (show(raw[0]) if raw else "no row"))
        else:
            ids_ref = sorted(id_of(d) is not None for d in ref[c])
            ok("%s: no _id asserted (%s): the copy has %s"
               % (name, s["why"], "an _id" if ids_ref and ids_ref[0] else "no _id"))

    # a partition's rows, read from the partition, are the root's documents
    leaves = []
    for p in PT_LEAVES:
        leaves += documents(db, "SELECT bson_document(t) FROM ONLY %s t" % p)
    check(not multiset_diff(leaves, ref["pt"]),
          "keys/pt: bson_document of each partition's rows (partition_root) gives the root's documents",
          lambda: multiset_diff(leaves, ref["pt"]))
    own = documents(db, "SELECT bson_document(t, false, false) FROM ONLY pt_us t")
    check(own and all(list(bson.decode(d, codec_options=PLAIN)) == ["_id", "n", "v", "region", "id"]
                      for d in own),
          "keys/pt: bson_document(row, partition_root => false) of the reordered partition: its own "
          "column order", lambda: "\n".join(show(d) for d in own[:3]))

    metadata_checks(db, exp_meta, copy_meta, colls)
    # the same changes through a second slot with omit-nulls, against bson_document(t, true)
    ref_omit = {s["coll"]: documents(db, "SELECT bson_document(t, true) FROM %s t" % s["table"]) for s in SHAPES}
    sql(db, "SELECT pg_create_logical_replication_slot('keys_omit', 'bson_out')")
    keys_events(db, w, ref, ref_omit)
    drop_slot(db, "keys")
    drop_slot(db, "keys_omit")


def metadata_checks(db, exp_meta, copy_meta, colls):
    rows = sql(db, "SELECT coll, metadata FROM bson_collections()")
    from_sql = {}
    for coll, text in rows:
        from_sql.setdefault(coll, set()).add(text)
    check(set(exp_meta) == colls and set(copy_meta) == colls,
          "metadata: a .metadata.json beside every .bson, in the export and in the first copy",
          "export %s, copy %s, expected %s" % (sorted(exp_meta), sorted(copy_meta), sorted(colls)))
    for s in SHAPES:
        c = s["coll"]
        text = exp_meta.get(c)
        if text is None:
            continue
        name = "metadata/%s" % c
        check(copy_meta.get(c) == text and from_sql.get(c) == {text},
              "%s: the same text in the export, the first copy and bson_collections" % name,
              "export %r\ncopy %r\nbson_collections %r" % (text, copy_meta.get(c), from_sql.get(c)))
        try:
            m = bson.json_util.loads(text)
        except Exception as e:          # noqa: BLE001
            fail(name + ": bson.json_util reads it", "%s: %r" % (e, text))
            continue
        idx = m.get("indexes") or []
        check(m.get("collectionName") == c and m.get("type") == "collection" and idx
              and dict(idx[0]) == ID_INDEX and list(idx[0]["key"]) == ["_id"] and text.startswith(METADATA_HEAD),
              "%s: collectionName, type and the _id_ index first, canonical Extended JSON" % name, text)
        if s["uniques"] is None:
            continue
        got = {}
        bad = []
        for i in idx[1:]:
            got[i.get("name")] = list(i.get("key", {}).items())
            if i.get("unique") is not True or i.get("v", 2) != 2:
                bad.append("index %s: %r" % (i.get("name"), i))
        want = {n: [col if isinstance(col, tuple) else (col, 1) for col in cols] for n, cols in s["uniques"].items()}
        check(got == want and not bad,
              "%s: the unique indexes %s" % (name, ", ".join("%s {%s}" % (n, ", ".join("%s: %d" % kv for kv in key))
                                                            for n, key in want.items()) or "none besides _id_"),
              "got %s\n%s\n%s" % (got, "\n".join(bad), text))
        if not want:
            continue
        nullable = s.get("nullable", {})
        bad = []
        for i in idx[1:]:
            pfe = i.get("partialFilterExpression")
            cols = nullable.get(i.get("name"))
            if not cols:
                if pfe is not None:
                    bad.append("%s: a partialFilterExpression on NOT NULL / NULLS NOT DISTINCT columns: %r"
                               % (i.get("name"), pfe))
                continue
            if pfe is None or list(pfe) != cols:
                bad.append("%s: partialFilterExpression %r, expected one on %s" % (i.get("name"), pfe, cols))
                continue
            for col in cols:
                types = pfe[col].get("$type") if isinstance(pfe[col], dict) else None
                if list(pfe[col]) != ["$exists", "$type"] or pfe[col]["$exists"] is not True \
                        or not isinstance(types, list) or "null" in types \
                        or "undefined" in types or not NON_NULL <= set(types):
                    bad.append("%s: %s: %r" % (i.get("name"), col, pfe[col]))
        check(not bad, "%s: a partialFilterExpression {col: {$exists: true, $type: [every type but null]}} exactly on the "
              "nullable columns of unique indexes with NULLS DISTINCT (PostgreSQL lets NULL keys repeat)" % name,
              "\n".join(bad))


def keys_events(db, w, ref, ref_omit):
    """UPDATE every row, DELETE some, TRUNCATE the partitioned root: the events
    name the copied documents."""
    xids = {}
    after = {}
    after_omit = {}
    deleted = {}
    for s in SHAPES:
        c = s["coll"]
        # the stream goes on through schema changes of the root
        script(db, s.get("mid", []))
        xids[("update", c)] = in_xact(db, ["UPDATE %s SET %s" % (s["table"], s["update"])])
        after[c] = documents(db, "SELECT bson_document(t) FROM %s t" % s["table"])
        after_omit[c] = documents(db, "SELECT bson_document(t, true) FROM %s t" % s["table"])
        deleted[c] = documents(db, "SELECT bson_document(t) FROM %s t WHERE %s" % (s["table"], s["delete"]))
        xids[("delete", c)] = in_xact(db, ["DELETE FROM %s WHERE %s" % (s["table"], s["delete"])])
    # one partition truncated: the root's collection keeps the other partitions' documents
    before_part = documents(db, "SELECT bson_document(t) FROM pt t")
    xid_truncate_part = in_xact(db, ["TRUNCATE pt_eu"])
    after_part = documents(db, "SELECT bson_document(t) FROM pt t")
    xid_truncate = in_xact(db, ["TRUNCATE pt"])
    rc, err = stream_to(db, "keys", os.path.join(w, "stream"))
    check(rc == 0, "keys: pg_bsonstream --endpos streams the changes, exit 0", "exit %s\n%s" % (rc, err))
    try:
        events = segment_events(os.path.join(w, "stream"))
    except Exception as e:          # noqa: BLE001
        fail("keys: the segments are read back", e)
        events = []
    if rc != 0 and not events:
        # the plugin's side still checked: the events from the slot by SQL
        print("note: the events read with pg_logical_slot_get_binary_changes instead")
        events = slot_events(db, "keys", [])
    by_txn = collections.defaultdict(list)
    for ev in events:
        by_txn[ev.txn].append(ev)

    for s in SHAPES:
        c = s["coll"]
        name = "keys/%s" % c
        ident = s["ident"]
        copy_ids = [id_of(d) for d in ref[c]]
        up = by_txn.get(xids[("update", c)], [])
        dl = by_txn.get(xids[("delete", c)], [])
        wrong_ns = [e for e in up + dl if (e.db, e.coll) != (db, c)]
        check(up and dl and not wrong_ns, "%s: the events' ns is {db: %s, coll: %s}, as the copy's" % (name, db, c),
              "%d update events, %d delete events; other ns: %s" % (len(up), len(dl), wrong_ns[:3]))
        if ident == "key":
            ops = collections.Counter(e.op for e in up)
            keys = [e.key for e in up]
            fulls = [e.full for e in up]
            # replace where the old row is not known, update where it is (FULL)
            check(set(ops) <= {"update", "replace"} and sum(ops.values()) == len(ref[c])
                  and collections.Counter(keys) == collections.Counter(copy_ids),
                  "%s: an UPDATE of every row: one update or replace event each, documentKey._id = the "
                  "copy's _id" % name,
                  lambda: "ops %s; keys not in the copy: %s; copy ids without an event: %s" % (
                      dict(ops), [show_id(k) for k in (collections.Counter(keys) - collections.Counter(copy_ids))][:3],
                      [show_id(k) for k in (collections.Counter(copy_ids) - collections.Counter(keys))][:3]))
            check(None not in fulls and not multiset_diff(fulls, after[c]),
                  "%s: the updates' fullDocument = bson_document of the new rows%s"
                  % (name, " (after %s)" % "; ".join(s["mid"]) if s.get("mid") else ""),
                  lambda: "no fullDocument" if None in fulls else multiset_diff(fulls, after[c]))
        elif ident == "whole":
            dels = [e.key for e in up if e.op == "delete"]
            ins = [e for e in up if e.op == "insert"]
            check(len(up) == 2 * len(ref[c]) and collections.Counter(dels) == collections.Counter(copy_ids),
                  "%s: an UPDATE of every row (the whole row is the key): a delete of the copy's _id "
                  "and an insert each" % name,
                  lambda: "%s" % [(e.op, show_id(e.key)) for e in up[:6]])
            check(ins and not multiset_diff([e.full for e in ins], after[c])
                  and all(e.key == id_of(e.full) for e in ins),
                  "%s: the inserts' fullDocument = bson_document of the new rows, documentKey its _id" % name,
                  lambda: multiset_diff([e.full for e in ins], after[c]))
        elif ident == "none":
            check(collections.Counter(e.op for e in up) == {"update": len(ref[c])}
                  and not any(e.has_key for e in up) and not any(id_of(d) for d in ref[c]),
                  "%s: no identity: the copy has no _id and the update events no documentKey" % name,
                  "%s" % up[:3])
        elif ident == "partial":
            # the root's key is the whole row, but one partition logs no old row
            known = set(copy_ids) | {id_of(d) for d in deleted[c]}
            wrong = [e for e in up + dl if e.op in ("update", "replace", "delete") and e.key is not None
                     and e.key not in known]
            check(up and not wrong,
                  "%s: no update or delete event names a document the copy does not have (%s)" % (name, s["why"]),
                  lambda: "copy _ids %s\nevents naming other documents: %s" % (
                      ", ".join(show_id(k) for k in copy_ids[:4]),
                      "; ".join("%s %s (fullDocument %s)" % (e.op, show_id(e.key), e.full and show(e.full, 100))
                                for e in wrong[:4])))
            continue
        else:
            agree = all((e.key is not None) == (copy_ids[0] is not None) for e in up + dl) and \
                (copy_ids[0] is None or collections.Counter(e.key for e in up) == collections.Counter(copy_ids))
            check(agree and len(up) == len(ref[c]),
                  "%s: the events carry a documentKey exactly when the copy has an _id, the same" % name,
                  "copy _id %s; events %s" % (show_id(copy_ids[0]), up[:3]))
        del_ids = [id_of(d) for d in deleted[c]]
        check(collections.Counter(e.op for e in dl) == {"delete": len(deleted[c])}
              and collections.Counter(e.key for e in dl) == collections.Counter(del_ids),
              "%s: a DELETE of %d rows: delete events %s"
              % (name, len(deleted[c]), "with documentKey._id = their documents' _id" if any(del_ids)
                 else "without documentKey, as the documents have no _id"),
              lambda: "events %s; expected _ids %s" % (dl[:4], [show_id(k) for k in del_ids[:4]]))

    omit_nulls_events(db, xids, ref_omit, after_omit)
    tp = by_txn.get(xid_truncate_part, [])
    check([(e.op, e.coll, e.partitions) for e in tp] == [("truncate", "pt", ["pt_eu"])],
          "keys/pt: TRUNCATE of one partition (pt_eu): one truncate event on the root's collection that "
          "names the partition (partitions: [pt_eu]), never one of the whole collection",
          "events %s" % [(e.op, e.coll, e.partitions) for e in tp])
    # a consumer that knows the partitions' bounds deletes their documents
    bounds = {"pt_eu": ("region", "eu")}
    model, _ = replay({"pt": before_part}, tp, bounds)
    got = [build(el) for el in model.get("pt", {}).values()]
    check(not multiset_diff(got, after_part),
          "keys/pt: TRUNCATE of one partition replayed (truncate with partitions: deleteMany by the "
          "partitions' bounds) leaves the other partitions' %d documents" % len(after_part),
          lambda: "events %s\n%s" % (tp, multiset_diff(got, after_part)))
    tr = by_txn.get(xid_truncate, [])
    check([(e.op, e.db, e.coll) for e in tr] == [("truncate", db, "pt")],
          "keys/pt: TRUNCATE of the partitioned root: one truncate event, ns = the root's collection",
          "events %s" % tr)
    leaked = sorted({e.coll for e in events if e.coll.startswith("pt_")})
    check(not leaked, "keys/pt: no event names a partition", "%s" % leaked)


def omit_nulls_events(db, xids, ref_omit, after_omit):
    """The updates read with omit-nulls: documentKey and fullDocument are
    those of bson_document(t, omit_nulls => true)."""
    by_txn = collections.defaultdict(list)
    for ev in slot_events(db, "keys_omit", [("omit-nulls", "on")]):
        by_txn[ev.txn].append(ev)
    for s in SHAPES:
        c = s["coll"]
        name = "keys/%s" % c
        up = by_txn.get(xids[("update", c)], [])
        if s["ident"] == "partial":
            continue
        if s["ident"] == "whole":
            olds = [e.key for e in up if e.op == "delete"]
            news = [e.full for e in up if e.op == "insert"]
        else:
            olds = [e.key for e in up if e.op in ("update", "replace")]
            news = [e.full for e in up if e.op in ("update", "replace")]
        want_olds = [id_of(d) for d in ref_omit[c]]
        check(collections.Counter(olds) == collections.Counter(want_olds) and None not in news
              and not multiset_diff(news, after_omit[c]),
              "%s: with omit-nulls, the update events' documentKey and fullDocument are those of "
              "bson_document(t, omit_nulls => true)" % name,
              lambda: "keys: events %s, expected %s\n%s" % (
                  [show_id(k) for k in olds[:3]], [show_id(k) for k in want_olds[:3]],
                  "no fullDocument" if None in news else multiset_diff(news, after_omit[c])))


# ------------------------------------------------------------------ selections

SEL_DB = "xsel"
SEL_TABLES = ["ta", "tb", "tc", "other", "s1.ta", '"odd.name"', '"MixedCase"', "tp", "tq", "tu"]
ALL = {"ta", "tb", "tc", "other", "s1.ta", "odd.name", "MixedCase", "tp", "tq"}     # tu is unlogged


def sel(what, include, exclude, want, warn=False, root=True, schema=False, ns_db=None):
    """A selection: the include-tables and exclude-tables values, the
    collections it must give (None: only the agreement is checked), whether a
    "selects no table" warning is due, and the other options that name
    collections (partition-root, include-schema, ns-db)."""
    return dict(what=what, include=include, exclude=exclude, want=want, warn=warn, root=root,
                schema=schema, ns_db=ns_db)


SELECTIONS = [
    sel("one comma-separated argument", [" public.ta ,public.tb "], [], {"ta", "tb"}),
    sel("repeated --include-tables", ["public.ta", "public.tb"], [], {"ta", "tb"}),
    sel("wildcard public.t*", ["public.t*"], [], {"ta", "tb", "tc", "tp", "tq"}),
    sel("wildcard with --exclude-tables", ["public.t*"], ["public.tc", "public.tp"], {"ta", "tb", "tq"}),
    # s1.tq_1 is a partition of public.tq: selected by its root's name only
    sel("schema wildcards, lists and repeats", ["*.ta", "s1.*, public.other"], ["public.other"], {"ta", "s1.ta"}),
    sel("--exclude-tables alone", [], ["public.t*", "public.other"], {"s1.ta", "odd.name", "MixedCase"}),
    sel("names are case-sensitive", ["public.Mixed*"], [], {"MixedCase"}),
    sel("an unlogged table named", ["public.tu"], [], set(), warn=True),
    sel("a pattern in the wrong case", ["public.mixedcase"], [], set(), warn=True),
    sel("a backslash-escaped dot", ["public.odd\\.name"], [], {"odd.name"}),
    sel("no selection", [], [], ALL),
    sel("a pattern selecting nothing", ["public.nope"], [], set(), warn=True),
    sel("one of two patterns selecting nothing", ["public.ta, public.nope"], [], {"ta"}, warn=True),
    # partition-root on: a partition is selected by its root's name only
    sel("a partition by its own name", ["public.tp_1"], [], set(), warn=True),
    sel("--no-partition-root, the root named", ["public.tp"], [], {"tp_1", "tp_2"}, root=False),
    sel("--no-partition-root, a partition named", ["public.tp_1", "public.ta"], [], {"tp_1", "ta"}, root=False),
    sel("--no-partition-root, a wildcard less a partition", ["public.t*"], ["public.tp_2"], None, root=False),
    sel("--no-partition-root, a partition in another schema than its root", ["s1.*"], [], {"s1.ta", "s1.tq_1"},
        root=False),
    sel("--include-schema", ["*.ta"], [], {"public.ta", "s1.ta"}, schema=True),
    sel("--ns-db", ["public.ta"], [], {"ta"}, ns_db="mirror"),
]


def dump_colls(path):
    """{"db/coll"} of the .bson files of a dump directory (DIR/<db>/<coll>.bson)."""
    out = set()
    for p in glob.glob(os.path.join(path, "*", "*.bson")):
        out.add("%s/%s" % (os.path.basename(os.path.dirname(p)), coll_of(p)))
    return out


def select_test():
    db = SEL_DB
    create_db(db)
    ddl = ["CREATE SCHEMA s1"]
    for t in SEL_TABLES:
        if t == "tp":
            ddl += ["CREATE TABLE tp (id int PRIMARY KEY, v text) PARTITION BY RANGE (id)",
                    "CREATE TABLE tp_1 PARTITION OF tp FOR VALUES FROM (0) TO (50)",
                    "CREATE TABLE tp_2 PARTITION OF tp FOR VALUES FROM (50) TO (200)"]
        elif t == "tq":
            ddl += ["CREATE TABLE tq (id int PRIMARY KEY, v text) PARTITION BY RANGE (id)",
                    "CREATE TABLE s1.tq_1 PARTITION OF tq FOR VALUES FROM (0) TO (1000)"]
        else:
            ddl.append("CREATE %sTABLE %s (id int PRIMARY KEY, v text)" % ("UNLOGGED " if t == "tu" else "", t))
        ddl.append("INSERT INTO %s SELECT g, 'v' || g FROM generate_series(1, 60) g" % t)
    ddl.append("SELECT pg_create_logical_replication_slot('sel', 'bson_out')")
    # a change of every table (both partitions) for the plugin to select
    ddl += ["INSERT INTO %s VALUES (100, 'new')" % t for t in SEL_TABLES] + ["INSERT INTO tp VALUES (0, 'new')"]
    script(db, ddl)
    w = os.path.join(WORK, "select")
    os.makedirs(w)

    for i, s in enumerate(SELECTIONS):
        name = "select/%s" % s["what"]
        include, exclude = s["include"], s["exclude"]
        ns = s["ns_db"] or db
        opts = [("include-tables", p) for p in include] + [("exclude-tables", p) for p in exclude]
        args = selection_args(include, exclude)
        if not s["root"]:
            opts.append(("partition-root", "off"))
            args.append("--no-partition-root")
        if s["schema"]:
            opts.append(("include-schema", "on"))
            args.append("--include-schema")
        if s["ns_db"]:
            opts.append(("ns-db", s["ns_db"]))
            args += ["--ns-db", s["ns_db"]]
        try:
            plugin = {"%s/%s" % (e.db, e.coll) for e in slot_events(db, "sel", opts, consume=False)}
        except psycopg2.Error as e:
            plugin = "error: %s" % str(e).strip()
        try:
            rows, notices = sql_notices(db, "SELECT DISTINCT db, coll FROM bson_collections(%s::text[], %s::text[], "
                                            "%s, %s, %s)",
                                        (include or None, exclude or None, s["ns_db"], s["schema"], s["root"]))
            from_sql = {"%s/%s" % r for r in rows}
        except psycopg2.Error as e:
            from_sql, notices = "error: %s" % str(e).strip(), ""
        out_copy = os.path.join(w, "copy%d" % i)
        out_exp = os.path.join(w, "export%d" % i)
        rc_c, err_c = first_copy(db, "sel%d" % i, out_copy, *args)
        drop_slot(db, "sel%d" % i)
        rc_e, err_e = export_dir(db, out_exp, *args)
        copy = dump_colls(os.path.join(out_copy, "initial"))
        export = dump_colls(out_exp)
        want = None if s["want"] is None else {"%s/%s" % (ns, c) for c in s["want"]}
        detail = ("plugin %s\nbson_collections %s\nfirst copy %s (exit %s)\n--out-dir %s (exit %s)\n"
                  "expected %s\npg_bsonstream: %s\npg_bsonexport: %s"
                  % (sorted(plugin) if isinstance(plugin, set) else plugin,
                     sorted(from_sql) if isinstance(from_sql, set) else from_sql,
                     sorted(copy), rc_c, sorted(export), rc_e, sorted(want) if want is not None else "-",
                     err_c.strip(), err_e.strip()))
        check(rc_c == 0 and rc_e == 0 and plugin == from_sql == copy == export and (want is None or plugin == want),
              "%s (%s): the same collections in the events, bson_collections, the first copy and --out-dir%s"
              % (name, " ".join(args) or "no options",
                 "" if want is None else ": %s" % (", ".join(sorted(want)) or "none")), detail)
        if s["warn"]:
            check("selects no table" in notices and "selects no table" in err_c and "selects no table" in err_e,
                  "%s: a \"selects no table\" warning from bson_collections, pg_bsonstream and pg_bsonexport" % name,
                  "bson_collections: %r\npg_bsonstream: %s\npg_bsonexport: %s" % (notices, err_c, err_e))
        elif want:
            check("selects no table" not in err_c + err_e + notices,
                  "%s: no \"selects no table\" warning" % name, "%s\n%s\n%s" % (notices, err_c, err_e))
    drop_slot(db, "sel")


# ------------------------------------------------------------------ what no collection holds

CHECKS_DB = "xchecks"
RIVALS = 'tables a.b and public."a.b" both take collection "a.b"'
EQUAL_ROWS = "table public.rf has equal rows, which would be documents with the same _id"
EQUAL_ROWS_WARNING = "equal rows of table public.rf become one document"


def dir_docs(path):
    """{coll: number of documents} of a dump directory's database directory."""
    return {c: len(d) for c, d in read_dir(path)[0].items()}


def refused(name, rc, err, message, detail=""):
    """A program that must exit 1 with the server's message, and no other error."""
    check(rc == 1 and message in err and len(re.findall(r"^pg_bsonexport: error:|^pg_bsonstream: error:", err, re.M)) == 1,
          "%s: exit 1, \"%s\"%s" % (name, message, detail), "exit %s\n%s" % (rc, err.strip()))


def rivals_test():
    """Two tables that take one collection name: public."a.b" and a.b."""
    db = CHECKS_DB
    w = os.path.join(WORK, "rivals")
    os.makedirs(w)
    script(db, ['CREATE TABLE "a.b" (id int PRIMARY KEY, v text)',
                "CREATE SCHEMA a",
                "CREATE TABLE a.b (id int PRIMARY KEY, v text, code text UNIQUE)",
                """INSERT INTO "a.b" VALUES (1, 'public')""",
                "INSERT INTO a.b VALUES (1, 'a', 'c1')"])
    both = ["--include-tables", r"public.a\.b,a.b"]
    rc, err = export_dir(db, os.path.join(w, "export"), *both)
    refused("rivals/pg_bsonexport --out-dir", rc, err, RIVALS,
            ", the way out in the hint, nothing written")
    check("--include-schema" in err and not glob.glob(os.path.join(w, "export", "*", "*.bson")),
          "rivals/pg_bsonexport --out-dir: the hint names --include-schema; no .bson file written", err)
    rc, err = first_copy(db, "rivals_copy", os.path.join(w, "copy"), *both)
    drop_slot(db, "rivals_copy")
    refused("rivals/pg_bsonstream --initial-copy", rc, err, RIVALS)
    # the way out: the schema in every name; or a single table, which nothing can collide with
    rc, err = export_dir(db, os.path.join(w, "schema"), "--include-schema", *both)
    got = dir_docs(os.path.join(w, "schema", db)) if rc == 0 else {}
    check(rc == 0 and got == {"a.b": 1, "public.a.b": 1},
          "rivals/pg_bsonexport --out-dir --include-schema: collections a.b and public.a.b, one document each",
          "exit %s, %s\n%s" % (rc, got, err.strip()))
    rc, err = first_copy(db, "rivals_schema", os.path.join(w, "copy_schema"), "--include-schema", *both)
    drop_slot(db, "rivals_schema")
    got = dir_docs(os.path.join(w, "copy_schema", "initial", db)) if rc == 0 else {}
    check(rc == 0 and got == {"a.b": 1, "public.a.b": 1},
          "rivals/pg_bsonstream --initial-copy --include-schema: collections a.b and public.a.b",
          "exit %s, %s\n%s" % (rc, got, err.strip()))
    out = os.path.join(w, "table.bson")
    rc, err = export_table(db, '"a.b"', out)
    check(rc == 0 and len(read_bson(out)) == 1, "rivals/pg_bsonexport --table '\"a.b\"': one table, exit 0",
          "exit %s\n%s" % (rc, err.strip()))
    # the change stream: the plugin's error at the first change, through the program
    sql(db, "SELECT pg_create_logical_replication_slot('rivals', 'bson_out')")
    sql(db, "UPDATE a.b SET v = 'a2'")
    rc, err = run([STREAM, "-d", db, "--slot", "rivals", "-o", os.path.join(w, "stream"),
                   "--endpos", current_lsn(db), "--segment-time", "0.5"] + both)
    refused("rivals/pg_bsonstream streaming", rc, err, RIVALS)
    check(re.search(r"\nhint: Name the collections with their schemas.*\ncontext: decoding a change of table \S+ in "
                    r"transaction \d+, whose commit ends at (\S+)\nto skip the transaction, .* run: SELECT "
                    r"pg_replication_slot_advance\('rivals', '\1'\);", err),
          "rivals/pg_bsonstream streaming: the error's own hint, then the context with the command that skips "
          "the transaction", err.strip())
    rc, err = run([STREAM, "-d", db, "--slot", "rivals", "-o", os.path.join(w, "stream_schema"),
                   "--endpos", current_lsn(db), "--segment-time", "0.5", "--include-schema"] + both)
    colls = [e.coll for e in segment_events(os.path.join(w, "stream_schema"))] if rc == 0 else []
    check(rc == 0 and colls == ["a.b"], "rivals/pg_bsonstream --include-schema streams the change to a.b",
          "exit %s, %s\n%s" % (rc, colls, err.strip()))
    drop_slot(db, "rivals")
    script(db, ['DROP TABLE "a.b", a.b', "DROP SCHEMA a"])


def equal_rows_test():
    """REPLICA IDENTITY FULL without a key: equal rows refused by every export."""
    db = CHECKS_DB
    w = os.path.join(WORK, "equal")
    os.makedirs(w)
    script(db, ["CREATE TABLE rf (a int, b text)",
                "ALTER TABLE rf REPLICA IDENTITY FULL",
                "INSERT INTO rf VALUES (3, 'dup'), (3, 'dup'), (4, 'one')",
                "CREATE TABLE keyed (id int PRIMARY KEY, v text)",
                "INSERT INTO keyed VALUES (1, 'x'), (2, 'x')"])
    sel = ["--include-tables", "public.rf, public.keyed"]
    rc, err = export_table(db, "rf", os.path.join(w, "rf.bson"))
    refused("equal rows/pg_bsonexport --table", rc, err, EQUAL_ROWS)
    check('1 row repeats the _id of another, for example {"a": 3, "b": "dup"}' in err,
          "equal rows/pg_bsonexport --table: how many rows, and one _id", err)
    rc, err = export_dir(db, os.path.join(w, "export"), *sel)
    refused("equal rows/pg_bsonexport --out-dir", rc, err, EQUAL_ROWS)
    rc, err = first_copy(db, "equal_copy", os.path.join(w, "copy"), *sel)
    drop_slot(db, "equal_copy")
    refused("equal rows/pg_bsonstream --initial-copy", rc, err, EQUAL_ROWS)
    # documents without _id can be equal
    rc, err = run([EXPORT, "-d", db, "--table", "rf", "--no-id", "-o", os.path.join(w, "noid.bson"), "-q"])
    check(rc == 0 and len(read_bson(os.path.join(w, "noid.bson"))) == 3,
          "equal rows/pg_bsonexport --table --no-id: 3 documents without _id", "exit %s\n%s" % (rc, err))
    # the stream warns, once per table and session
    sql(db, "SELECT pg_create_logical_replication_slot('equal', 'bson_out')")
    script(db, ["INSERT INTO rf VALUES (6, 'six'), (6, 'six')", "UPDATE rf SET b = 'seven' WHERE a = 4",
                "UPDATE keyed SET v = 'y'"])
    rc, err = run([STREAM, "-d", db, "--slot", "equal", "-o", os.path.join(w, "stream"),
                   "--endpos", current_lsn(db), "--segment-time", "0.5"] + sel)
    n = len(segment_events(os.path.join(w, "stream"))) if rc == 0 else 0
    check(rc == 0 and err.count(EQUAL_ROWS_WARNING) == 1 and "keyed" not in err and n == 6,
          "equal rows/pg_bsonstream streaming: 6 events, one warning \"%s\", none for a keyed table"
          % EQUAL_ROWS_WARNING, "exit %s, %d events\n%s" % (rc, n, err.strip()))
    drop_slot(db, "equal")
    # distinct rows: every export writes them
    sql(db, "DELETE FROM rf WHERE ctid NOT IN (SELECT min(ctid) FROM rf GROUP BY a, b)")
    rc_t, err_t = export_table(db, "rf", os.path.join(w, "rf_distinct.bson"))
    rc_e, err_e = export_dir(db, os.path.join(w, "export_distinct"), *sel)
    rc_c, err_c = first_copy(db, "equal_distinct", os.path.join(w, "copy_distinct"), *sel)
    drop_slot(db, "equal_distinct")
    want = len(sql(db, "SELECT * FROM rf"))
    got = (len(read_bson(os.path.join(w, "rf_distinct.bson"))) if rc_t == 0 else None,
           dir_docs(os.path.join(w, "export_distinct", db)).get("rf") if rc_e == 0 else None,
           dir_docs(os.path.join(w, "copy_distinct", "initial", db)).get("rf") if rc_c == 0 else None)
    check(got == (want, want, want),
          "equal rows: distinct rows are exported by --table, --out-dir and --initial-copy (%d documents)" % want,
          "documents %s\n%s\n%s\n%s" % (got, err_t, err_e, err_c))
    script(db, ["DROP TABLE rf, keyed"])


def checks_test():
    create_db(CHECKS_DB)
    for test in (rivals_test, equal_rows_test):
        try:
            test()
        except Exception:               # noqa: BLE001
            fail("%s: unexpected error" % test.__name__, traceback.format_exc())


# ------------------------------------------------------------------ consumer replay

REPLAY_DB = "xreplay"
N_ROWS = 1500
W_DDL = [
    "CREATE TABLE w_single (id int PRIMARY KEY, v text, n numeric, j jsonb, at timestamptz, big text)",
    "ALTER TABLE w_single ALTER COLUMN big SET STORAGE EXTERNAL",
    "CREATE TABLE w_comp (id int, k int, v text, PRIMARY KEY (id, k))",
    "CREATE TABLE w_inc (id int, v text, w int, PRIMARY KEY (id) INCLUDE (v))",
    "CREATE TABLE w_ui (id int PRIMARY KEY, code text NOT NULL, v int)",
    "CREATE UNIQUE INDEX w_ui_code ON w_ui (code)",
    "ALTER TABLE w_ui REPLICA IDENTITY USING INDEX w_ui_code",
    "CREATE TABLE w_full (id int PRIMARY KEY, v text, n int)",
    "ALTER TABLE w_full REPLICA IDENTITY FULL",
    "CREATE TABLE w_fullnk (id int, v text)",
    "ALTER TABLE w_fullnk REPLICA IDENTITY FULL",
    "CREATE TABLE w_nkid (id int PRIMARY KEY, _id text, v int)",
    "CREATE TABLE w_kid (_id int PRIMARY KEY, v text)",
    "CREATE TABLE w_pt (id int, region text, v text, n int, PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
    "CREATE TABLE w_pt_eu PARTITION OF w_pt FOR VALUES IN ('eu')",
    "CREATE TABLE w_pt_us (n int, v text, region text NOT NULL, id int NOT NULL)",
    "ALTER TABLE w_pt ATTACH PARTITION w_pt_us FOR VALUES IN ('us')",
    "CREATE TABLE w_pt_ap (junk int, id int NOT NULL, region text NOT NULL, v text, n int)",
    "ALTER TABLE w_pt_ap DROP COLUMN junk",
    "ALTER TABLE w_pt ATTACH PARTITION w_pt_ap FOR VALUES IN ('ap')",
    "CREATE TABLE unselected (id int PRIMARY KEY)",
]
W_FILL = [
    "INSERT INTO w_single SELECT g, 'v' || g, g / 3.0, jsonb_build_object('g', g), now(), "
    "CASE WHEN g %% 10 = 0 THEN repeat(md5(g::text), 100) END FROM generate_series(1, %d) g" % N_ROWS,
    "INSERT INTO w_comp SELECT g, g %% 7, 'c' || g FROM generate_series(1, %d) g" % N_ROWS,
    "INSERT INTO w_inc SELECT g, 'i' || g, g FROM generate_series(1, %d) g" % N_ROWS,
    "INSERT INTO w_ui SELECT g, 'c' || g, g FROM generate_series(1, %d) g" % N_ROWS,
    "INSERT INTO w_full SELECT g, 'f' || g, g FROM generate_series(1, %d) g" % N_ROWS,
    "INSERT INTO w_fullnk SELECT g, 'n' || g FROM generate_series(1, %d) g" % N_ROWS,
    "INSERT INTO w_nkid SELECT g, 'hidden', g FROM generate_series(1, %d) g" % N_ROWS,
    "INSERT INTO w_kid SELECT g, 'k' || g FROM generate_series(1, %d) g" % N_ROWS,
    "INSERT INTO w_pt SELECT g, (ARRAY['eu', 'us', 'ap'])[g %% 3 + 1], 'p' || g, g FROM generate_series(1, %d) g"
    % N_ROWS,
]
W_TABLES = ["w_single", "w_comp", "w_inc", "w_ui", "w_full", "w_fullnk", "w_nkid", "w_kid", "w_pt"]
REGIONS = ["eu", "us", "ap"]


class Workload:
    """Random inserts, updates (key changes too) and deletes from concurrent
    sessions, in transactions of 1 to 4 statements, some rolled back."""

    def __init__(self, db, sessions=2, seed=1):
        self.db = db
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(seed * 100 + i, i)) for i in range(sessions)]
        self.commits = 0
        self.errors = 0
        self.failure = None
        self.lock = threading.Lock()

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()

    def one(self, cur, rnd, session, counter):
        t = rnd.choice(W_TABLES)
        k = rnd.randint(1, 2 * N_ROWS)
        op = rnd.random()
        v = "r%d%s" % (rnd.randint(0, 10 ** 6), rnd.choice(["", "é", "€"]))
        if t == "w_single":
            if op < 0.35:
                cur.execute("INSERT INTO w_single VALUES (%s, %s, %s, %s, now(), NULL) "
                            "ON CONFLICT (id) DO UPDATE SET v = excluded.v, n = excluded.n",
                            (k, v, rnd.randint(0, 10 ** 6) / 100, '{"k": [%d, "x"]}' % k))
            elif op < 0.8:
                # never the TOASTed column: updates that leave it out of updatedFields
                cur.execute("UPDATE w_single SET v = %s, n = n + 1, j = NULL WHERE id BETWEEN %s AND %s",
                            (v, k, k + 3))
            else:
                cur.execute("DELETE FROM w_single WHERE id = %s", (k,))
        elif t == "w_comp":
            if op < 0.35:
                cur.execute("INSERT INTO w_comp VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (k, k % 7, v))
            elif op < 0.7:
                cur.execute("UPDATE w_comp SET v = %s WHERE id = %s", (v, k))
            elif op < 0.8:
                cur.execute("UPDATE w_comp SET k = k + 10 WHERE id = %s", (k,))
            else:
                cur.execute("DELETE FROM w_comp WHERE id = %s", (k,))
        elif t == "w_inc":
            if op < 0.35:
                cur.execute("INSERT INTO w_inc VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (k, v, k))
            elif op < 0.8:
                cur.execute("UPDATE w_inc SET v = %s, w = w + 1 WHERE id = %s", (v, k))
            else:
                cur.execute("DELETE FROM w_inc WHERE id = %s", (k,))
        elif t == "w_ui":
            if op < 0.35:
                cur.execute("INSERT INTO w_ui VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (k, "c%d" % k, k))
            elif op < 0.7:
                cur.execute("UPDATE w_ui SET v = v + 1 WHERE id = %s", (k,))
            elif op < 0.8:
                cur.execute("UPDATE w_ui SET code = code || 'x' WHERE id = %s", (k,))
            else:
                cur.execute("DELETE FROM w_ui WHERE id = %s", (k,))
        elif t == "w_full":
            if op < 0.35:
                cur.execute("INSERT INTO w_full VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (k, v, k))
            elif op < 0.55:
                cur.execute("UPDATE w_full SET n = n + 1 WHERE id = %s", (k,))
            elif op < 0.8:
                cur.execute("UPDATE w_full SET v = %s WHERE id BETWEEN %s AND %s", (v, k, k + 2))
            else:
                cur.execute("DELETE FROM w_full WHERE id = %s", (k,))
        elif t == "w_fullnk":
            if op < 0.35:
                # ids never repeat: the whole row is the key
                cur.execute("INSERT INTO w_fullnk VALUES (%s, %s)", (1000000 * (session + 1) + counter, v))
            elif op < 0.8:
                cur.execute("UPDATE w_fullnk SET v = %s WHERE id = %s", (v, k))
            else:
                cur.execute("DELETE FROM w_fullnk WHERE id = %s", (k,))
        elif t == "w_nkid":
            if op < 0.35:
                cur.execute("INSERT INTO w_nkid VALUES (%s, 'hidden', %s) ON CONFLICT DO NOTHING", (k, k))
            elif op < 0.8:
                cur.execute("UPDATE w_nkid SET v = v + 1, _id = %s WHERE id = %s", (v, k))
            else:
                cur.execute("DELETE FROM w_nkid WHERE id = %s", (k,))
        elif t == "w_kid":
            if op < 0.35:
                cur.execute("INSERT INTO w_kid VALUES (%s, %s) ON CONFLICT DO NOTHING", (k, v))
            elif op < 0.8:
                cur.execute("UPDATE w_kid SET v = %s WHERE _id = %s", (v, k))
            else:
                cur.execute("DELETE FROM w_kid WHERE _id = %s", (k,))
        else:
            if op < 0.35:
                cur.execute("INSERT INTO w_pt VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                            (k, rnd.choice(REGIONS), v, k))
            elif op < 0.65:
                cur.execute("UPDATE w_pt SET v = %s, n = n + 1 WHERE id = %s", (v, k))
            elif op < 0.8:
                # to another partition: a delete and an insert
                r = rnd.choice(REGIONS)
                cur.execute("UPDATE w_pt SET region = %s WHERE id = %s AND region <> %s", (r, k, r))
            else:
                cur.execute("DELETE FROM w_pt WHERE id = %s", (k,))

    def run(self, seed, session):
        rnd = random.Random(seed)
        counter = 0
        try:
            conn = psycopg2.connect(dbname=self.db)
            cur = conn.cursor()
            cur.execute("SET lock_timeout = '500ms'")
            conn.commit()
            while not self.stop.is_set():
                try:
                    for _ in range(rnd.randint(1, 4)):
                        counter += 1
                        self.one(cur, rnd, session, counter)
                    if rnd.random() < 0.1:
                        conn.rollback()
                    else:
                        conn.commit()
                        with self.lock:
                            self.commits += 1
                except (psycopg2.errors.UniqueViolation, psycopg2.errors.LockNotAvailable,
                        psycopg2.errors.DeadlockDetected, psycopg2.errors.SerializationFailure):
                    conn.rollback()
                    with self.lock:
                        self.errors += 1
                time.sleep(rnd.random() * 0.003)
            conn.close()
        except Exception:               # noqa: BLE001
            self.failure = traceback.format_exc()


def replay(base, events, bounds=None):
    """The consumer: MongoDB Kafka sink rules onto {coll: {_id element: [elements]}}.
    A truncate naming partitions deletes their documents, by bounds
    ({partition: (field, value)}); one without deletes the collection's."""
    model = {c: {} for c in base}
    for c, docs in base.items():
        for raw in docs:
            el = elements(raw)
            model[c][dict(el).get("_id")] = el
    counts = collections.Counter()
    for ev in events:
        coll = model.setdefault(ev.coll, {})
        counts[ev.op] += 1
        if ev.op == "truncate" and ev.partitions is not None:
            for p in ev.partitions:
                field, value = (bounds or {})[p]
                for k in [k for k, el in coll.items() if bson.decode(build(el)).get(field) == value]:
                    del coll[k]
        elif ev.op == "truncate":
            coll.clear()
        elif ev.key is None:
            counts["without documentKey"] += 1
        elif ev.op in ("insert", "replace"):
            el = elements(ev.full)          # ReplaceOne(documentKey, fullDocument, upsert)
            if dict(el).get("_id") is None:
                el = [("_id", ev.key)] + el
            coll[ev.key] = el
        elif ev.op == "update":
            # UpdateOne(documentKey, {$set: updatedFields, $unset: removedFields}, upsert)
            doc = coll.get(ev.key)
            if doc is None:
                counts["update upserted"] += 1
                doc = [("_id", ev.key)]
            doc = list(doc)
            for k, e in elements(ev.updated):
                for i, (dk, _) in enumerate(doc):
                    if dk == k:
                        doc[i] = (k, e)
                        break
                else:
                    doc.append((k, e))
            doc = [(k, e) for k, e in doc if k not in ev.removed]
            coll[ev.key] = doc
        elif ev.op == "delete":
            coll.pop(ev.key, None)      # DeleteOne(documentKey)
    return model, counts


def compare_model(name, db, model, events, counts):
    bad = []
    total = 0
    for t in W_TABLES:
        truth = {}
        for raw in documents(db, "SELECT bson_document(t) FROM %s t" % t):
            truth[id_of(raw)] = raw
        total += len(truth)
        got = {k: build(el) for k, el in model.get(t, {}).items()}
        missing = [k for k in truth if k not in got]
        surplus = [k for k in got if k not in truth]
        differ = [k for k in truth if k in got and got[k] != truth[k]]
        if missing or surplus or differ:
            bad.append("%s: %d rows; %d missing, %d surplus, %d different" % (t, len(truth), len(missing),
                                                                            len(surplus), len(differ)))
            bad += ["  missing %s" % show(truth[k], 200) for k in missing[:2]]
            bad += ["  surplus %s" % show(got[k], 200) for k in surplus[:2]]
            bad += ["  table   %s\n  replay  %s" % (show(truth[k], 300), show(got[k], 300)) for k in differ[:2]]
    extra = sorted(set(model) - set(W_TABLES))
    if extra:
        bad.append("collections not selected: %s" % extra)
    wrong_db = {e.db for e in events} - {db}
    if wrong_db:
        bad.append("ns.db %s" % sorted(wrong_db))
    return check(not bad and events, "%s: %d events (%s) replayed with the Kafka sink's rules equal "
                 "bson_document of the %d final rows" % (name, len(events), ", ".join(
                     "%s %d" % kv for kv in sorted(counts.items())), total), "\n".join(bad))


def replay_test():
    db = REPLAY_DB
    create_db(db)
    script(db, W_DDL + W_FILL + ["VACUUM ANALYZE"])
    w = os.path.join(WORK, "replay")
    os.makedirs(w)
    select = ["--include-tables", "public.w_*"]

    # 1. the slot first, then the export under the workload, then the stream
    sql(db, "SELECT pg_create_logical_replication_slot('replay', 'bson_out')")
    wl = Workload(db, seed=1)
    wl.start()
    time.sleep(0.8)
    rc, err = export_dir(db, os.path.join(w, "export"), "--jobs", "2", *select)
    time.sleep(0.8)
    wl.finish()
    check(wl.failure is None and wl.commits > 50, "replay: the workload ran (%d transactions committed, "
          "%d statements failed and rolled back)" % (wl.commits, wl.errors), wl.failure or "")
    check(rc == 0, "replay: pg_bsonexport --out-dir under the workload exits 0", "exit %s\n%s" % (rc, err))
    base, _ = read_dir(os.path.join(w, "export", db))
    check(set(base) == set(W_TABLES), "replay: the export holds the selected collections",
          "%s" % sorted(base))
    events = slot_events(db, "replay", [("include-tables", "public.w_*")])
    model, counts = replay(base, events)
    compare_model("replay/export taken after the slot's creation + the slot's events", db, model, events, counts)
    drop_slot(db, "replay")

    # 2. the first copy under the workload, then the stream up to the end
    out = os.path.join(w, "stream")
    wl = Workload(db, seed=2)
    wl.start()
    time.sleep(0.5)
    rc, err = first_copy(db, "replay2", out, "--jobs", "2", *select)
    time.sleep(1.0)
    wl.finish()
    check(wl.failure is None and wl.commits > 50, "replay: the second workload ran (%d transactions)" % wl.commits,
          wl.failure or "")
    check(rc == 0, "replay: pg_bsonstream --initial-copy under the workload exits 0", "exit %s\n%s" % (rc, err))
    rc, err = stream_to(db, "replay2", out, *select)
    check(rc == 0, "replay: pg_bsonstream --endpos streams the rest, exit 0", "exit %s\n%s" % (rc, err))
    base, _ = read_dir(os.path.join(out, "initial", db))
    try:
        events = segment_events(out)
    except Exception as e:          # noqa: BLE001
        fail("replay: the segments are read back", e)
        events = []
    model, counts = replay(base, events)
    compare_model("replay/first copy + pg_bsonstream's segments", db, model, events, counts)
    drop_slot(db, "replay2")


# ------------------------------------------------------------------ main

def preflight():
    """The server side must be there: otherwise one failure, not a hundred."""
    create_db("xpre")
    r = sql("xpre", "SELECT extversion, to_regprocedure('bson_document(record, boolean, boolean)') IS NOT NULL, "
                    "to_regprocedure('bson_collections(text[], text[], text, boolean, boolean, boolean)') "
                    "IS NOT NULL FROM pg_extension WHERE extname = 'bson_out'")
    sql("postgres", "DROP DATABASE xpre")
    return check(r and r[0][1] and r[0][2], "setup: bson_out %s has bson_document and bson_collections"
                 % (r[0][0] if r else "?"), "%s" % r)


def main():
    t0 = time.time()
    try:
        ready = preflight()
    except Exception:                   # noqa: BLE001
        ready = fail("setup: the database and the extension", traceback.format_exc())
    if ready:
        for test in (keys_test, select_test, checks_test, replay_test):
            try:
                test()
            except Exception:           # noqa: BLE001
                fail("%s: unexpected error" % test.__name__, traceback.format_exc())
    print("(%.0f s)" % (time.time() - t0))
    print("model: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
