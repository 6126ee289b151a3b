-- eytzgpu indexes on partitioned tables (issue 25): CREATE INDEX on the
-- parent with and without ONLY, ALTER INDEX ... ATTACH PARTITION, ATTACH and
-- DETACH [CONCURRENTLY] of partitions, new partitions getting the index,
-- REINDEX of the parent, rows moved between partitions by UPDATE; every
-- query through the leaves' eytzgpu indexes compared with a sequential scan
SET client_min_messages = warning;
\set ECHO none
\i test/sql/am_harness.inc
\set ECHO all
SET eytzgpu.device = cpu;
SELECT setseed(0.25);

-- part_check(parent, quals): each qual's rows (count and sum of row hashes)
-- by sequential scans, then by index, bitmap and index-only scans of the
-- leaves; one line per problem (a different answer, a leaf read by a
-- sequential scan), else "ok: N quals, M non-empty"
CREATE FUNCTION part_check(tbl regclass, quals text[]) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	qual text;
	q text;
	ref text;
	got text;
	plan text;
	mode text;
	bad int := 0;
	nonempty int := 0;
BEGIN
	FOREACH qual IN ARRAY quals LOOP
		FOREACH mode IN ARRAY ARRAY['Index Scan', 'Bitmap Heap Scan', 'Index Only Scan'] LOOP
			-- index-only: the key alone, so that the leaves' indexes can answer
			q := format('SELECT count(*)::text || '' '' || coalesce(sum(hashtext(%s::text)::int8), 0) FROM %s t WHERE %s',
						CASE WHEN mode = 'Index Only Scan' THEN 'k' ELSE 't' END, tbl, qual);
			PERFORM set_config('enable_seqscan', 'on', true);
			PERFORM set_config('enable_indexscan', 'off', true);
			PERFORM set_config('enable_indexonlyscan', 'off', true);
			PERFORM set_config('enable_bitmapscan', 'off', true);
			EXECUTE q INTO ref;
			IF mode = 'Index Scan' AND ref NOT LIKE '0 %' THEN
				nonempty := nonempty + 1;
			END IF;
			PERFORM set_config('enable_seqscan', 'off', true);
			-- an index-only path is costed as disabled when index scans are
			PERFORM set_config('enable_indexscan', (mode <> 'Bitmap Heap Scan')::text, true);
			PERFORM set_config('enable_indexonlyscan', (mode = 'Index Only Scan')::text, true);
			PERFORM set_config('enable_bitmapscan', (mode = 'Bitmap Heap Scan')::text, true);
			EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO plan;
			IF plan LIKE '%"Node Type": "Seq Scan"%' THEN
				RETURN NEXT format('%s: a leaf read by a sequential scan (%s asked)', qual, mode);
				bad := bad + 1;
			END IF;
			EXECUTE q INTO got;
			IF got <> ref THEN
				RETURN NEXT format('%s: %s gives %s, expected %s', qual, mode,
								   split_part(got, ' ', 1), split_part(ref, ' ', 1));
				bad := bad + 1;
			END IF;
		END LOOP;
	END LOOP;
	IF bad = 0 THEN
		RETURN NEXT format('ok: %s quals, %s non-empty', cardinality(quals), nonempty);
	END IF;
END
$$;

-- the eytzgpu index of each leaf of a partitioned index, and whether it is valid
CREATE FUNCTION part_indexes(idx regclass)
RETURNS TABLE (leaf regclass, leaf_index regclass, am name, valid bool)
LANGUAGE sql AS $$
	SELECT i.indrelid::regclass, t.relid, a.amname, i.indisvalid
	  FROM pg_partition_tree(idx) t
	  JOIN pg_index i ON i.indexrelid = t.relid
	  JOIN pg_class c ON c.oid = t.relid
	  JOIN pg_am a ON a.oid = c.relam
	 WHERE t.isleaf
	 ORDER BY 1::text
$$;

-- multi-level: range on k, one range partition hash-partitioned again, one
-- list-partitioned on another column, a default partition; duplicates,
-- NULLs (in the default partition), extremes
CREATE TABLE pt (k int4, v int4, w text) PARTITION BY RANGE (k);
CREATE TABLE pt_lo PARTITION OF pt FOR VALUES FROM (MINVALUE) TO (-1000);
CREATE TABLE pt_mid PARTITION OF pt FOR VALUES FROM (-1000) TO (1000) PARTITION BY HASH (k);
CREATE TABLE pt_mid0 PARTITION OF pt_mid FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE pt_mid1 PARTITION OF pt_mid FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE pt_mid2 PARTITION OF pt_mid FOR VALUES WITH (MODULUS 3, REMAINDER 2);
CREATE TABLE pt_hi PARTITION OF pt FOR VALUES FROM (1000) TO (5000) PARTITION BY LIST (v);
CREATE TABLE pt_hi_even PARTITION OF pt_hi FOR VALUES IN (0);
CREATE TABLE pt_hi_odd PARTITION OF pt_hi FOR VALUES IN (1);
CREATE TABLE pt_empty PARTITION OF pt FOR VALUES FROM (5000) TO (6000);
CREATE TABLE pt_def PARTITION OF pt DEFAULT;
INSERT INTO pt
SELECT CASE WHEN g % 97 = 0 THEN NULL
			WHEN g % 101 = 0 THEN (ARRAY[-2147483648, 2147483647])[1 + g % 2]
			ELSE (random() * 9000 - 3000)::int4 END,
	   g % 2, md5(g::text)
  FROM generate_series(1, 6000) g;
