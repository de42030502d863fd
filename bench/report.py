#!/usr/bin/python3
"""Summarise one bench/run.sh results directory.

  report.py RESULTS_DIR [--publish BENCHMARKS.md] [--chart-copy PNG]
  report.py --capture-chart DEBEZIUM.md PNG

The second form draws the change-capture chart of a bench/debezium_bench.sh
report (its part 1: Debezium, pg_bsonstream, pg_recvlogical with bson_out
and with wal2json on the same WAL): events per second, one bar each.

Reads meta.env, tables.csv, scans.csv, percall.csv, jsbson.csv, memory.csv
and callgrind.csv (those present), prints the summary, and writes into the
results directory summary.md (a markdown fragment), summary.txt, chart.dat,
chart.gp and chart.png (gnuplot).

The report is organised by function: the run, Data, Method, then to_bson
(jsonb), json_to_bson and Extended JSON, row_to_bson, Reading BSON back,
Export (pg_bsonexport), and the shared Memory, Per call and Parallel scan.
Every table says the commit and the command that produced it.

With --publish it writes BENCHMARKS.md as a sequence of generated blocks
(BLOCKS, in that order), each between its own BEGIN/END markers; text
outside the markers (hand-written notes, the export benchmark's output) is
kept after the block it follows.  A table this run has no data for keeps the
previous publish's block, which names its own commit and command.  It also
copies the chart to --chart-copy, the path BENCHMARKS.md links to.  Standard
library only.
"""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict

TABLES = ["small", "medium", "large", "keys"]
DB, DB_L1 = "bench", "bench_latin1"
DB_LABEL = {DB: "UTF8", DB_L1: "LATIN1"}
VARIANTS = [("base", "base (detoast only)"), ("text", "doc::text"), ("bson", "to_bson"),
            ("bson_nofast", "to_bson, fast path off")]
# to_bson targets (UTF8 database), per table: to_bson/text must, to_bson/text
# aim, to_bson/base aim
TARGETS = {"medium": (0.45, 0.30, 2.8), "small": (0.50, 0.30, 1.5),
           "large": (0.45, 0.30, 1.5), "keys": (0.45, 0.30, None)}
PERCALL_MUST = 0.95
# json_to_bson and Extended JSON (UTF8 database): the tables, the variants
# measured on them (table, variant, label), and the ratios of medians reported:
# (label, (table, variant) numerator, (table, variant) denominator, must <=, note)
X_TABLES = ["medium_json", "medium_ext", "medium_ext_json"]
X_VARIANTS = [
    ("medium_json", "text", "doc::text"),
    ("medium_json", "json_bson", "json_to_bson(doc)"),
    ("medium_json", "json_bson_nofast", "json_to_bson(doc), fast path off"),
    ("medium_json", "cast_bson", "to_bson(doc::jsonb)"),
    ("medium_ext", "bson", "to_bson(doc)"),
    ("medium_ext", "bson_ext", "to_bson(doc, true)"),
    ("medium_ext_json", "json_bson_ext", "json_to_bson(doc, true)"),
]
X_LABEL = {(t, v): label for t, v, label in X_VARIANTS}
X_RATIOS = [
    ("json_to_bson(doc) / to_bson(doc::jsonb)", ("medium_json", "json_bson"),
     ("medium_json", "cast_bson"), 0.50, "target 1"),
    ("json_to_bson(doc), fast off / to_bson(doc::jsonb)", ("medium_json", "json_bson_nofast"),
     ("medium_json", "cast_bson"), None, "information"),
    ("json_to_bson(doc) / doc::text", ("medium_json", "json_bson"), ("medium_json", "text"), None,
     "context: json's doc::text is the scan alone"),
    ("json_to_bson(doc): fast off / on", ("medium_json", "json_bson_nofast"),
     ("medium_json", "json_bson"), None, "> 1: the fast path saves time"),
    ("to_bson(doc, true) / to_bson(doc)", ("medium_ext", "bson_ext"), ("medium_ext", "bson"), 1.30,
     "target 2"),
    ("json_to_bson(doc, true) on the json copy / to_bson(doc, true)",
     ("medium_ext_json", "json_bson_ext"), ("medium_ext", "bson_ext"), None, "information"),
]
# row_to_bson (UTF8 database) on tables of typed columns; ratios as for
# json_to_bson, with (op, limit) for the must: "<=" or "<" (faster than)
R_TABLES = ["typed", "medium_rows"]
R_VARIANTS = [(t, v, label) for t in R_TABLES for v, label in (
    ("row_json", "row_to_json(t)::text"), ("row_jsonb_bson", "to_bson(to_jsonb(t))"),
    ("row_bson", "row_to_bson(t)"))]
R_LABEL = {(t, v): label for t, v, label in R_VARIANTS}
R_RATIOS = []
for _t, _k in (("typed", 1), ("medium_rows", 3)):
    R_RATIOS += [
        ("%s: row_to_bson(t) / row_to_json(t)::text" % _t, (_t, "row_bson"), (_t, "row_json"),
         ("<=", 0.50), "target %d" % _k),
        ("%s: row_to_bson(t) / to_bson(to_jsonb(t))" % _t, (_t, "row_bson"),
         (_t, "row_jsonb_bson"), ("<", 1.00), "target %d: faster" % (_k + 1)),
        ("%s: to_bson(to_jsonb(t)) / row_to_json(t)::text" % _t, (_t, "row_jsonb_bson"),
         (_t, "row_json"), None, "information"),
    ]
R_RATIOS.append(("row_to_bson(t) on medium_rows / to_bson(doc) on medium",
                 ("medium_rows", "row_bson"), ("medium", "bson"), None,
                 "information: the same data as typed columns and as one jsonb"))
# reading BSON back (UTF8 database): BSON to jsonb and JSON, on the medium documents:
# medium_bson (b = to_bson(doc)), medium_text (t = doc::text), medium_stream
# (one row, a stream of concatenated documents); (table, variant, query)
D_TABLES = ["medium_bson", "medium_text", "medium_stream"]
D_VARIANTS = [
    ("medium", "text_jsonb", "SELECT sum(pg_column_size(doc::text::jsonb)) FROM medium"),
    ("medium_text", "jsonb_in", "SELECT sum(pg_column_size(t::jsonb)) FROM medium_text"),
    ("medium_bson", "from_bson", "SELECT sum(pg_column_size(from_bson(b))) FROM medium_bson"),
    ("medium", "text", "SELECT sum(octet_length(doc::text)) FROM medium"),
    ("medium_bson", "bson_to_json", "SELECT sum(octet_length(bson_to_json(b)::text)) FROM medium_bson"),
    ("medium_bson", "bson_to_json_canonical",
     "SELECT sum(octet_length(bson_to_json(b, true)::text)) FROM medium_bson"),
    ("medium_bson", "is_valid", "SELECT count(*) FILTER (WHERE bson_is_valid(b)) FROM medium_bson"),
    ("medium_stream", "documents",
     "SELECT sum(octet_length(d)) FROM bson_documents((SELECT s FROM medium_stream)) d"),
]
D_LABEL = {("medium", "text_jsonb"): "doc::text::jsonb", ("medium_text", "jsonb_in"): "t::jsonb",
           ("medium_bson", "from_bson"): "from_bson(b)", ("medium", "text"): "doc::text",
           ("medium_bson", "bson_to_json"): "bson_to_json(b)",
           ("medium_bson", "bson_to_json_canonical"): "bson_to_json(b, true)",
           ("medium_bson", "is_valid"): "bson_is_valid(b)",
           ("medium_stream", "documents"): "bson_documents(stream)"}
D_RATIOS = [
    ("from_bson(b) / doc::text::jsonb", ("medium_bson", "from_bson"), ("medium", "text_jsonb"),
     ("<=", 1.00), "target 1"),
    ("from_bson(b) / t::jsonb", ("medium_bson", "from_bson"), ("medium_text", "jsonb_in"), None,
     "information: against parsing the stored text alone"),
    ("bson_to_json(b) / doc::text", ("medium_bson", "bson_to_json"), ("medium", "text"),
     ("<=", 1.00), "target 2"),
    ("bson_to_json(b, true) / doc::text", ("medium_bson", "bson_to_json_canonical"),
     ("medium", "text"), None, "information: canonical Extended JSON"),
]
NOISE = 0.10

