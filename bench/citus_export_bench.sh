#!/bin/bash
# pg_bsonexport on Citus: a distributed table exported shard by shard from
# the workers (--jobs 1, 2, 4) against the same table exported with one query
# through the coordinator (--via-coordinator), on a throwaway coordinator and
# two workers on this machine (test/citus/cluster.sh; Citus from
# scripts/citus.sh, PostgreSQL 15).
#
#   bench/citus_export_bench.sh [--reps R] [--copies K] [--out FILE.md]
#
#   --reps R     timed exports of each variant (default 5), interleaved, the
#                first variant changing from round to round; medians
#   --copies K   the distributed table holds K copies of bench/gen_data.py's
#                medium table (200,000 documents each; default 2)
#
# The table: (id bigint, doc jsonb), 32 shards, exported with --column doc
# (to_bson(doc)) into a durable file on this machine's disk.
#
# Writes bench/results/citus-export-<UTC time>.md (or --out) and prints it.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
REPS=5
COPIES=2
OUT=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2; shift ;;
	--copies) COPIES=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
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
: "${OUT:=$BENCH_DIR/results/citus-export-$STAMP.md}"
mkdir -p "$(dirname "$OUT")"
T_START=$(date +%s)
phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)

"$ROOT/scripts/citus.sh" || { echo "Citus could not be installed (scripts/citus.sh)" >&2; exit 1; }
phase "building and installing bson_out and pg_bsonexport"
(cd "$ROOT" && build_install)
EXPORT=$PG_BINDIR/pg_bsonexport

unset PGHOST PGPORT PGDATABASE PGUSER
citus_cluster_start
trap citus_cluster_stop EXIT
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

phase "the medium table (bench/gen_data.py), $COPIES copies in a distributed table of 32 shards"
"$PYTHON" "$BENCH_DIR/gen_data.py" --dbname postgres --tables medium >/dev/null
"${PSQL[@]}" -c "SET citus.shard_count = 32" \
	-c "CREATE TABLE dist (id bigint PRIMARY KEY, doc jsonb)" \
	-c "SELECT create_distributed_table('dist', 'id')" \
	-c "INSERT INTO dist SELECT k * 1000000 + id, doc FROM medium, generate_series(0, $COPIES - 1) k" \
	-c "VACUUM ANALYZE dist" >/dev/null
rows=$("${PSQL[@]}" -At -c "SELECT count(*) FROM dist")

DIR=$(mktemp -d /var/tmp/citus_export_bench.XXXXXX)
trap 'citus_cluster_stop; rm -rf "$DIR"' EXIT
VARIANTS=("--jobs 1" "--jobs 2" "--jobs 4" "--via-coordinator")
declare -A TIMES
bytes=0
for ((r = 0; r < REPS; r++)); do
	n=${#VARIANTS[@]}
	for ((i = 0; i < n; i++)); do
		v=${VARIANTS[$(( (r + i) % n ))]}
		rm -f "$DIR/out.bson"
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086
		"$EXPORT" -t dist -c doc -o "$DIR/out.bson" -q $v
		t1=$(date +%s.%N)
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
		bytes=$(stat -c %s "$DIR/out.bson")
		TIMES[$v]="${TIMES[$v]:-} $secs"
		phase "round $((r + 1)) $v: $secs s, $bytes bytes"
	done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
base=$(echo "${TIMES[--via-coordinator]}" | median)
{
	echo "# pg_bsonexport on Citus: per shard against through the coordinator ($STAMP UTC)"
	echo
	echo "Command: \`bench/citus_export_bench.sh ${ARGS[*]}\` at commit $COMMIT."
	echo
	echo "Cluster: Citus 13.2.2 on PostgreSQL $("$PG_BINDIR/postgres" --version | sed 's/^postgres (PostgreSQL) //'), a coordinator and two workers on this machine ($(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo)); load average before $load_start, after $load_end."
	echo
	echo "Table: $rows documents ($COPIES copies of the medium table), 32 shards; \`pg_bsonexport -t dist -c doc -o FILE\`, $((bytes / 1000000)) MB of BSON into a durable file, $REPS runs each, interleaved; medians."
	echo
	echo "| variant | median s | documents/s | MB/s | vs --via-coordinator | all runs (s) |"
	echo "|---|---:|---:|---:|---:|---|"
	for v in "${VARIANTS[@]}"; do
		m=$(echo "${TIMES[$v]}" | median)
		echo "| \`$v\` | $m | $(awk -v n="$rows" -v s="$m" 'BEGIN {printf "%.0f", n / s}') | $(awk -v b="$bytes" -v s="$m" 'BEGIN {printf "%.1f", b / s / 1e6}') | $(awk -v a="$base" -v s="$m" 'BEGIN {printf "%.2f×", a / s}') |${TIMES[$v]} |"
	done
} >"$OUT"
cat "$OUT"
