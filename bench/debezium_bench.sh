#!/bin/bash
# bson_out against Debezium's PostgreSQL connector (3.6.1, embedded engine,
# pgoutput, JSON converter with schemas off, file offset store), on one
# throwaway cluster, on the same WAL, interleaved, medians:
#
#   1. capture: the changes of bench/changes_workload.sh's mix, from slots
#      made before the workload, to the same end: Debezium counting and
#      dropping its events (snapshot.mode=no_data) against pg_bsonstream
#      writing durable segments (-E ENDPOS, as bench/stream_bench.sh).
#   2. into the same FerretDB (scripts/ferretdb.sh, SQLite, 127.0.0.1:
#      28100-28199): Debezium with a writer that applies each batch with the
#      MongoDB Java driver as MongoDB's sink connector does (replace with
#      upsert on the key, delete one, ordered bulk writes of 64) against
#      pg_bsonstream --to (--batch-size 64), on bench/apply_bench.sh's table
#      (text keys: FerretDB's _id index serves only those); both end states
#      checked against the table (documents and every value).
#   3. first copy of a table of the typed rows: Debezium's initial snapshot
#      (snapshot.mode=initial, events counted and dropped) against
#      pg_bsonstream --create-slot --initial-copy and pg_bsonexport
#      --out-dir (both durable files).
#   4. load: the same table's first copy into the server of part 2:
#      pg_bsonstream --create-slot --initial-copy --to (the copy and its
#      load, end to end) against mongorestore 100.8.0 (scripts/mongotools.sh)
#      of a pg_bsonexport --out-dir dump of the table (the export and the
#      load timed apart), each into a database of its own, counted after.
#
#   bench/debezium_bench.sh [--pg NN] [--changes N] [--apply-changes N]
#                           [--snapshot-rows N] [--reps R] [--batch B]
#                           [--parts LIST] [--server ferretdb|mjs]
#                           [--no-install] [--smoke] [--out FILE.md]
#
#   --changes N        part 1's changes (default 1,000,000): N/3 inserts, N/3
#                      updates, N/3 deletes, B rows a transaction (default 10,000)
#   --apply-changes N  part 2's row changes (default 6,000, apply_bench.sh's
#                      mix: N/3 inserts, N/3 updates, half the rows deleted,
#                      1,000 rows a transaction): FerretDB (SQLite) is the
#                      limit, whoever writes, and slows with the collection's
#                      size (replacing documents of a 10,000-document
#                      collection: about 13 a second)
#   --snapshot-rows N  part 3's table (default 1,000,000 rows)
#   --reps R           runs of each program (default 3), interleaved, the
#                      first program changing from round to round
#   --parts LIST       which parts, comma-separated (default capture,apply,snapshot;
#                      load on request)
#   --server S         part 2's server: ferretdb (the default) or mjs,
#                      mongo-java-server 1.47.0 with its in-memory backend
#                      (bench/debezium's "mongo-server" mode, Maven Central),
#                      a server written by others that is not the limit:
#                      both sides then write 1,000 writes a bulk (Debezium's
#                      writer) and at the default --batch-size (1000)
#   --no-install       use the installed extension and programs (the test
#                      suite installs them first); otherwise build_install
#   --perf DIR         part 2: pg_bsonstream runs under `perf record -g`
#                      (DIR/pg_bsonstream-apply-<run>.data; report with
#                      perf report -i FILE --no-children --sort sym, per
#                      thread with --sort tid,sym): where its time goes, not
#                      a timing (perf's own cost is in the run's figures)
#   --smoke            a few thousand changes, one run each, every check;
#                      prints "debezium: N passed, M failed" and exits 1 on
#                      any failure; its times mean nothing (the report is
#                      printed, not kept, unless --out; scripts/test.sh runs it)
#
# Each run is timed whole (GNU time: start to exit, the JVM's start
# included), with the client's user + system CPU and peak RSS; the server's
# CPU of a run is what the backends that ended during it used (the
# postmaster's cutime + cstime: the walsender, and the client's other
# connections), read once they have all ended.  Both clients connect over
# TCP to 127.0.0.1.  The clients run from copies made at the start.
# Writes bench/results/debezium-<UTC time>.md (or --out) and prints it, and
# the capture's chart beside it (.png, bench/report.py --capture-chart).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")

PG_MAJOR=${PG_MAJOR:-15}
CHANGES=1000000
APPLY_CHANGES=6000
SNAP_ROWS=1000000
REPS=3
BATCH=10000
APPLY_BATCH_ROWS=1000
PARTS=capture,apply,snapshot
SERVER=ferretdb
INSTALL=1
SMOKE=0
OUT=
PERF_DIR=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--pg) PG_MAJOR=$2; shift ;;
	--changes) CHANGES=$2; shift ;;
	--apply-changes) APPLY_CHANGES=$2; shift ;;
	--snapshot-rows) SNAP_ROWS=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--batch) BATCH=$2; shift ;;
	--parts) PARTS=$2; shift ;;
	--server) SERVER=$2; shift ;;
	--no-install) INSTALL=0 ;;
	--smoke) SMOKE=1 ;;
	--perf) PERF_DIR=$(mkdir -p "$2" && cd "$2" && pwd); shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,53p' "$0"; exit 0 ;;
	*) echo "unknown option: $1" >&2; exit 2 ;;
	esac
	shift
