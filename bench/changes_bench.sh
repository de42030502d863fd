#!/bin/bash
# Change streams benchmark: decoding throughput of the bson_out output plugin
# against wal2json (format-version 2) and test_decoding on the same WAL, and
# the instructions each plugin spends inside its own callbacks per change.
#
#   bench/changes_bench.sh [--pg NN] [--changes N] [--batch B] [--reps R]
#                          [--callgrind-changes N] [--no-callgrind]
#                          [--no-wal2json] [--out FILE.md]
#
#   --pg NN               PostgreSQL major version (default 15: wal2json is
#                         packaged for it, postgresql-15-wal2json, installed
#                         when missing; on other versions wal2json is used only
#                         if its library is already installed)
#   --changes N           row changes decoded (default 1,000,000): N/3 inserts
#                         into a copy of the benchmark's typed table
#                         (bench/gen_data.py's typed rows, repeated with new
#                         ids), then N/3 updates of every row (n and score),
#                         then N/3 deletes, B rows per transaction
#   --batch B             rows per transaction (default 10,000)
#   --reps R              timed decodings per plugin (default 5), interleaved:
#                         every round decodes with each plugin, the first
#                         plugin changing from round to round
#   --callgrind-changes N changes of the callgrind run (default 30,000: the
#                         same workload, smaller, on slots of its own), read
#                         in single-user mode under valgrind --tool=callgrind;
#                         reported: instructions per change inclusive of the
#                         plugin's begin, change, truncate and commit
#                         callbacks, and of the whole decoding query
#   --no-callgrind, --no-wal2json   leave a part out
#
# Each plugin decodes the whole slot with SELECT count(*), sum(octet_length(
# data)) FROM pg_logical_slot_peek_binary_changes(...) (bson_out) or
# pg_logical_slot_peek_changes(...) (test_decoding, wal2json with
# 'format-version', '2'), all options otherwise default; peek leaves the
# slots where they are, so every round decodes the same WAL.  The time is
# psql's, whole statement.
#
# Writes bench/results/changes-<UTC time>.md (or --out) and prints it.
# Everything runs on a throwaway cluster (scripts/lib.sh), with the settings
# of bench/run.sh plus wal_level = logical and the plugins allowed in
# output_plugin_libraries where the server has that setting.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")

PG_MAJOR=${PG_MAJOR:-15}
CHANGES=1000000
BATCH=10000
REPS=5
CG_CHANGES=30000
CALLGRIND=1
WAL2JSON=1
OUT=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--pg) PG_MAJOR=$2; shift ;;
	--changes) CHANGES=$2; shift ;;
	--batch) BATCH=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--callgrind-changes) CG_CHANGES=$2; shift ;;
	--no-callgrind) CALLGRIND=0 ;;
	--no-wal2json) WAL2JSON=0 ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,40p' "$0"; exit 0 ;;
	*) echo "unknown option: $1" >&2; exit 2 ;;
	esac
	shift
done
export PG_MAJOR
# shellcheck source=../scripts/lib.sh
source "$ROOT/scripts/lib.sh"

STAMP=$(date -u +%Y%m%d-%H%M%S)
: "${OUT:=$BENCH_DIR/results/changes-$STAMP.md}"
mkdir -p "$(dirname "$OUT")"
T_START=$(date +%s)
phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }

pkgs=(libpq-dev)
[ "$CALLGRIND" = 1 ] && pkgs+=(valgrind)
install_packages "${pkgs[@]}"
if [ "$WAL2JSON" = 1 ] && [ "$(pg_kind "$PG_MAJOR")" = debian ] &&
	apt-cache show "postgresql-$PG_MAJOR-wal2json" >/dev/null 2>&1; then
	install_debian_packages "postgresql-$PG_MAJOR-wal2json"
fi
PKGLIB=$("$PG_BINDIR/pg_config" --pkglibdir)
if [ "$WAL2JSON" = 1 ] && [ ! -f "$PKGLIB/wal2json.so" ]; then
	log "no wal2json for PostgreSQL $PG_MAJOR ($PKGLIB/wal2json.so): it is left out"
	WAL2JSON=0
fi
[ -f "$PKGLIB/test_decoding.so" ] || { echo "no test_decoding in $PKGLIB" >&2; exit 1; }

phase "building and installing bson_out"
(cd "$ROOT" && build_install)

PLUGINS=(bson_out test_decoding)
[ "$WAL2JSON" = 1 ] && PLUGINS+=(wal2json)
ALLOWED=pgoutput,test_decoding,bson_out,wal2json
CLUSTER_OPTS="-c shared_buffers=1GB -c max_parallel_workers_per_gather=0 -c jit=off \
-c autovacuum=off -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
-c max_wal_size=8GB -c checkpoint_timeout=1h -c work_mem=64MB \
-c wal_level=logical -c max_replication_slots=10"
HAS_ALLOWLIST=0
if "$PG_BINDIR/postgres" --describe-config 2>/dev/null | grep '^output_plugin_libraries' >/dev/null; then
	CLUSTER_OPTS+=" -c output_plugin_libraries=$ALLOWED"
	HAS_ALLOWLIST=1
