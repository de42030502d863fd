#!/usr/bin/python3
"""
make_corpus.py: write the seed corpus of fuzz/fuzz_bson_reader.c.

    /usr/bin/python3 fuzz/make_corpus.py

(/usr/bin/python3 because it has pymongo's bson module; the pyenv python3
on PATH does not.)  Rewrites fuzz/corpus/ from scratch: one BSON document
per file, valid ones covering every element type and the edges of each,
deep nesting, and a handful of malformed ones (bad_*.bson).

Documents are built from raw bytes with the small encoder below, so that
values pymongo will not write (undefined, DBPointer, symbol, datetimes past
year 9999, non-canonical decimal128, a string with an embedded NUL) are
exact.  As a cross-check every valid file except the few pymongo 3.11
cannot represent is decoded with pymongo's bson.decode (its C extension
validates too), and a few are compared byte for byte with bson.encode of
the same values; every bad_ file must be rejected by pymongo.
"""

import os
import struct
import sys

import bson
from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.son import SON
from bson.timestamp import Timestamp

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


# ---------------------------------------------------------------------------
# A raw encoder: every piece is bytes
# ---------------------------------------------------------------------------

def i32(n):
    return struct.pack("<i", n)


def u32(n):
    return struct.pack("<I", n)


def i64(n):
    return struct.pack("<q", n)


def cstr(s):
    return (s.encode("utf-8") if isinstance(s, str) else s) + b"\0"


