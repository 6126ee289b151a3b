#!/usr/bin/env bash
# bench/overlap_gpu.sh: the join's pipeline (eytzgpu.lookup_overlap) on the
# GPU machine (through the device tool, carrying .gpu as bench/gpu_run.sh
# does, and eytzgpu.so or eytzgpu.so.xz built here with CUDA).  For the GPU
# service and then the per-backend GPU: the pg_regress suite with
# eytzgpu.device = 'gpu', then on the "random" data set (bench/random_data.sql,
# N inner and M outer rows) the join with the pipeline on and off,
# alternating in one backend, ROUNDS rounds (medians), each mode's EXPLAIN
# ANALYZE (TIMING OFF), and LEFT, SEMI, ANTI and LIMIT joins against
# PostgreSQL's own plans.  Logs go to $OUT.  REGRESS="test ..." runs those
# tests only; CHECK=0 skips the joins against PostgreSQL's plans, AB_SERVICE=0
# the service's A/B.
#
#   bench/overlap_gpu.sh [N [M [ROUNDS]]]    (default 20000000 2000000 7)
set -uo pipefail
N=${1:-20000000}
M=${2:-2000000}
ROUNDS=${3:-7}
OUT=${OUT:-/tmp/overlap_out}
mkdir -p "$OUT"
source .gpu/pgenv.sh
pg_stop >/dev/null 2>&1
rm -rf /tmp/pgdata
[ -f eytzgpu.so.xz ] && xz -dcf eytzgpu.so.xz >eytzgpu.so
cp eytzgpu.so "$($PG_CONFIG --pkglibdir)/" && cp eytzgpu.control eytzgpu--*.sql "$($PG_CONFIG --sharedir)/extension/" || exit 1
BASE="-c shared_buffers=24GB -c work_mem=1GB -c max_wal_size=20GB -c maintenance_work_mem=8GB"
SVC="-c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=gpu -c eytzgpu.service_slot_buffer=8MB"
PSQL="psql -X -q -v ON_ERROR_STOP=1"

# restart the cluster pg_start made with other server options
pg_restart() {
	pg_stop >/dev/null 2>&1
	su postgres -s /bin/bash -c "env PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH TZ=UTC pg_ctl -D /tmp/pgdata -l /tmp/pg.log -o '-k /tmp/pgsock -c listen_addresses= $*' -w start" >/dev/null
}

regress() {
	PGOPTIONS="-c eytzgpu.device=gpu -c statement_timeout=150s" timeout 120 \
		make PG_CONFIG=$PG_CONFIG with_llvm=no installcheck TAP_TESTS= NO_CUDA=1 ${REGRESS:+REGRESS="$REGRESS"} >"$OUT/regress_$1.log" 2>&1
	echo "regress $1: $(grep -cE '^test .* ok' "$OUT/regress_$1.log") ok, $(grep -cE '^test .* FAILED' "$OUT/regress_$1.log") failed"
	[ -f regression.diffs ] && cp regression.diffs "$OUT/regression_$1.diffs"
}

QR="SELECT count(*), sum(i.v) FROM outer_r o JOIN inner_r i ON i.k = o.k"
SET="SET eytzgpu.device = gpu; SET max_parallel_workers_per_gather = 0;
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"

# the join alternately with the pipeline on and off in one backend
ab() {
	local f="$OUT/ab_$1.log"
	{
		echo "$SET"
		echo "$QR;"
		echo "$QR;"
		echo "\\timing on"
		for _ in $(seq "$ROUNDS"); do
			for mode in on off; do
				echo "SET eytzgpu.lookup_overlap = $mode;"
				echo "\\echo MODE $mode"
				echo "$QR;"
			done
		done
		echo "\\timing off"
		for _ in 1 2; do
			for mode in on off; do
				echo "SET eytzgpu.lookup_overlap = $mode;"
				echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $QR;"
			done
		done
	} | $PSQL >"$f" 2>&1
	awk -v what="$1" '
		/^MODE / { mode = $2; want = 1; next }
		want && /^Time: / { t[mode, ++n[mode]] = $2; want = 0 }
		function median(m,   i, j, k, a) {
			k = n[m]; for (i = 1; i <= k; i++) a[i] = t[m, i]
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
			return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
		}
		END { on = median("on"); off = median("off")
			printf "%s: join median ms, overlap on %.1f, off %.1f (%d rounds), off/on %.3f\n", what, on, off, n["on"], off / on }' "$f" | tee -a "$OUT/summary.txt"
	grep -E 'Lookup (Time|Overlap|Wait)|GPU (Transfer|Kernel)|Outer Time|Device|Execution Time|^ *[0-9]+ \| [0-9]+' "$f" >>"$OUT/summary.txt"
}

# LEFT, SEMI, ANTI and LIMIT: the GPU join (pipelined) against enable_join off
check() {
	local q
	[ "${CHECK:-1}" = 1 ] || return 0
	for q in "SELECT count(*), count(i.v), sum(i.v) FROM outer_r o LEFT JOIN inner_r i ON i.k = o.k" \
		"SELECT count(*) FROM outer_r o WHERE EXISTS (SELECT 1 FROM inner_r i WHERE i.k = o.k)" \
		"SELECT count(*), sum(o.k::int8) FROM outer_r o WHERE NOT EXISTS (SELECT 1 FROM inner_r i WHERE i.k = o.k)" \
		"SELECT count(*) FROM (SELECT i.v FROM outer_r o JOIN inner_r i ON i.k = o.k LIMIT 300000) s"; do
		echo "$1 | $q | gpu: $($PSQL -At -c "$SET" -c "$q" | tr '\n' ' ') | postgres: $($PSQL -At -c "SET eytzgpu.enable_join = off" -c "$q" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
	done
}

load() {
	local start
	start=$(date +%s)
	$PSQL -c "CREATE EXTENSION IF NOT EXISTS eytzgpu" -v N="$N" -v M="$M" -f bench/random_data.sql >/dev/null &&
		$PSQL -c "VACUUM ANALYZE inner_r" -c "VACUUM ANALYZE outer_r" -c "SET eytzgpu.device = gpu" \
			-c "CREATE INDEX inner_r_ez ON inner_r USING eytzgpu (k)" || exit 1
	echo "data and index in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
}

pg_start "$BASE $SVC" >"$OUT/server.txt" 2>&1 || { cat "$OUT/server.txt"; exit 1; }
regress service
if [ "${AB_SERVICE:-1}" = 1 ]; then
	load
	ab service
	check service
fi
pg_restart "$BASE"
regress backend
[ "${AB_SERVICE:-1}" = 1 ] || load
ab backend
check backend
pg_stop >/dev/null 2>&1