fi
export CLUSTER_OPTS
# PGPORT, if set, is the throwaway cluster's port
unset PGHOST PGDATABASE PGUSER
cluster_start
export PGDATABASE=bench
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# shellcheck source=changes_workload.sh
source "$BENCH_DIR/changes_workload.sh"
typed_database

create_slots() {
	local prefix=$1 p
	for p in "${PLUGINS[@]}"; do
		"${PSQL[@]}" -c "SELECT pg_create_logical_replication_slot('${prefix}_$p', '$p')" >/dev/null
	done
}
# the decoding query of plugin p on slot s
decode_query() {
	case $1 in
	bson_out) echo "SELECT count(*), sum(octet_length(data)) FROM pg_logical_slot_peek_binary_changes('$2', NULL, NULL)" ;;
	test_decoding) echo "SELECT count(*), sum(octet_length(data)) FROM pg_logical_slot_peek_changes('$2', NULL, NULL)" ;;
	wal2json) echo "SELECT count(*), sum(octet_length(data)) FROM pg_logical_slot_peek_changes('$2', NULL, NULL, 'format-version', '2')" ;;
	esac
}

ROWS=$(( (CHANGES + 2) / 3 ))
N=$(( 3 * ROWS ))
phase "workload: $ROWS inserts, $ROWS updates, $ROWS deletes ($N changes, $BATCH rows a transaction)"
make_workload typed_changes "$ROWS"
create_slots bench
run_workload typed_changes "$ROWS"
"${PSQL[@]}" -c "CHECKPOINT"
wal_bytes=$("${PSQL[@]}" -At -c "SELECT pg_current_wal_lsn() - confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'bench_bson_out'")

