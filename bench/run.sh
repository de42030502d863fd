#!/bin/bash
# bson_out benchmark suite: one command, everything on a throwaway cluster.
#
#   ./bench/run.sh            full run, writes BENCHMARKS.md (whose run header gives
#                             how long it took, from this run's meta.env)
#   ./bench/run.sh --quick    tables at 1/10, 3 repetitions (about 3 min), to try it out
#
# See bench/README.md for what it measures and the files it writes.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=../scripts/lib.sh
source "$ROOT/scripts/lib.sh"

usage() {
	cat <<'EOF'
usage: bench/run.sh [options]
  --quick            tables at 1/10 of full size, 3 repetitions, short per-call runs;
                     results go to bench/results/<time>-quick/, BENCHMARKS.md untouched
  --reps N           timed repetitions per variant (default 9, quick 3)
  --rep-secs S       target seconds per timed scan repetition (default 1.0, quick 0.3)
  --call-secs S      seconds per per-call pgbench repetition (default 5, quick 2)
  --no-latin1        skip the LATIN1 database
  --no-jsbson        skip the js-bson (Node.js) reference
  --no-memory        skip the peak-memory check (200k vs 1M rows)
  --no-callgrind     skip the instructions-per-document counts
  --no-json          skip the json_to_bson / Extended JSON part (tables
                     medium_json, medium_ext, medium_ext_json and their variants)
  --no-row           skip the row_to_bson part (tables typed and
                     medium_rows and their variants)
  --no-decode        skip the reading-BSON-back part (tables medium_bson,
                     medium_text and medium_stream, and the from_bson, bson_to_json,
                     bson_is_valid and bson_documents variants)
  --publish          write BENCHMARKS.md and bench/benchmarks.png (default for full runs)
  --no-publish       do not (default for --quick)
  --out DIR          results directory (default bench/results/<UTC time>[-quick])
EOF
}

QUICK=0 REPS= REP_SECS= CALL_SECS= LATIN1=1 JSBSON=1 MEMORY=1 CALLGRIND=1 JSONX=1 ROWX=1 DECODEX=1 PUBLISH= OUT=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--reps) REPS=$2; shift ;;
	--rep-secs) REP_SECS=$2; shift ;;
	--call-secs) CALL_SECS=$2; shift ;;
	--no-latin1) LATIN1=0 ;;
	--no-jsbson) JSBSON=0 ;;
	--no-memory) MEMORY=0 ;;
	--no-callgrind) CALLGRIND=0 ;;
	--no-json) JSONX=0 ;;
	--no-row) ROWX=0 ;;
	--no-decode) DECODEX=0 ;;
	--publish) PUBLISH=1 ;;
	--no-publish) PUBLISH=0 ;;
	--out) OUT=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done

if [ "$QUICK" = 1 ]; then
	SCALE=0.1; : "${REPS:=3}" "${REP_SECS:=0.3}" "${CALL_SECS:=2}" "${PUBLISH:=0}"
	CG_ROWS=2000; CG_ROWS_LARGE=100; STREAM_DOCS=2000; MODE=quick
else
	SCALE=1; : "${REPS:=9}" "${REP_SECS:=1.0}" "${CALL_SECS:=5}" "${PUBLISH:=1}"
	CG_ROWS=10000; CG_ROWS_LARGE=500; STREAM_DOCS=20000; MODE=full
fi
STAMP=$(date -u +%Y%m%d-%H%M%S)
: "${OUT:=$BENCH_DIR/results/$STAMP$([ "$QUICK" = 1 ] && echo -quick)}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec > >(tee -a "$OUT/run.log") 2>&1
T_START=$(date +%s)

# Development aid: BENCH_FAKE_EXTENSION=1 replaces the extension by a SQL
# stand-in (to_bson = convert_to(doc::text)) so that the suite itself can be
# worked on while the C code does not build.  Its figures mean nothing.
FAKE=${BENCH_FAKE_EXTENSION:-0}

TABLES=(small medium large keys)
# json_to_bson and Extended JSON (UTF8 database only): medium's documents as
# json, and with three Extended JSON v2 wrappers each as jsonb and as json
# (gen_data.py DERIVED)
X_TABLES=()
[ "$JSONX" = 1 ] && X_TABLES=(medium_json medium_ext medium_ext_json)
# row_to_bson (UTF8 database only): tables of typed columns: typed
# (12 columns, its own seed) and medium_rows (medium's documents as rows;
# gen_data.py ROW_TABLES); the key column callgrind limits the rows with
R_TABLES=()
[ "$ROWX" = 1 ] && R_TABLES=(typed medium_rows)
declare -A R_KEY=([typed]=id [medium_rows]=_id)
# reading BSON back (UTF8 database only): BSON to jsonb and JSON.  medium_bson
# (id, b bytea) = to_bson(doc) of medium, medium_text (id, t text) = doc::text of medium (so
# that parsing the text form can be timed alone), medium_stream = one row
# holding the first STREAM_DOCS of medium_bson's documents concatenated (a
# .bson file as mongodump writes it) for bson_documents.  Made in SQL here,
# after gen_data.py, since medium_bson needs the extension.
D_TABLES=()
[ "$DECODEX" = 1 ] && D_TABLES=(medium_bson medium_text medium_stream)
DB=bench
DB_L1=bench_latin1

phase() { log "[$(( $(date +%s) - T_START ))s] $*"; }
die() { echo "bench: $*" >&2; exit 1; }

# ---------------------------------------------------------------- setup
phase "results in $OUT ($MODE mode: scale $SCALE, $REPS repetitions)"
pkgs=(gnuplot-nox valgrind)
command -v node >/dev/null || pkgs+=(nodejs)
command -v npm >/dev/null || pkgs+=(npm)
install_packages "${pkgs[@]}"

if [ "$JSBSON" = 1 ]; then
	want=$(sed -n 's/.*"bson": *"\([^"]*\)".*/\1/p' "$BENCH_DIR/package.json")
	have=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$BENCH_DIR/node_modules/bson/package.json" 2>/dev/null || true)
	if [ "$have" != "$want" ]; then
		phase "npm ci (js-bson $want)"
		(cd "$BENCH_DIR" && npm ci --no-audit --no-fund --loglevel=error)
	fi
