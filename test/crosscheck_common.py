"""What the cross-check scripts (test/crosscheck*.py) share.

Importing it also stands in for pymongo.errors when python3-pymongo is not
installed: bson.json_util (python3-bson 3.11) imports pymongo.errors only for
ConfigurationError, raised by JSONOptions on bad arguments, and Debian's
python3-bson does not pull in python3-pymongo.  So import this module before
bson.json_util.
"""
import struct
import sys
import types

try:
    import pymongo.errors   # noqa: F401
except ImportError:
    _pm, _pe = types.ModuleType("pymongo"), types.ModuleType("pymongo.errors")

    class ConfigurationError(Exception):
        pass
    _pe.ConfigurationError = ConfigurationError
    _pm.errors = _pe
    sys.modules["pymongo"], sys.modules["pymongo.errors"] = _pm, _pe


def shorten(t, n=160):
    """t (made a string) cut to n characters, saying how long it was"""
    t = str(t)
    return t if len(t) <= n else t[:n] + "...(%d chars)" % len(t)


def pg_error(e):
    """A psycopg2 error on one line."""
    return "SQLSTATE %s: %s" % (e.pgcode, " | ".join((e.pgerror or str(e)).strip().splitlines()))


# the sizes of BSON values that have no length of their own
_FIXED = {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8,
          0x13: 16, 0x7F: 0, 0xFF: 0}


def bson_elements(data):
    """[(name, start, end)]: a BSON document's top-level elements, their
    bytes data[start:end] (type, name, value), read from the bytes alone
    (no decoder: the raw bytes are what is checked)"""
    if len(data) < 5 or struct.unpack_from("<i", data, 0)[0] != len(data):
        raise ValueError("not one BSON document: %d bytes" % len(data))
    out, off, last = [], 4, len(data) - 1
    while off < last:
        t = data[off]
        k = data.index(b"\0", off + 1)
        v = k + 1
        if t in _FIXED:
            n = _FIXED[t]
        elif t in (0x02, 0x0D, 0x0E):
            n = 4 + struct.unpack_from("<i", data, v)[0]
        elif t in (0x03, 0x04, 0x0F):
            n = struct.unpack_from("<i", data, v)[0]
        elif t == 0x05:
            n = 5 + struct.unpack_from("<i", data, v)[0]
        elif t == 0x0B:
            n = data.index(b"\0", data.index(b"\0", v) + 1) + 1 - v
        elif t == 0x0C:
            n = 4 + struct.unpack_from("<i", data, v)[0] + 12
        else:
            raise ValueError("element type 0x%02x at byte %d" % (t, off))
        out.append((data[off + 1:k].decode(), off, v + n))
        off = v + n
    if off != last or data[last:] != b"\0":
        raise ValueError("elements end at byte %d of %d" % (off, len(data)))
    return out


def reassemble(messages):
    """The events of messages in stream order, a split event's fragments
    merged as a consumer of $changeStreamSplitLargeEvent merges them: their
    fields in order, the last fragment's _id (where to resume after it)."""
    parts = []
    for m in messages:
        split = m.get("splitEvent")
        if split is None:
            assert not parts, "an event inside a split event's fragments"
            yield m
            continue
        assert split["fragment"] == len(parts) + 1, "fragment %s after %d" % (split, len(parts))
        parts.append(m)
        if split["fragment"] == split["of"]:
            merged = {}
            for f in parts:
                merged.update((k, v) for k, v in f.items() if k not in ("_id", "splitEvent"))
            merged["_id"] = parts[-1]["_id"]
            parts = []
            yield merged
    assert not parts, "a split event without its last fragment"
