#!/usr/bin/env bash
# bench/lookup_ab.sh: the CPU lookup stage of two builds of eytzgpu.so, A/B
# interleaved, on the random data set of bench/join_bench.sh.
#
#   bench/lookup_ab.sh LIBDIR ROUNDS LABEL=SO [LABEL=SO ...]
#
# Needs a running server reachable through PGHOST/PGPORT/PGUSER whose
# $libdir is LIBDIR (a private install: each round copies the build's .so
# there, so new backends load it), with the tables outer_r and inner_r of
# bench/join_bench.sh (inner_r's eytzgpu index without INCLUDE) and TABLES
# (default "inner_r"; e.g. an inner_ri with the same rows and an index
# INCLUDE (v), vacuumed, for the index-only join); OUTER names another
# outer table (default outer_r).  Each round runs, per
# build and table, the CPU join once to load the image and warm the
# backend's arrays, then REPS times (default 3) under EXPLAIN ANALYZE, and
# prints the fastest of those: the lookup stage per key, search (query sort,
# tree walk, TIDs and values) and match sort.  Builds alternate round by
# round, so a machine whose speed drifts (other work on it) moves both
# alike; the summary at the end gives per build and table the median and
# the minimum over the rounds.
set -euo pipefail
LIBDIR=$1
ROUNDS=$2
shift 2
TABLES=${TABLES:-inner_r}
REPS=${REPS:-3}
OUTER=${OUTER:-outer_r}
rounds=$(mktemp)
trap 'rm -f "$rounds"' EXIT
export PGOPTIONS="-c eytzgpu.enable_join=on -c work_mem=1GB -c max_parallel_workers_per_gather=0
	-c enable_hashjoin=off -c enable_mergejoin=off -c enable_nestloop=off -c eytzgpu.device=cpu"
for _ in $(seq "$ROUNDS"); do
	for spec in "$@"; do
		label=${spec%%=*}
		so=${spec#*=}
		# a new file, not one rewritten under running backends
		cp "$so" "$LIBDIR/.eytzgpu.so.new" && mv "$LIBDIR/.eytzgpu.so.new" "$LIBDIR/eytzgpu.so"
		for t in $TABLES; do
			q="SELECT count(*), sum(i.v) FROM $OUTER o JOIN $t i ON i.k = o.k"
			{
				printf '%s;\n' "$q"
				for _ in $(seq "$REPS"); do printf 'EXPLAIN (ANALYZE, COSTS OFF) %s;\n' "$q"; done
			} | psql -X -q -At -v ON_ERROR_STOP=1 |
				awk -v l="$label" -v t="$t" '
					function keep() { if (k > 0 && (best == "" || s + m < best)) { best = s + m; bs = s; bm = m; be = e; bk = k } }
					/Lookups:/ { keep(); k = $2 } /Lookup Search Time/ { s = $4 } /Match Sort Time/ { m = $4 }
					/Execution Time/ { e = $3 }
					END { keep(); printf "%-8s %-10s node %7.0f ms  search %6.1f  sort %6.1f  lookup %6.1f ns/key\n",
						l, t, be, bs * 1e6 / bk, bm * 1e6 / bk, (bs + bm) * 1e6 / bk }'
		done
	done
done | tee "$rounds"
awk '
	{ key = $1 " " $2; v[key] = v[key] " " $11 }
	END {
		print "-- lookup ns/key over the rounds (median, min):"
		for (key in v) {
			c = split(v[key], a, " ")
			for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] + 0 < a[i] + 0) { x = a[i]; a[i] = a[j]; a[j] = x }
			printf "%-20s median %6.1f  min %6.1f  (%d rounds)\n", key, (a[int((c + 1) / 2)] + a[int(c / 2) + 1]) / 2, a[1], c
		}
	}' "$rounds" | sort
