#!/usr/bin/env bash
# bench/ab_gpu.sh: two builds side by side on one GPU machine (issue 29's "within 3% of before"): the
# kernel benchmark (cuda/bench/eytz_bench --quick build lookup range api) of each, alternated twice,
# then the serial GPU join through the service (20M x 2M; random: keys hashint4(1..N), outer repeats and
# ~5% misses; friendly: bench/join_bench.sh's scattered unique keys), each build's eytzgpu.so in turn
# under one server, ROUNDS (3) rounds (each a restart), the median of the RUNS (5) runs after the first (which
# loads the copy) and the backend's CPU time over them
# (the wall clock of one build moves by 25% on a shared host; its CPU time much less).
# OWN=1: no preload and no restarts: each build's .so swapped in for each new session (a backend loads the
# library at its first join, through its own CUDA context: runs 2-N counted), sessions alternating
# before/after SESSIONS times under one server start, so that both builds meet the same buffer placement
# (the rounds of a restart spread by 25-60% on a shared host); DEVICES (gpu) the eytzgpu.device values to
# run (cpu: the backend's CPU image); the summary adds the median of the pairs' after / before and each
# build's fastest run.  PIN_BACKEND=CPUS: each session's backend bound to those CPUs (taskset).
# OWN=1 INTERLEAVE=K: a session of each build open at once, their K joins alternated one by one on one
# CPU (see interleaved() below): the median of the pairs' after / before.
#   DIR holds before.so, after.so (eytzgpu.so of each, built with CUDA) and before.bench, after.bench
#   (cuda/bench/eytz_bench of each), each also as NAME.xz:
#   source .gpu/pgenv.sh; DIR=.gpu/ab [SKIP_KERNELS=1] [ROUNDS=5] [PIN="taskset -c 0-7"] [HUGE=1] [RUNS=5] bash bench/ab_gpu.sh
# Summary on stdout; logs in $OUT/all.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}; mkdir -p $OUT/k
DIR=${DIR:-.gpu/ab}
for f in before.so after.so before.bench after.bench; do
	if [ -f $DIR/$f.xz ]; then xz -dc $DIR/$f.xz > /tmp/$f; else cp $DIR/$f /tmp/$f; fi
done
chmod +x /tmp/before.bench /tmp/after.bench
nvidia-smi -L > $OUT/gpu.txt; cat $OUT/gpu.txt
date > $OUT/times.txt
for r in $( [ "${SKIP_KERNELS:-0}" = 1 ] || echo 1 2 ); do for f in before after; do
  CUDA_VISIBLE_DEVICES=0 timeout 150 /tmp/$f.bench --quick --csv $OUT/k/${f}_$r.csv build lookup range api > $OUT/k/${f}_$r.log 2>&1
  echo "kernel $f round $r: rc $? $(date +%T) $(wc -l < $OUT/k/${f}_$r.csv) csv lines"; tail -3 $OUT/k/${f}_$r.log
done; done
source .gpu/pgenv.sh
pg_stop >/dev/null 2>&1; rm -rf /tmp/pgdata
cp eytzgpu.control eytzgpu--*.sql $($PG_CONFIG --sharedir)/extension/
cp /tmp/after.so $($PG_CONFIG --pkglibdir)/eytzgpu.so
SERVER="-c shared_buffers=24GB -c work_mem=1GB -c max_wal_size=20GB -c maintenance_work_mem=8GB -c jit=off -c max_parallel_workers_per_gather=0"
[ "${OWN:-0}" = 1 ] || SERVER="$SERVER -c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=gpu -c eytzgpu.service_slot_buffer=8MB"
# HUGE=1: shared memory on 2 MB pages where the kernel lets us reserve them (the heap fetch's TLB
# misses then depend less on where a server start put each buffer)
if [ "${HUGE:-0}" = 1 ]; then
  if echo 13000 >/proc/sys/vm/nr_hugepages 2>/dev/null && [ "$(cat /proc/sys/vm/nr_hugepages)" -ge 12400 ]; then
    SERVER="$SERVER -c huge_pages=on"
  else
    echo "no huge pages: $(cat /proc/sys/vm/nr_hugepages 2>&1)"
  fi
fi
export CUDA_VISIBLE_DEVICES=0
${PIN:-} bash -c "source .gpu/pgenv.sh; pg_start '$SERVER'" > $OUT/server.txt 2>&1 || { cat $OUT/server.txt; exit 1; }
N=20000000; M=2000000
psql -X -q -v ON_ERROR_STOP=1 -v N=$N -v M=$M -c "CREATE EXTENSION eytzgpu" -f bench/ab_data.sql \
  -c "SET eytzgpu.device = gpu; CREATE INDEX inner_r_k ON inner_r USING eytzgpu (k); CREATE INDEX inner_t_k ON inner_t USING eytzgpu (k)" \
  -c "VACUUM ANALYZE inner_r, outer_r, inner_t, outer_t" > $OUT/load.txt 2>&1
