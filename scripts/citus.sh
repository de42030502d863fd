#!/usr/bin/env bash
# scripts/citus.sh [ARCHIVE]: builds Citus 13.2.2 against Debian's PostgreSQL
# 15 and installs it there, for the Citus stage of the test suite
# (test/citus/run.sh).  Citus is a test dependency only; bson_out does not
# need it.
#
# ARCHIVE (or CITUS_ARCHIVE) is the release's source tarball, by default
# ../shared/vendor/citus-13.2.2.tar.gz beside the repository; its sha256 is
# checked against the one ../shared/vendor/README.md gives.  The build is
# staged under BSON_OUT_CACHE (/var/cache/bson_out/citus-13.2.2-pg15) with a
# stamp naming the archive and the server version, so a later run only copies
# the staged files into the PostgreSQL installation.
#
# Exit status: 0 installed, 1 failed, 2 not possible here (no archive, no
# PostgreSQL 15, not root); the reason is the last line on stderr.
set -euo pipefail

cd "$(dirname "$0")/.."
PG_MAJOR=15
source scripts/lib.sh

CITUS_VERSION=13.2.2
CITUS_SHA256=dd2453caec20a830e5e63f1def5c5a98cb6f57ae510407cdcd800916fcdab430
archive=${1:-${CITUS_ARCHIVE:-$BSON_OUT_VENDOR/citus-$CITUS_VERSION.tar.gz}}
cache=$BSON_OUT_CACHE/citus-$CITUS_VERSION-pg15
stage=$cache/root
stamp=$cache/.bson_out-build
pg_config=/usr/lib/postgresql/15/bin/pg_config

unavailable() {
	log "$*"
	exit 2
}

[ -f "$archive" ] || unavailable "no Citus source archive at $archive"
[ "$(id -u)" -eq 0 ] || unavailable "need root to install Citus into PostgreSQL 15"
install_packages || unavailable "PostgreSQL 15 and its server headers are not installable here"
[ -x "$pg_config" ] || unavailable "no $pg_config"

sum=$(sha256sum "$archive" | cut -d' ' -f1)
[ "$sum" = "$CITUS_SHA256" ] || { log "$archive: sha256 $sum, expected $CITUS_SHA256"; exit 1; }

# The stamp pins the archive and the exact server build: a Debian point
# release may change the headers Citus was compiled against.
want="citus $CITUS_VERSION $sum; $("$pg_config" --version)"

if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$stage" ]; }; then
	install_debian_packages liblz4-dev libzstd-dev libcurl4-openssl-dev libkrb5-dev
	work=$cache/build
	rm -rf "$work" "$stage" "$stamp"
	mkdir -p "$work"
	log "building Citus $CITUS_VERSION against $("$pg_config" --version) (5 to 10 minutes)"
	tar -xzf "$archive" -C "$work"
	src=$work/citus-$CITUS_VERSION
	# PostgreSQL 15.20's commands/dbcommands.h declares have_createdb_privilege,
	# which Citus's compatibility header defines again as a static function
	# for servers before 16; renaming Citus's copy avoids the clash and is
	# harmless with older 15.x headers.
	awk '/^have_createdb_privilege\(void\)/ && prev ~ /^static inline bool/ {
		print "#define have_createdb_privilege citus_compat_have_createdb_privilege"
	}
	NR > 1 { print prev }
	{ prev = $0 }
	END { print prev }' "$src/src/include/pg_version_compat.h" >"$work/compat.h"
	grep -q citus_compat_have_createdb_privilege "$work/compat.h" ||
		{ log "pg_version_compat.h: the have_createdb_privilege definition was not found"; exit 1; }
	mv "$work/compat.h" "$src/src/include/pg_version_compat.h"
	(cd "$src" && ./configure PG_CONFIG="$pg_config" >"$work/configure.log" 2>&1 &&
		make -j"$(nproc)" >"$work/make.log" 2>&1 &&
		make install DESTDIR="$stage" >"$work/install.log" 2>&1) || {
		log "building Citus failed; logs in $work"
		tail -20 "$work"/*.log >&2
		exit 1
	}
	echo "$want" >"$stamp"
	rm -rf "$work"
fi

# The staged tree mirrors the installation's absolute paths
# (/usr/lib/postgresql/15/lib, /usr/share/postgresql/15/extension, ...).
# A file that differs is replaced by a rename, never rewritten in place: a
# server running with the old citus.so keeps its mapping of the old file,
# where an overwrite would crash it.
(cd "$stage" && find . -type f -print0) | while IFS= read -r -d '' f; do
	dst=/${f#./}
	cmp -s "$stage/$f" "$dst" && continue
	mkdir -p "$(dirname "$dst")"
	cp -a "$stage/$f" "$dst.tmp.$$" && mv -f "$dst.tmp.$$" "$dst" || exit 1
done || { log "could not install Citus's files"; exit 1; }
log "Citus $CITUS_VERSION installed into $("$pg_config" --pkglibdir)"
