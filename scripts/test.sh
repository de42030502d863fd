#!/usr/bin/env bash
# The full test suite, from a fresh Debian 12 machine (as root) or any machine
# with PostgreSQL and the packages below installed:
#
#   scripts/test.sh [--pg NN]        NN: 13, 15 (the default), 17 or 18
#   scripts/test.sh --fresh-root     the suite on 15 in a fresh Debian 12 root
#
# --fresh-root proves the first claim: the tree is copied (a git repository
# of the working tree's files) into a Debian 12 root made by debootstrap
# --variant=minbase with git added, unpacked untouched from its tarball under
# /var/cache/bson_out for every run, and the whole suite runs inside it, the
# Citus stage (the Citus archive copied in) and the packaging stages
# included; only apt's downloaded .deb files are kept between runs
# (scripts/fresh_root.sh).  CI (.ci/run) runs 15 this way.
#
# The suite, wherever it runs:
#   - installs what is missing: the PostgreSQL server of that version (15:
#     Debian 12's packages; 13 and 18: built from Debian's source packages
#     into /var/cache/bson_out, 18 with assertions; 17: Debian 13's packages
#     in a Debian 13 root, where the whole suite then runs; scripts/servers.sh),
#     pymongo's BSON codec and psycopg2 as the independent oracle, libbson,
#     iproute2 (ss), and Debian's nodejs and npm where there is no node,
#   - builds with -Werror and installs the extension,
#   - starts a throwaway cluster on a private socket and port,
#   - runs the pg_regress suites (UTF8 database, then LATIN1, SQL_ASCII and
#     WIN1252); the cluster runs with wal_level = logical and bson_out among
#     the output plugins, for the change-stream tests,
#   - runs the C unit tests of the Extended JSON value parsers, of the
#     decoder's core and of pg_bsonstream --to's applier (batching, key
#     changes, refusals, retries, a cut at every write; against an in-memory
#     target), and replays the fuzz corpus under ASan/UBSan,
#   - runs the cross-checks against pymongo (10,000 generated documents in
#     UTF8, plus LATIN1 and SQL_ASCII databases; 10,000 Extended JSON
#     documents encoded by pymongo's json_util and bson; 3,000 typed rows
#     through row_to_bson decoded by pymongo and compared with the values;
#     bson_to_json against pymongo's json_util and the from_bson/to_bson
#     round trips on 10,000 generated documents, plus 2,000 in LATIN1; the
#     change events of a random workload of 50,000 row changes, with values
#     without a BSON mapping and rows whose events are split into fragments,
#     replayed onto a model of the tables, commit markers checked),
#   - stops and removes the cluster,
#   - runs the pg_bsonexport tests (test/exporter/run.sh, their own cluster),
#   - runs the pg_bsonstream tests (test/stream/run.sh, their own cluster with
#     wal_level = logical),
#   - runs the document model tests (test/model/run.sh, their own cluster):
#     every key shape gives the same documents in pg_bsonexport --table and
#     --out-dir, the first copy and the change events,
#   - runs the pg_bsonstream --to tests (test/mongo/run.sh: into FerretDB,
#     built once by scripts/ferretdb.sh),
#   - runs the mongo-tools checks (test/mongotools/run.sh): bsondump
#     --objcheck on every .bson file the programs write, mongorestore of a
#     pg_bsonexport --out-dir dump into FerretDB read back byte for byte
#     (mongo-tools 100.8.0 built from ../shared/vendor by
#     scripts/mongotools.sh, cached),
#   - checks the documentation (test/docs/run.sh): the options of both
#     programs' --help against docs/pg_bsonexport.md and docs/pg_bsonstream.md,
#     each documented once; every relative link and #anchor of README.md,
#     docs/, BENCHMARKS.md and CHANGELOG.md; README.md at most 750 lines,
#   - runs the Debezium benchmark's smoke run (bench/debezium_bench.sh
#     --smoke: Debezium 3.6.1 and pg_bsonstream on a few thousand changes,
#     captured, applied into FerretDB and copied first, the end states
#     checked; Maven, a JDK and the Maven repository under /var/cache/bson_out),
#   - checks that the control file, the Makefile, META.json, the changelogs
#     and the programs name one version (test/packaging/versions.sh),
#   - on PostgreSQL 15, runs the Citus stage (test/citus/run.sh: a coordinator
#     and two workers on loopback; every function on distributed and reference
#     tables against a local one, pg_bsonexport, pg_bsonstream --citus and
#     --citus --to into FerretDB on them).  Citus 13.2.2 is
#     built from its source archive (CITUS_ARCHIVE, by default
#     ../shared/vendor/citus-13.2.2.tar.gz) by scripts/citus.sh and cached;
#     without the archive the stage prints "skipped" and counts nothing,
#   - last, on a PostgreSQL from Debian's packages (15; 17 in the Debian 13
#     root), builds the Debian package (debian/) from an export of the tree,
#     runs lintian, installs it, runs the pg_regress suite against the
#     installed files and removes it (test/packaging/deb.sh), and on every
#     version installs the PGXN distribution that make dist writes with
#     pgxn install, tests it and uninstalls it (test/packaging/pgxn.sh;
#     not in the Debian 13 root, whose copy of the tree has no git
#     repository); both check that the removal leaves no file behind.
# It prints "server: ..." and "compiler: ..." lines, and last
# "tests: N passed, M failed"; the exit status is 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."

