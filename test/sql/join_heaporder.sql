-- join_heaporder: the EytzGPU Join's heap-order mode
-- (eytzgpu.join_heap_order = on): every batch's heap matches sorted by TID
-- (spilling past a tiny work_mem: many batches) and fetched in one pass,
-- LEFT and ANTI rows settled after the sorted matches.  Each check compares
-- with PostgreSQL's own plan; ho_mode tells whether the mode ran and how
-- many matches it sorted.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all

-- "sorted N" where the mode ran (N matches went through the sort), else
-- "pipelined"
CREATE FUNCTION ho_mode(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(max('sorted ' || substring(l from 'Heap Order: one pass, (\d+) matches')),
					'pipelined')
	  FROM join_plan(q, true, 'Device') l
$$;

-- keys repeated about 3 times, in an order unrelated to the heap's, NULL
-- keys and the extremes; outer keys with repeats, misses and NULLs
CREATE TABLE ho_inner (k int4, v int4, t text);
INSERT INTO ho_inner SELECT (g * 7919) % 5003, g, CASE WHEN g % 4 > 0 THEN 'v' || g END
	FROM generate_series(1, 15000) g;
INSERT INTO ho_inner VALUES (NULL, 0, 'null'), (2147483647, 1, 'max'), (-2147483648, 2, 'min');
CREATE INDEX ho_inner_k ON ho_inner USING eytzgpu (k);
CREATE TABLE ho_outer (k int4, x int4, t text, b int8);
INSERT INTO ho_outer SELECT CASE WHEN g % 13 = 0 THEN NULL ELSE (g::int8 * 104729 % 6000)::int4 END,
	g, CASE WHEN g % 3 > 0 THEN repeat('o', g % 40) END, g % 5500
	FROM generate_series(1, 8000) g;
INSERT INTO ho_outer VALUES (2147483647, -1, 'max', 0), (-2147483648, -2, 'min', 0);
VACUUM ANALYZE ho_inner;
ANALYZE ho_outer;

-- a small table: auto keeps the pipelined mode
SELECT ho_mode('SELECT count(*), sum(i.v) FROM ho_outer o JOIN ho_inner i ON i.k = o.k');

SET eytzgpu.join_heap_order = on;
SET work_mem = '64kB';
SELECT ho_mode('SELECT count(*), sum(i.v) FROM ho_outer o JOIN ho_inner i ON i.k = o.k');
SELECT ho_mode('SELECT o.x, i.v FROM ho_outer o LEFT JOIN ho_inner i ON i.k = o.k');

-- inner joins: rows kept or not, outer values by reference, join and inner quals
SELECT join_check('SELECT i.v FROM ho_outer o JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, o.t, i.v, i.t AS it FROM ho_outer o JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM ho_outer o JOIN ho_inner i ON i.k = o.k AND i.v % 3 <> o.x % 3');
SELECT join_check('SELECT o.t, i.t AS it FROM ho_outer o JOIN ho_inner i ON i.k = o.k WHERE i.v % 5 = 0');
SELECT join_check('SELECT o.x, i.ctid AS c, i.v FROM ho_outer o JOIN ho_inner i ON i.k = o.k');
-- ranges, key expressions, cross-type keys
SELECT join_check('SELECT o.x, i.v FROM ho_outer o JOIN ho_inner i ON i.k BETWEEN o.x AND o.x + 2');
SELECT join_check('SELECT i.v FROM ho_outer o JOIN ho_inner i ON i.k = o.x % 1000');
SELECT join_check('SELECT o.b, i.v FROM ho_outer o JOIN ho_inner i ON i.k = o.b');
-- LEFT: matches rejected by the join quals or the inner quals, pushed-down quals
SELECT join_check('SELECT o.x, o.t, i.v FROM ho_outer o LEFT JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM ho_outer o LEFT JOIN ho_inner i ON i.k = o.k AND i.v % 3 <> o.x % 3');
SELECT join_check('SELECT o.x, i.v FROM ho_outer o LEFT JOIN (SELECT * FROM ho_inner WHERE v % 4 = 1) i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM ho_outer o LEFT JOIN ho_inner i ON i.k = o.k AND i.v % 2 = 0 WHERE i.v IS NULL');
-- SEMI and ANTI, with join quals that reject some matches
SELECT join_check('SELECT o.x, o.t FROM ho_outer o WHERE EXISTS (SELECT 1 FROM ho_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE EXISTS (SELECT 1 FROM ho_inner i WHERE i.k = o.k AND i.v % 3 = o.x % 3)');
SELECT join_check('SELECT o.x, o.t FROM ho_outer o WHERE NOT EXISTS (SELECT 1 FROM ho_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE NOT EXISTS (SELECT 1 FROM ho_inner i WHERE i.k = o.k AND i.v % 3 = o.x % 3)');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE NOT EXISTS (SELECT 1 FROM ho_inner i WHERE i.k BETWEEN o.x AND o.x + 1 AND i.v > 7500)');

-- the snapshot: deleted and updated inner rows not vacuumed, then a
-- transaction's own changes
DELETE FROM ho_inner WHERE v % 7 = 0;
UPDATE ho_inner SET v = v + 100000 WHERE v % 5 = 0;
UPDATE ho_inner SET k = k + 1 WHERE v % 11 = 0;
SELECT join_check('SELECT o.x, i.v FROM ho_outer o JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM ho_outer o LEFT JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE NOT EXISTS (SELECT 1 FROM ho_inner i WHERE i.k = o.k)');
BEGIN;
DELETE FROM ho_inner WHERE v % 13 = 0;
INSERT INTO ho_inner SELECT g, -g, 'new' FROM generate_series(1, 3000) g;
SELECT join_check('SELECT o.x, i.v, i.t FROM ho_outer o LEFT JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE EXISTS (SELECT 1 FROM ho_inner i WHERE i.k = o.k)');
ROLLBACK;

-- index-only: the index answers the matches on all-visible pages (in the
-- batches), the heap the others (sorted); then rows changed since VACUUM
CREATE TABLE ho_cover (k int4, v int4);
INSERT INTO ho_cover SELECT (g * 7919) % 5003, g FROM generate_series(1, 15000) g;
CREATE INDEX ho_cover_kv ON ho_cover USING eytzgpu (k) INCLUDE (v);
VACUUM ANALYZE ho_cover;
SELECT ho_mode('SELECT count(*), sum(i.v) FROM ho_outer o JOIN ho_cover i ON i.k = o.k');
UPDATE ho_cover SET v = -v WHERE k % 17 = 0;
DELETE FROM ho_cover WHERE k % 19 = 0;
SELECT ho_mode('SELECT count(*), sum(i.v) FROM ho_outer o JOIN ho_cover i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM ho_outer o JOIN ho_cover i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM ho_outer o LEFT JOIN ho_cover i ON i.k = o.k AND i.v > 0');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE EXISTS (SELECT 1 FROM ho_cover i WHERE i.k = o.k AND i.v < 0)');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE NOT EXISTS (SELECT 1 FROM ho_cover i WHERE i.k = o.k AND i.v < 0)');

