#!/bin/bash
# pg_bsonexport benchmark: end-to-end export speed and memory, on a
# throwaway cluster set up like bench/run.sh's.
#
#   [PG_MAJOR=NN] [BSON_OUT_CACHE=DIR] bench/export_bench.sh [--reps N] [--out FILE.md] [--port P]
#
# The server is PostgreSQL PG_MAJOR (default 15), found as scripts/lib.sh
# finds it (a source build under BSON_OUT_CACHE for 13 and 18; 18's is an
# assertion build, slower than a release build); --port sets the throwaway
# cluster's port (default: random from 50000).
#
# Builds the benchmark's medium table (bench/gen_data.py, scale 1: 200,000
# documents, the same deterministic generator and size as bench/run.sh), then
# times, interleaved (a new variant first every round), N repetitions of
#   (a) psql -c "COPY (SELECT to_bson(doc) FROM medium) TO STDOUT (FORMAT binary)" > /dev/null
#   (b) pg_bsonexport --table medium --column doc -o FILE --force --quiet
#   (c) the same with --jobs 2
#   (d) the same as (b) with --no-sync (no fsync of the file), for reference
#   (e) pg_bsonexport ... -o - > /dev/null (the stream alone, no file), for reference
#   (f) the same as (b) with --jobs 2 --split (two files, no concatenation)
#   (g) the same as (b) with --no-validate (framing checked, not every element)
# and reports medians of the wall time and of the client's CPU time (user +
# system of psql or pg_bsonexport), MB/s of BSON, the throughput ratio
# (b)/(a) (pg_bsonexport's target: at least 0.9), the --jobs 2 speed-ups
# (b)/(c) and (b)/(f), and the cost of the full validation, (b)/(g).  The previous
# run's FILE is removed before each timed run, outside the timing, so that
# every run writes a new file rather than also paying for freeing the old
# one's blocks.  Then the peak RSS of pg_bsonexport (/usr/bin/time -v) for
# 100,000 and 2,000,000 rows of a small-document table (bench/gen_data.py's
# small, repeated), with one job and with --jobs 2.
#
# Writes bench/results/export-<UTC time>.md (or --out) and prints it.  Its
# headings are those of BENCHMARKS.md's "Export (pg_bsonexport)" section and
# every table names the commit and the command, so that the file can be pasted
# there as it is (below the section's generated heading block).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=../scripts/lib.sh
source "$ROOT/scripts/lib.sh"

REPS=7
OUT=
PORT=
COMMAND="bench/export_bench.sh${*:+ $*}"  # for the report: the exact command
while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2; shift ;;
	--out) OUT=$2; shift ;;
	--port) PORT=$2; shift ;;
	-h | --help) sed -n '2,32p' "$0"; exit 0 ;;
	*) echo "unknown option: $1" >&2; exit 2 ;;
	esac
	shift
done
STAMP=$(date -u +%Y%m%d-%H%M%S)
: "${OUT:=$BENCH_DIR/results/export-$STAMP.md}"
mkdir -p "$(dirname "$OUT")"
T_START=$(date +%s)
phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }

install_packages libpq-dev time
phase "building and installing bson_out and pg_bsonexport"
(cd "$ROOT" && build_install)
BIN=$PG_BINDIR/pg_bsonexport
[ -x "$BIN" ] || { echo "no $BIN after make install" >&2; exit 1; }

# the same server settings as bench/run.sh
CLUSTER_OPTS="-c shared_buffers=2GB -c max_parallel_workers_per_gather=0 -c jit=off \
-c autovacuum=off -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
-c max_wal_size=8GB -c checkpoint_timeout=1h -c work_mem=64MB"
export CLUSTER_OPTS
unset PGHOST PGPORT PGDATABASE PGUSER
[ -z "$PORT" ] || export PGPORT=$PORT
cluster_start
export PGDATABASE=bench
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
WORK=$CLUSTER_DIR/work
mkdir -p "$WORK"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

phase "generating medium and small (bench/gen_data.py, scale 1)"
createdb bench
"${PSQL[@]}" -c "CREATE EXTENSION bson_out"
# a server built from source without contrib (servers.sh) has no pg_prewarm:
# a sequential scan then reads each table into shared_buffers (all of it,
# as each is smaller than a quarter of them)
if "${PSQL[@]}" -c "CREATE EXTENSION pg_prewarm" 2>/dev/null; then
	PREWARM="SELECT pg_prewarm('medium'), pg_prewarm('small_100k'), pg_prewarm('small_2m')"
	PREWARMED="tables prewarmed"
else
	PREWARM="SELECT (SELECT count(*) FROM medium), (SELECT count(*) FROM small_100k), (SELECT count(*) FROM small_2m)"
	PREWARMED="tables read once by a sequential scan (no pg_prewarm)"
