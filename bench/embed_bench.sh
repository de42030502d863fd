#!/bin/bash
# Embedded rows against the same tables flat: orders, their lines and the
# lines' taxes, in two databases with the same rows; in one the lines are
# embedded in their orders and the taxes in their lines (bson_embed), in the
# other each table is a collection.  Each measured into a MongoDB-protocol
# server on a loopback port (mongo-java-server, in-memory, the fast one; or
# FerretDB 1.24.2, SQLite):
#
#   1. the first copy: pg_bsonstream --create-slot --initial-copy --to URI
#      --endpos (the copy, its load and the stream up to the copy's point),
#      and pg_bsonexport --out-dir to files; rows a second, every row of
#      the three tables counted (embedded ones too);
#   2. the changes of the lines and taxes (inserts of lines with their
#      taxes into existing orders, updates of lines, deletes of lines with
#      their taxes by ON DELETE CASCADE, a line moved to another order)
#      applied by pg_bsonstream --to --endpos from a slot made before them;
#      events a second (the events of the run's summary: the same in both).
#
#   bench/embed_bench.sh [--pg NN] [--orders N] [--changes N] [--reps R]
#                        [--server mjs|ferretdb]
#
# (FerretDB does not store Decimal128: its tables have float8 for numeric.)
#
#   --orders N    orders (default 100,000): five lines each on average, a
#                 tax on every other line (about 8.5 rows an order)
#   --changes N   transactions of part 2 (default 20,000), each a few rows
#   --reps R      runs of each measurement (default 3): the median reported
#
# Each run ends by checking the target: the embedded database's orders
# collection read back equals bson_document() of every order, byte for
# byte; the flat one's document counts equal the tables'.  Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."

ORDERS=100000 CHANGES=20000 REPS=3 SERVER=mjs
while [ $# -gt 0 ]; do
	case $1 in
	--pg) PG_MAJOR=$2; shift 2 ;;
	--orders) ORDERS=$2; shift 2 ;;
	--changes) CHANGES=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--server) SERVER=$2; shift 2 ;;
	*) echo "usage: $0 [--pg NN] [--orders N] [--changes N] [--reps R] [--server mjs|ferretdb]" >&2; exit 2 ;;
	esac
done
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
source scripts/ferretdb.sh
T_START=$(date +%s)
phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }
install_packages libpq-dev libbson-dev libmongoc-dev pkg-config maven default-jdk-headless
build_install
logical_decoding_opts
CLUSTER_OPTS+=" -c max_replication_slots=40 -c max_wal_size=8GB -c checkpoint_timeout=1h -c work_mem=64MB"
export CLUSTER_OPTS
unset PGHOST PGDATABASE PGUSER
cluster_start
WORK=$(mktemp -d /tmp/embed_bench.XXXXXX)
PORT=$((28300 + RANDOM % 100))
MPID=
FDIR=$WORK/ferretdb
case $SERVER in
mjs)
	JAR=$(bench/debezium/build.sh)
	java -jar "$JAR" mongo-server --port "$PORT" >"$WORK/mjs.log" 2>&1 &
	MPID=$!
	for ((i = 0; i < 300; i++)); do
		grep -q "listening on" "$WORK/mjs.log" && break
		sleep 0.1
	done ;;
ferretdb)
	FERRETDB=$(ferretdb_build)
	ferretdb_start "$FDIR" "$PORT" >/dev/null ;;
*) echo "unknown --server $SERVER" >&2; exit 2 ;;
esac
trap 'if [ -n "$MPID" ]; then kill "$MPID" 2>/dev/null || true; fi; if [ "$SERVER" = ferretdb ]; then ferretdb_stop "$FDIR" || true; fi; cluster_stop; rm -rf "$WORK"' EXIT
BIN_DIR=$("${PG_CONFIG:-$PG_BINDIR/pg_config}" --bindir 2>/dev/null || echo "$PG_BINDIR")

# FerretDB closes the connection at a Decimal128: no numeric there
if [ "$SERVER" = ferretdb ]; then MONEY=float8 RATE=float8; else MONEY="numeric(12,2)" RATE="numeric(6,4)"; fi

