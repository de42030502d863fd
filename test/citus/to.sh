#!/usr/bin/env bash
# pg_bsonstream --citus --to into FerretDB: run by test/citus/run.sh on its
# live cluster (the coordinator in PGHOST/PGPORT, the nodes' data under
# CITUS_DIR), with the installed pg_bsonstream (or PG_BSONSTREAM).  FerretDB
# (scripts/ferretdb.sh: built once with Go, cached) runs on 127.0.0.1 only,
# on a free port, with its data in a private directory under WORK; the
# checks (to_check.py) start and stop it, and this script's exit stops any
# left behind.  The last line is "citus-to: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
source scripts/ferretdb.sh

none() {
	echo "FAIL $*"
	echo "citus-to: 0 passed, 1 failed"
	exit 1
}

install_debian_packages python3-pymongo python3-bson python3-psycopg2 procps ||
	none "installing python3-pymongo, python3-bson, python3-psycopg2, procps"
FERRETDB=$(ferretdb_build) || none "building FerretDB $FERRETDB_VERSION (scripts/ferretdb.sh)"
BIN=${PG_BSONSTREAM:-$PG_BINDIR/pg_bsonstream}
"$BIN" --help 2>/dev/null | grep -- '--to=URI' >/dev/null || none "$BIN was built without --to (libmongoc)"

WORK=$(mktemp -d /tmp/citus_to.XXXXXX)
chmod 700 "$WORK"
cleanup() {
	local d
	# each FerretDB the checks started and did not stop (their pid files)
	for d in "$WORK"/ferret-*; do
		[ -d "$d" ] && ferretdb_stop "$d" KILL
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
RUNAS=
[ "$(id -u)" -eq 0 ] && RUNAS="runuser -u postgres --"
# a Citus operation or a wait that hangs must not hold up the whole suite
PG_BSONSTREAM=$BIN WORK=$WORK PG_BINDIR=$PG_BINDIR RUNAS=$RUNAS FERRETDB=$FERRETDB \
	timeout -k 10 900 "$PYTHON" test/citus/to_check.py
rc=$?
[ $rc -eq 124 ] && echo "citus-to: 0 passed, 1 failed (stopped after 900 s)"
exit $rc