fi

if [ "$FAKE" = 1 ]; then
	log "BENCH_FAKE_EXTENSION=1: not building; to_bson is a SQL stand-in, figures are meaningless"
else
	(cd "$ROOT" && build_install)
fi

CLUSTER_OPTS="-c shared_buffers=2GB -c max_parallel_workers_per_gather=0 -c jit=off \
-c autovacuum=off -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
-c max_wal_size=8GB -c checkpoint_timeout=1h -c work_mem=64MB"
export CLUSTER_OPTS
cluster_start
PSQL=(psql -X -q -v ON_ERROR_STOP=1)

{
	echo "date_utc=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "command=bench/run.sh${ARGS[*]:+ ${ARGS[*]}}"
	echo "mode=$MODE"
	echo "scale=$SCALE"
	echo "reps=$REPS"
	echo "rep_secs=$REP_SECS"
	echo "call_secs=$CALL_SECS"
	echo "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
	echo "nproc=$(nproc)"
	echo "mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "os=$(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
	echo "postgres=$(postgres --version)"
	echo "cluster_opts=$(echo $CLUSTER_OPTS)"
	echo "node=$(node --version 2>/dev/null || echo none)"
	echo "jsbson=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$BENCH_DIR/node_modules/bson/package.json" 2>/dev/null || true)"
	echo "git=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo none)$(cd "$ROOT" && [ -n "$(git status --porcelain -- . ':!bench/results' 2>/dev/null)" ] && echo ' (uncommitted changes)')"
	echo "fake_extension=$FAKE"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.env"
load1=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load1" 'BEGIN {exit !(l > 0.5)}'; then
	log "warning: load average $load1 before the run; something else is using the CPUs, timings will be noisy"
fi

DBS=("$DB")
[ "$LATIN1" = 1 ] && DBS+=("$DB_L1")
createdb "$DB"
[ "$LATIN1" = 1 ] && createdb -E LATIN1 -T template0 --locale=C "$DB_L1"
for db in "${DBS[@]}"; do
	if [ "$FAKE" = 1 ]; then
		"${PSQL[@]}" -d "$db" -c "CREATE FUNCTION to_bson(doc jsonb) RETURNS bytea
			LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS \$\$ SELECT convert_to(doc::text, 'UTF8') \$\$" \
			-c "CREATE FUNCTION to_bson(doc jsonb, e boolean, l boolean DEFAULT false) RETURNS bytea
			LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS \$\$ SELECT convert_to(doc::text, 'UTF8') \$\$" \
			-c "CREATE FUNCTION json_to_bson(doc json, e boolean DEFAULT false, l boolean DEFAULT false)
			RETURNS bytea LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS \$\$ SELECT convert_to(doc::text, 'UTF8') \$\$" \
			-c "CREATE FUNCTION row_to_bson(rec anyelement, omit_nulls boolean DEFAULT false)
			RETURNS bytea LANGUAGE sql STABLE STRICT PARALLEL SAFE AS \$\$ SELECT convert_to(row_to_json(rec)::text, 'UTF8') \$\$" \
			-c "CREATE FUNCTION from_bson(b bytea) RETURNS jsonb
			LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS \$\$ SELECT convert_from(b, 'UTF8')::jsonb \$\$" \
			-c "CREATE FUNCTION bson_to_json(b bytea, canonical boolean DEFAULT false) RETURNS json
			LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS \$\$ SELECT convert_from(b, 'UTF8')::json \$\$" \
			-c "CREATE FUNCTION bson_is_valid(b bytea) RETURNS boolean
			LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS \$\$ SELECT convert_from(b, 'UTF8') IS NOT NULL \$\$" \
			-c "CREATE FUNCTION bson_documents(stream bytea) RETURNS SETOF bytea
			LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS \$\$ SELECT convert_to(convert_from(stream, 'UTF8'), 'UTF8') \$\$"
	else
		"${PSQL[@]}" -d "$db" -c "CREATE EXTENSION bson_out"
	fi
	"${PSQL[@]}" -d "$db" -c "CREATE EXTENSION pg_prewarm"
done
gucty=$("${PSQL[@]}" -d "$DB" -At -c "SELECT octet_length(to_bson('{\"a\": 1}'))" \
	-c "SELECT vartype FROM pg_settings WHERE name = 'bson_out.ascii_fast_path'" | tail -1)
if [ "$gucty" != bool ]; then
	log "warning: bson_out.ascii_fast_path is not a bool setting of the loaded library ('$gucty'); fast-off = fast-on"
fi

# ---------------------------------------------------------------- data
phase "generating data (deterministic)"
"$PYTHON" "$BENCH_DIR/gen_data.py" --dbname "$DB" --scale "$SCALE"
[ "$LATIN1" = 1 ] && "$PYTHON" "$BENCH_DIR/gen_data.py" --dbname "$DB_L1" --latin1 --scale "$SCALE"
if [ ${#X_TABLES[@]} -gt 0 ]; then
	"$PYTHON" "$BENCH_DIR/gen_data.py" --dbname "$DB" --scale "$SCALE" --tables "$(IFS=,; echo "${X_TABLES[*]}")"
fi
if [ ${#R_TABLES[@]} -gt 0 ]; then
	"$PYTHON" "$BENCH_DIR/gen_data.py" --dbname "$DB" --scale "$SCALE" --tables "$(IFS=,; echo "${R_TABLES[*]}")"
fi
# reading BSON back: the medium documents as BSON and as stored text, row for row, and
# the stream; the stream column is stored uncompressed (STORAGE EXTERNAL), so
# that reading it is a copy of its TOAST chunks, not a pglz decompression
if [ ${#D_TABLES[@]} -gt 0 ]; then
	t0=$(date +%s.%N)
	"${PSQL[@]}" -d "$DB" \
		-c "CREATE TABLE medium_bson (id int PRIMARY KEY, b bytea NOT NULL)" \
		-c "INSERT INTO medium_bson SELECT id, to_bson(doc) FROM medium ORDER BY id" \
		-c "CREATE TABLE medium_text (id int PRIMARY KEY, t text NOT NULL)" \
		-c "INSERT INTO medium_text SELECT id, doc::text FROM medium ORDER BY id" \
		-c "CREATE TABLE medium_stream (docs int NOT NULL, s bytea NOT NULL)" \
		-c "ALTER TABLE medium_stream ALTER COLUMN s SET STORAGE EXTERNAL" \
		-c "INSERT INTO medium_stream SELECT count(*), string_agg(b, ''::bytea ORDER BY id)
			FROM (SELECT id, b FROM medium_bson ORDER BY id LIMIT $STREAM_DOCS) s"
	printf '   %s.medium_bson, medium_text, medium_stream (%s documents): %.1f s\n' "$DB" "$STREAM_DOCS" \
		"$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')"
fi
echo "db,table,rows,heap_bytes,toast_bytes,avg_text_bytes,avg_stored_bytes,avg_bson_bytes,total_bson_bytes,compressed_docs" >"$OUT/tables.csv"
for db in "${DBS[@]}"; do
	"${PSQL[@]}" -d "$db" -c "VACUUM (FREEZE, ANALYZE)"
	for t in "${TABLES[@]}"; do
		"${PSQL[@]}" -d "$db" -At -F, -c "SELECT '$db', '$t', count(*), pg_relation_size('$t'),
			coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),
			round(avg(octet_length(doc::text)), 1), round(avg(pg_column_size(doc)), 1),
			round(avg(octet_length(to_bson(doc))), 1), sum(octet_length(to_bson(doc))),
			count(*) FILTER (WHERE pg_column_compression(doc) IS NOT NULL)
			FROM $t, pg_class c WHERE c.oid = '$t'::regclass GROUP BY c.reltoastrelid" >>"$OUT/tables.csv"
	done
done
# json_to_bson and Extended JSON tables: the BSON size is that of the function
# the table is there for
for t in "${X_TABLES[@]}"; do
	case $t in
	medium_json) expr="json_to_bson(doc)" ;;
	medium_ext) expr="to_bson(doc, true)" ;;
	medium_ext_json) expr="json_to_bson(doc, true)" ;;
	esac
	"${PSQL[@]}" -d "$DB" -At -F, -c "SELECT '$DB', '$t', count(*), pg_relation_size('$t'),
		coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),
		round(avg(octet_length(doc::text)), 1), round(avg(pg_column_size(doc)), 1),
		round(avg(octet_length($expr)), 1), sum(octet_length($expr)),
		count(*) FILTER (WHERE pg_column_compression(doc) IS NOT NULL)
		FROM $t, pg_class c WHERE c.oid = '$t'::regclass GROUP BY c.reltoastrelid" >>"$OUT/tables.csv"
done
# row_to_bson tables: text = row_to_json(t)::text, stored = the row (pg_column_size
# of the whole-row value), BSON = row_to_bson(t), compressed = rows with a
# compressed jsonb column
for t in "${R_TABLES[@]}"; do
	case $t in
	typed) comp="pg_column_compression(t.meta) IS NOT NULL" ;;
	medium_rows) comp="coalesce(pg_column_compression(t.address), pg_column_compression(t.scores),
		pg_column_compression(t.orders), pg_column_compression(t.prefs)) IS NOT NULL" ;;
	esac
	"${PSQL[@]}" -d "$DB" -At -F, -c "SELECT '$DB', '$t', count(*), pg_relation_size('$t'),
		coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),
		round(avg(octet_length(row_to_json(t)::text)), 1), round(avg(pg_column_size(t.*)), 1),
		round(avg(octet_length(row_to_bson(t))), 1), sum(octet_length(row_to_bson(t))),
		count(*) FILTER (WHERE $comp)
		FROM $t t, pg_class c WHERE c.oid = '$t'::regclass GROUP BY c.reltoastrelid" >>"$OUT/tables.csv"
