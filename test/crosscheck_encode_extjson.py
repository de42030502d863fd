#!/usr/bin/python3
"""Cross-check json_to_bson() / to_bson(jsonb) Extended JSON against pymongo.

Usage: /usr/bin/python3 test/crosscheck_extjson.py [--count 10000] [--seed 1]

Generates deterministic random MongoDB Extended JSON v2 documents as text
(key order, whitespace and escapes chosen here), loads them into a temp table
on the server given by the libpq environment (PGHOST, PGPORT, ...) and
compares, byte for byte, what the server makes of them with what pymongo's
bson.json_util.loads + bson.encode make of the same text:

  ext     json_to_bson(doc::json, true)       = pymongo(doc text)
  plain   json_to_bson(doc::json)             = pymongo without wrapper parsing
  jsonb   to_bson(doc::jsonb, true)           = pymongo(doc text with every
          plain object's keys in jsonb order: UTF-8 length, then bytes)
          (only documents whose plain numbers jsonb keeps as they are)
  legacy  every tenth document also uses the legacy forms {"$date": <ms>},
          {"$binary": s, "$type": t}, {"$regex": s, "$options": o}:
          json_to_bson(doc::json, true, true) (and to_bson(doc::jsonb, true,
          true)) = pymongo, and with legacy_extended_json false both raise
          SQLSTATE 22P02.

Not generated, because pymongo's json_util maps them to other types by
design (pg_regress covers them with exact bytes): $symbol (-> str),
$dbPointer (-> DBRef), $undefined (-> None).  Nor are forms outside the
strict grammars (" 1", "+1", "01" in $numberInt/$numberLong, "inf" in
$numberDouble), $numberDouble texts over 1024 characters, or dates whose
UTC instant is outside years 1-9999 as ISO strings (Python's datetime).

Where pymongo 3.11 (Debian's python3-bson) cannot reproduce the BSON itself:
  - uuid_representation UNSPECIFIED, not STANDARD: STANDARD would turn
    $binary subtype 3 into uuid.UUID (16 bytes only) and write it back as
    subtype 4; UNSPECIFIED keeps every Binary as read and still makes $uuid
    Binary subtype 4.
  - no DatetimeConversion in 3.11: a $date in milliseconds outside years
    1-9999 becomes an int64 for pymongo, and this script changes that
    element's type byte to 0x09, found by walking pymongo's own BSON.
  - pymongo's C encoder fails on Binary subtype 0xff (SystemError): it is
    given subtype 0xfe and that byte is changed back, the same way.
  - pymongo moves a top-level "_id" to the front, so each document is
    encoded as the value of a one-element document and cut out again.
  - DBRefs {"$ref", "$id", "$db", ...} become DBRef objects, which pymongo
    writes back in that key order: generated in that order; for the jsonb
    check (keys sorted) they are kept as plain documents.
NaN: pymongo writes float('nan') as 000000000000f87f, which is what C's NAN
gives too, so doubles are compared by bytes like everything else.

Ends with the line "crosscheck-extjson: N passed, M failed" (N + M = number
of documents; a document fails if any of its checks fails); exit status 0
iff M == 0.
"""
import argparse, io, json, math, random, re, struct, sys, time, traceback
from decimal import Context, Decimal, localcontext

sys.dont_write_bytecode = True   # no __pycache__ in the work tree
from crosscheck_common import pg_error, shorten   # before bson.json_util (see there)

import bson, psycopg2
from bson import SON, json_util
from bson.binary import Binary
from bson.binary import UuidRepresentation
from bson.code import Code
from bson.codec_options import CodecOptions
from bson.dbref import DBRef
from bson.errors import InvalidBSON
from bson.int64 import Int64
from bson.json_util import JSONOptions

# ------------------------------------------------------------ the JSON tree
class Obj(list):
    """A plain JSON object: ordered (key, value) pairs; keys are re-ordered
    for the jsonb variant."""

class Wrap(list):
    """An Extended JSON wrapper object (or an object inside one, such as the
    {"base64", "subType"} of $binary): its key order is never changed."""

class Raw(str):
    """A JSON token written as is (numbers, true, false, null)."""

def jsonb_key(k):
    b = k.encode("utf-8")
    return (len(b), b)

SHORT_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n",
             "\r": "\\r", "\t": "\\t", "/": "\\/"}
MUST_ESCAPE = re.compile(r'["\\\x00-\x1f]')

