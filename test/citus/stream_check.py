#!/usr/bin/env python3
"""pg_bsonstream --citus on the Citus stage's live cluster (test/citus/stream.sh).

First the plugin alone, through SQL slots on each node: a partitioned
distributed table's shards named by the root, TRUNCATE of a partition and
of a distributed table, a table distributed and written in one transaction,
create_distributed_table's copy left out, nothing from the coordinator's
own copy of a distributed table.

Then a random workload from several sessions on a distributed table (32
shards, a dropped column), a reference table and a local table of the
coordinator runs while pg_bsonstream --citus --jobs 2 follows every node,
from its first copy on.  During it: a shard moved from worker 1 to worker 2
(logical replication, writes going on), a shard split between the workers,
the client killed with SIGKILL and started again, worker 1 restarted; the
workers' own rows (bson_out.citus_rows = node) with a left-behind shard
present; a Ctrl-C to the process group.  Then a node that joins the
cluster and takes a shard while the stream runs.  At the end:

  - every event is named by its table (no shard name), the reference
    table's only in the coordinator's stream;
  - the copies and the events, replayed onto a model as MongoDB's Kafka sink
    applies them (insert and replace: the whole document; update: $set of
    updatedFields and $unset of removedFields; delete: the document gone),
    each node's events once (a resume token sent again after the kill is
    counted, and dropped) and the nodes' streams merged by wallTime, give
    exactly the tables' documents (bson_document of every row): no row
    missing, none twice (an insert of a document the model has already, or
    a change of one it lacks, is counted as an error), none different.

Rows written to a table before create_distributed_table: the coordinator's
slot read again after the distribution still gives them (SQL alone), and
through pg_bsonstream killed with SIGKILL before it received them and
started again after the distribution, each row once.

The last line is "citus-stream: N passed, M failed".
"""
import glob
import heapq
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from crosscheck_common import pg_error, reassemble   # noqa: E402  (before bson.json_util)

import bson   # noqa: E402
import psycopg2   # noqa: E402

BIN = os.environ["PG_BSONSTREAM"]
WORK = os.environ["WORK"]
PG_BINDIR = os.environ["PG_BINDIR"]
CITUS_DIR = os.environ["CITUS_DIR"]
RUNAS = os.environ.get("RUNAS", "").split()
NODES = {n: (os.environ["CITUS_%s_SOCKET" % n.upper()], os.environ["CITUS_%s_PORT" % n.upper()])
         for n in ("coord", "worker1", "worker2")}
TABLES = ("cs_dist", "cs_ref", "cs_loc")
SESSIONS = 4

passed = 0
failed = 0
CLIENTS = []    # every pg_bsonstream started, stopped for good when the checks end


def stop_clients(*_):
    for p in CLIENTS:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    if _:
        sys.exit(1)


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


def connect(node="coord"):
    host, port = NODES[node]
    c = psycopg2.connect(host=host, port=port, user="postgres", dbname="postgres")
    c.autocommit = True
    return c


def sql(query, node="coord", timeout="120s"):
    """query's rows (None for a command), stopped after timeout: a Citus
    operation that hangs fails the check instead of the whole stage."""
    c = connect(node)
    try:
        cur = c.cursor()
        cur.execute("SET statement_timeout = '%s'" % timeout)
        cur.execute(query)
        return cur.fetchall() if cur.description else None
    finally:
        c.close()


def sql_each(script):
    """Each statement of script in a transaction of its own, as psql runs a file."""
    for stmt in [x.strip() for x in script.split(";")]:
        if stmt:
            sql(stmt)


def setup():
    sql_each("""
        DROP TABLE IF EXISTS cs_dist, cs_ref, cs_loc;
        CREATE TABLE cs_dist (id bigint PRIMARY KEY, v int NOT NULL, t text, n numeric,
                              ts timestamptz, doc jsonb);
        SELECT create_distributed_table('cs_dist', 'id', shard_count := 32);
        ALTER TABLE cs_dist ADD COLUMN gone int;
        ALTER TABLE cs_dist DROP COLUMN gone;
        CREATE TABLE cs_ref (id int PRIMARY KEY, v int NOT NULL, t text);
        SELECT create_reference_table('cs_ref');
        CREATE TABLE cs_loc (id int PRIMARY KEY, v int NOT NULL, t text);
        INSERT INTO cs_dist SELECT g, g % 7, 'r' || g, g * 1.25, '2026-01-01'::timestamptz + g * interval '1 min',
                                   jsonb_build_object('g', g, 'a', jsonb_build_array(g, 'x'))
            FROM generate_series(1, 3000) g;
        INSERT INTO cs_ref SELECT g, g, 'ref' || g FROM generate_series(1, 200) g;
        INSERT INTO cs_loc SELECT g, g, 'loc' || g FROM generate_series(1, 200) g;
    """)


