#!/usr/bin/env bash
# bench/anyarray_bench.sh: "k = ANY($1)" with many keys, index-only, through
# an eytzgpu index (one batched lookup, eytzarrayscan.c) against a btree
# index on the same table (issue 26's first target).
#
#   bash bench/anyarray_bench.sh [ROWS [KEYS [RUNS]]]     (default 20000000 100000 5)
#
# Uses the server that PGHOST/PGPORT/PGUSER name when PGHOST is set (the
# GPU machine: bench/anyarray_gpu.sh), else starts a throwaway cluster of
# its own (BENCH_DIR, BENCH_PORT; shared_buffers 4GB).
#
# Two data sets, each a table of ROWS rows (k int4) with both an eytzgpu
# and a btree index, VACUUMed (every page all-visible):
#   random:   k = hashint4(g % (ROWS / 2)): every key twice, random and
#             uncorrelated with heap order; KEYS keys drawn at random with
#             repeats, ~94% of them found (6% misses)
#   friendly: the layout of bench/join_bench.sh's friendly set: unique keys
#             (g * 48271) % (2^31 - 1), scattered over int4; KEYS distinct
#             keys of it, every 16th a miss
# Query: SELECT count(*), sum(k::int8) FROM t WHERE k = ANY($1), the array a
# parameter (a PL/pgSQL variable: the time is the statement's alone, no
# array literal parsed).  Each run is a fresh session per index, which runs
# the query three times and counts the second and the third (a session's
# second run still maps fresh memory for PostgreSQL's own copies of the
# array: glibc returns large blocks until a first free raises its
# threshold; later runs reuse them): the eytzgpu index forced by
# dropping the btree in a transaction rolled back, the btree by a generic
# plan, which estimates 10 keys and so takes the btree in a session that
# holds no eytzgpu image (both checked with EXPLAIN; the answers must
# agree).  Runs alternate between the two indexes; the report gives the
# medians, the ratio, and the median of the eytzgpu sessions' first runs
# (which load the CPU image or upload to the GPU; with the GPU service the
# service keeps its copy from session to session).
# eytzgpu.device = cpu always; with EYTZ_GPU=1 also device = gpu.
# BENCH_REUSE=1 keeps the tables and indexes of an earlier run of the same
# ROWS and KEYS (the server PGHOST names) rather than building them again.
# Prints a Markdown section on stdout.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
ROWS=${1:-20000000}
KEYS=${2:-100000}
RUNS=${3:-5}

if [ -z "${PGHOST:-}" ]; then
	DIR=${BENCH_DIR:-/tmp/eytzgpu-anyarray-bench}
	stop_cluster "$DIR" 2>/dev/null || true
	rm -rf "$DIR"
	PG_OPTS="-c shared_buffers=4GB -c maintenance_work_mem=1GB -c max_wal_size=8GB -c checkpoint_timeout=1h" \
		start_cluster "$DIR" "${BENCH_PORT:-55434}" >&2
	trap 'stop_cluster "$DIR"' EXIT