done
# reading-BSON-back tables: medium_bson's text = bson_to_json(b) (the JSON it decodes
# to), stored = the bytea as stored, BSON = the bytea; medium_text's text = t,
# no BSON; medium_stream: rows = the documents in its one stream, stored = the
# stream as stored (TOAST, uncompressed), BSON = the stream's length
for t in "${D_TABLES[@]}"; do
	case $t in
	medium_bson) rows="count(*)" txt="round(avg(octet_length(bson_to_json(b)::text)), 1)"
		stored="round(avg(pg_column_size(b)), 1)" bs="round(avg(octet_length(b)), 1), sum(octet_length(b))" col=b ;;
	medium_text) rows="count(*)" txt="round(avg(octet_length(t)), 1)"
		stored="round(avg(pg_column_size(t)), 1)" bs="'', ''" col=t ;;
	medium_stream) rows="sum(docs)" txt="''"
		stored="sum(pg_column_size(s))" bs="sum(octet_length(s)), sum(octet_length(s))" col=s ;;
	esac
	"${PSQL[@]}" -d "$DB" -At -F, -c "SELECT '$DB', '$t', $rows, pg_relation_size('$t'),
		coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0), $txt, $stored, $bs,
		count(*) FILTER (WHERE pg_column_compression($col) IS NOT NULL)
		FROM $t, pg_class c WHERE c.oid = '$t'::regclass GROUP BY c.reltoastrelid" >>"$OUT/tables.csv"
done
column -s, -t "$OUT/tables.csv" | sed 's/^/   /'

