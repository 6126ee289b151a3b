-- join_basic: the EytzGPU Join custom scan against the plain plans.
-- Every check runs a query with eytzgpu.enable_join on (where the plan must
-- contain the custom node) and off, and compares the two results as
-- multisets.  Hash, merge and nested-loop joins are disabled so that the
-- custom path is chosen whenever it applies; disabled plans still run.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all

-- inner: keys 0..2999 with duplicates (k = g % 3000 for 4000 rows), NULLs
CREATE TABLE jb_inner (k int4, v int4, d date, ts timestamp, f float8, s int2);
INSERT INTO jb_inner
SELECT g % 3000, g, date '2020-01-01' + (g % 500), timestamp '2020-01-01' + (g % 700) * interval '1 day',
	   (g % 900) / 4.0, (g % 2500)::int2
FROM generate_series(1, 4000) g;
INSERT INTO jb_inner VALUES (NULL, -1, NULL, NULL, NULL, NULL), (NULL, -2, NULL, NULL, NULL, NULL);
CREATE INDEX jb_inner_k ON jb_inner USING eytzgpu (k) WITH (pending_limit = 100000);
CREATE INDEX jb_inner_d ON jb_inner USING eytzgpu (d);
CREATE INDEX jb_inner_ts ON jb_inner USING eytzgpu (ts) WITH (layout = eks, fanout = 5);
CREATE INDEX jb_inner_f ON jb_inner USING eytzgpu (f);
CREATE INDEX jb_inner_s ON jb_inner USING eytzgpu (s) WITH (layout = eks, fanout = 17);

-- outer: keys -100..3499 (some miss), duplicates, NULLs
CREATE TABLE jb_outer (k int4, k8 int8, x int4, lo int4, hi int4, d date, ts timestamp, f4 float4);
INSERT INTO jb_outer
SELECT (g * 7919) % 3600 - 100, (g * 7919) % 3600 - 100, g, (g * 31) % 3000, (g * 31) % 3000 + g % 7,
	   date '2020-01-01' + (g * 13) % 520, timestamp '2020-01-01' + ((g * 13) % 720) * interval '1 day' + (g % 2) * interval '1 hour',
	   ((g * 11) % 950) / 4.0
FROM generate_series(1, 2500) g;
INSERT INTO jb_outer SELECT k, k8, x + 10000, lo, hi, d, ts, f4 FROM jb_outer WHERE x % 10 = 0;
INSERT INTO jb_outer VALUES (NULL, NULL, -1, NULL, 5, NULL, NULL, NULL), (NULL, NULL, -2, 7, NULL, NULL, NULL, NULL);
ANALYZE jb_inner;
ANALYZE jb_outer;

-- the plan: one custom node per join type
SELECT join_plan('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_plan('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k');
SELECT join_plan('SELECT o.x FROM jb_outer o WHERE EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k)');
SELECT join_plan('SELECT o.x FROM jb_outer o WHERE NOT EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k)');
SELECT join_plan('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k BETWEEN o.lo AND o.hi');

-- equality, every join type, at several batch sizes
SET eytzgpu.batch_size = 1;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k');
SET eytzgpu.batch_size = 7;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE NOT EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k)');
SET eytzgpu.batch_size = 1000;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE o.k IN (SELECT k FROM jb_inner)');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE NOT EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k)');
RESET eytzgpu.batch_size;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON o.k = i.k');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE NOT EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k)');

-- expressions on the outer side
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k + 1');

-- ranges: BETWEEN, >= / <, > / <=, with LEFT, SEMI and ANTI
SET eytzgpu.batch_size = 100;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k BETWEEN o.lo AND o.hi');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k >= o.lo AND i.k < o.hi');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON o.lo < i.k AND o.hi >= i.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k > o.lo AND i.k <= o.hi');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE EXISTS (SELECT 1 FROM jb_inner i WHERE i.k BETWEEN o.lo AND o.hi)');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE NOT EXISTS (SELECT 1 FROM jb_inner i WHERE i.k > o.lo AND i.k < o.hi)');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k AND i.k BETWEEN o.lo AND o.hi + 3000');
RESET eytzgpu.batch_size;

-- cross-type keys
SELECT join_plan('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k8');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k8');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.s = o.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.s = o.k8');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.d = o.ts');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.ts = o.d');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.ts BETWEEN o.d AND o.d + 3');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.f = o.f4');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.d = o.d');

-- copy caches without room: every join pins a copy of its own (on the GPU
-- machine the GPU copy does not fit either, so the join falls back to the CPU
-- image) that its end frees; two joins of one query hold two at once
SET eytzgpu.image_cache_limit = 0;
SET eytzgpu.gpu_memory_limit = 0;
SELECT join_check('SELECT o.x, i.v, i2.v AS v2 FROM jb_outer o JOIN jb_inner i ON i.k = o.k JOIN jb_inner i2 ON i2.d = o.d');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.ts BETWEEN o.d AND o.d + 3');
RESET eytzgpu.image_cache_limit;
RESET eytzgpu.gpu_memory_limit;
SELECT join_check('SELECT o.x, i.v, i2.v AS v2 FROM jb_outer o JOIN jb_inner i ON i.k = o.k JOIN jb_inner i2 ON i2.d = o.d');

-- remaining join quals, inner restrictions and pushed-down quals
SELECT join_plan('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k AND i.v % 3 <> o.x % 3 WHERE i.v > 100');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k AND i.v % 3 <> o.x % 3 WHERE i.v > 100');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k AND i.v % 3 <> o.x % 3');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k AND o.x > 500');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k WHERE i.v IS NULL OR i.v > o.x');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN (SELECT * FROM jb_inner WHERE v % 2 = 0) i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k AND i.v > o.x)');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE NOT EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k AND i.v > o.x)');
SELECT join_check('SELECT o.x, i.v, i2.v AS v2 FROM jb_outer o JOIN jb_inner i ON i.k = o.k JOIN jb_inner i2 ON i2.k = i.v % 3000');