done
if [ "$SMOKE" = 1 ]; then
	CHANGES=3000 APPLY_CHANGES=3000 SNAP_ROWS=3000 REPS=1 BATCH=500 APPLY_BATCH_ROWS=250
fi
part() { [[ ",$PARTS," == *",$1,"* ]]; }
export PG_MAJOR
# shellcheck source=../scripts/lib.sh
source "$ROOT/scripts/lib.sh"
# shellcheck source=../scripts/ferretdb.sh
source "$ROOT/scripts/ferretdb.sh"
# shellcheck source=../scripts/mongotools.sh
source "$ROOT/scripts/mongotools.sh"
# shellcheck source=changes_workload.sh
source "$BENCH_DIR/changes_workload.sh"

STAMP=$(date -u +%Y%m%d-%H%M%S)
# a smoke run's report is printed only
KEEP_OUT=1
[ "$SMOKE" = 1 ] && [ -z "$OUT" ] && { OUT=$(mktemp); KEEP_OUT=0; }
: "${OUT:=$BENCH_DIR/results/debezium-$STAMP.md}"
mkdir -p "$(dirname "$OUT")"
T_START=$(date +%s)
phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }
passed=0 failed=0

install_packages libpq-dev time maven default-jdk-headless $([ "$SMOKE" = 1 ] || echo gnuplot-nox)
if [ "$SMOKE" = 0 ] && [ "$(pg_kind "$PG_MAJOR")" = debian ] &&
	apt-cache show "postgresql-$PG_MAJOR-wal2json" >/dev/null 2>&1; then
	install_debian_packages "postgresql-$PG_MAJOR-wal2json"
fi
if [ "$INSTALL" = 1 ]; then
	phase "building and installing bson_out and its programs"
	(cd "$ROOT" && build_install)
fi
phase "building the Debezium side (cached under ${BSON_OUT_CACHE:-/var/cache/bson_out})"
JAR=$("$BENCH_DIR/debezium/build.sh")
FERRETDB=$(ferretdb_build)
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(cd "$ROOT" && git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (with uncommitted changes)" || true)

WORK=$(mktemp -d /var/tmp/bson_out_debezium_bench.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/bin"
# copies: another make install during the run changes nothing here
cp "$PG_BINDIR/pg_bsonstream" "$PG_BINDIR/pg_bsonexport" "$WORK/bin/"
STREAM=$WORK/bin/pg_bsonstream
EXPORT=$WORK/bin/pg_bsonexport
"$STREAM" --help | grep -- '--to=URI' >/dev/null || { echo "$PG_BINDIR/pg_bsonstream was built without --to (libmongoc)" >&2; exit 1; }
JAVA=(java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.err ${JAVA_OPTS:-} -jar "$JAR")

CLUSTER_OPTS="-c shared_buffers=1GB -c max_parallel_workers_per_gather=0 -c jit=off \
-c autovacuum=off -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
-c max_wal_size=8GB -c checkpoint_timeout=1h -c work_mem=64MB -c max_wal_senders=20"
logical_decoding_opts
# a slot a run and part (the last -c wins), and TCP for the JDBC driver
CLUSTER_OPTS+=" -c max_replication_slots=$((4 * REPS + 6)) -c listen_addresses=127.0.0.1"
[[ $CLUSTER_OPTS != *output_plugin_libraries* ]] || CLUSTER_OPTS+=" -c output_plugin_libraries=pgoutput,test_decoding,bson_out,wal2json"
export CLUSTER_OPTS
unset PGHOST PGDATABASE PGUSER
cluster_start
FDIR=$WORK/ferretdb
FPORT=$((28100 + RANDOM % 100))
MPID=
case $SERVER in
ferretdb)
	ferretdb_start "$FDIR" "$FPORT" >/dev/null
	SERVER_NAME=FerretDB
	BULK=64 ;;
mjs)
	SERVER_NAME=mongo-java-server
	BULK=1000
	"${JAVA[@]}" mongo-server --port "$FPORT" >"$WORK/mjs.log" 2>&1 &
	MPID=$!
	for ((i = 0; i < 300; i++)); do
		grep -q "listening on" "$WORK/mjs.log" && break
		sleep 0.1
	done
	grep -q "listening on" "$WORK/mjs.log" || { cat "$WORK/mjs.log" >&2; exit 1; } ;;
