#!/usr/bin/env bash
# Tests of pg_bsonexport, on a throwaway cluster.
#
#   test/exporter/run.sh
#
# Assumes the extension is built and installed (make && make install); builds
# the exporter from client/ with -Werror in a scratch directory (or tests
# PG_BSONEXPORT=/path/to/binary), the
# libbson reader test/exporter/read_libbson.c, the COPY-parser and progress-line
# unit tests and the LD_PRELOAD shim test/exporter/fail_rename.c.
# Installs the Debian packages it needs when missing (libpq-dev, libbson-dev,
# pkg-config, time, python3-bson, python3-pymongo, python3-psycopg2).
#
# What it checks: exports of the benchmark's tables (medium, small, typed,
# medium_ext; 20,000 rows each from bench/gen_data.py) and of SQL-made tables,
# read back by pymongo's bson.decode_file_iter and by libbson's bson_reader and
# compared with the same rows converted in SQL, byte for byte; --jobs N equal
# to --jobs 1 byte for byte, --split files concatenated equal to one file, the
# TID Range Scan of the jobs' queries; NULL rows; the size limits; the full
# validation of every document (corrupt documents from a query and, with
# --jobs, from a server whose to_bson was replaced) and --no-validate; refused
# queries and names; connection and permission errors; every number, size
# and duration option refusing NaN, infinities, signs, blanks, hexadecimal,
# overflow and trailing characters (exit 2); an installation lacking functions;
# SIGINT, SIGTERM, SIGKILL and a terminated backend mid-stream; SIGINT
# while waiting for a lock; the table locked before the snapshot (a
# TRUNCATE committed meanwhile); --jobs against a queued exclusive lock;
# the user's lock_timeout honoured, --lock-wait-timeout, a long lock wait
# said with the table and the blocking PID; row-level security (refused
# unless --enable-row-security); a FIFO, a character device, /dev/null and a
# socket as -o; a temporary file of another user's live process kept;
# a --split rename failing midway (LD_PRELOAD shim fail_rename.c); TCP
# keepalives (a silent fake server, the timer seen with ss); a full disk;
# progress on a terminal; constant memory; no parallel plan in table mode;
# the top-level make where libpq's headers are missing (the extension alone,
# a message).
#
# The last line is "exporter: N passed, M failed"; exit status 0 only when
# nothing failed.  About a minute.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
source scripts/lib.sh

# iproute2: ss, which shows the keepalive timer
install_packages libpq-dev libbson-dev pkg-config time iproute2 || exit 1

WORK=$(mktemp -d /tmp/exporter_test.XXXXXX)
T_START=$(date +%s)

# ---------------------------------------------------------------- build
log "building pg_bsonexport, read_libbson and the COPY parser's unit test"
if [ -n "${PG_BSONEXPORT:-}" ]; then
	BIN=$PG_BSONEXPORT
else
	# built in a copy: the objects stay out of the work tree, and a make clean
	# running there meanwhile cannot pull the binary from under the tests;
	# the copy keeps the layout, as the exporter compiles ../src/core/bson_reader.c
	client_build "$WORK/build" pg_bsonexport >/dev/null || exit 1
	BIN=$WORK/build/client/pg_bsonexport
fi
cc -O2 -Wall -Wextra -Werror $(pkg-config --cflags libbson-1.0) -o "$WORK/read_libbson" \
	test/exporter/read_libbson.c $(pkg-config --libs libbson-1.0) || exit 1
cc -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
	-Iclient/export -o "$WORK/test_copy_binary" test/exporter/test_copy_binary.c client/export/copy_binary.c || exit 1
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$WORK/fail_rename.so" test/exporter/fail_rename.c -ldl || exit 1
cc -O1 -g -Wall -Wextra -Werror -fsanitize=undefined,float-cast-overflow -fno-sanitize-recover=all \
	-Iclient/common -o "$WORK/test_progress" test/exporter/test_progress.c client/common/progress.c || exit 1

# our own cluster, never one the environment points at
unset PGHOST PGPORT PGDATABASE PGUSER
cluster_start || exit 1
trap 'cluster_stop; rm -rf "$WORK"' EXIT
DB=xexp
export PGDATABASE=$DB

passed=0
failed=0
failures=()
pass() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
fail() {
	failed=$((failed + 1))
	failures+=("$1")
	printf 'FAIL %s\n' "$1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | head -20 | sed 's/^/     | /'
	return 0
}
Q() { psql -qX -v ON_ERROR_STOP=1 -At "$@"; }

# run CMD...: stdout in $WORK/out, stderr in $WORK/err, status in $rc
run() { "$@" >"$WORK/out" 2>"$WORK/err"; rc=$?; }

# no file at PATH and no temporary file .NAME.tmp.* beside it
no_output() {
	local d b
	d=$(dirname "$1") b=$(basename "$1")
	[ ! -e "$1" ] && ! compgen -G "$d/.$b.tmp.*" >/dev/null
}

# expect_error NAME STATUS REGEX CMD...: fails with STATUS and a message
# matching REGEX on standard error
expect_error() {
	local name=$1 want=$2 re=$3
	shift 3
	run "$@"
	if [ "$rc" -ne "$want" ]; then
		fail "$name" "exit status $rc, expected $want; stderr: $(cat "$WORK/err")"
	elif ! grep -Eq -- "$re" "$WORK/err"; then
		fail "$name" "stderr does not match /$re/: $(cat "$WORK/err")"
	else
		pass "$name: $(head -1 "$WORK/err" | cut -c1-150)"
	fi
}

# wait_until SQL: poll (10 s at most) until the query returns true
wait_until() {
	local i
	for i in $(seq 1 200); do
		[ "$(Q -c "$1" 2>/dev/null)" = t ] && return 0
		sleep 0.05
	done
	return 1
}

# lock_on TABLE MODE GRANTED [APP]: the SQL that is true when such a lock is there
lock_on() {
	echo "SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		WHERE l.relation = '$1'::regclass AND l.mode = '$2' AND l.granted = $3
		${4:+AND a.application_name = '$4'})"
}

# wait_max SECONDS PID: wait for PID (status in $?), killed if it takes longer
wait_max() {
	local i
	for i in $(seq 1 $(($1 * 20))); do
		kill -0 "$2" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$2" 2>/dev/null && kill -KILL "$2"
	wait "$2"
}

# a psql session that stays open between statements, fed through a FIFO:
# session_open; session_send SQL...; session_close
session_open() {
	rm -f "$WORK/session.fifo"
	mkfifo "$WORK/session.fifo"
	psql -qX -v ON_ERROR_STOP=1 <"$WORK/session.fifo" >"$WORK/session.log" 2>&1 &
	SESSION_PID=$!
	exec 6>"$WORK/session.fifo"
}
session_send() { printf '%s\n' "$1" >&6; }
session_close() {
	exec 6>&-
	wait "$SESSION_PID"
}

# verify NAME FILE SQL: both readers against the rows of SQL
verify() {
	local name=$1 file=$2 sql=$3 out
	if ! "$WORK/read_libbson" "$file" >"$WORK/libbson.txt" 2>"$WORK/libbson.err"; then
		fail "$name" "read_libbson: $(cat "$WORK/libbson.err")"
		return
	fi
	if out=$("$PYTHON" test/exporter/verify.py --dbname "$DB" --sql "$sql" --file "$file" \
		--libbson "$WORK/libbson.txt" 2>&1); then
		pass "$name: ${out#verify $file: }"
	else
		fail "$name" "$out"
	fi
}

# ---------------------------------------------------------------- unit test
if out=$("$WORK/test_copy_binary" 2>&1); then
	pass "COPY binary parser, chunked every way (ASan/UBSan): $(tail -1 <<<"$out")"
else
	fail "COPY binary parser unit test" "$out"
fi

if out=$("$WORK/test_progress" 2>&1 | tr '\r' '\n' | sed 's/\x1b\[K//g' | grep -v '^$') &&
	grep -q ', ETA >99:59:59$' <<<"$out" && grep -q ', 50%, ETA 0:10$' <<<"$out" &&
	grep -Eq ', 1%, ETA 9[89]:[0-9]{2}:[0-9]{2}$' <<<"$out"; then
	pass "progress ETA clamped, h:mm:ss past an hour (UBSan float-cast-overflow): $(tr '\n' '|' <<<"$out")"
else
	fail "progress ETA" "$out"
fi

# ---------------------------------------------------------------- data
log "data: bench/gen_data.py at scale 0.1 (20,000 rows per table) and SQL-made tables"
createdb -T template0 -E UTF8 "$DB" && Q -c "CREATE EXTENSION bson_out" || exit 1
"$PYTHON" bench/gen_data.py --dbname "$DB" --scale 0.1 --tables small,medium,typed,medium_ext || exit 1
Q <<'SQL' || exit 1
CREATE TABLE nulls (id int, doc jsonb);
INSERT INTO nulls SELECT g, CASE WHEN g % 10 <> 0 THEN jsonb_build_object('_id', g, 'v', g * 1.5) END
  FROM generate_series(1, 1000) g;
CREATE TABLE jt (id int, j json);
INSERT INTO jt SELECT g, ('{"z": ' || g || ', "a": "x", "z": 1e400, "d": {"$date": "2024-01-02T03:04:05Z"}}')::json
  FROM generate_series(1, 500) g;
CREATE SCHEMA "My Schema";
CREATE TABLE "My Schema"."Mixed Table" ("T" int, "Doc" jsonb);
INSERT INTO "My Schema"."Mixed Table" SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 100) g;
CREATE VIEW medium_v AS SELECT * FROM medium;
CREATE TABLE big (id int, doc jsonb);
INSERT INTO big SELECT g, jsonb_build_object('_id', g, 'v', 'value ' || g, 'ok', g % 2 = 0) FROM generate_series(1, 1000000) g;
CREATE MATERIALIZED VIEW mv AS SELECT * FROM medium;
-- slowed down by a pause every 100,000 rows, so that progress lines appear
-- however fast the machine exports
CREATE VIEW big_v AS SELECT * FROM big WHERE id % 100000 <> 0 OR pg_sleep(0.3) IS NOT NULL;
CREATE TABLE lockq (id int, doc jsonb);
-- more than one chunk of --jobs (32 blocks), so that --jobs 2 runs 2 jobs
INSERT INTO lockq SELECT g, jsonb_build_object('i', g) FROM generate_series(1, 20000) g;
CREATE MATERIALIZED VIEW lockmv AS SELECT * FROM lockq;
-- three rows a block (the padding), each with a TOASTed 64 kB document: 100
-- blocks, 4 chunks of 32 for --jobs; one bad Extended JSON wrapper in row 250
CREATE TABLE fat (id int, pad char(2000), doc jsonb);
ALTER TABLE fat ALTER doc SET STORAGE EXTERNAL, ALTER pad SET STORAGE PLAIN;
INSERT INTO fat SELECT g, 'p', jsonb_build_object('_id', g, 'blob',
    (SELECT string_agg(md5(g::text || ':' || k), '') FROM generate_series(1, 2000) k),
    'when', CASE WHEN g = 250 THEN jsonb_build_object('$date', 'not a date')
                 ELSE jsonb_build_object('$date', '2024-01-02T03:04:05Z') END)
  FROM generate_series(1, 300) g;
-- the same, 200 rows, but row 120 (block 39: the second chunk) is a 40 MB
-- document, more than a job of --jobs 2 may hold while it waits (32 MiB)
CREATE TABLE fatbig (id int, pad char(2000), doc jsonb);
ALTER TABLE fatbig ALTER doc SET STORAGE EXTERNAL, ALTER pad SET STORAGE PLAIN;
INSERT INTO fatbig SELECT id, pad, CASE WHEN id = 120 THEN jsonb_build_object('_id', 120, 'blob',
    (SELECT string_agg(md5(k::text), '') FROM generate_series(1, 1250000) k)) ELSE doc END
  FROM fat WHERE id <= 200 ORDER BY id;
VACUUM ANALYZE;
CREATE ROLE noread LOGIN;
CREATE ROLE colonly LOGIN;
GRANT SELECT (doc) ON medium TO colonly;
SQL
# a server that sends corrupt documents: its to_bson(jsonb) is replaced by
# one that puts an unknown type byte (0x42) into the documents marked 'bad'
createdb -T template0 hostile || exit 1
Q -d hostile <<'SQL' || exit 1
CREATE EXTENSION bson_out;
ALTER EXTENSION bson_out DROP FUNCTION to_bson(jsonb);
DROP FUNCTION to_bson(jsonb);
CREATE FUNCTION to_bson(doc jsonb) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE WHEN doc ? 'bad' THEN overlay(public.to_bson(doc, false) PLACING '\x42'::bytea FROM 5 FOR 1)
              ELSE public.to_bson(doc, false) END $$;
