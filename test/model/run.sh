#!/usr/bin/env bash
# The document model's agreement test, on a throwaway cluster with
# wal_level = logical.
#
#   test/model/run.sh [--build]
#
# Assumes the extension (1.1.0, with bson_document and bson_collections) is
# built and installed.  Tests the programs PG_BSONEXPORT and PG_BSONSTREAM
# name (default: pg_bsonexport and pg_bsonstream in pg_config --bindir); with
# --build, the ones built from client/ with -Werror in a scratch directory.
#
# The checks are in check.py: for every key shape, bson_document,
# pg_bsonexport --table, pg_bsonexport --out-dir and pg_bsonstream's first
# copy write the same documents byte for byte, with the _id each shape must
# have, and the change events' documentKey and ns name them as the copy does; table selections (one list, repeated options,
# wildcards, exclusions, a pattern selecting nothing) give the same
# collections in the events, the first copy, the export and
# bson_collections; the .metadata.json files; two tables that take one
# collection name and equal rows of a table whose _id is the whole row,
# refused by the exports and the stream (warned of, for equal rows); and a
# consumer replaying the
# events with the MongoDB Kafka sink's rules onto an export (or the first
# copy) taken under a concurrent workload ends with the tables.
#
# The last line is "model: N passed, M failed"; exit status 0 only when
# nothing failed.  About half a minute.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

# bson.json_util (the metadata) imports pymongo.errors
install_packages libpq-dev pkg-config python3-pymongo || exit 1

WORK=$(mktemp -d /tmp/model_test.XXXXXX)
chmod 755 "$WORK"

give_up() {
	rm -rf "$WORK"
	echo "FAIL setup: $*"
	echo "model: 0 passed, 1 failed"
	exit 1
}

if [ "${1:-}" = --build ]; then
	# a copy, as test/stream/run.sh does: the work tree's objects stay untouched
	log "building pg_bsonexport and pg_bsonstream from client/"
	client_build "$WORK/build" pg_bsonexport pg_bsonstream >"$WORK/build.log" 2>&1 ||
		{ cat "$WORK/build.log" >&2; give_up "the client programs do not build"; }
	PG_BSONEXPORT=$WORK/build/client/pg_bsonexport
	PG_BSONSTREAM=$WORK/build/client/pg_bsonstream
fi
PG_BSONEXPORT=${PG_BSONEXPORT:-$PG_BINDIR/pg_bsonexport}
PG_BSONSTREAM=${PG_BSONSTREAM:-$PG_BINDIR/pg_bsonstream}
for b in "$PG_BSONEXPORT" "$PG_BSONSTREAM"; do
	[ -x "$b" ] || give_up "$b is not there (make install, or run with --build)"
done

unset PGHOST PGPORT PGDATABASE PGUSER
CLUSTER_OPTS="-c max_wal_senders=20 -c fsync=off -c synchronous_commit=on"
logical_decoding_opts
CLUSTER_OPTS+=" -c max_replication_slots=20"
cluster_start || give_up "the cluster does not start"
trap 'cluster_stop; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

PG_BSONEXPORT=$PG_BSONEXPORT PG_BSONSTREAM=$PG_BSONSTREAM WORK=$WORK PG_BINDIR=$PG_BINDIR \
	CLUSTER_DIR=$CLUSTER_DIR "$PYTHON" test/model/check.py