# json_to_bson and Extended JSON: check that the data exercises what it is meant to.  In BSON an
# element is its type byte, the key and a NUL: with extended_json the three
# wrappers must come out as ObjectId (0x07), UTC datetime (0x09) and int64
# (0x12); json_to_bson keeps the generator's key order (name before age;
# jsonb's order, shorter keys first, puts age first).
if [ "$JSONX" = 1 ] && [ "$FAKE" != 1 ]; then
	"${PSQL[@]}" -d "$DB" -At -F= >"$OUT/extjson_check.env" \
		-c "SELECT 'ext_rows', count(*) FROM medium_ext" \
		-c "SELECT 'ext_native', count(*) FROM medium_ext WHERE
			position('\\x075f696400'::bytea IN to_bson(doc, true)) = 5
			AND position('\\x096372656174656400'::bytea IN to_bson(doc, true)) > 0
			AND position('\\x1262696700'::bytea IN to_bson(doc, true)) > 0" \
		-c "SELECT 'ext_json_native', count(*) FROM medium_ext_json WHERE
			position('\\x075f696400'::bytea IN json_to_bson(doc, true)) = 5
			AND position('\\x096372656174656400'::bytea IN json_to_bson(doc, true)) > 0
			AND position('\\x1262696700'::bytea IN json_to_bson(doc, true)) > 0" \
		-c "SELECT 'json_rows', count(*) FROM medium_json" \
		-c "SELECT 'json_order_kept', count(*) FROM medium_json WHERE
			position('\\x026e616d6500'::bytea IN json_to_bson(doc))
			BETWEEN 1 AND position('\\x1061676500'::bytea IN json_to_bson(doc))" \
		-c "SELECT 'json_same_size', count(*) FROM medium_json WHERE
			octet_length(json_to_bson(doc)) = octet_length(to_bson(doc::jsonb))"
	sed 's/^/   /' "$OUT/extjson_check.env"
	cat "$OUT/extjson_check.env" >>"$OUT/meta.env"
	. "$OUT/extjson_check.env"
	[ "$ext_native" = "$ext_rows" ] && [ "$ext_json_native" = "$ext_rows" ] ||
		log "warning: not every medium_ext document had its 3 wrappers turned into native types (extjson_check.env)"
	[ "$json_order_kept" = "$json_rows" ] ||
		log "warning: json_to_bson did not keep the key order (name before age) in every medium_json document (extjson_check.env)"
fi

# row_to_bson: check that it writes the columns as the native types the
# benchmark is about (element = type byte, key, NUL): typed's id int32 (0x10,
# the first element), n int64 (0x12), amount decimal128 (0x13), created UTC
# datetime (0x09), uid binary subtype 4 (0x05, length 16), score double
# (0x01), meta embedded document (0x03), tags array (0x04); medium_rows' _id
# int32 first, created, balance, big, address, tags, scores, orders, ratio.
# A NULL column is a null element (0x0a), left out with omit_nulls.
if [ "$ROWX" = 1 ] && [ "$FAKE" != 1 ]; then
	"${PSQL[@]}" -d "$DB" -At -F= >"$OUT/rowbson_check.env" \
		-c "SELECT x.* FROM (SELECT count(*) n,
			count(*) FILTER (WHERE position('\\x10696400'::bytea IN b) = 5
				AND position('\\x126e00'::bytea IN b) > 0
				AND position('\\x13616d6f756e7400'::bytea IN b) > 0
				AND position('\\x096372656174656400'::bytea IN b) > 0
				AND position('\\x05756964001000000004'::bytea IN b) > 0
				AND position('\\x0173636f726500'::bytea IN b) > 0
				AND position('\\x036d65746100'::bytea IN b) > 0
				AND position('\\x047461677300'::bytea IN b) > 0) native,
			count(*) FILTER (WHERE nul) nul,
			count(*) FILTER (WHERE position('\\x0a656d61696c00'::bytea IN b) > 0) nul_el,
			count(*) FILTER (WHERE octet_length(o) < octet_length(b)) omitted
			FROM (SELECT row_to_bson(t) b, row_to_bson(t, true) o, t.email IS NULL nul FROM typed t OFFSET 0) r) s,
			LATERAL (VALUES ('typed_rows', n), ('typed_native', native), ('typed_null_email', nul),
				('typed_null_elements', nul_el), ('typed_omitted', omitted)) x" \
		-c "SELECT x.* FROM (SELECT count(*) n,
			count(*) FILTER (WHERE position('\\x105f696400'::bytea IN b) = 5
				AND position('\\x096372656174656400'::bytea IN b) > 0
				AND position('\\x1362616c616e636500'::bytea IN b) > 0
				AND position('\\x1262696700'::bytea IN b) > 0
				AND position('\\x036164647265737300'::bytea IN b) > 0
				AND position('\\x047461677300'::bytea IN b) > 0
				AND position('\\x0473636f72657300'::bytea IN b) > 0
				AND position('\\x046f726465727300'::bytea IN b) > 0
				AND position('\\x01726174696f00'::bytea IN b) > 0) native,
			count(*) FILTER (WHERE nul) nul,
			count(*) FILTER (WHERE octet_length(o) < octet_length(b)) omitted
			FROM (SELECT row_to_bson(t) b, row_to_bson(t, true) o, t.prefs IS NULL nul FROM medium_rows t OFFSET 0) r) s,
			LATERAL (VALUES ('mrows_rows', n), ('mrows_native', native), ('mrows_null_prefs', nul),
				('mrows_omitted', omitted)) x"
	sed 's/^/   /' "$OUT/rowbson_check.env"
	cat "$OUT/rowbson_check.env" >>"$OUT/meta.env"
	. "$OUT/rowbson_check.env"
	[ "$typed_native" = "$typed_rows" ] && [ "$mrows_native" = "$mrows_rows" ] ||
		log "warning: row_to_bson did not write every typed / medium_rows row with the native types (rowbson_check.env)"
	[ "$typed_null_elements" = "$typed_null_email" ] && [ "$typed_omitted" = "$typed_null_email" ] &&
		[ "$mrows_omitted" = "$mrows_null_prefs" ] ||
		log "warning: NULL columns: null elements or omit_nulls not as expected (rowbson_check.env)"
fi

