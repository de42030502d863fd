#!/usr/bin/python3
"""Cross-check the bson_out output plugin: change events replayed onto a model.

Usage: /usr/bin/python3 test/crosscheck_changes.py [--changes 50000]
       [--sessions 4] [--seed 1]

On the server and database given by the libpq environment (PGHOST, PGPORT,
PGDATABASE, ...; wal_level = logical, bson_out allowed as an output plugin),
creates a scratch schema of typed tables (single, composite and text keys;
TOASTed columns, one table with REPLICA IDENTITY FULL, one table left out by
exclude-tables), two logical slots, then runs a random workload from several
concurrent sessions: multi-row inserts, updates, key updates, deletes, TOASTed
values changed and left unchanged, truncates, savepoints rolled back and
released, transactions rolled back, until at least --changes row changes have
committed.

The events are then read twice: from one slot with
pg_logical_slot_get_binary_changes, and from the other with pg_recvlogical
over the replication protocol, which must deliver the same bytes.  Every
event is decoded by pymongo and checked (resume tokens increase; one commit
LSN per transaction and positions 1, 2, ...; clusterTime against wallTime and
the position; txnNumber against the transaction id; fullDocument against the
model with updateDescription applied; fullDocumentBeforeChange against the
model), and replayed onto a model: a dictionary per ns keyed by documentKey.
Last, the model must equal the tables: row_to_bson of each row with _id (the
primary key) first, compared as BSON bytes.

Ends with the line "crosscheck-changes: N passed, M failed" (N counts the
events and final rows checked); exit status 0 iff M == 0.
"""
import argparse, datetime as dt, json, os, random, struct, subprocess, sys, tempfile, threading, time, traceback, uuid
from decimal import Decimal

import bson, bson.int64, bson.timestamp, psycopg2, psycopg2.errors, psycopg2.extras
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions
from bson.son import SON

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crosscheck_common import pg_error, shorten   # noqa: E402

SCHEMA = "crosscheck_changes"
SLOT_SQL = "crosscheck_changes_sql"
SLOT_RECV = "crosscheck_changes_recv"
OPTIONS = [("exclude-tables", SCHEMA + ".ignored"),
           ("full-document-before-change", "on")]
DECODE_OPTS = CodecOptions(document_class=SON, tz_aware=True,
                           uuid_representation=UuidRepresentation.UNSPECIFIED)
KEYS = 1500          # key space of each table: rows come and go

TABLES = {
    # name: (DDL, primary key columns in the key's order)
    "numbers": ("""(id int PRIMARY KEY, n int, s text, amount numeric(12, 2),
                    f float8, at timestamptz, j jsonb, tags text[])""", ["id"]),
    "pairs": ("""(a text, b int, v double precision, u uuid, d date,
                  PRIMARY KEY (b, a))""", ["b", "a"]),
    "pages": ("""(id bigint PRIMARY KEY, n int, body text, raw bytea)""", ["id"]),
    "ledger": ("""(id int PRIMARY KEY, body text, v numeric, flag boolean,
                   at timestamp)""", ["id"]),
    "names": ("""(name text PRIMARY KEY, payload bytea, big bigint)""", ["name"]),
    "ignored": ("""(id int PRIMARY KEY, v int)""", ["id"]),
}


def setup(conn):
    cur = conn.cursor()
    for slot in (SLOT_SQL, SLOT_RECV):
        cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                    "WHERE slot_name = %s", (slot,))
    cur.execute("DROP SCHEMA IF EXISTS %s CASCADE" % SCHEMA)
    cur.execute("CREATE SCHEMA %s" % SCHEMA)
    for name, (ddl, _) in TABLES.items():
        cur.execute("CREATE TABLE %s.%s %s" % (SCHEMA, name, ddl))
    # TOASTed out of line, uncompressed: long values go to the TOAST table
    cur.execute("ALTER TABLE %s.pages ALTER COLUMN body SET STORAGE EXTERNAL" % SCHEMA)
    cur.execute("ALTER TABLE %s.ledger ALTER COLUMN body SET STORAGE EXTERNAL" % SCHEMA)
    cur.execute("ALTER TABLE %s.ledger REPLICA IDENTITY FULL" % SCHEMA)
    for slot in (SLOT_SQL, SLOT_RECV):
        cur.execute("SELECT pg_create_logical_replication_slot(%s, 'bson_out')", (slot,))


