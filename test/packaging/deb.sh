#!/usr/bin/env bash
# The Debian package (debian/) of PostgreSQL PG_MAJOR: built, checked with
# lintian, installed, tested against the installed files and removed.
#
#   test/packaging/deb.sh
#
# On a PostgreSQL from Debian's packages (15 on Debian 12, 17 in the Debian 13
# root), as root:
#   - dpkg-buildpackage -us -uc -b in an export of the tree (the files git
#     knows: no build outputs) builds postgresql-NN-bson-out_VERSION_ARCH.deb;
#     the build runs the pg_regress suite against the files it packages;
#   - lintian reports no error (its warnings are printed as info lines);
#   - the package holds the library, the control file and every install
#     script of the tree, both programs in pg_config --bindir, and besides
#     them only its documentation;
#   - dpkg -i installs it; both programs print the version;
#   - debian/tests/installcheck (pg_buildext installcheck, as autopkgtest runs
#     it) passes the pg_regress suite against the installed files;
#   - dpkg -r removes it, and leaves the files under /usr, /etc, /opt and
#     dpkg's records as they were before dpkg -i.
# bson_out must not be installed otherwise: dpkg -i would replace the files
# that make install put at the same paths and dpkg -r remove them
# (scripts/test.sh runs make uninstall before and make install after).
#
# Elsewhere (a PostgreSQL built from source, not root) it prints "skip: ..."
# and last "package: 0 passed, 0 failed, skipped"; otherwise last
# "package: N passed, M failed".  Exit status 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PG_MAJOR=${PG_MAJOR:-15}
source scripts/lib.sh
TAG=package
source test/packaging/common.sh

[ "$(pg_kind "$PG_MAJOR")" = debian ] ||
	skip "PostgreSQL $PG_MAJOR is built from source here (scripts/servers.sh), and postgresql-NN-bson-out builds only against Debian's PostgreSQL packages"
[ "$(id -u)" -eq 0 ] || skip "dpkg -i needs root"
install_debian_packages build-essential debhelper postgresql-all lintian libmongoc-dev pkg-config ||
	{ fail "installing the Debian packages that build the package"; finish; }
pg_buildext supported-versions | grep -qx "$PG_MAJOR" ||
	skip "PostgreSQL $PG_MAJOR is not a version this postgresql-common supports ($(pg_buildext supported-versions | xargs))"
if bson_out_installed; then
	fail "bson_out is installed in $PG_BINDIR/.. already (make uninstall first): dpkg -i would replace its files"
	finish
fi

started=$SECONDS
version=$(sed -n '1s/^[^ ]* (\(.*\)).*/\1/p' debian/changelog)
arch=$(dpkg --print-architecture)
pkg=postgresql-$PG_MAJOR-bson-out
deb=${pkg}_${version}_$arch.deb
# the server (user postgres) reads the files to package through the build
# directory
work=$(mktemp -d "${TMPDIR:-/tmp}/bson_out-deb.XXXXXX")
chmod 755 "$work"
src=$work/bson-out-${version%-*}
cleanup() {
	dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -q '^installed' && dpkg -r "$pkg" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
mkdir "$src"
tree_archive "$work/tree.tar" && tar -xf "$work/tree.tar" -C "$src" ||
	{ fail "exporting the tree"; finish; }

# build (with the pg_regress suite against the files it packages)
log "package: dpkg-buildpackage -us -uc -b"
if (cd "$src" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 && [ -f "$work/$deb" ]; then
	ok "dpkg-buildpackage -us -uc -b builds $deb ($(grep -cE '\.\.\. ok|^ok [0-9]+ ' "$work/build.log") pg_regress tests passed at build time)"
else
	fail "dpkg-buildpackage -us -uc -b builds $deb" "$(grep -E 'error|FAILED|not ok|\.\.\. failed' "$work/build.log" | tail -15)"
	tail -40 "$work/build.log" | sed 's/^/     | /'
	finish
fi

# lintian: errors fail, warnings are shown
lint=$(lintian "$work"/*.deb 2>&1 | grep -v '^running with root privileges')
errors=$(grep -c '^E: ' <<<"$lint")
warnings=$(grep -c '^W: ' <<<"$lint")
if [ "$errors" -eq 0 ] && ! grep -q '^internal error\|^lintian: ' <<<"$lint"; then
	ok "lintian: no errors ($warnings warnings)"
else
	fail "lintian: no errors" "$lint"
fi
grep '^W: ' <<<"$lint" | sed 's/^/info lintian: /'

# the package's files: what make install puts there, and the documentation
bindir=$("$PG_BINDIR/pg_config" --bindir)
pkglibdir=$("$PG_BINDIR/pg_config" --pkglibdir)
extdir=$("$PG_BINDIR/pg_config" --sharedir)/extension
files=$(dpkg-deb -c "$work/$deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' | sort)
expected=$( (echo "$bindir/pg_bsonexport"; echo "$bindir/pg_bsonstream"; echo "$pkglibdir/bson_out.so"
	for f in bson_out.control bson_out--*.sql; do echo "$extdir/$f"; done) | sort)
check "the package holds the library, the control file, the install scripts and both programs" \
	"$expected" "$(grep -Fx -f <(echo "$expected") <<<"$files")"
others=$(grep -vFx -f <(echo "$expected") <<<"$files" | grep -vE "^($pkglibdir/bitcode|/usr/share/doc/$pkg)/")
check "the package holds nothing else but bitcode and its documentation" "" "$others"

# install, test, remove
system_files >"$work/before"
if dpkg -i "$work/$deb" >"$work/install.log" 2>&1; then
	ok "dpkg -i $deb"
else
	fail "dpkg -i $deb" "$(tail -10 "$work/install.log")"
fi
check_programs "installed by dpkg" "${version%-*}"
log "package: debian/tests/installcheck (pg_buildext installcheck) against the installed package"
if (cd "$src" && debian/tests/installcheck) >"$work/installcheck.log" 2>&1; then
	ok "debian/tests/installcheck: $(grep -E 'tests passed' "$work/installcheck.log" | tr -s ' =#' ' ' | xargs)"
else
	fail "debian/tests/installcheck" "$(grep -E '^(test | ?[a-z_0-9]+ +\.\.\.|not ok)|FAILED|failed|rror' "$work/installcheck.log" | tail -30)"
fi
if dpkg -r "$pkg" >"$work/remove.log" 2>&1; then
	ok "dpkg -r $pkg"
else
	fail "dpkg -r $pkg" "$(tail -10 "$work/remove.log")"
fi
check "dpkg knows no $pkg after dpkg -r" "" "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -v not-installed)"
check_same_files "dpkg -r leaves the files as they were before dpkg -i" "$work/before"
echo "info package: $((SECONDS - started)) s"
finish
