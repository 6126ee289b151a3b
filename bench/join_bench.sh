#!/usr/bin/env bash
# bench/join_bench.sh: the batched eytzgpu join against PostgreSQL's own plans,
# on two data sets.
#
#   bench/join_bench.sh [INNER_ROWS [OUTER_ROWS [REPEAT]]]    (default 20000000 2000000 3)
#
# Needs a running server reachable through PGHOST/PGPORT/PGUSER with eytzgpu
# installed; EYTZ_GPU=1 adds the GPU rows (build and join).
#
# Data set "scattered": inner_t(k int4 unique, v int), keys scattered over
# int4 by a multiplicative permutation (heap order is not key order); outer_t
# of OUTER_ROWS distinct keys drawn from the inner keys.  A 1% range join
# (ranges covering 1% of the inner rows) follows.
# Data set "random": inner_r(k int4, v int), keys hashint4(1..N), random and
# uncorrelated with heap order; outer_r of OUTER_ROWS keys drawn at random
# with repeats, ~5% of them misses.
# Query on each: SELECT count(*), sum(i.v) FROM outer o JOIN inner i ON i.k = o.k.
#
# Each plan runs REPEAT times in one backend; the table shows the best and
# the first run (the first eytzgpu run of a backend loads the index image or
# uploads it to the GPU).  For the eytzgpu plans a last EXPLAIN ANALYZE gives
# the stage budget (budget.md): per outer row, per key looked up and per
# match, and how much of the node's time the stages account for.  Also
# builds a btree, a CPU and (with a GPU) a GPU eytzgpu index and checks that
# the two eytzgpu indexes' pages are byte-identical.
# Last, the INCLUDE section (include.txt): on each data set the CPU join
# over the index without INCLUDE, then over a covering index INCLUDE (v)
# after VACUUM (index-only: the sum reads v from the index), with sizes,
# EXPLAIN ANALYZE's heap fetches and the ratio's bound (incl_bound).
set -euo pipefail
N=${1:-20000000}
M=${2:-2000000}
REPEAT=${3:-3}
PSQL="psql -X -q -v ON_ERROR_STOP=1"
OUT=${BENCH_OUT:-/tmp/join_bench}
mkdir -p "$OUT"

sql() { $PSQL -At -c "$1"; }

# time_query NAME SETTINGS QUERY [BUDGET]: runs QUERY REPEAT times in one
# session; with BUDGET, then once under EXPLAIN ANALYZE for the stage budget
# and once more with TIMING OFF (outer+fill and lookup without clock reads
# per row)
time_query() {
	local name=$1 settings=$2 query=$3 budget=${4:-}
	local f="$OUT/${name//[^A-Za-z0-9]/_}.log"
	{
		echo "$settings"
		echo "\\timing on"
		echo "EXPLAIN $query;"
		for _ in $(seq "$REPEAT"); do echo "$query;"; done
		if [ -n "$budget" ]; then
			echo "EXPLAIN (ANALYZE, COSTS OFF) $query;"
			echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $query;"
		else
			echo "EXPLAIN (ANALYZE, TIMING OFF) $query;"
		fi
	} | $PSQL >"$f" 2>&1
	local times first best result plan device
	times=$(grep -o 'Time: [0-9.]*' "$f" | awk '{print $2}' | sed -n "2,$((REPEAT + 1))p")
	# no head in these pipes: a writer cut off early fails them (pipefail)
	first=$(sed -n 1p <<<"$times")
	best=$(sort -n <<<"$times" | sed -n 1p)
	result=$(grep -E '^ *[0-9]+ *\| *[0-9]+' "$f" | head -1 | tr -s ' ' || true)
	plan=$(grep -oE 'Parallel Custom Scan \(EytzGPU Join\)|Custom Scan \(EytzGPU Join\)|Parallel Hash Join|Hash Join|Nested Loop|Merge Join' "$f" | head -1 || true)
	device=$(grep -oE 'Device: [a-z ()]+' "$f" | tail -1 | cut -d' ' -f2- || true)
	printf '| %-38s | %-30s | %9.0f | %9.0f | %-22s |\n' "$name" "$plan${device:+ ($device)}" "$best" "$first" "$result" | tee -a "$OUT/table.md"
	[ -n "$budget" ] && stage_budget "$name" "$f" "$best"
	return 0
}

