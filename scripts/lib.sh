# Shared shell functions for the README commands, the tests and the benchmark.
# Source it; it defines functions only.  Everything runs on a throwaway
# PostgreSQL 15 cluster with a private socket directory and port, never on a
# system cluster.

PG_MAJOR=${PG_MAJOR:-15}
source "$(dirname "${BASH_SOURCE[0]}")/servers.sh"
case $(pg_kind "$PG_MAJOR") in
source) PG_BINDIR=$BSON_OUT_CACHE/pg$PG_MAJOR/bin ;;
*) PG_BINDIR=/usr/lib/postgresql/$PG_MAJOR/bin ;;
esac
export PATH="$PG_BINDIR:$PATH"
# Debian's python3 carries python3-bson, python3-pymongo (bson.json_util
# imports pymongo.errors) and python3-psycopg2; another python3 (pyenv, venv)
# earlier in PATH would not see them.
PYTHON=/usr/bin/python3

log() { printf '== %s\n' "$*" >&2; }

# install_debian_packages PACKAGE...: installs those not installed yet.
install_debian_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	log "installing Debian packages: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "need root to install ${missing[*]} (or install them first)" >&2
		return 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The packages the project needs, and the PostgreSQL server of PG_MAJOR:
# Debian's packages, or a build from Debian's source package (servers.sh).
# The client programs build with libbson and the MongoDB C driver (libmongoc),
# found with pkg-config.
install_packages() {
	local common=(make gcc pkg-config libbson-dev libmongoc-dev python3 python3-bson python3-pymongo python3-psycopg2 "$@")
	case $(pg_kind "$PG_MAJOR") in
	source)
		install_debian_packages postgresql-common "${common[@]}" && pg_build_source "$PG_MAJOR" ;;
	debian)
		install_debian_packages postgresql-"$PG_MAJOR" postgresql-server-dev-"$PG_MAJOR" "${common[@]}" ;;
	*)
		log "PostgreSQL $PG_MAJOR runs in a Debian 13 root: scripts/test.sh --pg $PG_MAJOR"
		return 1 ;;
	esac
}

# The checks of a test program that counts its own (test/citus/run.sh,
# test/packaging/): ok LABEL, fail LABEL [DETAIL...] and check LABEL EXPECTED
# ACTUAL add to passed and failed, which the program sets to 0 first; failures
# and their details print in the form scripts/test.sh's stages show.
ok() {
	passed=$((passed + 1))
	echo "ok   $1"
}
fail() {
	failed=$((failed + 1))
	echo "FAIL $1"
	shift
	[ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/     | /'
}
# check LABEL EXPECTED ACTUAL
check() {
	if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "expected: $2" "actual:   $3"; fi
}

# tree_archive FILE: a tar of the tree's files, those git tracks and the
# untracked ones it does not ignore, as they are in the working tree (so no
# build outputs).  In the Debian 13 root, whose copy of the tree has no .git,
# the archive that copy was made from (DIR.tar beside the tree DIR).
tree_archive() {
	if git rev-parse --git-dir >/dev/null 2>&1; then
		git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf "$1"
	elif [ -f "$PWD.tar" ]; then
		cp "$PWD.tar" "$1"
	else
		log "$PWD is no git checkout and there is no $PWD.tar: no list of the tree's files"
		return 1
	fi
}

# Build and install the extension into the PostgreSQL found by pg_config.
# client_build DIR [TARGET...]: pg_bsonexport and pg_bsonstream built with
# -Werror in a copy under DIR (DIR/client, DIR/src/core: the layout the
# client Makefile expects), so that the work tree's objects stay untouched
# and a make clean there cannot pull a binary from under the tests
client_build() {
	local dir=$1
	shift
	rm -rf "$dir/client" "$dir/src/core"
	mkdir -p "$dir/client" "$dir/src/core" || return 1
	(cd client && find . \( -name '*.[ch]' -o -name Makefile \) -exec cp --parents -t "$dir/client/" {} +) ||
		return 1
	cp src/core/*.[ch] "$dir/src/core/" || return 1
	make -s -C "$dir/client" PG_CONFIG="$PG_BINDIR/pg_config" COPT=-Werror "$@"
}

build_install() {
	log "building and installing bson_out"
	make -s PG_CONFIG="$PG_BINDIR/pg_config" "$@" >/dev/null
	make -s PG_CONFIG="$PG_BINDIR/pg_config" install >/dev/null
}

# logical_decoding_opts: the server options that let the cluster decode its
# WAL with bson_out (wal_level = logical, and bson_out allowed as an output
# plugin on servers that have output_plugin_libraries, whose default names
# only pgoutput and test_decoding); appended to CLUSTER_OPTS.  grep reads all
# of the list: with -q it would stop early, and pipefail would take the
# server's SIGPIPE for a failure.
logical_decoding_opts() {
	CLUSTER_OPTS="${CLUSTER_OPTS:-} -c wal_level=logical -c max_replication_slots=10"
	if "$PG_BINDIR/postgres" --describe-config 2>/dev/null | grep '^output_plugin_libraries' >/dev/null; then
		CLUSTER_OPTS+=" -c output_plugin_libraries=pgoutput,test_decoding,bson_out"
	fi
	export CLUSTER_OPTS
}

# cluster_start [initdb options...]: a throwaway cluster owned by the postgres
# user, listening only on a unix socket in a private directory.  Sets and
# exports PGHOST, PGPORT, PGUSER, PGDATABASE and CLUSTER_DIR; cluster_stop
# removes it again (registered on EXIT).
cluster_start() {
	CLUSTER_DIR=$(mktemp -d /tmp/bson_out_cluster.XXXXXX)
	chmod 755 "$CLUSTER_DIR"
	local runas=()
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$CLUSTER_DIR"
		runas=(runuser -u postgres --)
	fi
	export PGPORT=${PGPORT:-$(( 50000 + RANDOM % 10000 ))}
	export PGHOST=$CLUSTER_DIR
	export PGUSER=postgres
	export PGDATABASE=postgres
	"${runas[@]}" "$PG_BINDIR/initdb" -D "$CLUSTER_DIR/data" -U postgres \
		--encoding=UTF8 --locale=C --auth=trust "$@" >"$CLUSTER_DIR/initdb.log" 2>&1 ||
		{ cat "$CLUSTER_DIR/initdb.log" >&2; return 1; }
	"${runas[@]}" "$PG_BINDIR/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w \
		-o "-c listen_addresses='' -c unix_socket_directories='$CLUSTER_DIR' -p $PGPORT ${CLUSTER_OPTS:-}" \
		start >/dev/null ||
		{ cat "$CLUSTER_DIR/server.log" >&2; return 1; }
	CLUSTER_RUNAS=("${runas[@]}")
	trap cluster_stop EXIT
	log "throwaway cluster on socket $PGHOST port $PGPORT"
}

cluster_stop() {
	[ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR" ] || return 0
	"${CLUSTER_RUNAS[@]}" "$PG_BINDIR/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$CLUSTER_DIR"
	CLUSTER_DIR=
}
