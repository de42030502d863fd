#!/usr/bin/python3
"""Cross-check the bson_out output plugin: change events replayed onto a model.

Usage: /usr/bin/python3 test/crosscheck_changes.py [--changes 50000]
       [--sessions 4] [--seed 1] [--max-event-size 8kB]

On the server and database given by the libpq environment (PGHOST, PGPORT,
PGDATABASE, ...; wal_level = logical, bson_out allowed as an output plugin),
creates a scratch schema of typed tables (single, composite and text keys;
TOASTed columns, tables with REPLICA IDENTITY FULL, one table left out by
exclude-tables), two logical slots, then runs a random workload from several
concurrent sessions: multi-row inserts, updates, key updates, deletes, TOASTed
values changed and left unchanged, truncates, savepoints rolled back and
released, transactions rolled back, until at least --changes row changes have
committed.  The workload holds:
  - values without a BSON mapping, which the plugin's default
    (unmappable-values fallback) writes all the same: timestamptz, timestamp
    and date +-infinity (also in a key), numerics of 35 to 1000 significant
    digits and a few beyond decimal128's exponents, numeric NaN and
    +-Infinity; at the top of the row, in timestamptz[] and numeric[]
    columns, in a composite column and in an array of composites (table
    "poison"), and now and then in the columns of the other tables;
  - large rows (table "blobs", REPLICA IDENTITY FULL, a TOASTed text and a
    bytea, sized around --max-event-size) whose events exceed the limit, so
    that inserts, updates with fullDocumentBeforeChange and deletes are split
    into fragments all within the limit, or with a field too large for any
    fragment alone in one over it; the long texts of the other tables split
    some of their events too.

The events are then read twice, with max-event-size = --max-event-size: from
one slot with pg_logical_slot_get_binary_changes and commit-markers on, and
from the other with pg_recvlogical over the replication protocol without
markers, which must deliver the same bytes as the first read less its
markers.  Each message of the first read is checked: resume tokens increase
over every message, fragments included (one commit LSN per transaction,
positions 1, 2, ...); its lsn column is before its commit, its xid the
transaction's.  Fragments ({_id, splitEvent: {fragment, of}, fields...}) must
come in order 1..of, each with the next position, no larger than the limit
unless one field alone, which must not fit any fragment, makes it larger;
each fragment as full as the next field lets it (MongoDB's greedy split); the
event they make must be over the limit.  Their fields, merged in order, give
the event, checked as a whole one.  Each commit marker ({"commit": n}, 21
bytes) must follow the last message of its transaction, count its messages
(fragments each), carry its xid, and have an lsn after the transaction's
commit LSN and not after the next transaction's.  Every event is decoded by
pymongo and checked (top-level fields in the plugin's order; clusterTime
against wallTime and the position; txnNumber against the transaction id;
fullDocument against the model with updateDescription applied;
fullDocumentBeforeChange against the model; each value of a column that can
hold an unmappable value is one of the fallback's exact values, the BSON
datetimes 253402300799999 ms and -62135596800000 ms, a string equal to
PostgreSQL's text of a numeric the workload wrote, decimal128 NaN (its
canonical bits) or +-Infinity, the exact decimal128 of a wide numeric that
has one (display scale, trailing zeros dropped only as needed), or an
ordinary value), and replayed onto a model: a dictionary per ns keyed by
documentKey.  The warnings of the read must name the tables and columns that
held unmappable values and the tables with a field too large to split.  With
--changes 5000 or more, each kind of unmappable value must have shown up in
each place (top, array, composite, array of composites; the key for the
infinities), and split insert, update and delete events, split events
within the limit and fragments over it.  Last, the model must equal the
tables: row_to_bson of each row, with bson_out.unmappable_values = fallback,
with _id (the primary key) first, compared as BSON bytes; and each
unmappable value of the tables is checked against PostgreSQL's text of it.

Ends with the line "crosscheck-changes: N passed, M failed" (N counts the
events, commit markers and final rows checked); exit status 0 iff M == 0.
"""
import argparse, collections, datetime as dt, decimal, os, random, re, struct, subprocess, sys, tempfile, threading, time, traceback, uuid
from decimal import Decimal

import bson, bson.int64, bson.timestamp, psycopg2, psycopg2.errors, psycopg2.extras
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions
from bson.decimal128 import Decimal128
from bson.son import SON

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crosscheck_common import bson_elements as top_fields, pg_error, shorten   # noqa: E402

SCHEMA = "crosscheck_changes"
SLOT_SQL = "crosscheck_changes_sql"
SLOT_RECV = "crosscheck_changes_recv"
OPTIONS = [("exclude-tables", SCHEMA + ".ignored"),
           ("full-document-before-change", "on")]
# documents as dicts (ordered), which pymongo's pure Python decoder makes
# faster than SON
DECODE_OPTS = CodecOptions(document_class=dict, tz_aware=True,
                           uuid_representation=UuidRepresentation.UNSPECIFIED)
KEYS = 1500          # key space of each table: rows come and go
SPAN = SCHEMA + ".span"

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
    "poison": ("""(id int, since date, d date, ts timestamp, tstz timestamptz,
                   n numeric, stamps timestamptz[], nums numeric[], s %s,
                   spans %s[], PRIMARY KEY (id, since))""" % (SPAN, SPAN), ["id", "since"]),
    "blobs": ("""(id int PRIMARY KEY, n int, doc text, raw bytea, note text)""", ["id"]),
    "ignored": ("""(id int PRIMARY KEY, v int)""", ["id"]),
}
# how often a statement picks each table (the large rows cost WAL)
TABLE_WEIGHTS = {"blobs": 0.6}

# The columns that can hold a value without a BSON mapping, and what they
# hold: a datetime (date, timestamp, timestamptz), a numeric, arrays of
# them, the composite span (valid_from date, valid_to timestamptz, amount
# numeric) or an array of it
POISON_COLUMNS = {
    "numbers": {"at": "time"},
    "pairs": {"d": "time"},
    "ledger": {"v": "numeric", "at": "time"},
    "poison": {"since": "time", "d": "time", "ts": "time", "tstz": "time", "n": "numeric",
               "stamps": "time[]", "nums": "numeric[]", "s": "span", "spans": "span[]"},
}
SPAN_FIELDS = [("valid_from", "time"), ("valid_to", "time"), ("amount", "numeric")]

