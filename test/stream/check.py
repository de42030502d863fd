#!/usr/bin/env python3
"""Checks of pg_bsonstream, run by test/stream/run.sh on its throwaway cluster.

A first copy (a dump directory, DIR/initial/<db>/<coll>.bson with its
.metadata.json) and the change stream of a concurrent random workload,
replayed onto a model (a dictionary per ns keyed by documentKey, the events
in resume token order, duplicate tokens dropped), must equal the tables
exactly: the documents compared byte for byte with bson_document of the
rows, _id first.  The selection and naming options reach the copy and the
stream alike.
Then the same through SIGKILLs of the client at random moments, a server
restart and a terminated walsender.  Then every error message, and that no
temporary file is ever left.  Then the stops that must never be silent: a
server ERROR in the stream (fatal, once, with its context), the reconnection
backoff and the summary's count through terminated walsenders, a slot
invalidated while the client reconnects, kill -9 at three moments of the
first copy (never a stream without its copy), and failing --create-slot runs
beside another run's files.  Then clean stops in the middle of large
transactions, restarted four times, sending nothing twice, and rows of 10 MB
whose events are split into fragments of at most 16 MiB that pymongo puts
together again.  A first copy that row-level security would filter fails;
the waits of --create-slot --initial-copy (for a writing transaction, for a
table lock) are said, and --lock-wait-timeout ends the second.

The last line is "stream: N passed, M failed".
"""
import datetime
import glob
import io
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from crosscheck_common import reassemble   # noqa: E402  (before bson.json_util)

import bson   # noqa: E402
import bson.json_util   # noqa: E402
import psycopg2   # noqa: E402
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

BIN = os.environ["PG_BSONSTREAM"]
READ_LIBBSON = os.environ["READ_LIBBSON"]
WORK = os.environ["WORK"]
PG_BINDIR = os.environ["PG_BINDIR"]
CLUSTER_DIR = os.environ["CLUSTER_DIR"]
RUNAS = os.environ.get("RUNAS", "").split()
DB = "xstream"
RAW = CodecOptions(document_class=RawBSONDocument)

passed = 0
failed = 0


def ok(name):
    global passed
    passed += 1
    print("ok   " + name, flush=True)


def fail(name, detail=""):
    global failed
    failed += 1
    print("FAIL " + name, flush=True)
    if detail:
        for line in str(detail).splitlines()[:30]:
            print("     | " + line, flush=True)


def check(cond, name, detail=""):
    if cond:
        ok(name)
    else:
        fail(name, detail)


def connect(db=DB):
    conn = psycopg2.connect(dbname=db)
    conn.autocommit = True
    return conn


def sql(query, args=None, db=DB):
    conn = connect(db)
    try:
        cur = conn.cursor()
        cur.execute(query, args)
        return cur.fetchall() if cur.description else None
    finally:
        conn.close()


TABLES = {
    # ns coll: (create, the document query giving fullDocument, _id first)
    "t1": ("CREATE TABLE t1 (id int PRIMARY KEY, v text, n numeric, j jsonb)",
           "SELECT bson_document(t) FROM t1 t"),
    # a key of two columns: _id a document of them, in the key's order
    "t2": ("CREATE TABLE t2 (a int, b text, c int, PRIMARY KEY (b, a))",
           "SELECT bson_document(t) FROM t2 t"),
    # a column named _id in a keyed table: left out, as the events leave it out
    "t4": ("CREATE TABLE t4 (id int PRIMARY KEY, _id text, z int)",
           "SELECT bson_document(t) FROM t4 t"),
    "s1.t3": ("CREATE TABLE s1.t3 (id bigint PRIMARY KEY, k int, note text, at timestamptz)",
              "SELECT bson_document(t) FROM s1.t3 t"),
}


def setup():
    sql("DROP DATABASE IF EXISTS " + DB, db="postgres")
    sql("CREATE DATABASE " + DB, db="postgres")
    sql("CREATE EXTENSION bson_out")
    sql("CREATE SCHEMA s1")
    for create, _ in TABLES.values():
        sql(create)
    sql("CREATE TABLE other (id int PRIMARY KEY)")   # not selected
    sql("INSERT INTO t1 SELECT g, 'r' || g, g / 7.0, jsonb_build_object('g', g) FROM generate_series(1, 300) g")
    sql("INSERT INTO t2 SELECT g, 'b' || (g % 5), g FROM generate_series(1, 300) g")
    sql("INSERT INTO s1.t3 SELECT g, g, NULL, now() FROM generate_series(1, 300) g")
    sql("INSERT INTO t4 SELECT g, 'hidden', g FROM generate_series(1, 50) g")


class Workload:
    """Random inserts, updates and deletes from concurrent sessions; they
    survive a server restart (errors are retried: only the final tables count)."""

    def __init__(self, workers=3, seed=1):
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(seed * 100 + i,)) for i in range(workers)]
        self.txns = 0

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()

    def one(self, cur, rnd):
        table = rnd.choice(["t1", "t2", "t3"])
        op = rnd.random()
        k = rnd.randint(1, 600)
        if table == "t1":
            if op < 0.4:
                cur.execute("INSERT INTO t1 VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
                            (k, "v%d" % rnd.randint(0, 10 ** 6), rnd.randint(0, 10 ** 9) / 1000,
                             '{"a": [%d, "x"]}' % k))
            elif op < 0.8:
                cur.execute("UPDATE t1 SET v = %s, n = n + 1 WHERE id = %s", ("u%d" % rnd.randint(0, 999), k))
            else:
                cur.execute("DELETE FROM t1 WHERE id = %s", (k,))
        elif table == "t2":
            b = "b%d" % (k % 5)
            if op < 0.4:
                cur.execute("INSERT INTO t2 VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (k, b, k))
            elif op < 0.8:
                cur.execute("UPDATE t2 SET c = c + 1 WHERE a = %s AND b = %s", (k, b))
            elif op < 0.999:
                cur.execute("DELETE FROM t2 WHERE a = %s AND b = %s", (k, b))
            else:
                cur.execute("TRUNCATE t2")
        else:
            if op < 0.4:
                cur.execute("INSERT INTO s1.t3 VALUES (%s, %s, %s, now()) ON CONFLICT DO NOTHING",
                            (k, k, None if rnd.random() < 0.3 else "n\u00e9%d" % k))
            elif op < 0.8:
                cur.execute("UPDATE s1.t3 SET k = k + 1, note = %s WHERE id = %s", ("é" * rnd.randint(0, 5), k))
            else:
                cur.execute("DELETE FROM s1.t3 WHERE id = %s", (k,))

    def run(self, seed):
        rnd = random.Random(seed)
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = psycopg2.connect(dbname=DB)
                    conn.set_session(isolation_level="READ COMMITTED")
                cur = conn.cursor()
                for _ in range(rnd.randint(1, 4)):
                    self.one(cur, rnd)
                if rnd.random() < 0.1:
                    conn.rollback()
                else:
                    conn.commit()
                    self.txns += 1
                time.sleep(rnd.random() * 0.004)
            except psycopg2.Error:
                try:
                    conn.close()
                except Exception:
                    pass
                conn = None
                time.sleep(0.1)
        if conn is not None:
            conn.close()


def start_client(slot, out, *extra, create=False, stderr_path=None):
    args = [BIN, "-d", DB, "--slot", slot, "-o", out, "--segment-time", "0.3",
            "--segment-size", "20kB", "--status-interval", "1",
            "--include-tables", "public.t*", "--include-tables", "s1.*"] + list(extra)
    if create:
        args += ["--create-slot", "--initial-copy", "--jobs", "2"]
    err = open(stderr_path or os.path.join(WORK, slot + ".stderr"), "ab")
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)


