#!/usr/bin/python3
"""Backend peak memory during full-table scans, for the bson_out benchmark.

For each table and query it opens a fresh connection, loads the extension and
warms the catalog caches with a 100-row version of the query, reads the
backend's /proc/<pid>/status, then runs the full query while a thread samples
the same file every 2 ms.  It reports the backend's private (anonymous)
resident memory before and at its peak.  VmHWM (peak RSS) is reported too, but
it counts the shared-buffer pages the scan touches, so it grows with the table
for every query, to_bson or not; RssAnon is what would grow if to_bson kept
memory per row.

Needs to read /proc/<backend pid>/status, so run it on the server's machine
(bench/run.sh runs it as root).  Connection from the PG* environment.

  memtest.py --dbname bench --out memory.csv medium medium_x5
"""
import argparse
import os
import sys
import threading
import time

import psycopg2

QUERIES = {
    # variant: (full query template, uses COPY)
    "sum_bson": ("SELECT sum(octet_length(to_bson(doc))) FROM {src}", False),
    "copy_bson": ("COPY (SELECT id, to_bson(doc) FROM {src}) TO STDOUT (FORMAT binary)", True),
    "sum_text": ("SELECT sum(octet_length(doc::text)) FROM {src}", False),
}


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS", "RssAnon", "RssShmem"):
                out[k] = int(v.split()[0])  # kB
    return out


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_anon = 0
        self.samples = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                s = status(self.pid)
            except OSError:
                break
            self.peak_anon = max(self.peak_anon, s["RssAnon"])
            self.samples += 1
            time.sleep(0.002)


class Sink:
    """File-like object that only counts what COPY writes to it."""
    def __init__(self):
        self.n = 0

    def write(self, data):
        self.n += len(data)
        return len(data)


def measure(dbname, table, variant):
    template, is_copy = QUERIES[variant]
    conn = psycopg2.connect(dbname=dbname)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SET max_parallel_workers_per_gather = 0")
    cur.execute("SELECT pg_backend_pid(), count(*) FROM %s" % table)
    pid, rows = cur.fetchone()
    # warm-up: load the library, fill the catalog caches, run the plan once
    warm = template.format(src="(SELECT id, doc FROM %s LIMIT 100) w" % table)
    if is_copy:
        cur.copy_expert(warm, Sink())
    else:
        cur.execute(warm)
        cur.fetchall()
    before = status(pid)
    sampler = Sampler(pid)
    sampler.peak_anon = before["RssAnon"]
    sampler.start()
    t0 = time.time()
    q = template.format(src=table)
    if is_copy:
        cur.copy_expert(q, Sink())
    else:
        cur.execute(q)
        cur.fetchall()
    ms = (time.time() - t0) * 1000
    sampler.stop.set()
    sampler.join()
    after = status(pid)
    conn.close()
    peak = max(sampler.peak_anon, after["RssAnon"])
    return {
        "table": table, "rows": rows, "variant": variant,
        "rss_anon_before_kb": before["RssAnon"], "rss_anon_peak_kb": peak,
        "rss_anon_growth_kb": peak - before["RssAnon"],
        "vm_hwm_before_kb": before["VmHWM"], "vm_hwm_after_kb": after["VmHWM"],
        "samples": sampler.samples, "query_ms": round(ms, 1),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dbname", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", default="sum_bson,copy_bson,sum_text")
    ap.add_argument("tables", nargs="+")
    args = ap.parse_args()
    cols = ["table", "rows", "variant", "rss_anon_before_kb", "rss_anon_peak_kb",
            "rss_anon_growth_kb", "vm_hwm_before_kb", "vm_hwm_after_kb", "samples", "query_ms"]
    with open(args.out, "w") as f:
        f.write(",".join(cols) + "\n")
        for variant in args.variants.split(","):
            for table in args.tables:
                r = measure(args.dbname, table, variant)
                f.write(",".join(str(r[c]) for c in cols) + "\n")
                print("   memory %-9s %-10s %8d rows: private RSS %6d -> peak %6d kB "
                      "(+%d kB), VmHWM %d kB, %.0f ms" % (
                          variant, table, r["rows"], r["rss_anon_before_kb"],
                          r["rss_anon_peak_kb"], r["rss_anon_growth_kb"],
                          r["vm_hwm_after_kb"], r["query_ms"]), file=sys.stderr)


if __name__ == "__main__":
    main()
