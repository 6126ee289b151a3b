-- join_partitionwise: with enable_partitionwise_join, a join of two tables
-- partitioned alike on the join key is planned as one join per pair of
-- partitions, and each pair whose inner partition has an eytzgpu index on
-- the key can be an EytzGPU Join (under an Append).  Every answer is
-- compared with PostgreSQL's own (eytzgpu.enable_join off) on random keys
-- with duplicates, NULLs, misses and extremes, over hash, range (with a
-- default partition), list and two-level partitioning, every join type,
-- INCLUDE columns, pending entries, and a partition whose index is missing.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all
SET enable_partitionwise_join = on;
SELECT setseed(0.25);

-- hash partitioned alike, 4 ways
CREATE TABLE jw_inner (k int4, v int4, t text) PARTITION BY HASH (k);
CREATE TABLE jw_outer (k int4, x int4) PARTITION BY HASH (k);
DO $$
BEGIN
	FOR r IN 0..3 LOOP
		EXECUTE format('CREATE TABLE jw_inner_%s PARTITION OF jw_inner FOR VALUES WITH (MODULUS 4, REMAINDER %s)', r, r);
		EXECUTE format('CREATE TABLE jw_outer_%s PARTITION OF jw_outer FOR VALUES WITH (MODULUS 4, REMAINDER %s)', r, r);
	END LOOP;
END $$;
INSERT INTO jw_inner
SELECT CASE WHEN random() < 0.02 THEN NULL
			WHEN g % 1000 = 0 THEN 2147483647
			WHEN g % 1001 = 0 THEN -2147483648
			ELSE (random() * 10000)::int END, g, 'i' || g
  FROM generate_series(1, 40000) g;
INSERT INTO jw_outer
SELECT CASE WHEN random() < 0.03 THEN NULL
			WHEN g % 500 = 0 THEN 2147483647
			ELSE (random() * 10500)::int END, g
  FROM generate_series(1, 8000) g;
CREATE INDEX jw_inner_k ON jw_inner USING eytzgpu (k) INCLUDE (v);
ANALYZE jw_inner;
ANALYZE jw_outer;
SELECT * FROM join_plan('SELECT o.x, i.v FROM jw_outer o JOIN jw_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v, i.t FROM jw_outer o JOIN jw_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jw_outer o LEFT JOIN jw_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jw_outer o WHERE EXISTS (SELECT FROM jw_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM jw_outer o WHERE NOT EXISTS (SELECT FROM jw_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jw_outer o JOIN jw_inner i ON i.k = o.k AND i.v % 3 <> o.x % 3');
SELECT join_check('SELECT o.x, i.v FROM jw_outer o LEFT JOIN jw_inner i ON i.k = o.k WHERE i.v IS NULL OR i.v % 4 = 1');
SELECT join_check('SELECT count(*), sum(i.v) FROM jw_outer o JOIN jw_inner i ON i.k = o.k');
-- pending entries in some partitions' indexes, and rows deleted
INSERT INTO jw_inner SELECT (random() * 10000)::int, -g, 'p' FROM generate_series(1, 300) g;
DELETE FROM jw_inner WHERE v % 11 = 0;
SELECT sum(pending) > 0 AS has_pending
  FROM pg_partition_tree('jw_inner_k') p, eytzgpu_info(p.relid) WHERE p.isleaf;
SELECT join_check('SELECT o.x, i.v, i.t FROM jw_outer o JOIN jw_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jw_outer o WHERE NOT EXISTS (SELECT FROM jw_inner i WHERE i.k = o.k)');
-- under Gather (Parallel Append of parallel EytzGPU Joins)
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET eytzgpu.batch_size = 300;
SELECT join_check('SELECT o.x, i.v, i.t FROM jw_outer o JOIN jw_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jw_outer o LEFT JOIN jw_inner i ON i.k = o.k');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET eytzgpu.batch_size;
SET max_parallel_workers_per_gather = 0;

-- range partitions with a default partition, and one partition whose
-- eytzgpu index is missing: its pair takes another plan, the others the
-- batched join
CREATE TABLE jr_inner (k int8, v int4) PARTITION BY RANGE (k);
CREATE TABLE jr_inner_a PARTITION OF jr_inner FOR VALUES FROM (MINVALUE) TO (3000);
CREATE TABLE jr_inner_b PARTITION OF jr_inner FOR VALUES FROM (3000) TO (6000);
CREATE TABLE jr_inner_d PARTITION OF jr_inner DEFAULT;
CREATE TABLE jr_outer (k int8, x int4) PARTITION BY RANGE (k);
CREATE TABLE jr_outer_a PARTITION OF jr_outer FOR VALUES FROM (MINVALUE) TO (3000);
CREATE TABLE jr_outer_b PARTITION OF jr_outer FOR VALUES FROM (3000) TO (6000);
CREATE TABLE jr_outer_d PARTITION OF jr_outer DEFAULT;
INSERT INTO jr_inner SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE (random() * 9000)::int8 END, g
  FROM generate_series(1, 30000) g;
