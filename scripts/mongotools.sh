# mongo-tools 100.8.0 (bsondump, mongorestore): a real consumer of the .bson
# files and dump directories the programs write.  Built from the vendored
# source archive (../shared/vendor/mongo-tools-100.8.0.tar.gz, its Go
# dependencies vendored: no network), once, into the cache.  Source it after
# scripts/lib.sh and scripts/ferretdb.sh; it defines functions only.
#
#   mongotools_build             builds bsondump and mongorestore once into
#                                the cache; prints their directory
#   mongotools_into_root ROOT    puts those binaries into a Debian root's
#                                cache (the roots' Go is too old or absent)
#
# The binaries are static (CGO_ENABLED=0), so the host's run in any root.

MONGOTOOLS_VERSION=100.8.0
MONGOTOOLS_CACHE=${BSON_OUT_CACHE:-/var/cache/bson_out}/mongo-tools-$MONGOTOOLS_VERSION
MONGOTOOLS_RECIPE="mongo-tools $MONGOTOOLS_VERSION, bsondump mongorestore, CGO_ENABLED=0, -mod=vendor"

# the archive: MONGO_TOOLS_ARCHIVE, or beside the clone (../shared/vendor)
mongotools_archive() {
	local a
	for a in "${MONGO_TOOLS_ARCHIVE:-}" "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/vendor/mongo-tools-$MONGOTOOLS_VERSION.tar.gz" \
		"/src/shared/vendor/mongo-tools-$MONGOTOOLS_VERSION.tar.gz"; do
		[ -n "$a" ] && [ -f "$a" ] && { echo "$a"; return 0; }
	done
	return 1
}

mongotools_build() {
	if [ -x "$MONGOTOOLS_CACHE/bin/mongorestore" ] &&
		[ "$(cat "$MONGOTOOLS_CACHE/.bson_out-build" 2>/dev/null)" = "$MONGOTOOLS_RECIPE" ]; then
		echo "$MONGOTOOLS_CACHE/bin"
		return 0
	fi
	local go archive
	go=$(ferretdb_go) || { log "no Go here to build mongo-tools $MONGOTOOLS_VERSION"; return 1; }
	archive=$(mongotools_archive) || { log "no mongo-tools-$MONGOTOOLS_VERSION.tar.gz (MONGO_TOOLS_ARCHIVE or ../shared/vendor)"; return 1; }
	mkdir -p "$MONGOTOOLS_CACHE" || return 1
	(
		flock 9
		if [ -x "$MONGOTOOLS_CACHE/bin/mongorestore" ] &&
			[ "$(cat "$MONGOTOOLS_CACHE/.bson_out-build" 2>/dev/null)" = "$MONGOTOOLS_RECIPE" ]; then
			exit 0
		fi
		local started=$SECONDS blog=$MONGOTOOLS_CACHE/build.log t
		log "building mongo-tools $MONGOTOOLS_VERSION (bsondump, mongorestore) with $("$go" env GOVERSION) (a few minutes once)"
		rm -rf "$MONGOTOOLS_CACHE/src" "$MONGOTOOLS_CACHE/.bson_out-build" && mkdir -p "$MONGOTOOLS_CACHE/src" "$MONGOTOOLS_CACHE/bin" &&
			tar -xzf "$archive" -C "$MONGOTOOLS_CACHE/src" || exit 1
		export GOFLAGS="-mod=vendor -buildvcs=false" GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off \
			GOCACHE=$MONGOTOOLS_CACHE/go-build GOPATH=$MONGOTOOLS_CACHE/go
		for t in bsondump mongorestore; do
			if ! (cd "$MONGOTOOLS_CACHE/src" && "$go" build -trimpath -o "$MONGOTOOLS_CACHE/bin/$t.tmp" "./$t/main") >>"$blog" 2>&1; then
				log "building $t failed; log in $blog"
				tail -15 "$blog" >&2
				exit 1
			fi
			mv "$MONGOTOOLS_CACHE/bin/$t.tmp" "$MONGOTOOLS_CACHE/bin/$t" || exit 1
		done
		echo "$MONGOTOOLS_RECIPE" >"$MONGOTOOLS_CACHE/.bson_out-build" || exit 1
		log "mongo-tools $MONGOTOOLS_VERSION built in $((SECONDS - started)) s"
	) 9>"$MONGOTOOLS_CACHE/.lock" || return 1
	echo "$MONGOTOOLS_CACHE/bin"
}

mongotools_into_root() {
	local root=$1 bin dest
	bin=$(mongotools_build) || return 1
	dest=$root$MONGOTOOLS_CACHE
	mkdir -p "$dest/bin" && cp "$bin/bsondump" "$bin/mongorestore" "$dest/bin/" &&
		cp "$MONGOTOOLS_CACHE/.bson_out-build" "$dest/.bson_out-build"
}
