-- am_anyarray: "k = ANY(array)" and "k IN (...)" on eytzgpu indexes, whose
-- many keys are answered by batched lookups (eytzarrayscan.c).  Every query
-- gives the rows a sequential scan gives, through an index scan, an
-- index-only scan and a bitmap scan (forced), on random keys with
-- duplicates, NULLs and extremes, with pending (unmerged) entries and
-- deleted rows; arrays of 0, 1, 2 and many keys, with NULL elements and
-- duplicates, all misses, all hits, of other integer types, from InitPlans,
-- prepared statements (generic plans) and the outer side of a nested loop
-- (rescans with another array each time); and the planner takes the
-- eytzgpu index over a btree for many keys and the btree for few.
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
SELECT setseed(0.26);

-- keys in [-20000, 20000], 7 repeated ~4600 times, NULLs and the extremes
CREATE TABLE aa (k int4, v int8, d date);
INSERT INTO aa
SELECT CASE WHEN g % 50 = 0 THEN NULL
			WHEN g % 997 = 0 THEN 2147483647
			WHEN g % 991 = 0 THEN -2147483648
			WHEN g % 13 = 0 THEN 7
			ELSE (random() * 40000)::int4 - 20000 END,
	   g, date '2000-01-01' + (random() * 3000)::int
  FROM generate_series(1, 60000) g;
CREATE INDEX aa_k ON aa USING eytzgpu (k) INCLUDE (v) WITH (pending_limit = 100000);
CREATE INDEX aa_d ON aa USING eytzgpu (d) WITH (pending_limit = 100000);
VACUUM ANALYZE aa;
-- pending entries (not merged) and deleted rows (not vacuumed)
INSERT INTO aa
SELECT CASE WHEN g % 7 = 0 THEN 7 ELSE (random() * 40000)::int4 - 20000 END,
	   g, date '2000-01-01' + (random() * 3000)::int
  FROM generate_series(60001, 63000) g;
DELETE FROM aa WHERE v % 17 = 0;
SELECT entries, pending FROM eytzgpu_info('aa_k');

CREATE TABLE arrs (name text PRIMARY KEY, a int4[]);
INSERT INTO arrs VALUES
	('empty', '{}'),
	('one', '{7}'),
	('two', ARRAY[-2147483648, 2147483647]),
	('null', '{NULL}'),
	('nulls', '{NULL,5,NULL,5,-5}'),
	('misses', ARRAY(SELECT 100000 + g FROM generate_series(1, 500) g)),
	('hits', ARRAY(SELECT k FROM aa WHERE k IS NOT NULL ORDER BY v LIMIT 3000)),
	('pending', ARRAY(SELECT k FROM aa WHERE v > 60000 ORDER BY v)),
	('small', ARRAY(SELECT (random() * 40000)::int4 - 20000 FROM generate_series(1, 50))),
	('big', ARRAY(SELECT CASE WHEN g % 100 = 0 THEN NULL
							  ELSE (random() * 44000)::int4 - 22000 END
					FROM generate_series(1, 12000) g));

-- force_scan(mode): this transaction's plans scan aa by mode ('Seq Scan',
-- 'Index Scan', 'Index Only Scan' or 'Bitmap Heap Scan') where they can
CREATE FUNCTION force_scan(mode text) RETURNS void LANGUAGE sql AS $$
	SELECT set_config('enable_seqscan', (mode = 'Seq Scan')::text, true),
		   set_config('enable_indexscan', (mode IN ('Index Scan', 'Index Only Scan'))::text, true),
		   set_config('enable_indexonlyscan', (mode = 'Index Only Scan')::text, true),
		   set_config('enable_bitmapscan', (mode = 'Bitmap Heap Scan')::text, true);
$$;

