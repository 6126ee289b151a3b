-- am_dml: eytzgpu under data changes.  After inserts (pending list), deletes,
-- updates (HOT and not), rollbacks, VACUUM, merges (explicit and automatic),
-- REINDEX [CONCURRENTLY], CREATE INDEX CONCURRENTLY, TRUNCATE, VACUUM FULL,
-- every qual gives the same rows through the index as without it, and
-- eytzgpu_verify() passes.  Also unlogged tables, expression and partial
-- indexes, and an index that starts empty.
SET client_min_messages = warning;
\set ECHO none
\i test/sql/am_harness.inc
\set ECHO all
SELECT setseed(0.75);

CREATE TABLE dml (k int4, v serial);
INSERT INTO dml (k) SELECT (random() * 20000)::int4 - 10000 FROM generate_series(1, 6000);
CREATE INDEX dml_idx ON dml USING eytzgpu (k) WITH (layout = eks, fanout = 9, pending_limit = 100000);
-- a second table whose index merges every 16 inserts
CREATE TABLE dml_small (k int8, v serial);
INSERT INTO dml_small (k) SELECT (random() * 500)::int8 FROM generate_series(1, 300);
CREATE INDEX dml_small_idx ON dml_small USING eytzgpu (k) WITH (layout = ebs, pending_limit = 16);

-- inserts: pending entries, NULLs ignored
INSERT INTO dml (k) SELECT (random() * 20000)::int4 - 10000 FROM generate_series(1, 1500);
INSERT INTO dml (k) SELECT NULL FROM generate_series(1, 10);
INSERT INTO dml (k) SELECT 4242 FROM generate_series(1, 50);
SELECT entries, pending, dead FROM eytzgpu_info('dml_idx');
SELECT eytzgpu_verify('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', ARRAY['4242', '-10000', '10000']));

-- one statement merges at every pending_limit entries: with no other
-- reader, each merge recycles the generation the last one retired, so the
-- file holds one layout and a short pending list
INSERT INTO dml_small (k) SELECT (random() * 500)::int8 FROM generate_series(1, 1000);
SELECT entries + pending AS indexed, pending < 16 AS pending_bounded, generation > 60 AS merged,
	   pg_relation_size('dml_small_idx') <= 8 * 8192 AS one_layout
  FROM eytzgpu_info('dml_small_idx');
SELECT eytzgpu_verify('dml_small_idx');
SELECT * FROM am_check('dml_small_idx', am_battery('dml_small_idx', ARRAY['0', '500'], true));
-- with a reader of the index open in the transaction (a cursor), it merges
-- once (the generation it retired stays readable until the transaction
-- ends, and further merges would each leave a layout behind); the rest
-- waits in the pending list for the next transaction's first insert
BEGIN;
SET LOCAL enable_seqscan = off;
DECLARE reader CURSOR FOR SELECT k FROM dml_small WHERE k = 7;
INSERT INTO dml_small (k) SELECT (random() * 500)::int8 FROM generate_series(1, 200);
SELECT entries + pending AS indexed, pending > 150 AS pending_kept
  FROM eytzgpu_info('dml_small_idx');
COMMIT;
-- inserts in separate transactions merge every 16 entries
\set ECHO none
SELECT 'INSERT INTO dml_small (k) SELECT (random() * 500)::int8 FROM generate_series(1, 10)'
  FROM generate_series(1, 30) \gexec
\set ECHO all
SELECT entries + pending AS indexed, pending < 16 AS merged, generation > 10 AS many_merges
  FROM eytzgpu_info('dml_small_idx');
SELECT eytzgpu_verify('dml_small_idx');
SELECT * FROM am_check('dml_small_idx', am_battery('dml_small_idx', ARRAY['0', '500'], true));

-- a rolled-back insert leaves entries for dead tuples behind
BEGIN;
INSERT INTO dml (k) SELECT 777 FROM generate_series(1, 100);
ROLLBACK;
INSERT INTO dml (k) VALUES (777);
SELECT * FROM am_check('dml_idx', ARRAY['k = 777', 'k BETWEEN 700 AND 800']);

-- deletes and updates, before VACUUM
DELETE FROM dml WHERE v % 3 = 0;
UPDATE dml SET k = k + 1 WHERE v % 5 = 0;
UPDATE dml SET v = -v WHERE v % 7 = 1;
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', ARRAY['4242', '4243']));

