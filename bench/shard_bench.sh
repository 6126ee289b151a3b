#!/usr/bin/env bash
# bench/shard_bench.sh: the EytzGPU Foreign Join (batched key access over
# postgres_fdw) against PostgreSQL's own plans for the same join (issue 26's
# second target): a coordinator and 3 shard clusters on this machine.
#
#   bash bench/shard_bench.sh [INNER_ROWS [OUTER_ROWS [RUNS]]]    (default 6000000 200000 3)
#
# Clusters under BENCH_DIR (default /tmp/eytzgpu-shard-bench), the
# coordinator on port BENCH_PORT (default 55430), the shards on the next 3.
# SHARD_OPTS: more server options for the shards (default: eytzgpu preloaded,
# so that each shard's service keeps one CPU image of its index for all its
# backends, and a coordinator session's new connections do not each load
# one).  On the GPU machine (EYTZ_GPU=1, after bench/gpu_run.sh's set-up: the
# carried bundle, which must hold postgres_fdw) each shard runs the GPU
# service of its own cluster (the 3 clusters share the one GPU) and logs go
# to $OUT.
#
# Data: inner_dist (k int4, v int4), INNER_ROWS rows with unique keys
# scattered over int4, hash-partitioned on k into 3 postgres_fdw foreign
# tables, one per shard, each shard's table with an eytzgpu index on k
# (SHARD_INDEX, default "(k)"; "(k) INCLUDE (v)" makes it covering, so that
# each shard answers its array by an index-only scan; VACUUM ANALYZE, every
# page all-visible; each shard generates the rows of its hash partition
# itself); the coordinator ANALYZEs the foreign leaves and the partitioned
# table (postgres_fdw samples the shards), so that the join's size is
# estimated from the key's statistics rather than defaults.  outer_t (k int4, w int4), OUTER_ROWS local rows: keys drawn
# from the inner keys at random with repeats (about OUTER_ROWS / 2 distinct
# ones drawn twice on average), one in 20 a key on no shard, one in 100 NULL.
# The servers have fetch_size FETCH_SIZE (default 10000), async_capable on
# and use_remote_estimate REMOTE_ESTIMATE (default true: postgres_fdw builds
# parameterized paths, those of the nested loop, only with remote
# estimates), for every plan.
# BENCH_KEEP=1 leaves the clusters running; BENCH_SET is SQL run before each
# plan's settings (e.g. 'SET jit = off;').
# The shards have cursor_tuple_fraction = 1 (postgres_fdw reads its cursors
# to the end; at the default 0.1 a shard's planner prefers a sequential scan
# to the index's batched lookup, whose work is all done before its first
# row).  Query: SELECT count(*), sum(i.v::int8), sum(o.w::int8) FROM outer_t
# o JOIN inner_dist i ON i.k = o.k, run twice in a fresh coordinator session
# after a query that opens the shards' connections; the times are psql's
# \timing of both runs.
# Plans, alternating run by run:
#   eytz:      the planner's choice with the extension (checked: the
#              EytzGPU Foreign Join)
#   pg:        the planner's choice with eytzgpu.enable_foreign_join = off
#   pg_hash:   ... and a hash join forced (whole table fetched, async Append)
#   pg_merge:  ... a merge join forced (the shards sort their tables)
#   pg_nl:     ... a nested loop forced (one remote query per outer row, the
#              partition pruned at run time): on the first NL_ROWS outer rows
#              (default 5000) only, scaled to OUTER_ROWS (said in the report)
# All answers must agree.  Prints a Markdown section on stdout.
set -euo pipefail
INNER=${1:-6000000}
OUTER=${2:-200000}
RUNS=${3:-3}
NL_ROWS=${NL_ROWS:-5000}
FETCH_SIZE=${FETCH_SIZE:-10000}
REMOTE_ESTIMATE=${REMOTE_ESTIMATE:-true}
SHARD_INDEX=${SHARD_INDEX:-(k)}
if [ "${EYTZ_GPU:-0}" = 1 ]; then
	# gpu_common.sh's steps may fail harmlessly (no server to stop)
	set +e
	source "$(dirname "$0")/gpu_common.sh"
	set -e
	# the clusters' user and its access to the bundle, as pgenv.sh's pg_start makes them
	id postgres >/dev/null 2>&1 || useradd -M -s /bin/bash postgres
	chmod -R a+rwX "$PGBUNDLE"
	SHARD_OPTS=${SHARD_OPTS:--c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=gpu -c eytzgpu.gpu_memory_limit=4GB}
