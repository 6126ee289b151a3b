-- scripts/demo.sql: the demo run by scripts/setup-demo.sh (psql variable :rows)
\timing off
\pset footer off
\pset pager off
CREATE EXTENSION eytzgpu;
SET client_min_messages = warning;

\echo == building tables: :rows inner rows, 10% as many outer keys
CREATE TABLE inner_t (k int4, v int4);
INSERT INTO inner_t SELECT g, g % 1000 FROM generate_series(1, :rows) g ORDER BY random();
CREATE TABLE outer_t AS SELECT (1 + floor(random() * :rows))::int4 AS k
  FROM generate_series(1, :rows / 10);
VACUUM ANALYZE inner_t;
VACUUM ANALYZE outer_t;

\echo == CREATE INDEX USING eytzgpu
\timing on
CREATE INDEX inner_k ON inner_t USING eytzgpu (k);
\timing off
SELECT layout, fanout, entries, levels, pg_size_pretty(bytes) AS size FROM eytzgpu_info('inner_k');

\echo == range query (BETWEEN), answered by the per-level range scan
EXPLAIN (analyze, costs off, timing off, summary on)
  SELECT count(*) FROM inner_t WHERE k BETWEEN 1000 AND 1000 + :rows / 100;

\echo == index-nested-loop join: EytzGPU Join (batched lookups); Device says GPU or CPU
EXPLAIN (analyze, costs off, timing off, summary on)
  SELECT count(*), sum(i.v) FROM outer_t o JOIN inner_t i ON i.k = o.k;

\echo == the same join as a plain nested loop over a btree index, for comparison
CREATE INDEX inner_k_btree ON inner_t USING btree (k);
SET eytzgpu.enable_join = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (analyze, costs off, timing off, summary on)
  SELECT count(*), sum(i.v) FROM outer_t o JOIN inner_t i ON i.k = o.k;
