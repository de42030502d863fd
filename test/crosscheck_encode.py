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
import argparse, io, json, math, random, struct, sys, time, traceback
from decimal import Context, Decimal, localcontext

sys.dont_write_bytecode = True   # no __pycache__ in the work tree
from crosscheck_common import pg_error, shorten   # before bson.json_util (see there)

import bson, psycopg2
from bson.codec_options import CodecOptions
from bson.decimal128 import Decimal128
from bson.int64 import Int64

sys.set_int_max_str_digits(0)   # jsonb prints e.g. 1e6000 with 6001 digits

class Num:
    """A JSON number kept as its exact text."""
    __slots__ = ("text",)
    def __init__(self, text): self.text = text
    def __repr__(self): return shorten(self.text, 60)

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
 1.0e-6176 1234567890123456789012345678901234e400 1e6144 -1e-6176 1e-323
 9999999999999999999999999999999999e400 9999999999999999999999999999999999e-6176
 1.500e-400 2.50000e-330 1.2340000e-6170 1.2345678901234567890123456789012340000e-400 0.000
 2.4703282292062327e-324 2.4703282292062328e-324 1.7976931348623158e308
 9007199254740993 9007199254740993.0 9007199254740993.00000000000000000001
 90.07199254740992 90.07199254740993 1e22 1e23 8.98846567431158e307""".split()
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
        self.tables = {}

    def text(self, nbytes, p_non, p_esc):
        """A string of exactly `nbytes` bytes in the server encoding: ASCII
        with probability p_non of a non-ASCII char and p_esc of a char that
        JSON escapes, per character."""
        table = self.tables.get((p_non, p_esc))
        if table is None:   # 256 slots, shared out by probability; cached
            n_non = round(256 * p_non) or (p_non > 0)
            n_esc = round(256 * p_esc) or (p_esc > 0)
            table = ([self.non_ascii[j % len(self.non_ascii)] for j in range(n_non)]
                     + [ESCAPES[j % len(ESCAPES)] for j in range(n_esc)])
            table += [ASCII[j % len(ASCII)] for j in range(256 - len(table))]
            self.tables[(p_non, p_esc)] = table
        s = "".join(map(table.__getitem__, self.r.randbytes(nbytes)))
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
        if x < 0.98:      # random IEEE doubles (all bit patterns) via repr()
            return repr(self.random_double())
        while True:       # hard cases, retried if they have no BSON value
            t = self.decimal128_number() if x < 0.99 else self.halfway_number()
            if classify(pg_numeric_text(t))[0] != "error":
                return t

    def random_double(self):
        while True:
            f = struct.unpack("<d", struct.pack("<Q", self.r.getrandbits(64)))[0]
            if math.isfinite(f):
                return f

    def decimal128_number(self):
        """Beyond double's range: 1..34 digits (plus trailing zeros that count
        at display scale), exponents near the double limits or anywhere."""
        r = self.r
        nd = r.randint(1, 34)
        m = str(r.randint(10**(nd - 1), 10**nd - 1)) + "0" * r.randint(0, 4)
        e = r.choice([r.randint(300, 420), r.randint(300, 6144)])
        return "%s%s.%se%d" % (r.choice(["", "-"]), m[0], m[1:] or "0",
                               e if r.random() < 0.5 else -e)

    def halfway_number(self):
        """The exact midpoint between two adjacent doubles, or it cut to
        17..40 digits, or that plus one unit in its last digit: decimal to
        double rounding must be exact here."""
        r = self.r
        f = abs(self.random_double())
        with localcontext(Context(prec=2000)):
            mid = ((Decimal(f) + Decimal(math.nextafter(f, math.inf))) / 2).normalize()
            k = r.randint(17, 40)
            sign, digits, exp = mid.as_tuple()
            if r.random() < 0.4 or len(digits) <= k:
                return str(mid)
            cut = Decimal((0, digits[:k], exp + len(digits) - k))
            return str(cut if r.random() < 0.5 else cut.next_plus())

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
                v = (Obj([(self.key(), v), ("n", Num(str(d)))]) if r.random() < 0.5
                     else [v, d % 2 == 0])
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
        return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + dump(x)
                               for k, x in v) + "}"
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
    if isinstance(b, str):   # to_bson raised
        return [("", "bytea", b)]
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

def to_bson_all(cur):
    """{id: to_bson bytes, None for NULL, or a str describing its error}.
    One query; if that fails, one query per row to find the failing rows."""
    conv = lambda b: None if b is None else bytes(b)
    try:
        cur.execute("SELECT id, to_bson(doc) FROM t ORDER BY id")
        return {i: conv(b) for i, b in cur.fetchall()}
    except psycopg2.Error:
        if cur.connection.closed:
            raise
    res = {}
    cur.execute("SELECT id FROM t ORDER BY id")
    for (i,) in cur.fetchall():
        try:
            cur.execute("SELECT to_bson(doc) FROM t WHERE id = %s", (i,))
            res[i] = conv(cur.fetchone()[0])
        except psycopg2.Error as e:
            if cur.connection.closed:
                raise
            res[i] = "error " + pg_error(e)
    return res

def run(texts):
    """Load, encode and check `texts`: (failures, rows, timestamps)."""
    times = [time.time()]
    conn = psycopg2.connect("")
    conn.set_client_encoding("UTF8")   # the database may be LATIN1
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE TEMP TABLE t (id int PRIMARY KEY, doc jsonb)")
    def esc(t):      # COPY text format
        return t.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    data = "".join("%d\t%s\n" % (i, esc(t)) for i, t in enumerate(texts))
    cur.copy_expert("COPY t (id, doc) FROM STDIN", io.BytesIO(data.encode("utf-8")))
    times.append(time.time())

    failed = {}      # doc id or check label -> list of (path, expected, got)
    cur.execute("SELECT id, doc::text FROM t ORDER BY id")
    doc_texts = cur.fetchall()
    cur.execute("SET bson_out.ascii_fast_path = on")
    fast = to_bson_all(cur)
    # Placeholder (misspelt) GUCs are not listed in pg_settings.
    cur.execute("SELECT count(*) FROM pg_settings WHERE name = 'bson_out.ascii_fast_path'")
    if cur.fetchone()[0] != 1:
        failed["guc"] = [("", "GUC bson_out.ascii_fast_path defined", "not defined")]
    cur.execute("SET bson_out.ascii_fast_path = off")
    slow = to_bson_all(cur)
    cur.execute("RESET bson_out.ascii_fast_path")
    times.append(time.time())

    if len(doc_texts) != len(texts):
        failed["rows"] = [("", "%d rows" % len(texts), "%d rows" % len(doc_texts))]
    rows = [(i, txt, fast.get(i)) for i, txt in doc_texts]
    for i, txt, b in rows:
        out = check_row(txt, b, slow.get(i))
        if out:
            failed[i] = out

    for j, t in enumerate(ERROR_DOCS):
        try:
            cur.execute("SELECT to_bson(%s::jsonb)", (t,))
            b = cur.fetchone()[0]
            got = "no error: " + ("NULL" if b is None else bytes(b)[:64].hex())
        except psycopg2.Error as e:
            if conn.closed:
                raise
            got = None if e.pgcode == "22003" else pg_error(e)
        if got is not None:
            failed["error%d" % j] = [("", "SQLSTATE 22003 for " + t[:100], got)]
    conn.close()
    times.append(time.time())
    return failed, rows, times

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--alphabet", choices=["utf8", "latin1"], default="utf8")
    args = ap.parse_args()
    t0 = time.time()
    texts = generate(args.count, args.seed, args.alphabet)
    total = args.count + len(ERROR_DOCS)
    try:
        failed, rows, times = run(texts)
    except Exception as e:   # lost connection, crashed server, ...
        traceback.print_exc()
        print("crosscheck aborted: %s: %s" % (type(e).__name__, e))
        print("crosscheck: 0 passed, %d failed" % total)
        return 1
    by_id = {i: (txt, b) for i, txt, b in rows}
    for k, out in list(failed.items())[:20]:
        print("FAIL %s: %d mismatch(es)" % ("doc %d" % k if k in by_id else k, len(out)))
        if k in by_id:
            t, b = by_id[k]
            print("  doc::text: %s" % shorten(t, 300))
            if isinstance(b, bytes):
                print("  to_bson:   %s (%d bytes)" % (shorten(b.hex(), 300), len(b)))
        for path, e, g in out[:3]:
            print("  at %s\n    expected: %s\n    got:      %s" % (path or "$", e, g))
    # M counts failed documents and error checks, plus one each for a missing
    # GUC or a wrong row count; N the documents and error checks that passed.
    passed = total - len([k for k in failed if k not in ("guc", "rows")])
    print("timing: generate %.1fs, load %.1fs, queries %.1fs, check %.1fs"
          % ((times[0] - t0,) + tuple(b - a for a, b in zip(times, times[1:]))), file=sys.stderr)
    print("crosscheck: %d passed, %d failed" % (passed, len(failed)))
    return 0 if not failed else 1

if __name__ == "__main__":
    sys.exit(main())
