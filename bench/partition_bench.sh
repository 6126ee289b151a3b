#!/usr/bin/env bash
# bench/partition_bench.sh: the EytzGPU Join against a partitioned inner
# table (issue 25), beside the same join against one unpartitioned table
# holding the same rows, and beside PostgreSQL's own plan against the
# partitioned table at its default settings.
#
#   bench/partition_bench.sh [INNER_ROWS [OUTER_ROWS [REPEAT [PARTS]]]]
#                                         (default 20000000 2000000 3 8)
#
# Needs a running server reachable through PGHOST/PGPORT/PGUSER with eytzgpu
# installed.  Two data sets, each as one table, hash-partitioned PARTS ways
# and range-partitioned PARTS ways on the key (equal key ranges), every one
# with an eytzgpu index on k (INDEX_COLS, default "(k)"; "(k) INCLUDE (v)"
# makes it covering, so that the join answers from the index where the
# visibility map allows):
#   friendly: keys k = g * 48271 mod (2^31 - 1), unique, scattered over int4
#     (heap order is not key order); the outer table OUTER_ROWS distinct
#     keys drawn from them;
#   random: keys hashint4(1..N), random and uncorrelated with heap order; the
#     outer table OUTER_ROWS keys drawn at random with repeats, ~5% misses.
# Query: SELECT count(*), sum(i.v::int8) FROM outer o JOIN inner i ON i.k = o.k.
# The plans run in turn (round robin), REPEAT rounds, each in a backend of
# its own that ran the query once before (warm): the table shows the best
# and the median of the rounds.  The ratios are against the EytzGPU Join
# over the partitioned table of the same data set and partitioning.
# SKIP_DATA=1 reuses the tables of a previous run, and their indexes as they are.
# Results: $BENCH_OUT/table.md (default /tmp/partition_bench).
set -euo pipefail
N=${1:-20000000}
M=${2:-2000000}
REPEAT=${3:-3}
PARTS=${4:-8}
INDEX_COLS=${INDEX_COLS:-(k)}
PSQL="psql -X -q -v ON_ERROR_STOP=1"
OUT=${BENCH_OUT:-/tmp/partition_bench}
mkdir -p "$OUT"
: >"$OUT/table.md"
sql() { $PSQL -At -c "$1"; }

make_data() {
	local set=$1 keyexpr=$2 outer=$3
	sql "DROP TABLE IF EXISTS ${set}_plain, ${set}_hash, ${set}_range, ${set}_outer CASCADE"
	sql "CREATE UNLOGGED TABLE ${set}_plain (k int4, v int4)"
	sql "INSERT INTO ${set}_plain SELECT $keyexpr, g FROM generate_series(1, $N) g"
	sql "CREATE UNLOGGED TABLE ${set}_hash (k int4, v int4) PARTITION BY HASH (k)"
	sql "CREATE UNLOGGED TABLE ${set}_range (k int4, v int4) PARTITION BY RANGE (k)"
	for p in $(seq 0 $((PARTS - 1))); do
		sql "CREATE UNLOGGED TABLE ${set}_hash_$p PARTITION OF ${set}_hash FOR VALUES WITH (MODULUS $PARTS, REMAINDER $p)"
		local lo hi
		lo=$([ "$p" -eq 0 ] && echo MINVALUE || echo $((-2147483648 + p * (4294967296 / PARTS))))
		hi=$([ "$p" -eq $((PARTS - 1)) ] && echo MAXVALUE || echo $((-2147483648 + (p + 1) * (4294967296 / PARTS))))
		sql "CREATE UNLOGGED TABLE ${set}_range_$p PARTITION OF ${set}_range FOR VALUES FROM ($lo) TO ($hi)"
	done
	sql "INSERT INTO ${set}_hash SELECT * FROM ${set}_plain"
	sql "INSERT INTO ${set}_range SELECT * FROM ${set}_plain"
	sql "CREATE UNLOGGED TABLE ${set}_outer (k int4)"
	sql "SELECT setseed(0.42); INSERT INTO ${set}_outer $outer"
	for t in plain hash range; do
		sql "CREATE INDEX ON ${set}_$t USING eytzgpu $INDEX_COLS"
	done
	sql "VACUUM ANALYZE ${set}_plain, ${set}_hash, ${set}_range, ${set}_outer"
}