-- more than one chunk of --jobs; the bad row in a later one
CREATE TABLE t (id int, doc jsonb);
INSERT INTO t SELECT g, CASE WHEN g = 15000 THEN jsonb_build_object('i', g, 'bad', true)
                             ELSE jsonb_build_object('i', g) END
  FROM generate_series(1, 20000) g;
VACUUM ANALYZE t;
SQL
createdb -T template0 noext || exit 1
Q -d noext -c "CREATE TABLE t (doc jsonb)" || exit 1
# an installation that lacks functions (dropped by hand): to_bson(jsonb) only
createdb -T template0 oldext || exit 1
Q -d oldext <<'SQL' || exit 1
CREATE EXTENSION bson_out;
ALTER EXTENSION bson_out DROP FUNCTION json_to_bson(json, boolean, boolean);
DROP FUNCTION json_to_bson(json, boolean, boolean);
ALTER EXTENSION bson_out DROP FUNCTION row_to_bson(record, boolean);
DROP FUNCTION row_to_bson(record, boolean);
ALTER EXTENSION bson_out DROP FUNCTION to_bson(jsonb, boolean, boolean);
DROP FUNCTION to_bson(jsonb, boolean, boolean);
CREATE TABLE t (j json, b jsonb);
INSERT INTO t VALUES ('{"a": 1}', '{"a": 1}');
SQL
# the previous release, not updated: no bson_document, no bson_collections
createdb -T template0 xdump || exit 1
createdb -T template0 v100 || exit 1
Q -d v100 -c "CREATE EXTENSION bson_out VERSION '1.0.0'" \
	-c "CREATE TABLE t (id int PRIMARY KEY)" -c "INSERT INTO t VALUES (1)" || exit 1

# ---------------------------------------------------------------- exports read back
log "exports read back by pymongo and libbson"
M=$WORK/medium.bson
run "$BIN" --table medium --column doc -o "$M"
[ "$rc" -eq 0 ] || fail "export medium" "$(cat "$WORK/err")"
verify "medium (to_bson of a jsonb column)" "$M" "SELECT to_bson(doc) FROM medium"
if grep -Eq "^pg_bsonexport: 20000 documents \(.*\) written to $M in " "$WORK/err"; then
	pass "summary line: $(cat "$WORK/err")"
else
	fail "summary line" "$(cat "$WORK/err")"
fi
run "$BIN" --table small --column doc -o "$WORK/small.bson" -q
verify "small" "$WORK/small.bson" "SELECT to_bson(doc) FROM small"
[ ! -s "$WORK/err" ] && pass "--quiet: nothing on standard error" || fail "--quiet" "$(cat "$WORK/err")"
T=$WORK/typed.bson
run "$BIN" --table typed -o "$T" -q
verify "typed (bson_document of every row: _id first)" "$T" "SELECT bson_document(t) FROM typed t"
run "$BIN" --table typed --no-id -o "$WORK/typed_noid.bson" -q
verify "typed --no-id (row_to_bson of every row)" "$WORK/typed_noid.bson" "SELECT row_to_bson(t) FROM typed t"
run "$BIN" --table medium_ext --column doc --extended-json -o "$WORK/ext.bson" -q
verify "medium_ext --extended-json (to_bson(doc, true))" "$WORK/ext.bson" "SELECT to_bson(doc, true) FROM medium_ext"
run "$BIN" --table jt --column j -o "$WORK/jt.bson" -q
verify "json column (json_to_bson)" "$WORK/jt.bson" "SELECT json_to_bson(j) FROM jt"
run "$BIN" --table jt --column j --extended-json -o "$WORK/jtx.bson" -q
verify "json column --extended-json" "$WORK/jtx.bson" "SELECT json_to_bson(j, true) FROM jt"
run "$BIN" --query "SELECT row_to_bson(t) FROM typed t WHERE id % 3 = 0;" -o "$WORK/q.bson" -q
verify "--query (trailing semicolon)" "$WORK/q.bson" "SELECT row_to_bson(t) FROM typed t WHERE id % 3 = 0"
# ';' and '--' inside quotes are not the end; a trailing ';', then comments, are cut off
QS="SELECT row_to_bson(t) FROM (SELECT ';' AS a, \$q\$;--\$q\$ AS b, E'\\';--' AS c, \"x;y\"
	FROM (SELECT 1 AS \"x;y\") s) t"
run "$BIN" --query "$QS; -- a comment; with a semicolon
/* a block comment; /* nested; */ */ ;" -o "$WORK/qc.bson" -q
[ "$rc" -eq 0 ] || fail "--query with a trailing comment" "$(cat "$WORK/err")"
verify "--query: quoted ';' and '--' kept, trailing ';' and comments cut" "$WORK/qc.bson" "$QS"
run "$BIN" --table '"My Schema"."Mixed Table"' --column '"Doc"' -o "$WORK/mixed.bson" -q
verify "quoted schema-qualified mixed-case names" "$WORK/mixed.bson" 'SELECT to_bson("Doc") FROM "My Schema"."Mixed Table"'
run "$BIN" --table medium_v --column doc -o "$WORK/view.bson" -q
cmp -s "$WORK/view.bson" "$M" && pass "a view" || fail "a view" "$(cat "$WORK/err")"
run "$BIN" --table nulls --column doc -o "$WORK/nulls.bson"
verify "NULL rows skipped" "$WORK/nulls.bson" "SELECT to_bson(doc) FROM nulls"
grep -q "900 documents .*; 100 NULL rows skipped" "$WORK/err" &&
	pass "NULL rows counted: $(cat "$WORK/err")" || fail "NULL rows counted" "$(cat "$WORK/err")"

# standard output
"$BIN" --table medium --column doc -o - -q >"$WORK/stdout.bson" 2>"$WORK/err"
cmp -s "$WORK/stdout.bson" "$M" && pass "-o - writes the same bytes to standard output" ||
	fail "-o -" "$(cat "$WORK/err")"
"$BIN" --table medium --column doc -q 2>"$WORK/err" | "$WORK/read_libbson" - >"$WORK/libbson.txt" &&
	[ "$(tail -1 "$WORK/libbson.txt")" = "count 20000" ] &&
	pass "default output is standard output, read by libbson from a pipe" ||
	fail "standard output to a pipe" "$(cat "$WORK/err")"

# ---------------------------------------------------------------- --jobs
log "--jobs"
for j in 2 3; do
	run "$BIN" --table medium --column doc -j $j -o "$WORK/medium_j$j.bson" -q
	cmp -s "$WORK/medium_j$j.bson" "$M" && pass "medium --jobs $j: byte-identical to --jobs 1" ||
		fail "medium --jobs $j" "$(cat "$WORK/err")"
done
run "$BIN" --table typed -j 2 -o "$WORK/typed_j2.bson" -q
cmp -s "$WORK/typed_j2.bson" "$T" && pass "typed --jobs 2: byte-identical to --jobs 1" ||
	fail "typed --jobs 2" "$(cat "$WORK/err")"
"$BIN" --table medium --column doc -j 2 -q >"$WORK/stdout_j2.bson" 2>"$WORK/err"
cmp -s "$WORK/stdout_j2.bson" "$M" && pass "--jobs 2 -o -: byte-identical" || fail "--jobs 2 -o -" "$(cat "$WORK/err")"
run "$BIN" --table medium --column doc -j 3 --split -o "$WORK/split.bson" -q
if [ "$rc" -eq 0 ] && [ -f "$WORK/split.0001.bson" ] && [ -f "$WORK/split.0003.bson" ] &&
	[ ! -e "$WORK/split.0004.bson" ] && [ ! -e "$WORK/split.bson" ] &&
	cat "$WORK"/split.000[123].bson | cmp -s - "$M"; then
	pass "--split: split.0001.bson .. split.0003.bson, concatenated = the single file"
else
	fail "--split" "$(cat "$WORK/err"; ls "$WORK")"
fi
ok=1
for f in "$WORK"/split.000[123].bson; do "$WORK/read_libbson" "$f" >/dev/null 2>&1 || ok=0; done
[ $ok = 1 ] && pass "--split: every part is a valid .bson file on its own" || fail "--split parts valid"
run "$BIN" --table medium --column doc -j 2 -o "$WORK/v.bson" -q --verbose
sql=$(sed -n 's/^pg_bsonexport: job 2: COPY (\(.*\)) TO STDOUT (FORMAT binary)$/\1/p' "$WORK/err" | head -1)
plan=$(Q -c "EXPLAIN $sql" 2>&1)
if [ "$(Q -c 'SHOW server_version_num')" -lt 140000 ]; then
	# before 14 there is no TID Range Scan: the ctid range is a filter, and
	# pg_bsonexport says that every job scans the whole table
	if [ -n "$sql" ] && grep -q "Filter: ((ctid >= " <<<"$plan" &&
		grep -q "warning: the server is older than PostgreSQL 14, which has no TID Range Scan" "$WORK/err"; then
		pass "a job's query filters its ctid range (no TID Range Scan before 14), with the warning"
	else
		fail "ctid range filter and warning before 14" "$sql
$plan
$(cat "$WORK/err")"
	fi
elif [ -n "$sql" ] && grep -q "Tid Range Scan" <<<"$plan"; then
	pass "a job's query is a TID Range Scan: $(head -1 <<<"$plan" | sed 's/ *(cost.*//')"
else
	fail "TID Range Scan" "$sql
$plan"
fi

# one file from --jobs: chunks taking turns
nchunks=$(sed -n 's/^pg_bsonexport: \([0-9]*\) chunks of \([0-9]*\) blocks (the last open above); .*/\1/p' "$WORK/err")
ncopies=$(grep -c '^pg_bsonexport: job [12]: COPY' "$WORK/err")
if [ -n "$nchunks" ] && [ "$nchunks" -ge 4 ] && [ "$ncopies" = "$nchunks" ] &&
	[ "$(grep '^pg_bsonexport: job [12]: COPY' "$WORK/err" | grep -vc 'ctid >= ')" = 1 ] &&
	[ "$(grep '^pg_bsonexport: job [12]: COPY' "$WORK/err" | grep -vc 'ctid < ')" = 1 ] &&
	cmp -s "$WORK/v.bson" "$M"; then
	pass "--jobs 2 into one file: $nchunks chunks, one COPY each, the last open above; byte-identical"
else
	fail "--jobs 2 chunks" "$(cat "$WORK/err")"
fi
expect_error "--extended-json error in a chunk names the job and the chunk's blocks" 1 \
	'job [0-9]+ \(blocks [0-9]+ to [0-9]+\): the export query failed after [0-9]+ rows: .*\$date' \
	"$BIN" --table fat --column doc --extended-json -j 2 -o "$WORK/fatx.bson"
no_output "$WORK/fatx.bson" && pass "... and left no file" || fail "fat error left a file" "$(ls -a "$WORK")"
run "$BIN" --table fat --column doc -o "$WORK/fat1.bson" -q
run "$BIN" --table fat --column doc -j 16 -o "$WORK/fat16.bson" -v
if [ "$rc" -eq 0 ] && grep -q "100 blocks make 4 chunks: 4 jobs instead of 16" "$WORK/err" &&
	[ "$(grep -c '^pg_bsonexport: job [0-9]*: COPY' "$WORK/err")" = 4 ] &&
	cmp -s "$WORK/fat1.bson" "$WORK/fat16.bson"; then
	pass "--jobs 16 on a 4-chunk table: 4 jobs, no idle connection; byte-identical"
else
	fail "--jobs 16 on 4 chunks" "rc $rc; $(grep -v COPY "$WORK/err")"
fi
verify "fat --jobs 16, read back" "$WORK/fat16.bson" "SELECT to_bson(doc) FROM fat ORDER BY ctid"
# job 1 writes chunk 1 into a pipe read only after 3 s, so job 2 holds
# chunk 2's rows meanwhile, up to its limit (the 40 MB row): then it waits
"$BIN" --table fatbig --column doc --max-size 64M -o - -q >"$WORK/fatbig1.bson" 2>"$WORK/err"
"$BIN" --table fatbig --column doc --max-size 64M -j 2 -o - -v 2>"$WORK/err" |
	{ sleep 3; cat >"$WORK/fatbig2.bson"; }
if [ "${PIPESTATUS[0]}" -eq 0 ] &&
	grep -q "job 2: chunk 2: holding [0-9]* bytes, all it may; waiting for its turn" "$WORK/err" &&
	cmp -s "$WORK/fatbig1.bson" "$WORK/fatbig2.bson"; then
	pass "--jobs 2, a 40 MB document while the output is stalled: the job waits with its hold full; byte-identical"
else
	fail "--jobs 2 hold limit" "$(grep -v COPY "$WORK/err")"
fi
expect_error "--max-size with --jobs names the row within the chunk" 1 \
	'row 1 of job [0-9]+ \(blocks [0-9]+ to [0-9]+\): the document is [0-9]+ bytes, more than the --max-size limit' \
	"$BIN" --table fat --column doc -j 3 --max-size 1000 -o "$WORK/fatm.bson"

expect_error "--jobs on a view" 1 "needs a plain table" "$BIN" --table medium_v --column doc -j 2 -o "$WORK/x.bson"
run "$BIN" --table mv --column doc -o "$WORK/mv.bson" -q
run "$BIN" --table mv --column doc -j 3 -o "$WORK/mv_j3.bson" -q
[ "$rc" -eq 0 ] && cmp -s "$WORK/mv_j3.bson" "$WORK/mv.bson" && cmp -s "$WORK/mv.bson" "$M" &&
	pass "materialized view --jobs 3 (locked by a query: LOCK TABLE refuses it): byte-identical" ||
	fail "materialized view --jobs 3" "$(cat "$WORK/err")"
run "$BIN" -U colonly --table medium --column doc -o "$WORK/colonly.bson" -q
[ "$rc" -eq 0 ] && cmp -s "$WORK/colonly.bson" "$M" &&
	pass "a column privilege only (no LOCK TABLE): exported unlocked" ||
	fail "column privilege only" "$(cat "$WORK/err")"

# ---------------------------------------------------------------- checks on the way
log "documents checked on the way"
expect_error "--max-size exceeded names the row" 1 \
	"^pg_bsonexport: error: row [0-9]+: the document is [0-9]+ bytes, more than the --max-size limit of 300 bytes" \
	"$BIN" --table medium --column doc --max-size 300 -o "$WORK/max.bson"
no_output "$WORK/max.bson" && pass "--max-size: no file left" || fail "--max-size: files left" "$(ls -a "$WORK")"
BIGDOC="SELECT to_bson(jsonb_build_object('s', repeat('x', 17000000)))"
expect_error "16 MiB default limit" 1 "row 1: the document is 170000[0-9]+ bytes, more than MongoDB's limit of 16777216 bytes \(16 MiB\); use --max-size" \
	"$BIN" --query "$BIGDOC" -o "$WORK/16m.bson"
run "$BIN" --query "$BIGDOC" --max-size 20M -o "$WORK/16m.bson" -q
[ "$rc" -eq 0 ] && [ "$(tail -1 <("$WORK/read_libbson" "$WORK/16m.bson"))" = "count 1" ] &&
	pass "--max-size 20M lets a 17 MB document through" || fail "--max-size 20M" "$(cat "$WORK/err")"
# PostgreSQL's units, 1024-based: kB, MB, GB (and k, M, G)
run "$BIN" --query "$BIGDOC" --max-size 20MB -o "$WORK/16mb.bson" -q
[ "$rc" -eq 0 ] && cmp -s "$WORK/16mb.bson" "$WORK/16m.bson" &&
	pass "--max-size 20MB is 20M" || fail "--max-size 20MB" "$(cat "$WORK/err")"
rm -f "$WORK/16m.bson" "$WORK/16mb.bson"
KDOC="SELECT to_bson(jsonb_build_object('s', repeat('x', 1500)))"
expect_error "--max-size 1kB is 1024 bytes" 1 "the document is 15[0-9]{2} bytes, more than the --max-size limit of 1024 bytes" \
	"$BIN" --query "$KDOC" --max-size 1kB -o "$WORK/k.bson"
run "$BIN" --query "$KDOC" --max-size 2kB -o "$WORK/k.bson" -q
[ "$rc" -eq 0 ] && pass "--max-size 2kB (2048 bytes) lets it through" || fail "--max-size 2kB" "$(cat "$WORK/err")"
rm -f "$WORK/k.bson"
expect_error "usage: --max-size 2GB is over the int32 limit" 2 "from 5 to 2147483647 bytes" \
	"$BIN" --table medium --max-size 2GB -o "$WORK/x.bson"
expect_error "usage: --max-size 1TB" 2 "from 5 to 2147483647 bytes" \
	"$BIN" --table medium --max-size 1TB -o "$WORK/x.bson"
expect_error "invalid BSON: length header" 1 \
	"row 2: the value is not a BSON document: its length header says 6 bytes, but the value has 5 bytes" \
	"$BIN" --query "SELECT b FROM (VALUES (1, to_bson('{\"a\": 1}')), (2, '\\x0600000000'::bytea)) v(i, b) ORDER BY i" -o "$WORK/inv.bson"
expect_error "invalid BSON: last byte" 1 "row 1: the value is not a BSON document: its last byte is 0x01, not 0x00" \
	"$BIN" --query "SELECT '\\x0500000001'::bytea" -o "$WORK/inv.bson"
expect_error "invalid BSON: too short" 1 "row 1: the value is not a BSON document: 3 bytes, fewer than the 5" \
	"$BIN" --query "SELECT '\\x030000'::bytea" -o "$WORK/inv.bson"
expect_error "server error mid-stream" 1 "^pg_bsonexport: error: the export query failed after 2 rows: number at a is out of range for BSON" \
	"$BIN" --query "SELECT to_bson(('{\"a\": ' || CASE WHEN g = 3 THEN '1234567890123456789012345678901234567891e400' ELSE '1' END || '}')::jsonb) FROM generate_series(1, 5) g" -o "$WORK/inv.bson"
no_output "$WORK/inv.bson" && pass "invalid BSON, server error: no file left" || fail "invalid BSON: files left"

# the full validation (the default): corrupt documents made by overlay() on
# to_bson's output; with --no-validate only the framing is checked
hex_file() { od -An -v -tx1 "$1" | tr -d ' \n'; }
# invalid_doc NAME SQL REGEX: refused with the validator's byte offset and
# reason, leaving no file; with --no-validate written as the query returns it
invalid_doc() {
	local name=$1 sql=$2 re=$3 f=$WORK/invalid.bson want
	expect_error "validation: $name" 1 "$re" "$BIN" --query "$sql" -o "$f"
	no_output "$f" && pass "validation: $name: no file left" ||
		fail "validation: $name: a file left" "$(ls -a "$WORK")"
	want=$(Q -c "SELECT encode(b, 'hex') FROM ($sql) q(b)" 2>&1 | tr -d '\n')
	run "$BIN" --query "$sql" -o "$f" -q --no-validate
	if [ "$rc" -eq 0 ] && [ "$(hex_file "$f")" = "$want" ]; then
		pass "--no-validate: $name written as is"
	else
		fail "--no-validate: $name" "rc $rc; $(cat "$WORK/err"); want $want, got $(hex_file "$f")"
	fi
	rm -f "$f"
}
NESTED="SELECT b FROM (VALUES (1, to_bson('{\"a\": {\"b\": 1}}')),
	(2, overlay(to_bson('{\"a\": {\"b\": 1}}') PLACING '\\x0d000000'::bytea FROM 8 FOR 4))) v(i, b) ORDER BY i"
