-- join_include: the index-only EytzGPU Join over covering eytzgpu indexes
-- (INCLUDE).  When the index holds every inner column a join reads, a match
-- on an all-visible heap page takes its values from the index and only the
-- other matches read the heap.  Every check compares the join with
-- PostgreSQL's own answer (eytzgpu.enable_join off) as multisets, on random
-- data with duplicates, NULLs in the included columns, extremes, pending
-- entries, and after UPDATE/DELETE/INSERT with and without VACUUM; EXPLAIN
-- ANALYZE's Heap Fetches says how many matches read the heap.
\set ECHO none
\i test/sql/join_harness.inc
\set ECHO all

-- ji_fetches(q): the view that answered q and its Heap Fetches (from
-- join_plan's EXPLAIN ANALYZE, with the device shown; a shared image, on a
-- server that preloads the extension, is the image view)
CREATE FUNCTION ji_fetches(q text) RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(replace(trim(l), ' (shared image)', ''), ', ') FROM join_plan(q, true, 'Lookups') l
	WHERE l ~ '^\s*(Device|Heap Fetches): '
$$;

-- ji_index_only(q): does q's plan answer from the index?
CREATE FUNCTION ji_index_only(q text) RETURNS boolean LANGUAGE sql AS $$
	SELECT coalesce(bool_or(l ~ '^\s*Index Only: true'), false) FROM join_plan(q) l
$$;

SELECT setseed(0.2024);
-- inner: keys with duplicates and extremes, every allowed type included,
-- NULLs in each included column, a column (w) and a text the index lacks
CREATE TABLE ji_inner (k int4, v int8, f float8, d date, b bool, s int2,
					   t timestamptz, r float4, o oid, w int4, note text);
INSERT INTO ji_inner
SELECT CASE WHEN rnd < 0.03 THEN NULL
			WHEN rnd < 0.05 THEN (ARRAY[-2147483648, 2147483647, 0])[1 + (g % 3)]
			WHEN rnd < 0.35 THEN (random() * 40)::int4
			ELSE (random() * 8000)::int4 END,
	   CASE WHEN g % 11 = 0 THEN NULL ELSE g * 1000003::int8 - 5000000000 END,
	   CASE WHEN g % 13 = 0 THEN NULL ELSE (g % 977) / 8.0 - 50 END,
	   CASE WHEN g % 17 = 0 THEN NULL ELSE date '2000-01-01' + g % 9000 END,
	   CASE WHEN g % 19 = 0 THEN NULL ELSE g % 3 = 0 END,
	   CASE WHEN g % 23 = 0 THEN NULL ELSE (g % 65535 - 32767)::int2 END,
	   CASE WHEN g % 29 = 0 THEN NULL ELSE timestamptz '2020-01-01 00:00+00' + g * interval '37 minutes' END,
	   CASE WHEN g % 31 = 0 THEN NULL ELSE (g % 101) / 4.0 END,
	   CASE WHEN g % 37 = 0 THEN NULL ELSE (g * 7)::oid END,
	   g, 'n' || g
FROM (SELECT g, random() AS rnd FROM generate_series(1, 12000) g) s;
CREATE INDEX ji_inner_k ON ji_inner USING eytzgpu (k) INCLUDE (v, f, d, b, s, t, r, o);
-- only the VACUUMs below set the visibility map
ALTER TABLE ji_inner SET (autovacuum_enabled = off);
VACUUM ANALYZE ji_inner;

-- outer: keys in and beyond the inner's, repeats, NULLs, ranges
CREATE TABLE ji_outer (k int4, x int4, lo int4, hi int4);
INSERT INTO ji_outer
SELECT CASE WHEN rnd < 0.04 THEN NULL
			WHEN rnd < 0.06 THEN (ARRAY[-2147483648, 2147483647])[1 + (g % 2)]
			ELSE (random() * 8500)::int4 END, g, (g * 31) % 8000, (g * 31) % 8000 + g % 5
FROM (SELECT g, random() AS rnd FROM generate_series(1, 4000) g) s;
INSERT INTO ji_outer SELECT k, x + 100000, lo, hi FROM ji_outer WHERE x % 10 = 0;
ANALYZE ji_outer;

