-- join_parallel: the EytzGPU Join under Gather.  Each process batches its
-- share of a parallel outer scan and searches the whole index for it; every
-- join type is compared with PostgreSQL's own answer (eytzgpu.enable_join
-- off).  Parallel plans are made free so that the planner picks them; how
-- many workers start varies, so no output depends on it.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET min_parallel_index_scan_size = 0;
-- small batches: each process runs many, and the workers get rows too
SET eytzgpu.batch_size = 200;

-- inner: keys 0..19,999 with duplicates, heap order unlike key order, NULLs
CREATE TABLE jp_inner (k int4, v int4, t text);
INSERT INTO jp_inner SELECT (g * 7919) % 20000, g, 'i' || g FROM generate_series(1, 50000) g;
INSERT INTO jp_inner VALUES (NULL, -1, NULL), (NULL, -2, 'n');
CREATE INDEX jp_inner_k ON jp_inner USING eytzgpu (k);
-- outer: keys -500..21,499 (some miss), repeats, NULLs, ranges, text
CREATE TABLE jp_outer (k int4, k8 int8, x int4, lo int4, hi int4, t text);
INSERT INTO jp_outer
SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE (g * 31) % 22000 - 500 END,
	   (g * 31) % 22000 - 500, g, (g * 13) % 20000, (g * 13) % 20000 + g % 4, 'o' || g
FROM generate_series(1, 20000) g;
INSERT INTO jp_outer VALUES (NULL, NULL, -1, NULL, 5, NULL), (7, 7, -2, 7, NULL, NULL);
CREATE TABLE jp_small (m int4);
INSERT INTO jp_small VALUES (0), (1), (3);
ANALYZE jp_inner;
ANALYZE jp_outer;
ANALYZE jp_small;

-- the plans: the join under Gather, over the parallel outer scan
SELECT join_plan('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
SELECT join_plan('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k = o.k');
SELECT join_plan('SELECT o.x FROM jp_outer o WHERE EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k)');
SELECT join_plan('SELECT o.x FROM jp_outer o WHERE NOT EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k)');
SELECT join_plan('SELECT count(*), sum(i.v) FROM jp_outer o JOIN jp_inner i ON i.k BETWEEN o.lo AND o.hi');
-- a small outer table: its parallel scan alone gets 1 worker, the join's
-- heap fetches get the Gather 2
SELECT join_plan('SELECT s.m, i.v FROM jp_small s JOIN jp_inner i ON i.k = s.m');
SELECT join_check('SELECT s.m, i.v, i.t AS it FROM jp_small s JOIN jp_inner i ON i.k = s.m');

-- every join type against PostgreSQL's answer
SELECT join_check('SELECT o.x, o.t, i.v, i.t AS it FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k8');
SELECT join_check('SELECT o.x, i.v, i.ctid AS tid, i::text AS r FROM jp_outer o LEFT JOIN jp_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jp_outer o WHERE EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM jp_outer o WHERE NOT EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k)');
-- join quals, inner quals and a LEFT JOIN's pushed-down quals
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k AND i.v % 3 <> o.x % 3');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k = o.k AND i.v % 5 = 0');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k = o.k WHERE i.v IS NULL OR i.v % 4 = 1');
SELECT join_check('SELECT o.x FROM jp_outer o WHERE NOT EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k AND i.v > 25000)');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN (SELECT * FROM jp_inner WHERE v % 2 = 0) i ON i.k = o.k');
-- ranges
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k BETWEEN o.lo AND o.hi');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k >= o.lo AND i.k < o.hi');
SELECT join_check('SELECT o.x FROM jp_outer o WHERE NOT EXISTS (SELECT 1 FROM jp_inner i WHERE i.k BETWEEN o.lo AND o.hi AND i.v % 7 = 0)');
-- aggregates above the join: partial aggregates in each process
SELECT join_check('SELECT count(*) AS n, sum(i.v) AS s, count(DISTINCT o.x) AS d FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
-- the workers alone (the leader only gathers)
SET parallel_leader_participation = off;
SELECT join_check('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jp_outer o WHERE NOT EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k)');
RESET parallel_leader_participation;
-- one batch per process, and batches of one row
RESET eytzgpu.batch_size;
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
SET eytzgpu.batch_size = 1;
SELECT join_check('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k BETWEEN o.lo AND o.hi WHERE o.x % 10 = 0');
SET eytzgpu.batch_size = 200;

-- LIMIT: the leader stops reading while workers still run
SELECT count(*), bool_and(ok = ik) AS all_match
FROM (SELECT o.k AS ok, i.k AS ik FROM jp_outer o JOIN jp_inner i ON i.k = o.k LIMIT 100) s;
SELECT count(*) FROM (SELECT o.x FROM jp_outer o WHERE NOT EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k) LIMIT 10) s;

