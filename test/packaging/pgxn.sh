#!/usr/bin/env bash
# The PGXN distribution (META.json, make dist), installed with PGXN's client
# into the PostgreSQL of PG_MAJOR, tested and uninstalled.
#
#   test/packaging/pgxn.sh
#
#   - make dist writes bson_out-VERSION.zip (VERSION: the Makefile's
#     EXTVERSION) whose entries are exactly the files of git's HEAD under one
#     top directory bson_out-VERSION/ (so no build outputs), META.json among
#     them;
#   - pgxn install --pg_config PG_CONFIG ./bson_out-VERSION.zip builds and
#     installs it (pgxnclient, Debian's package);
#   - both programs print the version; on a throwaway cluster CREATE
#     EXTENSION bson_out and to_bson('{"a": 1}') give the expected bytes, and
#     pgxn check (the pg_regress suite, make installcheck) passes against the
#     installed files;
#   - pgxn uninstall removes it, and leaves the files of the system and of the
#     PostgreSQL as they were before pgxn install.
# bson_out must not be installed otherwise, as pgxn install would replace the
# files of make install and pgxn uninstall remove them (scripts/test.sh runs
# make uninstall before and make install after).  The archive holds HEAD:
# what is not committed is not in it.
#
# Without git's repository (the suite's copy in the Debian 13 root) or as
# another user than root it prints "skip: ..." and last
# "pgxn: 0 passed, 0 failed, skipped"; otherwise last
# "pgxn: N passed, M failed".  Exit status 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
TAG=pgxn
source test/packaging/common.sh

[ "$(id -u)" -eq 0 ] || skip "pgxn install writes into the PostgreSQL's directories: it needs root"
git rev-parse --git-dir >/dev/null 2>&1 ||
	skip "make dist archives git's HEAD, and $PWD is no git checkout (the Debian 13 root runs the suite from a copy)"
install_debian_packages pgxnclient unzip libpq-dev ||
	{ fail "installing pgxnclient"; finish; }
if bson_out_installed; then
	fail "bson_out is installed in $PG_BINDIR/.. already (make uninstall first): pgxn install would replace its files"
	finish
fi

started=$SECONDS
version=$(sed -n 's/^EXTVERSION = //p' Makefile)
zip=bson_out-$version.zip
work=$(mktemp -d "${TMPDIR:-/tmp}/bson_out-pgxn.XXXXXX")
cleanup() {
	[ -f "$work/$zip" ] && bson_out_installed &&
		(cd "$work" && pgxn uninstall --yes --pg_config "$PG_BINDIR/pg_config" "./$zip") >/dev/null 2>&1
	cluster_stop
	rm -rf "$work"
}
trap cleanup EXIT

# make dist: git's HEAD under one top directory
if make -s dist PG_CONFIG="$PG_BINDIR/pg_config" >"$work/dist.log" 2>&1 && mv "$zip" "$work/"; then
	ok "make dist writes $zip"
else
	fail "make dist writes $zip" "$(tail -5 "$work/dist.log")"
	finish
fi
entries=$(unzip -Z1 "$work/$zip" | grep -v '/$' | sort)
check "$zip holds git's HEAD under bson_out-$version/" \
	"$(git ls-tree -r --name-only HEAD | sed "s|^|bson_out-$version/|" | sort)" "$entries"
check "$zip has META.json at the top" "bson_out-$version/META.json" "$(grep -x "bson_out-$version/META.json" <<<"$entries")"

# install with PGXN's client
system_files >"$work/before"
log "pgxn: pgxn install ./$zip"
if (cd "$work" && pgxn install --yes --pg_config "$PG_BINDIR/pg_config" "./$zip") >"$work/install.log" 2>&1; then
	ok "pgxn install ./$zip"
else
	fail "pgxn install ./$zip" "$(grep -iE 'error|not found' "$work/install.log" | tail -10)"
	tail -20 "$work/install.log" | sed 's/^/     | /'
fi
check_programs "installed by pgxn" "$version"

# on a throwaway cluster: the extension, then the pg_regress suite
logical_decoding_opts
cluster_start >/dev/null 2>&1 || { fail "starting a throwaway cluster"; finish; }
trap cleanup EXIT
check "CREATE EXTENSION bson_out; SELECT to_bson('{\"a\": 1}')" "0c0000001061000100000000" \
	"$(psql -AtqX -c 'CREATE EXTENSION bson_out' -c "SELECT encode(to_bson('{\"a\": 1}'), 'hex')" 2>&1)"
log "pgxn: pgxn check ./$zip (make installcheck)"
if (cd "$work" && pgxn check --pg_config "$PG_BINDIR/pg_config" "./$zip") >"$work/check.log" 2>&1; then
	ok "pgxn check ./$zip: $(grep -E 'tests passed' "$work/check.log" | tr -s ' =#' ' ' | xargs)"
else
	fail "pgxn check ./$zip" "$(grep -E '\.\.\. FAILED|\.\.\. failed|^not ok|rror' "$work/check.log" | tail -20)"
fi
cluster_stop

if (cd "$work" && pgxn uninstall --yes --pg_config "$PG_BINDIR/pg_config" "./$zip") >"$work/uninstall.log" 2>&1; then
	ok "pgxn uninstall ./$zip"
else
	fail "pgxn uninstall ./$zip" "$(tail -10 "$work/uninstall.log")"
fi
check_same_files "pgxn uninstall leaves the files as they were before pgxn install" "$work/before"
echo "info pgxn: $((SECONDS - started)) s"
finish
