#!/usr/bin/python3
"""Cross-check the BSON decoder (bson_to_json, from_bson, bson_is_valid,
bson_documents) against pymongo, and from_bson with the encoder both ways.

Usage: /usr/bin/python3 test/crosscheck_decode.py [--count 10000] [--seed 1]
                                                  [--alphabet utf8|latin1]

Generates deterministic random BSON documents (and random JSON values), loads
them into temp tables on the server given by the libpq environment (PGHOST,
PGPORT, ...), runs one query per comparison over all of them, and checks:

  relaxed    bson_to_json(b)::text       = pymongo json_util.dumps(
  canonical  bson_to_json(b, true)::text     bson.decode(b), RELAXED or
             CANONICAL_JSON_OPTIONS, ensure_ascii=False), byte for byte.
             Documents are built as Python values and encoded by pymongo's
             bson.encode; decoded with document_class=dict (order kept),
             tz_aware=True, uuid_representation=UNSPECIFIED.
  roundtrip  to_bson(from_bson(b), true) holds the same elements as b, key
             order aside: same BSON type and value everywhere, doubles by
             their bits except that any NaN equals any NaN (-0.0 is not 0.0),
             decimal128 by its Extended JSON text (so its NaN payloads and
             sign, and non-canonical encodings, are normalized), regular
             expression options sorted.  Compared as trees decoded by this
             script and, for documents pymongo can decode, also as pymongo
             values (type for type: int vs Int64, bytes vs Binary, ...).
             No document has duplicate keys (jsonb keeps the last one).
  roundtrip-nul  instead, for documents with a NUL inside a string, code,
             symbol or DBPointer namespace: from_bson(b) raises SQLSTATE
             22P05 (jsonb cannot hold it).
  valid      bson_is_valid(b) is true.
  stream     bson_documents(<the documents of 100 consecutive ids,
             concatenated>) gives each document back, in order (md5 of each).
  jsonb      for random JSON objects x (no NUL in strings, integers within
             int64, any finite double written as repr() writes it, the
             shortest text that reads back as it):
             from_bson(to_bson(x::jsonb)) = x::jsonb (jsonb equality).

Types pymongo 3.11 (Debian's python3-bson) cannot decode, or decodes to
another type, go into every 20th document (and document 1, which has every
edge case of them), built here as raw BSON bytes.  For those, "relaxed" and
"canonical" compare with the text of this script's own Extended JSON writer
(fed by its own BSON decoder); that writer is also run on every document
pymongo built and must give pymongo's text (check "oracle", reported only
when it fails: a bug in this script, not in the extension):
  - symbol (pymongo: str), undefined (-> None), DBPointer (-> DBRef);
  - plain documents with a "$ref" key: pymongo decodes {"$ref", "$id", ...}
    to a DBRef and writes $ref, $id, $db first, whatever the document order
    (to_bson(..., true) keeps them as plain documents, as from_bson wrote);
  - regex options outside "ilmsux", repeated or unsorted: pymongo keeps a
    set of known flags; we write the options' bytes sorted, repeats kept;
  - datetimes outside years 1-9999 (Python's datetime cannot hold them):
    {"$date": {"$numberLong": ...}} in both modes;
  - binary subtypes 3 and 4 whose length is not 16: pymongo's C decoder
    fails ("invalid length or type code"), so pymongo-built documents only
    have 16-byte ones; subtype 0xff: its C encoder fails (SystemError);
  - decimal128 with a coefficient over 10**34 - 1 (pymongo raises Inexact)
    or the "11" combination field: non-canonical, so zero at that exponent;
    NaN and Infinity with payload bits.
Other pymongo limitations worked around:
  - binary subtype 0 decodes to bytes, subtype 2 without its inner length
    (json_util writes base64 of the data after it, as we do);
  - pymongo's encoder moves a top-level "_id" first: comparisons use the
    bytes it wrote, never the generated order;
  - regex options in pymongo-built documents are sorted subsets of "ilmsux";
  - decimal128 values given to pymongo are canonical (coefficient of at
    most 34 digits); its -NaN and sNaN print as "NaN", as ours do;
  - no key is a wrapper name ("$oid", "$date", "$regex", "$minKey", ...):
    from_bson would write such a plain document as it is and to_bson(...,
    true) would read it as the wrapper, or reject it (by design: the
    Extended JSON ambiguity; not generated).  Keys such as "$foo", "$in",
    "$id" alone, "$OID" are.
In --alphabet latin1 (for a LATIN1 database) strings and keys only hold
characters U+0001-U+00FF.

Ends with the line "crosscheck-decode: N passed, M failed", counting checks
(five per BSON document: relaxed, canonical, roundtrip or roundtrip-nul,
valid, stream; one per JSON value; plus any "oracle" failures);
exit status 0 iff M == 0.
"""
import argparse, base64, datetime, hashlib, io, json, json.encoder, math, random, struct, sys, time, traceback

sys.dont_write_bytecode = True   # no __pycache__ in the work tree
from crosscheck_common import pg_error, shorten   # before bson.json_util (see there)

import bson, psycopg2
from bson import SON, json_util
from bson.binary import Binary, UuidRepresentation
from bson.code import Code
from bson.codec_options import CodecOptions
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from decimal import Decimal

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
DT_MIN_MS, DT_MAX_MS = -62135596800000, 253402300799999   # 0001-01-01 .. 9999-12-31
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

# BSON element types
DOUBLE, STRING, DOC, ARRAY, BINARY, UNDEF, OID, BOOL, DATE, NULL, REGEX, DBPTR, \
    CODE, SYMBOL, CODEWS, INT32, TS, INT64, DEC, MINKEY, MAXKEY = \
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, \
    0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0xFF, 0x7F

TYPE_NAMES = {DOUBLE: "double", STRING: "string", DOC: "document", ARRAY: "array",
              BINARY: "binary", UNDEF: "undefined", OID: "objectid", BOOL: "bool",
              DATE: "datetime", NULL: "null", REGEX: "regex", DBPTR: "dbpointer",
              CODE: "code", SYMBOL: "symbol", CODEWS: "code_w_scope", INT32: "int32",
              TS: "timestamp", INT64: "int64", DEC: "decimal128", MINKEY: "minkey",
              MAXKEY: "maxkey"}

# A generated or decoded value is a node (type, value): DOC holds a list of
# (key, node) pairs, ARRAY a list of nodes, CODEWS (code, pairs), BINARY
# (subtype, data without subtype 2's inner length), REGEX (pattern, options),
# DBPTR (namespace, 12 bytes), TS (t, i), OID 12 bytes, DEC 16 bytes (BID,
# little-endian), DATE milliseconds, DOUBLE a float, ...; None for UNDEF,
# NULL, MINKEY, MAXKEY.