class Dumper:
    """Writes a tree as JSON text with varied whitespace and escapes."""
    WS = ["", "", "", " ", " ", "\n", "\t", "  ", "\r\n", " \n\t "]

    def __init__(self, rng, sort):
        self.r, self.sort = rng, sort
        self.ws_p = rng.choice([0, 0.1, 0.5])      # per document style
        self.esc_p = rng.choice([0, 0, 0, 0.05, 0.3])  # \u escapes for others
        self.esc_th = round(256 * self.esc_p)

    def ws(self):
        r = self.r
        return r.choice(self.WS) if self.ws_p and r.random() < self.ws_p else ""

    def hexesc(self, n):
        s = "\\u%04x" % n
        return s.upper().replace("\\U", "\\u") if self.r.random() < 0.3 else s

    def esc1(self, m):
        ch = m.group()
        e = SHORT_ESC.get(ch)
        return e if e and self.r.random() < 0.7 else self.hexesc(ord(ch))

    def string(self, s):
        if not self.esc_p:      # only what JSON requires, short or \u form
            return '"' + MUST_ESCAPE.sub(self.esc1, s) + '"'
        r, out, th = self.r, ['"'], self.esc_th
        for ch, x in zip(s, r.randbytes(len(s))):
            o = ord(ch)
            if ch in '"\\' or o < 0x20:
                e = SHORT_ESC.get(ch)
                out.append(e if e and x < 180 else self.hexesc(o))
            elif x < th:
                if o > 0xFFFF:
                    v = o - 0x10000
                    out.append(self.hexesc(0xD800 + (v >> 10)) + self.hexesc(0xDC00 + (v & 0x3FF)))
                elif ch == "/" and r.random() < 0.5:
                    out.append("\\/")
                else:
                    out.append(self.hexesc(o))
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)

    def dump(self, v):
        ws = self.ws
        if isinstance(v, (Obj, Wrap)):
            pairs = v
            if self.sort and isinstance(v, Obj):
                pairs = sorted(v, key=lambda kv: jsonb_key(kv[0]))
            if not pairs:
                return "{" + ws() + "}"
            return "{" + ",".join(ws() + self.string(k) + ws() + ":" + ws() + self.dump(x) + ws()
                                  for k, x in pairs) + "}"
        if isinstance(v, list):
            if not v:
                return "[" + ws() + "]"
            return "[" + ",".join(ws() + self.dump(x) + ws() for x in v) + "]"
        if isinstance(v, Raw):
            return str(v)
        if isinstance(v, str):
            return self.string(v)
        raise TypeError(type(v))

# ----------------------------------------------------------------- generator
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
DT_MIN_MS, DT_MAX_MS = -62135596800000, 253402300799999   # 0001-01-01 .. 9999-12-31
INT_EDGES = [0, 1, -1, 2, 9, 10, 99, 100, 127, 128, 255, 256, 65535, 65536,
             INT32_MAX, INT32_MAX - 1, INT32_MAX + 1, INT32_MIN, INT32_MIN + 1,
             INT32_MIN - 1, INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1,
             2**53, 2**53 + 1, -2**53 - 1, 10**18, -10**18]
DOUBLE_EDGES = [0.0, 1.0, -1.0, 0.1, 0.5, 1.5, 100.0, 1e22, 1e23, 1e21, 1e-7,
                5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
                1.7976931348623157e308, 9007199254740993.0, 4.9406564584124654e-324,
                123456.789, 2.5, 1e16, 1e15, 0.3, 2**63 * 1.0, 2**64 * 1.0]
DEC_SPECIALS = ["NaN", "-NaN", "Infinity", "-Infinity", "inf", "-inf", "INF",
                "infinity", "-INFINITY", "nan", "NAN", "+Infinity",
                "0", "-0", "0.0", "-0.00", "0E-6176", "-0E-6176", "0E+6111",
                "0E+8000", "-0E-8000", "0E-6177", "1E+6144", "-1E+6144",
                "9.999999999999999999999999999999999E+6144",
                "1.000000000000000000000000000000000E+6144", "1E+6111", "1E+6112",
                "1E-6176", "-1E-6176", "1E-6143", "1E-6175",
                "1234567890123456789012345678901234", "-1234567890123456789012345678901234",
                "9999999999999999999999999999999999", "1234567890123456789012345678901234E-6176",
                "0.1", "1.0", "1.00", "-1.50", "12E+6143", "100E+6142", "1E0", "1e-0",
                "10" + "0" * 40, "1." + "0" * 40, "0.000001", "1E-7",
                "1000E-6179", "+1", ".5", "5.", "-.5E+3", "00001", "0.00E+5"]
DOUBLE_SPECIALS = ["Infinity", "-Infinity", "NaN", "-0.0", "-0", "0.0", "0", "1",
                   "-1", "1.0", "5e-324", "4.9406564584124654e-324", "2.4703282292062328e-324",
                   "1.7976931348623157e308", "1.7976931348623157E+308", "1e308",
                   "2.2250738585072014e-308", "2.2250738585072011e-308", "1e-7",
                   "0.1", "1.23456789012345677E+18", "-1.23456789012345677e+18",
                   "9007199254740993", "1E2", "1e+2", "1e-2", "12e-1", "0e0", "-0e0"]
BIN_SUBTYPES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 0x80, 0x81, 0xfe, 0xff]
REGEX_FLAGS = "ilmsux"
ASCII = [chr(c) for c in range(0x20, 0x7f)]
CONTROLS = [chr(c) for c in range(1, 0x20)] + ['"', "\\", "/", "\x7f"]
NON_ASCII = ["é", "ж", "東", "😀", "ü", "€", "\x80", "\u07ff", "\u0800", "\uffff",
             "\ufffd", "\ufeff", "\u2028", "\U00010000", "\U0010ffff", "𝄞", "ß"]
NON_ASCII_RANGES = [(0x80, 0x7ff), (0x800, 0xd7ff), (0xe000, 0xfffd), (0x10000, 0x10ffff)]
# "$" keys that are not wrappers: plain documents for pymongo and for us
DOLLAR_KEYS = ["$foo", "$", "$$", "$in", "$gt", "$set", "$id", "$db", "$scope",
               "$options", "$type", "$numberlong", "$Date", "$OID", "$oid ", " $oid",
               "$regularexpression", "$ref2", "$dateX", "$é"]

def b64(data):
    import base64
    return base64.b64encode(data).decode()