-- EXPLAIN ANALYZE: the leader's counters on the node, each worker's under
-- "Worker N" (in JSON a "Join Workers" list); the processes' lookups add up
-- to the outer rows with a key, and every process says which device answered
CREATE FUNCTION jp_explain(q text) RETURNS TABLE (procs_with_device bool, lookups bigint)
LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
	node jsonb;
	w jsonb;
	ok bool := true;
	total bigint := 0;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) ' || q INTO plan;
	FOR node IN SELECT jsonb_path_query(plan, 'strict $.**?(@."Custom Plan Provider" == "EytzGPU Join")') LOOP
		IF node ? 'Lookups' THEN
			total := total + (node->>'Lookups')::bigint;
			ok := ok AND node ? 'Device';
		END IF;
		FOR w IN SELECT jsonb_array_elements(coalesce(node->'Join Workers', '[]')) LOOP
			total := total + (w->>'Lookups')::bigint;
			ok := ok AND w ? 'Device' AND w ? 'Lookup Time' AND w ? 'Worker Number';
		END LOOP;
	END LOOP;
	RETURN QUERY SELECT ok, total;
END $$;
SELECT count(*) AS outer_rows_with_key FROM jp_outer WHERE k IS NOT NULL;
SELECT * FROM jp_explain('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
SET parallel_leader_participation = off;
SELECT * FROM jp_explain('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k = o.k');
RESET parallel_leader_participation;
-- under a LIMIT, workers that have not finished are not shown
SELECT procs_with_device FROM jp_explain('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k LIMIT 5');

-- rescans: the Gather as a nested loop's inner side (scanned once per
-- jp_small row) and inside a subplan run per row
SET enable_nestloop = on;
SET enable_material = off;
SELECT join_plan('SELECT s.m, j.x, j.v FROM jp_small s JOIN (SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k OFFSET 0) j ON j.x % 5 = s.m');
SELECT join_check('SELECT s.m, j.x, j.v FROM jp_small s JOIN (SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k OFFSET 0) j ON j.x % 5 = s.m');
SELECT * FROM jp_explain('SELECT s.m, j.x, j.v FROM jp_small s JOIN (SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k OFFSET 0) j ON j.x % 5 = s.m');
SET enable_nestloop = off;
RESET enable_material;
SELECT join_plan('SELECT s.m, (SELECT count(*) FILTER (WHERE j.x % 5 = s.m) FROM (SELECT o.x FROM jp_outer o LEFT JOIN jp_inner i ON i.k = o.k OFFSET 0) j) FROM jp_small s');
SELECT join_check('SELECT s.m, (SELECT count(*) FILTER (WHERE j.x % 5 = s.m) FROM (SELECT o.x FROM jp_outer o LEFT JOIN jp_inner i ON i.k = o.k OFFSET 0) j) FROM jp_small s');

-- parallel safety: a parallel-unsafe join qual keeps the join out of workers
CREATE FUNCTION jp_unsafe(int4) RETURNS bool LANGUAGE sql PARALLEL UNSAFE AS 'SELECT $1 % 2 = 0';
SELECT join_plan('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k AND jp_unsafe(i.v + o.x)');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k AND jp_unsafe(i.v + o.x)');

