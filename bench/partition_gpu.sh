#!/usr/bin/env bash
# bench/partition_gpu.sh: issue 25's GPU target on the GPU machine (through
# the device tool, carrying .gpu and an eytzgpu.so built here with CUDA):
# bench/gpu_run.sh starts a server whose GPU service answers every lookup
# and runs the pg_regress suite on the GPU (SKIP_REGRESS=1 skips it), then
# bench/partition_bench.sh compares the EytzGPU Join over hash- and
# range-partitioned inner tables with the join over one table holding the
# same rows, and with PostgreSQL's own plan.
#   PART_ARGS: partition_bench.sh's arguments (default 20000000 2000000 3 8)
# Logs under $OUT (partition/table.md).
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
SKIP_BENCH=1 bash bench/gpu_run.sh
source "${GPU_ENV:-.gpu}/pgenv.sh"
echo "== partitioned inner tables"
BENCH_OUT="$OUT/partition" timeout "${PART_TIMEOUT:-500}" \
	bash bench/partition_bench.sh ${PART_ARGS:-20000000 2000000 3 8} >"$OUT/partition.log" 2>&1
tail -20 "$OUT/partition.log"
