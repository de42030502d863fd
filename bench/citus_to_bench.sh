#!/bin/bash
# pg_bsonstream --citus --to: a Citus cluster's changes applied into a
# MongoDB-protocol server, the nodes' streams merged in commit order,
# against one worker's stream applied alone (pg_bsonstream --to on worker 1).
# A coordinator and two workers on this machine (test/citus/cluster.sh;
# Citus from scripts/citus.sh, PostgreSQL 15), mongo-java-server (in-memory,
# the fast one) on a loopback port.
#
#   bench/citus_to_bench.sh [--rows N] [--per-txn N] [--reps R] [--out FILE.md]
#
#   --rows N     rows of the distributed table (32 shards): N inserts, N
#                updates and N deletes (default 100,000: 300,000 changes,
#                about half on each worker)
#   --per-txn N  rows a transaction (default 1,000)
#   --reps R     timed runs of each variant (default 3), interleaved; medians
#
# Every run decodes the same WAL from slots made before the workload (the
# cluster's: one on each node, DIR/<slot>/group-<G>; the worker's: one on
# worker 1), with the nodes reached over TCP without SSL, segments closed
# each second (the default of --citus --to) in both, and applies it
# into a database of its own.  A run is timed from its start until the
# last row of the workload (a marker inserted after everything else, on a
# shard of worker 1) is in the target: in commit order, every change before
# it is applied then.  Events are counted in the applied segments (kept
# with --keep-applied), heartbeats left out.  Each run ends by checking the
# target: its documents equal the rows (none: every row was deleted) but the
# marker.
#
# Writes bench/results/citus-to-<UTC time>.md (or --out) and prints it.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
ROWS=100000
PER_TXN=1000
REPS=3
OUT=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--rows) ROWS=$2; shift ;;
	--per-txn) PER_TXN=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,27p' "$0"; exit 0 ;;
	*) echo "unknown option: $1" >&2; exit 2 ;;
	esac
	shift
done
export PG_MAJOR=15
# shellcheck source=../scripts/lib.sh
source "$ROOT/scripts/lib.sh"
# shellcheck source=../test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"

STAMP=$(date -u +%Y%m%d-%H%M%S)
: "${OUT:=$BENCH_DIR/results/citus-to-$STAMP.md}"
mkdir -p "$(dirname "$OUT")"
T_START=$(date +%s)
phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)

install_packages maven default-jdk-headless
"$ROOT/scripts/citus.sh" || { echo "Citus could not be installed (scripts/citus.sh)" >&2; exit 1; }
phase "building and installing bson_out and pg_bsonstream"
(cd "$ROOT" && build_install)
STREAM=$PG_BINDIR/pg_bsonstream
JAR=$("$ROOT/bench/debezium/build.sh")

unset PGHOST PGPORT PGDATABASE PGUSER
citus_cluster_start
DIR=$(mktemp -d /var/tmp/citus_to_bench.XXXXXX)
MPORT=$((28700 + RANDOM % 100))
java -jar "$JAR" mongo-server --port "$MPORT" >"$DIR/mjs.log" 2>&1 &
MPID=$!
trap 'kill "$MPID" 2>/dev/null || true; citus_cluster_stop; rm -rf "$DIR"' EXIT
for ((i = 0; i < 300; i++)); do
	grep -q "listening on" "$DIR/mjs.log" && break
	sleep 0.1
done
PSQL=(psql -X -qAt -v ON_ERROR_STOP=1)
node_psql() { citus_psql "$1" -qAt -v ON_ERROR_STOP=1 "${@:2}"; }
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

"${PSQL[@]}" -c "CREATE TABLE bench_dist (id bigint PRIMARY KEY, v int, t text, doc jsonb)" \
	-c "SELECT create_distributed_table('bench_dist', 'id', shard_count := 32)" >/dev/null