# stage_budget NAME LOG BEST: the EytzGPU Join node's stages from the
# EXPLAIN ANALYZE, beside the best run without it (the clock reads of the
# stage budget, about three a row, are part of its stages: the node's time
# under EXPLAIN ANALYZE exceeds the untimed query's; the last column is
# their cost as the node reports it); outer+fill and lookup also as the
# TIMING OFF run shows them (in parentheses: no clock read per row, neither
# the node's nor the outer Seq Scan's)
stage_budget() {
	awk -v name="$1" -v best="$3" '
		/Custom Scan \(EytzGPU Join\) \(actual rows=/ { untimed = 1 }
		untimed && / Outer Time: / { outer_off = $3 } untimed && / Lookup Time: / { lookup_off = $3 }
		untimed { next }
		/Custom Scan \(EytzGPU Join\)/ { match($0, /actual time=[0-9.]+\.\.[0-9.]+/);
			split(substr($0, RSTART + 12, RLENGTH - 12), a, "\\.\\."); total = a[2] + 0 }
		/ Lookups: / { keys = $2 } / Matches: / { matches = $2 } / Heap Fetches: / { fetches = $3 }
		/ Heap Blocks: / { blocks = $3 }
		/ Outer Time: / { outer = $3 } / Lookup Time: / { lookup = $3 } / Heap Fetch Time: / { fetch = $4 }
		/ Qual Time: / { qual = $3 } / Own Time: / { own = $3 } / Stage Clock Cost: / { clocks = $4 }
		/ Lookup Search Time: / { search = $4 } / GPU Transfer Time: / { xfer = $4 }
		/ GPU Kernel Time: / { kern = $4 } / Match Sort Time: / { sort = $4 }
		/Seq Scan on outer_/ { match($0, /rows=[0-9]+/); rows = substr($0, RSTART + 5, RLENGTH - 5) + 0 }
		END {
			if (total == 0 || keys == 0 || matches == 0 || rows == 0) exit
			sum = outer + lookup + fetch + qual + own
			per_block = "no block read"
			if (blocks > 0) per_block = sprintf("%.1f fetches a block", fetches / blocks)
			printf "| %-38s | %8.0f | %8.0f | %6.0f (%.0f) | %6.1f (%.1f; search %.1f, transfer %.1f, kernel %.1f, sort %.1f) | %6.0f (%s) | %6.0f | %6.0f | %5.1f%% | %6.0f |\n",
				name, best, total, outer * 1e6 / rows, outer_off * 1e6 / rows, lookup * 1e6 / keys, lookup_off * 1e6 / keys,
				search * 1e6 / keys, xfer * 1e6 / keys,
				kern * 1e6 / keys, sort * 1e6 / keys, fetch * 1e6 / matches,
				per_block,
				qual * 1e6 / matches, own * 1e6 / rows, sum * 100 / total, clocks * 1e6 / rows
		}' "$2" | tee -a "$OUT/budget.md"
}

idx_time() {
	local name=$1 settings=$2 stmt=$3
	local t
	t=$({ echo "$settings"; echo "\\timing on"; echo "$stmt;"; } | $PSQL 2>&1 | grep -o 'Time: [0-9.]*' | awk '{print $2}' | tail -1)
	printf '| %-38s | %-30s | %9.0f | %9s | %-22s |\n' "$name" "" "$t" "" "" | tee -a "$OUT/table.md"
}

echo "== data: $N inner rows, $M outer rows"
sql "CREATE EXTENSION IF NOT EXISTS eytzgpu"
sql "DROP TABLE IF EXISTS inner_t, outer_t, range_t, inner_r, outer_r"
start=$(date +%s.%N)
sql "CREATE UNLOGGED TABLE inner_t (k int4, v int4)"
sql "INSERT INTO inner_t SELECT ((g::int8 * 48271) % 2147483647)::int4, g FROM generate_series(1, $N) g"
sql "CREATE UNLOGGED TABLE outer_t (k int4)"
# g * 7919 mod N is a permutation of 0..N-1: distinct inner rows, scattered
sql "INSERT INTO outer_t SELECT (((((g::int8 * 7919) % $N) + 1) * 48271) % 2147483647)::int4 FROM generate_series(1, $M) g"
# ranges of ~100 inner rows each, 1% of the inner rows in all
sql "CREATE UNLOGGED TABLE range_t (lo int4, hi int4)"
sql "INSERT INTO range_t SELECT lo, lo + (2147483647::int8 * 100 / $N)::int4 FROM (SELECT ((g::int8 * 1000003) % 2000000000)::int4 AS lo FROM generate_series(1, $N / 10000) g) s"
# random keys: hashint4 of the row number; outer rows pick inner rows at
# random (repeats), 5% pick numbers past N (misses)
sql "CREATE UNLOGGED TABLE inner_r (k int4, v int4)"
sql "INSERT INTO inner_r SELECT hashint4(g), g FROM generate_series(1, $N) g"
sql "CREATE UNLOGGED TABLE outer_r (k int4)"
sql "SELECT setseed(0.42); INSERT INTO outer_r SELECT hashint4(CASE WHEN random() < 0.05 THEN $N + 1 + g ELSE 1 + floor(random() * $N)::int4 END) FROM generate_series(1, $M) g"
for t in inner_t outer_t range_t inner_r outer_r; do sql "VACUUM ANALYZE $t"; done
echo "data loaded in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

: >"$OUT/table.md"
: >"$OUT/budget.md"
echo "| what | plan (device) | best ms | first ms | result |" | tee -a "$OUT/table.md"
echo "|---|---|---:|---:|---|" | tee -a "$OUT/table.md"
idx_time "btree build" "SET maintenance_work_mem = '8GB';" "CREATE INDEX inner_bt ON inner_t (k)"
sql "CREATE INDEX inner_r_bt ON inner_r (k)"
sql "SELECT 'btree size ' || pg_size_pretty(pg_relation_size('inner_bt'))"
OFF="SET eytzgpu.enable_join = off; SET work_mem = '1GB';"
SERIAL="SET max_parallel_workers_per_gather = 0;"
BTREE_NL="$OFF $SERIAL SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_memoize = off; SET enable_bitmapscan = off;"
Q="SELECT count(*), sum(i.v) FROM outer_t o JOIN inner_t i ON i.k = o.k"
QR="SELECT count(*), sum(i.v) FROM outer_r o JOIN inner_r i ON i.k = o.k"
R="SELECT count(*), sum(i.v) FROM range_t r JOIN inner_t i ON i.k BETWEEN r.lo AND r.hi"
time_query "default plan (parallel)" "$OFF" "$Q"
time_query "serial hash join" "$OFF $SERIAL SET enable_nestloop = off; SET enable_mergejoin = off;" "$Q"
time_query "serial nested loop, btree" "$BTREE_NL" "$Q"
time_query "parallel nested loop, btree" "$OFF SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_memoize = off; SET enable_bitmapscan = off;" "$Q"
time_query "1% range: default plan" "$OFF" "$R"
time_query "random: default plan (parallel)" "$OFF" "$QR"
time_query "random: serial nested loop, btree" "$BTREE_NL" "$QR"

# the eytzgpu indexes come after the btree plans, which they could replace
idx_time "eytzgpu build, CPU" "SET maintenance_work_mem = '8GB'; SET eytzgpu.device = cpu;" \
	"CREATE INDEX inner_ez_cpu ON inner_t USING eytzgpu (k)"
sql "SET maintenance_work_mem = '8GB'; CREATE INDEX inner_r_ez ON inner_r USING eytzgpu (k)"
sql "SELECT 'eytzgpu size ' || pg_size_pretty(pg_relation_size('inner_ez_cpu'))"
if [ "${EYTZ_GPU:-0}" = 1 ]; then
	idx_time "eytzgpu build, GPU" "SET maintenance_work_mem = '8GB'; SET eytzgpu.device = gpu;" \
		"CREATE INDEX inner_ez_gpu ON inner_t USING eytzgpu (k)"
	# same pages, LSN and checksum aside (bytes 0-9 of the page header)
	sql "CREATE EXTENSION IF NOT EXISTS pageinspect"
	sql "CHECKPOINT"
	same=$(sql "SELECT bool_and(substr(get_raw_page('inner_ez_cpu', b), 11) = substr(get_raw_page('inner_ez_gpu', b), 11))
	               AND pg_relation_size('inner_ez_cpu') = pg_relation_size('inner_ez_gpu')
	            FROM generate_series(0, pg_relation_size('inner_ez_cpu') / 8192 - 1) b")
	echo "GPU-built index pages identical to the CPU build: $same" | tee -a "$OUT/summary.txt"
	sql "DROP INDEX inner_ez_gpu"
fi

echo "| plan | query ms, untimed | node ms, EXPLAIN ANALYZE | outer+fill ns/row (TIMING OFF) | lookup ns/key (TIMING OFF) | heap fetch ns/match (heap fetches per block visit) | qual+projection ns/match | own ns/row | stages/node | stage clocks ns/row (part of the stages) |" >>"$OUT/budget.md"
echo "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|" >>"$OUT/budget.md"
ON="SET eytzgpu.enable_join = on; SET work_mem = '1GB'; $SERIAL"
FORCE="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
time_query "planner's choice, eytzgpu on, serial" "$ON" "$Q"
time_query "eytzgpu join (device chosen)" "$ON $FORCE" "$Q" budget
time_query "eytzgpu join, CPU" "$ON $FORCE SET eytzgpu.device = cpu;" "$Q" budget
time_query "1% range: eytzgpu join, CPU" "$ON $FORCE SET eytzgpu.device = cpu;" "$R"
if [ "${EYTZ_GPU:-0}" = 1 ]; then
	time_query "1% range: eytzgpu join, GPU" "$ON $FORCE SET eytzgpu.device = gpu;" "$R"
fi
time_query "random: eytzgpu join (device chosen)" "$ON $FORCE" "$QR" budget
time_query "random: eytzgpu join, CPU" "$ON $FORCE SET eytzgpu.device = cpu;" "$QR" budget

# Parallel batched join (issue 11): the join under Gather, each process
# batching its share of a parallel outer scan, against the serial batched
# join and parallel hash join, on both data sets; then the plan the planner
# picks by default with the join enabled (parallel allowed).  WORKERS sets
# max_parallel_workers_per_gather (default 2).
WORKERS=${WORKERS:-2}
PAR="SET eytzgpu.enable_join = on; SET work_mem = '1GB'; SET max_parallel_workers_per_gather = $WORKERS;"
PHASH="$OFF SET max_parallel_workers_per_gather = $WORKERS; SET enable_nestloop = off; SET enable_mergejoin = off;"
echo "| parallel: $WORKERS workers | | | | |" | tee -a "$OUT/table.md"
for set in friendly random; do
	if [ $set = friendly ]; then q=$Q; else q=$QR; fi
	time_query "$set: serial batched join" "$ON $FORCE" "$q"
	time_query "$set: parallel batched join" "$PAR $FORCE" "$q"
	time_query "$set: parallel hash join" "$PHASH" "$q"
	time_query "$set: planner's choice, parallel allowed" "$PAR" "$q"
	serial=$(grep -F "| $set: serial batched join " "$OUT/table.md" | tail -1 | awk -F'|' '{print $4}')
	par=$(grep -F "| $set: parallel batched join " "$OUT/table.md" | tail -1 | awk -F'|' '{print $4}')
	phash=$(grep -F "| $set: parallel hash join " "$OUT/table.md" | tail -1 | awk -F'|' '{print $4}')
	# awk, not bc: the GPU machine has no bc
	echo "$set: parallel batched join $(awk -v a="$serial" -v b="$par" 'BEGIN { printf "%.2f", a / b }')x the serial batched join, $(awk -v a="$phash" -v b="$par" 'BEGIN { printf "%.2f", a / b }')x parallel hash join" |
		tee -a "$OUT/summary.txt"
	# each process pins its own view: what that costs it once the leader
	# holds the image (and shares it) after a first run
	{ echo "$PAR $FORCE"; echo "$q;"; echo "EXPLAIN (ANALYZE, COSTS OFF) $q;"; } |
		$PSQL >"$OUT/${set}_parallel_explain.log" 2>&1
	echo "$set: per process (leader first, then each worker) lookup acquire ms, second run:" \
		"$(grep -oE 'Lookup Acquire Time: [0-9.]+' "$OUT/${set}_parallel_explain.log" | awk '{printf "%s ", $4}')" |
		tee -a "$OUT/summary.txt"
done
# ---- INCLUDE: the index-only join (issue 10), CPU path (and GPU with
# EYTZ_GPU=1).  After VACUUM the
# join reading only the key and an included column (sum(i.v) with v
# included) against the same join over the index without INCLUDE, on both
# data sets, in this run; with the heap fetches EXPLAIN ANALYZE counts.
incl_fetches() {
	{ echo "$1"; echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $2;"; } | $PSQL 2>&1 |
		grep -oE 'Heap Fetches: [0-9]+' | awk '{print $3}'
}
# The ratio if looking the keys up cost nothing, from the two joins' last
# EXPLAIN (ANALYZE, TIMING OFF): each join less its lookup, the plain join
# keeping its match sort (the heap fetches' order) and heap fetches, both
# keeping the outer scan and the per-row work.  Where this is below 2, no
# faster lookup can make the INCLUDE join 2x.
incl_bound() {
	local p="$OUT/${1//[^A-Za-z0-9]/_}.log" i="$OUT/${2//[^A-Za-z0-9]/_}.log"
	last() { grep -oE "$1: [0-9.]+" "$2" | tail -1 | awk '{print $NF}'; }
	awk -v pe="$(last 'Execution Time' "$p")" -v pl="$(last 'Lookup Time' "$p")" \
		-v ps="$(last 'Match Sort Time' "$p")" \
		-v ie="$(last 'Execution Time' "$i")" -v il="$(last 'Lookup Time' "$i")" \
		'BEGIN { if (pe == "" || pl == "" || ps == "" || ie == "" || il == "" || ie - il <= 0) print "n/a (no EXPLAIN figures)";
		else printf "%.2fx (no INCLUDE %.1f - lookup %.1f + match sort %.1f ms, INCLUDE %.1f - lookup %.1f ms)\n",
			(pe - pl + ps) / (ie - il), pe, pl, ps, ie, il }'
}
incl_case() {
	local label=$1 tbl=$2 plain_idx=$3 query=$4
	local settings="$ON $FORCE SET eytzgpu.device = cpu;"
	local gpu="$ON $FORCE SET eytzgpu.device = gpu;"
	time_query "$label: no INCLUDE, CPU" "$settings" "$query"
	echo "$label: no INCLUDE heap fetches $(incl_fetches "$settings" "$query")" | tee -a "$OUT/include.txt"
	[ "${EYTZ_GPU:-0}" = 1 ] && time_query "$label: no INCLUDE, GPU" "$gpu" "$query"
	idx_time "$label: eytzgpu build INCLUDE (v)" "SET maintenance_work_mem = '8GB'; SET eytzgpu.device = cpu;" \
		"CREATE INDEX ${tbl}_ez_incl ON $tbl USING eytzgpu (k) INCLUDE (v)"
	sql "SELECT '$label: INCLUDE index size ' || pg_size_pretty(pg_relation_size('${tbl}_ez_incl')) || ' (without: ' || pg_size_pretty(pg_relation_size('$plain_idx')) || ')'" | tee -a "$OUT/include.txt"
	sql "VACUUM $tbl"
	# the planner would take the covering index anyway; nothing else to choose
	sql "DROP INDEX $plain_idx"
	time_query "$label: INCLUDE (index-only), CPU" "$settings" "$query" budget
	echo "$label: INCLUDE heap fetches $(incl_fetches "$settings" "$query")" | tee -a "$OUT/include.txt"
	echo "$label: CPU ratio with free lookups $(incl_bound "$label: no INCLUDE, CPU" "$label: INCLUDE (index-only), CPU")" |
		tee -a "$OUT/include.txt"
	if [ "${EYTZ_GPU:-0}" = 1 ]; then
		time_query "$label: INCLUDE (index-only), GPU" "$gpu" "$query" budget
		echo "$label: INCLUDE heap fetches, GPU $(incl_fetches "$gpu" "$query")" | tee -a "$OUT/include.txt"
	fi
}
: >"$OUT/include.txt"
incl_case "include" inner_t inner_ez_cpu "$Q"
incl_case "random include" inner_r inner_r_ez "$QR"

echo
cat "$OUT/table.md"
echo
cat "$OUT/budget.md"
echo
cat "$OUT/include.txt"