class Workload:
    """SESSIONS threads, each on its own rows (id % SESSIONS), random
    transactions of one to four changes, a few rolled back, some touching
    several shards at once (two-phase commit across the workers)."""

    def __init__(self):
        self.stop = threading.Event()
        self.commits = 0
        self.errors = 0
        self.last_error = ""
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
            cur.execute("SELECT id FROM %s WHERE id %% %d = %d" % (tbl, SESSIONS, k))
            ids[tbl] = set(r[0] for r in cur.fetchall())
        return ids

    def run(self, k):
        rnd = random.Random(k)
        conn = None
        ids = None
        nxt = {tbl: 100000 + k for tbl in TABLES}
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = psycopg2.connect(host=NODES["coord"][0], port=NODES["coord"][1],
                                            user="postgres", dbname="postgres")
                    conn.autocommit = True
                    ids = self.known(conn.cursor(), k)
                    conn.autocommit = False
                cur = conn.cursor()
                pending = []
                for _ in range(rnd.randint(1, 4)):
                    tbl = rnd.choice(("cs_dist", "cs_dist", "cs_dist", "cs_ref", "cs_loc"))
                    have = ids[tbl]
                    op = rnd.random()
                    if op < 0.35 or len(have) < 10:
                        i = nxt[tbl]
                        nxt[tbl] += SESSIONS
                        if tbl == "cs_dist":
                            cur.execute("INSERT INTO cs_dist VALUES (%s, %s, %s, %s, now(), %s)",
                                        (i, rnd.randint(0, 99), "w%d" % i, "%d.%d" % (i, rnd.randint(0, 99)),
                                         '{"w": %d}' % i))
                        else:
                            cur.execute("INSERT INTO %s VALUES (%%s, %%s, %%s)" % tbl, (i, i, "w%d" % i))
                        pending.append(("add", tbl, i))
                    elif op < 0.75:
                        some = rnd.sample(sorted(have), rnd.choice((1, 1, 3)))
                        cur.execute("UPDATE %s SET v = v + 1, t = %%s WHERE id = ANY(%%s)" % tbl,
                                    (None if rnd.random() < 0.2 else "u%d" % rnd.randint(0, 10 ** 6), some))
                    else:
                        i = rnd.choice(sorted(have))
                        cur.execute("DELETE FROM %s WHERE id = %%s" % tbl, (i,))
                        pending.append(("del", tbl, i))
                if rnd.random() < 0.05:
                    conn.rollback()
                    continue
                conn.commit()
                for what, tbl, i in pending:
                    (ids[tbl].add if what == "add" else ids[tbl].discard)(i)
                with self.lock:
                    self.commits += 1
            except psycopg2.Error as e:
                # a shard move's switch, a worker restarting: the outcome of a
                # failed commit is not known, so the rows are read again
                with self.lock:
                    self.errors += 1
                    self.last_error = pg_error(e) if hasattr(e, "pgcode") else str(e)
                try:
                    conn.close()
                except Exception:
                    pass
                conn = None
                time.sleep(0.2)
        if conn is not None:
            conn.close()


def start_client(out, log, *extra):
    args = [BIN, "--citus", "-h", NODES["coord"][0], "-p", NODES["coord"][1], "-U", "postgres",
            "-d", "postgres", "--slot", "cs", "--include-tables", "public.cs_*", "-o", out,
            "--segment-time", "1", "--status-interval", "1"] + list(extra)
    # a session of its own, as a program started from a shell: a Ctrl-C
    # reaches its process group
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(log, "a"), start_new_session=True)
    CLIENTS.append(proc)
    return proc


def groups(out):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "group-*")))


def copies_done(out, n):
    done = [g for g in groups(out) if os.path.isdir(os.path.join(out, g, "changes")) and
            not os.path.exists(os.path.join(out, g, "initial", ".incomplete"))]
    return len(done) >= n


def wait_for(cond, timeout, step=0.2):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def caught_up(nodes, timeout=90):
    """Every node's slot confirmed past the node's WAL position now."""
    targets = {n: sql("SELECT pg_current_wal_lsn()", n)[0][0] for n in nodes}

    def done():
        for n, lsn in targets.items():
            r = sql("SELECT confirmed_flush_lsn >= '%s' FROM pg_replication_slots WHERE slot_name = 'cs'" % lsn, n)
            if not r or not r[0][0]:
                return False
        return True
    return wait_for(done, timeout, 0.5)


