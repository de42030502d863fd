#!/usr/bin/python3
"""Cross-check row_to_bson(record) against pymongo's independent BSON decoder.

Usage: /usr/bin/python3 test/crosscheck_rows.py [--count 3000] [--seed 1]

Generates deterministic random rows of a typed table (every type of the
row_to_bson mapping: integers, floats, numerics of several scales, strings,
bytea, uuid, dates and timestamps, json, jsonb, arrays of 1-3 dimensions,
nested composites, domains, an enum, output-function types), loads them with
COPY into a scratch schema on the server given by the libpq environment
(PGHOST, PGPORT, ...), with a dropped column and a column added after the load
(fast default), and compares row_to_bson(t) and row_to_bson(t, omit_nulls =>
true), decoded by pymongo, with an oracle computed here from the generated
values (only interval, inet and time, which map through their output
function, are compared with format('%s', col) from the same query). Also checks rows
that must fail (SQLSTATE 22008, 22003), anonymous records and datetimes beyond
Python's years 1..9999 (checked on the raw bytes); then the same rows with
bson_out.unmappable_values = fallback, which pymongo must decode: +-infinity
as 9999-12-31T23:59:59.999Z / 0001-01-01T00:00:00Z (naive and tz-aware), wide
numerics as strings equal to their text.
Ends with the line "crosscheck-rows: N passed, M failed"; exit status 0 iff
M == 0.
"""
import argparse, datetime as dt, io, json, math, os, random, re, struct, sys, time, traceback, uuid
from decimal import Decimal

import bson, psycopg2, psycopg2.extras
from bson.binary import Binary, UuidRepresentation
from bson.codec_options import CodecOptions
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.son import SON

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crosscheck_common import pg_error, shorten   # noqa: E402
# jsonb numbers map as to_bson maps them: reuse its oracle
from crosscheck_encode import classify, pg_numeric_text   # noqa: E402

SCHEMA = "crosscheck_rows"
EPOCH_ORD = dt.date(1970, 1, 1).toordinal()
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
EPOCH_AWARE = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# UNSPECIFIED: binary subtypes 3 and 4 both decode to Binary, with the subtype
DECODE_OPTS = CodecOptions(document_class=SON, tz_aware=True,
                           uuid_representation=UuidRepresentation.UNSPECIFIED)
F64_NAN = struct.pack("<d", float("nan"))

# Expected values are tagged tuples:
#   ("null",) ("bool", b) ("i32", n) ("i64", n) ("f64", x) ("dec", DecimalTuple)
#   ("str", s) ("bin", bytes, subtype) ("dt", ms) ("doc", [(key, exp), ...])
#   ("arr", [exp, ...]) ("sqltext", column): the column's ::text from the query
NULL = ("null",)

# ------------------------------------------------------------------ helpers
def quote(s):
    """An element of an array literal or a field of a composite literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

def copy_esc(s):
    """COPY text format."""
    return (s.replace("\\", "\\\\").replace("\n", "\\n")
            .replace("\r", "\\r").replace("\t", "\\t"))

def us_since_epoch(naive):
    d = naive - EPOCH_NAIVE
    return (d.days * 86400 + d.seconds) * 1000000 + d.microseconds

def days_from_civil(y, m, d):
    """Days since 1970-01-01 of a proleptic Gregorian date (astronomical
    year: 1 BC is 0), for dates Python's datetime cannot hold."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468