setup() {   # setup DB EMBED: the tables and their rows
	createdb "$1"
	psql -qX -v ON_ERROR_STOP=1 -d "$1" <<SQL
CREATE EXTENSION bson_out;
CREATE TABLE orders (id text PRIMARY KEY, customer text, placed date, total $MONEY);
CREATE TABLE order_lines (order_id text REFERENCES orders ON DELETE CASCADE ON UPDATE CASCADE,
	line_no int, item text, qty int, price $MONEY, PRIMARY KEY (order_id, line_no));
CREATE TABLE line_taxes (order_id text, line_no int, tax text, rate $RATE,
	PRIMARY KEY (order_id, line_no, tax),
	FOREIGN KEY (order_id, line_no) REFERENCES order_lines ON DELETE CASCADE ON UPDATE CASCADE);
INSERT INTO orders SELECT 'o' || g, 'customer ' || (g % 977), '2026-01-01'::date + g % 300, g / 3.0
	FROM generate_series(1, $ORDERS) g;
INSERT INTO order_lines SELECT 'o' || g, l, 'item ' || ((g * l) % 1000), 1 + (g + l) % 9, ((g + l) % 500) / 4.0
	FROM generate_series(1, $ORDERS) g, generate_series(1, 1 + g % 9) l;
INSERT INTO line_taxes SELECT order_id, line_no, 'vat', 0.2 FROM order_lines WHERE line_no % 2 = 0;
VACUUM ANALYZE;
SQL
	if [ "$2" = 1 ]; then
		psql -qXAt -v ON_ERROR_STOP=1 -d "$1" -c "SELECT bson_embed('order_lines', 'orders', 'lines')" \
			-c "SELECT bson_embed('line_taxes', 'order_lines', 'taxes')" >/dev/null
	fi
}

