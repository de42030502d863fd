#!/usr/bin/env bash
# The Citus stage: bson_out on a distributed PostgreSQL, a coordinator and two
# workers on loopback (test/citus/cluster.sh).
#
#   test/citus/run.sh
#
# Installs Citus 13.2.2 into Debian's PostgreSQL 15 with scripts/citus.sh
# (CITUS_ARCHIVE names the source archive; the build is cached) and assumes
# bson_out is built and installed (make && make install).  Checks:
#
#   - every SQL function of bson_out over a distributed table of 32 shards and
#     over a reference table gives the same bytes as over a plain table with
#     the same rows (md5 over the outputs in id order), and EXPLAIN VERBOSE
#     shows the function in the query the workers run;
#   - INSERT INTO t2 SELECT id, to_bson(doc) FROM dist, t2 co-located: pushed
#     down to the shards, the same bytes;
#   - row_to_bson after DROP COLUMN / ADD COLUMN and after a shard move;
#   - settings: a plain SET stays on the coordinator; SET LOCAL with
#     citus.propagate_set_commands = 'local' reaches the workers.
#
# Then test/citus/export.sh (pg_bsonexport on Citus), test/citus/stream.sh
# (pg_bsonstream --citus, the plugin's naming and origin filter) and
# test/citus/to.sh (pg_bsonstream --citus --to into FerretDB, the nodes'
# streams merged in commit order), on the same cluster; their
# "citus-export: ...", "citus-stream: N passed, M failed" and "citus-to: N
# passed, M failed" add to the counts.
#
# Without Citus (no archive, not PostgreSQL 15, not root) it prints
# "skip: citus: REASON" and last "citus: 0 passed, 0 failed, skipped";
# otherwise last "citus: N passed, M failed".  Exit status 0 only when
# nothing failed.  About six minutes once Citus and FerretDB are built.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
source test/citus/cluster.sh

skip() {
	echo "skip: citus: $*"
	echo "citus: 0 passed, 0 failed, skipped"
	exit 0
}

[ "$PG_MAJOR" = 15 ] || skip "Citus 13.2 is built here against PostgreSQL 15 only"
citus_log=$(mktemp)
scripts/citus.sh 2>"$citus_log"
rc=$?
reason=$(tail -1 "$citus_log" | sed 's/^== //')
if [ $rc -eq 2 ]; then
	rm -f "$citus_log"
	skip "$reason"
elif [ $rc -ne 0 ]; then
	cat "$citus_log" >&2
	rm -f "$citus_log"
	echo "FAIL building or installing Citus: $reason"
	echo "citus: 0 passed, 1 failed"
	exit 1
fi
rm -f "$citus_log"
# iproute2: ss, with which the clusters and the stream check find free ports
install_debian_packages iproute2 ||
	{ echo "FAIL installing iproute2 (ss)"; echo "citus: 0 passed, 1 failed"; exit 1; }
[ -f "$("$PG_BINDIR/pg_config" --sharedir)/extension/bson_out.control" ] ||
	{ echo "bson_out is not installed (make && make install)"; echo "citus: 0 passed, 1 failed"; exit 1; }

started=$SECONDS
unset PGHOST PGPORT PGDATABASE PGUSER
citus_cluster_start || { echo "citus: 0 passed, 1 failed"; exit 1; }

passed=0
failed=0
# q SQL...: one value from the coordinator; errors go to stdout with it
q() {
	local args=() s
	for s in "$@"; do args+=(-c "$s"); done
	psql -XAtq -v ON_ERROR_STOP=1 -v VERBOSITY=verbose "${args[@]}" 2>&1
}

log "creating the tables"
setup_out=$(q '\i test/citus/setup.sql') || fail "creating the tables (test/citus/setup.sql)" "$setup_out"
check "dist has 32 shards, on both workers" "32 2" \
	"$(q "SELECT count(*) || ' ' || count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'dist'::regclass")"
check "dist, ref and loc hold the same 2000 rows" "2000 2000 2000" \
	"$(q "SELECT (SELECT count(*) FROM dist) || ' ' || (SELECT count(*) FROM ref) || ' ' || (SELECT count(*) FROM loc)")"

