#!/usr/bin/python3
"""Cross-check to_bson(jsonb) against pymongo's independent BSON decoder.

Usage: /usr/bin/python3 test/crosscheck.py [--count 10000] [--seed 1]
                                           [--alphabet utf8|latin1]

Generates deterministic random JSON documents, loads them into a temp table on
the server given by the libpq environment (PGHOST, PGPORT, ...), encodes them
with to_bson() (with bson_out.ascii_fast_path on and off) and compares every
result, decoded by pymongo, with an oracle computed here from doc::text.
Ends with the line "crosscheck: N passed, M failed"; exit status 0 iff M == 0.
"""
import argparse, io, json, math, random, struct, sys, time
from decimal import Decimal

import bson, psycopg2
from bson.codec_options import CodecOptions
from bson.decimal128 import Decimal128
from bson.int64 import Int64

sys.set_int_max_str_digits(0)   # jsonb prints e.g. 1e6000 with 6001 digits

class Num:
    """A JSON number kept as its exact text."""
    __slots__ = ("text",)
    def __init__(self, text): self.text = text
    def __repr__(self): return self.text if len(self.text) < 60 else self.text[:25] + "...(%d chars)" % len(self.text)

class Obj(list):
    """A JSON object as an ordered list of (key, value) pairs."""

# ---------------------------------------------------------------- the oracle
def pg_numeric_text(raw):
    """How jsonb::text prints the JSON number `raw` (numeric_out at the
    display scale that numeric_in gives it: never an exponent, no -0)."""
    sign, digits, exp = Decimal(raw).as_tuple()
    coef = "".join(map(str, digits))
    if exp >= 0:
        s = (coef + "0" * exp).lstrip("0") or "0"
    else:
        coef = coef.rjust(-exp + 1, "0")
        s = (coef[:exp].lstrip("0") or "0") + "." + coef[exp:]
    return ("-" + s) if sign and s.strip("0.") else s

def classify(text):
    """Expected BSON for a number as printed by jsonb::text:
    ('int32'|'int64', int), ('double', float), ('dec', Decimal tuple) or
    ('error', reason) when to_bson must raise SQLSTATE 22003."""
    neg = text.startswith("-")
    mag = text[1:] if neg else text
    if "." not in mag and "e" not in mag.lower():
        if len(mag) <= 19:
            v = int(text)
            if -2**31 <= v < 2**31:
                return ("int32", v)
            if -2**63 <= v < 2**63:
                return ("int64", v)
    f = float(text)
    intpart, _, frac = mag.partition(".")
    nonzero = (intpart + frac).strip("0") != ""
    if not math.isinf(f) and not (f == 0 and nonzero):
        return ("double", f)
    # Decimal128 with the exact value: digits at display scale, trailing zeros
    # dropped only as far as needed (<= 34 digits, exponent >= -6176).
    coef, e = (intpart + frac).lstrip("0"), -len(frac)
    drop = min(max(len(coef) - 34, -6176 - e, 0), len(coef) - len(coef.rstrip("0")))
    coef, e = coef[:len(coef) - drop], e + drop
    if len(coef) > 34:
        return ("error", "more than 34 significant digits")
    if e < -6176 or e > 6111:
        return ("error", "exponent %d out of Decimal128 range" % e)
    return ("dec", Decimal((1 if neg else 0, tuple(map(int, coef)), e)).as_tuple())

def expected_from_text(doc_text):
    """Parse doc::text keeping key order and the raw number text."""
    return json.loads(doc_text, object_pairs_hook=Obj, parse_int=Num, parse_float=Num)

