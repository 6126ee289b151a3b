-- join_outer: the outer rows read straight from the pages of an outer Seq
-- Scan (eytzouter.c, eytzgpu.direct_outer): only where the Seq Scan of a
-- heap table neither filters nor projects, with the snapshot's view of its
-- tuples (deleted, updated and inserted rows, the transaction's own
-- changes), NULL keys, keys read from the tuple or through an expression,
-- rows kept for their values, LIMIT, rescans, serializable.  Each check
-- compares with PostgreSQL's own plan; jd_direct tells which reads ran.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all

-- whether the join read the outer pages itself ("none": the outer plan ran;
-- how many pages an update left is not stable) and the rows the Seq Scan
-- below it was charged
CREATE FUNCTION jd_direct(q text) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN bool_or(l ~ 'Outer Pages Read Directly: [1-9]') THEN 'direct' ELSE 'none' END || ' / ' ||
		   coalesce(max(substring(l from 'Seq Scan on jd_outer o \(actual rows=(\d+)')), '-')
	  FROM join_plan(q, true, 'Device') l
$$;

CREATE TABLE jd_inner (k int4, v int4);
INSERT INTO jd_inner SELECT (g * 7919) % 30011, g FROM generate_series(1, 30000) g;
INSERT INTO jd_inner SELECT g, -g FROM generate_series(1, 2000) g;
INSERT INTO jd_inner VALUES (NULL, 0), (2147483647, 1), (-2147483648, 2);
CREATE INDEX jd_inner_k ON jd_inner USING eytzgpu (k);
CREATE TABLE jd_outer (k int4, x int4, t text, b int8);
INSERT INTO jd_outer SELECT CASE WHEN g % 11 = 0 THEN NULL ELSE (g::int8 * 104729 % 31000)::int4 END,
	g, CASE WHEN g % 3 > 0 THEN repeat('t', g % 50) END, g * 3
	FROM generate_series(1, 20000) g;
INSERT INTO jd_outer VALUES (2147483647, -1, 'max', 0), (-2147483648, -2, 'min', 0);
VACUUM ANALYZE jd_inner;
ANALYZE jd_outer;

