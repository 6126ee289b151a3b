#!/usr/bin/env bash
# bench/service_gpu.sh: the eytzgpu service on the GPU machine (issue 11),
# one device call (see bench/gpu_run.sh for the carried bundle and library):
#
#   bench/service_gpu.sh [INNER_ROWS [OUTER_ROWS]]     (default 20000000 2000000)
#
# Starts a server with shared_preload_libraries = 'eytzgpu' and
# eytzgpu.service_device = gpu, loads random data (inner keys random and
# uncorrelated with heap order, outer keys drawn from them with repeats and
# ~5% misses), then measures, with GPU memory the peak nvidia-smi reports
# while the sessions run:
#   - 8 and 32 sessions running the INNER x OUTER join at once, each
#     checking its answer against PostgreSQL's hash join (a checksum), with
#     the service, then again without it (each backend its own context);
#   - the first join (20k outer rows) of a fresh backend against the same
#     join again in that backend, with the service warm and without it;
#   - pg_terminate_backend of the service twice while 8 sessions join: no
#     failed query, no wrong answer, a new service within seconds;
# and then runs t/040_service.pl with EYTZ_SERVICE_DEVICE=gpu where prove
# is found (IPC::Run may be carried in bench/perl5).  Results: $OUT.
set -uo pipefail
N=${1:-20000000}
M=${2:-2000000}
source "$(dirname "$0")/gpu_common.sh"

BASE="-c shared_buffers=16GB -c work_mem=1GB -c max_connections=80 -c max_wal_size=20GB -c maintenance_work_mem=8GB -c max_parallel_workers_per_gather=0"
SVC="-c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=gpu -c eytzgpu.service_slots=48 -c eytzgpu.service_slot_buffer=8MB -c eytzgpu.gpu_memory_limit=8GB"
export PGOPTIONS="-c enable_hashjoin=off -c enable_mergejoin=off -c enable_nestloop=off"
gpu_mem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }
# peak GPU memory (MiB) while the command runs
peak_mem() {
	local f=$OUT/mem.$$
	nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$f" 2>/dev/null &
	local smi=$!
	"$@"
	local rc=$?
	kill $smi; wait $smi 2>/dev/null
	PEAK=$(sort -n "$f" | tail -1)
	rm -f "$f"
	return $rc
}

pg_start "$BASE $SVC" >"$OUT/server.txt" 2>&1 || exit 1
t0=$(date +%s)
$PSQL <<EOF >"$OUT/load.txt" 2>&1
CREATE EXTENSION eytzgpu;
SELECT setseed(0.5);
CREATE TABLE inner_t (id int8, k int4);
INSERT INTO inner_t SELECT g, (random() * 2147483646)::int4 FROM generate_series(1, $N) g;
CREATE TABLE outer_t AS
	SELECT row_number() OVER () AS id, k FROM (
		SELECT k FROM inner_t TABLESAMPLE BERNOULLI ($M * 95.0 / $N) REPEATABLE (7)
		UNION ALL
		SELECT (random() * 2147483646)::int4 FROM generate_series(1, $M / 20)) s;
