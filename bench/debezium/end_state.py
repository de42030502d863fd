#!/usr/bin/python3
"""The end state of one run of bench/debezium_bench.sh's part 2: the
collection ab of the FerretDB database DB against the table ab.

  end_state.py PORT DB debezium|pg_bsonstream

pg_bsonstream's documents must equal bson_document(t) of the rows, byte for
byte.  Debezium's are the "after" rows of its JSON events (schemas off), as
MongoDB's sink connector writes them: a timestamptz is an ISO-8601 string,
a jsonb a JSON string; each value must equal the row's, read as such, and
_id the key.  Prints "N documents, equal to the table" (exit 0) or what
differs (exit 1).  Uses the PG* environment for PostgreSQL.
"""
import datetime
import json
import sys

import bson
import psycopg2
import pymongo
from bson.raw_bson import RawBSONDocument

port, dbname, pipeline = int(sys.argv[1]), sys.argv[2], sys.argv[3]
client = pymongo.MongoClient("127.0.0.1", port, document_class=RawBSONDocument, directConnection=True)
coll = client[dbname].ab
conn = psycopg2.connect(dbname="bench")
cur = conn.cursor()
diffs = []

if pipeline == "pg_bsonstream":
    got = {bson.decode(d.raw)["_id"]: d.raw for d in coll.find()}
    cur.execute("SELECT id, bson_document(t) FROM ab t")
    want = {i: bytes(d) for i, d in cur.fetchall()}
    for k in sorted(set(got) | set(want)):
        if got.get(k) != want.get(k):
            diffs.append("_id %r: %s" % (k, "missing" if k not in got else "not in the table" if k not in want
                                         else "%r != %r" % (bson.decode(got[k]), bson.decode(want[k]))))
else:
    got = {}
    for d in coll.find():
        d = bson.decode(d.raw)
        got[d["_id"]] = d
    cur.execute("SELECT id, rid, n, name, email, created, score, active, meta FROM ab")
    cols = [c.name for c in cur.description]
    want = {row[0]: dict(zip(cols, row)) for row in cur.fetchall()}

    def normal(d):
        """Debezium's document as the row's values (strings parsed)"""
        out = dict(d)
        out.pop("_id", None)
        if isinstance(out.get("created"), str):
            out["created"] = datetime.datetime.fromisoformat(out["created"].replace("Z", "+00:00"))
        if isinstance(out.get("meta"), str):
            out["meta"] = json.loads(out["meta"])
        return out

    for k in sorted(set(got) | set(want)):
        if k not in got or k not in want:
            diffs.append("_id %r: %s" % (k, "missing" if k not in got else "not in the table"))
            continue
        g, w = normal(got[k]), want[k]
        if g != w or got[k]["_id"] != w["id"]:
            diffs.append("_id %r: %r != %r" % (k, got[k], w))

if diffs:
    print("%d documents, %d rows; %d differ, first: %s" % (len(got), len(want), len(diffs), "; ".join(diffs[:3])))
    sys.exit(1)
print("%d documents, equal to the table%s" % (len(got), ", byte for byte" if pipeline == "pg_bsonstream" else
                                              ", value for value"))
