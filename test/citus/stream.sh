#!/usr/bin/env bash
# pg_bsonstream --citus: run by test/citus/run.sh on its live cluster (the
# coordinator in PGHOST/PGPORT, the nodes' data under CITUS_DIR), with the
# installed pg_bsonstream (or PG_BSONSTREAM).  The checks are in
# stream_check.py; its last line is "citus-stream: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
WORK=$(mktemp -d /tmp/citus_stream.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
RUNAS=
[ "$(id -u)" -eq 0 ] && RUNAS="runuser -u postgres --"
# a Citus operation that hangs must not hold up the whole suite
PG_BSONSTREAM=${PG_BSONSTREAM:-$PG_BINDIR/pg_bsonstream} WORK=$WORK PG_BINDIR=$PG_BINDIR RUNAS=$RUNAS \
	timeout -k 10 900 "$PYTHON" test/citus/stream_check.py
rc=$?
[ $rc -eq 124 ] && echo "citus-stream: 0 passed, 1 failed (stopped after 900 s)"
exit $rc
