#!/bin/bash
# pg_bsonstream --citus: the change stream of a Citus cluster (a coordinator
# and two workers on this machine, test/citus/cluster.sh; Citus from
# scripts/citus.sh, PostgreSQL 15) against the stream of one worker alone.
#
#   bench/citus_stream_bench.sh [--rows N] [--reps R] [--out FILE.md]
#
#   --rows N   rows of the distributed table (32 shards): N inserts, N
#              updates and N deletes, 10,000 rows a transaction, made once
#              (default 300,000: 900,000 changes, about half on each worker)
#   --reps R   timed runs of each variant (default 3), interleaved; medians
#
# Every run decodes the same WAL from slots made before the workload: the
# cluster's runs a slot on each node (pg_bsonstream --citus resuming them,
# DIR/group-<groupid>), the worker's runs a slot on worker 1 (pg_bsonstream
# on it alone); each over TCP to 127.0.0.1, as pg_dist_node names the
# workers (Citus turns SSL on, which libpq then uses), and over the nodes'
# Unix sockets.  A run is timed from its start until every slot it follows
# is confirmed past the WAL end its node had after the workload, with
# --segment-time 0.2 and --status-interval 0.2 for both (so that the end is
# confirmed within 0.2 s of being written), then stopped with SIGTERM.
# Events are counted in the segments written; the CPU time of the
# walsenders (read from /proc just before the stop) and of pg_bsonstream
# (GNU time, every process of it) is reported beside.
#
# Writes bench/results/citus-stream-<UTC time>.md (or --out) and prints it.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
ROWS=300000
REPS=3
OUT=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--rows) ROWS=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,21p' "$0"; exit 0 ;;
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
: "${OUT:=$BENCH_DIR/results/citus-stream-$STAMP.md}"
mkdir -p "$(dirname "$OUT")"
T_START=$(date +%s)
phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)

"$ROOT/scripts/citus.sh" || { echo "Citus could not be installed (scripts/citus.sh)" >&2; exit 1; }
phase "building and installing bson_out and pg_bsonstream"
(cd "$ROOT" && build_install)
STREAM=$PG_BINDIR/pg_bsonstream

unset PGHOST PGPORT PGDATABASE PGUSER
citus_cluster_start
DIR=$(mktemp -d /var/tmp/citus_stream_bench.XXXXXX)
trap 'citus_cluster_stop; rm -rf "$DIR"' EXIT
PSQL=(psql -X -qAt -v ON_ERROR_STOP=1)
node_psql() { citus_psql "$1" -qAt -v ON_ERROR_STOP=1 "${@:2}"; }
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

"${PSQL[@]}" -c "CREATE TABLE bench_dist (id bigint PRIMARY KEY, v int, t text, doc jsonb)" \
	-c "SELECT create_distributed_table('bench_dist', 'id', shard_count := 32)" >/dev/null
groups=$("${PSQL[@]}" -c "SELECT string_agg(groupid::text, ' ' ORDER BY groupid) FROM pg_dist_node WHERE noderole = 'primary'")
# the variants: the cluster's stream and worker 1's alone, each over TCP to
# 127.0.0.1 (as pg_dist_node names the workers; Citus turns SSL on, and
# libpq's sslmode=prefer uses it) and over the nodes' Unix sockets
VARIANTS=(cluster cluster-socket worker worker-socket)
phase "slots: one per variant and round, on every node for the cluster's, on worker 1 for the worker's"
for ((r = 1; r <= REPS; r++)); do
	for v in "${VARIANTS[@]}"; do
		slot="${v//-/_}_$r"
		case $v in
		cluster*)
			for node in coord worker1 worker2; do
				node_psql "$node" -c "SELECT 1 FROM pg_create_logical_replication_slot('$slot', 'bson_out')" >/dev/null
			done
			for g in $groups; do mkdir -p "$DIR/$slot/group-$g"; done ;;
		worker*)
			node_psql worker1 -c "SELECT 1 FROM pg_create_logical_replication_slot('$slot', 'bson_out')" >/dev/null ;;
		esac
	done
done

phase "the workload: $ROWS inserts, updates and deletes, 10,000 rows a transaction"
for ((lo = 1; lo <= ROWS; lo += 10000)); do
	hi=$((lo + 9999 > ROWS ? ROWS : lo + 9999))
	"${PSQL[@]}" -c "INSERT INTO bench_dist SELECT g, g % 100, 'row ' || g, jsonb_build_object('g', g, 'tags', jsonb_build_array('a', 'b')) FROM generate_series($lo, $hi) g"
done
for ((lo = 1; lo <= ROWS; lo += 10000)); do
	"${PSQL[@]}" -c "UPDATE bench_dist SET v = v + 1, t = t || '!' WHERE id BETWEEN $lo AND $((lo + 9999))"
done
for ((lo = 1; lo <= ROWS; lo += 10000)); do
	"${PSQL[@]}" -c "DELETE FROM bench_dist WHERE id BETWEEN $lo AND $((lo + 9999))"
done
declare -A END
for node in coord worker1 worker2; do END[$node]=$(node_psql "$node" -c "SELECT pg_current_wal_lsn()"); done

# caught_up SLOT NODE...: every node's SLOT confirmed past its END
caught_up() {
	local slot=$1 node
	shift
	for node in "$@"; do
		[ "$(node_psql "$node" -c "SELECT confirmed_flush_lsn >= '${END[$node]}' FROM pg_replication_slots WHERE slot_name = '$slot'")" = t ] || return 1
	done
}

