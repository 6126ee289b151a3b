#!/usr/bin/env bash
# bench/service_multigpu.sh: the eytzgpu service on a host of two GPUs
# (issue 25, "The GPU service on several GPUs"; issue 27 item 5), one
# device call on a 2-GPU H100 host, carrying .gpu (../shared/gpu) and an
# eytzgpu.so built here with CUDA (see bench/gpu_run.sh):
#
#   source .gpu/pgenv.sh && bash bench/service_multigpu.sh [ROWS_PER_LEAF [OUTER_ROWS [SECONDS]]]
#                                                   (default 1000000 200000 30)
#
# About 6-8 minutes on the H100 host (within one device call); SKIP_LATENCY=1
# and SKIP_TAP=1 leave those parts out, ROUNDS (default 2) sets the rounds
# of the two configurations.
#
# Data: inner_p, hash-partitioned 8 ways on k (8 leaf eytzgpu indexes from
# CREATE INDEX on the parent), ROWS_PER_LEAF rows each (random int4 keys);
# outer_t, OUTER_ROWS keys drawn from the inner ones (repeats, ~5%
# misses).  Each session joins outer_t with one leaf at a time (a pgbench
# script per leaf), the join forced, checking its (count, checksum) against
# PostgreSQL's hash join: a wrong answer fails the transaction.
# Server: shared_preload_libraries = 'eytzgpu', service_device = gpu,
# 8MB slot windows, gpu_memory_limit = 8GB (per GPU).
# Measured, alternating the two configurations twice (same server data):
#   - 32 sessions for SECONDS: joins/s with one GPU visible
#     (CUDA_VISIBLE_DEVICES=0) and with both (0,1): target >= 1.7x;
#     peak GPU memory per device (nvidia-smi) while they run, each GPU's
#     busy share, the service process's CPU and the host's; where the
#     copies lie (eytzgpu_service_resident's gpu, eytzgpu_service_gpus);
#   - an index larger than gpu_memory_limit (big_t, the limit set below its
#     copy): its join's device and answer against PostgreSQL's (slices
#     over several GPUs are not built yet: it runs on the CPU, and EXPLAIN
#     says why);
#   - the request round trip: bench/service_latency.sh with DEVICE=gpu
#     (through the service vs each backend's own context, one GPU);
#   - t/040_service.pl and t/041_service_stall.pl
#     with EYTZ_SERVICE_DEVICE=gpu where prove is found (the single-GPU
#     service, restarts and stalls, on the GPU).
# SVC_DEVICE=cpu (with SVC_EXTRA="-c eytzgpu.service_cpu_devices=2") dry-runs
# the script without a GPU (a stub nvidia-smi on PATH).
# Results: $OUT/summary.txt, logs beside it.
set -uo pipefail
LEAF=${1:-1000000}
M=${2:-200000}
SECS=${3:-30}
source "$(dirname "$0")/gpu_common.sh"

BASE="-c shared_buffers=${SB:-24GB} -c work_mem=1GB -c max_connections=80 -c max_wal_size=20GB -c maintenance_work_mem=8GB -c max_parallel_workers_per_gather=0"
SVC="-c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=${SVC_DEVICE:-gpu} -c eytzgpu.service_slots=64 -c eytzgpu.service_slot_buffer=8MB -c eytzgpu.gpu_memory_limit=8GB ${SVC_EXTRA:-}"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "GPUs: $NGPU ($(nvidia-smi -L | paste -sd';'))" | tee "$OUT/summary.txt"

