-- am_security: who may call eytzgpu_info(), eytzgpu_verify() and
-- eytzgpu_merge() (t/005 checks that it is decided before any lock is
-- taken); verify's heapallindexed; LIMIT over a wide range of duplicates
-- reads a few pages only.
SET client_min_messages = warning;
\set ECHO none
\i sql/am_harness.inc
\set ECHO all
CREATE TABLE sec (k int4);
INSERT INTO sec SELECT g % 100 FROM generate_series(1, 5000) g;
CREATE INDEX sec_idx ON sec USING eytzgpu (k);
CREATE ROLE regress_eytz_nobody;
CREATE ROLE regress_eytz_reader;
CREATE ROLE regress_eytz_monitor IN ROLE pg_monitor;
GRANT SELECT ON sec TO regress_eytz_reader;

-- without SELECT on the table: nothing, not even counts
SET ROLE regress_eytz_nobody;
SELECT am_error($$SELECT eytzgpu_info('sec_idx')$$);
SELECT am_error($$SELECT eytzgpu_verify('sec_idx')$$);
SELECT am_error($$SELECT eytzgpu_verify('sec_idx', true)$$);
SELECT am_error($$SELECT eytzgpu_merge('sec_idx')$$);
RESET ROLE;

-- with SELECT: info and verify, but merging is the owner's
SET ROLE regress_eytz_reader;
SELECT entries FROM eytzgpu_info('sec_idx');
SELECT eytzgpu_verify('sec_idx'), eytzgpu_verify('sec_idx', true);
SELECT am_error($$SELECT eytzgpu_merge('sec_idx')$$);
RESET ROLE;
-- pg_monitor may look too
SET ROLE regress_eytz_monitor;
SELECT entries FROM eytzgpu_info('sec_idx');
SELECT eytzgpu_verify('sec_idx');
RESET ROLE;
SELECT eytzgpu_merge('sec_idx') > 1 AS owner_merges;

-- heapallindexed sees every live row, pending entries and HOT chains too
ALTER TABLE sec ADD COLUMN v int4 DEFAULT 0;
UPDATE sec SET v = 1 WHERE k < 10;
INSERT INTO sec SELECT g % 100, 2 FROM generate_series(1, 300) g;
SELECT pending > 0 AS has_pending FROM eytzgpu_info('sec_idx');
SELECT eytzgpu_verify('sec_idx', true);
SELECT eytzgpu_verify('sec_idx', NULL) IS NULL AS null_arg;

-- amgettuple hands out TIDs a chunk at a time: LIMIT 1 over a range of
-- 100k duplicates reads a handful of pages, not the whole range
CREATE TABLE sec_dup (k int4);
INSERT INTO sec_dup SELECT CASE WHEN g % 10 = 0 THEN g ELSE 42 END FROM generate_series(1, 100000) g;
CREATE INDEX sec_dup_idx ON sec_dup USING eytzgpu (k) WITH (layout = eks, fanout = 9);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
CREATE FUNCTION index_blocks(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || q INTO plan;
	RETURN (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Shared Hit Blocks')::int +
		   (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Shared Read Blocks')::int;
END
$$;
SELECT index_blocks('SELECT * FROM sec_dup WHERE k = 42 LIMIT 1') < 20 AS few_blocks;
SELECT index_blocks('SELECT * FROM sec_dup WHERE k >= 0 LIMIT 1') < 20 AS few_blocks;
SELECT count(*) FROM sec_dup WHERE k = 42;
SELECT count(*), sum(k) FROM sec_dup WHERE k BETWEEN 40 AND 50000;
RESET enable_seqscan;
RESET enable_bitmapscan;

DROP TABLE sec, sec_dup;
DROP FUNCTION am_error, am_check, am_battery, index_blocks;
DROP ROLE regress_eytz_nobody, regress_eytz_reader, regress_eytz_monitor;