rows_of() { psql -qXAt -d "$1" -c "SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM order_lines) + (SELECT count(*) FROM line_taxes)"; }
lsn() { psql -qXAt -d "$1" -c "SELECT pg_current_wal_lsn()"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

workload() {   # workload DB: part 2's changes, the same in both databases
	psql -qX -v ON_ERROR_STOP=1 -d "$1" <<SQL
DO \$\$
DECLARE
	o text;
BEGIN
	FOR i IN 1..$CHANGES LOOP
		o := 'o' || (1 + (i * 7919) % $ORDERS);
		CASE i % 4
		WHEN 0 THEN
			INSERT INTO order_lines VALUES (o, 100 + i, 'new ' || i, 1, 9.99);
			INSERT INTO line_taxes VALUES (o, 100 + i, 'vat', 0.2), (o, 100 + i, 'eco', 0.01);
		WHEN 1 THEN
			UPDATE order_lines SET qty = qty + 1 WHERE order_id = o;
		WHEN 2 THEN
			DELETE FROM order_lines WHERE order_id = o AND line_no = 1 + i % 3;
		ELSE
			UPDATE order_lines SET order_id = 'o' || (1 + (i * 104729) % $ORDERS), line_no = 10000 + i
			WHERE order_id = o AND line_no = (SELECT max(line_no) FROM order_lines WHERE order_id = o);
		END CASE;
		COMMIT;
	END LOOP;
END \$\$;
SQL
}

check() {   # check DB TDB EMBED
	"$PYTHON" - "$1" "$2" "$3" "$PORT" <<'PY'
import sys, bson, psycopg2, pymongo
from bson.raw_bson import RawBSONDocument
db, tdb, embed, port = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
conn = psycopg2.connect(dbname=db)
cur = conn.cursor()
c = pymongo.MongoClient("127.0.0.1", port, document_class=RawBSONDocument)
if embed:
    cur.execute("SELECT bson_document(o) FROM orders o")
    want = {bson.decode(bytes(r[0]))["_id"]: bytes(r[0]) for r in cur}
    got = {bson.decode(d.raw)["_id"]: d.raw for d in c[tdb].orders.find(batch_size=500)}
    bad = sum(1 for k in set(want) | set(got) if want.get(k) != got.get(k))
    others = [n for n in c[tdb].list_collection_names() if n in ("order_lines", "line_taxes")]
    print("%d orders, %d differ, embedded tables' collections: %s" % (len(want), bad, others or "none"))
    sys.exit(1 if bad or others else 0)
bad = []
for t in ("orders", "order_lines", "line_taxes"):
    cur.execute("SELECT count(*) FROM " + t)
    n = cur.fetchone()[0]
    if c[tdb][t].count_documents({}) != n:
        bad.append(t)
print("counts %s" % ("equal" if not bad else "differ: %s" % bad))
sys.exit(1 if bad else 0)
PY
}

declare -A COPY_RPS EXPORT_RPS APPLY_EPS EVENTS
for mode in flat embedded; do
	embed=$([ $mode = embedded ] && echo 1 || echo 0)
	copies=() exports=() applies=()
	for ((r = 1; r <= REPS; r++)); do
		db=${mode}_$r
		phase "$mode, run $r: $ORDERS orders"
		setup "$db" "$embed"
		rows=$(rows_of "$db")
		ROWS="$rows rows"
		start=$(date +%s.%N)
		pg_bsonexport -d "$db" --out-dir "$WORK/dump_$db" -q
		end=$(date +%s.%N)
		exports+=("$(echo "$rows / ($end - $start)" | bc -l)")
		rm -rf "$WORK/dump_$db"
		start=$(date +%s.%N)
		pg_bsonstream -d "$db" --slot "s_$db" --create-slot --initial-copy -o "$WORK/s_$db" \
			--to "mongodb://127.0.0.1:$PORT/t_$db" --endpos "$(lsn "$db")" -q
		end=$(date +%s.%N)
		copies+=("$(echo "$rows / ($end - $start)" | bc -l)")
		workload "$db"
		start=$(date +%s.%N)
		pg_bsonstream -d "$db" --slot "s_$db" -o "$WORK/s_$db" \
			--to "mongodb://127.0.0.1:$PORT/t_$db" --endpos "$(lsn "$db")" 2>"$WORK/err_$db"
		end=$(date +%s.%N)
		events=$(sed -n 's/^pg_bsonstream: \([0-9]*\) events,.*/\1/p' "$WORK/err_$db" | tail -1)
		EVENTS[$mode]=$events
		applies+=("$(echo "$events / ($end - $start)" | bc -l)")
		log "$mode run $r: $rows rows, export $(printf %.0f "${exports[-1]}") rows/s, first copy $(printf %.0f "${copies[-1]}") rows/s; $events events applied at $(printf %.0f "${applies[-1]}") events/s; $(check "$db" "t_$db" "$embed")"
		psql -qXAt -d "$db" -c "SELECT pg_drop_replication_slot('s_$db')" >/dev/null
		rm -rf "$WORK/s_$db"
		"$PYTHON" -c "import pymongo; pymongo.MongoClient('127.0.0.1', $PORT).drop_database('t_$db')"
		dropdb "$db"
	done
	EXPORT_RPS[$mode]=$(printf '%s\n' "${exports[@]}" | median)
	COPY_RPS[$mode]=$(printf '%s\n' "${copies[@]}" | median)
	APPLY_EPS[$mode]=$(printf '%s\n' "${applies[@]}" | median)
done

echo
echo "| $SERVER, $ORDERS orders ($(printf %s "${ROWS:-}")), medians of $REPS | flat | embedded | embedded / flat |"
echo "|---|---|---|---|"
printf '| pg_bsonexport --out-dir, rows/s | %.0f | %.0f | %.2f |\n' "${EXPORT_RPS[flat]}" "${EXPORT_RPS[embedded]}" "$(echo "${EXPORT_RPS[embedded]} / ${EXPORT_RPS[flat]}" | bc -l)"
printf '| first copy into the server (--initial-copy --to), rows/s | %.0f | %.0f | %.2f |\n' "${COPY_RPS[flat]}" "${COPY_RPS[embedded]}" "$(echo "${COPY_RPS[embedded]} / ${COPY_RPS[flat]}" | bc -l)"
printf '| changes applied (--to), events/s (%s events) | %.0f | %.0f | %.2f |\n' "${EVENTS[embedded]}" "${APPLY_EPS[flat]}" "${APPLY_EPS[embedded]}" "$(echo "${APPLY_EPS[embedded]} / ${APPLY_EPS[flat]}" | bc -l)"
echo
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), PostgreSQL $PG_MAJOR, $(nproc) cores"