-- read directly: keys straight from the tuples, rows kept, a key expression
SELECT jd_direct('SELECT count(*), sum(i.v) FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
SELECT join_check('SELECT i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
SELECT jd_direct('SELECT o.x, o.t, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, o.t, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jd_outer o LEFT JOIN jd_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x FROM jd_outer o WHERE NOT EXISTS (SELECT 1 FROM jd_inner i WHERE i.k = o.k)');
SELECT jd_direct('SELECT i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.x % 1000');
SELECT join_check('SELECT i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.x % 1000');
SELECT join_check('SELECT i.v FROM jd_outer o JOIN jd_inner i ON i.k BETWEEN o.x AND o.x + 2');
SELECT join_check('SELECT o.b, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.b');
-- not read directly: the Seq Scan filters
SELECT jd_direct('SELECT count(*) FROM jd_outer o JOIN jd_inner i ON i.k = o.k WHERE o.x % 2 = 0');
SELECT join_check('SELECT i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k WHERE o.x % 2 = 0');

-- the snapshot's rows: deleted and updated rows not vacuumed, then the
-- transaction's own changes, and a snapshot taken before another's
DELETE FROM jd_outer WHERE x % 7 = 0;
UPDATE jd_outer SET k = k + 1 WHERE x % 5 = 0;
SELECT jd_direct('SELECT count(*), sum(i.v) FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
BEGIN;
INSERT INTO jd_outer SELECT g, -g, NULL, 0 FROM generate_series(1, 3000) g;
DELETE FROM jd_outer WHERE x % 13 = 0;
UPDATE jd_outer SET k = k - 1 WHERE x % 17 = 0;
SELECT jd_direct('SELECT count(*), sum(i.v) FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT join_check('SELECT o.x, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
COMMIT;

-- a LIMIT stops the read part way through a page; rescans start it over:
-- the join under a nested loop whose join clause reads the driving row
SELECT join_check('SELECT count(*) FROM (SELECT i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k LIMIT 777) s');
SET enable_nestloop = on;
SELECT jd_direct('SELECT p.g, s.c, s.sv FROM generate_series(0, 3) p(g),
	LATERAL (SELECT count(*) AS c, sum(i.v) AS sv FROM jd_outer o JOIN jd_inner i
			 ON i.k = o.k AND i.v % 4 = p.g) s');
SELECT join_check('SELECT p.g, s.c, s.sv FROM generate_series(0, 3) p(g),
	LATERAL (SELECT count(*) AS c, sum(i.v) AS sv FROM jd_outer o JOIN jd_inner i
			 ON i.k = o.k AND i.v % 4 = p.g) s');
SELECT join_check('SELECT p.g, s.c FROM generate_series(0, 3) p(g),
	LATERAL (SELECT count(*) AS c FROM (SELECT o.x FROM jd_outer o JOIN jd_inner i
			 ON i.k = o.k AND i.v % 4 = p.g LIMIT 100) x) s');
RESET enable_nestloop;

-- off: the same rows through the Seq Scan node
SET eytzgpu.direct_outer = off;
SELECT jd_direct('SELECT count(*), sum(i.v) FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, o.t, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k');
RESET eytzgpu.direct_outer;

-- a temporary outer table (local buffers)
CREATE TEMP TABLE jd_touter AS SELECT * FROM jd_outer;
DELETE FROM jd_touter WHERE x % 3 = 0;
ANALYZE jd_touter;
SELECT join_check('SELECT o.x, o.t, i.v FROM jd_touter o JOIN jd_inner i ON i.k = o.k');
SELECT join_check('SELECT i.v FROM jd_touter o JOIN jd_inner i ON i.k = o.k');

-- columns dropped and added (the older tuples lack the added one, whose
-- default the catalog holds), NULLs before the columns read, on both sides:
-- the outer row's columns mapped from the table's, the inner ones read
-- where they lie in the heap page
CREATE TABLE jd_cinner (a text, k int4, d int4, v int8, t text);
INSERT INTO jd_cinner SELECT CASE WHEN g % 4 > 0 THEN 'a' || g END, g % 5000, g,
	CASE WHEN g % 9 > 0 THEN g * 10 END, repeat('w', g % 20) FROM generate_series(1, 12000) g;
ALTER TABLE jd_cinner DROP COLUMN d;
ALTER TABLE jd_cinner ADD COLUMN w int4 DEFAULT 7;
INSERT INTO jd_cinner SELECT NULL, g % 5000, g, NULL, g FROM generate_series(1, 3000) g;
CREATE INDEX jd_cinner_k ON jd_cinner USING eytzgpu (k);
CREATE TABLE jd_couter (x int4, z text, k int4);
INSERT INTO jd_couter SELECT g, 'z' || g, (g * 37) % 6000 FROM generate_series(1, 8000) g;
ALTER TABLE jd_couter DROP COLUMN z;
ALTER TABLE jd_couter ADD COLUMN y int4 DEFAULT 3;
INSERT INTO jd_couter SELECT -g, g % 5000, g % 7 FROM generate_series(1, 2000) g;
VACUUM ANALYZE jd_cinner;
ANALYZE jd_couter;
SELECT jd_direct('SELECT count(*) FROM jd_couter o JOIN jd_cinner i ON i.k = o.k') ~ '^direct / ' AS direct;
SELECT join_check('SELECT o.x, o.y, i.a, i.v, i.t, i.w FROM jd_couter o JOIN jd_cinner i ON i.k = o.k');
SELECT join_check('SELECT i.w, i.v FROM jd_couter o JOIN jd_cinner i ON i.k = o.k');
-- more inner columns than are read one by one: through the heap slot
SELECT join_check('SELECT o.x, i.a, i.k, i.v, i.t, i.w FROM jd_couter o JOIN jd_cinner i ON i.k = o.k');
SELECT join_check('SELECT o.y, i.t, i.w FROM jd_couter o LEFT JOIN jd_cinner i ON i.k = o.x');
SELECT join_check('SELECT o.x, i.a FROM jd_couter o JOIN jd_cinner i ON i.k = o.k AND i.v IS NULL');
DROP TABLE jd_cinner, jd_couter;

-- row marks: a concurrent update's recheck (EvalPlanQual) runs the join
-- over the row versions it locked, which neither the batched lookup nor
-- the direct read would return: no batched join under UPDATE or DELETE
-- with other tables, nor SELECT FOR UPDATE
CREATE FUNCTION jd_batched(q text) RETURNS boolean LANGUAGE sql AS $$
	SELECT bool_or(l ~ 'EytzGPU Join') FROM join_plan(q) l
$$;
SELECT jd_batched('SELECT o.x, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k') AS plain,
	   jd_batched('SELECT o.x, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k FOR UPDATE OF o') AS for_update,
	   jd_batched('UPDATE jd_outer o SET x = o.x FROM jd_inner i WHERE i.k = o.k') AS update_from,
	   jd_batched('DELETE FROM jd_inner i USING jd_outer o WHERE i.k = o.k') AS delete_using;
DROP FUNCTION jd_batched(text);

-- the stage budget's own clock reads (EXPLAIN ANALYZE with TIMING): at
-- least one for every row the node returns, and what they cost, within the
-- node's time; not shown without TIMING
CREATE FUNCTION jd_clocks(opts text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
	node jsonb;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF, FORMAT JSON, ' || opts || ') ' || q INTO plan;
	node := jsonb_path_query_first(plan, 'strict $.**?(@."Custom Plan Provider" == "EytzGPU Join")');
	IF NOT node ? 'Stage Clock Reads' THEN
		RETURN 'not shown';
	END IF;
	IF (node->>'Stage Clock Reads')::bigint >= (node->>'Actual Rows')::numeric AND
		(node->>'Actual Rows')::numeric > 0 AND
		(node->>'Stage Clock Cost')::float8 > 0 AND
		(node->>'Stage Clock Cost')::float8 <= (node->>'Actual Total Time')::float8 THEN
		RETURN 'reads and their cost';
	END IF;
	RETURN 'wrong: ' || node::text;
END $$;
SELECT jd_clocks('TIMING ON', 'SELECT o.x, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k') AS timing_on,
	   jd_clocks('TIMING OFF', 'SELECT o.x, i.v FROM jd_outer o JOIN jd_inner i ON i.k = o.k') AS timing_off;
DROP FUNCTION jd_clocks(text, text);

DROP TABLE jd_touter, jd_outer, jd_inner;
DROP FUNCTION jd_direct(text);