INT_EDGES = [0, 1, -1, 2, 9, 10, 127, 128, 255, 256, 65535, 65536, INT32_MAX,
             INT32_MAX - 1, INT32_MIN, INT32_MIN + 1, 10**9, -10**9]
INT64_EDGES = INT_EDGES + [INT32_MAX + 1, INT32_MIN - 1, INT64_MAX, INT64_MAX - 1,
                           INT64_MIN, INT64_MIN + 1, 2**53, 2**53 + 1, -2**53 - 1,
                           10**18, -10**18, 10**15, 4294967296, -4294967296]
DOUBLE_EDGES = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1.0, -1.0, 0.1,
                0.5, 1.5, 2.5, 0.3, 100.0, 1e15, 1e16, 1e17, 1e18, 9.999999999999998e18,
                1e19, 1.0000000000000002e19, 1e20, 1e21, 1e22, 1e23, 2.0**63, 2.0**64,
                2.0**53, 2.0**53 + 2, 9.3e18, 9223372036854774784.0, 5e-324, 1e-323,
                2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
                1e308, 1e-5, 1e-4, 0.0001, 1e-7, 123456789.0, 4.35, 1e100, 1e-100,
                123456.789, 9007199254740993.0, 0.1 + 0.2]
DT_EDGES = [0, -1, 1, 999, 1000, -999, -1000, -1001, DT_MIN_MS, DT_MAX_MS, DT_MIN_MS + 1,
            DT_MAX_MS - 999, 946684800000, 951782400000, -2208988800000, 1704164645678,
            -86400000, 86399999, 253402214400000, -30610224000000]
DT_OUT = [DT_MIN_MS - 1, DT_MAX_MS + 1, INT64_MIN, INT64_MAX, INT64_MIN + 1, -2**62, 2**62,
          DT_MIN_MS - 86400000, DT_MAX_MS + 1000 * 86400 * 366]
TS_EDGES = [(0, 0), (2**32 - 1, 2**32 - 1), (1, 2**32 - 1), (2**32 - 1, 0), (2**31, 2**31),
            (1700000000, 1)]
BIN_SUBTYPES = [0, 0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 0x80, 0x81, 0xfe]
REGEX_FLAGS = "ilmsux"
# "$" keys that no wrapper uses alone: from_bson/to_bson(..., true) keep them
# as plain documents (see the docstring)
DOLLAR_KEYS = ["$foo", "$", "$$", "$in", "$gt", "$set", "$é", "$numberlong", "$OID",
               " $oid", "$id", "$db", "$scope", "$options", "$type", "$Date", "$dateX",
               "$regularexpression", "$ref2"]
ASCII = [chr(c) for c in range(0x20, 0x7f)]
CONTROLS = [chr(c) for c in range(1, 0x20)] + ['"', "\\", "/", "\x7f", "\b", "\f", "\n",
                                               "\r", "\t", '"', "\\"]
NON_ASCII = {
    "utf8": ["é", "ж", "東", "😀", "ü", "€", "\x80", "\x9f", "\xa0", "\xff", "\u07ff",
             "\u0800", "\uffff", "\ufffd", "\ufeff", "\u2028", "\u2029", "\U00010000",
             "\U0010ffff", "𝄞", "ß"],
    "latin1": ["é", "ü", "ß", "ÿ", "©", "\x80", "\x9f", "\xa0", "\xad", "\xff", "×", "Æ"],
}
NON_ASCII_RANGES = {
    "utf8": [(0x80, 0x7ff), (0x800, 0xd7ff), (0xe000, 0xfffd), (0x10000, 0x10ffff)],
    "latin1": [(0x80, 0xff)],
}

def dec_bid(sign, coef, exp):
    """Decimal128 BID bytes of a canonical (sign, coefficient, exponent)."""
    high = (sign << 63) | ((exp + 6176) << 49) | (coef >> 64)
    return struct.pack("<QQ", coef & (2**64 - 1), high)

def dec_raw(high, low=0):
    return struct.pack("<QQ", low, high)

DEC_EDGES = [dec_raw(0x7c00000000000000), dec_raw(0xfc00000000000000),   # NaN, -NaN
             dec_raw(0x7e00000000000000), dec_raw(0xfe00000000000000),   # sNaN, -sNaN
             dec_raw(0x7800000000000000), dec_raw(0xf800000000000000),   # +-Infinity
             dec_bid(0, 0, 0), dec_bid(1, 0, 0), dec_bid(0, 0, -6176), dec_bid(1, 0, -6176),
             dec_bid(0, 0, 6111), dec_bid(1, 0, 6111), dec_bid(0, 1, -6176), dec_bid(1, 1, -6176),
             dec_bid(0, 10**34 - 1, 6111), dec_bid(1, 10**34 - 1, 6111),
             dec_bid(0, 10**34 - 1, -6176), dec_bid(0, 1, 6111), dec_bid(0, 10**33, 6111),
             dec_bid(0, 1, 0), dec_bid(0, 10, -1), dec_bid(0, 100, -2), dec_bid(1, 15, -1),
             dec_bid(0, 1, -6), dec_bid(0, 1, -7), dec_bid(0, 1, 3), dec_bid(0, 12345, -3),
             dec_bid(0, 2**112, 6111), dec_bid(0, 1234567890123456789012345678901234, -20)]
# non-canonical decimal128s (pymongo raises or differs): zero at some exponent
DEC_ODD = [dec_raw(0x3041ffffffffffff, 2**64 - 1), dec_raw(0x0001ed09bead87c0, 0x378d8e6400000000),
           dec_raw(0x6c10000000000000), dec_raw(0x6ffe000000000000), dec_raw(0x77fe000000000000),
           dec_raw(0x6000000000000000), dec_raw(0xe000000000000000, 5),
           dec_raw(0x7c00000000000001, 7), dec_raw(0x7c003fffffffffff, 2**64 - 1),
           dec_raw(0x7e00000000001234), dec_raw(0x7a00000000000000, 1), dec_raw(0xfbffffffffffffff, 5),
           dec_raw(0x7900000000000000), dec_raw(0x3042000000000000 | (1 << 48), 0)]

