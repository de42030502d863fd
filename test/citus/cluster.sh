# A throwaway Citus cluster on loopback: a coordinator and two workers, each
# its own cluster owned by the postgres user in a private directory.  Source
# it after scripts/lib.sh (PG_MAJOR=15); it defines functions only.
#
#   citus_cluster_start   starts the three nodes, creates citus and bson_out,
#                         registers the coordinator and adds the workers;
#                         exports CITUS_DIR, CITUS_{COORD,WORKER1,WORKER2}_PORT
#                         and CITUS_{COORD,WORKER1,WORKER2}_SOCKET, and points
#                         PGHOST/PGPORT/PGUSER/PGDATABASE at the coordinator
#   citus_cluster_stop    stops the nodes and removes their directories
#                         (registered on EXIT by citus_cluster_start)
#   citus_psql NODE ...   psql on node coord, worker1 or worker2
#
# The nodes listen on 127.0.0.1 only, on free ports between 40000 and 49999,
# and trust every local connection: Citus connects from node to node over
# TCP, as the postgres user.

CITUS_NODES=(coord worker1 worker2)

# citus_free_port: a port between 40000 and 49999 that nothing listens on and
# that no node of this cluster took already.
citus_free_port() {
	local port tries=0
	while [ $tries -lt 100 ]; do
		port=$((40000 + RANDOM % 10000))
		tries=$((tries + 1))
		case " ${CITUS_PORTS_TAKEN:-} " in *" $port "*) continue ;; esac
		ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && continue
		CITUS_PORTS_TAKEN="${CITUS_PORTS_TAKEN:-} $port"
		echo "$port"
		return 0
	done
	log "no free port between 40000 and 49999"
	return 1
}

# citus_node_var NODE: the suffix of the node's variables (COORD, WORKER1, ...)
citus_node_var() {
	echo "$1" | tr '[:lower:]' '[:upper:]'
}

citus_psql() {
	local node=$1 var port socket
	shift
	var=$(citus_node_var "$node")
	port=CITUS_${var}_PORT
	socket=CITUS_${var}_SOCKET
	psql -X -h "${!socket}" -p "${!port}" -U postgres -d postgres "$@"
}

citus_cluster_start() {
	CITUS_DIR=$(mktemp -d /tmp/bson_out_citus.XXXXXX)
	chmod 755 "$CITUS_DIR"
	export CITUS_DIR
	CITUS_RUNAS=()
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$CITUS_DIR"
		CITUS_RUNAS=(runuser -u postgres --)
	fi
	trap citus_cluster_stop EXIT
	CITUS_PORTS_TAKEN=
	local node var dir port
	for node in "${CITUS_NODES[@]}"; do
		var=$(citus_node_var "$node")
		dir=$CITUS_DIR/$node
		port=$(citus_free_port) || return 1
		"${CITUS_RUNAS[@]}" mkdir -p "$dir"
		"${CITUS_RUNAS[@]}" "$PG_BINDIR/initdb" -D "$dir/data" -U postgres \
			--encoding=UTF8 --locale=C --auth=trust >"$CITUS_DIR/$node-initdb.log" 2>&1 ||
			{ cat "$CITUS_DIR/$node-initdb.log" >&2; return 1; }
		# wal_level = logical: shard moves replicate through logical decoding,
		# and the nodes' change streams decode it; Citus's change data capture
		# setting marks the rows its moves and splits copy with an origin
		cat >>"$dir/data/postgresql.conf" <<-EOF
			shared_preload_libraries = 'citus'
			listen_addresses = '127.0.0.1'
			port = $port
			unix_socket_directories = '$dir'
			wal_level = logical
			citus.enable_change_data_capture = on
			max_replication_slots = 20
			max_wal_senders = 20
			fsync = off
			synchronous_commit = off
			full_page_writes = off
		EOF
		# where the server restricts output plugins: bson_out for the change
		# streams, and Citus's own (pgoutput for shard moves, citus for splits)
		if "$PG_BINDIR/postgres" --describe-config 2>/dev/null | grep '^output_plugin_libraries' >/dev/null; then
			echo "output_plugin_libraries = 'pgoutput,test_decoding,citus,bson_out'" >>"$dir/data/postgresql.conf"
		fi
		"${CITUS_RUNAS[@]}" "$PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null ||
			{ cat "$dir/server.log" >&2; return 1; }
		export "CITUS_${var}_PORT=$port" "CITUS_${var}_SOCKET=$dir"
		citus_psql "$node" -qAt -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION citus' >/dev/null || return 1
	done
	# bson_out is created on the coordinator once the workers are in the
	# cluster: Citus then creates it on every worker as well
	citus_psql coord -qAt -v ON_ERROR_STOP=1 \
		-c "SELECT citus_set_coordinator_host('127.0.0.1', $CITUS_COORD_PORT)" \
		-c "SELECT citus_add_node('127.0.0.1', $CITUS_WORKER1_PORT)" \
		-c "SELECT citus_add_node('127.0.0.1', $CITUS_WORKER2_PORT)" \
		-c 'CREATE EXTENSION bson_out' >/dev/null || return 1
	for node in worker1 worker2; do
		[ "$(citus_psql "$node" -qAt -c "SELECT count(*) FROM pg_extension WHERE extname = 'bson_out'")" = 1 ] ||
			{ log "bson_out was not created on $node"; return 1; }
	done
	export PGHOST=$CITUS_COORD_SOCKET PGPORT=$CITUS_COORD_PORT PGUSER=postgres PGDATABASE=postgres
	log "Citus cluster: coordinator port $CITUS_COORD_PORT, workers $CITUS_WORKER1_PORT and $CITUS_WORKER2_PORT (in $CITUS_DIR)"
}

citus_cluster_stop() {
	[ -n "${CITUS_DIR:-}" ] && [ -d "$CITUS_DIR" ] || return 0
	local node
	for node in "${CITUS_NODES[@]}"; do
		[ -d "$CITUS_DIR/$node/data" ] &&
			"${CITUS_RUNAS[@]}" "$PG_BINDIR/pg_ctl" -D "$CITUS_DIR/$node/data" -m immediate -w stop >/dev/null 2>&1
	done
	rm -rf "$CITUS_DIR"
	CITUS_DIR=
}
