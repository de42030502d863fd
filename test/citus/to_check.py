#!/usr/bin/env python3
"""pg_bsonstream --citus --to on the Citus stage's live cluster (test/citus/to.sh):
every node's stream applied into FerretDB, merged in commit order.

The main run, in a database of its own: a distributed table (32 shards), a
reference table and a partitioned distributed table co-located with the
first, with rows, copied first and then followed while a random workload
of three sessions (multi-row transactions over the three tables, seeded)
runs for about a minute.  During it: shards moved between the workers in
both directions (logical replication and block_writes), a TRUNCATE of the
distributed table, a kill -9 of pg_bsonstream and a start without
--create-slot, a restart of worker 1.  Then a marker row on each worker
and in the reference table; once FerretDB has them (and a few heartbeats
more), a SIGTERM (exit status 0), and:

  - every collection read back from FerretDB equals bson_document of its
    table's rows through the coordinator, byte for byte, keyed by _id;
  - no collection named by a shard, only the tables' and the progress;
  - the progress document holds a position for every node (group);
  - each node's applied segments and first copy were removed.

The merge's proof: a shard's keys updated on the worker of the lower group,
the shard moved to the other one, updated there, moved back, and so on,
with the last update on the higher group's worker, while FerretDB is
stopped (SIGSTOP), so that the applier finds both nodes' events pending
when it answers again.  Merged in commit order, the collection equals the
table; with BSON_OUT_MERGE=off (each node's stream applied on its own,
the highest group's first) the comparison must find the moved keys
different, with the lower group's last value.

Nodes leaving and joining: citus_drain_node of a worker under the stream
(followed: the collection equals the table), then citus_remove_node (the
run stops, saying so), then citus_add_node and a start again (refused).

A TRUNCATE through the coordinator after its slot and before a worker's
(held back by a transaction open there): the run stops, saying so.

CITUS_TO_ONLY (main,merge,window,nodes by default) makes only some runs.
The last line is "citus-to: N passed, M failed".
"""
import glob
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from crosscheck_common import pg_error   # noqa: E402  (before bson.json_util)

import bson   # noqa: E402
import bson.json_util   # noqa: E402
import psycopg2   # noqa: E402
import pymongo   # noqa: E402
from bson.raw_bson import RawBSONDocument   # noqa: E402

BIN = os.environ["PG_BSONSTREAM"]
WORK = os.environ["WORK"]
PG_BINDIR = os.environ["PG_BINDIR"]
CITUS_DIR = os.environ["CITUS_DIR"]
FERRETDB = os.environ["FERRETDB"]
RUNAS = os.environ.get("RUNAS", "").split()
NODES = {n: (os.environ["CITUS_%s_SOCKET" % n.upper()], os.environ["CITUS_%s_PORT" % n.upper()])
         for n in ("coord", "worker1", "worker2")}
SEED = int(os.environ.get("CITUS_TO_SEED", "20260107"))
ONLY = os.environ.get("CITUS_TO_ONLY", "main,merge,window,nodes").split(",")   # the runs made
SESSIONS = 3
WORKLOAD_SECONDS = 60
# FerretDB (SQLite) applies about 100 events a second on a 2-core machine:
# the sessions pause between transactions so that the applier can follow
PAUSE = 0.4
SLOT = "to_mongo"
TABLES = ("accounts", "branches", "entries")
DAYS = ("2024-03-01", "2025-06-15", "2026-09-30")   # one in each partition of entries

passed = 0
failed = 0
CLIENTS = []    # every pg_bsonstream started
FERRETS = []    # every FerretDB started


def ok(name):
    global passed
    passed += 1
    print("ok   %s" % name, flush=True)


def fail(name, detail=""):
    global failed
    failed += 1
    print("FAIL %s" % name, flush=True)
    for line in str(detail).splitlines()[:40]:
        print("     | %s" % line, flush=True)


def check(cond, name, detail=""):
    if cond:
        ok(name)
    else:
        fail(name, detail)
    return cond


def info(text):
    print("     %s" % text, flush=True)


def stop_everything(*_):
    """Every pg_bsonstream (its process group) and FerretDB this script started."""
    for p in CLIENTS:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    for f in FERRETS:
        f.stop()
    if _:
        sys.exit(1)


# ------------------------------------------------------------------ PostgreSQL

def connect(node="coord", db="postgres"):
    host, port = NODES[node]
    c = psycopg2.connect(host=host, port=port, user="postgres", dbname=db)
    c.autocommit = True
    return c


def sql(query, node="coord", db="postgres", args=None, timeout="180s"):
    """query's rows (None for a command), stopped after timeout: a Citus
    operation that hangs fails the check instead of the whole stage."""
    c = connect(node, db)
    try:
        cur = c.cursor()
        cur.execute("SET statement_timeout = '%s'" % timeout)
        cur.execute(query, args)
        return cur.fetchall() if cur.description else None
    finally:
        c.close()


