#!/bin/bash
# pg_bsonstream --to benchmark: changes applied into a MongoDB-protocol
# server (FerretDB 1.24.2, SQLite backend, scripts/ferretdb.sh) end to end,
# from a slot made before the workload to the last change applied.
#
#   bench/apply_bench.sh [--pg NN] [--changes N] [--batch B] [--apply-batch N]
#
#   --changes N      row changes (default 100,000): N/3 inserts, N/3 updates of
#                    every row, N/3 deletes, B rows a transaction (default 1,000)
#   --apply-batch N  pg_bsonstream --batch-size (default 64: FerretDB 1.24
#                    does not answer an update command of 100 statements)
#
# The table stays within FerretDB's limits (no numeric: it refuses
# Decimal128), and its key is text: FerretDB's SQLite backend finds a
# document by its _id index only for string and ObjectId _ids (integer keys
# make every write scan the collection, which would measure that alone).  Reported: the run's wall time and events/s (connection to
# exit, --endpos: every segment applied), its user and system CPU seconds and
# CPU per event, its peak memory (GNU time), FerretDB's CPU seconds in the
# same time, and that the collection equals the table (document count and
# a byte-for-byte comparison of every document).  Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

CHANGES=100000 BATCH=1000 APPLY_BATCH=64
while [ $# -gt 0 ]; do
	case $1 in
	--pg) PG_MAJOR=$2; shift 2 ;;
	--changes) CHANGES=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--apply-batch) APPLY_BATCH=$2; shift 2 ;;
	*) echo "usage: $0 [--pg NN] [--changes N] [--batch B] [--apply-batch N]" >&2; exit 2 ;;
	esac
done
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
source scripts/ferretdb.sh
install_packages libpq-dev libbson-dev libmongoc-dev pkg-config time
build_install
FERRETDB=$(ferretdb_build)
logical_decoding_opts
cluster_start
ROWS=$((CHANGES / 3))
FDIR=$CLUSTER_DIR/ferretdb
PORT=$(( 27600 + RANDOM % 300 ))
ferretdb_start "$FDIR" "$PORT" >/dev/null
trap 'ferretdb_stop "$FDIR"; cluster_stop' EXIT

psql -qX -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION bson_out;
CREATE TABLE ab (id text PRIMARY KEY, rid int, n int, name text, email text, created timestamptz,
                 score float8, active boolean, meta jsonb);
SELECT 'slot' FROM pg_create_logical_replication_slot('ab', 'bson_out');
SQL
for phase in insert update delete; do
	for ((lo = 0; lo < ROWS; lo += BATCH)); do
		case $phase in
		insert) echo "INSERT INTO ab SELECT 'k' || g, g, g, 'name ' || g, 'u' || g || '@example.com', '2026-01-01'::timestamptz + g * interval '1 s', g / 7.0, g % 2 = 0, jsonb_build_object('g', g, 'tags', jsonb_build_array('a', 'b')) FROM generate_series($lo + 1, LEAST($lo + $BATCH, $ROWS)) g;" ;;
		update) echo "UPDATE ab SET n = n + 1, score = score + 0.5 WHERE rid > $lo AND rid <= $((lo + BATCH));" ;;
		# half the rows deleted: the collection keeps something to compare
		delete) [ $((lo / BATCH % 2)) -eq 0 ] && echo "DELETE FROM ab WHERE rid > $lo AND rid <= $((lo + BATCH));" || true ;;
		esac
	done | psql -qX -v ON_ERROR_STOP=1
done
END=$(psql -qXAtc "SELECT pg_current_wal_lsn()")
EVENTS=$(psql -qXAtc "SELECT count(*) FROM pg_logical_slot_peek_binary_changes('ab', '$END', NULL)")
FPID=$(cat "$FDIR/ferretdb.pid")
f_before=$(awk '{print $14 + $15}' "/proc/$FPID/stat")
log "applying $EVENTS events into FerretDB"
/usr/bin/time -f '%e %U %S %M' -o "$CLUSTER_DIR/time" \
	"$PG_BINDIR/pg_bsonstream" --slot ab -o "$CLUSTER_DIR/out" --endpos "$END" -q \
	--to "mongodb://127.0.0.1:$PORT/bench" --batch-size "$APPLY_BATCH"
f_after=$(awk '{print $14 + $15}' "/proc/$FPID/stat")
read -r wall user sys rss <"$CLUSTER_DIR/time"
hz=$(getconf CLK_TCK)
"$PYTHON" - "$PORT" <<PY
import sys, bson, psycopg2, pymongo
from bson.raw_bson import RawBSONDocument
coll = pymongo.MongoClient("127.0.0.1", int(sys.argv[1]), document_class=RawBSONDocument).bench.ab
got = {bson.decode(d.raw)["_id"]: d.raw for d in coll.find()}
conn = psycopg2.connect(dbname="postgres")
cur = conn.cursor()
cur.execute("SELECT id, bson_document(t) FROM ab t")
want = {i: bytes(d) for i, d in cur.fetchall()}
print("end state: %d documents, %s" % (len(got), "equal to the table, byte for byte" if got == want else "DIFFERENT from the table (%d rows)" % len(want)))
PY
awk -v e="$EVENTS" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" -v fc="$((f_after - f_before))" -v hz="$hz" 'BEGIN {
	printf "pg_bsonstream --to: %d events in %.2f s: %.0f events/s; client CPU %.2f s user + %.2f s system = %.1f us/event; peak RSS %.1f MB; FerretDB CPU %.2f s\n",
		e, w, e / w, u, s, (u + s) * 1e6 / e, m / 1024, fc / hz }'