groups=$("${PSQL[@]}" -c "SELECT string_agg(groupid::text, ' ' ORDER BY groupid) FROM pg_dist_node WHERE noderole = 'primary'")
VARIANTS=(cluster worker)
phase "slots: one per variant and round, on every node for the cluster's, on worker 1 for the worker's"
for ((r = 1; r <= REPS; r++)); do
	for v in "${VARIANTS[@]}"; do
		slot="${v}_$r"
		case $v in
		cluster)
			for node in coord worker1 worker2; do
				node_psql "$node" -c "SELECT 1 FROM pg_create_logical_replication_slot('$slot', 'bson_out')" >/dev/null
			done
			for g in $groups; do mkdir -p "$DIR/$slot/group-$g"; done ;;
		worker)
			node_psql worker1 -c "SELECT 1 FROM pg_create_logical_replication_slot('$slot', 'bson_out')" >/dev/null
			mkdir -p "$DIR/$slot" ;;
		esac
	done
done

phase "the workload: $ROWS inserts, updates and deletes, $PER_TXN rows a transaction"
for ((lo = 1; lo <= ROWS; lo += PER_TXN)); do
	"${PSQL[@]}" -c "INSERT INTO bench_dist SELECT g, g % 100, 'row ' || g, jsonb_build_object('g', g, 'tags', jsonb_build_array('a', 'b')) FROM generate_series($lo, $((lo + PER_TXN - 1 > ROWS ? ROWS : lo + PER_TXN - 1))) g"
done
for ((lo = 1; lo <= ROWS; lo += PER_TXN)); do
	"${PSQL[@]}" -c "UPDATE bench_dist SET v = v + 1, t = t || '!' WHERE id BETWEEN $lo AND $((lo + PER_TXN - 1))"
done
for ((lo = 1; lo <= ROWS; lo += PER_TXN)); do
	"${PSQL[@]}" -c "DELETE FROM bench_dist WHERE id BETWEEN $lo AND $((lo + PER_TXN - 1))"
done
# the marker: the last commit, on a shard of worker 1
w1=$("${PSQL[@]}" -c "SELECT nodeport FROM pg_dist_node WHERE groupid = (SELECT min(groupid) FROM pg_dist_node WHERE groupid > 0)")
MARK=$("${PSQL[@]}" -c "SELECT g FROM generate_series(-1, -1000, -1) g WHERE (SELECT nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('bench_dist', g)) = $w1 LIMIT 1")
"${PSQL[@]}" -c "INSERT INTO bench_dist VALUES ($MARK, 0, 'the end', '{}')"

# marked DB: is the marker in the target database DB?
marked() {
	"$PYTHON" -c 'import sys, pymongo; c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1])); sys.exit(0 if c[sys.argv[2]]["bench_dist"].find_one({"_id": int(sys.argv[3])}) else 1)' "$MPORT" "$1" "$MARK"
}

# tree_hwm PID: the peak resident memory (VmHWM, kB) of PID and its children
# (each node's stream and the applier): "largest total"
tree_hwm() {
	local p max=0 total=0 kb
	for p in "$1" $(pgrep -P "$1"); do
		kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
		kb=${kb:-0}
		total=$((total + kb))
		[ "$kb" -gt "$max" ] && max=$kb
	done
	echo "$max $total"
}

# run SLOT DB ARGS...: seconds until the marker is in DB
run() {
	local slot=$1 db=$2 t0 t1 pid
	shift 2
	t0=$(date +%s.%N)
	"$STREAM" "$@" --slot "$slot" -o "$DIR/$slot" --to "mongodb://127.0.0.1:$MPORT/$db" --keep-applied \
		--segment-time 1 --status-interval 1 -q 2>>"$DIR/stream.log" &
	pid=$!
	until marked "$db"; do
		kill -0 "$pid" 2>/dev/null || { echo "pg_bsonstream ended (see $DIR/stream.log)" >&2; tail -30 "$DIR/stream.log" >&2; exit 1; }
		sleep 0.05
	done
	t1=$(date +%s.%N)
	tree_hwm "$pid" >"$DIR/hwm.$slot"
	kill -TERM "$pid"
	wait "$pid" || { echo "pg_bsonstream failed (see $DIR/stream.log)" >&2; tail -30 "$DIR/stream.log" >&2; exit 1; }
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}'
}