fi
# as PGUSER over the socket (trust): also from root on the GPU machine,
# whose bundled psql needs this environment's LD_LIBRARY_PATH
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
# the scan of the session's EXPLAIN of the generic plan must be on index $2,
# and the index-only scan's EXPLAIN ANALYZE (if any) must fetch no heap page
check_plan() {
	local got
	got=$(echo "$1" | grep -oE 'Index Only Scan using [a-z_]+' | head -1 | awk '{print $NF}')
	[ "$got" = "$2" ] || { echo "the plan scans '$got', not $2:" >&2; echo "$1" >&2; exit 1; }
	if echo "$1" | grep -q 'Heap Fetches: [1-9]'; then echo "warning: heap fetches: $1" >&2; fi
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
q -c "CREATE EXTENSION IF NOT EXISTS eytzgpu" >&2
if [ "${BENCH_REUSE:-0}" = 1 ] &&
	[ "$(q -c "SELECT (SELECT reltuples FROM pg_class WHERE relname = 'aq_random')::int8 = $ROWS
		AND (SELECT cardinality(a) FROM aq_keys WHERE name = 'random') = $KEYS" 2>/dev/null)" = t ]; then
	REUSED=1
fi
[ -n "${REUSED:-}" ] || q >&2 <<SQL
SET max_parallel_workers_per_gather = 0;
DROP TABLE IF EXISTS aq_random, aq_friendly, aq_keys;
CREATE TABLE aq_random (k int4);
INSERT INTO aq_random SELECT hashint4(g % ($ROWS / 2)) FROM generate_series(1, $ROWS) g;
CREATE TABLE aq_friendly (k int4);
INSERT INTO aq_friendly SELECT ((g::int8 * 48271) % 2147483647)::int4 FROM generate_series(1, $ROWS) g;
CREATE TABLE aq_keys (name text, a int4[]);
SELECT setseed(0.26);
INSERT INTO aq_keys SELECT 'random', array_agg(hashint4(floor(random() * ($ROWS / 2) / 0.94)::int4))
  FROM generate_series(1, $KEYS);
INSERT INTO aq_keys SELECT 'friendly', array_agg(((CASE WHEN g % 16 = 0 THEN $ROWS + g
	ELSE (g::int8 * 7919) % $ROWS + 1 END * 48271) % 2147483647)::int4)
  FROM generate_series(1, $KEYS) g;
SQL
[ -n "${REUSED:-}" ] || for t in aq_random aq_friendly; do
	q -c "CREATE INDEX ${t}_ez ON $t USING eytzgpu (k)" >&2
	q -c "CREATE INDEX ${t}_bt ON $t (k)" >&2
	q -c "VACUUM ANALYZE $t" >&2
done
# the statement and its time, the array a PL/pgSQL variable (a parameter)
q >&2 <<'SQL'
CREATE OR REPLACE FUNCTION aq_run(tab text, arr int4[], OUT ms float8, OUT n int8, OUT s numeric)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
BEGIN
	t0 := clock_timestamp();
	IF tab = 'aq_random' THEN
		SELECT count(*), sum(k::int8) INTO n, s FROM aq_random WHERE k = ANY(arr);
	ELSE
		SELECT count(*), sum(k::int8) INTO n, s FROM aq_friendly WHERE k = ANY(arr);
	END IF;
	ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$$;
SQL

echo "## k = ANY(\$1), $KEYS keys, $ROWS rows (bench/anyarray_bench.sh)"
echo
echo "Load average at start: $LOAD_START. $(nproc) cores. Index-only scans (VACUUMed), medians of $RUNS alternated runs (fresh sessions; each runs the query three times: the first, and the second and third counted)."
echo
echo "| data | device | found rows | btree ms, 2nd | eytzgpu ms, 2nd | btree / eytzgpu, 2nd | btree ms, 3rd | eytzgpu ms, 3rd | btree / eytzgpu, 3rd | eytzgpu ms, a session's first |"
echo "|---|---|---|---|---|---|---|---|---|---|"
devices="cpu"
[ "${EYTZ_GPU:-0}" = 1 ] && devices="cpu gpu"
for set in random friendly; do
	t=aq_$set
	arr="(SELECT a FROM aq_keys WHERE name = '$set')"
	for dev in $devices; do
		settings="SET max_parallel_workers_per_gather = 0; SET plan_cache_mode = force_generic_plan; SET eytzgpu.device = $dev;"
		ez="" bt="" ez3="" bt3="" cold="" answers=""
		for r in $(seq "$RUNS"); do
			# eytzgpu: a fresh session (its first run loads the image), run thrice
			out=$({
				echo "$settings"
				echo "BEGIN; DROP INDEX ${t}_bt;"
				echo "PREPARE p(int4[]) AS SELECT count(*), sum(k::int8) FROM $t WHERE k = ANY(\$1);"
				echo "EXPLAIN (COSTS OFF) EXECUTE p('{1}');"
				echo "SELECT 'run', * FROM aq_run('$t', $arr);"
				echo "SELECT 'run', * FROM aq_run('$t', $arr);"
				echo "SELECT 'run', * FROM aq_run('$t', $arr);"
				[ "$r" = 1 ] && echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*), sum(k::int8) FROM $t WHERE k = ANY($arr::int4[]);"
				echo "ROLLBACK;"
			} | q 2>&1) || { echo "$out" >&2; exit 1; }
			check_plan "$out" "${t}_ez"
			cold="$cold $(echo "$out" | grep '^run|' | sed -n 1p | cut -d'|' -f2)"
			ez="$ez $(echo "$out" | grep '^run|' | sed -n 2p | cut -d'|' -f2)"
			ez3="$ez3 $(echo "$out" | grep '^run|' | sed -n 3p | cut -d'|' -f2)"
			answers="$answers$(echo "$out" | grep '^run|' | cut -d'|' -f3,4)"$'\n'
			# btree: a fresh session (no eytzgpu image: the generic plan's
			# 10 keys take the btree), run thrice
			out=$({
				echo "$settings"
				echo "PREPARE p(int4[]) AS SELECT count(*), sum(k::int8) FROM $t WHERE k = ANY(\$1);"
				echo "EXPLAIN (COSTS OFF) EXECUTE p('{1}');"
				echo "SELECT 'run', * FROM aq_run('$t', $arr);"
				echo "SELECT 'run', * FROM aq_run('$t', $arr);"
				echo "SELECT 'run', * FROM aq_run('$t', $arr);"
			} | q 2>&1) || { echo "$out" >&2; exit 1; }
			check_plan "$out" "${t}_bt"
			bt="$bt $(echo "$out" | grep '^run|' | sed -n 2p | cut -d'|' -f2)"
			bt3="$bt3 $(echo "$out" | grep '^run|' | sed -n 3p | cut -d'|' -f2)"
			answers="$answers$(echo "$out" | grep '^run|' | cut -d'|' -f3,4)"$'\n'
		done
		[ "$(echo "$answers" | grep . | sort -u | wc -l)" = 1 ] ||
			{ echo "the two indexes disagree on $set: $answers" >&2; exit 1; }
		found=$(echo "$answers" | head -1 | cut -d'|' -f1)
		ezm=$(echo $ez | tr ' ' '\n' | median)
		btm=$(echo $bt | tr ' ' '\n' | median)
		ez3m=$(echo $ez3 | tr ' ' '\n' | median)
		bt3m=$(echo $bt3 | tr ' ' '\n' | median)
		coldm=$(echo $cold | tr ' ' '\n' | median)
		printf '| %s | %s | %s | %.1f | %.1f | %.1fx | %.1f | %.1f | %.1fx | %.1f |\n' "$set" "$dev" "$found" \
			"$btm" "$ezm" "$(awk -v a="$btm" -v b="$ezm" 'BEGIN { print a / b }')" \
			"$bt3m" "$ez3m" "$(awk -v a="$bt3m" -v b="$ez3m" 'BEGIN { print a / b }')" "$coldm"
		echo "$set $dev: eytzgpu 2nd runs$ez, 3rd runs$ez3 (first in session$cold), btree 2nd runs$bt, 3rd runs$bt3" >&2
	done
done
echo
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)."
