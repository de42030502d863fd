#!/usr/bin/env bash
# The pg_regress suite (UTF8 database and the encoding databases) against a
# PostgreSQL 18 assertion build with Valgrind support (scripts/servers.sh
# builds it with --enable-cassert --enable-debug CPPFLAGS=-DUSE_VALGRIND),
# every backend running under valgrind --tool=memcheck with PostgreSQL's own
# suppressions (src/tools/valgrind.supp of the same source).
#
#   scripts/valgrind-regress.sh [TEST ...]     default: every pg_regress test
#
# Slow (the whole suite under memcheck): a check to run by hand, not part of
# scripts/test.sh.  Prints each Valgrind error with its stack, then
# "valgrind: N errors in M backends (K in bson_out)" and "tests: ..."; the
# exit status is 0 only when pg_regress passed and Valgrind reported nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
export PG_MAJOR=18
source scripts/lib.sh

tests=("$@")
install_packages valgrind || exit 1
supp=$BSON_OUT_CACHE/pg18/share/valgrind.supp
[ -f "$supp" ] || { log "no $supp: rebuild PostgreSQL 18 (rm -rf $BSON_OUT_CACHE/pg18)"; exit 1; }
make -s PG_CONFIG="$PG_BINDIR/pg_config" clean >/dev/null 2>&1
build_install COPT=-Werror || exit 1

dir=$(mktemp -d /tmp/bson_out_valgrind.XXXXXX)
chmod 755 "$dir"
chown postgres: "$dir"
export PGHOST=$dir PGPORT=${PGPORT:-$((50000 + RANDOM % 10000))} PGUSER=postgres PGDATABASE=postgres
runuser -u postgres -- "$PG_BINDIR/initdb" -D "$dir/data" -U postgres --encoding=UTF8 --locale=C \
	--auth=trust >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log"; exit 1; }
mkdir "$dir/vg" && chown postgres: "$dir/vg"
log "postgres under valgrind on socket $dir port $PGPORT"
runuser -u postgres -- valgrind --quiet --trace-children=yes --track-origins=yes \
	--read-var-info=yes --num-callers=30 --leak-check=no --error-limit=no \
	--suppressions="$supp" --error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END \
	--log-file="$dir/vg/%p.log" \
	"$PG_BINDIR/postgres" -D "$dir/data" -c listen_addresses= -c unix_socket_directories="$dir" \
	-p "$PGPORT" -c max_connections=20 -c wal_level=logical -c max_replication_slots=10 \
	-c output_plugin_libraries=pgoutput,test_decoding,bson_out >"$dir/server.log" 2>&1 &
server=$!
for _ in $(seq 1 300); do
	"$PG_BINDIR/pg_isready" -q && break
	sleep 1
done
"$PG_BINDIR/pg_isready" -q || { log "the server did not start under valgrind"; tail "$dir/server.log"; exit 1; }

rc=0
if [ ${#tests[@]} -gt 0 ]; then
	make -s PG_CONFIG="$PG_BINDIR/pg_config" installcheck REGRESS="${tests[*]}" >"$dir/regress.log" 2>&1 || rc=1
else
	make -s PG_CONFIG="$PG_BINDIR/pg_config" installcheck >"$dir/regress.log" 2>&1 || rc=1
	make -s -k PG_CONFIG="$PG_BINDIR/pg_config" installcheck-encodings >>"$dir/regress.log" 2>&1 || rc=1
fi
grep -E '\.\.\. |^(not )?ok ' "$dir/regress.log"
ok=$(grep -cE '\.\.\. ok|^ok [0-9]+ ' "$dir/regress.log")
bad=$(grep -cE '\.\.\. FAILED|^not ok [0-9]+ ' "$dir/regress.log")

runuser -u postgres -- "$PG_BINDIR/pg_ctl" -D "$dir/data" -m fast -w -t 300 stop >/dev/null 2>&1
wait "$server"

errors=$(cat "$dir"/vg/*.log | grep -c 'VALGRINDERROR-BEGIN')
ours=$(awk '/VALGRINDERROR-BEGIN/{e=""; on=1} on{e=e $0 "\n"} /VALGRINDERROR-END/{on=0; if (e ~ /bson_out/) n++} END{print n+0}' "$dir"/vg/*.log)
backends=$(grep -l 'VALGRINDERROR-BEGIN' "$dir"/vg/*.log 2>/dev/null | wc -l)
awk '/VALGRINDERROR-BEGIN/{on=1} on{print} /VALGRINDERROR-END/{on=0}' "$dir"/vg/*.log | head -300
echo "valgrind: $errors errors in $backends backends ($ours in bson_out); logs in $dir/vg"
echo "tests: $ok passed, $bad failed"
[ $rc -eq 0 ] && [ "$bad" -eq 0 ] && [ "$errors" -eq 0 ]