def node_events(out, group):
    """A node's events in stream order, each resume token once; and how many were sent again."""
    events = {}
    read = 0
    for path in sorted(glob.glob(os.path.join(out, group, "changes", "*.bson"))):
        with open(path, "rb") as f:
            for e in bson.decode_file_iter(f):
                read += 1
                events[e["_id"]["_data"]] = e
    return list(reassemble(events[t] for t in sorted(events))), read - len(events)


def key(doc_id):
    return bson.encode({"k": doc_id})


def replay(out):
    """The model, and what the replay found wrong."""
    model = {t: {} for t in TABLES}
    problems = []
    copied = 0
    for g in groups(out):
        for path in glob.glob(os.path.join(out, g, "initial", "*", "*.bson")):
            coll = os.path.basename(path)[:-5]
            docs = model.setdefault(coll, {})
            with open(path, "rb") as f:
                for d in bson.decode_file_iter(f):
                    copied += 1
                    if key(d["_id"]) in docs:
                        problems.append("%s: %s in two copies" % (coll, d["_id"]))
                    docs[key(d["_id"])] = d
    streams = {}
    resent = 0
    for g in groups(out):
        streams[g], again = node_events(out, g)
        resent += again
    stats = {"copied": copied, "events": sum(len(s) for s in streams.values()), "resent": resent,
             "per group": {g: len(s) for g, s in streams.items()}}
    bad_ns = [(g, e["ns"]["coll"]) for g, s in streams.items() for e in s if e["ns"]["coll"] not in TABLES]
    ref_elsewhere = sum(1 for g, s in streams.items() if g != "group-0" for e in s if e["ns"]["coll"] == "cs_ref")
    stats["bad ns"] = bad_ns
    stats["ref elsewhere"] = ref_elsewhere
    stats["ref here"] = sum(1 for e in streams.get("group-0", ()) if e["ns"]["coll"] == "cs_ref")
    merged = heapq.merge(*([(e["wallTime"], g, i, e) for i, e in enumerate(s)] for g, s in streams.items()))
    for _, g, _, e in merged:
        coll = e["ns"]["coll"]
        docs = model.setdefault(coll, {})
        op = e["operationType"]
        k = key(e["documentKey"]["_id"])
        if op == "insert":
            if k in docs:
                problems.append("%s %s: insert of %s, which the model has" % (g, coll, e["documentKey"]))
            docs[k] = e["fullDocument"]
        elif op == "replace":
            if k not in docs:
                problems.append("%s %s: replace of %s, which the model lacks" % (g, coll, e["documentKey"]))
            docs[k] = e["fullDocument"]
        elif op == "update":
            if k not in docs:
                problems.append("%s %s: update of %s, which the model lacks" % (g, coll, e["documentKey"]))
                continue
            d = dict(docs[k])
            d.update(e["updateDescription"]["updatedFields"])
            for f in e["updateDescription"]["removedFields"]:
                d.pop(f, None)
            docs[k] = d
        elif op == "delete":
            if k not in docs:
                problems.append("%s %s: delete of %s, which the model lacks" % (g, coll, e["documentKey"]))
            docs.pop(k, None)
        else:
            problems.append("%s %s: unexpected %s event" % (g, coll, op))
    return model, problems, stats


def tables_now():
    now = {}
    c = connect()
    cur = c.cursor()
    for t in TABLES:
        cur.execute("SELECT bson_document(t.*, false, true) FROM %s t" % t)
        now[t] = {}
        for (raw,) in cur.fetchall():
            d = bson.decode(bytes(raw))
            now[t][key(d["_id"])] = d
    c.close()
    return now


def compare(name, out):
    model, problems, stats = replay(out)
    now = tables_now()
    diffs = []
    for t in TABLES:
        m, n = model.get(t, {}), now[t]
        missing = [k for k in n if k not in m]
        surplus = [k for k in m if k not in n]
        differ = [k for k in n if k in m and dict(m[k]) != n[k]]
        if missing or surplus or differ:
            diffs.append("%s: %d missing, %d surplus, %d different (of %d)%s"
                         % (t, len(missing), len(surplus), len(differ), len(n),
                            "" if not differ else ": model %s, table %s"
                            % (dict(m[differ[0]]), n[differ[0]])))
    check(not stats["bad ns"], "%s: every event is named by its table, none by a shard" % name,
          stats["bad ns"][:10])
    check(stats["ref elsewhere"] == 0 and stats["ref here"] > 0,
          "%s: the reference table's events come from the coordinator only (%d)" % (name, stats["ref here"]),
          "%d cs_ref events in the workers' streams" % stats["ref elsewhere"])
    check(not problems, "%s: no row twice, no change of a missing row (%d copied documents, %d events, "
          "%d sent again after a kill and dropped; per node %s)"
          % (name, stats["copied"], stats["events"], stats["resent"], stats["per group"]),
          "\n".join(problems[:20]))
    check(not diffs and stats["events"] > 0, "%s: copies + events equal the tables (%s)"
          % (name, ", ".join("%s %d" % (t, len(now[t])) for t in TABLES)), "\n".join(diffs))
    return stats


