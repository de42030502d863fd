# PostgreSQL servers of every supported major version, from Debian only.
# Source it (scripts/lib.sh does); it defines functions only.
#
#   15       Debian 12's own packages (postgresql-15, postgresql-server-dev-15).
#   13, 18   Debian's source packages (postgresql-13 from bullseye,
#            postgresql-18 from sid), fetched with apt-get source through a
#            private apt list and state directory, and built as upstream:
#            ./configure --prefix=... && make && make install.  18 is built
#            with --enable-cassert --enable-debug and Valgrind support.
#            When the archive no longer serves a source, the same upstream
#            tarball from ../shared/vendor/ (BSON_OUT_VENDOR) is used.
#   17       Debian 13's binary packages, in a Debian 13 root made with
#            debootstrap (the suite then runs inside that root, with its
#            gcc 14).
#
# The Debian mirror is read from this machine's own apt configuration; /etc/apt
# is never written.  Everything built is cached under BSON_OUT_CACHE
# (/var/cache/bson_out), so a second run skips the build.

BSON_OUT_CACHE=${BSON_OUT_CACHE:-/var/cache/bson_out}
BSON_OUT_VENDOR=${BSON_OUT_VENDOR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/vendor}
DEBIAN_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# The Debian suite each source-built or debootstrapped version comes from.
pg_suite() {
	case $1 in
	13) echo bullseye ;;
	17) echo trixie ;;
	18) echo sid ;;
	*) return 1 ;;
	esac
}

# How each version is provided: debian (a package of this machine's release),
# source (built under the cache) or chroot (a Debian 13 root).
pg_kind() {
	case $1 in
	13 | 18) echo source ;;
	17) [ -f /etc/debian_version ] && grep -q '^13' /etc/debian_version && echo debian || echo chroot ;;
	*) echo debian ;;
	esac
}

# The main Debian archive this machine's apt is configured with (not the
# security archive): the first index target of a release without a suffix.
debian_mirror() {
	local uri
	uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(TARGET_OF)' 2>/dev/null |
		awk '$3 == "deb" && $2 !~ /-/ { print $1; exit }')
	[ -n "$uri" ] || { log "no Debian archive in this machine's apt configuration"; return 1; }
	echo "${uri%/}"
}

# apt_private SUITE: prints the apt-get options of a private apt setup that
# knows only SUITE's sources (its lists and state under the cache).
apt_private() {
	local suite=$1 mirror dir
	mirror=$(debian_mirror) || return 1
	dir=$BSON_OUT_CACHE/apt/$suite
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	echo "deb-src [signed-by=$DEBIAN_KEYRING] $mirror $suite main" >"$dir/sources.list"
	printf '%s\n' -o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/none" \
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" \
		-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
}

# pg_fetch_source MAJOR DIR: the upstream tarball of Debian's source package
# postgresql-MAJOR, into DIR; prints its path.
pg_fetch_source() {
	local major=$1 dir=$2 suite opts=() tarball
	suite=$(pg_suite "$major") || return 1
	mkdir -p "$dir"
	mapfile -t opts < <(apt_private "$suite")
	if [ ${#opts[@]} -gt 0 ] &&
		apt-get "${opts[@]}" -qq update >"$dir/apt.log" 2>&1 &&
		(cd "$dir" && apt-get "${opts[@]}" -qq source --download-only "postgresql-$major") >>"$dir/apt.log" 2>&1; then
		tarball=$(ls "$dir"/postgresql-"$major"_*.orig.tar.* 2>/dev/null | head -1)
	fi
	if [ -z "${tarball:-}" ]; then
		tarball=$(ls "$BSON_OUT_VENDOR"/postgresql-"$major".*.tar.* 2>/dev/null | head -1)
		[ -n "$tarball" ] || {
			log "apt-get source postgresql-$major from $suite failed and there is no tarball in $BSON_OUT_VENDOR"
			tail -5 "$dir/apt.log" >&2
			return 1
		}
		log "apt-get source postgresql-$major failed ($(tail -1 "$dir/apt.log")); using $tarball"
	fi
	echo "$tarball"
}

# The configure options of each source-built version.
pg_configure_options() {
	case $1 in
	18) echo "--enable-cassert --enable-debug CPPFLAGS=-DUSE_VALGRIND" ;;
	*) echo "" ;;
	esac
}

