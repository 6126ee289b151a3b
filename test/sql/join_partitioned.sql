-- join_partitioned: the EytzGPU Join over a partitioned inner table, one
-- node whose inner side is the leaves that survive pruning, each searched
-- through its own eytzgpu index.  Where the join column is the partition
-- key each key is routed to the one leaf that can hold it, else every leaf
-- is searched.  Every answer is compared with PostgreSQL's own
-- (eytzgpu.enable_join off) on random keys with duplicates, NULLs, misses
-- and extremes: hash, range with a default partition, list, two levels
-- (on the same column and on another), leaves whose columns are ordered
-- differently, an empty leaf, pending entries, every join type, ranges,
-- cross-type keys, INCLUDE columns, pruning, LIMIT, parallel query,
-- UPDATEs moving rows, PREPARE with partitions attached and detached,
-- leaves pruned at the start by a generic plan's parameters.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all
SELECT setseed(0.5);

CREATE TABLE jt_outer (k int4, x int4, b int8);
INSERT INTO jt_outer
SELECT CASE WHEN random() < 0.03 THEN NULL
			WHEN g % 700 = 0 THEN 2147483647
			WHEN g % 701 = 0 THEN -2147483648
			ELSE (random() * 21000)::int END, g, (random() * 21000)::int8
  FROM generate_series(1, 12000) g;
ANALYZE jt_outer;

-- hash, 4 ways; one leaf attached with its columns in another order
CREATE TABLE jt_hash (k int4, v int4, t text) PARTITION BY HASH (k);
CREATE TABLE jt_hash_0 PARTITION OF jt_hash FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE jt_hash_1 PARTITION OF jt_hash FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE jt_hash_2 PARTITION OF jt_hash FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE jt_hash_3 (t text, v int4, k int4);
ALTER TABLE jt_hash ATTACH PARTITION jt_hash_3 FOR VALUES WITH (MODULUS 4, REMAINDER 3);
INSERT INTO jt_hash
SELECT CASE WHEN random() < 0.02 THEN NULL
			WHEN g % 1000 = 0 THEN 2147483647
			WHEN g % 1001 = 0 THEN -2147483648
			ELSE (random() * 20000)::int END, g, 'h' || g
  FROM generate_series(1, 50000) g;
CREATE INDEX jt_hash_k ON jt_hash USING eytzgpu (k) INCLUDE (v);
ANALYZE jt_hash;
SELECT * FROM join_plan('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT * FROM join_plan('SELECT o.x, i.v, i.t FROM jt_outer o JOIN jt_hash i ON i.k = o.k', true,
						'Device|Chunks|Heap Fetches|Heap Blocks');
