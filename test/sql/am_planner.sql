-- am_planner: on an analyzed table the planner takes the eytzgpu index for
-- selective quals and a sequential scan for quals that cover most rows
-- (am_plan() reduces a plan to the scan it uses, so that the choice between
-- an index scan and a bitmap scan cannot make the output flaky).
SET client_min_messages = warning;
CREATE FUNCTION am_plan(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	plan text := '';
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line;
	END LOOP;
	RETURN CASE
		WHEN plan LIKE '%Index Scan using pl_idx%' OR plan LIKE '%Bitmap Index Scan on pl_idx%'
			THEN 'eytzgpu index'
		WHEN plan LIKE '%Seq Scan%' THEN 'seq scan'
		ELSE plan END;
END
$$;
SELECT setseed(0.3);
CREATE TABLE pl (k int4, v int4, pad text);
INSERT INTO pl SELECT (random() * 100000)::int4, g, repeat('x', 20) FROM generate_series(1, 100000) g;
CREATE INDEX pl_idx ON pl USING eytzgpu (k);
ANALYZE pl;
SELECT q, am_plan(q) FROM unnest(ARRAY[
	'SELECT * FROM pl WHERE k = 42',
	'SELECT * FROM pl WHERE k = 42::int8',
	'SELECT * FROM pl WHERE k IN (1, 2, 3)',
	'SELECT * FROM pl WHERE k = ANY (ARRAY[5, 6, NULL])',
	'SELECT * FROM pl WHERE k BETWEEN 1000 AND 1100',
	'SELECT * FROM pl WHERE k < 50',
	'SELECT * FROM pl WHERE k > 100',
	'SELECT * FROM pl WHERE k >= 0',
	'SELECT * FROM pl WHERE k <> 42',
	'SELECT * FROM pl WHERE k BETWEEN 100 AND 99000',
	'SELECT * FROM pl WHERE v = 42']) q;
-- pending entries do not make the index look free
INSERT INTO pl SELECT (random() * 100000)::int4, g, 'y' FROM generate_series(1, 5000) g;
ANALYZE pl;
SELECT q, am_plan(q) FROM unnest(ARRAY[
	'SELECT * FROM pl WHERE k = 42',
	'SELECT * FROM pl WHERE k > 100']) q;
-- a lookup join uses the index on the inner side
CREATE TABLE pl_keys AS SELECT g * 97 AS k FROM generate_series(1, 20) g;
ANALYZE pl_keys;
SET eytzgpu.enable_join = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pl_keys JOIN pl USING (k);
RESET eytzgpu.enable_join;
DROP TABLE pl, pl_keys;
DROP FUNCTION am_plan;

-- index scan or bitmap scan: the planner chooses for an eytzgpu index as it
-- does for btree, by the column's correlation with the heap: the plan node
-- types of each query match those of the same table with a btree index
CREATE FUNCTION scan_kinds(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	kinds text := '';
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		kinds := kinds || coalesce(substring(line from '(Seq Scan|Bitmap Index Scan|Index Only Scan|Index Scan)') || ' ', '');
	END LOOP;
	RETURN rtrim(kinds);
END
$$;
CREATE TABLE pc (k int4, scattered int4, v int4);
INSERT INTO pc SELECT g, (random() * 200000)::int4, g FROM generate_series(1, 200000) g;
CREATE INDEX pc_bt_k ON pc USING btree (k);
CREATE INDEX pc_bt_s ON pc USING btree (scattered);
ANALYZE pc;
CREATE TEMP TABLE pc_queries AS SELECT * FROM unnest(ARRAY[
	'SELECT sum(v) FROM pc WHERE k BETWEEN 1000 AND 3000',
	'SELECT sum(v) FROM pc WHERE k = 77',
	'SELECT sum(v) FROM pc WHERE scattered BETWEEN 1000 AND 3000',
	'SELECT sum(v) FROM pc WHERE scattered BETWEEN 1000 AND 1005',
	'SELECT sum(v) FROM pc WHERE scattered = ANY (''{5,77,1000,9999}'')']) q;
CREATE TEMP TABLE pc_btree AS SELECT q, scan_kinds(q) AS kinds FROM pc_queries;
DROP INDEX pc_bt_k, pc_bt_s;
CREATE INDEX pc_ez_k ON pc USING eytzgpu (k);
CREATE INDEX pc_ez_s ON pc USING eytzgpu (scattered);
SELECT b.q, b.kinds AS btree, scan_kinds(b.q) AS eytzgpu FROM pc_btree b ORDER BY b.q;
DROP TABLE pc;
DROP FUNCTION scan_kinds;