# The published BENCHMARKS.md: its sections (key, heading) in order, and the
# generated blocks in order: a section's heading block (its key) and its
# tables (key.part).  Hand-written text after a block's END marker stays
# after that block.
SECTIONS = [
    ("run", None),
    ("data", "Data"),
    ("method", "Method"),
    ("to_bson", "to_bson (jsonb)"),
    ("json_to_bson", "json_to_bson and Extended JSON"),
    ("row_to_bson", "row_to_bson"),
    ("decode", "Reading BSON back (from_bson, bson_to_json, bson_is_valid, bson_documents)"),
    ("export", "Export (pg_bsonexport)"),
    ("memory", "Memory"),
    ("percall", "Per call"),
    ("parallel", "Parallel scan"),
]
SECTION_TITLE = dict(SECTIONS)
BLOCKS = [
    "run",
    "data", "data.tables",
    "method",
    "to_bson", "to_bson.scans", "to_bson.targets", "to_bson.fastpath", "to_bson.throughput",
    "to_bson.callgrind",
    "json_to_bson", "json_to_bson.scans", "json_to_bson.targets", "json_to_bson.callgrind",
    "row_to_bson", "row_to_bson.scans", "row_to_bson.targets", "row_to_bson.callgrind",
    "decode", "decode.scans", "decode.targets", "decode.callgrind",
    "export",
    "memory", "memory.rss",
    "percall", "percall.tps",
    "parallel", "parallel.scan",
]
MARK_BEGIN = "<!-- BEGIN generated by bench/report.py: %s -->"
MARK_END = "<!-- END generated: %s -->"
MARK_RE = re.compile(r"<!-- BEGIN generated by bench/report\.py: ([\w.]+) -->\n(.*?)\n"
                     r"<!-- END generated: \1 -->", re.S)
# the single generated section of BENCHMARKS.md before the blocks
LEGACY_BEGIN = "<!-- BEGIN generated by bench/run.sh: edits inside are overwritten -->"
LEGACY_END = "<!-- END generated by bench/run.sh -->"



def run_gnuplot(gp, png):
    """Draw png from the script gp; its path, or None (said) if gnuplot failed."""
    try:
        subprocess.run(["gnuplot", gp], check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("report: gnuplot failed: %s %s" % (e, getattr(e, "stderr", "")), file=sys.stderr)
        return None
    return png

def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_meta(path):
    meta = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    meta[k] = v
    return meta


class Stat:
    def __init__(self, xs):
        self.xs = sorted(xs)
        self.n = len(xs)
        self.med = statistics.median(xs) if xs else float("nan")
        self.lo = self.xs[0] if xs else float("nan")
        self.hi = self.xs[-1] if xs else float("nan")

    def fmt(self, digits=1):
        if not self.n:
            return "—"
        return "%.*f [%.*f–%.*f]" % (digits, self.med, digits, self.lo, digits, self.hi)


def ratio(a, b):
    if a is None or b is None or not a.n or not b.n or b.med == 0:
        return None
    return a.med / b.med


def fr(x, digits=2):
    return "—" if x is None else "%.*f" % (digits, x)


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def txt_table(header, rows):
    cells = [header] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines)


