#!/usr/bin/env bash
# bench/anyarray_gpu.sh: bench/anyarray_bench.sh on the GPU machine, one
# device call carrying .gpu (../shared/gpu/pg-bundle.sh) and eytzgpu.so
# built here with CUDA (see bench/gpu_common.sh):
#
#   bash bench/anyarray_gpu.sh [ROWS [KEYS [RUNS]]]     (default 20000000 100000 5)
#
# Starts a server without the GPU service (each eytzgpu session opens its
# own CUDA context and uploads its copy in its first run; a btree session
# never touches the GPU, so its generic plan keeps the btree), then runs
# the benchmark with EYTZ_GPU=1: device = cpu and device = gpu.  The
# Markdown report goes to $OUT/anyarray.md, the runs to $OUT/anyarray.log.
set -uo pipefail
source "$(dirname "$0")/gpu_common.sh"
pg_start "-c shared_buffers=16GB -c work_mem=256MB -c max_wal_size=20GB -c maintenance_work_mem=8GB" \
	>"$OUT/server.txt" 2>&1 || { cat "$OUT/server.txt"; exit 1; }
EYTZ_GPU=1 bash "$(dirname "$0")/anyarray_bench.sh" "$@" >"$OUT/anyarray.md" 2>"$OUT/anyarray.log"
rc=$?
cat "$OUT/anyarray.md"
tail -5 "$OUT/anyarray.log"
pg_stop >/dev/null 2>&1
exit $rc
