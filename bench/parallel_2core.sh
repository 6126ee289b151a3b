#!/usr/bin/env bash
# bench/parallel_2core.sh: the parallel batched join against the serial one
# on a small CPU-only machine (issue 11: "on a 2-core machine >= 1.5x the
# serial batched join"), with and without huge pages.
#
#   PGBIN=.../bin bench/parallel_2core.sh [INNER_ROWS [OUTER_ROWS [ROUNDS]]]
#                                                 (default 20000000 2000000 4)
#
# Makes its own cluster in $DIR (default /tmp/parallel_2core) on port $PORT
# (default 55499) with PGBIN's PostgreSQL, where eytzgpu must be installed;
# the "random" data set of bench/join_bench.sh and its query, CPU only (no
# service, eytzgpu.device = cpu).  Two server configurations, both with
# shared_buffers = $SB (default 3GB, the tables and index fit) and
# max_parallel_workers_per_gather = 2:
#   huge:  huge_pages = on, min_dynamic_shared_memory = $MDSM (default 512MB,
#          more than the shared image): the query's shared memory is carved
#          from the huge-page main shared memory and the workers search the
#          leader's image in place.  Needs vm.nr_hugepages >= PostgreSQL's
#          shared_memory_size_in_huge_pages: run as root, the script
#          reserves them on top of those reserved already (other servers
#          may hold those) and gives them back at the end; else it says
#          how many and skips this configuration.
#   small: huge_pages = off, min_dynamic_shared_memory = 0: 4 kB pages, the
#          workers copy the image.
# In each, one session (so the leader's cached image and its mapped shared
# buffers are warm for every row) runs a warm-up of each join, then ROUNDS
# rounds of: serial, parallel with 1 worker, parallel with 2 workers (the
# batched join forced, interleaved to spread the machine's noise), and last
# the planner's own choice (default settings) ROUNDS times, and an EXPLAIN
# ANALYZE of each parallel join (how the leader shared its image, per
# worker how it took it up, its lookup acquire and heap fetch times).  Each
# configuration also says how much CPU time the machine spent while it
# ran, and how much of that was not this server's: on a shared machine
# others' work stretches the parallel runs most (their processes wait for
# a core).  Results: $DIR/parallel_2core.md, the psql logs beside it.  On
# a machine others share, NICE=-10 (as root) runs the measured servers at
# that niceness: the CPU is then mostly the benchmark's while it runs.
set -uo pipefail
N=${1:-20000000}
M=${2:-2000000}
ROUNDS=${3:-4}
DIR=${DIR:-/tmp/parallel_2core}
PORT=${PORT:-55499}
SB=${SB:-3GB}
MDSM=${MDSM:-512MB}
NICE=${NICE:-0}
: "${PGBIN:?set PGBIN to the bin directory of a PostgreSQL 15 with eytzgpu installed}"
source "$(dirname "$0")/../scripts/common.sh"
PATH=$PGBIN:$PATH
PSQL="psql -X -q -v ON_ERROR_STOP=1"
T=$DIR/parallel_2core.md
BASE="-c shared_buffers=$SB -c work_mem=1GB -c max_wal_size=20GB -c max_parallel_workers_per_gather=2 -c eytzgpu.device=cpu"
HUGE="$BASE -c huge_pages=on -c min_dynamic_shared_memory=$MDSM"
SMALL="$BASE -c huge_pages=off -c min_dynamic_shared_memory=0"

sql() { $PSQL -At -c "$1"; }
# nice_pg CMD...: CMD as the cluster's user (as_pguser), at niceness NICE
nice_pg() {
	if [ "$(id -u)" = 0 ]; then
		nice -n "$NICE" runuser -u postgres -- env PATH="$PATH" "$@"
	else
		nice -n "$NICE" "$@"
	fi
}
restart() {
	as_pguser pg_ctl -D "$DIR/data" -m fast stop >/dev/null 2>&1
	nice_pg pg_ctl -D "$DIR/data" -l "$DIR/server.log" -w \
		-o "-p $PORT -k $DIR -c listen_addresses='' -c fsync=off $*" start >/dev/null ||
		{ tail -5 "$DIR/server.log"; return 1; }
}

rm -rf "$DIR"
PG_OPTS="$SMALL" start_cluster "$DIR" "$PORT" || exit 1
t0=$(date +%s)
$PSQL <<EOF >"$DIR/load.log" 2>&1 || { cat "$DIR/load.log"; exit 1; }
CREATE EXTENSION eytzgpu;
\set N $N
\set M $M
\i $(dirname "$0")/random_data.sql
VACUUM ANALYZE inner_r;
VACUUM ANALYZE outer_r;
SET maintenance_work_mem = '2GB';
CREATE INDEX inner_r_ez ON inner_r USING eytzgpu (k);
EOF
echo "data: $N x $M random, loaded in $(($(date +%s) - t0)) s; $(nproc) cores" | tee "$T"

Q="SELECT count(*), sum(i.v) FROM outer_r o JOIN inner_r i ON i.k = o.k"
FORCE="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
PAR="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
JOINS=("SET max_parallel_workers_per_gather = 0;" "$PAR SET max_parallel_workers_per_gather = 1;" "$PAR SET max_parallel_workers_per_gather = 2;")
NAMES=("serial" "parallel, 1 worker" "parallel, 2 workers")

