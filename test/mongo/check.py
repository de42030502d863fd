#!/usr/bin/env python3
"""Checks of pg_bsonstream --to, run by test/mongo/run.sh: PostgreSQL into a
real MongoDB-protocol server (FerretDB), through the MongoDB C driver.

The first copy and a random concurrent workload (a composite key, key
changes of rows with TOASTed columns under REPLICA IDENTITY DEFAULT and
FULL, rows of several MB split into fragments and merged, truncates) are
applied while pg_bsonstream is killed with SIGKILL, FerretDB is restarted,
PostgreSQL is restarted and the walsender is terminated; at the end every
collection, read back through the server, equals bson_document of its
table, document for document, byte for byte.  Then the key change of the
README's example keeps its body; writes the server refuses stop the run
(naming the event, the collection and the _id) or go to the dead-letter
file; a server that cannot be reached, bad URIs and a full buffer give
clear messages and the exit statuses of the other programs.

The last line is "mongo: N passed, M failed".
"""
import glob
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import bson
import psycopg2
import pymongo
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

BIN = os.environ["PG_BSONSTREAM"]
WORK = os.environ["WORK"]
PG_BINDIR = os.environ["PG_BINDIR"]
CLUSTER_DIR = os.environ["CLUSTER_DIR"]
RUNAS = os.environ.get("RUNAS", "").split()
FERRETDB = os.environ["FERRETDB"]
MJS_JAR = os.environ.get("MJS_JAR", "")
MPORT = int(os.environ.get("FERRETDB_PORT", "27317"))
DB = "xmongo"
# the default --batch-size (1000): pg_bsonstream sends FerretDB at most 49 writes a command itself
FERRET_OPTS = []
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
    return cond


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


# ------------------------------------------------------------------ FerretDB

class Ferret:
    """FerretDB on a loopback port, SQLite backend in a directory of its own."""

    def __init__(self, name, port=MPORT, extra=()):
        self.dir = os.path.join(WORK, name)
        self.port = port
        self.extra = list(extra)
        self.proc = None
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)

    def start(self):
        log = open(os.path.join(self.dir, "ferretdb.log"), "ab")
        self.proc = subprocess.Popen(
            [FERRETDB, "--listen-addr=127.0.0.1:%d" % self.port, "--handler=sqlite", "--state-dir=%s" % self.dir,
             "--sqlite-url=file:%s/" % os.path.join(self.dir, "data"), "--telemetry=disable",
             "--debug-addr=-", "--log-level=warn"] + self.extra,
            stdout=log, stderr=log)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                pymongo.MongoClient("127.0.0.1", self.port, serverSelectionTimeoutMS=300).admin.command("ping")
                return
            except pymongo.errors.PyMongoError:
                time.sleep(0.1)
        raise RuntimeError("FerretDB did not start: " + open(os.path.join(self.dir, "ferretdb.log")).read()[-2000:])

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def uri(self, db="target", extra=""):
        return "mongodb://127.0.0.1:%d/%s?serverSelectionTimeoutMS=2000%s" % (self.port, db, extra)

    def client(self):
        return pymongo.MongoClient("127.0.0.1", self.port, document_class=RawBSONDocument,
                                   serverSelectionTimeoutMS=5000)


