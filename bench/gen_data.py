#!/usr/bin/python3
"""Deterministic data generator for the bson_out benchmark.

Creates the tables small, medium, large and keys, each (id int primary key,
doc jsonb), in the database named by --dbname (connection from the PG*
environment that scripts/lib.sh exports).  The same seed gives the same
documents on every machine: every table draws from its own random.Random
seeded with a fixed string.

Derived tables (json_to_bson and Extended JSON, asked for with --tables): medium_json holds the
medium documents as json, the generator's own text (so json_to_bson sees the
generator's key order); medium_ext (jsonb) and medium_ext_json (json) hold
them with three MongoDB Extended JSON v2 wrappers each: _id as
{"$oid": "<24 hex>"}, created as {"$date": "<ISO string>"}, big as
{"$numberLong": "<digits>"}.  They draw from medium's seed, so the
documents are medium's, row for row.

Row tables (row_to_bson, also asked for with --tables) have typed
columns instead of a document: typed (id int primary key, n bigint, amount
numeric(12,2), name text, email text, created timestamptz, uid uuid, active
bool, age int, score float8, meta jsonb, tags text[]; its own seed) and
medium_rows, the medium documents as rows (medium's seed, row for row): one
column per top-level field with its natural SQL type (_id int primary key =
the row number instead of the 24 hex digits, created timestamptz, balance
numeric(12,2), tags text[], the nested values as jsonb, prefs NULL where the
document has none).

With --latin1 the documents are the same except that the characters a LATIN1
database cannot hold are replaced by Latin-1 ones (東京 -> Köln, emoji ->
©, ...); the random draws are identical, so the two databases hold documents
of the same shape and nearly the same size.

Run with Debian's /usr/bin/python3 (it has psycopg2).
"""
import argparse
import io
import json
import random
import sys
import time

import psycopg2

SEED = "bson_out-bench-v1"

FULL_ROWS = {"small": 200_000, "medium": 200_000, "large": 5_000, "keys": 200_000,
             "medium_json": 200_000, "medium_ext": 200_000, "medium_ext_json": 200_000,
             "typed": 200_000, "medium_rows": 200_000}

FIRST = ["Anna", "Ben", "Carla", "David", "Emma", "Felix", "Grace", "Henry", "Iris", "Jack",
         "Karen", "Liam", "Maya", "Noah", "Olga", "Paul", "Quinn", "Rosa", "Sam", "Tina",
         "Uma", "Victor", "Wendy", "Xavier", "Yara", "Zack", "Alice", "Bruno", "Chloe", "Diego"]
LAST = ["Smith", "Jones", "Brown", "Taylor", "Wilson", "Davies", "Evans", "Thomas", "Johnson",
        "Roberts", "Walker", "Wright", "Robinson", "Thompson", "White", "Hughes", "Edwards",
        "Green", "Hall", "Wood", "Harris", "Lewis", "Martin", "Jackson", "Clarke", "Clark"]
# 10% of the medium documents take their name and city from these lists.
NONASCII_NAMES = ["Jürgen Groß", "Zoë Müller", "François Lefèvre", "José Núñez",
                  "Søren Kierkegård", "山田 太郎", "李 小龍", "Иван Петров",
                  "Ольга Смирнова", "María 😀 García", "Chloé 🎉 Dubois", "Άννα Παππά"]
NONASCII_CITIES = ["Zürich", "東京", "Москва", "São Paulo", "Kraków", "Malmö", "Αθήνα",
                   "München 🍺", "Reykjavík", "大阪", "Genève", "Санкт-Петербург"]
