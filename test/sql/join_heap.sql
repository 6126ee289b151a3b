-- join_heap: the heap fetch of the EytzGPU Join over many heap blocks, where
-- blocks are pinned and prefetched ahead of the one being read
-- (eytzheap.c): chunks that cut the blocks ahead short, a LIMIT and rescans
-- that leave them pinned, HOT chains, deleted and updated rows spread over
-- the pages.  Each check compares with PostgreSQL's own plan; a pin left
-- behind would show as a WARNING.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all
-- the fewest local buffers (set before the session's first temporary table;
-- the temporary table below is larger)
SET temp_buffers = '800kB';

-- 40000 inner rows over some 300 blocks, keys scattered over the heap with
-- duplicates; outer keys with repeats and misses
CREATE TABLE jh_inner (k int4, v int4, pad text) WITH (fillfactor = 70, autovacuum_enabled = off);
INSERT INTO jh_inner SELECT (g * 7919) % 20011, g, repeat('x', g % 40) FROM generate_series(1, 40000) g;
CREATE INDEX jh_inner_k ON jh_inner USING eytzgpu (k);
CREATE TABLE jh_outer (k int4, x int4, n int4, t text);
INSERT INTO jh_outer SELECT (g::int8 * 104729) % 21000, g, CASE WHEN g % 3 > 0 THEN g END,
	CASE WHEN g % 5 > 0 THEN 't' || g END FROM generate_series(1, 30000) g;
VACUUM ANALYZE jh_inner;
ANALYZE jh_outer;
SELECT pg_relation_size('jh_inner') / 8192 > 200 AS many_blocks;

