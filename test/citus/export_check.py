#!/usr/bin/env python3
"""pg_bsonexport on a Citus cluster (run by test/citus/export.sh).

A distributed table (32 shards) and a reference table, both distributed
while they already had rows (so the coordinator keeps its own copy until
truncated), and a plain copy of the same rows as the reference: every export
is read back by pymongo and compared, document by document, with
bson_document / to_bson of the plain copy (its primary key the shards' own,
so _id alike), and with row_to_bson under --no-id.  Then: one file, --jobs,
--split, --column, --no-id, a reference table, the statements run on the workers and never on
the coordinator, --via-coordinator, the leftover-rows warning, the session's
settings reaching the workers, --worker-host, and ten exports of a table
under single-row updates and inserts, each with every id exactly once.  A shard
moved after the export read the placements and before its nodes'
snapshots: planned again, every row exported.

The last line is "citus-export: N passed, M failed".
"""
import glob
import os
import random
import re
import subprocess
import sys
import threading
import time

import bson
import psycopg2
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

BIN = os.environ["PG_BSONEXPORT"]
WORK = os.environ["WORK"]
W1 = os.environ["CITUS_WORKER1_PORT"]
W2 = os.environ["CITUS_WORKER2_PORT"]
W1_SOCKET = os.environ["CITUS_WORKER1_SOCKET"]
W2_SOCKET = os.environ["CITUS_WORKER2_SOCKET"]
COORD = os.environ["PGPORT"]
RAW = CodecOptions(document_class=RawBSONDocument)
ROWS = 20000

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


def connect():
    conn = psycopg2.connect("")
    conn.autocommit = True
    return conn


def sql(query, args=None):
    conn = connect()
    try:
        cur = conn.cursor()
        cur.execute(query, args)
        return cur.fetchall() if cur.description else None
    finally:
        conn.close()


def export(name, *args, env=None):
    """Run pg_bsonexport into WORK/name; (exit status, stderr, path)."""
    path = os.path.join(WORK, name)
    r = subprocess.run([BIN, "-o", path, "-f"] + list(args), capture_output=True, text=True,
                       timeout=300, env=env)
    return r.returncode, r.stderr, path


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        return [d.raw for d in bson.decode_file_iter(f, codec_options=RAW)]


def docs_by_id(raws, key="id"):
    out = {}
    dup = 0
    for raw in raws:
        k = bson.decode(raw)[key]
        if k in out:
            dup += 1
        out[k] = raw
    return out, dup


def expected(query):
    return {r[0]: bytes(r[1]) for r in sql(query)}


def same_docs(name, got_raws, want, key="id"):
    got, dup = docs_by_id(got_raws, key)
    differ = [k for k in want if got.get(k) != want[k]]
    extra = [k for k in got if k not in want]
    check(not dup and not differ and not extra and len(got) == len(want) and want,
          "%s: %d documents, each equal to the table's" % (name, len(got_raws)),
          "%d duplicated, %d differing or missing (e.g. %s), %d extra"
          % (dup, len(differ), differ[:5], len(extra)))


def temp_files():
    return glob.glob(os.path.join(WORK, ".*.tmp.*"))


def setup():
    sql("SET citus.shard_count = 32")
    for t in ("x_dist", "x_ref", "x_loc"):
        sql("DROP TABLE IF EXISTS %s" % t)
    sql("CREATE TABLE x_loc (id int PRIMARY KEY, doc jsonb, n numeric, iv interval, "
        "ts timestamptz, tags text[])")
    sql("INSERT INTO x_loc SELECT g, jsonb_build_object('g', g, 'big', 123456789012345678901234567890.5, "
        "'s', 'caf\u00e9 ' || g, 'a', jsonb_build_array(g, g * 1.5, NULL)), "
        "g * 1.000000000000000000001, make_interval(days => g %% 40, secs => g), "
        "'2020-01-01 00:00:00+00'::timestamptz + g * interval '1 minute', ARRAY['t' || g, 'u'] "
        "FROM generate_series(1, %d) g" % ROWS)
    sql("CREATE TABLE x_dist AS SELECT * FROM x_loc")
    sql("ALTER TABLE x_dist ADD PRIMARY KEY (id)")
    sql("CREATE TABLE x_ref AS SELECT * FROM x_loc WHERE id <= 500")
    sql("ALTER TABLE x_ref ADD PRIMARY KEY (id)")
    conn = connect()
    cur = conn.cursor()
    cur.execute("SET citus.shard_count = 32")
    cur.execute("SET client_min_messages = warning")
    cur.execute("SELECT create_distributed_table('x_dist', 'id')")
    cur.execute("SELECT create_reference_table('x_ref')")
    conn.close()