def stop_client(proc, name, ctrl_c=False):
    """SIGTERM to pg_bsonstream, or SIGINT to its process group as a Ctrl-C
    at a terminal sends it."""
    if ctrl_c:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc = "timeout"
    return check(rc == 0, "%s: %s stops every node's stream cleanly (exit status %s)"
                 % (name, "a Ctrl-C (SIGINT to the process group)" if ctrl_c else "a SIGTERM", rc))


def pg_ctl(node, action):
    data = os.path.join(CITUS_DIR, node, "data")
    mode = ["-m", "fast"] if action != "start" else []
    return subprocess.run(RUNAS + [os.path.join(PG_BINDIR, "pg_ctl"), "-D", data, "-l",
                                   os.path.join(CITUS_DIR, node, "server.log"), "-w"] + mode + [action],
                          capture_output=True, text=True)


def shard_on(port, table="cs_dist", other_than=0):
    return sql("SELECT min(shardid) FROM citus_shards WHERE table_name = '%s'::regclass AND nodeport = %s "
               "AND shardid <> %s" % (table, port, other_than))[0][0]


def node_rows_check():
    """Each worker's rows as its first copy reads them: its own shards under
    their tables' names, not the ones a move or split left behind."""
    left = sql("SELECT count(*) FROM pg_dist_cleanup")[0][0]
    total = 0
    colls = set()
    for n in ("worker1", "worker2"):
        c = connect(n)
        cur = c.cursor()
        cur.execute("SET bson_out.citus_rows = node")
        cur.execute("SET citus.override_table_visibility = off")
        cur.execute("SELECT coll, query FROM bson_collections(ARRAY['public.cs_*'])")
        for coll, query in cur.fetchall():
            colls.add(coll)
            cur.execute("SELECT count(*) FROM (%s) q" % query)
            total += cur.fetchone()[0] if coll == "cs_dist" else 0
        c.close()
    want = sql("SELECT count(*) FROM cs_dist")[0][0]
    check(colls == {"cs_dist"} and total == want and left > 0,
          "the workers' own rows (bson_out.citus_rows = node): cs_dist only, %d rows = the table's, "
          "with %d shards a move or split left behind" % (total, left), "%s %d %d %d" % (colls, total, want, left))