def string(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return i32(len(b) + 1) + b + b"\0"


def doc(*elems):
    body = b"".join(elems)
    return i32(len(body) + 5) + body + b"\0"


def arr(*vals):
    """vals: (type, value bytes) pairs, keyed "0", "1", ..."""
    return doc(*(el(t, str(i), v) for i, (t, v) in enumerate(vals)))


def el(t, key, val=b""):
    return bytes([t]) + cstr(key) + val


def binary(subtype, payload):
    if subtype == 2:
        payload = i32(len(payload)) + payload
    return i32(len(payload)) + bytes([subtype]) + payload


def dec128(low, high):
    return struct.pack("<QQ", low, high)


def dec_text(text):
    return Decimal128(text).bid


def cws(code, scope):
    body = string(code) + scope
    return i32(len(body) + 4) + body


DOUBLE, STRING, DOCUMENT, ARRAY, BINARY, UNDEFINED, OBJECTID, BOOL = range(1, 9)
DATETIME, NULL, REGEX, DBPOINTER, CODE, SYMBOL, CODE_W_SCOPE = range(9, 16)
INT32, TIMESTAMP, INT64, DECIMAL128 = range(0x10, 0x14)
MAXKEY, MINKEY = 0x7F, 0xFF

OID = bytes.fromhex("5f0c6e8a1b2c3d4e5f607182")


def f64(x):
    return struct.pack("<d", x)


def f64_bits(bits):
    return struct.pack("<Q", bits)


# ---------------------------------------------------------------------------
# Valid documents
# ---------------------------------------------------------------------------

valid = {}
# pymongo 3.11 cannot decode these (datetimes out of Python's range) or
# does not follow the spec for them (non-canonical decimal128 coefficients)
pymongo_skip = set()

valid["empty"] = doc()

valid["double"] = doc(
    el(DOUBLE, "one_and_half", f64(1.5)),
    el(DOUBLE, "neg_zero", f64(-0.0)),
    el(DOUBLE, "inf", f64(float("inf"))),
    el(DOUBLE, "neg_inf", f64(float("-inf"))),
    el(DOUBLE, "nan", f64(float("nan"))),
    el(DOUBLE, "nan_payload", f64_bits(0x7FF8000000000123)),
    el(DOUBLE, "min_subnormal", f64(5e-324)),
    el(DOUBLE, "max", f64(1.7976931348623157e308)),
    el(DOUBLE, "pi", f64(3.141592653589793)),
)

valid["string"] = doc(
    el(STRING, "empty", string("")),
    el(STRING, "ascii", string("hello, world")),
    el(STRING, "embedded_nul", string(b"a\0b\0")),
    el(STRING, "two_byte", string("caf\u00e9 \u00ff\u0080")),
    el(STRING, "three_byte", string("\u20ac \u65e5\u672c\u8a9e \ufffd \uffff \u0800")),
    el(STRING, "four_byte", string("\U0001d11e \U0001f600 \U00010000 \U0010ffff")),
    el(STRING, "\u043a\u043b\u044e\u0447", string("key in Cyrillic")),
    el(STRING, "", string("empty key")),
    el(STRING, "long", string("x" * 300)),
)

valid["document"] = doc(
    el(DOCUMENT, "empty", doc()),
    el(DOCUMENT, "a", doc(el(DOCUMENT, "b", doc(el(INT32, "c", i32(1)))))),
    el(DOCUMENT, "dup", doc(el(INT32, "k", i32(1)), el(INT32, "k", i32(2)))),
)

valid["array"] = doc(
    el(ARRAY, "empty", arr()),
    el(ARRAY, "mixed", arr((INT32, i32(1)), (STRING, string("two")),
                           (ARRAY, arr((INT32, i32(3)))), (DOCUMENT, doc()),
                           (NULL, b""), (BOOL, b"\1"))),
)

valid["binary_00_generic"] = doc(
    el(BINARY, "empty", binary(0, b"")),
    el(BINARY, "one", binary(0, b"\xff")),
    el(BINARY, "two", binary(0, b"\x00\x01")),
    el(BINARY, "three", binary(0, b"abc")),
    el(BINARY, "bytes", binary(0, bytes(range(256)))),
)
valid["binary_02_old"] = doc(
    el(BINARY, "old", binary(2, b"\x01\x02\x03\x04\x05")),
    el(BINARY, "old_empty", binary(2, b"")),
)
valid["binary_04_uuid"] = doc(
    el(BINARY, "uuid", binary(4, bytes.fromhex("73ffd26444b34c6990e8e7d1dfc035d4"))),
    el(BINARY, "legacy_uuid", binary(3, bytes.fromhex("73ffd26444b34c6990e8e7d1dfc035d4"))),
)
valid["binary_80_user"] = doc(
    el(BINARY, "user", binary(0x80, b"user defined")),
    el(BINARY, "user_ff", binary(0xFF, b"\0")),
    el(BINARY, "md5", binary(5, bytes(16))),
)

valid["undefined"] = doc(el(UNDEFINED, "u"))

valid["objectid"] = doc(
    el(OBJECTID, "_id", OID),
    el(OBJECTID, "zero", bytes(12)),
    el(OBJECTID, "ones", b"\xff" * 12),
)

valid["bool"] = doc(el(BOOL, "t", b"\1"), el(BOOL, "f", b"\0"))

valid["datetime"] = doc(
    el(DATETIME, "epoch", i64(0)),
    el(DATETIME, "one_ms", i64(1)),
    el(DATETIME, "leap_day", i64(1709164800123)),       # 2024-02-29T00:00:00.123Z
    el(DATETIME, "y2k", i64(946684800000)),
    el(DATETIME, "last_9999", i64(253402300799999)),    # 9999-12-31T23:59:59.999Z
)
valid["datetime_out_of_range"] = doc(
    el(DATETIME, "minus_one", i64(-1)),
    el(DATETIME, "year_1", i64(-62135596800000)),
    el(DATETIME, "year_10000", i64(253402300800000)),
    el(DATETIME, "max", i64(2 ** 63 - 1)),
    el(DATETIME, "min", i64(-2 ** 63)),
)
pymongo_skip.add("datetime_out_of_range")

valid["null"] = doc(el(NULL, "n"))

valid["regex"] = doc(
    el(REGEX, "re", cstr("^a.*b$") + cstr("imsx")),
    el(REGEX, "empty", cstr("") + cstr("")),
    el(REGEX, "unicode", cstr("\u65e5\\d+") + cstr("u")),
    el(REGEX, "slash", cstr("a/b") + cstr("")),
)

valid["dbpointer"] = doc(
    el(DBPOINTER, "ptr", string("db.collection") + OID),
    el(DBPOINTER, "empty_ns", string("") + bytes(12)),
)

valid["code"] = doc(
    el(CODE, "js", string("function () { return 1; }")),
    el(CODE, "empty", string("")),
)

valid["symbol"] = doc(
    el(SYMBOL, "sym", string("a symbol")),
    el(SYMBOL, "unicode", string("\u00e9\u20ac")),
)

valid["code_w_scope"] = doc(
    el(CODE_W_SCOPE, "cws", cws("return x;", doc(el(INT32, "x", i32(1))))),
    el(CODE_W_SCOPE, "empty_scope", cws("1", doc())),
    el(CODE_W_SCOPE, "minimal", cws("", doc())),  # 14 bytes, the least
    el(CODE_W_SCOPE, "nested", cws("f()", doc(
        el(DOCUMENT, "d", doc(el(STRING, "s", string("in scope")))),
        el(CODE_W_SCOPE, "inner", cws("g()", doc()))))),
)

valid["int32"] = doc(
    el(INT32, "zero", i32(0)),
    el(INT32, "minus_one", i32(-1)),
    el(INT32, "min", i32(-2 ** 31)),
    el(INT32, "max", i32(2 ** 31 - 1)),
)

valid["timestamp"] = doc(
    el(TIMESTAMP, "ts", u32(2) + u32(1)),               # i = 2, t = 1
    el(TIMESTAMP, "max", u32(0xFFFFFFFF) + u32(0xFFFFFFFF)),
    el(TIMESTAMP, "zero", u32(0) + u32(0)),
)

valid["int64"] = doc(
    el(INT64, "zero", i64(0)),
    el(INT64, "min", i64(-2 ** 63)),
    el(INT64, "max", i64(2 ** 63 - 1)),
    el(INT64, "big", i64(1 << 40)),
)

valid["decimal128_values"] = doc(*(
    el(DECIMAL128, str(i), dec_text(t)) for i, t in enumerate([
        "0", "-0", "1", "-1", "1.0", "0.1", "0.000001", "0.0000001", "1E-7",
        "1.23E+5", "12345", "123.456", "-0.0", "0E+3", "0E-6176", "-0E+6111",
        "1E+6144", "1E-6176", "9.999999999999999999999999999999999E+6144",
        "1234567890123456789012345678901234", "0.001234", "1E+3",
    ])))

valid["decimal128_special"] = doc(
    el(DECIMAL128, "nan", dec128(0, 0x7C00000000000000)),
    el(DECIMAL128, "neg_nan", dec128(0, 0xFC00000000000000)),
    el(DECIMAL128, "snan", dec128(0, 0x7E00000000000000)),
    el(DECIMAL128, "nan_payload", dec128(12, 0x7C00000000000000)),
    el(DECIMAL128, "inf", dec128(0, 0x7800000000000000)),
    el(DECIMAL128, "neg_inf", dec128(0, 0xF800000000000000)),
    el(DECIMAL128, "inf_payload", dec128(1, 0x7800000000000001)),
)

valid["decimal128_noncanonical"] = doc(
    # the "11" form: coefficient 8 * 2^110 + ..., above 10^34 - 1, so zero
    el(DECIMAL128, "form11", dec128(0, 0x6C10000000000000)),
    el(DECIMAL128, "form11_neg", dec128(0xFFFFFFFFFFFFFFFF, 0xEFFFFFFFFFFFFFFF)),
    # 2^113 - 1 with exponent 0, and 10^34 exactly (one above the largest)
    el(DECIMAL128, "coef_max", dec128(0xFFFFFFFFFFFFFFFF, 0x3041FFFFFFFFFFFF)),
    el(DECIMAL128, "coef_1e34", dec128(0x378D8E6400000000, 0x3040000000000000 | 0x1ED09BEAD87C0)),
)
pymongo_skip.add("decimal128_noncanonical")

valid["minkey_maxkey"] = doc(el(MINKEY, "min"), el(MAXKEY, "max"))

# every type once, in one document: the test of truncations
valid["all_types"] = doc(
    el(DOUBLE, "double", f64(-2.5)),
    el(STRING, "string", string("s\0\u00e9")),
    el(DOCUMENT, "document", doc(el(INT32, "x", i32(7)))),
    el(ARRAY, "array", arr((INT64, i64(-9)), (STRING, string("")))),
    el(BINARY, "binary", binary(0, b"\x01\x02")),
    el(BINARY, "binary_old", binary(2, b"\x03")),
    el(UNDEFINED, "undefined"),
    el(OBJECTID, "objectid", OID),
    el(BOOL, "bool", b"\1"),
    el(DATETIME, "datetime", i64(1700000000000)),
    el(NULL, "null"),
    el(REGEX, "regex", cstr("ab+") + cstr("i")),
    el(DBPOINTER, "dbpointer", string("d.c") + OID),
    el(CODE, "code", string("x")),
    el(SYMBOL, "symbol", string("y")),
    el(CODE_W_SCOPE, "code_w_scope", cws("z", doc(el(BOOL, "b", b"\0")))),
    el(INT32, "int32", i32(-5)),
    el(TIMESTAMP, "timestamp", u32(3) + u32(4)),
    el(INT64, "int64", i64(1 << 33)),
    el(DECIMAL128, "decimal128", dec_text("-1.5E-10")),
    el(MINKEY, "minkey"),
    el(MAXKEY, "maxkey"),
)


def nest(depth, leaf, kinds=(DOCUMENT,)):
    """depth levels of nesting below the top-level document"""
    d = leaf
    for i in range(depth):
        t = kinds[i % len(kinds)]
        d = doc(el(t, "0" if t == ARRAY else "d", d))
    return d


# the harness caps nesting at 200 levels below the top (depth 200 allowed)
valid["nested_docs_150"] = nest(150, doc(el(INT32, "leaf", i32(1))))
valid["nested_mixed_199"] = nest(199, doc(), kinds=(DOCUMENT, ARRAY))
# valid BSON that the harness's depth cap rejects
valid["nested_docs_250"] = nest(250, doc())

valid["many_keys"] = doc(*(el(INT32, "k%d" % i, i32(i)) for i in range(200)))
# more than BSONR_TICK (4096) elements: the validation's tick hook runs
valid["many_nulls"] = doc(*(el(NULL, "n") for i in range(5000)))

# a few written by pymongo itself
valid["pymongo_mixed"] = bson.encode(SON([
    ("_id", ObjectId(OID)),
    ("bin", Binary(b"\x00\x01", 0)),
    ("old", Binary(b"abc", 2)),
    ("user", Binary(b"u", 0x80)),
    ("code", Code("f(x)", {"x": 1})),
    ("re", Regex("a|b", "m")),
    ("ts", Timestamp(1, 2)),
    ("i64", Int64(-7)),
    ("dec", Decimal128("3.14")),
    ("min", MinKey()),
    ("max", MaxKey()),
    ("list", [1, 2.5, "three", None, True]),
]))


# ---------------------------------------------------------------------------
# Malformed documents: each breaks one rule
# ---------------------------------------------------------------------------

def fix_len(b):
    """b with its length header set to its size"""
    return i32(len(b)) + b[4:]


bad = {}
bad["bad_short"] = b"\x04\0\0\0"
bad["bad_length_4"] = b"\x04\0\0\0\0"
bad["bad_length_beyond"] = i32(64) + b"\x0a" + b"n\0" + b"\0"
bad["bad_no_final_nul"] = fix_len(doc(el(NULL, "n"))[:-1] + b"\x01")
bad["bad_trailing_bytes"] = doc(el(NULL, "n")) + b"\0"
bad["bad_unknown_type"] = doc(el(0x14, "x", i32(0)))
bad["bad_key_overlong"] = doc(el(NULL, b"\xc0\xaf"))
bad["bad_key_unterminated"] = fix_len(i32(0) + b"\x0akey" + b"\0")
bad["bad_string_len_0"] = doc(el(STRING, "s", i32(0) + b"\0"))
bad["bad_string_surrogate"] = doc(el(STRING, "s", string(b"\xed\xa0\x80")))
bad["bad_string_overlong_4byte"] = doc(el(STRING, "s", string(b"\xf0\x8f\xbf\xbf")))
bad["bad_key_above_10ffff"] = doc(el(NULL, b"\xf4\x90\x80\x80"))
bad["bad_string_no_nul"] = doc(el(STRING, "s", i32(2) + b"ab"))
bad["bad_bool_2"] = doc(el(BOOL, "b", b"\2"))
bad["bad_binary_old_inner"] = doc(el(BINARY, "b", i32(5) + b"\x02" + i32(2) + b"a"))
bad["bad_cws_inconsistent"] = doc(el(CODE_W_SCOPE, "c",
                                     i32(30) + string("x") + doc() + bytes(15)))
bad["bad_regex_unterminated"] = fix_len(i32(0) + el(REGEX, "r", b"abc\0i") + b"\0")
bad["bad_nested_length"] = doc(el(DOCUMENT, "d", i32(40) + b"\0"))
bad["bad_int64_truncated"] = fix_len(i32(0) + el(INT64, "x", b"\1\2\3") + b"\0")
bad["bad_decimal128_truncated"] = fix_len(i32(0) + el(DECIMAL128, "x", bytes(15)) + b"\0")


# ---------------------------------------------------------------------------

def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if name.endswith(".bson"):
            os.remove(os.path.join(OUT, name))

    problems = 0
    for name, data in sorted(valid.items()):
        if name in pymongo_skip:
            continue
        try:
            bson.decode(data)
        except Exception as e:          # pylint: disable=broad-except
            print("pymongo rejects valid %s: %s" % (name, e), file=sys.stderr)
            problems += 1
    for name, data in sorted(bad.items()):
        try:
            bson.decode(data)
        except Exception:               # pylint: disable=broad-except
            continue
        print("pymongo accepts malformed %s" % name, file=sys.stderr)
        problems += 1

    # the raw encoder agrees with pymongo's
    same = [
        (doc(el(BINARY, "b", binary(2, b"abc"))), {"b": Binary(b"abc", 2)}),
        (doc(el(CODE_W_SCOPE, "c", cws("f", doc(el(INT32, "x", i32(1)))))),
         {"c": Code("f", {"x": 1})}),
        (doc(el(TIMESTAMP, "t", u32(2) + u32(1))), {"t": Timestamp(1, 2)}),
        (doc(el(REGEX, "r", cstr("a") + cstr("i"))), {"r": Regex("a", "i")}),
    ]
    for raw, value in same:
        if raw != bson.encode(value):
            print("encoder differs from pymongo for %r" % value, file=sys.stderr)
            problems += 1
    if problems:
        sys.exit(1)

    total = 0
    for name, data in sorted(list(valid.items()) + list(bad.items())):
        with open(os.path.join(OUT, name + ".bson"), "wb") as f:
            f.write(data)
        total += len(data)
    print("wrote %d files, %d bytes, to %s" % (len(valid) + len(bad), total, OUT))


if __name__ == "__main__":
    main()