*) echo "unknown --server $SERVER (ferretdb or mjs)" >&2; exit 2 ;;
esac
trap '[ -n "$MPID" ] && kill "$MPID" 2>/dev/null; [ "$SERVER" = ferretdb ] && ferretdb_stop "$FDIR"; cluster_stop; rm -rf "$WORK"' EXIT
export PGDATABASE=bench
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
PGPID=$(head -1 "$CLUSTER_DIR/data/postmaster.pid")
HZ=$(getconf CLK_TCK)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

phase "the typed table (bench/gen_data.py)"
createdb bench
"${PSQL[@]}" -c "CREATE EXTENSION bson_out"
"$PYTHON" "$BENCH_DIR/gen_data.py" --dbname bench --tables typed $([ "$SMOKE" = 1 ] && echo --scale 0.01) >/dev/null

# ------------------------------------------------------------ measuring
# the CPU seconds (ticks) of the backends the postmaster has reaped
reaped_ticks() { awk '{print $16 + $17}' "/proc/$PGPID/stat"; }
# until no backend of a client (a walsender, a client backend) is left but
# the asking one: the run's backends have ended and their CPU is counted
backends_gone() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$("${PSQL[@]}" -d postgres -At -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type IN ('walsender', 'client backend') AND pid <> pg_backend_pid()")" = 0 ] && { sleep 0.2; return 0; }
		sleep 0.1
	done
	log "backends still running after 30 s"
	return 1
}
TIMEF=$WORK/time
# run LOG PROGRAM ARGS...: the program's output in LOG; prints "wall-s
# peak-RSS-kB user-s sys-s server-CPU-s"
run() {
	local logf=$1 t0 t1 s0 s1
	shift
	backends_gone
	s0=$(reaped_ticks)
	t0=$(date +%s.%N)
	if ! /usr/bin/time -o "$TIMEF" -f '%M %U %S' "$@" >"$logf" 2>&1; then
		echo "failed: $*" >&2
		tail -20 "$logf" >&2
		return 1
	fi
	t1=$(date +%s.%N)
	backends_gone
	s1=$(reaped_ticks)
	awk -v a="$t0" -v b="$t1" -v s="$((s1 - s0))" -v hz="$HZ" '{printf "%.3f %s %.2f %.2f %.2f\n", b - a, $1, $2, $3, s / hz}' "$TIMEF"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
# record PART PROGRAM "wall rss user sys server" [EXTRA]: one run's figures
declare -A WALL RSS CPU SRV EXTRA FCPU LAG STATE
record() {
	local key=$1/$2 wall rss user sys srv
	read -r wall rss user sys srv <<<"$3"
	WALL[$key]="${WALL[$key]:-} $wall"
	RSS[$key]="${RSS[$key]:-} $rss"
	CPU[$key]="${CPU[$key]:-} $(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')"
	SRV[$key]="${SRV[$key]:-} $srv"
	EXTRA[$key]="${EXTRA[$key]:-} ${4:-}"
	phase "$1 round $r $2: $wall s, client CPU $user + $sys s, peak RSS $rss kB, server CPU $srv s${4:+, $4}"
}
# the figures of PART PROGRAM for EVENTS: median wall, events/s, client CPU,
# µs per event, server CPU, peak RSS in MB, all walls
row() {
	local key=$1/$2 n=$3 w c s m
	w=$(echo "${WALL[$key]}" | median)
	c=$(echo "${CPU[$key]}" | median)
	s=$(echo "${SRV[$key]}" | median)
	m=$(echo "${RSS[$key]}" | median)
	awk -v n="$n" -v w="$w" -v c="$c" -v s="$s" -v m="$m" -v all="${WALL[$key]}" 'BEGIN {
		printf "%.2f | %.0f | %.2f | %.1f | %.2f | %.0f |%s", w, n / w, c, c * 1e6 / n, s, m / 1024, all }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
med() { local key=$1/$2 what=$3; eval "echo \"\${$what[\$key]}\"" | median; }
# Debezium's own time from its first event to its last (RESULT line)
dbz_result() { grep -oE "^RESULT .*" "$1" | tail -1; }
dbz_field() { sed -nE "s/.* $2=([0-9.]+).*/\\1/p" <<<"$1"; }

# ------------------------------------------------------------ 1. capture
if part capture; then
	ROWS=$(( (CHANGES + 2) / 3 ))
	N=$(( 3 * ROWS ))
	make_workload typed_changes "$ROWS"
	"${PSQL[@]}" -c "CREATE PUBLICATION dbz_cap FOR TABLE typed_changes"
	# the decoders alone, for scale: pg_recvlogical into /dev/null with
	# bson_out and (where installed) wal2json
	CAP_PROGS=(debezium pg_bsonstream recv_bson_out)
	[ -f "$("$PG_BINDIR/pg_config" --pkglibdir)/wal2json.so" ] && CAP_PROGS+=(recv_wal2json)
	for ((r = 1; r <= REPS; r++)); do
		"${PSQL[@]}" -c "SELECT 'x' FROM pg_create_logical_replication_slot('cap_debezium_$r', 'pgoutput')" \
			-c "SELECT 'x' FROM pg_create_logical_replication_slot('cap_pg_bsonstream_$r', 'bson_out')" \
			-c "SELECT 'x' FROM pg_create_logical_replication_slot('cap_recv_bson_out_$r', 'bson_out')" >/dev/null
		[[ " ${CAP_PROGS[*]} " != *" recv_wal2json "* ]] ||
			"${PSQL[@]}" -c "SELECT 'x' FROM pg_create_logical_replication_slot('cap_recv_wal2json_$r', 'wal2json')" >/dev/null
	done
	phase "capture: workload of $N changes ($ROWS inserts, updates, deletes; $BATCH rows a transaction)"
	run_workload typed_changes "$ROWS"
	CAP_END=$("${PSQL[@]}" -At -c "SELECT pg_current_wal_insert_lsn()")
	CAP_WAL=$("${PSQL[@]}" -At -c "SELECT pg_current_wal_lsn() - confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'cap_pg_bsonstream_1'")
	"${PSQL[@]}" -c "CHECKPOINT"
	np=${#CAP_PROGS[@]}
	for ((r = 1; r <= REPS; r++)); do
		for ((i = 0; i < np; i++)); do
			p=${CAP_PROGS[$(( (r + i) % np ))]}
			slot=cap_${p}_$r
			case $p in
			debezium)
				res=$(run "$WORK/dbz.log" "${JAVA[@]}" capture --port "$PGPORT" --dbname bench \
					--slot "$slot" --publication dbz_cap --table public.typed_changes \
					--events "$N" --offsets "$WORK/offsets_cap_$r" --timeout 3600)
				dr=$(dbz_result "$WORK/dbz.log")
				check "capture: Debezium run $r counted $N events" "$N" "$(dbz_field "$dr" events)"
				ff=$(dbz_field "$dr" first_s); ll=$(dbz_field "$dr" last_s)
				record capture debezium "$res" "first to last event $(awk -v a="$ff" -v b="$ll" 'BEGIN {printf "%.2f", b - a}') s" ;;
			pg_bsonstream)
				rm -rf "$WORK/segments"
				res=$(run "$WORK/bso.log" "$STREAM" -h 127.0.0.1 -p "$PGPORT" -d bench -S "$slot" \
					-o "$WORK/segments" -E "$CAP_END")
				sum=$(grep -oE '[0-9]+ events, .*, [0-9]+ segments' "$WORK/bso.log" | tail -1)
				check "capture: pg_bsonstream run $r wrote $N events" "$N" "${sum%% events*}"
				record capture pg_bsonstream "$res" "$(grep -c . <(ls "$WORK/segments/changes")) segments" ;;
			recv_*)
				opts=()
				[ "$p" = recv_wal2json ] && opts=(-o format-version=2)
				res=$(run "$WORK/recv.log" "$PG_BINDIR/pg_recvlogical" -h 127.0.0.1 -p "$PGPORT" -d bench -S "$slot" \
					--start -E "$CAP_END" -f /dev/null --no-loop "${opts[@]}")
				record capture "$p" "$res" ;;
			esac
			# Debezium confirms to the slot when it commits its offsets (every
			# 10 s) and may stop before that reaches the server: its count of
			# events above is what shows that it read the whole WAL
			[ "$p" = debezium ] ||
				check "capture: $p run $r: its slot confirmed" t \
					"$("${PSQL[@]}" -At -c "SELECT pg_wal_lsn_diff('$CAP_END', confirmed_flush_lsn) < $((CAP_WAL / 10)) FROM pg_replication_slots WHERE slot_name = '$slot'")"
			"${PSQL[@]}" -c "SELECT pg_drop_replication_slot('$slot')" >/dev/null
		done
	done
	rm -rf "$WORK/segments"
	"${PSQL[@]}" -c "DROP TABLE typed_changes, typed_changes_src"