def compare(exp, got, path, out):
    """Append (path, expected, got) for every difference to `out`."""
    def bad(e, g): out.append((path, e, g))
    if isinstance(exp, Obj):
        if type(got) is not dict:
            return bad("document", type(got).__name__)
        ek, gk = [k for k, _ in exp], list(got)
        if ek != gk:
            return bad("keys %r" % ek[:10], "keys %r" % gk[:10])
        for k, v in exp:
            compare(v, got[k], "%s.%s" % (path, json.dumps(k, ensure_ascii=False)), out)
    elif isinstance(exp, list):
        if type(got) is not list or len(got) != len(exp):
            return bad("array[%d]" % len(exp), type(got).__name__ + (
                "[%d]" % len(got) if isinstance(got, list) else ""))
        for i, (e, g) in enumerate(zip(exp, got)):
            compare(e, g, "%s[%d]" % (path, i), out)
    elif isinstance(exp, bool) or exp is None or isinstance(exp, str):
        if type(got) is not type(exp) or got != exp:
            bad(repr(exp)[:80], "%s %s" % (type(got).__name__, repr(got)[:80]))
    else:   # Num
        kind, val = classify(exp.text)
        tname = type(got).__name__
        if kind == "int32":
            ok = type(got) is int and got == val
        elif kind == "int64":
            ok = type(got) is Int64 and got == val
        elif kind == "double":
            ok = (type(got) is float and got == val
                  and math.copysign(1, got) == math.copysign(1, val))
        elif kind == "dec":
            ok = isinstance(got, Decimal128) and got.to_decimal().as_tuple() == val
            if isinstance(got, Decimal128):
                got = got.to_decimal().as_tuple()
        else:
            ok = False
        if not ok:
            bad("%s %r (from %r)" % (kind, val, exp), "%s %s" % (tname, repr(got)[:120]))

# ------------------------------------------------------ structural raw walk
BSON_SIZES = {0x01: 8, 0x08: 1, 0x0A: 0, 0x10: 4, 0x12: 8, 0x13: 16}

def raw_walk(buf, off=0, limit=None, is_array=False):
    """Check one (sub)document starting at buf[off]; return its length.
    Raises ValueError describing the first structural problem."""
    limit = len(buf) if limit is None else limit
    if off + 5 > limit:
        raise ValueError("truncated document at %d" % off)
    n = int.from_bytes(buf[off:off + 4], "little", signed=True)
    if n < 5 or off + n > limit or buf[off + n - 1] != 0:
        raise ValueError("bad document length %d at %d" % (n, off))
    end, p, idx = off + n - 1, off + 4, 0
    while p < end:
        t = buf[p]
        z = buf.find(b"\0", p + 1, end)
        if z < 0:
            raise ValueError("unterminated key at %d" % p)
        key = buf[p + 1:z].decode("utf-8")      # strict: raises on bad UTF-8
        if is_array and key != str(idx):
            raise ValueError("array key %r, want %r at %d" % (key, str(idx), p))
        idx, p = idx + 1, z + 1
        if t == 0x02:
            sl = int.from_bytes(buf[p:p + 4], "little", signed=True)
            if sl < 1 or p + 4 + sl > end or buf[p + 3 + sl] != 0:
                raise ValueError("bad string length %d at %d" % (sl, p))
            s = buf[p + 4:p + 3 + sl]
            if b"\0" in s:
                raise ValueError("NUL inside string at %d" % p)
            s.decode("utf-8")
            p += 4 + sl
        elif t in (0x03, 0x04):
            p += raw_walk(buf, p, end, t == 0x04)
        elif t in BSON_SIZES:
            if t == 0x08 and buf[p] not in (0, 1):
                raise ValueError("bool byte %d at %d" % (buf[p], p))
            p += BSON_SIZES[t]
        else:
            raise ValueError("unexpected element type 0x%02x at %d" % (t, p))
    if p != end:
        raise ValueError("element overruns its document at %d" % p)
    return n

# ----------------------------------------------------------------- generator
BOUNDARY = """0 -0 1 -1 2147483647 2147483648 -2147483648 -2147483649 2147483646
 -2147483647 9223372036854775807 9223372036854775808 -9223372036854775808
 -9223372036854775809 18446744073709551616 1e20 100000000000000000000 1.0 0.1
 0.2 0.3 1.7976931348623157e308 1e308 1e309 5e-324 2e-324 1e-400 1e400 -1e400
 1.5e-320 123456789012345678901234567890123.4 1e6000 1e-6100
 9.999999999999999e22 2.2250738585072014e-308 4.9406564584124654e-324 0.000001
 1e-7 12345.67 1000000 1.500 1.000e-400 1e2 1.5e3 1E+2 12e-1 -0.0 2.5e-324
 1.7976931348623159e308 9.999999999999999999999999999999999e6144 1e-6176
 1.0e-6176 1234567890123456789012345678901234e400 1e6144 -1e-6176 1e-323""".split()