invalid_doc "a wrong inner length" "$NESTED" \
	"^pg_bsonexport: error: row 2: the document is not valid BSON at byte offset 7: embedded document length 13 exceeds the 12 bytes available$"
invalid_doc "invalid UTF-8 in a string" \
	"SELECT overlay(to_bson('{\"s\": \"abc\"}') PLACING '\\xff'::bytea FROM 13 FOR 1)" \
	"^pg_bsonexport: error: row 1: the document is not valid BSON at byte offset 12: string is not valid UTF-8$"
invalid_doc "an unknown type byte" \
	"SELECT overlay(to_bson('{\"s\": \"abc\"}') PLACING '\\x42'::bytea FROM 5 FOR 1)" \
	"^pg_bsonexport: error: row 1: the document is not valid BSON at byte offset 4: unknown element type 0x42$"
# nested n levels below the top-level document
deep() { echo "SELECT to_bson((repeat('{\"a\": ', $(($1 + 1))) || '1' || repeat('}', $(($1 + 1))))::jsonb)"; }
invalid_doc "nested deeper than the limit (201 levels)" "$(deep 201)" \
	"^pg_bsonexport: error: row 1: the document is not valid BSON at byte offset [0-9]+: embedded document is nested deeper than 200 levels$"
run "$BIN" --query "$(deep 200)" -o "$WORK/deep.bson" -q
[ "$rc" -eq 0 ] && [ "$(hex_file "$WORK/deep.bson")" = "$(Q -c "SELECT encode(b, 'hex') FROM ($(deep 200)) q(b)")" ] &&
	pass "validation: 200 levels of nesting, the limit, are exported" || fail "validation: 200 levels" "$(cat "$WORK/err")"
expect_error "validation with --jobs 2 names the row within the job's chunk" 1 \
	'^pg_bsonexport: error: row [0-9]+ of job [0-9]+ \(blocks [0-9]+ to [0-9]+\): the document is not valid BSON at byte offset 4: unknown element type 0x42$' \
	"$BIN" -d hostile --table t --column doc -j 2 -o "$WORK/hostile.bson"
no_output "$WORK/hostile.bson" && pass "validation with --jobs 2: no file left" ||
	fail "validation with --jobs 2: a file left" "$(ls -a "$WORK")"
run "$BIN" -d hostile --table t --column doc -j 2 -o "$WORK/hostile.bson" -q --no-validate
if [ "$rc" -eq 0 ] && [ "$(hex_file "$WORK/hostile.bson")" = \
	"$(Q -d hostile -c "SELECT encode(string_agg(to_bson(doc), ''::bytea ORDER BY ctid), 'hex') FROM t")" ]; then
	pass "--no-validate --jobs 2: the corrupt document written as is"
else
	fail "--no-validate --jobs 2" "rc $rc; $(cat "$WORK/err")"
fi
# into a file: grep -q would stop reading a help longer than a pipe's write
"$BIN" --help >"$WORK/help.txt"
grep -q -- "--no-validate" "$WORK/help.txt" && pass "--help describes --no-validate" || fail "--help: --no-validate"
grep -q -- "--no-id .*row_to_bson" "$WORK/help.txt" && grep -q -- "--out-dir=DIR" "$WORK/help.txt" &&
	grep -q -- "--exclude-tables=LIST" "$WORK/help.txt" &&
	pass "--help describes --no-id, --out-dir, --exclude-tables" || fail "--help: the new options"
[ "$("$BIN" --version)" = "pg_bsonexport 1.3.0" ] && pass "--version: pg_bsonexport 1.3.0" ||
	fail "--version" "$("$BIN" --version)"