# the events applied (heartbeats left out), and the target's documents: the marker alone
events() { "$PYTHON" -c 'import bson, glob, sys; print(sum(1 for p in glob.glob(sys.argv[1] + "/**/changes/*.bson", recursive=True) for e in bson.decode_file_iter(open(p, "rb")) if e.get("operationType") != "heartbeat"))' "$1"; }
only_marker() { "$PYTHON" -c 'import sys, pymongo; c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1])); ids = [d["_id"] for d in c[sys.argv[2]]["bench_dist"].find({}, {"_id": 1})]; sys.exit(0 if ids == [int(sys.argv[3])] else 1)' "$MPORT" "$1" "$MARK"; }

declare -A TIMES EVENTS HWM_MAX HWM_TOTAL
COORD=(-h 127.0.0.1 -p "$CITUS_COORD_PORT" -U postgres -d "dbname=postgres sslmode=disable")
for ((r = 1; r <= REPS; r++)); do
	n=${#VARIANTS[@]}
	for ((i = 0; i < n; i++)); do
		v=${VARIANTS[$(( (r + i) % n ))]}
		slot="${v}_$r"
		case $v in
		cluster) secs=$(run "$slot" "$slot" --citus "${COORD[@]}") ;;
		worker) secs=$(run "$slot" "$slot" -h 127.0.0.1 -p "$CITUS_WORKER1_PORT" -U postgres -d "dbname=postgres sslmode=disable") ;;
		esac
		only_marker "$slot" || { echo "round $r $v: the target's documents are not the table's" >&2; exit 1; }
		events_n=$(events "$DIR/$slot")
		TIMES[$v]="${TIMES[$v]:-} $secs"
		read -r hwm_max hwm_total <"$DIR/hwm.$slot"
		[ "${HWM_MAX[$v]:-0}" -lt "$hwm_max" ] && HWM_MAX[$v]=$hwm_max
		[ "${HWM_TOTAL[$v]:-0}" -lt "$hwm_total" ] && HWM_TOTAL[$v]=$hwm_total
		EVENTS[$v]=$events_n
		phase "round $r $v: $events_n events applied in $secs s"
	done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
{
	echo "# pg_bsonstream --citus --to against one worker's stream applied alone ($STAMP UTC)"
	echo
	echo "Command: \`bench/citus_to_bench.sh ${ARGS[*]}\` at commit $COMMIT."
	echo
	echo "Cluster: Citus 13.2.2 on PostgreSQL $("$PG_BINDIR/postgres" --version | sed 's/^postgres (PostgreSQL) //'), a coordinator and two workers on this machine ($(nproc) cores), mongo-java-server 1.47.0 (in memory); load average before $load_start, after $load_end."
	echo
	echo "Workload: $ROWS inserts, $ROWS updates, $ROWS deletes on a distributed table of 32 shards, $PER_TXN rows a transaction, then a marker row on worker 1; each run from slots made before it, decoding and applying, timed until the marker is in the target; $REPS runs each, interleaved; medians."
	echo
	echo "Peak memory: VmHWM of pg_bsonstream and of each of its processes (the nodes' streams, the applier) read just before the stop; the largest over the runs."
	echo
	echo "| variant | events applied | median s | events/s | all runs (s) | peak RSS, largest process (MB) | peak RSS, all processes (MB) |"
	echo "|---|---:|---:|---:|---|---:|---:|"
	for v in "${VARIANTS[@]}"; do
		m=$(echo "${TIMES[$v]}" | median)
		case $v in
		cluster) label="\`--citus --to\` (3 nodes, merged)" ;;
		worker) label="\`--to\`, worker 1 alone" ;;
		esac
		echo "| $label | ${EVENTS[$v]} | $m | $(awk -v n="${EVENTS[$v]}" -v s="$m" 'BEGIN {printf "%.0f", n / s}') |${TIMES[$v]} | $(awk -v k="${HWM_MAX[$v]}" 'BEGIN {printf "%.1f", k / 1024}') | $(awk -v k="${HWM_TOTAL[$v]}" 'BEGIN {printf "%.1f", k / 1024}') |"
	done
} | tee "$OUT"