# What a LATIN1 database stores instead (word-level first, then per character).
LATIN1_WORDS = {
    "山田 太郎": "Ólafur Ragnar", "李 小龍": "Zoë Ørsted", "Иван Петров": "Þór Ævarsson",
    "Ольга Смирнова": "Åse Bjørnstad", "Άννα Παππά": "Ánna Páppa",
    "東京": "Köln", "Москва": "Málaga", "Αθήνα": "Århus", "大阪": "Düsseldorf",
    "Санкт-Петербург": "Besançon", "😀": "©", "🎉": "®", "🍺": "¼", "🚀": "±", "✓": "×",
}
LATIN1_FALLBACK = "äöüßéèçñåøæðþ©®°±µ¶¿¡"

CITIES = ["Berlin", "London", "Paris", "New York", "Chicago", "Madrid", "Rome", "Vienna",
          "Oslo", "Dublin", "Boston", "Seattle", "Austin", "Denver", "Lisbon", "Prague",
          "Warsaw", "Toronto", "Sydney", "Amsterdam"]
STREETS = ["Main", "Oak", "Pine", "Maple", "Cedar", "Elm", "Lake", "Hill", "Park", "River",
           "Church", "High", "Station", "Mill", "Bridge"]
STREET_KINDS = ["St", "Ave", "Rd", "Blvd", "Lane"]
TAGS = ["red", "blue", "green", "vip", "new", "beta", "gold", "silver", "trial", "churn",
        "mobile", "web", "eu", "us", "apac", "promo", "b2b", "b2c", "legacy", "premium"]
DOMAINS = ["example.com", "example.org", "example.net", "mail.example.com"]
LANGS = ["en", "de", "fr", "es", "it", "ja", "ru", "pt"]
WORDS = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit",
         "sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore",
         "magna", "aliqua", "enim", "ad", "minim", "veniam", "quis", "nostrud",
         "exercitation", "ullamco", "laboris", "nisi", "aliquip", "ex", "ea", "commodo"]
NONASCII_WORDS = ["Zürich", "東京", "Москва", "naïve", "café", "😀", "🚀", "crème brûlée", "✓"]
# Strings with characters that JSON text must escape (2% of medium documents).
ESCAPED = ['Line 1\nLine 2', 'Tab\tseparated', 'She said "hi"', 'C:\\Users\\bench',
           'bell\u0007and\u0001ctl', 'mixed "q" \\ \n\t end', 'slash / and \r return']


def hex_id(rng):
    return "%024x" % rng.getrandbits(96)


def iso_date(rng):
    return "20%02d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (
        rng.randint(15, 24), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
        rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999))


def money(rng, hi):
    return rng.randint(0, hi * 100) / 100  # repr has at most 2 decimals


def sentence(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def doc_small(rng, i):
    d = {"_id": i}
    k = rng.randint(2, 4)  # 3-5 keys in all
    chosen = set(rng.sample(["n", "v", "ok", "ts"], k))
    if "n" in chosen:
        d["n"] = rng.randint(0, 1_000_000)
    if "v" in chosen:
        s = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8)))
        if rng.random() < 0.05:
            s += rng.choice(["ü", "é", "ß", "ø"])
        d["v"] = s
    if "ok" in chosen:
        d["ok"] = rng.random() < 0.5
    if "ts" in chosen:
        d["ts"] = rng.randint(1_500_000_000_000, 1_750_000_000_000) / 1000
    return d