# ---------------------------------------------------------------- --out-dir
log "--out-dir: dump directories from bson_collections()"
Q -d xdump <<'SQL' >/dev/null || exit 1
CREATE EXTENSION bson_out;
CREATE TABLE a (id int PRIMARY KEY, v text);
INSERT INTO a SELECT g, 'v' || g FROM generate_series(1, 1000) g;
CREATE UNIQUE INDEX a_v ON a (v);
CREATE TABLE b (x int, y text, z numeric, PRIMARY KEY (x, y));
INSERT INTO b SELECT g, 'y' || g, g / 3.0 FROM generate_series(1, 500) g;
CREATE TABLE nokey (n int, "_id" text);
INSERT INTO nokey SELECT g, 'id' || g FROM generate_series(1, 100) g;
CREATE TABLE p (id int, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (10);
CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (10) TO (20);
INSERT INTO p SELECT g, g % 20 FROM generate_series(1, 300) g;
CREATE SCHEMA s;
CREATE TABLE s."we/ird$.na me" (id int PRIMARY KEY);
INSERT INTO s."we/ird$.na me" VALUES (1), (2);
-- a collection name longer than a file name may be: cut, with its hash
CREATE SCHEMA "$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$";
CREATE TABLE "$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$"."///////////////////////////////////////////////////////////////" (id int PRIMARY KEY);
INSERT INTO "$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$"."///////////////////////////////////////////////////////////////" VALUES (7);
-- 2048 blocks and more: split into block ranges with --jobs
CREATE TABLE large (id int PRIMARY KEY, pad text);
INSERT INTO large SELECT g, repeat('x', 100) FROM generate_series(1, 200000) g;
CREATE UNLOGGED TABLE unlogged (id int PRIMARY KEY);
CREATE VIEW av AS SELECT * FROM a;
VACUUM ANALYZE;
SQL
D=$WORK/dump
# check_dump NAME DIR [check_dump.py selection options]: the files against bson_collections()
check_dump() {
	local name=$1 dir=$2 out
	shift 2
	if out=$("$PYTHON" test/exporter/check_dump.py --dbname xdump --dir "$dir" "$@" 2>&1); then
		pass "$name: $out"
	else
		fail "$name" "$out"
	fi
}
run "$BIN" -d xdump --out-dir "$D/j1"
[ "$rc" -eq 0 ] || fail "--out-dir" "$(cat "$WORK/err")"
check_dump "--out-dir: DIR/<db>/<coll>.bson and .metadata.json, read back by pymongo and json_util" "$D/j1"
if grep -Eq "^pg_bsonexport: 7 collections \(8 tables\), [0-9]+ documents \(.*\) written to $D/j1 in " "$WORK/err"; then
	pass "--out-dir summary: $(cat "$WORK/err")"
else
	fail "--out-dir summary" "$(cat "$WORK/err")"
fi
[ -f "$D/j1/xdump/p.bson" ] && [ ! -e "$D/j1/xdump/p1.bson" ] &&
	[ -f "$D/j1/xdump/s.we%2Fird%24.na+me.bson" ] && [ ! -e "$D/j1/xdump/unlogged.bson" ] &&
	[ ! -e "$D/j1/xdump/av.bson" ] &&
	[ "$(ls "$D/j1/xdump" | grep -c '^%24%24.*%2F%2F.*%24[A-Za-z0-9_-]\{27\}\.bson$')" = 1 ] &&
	pass "--out-dir: partitions in their root's file, names escaped as mongodump does (a long one cut), no unlogged table, no view" ||
	fail "--out-dir file names" "$(ls "$D/j1/xdump")"
run "$BIN" -d xdump --out-dir "$D/j4" -j 4 -v
ok=$([ "$rc" -eq 0 ] && (cd "$D/j1" && find . -type f | sort) | cmp -s - <(cd "$D/j4" && find . -type f | sort) && echo 1)
for f in "$D"/j1/xdump/*; do cmp -s "$f" "$D/j4/xdump/$(basename "$f")" || ok=; done
ranges=$(grep -c "job [0-9]: public.large, blocks" "$WORK/err")
# block ranges need a TID Range Scan (PostgreSQL 14): before, a table is one part
if [ "$(Q -c 'SHOW server_version_num')" -lt 140000 ]; then want_ranges=0; else want_ranges=2; fi
[ -n "$ok" ] && [ "$ranges" -ge "$want_ranges" ] &&
	pass "--out-dir --jobs 4: every file byte-identical to --jobs 1; the large table in $ranges block ranges" ||
	fail "--out-dir --jobs 4" "ranges $ranges; $(tail -5 "$WORK/err")"
run "$BIN" -d xdump --table a -o "$WORK/a.bson" -q
cmp -s "$WORK/a.bson" "$D/j1/xdump/a.bson" &&
	pass "--table a: the documents of the dump's a.bson (bson_document, _id first)" ||
	fail "--table a against the dump" "$(cat "$WORK/err")"

# the selection: a comma-separated list, repeated options, exclusions, names
run "$BIN" -d xdump --out-dir "$D/list" --include-tables 'public.a, public.b' -q
check_dump "--include-tables 'public.a, public.b'" "$D/list" --include 'public.a, public.b'
run "$BIN" -d xdump --out-dir "$D/rep" --include-tables public.a --include-tables public.b -q
[ "$(cd "$D/list" && find . -type f | sort)" = "$(cd "$D/rep" && find . -type f | sort)" ] &&
	[ "$(cd "$D/rep" && find . -type f | sort | tr '\n' ' ')" = "./xdump/a.bson ./xdump/a.metadata.json ./xdump/b.bson ./xdump/b.metadata.json " ] &&
	pass "--include-tables repeated selects what one comma-separated list does" ||
	fail "--include-tables repeated" "$(cd "$D/rep" && find . -type f)"
run "$BIN" -d xdump --out-dir "$D/excl" --exclude-tables 'public.l*' --exclude-tables 's.*' -q
check_dump "--exclude-tables 'public.l*' --exclude-tables 's.*'" "$D/excl" --exclude 'public.l*' --exclude 's.*'
[ ! -e "$D/excl/xdump/large.bson" ] && [ -f "$D/excl/xdump/a.bson" ] && pass "--exclude-tables: large left out" ||
	fail "--exclude-tables" "$(ls "$D/excl/xdump")"
run "$BIN" -d xdump --out-dir "$D/names" --ns-db other --include-schema --no-partition-root \
	--include-tables 'public.p, public.a' -q
check_dump "--ns-db other --include-schema --no-partition-root" "$D/names" --ns-db other --include-schema \
	--no-partition-root --include 'public.p, public.a'
[ -f "$D/names/other/public.p1.bson" ] && [ -f "$D/names/other/public.a.bson" ] &&
	pass "--ns-db, --include-schema, --no-partition-root: other/public.p1.bson, other/public.a.bson" ||
	fail "--ns-db and friends" "$(find "$D/names")"
run "$BIN" -d xdump --out-dir "$D/warn" --include-tables 'public.a, public.nope'
[ "$rc" -eq 0 ] && grep -q 'pg_bsonexport: WARNING:  include-tables pattern "public.nope" selects no table' "$WORK/err" &&
	[ -f "$D/warn/xdump/a.bson" ] &&
	pass "the server's warning is shown: $(grep WARNING "$WORK/err")" || fail "selects no table warning" "$(cat "$WORK/err")"

# a LATIN1 database: file names escaped from UTF-8 (caf%C3%A9, as mongodump
# escapes "café"), metadata.json in UTF-8
createdb -T template0 -E LATIN1 --lc-collate=C --lc-ctype=C xdump_latin1 &&
	psql -qX -v ON_ERROR_STOP=1 -d xdump_latin1 -f - >/dev/null <<'SQL'
CREATE EXTENSION bson_out;
SELECT E'caf\xe9' AS t \gset
CREATE TABLE :"t" (id int PRIMARY KEY, v text UNIQUE);
INSERT INTO :"t" VALUES (1, E'cr\xe8me');
SQL
run "$BIN" -d xdump_latin1 --out-dir "$D/latin1" -q
if [ "$rc" -eq 0 ] && [ -f "$D/latin1/xdump_latin1/caf%C3%A9.bson" ] &&
	"$PYTHON" -c '
import json, sys, bson
meta = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
docs = list(bson.decode_file_iter(open(sys.argv[2], "rb")))
assert meta["collectionName"] == "caf\u00e9", meta
assert docs == [{"_id": 1, "id": 1, "v": "cr\u00e8me"}], docs
' "$D/latin1/xdump_latin1/caf%C3%A9.metadata.json" "$D/latin1/xdump_latin1/caf%C3%A9.bson" 2>"$WORK/py"; then
	pass "--out-dir in a LATIN1 database: caf%C3%A9.bson, UTF-8 metadata and documents"
else
	fail "--out-dir in a LATIN1 database" "rc $rc; $(cat "$WORK/err" "$WORK/py"); $(ls "$D/latin1"/* 2>&1)"
fi

# child tables embedded in their parent's documents (bson_embed): the
# parent's file holds them, read set-based, byte for byte bson_document()'s;
# no file for an embedded table; the declarations survive pg_dump
createdb xembed && psql -qX -v ON_ERROR_STOP=1 -d xembed -f - >/dev/null <<'SQL'
CREATE EXTENSION bson_out;
CREATE TABLE orders (id int PRIMARY KEY, customer text);
CREATE TABLE order_lines (order_id int REFERENCES orders, line_no int, item text,
	PRIMARY KEY (order_id, line_no));
CREATE TABLE line_taxes (order_id int, line_no int, tax text, rate numeric,
	PRIMARY KEY (order_id, line_no, tax), FOREIGN KEY (order_id, line_no) REFERENCES order_lines);
INSERT INTO orders SELECT g, 'c' || g FROM generate_series(1, 3000) g;
INSERT INTO order_lines SELECT o, l, 'item' || l FROM generate_series(1, 3000) o, generate_series(1, o % 7) l;
INSERT INTO line_taxes SELECT order_id, line_no, t, 0.1 FROM order_lines, unnest('{vat,eco}'::text[]) t WHERE line_no % 2 = 0;
SELECT bson_embed('order_lines', 'orders', 'lines');
SELECT bson_embed('line_taxes', 'order_lines', 'taxes');
SQL
run "$BIN" -d xembed --out-dir "$D/embed" -q
Q -d xembed -c "COPY (SELECT encode(bson_document(o), 'hex') FROM orders o ORDER BY id) TO STDOUT" >"$WORK/embed_want"
if [ "$rc" -eq 0 ] && [ "$(ls "$D/embed/xembed" | tr '\n' ' ')" = "orders.bson orders.metadata.json " ] &&
	"$PYTHON" -c '
import sys, bson
docs = sorted(bson.decode_file_iter(open(sys.argv[1], "rb"), codec_options=bson.codec_options.CodecOptions(document_class=bson.SON)), key=lambda d: d["_id"])
got = [bson.encode(d).hex() for d in docs]
want = open(sys.argv[2]).read().split()
assert got == want, (len(got), len(want))
assert docs[5]["lines"][5]["taxes"][0]["tax"] == "eco", docs[5]
' "$D/embed/xembed/orders.bson" "$WORK/embed_want" 2>"$WORK/py"; then
	pass "--out-dir with embedded tables: orders.bson alone, each document bson_document()'s, lines and taxes inside"
else
	fail "--out-dir with embedded tables" "rc $rc; $(cat "$WORK/err" "$WORK/py"); $(ls "$D/embed"/* 2>&1)"
fi
# the same documents (a join's rows come in the order its plan gives them)
same_documents() {
	"$PYTHON" -c '
import sys, bson
a, b = (sorted(bson.encode(d) for d in bson.decode_file_iter(open(f, "rb"))) for f in sys.argv[1:])
sys.exit(0 if a == b and a else 1)' "$1" "$2"
}
run "$BIN" -d xembed --out-dir "$D/embed4" -j 4 -q
[ "$rc" -eq 0 ] && same_documents "$D/embed/xembed/orders.bson" "$D/embed4/xembed/orders.bson" &&
	pass "--out-dir --jobs 4 with embedded tables: the same documents" || fail "--out-dir -j 4 with embedded tables" "$(cat "$WORK/err")"
run "$BIN" -d xembed --table orders -o "$WORK/orders.bson" -q
same_documents "$WORK/orders.bson" "$D/embed/xembed/orders.bson" &&
	pass "--table orders: the documents of the dump's orders.bson" || fail "--table orders with embedded tables" "$(cat "$WORK/err")"
createdb xembed_restored && pg_dump -Fc -d xembed -f "$WORK/xembed.dump" &&
	pg_restore -d xembed_restored "$WORK/xembed.dump" 2>"$WORK/restore.err"
if [ "$(Q -d xembed_restored -c "SELECT string_agg(child || '>' || parent || ':' || field, ' ' ORDER BY field) FROM bson_embedding")" = \
	"order_lines>orders:lines line_taxes>order_lines:taxes" ] &&
	[ "$(Q -d xembed_restored -c "COPY (SELECT encode(bson_document(o), 'hex') FROM orders o ORDER BY id) TO STDOUT" | md5sum)" = \
	"$(md5sum <"$WORK/embed_want")" ]; then
	pass "pg_dump and pg_restore keep the embeddings (bson_embedding is a configuration table)"
else
	fail "pg_dump keeps the embeddings" "$(cat "$WORK/restore.err")"
fi

# existing files, usage
before=$(md5sum <"$D/j1/xdump/a.bson")
expect_error "--out-dir: an existing collection file without --force" 1 \
	"output file \"$D/j1/xdump/[^\"]*\" already exists \(and others\); use --force to overwrite them" \
	"$BIN" -d xdump --out-dir "$D/j1"
[ "$(md5sum <"$D/j1/xdump/a.bson")" = "$before" ] && ! compgen -G "$D/j1/xdump/.*.tmp.*" >/dev/null &&
	pass "--out-dir without --force: nothing touched" || fail "--out-dir without --force changed files"
: >"$D/rep/xdump/a.bson"
run "$BIN" -d xdump --out-dir "$D/rep" --include-tables public.a -q
[ "$rc" -eq 0 ] && cmp -s "$D/rep/xdump/a.bson" "$D/j1/xdump/a.bson" &&
	pass "--out-dir: an empty collection file is replaced without --force" || fail "empty file replaced" "$(cat "$WORK/err")"
run "$BIN" -d xdump --out-dir "$D/j1" --force -j 2 -q
check_dump "--out-dir --force -j 2 over an earlier dump" "$D/j1"
# values without a BSON mapping: the session's setting (error) by default,
# --unmappable-values fallback writes them without loss, in every mode
psql -qX -d xdump -c "CREATE TABLE poisoned (id int PRIMARY KEY, valid_to timestamptz DEFAULT 'infinity', n numeric)" \
	-c "INSERT INTO poisoned VALUES (1, DEFAULT, 1234567890123456789012345678901234567.5)" >/dev/null
expect_error "--table with an infinite timestamp: error by default, naming the column" 1 \
	'cannot convert infinite timestamp in "valid_to"' \
	"$BIN" -d xdump --table poisoned -o "$WORK/poisoned.bson"
run "$BIN" -d xdump --table poisoned --unmappable-values fallback -o "$WORK/poisoned.bson" -q
run2=$rc
run "$BIN" -d xdump --out-dir "$D/poisoned" --include-tables public.poisoned --unmappable-values fallback -q
if [ "$run2" -eq 0 ] && [ "$rc" -eq 0 ] && cmp -s "$WORK/poisoned.bson" "$D/poisoned/xdump/poisoned.bson" &&
	"$PYTHON" -c '
import sys, datetime, bson
docs = list(bson.decode_file_iter(open(sys.argv[1], "rb")))
assert docs == [{"_id": 1, "id": 1, "valid_to": datetime.datetime(9999, 12, 31, 23, 59, 59, 999000),
                 "n": "1234567890123456789012345678901234567.5"}], docs
' "$WORK/poisoned.bson" 2>"$WORK/py"; then
	pass "--unmappable-values fallback: infinity as 9999-12-31T23:59:59.999Z, the numeric's digits, --table and --out-dir alike"
else
	fail "--unmappable-values fallback" "rc $run2/$rc; $(cat "$WORK/err" "$WORK/py")"
fi
expect_error "--unmappable-values takes error or fallback" 2 'invalid --unmappable-values "on": use error or fallback' \
	"$BIN" -d xdump --table poisoned --unmappable-values on -o "$WORK/poisoned.bson"
psql -qX -d xdump -c "DROP TABLE poisoned" >/dev/null
expect_error "usage: --out-dir with --table" 2 "--out-dir .* cannot be combined with --table" \
	"$BIN" -d xdump --out-dir "$D/x" --table a
expect_error "usage: --out-dir with --output" 2 "--out-dir .* cannot be combined with --output" \
	"$BIN" -d xdump --out-dir "$D/x" -o "$WORK/x.bson"
expect_error "usage: --out-dir with --query" 2 "--out-dir .* cannot be combined with --query" \
	"$BIN" -d xdump --out-dir "$D/x" --query "SELECT 1"
expect_error "usage: --include-tables without --out-dir" 2 "they need --out-dir DIR" \
	"$BIN" -d xdump --table a --include-tables public.a -o "$WORK/x.bson"
expect_error "usage: --no-id with --column" 2 "--no-id applies to whole rows" \
	"$BIN" -d xdump --table a --column v --no-id -o "$WORK/x.bson"
expect_error "--out-dir: a document over --max-size names the table" 1 \
	"row 1 of job 1 \(public.large\): the document is [0-9]+ bytes, more than the --max-size limit of 100 bytes" \
	"$BIN" -d xdump --out-dir "$D/max" --include-tables 'public.a, public.large' --max-size 100
[ -z "$(find "$D/max" -name '*.tmp.*')" ] && [ ! -e "$D/max/xdump/large.bson" ] &&
	pass "--out-dir: a failed dump leaves no temporary file" || fail "--out-dir failure left files" "$(find "$D/max")"
expect_error "--out-dir: a database name mongorestore refuses" 1 \
	"the database name \"bad.name\" cannot be a directory of the dump: .* mongorestore refuses such names" \
	"$BIN" -d xdump --out-dir "$D/x" --ns-db bad.name
grep -q "^hint: name the database with --ns-db NAME" "$WORK/err" &&
	pass "--out-dir: the hint names --ns-db" || fail "--ns-db hint" "$(cat "$WORK/err")"
[ ! -e "$D/x" ] && pass "refused dumps leave no directory" || fail "refused dumps left files" "$(find "$D/x")"

# ---------------------------------------------------------------- refused
log "refused queries, names, connections, permissions"
expect_error "query returning text" 1 \
	"^pg_bsonexport: error: query must return exactly one bytea column; it returns 1 column: t text$" \
	"$BIN" --query "SELECT doc::text AS t FROM medium" -o "$WORK/x.bson"
expect_error "query returning two columns" 1 \
	"^pg_bsonexport: error: query must return exactly one bytea column; it returns 2 columns: id integer, b bytea$" \
	"$BIN" --query "SELECT id, to_bson(doc) AS b FROM medium" -o "$WORK/x.bson"
expect_error "query with a syntax error" 1 "the query failed: syntax error at or near" \
	"$BIN" --query "SELEC to_bson(doc) FROM medium" -o "$WORK/x.bson"
expect_error "unknown table" 1 '^pg_bsonexport: error: table "nosuch" does not exist$' \
	"$BIN" --table nosuch -o "$WORK/x.bson"
expect_error "unknown column" 1 'column "nope" does not exist in table public.medium' \
	"$BIN" --table medium --column nope -o "$WORK/x.bson"
expect_error "column of another type" 1 "column id of table public.medium has type integer; --column needs a jsonb or json column" \
	"$BIN" --table medium --column id -o "$WORK/x.bson"
expect_error "not a table" 1 '"medium_pkey" is an index' "$BIN" --table medium_pkey -o "$WORK/x.bson"
expect_error "extension not installed" 1 'the bson_out extension is not installed in database "noext"' \
	"$BIN" -d noext --table t --column doc -o "$WORK/x.bson"
expect_error "bad connection" 1 "^pg_bsonexport: error: could not connect to the database: " \
	"$BIN" -h "$WORK" -p 1 --table medium -o "$WORK/x.bson"
expect_error "unknown database" 1 'could not connect to the database: .*database "nosuchdb" does not exist' \
	"$BIN" -d nosuchdb --table medium -o "$WORK/x.bson"
expect_error "permission denied" 1 'permission denied for table medium' \
	"$BIN" -U noread --table medium --column doc -o "$WORK/x.bson"
grep -q 'hint: .*GRANT SELECT ON public.medium TO "noread"' "$WORK/err" &&
	pass "permission denied: the hint names the GRANT" || fail "permission hint" "$(cat "$WORK/err")"
expect_error "permission denied with --jobs 2" 1 'permission denied for table medium' \
	"$BIN" -U noread --table medium -j 2 -o "$WORK/x.bson"
expect_error "permission denied in a query" 1 'permission denied for table typed' \
	"$BIN" -U noread --query "SELECT row_to_bson(t) FROM typed t" -o "$WORK/x.bson"
no_output "$WORK/x.bson" && pass "refused exports leave no file" || fail "refused exports left files" "$(ls -a "$WORK")"
expect_error "usage: --table and --query" 2 "give either --table NAME, --query SQL or --out-dir DIR" \
	"$BIN" --table medium --query "SELECT 1" -o "$WORK/x.bson"
expect_error "usage: --jobs with --query" 2 "--jobs needs --table" \
	"$BIN" --query "SELECT to_bson(doc) FROM medium" -j 2 -o "$WORK/x.bson"
expect_error "usage: bad --max-size" 2 "invalid --max-size" "$BIN" --table medium --max-size 12Q -o "$WORK/x.bson"
# every number, size and duration option is read whole, in decimal, by one
# helper: anything else is a usage error naming the option and the value
# (exit 2, then the --help pointer, nothing else)
expect_usage() {
	local opt=$1 v=$2 want="pg_bsonexport: error: invalid $1 \"$2\": give $3"
	run "$BIN" --table medium --column doc "$opt" "$v" -o "$WORK/x.bson"
	if [ "$rc" -eq 2 ] && [ "$(cat "$WORK/err")" = "$want"$'\nTry "pg_bsonexport --help" for more information.' ]; then
		pass "usage: $opt '$v': exit 2, said"
	else
		fail "usage: $opt '$v'" "exit $rc, expected 2 and: $want; stderr: $(cat "$WORK/err")"
	fi
}
JUNK=("" nan inf -inf -1 +5 " 5" "5 " 0x10 12abc 1e3 99999999999999999999)
for v in "${JUNK[@]}" 0 65 1.5 4294967297; do
	expect_usage --jobs "$v" "a whole number from 1 to 64"
done
for v in "${JUNK[@]}" 0 4 4B 12Q "5 MB" 2G 1TB 18446744073709551616; do
	expect_usage --max-size "$v" "bytes, or a number with a unit kB, MB, GB or TB (1024-based), from 5 to 2147483647 bytes (2 GiB - 1, as BSON's length is an int32; 2047MB is the largest in MB)"
done
for v in "${JUNK[@]}" abc 5x 5sec 0.0001 25d 2147483648 99999999999999999999999999999999999999999999; do
	expect_usage --lock-wait-timeout "$v" "a duration in ms, s, min, h or d (a bare number is in milliseconds, as PostgreSQL's lock_timeout), e.g. 30s, at most 2147483647ms; 0 waits as long as it takes"
done
# ... and a valid value of each is taken as before
run "$BIN" --table medium --column doc --jobs 2 --max-size 16MB --lock-wait-timeout 1.5s -o "$WORK/x.bson" -q
[ "$rc" -eq 0 ] && cmp -s "$WORK/x.bson" "$M" &&
	pass "--jobs 2 --max-size 16MB --lock-wait-timeout 1.5s: taken; byte-identical" ||
	fail "--jobs 2 --max-size 16MB --lock-wait-timeout 1.5s" "rc $rc; $(cat "$WORK/err")"
rm -f "$WORK/x.bson"
expect_error "usage: --max-size too large names the real maximum" 2 "from 5 to 2147483647 bytes" \
	"$BIN" --table medium --max-size 2G -o "$WORK/x.bson"
run "$BIN" --table medium --column doc --max-size 2047M -o "$WORK/x.bson" -q
[ "$rc" -eq 0 ] && pass "--max-size 2047M is accepted" || fail "--max-size 2047M" "$(cat "$WORK/err")"
rm -f "$WORK/x.bson"
expect_error "usage: --split without --jobs" 2 "--split needs --jobs N" \
	"$BIN" --table medium --split -o "$WORK/x.bson"
expect_error "query with a second statement" 1 \
	"^pg_bsonexport: error: --query takes one query, but this one goes on after a ';': \"SELECT 2\"$" \
	"$BIN" --query "SELECT to_bson('{}'::jsonb); SELECT 2" -o "$WORK/x.bson"
expect_error "query of comments only" 1 "the query is empty" "$BIN" --query " -- nothing;" -o "$WORK/x.bson"
expect_error "json column, json_to_bson missing" 1 \
	"exporting a json column needs the function json_to_bson, which the bson_out extension in database \"oldext\" \(version 1.3.0\) does not have" \
	"$BIN" -d oldext --table t --column j -o "$WORK/x.bson"
grep -q "hint: reinstall the extension's files (make install) and run DROP EXTENSION bson_out; CREATE EXTENSION bson_out; or ALTER EXTENSION bson_out UPDATE;" "$WORK/err" &&
	pass "functions missing: the hint says how to reinstall" || fail "functions missing hint" "$(cat "$WORK/err")"
expect_error "whole rows --no-id, row_to_bson missing" 1 "needs the function row_to_bson, which the bson_out extension" \
	"$BIN" -d oldext --table t --no-id -o "$WORK/x.bson"
expect_error "whole rows in bson_out 1.0.0: bson_document missing" 1 \
	"exporting whole rows with _id .* needs the function bson_document, which the bson_out extension in database \"v100\" \(version 1.0.0\) does not have" \
	"$BIN" -d v100 --table t -o "$WORK/x.bson"
grep -q "ALTER EXTENSION bson_out UPDATE;" "$WORK/err" &&
	pass "bson_out 1.0.0: the hint names ALTER EXTENSION bson_out UPDATE" || fail "1.0.0 hint" "$(cat "$WORK/err")"
run "$BIN" -d v100 --table t --no-id -o "$WORK/v100.bson" -q
[ "$rc" -eq 0 ] && [ "$(tail -1 <("$WORK/read_libbson" "$WORK/v100.bson"))" = "count 1" ] &&
	pass "bson_out 1.0.0: --no-id exports with row_to_bson" || fail "1.0.0 --no-id" "$(cat "$WORK/err")"
rm -f "$WORK/v100.bson"
expect_error "--out-dir in bson_out 1.0.0: bson_collections missing" 1 \
	"a dump needs the function bson_collections\(.*\), which the bson_out extension in database \"v100\" \(version 1.0.0\) does not have" \
	"$BIN" -d v100 --out-dir "$WORK/v100"
grep -q "ALTER EXTENSION bson_out UPDATE;" "$WORK/err" &&
	pass "--out-dir in bson_out 1.0.0: the hint names ALTER EXTENSION bson_out UPDATE" ||
	fail "--out-dir 1.0.0 hint" "$(cat "$WORK/err")"
expect_error "--extended-json, to_bson(jsonb, boolean) missing" 1 "needs the function to_bson\(jsonb, boolean\), which" \
	"$BIN" -d oldext --table t --column b --extended-json -o "$WORK/x.bson"
run "$BIN" -d oldext --table t --column b -o "$WORK/old.bson" -q
[ "$rc" -eq 0 ] && [ "$(tail -1 <("$WORK/read_libbson" "$WORK/old.bson"))" = "count 1" ] &&
	pass "a jsonb column with to_bson(jsonb) alone" || fail "jsonb with to_bson(jsonb) alone" "$(cat "$WORK/err")"
expect_error "output directory missing" 1 "could not create the temporary output file .*No such file or directory" \
	"$BIN" --table medium --column doc -o "$WORK/nodir/x.bson"

# ---------------------------------------------------------------- row-level security
# read with row_security off, as pg_dump: a table whose policies apply to the
# role is an error naming it, never a part of the table exported without a
# word; --enable-row-security exports what the policies show
log "row-level security"
Q <<'SQL' || exit 1
CREATE TABLE rls (id int PRIMARY KEY, owner text, doc jsonb);
INSERT INTO rls SELECT g, CASE WHEN g % 4 = 0 THEN 'rlsuser' ELSE 'other' END, jsonb_build_object('g', g)
  FROM generate_series(1, 100) g;
ALTER TABLE rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON rls USING (owner = current_user);
CREATE ROLE rlsuser LOGIN;
CREATE ROLE rlsbypass LOGIN BYPASSRLS;
GRANT SELECT ON rls TO rlsuser, rlsbypass;
SQL
RLS_ERR='query would be affected by row-level security policy for table "rls"'
expect_error "row-level security, --table: refused" 1 "the export query failed: $RLS_ERR" \
	"$BIN" -U rlsuser --table rls -o "$WORK/rls.bson"
grep -q 'hint: the role "rlsuser" is subject to the row-level security policies of that table.*reads with row_security off.*give --enable-row-security' "$WORK/err" &&
	pass "row-level security: the hint names the role, a role that bypasses them and --enable-row-security" ||
	fail "row-level security hint" "$(cat "$WORK/err")"
expect_error "row-level security, --table --jobs 2: refused" 1 "$RLS_ERR" \
	"$BIN" -U rlsuser --table rls -j 2 -o "$WORK/rls.bson"
expect_error "row-level security, --query: refused" 1 "$RLS_ERR" \
	"$BIN" -U rlsuser --query "SELECT to_bson(doc) FROM rls" -o "$WORK/rls.bson"
no_output "$WORK/rls.bson" && pass "row-level security: no file left" || fail "row-level security: files left" "$(ls -a "$WORK")"
expect_error "row-level security, --out-dir: refused" 1 "$RLS_ERR" \
	"$BIN" -U rlsuser --out-dir "$WORK/rlsdump" --include-tables public.rls
[ ! -e "$WORK/rlsdump/$DB/rls.bson" ] && pass "row-level security, --out-dir: no rls.bson" ||
	fail "row-level security, --out-dir: rls.bson written" "$(ls -la "$WORK/rlsdump/$DB")"
rm -rf "$WORK/rlsdump" "$WORK/rls.bson"
run "$BIN" -U rlsuser --table rls --enable-row-security -o "$WORK/rls.bson" -q
[ "$rc" -eq 0 ] || fail "--enable-row-security" "$(cat "$WORK/err")"
verify "--enable-row-security: the 25 rows the policy shows the role" "$WORK/rls.bson" \
	"SELECT bson_document(t) FROM rls t WHERE owner = 'rlsuser'"
run "$BIN" -U rlsuser --out-dir "$WORK/rlsdump" --include-tables public.rls --enable-row-security -q
[ "$rc" -eq 0 ] || fail "--out-dir --enable-row-security" "$(cat "$WORK/err")"
verify "--out-dir --enable-row-security: the 25 rows" "$WORK/rlsdump/$DB/rls.bson" \
	"SELECT bson_document(t) FROM rls t WHERE owner = 'rlsuser'"
rm -rf "$WORK/rlsdump" "$WORK/rls.bson"
run "$BIN" -U rlsbypass --table rls -o "$WORK/rls.bson" -q
[ "$rc" -eq 0 ] || fail "a BYPASSRLS role" "$(cat "$WORK/err")"
verify "a BYPASSRLS role: every row" "$WORK/rls.bson" "SELECT bson_document(t) FROM rls t"
rm -f "$WORK/rls.bson"

# ---------------------------------------------------------------- existing files
before=$(md5sum <"$T")
expect_error "existing file without --force" 1 "output file \"$T\" already exists; use --force to overwrite it" \
	"$BIN" --table medium --column doc -o "$T"
[ "$(md5sum <"$T")" = "$before" ] && pass "existing file left untouched" || fail "existing file was changed"
expect_error "existing split files without --force" 1 "split.0001.bson\" already exists; use --force" \
	"$BIN" --table medium --column doc -j 3 --split -o "$WORK/split.bson"
run "$BIN" --table medium --column doc -o "$T" --force -q
cmp -s "$T" "$M" && pass "--force overwrites" || fail "--force" "$(cat "$WORK/err")"

# ---------------------------------------------------------------- FIFOs and devices
# an existing file that is not a regular file is written in place: a rename
# over it would replace the FIFO or the device node by a regular file
log "outputs that are not regular files: a FIFO, a character device, /dev/null, a socket"
mkfifo "$WORK/out.fifo"
for force in "" --force; do
	cat "$WORK/out.fifo" >"$WORK/fifo.got" &
	CAT=$!
	run "$BIN" --table medium --column doc -o "$WORK/out.fifo" $force -q
	# the reader ends once the export closes the FIFO (one renamed over leaves it waiting)
	wait_max 10 $CAT
	if [ "$rc" -eq 0 ] && [ -p "$WORK/out.fifo" ] && cmp -s "$WORK/fifo.got" "$M" &&
		! compgen -G "$WORK/.out.fifo.tmp.*" >/dev/null; then
		pass "-o FIFO ${force:-without --force}: its reader gets the export, the FIFO stays a FIFO"
	else
		fail "-o FIFO ${force:-without --force}" "exit $rc; $(ls -l "$WORK/out.fifo" "$WORK/fifo.got"); $(cat "$WORK/err")"
	fi
done
# a signal while the export waits for the FIFO's reader ends the wait
"$BIN" --table medium --column doc -o "$WORK/out.fifo" >/dev/null 2>"$WORK/bg.err" &
BG=$!
wait_until "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'pg_bsonexport'
	AND state = 'idle in transaction')" || fail "-o FIFO, no reader: the export did not start" "$(cat "$WORK/bg.err")"
kill -INT $BG
wait_max 10 $BG
rc=$?
[ $rc -eq 130 ] && [ -p "$WORK/out.fifo" ] && grep -q "interrupted by SIGINT; no output written" "$WORK/bg.err" &&
	pass "-o FIFO without a reader: SIGINT ends the wait, exit 130, the FIFO left as it was" ||
	fail "-o FIFO without a reader, SIGINT" "exit $rc (137: hung, killed); $(cat "$WORK/bg.err")"
rm -f "$WORK/out.fifo" "$WORK/fifo.got"
# a character device of its own (c 1 3 is the null device), not the system's
mknod "$WORK/null.dev" c 1 3
for force in "" --force; do
	run "$BIN" --table medium --column doc -o "$WORK/null.dev" $force -q
	[ "$rc" -eq 0 ] && [ -c "$WORK/null.dev" ] && ! compgen -G "$WORK/.null.dev.tmp.*" >/dev/null &&
		pass "-o character device ${force:-without --force}: written in place, still a device" ||
		fail "-o character device ${force:-without --force}" "exit $rc; $(ls -l "$WORK/null.dev"); $(cat "$WORK/err")"
done
# the system's /dev/null only once a device of our own has been seen to survive
if [ -c "$WORK/null.dev" ]; then
	run "$BIN" --table medium --column doc -o /dev/null --force -q
	[ "$rc" -eq 0 ] && [ -c /dev/null ] && pass "-o /dev/null --force: /dev/null is still the character device" ||
		fail "-o /dev/null --force" "exit $rc; $(ls -l /dev/null); $(cat "$WORK/err")"
else
	fail "-o /dev/null --force not tried: the character device above was replaced"
fi
rm -f "$WORK/null.dev"
"$PYTHON" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$WORK/out.sock"
expect_error "-o a socket --force: refused" 1 "output \"$WORK/out.sock\" is a socket, which cannot be written as a file" \
	"$BIN" --table medium --column doc -o "$WORK/out.sock" --force
[ -S "$WORK/out.sock" ] && pass "-o a socket: still a socket" || fail "-o a socket: replaced" "$(ls -l "$WORK/out.sock")"
rm -f "$WORK/out.sock"

# ---------------------------------------------------------------- interruptions
log "interruptions"
SLOW="SELECT to_bson(jsonb_build_object('i', generate_series(1, 200000000), 'pad', repeat('p', 100)))"
# start_bg OUT ARGS...: run the exporter in the background until its temporary file has data
start_bg() {
	local out=$1 i
	shift
	"$BIN" "$@" -o "$out" >/dev/null 2>"$WORK/bg.err" &
	BG=$!
	for i in $(seq 1 200); do
		compgen -G "$(dirname "$out")/.$(basename "$out").tmp.$BG" >/dev/null &&
			[ -s "$(dirname "$out")/.$(basename "$out").tmp.$BG" ] && return 0
		sleep 0.05
	done
	return 1
}
for sig in INT TERM; do
	S=$WORK/sig_$sig.bson
	if start_bg "$S" --query "$SLOW" -q; then
		kill -$sig $BG
		wait $BG
		rc=$?
		want=$((128 + $(kill -l $sig)))
		if [ $rc -eq $want ] && no_output "$S" && grep -q "interrupted by SIG$sig; no output written" "$WORK/bg.err"; then
			pass "SIG$sig mid-stream: exit $rc, no file, no temporary file"
		else
			fail "SIG$sig mid-stream" "exit $rc; $(cat "$WORK/bg.err"); $(ls -a "$WORK")"
		fi
	else
		kill $BG 2>/dev/null
		fail "SIG$sig mid-stream: the export did not start" "$(cat "$WORK/bg.err")"
	fi
done
S=$WORK/sig_jobs.bson
if start_bg "$S" --table big -j 2 -q; then
	kill -INT $BG
	wait $BG
	rc=$?
	if [ $rc -eq 130 ] && no_output "$S" && ! compgen -G "$WORK/.sig_jobs.bson.tmp.*" >/dev/null; then
		pass "SIGINT during --jobs 2: exit 130, no file, no part files"
	else
		fail "SIGINT during --jobs 2" "exit $rc; $(cat "$WORK/bg.err"); $(ls -a "$WORK")"
	fi
else
	wait $BG
	fail "SIGINT during --jobs 2: too fast to interrupt?" "$(cat "$WORK/bg.err")"
fi
S=$WORK/sig_kill.bson
if start_bg "$S" --query "$SLOW" -q; then
	kill -KILL $BG
	{ wait $BG; } 2>/dev/null
	rc=$?
	left=$(compgen -G "$WORK/.sig_kill.bson.tmp.$BG")
	if [ $rc -eq 137 ] && [ ! -e "$S" ] && [ -n "$left" ]; then
		pass "SIGKILL: no output file; the documented leftover $(basename "$left") can be removed"
		rm -f "$left"
	else
		fail "SIGKILL" "exit $rc; $(ls -a "$WORK")"
	fi
else
	fail "SIGKILL: the export did not start" "$(cat "$WORK/bg.err")"
fi
S=$WORK/terminated.bson
if start_bg "$S" --query "$SLOW" -q; then
	Q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'pg_bsonexport' AND query LIKE 'COPY%'" >/dev/null
	wait $BG
	rc=$?
	# the backend's FATAL message may or may not reach the client before the
	# connection closes
	if [ $rc -eq 1 ] && no_output "$S" &&
		grep -Eq "terminating connection|server closed the connection unexpectedly" "$WORK/bg.err"; then
		pass "backend terminated mid-stream: exit 1, no file: $(head -1 "$WORK/bg.err" | cut -c1-120)"
	else
		fail "backend terminated mid-stream" "exit $rc; $(cat "$WORK/bg.err")"
	fi
else
	fail "terminated backend: the export did not start" "$(cat "$WORK/bg.err")"
fi

# standard output: what was written stays written, and the message says so
"$BIN" --query "$SLOW" -q -o - >"$WORK/sig_stdout.bson" 2>"$WORK/bg.err" &
BG=$!
for i in $(seq 1 200); do [ -s "$WORK/sig_stdout.bson" ] && break; sleep 0.05; done
kill -INT $BG
wait_max 20 $BG
rc=$?
if [ $rc -eq 130 ] && grep -q "interrupted by SIGINT; what was written to standard output is incomplete" "$WORK/bg.err"; then
	pass "SIGINT with -o -: exit 130, \"$(sed 's/^pg_bsonexport: //' "$WORK/bg.err")\""
else
	fail "SIGINT with -o -" "exit $rc; $(cat "$WORK/bg.err")"
fi

# ---------------------------------------------------------------- locks
log "locks: SIGINT while waiting, the lock before the snapshot, --jobs behind a queued lock"
# a signal while the export waits for its table lock (lock_timeout is off),
# a setup step (with --jobs too, whose COPYs have not started): the handler
# cancels the waiting LOCK, the connection being registered when opened
for jobs in 1 2; do
	session_open
	session_send "BEGIN; LOCK TABLE lockq IN ACCESS EXCLUSIVE MODE;"
	if wait_until "$(lock_on lockq AccessExclusiveLock true)"; then
		"$BIN" --table lockq -j $jobs -o "$WORK/sig_lock.bson" >/dev/null 2>"$WORK/bg.err" 6>&- &
		BG=$!
		if wait_until "$(lock_on lockq AccessShareLock false pg_bsonexport)"; then
			kill -INT $BG
			wait_max 10 $BG
			rc=$?
			if [ $rc -eq 130 ] && no_output "$WORK/sig_lock.bson" &&
				grep -q "interrupted by SIGINT; no output written" "$WORK/bg.err"; then
				pass "--jobs $jobs: SIGINT while waiting for the table lock: exit 130 at once, nothing left"
			else
				fail "--jobs $jobs: SIGINT while waiting for the table lock" "exit $rc (137: hung, killed); $(cat "$WORK/bg.err")"
			fi
		else
			kill -KILL $BG
			fail "--jobs $jobs: SIGINT while waiting for the table lock: the export did not wait" "$(cat "$WORK/bg.err")"
		fi
	else
		fail "--jobs $jobs: SIGINT while waiting for the table lock: no lock" "$(cat "$WORK/session.log")"
	fi
	session_send "ROLLBACK;"
	session_close
done

# TRUNCATE is not MVCC-safe: committed between the export's snapshot and its
# lock, it would leave the export empty.  The lock comes first, so the export
# waits, then sees the new rows.
Q -c "CREATE TABLE tr (doc jsonb); INSERT INTO tr SELECT jsonb_build_object('old', g) FROM generate_series(1, 100) g"
session_open
session_send "BEGIN; TRUNCATE tr; INSERT INTO tr SELECT jsonb_build_object('new', g) FROM generate_series(1, 1000) g;"
if wait_until "$(lock_on tr AccessExclusiveLock true)"; then
	"$BIN" --table tr --column doc -o "$WORK/tr.bson" >/dev/null 2>"$WORK/bg.err" 6>&- &
	BG=$!
	wait_until "$(lock_on tr AccessShareLock false pg_bsonexport)" ||
		fail "TRUNCATE during the export: it did not wait for the lock" "$(cat "$WORK/bg.err")"
	session_send "COMMIT;"
	session_close
	wait_max 20 $BG
	rc=$?
	[ $rc -eq 0 ] || fail "TRUNCATE during the export" "exit $rc; $(cat "$WORK/bg.err")"
	verify "TRUNCATE committed while the export waited for its lock: the new rows" "$WORK/tr.bson" \
		"SELECT to_bson(doc) FROM tr"
else
	fail "TRUNCATE during the export: no lock" "$(cat "$WORK/session.log")"
	session_close
fi

# --jobs against a lock queue: once the leader holds its lock, another
# session queues for ACCESS EXCLUSIVE; a job that then waited for ACCESS
# SHARE would wait forever (the session waits for the leader, which waits
# for the job).  The job's LOCK ... NOWAIT fails instead, with a message.
# Deterministic: the leader is held after its lock and before the jobs
# connect by its first write to standard error (--verbose: the snapshot
# line), a FIFO whose buffer is full until the session has queued.
# (a materialized view, which LOCK refuses: a query under lock_timeout 1 ms,
# against a REFRESH queued behind the leader)
for rel in lockq lockmv; do
	rm -f "$WORK/stderr.fifo"
	mkfifo "$WORK/stderr.fifo"
	exec 7<>"$WORK/stderr.fifo"
	"$PYTHON" -c '
import fcntl, os
fcntl.fcntl(7, fcntl.F_SETFL, fcntl.fcntl(7, fcntl.F_GETFL) | os.O_NONBLOCK)
try:
    while True:
        os.write(7, b"\0" * 4096)
except BlockingIOError:
    pass
'
	"$BIN" --table $rel -j 2 -v -o "$WORK/lockq.bson" >/dev/null 2>"$WORK/stderr.fifo" 7>&- &
	BG=$!
	LOCKER=
	if wait_until "$(lock_on $rel AccessShareLock true pg_bsonexport)"; then
		if [ $rel = lockq ]; then
			psql -qX -c "BEGIN" -c "LOCK TABLE lockq IN ACCESS EXCLUSIVE MODE" -c "COMMIT" >/dev/null 2>&1 7>&- &
		else
			psql -qX -c "REFRESH MATERIALIZED VIEW lockmv" >/dev/null 2>&1 7>&- &
		fi
		LOCKER=$!
		wait_until "$(lock_on $rel AccessExclusiveLock false)" ||
			fail "--jobs behind a queued lock ($rel): the ACCESS EXCLUSIVE request did not queue"
	fi
	# let the leader go on: read what it writes (the fill first), then the rest
	exec 8<"$WORK/stderr.fifo"
	exec 7>&-
	cat <&8 >"$WORK/lockq.err" &
	CAT=$!
	exec 8<&-
	wait_max 30 $BG
	rc=$?
	wait $CAT
	[ -n "$LOCKER" ] && wait_max 10 $LOCKER
	err=$(tr -d '\0' <"$WORK/lockq.err")
	if [ $rc -eq 1 ] && no_output "$WORK/lockq.bson" &&
		grep -Eq "^pg_bsonexport: error: job 2: could not lock the table: (could not obtain lock on relation|canceling statement due to lock timeout)" <<<"$err" &&
		grep -q "^hint: retry the export once that session is done" <<<"$err"; then
		pass "--jobs behind a queued ACCESS EXCLUSIVE ($rel): the job's lock fails at once, with a hint"
	else
		fail "--jobs behind a queued ACCESS EXCLUSIVE ($rel)" "exit $rc (137: hung, killed); $err"
	fi
done
rm -f "$WORK/stderr.fifo"

# lock_timeout: the user's own honoured (PGOPTIONS), --lock-wait-timeout as
# pg_dump's, each failing with the table named; a longer wait is said, with
# the table and the session in the way, and the export goes on once the lock
# is free.  In the background, 30 s at most: an export that waits for ever
# is killed (137).
bg_run() {
	"$@" >"$WORK/out" 2>"$WORK/err" 6>&- &
	local pid=$!
	wait_max 30 $pid
	rc=$?
}
# wait_file FILE REGEX: poll (20 s at most) until FILE has a line matching REGEX
wait_file() {
	local i
	for i in $(seq 1 400); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
session_open
session_send "BEGIN; LOCK TABLE lockq IN ACCESS EXCLUSIVE MODE;"
if wait_until "$(lock_on lockq AccessExclusiveLock true)"; then
	LPID=$(Q -c "SELECT pid FROM pg_locks WHERE relation = 'lockq'::regclass AND mode = 'AccessExclusiveLock' AND granted")
	bg_run env PGOPTIONS='-c lock_timeout=1s' "$BIN" --table lockq -o "$WORK/lk.bson"
	[ "$rc" -eq 1 ] && grep -q "could not lock the table: canceling statement due to lock timeout" "$WORK/err" &&
		grep -q "^detail: another session holds, or waits for, a lock on public.lockq .*the export waits no longer than lock_timeout, the session's setting" "$WORK/err" &&
		no_output "$WORK/lk.bson" &&
		pass "--table, PGOPTIONS lock_timeout=1s honoured: exit 1 naming the table" ||
		fail "--table, PGOPTIONS lock_timeout=1s" "exit $rc (137: waited, killed); $(cat "$WORK/err")"
	bg_run env PGOPTIONS='-c lock_timeout=1s' "$BIN" --out-dir "$WORK/lkdump" --include-tables public.lockq
	[ "$rc" -eq 1 ] && grep -q "could not list the tables: canceling statement due to lock timeout" "$WORK/err" &&
		grep -q "^detail: .*just now such locks are held or awaited on public.lockq (PID $LPID)" "$WORK/err" &&
		pass "--out-dir, PGOPTIONS lock_timeout=1s honoured: exit 1 naming the table and the PID" ||
		fail "--out-dir, PGOPTIONS lock_timeout=1s" "exit $rc (137: waited, killed); $(cat "$WORK/err")"
	bg_run "$BIN" --table lockq -j 2 --lock-wait-timeout 1s -o "$WORK/lk.bson"
	[ "$rc" -eq 1 ] && grep -q "could not lock the table: canceling statement due to lock timeout" "$WORK/err" &&
		grep -q "^detail: .*a lock on public.lockq .*waits no longer than --lock-wait-timeout 1s$" "$WORK/err" &&
		grep -q "^hint: retry once that session is done" "$WORK/err" &&
		pass "--lock-wait-timeout 1s: exit 1 naming the table and the option" ||
		fail "--lock-wait-timeout 1s" "exit $rc (137: waited, killed); $(cat "$WORK/err")"

	# waiting: --lock-wait-timeout 0 over PGOPTIONS' lock_timeout, and --out-dir with none
	PGOPTIONS='-c lock_timeout=1s' "$BIN" --table lockq --lock-wait-timeout 0 -o "$WORK/lk.bson" \
		>/dev/null 2>"$WORK/lk1.err" 6>&- &
	BG1=$!
	"$BIN" --out-dir "$WORK/lkdump" --include-tables public.lockq >/dev/null 2>"$WORK/lk2.err" 6>&- &
	BG2=$!
	said="^pg_bsonexport: waiting for a lock on public.lockq, blocked by the session with PID $LPID \([0-9]+ s so far\)$"
	wait_file "$WORK/lk1.err" "$said"
	wait_file "$WORK/lk2.err" "$said"
	session_send "ROLLBACK;"
	wait_max 30 $BG1
	rc1=$?
	wait_max 30 $BG2
	rc2=$?
	for k in 1 2; do
		r=$([ $k = 1 ] && echo $rc1 || echo $rc2)
		name=$([ $k = 1 ] && echo "--table --lock-wait-timeout 0" || echo "--out-dir")
		grep -Eq -- "$said" "$WORK/lk$k.err" &&
			grep -q "^pg_bsonexport: hint: pg_stat_activity shows what it runs; --lock-wait-timeout=DURATION gives up after DURATION instead$" "$WORK/lk$k.err" &&
			[ "$r" -eq 0 ] &&
			pass "$name, a table locked for a while: the wait said with the table and PID, then exported" ||
			fail "$name, a wait for a lock" "exit $r; $(cat "$WORK/lk$k.err")"
	done
	verify "exported once the lock was free" "$WORK/lk.bson" "SELECT bson_document(t) FROM lockq t"
	verify "--out-dir exported once the lock was free" "$WORK/lkdump/$DB/lockq.bson" \
		"SELECT bson_document(t) FROM lockq t"
else
	fail "lock timeouts: no lock" "$(cat "$WORK/session.log")"
	session_send "ROLLBACK;"
fi
session_close
rm -rf "$WORK/lkdump" "$WORK/lk.bson" "$WORK"/lk[12].err

# ---------------------------------------------------------------- --split commit failing midway
log "--split: a rename failing midway (LD_PRELOAD shim)"
run env FAIL_RENAME_SUFFIX=fr.0002.bson LD_PRELOAD="$WORK/fail_rename.so" \
	"$BIN" --table medium --column doc -j 3 --split -o "$WORK/fr.bson" -q
if [ "$rc" -eq 1 ] && grep -q 'could not rename .*fr.0002.bson": Input/output error' "$WORK/err" &&
	grep -q "the 1 file of the set already renamed into place (.*fr.0001.bson) has been removed again: none of the 3 files is left" "$WORK/err" &&
	! compgen -G "$WORK/fr.*" >/dev/null && ! compgen -G "$WORK/.fr.*" >/dev/null; then
	pass "--split, rename of file 2 failing: file 1 removed again, nothing left"
else
	fail "--split, rename of file 2 failing" "exit $rc; $(cat "$WORK/err"); $(ls -a "$WORK")"
fi
run "$BIN" --table medium --column doc -j 3 --split -o "$WORK/fr.bson" -q
cp "$WORK/fr.0001.bson" "$WORK/fr1.old"
cp "$WORK/fr.0002.bson" "$WORK/fr2.old"
run env FAIL_RENAME_SUFFIX=fr.0002.bson LD_PRELOAD="$WORK/fail_rename.so" \
	"$BIN" --table small --column doc -j 3 --split --force -o "$WORK/fr.bson" -q
if [ "$rc" -eq 1 ] && grep -q "with --force, 1 of the 3 files (.*fr.0001.bson) had already replaced" "$WORK/err" &&
	! cmp -s "$WORK/fr.0001.bson" "$WORK/fr1.old" && cmp -s "$WORK/fr.0002.bson" "$WORK/fr2.old" &&
	! compgen -G "$WORK/.fr.*" >/dev/null; then
	pass "--split --force, rename of file 2 failing: file 1 replaced, the rest as before, said so"
else
	fail "--split --force, rename of file 2 failing" "exit $rc; $(cat "$WORK/err")"
fi
rm -f "$WORK"/fr.* "$WORK"/fr[12].old

# ---------------------------------------------------------------- keepalives
# TCP keepalives on by default (idle 30 s), a setting in a conninfo string or
# a service file winning: seen on the socket to a fake server that accepts and
# never answers (the export hangs in its connection attempt, idle; ss shows the
# keepalive timer, whose remaining time is at most the idle time)
log "TCP keepalives"
keepalive_timer() {
	local i t m=0 sec=0 pid
	"$BIN" "$@" --table medium -o "$WORK/ka.bson" >/dev/null 2>&1 &
	pid=$!
	for i in $(seq 1 100); do
		t=$(ss -tnoH state established "( dport = :$FAKE_PORT )" 2>/dev/null |
			sed -n 's/.*timer:(keepalive,\([^,]*\),.*/\1/p' | head -1)
		[ -n "$t" ] && break
		sleep 0.05
	done
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	[ -n "$t" ] || { echo "none"; return; }
	[[ $t =~ ^([0-9]+)min ]] && m=${BASH_REMATCH[1]}
	[[ $t =~ ([0-9]+)(sec|\.) ]] && sec=${BASH_REMATCH[1]}
	echo $((m * 60 + sec))
}
if command -v ss >/dev/null; then
	"$PYTHON" -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])
