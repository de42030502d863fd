#!/usr/bin/python3
"""Backend memory must be bounded by the output, not by the number of values.

Each check runs a query in a fresh backend on several input sizes and reads
the backend's peak resident memory (VmHWM in /proc/<pid>/status) before and
after, and the same for a reference query that does the same work without
the values in question: at every size the query may use at most a constant
more than its reference, far below what keeping memory per value costs.  Needs to read /proc/<backend pid>/status: run it
on the server's machine as root or as the server's user.  Connection from the
PG* environment.  Last line: "memory: N passed, M failed".
"""
import sys

import psycopg2

MB = 1024 * 1024


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0]) * 1024
    return out


def peak_growth(setup, query, n):
    """Peak resident memory added by query (with %(n)s) in a fresh backend."""
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    for s in setup:
        cur.execute(s, {"n": n})
    before = status(pid)["VmRSS"]
    cur.execute(query, {"n": n})
    out = cur.fetchone()[0]
    peak = status(pid)["VmHWM"]
    conn.close()
    return peak - before, out


def run_alone(statements, n):
    """statements (with %(n)s) in a connection of their own"""
    if not statements:
        return
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    for s in statements:
        cur.execute(s, {"n": n})
    conn.close()


# name, setup statements, the query, a reference query doing the same work
# without the values that must cost nothing to keep, and the sizes: at every
# size the query's peak may exceed the reference's by at most SLACK.  Optional
# last: statements run once per size in a connection of their own before both
# (work whose own peak must not hide the query's), and after both.
CHECKS = [
    ("json_to_bson, Extended JSON $date wrappers (reference: the same text, extended_json off)",
     ["CREATE TEMP TABLE t AS SELECT '{\"a\": [' || string_agg("
      "'{\"$date\": {\"$numberLong\": \"' || g || '\"}}', ',') || ']}' AS j "
      "FROM generate_series(1, %(n)s) g",
      "SELECT octet_length(j) FROM t"],
     "SELECT octet_length(json_to_bson(j::json, true)) FROM t",
     "SELECT octet_length(json_to_bson(j::json, false)) FROM t",
     [100000, 400000]),
    # row_to_bson looks up each anonymous row type once per call: an array of
    # anonymous records costs what the same array of named composite types
    # costs (whose types are cached with the call)
    ("row_to_bson, an array of nested anonymous records (reference: the same of named types)",
     [],
     "SELECT octet_length(row_to_bson(ROW(array_agg(ROW(g, 'x', ROW(g, true)))))) "
     "FROM generate_series(1, %(n)s) g",
     "SELECT octet_length(row_to_bson(ROW(array_agg(ROW(g, 'x', ROW(g, true)::mc_inner)::mc_outer)))) "
     "FROM generate_series(1, %(n)s) g",
     [100000, 300000],
     ["CREATE TYPE mc_inner AS (i int, b bool)",
      "CREATE TYPE mc_outer AS (i int, s text, inner_row mc_inner)"],
     ["DROP TYPE mc_outer", "DROP TYPE mc_inner"]),
    # the output plugin resets its memory after each change: decoding one
    # transaction of n inserts costs no more than test_decoding does on the
    # same WAL (both pay the reorder buffer and the result's tuplestore)
    ("output plugin, one transaction of inserts (reference: test_decoding on the same WAL)",
     [],
     "SELECT sum(octet_length(data)) FROM pg_logical_slot_peek_binary_changes('memory_bson', NULL, NULL)",
     "SELECT count(*) FROM pg_logical_slot_peek_changes('memory_text', NULL, NULL)",
     [50000, 200000],
     ["CREATE TABLE memory_changes (id int PRIMARY KEY, body text, amount numeric, at timestamptz)",
      "SELECT pg_create_logical_replication_slot('memory_bson', 'bson_out')",
      "SELECT pg_create_logical_replication_slot('memory_text', 'test_decoding')",
      "INSERT INTO memory_changes SELECT g, repeat('x', 100), g * 1.5, now() "
      "FROM generate_series(1, %(n)s) g"],
     ["SELECT pg_drop_replication_slot('memory_bson')",
      "SELECT pg_drop_replication_slot('memory_text')",
      "DROP TABLE memory_changes"]),
]
SLACK = 16 * MB


def main():
    passed = failed = 0
    for name, setup, query, reference, sizes, *around in CHECKS:
        prepare, cleanup = around or ([], [])
        for n in sizes:
            run_alone(prepare, n)
            growth, out = peak_growth(setup, query, n)
            ref, _ = peak_growth(setup, reference, n)
            run_alone(cleanup, n)
            line = ("%s: %d values, %d bytes of BSON, backend peak +%.1f MB, reference +%.1f MB"
                    % (name, n, out, growth / MB, ref / MB))
            if growth - ref <= SLACK:
                passed += 1
                print("ok   " + line)
            else:
                failed += 1
                print("FAIL " + line + " (more than %.0f MB above)" % (SLACK / MB))
    print("memory: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
