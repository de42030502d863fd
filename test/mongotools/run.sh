#!/usr/bin/env bash
# What a real consumer says of the files the programs write: mongo-tools
# 100.8.0 (built from ../shared/vendor by scripts/mongotools.sh, cached).
#
#   test/mongotools/run.sh
#
#   - bsondump --objcheck reads every .bson file pg_bsonexport writes (a
#     file, and a dump directory) and pg_bsonstream writes (the first copy,
#     the change segments), each document checked, and counts as many
#     documents as the programs wrote;
#   - mongorestore restores pg_bsonexport --out-dir's dump into FerretDB, and
#     every collection read back equals bson_document of its table, byte for
#     byte (--noIndexRestore: mongorestore 100.8.0 adds "ns" to every index
#     specification it sends, which FerretDB refuses; the metadata's indexes
#     are made by pg_bsonstream --to's first copy, tested in the mongo stage).
#
# Assumes the extension and the programs are installed (PG_BSONEXPORT,
# PG_BSONSTREAM).  The last line is "mongotools: N passed, M failed"
# ("skipped" without the source archive, as the Citus stage).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh
source scripts/ferretdb.sh
source scripts/mongotools.sh

install_packages libpq-dev || exit 1
# like the Citus stage: without the source archive (and no build cached) there is nothing to test with
if ! [ -x "$MONGOTOOLS_CACHE/bin/mongorestore" ] && ! mongotools_archive >/dev/null; then
	echo "skip: mongotools: no mongo-tools-$MONGOTOOLS_VERSION.tar.gz (MONGO_TOOLS_ARCHIVE, or ../shared/vendor beside the clone)"
	echo "mongotools: 0 passed, 0 failed, skipped"
	exit 0
fi
TOOLS=$(mongotools_build) || { echo "mongotools: 0 passed, 1 failed"; exit 1; }
FERRETDB=$(ferretdb_build) || { echo "mongotools: 0 passed, 1 failed"; exit 1; }
EXPORT=${PG_BSONEXPORT:-$PG_BINDIR/pg_bsonexport}
STREAM=${PG_BSONSTREAM:-$PG_BINDIR/pg_bsonstream}

WORK=$(mktemp -d /tmp/mongotools_test.XXXXXX)
chmod 755 "$WORK"
unset PGHOST PGPORT PGDATABASE PGUSER
CLUSTER_OPTS="-c wal_level=logical -c max_replication_slots=4 -c max_wal_senders=4 -c fsync=off" \
	cluster_start || exit 1
FPORT=$((27900 + RANDOM % 90))
trap 'ferretdb_stop "$WORK/ferret" KILL >/dev/null 2>&1; cluster_stop; rm -rf "$WORK"' EXIT
ferretdb_start "$WORK/ferret" "$FPORT" >/dev/null || { echo "mongotools: 0 passed, 1 failed"; exit 1; }
if psql -qXAtc 'SHOW output_plugin_libraries' >/dev/null 2>&1; then
	psql -qXc "ALTER SYSTEM SET output_plugin_libraries = pgoutput, test_decoding, bson_out" \
		-c 'SELECT pg_reload_conf()' >/dev/null || exit 1
fi

PG_BSONEXPORT=$EXPORT PG_BSONSTREAM=$STREAM TOOLS=$TOOLS WORK=$WORK FERRETDB_PORT=$FPORT \
	"$PYTHON" test/mongotools/check.py
