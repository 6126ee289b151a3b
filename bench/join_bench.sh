#!/usr/bin/env bash
# bench/join_bench.sh: the batched eytzgpu join against PostgreSQL's own plans.
#
#   bench/join_bench.sh [INNER_ROWS [OUTER_ROWS [REPEAT]]]    (default 20000000 2000000 3)
#
# Needs a running server reachable through PGHOST/PGPORT/PGUSER with eytzgpu
# installed.  Inner table inner_t(k int4 unique, v int), keys scattered over
# int4 by a multiplicative permutation (heap order is not key order); outer
# table outer_t(k) of OUTER_ROWS distinct keys drawn from the inner keys.
# Query: SELECT count(*), sum(i.v) FROM outer_t o JOIN inner_t i ON i.k = o.k.
# Each plan runs REPEAT times in one backend; the table shows the best and
# the first run (the first eytzgpu run of a backend loads the index image or
# uploads it to the GPU).  A 1% range join (ranges covering 1% of the inner
# rows) follows.  Also builds a btree, a CPU and (with a GPU) a GPU eytzgpu
# index and checks that the two eytzgpu indexes' pages are byte-identical.
set -euo pipefail
N=${1:-20000000}
M=${2:-2000000}
REPEAT=${3:-3}
PSQL="psql -X -q -v ON_ERROR_STOP=1"
OUT=${BENCH_OUT:-/tmp/join_bench}
mkdir -p "$OUT"

sql() { $PSQL -At -c "$1"; }

# time_query NAME SETTINGS QUERY: runs QUERY REPEAT times in one session
time_query() {
	local name=$1 settings=$2 query=$3
	local f="$OUT/$name.log"
	{
		echo "$settings"
		echo "\\timing on"
		echo "EXPLAIN $query;"
		for _ in $(seq "$REPEAT"); do echo "$query;"; done
		echo "EXPLAIN (ANALYZE, TIMING OFF) $query;"
	} | $PSQL >"$f" 2>&1
	local times first best result
	times=$(grep -o 'Time: [0-9.]*' "$f" | awk '{print $2}' | sed -n "2,$((REPEAT + 1))p")
	first=$(echo "$times" | head -1)
	best=$(echo "$times" | sort -n | head -1)
	result=$(grep -E '^ *[0-9]+ *\| *[0-9]+' "$f" | head -1 | tr -s ' ' || true)
	plan=$(grep -oE 'Custom Scan \(EytzGPU Join\)|Parallel Hash Join|Hash Join|Nested Loop|Merge Join' "$f" | head -1 || true)
	device=$(grep -oE 'Device: [a-z]+' "$f" | tail -1 | cut -d' ' -f2 || true)
	printf '| %-34s | %-28s | %9.0f | %9.0f | %-22s |\n' "$name" "$plan${device:+ ($device)}" "$best" "$first" "$result" | tee -a "$OUT/table.md"
}

echo "== data: $N inner rows, $M outer rows"
sql "CREATE EXTENSION IF NOT EXISTS eytzgpu"
sql "DROP TABLE IF EXISTS inner_t, outer_t, range_t"
start=$(date +%s.%N)
sql "CREATE UNLOGGED TABLE inner_t (k int4, v int4)"
sql "INSERT INTO inner_t SELECT ((g::int8 * 48271) % 2147483647)::int4, g FROM generate_series(1, $N) g"
sql "CREATE UNLOGGED TABLE outer_t (k int4)"
# g * 7919 mod N is a permutation of 0..N-1: distinct inner rows, scattered
sql "INSERT INTO outer_t SELECT (((((g::int8 * 7919) % $N) + 1) * 48271) % 2147483647)::int4 FROM generate_series(1, $M) g"
# ranges of ~100 inner rows each, 1% of the inner rows in all
sql "CREATE UNLOGGED TABLE range_t (lo int4, hi int4)"
sql "INSERT INTO range_t SELECT lo, lo + (2147483647::int8 * 100 / $N)::int4 FROM (SELECT ((g::int8 * 1000003) % 2000000000)::int4 AS lo FROM generate_series(1, $N / 10000) g) s"
sql "VACUUM ANALYZE inner_t"
sql "VACUUM ANALYZE outer_t"
sql "VACUUM ANALYZE range_t"
echo "data loaded in $(echo "$(date +%s.%N) - $start" | bc) s"