' >"$WORK/fake.port" &
	FAKE=$!
	for i in $(seq 1 100); do [ -s "$WORK/fake.port" ] && break; sleep 0.05; done
	FAKE_PORT=$(cat "$WORK/fake.port")
	t=$(keepalive_timer -h 127.0.0.1 -p "$FAKE_PORT")
	[ "$t" != none ] && [ "$t" -le 30 ] && pass "keepalives by default: idle timer ${t} s (<= 30)" ||
		fail "keepalives by default" "timer: $t"
	t=$(keepalive_timer -d "host=127.0.0.1 port=$FAKE_PORT keepalives_idle=200")
	[ "$t" != none ] && [ "$t" -gt 30 ] && [ "$t" -le 200 ] &&
		pass "keepalives_idle=200 in the conninfo string wins: timer ${t} s" ||
		fail "keepalives_idle in the conninfo string" "timer: $t"
	printf '[ka]\nhost=127.0.0.1\nport=%s\nkeepalives_idle=100\n' "$FAKE_PORT" >"$WORK/pg_service.conf"
	t=$(PGSERVICEFILE=$WORK/pg_service.conf PGSERVICE=ka keepalive_timer)
	[ "$t" != none ] && [ "$t" -gt 30 ] && [ "$t" -le 100 ] &&
		pass "keepalives_idle=100 in a service file wins: timer ${t} s" ||
		fail "keepalives_idle in a service file" "timer: $t"
	kill $FAKE
	wait $FAKE 2>/dev/null
