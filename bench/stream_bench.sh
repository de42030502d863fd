#!/bin/bash
# pg_bsonstream benchmark: end-to-end throughput of the change stream into
# durable segment files against pg_recvlogical with the same plugin writing
# to /dev/null, and pg_bsonstream's peak memory at two stream lengths.
#
#   bench/stream_bench.sh [--pg NN] [--changes N] [--batch B] [--reps R]
#                         [--dir DIR] [--out FILE.md]
#
#   --pg NN       PostgreSQL major version (default 15)
#   --changes N   row changes streamed (default 1,000,000): the workload of
#                 bench/changes_bench.sh (bench/changes_workload.sh), N/3
#                 inserts, N/3 updates, N/3 deletes, B rows a transaction
#   --batch B     rows per transaction (default 10,000)
#   --reps R      timed runs of each program (default 5), interleaved, the
#                 first program changing from round to round; each run
#                 streams from a slot of its own, all made before the
#                 workload, so every run decodes the same WAL
#   --stream-args "ARGS"  more options for pg_bsonstream's timed runs (to
#                 see where its time goes: --no-sync, --segment-size ...)
#   --dir DIR     where pg_bsonstream writes its segments (default
#                 /var/tmp/bson_out_stream_bench: a disk, not a tmpfs, for
#                 fsync to mean anything)
#
# Both programs run until the same --endpos (the WAL position after the
# workload), and the time is the whole run, connection to exit:
#   pg_recvlogical -S SLOT --start -E ENDPOS -f /dev/null --no-loop
#   pg_bsonstream  -S SLOT -o DIR -E ENDPOS      (64MB segments, each
#                  fsynced, renamed and the directory fsynced before its end
#                  is confirmed: the default, durable)
# Peak RSS (GNU time's %M) of pg_bsonstream is measured over the whole
# workload and over its first third (the inserts), from slots of their own.
#
# Writes bench/results/stream-<UTC time>.md (or --out) and prints it.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")

PG_MAJOR=${PG_MAJOR:-15}
CHANGES=1000000
BATCH=10000
REPS=5
DIR=/var/tmp/bson_out_stream_bench
STREAM_ARGS=()
OUT=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--pg) PG_MAJOR=$2; shift ;;
	--changes) CHANGES=$2; shift ;;
	--batch) BATCH=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--dir) DIR=$2; shift ;;
	--stream-args) read -r -a STREAM_ARGS <<<"$2"; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,30p' "$0"; exit 0 ;;
	*) echo "unknown option: $1" >&2; exit 2 ;;
	esac
	shift
done
export PG_MAJOR
# shellcheck source=../scripts/lib.sh
source "$ROOT/scripts/lib.sh"
# shellcheck source=changes_workload.sh
source "$BENCH_DIR/changes_workload.sh"

STAMP=$(date -u +%Y%m%d-%H%M%S)
: "${OUT:=$BENCH_DIR/results/stream-$STAMP.md}"
mkdir -p "$(dirname "$OUT")"
T_START=$(date +%s)
phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }

install_packages libpq-dev time
phase "building and installing bson_out and its programs"
(cd "$ROOT" && build_install)
STREAM=$PG_BINDIR/pg_bsonstream
RECV=$PG_BINDIR/pg_recvlogical
[ -x "$STREAM" ] || { echo "no $STREAM (libpq's headers missing?)" >&2; exit 1; }
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(cd "$ROOT" && git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (with uncommitted changes)" || true)

CLUSTER_OPTS="-c shared_buffers=1GB -c max_parallel_workers_per_gather=0 -c jit=off \
-c autovacuum=off -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
-c max_wal_size=8GB -c checkpoint_timeout=1h -c work_mem=64MB -c max_wal_senders=10"
logical_decoding_opts
# a slot a run, after logical_decoding_opts' own count (the last -c wins)
CLUSTER_OPTS+=" -c max_replication_slots=$((2 * REPS + 4))"
export CLUSTER_OPTS
unset PGHOST PGDATABASE PGUSER
cluster_start
export PGDATABASE=bench
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

typed_database

ROWS=$(( (CHANGES + 2) / 3 ))
N=$(( 3 * ROWS ))
make_workload typed_changes "$ROWS"
slots=(rss_third rss_all)
for ((r = 1; r <= REPS; r++)); do slots+=("recv_$r" "stream_$r"); done
for s in "${slots[@]}"; do
	"${PSQL[@]}" -c "SELECT pg_create_logical_replication_slot('$s', 'bson_out')" >/dev/null
done
phase "workload: $ROWS inserts, $ROWS updates, $ROWS deletes ($N changes, $BATCH rows a transaction)"
workload_phase typed_changes "$ROWS" insert
third=$("${PSQL[@]}" -At -c "SELECT pg_current_wal_insert_lsn()")
workload_phase typed_changes "$ROWS" update
workload_phase typed_changes "$ROWS" delete
endpos=$("${PSQL[@]}" -At -c "SELECT pg_current_wal_insert_lsn()")
wal_bytes=$("${PSQL[@]}" -At -c "SELECT pg_current_wal_lsn() - confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'recv_1'")
"${PSQL[@]}" -c "CHECKPOINT"

mkdir -p "$DIR"
TIMEF=$(mktemp)
# timed PROGRAM ARGS...: "seconds peak-RSS-kB CPU-seconds" of the whole run
timed() {
	local t0 t1
	t0=$(date +%s.%N)
	/usr/bin/time -o "$TIMEF" -f '%M %U %S' "$@" || { echo "failed: $*" >&2; return 1; }
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" '{printf "%.3f %s %.2f\n", b - a, $1, $2 + $3}' "$TIMEF"
}
# the events and segments pg_bsonstream wrote (its summary line)
stream_summary() { grep -oE '[0-9]+ events, .*, [0-9]+ segments' "$1" | tail -1; }

declare -A TIMES RSS CPU
for ((r = 1; r <= REPS; r++)); do
	for i in 0 1; do
		which=$(( (r + i) % 2 ))
		if [ "$which" = 0 ]; then
			read -r secs rss cpu < <(timed "$RECV" -d bench -S "recv_$r" --start -E "$endpos" -f /dev/null --no-loop)
			p=pg_recvlogical
		else
			rm -rf "$DIR/run"
			read -r secs rss cpu < <(timed "$STREAM" -d bench -S "stream_$r" -o "$DIR/run" -E "$endpos" ${STREAM_ARGS[@]+"${STREAM_ARGS[@]}"} 2>"$DIR/stderr")
			p=pg_bsonstream
			summary=$(stream_summary "$DIR/stderr")
			summary_last=$summary
			case $summary in "$N events"*) ;; *) echo "pg_bsonstream streamed '$summary', not $N events" >&2; cat "$DIR/stderr" >&2; exit 1 ;; esac
		fi
		TIMES[$p]="${TIMES[$p]:-} $secs"
		RSS[$p]="${RSS[$p]:-} $rss"
		CPU[$p]="${CPU[$p]:-} $cpu"
		phase "round $r $p: $secs s, CPU $cpu s, peak RSS $rss kB${summary:+, $summary}"
		summary=
	done