echo "== data: $N inner rows, $M outer rows, $PARTS partitions"
sql "CREATE EXTENSION IF NOT EXISTS eytzgpu"
[ "${SKIP_DATA:-0}" = 1 ] || make_data friendly "((g::int8 * 48271) % 2147483647)::int4" \
	"SELECT ((g::int8 * 48271) % 2147483647)::int4 FROM generate_series(1, $N) g ORDER BY random() LIMIT $M"
[ "${SKIP_DATA:-0}" = 1 ] || make_data random "hashint4(g)" \
	"SELECT hashint4(CASE WHEN random() < 0.05 THEN $N + 1 + g ELSE 1 + floor(random() * $N)::int4 END) FROM generate_series(1, $M) g"

# run NAME SETTINGS QUERY: one backend, the query once (warm-up) then once
# timed; prints the time in ms, the plan's join node and the result
run() {
	local name=$1 settings=$2 query=$3 f="$OUT/$1.log"
	{
		echo "$settings"
		echo "$query;"
		echo "\\timing on"
		echo "$query;"
		echo "\\timing off"
		echo "EXPLAIN (COSTS OFF) $query;"
	} | $PSQL >>"$f" 2>&1
	grep -o 'Time: [0-9.]*' "$f" | tail -1 | awk '{print $2}'
}

declare -A times plans results
configs=()
for set in friendly random; do
	for t in plain hash range; do
		configs+=("$set|$t|eytzgpu|")
	done
	for t in hash range; do
		configs+=("$set|$t|postgres|SET eytzgpu.enable_join = off;")
	done
done
for round in $(seq "$REPEAT"); do
	for c in "${configs[@]}"; do
		IFS='|' read -r set t plan settings <<<"$c"
		ms=$(run "${set}_${t}_${plan}" "$settings" \
			"SELECT count(*), sum(i.v::int8) FROM ${set}_outer o JOIN ${set}_$t i ON i.k = o.k")
		times[$c]="${times[$c]:-} $ms"
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
best() { tr ' ' '\n' | grep . | sort -n | head -1; }
{
	echo "| data | inner table | plan | best ms | median ms | result |"
	echo "|---|---|---|---:|---:|---|"
	for c in "${configs[@]}"; do
		IFS='|' read -r set t plan settings <<<"$c"
		f="$OUT/${set}_${t}_${plan}.log"
		node=$(grep -oE 'Custom Scan \(EytzGPU Join\)|Parallel Hash Join|Hash Join|Nested Loop|Merge Join' "$f" | tail -1)
		res=$(grep -E '^[0-9]+\|[0-9]+' "$f" | tail -1 || true)
		[ -z "$res" ] && res=$(grep -E '^ *[0-9]+ *\| *[0-9]+' "$f" | tail -1 | tr -d ' ')
		printf '| %s | %s | %s (%s) | %s | %s | %s |\n' "$set" "$t" "$plan" "$node" \
			"$(best <<<"${times[$c]}")" "$(median <<<"${times[$c]}")" "$res"
	done
	echo
	echo "| data | partitioning | partitioned / unpartitioned (eytzgpu, median) | PostgreSQL's plan / eytzgpu (median) |"
	echo "|---|---|---:|---:|"
	for set in friendly random; do
		for t in hash range; do
			e=$(median <<<"${times[$set|$t|eytzgpu|]}")
			u=$(median <<<"${times[$set|plain|eytzgpu|]}")
			p=$(median <<<"${times[$set|$t|postgres|SET eytzgpu.enable_join = off;]}")
			awk -v s="$set" -v t="$t" -v e="$e" -v u="$u" -v p="$p" \
				'BEGIN { printf "| %s | %s | %.2fx the speed | %.1fx |\n", s, t, u / e, p / e }'
		done
	done
} | tee "$OUT/table.md"