else
	fail "TCP keepalives: no ss here (iproute2)"
fi

# a full disk: a 1 MB tmpfs (root only; skipped, and said so, elsewhere)
FULL=$WORK/full
mkdir -p "$FULL"
if mount -t tmpfs -o size=1m tmpfs "$FULL" 2>/dev/null; then
	expect_error "full disk" 1 "could not write to .*No space left on device; free some space" \
		"$BIN" --table medium --column doc -o "$FULL/x.bson"
	[ -z "$(ls -A "$FULL")" ] && pass "full disk: nothing left in the directory" ||
		fail "full disk: files left" "$(ls -a "$FULL")"
	# --out-dir's hint names --out-dir (-o is the single file's option)
	expect_error "full disk, --out-dir: the hint names --out-dir" 1 \
		"could not write to .*No space left on device; free some space or write to another directory with --out-dir$" \
		"$BIN" --out-dir "$FULL/dump" --include-tables public.medium
	[ -z "$(find "$FULL" -type f)" ] && pass "full disk, --out-dir: no file left" ||
		fail "full disk, --out-dir: files left" "$(find "$FULL" -type f)"
	umount "$FULL"
else
	echo "skip full disk (cannot mount a tmpfs here)"
fi

# a temporary file named with the PID of a live process of another user
# (kill(pid, 0) fails with EPERM) is that process's: a run as another user
# leaves it; a dead process's is removed (root only: the run is as postgres)
if [ "$(id -u)" -eq 0 ]; then
	STALE=$(mktemp -d /tmp/exporter_stale.XXXXXX)
	mkdir -p "$STALE/bin" "$STALE/out/$DB"
	cp "$BIN" "$STALE/bin/pg_bsonexport"
	sh -c 'exit 0' &
	DEAD=$!
	wait $DEAD
	touch "$STALE/out/$DB/.medium.bson.tmp.$$" "$STALE/out/$DB/.small.bson.tmp.$DEAD"
	chmod 755 "$STALE"
	chown -R postgres "$STALE/out"
	run runuser -u postgres -- "$STALE/bin/pg_bsonexport" --out-dir "$STALE/out" --include-tables public.small -q
	if [ "$rc" -eq 0 ] && [ -e "$STALE/out/$DB/.medium.bson.tmp.$$" ] && [ ! -e "$STALE/out/$DB/.small.bson.tmp.$DEAD" ]; then
		pass "a temporary file of a live process of another user (EPERM) stays; a dead process's is removed"
	else
		fail "temporary files of other processes" "exit $rc; $(ls -la "$STALE/out/$DB"); $(cat "$WORK/err")"
	fi
	rm -rf "$STALE"
