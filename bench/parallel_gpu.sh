#!/usr/bin/env bash
# bench/parallel_gpu.sh: the parallel batched join with and without the
# eytzgpu service on the GPU machine (issue 11), in one device call of at
# most 300 s (see bench/gpu_run.sh for the carried bundle and library):
#
#   bench/parallel_gpu.sh [INNER_ROWS [OUTER_ROWS [WORKERS]]]   (default 20000000 2000000 6)
#
# The "random" data set of bench/join_bench.sh (inner keys hashint4(1..N),
# outer keys drawn from them with repeats, ~5% misses) and its query.  With
# shared_preload_libraries = 'eytzgpu' (the service owns the GPU: workers
# open no context and upload nothing), then after a restart without it
# (each process its own view: the leader its GPU copy, the workers the
# leader's CPU image), each best and first of REPEAT runs in one session:
# the serial batched join, the parallel one with WORKERS workers, parallel
# hash join and the planner's choice with parallel query allowed; a last
# EXPLAIN ANALYZE of the parallel join shows each process's share.  Then,
# with the service warm, the first join of fresh backends (20k outer rows)
# against their second, with the minor page faults getrusage counts
# (log_executor_stats) and planning time, and the same for PostgreSQL's
# btree nested loop in the same backends (FRESH=0 skips these).  Then the
# index-only join over a covering index, without and with the service
# (INCLUDE=0 skips it).
# Last, where the kernel lets us reserve huge pages, the service's rows
# and the fresh backends again with huge_pages = on.  Results:
# $OUT/parallel.md, $OUT/parallel_summary.txt, the logs in $OUT/logs.tgz.
set -uo pipefail
N=${1:-20000000}
M=${2:-2000000}
WORKERS=${3:-6}
REPEAT=${REPEAT:-3}
source "$(dirname "$0")/gpu_common.sh"
L=$OUT/logs
mkdir -p "$L"

BASE="-c shared_buffers=24GB -c work_mem=1GB -c max_wal_size=20GB -c maintenance_work_mem=8GB -c max_worker_processes=32 -c max_parallel_workers=16"
SVC="-c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=gpu -c eytzgpu.service_slot_buffer=8MB"
T="$OUT/parallel.md"

# row LABEL SETTINGS: the query REPEAT times in one session, then EXPLAIN
row() {
	local label=$1 settings=$2 f="$L/par_${1//[^A-Za-z0-9]/_}.log"
	{
		echo "$settings"
		echo "\\timing on"
		for _ in $(seq "$REPEAT"); do echo "$Q;"; done
		echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $Q;"
	} | $PSQL >"$f" 2>&1
	local times best first plan device result fetches
	times=$(grep -o 'Time: [0-9.]*' "$f" | awk '{print $2}' | sed -n "1,${REPEAT}p")
	first=$(sed -n 1p <<<"$times")
	best=$(sort -n <<<"$times" | sed -n 1p)
	result=$(grep -E '^ *[0-9]+ *\| *[0-9]+' "$f" | sort | uniq -c | awk '{print $2 "/" $4 " x" $1}' | paste -sd' ')
	plan=$(grep -oE 'Parallel Custom Scan \(EytzGPU Join\)|Custom Scan \(EytzGPU Join\)|Parallel Hash Join|Hash Join|Nested Loop' "$f" | head -1)
	device=$(grep -oE 'Device: [a-z ()]+' "$f" | sort | uniq -c | awk '{$1=$1; print}' | paste -sd',' || true)
	fetches=$(grep -oE 'Heap Fetches: [0-9]+' "$f" | awk '{n += $3} END {print n + 0}')
	printf '| %-44s | %-40s | %7.0f | %7.0f | %s | %s |\n' "$label" "$plan${device:+ [$device]}" "$best" "$first" "$result" "$fetches" | tee -a "$T"
}

pg_start "$BASE $SVC" >"$OUT/server.txt" 2>&1 || { cat "$OUT/server.txt"; exit 1; }
t0=$(date +%s)
$PSQL <<EOF >"$OUT/load.txt" 2>&1
CREATE EXTENSION eytzgpu;
\set N $N
\set M $M
\i $(dirname "$0")/random_data.sql
CREATE UNLOGGED TABLE outer_20k AS SELECT * FROM outer_r ORDER BY random() LIMIT 20000;
VACUUM ANALYZE inner_r;
VACUUM ANALYZE outer_r;
VACUUM ANALYZE outer_20k;
SET maintenance_work_mem = '8GB';
CREATE INDEX inner_r_ez ON inner_r USING eytzgpu (k);
CREATE INDEX inner_r_bt ON inner_r (k);
EOF
echo "load: $(($(date +%s) - t0)) s; $(sql 'SELECT state, device, detail FROM eytzgpu_service_status()')" | tee "$OUT/parallel_summary.txt"