# reading BSON back: check that the decoders take every document the benchmark times:
# bson_is_valid accepts them all, bson_documents splits the stream into
# exactly its documents and bytes; and, for information, how many documents
# come back equal to the jsonb they were encoded from (from_bson, and
# bson_to_json's text parsed as jsonb: numbers that went through a double may
# differ in their digits)
if [ "$DECODEX" = 1 ] && [ "$FAKE" != 1 ]; then
	"${PSQL[@]}" -d "$DB" -At -F= >"$OUT/decode_check.env" \
		-c "SELECT x.* FROM (SELECT count(*) n,
			count(*) FILTER (WHERE bson_is_valid(b.b)) valid,
			count(*) FILTER (WHERE from_bson(b.b) = m.doc) jsonb_same,
			count(*) FILTER (WHERE bson_to_json(b.b)::jsonb = m.doc) json_same
			FROM medium_bson b JOIN medium m USING (id)) s,
			LATERAL (VALUES ('dec_rows', n), ('dec_valid', valid), ('dec_jsonb_same', jsonb_same),
				('dec_json_same', json_same)) x" \
		-c "SELECT 'stream_docs', docs FROM medium_stream" \
		-c "SELECT 'stream_bytes', octet_length(s) FROM medium_stream" \
		-c "SELECT x.* FROM (SELECT count(*) n, sum(octet_length(d)) bytes
			FROM bson_documents((SELECT s FROM medium_stream)) d) s,
			LATERAL (VALUES ('stream_rows', n), ('stream_rows_bytes', bytes)) x"
	sed 's/^/   /' "$OUT/decode_check.env"
	cat "$OUT/decode_check.env" >>"$OUT/meta.env"
	. "$OUT/decode_check.env"
	[ "$dec_valid" = "$dec_rows" ] ||
		log "warning: bson_is_valid rejected some of medium_bson's documents (decode_check.env)"
	[ "$stream_rows" = "$stream_docs" ] && [ "$stream_rows_bytes" = "$stream_bytes" ] ||
		log "warning: bson_documents did not split medium_stream into its $stream_docs documents (decode_check.env)"
fi

prewarm() {
	local db
	for db in "${DBS[@]}"; do
		"${PSQL[@]}" -d "$db" -At -c "
			WITH t AS (SELECT oid, reltoastrelid FROM pg_class
			           WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'
			             AND relname IN ('small', 'medium', 'large', 'keys',
			                             'medium_json', 'medium_ext', 'medium_ext_json',
			                             'typed', 'medium_rows',
			                             'medium_bson', 'medium_text', 'medium_stream')),
			     r AS (SELECT oid FROM t UNION ALL SELECT reltoastrelid FROM t WHERE reltoastrelid <> 0
			           UNION ALL SELECT indexrelid FROM pg_index
			                     WHERE indrelid IN (SELECT oid FROM t UNION ALL SELECT reltoastrelid FROM t))
			SELECT sum(pg_prewarm(oid)) FROM r" >/dev/null
	done
}
prewarm

# ---------------------------------------------------------------- scans
# A variant: db|table|name|script|extra pgbench arguments
VARIANTS=()
for db in "${DBS[@]}"; do
	for t in "${TABLES[@]}"; do
		VARIANTS+=("$db|$t|base|scan_base.sql|" "$db|$t|text|scan_text.sql|"
			"$db|$t|bson|scan_bson.sql|" "$db|$t|bson_nofast|scan_bson_nofast.sql|")
	done
done
VARIANTS+=("$DB|medium|par0|scan_bson_parallel.sql|-D workers=0"
	"$DB|medium|par2|scan_bson_parallel.sql|-D workers=2")
# json_to_bson against the cast a user would write instead (and
# json's doc::text, no parsing at all, for context); to_bson(doc, true) against
# to_bson(doc) on the same documents with wrappers; json_to_bson(doc, true)
# for information.  Interleaved with all the others.
if [ "$JSONX" = 1 ]; then
	VARIANTS+=("$DB|medium_json|text|scan_text.sql|"
		"$DB|medium_json|json_bson|scan_json_bson.sql|"
		"$DB|medium_json|json_bson_nofast|scan_json_bson_nofast.sql|"
		"$DB|medium_json|cast_bson|scan_json_cast_bson.sql|"
		"$DB|medium_ext|bson|scan_bson.sql|"
		"$DB|medium_ext|bson_ext|scan_bson_ext.sql|"
		"$DB|medium_ext_json|json_bson_ext|scan_json_bson_ext.sql|")
fi
# row_to_bson(t) against row_to_json(t)::text (the target's
# reference) and to_bson(to_jsonb(t)) (what a user has without it), on the
# typed table and on the medium documents as rows.  Interleaved with all the
# others.
for t in "${R_TABLES[@]}"; do
	VARIANTS+=("$DB|$t|row_bson|scan_row_bson.sql|"
		"$DB|$t|row_json|scan_row_json.sql|"
		"$DB|$t|row_jsonb_bson|scan_row_jsonb_bson.sql|")
done
# from_bson against doc::text::jsonb (its target's reference: jsonb
# printed and parsed back) and t::jsonb (parsing the stored text alone);
# bson_to_json, relaxed and canonical, against doc::text (medium's text
# variant above); bson_is_valid and bson_documents (per document).
# Interleaved with all the others.
if [ "$DECODEX" = 1 ]; then
	VARIANTS+=("$DB|medium_bson|from_bson|scan_from_bson.sql|"
		"$DB|medium|text_jsonb|scan_text_jsonb.sql|"
		"$DB|medium_text|jsonb_in|scan_jsonb_in.sql|"
		"$DB|medium_bson|bson_to_json|scan_bson_to_json.sql|"
		"$DB|medium_bson|bson_to_json_canonical|scan_bson_to_json_canonical.sql|"
		"$DB|medium_bson|is_valid|scan_bson_is_valid.sql|"
		"$DB|medium_stream|documents|scan_bson_documents.sql|")
fi

# pgbench_latency DB SCRIPT XACTS [args...] -> average latency in ms
pgbench_latency() {
	local db=$1 script=$2 n=$3 out
	shift 3
	out=$(pgbench -n -d "$db" -f "$BENCH_DIR/pgbench/$script" -t "$n" "$@" 2>&1) ||
		{ echo "$out" >&2; die "pgbench failed: $db $script $*"; }
	sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p' <<<"$out"
}

