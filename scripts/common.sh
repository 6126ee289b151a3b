# scripts/common.sh: shared by setup-demo.sh and test.sh.
# Installs what is missing (Debian 12), builds and installs the extension, and
# starts/stops a throwaway PostgreSQL cluster run by an ordinary OS user.

# The PostgreSQL to use: PG_CONFIG, or PGBIN (its pg_config), or Debian's 15.
# Given PG_CONFIG alone (e.g. a PostgreSQL 18 built by build-pg18.sh), its
# programs are those of its --bindir.
if [ -z "${PGBIN:-}" ] && [ -n "${PG_CONFIG:-}" ] && [ -x "$PG_CONFIG" ]; then
	PGBIN=$("$PG_CONFIG" --bindir)
fi
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PATH="$PGBIN:$PATH"
# make takes PG_CONFIG (and NO_CUDA, CUDA_HOME) from the environment too
PG_CONFIG=${PG_CONFIG:-$PGBIN/pg_config}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# run a command as the cluster's OS user (the server refuses to run as root)
as_pguser() {
	if [ "$(id -u)" = 0 ]; then
		local envs=(PATH="$PATH")
		[ -n "${PGHOST:-}" ] && envs+=(PGHOST="$PGHOST")
		[ -n "${PGPORT:-}" ] && envs+=(PGPORT="$PGPORT")
		[ -n "${PGUSER:-}" ] && envs+=(PGUSER="$PGUSER")
		runuser -u postgres -- env "${envs[@]}" "$@"
	else
		"$@"
	fi
}

install_deps() {
	local need=()
	if [ "$PGBIN" = /usr/lib/postgresql/15/bin ]; then
		[ -x "$PGBIN/postgres" ] || need+=(postgresql-15)
		{ [ -x "$PG_CONFIG" ] && [ -f "$("$PG_CONFIG" --includedir-server)/postgres.h" ]; } ||
			need+=(postgresql-server-dev-15)
	elif [ ! -x "$PGBIN/postgres" ] || [ ! -x "$PG_CONFIG" ]; then
		echo "no PostgreSQL server or pg_config in $PGBIN ($PG_CONFIG)" >&2
		return 1
	fi
	perl -MIPC::Run -e1 2>/dev/null || need+=(libipc-run-perl)
	command -v make >/dev/null || need+=(make)
	command -v gcc >/dev/null || need+=(gcc)
	if [ ${#need[@]} -gt 0 ]; then
		if [ "$(id -u)" != 0 ]; then
			echo "missing packages: ${need[*]} (run as root to install them)" >&2
			return 1
		fi
		echo "== installing ${need[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	fi
	# Debian's package may auto-start a cluster; the tests use their own.
}

build_install() {
	echo "== building eytzgpu"
	make -C "$REPO" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" "$@"
	make -C "$REPO" -s install PG_CONFIG="$PG_CONFIG" "$@" >/dev/null
}

# say whether the library was built with CUDA and whether a GPU is visible
report_cuda() {
	if grep -q 'cuda=no' "$REPO/.build-config" 2>/dev/null; then
		echo "== CUDA: not built in (no nvcc at ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc, or NO_CUDA set): joins run on the CPU"
	else
		echo "== CUDA: built in"
	fi
	if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
		echo "== GPU: $(nvidia-smi -L | head -1)"
	else
		echo "== GPU: none found (no nvidia-smi, or it lists no device): joins run on the CPU"
	fi
}

# start_cluster DIR PORT: initdb and start a server in DIR, listening on a
# unix socket in DIR only
start_cluster() {
	local dir=$1 port=$2
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	as_pguser initdb -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log"; return 1; }
	as_pguser pg_ctl -D "$dir/data" -l "$dir/server.log" -w -o "-p $port -k $dir -c listen_addresses='' -c fsync=off ${PG_OPTS:-}" start >/dev/null ||
		{ cat "$dir/server.log"; return 1; }
	export PGHOST=$dir PGPORT=$port PGUSER=postgres
}

stop_cluster() {
	local dir=$1
	as_pguser pg_ctl -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
}
