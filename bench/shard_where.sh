#!/usr/bin/env bash
# bench/shard_where.sh: where the EytzGPU Foreign Join's time goes, on the
# clusters that `BENCH_KEEP=1 bash bench/shard_bench.sh` left running (the
# same BENCH_DIR, BENCH_PORT and EYTZ_GPU):
#   - the coordinator's EXPLAIN ANALYZE of the join (a session's second run):
#     "Remote Wait" (the shards' rows, all shards at once) against the rest
#     (the outer side, batching, matching);
#   - every shard's statements for one join (a session's second), with
#     log_min_duration_statement = 0: per batch its DECLARE (the array's
#     bind and the query's plan, one shard after another: postgres_fdw opens
#     its cursors synchronously) and its FETCHes (the batched lookup and the
#     rows);
#   - one shard's plan for an array of as many of its keys as a batch sends
#     it (KEYS, default 21000);
#   - with EYTZ_GPU=1, each shard's GPU service's copies and the lookups
#     they answered (eytzgpu_service_resident()).
# Prints Markdown on stdout.
set -euo pipefail
source "$(dirname "$0")/shard_common.sh"
KEYS=${KEYS:-21000}
[ "${EYTZ_GPU:-0}" = 1 ] && source "$(dirname "$0")/../.gpu/pgenv.sh"
source "$(dirname "$0")/../scripts/common.sh"
QUERY='SELECT count(*), sum(i.v::int8), sum(o.w::int8) FROM outer_t o JOIN inner_dist i ON i.k = o.k'
WARM='SELECT * FROM inner_dist LIMIT 0'

echo "## Where the foreign join's time goes ($(date -u +%Y-%m-%d), $(uname -n))"
echo
echo '```'
q c -c "$WARM" -c "$QUERY" -c "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) $QUERY" | grep -v 'Remote SQL' | tail -n +2
echo '```'
for s in 0 1 2; do
	q "$s" -c "ALTER SYSTEM SET log_min_duration_statement = 0" \
		-c "ALTER SYSTEM SET log_parameter_max_length = 0" -c "SELECT pg_reload_conf()" >/dev/null
done
q c -c "$WARM" -c "$QUERY" -c "SELECT pg_sleep(0.5)" -c "SELECT 'mark'" -c "$QUERY" >/dev/null
sleep 1
for s in 0 1 2; do
	q "$s" -c "ALTER SYSTEM RESET log_min_duration_statement" \
		-c "ALTER SYSTEM RESET log_parameter_max_length" -c "SELECT pg_reload_conf()" >/dev/null
done
echo
echo "Each shard's statements in the second join (end time, duration ms, statement):"
echo
echo '```'
for s in 0 1 2; do
	echo "shard $s:"
	# the last remote transaction: the second join's
	grep -E 'LOG:  duration: .* (statement|parse|bind|execute)' "$DIR/$s/server.log" |
		grep -v 'ALTER SYSTEM\|pg_reload_conf' |
		awk '/START TRANSACTION/ {buf = ""} {buf = buf $0 "\n"} /COMMIT TRANSACTION/ {last = buf} END {printf "%s", last}' |
		sed -E 's/^[0-9-]+ ([0-9:.]+) UTC \[[0-9]+\] LOG:  duration: ([0-9.]+) ms +(statement|parse|bind|execute)[^:]*: ?/  \1 \2 \3 /' |
		cut -c1-90 | grep -v '^$' || true
done
echo '```'
echo
echo "One shard's plan for $KEYS of its keys (rows spread over its heap, in random order) as"
echo "a batch sends them: the array a constant, as the shard plans a cursor's query (second run):"
echo
echo '```'
ROWS=$(q 0 -c "SELECT count(*) FROM inner_p0")
STEP=$((ROWS / KEYS > 0 ? ROWS / KEYS : 1))
as_pguser psql -X -q -At -h "$DIR/0" -p $((PORT + 1)) -d postgres <<SQL | grep -v "ANY ('{" | sed '1,/^===$/d'
SELECT array_agg(k ORDER BY random())::text AS arr FROM (SELECT k FROM inner_p0 WHERE v % $STEP = 0) s \gset
PREPARE p(int4[]) AS SELECT k, v FROM inner_p0 WHERE k = ANY(\$1);
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) EXECUTE p(:'arr');
\echo ===
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, SUMMARY ON) EXECUTE p(:'arr');
SQL
echo '```'
if [ "${EYTZ_GPU:-0}" = 1 ]; then
	echo
	echo "The shards' GPU services (index, entries, lookups answered, GPU):"
	echo
	echo '```'
	for s in 0 1 2; do
		q "$s" -c "SELECT index_name, entries, hits, gpu FROM eytzgpu_service_resident()"
	done
	echo '```'
fi