def lsn_value(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def wait_caught_up(slot, timeout=40):
    """Until the slot has confirmed every WAL position of the workload."""
    target = lsn_value(sql("SELECT pg_current_wal_lsn()::text")[0][0])
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        if r and r[0][0] and lsn_value(r[0][0]) >= target:
            return True
        time.sleep(0.2)
    return False


def temp_files(out):
    return [p for p in glob.glob(os.path.join(out, "*", ".*")) + glob.glob(os.path.join(out, "*", "*", ".*"))
            if ".tmp." in p]


def initial_files(out, suffix=".bson"):
    """The first copy's files: {(db, coll): path}, the names unescaped as mongorestore does."""
    files = {}
    for path in glob.glob(os.path.join(out, "initial", "*", "*" + suffix)):
        name = os.path.basename(path)[:-len(suffix)]
        files[(os.path.basename(os.path.dirname(path)), urllib.parse.unquote_plus(name))] = path
    return files


def replay(out):
    """The model: the first copy, then the events in token order, duplicates dropped."""
    model = {}
    for (_, ns), path in initial_files(out).items():
        docs = model.setdefault(ns, {})
        with open(path, "rb") as f:
            for d in bson.decode_file_iter(f, codec_options=RAW):
                docs[bson.encode({"k": d["_id"]})] = d.raw
    events = {}
    nevents = 0
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        with open(path, "rb") as f:
            for e in bson.decode_file_iter(f, codec_options=RAW):
                nevents += 1
                events[e["_id"]["_data"]] = e
    for e in reassemble(events[token] for token in sorted(events)):
        ns = e["ns"]["coll"]
        docs = model.setdefault(ns, {})
        op = e["operationType"]
        if op == "truncate":
            docs.clear()
            continue
        key = bson.encode({"k": e["documentKey"]["_id"]})
        if op in ("insert", "update", "replace"):
            docs[key] = e["fullDocument"].raw
        elif op == "delete":
            docs.pop(key, None)
    return model, nevents, len(events)


def tables_now():
    conn = connect()
    cur = conn.cursor()
    now = {}
    for ns, (_, query) in TABLES.items():
        cur.execute(query)
        docs = {}
        for (raw,) in cur.fetchall():
            raw = bytes(raw)
            d = bson.decode(raw, codec_options=RAW)
            docs[bson.encode({"k": d["_id"]})] = raw
        now[ns] = docs
    conn.close()
    return now


def compare(name, out):
    model, nevents, distinct = replay(out)
    now = tables_now()
    extra = set(model) - set(now)
    bad = []
    for ns in now:
        m = model.get(ns, {})
        missing = [k for k in now[ns] if k not in m]
        differ = [k for k in now[ns] if k in m and m[k] != now[ns][k]]
        surplus = [k for k in m if k not in now[ns]]
        if missing or differ or surplus:
            bad.append("%s: %d missing, %d different, %d surplus (of %d)"
                       % (ns, len(missing), len(differ), len(surplus), len(now[ns])))
    if extra:
        bad.append("namespaces not selected: %s" % sorted(extra))
    check(not bad and distinct > 0, "%s: initial copy + %d events (%d read) equal the tables (%s)"
          % (name, distinct, nevents, ", ".join("%s %d" % (ns, len(now[ns])) for ns in sorted(now))),
          "\n".join(bad))


def read_back(name, out):
    files = glob.glob(os.path.join(out, "*", "*.bson")) + glob.glob(os.path.join(out, "initial", "*", "*.bson"))
    bad = []
    for path in files:
        r = subprocess.run([READ_LIBBSON, path], capture_output=True, text=True)
        if r.returncode != 0:
            bad.append("%s: %s" % (path, r.stderr.strip()))
    check(files and not bad, "%s: %d files read back by libbson" % (name, len(files)), "\n".join(bad))
    bad = []
    segments = sorted(glob.glob(os.path.join(out, "changes", "*.bson")))
    for path in segments:
        with open(path, "rb") as f:
            tokens = [e["_id"]["_data"] for e in bson.decode_file_iter(f)]
        if not tokens or os.path.basename(path) != "%s-%s.bson" % (tokens[0], tokens[-1]) or \
                tokens != sorted(set(tokens)):
            bad.append("%s: %s .. %s" % (path, tokens[:1], tokens[-1:]))
    check(segments and not bad, "%s: %d segments named by their first and last resume tokens, in order"
          % (name, len(segments)), "\n".join(bad[:10]))
    check_whole_transactions(name, segments)
    check(not temp_files(out), "%s: no temporary file left" % name, "\n".join(temp_files(out)))


def segment_transactions(path):
    """{commit LSN: [positions]} of a segment's events, from their resume tokens."""
    txns = {}
    with open(path, "rb") as f:
        for e in bson.decode_file_iter(f, codec_options=RAW):
            token = e["_id"]["_data"]
            txns.setdefault(token[:16], []).append(int(token[16:], 16))
    return txns


def check_whole_transactions(name, segments):
    """A segment holds whole transactions: each of its transactions' events
    from the first (position 1) on, none missing, and a transaction in two
    segments (sent again after a restart) the same in both."""
    bad = []
    seen = {}
    for path in segments:
        for lsn, positions in segment_transactions(path).items():
            if positions != list(range(1, len(positions) + 1)):
                bad.append("%s: transaction %s, positions %s..%s (%d)" % (os.path.basename(path), lsn,
                                                                      positions[:3], positions[-1:], len(positions)))
            elif seen.setdefault(lsn, len(positions)) != len(positions):
                bad.append("%s: transaction %s with %d events, %d in another segment"
                           % (os.path.basename(path), lsn, len(positions), seen[lsn]))
    check(segments and not bad, "%s: every segment holds whole transactions, none spread over two"
          % name, "\n".join(bad[:10]))


def stop(proc, name, sig=signal.SIGINT):
    proc.send_signal(sig)
    try:
        rc = proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    check(rc == 0, "%s: exits 0 on %s" % (name, sig.name), "exit status %s" % rc)


def wait_initial(out, proc, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if glob.glob(os.path.join(out, "changes", "*.bson")):
            return True
        time.sleep(0.05)
    return False


def walsender_pid(slot):
    r = sql("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (slot,))
    return r[0][0] if r else None


def restart_server(wal_level="logical"):
    opts = ("-c listen_addresses='' -c unix_socket_directories='%s' -p %s -c wal_level=%s "
            "-c max_replication_slots=20 -c max_wal_senders=20 -c fsync=off -c max_prepared_transactions=5"
            % (os.environ["PGHOST"], os.environ["PGPORT"], wal_level))
    subprocess.run(RUNAS + [os.path.join(PG_BINDIR, "pg_ctl"), "-D", os.path.join(CLUSTER_DIR, "data"),
                            "-l", os.path.join(CLUSTER_DIR, "server.log"), "-m", "fast", "-w",
                            "-o", opts, "restart"], check=True, stdout=subprocess.DEVNULL)


# ------------------------------------------------------------------ scenarios

def plain_run():
    out = os.path.join(WORK, "plain")
    wl = Workload(seed=1)
    wl.start()
    time.sleep(0.5)
    proc = start_client("plain", out, create=True)
    time.sleep(2)
    # a multi-row insert: its rows share one LSN, in one segment larger than --segment-size
    conn = connect()
    conn.cursor().copy_expert("COPY t1 FROM STDIN", io.StringIO(
        "".join("%d\tcopy %d\t%d\t{}\n" % (k, k, k) for k in range(400000, 402000))))
    conn.close()
    time.sleep(2)
    wl.finish()
    check(wait_caught_up("plain"), "plain: the slot confirms the whole workload")
    stop(proc, "plain")
    compare("plain", out)
    read_back("plain", out)
    err = open(os.path.join(WORK, "plain.stderr")).read()
    check(re.search(r"initial copy: 4 tables, \d+ documents; \d+ events", err),
          "plain: the one-line summary", err)
    metadata_check("plain", out)
    sql("SELECT pg_drop_replication_slot('plain')")


def parts_run():
    """A table of over 2,048 blocks, first-copied by two connections in block
    ranges while single-row updates move its rows between the ranges: the
    first copy plus the stream still equal the table."""
    sql("DROP TABLE IF EXISTS tbig")
    sql("CREATE TABLE tbig (id int PRIMARY KEY, n int, pad text)")
    sql("INSERT INTO tbig SELECT g, 0, repeat(md5(g::text), 30) FROM generate_series(1, 20000) g")
    sql("VACUUM tbig")
    blocks = sql("SELECT pg_relation_size('tbig') / current_setting('block_size')::int")[0][0]
    sql("ALTER SYSTEM SET log_statement = 'all'")
    sql("SELECT pg_reload_conf()")
    stop_flag = threading.Event()

    def updates():
        conn = connect()
        cur = conn.cursor()
        rnd = random.Random(5)
        while not stop_flag.is_set():
            cur.execute("UPDATE tbig SET n = n + 1 WHERE id = %s", (rnd.randint(1, 20000),))
        conn.close()

    th = threading.Thread(target=updates)
    th.start()
    out = os.path.join(WORK, "parts")
    args = [BIN, "-d", DB, "--slot", "parts", "-o", out, "--segment-time", "0.3",
            "--status-interval", "1", "--include-tables", "public.tbig",
            "--create-slot", "--initial-copy", "--jobs", "2"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ok_initial = wait_initial(out, proc)
    time.sleep(1)
    stop_flag.set()
    th.join()
    caught = wait_caught_up("parts")
    stop(proc, "parts")
    sql("ALTER SYSTEM RESET log_statement")
    sql("SELECT pg_reload_conf()")
    log = open(os.path.join(CLUSTER_DIR, "server.log"), errors="replace").read()
    ranges = len(re.findall(r"statement: (LOCK TABLE [^;]*; )?COPY \(SELECT .*FROM ONLY public\.tbig t "
                            r"WHERE t\.ctid", log))
    model, nevents, _ = replay(out)
    want = {}
    for (raw,) in sql("SELECT bson_document(t) FROM tbig t"):
        raw = bytes(raw)
        want[bson.encode({"k": bson.decode(raw, codec_options=RAW)["_id"]})] = raw
    got = model.get("tbig", {})
    with open(os.path.join(out, "initial", DB, "tbig.bson"), "rb") as f:
        initial = [d["_id"] for d in bson.decode_file_iter(f)]
    # before 14 there is no TID Range Scan: every range would read the whole table
    split_expected = int(sql("SHOW server_version_num")[0][0]) >= 140000
    check(ok_initial and caught and (ranges >= 2 if split_expected else ranges == 0) and got == want
          and len(initial) == len(set(initial)) == 20000,
          "first copy of a %d-block table in %d block ranges by 2 connections%s, under updates: "
          "each row once, copy + %d events equal the table"
          % (blocks, ranges, "" if split_expected else " (none before PostgreSQL 14)", nevents),
          "initial %s, caught up %s, %d ranges, %d rows in the copy (%d distinct), model %d rows, "
          "table %d, differing %d" % (ok_initial, caught, ranges, len(initial), len(set(initial)),
                                      len(got), len(want), sum(1 for k in want if got.get(k) != want[k])))
    sql("SELECT pg_drop_replication_slot('parts')")
    sql("DROP TABLE tbig")


def metadata_check(name, out):
    """Each collection of the first copy has its metadata file, read as canonical Extended JSON."""
    bad = []
    files = initial_files(out)
    metas = initial_files(out, ".metadata.json")
    for key in files:
        try:
            with open(metas[key], encoding="utf-8") as f:
                meta = bson.json_util.loads(f.read())
            if meta.get("collectionName") != key[1] or meta["indexes"][0]["name"] != "_id_":
                bad.append("%s: %r" % (metas[key], meta))
        except (KeyError, IndexError, OSError, ValueError) as e:
            bad.append("%s: %r" % (key, e))
    check(files and set(files) == set(metas) and not bad,
          "%s: a .metadata.json beside each of the %d .bson files, with the collection's name "
          "and its _id index" % (name, len(files)), "\n".join(bad))


def selection_run():
    """The selection and naming options reach the first copy and the stream
    alike: a list in one argument and repeated options, --exclude-tables,
    --ns-db, --include-schema, a partitioned table as its root's collection
    or (--no-partition-root) as its partitions'; a pattern that selects
    nothing is the server's warning."""
    sql("CREATE TABLE pp (id int, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k)")
    sql("CREATE TABLE pp1 PARTITION OF pp FOR VALUES FROM (0) TO (10)")
    sql("CREATE TABLE pp2 PARTITION OF pp FOR VALUES FROM (10) TO (20)")
    sql("INSERT INTO pp SELECT g, g % 20 FROM generate_series(1, 100) g")
    runs = {
        "selroot": ["--include-tables", "public.t1, public.pp", "--include-tables", "public.t2",
                    "--include-tables", "public.nope", "--exclude-tables", "public.t2",
                    "--ns-db", "nsdb", "--include-schema"],
        "selparts": ["--include-tables", "public.pp", "--no-partition-root"],
    }
    want = {
        "selroot": {("nsdb", "public.t1"), ("nsdb", "public.pp")},
        "selparts": {(DB, "pp1"), (DB, "pp2")},
    }
    for i, (slot, extra) in enumerate(runs.items()):
        k = 500001 + 10 * i
        out = os.path.join(WORK, slot)
        err_path = os.path.join(WORK, slot + ".stderr")
        proc = subprocess.Popen([BIN, "-d", DB, "--slot", slot, "-o", out, "--create-slot",
                                 "--initial-copy", "--segment-time", "0.3", "--status-interval", "1"]
                                + extra, stdout=subprocess.DEVNULL, stderr=open(err_path, "wb"))
        deadline = time.time() + 20
        while time.time() < deadline and proc.poll() is None and \
                not sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active", (slot,)):
            time.sleep(0.1)
        sql("INSERT INTO t1 VALUES (%s, 'sel', 1, '{}')", (k,))
        sql("INSERT INTO t2 VALUES (%s, 'sel', 1)", (k,))
        sql("INSERT INTO pp VALUES (%s, 3), (%s, 13)", (k, k + 1))
        check(wait_caught_up(slot, 30), "%s: the slot confirms the changes" % slot)
        stop(proc, slot)
        copied = set(initial_files(out))
        events = set()
        for path in glob.glob(os.path.join(out, "changes", "*.bson")):
            with open(path, "rb") as f:
                events.update((e["ns"]["db"], e["ns"]["coll"]) for e in bson.decode_file_iter(f))
        err = open(err_path).read()
        check(copied == want[slot] and events == want[slot],
              "%s (%s): the first copy and the stream select and name the same collections: %s"
              % (slot, " ".join(extra), sorted(want[slot])),
              "copied %s, events %s\n%s" % (sorted(copied), sorted(events), err))
        metadata_check(slot, out)
        if slot == "selroot":
            with open(initial_files(out)[("nsdb", "public.pp")], "rb") as f:
                n = sum(1 for _ in bson.decode_file_iter(f))
            check(n == 100, "selroot: both partitions' rows in the root's one file (%d)" % n)
            check('WARNING:  include-tables pattern "public.nope" selects no table' in err,
                  "selroot: the server's warning for a pattern that selects no table is shown", err)
        sql("SELECT pg_drop_replication_slot(%s)", (slot,))
    sql("DELETE FROM t1 WHERE id BETWEEN 500001 AND 500100")
    sql("DELETE FROM t2 WHERE a BETWEEN 500001 AND 500100")
    sql("DROP TABLE pp")


def crash_run():
    out = os.path.join(WORK, "crash")
    rnd = random.Random(7)
    wl = Workload(seed=2)
    wl.start()
    time.sleep(0.3)
    proc = start_client("crash", out, create=True)
    check(wait_initial(out, proc), "crash: the first copy is done and the stream runs")
    kills = 0
    for i in range(6):
        time.sleep(rnd.uniform(0.2, 1.5))
        proc.kill()
        proc.wait()
        kills += 1
        if i == 2:
            restart_server()
            ok("crash: server restarted while the client was down")
        proc = start_client("crash", out)
        time.sleep(rnd.uniform(0.3, 1.0))
    check(kills >= 5, "crash: the client killed with SIGKILL %d times and restarted" % kills)

    # a server restart under a running client, then a cut connection
    time.sleep(1)
    restart_server()
    time.sleep(2.5)
    pid = None
    deadline = time.time() + 20
    while pid is None and time.time() < deadline:
        pid = walsender_pid("crash")
        time.sleep(0.2)
    check(pid is not None, "crash: the client reconnected after the server's restart")
    if pid:
        sql("SELECT pg_terminate_backend(%s)", (pid,))
    time.sleep(2)
    wl.finish()
    check(wait_caught_up("crash", 60), "crash: the slot confirms the whole workload")
    stop(proc, "crash")
    err = open(os.path.join(WORK, "crash.stderr")).read()
    check(err.count("reconnecting in") >= 2 and "reconnected" in err,
          "crash: lost connections said on standard error", err[-2000:])
    compare("crash", out)
    read_back("crash", out)
    sql("SELECT pg_drop_replication_slot('crash')")


def stdout_run():
    sql("SELECT pg_create_logical_replication_slot('pipe', 'bson_out')")
    sql("INSERT INTO t1 VALUES (100000, 'pipe', 1, '{}')")
    path = os.path.join(WORK, "pipe.bson")
    with open(path, "wb") as f:
        proc = subprocess.Popen([BIN, "-d", DB, "--slot", "pipe", "-o", "-", "--status-interval", "0.5",
                                 "--include-tables", "public.t1"], stdout=f, stderr=subprocess.PIPE)
        ok_caught = wait_caught_up("pipe", 20)
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    with open(path, "rb") as f:
        evs = list(bson.decode_file_iter(f))
    check(ok_caught and proc.returncode == 0 and evs and evs[-1]["documentKey"]["_id"] == 100000,
          "-o -: the events on standard output, confirmed, exit 0 on SIGTERM",
          "exit %s, %d events" % (proc.returncode, len(evs)))
    sql("DELETE FROM t1 WHERE id = 100000")
    sql("SELECT pg_drop_replication_slot('pipe')")


def endpos_run():
    """--endpos: every change before it written, the last segment confirmed, exit 0."""
    sql("SELECT pg_create_logical_replication_slot('upto', 'bson_out')")
    start = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    # a transaction each: a segment is closed between transactions only
    conn = connect()
    for g in range(200001, 200101):
        conn.cursor().execute("INSERT INTO t1 VALUES (%s, 'upto', %s, '{}')", (g, g))
    conn.close()
    endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    # a record at endpos itself is still streamed (as by pg_recvlogical):
    # a change of a table not selected takes that place
    sql("INSERT INTO other VALUES (200100)")
    before_after = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    sql("INSERT INTO t1 VALUES (200101, 'after', 1, '{}')")
    out = os.path.join(WORK, "upto")
    # small segments: the closer thread closes most of them
    r = subprocess.run([BIN, "-d", DB, "--slot", "upto", "-o", out, "--endpos", endpos, "-q",
                        "--segment-size", "2kB", "--include-tables", "public.t1"],
                       capture_output=True, text=True, timeout=60)
    ids = []
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        with open(path, "rb") as f:
            ids += [e["documentKey"]["_id"] for e in bson.decode_file_iter(f)]
    confirmed = sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'upto'")[0][0]
    segs = sorted(glob.glob(os.path.join(out, "changes", "*.bson")))
    nseg = len(segs)
    # --segment-size 2kB is 2048 bytes: every segment but the last reached it
    small = [p for p in segs[:-1] if os.path.getsize(p) < 2048]
    check(nseg > 2 and not small, "--segment-size 2kB: %d segments, all but the last of 2048 bytes "
          "or more" % nseg, "%s" % [(os.path.basename(p), os.path.getsize(p)) for p in segs])
    check(r.returncode == 0 and ids == list(range(200001, 200101)) and nseg > 2
          and lsn_value(start) < lsn_value(confirmed) <= lsn_value(before_after) and not temp_files(out),
          "--endpos: the 100 changes before it in %d durable segments, not the one after, "
          "confirmed up to them and no further, exit 0" % nseg,
          "exit %s, ids %s..%s (%d), confirmed %s, start %s, endpos %s, before the next change %s\n%s"
          % (r.returncode, ids[:1], ids[-1:], len(ids), confirmed, start, endpos, before_after, r.stderr))
    # the next run goes on from there: the change after endpos is not lost
    proc = start_client("upto", out)
    deadline = time.time() + 20
    seen = False
    while not seen and time.time() < deadline:
        time.sleep(0.3)
        for path in glob.glob(os.path.join(out, "changes", "*.bson")):
            with open(path, "rb") as f:
                seen = seen or any(e["documentKey"]["_id"] == 200101 for e in bson.decode_file_iter(f))
    stop(proc, "--endpos, then a run without it")
    check(seen, "--endpos: the next run streams the change after endpos")
    sql("DELETE FROM t1 WHERE id > 200000")
    sql("DELETE FROM other WHERE id = 200100")
    sql("SELECT pg_drop_replication_slot('upto')")


def run_on_tty(extra, rows):
    """The client's standard error on a pseudo-terminal while rows are inserted."""
    import pty
    master, slave = pty.openpty()
    proc = subprocess.Popen([BIN, "-d", DB, "--slot", "tty", "-o", os.path.join(WORK, "tty"),
                             "--segment-time", "0.2"] + extra, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    for i in range(rows):
        sql("INSERT INTO t1 VALUES (%s, 'tty', 1, '{}') ON CONFLICT DO NOTHING", (300000 + i,))
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    proc.wait(20)
    text = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    os.close(master)
    return text.decode(errors="replace")


def progress_line():
    sql("SELECT pg_create_logical_replication_slot('tty', 'bson_out')")
    text = run_on_tty([], 20)
    check(re.search(r"\r\d+ events \(\d+/s\), .*, \d+ segments, server [0-9A-F]+/[0-9A-F]+, "
                    r"lag \d+ bytes, [0-9.]+ s", text) and "20 events" in text,
          "progress: events/s, bytes, segments, the server's position and the lag on a terminal",
          repr(text[-600:]))
    text = run_on_tty(["--quiet"], 5)
    check(text == "", "--quiet: nothing on the terminal", repr(text[-600:]))
    sql("DELETE FROM t1 WHERE id >= 300000")
    sql("SELECT pg_drop_replication_slot('tty')")


def run_error(name, args, pattern, status=1, env=None):
    r = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=60, env=env)
    check(r.returncode == status and re.search(pattern, r.stderr, re.S),
          "error: %s" % name, "exit %s\n%s" % (r.returncode, r.stderr))
    return r


def errors():
    out = os.path.join(WORK, "errors")
    base = ["-d", DB, "-o", out]
    run_error("slot does not exist", base + ["--slot", "nosuch"],
              r'replication slot "nosuch" does not exist.*hint: Create it with --create-slot\.')
    sql("SELECT pg_create_logical_replication_slot('taken', 'bson_out')")
    run_error("slot exists", base + ["--slot", "taken", "--create-slot"],
              r'could not create replication slot "taken":.*already exists.*'
              r"hint: Resume it by leaving out --create-slot, or drop it with "
              r"SELECT pg_drop_replication_slot\('taken'\)\.")
    holder = start_client("taken", os.path.join(WORK, "taken"))
    deadline = time.time() + 10
    while walsender_pid("taken") is None and time.time() < deadline:
        time.sleep(0.1)
    run_error("slot in use", base + ["--slot", "taken"],
              r'replication slot "taken" is active for PID \d+.*hint: Another client is streaming from this slot')
    stop(holder, "slot holder", signal.SIGTERM)
    sql("SELECT pg_drop_replication_slot('taken')")

    sql("DROP ROLE IF EXISTS norepl")
    sql("CREATE ROLE norepl LOGIN")
    run_error("no replication permission", base + ["--slot", "x", "-U", "norepl"],
              r"could not connect to the database: .*(replication|WAL sender).*"
              r"hint: Connect as a role with the REPLICATION attribute")
    run_error("--initial-copy without --create-slot", base + ["--slot", "x", "--initial-copy"],
              r"--initial-copy needs --create-slot", status=2)
    run_error("an invalid --segment-size", base + ["--slot", "x", "--segment-size", "12Q"],
              r'invalid --segment-size "12Q": give bytes, or a number with a unit kB, MB, GB or TB',
              status=2)
    r = subprocess.run([BIN, "--version"], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout == "pg_bsonstream 1.3.0\n", "--version: pg_bsonstream 1.3.0",
          r.stdout + r.stderr)
    usage_errors(base)
    no_dirs_left()

    has_setting = True
    try:
        sql("SHOW output_plugin_libraries")
    except psycopg2.Error:
        has_setting = False
    if has_setting:
        sql("ALTER SYSTEM SET output_plugin_libraries = pgoutput, test_decoding")
        sql("SELECT pg_reload_conf()")
        time.sleep(0.3)
        run_error("plugin not allowed", base + ["--slot", "np", "--create-slot"],
                  r'library "bson_out" may not be used as an output plugin.*hint:.*output_plugin_libraries')
        sql("ALTER SYSTEM SET output_plugin_libraries = pgoutput, test_decoding, bson_out")
        sql("SELECT pg_reload_conf()")
        time.sleep(0.3)
    else:
        print("skip plugin not allowed (no output_plugin_libraries setting)")

    # the server looks the plugin up by name in dynamic_library_path: an empty
    # directory there is a server without the extension installed
    empty = os.path.join(WORK, "nolib")
    os.makedirs(empty, exist_ok=True)
    sql("ALTER SYSTEM SET dynamic_library_path = %s", (empty,))
    sql("SELECT pg_reload_conf()")
    time.sleep(0.3)
    run_error("plugin not installed", base + ["--slot", "nolib", "--create-slot"],
              r'could not access file "bson_out".*hint: Install the bson_out extension on the server')
    sql("ALTER SYSTEM RESET dynamic_library_path")
    sql("SELECT pg_reload_conf()")
    time.sleep(0.3)

    full_disk()
    closer_fails()
    check(not temp_files(out), "errors: no temporary file left")


# what each number, size and duration option says it takes, after 'give '
USAGE_TAKES = {
    "--jobs": "a whole number from 1 to 64",
    "--batch-size": "a whole number from 1 to 100000",
    "--segment-size": "bytes, or a number with a unit kB, MB, GB or TB (1024-based), at least 1 byte",
    "--max-buffer": "bytes, or a number with a unit kB, MB, GB or TB (1024-based), at least 1 byte",
    "--segment-time": "a number of seconds greater than 0 and at most 2147483647, such as 10, 0.5 or 10s",
    "--status-interval": "a number of seconds greater than 0 and at most 2147483647, such as 10, 0.5 or 10s",
    "--lock-wait-timeout": "a duration in ms, s, min, h or d (a bare number is in milliseconds, as "
                           "PostgreSQL's lock_timeout), e.g. 30s, at most 2147483647ms; 0 waits as long as it takes",
}
# refused by every one of them
USAGE_JUNK = ("", "nan", "inf", "-inf", "-1", "+5", " 5", "5 ", "0x10", "12abc", "99999999999999999999")
# and by some: the range, a fraction or an exponent where none is taken, a unit where none is
USAGE_MORE = {
    "--jobs": ("0", "65", "1.5", "1e3", "4294967297"),
    "--batch-size": ("0", "100001", "1.5", "1e3", "4294967297"),
    "--segment-size": ("0", "0kB", "12Q", "1e3", "5 MB", "18446744073709551616", "16777216TB"),
    "--max-buffer": ("0", "0kB", "12Q", "1e3", "5 MB", "18446744073709551616", "16777216TB"),
    "--segment-time": ("1e300", "0", "1e-400", "10x", "2147483648"),
    "--status-interval": ("1e300", "0", "1e-400", "10x", "2147483648"),
    "--lock-wait-timeout": ("1e3", "0.0001", "25d", "2147483648", "5sec"),
}


def usage_errors(base):
    """Numbers, sizes, durations, the slot's name and LSNs: anything but a
    valid value is a usage error, exit 2, that names the option and the value."""
    for opt, takes in USAGE_TAKES.items():
        for value in USAGE_JUNK + USAGE_MORE[opt]:
            r = subprocess.run([BIN] + base + ["--slot", "x", opt, value], capture_output=True, text=True,
                               timeout=60)
            want = ('pg_bsonstream: error: invalid %s "%s": give %s\n'
                    'Try "pg_bsonstream --help" for more information.\n' % (opt, value, takes))
            check(r.returncode == 2 and r.stderr == want, "error: %s %r: exit 2, said" % (opt, value),
                  "exit %s, expected 2 and:\n%s\ngot:\n%s" % (r.returncode, want, r.stderr))
    # a valid value of each is taken, and the run goes on to its next check
    for opt, value, status, pattern in (
            ("--jobs", "64", 1, r'replication slot "x" does not exist'),
            ("--segment-size", "2kB", 1, r'replication slot "x" does not exist'),
            ("--segment-time", "0.5s", 1, r'replication slot "x" does not exist'),
            ("--status-interval", "1e1", 1, r'replication slot "x" does not exist'),
            ("--batch-size", "100000", 2, r"error: --batch-size is for --to \(as are --to-password-file, --progress-collection, .*\)\n"),
            ("--max-buffer", "1MB", 2, r"error: --max-buffer is for --to \(as are --to-password-file, --progress-collection, .*\)\n"),
            ("--max-buffer", "16GB", 2, r"error: --max-buffer is for --to \(as are --to-password-file, --progress-collection, .*\)\n"),
            ("--lock-wait-timeout", "1.5s", 2, r"error: --lock-wait-timeout is for --initial-copy")):
        run_error("%s %s is taken" % (opt, value), base + ["--slot", "x", opt, value], pattern, status=status)
    run_error("--slot= (empty)", base + ["--slot="],
              r"error: give the replication slot with --slot NAME\nTry", status=2)
    for value in ("0/1x", "1/2/3", "-1/0", "0/", "123456789/0"):
        run_error("--endpos %r" % value, base + ["--slot", "x", "--endpos", value],
                  r'error: invalid --endpos "%s" \(an LSN such as 0/16B3748\)' % re.escape(value), status=2)


def no_dirs_left():
    """A run that fails before its stream starts (no such database, no such
    slot, a failing --create-slot) leaves no directory it made."""
    fresh = os.path.join(WORK, "never")
    existing = os.path.join(WORK, "existing")
    os.makedirs(existing, exist_ok=True)
    tries = [
        ("no such database", ["-d", "nosuchdb", "--slot", "x", "-o", fresh],
         r'database "nosuchdb" does not exist'),
        ("no such slot", ["-d", DB, "--slot", "nosuch", "-o", fresh], r'replication slot "nosuch" does not exist'),
        ("no such slot, an existing DIR", ["-d", DB, "--slot", "nosuch", "-o", existing],
         r'replication slot "nosuch" does not exist'),
        ("--create-slot --initial-copy, wal_level or name refused", ["-d", DB, "--slot", "bad name!",
                                                                     "--create-slot", "--initial-copy", "-o", fresh],
         r'could not create replication slot "bad name!"'),
    ]
    for name, args, pattern in tries:
        r = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=60)
        left = sorted(os.listdir(existing)) if os.path.exists(existing) else None
        check(r.returncode == 1 and re.search(pattern, r.stderr) and not os.path.exists(fresh) and left == [],
              "a failed start (%s): exit 1, no directory left behind" % name,
              "exit %s, %s exists %s, left in %s: %s\n%s" % (r.returncode, fresh, os.path.exists(fresh),
                                                         existing, left, r.stderr))


def endpos_zero():
    """--endpos 0/0 is no end, as pg_recvlogical reads it: the run streams until stopped."""
    sql("SELECT pg_create_logical_replication_slot('zero', 'bson_out')")
    out = os.path.join(WORK, "zero")
    proc = start_client("zero", out, "--endpos", "0/0")
    sql("INSERT INTO t1 VALUES (700501, 'zero', 1, '{}')")
    caught = wait_caught_up("zero", 20)
    alive = proc.poll() is None
    stop(proc, "--endpos 0/0")
    ids = []
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        with open(path, "rb") as f:
            ids += [e["documentKey"]["_id"] for e in bson.decode_file_iter(f)]
    check(caught and alive and ids == [700501], "--endpos 0/0: no end, the stream runs until stopped",
          "caught up %s, running %s, ids %s\n%s" % (caught, alive, ids,
                                                   open(os.path.join(WORK, "zero.stderr")).read()[-1500:]))
    sql("SELECT pg_drop_replication_slot('zero')")
    sql("DELETE FROM t1 WHERE id = 700501")


def closer_fails():
    """A full segment the background closer cannot rename: nothing confirmed."""
    sql("SELECT pg_create_logical_replication_slot('norename', 'bson_out')")
    before = sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'norename'")[0][0]
    sql("INSERT INTO t1 SELECT g, 'closer', g, '{}' FROM generate_series(300001, 300200) g")
    out = os.path.join(WORK, "norename")
    env = dict(os.environ, LD_PRELOAD=os.path.join(WORK, "fail_rename.so"), FAIL_RENAME_SUFFIX=".bson")
    r = run_error("a segment's rename fails in the closer thread",
                  ["-d", DB, "--slot", "norename", "-o", out, "--segment-size", "1kB",
                   "--status-interval", "0.2", "--include-tables", "public.t1", "--no-reconnect"],
                  r'could not rename ".*": Input/output error.*nothing of the unfinished segment was confirmed',
                  env=env)
    conf = sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'norename'")[0][0]
    left = glob.glob(os.path.join(out, "changes", "*")) + temp_files(out)
    check(conf == before and not left,
          "a segment's rename fails: nothing confirmed, no file left",
          "confirmed %s (before %s), left %s\n%s" % (conf, before, left, r.stderr))
    sql("DELETE FROM t1 WHERE id > 300000")
    sql("SELECT pg_drop_replication_slot('norename')")


def full_disk():
    full = os.path.join(WORK, "full")
    if not os.path.isdir(full):
        print("skip full disk (cannot mount a tmpfs here)")
        return
    os.chmod(full, 0o777)
    sql("SELECT pg_create_logical_replication_slot('full', 'bson_out')")
    before = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    sql("INSERT INTO t1 SELECT g, repeat('x', 2000), g, '{}' FROM generate_series(200000, 201000) g")
    run_error("full disk", ["-d", DB, "--slot", "full", "-o", full, "--segment-size", "64MB",
                            "--include-tables", "public.t1"],
              r"No space left on device.*nothing of the unfinished segment was confirmed")
    left = [p for p in glob.glob(os.path.join(full, "*", "*")) + glob.glob(os.path.join(full, "*", ".*"))]
    check(not left, "full disk: the partial segment removed", "\n".join(left))
    conf = sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'full'")[0][0]
    check(lsn_value(conf) <= lsn_value(before), "full disk: nothing confirmed",
          "confirmed %s, changes from %s" % (conf, before))
    sql("SELECT pg_drop_replication_slot('full')")
    sql("DELETE FROM t1 WHERE id >= 200000")


def interrupted_copy():
    """SIGINT during the first copy: the slot dropped again, no temporary file."""
    sql("CREATE TABLE big (id int PRIMARY KEY, v text)")
    sql("INSERT INTO big SELECT g, repeat('v', 40) FROM generate_series(1, 600000) g")
    out = os.path.join(WORK, "interrupted")
    proc = subprocess.Popen([BIN, "-d", DB, "--slot", "intr", "--create-slot", "--initial-copy",
                             "--include-tables", "public.big", "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline and not temp_files(out) and proc.poll() is None:
        time.sleep(0.005)
    caught = bool(temp_files(out))
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    slot = sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'intr'")
    left = [p for p in glob.glob(os.path.join(out, "initial", "**"), recursive=True) if os.path.isfile(p)]
    check(caught and proc.returncode == 1 and 'slot "intr" has been dropped again' in err and not slot
          and not temp_files(out) and not left,
          "SIGINT during the first copy: exit 1, the slot dropped again, no file left",
          "caught %s, exit %s, slot %s, files %s\n%s" % (caught, proc.returncode, slot, left, err))
    sql("DROP TABLE big")


# ------------------------------------------------------------------ errors and stops (issue 21)

def poison_run():
    """A server ERROR in the stream is fatal: exit 1 once, the server's
    message with its CONTEXT, no reconnection, the events before it written.
    The error is a value whose type's output function always fails (a type
    whose output is fdw_handler_out, a pseudo-type's 'cannot display'): the
    plugin writes a type it does not know by its output function, so this
    stays an error whatever the plugin's policy for values without a BSON
    mapping (infinity, wide numerics) is."""
    sql("CREATE TYPE boom")
    sql("CREATE FUNCTION boom_in(cstring) RETURNS boom LANGUAGE internal IMMUTABLE STRICT AS 'int4in'")
    sql("CREATE FUNCTION boom_out(boom) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'fdw_handler_out'")
    sql("CREATE TYPE boom (INPUT = boom_in, OUTPUT = boom_out, LIKE = int4)")
    sql("CREATE TABLE poison (id int PRIMARY KEY, b boom)")
    sql("SELECT pg_create_logical_replication_slot('poison', 'bson_out')")
    sql("INSERT INTO t1 VALUES (700001, 'before the poison', 1, '{}')")
    # the poison transaction's first 2,000 changes are fine, over 20kB: none
    # may be written without the rest of its transaction
    sql("BEGIN; INSERT INTO t1 SELECT g, 'with the poison', 1, '{}' FROM generate_series(700002, 702001) g; "
        "INSERT INTO poison VALUES (1, '7'); COMMIT")
    out = os.path.join(WORK, "poison")
    args = [BIN, "-d", DB, "--slot", "poison", "-o", out, "--segment-time", "60", "--segment-size", "20kB",
            "--status-interval", "1", "--include-tables", "public.t1, public.poison"]
    t0 = time.time()
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=30)
        rc, err = r.returncode, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, err = "hung (still reconnecting after 30 s)", (e.stderr or b"").decode(errors="replace")
    took = time.time() - t0
    ids = []
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        with open(path, "rb") as f:
            ids += [e["documentKey"]["_id"] for e in bson.decode_file_iter(f)]
    check(rc == 1 and err.count("pg_bsonstream: error:") == 1 and "reconnecting" not in err
          and re.search(r"error: the server ended the stream with an error: cannot display a value of type "
                        r"fdw_handler\n.*context: .*slot \"poison\", output plugin \"bson_out\", in the change "
                        r"callback, associated LSN [0-9A-F]+/[0-9A-F]+", err, re.S),
          "server ERROR in the stream: exit 1 once after %.1f s, the message and its context, "
          "no reconnection" % took, "exit %s\n%s" % (rc, err[-3000:]))
    check(ids == [700001] and re.search(r": 1 events, .*, 0 reconnections", err) and not temp_files(out),
          "server ERROR in the stream: the transaction before it written, durable, counted once; "
          "nothing of the transaction it cut short (2,000 changes, over --segment-size)",
          "ids %s..%s (%d)\n%s" % (ids[:3], ids[-1:], len(ids), err[-1500:]))

    # the skip the error's hint gives, as a user follows it: the next run
    # goes on with the next transaction, and no segment holds any of the skipped one
    advance = re.search(r"pg_replication_slot_advance\('poison', '([0-9A-F]+/[0-9A-F]+)'\)", err)
    if advance:
        sql("SELECT pg_replication_slot_advance('poison', %s)", (advance.group(1),))
    sql("INSERT INTO t1 VALUES (702002, 'after the skip', 1, '{}')")
    endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    r = subprocess.run(args + ["--endpos", endpos], capture_output=True, text=True, timeout=30)
    ids = []
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        with open(path, "rb") as f:
            ids += [e["documentKey"]["_id"] for e in bson.decode_file_iter(f)]
    check(advance and r.returncode == 0 and ids == [700001, 702002],
          "server ERROR, then the hint's pg_replication_slot_advance: the next run streams the next "
          "transaction, and no segment holds an event of the skipped one",
          "advance %s, exit %s, ids %s..%s (%d)\n%s" % (advance and advance.group(1), r.returncode, ids[:3],
                                                       ids[-1:], len(ids), r.stderr[-1500:]))
    sql("SELECT pg_drop_replication_slot('poison')")
    sql("DROP TABLE poison")
    sql("DROP TYPE boom CASCADE")
    sql("DELETE FROM t1 WHERE id BETWEEN 700001 AND 702002")


def reconnect_delays(text):
    return [float(x) for x in re.findall(r"reconnecting in ([0-9.]+) s", text)]


def wait_new_walsender(slot, old, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        pid = walsender_pid(slot)
        if pid is not None and pid != old:
            return pid
        time.sleep(0.05)
    return None


def backoff_count_run():
    """Terminated walsenders: the backoff grows while the stream makes no
    progress (the same event sent again is none) and starts again after an
    event not seen before; the summary counts each written event once."""
    # no WAL of autovacuum's meanwhile: it would be progress (below)
    sql("ALTER SYSTEM SET autovacuum = off")
    sql("SELECT pg_reload_conf()")
    sql("SELECT pg_create_logical_replication_slot('count', 'bson_out')")
    sql("INSERT INTO t1 VALUES (700101, 'count', 1, '{}')")
    out = os.path.join(WORK, "count")
    err_path = os.path.join(WORK, "count.stderr")
    # a segment open for the whole run: each lost connection removes it, unconfirmed
    proc = subprocess.Popen([BIN, "-d", DB, "--slot", "count", "-o", out, "--segment-time", "100",
                             "--status-interval", "100", "--include-tables", "public.t1"],
                            stdout=subprocess.DEVNULL, stderr=open(err_path, "wb"))
    pid = wait_new_walsender("count", None)
    for i in range(4):
        if pid is None:
            break
        time.sleep(0.4)
        if i == 3:
            sql("INSERT INTO t1 VALUES (700102, 'count', 1, '{}')")
            time.sleep(0.4)
        sql("SELECT pg_terminate_backend(%s)", (pid,))
        pid = wait_new_walsender("count", pid)
    time.sleep(0.4)
    stop(proc, "counting", signal.SIGTERM)
    err = open(err_path).read()
    delays = reconnect_delays(err)
    # 0.5, 1, 2, then 0.5 after the new event; WAL written meanwhile (the
    # bgwriter's running_xacts record) is progress too, read by the next
    # connection, and may start the backoff again once before the new event
    check(pid is not None and len(delays) == 4 and delays[0] == 0.5 and delays[3] == 0.5
          and max(delays[1:3]) >= 1.0,
          "terminated walsender: reconnections after 0.5 s, then longer while the same event comes "
          "again, 0.5 s after a new one (%s)" % delays, err[-2000:])
    ids = []
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        with open(path, "rb") as f:
            ids += [e["documentKey"]["_id"] for e in bson.decode_file_iter(f)]
    check(re.search(r": 2 events, .*, 1 segments, .*, 4 reconnections", err) and ids == [700101, 700102],
          "summary: 2 events written, each counted once through 4 reconnections",
          "events in segments %s\n%s" % (ids, err[-1500:]))
    sql("ALTER SYSTEM RESET autovacuum")
    sql("SELECT pg_reload_conf()")
    sql("SELECT pg_drop_replication_slot('count')")
    sql("DELETE FROM t1 WHERE id > 700100 AND id < 700200")


def backoff_stop_run():
    """SIGTERM during the reconnection backoff, with a segment made durable
    just as the connection was lost (its rename held at a gate until the
    walsender is gone, so that its end is not confirmed on that connection):
    exit 0 with that segment confirmed, and the next run sends none of its
    events again."""
    sql("SELECT pg_create_logical_replication_slot('bstop', 'bson_out')")
    out = os.path.join(WORK, "bstop")
    gate = os.path.join(WORK, "bstop.gate")
    os.makedirs(gate, exist_ok=True)
    err_path = os.path.join(WORK, "bstop.stderr")
    env = dict(os.environ, LD_PRELOAD=os.path.join(WORK, "gate_rename.so"), GATE_DIR=gate)
    args = [BIN, "-d", DB, "--slot", "bstop", "-o", out, "--segment-size", "1kB", "--segment-time", "100",
            "--status-interval", "100", "--include-tables", "public.t1"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(err_path, "wb"), env=env)
    pid = wait_new_walsender("bstop", None)
    sql("INSERT INTO t1 SELECT g, 'bstop', g, '{}' FROM generate_series(700301, 700350) g")
    deadline = time.time() + 20
    while time.time() < deadline and not os.path.exists(os.path.join(gate, "waiting")):
        time.sleep(0.02)
    at_gate = os.path.exists(os.path.join(gate, "waiting"))
    # the connection lost while the segment is closing, and no new one for now
    sql("ALTER DATABASE %s ALLOW_CONNECTIONS false" % DB, db="postgres")
    if pid:
        sql("SELECT pg_terminate_backend(%s)", (pid,), db="postgres")
    open(os.path.join(gate, "go"), "w").close()
    # a failed attempt, then the 1 s wait before the next: the signal comes in it
    deadline = time.time() + 20
    while time.time() < deadline and len(reconnect_delays(open(err_path).read())) < 2:
        time.sleep(0.02)
    sql("ALTER DATABASE %s ALLOW_CONNECTIONS true" % DB, db="postgres")
    stop(proc, "SIGTERM during the reconnection backoff", signal.SIGTERM)
    err = open(err_path).read()
    segs = sorted(glob.glob(os.path.join(out, "changes", "*.bson")))
    mtimes = [os.stat(p).st_mtime_ns for p in segs]
    endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    r = subprocess.run(args + ["--endpos", endpos], capture_output=True, text=True, timeout=30)
    again = [os.stat(p).st_mtime_ns for p in segs if os.path.exists(p)] != mtimes or \
        sorted(glob.glob(os.path.join(out, "changes", "*.bson"))) != segs
    check(at_gate and pid and len(segs) == 1 and len(reconnect_delays(err)) >= 2 and r.returncode == 0
          and re.search(r": 0 events, ", r.stderr) and not again,
          "SIGTERM during the reconnection backoff: the segment made durable as the connection was lost "
          "is confirmed, the next run sends none of its events again",
          "at the gate %s, walsender %s, segments %s, rewritten %s, exit %s\n%s\n%s"
          % (at_gate, pid, [os.path.basename(p) for p in segs], again, r.returncode, err[-1500:], r.stderr[-1000:]))
    sql("SELECT pg_drop_replication_slot('bstop')")
    sql("DELETE FROM t1 WHERE id BETWEEN 700301 AND 700350")


def create_slot_waits():
    """--create-slot while a prepared transaction is pending: PostgreSQL's
    slot waits for it; after a few seconds the program says so, naming it;
    SIGINT cancels the wait, and a run goes on once the transaction is
    rolled back."""
    sql("BEGIN; INSERT INTO t1 VALUES (700401, 'prepared', 1, '{}'); PREPARE TRANSACTION 'bson_out_waits'")
    out = os.path.join(WORK, "waits")
    err_path = os.path.join(WORK, "waits.stderr")
    endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]

    def start():
        open(err_path, "wb").close()
        proc = subprocess.Popen([BIN, "-d", DB, "--slot", "waits", "--create-slot", "-o", out, "--endpos",
                                 endpos, "--include-tables", "public.t1"],
                                stdout=subprocess.DEVNULL, stderr=open(err_path, "wb"))
        deadline = time.time() + 30
        while time.time() < deadline and "hint: End them" not in open(err_path).read() and proc.poll() is None:
            time.sleep(0.1)
        return proc

    proc = start()
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "still waiting"
    err = open(err_path).read()
    slot = sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'waits'")
    check(rc == 1 and "canceling statement due to user request" in err and not slot and not os.path.exists(out),
          "--create-slot behind a prepared transaction: SIGINT cancels the wait, exit 1, no slot, no directory",
          "exit %s, slot %s\n%s" % (rc, slot, err[-2000:]))
    proc = start()
    err = open(err_path).read()
    sql("ROLLBACK PREPARED 'bson_out_waits'")
    try:
        rc = proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "still waiting"
    check(re.search(r'creating the replication slot "waits" waits for the transactions in progress to end, '
                    r"prepared ones too.*\n.*prepared transaction 'bson_out_waits' \(database %s, owner .*\)\n"
                    r"hint: End them \(COMMIT or ROLLBACK; COMMIT PREPARED or ROLLBACK PREPARED" % DB, err)
          and rc == 0,
          "--create-slot behind a prepared transaction: says what it waits for, naming it; goes on "
          "once it ends", "exit %s\n%s" % (rc, open(err_path).read()[-2000:]))
    sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'waits'")


def invalidated_run():
    """A slot invalidated (max_slot_wal_keep_size) while the client cannot
    connect: the next connection's error ends the run, exit 1."""
    sql("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'", db="postgres")
    sql("SELECT pg_reload_conf()", db="postgres")
    sql("CREATE TABLE IF NOT EXISTS filler (v text)", db="postgres")
    sql("SELECT pg_create_logical_replication_slot('inval', 'bson_out')")
    out = os.path.join(WORK, "inval")
    err_path = os.path.join(WORK, "inval.stderr")
    proc = subprocess.Popen([BIN, "-d", DB, "--slot", "inval", "-o", out, "--status-interval", "0.5",
                             "--include-tables", "public.t1"],
                            stdout=subprocess.DEVNULL, stderr=open(err_path, "wb"))
    pid = wait_new_walsender("inval", None)
    # no connection to the database: the client keeps trying
    sql("ALTER DATABASE %s ALLOW_CONNECTIONS false" % DB, db="postgres")
    if pid:
        sql("SELECT pg_terminate_backend(%s)", (pid,), db="postgres")
    status = None
    for _ in range(8):
        for _ in range(3):
            sql("INSERT INTO filler SELECT repeat('x', 100) FROM generate_series(1, 1000)", db="postgres")
            sql("SELECT pg_switch_wal()", db="postgres")
        sql("CHECKPOINT", db="postgres")
        status = sql("SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'inval'", db="postgres")[0][0]
        if status == "lost":
            break
    # a failed attempt first (a connection refused is retried), then the slot's error
    deadline = time.time() + 10
    while time.time() < deadline and len(reconnect_delays(open(err_path).read())) < 2:
        time.sleep(0.05)
    sql("ALTER DATABASE %s ALLOW_CONNECTIONS true" % DB, db="postgres")
    try:
        rc = proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = "still reconnecting after 20 s"
    err = open(err_path).read()
    after = err.split("has been invalidated", 1)[1] if "has been invalidated" in err else ""
    check(status == "lost" and rc == 1
          # 13-17 say "cannot read from logical", 18 "can no longer access" (and the
          # SQL functions "can no longer get changes from"): SQLSTATE 55000 alike
          and re.search(r'error: could not start streaming from slot "inval": (cannot read from logical|'
                        r'can no longer get changes from|can no longer access) replication slot "inval"\n'
                        r'detail: This (replication )?slot has been invalidated.*'
                        r'hint: The slot has been invalidated', err, re.S)
          and "reconnecting in" not in after and len(reconnect_delays(err)) >= 2
          and 'database "%s" is not currently accepting connections' % DB in err,
          "slot invalidated while reconnecting (wal_status %s): refused connections retried, then "
          "exit 1 at the first connection, no more attempts" % status, "exit %s\n%s" % (rc, err[-2500:]))
    sql("ALTER SYSTEM RESET max_slot_wal_keep_size", db="postgres")
    sql("SELECT pg_reload_conf()", db="postgres")
    sql("DROP TABLE filler", db="postgres")
    sql("SELECT pg_drop_replication_slot('inval')")


def tree(path):
    """Every file under path with its size and modification time."""
    found = {}
    for root, _, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            st = os.stat(p)
            found[os.path.relpath(p, path)] = (st.st_size, st.st_mtime_ns)
    return found


def kill_during_copy():
    """kill -9 at several moments of the first copy: a run after it never
    streams without the whole copy; it refuses, saying what to do."""
    sql("CREATE TABLE kbig (id int PRIMARY KEY, v text)")
    sql("INSERT INTO kbig SELECT g, repeat('k', 40) FROM generate_series(1, 300000) g")
    moments = {
        # the marker is made before the slot
        "as the copy is marked": lambda out: os.path.exists(os.path.join(out, "initial", ".incomplete")),
        "while the copy's files are written": lambda out: bool(temp_files(out)),
        "once the copy's file is in place": lambda out: os.path.exists(os.path.join(out, "initial", DB, "kbig.bson")),
    }
    seen = []
    for i, (moment, cond) in enumerate(moments.items()):
        slot = "kill%d" % i
        out = os.path.join(WORK, slot)
        proc = subprocess.Popen([BIN, "-d", DB, "--slot", slot, "--create-slot", "--initial-copy",
                                 "--include-tables", "public.kbig", "-o", out, "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline and not cond(out) and proc.poll() is None:
            time.sleep(0.0005)
        caught = proc.poll() is None
        proc.kill()
        proc.wait()
        marked = os.path.exists(os.path.join(out, "initial", ".incomplete"))
        has_slot = bool(sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)))
        endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
        sql("INSERT INTO kbig VALUES (%s, 'after')", (1000000 + i,))
        r = subprocess.run([BIN, "-d", DB, "--slot", slot, "-o", out, "--endpos", endpos,
                            "--include-tables", "public.kbig"], capture_output=True, text=True, timeout=60)
        streamed = bool(glob.glob(os.path.join(out, "changes", "*.bson"))) or r.returncode == 0
        copied = 0
        path = os.path.join(out, "initial", DB, "kbig.bson")
        if os.path.exists(path):
            with open(path, "rb") as f:
                copied = sum(1 for _ in bson.decode_file_iter(f))
        if marked:
            with open(os.path.join(out, "initial", ".incomplete")) as f:
                named = f.read().strip() == slot
            # killed before it wrote its slot's name into the marker: before the slot
            message = (r'the first copy in ".*/initial" is unfinished: the run that made it with '
                       r'--create-slot --initial-copy --slot "%s" was stopped.*'
                       r"hint: Drop the slot \(SELECT pg_drop_replication_slot\('%s'\).*remove the "
                       r'directory ".*/initial", and start again with --create-slot --initial-copy'
                       % (slot, slot)) if named else \
                (r'the first copy in ".*/initial" is unfinished: the run that made it with '
                 r'--create-slot --initial-copy was stopped before it created its slot.*'
                 r'hint: Remove the directory ".*/initial" and start again with --create-slot --initial-copy')
            good = r.returncode == 1 and not streamed and re.search(message, r.stderr, re.S) and \
                (named or not has_slot)
            before = tree(out)
            r2 = subprocess.run([BIN, "-d", DB, "--slot", slot, "-o", out, "--create-slot", "--initial-copy",
                                 "--include-tables", "public.kbig"], capture_output=True, text=True, timeout=60)
            good = good and r2.returncode == 1 and "is unfinished" in r2.stderr and tree(out) == before and \
                has_slot == bool(sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)))
            what = "the resumed run and a new --create-slot run refuse (exit 1), saying what to do"
        elif has_slot:
            # the rows inserted after each earlier kill are in the table too
            good = r.returncode == 0 and copied == 300000 + i
            what = "the copy was complete (%d rows): the stream resumed" % copied
        else:
            good = r.returncode == 1 and not streamed
            what = "no slot: nothing streamed"
        seen.append((moment, caught, marked, has_slot))
        check(good, "kill -9 %s (marker %s, slot %s): %s" % (moment, marked, has_slot, what),
              "caught %s, exit %s, %d rows copied, streamed %s\n%s" % (caught, r.returncode, copied, streamed,
                                                                      r.stderr[-2000:]))
        sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (slot,))
    check(sum(1 for m in seen if m[1] and m[2]) >= 2,
          "kill -9 during the first copy: at least two kills left an unfinished copy", "%s" % seen)
    sql("DROP TABLE kbig")


def create_slot_fails():
    """A --create-slot run that fails deletes nothing of another run's."""
    out = os.path.join(WORK, "owner")
    endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    r = subprocess.run([BIN, "-d", DB, "--slot", "owner", "--create-slot", "--initial-copy", "-o", out,
                        "--endpos", endpos, "--include-tables", "public.t1"],
                       capture_output=True, text=True, timeout=60)
    sql("INSERT INTO t1 VALUES (700201, 'owner', 1, '{}')")
    endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    r1 = subprocess.run([BIN, "-d", DB, "--slot", "owner", "-o", out, "--endpos", endpos, "-q",
                         "--include-tables", "public.t1"], capture_output=True, text=True, timeout=60)
    before = tree(out)
    check(r.returncode == 0 and r1.returncode == 0 and len(before) >= 3,
          "owner: a first copy and a segment", r.stderr + r1.stderr)
    # the same slot, the same directory; another slot, the same directory; the same slot elsewhere
    other = os.path.join(WORK, "owner2")
    tries = [
        ("the slot exists, its directory", ["--slot", "owner", "-o", out],
         r'"%s/initial" is not empty.*never over another copy' % re.escape(out)),
        ("another slot, the same directory", ["--slot", "owner2", "-o", out],
         r'"%s/initial" is not empty' % re.escape(out)),
        ("the slot exists, another directory", ["--slot", "owner", "-o", other],
         r'could not create replication slot "owner":.*already exists'),
    ]
    for name, args, pattern in tries:
        r = subprocess.run([BIN, "-d", DB, "--create-slot", "--initial-copy", "--include-tables", "public.t1"]
                           + args, capture_output=True, text=True, timeout=60)
        slots = sorted(s for (s,) in sql("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'owner%%'"))
        check(r.returncode == 1 and re.search(pattern, r.stderr, re.S) and tree(out) == before
              and not tree(other) and slots == ["owner"],
              "failing --create-slot (%s): exit 1, the other run's files and slot untouched, nothing left"
              % name, "exit %s, slots %s, left %s\n%s" % (r.returncode, slots, tree(other), r.stderr))
    sql("SELECT pg_drop_replication_slot('owner')")
    sql("DELETE FROM t1 WHERE id = 700201")


def wal_level_replica():
    # last: no logical slot may remain for the server to start with wal_level = replica
    for (slot,) in sql("SELECT slot_name FROM pg_replication_slots"):
        sql("SELECT pg_drop_replication_slot(%s)", (slot,))
    restart_server("replica")
    run_error("wal_level not logical", ["-d", DB, "-o", os.path.join(WORK, "errors"), "--slot", "w",
                                        "--create-slot"],
              r'wal_level.*hint: Set wal_level = logical in postgresql.conf and restart the server\.')
    restart_server()


def unmappable_run():
    """Values without a BSON mapping: the first copy writes them as the stream
    does (the plugin's default, fallback), the same documents; with
    --unmappable-values error the copy stops, naming the column."""
    sql("CREATE TABLE poisoned (id int PRIMARY KEY, valid_to timestamptz DEFAULT 'infinity', n numeric)")
    sql("INSERT INTO poisoned VALUES (1, DEFAULT, 1234567890123456789012345678901234567.5), (2, '-infinity', 1)")
    endpos = None
    out = os.path.join(WORK, "poisoned")
    r = subprocess.run([BIN, "-d", DB, "--slot", "poisoned", "--create-slot", "--initial-copy", "-o", out,
                        "--include-tables", "public.poisoned", "--endpos", "0/1", "-q"],
                       capture_output=True, text=True, timeout=60)
    copy = {}
    for path in initial_files(out).values():
        with open(path, "rb") as f:
            copy.update({d["_id"]: d for d in bson.decode_file_iter(f)})
    sql("UPDATE poisoned SET id = id + 10")
    endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    r2 = subprocess.run([BIN, "-d", DB, "--slot", "poisoned", "-o", out, "--endpos", endpos, "-q"],
                        capture_output=True, text=True, timeout=60)
    events = {}
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        with open(path, "rb") as f:
            for e in bson.decode_file_iter(f):
                if e["operationType"] == "insert":
                    events[e["documentKey"]["_id"] - 10] = e["fullDocument"]
    late = datetime.datetime(9999, 12, 31, 23, 59, 59, 999000)
    early = datetime.datetime(1, 1, 1)
    want = {1: (late, "1234567890123456789012345678901234567.5"), 2: (early, bson.decimal128.Decimal128("1"))}
    got = {k: (d["valid_to"], d["n"]) for k, d in copy.items()}
    same = all({k: v for k, v in events[i].items() if k not in ("_id", "id")} ==
               {k: v for k, v in copy[i].items() if k not in ("_id", "id")} for i in (1, 2)) \
        if sorted(events) == [1, 2] and sorted(copy) == [1, 2] else False
    check(r.returncode == 0 and r2.returncode == 0 and got == want and same,
          "values without a BSON mapping: the first copy writes them as the stream does (fallback: "
          "9999-12-31T23:59:59.999Z, 0001-01-01, the numeric's digits), the same documents",
          "exit %s/%s, copy %s, events %s\n%s%s" % (r.returncode, r2.returncode, got, events, r.stderr, r2.stderr))
    sql("SELECT pg_drop_replication_slot('poisoned')")
    run_error("--unmappable-values error: the first copy stops at the value, naming it",
              ["-d", DB, "--slot", "poisoned_err", "--create-slot", "--initial-copy", "-o",
               os.path.join(WORK, "poisoned_err"), "--include-tables", "public.poisoned",
               "--unmappable-values", "error", "-q"],
              r'cannot convert infinite timestamp in "valid_to".*bson_out\.unmappable_values')
    check(not sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'poisoned_err'"),
          "--unmappable-values error: the failed first copy dropped its slot")
    run_error("--unmappable-values takes error or fallback",
              ["-d", DB, "--slot", "x", "-o", out, "--unmappable-values", "maybe"],
              r'invalid --unmappable-values "maybe": use error or fallback', status=2)
    sql("DROP TABLE poisoned")


def segment_ranges(out):
    """The durable segments' (first, last) resume tokens, from their names, in order."""
    ranges = []
    for path in sorted(glob.glob(os.path.join(out, "changes", "*.bson"))):
        first, last = os.path.basename(path)[:-len(".bson")].split("-")
        ranges.append((first, last))
    return ranges


def open_segment_over(out, size):
    """Is the open segment's temporary file larger than size?"""
    for p in temp_files(out):
        try:
            if os.path.getsize(p) > size:
                return True
        except OSError:
            pass   # closed and renamed meanwhile
    return False


def clean_stop_run():
    """SIGTERM and SIGINT just after large transactions committed, four times
    over: each stop finishes the transaction in progress and confirms its
    end, and the next run starts after it: no event written twice, none lost."""
    out = os.path.join(WORK, "cycles")
    stderr_path = os.path.join(WORK, "cycles.stderr")
    wl = Workload(seed=7)
    wl.start()
    proc = start_client("cycles", out, create=True)
    wait_initial(out, proc)
    rnd = random.Random(7)
    next_id = 500000
    for cycle in range(4):
        time.sleep(0.5 + rnd.random())
        # 100,000 rows in one transaction: one segment of tens of MB
        conn = connect()
        conn.cursor().copy_expert("COPY t1 FROM STDIN", io.StringIO(
            "".join("%d\tbig %d\t%d\t{}\n" % (k, k, k) for k in range(next_id, next_id + 100000))))
        conn.close()
        next_id += 100000
        # stop once part of it is written and its rest still to come: the open
        # segment's temporary file past 2 MB (the other transactions are of a
        # few changes: a segment reaches 20kB, then closes at their end)
        deadline = time.time() + 10
        while time.time() < deadline and not open_segment_over(out, 2 << 20):
            time.sleep(0.002)
        stop(proc, "clean stop %d of 4" % (cycle + 1), signal.SIGTERM if cycle % 2 == 0 else signal.SIGINT)
        proc = start_client("cycles", out, stderr_path=stderr_path)
    wl.finish()
    check(wait_caught_up("cycles"), "clean stops: the slot confirms the whole workload")
    stop(proc, "clean stops, the last run")
    model, nevents, distinct = replay(out)
    ranges = segment_ranges(out)
    overlaps = [(a, b) for a, b in zip(ranges, ranges[1:]) if b[0] <= a[1]]
    err = open(stderr_path).read()
    waited = err.count("stopping after the transaction in progress")
    check(nevents == distinct and not overlaps,
          "clean stops: 4 stops and restarts, %d events in %d segments, none written twice" % (distinct, len(ranges)),
          "%d events read, %d distinct; overlapping segments %s" % (nevents, distinct, overlaps[:5]))
    check(waited == 4, "clean stops: %d of the 4 stops came in the middle of a transaction and "
          "waited for its end" % waited, err[-2000:])
    compare("clean stops", out)
    read_back("clean stops", out)
    sql("DELETE FROM t1 WHERE id >= 500000")
    sql("SELECT pg_drop_replication_slot('cycles')")


def large_rows_run():
    """Rows of 10 MB under REPLICA IDENTITY DEFAULT and FULL, without and with
    the old row's image: every event at most 16 MiB, the larger ones split
    into fragments that pymongo decodes and a consumer merges; replayed with
    a sink's rules (ReplaceOne, $set/$unset, DeleteOne) they give the tables."""
    limit = 16 * 1024 * 1024
    big = 10 * 1024 * 1024
    sql("CREATE TABLE big_default (id int PRIMARY KEY, v text, n int)")
    sql("CREATE TABLE big_full (id int PRIMARY KEY, v text, n int)")
    sql("ALTER TABLE big_full REPLICA IDENTITY FULL")
    runs = {"large": [], "large_pre": ["--full-document-before-change"]}
    procs = {}
    for slot, extra in runs.items():
        procs[slot] = subprocess.Popen(
            [BIN, "-d", DB, "--slot", slot, "-o", os.path.join(WORK, slot), "--create-slot",
             "--include-tables", "public.big_*", "--segment-time", "0.5", "-q"] + extra,
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(WORK, slot + ".stderr"), "ab"))
    deadline = time.time() + 20
    while time.time() < deadline and len(sql("SELECT 1 FROM pg_replication_slots WHERE slot_name LIKE 'large%%'")) < 2:
        time.sleep(0.1)
    for t in ("big_default", "big_full"):
        sql("INSERT INTO %s VALUES (1, repeat('a', %d), 1), (2, repeat('b', %d), 1)" % (t, big, big))
        sql("UPDATE %s SET v = repeat('c', %d), n = 2 WHERE id = 1" % (t, big))
        sql("UPDATE %s SET n = 3 WHERE id = 2" % t)
        sql("DELETE FROM %s WHERE id = 1" % t)
        sql("INSERT INTO %s VALUES (3, repeat('d', %d), 1)" % (t, big))
    for slot, proc in procs.items():
        check(wait_caught_up(slot, timeout=120), "large rows, %s: the slot confirms every change" % slot)
        stop(proc, "large rows, %s" % slot)
    now = {}
    for t in ("big_default", "big_full"):
        now[t] = {bson.decode(bytes(r[0]))["_id"]: bson.decode(bytes(r[0]))
                  for r in sql("SELECT bson_document(t) FROM %s t" % t)}
    for slot in runs:
        sizes = []
        messages = []
        for path in sorted(glob.glob(os.path.join(WORK, slot, "changes", "*.bson"))):
            with open(path, "rb") as f:
                data = f.read()
            pos = 0
            while pos < len(data):
                n = int.from_bytes(data[pos:pos + 4], "little")
                sizes.append(n)
                messages.append(bson.decode(data[pos:pos + n]))
                pos += n
        events = list(reassemble(messages))
        fragments = [m["splitEvent"] for m in messages if "splitEvent" in m]
        check(sizes and max(sizes) <= limit,
              "large rows, %s: %d messages, the largest %d bytes (at most 16 MiB)" % (slot, len(sizes), max(sizes or [0])))
        model = {"big_default": {}, "big_full": {}}
        for e in events:
            docs = model[e["ns"]["coll"]]
            key = e["documentKey"]["_id"]
            op = e["operationType"]
            if op in ("insert", "replace"):
                docs[key] = e["fullDocument"]
            elif op == "update":
                doc = docs[key]
                doc.update(e["updateDescription"]["updatedFields"])
                for f in e["updateDescription"]["removedFields"]:
                    doc.pop(f, None)
            elif op == "delete":
                docs.pop(key, None)
        ops = [(e["ns"]["coll"], e["operationType"]) for e in events]
        # the update of v under FULL: fullDocument and updatedFields, and the
        # old row's image with --full-document-before-change
        want = [2, 3] if slot == "large_pre" else [2]
        got = sorted(set(f["of"] for f in fragments))
        check(model == now and got == want,
              "large rows, %s: %d events (%d split, into %s fragments) replayed with a sink's "
              "rules equal the tables" % (slot, len(events), sum(1 for f in fragments if f["fragment"] == 1), got),
              "ops %s; fragments %s; model ids %s, table ids %s"
              % (ops, fragments, {t: sorted(d) for t, d in model.items()}, {t: sorted(d) for t, d in now.items()}))
        sql("SELECT pg_drop_replication_slot(%s)", (slot,))
    sql("DROP TABLE big_default, big_full")


