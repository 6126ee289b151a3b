-- join_heap: the heap fetch of the EytzGPU Join over many heap blocks, where
-- blocks are pinned and prefetched ahead of the one being read
-- (eytzheap.c): chunks that cut the blocks ahead short, a LIMIT and rescans
-- that leave them pinned, HOT chains, deleted and updated rows spread over
-- the pages.  Each check compares with PostgreSQL's own plan; a pin left
-- behind would show as a WARNING.
\set ECHO none
\i sql/join_harness.inc
\set ECHO all

-- 40000 inner rows over some 300 blocks, keys scattered over the heap with
-- duplicates; outer keys with repeats and misses
CREATE TABLE jh_inner (k int4, v int4, pad text) WITH (fillfactor = 70);
INSERT INTO jh_inner SELECT (g * 7919) % 20011, g, repeat('x', g % 40) FROM generate_series(1, 40000) g;
CREATE INDEX jh_inner_k ON jh_inner USING eytzgpu (k);
CREATE TABLE jh_outer (k int4, x int4);
INSERT INTO jh_outer SELECT (g::int8 * 104729) % 21000, g FROM generate_series(1, 30000) g;
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

-- HOT chains (fillfactor leaves room), non-HOT updates and deletes
UPDATE jh_inner SET v = v + 1 WHERE v % 13 = 0;
UPDATE jh_inner SET k = k + 1 WHERE v % 29 = 0;
DELETE FROM jh_inner WHERE v % 17 = 0;
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jh_outer o LEFT JOIN jh_inner i ON i.k = o.k');
SET eytzgpu.batch_size = 333;
SELECT join_check('SELECT o.x, i.v FROM jh_outer o JOIN jh_inner i ON i.k = o.k');
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

DROP TABLE jh_inner, jh_outer;