# ------------------------------------------------------------ the workload
def rand_text(rng, lo, hi):
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzé€ 0123456789")
                   for _ in range(rng.randint(lo, hi)))

def long_text(rng):
    """Mostly long enough to be TOASTed, sometimes short"""
    if rng.random() < 0.15:
        return rand_text(rng, 0, 40)
    # random letters in runs: fast to make, and never compressed (EXTERNAL)
    n = rng.randint(2100, 9000)
    return (rand_text(rng, 50, 50) * (n // 50 + 1))[:n]

def maybe(rng, v, p=0.1):
    return None if rng.random() < p else v

def rand_float(rng):
    return rng.choice([rng.uniform(-1e6, 1e6), rng.random(), -0.0, 0.0,
                       float("inf"), float("-inf"), float("nan"), 1e308, 5e-324])

def rand_time(rng, aware):
    t = dt.datetime(1900, 1, 1) + dt.timedelta(seconds=rng.randint(0, 200 * 365 * 86400),
                                               microseconds=rng.randint(0, 999999))
    return t.replace(tzinfo=dt.timezone.utc) if aware else t

def rand_json(rng, depth=0):
    r = rng.random()
    if depth < 2 and r < 0.3:
        return {rand_text(rng, 1, 6): rand_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if depth < 2 and r < 0.45:
        return [rand_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([None, True, False, rng.randint(-2**40, 2**40), rng.random(),
                       rand_text(rng, 0, 8), 1.5, 10**30])

def row_values(rng, table):
    """The non-key columns of a new or updated row, as SQL and parameters"""
    if table == "numbers":
        return ("n = %s, s = %s, amount = %s, f = %s, at = %s, j = %s, tags = %s",
                [maybe(rng, rng.randint(-2**31, 2**31 - 1)), maybe(rng, rand_text(rng, 0, 30)),
                 maybe(rng, Decimal(rng.randint(-10**11, 10**11)) / 100), maybe(rng, rand_float(rng)),
                 maybe(rng, rand_time(rng, True)), maybe(rng, psycopg2.extras.Json(rand_json(rng))),
                 maybe(rng, [maybe(rng, rand_text(rng, 0, 5)) for _ in range(rng.randint(0, 4))])])
    if table == "pairs":
        return ("v = %s, u = %s::uuid, d = %s",
                [maybe(rng, rand_float(rng)), maybe(rng, str(uuid.UUID(int=rng.getrandbits(128)))),
                 maybe(rng, dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-30000, 30000)))])
    if table == "pages":
        return ("n = %s, body = %s, raw = %s",
                [maybe(rng, rng.randint(0, 1000)), maybe(rng, long_text(rng)),
                 maybe(rng, psycopg2.Binary(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 20)))))])
    if table == "ledger":
        return ("body = %s, v = %s, flag = %s, at = %s",
                [maybe(rng, long_text(rng)), maybe(rng, Decimal(rng.randint(-10**20, 10**20)).scaleb(-rng.randint(0, 10))),
                 maybe(rng, rng.random() < 0.5), maybe(rng, rand_time(rng, False))])
    if table == "names":
        return ("payload = %s, big = %s",
                [maybe(rng, psycopg2.Binary(os.urandom(0) + bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 30))))),
                 maybe(rng, rng.randint(-2**63, 2**63 - 1))])
    return ("v = %s", [rng.randint(0, 100)])

