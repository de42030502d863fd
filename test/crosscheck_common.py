"""What the cross-check scripts (test/crosscheck*.py) share.

Importing it also stands in for pymongo.errors when python3-pymongo is not
installed: bson.json_util (python3-bson 3.11) imports pymongo.errors only for
ConfigurationError, raised by JSONOptions on bad arguments, and Debian's
python3-bson does not pull in python3-pymongo.  So import this module before
bson.json_util.
"""
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