def ms_to_text(ms):
    try:
        return (EPOCH_AWARE + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except OverflowError:
        return "out of Python's range"

def show(e):
    k = e[0]
    if k == "f64":
        return "double %r (bits %s)" % (e[1], struct.pack(">d", e[1]).hex())
    if k == "dt":
        return "datetime %d ms (%s)" % (e[1], ms_to_text(e[1]))
    if k == "bin":
        return "binary subtype %d %s" % (e[2], shorten(e[1].hex(), 80))
    if k == "doc":
        return "document keys %s" % shorten([kk for kk, _ in e[1]], 200)
    if k == "arr":
        return "array[%d]" % len(e[1])
    if k == "null":
        return "null"
    return "%s %s" % (k, shorten(repr(e[1])))

def describe(g):
    if g is None:
        return "null"
    if type(g) is bool:
        return "bool %r" % g
    if type(g) is Int64:
        return "int64 %d" % g
    if type(g) is int:
        return "int32 %d" % g
    if type(g) is float:
        return "double %r (bits %s)" % (g, struct.pack(">d", g).hex())
    if type(g) is Decimal128:
        return "decimal128 %s %r" % (g, tuple(g.to_decimal().as_tuple()))
    if type(g) is str:
        return "string %s" % shorten(repr(g))
    if type(g) is bytes:
        return "binary subtype 0 %s" % shorten(g.hex(), 80)
    if type(g) is Binary:
        return "binary subtype %d %s" % (g.subtype, shorten(bytes(g).hex(), 80))
    if isinstance(g, dt.datetime):
        return "datetime %s (%s ms)" % (g.isoformat(), dt_ms(g) if g.tzinfo else "naive")
    if isinstance(g, SON):
        return "document keys %s" % shorten(list(g.keys()), 200)
    if isinstance(g, list):
        return "array[%d]" % len(g)
    return "%s %s" % (type(g).__name__, shorten(repr(g)))

def dt_ms(g):
    d = g - EPOCH_AWARE
    return (d.days * 86400 + d.seconds) * 1000 + d.microseconds // 1000

def compare(exp, got, path, out, sqltext):
    """Append (path, expected, got) for every difference to `out`."""
    k = exp[0]
    if k == "sqltext":
        exp = ("str", sqltext[exp[1]])
        k = "str"
    if k == "doc":
        if type(got) is not SON:
            return out.append((path, show(exp), describe(got)))
        ek, gk = [kk for kk, _ in exp[1]], list(got.keys())
        if ek != gk:
            return out.append((path, "keys %s" % ek, "keys %s" % gk))
        for kk, e in exp[1]:
            compare(e, got[kk], "%s.%s" % (path, kk) if path else kk, out, sqltext)
        return
    if k == "arr":
        if type(got) is not list or len(got) != len(exp[1]):
            return out.append((path, show(exp), describe(got)))
        for i, (e, g) in enumerate(zip(exp[1], got)):
            compare(e, g, "%s[%d]" % (path, i), out, sqltext)
        return
    v = exp[1] if len(exp) > 1 else None
    if k == "null":
        ok = got is None
    elif k == "bool":
        ok = type(got) is bool and got == v
    elif k == "i32":
        ok = type(got) is int and got == v
    elif k == "i64":
        ok = type(got) is Int64 and got == v
    elif k == "f64":
        ok = type(got) is float and struct.pack("<d", got) == struct.pack("<d", v)
    elif k == "dec":
        ok = type(got) is Decimal128 and got.to_decimal().as_tuple() == v
    elif k == "str":
        ok = type(got) is str and got == v
    elif k == "bin":
        if exp[2] == 0:
            ok = type(got) is bytes and got == v
        else:
            ok = type(got) is Binary and got.subtype == exp[2] and bytes(got) == v
    elif k == "dt":
        ok = (isinstance(got, dt.datetime) and got.tzinfo is not None
              and got.utcoffset() == dt.timedelta(0) and got.microsecond % 1000 == 0
              and dt_ms(got) == v)
    else:
        raise AssertionError(exp)
    if not ok:
        out.append((path, show(exp), describe(got)))

# ------------------------------------------------------------- the oracle
def dec_expect(sign, coef, scale):
    """numeric (-1)^sign * coef * 10^-scale at display scale `scale` >= 0:
    the exact decimal128, coefficient = the digits at display scale, trailing
    zeros dropped only as needed (<= 34 digits, exponent >= -6176); None if
    no exact decimal128 exists."""
    coef = coef.lstrip("0")
    e = -scale
    if not coef:                       # zero: numeric has no -0
        return Decimal((0, (0,), max(e, -6176))).as_tuple()
    drop = min(max(len(coef) - 34, -6176 - e, 0), len(coef) - len(coef.rstrip("0")))
    coef, e = coef[:len(coef) - drop], e + drop
    if len(coef) > 34 or e < -6176 or e > 6111:
        return None
    return Decimal((sign, tuple(map(int, coef)), e)).as_tuple()

def dec_from_literal(lit):
    """Expected decimal128 tuple of a numeric input literal (positional or
    DIGITSeEXP): numeric_in's display scale is max(0, fraction digits - exp)."""
    if lit in ("NaN", "Infinity", "-Infinity"):
        return Decimal(lit).as_tuple()
    m = re.fullmatch(r"(-?)(\d+)(?:\.(\d*))?(?:e(-?\d+))?", lit)
    sign, ip, fp, ex = m.group(1), m.group(2), m.group(3) or "", int(m.group(4) or 0)
    digits, scale = ip + fp, len(fp) - ex
    if scale < 0:
        digits, scale = digits + "0" * -scale, 0
    return dec_expect(1 if sign else 0, digits, scale)

def json_number(text):
    """json (text) numbers by written form."""
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", text):
        v = int(text)
        if -2**31 <= v < 2**31:
            return ("i32", v)
        if -2**63 <= v < 2**63:
            return ("i64", v)
    f = float(text)
    nonzero = re.sub(r"[eE].*", "", text).strip("-+0.") != ""
    if math.isinf(f) or (f == 0 and nonzero):
        return ("dec", Decimal(text).as_tuple())
    return ("f64", f)

def jsonb_number(text):
    kind, v = classify(pg_numeric_text(text))
    assert kind != "error", text
    return ({"int32": "i32", "int64": "i64", "double": "f64", "dec": "dec"}[kind], v)

# --------------------------------------------------------------- the types
ASCII = [chr(c) for c in range(0x20, 0x7f)]
SPECIAL = ["\\", '"', ",", "{", "}", "(", ")", " ", "\t", "\n", "\r", "'", "\x01", "\x7f",
           "NULL"]
NON_ASCII = ["é", "ß", "Ω", "ж", "日", "本", "語", "😀", "🎉", "\u0301", "\u00a0",
             "\u2028", "\u07ff", "\u0800", "\ufffd", "\uffff", "\U00010000", "\U0010ffff"]

def rand_text(r, maxlen, p_non=0.15, p_special=0.08, nul=False):
    n = r.choice([0, 1, 2, 3, 5, 8, 13, 20, 25, 26, 30, 40, maxlen])
    n = min(n, maxlen)
    out = []
    for _ in range(n):
        x = r.random()
        if x < p_non:
            out.append(r.choice(NON_ASCII))
        elif x < p_non + p_special:
            out.append(r.choice(SPECIAL))
        elif nul and x < p_non + p_special + 0.02:
            out.append("\x00")
        else:
            out.append(r.choice(ASCII))
    return "".join(out)[:maxlen]

class Ty:
    sql = None
    def lit(self, v): return str(v)
    def exp(self, v, omit): raise NotImplementedError

class BoolT(Ty):
    sql = "boolean"
    def gen(self, r): return r.random() < 0.5
    def lit(self, v): return "t" if v else "f"
    def exp(self, v, omit): return ("bool", v)

class IntT(Ty):
    def __init__(self, bits, sql, lo=None):
        self.bits, self.sql = bits, sql
        self.lo = -2**(bits - 1) if lo is None else lo
        self.hi = 2**(bits - 1) - 1
        self.bounds = [b for b in (self.lo, self.hi, 0, -1, 1, self.lo + 1, self.hi - 1,
                                   2**31 - 1, -2**31, 2**31, -2**31 - 1, 32767, -32768)
                       if self.lo <= b <= self.hi]
    def gen(self, r):
        if r.random() < 0.25:
            return r.choice(self.bounds)
        while True:
            v = r.getrandbits(r.randint(1, self.bits)) * r.choice([1, -1])
            if self.lo <= v <= self.hi:
                return v
    def exp(self, v, omit): return ("i64" if self.bits == 64 else "i32", v)

def f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]