else
	echo "skip temporary files of another user's process (not root)"
fi

# ---------------------------------------------------------------- progress
log "progress on a terminal"
script -qec "$BIN --table big -o $WORK/progress.bson" /dev/null >"$WORK/progress.txt" 2>&1
if grep -Eq '[0-9]+ rows, [0-9.]+ [kMG]?B.*[0-9]+%' "$WORK/progress.txt" &&
	grep -q "1000000 documents" "$WORK/progress.txt"; then
	pass "progress line with a percentage, then the summary: $(tr '\r' '\n' <"$WORK/progress.txt" | grep '%' | tail -1 | sed 's/\x1b\[K//g')"
else
	fail "progress on a terminal" "$(tr '\r' '\n' <"$WORK/progress.txt" | tail -5)"
fi
run "$BIN" --table big -o "$WORK/progress2.bson"
grep -q '%' "$WORK/err" && fail "no progress when standard error is not a terminal" "$(cat "$WORK/err")" ||
	pass "no progress line when standard error is not a terminal"
# no reltuples for a query or a view: the planner's estimate (EXPLAIN)
for what in "--query 'SELECT to_bson(doc) FROM big_v'" "--table big_v --column doc"; do
	script -qec "$BIN $what -o $WORK/progress3.bson" /dev/null >"$WORK/progress.txt" 2>&1
	rm -f "$WORK/progress3.bson"
	if grep -Eq '[0-9]+ rows, [0-9.]+ [kMG]?B.*[0-9]+%' "$WORK/progress.txt" &&
		grep -q "1000000 documents" "$WORK/progress.txt"; then
		pass "progress percentage for $what: $(tr '\r' '\n' <"$WORK/progress.txt" | grep '%' | tail -1 | sed 's/\x1b\[K//g')"
	else
		fail "progress percentage for $what" "$(tr '\r' '\n' <"$WORK/progress.txt" | tail -5)"
	fi