INSERT INTO jr_inner VALUES (9223372036854775807, -1), (-9223372036854775808, -2);
INSERT INTO jr_outer SELECT CASE WHEN g % 89 = 0 THEN NULL ELSE (random() * 9500)::int8 END, g
  FROM generate_series(1, 6000) g;
INSERT INTO jr_outer VALUES (9223372036854775807, -1), (-9223372036854775808, -2);
CREATE INDEX jr_inner_k ON ONLY jr_inner USING eytzgpu (k);
CREATE INDEX jr_inner_a_k ON jr_inner_a USING eytzgpu (k);
CREATE INDEX jr_inner_d_k ON jr_inner_d USING eytzgpu (k);
ANALYZE jr_inner;
ANALYZE jr_outer;
SELECT count(*) FILTER (WHERE l ~ 'EytzGPU Join') AS batched_pairs,
	   count(*) FILTER (WHERE l ~ 'Nested Loop|Hash Join|Merge Join') AS other_pairs,
	   count(*) FILTER (WHERE l ~ 'Index: jr_inner_b') AS b_batched
  FROM join_plan('SELECT o.x, i.v FROM jr_outer o JOIN jr_inner i ON i.k = o.k') l;
SELECT join_check('SELECT o.x, i.v FROM jr_outer o JOIN jr_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jr_outer o LEFT JOIN jr_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jr_outer o WHERE NOT EXISTS (SELECT FROM jr_inner i WHERE i.k = o.k)');
-- the missing index added: every pair is batched; the parent's index is valid
CREATE INDEX jr_inner_b_k ON jr_inner_b USING eytzgpu (k);
ALTER INDEX jr_inner_k ATTACH PARTITION jr_inner_a_k;
ALTER INDEX jr_inner_k ATTACH PARTITION jr_inner_b_k;
ALTER INDEX jr_inner_k ATTACH PARTITION jr_inner_d_k;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'jr_inner_k'::regclass;
SELECT count(*) FILTER (WHERE l ~ 'EytzGPU Join') AS batched_pairs
  FROM join_plan('SELECT o.x, i.v FROM jr_outer o JOIN jr_inner i ON i.k = o.k') l;
SELECT join_check('SELECT o.x, i.v FROM jr_outer o JOIN jr_inner i ON i.k = o.k');
SELECT eytzgpu_verify('jr_inner_k', true);

-- list partitions, the inner one partitioned again by hash
CREATE TABLE jl_inner (k int4, v int4) PARTITION BY LIST (k);
CREATE TABLE jl_inner_small PARTITION OF jl_inner FOR VALUES IN (1, 2, 3, 4, 5);
CREATE TABLE jl_inner_big PARTITION OF jl_inner FOR VALUES IN (100, 200, 300, 400) PARTITION BY HASH (v);
CREATE TABLE jl_inner_big0 PARTITION OF jl_inner_big FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE jl_inner_big1 PARTITION OF jl_inner_big FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE jl_outer (k int4, x int4) PARTITION BY LIST (k);
CREATE TABLE jl_outer_small PARTITION OF jl_outer FOR VALUES IN (1, 2, 3, 4, 5);
CREATE TABLE jl_outer_big PARTITION OF jl_outer FOR VALUES IN (100, 200, 300, 400);
INSERT INTO jl_inner SELECT (ARRAY[1, 2, 3, 4, 5, 100, 200, 300, 400])[1 + g % 9], g FROM generate_series(1, 9000) g;
INSERT INTO jl_outer SELECT (ARRAY[1, 3, 5, 100, 400])[1 + g % 5], g FROM generate_series(1, 500) g;
CREATE INDEX ON jl_inner USING eytzgpu (k);
ANALYZE jl_inner;
ANALYZE jl_outer;
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jl_outer o WHERE EXISTS (SELECT FROM jl_inner i WHERE i.k = o.k)');

DROP TABLE jw_inner, jw_outer, jr_inner, jr_outer, jl_inner, jl_outer;
