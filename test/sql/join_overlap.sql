-- join_overlap: the join's pipeline (eytzgpu.lookup_overlap).  Where the GPU
-- answers and work_mem holds two full batches, the join reads its next batch
-- of outer rows while the GPU looks up the current one.  'always' runs the
-- same executor path on the CPU too (the CPU answers a batch's first chunk
-- when it is submitted), so that every join type, ranges, duplicates split
-- over chunks, rescans, LIMIT, the index-only join, the pending list and
-- parallel workers are compared with PostgreSQL's own answer here; on a GPU
-- machine (eytzgpu.device = 'gpu') the same checks run through the GPU's
-- asynchronous lookups.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all

-- inner: 5,000 keys with duplicates (key 7 has 3,000 rows), heap order
-- unlike key order, NULLs, included columns; entries after the build pend
CREATE TABLE jo_inner (k int4, v int4, w int4, t text);
INSERT INTO jo_inner SELECT (g * 7919) % 5000, g, g % 13, 'i' || g FROM generate_series(1, 20000) g;
INSERT INTO jo_inner SELECT 7, -g, NULL, NULL FROM generate_series(1, 3000) g;
INSERT INTO jo_inner VALUES (NULL, 0, 0, NULL);
CREATE INDEX jo_inner_k ON jo_inner USING eytzgpu (k) INCLUDE (v, w);
INSERT INTO jo_inner SELECT (g * 31) % 5200, 100000 + g, g % 5, 'p' || g FROM generate_series(1, 300) g;
DELETE FROM jo_inner WHERE v % 101 = 0;
-- outer: keys -100..5,399 (some miss), repeats, NULLs, ranges, text (copied)
CREATE TABLE jo_outer (k int4, x int4, lo int4, hi int4, t text);
INSERT INTO jo_outer
SELECT CASE WHEN g % 89 = 0 THEN NULL ELSE (g * 37) % 5500 - 100 END,
	   g, (g * 13) % 5000, (g * 13) % 5000 + g % 3, 'o' || g
FROM generate_series(1, 6000) g;
CREATE TABLE jo_small (m int4);
INSERT INTO jo_small VALUES (0), (1), (3), (4);
VACUUM ANALYZE jo_inner;
ANALYZE jo_outer;
ANALYZE jo_small;

SET eytzgpu.lookup_overlap = always;
SET work_mem = '16MB';
-- batches of 1,000 rows: six of them, each but the first looked up while
-- the next is read
SET eytzgpu.batch_size = 1000;