INSERT INTO pt SELECT k, v, w FROM pt WHERE k BETWEEN 0 AND 200;	-- duplicates
ANALYZE pt;

-- ONLY: the parent's index is invalid until every partition's is attached
CREATE INDEX pt_ez ON ONLY pt USING eytzgpu (k);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'pt_ez'::regclass;
CREATE INDEX pt_lo_ez ON pt_lo USING eytzgpu (k);
ALTER INDEX pt_ez ATTACH PARTITION pt_lo_ez;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'pt_ez'::regclass;
-- a btree cannot be attached to it
CREATE INDEX pt_def_bt ON pt_def (k);
SELECT am_error('ALTER INDEX pt_ez ATTACH PARTITION pt_def_bt');
DROP INDEX pt_def_bt;
-- the sub-partitioned levels: ONLY again, then their leaves
CREATE INDEX pt_mid_ez ON ONLY pt_mid USING eytzgpu (k);
SELECT format('CREATE INDEX %I ON %I USING eytzgpu (k)', leaf || '_ez', leaf),
	   format('ALTER INDEX pt_mid_ez ATTACH PARTITION %I', leaf || '_ez')
  FROM unnest(ARRAY['pt_mid0', 'pt_mid1', 'pt_mid2']) leaf \gexec
ALTER INDEX pt_ez ATTACH PARTITION pt_mid_ez;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'pt_ez'::regclass;
-- the rest through CREATE INDEX on each remaining partition's parent
CREATE INDEX pt_hi_ez ON pt_hi USING eytzgpu (k);
CREATE INDEX pt_empty_ez ON pt_empty USING eytzgpu (k);
CREATE INDEX pt_def_ez ON pt_def USING eytzgpu (k);
ALTER INDEX pt_ez ATTACH PARTITION pt_hi_ez;
ALTER INDEX pt_ez ATTACH PARTITION pt_empty_ez;
ALTER INDEX pt_ez ATTACH PARTITION pt_def_ez;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'pt_ez'::regclass;
SELECT * FROM part_indexes('pt_ez');
SELECT eytzgpu_verify('pt_ez', true);
SELECT * FROM part_check('pt', am_battery('pt_ez', ARRAY['-2147483648', '2147483647', '-1000', '999', '1000', '5000', '5500']));
SELECT * FROM part_check('pt', ARRAY['k = ANY(ARRAY[-1001, -1000, 0, 1, 999, 1000, 4999, 5000, NULL, 2147483647])',
									 'k IN (SELECT generate_series(-1200, 1200, 7))',
									 'k BETWEEN -1500 AND 1500 AND v = 1',
									 'k > 4000 AND k < 7000']);

-- a new partition gets the index; an attached table's own eytzgpu index is
-- attached instead of a second one being built; a table without one gets one
CREATE TABLE pt_new PARTITION OF pt FOR VALUES FROM (6000) TO (7000);
CREATE TABLE pt_own (k int4, v int4, w text);
INSERT INTO pt_own SELECT 7000 + g % 500, g % 2, 'own' FROM generate_series(1, 1000) g;
CREATE INDEX pt_own_ez ON pt_own USING eytzgpu (k);
ALTER TABLE pt ATTACH PARTITION pt_own FOR VALUES FROM (7000) TO (8000);
CREATE TABLE pt_bare (k int4, v int4, w text);
INSERT INTO pt_bare SELECT 8000 + g % 300, g % 2, 'bare' FROM generate_series(1, 600) g;
ALTER TABLE pt ATTACH PARTITION pt_bare FOR VALUES FROM (8000) TO (9000);
INSERT INTO pt SELECT 6000 + g % 400, g % 2, 'new' FROM generate_series(1, 800) g;
SELECT * FROM part_indexes('pt_ez') WHERE leaf::text IN ('pt_new', 'pt_own', 'pt_bare');
SELECT count(*) AS pt_own_indexes FROM pg_index WHERE indrelid = 'pt_own'::regclass;
SELECT * FROM part_check('pt', ARRAY['k = 6123', 'k BETWEEN 6990 AND 7010', 'k = ANY(ARRAY[7001, 8001, 8299, 8300, 6399])',
									 'k >= 7000']);

-- rows moved between partitions by UPDATE, and rows that stay
UPDATE pt SET k = k + 2500 WHERE k BETWEEN 0 AND 100;
UPDATE pt SET k = -k WHERE k BETWEEN 7000 AND 7100;
UPDATE pt SET v = 1 - v WHERE k BETWEEN 1000 AND 1500;
SELECT * FROM part_check('pt', am_battery('pt_ez', ARRAY['2500', '2600', '-7050', '1200'], true));
VACUUM pt;
SELECT * FROM part_check('pt', ARRAY['k BETWEEN -7100 AND -7000', 'k BETWEEN 2500 AND 2600', 'k = ANY(ARRAY[1, 50, 2550, -7050])']);