fi

# ------------------------------------------------------------ 2. into FerretDB
if part apply; then
	AROWS=$((APPLY_CHANGES / 3))
	"${PSQL[@]}" <<-SQL
	CREATE TABLE ab (id text PRIMARY KEY, rid int, n int, name text, email text, created timestamptz,
	                 score float8, active boolean, meta jsonb);
	CREATE PUBLICATION dbz_ab FOR TABLE ab;
	SQL
	for ((r = 1; r <= REPS; r++)); do
		"${PSQL[@]}" -c "SELECT 'x' FROM pg_create_logical_replication_slot('ab_dbz_$r', 'pgoutput')" \
			-c "SELECT 'x' FROM pg_create_logical_replication_slot('ab_bso_$r', 'bson_out')" >/dev/null
	done
	phase "into $SERVER_NAME: workload of bench/apply_bench.sh ($AROWS inserts, updates, half deleted; $APPLY_BATCH_ROWS rows a transaction)"
	for ph in insert update delete; do
		for ((lo = 0; lo < AROWS; lo += APPLY_BATCH_ROWS)); do
			hi=$((lo + APPLY_BATCH_ROWS))
			case $ph in
			insert) echo "INSERT INTO ab SELECT 'k' || g, g, g, 'name ' || g, 'u' || g || '@example.com', '2026-01-01'::timestamptz + g * interval '1 s', g / 7.0, g % 2 = 0, jsonb_build_object('g', g, 'tags', jsonb_build_array('a', 'b')) FROM generate_series($lo + 1, LEAST($hi, $AROWS)) g;" ;;
			update) echo "UPDATE ab SET n = n + 1, score = score + 0.5 WHERE rid > $lo AND rid <= $hi;" ;;
			delete) [ $((lo / APPLY_BATCH_ROWS % 2)) -eq 0 ] && echo "DELETE FROM ab WHERE rid > $lo AND rid <= $hi;" || true ;;
			esac
		done | "${PSQL[@]}"
	done
	AB_END=$("${PSQL[@]}" -At -c "SELECT pg_current_wal_insert_lsn()")
	AB_LEFT=$("${PSQL[@]}" -At -c "SELECT count(*) FROM ab")
	AN=$((2 * AROWS + AROWS - AB_LEFT))
	if [ "$SERVER" = mjs ]; then FPID=$MPID; else FPID=$(cat "$FDIR/ferretdb.pid"); fi
	fticks() { awk '{print $14 + $15}' "/proc/$FPID/stat"; }
	# lag at the end: the WAL from the slot's confirmed position to the end
	lag() { "${PSQL[@]}" -At -c "SELECT GREATEST(0, '$AB_END'::pg_lsn - confirmed_flush_lsn) FROM pg_replication_slots WHERE slot_name = '$1'"; }
	for ((r = 1; r <= REPS; r++)); do
		for i in 0 1; do
			f0=$(fticks)
			if [ $(( (r + i) % 2 )) = 0 ]; then
				p=debezium
				res=$(run "$WORK/dbz.log" "${JAVA[@]}" mongo --port "$PGPORT" --dbname bench \
					--slot "ab_dbz_$r" --publication dbz_ab --table public.ab --events "$AN" \
					--offsets "$WORK/offsets_ab_$r" --mongo "mongodb://127.0.0.1:$FPORT/" \
					--mongo-db "dbz_$r" --bulk-size "$BULK" --timeout 7200)
				check "into $SERVER_NAME: Debezium run $r applied $AN events" "$AN" "$(dbz_field "$(dbz_result "$WORK/dbz.log")" events)"
				slot=ab_dbz_$r
			else
				p=pg_bsonstream
				rm -rf "$WORK/ab_stream"
				PERF=()
				[ -n "$PERF_DIR" ] && PERF=(perf record -q -g -F 999 -o "$PERF_DIR/pg_bsonstream-apply-$r.data" --)
				res=$(run "$WORK/bso.log" "${PERF[@]}" "$STREAM" -h 127.0.0.1 -p "$PGPORT" -d bench -S "ab_bso_$r" \
					-o "$WORK/ab_stream" -E "$AB_END" -q --include-tables public.ab \
					--to "mongodb://127.0.0.1:$FPORT/bso_$r" --batch-size "$BULK")
				slot=ab_bso_$r
			fi
			f1=$(fticks)
			l=$(lag "$slot")
			fcpu=$(awk -v t="$((f1 - f0))" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}')
			FCPU[$p]="${FCPU[$p]:-} $fcpu"
			LAG[$p]="${LAG[$p]:-} $l"
			record apply "$p" "$res" "$SERVER_NAME CPU $fcpu s, slot $l bytes behind the end"
			if out=$("$PYTHON" "$BENCH_DIR/debezium/end_state.py" "$FPORT" "$([ "$p" = debezium ] && echo "dbz_$r" || echo "bso_$r")" "$p" 2>&1); then
				ok "into $SERVER_NAME: $p run $r: $out"
				STATE[$p]=$out
			else
				fail "into $SERVER_NAME: $p run $r: the collection differs from the table" "$out"
				STATE[$p]="DIFFERENT: $out"
			fi
		done
	done