-- aa_check(qual, cols, refqual, tab): "SELECT <cols> FROM <tab> WHERE <qual>" (as
-- a count and a sum of row hashes) through each scan type, against a
-- sequential scan of "WHERE <refqual>" (default: qual; "k IN (SELECT
-- unnest(...))" for the arrays of parameters, which a sequential scan would
-- compare with every element of the array for every row); 'ok <rows>' or
-- what went wrong
CREATE FUNCTION aa_check(qual text, cols text DEFAULT 'k, v', refqual text DEFAULT NULL,
						 tab text DEFAULT 'aa')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	sel text := format('SELECT count(*)::text || '' '' || coalesce(sum(hashtext(ROW(%s)::text)::int8), 0) FROM %I WHERE ',
					   cols, tab);
	q text := sel || qual;
	ref text;
	got text;
	plan text;
	mode text;
	res text := '';
BEGIN
	PERFORM force_scan('Seq Scan');
	EXECUTE sel || coalesce(refqual, qual) INTO ref;
	FOREACH mode IN ARRAY ARRAY['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan'] LOOP
		PERFORM force_scan(mode);
		EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO plan;
		IF plan NOT LIKE format('%%"Node Type": "%s"%%', mode) THEN
			res := res || format(' [no %s]', mode);
		END IF;
		EXECUTE q INTO got;
		IF got <> ref THEN
			res := res || format(' [%s: %s rows, expected %s]', mode,
								 split_part(got, ' ', 1), split_part(ref, ' ', 1));
		END IF;
	END LOOP;
	RETURN CASE WHEN res = '' THEN 'ok ' || split_part(ref, ' ', 1) ELSE 'FAIL' || res END;
END
$$;

-- the arrays as InitPlan parameters
SELECT name, cardinality(a) AS n,
	   aa_check(format('k = ANY((SELECT a FROM arrs WHERE name = %L)::int4[])', name), 'k, v',
				format('k IN (SELECT unnest(a) FROM arrs WHERE name = %L)', name))
  FROM arrs ORDER BY name;
-- literals, IN lists, other integer types (out-of-range elements match nothing)
SELECT q, aa_check(q, 'k, v', r) FROM (VALUES
	('k = ANY((SELECT a::int8[] FROM arrs WHERE name = ''big'')::int8[])',
	 'k IN (SELECT unnest(a::int8[]) FROM arrs WHERE name = ''big'')'),
	('k = ANY((SELECT a::int2[] FROM arrs WHERE name = ''small'')::int2[])', NULL)) v(q, r);
SELECT q, aa_check(q) FROM unnest(ARRAY[
	'k = ANY(''{}''::int4[])',
	'k IN (7, 8, 9, NULL)',
	'k IN (-2147483648, 0, 2147483647)',
	'k = ANY(''{7,-5,100,7}''::int2[])',
	'k = ANY(ARRAY[7, 2147483648, -2147483649, 2147483647, 5]::int8[])',
	'k = ANY((SELECT array_agg(x::int8 * 65536) FROM generate_series(-5, 5) x)::int8[])']) q;
-- with range quals and a second array on the same column
SELECT format('%s AND %s', a, b) AS q,
	   aa_check(format('%s AND %s', a, b), 'k, v', format('%s AND %s', ra, b))
  FROM (VALUES ('big', 'k > 5'), ('big', 'k BETWEEN -1000 AND 1000'), ('big', 'k < -30000'),
			   ('big', 'k = ANY((SELECT a FROM arrs WHERE name = ''hits'')::int4[])'),
			   ('hits', 'k >= 7::int8 AND k <= 7')) v(name, b),
	   LATERAL (SELECT format('k = ANY((SELECT a FROM arrs WHERE name = %L)::int4[])', name) a,
					   format('k IN (SELECT unnest(a) FROM arrs WHERE name = %L)', name) ra) f;