fi
"$PYTHON" "$BENCH_DIR/gen_data.py" --dbname bench --scale 1 --tables medium,small
"${PSQL[@]}" -c "CREATE TABLE small_100k AS SELECT id, doc FROM small WHERE id <= 100000" \
	-c "CREATE TABLE small_2m AS SELECT k * 200000 + id AS id, doc FROM generate_series(0, 9) k, small" \
	-c "VACUUM (FREEZE, ANALYZE)" \
	-c "$PREWARM" >/dev/null
read -r ROWS BYTES < <("${PSQL[@]}" -At -F' ' -c "SELECT count(*), sum(octet_length(to_bson(doc))) FROM medium")
RSS_ROWS_2M=$("${PSQL[@]}" -At -c "SELECT count(*) FROM small_2m")

F=$WORK/medium.bson
JOB2_SQL=$("$BIN" --table medium --column doc --jobs 2 -o - --quiet --verbose 2>&1 >/dev/null |
	sed -n 's/^pg_bsonexport: job 2: COPY (\(.*\)) TO STDOUT (FORMAT binary)$/\1/p' | head -1)
PLAN=$("${PSQL[@]}" -c "EXPLAIN $JOB2_SQL" | sed 's/  (cost.*//')

VARIANTS=(a b c d e f g)
declare -A LABEL=(
	[a]='(a) psql COPY (SELECT to_bson(doc) FROM medium) TO STDOUT (FORMAT binary) > /dev/null'
	[b]='(b) pg_bsonexport --table medium --column doc -o FILE --force --quiet'
	[c]='(c) pg_bsonexport ... --jobs 2 (one file)'
	[d]='(d) pg_bsonexport ... --no-sync (no fsync; reference)'
	[e]='(e) pg_bsonexport ... -o - > /dev/null (no file; reference)'
	[f]='(f) pg_bsonexport ... --jobs 2 --split (2 files)'
	[g]='(g) pg_bsonexport ... --no-validate (framing checked only)'
)
run_variant() {
	case $1 in
	a) psql -X -c "COPY (SELECT to_bson(doc) FROM medium) TO STDOUT (FORMAT binary)" >/dev/null ;;
	b) "$BIN" --table medium --column doc -o "$F" --force --quiet ;;
	c) "$BIN" --table medium --column doc -o "$F" --force --quiet --jobs 2 ;;
	d) "$BIN" --table medium --column doc -o "$F" --force --quiet --no-sync ;;
	e) "$BIN" --table medium --column doc -o - --quiet >/dev/null ;;
	f) "$BIN" --table medium --column doc -o "$F" --force --quiet --jobs 2 --split ;;
	g) "$BIN" --table medium --column doc -o "$F" --force --quiet --no-validate ;;
	esac
}

phase "warm-up, and a check that every variant writes the same bytes"
run_variant a
"$BIN" --table medium --column doc -o - --quiet >"$WORK/ref.bson"
for v in b c d g; do
	run_variant $v
	cmp -s "$F" "$WORK/ref.bson" || { echo "variant $v wrote other bytes than -o -" >&2; exit 1; }
	[ "$(stat -c %s "$F")" = "$BYTES" ] || { echo "variant $v: $(stat -c %s "$F") bytes, expected $BYTES" >&2; exit 1; }
	rm -f "$F"
done
run_variant f
cat "$WORK/medium.0001.bson" "$WORK/medium.0002.bson" | cmp -s - "$WORK/ref.bson" ||
	{ echo "variant f: the split files concatenated differ from -o -" >&2; exit 1; }
rm -f "$WORK/ref.bson"