def shard_statements(err):
    return re.findall(r"job \d+: (shard \d+ of \d+, \S+ on ([^:]+):(\d+)): COPY", err)


def basic():
    want = expected("SELECT id, bson_document(t) FROM x_loc t")
    rc, err, one = export("one.bson", "-t", "x_dist", "-v")
    check(rc == 0, "one file: exit 0", err)
    same_docs("one file", read(one), want)
    stmts = shard_statements(err)
    ports = {p for _, _, p in stmts}
    check(len(stmts) == 32 and ports == {W1, W2} and COORD not in ports,
          "one file: 32 COPYs, one a shard, on both workers and none on the coordinator",
          "%d statements on ports %s\n%s" % (len(stmts), sorted(ports), err[-1500:]))
    check("truncate_local_data_after_distributing_table('public.x_dist')" in err
          and "still holds" in err, "leftover rows on the coordinator: a warning naming "
          "truncate_local_data_after_distributing_table", err[-1500:])

    rc, err, four = export("four.bson", "-t", "x_dist", "--jobs", "4")
    check(rc == 0 and open(four, "rb").read() == open(one, "rb").read(),
          "--jobs 4: byte-identical to --jobs 1 (shard order)", err)

    rc, err, split = export("split.bson", "-t", "x_dist", "--jobs", "3", "--split")
    files = sorted(glob.glob(os.path.join(WORK, "split.*.bson")))
    joined = b"".join(open(f, "rb").read() for f in files)
    check(rc == 0 and len(files) == 32 and joined == open(one, "rb").read()
          and all(os.path.getsize(f) > 0 for f in files),
          "--jobs 3 --split: 32 files, one a shard, together the one file", "%s %d\n%s" % (rc, len(files), err))

    rc, err, noid = export("noid.bson", "-t", "x_dist", "--no-id", "--jobs", "2")
    check(rc == 0, "--no-id: exit 0", err)
    same_docs("--no-id (row_to_bson on the shards)", read(noid),
              expected("SELECT id, row_to_bson(t) FROM x_loc t"))

    want_doc = {k: v for k, v in (
        (r[0], bytes(r[1])) for r in sql("SELECT (doc->>'g')::int, to_bson(doc) FROM x_loc"))}
    rc, err, col = export("col.bson", "-t", "x_dist", "-c", "doc", "--jobs", "2")
    check(rc == 0, "--column doc: exit 0", err)
    same_docs("--column doc", read(col), want_doc, key="g")

    rc, err, ref = export("ref.bson", "-t", "x_ref", "--jobs", "4", "-v")
    check(rc == 0 and len(shard_statements(err)) == 1, "reference table: exported once, one COPY",
          err[-1500:])
    same_docs("reference table", read(ref), {k: v for k, v in want.items() if k <= 500})

    rc, err, via = export("via.bson", "-t", "x_dist", "--via-coordinator")
    check(rc == 0 and "spills them to its disk" in err, "--via-coordinator: says that it spills", err)
    same_docs("--via-coordinator", read(via), want)
    rc, err, _ = export("via2.bson", "-t", "x_dist", "--via-coordinator", "--jobs", "2")
    check(rc == 1 and "--jobs cannot split public.x_dist through the coordinator" in err
          and not os.path.exists(os.path.join(WORK, "via2.bson")),
          "--via-coordinator --jobs: refused, nothing written", err)


