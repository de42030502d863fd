# The suite on a fresh Debian 12 machine: scripts/test.sh --fresh-root.
# Source it after scripts/lib.sh; it defines functions only.
#
# The machine is a Debian 12 root made with debootstrap --variant=minbase
# (the essential packages and apt: less than a fresh cloud or installer
# machine has, so every package the suite needs must come from its own
# install steps), plus git, with which the tree was cloned.  It is made once
# and kept as a tarball under BSON_OUT_CACHE; every run unpacks an untouched
# copy, so nothing a previous run installed can hide a missing install step.
# Only the .deb files apt downloads are kept between runs (bind-mounted at
# the root's /var/cache/apt/archives): they save downloads, not installs.
#
#   debian12-base.tar    the root as debootstrap left it, with the apt
#                        sources of a Debian 12 installation (bookworm,
#                        bookworm-updates, bookworm-security), its
#                        /etc/hosts, and the policy-rc.d of a chroot (below);
#                        its stamp beside it.
#                        Remove both to make it again.
#   debian12-fresh/      the copy of this run (the next run removes it)
#   debian12-debs/       apt's downloads

DEBIAN12_BASE=$BSON_OUT_CACHE/debian12-base.tar
DEBIAN12_ROOT=$BSON_OUT_CACHE/debian12-fresh
DEBIAN12_DEBS=$BSON_OUT_CACHE/debian12-debs
# git: the tree in the root is a clone (the PGXN stage archives its HEAD)
DEBIAN12_INCLUDE=git

# debian12_sources: the root's sources.list, from this machine's apt
# configuration (its main Debian archive; its security archive if it has one)
debian12_sources() {
	local mirror security
	mirror=$(debian_mirror) || return 1
	security=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(TARGET_OF)' 2>/dev/null |
		awk '$3 == "deb" && $2 ~ /-security$/ { print $1; exit }')
	security=${security:-http://security.debian.org/debian-security/}
	printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
		"$mirror" "$mirror" "${security%/}"
}