# The fallback's datetimes for +-infinity: 9999-12-31T23:59:59.999Z and
# 0001-01-01T00:00:00.000Z, the extremes pymongo decodes
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
FALLBACK_MAX_MS, FALLBACK_MIN_MS = 253402300799999, -62135596800000
FALLBACK_MAX = dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=dt.timezone.utc)
FALLBACK_MIN = dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc)
assert (FALLBACK_MAX - EPOCH) // dt.timedelta(milliseconds=1) == FALLBACK_MAX_MS
assert (FALLBACK_MIN - EPOCH) // dt.timedelta(milliseconds=1) == FALLBACK_MIN_MS
# the ordinary datetimes of the workload lie between these
ORDINARY_TIMES = (dt.datetime(1800, 1, 1, tzinfo=dt.timezone.utc),
                  dt.datetime(2200, 1, 1, tzinfo=dt.timezone.utc))
NAN_BID = Decimal128("NaN").bid
# room for every digit of the numerics: Decimal.normalize() rounds to its context
EXACT = decimal.Context(prec=20000, Emax=10**6, Emin=-10**6)

HEX = frozenset("0123456789ABCDEF")
# the commit marker (src/core/commit_marker.h): {"commit": <int64>}
MARKER_LEN = 21
MARKER_HEAD = b"\x15\0\0\0\x12commit\0"

# The top-level fields of an event, in the plugin's order
EVENT_FIELDS = ["_id", "operationType", "clusterTime", "wallTime", "ns", "documentKey",
                "fullDocument", "unchangedFields", "updateDescription", "partitions",
                "fullDocumentBeforeChange", "txnNumber"]


def parse_size(text):
    """max-event-size's text ('8kB', '1MB', '4096') in bytes"""
    m = re.fullmatch(r"\s*(\d+)\s*(B|kB|MB|GB)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError("a size such as 8kB: %r" % text)
    return int(m.group(1)) * {None: 1, "B": 1, "kB": 1024, "MB": 1 << 20, "GB": 1 << 30}[m.group(2)]


# ------------------------------------------------------------ wide numerics
def numeric_pool(rng):
    """Numerics, as text, with no exact decimal128 (35 to 1000 significant
    digits; a few beyond decimal128's exponents) and some at the edge that
    have one (34 digits; trailing zeros to drop; large exponents)"""
    out = []
    for _ in range(160):
        sig = rng.choice([35, 36, rng.randint(35, 60), rng.randint(35, 200), rng.randint(35, 1000)])
        digits = (str(rng.randint(1, 9)) + "".join(rng.choice("0123456789") for _ in range(sig - 2))
                  + str(rng.randint(1, 9)))
        point = rng.choice([sig, rng.randint(1, sig - 1), rng.randint(-20, 0), sig + rng.randint(1, 30)])
        if point <= 0:
            t = "0." + "0" * -point + digits
        elif point >= sig:
            t = digits + "0" * (point - sig)
        else:
            t = digits[:point] + "." + digits[point:]
        if "." in t and rng.random() < 0.2:
            t += "0" * rng.randint(1, 10)       # trailing zeros: the display scale
        out.append(("-" if rng.random() < 0.4 else "") + t)
    out += [
        "1234567890123456789012345678901234",          # 34 digits: decimal128
        "-9999999999999999999999999999999999",
        "0.1234567890123456789012345678901234",
        "1234567890123456789012345678901234.000000",   # zeros dropped as needed
        "1" + "0" * 40,                                # 1E+40: decimal128
        "1.5" + "0" * 50,
        "1" + "0" * 6140,                              # 1.0...0E+6140: decimal128
        "1" + "0" * 6145,                              # beyond decimal128's exponents
        "-0." + "0" * 6176 + "1",                      # below decimal128's exponents
        "0." + "0" * 6170 + "1" + "0" * 20,            # 1.00000E-6171: decimal128
        "12345678901234567890123456789012345",         # 35 digits
        "-1234567890123456789012345678901234567.5",
    ]
    return out

def expected_numeric(text):
    """What the fallback writes for a numeric of this text (PostgreSQL's
    output): ("string", text), or ("decimal", the exact decimal128 as a
    Decimal: its display scale, trailing zeros dropped only as needed)"""
    if text in ("NaN", "Infinity", "-Infinity"):
        return ("decimal", Decimal(text))
    sign, digits, exp = Decimal(text).as_tuple()
    digits = list(digits)
    while (len(digits) > 34 or exp < -6176) and len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    if len(digits) > 34 or exp < -6176 or exp > 6111:
        return ("string", text)
    return ("decimal", Decimal((sign, tuple(digits), exp)))

def significant_digits(text):
    return len(text.lstrip("-").replace(".", "").lstrip("0").rstrip("0"))

class Pool:
    """The wide numerics the workload writes, with PostgreSQL's text of them
    and what the fallback must make of each"""
    def __init__(self, cur, seed):
        raw = numeric_pool(random.Random(seed * 7919 + 17))
        cur.execute("SELECT x::numeric::text FROM unnest(%s::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i",
                    (raw,))
        self.values = [r[0] for r in cur.fetchall()]
        self.strings = {}       # text -> significant digits, of those written as strings
        self.decimals = {}      # Decimal (normalized) -> exact Decimal, of those with a decimal128
        for t in self.values:
            kind, v = expected_numeric(t)
            if kind == "string":
                self.strings[t] = significant_digits(t)
            else:
                self.decimals[v.normalize(EXACT)] = v
        cur.execute("SHOW server_version_num")
        self.infinity = int(cur.fetchone()[0]) >= 140000     # numeric +-Infinity from 14 on

POOL = None   # set by main() before the workload


def setup(conn):
    cur = conn.cursor()
    for slot in (SLOT_SQL, SLOT_RECV):
        cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                    "WHERE slot_name = %s", (slot,))
    cur.execute("DROP SCHEMA IF EXISTS %s CASCADE" % SCHEMA)
    cur.execute("CREATE SCHEMA %s" % SCHEMA)
    cur.execute("CREATE TYPE %s AS (valid_from date, valid_to timestamptz, amount numeric)" % SPAN)
    for name, (ddl, _) in TABLES.items():
        cur.execute("CREATE TABLE %s.%s %s" % (SCHEMA, name, ddl))
    # TOASTed out of line, uncompressed: long values go to the TOAST table
    cur.execute("ALTER TABLE %s.pages ALTER COLUMN body SET STORAGE EXTERNAL" % SCHEMA)
    cur.execute("ALTER TABLE %s.ledger ALTER COLUMN body SET STORAGE EXTERNAL" % SCHEMA)
    cur.execute("ALTER TABLE %s.blobs ALTER COLUMN doc SET STORAGE EXTERNAL" % SCHEMA)
    cur.execute("ALTER TABLE %s.ledger REPLICA IDENTITY FULL" % SCHEMA)
    cur.execute("ALTER TABLE %s.blobs REPLICA IDENTITY FULL" % SCHEMA)
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

