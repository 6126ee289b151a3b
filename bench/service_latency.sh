#!/usr/bin/env bash
# bench/service_latency.sh: what a request to the eytzgpu service costs
# (issue 27, item 5): the same joins through the service and without it,
# at batch sizes that make requests of 1, 1,000 and 100,000 keys, and the
# serial join at the default batch size.
#
#   PGBIN=.../bin bench/service_latency.sh [INNER_ROWS [ROUNDS]]   (default 1000000 5)
#
# Makes its own cluster in $DIR (default /tmp/service_latency) on port
# $PORT (default 55498) with PGBIN's PostgreSQL, where eytzgpu must be
# installed.  DEVICE (default cpu) is eytzgpu.service_device: cpu measures
# the service's whole path without a GPU, against each backend's own CPU
# image; gpu (on the GPU host) against each backend's own CUDA context.
# Two server configurations, alternated ROUNDS times (the machine is shared
# and noisy: the alternation spreads its noise over both):
#   service: shared_preload_libraries = 'eytzgpu', service_device = DEVICE
#   own:     no preload (eytzgpu.device = DEVICE: the backend's own view)
# Each round is one session: a warm-up of every join, then each join once,
# timed by EXPLAIN (ANALYZE, TIMING OFF); a request's time is the join's
# time over its batches (each batch is one request).  Requests:
#   1 key:        batch_size = 1,      2,000 outer rows  (a LIMIT's first batch, a rescan)
#   1,000 keys:   batch_size = 1000,   200,000 outer rows
#   100,000 keys: batch_size = 100000, 1,000,000 outer rows
#   serial join:  default batch size,  INNER_ROWS / 2 outer rows
# Outer keys are drawn from the inner ones (random, repeats, ~5% misses).
# The view is chosen by cost as always: through the service a batch pays
# its round trip, so the 1-key batches may run on the backend's CPU path
# (the table's last column says where the service run's joins ran).
# Results (medians): $OUT/service_latency.md (OUT defaults to DIR), logs beside.
set -uo pipefail
N=${1:-1000000}
ROUNDS=${2:-5}
DIR=${DIR:-/tmp/service_latency}
PORT=${PORT:-55498}
DEVICE=${DEVICE:-cpu}
OUT=${OUT:-$DIR}
: "${PGBIN:?set PGBIN to the bin directory of a PostgreSQL with eytzgpu installed}"
source "$(dirname "$0")/../scripts/common.sh"
PATH=$PGBIN:$PATH
PSQL="psql -X -q -v ON_ERROR_STOP=1"
mkdir -p "$OUT"
[ "$(id -u)" = 0 ] && chown postgres: "$OUT"
T=$OUT/service_latency.md
BASE="-c shared_buffers=1GB -c work_mem=256MB -c max_parallel_workers_per_gather=0 -c jit=off"
SERVICE="$BASE -c shared_preload_libraries=eytzgpu -c eytzgpu.service_device=$DEVICE -c eytzgpu.service_slot_buffer=8MB"
OWN="$BASE -c eytzgpu.device=$DEVICE"

sql() { $PSQL -At -c "$1"; }
restart() {
	as_pguser pg_ctl -D "$DIR/data" -l "$DIR/server.log" -w -o "-p $PORT -k $DIR -c listen_addresses='' -c fsync=off $1" restart >/dev/null
}

stop_cluster "$DIR" 2>/dev/null
rm -rf "$DIR/data"
PG_OPTS="$SERVICE" start_cluster "$DIR" "$PORT" || exit 1
M=$((N / 2))
$PSQL <<EOF >"$OUT/load.txt" 2>&1 || { cat "$OUT/load.txt"; exit 1; }
CREATE EXTENSION eytzgpu;
SELECT setseed(0.3);
CREATE TABLE inner_t (id int8, k int4);
INSERT INTO inner_t SELECT g, (random() * 2147483646)::int4 FROM generate_series(1, $N) g;
CREATE INDEX inner_k ON inner_t USING eytzgpu (k);
CREATE TABLE outer_t AS
	SELECT row_number() OVER () AS id, k FROM (
		SELECT k FROM inner_t TABLESAMPLE BERNOULLI (95.0 * $M / $N) REPEATABLE (3)
		UNION ALL SELECT (random() * 2147483646)::int4 FROM generate_series(1, $M / 20)) s
	ORDER BY random();