def create_db(db):
    """A database of its own on every node, a Citus cluster of its own (its
    metadata is per database): citus everywhere, the workers added, bson_out
    created on the coordinator and so on the workers."""
    for n in NODES:
        if not sql("SELECT 1 FROM pg_database WHERE datname = %s", n, args=(db,)):
            sql("CREATE DATABASE %s" % db, n)
        sql("CREATE EXTENSION IF NOT EXISTS citus", n, db)
    sql("SELECT citus_set_coordinator_host('127.0.0.1', %s)" % NODES["coord"][1], db=db)
    for n in ("worker1", "worker2"):
        sql("SELECT citus_add_node('127.0.0.1', %s)" % NODES[n][1], db=db)
    sql("CREATE EXTENSION bson_out", db=db)


def drop_db(db):
    for n in NODES:
        try:
            sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE database = %s AND NOT active", n, args=(db,))
            sql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % db, n)
        except psycopg2.Error as e:
            fail("dropping database %s on %s" % (db, n), pg_error(e))


def distributed_db(db, table, rows):
    """A database of its own (create_db) with a distributed table of 8
    shards, (id int PRIMARY KEY, v int), rows 1..rows of v 0; the workers'
    ports, the lower group's first"""
    create_db(db)
    sql("CREATE TABLE %s (id int PRIMARY KEY, v int)" % table, db=db)
    sql("SELECT create_distributed_table('%s', 'id', shard_count := 8)" % table, db=db)
    sql("INSERT INTO %s SELECT g, 0 FROM generate_series(1, %d) g" % (table, rows), db=db)
    return worker_ports_by_group(db)


def worker_ports_by_group(db):
    """(port of the lower group's worker, port of the higher one's)"""
    rows = sql("SELECT nodeport FROM pg_dist_node WHERE groupid > 0 ORDER BY groupid", db=db)
    return str(rows[0][0]), str(rows[1][0])


def shard_on(db, port, table="accounts", other_than=()):
    rows = sql("SELECT shardid FROM citus_shards WHERE table_name = %s::regclass AND nodeport = %s "
               "ORDER BY shardid", db=db, args=(table, int(port)))
    return [r[0] for r in rows if r[0] not in other_than][0]


def placement(db, shard):
    return sql("SELECT nodeport FROM citus_shards WHERE shardid = %s", db=db, args=(shard,))


def move(db, name, shard, src, dst, mode):
    """citus_move_shard_placement of shard (and its co-located shards) from port src to dst"""
    try:
        # the placements a move left behind, if the cluster defers their removal
        sql("CALL citus_cleanup_orphaned_resources()", db=db)
        sql("SELECT citus_move_shard_placement(%s, '127.0.0.1', %s, '127.0.0.1', %s, "
            "shard_transfer_mode := %s)", db=db, args=(shard, int(src), int(dst), mode))
        where = placement(db, shard)
        return check(where == [(int(dst),)], "%s: shard %s moved from port %s to %s (%s), writes going on"
                     % (name, shard, src, dst, mode), where)
    except psycopg2.Error as e:
        fail("%s: moving shard %s from port %s to %s (%s)" % (name, shard, src, dst, mode), pg_error(e))
        return False


def pg_ctl(node, action):
    data = os.path.join(CITUS_DIR, node, "data")
    mode = ["-m", "fast"] if action != "start" else []
    return subprocess.run(RUNAS + [os.path.join(PG_BINDIR, "pg_ctl"), "-D", data, "-l",
                                   os.path.join(CITUS_DIR, node, "server.log"), "-w"] + mode + [action],
                          capture_output=True, text=True)


def wait_for(cond, timeout, step=0.5):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def slots_caught_up(db, timeout=90):
    """Every node's slot of db confirmed past the node's WAL position now:
    each node's stream has written its changes so far into its segments."""
    targets = {n: sql("SELECT pg_current_wal_lsn()", n)[0][0] for n in NODES}

    def done():
        for n, lsn in targets.items():
            r = sql("SELECT confirmed_flush_lsn >= %s FROM pg_replication_slots "
                    "WHERE slot_name = %s AND database = %s", n, args=(lsn, SLOT, db))
            if not r or not r[0][0]:
                return False
        return True
    return wait_for(done, timeout)


def shard_key(db, port, start, table="accounts"):
    """The first id from start on whose shard of table is on the worker of port"""
    return sql("SELECT min(g) FROM generate_series(%s, %s + 10000) g, citus_shards s "
               "WHERE s.table_name = %s::regclass AND s.nodeport = %s "
               "AND s.shardid = get_shard_id_for_distribution_column(%s, g)",
               db=db, args=(start, start, table, int(port), table))[0][0]