# ------------------------------------------------------------------ row-level security, lock waits

def run_bounded(args, timeout=60):
    """(exit status, standard error) of a run; "hung" if it had to be killed."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=timeout)
        return proc.returncode, err
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return "hung", err


def wait_for(cond, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def row_security_copy():
    """The first copy reads with row_security off: as a REPLICATION role that
    a table's row-level security policy applies to, it fails naming the
    table (the stream would carry every row's changes, policies or not), and
    the slot is dropped again.  --enable-row-security is refused."""
    sql("CREATE TABLE rls_s (id int PRIMARY KEY, owner text)")
    sql("INSERT INTO rls_s SELECT g, CASE WHEN g % 2 = 0 THEN 'rlsrepl' ELSE 'other' END "
        "FROM generate_series(1, 20) g")
    sql("ALTER TABLE rls_s ENABLE ROW LEVEL SECURITY")
    sql("CREATE POLICY own ON rls_s USING (owner = current_user)")
    sql("CREATE ROLE rlsrepl LOGIN REPLICATION")
    sql("GRANT SELECT ON rls_s TO rlsrepl")
    out = os.path.join(WORK, "rls")
    endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
    rc, err = run_bounded([BIN, "-d", DB, "-U", "rlsrepl", "--slot", "rls", "--create-slot", "--initial-copy",
                           "--include-tables", "public.rls_s", "-o", out, "--endpos", endpos])
    slot = sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'rls'")
    left = [p for p in glob.glob(os.path.join(out, "initial", "**"), recursive=True) if os.path.isfile(p)]
    check(rc == 1 and re.search(r'query would be affected by row-level security policy for table "rls_s"\n'
                                r'hint: the role "rlsrepl" is subject to the row-level security policies '
                                r'.*the first copy must read every row.*'
                                r'The replication slot "rls" has been dropped again', err, re.S)
          and not slot and not left,
          "row-level security: a first copy the policy would filter fails naming the table, the slot dropped",
          "exit %s, slot %s, files %s\n%s" % (rc, slot, left, err))
    if slot:
        sql("SELECT pg_drop_replication_slot('rls')")
    run_error("--enable-row-security refused",
              ["-d", DB, "--slot", "rls", "--create-slot", "--initial-copy", "--enable-row-security", "-o", out],
              r"--enable-row-security would copy only the rows that row-level security policies let the role "
              r"see, while the stream carries every row's changes", status=2)
    sql("DROP TABLE rls_s")
    sql("DROP ROLE rlsrepl")


def lock_waits():
    """Waits of --create-slot --initial-copy, said after 5 s with whom they
    wait for: the slot's creation waits for the transactions that have
    written to end; a table locked exclusively once the slot is made keeps
    the copy waiting, or with --lock-wait-timeout fails it, naming the table
    (the slot dropped again).  The order is made sure of by stopping the
    client (SIGSTOP) once it has said its first wait, until the slot is made
    and the table locked."""
    sql("CREATE TABLE lk (id int PRIMARY KEY)")
    sql("INSERT INTO lk SELECT generate_series(1, 100)")
    run_error("--lock-wait-timeout without --initial-copy", ["-d", DB, "--slot", "x", "-o", WORK,
                                                            "--lock-wait-timeout", "1s"],
              r"--lock-wait-timeout is for --initial-copy", status=2)
    run_error("an invalid --lock-wait-timeout", ["-d", DB, "--slot", "x", "-o", WORK, "--create-slot",
                                                 "--initial-copy", "--lock-wait-timeout", "1e3"],
              r'invalid --lock-wait-timeout "1e3": give a duration in ms, s, min, h or d', status=2)
    for timeout in (None, "1s"):
        slot = "lkwait" if timeout is None else "lktimeout"
        name = "--lock-wait-timeout %s" % timeout if timeout else "no --lock-wait-timeout"
        out = os.path.join(WORK, slot)
        endpos = sql("SELECT pg_current_wal_lsn()::text")[0][0]
        writer = psycopg2.connect(dbname=DB)
        writer.cursor().execute("INSERT INTO other VALUES (-7)")
        wpid = writer.get_backend_pid()
        proc = subprocess.Popen([BIN, "-d", DB, "--slot", slot, "--create-slot", "--initial-copy",
                                 "--include-tables", "public.lk", "-o", out, "--endpos", endpos]
                                + (["--lock-wait-timeout", timeout] if timeout else []),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
        reader.start()
        said_xact = wait_for(lambda: any("pg_bsonstream:   process %d (" % wpid in line for line in lines))
        proc.send_signal(signal.SIGSTOP)
        writer.rollback()
        writer.close()
        made = wait_for(lambda: sql("SELECT confirmed_flush_lsn IS NOT NULL FROM pg_replication_slots "
                                    "WHERE slot_name = %s", (slot,)) == [(True,)])
        locker = psycopg2.connect(dbname=DB)
        locker.cursor().execute("LOCK TABLE lk IN ACCESS EXCLUSIVE MODE")
        lpid = locker.get_backend_pid()
        proc.send_signal(signal.SIGCONT)
        said_lock = True
        if timeout is None:
            said_lock = wait_for(lambda: any("waiting for a lock on public.lk, blocked by the session with PID %d "
                                             % lpid in line for line in lines))
            locker.rollback()
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = "hung"
        locker.rollback()
        locker.close()
        reader.join(10)
        err = "".join(lines)
        slots = sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        copied = initial_files(out).get((DB, "lk"))
        if timeout is None:
            ndocs = 0
            if copied:
                with open(copied, "rb") as f:
                    ndocs = sum(1 for _ in bson.decode_file_iter(f))
            check(said_xact and made and said_lock and rc == 0 and ndocs == 100,
                  "%s: the slot's wait for a writing transaction, then the copy's for a table lock, "
                  "said with the PIDs; the copy complete once the lock is free" % name,
                  "said %s/%s, slot made %s, exit %s, %d documents\n%s"
                  % (said_xact, said_lock, made, rc, ndocs, err))
        else:
            check(said_xact and made and rc == 1
                  and "could not list the tables: canceling statement due to lock timeout" in err
                  and "just now such locks are held or awaited on public.lk (PID %d)" % lpid in err
                  and "the export waits no longer than --lock-wait-timeout 1s" in err
                  and 'The replication slot "lktimeout" has been dropped again' in err and not slots,
                  "%s: a table locked once the slot is made fails the copy, naming the table and the PID; "
                  "the slot dropped again" % name,
                  "said %s, slot made %s, exit %s, slot left %s\n%s" % (said_xact, made, rc, slots, err))
        for (s,) in sql("SELECT slot_name FROM pg_replication_slots WHERE slot_name = %s", (slot,)):
            sql("SELECT pg_drop_replication_slot(%s)", (s,))
    sql("DROP TABLE lk")


def main():
    t0 = time.time()
    setup()
    # STREAM_ONLY=name,name: only those runs (for working on one of them)
    only = os.environ.get("STREAM_ONLY")
    if only:
        for name in only.split(","):
            globals()[name]()
        print("stream: %d passed, %d failed" % (passed, failed))
        return 1 if failed else 0
    plain_run()
    parts_run()
    selection_run()
    crash_run()
    stdout_run()
    endpos_run()
    endpos_zero()
    progress_line()
    errors()
    interrupted_copy()
    row_security_copy()
    lock_waits()
    poison_run()
    unmappable_run()
    backoff_count_run()
    backoff_stop_run()
    invalidated_run()
    kill_during_copy()
    create_slot_fails()
    create_slot_waits()
    clean_stop_run()
    large_rows_run()
    wal_level_replica()
    print("(%.0f s)" % (time.time() - t0))
    print("stream: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