SELECT aa_check('k < ANY(''{-19000,-19500}''::int4[])');
-- a date column: date, timestamp and timestamptz arrays
SELECT q, aa_check(q, 'd') FROM unnest(ARRAY[
	'd = ANY((SELECT array_agg(date ''2000-01-01'' + x * 7) FROM generate_series(0, 500) x)::date[])',
	'd = ANY((SELECT array_agg(timestamp ''2000-01-01'' + x * interval ''12 hours'') FROM generate_series(0, 1000) x)::timestamp[])',
	'd = ANY(ARRAY[''2001-01-01'', ''2001-01-01 00:00:01'', ''infinity'', NULL]::timestamp[])',
	'd = ANY((SELECT array_agg(timestamptz ''2000-01-01'' + x * interval ''1 day'') FROM generate_series(0, 300) x)::timestamptz[])']) q;

-- (an InitPlan's output as PostgreSQL 15 prints it: 17 names it "(InitPlan 1).col1")
CREATE FUNCTION plan_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		RETURN NEXT replace(replace(line, 'InitPlan 1 (returns $0)', 'InitPlan 1'),
							'(InitPlan 1).col1', '$0');
	END LOOP;
END $$;
SELECT plan_lines($q$SELECT count(*), sum(k::int8) FROM aa WHERE k = ANY((SELECT a FROM arrs WHERE name = 'big')::int4[])$q$);
DROP FUNCTION plan_lines;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(v) FROM aa WHERE k = ANY('{1,2,3}') AND k > 1;

-- a prepared statement's generic plan: the array is a parameter
PREPARE pa(int4[]) AS
	SELECT count(*)::text || ' ' || coalesce(sum(hashtext(ROW(k, v)::text)::int8), 0)
	  FROM aa WHERE k = ANY($1);
SET plan_cache_mode = force_generic_plan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) EXECUTE pa('{1,2}');
CREATE TEMP TABLE pa_got (name text, scan text, got text);
DO $$
DECLARE
	r record;
	g text;
BEGIN
	FOR r IN SELECT name, a FROM arrs LOOP
		PERFORM set_config('enable_indexonlyscan', 'on', true);
		EXECUTE format('EXECUTE pa(%L)', r.a) INTO g;
		INSERT INTO pa_got VALUES (r.name, 'ios', g);
		PERFORM set_config('enable_indexonlyscan', 'off', true);
		EXECUTE format('EXECUTE pa(%L)', r.a) INTO g;
		INSERT INTO pa_got VALUES (r.name, 'index', g);
	END LOOP;
END
$$;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET plan_cache_mode;
SELECT p.name, p.scan, p.got = (SELECT count(*)::text || ' ' || coalesce(sum(hashtext(ROW(k, v)::text)::int8), 0)
								  FROM (SELECT k, v FROM aa OFFSET 0) s
								 WHERE k IN (SELECT unnest(a.a))) AS same
  FROM pa_got p JOIN arrs a USING (name) ORDER BY 1, 2;

