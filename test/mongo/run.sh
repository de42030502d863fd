#!/usr/bin/env bash
# Tests of pg_bsonstream --to: PostgreSQL into a MongoDB-protocol server
# (FerretDB, SQLite backend, on a loopback port), on a throwaway cluster.
#
#   test/mongo/run.sh
#
# Assumes the extension is built and installed; tests PG_BSONSTREAM (or one
# built from client/ with -Werror in a scratch directory, with the MongoDB C
# driver).  FerretDB is built once with Go and cached (scripts/ferretdb.sh).
# The checks are in check.py.  The last line is "mongo: N passed, M failed";
# exit status 0 only when nothing failed.  About three minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh
source scripts/ferretdb.sh

# openssl: the certificates of the TLS test; maven and a JDK: mongo-java-server
install_packages libpq-dev libbson-dev libmongoc-dev pkg-config openssl maven default-jdk-headless || exit 1
FERRETDB=$(ferretdb_build) || exit 1

WORK=$(mktemp -d /tmp/mongo_test.XXXXXX)
chmod 755 "$WORK"

if [ -n "${PG_BSONSTREAM:-}" ]; then
	BIN=$PG_BSONSTREAM
else
	client_build "$WORK/build" pg_bsonstream >/dev/null || exit 1
	BIN=$WORK/build/client/pg_bsonstream
fi
"$BIN" --help | grep -- '--to=URI' >/dev/null || { echo "FAIL $BIN was built without --to (libmongoc)"; echo "mongo: 0 passed, 1 failed"; exit 1; }

unset PGHOST PGPORT PGDATABASE PGUSER
CLUSTER_OPTS="-c wal_level=logical -c max_replication_slots=20 -c max_wal_senders=20 -c fsync=off" \
	cluster_start || exit 1
# check.py stops the FerretDB it starts; a crash of check.py leaves none behind either
trap '{ command -v pkill >/dev/null && pkill -f -- "--sqlite-url=file:$WORK/"; } 2>/dev/null; cluster_stop; [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

if psql -qXAtc 'SHOW output_plugin_libraries' >/dev/null 2>&1; then
	psql -qXc "ALTER SYSTEM SET output_plugin_libraries = pgoutput, test_decoding, bson_out" \
		-c 'SELECT pg_reload_conf()' >/dev/null || exit 1
fi

# mongo-java-server, where FerretDB cannot answer (the index of a refused
# update): the benchmark's jar (Maven, cached), which runs it
MJS_JAR=$(bench/debezium/build.sh) || MJS_JAR=

PG_BSONSTREAM=$BIN WORK=$WORK PG_BINDIR=$PG_BINDIR FERRETDB=$FERRETDB MJS_JAR=$MJS_JAR \
	FERRETDB_PORT=$(( 27300 + RANDOM % 500 )) \
	CLUSTER_DIR=$CLUSTER_DIR RUNAS="${CLUSTER_RUNAS[*]}" \
	"$PYTHON" test/mongo/check.py