# debian12_base: makes DEBIAN12_BASE unless the one there was made the same
# way; prints nothing.
debian12_base() {
	local sources want stamp=$DEBIAN12_BASE.stamp tmp started=$SECONDS
	sources=$(debian12_sources) || return 1
	want="bookworm minbase +$DEBIAN12_INCLUDE, hosts, policy-rc.d, 755; $(tr '\n' ';' <<<"$sources")"
	[ -f "$DEBIAN12_BASE" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
	[ "$(id -u)" -eq 0 ] || { log "need root to make a Debian 12 root under $BSON_OUT_CACHE"; return 1; }
	install_debian_packages debootstrap || return 1
	mkdir -p "$BSON_OUT_CACHE"
	tmp=$(mktemp -d "$BSON_OUT_CACHE/debian12-base.XXXXXX")
	log "making a fresh Debian 12 root (debootstrap --variant=minbase bookworm) in $tmp"
	if ! debootstrap --variant=minbase --keyring="$DEBIAN_KEYRING" --include="$DEBIAN12_INCLUDE" \
		bookworm "$tmp" "$(debian_mirror)" >"$BSON_OUT_CACHE/debian12-debootstrap.log" 2>&1; then
		log "debootstrap failed; log in $BSON_OUT_CACHE/debian12-debootstrap.log"
		tail -20 "$BSON_OUT_CACHE/debian12-debootstrap.log" >&2
		rm -rf "$tmp"
		return 1
	fi
	# what the installer of a Debian 12 machine writes besides the packages
	echo "$sources" >"$tmp/etc/apt/sources.list"
	printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$tmp/etc/hosts"
	# A chroot has no init: a package's postinst that starts its service (the
	# cluster postgresql-15 creates) would start it in this machine's network
	# namespace, on its port 5432, and leave it running after the suite.
	# policy-rc.d is how chroots say no (invoke-rc.d's exit status 101).
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/usr/sbin/policy-rc.d"
	rm -f "$tmp/var/cache/apt/archives/"*.deb
	# mktemp made it 700: the root directory of a machine is 755
	chmod 755 "$tmp"
	tar --numeric-owner -C "$tmp" -cf "$DEBIAN12_BASE.tmp" . &&
		mv "$DEBIAN12_BASE.tmp" "$DEBIAN12_BASE" && echo "$want" >"$stamp" || {
		rm -rf "$tmp" "$DEBIAN12_BASE.tmp"
		return 1
	}
	rm -rf "$tmp"
	echo "info fresh root: debootstrap and the base tarball: $((SECONDS - started)) s"
}

# debian12_root_processes: the processes whose root directory is the fresh
# root (a server a failed stage left running)
debian12_root_processes() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$DEBIAN12_ROOT" ] && echo "${p#/proc/}"
	done
}

# debian12_unpack: a fresh copy of the base at DEBIAN12_ROOT, with the tree
# as a git clone at /src/bson_out (what git tracks and what it does not
# ignore, as in the working tree, committed) and ../shared/vendor beside it
debian12_unpack() {
	local pids
	pids=$(debian12_root_processes)
	[ -z "$pids" ] || { log "processes still run in $DEBIAN12_ROOT: $(xargs <<<"$pids")"; return 1; }
	# the namespace of in_root is gone, but never remove a tree with a mount
	if findmnt -rn -o TARGET | grep -q "^$DEBIAN12_ROOT/"; then
		log "something is mounted under $DEBIAN12_ROOT"
		return 1
	fi
	rm -rf "$DEBIAN12_ROOT" && mkdir -p "$DEBIAN12_ROOT/src/bson_out" "$DEBIAN12_DEBS" &&
		tar --numeric-owner -C "$DEBIAN12_ROOT" -xpf "$DEBIAN12_BASE" || return 1
	tree_archive "$DEBIAN12_ROOT/src/bson_out.tar" &&
		tar -xf "$DEBIAN12_ROOT/src/bson_out.tar" -C "$DEBIAN12_ROOT/src/bson_out" &&
		rm "$DEBIAN12_ROOT/src/bson_out.tar" || return 1
	local from
	from=$(git rev-parse --short HEAD 2>/dev/null || echo "a copy")
	(cd "$DEBIAN12_ROOT/src/bson_out" && export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null &&
		git init -q && git add -A &&
		git -c user.name=bson_out -c user.email=bson_out@localhost commit -q \
			-m "The tree of $from as it is in the working tree") || return 1
	if [ -d "$BSON_OUT_VENDOR" ]; then
		mkdir -p "$DEBIAN12_ROOT/src/shared" && cp -a "$BSON_OUT_VENDOR" "$DEBIAN12_ROOT/src/shared/vendor" || return 1
	fi
}

# debian12_failed MESSAGE: says why, counts one failure; returns 1
debian12_failed() {
	log "$*"
	echo "tests: 0 passed, 1 failed"
	return 1
}

# debian12_suite MAJOR: the suite, scripts/test.sh --pg MAJOR, in a fresh
# copy of the Debian 12 root; its exit status.  When the root cannot be made,
# one failure ("tests: 0 passed, 1 failed").  The root and its logs stay
# there until the next run.
debian12_suite() {
	local major=$1 started env=() rc
	mkdir -p "$BSON_OUT_CACHE"
	exec 9>"$BSON_OUT_CACHE/debian12-fresh.lock"
	flock -n 9 || debian12_failed "another run uses $DEBIAN12_ROOT (lock $BSON_OUT_CACHE/debian12-fresh.lock)" || return
	debian12_base || debian12_failed "no Debian 12 base" || return
	started=$SECONDS
	debian12_unpack || debian12_failed "could not unpack a fresh Debian 12 root in $DEBIAN12_ROOT" || return
	echo "info fresh root: unpacked in $((SECONDS - started)) s"
	# an archive named by CITUS_ARCHIVE goes beside the vendor's copies
	if [ -n "${CITUS_ARCHIVE:-}" ] && [ -f "$CITUS_ARCHIVE" ]; then
		mkdir -p "$DEBIAN12_ROOT/src/shared/vendor" &&
			cp "$CITUS_ARCHIVE" "$DEBIAN12_ROOT/src/shared/vendor/" ||
			debian12_failed "could not copy $CITUS_ARCHIVE into the root" || return
		env+=(CITUS_ARCHIVE="/src/shared/vendor/$(basename "$CITUS_ARCHIVE")")
	fi
	# FerretDB for the mongo stage: the root's Go is too old to build it, the host's binary is static
	source "$(dirname "${BASH_SOURCE[0]}")/ferretdb.sh"
	ferretdb_into_root "$DEBIAN12_ROOT" || debian12_failed "could not put FerretDB into the root" || return
	# bsondump and mongorestore for the mongotools stage, likewise (static, built here)
	source "$(dirname "${BASH_SOURCE[0]}")/mongotools.sh"
	mongotools_into_root "$DEBIAN12_ROOT" || debian12_failed "could not put mongo-tools into the root" || return
	log "running the suite in the fresh Debian 12 root $DEBIAN12_ROOT"
	started=$SECONDS
	in_root --bind "$DEBIAN12_DEBS" /var/cache/apt/archives "$DEBIAN12_ROOT" \
		/usr/bin/env "${env[@]}" /bin/bash /src/bson_out/scripts/test.sh --pg "$major"
	rc=$?
	echo "info fresh root: the suite ran $((SECONDS - started)) s"
	local pids
	pids=$(debian12_root_processes)
	if [ -n "$pids" ]; then
		log "stopping what the suite left running in the root: $(xargs <<<"$pids")"
		# shellcheck disable=SC2086 # one pid a word
		kill $pids 2>/dev/null
	fi
	return $rc
}
