#!/usr/bin/env bash
# bench/range_bench.sh [N] [ROUNDS]: a single range predicate selecting 1% of
# N rows (default 2,000,000), through an eytzgpu index against the same
# through a btree index, each planned by the planner itself (PostgreSQL's
# defaults), on two data sets:
#   friendly: distinct keys 1..N in random heap order (the demo's table);
#   random:   hashint4 of the row number (duplicate-free but uncorrelated
#             with the heap, spread over the whole int4 domain).
# Each data set is loaded twice, into identical tables (one per index), and
# the two queries alternate for ROUNDS rounds (default 7); the medians of
# EXPLAIN ANALYZE's execution time and their ratio are printed, with the
# plan each took.  Needs a server reachable by psql with eytzgpu installed.
set -euo pipefail
N=${1:-2000000}
ROUNDS=${2:-7}
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$@"; }
sql "CREATE EXTENSION IF NOT EXISTS eytzgpu"
ms_of() { sql "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $1" | python3 -c 'import json,sys; j=json.load(sys.stdin)[0]; p=j["Plan"]; n=[]
while p:
    n.append(p["Node Type"]); p=(p.get("Plans") or [None])[0]
print(j["Execution Time"], ">".join(n).replace(" ", ""))'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
printf '%-9s %-44s %-44s %9s %9s %7s\n' data eytzgpu_plan btree_plan ez_ms bt_ms bt/ez
for set in friendly random; do
	sql "DROP TABLE IF EXISTS rb_ez, rb_bt"
	if [ $set = friendly ]; then
		sql "CREATE TABLE rb_ez AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, $N) g ORDER BY random()"
		lo=1000; hi=$((1000 + N / 100))
	else
		sql "CREATE TABLE rb_ez AS SELECT hashint4(g) AS k, g AS v FROM generate_series(1, $N) g"
		lo=0; hi=$((2147483647 / 50))
	fi
	sql "CREATE TABLE rb_bt AS SELECT * FROM rb_ez"
	sql "CREATE INDEX ON rb_ez USING eytzgpu (k)"
	sql "CREATE INDEX ON rb_bt USING btree (k)"
	sql "VACUUM ANALYZE rb_ez"
	sql "VACUUM ANALYZE rb_bt"
	q="SELECT count(*), sum(v) FROM %s WHERE k BETWEEN $lo AND $hi"
	# warm both
	for t in rb_ez rb_bt; do ms_of "$(printf "$q" $t)" >/dev/null; ms_of "$(printf "$q" $t)" >/dev/null; done
	: >/tmp/rb_ez.$$; : >/tmp/rb_bt.$$
	for r in $(seq "$ROUNDS"); do
		ms_of "$(printf "$q" rb_ez)" >>/tmp/rb_ez.$$
		ms_of "$(printf "$q" rb_bt)" >>/tmp/rb_bt.$$
	done
	ez=$(cut -d' ' -f1 /tmp/rb_ez.$$ | median)
	bt=$(cut -d' ' -f1 /tmp/rb_bt.$$ | median)
	printf '%-9s %-44s %-44s %9.2f %9.2f %7.2f\n' $set "$(head -1 /tmp/rb_ez.$$ | cut -d' ' -f2)" \
		"$(head -1 /tmp/rb_bt.$$ | cut -d' ' -f2)" "$ez" "$bt" "$(awk -v a="$bt" -v b="$ez" 'BEGIN { print (b > 0 ? a / b : 0) }')"
	rm -f /tmp/rb_ez.$$ /tmp/rb_bt.$$
	sql "DROP TABLE rb_ez, rb_bt"
done
