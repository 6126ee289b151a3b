#!/usr/bin/env bash
# bench/gpu_run.sh: the one command for the GPU machine (through the device
# tool, carrying .gpu made by ../shared/gpu/pg-bundle.sh): start a server,
# build and install eytzgpu with CUDA, run the pg_regress suite with
# eytzgpu.device = 'gpu' (unless SKIP_REGRESS=1), then (unless SKIP_BENCH=1)
# the join benchmark.
# With SERVICE=1 (the default) the server preloads eytzgpu and its GPU
# service answers every GPU lookup (the table's device column then reads
# "gpu (service)"; a parallel join's workers use the service's one copy);
# SERVICE=0 runs the per-backend path (each backend, and each parallel
# worker's leader, its own CUDA context and copy), as runs 1-5 of
# bench/join_results.md did.
# HUGE=1 puts shared memory on 2 MB pages (huge_pages = on, reserving
# vm.nr_hugepages as root), PostgreSQL's advice for large shared_buffers: a
# random heap fetch then misses the TLB far less, for every plan alike.
# GPU_ENV names the bundle's directory (default .gpu; e.g. .gpu/pg18 for a
# bundle of the PostgreSQL 18 that scripts/build-pg18.sh builds).
# Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
source "${GPU_ENV:-.gpu}/pgenv.sh"
# a warm machine may still hold the previous call's cluster
pg_stop >/dev/null 2>&1; rm -rf /tmp/pgdata
nvidia-smi -L >"$OUT/gpu.txt" 2>&1
# Installed before the server starts, which may preload it.  A module built
# there needs a newer libstdc++ than the bundle's: carry eytzgpu.so built
# here (make, with nvcc) and install it by hand.
if [ -f eytzgpu.so ]; then
	cp eytzgpu.so "$($PG_CONFIG --pkglibdir)/" && cp eytzgpu.control eytzgpu--*.sql "$($PG_CONFIG --sharedir)/extension/"
else
	{ make -j16 PG_CONFIG=$PG_CONFIG with_llvm=no && make PG_CONFIG=$PG_CONFIG with_llvm=no install; } >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
# no autovacuum, as scripts/test.sh runs the suite: its ANALYZE's snapshot
# would keep a test's VACUUM from marking pages all-visible (join_heap reads
# the visibility map); the benchmarks VACUUM ANALYZE their own tables
SERVER="-c shared_buffers=24GB -c work_mem=1GB -c max_wal_size=20GB -c maintenance_work_mem=8GB -c autovacuum=off"
[ "${SERVICE:-1}" = 1 ] &&
	SERVER="$SERVER -c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=gpu -c eytzgpu.service_slot_buffer=8MB"
if [ "${HUGE:-0}" = 1 ]; then
	echo 13000 >/proc/sys/vm/nr_hugepages
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 12400 ] || { echo "HUGE=1: could not reserve huge pages"; exit 1; }
	SERVER="$SERVER -c huge_pages=on"
fi
echo "server: $SERVER" | tee "$OUT/server.txt"
pg_start "$SERVER" >>"$OUT/server.txt" 2>&1 || exit 1
# the service opens its GPUs' contexts after the server is ready (a second
# or more with two GPUs): a suite started before would see it not running
if [ "${SERVICE:-1}" = 1 ]; then
	psql -X -q -c "CREATE EXTENSION IF NOT EXISTS eytzgpu" >/dev/null
	for i in $(seq 60); do
		[ "$(psql -X -At -c "SELECT state FROM eytzgpu_service_status()")" = running ] && break
		sleep 0.5
	done
	psql -X -q -c "DROP EXTENSION eytzgpu" >/dev/null
fi
export PGOPTIONS="-c statement_timeout=150s"
if [ "${SKIP_REGRESS:-0}" != 1 ]; then
	echo "== pg_regress with eytzgpu.device = gpu"
	# REGRESS_TESTS: a part of the suite (names of test/sql files)
	PGOPTIONS="$PGOPTIONS -c eytzgpu.device=gpu" timeout "${REGRESS_TIMEOUT:-400}" make PG_CONFIG=$PG_CONFIG with_llvm=no installcheck TAP_TESTS= NO_CUDA=1 \
		${REGRESS_TESTS:+REGRESS="$REGRESS_TESTS"} >"$OUT/regress.log" 2>&1
	tail -8 "$OUT/regress.log"
	[ -f regression.diffs ] && cp regression.diffs "$OUT/"
fi
# the suite's plans mask the device: show that the GPU really served a join
psql -X -c "CREATE EXTENSION IF NOT EXISTS eytzgpu" -c "SET eytzgpu.device = gpu" -c "CREATE TABLE gchk AS SELECT g AS k FROM generate_series(1, 100000) g" \
	-c "CREATE INDEX ON gchk USING eytzgpu (k)" -c "SET enable_hashjoin = off" -c "SET enable_mergejoin = off" \
	-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*) FROM gchk a JOIN gchk b ON b.k = a.k + 1" 2>&1 | tee "$OUT/gpucheck.txt"
if [ "${SKIP_BENCH:-0}" != 1 ]; then
	echo "== benchmark"
	EYTZ_GPU=1 BENCH_OUT="$OUT/bench" timeout "${BENCH_TIMEOUT:-400}" bash bench/join_bench.sh ${BENCH_ARGS:-20000000 2000000 2} >"$OUT/bench.log" 2>&1
	tail -25 "$OUT/bench.log"
	tar czf "$OUT/benchlogs.tgz" -C "$OUT" bench
fi