def doc_medium(rng, i):
    nonascii = rng.random() < 0.10
    escaped = rng.random() < 0.02
    first, last = rng.choice(FIRST), rng.choice(LAST)
    n = rng.randint(1, 999)
    if nonascii:
        name = rng.choice(NONASCII_NAMES)
        city = rng.choice(NONASCII_CITIES)
        email = "user%d.%d@%s" % (i, n, rng.choice(DOMAINS))
    else:
        name = first + " " + last
        city = rng.choice(CITIES)
        email = "%s.%s%d@%s" % (first.lower(), last.lower(), n, rng.choice(DOMAINS))
    street = "%d %s %s" % (rng.randint(1, 9999), rng.choice(STREETS), rng.choice(STREET_KINDS))
    if escaped:
        street = street + " " + rng.choice(ESCAPED)
    d = {
        "_id": hex_id(rng),
        "name": name,
        "email": email,
        "age": rng.randint(18, 90),
        "tags": rng.sample(TAGS, rng.randint(1, 3)),
        "address": {"street": street, "city": city, "zip": "%05d" % rng.randint(1000, 99999)},
        "scores": [rng.randint(0, 100) if rng.random() < 0.6 else rng.randint(0, 1000) / 10
                   for _ in range(rng.randint(3, 5))],
        "created": iso_date(rng),
        "active": rng.random() < 0.7,
        "balance": money(rng, 100_000),
        "ratio": rng.random(),
        "big": rng.randint(2**31, 2**42),
        "orders": [{"sku": "SKU-%05d" % rng.randint(0, 99999), "qty": rng.randint(1, 5),
                    "price": money(rng, 500)}
                   for _ in range(rng.randint(0, 2))],
    }
    if rng.random() < 0.5:
        d["prefs"] = {"lang": rng.choice(LANGS), "newsletter": rng.random() < 0.3,
                      "theme": rng.choice(["dark", "light", "auto"])}
    return d


def doc_large(rng, i):
    nonascii = rng.random() < 0.10

    def text(lo, hi):
        s = sentence(rng, lo, hi)
        if nonascii and rng.random() < 0.3:
            s += " " + rng.choice(NONASCII_WORDS)
        return s

    items = []
    for j in range(rng.randint(50, 76)):
        items.append({
            "id": j, "sku": "SKU-%05d" % rng.randint(0, 99999), "name": text(2, 4),
            "desc": text(10, 20), "price": money(rng, 2000), "qty": rng.randint(0, 500),
            "dims": {"w": rng.randint(1, 999) / 10, "h": rng.randint(1, 999) / 10,
                     "d": rng.randint(1, 999) / 10},
            "tags": rng.sample(TAGS, rng.randint(1, 3)), "in_stock": rng.random() < 0.8,
        })
    return {
        "_id": hex_id(rng), "title": text(3, 8), "created": iso_date(rng),
        "owner": doc_medium(rng, i), "items": items,
        "history": [{"at": iso_date(rng), "event": rng.choice(["create", "update", "ship", "bill"]),
                     "by": rng.randint(1, 10_000)} for _ in range(rng.randint(5, 15))],
        "notes": text(40, 80),
    }


KEY_NAMES = (["id", "ts", "n", "v", "ok", "qty", "sku", "tag", "ref", "src", "dst", "amt", "cur",
              "st", "ty", "lvl", "pri", "cnt", "min", "max", "avg", "sum", "lat", "lon", "alt",
              "x", "y", "z", "w", "h", "a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3",
              "flag", "mode", "rev", "ver", "seq", "uid", "gid", "pid", "rc", "err", "msg"])


def doc_keys(rng, i):
    d = {}
    for k in rng.sample(KEY_NAMES, rng.randint(30, 40)):
        r = rng.random()
        if r < 0.5:
            d[k] = rng.randint(0, 99)
        elif r < 0.75:
            d[k] = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 3)))
        elif r < 0.9:
            d[k] = rng.random() < 0.5
        else:
            d[k] = None
    return d


def extjson_wrap(d):
    """The medium document with 3 Extended JSON v2 wrappers (key order kept)."""
    d = dict(d)
    d["_id"] = {"$oid": d["_id"]}
    d["created"] = {"$date": d["created"]}  # iso_date() already ends in Z
    d["big"] = {"$numberLong": str(d["big"])}
    return d


GENERATORS = {"small": doc_small, "medium": doc_medium, "large": doc_large, "keys": doc_keys}
# derived table -> (generator and seed it draws from, transformation, column type)
DERIVED = {"medium_json": ("medium", None, "json"),
           "medium_ext": ("medium", extjson_wrap, "jsonb"),
           "medium_ext_json": ("medium", extjson_wrap, "json")}


# row_to_bson: tables of typed columns instead of a document
META_SRC = ["web", "app", "api", "import", "batch"]