class Float4T(Ty):
    sql = "real"
    SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, f32(1), f32(0x80000001),
                f32(0x007fffff), f32(0x00800000), f32(0x7f7fffff), f32(0xff7fffff),
                f32(0x3dcccccd), f32(0x3eaaaaab), f32(0x4b800001), 1.0, -1.5]
    def gen(self, r):
        if r.random() < 0.2:
            return r.choice(self.SPECIALS)
        while True:
            b = r.getrandbits(32)
            if (b >> 23) & 0xff != 0xff:
                return f32(b)
    def lit(self, v): return float_lit(v)
    def exp(self, v, omit): return ("f64", v)

def float_lit(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)

class Float8T(Ty):
    sql = "double precision"
    SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 5e-324, -5e-324,
                2.225073858507201e-308, 2.2250738585072014e-308, 1.7976931348623157e308,
                -1.7976931348623157e308, 0.1, 1 / 3, 2.0**53 + 2, 1e22, 1e23, -1e-300]
    def gen(self, r):
        x = r.random()
        if x < 0.2:
            return r.choice(self.SPECIALS)
        if x < 0.4:
            return round(r.uniform(-1e6, 1e6), r.randint(0, 6))
        while True:
            v = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
            if math.isfinite(v):
                return v
    def lit(self, v): return float_lit(v)
    def exp(self, v, omit): return ("f64", v)

class NumericT(Ty):
    """numeric(p, s), or unconstrained with p None. Values are input
    literals; the oracle derives the expected decimal128 from them."""
    BOUNDS = (["0", "0.000", "-0", "-0.00", "1", "-1", "12.30", "0.1", "-0.000001",
               "100000000000000000000", "9223372036854775808", "-2147483648",
               "9" * 34, "-" + "9" * 34, "12345678901234567.89012345678901234",
               "NaN", "Infinity", "-Infinity",
               "9" * 34 + "e6111", "-" + "9" * 34 + "e6111", "1e6144", "-1e6144",
               "1e-6176", "-1e-6176", "1.0e-6176", "1234567890123456789012345678901234e-6176",
               "1234." + "0" * 34, "1" + "0" * 40, "1e40", "1.500e-400", "5e-400",
               "0." + "0" * 6175 + "1", "-0." + "0" * 6175 + "3"])
    def __init__(self, p=None, s=None):
        self.p, self.s = p, s
        self.sql = "numeric" if p is None else "numeric(%d,%d)" % (p, s)
    def gen(self, r):
        while True:
            lit = self._gen(r)
            if self.exp_tuple(lit) is not None:
                return lit
    def _gen(self, r):
        if self.p is not None:      # numeric(p, s): the column's scale pads
            ip = str(r.randint(0, 10**r.randint(0, self.p - self.s) - 1))
            fp = str(r.randint(0, 10**self.s - 1)).rjust(self.s, "0")[:r.randint(0, self.s)]
            return r.choice(["", "", "-"]) + ip + ("." + fp if fp or r.random() < 0.1 else "")
        x = r.random()
        if x < 0.12:
            return r.choice(self.BOUNDS)
        nd = r.randint(1, 34)
        coef = str(r.randint(10**(nd - 1), 10**nd - 1))
        sign = r.choice(["", "-"])
        if x < 0.75:                # positional, scale 0..40
            sc = r.randint(0, 40)
            coef = coef.rjust(sc + 1, "0")
            return sign + coef[:len(coef) - sc] + ("." + coef[len(coef) - sc:] if sc else "")
        coef += "0" * r.choice([0, 0, 1, 3])   # trailing zeros count at display scale
        return "%s%se%d" % (sign, coef, r.randint(-6176 - 3, 6145 - len(coef)))
    def exp_tuple(self, lit):
        t = dec_from_literal(lit)
        if t is not None and self.s is not None and t.exponent != -self.s:
            # numeric(p, s) shows s decimals: pad the coefficient
            pad = t.exponent + self.s
            digits = t.digits + (0,) * pad if t.digits != (0,) else (0,)
            t = Decimal((t.sign, digits, -self.s)).as_tuple()
        return t
    def exp(self, v, omit): return ("dec", self.exp_tuple(v))

