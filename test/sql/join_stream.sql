-- join_stream: the join reads a batch's matches from the lookup seam in
-- chunks whose size follows work_mem.  With tiny work_mem and many
-- duplicates every join type stays exact across chunks (LEFT and ANTI emit
-- the unmatched rows after the batch's last chunk), a LIMIT stops after the
-- first chunk and heap block, and a backend's memory during the join stays
-- within a bound that does not grow with the duplicates.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all

-- inner: 40 keys of 1,000 rows each, heap order unlike key order, NULLs
CREATE TABLE js_inner (k int4, v int4, t text);
INSERT INTO js_inner SELECT (g * 7) % 40, g, repeat('x', g % 17) FROM generate_series(1, 40000) g;
INSERT INTO js_inner VALUES (NULL, 0, NULL), (NULL, -1, 'n');
CREATE INDEX js_inner_k ON js_inner USING eytzgpu (k);
-- outer: keys -3..45 (some miss), repeats, NULLs, a text column (copied)
CREATE TABLE js_outer (k int4, x int4, lo int4, hi int4, t text);
INSERT INTO js_outer
SELECT (g * 11) % 49 - 3, g, g % 40, g % 40 + g % 3, 'o' || g FROM generate_series(1, 100) g;
INSERT INTO js_outer VALUES (NULL, -1, NULL, NULL, NULL), (5, -2, NULL, 7, NULL);
ANALYZE js_inner;
ANALYZE js_outer;

-- chunks of at most 64kB / 4 / 16 bytes = 1,024 matches, batches of at most
-- the rows that fit in the rest of work_mem
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
SELECT join_plan('SELECT count(*) FROM js_outer o JOIN js_inner i ON i.k = o.k', true, 'Device|Chunks|Heap Fetches|Heap Blocks');
SELECT join_check('SELECT o.x, o.t, i.v, i.t AS it FROM js_outer o JOIN js_inner i ON i.k = o.k');
-- join quals that keep few matches: most rows are unmatched after many chunks
SELECT join_check('SELECT o.x, i.v FROM js_outer o LEFT JOIN js_inner i ON i.k = o.k AND i.v % 997 = o.x');
SELECT join_check('SELECT o.x FROM js_outer o WHERE EXISTS (SELECT 1 FROM js_inner i WHERE i.k = o.k AND i.v % 997 = o.x)');
SELECT join_check('SELECT o.x FROM js_outer o WHERE NOT EXISTS (SELECT 1 FROM js_inner i WHERE i.k = o.k AND i.v % 997 = o.x)');
SELECT join_check('SELECT o.x, i.v FROM js_outer o LEFT JOIN js_inner i ON i.k = o.k WHERE i.v IS NULL OR i.v % 500 = 0');
SELECT join_check('SELECT o.x, i.v FROM js_outer o JOIN js_inner i ON i.k BETWEEN o.lo AND o.hi WHERE i.t <> o.t');
SELECT join_check('SELECT o.x FROM js_outer o WHERE NOT EXISTS (SELECT 1 FROM js_inner i WHERE i.k BETWEEN o.lo AND o.hi AND i.v > 39000)');
-- a row's matches split over many batches of one row, then of a few rows
SET eytzgpu.batch_size = 1;
SELECT join_check('SELECT o.x, i.v FROM js_outer o LEFT JOIN js_inner i ON i.k = o.k AND i.v % 997 = o.x');
SET eytzgpu.batch_size = 7;
SELECT join_check('SELECT o.x, i.v FROM js_outer o JOIN js_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM js_outer o WHERE NOT EXISTS (SELECT 1 FROM js_inner i WHERE i.k = o.k AND i.v % 997 = o.x)');
RESET eytzgpu.batch_size;

-- LIMIT stops in the first chunk (at most 1,024 matches), in its first heap block
SELECT join_plan('SELECT o.x, i.v FROM js_outer o JOIN js_inner i ON i.k = o.k LIMIT 1', true, 'Device|Matches');

-- memory: 3 outer rows whose key has 200,000 inner duplicates (600,000
-- matches, 9.6 MB as (TID, row) pairs); the backend's memory, sampled in
-- the middle of the join, stays within 1 MB of what it was before
CREATE TABLE js_dup (k int4, v int4);
INSERT INTO js_dup SELECT 7, g FROM generate_series(1, 200000) g;
INSERT INTO js_dup SELECT g, g FROM generate_series(1, 1000) g;
CREATE INDEX js_dup_k ON js_dup USING eytzgpu (k);
CREATE TABLE js_three (k int4);
INSERT INTO js_three VALUES (7), (7), (7);
ANALYZE js_dup;
ANALYZE js_three;
CREATE FUNCTION js_mem() RETURNS bigint LANGUAGE sql VOLATILE
AS 'SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts';
SELECT join_plan('SELECT count(*) FROM js_three o JOIN js_dup i ON i.k = o.k', true, 'Device|Chunks|Heap Fetches|Heap Blocks');
-- (sampled under CREATE TABLE AS: the join is the top plan node, so nothing
-- above it would free what it allocates in its caller's memory context)
SELECT js_mem() AS mem_before \gset
CREATE TEMP TABLE js_samples AS
SELECT js_mem() AS m FROM js_three o JOIN js_dup i ON i.k = o.k WHERE i.v % 50000 = 0;
SELECT count(m) AS samples, max(m) - :mem_before < 1024 * 1024 AS bounded FROM js_samples;
DROP TABLE js_samples;
SELECT join_check('SELECT o.k, i.v FROM js_three o LEFT JOIN js_dup i ON i.k = o.k AND i.v % 100000 = 0');
-- and outer values copied into a batch (text) do not pile up over batches:
-- 20,000 outer rows of 300 bytes
CREATE TABLE js_text AS
SELECT g AS x, 1 + g % 999 AS k, repeat('t', 300) || g AS t FROM generate_series(1, 20000) g;
ANALYZE js_text;
SELECT count(*) FROM js_text o JOIN js_dup i ON i.k = o.k WHERE o.k <> 7;
SELECT js_mem() AS mem_before \gset
CREATE TEMP TABLE js_samples AS
SELECT CASE WHEN o.x % 2000 = 0 THEN js_mem() END AS m, o.t
FROM js_text o JOIN js_dup i ON i.k = o.k WHERE o.k <> 7;
SELECT count(m) AS samples, max(m) - :mem_before < 1024 * 1024 AS bounded FROM js_samples;
DROP TABLE js_samples;

DROP TABLE js_inner, js_outer, js_dup, js_three, js_text;
DROP FUNCTION js_mem();