def uuid_text(rng):
    h = "%032x" % rng.getrandbits(128)
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def doc_typed(rng, i):
    """One row of the typed table, as a dict column -> value (None = NULL)."""
    nonascii = rng.random() < 0.05
    first, last = rng.choice(FIRST), rng.choice(LAST)
    name = rng.choice(NONASCII_NAMES) if nonascii else first + " " + last
    meta = {"src": rng.choice(META_SRC), "v": rng.randint(1, 9)}
    if rng.random() < 0.5:
        meta["ok"] = rng.random() < 0.5
    return {
        "id": i,
        "n": rng.randint(0, 10**12),
        "amount": "%d.%02d" % (rng.randint(0, 9_999_999), rng.randint(0, 99)),
        "name": name,
        # 5% NULL
        "email": None if rng.random() < 0.05 else "%s.%s%d@%s" % (
            first.lower(), last.lower(), rng.randint(1, 999), rng.choice(DOMAINS)),
        "created": iso_date(rng),
        "uid": uuid_text(rng),
        "active": rng.random() < 0.7,
        "age": rng.randint(18, 90),
        "score": rng.random() * 100,
        "meta": meta,
        "tags": rng.sample(TAGS, rng.randint(0, 3)),
    }


def medium_row(d, i):
    """A medium document as a row of medium_rows (the key order is the
    document's; _id becomes the row number, a missing prefs NULL)."""
    r = dict(d)
    r["_id"] = i
    r.setdefault("prefs", None)
    return r


GENERATORS["typed"] = doc_typed
# row table -> (generator and seed it draws from, row builder (dict, id) ->
# dict column -> value, columns with their SQL types; the first is the
# primary key)
ROW_TABLES = {
    "typed": ("typed", lambda d, i: d, [
        ("id", "int"), ("n", "bigint"), ("amount", "numeric(12,2)"), ("name", "text"),
        ("email", "text"), ("created", "timestamptz"), ("uid", "uuid"), ("active", "bool"),
        ("age", "int"), ("score", "float8"), ("meta", "jsonb"), ("tags", "text[]")]),
    "medium_rows": ("medium", medium_row, [
        ("_id", "int"), ("name", "text"), ("email", "text"), ("age", "int"), ("tags", "text[]"),
        ("address", "jsonb"), ("scores", "jsonb"), ("created", "timestamptz"), ("active", "bool"),
        ("balance", "numeric(12,2)"), ("ratio", "float8"), ("big", "bigint"), ("orders", "jsonb"),
        ("prefs", "jsonb")]),
}


def copy_value(v, sqltype):
    """One value in COPY text format (before copy_escape); None for NULL."""
    if v is None:
        return None
    if sqltype == "jsonb":
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if sqltype == "text[]":
        # array literal; the tags are plain words, quoted anyway
        return "{" + ",".join('"%s"' % x.replace("\\", "\\\\").replace('"', '\\"') for x in v) + "}"
    if sqltype == "bool":
        return "t" if v else "f"
    if sqltype == "float8":
        return repr(float(v))
    return str(v)


def rows_of(table, rows):
    """Yield (id, row dict) for a row table; deterministic for (table, id)."""
    base, build, _ = ROW_TABLES[table]
    rng = random.Random("%s/%s" % (SEED, base))
    gen = GENERATORS[base]
    for i in range(1, rows + 1):
        yield i, build(gen(rng, i), i)


def load_rows(conn, table, rows, batch=20_000):
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS %s" % table)
    cols = ROW_TABLES[table][2]
    cur.execute("CREATE TABLE %s (%s)" % (table, ", ".join(
        "%s %s%s" % (c, ty, " PRIMARY KEY" if k == 0 else "") for k, (c, ty) in enumerate(cols))))
    copy = "COPY %s (%s) FROM STDIN" % (table, ", ".join(c for c, _ in cols))
    buf = io.StringIO()
    n = 0
    for _, r in rows_of(table, rows):
        vals = (copy_value(r[c], ty) for c, ty in cols)
        buf.write("\t".join("\\N" if v is None else copy_escape(v) for v in vals) + "\n")
        n += 1
        if n % batch == 0:
            buf.seek(0)
            cur.copy_expert(copy, buf)
            buf = io.StringIO()
    if buf.tell():
        buf.seek(0)
        cur.copy_expert(copy, buf)
    conn.commit()