phase "parallel plan check"
{
	echo "-- SET parallel_setup_cost/parallel_tuple_cost/min_parallel_table_scan_size = 0, max_parallel_workers_per_gather = 2"
	"${PSQL[@]}" -d "$DB" -c "SET parallel_setup_cost = 0" -c "SET parallel_tuple_cost = 0" \
		-c "SET min_parallel_table_scan_size = 0" -c "SET max_parallel_workers_per_gather = 2" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT sum(octet_length(to_bson(doc))) FROM medium"
} >"$OUT/parallel_explain.txt" 2>&1
sed 's/^/   /' "$OUT/parallel_explain.txt"
if grep -q 'Workers Launched: 2' "$OUT/parallel_explain.txt"; then
	echo "parallel_workers_launched=2" >>"$OUT/meta.env"
else
	echo "parallel_workers_launched=no" >>"$OUT/meta.env"
	log "warning: the parallel scan did not launch 2 workers (see parallel_explain.txt)"
fi

phase "scan warm-up and calibration (${#VARIANTS[@]} variants, ~${REP_SECS}s per repetition)"
declare -A XACTS
for v in "${VARIANTS[@]}"; do
	IFS='|' read -r db t name script extra <<<"$v"
	# shellcheck disable=SC2086
	lat=$(pgbench_latency "$db" "$script" 1 -D table="$t" $extra)
	XACTS[$v]=$(awk -v l="$lat" -v s="$REP_SECS" 'BEGIN {n = int(s * 1000 / l + 0.5); print (n < 1 ? 1 : n)}')
	printf '   %-13s %-15s %-22s %9.2f ms  -> %d per repetition\n' "$db" "$t" "$name" "$lat" "${XACTS[$v]}"
done