-- the serial join runs whole in a worker (its plan travels to the worker
-- as text: custom_private must read back as written)
SET parallel_setup_cost = 1e9;
-- (16 renamed force_parallel_mode to debug_parallel_query)
SELECT current_setting('server_version_num')::int >= 160000 AS debug_parallel_query \gset
\if :debug_parallel_query
SET debug_parallel_query = on;
\else
SET force_parallel_mode = on;
\endif
SELECT join_plan('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k BETWEEN o.lo AND o.hi');
SELECT join_check('SELECT o.x FROM jp_outer o WHERE NOT EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k)');
\if :debug_parallel_query
RESET debug_parallel_query;
\else
RESET force_parallel_mode;
\endif
SET parallel_setup_cost = 0;

-- the leader shares its cached image of the index with the workers; rows
-- inserted since (pending entries, which each process reads itself) and
-- deleted rows are seen alike by every process
INSERT INTO jp_inner SELECT g % 20500, -g, 'new' || g FROM generate_series(1, 3000) g;
DELETE FROM jp_inner WHERE v % 11 = 0;
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_inner i ON i.k BETWEEN o.lo AND o.hi');
SELECT join_check('SELECT o.x FROM jp_outer o WHERE NOT EXISTS (SELECT 1 FROM jp_inner i WHERE i.k = o.k)');

-- eytzgpu.page_touch_cost (0 by default) charges a worker's first touch of
-- each page of shared memory it reads (a page fault mapping it: heap pages,
-- the image); where they are dear, the serial join wins
SET eytzgpu.page_touch_cost = 1000;
SELECT join_plan('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
-- measured on this machine (whichever plan that gives)
SET eytzgpu.page_touch_cost = -1;
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_inner i ON i.k = o.k');
RESET eytzgpu.page_touch_cost;

-- index-only joins: the leader shares its cached image with the workers, a
-- covering index's included values with it (t/050_join_parallel_image.pl:
-- searched in place).  The workers alone run the join, on the CPU: a
-- backend's own GPU serves no worker (the serial GPU join would win there).
CREATE TABLE jp_plain (k int4);
INSERT INTO jp_plain SELECT g % 5000 FROM generate_series(1, 30000) g;
CREATE INDEX jp_plain_k ON jp_plain USING eytzgpu (k);
CREATE TABLE jp_cover (k int4, v int4);
INSERT INTO jp_cover SELECT g % 5000, g FROM generate_series(1, 30000) g;
CREATE INDEX jp_cover_kv ON jp_cover USING eytzgpu (k) INCLUDE (v);
VACUUM ANALYZE jp_plain;
VACUUM ANALYZE jp_cover;
SET eytzgpu.device = cpu;
SET parallel_leader_participation = off;
SELECT join_plan('SELECT o.x FROM jp_outer o JOIN jp_plain i ON i.k = o.k');
SELECT join_plan('SELECT o.x, i.v FROM jp_outer o JOIN jp_cover i ON i.k = o.k');
-- the leader caches the images (its serial join)
SET max_parallel_workers_per_gather = 0;
SELECT join_check('SELECT o.x FROM jp_outer o JOIN jp_plain i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_cover i ON i.k = o.k');
SET max_parallel_workers_per_gather = 2;
SELECT join_check('SELECT o.x FROM jp_outer o JOIN jp_plain i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_cover i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o LEFT JOIN jp_cover i ON i.k BETWEEN o.lo AND o.hi');
-- after a VACUUM (which tombstones entries)
DELETE FROM jp_plain WHERE k % 3 = 0;
DELETE FROM jp_cover WHERE v % 3 = 0;
VACUUM jp_plain;
VACUUM jp_cover;
SELECT join_check('SELECT o.x FROM jp_outer o JOIN jp_plain i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jp_outer o JOIN jp_cover i ON i.k = o.k');
RESET parallel_leader_participation;
RESET eytzgpu.device;
