#!/usr/bin/env bash
# Tests of pg_bsonstream, on a throwaway cluster with wal_level = logical.
#
#   test/stream/run.sh
#
# Assumes the extension is built and installed (make && make install); builds
# pg_bsonstream from client/ with -Werror in a scratch directory (or tests
# PG_BSONSTREAM=/path/to/binary) and the libbson reader of the exporter's
# tests.  The checks themselves are in check.py: a first copy and the stream
# of a concurrent random workload replayed onto a model that must equal the
# tables, the same through SIGKILLs, a server restart and a cut connection,
# and every error message; a server ERROR in the stream (and the skip its
# hint gives), the reconnection backoff and a stop during it, a slot
# invalidated while reconnecting, kill -9 during the first copy, failing
# --create-slot runs and one waiting for a prepared transaction.
#
# The last line is "stream: N passed, M failed"; exit status 0 only when
# nothing failed.  About two minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

install_packages libpq-dev libbson-dev pkg-config || exit 1

WORK=$(mktemp -d /tmp/stream_test.XXXXXX)
chmod 755 "$WORK"

log "building pg_bsonstream and read_libbson"
if [ -n "${PG_BSONSTREAM:-}" ]; then
	BIN=$PG_BSONSTREAM
else
	# a copy, as test/exporter/run.sh does: the work tree's objects stay untouched
	client_build "$WORK/build" pg_bsonstream >/dev/null || exit 1
	BIN=$WORK/build/client/pg_bsonstream
fi
cc -O2 -Wall -Wextra -Werror $(pkg-config --cflags libbson-1.0) -o "$WORK/read_libbson" \
	test/exporter/read_libbson.c $(pkg-config --libs libbson-1.0) || exit 1
# the exporter tests' shim that makes a rename fail: a segment that cannot be closed
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$WORK/fail_rename.so" test/exporter/fail_rename.c -ldl || exit 1
# a segment's rename held at a gate: the connection cut while the closer thread is in it
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$WORK/gate_rename.so" test/stream/gate_rename.c -ldl || exit 1

unset PGHOST PGPORT PGDATABASE PGUSER
# prepared transactions: --create-slot says what it waits for
CLUSTER_OPTS="-c wal_level=logical -c max_replication_slots=20 -c max_wal_senders=20 -c fsync=off -c max_prepared_transactions=5" \
	cluster_start || exit 1
trap 'cluster_stop; umount "$WORK/full" 2>/dev/null; rm -rf "$WORK"' EXIT

# releases with output_plugin_libraries must list the plugin there
if psql -qXAtc 'SHOW output_plugin_libraries' >/dev/null 2>&1; then
	psql -qXc "ALTER SYSTEM SET output_plugin_libraries = pgoutput, test_decoding, bson_out" \
		-c 'SELECT pg_reload_conf()' >/dev/null || exit 1
fi

# a 1 MB tmpfs for the full disk (root only; check.py skips it, and says so, elsewhere)
mkdir -p "$WORK/full"
mount -t tmpfs -o size=1m tmpfs "$WORK/full" 2>/dev/null || rmdir "$WORK/full"

PG_BSONSTREAM=$BIN READ_LIBBSON=$WORK/read_libbson WORK=$WORK PG_BINDIR=$PG_BINDIR \
	CLUSTER_DIR=$CLUSTER_DIR RUNAS="${CLUSTER_RUNAS[*]}" \
	"$PYTHON" test/stream/check.py