declare -A TIMES MSGS BYTES
for ((r = 0; r < REPS; r++)); do
	n=${#PLUGINS[@]}
	for ((i = 0; i < n; i++)); do
		p=${PLUGINS[$(( (r + i) % n ))]}
		t0=$(date +%s.%N)
		read -r msgs bytes < <("${PSQL[@]}" -At -F ' ' -c "$(decode_query "$p" "bench_$p")")
		t1=$(date +%s.%N)
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
		TIMES[$p]="${TIMES[$p]:-} $secs"
		MSGS[$p]=$msgs
		BYTES[$p]=$bytes
		phase "round $((r + 1)) $p: $secs s, $msgs messages, $bytes bytes"
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# ---------------------------------------------------------------- callgrind
declare -A CG_CB CG_ALL
if [ "$CALLGRIND" = 1 ]; then
	CG_ROWS=$(( (CG_CHANGES + 2) / 3 ))
	CG_N=$(( 3 * CG_ROWS ))
	phase "callgrind: $CG_N changes on slots of their own, single-user mode"
	make_workload typed_cg "$CG_ROWS"
	create_slots cg
	run_workload typed_cg "$CG_ROWS"
	"${PSQL[@]}" -c "CHECKPOINT"
	"${CLUSTER_RUNAS[@]}" "$PG_BINDIR/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null
	CG=$CLUSTER_DIR/cg
	mkdir -p "$CG"
	chown postgres: "$CG" 2>/dev/null || true
	single_opts=(-c shared_buffers=512MB -c jit=off -c wal_level=logical -c max_replication_slots=10)
	[ "$HAS_ALLOWLIST" = 1 ] && single_opts+=(-c "output_plugin_libraries=$ALLOWED")
	for p in "${PLUGINS[@]}"; do
		case $p in
		bson_out) cbre=':bson_(begin|change|truncate|commit)_cb( |$)' ;;
		*) cbre=':pg_decode_(begin_txn|change|truncate|commit_txn)( |$)' ;;
		esac
		decode_query "$p" "cg_$p" >"$CG/$p.sql"
		"${CLUSTER_RUNAS[@]}" valgrind --tool=callgrind --callgrind-out-file="$CG/$p.out" \
			"$PG_BINDIR/postgres" --single -D "$CLUSTER_DIR/data" "${single_opts[@]}" bench \
			<"$CG/$p.sql" >"$CG/$p.log" 2>&1 || true
		if grep -q ERROR "$CG/$p.log" || ! grep -q '^totals:' "$CG/$p.out" 2>/dev/null; then
			log "warning: callgrind of $p failed: $(grep -m1 ERROR "$CG/$p.log" || true)"
			continue
		fi
		callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$CG/$p.out" >"$CG/$p.txt" 2>/dev/null
		# the query itself, without the single-user backend's start and end
		all=$(awk '!/^ *[0-9,]+ \( *[0-9.]+%\) / || !/\]$/ { next }
			/:(pg_logical_slot_get_changes_guts|pg_logical_slot_peek_changes|pg_logical_slot_peek_binary_changes)( |$)/ { n = $1; gsub(",", "", n); print n; exit }' "$CG/$p.txt")
		# a function's own line ends with its object ([.../bson_out.so]); lines
		# without one are the same code again, as inlined from a header
		cb=$(awk -v re="$cbre" '
			!/^ *[0-9,]+ \( *[0-9.]+%\) / || !/\]$/ { next }
			$0 ~ re { n = $1; gsub(",", "", n); s += n }
			END { print s + 0 }' "$CG/$p.txt")
		# the most expensive functions, for whoever wants to know why
		awk '/^ *[0-9,]+ \( *[0-9.]+%\) / && n++ < 60' "$CG/$p.txt" >"${OUT%.md}-callgrind-$p.txt"
		CG_CB[$p]=$(awk -v a="$cb" -v n="$CG_N" 'BEGIN {printf "%.0f", a / n}')
		CG_ALL[$p]=$(awk -v a="$all" -v n="$CG_N" 'BEGIN {printf "%.0f", a / n}')
		phase "callgrind $p: ${CG_CB[$p]} instructions per change in its callbacks, ${CG_ALL[$p]} in the whole query"
	done
	# A plugin built without symbols (Debian's test_decoding and wal2json) has
	# no callbacks to find by name: its share is then the whole query less
	# what PostgreSQL's decoding costs apart from the plugin (WAL reading, the
	# reorder buffer), which bson_out's run measures.
	declare -A CG_DERIVED
	if [ -n "${CG_CB[bson_out]:-}" ] && [ "${CG_CB[bson_out]}" -gt 0 ] && [ "${CG_ALL[bson_out]:-0}" -gt 0 ]; then
		common=$(( CG_ALL[bson_out] - CG_CB[bson_out] ))
		for p in "${PLUGINS[@]}"; do
			if [ "${CG_CB[$p]:-0}" = 0 ] && [ "${CG_ALL[$p]:-0}" -gt 0 ]; then
				CG_CB[$p]=$(( CG_ALL[$p] - common ))
				CG_DERIVED[$p]=1
				phase "callgrind $p: no symbols; ${CG_CB[$p]} instructions per change derived (whole query less $common)"
			fi
		done
	fi
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
cluster_stop

# ---------------------------------------------------------------- report
build=$("$PG_BINDIR/pg_config" --configure)
kind="release build"
case $build in *enable-cassert*) kind="ASSERTION build (--enable-cassert): timings are not representative; bson_out also validates every document it writes in such builds" ;; esac
{
	echo "# Change streams: decoding throughput ($STAMP UTC)"
	echo
	echo "Command: \`bench/changes_bench.sh ${ARGS[*]}\`"
	echo
	echo "Server: PostgreSQL $("$PG_BINDIR/postgres" --version | sed 's/^postgres (PostgreSQL) //'), $kind."
	echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo);" \
		"load average before $load_start, after $load_end."
	echo
	echo "Workload: $N changes of a copy of the benchmark's typed table ($ROWS inserts, then updates, then deletes;" \
		"$BATCH rows a transaction), $((wal_bytes / 1048576)) MB of WAL. Each plugin decodes it whole with" \
		"\`pg_logical_slot_peek_*changes\`, $REPS times, interleaved; medians."
	echo
	echo "| plugin | median s | changes/s | messages | output bytes | all runs (s) |"
	echo "|---|---:|---:|---:|---:|---|"
	for p in "${PLUGINS[@]}"; do
		m=$(echo "${TIMES[$p]}" | median)
		echo "| $p$([ "$p" = wal2json ] && echo " (format-version 2)") | $m | $(awk -v n="$N" -v s="$m" 'BEGIN {printf "%.0f", n / s}') | ${MSGS[$p]} | ${BYTES[$p]} |${TIMES[$p]} |"
	done
	[ "$WAL2JSON" = 1 ] || { echo; echo "wal2json was not measured: it is not installed for PostgreSQL $PG_MAJOR (Debian packages it for 15: \`bench/changes_bench.sh --pg 15\`)."; }
	if [ "$CALLGRIND" = 1 ]; then
		echo
		echo "Instructions per change (callgrind, $CG_N changes, single-user mode): inside the plugin's begin, change," \
			"truncate and commit callbacks (inclusive: the plugin's own work, including writing its output), and for" \
			"the whole decoding query (pg_logical_slot_get_changes_guts, or the SQL function where the server has no" \
			"symbols for it, inclusive: WAL reading, reorder buffer, the plugin, the result's tuplestore; not the" \
			"backend's start). A plugin built without symbols (marked *) has no callbacks to find by name: its figure" \
			"is its whole query less bson_out's whole query less bson_out's callbacks (PostgreSQL's own decoding" \
			"work, the same for every plugin). The 60 most expensive functions of each, inclusive:" \
			"\`$(basename "${OUT%.md}")-callgrind-<plugin>.txt\`."
		echo
		echo "| plugin | in its callbacks | whole query |"
		echo "|---|---:|---:|"
		for p in "${PLUGINS[@]}"; do
			echo "| $p | ${CG_CB[$p]:-failed}${CG_DERIVED[$p]:+ *} | ${CG_ALL[$p]:-failed} |"
		done
	fi
} >"$OUT"
cat "$OUT"