class TextT(Ty):
    def __init__(self, sql, maxlen, pad=None, maxbytes=None, p_long=0):
        self.sql, self.maxlen, self.pad, self.maxbytes = sql, maxlen, pad, maxbytes
        self.p_long = p_long
    def gen(self, r):
        if r.random() < self.p_long:    # TOASTed: compressed or out of line
            chunk = rand_text(r, 40) or "x"
            s = (chunk * (r.randint(2000, 40000) // len(chunk) + 1))[:r.randint(2000, 40000)]
            if r.random() < 0.5:
                s = "".join(r.choice(NON_ASCII + ASCII) for _ in range(r.randint(2000, 8000)))
            return s
        s = rand_text(r, self.maxlen)
        if self.maxbytes:
            while len(s.encode()) > self.maxbytes:
                s = s[:-1]
        return s
    def lit(self, v): return v
    def exp(self, v, omit): return ("str", v.ljust(self.pad) if self.pad else v)

class ByteaT(Ty):
    sql = "bytea"
    def __init__(self, p_long=0):
        self.p_long = p_long
    def gen(self, r):
        n = 0 if r.random() < 0.2 else r.randint(1, 40)
        if r.random() < self.p_long:    # stored out of line
            n = r.randint(3000, 50000)
        return bytes(r.getrandbits(8) for _ in range(n))
    def lit(self, v): return "\\x" + v.hex()
    def exp(self, v, omit): return ("bin", v, 0)

class UuidT(Ty):
    sql = "uuid"
    def gen(self, r):
        return uuid.UUID(int=r.choice([0, 2**128 - 1]) if r.random() < 0.05 else r.getrandbits(128))
    def lit(self, v): return str(v)
    def exp(self, v, omit): return ("bin", v.bytes, 4)

DATE_MAX_ORD = dt.date(9999, 12, 31).toordinal()

class DateT(Ty):
    sql = "date"
    BOUNDS = [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31), dt.date(1970, 1, 1),
              dt.date(1900, 1, 1), dt.date(2000, 2, 29), dt.date(1582, 10, 10), dt.date(1, 12, 31)]
    def gen(self, r):
        if r.random() < 0.15:
            return r.choice(self.BOUNDS)
        return dt.date.fromordinal(r.randint(1, DATE_MAX_ORD))
    def lit(self, v): return "%04d-%02d-%02d" % (v.year, v.month, v.day)
    def exp(self, v, omit): return ("dt", (v.toordinal() - EPOCH_ORD) * 86400000)

TS_BOUNDS = [dt.datetime(1969, 12, 31, 23, 59, 59, 999500),   # -0.5 ms -> -1 ms
             dt.datetime(1969, 12, 31, 23, 59, 59, 999999),   # -1 us -> -1 ms
             dt.datetime(1969, 12, 31, 23, 59, 59, 999000),   # -1 ms exactly
             dt.datetime(1969, 12, 31, 23, 59, 59, 998001),   # -1.999 ms -> -2 ms
             dt.datetime(1970, 1, 1, 0, 0, 0, 999),           # 0.999 ms -> 0
             dt.datetime(1970, 1, 1, 0, 0, 0, 1000),
             dt.datetime(1970, 1, 1),
             dt.datetime(1, 1, 1), dt.datetime(1, 1, 1, 0, 0, 0, 1),
             dt.datetime(1, 1, 1, 0, 0, 0, 1999),
             dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
             dt.datetime(1900, 3, 1, 12, 0, 0, 500), dt.datetime(2038, 1, 19, 3, 14, 8, 1)]

def rand_ts(r):
    if r.random() < 0.2:
        return r.choice(TS_BOUNDS)
    d = dt.date.fromordinal(r.randint(1, DATE_MAX_ORD))
    us = r.randint(0, 86400 * 10**6 - 1)
    if r.random() < 0.3:
        us -= us % 1000 * r.choice([0, 1])
    return dt.datetime(d.year, d.month, d.day) + dt.timedelta(microseconds=us)

def ts_lit(v):
    return "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (v.year, v.month, v.day, v.hour,
                                                    v.minute, v.second, v.microsecond)