def rand_key(rng, table):
    if table == "pairs":
        return [rng.randint(0, KEYS // 3), rng.choice("xyz")]
    if table == "names":
        return ["name-%d" % rng.randint(0, KEYS)]
    return [rng.randint(0, KEYS)]

def key_where(table):
    cols = TABLES[table][1]
    return " AND ".join("%s = %%s" % c for c in cols)

def op_insert(cur, rng, table):
    n = rng.randint(1, 6)
    count = 0
    cols = TABLES[table][1]
    for _ in range(n):
        sets, params = row_values(rng, table)
        names = cols + [s.split(" = ")[0] for s in sets.split(", ")]
        values = ", ".join(["%s"] * len(cols) + [s.split(" = ")[1] for s in sets.split(", ")])
        cur.execute("INSERT INTO %s.%s (%s) VALUES (%s) ON CONFLICT DO NOTHING"
                    % (SCHEMA, table, ", ".join(names), values), rand_key(rng, table) + params)
        count += cur.rowcount
    return count

def op_update(cur, rng, table):
    sets, params = row_values(rng, table)
    if table == "pages" and rng.random() < 0.5:
        # leave the TOASTed body as it is
        sets, params = "n = %s", [rng.randint(0, 1000)]
    if table in ("numbers", "pages", "ledger", "ignored") and rng.random() < 0.5:
        lo = rng.randint(0, KEYS)
        cur.execute("UPDATE %s.%s SET %s WHERE id BETWEEN %%s AND %%s" % (SCHEMA, table, sets),
                    params + [lo, lo + rng.randint(0, 6)])
    else:
        cur.execute("UPDATE %s.%s SET %s WHERE %s" % (SCHEMA, table, sets, key_where(table)),
                    params + rand_key(rng, table))
    return cur.rowcount

def op_key_update(cur, rng, table):
    cols = TABLES[table][1]
    new = rand_key(rng, table)
    cur.execute("UPDATE %s.%s SET %s WHERE %s" % (
        SCHEMA, table, ", ".join("%s = %%s" % c for c in cols), key_where(table)),
        new + rand_key(rng, table))
    return 2 * cur.rowcount

def op_delete(cur, rng, table):
    if table in ("numbers", "pages", "ledger") and rng.random() < 0.5:
        lo = rng.randint(0, KEYS)
        cur.execute("DELETE FROM %s.%s WHERE id BETWEEN %%s AND %%s" % (SCHEMA, table),
                    [lo, lo + rng.randint(0, 4)])
    else:
        cur.execute("DELETE FROM %s.%s WHERE %s" % (SCHEMA, table, key_where(table)),
                    rand_key(rng, table))
    return cur.rowcount

def op_truncate(cur, rng, table):
    tables = [table] + ([rng.choice(list(TABLES))] if rng.random() < 0.5 else [])
    cur.execute("TRUNCATE %s" % ", ".join("%s.%s" % (SCHEMA, t) for t in dict.fromkeys(tables)))
    return len(set(tables))

OPS = [(op_insert, 40), (op_update, 30), (op_key_update, 8), (op_delete, 20), (op_truncate, 0.05)]

class Workload:
    def __init__(self, target, sessions, seed):
        self.target = target
        self.sessions = sessions
        self.seed = seed
        self.committed = 0       # row changes in committed transactions
        self.stats = {"commits": 0, "rollbacks": 0, "savepoint rollbacks": 0, "errors": 0}
        self.lock = threading.Lock()
        self.failure = None

    def session(self, i):
        rng = random.Random(self.seed * 1000 + i)
        conn = psycopg2.connect("")
        try:
            cur = conn.cursor()
            # waits for locks end quickly: the statement is rolled back to
            # its savepoint and the transaction goes on
            cur.execute("SET lock_timeout = '200ms'")
            conn.commit()
            while True:
                with self.lock:
                    if self.committed >= self.target or self.failure:
                        return
                changes = 0
                for _ in range(rng.randint(1, 12)):
                    op = rng.choices([o for o, _ in OPS], [w for _, w in OPS])[0]
                    table = rng.choice(list(TABLES))
                    cur.execute("SAVEPOINT s")
                    try:
                        n = op(cur, rng, table)
                    except (psycopg2.errors.UniqueViolation, psycopg2.errors.LockNotAvailable,
                            psycopg2.errors.DeadlockDetected, psycopg2.errors.SerializationFailure):
                        cur.execute("ROLLBACK TO SAVEPOINT s")
                        with self.lock:
                            self.stats["errors"] += 1
                        continue
                    if rng.random() < 0.08:
                        cur.execute("ROLLBACK TO SAVEPOINT s")
                        with self.lock:
                            self.stats["savepoint rollbacks"] += 1
                        continue
                    cur.execute("RELEASE SAVEPOINT s")
                    if table != "ignored":
                        changes += n
                if rng.random() < 0.1:
                    conn.rollback()
                    with self.lock:
                        self.stats["rollbacks"] += 1
                else:
                    conn.commit()
                    with self.lock:
                        self.committed += changes
                        self.stats["commits"] += 1
        except Exception as e:
            with self.lock:
                self.failure = "session %d: %s" % (i, pg_error(e) if isinstance(e, psycopg2.Error)
                                                   else traceback.format_exc())
        finally:
            conn.close()

    def run(self):
        threads = [threading.Thread(target=self.session, args=(i,)) for i in range(self.sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.failure:
            raise RuntimeError(self.failure)


# ------------------------------------------------------------ reading events
def read_sql_slot(conn):
    """(xid, BSON bytes) of every event, in stream order"""
    cur = conn.cursor()
    opts = [x for kv in OPTIONS for x in kv]
    events = []
    while True:
        cur.execute("SELECT xid::text::bigint, data FROM pg_logical_slot_get_binary_changes(%s, NULL, 20000, "
                    + ", ".join(["%s"] * len(opts)) + ")", [SLOT_SQL] + opts)
        rows = cur.fetchall()
        conn.commit()
        if not rows:
            return events
        events.extend((x, bytes(d)) for x, d in rows)

def read_recvlogical(db, endpos):
    """The events pg_recvlogical writes: each message, then a newline"""
    with tempfile.NamedTemporaryFile(prefix="crosscheck_changes_", suffix=".bson") as f:
        cmd = ["pg_recvlogical", "-d", db, "--slot", SLOT_RECV, "--start", "--no-loop",
               "--endpos", endpos, "-f", f.name]
        for k, v in OPTIONS:
            cmd += ["-o", "%s=%s" % (k, v)]
        done = subprocess.run(cmd, timeout=300, stderr=subprocess.PIPE)
        if done.returncode != 0:
            raise RuntimeError("pg_recvlogical failed: %s" % done.stderr.decode(errors="replace").strip())
        data = open(f.name, "rb").read()
    events, off = [], 0
    while off < len(data):
        n = struct.unpack_from("<i", data, off)[0]
        if n < 5 or off + n >= len(data) or data[off + n:off + n + 1] != b"\n":
            raise ValueError("pg_recvlogical output is not BSON documents and newlines at byte %d" % off)
        events.append(data[off:off + n])
        off += n + 1
    return events


# ------------------------------------------------------------ checking
def enc(doc):
    return bson.encode(doc, codec_options=DECODE_OPTS)

def key_of(value):
    return enc({"_id": value})

class Model:
    def __init__(self, db):
        self.db = db
        self.colls = {}            # coll -> {encoded _id: document}
        self.failures = []
        self.checked = 0
        self.prev_token = ""
        self.txn = None            # (token LSN, xid) of the current transaction
        self.position = 0
        self.last_event = None     # (event, deleted document) for key changes
        self.features = dict.fromkeys(["replace", "unchangedFields", "update without fullDocument",
                                       "fullDocumentBeforeChange", "key change"], 0)

    def fail(self, i, ev, what):
        self.failures.append("event %d (%s %s): %s" % (
            i, ev.get("operationType"), shorten(ev.get("documentKey"), 80), what))

    def head(self, i, ev, xid):
        """The fields every event has, and where it is in the stream"""
        ok = True
        tok = ev["_id"]["_data"] if isinstance(ev.get("_id"), dict) else None
        if not (isinstance(tok, str) and len(tok) == 32 and all(c in "0123456789ABCDEF" for c in tok)):
            self.fail(i, ev, "resume token %r" % (tok,))
            return False
        if tok <= self.prev_token:
            self.fail(i, ev, "resume token %s not after %s" % (tok, self.prev_token))
            ok = False
        self.prev_token = tok
        lsn, pos = tok[:16], int(tok[16:], 16)
        if self.txn != (lsn, xid):
            self.txn, self.position = (lsn, xid), 0
            self.last_event = None
        self.position += 1
        if pos != self.position:
            self.fail(i, ev, "position %d, expected %d" % (pos, self.position))
            ok = False
        ct, wall = ev.get("clusterTime"), ev.get("wallTime")
        if not (isinstance(ct, bson.timestamp.Timestamp) and isinstance(wall, dt.datetime)
                and ct.inc == pos and ct.time == int(wall.timestamp() // 1)):
            self.fail(i, ev, "clusterTime %r, wallTime %r" % (ct, wall))
            ok = False
        txn = ev.get("txnNumber")
        if type(txn) is not bson.int64.Int64 or txn != xid:
            self.fail(i, ev, "txnNumber %r, transaction %d" % (txn, xid))
            ok = False
        ns = ev.get("ns")
        if not (isinstance(ns, dict) and list(ns.keys()) == ["db", "coll"] and ns["db"] == self.db
                and ns["coll"] in ["%s.%s" % (SCHEMA, t) for t in TABLES if t != "ignored"]):
            self.fail(i, ev, "ns %r" % (ns,))
            return False
        return ok

    def apply(self, i, ev, xid):
        if not self.head(i, ev, xid):
            return
        op = ev["operationType"]
        coll = self.colls.setdefault(ev["ns"]["coll"], {})
        if op == "truncate":
            coll.clear()
            self.checked += 1
            return
        if "documentKey" not in ev or list(ev["documentKey"].keys()) != ["_id"]:
            return self.fail(i, ev, "documentKey %r" % (ev.get("documentKey"),))
        key = key_of(ev["documentKey"]["_id"])
        ok = True
        if "fullDocumentBeforeChange" in ev:
            self.features["fullDocumentBeforeChange"] += 1
        if op == "insert":
            prev = self.last_event
            if prev is not None and prev[0] == i - 1 and prev[1]["ns"] == ev["ns"]:
                self.features["key change"] += 1
            doc = ev.get("fullDocument")
            if doc is None or next(iter(doc)) != "_id" or key_of(doc["_id"]) != key:
                return self.fail(i, ev, "fullDocument %s" % shorten(doc))
            if "unchangedFields" in ev:
                self.features["unchangedFields"] += 1
                doc = self.fill_unchanged(i, ev, doc)
                if doc is None:
                    return
            if key in coll:
                self.fail(i, ev, "insert of a key the model has")
                ok = False
            coll[key] = doc
        elif op == "replace":
            # the whole new row, the old one not known: fullDocument, no
            # updateDescription, of a document the model has
            if key not in coll:
                return self.fail(i, ev, "replace of a key the model does not have")
            doc = ev.get("fullDocument")
            if doc is None or "updateDescription" in ev or next(iter(doc)) != "_id" \
                    or key_of(doc["_id"]) != key:
                return self.fail(i, ev, "replace without its fullDocument, or with an updateDescription")
            self.features["replace"] += 1
            coll[key] = doc
        elif op == "update":
            doc = coll.get(key)
            if doc is None:
                return self.fail(i, ev, "update of a key the model does not have")
            if "fullDocumentBeforeChange" in ev and enc(ev["fullDocumentBeforeChange"]) != enc(doc):
                self.fail(i, ev, "fullDocumentBeforeChange %s, model %s"
                          % (shorten(ev["fullDocumentBeforeChange"]), shorten(doc)))
                ok = False
            desc = ev.get("updateDescription")
            if not desc or list(desc.keys()) != ["updatedFields", "removedFields", "truncatedArrays"] \
                    or desc["truncatedArrays"] != []:
                return self.fail(i, ev, "updateDescription %s" % shorten(desc))
            doc = SON(doc)
            for k, v in desc["updatedFields"].items():
                if k not in doc:
                    self.fail(i, ev, "updatedFields names %r, not in the document" % k)
                    ok = False
                doc[k] = v
            for k in desc["removedFields"]:
                doc.pop(k, None)
            if "fullDocument" not in ev:
                self.features["update without fullDocument"] += 1
            else:
                if enc(ev["fullDocument"]) != enc(doc):
                    self.fail(i, ev, "fullDocument %s, model after update %s"
                              % (shorten(ev["fullDocument"], 300), shorten(doc, 300)))
                    ok = False
                doc = ev["fullDocument"]
            coll[key] = doc
        elif op == "delete":
            doc = coll.pop(key, None)
            if doc is None:
                return self.fail(i, ev, "delete of a key the model does not have")
            if "fullDocumentBeforeChange" in ev and enc(ev["fullDocumentBeforeChange"]) != enc(doc):
                self.fail(i, ev, "fullDocumentBeforeChange %s, model %s"
                          % (shorten(ev["fullDocumentBeforeChange"]), shorten(doc)))
                ok = False
            self.last_event = (i, ev, doc)
            if ok:
                self.checked += 1
            return
        else:
            return self.fail(i, ev, "operationType %r" % op)
        self.last_event = None
        if ok:
            self.checked += 1

    def fill_unchanged(self, i, ev, doc):
        """The insert of a key change lacks values the WAL did not carry:
        the delete just before, of the old key, has them"""
        prev = self.last_event
        if prev is None or prev[0] != i - 1 or prev[1]["ns"] != ev["ns"]:
            self.fail(i, ev, "unchangedFields without the delete of the old key before it")
            return None
        old = prev[2]
        names = ev["unchangedFields"]
        out = SON([("_id", doc["_id"])])
        for k in old:
            if k == "_id":
                continue
            if k in names:
                out[k] = old[k]
            elif k in doc:
                out[k] = doc[k]
        if set(out) != set(doc) | set(names) or any(k in doc for k in names):
            self.fail(i, ev, "unchangedFields %r do not complete fullDocument %s" % (names, shorten(doc)))
            return None
        return out

def final_tables(cur):
    """ns.coll -> {encoded _id: row_to_bson of the row with _id first}"""
    out = {}
    for table, (_, keys) in TABLES.items():
        if table == "ignored":
            continue
        rows = {}
        cur.execute("SELECT row_to_bson(t) FROM %s.%s t" % (SCHEMA, table))
        for (data,) in cur:
            row = bson.decode(bytes(data), codec_options=DECODE_OPTS)
            key = row[keys[0]] if len(keys) == 1 else SON((k, row[k]) for k in keys)
            doc = SON([("_id", key)])
            doc.update(row)
            rows[key_of(key)] = doc
        out["%s.%s" % (SCHEMA, table)] = rows
    return out

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--changes", type=int, default=50000)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    try:
        cur.execute("SELECT current_database()")
        db = cur.fetchone()[0]
        setup(conn)
        started = time.monotonic()
        work = Workload(args.changes, args.sessions, args.seed)
        work.run()
        t_work = time.monotonic() - started
        # a change of the table left out, so that the WAL goes past endpos
        cur.execute("SELECT pg_current_wal_insert_lsn()::text")
        endpos = cur.fetchone()[0]
        cur.execute("INSERT INTO %s.ignored VALUES (-1, 0)" % SCHEMA)

        started = time.monotonic()
        conn.autocommit = False
        sql_events = read_sql_slot(conn)
        conn.autocommit = True
        t_sql = time.monotonic() - started
        started = time.monotonic()
        recv_events = read_recvlogical(db, endpos)
        t_recv = time.monotonic() - started
    except Exception as e:
        print("setup, workload or decoding failed: %s" % (pg_error(e) if isinstance(e, psycopg2.Error)
                                                         else traceback.format_exc()))
        print("crosscheck-changes: 0 passed, 1 failed")
        return 1

    failures = []
    print("workload: %d row changes committed in %d transactions (%d rolled back, "
          "%d savepoints rolled back, %d statements failed and rolled back) by %d sessions, %.1f s"
          % (work.committed, work.stats["commits"], work.stats["rollbacks"],
             work.stats["savepoint rollbacks"], work.stats["errors"], args.sessions, t_work))
    print("events: %d from pg_logical_slot_get_binary_changes (%.1f s), %d from pg_recvlogical (%.1f s)"
          % (len(sql_events), t_sql, len(recv_events), t_recv))
    if len(sql_events) < args.changes:
        failures.append("only %d events, fewer than %d" % (len(sql_events), args.changes))
    if [d for _, d in sql_events] != recv_events:
        first = next((i for i, (a, b) in enumerate(zip(sql_events, recv_events)) if a[1] != b), None)
        failures.append("pg_recvlogical delivered other events: %d against %d, first difference at %s"
                        % (len(recv_events), len(sql_events), first))

    model = Model(db)
    counts = {}
    started = time.monotonic()
    for i, (xid, data) in enumerate(sql_events):
        try:
            ev = bson.decode(data, codec_options=DECODE_OPTS)
        except Exception as e:
            model.failures.append("event %d: pymongo cannot decode it: %s" % (i, e))
            continue
        counts[ev.get("operationType")] = counts.get(ev.get("operationType"), 0) + 1
        model.apply(i, ev, xid)
    print("event types: %s; replayed in %.1f s"
          % (", ".join("%s %d" % kv for kv in sorted(counts.items(), key=str)), time.monotonic() - started))
    print("events with: %s" % ", ".join("%s %d" % kv for kv in model.features.items()))
    failures += model.failures

    tables = final_tables(cur)
    rows_ok = 0
    for coll, rows in tables.items():
        got = model.colls.get(coll, {})
        for key, doc in rows.items():
            if key not in got:
                failures.append("%s: row %s missing from the model" % (coll, shorten(doc["_id"], 80)))
            elif enc(got[key]) != enc(doc):
                failures.append("%s: row %s: table %s, model %s"
                                % (coll, shorten(doc["_id"], 80), shorten(doc, 300), shorten(got[key], 300)))
            else:
                rows_ok += 1
        for key in got.keys() - rows.keys():
            failures.append("%s: model has %s, the table does not" % (coll, shorten(got[key]["_id"], 80)))
    print("final tables: %s rows" % ", ".join("%s %d" % (c.split(".")[1], len(r)) for c, r in tables.items()))

    for slot in (SLOT_SQL, SLOT_RECV):
        cur.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    cur.execute("DROP SCHEMA %s CASCADE" % SCHEMA)
    for f in failures[:30]:
        print("FAIL " + f)
    if len(failures) > 30:
        print("... and %d more" % (len(failures) - 30))
    print("crosscheck-changes: %d passed, %d failed" % (model.checked + rows_ok, len(failures)))
    return 0 if not failures else 1

if __name__ == "__main__":
    sys.exit(main())