-- REINDEX of the parent rebuilds every leaf's index (new files)
CREATE TEMP TABLE files_before AS
SELECT leaf_index, pg_relation_filenode(leaf_index) AS file FROM part_indexes('pt_ez');
REINDEX INDEX pt_ez;
SELECT count(*) AS leaves,
	   count(*) FILTER (WHERE (eytzgpu_info(p.leaf_index)).pending = 0) AS no_pending,
	   count(*) FILTER (WHERE f.file <> pg_relation_filenode(p.leaf_index)) AS rebuilt
  FROM part_indexes('pt_ez') p JOIN files_before f USING (leaf_index);
SELECT * FROM part_check('pt', am_battery('pt_ez', '{}', true));
REINDEX TABLE pt;
SELECT eytzgpu_verify('pt_ez', true);

-- DETACH: the leaf keeps its index, now on its own; the parent stays valid
ALTER TABLE pt DETACH PARTITION pt_own;
SELECT count(*) AS pt_own_indexes, bool_and(indisvalid) AS valid
  FROM pg_index WHERE indrelid = 'pt_own'::regclass;
SELECT * FROM part_check('pt_own', ARRAY['k = 7200', 'k < 7300']);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'pt_ez'::regclass;
ALTER TABLE pt DETACH PARTITION pt_bare;
SELECT count(*) AS pt_bare_indexes FROM pg_index WHERE indrelid = 'pt_bare'::regclass;
SELECT * FROM part_check('pt', am_battery('pt_ez', ARRAY['7200', '8100'], true));
-- and back in: the detached index is attached again
ALTER TABLE pt ATTACH PARTITION pt_own FOR VALUES FROM (7000) TO (8000);
SELECT count(*) AS pt_own_indexes FROM pg_index WHERE indrelid = 'pt_own'::regclass;
SELECT * FROM part_check('pt', ARRAY['k BETWEEN 7000 AND 7999']);

-- an expression index on a partitioned table, and a partial one
CREATE INDEX pt_expr_ez ON pt USING eytzgpu ((k % 1000));
CREATE INDEX pt_part_ez ON pt USING eytzgpu (k) WHERE v = 1;
SELECT count(*) AS leaves_with_both FROM pg_partition_tree('pt_expr_ez') WHERE isleaf;
SELECT * FROM part_check('pt', ARRAY['k % 1000 = 17', 'k % 1000 BETWEEN 990 AND 999', 'k = 1234 AND v = 1']);
SELECT eytzgpu_verify('pt_expr_ez', true), eytzgpu_verify('pt_part_ez', true);

-- CREATE INDEX ... INCLUDE on a parent with a partition whose columns are in
-- another order (and a dropped one); DETACH CONCURRENTLY (no default
-- partition) leaves the leaf its index, ATTACH takes it back
CREATE TABLE po (a int4, k int8, b text) PARTITION BY LIST (b);
CREATE TABLE po_x (b text, junk int, k int8, a int4);
ALTER TABLE po_x DROP COLUMN junk;
ALTER TABLE po ATTACH PARTITION po_x FOR VALUES IN ('x');
CREATE TABLE po_y PARTITION OF po FOR VALUES IN ('y');
INSERT INTO po SELECT g, (g * 7919) % 1000 - 500, CASE WHEN g % 3 = 0 THEN 'x' ELSE 'y' END
  FROM generate_series(1, 3000) g;
CREATE INDEX po_ez ON po USING eytzgpu (k) INCLUDE (a);
SELECT * FROM part_indexes('po_ez');
SELECT * FROM part_check('po', am_battery('po_ez', ARRAY['-500', '499'], true));
SELECT count(*), sum(a) FROM po WHERE k = ANY(ARRAY[1, 2, 3, -500]::int8[]);
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*), sum(a) FROM po WHERE k = ANY(ARRAY[1, 2, 3, -500]::int8[]);
RESET enable_seqscan; RESET enable_bitmapscan;
ALTER TABLE po DETACH PARTITION po_x CONCURRENTLY;
SELECT * FROM part_indexes('po_ez');
SELECT count(*) AS po_x_indexes, bool_and(indisvalid) AS valid FROM pg_index WHERE indrelid = 'po_x'::regclass;
SELECT * FROM part_check('po', ARRAY['k = ANY(ARRAY[1, 2, 3, -500]::int8[])', 'k < 0']);
ALTER TABLE po ATTACH PARTITION po_x FOR VALUES IN ('x');
SELECT * FROM part_indexes('po_ez');
SELECT * FROM part_check('po', ARRAY['k = ANY(ARRAY[1, 2, 3, -500]::int8[])', 'k < 0']);

DROP TABLE pt, pt_bare, po;
DROP FUNCTION part_check, part_indexes, am_error, am_check, am_battery, am_explain;