-- VACUUM tombstones the dead entries and merges everything
VACUUM dml;
SELECT entries, pending, dead FROM eytzgpu_info('dml_idx');
SELECT (SELECT count(k) FROM dml) = (SELECT entries FROM eytzgpu_info('dml_idx')) AS counts_match;
SELECT eytzgpu_verify('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', ARRAY['4242', '4243']));

-- bulkdelete without the merge: delete, then only the tombstones
DELETE FROM dml WHERE k BETWEEN 0 AND 1000;
INSERT INTO dml (k) SELECT g FROM generate_series(0, 1000, 10) g;
VACUUM (INDEX_CLEANUP on) dml;
SELECT eytzgpu_verify('dml_idx');
SELECT * FROM am_check('dml_idx', ARRAY['k BETWEEN 0 AND 1000', 'k = 500', 'k = 501', 'k > 990']);

-- explicit merge of pending entries
INSERT INTO dml (k) SELECT (random() * 20000)::int4 - 10000 FROM generate_series(1, 700);
SELECT pending FROM eytzgpu_info('dml_idx');
SELECT eytzgpu_merge('dml_idx') > 0 AS merged;
SELECT pending, dead FROM eytzgpu_info('dml_idx');
SELECT eytzgpu_verify('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', '{}', true));

-- repeated merges of a growing index, each in its own transaction, reuse
-- the blocks of the generations no transaction can read any more: the file
-- stays within a few times the size of a fresh build
\set ECHO none
\o /dev/null
SELECT 'INSERT INTO dml (k) SELECT (random() * 20000)::int4 - 10000 FROM generate_series(1, 400)',
	   $$SELECT eytzgpu_merge('dml_idx')$$
  FROM generate_series(1, 20) \gexec
\o
\set ECHO all
SELECT eytzgpu_verify('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', '{}', true));
SELECT pages AS pages_merged FROM eytzgpu_info('dml_idx') \gset

-- a scan open in this transaction keeps its generation readable: merges of
-- the same transaction neither recycle nor overwrite it
DO $$
DECLARE
	c refcursor;
	v int;
	n int := 0;
	total int8 := 0;
	ref text;
BEGIN
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_bitmapscan = off;
	SELECT count(*) || ' ' || sum(dml.v) INTO ref FROM dml WHERE k BETWEEN -5000 AND 5000;
	OPEN c FOR SELECT dml.v FROM dml WHERE k BETWEEN -5000 AND 5000;
	FOR i IN 1 .. 6 LOOP
		FOR j IN 1 .. 100 LOOP
			FETCH c INTO v;
			n := n + 1;
			total := total + v;
		END LOOP;
		INSERT INTO dml (k) SELECT (random() * 20000)::int4 - 10000 FROM generate_series(1, 300);
		PERFORM eytzgpu_merge('dml_idx');
	END LOOP;
	LOOP
		FETCH c INTO v;
		EXIT WHEN NOT FOUND;
		n := n + 1;
		total := total + v;
	END LOOP;
	RAISE WARNING 'cursor across merges: %', CASE WHEN n || ' ' || total = ref THEN 'ok' ELSE n || ' ' || total || ' expected ' || ref END;
END
$$;
SELECT eytzgpu_verify('dml_idx');

-- REINDEX, REINDEX CONCURRENTLY, VACUUM FULL
REINDEX INDEX dml_idx;
SELECT :pages_merged <= 4 * pages AS bounded FROM eytzgpu_info('dml_idx');
INSERT INTO dml (k) SELECT (random() * 20000)::int4 - 10000 FROM generate_series(1, 300);
REINDEX INDEX dml_idx;
SELECT entries, pending, dead FROM eytzgpu_info('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', '{}', true));
DELETE FROM dml WHERE v % 11 = 0;
INSERT INTO dml (k) SELECT (random() * 20000)::int4 - 10000 FROM generate_series(1, 300);
REINDEX INDEX CONCURRENTLY dml_idx;
SELECT eytzgpu_verify('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', '{}', true));
VACUUM FULL dml;
SELECT eytzgpu_verify('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', '{}', true));

-- CREATE INDEX CONCURRENTLY (its validation pass goes through ambulkdelete)
DROP INDEX dml_idx;
CREATE INDEX CONCURRENTLY dml_idx ON dml USING eytzgpu (k) WITH (layout = ebs);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'dml_idx'::regclass;
SELECT eytzgpu_verify('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', '{}', true));