-- jo_overlap(q): EXPLAIN ANALYZE's Lookup Overlap of the join (0 if absent)
CREATE FUNCTION jo_overlap(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
	RETURN coalesce((SELECT (n->>'Lookup Overlap')::bigint
					 FROM json_array_elements(plan->0->'Plan'->'Plans') n
					 WHERE n->>'Custom Plan Provider' = 'EytzGPU Join'),
					(plan->0->'Plan'->>'Lookup Overlap')::bigint, 0);
END $$;

-- the pipeline runs
SELECT jo_overlap('SELECT count(*) FROM jo_outer o JOIN jo_inner i ON i.k = o.k') AS overlapped;
SELECT join_check('SELECT o.x, o.t, i.v, i.t AS it FROM jo_outer o JOIN jo_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jo_outer o LEFT JOIN jo_inner i ON i.k = o.k AND i.v % 7 = o.x % 7');
SELECT join_check('SELECT o.x FROM jo_outer o WHERE EXISTS (SELECT 1 FROM jo_inner i WHERE i.k = o.k AND i.w = o.x % 13)');
SELECT join_check('SELECT o.x FROM jo_outer o WHERE NOT EXISTS (SELECT 1 FROM jo_inner i WHERE i.k = o.k AND i.w = o.x % 13)');
SELECT join_check('SELECT o.x, i.v FROM jo_outer o JOIN jo_inner i ON i.k BETWEEN o.lo AND o.hi');
SELECT join_check('SELECT o.x FROM jo_outer o WHERE NOT EXISTS (SELECT 1 FROM jo_inner i WHERE i.k BETWEEN o.lo AND o.hi AND i.v > 19000)');
-- nothing of the row kept (the batch is its queries)
SELECT join_check('SELECT i.v, i.t FROM jo_outer o JOIN jo_inner i ON i.k = o.k');
-- the index-only join: values from the index, the rest from the heap
SELECT join_plan('SELECT o.x, i.v, i.w FROM jo_outer o JOIN jo_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v, i.w FROM jo_outer o JOIN jo_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.w FROM jo_outer o LEFT JOIN jo_inner i ON i.k = o.k AND i.v > o.x');
-- small chunks: key 7's duplicates span many chunks of a batch read ahead
SET work_mem = '1MB';
SET eytzgpu.batch_size = 50;
SELECT jo_overlap('SELECT o.x, i.v FROM jo_outer o JOIN jo_inner i ON i.k = o.k') > 0 AS overlapped;
SELECT join_check('SELECT o.x, i.v FROM jo_outer o JOIN jo_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jo_outer o LEFT JOIN jo_inner i ON i.k = o.k AND i.v % 997 = o.x');
SET work_mem = '16MB';
SET eytzgpu.batch_size = 1000;

-- the scan's first batch is not pipelined: a LIMIT it satisfies reads no
-- outer row beyond it
SELECT join_plan('SELECT o.x, i.v FROM jo_outer o JOIN jo_inner i ON i.k = o.k LIMIT 5', true, 'Device|Chunks|Matches|Heap Fetches|Heap Blocks');
-- a batch's first chunk started and never read: LIMIT stops the join, a
-- rescan (per outer value of a lateral query) starts it over
SELECT count(*) FROM (SELECT o.x, i.v FROM jo_outer o JOIN jo_inner i ON i.k = o.k LIMIT 1500) s;
SELECT join_check('SELECT s.m, x.c, x.sv FROM jo_small s CROSS JOIN
	LATERAL (SELECT count(*) AS c, sum(i.v) AS sv FROM jo_outer o JOIN jo_inner i ON i.k = o.k
			 WHERE o.x % 5 = s.m) x');
SELECT join_check('SELECT s.m, x.c FROM jo_small s CROSS JOIN
	LATERAL (SELECT count(*) AS c FROM (SELECT i.v FROM jo_outer o JOIN jo_inner i ON i.k = o.k
										WHERE o.x % 5 = s.m LIMIT 700) y) x');
-- two joins on one index, one in the other's outer side (it runs while the
-- outer one's batch is in flight)
SELECT join_check('SELECT o.x, i.v, j.v AS jv FROM jo_outer o JOIN jo_inner i ON i.k = o.k
	JOIN jo_inner j ON j.k = i.w + 100');

-- copied outer values that fill work_mem: a batch read ahead is cut short,
-- and the pipeline stops (a batch must not be smaller for it)
CREATE TABLE jo_wide AS
SELECT k, x, (SELECT string_agg(md5(x || '.' || g), '') FROM generate_series(1, 60) g) AS t
FROM jo_outer;
ANALYZE jo_wide;
SET work_mem = '1MB';
SELECT jo_overlap('SELECT o.x, o.t, i.v FROM jo_wide o JOIN jo_inner i ON i.k = o.k') < 4 AS stopped;
SELECT join_check('SELECT o.x, length(o.t), i.v FROM jo_wide o JOIN jo_inner i ON i.k = o.k');
SET work_mem = '16MB';
-- a batch size work_mem cannot hold twice: no pipeline
SET eytzgpu.batch_size = 1000000;
SET work_mem = '4MB';
SELECT jo_overlap('SELECT count(*) FROM jo_outer o JOIN jo_inner i ON i.k = o.k') AS no_overlap;
SET work_mem = '16MB';
SET eytzgpu.batch_size = 1000;
-- off: nothing overlaps
SET eytzgpu.lookup_overlap = off;
SELECT jo_overlap('SELECT count(*) FROM jo_outer o JOIN jo_inner i ON i.k = o.k') AS no_overlap;
SET eytzgpu.lookup_overlap = always;

-- parallel: each process pipelines its own share
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT join_check('SELECT o.x, i.v FROM jo_outer o JOIN jo_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jo_outer o WHERE NOT EXISTS (SELECT 1 FROM jo_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jo_outer o LEFT JOIN jo_inner i ON i.k BETWEEN o.lo AND o.hi');
RESET max_parallel_workers_per_gather;
