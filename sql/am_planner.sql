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