def big_text(rng, limit):
    """Around the event size limit: a row of it fits an event or not, an
    update with the row before and after does not; sometimes alone larger
    than any fragment"""
    r = rng.random()
    if r < 0.1:
        return rand_text(rng, 0, 40)
    n = rng.randint(limit // 8, limit // 2) if r < 0.55 else \
        rng.randint(limit // 2, limit) if r < 0.88 else rng.randint(limit, 2 * limit)
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

def rand_date(rng):
    return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-30000, 30000))

def infinite(rng, p, value):
    """'infinity' or '-infinity' with probability p, else value"""
    r = rng.random()
    return "infinity" if r < p / 2 else "-infinity" if r < p else value

def poison_time(rng, aware, p=0.2):
    return infinite(rng, p, rand_time(rng, aware))

def poison_date(rng, p=0.2):
    return infinite(rng, p, rand_date(rng))

def poison_numeric(rng, p=0.3):
    """A numeric's text: with probability p a wide one, NaN or +-Infinity"""
    r = rng.random()
    if r < p * 0.8:
        return rng.choice(POOL.values)
    if r < p * 0.93 or (r < p and not POOL.infinity):
        return "NaN"
    if r < p:
        return rng.choice(["Infinity", "-Infinity"])
    return str(Decimal(rng.randint(-10**15, 10**15)).scaleb(-rng.randint(0, 8)))

def iso(v):
    return v if isinstance(v, str) or v is None else v.isoformat()

def span_text(rng):
    """A span's text, its fields NULL now and then"""
    fields = [maybe(rng, iso(poison_date(rng, 0.3))), maybe(rng, iso(poison_time(rng, True, 0.3))),
              maybe(rng, poison_numeric(rng, 0.4))]
    return "(" + ",".join("" if f is None else '"%s"' % f for f in fields) + ")"

def rand_bytes(rng, lo, hi):
    n = rng.randint(lo, hi)
    return rng.getrandbits(8 * n).to_bytes(n, "little") if n else b""