echo "load rc $? $(date +%T)"; tail -3 $OUT/load.txt; psql -X -At -c "SELECT count(*) FROM outer_r" -c "SELECT count(*) FROM inner_t"
restart_as() { ${PIN:-} su postgres -s /bin/bash -c "env PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH TZ=UTC CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES pg_ctl -D /tmp/pgdata -l /tmp/pg.log -o '-k /tmp/pgsock -c listen_addresses= $SERVER' -w restart" >/dev/null; sleep 2; }
RUNS=${RUNS:-5}
lscpu | grep -E 'NUMA|Socket|^CPU\(s\)'
# one session of build f on set (r or t) with eytzgpu.device = dev: its first join loads the copy; the
# median wall time of the RUNS joins after it and the backend's CPU time a join over them
session() {
    local f=$1 set=$2 r=$3 dev=$4 med cpu log
    local Q="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET eytzgpu.device = $dev;"
    log=$OUT/join_${f}_${set}_${dev}_$r.txt
    # the backend's CPU time (utime + stime, clock ticks) around runs 2-6 as well as their wall times
    { echo "$Q"; echo 'SELECT pg_backend_pid() AS pid \gset'; echo '\setenv BPID :pid'; echo '\timing on'
      # PIN_BACKEND: the backend on these CPUs (a shared host's cores differ: one build's runs moved 1.6x)
      [ -n "${PIN_BACKEND:-}" ] && echo "\\! taskset -cp ${PIN_BACKEND} \$BPID > /dev/null"
      echo "SELECT count(*), sum(i.v) FROM outer_$set o JOIN inner_$set i ON i.k = o.k;"
      echo "\\! awk '{print \"ticks\", \$14 + \$15}' /proc/\$BPID/stat"
      for i in $(seq 1 $RUNS); do echo "SELECT count(*), sum(i.v) FROM outer_$set o JOIN inner_$set i ON i.k = o.k;"; done
      echo "\\! awk '{print \"ticks\", \$14 + \$15}' /proc/\$BPID/stat"
      echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*), sum(i.v) FROM outer_$set o JOIN inner_$set i ON i.k = o.k;"; } | psql -X > $log 2>&1
    # the first run loads the copy: the median of the others, and their CPU time per join
    med=$(grep -oE '^Time: [0-9.]+' $log | awk '{print $2}' | sed -n "2,$((RUNS + 1))p" | sort -n |
      awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
    cpu=$(awk -v runs=$RUNS '/^ticks/ { t[++n] = $2 } END { printf "%.1f", (t[2] - t[1]) * 10 / runs }' $log)
    echo "join $set $f round $r: median ${med} ms, CPU ${cpu} ms a join ($(grep -oE '^Time: [0-9.]+' $log | awk '{print $2}' | paste -sd' ')) $(grep -E 'Device' $log | head -1 | xargs)"
    best=$(grep -oE '^Time: [0-9.]+' $log | awk '{print $2}' | sed -n "2,$((RUNS + 1))p" | sort -n | head -1)
    echo "$set${dev#gpu} $f $med $cpu $r $best" >> $OUT/joins.txt
}
# installs build f's library for the next backend (a rename: a backend loading it meanwhile sees a whole file)
install_so() { cp /tmp/$1.so $($PG_CONFIG --pkglibdir)/eytzgpu.so.new && mv $($PG_CONFIG --pkglibdir)/eytzgpu.so.new $($PG_CONFIG --pkglibdir)/eytzgpu.so; }
# INTERLEAVE=K (with OWN=1): per device and set, one session of each build open at once (each loads its
# library and copy in its first join), then K joins in each, alternating run by run (before, after, then
# after, before), both backends bound to the one CPU PIN_BACKEND (default 4) with their threads: a pair's
# two runs meet the same core and the same moment of the host.  The summary: the median of the pairs'
# after / before and its quartiles.
interleaved() {
    local set=$1 dev=$2 k=$3 f i pair n
    IL_TAG=${set}_$dev
    local Q="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET eytzgpu.device = $dev;"
    local J="SELECT count(*), sum(i.v) FROM outer_$set o JOIN inner_$set i ON i.k = o.k;"
    n=0
    for f in before after; do
        install_so $f; rm -f /tmp/ab_$f.in; mkfifo /tmp/ab_$f.in
        psql -X < /tmp/ab_$f.in > $OUT/il_${f}_${set}_${dev}.txt 2>&1 &
        n=$((n + 1)); eval "exec $((6 + n))>/tmp/ab_$f.in"
        send $f "$Q"; send $f 'SELECT pg_backend_pid() AS pid \gset'; send $f '\setenv BPID :pid'
        send $f "\\! taskset -acp ${PIN_BACKEND:-4} \$BPID > /dev/null"
        send $f "$J"; send $f '\timing on'; wait_mark $f 0
    done
    for i in $(seq 1 $k); do
        pair="before after"; [ $((i % 2)) = 0 ] && pair="after before"
        for f in $pair; do send $f "$J"; wait_mark $f $i; done
    done
    exec 7>&- 8>&-; wait
    paste <(grep -oE '^Time: [0-9.]+' $OUT/il_before_${set}_${dev}.txt | awk '{print $2}') \
          <(grep -oE '^Time: [0-9.]+' $OUT/il_after_${set}_${dev}.txt | awk '{print $2}') > $OUT/il_${set}_${dev}.tsv
    awk -v set=$set -v dev=$dev '{ r[NR] = $2 / $1; b[NR] = $1; a[NR] = $2 }
        function sorted(x, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t } }
        function q(x, n, p) { return x[int((n - 1) * p) + 1] }
        END { n = NR; sorted(r, n); sorted(b, n); sorted(a, n)
            printf "interleaved %s %s: %d pairs, after / before median %.3f (quartiles %.3f-%.3f); before median %.1f ms (fastest %.1f), after %.1f (fastest %.1f)\n",
                set, dev, n, q(r, n, 0.5), q(r, n, 0.25), q(r, n, 0.75), q(b, n, 0.5), b[1], q(a, n, 0.5), a[1] }' $OUT/il_${set}_${dev}.tsv
}
send() { local fd=7; [ $1 = after ] && fd=8; printf '%s\n' "$2" >&$fd; }
wait_mark() { send $1 "\\echo MARK_$2"; until grep -q "^MARK_$2\$" $OUT/il_${1}_$IL_TAG.txt 2>/dev/null; do sleep 0.02; done; }
if [ "${OWN:-0}" = 1 ] && [ -n "${INTERLEAVE:-}" ]; then
  for dev in ${DEVICES:-gpu}; do for set in r t; do interleaved $set $dev $INTERLEAVE; done; done
