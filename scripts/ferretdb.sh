# FerretDB, a server that speaks MongoDB's wire protocol and keeps the
# documents in SQLite (or PostgreSQL): the MongoDB the tests write into, since
# Debian has no MongoDB server.  Source it after scripts/lib.sh; it defines
# functions only.
#
#   ferretdb_build               builds FerretDB once into the cache; prints
#                                the binary's path
#   ferretdb_into_root ROOT      puts that binary into a Debian root's cache
#                                (the roots have no Go new enough to build it)
#   ferretdb_start DIR PORT [PG_URL]
#                                starts it on 127.0.0.1:PORT only, state, log
#                                and (SQLite) data in DIR; returns once a
#                                client's ping is answered
#   ferretdb_stop DIR [KILL]     stops it: TERM, then KILL after 20 s (KILL:
#                                at once, as a crash)
#   ferretdb_restart DIR [KILL]  stops it and starts it again on the same port
#                                with the same data
#
# The build: Go 1.24 or newer (FerretDB 1.24's go.mod) with the Go module
# proxy.  Everything it downloads and compiles stays under FERRETDB_CACHE
# (module cache, build cache, source, binary), so a second build is instant
# and a changed recipe rebuilds from what is cached.  The binary is static
# (CGO_ENABLED=0: the SQLite backend is pure Go), so it runs in any root.

FERRETDB_VERSION=1.24.2
FERRETDB_CACHE=${BSON_OUT_CACHE:-/var/cache/bson_out}/ferretdb-$FERRETDB_VERSION
FERRETDB_BIN=$FERRETDB_CACHE/bin/ferretdb
# what the cached binary was built by; another recipe is built again
FERRETDB_RECIPE="FerretDB v$FERRETDB_VERSION, version.txt, CGO_ENABLED=0, -trimpath"

# ferretdb_go: the go command, also where PATH lacks it (a root's env -i)
ferretdb_go() {
	local go
	for go in "$(command -v go 2>/dev/null)" /usr/local/go/bin/go /usr/lib/go/bin/go; do
		[ -n "$go" ] && [ -x "$go" ] && { echo "$go"; return 0; }
	done
	return 1
}