# same FUNCTION LABEL QUERY: QUERY (with @T for the table, aliased t) gives
# the same value on dist and ref as on loc, the value also counts the outputs
# so that an empty result cannot pass; EXPLAIN VERBOSE of dist shows FUNCTION
# in the workers' query
same() {
	local fn=$1 label=$2 query=$3 want got tbl plan
	want=$(q "${query//@T/loc}")
	case $want in
	*' '0 | '' | *ERROR*) fail "$label: loc gives a value" "$want"; return ;;
	esac
	for tbl in dist ref; do
		got=$(q "${query//@T/$tbl}")
		check "$label: $tbl = loc" "$want" "$got"
	done
	plan=$(q "EXPLAIN VERBOSE ${query//@T/dist}")
	if printf '%s\n' "$plan" | grep -qE "^ *Query: SELECT .*[^_a-z]$fn\\("; then
		ok "$label: runs on the workers"
	else
		fail "$label: runs on the workers" "$plan"
	fi
}
# agg EXPRESSION: md5 over EXPRESSION in id order, and how many were not null
agg() {
	echo "SELECT md5(string_agg(coalesce($1, 'NULL'), ',' ORDER BY id)) || ' ' || count($1) FROM @T t"
}

log "every function: dist and ref against loc"
same to_bson "to_bson(jsonb)" "$(agg "encode(to_bson(doc), 'hex')")"
same to_bson "to_bson(jsonb, extended_json)" "$(agg "encode(to_bson(ej, true), 'hex')")"
same to_bson "to_bson(jsonb, extended_json, legacy_extended_json)" "$(agg "encode(to_bson(lej, true, true), 'hex')")"
same json_to_bson "json_to_bson(json)" "$(agg "encode(json_to_bson(js), 'hex')")"
same json_to_bson "json_to_bson(json, extended_json)" "$(agg "encode(json_to_bson(ej::text::json, true), 'hex')")"
same json_to_bson "json_to_bson(json, extended_json, legacy_extended_json)" \
	"$(agg "encode(json_to_bson(lej::text::json, true, true), 'hex')")"
same row_to_bson "row_to_bson(whole row)" "$(agg "encode(row_to_bson(t), 'hex')")"
same row_to_bson "row_to_bson(whole row, omit_nulls)" "$(agg "encode(row_to_bson(t, true), 'hex')")"
same row_to_bson "row_to_bson(ROW(...))" "$(agg "encode(row_to_bson(ROW(t.id, t.n, t.f, t.ts, t.d, t.iv, t.b, t.ia, t.p, t.pa, t.u)), 'hex')")"
same from_bson "from_bson" "$(agg "from_bson(bs)::text")"
same bson_to_json "bson_to_json (relaxed)" "$(agg "bson_to_json(bs)::text")"
same bson_to_json "bson_to_json (canonical)" "$(agg "bson_to_json(to_bson(ej, true), true)::text")"
# every fifth value cut short by a byte: both answers are in the data
check "bson_is_valid: loc has valid and invalid inputs" "1400 400" \
	"$(q "SELECT count(*) FILTER (WHERE v) || ' ' || count(*) FILTER (WHERE NOT v) FROM (SELECT bson_is_valid(CASE WHEN id % 5 = 0 THEN substr(bs, 1, length(bs) - 1) ELSE bs END) v FROM loc) s")"
same bson_is_valid "bson_is_valid" \
	"$(agg "bson_is_valid(CASE WHEN id % 5 = 0 THEN substr(bs, 1, length(bs) - 1) ELSE bs END)::text")"
same bson_documents "bson_documents" \
	"SELECT md5(string_agg(encode(x.d, 'hex'), ',' ORDER BY t.id, x.ord)) || ' ' || count(*) FROM @T t, LATERAL bson_documents(t.stream) WITH ORDINALITY x(d, ord)"

log "converting in place: INSERT INTO t2 SELECT id, to_bson(doc) FROM dist"
insert="INSERT INTO t2 SELECT id, to_bson(doc) FROM dist WHERE doc IS NOT NULL"
plan=$(q "EXPLAIN $insert")
if printf '%s\n' "$plan" | grep -q 'Task Count: 32' && printf '%s\n' "$plan" | grep -q 'Insert on t2_' &&
	! printf '%s\n' "$plan" | grep -qE 'INSERT/SELECT method|Collecting results|repartition'; then
	ok "INSERT ... SELECT: pushed down to the 32 shards"