class Gen:
    def __init__(self, rng):
        self.r = rng
        self.stats = {}
        self.tables = {}
        self.legacy_used = set()

    def count(self, what):
        self.stats[what] = self.stats.get(what, 0) + 1

    # --- strings and keys
    def table(self, p_non, p_ctl, nul):
        """256 characters shared out by probability (cached per mix)."""
        key = (p_non, p_ctl, nul)
        t = self.tables.get(key)
        if t is None:
            n_non, n_ctl = round(256 * p_non), round(256 * p_ctl)
            t = [NON_ASCII[j // 2 % len(NON_ASCII)] if j % 2 else self.random_non_ascii()
                 for j in range(n_non)]
            t += [CONTROLS[j % len(CONTROLS)] for j in range(n_ctl)]
            if nul:
                t.append("\x00")
            t += [ASCII[j % len(ASCII)] for j in range(256 - len(t))]
            self.tables[key] = t
        return t

    def random_non_ascii(self):
        lo, hi = self.r.choice(NON_ASCII_RANGES)
        return chr(self.r.randint(lo, hi))

    def text(self, n, nul=False):
        r = self.r
        t = self.table(r.choice([0, 0, 0.1, 0.5]), r.choice([0, 0, 0.05, 0.3]), nul)
        s = "".join(map(t.__getitem__, r.randbytes(n)))
        if n and r.random() < 0.1:   # one fresh code point of any length class
            j = r.randrange(n)
            s = s[:j] + self.random_non_ascii() + s[j + 1:]
        return s

    def string(self):
        r = self.r
        n = r.choice([0, 1, 2, 3, 5, 8, 12, 20, 24, 25, 26]) if r.random() < 0.97 \
            else r.choice([100, 255, 256, 1000, 4096])
        return self.text(n, nul=self.allow_nul)

    def key(self, taken):
        r = self.r
        while True:
            if r.random() < 0.04:
                k = r.choice(DOLLAR_KEYS)
                self.count("plain $key")
            else:
                k = self.text(r.choice([0, 1, 1, 2, 3, 4, 5, 8, 12, 30]))
                if k.startswith("$"):
                    k = "_" + k[1:]
            if k not in taken and k != "_id" and "\x00" not in k:
                taken.add(k)
                return k

    def obj(self, n, depth, maxdepth):
        taken, pairs = set(), Obj()
        for _ in range(n):
            k = self.key(taken)
            pairs.append((k, self.value(depth + 1, maxdepth)))
        return pairs

    # --- numbers
    def random_double(self):
        r = self.r
        while True:
            x = r.random()
            if x < 0.5:
                f = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
            elif x < 0.7:
                f = r.choice(DOUBLE_EDGES) * r.choice([1, -1])
            elif x < 0.9:
                f = round(r.uniform(-1e6, 1e6), r.randint(0, 6))
            else:
                f = float(r.randint(-10**6, 10**6))
            if math.isfinite(f):
                return f

    def halfway(self):
        """The exact midpoint between two adjacent doubles, or it cut to
        17..40 digits, or that plus one unit in its last digit."""
        r = self.r
        while True:
            f = abs(self.random_double())
            if f < 1.7976931348623157e308:
                break
        with localcontext(Context(prec=2000)):
            mid = ((Decimal(f) + Decimal(math.nextafter(f, math.inf))) / 2).normalize()
            k = r.randint(17, 40)
            sign, digits, exp = mid.as_tuple()
            if r.random() < 0.4 or len(digits) <= k:
                s = str(mid)
            else:
                e = exp + len(digits) - k
                cut = Decimal((0, digits[:k], e))
                s = str(cut if r.random() < 0.5 else cut + Decimal((0, (1,), e)))
        if float(s) == 0 or not math.isfinite(float(s)):   # never, but be sure
            return repr(f)
        if "." not in s and "E" not in s:   # an integer literal is no double
            s += ".0"
        return s if r.random() < 0.8 else "-" + s

    def int_text(self, lo, hi):
        r = self.r
        x = r.random()
        if x < 0.3:
            v = r.choice([e for e in INT_EDGES if lo <= e <= hi])
        elif x < 0.6:
            v = r.randint(-1000, 1000)
        else:
            nd = r.randint(1, 19)
            v = r.randint(0, 10**nd - 1) * r.choice([1, -1])
            v = max(lo, min(hi, v))
        return str(v)

    def plain_number(self):
        """A plain JSON number: integers within int64, finite doubles.  For
        jsonb documents doubles are written with a '.' and no exponent (and
        no -0.0), which jsonb keeps as a double."""
        r = self.r
        x = r.random()
        if x < 0.45:
            self.count("plain int")
            s = self.int_text(INT64_MIN, INT64_MAX)
            return Raw("-0" if s == "0" and r.random() < 0.2 else s)
        self.count("plain double")
        if self.jsonb_ok:
            f = self.random_double()
            if f == 0:
                return Raw("0.0")
            s = format(Decimal(repr(f)), "f")
            return Raw(s if "." in s else s + ".0")
        if x < 0.55:
            return Raw(self.halfway())
        if x < 0.56:      # long: up to 1500 digits, double's whole range
            digits = str(r.randint(1, 9)) + "".join(r.choice("0123456789")
                                                    for _ in range(r.randint(20, 1500)))
            e = r.randint(-300 - len(digits), 300 - len(digits))
            return Raw("%s%s.%se%d" % (r.choice(["", "-"]), digits[0], digits[1:], e + len(digits) - 1))
        if x < 0.62:
            return Raw(r.choice(["1e2", "1E2", "1e+2", "-1.5E-3", "12e-1", "0e0",
                                 "-0.0", "0.0", "-0e5", "1.0", "100.000", "1E22",
                                 "4.9e-324", "1.7976931348623157e308"]))
        f = self.random_double()
        if r.random() < 0.15:
            return Raw("%.17g" % f if r.random() < 0.5 else "%.17E" % f)
        return Raw(repr(f))

    def decimal_text(self):
        r = self.r
        x = r.random()
        if x < 0.2:
            return r.choice(DEC_SPECIALS)
        if x < 0.3:   # clamped: exponent above 6111, padded with zeros
            nd = r.randint(1, 34)
            coef = str(r.randint(10**(nd - 1), 10**nd - 1))
            e = r.randint(6112, 6111 + 34 - nd) if nd < 34 else 6111
            return r.choice(["", "-"]) + coef + "E+" + str(e)
        if x < 0.35:  # more than 34 digits, the excess being trailing zeros
            nd = r.randint(1, 34)
            coef = str(r.randint(10**(nd - 1), 10**nd - 1)) + "0" * r.randint(35 - nd, 40 - nd)
            return r.choice(["", "-"]) + coef + "E" + str(r.randint(-6176, 6000))
        nd = r.randint(1, 34)
        digits = str(r.randint(10**(nd - 1), 10**nd - 1) if r.random() < 0.9 else r.randint(0, 10**nd - 1))
        digits = digits.rjust(nd, "0")
        lead = "0" * (r.random() < 0.05)
        point = r.randint(0, nd) if r.random() < 0.6 else None
        if point is None:
            mant, frac = lead + digits, 0
        elif point == 0:
            mant, frac = "0." + digits, nd
        else:
            mant, frac = lead + digits[:point] + "." + digits[point:], nd - point
            if point == nd:
                mant += "0" if r.random() < 0.7 else ""
                frac += 1 if mant.endswith(".0") else 0
        sign = r.choice(["", "", "-"])
        if r.random() < 0.5:
            # exponent so that the stored exponent (e - frac) is in range
            if r.random() < 0.5:
                e = r.randint(-40, 40)
            else:
                e = r.randint(-6176 + frac, 6111 + frac)
            ee = r.choice(["E", "e"]) + (("+" if e >= 0 and r.random() < 0.7 else "") + str(e))
            return sign + mant + ee
        return sign + mant

    def double_text(self):
        r = self.r
        x = r.random()
        if x < 0.25:
            return r.choice(DOUBLE_SPECIALS)
        if x < 0.35:
            return self.halfway()
        f = self.random_double()
        if x < 0.45:
            return "%.17g" % f
        if x < 0.5:
            return "%.17E" % f
        return repr(f)

    # --- dates
    def iso_date(self):
        """A relaxed $date string, years 1..9999, whose UTC instant Python's
        datetime can hold."""
        import datetime as dt
        r = self.r
        while True:
            x = r.random()
            if x < 0.15:
                y = r.choice([1, 2, 1969, 1970, 1900, 2000, 2100, 9999, 9998, 1600, 4])
            else:
                y = r.randint(1, 9999)
            mo = r.randint(1, 12)
            leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
            dim = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]
            d = r.choice([1, dim, r.randint(1, dim)])
            if r.random() < 0.05 and leap:
                mo, d = 2, 29
            h, mi, s = r.randint(0, 23), r.randint(0, 59), r.randint(0, 59)
            if r.random() < 0.1:
                h, mi, s = r.choice([(0, 0, 0), (23, 59, 59)])
            nf = r.choice([0, 0, 1, 2, 3, 3, 3, 4, 5, 6])
            frac = "".join(r.choice("0123456789") for _ in range(nf))
            if nf and r.random() < 0.1:
                frac = r.choice(["9", "0"]) * nf
            z = r.random()
            if z < 0.5:
                off, offmin = "Z", 0
            else:
                oh, om = r.randint(0, 23), r.choice([0, 0, 30, 45, r.randint(0, 59)])
                sg = r.choice("+-")
                off = "%s%02d%s%02d" % (sg, oh, ":" if z < 0.85 else "", om)
                offmin = (oh * 60 + om) * (1 if sg == "+" else -1)
            try:
                local = dt.datetime(y, mo, d, h, mi, s)
                local - dt.timedelta(minutes=offmin)   # UTC must fit datetime
            except OverflowError:
                continue
            return "%04d-%02d-%02dT%02d:%02d:%02d%s%s" % (
                y, mo, d, h, mi, s, "." + frac if nf else "", off)

    def date_ms(self):
        r = self.r
        x = r.random()
        if x < 0.2:
            return r.choice([0, -1, 1, 1704164645678, DT_MIN_MS, DT_MAX_MS, DT_MIN_MS - 1,
                             DT_MAX_MS + 1, INT64_MIN, INT64_MAX, -62135596800001,
                             253402300800000, -86400000, 951782400000])
        if x < 0.4:
            return r.randint(INT64_MIN, INT64_MAX)
        if x < 0.7:
            return r.randint(DT_MIN_MS, DT_MAX_MS)
        return r.randint(-2**41, 2**41)

    # --- wrappers
    def shuffled(self, pairs):
        self.r.shuffle(pairs)
        return Wrap(pairs)

    def hexbyte(self, v):
        r = self.r
        x = r.random()
        if v < 16 and x < 0.3:
            return "%x" % v if r.random() < 0.5 else "%X" % v
        return "%02X" % v if x > 0.8 else "%02x" % v

    def payload(self, subtype):
        r = self.r
        x = r.random()
        if x < 0.15:
            n = 0
        elif subtype in (3, 4) and x < 0.6:
            n = 16
        elif x < 0.95:
            n = r.randint(1, 40)
        else:
            n = r.choice([255, 256, 300, 1000])
        return r.randbytes(n)

    KINDS = ["oid", "int", "long", "double", "decimal", "binary", "uuid", "code",
             "codews", "timestamp", "regex", "date_iso", "date_long", "minkey",
             "maxkey", "dbref", "dollar", "regexop", "type"]
    LEGACY_KINDS = ["ldate", "lbinary", "lregex"]

    def wrapper(self, depth, maxdepth, kind=None):
        r = self.r
        if kind is None:
            kinds = self.KINDS + (self.LEGACY_KINDS * 2 if self.legacy else [])
            kind = r.choice(kinds)
        self.count(kind)
        if kind in self.LEGACY_KINDS:
            self.legacy_used.add(kind)
        if kind == "oid":
            h = r.randbytes(12).hex()
            return Wrap([("$oid", h.upper() if r.random() < 0.1 else h)])
        if kind == "int":
            return Wrap([("$numberInt", self.int_text(INT32_MIN, INT32_MAX))])
        if kind == "long":
            return Wrap([("$numberLong", self.int_text(INT64_MIN, INT64_MAX))])
        if kind == "double":
            return Wrap([("$numberDouble", self.double_text())])
        if kind == "decimal":
            return Wrap([("$numberDecimal", self.decimal_text())])
        if kind == "binary":
            st = r.choice(BIN_SUBTYPES)
            inner = self.shuffled([("base64", b64(self.payload(st))), ("subType", self.hexbyte(st))])
            return Wrap([("$binary", inner)])
        if kind == "uuid":
            h = r.randbytes(16).hex()
            h = "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
            return Wrap([("$uuid", h.upper() if r.random() < 0.2 else h)])
        if kind == "code":
            return Wrap([("$code", self.text(r.randint(0, 30)))])
        if kind == "codews":
            scope = self.obj(r.choice([0, 1, 2, 3, 5]), depth + 1, maxdepth)
            return self.shuffled([("$code", self.text(r.randint(0, 30))), ("$scope", scope)])
        if kind == "timestamp":
            edges = [0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32 - 2]
            t = r.choice(edges) if r.random() < 0.3 else r.randint(0, 2**32 - 1)
            i = r.choice(edges) if r.random() < 0.3 else r.randint(0, 2**32 - 1)
            return Wrap([("$timestamp", self.shuffled([("t", Raw(str(t))), ("i", Raw(str(i)))]))])
        if kind in ("regex", "lregex", "regexop"):
            opts = list(REGEX_FLAGS)
            r.shuffle(opts)
            opts = "".join(opts[:r.randint(0, 6)])
            pattern = self.text(r.choice([0, 1, 3, 8, 20]))
            if kind == "lregex":
                pairs = [("$regex", pattern)]
                if r.random() < 0.85:
                    pairs.append(("$options", opts))
                return self.shuffled(pairs)
            rx = Wrap([("$regularExpression", self.shuffled([("pattern", pattern), ("options", opts)]))])
            if kind == "regex":
                return rx
            # {"$regex": {<regex>}} is the query operator: a plain document
            pairs = [("$regex", rx)]
            if r.random() < 0.5:
                pairs.append(("$options", opts))
            return Obj(pairs)
        if kind == "date_iso":
            return Wrap([("$date", self.iso_date())])
        if kind == "date_long":
            return Wrap([("$date", Wrap([("$numberLong", str(self.date_ms()))]))])
        if kind == "ldate":
            return Wrap([("$date", Raw(str(self.date_ms())))])
        if kind == "lbinary":
            st = r.choice(BIN_SUBTYPES)
            return self.shuffled([("$binary", b64(self.payload(st))), ("$type", self.hexbyte(st))])
        if kind in ("minkey", "maxkey"):
            return Wrap([("$minKey" if kind == "minkey" else "$maxKey", Raw("1"))])
        if kind == "dbref":
            # pymongo's DBRef encodes back as $ref, $id, $db, then the rest
            # in order: generated in that order, so the bytes are the same
            pairs = Obj([("$ref", self.text(r.randint(0, 10))),
                         ("$id", self.wrapper(depth + 1, maxdepth, "oid") if r.random() < 0.6
                          else self.value(depth + 1, maxdepth))])
            if r.random() < 0.4:
                pairs.append(("$db", self.text(r.randint(0, 8))))
            taken = {"$ref", "$id", "$db"}
            for _ in range(r.choice([0, 0, 1, 2])):
                pairs.append((self.key(taken), self.value(depth + 1, maxdepth)))
            return pairs
        if kind == "dollar":
            taken = set()
            n = r.randint(1, 4)
            pairs = Obj()
            for j in range(n):
                k = r.choice(DOLLAR_KEYS) if j == 0 or r.random() < 0.5 else self.key(taken)
                if k in taken:
                    continue
                taken.add(k)
                pairs.append((k, self.value(depth + 1, maxdepth)))
            return pairs
        if kind == "type":     # the $type query operator alone: plain
            return Obj([("$type", r.choice([Raw("2"), "string", "binData", Raw("-1")]))])
        raise ValueError(kind)

    # --- values and documents
    def value(self, depth, maxdepth):
        r = self.r
        x = r.random()
        if depth < maxdepth and x < 0.25:
            n = 0 if r.random() < 0.1 else r.randint(1, 6 if r.random() < 0.9 else 20)
            if x < 0.13:
                return self.obj(n, depth, maxdepth)
            return [self.value(depth + 1, maxdepth) for _ in range(n)]
        if x < 0.55:
            return self.wrapper(depth, maxdepth)
        x = r.random()
        if x < 0.4:
            return self.string()
        if x < 0.85:
            return self.plain_number()
        return Raw(r.choice(["true", "false", "null"]))

    def special_doc(self):
        """Every listed special value once, in objects and arrays."""
        pairs, arr = Obj(), []
        for j, t in enumerate(DEC_SPECIALS):
            pairs.append(("dec%d" % j, Wrap([("$numberDecimal", t)])))
        for j, t in enumerate(DOUBLE_SPECIALS):
            arr.append(Wrap([("$numberDouble", t)]))
        for st in BIN_SUBTYPES:
            for data in (b"", b"\x00", b"ab", bytes(range(16)), bytes(range(256))):
                arr.append(Wrap([("$binary", Wrap([("base64", b64(data)), ("subType", "%02x" % st)]))]))
                arr.append(Wrap([("$binary", Wrap([("subType", "%X" % st), ("base64", b64(data))]))]))
        for ms in [0, -1, 1, DT_MIN_MS, DT_MAX_MS, DT_MIN_MS - 1, DT_MAX_MS + 1, INT64_MIN, INT64_MAX]:
            arr.append(Wrap([("$date", Wrap([("$numberLong", str(ms))]))]))
        for s in ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "1970-01-01T00:00:00Z",
                  "1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.9999Z", "2000-02-29T12:00:00.5+01:00",
                  "1900-03-01T00:00:00-0130", "0001-01-01T00:00:00.000001-23:59",
                  "9999-12-31T23:59:59.999999+23:59", "2024-01-02T03:04:05.678Z",
                  "2024-01-02T03:04:05.6785Z", "1969-07-20T20:17:40.1+00:00"]:
            arr.append(Wrap([("$date", s)]))
        for t, i in [(0, 0), (2**32 - 1, 2**32 - 1), (1, 2**32 - 1), (2**32 - 1, 0), (2**31, 2**31)]:
            arr.append(Wrap([("$timestamp", Wrap([("t", Raw(str(t))), ("i", Raw(str(i)))]))]))
            arr.append(Wrap([("$timestamp", Wrap([("i", Raw(str(i))), ("t", Raw(str(t)))]))]))
        for opts in ["", "i", "xsmli", "ilmsux", "uxsmli", "u", "xu"]:
            arr.append(Wrap([("$regularExpression", Wrap([("pattern", "^a.*b$"), ("options", opts)]))]))
        for v in [INT32_MIN, INT32_MAX, 0, -1]:
            arr.append(Wrap([("$numberInt", str(v))]))
        for v in [INT64_MIN, INT64_MAX, 0, INT32_MAX + 1, INT32_MIN - 1]:
            arr.append(Wrap([("$numberLong", str(v))]))
        arr += [Wrap([("$minKey", Raw("1"))]), Wrap([("$maxKey", Raw("1"))]),
                Wrap([("$uuid", "73ffd264-44b3-4c69-90e8-e7d1dfc035d4")]),
                Wrap([("$uuid", "00000000-0000-0000-0000-000000000000")]),
                Wrap([("$uuid", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")]),
                Wrap([("$oid", "000000000000000000000000")]), Wrap([("$oid", "ffffffffffffffffffffffff")]),
                Wrap([("$code", "")]), Wrap([("$code", "f()"), ("$scope", Obj())]),
                Wrap([("$scope", Obj([("x", Wrap([("$numberLong", "1")]))])), ("$code", "f(x)")]),
                Obj([("$ref", "c"), ("$id", Wrap([("$oid", "5f0c8a3e9b1e8a2d4c6b7a90")]))]),
                Obj([("$ref", "c"), ("$id", Raw("5")), ("$db", "d"), ("x", Raw("1"))]),
                Obj([("$foo", Raw("1"))]), Obj([("$type", "string")]),
                Obj([("$regex", Wrap([("$regularExpression", Wrap([("pattern", "a"), ("options", "")]))]))]),
                Obj([("$id", Raw("1"))]), Obj([("$scope", Obj())]), Obj([("$options", "i")])]
        pairs.append(("all", arr))
        return pairs

    def doc(self, i, legacy, jsonb_ok):
        r = self.r
        self.legacy, self.jsonb_ok, self.allow_nul = legacy, jsonb_ok, not jsonb_ok
        self.legacy_used = set()
        if i == 0:
            return self.special_doc()
        if 1 <= i <= 3:   # deep: objects, arrays and code scopes mixed
            v = self.wrapper(0, 0, r.choice(["oid", "decimal", "date_long"]))
            for d in range(r.randint(100, 150)):
                x = r.random()
                if x < 0.4:
                    v = Obj([(self.key(set()), v), ("n", Raw(str(d)))])
                elif x < 0.8:
                    v = [v, self.wrapper(0, 0, "int")]
                else:
                    v = Wrap([("$code", "c"), ("$scope", Obj([("s", v)]))])
            return Obj([("deep", v)])
        if i == 4:        # big containers
            return Obj([("arr", [self.value(2, 3) for _ in range(2500)]),
                        ("obj", self.obj(1500, 1, 2))])
        taken, d = set(), Obj()
        for _ in range(0 if r.random() < 0.02 else r.randint(1, 8)):
            k = self.key(taken)
            d.append((k, self.value(1, r.choice([1, 2, 3, 4, 5]))))
        if r.random() < 0.1:   # pymongo would move a top-level "_id" first
            d.insert(r.randint(0, len(d)), ("_id", self.wrapper(1, 1, "oid")))
        if legacy:        # at least one legacy form in every legacy document
            d.append((self.key(taken), self.wrapper(1, 1, r.choice(self.LEGACY_KINDS))))
        return d

def generate(count, seed):
    """[(id, text, jsonb_text or None, legacy, legacy kinds)], stats."""
    gen = Gen(random.Random(seed))
    rows = []
    for i in range(count):
        legacy = i % 10 == 9
        jsonb_ok = i == 0 or gen.r.random() < 0.7
        tree = gen.doc(i, legacy, jsonb_ok)
        dr = random.Random(seed * 1000003 + i)
        text = Dumper(dr, False).dump(tree)
        jtext = Dumper(dr, True).dump(tree) if jsonb_ok else None
        rows.append((i, text, jtext, legacy, sorted(gen.legacy_used)))
    return rows, gen.stats

# ------------------------------------------------------------ pymongo oracle
EJ_OPTS = JSONOptions(document_class=SON, uuid_representation=UuidRepresentation.UNSPECIFIED,
                      tz_aware=True)
ENC_OPTS = CodecOptions(document_class=SON, uuid_representation=UuidRepresentation.UNSPECIFIED)

class OutOfRangeDate(Int64):
    """A $date pymongo cannot hold as a datetime: encoded as an int64, then
    its type byte is changed to 0x09 (datetime)."""

class Subtype255(Binary):
    """Binary subtype 0xff, on which pymongo 3.11's C encoder fails
    (SystemError): encoded as subtype 0xfe, then that byte is changed."""

def ej_hook(pairs, dbref=True):
    if not dbref and any(k == "$ref" for k, _ in pairs):
        return SON(pairs)   # jsonb order: keep the document, not a DBRef
    try:
        v = json_util.object_pairs_hook(pairs, EJ_OPTS)
    except (OverflowError, InvalidBSON):   # pymongo 3 and 4 say it differently
        if len(pairs) == 1 and pairs[0][0] == "$date" and isinstance(pairs[0][1], int):
            return OutOfRangeDate(pairs[0][1])
        raise
    if isinstance(v, Binary) and v.subtype == 0xFF:
        return Subtype255(bytes(v), 0xFE)
    return v

def py_elems(doc):
    """The values of doc's elements in BSON pre-order, as pymongo writes them."""
    if isinstance(doc, DBRef):
        doc = doc.as_doc()
    for x in doc.values():
        yield x
        if isinstance(x, (dict, DBRef)):
            yield from py_elems(x)
        elif isinstance(x, list):
            yield from py_elems({str(j): y for j, y in enumerate(x)})
        elif isinstance(x, Code) and x.scope is not None:
            yield from py_elems(x.scope)

FIXED = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8,
         0x13: 16, 0x06: 0, 0x7F: 0, 0xFF: 0}

def bson_elems(buf, off):
    """(offset of type byte, type) of the document at buf[off], pre-order."""
    n = int.from_bytes(buf[off:off + 4], "little")
    p, end = off + 4, off + n - 1
    while p < end:
        t = buf[p]
        yield p, t
        p = buf.index(0, p + 1) + 1
        if t in (0x03, 0x04):
            yield from bson_elems(buf, p)
            p += int.from_bytes(buf[p:p + 4], "little")
        elif t == 0x0F:
            sl = int.from_bytes(buf[p + 4:p + 8], "little")
            yield from bson_elems(buf, p + 8 + sl)
            p += int.from_bytes(buf[p:p + 4], "little")
        elif t in FIXED:
            p += FIXED[t]
        elif t in (0x02, 0x0D, 0x0E):
            p += 4 + int.from_bytes(buf[p:p + 4], "little")
        elif t == 0x05:
            p += 5 + int.from_bytes(buf[p:p + 4], "little")
        elif t == 0x0B:
            p = buf.index(0, buf.index(0, p) + 1) + 1
        elif t == 0x0C:
            p += 4 + int.from_bytes(buf[p:p + 4], "little") + 12
        else:
            raise ValueError("type 0x%02x" % t)

def pymongo_bson(text, wrappers=True, dbref=True):
    """pymongo's BSON for the document in text.  It is encoded as the value
    of a one-element document and cut out of it: at the top level pymongo
    would move an "_id" key to the front."""
    if wrappers:
        doc = json.loads(text, object_pairs_hook=lambda p: ej_hook(p, dbref))
    else:
        doc = json.loads(text, object_pairs_hook=SON)
    outer = SON([("x", doc)])
    b = bson.encode(outer, codec_options=ENC_OPTS)
    if wrappers:
        fixes = [(x, off, t) for x, (off, t) in zip(py_elems(outer), bson_elems(b, 0))
                 if isinstance(x, (OutOfRangeDate, Subtype255))]
        if fixes:
            b = bytearray(b)
            for x, off, t in fixes:
                if isinstance(x, OutOfRangeDate):
                    assert t == 0x12, t
                    b[off] = 0x09
                else:
                    assert t == 0x05, t
                    sub = b.index(0, off + 1) + 5
                    assert b[sub] == 0xFE
                    b[sub] = 0xFF
            b = bytes(b)
    assert b[4:7] == b"\x03x\x00" and len(b) == 8 + int.from_bytes(b[7:11], "little")
    return b[7:-1]

# ---------------------------------------------------------------------- main
def query_all(cur, expr, where):
    """{id: bytes, None for NULL, or a str describing its error}.  One query;
    if that fails, one per row to find the failing rows."""
    conv = lambda b: None if b is None else bytes(b)
    try:
        cur.execute("SELECT id, %s FROM t WHERE %s ORDER BY id" % (expr, where))
        return {i: conv(b) for i, b in cur.fetchall()}
    except psycopg2.Error:
        if cur.connection.closed:
            raise
    res = {}
    cur.execute("SELECT id FROM t WHERE %s ORDER BY id" % where)
    for (i,) in cur.fetchall():
        try:
            cur.execute("SELECT %s FROM t WHERE id = %%s" % expr, (i,))
            res[i] = conv(cur.fetchone()[0])
        except psycopg2.Error as e:
            if cur.connection.closed:
                raise
            res[i] = "error " + pg_error(e)
    return res

ERR_FUNC = """
CREATE FUNCTION pg_temp.ej_sqlstate(d text, via_jsonb boolean) RETURNS text
LANGUAGE plpgsql AS $f$
BEGIN
	IF via_jsonb THEN
		PERFORM to_bson(d::jsonb, true);
	ELSE
		PERFORM json_to_bson(d::json, true);
	END IF;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END
$f$"""

def run(rows):
    """Returns (results, timestamps); results: list of
    (check, id, text used by pymongo, expected bytes or str, got bytes or str)."""
    times = [time.time()]
    conn = psycopg2.connect("")
    conn.set_client_encoding("UTF8")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE TEMP TABLE t (id int PRIMARY KEY, doc text, jdoc text, legacy boolean)")
    def esc(t):      # COPY text format
        if t is None:
            return "\\N"
        return t.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    data = "".join("%d\t%s\t%s\t%s\n" % (i, esc(t), esc(jt), "t" if lg else "f")
                   for i, t, jt, lg, _ in rows)
    cur.copy_expert("COPY t (id, doc, jdoc, legacy) FROM STDIN", io.BytesIO(data.encode("utf-8")))
    times.append(time.time())

    got = {
        "ext": query_all(cur, "json_to_bson(doc::json, true)", "NOT legacy"),
        "plain": query_all(cur, "json_to_bson(doc::json)", "NOT legacy"),
        "jsonb": query_all(cur, "to_bson(doc::jsonb, true)", "NOT legacy AND jdoc IS NOT NULL"),
        "legacy": query_all(cur, "json_to_bson(doc::json, true, true)", "legacy"),
        "legacy-jsonb": query_all(cur, "to_bson(doc::jsonb, true, true)", "legacy AND jdoc IS NOT NULL"),
    }
    cur.execute(ERR_FUNC)
    cur.execute("SELECT id, pg_temp.ej_sqlstate(doc, false) FROM t WHERE legacy ORDER BY id")
    got["legacy-off"] = dict(cur.fetchall())
    cur.execute("SELECT id, pg_temp.ej_sqlstate(doc, true) FROM t WHERE legacy AND jdoc IS NOT NULL ORDER BY id")
    got["legacy-off-jsonb"] = dict(cur.fetchall())
    conn.close()
    times.append(time.time())

    results = []
    def oracle(text, **kw):
        try:
            return pymongo_bson(text, **kw)
        except Exception as e:
            return "pymongo cannot encode it: %s: %s" % (type(e).__name__, e)
    for i, text, jtext, legacy, _ in rows:
        checks = []
        if not legacy:
            checks += [("ext", text, {}), ("plain", text, {"wrappers": False})]
            if jtext is not None:
                checks.append(("jsonb", jtext, {"dbref": False}))
        else:
            checks.append(("legacy", text, {}))
            if jtext is not None:
                checks.append(("legacy-jsonb", jtext, {"dbref": False}))
        for check, src, kw in checks:
            results.append((check, i, src, oracle(src, **kw), got[check].get(i, "no row")))
        if legacy:
            for check, src in [("legacy-off", text), ("legacy-off-jsonb", jtext)]:
                if check == "legacy-off-jsonb" and jtext is None:
                    continue
                g = got[check].get(i, "no row")
                results.append((check, i, src, "SQLSTATE 22P02",
                                "SQLSTATE 22P02" if g.startswith("22P02 ") else g))
    times.append(time.time())
    return results, times

def show(v):
    if isinstance(v, bytes):
        return "%s (%d bytes)" % (shorten(v.hex(), 600), len(v))
    return "NULL" if v is None else str(v)

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.time()
    rows, stats = generate(args.count, args.seed)
    t1 = time.time()
    try:
        results, times = run(rows)
    except Exception as e:   # lost connection, crashed server, ...
        traceback.print_exc()
        print("crosscheck-extjson aborted: %s: %s" % (type(e).__name__, e))
        print("crosscheck-extjson: 0 passed, %d failed" % len(rows))
        return 1
    failed_docs, per_check, shown = {}, {}, 0
    for check, i, src, exp, got in results:
        ok = exp == got and isinstance(exp, (bytes, str)) and not (
            isinstance(exp, str) and exp.startswith("pymongo"))
        p = per_check.setdefault(check, [0, 0])
        p[0 if ok else 1] += 1
        if ok:
            continue
        failed_docs.setdefault(i, []).append(check)
        if shown < 20:
            shown += 1
            print("FAIL doc %d, check %s" % (i, check))
            print("  json:    %s" % shorten(src, 600))
            print("  pymongo: %s" % show(exp))
            print("  ours:    %s" % show(got))
    kinds = ", ".join("%s %d" % kv for kv in sorted(stats.items()))
    print("generated: %s" % kinds, file=sys.stderr)
    print("checks: %s" % ", ".join("%s %d passed/%d failed" % (c, p[0], p[1])
                                   for c, p in per_check.items()), file=sys.stderr)
    print("timing: generate %.1fs, load %.1fs, queries %.1fs, pymongo+compare %.1fs"
          % ((t1 - t0,) + tuple(b - a for a, b in zip(times, times[1:]))), file=sys.stderr)
    n_fail = len(failed_docs)
    print("crosscheck-extjson: %d passed, %d failed" % (len(rows) - n_fail, n_fail))
    return 0 if n_fail == 0 else 1

if __name__ == "__main__":
    sys.exit(main())