# ferretdb_build: builds FerretDB v$FERRETDB_VERSION into FERRETDB_CACHE
# unless the same build is there; prints the binary's path.
#
# Not "go install .../cmd/ferretdb@v1.24.2": the module as the proxy serves
# it has no build/version/version.txt, which FerretDB makes with its own task
# runner from git, and a binary without it panics at start ("Invalid
# build/version/version.txt file content").  So the module's source is
# copied out of the module cache, that file written, and the copy built.
ferretdb_build() {
	if [ -x "$FERRETDB_BIN" ] && [ "$(cat "$FERRETDB_CACHE/.bson_out-build" 2>/dev/null)" = "$FERRETDB_RECIPE" ]; then
		echo "$FERRETDB_BIN"
		return 0
	fi
	local go
	go=$(ferretdb_go) || {
		log "no Go here to build FerretDB $FERRETDB_VERSION (it needs Go 1.24 or newer; in a Debian root, the host builds it: ferretdb_into_root)"
		return 1
	}
	mkdir -p "$FERRETDB_CACHE" || return 1
	# one build at a time; another run may have finished it meanwhile
	(
		flock 9
		if [ -x "$FERRETDB_BIN" ] && [ "$(cat "$FERRETDB_CACHE/.bson_out-build" 2>/dev/null)" = "$FERRETDB_RECIPE" ]; then
			exit 0
		fi
		local started=$SECONDS src blog=$FERRETDB_CACHE/build.log
		log "building FerretDB $FERRETDB_VERSION with $("$go" env GOVERSION) into $FERRETDB_CACHE (a few minutes once)"
		export GOPATH=$FERRETDB_CACHE/go GOMODCACHE=$FERRETDB_CACHE/go/pkg/mod \
			GOCACHE=$FERRETDB_CACHE/go-build GOFLAGS="-modcacherw -buildvcs=false" \
			GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off
		rm -f "$FERRETDB_CACHE/.bson_out-build"
		src=$(cd / && "$go" mod download -json "github.com/FerretDB/FerretDB@v$FERRETDB_VERSION" 2>"$blog" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
		if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
			log "go mod download github.com/FerretDB/FerretDB@v$FERRETDB_VERSION failed"
			tail -5 "$blog" >&2
			exit 1
		fi
		rm -rf "$FERRETDB_CACHE/src" && cp -r "$src" "$FERRETDB_CACHE/src" &&
			chmod -R u+w "$FERRETDB_CACHE/src" &&
			echo "v$FERRETDB_VERSION" >"$FERRETDB_CACHE/src/build/version/version.txt" || exit 1
		mkdir -p "$FERRETDB_CACHE/bin"
		if ! (cd "$FERRETDB_CACHE/src" && "$go" build -trimpath -ldflags='-s -w' \
			-o "$FERRETDB_BIN.tmp" ./cmd/ferretdb) >>"$blog" 2>&1; then
			log "building FerretDB $FERRETDB_VERSION failed; log in $blog"
			tail -15 "$blog" >&2
			exit 1
		fi
		if ! "$FERRETDB_BIN.tmp" --version 2>&1 | grep -qx "version: v$FERRETDB_VERSION"; then
			log "the FerretDB built does not say it is v$FERRETDB_VERSION:"
			"$FERRETDB_BIN.tmp" --version 2>&1 | head -5 >&2
			exit 1
		fi
		mv "$FERRETDB_BIN.tmp" "$FERRETDB_BIN" && echo "$FERRETDB_RECIPE" >"$FERRETDB_CACHE/.bson_out-build" || exit 1
		log "FerretDB $FERRETDB_VERSION built in $((SECONDS - started)) s"
	) 9>"$FERRETDB_CACHE/.lock" || return 1
	echo "$FERRETDB_BIN"
}

# ferretdb_into_root ROOT: the host's build (made first if need be) at the
# same path under ROOT, where ferretdb_build inside the root finds it.  A
# Debian 12 root's Go (1.19) cannot build FerretDB 1.24; the binary is
# static, so the host's runs there as it is.
ferretdb_into_root() {
	local root=$1 bin dest
	bin=$(ferretdb_build) || return 1
	dest=$root$FERRETDB_CACHE
	mkdir -p "$dest/bin" && cp "$bin" "$dest/bin/ferretdb" &&
		cp "$FERRETDB_CACHE/.bson_out-build" "$dest/.bson_out-build"
}

# ferretdb_alive DIR: the pid of the FerretDB started with state in DIR, if
# it runs (the pid file's process, when its command line is that FerretDB's)
ferretdb_alive() {
	local dir=$1 pid
	pid=$(cat "$dir/ferretdb.pid" 2>/dev/null) && [ -n "$pid" ] || return 1
	tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "--state-dir=$dir" || return 1
	echo "$pid"
}

# ferretdb_ping PORT: a MongoDB client (pymongo) connects to 127.0.0.1:PORT
# and its ping is answered
ferretdb_ping() {
	"${PYTHON:-/usr/bin/python3}" - "$1" <<-'EOF' >/dev/null 2>&1
	import sys, pymongo
	c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1]), serverSelectionTimeoutMS=500,
	                        connectTimeoutMS=500, directConnection=True)
	c.admin.command("ping")
	EOF
}

