# What the packaging checks share (test/packaging/*.sh): the counts, and the
# list of files an install must leave as it found them.  Source it after
# scripts/lib.sh (ok, fail, check), with TAG set to the script's tag.

passed=0
failed=0
skip() {
	echo "skip: $TAG: $*"
	echo "$TAG: 0 passed, 0 failed, skipped"
	exit 0
}
finish() {
	echo "$TAG: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# system_files: every file and directory where an install of bson_out can
# write: the PostgreSQL's own directories (under /usr for Debian's, under the
# cache for one built from source), /usr, /etc, /opt and dpkg's records of
# installed packages; one a line, sorted.
system_files() {
	find /usr /etc /opt /var/lib/dpkg/info \
		"$("$PG_BINDIR/pg_config" --bindir)" "$("$PG_BINDIR/pg_config" --pkglibdir)" \
		"$("$PG_BINDIR/pg_config" --sharedir)" 2>/dev/null | sort -u
}

# check_same_files LABEL BEFORE: the system's files are those listed in the
# file BEFORE
check_same_files() {
	local diff
	diff=$(diff "$2" <(system_files) | grep '^[<>]' | head -20)
	if [ -z "$diff" ]; then ok "$1"; else fail "$1" "< gone since, > new since:" "$diff"; fi
}

# bson_out_installed: are the control file or the library of bson_out in the
# PostgreSQL of PG_BINDIR?
bson_out_installed() {
	[ -e "$("$PG_BINDIR/pg_config" --sharedir)/extension/bson_out.control" ] ||
		[ -e "$("$PG_BINDIR/pg_config" --pkglibdir)/bson_out.so" ]
}

# check_programs HOW VERSION: both programs in pg_config --bindir run, find
# their libraries and print VERSION
check_programs() {
	local p out
	for p in pg_bsonexport pg_bsonstream; do
		out=$("$PG_BINDIR/$p" --version 2>&1)
		check "$1: $p --version" "$p $2" "$out"
	done
}