fi

# ------------------------------------------------------------ 3. first copy
# the table of the first copy: the typed rows again and again, with new ids
make_snap() {
	[ -n "${SNAP_MB:-}" ] && return 0
	"${PSQL[@]}" -c "CREATE TABLE snap (LIKE typed INCLUDING ALL)" \
		-c "INSERT INTO snap SELECT k * m.max + id, n, amount, name, email, created, uid, active, age, score, meta, tags
			FROM typed, (SELECT max(id), count(*) FROM typed) m, generate_series(0, ($SNAP_ROWS - 1) / m.count) k
			ORDER BY k, id LIMIT $SNAP_ROWS" \
		-c "VACUUM ANALYZE snap" -c "CREATE PUBLICATION dbz_snap FOR TABLE snap" -c "CHECKPOINT"
	SNAP_MB=$("${PSQL[@]}" -At -c "SELECT pg_table_size('snap') / 1048576")
}
if part snapshot; then
	phase "first copy: a table of $SNAP_ROWS typed rows"
	make_snap
	for ((r = 1; r <= REPS; r++)); do
		for i in 0 1 2; do
			case $(( (r + i) % 3 )) in
			0)
				p=debezium
				res=$(run "$WORK/dbz.log" "${JAVA[@]}" snapshot --port "$PGPORT" --dbname bench \
					--slot "snap_dbz_$r" --publication dbz_snap --table public.snap --events "$SNAP_ROWS" \
					--offsets "$WORK/offsets_snap_$r" --timeout 3600)
				check "first copy: Debezium run $r read $SNAP_ROWS rows" "$SNAP_ROWS" "$(dbz_field "$(dbz_result "$WORK/dbz.log")" events)"
				"${PSQL[@]}" -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'snap_dbz_$r'" >/dev/null ;;
			1)
				p=pg_bsonstream
				rm -rf "$WORK/copy"
				res=$(run "$WORK/bso.log" "$STREAM" -h 127.0.0.1 -p "$PGPORT" -d bench -S "snap_bso_$r" \
					--create-slot --initial-copy --include-tables public.snap -o "$WORK/copy" \
					-E "$("${PSQL[@]}" -At -c "SELECT pg_current_wal_insert_lsn()")")
				check "first copy: pg_bsonstream run $r copied $SNAP_ROWS documents" "1 tables, $SNAP_ROWS documents" \
					"$(grep -oE '[0-9]+ tables, [0-9]+ documents' "$WORK/bso.log" | tail -1)"
				"${PSQL[@]}" -c "SELECT pg_drop_replication_slot('snap_bso_$r')" >/dev/null ;;
			2)
				p=pg_bsonexport
				rm -rf "$WORK/dump"
				res=$(run "$WORK/exp.log" "$EXPORT" -h 127.0.0.1 -p "$PGPORT" -d bench \
					--out-dir "$WORK/dump" --include-tables public.snap)
				check "first copy: pg_bsonexport run $r exported $SNAP_ROWS documents" "$SNAP_ROWS" \
					"$("$PYTHON" -c 'import sys, bson; print(sum(1 for _ in bson.decode_file_iter(open(sys.argv[1], "rb"))))' "$WORK/dump/bench/snap.bson")" ;;
			esac
			record snapshot "$p" "$res"
		done
	done
	rm -rf "$WORK/copy" "$WORK/dump"
