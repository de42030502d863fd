#!/usr/bin/env bash
# The whole test suite on every supported PostgreSQL version, one after the
# other, then one table: version, server and how it was built, compiler,
# tests passed and failed, time.
#
#   scripts/test-matrix.sh [NN ...]       default: 13 15 17 18
#
# Each version's full output is kept in a log file named under the table.
# The exit status is 0 only when every version passed.
set -uo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(13 15 17 18)
logs=$(mktemp -d "${TMPDIR:-/tmp}/bson_out-matrix.XXXXXX")
rows=()
status=0
for v in "${versions[@]}"; do
	log=$logs/pg$v.log
	printf '== PostgreSQL %s: scripts/test.sh --pg %s (log: %s)\n' "$v" "$v" "$log" >&2
	start=$(date +%s)
	scripts/test.sh --pg "$v" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	server=$(sed -n 's/^server: //p' "$log" | tail -1)
	compiler=$(sed -n 's/^compiler: //p' "$log" | tail -1)
	line=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	ok=$(sed -E 's/^tests: ([0-9]+) passed.*/\1/' <<<"$line")
	bad=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
	if [ $rc -eq 0 ] && [ -n "$line" ] && [ "$bad" = 0 ]; then
		result=passed
	else
		result=FAILED
		status=1
		grep -E '^failed: ' "$log" | tail -1 >&2
	fi
	rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %d:%02d |' "$v" "${server:-?}" "${compiler:-?}" \
		"${ok:-0}" "${bad:-?}" "$result" $((secs / 60)) $((secs % 60)))")
done

echo
echo "| PostgreSQL | server (build) | compiler | tests passed | failed | result | time |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "logs: $logs"
exit $status