class Cutter:
    """A TCP relay to FerretDB that can cut every connection (a reset, the server still up) and refuse
    new ones for a while (unreachable): the network between pg_bsonstream and MongoDB failing."""

    def __init__(self, upstream_port, port):
        self.upstream = upstream_port
        self.port = port
        self.lock = threading.Lock()
        self.socks = []
        self.blocked = False
        self.cuts = 0
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(64)
        self.done = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.done:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            if self.blocked:
                self.reset(c)
                continue
            try:
                u = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                self.reset(c)
                continue
            with self.lock:
                self.socks += [c, u]
            threading.Thread(target=self.pump, args=(c, u), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c), daemon=True).start()

    @staticmethod
    def reset(s):
        # shutdown first: it wakes the relay's thread blocked in recv() on the socket, which
        # would otherwise keep it open (a close alone neither ends the recv nor sends anything)
        for step in (lambda: s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                          b"\x01\x00\x00\x00\x00\x00\x00\x00"),
                     lambda: s.shutdown(socket.SHUT_RDWR), s.close):
            try:
                step()
            except OSError:
                pass

    def pump(self, a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            socks, self.socks = self.socks, []
        for s in socks:
            self.reset(s)
        self.cuts += 1

    def close(self):
        self.done = True
        self.cut()
        self.listener.close()

    def uri(self, db):
        return "mongodb://127.0.0.1:%d/%s?serverSelectionTimeoutMS=2000" % (self.port, db)


# ------------------------------------------------------------------ the tables

BODY = "".join(chr(ord("a") + (i * 7) % 26) for i in range(4000))

TABLES = {
    "m1": "CREATE TABLE m1 (id int PRIMARY KEY, v text, x float8, j jsonb, at timestamptz)",
    "m2": "CREATE TABLE m2 (a int, b text, c int, PRIMARY KEY (b, a))",
    # TOASTed bodies, kept out of line: an update that leaves them does not log them
    "docs": "CREATE TABLE docs (id int PRIMARY KEY, title text, body text); "
            "ALTER TABLE docs ALTER body SET STORAGE EXTERNAL",
    "docsf": "CREATE TABLE docsf (id int PRIMARY KEY, title text, body text); "
             "ALTER TABLE docsf ALTER body SET STORAGE EXTERNAL; ALTER TABLE docsf REPLICA IDENTITY FULL",
    # rows of several MB: their events under FULL are split into fragments
    "big": "CREATE TABLE big (id int PRIMARY KEY, n int, blob text); ALTER TABLE big REPLICA IDENTITY FULL",
}


def setup():
    sql("DROP DATABASE IF EXISTS " + DB, db="postgres")
    sql("CREATE DATABASE " + DB, db="postgres")
    sql("CREATE EXTENSION bson_out")
    for create in TABLES.values():
        sql(create)
    sql("INSERT INTO m1 SELECT g, 'r' || g, g / 8.0, jsonb_build_object('g', g, 'a', jsonb_build_array(g, 'x')), "
        "'2026-01-01'::timestamptz + g * interval '1 minute' FROM generate_series(1, 400) g")
    sql("INSERT INTO m2 SELECT g, 'b' || (g % 5), g FROM generate_series(1, 300) g")
    sql("INSERT INTO docs SELECT g, 't' || g, %s || g FROM generate_series(1, 60) g", (BODY,))
    sql("INSERT INTO docsf SELECT g, 't' || g, %s || g FROM generate_series(1, 60) g", (BODY,))
    sql("INSERT INTO big SELECT g, g, repeat(md5(g::text), 280000) FROM generate_series(1, 3) g")


class Workload:
    """Random changes from concurrent sessions, retried through restarts."""

    def __init__(self, workers=2, seed=1):
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
        table = rnd.choice(["m1", "m1", "m2", "docs", "docsf"])
        op = rnd.random()
        k = rnd.randint(1, 800)
        if table == "m1":
            if op < 0.4:
                cur.execute("INSERT INTO m1 VALUES (%s, %s, %s, %s, now()) ON CONFLICT (id) DO UPDATE "
                            "SET v = excluded.v", (k, "v%d" % rnd.randint(0, 10 ** 6), rnd.random() * 1000,
                                                     '{"a": [%d, "x"], "o": {"p": true}}' % k))
            elif op < 0.8:
                cur.execute("UPDATE m1 SET v = %s, x = x + 1 WHERE id = %s", ("u%d" % rnd.randint(0, 999), k))
            else:
                cur.execute("DELETE FROM m1 WHERE id = %s", (k,))
        elif table == "m2":
            b = "b%d" % (k % 5)
            if op < 0.4:
                cur.execute("INSERT INTO m2 VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (k, b, k))
            elif op < 0.8:
                cur.execute("UPDATE m2 SET c = c + 1 WHERE a = %s AND b = %s", (k, b))
            elif op < 0.998:
                cur.execute("DELETE FROM m2 WHERE a = %s AND b = %s", (k, b))
            else:
                cur.execute("TRUNCATE m2")
        elif table in ("docs", "docsf"):
            k = rnd.randint(1, 120)
            if op < 0.25:
                cur.execute("INSERT INTO " + table + " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                            (k, "n%d" % k, BODY + str(rnd.randint(0, 99))))
            elif op < 0.6:
                # the body left as it is: not in the WAL under DEFAULT
                cur.execute("UPDATE " + table + " SET title = %s WHERE id = %s", ("u%d" % rnd.randint(0, 999), k))
            elif op < 0.7:
                # a key change that leaves the body: the insert lacks it (DEFAULT)
                cur.execute("UPDATE " + table + " SET id = %s WHERE id = %s AND NOT EXISTS "
                            "(SELECT 1 FROM " + table + " WHERE id = %s)", (k + 1000, k, k + 1000))
                cur.execute("UPDATE " + table + " SET id = %s WHERE id = %s AND NOT EXISTS "
                            "(SELECT 1 FROM " + table + " WHERE id = %s)", (k, k + 1000, k))
            else:
                cur.execute("DELETE FROM " + table + " WHERE id = %s", (k,))

    def run(self, seed):
        rnd = random.Random(seed)
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = psycopg2.connect(dbname=DB)
                cur = conn.cursor()
                for _ in range(rnd.randint(1, 4)):
                    self.one(cur, rnd)
                if rnd.random() < 0.1:
                    conn.rollback()
                else:
                    conn.commit()
                    self.txns += 1
                # a steady load FerretDB keeps up with (its $set scans the collection)
                time.sleep(0.01 + rnd.random() * 0.02)
            except psycopg2.Error:
                try:
                    conn.close()
                except Exception:
                    pass
                conn = None
                time.sleep(0.1)
        if conn is not None:
            conn.close()


def tables_now(tables):
    out = {}
    conn = connect()
    cur = conn.cursor()
    for t in tables:
        cur.execute("SELECT bson_document(t) FROM %s t" % t)
        docs = {}
        for (raw,) in cur.fetchall():
            raw = bytes(raw)
            d = bson.decode(raw, codec_options=RAW)
            docs[bson.encode({"k": d["_id"]})] = raw
        out[t] = docs
    conn.close()
    return out


def collections_now(ferret, db, tables):
    client = ferret.client()
    out = {}
    for t in tables:
        docs = {}
        for d in client[db][t].find():
            docs[bson.encode({"k": d["_id"]})] = d.raw
        out[t] = docs
    client.close()
    return out


def compare(name, ferret, db, tables):
    """Every collection read back through the server equals bson_document of its table."""
    now = tables_now(tables)
    got = collections_now(ferret, db, tables)
    bad = []
    for t in tables:
        missing = [k for k in now[t] if k not in got[t]]
        differ = [k for k in now[t] if k in got[t] and got[t][k] != now[t][k]]
        surplus = [k for k in got[t] if k not in now[t]]
        if missing or differ or surplus:
            bad.append("%s: %d missing, %d different, %d surplus (of %d)"
                       % (t, len(missing), len(differ), len(surplus), len(now[t])))
            for k in differ[:2]:
                bad.append("  table:      %r" % bson.decode(now[t][k])) if len(now[t][k]) < 600 else None
                bad.append("  collection: %r" % bson.decode(got[t][k])) if len(got[t][k]) < 600 else None
    return check(not bad, "%s: every collection read back through the server equals its table byte for "
                 "byte (%s)" % (name, ", ".join("%s %d" % (t, len(now[t])) for t in tables)),
                 "\n".join(b for b in bad if b))


def lsn_value(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def current_lsn():
    return sql("SELECT pg_current_wal_lsn()::text")[0][0]


def run_client(slot, out, to, *extra, create=False, timeout=900, endpos=None):
    """pg_bsonstream to completion (--endpos): (exit status, stderr)."""
    args = [BIN, "-d", DB, "--slot", slot, "-o", out, "--to", to, "--segment-time", "0.3",
            "--segment-size", "64kB", "--status-interval", "1", "--no-sync"] + FERRET_OPTS + list(extra)
    if create:
        args += ["--create-slot", "--initial-copy"]
    if endpos:
        args += ["--endpos", endpos]
    r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return r.returncode, r.stderr


def start_client(slot, out, to, *extra, create=False):
    args = [BIN, "-d", DB, "--slot", slot, "-o", out, "--to", to, "--segment-time", "0.3",
            "--segment-size", "64kB", "--status-interval", "1"] + FERRET_OPTS + list(extra)
    if create:
        args += ["--create-slot", "--initial-copy", "--jobs", "2"]
    err = open(os.path.join(WORK, slot + ".stderr"), "ab")
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)


def terminate(proc, timeout=120):
    """SIGTERM, and the exit status ("hung" after timeout s, then killed) and how long it took."""
    started = time.time()
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    return rc, time.time() - started


def wait_slot_free(slot, timeout=30):
    """Until the walsender of a killed client has let the slot go."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if sql("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)) == [(False,)]:
            return
        time.sleep(0.1)


def restart_postgres():
    subprocess.run(RUNAS + [os.path.join(PG_BINDIR, "pg_ctl"), "-D", os.path.join(CLUSTER_DIR, "data"),
                            "-m", "fast", "-w", "restart"], check=True, stdout=subprocess.DEVNULL)


def progress_doc(ferret, db, slot, coll="bson_out_progress"):
    c = pymongo.MongoClient("127.0.0.1", ferret.port, serverSelectionTimeoutMS=5000)
    try:
        return c[db][coll].find_one({"_id": slot})
    finally:
        c.close()


# ------------------------------------------------------------------ scenarios

def main_run(ferret):
    """The first copy and a random workload, through kills and restarts on every side."""
    out = os.path.join(WORK, "main")
    slot = "to_mongo"
    tables = list(TABLES)
    wl = Workload(seed=7)
    wl.start()
    time.sleep(0.5)
    proc = start_client(slot, out, ferret.uri(), create=True)
    rnd = random.Random(11)
    events = []
    for step in ["kill", "ferret", "postgres", "walsender", "kill", "ferret-kill", "kill"]:
        time.sleep(2 + rnd.random() * 2)
        if step == "kill":
            proc.kill()
            proc.wait()
            wait_slot_free(slot)
            proc = start_client(slot, out, ferret.uri())
        elif step == "ferret":
            ferret.stop()
            time.sleep(1 + rnd.random())
            ferret.start()
        elif step == "ferret-kill":
            ferret.stop(signal.SIGKILL)
            time.sleep(1)
            ferret.start()
        elif step == "postgres":
            restart_postgres()
        elif step == "walsender":
            sql("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        events.append(step)
        if len(events) == 2:
            # rows of 9 MB: an update of one column (9 MB), and of the large one, whose
            # event of 18 MB is split into two fragments and merged again
            sql("UPDATE big SET n = n + 1 WHERE id = 1")
            sql("UPDATE big SET n = n + 1, blob = repeat(md5('new'), 280000) WHERE id = 2")
    wl.finish()
    end = current_lsn()
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    wait_slot_free(slot)
    try:
        rc = proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    check(rc == 0, "main: SIGTERM after %d transactions through %s: exit 0" % (wl.txns, ", ".join(events)),
          "exit status %s\n%s" % (rc, open(os.path.join(WORK, slot + ".stderr")).read()[-3000:]))
    rc, err = run_client(slot, out, ferret.uri(), endpos=end)
    check(rc == 0, "main: a last run to --endpos applies the rest", err[-3000:])
    compare("main", ferret, "target", tables)
    log = open(os.path.join(WORK, slot + ".stderr")).read() + err
    check("the first copy is in MongoDB (5 collections)" in log, "main: the first copy loaded, said once",
          log[-2000:])
    check(re.search(r"MongoDB: .*; retrying", log) and "MongoDB answers again" in log,
          "main: FerretDB's restarts were said and retried", log[-3000:])
    left = glob.glob(os.path.join(out, "changes", "*.bson"))
    check(not left and not os.path.exists(os.path.join(out, "initial")),
          "main: the applied segments and the first copy removed", left)
    p = progress_doc(ferret, "target", slot)
    check(p is not None and p.get("initial") == "done" and re.fullmatch(r"[0-9A-F]{32}", p.get("token", "")),
          "main: the progress document holds the position applied", p)
    stash = [d for d in ferret.client()["target"]["bson_out_progress"].find() if d["_id"] != slot]
    check(not stash, "main: no key change left in the progress collection", stash)
    sql("SELECT pg_drop_replication_slot(%s)", (slot,))


def cut_run(ferret):
    """Connections to MongoDB cut while changes are applied, and MongoDB unreachable for a while:
    retried, nothing lost or doubled."""
    sql("CREATE TABLE ct (id text PRIMARY KEY, n int, v text)")
    sql("INSERT INTO ct SELECT 'k' || g, 0, 'v' FROM generate_series(1, 200) g")
    cutter = Cutter(ferret.port, ferret.port + 1)
    out = os.path.join(WORK, "ct")
    slot = "ct"
    base = ("--include-tables", "public.ct")
    proc = start_client(slot, out, cutter.uri("ctdb"), *base, create=True)
    rnd = random.Random(5)
    steps = []
    for r in range(24):
        lo = 1000 + r * 20
        sql("INSERT INTO ct SELECT 'k' || g, 0, 'new' FROM generate_series(%s, %s) g", (lo, lo + 19))
        sql("UPDATE ct SET n = n + 1, v = v || %s WHERE id IN (SELECT id FROM ct ORDER BY random() LIMIT 15)",
            (str(r),))
        sql("DELETE FROM ct WHERE id IN (SELECT id FROM ct ORDER BY random() LIMIT 6)")
        time.sleep(0.2 + rnd.random() * 0.4)
        if r % 3 == 1:
            cutter.cut()
            steps.append("cut")
        if r == 12:
            # changes made while MongoDB cannot be reached wait in the segments
            cutter.blocked = True
            cutter.cut()
            sql("UPDATE ct SET n = n + 1 WHERE id IN (SELECT id FROM ct ORDER BY random() LIMIT 15)")
            time.sleep(5)
            cutter.blocked = False
            steps.append("unreachable 5 s")
    # the last transaction commits after end: applied when the token is past end
    # (an insert of a new row: an update could find its row deleted, and then
    # make no event at all)
    end = current_lsn()
    sql("INSERT INTO ct VALUES ('the-end', 0, 'end')")
    deadline = time.time() + 300
    applied = None
    while time.time() < deadline:
        p = progress_doc(ferret, "ctdb", slot)
        if p and re.fullmatch(r"[0-9A-F]{32}", p.get("token", "")) and int(p["token"][:16], 16) >= lsn_value(end):
            applied = p["token"]
            break
        time.sleep(0.5)
    time.sleep(1.5)
    status = None
    try:
        with open(os.path.join(out, "status.json")) as f:
            status = json.load(f)
    except (OSError, ValueError) as e:
        status = repr(e)
    m = status.get("mongodb", {}) if isinstance(status, dict) else {}
    check(isinstance(status, dict) and status.get("slot") == slot and status.get("pid") == proc.pid
          and status["received"]["events"] > 0 and re.fullmatch(r"[0-9A-F]+/[0-9A-F]{8}", status["serverLsn"])
          and m.get("applied", 0) > 0 and m.get("token") == applied and m.get("caughtUp") is True
          and m.get("bufferBytes") == 0 and m.get("state") == "" and m.get("lagSeconds") == 0,
          "cut: DIR/status.json, rewritten every second, says what was received and applied, caught up",
          status)
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    cutter.close()
    log = open(os.path.join(WORK, slot + ".stderr")).read()
    check(applied is not None and rc == 0,
          "cut: every change applied through %d cut connections and MongoDB unreachable for 5 s, then exit 0 "
          "at SIGTERM" % steps.count("cut"), "applied %s, exit %s\n%s" % (applied, rc, log[-3000:]))
    check(re.search(r"MongoDB: .*; retrying", log) and "MongoDB answers again" in log,
          "cut: MongoDB unreachable was said and retried", log[-3000:])
    compare("cut", ferret, "ctdb", ["ct"])
    sql("SELECT pg_drop_replication_slot(%s)", (slot,))
    sql("DROP TABLE ct")


def tls_auth_run(ferret):
    """TLS and SCRAM authentication as the connection string gives them; a wrong password or a
    server certificate no authority vouches for: a clear error before the slot is made."""
    d = os.path.join(WORK, "tls")
    os.makedirs(d, exist_ok=True)

    def ssl(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=bson_out test CA")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    ssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "ext")
    tport = ferret.port + 3
    secure = Ferret("ferret-tls", port=ferret.port + 2, extra=[
        "--listen-tls=127.0.0.1:%d" % tport, "--listen-tls-cert-file=" + os.path.join(d, "server.pem"),
        "--listen-tls-key-file=" + os.path.join(d, "server.key"), "--test-enable-new-auth",
        "--setup-database=admin", "--setup-username=bson", "--setup-password=s3cret"])
    secure.start()
    try:
        ca = os.path.join(d, "ca.pem")

        def uri(user, ca_file=ca):
            return ("mongodb://%s@127.0.0.1:%d/tadb?tls=true&authSource=admin&serverSelectionTimeoutMS=3000%s"
                    % (user, tport, "&tlsCAFile=" + ca_file if ca_file else ""))
        sql("CREATE TABLE ta (id text PRIMARY KEY, v text)")
        sql("INSERT INTO ta VALUES ('a', 'one'), ('b', 'two')")
        out = os.path.join(WORK, "ta")
        base = ("--include-tables", "public.ta")
        for name, u, ca_file, want in (
                ("a wrong password", "bson:wrong", ca, r"could not reach MongoDB at --to: .*[Aa]uthentication failed"
                                                       r".*\nhint: Check the user name, the password and authSource"),
                ("a server certificate no authority given vouches for", "bson:s3cret", None,
                 r"could not reach MongoDB at --to: .*(certificate|TLS|SSL).*\nhint: Check tlsCAFile")):
            rc, err = run_client("ta", out, uri(u, ca_file), *base, create=True, endpos=current_lsn(), timeout=120)
            slot = sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'ta'")[0][0]
            check(rc == 1 and re.search(want, err, re.S) and slot == 0,
                  "tls/auth: %s: exit 1, said, no slot made" % name, "exit %s, slots %s: %s" % (rc, slot, err[-1500:]))
        rc, err = run_client("ta", out, uri("bson:s3cret"), *base, create=True, endpos=current_lsn())
        check(rc == 0, "tls/auth: the first copy over TLS with SCRAM authentication", err[-1500:])
        sql("UPDATE ta SET v = v || '!'")
        sql("INSERT INTO ta VALUES ('c', 'three')")
        rc, err = run_client("ta", out, uri("bson:s3cret"), *base, endpos=current_lsn())
        c = pymongo.MongoClient(uri("bson:s3cret"), document_class=RawBSONDocument)
        got = {bson.decode(x.raw)["_id"]: x.raw for x in c["tadb"]["ta"].find()}
        c.close()
        want = {bson.decode(bytes(r[0]))["_id"]: bytes(r[0]) for r in sql("SELECT bson_document(t) FROM ta t")}
        check(rc == 0 and got == want, "tls/auth: the changes applied over TLS; the collection equals the table",
              "exit %s, %r / %r\n%s" % (rc, sorted(got), sorted(want), err[-1500:]))
        # the password from a file only its owner reads, not from the command line
        pwfile = os.path.join(d, "pw")
        with open(pwfile, "w") as f:
            f.write("s3cret\n")
        os.chmod(pwfile, 0o644)
        rc, err = run_client("ta", out, uri("bson"), *base, "--to-password-file", pwfile, endpos=current_lsn())
        check(rc == 2 and "has group or world access" in err and "chmod 0600" in err,
              "tls/auth: a --to-password-file others may read is refused (exit 2)", "exit %s: %s" % (rc, err[-800:]))
        os.chmod(pwfile, 0o600)
        sql("INSERT INTO ta VALUES ('d', 'four')")
        rc, err = run_client("ta", out, uri("bson"), *base, "--to-password-file", pwfile, endpos=current_lsn())
        c = pymongo.MongoClient(uri("bson:s3cret"), document_class=RawBSONDocument)
        n = c["tadb"]["ta"].count_documents({})
        c.close()
        check(rc == 0 and n == 4 and "s3cret" not in err,
              "tls/auth: the password from --to-password-file (0600), the URI without it",
              "exit %s, %d documents: %s" % (rc, n, err[-800:]))
        rc, err = run_client("ta", out, uri("bson:wrong"), *base, endpos=current_lsn(), timeout=120)
        check(rc == 1 and "wrong" not in err, "tls/auth: a wrong password is not printed", err[-800:])
        sql("SELECT pg_drop_replication_slot('ta')")
        sql("DROP TABLE ta")
    finally:
        secure.stop()


def key_change_run(ferret):
    """The README's case: a key change of a row with a TOASTed body under DEFAULT keeps the body."""
    sql("CREATE TABLE kc (id int PRIMARY KEY, title text, body text)")
    sql("ALTER TABLE kc ALTER body SET STORAGE EXTERNAL")
    sql("INSERT INTO kc VALUES (1, 't1', %s)", (BODY,))
    out = os.path.join(WORK, "kc")
    rc, err = run_client("kc", out, ferret.uri("kcdb"), "--include-tables", "public.kc", create=True,
                         endpos=current_lsn())
    check(rc == 0, "key change: first copy", err)
    sql("UPDATE kc SET id = 2 WHERE id = 1")
    rc, err = run_client("kc", out, ferret.uri("kcdb"), "--include-tables", "public.kc", endpos=current_lsn())
    c = ferret.client()
    docs = [bson.decode(d.raw) for d in c["kcdb"]["kc"].find()]
    c.close()
    check(rc == 0 and docs == [{"_id": 2, "id": 2, "title": "t1", "body": BODY}],
          "key change: UPDATE kc SET id = 2 WHERE id = 1 ends with {_id: 2, id: 2, title, body}: the body kept",
          "%s %s %s" % (rc, err[-1000:], [{k: (v if k != "body" else len(v)) for k, v in d.items()} for d in docs]))
    compare("key change", ferret, "kcdb", ["kc"])
    sql("SELECT pg_drop_replication_slot('kc')")
    sql("DROP TABLE kc")


def refusals_run(ferret):
    """Values FerretDB does not store: the run stops naming the event, or they go to the dead-letter file."""
    sql("CREATE TABLE rf (id int PRIMARY KEY, x float8, j jsonb)")
    sql("INSERT INTO rf VALUES (1, 1.5, '{}')")
    out = os.path.join(WORK, "rf")
    base = ("--include-tables", "public.rf")
    rc, err = run_client("rf", out, ferret.uri("rfdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0, "refusals: first copy", err)
    sql("INSERT INTO rf VALUES (2, 'NaN', '{}')")
    sql("INSERT INTO rf VALUES (3, 3, '{}')")
    end = current_lsn()
    rc, err = run_client("rf", out, ferret.uri("rfdb"), *base, endpos=end)
    check(rc == 1 and re.search(r"MongoDB refused the change of _id 2 in rfdb\.rf \(event [0-9A-F]{32}\)", err)
          and "--dead-letter" in err,
          "refusals: NaN, which FerretDB refuses, stops the run naming the _id, the collection and the event",
          "exit %s: %s" % (rc, err[-2000:]))
    rc2, err2 = run_client("rf", out, ferret.uri("rfdb"), *base, endpos=end)
    check(rc2 == 1 and "_id 2" in err2, "refusals: the next run stops there again", err2[-1000:])
    dl = os.path.join(WORK, "rf.dead.bson")
    sql("INSERT INTO rf VALUES (4, 4, '{\"a.b\": 1}')")
    sql("INSERT INTO rf VALUES (5, 5, '[[1, 2]]')")
    sql("INSERT INTO rf VALUES (6, 6, '{}')")
    rc, err = run_client("rf", out, ferret.uri("rfdb"), *base, "--dead-letter", dl, endpos=current_lsn())
    dead = []
    if os.path.exists(dl):
        with open(dl, "rb") as f:
            dead = list(bson.decode_file_iter(f))
    c = ferret.client()
    ids = sorted(bson.decode(d.raw)["_id"] for d in c["rfdb"]["rf"].find())
    c.close()
    dead_ids = sorted(d.get("_id") for d in dead)
    check(rc == 0 and 2 in dead_ids and ids == sorted(set([1, 3, 4, 5, 6]) - set(dead_ids)) and
          all(d["event"]["documentKey"]["_id"] == d["_id"] and d["error"]["message"] for d in dead),
          "refusals: with --dead-letter the refused events are in the file (event, error) and the rest applied",
          "exit %s, collection %s, dead-letter %s\n%s" % (rc, ids, dead_ids, err[-1500:]))
    sql("SELECT pg_drop_replication_slot('rf')")
    sql("DROP TABLE rf")


def partitions_run(ferret):
    """A TRUNCATE of some partitions removes exactly their documents: the event's partitionFilter, on the server."""
    sql("""CREATE TABLE pl (id int, region text, v text) PARTITION BY LIST (region);
           CREATE TABLE pl_eu PARTITION OF pl FOR VALUES IN ('eu', 'uk');
           CREATE TABLE pl_jp PARTITION OF pl FOR VALUES IN ('jp');
           CREATE TABLE pl_none PARTITION OF pl FOR VALUES IN (NULL, 'x');
           CREATE TABLE pl_other PARTITION OF pl DEFAULT;
           ALTER TABLE pl REPLICA IDENTITY FULL;
           ALTER TABLE pl_eu REPLICA IDENTITY FULL; ALTER TABLE pl_jp REPLICA IDENTITY FULL;
           ALTER TABLE pl_none REPLICA IDENTITY FULL; ALTER TABLE pl_other REPLICA IDENTITY FULL;
           CREATE TABLE pr (a int, b bigint, v text, PRIMARY KEY (a, b)) PARTITION BY RANGE (a, b);
           CREATE TABLE pr_1 PARTITION OF pr FOR VALUES FROM (1, MINVALUE) TO (2, 10);
           CREATE TABLE pr_2 PARTITION OF pr FOR VALUES FROM (2, 10) TO (3, 0);
           CREATE TABLE pr_d PARTITION OF pr DEFAULT;
           CREATE TABLE pe (id text, at timestamptz, region text, PRIMARY KEY (id, at, region))
               PARTITION BY RANGE (at);
           CREATE TABLE pe_2025 PARTITION OF pe FOR VALUES FROM ('2025-01-01 00:00:00+00')
               TO ('2026-01-01 00:00:00+00') PARTITION BY LIST (region);
           CREATE TABLE pe_2025_eu PARTITION OF pe_2025 FOR VALUES IN ('eu');
           CREATE TABLE pe_2025_us PARTITION OF pe_2025 FOR VALUES IN ('us');
           CREATE TABLE pe_2026 PARTITION OF pe FOR VALUES FROM ('2026-01-01 00:00:00+00') TO (MAXVALUE);
           CREATE TABLE pe_old PARTITION OF pe FOR VALUES FROM (MINVALUE) TO ('2025-01-01 00:00:00+00');
           CREATE TABLE ph (id text PRIMARY KEY) PARTITION BY HASH (id);
           CREATE TABLE ph_0 PARTITION OF ph FOR VALUES WITH (MODULUS 2, REMAINDER 0);
           CREATE TABLE ph_1 PARTITION OF ph FOR VALUES WITH (MODULUS 2, REMAINDER 1)""")
    fill = """INSERT INTO pl SELECT g, (ARRAY['eu', 'uk', 'jp', NULL, 'x', 'fr', 'us'])[1 + g %% 7], 'v' || g
                  FROM generate_series(%(lo)s, %(hi)s) g;
              INSERT INTO pr SELECT 1 + g %% 4, g, 'v' || g FROM generate_series(%(lo)s, %(hi)s) g;
              INSERT INTO pr SELECT 2, g %% 20, 'w' || g FROM generate_series(%(lo)s, %(hi)s) g
                  ON CONFLICT DO NOTHING;
              INSERT INTO pe SELECT 'k' || g, '2024-12-31 23:59:59.999+00'::timestamptz + g * interval '30 days',
                  (ARRAY['eu', 'us'])[1 + g %% 2] FROM generate_series(%(lo)s, %(hi)s) g;
              INSERT INTO ph SELECT 'h' || g FROM generate_series(%(lo)s, %(hi)s) g"""
    sql(fill, {"lo": 0, "hi": 59})
    tables = ["pl", "pr", "pe"]
    out = os.path.join(WORK, "pt")
    base = ("--include-tables", "public.pl, public.pr, public.pe")
    rc, err = run_client("pt", out, ferret.uri("ptdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0, "partitions: first copy", err)
    before = tables_now(tables)
    sql("TRUNCATE pl_eu, pl_none")
    sql("TRUNCATE pr_1")
    sql("TRUNCATE pe_2025_eu")
    sql(fill, {"lo": 60, "hi": 99})
    sql("TRUNCATE pl_other")
    sql("TRUNCATE pr_d")
    sql("TRUNCATE pe_2025")
    now = tables_now(tables)
    check(all(0 < len(now[t]) < len(before[t]) + 40 for t in tables),
          "partitions: the truncates leave documents of the other partitions to keep",
          repr({t: (len(before[t]), len(now[t])) for t in tables}))
    rc, err = run_client("pt", out, ferret.uri("ptdb"), *base, endpos=current_lsn())
    check(rc == 0, "partitions: the truncates applied", err[-2000:])
    compare("partitions: list (NULL, default), multi-column range (MINVALUE, default), two levels",
            ferret, "ptdb", tables)
    # hash partitions: no filter says which documents are theirs
    dl = os.path.join(WORK, "pt.dead.bson")
    hbase = ("--include-tables", "public.ph")
    rc, err = run_client("ph", out + "h", ferret.uri("ptdb"), *hbase, create=True, endpos=current_lsn())
    check(rc == 0, "partitions: hash partitions' first copy", err)
    sql("TRUNCATE ph_0")
    end = current_lsn()
    rc, err = run_client("ph", out + "h", ferret.uri("ptdb"), *hbase, endpos=end)
    check(rc == 1 and "partitionFilter" in err and "ptdb.ph" in err,
          "partitions: a truncate of a hash partition stops the run, naming the collection",
          "exit %s: %s" % (rc, err[-1500:]))
    rc, err = run_client("ph", out + "h", ferret.uri("ptdb"), *hbase, "--dead-letter", dl, endpos=end)
    dead = []
    if os.path.exists(dl):
        with open(dl, "rb") as f:
            dead = list(bson.decode_file_iter(f))
    check(rc == 0 and len(dead) == 1 and dead[0]["event"]["operationType"] == "truncate"
          and dead[0]["event"]["partitions"] == ["ph_0"],
          "partitions: with --dead-letter the hash partition's truncate is in the file",
          "exit %s, %r\n%s" % (rc, dead, err[-1500:]))
    for slot in ("pt", "ph"):
        sql("SELECT pg_drop_replication_slot(%s)", (slot,))
    sql("DROP TABLE pl, pr, pe, ph")


def read_dead(path):
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        return list(bson.decode_file_iter(f))


def ids_of(ferret, db, coll):
    c = ferret.client()
    try:
        return sorted(bson.decode(d.raw)["_id"] for d in c[db][coll].find())
    finally:
        c.close()


def oversize_run(ferret):
    """Documents over 16 MiB, in the first copy and in a change: refused, named, or dead-lettered."""
    big = 17 * 1024 * 1024
    sql("CREATE TABLE ob (id text PRIMARY KEY, body text)")
    sql("ALTER TABLE ob ALTER body SET STORAGE EXTERNAL")
    sql("INSERT INTO ob VALUES ('a', 'x'), ('huge1', repeat('y', %s)), ('c', 'z')", (big,))
    out = os.path.join(WORK, "ob")
    base = ("--include-tables", "public.ob")
    rc, err = run_client("ob", out, ferret.uri("obdb"), *base, create=True, endpos=current_lsn())
    check(rc == 1 and "huge1" in err and "obdb.ob" in err and "--dead-letter" in err,
          "oversize: a row whose document is over 16 MiB stops the first copy, naming the _id and the collection",
          "exit %s: %s" % (rc, err[-1500:]))
    sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'ob'")
    subprocess.run(["rm", "-rf", out])
    c = ferret.client()
    c.drop_database("obdb")
    c.close()
    dl = os.path.join(WORK, "ob.dead.bson")
    rc, err = run_client("ob", out, ferret.uri("obdb"), *base, "--dead-letter", dl, create=True,
                         endpos=current_lsn())
    dead = read_dead(dl)
    check(rc == 0 and ids_of(ferret, "obdb", "ob") == ["a", "c"] and len(dead) == 1
          and dead[0].get("_id") == "huge1" and len(dead[0]["document"]["body"]) == big,
          "oversize: with --dead-letter the first copy's document over 16 MiB is in the file, the others copied",
          "exit %s, dead %r\n%s" % (rc, [d.get("_id") for d in dead], err[-1500:]))
    # a change: the event over 16 MiB is split by the plugin and merged by the applier
    sql("INSERT INTO ob VALUES ('huge2', repeat('w', %s))", (big,))
    sql("INSERT INTO ob VALUES ('e', 'v')")
    end = current_lsn()
    rc, err = run_client("ob", out, ferret.uri("obdb"), *base, endpos=end)
    check(rc == 1 and '_id "huge2"' in err and "obdb.ob" in err,
          "oversize: a change whose document is over 16 MiB stops the run, naming the _id",
          "exit %s: %s" % (rc, err[-1500:]))
    rc, err = run_client("ob", out, ferret.uri("obdb"), *base, "--dead-letter", dl, endpos=end)
    dead = read_dead(dl)
    check(rc == 0 and ids_of(ferret, "obdb", "ob") == ["a", "c", "e"] and len(dead) == 2
          and dead[1].get("_id") == "huge2" and len(dead[1]["event"]["fullDocument"]["body"]) == big,
          "oversize: with --dead-letter the merged event is in the file, whole, and the next change applied",
          "exit %s, dead %r\n%s" % (rc, [d.get("_id") for d in dead], err[-1500:]))
    sql("SELECT pg_drop_replication_slot('ob')")
    sql("DROP TABLE ob")


def unique_run(ferret):
    """Unique indexes: made by the first copy; a duplicate key (a document written into the target
    by something else) refused and named, or dead-lettered; an index the server refuses likewise."""
    sql("CREATE TABLE uq (id text PRIMARY KEY, code text NOT NULL UNIQUE, n int)")
    sql("INSERT INTO uq VALUES ('a', 'x', 0), ('b', 'y', 0)")
    out = os.path.join(WORK, "uq")
    base = ("--include-tables", "public.uq")
    rc, err = run_client("uq", out, ferret.uri("uqdb"), *base, create=True, endpos=current_lsn())
    c = ferret.client()
    unique = [i for i in c["uqdb"]["uq"].list_indexes() if i.get("unique")]
    c["uqdb"]["uq"].insert_one({"_id": "zz", "code": "q"})
    c.close()
    check(rc == 0 and len(unique) == 1 and dict(unique[0]["key"]) == {"code": 1},
          "unique: the first copy creates the unique index on code", "%s %r %s" % (rc, unique, err[-800:]))
    sql("INSERT INTO uq VALUES ('c', 'q', 0)")
    sql("INSERT INTO uq VALUES ('d', 'r', 0)")
    end = current_lsn()
    rc, err = run_client("uq", out, ferret.uri("uqdb"), *base, endpos=end)
    check(rc == 1 and 'MongoDB refused the change of _id "c" in uqdb.uq' in err and "11000" in err,
          "unique: a duplicate key on the unique index stops the run (11000), naming the _id",
          "exit %s: %s" % (rc, err[-1500:]))
    dl = os.path.join(WORK, "uq.dead.bson")
    rc, err = run_client("uq", out, ferret.uri("uqdb"), *base, "--dead-letter", dl, endpos=end)
    dead = read_dead(dl)
    check(rc == 0 and [d.get("_id") for d in dead] == ["c"] and dead[0]["error"]["code"] == 11000
          and ids_of(ferret, "uqdb", "uq") == ["a", "b", "d", "zz"],
          "unique: with --dead-letter the refused change is in the file and the later ones applied",
          "exit %s, dead %r\n%s" % (rc, dead, err[-1500:]))
    sql("SELECT pg_drop_replication_slot('uq')")
    # a nullable unique column: its index has a partialFilterExpression, which FerretDB refuses
    sql("CREATE TABLE un (id text PRIMARY KEY, email text UNIQUE)")
    sql("INSERT INTO un VALUES ('a', 'a@x'), ('b', NULL), ('c', NULL)")
    base = ("--include-tables", "public.un")
    rc, err = run_client("un", out + "n", ferret.uri("undb"), *base, create=True, endpos=current_lsn())
    check(rc == 1 and "MongoDB refused index un_email_key of the first copy's undb.un" in err
          and "--dead-letter" in err,
          "unique: an index the server refuses (FerretDB: partialFilterExpression) stops the first copy, naming it",
          "exit %s: %s" % (rc, err[-1500:]))
    dl = os.path.join(WORK, "un.dead.bson")
    rc, err = run_client("un", out + "n", ferret.uri("undb"), *base, "--dead-letter", dl, endpos=current_lsn())
    dead = read_dead(dl)
    check(rc == 0 and len(dead) == 1 and "createIndexes" in dead[0]
          and ids_of(ferret, "undb", "un") == ["a", "b", "c"],
          "unique: with --dead-letter the refused index is in the file and the documents copied",
          "exit %s, dead %r\n%s" % (rc, dead, err[-1500:]))
    for slot in ("un",):
        sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (slot,))
    sql("DROP TABLE uq, un")


def symbols_run(ferret):
    """pg_bsonstream defines no symbol that the MongoDB C driver's libraries export: the driver would
    call ours (its SCRAM authentication crashed in our BSON reader's bson_iter_binary); and it leaves
    no /dev/shm/mongoc-<pid> file behind when killed."""
    def defined(path, dynamic):
        r = subprocess.run(["nm", "--defined-only"] + (["-D"] if dynamic else []) + [path],
                           capture_output=True, text=True, check=True)
        return {l.split()[-1].split("@")[0] for l in r.stdout.splitlines()
                if len(l.split()) >= 3 and l.split()[1] in "TDBRVW"}
    libs = set()
    ldd = subprocess.run(["ldd", BIN], capture_output=True, text=True).stdout
    for lib in re.findall(r"=> (\S*lib(?:bson|mongoc)-1\.0\.so\S*)", ldd):
        libs |= defined(lib, True)
    ours = defined(BIN, False)
    clash = sorted(ours & libs)
    check(len(libs) > 100 and not clash,
          "symbols: pg_bsonstream defines none of the %d symbols libbson and libmongoc export" % len(libs),
          "in both: %s" % clash)
    before = set(glob.glob("/dev/shm/mongoc-*"))
    p = subprocess.Popen([BIN, "-d", DB, "--slot", "nosuch", "-o", os.path.join(WORK, "shm"), "--to",
                          "mongodb://127.0.0.1:1/x?serverSelectionTimeoutMS=60000"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    p.kill()
    p.wait()
    left = sorted(set(glob.glob("/dev/shm/mongoc-*")) - before)
    check(not left, "symbols: a kill -9 leaves no /dev/shm/mongoc-<pid> file behind", left)


def errors_run(ferret):
    out = os.path.join(WORK, "err")
    base = [BIN, "-d", DB, "--slot", "e1", "-o", out]

    def run(extra):
        r = subprocess.run(base + extra, capture_output=True, text=True, timeout=60)
        return r.returncode, r.stderr

    rc, err = run(["--to", "http://127.0.0.1/"])
    check(rc == 2 and "invalid --to" in err, "errors: a URI that is not mongodb:// is a usage error (exit 2)", err)
    rc, err = run(["--to", "mongodb://127.0.0.1:1/x?serverSelectionTimeoutMS=300", "--create-slot"])
    slots = sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'e1'")[0][0]
    check(rc == 1 and "could not reach MongoDB" in err and "hint:" in err and slots == 0,
          "errors: an unreachable MongoDB at the start: exit 1 with a hint, no slot made", "%s %s %s" % (rc, err, slots))
    rc, err = run(["-o", "-", "--to", ferret.uri()])
    check(rc == 2 and "--to needs -o DIR" in err, "errors: --to with -o -", err)
    rc, err = run(["--dead-letter", "x"])
    check(rc == 2 and "--dead-letter is for --to" in err, "errors: --dead-letter without --to", err)
    rc, err = run(["--to", ferret.uri(), "--batch-size", "0"])
    check(rc == 2 and "--batch-size" in err, "errors: --batch-size 0", err)
    rc, err = run(["--to", ferret.uri(), "--max-buffer", "1x"])
    check(rc == 2 and "--max-buffer" in err, "errors: --max-buffer 1x", err)


def buffer_run(ferret):
    """MongoDB down: the stream goes on into local segments, up to --max-buffer, then a clear error."""
    sql("CREATE TABLE bf (id int PRIMARY KEY, v text)")
    out = os.path.join(WORK, "bf")
    rc, err = run_client("bf", out, ferret.uri("bfdb"), "--include-tables", "public.bf", create=True,
                         endpos=current_lsn())
    check(rc == 0, "buffer: start", err)
    ferret.stop()
    proc = subprocess.Popen([BIN, "-d", DB, "--slot", "bf", "-o", out, "--to", ferret.uri("bfdb"),
                             "--include-tables", "public.bf", "--max-buffer", "1MB", "--segment-size", "64kB",
                             "--segment-time", "0.3", "--no-sync"] + FERRET_OPTS,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # it cannot start without MongoDB: started again once FerretDB answers, then FerretDB stops
    time.sleep(3)
    first = proc.poll()
    if first is not None:
        ferret.start()
        proc = subprocess.Popen([BIN, "-d", DB, "--slot", "bf", "-o", out, "--to", ferret.uri("bfdb"),
                                 "--include-tables", "public.bf", "--max-buffer", "1MB", "--segment-size",
                                 "64kB", "--segment-time", "0.3", "--no-sync"] + FERRET_OPTS,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        ferret.stop()
    sql("INSERT INTO bf SELECT g, repeat('x', 1000) FROM generate_series(1, 400) g")
    slot_before = sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'bf'")[0][0]
    sql("INSERT INTO bf SELECT g, repeat('y', 1000) FROM generate_series(401, 3000) g")
    try:
        rc = proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    err = proc.stderr.read()
    check(rc == 1 and "would exceed --max-buffer" in err and "nothing was lost" in err,
          "buffer: MongoDB down, the segments reach --max-buffer: exit 1, said", "%s %s" % (rc, err[-1500:]))
    confirmed = sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'bf'")[0][0]
    check(lsn_value(confirmed) >= lsn_value(slot_before),
          "buffer: while MongoDB was down the slot was confirmed from the local segments", (slot_before, confirmed))
    ferret.start()
    rc, err = run_client("bf", out, ferret.uri("bfdb"), "--include-tables", "public.bf", "--max-buffer", "64MB",
                         endpos=current_lsn())
    check(rc == 0, "buffer: MongoDB back, the rest applied", err[-1500:])
    compare("buffer", ferret, "bfdb", ["bf"])
    sql("SELECT pg_drop_replication_slot('bf')")
    sql("DROP TABLE bf")


class Killer:
    """A relay to FerretDB that lets `allow` write commands on collection `coll` through, and SIGKILLs
    pg_bsonstream (self.pid) at the next one, before it reaches the server: a kill -9 after each write."""

    def __init__(self, upstream_port, coll, allow):
        self.upstream = upstream_port
        self.coll = coll
        self.allow = allow
        self.seen = 0
        self.pid = None
        self.killed = False
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.listener.listen(16)
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def uri(self, db):
        return "mongodb://127.0.0.1:%d/%s?serverSelectionTimeoutMS=2000" % (self.port, db)

    def accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.upstream))
            threading.Thread(target=self.requests, args=(c, u), daemon=True).start()
            threading.Thread(target=Cutter.pump, args=(None, u, c), daemon=True).start()

    @staticmethod
    def read_exact(s, n):
        b = b""
        while len(b) < n:
            d = s.recv(n - len(b))
            if not d:
                raise OSError("closed")
            b += d
        return b

    def requests(self, c, u):
        try:
            while True:
                head = self.read_exact(c, 16)
                length, _, _, opcode = struct.unpack("<iiii", head)
                body = self.read_exact(c, length - 16)
                if opcode == 2013 and body[4] == 0:
                    n = struct.unpack("<i", body[5:9])[0]
                    cmd = bson.decode(body[5:5 + n])
                    name = next(iter(cmd), "")
                    if name in ("update", "delete", "insert") and cmd.get(name) == self.coll:
                        with self.lock:
                            if self.seen >= self.allow:
                                if not self.killed and self.pid:
                                    os.kill(self.pid, signal.SIGKILL)
                                    self.killed = True
                                raise OSError("killed")
                            self.seen += 1
                u.sendall(head + body)
        except OSError:
            pass
        for x in (c, u):
            try:
                x.close()
            except OSError:
                pass

    def close(self):
        self.listener.close()


def unique_replay_run(ferret):
    """A transaction that passes unique values between rows (INSERT a_g u=v_g; UPDATE a_g u=w_g;
    UPDATE b_g u=v_g), with pg_bsonstream killed -9 after each of its writes in turn, then run again as
    the documentation says: every replay converges on the table, the unique index never in the way."""
    results = []
    moved = []
    writes = 9
    for k in range(0, writes + 1):
        t = "uk%d" % k
        sql("CREATE TABLE %s (id text PRIMARY KEY, u text NOT NULL UNIQUE)" % t)
        sql("INSERT INTO %s SELECT 'b_' || g, 'x' || g FROM generate_series(1, 3) g" % t)
        out = os.path.join(WORK, t)
        base = ("--include-tables", "public." + t, "--batch-size", "1")
        rc, err = run_client(t, out, ferret.uri("ukdb"), *base, create=True, endpos=current_lsn())
        if rc != 0:
            results.append("%d: start exit %s %s" % (k, rc, err[-500:]))
            continue
        sql("BEGIN; INSERT INTO {t} SELECT 'a_' || g, 'v' || g FROM generate_series(1, 3) g; "
            "UPDATE {t} SET u = 'w' || substr(id, 3) WHERE id LIKE 'a_%'; "
            "UPDATE {t} SET u = 'v' || substr(id, 3) WHERE id LIKE 'b_%'; COMMIT".format(t=t))
        end = current_lsn()
        killer = Killer(ferret.port, t, k)
        args = [BIN, "-d", DB, "--slot", t, "-o", out, "--to", killer.uri("ukdb"), "--segment-time", "0.3",
                "--segment-size", "64kB", "--no-sync", "--endpos", end] + list(base)
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        killer.pid = p.pid
        try:
            p.wait(120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        killer.close()
        wait_slot_free(t)
        rc, err = run_client(t, out, ferret.uri("ukdb"), *base, endpos=end)
        if "collided on a unique index" in err:
            moved.append(k)
        want = {bson.decode(bytes(r[0]))["_id"]: bytes(r[0]) for r in sql("SELECT bson_document(x) FROM %s x" % t)}
        c = ferret.client()
        got = {bson.decode(d.raw)["_id"]: d.raw for d in c["ukdb"][t].find()}
        c.close()
        if rc != 0 or got != want:
            results.append("killed after %d writes (%s): exit %s, %s\n%s" % (
                k, "killed" if killer.killed else "not killed", rc,
                sorted((i, bson.decode(v)["u"]) for i, v in got.items()), err[-700:]))
        sql("SELECT pg_drop_replication_slot(%s)", (t,))
        sql("DROP TABLE " + t)
    check(not results, "unique replay: a kill -9 after each of the %d writes of a transaction that passes "
          "unique values between rows, then the documented restart: every run converges on the table" % writes,
          "\n".join(results))
    # the kills after b_1 took v1 (its update is the 7th write) make the replay collide
    check(moved and min(moved) >= 6, "unique replay: the replays that collided (after %s writes) moved the "
          "later documents' values aside and wrote them again" % moved, moved)


def missing_target_run(ferret):
    """Changes that need the document already in the target, which is not there: an update that carries
    only the changed columns, a key change whose TOASTed fields must come from the old document. Both are
    refused (stop, or dead-letter), never written short or matched against nothing without a word; a key
    change refused by the server goes to the dead-letter file as written, with the fields it took."""
    sql("CREATE TABLE mt (id int PRIMARY KEY, title text, body text)")
    sql("ALTER TABLE mt ALTER body SET STORAGE EXTERNAL")
    sql("INSERT INTO mt SELECT g, 't' || g, %s || g FROM generate_series(1, 4) g", (BODY,))
    sql("CREATE TABLE kt (id int PRIMARY KEY, code text NOT NULL UNIQUE, body text)")
    sql("ALTER TABLE kt ALTER body SET STORAGE EXTERNAL")
    sql("INSERT INTO kt VALUES (1, 'a', %s)", (BODY,))
    out = os.path.join(WORK, "mt")
    base = ("--include-tables", "public.mt,public.kt")
    rc, err = run_client("mt", out, ferret.uri("mtdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0, "missing: start", err[-800:])
    c = pymongo.MongoClient("127.0.0.1", ferret.port)
    c["mtdb"]["mt"].delete_many({"_id": {"$in": [2, 3]}})
    c["mtdb"]["kt"].insert_one({"_id": 99, "code": "b"})
    c.close()
    sql("UPDATE mt SET title = 'changed' WHERE id IN (1, 2)")
    sql("UPDATE mt SET id = 30 WHERE id = 3")
    sql("UPDATE kt SET id = 2, code = 'b' WHERE id = 1")
    sql("INSERT INTO mt VALUES (5, 't5', 'b5')")
    end = current_lsn()
    rc, err = run_client("mt", out, ferret.uri("mtdb"), *base, endpos=end)
    check(rc == 1 and "MongoDB refused the change of _id 2 in mtdb.mt" in err and "not in the target" in err,
          "missing: an update without fullDocument whose document is not in the target stops the run, naming it",
          "exit %s: %s" % (rc, err[-1500:]))
    dl = os.path.join(WORK, "mt.dead.bson")
    rc, err = run_client("mt", out, ferret.uri("mtdb"), *base, "--dead-letter", dl, endpos=end)
    dead = read_dead(dl)
    by = {(d["ns"]["coll"], d.get("_id")): d for d in dead}
    kc = by.get(("mt", 30), {}).get("event", {})
    kt = by.get(("kt", 2), {}).get("event", {})
    check(rc == 0 and sorted(by) == [("kt", 2), ("mt", 2), ("mt", 30)]
          and "not in the target" in by[("mt", 2)]["error"]["message"]
          and "found no old document" in by[("mt", 30)]["error"]["message"]
          and "unchangedFields" not in kc
          and re.search(r", 3 refused", err) is not None,
          "missing: with --dead-letter the update and the key change without their old document are in the file, "
          "counted, and the rest applied", "exit %s, %r\n%s" % (rc, sorted(by), err[-1500:]))
    check(kt.get("fullDocument", {}).get("body") == BODY and "unchangedFields" not in kt
          and by.get(("kt", 2), {}).get("error", {}).get("code") == 11000,
          "missing: a key change the server refuses (11000) is in the file with the body it took from the old "
          "document", kt and {k: v for k, v in kt.get("fullDocument", {}).items() if k != "body"})
    docs = {bson.decode(d.raw)["_id"]: bson.decode(d.raw) for d in ferret.client()["mtdb"]["mt"].find()}
    check(docs.get(1, {}).get("title") == "changed" and docs.get(1, {}).get("body") == BODY + "1" and 5 in docs
          and 2 not in docs and 30 not in docs,
          "missing: the updates and inserts whose documents are there applied", sorted(docs))
    sql("SELECT pg_drop_replication_slot('mt')")
    sql("DROP TABLE mt, kt")


def long_truncate_run(ferret):
    """A truncate whose delete of many documents runs longer than socketTimeoutMS: sent again (it holds no
    value the server could choke on), never taken for a refused write; what follows it applied after it."""
    sql("CREATE TABLE lt (id text PRIMARY KEY, v text)")
    sql("INSERT INTO lt SELECT 'k' || g, repeat('v', 200) FROM generate_series(1, 20000) g")
    out = os.path.join(WORK, "lt")
    base = ("--include-tables", "public.lt")
    rc, err = run_client("lt", out, ferret.uri("ltdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0 and len(ids_of(ferret, "ltdb", "lt")) == 20000, "long truncate: start", err[-800:])
    sql("TRUNCATE lt")
    sql("INSERT INTO lt VALUES ('after', 'x')")
    rc, err = run_client("lt", out, ferret.uri("ltdb", "&socketTimeoutMS=100"), *base, endpos=current_lsn())
    check(rc == 0 and ids_of(ferret, "ltdb", "lt") == ["after"] and "retrying" in err,
          "long truncate: a delete of 20,000 documents past socketTimeoutMS (100 ms) is retried, not refused, "
          "and the insert after it applied", "exit %s, %d documents\n%s" % (rc, len(ids_of(ferret, "ltdb", "lt")),
                                                                           err[-1500:]))
    sql("SELECT pg_drop_replication_slot('lt')")
    sql("DROP TABLE lt")


# ------------------------------------------------------------------ left running

def mode(path):
    return oct(os.stat(path).st_mode & 0o777)


def modes_run(ferret):
    """Row data is private whatever the umask: DIR, its folders and files, the dead-letter file."""
    sql("CREATE TABLE md (id int PRIMARY KEY, x float8)")
    sql("INSERT INTO md VALUES (1, 1), (2, 'NaN')")
    out = os.path.join(WORK, "md")
    dl = os.path.join(WORK, "md.dead.bson")
    old = os.umask(0o022)
    try:
        rc, err = run_client("md", out, ferret.uri("mddb"), "--include-tables", "public.md", "--keep-applied",
                             "--dead-letter", dl, create=True, endpos=current_lsn())
        sql("INSERT INTO md VALUES (3, 3)")
        rc2, err2 = run_client("md", out, ferret.uri("mddb"), "--include-tables", "public.md", "--keep-applied",
                               "--dead-letter", dl, endpos=current_lsn())
    finally:
        os.umask(old)
    dirs = [out] + [os.path.join(r, d) for r, ds, _ in os.walk(out) for d in ds]
    files = [os.path.join(r, f) for r, _, fs in os.walk(out) for f in fs] + [dl]
    bad = ["%s %s" % (p, mode(p)) for p in dirs if mode(p) != "0o700"] + \
          ["%s %s" % (p, mode(p)) for p in files if os.path.exists(p) and mode(p) != "0o600"]
    names = {os.path.basename(p) for p in files}
    check(rc == 0 and rc2 == 0 and not bad and "status.json" in names and os.path.exists(dl)
          and any(n.endswith(".bson") and "-" in n for n in names) and "md.bson" in names,
          "modes: under umask 022, DIR and its folders are 0700; segments, the first copy, status.json and "
          "the dead-letter file 0600", "exit %s/%s, %s\n%s" % (rc, rc2, bad, (err + err2)[-1500:]))
    sql("SELECT pg_drop_replication_slot('md')")
    sql("DROP TABLE md")


def secrets_run(ferret):
    """A password given in --to is never printed, and is hidden from ps."""
    out = os.path.join(WORK, "sec")
    r = subprocess.run([BIN, "-d", DB, "--slot", "sec", "-o", out, "--to", "mongodb://app:S3cretPW@/x"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "invalid --to" in r.stderr and "S3cretPW" not in r.stderr
          and "app:****@" in r.stderr,
          "secrets: an invalid URI's password is masked in the message", r.stderr)
    # a server that accepts and never answers: the program waits in its first command meanwhile
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(8)
    p = subprocess.Popen([BIN, "-d", DB, "--slot", "sec", "-o", out, "--create-slot", "--to",
                          "mongodb://app:S3cretPW@127.0.0.1:%d/x?connectTimeoutMS=20000" % mute.getsockname()[1]],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    try:
        with open("/proc/%d/cmdline" % p.pid, "rb") as f:
            cmdline = f.read().decode(errors="replace")
        with open("/proc/%d/comm" % p.pid) as f:
            comm = f.read().strip()
    except OSError as e:
        cmdline, comm = repr(e), ""
    p.kill()
    _, err = p.communicate()
    mute.close()
    check("S3cretPW" not in cmdline and "app:" in cmdline and "S3cretPW" not in err,
          "secrets: ps shows the URI's password as stars", cmdline.replace("\0", " "))
    check(comm == "pg_bsonstream", "secrets: the process is named pg_bsonstream (pgrep finds it)", comm)


def names_run(ferret):
    """Names MongoDB refuses: said before anything is made; a table made while streaming goes by the
    refusal policy, the other tables go on."""
    sql('CREATE TABLE "a$b" (id int PRIMARY KEY)')
    sql("CREATE TABLE nm (id int PRIMARY KEY)")
    out = os.path.join(WORK, "nm")
    rc, err = run_client("nm", out, ferret.uri("nmdb"), "--include-tables", "public.nm,public.a$b", create=True,
                         endpos=current_lsn())
    slots = sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'nm'")[0][0]
    check(rc == 1 and "MongoDB cannot name the collection of nmdb.a$b" in err and "holds a $" in err
          and slots == 0 and not os.path.exists(out),
          "names: a table whose collection name MongoDB refuses stops before the slot and DIR are made",
          "exit %s, slots %s, dir %s: %s" % (rc, slots, os.path.exists(out), err[-1500:]))
    rc, err = run_client("nm", out, ferret.uri("nmdb"), "--include-tables", "public.nm,public.x$*",
                         create=True, endpos=current_lsn())
    check(rc == 0, "names: start", err[-1000:])
    sql('CREATE TABLE "x$y" (id int PRIMARY KEY)')
    sql('INSERT INTO "x$y" VALUES (1)')
    sql("INSERT INTO nm VALUES (1), (2)")
    end = current_lsn()
    rc, err = run_client("nm", out, ferret.uri("nmdb"), "--include-tables", "public.nm,public.x$*", endpos=end)
    check(rc == 1 and "nmdb.x$y" in err and "holds a $" in err,
          "names: a table made while streaming under a name MongoDB refuses stops the run, named",
          "exit %s: %s" % (rc, err[-1500:]))
    dl = os.path.join(WORK, "nm.dead.bson")
    rc, err = run_client("nm", out, ferret.uri("nmdb"), "--include-tables", "public.nm,public.x$*",
                         "--dead-letter", dl, endpos=end)
    dead = read_dead(dl)
    check(rc == 0 and [d["ns"]["coll"] for d in dead] == ["x$y"] and ids_of(ferret, "nmdb", "nm") == [1, 2],
          "names: with --dead-letter its change is in the file and the other tables' changes applied",
          "exit %s, %r\n%s" % (rc, dead, err[-1500:]))
    sql("SELECT pg_drop_replication_slot('nm')")
    sql('DROP TABLE "a$b", "x$y", nm')


def driver_refusal_run(ferret):
    """Writes the MongoDB C driver refuses before sending them (a top-level key "$v", an empty key):
    they stop the run or go to the dead-letter file, never dropped from their batch without a word."""
    sql('CREATE TABLE dv (id int PRIMARY KEY, "$v" int)')
    sql("CREATE TABLE de (id int PRIMARY KEY, j jsonb)")
    sql("INSERT INTO dv VALUES (1, NULL)")
    out = os.path.join(WORK, "dv")
    base = ("--include-tables", "public.dv,public.de")
    dl = os.path.join(WORK, "dv.dead.bson")
    rc, err = run_client("dv", out, ferret.uri("dvdb"), *base, "--dead-letter", dl, create=True,
                         endpos=current_lsn())
    check(rc == 0 and [d.get("_id") for d in read_dead(dl)] == [1], "driver refusals: start", err[-1500:])
    sql("""INSERT INTO de VALUES (1, '{}'), (2, '{"": 1}'), (3, '{}')""")
    sql("INSERT INTO dv VALUES (4, 4)")
    sql("INSERT INTO de VALUES (5, '{}')")
    end = current_lsn()
    rc, err = run_client("dv", out, ferret.uri("dvdb"), *base, endpos=end)
    # libmongoc 1.23 says "empty key", 1.30 (Debian 13) "Element key cannot be an empty string"
    check(rc == 1 and "MongoDB refused the change of _id 2 in dvdb.de" in err and re.search(r"empty (key|string)", err)
          and ids_of(ferret, "dvdb", "de") == [1],
          "driver refusals: a replacement with an empty key, which the driver refuses, stops the run naming it "
          "(the write before it applied, none after)", "exit %s, %r: %s" % (rc, ids_of(ferret, "dvdb", "de"), err[-1500:]))
    rc, err = run_client("dv", out, ferret.uri("dvdb"), *base, "--dead-letter", dl, endpos=end)
    dead = read_dead(dl)
    check(rc == 0 and [(d["ns"]["coll"], d.get("_id")) for d in dead] == [("dv", 1), ("de", 2), ("dv", 4)]
          and all("driver refuses" in d["error"]["message"] for d in dead[1:])
          and ids_of(ferret, "dvdb", "de") == [1, 3, 5] and ids_of(ferret, "dvdb", "dv") == []
          and re.search(r"MongoDB: \d+ events applied.*, 2 refused", err),
          "driver refusals: with --dead-letter the empty key and the top-level \"$v\" are in the file, counted, "
          "and the rest applied", "exit %s, %r\n%s" % (rc, [(d["ns"]["coll"], d.get("_id")) for d in dead], err[-1500:]))
    sql("SELECT pg_drop_replication_slot('dv')")
    sql("DROP TABLE dv, de")


def restart_fresh_run(ferret):
    """A slot started over under the same name: the progress document of the old one is not taken for
    the new one's (the first copy is loaded again); one of another cluster is an error."""
    sql("CREATE TABLE fr (id int PRIMARY KEY)")
    sql("INSERT INTO fr SELECT generate_series(1, 5)")
    out = os.path.join(WORK, "fr")
    base = ("--include-tables", "public.fr")
    rc, err = run_client("fr", out, ferret.uri("frdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0 and ids_of(ferret, "frdb", "fr") == [1, 2, 3, 4, 5], "restart: first life", err[-800:])
    # the documented way to remove it, then the target collection dropped, then started again
    sql("SELECT pg_drop_replication_slot('fr')")
    subprocess.run(["rm", "-rf", out], check=True)
    c = ferret.client()
    c["frdb"].drop_collection("fr")
    c.close()
    sql("INSERT INTO fr SELECT generate_series(6, 151)")
    rc, err = run_client("fr", out, ferret.uri("frdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0 and ids_of(ferret, "frdb", "fr") == list(range(1, 152))
          and "from an earlier slot of that name" in err,
          "restart: the same slot name started over loads the whole first copy again (151 rows), said",
          "exit %s, %d documents\n%s" % (rc, len(ids_of(ferret, "frdb", "fr")), err[-1500:]))
    p = progress_doc(ferret, "frdb", "fr")
    sysid = sql("SELECT system_identifier::text FROM pg_control_system()")[0][0]
    check(p and p.get("systemIdentifier") == sysid and p.get("initial") == "done",
          "restart: the progress document names the cluster's system identifier", p)
    c = pymongo.MongoClient("127.0.0.1", ferret.port)
    c["frdb"]["bson_out_progress"].update_one({"_id": "fr"}, {"$set": {"systemIdentifier": "1234"}})
    c.close()
    rc, err = run_client("fr", out, ferret.uri("frdb"), *base, endpos=current_lsn())
    check(rc == 1 and "belongs to another PostgreSQL cluster (system identifier 1234" in err,
          "restart: a progress document of another cluster is an error", "exit %s: %s" % (rc, err[-1500:]))
    c = pymongo.MongoClient("127.0.0.1", ferret.port)
    c["frdb"]["bson_out_progress"].update_one({"_id": "fr"}, {"$set": {"systemIdentifier": sysid,
                                                                      "initial": "loading"}})
    c.close()
    rc, err = run_client("fr", out, ferret.uri("frdb"), *base, endpos=current_lsn())
    check(rc == 1 and "is gone" in err and "initial" in err,
          "restart: a first copy being loaded whose DIR/initial is gone is an error, not applied on top",
          "exit %s: %s" % (rc, err[-1500:]))
    sql("SELECT pg_drop_replication_slot('fr')")
    sql("DROP TABLE fr")


def unreachable_restart_run(ferret):
    """MongoDB unreachable at a restart: the stream goes on into the segments (the slot confirmed), and the
    changes are applied once MongoDB answers; a SIGTERM while it cannot be reached takes seconds."""
    sql("CREATE TABLE ur (id int PRIMARY KEY, v text)")
    out = os.path.join(WORK, "ur")
    base = ("--include-tables", "public.ur")
    rc, err = run_client("ur", out, ferret.uri("urdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0, "unreachable at a restart: start", err[-800:])
    ferret.stop()
    proc = start_client("ur", out, ferret.uri("urdb"), *base)
    time.sleep(3)
    sql("INSERT INTO ur SELECT g, 'v' FROM generate_series(1, 500) g")
    target = current_lsn()
    deadline = time.time() + 30
    confirmed = "0/0"
    while time.time() < deadline and proc.poll() is None:
        confirmed = sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'ur'")[0][0]
        if lsn_value(confirmed) >= lsn_value(target):
            break
        time.sleep(0.3)
    check(proc.poll() is None and lsn_value(confirmed) >= lsn_value(target),
          "unreachable at a restart: the stream runs and the slot is confirmed from the local segments",
          "exit %s, confirmed %s, target %s\n%s" % (proc.poll(), confirmed, target,
                                                    open(os.path.join(WORK, "ur.stderr")).read()[-1500:]))
    rc, took = terminate(proc)
    log = open(os.path.join(WORK, "ur.stderr")).read()
    check(rc == 0 and took < 20, "unreachable at a restart: SIGTERM while MongoDB is down ends in seconds, exit 0",
          "exit %s after %.1f s\n%s" % (rc, took, log[-1500:]))
    try:
        with open(os.path.join(out, "status.json")) as f:
            status = json.load(f)
    except (OSError, ValueError) as e:
        status = repr(e)
    check(isinstance(status, dict) and status.get("state") == "exited",
          "unreachable at a restart: status.json says the program exited", status)
    proc = start_client("ur", out, ferret.uri("urdb"), *base)
    time.sleep(3)
    ferret.start()
    deadline = time.time() + 120
    while time.time() < deadline and len(ids_of(ferret, "urdb", "ur")) < 500:
        time.sleep(0.5)
    rc, _ = terminate(proc)
    log = open(os.path.join(WORK, "ur.stderr")).read()
    check(rc == 0 and "MongoDB cannot be reached" in log and "MongoDB answers again" in log,
          "unreachable at a restart: said, and applied once MongoDB answers", "exit %s\n%s" % (rc, log[-2000:]))
    compare("unreachable at a restart", ferret, "urdb", ["ur"])
    sql("SELECT pg_drop_replication_slot('ur')")
    sql("DROP TABLE ur")


def stop_run(ferret):
    """SIGTERM while a long transaction is being applied, and while FerretDB does not answer at all
    (stopped with SIGSTOP): the program ends in seconds, and the next run converges."""
    sql("CREATE TABLE st (id int PRIMARY KEY, n int)")
    out = os.path.join(WORK, "st")
    base = ("--include-tables", "public.st")
    rc, err = run_client("st", out, ferret.uri("stdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0, "stop: start", err[-800:])
    sql("INSERT INTO st SELECT g, 0 FROM generate_series(1, 2000) g")
    proc = start_client("st", out, ferret.uri("stdb"), *base)
    deadline = time.time() + 120
    while time.time() < deadline and len(ids_of(ferret, "stdb", "st")) < 100:
        time.sleep(0.05)
    rc, took = terminate(proc)
    n = len(ids_of(ferret, "stdb", "st"))
    check(rc == 0 and took < 15 and n < 2000,
          "stop: SIGTERM in the middle of a 2,000-row transaction ends in seconds (%.1f s), exit 0" % took,
          "exit %s after %.1f s, %d documents\n%s" % (rc, took, n, open(os.path.join(WORK, "st.stderr")).read()[-1500:]))
    sql("UPDATE st SET n = 1 WHERE id <= 100")
    proc = start_client("st", out, ferret.uri("stdb"), *base)
    time.sleep(2)
    ferret.proc.send_signal(signal.SIGSTOP)
    time.sleep(1)
    rc, took = terminate(proc)
    ferret.proc.send_signal(signal.SIGCONT)
    log = open(os.path.join(WORK, "st.stderr")).read()
    check(rc == 0 and took < 15,
          "stop: SIGTERM while FerretDB answers nothing (SIGSTOP) ends in seconds (%.1f s), exit 0" % took,
          "exit %s after %.1f s\n%s" % (rc, took, log[-1500:]))
    rc, err = run_client("st", out, ferret.uri("stdb"), *base, endpos=current_lsn(), timeout=1200)
    check(rc == 0, "stop: the next run applies the rest", err[-1500:])
    compare("stop", ferret, "stdb", ["st"])
    check("the server is FerretDB" in err and "at most 49 writes a command" in err,
          "stop: FerretDB recognised: at most 49 writes a command at the default --batch-size, said", err[-1500:])
    sql("SELECT pg_drop_replication_slot('st')")
    sql("DROP TABLE st")


def dead_letter_torn_run(ferret):
    """A dead-letter file that ends in a record cut short (a crash in its write) is cut back to its last
    whole record, said, and the new records follow readable."""
    sql("CREATE TABLE dt (id int PRIMARY KEY, x float8)")
    out = os.path.join(WORK, "dt")
    base = ("--include-tables", "public.dt")
    rc, err = run_client("dt", out, ferret.uri("dtdb"), *base, create=True, endpos=current_lsn())
    dl = os.path.join(WORK, "dt.dead.bson")
    whole = bson.encode({"_id": 0, "note": "an earlier record"})
    with open(dl, "wb") as f:
        f.write(whole + whole[:9])
    os.chmod(dl, 0o600)
    sql("INSERT INTO dt VALUES (1, 'NaN'), (2, 2)")
    rc, err = run_client("dt", out, ferret.uri("dtdb"), *base, "--dead-letter", dl, endpos=current_lsn())
    dead = read_dead(dl)
    check(rc == 0 and [d.get("_id") for d in dead] == [0, 1] and "cut short" in err
          and ids_of(ferret, "dtdb", "dt") == [2],
          "dead letter: a record cut short is cut off, said, and the new record readable after the old ones",
          "exit %s, %r\n%s" % (rc, dead, err[-1500:]))
    sql("SELECT pg_drop_replication_slot('dt')")
    sql("DROP TABLE dt")


def max_buffer_run(ferret):
    """A transaction larger than --max-buffer, MongoDB healthy: the message says what is too small."""
    sql("CREATE TABLE mb (id int PRIMARY KEY, v text)")
    out = os.path.join(WORK, "mb")
    base = ("--include-tables", "public.mb")
    rc, err = run_client("mb", out, ferret.uri("mbdb"), *base, create=True, endpos=current_lsn())
    sql("INSERT INTO mb SELECT g, repeat('x', 1000) FROM generate_series(1, 2000) g")
    rc, err = run_client("mb", out, ferret.uri("mbdb"), *base, "--max-buffer", "200kB", endpos=current_lsn())
    check(rc == 1 and "does not fit in --max-buffer" in err and "behind or unreachable" not in err,
          "max buffer: a transaction larger than --max-buffer is said to be too large for it, not MongoDB's fault",
          "exit %s: %s" % (rc, err[-1500:]))
    rc, err = run_client("mb", out, ferret.uri("mbdb"), *base, "--max-buffer", "64MB", endpos=current_lsn())
    check(rc == 0 and len(ids_of(ferret, "mbdb", "mb")) == 2000, "max buffer: a larger one passes", err[-800:])
    sql("SELECT pg_drop_replication_slot('mb')")
    sql("DROP TABLE mb")


def collection_names(ferret, db):
    c = ferret.client()
    try:
        return set(c[db].list_collection_names())
    finally:
        c.close()


def schema_run(ferret):
    """Schema changes while streaming: every DDL that changes a table's documents (a column added with a
    default, dropped, retyped, renamed; another key; the table renamed, dropped, made) brings its collection
    back to bson_document() of the table (a copy again under a slot's snapshot), rows changed in the DDL's
    own transaction and after it included; a DDL that changes no document (an index) copies nothing. A
    kill -9 during a copy again, with changes going on, converges on the next run."""
    sql("CREATE TABLE sa (id int PRIMARY KEY, a int, c text)")
    sql("INSERT INTO sa SELECT g, g, 'c' || g FROM generate_series(1, 40) g")
    sql("CREATE TABLE sb (id int PRIMARY KEY, v text)")
    sql("INSERT INTO sb SELECT g, 'v' || g FROM generate_series(1, 10) g")
    sql("CREATE TABLE sk (id int PRIMARY KEY, k int NOT NULL UNIQUE, v text)")
    sql("INSERT INTO sk SELECT g, 100 + g, 'v' || g FROM generate_series(1, 10) g")
    sql("CREATE TABLE sd (id int PRIMARY KEY)")
    sql("INSERT INTO sd SELECT generate_series(1, 3)")
    sql("CREATE TABLE sf (id int PRIMARY KEY, v text)")
    sql("INSERT INTO sf SELECT g, 'v' || g FROM generate_series(1, 5) g")
    sql("CREATE TABLE si (id int PRIMARY KEY, v text)")
    sql("INSERT INTO si SELECT g, 'v' || g FROM generate_series(1, 5) g")
    sql("CREATE TABLE sp (id int, part int, v text, PRIMARY KEY (id, part)) PARTITION BY LIST (part)")
    sql("CREATE TABLE sp1 PARTITION OF sp FOR VALUES IN (1)")
    sql("CREATE TABLE sp2 PARTITION OF sp FOR VALUES IN (2)")
    sql("INSERT INTO sp SELECT g, 1 + g % 2, 'p' FROM generate_series(1, 6) g")
    sql("CREATE TABLE sw1 (id int PRIMARY KEY, v text)")
    sql("INSERT INTO sw1 SELECT g, 'one' FROM generate_series(1, 3) g")
    sql("CREATE TABLE sw2 (id int PRIMARY KEY, v text)")
    sql("INSERT INTO sw2 SELECT g, 'two' FROM generate_series(1, 5) g")
    sql("CREATE TABLE sr (id int PRIMARY KEY, v text)")
    sql("INSERT INTO sr SELECT g, 'r' FROM generate_series(1, 5) g")
    sql("CREATE TABLE sg (id int PRIMARY KEY)")
    sql("INSERT INTO sg SELECT generate_series(1, 3)")
    sql("CREATE TABLE sz (id int PRIMARY KEY, d text)")
    sql("INSERT INTO sz SELECT g, 'z' FROM generate_series(1, 20000) g")
    out = os.path.join(WORK, "schema")
    sel = ("--include-tables", "public.s*")
    uri = ferret.uri("scdb")
    rc, err = run_client("sch", out, uri, *sel, create=True, endpos=current_lsn())
    check(rc == 0, "schema: start", err[-800:])
    meta = progress_doc(ferret, "scdb", "sch") or {}
    check(sorted(t["coll"] for t in meta.get("tables", [])) == ["sa", "sb", "sd", "sf", "sg", "si", "sk", "sp", "sr", "sw1", "sw2", "sz"],
          "schema: the progress document holds the shape of each table of the first copy",
          repr(meta.get("tables"))[:600])

    sql("ALTER TABLE sa ADD COLUMN d text DEFAULT 'x'")
    sql("ALTER TABLE sa DROP COLUMN c")
    sql("ALTER TABLE sa ALTER COLUMN a TYPE bigint")
    sql("ALTER TABLE sa RENAME COLUMN a TO a2")
    sql("UPDATE sa SET a2 = a2 + 1000 WHERE id <= 3")
    sql("ALTER TABLE sb RENAME TO sb2")
    sql("DELETE FROM sb2 WHERE id = 1")
    sql("ALTER TABLE sk DROP CONSTRAINT sk_pkey, ADD PRIMARY KEY (k)")
    sql("UPDATE sk SET v = 'w' WHERE id = 2")
    sql("DROP TABLE sd")
    sql("CREATE TABLE se (id int PRIMARY KEY, v text)")
    sql("INSERT INTO se SELECT g, 'e' || g FROM generate_series(1, 4) g")
    # one transaction (a multi-statement query is one)
    sql("BEGIN; ALTER TABLE sf ADD COLUMN w int DEFAULT 7; INSERT INTO sf VALUES (6, 'v6', 8); "
        "UPDATE sf SET v = 'u' WHERE id = 1; COMMIT")
    sql("CREATE INDEX ON si (v)")
    sql("UPDATE si SET v = 'i' WHERE id = 1")
    # a partition changed, then dropped: the root's collection stays (a partition's rows leaving it
    # without events is not followed, see docs/mongodb.md)
    sql("UPDATE sp SET v = 'q' WHERE part = 1")
    sql("UPDATE sp SET v = 'r' WHERE part = 2")
    sql("DROP TABLE sp1")
    # two tables' names swapped in one transaction
    sql("BEGIN; ALTER TABLE sw1 RENAME TO swt; ALTER TABLE sw2 RENAME TO sw1; ALTER TABLE swt RENAME TO sw2; COMMIT")
    sql("UPDATE sw1 SET v = 'two!' WHERE id = 5")
    # changed, then renamed before its copy again is made: the changes in between are under the old name
    sql("ALTER TABLE sr ADD COLUMN x int DEFAULT 1")
    sql("UPDATE sr SET x = 2 WHERE id <= 2")
    sql("DELETE FROM sr WHERE id = 5")
    sql("ALTER TABLE sr RENAME TO sr2")
    sql("UPDATE sr2 SET x = 3 WHERE id = 1")
    # a table changed, then dropped before its copy again is made: gone, its collection dropped
    sql("ALTER TABLE sg ADD COLUMN x int")
    sql("INSERT INTO sg VALUES (4, 4)")
    sql("DROP TABLE sg")
    rc, err = run_client("sch", out, uri, *sel, endpos=current_lsn())
    check(rc == 0, "schema: the run through the DDL ends well", err[-1500:])
    compare("schema", ferret, "scdb", ["sa", "sb2", "sk", "se", "sf", "si", "sw1", "sw2", "sr2"])
    names = collection_names(ferret, "scdb")
    check("sb" not in names and "sd" not in names and "sg" not in names and "sr" not in names
          and "swt" not in names and {"sa", "sb2", "sk", "se", "sf", "si", "sp", "sw1", "sw2", "sr2"} <= names,
          "schema: a renamed table's old collection and a dropped table's collection are dropped (also one "
          "dropped before its copy again), a dropped partition's root collection stays", sorted(names))
    sp = {bson.decode(d.raw)["_id"]["id"]: bson.decode(d.raw)["v"] for d in ferret.client()["scdb"]["sp"].find()}
    check(sorted(sp.items()) == [(1, "r"), (2, "q"), (3, "r"), (4, "q"), (5, "r"), (6, "q")],
          "schema: the partitioned table's documents as its changes left them", sp)
    check("collection scdb.si is copied" not in err and "table public.sa changed" in err,
          "schema: a DDL that changes no document (an index) copies nothing; one that does says so",
          "\n".join(l for l in err.splitlines() if "changed" in l or "gone" in l))

    # a kill -9 in a copy again, with changes to the table going on
    stderr_path = os.path.join(WORK, "sch.stderr")
    proc = start_client("sch", out, uri, *sel)
    stop = threading.Event()

    def updates():
        rnd = random.Random(5)
        while not stop.is_set():
            sql("UPDATE sz SET e = e + 1, d = 'u' WHERE id = %s", (rnd.randint(1, 20000),))
            time.sleep(0.05)

    time.sleep(1)
    sql("ALTER TABLE sz ADD COLUMN e int DEFAULT 5")
    upd = threading.Thread(target=updates)
    upd.start()
    killed = False
    deadline = time.time() + 120
    while time.time() < deadline and not killed and proc.poll() is None:
        with open(stderr_path, errors="replace") as f:
            copying = "table public.sz changed" in f.read()
        if copying:
            proc.kill()
            killed = True
        time.sleep(0.005)
    if not killed:
        proc.kill()
    proc.wait()
    stop.set()
    upd.join()
    wait_slot_free("sch")
    sql("UPDATE sz SET e = 0 WHERE id <= 10")
    rc, err = run_client("sch", out, uri, *sel, endpos=current_lsn())
    check(killed and rc == 0 and "table public.sz changed" in err,
          "schema: killed as the copy again starts (%s), the next run copies again and ends well" % killed,
          err[-1500:])
    compare("schema kill", ferret, "scdb", ["sz"])
    left = sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pg_bsonstream_recopy%%'")[0][0]
    check(left == 0, "schema: no temporary slot is left behind", left)
    sql("SELECT pg_drop_replication_slot('sch')")
    sql("DROP TABLE sa, sb2, sk, se, sf, si, sp, sz, sw1, sw2, sr2")


def write_wait_run(ferret):
    """A write MongoDB does not answer (FerretDB stopped with SIGSTOP) is said on stderr once it has waited
    30 s, never waited for in silence; the run goes on once the server answers again."""
    sql("CREATE TABLE ww (id int PRIMARY KEY, n int)")
    out = os.path.join(WORK, "ww")
    base = ("--include-tables", "public.ww")
    rc, err = run_client("ww", out, ferret.uri("wwdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0, "write wait: start", err[-800:])
    proc = start_client("ww", out, ferret.uri("wwdb"), *base)
    time.sleep(2)
    ferret.proc.send_signal(signal.SIGSTOP)
    sql("INSERT INTO ww SELECT g, 0 FROM generate_series(1, 10) g")
    path = os.path.join(WORK, "ww.stderr")
    deadline = time.time() + 60
    said = False
    while time.time() < deadline and not said:
        time.sleep(0.5)
        said = "a write to MongoDB has waited" in open(path, errors="replace").read()
    ferret.proc.send_signal(signal.SIGCONT)
    check(said, "write wait: a write FerretDB does not answer is said after 30 s",
          open(path, errors="replace").read()[-800:])
    rc, took = terminate(proc)
    rc, err = run_client("ww", out, ferret.uri("wwdb"), *base, endpos=current_lsn(), timeout=1200)
    check(rc == 0, "write wait: the next run applies the rest", err[-800:])
    compare("write wait", ferret, "wwdb", ["ww"])
    sql("SELECT pg_drop_replication_slot('ww')")
    sql("DROP TABLE ww")


def stale_stash_run(ferret):
    """The stash of a key change already applied (a stop between storing the position and removing the
    stash, two commands) is removed at the next start, not left behind for ever."""
    sql("CREATE TABLE ss (id int PRIMARY KEY)")
    out = os.path.join(WORK, "ss")
    base = ("--include-tables", "public.ss")
    rc, err = run_client("ss", out, ferret.uri("ssdb"), *base, create=True, endpos=current_lsn())
    check(rc == 0, "stale stash: start", err[-800:])
    sql("INSERT INTO ss VALUES (1)")
    rc, err = run_client("ss", out, ferret.uri("ssdb"), *base, endpos=current_lsn())
    c = ferret.client()
    c["ssdb"]["bson_out_progress"].insert_one({"_id": "ss@" + "0" * 15 + "10000000000000001", "keyChange": {"_id": 1}})
    c.close()
    sql("INSERT INTO ss VALUES (2)")
    rc, err = run_client("ss", out, ferret.uri("ssdb"), *base, endpos=current_lsn())
    c = ferret.client()
    left = [d["_id"] for d in c["ssdb"]["bson_out_progress"].find() if "@" in d["_id"]]
    c.close()
    check(rc == 0 and left == [], "stale stash: a key change's stash at or before the stored position is "
          "removed at the start", "exit %s, left %r\n%s" % (rc, left, err[-800:]))
    sql("SELECT pg_drop_replication_slot('ss')")
    sql("DROP TABLE ss")


def copy_status_run(ferret):
    """DIR/status.json during the first copy: "copying" with its documents so far, not nothing, then the
    stream's states, "exited" at the end."""
    sql("CREATE TABLE cs (id int PRIMARY KEY, v text)")
    sql("INSERT INTO cs SELECT g, repeat('x', 200) FROM generate_series(1, 1000000) g")
    out = os.path.join(WORK, "cs")
    err = open(os.path.join(WORK, "cs.stderr"), "ab")
    proc = subprocess.Popen([BIN, "-d", DB, "--slot", "cs", "-o", out, "--create-slot", "--initial-copy",
                             "--include-tables", "public.cs", "--no-sync", "--endpos", current_lsn()],
                            stdout=subprocess.DEVNULL, stderr=err)
    seen = []
    copied = None
    while proc.poll() is None:
        try:
            with open(os.path.join(out, "status.json")) as f:
                status = json.load(f)
            if not seen or seen[-1] != status.get("state"):
                seen.append(status.get("state"))
            if status.get("state") == "copying":
                copied = status.get("copy", {}).get("documents")
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    with open(os.path.join(out, "status.json")) as f:
        status = json.load(f)
    check(proc.returncode == 0 and seen[:1] == ["copying"] and status.get("state") == "exited"
          and "copy" not in status and isinstance(copied, int),
          "copy status: status.json says \"copying\" (with the documents so far) during the first copy, "
          "\"exited\" at the end", "exit %s, states %r, last %r" % (proc.returncode, seen, status))
    sql("SELECT pg_drop_replication_slot('cs')")
    sql("DROP TABLE cs")


class MongoJavaServer:
    """mongo-java-server 1.47.0 (in-memory backend) on a loopback port, from the benchmark's jar
    (bench/debezium/build.sh): a MongoDB wire-protocol server that reports the index of a refused
    update, which FerretDB 1.x reports wrong."""

    def __init__(self, port):
        self.port = port
        self.log = open(os.path.join(WORK, "mjs.log"), "ab")
        self.proc = subprocess.Popen(["java", "-jar", MJS_JAR, "mongo-server", "--port", str(port)],
                                     stdout=self.log, stderr=self.log)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                pymongo.MongoClient("127.0.0.1", port, serverSelectionTimeoutMS=300).admin.command("ping")
                return
            except pymongo.errors.PyMongoError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("mongo-java-server did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def uri(self, db):
        return "mongodb://127.0.0.1:%d/%s?serverSelectionTimeoutMS=5000" % (self.port, db)


def mjs_run(ferret):
    """A duplicate key in the middle of a batch, on a server that reports its index (mongo-java-server):
    the index is taken as the server gives it (the MongoDB path; on FerretDB the batch is written again
    one at a time), the run stops naming that _id, or with --dead-letter that change alone is in the
    file and the others applied."""
    if not MJS_JAR:
        fail("mongo-java-server: no MJS_JAR (bench/debezium/build.sh)")
        return
    mjs = MongoJavaServer(MPORT + 500)
    try:
        sql("CREATE TABLE mq (id text PRIMARY KEY, code text NOT NULL UNIQUE, n int)")
        sql("INSERT INTO mq VALUES ('a', 'x', 0), ('b', 'y', 0)")
        out = os.path.join(WORK, "mq")
        base = ("--include-tables", "public.mq")
        rc, err = run_client("mq", out, mjs.uri("mqdb"), *base, create=True, endpos=current_lsn())
        c = pymongo.MongoClient("127.0.0.1", mjs.port, serverSelectionTimeoutMS=5000)
        unique = [i for i in c["mqdb"]["mq"].list_indexes() if i.get("unique")]
        c["mqdb"]["mq"].insert_one({"_id": "zz", "code": "q"})
        check(rc == 0 and len(unique) == 1, "mongo-java-server: the first copy, its unique index",
              "%s %r %s" % (rc, unique, err[-800:]))
        # one transaction: a batch of four writes, the second a duplicate key
        sql("UPDATE mq SET n = 1 WHERE id = 'a'; INSERT INTO mq VALUES ('c', 'q', 0); "
            "UPDATE mq SET n = 1 WHERE id = 'b'; INSERT INTO mq VALUES ('d', 'r', 0)")
        end = current_lsn()
        rc, err = run_client("mq", out, mjs.uri("mqdb"), *base, endpos=end)
        a = c["mqdb"]["mq"].find_one({"_id": "a"})
        check(rc == 1 and 'MongoDB refused the change of _id "c" in mqdb.mq' in err and "11000" in err
              and a is not None and a.get("n") == 1,
              "mongo-java-server: a duplicate key at the second write of a batch stops the run naming "
              "that _id, the write before it applied", "exit %s, a %r: %s" % (rc, a, err[-1500:]))
        dl = os.path.join(WORK, "mq.dead.bson")
        rc, err = run_client("mq", out, mjs.uri("mqdb"), *base, "--dead-letter", dl, endpos=end)
        dead = read_dead(dl)
        docs = {d["_id"]: d for d in c["mqdb"]["mq"].find()}
        check(rc == 0 and [d.get("_id") for d in dead] == ["c"] and dead[0]["error"]["code"] == 11000
              and sorted(docs) == ["a", "b", "d", "zz"] and docs["b"]["n"] == 1,
              "mongo-java-server: with --dead-letter that change alone is in the file, the others applied",
              "exit %s, dead %r, docs %r\n%s" % (rc, dead, docs, err[-1500:]))
        c.close()
        sql("SELECT pg_drop_replication_slot('mq')")
        sql("DROP TABLE mq")
    finally:
        mjs.stop()


# ------------------------------------------------------------------ embedded rows

EMBED_DB = "xembed"
EMBED_TABLES = "public.orders,public.order_lines,public.line_taxes,public.shipping"
# element keys compared as bytes (COLLATE "C"): upper case before lower case, UTF-8 after ASCII
EMBED_TAXES = ["VAT", "city", "eco", "Zone", "\u00e9tat", "a-b"]


def embed_sql(query, args=None):
    return sql(query, args, db=EMBED_DB)


def embed_setup():
    """orders -> order_lines -> line_taxes, and a one-to-one shipping, in a database of their own;
    some values TOASTed out of line (an update that leaves them, a cascaded key change, does not log them)."""
    sql("DROP DATABASE IF EXISTS " + EMBED_DB, db="postgres")
    sql("CREATE DATABASE " + EMBED_DB, db="postgres")
    embed_sql("CREATE EXTENSION bson_out")
    embed_sql("CREATE TABLE orders (id int PRIMARY KEY, customer text, note text); "
              "ALTER TABLE orders ALTER note SET STORAGE EXTERNAL")
    embed_sql("CREATE TABLE order_lines (order_id int REFERENCES orders ON DELETE CASCADE ON UPDATE CASCADE "
              "DEFERRABLE, line_no int, item text, qty int, PRIMARY KEY (order_id, line_no)); "
              "ALTER TABLE order_lines ALTER item SET STORAGE EXTERNAL")
    # rate float8, not numeric: FerretDB does not store Decimal128 (docs/mongodb.md, on FerretDB)
    embed_sql("CREATE TABLE line_taxes (order_id int, line_no int, tax text, rate float8, "
              "PRIMARY KEY (order_id, line_no, tax), FOREIGN KEY (order_id, line_no) REFERENCES order_lines "
              "ON DELETE CASCADE ON UPDATE CASCADE DEFERRABLE)")
    embed_sql("CREATE TABLE shipping (order_id int PRIMARY KEY REFERENCES orders ON DELETE CASCADE "
              "ON UPDATE CASCADE, address text); ALTER TABLE shipping ALTER address SET STORAGE EXTERNAL")
    # REPLICA IDENTITY DEFAULT: a cascaded key change of an order moves its lines and shipping without
    # their TOASTed values, which the applier takes from the order's document as it was (kept in the
    # progress collection when the move comes in a later batch or after a kill)
    embed_sql("SELECT bson_embed('order_lines', parent => 'orders', field => 'lines')")
    embed_sql("SELECT bson_embed('line_taxes', parent => 'order_lines', field => 'taxes')")
    embed_sql("SELECT bson_embed('shipping', parent => 'orders', field => 'ship')")
    # 300 orders, 0-5 lines each (line numbers with gaps), 0-3 taxes a line, every other one shipped
    embed_sql("INSERT INTO orders SELECT g, 'c' || (g %% 37), CASE WHEN g %% 25 = 0 THEN %s ELSE 'n' || g END "
              "FROM generate_series(1, 300) g", (BODY,))
    embed_sql("INSERT INTO order_lines SELECT o, l * 3 - (o %% 2), CASE WHEN (o + l) %% 40 = 0 THEN %s "
              "ELSE 'item' || ((o * 7 + l) %% 50) END, (o + l) %% 9 + 1 "
              "FROM generate_series(1, 300) o, generate_series(1, 5) l WHERE l <= o %% 6", (BODY,))
    embed_sql("INSERT INTO line_taxes SELECT order_id, line_no, t, ((order_id + line_no + i) %% 20) / 8.0 "
              "FROM order_lines, unnest(%s::text[]) WITH ORDINALITY u(t, i) "
              "WHERE (order_id * 3 + line_no + i * 5) %% 6 < 3", (EMBED_TAXES,))
    embed_sql("INSERT INTO shipping SELECT g, CASE WHEN g %% 20 = 0 THEN %s ELSE 'street ' || g END "
              "FROM generate_series(2, 300, 2) g", (BODY,))


def embed_pick(cur, query, args=None):
    cur.execute(query, args)
    return cur.fetchone()


def embed_text(rnd, prefix):
    """Mostly short; one in twelve TOASTed, out of line."""
    return BODY + str(rnd.randint(0, 99)) if rnd.random() < 1 / 12 else "%s%d" % (prefix, rnd.randint(0, 10 ** 6))


def embed_insert_lines(cur, rnd, order_id, deferred=False):
    nos = rnd.sample(range(-5, 40), rnd.randint(0, 5))
    taxes = []
    for no in nos:
        for tax in rnd.sample(EMBED_TAXES, rnd.randint(0, 3)):
            taxes.append((order_id, no, tax, rnd.choice([None, rnd.randint(0, 40) / 8.0])))
    if deferred:
        # the taxes before their lines, both before their order
        for t in taxes:
            cur.execute("INSERT INTO line_taxes VALUES (%s, %s, %s, %s)", t)
    for no in nos:
        cur.execute("INSERT INTO order_lines VALUES (%s, %s, %s, %s)",
                    (order_id, no, embed_text(rnd, "item"), rnd.choice([None, rnd.randint(1, 9)])))
    if not deferred:
        for t in taxes:
            cur.execute("INSERT INTO line_taxes VALUES (%s, %s, %s, %s)", t)


# what embed_one did, by its draw
EMBED_KINDS = [(0.12, "insert"), (0.17, "deferred insert"), (0.25, "line added"), (0.38, "line update"),
               (0.46, "line move"), (0.50, "line renumber"), (0.56, "order key"), (0.62, "order delete"),
               (0.67, "line delete"), (0.77, "tax"), (0.86, "shipping"), (0.9985, "order update"), (2, "truncate")]


def embed_one(cur, rnd, next_id):
    """One random change (its kind returned); next_id() gives an order id no one has used."""
    op = rnd.random()
    some_order = "SELECT id FROM orders ORDER BY random() LIMIT 1"
    some_line = "SELECT order_id, line_no FROM order_lines ORDER BY random() LIMIT 1"
    if op < 0.12:
        # a new order, its lines and taxes, maybe its shipping
        oid = next_id()
        cur.execute("INSERT INTO orders VALUES (%s, %s, %s)", (oid, "c%d" % rnd.randint(0, 40), embed_text(rnd, "n")))
        embed_insert_lines(cur, rnd, oid)
        if rnd.random() < 0.5:
            cur.execute("INSERT INTO shipping VALUES (%s, %s)", (oid, embed_text(rnd, "street ")))
    elif op < 0.17:
        # deferred constraints: the lines (and their taxes) before their order, in one transaction
        oid = next_id()
        cur.execute("SET CONSTRAINTS ALL DEFERRED")
        embed_insert_lines(cur, rnd, oid, deferred=True)
        cur.execute("INSERT INTO orders VALUES (%s, %s, %s)", (oid, "d%d" % rnd.randint(0, 40), embed_text(rnd, "n")))
        if rnd.random() < 0.5:
            cur.execute("INSERT INTO shipping VALUES (%s, %s)", (oid, embed_text(rnd, "street ")))
    elif op < 0.25:
        # a line added to an order
        o = embed_pick(cur, some_order)
        if o:
            no = rnd.randint(-5, 45)
            cur.execute("INSERT INTO order_lines VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        (o[0], no, embed_text(rnd, "item"), rnd.randint(1, 9)))
            cur.execute("INSERT INTO line_taxes SELECT order_id, line_no, %s, %s FROM order_lines "
                        "WHERE order_id = %s AND line_no = %s ON CONFLICT DO NOTHING",
                        (rnd.choice(EMBED_TAXES), rnd.randint(0, 40) / 8.0, o[0], no))
    elif op < 0.38:
        # a line's quantity (its TOASTed item, if it has one, left out of the WAL), or its item
        ln = embed_pick(cur, some_line)
        if ln and rnd.random() < 0.7:
            cur.execute("UPDATE order_lines SET qty = coalesce(qty, 0) + 1 WHERE order_id = %s AND line_no = %s", ln)
        elif ln:
            cur.execute("UPDATE order_lines SET item = %s WHERE order_id = %s AND line_no = %s",
                        (embed_text(rnd, "item"),) + ln)
    elif op < 0.46:
        # a line moved to another order (its taxes follow by cascade), maybe renumbered
        ln = embed_pick(cur, some_line)
        o = embed_pick(cur, some_order)
        if ln and o:
            no = ln[1] if rnd.random() < 0.5 else rnd.randint(-5, 45)
            cur.execute("UPDATE order_lines SET order_id = %s, line_no = %s WHERE order_id = %s AND line_no = %s "
                        "AND NOT EXISTS (SELECT 1 FROM order_lines WHERE order_id = %s AND line_no = %s)",
                        (o[0], no) + ln + (o[0], no))
    elif op < 0.50:
        # a line renumbered in its order: its element moves in the array
        ln = embed_pick(cur, some_line)
        if ln:
            no = rnd.randint(-5, 45)
            cur.execute("UPDATE order_lines SET line_no = %s WHERE order_id = %s AND line_no = %s "
                        "AND NOT EXISTS (SELECT 1 FROM order_lines WHERE order_id = %s AND line_no = %s)",
                        (no,) + ln + (ln[0], no))
    elif op < 0.56:
        # an order's key changed: lines, taxes and shipping follow by cascade
        o = embed_pick(cur, some_order)
        if o:
            cur.execute("UPDATE orders SET id = %s WHERE id = %s", (next_id(), o[0]))
    elif op < 0.62:
        o = embed_pick(cur, some_order)
        if o:
            cur.execute("DELETE FROM orders WHERE id = %s", o)
    elif op < 0.67:
        ln = embed_pick(cur, some_line)
        if ln:
            cur.execute("DELETE FROM order_lines WHERE order_id = %s AND line_no = %s", ln)
    elif op < 0.77:
        # taxes: a rate, one moved to another line of its order, renamed (its key), deleted, added
        t = embed_pick(cur, "SELECT order_id, line_no, tax FROM line_taxes ORDER BY random() LIMIT 1")
        what = rnd.random()
        if t and what < 0.35:
            cur.execute("UPDATE line_taxes SET rate = %s WHERE order_id = %s AND line_no = %s AND tax = %s",
                        (rnd.randint(0, 40) / 8.0,) + t)
        elif t and what < 0.55:
            cur.execute("UPDATE line_taxes SET line_no = l.line_no FROM (SELECT line_no FROM order_lines "
                        "WHERE order_id = %s AND line_no <> %s ORDER BY random() LIMIT 1) l "
                        "WHERE line_taxes.order_id = %s AND line_taxes.line_no = %s AND line_taxes.tax = %s "
                        "AND NOT EXISTS (SELECT 1 FROM line_taxes x WHERE x.order_id = %s "
                        "AND x.line_no = l.line_no AND x.tax = %s)",
                        (t[0], t[1]) + t + (t[0], t[2]))
        elif t and what < 0.7:
            tax = rnd.choice(EMBED_TAXES)
            cur.execute("UPDATE line_taxes SET tax = %s WHERE order_id = %s AND line_no = %s AND tax = %s "
                        "AND NOT EXISTS (SELECT 1 FROM line_taxes WHERE order_id = %s AND line_no = %s "
                        "AND tax = %s)", (tax,) + t + (t[0], t[1], tax))
        elif t and what < 0.85:
            cur.execute("DELETE FROM line_taxes WHERE order_id = %s AND line_no = %s AND tax = %s", t)
        else:
            ln = embed_pick(cur, some_line)
            if ln:
                cur.execute("INSERT INTO line_taxes VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                            ln + (rnd.choice(EMBED_TAXES), rnd.randint(0, 40) / 8.0))
    elif op < 0.86:
        # shipping: upserted (a one-to-one sub-document), or deleted (null)
        o = embed_pick(cur, some_order)
        if o and rnd.random() < 0.65:
            cur.execute("INSERT INTO shipping VALUES (%s, %s) ON CONFLICT (order_id) DO UPDATE "
                        "SET address = excluded.address", (o[0], embed_text(rnd, "street ")))
        elif o:
            cur.execute("DELETE FROM shipping WHERE order_id = %s", o)
    elif op < 0.9985:
        # the order's own columns (its TOASTed note, if it has one, left out of the WAL when only customer changes)
        o = embed_pick(cur, some_order)
        if o and rnd.random() < 0.5:
            cur.execute("UPDATE orders SET note = %s WHERE id = %s", (embed_text(rnd, "n"), o[0]))
        elif o:
            cur.execute("UPDATE orders SET customer = %s WHERE id = %s", ("c%d" % rnd.randint(0, 40), o[0]))
    else:
        cur.execute("TRUNCATE line_taxes")
    return next(kind for upto, kind in EMBED_KINDS if op < upto)


def embed_workload(stop, seed, stats):
    """Random transactions of one to three changes until stop, retried through conflicts (a key taken by
    the other session, a deadlock: the transaction is dropped)."""
    rnd = random.Random(seed)
    ids = iter(range(100000 * seed, 100000 * (seed + 1)))
    conn = None
    while not stop.is_set():
        try:
            if conn is None:
                conn = psycopg2.connect(dbname=EMBED_DB)
            cur = conn.cursor()
            kinds = [embed_one(cur, rnd, lambda: next(ids)) for _ in range(rnd.randint(1, 3))]
            if rnd.random() < 0.08:
                conn.rollback()
            else:
                conn.commit()
                stats["txns"] += 1
                for kind in kinds:
                    stats["ops"][kind] = stats["ops"].get(kind, 0) + 1
            # a steady load FerretDB keeps up with: every embedded row's change is its top document
            # read and written whole
            time.sleep(0.05 + rnd.random() * 0.1)
        except psycopg2.Error:
            stats["errors"] += 1
            try:
                conn.close()
            except Exception:
                pass
            conn = None
            time.sleep(0.05)
    if conn is not None:
        conn.close()


def embed_retry(query, args=None, tries=10):
    """A statement run again after a conflict with the workload (a deadlock, a row it deleted): "" once it
    ran, else " (failed: the last error)"."""
    for _ in range(tries):
        try:
            embed_sql(query, args)
            return ""
        except psycopg2.Error as e:
            last = str(e).splitlines()[0]
            time.sleep(0.2)
    return " (failed: %s)" % last


def embed_answers(ferret, mdb):
    """None while FerretDB answers a read of the collection in 10 s, else what went wrong (FerretDB 1.24.2 stops
    answering for good when two update commands of 99 matching statements run at once: one of a process
    killed in the middle of its write and one of the next process)."""
    c = pymongo.MongoClient("127.0.0.1", ferret.port, serverSelectionTimeoutMS=5000, socketTimeoutMS=10000)
    try:
        c[mdb]["orders"].find_one()
        return None
    except pymongo.errors.PyMongoError as e:
        return repr(e)
    finally:
        c.close()


def embed_args(slot, out, to, extra):
    # small batches: an order's key change and the moves of its rows cascading from it fall in different
    # batches, where the rows' TOASTed values come from the deleted order's stash
    return [BIN, "-d", EMBED_DB, "--slot", slot, "-o", out, "--to", to, "--segment-time", "0.3",
            "--segment-size", "64kB", "--status-interval", "1", "--batch-size", "4",
            "--include-tables", EMBED_TABLES] + FERRET_OPTS + list(extra)


def embed_start(slot, out, to, create=False):
    extra = ["--create-slot", "--initial-copy", "--jobs", "2"] if create else []
    err = open(os.path.join(WORK, slot + ".stderr"), "ab")
    return subprocess.Popen(embed_args(slot, out, to, extra), stdout=subprocess.DEVNULL, stderr=err)


def embed_run_client(slot, out, to, endpos, timeout=600):
    """pg_bsonstream to --endpos: (exit status, or "timeout" when it had not ended in timeout s; stderr)."""
    try:
        r = subprocess.run(embed_args(slot, out, to, ["--no-sync", "--endpos", endpos]), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr or ""
        return "timeout", err.decode(errors="replace") if isinstance(err, bytes) else err
    return r.returncode, r.stderr


def embed_compare(name, ferret, mdb):
    """Every orders document read back through the server equals bson_document of its row, byte for byte."""
    conn = psycopg2.connect(dbname=EMBED_DB)
    cur = conn.cursor()
    cur.execute("SELECT bson_document(o) FROM orders o")
    want = {}
    for (raw,) in cur.fetchall():
        raw = bytes(raw)
        want[bson.encode({"k": bson.decode(raw, codec_options=RAW)["_id"]})] = raw
    cur.execute("SELECT (SELECT count(*) FROM order_lines), (SELECT count(*) FROM line_taxes), "
                "(SELECT count(*) FROM shipping)")
    counts = cur.fetchone()
    conn.close()
    client = ferret.client()
    got = {bson.encode({"k": d["_id"]}): d.raw for d in client[mdb]["orders"].find()}
    client.close()
    missing = [k for k in want if k not in got]
    differ = [k for k in want if k in got and got[k] != want[k]]
    surplus = [k for k in got if k not in want]
    detail = ["%d missing, %d different, %d surplus (of %d)" % (len(missing), len(differ), len(surplus), len(want))]

    def embed_short(v):
        # long strings (the TOASTed values) by their length
        if isinstance(v, dict):
            return {k: embed_short(x) for k, x in v.items()}
        if isinstance(v, list):
            return [embed_short(x) for x in v]
        return "<%d chars>" % len(v) if isinstance(v, str) and len(v) > 40 else v

    def short(raw):
        return embed_short(bson.decode(raw))
    for k in differ[:3]:
        detail.append("  table:      %r" % short(want[k]))
        detail.append("  collection: %r" % short(got[k]))
    for k in missing[:3]:
        detail.append("  missing:    %r" % short(want[k]))
    for k in surplus[:3]:
        detail.append("  surplus:    %r" % short(got[k]))
    return check(not missing and not differ and not surplus,
                 "%s: every orders document read back through the server equals bson_document of its row byte "
                 "for byte, field order included (%d orders; %d lines, %d taxes, %d shipping embedded)"
                 % ((name, len(want)) + counts), "\n".join(detail))


def embed_run(ferret):
    """Embedded rows end to end into FerretDB: the first copy of orders with their lines, the lines' taxes and
    the shipping embedded, then a random workload (inserts, updates, deletes, key changes, moves between
    parents, cascades, truncates, deferred constraints) while pg_bsonstream is killed with SIGKILL and
    FerretDB is restarted; at the end every order's document equals bson_document of its row, and the
    embedded tables have no collection of their own."""
    embed_setup()
    out = os.path.join(WORK, "embed")
    slot = "embed"
    mdb = "xembed"
    uri = ferret.uri(mdb)
    stop = threading.Event()
    stats = {"txns": 0, "errors": 0, "ops": {}}
    workers = [threading.Thread(target=embed_workload, args=(stop, s, stats)) for s in (1, 2)]
    for t in workers:
        t.start()
    proc = None
    events = []
    try:
        time.sleep(0.5)
        proc = embed_start(slot, out, uri, create=True)
        # the first kill once the slot is made, likely in the first copy
        deadline = time.time() + 30
        while time.time() < deadline and not sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)):
            time.sleep(0.05)
        rnd = random.Random(23)
        for step in ["kill", "kill", "truncate", "ferret", "kill", "kill", "kill"]:
            time.sleep(rnd.random() if not events else 2 + rnd.random() * 2.5)
            if step == "kill":
                proc.kill()
                proc.wait()
                wait_slot_free(slot)
                proc = embed_start(slot, out, uri)
            elif step == "ferret":
                ferret.stop()
                time.sleep(0.5 + rnd.random())
                ferret.start()
            elif step == "truncate":
                # the lines gone from every order (the taxes with them), then lines and taxes for every
                # order in one large transaction (the orders locked: none deleted under it)
                step += embed_retry("TRUNCATE order_lines CASCADE")
                step += embed_retry(
                    "BEGIN; LOCK TABLE orders IN SHARE MODE; "
                    "INSERT INTO order_lines SELECT id, l * 2, 'r' || id || '.' || l, l "
                    "FROM orders, generate_series(1, 1 + id %% 3) l ON CONFLICT DO NOTHING; "
                    "INSERT INTO line_taxes SELECT order_id, line_no, t, line_no / 4.0 FROM order_lines, "
                    "unnest(%s::text[]) t WHERE (order_id + line_no + length(t)) %% 4 = 0 ON CONFLICT DO NOTHING; "
                    "COMMIT", (EMBED_TAXES,))
            events.append(step)
    except BaseException:
        if proc is not None:
            proc.kill()
            proc.wait()
        raise
    finally:
        # never a workload left running (its threads would keep the script from ending)
        stop.set()
        for t in workers:
            t.join()
    end = current_lsn()
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = "hung"
    wait_slot_free(slot)
    log = open(os.path.join(WORK, slot + ".stderr"), errors="replace").read()
    check(rc == 0, "embed: SIGTERM after %d transactions (%s; %d dropped by a conflict) through %s: exit 0"
          % (stats["txns"], ", ".join("%s %d" % (k, stats["ops"].get(k, 0)) for _, k in EMBED_KINDS),
             stats["errors"], ", ".join(events)),
          "exit status %s\n%s" % (rc, log[-3000:]))
    wedged = embed_answers(ferret, mdb)
    if not check(wedged is None, "embed: FerretDB still answers a read", wedged):
        # restarted, to see the rest through
        ferret.stop(signal.SIGKILL)
        ferret.start()
    rc, err = embed_run_client(slot, out, uri, end)
    check(rc == 0, "embed: a last run to --endpos applies the rest", "exit %s\n%s" % (rc, err[-3000:]))
    check("the first copy is in MongoDB (1 collection)" in log + err,
          "embed: the first copy loaded into one collection, orders", (log + err)[-2000:])
    check("MongoDB refused" not in log + err, "embed: no change refused",
          "\n".join(l for l in (log + err).splitlines() if "MongoDB refused" in l)[-3000:])
    embed_compare("embed", ferret, mdb)
    names = collection_names(ferret, mdb)
    check("orders" in names and not names & {"order_lines", "line_taxes", "shipping"},
          "embed: no collection of an embedded table (order_lines, line_taxes, shipping), orders there",
          sorted(names))
    p = progress_doc(ferret, mdb, slot)
    check(p is not None and p.get("initial") == "done", "embed: the progress document says the first copy is done", p)
    sql("SELECT pg_drop_replication_slot(%s)", (slot,))


def main():
    ferret = Ferret("ferret")
    ferret.start()
    try:
        setup()
        only = os.environ.get("ONLY", "").split()
        for run in (symbols_run, errors_run, key_change_run, refusals_run, partitions_run, oversize_run, unique_run,
                    cut_run, tls_auth_run, main_run, buffer_run, modes_run, secrets_run, names_run,
                    driver_refusal_run, restart_fresh_run, unreachable_restart_run, stop_run, dead_letter_torn_run,
                    max_buffer_run, unique_replay_run, missing_target_run, long_truncate_run, schema_run, write_wait_run, stale_stash_run,
                    copy_status_run, mjs_run, embed_run):
            if not only or run.__name__ in only:
                run(ferret)
    finally:
        ferret.stop()
    print("mongo: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