def row_values(rng, table, limit):
    """The non-key columns of a new or updated row, as SQL and parameters"""
    if table == "numbers":
        return ("n = %s, s = %s, amount = %s, f = %s, at = %s, j = %s, tags = %s",
                [maybe(rng, rng.randint(-2**31, 2**31 - 1)), maybe(rng, rand_text(rng, 0, 30)),
                 maybe(rng, Decimal(rng.randint(-10**11, 10**11)) / 100), maybe(rng, rand_float(rng)),
                 maybe(rng, poison_time(rng, True, 0.04)), maybe(rng, psycopg2.extras.Json(rand_json(rng))),
                 maybe(rng, [maybe(rng, rand_text(rng, 0, 5)) for _ in range(rng.randint(0, 4))])])
    if table == "pairs":
        return ("v = %s, u = %s::uuid, d = %s",
                [maybe(rng, rand_float(rng)), maybe(rng, str(uuid.UUID(int=rng.getrandbits(128)))),
                 maybe(rng, poison_date(rng, 0.04))])
    if table == "pages":
        return ("n = %s, body = %s, raw = %s",
                [maybe(rng, rng.randint(0, 1000)), maybe(rng, long_text(rng)),
                 maybe(rng, psycopg2.Binary(rand_bytes(rng, 0, 20)))])
    if table == "ledger":
        return ("body = %s, v = %s::numeric, flag = %s, at = %s",
                [maybe(rng, long_text(rng)),
                 maybe(rng, poison_numeric(rng, 0.08) if rng.random() < 0.3 else
                       Decimal(rng.randint(-10**20, 10**20)).scaleb(-rng.randint(0, 10))),
                 maybe(rng, rng.random() < 0.5), maybe(rng, poison_time(rng, False, 0.04))])
    if table == "names":
        return ("payload = %s, big = %s",
                [maybe(rng, psycopg2.Binary(rand_bytes(rng, 0, 30))),
                 maybe(rng, rng.randint(-2**63, 2**63 - 1))])
    if table == "poison":
        return ("d = %s::date, ts = %s::timestamp, tstz = %s::timestamptz, n = %s::numeric, "
                "stamps = %s::timestamptz[], nums = %s::numeric[], s = %s::" + SPAN + ", "
                "spans = %s::" + SPAN + "[]",
                [maybe(rng, poison_date(rng)), maybe(rng, poison_time(rng, False)),
                 maybe(rng, poison_time(rng, True)), maybe(rng, poison_numeric(rng)),
                 maybe(rng, [maybe(rng, iso(poison_time(rng, True))) for _ in range(rng.randint(0, 4))]),
                 maybe(rng, [maybe(rng, poison_numeric(rng)) for _ in range(rng.randint(0, 4))]),
                 maybe(rng, span_text(rng)),
                 maybe(rng, [span_text(rng) for _ in range(rng.randint(0, 3))])])
    if table == "blobs":
        return ("n = %s, doc = %s, raw = %s, note = %s",
                [maybe(rng, rng.randint(0, 1000)), maybe(rng, big_text(rng, limit)),
                 maybe(rng, psycopg2.Binary(rand_bytes(rng, 0, limit // 4))),
                 maybe(rng, rand_text(rng, 0, 20))])
    return ("v = %s", [rng.randint(0, 100)])

def rand_key(rng, table):
    if table == "pairs":
        return [rng.randint(0, KEYS // 3), rng.choice("xyz")]
    if table == "names":
        return ["name-%d" % rng.randint(0, KEYS)]
    if table == "poison":
        # +-infinity in the key too: documentKey holds the fallback's datetimes
        return [rng.randint(0, KEYS // 3), rng.choice(["infinity", "-infinity", "2000-01-01", "2024-02-29"])]
    if table == "blobs":
        return [rng.randint(0, KEYS // 3)]
    return [rng.randint(0, KEYS)]

def key_where(table):
    cols = TABLES[table][1]
    return " AND ".join("%s = %%s" % c for c in cols)

# the tables whose first key column is the integer id
BY_ID = ("numbers", "pages", "ledger", "poison", "blobs", "ignored")

def op_insert(cur, rng, table, limit):
    n = rng.randint(1, 6) if table != "blobs" else rng.randint(1, 2)
    count = 0
    cols = TABLES[table][1]
    for _ in range(n):
        sets, params = row_values(rng, table, limit)
        names = cols + [s.split(" = ")[0] for s in sets.split(", ")]
        values = ", ".join(["%s"] * len(cols) + [s.split(" = ")[1] for s in sets.split(", ")])
        cur.execute("INSERT INTO %s.%s (%s) VALUES (%s) ON CONFLICT DO NOTHING"
                    % (SCHEMA, table, ", ".join(names), values), rand_key(rng, table) + params)
        count += cur.rowcount
    return count

def op_update(cur, rng, table, limit):
    sets, params = row_values(rng, table, limit)
    if table == "pages" and rng.random() < 0.5:
        # leave the TOASTed body as it is
        sets, params = "n = %s", [rng.randint(0, 1000)]
    if table == "blobs" and rng.random() < 0.4:
        # the large values left as they are, or one of them changed
        sets, params = rng.choice([("n = %s", [rng.randint(0, 1000)]),
                                   ("note = %s", [rand_text(rng, 0, 20)]),
                                   ("doc = %s", [big_text(rng, limit)])])
    if table in BY_ID and rng.random() < 0.5:
        lo = rng.randint(0, KEYS // 3 if table in ("poison", "blobs") else KEYS)
        cur.execute("UPDATE %s.%s SET %s WHERE id BETWEEN %%s AND %%s" % (SCHEMA, table, sets),
                    params + [lo, lo + rng.randint(0, 6 if table != "blobs" else 2)])
    else:
        cur.execute("UPDATE %s.%s SET %s WHERE %s" % (SCHEMA, table, sets, key_where(table)),
                    params + rand_key(rng, table))
    return cur.rowcount

def op_key_update(cur, rng, table, limit):
    cols = TABLES[table][1]
    new = rand_key(rng, table)
    cur.execute("UPDATE %s.%s SET %s WHERE %s" % (
        SCHEMA, table, ", ".join("%s = %%s" % c for c in cols), key_where(table)),
        new + rand_key(rng, table))
    return 2 * cur.rowcount

def op_delete(cur, rng, table, limit):
    if table in BY_ID and table != "ignored" and rng.random() < 0.5:
        lo = rng.randint(0, KEYS // 3 if table in ("poison", "blobs") else KEYS)
        cur.execute("DELETE FROM %s.%s WHERE id BETWEEN %%s AND %%s" % (SCHEMA, table),
                    [lo, lo + rng.randint(0, 4)])
    else:
        cur.execute("DELETE FROM %s.%s WHERE %s" % (SCHEMA, table, key_where(table)),
                    rand_key(rng, table))
    return cur.rowcount

def op_truncate(cur, rng, table, limit):
    tables = [table] + ([rng.choice(list(TABLES))] if rng.random() < 0.5 else [])
    cur.execute("TRUNCATE %s" % ", ".join("%s.%s" % (SCHEMA, t) for t in dict.fromkeys(tables)))
    return len(set(tables))

OPS = [(op_insert, 40), (op_update, 30), (op_key_update, 8), (op_delete, 20), (op_truncate, 0.05)]

class Workload:
    def __init__(self, target, sessions, seed, limit):
        self.target = target
        self.sessions = sessions
        self.seed = seed
        self.limit = limit
        self.committed = 0       # row changes in committed transactions
        self.stats = {"commits": 0, "rollbacks": 0, "savepoint rollbacks": 0, "errors": 0}
        self.lock = threading.Lock()
        self.failure = None

    def session(self, i):
        rng = random.Random(self.seed * 1000 + i)
        tables = list(TABLES)
        weights = [TABLE_WEIGHTS.get(t, 1) for t in tables]
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
                    table = rng.choices(tables, weights)[0]
                    cur.execute("SAVEPOINT s")
                    try:
                        n = op(cur, rng, table, self.limit)
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
def read_sql_slot(conn, options):
    """(lsn, xid, BSON bytes) of every message, in stream order, and the
    server's warnings"""
    cur = conn.cursor()
    opts = [x for kv in options for x in kv]
    messages = []
    # not a list: psycopg2 keeps only the last 50 items of a list
    conn.notices = collections.deque()
    while True:
        cur.execute("SELECT lsn::text, xid::text::bigint, data FROM pg_logical_slot_get_binary_changes(%s, NULL, 20000, "
                    + ", ".join(["%s"] * len(opts)) + ")", [SLOT_SQL] + opts)
        rows = cur.fetchall()
        conn.commit()
        if not rows:
            notices, conn.notices = list(conn.notices), []
            return messages, notices
        messages.extend((lsn_int(l), x, bytes(d)) for l, x, d in rows)

def lsn_int(text):
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)

def lsn_text(v):
    return "%X/%X" % (v >> 32, v & 0xFFFFFFFF)

def read_recvlogical(db, endpos, options):
    """The messages pg_recvlogical writes: each message, then a newline"""
    with tempfile.NamedTemporaryFile(prefix="crosscheck_changes_", suffix=".bson") as f:
        cmd = ["pg_recvlogical", "-d", db, "--slot", SLOT_RECV, "--start", "--no-loop",
               "--endpos", endpos, "-f", f.name]
        for k, v in options:
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

class Poison:
    """The values of the columns that can hold one without a BSON mapping,
    each one of the fallback's exact values or an ordinary one; counted by
    kind and place"""
    def __init__(self):
        self.counts = {}
        self.columns = set()       # (table, column) that held an unmappable value

    def count(self, kind, place, table=None, column=None):
        self.counts.setdefault(kind, {}).setdefault(place, 0)
        self.counts[kind][place] += 1
        if table and kind in ("infinity", "-infinity", "wide numeric"):
            self.columns.add((table, column))

    def value(self, kind, v, place, table, column):
        """None, or what is wrong with v"""
        if v is None:
            return None
        if kind == "time":
            if not isinstance(v, dt.datetime):
                return "%r, not a datetime" % (v,)
            if v == FALLBACK_MAX:
                self.count("infinity", place, table, column)
            elif v == FALLBACK_MIN:
                self.count("-infinity", place, table, column)
            elif not ORDINARY_TIMES[0] <= v < ORDINARY_TIMES[1]:
                return "datetime %s, neither the fallback's nor an ordinary one" % v.isoformat()
            return None
        if kind == "numeric":
            if isinstance(v, str):
                if v not in POOL.strings:
                    return "string %s, not the text of a numeric without decimal128 the workload wrote" \
                        % shorten(v, 80)
                self.count("wide numeric", place, table, column)
                return None
            if not isinstance(v, Decimal128):
                return "%s, not a decimal128 or a string" % shorten(repr(v), 80)
            # NaN, infinities and the workload's ordinary numerics (at most
            # 21 digits, scale at most 10) read from the bits, the rest by
            # to_decimal (slow): the wide ones the workload wrote
            high = int.from_bytes(v.bid[8:], "little")
            combination = (high >> 58) & 0x1F
            if combination == 0x1F:
                if v.bid != NAN_BID:
                    return "a NaN decimal128 of other bits: %s" % v.bid.hex()
                self.count("NaN", place)
            elif combination == 0x1E:
                self.count("-Infinity" if high >> 63 else "Infinity", place)
            elif (high >> 61) & 3 == 3 or not (
                    ((high & 0x1FFFFFFFFFFFF) << 64 | int.from_bytes(v.bid[:8], "little")) < 10**22
                    and -10 <= ((high >> 49) & 0x3FFF) - 6176 <= 0):
                d = v.to_decimal()
                want = POOL.decimals.get(d.normalize(EXACT))
                if want is None:
                    return "decimal128 %s, not an ordinary numeric nor one the workload wrote" % d
                if d.as_tuple() != want.as_tuple():
                    return "decimal128 %s, expected %s" % (d, want)
                self.count("wide numeric with a decimal128", place)
            return None
        if kind.endswith("[]"):
            if not isinstance(v, list):
                return "%s, not an array" % shorten(repr(v), 80)
            sub = "array of composites" if kind == "span[]" else "array"
            for x in v:
                bad = self.value(kind[:-2], x, sub, table, column)
                if bad:
                    return bad
            return None
        if kind == "span":
            if not isinstance(v, dict) or list(v.keys()) != [f for f, _ in SPAN_FIELDS]:
                return "%s, not a span" % shorten(repr(v), 80)
            for f, k in SPAN_FIELDS:
                bad = self.value(k, v[f], place if place != "top" else "composite", table, column)
                if bad:
                    return "%s: %s" % (f, bad)
            return None
        raise ValueError(kind)

    def document(self, table, doc, place="top"):
        """The poison-able columns of a document (a row, or updatedFields)"""
        cols = POISON_COLUMNS.get(table)
        if not cols or not isinstance(doc, dict):
            return None
        for c, kind in cols.items():
            if c in doc:
                bad = self.value(kind, doc[c], place if kind in ("time", "numeric") else "top",
                                 table, c)
                if bad:
                    return "%s: %s" % (c, bad)
        return None


class Model:
    def __init__(self, db, limit, markers):
        self.db = db
        self.limit = limit
        self.markers = markers     # the read has commit markers
        self.colls = {}            # coll -> {encoded _id: document}
        self.failures = []
        self.checked = 0           # events
        self.markers_checked = 0
        self.prev_token = ""
        self.txn = None            # (token LSN, xid) of the current transaction
        self.position = 0
        self.last_event = None     # (event index, event, deleted document) for key changes
        self.events = 0
        self.fragments = []        # of the split event being put together: (i, lsn, xid, data, fields)
        self.stats = dict.fromkeys(["messages", "split events", "split events within the limit",
                                    "fragments", "fragments over the limit", "most fragments",
                                    "largest message", "markers"], 0)
        self.split_ops = {}        # operationType -> split events
        self.oversized_tables = set()
        self.txn_messages = 0      # messages of the transaction since its first
        self.prev_marker_lsn = None
        self.counts = {}
        self.poison = Poison()
        self.features = dict.fromkeys(["replace", "unchangedFields", "update without fullDocument",
                                       "fullDocumentBeforeChange", "key change"], 0)

    def fail(self, i, ev, what):
        self.failures.append("event %d (%s %s): %s" % (
            i, ev.get("operationType"), shorten(ev.get("documentKey"), 80), what))

    def mfail(self, i, what):
        self.failures.append("message %d: %s" % (i, what))

    # ---------------------------------------------------------- messages
    def message(self, i, lsn, xid, data):
        """One message of the stream: an event, a fragment or a marker"""
        self.stats["messages"] += 1
        self.stats["largest message"] = max(self.stats["largest message"], len(data))
        if len(data) == MARKER_LEN and data.startswith(MARKER_HEAD):
            return self.marker(i, lsn, xid, data)
        try:
            # a fragment's second field, after _id: {_data: <32 characters>}
            fields = top_fields(data) if data[59:70] == b"splitEvent\0" else None
            if fields and len(fields) > 1 and fields[1][0] == "splitEvent":
                # a fragment: its _id and splitEvent; its fields are decoded
                # with the others of its event
                head = data[fields[0][1]:fields[1][2]]
                doc = bson.decode(struct.pack("<i", len(head) + 5) + head + b"\0",
                                  codec_options=DECODE_OPTS)
            else:
                doc = bson.decode(data, codec_options=DECODE_OPTS)
        except Exception as e:
            return self.mfail(i, "pymongo cannot decode it: %s" % e)
        pos = self.token(i, doc, xid)
        if pos is None:
            return
        if self.markers and self.txn_messages and self.txn_key != self.txn:
            self.mfail(i, "transaction %d (commit %s) ended without a commit marker"
                       % (self.txn_key[1], self.txn_key[0]))
            self.txn_messages = 0
        if self.txn_messages == 0 and self.markers and self.prev_marker_lsn is not None \
                and int(self.txn[0], 16) < self.prev_marker_lsn:
            self.mfail(i, "commit LSN %s before the previous transaction's marker at %s"
                       % (self.txn[0], lsn_text(self.prev_marker_lsn)))
        self.txn_key = self.txn
        self.txn_messages += 1
        # the change's own LSN, before its commit
        if lsn >= int(self.txn[0], 16):
            self.mfail(i, "lsn %s not before the commit LSN %s of its token" % (lsn_text(lsn), self.txn[0]))
        if "splitEvent" in doc:
            return self.fragment(i, lsn, xid, data, doc, fields, pos)
        if self.fragments:
            self.mfail(i, "a whole event while fragment %d of %d waits for the next"
                       % (len(self.fragments), self.fragments[0][4]))
            self.fragments = []
        if len(data) > self.limit:
            self.mfail(i, "%d bytes, over max-event-size (%d), not split" % (len(data), self.limit))
        self.event(doc, xid, pos)

    def token(self, i, doc, xid):
        """Each message's resume token: after the one before, one commit LSN
        per transaction, the next position; the position, or None"""
        tok = doc["_id"]["_data"] if isinstance(doc.get("_id"), dict) and next(iter(doc)) == "_id" \
            and list(doc["_id"].keys()) == ["_data"] else None
        if not (isinstance(tok, str) and len(tok) == 32 and HEX.issuperset(tok)):
            self.mfail(i, "resume token %r" % (tok,))
            return None
        if tok <= self.prev_token:
            self.mfail(i, "resume token %s not after %s" % (tok, self.prev_token))
        self.prev_token = tok
        lsn, pos = tok[:16], int(tok[16:], 16)
        if self.txn != (lsn, xid):
            self.txn, self.position = (lsn, xid), 0
            self.last_event = None
        self.position += 1
        if pos != self.position:
            self.mfail(i, "position %d, expected %d" % (pos, self.position))
        return pos

    def fragment(self, i, lsn, xid, data, doc, fields, pos):
        """A fragment: {_id, splitEvent: {fragment, of}, fields...}"""
        self.stats["fragments"] += 1
        se = doc["splitEvent"]
        names = [f[0] for f in fields]
        if names[:2] != ["_id", "splitEvent"] or len(names) < 3 or not isinstance(se, dict) \
                or list(se.keys()) != ["fragment", "of"] or type(se["fragment"]) is not int \
                or type(se["of"]) is not int or not 1 <= se["fragment"] <= se["of"] or se["of"] < 2:
            self.fragments = []
            return self.mfail(i, "fragment of fields %s, splitEvent %r" % (names, se))
        n, of = se["fragment"], se["of"]
        if len(data) > self.limit:
            # only a field too large for any fragment, alone in its own
            self.stats["fragments over the limit"] += 1
            if len(names) != 3:
                self.mfail(i, "fragment %d of %d: %d bytes, over max-event-size (%d), with fields %s"
                           % (n, of, len(data), self.limit, names[2:]))
        if n == 1:
            if self.fragments:
                self.mfail(i, "fragment 1 while fragment %d of %d waits for the next"
                           % (len(self.fragments), self.fragments[0][4]))
            self.fragments = []
        else:
            prev = self.fragments[-1] if self.fragments else None
            if prev is None or n != prev[1] + 1 or of != prev[4] or xid != prev[2] \
                    or pos != prev[5] + 1 or doc["_id"]["_data"][:16] != prev[6]:
                self.fragments = []
                return self.mfail(i, "fragment %d of %d (position %d) does not follow %s"
                                  % (n, of, pos, "a fragment" if prev is None else
                                     "fragment %d of %d (position %d)" % (prev[1], prev[4], prev[5])))
            # as MongoDB splits: greedily, the fragment before was full
            first = fields[2][2] - fields[2][1]
            if len(prev[3]) + first <= self.limit:
                self.mfail(i, "fragment %d of %d: its first field %r (%d bytes) would have fit in "
                           "fragment %d (%d bytes)" % (n, of, names[2], first, n - 1, len(prev[3])))
        self.fragments.append((i, n, xid, data, of, pos, doc["_id"]["_data"][:16], fields))
        if n < of:
            return
        # all of them: the event is fragment 1's _id and every fragment's fields in order
        frags, self.fragments = self.fragments, []
        first_data, first_fields = frags[0][3], frags[0][7]
        body = [first_data[first_fields[0][1]:first_fields[0][2]]]
        for f in frags:
            body += [f[3][s:e] for _, s, e in f[7][2:]]
        raw = b"".join(body)
        whole = struct.pack("<i", 4 + len(raw) + 1) + raw + b"\0"
        names = [name for f in frags for name, _, _ in f[7][2:]]
        if len(set(names)) != len(names):
            return self.mfail(i, "the fragments' fields repeat: %s" % names)
        if len(whole) <= self.limit:
            self.mfail(i, "an event of %d bytes split, within max-event-size (%d)" % (len(whole), self.limit))
        try:
            ev = bson.decode(whole, codec_options=DECODE_OPTS)
        except Exception as e:
            return self.mfail(i, "pymongo cannot decode the merged fragments: %s" % e)
        self.stats["split events"] += 1
        op = ev.get("operationType")
        self.split_ops[op] = self.split_ops.get(op, 0) + 1
        self.stats["most fragments"] = max(self.stats["most fragments"], len(frags))
        if any(len(f[3]) > self.limit for f in frags):
            if isinstance(ev.get("ns"), dict):
                self.oversized_tables.add(ev["ns"].get("coll"))
        else:
            self.stats["split events within the limit"] += 1
        self.event(ev, xid, frags[0][5])

    def marker(self, i, lsn, xid, data):
        """{"commit": n} after the n messages of its transaction"""
        self.stats["markers"] += 1
        if not self.markers:
            return self.mfail(i, "a commit marker, not asked for")
        n = struct.unpack_from("<q", data, 12)[0]
        ok = True
        if data[-1:] != b"\0" or bson.decode(data) != {"commit": n}:
            self.mfail(i, "commit marker %s" % data.hex())
            ok = False
        if self.fragments:
            self.mfail(i, "commit marker after fragment %d of %d" % (len(self.fragments), self.fragments[0][4]))
            self.fragments = []
            ok = False
        if self.txn_messages == 0:
            self.mfail(i, "commit marker without messages before it")
            ok = False
        else:
            commit_lsn, txid = int(self.txn_key[0], 16), self.txn_key[1]
            if n != self.txn_messages or n != self.position:
                self.mfail(i, "commit marker counts %d messages, its transaction has %d (last position %d)"
                           % (n, self.txn_messages, self.position))
                ok = False
            if xid != txid:
                self.mfail(i, "commit marker of transaction %d after transaction %d's messages" % (xid, txid))
                ok = False
            if lsn <= commit_lsn:
                self.mfail(i, "commit marker at %s, not after the commit LSN %s"
                           % (lsn_text(lsn), lsn_text(commit_lsn)))
                ok = False
        self.txn_messages = 0
        self.prev_marker_lsn = lsn
        if ok:
            self.markers_checked += 1

    def finish(self):
        if self.fragments:
            self.mfail(self.fragments[-1][0], "the stream ends at fragment %d of %d"
                       % (len(self.fragments), self.fragments[0][4]))
        if self.markers and self.txn_messages:
            self.mfail(self.stats["messages"], "the stream ends without the last transaction's commit marker")

    # ---------------------------------------------------------- events
    def event(self, ev, xid, pos):
        j = self.events
        self.events += 1
        self.counts[ev.get("operationType")] = self.counts.get(ev.get("operationType"), 0) + 1
        self.apply(j, ev, xid, pos)

    def head(self, i, ev, xid, pos):
        """The fields every event has, in order"""
        ok = True
        order = [EVENT_FIELDS.index(k) if k in EVENT_FIELDS else -1 for k in ev.keys()]
        if -1 in order or order != sorted(order) or len(set(order)) != len(order):
            self.fail(i, ev, "fields %s" % list(ev.keys()))
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
        # the columns that can hold unmappable values
        table = ns["coll"].split(".", 1)[1]
        if table in POISON_COLUMNS:
            docs = [(ev.get("fullDocument"), "top"), (ev.get("fullDocumentBeforeChange"), "top"),
                    ((ev.get("updateDescription") or {}).get("updatedFields"), "top")]
            dk = ev.get("documentKey", {}).get("_id")
            if isinstance(dk, dict):
                docs.append((dk, "key"))
            for doc, place in docs:
                bad = self.poison.document(table, doc, place)
                if bad:
                    self.fail(i, ev, bad)
                    ok = False
        return ok

    def apply(self, i, ev, xid, pos):
        if not self.head(i, ev, xid, pos):
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


# ------------------------------------------------------------ the tables
def text_columns(table):
    """SQL of PostgreSQL's text of the poison-able columns of t, and how to
    read it back: [(column, kind, number of SQL columns)]"""
    sql, shape = [], []
    for c, kind in POISON_COLUMNS.get(table, {}).items():
        if kind in ("time", "numeric"):
            sql.append("t.%s::text" % c)
            shape.append((c, kind, 1))
        elif kind.endswith("[]") and kind != "span[]":
            sql.append("t.%s::text[]" % c)
            shape.append((c, kind, 1))
        elif kind == "span":
            sql += ["t.%s::text IS NULL" % c] + ["(t.%s).%s::text" % (c, f) for f, _ in SPAN_FIELDS]
            shape.append((c, kind, 4))
        else:
            sql += ["t.%s IS NULL" % c] + ["ARRAY(SELECT x.%s::text FROM unnest(t.%s) x)" % (f, c)
                                           for f, _ in SPAN_FIELDS]
            shape.append((c, kind, 4))
    return sql, shape

def fallback_of(kind, text, v):
    """None, or how v, the BSON of a value whose PostgreSQL text is text,
    differs from the fallback's exact value"""
    if text is None:
        return None if v is None else "%s for NULL" % shorten(repr(v), 80)
    if kind == "time":
        want = {"infinity": FALLBACK_MAX, "-infinity": FALLBACK_MIN}.get(text)
        if want is not None:
            ms = (v - EPOCH) // dt.timedelta(milliseconds=1) if isinstance(v, dt.datetime) else None
            if ms != (FALLBACK_MAX_MS if text == "infinity" else FALLBACK_MIN_MS) or v != want:
                return "%s for %s" % (shorten(repr(v), 80), text)
        elif not isinstance(v, dt.datetime) or v in (FALLBACK_MAX, FALLBACK_MIN):
            return "%s for %s" % (shorten(repr(v), 80), text)
        return None
    kind_, want = expected_numeric(text)
    if kind_ == "string":
        if not isinstance(v, str) or v != text:
            return "%s for the numeric %s (%d significant digits)" % (
                shorten(repr(v), 80), shorten(text, 80), significant_digits(text))
        return None
    if not isinstance(v, Decimal128):
        return "%s for the numeric %s" % (shorten(repr(v), 80), shorten(text, 80))
    got = v.to_decimal()
    if want.is_nan():
        return None if v.bid == NAN_BID else "decimal128 %s for NaN" % v.bid.hex()
    if got.as_tuple() != want.as_tuple():
        return "decimal128 %s for the numeric %s" % (got, shorten(text, 80))
    return None

def check_texts(table, doc, texts, shape):
    """The row's poison-able values against PostgreSQL's text of them"""
    k = 0
    for c, kind, n in shape:
        vals, k = texts[k:k + n], k + n
        v = doc.get(c)
        if kind in ("time", "numeric"):
            bad = fallback_of(kind, vals[0], v)
        elif kind in ("time[]", "numeric[]"):
            if vals[0] is None or v is None:
                bad = None if vals[0] is None and v is None else "%s for %s" % (shorten(repr(v), 80), vals[0])
            elif not isinstance(v, list) or len(v) != len(vals[0]):
                bad = "%s for %s" % (shorten(repr(v), 80), shorten(vals[0], 80))
            else:
                bad = next((b for b in (fallback_of(kind[:-2], t, x) for t, x in zip(vals[0], v)) if b), None)
        elif kind == "span":
            if vals[0]:
                bad = None if v is None else "%s for NULL" % shorten(repr(v), 80)
            elif not isinstance(v, dict):
                bad = "%s for a span" % shorten(repr(v), 80)
            else:
                bad = next((b for b in (fallback_of(fk, t, v.get(f)) for (f, fk), t
                                        in zip(SPAN_FIELDS, vals[1:])) if b), None)
        else:
            if vals[0]:
                bad = None if v is None else "%s for NULL" % shorten(repr(v), 80)
            elif not isinstance(v, list) or len(v) != len(vals[1]):
                bad = "%s for %d spans" % (shorten(repr(v), 80), len(vals[1]))
            else:
                bad = None
                for e, x in enumerate(v):
                    bad = bad or next((b for b in (fallback_of(fk, vals[1 + f][e], (x or {}).get(name))
                                                   for f, (name, fk) in enumerate(SPAN_FIELDS)) if b), None)
        if bad:
            return "%s: %s" % (c, bad)
    return None

def final_tables(cur, poison):
    """ns.coll -> {encoded _id: row_to_bson of the row with _id first}, the
    unmappable values as the fallback writes them; and what is wrong with
    the tables' unmappable values against PostgreSQL's text of them"""
    out, failures = {}, []
    cur.execute("SET bson_out.unmappable_values = fallback")
    for table, (_, keys) in TABLES.items():
        if table == "ignored":
            continue
        rows = {}
        sql, shape = text_columns(table)
        cur.execute("SELECT %s FROM %s.%s t" % (", ".join(["row_to_bson(t)"] + sql), SCHEMA, table))
        for data, *texts in cur:
            row = bson.decode(bytes(data), codec_options=DECODE_OPTS)
            key = row[keys[0]] if len(keys) == 1 else SON((k, row[k]) for k in keys)
            doc = SON([("_id", key)])
            doc.update(row)
            rows[key_of(key)] = doc
            if shape:
                bad = check_texts(table, row, texts, shape)
                if bad:
                    failures.append("%s.%s: row %s: %s" % (SCHEMA, table, shorten(key, 80), bad))
                else:
                    poison.document(table, row, "table")
        out["%s.%s" % (SCHEMA, table)] = rows
    cur.execute("RESET bson_out.unmappable_values")
    return out, failures

WARN_VALUE = re.compile(r'WARNING:  (?:(?:date|timestamp) -?infinity|(numeric) without an exact decimal128) '
                        r'in "([^"]+)" of table ([^ ]+) written by the fallback')
WARN_SPLIT = re.compile(r'WARNING:  change event of table ([^ ]+) has a field too large to split')

def check_warnings(notices, poison, oversized):
    """The read's warnings: of unmappable values in the columns that held
    them, of fields too large to split in the tables that had them"""
    failures, warned, warned_split = [], set(), set()
    for n in notices:
        first = n.splitlines()[0] if n else ""
        m, s = WARN_VALUE.match(first), WARN_SPLIT.match(first)
        if m:
            table, column = m.group(3).split(".", 1)[1], re.split(r"[\[.]", m.group(2))[0]
            kind = POISON_COLUMNS.get(table, {}).get(column, "")
            if kind not in ({"numeric", "numeric[]", "span", "span[]"} if m.group(1)
                            else {"time", "time[]", "span", "span[]"}):
                failures.append("a warning of a column that holds no such value: %s" % first)
            warned.add((table, column))
        elif s:
            warned_split.add(s.group(1))
        elif first.startswith(("WARNING", "ERROR")):
            failures.append("unexpected: %s" % first)
    missing = sorted(poison.columns - warned)
    if missing:
        failures.append("no warning of the unmappable values of %s" % ", ".join("%s.%s" % c for c in missing))
    tables = {c.split(".", 1)[1] for c in oversized if c}
    if tables != {t.split(".", 1)[1] for t in warned_split if "." in t}:
        failures.append("warnings of fields too large to split for %s, fragments over the limit for %s"
                        % (sorted(warned_split), sorted(tables)))
    return failures, len(warned), len(warned_split)


def main():
    global POOL
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--changes", type=int, default=50000)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-event-size", default="8kB",
                    help="the plugin's max-event-size for both reads (default 8kB)")
    args = ap.parse_args()
    limit = parse_size(args.max_event_size)
    sql_options = OPTIONS + [("max-event-size", args.max_event_size), ("commit-markers", "on")]
    recv_options = OPTIONS + [("max-event-size", args.max_event_size)]

    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    try:
        cur.execute("SELECT current_database()")
        db = cur.fetchone()[0]
        setup(conn)
        POOL = Pool(cur, args.seed)
        started = time.monotonic()
        work = Workload(args.changes, args.sessions, args.seed, limit)
        work.run()
        t_work = time.monotonic() - started
        # a change of the table left out, so that the WAL goes past endpos
        cur.execute("SELECT pg_current_wal_insert_lsn()::text")
        endpos = cur.fetchone()[0]
        cur.execute("INSERT INTO %s.ignored VALUES (-1, 0)" % SCHEMA)

        started = time.monotonic()
        conn.autocommit = False
        sql_messages, notices = read_sql_slot(conn, sql_options)
        conn.autocommit = True
        t_sql = time.monotonic() - started
        started = time.monotonic()
        recv_events = read_recvlogical(db, endpos, recv_options)
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
    sql_events = [d for _, _, d in sql_messages
                  if not (len(d) == MARKER_LEN and d.startswith(MARKER_HEAD))]
    print("messages: %d from pg_logical_slot_get_binary_changes with commit markers (%.1f s), "
          "%d from pg_recvlogical (%.1f s); max-event-size %s (%d bytes)"
          % (len(sql_messages), t_sql, len(recv_events), t_recv, args.max_event_size, limit))
    # the same messages, but for the markers
    if sql_events != recv_events:
        first = next((i for i, (a, b) in enumerate(zip(sql_events, recv_events)) if a != b),
                     min(len(sql_events), len(recv_events)))
        failures.append("pg_recvlogical delivered other messages than the SQL read's less its markers: "
                        "%d against %d, first difference at %s" % (len(recv_events), len(sql_events), first))

    model = Model(db, limit, markers=True)
    started = time.monotonic()
    for i, (lsn, xid, data) in enumerate(sql_messages):
        model.message(i, lsn, xid, data)
    model.finish()
    print("events: %d (%s); replayed in %.1f s"
          % (model.events, ", ".join("%s %d" % kv for kv in sorted(model.counts.items(), key=str)),
             time.monotonic() - started))
    print("events with: %s" % ", ".join("%s %d" % kv for kv in model.features.items()))
    st = model.stats
    print("split events: %d (%s), %d of them with every fragment within the limit; %d fragments, "
          "at most %d an event, %d over the limit (a field alone); largest message %d bytes; "
          "commit markers %d" % (st["split events"], ", ".join("%s %d" % kv for kv in sorted(model.split_ops.items(), key=str)),
                                 st["split events within the limit"], st["fragments"], st["most fragments"],
                                 st["fragments over the limit"], st["largest message"], st["markers"]))
    print("unmappable values in the events: %s" % poison_summary(model.poison))
    if model.events < args.changes:
        failures.append("only %d events, fewer than %d" % (model.events, args.changes))
    failures += model.failures
    bad, nwarned, nsplit = check_warnings(notices, model.poison, model.oversized_tables)
    print("warnings: %d of columns with unmappable values, %d of fields too large to split"
          % (nwarned, nsplit))
    failures += bad
    # the workload wrote each kind of value and each kind of split event,
    # and the stream has them (a short run may miss some)
    kinds = model.poison.counts
    missed = []
    for kind in ["infinity", "-infinity", "wide numeric", "NaN"] + (["Infinity", "-Infinity"] if POOL.infinity else []):
        for place in ["top", "array", "composite", "array of composites"] + (["key"] if "infinity" in kind else []):
            if not kinds.get(kind, {}).get(place):
                missed.append("no %s value %s in the events" % (kind, "at the top" if place == "top" else
                                                                "in the " + place))
    for op in ("insert", "update", "delete"):
        if not model.split_ops.get(op):
            missed.append("no split %s event" % op)
    if not st["split events within the limit"] or not st["fragments over the limit"]:
        missed.append("no split event with every fragment within the limit, or none with a fragment over it")
    if args.changes >= 5000:
        failures += missed
    elif missed:
        print("not required of fewer than 5000 changes: %s" % "; ".join(missed))

    table_poison = Poison()
    tables, bad = final_tables(cur, table_poison)
    failures += bad
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
    print("unmappable values in the tables, against PostgreSQL's text: %s" % poison_summary(table_poison))

    for slot in (SLOT_SQL, SLOT_RECV):
        cur.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    cur.execute("DROP SCHEMA %s CASCADE" % SCHEMA)
    for f in failures[:30]:
        print("FAIL " + f)
    if len(failures) > 30:
        print("... and %d more" % (len(failures) - 30))
    print("crosscheck-changes: %d passed, %d failed"
          % (model.checked + model.markers_checked + rows_ok, len(failures)))
    return 0 if not failures else 1

def poison_summary(poison):
    return "; ".join("%s %d (%s)" % (kind, sum(places.values()),
                                     ", ".join("%s %d" % kv for kv in sorted(places.items())))
                     for kind, places in sorted(poison.counts.items())) or "none"

if __name__ == "__main__":
    sys.exit(main())