# ferretdb_start DIR PORT [PG_URL]: FerretDB on 127.0.0.1:PORT and nowhere
# else (no Unix socket, no TLS listener, no debug HTTP handler), telemetry
# off, its state (state.json), its log (ferretdb.log, appended) and its pid
# (ferretdb.pid) in DIR, and the documents in SQLite files in DIR/data, or
# in the PostgreSQL database of PG_URL.  Returns once a client's ping is
# answered (at most 60 s); fails when PORT is taken or FerretDB exits.
ferretdb_start() {
	local dir=$1 port=$2 pgurl=${3:-} bin pid backend i
	[ -n "$dir" ] && [ -n "$port" ] || { log "usage: ferretdb_start DIR PORT [PG_URL]"; return 1; }
	bin=$(ferretdb_build) || return 1
	mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || return 1
	if pid=$(ferretdb_alive "$dir"); then
		log "FerretDB already runs with state in $dir (pid $pid)"
		return 1
	fi
	if ferretdb_ping "$port"; then
		log "something already answers on 127.0.0.1:$port"
		return 1
	fi
	if [ -n "$pgurl" ]; then
		backend=(--handler=postgresql "--postgresql-url=$pgurl")
	else
		mkdir -p "$dir/data" || return 1
		backend=(--handler=sqlite "--sqlite-url=file:$dir/data/")
	fi
	echo "$port" >"$dir/ferretdb.port"
	printf '%s\n' "$pgurl" >"$dir/ferretdb.pgurl"
	# no FERRETDB_* variable of the caller's environment adds a listener
	env -u FERRETDB_LISTEN_UNIX -u FERRETDB_LISTEN_TLS -u FERRETDB_PROXY_ADDR -u FERRETDB_REPL_SET_NAME \
		"$bin" --listen-addr="127.0.0.1:$port" --listen-unix= --listen-tls= \
		--debug-addr=- --telemetry=disable --mode=normal "${backend[@]}" \
		--state-dir="$dir" --log-level="${FERRETDB_LOG_LEVEL:-warn}" \
		</dev/null >>"$dir/ferretdb.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/ferretdb.pid"
	for ((i = 0; i < 600; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			log "FerretDB exited at start; the end of $dir/ferretdb.log:"
			tail -10 "$dir/ferretdb.log" >&2
			rm -f "$dir/ferretdb.pid"
			return 1
		fi
		if ferretdb_ping "$port"; then
			log "FerretDB $FERRETDB_VERSION on 127.0.0.1:$port (pid $pid, ${pgurl:+PostgreSQL }${pgurl:-SQLite in $dir/data}, log $dir/ferretdb.log)"
			return 0
		fi
		sleep 0.1
	done
	log "FerretDB did not answer on 127.0.0.1:$port within 60 s; stopping it"
	ferretdb_stop "$dir" KILL
	return 1
}

# ferretdb_stop DIR [KILL]: stops the FerretDB of DIR, if it runs: TERM and
# KILL when it has not ended after 20 s, or KILL at once (a crash); returns
# once it has ended.
ferretdb_stop() {
	local dir=$1 sig=${2:-TERM} pid i
	dir=$(cd "$dir" 2>/dev/null && pwd) || return 0
	pid=$(ferretdb_alive "$dir") || { rm -f "$dir/ferretdb.pid"; return 0; }
	kill -"$sig" "$pid" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		[ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || break
		sleep 0.1
	done
	if [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
		log "FerretDB (pid $pid) did not stop on $sig within 20 s: KILL"
		kill -KILL "$pid" 2>/dev/null
		while [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; do sleep 0.1; done
	fi
	# reap it when it is this shell's child
	wait "$pid" 2>/dev/null
	rm -f "$dir/ferretdb.pid"
}

# ferretdb_restart DIR [KILL]: ferretdb_stop, then ferretdb_start on the
# port and with the backend of the last start in DIR
ferretdb_restart() {
	local dir=$1 port pgurl
	port=$(cat "$dir/ferretdb.port" 2>/dev/null) || { log "FerretDB was never started in $dir"; return 1; }
	pgurl=$(cat "$dir/ferretdb.pgurl" 2>/dev/null)
	ferretdb_stop "$dir" "${2:-TERM}" && ferretdb_start "$dir" "$port" "$pgurl"
}