fresh_root=
while [ $# -gt 0 ]; do
	case $1 in
	--pg) PG_MAJOR=$2; shift 2 ;;
	--pg=*) PG_MAJOR=${1#--pg=}; shift ;;
	--fresh-root) fresh_root=1; shift ;;
	*) echo "usage: scripts/test.sh [--pg 13|15|17|18] [--fresh-root]" >&2; exit 2 ;;
	esac
done
export PG_MAJOR=${PG_MAJOR:-15}
case $PG_MAJOR in
13 | 15 | 17 | 18) ;;
*) echo "scripts/test.sh: PostgreSQL $PG_MAJOR is not a supported version (13, 15, 17, 18)" >&2; exit 2 ;;
esac
if [ -n "$fresh_root" ] && [ "$PG_MAJOR" != 15 ]; then
	echo "scripts/test.sh: --fresh-root runs PostgreSQL 15, Debian 12's own (not $PG_MAJOR)" >&2
	exit 2
fi
source scripts/lib.sh

# --fresh-root: the whole suite in a fresh Debian 12 root, which installs
# everything itself (scripts/fresh_root.sh)
if [ -n "$fresh_root" ]; then
	source scripts/fresh_root.sh
	debian12_suite "$PG_MAJOR"
	exit $?
fi

# 17 runs in a Debian 13 root: the suite is copied there and runs inside it
if [ "$(pg_kind "$PG_MAJOR")" = chroot ]; then
	root=$(pg17_root) || { echo "tests: 0 passed, 1 failed"; exit 1; }
	log "running the suite in the Debian 13 root $root"
	rm -rf "$root/src/bson_out" "$root/src/bson_out.tar"
	mkdir -p "$root/src/bson_out"
	tree_archive "$root/src/bson_out.tar" && tar -xf "$root/src/bson_out.tar" -C "$root/src/bson_out" ||
		{ echo "tests: 0 passed, 1 failed"; exit 1; }
	# the root has no Go to build FerretDB: the host's static binary goes in
	source scripts/ferretdb.sh
	ferretdb_into_root "$root" || { echo "tests: 0 passed, 1 failed"; exit 1; }
	source scripts/mongotools.sh
	mongotools_into_root "$root" || { echo "tests: 0 passed, 1 failed"; exit 1; }
	in_root "$root" /bin/bash /src/bson_out/scripts/test.sh --pg "$PG_MAJOR"
	exit $?
fi

# libmongoc-dev: pg_bsonstream --to (into MongoDB), which the mongo stage tests
install_packages libpq-dev libbson-dev libmongoc-dev pkg-config time || exit 1
make -s PG_CONFIG="$PG_BINDIR/pg_config" clean >/dev/null 2>&1
build_install COPT=-Werror || exit 1
echo "server: $("$PG_BINDIR/postgres" --version | sed "s/^postgres (PostgreSQL) //") ($(pg_build_description "$PG_MAJOR"))"
echo "compiler: $($("$PG_BINDIR/pg_config" --cc | awk '{print $1}') --version | head -1)"
# the change-stream tests decode the WAL
logical_decoding_opts
cluster_start || exit 1

passed=0
failed=0
failures=()