ANALYZE inner_t, outer_t;
EOF

# shape: label batch_size outer_rows (0: all)
SHAPES="1key 1 2000
1k 1000 200000
100k 100000 1000000
serial 0 0"
shapes_sql() {
	local label bs rows lim
	echo "SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
	for pass in warm timed; do
		while read -r label bs rows; do
			# the request shapes without the pipeline: their Lookup Time is then each request's round
			# trip as the backend sees it (submit to answer, the match sort of its few matches included)
			[ "$bs" = 0 ] && echo "RESET eytzgpu.batch_size; RESET eytzgpu.lookup_overlap;" ||
				echo "SET eytzgpu.batch_size = $bs; SET eytzgpu.lookup_overlap = off;"
			[ "$rows" = 0 ] && lim="" || lim="LIMIT $rows"
			echo "\\echo $pass $label"
			echo "EXPLAIN (ANALYZE, TIMING OFF) SELECT count(*) FROM (SELECT k FROM outer_t $lim) o JOIN inner_t i ON i.k = o.k;"
		done <<<"$SHAPES"
	done
}
shapes_sql >"$OUT/shapes.sql"

# one round of config $1 (label $2): "label shape ms batches device" lines
round() {
	restart "$1" || { echo "restart failed" >&2; return 1; }
	$PSQL -f "$OUT/shapes.sql" >"$OUT/round_$2_$3.txt" 2>&1
	awk -v cfg="$2" '
		/^(warm|timed) / { pass = $1; shape = $2 }
		/Device:/ { dev = $2; for (i = 3; i <= NF; i++) dev = dev "_" $i }
		/Batches:/ { batches = $2 }
		/Lookup Time:/ { lookup = $3 }
		/Execution Time:/ { if (pass == "timed") print cfg, shape, $3, batches, dev, lookup; dev = ""; batches = 0; lookup = 0 }
	' "$OUT/round_$2_$3.txt"
}
: >"$OUT/raw.txt"
for r in $(seq 1 "$ROUNDS"); do
	round "$SERVICE" service "$r" >>"$OUT/raw.txt"
	round "$OWN" own "$r" >>"$OUT/raw.txt"
done
stop_cluster "$DIR"

{
	echo "# bench/service_latency.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, DEVICE=$DEVICE"
	echo
	echo "Inner $N rows, medians of $ROUNDS alternated rounds; a request = one batch."
	echo "Devices seen: $(awk '{print $1 ": " $5}' "$OUT/raw.txt" | sort -u | paste -sd ';' -)"
	echo
	echo "| request | batches | service ms | own ms | service us/request | own us/request | service - own us/request | round trip us, service | round trip us, own | device (service run) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	while read -r label bs rows; do
		awk -v shape="$label" '
			function median(a, n,   i, j, t) {
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			$2 == shape && $1 == "service" { s[++ns] = $3; b = $4; dev = $5; sl[ns] = $6 }
			$2 == shape && $1 == "own" { o[++no] = $3; ol[no] = $6 }
			END {
				if (ns == 0 || no == 0 || b == 0) { print "| " shape " | no data | | | | | | | | |"; exit }
				ms = median(s, ns); mo = median(o, no)
				printf "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s |\n", shape, b, ms, mo,
					ms * 1000 / b, mo * 1000 / b, (ms - mo) * 1000 / b,
					median(sl, ns) * 1000 / b, median(ol, no) * 1000 / b, dev
			}' "$OUT/raw.txt"
	done <<<"$SHAPES"
} >"$T"
cat "$T"
