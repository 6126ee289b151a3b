-- join_lookup: the lookup seam's views of an index (its pages through the
-- buffer manager, the CPU image, its pages pinned in shared buffers) and matches returned in chunks, each
-- compared with PostgreSQL's own join (eytzgpu.enable_join off) on random
-- data with NULLs, duplicates, extremes, misses and a pending list.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all

-- jl_device(q): the view that answered q (EXPLAIN ANALYZE's Device line; a
-- shared image, on a server that preloads the extension, is the image view)
CREATE FUNCTION jl_device(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	d text := 'no eytzgpu join';
BEGIN
	FOR r IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF r."QUERY PLAN" ~ '^\s*Device: ' THEN
			d := replace(substring(r."QUERY PLAN" from 'Device: (.*)$'), ' (shared image)', '');
		END IF;
	END LOOP;
	RETURN d;
END $$;

SELECT setseed(0.4242);
CREATE TABLE jl_inner (k int4, v int4);
INSERT INTO jl_inner
SELECT CASE WHEN r < 0.04 THEN NULL
			WHEN r < 0.06 THEN (ARRAY[-2147483648, 2147483647, 0, -1])[1 + (g % 4)]
			WHEN r < 0.36 THEN (random() * 50)::int4
			ELSE (random() * 20000)::int4 END, g
FROM (SELECT g, random() AS r FROM generate_series(1, 20000) g) s;
-- one key with more matches than a chunk holds at a small work_mem
INSERT INTO jl_inner SELECT 7, g FROM generate_series(1, 30000) g;
CREATE INDEX jl_inner_k ON jl_inner USING eytzgpu (k);
-- entries after the build go to the pending list (tombstones too: deleted rows)
INSERT INTO jl_inner SELECT (random() * 20000)::int4, -g FROM generate_series(1, 500) g;
INSERT INTO jl_inner SELECT 7, -g FROM generate_series(1, 100) g;
INSERT INTO jl_inner VALUES (2147483647, -1000), (-2147483648, -1001), (NULL, -1002);
DELETE FROM jl_inner WHERE v % 97 = 0;
ANALYZE jl_inner;

CREATE TABLE jl_outer (k int4, x int);
INSERT INTO jl_outer
SELECT CASE WHEN r < 0.05 THEN NULL
			WHEN r < 0.08 THEN (ARRAY[-2147483648, 2147483647])[1 + (g % 2)]
			ELSE (random() * 21000)::int4 END, g
FROM (SELECT g, random() AS r FROM generate_series(1, 3000) g) s;
INSERT INTO jl_outer VALUES (7, -1), (7, -2), (7, -3), (NULL, -4), (50, -5), (-1, -6);
ANALYZE jl_outer;

-- an outer side the planner believes to have 2 rows
CREATE FUNCTION jl_outer_all() RETURNS SETOF jl_outer LANGUAGE plpgsql ROWS 2 AS $$
BEGIN
	RETURN QUERY SELECT * FROM jl_outer;
END $$;

SET eytzgpu.device = cpu;
-- the planner prefers other joins for the few rows of most tests here
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
-- the pinned pages have tests of their own (below)
SET eytzgpu.cpu_view = image;

-- pages view: a few outer rows, no image resident (nor allowed to stay)
SET eytzgpu.image_cache_limit = 0;
SELECT jl_device('SELECT * FROM (SELECT * FROM jl_outer WHERE x < 4) o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM (SELECT * FROM jl_outer WHERE x < 4) o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM (SELECT * FROM jl_outer WHERE x < 20) o LEFT JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM (SELECT * FROM jl_outer WHERE x < 20) o JOIN jl_inner i ON i.k BETWEEN o.k::int8 - 2 AND o.k::int8 + 2');
SELECT join_check('SELECT o.x FROM (SELECT * FROM jl_outer WHERE x < 20) o WHERE NOT EXISTS (SELECT 1 FROM jl_inner i WHERE i.k = o.k)');
-- more keys than the planner said: the view moves to the image between batches
SELECT jl_device('SELECT * FROM jl_outer_all() o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jl_outer_all() o JOIN jl_inner i ON i.k = o.k');

-- image view: the whole outer side
SELECT jl_device('SELECT * FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v, i.k FROM jl_outer o LEFT JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k >= o.k AND i.k < o.k::int8 + 3');
SELECT join_check('SELECT o.x FROM jl_outer o WHERE EXISTS (SELECT 1 FROM jl_inner i WHERE i.k = o.k)');
SELECT join_check('SELECT o.x FROM jl_outer o WHERE NOT EXISTS (SELECT 1 FROM jl_inner i WHERE i.k = o.k)');

-- chunked matches: at 64kB of work_mem a chunk holds at most 2048 matches, key 7
-- has 30,000 in the layout and 100 pending, asked by several rows
SET work_mem = '64kB';
-- (the index pages; where the extension is preloaded, the image of the join
-- above stays in shared memory and the few rows take it)
SELECT jl_device('SELECT * FROM (SELECT * FROM jl_outer WHERE x < 4) o JOIN jl_inner i ON i.k = o.k') =
	CASE WHEN current_setting('shared_preload_libraries') ~ 'eytzgpu' THEN 'cpu' ELSE 'cpu (index pages)' END
	AS expected_view;
SELECT join_check('SELECT o.x, i.v FROM (SELECT * FROM jl_outer WHERE x < 4) o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM (SELECT * FROM jl_outer WHERE x < 4) o JOIN jl_inner i ON i.k BETWEEN o.k::int8 - 10 AND o.k::int8 + 10');
SELECT jl_device('SELECT * FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k BETWEEN o.k AND o.k::int8 + 40');
SELECT join_check('SELECT o.x, i.v FROM jl_outer o LEFT JOIN jl_inner i ON i.k = o.k AND i.v % 3 = 0');
-- a LIMIT stops early through a key with many matches
SELECT count(*) FROM (SELECT o.x, i.v FROM (SELECT * FROM jl_outer WHERE x = -1) o JOIN jl_inner i ON i.k = o.k LIMIT 10) s;
RESET work_mem;

-- a cached image: later scans of the same generation use it
RESET eytzgpu.image_cache_limit;
SELECT count(*) FROM jl_outer o JOIN jl_inner i ON i.k = o.k;
SELECT jl_device('SELECT * FROM (SELECT * FROM jl_outer WHERE x < 4) o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM (SELECT * FROM jl_outer WHERE x < 4) o JOIN jl_inner i ON i.k = o.k');
-- after a merge (a new generation) the small join reads the pages again
SELECT eytzgpu_merge('jl_inner_k') > 1 AS merged;
SELECT jl_device('SELECT * FROM (SELECT * FROM jl_outer WHERE x < 4) o JOIN jl_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k');

-- whatever device the machine has (the GPU where there is one)
RESET eytzgpu.device;
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
SET work_mem = '64kB';
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k BETWEEN o.k AND o.k::int8 + 40');
RESET work_mem;

-- the image's search has code of its own for the default fan-outs (EBS and
-- EKS 9) at each key width, and a general one (here fan-out 3): layouts of 1
-- to 6563 entries (full bottom levels, partial ones, a short last node) with
-- duplicates and extremes answer point and range joins as PostgreSQL does
SET eytzgpu.device = cpu;
CREATE TABLE jl_shape (k4 int4, k8 int8, v int4);
CREATE FUNCTION jl_shapes(n int, opts text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	col text;
	point text;
	range text;
BEGIN
	TRUNCATE jl_shape;
	INSERT INTO jl_shape
	SELECT k, k::int8 * 1000003, g
	FROM (SELECT g, CASE WHEN g % 50 = 0 THEN (ARRAY[-2147483648, 2147483647])[1 + g % 100 / 50]
						 ELSE (random() * 21000)::int4 END AS k
		  FROM generate_series(1, n) g) s;
	ANALYZE jl_shape;
	FOREACH col IN ARRAY ARRAY['k4', 'k8'] LOOP
		IF col = 'k4' THEN
			point := 'SELECT o.x, i.v FROM jl_outer o JOIN jl_shape i ON i.k4 = o.k';
			range := 'SELECT o.x, i.v FROM jl_outer o JOIN jl_shape i ON i.k4 BETWEEN o.k AND o.k::int8 + 40';
		ELSE
			point := 'SELECT o.x, i.v FROM jl_outer o JOIN jl_shape i ON i.k8 = o.k::int8 * 1000003';
			range := 'SELECT o.x, i.v FROM jl_outer o JOIN jl_shape i ON i.k8 BETWEEN o.k::int8 * 1000003 AND o.k::int8 * 1000003 + 40000000';
		END IF;
		EXECUTE format('CREATE INDEX jl_shape_i ON jl_shape USING eytzgpu (%s) WITH (%s)', col, opts);
		RETURN NEXT format('%s entries, %s, %s: %s; point %s; range %s', n, opts, col,
						   jl_device(point), join_check(point), join_check(range));
		DROP INDEX jl_shape_i;
	END LOOP;
END $$;
-- (in this order, whatever order the planner joins the two lists in: the
-- shapes draw their keys from one random sequence)
SELECT jl_shapes(n, opts)
FROM unnest(ARRAY[1, 9, 100, 6560, 6563]) WITH ORDINALITY s(n, ni),
	 unnest(ARRAY['layout = ebs', 'layout = eks', 'layout = eks, fanout = 3']) WITH ORDINALITY l(opts, li)
ORDER BY ni, li;
-- the same through the index's pages pinned in shared buffers
SET eytzgpu.cpu_view = pinned;
SELECT jl_shapes(n, opts)
FROM unnest(ARRAY[1, 9, 100, 6560, 6563]) WITH ORDINALITY s(n, ni),
	 unnest(ARRAY['layout = ebs', 'layout = eks', 'layout = eks, fanout = 3']) WITH ORDINALITY l(opts, li)
ORDER BY ni, li;
SET eytzgpu.cpu_view = image;

-- the CPU search takes a batch of points whose keys lie within 2^32 of each
-- other as 8-byte records (key - least key, row): int8 keys far from zero
-- (within: the outer extremes span 2^32 - 1 exactly; beyond: twice that),
-- with NULLs, repeated keys, a key with more matches than a chunk, inner,
-- outer, semi and anti joins, over the heap and index-only
CREATE TABLE jl_k8 AS SELECT k::int8 + 4000000000 AS k, v FROM jl_inner;
CREATE INDEX jl_k8_k ON jl_k8 USING eytzgpu (k);
ANALYZE jl_k8;
CREATE FUNCTION jl_k8_joins(key text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	RETURN NEXT join_check(format('SELECT o.x, i.v FROM jl_outer o JOIN jl_k8 i ON i.k = %s', key));
	RETURN NEXT join_check(format('SELECT o.x, i.v FROM jl_outer o LEFT JOIN jl_k8 i ON i.k = %s', key));
	RETURN NEXT join_check(format('SELECT count(*), sum(i.v) FROM jl_outer o JOIN jl_k8 i ON i.k = %s', key));
	RETURN NEXT join_check(format('SELECT o.x FROM jl_outer o WHERE EXISTS (SELECT 1 FROM jl_k8 i WHERE i.k = %s)', key));
	RETURN NEXT join_check(format('SELECT o.x FROM jl_outer o WHERE NOT EXISTS (SELECT 1 FROM jl_k8 i WHERE i.k = %s)', key));
END $$;
SET work_mem = '64kB';
SELECT jl_k8_joins('o.k::int8 + 4000000000');
SELECT jl_k8_joins('o.k::int8 * 2 + 4000000000');
RESET work_mem;
SELECT jl_k8_joins('o.k::int8 + 4000000000');
SET eytzgpu.cpu_view = pinned;
SELECT jl_k8_joins('o.k::int8 + 4000000000');
SELECT jl_k8_joins('o.k::int8 * 2 + 4000000000');
SET eytzgpu.cpu_view = image;
DROP INDEX jl_k8_k;
CREATE INDEX jl_k8_kv ON jl_k8 USING eytzgpu (k) INCLUDE (v);
VACUUM (INDEX_CLEANUP ON) jl_k8;
SELECT jl_k8_joins('o.k::int8 + 4000000000');
SELECT jl_k8_joins('o.k::int8 * 2 + 4000000000');
DROP FUNCTION jl_k8_joins(text);
DROP TABLE jl_k8;

-- the pinned view (eytzgpu.cpu_view = pinned; auto takes it where no image
-- is cached): the layout's pages searched in place, with the pending list,
-- after deletes and VACUUM (tombstones), a merge and a REINDEX, in chunks,
-- and rescanned under a nested loop; an index-only join takes another view
SET eytzgpu.cpu_view = pinned;
CREATE FUNCTION jl_pinned_joins() RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	RETURN NEXT jl_device('SELECT * FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
	RETURN NEXT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
	RETURN NEXT join_check('SELECT o.x, i.v, i.k FROM jl_outer o LEFT JOIN jl_inner i ON i.k = o.k');
	RETURN NEXT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k BETWEEN o.k AND o.k::int8 + 40');
	RETURN NEXT join_check('SELECT o.x FROM jl_outer o WHERE EXISTS (SELECT 1 FROM jl_inner i WHERE i.k = o.k)');
	RETURN NEXT join_check('SELECT o.x FROM jl_outer o WHERE NOT EXISTS (SELECT 1 FROM jl_inner i WHERE i.k = o.k)');
	RETURN NEXT join_check('SELECT s.n, (SELECT count(*) FROM jl_outer o JOIN jl_inner i ON i.k = o.k::int8 + s.n) FROM generate_series(0, 3) s(n)');
	SET LOCAL work_mem = '64kB';
	RETURN NEXT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
	RETURN NEXT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k BETWEEN o.k::int8 - 10 AND o.k::int8 + 10');
END $$;
SELECT jl_pinned_joins();
INSERT INTO jl_inner SELECT (random() * 20000)::int4, 100000 + g FROM generate_series(1, 300) g;
DELETE FROM jl_inner WHERE v % 89 = 0;
SELECT jl_pinned_joins();
VACUUM jl_inner;
SELECT jl_pinned_joins();
SELECT eytzgpu_merge('jl_inner_k') > 1 AS merged;
SELECT jl_pinned_joins();
REINDEX INDEX jl_inner_k;
SELECT jl_pinned_joins();
DROP INDEX jl_inner_k;
CREATE INDEX jl_inner_kv ON jl_inner USING eytzgpu (k) INCLUDE (v);
VACUUM jl_inner;
SELECT jl_device('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k') <> 'cpu (pinned pages)' AS index_only_not_pinned;
SELECT join_check('SELECT o.x, i.v FROM jl_outer o JOIN jl_inner i ON i.k = o.k');
DROP FUNCTION jl_pinned_joins();
RESET eytzgpu.cpu_view;

-- the search's descent of its next queries ahead of its walk
-- (eytzgpu.search_prefetch; auto takes it for sparse batches into keys that
-- overflow the CPU's cache) forced on: the same shapes, image and pinned pages
SET eytzgpu.search_prefetch = on;
SET eytzgpu.cpu_view = image;
SELECT jl_shapes(n, opts)
FROM unnest(ARRAY[9, 100, 6563]) WITH ORDINALITY s(n, ni),
	 unnest(ARRAY['layout = ebs', 'layout = eks', 'layout = eks, fanout = 3']) WITH ORDINALITY l(opts, li)
ORDER BY ni, li;
SET eytzgpu.cpu_view = pinned;
SELECT jl_shapes(n, opts)
FROM unnest(ARRAY[9, 100, 6563]) WITH ORDINALITY s(n, ni),
	 unnest(ARRAY['layout = ebs', 'layout = eks', 'layout = eks, fanout = 3']) WITH ORDINALITY l(opts, li)
ORDER BY ni, li;
RESET eytzgpu.cpu_view;
RESET eytzgpu.search_prefetch;
DROP FUNCTION jl_shapes(int, text);
DROP TABLE jl_shape;
RESET eytzgpu.device;

RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
DROP FUNCTION jl_outer_all();
DROP FUNCTION jl_device(text);
DROP TABLE jl_inner, jl_outer;
