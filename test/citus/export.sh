#!/usr/bin/env bash
# pg_bsonexport on Citus: run by test/citus/run.sh on its live cluster (the
# coordinator in PGHOST/PGPORT, the workers in CITUS_WORKER{1,2}_{PORT,SOCKET}),
# with the installed pg_bsonexport (or PG_BSONEXPORT).  The checks are in
# export_check.py; its last line is "citus-export: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
WORK=$(mktemp -d /tmp/citus_export.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PG_BSONEXPORT=${PG_BSONEXPORT:-$PG_BINDIR/pg_bsonexport} WORK=$WORK "$PYTHON" test/citus/export_check.py
