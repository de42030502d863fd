#!/usr/bin/env bash
# One version everywhere: bson_out.control's default_version, and the same
# in the Makefile's EXTVERSION, META.json (the distribution and the
# extension it provides), debian/changelog (the upstream part), the newest
# section of CHANGELOG.md and the --version of both installed programs; the
# install script of that version exists and is the file META.json names.
# META.json also has the fields PGXN's meta-spec 1.0.0 requires.
#
#   test/packaging/versions.sh
#
# Last line "versions: N passed, M failed"; exit status 0 only when nothing
# failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
TAG=versions
source test/packaging/common.sh

version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" bson_out.control)
[ -n "$version" ] || { fail "bson_out.control names a default_version"; finish; }
echo "info versions: bson_out.control: default_version = '$version'"
check "Makefile: EXTVERSION" "$version" "$(sed -n 's/^EXTVERSION = //p' Makefile)"
check "bson_out--$version.sql exists" "bson_out--$version.sql" "$(ls "bson_out--$version.sql" 2>&1)"
# META.json, read by Python's json module: a syntax error fails every check
meta() {
	"$PYTHON" -c 'import json, sys
m = json.load(open("META.json"))
for k in sys.argv[1:]:
    m = m.get(k) if isinstance(m, dict) else None
print(m if isinstance(m, str) else json.dumps(m))' "$@" 2>&1
}
check "META.json: version" "$version" "$(meta version)"
check "META.json: provides.bson_out.version" "$version" "$(meta provides bson_out version)"
check "META.json: provides.bson_out.file" "bson_out--$version.sql" "$(meta provides bson_out file)"
check "META.json: meta-spec.version" "1.0.0" "$(meta meta-spec version)"
check "META.json: name" "bson_out" "$(meta name)"
missing=$(for k in abstract maintainer license; do [ "$(meta "$k")" != null ] || echo "$k"; done)
check "META.json: abstract, maintainer and license are there" "" "$missing"
check "debian/changelog: the upstream version" "$version" \
	"$(sed -n '1s/^[^ ]* (\(.*\)-[^-]*).*/\1/p' debian/changelog)"
check "CHANGELOG.md: the newest section" "$version" "$(sed -n 's/^## \([0-9.]*\).*/\1/p' CHANGELOG.md | head -1)"
check_programs "$PG_BINDIR" "$version"
finish