elif [ "${OWN:-0}" = 1 ]; then
  # pairs in alternating order (before first, then after first) so that a drift favours neither
  for r in $(seq 1 ${SESSIONS:-8}); do
    order="before after"; [ $((r % 2)) = 0 ] && order="after before"
    for dev in ${DEVICES:-gpu}; do for set in r t; do for f in $order; do
      install_so $f; session $f $set $r $dev
    done; done; done
  done
else
  for r in $(seq 1 ${ROUNDS:-3}); do for f in before after; do
    install_so $f; restart_as
    for set in r t; do session $f $set $r gpu; done
  done; done
fi
# per set and build: the rounds' medians, the median over rounds, after / before; and the median of each
# round's (pair's) after / before
awk 'function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	{ w[$1 " " $2] = w[$1 " " $2] " " $3; c[$1 " " $2] = c[$1 " " $2] " " $4; sets[$1] = 1
	  pw[$1 " " $5 " " $2] = $3; pc[$1 " " $5 " " $2] = $4; rounds[$1 " " $5] = 1
	  if (!(($1 " " $2) in best) || $6 + 0 < best[$1 " " $2]) best[$1 " " $2] = $6 + 0 }
	END { for (s in w) printf "%s: wall%s (median %.1f); CPU%s (median %.1f)\n", s, w[s], med(w[s]), c[s], med(c[s])
		for (k in rounds) { split(k, kr, " ")
			if ((k " before") in pw && (k " after") in pw && pw[k " before"] > 0 && pc[k " before"] > 0) {
				rw[kr[1]] = rw[kr[1]] " " pw[k " after"] / pw[k " before"]; rc[kr[1]] = rc[kr[1]] " " pc[k " after"] / pc[k " before"] } }
		for (set in sets)
			printf "set %s after / before: wall %.3f, CPU %.3f; median of pairs: wall %.3f, CPU %.3f; fastest run %.1f / %.1f ms = %.3f\n", set,
				med(w[set " after"]) / med(w[set " before"]), med(c[set " after"]) / med(c[set " before"]), med(rw[set]), med(rc[set]),
				best[set " after"], best[set " before"], best[set " after"] / best[set " before"] }' $OUT/joins.txt | sort
pg_stop >/dev/null 2>&1
date >> $OUT/times.txt
cd $OUT && tar czf all.tgz --remove-files k join_* joins.txt load.txt server.txt times.txt