def settings():
    """Settings of the coordinator only (ALTER SYSTEM there) reach the workers' queries."""
    sql("ALTER SYSTEM SET IntervalStyle = 'iso_8601'")
    sql("SELECT pg_reload_conf()")
    time.sleep(0.5)
    want = expected("SELECT id, bson_document(t) FROM x_loc t WHERE id <= 500")
    rc, err, path = export("iso.bson", "-t", "x_ref")
    got = read(path) if rc == 0 else []
    ivs = [bson.decode(d)["iv"] for d in got[:3]]
    check(rc == 0 and ivs and all(v.startswith("P") for v in ivs),
          "IntervalStyle of the coordinator's session honoured on the worker", "%s %s\n%s" % (rc, ivs, err))
    same_docs("IntervalStyle iso_8601", got, want)
    sql("ALTER SYSTEM RESET IntervalStyle")

    # the setting exists once the library is loaded in the session that sets it
    conn = connect()
    conn.cursor().execute("LOAD 'bson_out'")
    conn.cursor().execute("ALTER SYSTEM SET bson_out.max_document_size = '100'")
    conn.close()
    sql("SELECT pg_reload_conf()")
    time.sleep(0.5)
    rc, err, path = export("small.bson", "-t", "x_dist", "--jobs", "2")
    check(rc == 1 and re.search(r"shard \d+ of 32, public\.x_dist_\d+ on 127\.0\.0\.1:(%s|%s)\): "
                                r"the export query failed .*exceeds the maximum size of 100 bytes"
                                % (W1, W2), err, re.S)
          and not os.path.exists(path) and not temp_files(),
          "bson_out.max_document_size of the coordinator's session: the error raised on a worker, "
          "naming the shard; no file left", err)
    sql("ALTER SYSTEM RESET bson_out.max_document_size")
    sql("SELECT pg_reload_conf()")
    time.sleep(0.5)


def worker_hosts():
    want = expected("SELECT id, bson_document(t) FROM x_loc t")
    rc, err, path = export("mapped.bson", "-t", "x_dist", "-v",
                           "--worker-host", "127.0.0.1:%s=%s:%s" % (W1, W1_SOCKET, W1),
                           "--worker-host", "127.0.0.1:%s=%s:%s" % (W2, W2_SOCKET, W2))
    hosts = {h for _, h, _ in shard_statements(err)}
    check(rc == 0 and hosts == {W1_SOCKET, W2_SOCKET},
          "--worker-host: the workers reached at the mapped addresses (their sockets)",
          "%s %s\n%s" % (rc, hosts, err[-1500:]))
    if rc == 0:
        same_docs("--worker-host", read(path), want)
    rc, err, path = export("bad.bson", "-t", "x_dist", "--worker-host", "127.0.0.1:%s=127.0.0.1:1" % W2)
    check(rc == 1 and "could not connect to the node 127.0.0.1 port 1" in err
          and "--worker-host NAME[:PORT]=HOST[:PORT]" in err and not os.path.exists(path),
          "an unreachable node: its address and the --worker-host hint", err)
    rc, err, _ = export("bad2.bson", "-t", "x_dist", "--worker-host", "nonsense")
    check(rc == 1 and 'invalid --worker-host "nonsense"' in err, "--worker-host without '=': refused", err)
    rc, err, _ = export("typo.bson", "-t", "x_dist", "--worker-host", "10.9.9.9=127.0.0.1")
    check(rc == 0 and 'warning: --worker-host "10.9.9.9=127.0.0.1" matches no node' in err,
          "--worker-host matching no node: a warning, the export done", err)


def coordinator_shards():
    """A Citus local table: its one shard is on the coordinator, reached where
    the leader connection reached it (pg_dist_node may call it 127.0.0.1 or
    localhost, which a remote client would take for itself)."""
    sql("DROP TABLE IF EXISTS x_cl")
    sql("CREATE TABLE x_cl AS SELECT * FROM x_loc WHERE id <= 300")
    sql("ALTER TABLE x_cl ADD PRIMARY KEY (id)")
    sql("SELECT citus_add_local_table_to_metadata('x_cl')")
    rc, err, path = export("cl.bson", "-t", "x_cl", "-v")
    stmts = shard_statements(err)
    check(rc == 0 and len(stmts) == 1 and stmts[0][1] == os.environ["PGHOST"] and stmts[0][2] == COORD,
          "Citus local table: its shard read on the coordinator, at the leader's address",
          "%s %s\n%s" % (rc, stmts, err[-1500:]))
    same_docs("Citus local table", read(path),
              expected("SELECT id, bson_document(t) FROM x_loc t WHERE id <= 300"))
    sql("DROP TABLE x_cl")