-- rescans: the inner index scan of a nested loop gets another array for
-- each outer row
CREATE FUNCTION rescan_check(mode text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	sel text := 'SELECT string_agg(o.name || '':'' || s.c, '' '' ORDER BY o.name)
				   FROM arrs o, LATERAL (SELECT count(*)::text || ''/'' || coalesce(sum(hashtext(ROW(k, v)::text)::int8), 0) c
										   FROM aa WHERE ';
	q text := sel || 'aa.k = ANY(o.a)) s';
	ref text;
	got text;
	plan text;
BEGIN
	PERFORM force_scan('Seq Scan');
	EXECUTE sel || 'aa.k IN (SELECT unnest(o.a))) s' INTO ref;
	PERFORM force_scan(mode);
	EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO plan;
	EXECUTE q INTO got;
	RETURN format('%s %s on aa: %s', mode,
				  CASE WHEN plan LIKE format('%%"Node Type": "%s"%%', mode) THEN 'used' ELSE 'NOT USED' END,
				  CASE WHEN got = ref THEN 'same' ELSE 'DIFFERENT: ' || got || ' expected ' || ref END);
END
$$;
SELECT rescan_check(m) FROM unnest(ARRAY['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan']) m;

-- a cursor read in steps (rows moved over each time, and their total against
-- a sequential scan), and a LIMIT
CREATE FUNCTION cursor_steps() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	c refcursor;
	n1 bigint;
	n2 bigint;
	n3 bigint;
BEGIN
	PERFORM force_scan('Index Scan');
	OPEN c FOR SELECT k, v FROM aa WHERE k = ANY((SELECT a FROM arrs WHERE name = 'big')::int4[]);
	MOVE FORWARD 3 IN c;
	GET DIAGNOSTICS n1 = ROW_COUNT;
	MOVE FORWARD 1000 IN c;
	GET DIAGNOSTICS n2 = ROW_COUNT;
	MOVE FORWARD ALL IN c;
	GET DIAGNOSTICS n3 = ROW_COUNT;
	CLOSE c;
	PERFORM force_scan('Seq Scan');
	RETURN format('%s, %s, then %s: %s', n1, n2, n3,
				  CASE WHEN n1 + n2 + n3 = (SELECT count(*) FROM (SELECT k FROM aa OFFSET 0) s
											 WHERE k IN (SELECT unnest(a) FROM arrs WHERE name = 'big'))
				  THEN 'all rows' ELSE 'WRONG COUNT' END);
END
$$;
SELECT cursor_steps();
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT k FROM aa WHERE k = ANY((SELECT a FROM arrs WHERE name = 'big')::int4[]) LIMIT 10) s;
RESET enable_seqscan;

-- the planner: a btree for a few keys, the batched eytzgpu lookup for many
CREATE TABLE ab (k int4);
INSERT INTO ab SELECT (random() * 400000)::int4 FROM generate_series(1, 200000);
CREATE INDEX ab_bt ON ab (k);
CREATE INDEX ab_ez ON ab USING eytzgpu (k);
VACUUM ANALYZE ab;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ab WHERE k = ANY('{1,2,3}');
-- the index a query's plan scans
CREATE FUNCTION scan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
BEGIN
	EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO plan;
	RETURN (SELECT string_agg(format('%s using %s', n->>'Node Type', n->>'Index Name'), ', ')
			  FROM jsonb_path_query(plan, 'strict $.**') n
			 WHERE jsonb_typeof(n) = 'object' AND n ? 'Index Name');
END
$$;
-- (PostgreSQL 17's btree costs an array of many keys as one scan, not a
-- descent per key: from 17 on the btree keeps this query; am_anyarray_1.out)
CREATE TABLE many AS SELECT array_agg((random() * 420000)::int4)::text AS a FROM generate_series(1, 20000);
SELECT scan_of(format('SELECT count(*), sum(k::int8) FROM ab WHERE k = ANY(%L::int4[])', a)) AS "20000 keys",
	   (SELECT count(*) FROM ab WHERE k = ANY(a::int4[])) =
	   (SELECT count(*) FROM (SELECT k FROM ab OFFSET 0) s WHERE k IN (SELECT unnest(a::int4[]))) AS same
  FROM many;

-- an index without INCLUDE columns on a VACUUMed table (the index-only
-- scan's chunks then take their keys in TID order): the arrays above,
-- other integer types and range quals, through each scan type against a
-- sequential scan, before and after pending entries come in
CREATE TABLE ac (k int4);
INSERT INTO ac
SELECT CASE WHEN g % 97 = 0 THEN NULL
			WHEN g % 89 = 0 THEN 2147483647
			WHEN g % 83 = 0 THEN -2147483648
			ELSE (random() * 24000)::int4 - 12000 END
  FROM generate_series(1, 40000) g;
CREATE INDEX ac_k ON ac USING eytzgpu (k) WITH (pending_limit = 100000);
VACUUM ANALYZE ac;
CREATE TABLE ac_q AS
SELECT format('k = ANY((SELECT a FROM arrs WHERE name = %L)::int4[])', name) AS q,
	   format('k IN (SELECT unnest(a) FROM arrs WHERE name = %L)', name) AS r
  FROM arrs
UNION ALL
SELECT q, NULL FROM unnest(ARRAY[
	'k IN (-2147483648, 0, 2147483647, NULL)',
	'k = ANY(ARRAY[7, 2147483648, -2147483649, 2147483647, 5, 5]::int8[])',
	'k = ANY(''{7,-5,100,7,NULL}''::int2[])',
	'k < ANY(''{-11900,-11950}''::int4[])',
	'k > ANY(''{11990,2147483646}''::int4[]) AND k = ANY(''{11995,11999,2147483647}''::int4[])']) q;
SELECT q, aa_check(q, 'k', r, 'ac') FROM ac_q ORDER BY q;
INSERT INTO ac SELECT (random() * 24000)::int4 - 12000 FROM generate_series(1, 3000);
SELECT q, aa_check(q, 'k', r, 'ac') FROM ac_q ORDER BY q;
-- ac's queries and aa's arrays with a setting of this transaction
CREATE FUNCTION checks_with(setting text, value text) RETURNS TABLE (q text, result text)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config(setting, value, true);
	RETURN QUERY SELECT c.q, aa_check(c.q, 'k', c.r, 'ac') FROM ac_q c ORDER BY c.q;
	RETURN QUERY
		SELECT a.name, aa_check(format('k = ANY((SELECT a FROM arrs WHERE name = %L)::int4[])', a.name),
								'k, v', format('k IN (SELECT unnest(a) FROM arrs WHERE name = %L)', a.name))
		  FROM arrs a ORDER BY a.name;
END
$$;
-- the batched search by groups of queries, level by level
-- (eytzgpu.search_prefetch; auto takes it for sparse batches into keys that
-- overflow the CPU's cache) forced on, on both tables
SELECT * FROM checks_with('eytzgpu.search_prefetch', 'on');
-- the index's pages pinned (eytzgpu.cpu_view = pinned) answer the scans
-- that need no values from the index (index and bitmap scans); index-only
-- scans stay on the image
SELECT * FROM checks_with('eytzgpu.cpu_view', 'pinned');
DROP FUNCTION checks_with(text, text);
DROP TABLE ac, ac_q;
DROP TABLE aa, ab, arrs;
DROP TABLE many;
-- float columns and arrays of the other float type: no recheck, so the
-- keys' conversion must be exact (float4 0.1 is not float8 0.1; NaN, -0,
-- Infinity): the index's answers against a sequential scan's
CREATE TABLE af (k float4, d float8);
INSERT INTO af SELECT (g % 100) / 10.0, (g % 100) / 10.0 FROM generate_series(1, 20000) g;
INSERT INTO af VALUES ('NaN', 'NaN'), ('-0', '-0'), ('Infinity', 'Infinity'), (NULL, NULL);
CREATE INDEX af_k ON af USING eytzgpu (k);
CREATE INDEX af_d ON af USING eytzgpu (d);
VACUUM ANALYZE af;
CREATE TEMP TABLE af_q AS SELECT * FROM unnest(ARRAY[
	'k = ANY(''{0.1,0.5,1.5,0,NaN,Infinity,0.30000001192092896}''::float8[])',
	'k = ANY(''{-0,2.5,9.9,NULL}''::float4[])',
	'd = ANY(''{0.1,0.5,1.5,0,NaN}''::float4[])',
	'd = ANY(''{-0,0.1,0.2,Infinity}''::float8[])']) q;
CREATE FUNCTION af_count(q text, scans boolean) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	PERFORM set_config('enable_seqscan', (NOT scans)::text, true);
	PERFORM set_config('enable_indexscan', scans::text, true);
	PERFORM set_config('enable_indexonlyscan', scans::text, true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	EXECUTE 'SELECT count(*) FROM af WHERE ' || q INTO n;
	RETURN n;
END $$;
SELECT q, af_count(q, true) AS index_scan, af_count(q, false) AS seq_scan FROM af_q ORDER BY q;
DROP TABLE af;
DROP FUNCTION af_count;

DROP FUNCTION aa_check, rescan_check, scan_of, cursor_steps, force_scan;