-- everything deleted, then the index only has pending entries
DELETE FROM dml;
VACUUM dml;
SELECT entries, pending, dead, levels FROM eytzgpu_info('dml_idx');
SELECT * FROM am_check('dml_idx', ARRAY['k = 1', 'k > 0']);
INSERT INTO dml (k) SELECT g % 100 FROM generate_series(1, 400) g;
SELECT entries, pending FROM eytzgpu_info('dml_idx');
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', ARRAY['-1', '100']));
SELECT eytzgpu_merge('dml_idx') > 0 AS merged;
SELECT * FROM am_check('dml_idx', am_battery('dml_idx', ARRAY['-1', '100'], true));

-- TRUNCATE gives an empty index
TRUNCATE dml;
SELECT entries, pending FROM eytzgpu_info('dml_idx');
SELECT eytzgpu_verify('dml_idx');
INSERT INTO dml (k) VALUES (5), (5), (6), (NULL);
SELECT * FROM am_check('dml_idx', ARRAY['k = 5', 'k >= 5', 'k < 5']);

-- an index built on an empty table: pending only, then merged
CREATE TABLE dml_empty (k int2, v serial);
CREATE INDEX dml_empty_idx ON dml_empty USING eytzgpu (k) WITH (layout = eks, fanout = 33);
SELECT entries, pending, levels, pages FROM eytzgpu_info('dml_empty_idx');
SELECT * FROM am_check('dml_empty_idx', ARRAY['k = 1', 'k < 32767']);
INSERT INTO dml_empty (k) SELECT (g % 65536 - 32768)::int2 FROM generate_series(0, 65535, 7) g;
INSERT INTO dml_empty (k) VALUES (-32768), (32767);
SELECT * FROM am_check('dml_empty_idx', am_battery('dml_empty_idx', ARRAY['(-32768)::int2', '32767::int2', '32768', '-32769'], true));
SELECT eytzgpu_merge('dml_empty_idx') > 0 AS merged;
SELECT layout, fanout, entries, pending FROM eytzgpu_info('dml_empty_idx');
SELECT eytzgpu_verify('dml_empty_idx');
SELECT * FROM am_check('dml_empty_idx', am_battery('dml_empty_idx', ARRAY['(-32768)::int2', '32767::int2', '32768', '-32769']));

-- unlogged table (init fork from ambuildempty)
CREATE UNLOGGED TABLE dml_unlogged (k int8, v serial);
CREATE INDEX dml_unlogged_idx ON dml_unlogged USING eytzgpu (k);
INSERT INTO dml_unlogged (k) SELECT (random() * 1000)::int8 FROM generate_series(1, 2000);
SELECT * FROM am_check('dml_unlogged_idx', am_battery('dml_unlogged_idx', '{}', true));
REINDEX INDEX dml_unlogged_idx;
SELECT eytzgpu_verify('dml_unlogged_idx');
SELECT * FROM am_check('dml_unlogged_idx', am_battery('dml_unlogged_idx', '{}', true));

-- expression and partial indexes
CREATE TABLE dml_expr (a int4, b float8, v serial);
INSERT INTO dml_expr (a, b) SELECT (random() * 1000)::int4, random() FROM generate_series(1, 3000);
CREATE INDEX dml_expr_idx ON dml_expr USING eytzgpu ((a * 2 + 1));
SELECT * FROM am_check('dml_expr_idx', ARRAY['a * 2 + 1 = 101', 'a * 2 + 1 < 50', 'a * 2 + 1 IN (1, 3, 2001)']);
DROP INDEX dml_expr_idx;
CREATE INDEX dml_expr_idx ON dml_expr USING eytzgpu ((b::float4));
SELECT * FROM am_check('dml_expr_idx', ARRAY['b::float4 < 0.5', 'b::float4 > 0.999::float8']);
DROP INDEX dml_expr_idx;
CREATE INDEX dml_expr_idx ON dml_expr USING eytzgpu (a) WHERE a % 2 = 0;
SELECT * FROM am_check('dml_expr_idx', ARRAY['a % 2 = 0 AND a = 500', 'a % 2 = 0 AND a < 100']);
SELECT eytzgpu_verify('dml_expr_idx');

DROP TABLE dml, dml_small, dml_empty, dml_unlogged, dml_expr;
DROP FUNCTION am_check, am_battery, am_error;