else
	fail "INSERT ... SELECT: pushed down to the 32 shards" "$plan"
fi
check "INSERT ... SELECT: rows" "INSERT 0 1800" "$(psql -XAt -v ON_ERROR_STOP=1 -c "$insert" 2>&1)"
t2_want=$(q "SELECT md5(string_agg(encode(to_bson(doc), 'hex'), ',' ORDER BY id)) || ' ' || count(*) FROM loc WHERE doc IS NOT NULL")
t2_sum="SELECT md5(string_agg(encode(bson, 'hex'), ',' ORDER BY id)) || ' ' || count(*) FROM t2"
check "INSERT ... SELECT: t2 = to_bson over loc" "$t2_want" "$(q "$t2_sum")"

log "DROP COLUMN and ADD COLUMN"
for tbl in loc dist; do
	out=$(q "ALTER TABLE $tbl DROP COLUMN ta" "ALTER TABLE $tbl DROP COLUMN lej" \
		"ALTER TABLE $tbl ADD COLUMN extra text DEFAULT 'é'" "ALTER TABLE $tbl ADD COLUMN extra2 numeric" \
		"UPDATE $tbl SET extra2 = id * 1.5, extra = NULL WHERE id % 3 = 0")
	[ -z "$out" ] || fail "ALTER TABLE $tbl" "$out"
