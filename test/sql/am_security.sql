-- am_security: who may call eytzgpu_info(), eytzgpu_verify() and
-- eytzgpu_merge() (t/005 checks that it is decided before any lock is
-- taken); verify's heapallindexed; LIMIT over a wide range of duplicates
-- reads a few pages only.
SET client_min_messages = warning;
\set ECHO none
\i test/sql/am_harness.inc
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

-- verify runs the index's expressions and predicate as the table's owner,
-- under SECURITY_RESTRICTED_OPERATION (as REINDEX and amcheck do): an owner
-- who plants code in them gains nothing when a superuser or a pg_monitor
-- member verifies.  evil_probe says whose rights it runs with, and tries
-- to make its owner a superuser and to change a GUC for the session.
-- (Calls inside the functions name their schema: from PostgreSQL 17 on,
-- maintenance runs index expressions with search_path pg_catalog, pg_temp.)
CREATE ROLE regress_eytz_mallory;
GRANT CREATE ON SCHEMA public TO regress_eytz_mallory;
CREATE FUNCTION evil_probe() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	super boolean := (SELECT rolsuper FROM pg_roles WHERE rolname = current_user);
BEGIN
	RAISE WARNING 'evil_probe runs as %, superuser: %', current_user, super;
	IF super THEN
		EXECUTE 'ALTER ROLE regress_eytz_mallory SUPERUSER';
	END IF;
	PERFORM set_config('work_mem', '1234kB', false);
	RETURN 0;
END $$;
ALTER FUNCTION evil_probe() OWNER TO regress_eytz_mallory;
CREATE FUNCTION evil_key(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM public.evil_probe(); RETURN $1; END $$;
ALTER FUNCTION evil_key(int) OWNER TO regress_eytz_mallory;
CREATE FUNCTION evil_pred(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM public.evil_probe(); RETURN $1 > 0; END $$;
ALTER FUNCTION evil_pred(int) OWNER TO regress_eytz_mallory;
SET ROLE regress_eytz_mallory;
SET client_min_messages = error;   -- the build's own calls
CREATE TABLE evil_t (k int4);
INSERT INTO evil_t VALUES (1), (2);
CREATE INDEX evil_expr ON evil_t USING eytzgpu (evil_key(k));
CREATE INDEX evil_partial ON evil_t USING eytzgpu (k) WHERE evil_pred(k);
RESET client_min_messages;
RESET ROLE;
-- a superuser verifies
SELECT current_setting('work_mem') AS work_mem_before \gset
SELECT eytzgpu_verify('evil_expr', true);
SELECT eytzgpu_verify('evil_partial', true);
SELECT current_setting('work_mem') = :'work_mem_before' AS work_mem_kept;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_eytz_mallory';
-- a pg_monitor member (no superuser, no SELECT on the table) verifies
SET ROLE regress_eytz_monitor;
SELECT eytzgpu_verify('evil_expr', true);
SELECT eytzgpu_verify('evil_partial', true);
RESET ROLE;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_eytz_mallory';
DROP TABLE evil_t;
DROP FUNCTION evil_key, evil_pred, evil_probe;
REVOKE CREATE ON SCHEMA public FROM regress_eytz_mallory;

-- the functions run with the caller's rights and settings and check
-- privileges themselves: none is SECURITY DEFINER or sets a GUC, and none
-- but the handler and the status functions is granted beyond PUBLIC's
-- default
SELECT p.proname, p.prosecdef, p.proconfig
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'eytzgpu'
 WHERE p.prosecdef OR p.proconfig IS NOT NULL OR p.proacl IS NOT NULL
 ORDER BY 1;

-- a partitioned eytzgpu index: verify checks every leaf's index; info and
-- merge say it is partitioned and what to call instead
CREATE TABLE sec_part (k int4, v int4) PARTITION BY RANGE (k);
CREATE TABLE sec_part_a PARTITION OF sec_part FOR VALUES FROM (MINVALUE) TO (50);
CREATE TABLE sec_part_b PARTITION OF sec_part FOR VALUES FROM (50) TO (MAXVALUE)
	PARTITION BY HASH (k);
CREATE TABLE sec_part_b0 PARTITION OF sec_part_b FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE sec_part_b1 PARTITION OF sec_part_b FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO sec_part SELECT g % 100, g FROM generate_series(1, 3000) g;
CREATE INDEX sec_part_ez ON sec_part USING eytzgpu (k);
SELECT eytzgpu_verify('sec_part_ez'), eytzgpu_verify('sec_part_ez', true);
SELECT am_error($$SELECT eytzgpu_info('sec_part_ez')$$);
SELECT am_error($$SELECT eytzgpu_merge('sec_part_ez')$$);
\set ON_ERROR_STOP 0
SELECT entries FROM eytzgpu_info('sec_part_ez');
\set ON_ERROR_STOP 1
-- the hint's query answers
SELECT relid, (eytzgpu_info(relid)).entries FROM pg_partition_tree('sec_part_ez') WHERE isleaf ORDER BY 1;
-- SELECT on the partitioned table lets one verify all of it
GRANT SELECT ON sec_part TO regress_eytz_reader;
SET ROLE regress_eytz_reader;
SELECT eytzgpu_verify('sec_part_ez', true);
SELECT am_error($$SELECT eytzgpu_verify('sec_part_b0_k_idx', true)$$);
RESET ROLE;
SET ROLE regress_eytz_nobody;
SELECT am_error($$SELECT eytzgpu_verify('sec_part_ez')$$);
RESET ROLE;
-- every leaf's rows are checked: an expression index whose function counts
-- its calls is called once per row of every partition
CREATE SEQUENCE sec_calls;
CREATE FUNCTION sec_counted(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM nextval('public.sec_calls'); RETURN $1; END $$;
CREATE INDEX sec_part_expr ON sec_part USING eytzgpu (sec_counted(k));
SELECT nextval('sec_calls') AS before \gset
SELECT eytzgpu_verify('sec_part_expr', true);
SELECT nextval('sec_calls') - :before - 1 AS rows_checked, (SELECT count(*) FROM sec_part) AS rows;
DROP TABLE sec_part;
DROP FUNCTION sec_counted;
DROP SEQUENCE sec_calls;

DROP TABLE sec, sec_dup;
DROP FUNCTION am_error, am_check, am_battery, index_blocks;
DROP ROLE regress_eytz_nobody, regress_eytz_reader, regress_eytz_monitor, regress_eytz_mallory;
