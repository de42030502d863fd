#!/usr/bin/env python3
"""Checks of test/mongotools/run.sh: bsondump --objcheck on every .bson file the programs write, and
mongorestore of a pg_bsonexport --out-dir dump into FerretDB, compared with bson_document of each table.
The last line is "mongotools: N passed, M failed"."""
import glob
import os
import subprocess
import sys

import bson
from bson import json_util
import psycopg2
import pymongo
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

EXPORT = os.environ["PG_BSONEXPORT"]
STREAM = os.environ["PG_BSONSTREAM"]
TOOLS = os.environ["TOOLS"]
WORK = os.environ["WORK"]
FPORT = int(os.environ["FERRETDB_PORT"])
DB = "xtools"

passed = 0
failed = 0


def check(cond, name, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + name, flush=True)
    else:
        failed += 1
        print("FAIL " + name, flush=True)
        for line in str(detail).splitlines()[:30]:
            print("     | " + line, flush=True)
    return cond


def sql(query, args=None, db=DB):
    conn = psycopg2.connect(dbname=db)
    conn.autocommit = True
    try:
        cur = conn.cursor()
        cur.execute(query, args)
        return cur.fetchall() if cur.description else None
    finally:
        conn.close()


def count_docs(path):
    with open(path, "rb") as f:
        return sum(1 for _ in bson.decode_file_iter(f, CodecOptions(document_class=RawBSONDocument)))


def bsondump(path):
    """bsondump --objcheck: (exit status, documents it says it found, stderr)."""
    r = subprocess.run([os.path.join(TOOLS, "bsondump"), "--objcheck", "--outFile", os.devnull, path],
                       capture_output=True, text=True, timeout=600)
    found = None
    for line in r.stderr.splitlines():
        if "objects found" in line:
            found = int(line.split()[-3])
    return r.returncode, found, r.stderr


def check_files(name, paths):
    bad = []
    total = 0
    for p in paths:
        rc, found, err = bsondump(p)
        want = count_docs(p)
        total += want
        if rc != 0 or found != want:
            bad.append("%s: exit %s, bsondump found %s of %d\n%s" % (p, rc, found, want, err[-500:]))
    check(paths and not bad, "%s: bsondump --objcheck reads the %d files, every document (%d)" % (name, len(paths), total),
          "\n".join(bad) or "no files")