# ------------------------------------------------------------------ FerretDB

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Ferret:
    """FerretDB on a free loopback port, SQLite backend, state, log, data
    and pid file (ferretdb.pid: to.sh's cleanup finds it there) in a
    directory of its own under WORK."""

    def __init__(self, name):
        self.dir = os.path.join(WORK, "ferret-" + name)
        self.port = free_port()
        self.proc = None
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        FERRETS.append(self)

    def start(self):
        log = open(os.path.join(self.dir, "ferretdb.log"), "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("FERRETDB_")}
        self.proc = subprocess.Popen(
            [FERRETDB, "--listen-addr=127.0.0.1:%d" % self.port, "--listen-unix=", "--listen-tls=",
             "--handler=sqlite", "--state-dir=%s" % self.dir,
             "--sqlite-url=file:%s/" % os.path.join(self.dir, "data"), "--telemetry=disable",
             "--debug-addr=-", "--mode=normal", "--log-level=warn"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        with open(os.path.join(self.dir, "ferretdb.pid"), "w") as f:
            f.write("%d\n" % self.proc.pid)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                pymongo.MongoClient("127.0.0.1", self.port, serverSelectionTimeoutMS=300,
                                    directConnection=True).admin.command("ping")
                return True
            except pymongo.errors.PyMongoError:
                time.sleep(0.1)
        fail("FerretDB started on 127.0.0.1:%d" % self.port,
             open(os.path.join(self.dir, "ferretdb.log")).read()[-2000:])
        self.stop()
        return False

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        try:
            os.unlink(os.path.join(self.dir, "ferretdb.pid"))
        except FileNotFoundError:
            pass

    def uri(self, db):
        return "mongodb://127.0.0.1:%d/%s?serverSelectionTimeoutMS=2000" % (self.port, db)

    def db(self, name):
        return pymongo.MongoClient("127.0.0.1", self.port, document_class=RawBSONDocument,
                                   serverSelectionTimeoutMS=5000, directConnection=True)[name]


# ------------------------------------------------------------------ pg_bsonstream

class Stream:
    """pg_bsonstream --citus --to on db, into FerretDB's database target,
    in a session of its own (its children are in its process group)."""

    def __init__(self, name, db, ferret, target, merge=True):
        self.name = name
        self.db = db
        self.out = os.path.join(WORK, name)
        self.log = os.path.join(WORK, name + ".log")
        self.ferret = ferret
        self.target = target
        self.merge = merge
        self.proc = None

    def start(self, create):
        args = [BIN, "--citus", "-h", NODES["coord"][0], "-p", NODES["coord"][1], "-U", "postgres",
                "-d", "dbname=%s sslmode=disable" % self.db, "--slot", SLOT, "-o", self.out,
                "--to", self.ferret.uri(self.target), "--include-tables", "public.*",
                "--status-interval", "1"]
        if create:
            args += ["--create-slot", "--initial-copy"]
        env = {k: v for k, v in os.environ.items() if k != "BSON_OUT_MERGE"}
        if not self.merge:
            env["BSON_OUT_MERGE"] = "off"
        with open(self.log, "a") as log:
            log.write("==== %s %s\n" % (time.strftime("%H:%M:%S"), " ".join(args)))
            log.flush()
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=log, env=env, start_new_session=True)
        CLIENTS.append(self.proc)

    def text(self, tail=3000):
        return open(self.log, errors="replace").read()[-tail:]

    def streaming(self):
        """every node streams (its first copy made), in the run started last"""
        return len(glob.glob(os.path.join(self.out, "group-*", "streaming"))) == 3

    def group_alive(self):
        try:
            os.killpg(self.proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    def kill9(self):
        """SIGKILL to the parent alone: its children must end with it"""
        self.proc.kill()
        self.proc.wait()
        gone = wait_for(lambda: not self.group_alive(), 15, 0.2)
        if not gone:
            left = subprocess.run(["ps", "-o", "pid,args", "--no-headers", "-g", str(self.proc.pid)],
                                  capture_output=True, text=True).stdout
            os.killpg(self.proc.pid, signal.SIGKILL)
            return False, left
        return True, ""

    def stop(self):
        """SIGTERM; the exit status (or "timeout", then killed)"""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            rc = "timeout"
        if self.group_alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        return rc


# ------------------------------------------------------------------ comparing

def key(doc_id):
    return bson.encode({"_id": doc_id})


def show(raw):
    return bson.json_util.dumps(bson.decode(raw))


def table_docs(db, table):
    c = connect("coord", db)
    cur = c.cursor()
    cur.execute("SELECT bson_document(t) FROM %s t" % table)
    docs = {}
    for (raw,) in cur.fetchall():
        raw = bytes(raw)
        docs[key(bson.decode(raw)["_id"])] = raw
    c.close()
    return docs


def collection_docs(mdb, coll):
    docs = {}
    dup = 0
    for d in mdb[coll].find():
        raw = d.raw
        k = key(bson.decode(raw)["_id"])
        dup += k in docs
        docs[k] = raw
    return docs, dup


def compare(db, mdb, table):
    """(problems: [] when equal, the number of documents, the _ids that differ)"""
    want = table_docs(db, table)
    got, dup = collection_docs(mdb, table)
    missing = [k for k in want if k not in got]
    surplus = [k for k in got if k not in want]
    differ = [k for k in want if k in got and want[k] != got[k]]
    problems = []
    if missing or surplus or differ or dup:
        problems.append("%s: %d rows, %d documents: %d missing, %d surplus, %d different, %d _id twice"
                        % (table, len(want), len(got), len(missing), len(surplus), len(differ), dup))
        for k in missing[:3]:
            problems.append("  missing:   %s" % show(want[k]))
        for k in surplus[:3]:
            problems.append("  surplus:   %s" % show(got[k]))
        for k in differ[:3]:
            problems.append("  different: table     %s" % show(want[k]))
            problems.append("             FerretDB  %s" % show(got[k]))
    return problems, len(want), [bson.decode(k)["_id"] for k in differ]


def markers_applied(mdb, markers):
    try:
        return all(mdb[coll].find_one({"_id": i}) is not None for coll, i in markers)
    except pymongo.errors.PyMongoError:
        return False


def wait_applied(name, stream, mdb, markers, timeout=180):
    """The markers (the last commits of their nodes) in FerretDB, then a few
    heartbeat seconds more"""
    got = wait_for(lambda: markers_applied(mdb, markers) or stream.proc.poll() is not None, timeout, 1)
    got = got and stream.proc.poll() is None
    check(got, "%s: the final markers (%s) applied within %d s" % (name, markers, timeout), stream.text())
    time.sleep(3)
    return got


# ------------------------------------------------------------------ the workload

class Workload:
    """SESSIONS threads on the coordinator, each on its own keys
    (id % SESSIONS), random transactions of one to four changes over the
    three tables (several shards, both workers: two-phase commits), a few
    rolled back, a random pause of up to PAUSE s after each; seeded."""

    def __init__(self, db):
        self.db = db
        self.stop = threading.Event()
        self.commits = 0
        self.errors = 0
        self.last_error = ""
        self.generation = 0     # moved on by a TRUNCATE: the sessions read their keys again
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(k,), daemon=True) for k in range(SESSIONS)]

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def known(self, cur, k):
        ids = {}
        for tbl in TABLES:
            cols = "id, day::text" if tbl == "entries" else "id"
            cur.execute("SELECT %s FROM %s WHERE id %% %d = %d" % (cols, tbl, SESSIONS, k))
            ids[tbl] = set(r if tbl == "entries" else r[0] for r in cur.fetchall())
        return ids

    def change(self, cur, rnd, ids, nxt, pending):
        tbl = rnd.choice(("accounts", "accounts", "accounts", "entries", "entries", "branches"))
        have = ids[tbl]
        op = rnd.random()
        note = None if rnd.random() < 0.2 else "n%d" % rnd.randint(0, 10 ** 6)
        if op < 0.4 or len(have) < 10:
            i = nxt[tbl]
            nxt[tbl] += SESSIONS
            if tbl == "accounts":
                cur.execute("INSERT INTO accounts VALUES (%s, %s, %s, %s)",
                            (i, "o%d" % rnd.randint(0, 999), rnd.randint(-10 ** 6, 10 ** 12), note))
                pending.append(("add", tbl, i))
            elif tbl == "entries":
                day = rnd.choice(DAYS)
                cur.execute("INSERT INTO entries VALUES (%s, %s, %s, %s)", (i, day, rnd.randint(0, 9999), note))
                pending.append(("add", tbl, (i, day)))
            else:
                cur.execute("INSERT INTO branches VALUES (%s, %s, %s)", (i, "b%d" % i, rnd.randint(0, 10 ** 9)))
                pending.append(("add", tbl, i))
        elif op < 0.8:
            some = rnd.sample(sorted(have), rnd.choice((1, 1, 3)))
            if tbl == "accounts":
                cur.execute("UPDATE accounts SET balance = balance + %s, note = %s WHERE id = ANY(%s)",
                            (rnd.randint(-1000, 1000), note, some))
            elif tbl == "entries":
                for i, day in some:
                    cur.execute("UPDATE entries SET amount = amount + %s, note = %s WHERE id = %s AND day = %s",
                                (rnd.randint(1, 99), note, i, day))
            else:
                cur.execute("UPDATE branches SET total = total + %s, name = %s WHERE id = ANY(%s)",
                            (rnd.randint(1, 99), note, some))
        else:
            i = rnd.choice(sorted(have))
            if tbl == "entries":
                cur.execute("DELETE FROM entries WHERE id = %s AND day = %s", i)
            else:
                cur.execute("DELETE FROM %s WHERE id = %%s" % tbl, (i,))
            pending.append(("del", tbl, i))

    def run(self, k):
        rnd = random.Random(SEED * 10 + k)
        conn = None
        ids = None
        seen = -1
        nxt = {tbl: 100000 + k for tbl in TABLES}
        while not self.stop.is_set():
            try:
                if conn is None or seen != self.generation:
                    if conn is None:
                        conn = connect("coord", self.db)
                    conn.autocommit = True
                    seen = self.generation
                    ids = self.known(conn.cursor(), k)
                    conn.autocommit = False
                cur = conn.cursor()
                pending = []
                for _ in range(rnd.randint(1, 4)):
                    self.change(cur, rnd, ids, nxt, pending)
                if rnd.random() < 0.05:
                    conn.rollback()
                    continue
                conn.commit()
                for what, tbl, i in pending:
                    (ids[tbl].add if what == "add" else ids[tbl].discard)(i)
                with self.lock:
                    self.commits += 1
            except psycopg2.Error as e:
                # a shard move's switch, a worker restarting, a TRUNCATE's lock:
                # the outcome of a failed commit is not known, the keys are read again
                with self.lock:
                    self.errors += 1
                    self.last_error = pg_error(e) if hasattr(e, "pgcode") else str(e)
                try:
                    conn.close()
                except Exception:
                    pass
                conn = None
                time.sleep(0.2)
            time.sleep(rnd.random() * PAUSE)
        if conn is not None:
            conn.close()


# ------------------------------------------------------------------ the main run

def setup_main(db):
    create_db(db)
    for stmt in (
        "CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance bigint, note text)",
        "SELECT create_distributed_table('accounts', 'id', shard_count := 32)",
        "CREATE TABLE branches (id int PRIMARY KEY, name text, total bigint)",
        "SELECT create_reference_table('branches')",
        "CREATE TABLE entries (id int, day date, amount int, note text, PRIMARY KEY (id, day)) "
        "PARTITION BY RANGE (day)",
        "CREATE TABLE entries_2024 PARTITION OF entries FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
        "CREATE TABLE entries_2025 PARTITION OF entries FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')",
        "CREATE TABLE entries_2026 PARTITION OF entries FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')",
        "SELECT create_distributed_table('entries', 'id', colocate_with := 'accounts')",
        "INSERT INTO accounts SELECT g, 'o' || g % 97, g * 1000, CASE WHEN g % 5 = 0 THEN NULL ELSE 'a' || g END "
        "FROM generate_series(1, 3000) g",
        "INSERT INTO branches SELECT g, 'b' || g, g * 7 FROM generate_series(1, 60) g",
        "INSERT INTO entries SELECT g, date '2024-03-01' + (g % 3) * 400, g % 1000, 'e' || g "
        "FROM generate_series(1, 1500) g",
    ):
        sql(stmt, db=db)
    counts = sql("SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM branches), "
                 "(SELECT count(*) FROM entries), (SELECT count(DISTINCT nodeport) FROM citus_shards "
                 "WHERE table_name = 'accounts'::regclass), (SELECT count(*) FROM pg_partition_tree('entries'))",
                 db=db)
    return check(counts == [(3000, 60, 1500, 2, 4)], "main: database %s: accounts (32 shards on both workers), "
                 "branches (reference), entries (partitioned, 3 partitions, co-located) with their rows"
                 % db, counts)


def main_run():
    name = "main"
    db = "bson_out_to"
    target = "to_main"
    if not setup_main(db):
        return
    ferret = Ferret(name)
    if not ferret.start():
        return
    stream = Stream(name, db, ferret, target)
    w1, w2 = NODES["worker1"][1], NODES["worker2"][1]
    load = Workload(db)
    started = time.time()
    stream.start(create=True)
    load.start()
    check(wait_for(stream.streaming, 90) and stream.proc.poll() is None,
          "main: every node's first copy made and its stream started, under the workload", stream.text())
    time.sleep(2)

    a = shard_on(db, w1)
    move(db, name, a, w1, w2, "auto")
    time.sleep(2)
    b = shard_on(db, w2, other_than=(a,))
    move(db, name, b, w2, w1, "block_writes")
    time.sleep(2)

    try:
        sql("TRUNCATE accounts", db=db)
        with load.lock:
            load.generation += 1
        ok("main: TRUNCATE accounts under the workload, which goes on inserting")
    except psycopg2.Error as e:
        fail("main: TRUNCATE accounts", pg_error(e))
    time.sleep(4)

    gone, left = stream.kill9()
    check(gone, "main: kill -9 of pg_bsonstream: its node streams and its applier end with it", left)
    time.sleep(1)
    stream.start(create=False)
    time.sleep(4)
    check(stream.proc.poll() is None and stream.streaming(),
          "main: started again without --create-slot: every node streams again", stream.text())

    move(db, name, a, w2, w1, "block_writes")
    c = shard_on(db, w1, other_than=(a, b))
    move(db, name, c, w1, w2, "block_writes")
    time.sleep(2)

    r = pg_ctl("worker1", "restart")
    check(r.returncode == 0, "main: worker 1 restarted (pg_ctl restart -m fast) under the stream", r.stderr)
    time.sleep(3)
    d = shard_on(db, w2, other_than=(a, b, c))
    move(db, name, d, w2, w1, "auto")

    time.sleep(max(0, WORKLOAD_SECONDS - (time.time() - started)))
    load.finish()
    check(load.commits > 200, "main: the workload: %d transactions committed in %.0f s, %d failed (moves, "
          "the TRUNCATE's lock, the restart)" % (load.commits, time.time() - started, load.errors),
          load.last_error)

    # the last commits of each worker and of the coordinator
    m1 = shard_key(db, w1, 900000)
    m2 = shard_key(db, w2, 900000)
    sql("INSERT INTO accounts VALUES (%s, 'marker', 0, 'worker 1'), (%s, 'marker', 0, 'worker 2')",
        db=db, args=(m1, m2))
    sql("INSERT INTO branches VALUES (900000, 'marker', 0)", db=db)
    mdb = ferret.db(target)
    wait_applied(name, stream, mdb, [("accounts", m1), ("accounts", m2), ("branches", 900000)])
    rc = stream.stop()
    check(rc == 0, "main: a SIGTERM stops pg_bsonstream cleanly (exit status %s)" % rc, stream.text())
    text = open(stream.log, errors="replace").read()
    info("pg_bsonstream's log: %d lines, %d of the applier ([MongoDB])"
         % (text.count("\n"), len(re.findall(r"^\[MongoDB\]", text, re.M))))

    for tbl in TABLES:
        problems, n, _ = compare(db, mdb, tbl)
        check(not problems and n > 0, "main: collection %s = bson_document of table %s's %d rows, "
              "byte for byte" % (tbl, tbl, n), "\n".join(problems))

    colls = sorted(mdb.list_collection_names())
    shards = [x for x in colls if re.search(r"_\d{6,}$", x)]
    check(not shards and colls == sorted(TABLES + ("bson_out_progress",)),
          "main: the collections are the tables' and the progress', none named by a shard", colls)

    groups = sorted(str(r[0]) for r in sql("SELECT groupid FROM pg_dist_node", db=db))
    progress = mdb["bson_out_progress"].find_one({"_id": SLOT})
    progress = bson.decode(progress.raw) if progress else {}
    nodes = progress.get("nodes", {})
    check(groups == ["0", "1", "2"] and sorted(nodes) == groups and progress.get("token") and
          all(isinstance(v, dict) and v.get("token") and "order" in v for v in nodes.values()),
          "main: the progress document holds the merged position and each node's (groups %s)" % groups,
          progress)

    segs = {os.path.basename(g): len(glob.glob(os.path.join(g, "changes", "*.bson")))
            for g in glob.glob(os.path.join(stream.out, "group-*"))}
    copies = glob.glob(os.path.join(stream.out, "group-*", "initial", "*", "*.bson"))
    check(len(segs) == 3 and all(n <= 5 for n in segs.values()) and not copies,
          "main: each node's applied segments and first copy removed (segments left: %s)" % segs,
          "first copies left: %s" % copies[:5])

    ferret.stop()
    drop_db(db)


# ------------------------------------------------------------------ the merge's proof

def distributed_later(name, db, stream, mdb):
    """A table of the coordinator alone, copied and followed, then distributed
    (create_distributed_table): it leaves the coordinator's stream, its rows
    go to shards whose copy is not streamed.  The run must stop, saying so,
    and leave the collection as it is, not drop it."""
    stream.start(create=False)
    if not check(wait_for(stream.streaming, 60) and stream.proc.poll() is None,
                 "%s: started again, every node streams" % name, stream.text()):
        return
    before = mdb["loc"].count_documents({})
    sql("SELECT create_distributed_table('loc', 'id')", db=db)
    ended = wait_for(lambda: stream.proc.poll() is not None, 60)
    rc = stream.proc.poll() if ended else stream.stop()
    text = "\n".join(stream.text(6000).splitlines()[-30:])
    check(rc == 1 and re.search(r"table \S*loc\S* (is gone from a node's stream|changed \(a DDL\)) .*while "
                                r"--citus --to runs", text) and "hint: Start over" in text
          and before == 50 and mdb["loc"].count_documents({}) == 50,
          "%s: create_distributed_table of a followed table of the coordinator: the run stops "
          "(exit status %s) saying so, the collection's %d documents left as they were"
          % (name, rc, before), text)


def nodes_run():
    """Nodes leaving and joining while --citus --to runs: citus_drain_node
    (shard moves: followed, the collection equal to the table after it),
    then citus_remove_node (the run stops, saying so, with the way on), then
    citus_add_node and a start again (refused: a node that joined)."""
    name = "nodes"
    db = "bson_out_to_nodes"
    lo, hi = distributed_db(db, "t", 300)
    hi_group = sql("SELECT groupid FROM pg_dist_node WHERE nodeport = %s" % hi, db=db)[0][0]
    ferret = Ferret(name)
    if not ferret.start():
        drop_db(db)
        return
    stream = Stream(name, db, ferret, "to_nodes")
    stream.start(create=True)
    mdb = ferret.db("to_nodes")

    def copied():
        try:
            return mdb["t"].count_documents({}) == 300
        except pymongo.errors.PyMongoError:
            return False
    if not check(wait_for(lambda: stream.streaming() and copied() or stream.proc.poll() is not None, 90)
                 and stream.proc.poll() is None, "%s: the first copy applied, every node streams" % name,
                 stream.text()):
        stream.stop()
        ferret.stop()
        drop_db(db)
        return
    try:
        sql("UPDATE t SET v = 1 WHERE id % 3 = 0", db=db)
        sql("SELECT citus_drain_node('127.0.0.1', %s)" % hi, db=db, timeout="300s")
        left = sql("SELECT count(*) FROM citus_shards WHERE nodeport = %s" % hi, db=db)[0][0]
        sql("UPDATE t SET v = v + 10 WHERE id % 2 = 0", db=db)
        sql("INSERT INTO t VALUES (900000, -1)", db=db)
        check(left == 0, "%s: citus_drain_node of the higher group's worker under the stream "
              "(%s shards left on it)" % (name, left))
    except psycopg2.Error as e:
        fail("%s: citus_drain_node" % name, pg_error(e))
    wait_applied(name, stream, mdb, [("t", 900000)])
    problems, n, _ = compare(db, mdb, "t")
    check(not problems, "%s: after the drain, collection t = table t, byte for byte (%d documents)" % (name, n),
          "\n".join(problems))

    try:
        sql("SELECT citus_remove_node('127.0.0.1', %s)" % hi, db=db)
    except psycopg2.Error as e:
        fail("%s: citus_remove_node" % name, pg_error(e))
    ended = wait_for(lambda: stream.proc.poll() is not None, 60)
    rc = stream.proc.poll() if ended else stream.stop()
    text = "\n".join(stream.text(6000).splitlines()[-30:])
    check(rc == 1 and "is no longer a primary node of the cluster while --to applies" in text and
          "hint: Remove a node only after its shards are moved away" in text and
          mdb["t"].count_documents({}) == n,
          "%s: citus_remove_node of the drained worker: the run stops (exit status %s), saying so with "
          "the way on, the collection as it was" % (name, rc), text)

    try:
        sql("SELECT citus_add_node('127.0.0.1', %s)" % hi, db=db)
    except psycopg2.Error as e:
        fail("%s: citus_add_node" % name, pg_error(e))
    stream.start(create=False)
    ended = wait_for(lambda: stream.proc.poll() is not None, 60)
    rc = stream.proc.poll() if ended else stream.stop()
    text = "\n".join(stream.text(6000).splitlines()[-30:])
    # the node left and came back as a group of its own: one or the other is said first
    check(rc == 1 and (("joined the cluster while --to applies the nodes' streams" in text and
                        "hint: Stop shard moves to it, and start over" in text) or
                       ("names group %s, which is not a node of the cluster now" % hi_group in text and
                        "hint: A node left the cluster since the last run. Start over" in text)),
          "%s: citus_add_node, then a start again: refused (exit status %s), saying so with the way on"
          % (name, rc), text)
    ferret.stop()
    drop_db(db)


def window_run():
    """A TRUNCATE through the coordinator while the slots are being made,
    after the coordinator's and worker 1's, before the higher group's
    worker's (held back by a transaction open there): that worker's copy is
    of after the truncate, which the coordinator's stream carries.  The run
    must stop, saying so, rather than apply it over that copy."""
    name = "window"
    db = "bson_out_to_window"
    lo, hi = distributed_db(db, "w", 200)
    node_hi = [n for n in ("worker1", "worker2") if NODES[n][1] == hi][0]
    groups = {str(r[0]): str(r[1]) for r in sql("SELECT nodeport, groupid FROM pg_dist_node", db=db)}
    sql("CREATE TABLE hold (i int)", node_hi, db)
    held = connect(node_hi, db)
    held.autocommit = False
    held.cursor().execute("INSERT INTO hold VALUES (1)")     # an xid: the node's slot waits for it
    ferret = Ferret(name)
    if not ferret.start():
        held.rollback()
        held.close()
        drop_db(db)
        return
    stream = Stream(name, db, ferret, "to_window")
    stream.start(create=True)
    out = stream.out

    def made(g, f):
        return os.path.exists(os.path.join(out, "group-%s" % g, f))
    waiting = wait_for(lambda: made(0, "slot-made") and made(groups[lo], "copy-time") or
                       stream.proc.poll() is not None, 60)
    check(waiting and stream.proc.poll() is None and not made(groups[hi], "copy-time"),
          "%s: the coordinator's slot made first, then worker 1's; the other worker's waits for a "
          "transaction open there" % name, stream.text())
    try:
        sql("TRUNCATE w", db=db)
        sql("INSERT INTO w SELECT g, 1 FROM generate_series(1000, 1040) g", db=db)
    except psycopg2.Error as e:
        fail("%s: TRUNCATE w through the coordinator" % name, pg_error(e))
    held.commit()
    held.close()
    ended = wait_for(lambda: stream.proc.poll() is not None, 90)
    rc = stream.proc.poll() if ended else stream.stop()
    text = "\n".join(stream.text(8000).splitlines()[-40:])
    check(rc == 1 and "a TRUNCATE of w committed while the nodes' first copies were being made" in text
          and "hint: Start over when no TRUNCATE runs" in text,
          "%s: the TRUNCATE after the coordinator's slot and before a worker's is refused (exit status "
          "%s), not applied over that worker's copy" % (name, rc), text)
    ferret.stop()
    drop_db(db)


def merge_run(merge):
    """A shard's keys updated on the lower group's worker, moved to the higher
    one's, updated there, and so on (4 updates, 3 moves, the last update on
    the higher group), FerretDB stopped meanwhile.  Returns the _ids that
    differ, or None when the run could not be made."""
    name = "merge-" + ("on" if merge else "off")
    db = "bson_out_to_" + ("on" if merge else "off")
    target = "to_" + ("on" if merge else "off")
    create_db(db)
    sql("CREATE TABLE moves (id int PRIMARY KEY, v int, at text)", db=db)
    sql("SELECT create_distributed_table('moves', 'id', shard_count := 8)", db=db)
    sql("INSERT INTO moves SELECT g, 0, 'start' FROM generate_series(1, 400) g", db=db)
    if merge:
        # a table of the coordinator alone, distributed later in the run
        sql("CREATE TABLE loc (id int PRIMARY KEY, v text)", db=db)
        sql("INSERT INTO loc SELECT g, 'l' || g FROM generate_series(1, 50) g", db=db)
    lo, hi = worker_ports_by_group(db)
    shard = shard_on(db, lo, "moves")
    keys = [r[0] for r in sql("SELECT id FROM moves WHERE get_shard_id_for_distribution_column('moves', id) = %s "
                              "ORDER BY id LIMIT 5", db=db, args=(shard,))]
    ferret = Ferret(name)
    if not ferret.start():
        drop_db(db)
        return None
    stream = Stream(name, db, ferret, target, merge)
    stream.start(create=True)
    mdb = ferret.db(target)

    def copied():
        try:
            return mdb["moves"].count_documents({}) == 400
        except pymongo.errors.PyMongoError:
            return False
    ready = wait_for(lambda: stream.streaming() and copied() or stream.proc.poll() is not None, 90)
    if not check(ready and stream.proc.poll() is None, "%s: the first copy applied, every node streams" % name,
                 stream.text()):
        stream.stop()
        ferret.stop()
        drop_db(db)
        return None
    time.sleep(2)

    # FerretDB answers nothing: the applier waits, both workers' events pile up
    ferret.pause()
    steps_ok = True
    try:
        where, other = lo, hi
        for step in range(1, 5):
            sql("UPDATE moves SET v = %s, at = %s WHERE id = ANY(%s)", db=db,
                args=(step, "port %s" % where, keys))
            if step < 4:
                steps_ok = move(db, name, shard, where, other, "block_writes") and steps_ok
                where, other = other, where
        steps_ok = check(slots_caught_up(db), "%s: every node's stream has written the updates and moves "
                         "(slots confirmed), FerretDB stopped all along" % name, stream.text()) and steps_ok
        # a slot is confirmed once its events are durable in the open segment:
        # closed a second later (--segment-time), and only closed ones are read
        time.sleep(3)
    except psycopg2.Error as e:
        steps_ok = False
        fail("%s: the updates and moves" % name, pg_error(e))
    finally:
        ferret.resume()

    m_lo = shard_key(db, lo, 900000, "moves")
    m_hi = shard_key(db, hi, 900000, "moves")
    sql("INSERT INTO moves VALUES (%s, -1, 'marker'), (%s, -1, 'marker')", db=db, args=(m_lo, m_hi))
    applied = wait_applied(name, stream, mdb, [("moves", m_lo), ("moves", m_hi)])
    rc = stream.stop()
    check(rc == 0, "%s: a SIGTERM stops pg_bsonstream cleanly (exit status %s)" % (name, rc), stream.text())
    problems, n, differ = compare(db, mdb, "moves")
    if merge:
        check(not problems, "%s: the moved shard's keys, updated on both workers in turn: collection "
              "= table, byte for byte (%d documents)" % (name, n), "\n".join(problems))
        distributed_later(name, db, stream, mdb)
    else:
        info("with BSON_OUT_MERGE=off the comparison says:")
        for line in problems or ["  (no difference)"]:
            info("  " + line)
        wrong = sorted(differ) == sorted(keys) and all(
            bson.decode(mdb["moves"].find_one({"_id": k}).raw)["v"] == 3 for k in keys)
        check(steps_ok and applied and wrong,
              "%s: the same scenario with each node's stream applied on its own: the comparison FAILS as "
              "it must: the %d moved keys hold the lower group's last value (3), not the last one (4)"
              % (name, len(keys)), "differing _ids %s, moved keys %s" % (differ, keys))
    ferret.stop()
    drop_db(db)
    return differ


def main():
    signal.signal(signal.SIGTERM, stop_everything)
    os.umask(0o077)
    info("seed %d (CITUS_TO_SEED)" % SEED)
    try:
        if "main" in ONLY:
            t0 = time.time()
            main_run()
            info("main run: %.0f s" % (time.time() - t0))
        if "merge" in ONLY:
            t0 = time.time()
            merge_run(merge=False)
            merge_run(merge=True)
            info("merge runs: %.0f s" % (time.time() - t0))
        if "window" in ONLY:
            t0 = time.time()
            window_run()
            info("window run: %.0f s" % (time.time() - t0))
        if "nodes" in ONLY:
            t0 = time.time()
            nodes_run()
            info("nodes run: %.0f s" % (time.time() - t0))
    except Exception as e:   # a check that cannot go on is one failure, not a traceback alone
        import traceback
        fail("the checks stopped on an error: %s" % e, traceback.format_exc())
    finally:
        stop_everything()
    print("citus-to: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