BOUNDARY += ["-" + b for b in BOUNDARY if not b.startswith("-")]

# Documents to_bson must reject with SQLSTATE 22003 (no exact BSON value).
ERROR_DOCS = [
    '{"a": 1234567890123456789012345678901234567891e400}',
    '{"a": [1, "x", {"b": -1234567890123456789012345678901234567891e400}]}',
    '{"x": 12345678901234567890123456789012345e-400}',
    '{"x": 1e-7000}',
    '{"y": {"z": [true, -3e-6200]}}',
    '{"big": 1e6145}',
    '{"k": 1e-6177}',
    '{"a": 1, "zz": [[[[12345678901234567890123456789012345678901234567890e-999]]]]}',
]

KEY_LENGTHS = [0, 1, 2, 5, 24, 25, 26, 100]
ASCII = [chr(c) for c in range(0x20, 0x7f)]
ESCAPES = ['"', "\\", "\n", "\t", "\r", "\b", "\f", "/"] + [chr(c) for c in range(1, 32)]

class Gen:
    def __init__(self, rng, alphabet):
        self.r = rng
        self.enc = "latin-1" if alphabet == "latin1" else "utf-8"
        # plus the first/last code points of each UTF-8 length class
        self.non_ascii = (["é", "ü", "ß", "ÿ", "©", "\x80", "\xa0"] if alphabet == "latin1"
                          else ["é", "ж", "東", "😀", "ü", "€", "\x80", "\u07ff",
                                "\u0800", "\uffff", "\U00010000", "\U0010ffff"])

    def text(self, nbytes, p_non, p_esc):
        """A string of exactly `nbytes` bytes in the server encoding: ASCII
        with probability p_non of a non-ASCII char and p_esc of a char that
        JSON escapes, per character."""
        pools = (ASCII, self.non_ascii, ESCAPES)
        weights = (1 - p_non - p_esc, p_non, p_esc)
        cum, acc = [], 0.0
        for pool, w in zip(pools, weights):
            for _ in pool:
                acc += w / len(pool)
                cum.append(acc)
        s = "".join(self.r.choices(ASCII + self.non_ascii + ESCAPES, cum_weights=cum, k=nbytes))
        # cut to nbytes on a character boundary, pad with ASCII
        s = s.encode(self.enc)[:nbytes].decode(self.enc, "ignore")
        return s + "x" * (nbytes - len(s.encode(self.enc)))

    def ascii_run(self, n):
        """n bytes of ASCII with one non-ASCII char somewhere (fast-path edges)."""
        c = self.r.choice(self.non_ascii)
        n = max(0, n - len(c.encode(self.enc)))
        a = self.r.randint(0, n)
        return "a" * a + c + "b" * (n - a)

    def key(self):
        r = self.r
        n = r.choice(KEY_LENGTHS) if r.random() < 0.3 else r.randint(1, 8)
        if r.random() < 0.05:
            return self.ascii_run(n)
        return self.text(n, r.choice([0, 0, 0.3, 1]), r.choice([0, 0, 0, 0.1]))

    def string(self):
        r = self.r
        x = r.random()
        if x < 0.1:   # one non-ASCII char inside an ASCII run (fast-path edges)
            return self.ascii_run(r.choice([1, 2, 8, 24, 25, 26, r.randint(1, 80)]))
        n = (r.choice([24, 25, 26, 126, 127, 128, 255, 256, 1000, 4096]) if x < 0.2
             else r.randint(0, 20))
        return self.text(n, r.choice([0, 0, 0.05, 0.5]), r.choice([0, 0, 0.05, 0.3]))

    def number(self):
        r = self.r
        x = r.random()
        if x < 0.3:
            return r.choice(BOUNDARY)
        if x < 0.55:      # integers of 1..25 digits
            n = r.randint(1, 25)
            return r.choice(["", "-"]) + str(r.randint(10**(n - 1) if n > 1 else 0, 10**n - 1))
        if x < 0.8:       # decimals: 1..20 significant digits, exponent -30..30
            d = str(r.randint(1, 10**r.randint(1, 20) - 1))
            e = r.randint(-30, 30)
            sign = r.choice(["", "-"])
            form = r.randint(0, 2)
            if form == 0:
                return "%s%s.%se%d" % (sign, d[0], d[1:] or "0", e)
            if form == 1:
                return "%s%sE%+d" % (sign, d, e)
            return sign + pg_numeric_text(d + "e" + str(e))
        while True:       # random IEEE doubles (all bit patterns) via repr()
            f = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
            if math.isfinite(f):
                return repr(f)

    def value(self, depth, maxdepth):
        r = self.r
        x = r.random()
        if depth < maxdepth and x < 0.3:
            n = 0 if r.random() < 0.1 else r.randint(1, 6 if r.random() < 0.9 else 30)
            if x < 0.15:
                return Obj((self.key(), self.value(depth + 1, maxdepth)) for _ in range(n))
            return [self.value(depth + 1, maxdepth) for _ in range(n)]
        x = r.random()
        if x < 0.4:
            return self.string()
        if x < 0.85:
            return Num(self.number())
        return r.choice([True, False, None])

    def doc(self, i):
        r = self.r
        if i == 0:    # every boundary number, as object members and in an array
            return Obj([("b%d" % j, Num(t)) for j, t in enumerate(BOUNDARY)]
                       + [("all", [Num(t) for t in BOUNDARY])])
        if 1 <= i <= 5:   # a few very deep documents, objects and arrays mixed
            v = Num("42")
            for d in range(r.randint(100, 200)):
                v = Obj([(self.key(), v), ("n", Num(str(d)))]) if r.random() < 0.5 else [v, d % 2 == 0]
            return Obj([("deep", v)])
        if 6 <= i <= 9:   # a few long strings (up to 100 kB)
            n = [100000, 65536, 99999, 32767][i - 6]
            p_non = 0 if i % 2 == 0 else 0.2
            return Obj([("long", self.text(n, p_non, 0.01)), ("k", "v")])
        if 10 <= i <= 12:  # every key length, ASCII and not
            return Obj((self.text(n, p, 0), Num(str(n))) for n in KEY_LENGTHS
                       for p in ([0, 0.5, 1] if i == 10 else [0.2]))
        if i == 13:        # big containers: 4-digit array indexes, 2000 keys
            return Obj([("arr", [self.value(2, 3) for _ in range(2500)]),
                        ("obj", Obj(("k%d" % j, self.value(2, 2)) for j in range(2000)))])
        return Obj((self.key(), self.value(1, r.choice([1, 2, 3, 4, 5, 6])))
                   for _ in range(0 if r.random() < 0.03 else r.randint(1, 8)))