# restart with the GPUs $1 visible (CUDA_VISIBLE_DEVICES) and server options $2
restart_gpus() {
	su postgres -s /bin/bash -c "env PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH TZ=UTC CUDA_VISIBLE_DEVICES=$1 pg_ctl -D /tmp/pgdata -l /tmp/pg.log -o '-k /tmp/pgsock -c listen_addresses= $2' -w restart" >/dev/null
	# the service starts a moment after the server
	for i in $(seq 1 100); do
		[ "$(sql "SELECT state FROM eytzgpu_service_status()" 2>/dev/null)" = running ] && return 0
		sleep 0.1
	done
	echo "service not running after restart: $(sql 'SELECT * FROM eytzgpu_service_status()')" | tee -a "$OUT/summary.txt"
}
# peak GPU memory (MiB) per device while the command runs, into PEAK
peak_mem() {
	local f=$OUT/mem.$$
	nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 200 >"$f" 2>/dev/null &
	local smi=$!
	"$@"
	local rc=$?
	kill $smi
	wait $smi 2>/dev/null
	PEAK=$(awk -F', *' '{ if ($2 > m[$1]) m[$1] = $2 } END { for (d in m) printf "GPU%s %d MiB; ", d, m[d] }' "$f")
	rm -f "$f"
	return $rc
}
# what bounds the throughput while the command runs, into BUSY: each GPU's
# busy share (nvidia-smi's utilization.gpu: the time a kernel ran), the
# service process's CPU (share of one core) and the host's CPU (share of all)
busy() {
	local f=$OUT/util.$$ svc h0 h1 s0 s1 t0 t1 rc smi
	svc=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'eytzgpu service'")
	nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 200 >"$f" 2>/dev/null &
	smi=$!
	h0=$(awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
	s0=$(awk '{ print $14 + $15 }' "/proc/$svc/stat" 2>/dev/null || echo 0)
	t0=$(date +%s.%N)
	"$@"
	rc=$?
	t1=$(date +%s.%N)
	s1=$(awk '{ print $14 + $15 }' "/proc/$svc/stat" 2>/dev/null || echo 0)
	h1=$(awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
	kill $smi
	wait $smi 2>/dev/null
	BUSY=$(awk -F', *' '{ s[$1] += $2; n[$1]++ } END { for (d in s) printf "GPU%s busy %.0f%%; ", d, s[d] / n[d] }' "$f")
	BUSY="$BUSY service CPU $(awk -v a="$s0" -v b="$s1" -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f%% of a core", 100 * (b - a) / hz / (t1 - t0) }');"
	BUSY="$BUSY host CPU $(echo "$h0 $h1" | awk -v n="$(nproc)" '{ printf "%.0f%% of %d cores", 100 * ($3 - $1) / ($4 - $2), n }')"
	rm -f "$f"
	return $rc
}

pg_start "$BASE $SVC" >"$OUT/server.txt" 2>&1 || { cat "$OUT/server.txt"; exit 1; }
t0=$(date +%s)
$PSQL <<EOF >"$OUT/load.txt" 2>&1 || { tail -20 "$OUT/load.txt"; exit 1; }
CREATE EXTENSION eytzgpu;
SELECT setseed(0.7);
CREATE TABLE inner_p (id int8, k int4) PARTITION BY HASH (k);
$(for i in 0 1 2 3 4 5 6 7; do echo "CREATE TABLE inner_p_$i PARTITION OF inner_p FOR VALUES WITH (MODULUS 8, REMAINDER $i);"; done)
INSERT INTO inner_p SELECT g, (random() * 2147483646)::int4 FROM generate_series(1, 8 * $LEAF) g;
CREATE INDEX inner_p_k ON inner_p USING eytzgpu (k);
CREATE TABLE outer_t AS
	SELECT row_number() OVER () AS id, k FROM (
		SELECT k FROM inner_p TABLESAMPLE BERNOULLI ($M * 95.0 / (8 * $LEAF)) REPEATABLE (7)
		UNION ALL
		SELECT (random() * 2147483646)::int4 FROM generate_series(1, $M / 20)) s;
CREATE TABLE big_t (id int8, k int4);
INSERT INTO big_t SELECT g, (random() * 2147483646)::int4 FROM generate_series(1, 4 * $LEAF) g;
CREATE INDEX big_k ON big_t USING eytzgpu (k);
ANALYZE inner_p, outer_t, big_t;
SET eytzgpu.enable_join = off;
SET enable_hashjoin = on;
CREATE TABLE expected AS
$(for i in 0 1 2 3 4 5 6 7; do [ $i -gt 0 ] && echo "UNION ALL"; echo "SELECT $i AS leaf, count(*) AS n, coalesce(sum((o.id * 1000003) # i.id), 0) AS h FROM outer_t o JOIN inner_p_$i i ON i.k = o.k"; done);
CREATE TABLE expected_big AS SELECT count(*) AS n, coalesce(sum((o.id * 1000003) # b.id), 0) AS h
	FROM outer_t o JOIN big_t b ON b.k = o.k;
EOF
echo "load: $(($(date +%s) - t0)) s, 8 leaves x $LEAF rows, $(sql 'SELECT count(*) FROM outer_t') outer rows, $(sql 'SELECT sum(n) FROM expected') matches" | tee -a "$OUT/summary.txt"

# a pgbench script per leaf: the join, its checksum against the hash join's
for i in 0 1 2 3 4 5 6 7; do
	cat >"$OUT/leaf$i.sql" <<EOF
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT (count(*) <> (SELECT n FROM expected WHERE leaf = $i) OR coalesce(sum((o.id * 1000003) # i.id), 0) <> (SELECT h FROM expected WHERE leaf = $i))::int AS bad
	FROM outer_t o JOIN inner_p_$i i ON i.k = o.k \gset
\if :bad
SELECT 1 / 0 AS wrong_answer;
\endif
EOF
done
LEAVES=""
for i in 0 1 2 3 4 5 6 7; do LEAVES="$LEAVES -f $OUT/leaf$i.sql"; done

# one configuration: GPUs $1 visible, label $2, round $3
run_config() {
	local gpus=$1 label=$2 r=$3 tps rc
	restart_gpus "$gpus" "$BASE $SVC"
	# every leaf resident first (the uploads are not what is measured)
	pgbench -n -c 8 -j 8 -t 1 $LEAVES >"$OUT/warm_${label}_$r.txt" 2>&1
	peak_mem busy pgbench -n -c 32 -j 16 -T "$SECS" $LEAVES >"$OUT/pgbench_${label}_$r.txt" 2>&1
	rc=$?
	tps=$(grep -oE 'tps = [0-9.]+' "$OUT/pgbench_${label}_$r.txt" | head -1 | awk '{print $3}')
	echo "$label (CUDA_VISIBLE_DEVICES=$gpus) round $r: 32 sessions, rc $rc, ${tps:-?} joins/s, $(grep -c 'aborted\|wrong_answer' "$OUT/pgbench_${label}_$r.txt") failures, peak: $PEAK; $BUSY" | tee -a "$OUT/summary.txt"
	echo "$label $tps" >>"$OUT/tps.txt"
	sql "SELECT gpu, kind, name, state, copies, bytes, loads, hits, failures FROM eytzgpu_service_gpus()" | sed "s/^/  $label gpus: /" | tee -a "$OUT/summary.txt"
	sql "SELECT gpu, string_agg(index_name, ' ' ORDER BY index_name) FROM eytzgpu_service_resident() GROUP BY gpu" | sed "s/^/  $label copies on GPU: /" | tee -a "$OUT/summary.txt"
	sql "SELECT state, detail, resident_copies, resident_bytes, failures FROM eytzgpu_service_status()" | sed "s/^/  $label status: /" | tee -a "$OUT/summary.txt"
}
: >"$OUT/tps.txt"
for r in $(seq "${ROUNDS:-2}"); do
	[ "$NGPU" -ge 2 ] && run_config 0,1 two "$r"
	run_config 0 one "$r"
done
awk '{ s[$1] += $2; n[$1]++ } END { if (n["one"] && n["two"]) printf "throughput two GPUs / one GPU: %.2fx (mean of %d rounds each; target >= 1.7x)\n", (s["two"] / n["two"]) / (s["one"] / n["one"]), n["two"] }' "$OUT/tps.txt" | tee -a "$OUT/summary.txt"

# an index larger than gpu_memory_limit, with both GPUs
restart_gpus 0,1 "$BASE $SVC -c eytzgpu.gpu_memory_limit=64MB"
{
	echo "SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
	echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*) FROM outer_t o JOIN big_t b ON b.k = o.k;"
	echo "SELECT (count(*) = (SELECT n FROM expected_big) AND coalesce(sum((o.id * 1000003) # b.id), 0) = (SELECT h FROM expected_big)) AS big_answer_right FROM outer_t o JOIN big_t b ON b.k = o.k;"
} | $PSQL >"$OUT/big.txt" 2>&1
echo "big_t ($(sql "SELECT pg_size_pretty(pg_relation_size('big_k'))") index, gpu_memory_limit 64MB per GPU): $(grep -E 'Device|CPU Reason' "$OUT/big.txt" | paste -sd' '); answer right: $(grep -A2 big_answer_right "$OUT/big.txt" | sed -n 3p)" | tee -a "$OUT/summary.txt"
sql "SELECT gpu, index_name, bytes FROM eytzgpu_service_resident()" | sed 's/^/  big: /' | tee -a "$OUT/summary.txt"
cp /tmp/pg.log "$OUT/pg.log"
pg_stop >/dev/null 2>&1

# the request round trip through the service and without it, one GPU
if [ "${SKIP_LATENCY:-0}" != 1 ]; then
	CUDA_VISIBLE_DEVICES=0 PGBIN=$($PG_CONFIG --bindir) DEVICE=gpu DIR=/tmp/service_latency OUT=$OUT/latency \
		timeout 240 bash "$(dirname "$0")/service_latency.sh" 1000000 3 >"$OUT/latency.log" 2>&1
	echo "latency (bench/service_latency.sh, DEVICE=gpu, rc $?):" | tee -a "$OUT/summary.txt"
	tail -8 "$OUT/latency.log" | tee -a "$OUT/summary.txt"
fi

# the service's TAP tests on the GPU
if [ "${SKIP_TAP:-0}" = 1 ]; then
	:
elif command -v prove >/dev/null; then
	rm -rf /tmp/tap && mkdir -p /tmp/tap && cp -r test/t bench /tmp/tap/ && chown -R postgres /tmp/tap
	# IPC::Run, carried in .gpu/perl5 or bench/perl5
	[ -d .gpu/perl5 ] && cp -r .gpu/perl5 /tmp/tap/ && chown -R postgres /tmp/tap/perl5
	pgxs=$($PG_CONFIG --pgxs | sed 's,/src/makefiles/pgxs.mk,,')
	export PERL5LIB=$pgxs/src/test/perl:/tmp/tap/perl5:/tmp/tap/bench/perl5
	for t in t/040_service.pl t/041_service_stall.pl; do
		su postgres -s /bin/bash -c "cd /tmp/tap && env PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH PERL5LIB=$PERL5LIB PG_REGRESS=$pgxs/src/test/regress/pg_regress EYTZ_SERVICE_DEVICE=gpu TZ=UTC PGOPTIONS= timeout ${TAP_TIMEOUT:-120} prove -v $t" >"$OUT/tap_$(basename "$t" .pl).txt" 2>&1
		echo "$t with the GPU: rc $?, $(grep -c '^ok' "$OUT/tap_$(basename "$t" .pl).txt") ok, $(grep -c '^not ok' "$OUT/tap_$(basename "$t" .pl).txt") not ok" | tee -a "$OUT/summary.txt"
	done
else
	echo "no prove: TAP tests skipped" | tee -a "$OUT/summary.txt"
fi
