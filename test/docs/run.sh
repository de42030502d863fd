#!/usr/bin/env bash
# The documentation's checks (test/docs/check.py): every option that
# pg_bsonexport --help and pg_bsonstream --help print is documented exactly
# once, in docs/pg_bsonexport.md and docs/pg_bsonstream.md; every relative
# link and #anchor of README.md, docs/*.md, BENCHMARKS.md and CHANGELOG.md
# resolves; README.md has at most 750 lines.
#
#   PG_BSONEXPORT=... PG_BSONSTREAM=... test/docs/run.sh
#
# Checks the programs installed in PG_BINDIR unless PG_BSONEXPORT and
# PG_BSONSTREAM name others; no server is needed.  The last line is
# "docs: N passed, M failed"; exit status 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

install_debian_packages python3 || { echo "docs: 0 passed, 1 failed"; exit 1; }
PG_BSONEXPORT=${PG_BSONEXPORT:-$PG_BINDIR/pg_bsonexport} \
	PG_BSONSTREAM=${PG_BSONSTREAM:-$PG_BINDIR/pg_bsonstream} \
	"$PYTHON" test/docs/check.py