fi
SHARD_OPTS=${SHARD_OPTS--c shared_preload_libraries=eytzgpu}
source "$(dirname "$0")/../scripts/common.sh"
if [ "${EYTZ_GPU:-0}" = 1 ] && [ "$(id -u)" = 0 ]; then
	# the bundle's programs need its library path as the clusters' user too
	as_pguser() { runuser -u postgres -- env PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$@"; }
fi
[ -f "$("$PG_CONFIG" --pkglibdir)/postgres_fdw.so" ] ||
	{ echo "postgres_fdw is not installed in $("$PG_CONFIG" --pkglibdir)" >&2; exit 1; }
source "$(dirname "$0")/shard_common.sh"
NSHARDS=3

for s in c 0 1 2; do stop_cluster "$DIR/$s" 2>/dev/null || true; done
rm -rf "$DIR"
cleanup() { [ -n "${BENCH_KEEP:-}" ] || for s in c 0 1 2; do stop_cluster "$DIR/$s"; done; }
trap cleanup EXIT
for s in 0 1 2; do
	PG_OPTS="-c shared_buffers=512MB -c maintenance_work_mem=512MB -c max_wal_size=4GB -c checkpoint_timeout=1h ${SHARD_OPTS:-}" \
		start_cluster "$DIR/$s" $((PORT + 1 + s)) >&2
done
PG_OPTS="-c shared_buffers=1GB -c session_preload_libraries=eytzgpu -c max_parallel_workers_per_gather=0" \
	start_cluster "$DIR/c" "$PORT" >&2
KEY="((g::int8 * 48271) % 2147483647)::int4"
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
# each shard generates the rows of its own hash partition, all at once
for s in 0 1 2; do
	(q $s -c "CREATE EXTENSION eytzgpu" \
		-c "CREATE TABLE kparent (k int4, v int4) PARTITION BY HASH (k)" \
		-c "CREATE TABLE inner_p$s (k int4, v int4)" \
		-c "INSERT INTO inner_p$s SELECT k, v FROM (SELECT $KEY AS k, g AS v FROM generate_series(1, $INNER) g) s
			WHERE satisfies_hash_partition('kparent'::regclass, $NSHARDS, $s, k)" \
		-c "CREATE INDEX inner_p${s}_k ON inner_p$s USING eytzgpu $SHARD_INDEX" \
		-c "VACUUM ANALYZE inner_p$s" \
		-c "ALTER DATABASE postgres SET cursor_tuple_fraction = 1") &
done
wait
q c <<EOF
CREATE EXTENSION postgres_fdw;
CREATE TABLE inner_dist (k int4, v int4) PARTITION BY HASH (k);
$(for s in 0 1 2; do cat <<EOS
CREATE SERVER shard$s FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '$DIR/$s', port '$((PORT + 1 + s))', dbname 'postgres', fetch_size '$FETCH_SIZE', async_capable 'true', use_remote_estimate '$REMOTE_ESTIMATE');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard$s OPTIONS (user 'postgres');
CREATE FOREIGN TABLE inner_f$s PARTITION OF inner_dist FOR VALUES WITH (MODULUS $NSHARDS, REMAINDER $s)
	SERVER shard$s OPTIONS (table_name 'inner_p$s');
EOS
done)
SELECT setseed(0.26);
CREATE TABLE outer_t AS
SELECT CASE WHEN g % 100 = 0 THEN NULL
			WHEN g % 20 = 0 THEN ((($INNER + g)::int8 * 48271) % 2147483647)::int4
			ELSE (((1 + floor(random() * $OUTER / 2 * 1.0))::int8 * ($INNER / ($OUTER / 2)) * 48271) % 2147483647)::int4
	   END AS k, g AS w
  FROM generate_series(1, $OUTER) g;
CREATE TABLE outer_nl AS SELECT * FROM outer_t WHERE w <= $NL_ROWS;
ANALYZE outer_t; ANALYZE outer_nl;
ANALYZE inner_f0; ANALYZE inner_f1; ANALYZE inner_f2;
-- the partitioned table's own statistics (sampled from the shards) size the join
ANALYZE inner_dist;
EOF
LOAD_S=$(($(date +%s) - t0))

QUERY='SELECT count(*), sum(i.v::int8), sum(o.w::int8) FROM outer_t o JOIN inner_dist i ON i.k = o.k'
QUERY_NL=${QUERY/outer_t/outer_nl}
WARM='SELECT * FROM inner_dist LIMIT 0'
declare -A SETS=(
	[eytz]=''
	[pg]='SET eytzgpu.enable_foreign_join = off;'
	[pg_hash]='SET eytzgpu.enable_foreign_join = off; SET enable_nestloop = off; SET enable_mergejoin = off;'
	[pg_merge]='SET eytzgpu.enable_foreign_join = off; SET enable_nestloop = off; SET enable_hashjoin = off;'
	[pg_nl]='SET eytzgpu.enable_foreign_join = off; SET enable_hashjoin = off; SET enable_mergejoin = off;'
)
PLANS="eytz pg pg_hash pg_merge pg_nl"
query_of() { [ "$1" = pg_nl ] && echo "$QUERY_NL" || echo "$QUERY"; }
# BENCH_SET: settings for every plan (e.g. 'SET jit = off;')
for p in $PLANS; do SETS[$p]="${BENCH_SET:-} ${SETS[$p]}"; done

echo "## shard_bench: $INNER-row inner table on 3 shards, $OUTER outer rows ($(date -u +%Y-%m-%d), $(uname -n))"
echo
echo "Shards' index: eytzgpu $SHARD_INDEX; their options: ${SHARD_OPTS:-none}.  Servers' fetch_size: $FETCH_SIZE.  Settings for every plan: ${BENCH_SET:-none}.  Load: ${LOAD_S}s.  Load average at the start: $LOAD_START (a shared machine: ratios within one run)."
echo
for p in $PLANS; do
	echo "### plan: $p"
	echo '```'
	q c -c "${SETS[$p]}" -c "EXPLAIN (COSTS ON) $(query_of $p)" | grep -E 'Join|Nested|Hash|Merge|Append|Foreign Scan|Sort' | head -12
	echo '```'
done
if ! q c -c "EXPLAIN $QUERY" | grep -q 'EytzGPU Foreign Join'; then
	echo "the planner does not pick the EytzGPU Foreign Join" >&2
fi
echo
echo "### EXPLAIN ANALYZE of the foreign join"
echo '```'
q c -c "$WARM" -c "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) $QUERY" | sed 1d | grep -v 'Remote SQL' 
echo '```'

declare -A TIMES WTIMES ANSWER
for r in $(seq 1 "$RUNS"); do
	for p in $PLANS; do
		out=$(q c -c "${SETS[$p]}" -c "$WARM" -c '\timing on' -c "$(query_of $p)" -c "$(query_of $p)")
		ms=$(echo "$out" | grep -oE '^Time: [0-9.]+' | awk '{print $2}' | sed -n 1p)
		wms=$(echo "$out" | grep -oE '^Time: [0-9.]+' | awk '{print $2}' | sed -n 2p)
		ans=$(echo "$out" | grep -v '^Time:' | tail -1)
		if [ "$p" = pg_nl ]; then
			ms=$(awk -v t="$ms" -v n="$NL_ROWS" -v m="$OUTER" 'BEGIN {print t * m / n}')
			wms=$(awk -v t="$wms" -v n="$NL_ROWS" -v m="$OUTER" 'BEGIN {print t * m / n}')
		fi
		TIMES[$p]="${TIMES[$p]:-} $ms"
		WTIMES[$p]="${WTIMES[$p]:-} $wms"
		key=all
		[ "$p" = pg_nl ] && key=nl
		if [ -n "${ANSWER[$key]:-}" ] && [ "${ANSWER[$key]}" != "$ans" ]; then
			echo "answers differ: $p gave $ans, before ${ANSWER[$key]}" >&2
			exit 1
		fi
		ANSWER[$key]=$ans
	done
done
EYTZ_NL_ANS=$(q c -c "$(query_of pg_nl)")
[ "$EYTZ_NL_ANS" = "${ANSWER[nl]}" ] || { echo "the first $NL_ROWS rows: answers differ" >&2; exit 1; }

echo
echo "Answer (all plans agree): ${ANSWER[all]}"
echo
echo "First: the query's first run in a fresh coordinator session (the shards' backends are new: their first"
echo "plans read the catalogs, and without eytzgpu preloaded each loads its index image).  Second: its second run."
echo
echo "| plan | first, runs (ms) | first, median | vs eytz | second, runs (ms) | second, median | vs eytz |"
echo "|---|---|---|---|---|---|---|"
E=$(echo ${TIMES[eytz]} | tr ' ' '\n' | median)
WE=$(echo ${WTIMES[eytz]} | tr ' ' '\n' | median)
for p in $PLANS; do
	m=$(echo ${TIMES[$p]} | tr ' ' '\n' | median)
	wm=$(echo ${WTIMES[$p]} | tr ' ' '\n' | median)
	note=''
	[ "$p" = pg_nl ] && note=" (first $NL_ROWS outer rows, scaled x$((OUTER / NL_ROWS)))"
	echo "| $p$note |$(for t in ${TIMES[$p]}; do printf ' %.0f' "$t"; done) | $(printf '%.0f' "$m") | $(awk -v a="$m" -v b="$E" 'BEGIN {printf "%.1fx", a / b}') |$(for t in ${WTIMES[$p]}; do printf ' %.0f' "$t"; done) | $(printf '%.0f' "$wm") | $(awk -v a="$wm" -v b="$WE" 'BEGIN {printf "%.1fx", a / b}') |"
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