def split_limit():
    """--split opens a file per shard: more than 512 shards are refused before anything runs."""
    sql("DROP TABLE IF EXISTS x_many")
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE x_many (id int PRIMARY KEY)")
    cur.execute("SELECT create_distributed_table('x_many', 'id', shard_count := 513)")
    conn.close()
    rc, err, _ = export("many.bson", "-t", "x_many", "--jobs", "2", "--split")
    check(rc == 1 and "--split writes one file per shard, and public.x_many has 513 shards (at most 512)" in err
          and not glob.glob(os.path.join(WORK, "many.*")),
          "--split on 513 shards: refused, no file written", err)
    rc, err, path = export("many.bson", "-t", "x_many", "--jobs", "2")
    check(rc == 0 and os.path.getsize(path) == 0, "513 shards into one file: done (an empty table)", err)
    sql("DROP TABLE x_many")


def truncated():
    sql("SELECT truncate_local_data_after_distributing_table('x_dist')")
    rc, err, path = export("clean.bson", "-t", "x_dist")
    rows = sql("SELECT count(*) FROM x_dist")[0][0]
    check(rc == 0 and "warning" not in err and len(read(path)) == rows,
          "after truncate_local_data_after_distributing_table: no warning, every row", err)


class Writer:
    """Single-row updates and inserts, from two sessions."""

    def __init__(self, table):
        self.table = table
        self.stop = threading.Event()
        self.next_id = [10 ** 6]
        self.lock = threading.Lock()
        self.errors = []
        self.threads = [threading.Thread(target=self.run, args=(s,)) for s in range(2)]
        for t in self.threads:
            t.start()

    def run(self, seed):
        rnd = random.Random(seed)
        conn = connect()
        cur = conn.cursor()
        try:
            while not self.stop.is_set():
                if rnd.random() < 0.7:
                    cur.execute("UPDATE " + self.table + " SET n = n + 1, doc = doc || '{\"u\": 1}' "
                                "WHERE id = %s", (rnd.randint(1, ROWS),))
                else:
                    with self.lock:
                        self.next_id[0] += 1
                        k = self.next_id[0]
                    cur.execute("INSERT INTO " + self.table + " SELECT %s, doc, n, iv, ts, tags "
                                "FROM x_loc WHERE id = 1", (k,))
        except psycopg2.Error as e:
            self.errors.append(str(e))
        conn.close()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def concurrent(table):
    """The table still has its leftover rows on the coordinator, whose blocks
    a block-range split would wrongly apply to every shard."""
    w = Writer(table)
    bad = []
    runs = 0
    try:
        for i in range(10):
            before = {r[0] for r in sql("SELECT id FROM " + table)}
            args = ["-t", table, "--jobs", str(1 + i % 4)] + (["--split"] if i % 3 == 2 else [])
            rc, err, path = export("live%d.bson" % i, *args)
            after = {r[0] for r in sql("SELECT id FROM " + table)}
            files = sorted(glob.glob(os.path.join(WORK, "live%d.*.bson" % i))) or [path]
            ids = []
            for f in files:
                ids += [bson.decode(d)["id"] for d in read(f)]
            runs += 1
            dup = len(ids) - len(set(ids))
            missing = before - set(ids)
            phantom = set(ids) - after
            if rc != 0 or dup or missing or phantom:
                bad.append("run %d (%s): exit %s, %d ids, %d twice, %d missing, %d unknown\n%s"
                           % (i + 1, " ".join(args), rc, len(ids), dup, len(missing), len(phantom), err))
    finally:
        w.finish()
    check(runs == 10 and not bad and not w.errors,
          "10 exports under single-row updates and inserts (--jobs 1 to 4, --split): every id exactly once",
          "\n".join(bad + w.errors))
    inserted = sql("SELECT count(*) FROM " + table + " WHERE id > %s", (10 ** 6,))[0][0]
    check(inserted > 0, "the writers inserted rows during the exports (%d)" % inserted)


