#!/usr/bin/env bash
# scripts/build-pg18.sh: build PostgreSQL 18 from Debian's source package.
#
# Debian 12 packages only PostgreSQL 15; the suite also runs against 18, built
# here from the unstable suite's postgresql-18 source package into a prefix
# kept per machine (PG18_PREFIX, default /opt/eytzgpu-pg18), so a second run
# reuses it.  The package is fetched through a private sources list: the
# machine's own apt configuration is never changed.  Prints nothing but
# progress; the result is $PG18_PREFIX/bin/pg_config.  Run as root (it installs
# bison and flex when missing and writes under /opt and /var/cache).
set -euo pipefail

PREFIX=${PG18_PREFIX:-/opt/eytzgpu-pg18}
CACHE=${PG18_CACHE:-/var/cache/eytzgpu-pg18}
DONE="$PREFIX/.eytzgpu-build-complete"
# the contrib modules the suite uses
CONTRIBS="postgres_fdw pageinspect auto_explain"

contribs_there() {
	local c
	for c in $CONTRIBS; do
		[ -f "$PREFIX/lib/postgresql/$c.so" ] || return 1
	done
}

if [ -f "$DONE" ] && [ -x "$PREFIX/bin/pg_config" ]; then
	# a build of an earlier list of contribs: add the missing ones
	if ! contribs_there && [ -f "$CACHE/build/GNUmakefile" ]; then
		for contrib in $CONTRIBS; do
			make -s -C "$CACHE/build/contrib/$contrib" install >/dev/null 2>&1
		done
	fi
	if contribs_there; then
		echo "== PostgreSQL 18 already built in $PREFIX ($("$PREFIX/bin/pg_config" --version))"
		exit 0
	fi
fi

need=()
for tool in bison:bison flex:flex dpkg-source:dpkg-dev make:make gcc:gcc pkg-config:pkg-config; do
	command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
done
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
perl -MIPC::Run -e1 2>/dev/null || need+=(libipc-run-perl)
if [ ${#need[@]} -gt 0 ]; then
	echo "== installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# a private sources list and state directory: apt-get update and source read
# and write only these
mkdir -p "$CACHE/lists/partial" "$CACHE/src"
echo "deb-src http://deb.debian.org/debian sid main" >"$CACHE/sources.list"
APT_OPTS=(-o Dir::Etc::SourceList="$CACHE/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$CACHE/lists")

SRCDIR=$(find "$CACHE/src" -maxdepth 1 -type d -name 'postgresql-18-*' | sort | tail -1)
if [ -z "$SRCDIR" ] || [ ! -f "$SRCDIR/configure" ]; then
	echo "== fetching Debian's postgresql-18 source package (sid)"
	apt-get "${APT_OPTS[@]}" update -qq
	(cd "$CACHE/src" && apt-get "${APT_OPTS[@]}" source -qq postgresql-18 >/dev/null)
	SRCDIR=$(find "$CACHE/src" -maxdepth 1 -type d -name 'postgresql-18-*' | sort | tail -1)
fi
echo "== building PostgreSQL 18 from $SRCDIR into $PREFIX"

# an out-of-tree build directory: a failed build starts again from scratch
BUILD="$CACHE/build"
rm -rf "$BUILD"
mkdir -p "$BUILD"
cd "$BUILD"
# Debian's patches put the libraries in /usr/lib/postgresql/18/lib unless the
# library directory names "postgres": keep them under the prefix
"$SRCDIR/configure" --prefix="$PREFIX" --libdir="$PREFIX/lib/postgresql" \
	--without-icu --without-readline \
	--enable-tap-tests --enable-debug >configure.log 2>&1 ||
	{ tail -30 configure.log; exit 1; }
JOBS=$(nproc)
make -s -j"$JOBS" >make.log 2>&1 || { tail -50 make.log; exit 1; }
make -s install >>make.log 2>&1 || { tail -50 make.log; exit 1; }
for contrib in $CONTRIBS; do
	make -s -C "contrib/$contrib" -j"$JOBS" install >>make.log 2>&1 || { tail -50 make.log; exit 1; }
done
touch "$DONE"
echo "== PostgreSQL 18 built: $("$PREFIX/bin/pg_config" --version)"