-- inner system columns and whole-row references, in the inner table's own
-- quals, the join quals and the target list: taken from the heap tuple
SELECT join_plan('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k WHERE i.ctid <> ''(0,1)''');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k WHERE i.ctid <> ''(0,1)''');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k WHERE i.xmin::text <> ''0''');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k WHERE i.tableoid <> 0');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k WHERE i IS NOT NULL');
SELECT join_check('SELECT o.x, i.ctid AS c, i.tableoid::regclass::text AS t, i.xmin::text AS xn, i.xmax::text AS xx, i FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i::text AS r FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k AND (i).v % 2 = 0 AND i.ctid > ''(3,0)''');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k WHERE i IS NULL OR i.ctid < ''(5,0)''');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k AND i.ctid > ''(2,0)'')');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE NOT EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k AND row_to_json(i)::text LIKE ''%"v":1%'')');

-- LIMIT: the first batch is small, the outer side is not read to the end
SELECT join_plan('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k LIMIT 5', true, 'Device|Matches');
SELECT count(*) FROM (SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k LIMIT 5) s;

-- inside a correlated subquery: the scan is rescanned with new parameters
SELECT join_plan('SELECT s.x, (SELECT count(*) FROM jb_outer o JOIN jb_inner i ON i.k = o.k WHERE o.x < s.x) FROM jb_outer s WHERE s.x <= 40');
SELECT join_check('SELECT s.x, (SELECT count(*) FROM jb_outer o JOIN jb_inner i ON i.k = o.k WHERE o.x < s.x) FROM jb_outer s WHERE s.x <= 40');
SELECT join_check('SELECT s.x, (SELECT sum(i.v) FROM jb_outer o JOIN jb_inner i ON i.k BETWEEN o.lo AND o.hi WHERE o.x = s.x) FROM jb_outer s WHERE s.x <= 40');

-- prepared statements, past the switch to a generic plan
PREPARE jb_p(int) AS SELECT count(*), sum(i.v) FROM jb_outer o JOIN jb_inner i ON i.k = o.k WHERE o.x < $1;
EXECUTE jb_p(100);
EXECUTE jb_p(200);
EXECUTE jb_p(300);
EXECUTE jb_p(400);
EXECUTE jb_p(500);
EXECUTE jb_p(100000);
SET eytzgpu.enable_join = off;
EXECUTE jb_p(100000);
RESET eytzgpu.enable_join;
PREPARE jb_q(int) AS SELECT count(*), sum(i.v) FROM jb_outer o JOIN jb_inner i ON i.k = o.k + $1;
EXECUTE jb_q(1);
EXECUTE jb_q(2);
EXECUTE jb_q(3);
EXECUTE jb_q(4);
EXECUTE jb_q(5);
EXECUTE jb_q(6);
SET eytzgpu.enable_join = off;
EXECUTE jb_q(6);
RESET eytzgpu.enable_join;

-- counters of EXPLAIN ANALYZE (deterministic without timing)
SET eytzgpu.batch_size = 1000;
SELECT join_plan('SELECT count(*) FROM jb_outer o JOIN jb_inner i ON i.k = o.k', true, 'Device|Chunks|Heap Fetches|Heap Blocks');
SELECT join_plan('SELECT count(*) FROM jb_outer o LEFT JOIN jb_inner i ON i.s = o.k AND i.v > 10', true, 'Device|Chunks|Heap Fetches|Heap Blocks');
RESET eytzgpu.batch_size;

-- pending entries, deletes and updates (HOT and not), then VACUUM and a merge
INSERT INTO jb_inner SELECT g % 3300, g + 100000 FROM generate_series(1, 700) g;
DELETE FROM jb_inner WHERE v % 5 = 0;
UPDATE jb_inner SET v = v + 1 WHERE v % 7 = 0;
UPDATE jb_inner SET k = k + 1 WHERE v % 11 = 0;
SELECT pending > 0 AS has_pending FROM eytzgpu_info('jb_inner_k');
SET eytzgpu.batch_size = 50;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jb_outer o WHERE NOT EXISTS (SELECT 1 FROM jb_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k BETWEEN o.lo AND o.hi');
SELECT join_check('SELECT o.x, i.ctid AS c, i FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
VACUUM jb_inner;
INSERT INTO jb_inner SELECT g % 3300, g + 200000 FROM generate_series(1, 300) g;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o LEFT JOIN jb_inner i ON i.k = o.k');
SELECT eytzgpu_merge('jb_inner_k') > 1 AS merged;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k BETWEEN o.lo AND o.hi');
-- uncommitted changes of the own transaction are seen, as by a nested loop
BEGIN;
DELETE FROM jb_inner WHERE v % 3 = 0;
INSERT INTO jb_inner SELECT g % 3000, g + 300000 FROM generate_series(1, 200) g;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
ROLLBACK;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
RESET eytzgpu.batch_size;

-- REINDEX and DROP invalidate the cached copies
REINDEX INDEX jb_inner_k;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
TRUNCATE jb_inner;
INSERT INTO jb_inner (k, v, s) SELECT g, g, g FROM generate_series(1, 100) g;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.k = o.k');
DROP INDEX jb_inner_k;
SELECT join_check('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.s = o.k');

-- the GUC turns the path off
SET eytzgpu.enable_join = off;
SELECT join_plan('SELECT o.x, i.v FROM jb_outer o JOIN jb_inner i ON i.s = o.k');
RESET eytzgpu.enable_join;

DROP TABLE jb_inner, jb_outer;