done

# ---------------------------------------------------------------- memory
log "peak memory at 100,000 and 1,000,000 rows"
/usr/bin/time -f %M -o "$WORK/rss1" "$BIN" --query "SELECT to_bson(doc) FROM big WHERE id <= 100000" -o "$WORK/rss1.bson" -q
/usr/bin/time -f %M -o "$WORK/rss2" "$BIN" --table big --column doc -o "$WORK/rss2.bson" -q
r1=$(tail -1 "$WORK/rss1") r2=$(tail -1 "$WORK/rss2")
if [ -n "$r1" ] && [ -n "$r2" ] && [ "$r2" -le $((r1 + 2048)) ]; then
	pass "constant memory: peak RSS $r1 kB at 100,000 rows, $r2 kB at 1,000,000"
else
	fail "constant memory" "peak RSS $r1 kB at 100,000 rows, $r2 kB at 1,000,000"
fi

# table mode's row order is the blocks' order even where the planner would
# choose a parallel plan (max_parallel_workers_per_gather = 0 in the session)
run env PGOPTIONS="-c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0 -c max_parallel_workers_per_gather=2" \
	"$BIN" --table big --column doc -o "$WORK/parallel.bson" -q
cmp -s "$WORK/parallel.bson" "$WORK/rss2.bson" &&
	pass "parallel query encouraged (PGOPTIONS): still the same bytes, in block order" ||
	fail "parallel query encouraged" "$(cat "$WORK/err")"

# ---------------------------------------------------------------- build without libpq's headers
log "the top-level make where libpq's headers are missing"
# a scratch copy of the sources: the work tree's objects stay as they are
TREE=$WORK/tree
mkdir -p "$TREE" "$WORK/no-libpq"
cp Makefile bson_out.control bson_out--*.sql "$TREE/"
find src client \( -name '*.[ch]' -o -name Makefile \) -exec cp --parents {} "$TREE/" \;
SKIPPED="^pg_bsonexport pg_bsonstream skipped: libpq-fe.h not found in $WORK/no-libpq \(install libpq's headers"
make -C "$TREE" PG_CONFIG="$PG_BINDIR/pg_config" LIBPQ_INCLUDEDIR="$WORK/no-libpq" >"$WORK/make.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && [ -f "$TREE/bson_out.so" ] && [ ! -e "$TREE/client/pg_bsonexport" ] &&
	[ "$(grep -c pg_bsonexport "$WORK/make.out")" = 1 ] && grep -Eq "$SKIPPED" "$WORK/make.out"; then
	pass "make without libpq-fe.h: the extension built, pg_bsonexport skipped: $(grep pg_bsonexport "$WORK/make.out")"
else
	fail "make without libpq-fe.h" "rc $rc; $(tail -5 "$WORK/make.out"); $(ls "$TREE" "$TREE/client")"
fi
make -C "$TREE" PG_CONFIG="$PG_BINDIR/pg_config" LIBPQ_INCLUDEDIR="$WORK/no-libpq" \
	DESTDIR="$WORK/dest" install >"$WORK/make.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && [ -f "$WORK/dest$("$PG_BINDIR/pg_config" --pkglibdir)/bson_out.so" ] &&
	[ -z "$(find "$WORK/dest" -name 'pg_bson*')" ] && grep -Eq "$SKIPPED" "$WORK/make.out"; then
	pass "make install without libpq-fe.h: the extension installed, pg_bsonexport skipped"
else
	fail "make install without libpq-fe.h" "rc $rc; $(tail -5 "$WORK/make.out"); $(find "$WORK/dest")"
fi
# and with them (pg_config --includedir), the same tree builds and installs it
make -C "$TREE" PG_CONFIG="$PG_BINDIR/pg_config" DESTDIR="$WORK/dest2" all install >"$WORK/make.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && [ -x "$WORK/dest2$("$PG_BINDIR/pg_config" --bindir)/pg_bsonexport" ] &&
	[ -x "$WORK/dest2$("$PG_BINDIR/pg_config" --bindir)/pg_bsonstream" ] &&
	! grep -q "skipped" "$WORK/make.out"; then
	pass "make with libpq's headers: pg_bsonexport and pg_bsonstream built and installed"
else
	fail "make with libpq's headers" "rc $rc; $(tail -5 "$WORK/make.out")"
fi

echo
echo "runtime $(( $(date +%s) - T_START )) s"
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "exporter: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