phase "timing: $REPS interleaved rounds of ${#VARIANTS[@]} variants"
declare -A TIMES CPU
# the client's CPU time: bash's time keyword reports the user and system
# time of the command's processes
TIMEFORMAT='%3U %3S'
for ((r = 0; r < REPS; r++)); do
	for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
		v=${VARIANTS[$(((r + k) % ${#VARIANTS[@]}))]}
		rm -f "$F" "$WORK"/medium.000[12].bson
		sync -f "$WORK" 2>/dev/null || true
		t0=$EPOCHREALTIME
		if ! { time run_variant "$v" 2>"$WORK/variant.err"; } 2>"$WORK/cpu"; then
			echo "variant $v failed: $(cat "$WORK/variant.err")" >&2
			exit 1
		fi
		t1=$EPOCHREALTIME
		TIMES[$v]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}') "
		CPU[$v]+="$(awk '{printf "%.3f", $1 + $2}' "$WORK/cpu") "
	done
	log "   round $((r + 1))/$REPS: $(for v in "${VARIANTS[@]}"; do printf '%s %s ' "$v" "$(awk '{print $NF}' <<<"${TIMES[$v]}")"; done)"
done
rm -f "$F"
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
declare -A MED MEDCPU
for v in "${VARIANTS[@]}"; do
	MED[$v]=$(median "${TIMES[$v]}")
	MEDCPU[$v]=$(median "${CPU[$v]}")
done

phase "peak RSS: 100,000 and $RSS_ROWS_2M rows of small documents"
rss() {
	/usr/bin/time -v "$BIN" --table "$1" --column doc -o "$WORK/rss.bson" --force --quiet "${@:2}" 2>&1 |
		sed -n 's/^\s*Maximum resident set size (kbytes): //p'
}
RSS_100K=$(rss small_100k)
RSS_BYTES_100K=$(stat -c %s "$WORK/rss.bson")
RSS_2M=$(rss small_2m)
RSS_BYTES_2M=$(stat -c %s "$WORK/rss.bson")
RSS_100K_J2=$(rss small_100k --jobs 2)
RSS_2M_J2=$(rss small_2m --jobs 2)
rm -f "$WORK/rss.bson"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
cluster_stop

mbs() { awk -v b="$BYTES" -v t="$1" 'BEGIN {printf "%.1f", b / t / 1e6}'; }
GIT="$(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && [ -n "$(git status --porcelain -- client 2>/dev/null)" ] && echo ' (uncommitted exporter changes)')"
PROVENANCE="_Commit $GIT; command \`$COMMAND\`._"
{
	echo "### pg_bsonexport benchmark"
	echo
	echo "\`$COMMAND\`, $(date -u '+%Y-%m-%d %H:%M UTC'), took $(( $(date +%s) - T_START )) s; $(lscpu | sed -n 's/^Model name: *//p' | head -1),"
	echo "$(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); $(postgres --version) ($(pg_build_description "$PG_MAJOR"));"
	echo "git $GIT;"
	echo "load average $load_start at the start, $load_end at the end. Server settings as bench/run.sh"
	echo "(shared_buffers=2GB, $PREWARMED, max_parallel_workers_per_gather=0, jit=off, fsync=off"
	echo "for the server's own files). The output file is on the same file system as the cluster, ext4 here."
	echo
	echo "#### Export of medium: $ROWS documents, $BYTES bytes of BSON"
	echo
	echo "$PROVENANCE"
	echo
	echo "Median of $REPS interleaved repetitions; MB/s = BSON bytes / wall time; client CPU ="
	echo "user + system time of the client process (psql for (a), else pg_bsonexport)."
	echo
	echo "| variant | median s | MB/s | vs (a) | client CPU s |"
	echo "|---|---:|---:|---:|---:|"
	for v in "${VARIANTS[@]}"; do
		printf '| %s | %.3f | %s | %.2f× | %.3f |\n' "${LABEL[$v]}" "${MED[$v]}" "$(mbs "${MED[$v]}")" \
			"$(awk -v a="${MED[a]}" -v t="${MED[$v]}" 'BEGIN {print a / t}')" "${MEDCPU[$v]}"
	done
	echo
	echo "- throughput ratio (b)/(a): **$(awk -v a="${MED[a]}" -v b="${MED[b]}" 'BEGIN {printf "%.2f", a / b}')** (target ≥ 0.9)"
	echo "- --jobs 2 speed-up, one file (b)/(c): **$(awk -v b="${MED[b]}" -v c="${MED[c]}" 'BEGIN {printf "%.2f", b / c}')×**; with --split (b)/(f): **$(awk -v b="${MED[b]}" -v f="${MED[f]}" 'BEGIN {printf "%.2f", b / f}')×**"
	echo "- full validation, (b) against (g) with --no-validate: wall time **$(awk -v b="${MED[b]}" -v g="${MED[g]}" 'BEGIN {printf "%.3f", b / g}')×**, client CPU **$(awk -v b="${MEDCPU[b]}" -v g="${MEDCPU[g]}" 'BEGIN {printf "%.3f", (g > 0 ? b / g : 0)}')×** ($(awk -v b="${MEDCPU[b]}" -v g="${MEDCPU[g]}" 'BEGIN {printf "%+.3f", b - g}') s of CPU for $ROWS documents)"
	echo "- all times (s): $(for v in "${VARIANTS[@]}"; do printf '%s: %s; ' "$v" "${TIMES[$v]% }"; done)"
	echo "- all client CPU times (s): $(for v in "${VARIANTS[@]}"; do printf '%s: %s; ' "$v" "${CPU[$v]% }"; done)"
	echo
	echo "A job's query (--jobs 2: job 2's first chunk) and its plan:"
	echo
	echo '```'
	echo "$JOB2_SQL"
	echo "$PLAN"
	echo '```'
	echo
	echo "#### Peak memory (constant in the table size)"
	echo
	echo "$PROVENANCE"
	echo
	echo "\`/usr/bin/time -v pg_bsonexport --table T --column doc -o FILE\`, maximum resident set size:"
	echo
	echo "| rows | BSON bytes | peak RSS | with --jobs 2 |"
	echo "|---:|---:|---:|---:|"
	echo "| 100000 | $RSS_BYTES_100K | $RSS_100K kB | $RSS_100K_J2 kB |"
	echo "| $RSS_ROWS_2M | $RSS_BYTES_2M | $RSS_2M kB | $RSS_2M_J2 kB |"
} >"$OUT"
phase "done: $OUT"
cat "$OUT"