-- a hash-partitioned inner table: the sort key holds the leaf
CREATE TABLE ho_part (k int4, v int4) PARTITION BY HASH (k);
CREATE TABLE ho_part_0 PARTITION OF ho_part FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE ho_part_1 PARTITION OF ho_part FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE ho_part_2 PARTITION OF ho_part FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO ho_part SELECT (g * 7919) % 5003, g FROM generate_series(1, 15000) g;
CREATE INDEX ON ho_part USING eytzgpu (k);
DELETE FROM ho_part WHERE v % 9 = 0;
ANALYZE ho_part;
SELECT ho_mode('SELECT count(*), sum(i.v) FROM ho_outer o JOIN ho_part i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v, i.tableoid::regclass AS leaf FROM ho_outer o JOIN ho_part i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM ho_outer o LEFT JOIN ho_part i ON i.k = o.k AND i.v % 2 = 0');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE NOT EXISTS (SELECT 1 FROM ho_part i WHERE i.k = o.k AND i.v % 3 = 0)');
SELECT join_check('SELECT o.x, i.v FROM ho_outer o JOIN ho_part i ON i.k BETWEEN o.x AND o.x + 3');

-- rescans: the join under a nested loop whose join clause reads the
-- driving row (each scan sorts anew), with a LIMIT too; an empty outer side
SET enable_nestloop = on;
SELECT join_check('SELECT p.g, s.c, s.sv FROM generate_series(0, 3) p(g),
	LATERAL (SELECT count(*) AS c, sum(i.v) AS sv FROM ho_outer o JOIN ho_inner i
			 ON i.k = o.k AND i.v % 4 = p.g) s');
SELECT join_check('SELECT p.g, s.c FROM generate_series(0, 3) p(g),
	LATERAL (SELECT count(*) AS c FROM (SELECT o.x FROM ho_outer o JOIN ho_inner i
			 ON i.k = o.k AND i.v % 4 = p.g LIMIT 100) x) s');
SET enable_nestloop = off;
SELECT join_check('SELECT count(*) FROM (SELECT i.v FROM ho_outer o JOIN ho_inner i ON i.k = o.k LIMIT 777) s');
CREATE TABLE ho_empty (k int4);
SELECT ho_mode('SELECT count(*) FROM ho_empty o JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.k, i.v FROM ho_empty o JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.k, i.v FROM ho_empty o LEFT JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.k FROM ho_empty o WHERE NOT EXISTS (SELECT 1 FROM ho_inner i WHERE i.k = o.k)');

-- a larger work_mem: few batches, the sort in memory
SET work_mem = '4MB';
SELECT join_check('SELECT o.x, i.v FROM ho_outer o LEFT JOIN ho_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM ho_outer o WHERE EXISTS (SELECT 1 FROM ho_inner i WHERE i.k = o.k)');
RESET work_mem;
RESET eytzgpu.join_heap_order;
DROP TABLE ho_inner, ho_outer, ho_cover, ho_part, ho_empty;
DROP FUNCTION ho_mode(text);