# ----------------------------------------------------------------- generator
class Gen:
    def __init__(self, rng, alphabet):
        self.r = rng
        self.alphabet = alphabet
        self.non_ascii = NON_ASCII[alphabet]
        self.ranges = NON_ASCII_RANGES[alphabet]
        self.tables = {}
        self.stats = {}
        self.nul = False       # NUL allowed in string values of this document
        self.exotic = False    # types pymongo cannot round-trip allowed

    def count(self, what):
        self.stats[what] = self.stats.get(what, 0) + 1

    # --- strings
    def random_non_ascii(self):
        lo, hi = self.r.choice(self.ranges)
        return chr(self.r.randint(lo, hi))

    def table(self, p_non, p_ctl, nul):
        key = (p_non, p_ctl, nul)
        t = self.tables.get(key)
        if t is None:     # 256 characters shared out by probability
            n_non, n_ctl = round(256 * p_non), round(256 * p_ctl)
            t = [self.non_ascii[j // 2 % len(self.non_ascii)] if j % 2 else self.random_non_ascii()
                 for j in range(n_non)]
            t += [CONTROLS[j % len(CONTROLS)] for j in range(n_ctl)]
            if nul:
                t += ["\x00"] * 4
            t += [ASCII[j % len(ASCII)] for j in range(256 - len(t))]
            self.tables[key] = t
        return t

    def text(self, n, nul=False):
        r = self.r
        t = self.table(r.choice([0, 0, 0.1, 0.5, 1]), r.choice([0, 0, 0.05, 0.3]), nul)
        s = "".join(map(t.__getitem__, r.randbytes(n)))
        if n and r.random() < 0.1:   # one fresh code point of any length class
            j = r.randrange(n)
            s = s[:j] + self.random_non_ascii() + s[j + 1:]
        return s

    def string(self, nul=None):
        r = self.r
        n = r.choice([0, 1, 2, 3, 5, 8, 12, 20, 24, 25, 26]) if r.random() < 0.97 \
            else r.choice([100, 255, 256, 1000, 4096])
        return self.text(n, nul=self.nul if nul is None else nul)

    def key(self, taken):
        r = self.r
        while True:
            if r.random() < 0.03:
                k = r.choice(DOLLAR_KEYS)
            else:
                k = self.text(r.choice([0, 1, 1, 2, 3, 4, 5, 8, 12, 30]))
                if k.startswith("$"):
                    k = "_" + k[1:]
            if k not in taken:
                taken.add(k)
                return k

    def pairs(self, n, depth, maxdepth):
        taken = set()
        return [(self.key(taken), self.value(depth, maxdepth)) for _ in range(n)]

    # --- scalars
    def int32(self):
        r = self.r
        x = r.random()
        if x < 0.3:
            return r.choice(INT_EDGES)
        if x < 0.6:
            return r.randint(-1000, 1000)
        return r.randint(INT32_MIN, INT32_MAX)

    def int64(self):
        r = self.r
        x = r.random()
        if x < 0.3:
            return r.choice(INT64_EDGES)
        if x < 0.45:      # fits int32: {"$numberLong": ...} in from_bson
            return self.int32()
        nd = r.randint(1, 19)
        return max(INT64_MIN, min(INT64_MAX, r.randint(0, 10**nd - 1) * r.choice([1, -1])))

    def double(self):
        r = self.r
        x = r.random()
        if x < 0.35:      # any bit pattern, NaNs and infinities included
            return struct.unpack("<d", r.randbytes(8))[0]
        if x < 0.42:      # subnormal
            return struct.unpack("<d", struct.pack("<Q", r.randint(1, 2**52 - 1) | (r.getrandbits(1) << 63)))[0]
        if x < 0.6:
            return r.choice(DOUBLE_EDGES) * r.choice([1, -1])
        if x < 0.72:      # integral
            return float(r.randint(-2**r.randint(1, 70), 2**r.randint(1, 70)))
        if x < 0.84:      # powers of ten, and their neighbours
            f = float("1e%d" % r.randint(-323, 308)) * r.choice([1, -1])
            return r.choice([f, f, math.nextafter(f, math.inf), math.nextafter(f, -math.inf)])
        return round(r.uniform(-1e6, 1e6), r.randint(0, 6))

    def decimal(self):
        r = self.r
        x = r.random()
        if x < 0.15:
            return r.choice(DEC_EDGES)
        nd = r.randint(1, 34)
        coef = r.randint(10**(nd - 1), 10**nd - 1) if r.random() < 0.95 else 0
        e = r.randint(-40, 10) if r.random() < 0.6 else r.randint(-6176, 6111)
        return dec_bid(r.getrandbits(1), coef, e)

    def date(self):
        r = self.r
        x = r.random()
        if x < 0.2:
            return r.choice(DT_EDGES)
        if x < 0.5:
            return r.randint(-2**41, 2**41)
        if x < 0.6:
            return r.randint(-10**6, 10**6) * 1000
        return r.randint(DT_MIN_MS, DT_MAX_MS)

    def binary(self, subtype=None):
        r = self.r
        st = r.choice(BIN_SUBTYPES) if subtype is None else subtype
        x = r.random()
        if st in (3, 4):
            n = 16
        elif x < 0.15:
            n = 0
        elif x < 0.95:
            n = r.randint(1, 40)
        else:
            n = r.choice([255, 256, 300, 1000])
        return (BINARY, (st, r.randbytes(n)))

    def regex_options(self):
        r = self.r
        return "".join(f for f in REGEX_FLAGS if r.random() < 0.3)

    def regex_pattern(self):
        return self.text(self.r.choice([0, 1, 3, 8, 20]))   # a cstring: no NUL

    def leaf(self, depth, maxdepth):
        node = self.scalar(depth, maxdepth)
        self.count(TYPE_NAMES[node[0]])
        return node

    def scalar(self, depth, maxdepth):
        r = self.r
        x = r.randrange(100)
        if x < 20:
            return (STRING, self.string())
        if x < 29:
            return (INT32, self.int32())
        if x < 38:
            return (INT64, self.int64())
        if x < 52:
            return (DOUBLE, self.double())
        if x < 56:
            return (BOOL, r.random() < 0.5)
        if x < 59:
            return (NULL, None)
        if x < 62:
            return (OID, r.randbytes(12))
        if x < 68:
            return (DATE, self.date())
        if x < 74:
            return self.binary()
        if x < 77:
            return (REGEX, (self.regex_pattern(), self.regex_options()))
        if x < 79:
            return (CODE, self.string())
        if x < 82:
            scope = self.pairs(r.randint(0, 3), depth + 1, maxdepth) if depth < maxdepth else []
            return (CODEWS, (self.string(), scope))
        if x < 85:
            return (TS, r.choice(TS_EDGES) if r.random() < 0.2 else
                    (r.getrandbits(32), r.getrandbits(32)))
        if x < 96:
            return (DEC, self.decimal())
        return (MINKEY, None) if x < 98 else (MAXKEY, None)

    def exotic_leaf(self, depth, maxdepth):
        """One of the values pymongo maps to other types (see the docstring)."""
        r = self.r
        kind = r.choice(["symbol", "undefined", "dbpointer", "regex", "date", "binary",
                         "decimal", "dbref"])
        self.count("exotic " + kind)
        if kind == "symbol":
            return (SYMBOL, self.string())
        if kind == "undefined":
            return (UNDEF, None)
        if kind == "dbpointer":
            return (DBPTR, (self.string(), r.randbytes(12)))
        if kind == "regex":
            opts = list(r.choice(["", "i", "xsmli", "uxsmli", "ii", "mmxi", "abz", "gimuy",
                                  "ilmsux", "xu", "zyxwvu"]))
            r.shuffle(opts)
            return (REGEX, (self.regex_pattern(), "".join(opts)))
        if kind == "date":
            return (DATE, r.choice(DT_OUT) if r.random() < 0.4 else
                    r.choice([r.randint(INT64_MIN, DT_MIN_MS - 1), r.randint(DT_MAX_MS + 1, INT64_MAX)]))
        if kind == "binary":
            st = r.choice([3, 4, 0xff])
            if st == 0xff:
                return self.binary(st)
            return (BINARY, (st, r.randbytes(r.choice([0, 1, 15, 17, 32, r.randint(2, 40)]))))
        if kind == "decimal":
            return (DEC, r.choice(DEC_ODD))
        # a DBRef-like plain document, its keys in any order
        p = [("$ref", (STRING, self.string(nul=False))), ("$id", self.value(depth + 1, maxdepth))]
        if r.random() < 0.5:
            p.append(("$db", (STRING, self.string(nul=False))))
        if r.random() < 0.3:
            p.append(("x", self.value(depth + 1, maxdepth)))
        r.shuffle(p)
        return (DOC, p)

    def value(self, depth, maxdepth):
        r = self.r
        x = r.random()
        if depth < maxdepth and x < 0.22:
            n = 0 if r.random() < 0.1 else r.randint(1, 6 if r.random() < 0.9 else 20)
            if x < 0.11:
                self.count("document")
                return (DOC, self.pairs(n, depth + 1, maxdepth))
            self.count("array")
            return (ARRAY, [self.value(depth + 1, maxdepth) for _ in range(n)])
        if self.exotic and r.random() < 0.12:
            return self.exotic_leaf(depth, maxdepth)
        return self.leaf(depth, maxdepth)

    # --- documents
    def edge_doc(self):
        """Every edge value of the types pymongo round-trips exactly."""
        arr = [(INT32, v) for v in INT_EDGES] + [(INT64, v) for v in INT64_EDGES]
        arr += [(DOUBLE, f * s) for f in DOUBLE_EDGES for s in (1, -1)]
        arr += [(DOUBLE, float("1e%d" % k)) for k in range(-30, 31)]
        arr += [(DEC, d) for d in DEC_EDGES] + [(DATE, ms) for ms in DT_EDGES]
        arr += [(TS, ts) for ts in TS_EDGES]
        arr += [(BINARY, (st, bytes(range(n)))) for st in sorted(set(BIN_SUBTYPES))
                for n in ([16] if st in (3, 4) else [0, 1, 2, 3, 4, 5, 16])]
        arr += [(REGEX, ("^a.*b$", o)) for o in ["", "i", "ilmsux", "lsx", "u"]]
        arr += [(CODE, ""), (CODE, "f()"), (CODEWS, ("", [])), (CODEWS, ("f(x)", [("x", (INT64, 1))])),
                (MINKEY, None), (MAXKEY, None), (OID, bytes(12)), (OID, b"\xff" * 12),
                (STRING, ""), (STRING, "".join(CONTROLS) + "".join(self.non_ascii)),
                (BOOL, True), (BOOL, False), (NULL, None), (DOC, []), (ARRAY, [])]
        keys = [("k%d" % j, v) for j, v in enumerate(arr[:50])]
        return [("all", (ARRAY, arr)), ("keys", (DOC, keys)),
                ("".join(CONTROLS[:20]), (INT32, 1)), ("".join(self.non_ascii), (INT32, 2)), ("", (INT32, 3))]

    def exotic_edge_doc(self):
        arr = [(SYMBOL, ""), (SYMBOL, "sym" + "".join(self.non_ascii)), (UNDEF, None),
               (DBPTR, ("db.coll", bytes(range(12)))), (DBPTR, ("", b"\xff" * 12))]
        arr += [(DATE, ms) for ms in DT_OUT]
        arr += [(DEC, d) for d in DEC_ODD]
        arr += [(REGEX, ("a", o)) for o in ["xusmli", "iix", "zaq", "gimsuy", "sssi", "ba"]]
        arr += [(BINARY, (st, bytes(range(n)))) for st in (3, 4) for n in (0, 1, 15, 17)]
        arr += [(BINARY, (0xff, b"")), (BINARY, (0xff, b"abc"))]
        arr += [(DOC, [("$ref", (STRING, "c")), ("$id", (INT32, 1))]),
                (DOC, [("$id", (OID, bytes(12))), ("$ref", (STRING, "c")), ("$db", (STRING, "d"))]),
                (DOC, [("a", (INT32, 1)), ("$db", (STRING, "d")), ("$ref", (STRING, "c")),
                       ("$id", (NULL, None))])]
        return [("exotic", (ARRAY, arr)), ("sym", (SYMBOL, "x")), ("u", (UNDEF, None))]

    def doc(self, i):
        """(pairs, raw): raw documents are encoded here, the others by pymongo."""
        r = self.r
        self.exotic = i == 1 or i % 20 == 7
        self.nul = i > 5 and r.random() < 0.1
        if self.nul:
            self.count("documents allowing NUL")
        if i == 0:
            return self.edge_doc(), False
        if i == 1:
            return self.exotic_edge_doc(), True
        if 2 <= i <= 3:   # deep: documents, arrays and code scopes mixed
            v = (DEC, self.decimal())
            for d in range(r.randint(90, 120)):
                x = r.random()
                if x < 0.4:
                    v = (DOC, [(self.key(set()), v), ("n", (INT32, d))])
                elif x < 0.8:
                    v = (ARRAY, [v, (INT64, d)])
                else:
                    v = (CODEWS, ("c", [("s", v)]))
            return [("deep", v)], False
        if i == 4:        # big containers
            return [("arr", (ARRAY, [self.value(2, 3) for _ in range(2500)])),
                    ("obj", (DOC, self.pairs(1500, 1, 2)))], False
        if i == 5:        # long strings
            return [("s1", (STRING, self.text(100000))), ("s2", (STRING, self.text(65536))),
                    ("c", (CODE, self.text(30000)))], False
        taken = set()
        d = [(self.key(taken), self.value(1, r.choice([1, 2, 3, 4, 5, 6])))
             for _ in range(0 if r.random() < 0.02 else r.randint(1, 8))]
        if self.exotic:   # at least one value pymongo cannot round-trip
            d.insert(r.randint(0, len(d)), (self.key(taken), self.exotic_leaf(1, 3)))
        return d, self.exotic

    # --- JSON values for the jsonb round trip
    def json_value(self, depth, maxdepth):
        r = self.r
        x = 0 if depth == 0 else r.random()   # to_bson takes an object
        if depth < maxdepth and x < 0.2 or depth == 0:
            n = 0 if r.random() < 0.05 else r.randint(1, 6)
            if x < 0.1:
                return {self.text(r.choice([0, 1, 2, 3, 5, 8, 12])) if r.random() > 0.05
                        else r.choice(DOLLAR_KEYS + ["$oid", "$date", "$numberLong", "$regex"]):
                        self.json_value(depth + 1, maxdepth) for _ in range(n)}
            return [self.json_value(depth + 1, maxdepth) for _ in range(n)]
        x = r.random()
        if x < 0.35:
            return self.string(nul=False)
        if x < 0.6:
            return self.int64()
        if x < 0.9:
            while True:
                f = self.double()
                if math.isfinite(f):
                    return f
        return r.choice([True, False, None])

def json_text(v):
    """x as JSON text: floats as repr() writes them."""
    if isinstance(v, dict):
        return "{" + ", ".join(js(k) + ": " + json_text(x)
                               for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(json_text(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return js(v)
    return json.dumps(v)

# ------------------------------------------------- raw BSON encode and decode
def enc_str(s):
    b = s.encode("utf-8")
    return struct.pack("<i", len(b) + 1) + b + b"\0"

def enc_cstr(s):
    b = s.encode("utf-8")
    assert b"\0" not in b
    return b + b"\0"

def enc_doc(pairs):
    body = b"".join(bytes([node[0]]) + enc_cstr(k) + enc_val(node) for k, node in pairs)
    return struct.pack("<i", len(body) + 5) + body + b"\0"

def enc_val(node):
    t, v = node
    if t == DOUBLE:
        return struct.pack("<d", v)
    if t in (STRING, CODE, SYMBOL):
        return enc_str(v)
    if t == DOC:
        return enc_doc(v)
    if t == ARRAY:
        return enc_doc([(str(j), x) for j, x in enumerate(v)])
    if t == BINARY:
        st, data = v
        if st == 2:
            data = struct.pack("<i", len(data)) + data
        return struct.pack("<i", len(data)) + bytes([st]) + data
    if t in (UNDEF, NULL, MINKEY, MAXKEY):
        return b""
    if t in (OID, DEC):
        return v
    if t == BOOL:
        return b"\x01" if v else b"\x00"
    if t in (DATE, INT64):
        return struct.pack("<q", v)
    if t == INT32:
        return struct.pack("<i", v)
    if t == TS:
        return struct.pack("<II", v[1], v[0])
    if t == REGEX:
        return enc_cstr(v[0]) + enc_cstr(v[1])
    if t == DBPTR:
        return enc_str(v[0]) + v[1]
    if t == CODEWS:
        body = enc_str(v[0]) + enc_doc(v[1])
        return struct.pack("<i", len(body) + 4) + body
    raise ValueError(t)

def to_py(node):
    """The value for pymongo's encoder (types it round-trips exactly)."""
    t, v = node
    if t == DOC:
        return SON((k, to_py(x)) for k, x in v)
    if t == ARRAY:
        return [to_py(x) for x in v]
    if t in (DOUBLE, STRING, BOOL, NULL, INT32):
        return v
    if t == INT64:
        return Int64(v)
    if t == BINARY:
        return Binary(v[1], v[0])
    if t == OID:
        return ObjectId(v)
    if t == DATE:
        return EPOCH + datetime.timedelta(milliseconds=v)
    if t == REGEX:
        return Regex(v[0], v[1])
    if t == CODE:
        return Code(v)
    if t == CODEWS:
        return Code(v[0], SON((k, to_py(x)) for k, x in v[1]))
    if t == TS:
        return Timestamp(*v)
    if t == DEC:
        return Decimal128.from_bid(v)
    if t == MINKEY:
        return MinKey()
    if t == MAXKEY:
        return MaxKey()
    raise ValueError("pymongo cannot round-trip type 0x%02x" % t)

FIXED = {DOUBLE: 8, OID: 12, BOOL: 1, DATE: 8, INT32: 4, TS: 8, INT64: 8, DEC: 16,
         UNDEF: 0, NULL: 0, MINKEY: 0, MAXKEY: 0}

def dec_str(buf, p):
    n = int.from_bytes(buf[p:p + 4], "little", signed=True)
    if n < 1 or buf[p + 3 + n] != 0:
        raise ValueError("bad string length %d at %d" % (n, p))
    return buf[p + 4:p + 3 + n].decode("utf-8"), p + 4 + n

def dec_cstr(buf, p):
    z = buf.index(0, p)
    return buf[p:z].decode("utf-8"), z + 1

def dec_doc(buf, off=0, array=False):
    """(pairs or nodes, end offset) of the (sub)document at buf[off]."""
    n = int.from_bytes(buf[off:off + 4], "little", signed=True)
    end = off + n - 1
    if n < 5 or end >= len(buf) or buf[end] != 0:
        raise ValueError("bad document length %d at %d" % (n, off))
    p, out = off + 4, []
    while p < end:
        t = buf[p]
        k, p = dec_cstr(buf, p + 1)
        if t in FIXED:
            raw = buf[p:p + FIXED[t]]
            p += FIXED[t]
            if t == DOUBLE:
                v = struct.unpack("<d", raw)[0]
            elif t in (DATE, INT64):
                v = struct.unpack("<q", raw)[0]
            elif t == INT32:
                v = struct.unpack("<i", raw)[0]
            elif t == BOOL:
                if raw not in (b"\0", b"\1"):
                    raise ValueError("bool byte at %d" % p)
                v = raw == b"\1"
            elif t == TS:
                i, ts = struct.unpack("<II", raw)
                v = (ts, i)
            elif t in (OID, DEC):
                v = bytes(raw)
            else:
                v = None
        elif t in (STRING, CODE, SYMBOL):
            v, p = dec_str(buf, p)
        elif t in (DOC, ARRAY):
            v, p = dec_doc(buf, p, t == ARRAY)
        elif t == BINARY:
            bl = int.from_bytes(buf[p:p + 4], "little", signed=True)
            st, data = buf[p + 4], bytes(buf[p + 5:p + 5 + bl])
            if st == 2:
                if int.from_bytes(data[:4], "little", signed=True) != bl - 4:
                    raise ValueError("bad subtype 2 length at %d" % p)
                data = data[4:]
            v, p = (st, data), p + 5 + bl
        elif t == REGEX:
            pat, p = dec_cstr(buf, p)
            opts, p = dec_cstr(buf, p)
            v = (pat, opts)
        elif t == DBPTR:
            ns, p = dec_str(buf, p)
            v, p = (ns, bytes(buf[p:p + 12])), p + 12
        elif t == CODEWS:
            tot = int.from_bytes(buf[p:p + 4], "little", signed=True)
            code, q = dec_str(buf, p + 4)
            scope, q = dec_doc(buf, q)
            if q != p + tot:
                raise ValueError("bad code with scope length at %d" % p)
            v, p = (code, scope), q
        else:
            raise ValueError("element type 0x%02x at %d" % (t, p))
        if array:
            if k != str(len(out)):
                raise ValueError("array key %r at %d" % (k, p))
            out.append((t, v))
        else:
            out.append((k, (t, v)))
    if p != end:
        raise ValueError("element overruns its document at %d" % p)
    return out, end + 1

def decode(b):
    pairs, end = dec_doc(b)
    if end != len(b):
        raise ValueError("%d bytes after the document" % (len(b) - end))
    return pairs

# ------------------------------------------------------ the expected texts
def dec128_text(bid):
    """Extended JSON text of a decimal128 (spec: NaN payloads and sign are
    dropped, a non-canonical coefficient is zero)."""
    low, high = struct.unpack("<QQ", bid)
    sign = high >> 63
    if (high >> 58) & 0x1f == 0x1f:
        return "NaN"
    if (high >> 58) & 0x1f == 0x1e:
        return "-Infinity" if sign else "Infinity"
    if (high >> 61) & 3 == 3:
        exp, coef = (high >> 47) & 0x3fff, 0
    else:
        exp, coef = (high >> 49) & 0x3fff, ((high & (2**49 - 1)) << 64) | low
        if coef > 10**34 - 1:
            coef = 0
    return str(Decimal((sign, tuple(map(int, str(coef))), exp - 6176)))

def iso_date(ms):
    d = EPOCH + datetime.timedelta(milliseconds=ms)
    s = "%04d-%02d-%02dT%02d:%02d:%02d" % (d.year, d.month, d.day, d.hour, d.minute, d.second)
    return s + (".%03d" % (ms % 1000) if ms % 1000 else "") + "Z"

# json.dumps(s, ensure_ascii=False) for a str, without its overhead
js = json.encoder.encode_basestring

def write_doc(pairs, canon, array=False):
    if array:
        return "[" + ", ".join(write_val(x, canon) for x in pairs) + "]"
    return "{" + ", ".join(js(k) + ": " + write_val(x, canon) for k, x in pairs) + "}"

def write_val(node, canon):
    """Extended JSON v2 of a decoded node, as pymongo would write it had it
    the type (see the docstring)."""
    t, v = node
    if t == DOUBLE:
        if math.isnan(v):
            return '{"$numberDouble": "NaN"}'
        if math.isinf(v):
            return '{"$numberDouble": "%sInfinity"}' % ("-" if v < 0 else "")
        return '{"$numberDouble": "%r"}' % v if canon else repr(v)
    if t in (STRING,):
        return js(v)
    if t in (DOC, ARRAY):
        return write_doc(v, canon, t == ARRAY)
    if t == BINARY:
        return '{"$binary": {"base64": "%s", "subType": "%02x"}}' % (base64.b64encode(v[1]).decode(), v[0])
    if t == UNDEF:
        return '{"$undefined": true}'
    if t == OID:
        return '{"$oid": "%s"}' % v.hex()
    if t == BOOL:
        return "true" if v else "false"
    if t == DATE:
        if not canon and 0 <= v <= DT_MAX_MS:
            return '{"$date": "%s"}' % iso_date(v)
        return '{"$date": {"$numberLong": "%d"}}' % v
    if t == NULL:
        return "null"
    if t == REGEX:
        return '{"$regularExpression": {"pattern": %s, "options": %s}}' % (js(v[0]), js("".join(sorted(v[1]))))
    if t == DBPTR:
        return '{"$dbPointer": {"$ref": %s, "$id": {"$oid": "%s"}}}' % (js(v[0]), v[1].hex())
    if t == CODE:
        return '{"$code": %s}' % js(v)
    if t == SYMBOL:
        return '{"$symbol": %s}' % js(v)
    if t == CODEWS:
        return '{"$code": %s, "$scope": %s}' % (js(v[0]), write_doc(v[1], canon))
    if t == INT32:
        return '{"$numberInt": "%d"}' % v if canon else str(v)
    if t == TS:
        return '{"$timestamp": {"t": %d, "i": %d}}' % v
    if t == INT64:
        return '{"$numberLong": "%d"}' % v if canon else str(v)
    if t == DEC:
        return '{"$numberDecimal": "%s"}' % dec128_text(v)
    if t == MINKEY:
        return '{"$minKey": 1}'
    if t == MAXKEY:
        return '{"$maxKey": 1}'
    raise ValueError(t)

DECODE_OPTS = CodecOptions(document_class=dict, tz_aware=True,
                           uuid_representation=UuidRepresentation.UNSPECIFIED)

def pymongo_text(b, canon):
    doc = bson.decode(b, codec_options=DECODE_OPTS)
    return json_util.dumps(doc, ensure_ascii=False, json_options=(
        json_util.CANONICAL_JSON_OPTIONS if canon else json_util.RELAXED_JSON_OPTIONS))

def has_nul(nodes):
    """Whether a string-like value (not a key: keys cannot) holds NUL."""
    for t, v in nodes:
        if t in (STRING, CODE, SYMBOL) and "\0" in v:
            return True
        if t == DBPTR and "\0" in v[0]:
            return True
        if t == DOC and has_nul(x for _, x in v):
            return True
        if t == ARRAY and has_nul(v):
            return True
        if t == CODEWS and ("\0" in v[0] or has_nul(x for _, x in v[1])):
            return True
    return False

# --------------------------------------------------- round trip comparison
def norm(node):
    """A comparable form of a decoded node: documents as dicts (order
    ignored), NaN as NaN, decimal128 as its text, regex options sorted."""
    t, v = node
    if t == DOC:
        d = {k: norm(x) for k, x in v}
        if len(d) != len(v):
            raise ValueError("duplicate keys")
        return d
    if t == ARRAY:
        return [norm(x) for x in v]
    if t == DOUBLE:
        return (t, "NaN" if math.isnan(v) else struct.pack("<d", v))
    if t == DEC:
        return (t, dec128_text(v))
    if t == REGEX:
        return (t, v[0], "".join(sorted(v[1])))
    if t == CODEWS:
        return (t, v[0], norm((DOC, v[1])))
    return (t, v)

def first_diff(a, b, path="$"):
    """Where two normalized trees first differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return "%s: keys %r vs %r" % (path, sorted(set(a) - set(b))[:5], sorted(set(b) - set(a))[:5])
        for k in a:
            d = first_diff(a[k], b[k], "%s.%s" % (path, js(k)))
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: %d vs %d elements" % (path, len(a), len(b))
        for j, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, "%s[%d]" % (path, j))
            if d:
                return d
        return None
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == 3 == len(b) and a[0] == CODEWS == b[0]:
        if a[1] != b[1]:
            return "%s: code %r vs %r" % (path, a[1][:60], b[1][:60])
        return first_diff(a[2], b[2], path + ".$scope")
    if a != b:
        return "%s: %s vs %s" % (path, shorten(repr(a), 150), shorten(repr(b), 150))
    return None

def py_diff(a, b, path="$"):
    """Where two pymongo-decoded values first differ (type for type), or None."""
    if type(a) is not type(b):
        return "%s: %s vs %s" % (path, type(a).__name__, type(b).__name__)
    if isinstance(a, dict):
        if set(a) != set(b):
            return "%s: keys differ" % path
        for k in a:
            d = py_diff(a[k], b[k], "%s.%s" % (path, js(k)))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d vs %d elements" % (path, len(a), len(b))
        for j, (x, y) in enumerate(zip(a, b)):
            d = py_diff(x, y, "%s[%d]" % (path, j))
            if d:
                return d
        return None
    if isinstance(a, float):
        ok = (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    elif isinstance(a, Decimal128):
        ok = str(a) == str(b)
    elif isinstance(a, Code):
        if str(a) != str(b) or (a.scope is None) != (b.scope is None):
            return "%s: %r vs %r" % (path, a, b)
        return py_diff(a.scope, b.scope, path + ".$scope") if a.scope is not None else None
    elif isinstance(a, Binary):
        ok = a.subtype == b.subtype and bytes(a) == bytes(b)
    elif isinstance(a, Regex):
        ok = a.pattern == b.pattern and a.flags == b.flags
    else:
        ok = a == b
    return None if ok else "%s: %s vs %s" % (path, shorten(repr(a), 150), shorten(repr(b), 150))

# ---------------------------------------------------------------------- main
def generate(count, seed, alphabet):
    """[(id, bson bytes, built raw?, NUL in a string?)], [(id, json text)], stats."""
    gen = Gen(random.Random(seed), alphabet)
    docs, jdocs = [], []
    for i in range(count):
        pairs, raw = gen.doc(i)
        if raw:
            b = enc_doc(pairs)
        else:
            b = bson.encode(to_py((DOC, pairs)))
        docs.append((i, b, raw, has_nul(x for _, x in pairs)))
        jdocs.append((i, json_text(gen.json_value(0, gen.r.choice([1, 2, 3, 4, 5, 6])))))
    return docs, jdocs, gen.stats

def query_all(cur, expr, table="t", where="true", key="id"):
    """{key: value (bytes for bytea) or 'error ...'}.  One query; if that
    fails, one per row to find the failing rows."""
    conv = lambda v: bytes(v) if isinstance(v, memoryview) else v
    try:
        cur.execute("SELECT %s, %s FROM %s WHERE %s ORDER BY 1" % (key, expr, table, where))
        return {i: conv(v) for i, v in cur.fetchall()}
    except psycopg2.Error:
        if cur.connection.closed:
            raise
    res = {}
    cur.execute("SELECT %s FROM %s WHERE %s ORDER BY 1" % (key, table, where))
    for (i,) in cur.fetchall():
        try:
            cur.execute("SELECT %s FROM %s WHERE %s = %%s" % (expr, table, key), (i,))
            res[i] = conv(cur.fetchone()[0])
        except psycopg2.Error as e:
            if cur.connection.closed:
                raise
            res[i] = "error " + pg_error(e)
    return res

SQLSTATE_FUNC = """
CREATE FUNCTION pg_temp.from_bson_sqlstate(b bytea) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM from_bson(b);
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END
$f$"""

def copy_in(cur, table, cols, rows):
    def esc(t):      # COPY text format
        return t.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    data = "".join("\t".join(esc(c) for c in row) + "\n" for row in rows)
    cur.copy_expert("COPY %s (%s) FROM STDIN" % (table, cols), io.BytesIO(data.encode("utf-8")))

def run(docs, jdocs, alphabet):
    times = [time.time()]
    conn = psycopg2.connect("")
    conn.set_client_encoding("UTF8")    # the database may be LATIN1
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SHOW server_encoding")
    enc = cur.fetchone()[0]
    if alphabet == "utf8" and enc not in ("UTF8", "SQL_ASCII"):
        print("note: server_encoding is %s: use --alphabet latin1" % enc, file=sys.stderr)
    cur.execute("CREATE TEMP TABLE t (id int PRIMARY KEY, b bytea NOT NULL, nul boolean NOT NULL)")
    cur.execute("CREATE TEMP TABLE j (id int PRIMARY KEY, doc jsonb NOT NULL)")
    copy_in(cur, "t", "id, b, nul", ((str(i), "\\x" + b.hex(), "t" if nul else "f")
                                      for i, b, _, nul in docs))
    copy_in(cur, "j", "id, doc", ((str(i), text) for i, text in jdocs))
    cur.execute("CREATE TEMP TABLE s AS SELECT id / 100 AS chunk, string_agg(b, ''::bytea ORDER BY id)"
                " AS stream FROM t GROUP BY 1")
    cur.execute(SQLSTATE_FUNC)
    times.append(time.time())
    got = {
        "relaxed": query_all(cur, "bson_to_json(b)::text"),
        "canonical": query_all(cur, "bson_to_json(b, true)::text"),
        "roundtrip": query_all(cur, "to_bson(from_bson(b), true)", where="NOT nul"),
        "roundtrip-nul": query_all(cur, "pg_temp.from_bson_sqlstate(b)", where="nul"),
        "valid": query_all(cur, "bson_is_valid(b)"),
        "stream": query_all(cur, "(SELECT array_agg(md5(d)) FROM bson_documents(stream) d)",
                            table="s", key="chunk"),
        "jsonb": query_all(cur, "from_bson(to_bson(doc)) = doc", table="j"),
    }
    jfail = {}       # details of the failing jsonb round trips
    for i, ok in got["jsonb"].items():
        if ok is not True and len(jfail) < 10:
            try:
                cur.execute("SELECT doc::text, encode(to_bson(doc), 'hex'), from_bson(to_bson(doc))::text"
                            " FROM j WHERE id = %s", (i,))
                jfail[i] = cur.fetchone()
            except psycopg2.Error as e:
                if conn.closed:
                    raise
                cur.execute("SELECT doc::text FROM j WHERE id = %s", (i,))
                jfail[i] = (cur.fetchone()[0], pg_error(e), "")
    conn.close()
    times.append(time.time())
    return got, jfail, times

def text_diff(exp, got):
    """Both texts around their first difference."""
    if not isinstance(got, str):
        return "expected %s\n    got      %r" % (shorten(exp, 400), got)
    n = next((j for j, (x, y) in enumerate(zip(exp, got)) if x != y), min(len(exp), len(got)))
    lo = max(0, n - 120)
    return ("first difference at char %d of %d/%d\n    expected ...%s\n    got      ...%s"
            % (n, len(exp), len(got), exp[lo:n + 120], got[lo:n + 120]))

def check(docs, jdocs, got, jfail):
    """[(check, id, ok, detail function)]."""
    results = []
    def add(check, i, ok, detail):
        results.append((check, i, ok, detail))
    for i, b, raw, nul in docs:
        nodes = decode(b)
        if has_nul(x for _, x in nodes) != nul:
            raise AssertionError("document %d: NUL detection differs" % i)
        for canon, name in ((False, "relaxed"), (True, "canonical")):
            mine = write_doc(nodes, canon)
            g = got[name].get(i, "no row")
            if raw:
                add(name, i, g == mine, lambda e=mine, g=g: text_diff(e, g))
            else:
                py = pymongo_text(b, canon)
                add(name, i, g == py, lambda e=py, g=g: text_diff(e, g))
                if mine != py:
                    add("oracle", i, False, lambda e=py, m=mine, c=canon:
                        "this script's writer (canonical %s) disagrees with pymongo: %s"
                        % (c, text_diff(e, m)))
        if nul:
            g = got["roundtrip-nul"].get(i, "no row")
            add("roundtrip-nul", i, g.startswith("22P05 "), lambda g=g: "from_bson(b): expected SQLSTATE 22P05, got %s" % g)
        else:
            g = got["roundtrip"].get(i, "no row")
            if not isinstance(g, bytes):
                add("roundtrip", i, False, lambda g=g: "to_bson(from_bson(b), true): %s" % g)
            else:
                try:
                    d = first_diff(norm((DOC, nodes)), norm((DOC, decode(g))))
                    if d is None and not raw:
                        d = py_diff(bson.decode(b, codec_options=DECODE_OPTS),
                                    bson.decode(g, codec_options=DECODE_OPTS))
                        d = d and "pymongo: " + d
                except Exception as e:
                    d = "cannot decode it: %s: %s" % (type(e).__name__, e)
                add("roundtrip", i, d is None, lambda d=d, g=g: "%s\n    to_bson(from_bson(b), true) = %s"
                    % (d, shorten(g.hex(), 400)))
        v = got["valid"].get(i, "no row")
        add("valid", i, v is True, lambda v=v: "bson_is_valid: %s" % v)
    by_chunk = {}
    for i, b, _, _ in docs:
        by_chunk.setdefault(i // 100, []).append((i, hashlib.md5(b).hexdigest()))
    for c, members in by_chunk.items():
        g = got["stream"].get(c, "no row")
        for pos, (i, h) in enumerate(members):
            ok = isinstance(g, list) and len(g) == len(members) and g[pos] == h
            add("stream", i, ok, lambda g=g, n=len(members), pos=pos, c=c:
                "bson_documents of documents %d..%d: %s" % (
                    c * 100, c * 100 + n - 1, "%d documents" % len(g) if isinstance(g, list)
                    else g) + (", #%d differs" % pos if isinstance(g, list) and len(g) == n else ""))
    for i, text in jdocs:
        g = got["jsonb"].get(i, "no row")
        add("jsonb", i, g is True, lambda i=i, g=g, text=text: "from_bson(to_bson(x::jsonb)) = x::jsonb: %s\n"
            "    x        %s\n    x::jsonb %s\n    to_bson  %s\n    from_bson %s" % (
                (g, shorten(text, 300)) + tuple(shorten(str(x), 300) for x in jfail.get(i, ("?",) * 3))))
    return results

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--alphabet", choices=["utf8", "latin1"], default="utf8")
    args = ap.parse_args()
    t0 = time.time()
    docs, jdocs, stats = generate(args.count, args.seed, args.alphabet)
    t1 = time.time()
    try:
        got, jfail, times = run(docs, jdocs, args.alphabet)
    except Exception as e:   # lost connection, crashed server, ...
        traceback.print_exc()
        print("crosscheck-decode aborted: %s: %s" % (type(e).__name__, e))
        print("crosscheck-decode: 0 passed, %d failed" % (5 * len(docs) + len(jdocs)))
        return 1
    t2 = time.time()
    results = check(docs, jdocs, got, jfail)
    t3 = time.time()
    bson_of = {i: b for i, b, _, _ in docs}
    per_check, shown, n_fail = {}, 0, 0
    for name, i, ok, detail in results:
        p = per_check.setdefault(name, [0, 0])
        p[0 if ok else 1] += 1
        if ok:
            continue
        n_fail += 1
        if shown < 10:
            shown += 1
            print("FAIL %s, %s %d" % (name, "json value" if name == "jsonb" else "document", i))
            if name != "jsonb":
                print("  bson: %s (%d bytes)" % (shorten(bson_of[i].hex(), 600), len(bson_of[i])))
            print("  " + detail())
    print("generated: %d documents (%d built raw), %d JSON values; %s" % (
        len(docs), sum(raw for _, _, raw, _ in docs), len(jdocs),
        ", ".join("%s %d" % kv for kv in sorted(stats.items()))), file=sys.stderr)
    print("checks: %s" % ", ".join("%s %d passed/%d failed" % (c, p[0], p[1])
                                   for c, p in per_check.items()), file=sys.stderr)
    print("timing: generate %.1fs, load %.1fs, queries %.1fs, compare %.1fs"
          % (t1 - t0, times[1] - times[0], times[2] - times[1], t3 - t2), file=sys.stderr)
    print("crosscheck-decode: %d passed, %d failed" % (len(results) - n_fail, n_fail))
    return 0 if n_fail == 0 else 1

if __name__ == "__main__":
    sys.exit(main())