def latin1ize(s):
    for a, b in LATIN1_WORDS.items():
        if a in s:
            s = s.replace(a, b)
    if all(ord(c) < 256 for c in s):
        return s
    return "".join(c if ord(c) < 256 else LATIN1_FALLBACK[ord(c) % len(LATIN1_FALLBACK)] for c in s)


def documents(table, rows, latin1):
    """Yield (id, json_text) for one table; deterministic for (table, id)."""
    base, transform, _ = DERIVED.get(table, (table, None, "jsonb"))
    rng = random.Random("%s/%s" % (SEED, base))
    gen = GENERATORS[base]
    for i in range(1, rows + 1):
        d = gen(rng, i)
        if transform:
            d = transform(d)
        s = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        if latin1:
            s = latin1ize(s)
        yield i, s


def copy_escape(s):
    # COPY text format: backslash is the only special character that JSON
    # text produced by json.dumps can contain (control characters are escaped).
    return s.replace("\\", "\\\\")


def load(conn, table, rows, latin1, batch=20_000):
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS %s" % table)
    coltype = DERIVED.get(table, (None, None, "jsonb"))[2]
    cur.execute("CREATE TABLE %s (id int PRIMARY KEY, doc %s NOT NULL)" % (table, coltype))
    buf = io.StringIO()
    n = 0
    for i, s in documents(table, rows, latin1):
        buf.write("%d\t%s\n" % (i, copy_escape(s)))
        n += 1
        if n % batch == 0:
            buf.seek(0)
            cur.copy_expert("COPY %s (id, doc) FROM STDIN" % table, buf)
            buf = io.StringIO()
    if buf.tell():
        buf.seek(0)
        cur.copy_expert("COPY %s (id, doc) FROM STDIN" % table, buf)
    conn.commit()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dbname", help="required unless --dump")
    ap.add_argument("--latin1", action="store_true",
                    help="replace characters LATIN1 cannot hold by Latin-1 ones")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="fraction of the full row counts (quick mode uses 0.1)")
    ap.add_argument("--tables", default="small,medium,large,keys",
                    help="comma-separated; also medium_json, medium_ext, medium_ext_json "
                    "(json_to_bson) and typed, medium_rows (row_to_bson)")
    ap.add_argument("--dump", metavar="TABLE",
                    help="print the documents of TABLE as JSON lines instead of loading")
    args = ap.parse_args()

    if args.dump:
        rows = max(1, int(FULL_ROWS[args.dump] * args.scale))
        out = sys.stdout
        if args.dump in ROW_TABLES:
            for _, r in rows_of(args.dump, rows):
                out.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
            return
        for _, s in documents(args.dump, rows, args.latin1):
            out.write(s + "\n")
        return

    if not args.dbname:
        ap.error("--dbname is required (unless --dump)")
    conn = psycopg2.connect(dbname=args.dbname)
    conn.set_client_encoding("UTF8")
    for t in args.tables.split(","):
        rows = max(1, int(FULL_ROWS[t] * args.scale))
        t0 = time.time()
        if t in ROW_TABLES:
            if args.latin1:
                ap.error("%s: the row tables are for the UTF8 database only" % t)
            load_rows(conn, t, rows)
        else:
            load(conn, t, rows, args.latin1)
        print("   %s.%s: %d rows in %.1f s" % (args.dbname, t, rows, time.time() - t0),
              file=sys.stderr)
    conn.close()


if __name__ == "__main__":
    main()