# pg_build_source MAJOR: builds and installs postgresql-MAJOR under the cache
# unless the same build is there already; prints nothing.
pg_build_source() {
	local major=$1 prefix stamp options tarball src
	prefix=$BSON_OUT_CACHE/pg$major
	stamp="$prefix/.bson_out-build"
	options="--prefix=$prefix --without-readline --without-icu $(pg_configure_options "$major")"
	if [ -f "$stamp" ] && [ "$(head -1 "$stamp")" = "$options" ] && [ -x "$prefix/bin/pg_config" ]; then
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || { log "need root to build PostgreSQL $major under $BSON_OUT_CACHE"; return 1; }
	install_debian_packages gcc make bison flex zlib1g-dev dpkg-dev valgrind || return 1
	local work=$BSON_OUT_CACHE/build/pg$major
	rm -rf "$work" "$prefix"
	tarball=$(pg_fetch_source "$major" "$work/download") || return 1
	log "building PostgreSQL $major from $(basename "$tarball") ($options)"
	tar -xf "$tarball" -C "$work" || return 1
	src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'postgresql-*' | head -1)
	# shellcheck disable=SC2086 # options are words
	(cd "$src" && ./configure $options >"$work/configure.log" 2>&1 &&
		make -j"$(nproc)" >"$work/make.log" 2>&1 &&
		make install >"$work/install.log" 2>&1 &&
		make -C contrib/test_decoding install >>"$work/install.log" 2>&1 &&
		cp src/tools/valgrind.supp "$prefix/share/valgrind.supp") || {
		log "building PostgreSQL $major failed; logs in $work"
		tail -20 "$work"/*.log >&2
		return 1
	}
	echo "$options" >"$stamp"
	basename "$tarball" >>"$stamp"
	rm -rf "$work"
}

# pg_build_description MAJOR: how the server of MAJOR was made, in a few words.
pg_build_description() {
	local stamp=$BSON_OUT_CACHE/pg$1/.bson_out-build
	case $(pg_kind "$1") in
	source)
		local opts
		opts=$(head -1 "$stamp" | sed -E 's/--prefix=[^ ]+ //; s/--without-[a-z]+ //g')
		echo "built from Debian's source package, $(sed -n 2p "$stamp")${opts:+, $opts}" ;;
	*)
		echo "Debian $(cat /etc/debian_version) package $(dpkg-query -W -f='${Version}' "postgresql-$1" 2>/dev/null)" ;;
	esac
}

# The packages the test suite needs inside the Debian 13 root.
DEBIAN13_PACKAGES=postgresql-17,postgresql-server-dev-17,make,gcc,libc6-dev,libpq-dev,libbson-dev,pkg-config,time,python3,python3-bson,python3-pymongo,python3-psycopg2,iproute2,bsdutils,procps,util-linux,ca-certificates

# pg17_root: a Debian 13 root with PostgreSQL 17 under the cache; prints its
# path.
pg17_root() {
	local root=$BSON_OUT_CACHE/debian13-root mirror
	local stamp="$root/.bson_out-root"
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$DEBIAN13_PACKAGES" ]; then
		echo "$root"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || { log "need root to make a Debian 13 root under $BSON_OUT_CACHE"; return 1; }
	install_debian_packages debootstrap || return 1
	mirror=$(debian_mirror) || return 1
	rm -rf "$root"
	mkdir -p "$BSON_OUT_CACHE"
	log "making a Debian 13 root with PostgreSQL 17 in $root (debootstrap)"
	debootstrap --variant=minbase --keyring="$DEBIAN_KEYRING" --include="$DEBIAN13_PACKAGES" \
		trixie "$root" "$mirror" >"$BSON_OUT_CACHE/debootstrap.log" 2>&1 || {
		log "debootstrap failed; log in $BSON_OUT_CACHE/debootstrap.log"
		tail -20 "$BSON_OUT_CACHE/debootstrap.log" >&2
		return 1
	}
	echo "$DEBIAN13_PACKAGES" >"$stamp"
	echo "$root"
}

# in_root [--bind DIR ROOTDIR]... ROOT COMMAND...: runs COMMAND inside ROOT,
# with /proc, /dev and /dev/shm mounted, and each DIR of this machine at
# ROOTDIR inside ROOT, in a private mount namespace (gone when it ends).
# The root uses this machine's network: its resolv.conf, and the CAs it
# trusts (a network that intercepts TLS has a CA of its own, which npm's
# registry would need in the root too): each certificate of this machine's
# bundle is a local CA of the root, which the root's ca-certificates takes
# into its own bundle once installed, and ca-certificates-java into Java's
# (which imports one certificate a file: the bundle whole would give it the
# first only, and Maven Central would be an unknown issuer).
in_root() {
	local binds=() local_ca
	while [ "${1:-}" = --bind ]; do
		binds+=("$2" "$3")
		shift 3
	done
	local root=$1
	shift
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
	local_ca=$root/usr/local/share/ca-certificates/this-machine
	if [ -f /etc/ssl/certs/ca-certificates.crt ] &&
		! cmp -s /etc/ssl/certs/ca-certificates.crt "$local_ca/bundle"; then
		rm -rf "$local_ca" "$local_ca.crt"
		mkdir -p "$local_ca" &&
			awk -v dir="$local_ca" '/-----BEGIN CERTIFICATE-----/ { n++; f = sprintf("%s/%03d.crt", dir, n) }
				f { print > f } /-----END CERTIFICATE-----/ { close(f); f = "" }' \
				/etc/ssl/certs/ca-certificates.crt &&
			cp /etc/ssl/certs/ca-certificates.crt "$local_ca/bundle"
		if [ -x "$root/usr/sbin/update-ca-certificates" ]; then
			chroot "$root" /usr/sbin/update-ca-certificates >/dev/null 2>&1
		fi
	fi
	unshare --mount --propagation private -- /bin/bash -c '
		root=$1 nbinds=$2; shift 2
		mount -t proc proc "$root/proc" &&
		mount --rbind /dev "$root/dev" &&
		mount -t tmpfs tmpfs "$root/dev/shm" || exit 1
		while [ "$nbinds" -gt 0 ]; do
			mkdir -p "$root$2" && mount --bind "$1" "$root$2" || exit 1
			shift 2
			nbinds=$((nbinds - 2))
		done
		exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" CI="${CI:-}" "$@"' in_root "$root" "${#binds[@]}" "${binds[@]}" "$@"
}
