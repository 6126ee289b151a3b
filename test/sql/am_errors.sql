-- am_errors: bad input to eytzgpu gives clear errors with proper SQLSTATEs
-- (shown by am_error() as "SQLSTATE: message"), never a crash.
SET client_min_messages = warning;
\set ECHO none
\i test/sql/am_harness.inc
\set ECHO all
CREATE TABLE er (i int4, t text, f float8, j int8);
INSERT INTO er SELECT g, g::text, g / 3.0, g * 1000 FROM generate_series(1, 1000) g;

-- reloptions
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (layout = 'x')$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (fanout = 4)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (fanout = 2)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (fanout = 65)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (fanout = 'many')$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (pending_limit = 15)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (pending_limit = 0)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (pending_limit = 67108865)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) WITH (colour = 'red')$$);
-- the valid extremes are accepted
CREATE INDEX er_ok ON er USING eytzgpu (i) WITH (layout = eks, fanout = 33, pending_limit = 16);
SELECT layout, fanout FROM eytzgpu_info('er_ok');
SELECT am_error($$ALTER INDEX er_ok SET (fanout = 6)$$);
ALTER INDEX er_ok SET (fanout = 3, layout = eks);
REINDEX INDEX er_ok;
SELECT layout, fanout FROM eytzgpu_info('er_ok');
DROP INDEX er_ok;
-- with layout = ebs the fan-out is 2 whatever the option says
CREATE INDEX er_ok ON er USING eytzgpu (i) WITH (layout = ebs, fanout = 17);
SELECT layout, fanout FROM eytzgpu_info('er_ok');
DROP INDEX er_ok;

-- what the access method does not support
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (t)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i float8_ops)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i, j)$$);
SELECT am_error($$CREATE UNIQUE INDEX ON er USING eytzgpu (i)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu (i) INCLUDE (j, t)$$);
SELECT am_error($$CREATE INDEX ON er USING eytzgpu ((t::numeric))$$);
-- expression indexes of supported types work
CREATE INDEX er_expr ON er USING eytzgpu ((length(t)));
SELECT am_error($$CLUSTER er USING er_expr$$);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM er WHERE length(t) = 3;
SELECT count(*) FROM er WHERE length(t) = 3;
-- IS NULL and ORDER BY cannot use the index
SELECT am_explain('SELECT * FROM er WHERE length(t) IS NULL');
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP INDEX er_expr;
-- exclusion constraints with = work (amgettuple), pending entries included
ALTER TABLE er ADD CONSTRAINT er_excl EXCLUDE USING eytzgpu (i WITH =);
SELECT am_error($$INSERT INTO er (i) VALUES (5)$$);
INSERT INTO er (i) VALUES (1001);
SELECT am_error($$INSERT INTO er (i) VALUES (1001)$$);
ALTER TABLE er DROP CONSTRAINT er_excl;

-- a build beyond maintenance_work_mem is no error: it spills (see am_build)
SET maintenance_work_mem = '1MB';
CREATE TABLE er_big AS SELECT g AS k FROM generate_series(1, 40000) g;
SELECT am_error($$CREATE INDEX ON er_big USING eytzgpu (k)$$);
RESET maintenance_work_mem;
CREATE INDEX er_big_idx ON er_big USING eytzgpu (k);
SELECT entries FROM eytzgpu_info('er_big_idx');

-- the SQL functions on relations that are not eytzgpu indexes
CREATE INDEX er_btree ON er (i);
SELECT am_error($$SELECT eytzgpu_info('er_btree')$$);
SELECT am_error($$SELECT eytzgpu_verify('er_btree')$$);
SELECT am_error($$SELECT eytzgpu_merge('er_btree')$$);
SELECT am_error($$SELECT eytzgpu_info('er')$$);
SELECT am_error($$SELECT eytzgpu_verify('er')$$);
SELECT am_error($$SELECT eytzgpu_merge('er')$$);
SELECT am_error($$SELECT eytzgpu_info(0)$$);
SELECT am_error($$SELECT eytzgpu_verify(1)$$);
SELECT eytzgpu_info(NULL) IS NULL AS info_null, eytzgpu_verify(NULL) IS NULL AS verify_null;

-- the operator classes are valid
SELECT opcname, amvalidate(oid)
  FROM pg_opclass
 WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'eytzgpu')
 ORDER BY opcname;

-- the index properties the access method reports
SELECT p, pg_indexam_has_property((SELECT oid FROM pg_am WHERE amname = 'eytzgpu'), p)
  FROM unnest(ARRAY['can_order', 'can_unique', 'can_multi_col', 'can_exclude', 'can_include']) p;

DROP TABLE er, er_big;
DROP FUNCTION am_error, am_check, am_battery;