# pg_regress: its exit status, and its per-test lines in both of its formats:
# "test types ... ok" (and "     types ... ok" in parallel groups) up to 15,
# TAP from 16 ("ok 1 - types", "not ok 2 - numbers")
regress() {
	local label=$1
	shift
	local out
	log "pg_regress: $label"
	out=$(make -s PG_CONFIG="$PG_BINDIR/pg_config" "$@" 2>&1)
	local rc=$?
	printf '%s\n' "$out" | grep -E '^(test | ?[a-z_0-9]+ +\.\.\.|ok |not ok |# )' || printf '%s\n' "$out"
	local ok bad
	ok=$(printf '%s\n' "$out" | grep -cE '\.\.\. ok|^ok [0-9]+ ')
	bad=$(printf '%s\n' "$out" | grep -cE '\.\.\. FAILED|\.\.\. failed|^not ok [0-9]+ ')
	passed=$((passed + ok))
	failed=$((failed + bad))
	if [ $rc -ne 0 ] || [ "$ok" -eq 0 ]; then
		[ "$bad" -gt 0 ] || failed=$((failed + 1))
		failures+=("pg_regress $label")
		[ -f test/regression.diffs ] && head -200 test/regression.diffs
	fi
}

# the C unit tests (no server needed): the Extended JSON value parsers, the
# decoder's core, and the --to applier against its in-memory target
log "unit tests: Extended JSON value parsers, decoder core, --to applier (in-memory target)"
unit_out=$(make -s -C test/unit PG_CONFIG="$PG_BINDIR/pg_config" check 2>&1)
printf '%s\n' "$unit_out" | grep -E '^FAIL' | head -20
printf '%s\n' "$unit_out" | grep -vE '^FAIL' | tail -6
unit_line=$(printf '%s\n' "$unit_out" | grep -E '^unit: [0-9]+ passed, [0-9]+ failed' | tail -1)
if [ -n "$unit_line" ]; then
	passed=$((passed + $(printf '%s' "$unit_line" | sed -E 's/^unit: ([0-9]+) passed.*/\1/')))
	failed=$((failed + $(printf '%s' "$unit_line" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
else
	failed=$((failed + 1))
	failures+=("unit tests")
fi

# the decoder's core replayed outside PostgreSQL under AddressSanitizer and
# UndefinedBehaviorSanitizer: the fuzz seed corpus and every regression input
log "fuzz corpus replay (ASan + UBSan): src/core/bson_reader.c"
if replay_out=$(./fuzz/run.sh --replay 2>&1); then
	printf '%s\n' "$replay_out" | tail -3
	passed=$((passed + 1))
else
	printf '%s\n' "$replay_out" | tail -30
	failed=$((failed + 1))
	failures+=("fuzz replay")
fi

regress "UTF8 database" installcheck
regress "LATIN1, SQL_ASCII and WIN1252 databases" -k installcheck-encodings

# the cross-check against pymongo; counts documents
crosscheck() {
	local label=$1 db=$2 encoding=$3
	shift 3
	log "cross-check with pymongo: $label"
	createdb -T template0 -E "$encoding" "$db" && psql -qX -d "$db" -c 'CREATE EXTENSION bson_out' || {
		failed=$((failed + 1)); failures+=("crosscheck $label: setup"); return; }
	local out
	out=$(PGDATABASE=$db "$PYTHON" "${CROSSCHECK_SCRIPT:-test/crosscheck_encode.py}" "$@" 2>&1)
	local rc=$?
	printf '%s\n' "$out" | tail -25
	local line ok bad
	local tag=${CROSSCHECK_TAG:-crosscheck}
	line=$(printf '%s\n' "$out" | grep -E "^$tag: [0-9]+ passed, [0-9]+ failed" | tail -1)
	ok=$(printf '%s' "$line" | sed -E "s/^$tag: ([0-9]+) passed.*/\\1/")
	bad=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
	passed=$((passed + ${ok:-0}))
	failed=$((failed + ${bad:-0}))
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		[ "${bad:-0}" -gt 0 ] || failed=$((failed + 1))
		failures+=("crosscheck $label")
	fi
}

crosscheck "UTF8 database" xcheck_utf8 UTF8 --count 10000
crosscheck "LATIN1 database" xcheck_latin1 LATIN1 --count 3000 --alphabet latin1 --seed 2
crosscheck "SQL_ASCII database" xcheck_sql_ascii SQL_ASCII --count 3000 --seed 3
CROSSCHECK_SCRIPT=test/crosscheck_encode_extjson.py CROSSCHECK_TAG=crosscheck-extjson \
	crosscheck "Extended JSON, UTF8 database" xcheck_extjson UTF8 --count 10000
CROSSCHECK_SCRIPT=test/crosscheck_encode_rows.py CROSSCHECK_TAG=crosscheck-rows \
	crosscheck "typed rows, UTF8 database" xcheck_rows UTF8 --count 3000
CROSSCHECK_SCRIPT=test/crosscheck_decode.py CROSSCHECK_TAG=crosscheck-decode \
	crosscheck "reading BSON back, UTF8 database" xcheck_decode UTF8 --count 10000
CROSSCHECK_SCRIPT=test/crosscheck_decode.py CROSSCHECK_TAG=crosscheck-decode \
	crosscheck "reading BSON back, LATIN1 database" xcheck_decode_latin1 LATIN1 --count 2000 --alphabet latin1 --seed 2
# change streams: a random workload from concurrent sessions, its events
# (read from a slot and through pg_recvlogical) replayed onto a model that
# must equal the tables
CROSSCHECK_SCRIPT=test/crosscheck_changes.py CROSSCHECK_TAG=crosscheck-changes \
	crosscheck "change streams, UTF8 database" xcheck_changes UTF8 --changes 50000
# js-bson (npm's bson, a third decoder) decodes the datetimes that the
# fallback writes for infinite dates and timestamps, as pymongo does in the
# rows cross-check; npm's package is installed once under the cache, and
# Debian's nodejs and npm where there is no node (Debian 12's node 18 runs
# bson 7, whose package asks for node 20.19: npm only warns), with
# ca-certificates for npm's registry
jsbson() {
	local dir=${BSON_OUT_CACHE:-/var/cache/bson_out}/npm-bson out pkgs=(ca-certificates)
	log "js-bson: the fallback datetimes"
	command -v node >/dev/null || pkgs+=(nodejs)
	command -v npm >/dev/null || pkgs+=(npm)
	if ! install_debian_packages "${pkgs[@]}"; then
		failed=$((failed + 1))
		failures+=("js-bson: installing ${pkgs[*]}")
		return
	fi
	if [ ! -d "$dir/node_modules/bson" ] &&
		! out=$(npm install --silent --no-audit --no-fund --prefix "$dir" bson@7 2>&1); then
		printf '%s\n' "$out" | tail -10
		failed=$((failed + 1))
		failures+=("js-bson: npm install bson@7")
		return
	fi
	out=$(PGOPTIONS='-c bson_out.unmappable_values=fallback' psql -AtX -d xcheck_rows -c \
		"SELECT encode(row_to_bson(ROW('infinity'::timestamptz, '-infinity'::timestamptz, 'infinity'::timestamp,
			'-infinity'::date, ARRAY['infinity'::date, '-infinity'::date])), 'hex')" 2>/dev/null |
		NODE_PATH="$dir/node_modules" node test/fallback_datetimes.js 2>&1)
	local rc=$?
	printf '%s\n' "$out"
	if [ $rc -eq 0 ] && [ "$(grep -c '^f[0-9.]*: 9999-12-31T23:59:59.999Z (253402300799999 ms)$' <<<"$out")" = 3 ] &&
		[ "$(grep -c '^f[0-9.]*: 0001-01-01T00:00:00.000Z (-62135596800000 ms)$' <<<"$out")" = 3 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("js-bson fallback datetimes")
	fi
}
jsbson

# memory bounded by the output, not by the number of values (backend peaks)
CROSSCHECK_SCRIPT=test/memory_check.py CROSSCHECK_TAG=memory \
	crosscheck "backend memory, UTF8 database" memory_check UTF8

cluster_stop

# stage TAG NAME COMMAND...: a test program of its own whose last line is
# "TAG: N passed, M failed", or "TAG: 0 passed, 0 failed, skipped" (counted
# as nothing); its failures, skips and sub-totals are shown
stage() {
	local tag=$1 name=$2 out rc line ok bad
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | grep -E "^FAIL|^     \||^skip|^info|^$tag(-[a-z]+)?:" | tail -40
	printf '%s\n' "$out" | grep -qE "^$tag: 0 passed, 0 failed, skipped$" && return
	line=$(printf '%s\n' "$out" | grep -E "^$tag: [0-9]+ passed, [0-9]+ failed$" | tail -1)
	ok=$(printf '%s' "$line" | sed -E "s/^$tag: ([0-9]+) passed.*/\\1/")
	bad=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
	passed=$((passed + ${ok:-0}))
	failed=$((failed + ${bad:-0}))
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		[ "${bad:-0}" -gt 0 ] || failed=$((failed + 1))
		failures+=("$name")
		[ -n "$line" ] || printf '%s\n' "$out" | tail -30
	fi
}

# one version in the control file, the Makefile, META.json, debian/changelog,
# CHANGELOG.md and the installed programs
log "versions: the control file, Makefile, META.json, the changelogs and the programs agree"
stage versions "version checks" test/packaging/versions.sh

# pg_bsonexport: the installed program, on its own throwaway cluster
log "pg_bsonexport: exports read back by pymongo and libbson"
stage exporter "pg_bsonexport tests" env PG_BSONEXPORT="$PG_BINDIR/pg_bsonexport" test/exporter/run.sh

# pg_bsonstream: the installed program, on its own throwaway cluster
log "pg_bsonstream: a first copy and the change stream through kills, restarts, errors"
stage stream "pg_bsonstream tests" env PG_BSONSTREAM="$PG_BINDIR/pg_bsonstream" test/stream/run.sh

# the document model: the export, the first copy and the change events agree
log "the document model: pg_bsonexport, the first copy and the events write the same documents"
stage model "document model tests" env PG_BSONEXPORT="$PG_BINDIR/pg_bsonexport" \
	PG_BSONSTREAM="$PG_BINDIR/pg_bsonstream" test/model/run.sh

# into MongoDB: pg_bsonstream --to against FerretDB, through kills and restarts on both sides
log "pg_bsonstream --to: the first copy and every change applied into FerretDB"
stage mongo "pg_bsonstream --to tests" env PG_BSONSTREAM="$PG_BINDIR/pg_bsonstream" test/mongo/run.sh

# what mongo-tools (bsondump, mongorestore) say of the files the programs write
log "mongo-tools: bsondump --objcheck on every .bson written, mongorestore of a dump into FerretDB"
stage mongotools "mongo-tools checks" env PG_BSONEXPORT="$PG_BINDIR/pg_bsonexport" \
	PG_BSONSTREAM="$PG_BINDIR/pg_bsonstream" test/mongotools/run.sh

# the documentation: every option of --help documented once, every link resolves
log "the documentation: options of --help against docs/, links and anchors, README length"
stage docs "documentation checks" env PG_BSONEXPORT="$PG_BINDIR/pg_bsonexport" \
	PG_BSONSTREAM="$PG_BINDIR/pg_bsonstream" test/docs/run.sh

# the Debezium comparison, small: both sides run and their end states checked,
# so that the benchmark cannot rot (it builds its Java side with Maven, cached)
log "bench/debezium_bench.sh --smoke: Debezium and bson_out on a few thousand changes"
stage debezium "Debezium benchmark smoke run" env -u PGHOST -u PGPORT -u PGDATABASE -u PGUSER \
	bench/debezium_bench.sh --smoke --no-install

# Citus: bson_out on a coordinator and two workers, their own clusters
if [ "$PG_MAJOR" = 15 ]; then
	log "Citus: every function on distributed tables, on the workers"
	stage citus "Citus tests" env PG_BSONEXPORT="$PG_BINDIR/pg_bsonexport" test/citus/run.sh
else
	echo "skip: citus: Citus 13.2 is built here against PostgreSQL 15 only"
fi

# The Debian package and the PGXN distribution, last: each installs bson_out
# into this PostgreSQL's own directories, at the paths make install wrote at
# the start, and checks that its removal leaves the files as they were before
# its install; its removal would take away make install's files too.  So
# make uninstall takes those away first and build_install puts them back
# after, and the PostgreSQL ends as the stages before left it.
log "the Debian package: built, checked with lintian, installed, tested, removed"
make -s PG_CONFIG="$PG_BINDIR/pg_config" uninstall >/dev/null
packaging_started=$SECONDS
stage package "Debian package" test/packaging/deb.sh
log "PGXN: make dist, pgxn install, pgxn check, pgxn uninstall"
stage pgxn "PGXN distribution" test/packaging/pgxn.sh
echo "info packaging: $((SECONDS - packaging_started)) s"
build_install COPT=-Werror || { failed=$((failed + 1)); failures+=("make install after the packaging stages"); }

echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "failed: ${failures[*]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