class Report:
    def __init__(self, d):
        self.d = d
        self.meta = read_meta(os.path.join(d, "meta.env"))
        self.tables = {(r["db"], r["table"]): r for r in read_csv(os.path.join(d, "tables.csv"))}
        scans = defaultdict(list)
        for r in read_csv(os.path.join(d, "scans.csv")):
            scans[(r["db"], r["table"], r["variant"])].append(float(r["latency_ms"]))
        self.scans = {k: Stat(v) for k, v in scans.items()}
        pc = defaultdict(list)
        for r in read_csv(os.path.join(d, "percall.csv")):
            pc[r["variant"]].append(float(r["tps"]))
        self.percall = {k: Stat(v) for k, v in pc.items()}
        js = defaultdict(list)
        self.js_bytes = {}
        for r in read_csv(os.path.join(d, "jsbson.csv")):
            js[r["table"]].append(float(r["ms"]))
            self.js_bytes[r["table"]] = int(r["bson_bytes"])
        self.js = {k: Stat(v) for k, v in js.items()}
        self.memory = read_csv(os.path.join(d, "memory.csv"))
        self.cg = {(r["db"], r["table"], r["variant"]): r
                   for r in read_csv(os.path.join(d, "callgrind.csv"))}
        self.dbs = [db for db in (DB, DB_L1) if any(k[0] == db for k in self.scans)]
        self.blocks = {}  # block key -> markdown
        self.txt = {}  # block key -> text

    def s(self, db, table, variant):
        return self.scans.get((db, table, variant))

    def provenance(self):
        """the line every table carries: the commit and the exact command"""
        m = self.meta
        return "_Commit %s; command `%s`; run of %s (%s mode)._" % (
            m.get("git", "?"), m.get("command", "?"), m.get("date_utc", "?"), m.get("mode", "?"))

    def section(self, key, title, header, rows, note=None):
        """a table block: title, provenance, table, note"""
        self.blocks[key] = ("### " + title + "\n\n" + self.provenance() + "\n\n" + md_table(header, rows)
                            + ("\n\n" + note if note else ""))
        self.txt[key] = ("== " + title + "\n" + self.provenance().strip("_") + "\n"
                         + txt_table(header, rows) + ("\n" + note if note else ""))

    def heading(self, key, intro):
        """a section's heading block: its title and what it covers"""
        title = SECTION_TITLE[key]
        self.blocks[key] = "## " + title + "\n\n" + intro
        self.txt[key] = "==== " + title + "\n" + intro

    def duration(self):
        """how long the run took, from its own records: meta.env's duration_s
        (bench/run.sh's start to the end of its measurements), else the time
        stamp of run.log's report phase (or its last one); (seconds, source)"""
        if self.meta.get("duration_s", "").isdigit():
            return int(self.meta["duration_s"]), "duration_s in meta.env"
        log = os.path.join(self.d, "run.log")
        if os.path.exists(log):
            stamps = []
            with open(log, errors="replace") as f:
                for line in f:
                    m = re.match(r"== \[(\d+)s\] (.*)", line)
                    if m:
                        stamps.append((int(m.group(1)), m.group(2)))
            report = [t for t, what in stamps if what.startswith("report")]
            if report or stamps:
                return (report or [stamps[-1][0]])[0], "run.log's time stamps"
        return None, None

    @staticmethod
    def fmt_duration(secs):
        return "%d s" % secs if secs < 90 else "%.0f min" % (secs / 60)

    # ------------------------------------------------------------------ parts
    def reps(self, pairs):
        """the most repetitions among the (table, variant) scans given"""
        return max((self.s(DB, t, v).n for t, v in pairs if self.s(DB, t, v)), default=0)

    def ratio_rows(self, ratios, verdict):
        """a row per (label, numerator, denominator, must, note) of a target table"""
        rows = []
        for label, a, b, must, note in ratios:
            sa, sb = self.s(DB, *a), self.s(DB, *b)
            r = ratio(sa, sb)
            rows.append([label, sa.fmt(1) if sa else "—", sb.fmt(1) if sb else "—", fr(r),
                         verdict(r, must), note])
        return rows

    def per_doc(self, table, variant, key="ir_total"):
        """callgrind instructions of one kind per document (or row) of a query"""
        r = self.cg.get((DB, table, variant))
        if not r or not r.get(key):
            return None
        return int(r[key]) / int(r["rows"])

    def per_doc_ratio(self, a, b):
        x, y = self.per_doc(*a), self.per_doc(*b)
        return None if x is None or not y else x / y

    def part_data(self):
        rows = []
        for db in self.dbs:
            for t in TABLES + (X_TABLES + R_TABLES + D_TABLES if db == DB else []):
                r = self.tables.get((db, t))
                if not r:
                    continue
                rows.append([DB_LABEL[db], t, "{:,}".format(int(r["rows"])),
                             "%.1f" % (int(r["heap_bytes"]) / 2**20),
                             "%.1f" % (int(r["toast_bytes"]) / 2**20),
                             r["avg_text_bytes"] or "—", r["avg_stored_bytes"] or "—",
                             r["avg_bson_bytes"] or "—", r["compressed_docs"]])
        if rows:
            # one paragraph per function's tables, those present
            notes = ["small, medium, large and keys (both databases) are to_bson's tables; "
                     "bench/README.md describes every table and its generator."]
            if any(self.tables.get((DB, t)) for t in X_TABLES):
                note = ("json_to_bson and Extended JSON tables (UTF8 only): medium_json = the medium "
                        "documents as `json`, the generator's compact text in its key order; "
                        "medium_ext (`jsonb`) and medium_ext_json (`json`) = the same documents with "
                        "`_id` as `{\"$oid\": …}`, `created` as `{\"$date\": …}` and `big` as "
                        "`{\"$numberLong\": …}`. Their avg BSON B is that of json_to_bson(doc), "
                        "to_bson(doc, true) and json_to_bson(doc, true).")
                chk = self.extjson_check()
                notes.append(note + (" " + chk if chk else ""))
            if any(self.tables.get((DB, t)) for t in R_TABLES):
                note = (
                    "row_to_bson tables (UTF8 only, rows of typed columns instead of a document): "
                    "typed = `id int, n bigint, amount numeric(12,2), name text, email text (5% "
                    "NULL), created timestamptz, uid uuid, active bool, age int, score float8, meta "
                    "jsonb (2–3 keys), tags text[]`; medium_rows = the medium documents as rows, "
                    "one column per top-level field (`_id int` = the row number, `created "
                    "timestamptz`, `balance numeric(12,2)`, `tags text[]`, address, scores, orders "
                    "and prefs as jsonb, prefs NULL where the document has none). For them avg "
                    "doc::text B is row_to_json(t)::text, avg stored B the whole row "
                    "(pg_column_size(t.*)), avg BSON B row_to_bson(t), compressed docs the rows "
                    "with a compressed jsonb column.")
                chk = self.rowbson_check()
                notes.append(note + (" " + chk if chk else ""))
            if any(self.tables.get((DB, t)) for t in D_TABLES):
                note = (
                    "Tables for reading BSON back (UTF8 only, medium's documents row for row): "
                    "medium_bson `(id int, b bytea)` = to_bson(doc), its avg doc::text B the length "
                    "of bson_to_json(b); medium_text `(id int, t text)` = doc::text; medium_stream = "
                    "one row holding the first documents of medium_bson concatenated (a .bson "
                    "file as mongodump writes it), stored uncompressed in TOAST: its rows are "
                    "the documents in the stream, avg stored B and avg BSON B the whole stream.")
                chk = self.decode_check()
                notes.append(note + (" " + chk if chk else ""))
            self.section("data.tables", "The tables: rows, sizes and the checks of the data",
                         ["db", "table", "rows", "heap MiB", "TOAST MiB", "avg doc::text B",
                          "avg stored B", "avg BSON B", "compressed docs"], rows, "\n\n".join(notes))

    def extjson_check(self):
        m = self.meta
        if "ext_rows" not in m:
            return None
        return ("Check: %s of %s medium_ext documents (json copy: %s) have all 3 wrappers as "
                "native ObjectId, UTC datetime and int64 elements; json_to_bson kept the key order "
                "(name before age) in %s of %s medium_json documents; its BSON has the length of "
                "to_bson(doc::jsonb)'s in %s." % (
                    m.get("ext_native"), m.get("ext_rows"), m.get("ext_json_native"),
                    m.get("json_order_kept"), m.get("json_rows"), m.get("json_same_size")))

    def rowbson_check(self):
        m = self.meta
        if "typed_rows" not in m:
            return None
        return ("Check: row_to_bson wrote %s of %s typed rows and %s of %s medium_rows rows with "
                "every checked column as its native BSON type (int32, int64, decimal128, UTC "
                "datetime, binary subtype 4, double, embedded document, array); typed's %s NULL "
                "emails gave %s null elements, and omit_nulls shortened %s documents; "
                "omit_nulls shortened %s medium_rows documents (%s without prefs)." % (
                    m.get("typed_native"), m.get("typed_rows"), m.get("mrows_native"),
                    m.get("mrows_rows"), m.get("typed_null_email"), m.get("typed_null_elements"),
                    m.get("typed_omitted"), m.get("mrows_omitted"), m.get("mrows_null_prefs")))

    def decode_check(self):
        m = self.meta
        if "dec_rows" not in m:
            return None
        return ("Check: bson_is_valid accepted %s of %s medium_bson documents; bson_documents "
                "split the stream into %s documents (%s put in) and %s bytes (of %s); for "
                "information, from_bson(b) = doc for %s documents, bson_to_json(b)::jsonb = doc "
                "for %s (a number that went through a BSON double may come back with other "
                "digits)." % (
                    m.get("dec_valid"), m.get("dec_rows"), m.get("stream_rows"),
                    m.get("stream_docs"), m.get("stream_rows_bytes"), m.get("stream_bytes"),
                    m.get("dec_jsonb_same"), m.get("dec_json_same")))

    def part_scans(self):
        rows = []
        for db in self.dbs:
            for t in TABLES:
                if not self.s(db, t, "text"):
                    continue
                row = [DB_LABEL[db], t]
                for v, _ in VARIANTS:
                    st = self.s(db, t, v)
                    row.append(st.fmt(1) if st else "—")
                js = self.js.get(t) if db == DB else None
                row.append(js.fmt(1) if js else "—")
                rows.append(row)
        n = max((st.n for st in self.scans.values()), default=0)
        self.section("to_bson.scans",
                     "to_bson: full-table scans, ms per scan, median [min–max] of %d interleaved "
                     "repetitions" % n,
                     ["db", "table", "base", "text", "to_bson", "to_bson fast off",
                      "js-bson serialize (Node)"], rows,
                     "base = `sum(octet_length(jsonb_typeof(doc)))` (detoast only); text = "
                     "`doc::text`; to_bson = `to_bson(doc)`; js-bson = `BSON.serialize` of the same "
                     "documents, already parsed, one core, no database.")

    def part_ratios(self):
        rows = []
        for db in self.dbs:
            for t in TABLES:
                text, base = self.s(db, t, "text"), self.s(db, t, "base")
                on, off = self.s(db, t, "bson"), self.s(db, t, "bson_nofast")
                if not text:
                    continue
                rt, rb, rf = ratio(on, text), ratio(on, base), ratio(off, on)
                js = ratio(self.js.get(t), text) if db == DB else None
                must = aim = baim = None
                if db == DB:
                    must, aim, baim = TARGETS[t]
                rows.append([
                    DB_LABEL[db], t, fr(rt),
                    self.verdict(rt, must, "met", "NOT MET"),
                    self.verdict(rt, aim, "reached", "not reached"),
                    fr(rb), self.verdict(rb, baim, "reached", "not reached"),
                    fr(rf), fr(js), fr(ratio(text, base))])
        self.section("to_bson.targets", "to_bson: ratios of medians and its targets",
                     ["db", "table", "to_bson/text", "must", "aim", "to_bson/base", "aim",
                      "fast off/on", "js-bson/text", "text/base"], rows,
                     "Targets (UTF8 database): to_bson/text must be ≤ 0.45 (small ≤ 0.5), aim ≤ 0.3; "
                     "to_bson/base aim ≤ 2.8 on medium, ≤ 1.5 on small and large. fast off/on > 1 "
                     "means the fast path saves time. Differences under 10% are noise. base detoasts "
                     "nothing on medium and keys (stored inline, uncompressed, over 127 bytes), so "
                     "there it is the scan alone and to_bson/base is large; small's base copies the "
                     "short-header datum, large's fetches and decompresses it.")

    @staticmethod
    def verdict(x, limit, yes, no):
        if limit is None:
            return "—"
        if x is None:
            return "≤ %.2f: no data" % limit
        return "≤ %.2f: %s" % (limit, yes if x <= limit else no)

    def part_fastpath(self):
        rows = []
        for db in self.dbs:
            for t in TABLES:
                on, off = self.s(db, t, "bson"), self.s(db, t, "bson_nofast")
                if not on or not off:
                    continue
                gain = 1 - on.med / off.med
                cg_on, cg_off = self.cg.get((db, t, "bson")), self.cg.get((db, t, "bson_nofast"))
                ig = None
                if cg_on and cg_off and int(cg_off["ir_total"]):
                    ig = 1 - int(cg_on["ir_total"]) / int(cg_off["ir_total"])
                if gain >= NOISE:
                    word = "pays"
                elif gain <= -NOISE:
                    word = "costs"
                else:
                    word = "within noise"
                rows.append([DB_LABEL[db], t, "%.1f" % off.med, "%.1f" % on.med,
                             "%+.1f%%" % (100 * gain), "—" if ig is None else "%+.1f%%" % (100 * ig),
                             word])
        if rows:
            self.section("to_bson.fastpath", "to_bson: the ASCII fast path (bson_out.ascii_fast_path)",
                         ["db", "table", "off ms", "on ms", "time saved", "instructions saved",
                          "verdict (10% noise)"], rows)

    def part_parallel(self):
        p0, p2 = self.s(DB, "medium", "par0"), self.s(DB, "medium", "par2")
        if not p0 or not p2:
            return
        launched = self.meta.get("parallel_workers_launched", "?")
        self.section("parallel.scan", "Parallel scan, medium, to_bson (PARALLEL SAFE)",
                     ["workers", "ms per scan", "speed-up"],
                     [["0", p0.fmt(1), "1.00"], ["2", p2.fmt(1), fr(ratio(p0, p2))]],
                     "The plan with 2 workers was checked with EXPLAIN ANALYZE (Workers Launched: %s; "
                     "parallel_explain.txt). The machine has %s cores; the leader also scans."
                     % (launched, self.meta.get("nproc", "?")))

    def part_percall(self):
        b, t = self.percall.get("bson"), self.percall.get("text")
        if not b or not t:
            return
        r = ratio(b, t)
        rows = [["SELECT to_bson(doc) FROM medium WHERE id = :id", b.fmt(0), fr(r)],
                ["SELECT doc::text FROM medium WHERE id = :id", t.fmt(0), "1.00"]]
        bl, tl = self.percall.get("bson_len"), self.percall.get("text_len")
        if bl and tl:
            rows += [["SELECT octet_length(to_bson(doc)) FROM medium WHERE id = :id", bl.fmt(0),
                      fr(ratio(bl, tl))],
                     ["SELECT octet_length(doc::text) FROM medium WHERE id = :id", tl.fmt(0), "1.00"]]
        self.section("percall.tps", "Per call: `pgbench -M prepared -c 1`, one medium document by id, TPS",
                     ["query", "TPS median [min–max]", "to_bson/text"], rows,
                     "Target: to_bson TPS ≥ %d%% of doc::text TPS: %s. pgbench reads results as "
                     "text, so to_bson's bytea goes out hex-encoded (twice its size); the "
                     "octet_length pair, for information, leaves the output format out." % (
                         PERCALL_MUST * 100,
                         "no data" if r is None else ("met" if r >= PERCALL_MUST else "NOT MET")))

    def part_throughput(self):
        rows = []
        for t in TABLES:
            tb = self.tables.get((DB, t))
            on = self.s(DB, t, "bson")
            js = self.js.get(t)
            if not tb:
                continue
            mb = int(tb["total_bson_bytes"]) / 1e6
            row = [t, "%.1f" % mb]
            row.append("%.0f" % (mb / (on.med / 1e3)) if on else "—")
            if js:
                jmb = self.js_bytes[t] / 1e6
                row += ["%.1f" % jmb, "%.0f" % (jmb / (js.med / 1e3))]
            else:
                row += ["—", "—"]
            row.append(fr(ratio(js, on)) if js and on else "—")
            rows.append(row)
        if rows:
            self.section("to_bson.throughput", "to_bson: BSON produced per second on one core (medians)",
                         ["table", "to_bson MB", "to_bson MB/s (scan incl.)", "js-bson MB",
                          "js-bson MB/s (serialize only)", "js-bson time / to_bson time"], rows,
                         "to_bson's figure includes the table scan and detoasting; js-bson's covers "
                         "serialize alone on already parsed objects (JSON numbers become doubles, so "
                         "its output differs by a few bytes a document).")

    def part_json(self):
        if not any(self.s(DB, t, v) for t, v, _ in X_VARIANTS):
            return
        n = self.reps((t, v) for t, v, _ in X_VARIANTS)
        rows = []
        for t, v, label in X_VARIANTS:
            st = self.s(DB, t, v)
            tb = self.tables.get((DB, t))
            rows.append([t, "`%s`" % label, st.fmt(1) if st else "—",
                         tb["avg_text_bytes"] if tb else "—"])
        self.section("json_to_bson.scans",
                     "json_to_bson and Extended JSON: ms per scan, median [min–max] of %d "
                     "repetitions, interleaved with all the other scans" % n,
                     ["table", "query `SELECT sum(octet_length(…)) FROM table`", "ms per scan",
                      "avg doc::text B"], rows)
        rows = self.ratio_rows(X_RATIOS, self.verdict_noise)
        self.section("json_to_bson.targets", "json_to_bson and Extended JSON: ratios of medians and their targets",
                     ["ratio", "numerator ms", "denominator ms", "ratio", "must", "what"], rows,
                     "Targets: json_to_bson(doc) on medium_json ≤ 0.5 × to_bson(doc::jsonb) on "
                     "the same json table (the cast included: what a user has without "
                     "json_to_bson); to_bson(doc, true) ≤ 1.3 × to_bson(doc) on medium_ext (3 "
                     "wrappers a document; to_bson(doc) writes them as plain sub-documents). "
                     "Verdicts from the medians, as for to_bson; a ratio within 10% of its limit is "
                     "marked, since differences under 10% are noise. json's doc::text is a "
                     "binary cast and octet_length reads the length word: that scan does no work "
                     "on the document.")

    def verdict_noise(self, x, limit):
        v = self.verdict(x, limit, "met", "NOT MET")
        if limit is not None and x is not None and abs(x / limit - 1) < NOISE:
            v += " (within 10% of the limit)"
        return v

    def part_json_callgrind(self):
        specs = [("medium_json", "json_bson"), ("medium_json", "json_bson_nofast"),
                 ("medium_json", "cast_bson"), ("medium_ext", "bson"), ("medium_ext", "bson_ext"),
                 ("medium_ext_json", "json_bson_ext")]
        if not any(self.cg.get((DB, t, v)) for t, v in specs):
            return

        per = self.per_doc
        rows = []
        for t, v in specs:
            r = self.cg.get((DB, t, v))
            if not r:
                continue
            tot, det, cast = per(t, v), per(t, v, "ir_detoast"), per(t, v, "ir_cast")
            rows.append([t, "`%s`" % X_LABEL[(t, v)], "{:,}".format(int(r["rows"])), fr(tot, 0),
                         fr(det, 0), fr(None if tot is None or det is None else tot - det, 0),
                         fr(cast, 0)])

        r1 = self.per_doc_ratio(("medium_json", "json_bson"), ("medium_json", "cast_bson"))
        r1b = None
        cb, cc = per("medium_json", "cast_bson"), per("medium_json", "cast_bson", "ir_cast")
        jb = per("medium_json", "json_bson")
        if cb is not None and cc is not None and jb is not None and cb - cc:
            r1b = jb / (cb - cc)
        r2 = self.per_doc_ratio(("medium_ext", "bson_ext"), ("medium_ext", "bson"))
        self.section("json_to_bson.callgrind",
                     "json_to_bson and Extended JSON: instructions per document (callgrind, "
                     "deterministic)",
                     ["table", "query", "docs", "instructions/doc", "of which detoast",
                      "w/o detoast", "of which the cast (json_out + jsonb_in)"], rows,
                     "C symbols: json_to_bson → `json_to_bson`, to_bson(doc, true) → "
                     "`to_bson_jsonb_ext`, to_bson(doc) → `to_bson_jsonb` (from pg_proc.prosrc); "
                     "to_bson(doc::jsonb) counts `json_out`, `jsonb_in` and `to_bson_jsonb`. "
                     "Ratios: json_to_bson / to_bson(doc::jsonb) = %s (target 1 in time: ≤ 0.50); "
                     "json_to_bson / to_bson_jsonb's part of it (the jsonb already parsed, the "
                     "cast left out) = %s; to_bson(doc, true) / to_bson(doc) = %s (target 2 in "
                     "time: ≤ 1.30)." % (fr(r1), fr(r1b), fr(r2)))

    @staticmethod
    def verdict_op(x, must):
        """must = (op, limit), op "<=" or "<"; a ratio within 10% of the limit is marked."""
        if must is None:
            return "—"
        op, limit = must
        sign = "≤" if op == "<=" else "<"
        if x is None:
            return "%s %.2f: no data" % (sign, limit)
        ok = x <= limit if op == "<=" else x < limit
        v = "%s %.2f: %s" % (sign, limit, "met" if ok else "NOT MET")
        if abs(x / limit - 1) < NOISE:
            v += " (within 10% of the limit)"
        return v

    def part_row(self):
        if not any(self.s(DB, t, v) for t, v, _ in R_VARIANTS):
            return
        n = self.reps((t, v) for t, v, _ in R_VARIANTS)
        rows = []
        for t, v, label in R_VARIANTS:
            st = self.s(DB, t, v)
            rows.append([t, "`%s`" % label, st.fmt(1) if st else "—"])
        self.section("row_to_bson.scans",
                     "row_to_bson: ms per scan, median [min–max] of %d repetitions, "
                     "interleaved with all the other scans" % n,
                     ["table", "query `SELECT sum(octet_length(…)) FROM table t`", "ms per scan"],
                     rows)
        rows = self.ratio_rows(R_RATIOS, self.verdict_op)
        self.section("row_to_bson.targets", "row_to_bson: ratios of medians and its targets",
                     ["ratio", "numerator ms", "denominator ms", "ratio", "must", "what"], rows,
                     "Targets, on typed and on medium_rows: row_to_bson(t) ≤ 0.5 × "
                     "row_to_json(t)::text (the row as JSON text, the reference), and faster than "
                     "to_bson(to_jsonb(t)) (the row as BSON without row_to_bson; it writes "
                     "timestamps and uuids as strings and numerics as int or double, where "
                     "row_to_bson writes native datetime, binary and decimal128). Verdicts from "
                     "the medians; a ratio within 10% of its limit is marked, since differences "
                     "under 10% are noise. Every query also pays the scan and the executor's "
                     "whole-row value (a copy of the row).")

    def part_row_callgrind(self):
        specs = [(t, v) for t, v, _ in R_VARIANTS]
        if not any(self.cg.get((DB, t, v)) for t, v in specs):
            return

        per = self.per_doc
        rows = []
        for t, v in specs:
            r = self.cg.get((DB, t, v))
            if not r:
                continue
            tot, det, part = per(t, v), per(t, v, "ir_detoast"), per(t, v, "ir_cast")
            ref = per(t, "row_json")
            rows.append([t, "`%s`" % R_LABEL[(t, v)], "{:,}".format(int(r["rows"])), fr(tot, 0),
                         fr(det, 0), fr(part, 0),
                         fr(None if tot is None or not ref else tot / ref)])
        notes = []
        for t in R_TABLES:
            b, j, jb = per(t, "row_bson"), per(t, "row_json"), per(t, "row_jsonb_bson")
            if b is None:
                continue
            notes.append("%s: row_to_bson / row_to_json = %s, row_to_bson / to_bson(to_jsonb(t)) "
                         "= %s" % (t, fr(b / j if j else None), fr(b / jb if jb else None)))
        self.section("row_to_bson.callgrind", "row_to_bson: instructions per row (callgrind, deterministic)",
                     ["table", "query", "rows", "instructions/row", "of which detoast",
                      "of which to_jsonb", "/ row_to_json"], rows,
                     "C symbols: row_to_bson → `%s` (from pg_proc.prosrc), row_to_json → "
                     "`row_to_json`, to_bson(to_jsonb(t)) → `to_jsonb` + `to_bson_jsonb`; query "
                     "`SELECT sum(octet_length(f(t))) FROM table t WHERE key <= N`. The executor's "
                     "whole-row value is built outside them and not counted. %s." % (
                         self.meta.get("sym_row", "row_to_bson"), "; ".join(notes) or "no data"))

    def docs(self, table):
        """documents in a table (for medium_stream: in its one stream), from tables.csv"""
        tb = self.tables.get((DB, table))
        return int(tb["rows"]) if tb and tb.get("rows") else None

    def part_decode(self):
        own = [(t, v) for t, v, _ in D_VARIANTS if (t, v) != ("medium", "text")]
        if not any(self.s(DB, t, v) for t, v in own):
            return
        n = self.reps(own)
        rows = []
        for t, v, query in D_VARIANTS:
            st, nd = self.s(DB, t, v), self.docs(t)
            rows.append([t, "`%s`" % query, st.fmt(1) if st else "—",
                         "{:,}".format(nd) if nd else "—",
                         fr(st.med * 1000 / nd if st and nd else None, 2)])
        self.section("decode.scans",
                     "Reading BSON back: ms per scan, median [min–max] of %d repetitions, "
                     "interleaved with all the other scans" % n,
                     ["table", "query", "ms per scan", "documents", "µs per document"], rows,
                     "doc::text on medium is the text variant of to_bson's scans. µs per document "
                     "= median ms per scan / documents; for bson_documents, the documents of the "
                     "one stream.")
        rows = self.ratio_rows(D_RATIOS, self.verdict_op)
        self.section("decode.targets", "Reading BSON back: ratios of medians and the targets",
                     ["ratio", "numerator ms", "denominator ms", "ratio", "must", "what"], rows,
                     "Targets, on the medium documents: from_bson(b) ≤ 1.0 × doc::text::jsonb, and "
                     "bson_to_json(b) ≤ 1.0 × doc::text. What the denominators do: "
                     "doc::text::jsonb (on medium, from_bson's reference) prints every stored "
                     "jsonb as text (jsonb_out, textin) and parses that text back (textout, "
                     "jsonb_in): a text output and a parse; t::jsonb (on medium_text, the same "
                     "text stored) is the parse alone (textout is a copy), the stricter "
                     "reference, for information; doc::text (on medium) is jsonb's own text "
                     "output (jsonb_out, then textin's copy), the text that bson_to_json's JSON "
                     "is set against. Every result is consumed through its length word only "
                     "(pg_column_size of a jsonb, octet_length of a text; json → text is a "
                     "binary cast), the same for numerator and denominator, so each query costs "
                     "the scan and the function. medium_bson's and medium_text's rows are a "
                     "little shorter than medium's (see Data). Verdicts from the medians; a "
                     "ratio within 10% of its limit is marked, since differences under 10% are "
                     "noise. bson_is_valid and bson_documents have no target: bson_documents' "
                     "figure covers reading the one-row stream table, the stream's detoast (a "
                     "copy of its TOAST chunks), the validation of every document and a bytea "
                     "row per document in the function scan's tuplestore.")

    def part_decode_callgrind(self):
        specs = [(t, v) for t, v, _ in D_VARIANTS]
        if not any(self.cg.get((DB, t, v)) for t, v in specs if v != "text"):
            return

        per = self.per_doc
        refs = {"text_jsonb": ("medium", "text_jsonb"), "jsonb_in": ("medium", "text_jsonb"),
                "from_bson": ("medium", "text_jsonb"), "text": ("medium", "text"),
                "bson_to_json": ("medium", "text"), "bson_to_json_canonical": ("medium", "text")}
        rows = []
        for t, v in specs:
            r = self.cg.get((DB, t, v))
            if not r:
                continue
            tot, det, part = per(t, v), per(t, v, "ir_detoast"), per(t, v, "ir_cast")
            ref = per(*refs[v]) if v in refs else None
            rows.append([t, "`%s`" % D_LABEL[(t, v)], "{:,}".format(int(r["rows"])), fr(tot, 0),
                         fr(det, 0), fr(part, 0),
                         "%s: %s" % (D_LABEL[refs[v]], fr(tot / ref if tot is not None and ref else None))
                         if v in refs else "—"])

        self.section("decode.callgrind",
                     "Reading BSON back: instructions per document (callgrind, deterministic)",
                     ["table", "query", "docs", "instructions/doc", "of which detoast",
                      "of which doc::text (jsonb_out + textin)", "ratio to the reference"], rows,
                     "C symbols (from pg_proc.prosrc): %s. doc::text::jsonb counts `jsonb_out`, "
                     "`textin`, `textout` and `jsonb_in`; t::jsonb `textout` and `jsonb_in`; "
                     "doc::text `jsonb_out` and `textin`. Same queries as the scans, `WHERE id <= "
                     "N`; bson_documents over the whole stream (its first call detoasts it). "
                     "from_bson / t::jsonb = %s (information)." % (
                         ", ".join("`%s`" % x for x in self.meta.get("sym_decode", "").split())
                         or "?", fr(self.per_doc_ratio(("medium_bson", "from_bson"), ("medium_text", "jsonb_in")))))

    def part_memory(self):
        if not self.memory:
            return
        rows = []
        by = defaultdict(dict)
        for r in self.memory:
            by[r["variant"]][int(r["rows"])] = r
        verdicts = []
        for variant, d in by.items():
            ns = sorted(d)
            for n in ns:
                r = d[n]
                rows.append([variant, "{:,}".format(n), r["rss_anon_before_kb"], r["rss_anon_peak_kb"],
                             r["rss_anon_growth_kb"], r["vm_hwm_after_kb"], r["query_ms"]])
            if len(ns) >= 2:
                g1, g2 = int(d[ns[0]]["rss_anon_growth_kb"]), int(d[ns[-1]]["rss_anon_growth_kb"])
                flat = g2 <= g1 + max(1024, g1 // 10)
                verdicts.append("%s: +%d kB at %s rows vs +%d kB at %s rows: %s" % (
                    variant, g1, "{:,}".format(ns[0]), g2, "{:,}".format(ns[-1]),
                    "does not grow" if flat else "GROWS"))
        self.section("memory.rss", "Backend memory during a full medium scan",
                     ["query", "rows", "private RSS before kB", "peak kB", "growth kB",
                      "VmHWM kB", "ms"], rows,
                     "Private RSS = RssAnon of the backend, sampled every 2 ms during the query "
                     "(VmHWM also counts the shared buffers the scan touches, so it grows with "
                     "any table). Target: no growth with the row count. " + "; ".join(verdicts) + ".")

    def part_callgrind(self):
        if not self.cg:
            return
        rows = []
        for db in (DB, DB_L1):
            for t in TABLES:
                on = self.cg.get((db, t, "bson"))
                if not on:
                    continue
                n = int(on["rows"])

                def per(v, key="ir_total"):
                    r = self.cg.get((db, t, v))
                    return None if not r else int(r[key]) / int(r["rows"])
                tot, det = per("bson"), per("bson", "ir_detoast")
                text = per("text")
                rows.append([DB_LABEL[db], t, "{:,}".format(n), "%.0f" % tot, "%.0f" % det,
                             "%.0f" % (tot - det), fr(per("bson_nofast"), 0), fr(text, 0),
                             fr(per("base"), 0), fr(tot / text if text else None)])
        self.section("to_bson.callgrind", "to_bson: instructions per document (callgrind, deterministic)",
                     ["db", "table", "docs", "to_bson", "of which detoast", "to_bson w/o detoast",
                      "to_bson fast off", "doc::text", "base", "to_bson/text"], rows,
                     "Counted with `valgrind --tool=callgrind --toggle-collect=<function>` on a "
                     "single-user backend (`postgres --single`) running "
                     "`SELECT sum(octet_length(f(doc))) FROM (SELECT doc FROM t WHERE id <= N) s`: "
                     "inclusive instructions of to_bson's C function (doc::text: jsonb_out + textin; "
                     "base: jsonb_typeof), divided by N. Detoast = the fmgr detoast calls inside. "
                     "Per-function profiles: callgrind/*.txt.")

    # ------------------------------------------------------------------ chart
    def chart(self):
        groups = []
        for db in self.dbs:
            for t in TABLES:
                text = self.s(db, t, "text")
                if text:
                    groups.append((db, t, text))
        if not groups:
            return None
        dat = os.path.join(self.d, "chart.dat")
        with open(dat, "w") as f:
            f.write("# group, then median/min/max relative to doc::text median for: "
                    "base text to_bson to_bson_fastoff js-bson\n")
            for db, t, text in groups:
                label = t if db == DB else t + "\\nLATIN1"
                cols = []
                for v, _ in VARIANTS:
                    st = self.s(db, t, v)
                    cols += [st.med / text.med, st.lo / text.med, st.hi / text.med] if st else ["NaN"] * 3
                js = self.js.get(t) if db == DB else None
                cols += [js.med / text.med, js.lo / text.med, js.hi / text.med] if js else ["NaN"] * 3
                f.write('"%s" %s\n' % (label, " ".join(
                    c if isinstance(c, str) else "%.4f" % c for c in cols)))
        png = os.path.join(self.d, "chart.png")
        nb = 5
        n = max((st.n for st in self.scans.values()), default=0)
        title = ("bson_out: full-table scan time relative to doc::text (median of %d, bars min–max; "
                 "labels: to_bson/text)" % n)
        sub = "%s, %s cores, PostgreSQL %s, %s; commit %s, %s" % (
            self.meta.get("cpu", "?"), self.meta.get("nproc", "?"),
            self.meta.get("postgres", "").split()[-1] if self.meta.get("postgres") else "?",
            self.meta.get("date_utc", ""), self.meta.get("git", "?"), self.meta.get("command", "?"))
        # x position of the to_bson bar (index 2 of nb) inside each cluster
        off = (2 - (nb - 1) / 2) / (nb + 1)
        gp = os.path.join(self.d, "chart.gp")
        # the panels below to_bson's scans: json_to_bson's, row_to_bson's and
        # reading BSON back's, those with data; the scans get 700 pixels, each
        # panel below 400
        extra = [p for p in (self.chart_json(), self.chart_row(), self.chart_decode()) if p]
        top, below = 700, 400
        height = top + below * len(extra)
        with open(gp, "w") as f:
            if extra:
                f.write("""set terminal pngcairo size 1400,%d font "sans,10" noenhanced
set output '%s'
set multiplot
set origin 0, %.4f
set size 1, %.4f
""" % (height, png, below * len(extra) / height, top / height))
            else:
                f.write("""set terminal pngcairo size 1400,700 font "sans,10" noenhanced
set output '%s'
""" % png)
            f.write("""set title "%(title)s\\n%(sub)s"
set datafile missing "NaN"
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key inside top right vertical opaque
set bmargin 4
set grid ytics
set yrange [0:*]
set ylabel "time / time of doc::text"
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "#555555"
plot '%(dat)s' using 2:3:4:xtic(1) title "base (detoast only)" lc rgb "#9e9e9e", \\
     '' using 5:6:7 title "doc::text" lc rgb "#5b7fbf", \\
     '' using 8:9:10 title "to_bson" lc rgb "#2e9e4f", \\
     '' using 11:12:13 title "to_bson, fast path off" lc rgb "#a6d96a", \\
     '' using 14:15:16 title "js-bson serialize (Node.js)" lc rgb "#e08a3c", \\
     '' using ($0 + %(off)f):($10):(sprintf("%%.2f", $8)) with labels offset 0,0.7 font ",9" notitle
""" % {"title": title, "sub": sub, "dat": dat, "off": off})
            for i, panel in enumerate(extra):
                f.write(panel % {"origin": below * (len(extra) - 1 - i) / height,
                                 "size": below / height})
            if extra:
                f.write("unset multiplot\n")
        return run_gnuplot(gp, png)

    def chart_json(self):
        """gnuplot commands for the json_to_bson and Extended JSON panel (None without its data):
        every bar relative to its target's reference, the must limits drawn."""
        groups = [  # (reference, bars, limit, group title)
            (("medium_json", "cast_bson"),
             [("medium_json", "text"), ("medium_json", "json_bson"),
              ("medium_json", "json_bson_nofast"), ("medium_json", "cast_bson")],
             0.50, "medium_json (json): relative to to_bson(doc::jsonb)"),
            (("medium_ext", "bson"),
             [("medium_ext", "bson"), ("medium_ext", "bson_ext"), ("medium_ext_json", "json_bson_ext")],
             1.30, "medium_ext (3 wrappers a document): relative to to_bson(doc)"),
        ]
        colors = {"text": 0x5b7fbf, "json_bson": 0x2e9e4f, "json_bson_nofast": 0xa6d96a,
                  "cast_bson": 0x9e9e9e, "bson": 0x9e9e9e, "bson_ext": 0x2e9e4f,
                  "json_bson_ext": 0x8fbc8f}
        names = {("medium_json", "text"): "doc::text (json)",
                 ("medium_json", "json_bson"): "json_to_bson(doc)",
                 ("medium_json", "json_bson_nofast"): "json_to_bson(doc)\\nfast path off",
                 ("medium_json", "cast_bson"): "to_bson(doc::jsonb)",
                 ("medium_ext", "bson"): "to_bson(doc)",
                 ("medium_ext", "bson_ext"): "to_bson(doc, true)",
                 ("medium_ext_json", "json_bson_ext"): "json_to_bson(doc, true)\\n(json copy)"}
        return self.chart_panel(
            groups, colors, names, "chart_json.dat",
            "json_to_bson and Extended JSON: scan time relative to each target's "
            "reference (median, bars min-max; labels: the ratio)")

    def chart_row(self):
        """gnuplot commands for the row_to_bson panel (None without its data)."""
        # the limit's label at the right end, over row_to_bson's bar (the
        # reference's bar, at 1, would hide it on the left)
        groups = [((t, "row_json"),
                   [(t, "row_json"), (t, "row_jsonb_bson"), (t, "row_bson")],
                   0.50, "%s: relative to row_to_json(t)::text" % t, "right") for t in R_TABLES]
        colors = {"row_json": 0x5b7fbf, "row_jsonb_bson": 0x9e9e9e, "row_bson": 0x2e9e4f}
        names = {(t, v): label for t, v, label in R_VARIANTS}
        return self.chart_panel(
            groups, colors, names, "chart_row.dat",
            "row_to_bson: scan time relative to row_to_json(t)::text (median, bars "
            "min-max; labels: the ratio; the target also asks row_to_bson < to_bson(to_jsonb(t)))")

    def chart_decode(self):
        """gnuplot commands for the reading-BSON-back panel (None without its data)."""
        if not self.s(DB, "medium_bson", "from_bson") and not self.s(DB, "medium_bson", "bson_to_json"):
            return None
        groups = [
            (("medium", "text_jsonb"),
             [("medium", "text_jsonb"), ("medium_text", "jsonb_in"), ("medium_bson", "from_bson")],
             1.00, "from_bson: relative to doc::text::jsonb (must <= 1.00)", "none"),
            (("medium", "text"),
             [("medium", "text"), ("medium_bson", "bson_to_json"),
              ("medium_bson", "bson_to_json_canonical")],
             1.00, "bson_to_json(b): relative to doc::text (must <= 1.00)", "none"),
        ]
        colors = {"text_jsonb": 0x5b7fbf, "jsonb_in": 0x9e9e9e, "from_bson": 0x2e9e4f,
                  "text": 0x5b7fbf, "bson_to_json": 0x2e9e4f, "bson_to_json_canonical": 0xa6d96a}
        names = dict(D_LABEL)
        names[("medium_text", "jsonb_in")] = "t::jsonb\\n(stored text)"
        names[("medium_bson", "bson_to_json_canonical")] = "bson_to_json(b, true)\\n(canonical, information)"
        return self.chart_panel(
            groups, colors, names, "chart_decode.dat",
            "Reading BSON back, on the medium documents: scan time relative to each target's "
            "reference (median, bars min-max; labels: the ratio)")

    def chart_panel(self, groups, colors, names, datname, title):
        """gnuplot commands for one panel below the scans (None without data):
        every bar relative to its group's reference, the must limits drawn.
        A group: (reference, bars, limit, title[, "right": the limit's label
        at the right end; "none": no label, the title names the limit]).  The text has %(origin)s and %(size)s left for
        chart() to fill in."""
        lines, cmds, x, any_data, ymax = [], [], 0, False, 1.0
        for ref, bars, limit, gtitle, *side in groups:
            r = self.s(DB, *ref)
            x0 = x
            for key in bars:
                st = self.s(DB, *key)
                if st and r:
                    any_data = True
                    ymax = max(ymax, st.hi / r.med)
                    lines.append('%d %.4f %.4f %.4f %d "%s"' % (
                        x, st.med / r.med, st.lo / r.med, st.hi / r.med, colors[key[1]], names[key]))
                else:
                    lines.append('%d NaN NaN NaN 0 "%s"' % (x, names[key]))
                x += 1
            x1 = x - 1
            ymax = max(ymax, limit)
            cmds.append("set arrow from first %.1f, first %.2f to first %.1f, first %.2f nohead "
                        "lw 2 lc rgb '#c0392b'" % (x0 - 0.5, limit, x1 + 0.5, limit))
            if side == ["none"]:
                pass  # the group's title names the limit
            elif side == ["right"]:
                cmds.append("set label 'must <= %.2f' at first %.1f, first %.2f right offset -0.5,0.6 "
                            "front tc rgb '#c0392b'" % (limit, x1 + 0.45, limit))
            else:
                cmds.append("set label 'must <= %.2f' at first %.1f, first %.2f left offset 0.5,0.6 "
                            "tc rgb '#c0392b'" % (limit, x0 - 0.45, limit))
            cmds.append("set arrow from first %.1f, first 1 to first %.1f, first 1 nohead dt 2 "
                        "lc rgb '#555555'" % (x0 - 0.5, x1 + 0.5))
            cmds.append("set label '%s' at first %.1f, graph 0.95 center font ',11'"
                        % (gtitle, (x0 + x1) / 2))
            x += 1  # a gap between the groups
        if not any_data:
            return None
        dat = os.path.join(self.d, datname)
        with open(dat, "w") as f:
            f.write("# x, median/min/max relative to the group's reference median, colour, label\n")
            f.write("\n".join(lines) + "\n")
        return ("""unset arrow
unset label
unset key
set origin 0, %%(origin).4f
set size 1, %%(size).4f
set title "%(title)s"
set style data boxerrorbars
set style fill solid 0.85 border -1
set xrange [-0.7:%(xmax).1f]
set yrange [0:%(ymax).2f]
set ytics auto
set ylabel "time / time of the reference"
set xtics scale 0
%(cmds)s
plot '%(dat)s' using 1:2:3:4:(0.8):5:xtic(6) with boxerrorbars lc rgb variable notitle, \\
     '' using 1:4:(sprintf("%%%%.2f", $2)) with labels offset 0,0.7 font ",9" notitle
""" % {"title": title, "xmax": x - 1 - 0.3, "ymax": ymax * 1.25,
       "cmds": "\n".join(cmds), "dat": dat})

    # ------------------------------------------------------------------ output
    def part_run(self, chart_link, results_link):
        """the run block: how to rerun, the run, the chart"""
        m = self.meta
        secs, source = self.duration()
        took = "%s (%s)" % (self.fmt_duration(secs), source) if secs is not None else "not recorded"
        lines = [
            "Rerun with `./bench/run.sh` (a full run; how long one takes is the duration below) or "
            "`./bench/run.sh --quick` (a try-out, not published); bench/README.md says what each "
            "figure measures. bench/report.py writes the blocks between the `generated` markers; "
            "every table says the commit and the command that produced it. The text after a "
            "block is written by hand and names where its figures come from.",
            "",
            "## The run: %s (%s mode)" % (m.get("date_utc", "?"), m.get("mode", "?")),
            "",
            "- Command: `%s` (%s repetitions, scale %s, %s s per scan repetition, %s s per per-call "
            "repetition)" % (m.get("command", "?"), m.get("reps", "?"), m.get("scale", "?"),
                             m.get("rep_secs", "?"), m.get("call_secs", "?")),
            "- Code: commit %s; Node.js %s, js-bson %s" % (m.get("git", "?"), m.get("node", "?"),
                                                          m.get("jsbson", "?") or "none"),
            "- Duration: %s" % took,
            "- Machine: %s, %s cores, %s memory; %s" % (m.get("cpu", "?"), m.get("nproc", "?"),
                                                        m.get("mem", "?"), m.get("os", "?")),
            "- %s; server settings: `%s`" % (m.get("postgres", "?"), m.get("cluster_opts", "")),
            "- Load average before / after: %s / %s" % (m.get("loadavg_start", "?"),
                                                       m.get("loadavg_end", "?")),
        ]
        if m.get("fake_extension") == "1":
            lines.append("- **BENCH_FAKE_EXTENSION=1: to_bson was a SQL stand-in; these figures mean nothing.**")
        if results_link:
            lines.append("- Raw data: `%s` on the machine that ran it (results directories are not "
                         "committed); the generated blocks are its `summary.md`" % results_link)
        if chart_link:
            lines += ["", "![scan time relative to doc::text, then each function's targets](%s)"
                      % chart_link]
        self.blocks["run"] = "\n".join(lines)
        self.txt["run"] = "\n".join(l for l in lines[2:] if not l.startswith("!["))

    def part_headings(self):
        """every section's heading block, with what it covers and its targets"""
        m = self.meta
        self.heading("data", "Generated by bench/gen_data.py and bench/run.sh, the same on every "
                     "run and every machine (fixed seeds); prewarmed into shared buffers before "
                     "anything is timed.")
        self.heading("to_bson", "`to_bson(doc)` on four jsonb tables (small, medium, large, keys) "
                     "in a UTF8 and a LATIN1 database, against jsonb's own text output "
                     "(`doc::text`) and a detoast-only floor (`base`), with js-bson's "
                     "`BSON.serialize` in Node.js as an outside reference. Targets (UTF8 database): "
                     "to_bson/text must be ≤ 0.45 (small ≤ 0.5), aim ≤ 0.3; to_bson/base aim ≤ 2.8 "
                     "on medium, ≤ 1.5 on small and large. Its per-call, memory and parallel "
                     "figures are under Per call, Memory and Parallel scan.")
        self.heading("json_to_bson", "`json_to_bson(doc)` on a json column, and the Extended JSON "
                     "v2 wrappers (`to_bson(doc, true)`, `json_to_bson(doc, true)`), on medium's "
                     "documents (UTF8 database). Targets: json_to_bson(doc) ≤ 0.5 × "
                     "to_bson(doc::jsonb) on medium_json; to_bson(doc, true) ≤ 1.3 × to_bson(doc) "
                     "on medium_ext.")
        self.heading("row_to_bson", "`row_to_bson(t)` on tables of typed columns, typed and "
                     "medium_rows (UTF8 database). Targets, on both: row_to_bson(t) ≤ 0.5 × "
                     "row_to_json(t)::text, and faster than to_bson(to_jsonb(t)).")
        self.heading("decode", "BSON back to jsonb and to JSON text, on medium's documents stored "
                     "as BSON (UTF8 database). Targets: from_bson(b) ≤ 1.0 × doc::text::jsonb; "
                     "bson_to_json(b) ≤ 1.0 × doc::text. bson_is_valid and bson_documents are "
                     "measured without a target.")
        self.heading("export", "`pg_bsonexport`, the command-line exporter, end to end on the "
                     "medium table. Target: a durable export's throughput ≥ 0.9 × that of psql's "
                     "`COPY (SELECT to_bson(doc) FROM medium) TO STDOUT (FORMAT binary)` into "
                     "/dev/null. Measured by `bench/export_bench.sh`, not by bench/run.sh: its "
                     "output (`bench/results/export-<time>.md`, which names its commit and "
                     "command) goes below this block by hand, with the notes on it.")
        self.heading("memory", "Backend memory of to_bson over a whole table, summed and streamed "
                     "out by COPY, at two table sizes (`memtest.py`). Target: no growth with the "
                     "row count.")
        self.heading("percall", "to_bson on one document at a time, the cost of a call rather "
                     "than of a scan. Target: to_bson TPS ≥ %d%% of doc::text TPS."
                     % (PERCALL_MUST * 100))
        self.heading("parallel", "to_bson is PARALLEL SAFE: the medium scan with 0 and 2 workers.")
        n = max((st.n for st in self.scans.values()), default=0)
        self.heading("method", (
            "Timings: every variant (a query on a table, in a database) first runs once, to warm "
            "up and to set how many scans make one repetition of about %s s; then %s rounds run "
            "every variant once each, in a new seeded order every round, so that drift and other "
            "load spread over all of them. A repetition's figure is pgbench's latency average, "
            "milliseconds per scan, of a full-table aggregate such as "
            "`SELECT sum(octet_length(to_bson(doc))) FROM t`, so that only the function and the "
            "scan are timed. Tables give the median and [min–max] of the %d repetitions; ratios "
            "are ratios of medians, and targets are judged on them (must: met / NOT MET; aim: "
            "reached / not reached). Differences under 10%% are noise: a ratio within 10%% of its "
            "limit is marked.\n\n"
            "Instructions (callgrind, deterministic): after the timed parts the runner stops the "
            "server and counts, with `valgrind --tool=callgrind --toggle-collect=<C function>` on "
            "a single-user backend (`postgres --single`), the instructions executed inside each "
            "function, callees included, over the first rows of a table, divided by the rows. The "
            "detoasting inside is shown apart. The counts do not depend on load, so a change's "
            "effect shows without timing noise; the results directory keeps a profile per "
            "function (`callgrind/*.txt`)." % (m.get("rep_secs", "?"), m.get("reps", "?"), n)))

    def build(self):
        self.part_headings()
        self.part_data()
        self.part_scans()
        self.part_ratios()
        self.part_fastpath()
        self.part_throughput()
        self.part_callgrind()
        self.part_json()
        self.part_json_callgrind()
        self.part_row()
        self.part_row_callgrind()
        self.part_decode()
        self.part_decode_callgrind()
        self.part_memory()
        self.part_percall()
        self.part_parallel()


def split_blocks(text):
    """a published BENCHMARKS.md: (prefix, [(key, content, text after it)])"""
    found = list(MARK_RE.finditer(text))
    if not found:
        return text, []
    blocks = []
    for i, mt in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        blocks.append((mt.group(1), mt.group(2), text[mt.end():end]))
    return text[:found[0].start()], blocks


def publish(old, new_blocks):
    """the new BENCHMARKS.md: the blocks in BLOCKS order, each followed by the
    hand-written text that followed it in old (None: no file yet); a block
    this run has no data for keeps its old content.  Returns (text, kept
    block keys, warnings)."""
    warnings = []
    if old is None:
        prefix, blocks, legacy = "# Benchmarks\n\n", [], ""
    else:
        prefix, blocks = split_blocks(old)
        legacy = ""
        if not blocks and LEGACY_BEGIN in old and LEGACY_END in old:
            # the single generated section of before: its notes go to the end
            legacy = old[old.index(LEGACY_END) + len(LEGACY_END):].strip("\n")
            prefix = "# Benchmarks\n\n"
            if legacy:
                warnings.append("the hand-written text of the old single generated section is at "
                                "the end: move it after the blocks it belongs to")
        elif not blocks:
            prefix = old.rstrip("\n") + "\n\n"
    old_content = {k: c for k, c, _ in blocks}
    after = {k: t for k, _, t in blocks}
    out, kept = [prefix], []
    for key in BLOCKS:
        content = new_blocks.get(key)
        if content is None:
            content = old_content.get(key)
            if content is None:
                continue
            kept.append(key)
        out.append(MARK_BEGIN % key + "\n" + content + "\n" + MARK_END % key)
        out.append(after.get(key, "\n\n"))
    for key, _, text in blocks:
        if key not in BLOCKS and text.strip():
            out.append("\n\n" + text.strip("\n") + "\n\n")
            warnings.append("block %s is no longer written; the text after it is at the end" % key)
    if legacy:
        out.append("\n\n" + legacy + "\n")
    return "".join(out).rstrip("\n") + "\n", kept, warnings


def capture_chart(md_path, png):
    """the events/s of part 1 of a bench/debezium_bench.sh report, one bar a
    client, into png (gnuplot); returns png, or None when the report has no
    capture table or gnuplot fails"""
    text = open(md_path).read()
    part = re.search(r"^## 1\. Change capture: (\d+) changes\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not part:
        return None
    rows = []
    for line in part.group(2).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        # | client | median s | events/s | client CPU s | µs CPU/event | server CPU s | peak RSS MB | runs |
        if len(cells) >= 7 and re.fullmatch(r"[\d.]+", cells[1]) and re.fullmatch(r"\d+", cells[2]):
            label = cells[0].replace(" -f /dev/null,", ",").replace(" (format-version 2)", "")
            rows.append((label, int(cells[2]), float(cells[4])))
    if not rows:
        return None
    head = re.search(r"^# (.*)$", text, re.M)
    cmd = re.search(r"^Command: `([^`]*)` at commit (\w+)", text, re.M)
    machine = re.search(r"^Machine: (\d+) cores", text, re.M)
    pg = re.search(r"^PostgreSQL (\d+\.\d+)", text, re.M)
    date = re.search(r"\((\d{8})-\d+ UTC\)", head.group(1)) if head else None
    sub = "%s changes of bench/changes_workload.sh, the same WAL, medians; PostgreSQL %s, %s cores; commit %s, %s" % (
        part.group(1), pg.group(1) if pg else "?", machine.group(1) if machine else "?",
        cmd.group(2) if cmd else "?", date.group(1) if date else "?")
    base = os.path.splitext(os.path.abspath(png))[0]
    dat, gp = base + ".dat", base + ".gp"
    colors = [0x2e9e4f if r[0].startswith("pg_bsonstream") else 0xc0392b if r[0].startswith("Debezium")
              else 0x5b7fbf for r in rows]
    top = max(r[1] for r in rows)
    with open(dat, "w") as f:
        f.write("# y, events/s, colour, label\n")
        for i, (r, c) in enumerate(zip(rows, colors)):
            f.write('%d %d %d "%s events/s, %.1f µs client CPU an event"\n'
                    % (len(rows) - 1 - i, r[1], c, "{:,}".format(r[1]), r[2]))
    ytics = ", ".join('"%s" %d' % (r[0].replace('"', "'"), len(rows) - 1 - i) for i, r in enumerate(rows))
    with open(gp, "w") as f:
        f.write("""set terminal pngcairo size 1200,%(h)d font "sans,10" noenhanced
set output '%(png)s'
set title "Change capture into a client: events per second (higher is better)\\n%(sub)s"
set style fill solid 0.85 border -1
unset key
set xrange [0:%(xmax)d]
set yrange [-0.6:%(ymax).1f]
set ytics (%(ytics)s) scale 0
set xtics format "%%.0s%%c"
set xlabel "events per second"
set grid xtics
set lmargin 36
plot '%(dat)s' using ($2/2):1:($2/2):(0.35):3 with boxxyerror lc rgb variable, \\
     '' using 2:1:4 with labels left offset 0.8,0
""" % {"h": 140 + 60 * len(rows), "png": png, "sub": sub, "xmax": top * 1.6,
       "ymax": len(rows) - 0.4, "ytics": ytics, "dat": dat})
    return run_gnuplot(gp, png)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--capture-chart":
        png = capture_chart(sys.argv[2], sys.argv[3])
        print("chart: %s" % png if png else "report: no change-capture table in %s" % sys.argv[2])
        sys.exit(0 if png else 1)
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--publish", metavar="BENCHMARKS_MD")
    ap.add_argument("--chart-copy", metavar="PNG")
    args = ap.parse_args()
    d = os.path.abspath(args.results)
    rep = Report(d)
    rep.build()
    png = rep.chart()

    rep.part_run("chart.png" if png else None, None)
    frag = "\n\n".join(rep.blocks[k] for k in BLOCKS if k in rep.blocks) + "\n"
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write(frag)
    txt = "\n\n".join(rep.txt[k] for k in BLOCKS if k in rep.txt) + "\n"
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write(txt)
    print(txt)
    print("summary: %s/summary.md%s" % (d, ", chart: " + png if png else ""))

    if args.publish:
        target = os.path.abspath(args.publish)
        base = os.path.dirname(target)
        chart_link = None
        if png and args.chart_copy:
            os.makedirs(os.path.dirname(os.path.abspath(args.chart_copy)), exist_ok=True)
            shutil.copyfile(png, args.chart_copy)
            chart_link = os.path.relpath(os.path.abspath(args.chart_copy), base)
        rep.part_run(chart_link, os.path.relpath(d, base) + "/")
        old = open(target).read() if os.path.exists(target) else None
        new, kept, warnings = publish(old, rep.blocks)
        with open(target, "w") as f:
            f.write(new)
        for key in kept:
            print("report: no data for %s in this run: kept the published block (its own commit "
                  "and command)" % key, file=sys.stderr)
        for w in warnings:
            print("report: %s" % w, file=sys.stderr)
        print("published: %s%s" % (target, ", chart: " + args.chart_copy if chart_link else ""))


if __name__ == "__main__":
    main()