class TimestampT(Ty):
    sql = "timestamp"
    def gen(self, r): return rand_ts(r)
    def lit(self, v): return ts_lit(v)
    def exp(self, v, omit): return ("dt", us_since_epoch(v) // 1000)

class TimestamptzT(Ty):
    """Values (UTC instant, offset in minutes), written as local time + offset."""
    sql = "timestamptz"
    OFFSETS = [0, 330, -480, 765, -570, 840, -720, 59, -1, 60]
    def gen(self, r): return (rand_ts(r), r.choice(self.OFFSETS))
    def lit(self, v):
        utc, off = v
        try:
            local = utc + dt.timedelta(minutes=off)
        except OverflowError:
            local, off = utc, 0
        return ts_lit(local) + "%s%02d:%02d" % ("-" if off < 0 else "+", abs(off) // 60, abs(off) % 60)
    def exp(self, v, omit): return ("dt", us_since_epoch(v[0]) // 1000)

# JSON values: JObj (ordered pairs), list, JNum (text), str, bool, None
class JObj(list): pass
class JNum(str): pass

JSON_NUMS = ["0", "-0", "1", "-1", "2147483647", "2147483648", "-2147483648", "-2147483649",
             "9223372036854775807", "-9223372036854775808", "9223372036854775808",
             "1.0", "-0.0", "0.5", "1e2", "1E+2", "12e-1", "1.5e300", "5e-324", "1e400",
             "-2.5e-400", "0.1", "100000000000000000000"]

def rand_json(r, depth, nul):
    x = r.random()
    if depth < 3 and x < 0.3:
        if x < 0.15:
            o, seen = JObj(), set()
            for _ in range(r.randint(0, 5)):
                k = rand_text(r, 12, p_special=0.1)
                if k not in seen:
                    seen.add(k)
                    o.append((k, rand_json(r, depth + 1, nul)))
            return o
        return [rand_json(r, depth + 1, nul) for _ in range(r.randint(0, 5))]
    x = r.random()
    if x < 0.35:
        return rand_text(r, 30, nul=nul)
    if x < 0.85:
        y = r.random()
        if y < 0.35:
            return JNum(r.choice(JSON_NUMS))
        if y < 0.7:
            return JNum(str(r.randint(-2**r.randint(1, 64), 2**r.randint(1, 64))))
        return JNum(repr(Float8T().gen(r)).replace("inf", "1").replace("nan", "2"))
    return r.choice([True, False, None])

def dump_json(v, r):
    sp = r.choice(["", " ", "\n  "])
    if isinstance(v, JObj):
        return "{" + sp + ("," + sp).join(
            "%s%s:%s%s" % (dump_str(k, r), r.choice(["", " "]), sp, dump_json(x, r))
            for k, x in v) + sp + "}"
    if isinstance(v, list):
        return "[" + ("," + sp).join(dump_json(x, r) for x in v) + "]"
    if isinstance(v, JNum):
        return str(v)
    if isinstance(v, str):
        return dump_str(v, r)
    return {True: "true", False: "false", None: "null"}[v]

def dump_str(s, r):
    return json.dumps(s, ensure_ascii=r.random() < 0.3)

def json_expect(v, jsonb):
    if isinstance(v, JObj):
        items = v
        if jsonb:   # jsonb's order: by length, then bytewise
            items = sorted(v, key=lambda kv: (len(kv[0].encode()), kv[0].encode()))
        return ("doc", [(k, json_expect(x, jsonb)) for k, x in items])
    if isinstance(v, list):
        return ("arr", [json_expect(x, jsonb) for x in v])
    if isinstance(v, JNum):
        return jsonb_number(v) if jsonb else json_number(v)
    if isinstance(v, str):
        return ("str", v)
    if v is None:
        return NULL
    return ("bool", v)

class JsonT(Ty):
    def __init__(self, jsonb):
        self.jsonb = jsonb
        self.sql = "jsonb" if jsonb else "json"
    def gen(self, r):
        v = rand_json(r, 0, nul=not self.jsonb)
        if r.random() < 0.7:    # mostly objects, but also arrays and scalars
            v = JObj([("zeta", v), ("alpha", rand_json(r, 1, False)), ("_id", JNum(str(r.randint(0, 99)))),
                      ("b", rand_json(r, 1, False))][:r.randint(0, 4)])
        return (dump_json(v, r), v)
    def lit(self, v): return v[0]
    def exp(self, v, omit): return json_expect(v[1], self.jsonb)

class ArrVal:
    """A rectangular array: nested lists with None, and optional bounds."""
    def __init__(self, items, prefix=""):
        self.items, self.prefix = items, prefix

class ArrT(Ty):
    def __init__(self, elem, sql=None, maxdim=3):
        self.elem, self.maxdim = elem, maxdim
        self.sql = sql or elem.sql + "[]"
    def gen(self, r):
        if r.random() < 0.1:
            return ArrVal([])
        dims = [r.randint(1, 3) for _ in range(r.randint(1, self.maxdim))]
        def build(level):
            if level == len(dims):
                return None if r.random() < 0.15 else self.elem.gen(r)
            return [build(level + 1) for _ in range(dims[level])]
        prefix = ""
        if r.random() < 0.2:    # non-default lower bounds
            lbs = [r.randint(-3, 5) for _ in dims]
            prefix = "".join("[%d:%d]" % (lb, lb + n - 1) for lb, n in zip(lbs, dims)) + "="
        return ArrVal(build(0), prefix)
    def lit(self, v):
        def lit1(x):
            if isinstance(x, list):
                return "{" + ",".join(lit1(y) for y in x) + "}"
            return "NULL" if x is None else quote(self.elem.lit(x))
        return v.prefix + lit1(v.items)
    def exp(self, v, omit):
        def exp1(x):
            if isinstance(x, list):
                return ("arr", [exp1(y) for y in x])
            return NULL if x is None else self.elem.exp(x, omit)
        return exp1(v.items)

class CompT(Ty):
    def __init__(self, sql, fields, p_null=0.2):
        self.sql, self.fields, self.p_null = sql, fields, p_null
    def gen(self, r):
        allnull = r.random() < 0.05
        return tuple(None if allnull or r.random() < self.p_null else t.gen(r)
                     for _, t in self.fields)
    def lit(self, v):
        return "(" + ",".join("" if x is None else quote(t.lit(x))
                              for (_, t), x in zip(self.fields, v)) + ")"
    def exp(self, v, omit):
        return ("doc", [(n, NULL if x is None else t.exp(x, omit))
                        for (n, t), x in zip(self.fields, v) if not (omit and x is None)])

class EnumT(Ty):
    LABELS = ["sad", "ok", "happy", "très content", "with space", "日本", 'a"quote', "comma,x",
              "back\\slash", "NULL"]
    sql = "mood"
    def gen(self, r): return r.choice(self.LABELS)
    def exp(self, v, omit): return ("str", v)

class OutT(Ty):
    """A type written with its output function: compared with col::text."""
    def __init__(self, sql, gen):
        self.sql, self._gen = sql, gen
        self.col = None
    def gen(self, r): return self._gen(r)
    def exp(self, v, omit): return ("sqltext", self.col)

def rand_interval(r):
    x = r.random()
    if x < 0.3:
        return "P%dY%dM%dDT%dH%dM%d.%06dS" % tuple(r.randint(0, 50) for _ in range(7))
    return "%d years %d mons %d days %d:%02d:%02d.%06d" % (
        r.randint(-100, 100), r.randint(-11, 11), r.randint(-40, 40), r.randint(-99, 99),
        r.randint(0, 59), r.randint(0, 59), r.randint(0, 999999))

def rand_inet(r):
    if r.random() < 0.5:
        return "%d.%d.%d.%d/%d" % (tuple(r.randint(0, 255) for _ in range(4)) + (r.randint(0, 32),))
    return ":".join("%x" % r.getrandbits(16) for _ in range(8)) + "/%d" % r.randint(0, 128)

def rand_time(r):
    if r.random() < 0.05:
        return "24:00:00"
    return "%02d:%02d:%02d.%06d" % (r.randint(0, 23), r.randint(0, 59), r.randint(0, 59),
                                    r.choice([0, r.randint(0, 999999)]))

# The schema
INT4 = IntT(32, "integer")
NUM = NumericT()
TEXT = TextT("text", 60)
MOOD = EnumT()
INNER = CompT("inner_t", [("a", INT4), ("b", TEXT), ("n", NUM), ("d", DateT()),
                          ("tags", ArrT(TEXT, maxdim=2)), ("u", UuidT()), ("raw", ByteaT()),
                          ("f", Float8T())])
INNERDOM = CompT("innerdom", INNER.fields)
OUTER = CompT("outer_t", [("x", IntT(64, "bigint")), ("label", TextT("varchar(10)", 10)),
                          ("inr", INNER), ("items", ArrT(INNER, maxdim=2)), ("flag", BoolT()),
                          ("ts", TimestamptzT()), ("mood", MOOD), ("dom", INNERDOM)])

COLUMNS = [   # (name, type); "gone" is dropped after the load, "late" added
    ("b", BoolT()), ("i2", IntT(16, "smallint")), ("i4", INT4), ("i8", IntT(64, "bigint")),
    ("gone", TextT("text", 10)),
    ("f4", Float4T()), ("f8", Float8T()),
    ("n2", NumericT(12, 2)), ("n10", NumericT(30, 10)), ("n", NUM),
    ("txt", TextT("text", 60, p_long=0.02)), ("vc", TextT("varchar(20)", 20)), ("ch", TextT("char(5)", 5, pad=5)),
    ("nm", TextT("name", 63, maxbytes=63)), ("bin", ByteaT(p_long=0.02)), ("u", UuidT()),
    ("d", DateT()), ("ts", TimestampT()), ("tstz", TimestamptzT()),
    ("js", JsonT(False)), ("jb", JsonT(True)),
    ("ia", ArrT(INT4)), ("sa", ArrT(TEXT)), ("na", ArrT(NUM, maxdim=1)),
    ("comp", OUTER), ("di", IntT(32, "posint", lo=1)), ("da", ArrT(INT4, sql="intarr")),
    ("mood", MOOD), ("moods", ArrT(MOOD)),
    ("iv", OutT("interval", rand_interval)), ("ip", OutT("inet", rand_inet)),
    ("tm", OutT("time", rand_time)),
]
OUT_COLS = [n for n, t in COLUMNS if isinstance(t, OutT)]
for n, t in COLUMNS:
    if isinstance(t, OutT):
        t.col = n
LATE_DEFAULT = "late default ✓"
LATE = TextT("text", 20)

SETUP = """
DROP SCHEMA IF EXISTS {s} CASCADE;
CREATE SCHEMA {s};
SET search_path = {s}, public;
CREATE TYPE mood AS ENUM ({labels});
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE DOMAIN intarr AS integer[];
CREATE TYPE inner_t AS (a integer, gone_attr text, b text, n numeric, d date, tags text[],
                        u uuid, raw bytea, f double precision);
ALTER TYPE inner_t DROP ATTRIBUTE gone_attr;
CREATE DOMAIN innerdom AS inner_t;
CREATE TYPE outer_t AS (x bigint, label varchar(10), inr inner_t, items inner_t[],
                        flag boolean, ts timestamptz, mood mood, dom innerdom);
CREATE TABLE t (id integer PRIMARY KEY, {cols});
"""

# Rows that must fail, one by one: (values for table e, SQLSTATE)
ERROR_ROWS = [
    ("d", "infinity", "22008"),
    ("ts", "-infinity", "22008"),
    ("tstz", "infinity", "22008"),
    ("n", "1234567890123456789012345678901234567891", "22003"),
    ("c", '(1,x,-1.234567890123456789012345678901234567891,,,,,)', "22003"),
    ("c", '(1,x,1,-infinity,,,,)', "22008"),
    ("na", "{1,NULL,1e-6177}", "22003"),
]

# ---------------------------------------------------------------- generate
def generate(count, seed):
    r = random.Random(seed)
    rows = []
    for i in range(count):
        mode = i % 50
        row = {}
        for n, t in COLUMNS:
            if mode == 1 or (mode != 2 and r.random() < 0.1):
                row[n] = None
            else:
                row[n] = t.gen(r)
        # the late column: its default, or (every fifth row, and the all-NULL
        # rows) updated
        row["late"] = LATE_DEFAULT
        row["updated"] = i % 5 == 0 or mode == 1
        if row["updated"]:
            row["late"] = None if mode == 1 or r.random() < 0.2 else LATE.gen(r)
        rows.append(row)
    return rows

def expected(i, row, omit):
    fields = [("id", ("i32", i))]
    for n, t in COLUMNS + [("late", LATE)]:
        if n == "gone":
            continue
        v = row[n]
        if v is None:
            if not omit:
                fields.append((n, NULL))
        else:
            fields.append((n, t.exp(v, omit)))
    return ("doc", fields)

# ------------------------------------------------------------------- run
def check_bytes(b, exp, sqltext, out, label):
    if b is None:
        return out.append((label, show(exp), "SQL NULL"))
    if isinstance(b, str):
        return out.append((label, show(exp), b))
    try:
        if len(b) < 5 or int.from_bytes(b[:4], "little") != len(b):
            raise ValueError("length prefix %d != %d bytes" % (int.from_bytes(b[:4], "little"), len(b)))
        got = bson.decode(b, codec_options=DECODE_OPTS)
    except Exception as e:
        return out.append((label, "well-formed BSON", "%s: %s" % (type(e).__name__, e)))
    mism = []
    compare(exp, got, "", mism, sqltext)
    out.extend(("%s %s" % (label, p) if p else label, e, g) for p, e, g in mism)

def fetch_all(cur):
    """{id: (bytes full, bytes omit, {col: text})}; a failing row gives its
    error text in place of the bytes."""
    q = ("SELECT id, row_to_bson(t), row_to_bson(t, omit_nulls => true), %s FROM t"
         % ", ".join("format('%%s', %s)" % c for c in OUT_COLS))
    conv = lambda b: None if b is None else bytes(b)
    try:
        cur.execute(q + " ORDER BY id")
        return {rec[0]: (conv(rec[1]), conv(rec[2]), dict(zip(OUT_COLS, rec[3:])))
                for rec in cur.fetchall()}
    except psycopg2.Error:
        if cur.connection.closed:
            raise
    res = {}
    cur.execute("SELECT id FROM t ORDER BY id")
    for (i,) in cur.fetchall():
        try:
            cur.execute(q.replace("%", "%%") + " WHERE id = %s", (i,))
            rec = cur.fetchone()
            res[i] = (conv(rec[1]), conv(rec[2]), dict(zip(OUT_COLS, rec[3:])))
        except psycopg2.Error as e:
            if cur.connection.closed:
                raise
            res[i] = ("error " + pg_error(e),) * 2 + ({},)
    return res

def extra_checks(cur):
    """{label: [(where, expected, got)]} for checks beyond the table."""
    failed = {}
    # anonymous records, nested, in arrays, with and without omit_nulls
    for omit in (False, True):
        cur.execute("SELECT row_to_bson(ROW(1, ROW('x'::text, NULL::int), "
                    "ARRAY[ROW(2::int2, NULL::text), NULL], NULL::int), %s)", (omit,))
        b = bytes(cur.fetchone()[0])
        inner = [("f1", ("str", "x"))] + ([] if omit else [("f2", NULL)])
        elem = [("f1", ("i32", 2))] + ([] if omit else [("f2", NULL)])
        exp = ("doc", [("f1", ("i32", 1)), ("f2", ("doc", inner)),
                       ("f3", ("arr", [("doc", elem), NULL]))] + ([] if omit else [("f4", NULL)]))
        out = []
        check_bytes(b, exp, {}, out, "anonymous record")
        if out:
            failed["anonymous record, omit_nulls=%s" % omit] = out
    # a subquery row: non-ASCII keys, numeric display scale
    cur.execute("""SELECT row_to_bson(s, true) FROM (SELECT 1 AS "ключ", NULL::text AS "b c",
                   2.50::numeric AS x, 'a'::char(3) AS y) s""")
    out = []
    check_bytes(bytes(cur.fetchone()[0]),
                ("doc", [("ключ", ("i32", 1)), ("x", ("dec", Decimal("2.50").as_tuple())),
                         ("y", ("str", "a  "))]), {}, out, "subquery row")
    if out:
        failed["subquery row"] = out
    # datetimes beyond Python's datetime, checked on the raw bytes
    day = 86400000
    cases = [
        ("'4713-01-01 BC'::date", days_from_civil(-4712, 1, 1) * day),
        ("'5874897-12-31'::date", days_from_civil(5874897, 12, 31) * day),
        ("'0001-12-31 BC'::date", days_from_civil(0, 12, 31) * day),
        ("'294276-12-31 23:59:59.999999'::timestamp",
         days_from_civil(294276, 12, 31) * day + 86399999),
        ("'4713-11-24 00:00:00.001501 BC'::timestamp", days_from_civil(-4712, 11, 24) * day + 1),
        ("'0001-01-01 00:00:00.0005 BC'::timestamp", days_from_civil(0, 1, 1) * day),
        ("'4713-11-24 00:00:00.0009+00 BC'::timestamptz", days_from_civil(-4712, 11, 24) * day),
        ("'1969-12-31 23:59:59.9995-01:00'::timestamptz", 3600 * 1000 - 1),
        # the last microseconds of PostgreSQL's range: ms since 1970 fit int64
        # easily, but microseconds since 1970 do not
        ("'294247-01-10 04:00:54.775807'::timestamp", 9223372036854775),
        ("'294247-01-10 04:00:54.775808'::timestamp", 9223372036854775),
        ("'294276-12-31 23:59:59.999999+00'::timestamptz",
         days_from_civil(294276, 12, 31) * day + 86399999),
    ]
    for sql, ms in cases:
        want = struct.pack("<i", 17) + b"\x09f1\x00" + struct.pack("<q", ms) + b"\x00"
        try:
            cur.execute("SELECT row_to_bson(ROW(%s))" % sql)
            got = bytes(cur.fetchone()[0])
            if got != want:
                failed["datetime " + sql] = [("f1", "datetime %d ms: %s" % (ms, want.hex()),
                                              "%s" % got.hex())]
        except psycopg2.Error as e:
            if cur.connection.closed:
                raise
            failed["datetime " + sql] = [("f1", "datetime %d ms" % ms, pg_error(e))]
    return failed, 2 + 1 + len(cases)

def error_checks(cur):
    failed = {}
    cur.execute("CREATE TABLE e (id integer, d date, ts timestamp, tstz timestamptz, "
                "n numeric, c inner_t, na numeric[])")
    for j, (col, val, _) in enumerate(ERROR_ROWS):
        cur.execute("INSERT INTO e (id, %s) VALUES (%%s, %%s)" % col, (j, val))
    for j, (col, val, state) in enumerate(ERROR_ROWS):
        for omit in (False, True):
            try:
                cur.execute("SELECT row_to_bson(e, %s) FROM e WHERE id = %s", (omit, j))
                b = cur.fetchone()[0]
                got = "no error: " + ("NULL" if b is None else bytes(b)[:64].hex())
            except psycopg2.Error as e:
                if cur.connection.closed:
                    raise
                got = None if e.pgcode == state else pg_error(e)
            if got is not None:
                failed.setdefault("error row %d" % j, []).append(
                    ("%s (omit_nulls=%s)" % (col, omit),
                     "SQLSTATE %s for %s = %s" % (state, col, shorten(val, 60)), got))
    return failed, len(ERROR_ROWS)

# The fallback's datetimes: the last millisecond of Python's datetime and its
# first instant, the extremes pymongo decodes (one millisecond beyond either is
# "date value out of range")
FALLBACK_MAX = dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=dt.timezone.utc)
FALLBACK_MIN = dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc)

def fallback_checks(cur):
    """ERROR_ROWS again, with bson_out.unmappable_values = fallback: each row
    decodes in pymongo, naive and tz-aware, with the fallback's values."""
    failed = {}
    cur.execute("SET bson_out.unmappable_values = fallback")
    # row -> (path, expected): a datetime, or the SQL text of a numeric
    want = {0: (("d",), FALLBACK_MAX), 1: (("ts",), FALLBACK_MIN), 2: (("tstz",), FALLBACK_MAX),
            3: (("n",), "n::text"), 4: (("c", "n"), "(c).n::text"),
            5: (("c", "d"), FALLBACK_MIN), 6: (("na", 2), "na[3]::text")}
    for j, (path, exp) in want.items():
        text = exp if isinstance(exp, str) else "NULL"
        try:
            cur.execute("SELECT row_to_bson(e), %s FROM e WHERE id = %%s" % text, (j,))
            raw, sqltext = cur.fetchone()
            for tz in (True, False):
                doc = bson.decode(bytes(raw), CodecOptions(tz_aware=tz))
                got = doc
                for step in path:
                    got = got[step]
                if isinstance(exp, str):
                    ok = isinstance(got, str) and got == sqltext
                    shown = "string %s" % shorten(sqltext, 60)
                else:
                    ok = got == (exp if tz else exp.replace(tzinfo=None))
                    shown = "datetime %s" % exp.isoformat()
                if not ok:
                    failed.setdefault("fallback row %d" % j, []).append(
                        (".".join(map(str, path)) + " (tz_aware=%s)" % tz, shown,
                         shorten(repr(got), 80)))
        except Exception as e:   # pymongo's InvalidBSON included
            if cur.connection.closed:
                raise
            failed["fallback row %d" % j] = [(".".join(map(str, path)), "a document pymongo decodes",
                                              "%s: %s" % (type(e).__name__, shorten(str(e), 80)))]
    cur.execute("RESET bson_out.unmappable_values")
    return failed, len(want)

def run(rows):
    times = [time.time()]
    conn = psycopg2.connect("")
    conn.set_client_encoding("UTF8")
    conn.autocommit = True
    cur = conn.cursor()
    cols = ", ".join("%s %s" % (n, t.sql) for n, t in COLUMNS)
    cur.execute(SETUP.format(s=SCHEMA, cols=cols,
                             labels=", ".join(["%s"] * len(EnumT.LABELS))), EnumT.LABELS)
    names = ["id"] + [n for n, _ in COLUMNS]
    buf = []
    for i, row in enumerate(rows):
        f = [str(i)] + ["\\N" if row[n] is None else copy_esc(t.lit(row[n])) for n, t in COLUMNS]
        buf.append("\t".join(f) + "\n")
    cur.copy_expert("COPY t (%s) FROM STDIN" % ", ".join(names),
                    io.BytesIO("".join(buf).encode("utf-8")))
    # the physical tuples keep "gone"; "late" is a fast default for them
    cur.execute("ALTER TABLE t DROP COLUMN gone")
    cur.execute("ALTER TABLE t ADD COLUMN late text DEFAULT %s", (LATE_DEFAULT,))
    psycopg2.extras.execute_values(
        cur, "UPDATE t SET late = v.late FROM (VALUES %s) AS v(id, late) WHERE t.id = v.id",
        [(i, row["late"]) for i, row in enumerate(rows) if row["updated"]],
        template="(%s, %s::text)")
    cur.execute("ANALYZE t")
    times.append(time.time())

    # session settings that must not change the result
    cur.execute("SET TimeZone = 'Pacific/Chatham'; SET DateStyle = 'SQL, DMY'; "
                "SET IntervalStyle = 'postgres_verbose'; SET extra_float_digits = -3")
    got = fetch_all(cur)
    times.append(time.time())

    failed = {}
    if len(got) != len(rows):
        failed["row count"] = [("", "%d rows" % len(rows), "%d rows" % len(got))]
    for i, row in enumerate(rows):
        if i not in got:
            failed["row %d" % i] = [("", "a row", "missing")]
            continue
        full, omit, sqltext = got[i]
        out = []
        check_bytes(full, expected(i, row, False), sqltext, out, "")
        check_bytes(omit, expected(i, row, True), sqltext, out, "omit_nulls:")
        if out:
            failed["row %d" % i] = out
    extra_failed, n_extra = extra_checks(cur)
    err_failed, n_err = error_checks(cur)
    fb_failed, n_fb = fallback_checks(cur)
    failed.update(extra_failed)
    failed.update(err_failed)
    failed.update(fb_failed)
    cur.execute("DROP SCHEMA %s CASCADE" % SCHEMA)
    conn.close()
    times.append(time.time())
    return failed, len(rows) + n_extra + n_err + n_fb, times

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.time()
    conn = psycopg2.connect("")
    cur = conn.cursor()
    cur.execute("SHOW server_version_num")
    version = int(cur.fetchone()[0])
    conn.close()
    if version < 140000:
        # numeric has no infinities before PostgreSQL 14
        NumericT.BOUNDS = [b for b in NumericT.BOUNDS if b not in ("Infinity", "-Infinity")]
        print("numeric infinities not generated: PostgreSQL 13 has none", file=sys.stderr)
    rows = generate(args.count, args.seed)
    try:
        failed, total, times = run(rows)
    except Exception as e:   # lost connection, crashed server, ...
        traceback.print_exc()
        print("crosscheck-rows aborted: %s: %s" % (type(e).__name__, e))
        print("crosscheck-rows: 0 passed, %d failed" % max(args.count, 1))
        return 1
    shown = 0
    for k, out in failed.items():
        if shown >= 20:
            break
        print("FAIL %s: %d mismatch(es)" % (k, len(out)))
        for where, e, g in out[:3]:
            if shown >= 20:
                break
            shown += 1
            print("  at %s\n    expected: %s\n    got:      %s" % (where or "$", e, g))
    counted = [k for k in failed if k != "row count"]
    print("timing: generate %.1fs, load %.1fs, queries %.1fs, check %.1fs"
          % ((times[0] - t0,) + tuple(b - a for a, b in zip(times, times[1:]))), file=sys.stderr)
    print("crosscheck-rows: %d passed, %d failed" % (total - len(counted), len(failed)))
    return 0 if not failed else 1

if __name__ == "__main__":
    sys.exit(main())