: >"$OUT/table.md"
idx_time() {
	local name=$1 settings=$2 stmt=$3
	local t
	t=$({ echo "$settings"; echo "\\timing on"; echo "$stmt;"; } | $PSQL 2>&1 | grep -o 'Time: [0-9.]*' | awk '{print $2}' | tail -1)
	printf '| %-34s | %-28s | %9.0f | %9s | %-22s |\n' "$name" "" "$t" "" "" | tee -a "$OUT/table.md"
}
echo "| what | plan (device) | best ms | first ms | result |" | tee -a "$OUT/table.md"
echo "|---|---|---:|---:|---|" | tee -a "$OUT/table.md"
idx_time "btree build" "SET maintenance_work_mem = '8GB';" "CREATE INDEX inner_bt ON inner_t (k)"
sql "SELECT 'btree size ' || pg_size_pretty(pg_relation_size('inner_bt'))"
Q="SELECT count(*), sum(i.v) FROM outer_t o JOIN inner_t i ON i.k = o.k"
OFF="SET eytzgpu.enable_join = off; SET work_mem = '1GB';"
SERIAL="SET max_parallel_workers_per_gather = 0;"
time_query "default plan (parallel)" "$OFF" "$Q"
time_query "serial hash join" "$OFF $SERIAL SET enable_nestloop = off; SET enable_mergejoin = off;" "$Q"
time_query "serial nested loop, btree" "$OFF $SERIAL SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_memoize = off; SET enable_bitmapscan = off;" "$Q"
time_query "parallel nested loop, btree" "$OFF SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_memoize = off; SET enable_bitmapscan = off;" "$Q"
R="SELECT count(*), sum(i.v) FROM range_t r JOIN inner_t i ON i.k BETWEEN r.lo AND r.hi"
time_query "1% range: default plan" "$OFF" "$R"

# the eytzgpu indexes come after the btree plans, which they could replace
idx_time "eytzgpu build, CPU" "SET maintenance_work_mem = '8GB'; SET eytzgpu.device = cpu;" \
	"CREATE INDEX inner_ez_cpu ON inner_t USING eytzgpu (k)"
sql "SELECT 'eytzgpu size ' || pg_size_pretty(pg_relation_size('inner_ez_cpu'))"
GPU_BUILD=0
if [ "${EYTZ_GPU:-0}" = 1 ]; then
	idx_time "eytzgpu build, GPU" "SET maintenance_work_mem = '8GB'; SET eytzgpu.device = gpu;" \
		"CREATE INDEX inner_ez_gpu ON inner_t USING eytzgpu (k)"
	GPU_BUILD=1
	# same pages, LSN and checksum aside (bytes 0-9 of the page header)
	sql "CREATE EXTENSION IF NOT EXISTS pageinspect"
	sql "CHECKPOINT"
	same=$(sql "SELECT bool_and(substr(get_raw_page('inner_ez_cpu', b), 11) = substr(get_raw_page('inner_ez_gpu', b), 11))
	               AND pg_relation_size('inner_ez_cpu') = pg_relation_size('inner_ez_gpu')
	            FROM generate_series(0, pg_relation_size('inner_ez_cpu') / 8192 - 1) b")
	echo "GPU-built index pages identical to the CPU build: $same" | tee -a "$OUT/summary.txt"
	sql "DROP INDEX inner_ez_gpu"
fi

ON="SET eytzgpu.enable_join = on; SET work_mem = '1GB'; $SERIAL"
time_query "planner's choice, eytzgpu on, serial" "$ON" "$Q"
FORCE="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
time_query "eytzgpu join, CPU" "$ON $FORCE SET eytzgpu.device = cpu;" "$Q"
if [ "${EYTZ_GPU:-0}" = 1 ]; then
	time_query "eytzgpu join, GPU" "$ON $FORCE SET eytzgpu.device = gpu;" "$Q"
fi

time_query "1% range: eytzgpu join, CPU" "$ON $FORCE SET eytzgpu.device = cpu;" "$R"
if [ "${EYTZ_GPU:-0}" = 1 ]; then
	time_query "1% range: eytzgpu join, GPU" "$ON $FORCE SET eytzgpu.device = gpu;" "$R"
fi
echo
cat "$OUT/table.md"
