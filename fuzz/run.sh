#!/bin/bash
#
# run.sh: fuzz src/core/bson_reader.c, or replay the corpus and regressions.
#
#   ./fuzz/run.sh [SECONDS]     libFuzzer for SECONDS (default 120), then a
#                               coverage report of src/core/bson_reader.c
#   ./fuzz/run.sh --replay      replay fuzz/corpus and fuzz/regressions once
#                               through the harness built with ASan + UBSan
#                               and fuzz/standalone_main.c (a few seconds; no
#                               libFuzzer needed, gcc by default, CC=... to
#                               change)
#
# Fuzzing installs what is missing through apt-get (Debian 12: clang,
# libclang-rt-14-dev for libFuzzer and the sanitizer runtimes, llvm for
# llvm-profdata and llvm-cov), builds into fuzz/build/ (gitignored), copies
# the checked-in seeds and regressions into the working corpus
# fuzz/build/corpus/ (kept between runs, so that runs build on each other;
# rm -rf fuzz/build to start over) and fuzzes that, so fuzz/corpus/ itself is
# never written.  At the end it prints the executions, libFuzzer's final
# cov: and ft: figures, and the line, branch and region coverage of
# src/core/bson_reader.c (and bson_reader.h) over the seeds and over the final
# working corpus.  A crash, leak, timeout or failed invariant leaves its
# input in fuzz/build/artifacts/ and makes the script exit non-zero; copy the
# input into fuzz/regressions/ once fixed.
#
# Both modes exit non-zero on any failure.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build="$here/build"
srcs=("$root/src/core/bson_reader.c" "$root/src/core/decimal128.c" "$root/src/core/extjson_scalars.c")
harness="$here/fuzz_bson_reader.c"
driver="$here/standalone_main.c"
warn=(-std=c99 -Wall -Wextra)
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)

die() {
	echo "run.sh: $*" >&2
	exit 1
}

replay() {
	local cc=${CC:-gcc}
	local bin="$build/replay"
	local log="$build/replay.log"
	local start end

	mkdir -p "$build"
	start=$(date +%s.%N)
	"$cc" "${warn[@]}" -g -O1 "${san[@]}" -I"$root/src/core" \
		-o "$bin" "$harness" "$driver" "${srcs[@]}" -lm ||
		die "building the replay binary with $cc failed"
	if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$bin" "$here/corpus" "$here/regressions" >"$log" 2>&1; then
		tail -n 40 "$log"
		die "replay failed (full log: $log)"
	fi
	end=$(date +%s.%N)
	echo "fuzz replay: $(tail -n 1 "$log") from fuzz/corpus and fuzz/regressions," \
		"no failures ($cc, ASan+UBSan, $(awk "BEGIN { printf \"%.1f\", $end - $start }") s)"
}

# clang that links -fsanitize=fuzzer, llvm-profdata and llvm-cov
ensure_tools() {
	local probe="$build/probe"

	mkdir -p "$build"
	printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void) d; (void) n; return 0; }' \
		>"$probe.c"
	if command -v clang >/dev/null && command -v llvm-profdata >/dev/null &&
		command -v llvm-cov >/dev/null &&
		clang -fsanitize=fuzzer,address,undefined -o "$probe" "$probe.c" 2>/dev/null; then
		rm -f "$probe" "$probe.c"
		return
	fi
	echo "run.sh: installing clang, libclang-rt-14-dev and llvm with apt-get" >&2
	local sudo=()
	[ "$(id -u)" -eq 0 ] || sudo=(sudo)
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
		clang libclang-rt-14-dev llvm >/dev/null
	clang -fsanitize=fuzzer,address,undefined -o "$probe" "$probe.c" ||
		die "clang still cannot link -fsanitize=fuzzer"
	rm -f "$probe" "$probe.c"
}

fuzz() {
	local seconds=$1
	local bin="$build/fuzz_bson_reader"
	local work="$build/corpus"
	local artifacts="$build/artifacts/"
	local log="$build/fuzz.log"
	local rc=0

	ensure_tools
	clang "${warn[@]}" -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -fno-omit-frame-pointer -I"$root/src/core" \
		-o "$bin" "$harness" "${srcs[@]}" -lm ||
		die "building the fuzzer failed"

	mkdir -p "$work" "$artifacts"
	cp "$here"/corpus/*.bson "$work"/
	find "$here/regressions" -maxdepth 1 -type f ! -name 'README*' ! -name '.*' \
		-exec cp {} "$work"/ \;

	echo "fuzzing for $seconds s: $bin $work (log: $log)"
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=2048 -max_len=8192 -artifact_prefix="$artifacts" \
		"$work" >"$log" 2>&1 || rc=$?

	local final execs
	final=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)
	execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
	echo "executions: ${execs:-unknown} in $seconds s" \
		"($(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -n 1) /s)"
	echo "libFuzzer final: ${final:-none}"
	echo "working corpus: $(find "$work" -type f | wc -l) files, $(du -sk "$work" | cut -f1) KB"
	if [ "$rc" -ne 0 ]; then
		grep -E 'ERROR|invariant failed|SUMMARY|Test unit written' "$log" | head -n 20 || true
		ls -l "$artifacts"
		die "libFuzzer exited with status $rc: see $log; the crashing input is in $artifacts"
	fi

	coverage "$work"
}

# line/branch/region coverage of src/core/bson_reader.c (and the inline functions
# of src/core/bson_reader.h) and of src/core/decimal128.c (whose to-string and
# parse the harness round-trips) over the seeds and over the final corpus
coverage() {
	local corpus=$1
	local bin="$build/coverage"
	local profdir="$build/profile"

	clang "${warn[@]}" -O1 -fprofile-instr-generate -fcoverage-mapping \
		-I"$root/src/core" -o "$bin" "$harness" "$driver" "${srcs[@]}" -lm ||
		die "building the coverage binary failed"
	cover_one "seed corpus" "$here/corpus" "$here/regressions"
	cover_one "final corpus" "$corpus"
	echo "(per-line detail: llvm-cov show $bin -instr-profile=$profdir/merged.profdata $root/src/core/bson_reader.c)"
}

cover_one() {
	local what=$1
	shift
	local bin="$build/coverage"
	local profdir="$build/profile"

	rm -rf "$profdir"
	mkdir -p "$profdir"
	LLVM_PROFILE_FILE="$profdir/cov-%p.profraw" "$bin" "$@" >/dev/null 2>&1 ||
		die "the coverage replay failed"
	llvm-profdata merge -sparse -o "$profdir/merged.profdata" "$profdir"/*.profraw
	llvm-cov report "$bin" -instr-profile="$profdir/merged.profdata" \
		"$root/src/core/bson_reader.c" "$root/src/core/bson_reader.h" \
		"$root/src/core/decimal128.c" >"$build/coverage.txt"
	# columns: Filename Regions Missed Cover Functions Missed Executed Lines
	# Missed Cover Branches Missed Cover
	awk -v what="$what" '$1 ~ /(bson_reader\.[ch]|decimal128\.c)$/ {
		n = split($1, parts, "/")
		printf "coverage, %s, src/core/%s: lines %s (%d of %d), branches %s (%d of %d), regions %s, functions %s\n",
			what, parts[n], $10, $8 - $9, $8, $13, $11 - $12, $11, $4, $7
	}' "$build/coverage.txt"
}

case "${1:-120}" in
	--replay)
		replay
		;;
	-h | --help)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
		;;
	*[!0-9]* | "")
		die "usage: $0 [SECONDS] | --replay"
		;;
	*)
		fuzz "$1"
		;;
esac