# walsender_cpu SLOT NODE...: CPU seconds of the walsenders of SLOT so far
walsender_cpu() {
	local slot=$1 node pid total=0 ticks
	shift
	ticks=$(getconf CLK_TCK)
	for node in "$@"; do
		pid=$(node_psql "$node" -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$slot'")
		[ -n "$pid" ] && [ -r "/proc/$pid/stat" ] &&
			total=$(awk -v t="$total" -v k="$ticks" '{sub(/^.*\) /, ""); printf "%.2f", t + ($12 + $13) / k}' "/proc/$pid/stat")
	done
	echo "$total"
}

# run NAME SLOT OUT NODES... -- ARGS...: "seconds until caught up, the
# walsenders' CPU seconds, pg_bsonstream's CPU seconds (its processes all)"
run() {
	local slot=$2 out=$3 nodes=() t0 t1 pid server
	shift 3
	while [ "$1" != -- ]; do nodes+=("$1"); shift; done
	shift
	t0=$(date +%s.%N)
	/usr/bin/time -f "%U %S" -o "$DIR/client.cpu" \
		"$STREAM" "$@" --slot "$slot" -o "$out" --segment-time 0.2 --status-interval 0.2 -q 2>>"$DIR/stream.log" &
	pid=$!
	until caught_up "$slot" "${nodes[@]}"; do sleep 0.05; done
	t1=$(date +%s.%N)
	server=$(walsender_cpu "$slot" "${nodes[@]}")
	pkill -TERM -P "$pid" -x pg_bsonstream
	wait "$pid" || { echo "pg_bsonstream failed (see $DIR/stream.log)" >&2; cat "$DIR/stream.log" >&2; exit 1; }
	awk -v a="$t0" -v b="$t1" -v s="$server" '{printf "%.3f %.2f %.2f", b - a, s, $1 + $2}' "$DIR/client.cpu"
}

events() { "$PYTHON" -c 'import bson, glob, sys; print(sum(1 for p in glob.glob(sys.argv[1] + "/**/changes/*.bson", recursive=True) for _ in bson.decode_file_iter(open(p, "rb"))))' "$1"; }

declare -A TIMES EVENTS SERVER CLIENT
COORD=(-h "$CITUS_COORD_SOCKET" -p "$CITUS_COORD_PORT" -U postgres -d postgres)
for ((r = 1; r <= REPS; r++)); do
	n=${#VARIANTS[@]}
	for ((i = 0; i < n; i++)); do
		v=${VARIANTS[$(( (r + i) % n ))]}
		slot="${v//-/_}_$r"
		case $v in
		cluster) res=$(run "$v" "$slot" "$DIR/$slot" coord worker1 worker2 -- --citus "${COORD[@]}") ;;
		cluster-socket)
			res=$(run "$v" "$slot" "$DIR/$slot" coord worker1 worker2 -- --citus "${COORD[@]}" \
				--worker-host "127.0.0.1:$CITUS_WORKER1_PORT=$CITUS_WORKER1_SOCKET" \
				--worker-host "127.0.0.1:$CITUS_WORKER2_PORT=$CITUS_WORKER2_SOCKET") ;;
		worker)
			res=$(run "$v" "$slot" "$DIR/$slot" worker1 -- -h 127.0.0.1 -p "$CITUS_WORKER1_PORT" -U postgres -d postgres) ;;
		worker-socket)
			res=$(run "$v" "$slot" "$DIR/$slot" worker1 -- -h "$CITUS_WORKER1_SOCKET" -p "$CITUS_WORKER1_PORT" -U postgres -d postgres) ;;
		esac
		events_n=$(events "$DIR/$slot")
		read -r secs server client <<<"$res"
		TIMES[$v]="${TIMES[$v]:-} $secs"
		SERVER[$v]="${SERVER[$v]:-} $server"
		CLIENT[$v]="${CLIENT[$v]:-} $client"
		EVENTS[$v]=$events_n
		phase "round $r $v: $events_n events in $secs s, walsenders $server CPU s, pg_bsonstream $client CPU s"
	done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
{
	echo "# pg_bsonstream --citus against one worker's stream ($STAMP UTC)"
	echo
	echo "Command: \`bench/citus_stream_bench.sh ${ARGS[*]}\` at commit $COMMIT."
	echo
	echo "Cluster: Citus 13.2.2 on PostgreSQL $("$PG_BINDIR/postgres" --version | sed 's/^postgres (PostgreSQL) //'), a coordinator and two workers on this machine ($(nproc) cores); load average before $load_start, after $load_end."
	echo
	echo "Workload: $ROWS inserts, $ROWS updates, $ROWS deletes on a distributed table of 32 shards, 10,000 rows a transaction; each run from slots made before it, timed until every slot it follows is confirmed past its node's WAL end; $REPS runs each, interleaved; medians."
	echo
	echo "| variant | events | median s | events/s | walsenders' CPU s | pg_bsonstream's CPU s | all runs (s) |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	for v in "${VARIANTS[@]}"; do
		m=$(echo "${TIMES[$v]}" | median)
		case $v in
		cluster) label="\`--citus\` (3 nodes), workers over TCP (SSL)" ;;
		cluster-socket) label="\`--citus\` (3 nodes), workers over Unix sockets (\`--worker-host\`)" ;;
		worker) label="worker 1 alone, over TCP (SSL)" ;;
		worker-socket) label="worker 1 alone, over its Unix socket" ;;
		esac
		echo "| $label | ${EVENTS[$v]} | $m | $(awk -v n="${EVENTS[$v]}" -v s="$m" 'BEGIN {printf "%.0f", n / s}') | $(echo "${SERVER[$v]}" | median) | $(echo "${CLIENT[$v]}" | median) |${TIMES[$v]} |"
	done
	echo
	echo "CPU: medians; the walsenders' (decoding, on the servers) read from /proc just before the stop, pg_bsonstream's (all its processes) from GNU time."
} >"$OUT"
cat "$OUT"