fi

# ------------------------------------------------------------ 4. first copy into the server
# the documents of a database of the server, counted
server_count() { "$PYTHON" -c 'import sys, pymongo; c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1])); print(c[sys.argv[2]]["snap"].count_documents({})); c.drop_database(sys.argv[2])' "$FPORT" "$1"; }
if part load; then
	phase "first copy into $SERVER_NAME: a table of $SNAP_ROWS typed rows"
	make_snap
	MONGORESTORE=$(mongotools_build)/mongorestore
	for ((r = 1; r <= REPS; r++)); do
		for i in 0 1; do
			if [ $(( (r + i) % 2 )) = 0 ]; then
				# the dump it loads, made again and timed: export + load is the
				# other side's whole path
				rm -rf "$WORK/ldump"
				res=$(run "$WORK/exp.log" "$EXPORT" -h 127.0.0.1 -p "$PGPORT" -d bench \
					--out-dir "$WORK/ldump" --include-tables public.snap)
				record load pg_bsonexport "$res"
				p=mongorestore
				res=$(run "$WORK/restore.log" "$MONGORESTORE" --host 127.0.0.1 --port "$FPORT" \
					--nsFrom 'bench.*' --nsTo "load_$r.*" "$WORK/ldump")
			else
				p=pg_bsonstream
				rm -rf "$WORK/lcopy"
				res=$(run "$WORK/bso.log" "$STREAM" -h 127.0.0.1 -p "$PGPORT" -d bench -S "load_bso_$r" \
					--create-slot --initial-copy --include-tables public.snap -o "$WORK/lcopy" -q \
					--to "mongodb://127.0.0.1:$FPORT/load_$r" \
					-E "$("${PSQL[@]}" -At -c "SELECT pg_current_wal_insert_lsn()")")
				"${PSQL[@]}" -c "SELECT pg_drop_replication_slot('load_bso_$r')" >/dev/null
			fi
			check "first copy into $SERVER_NAME: $p run $r loaded $SNAP_ROWS documents" "$SNAP_ROWS" "$(server_count "load_$r")"
			record load "$p" "$res"
		done
	done
	rm -rf "$WORK/lcopy" "$WORK/ldump"
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ------------------------------------------------------------ report
PGVER=$("$PG_BINDIR/postgres" --version | sed 's/^postgres (PostgreSQL) //')
JVER=$(java -version 2>&1 | head -1)
FVER=$("$FERRETDB" --version 2>&1 | sed -n 's/^version: //p' | head -1)
{
	echo "# bson_out against Debezium 3.6.1 ($STAMP UTC)"
	echo
	echo "Command: \`bench/debezium_bench.sh ${ARGS[*]}\` at commit $COMMIT$DIRTY."
	echo
	echo "PostgreSQL $PGVER; Debezium 3.6.1.Final (embedded async engine, PostgreSQL connector, pgoutput," \
		"JSON converter with schemas off, file offset store flushed every 10 s, default batch and queue sizes," \
		"default JVM settings); MongoDB Java driver 5.14.0; $JVER; $([ "$SERVER" = mjs ] && echo "mongo-java-server 1.47.0 (in-memory backend, same JVM)" || echo "FerretDB $FVER (SQLite)")."
	echo "Machine: $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1))," \
		"$(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo); load average before $load_start, after $load_end."
	[ "$SMOKE" = 1 ] && { echo; echo "**Smoke run (--smoke): the figures mean nothing; the checks are what counts.**"; }
	echo
	echo "Every run timed whole (start to exit, Debezium's JVM start included), $REPS runs each, interleaved; medians." \
		"Client CPU: user + system (GNU time). Server CPU: the backends that ended during the run (the walsender" \
		"and the client's other connections). Both clients connect over TCP to 127.0.0.1."
	if part capture; then
		echo
		echo "## 1. Change capture: $N changes"
		echo
		echo "bench/changes_workload.sh's mix ($ROWS inserts, then updates, then deletes of the typed rows; $BATCH rows" \
			"a transaction), $((CAP_WAL / 1048576)) MB of WAL, each run from its own slot made before the workload." \
			"Debezium: pgoutput, its events converted to JSON and dropped, stopped after the $N-th. pg_bsonstream:" \
			"the bson_out plugin, durable 64 MB segments (each fsynced), \`-E\` the end of the workload."
		echo
		echo "| client | median s | events/s | client CPU s | µs CPU/event | server CPU s | peak RSS MB | all runs (s) |"
		echo "|---|---:|---:|---:|---:|---:|---:|---|"
		echo "| Debezium (capture, discard) | $(row capture debezium "$N") |"
		echo "| pg_bsonstream -o DIR (durable) | $(row capture pg_bsonstream "$N") |"
		echo "| pg_recvlogical -f /dev/null, bson_out | $(row capture recv_bson_out "$N") |"
		[ -z "${WALL[capture/recv_wal2json]:-}" ] ||
			echo "| pg_recvlogical -f /dev/null, wal2json (format-version 2) | $(row capture recv_wal2json "$N") |"
		echo
		w_d=$(med capture debezium WALL); w_b=$(med capture pg_bsonstream WALL)
		c_d=$(med capture debezium CPU); c_b=$(med capture pg_bsonstream CPU)
		echo "pg_bsonstream: **$(ratio "$w_d" "$w_b")×** Debezium's events/s (goal ≥ 5×), at **$(ratio "$c_b" "$c_d")×** its client CPU" \
			"(goal ≤ 0.10×); server CPU $(ratio "$(med capture pg_bsonstream SRV)" "$(med capture debezium SRV)")×." \
			"Debezium's own time from its first event to its last (s):${EXTRA[capture/debezium]//first to last event /}."
	fi
	if part apply; then
		echo
		echo "## 2. Into the same $SERVER_NAME: $AN events"
		echo
		echo "bench/apply_bench.sh's table (text key), $AROWS inserts, $AROWS updates, $((AROWS - AB_LEFT)) deletes," \
			"$APPLY_BATCH_ROWS rows a transaction; each run from its own slot into a database of its own, end to end" \
			"(start to the last write). Debezium: its engine and a writer as MongoDB's sink connector (replace with" \
			"upsert on the key, delete one; ordered bulk writes of $BULK), offsets committed after each batch's writes." \
			"pg_bsonstream \`--to\` (durable segments, then the apply; \`--batch-size $BULK\`). Lag at the end: the WAL" \
			"between the slot's confirmed position and the workload's end once the client has exited."
		echo
		echo "| pipeline | median s | events/s | client CPU s | µs CPU/event | server CPU s | peak RSS MB | all runs (s) | $SERVER_NAME CPU s | lag at end (bytes) | end state |"
		echo "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"
		for p in debezium pg_bsonstream; do
			label=$([ "$p" = debezium ] && echo "Debezium + Java driver" || echo "pg_bsonstream --to")
			echo "| $label | $(row apply "$p" "$AN") | $(echo "${FCPU[$p]}" | median) | $(echo "${LAG[$p]}" | median) | ${STATE[$p]} |"
		done
		echo
		w_d=$(med apply debezium WALL); w_b=$(med apply pg_bsonstream WALL)
		c_d=$(med apply debezium CPU); c_b=$(med apply pg_bsonstream CPU)
		echo "pg_bsonstream --to: **$(ratio "$w_d" "$w_b")×** the Debezium pipeline's events/s (goal ≥ 2×, or where the" \
			"server limits both ≤ 0.2× its client CPU), at **$(ratio "$c_b" "$c_d")×** its client CPU."
	fi
	if part load; then
		echo
		echo "## 4. First copy into $SERVER_NAME: $SNAP_ROWS rows"
		echo
		echo "The table of part 3 ($SNAP_MB MB). pg_bsonstream: \`--create-slot --initial-copy --to\`, end to end" \
			"(the slot, the copy into DIR/initial, its load: documents in unordered inserts of 1,000, then the" \
			"indexes). mongorestore 100.8.0 (default options: 4 collections at a time, one insertion worker each)" \
			"of a \`pg_bsonexport --out-dir\` dump of the table, made (and timed) just before it. Each run into a" \
			"database of its own, its documents counted after."
		echo
		echo "| client | median s | documents/s | client CPU s | µs CPU/document | server CPU s | peak RSS MB | all runs (s) |"
		echo "|---|---:|---:|---:|---:|---:|---:|---|"
		echo "| pg_bsonexport --out-dir (the dump) | $(row load pg_bsonexport "$SNAP_ROWS") |"
		echo "| mongorestore (load of the dump) | $(row load mongorestore "$SNAP_ROWS") |"
		echo "| pg_bsonstream --initial-copy --to (copy and load) | $(row load pg_bsonstream "$SNAP_ROWS") |"
		echo
		both=$(awk -v a="$(med load pg_bsonexport WALL)" -v b="$(med load mongorestore WALL)" 'BEGIN {printf "%.3f", a + b}')
		echo "pg_bsonstream: **$(ratio "$(med load mongorestore WALL)" "$(med load pg_bsonstream WALL)")×** mongorestore's" \
			"documents/s (goal ≥ 1.0×), at $(ratio "$(med load pg_bsonstream CPU)" "$(med load mongorestore CPU)")× its client CPU;" \
			"$(ratio "$both" "$(med load pg_bsonstream WALL)")× pg_bsonexport + mongorestore end to end ($both s)."
	fi
	if part snapshot; then
		echo
		echo "## 3. First copy: $SNAP_ROWS rows"
		echo
		echo "A table of the typed rows ($SNAP_MB MB). Debezium: \`snapshot.mode=initial\` on a new slot, the rows" \
			"converted to JSON and dropped (nothing written), stopped after the last. pg_bsonstream" \
			"\`--create-slot --initial-copy\` and pg_bsonexport \`--out-dir\`: a durable mongodump directory."
		echo
		echo "| client | median s | rows/s | client CPU s | µs CPU/row | server CPU s | peak RSS MB | all runs (s) |"
		echo "|---|---:|---:|---:|---:|---:|---:|---|"
		echo "| Debezium initial snapshot (discard) | $(row snapshot debezium "$SNAP_ROWS") |"
		echo "| pg_bsonstream --initial-copy | $(row snapshot pg_bsonstream "$SNAP_ROWS") |"
		echo "| pg_bsonexport --out-dir | $(row snapshot pg_bsonexport "$SNAP_ROWS") |"
		echo
		w_d=$(med snapshot debezium WALL)
		echo "rows/s against Debezium's: pg_bsonstream $(ratio "$w_d" "$(med snapshot pg_bsonstream WALL)")×," \
			"pg_bsonexport $(ratio "$w_d" "$(med snapshot pg_bsonexport WALL)")×; client CPU" \
			"$(ratio "$(med snapshot pg_bsonstream CPU)" "$(med snapshot debezium CPU)")× and" \
			"$(ratio "$(med snapshot pg_bsonexport CPU)" "$(med snapshot debezium CPU)")×."
	fi
	echo
	echo "Checks: $passed passed, $failed failed."
} >"$OUT"
cat "$OUT"
[ "$KEEP_OUT" = 1 ] || rm -f "$OUT"
# the capture's chart beside the report (bench/report.py --capture-chart)
if [ "$SMOKE" = 0 ] && part capture; then
	"$PYTHON" "$BENCH_DIR/report.py" --capture-chart "$OUT" "${OUT%.md}.png" || true
fi
echo "debezium: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
