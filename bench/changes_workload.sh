# The change benchmarks' workload, sourced by bench/changes_bench.sh and
# bench/stream_bench.sh: inserts, then updates of every row, then deletes of
# a copy of the benchmark's typed table (bench/gen_data.py's rows, repeated
# with new ids), BATCH rows a transaction.  Needs PSQL (an array: psql and
# its options), BATCH and phase.

# typed_database: the database "bench" with bson_out and the typed table
# (bench/gen_data.py, 200,000 rows); needs BENCH_DIR and PYTHON
typed_database() {
	phase "generating the typed table (bench/gen_data.py, 200,000 rows)"
	createdb bench
	"${PSQL[@]}" -c "CREATE EXTENSION bson_out"
	"$PYTHON" "$BENCH_DIR/gen_data.py" --dbname bench --tables typed >/dev/null
}

# make_workload TABLE ROWS: the source rows and the empty table, made before
# any slot exists so that only run_workload's changes are decoded
make_workload() {
	local t=$1 rows=$2
	"${PSQL[@]}" -c "DROP TABLE IF EXISTS ${t}_src, $t" \
		-c "CREATE TABLE ${t}_src AS
			SELECT row_number() OVER (ORDER BY k, id)::int AS rid, n, amount, name, email, created,
			       uid, active, age, score, meta, tags
			FROM typed, generate_series(0, ($rows - 1) / 200000) k
			ORDER BY k, id LIMIT $rows" \
		-c "CREATE TABLE $t (LIKE typed INCLUDING ALL)" \
		-c "VACUUM ANALYZE ${t}_src" -c "CHECKPOINT"
}

# workload_phase TABLE ROWS insert|update|delete: one phase of the workload
workload_phase() {
	local t=$1 rows=$2 phase=$3 lo
	for ((lo = 0; lo < rows; lo += BATCH)); do
		case $phase in
		insert) echo "INSERT INTO $t SELECT rid, n, amount, name, email, created, uid, active, age, score, meta, tags FROM ${t}_src WHERE rid > $lo AND rid <= $((lo + BATCH));" ;;
		update) echo "UPDATE $t SET n = n + 1, score = score + 0.5 WHERE id > $lo AND id <= $((lo + BATCH));" ;;
		delete) echo "DELETE FROM $t WHERE id > $lo AND id <= $((lo + BATCH));" ;;
		esac
	done | "${PSQL[@]}"
}

# run_workload TABLE ROWS: the three phases, 3 * ROWS changes
run_workload() {
	workload_phase "$1" "$2" insert
	workload_phase "$1" "$2" update
	workload_phase "$1" "$2" delete
}
