-- am_basic: smoke test of the eytzgpu access method.  Build, point and
-- range lookups forced through the index, compared with a sequential scan.
SET client_min_messages = warning;
CREATE TABLE am_basic (k int4, v int4);
SELECT setseed(0.42);
INSERT INTO am_basic SELECT (random() * 1000)::int4 - 500, g FROM generate_series(1, 5000) g;
INSERT INTO am_basic VALUES (NULL, -1), (NULL, -2);
CREATE INDEX am_basic_idx ON am_basic USING eytzgpu (k);
SELECT eytzgpu_verify('am_basic_idx');
SELECT layout, fanout, key_width, entries, pending, dead FROM eytzgpu_info('am_basic_idx');

-- the queries, planned anew each time the view is read
CREATE TEMP VIEW answers AS
SELECT 'eq'  AS q, count(*) AS n, sum(v) AS s FROM am_basic WHERE k = 17
UNION ALL
SELECT 'rng', count(*), sum(v) FROM am_basic WHERE k BETWEEN -100 AND 42
UNION ALL
SELECT 'lt', count(*), sum(v) FROM am_basic WHERE k < -480
UNION ALL
SELECT 'in', count(*), sum(v) FROM am_basic WHERE k IN (1, 2, 3, 400, 9999);

-- the reference answers, without the index
SET enable_indexscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE ref AS SELECT * FROM answers;

-- the same through the index (scans, not bitmaps: the table has no statistics)
RESET enable_indexscan;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM am_basic WHERE k = 17;
EXPLAIN (COSTS OFF) SELECT * FROM answers;
CREATE TEMP TABLE got AS SELECT * FROM answers;
SELECT count(*) AS differences FROM ((TABLE ref EXCEPT TABLE got) UNION ALL (TABLE got EXCEPT TABLE ref)) d;
SELECT count(*) > 0 AS nonempty FROM got WHERE n > 0;

-- inserts go to the pending list, a merge folds them in
INSERT INTO am_basic SELECT g % 7, g FROM generate_series(1, 300) g;
SELECT pending FROM eytzgpu_info('am_basic_idx');
SET enable_indexscan = off;
SET enable_bitmapscan = off;
RESET enable_seqscan;
SELECT count(*) AS ref FROM am_basic WHERE k = 3;
RESET enable_indexscan;
RESET enable_bitmapscan;
SET enable_seqscan = off;
SELECT count(*) AS got FROM am_basic WHERE k = 3;
SELECT eytzgpu_merge('am_basic_idx') > 1 AS merged;
SELECT entries, pending FROM eytzgpu_info('am_basic_idx');
SELECT count(*) AS got FROM am_basic WHERE k = 3;
SELECT eytzgpu_verify('am_basic_idx');
DROP VIEW answers;
DROP TABLE am_basic;