CREATE TABLE outer_20k AS SELECT * FROM outer_t ORDER BY random() LIMIT 20000;
CREATE INDEX inner_k ON inner_t USING eytzgpu (k);
ANALYZE inner_t, outer_t, outer_20k;
SET eytzgpu.enable_join = off;
SET enable_hashjoin = on;
CREATE TABLE expected AS SELECT count(*) AS n, sum((o.id * 1000003) # i.id) AS h
	FROM outer_t o JOIN inner_t i ON i.k = o.k;
EOF
echo "load: $(($(date +%s) - t0)) s, $(sql 'SELECT count(*) FROM outer_t') outer rows, $(sql 'SELECT n FROM expected') matches" | tee "$OUT/summary.txt"

# a session's transaction: the join, its checksum against the hash join's
cat >"$OUT/check.sql" <<'EOF'
SELECT (count(*) <> (SELECT n FROM expected) OR sum((o.id * 1000003) # i.id) <> (SELECT h FROM expected))::int AS bad
	FROM outer_t o JOIN inner_t i ON i.k = o.k \gset
\if :bad > 0
SELECT 1 / 0 AS wrong_answer;
\endif
EOF
bench() {
	pgbench -n -c "$1" -j "$1" -t "$2" -f "$OUT/check.sql" >"$OUT/pgbench_$3.txt" 2>&1
}
sessions() {
	local label=$1 c
	for c in 8 32; do
		peak_mem bench $c 2 "${label}_$c"
		local rc=$? tps
		tps=$(grep -oE 'tps = [0-9.]+' "$OUT/pgbench_${label}_$c.txt" | head -1)
		echo "$label, $c sessions x 2 joins: rc $rc, peak GPU memory $PEAK MiB, $tps, $(grep -c 'aborted\|wrong_answer' "$OUT/pgbench_${label}_$c.txt") failures" | tee -a "$OUT/summary.txt"
	done
}
# the first 20k join of fresh backends, then the same again in each
fresh() {
	local label=$1 i
	for i in 1 2 3 4 5; do
		printf '\\timing on\nSELECT count(*) FROM outer_20k o JOIN inner_t i ON i.k = o.k;\nSELECT count(*) FROM outer_20k o JOIN inner_t i ON i.k = o.k;\nSELECT count(*) FROM outer_20k o JOIN inner_t i ON i.k = o.k;\n' |
			$PSQL | grep -o 'Time: [0-9.]*' | awk '{print $2}' | paste -sd' '
	done >"$OUT/fresh_$label.txt"
	echo "$label, 20k join in 5 fresh backends (first, second, third ms): $(paste -sd'|' "$OUT/fresh_$label.txt")" | tee -a "$OUT/summary.txt"
	# where a fresh backend's first join spends its time, and the same
	# join as an index nested loop (no eytzgpu join): PostgreSQL's own
	# first-query costs in a fresh backend
	for i in 1 2 3; do
		printf 'EXPLAIN (ANALYZE, SUMMARY) SELECT count(*) FROM outer_20k o JOIN inner_t i ON i.k = o.k;\nEXPLAIN (ANALYZE, SUMMARY) SELECT count(*) FROM outer_20k o JOIN inner_t i ON i.k = o.k;\n' |
			$PSQL | grep -oE '(Planning|Execution|Lookup|Heap Fetch) Time: [0-9.]+' | sed 's/ Time//' | paste -sd' '
	done >"$OUT/fresh_${label}_explain.txt"
	echo "$label, fresh backend's first then second EXPLAIN ANALYZE:" | tee -a "$OUT/summary.txt"
	cat "$OUT/fresh_${label}_explain.txt" | tee -a "$OUT/summary.txt"
	for i in 1 2 3; do
		printf 'SET eytzgpu.enable_join = off;\nSET enable_nestloop = on;\n\\timing on\nSELECT count(*) FROM outer_20k o JOIN inner_t i ON i.k = o.k;\nSELECT count(*) FROM outer_20k o JOIN inner_t i ON i.k = o.k;\n' |
			$PSQL | grep -o 'Time: [0-9.]*' | awk '{print $2}' | paste -sd' '
	done >"$OUT/fresh_${label}_nestloop.txt"
	echo "$label, index nested loop in 3 fresh backends (first, second ms): $(paste -sd'|' "$OUT/fresh_${label}_nestloop.txt")" | tee -a "$OUT/summary.txt"
}

echo "GPU memory idle with the service: $(gpu_mem) MiB" | tee -a "$OUT/summary.txt"
sql "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM outer_t o JOIN inner_t i ON i.k = o.k" >"$OUT/explain_service.txt" 2>&1
grep -E 'Device|CPU Reason|Lookup|GPU|Execution' "$OUT/explain_service.txt" | tee -a "$OUT/summary.txt"
echo "GPU memory with the copy resident: $(gpu_mem) MiB" | tee -a "$OUT/summary.txt"
sql "SELECT * FROM eytzgpu_service_status()" | tee -a "$OUT/summary.txt"
sql "SELECT index_name, generation, entries, bytes FROM eytzgpu_service_resident()" | tee -a "$OUT/summary.txt"
fresh service
[ "${SKIP_SESSIONS:-0}" = 1 ] || sessions service

# pg_terminate_backend of the service twice while 8 sessions join
pid=$(sql "SELECT pid FROM eytzgpu_service_status()")
pgbench -n -c 8 -j 8 -t 3 -f "$OUT/check.sql" >"$OUT/pgbench_terminate.txt" 2>&1 &
bpid=$!
sleep 2
sql "SELECT pg_terminate_backend($pid)" >/dev/null
t1=$(date +%s%N)
until [ "$(sql "SELECT state = 'running' AND pid <> $pid FROM eytzgpu_service_status()")" = t ]; do sleep 0.1; done
back=$(( ($(date +%s%N) - t1) / 1000000 ))
sleep 2
pid2=$(sql "SELECT pid FROM eytzgpu_service_status()")
sql "SELECT pg_terminate_backend($pid2)" >/dev/null
wait $bpid
echo "terminated twice under 8 sessions: pgbench rc $?, $(grep -c 'aborted\|wrong_answer' "$OUT/pgbench_terminate.txt") failures, $(grep -oE 'processed: [0-9/]+' "$OUT/pgbench_terminate.txt"), back after $back ms, $(grep -c 'continues on the CPU' "$OUT/pgbench_terminate.txt") batches finished on the CPU" | tee -a "$OUT/summary.txt"
sleep 2
sql "SELECT state, device, pid <> $pid2 AS new_pid FROM eytzgpu_service_status()" | tee -a "$OUT/summary.txt"

# without the service: every backend its own context and copy
restart "$BASE"
echo "GPU memory idle without the service: $(gpu_mem) MiB" | tee -a "$OUT/summary.txt"
fresh backend
[ "${SKIP_SESSIONS:-0}" = 1 ] || sessions backend
cp /tmp/pg.log "$OUT/pg.log"
pg_stop >/dev/null 2>&1

# the TAP test on the GPU
if command -v prove >/dev/null; then
	# in a copy the server's user can reach and write
	rm -rf /tmp/tap && mkdir -p /tmp/tap && cp -r test/t bench /tmp/tap/ && chown -R postgres /tmp/tap
	pgxs=$($PG_CONFIG --pgxs | sed 's,/src/makefiles/pgxs.mk,,')
	export PERL5LIB=$pgxs/src/test/perl:/tmp/tap/bench/perl5
	su postgres -s /bin/bash -c "cd /tmp/tap && env PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH PERL5LIB=$PERL5LIB PG_REGRESS=$pgxs/src/test/regress/pg_regress EYTZ_SERVICE_DEVICE=gpu TZ=UTC PGOPTIONS= timeout ${TAP_TIMEOUT:-120} prove -v t/040_service.pl" >"$OUT/tap.txt" 2>&1
	echo "t/040_service.pl with the GPU: rc $?, $(grep -c '^ok' "$OUT/tap.txt") ok, $(grep -c '^not ok' "$OUT/tap.txt") not ok" | tee -a "$OUT/summary.txt"
	grep -E '^(not )?ok|Result|Dubious' "$OUT/tap.txt" | tail -60
	tail -5 "$OUT/tap.txt"
	tail -20 /tmp/tap/tmp_check/log/regress_log_040_service 2>/dev/null
else
	echo "no prove: TAP test skipped" | tee -a "$OUT/summary.txt"
fi