SELECT join_check('SELECT o.x, i.v, i.t FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v, i.tableoid::regclass AS leaf FROM jt_outer o LEFT JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE EXISTS (SELECT 1 FROM jt_hash i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE NOT EXISTS (SELECT 1 FROM jt_hash i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k AND i.v % 3 <> o.x % 3');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_hash i ON i.k = o.k WHERE i.v IS NULL OR i.v > 100');
-- cross-type keys (int8 outer), routed exactly
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.b');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.b + 4294967296');
-- ranges: every leaf searched
SELECT * FROM join_plan('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k BETWEEN o.x AND o.x + 2');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k BETWEEN o.x AND o.x + 2');
-- an expression of the outer row, and the inner table's own quals
SELECT join_check('SELECT o.x, i.t FROM jt_outer o JOIN jt_hash i ON i.k = o.x % 5000 WHERE i.v % 2 = 0');
-- a LIMIT stops early; a rescan per outer value of the lateral query starts over
SELECT count(*) FROM (SELECT o.x FROM jt_outer o JOIN jt_hash i ON i.k = o.k LIMIT 7) s;
SELECT join_check('SELECT p.g, s.c FROM generate_series(0, 4) p(g),
	LATERAL (SELECT count(*) AS c FROM (SELECT i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k
										WHERE o.x % 5 = p.g LIMIT 900) x) s');
SELECT join_check('SELECT p.g, s.c, s.sv FROM generate_series(0, 4) p(g),
	LATERAL (SELECT count(*) AS c, sum(i.v) AS sv FROM jt_outer o LEFT JOIN jt_hash i ON i.k = o.k
			 WHERE o.x % 5 = p.g) s');
-- pending entries in two leaves, rows deleted and moved between leaves
INSERT INTO jt_hash SELECT g % 25000, -g, 'p' || g FROM generate_series(1, 3000) g;
DELETE FROM jt_hash WHERE v % 11 = 0;
UPDATE jt_hash SET k = k + 1 WHERE v % 13 = 0 AND k < 100000;
SELECT join_check('SELECT o.x, i.v, i.t FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE NOT EXISTS (SELECT 1 FROM jt_hash i WHERE i.k = o.k)');
BEGIN;
UPDATE jt_hash SET k = k + 7 WHERE v % 17 = 0 AND k < 100000;
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
ROLLBACK;
VACUUM jt_hash;
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
-- the pipeline: every leaf's share of a batch submitted and its first chunk
-- started at once (on the CPU with lookup_overlap = always), small batches
-- and chunks, the leaves' answers then taken in turn
SET eytzgpu.lookup_overlap = always;
SET eytzgpu.batch_size = 1000;
SET work_mem = '128kB';
SELECT join_check('SELECT o.x, i.v, i.t FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_hash i ON i.k = o.k AND i.v % 4 <> 1');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE NOT EXISTS (SELECT 1 FROM jt_hash i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k BETWEEN o.x AND o.x + 3');
SELECT join_check('SELECT p.g, s.c FROM generate_series(0, 4) p(g),
	LATERAL (SELECT count(*) AS c FROM (SELECT i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k
										WHERE o.x % 5 = p.g LIMIT 1500) x) s');
CREATE FUNCTION jt_overlap(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	plan text;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
	RETURN coalesce((regexp_match(plan, '"Lookup Overlap": (\d+)'))[1]::bigint, 0);
END $$;
SELECT jt_overlap('SELECT o.x, i.v, i.t FROM jt_outer o JOIN jt_hash i ON i.k BETWEEN o.x AND o.x + 3') > 0 AS overlapped;
RESET eytzgpu.lookup_overlap;
RESET eytzgpu.batch_size;
RESET work_mem;

-- range with a default partition, an empty leaf, pruning by the inner quals
CREATE TABLE jt_range (k int4, v int4) PARTITION BY RANGE (k);
CREATE TABLE jt_range_lo PARTITION OF jt_range FOR VALUES FROM (MINVALUE) TO (5000);
CREATE TABLE jt_range_mid PARTITION OF jt_range FOR VALUES FROM (5000) TO (12000);
CREATE TABLE jt_range_empty PARTITION OF jt_range FOR VALUES FROM (12000) TO (13000);
CREATE TABLE jt_range_def PARTITION OF jt_range DEFAULT;
INSERT INTO jt_range
SELECT CASE WHEN random() < 0.02 THEN NULL
			WHEN g % 997 = 0 THEN 2147483647
			ELSE (random() * 20000)::int END, g
  FROM generate_series(1, 40000) g WHERE g % 20 <> 0;
DELETE FROM jt_range WHERE k >= 12000 AND k < 13000;
CREATE INDEX jt_range_k ON jt_range USING eytzgpu (k);
ANALYZE jt_range;
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_range i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE NOT EXISTS (SELECT 1 FROM jt_range i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.b');
SELECT * FROM join_plan('SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.k < 9000');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.k < 9000');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.v > 30000');

-- list, and a leaf without an eytzgpu index: PostgreSQL's plans
CREATE TABLE jt_list (k int4, v int4) PARTITION BY LIST (k);
CREATE TABLE jt_list_a PARTITION OF jt_list FOR VALUES IN (1, 2, 3, 5, 8, 13, 21, NULL);
CREATE TABLE jt_list_b PARTITION OF jt_list FOR VALUES IN (34, 55, 89, 144, 2147483647);
CREATE TABLE jt_list_c PARTITION OF jt_list DEFAULT;
INSERT INTO jt_list SELECT (ARRAY[1, 2, 3, 5, 8, 13, 21, NULL, 34, 55, 89, 144, 2147483647, 7, 100])[1 + g % 15], g
  FROM generate_series(1, 6000) g;
CREATE INDEX jt_list_k ON jt_list USING eytzgpu (k);
ANALYZE jt_list;
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_list i ON i.k = o.x % 200');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE NOT EXISTS (SELECT 1 FROM jt_list i WHERE i.k = o.k)');
-- a leaf without an eytzgpu index (the partitioned index made ONLY, one leaf
-- left out): PostgreSQL's plans, and DEBUG1 names the leaf
CREATE TABLE jt_part (k int4, v int4) PARTITION BY RANGE (k);
CREATE TABLE jt_part_a PARTITION OF jt_part FOR VALUES FROM (MINVALUE) TO (100);
CREATE TABLE jt_part_b PARTITION OF jt_part FOR VALUES FROM (100) TO (MAXVALUE);
INSERT INTO jt_part SELECT g % 300, g FROM generate_series(1, 3000) g;
CREATE INDEX jt_part_k ON ONLY jt_part USING eytzgpu (k);
CREATE INDEX jt_part_a_k ON jt_part_a USING eytzgpu (k);
ANALYZE jt_part;
SET jit = off;
SET client_min_messages = debug1;
SELECT count(*) FROM jt_outer o JOIN jt_part i ON i.k = o.x % 500;
SET client_min_messages = warning;
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_part i ON i.k = o.x % 500');
-- pruned away, the leaf without one does not matter
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_part i ON i.k = o.x % 500 WHERE i.k < 50');
-- ... nor once it has one
CREATE INDEX jt_part_b_k ON jt_part_b USING eytzgpu (k);
ALTER INDEX jt_part_k ATTACH PARTITION jt_part_b_k;
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_part i ON i.k = o.x % 500');

-- two levels: range of hash on the same column, and list of range on another one
CREATE TABLE jt_two (k int4, g int4, v int4) PARTITION BY RANGE (k);
CREATE TABLE jt_two_lo PARTITION OF jt_two FOR VALUES FROM (MINVALUE) TO (10000) PARTITION BY HASH (k);
CREATE TABLE jt_two_lo_0 PARTITION OF jt_two_lo FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE jt_two_lo_1 PARTITION OF jt_two_lo FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE jt_two_hi PARTITION OF jt_two FOR VALUES FROM (10000) TO (MAXVALUE) PARTITION BY LIST (g);
CREATE TABLE jt_two_hi_a PARTITION OF jt_two_hi FOR VALUES IN (0, 1);
CREATE TABLE jt_two_hi_b PARTITION OF jt_two_hi DEFAULT;
CREATE TABLE jt_two_null PARTITION OF jt_two DEFAULT;
INSERT INTO jt_two
SELECT CASE WHEN random() < 0.02 THEN NULL ELSE (random() * 21000)::int END, g % 4, g
  FROM generate_series(1, 30000) g;
CREATE INDEX jt_two_k ON jt_two USING eytzgpu (k);
ANALYZE jt_two;
SELECT * FROM join_plan('SELECT o.x, i.v FROM jt_outer o JOIN jt_two i ON i.k = o.k', true, 'Device|Lookups|Matches|Heap Fetches|Heap Blocks|Chunks');
SELECT join_check('SELECT o.x, i.v, i.g FROM jt_outer o JOIN jt_two i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_two i ON i.k = o.k AND i.g <> 2');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE EXISTS (SELECT 1 FROM jt_two i WHERE i.k = o.k)');
-- partitioned on another column: every leaf gets every key
CREATE TABLE jt_other (k int4, g int4, v int4) PARTITION BY LIST (g);
CREATE TABLE jt_other_0 PARTITION OF jt_other FOR VALUES IN (0);
CREATE TABLE jt_other_1 PARTITION OF jt_other FOR VALUES IN (1, 2);
CREATE TABLE jt_other_n PARTITION OF jt_other DEFAULT;
INSERT INTO jt_other SELECT (random() * 21000)::int, g % 5, g FROM generate_series(1, 20000) g;
CREATE INDEX jt_other_k ON jt_other USING eytzgpu (k);
ANALYZE jt_other;
SELECT * FROM join_plan('SELECT o.x, i.v FROM jt_outer o JOIN jt_other i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_other i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE NOT EXISTS (SELECT 1 FROM jt_other i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_other i ON i.k = o.k WHERE i.g = 1');

-- PREPARE, then partitions detached and attached before EXECUTE
SET plan_cache_mode = force_generic_plan;
PREPARE jt_q(int) AS SELECT count(*), sum(i.v) FROM jt_outer o JOIN jt_hash i ON i.k = o.k + $1;
CREATE TEMP TABLE jt_ans AS EXECUTE jt_q(0);
SET eytzgpu.enable_join = off;
SELECT (SELECT (count, sum) FROM jt_ans) = (SELECT (count(*), sum(i.v)) FROM jt_outer o JOIN jt_hash i ON i.k = o.k) AS same;
RESET eytzgpu.enable_join;
ALTER TABLE jt_hash DETACH PARTITION jt_hash_2;
CREATE TEMP TABLE jt_ans2 AS EXECUTE jt_q(0);
SET eytzgpu.enable_join = off;
SELECT (SELECT (count, sum) FROM jt_ans2) = (SELECT (count(*), sum(i.v)) FROM jt_outer o JOIN jt_hash i ON i.k = o.k) AS same;
RESET eytzgpu.enable_join;
ALTER TABLE jt_hash ATTACH PARTITION jt_hash_2 FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TEMP TABLE jt_ans3 AS EXECUTE jt_q(0);
SELECT (SELECT (count, sum) FROM jt_ans3) = (SELECT (count, sum) FROM jt_ans) AS same;
RESET plan_cache_mode;

-- a generic plan's parameters on the inner table's own restrictions prune
-- leaves at the scan's start (a leaf they refute is not searched); each
-- answer against the same query with the values written in, extension off
CREATE FUNCTION jt_start_check(exec text, literal text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	pruned text := 'none';
	nrows bigint;
	ndiff bigint;
BEGIN
	FOR r IN EXECUTE 'EXPLAIN (COSTS OFF) ' || exec LOOP
		IF r."QUERY PLAN" ~ 'Leaves Pruned at Start: ' THEN
			pruned := substring(r."QUERY PLAN" from 'Start: (\d+)');
		END IF;
	END LOOP;
	EXECUTE 'CREATE TEMP TABLE js_on AS ' || exec;
	PERFORM set_config('eytzgpu.enable_join', 'off', true);
	EXECUTE 'CREATE TEMP TABLE js_off AS ' || literal;
	PERFORM set_config('eytzgpu.enable_join', 'on', true);
	SELECT count(*) INTO nrows FROM js_on;
	EXECUTE 'SELECT (SELECT count(*) FROM (TABLE js_on EXCEPT ALL TABLE js_off) a) +
					(SELECT count(*) FROM (TABLE js_off EXCEPT ALL TABLE js_on) b)' INTO ndiff;
	DROP TABLE js_on;
	DROP TABLE js_off;
	RETURN format('pruned at start=%s rows=%s differences=%s', pruned, nrows, ndiff);
END $$;
SET plan_cache_mode = force_generic_plan;
PREPARE jt_rq(int) AS SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.k < $1;
SELECT * FROM join_plan('EXECUTE jt_rq(5000)');
SELECT jt_start_check('EXECUTE jt_rq(5000)', 'SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.k < 5000');
SELECT jt_start_check('EXECUTE jt_rq(12500)', 'SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.k < 12500');
SELECT jt_start_check('EXECUTE jt_rq(NULL)', 'SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.k < NULL');
-- on another column than the join's (list), LEFT and ANTI, every leaf pruned
PREPARE jt_oq(int) AS SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_other i ON i.k = o.k AND i.g = $1;
SELECT jt_start_check('EXECUTE jt_oq(0)', 'SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_other i ON i.k = o.k AND i.g = 0');
SELECT jt_start_check('EXECUTE jt_oq(2)', 'SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_other i ON i.k = o.k AND i.g = 2');
SELECT jt_start_check('EXECUTE jt_oq(NULL)', 'SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_other i ON i.k = o.k AND i.g = NULL');
PREPARE jt_aq(int, int) AS SELECT o.x FROM jt_outer o WHERE NOT EXISTS
	(SELECT 1 FROM jt_other i WHERE i.k = o.k AND i.g IN ($1, $2));
SELECT jt_start_check('EXECUTE jt_aq(1, 7)', 'SELECT o.x FROM jt_outer o WHERE NOT EXISTS
	(SELECT 1 FROM jt_other i WHERE i.k = o.k AND i.g IN (1, 7))');
-- two levels, the second on another column; keys routed by the first
PREPARE jt_tq(int, int) AS SELECT o.x, i.v FROM jt_outer o JOIN jt_two i ON i.k = o.k WHERE i.g = $1 AND i.k >= $2;
SELECT jt_start_check('EXECUTE jt_tq(1, 10000)', 'SELECT o.x, i.v FROM jt_outer o JOIN jt_two i ON i.k = o.k WHERE i.g = 1 AND i.k >= 10000');
SELECT jt_start_check('EXECUTE jt_tq(5, -100)', 'SELECT o.x, i.v FROM jt_outer o JOIN jt_two i ON i.k = o.k WHERE i.g = 5 AND i.k >= -100');
DEALLOCATE jt_rq;
DEALLOCATE jt_oq;
DEALLOCATE jt_aq;
DEALLOCATE jt_tq;
RESET plan_cache_mode;

-- parallel: each process batches its share of the outer rows
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SELECT * FROM join_plan('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hash i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_two i ON i.k = o.k');
-- the workers prune by the parameters they are sent
SET plan_cache_mode = force_generic_plan;
PREPARE jt_pq(int) AS SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.k < $1;
SELECT * FROM join_plan('EXECUTE jt_pq(5000)', true) WHERE join_plan ~ 'Pruned';
SELECT count(*) AS parallel_join FROM join_plan('EXECUTE jt_pq(5000)') WHERE join_plan ~ 'Parallel Custom Scan';
SELECT jt_start_check('EXECUTE jt_pq(5000)', 'SELECT o.x, i.v FROM jt_outer o JOIN jt_range i ON i.k = o.k WHERE i.k < 5000');
DEALLOCATE jt_pq;
RESET plan_cache_mode;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;

-- a whole-row reference of a leaf is not its partitioned table's row: PostgreSQL's plans
SELECT join_check('SELECT o.x, i FROM jt_outer o JOIN jt_hash i ON i.k = o.k');

-- integer partition keys of each width, routed through their bounds read
-- once (an int8 hash key through its hash function): keys at the types'
-- extremes and on the bounds, int2 keys routed to int8 columns and back
CREATE TABLE jt_w_outer (a int2, b int8);
INSERT INTO jt_w_outer SELECT g::int2, g::int8 * 281474976710656 FROM generate_series(-32768, 32767, 7) g;
INSERT INTO jt_w_outer VALUES (32767, 9223372036854775807), (-32768, -9223372036854775808),
	(-1000, -1000), (1000, 1000), (0, 0), (NULL, NULL);
CREATE TABLE jt_w2r (k int2, v int4) PARTITION BY RANGE (k);
CREATE TABLE jt_w2r_a PARTITION OF jt_w2r FOR VALUES FROM (MINVALUE) TO (-1000);
CREATE TABLE jt_w2r_b PARTITION OF jt_w2r FOR VALUES FROM (-1000) TO (0);
CREATE TABLE jt_w2r_c PARTITION OF jt_w2r FOR VALUES FROM (0) TO (1000);
CREATE TABLE jt_w2r_d PARTITION OF jt_w2r FOR VALUES FROM (1000) TO (MAXVALUE);
CREATE TABLE jt_w2h (k int2, v int4) PARTITION BY HASH (k);
CREATE TABLE jt_w2h_0 PARTITION OF jt_w2h FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE jt_w2h_1 PARTITION OF jt_w2h FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE jt_w2h_2 PARTITION OF jt_w2h FOR VALUES WITH (MODULUS 3, REMAINDER 2);
CREATE TABLE jt_w8r (k int8, v int4) PARTITION BY RANGE (k);
CREATE TABLE jt_w8r_a PARTITION OF jt_w8r FOR VALUES FROM (MINVALUE) TO (-9223372036854775807);
CREATE TABLE jt_w8r_b PARTITION OF jt_w8r FOR VALUES FROM (-1000) TO (1000);
CREATE TABLE jt_w8r_c PARTITION OF jt_w8r FOR VALUES FROM (4294967296) TO (9223372036854775807);
CREATE TABLE jt_w8r_d PARTITION OF jt_w8r DEFAULT;
CREATE TABLE jt_w8l (k int8, v int4) PARTITION BY LIST (k);
CREATE TABLE jt_w8l_a PARTITION OF jt_w8l FOR VALUES IN (-9223372036854775808, 0, 1000, 281474976710656);
CREATE TABLE jt_w8l_b PARTITION OF jt_w8l FOR VALUES IN (9223372036854775807, -1000, -7);
CREATE TABLE jt_w8l_c PARTITION OF jt_w8l DEFAULT;
CREATE TABLE jt_w8h (k int8, v int4) PARTITION BY HASH (k);
CREATE TABLE jt_w8h_0 PARTITION OF jt_w8h FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE jt_w8h_1 PARTITION OF jt_w8h FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO jt_w2r SELECT g, g FROM generate_series(-32768, 32767, 3) g;
INSERT INTO jt_w2r VALUES (32767, 1), (-32768, 2), (-1000, 3), (1000, 4);
INSERT INTO jt_w2h SELECT k, v FROM jt_w2r UNION ALL SELECT NULL, 5;
INSERT INTO jt_w8r SELECT g::int8 * 281474976710656, g FROM generate_series(-32768, 32767, 3) g;
INSERT INTO jt_w8r VALUES (9223372036854775807, 1), (-9223372036854775808, 2), (-9223372036854775807, 3),
	(-1000, 4), (1000, 5), (4294967296, 6), (0, 7), (NULL, 8);
INSERT INTO jt_w8l SELECT k, v FROM jt_w8r;
INSERT INTO jt_w8h SELECT k, v FROM jt_w8r;
CREATE INDEX ON jt_w2r USING eytzgpu (k);
CREATE INDEX ON jt_w2h USING eytzgpu (k);
CREATE INDEX ON jt_w8r USING eytzgpu (k);
CREATE INDEX ON jt_w8l USING eytzgpu (k);
CREATE INDEX ON jt_w8h USING eytzgpu (k);
ANALYZE jt_w_outer, jt_w2r, jt_w2h, jt_w8r, jt_w8l, jt_w8h;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT count(*) AS routed FROM join_plan('SELECT o.a, i.v FROM jt_w_outer o JOIN jt_w2r i ON i.k = o.a')
 WHERE join_plan ~ 'Key Routing: partition key';
SELECT join_check('SELECT o.a, i.v FROM jt_w_outer o JOIN jt_w2r i ON i.k = o.a');
SELECT join_check('SELECT o.a, i.v FROM jt_w_outer o JOIN jt_w2h i ON i.k = o.a');
SELECT join_check('SELECT o.b, i.v FROM jt_w_outer o JOIN jt_w2r i ON i.k = o.b');
SELECT join_check('SELECT o.b, i.v FROM jt_w_outer o LEFT JOIN jt_w8r i ON i.k = o.b');
SELECT join_check('SELECT o.b, i.v FROM jt_w_outer o JOIN jt_w8l i ON i.k = o.b');
SELECT join_check('SELECT o.b, i.v FROM jt_w_outer o JOIN jt_w8h i ON i.k = o.b');
SELECT join_check('SELECT o.a, i.v FROM jt_w_outer o JOIN jt_w8r i ON i.k = o.a');
SELECT join_check('SELECT o.a FROM jt_w_outer o WHERE NOT EXISTS (SELECT 1 FROM jt_w8l i WHERE i.k = o.a)');
-- hash partitions of mixed moduli with remainders no partition takes (a
-- key of those is routed to none), routed without a call a key, and
-- inner conditions on the leaf and the partition a row lies in
CREATE TABLE jt_hm (k int4, v int4) PARTITION BY HASH (k);
CREATE TABLE jt_hm_a PARTITION OF jt_hm FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE jt_hm_b PARTITION OF jt_hm FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE jt_hm_c PARTITION OF jt_hm FOR VALUES WITH (MODULUS 8, REMAINDER 3);
INSERT INTO jt_hm SELECT g % 20000, g FROM generate_series(1, 40000) g
 WHERE satisfies_hash_partition('jt_hm'::regclass, 2, 0, g % 20000)
	OR satisfies_hash_partition('jt_hm'::regclass, 4, 1, g % 20000)
	OR satisfies_hash_partition('jt_hm'::regclass, 8, 3, g % 20000);
CREATE INDEX ON jt_hm USING eytzgpu (k) INCLUDE (v);
ANALYZE jt_hm;
SELECT count(*) AS routed FROM join_plan('SELECT o.x, i.v FROM jt_outer o JOIN jt_hm i ON i.k = o.k')
 WHERE join_plan ~ 'Key Routing: partition key';
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hm i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o LEFT JOIN jt_hm i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jt_outer o WHERE NOT EXISTS (SELECT 1 FROM jt_hm i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hm i ON i.k = o.k AND i.tableoid <> ''jt_hm_b''::regclass');
SELECT join_check('SELECT o.x, i.v FROM jt_outer o JOIN jt_hm i ON i.k = o.k WHERE satisfies_hash_partition(''jt_hm''::regclass, 2, 0, i.k)');
-- each leaf's chunks are sized for its share at the matches a key seen so
-- far: a later batch whose keys have far more duplicates takes more chunks
CREATE TABLE jt_skew (k int4, v int4) PARTITION BY HASH (k);
CREATE TABLE jt_skew_0 PARTITION OF jt_skew FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE jt_skew_1 PARTITION OF jt_skew FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO jt_skew SELECT g, g FROM generate_series(1, 20000) g;
INSERT INTO jt_skew SELECT 7, -g FROM generate_series(1, 500) g;
CREATE INDEX ON jt_skew USING eytzgpu (k) INCLUDE (v);
ANALYZE jt_skew;
CREATE TABLE jt_skew_outer (k int4, x int4);
INSERT INTO jt_skew_outer SELECT (g * 7919) % 20000 + 1, g FROM generate_series(1, 3000) g;
INSERT INTO jt_skew_outer SELECT CASE WHEN g % 10 = 0 THEN NULL ELSE 7 END, 3000 + g
  FROM generate_series(1, 60) g;
ANALYZE jt_skew_outer;
SET eytzgpu.batch_size = 2048;
SET max_parallel_workers_per_gather = 0;
SELECT count(*) AS more_chunks FROM join_plan('SELECT o.x, i.v FROM jt_skew_outer o JOIN jt_skew i ON i.k = o.k', true)
 WHERE join_plan ~ 'Chunks: ([0-9]{2,})';
SELECT join_check('SELECT o.x, i.v FROM jt_skew_outer o JOIN jt_skew i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jt_skew_outer o LEFT JOIN jt_skew i ON i.k = o.k');
RESET eytzgpu.batch_size;
RESET max_parallel_workers_per_gather;
RESET enable_hashjoin;
RESET enable_mergejoin;