done
confirmed=$("${PSQL[@]}" -At -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name ~ '^(recv|stream)_' AND confirmed_flush_lsn >= '$endpos'")
[ "$confirmed" -eq $((2 * REPS)) ] || { echo "only $confirmed of $((2 * REPS)) slots confirmed up to $endpos" >&2; exit 1; }

phase "peak RSS of pg_bsonstream: the inserts alone, then the whole workload"
rm -rf "$DIR/run"
read -r _ rss_third _ < <(timed "$STREAM" -d bench -S rss_third -o "$DIR/run" -E "$third" 2>"$DIR/stderr")
sum_third=$(stream_summary "$DIR/stderr")
rm -rf "$DIR/run"
read -r _ rss_all _ < <(timed "$STREAM" -d bench -S rss_all -o "$DIR/run" -E "$endpos" 2>"$DIR/stderr")
sum_all=$(stream_summary "$DIR/stderr")
rm -rf "$DIR/run" "$TIMEF"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
cluster_stop

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
m_recv=$(echo "${TIMES[pg_recvlogical]}" | median)
m_stream=$(echo "${TIMES[pg_bsonstream]}" | median)
build=$("$PG_BINDIR/pg_config" --configure)
kind="release build"
case $build in *enable-cassert*) kind="ASSERTION build (--enable-cassert): timings are not representative" ;; esac
{
	echo "# pg_bsonstream: change stream into durable segments ($STAMP UTC)"
	echo
	echo "Command: \`bench/stream_bench.sh ${ARGS[*]}\` at commit $COMMIT$DIRTY."
	echo
	echo "Server: PostgreSQL $("$PG_BINDIR/postgres" --version | sed 's/^postgres (PostgreSQL) //'), $kind."
	echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo);" \
		"load average before $load_start, after $load_end. Segments written to $DIR ($(df -PT "$DIR" | awk 'NR == 2 {print $2}'))."
	echo
	echo "Workload: $N changes of a copy of the benchmark's typed table ($ROWS inserts, then updates, then deletes;" \
		"$BATCH rows a transaction), $((wal_bytes / 1048576)) MB of WAL, streamed with the bson_out plugin up to" \
		"the same --endpos by each program, $REPS runs each, interleaved, every run from its own slot; medians."
	echo
	echo "| program | median s | changes/s | CPU s (user + system) | peak RSS (kB) | all runs (s) |"
	echo "|---|---:|---:|---:|---:|---|"
	echo "| pg_recvlogical -f /dev/null | $m_recv | $(awk -v n="$N" -v s="$m_recv" 'BEGIN {printf "%.0f", n / s}') | $(echo "${CPU[pg_recvlogical]}" | median) | $(echo "${RSS[pg_recvlogical]}" | median) |${TIMES[pg_recvlogical]} |"
	echo "| pg_bsonstream -o DIR${STREAM_ARGS[*]:+ ${STREAM_ARGS[*]}}$([[ " ${STREAM_ARGS[*]:-} " == *" --no-sync "* ]] || echo " (durable)") | $m_stream | $(awk -v n="$N" -v s="$m_stream" 'BEGIN {printf "%.0f", n / s}') | $(echo "${CPU[pg_bsonstream]}" | median) | $(echo "${RSS[pg_bsonstream]}" | median) |${TIMES[pg_bsonstream]} |"
	echo
	echo "pg_bsonstream's throughput: **$(awk -v a="$m_recv" -v b="$m_stream" 'BEGIN {printf "%.2f", a / b}')×** pg_recvlogical's" \
		"(target: at least 0.8×). Its last run: $summary_last."
	echo
	echo "Peak RSS of pg_bsonstream: $rss_third kB for the inserts alone ($sum_third), $rss_all kB for the whole workload ($sum_all)."
} >"$OUT"
cat "$OUT"
