-- am_build_relocate: the extension is relocatable (nothing in its script
-- names a schema).  Moved to another schema, its operator classes, functions
-- and the join keep working; moved back, too.
SET client_min_messages = warning;
CREATE SCHEMA eytz_moved;
ALTER EXTENSION eytzgpu SET SCHEMA eytz_moved;
SELECT DISTINCT n.nspname FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'eytzgpu')
   AND d.classid = 'pg_proc'::regclass;
SELECT DISTINCT n.nspname FROM pg_opclass c JOIN pg_namespace n ON n.oid = c.opcnamespace
 WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'eytzgpu');

CREATE TABLE reloc (k int8, v int4);
INSERT INTO reloc SELECT g % 1000, g FROM generate_series(1, 20000) g;
CREATE INDEX reloc_k ON reloc USING eytzgpu (k);
ANALYZE reloc;
SELECT eytz_moved.eytzgpu_verify('reloc_k');
SELECT layout, entries FROM eytz_moved.eytzgpu_info('reloc_k');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM reloc WHERE k = 7;
SELECT count(*) FROM reloc WHERE k = 7;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- the join (whichever plan runs it) against PostgreSQL's own plans
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT count(*), sum(r.v) FROM generate_series(1, 2000) o(k) JOIN reloc r ON r.k = o.k;
SET eytzgpu.enable_join = off;
RESET enable_hashjoin;
RESET enable_mergejoin;
SELECT count(*), sum(r.v) FROM generate_series(1, 2000) o(k) JOIN reloc r ON r.k = o.k;
RESET eytzgpu.enable_join;

ALTER EXTENSION eytzgpu SET SCHEMA public;
SELECT eytzgpu_verify('reloc_k');
DROP TABLE reloc;
DROP SCHEMA eytz_moved;
