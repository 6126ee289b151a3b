#!/usr/bin/env python3
"""
scripts/fuzz_join.py: a randomized differential campaign against a running
server with eytzgpu installed (psql through PGHOST/PGPORT/PGUSER/PGDATABASE).

    scripts/fuzz_join.py SEED [ROUNDS]

One seed draws a key type (int4, int8, float8, date, timestamp), table sizes
(0 to 200k inner rows, 0 to 50k outer rows), a key span (so duplicates from
none to thousands a key), NULL keys and values, extremes, and an eytzgpu
index with or without INCLUDE, and whether the inner table is one table or
partitioned (hash, or range on the key with a default partition; 2 to 6
leaves: the join then searches the leaves, keys routed by the partition
key, and UPDATEs of the key move rows between leaves).  Each round sets random executor limits
(work_mem, eytzgpu.batch_size, the direct outer scan, the image cache, the
pipeline: lookup_overlap = always makes the CPU answer chunks started ahead,
a partitioned table's leaves all at once), runs
four join shapes through test/sql/join_harness.inc's join_check (the eytzgpu join
against PostgreSQL's own plan: inner, LEFT, semi, anti, range joins, join and
inner quals, system and TOASTable columns) and two index or index-only scans
against a seq scan, then changes the tables (inserts, updates of values and
keys, deletes, then VACUUM, eytzgpu_merge or REINDEX).  FUZZ_DEVICE=gpu runs
the joins on the GPU; FUZZ_BIG=1 takes 200k-1M inner and 300k-600k outer
rows (batches the GPU stages on several threads). FUZZ_HEAP_ORDER=on (or off)
sets eytzgpu.join_heap_order: every join's heap matches sorted by TID and
fetched in one pass.  Exits 1 on any
difference, 2 on an SQL error; the seed reproduces the campaign.  Not part
of the test suite (a campaign takes minutes); the suite's own differential
tests are in test/sql and test/t.
"""
import os
import random
import subprocess
import sys

seed = int(sys.argv[1]) if len(sys.argv) > 1 else random.randrange(1 << 30)
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
rnd = random.Random(seed)
here = os.path.dirname(os.path.abspath(__file__))
harness = os.path.join(here, "..", "test", "sql", "join_harness.inc")


def run(sql):
    p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"],
                       input=sql, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"SQL error, seed {seed}:\n{p.stderr[-3000:]}\n--- the script's end:\n{sql[-3000:]}")
        sys.exit(2)
    return p.stdout


ktype = rnd.choice(["int4", "int8", "int4", "date", "timestamp", "float8"])


def key(e):
    """SQL of the key whose integer rank is the SQL expression e"""
    if ktype == "date":
        return f"(date '2000-01-01' + ({e})::int)"
    if ktype == "timestamp":
        return f"(timestamp '2000-01-01' + ({e}) * interval '1 hour')"
    if ktype == "float8":
        return f"(({e})::float8 / 4)"
    return f"({e})::{ktype}"


big = os.environ.get("FUZZ_BIG") == "1"
# (dates: 2000-01-01 less a quarter of the span stays after 4713 BC)
span = rnd.choice([50, 1000, 100000, 2000000] if not big else
                  [1000000, 20000000 if ktype != "date" else 2000000])
n = rnd.choice([0, 1, 7, 500, 5000, 60000, 200000] if not big else [200000, 1000000])
m = rnd.choice([0, 1, 100, 3000, 50000] if not big else [300000, 600000])
include = rnd.random() < 0.7
columns = "v, w, d" if rnd.random() < 0.5 else "v"
nullfrac = rnd.choice([0, 0.01, 0.2])
# joined rows about n * m / span: answers small enough to compare
while m > 1 and n * m / span > 3000000:
    m //= 4
partitioning = rnd.choice(["none", "none", "hash", "range"])
nparts = rnd.randrange(2, 7)
extremes = [0, -1, span, span - 1] + ([2147483647, -2147483648] if ktype in ("int4", "int8") else [7, -7])

