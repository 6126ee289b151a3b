#!/usr/bin/env bash
# bench/heap_order.sh: the EytzGPU Join's heap-order mode
# (eytzgpu.join_heap_order) against the pipelined mode, the serial btree
# nested loop and PostgreSQL's own plan, at PostgreSQL's default settings
# (work_mem, shared_buffers, parallel query) otherwise, on the CPU.  The
# plans run in turn in one backend, ROUNDS rounds (the image loaded and the
# tables read once before), so that a noisy machine slows all alike; then
# one EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) of each EytzGPU mode (batches,
# heap blocks, buffer reads, the sort).  Runs against the server of
# $PGHOST/$PGPORT.
#   bench/heap_order.sh INNER OUTER [ROUNDS [PLANS]]
#   INNER, OUTER: the tables, joined on k (SELECT count(*), sum(i.v::int8));
#   made first with MAKE_DATA="N M" (bench/random_data.sql: inner_r and
#   outer_r, with a btree and an eytzgpu index on inner_r.k).
#   PLANS: which of "sorted pipelined nestloop postgres" (default all four).
# Results: $BENCH_OUT/heap_order.txt (default /tmp/heap_order).
set -euo pipefail
INNER=${1:?inner table}
OUTER=${2:?outer table}
ROUNDS=${3:-3}
PLANS=${4:-sorted pipelined nestloop postgres}
OUT=${BENCH_OUT:-/tmp/heap_order}
mkdir -p "$OUT"
PSQL="psql -X -q -v ON_ERROR_STOP=1"
here=$(cd "$(dirname "$0")" && pwd)

if [ -n "${MAKE_DATA:-}" ]; then
	read -r N M <<<"$MAKE_DATA"
	$PSQL -c "CREATE EXTENSION IF NOT EXISTS eytzgpu" -c "DROP TABLE IF EXISTS inner_r, outer_r"
	$PSQL -v N="$N" -v M="$M" -f "$here/random_data.sql" >/dev/null
	$PSQL -c "SET maintenance_work_mem = '1GB'" -c "CREATE INDEX ON inner_r (k)" \
		-c "CREATE INDEX ON inner_r USING eytzgpu (k)" -c "VACUUM ANALYZE inner_r" -c "VACUUM ANALYZE outer_r"
fi

Q="SELECT count(*), sum(i.v::int8) FROM $OUTER o JOIN $INNER i ON i.k = o.k"
EYTZ="RESET ALL; SET eytzgpu.device = cpu; SET max_parallel_workers_per_gather = 0; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
declare -A SET=(
	[sorted]="$EYTZ SET eytzgpu.join_heap_order = on;"
	[pipelined]="$EYTZ SET eytzgpu.join_heap_order = off;"
	[nestloop]="RESET ALL; SET max_parallel_workers_per_gather = 0; SET eytzgpu.enable_join = off; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_memoize = off; SET enable_bitmapscan = off;"
	[postgres]="RESET ALL; SET eytzgpu.enable_join = off;"
)
{
	for p in $PLANS; do
		echo "${SET[$p]}"
		echo "\\echo plan $p"
		echo "EXPLAIN (COSTS OFF) $Q;"
	done
	# warm-up: the index image, the tables read once
	echo "${SET[sorted]}"
	echo "$Q;"
	for _ in $(seq "$ROUNDS"); do
		for p in $PLANS; do
			echo "${SET[$p]}"
			echo "\\echo timed $p"
			echo "\\timing on"
			echo "$Q;"
			echo "\\timing off"
		done
	done
	for p in sorted pipelined; do
		case " $PLANS " in *" $p "*) ;; *) continue ;; esac
		echo "${SET[$p]}"
		echo "\\echo analyze $p"
		echo "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, COSTS OFF) $Q;"
	done
} >"$OUT/heap_order.sql"
$PSQL -f "$OUT/heap_order.sql" >"$OUT/heap_order.log" 2>&1
# every timed run must give the same (count, sum)
[ "$(grep -E '^ +[0-9]+ \| ' "$OUT/heap_order.log" | sort -u | wc -l)" = 1 ] ||
	{ echo "the plans' answers differ:"; grep -E '^ +[0-9]+ \| ' "$OUT/heap_order.log" | sort | uniq -c; exit 1; }
awk '
	/^timed / { p = $2; next }
	/^Time: / && p != "" { t[p] = t[p] " " $2; n[p]++; p = ""; next }
	function median(s,   a, k, i, j, x) {
		k = split(s, a, " ")
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		for (p in t) m[p] = median(t[p])
		for (p in t) printf "%-10s median %8.0f ms over %d runs:%s\n", p, m[p], n[p], t[p]
		if ("sorted" in m) for (p in m) if (p != "sorted") printf "%s / sorted: %.1fx\n", p, m[p] / m["sorted"]
	}
' "$OUT/heap_order.log" | tee "$OUT/heap_order.txt"
grep -E '^plan |EytzGPU Join|Hash Join|Nested Loop|Index Scan|Gather' "$OUT/heap_order.log" | sort -u >>"$OUT/heap_order.txt"
grep -E '^analyze |Batches|Matches|Heap Fetches|Heap Blocks|Heap Order|Buffers|Execution Time' "$OUT/heap_order.log" |
	tee -a "$OUT/heap_order.txt"