def dump(v):
    """Serialize a generated value; numbers keep their exact text."""
    if isinstance(v, Obj):
        return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + dump(x) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(dump(x) for x in v) + "]"
    if isinstance(v, Num):
        return v.text
    return json.dumps(v, ensure_ascii=False)

def numbers_in(v):
    if isinstance(v, Obj):
        for _, x in v: yield from numbers_in(x)
    elif isinstance(v, list):
        for x in v: yield from numbers_in(x)
    elif isinstance(v, Num):
        yield v.text

# ---------------------------------------------------------------------- main
def generate(count, seed, alphabet):
    """The `count` document texts for this seed and alphabet."""
    gen = Gen(random.Random(seed), alphabet)
    texts = []
    for i in range(count):
        d = gen.doc(i)
        for t in numbers_in(d):   # self-check: the generator avoids error cases
            assert classify(pg_numeric_text(t))[0] != "error", t
        texts.append(dump(d))
    for t in ERROR_DOCS:          # ... and each error document has one
        assert any(classify(pg_numeric_text(n))[0] == "error"
                   for n in numbers_in(expected_from_text(t))), t
    return texts

DECODE_OPTS = CodecOptions(document_class=dict)   # dict keeps element order

def check_row(doc_text, b, b_slow):
    """All mismatches of one to_bson() result (fast path on: b, off: b_slow)."""
    out = []
    if b != b_slow:
        out.append(("", "same bytes with ascii_fast_path off",
                    "differs: off=%s" % (b_slow or b"")[:64].hex()))
    if b is None:
        return out + [("", "bytea", "NULL")]
    try:
        if len(b) < 5 or len(b) != int.from_bytes(b[:4], "little"):
            raise ValueError("length prefix %d != %d bytes" % (
                int.from_bytes(b[:4], "little"), len(b)))
        raw_walk(b)
        compare(expected_from_text(doc_text), bson.decode(b, codec_options=DECODE_OPTS), "$", out)
    except Exception as e:   # malformed BSON
        out.append(("", "well-formed BSON", "%s: %s" % (type(e).__name__, e)))
    return out

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--alphabet", choices=["utf8", "latin1"], default="utf8")
    args = ap.parse_args()
    t0 = time.time()
    texts = generate(args.count, args.seed, args.alphabet)

    conn = psycopg2.connect("")
    conn.set_client_encoding("UTF8")   # the database may be LATIN1
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE TEMP TABLE t (id int, doc jsonb)")
    esc = lambda s: s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    data = "".join("%d\t%s\n" % (i, esc(t)) for i, t in enumerate(texts))
    cur.copy_expert("COPY t (id, doc) FROM STDIN", io.BytesIO(data.encode("utf-8")))
    t_load = time.time()

    failed = {}      # doc id or check label -> list of (path, expected, got)
    cur.execute("SET bson_out.ascii_fast_path = on")
    cur.execute("SELECT id, doc::text, to_bson(doc) FROM t ORDER BY id")
    rows = [(i, txt, None if b is None else bytes(b)) for i, txt, b in cur.fetchall()]
    # Placeholder (misspelt) GUCs are not listed in pg_settings.
    cur.execute("SELECT count(*) FROM pg_settings WHERE name = 'bson_out.ascii_fast_path'")
    if cur.fetchone()[0] != 1:
        failed["guc"] = [("", "GUC bson_out.ascii_fast_path defined", "not defined")]
    cur.execute("SET bson_out.ascii_fast_path = off")
    cur.execute("SELECT id, to_bson(doc) FROM t ORDER BY id")
    slow = {i: None if b is None else bytes(b) for i, b in cur.fetchall()}
    cur.execute("RESET bson_out.ascii_fast_path")
    t_sql = time.time()

    if len(rows) != args.count:
        failed["rows"] = [("", "%d rows" % args.count, "%d rows" % len(rows))]
    for i, txt, b in rows:
        out = check_row(txt, b, slow.get(i))
        if out:
            failed[i] = out

    for j, t in enumerate(ERROR_DOCS):
        try:
            cur.execute("SELECT to_bson(%s::jsonb)", (t,))
            got = "no error: " + bytes(cur.fetchone()[0])[:64].hex()
        except psycopg2.Error as e:
            got = None if e.pgcode == "22003" else "SQLSTATE %s: %s" % (e.pgcode, e.pgerror)
        if got is not None:
            failed["error%d" % j] = [("", "SQLSTATE 22003 for " + t[:100], got)]
    conn.close()

    texts_by_id = {i: txt for i, txt, _ in rows}
    for k, out in list(failed.items())[:20]:
        print("FAIL %s: %d mismatch(es)" % (k, len(out)))
        if k in texts_by_id:
            t = texts_by_id[k]
            print("  doc::text: %s" % (t if len(t) <= 300 else t[:300] + "...(%d chars)" % len(t)))
        for path, e, g in out[:3]:
            print("  at %s\n    expected: %s\n    got:      %s" % (path or "$", e, g))
    # M counts failed documents and error checks, plus one each for a missing
    # GUC or a wrong row count; N the documents and error checks that passed.
    total = args.count + len(ERROR_DOCS)
    passed = total - len([k for k in failed if k not in ("guc", "rows")])
    print("timing: generate+load %.1fs, queries %.1fs, check %.1fs"
          % (t_load - t0, t_sql - t_load, time.time() - t_sql), file=sys.stderr)
    print("crosscheck: %d passed, %d failed" % (passed, len(failed)))
    return 0 if not failed else 1

if __name__ == "__main__":
    sys.exit(main())