done
whole=$(agg "encode(row_to_bson(t), 'hex')")
whole_nonulls=$(agg "encode(row_to_bson(t, true), 'hex')")
check "after DROP/ADD COLUMN: row_to_bson: dist = loc" "$(q "${whole//@T/loc}")" "$(q "${whole//@T/dist}")"
check "after DROP/ADD COLUMN: row_to_bson(omit_nulls): dist = loc" \
	"$(q "${whole_nonulls//@T/loc}")" "$(q "${whole_nonulls//@T/dist}")"
check "after DROP/ADD COLUMN: the documents' keys" \
	"id doc ej js n f ts d iv b ia p pa u flag bs stream extra extra2" \
	"$(q "SELECT string_agg(k, ' ') FROM (SELECT json_object_keys(bson_to_json(row_to_bson(t))) k FROM dist t WHERE id = 4) s")"

log "moving a shard from worker 1 to worker 2"
shard=$(q "SELECT min(shardid) FROM citus_shards WHERE table_name = 'dist'::regclass AND nodeport = $CITUS_WORKER1_PORT")
move=$(q "SELECT citus_move_shard_placement($shard, '127.0.0.1', $CITUS_WORKER1_PORT, '127.0.0.1', $CITUS_WORKER2_PORT, shard_transfer_mode := 'block_writes')")
check "shard $shard moved to worker 2" "$CITUS_WORKER2_PORT" \
	"$(q "SELECT string_agg(nodeport::text, ' ') FROM citus_shards WHERE shardid = $shard")"
[ -z "$move" ] || printf '     | %s\n' "$move"
check "after the move: dist 15 shards on worker 1, 17 on worker 2" "15 17" \
	"$(q "SELECT count(*) FILTER (WHERE nodeport = $CITUS_WORKER1_PORT) || ' ' || count(*) FILTER (WHERE nodeport = $CITUS_WORKER2_PORT) FROM citus_shards WHERE table_name = 'dist'::regclass")"
check "after the move: row_to_bson: dist = loc" "$(q "${whole//@T/loc}")" "$(q "${whole//@T/dist}")"
check "after the move: to_bson: dist = loc" "$(q "$(agg "encode(to_bson(doc), 'hex')" | sed 's/@T/loc/')")" \
	"$(q "$(agg "encode(to_bson(doc), 'hex')" | sed 's/@T/dist/')")"
check "after the move: co-located t2 moved along, same bytes" "$t2_want" "$(q "$t2_sum")"

log "settings on the workers"
limit_err='ERROR:  54000: BSON document exceeds the maximum size of 100 bytes'
count_sql="SELECT count(to_bson(doc)) FROM"
# A plain SET stays on the coordinator (citus.propagate_set_commands is
# 'none' by default): the workers still use the default limit.  This checks
# the behaviour as it is, so that the README's advice stays true.
out=$(q "SET bson_out.max_document_size = '100'" "$count_sql loc")
case $out in
"$limit_err"*) ok "plain SET: loc raises 54000" ;;
*) fail "plain SET: loc raises 54000" "$out" ;;
esac
check "plain SET: not sent to the workers, dist returns every row" "1800" \
	"$(q "SET bson_out.max_document_size = '100'" "$count_sql dist")"
out=$(q "SET citus.propagate_set_commands = 'local'" "BEGIN" "SET LOCAL bson_out.max_document_size = '100'" \
	"$count_sql dist" "COMMIT")
if [[ $out == "$limit_err"* ]] &&
	printf '%s\n' "$out" | grep -qE "^CONTEXT:  while executing command on 127\\.0\\.0\\.1:($CITUS_WORKER1_PORT|$CITUS_WORKER2_PORT)\$"; then
	ok "SET LOCAL with propagate_set_commands = 'local': 54000 raised on a worker"
else
	fail "SET LOCAL with propagate_set_commands = 'local': 54000 raised on a worker" "$out"
fi
iv_sum=$(agg "encode(row_to_bson(ROW(t.id, t.iv, t.ts)), 'hex')")
iso_loc=$(q "BEGIN" "SET LOCAL IntervalStyle = 'iso_8601'" "${iv_sum//@T/loc}" "COMMIT")
default_loc=$(q "${iv_sum//@T/loc}")
[ "$iso_loc" != "$default_loc" ] && ok "IntervalStyle changes row_to_bson on loc" ||
	fail "IntervalStyle changes row_to_bson on loc" "$iso_loc"
check "SET LOCAL IntervalStyle with propagate_set_commands = 'local': dist = loc" "$iso_loc" \
	"$(q "SET citus.propagate_set_commands = 'local'" "BEGIN" "SET LOCAL IntervalStyle = 'iso_8601'" "${iv_sum//@T/dist}" "COMMIT")"
# reported, not counted: whether a plain SET of IntervalStyle reaches them
plain=$(q "SET IntervalStyle = 'iso_8601'" "${iv_sum//@T/dist}")
if [ "$plain" = "$iso_loc" ]; then
	echo "info: a plain SET IntervalStyle reaches the workers"
else
	echo "info: a plain SET IntervalStyle does not reach the workers (dist gives the default style)"
fi

# sub_stage SCRIPT NAME: a script of its own on this cluster, whose last
# "NAME: N passed, M failed" line adds to the counts
sub_stage() {
	local script=$1 name=$2 out rc line n_ok n_bad
	out=$(PG_BSONEXPORT=${PG_BSONEXPORT:-} PG_BSONSTREAM=${PG_BSONSTREAM:-} "$script" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	line=$(printf '%s\n' "$out" | grep -E "^$name: [0-9]+ passed, [0-9]+ failed" | tail -1)
	n_ok=$(printf '%s' "$line" | sed -E "s/^$name: ([0-9]+) passed.*/\\1/")
	n_bad=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
	passed=$((passed + ${n_ok:-0}))
	failed=$((failed + ${n_bad:-0}))
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		[ "${n_bad:-0}" -gt 0 ] || fail "$script (exit status $rc, no count line)"
	fi
}

if [ -x test/citus/export.sh ]; then
	log "pg_bsonexport on Citus: test/citus/export.sh"
	sub_stage test/citus/export.sh citus-export
fi
if [ -x test/citus/stream.sh ]; then
	log "pg_bsonstream --citus: test/citus/stream.sh"
	sub_stage test/citus/stream.sh citus-stream
fi
if [ -x test/citus/to.sh ]; then
	log "pg_bsonstream --citus --to into FerretDB: test/citus/to.sh"
	sub_stage test/citus/to.sh citus-to
fi

citus_cluster_stop
log "Citus stage: $((SECONDS - started)) s"
echo "citus: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
