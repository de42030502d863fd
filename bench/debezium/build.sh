#!/bin/bash
# Builds bench/debezium (DebeziumBench, one runnable jar with Debezium 3.6.1
# and the MongoDB Java driver) once per version of its sources; prints the
# jar's path.  Everything stays under /var/cache/bson_out (BSON_OUT_CACHE):
# Maven's local repository (m2: a second build needs no network) and the
# jar (debezium-bench/<hash of pom.xml and the sources>/debezium-bench.jar).
# The build runs in a copy of the sources, so the tree gets no target/.
# Needs maven and a JDK 17 or later (bench/debezium_bench.sh installs them).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${BSON_OUT_CACHE:-/var/cache/bson_out}
M2=$CACHE/m2
hash=$(cd "$SRC" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
OUT=$CACHE/debezium-bench/$hash
JAR=$OUT/debezium-bench.jar
if [ -f "$JAR" ]; then
	echo "$JAR"
	exit 0
fi
mkdir -p "$OUT" "$M2"
(
	flock 9
	[ -f "$JAR" ] && exit 0
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cp -r "$SRC/pom.xml" "$SRC/src" "$work/"
	echo "== building the Debezium side (Maven, repository $M2)" >&2
	# offline first: after one build everything is in the local repository
	if ! mvn -B -q -o -Dmaven.repo.local="$M2" -f "$work/pom.xml" package >"$work/build.log" 2>&1; then
		mvn -B -q -Dmaven.repo.local="$M2" -f "$work/pom.xml" package >"$work/build.log" 2>&1 ||
			{ tail -30 "$work/build.log" >&2; exit 1; }
	fi
	cp "$work/target/debezium-bench.jar" "$JAR.tmp" && mv "$JAR.tmp" "$JAR"
) 9>"$OUT.lock"
echo "$JAR"