# timed SETTINGS: the query under \timing, the settings before it untimed
timed() {
	echo "$1"
	echo "\\timing on"
	echo "$Q;"
	echo "\\timing off"
}

# plan_of LOG N: the join and its workers in the Nth EXPLAIN of LOG
plan_of() {
	awk -v n="$2" '/QUERY PLAN/ { e++ } e == n && /Workers Planned/ { w = " x" $3 }
		e == n && !j && /Custom Scan \(EytzGPU Join\)|Hash Join|Nested Loop|Merge Join/ {
			j = $0; sub(/^[ ->]*/, "", j); sub(/ +\(cost.*/, "", j) }
		END { print j w }' "$1"
}

# cpu_ticks: the clock ticks (USER_HZ) the machine's CPUs were busy, those
# of the server (the postmaster's own and its exited children's: the
# session's backend and the parallel workers once the session has ended),
# and the time
cpu_ticks() {
	local pm
	pm=$(head -1 "$DIR/data/postmaster.pid")
	echo "$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)" \
		"$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat")" "$(date +%s.%N)"
}

# measure CONFIG: the rows of one server configuration
measure() {
	local config=$1 f="$DIR/$1.log" i r before after
	before=$(cpu_ticks)
	{
		echo "$FORCE"
		for i in 0 1 2; do echo "${JOINS[$i]} EXPLAIN (COSTS OFF) $Q;"; done
		for r in $(seq 0 "$ROUNDS"); do
			for i in 0 1 2; do timed "${JOINS[$i]}"; done
		done
		echo "RESET ALL;"
		echo "EXPLAIN $Q;"
		for r in $(seq "$ROUNDS"); do timed ""; done
		echo "$FORCE"
		for i in 1 2; do echo "${JOINS[$i]} EXPLAIN (ANALYZE, COSTS OFF) $Q;"; done
	} | $PSQL >"$f" 2>&1
	sleep 1
	after=$(cpu_ticks)
	local times
	times=$(grep -o '^Time: [0-9.]*' "$f" | awk '{print $2}')
	# what else ran meanwhile: the machine's busy CPU time less the server's
	echo "$config: $(echo "$before $after" | awk -v cores="$(nproc)" '{printf "in %.1f s the CPUs were busy %.1f of %.1f s: this server %.1f s, others %.1f s", $6 - $3, ($4 - $1) / 100, ($6 - $3) * cores, ($5 - $2) / 100, (($4 - $1) - ($5 - $2)) / 100}')" | tee -a "$T"
	echo "| $config: load $(cut -d' ' -f1-3 /proc/loadavg) | plan | ms per run (first: warm-up) | median | vs serial |" | tee -a "$T"
	echo "|---|---|---|---:|---:|" | tee -a "$T"
	local serial_median=""
	for i in 0 1 2; do
		local mine median
		mine=$(awk -v i="$i" -v r="$ROUNDS" 'NR <= 3 * (r + 1) && (NR - 1) % 3 == i' <<<"$times")
		median=$(tail -n +2 <<<"$mine" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
		[ "$i" = 0 ] && serial_median=$median
		printf '| %s | %s | %s | %.0f | %.2fx |\n' "${NAMES[$i]}" "$(plan_of "$f" $((i + 1)))" "$(paste -sd' ' <<<"$mine" | xargs printf '%.0f ')" \
			"$median" "$(awk -v s="$serial_median" -v m="$median" 'BEGIN {print s / m}')" | tee -a "$T"
	done
	printf '| planner'"'"'s choice | %s | %s | | |\n' "$(plan_of "$f" 4)" \
		"$(awk -v r="$ROUNDS" 'NR > 3 * (r + 1)' <<<"$times" | xargs printf '%.0f ')" | tee -a "$T"
	echo "$config: EXPLAIN ANALYZE, per process (leader, workers): shared image, lookup acquire ms, heap fetch ms:" | tee -a "$T"
	grep -E 'Workers Launched|Worker [0-9]:$|Image Shared|Shared Image|Lookup Acquire Time|Heap Fetch Time|Execution Time' "$f" |
		sed -E 's/^ +//' | paste -sd' ' | sed -E 's/Workers Launched/\n  Workers Launched/g' | tee -a "$T"
	echo | tee -a "$T"
}

echo | tee -a "$T"
restart "$SMALL" || exit 1
measure small
as_pguser pg_ctl -D "$DIR/data" -m fast stop >/dev/null 2>&1
huge=$(as_pguser postgres -D "$DIR/data" -C shared_memory_size_in_huge_pages -c shared_buffers="$SB" -c min_dynamic_shared_memory="$MDSM" -c huge_pages=on 2>/dev/null)
had=$(cat /proc/sys/vm/nr_hugepages)
if [ "$(id -u)" = 0 ] && [ -n "$huge" ]; then
	echo $((had + huge)) >/proc/sys/vm/nr_hugepages
fi
if [ -n "$huge" ] && [ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge "$huge" ] && restart "$HUGE"; then
	measure huge
else
	echo "huge: skipped (needs vm.nr_hugepages >= $huge)" | tee -a "$T"
fi
as_pguser pg_ctl -D "$DIR/data" -m fast stop >/dev/null 2>&1
[ "$(id -u)" = 0 ] && echo "$had" >/proc/sys/vm/nr_hugepages
echo "settings: $BASE; huge: $HUGE; small: $SMALL; niceness $NICE" | tee -a "$T"
