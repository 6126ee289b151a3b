#!/bin/bash
# bench/slices_cpu.sh: the GPU service's slices without a GPU (issue 25): the CPU service with two
# devices (eytzgpu.service_cpu_devices = 2), a 2M-row index joined with 500k outer keys (repeats, 5%
# misses), the copy whole (gpu_memory_limit 4GB) and in two slices (20MB) alternated 3 times, runs
# 1-6 of each server start (the first loads the copy), EXPLAIN ANALYZE's device and lookup time.
#   PGBIN=/usr/lib/postgresql/15/bin bash bench/slices_cpu.sh      (as root: runs the server as postgres)
P=${PGBIN:-/usr/lib/postgresql/15/bin}
D=${DIR:-/tmp/slices_cpu}
runuser -u postgres -- $P/pg_ctl -D $D/data stop -m fast >/dev/null 2>&1
rm -rf $D; mkdir -p $D; chown postgres $D
runuser -u postgres -- $P/initdb -D $D/data -U postgres --auth=trust >/dev/null
BASE="-p 55432 -k /tmp -c shared_buffers=1GB -c jit=off -c max_parallel_workers_per_gather=0 -c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=cpu -c eytzgpu.service_cpu_devices=2 -c eytzgpu.service_slot_buffer=8MB"
runuser -u postgres -- $P/pg_ctl -D $D/data -l $D/log -o "$BASE -c eytzgpu.gpu_memory_limit=4GB" -w start >/dev/null
PSQL="runuser -u postgres -- $P/psql -h /tmp -p 55432 -X -q"
$PSQL <<SQL
CREATE EXTENSION eytzgpu;
CREATE TABLE big_t (id int8, k int4, v int4);
INSERT INTO big_t SELECT g, hashint4(g % 1800000), g FROM generate_series(1, 2000000) g;
CREATE TABLE outer_b (id int8, k int4);
INSERT INTO outer_b SELECT g, hashint4(CASE WHEN random() < 0.05 THEN -g ELSE floor(random() * 1800000)::int4 END) FROM generate_series(1, 500000) g;
CREATE INDEX big_k ON big_t USING eytzgpu (k);
VACUUM ANALYZE big_t, outer_b;
SQL
Q="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
for r in 1 2 3; do for lim in 4GB 20MB; do
  runuser -u postgres -- $P/pg_ctl -D $D/data -l $D/log -o "$BASE -c eytzgpu.gpu_memory_limit=$lim" -w restart >/dev/null
  out=$({ echo "$Q"; echo '\timing on'; for i in 1 2 3 4 5 6; do echo "SELECT count(*), sum(b.id) FROM outer_b o JOIN big_t b ON b.k = o.k;"; done; echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*), sum(b.id) FROM outer_b o JOIN big_t b ON b.k = o.k;"; } | $PSQL 2>&1)
  echo "limit $lim round $r: $(echo "$out" | grep -oE '^Time: [0-9.]+' | awk '{print $2}' | head -6 | paste -sd' ') | $(echo "$out" | grep -E 'Device|Lookup Time' | xargs) | $(echo "$out" | grep -E '^ +[0-9]+ \|' | sort -u | xargs)"
done; done
$PSQL -At -c "SELECT gpu, entries, bytes FROM eytzgpu_service_resident()"
runuser -u postgres -- $P/pg_ctl -D $D/data stop -m fast >/dev/null