SET eytzgpu.device = cpu;
-- PostgreSQL's own answer takes the inner values from the table (no Index
-- Only Scan of the index under test)
SET enable_indexonlyscan = off;

-- the plan says when the index answers: only key and included columns
SELECT join_plan('SELECT o.x, i.v FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
SELECT ji_index_only('SELECT o.x, i.k, i.v, i.f, i.d, i.b, i.s, i.t, i.r, i.o FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
SELECT ji_index_only('SELECT count(*) FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
SELECT ji_index_only('SELECT o.x, i.v FROM ji_outer o JOIN ji_inner i ON i.k = o.k AND i.f > o.x / 100.0 WHERE i.b');
-- a column the index lacks, a system column, the whole row: the heap
SELECT ji_index_only('SELECT o.x, i.w FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
SELECT ji_index_only('SELECT o.x, i.v FROM ji_outer o JOIN ji_inner i ON i.k = o.k WHERE i.note <> ''''');
SELECT ji_index_only('SELECT o.x, i.ctid FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
SELECT ji_index_only('SELECT o.x, i FROM ji_outer o JOIN ji_inner i ON i.k = o.k');

-- the index pages as the view (few outer rows, no image cached yet): the
-- values are read beside the TIDs (a server that preloads the extension
-- answers from the image all its backends share instead)
SET eytzgpu.image_cache_limit = 0;
SELECT join_check('SELECT o.x, i.k, i.v, i.f, i.b FROM (SELECT * FROM ji_outer WHERE x < 40) o JOIN ji_inner i ON i.k = o.k');
SELECT join_check('SELECT o.x, i.k, i.s FROM (SELECT * FROM ji_outer WHERE x < 40) o JOIN ji_inner i ON i.k BETWEEN o.lo AND o.hi');
SELECT ji_fetches('SELECT o.x, i.v FROM (SELECT * FROM ji_outer WHERE x < 5) o JOIN ji_inner i ON i.k = o.k')
	IN ('Device: cpu (index pages), Heap Fetches: 0',
		CASE WHEN current_setting('shared_preload_libraries') ~ 'eytzgpu' THEN 'Device: cpu, Heap Fetches: 0' END)
	AS index_answers;
RESET eytzgpu.image_cache_limit;

-- after VACUUM every match is answered from the index
SELECT ji_fetches('SELECT o.x, i.v, i.f FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
SELECT ji_fetches('SELECT count(*) FROM ji_outer o JOIN ji_inner i ON i.k BETWEEN o.lo AND o.hi');
-- ... and none when the join needs a column the index lacks
SELECT ji_fetches('SELECT o.x, i.w FROM ji_outer o JOIN ji_inner i ON i.k = o.k') <>
	   ji_fetches('SELECT o.x, i.v FROM ji_outer o JOIN ji_inner i ON i.k = o.k') AS heap_read;

-- the join types, ranges, quals on included columns, NULLs among them
CREATE FUNCTION ji_checks() RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	RETURN NEXT join_check('SELECT o.x, i.k, i.v, i.f, i.d, i.b, i.s, i.t, i.r, i.o FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
	RETURN NEXT join_check('SELECT o.x, i.v, i.f FROM ji_outer o LEFT JOIN ji_inner i ON i.k = o.k');
	RETURN NEXT join_check('SELECT o.x FROM ji_outer o WHERE EXISTS (SELECT 1 FROM ji_inner i WHERE i.k = o.k AND i.b)');
	RETURN NEXT join_check('SELECT o.x FROM ji_outer o WHERE NOT EXISTS (SELECT 1 FROM ji_inner i WHERE i.k = o.k AND i.f IS NOT NULL)');
	RETURN NEXT join_check('SELECT o.x, i.k, i.s FROM ji_outer o JOIN ji_inner i ON i.k BETWEEN o.lo AND o.hi');
	RETURN NEXT join_check('SELECT o.x, i.v FROM ji_outer o LEFT JOIN ji_inner i ON i.k >= o.lo AND i.k < o.hi AND i.d > date ''2010-01-01''');
	RETURN NEXT join_check('SELECT o.x, i.t FROM ji_outer o JOIN ji_inner i ON i.k = o.k AND i.v > o.x * 1000000::int8 - 5000000000 WHERE i.r IS NULL OR i.r > 3');
	RETURN NEXT join_check('SELECT i.k, count(*) AS n, sum(i.v) AS sv, min(i.f) AS mf, max(i.d) AS md, bool_or(i.b) AS ob, sum(i.s) AS ss, max(i.t) AS mt, sum(i.r) AS sr, max(i.o) AS mo FROM ji_outer o JOIN ji_inner i ON i.k = o.k GROUP BY i.k');
	RETURN NEXT join_check('SELECT o.x, i.w, i.v FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
	-- nothing per match reads the outer row (the index's matches skip it),
	-- or only a join qual does
	RETURN NEXT join_check('SELECT i.k, i.s, i.v FROM ji_outer o JOIN ji_inner i ON i.k BETWEEN o.lo AND o.hi');
	RETURN NEXT join_check('SELECT i.v, i.d FROM ji_outer o JOIN ji_inner i ON i.k = o.k AND i.v > o.x * 1000000::int8 - 5000000000');
	-- a LIMIT stops a chunk in its first pass, before its heap matches
	RETURN NEXT join_check('SELECT count(*) FROM (SELECT i.v FROM ji_outer o JOIN ji_inner i ON i.k = o.k LIMIT 1000) s');
	-- a row answered by the index and by the heap (pages not all-visible)
	RETURN NEXT join_check('SELECT o.x FROM ji_outer o WHERE EXISTS (SELECT 1 FROM ji_inner i WHERE i.k BETWEEN o.lo AND o.hi)');
END $$;
SELECT ji_checks();

-- small batches and chunks (many chunks per batch, keys with many matches)
SET eytzgpu.batch_size = 7;
SET work_mem = 64;
SELECT ji_checks();
RESET eytzgpu.batch_size;
RESET work_mem;

-- changes without VACUUM: entries in the pending list, tombstones to be,
-- included values changed (new heap versions); those pages are no longer
-- all-visible and their matches read the heap
UPDATE ji_inner SET v = v + 1, f = NULL WHERE w % 50 = 0;
UPDATE ji_inner SET b = NULL, s = 7 WHERE w % 77 = 0;
DELETE FROM ji_inner WHERE w % 45 = 0;
INSERT INTO ji_inner (k, v, f, d, b, s, t, r, o, w)
SELECT (random() * 8000)::int4, CASE WHEN g % 3 = 0 THEN NULL ELSE -g END, g / 3.0,
	   NULL, g % 2 = 0, NULL, now(), NULL, g::oid, -g
FROM generate_series(1, 700) g;
SELECT ji_checks();
SELECT ji_fetches('SELECT o.x, i.v, i.f FROM ji_outer o JOIN ji_inner i ON i.k = o.k') ~ 'Heap Fetches: 0$' AS no_fetches;

-- after VACUUM (the pending list merged) the index answers all again
VACUUM ji_inner;
SELECT ji_checks();
SELECT ji_fetches('SELECT o.x, i.v, i.f FROM ji_outer o JOIN ji_inner i ON i.k = o.k');

-- tombstones without a merge: VACUUM removes a few rows' entries and keeps
-- the generation (t/030 has a cached image that missed them)
SELECT count(*) > 0 AS cached FROM ji_outer o JOIN ji_inner i ON i.k = o.k;
DELETE FROM ji_inner WHERE w % 997 = 0;
VACUUM ji_inner;
SELECT ji_checks();
SELECT ji_fetches('SELECT o.x, i.v, i.f FROM ji_outer o JOIN ji_inner i ON i.k = o.k');


-- whatever device the machine has (the GPU where there is one)
RESET eytzgpu.device;
SELECT ji_checks();

-- serializable: index answers take predicate locks on their heap pages
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT join_check('SELECT o.x, i.v FROM ji_outer o JOIN ji_inner i ON i.k = o.k');
COMMIT;

DROP FUNCTION ji_checks();
DROP TABLE ji_outer, ji_inner;
DROP FUNCTION ji_fetches(text);
DROP FUNCTION ji_index_only(text);