phase "scans: $REPS interleaved rounds"
echo "round,db,table,variant,xacts,latency_ms" >"$OUT/scans.csv"
nv=${#VARIANTS[@]}
for ((r = 1; r <= REPS; r++)); do
	# a new (seeded, so repeatable) order every round: no variant always
	# follows the same one or runs at the same point of the round
	for i in $("$PYTHON" -c "import random; l = list(range($nv)); random.Random($r).shuffle(l); print(*l)"); do
		v=${VARIANTS[$i]}
		IFS='|' read -r db t name script extra <<<"$v"
		# shellcheck disable=SC2086
		lat=$(pgbench_latency "$db" "$script" "${XACTS[$v]}" -D table="$t" $extra)
		echo "$r,$db,$t,$name,${XACTS[$v]},$lat" >>"$OUT/scans.csv"
	done
	log "   round $r/$REPS done"
done

# ---------------------------------------------------------------- per call
phase "per call: pgbench -M prepared, 4 queries, ${CALL_SECS}s x $REPS rounds each"
NROWS=$("${PSQL[@]}" -d "$DB" -At -c "SELECT max(id) FROM medium")
pgbench_tps() {
	local script=$1 secs=$2 out
	out=$(pgbench -n -M prepared -d "$DB" -f "$BENCH_DIR/pgbench/$script" -D nrows="$NROWS" -T "$secs" 2>&1) ||
		{ echo "$out" >&2; die "pgbench failed: $script"; }
	sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out"
}
# bson and text are the target's pair; the _len pair returns only the length,
# leaving out bytea's hex text output, which pgbench's text results add
CALLS=(bson text bson_len text_len)
for name in "${CALLS[@]}"; do pgbench_tps "call_$name.sql" 1 >/dev/null; done
echo "round,variant,tps" >"$OUT/percall.csv"
for ((r = 1; r <= REPS; r++)); do
	for i in $("$PYTHON" -c "import random; l = list(range(${#CALLS[@]})); random.Random($r).shuffle(l); print(*l)"); do
		name=${CALLS[$i]}
		echo "$r,$name,$(pgbench_tps "call_$name.sql" "$CALL_SECS")" >>"$OUT/percall.csv"
	done
done
tail -n +2 "$OUT/percall.csv" | sed 's/^/   /'

# ---------------------------------------------------------------- js-bson
WORK=$CLUSTER_DIR/work
mkdir -p "$WORK"
if [ "$JSBSON" = 1 ]; then
	phase "js-bson: exporting documents (doc::text), then BSON.serialize x $REPS"
	inputs=()
	for t in "${TABLES[@]}"; do
		"${PSQL[@]}" -d "$DB" -At -v FETCH_COUNT=10000 -c "SELECT doc::text FROM $t ORDER BY id" >"$WORK/$t.jsonl"
		inputs+=("$t=$WORK/$t.jsonl")
	done
	node --max-old-space-size=8192 "$BENCH_DIR/jsbson.js" --reps "$REPS" --out "$OUT/jsbson.csv" "${inputs[@]}"
	rm -f "$WORK"/*.jsonl
fi

# ---------------------------------------------------------------- memory
if [ "$MEMORY" = 1 ]; then
	phase "memory: full medium scan at $NROWS and $((NROWS * 5)) rows"
	"${PSQL[@]}" -d "$DB" -c "CREATE TABLE medium_x5 AS
		SELECT k * $NROWS + id AS id, doc FROM generate_series(0, 4) k, medium"
	"${PSQL[@]}" -d "$DB" -c "VACUUM (FREEZE, ANALYZE) medium_x5"
	"$PYTHON" "$BENCH_DIR/memtest.py" --dbname "$DB" --out "$OUT/memory.csv" medium medium_x5
fi

# ---------------------------------------------------------------- callgrind
if [ "$CALLGRIND" = 1 ]; then
	# the C symbol behind an SQL function, e.g. 'to_bson(jsonb)' -> to_bson_jsonb
	c_symbol() {
		"${PSQL[@]}" -d "$DB" -At -c "SELECT prosrc FROM pg_proc WHERE oid = '$1'::regprocedure
			AND prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')"
	}
	SYM_ROW= SYM_FROM= SYM_TOJSON= SYM_VALID= SYM_DOCS=
	if [ "$FAKE" = 1 ]; then
		SYM=jsonb_out SYM_EXT=jsonb_out SYM_JSON=pg_convert_to
		[ "$ROWX" = 1 ] && SYM_ROW=pg_convert_to
		[ "$DECODEX" = 1 ] && SYM_FROM=jsonb_in SYM_TOJSON=json_in SYM_VALID=pg_convert_from SYM_DOCS=pg_convert_to
	else
		SYM=$(c_symbol 'to_bson(jsonb)')
		SYM_EXT= SYM_JSON=
		if [ "$JSONX" = 1 ]; then
			SYM_EXT=$(c_symbol 'to_bson(jsonb, boolean, boolean)')
			SYM_JSON=$(c_symbol 'json_to_bson(json, boolean, boolean)')
			[ -n "$SYM_EXT" ] && [ -n "$SYM_JSON" ] || die "cannot find the C symbols of to_bson(jsonb, boolean, boolean) and json_to_bson"
		fi
		if [ "$ROWX" = 1 ]; then
			SYM_ROW=$(c_symbol 'row_to_bson(record, boolean)')
			[ -n "$SYM_ROW" ] || die "cannot find the C symbol of row_to_bson(record, boolean)"
		fi
		if [ "$DECODEX" = 1 ]; then
			SYM_FROM=$(c_symbol 'from_bson(bytea)')
			SYM_TOJSON=$(c_symbol 'bson_to_json(bytea, boolean)')
			SYM_VALID=$(c_symbol 'bson_is_valid(bytea)')
			SYM_DOCS=$(c_symbol 'bson_documents(bytea)')
			[ -n "$SYM_FROM" ] && [ -n "$SYM_TOJSON" ] && [ -n "$SYM_VALID" ] && [ -n "$SYM_DOCS" ] ||
				die "cannot find the C symbols of from_bson, bson_to_json, bson_is_valid and bson_documents"
		fi
	fi
	[ -n "$SYM" ] || die "cannot find the C symbol of to_bson"
	[ -n "$SYM_ROW" ] && echo "sym_row=$SYM_ROW" >>"$OUT/meta.env"
	[ -n "$SYM_FROM" ] && echo "sym_decode=$SYM_FROM $SYM_TOJSON $SYM_VALID $SYM_DOCS" >>"$OUT/meta.env"
	phase "callgrind: instructions per document (C symbol $SYM${SYM_JSON:+, $SYM_JSON, $SYM_EXT}${SYM_ROW:+, $SYM_ROW}${SYM_FROM:+, $SYM_FROM, $SYM_TOJSON, $SYM_VALID, $SYM_DOCS}; $CG_ROWS rows, large $CG_ROWS_LARGE${SYM_DOCS:+, stream $STREAM_DOCS})"
	"${CLUSTER_RUNAS[@]}" "$PG_BINDIR/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null
	CG=$CLUSTER_DIR/cg
	mkdir -p "$CG" "$OUT/callgrind"
	chown postgres: "$CG" 2>/dev/null || true
	echo "db,table,variant,rows,ir_total,ir_detoast,ir_cast" >"$OUT/callgrind.csv"
	cg_specs=()
	for t in "${TABLES[@]}"; do
		for name in bson bson_nofast text base; do cg_specs+=("$DB|$t|$name"); done
	done
	if [ "$LATIN1" = 1 ]; then
		for t in "${TABLES[@]}"; do
			for name in bson bson_nofast; do cg_specs+=("$DB_L1|$t|$name"); done
		done
	fi
	if [ "$JSONX" = 1 ]; then
		cg_specs+=("$DB|medium_json|json_bson" "$DB|medium_json|json_bson_nofast" "$DB|medium_json|cast_bson"
			"$DB|medium_ext|bson" "$DB|medium_ext|bson_ext" "$DB|medium_ext_json|json_bson_ext")
	fi
	for t in "${R_TABLES[@]}"; do
		for name in row_bson row_json row_jsonb_bson; do cg_specs+=("$DB|$t|$name"); done
	done
	# reading BSON back; doc::text on medium is the text spec above
	if [ "$DECODEX" = 1 ]; then
		cg_specs+=("$DB|medium_bson|from_bson" "$DB|medium|text_jsonb" "$DB|medium_text|jsonb_in"
			"$DB|medium_bson|bson_to_json" "$DB|medium_bson|bson_to_json_canonical"
			"$DB|medium_bson|is_valid" "$DB|medium_stream|documents")
	fi
	for spec in "${cg_specs[@]}"; do
		IFS='|' read -r db t name <<<"$spec"
		rows=$CG_ROWS
		[ "$t" = large ] && rows=$CG_ROWS_LARGE
		query=
		case $name in
		bson) expr="to_bson(doc)"; fast=on; toggles=(--toggle-collect="$SYM") ;;
		bson_nofast) expr="to_bson(doc)"; fast=off; toggles=(--toggle-collect="$SYM") ;;
		text) expr="doc::text"; fast=on; toggles=(--toggle-collect=jsonb_out --toggle-collect=textin) ;;
		base) expr="jsonb_typeof(doc)"; fast=on; toggles=(--toggle-collect=jsonb_typeof) ;;
		json_bson) expr="json_to_bson(doc)"; fast=on; toggles=(--toggle-collect="$SYM_JSON") ;;
		json_bson_nofast) expr="json_to_bson(doc)"; fast=off; toggles=(--toggle-collect="$SYM_JSON") ;;
		# the cast is CoerceViaIO: json's output function, then jsonb_in
		cast_bson) expr="to_bson(doc::jsonb)"; fast=on
			toggles=(--toggle-collect=json_out --toggle-collect=jsonb_in --toggle-collect="$SYM") ;;
		bson_ext) expr="to_bson(doc, true)"; fast=on; toggles=(--toggle-collect="$SYM_EXT") ;;
		json_bson_ext) expr="json_to_bson(doc, true)"; fast=on; toggles=(--toggle-collect="$SYM_JSON") ;;
		# row_to_bson, on rows: the whole-row value is built by the executor, outside
		# every toggle; row_to_json(t)::text is a binary cast
		row_bson) expr="row_to_bson(t)"; fast=on; toggles=(--toggle-collect="$SYM_ROW") ;;
		row_json) expr="row_to_json(t)::text"; fast=on; toggles=(--toggle-collect=row_to_json) ;;
		row_jsonb_bson) expr="to_bson(to_jsonb(t))"; fast=on
			toggles=(--toggle-collect=to_jsonb --toggle-collect="$SYM") ;;
		# reading BSON back, consumed as in the scans: pg_column_size of the jsonb and
		# octet_length of the text read only the length word.  Both casts of
		# doc::text::jsonb are CoerceViaIO (jsonb_out, textin; textout, jsonb_in)
		from_bson) fast=on; toggles=(--toggle-collect="$SYM_FROM")
			query="SELECT sum(pg_column_size(from_bson(b))) FROM medium_bson WHERE id <= $rows" ;;
		text_jsonb) fast=on
			toggles=(--toggle-collect=jsonb_out --toggle-collect=textin --toggle-collect=textout --toggle-collect=jsonb_in)
			query="SELECT sum(pg_column_size(doc::text::jsonb)) FROM medium WHERE id <= $rows" ;;
		jsonb_in) fast=on; toggles=(--toggle-collect=textout --toggle-collect=jsonb_in)
			query="SELECT sum(pg_column_size(t::jsonb)) FROM medium_text WHERE id <= $rows" ;;
		bson_to_json) fast=on; toggles=(--toggle-collect="$SYM_TOJSON")
			query="SELECT sum(octet_length(bson_to_json(b)::text)) FROM medium_bson WHERE id <= $rows" ;;
		bson_to_json_canonical) fast=on; toggles=(--toggle-collect="$SYM_TOJSON")
			query="SELECT sum(octet_length(bson_to_json(b, true)::text)) FROM medium_bson WHERE id <= $rows" ;;
		is_valid) fast=on; toggles=(--toggle-collect="$SYM_VALID")
			query="SELECT count(*) FILTER (WHERE bson_is_valid(b)) FROM medium_bson WHERE id <= $rows" ;;
		# one call per document (value per call), the first detoasts the stream
		documents) fast=on; toggles=(--toggle-collect="$SYM_DOCS"); rows=$STREAM_DOCS
			query="SELECT sum(octet_length(d)) FROM bson_documents((SELECT s FROM medium_stream)) d" ;;
		esac
		base_name="${db}_${t}_${name}"
		if [ -n "$query" ]; then
			:
		elif [ -n "${R_KEY[$t]:-}" ]; then
			query="SELECT sum(octet_length($expr)) FROM $t t WHERE t.${R_KEY[$t]} <= $rows"
		else
			query="SELECT sum(octet_length($expr)) FROM (SELECT doc FROM $t WHERE id <= $rows) s"
		fi
		printf '%s\n' "SET max_parallel_workers_per_gather = 0" "SET bson_out.ascii_fast_path = $fast" \
			"$query" >"$CG/$base_name.sql"
		"${CLUSTER_RUNAS[@]}" valgrind --tool=callgrind --callgrind-out-file="$CG/$base_name.out" "${toggles[@]}" \
			"$PG_BINDIR/postgres" --single -D "$CLUSTER_DIR/data" -c shared_buffers=512MB -c jit=off \
			-c max_parallel_workers_per_gather=0 "$db" <"$CG/$base_name.sql" >"$CG/$base_name.log" 2>&1 || true
		if grep -q 'ERROR' "$CG/$base_name.log" || ! grep -q '^totals:' "$CG/$base_name.out" 2>/dev/null; then
			cp "$CG/$base_name.log" "$OUT/callgrind/$base_name.log"
			log "warning: callgrind $spec failed (see callgrind/$base_name.log)"
			continue
		fi
		total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$CG/$base_name.out")
		# detoasting inside the function: the fmgr wrappers' inclusive cost, or
		# detoast_attr's where the code calls it directly
		# and, for the cast variant, the cast's part (json_out + jsonb_in); for
		# to_bson(to_jsonb(t)), to_jsonb's part; for doc::text::jsonb, the text
		# output's part (jsonb_out + textin)
		case $name in
		row_jsonb_bson) castre=':to_jsonb ' ;;
		text_jsonb) castre=':(jsonb_out|textin) ' ;;
		*) castre=':(json_out|jsonb_in) ' ;;
		esac
		read -r detoast cast < <(callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$CG/$base_name.out" 2>/dev/null | awk -v castre="$castre" '
			!/^ *[0-9,]+ \( *[0-9.]+%\) / { next }
			{ n = $1; gsub(",", "", n) }
			/:pg_detoast_datum(_packed|_copy)? / { w += n }
			/:detoast_attr / { a += n }
			$0 ~ castre { c += n }
			END { print (w > 0 ? w : a + 0), c + 0 }')
		case $name in cast_bson | row_jsonb_bson | text_jsonb) ;; *) cast= ;; esac
		echo "$db,$t,$name,$rows,$total,$detoast,$cast" >>"$OUT/callgrind.csv"
		printf '   %-13s %-15s %-22s %12.0f instructions/doc (detoast %.0f)\n' "$db" "$t" "$name" \
			"$(awk -v a="$total" -v n="$rows" 'BEGIN {print a / n}')" "$(awk -v a="$detoast" -v n="$rows" 'BEGIN {print a / n}')"
		# the profile (self cost per function) for whoever optimises next
		callgrind_annotate --threshold=99 --auto=no "$CG/$base_name.out" 2>/dev/null |
			awk '/^Ir *file:function/ {on = 1} on && n++ < 45' >"$OUT/callgrind/$base_name.txt"
		rm -f "$CG/$base_name.out"
	done
fi

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.env"
echo "duration_s=$(( $(date +%s) - T_START ))" >>"$OUT/meta.env"
cluster_stop

# ---------------------------------------------------------------- report
phase "report"
report_args=("$OUT")
if [ "$PUBLISH" = 1 ]; then
	report_args+=(--publish "$ROOT/BENCHMARKS.md" --chart-copy "$BENCH_DIR/benchmarks.png")
fi
"$PYTHON" "$BENCH_DIR/report.py" "${report_args[@]}"
phase "done: $OUT"
