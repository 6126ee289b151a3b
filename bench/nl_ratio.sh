#!/usr/bin/env bash
# bench/nl_ratio.sh: the batched join against the serial btree nested loop on
# the random data set (bench/random_data.sql), alternating the two plans in
# one backend round by round, so that a noisy machine slows both alike; the
# ratio of the medians is what issue 9's "20x the serial btree nested loop"
# is read from.  Runs against the server of $PGHOST/$PGPORT (on the GPU
# machine: after bench/gpu_run.sh with SKIP_REGRESS=1 SKIP_BENCH=1).
#   bench/nl_ratio.sh [INNER_ROWS [OUTER_ROWS [ROUNDS [DEVICE]]]]
#   (default 20000000 2000000 5 gpu)
set -euo pipefail
N=${1:-20000000}
M=${2:-2000000}
ROUNDS=${3:-5}
DEVICE=${4:-gpu}
OUT=${BENCH_OUT:-/tmp/nl_ratio}
mkdir -p "$OUT"
PSQL="psql -X -q -v ON_ERROR_STOP=1"
here=$(cd "$(dirname "$0")" && pwd)

$PSQL -c "CREATE EXTENSION IF NOT EXISTS eytzgpu" -c "DROP TABLE IF EXISTS inner_r, outer_r"
$PSQL -v N="$N" -v M="$M" -f "$here/random_data.sql" >/dev/null
$PSQL -c "SET maintenance_work_mem = '8GB'" -c "CREATE INDEX ON inner_r (k)" \
	-c "CREATE INDEX ON inner_r USING eytzgpu (k)" -c "VACUUM ANALYZE inner_r" -c "VACUUM ANALYZE outer_r"

Q="SELECT count(*), sum(i.v) FROM outer_r o JOIN inner_r i ON i.k = o.k"
JOIN="SET eytzgpu.enable_join = on; SET eytzgpu.device = $DEVICE; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
BTREE_NL="SET eytzgpu.enable_join = off; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = on; SET enable_memoize = off; SET enable_bitmapscan = off;"
{
	echo "SET work_mem = '1GB'; SET max_parallel_workers_per_gather = 0;"
	echo "$JOIN"
	echo "EXPLAIN (COSTS OFF) $Q;"
	echo "$BTREE_NL"
	echo "EXPLAIN (COSTS OFF) $Q;"
	# only the queries timed; the join's first run pays the GPU upload (or
	# the image load): not a round
	timed() { echo "$1"; echo "\\timing on"; echo "$Q;"; echo "\\timing off"; }
	timed "$JOIN"
	for _ in $(seq "$ROUNDS"); do
		timed "$JOIN"
		timed "$BTREE_NL"
	done
} >"$OUT/nl_ratio.sql"
$PSQL -f "$OUT/nl_ratio.sql" >"$OUT/nl_ratio.log" 2>&1
grep -q "EytzGPU Join" "$OUT/nl_ratio.log" || { echo "the batched join was not planned"; exit 1; }
grep -q "Index Scan using inner_r_k_idx" "$OUT/nl_ratio.log" || { echo "the btree nested loop was not planned"; exit 1; }
# every run, of either plan, must give the same (count, sum)
[ "$(grep -E '^ +[0-9]+ \| ' "$OUT/nl_ratio.log" | sort -u | wc -l)" = 1 ] ||
	{ echo "the plans' answers differ:"; grep -E '^ +[0-9]+ \| ' "$OUT/nl_ratio.log" | sort | uniq -c; exit 1; }
# Time lines: the warm-up, then (join, nested loop) per round
grep -o 'Time: [0-9.]*' "$OUT/nl_ratio.log" | awk '{print $2}' | awk '
	NR == 1 { next }
	(NR - 2) % 2 == 0 { j[++nj] = $1; next }
	{ n[++nn] = $1; printf "round %d: join %.0f ms, btree nested loop %.0f ms, %.1fx\n", nn, j[nn], $1, $1 / j[nn] }
	function median(a, k,   i, s, t) {
		for (i = 1; i <= k; i++) s[i] = a[i]
		for (i = 1; i <= k; i++) for (t = i + 1; t <= k; t++) if (s[t] < s[i]) { x = s[i]; s[i] = s[t]; s[t] = x }
		return k % 2 ? s[(k + 1) / 2] : (s[k / 2] + s[k / 2 + 1]) / 2
	}
	END { mj = median(j, nj); mn = median(n, nn); printf "medians over %d rounds: join %.0f ms, btree nested loop %.0f ms, %.1fx\n", nn, mj, mn, mn / mj }
' | tee "$OUT/nl_ratio.txt"