def main():
    sql("DROP DATABASE IF EXISTS " + DB, db="postgres")
    sql("CREATE DATABASE " + DB, db="postgres")
    sql("CREATE EXTENSION bson_out")
    # numerics (Decimal128), which FerretDB does not store: bsondump only
    sql("CREATE TABLE t0 (id int PRIMARY KEY, n numeric, m numeric(20, 4))")
    sql("INSERT INTO t0 SELECT g, g * 1.25, g / 7.0 FROM generate_series(1, 1000) g")
    sql("""CREATE TABLE t1 (id int PRIMARY KEY, x float8, s text, b bytea, at timestamptz, d date,
                            u uuid, j jsonb, arr int[], ok boolean, iv interval)""")
    sql("""INSERT INTO t1 SELECT g, g / 3.0, 'é' || g, decode(md5(g::text), 'hex'),
                                 '2026-01-01'::timestamptz + g * interval '1 hour', '2026-01-01'::date + g,
                                 md5(g::text)::uuid, jsonb_build_object('g', g, 'a', jsonb_build_array(g, 'x', null)),
                                 ARRAY[g, g + 1], g % 2 = 0, g * interval '1 minute'
                          FROM generate_series(1, 3000) g""")
    sql("CREATE TABLE t2 (a text, b int, v text, PRIMARY KEY (a, b))")
    sql("INSERT INTO t2 SELECT 'k' || (g % 7), g, repeat('v', g % 50) FROM generate_series(1, 2000) g")
    sql("CREATE TABLE t3 (id bigint PRIMARY KEY, email text UNIQUE)")
    sql("INSERT INTO t3 SELECT g, 'u' || g || '@example.com' FROM generate_series(1, 500) g")

    # pg_bsonexport: one file, then a dump directory
    one = os.path.join(WORK, "t1.bson")
    r = subprocess.run([EXPORT, "-d", DB, "--table", "public.t1", "-o", one], capture_output=True, text=True)
    check(r.returncode == 0, "pg_bsonexport --table: exit 0", r.stderr)
    check_files("pg_bsonexport --table", [one])
    dump = os.path.join(WORK, "dump")
    r = subprocess.run([EXPORT, "-d", DB, "--out-dir", dump, "--include-tables", "public.*"],
                       capture_output=True, text=True)
    check(r.returncode == 0, "pg_bsonexport --out-dir: exit 0", r.stderr)
    check_files("pg_bsonexport --out-dir", sorted(glob.glob(os.path.join(dump, "*", "*.bson"))))

    # the indexes as current mongodump writes them: no "ns" (mongodump of MongoDB 4.4 on dropped it)
    specs = []
    for m in glob.glob(os.path.join(dump, "*", "*.metadata.json")):
        with open(m) as f:
            specs += [(m, i) for i in json_util.loads(f.read())["indexes"]]
    check(len(specs) >= 5 and not [x for x in specs if "ns" in x[1]],
          "pg_bsonexport --out-dir: the %d index specifications of the metadata carry no \"ns\"" % len(specs),
          [x for x in specs if "ns" in x[1]][:3])
    # mongorestore of the dump into FerretDB, the tables as they were dumped
    r = subprocess.run([os.path.join(TOOLS, "mongorestore"), "--host", "127.0.0.1:%d" % FPORT, "--noIndexRestore",
                        "--nsExclude", DB + ".t0", dump], capture_output=True, text=True, timeout=900)
    check(r.returncode == 0 and "0 document(s) failed to restore" in r.stderr,
          "mongorestore --noIndexRestore of pg_bsonexport --out-dir into FerretDB: exit 0, every document",
          r.stderr[-2000:])
    client = pymongo.MongoClient("127.0.0.1", FPORT, document_class=RawBSONDocument)
    for t in ("t1", "t2", "t3"):
        want = sorted(bytes(row[0]) for row in sql("SELECT bson_document(tbl) FROM %s tbl" % t))
        got = sorted(d.raw for d in client[DB][t].find())
        check(got == want, "mongorestore: %s read back from FerretDB equals bson_document of its table, byte for "
              "byte (%d documents)" % (t, len(want)), "%d documents back, %d in the table; %d differ" % (
                  len(got), len(want), len(set(got) ^ set(want))))
    client.close()
    # pg_bsonstream: the first copy and the change segments
    out = os.path.join(WORK, "stream")
    end = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    r = subprocess.run([STREAM, "-d", DB, "--slot", "tools", "--create-slot", "--initial-copy", "-o", out,
                        "--include-tables", "public.*", "--no-sync", "-E", end], capture_output=True, text=True)
    check(r.returncode == 0, "pg_bsonstream --initial-copy: exit 0", r.stderr)
    sql("UPDATE t1 SET s = s || '!', j = j || '{\"u\": true}' WHERE id % 3 = 0")
    sql("DELETE FROM t2 WHERE b % 5 = 0")
    sql("INSERT INTO t3 SELECT g, NULL FROM generate_series(501, 600) g")
    end = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    r = subprocess.run([STREAM, "-d", DB, "--slot", "tools", "-o", out, "--no-sync", "-E", end,
                        "--include-tables", "public.*"], capture_output=True, text=True)
    check(r.returncode == 0, "pg_bsonstream: the changes: exit 0", r.stderr)
    check_files("pg_bsonstream's first copy", sorted(glob.glob(os.path.join(out, "initial", "*", "*.bson"))))
    check_files("pg_bsonstream's change segments", sorted(glob.glob(os.path.join(out, "changes", "*.bson"))))
    sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'tools'")

    print("mongotools: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
