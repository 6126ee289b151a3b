#!/usr/bin/env bash
# bench/gpu_slices.sh: issue 25 on a host of two GPUs (one device call, carrying .gpu and an
# eytzgpu.so built here with CUDA, see bench/gpu_run.sh):
#   - an index larger than one GPU's eytzgpu.gpu_memory_limit (8M rows, INCLUDE (v), 160MB a GPU):
#     key-range slices on both GPUs, four joins (points, index-only points, LEFT, ranges) against
#     PostgreSQL's answers, times against the whole copy on one GPU (8GB limit), alternated twice;
#   - the partitioned join (20M x 2M, 8 hash leaves, 4 on each GPU), serial, through the service;
#     with OLD_SO (another build's eytzgpu.so) that build's join alternated with this one's.
#   source .gpu/pgenv.sh; OLD_SO=/tmp/old.so bash bench/gpu_slices.sh
# Summary on stdout; logs in $OUT/w (tar them: the device tool returns few files).
set -uo pipefail
T0=$(date +%s)
OUT=${OUT:-/tmp/gpu_out}; mkdir -p $OUT/w; W=$OUT/w
cp eytzgpu.so /tmp/new.so
[ -n "${OLD_SO:-}" ] && cp "$OLD_SO" /tmp/after.so
source .gpu/pgenv.sh
pg_stop >/dev/null 2>&1; rm -rf /tmp/pgdata
cp eytzgpu.control eytzgpu--*.sql $($PG_CONFIG --sharedir)/extension/
cp /tmp/new.so $($PG_CONFIG --pkglibdir)/eytzgpu.so
BASE="-c shared_buffers=24GB -c work_mem=1GB -c max_wal_size=20GB -c maintenance_work_mem=8GB -c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=gpu -c eytzgpu.service_slot_buffer=8MB -c jit=off -c max_parallel_workers_per_gather=0"
SERVER=$BASE
export CUDA_VISIBLE_DEVICES=0
pg_start "$SERVER" > $W/server.txt 2>&1 || { cat $W/server.txt; exit 1; }
restart_as() { su postgres -s /bin/bash -c "env PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH TZ=UTC CUDA_VISIBLE_DEVICES=$1 pg_ctl -D /tmp/pgdata -l /tmp/pg.log -o '-k /tmp/pgsock -c listen_addresses= $SERVER' -w restart" >/dev/null; sleep 2; }
Q="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET eytzgpu.device = gpu;"
psql -X -q -v ON_ERROR_STOP=1 <<SQL > $W/big_load.txt 2>&1
CREATE EXTENSION eytzgpu;
CREATE TABLE big_t (id int8, k int4, v int4);
INSERT INTO big_t SELECT g, hashint4(g % 7000000), g FROM generate_series(1, 8000000) g;
CREATE TABLE outer_b (id int8, k int4);
INSERT INTO outer_b SELECT g, hashint4(CASE WHEN random() < 0.05 THEN -g ELSE floor(random() * 7000000)::int4 END) FROM generate_series(1, 2000000) g;
SET eytzgpu.device = gpu;
CREATE INDEX big_k ON big_t USING eytzgpu (k) INCLUDE (v);
CREATE INDEX big_bt ON big_t (k);
VACUUM ANALYZE big_t, outer_b;
SQL
echo "big load rc $? $(( $(date +%s) - T0 )) s"
BQ=("SELECT count(*), sum((o.id * 1000003) # b.id) FROM outer_b o JOIN big_t b ON b.k = o.k"
    "SELECT count(*), sum(b.v) FROM outer_b o JOIN big_t b ON b.k = o.k"
    "SELECT count(*), sum(o.id + coalesce(b.id, 3)) FROM outer_b o LEFT JOIN big_t b ON b.k = o.k"
    "SELECT count(*), sum((o.id * 1000003) # b.id) FROM outer_b o JOIN big_t b ON b.k BETWEEN o.k AND o.k::int8 + 2000")
{ echo "SET eytzgpu.enable_join = off;"; for q in "${BQ[@]}"; do echo "$q;"; done; } | psql -X -At -q > $W/big_pg.txt 2>&1
big_run() { # label
  local f=$W/big_$1.txt
  { echo "$Q"; echo '\timing on'; for q in "${BQ[@]}"; do for i in 1 2 3; do echo "$q;"; done; done;
    echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${BQ[0]};";
    echo "SELECT gpu, entries, bytes FROM eytzgpu_service_resident() WHERE index_name = 'big_k';"; } | psql -X > $f 2>&1
  local same=""
  for q in 0 1 2 3; do
    want=$(sed -n "$((q + 1))p" $W/big_pg.txt)
    got=$(grep -E '^ *-?[0-9]+ \| *-?[0-9]*$' $f | sed -n "$((q * 3 + 1))p" | tr -d ' ')
    same="$same $([ "$got" = "$want" ] && echo same || echo "DIFFERENT($got/$want)")"
  done
  echo "big $1: ms $(grep -oE '^Time: [0-9.]+' $f | awk '{print $2}' | head -12 | paste -sd' ') | $(grep -E 'Device:|CPU Reason' $f | head -2 | xargs) | copies: $(grep -E '^ +[0-9]+ \| +[0-9]+ \| +[0-9]+$' $f | tr -s ' ' | paste -sd';') | answers:$same"
}
big_run whole_1gpu
SERVER="$BASE -c eytzgpu.gpu_memory_limit=160MB"
restart_as 0,1
big_run sliced_2gpu
SERVER=$BASE
restart_as 0
big_run whole_1gpu_b
SERVER="$BASE -c eytzgpu.gpu_memory_limit=160MB"
restart_as 0,1
big_run sliced_2gpu_b
SERVER=$BASE
echo "after big: $(( $(date +%s) - T0 )) s"
# the partitioned join, 2 GPUs: this build (new.so), and OLD_SO's (after.so) if given
psql -X -q -v ON_ERROR_STOP=1 <<SQL > $W/load.txt 2>&1
CREATE TABLE inner_p (k int4, v int4) PARTITION BY HASH (k);
$(for i in 0 1 2 3 4 5 6 7; do echo "CREATE TABLE inner_p_$i PARTITION OF inner_p FOR VALUES WITH (MODULUS 8, REMAINDER $i);"; done)
INSERT INTO inner_p SELECT hashint4(g), g FROM generate_series(1, 20000000) g;
CREATE TABLE outer_r (k int4);
SELECT setseed(0.42);
INSERT INTO outer_r SELECT hashint4(CASE WHEN random() < 0.05 THEN 20000001 + g ELSE 1 + floor(random() * 20000000)::int4 END) FROM generate_series(1, 2000000) g;
SET eytzgpu.device = gpu;
CREATE INDEX inner_p_k ON inner_p USING eytzgpu (k);
VACUUM ANALYZE inner_p, outer_r;
SQL
echo "partition load rc $? $(( $(date +%s) - T0 )) s"
run() { # so gpus label round
  cp /tmp/$1.so $($PG_CONFIG --pkglibdir)/eytzgpu.so; restart_as $2
  local f=$W/part_$3_$4.txt
  { echo "$Q"; echo '\timing on'; for i in 1 2 3 4 5 6; do echo "SELECT count(*), sum(i.v) FROM outer_r o JOIN inner_p i ON i.k = o.k;"; done;
    echo "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) SELECT count(*), sum(i.v) FROM outer_r o JOIN inner_p i ON i.k = o.k;";
    echo "SELECT gpu, count(*) FROM eytzgpu_service_resident() GROUP BY gpu ORDER BY gpu;"; } | psql -X > $f 2>&1
  echo "$3 round $4: ms $(grep -oE '^Time: [0-9.]+' $f | awk '{print $2}' | head -6 | paste -sd' '); $(grep -E 'Device:|Lookup Overlap' $f | head -2 | xargs); answers $(grep -E '^ *-?[0-9]+ \| *-?[0-9]*$' $f | head -6 | sort -u | tr -d ' ' | paste -sd' '); per GPU $(grep -E '^ +[0-9] \| +[0-9]+$' $f | tr -d ' ' | paste -sd' ')"
}
for r in 1 2; do
	[ -n "${OLD_SO:-}" ] && run after 0,1 old_build_2gpu $r
	run new 0,1 this_build_2gpu $r
done
echo "after partitions: $(( $(date +%s) - T0 )) s"
pg_stop >/dev/null 2>&1
