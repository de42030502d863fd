#!/usr/bin/python3
"""Check an exported .bson file against the source rows, with two readers.

    verify.py --dbname DB --sql "SELECT to_bson(doc) FROM medium" \
              --file out.bson --libbson LIBBSON_OUTPUT

The source is the SQL query's bytea column (NULLs skipped), computed by the
server itself (to_bson / row_to_bson).  The file is read back by
 - pymongo's bson.decode_file_iter (python3-bson), once as raw documents and
   once decoded into Python values, and
 - libbson's bson_reader (test/exporter/read_libbson, whose output of one
   "crc32 length" line per document and "count N" is given).
Counts must be equal, the documents equal byte for byte, and the decoded
values equal to the decoded source documents.  The comparison ignores row
order (the file is in scan order, the query too, but a plan may differ); the
tests compare --jobs outputs byte for byte separately.

Run with Debian's /usr/bin/python3 (python3-bson, python3-psycopg2).
"""
import argparse
import sys
import zlib

import bson
import psycopg2
from bson.binary import STANDARD
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from bson.son import SON


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dbname", required=True)
    ap.add_argument("--sql", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--libbson", required=True, help="read_libbson's output for the file")
    a = ap.parse_args()

    conn = psycopg2.connect(dbname=a.dbname)
    cur = conn.cursor()
    cur.execute(a.sql)
    src = [bytes(r[0]) for r in cur if r[0] is not None]
    conn.close()

    problems = []
    opts_raw = CodecOptions(document_class=RawBSONDocument)
    opts = CodecOptions(document_class=SON, uuid_representation=STANDARD)
    with open(a.file, "rb") as f:
        raw = [d.raw for d in bson.decode_file_iter(f, opts_raw)]
    with open(a.file, "rb") as f:
        decoded = list(bson.decode_file_iter(f, opts))

    if len(raw) != len(src) or len(decoded) != len(src):
        problems.append("pymongo reads %d documents, the source has %d rows" % (len(raw), len(src)))
    else:
        # pair each file document with its decoded form, then order both sides by bytes
        pairs = sorted(zip(raw, decoded), key=lambda p: p[0])
        ssrc = sorted(src)
        nbytes = sum(1 for (r, _), s in zip(pairs, ssrc) if r != s)
        if nbytes:
            problems.append("%d documents differ from the source bytes (pymongo)" % nbytes)
        else:
            nval = sum(1 for (_, d), s in zip(pairs, ssrc) if d != bson.decode(s, opts))
            if nval:
                problems.append("%d documents decode to other values than the source" % nval)

    lines = open(a.libbson).read().split("\n")
    lines = [l for l in lines if l]
    if not lines or not lines[-1].startswith("count "):
        problems.append("read_libbson output has no count line")
    else:
        n = int(lines[-1].split()[1])
        got = sorted(lines[:-1])
        want = sorted("%08x %d" % (zlib.crc32(s), len(s)) for s in src)
        if n != len(src):
            problems.append("libbson reads %d documents, the source has %d rows" % (n, len(src)))
        elif got != want:
            problems.append("libbson: %d documents differ from the source bytes"
                            % sum(1 for x, y in zip(got, want) if x != y))

    if problems:
        print("verify %s: %s" % (a.file, "; ".join(problems)))
        sys.exit(1)
    print("verify %s: %d documents, %d bytes, equal to the source (pymongo and libbson)"
          % (a.file, len(src), sum(map(len, src))))


if __name__ == "__main__":
    main()