-- chunks of a few hundred matches: the blocks ahead end with each chunk
SET work_mem = '64kB';
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jh_outer o LEFT JOIN jh_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jh_outer o WHERE EXISTS (SELECT 1 FROM jh_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM jh_outer o WHERE NOT EXISTS (SELECT 1 FROM jh_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_inner i ON i.k BETWEEN o.k AND o.k + 3');
RESET work_mem;
SELECT join_check('SELECT o.x, i.v, i.pad FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
-- outer rows with and without NULLs among their values, matched
SELECT join_check('SELECT o.x, o.n, o.t, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, o.n IS NULL AS nn, o.t IS NULL AS tn, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k AND (o.n IS NULL OR i.v > o.n)');
SELECT join_check('SELECT o.x, o.n, o.t, i.v FROM jh_outer o LEFT JOIN jh_inner i ON i.k = o.k AND i.v % 2 = 0');

-- HOT chains (fillfactor leaves room), non-HOT updates and deletes
UPDATE jh_inner SET v = v + 1 WHERE v % 13 = 0;
UPDATE jh_inner SET k = k + 1 WHERE v % 29 = 0;
DELETE FROM jh_inner WHERE v % 17 = 0;
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jh_outer o LEFT JOIN jh_inner i ON i.k = o.k');
SET eytzgpu.batch_size = 333;
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
RESET eytzgpu.batch_size;
-- nothing per match reads the outer row: the batch keeps only its queries,
-- against whose ranges the fetched keys are rechecked
SELECT join_check('SELECT i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
SELECT join_check('SELECT i.k, i.v FROM jh_outer o JOIN jh_inner i ON i.k BETWEEN o.k AND o.k + 3');
SELECT join_check('SELECT i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.n');
SET eytzgpu.batch_size = 333;
SET work_mem = '64kB';
SELECT join_check('SELECT i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
SELECT join_check('SELECT i.k FROM jh_outer o JOIN jh_inner i ON i.k > o.k - 2 AND i.k <= o.k + 1');
RESET work_mem;
RESET eytzgpu.batch_size;

-- a LIMIT stops the join with blocks pinned ahead; a rescan per outer value
-- of the lateral query starts over (counts: LIMIT picks any rows)
SELECT join_check('SELECT count(*) FROM (SELECT o.x, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k LIMIT 1500) s');
SELECT join_check('SELECT p.g, s.c FROM generate_series(0, 4) p(g),
	LATERAL (SELECT count(*) AS c FROM (SELECT i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k
										WHERE o.x % 5 = p.g LIMIT 2000) x) s');
SELECT join_check('SELECT p.g, s.c FROM generate_series(0, 4) p(g),
	LATERAL (SELECT count(*) AS c, sum(i.v) AS sv FROM jh_outer o JOIN jh_inner i ON i.k = o.k
			 WHERE o.x % 5 = p.g) s');

-- VACUUM truncates the emptied end of the table; the join reads none of it
SELECT pg_relation_size('jh_inner') AS size_before \gset
DELETE FROM jh_inner WHERE ctid >= (SELECT format('(%s,0)', pg_relation_size('jh_inner') / 8192 / 2)::tid);
VACUUM jh_inner;
SELECT pg_relation_size('jh_inner') < :size_before AS truncated;
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');

-- pages marked all-visible (VACUUM after HOT updates): a TID resolves to
-- its chain's first tuple, through the redirect VACUUM left, without a
-- visibility check; an update in the transaction clears its pages' mark and
-- those are checked tuple by tuple again; a serializable transaction checks
-- every page
CREATE TABLE jh_av (k int4, v int4, pad text) WITH (fillfactor = 60);
INSERT INTO jh_av SELECT (g * 7919) % 12007, g, repeat('z', g % 30) FROM generate_series(1, 24000) g;
CREATE INDEX jh_av_k ON jh_av USING eytzgpu (k);
UPDATE jh_av SET v = v + 1 WHERE v % 3 = 0;
UPDATE jh_av SET v = v + 1 WHERE v % 9 = 1;
DELETE FROM jh_av WHERE v % 23 = 0;
VACUUM ANALYZE jh_av;
SELECT relallvisible = relpages AS all_visible FROM pg_class WHERE relname = 'jh_av';
SELECT join_check('SELECT o.x, i.v, i.pad FROM jh_outer o JOIN jh_av i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jh_outer o LEFT JOIN jh_av i ON i.k BETWEEN o.k AND o.k + 2');
BEGIN;
UPDATE jh_av SET v = -v WHERE k % 40 = 0;
INSERT INTO jh_av SELECT g % 12007, -g FROM generate_series(1, 500) g;
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_av i ON i.k = o.k');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_av i ON i.k = o.k');
COMMIT;
DROP TABLE jh_av;

DROP TABLE jh_inner, jh_outer;

-- blocks read again by later batches and chunks, and by rescans, after
-- they left the buffers they were read into: a temporary inner table of
-- some 400 blocks in 100 local buffers
CREATE TEMP TABLE jh_tinner (k int4, v int4, pad text);
INSERT INTO jh_tinner SELECT (g * 7919) % 20011, g, repeat('y', g % 60) FROM generate_series(1, 40000) g;
CREATE INDEX jh_tinner_k ON jh_tinner USING eytzgpu (k);
UPDATE jh_tinner SET v = -v WHERE v % 11 = 0;
DELETE FROM jh_tinner WHERE v % 19 = 0;
CREATE TEMP TABLE jh_touter (k int4, x int4, t text);
INSERT INTO jh_touter SELECT (g::int8 * 104729) % 21000, g, CASE WHEN g % 7 > 0 THEN 't' || g END
	FROM generate_series(1, 30000) g;
ANALYZE jh_tinner;
ANALYZE jh_touter;
SELECT pg_relation_size('jh_tinner') / 8192 > 300 AS many_blocks;
SET eytzgpu.batch_size = 2000;
SELECT join_check('SELECT o.x, o.t, i.v FROM jh_touter o JOIN jh_tinner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jh_touter o LEFT JOIN jh_tinner i ON i.k = o.k AND i.v > 0');
SELECT join_check('SELECT o.x FROM jh_touter o WHERE NOT EXISTS (SELECT 1 FROM jh_tinner i WHERE i.k = o.k AND i.v < 0)');
SET work_mem = '64kB';
SELECT join_check('SELECT o.x, i.v, i.pad FROM jh_touter o JOIN jh_tinner i ON i.k BETWEEN o.k AND o.k + 2');
RESET work_mem;
SELECT join_check('SELECT p.g, s.c, s.sv FROM generate_series(0, 2) p(g),
	LATERAL (SELECT count(*) AS c, sum(i.v) AS sv FROM jh_touter o JOIN jh_tinner i ON i.k = o.k
			 WHERE o.x % 3 = p.g) s');
RESET eytzgpu.batch_size;
DROP TABLE jh_tinner, jh_touter;

-- the CPU image search (eytzimage.c) over layouts of several fan-outs: each
-- query starts below the levels it shares with the one before; repeated
-- outer keys share whole paths, inner keys repeat over several levels,
-- ranges overlap, some keys miss
SET eytzgpu.device = cpu;
-- (a shared image, on a server that preloads the extension, is the image view)
CREATE FUNCTION jh_device(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(max(replace(substring(l from 'Device: (.*)$'), ' (shared image)', '')), 'no eytzgpu join')
	  FROM join_plan(q, true, 'Lookups') l
$$;
CREATE TABLE jh_dup (k int8, v int4);
INSERT INTO jh_dup SELECT (g * 31) % 97, g FROM generate_series(1, 3000) g;
INSERT INTO jh_dup SELECT g, -g FROM generate_series(-50, 400) g;
INSERT INTO jh_dup VALUES (9223372036854775807, 1), (-9223372036854775808, 2), (NULL, 3);
CREATE TABLE jh_q (x int4, lo int8, hi int8);
INSERT INTO jh_q SELECT g, (g * 7) % 480 - 60, (g * 7) % 480 - 60 + g % 5 FROM generate_series(1, 4000) g;
INSERT INTO jh_q VALUES (-1, 9223372036854775807, 9223372036854775807), (-2, -9223372036854775808, -9223372036854775807);
ANALYZE jh_dup;
ANALYZE jh_q;
CREATE INDEX jh_dup_k ON jh_dup USING eytzgpu (k) WITH (layout = ebs);
SELECT jh_device('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k = q.lo');
SELECT join_check('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k = q.lo');
SELECT join_check('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k BETWEEN q.lo AND q.hi');
DROP INDEX jh_dup_k;
CREATE INDEX jh_dup_k ON jh_dup USING eytzgpu (k) WITH (layout = eks, fanout = 3);
SELECT jh_device('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k = q.lo');
SELECT join_check('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k = q.lo');
SELECT join_check('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k BETWEEN q.lo AND q.hi');
DROP INDEX jh_dup_k;
CREATE INDEX jh_dup_k ON jh_dup USING eytzgpu (k) WITH (layout = eks, fanout = 33);
SELECT jh_device('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k = q.lo');
SELECT join_check('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k = q.lo');
SELECT join_check('SELECT q.x, d.v FROM jh_q q JOIN jh_dup d ON d.k BETWEEN q.lo AND q.hi');
-- chunks cut between queries that share their paths
SET work_mem = '64kB';
SELECT join_check('SELECT q.x, d.v FROM (SELECT * FROM jh_q WHERE x > 0) q JOIN jh_dup d ON d.k BETWEEN q.lo AND q.hi + 20');
RESET work_mem;
RESET eytzgpu.device;
DROP FUNCTION jh_device(text);
DROP TABLE jh_dup, jh_q;