Q="SELECT count(*), sum(i.v) FROM outer_r o JOIN inner_r i ON i.k = o.k"
ON="SET eytzgpu.enable_join = on; SET work_mem = '1GB';"
FORCE="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
SERIAL="SET max_parallel_workers_per_gather = 0;"
PAR="SET max_parallel_workers_per_gather = $WORKERS;"
PHASH="SET eytzgpu.enable_join = off; SET work_mem = '1GB'; $PAR SET enable_nestloop = off; SET enable_mergejoin = off;"
runs() {
	local tag=$1
	echo "| $tag: $N x $M random, $WORKERS workers | plan [devices] | best ms | first ms | count/sum x runs | heap fetches |" | tee -a "$T"
	echo "|---|---|---:|---:|---|---:|" | tee -a "$T"
	row "$tag: serial batched join" "$ON $SERIAL $FORCE"
	row "$tag: parallel batched join" "$ON $PAR $FORCE"
	row "$tag: parallel hash join" "$PHASH"
	row "$tag: planner's choice, parallel allowed" "$ON $PAR"
	{ echo "$ON $PAR"; echo "EXPLAIN $Q;"; echo "$ON $PAR $FORCE"; echo "EXPLAIN (ANALYZE, COSTS OFF) $Q;"; echo "$PHASH"; echo "EXPLAIN $Q;"; } |
		$PSQL >"$L/${tag//[^A-Za-z0-9]/_}_parallel_explain.log" 2>&1
	echo "$tag: per process (leader, then workers) lookup ms, of which acquire ms, heap fetch ms:" \
		"$(grep -oE '(Lookup Acquire|Lookup|Heap Fetch) Time: [0-9.]+' "$L/${tag//[^A-Za-z0-9]/_}_parallel_explain.log" | awk '{printf "%s%s", $NF, (NR % 3 ? "/" : " ")}')" |
		tee -a "$OUT/parallel_summary.txt"
}
runs service
echo "service: $(sql 'SELECT resident_copies, resident_bytes, loads, hits, failures FROM eytzgpu_service_status()')" | tee -a "$OUT/parallel_summary.txt"

# a fresh backend's first 20k join against its second (service warm), and
# the btree nested loop's: time, planning, minor page faults
fresh() {
	local label=$1 settings=$2 i
	for i in 1 2 3 4; do
		{
			echo "$settings"
			echo "SET client_min_messages = log; SET log_executor_stats = on;"
			echo "\\timing on"
			for _ in 1 2 3; do echo "EXPLAIN (ANALYZE, SUMMARY) SELECT count(*) FROM outer_20k o JOIN inner_r i ON i.k = o.k;"; done
		} | $PSQL 2>&1 | grep -oE '(Planning|Execution) Time: [0-9.]+|Lookup Time: [0-9.]+|Heap Fetch Time: [0-9.]+|[0-9]+/[0-9]+ \[[0-9]+/[0-9]+\] page faults|^Time: [0-9.]+' |
			sed -E 's/ Time//; s/ \[[0-9/]+\] page faults/ faults/' | paste -sd' '
	done >"$L/fresh_${label//[^A-Za-z0-9]/_}.txt"
	echo "$label, 4 fresh backends, 3 joins each (stats per join: faults major/minor, planning, lookup, heap fetch, execution, psql):" | tee -a "$OUT/parallel_summary.txt"
	cat "$L/fresh_${label//[^A-Za-z0-9]/_}.txt" | tee -a "$OUT/parallel_summary.txt"
}
BTREE_NL="SET eytzgpu.enable_join = off; $SERIAL SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_bitmapscan = off;"
if [ "${FRESH:-1}" = 1 ]; then
	fresh "service eytzgpu join" "$ON $SERIAL $FORCE"
	fresh "service btree nested loop" "$BTREE_NL"
fi

restart "$BASE"
echo "without the service: $(sql 'SELECT state FROM eytzgpu_service_status()')" | tee -a "$OUT/parallel_summary.txt"
runs backend

# the index-only join over a covering index (v included) after VACUUM,
# without the service, then with it (its answers carry the values);
# INCLUDE=0 skips it
if [ "${INCLUDE:-1}" = 1 ]; then
	sql "SET maintenance_work_mem = '8GB'; CREATE INDEX inner_r_ezi ON inner_r USING eytzgpu (k) INCLUDE (v)"
	sql "DROP INDEX inner_r_ez"
	sql "VACUUM inner_r"
	row "backend: INCLUDE, serial index-only join" "$ON $SERIAL $FORCE"
	row "backend: INCLUDE, parallel index-only join" "$ON $PAR $FORCE"
	restart "$BASE $SVC"
	row "service: INCLUDE, serial index-only join" "$ON $SERIAL $FORCE"
	row "service: INCLUDE, parallel index-only join" "$ON $PAR $FORCE"
	sql "CREATE INDEX inner_r_ez ON inner_r USING eytzgpu (k)" >/dev/null
	sql "DROP INDEX inner_r_ezi"
fi

# again with shared memory on 2 MB pages (huge_pages = on, where the
# kernel lets us reserve them): a fresh process, every parallel worker
# too, then maps shared buffers 2 MB per page fault instead of 4 kB
if echo 13000 >/proc/sys/vm/nr_hugepages 2>/dev/null && [ "$(cat /proc/sys/vm/nr_hugepages)" -ge 12400 ]; then
	restart "$BASE $SVC -c huge_pages=on"
	runs "service, huge pages"
	if [ "${FRESH:-1}" = 1 ]; then
		fresh "huge pages, service eytzgpu join" "$ON $SERIAL $FORCE"
		fresh "huge pages, service btree nested loop" "$BTREE_NL"
	fi
else
	echo "no huge pages: $(cat /proc/sys/vm/nr_hugepages 2>&1)" | tee -a "$OUT/parallel_summary.txt"
fi
cp /tmp/pg.log "$L/pg.log"
pg_stop >/dev/null 2>&1
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"
echo
cat "$T"
echo
cat "$OUT/parallel_summary.txt"