def worker_conn(port):
    sock = W1_SOCKET if port == W1 else W2_SOCKET
    conn = psycopg2.connect("", host=sock, port=port)
    conn.autocommit = True
    return conn


def moved_at_start():
    """A shard moved after the export read the placements and before its
    nodes' snapshots: the export reads the placements again once every
    snapshot is taken, and plans again; the rows written to the moved shard
    on its new node are exported.  The order is forced: a session on the
    node of the first shard holds that shard locked, so the export waits
    there (its first node) while the test moves another shard and writes."""
    sql("DROP TABLE IF EXISTS x_mv")
    sql("CREATE TABLE x_mv (id int PRIMARY KEY, v text)")
    sql("SELECT create_distributed_table('x_mv', 'id', shard_count := 4)")
    sql("INSERT INTO x_mv SELECT g, 'before' FROM generate_series(1, 400) g")
    shards = sql("SELECT s.shardid, pg_catalog.shard_name(s.logicalrelid, s.shardid), n.nodeport::text "
                 "FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) "
                 "JOIN pg_dist_node n USING (groupid) WHERE s.logicalrelid = 'x_mv'::regclass "
                 "ORDER BY s.shardminvalue::numeric")
    first_port = shards[0][2]
    other = [sh for sh in shards if sh[2] != first_port]
    check(other, "moved at start: a shard on the other worker", shards)
    if not other:
        return
    moved = other[0]
    holder = worker_conn(first_port)
    cur = holder.cursor()
    cur.execute("BEGIN")
    cur.execute("SET LOCAL citus.enable_manual_changes_to_shards = on")
    cur.execute("LOCK TABLE %s IN ACCESS EXCLUSIVE MODE" % shards[0][1])
    path = os.path.join(WORK, "moved.bson")
    proc = subprocess.Popen([BIN, "-o", path, "-f", "-t", "x_mv"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    probe = worker_conn(first_port)
    waiting = False
    for _ in range(200):
        pc = probe.cursor()
        pc.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = %s::regclass",
                   (shards[0][1],))
        if pc.fetchone()[0] > 0:
            waiting = True
            break
        time.sleep(0.05)
    probe.close()
    err = ""
    try:
        check(waiting, "moved at start: the export waits on its first shard's node")
        sql("SELECT citus_move_shard_placement(%s, '127.0.0.1', %s, '127.0.0.1', %s, "
            "shard_transfer_mode := 'block_writes')" % (moved[0], moved[2], first_port))
        # rows of the moved shard alone: the first shard is locked
        sql("INSERT INTO x_mv SELECT g, 'after' FROM generate_series(401, 4000) g "
            "WHERE get_shard_id_for_distribution_column('x_mv', g) = %s" % moved[0])
    except psycopg2.Error as e:
        check(False, "moved at start: the move and the writes", str(e))
    finally:
        cur.execute("ROLLBACK")
        holder.close()
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    want = expected("SELECT id, bson_document(t) FROM x_mv t")
    on_new = sql("SELECT count(*) FROM x_mv WHERE id > 400 AND "
                 "get_shard_id_for_distribution_column('x_mv', id) = %s" % moved[0])[0][0]
    check(proc.returncode == 0 and "moved or were split while the export started" in err,
          "moved at start: the export notices the move and plans again (exit %s)" % proc.returncode, err)
    same_docs("moved at start: every row, %d of them written to the moved shard on its new node"
              % on_new, read(path), want, key="_id")
    sql("DROP TABLE x_mv")


def main():
    t0 = time.time()
    setup()
    basic()
    settings()
    worker_hosts()
    coordinator_shards()
    split_limit()
    concurrent("x_dist")
    moved_at_start()
    truncated()
    check(not temp_files(), "no temporary file left", "\n".join(temp_files()))
    for t in ("x_dist", "x_ref", "x_loc"):
        sql("DROP TABLE IF EXISTS %s" % t)
    print("(%.0f s)" % (time.time() - t0))
    print("citus-export: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
