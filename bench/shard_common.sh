# bench/shard_common.sh: sourced by shard_bench.sh and shard_where.sh (after
# scripts/common.sh): where the coordinator's and the shards' clusters live
# (BENCH_DIR; the coordinator c on port BENCH_PORT, shard s on BENCH_PORT +
# 1 + s) and q, psql as the clusters' user over their sockets on shard $1
# (c: the coordinator).
DIR=${BENCH_DIR:-/tmp/eytzgpu-shard-bench}
PORT=${BENCH_PORT:-55430}
q() {
	local s=$1 port
	shift
	if [ "$s" = c ]; then port=$PORT; else port=$((PORT + 1 + s)); fi
	as_pguser psql -X -q -At -v ON_ERROR_STOP=1 -h "$DIR/$s" -p "$port" -d postgres "$@"
}
