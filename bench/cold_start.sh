#!/usr/bin/env bash
# bench/cold_start.sh [ROUNDS]: a fresh backend's first EytzGPU Join against
# its second, per CPU view (eytzgpu.cpu_view = auto: the pinned index pages
# where they fit; image: the backend's own image, loaded by its first join).
# Two shapes: the demo's (2M inner rows, keys 1..N in random heap order, 200k
# outer keys drawn from them) and the held-out one (4M inner rows, hashed
# keys, 400k outer keys with repeats and 5% misses).  Each round runs, per
# shape and view in alternation, one fresh backend that runs the serial join
# (max_parallel_workers_per_gather = 0) three times; it prints the median
# first, second and third times, the first/second ratio (target <= 1.2) and
# the third against the image's third (warm: target <= 1.0 plus noise).
# Needs a server reachable by psql with eytzgpu installed; the joins run with
# eytzgpu.device = $DEVICE (default cpu; gpu on the GPU machine, where a
# preloaded server's service answers); creates and drops cs_* tables.
# LIMITS="0 1GB" (a superuser and shared_preload_libraries = 'eytzgpu'):
# each round also alternates eytzgpu.shared_image_limit over these values
# (ALTER SYSTEM and a reload; 0: no shared images, each backend loads its
# own), one row per limit, view and shape, after one backend's join that
# registers the image where the limit allows (0 evicts it again); reset at
# the end.
set -euo pipefail
ROUNDS=${1:-7}
LIMITS=${LIMITS:--}
DEVICE=${DEVICE:-cpu}
sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
sql -c "CREATE EXTENSION IF NOT EXISTS eytzgpu" 2>/dev/null
sql -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS cs_inner_demo, cs_outer_demo, cs_inner_held, cs_outer_held"
sql -c "CREATE TABLE cs_inner_demo AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, 2000000) g ORDER BY random()" \
	-c "CREATE TABLE cs_outer_demo AS SELECT (1 + floor(random() * 2000000))::int4 AS k FROM generate_series(1, 200000)" \
	-c "CREATE TABLE cs_inner_held AS SELECT hashint4(g) AS k, g AS v FROM generate_series(1, 4000000) g" \
	-c "SELECT setseed(0.42)" \
	-c "CREATE TABLE cs_outer_held AS SELECT hashint4(CASE WHEN random() < 0.05 THEN 4000001 + g ELSE 1 + floor(random() * 4000000)::int4 END) AS k FROM generate_series(1, 400000) g"
for set in demo held; do
	sql -c "CREATE INDEX ON cs_inner_$set USING eytzgpu (k)" -c "VACUUM ANALYZE cs_inner_$set" -c "VACUUM ANALYZE cs_outer_$set"
done

# one fresh backend: "device first_ms second_ms third_ms"
fresh() {
	local set=$1 view=$2 q
	q="EXPLAIN (ANALYZE, TIMING OFF) SELECT count(*), sum(i.v) FROM cs_outer_$set o JOIN cs_inner_$set i ON i.k = o.k"
	sql -c "SET max_parallel_workers_per_gather = 0" -c "SET eytzgpu.device = $DEVICE" \
		-c "SET eytzgpu.cpu_view = $view" -c "$q" -c "$q" -c "$q" |
		awk '/Device:/ && !d { sub(/.*Device: /, ""); d = $0 } /Execution Time/ { t = t " " $3 }
			END { gsub(/ /, "_", d); print d t }'
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# the shared image limit for the next fresh backends ("-": leave it), and
# one backend's join of set that registers its image where the limit allows
# (the fresh backends below are those after the first)
set_limit() {
	[ "$1" = - ] && return
	sql -c "ALTER SYSTEM SET eytzgpu.shared_image_limit = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 0.2
	fresh "$2" image >/dev/null
}

declare -A R
for set in demo held; do
	q="SELECT count(*), sum(i.v) FROM cs_outer_$set o JOIN cs_inner_$set i ON i.k = o.k"
	# tables and index in shared buffers (as far as they fit) first
	sql -c "SET eytzgpu.enable_join = off" -c "$q" -c "RESET eytzgpu.enable_join" -c "$q" >/dev/null
	for r in $(seq "$ROUNDS"); do
		for lim in $LIMITS; do
			set_limit "$lim" $set
			for view in auto image; do
				R[$set,$lim,$view]+="$(fresh $set $view)"$'\n'
			done
		done
	done
done
[ "$LIMITS" = - ] || sql -c "ALTER SYSTEM RESET eytzgpu.shared_image_limit" -c "SELECT pg_reload_conf()" >/dev/null
printf '%-5s %-6s %-6s %-24s %9s %9s %9s %8s %8s\n' shape limit view device first_ms second_ms third_ms 1st/2nd 3rd/img
for set in demo held; do
	for lim in $LIMITS; do
		img3=$(printf '%s' "${R[$set,$lim,image]}" | awk 'NF { print $4 }' | median)
		for view in auto image; do
			v=${R[$set,$lim,$view]}
			d=$(printf '%s' "$v" | awk 'NF { print $1 }' | sort | uniq -c | sort -rn | head -1 | awk '{ print $2 }')
			f=$(printf '%s' "$v" | awk 'NF { print $2 }' | median)
			s=$(printf '%s' "$v" | awk 'NF { print $3 }' | median)
			t=$(printf '%s' "$v" | awk 'NF { print $4 }' | median)
			printf '%-5s %-6s %-6s %-24s %9.1f %9.1f %9.1f %8.2f %8.2f\n' $set $lim $view "$d" "$f" "$s" "$t" \
				"$(awk -v a="$f" -v b="$s" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$(awk -v a="$t" -v b="$img3" 'BEGIN { print (b > 0 ? a / b : 0) }')"
		done
	done
done
sql -c "DROP TABLE cs_inner_demo, cs_outer_demo, cs_inner_held, cs_outer_held"
