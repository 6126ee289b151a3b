-- join_lookup_quiet: without a GPU, joins and index builds say nothing at
-- default settings, and one WARNING per session when eytzgpu.device = 'gpu'
-- asks for the GPU (join_lookup_quiet_1.out: a machine with a GPU, silent).
\set VERBOSITY terse
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
CREATE TABLE jq (k int4);
INSERT INTO jq SELECT g % 700 FROM generate_series(1, 2000) g;
CREATE INDEX jq_k ON jq USING eytzgpu (k);
ANALYZE jq;
EXPLAIN (COSTS OFF) SELECT count(*) FROM jq a JOIN jq b ON b.k = a.k;
SELECT count(*) FROM jq a JOIN jq b ON b.k = a.k;
SET eytzgpu.device = gpu;
SELECT count(*) FROM jq a JOIN jq b ON b.k = a.k;
SELECT count(*) FROM jq a JOIN jq b ON b.k = a.k;
CREATE INDEX jq_k2 ON jq USING eytzgpu (k);
SELECT count(*) FROM jq a JOIN jq b ON b.k = a.k;
RESET eytzgpu.device;
DROP TABLE jq;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
