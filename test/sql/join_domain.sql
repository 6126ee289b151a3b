-- join_domain: columns of domain types are taken by their base type: as
-- the index key, as INCLUDE columns, and in the batched join's clauses
-- (the planner relabels a domain column to its base type).  Every answer is
-- compared with PostgreSQL's own (sequential scans, eytzgpu.enable_join off)
-- on random keys with duplicates, NULLs and extremes.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all

CREATE DOMAIN jd_key AS int4;
CREATE DOMAIN jd_big AS int8 CHECK (VALUE > -9223372036854775808);
CREATE DOMAIN jd_when AS timestamptz;
CREATE DOMAIN jd_real AS float8;
CREATE DOMAIN jd_key2 AS jd_key;   -- a domain over a domain

SELECT setseed(0.30);
CREATE TABLE jd_inner (k jd_key, v jd_big, t jd_when, f jd_real, w int4);
INSERT INTO jd_inner
SELECT CASE WHEN random() < 0.05 THEN NULL
			WHEN g % 997 = 0 THEN 2147483647
			WHEN g % 991 = 0 THEN -2147483648
			ELSE (random() * 3000)::int END,
	   CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 1e12)::int8 END,
	   CASE WHEN random() < 0.1 THEN NULL
			ELSE timestamptz '2024-01-01' + random() * interval '400 days' END,
	   CASE WHEN random() < 0.1 THEN NULL ELSE random() * 100 - 50 END,
	   g
  FROM generate_series(1, 20000) g;
-- each of these was refused before: INCLUDE columns of domain types
CREATE INDEX jd_inner_k ON jd_inner USING eytzgpu (k) INCLUDE (v, t, f);
SELECT include FROM eytzgpu_info('jd_inner_k');
-- a domain over a type that cannot be included is still refused
CREATE DOMAIN jd_text AS text;
ALTER TABLE jd_inner ADD COLUMN note jd_text;
-- (the SQLSTATE only: from PostgreSQL 17 on the build's restricted
-- search_path prints the type's name with its schema)
\set VERBOSITY sqlstate
\set ON_ERROR_STOP 0
CREATE INDEX jd_inner_bad ON jd_inner USING eytzgpu (k) INCLUDE (note);
\set ON_ERROR_STOP 1
\set VERBOSITY default
ALTER TABLE jd_inner DROP COLUMN note;
VACUUM ANALYZE jd_inner;
SELECT eytzgpu_verify('jd_inner_k', true);

-- index-only scans return the included domain values as stored
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT k, v, t, f FROM jd_inner WHERE k BETWEEN 100 AND 120;
CREATE TEMP TABLE jd_got AS SELECT k, v, t, f FROM jd_inner WHERE k BETWEEN 100 AND 120;
CREATE TEMP TABLE jd_got_ext AS SELECT k, v, t, f FROM jd_inner WHERE k >= 2147483647 OR k <= -2147483648;
-- = ANY over an array of the base type, of the domain, and of int8
EXPLAIN (COSTS OFF) SELECT k, v FROM jd_inner WHERE k = ANY ('{5,7,2147483647}'::jd_key[]);
CREATE TEMP TABLE jd_any AS
SELECT 1 AS q, k, v FROM jd_inner WHERE k = ANY ('{5,7,NULL,2147483647}'::int4[])
UNION ALL SELECT 2, k, v FROM jd_inner WHERE k = ANY ('{5,7,2147483647}'::jd_key[])
UNION ALL SELECT 3, k, v FROM jd_inner WHERE k = ANY ('{-2147483648,5,4000000000}'::int8[]);
RESET enable_seqscan;
RESET enable_bitmapscan;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS rows,
	   (SELECT count(*) FROM (TABLE jd_got EXCEPT ALL
			SELECT k, v, t, f FROM jd_inner WHERE k BETWEEN 100 AND 120) d) AS differences
  FROM jd_got;
SELECT count(*) AS rows,
	   (SELECT count(*) FROM (TABLE jd_got_ext EXCEPT ALL
			SELECT k, v, t, f FROM jd_inner WHERE k >= 2147483647 OR k <= -2147483648) d) AS differences
  FROM jd_got_ext;
SELECT count(*) AS rows,
	   (SELECT count(*) FROM (TABLE jd_any EXCEPT ALL
			(SELECT 1 AS q, k, v FROM jd_inner WHERE k = ANY ('{5,7,NULL,2147483647}'::int4[])
			 UNION ALL SELECT 2, k, v FROM jd_inner WHERE k = ANY ('{5,7,2147483647}'::jd_key[])
			 UNION ALL SELECT 3, k, v FROM jd_inner WHERE k = ANY ('{-2147483648,5,4000000000}'::int8[]))) d) AS differences
  FROM jd_any;
RESET enable_indexscan;
RESET enable_indexonlyscan;
RESET enable_bitmapscan;
DROP TABLE jd_got, jd_got_ext, jd_any;

-- the batched join over a domain inner column: outer columns of the base
-- type, of the same domain, of a domain over the domain, and cross-type
CREATE TABLE jd_outer (a int4, ad jd_key, add jd_key2, b int8);
INSERT INTO jd_outer
SELECT x, x, x, x::int8 * CASE WHEN g % 7 = 0 THEN 3000000 ELSE 1 END
  FROM (SELECT g, CASE WHEN random() < 0.05 THEN NULL
					   WHEN g % 500 = 0 THEN 2147483647
					   ELSE (random() * 3300)::int END AS x
		  FROM generate_series(1, 3000) g) s;
ANALYZE jd_outer;
SELECT join_check('SELECT o.a, i.k, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.a');
SELECT join_check('SELECT o.ad, i.w FROM jd_outer o JOIN jd_inner i ON o.ad = i.k');
SELECT join_check('SELECT o.add, i.t, i.f FROM jd_outer o JOIN jd_inner i ON i.k = o.add');
SELECT join_check('SELECT o.b, i.k FROM jd_outer o JOIN jd_inner i ON i.k = o.b');
SELECT join_check('SELECT o.a, i.v FROM jd_outer o LEFT JOIN jd_inner i ON i.k = o.a');
SELECT join_check('SELECT o.a FROM jd_outer o WHERE EXISTS (SELECT FROM jd_inner i WHERE i.k = o.ad)');
SELECT join_check('SELECT o.a FROM jd_outer o WHERE NOT EXISTS (SELECT FROM jd_inner i WHERE i.k = o.ad)');
SELECT join_check('SELECT o.a, i.k FROM jd_outer o JOIN jd_inner i ON i.k > o.a AND i.k <= o.a::int8 + 1');
SELECT * FROM join_plan('SELECT count(*), sum(i.v) FROM jd_outer o JOIN jd_inner i ON i.k = o.ad');

DROP TABLE jd_inner, jd_outer;
DROP DOMAIN jd_key2, jd_key, jd_big, jd_when, jd_real, jd_text;
