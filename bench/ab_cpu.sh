#!/usr/bin/env bash
# bench/ab_cpu.sh: two builds' serial join side by side on the CPU path (issue 29's "the join within 3%
# of before" where there is no GPU): the random and friendly sets of bench/ab_gpu.sh (N x N/10), each
# build's eytzgpu.so in turn under one cluster, ROUNDS (4) rounds, each a restart: the backend's CPU
# time (utime + stime) over 4 joins after 2 warm ones, and one EXPLAIN ANALYZE's stage clocks.
#   PGBIN=.../bin DIR=/tmp/ab [N=20000000] [ROUNDS=4] [XOPTS="-c ..."] [DEV=cpu] bash bench/ab_cpu.sh
#   DIR holds before.so and after.so (each build's eytzgpu.so, without CUDA is fine); eytzgpu must be
#   installed in PGBIN's PostgreSQL (its SQL scripts; the library is swapped in turn).  XOPTS adds
#   server settings (e.g. the CPU service: -c shared_preload_libraries=eytzgpu -c
#   eytzgpu.service_device=cpu, with DEV=gpu so that the join asks for it).
# Per round and build: "set build round cpu_ms_a_join stages outer lookup sort fetch qual own total" in
# $DIR/cpu.txt; the medians and after / before at the end.
set -uo pipefail
: "${PGBIN:?set PGBIN to the bin directory of a PostgreSQL with eytzgpu installed}"
DIR=${DIR:-/tmp/ab}; N=${N:-20000000}; M=$((N / 10)); PORT=${PORT:-55431}
LIB=$($PGBIN/pg_config --pkglibdir)
source "$(dirname "$0")/../scripts/common.sh"
PATH=$PGBIN:$PATH
OPTS="-p $PORT -k $DIR -c listen_addresses='' -c shared_buffers=4GB -c jit=off -c max_parallel_workers_per_gather=0 -c autovacuum=off -c work_mem=1GB -c max_wal_size=20GB ${XOPTS:-}"
PSQL="psql -X -q -At -h $DIR -p $PORT -U postgres"
[ "$(id -u)" = 0 ] && chown postgres: "$DIR"
restart() { as_pguser pg_ctl -D "$DIR/data" -l "$DIR/server.log" -w -o "$OPTS" restart >/dev/null; }
if [ ! -d "$DIR/data" ]; then
	cp "$DIR/after.so" "$LIB/eytzgpu.so"
	as_pguser initdb -D "$DIR/data" -U postgres --auth=trust >/dev/null || exit 1
	as_pguser pg_ctl -D "$DIR/data" -l "$DIR/server.log" -w -o "$OPTS" start >/dev/null || exit 1
	$PSQL -v ON_ERROR_STOP=1 -v N="$N" -v M="$M" -c "CREATE EXTENSION eytzgpu" \
		-f "$(dirname "$0")/ab_data.sql" -c "CREATE INDEX inner_r_k ON inner_r USING eytzgpu (k)" \
		-c "CREATE INDEX inner_t_k ON inner_t USING eytzgpu (k)" -c "VACUUM ANALYZE inner_r, outer_r, inner_t, outer_t" >/dev/null || exit 1
fi
: >"$DIR/cpu.txt"
for r in $(seq 1 "${ROUNDS:-4}"); do for n in before after; do
	cp "$DIR/$n.so" "$LIB/eytzgpu.so"; restart || exit 1
	for s in r t; do
		q="SELECT count(*), sum(i.v) FROM outer_$s o JOIN inner_$s i ON i.k = o.k"
		{ echo "SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET eytzgpu.device = ${DEV:-cpu};"
		  echo 'SELECT pg_backend_pid() AS pid \gset'; echo '\setenv BPID :pid'
		  for i in 1 2; do echo "$q \\g /dev/null"; done
		  echo "\\! awk '{print \$14 + \$15}' /proc/\$BPID/stat"
		  for i in 1 2 3 4; do echo "$q \\g /dev/null"; done
		  echo "\\! awk '{print \$14 + \$15}' /proc/\$BPID/stat"
		  echo "EXPLAIN (ANALYZE, COSTS OFF) $q;"; } | $PSQL >"$DIR/${s}_${n}_$r.txt" 2>&1
		cpu=$(head -2 "$DIR/${s}_${n}_$r.txt" | paste -sd' ' | awk '{ print ($2 - $1) * 1000 / 100 / 4 }')
		st=$(grep -E "Outer Time|Lookup Time|Match Sort|Heap Fetch Time|Qual Time|Own Time|Execution" "$DIR/${s}_${n}_$r.txt" | awk '{print $(NF-1)}' | paste -sd' ')
		echo "$s $n $r $cpu $st" | tee -a "$DIR/cpu.txt"
	done
done; done
awk 'function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	{ c[$1 " " $2] = c[$1 " " $2] " " $4 }
	END { for (k in c) printf "%s: CPU ms a join%s (median %.1f)\n", k, c[k], med(c[k])
		for (x = 1; x <= 2; x++) { s = x == 1 ? "r" : "t"
			if (c[s " before"] != "") printf "set %s after / before: CPU %.3f\n", s, med(c[s " after"]) / med(c[s " before"]) } }' "$DIR/cpu.txt" | sort
as_pguser pg_ctl -D "$DIR/data" -m fast stop >/dev/null