def main_run():
    out = os.path.join(WORK, "cs")
    log = os.path.join(WORK, "cs.log")
    setup()
    w1, w2 = NODES["worker1"][1], NODES["worker2"][1]
    # Citus leaves the shards a move or a split replaced for its cleanup:
    # kept here until the end, so that the new node's first copy meets them
    sql("ALTER SYSTEM SET citus.defer_shard_delete_interval = -1")
    sql("SELECT pg_reload_conf()")
    proc = start_client(out, log, "--create-slot", "--initial-copy", "--jobs", "2")
    load = Workload()
    load.start()
    check(wait_for(lambda: copies_done(out, 3), 60), "first copies of the 3 nodes, under the workload",
          open(log).read())
    time.sleep(2)

    shard = moved_shard = shard_on(w1)
    try:
        sql("SELECT citus_move_shard_placement(%s, '127.0.0.1', %s, '127.0.0.1', %s)" % (shard, w1, w2))
        moved = sql("SELECT nodeport FROM citus_shards WHERE shardid = %s" % shard)
        check(moved == [(int(w2),)], "shard %s moved to worker 2 while the workload writes" % shard, moved)
    except psycopg2.Error as e:
        fail("moving shard %s" % shard, pg_error(e))
    time.sleep(2)

    # not the shard just moved: a split deletes the metadata row of the shard
    # it replaces, and worker 1's changes from before the move, decoded again
    # after the kill below, would then have no name once that row is pruned
    shard = shard_on(w2, other_than=moved_shard)
    try:
        lo, hi = sql("SELECT shardminvalue::bigint, shardmaxvalue::bigint FROM pg_dist_shard "
                     "WHERE shardid = %s" % shard)[0]
        ids = sql("SELECT nodeid FROM pg_dist_node WHERE nodeport IN (%s, %s) ORDER BY nodeport = %s DESC"
                  % (w1, w2, w2))
        # blocking writes to that shard: a non-blocking split under
        # concurrent updates can hang for good (Citus issue 6790)
        sql("SELECT citus_split_shard_by_split_points(%s, ARRAY['%d'], ARRAY[%d, %d], "
            "shard_transfer_mode := 'block_writes')" % (shard, (lo + hi) // 2, ids[0][0], ids[1][0]))
        halves = sql("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'cs_dist'::regclass")
        check(halves == [(33,)], "shard %s split in two, one half on each worker" % shard, halves)
    except psycopg2.Error as e:
        fail("splitting shard %s" % shard, pg_error(e))
    time.sleep(2)

    proc.kill()
    proc.wait()
    time.sleep(1)
    proc = start_client(out, log)
    time.sleep(3)
    check(proc.poll() is None, "killed with SIGKILL, started again: runs on", open(log).read()[-3000:])

    r = pg_ctl("worker1", "restart")
    check(r.returncode == 0, "worker 1 restarted under the stream", r.stderr)
    time.sleep(4)

    load.finish()
    check(load.commits > 100, "the workload: %d transactions committed, %d failed (the move's switch, "
          "the restart)" % (load.commits, load.errors), load.last_error)
    check(caught_up(("coord", "worker1", "worker2")), "every node's slot confirmed to its WAL's end",
          open(log).read()[-3000:])
    node_rows_check()
    stop_client(proc, "main", ctrl_c=True)
    text = open(log).read()
    check(re.search(r"\[group 1 [^]]*\] pg_bsonstream: reconnected", text) and
          "ended the stream (it is shutting down or restarting)" in text,
          "the log: worker 1's stream ended by its restart, and reconnected", text[-3000:])
    return out, log, compare("main", out)


def join_run(out, log):
    """A fourth node joins while the stream runs, a shard moves to it."""
    node = "worker3"
    data = os.path.join(CITUS_DIR, node, "data")
    os.makedirs(os.path.join(CITUS_DIR, node), exist_ok=True)
    subprocess.run(["chown", "postgres:", os.path.join(CITUS_DIR, node)], check=False)
    r = subprocess.run(RUNAS + [os.path.join(PG_BINDIR, "initdb"), "-D", data, "-U", "postgres",
                                "--encoding=UTF8", "--locale=C", "--auth=trust"], capture_output=True, text=True)
    if not check(r.returncode == 0, "a fourth node: initdb", r.stderr):
        return
    conf = open(os.path.join(CITUS_DIR, "worker1", "data", "postgresql.conf")).read()
    port = str(int(NODES["worker2"][1]) + 1)
    while subprocess.run(["ss", "-Hltn", "sport = :%s" % port], capture_output=True, text=True).stdout.strip():
        port = str(int(port) + 1)
    sock = os.path.join(CITUS_DIR, node)
    lines = [l for l in conf.splitlines() if not l.startswith(("port =", "unix_socket_directories ="))]
    with open(os.path.join(data, "postgresql.conf"), "w") as f:
        f.write("\n".join(lines) + "\nport = %s\nunix_socket_directories = '%s'\n" % (port, sock))
    r = pg_ctl(node, "start")
    if not check(r.returncode == 0, "a fourth node: started", r.stderr):
        return
    NODES[node] = (sock, port)
    sql("CREATE EXTENSION citus", node)

    # worker 1 through its Unix socket instead of 127.0.0.1
    proc = start_client(out, log, "--worker-host", "127.0.0.1:%s=%s" % (NODES["worker1"][1], NODES["worker1"][0]))
    load = Workload()
    load.start()
    time.sleep(3)
    via = sql("SELECT client_addr IS NULL FROM pg_stat_replication WHERE application_name = 'pg_bsonstream'",
              "worker1")
    check(via == [(True,)], "--worker-host: worker 1's stream through its Unix socket", via)
    sql("SELECT citus_add_node('127.0.0.1', %s)" % port)
    # the stream reads the node list every 10 s
    followed = wait_for(lambda: len(groups(out)) == 4 and copies_done(out, 4), 40)
    text = open(log).read()
    check(followed and "joined the cluster" in text, "the new node is followed, with a first copy: %s"
          % groups(out), text[-2000:])
    shard = shard_on(NODES["worker1"][1])
    try:
        # Citus moves a shard to a node only once it has the reference tables
        sql("SELECT replicate_reference_tables()")
        sql("SELECT citus_move_shard_placement(%s, '127.0.0.1', %s, '127.0.0.1', %s)"
            % (shard, NODES["worker1"][1], port))
        ok("shard %s moved to the new node" % shard)
        # rows of that shard changed on the new node, whatever the workload does
        sql("UPDATE cs_dist SET v = v + 1000 WHERE id IN (SELECT id FROM cs_dist "
            "WHERE get_shard_id_for_distribution_column('cs_dist', id) = %s LIMIT 5)" % shard)
    except psycopg2.Error as e:
        fail("moving shard %s to the new node" % shard, pg_error(e))
    time.sleep(3)
    load.finish()
    check(caught_up(("coord", "worker1", "worker2", node)), "every node's slot confirmed to its WAL's end",
          open(log).read()[-3000:])
    stop_client(proc, "join")
    stats = compare("join", out)
    check(stats["per group"].get("group-3", 0) >= 5, "the new node's stream has the changes of the "
          "shard moved to it (%d events)" % stats["per group"].get("group-3", 0))


def peek(node, slot):
    """The slot's messages on node, decoded, not consumed."""
    rows = sql("SELECT data FROM pg_logical_slot_peek_binary_changes('%s', NULL, NULL)" % slot, node)
    return [bson.decode(bytes(r[0])) for r in rows]


def shape(e):
    if e["operationType"] == "truncate":
        return ("truncate", e["ns"]["coll"], tuple(e.get("partitions", ())))
    return (e["operationType"], e["ns"]["coll"])


def truncate_and_partitions_run():
    """The plugin alone, on each worker: a partitioned distributed table's
    shards named by its root, a TRUNCATE of the table and of a partition."""
    sql_each("""
        CREATE TABLE cs_part (id bigint, d date, v int, PRIMARY KEY (id, d)) PARTITION BY RANGE (d);
        CREATE TABLE cs_part_2025 PARTITION OF cs_part FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
        CREATE TABLE cs_part_2026 PARTITION OF cs_part FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
        SELECT create_distributed_table('cs_part', 'id', shard_count := 4);
        CREATE TABLE cs_whole (id bigint PRIMARY KEY);
        SELECT create_distributed_table('cs_whole', 'id', shard_count := 4);
        CREATE TABLE cs_mx (id bigint PRIMARY KEY);
        SELECT create_distributed_table('cs_mx', 'id', shard_count := 4);
        CREATE TABLE cs_rt (id bigint PRIMARY KEY);
        SELECT create_reference_table('cs_rt');
    """)
    sql_each("CREATE TABLE cs_conv (id int PRIMARY KEY, v text); INSERT INTO cs_conv SELECT g, 'c' FROM generate_series(1, 20) g")
    for n in ("coord", "worker1", "worker2"):
        sql("SELECT 1 FROM pg_create_logical_replication_slot('tr', 'bson_out')", n)
    # a table distributed and written in one transaction: on a worker,
    # Citus creates it and its shards over several connections at once
    c = connect()
    c.autocommit = False
    cur = c.cursor()
    cur.execute("CREATE TABLE cs_new (id int PRIMARY KEY, v int)")
    cur.execute("SELECT create_distributed_table('cs_new', 'id', shard_count := 8)")
    cur.execute("INSERT INTO cs_new SELECT g, g FROM generate_series(1, 30) g")
    c.commit()
    c.close()
    sql_each("""
        SELECT create_distributed_table('cs_conv', 'id', shard_count := 4);
        SELECT truncate_local_data_after_distributing_table('cs_conv');
        INSERT INTO cs_part SELECT g, date '2025-06-01' + (g % 2) * 365, g FROM generate_series(1, 40) g;
        INSERT INTO cs_whole SELECT generate_series(1, 10);
        TRUNCATE cs_part_2026;
        TRUNCATE cs_whole;
        INSERT INTO cs_mx SELECT generate_series(1, 10);
        INSERT INTO cs_rt SELECT generate_series(1, 10);
        TRUNCATE cs_rt;
    """)
    # run on a worker: that worker's truncate is the cluster's
    sql("TRUNCATE cs_mx", "worker1")
    # a session with Citus's change data capture off is told what it costs
    c = connect("worker1")
    cur = c.cursor()
    cur.execute("SET citus.enable_change_data_capture = off")
    cur.execute("SELECT count(*) FROM pg_logical_slot_peek_binary_changes('tr', NULL, NULL)")
    warned = [x for x in c.notices if "citus.enable_change_data_capture is off on this node" in x]
    c.close()
    check(len(warned) == 1, "citus.enable_change_data_capture off: a warning when decoding starts", c.notices)
    got = {}
    new_rows = 0
    for n in ("coord", "worker1", "worker2"):
        events = peek(n, "tr")
        got[n] = sorted(set(shape(e) for e in events))
        new_rows += sum(1 for e in events if e["ns"]["coll"] == "cs_new")
        sql("SELECT pg_drop_replication_slot('tr')", n)
    sql("DROP TABLE cs_part, cs_whole, cs_conv, cs_new, cs_mx, cs_rt")
    check(new_rows == 30, "a table distributed and written in one transaction: its 30 rows, named by "
          "the table (%d)" % new_rows, got)
    want = [("insert", "cs_mx"), ("insert", "cs_new"), ("insert", "cs_part"), ("insert", "cs_whole")]
    check(got["worker1"] == want + [("truncate", "cs_mx", ())] and got["worker2"] == want,
          "each worker: its shards of a partitioned table as the root's, by their tables' names, "
          "no truncate of theirs but the one run on worker 1, once for the cluster; "
          "create_distributed_table's copy left out", got)
    check(got["coord"] == [("insert", "cs_rt"), ("truncate", "cs_part", ("cs_part_2026",)),
                           ("truncate", "cs_rt", ()), ("truncate", "cs_whole", ())],
          "the coordinator: the TRUNCATE of a partition, of a distributed and of a reference table, "
          "once for the cluster, and no row of the distributed tables (they are in shards; "
          "truncate_local_data_after_distributing_table is no truncation of the collection)", got)


def events_of(out, coll):
    """(group, event) of every event of coll, each node's resume tokens once."""
    return [(g, e) for g in groups(out) for e in node_events(out, g)[0] if e["ns"]["coll"] == coll]


def predistribution_run(out, log):
    """Rows written to a table before create_distributed_table are the
    collection's: the coordinator streams them even when it decodes them
    after the distribution (a new decoding session, as after any restart),
    and the workers leave out Citus's copy of them to the shards."""
    sql("SELECT 1 FROM pg_create_logical_replication_slot('pd', 'bson_out')")
    sql("CREATE TABLE pd_t (id int PRIMARY KEY, v text)")
    for i in range(1, 6):
        sql("INSERT INTO pd_t VALUES (%d, 'before')" % i)

    def coord_shapes():
        return [shape(e) for e in peek("coord", "pd") if e["ns"]["coll"] == "pd_t"]
    # a peek reads the WAL flushed so far (the cluster commits asynchronously)
    wait_for(lambda: len(coord_shapes()) == 5, 20, 0.5)
    before = coord_shapes()
    sql("SELECT create_distributed_table('pd_t', 'id')")
    after = coord_shapes()
    sql("INSERT INTO pd_t VALUES (6, 'after')")
    sql("SELECT truncate_local_data_after_distributing_table('pd_t')")
    later = coord_shapes()
    sql("SELECT pg_drop_replication_slot('pd')")
    sql("DROP TABLE pd_t")
    five = [("insert", "pd_t")] * 5
    check(before == five and after == five and later == five,
          "rows inserted before create_distributed_table: the coordinator's slot read again after it "
          "still gives their 5 inserts; nothing of the table after it, no truncate", (before, after, later))

    # the same through pg_bsonstream, killed with SIGKILL before it received
    # the inserts, started again after the distribution
    proc = start_client(out, log)
    time.sleep(3)
    sql("CREATE TABLE cs_pre (id int PRIMARY KEY, v text)")
    os.kill(proc.pid, signal.SIGSTOP)
    for i in range(1, 6):
        sql("INSERT INTO cs_pre VALUES (%d, 'before')" % i)
    proc.kill()
    proc.wait()
    sql("SELECT create_distributed_table('cs_pre', 'id')")
    sql("INSERT INTO cs_pre SELECT g, 'after' FROM generate_series(6, 8) g")
    proc = start_client(out, log)
    check(caught_up(tuple(NODES)), "cs_pre: every node's slot confirmed to its WAL's end after the restart",
          open(log).read()[-3000:])
    stop_client(proc, "pre-distribution")
    got = sorted((e["documentKey"]["_id"], g == "group-0") for g, e in events_of(out, "cs_pre")
                 if e["operationType"] == "insert")
    want = [(i, True) for i in range(1, 6)] + [(i, False) for i in range(6, 9)]
    check(got == want, "kill -9 between the inserts and create_distributed_table: each of the 8 rows "
          "once, the 5 written before it from the coordinator, the 3 after it from the workers", got)
    truncates = [g for g, e in events_of(out, "cs_pre") if e["operationType"] != "insert"]
    check(not truncates, "cs_pre: no other event", truncates)
    sql("DROP TABLE cs_pre")


def truncate_interleaved_run():
    """A TRUNCATE of a distributed table whose transaction is committed on
    worker 2 before worker 1, with a row written on worker 2 in between:
    the nodes' events merged by wallTime keep that row.  The coordinator's
    commit is held (synchronous replication to no standby) after its commit
    record and before Citus's COMMIT PREPARED, which is then given by hand."""
    w1, w2 = NODES["worker1"][1], NODES["worker2"][1]
    sql_each("CREATE TABLE cs_t6 (id int PRIMARY KEY, v text); "
             "SELECT create_distributed_table('cs_t6', 'id', shard_count := 4)")
    for n in ("coord", "worker1", "worker2"):
        sql("SELECT 1 FROM pg_create_logical_replication_slot('t6', 'bson_out')", n)
    sql("INSERT INTO cs_t6 SELECT g, 'before' FROM generate_series(1, 20) g")
    later = sql("SELECT min(g) FROM generate_series(100, 200) g, citus_shards s WHERE s.table_name = "
                "'cs_t6'::regclass AND s.shardid = get_shard_id_for_distribution_column('cs_t6', g) "
                "AND s.nodeport = %s" % w2)[0][0]
    shard = sql("SELECT get_shard_id_for_distribution_column('cs_t6', %d)" % later)[0][0]
    sql("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
    sql("SELECT pg_reload_conf()")
    done = {}

    def truncate():
        c = connect()
        try:
            cur = c.cursor()
            cur.execute("SET synchronous_commit = on")
            cur.execute("TRUNCATE cs_t6")
            done["ok"] = True
        except psycopg2.Error as e:
            done["error"] = pg_error(e)
        finally:
            c.close()
    t = threading.Thread(target=truncate, daemon=True)
    t.start()
    prepared = lambda n: sql("SELECT gid FROM pg_prepared_xacts", n)
    held = wait_for(lambda: len(prepared("worker1")) == 1 and len(prepared("worker2")) == 1 and
                    sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")[0][0] == 1, 30)
    if held:
        sql("COMMIT PREPARED '%s'" % prepared("worker2")[0][0], "worker2")
        # on worker 2 itself: the coordinator's table is still locked by the TRUNCATE
        sql("INSERT INTO cs_t6_%d VALUES (%d, 'between')" % (shard, later), "worker2")
        sql("COMMIT PREPARED '%s'" % prepared("worker1")[0][0], "worker1")
    sql("ALTER SYSTEM RESET synchronous_standby_names")
    sql("SELECT pg_reload_conf()")
    t.join(60)
    # a new decoding session may need a moment to see the latest commits
    wait_for(lambda: any(e["documentKey"]["_id"] == later for e in peek("worker2", "t6")
                         if e["operationType"] == "insert"), 30, 0.5)
    streams = {n: [e for e in peek(n, "t6") if e["ns"]["coll"] == "cs_t6"] for n in ("coord", "worker1", "worker2")}
    for n in ("coord", "worker1", "worker2"):
        sql("SELECT pg_drop_replication_slot('t6')", n)
    rows = sorted(r[0] for r in sql("SELECT id FROM cs_t6"))
    sql("DROP TABLE cs_t6")
    model = set()
    merged = heapq.merge(*([(e["wallTime"], n, i, e) for i, e in enumerate(s)] for n, s in streams.items()))
    for _, _, _, e in merged:
        if e["operationType"] == "truncate":
            model.clear()
        elif e["operationType"] == "insert":
            model.add(e["documentKey"]["_id"])
    truncates = {n: sum(1 for e in s if e["operationType"] == "truncate") for n, s in streams.items()}
    check(held and "ok" in done, "TRUNCATE held between the coordinator's commit and COMMIT PREPARED, "
          "committed on worker 2, a row written there, then on worker 1", "%s %s" % (held, done))
    check(rows == [later] and sorted(model) == rows and
          truncates == {"coord": 1, "worker1": 0, "worker2": 0},
          "a TRUNCATE of a distributed table is one event, the coordinator's: merged by wallTime, "
          "the row written on worker 2 between the nodes' commits is kept (%s)" % truncates,
          "table %s, replayed %s, events %s" % (rows, sorted(model), {
              n: [(e["operationType"], e.get("documentKey", {}).get("_id"), str(e["wallTime"])) for e in s
                  if e["operationType"] == "truncate" or e["documentKey"]["_id"] > 20] for n, s in streams.items()}))


def main():
    signal.signal(signal.SIGTERM, stop_clients)
    truncate_interleaved_run()
    truncate_and_partitions_run()
    out, log, _ = main_run()
    try:
        join_run(out, log)
        predistribution_run(out, log)
    finally:
        # the stage's cluster stops the three nodes it started, not this one
        if os.path.exists(os.path.join(CITUS_DIR, "worker3", "data", "postmaster.pid")):
            subprocess.run(RUNAS + [os.path.join(PG_BINDIR, "pg_ctl"), "-D",
                                    os.path.join(CITUS_DIR, "worker3", "data"), "-m", "immediate", "-w", "stop"],
                           capture_output=True)
    stop_clients()
    print("citus-stream: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
