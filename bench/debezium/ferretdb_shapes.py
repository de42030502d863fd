#!/usr/bin/python3
"""Where part 2's time goes: FerretDB's CPU for the same writes with the
documents of each pipeline.  bench/debezium_bench.sh's part 2 writes, with
pymongo, into the FerretDB at 127.0.0.1:PORT (pid PID):

  ferretdb_shapes.py PORT PID [ROWS]

ROWS (default 2,000) replace upserts of new documents, ROWS replaces of
them, ROWS/2 deletes, in ordered bulk writes of 64, for each document shape:
bson_out's (created a BSON date, meta an embedded document), Debezium's
through its JSON converter (created an ISO-8601 string, meta a JSON string),
and bson_out's with a progress document replaced after each bulk write (as
pg_bsonstream --to stores its resume token).  Prints FerretDB's CPU
milliseconds per write, per phase.
"""
import datetime
import json
import os
import sys
import time

import pymongo
from pymongo import DeleteOne, ReplaceOne

port, pid = int(sys.argv[1]), int(sys.argv[2])
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
client = pymongo.MongoClient("127.0.0.1", port, directConnection=True)
hz = os.sysconf("SC_CLK_TCK")


def ticks():
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def doc(g, n, shape):
    created = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=g)
    meta = {"g": g, "tags": ["a", "b"]}
    d = {"_id": "k%d" % g, "id": "k%d" % g, "rid": g, "n": n, "name": "name %d" % g,
         "email": "u%d@example.com" % g, "created": created, "score": g / 7.0, "active": g % 2 == 0,
         "meta": meta}
    if shape == "debezium":
        d["created"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        d["meta"] = json.dumps(meta)
    return d


def run(shape, progress, db):
    coll = client[db].ab
    out = []
    for phase in ("insert", "replace", "delete"):
        if phase == "insert":
            writes = [ReplaceOne({"_id": "k%d" % g}, doc(g, g, shape), upsert=True) for g in range(1, rows + 1)]
        elif phase == "replace":
            writes = [ReplaceOne({"_id": "k%d" % g}, doc(g, g + 1, shape), upsert=True) for g in range(1, rows + 1)]
        else:
            writes = [DeleteOne({"_id": "k%d" % g}) for g in range(1, rows + 1, 2)]
        t0, w0 = ticks(), time.time()
        for i in range(0, len(writes), 64):
            coll.bulk_write(writes[i:i + 64], ordered=True)
            if progress:
                client[db].progress.replace_one({"_id": "slot"}, {"_id": "slot", "token": str(i)}, upsert=True)
        out.append("%s %.1f ms CPU a write (%.1f s)" % (phase, (ticks() - t0) * 1000 / hz / len(writes),
                                                       time.time() - w0))
    print("%-30s %s" % (shape + (" + progress" if progress else ""), "; ".join(out)), flush=True)


for rnd in range(2):
    for shape, progress in (("bson_out", False), ("debezium", False), ("bson_out", True)):
        run(shape, progress, "s_%s_%d_%d" % (shape, progress, rnd))