def partition_clause():
    """the inner table's PARTITION BY clause and its leaves, or ';'"""
    if partitioning == "none":
        return ";"
    if partitioning == "hash":
        return " PARTITION BY HASH (k);\n" + "".join(
            f"CREATE TABLE ft_p{i} PARTITION OF ft FOR VALUES WITH (MODULUS {nparts}, REMAINDER {i});\n"
            for i in range(nparts))
    bounds = sorted(rnd.sample(range(-span // 4, span), nparts - 1)) if span > nparts else list(range(nparts - 1))
    edges = ["MINVALUE"] + [key(str(b)) for b in bounds] + ["MAXVALUE"]
    return " PARTITION BY RANGE (k);\n" + "".join(
        f"CREATE TABLE ft_p{i} PARTITION OF ft FOR VALUES FROM ({edges[i]}) TO ({edges[i + 1]});\n"
        for i in range(nparts) if edges[i] != edges[i + 1]) + "CREATE TABLE ft_def PARTITION OF ft DEFAULT;\n"


setup = f"""
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS eytzgpu;
DROP TABLE IF EXISTS ft, fo;
CREATE TABLE ft (k {ktype}, v int4, w float8, d date, pad text){partition_clause()}
CREATE TABLE fo (k {ktype}, x int4);
INSERT INTO ft SELECT
  CASE WHEN random() < {nullfrac} THEN NULL ELSE {key(f"floor(random() * {span})::bigint - {span // 4}")} END,
  CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 1000)::int END, random(),
  CASE WHEN random() < 0.1 THEN NULL ELSE date '2020-01-01' + (random() * 100)::int END,
  CASE WHEN random() < 0.3 THEN repeat('p', (random() * 300)::int) END
FROM generate_series(1, {n});
INSERT INTO ft VALUES {", ".join(f"({key(str(e))}, {rnd.randrange(100)}, 0.5, NULL, NULL)" for e in extremes)};
INSERT INTO fo SELECT
  CASE WHEN random() < {nullfrac} THEN NULL ELSE {key(f"floor(random() * {span} * 1.1)::bigint - {span // 4}")} END, g
FROM generate_series(1, {m}) g;
CREATE INDEX ft_ez ON ft USING eytzgpu (k){f" INCLUDE ({columns})" if include else ""};
{"VACUUM ANALYZE ft;" if rnd.random() < 0.5 else "ANALYZE ft;"}
ANALYZE fo;
"""
run(setup)


def changes():
    """SQL of a few random changes to the tables, then maybe maintenance"""
    s = ""
    # eytzgpu_merge() takes a leaf index
    merge = ("SELECT eytzgpu_merge('ft_ez') IS NOT NULL;\n" if partitioning == "none" else
             "SELECT bool_and(eytzgpu_merge(relid) IS NOT NULL) FROM pg_partition_tree('ft_ez') WHERE isleaf;\n")
    for _ in range(rnd.randrange(1, 4)):
        c = rnd.random()
        frac = rnd.choice([0.001, 0.05, 0.3])
        if c < 0.35:
            s += (f"INSERT INTO ft SELECT {key(f'floor(random() * {span})::bigint')}, (random() * 1000)::int, "
                  f"random(), NULL, NULL FROM generate_series(1, {rnd.choice([1, 10, 300, 3000])});\n")
        elif c < 0.6:
            s += (f"UPDATE ft SET v = CASE WHEN random() < 0.2 THEN NULL ELSE coalesce(v, 0) + 1 END "
                  f"WHERE random() < {frac};\n")
        elif c < 0.75:
            step = {"date": "1", "timestamp": "interval '1 hour'"}.get(ktype, f"{key('1')} - {key('0')}")
            s += f"UPDATE ft SET k = k + {step} WHERE k < {key('1000000000')} AND random() < {min(frac, 0.05)};\n"
        elif c < 0.9:
            s += f"DELETE FROM ft WHERE random() < {frac};\n"
        else:
            s += "DELETE FROM fo WHERE random() < 0.1; INSERT INTO fo SELECT k, 0 FROM ft WHERE random() < 0.01;\n"
    s += rnd.choices(["VACUUM ft;\n", merge, "REINDEX INDEX ft_ez;\n",
                      "VACUUM ANALYZE ft;\n", ""], weights=[20, 10, 5, 10, 55])[0]
    return s


width = rnd.choice([0, 1, 3])
joins = [
    "SELECT o.k, o.x, t.v FROM fo o JOIN ft t ON t.k = o.k",
    "SELECT count(*), sum(t.v) FROM fo o JOIN ft t ON t.k = o.k",
    "SELECT o.x, t.v, t.d FROM fo o LEFT JOIN ft t ON t.k = o.k",
    "SELECT o.x FROM fo o WHERE EXISTS (SELECT 1 FROM ft t WHERE t.k = o.k)",
    "SELECT o.x FROM fo o WHERE NOT EXISTS (SELECT 1 FROM ft t WHERE t.k = o.k)",
    "SELECT o.x, t.v FROM fo o JOIN ft t ON t.k = o.k AND t.v > o.x % 500",
    "SELECT o.x, t.w FROM fo o JOIN ft t ON t.k = o.k WHERE t.v IS NULL OR t.v < 100",
    "SELECT t.k, t.v, t.w FROM fo o JOIN ft t ON t.k = o.k WHERE o.x % 3 = 0",
    "SELECT o.x, t.ctid AS tid FROM fo o JOIN ft t ON t.k = o.k",
    "SELECT o.x, length(t.pad) FROM fo o JOIN ft t ON t.k = o.k",
]
if ktype in ("int4", "int8"):
    joins += [f"SELECT o.x, t.v FROM fo o JOIN ft t ON t.k >= o.k AND t.k <= o.k + {width}",
              f"SELECT o.x, count(t.v) FROM fo o LEFT JOIN ft t ON t.k > o.k AND t.k < o.k + {width + 2} GROUP BY o.x"]
scans = [f"SELECT k, v FROM ft WHERE k BETWEEN {key(str(a))} AND {key(str(a + w))}"
         for a, w in [(rnd.randrange(-span // 4, span), rnd.choice([0, 5, span // 10])) for _ in range(2)]]
scans += [f"SELECT k FROM ft WHERE k < {key(str(rnd.randrange(span)))}",
          f"SELECT count(*) FROM ft WHERE k >= {key(str(rnd.randrange(span)))}"]


def scan_check(i, q):
    """
    SQL that prints the plan of q through the index (between "P begin" and
    "P end") and the multiset difference of its answer and a seq scan's
    """
    return f"""SET enable_seqscan = off; SET enable_bitmapscan = {rnd.choice(['on', 'off'])};
SET enable_indexonlyscan = {rnd.choice(['on', 'off'])};
SELECT '{i} P begin';
EXPLAIN (COSTS OFF) {q};
SELECT '{i} P end';
CREATE TEMP TABLE s_on AS {q};
RESET enable_seqscan; SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
CREATE TEMP TABLE s_off AS {q};
RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_indexonlyscan;
SELECT '{i} S differences=' || ((SELECT count(*) FROM (TABLE s_on EXCEPT ALL TABLE s_off) a) +
  (SELECT count(*) FROM (TABLE s_off EXCEPT ALL TABLE s_on) b));
DROP TABLE s_on, s_off;
"""


differences = used = checked = scan_checks = indexed = 0
for i in range(rounds):
    script = f"\\i {harness}\n"
    script += (f"SET work_mem = '{rnd.choice(['64kB', '1MB', '64MB'])}'; "
               f"SET eytzgpu.batch_size = {rnd.choice([1, 17, 1024, 1048576] if not big else [1024, 1048576])}; "
               f"SET eytzgpu.direct_outer = {rnd.choice(['on', 'off'])}; "
               f"SET eytzgpu.image_cache_limit = {rnd.choice([0, 1024])}; "
               f"SET eytzgpu.lookup_overlap = {rnd.choice(['on', 'always'])};\n")
    if os.environ.get("FUZZ_DEVICE"):
        script += f"SET eytzgpu.device = {os.environ['FUZZ_DEVICE']};\n"
    if os.environ.get("FUZZ_HEAP_ORDER"):
        script += f"SET eytzgpu.join_heap_order = {os.environ['FUZZ_HEAP_ORDER']};\n"
    for q in rnd.sample(joins, 4):
        script += f"SELECT '{i} J ' || join_check($q${q}$q$);\n"
    for q in rnd.sample(scans, 2):
        script += scan_check(i, q)
    in_plan = False
    for line in run(script).splitlines():
        if line.endswith(" P begin"):
            in_plan, on_index = True, False
        elif line.endswith(" P end"):
            in_plan = False
            scan_checks += 1
            indexed += on_index
        elif in_plan:
            on_index |= "ft_ez" in line or (partitioning != "none" and "Index" in line)
        if " J custom=" in line:
            checked += 1
            used += " J custom=t " in line
        if "differences=" in line and not line.endswith("differences=0"):
            print(f"DIFFERENCE seed {seed} ({ktype}, {n} x {m}, span {span}, include {include}, "
                  f"partitioning {partitioning}): {line}")
            differences += 1
    run(changes())
print(f"seed {seed}: {ktype} keys, {n} x {m} rows, span {span}, include {include}, "
      f"partitioning {partitioning}{'' if partitioning == 'none' else f' ({nparts})'}: {rounds} rounds, "
      f"the eytzgpu join in {used} of {checked} join checks, the index in {indexed} of {scan_checks} scan checks, "
      f"{differences} differences")
sys.exit(1 if differences else 0)
