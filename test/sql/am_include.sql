-- am_include: covering eytzgpu indexes (INCLUDE).  Every allowed type is
-- stored; anything else is refused naming the column.  The values are
-- checked against the heap by eytzgpu_verify(idx, true) after builds (in
-- memory and spilled: the same pages), inserts (pending entries), merges,
-- DELETE + VACUUM and REINDEX; scans answer like a sequential scan.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pageinspect;
\set ECHO none
\i test/sql/am_harness.inc
\set ECHO all
SELECT setseed(0.47);

-- the index's pages from block first on, after the LSN and checksum (10
-- bytes), as one md5
CREATE FUNCTION inc_digest(idx regclass, first int DEFAULT 0) RETURNS text LANGUAGE sql AS $$
	SELECT md5(string_agg(md5(substr(get_raw_page(idx::text, b::int8), 11)), '' ORDER BY b))
	  FROM generate_series(first, pg_relation_size(idx) / current_setting('block_size')::int - 1) b
$$;

-- every allowed type, with NULLs, duplicates and extremes
CREATE TABLE inc (k int4, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8,
				  d date, ts timestamp, tz timestamptz, o oid, b bool);
CREATE FUNCTION inc_fill(n int, base int) RETURNS void LANGUAGE sql AS $$
	INSERT INTO inc
	SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE (random() * n / 3)::int4 END,
		   CASE WHEN g % 11 = 0 THEN NULL ELSE (random() * 60000 - 30000)::int2 END,
		   CASE WHEN g % 13 = 0 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END,
		   CASE WHEN g % 17 = 0 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END,
		   CASE WHEN g % 19 = 0 THEN NULL ELSE (random() - 0.5)::float4 * 1e6 END,
		   CASE WHEN g % 23 = 0 THEN NULL ELSE (random() - 0.5) * 1e300 END,
		   CASE WHEN g % 29 = 0 THEN NULL ELSE date '2000-01-01' + (random() * 20000)::int END,
		   CASE WHEN g % 31 = 0 THEN NULL ELSE timestamp '2000-01-01' + random() * interval '9000 days' END,
		   CASE WHEN g % 37 = 0 THEN NULL ELSE timestamptz '2000-01-01 UTC' + random() * interval '9000 days' END,
		   CASE WHEN g % 41 = 0 THEN NULL ELSE (random() * 4e9)::int8::oid END,
		   CASE WHEN g % 43 = 0 THEN NULL ELSE random() < 0.5 END
	  FROM generate_series(base, base + n - 1) g
$$;
SELECT inc_fill(20000, 1);
INSERT INTO inc VALUES
	(-2147483648, -32768, -2147483648, -9223372036854775808, '-Infinity', '-Infinity',
	 '-infinity', '-infinity', '-infinity', 0, false),
	(2147483647, 32767, 2147483647, 9223372036854775807, 'Infinity', 'Infinity',
	 'infinity', 'infinity', 'infinity', 4294967295, true),
	(0, 0, 0, 0, '-0', '-0', '4713-01-01 BC', '4713-01-01 BC', '294276-12-31 23:59:59 UTC', 1, NULL),
	(1, NULL, NULL, NULL, 'NaN', 'NaN', NULL, NULL, NULL, NULL, NULL),
	(1, 1, 1, 1, '1e-45', '4.9e-324', '5874897-12-31', '294276-12-31 23:59:59', NULL, 2, true);
CREATE INDEX inc_all ON inc USING eytzgpu (k) INCLUDE (i2, i4, i8, f4, f8, d, ts, tz, o, b);
SELECT eytzgpu_verify('inc_all', true);
SELECT pg_get_indexdef('inc_all'::regclass);
SELECT include, entries FROM eytzgpu_info('inc_all');
SELECT * FROM am_check('inc_all', ARRAY['k = 1', 'k BETWEEN 100 AND 300', 'k < 0',
	'k >= 2147483647', 'k IN (5, 6, 7)']);

-- inserts: pending entries carry the values
SELECT inc_fill(3000, 100000);
SELECT pending > 0 AS pending FROM eytzgpu_info('inc_all');
SELECT eytzgpu_verify('inc_all', true);
SELECT * FROM am_check('inc_all', ARRAY['k BETWEEN 100 AND 300', 'k < 10']);

-- a merge carries the layout's and the pending entries' values
SELECT eytzgpu_merge('inc_all') > 1 AS merged;
SELECT pending, dead FROM eytzgpu_info('inc_all');
SELECT eytzgpu_verify('inc_all', true);
-- the merged pages are those a fresh build of the same entries writes (the
-- metapages differ: generation)
CREATE INDEX inc_fresh ON inc USING eytzgpu (k) INCLUDE (i2, i4, i8, f4, f8, d, ts, tz, o, b);
SELECT inc_digest('inc_all', 1) = inc_digest('inc_fresh', 1) AS same_pages;
DROP INDEX inc_fresh;

-- DELETE + VACUUM: tombstones keep their values; then a merge drops them
DELETE FROM inc WHERE k % 5 = 0;
SELECT inc_fill(500, 200000);
VACUUM inc;
SELECT eytzgpu_verify('inc_all', true);
SELECT * FROM am_check('inc_all', ARRAY['k BETWEEN 0 AND 2000', 'k = 1']);
-- fewer than 20% dead and nothing pending: VACUUM only tombstones them
DELETE FROM inc WHERE k % 7 = 0;
VACUUM inc;
SELECT dead > 0 AS tombstones FROM eytzgpu_info('inc_all');
SELECT eytzgpu_verify('inc_all', true);
SELECT * FROM am_check('inc_all', ARRAY['k BETWEEN 0 AND 2000', 'k = 1']);
REINDEX INDEX inc_all;
SELECT eytzgpu_verify('inc_all', true);

-- the spilled build (tuplesort of the pairs with their values) writes the
-- in-memory build's pages: build_both(tbl, include) builds both and says
-- whether they are the same and pass eytzgpu_verify(idx, true)
CREATE FUNCTION build_both(tbl text, include text, OUT identical bool, OUT verified bool)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('maintenance_work_mem', '1GB', true);
	EXECUTE format('CREATE INDEX %I ON %I USING eytzgpu (k) INCLUDE (%s)', tbl || '_mem', tbl, include);
	PERFORM set_config('maintenance_work_mem', '1MB', true);
	EXECUTE format('CREATE INDEX %I ON %I USING eytzgpu (k) INCLUDE (%s)', tbl || '_spill', tbl, include);
	identical := inc_digest((tbl || '_mem')::regclass) = inc_digest((tbl || '_spill')::regclass);
	verified := eytzgpu_verify((tbl || '_spill')::regclass, true);
	EXECUTE format('DROP INDEX %I, %I', tbl || '_mem', tbl || '_spill');
END
$$;
SELECT * FROM build_both('inc', 'i2, f8, b, ts');

-- edge sizes: 0 and 1 entries, and a page boundary of each width
CREATE TABLE incs (k int8, v1 bool, v2 int2, v4 float4, v8 int8);
CREATE INDEX incs_i ON incs USING eytzgpu (k) INCLUDE (v1, v2, v4, v8);
CREATE INDEX incs_plain ON incs USING eytzgpu (k);
SELECT i.include, p.include AS plain FROM eytzgpu_info('incs_i') i, eytzgpu_info('incs_plain') p;
DROP INDEX incs_plain;
SELECT eytzgpu_verify('incs_i', true);
INSERT INTO incs VALUES (1, NULL, 2, NULL, 4);
SELECT eytzgpu_verify('incs_i', true);
REINDEX INDEX incs_i;
SELECT eytzgpu_verify('incs_i', true);
SELECT entries, pg_relation_size('incs_i') / 8192 AS blocks FROM eytzgpu_info('incs_i');
-- 8152 bytes a page: 8152 bools (and NULL bits for 65216), 4076 int2,
-- 2038 float4, 1019 int8 (and int8 keys)
CREATE FUNCTION incs_size(rows int) RETURNS TABLE (n int, blocks int8, verified bool)
LANGUAGE plpgsql AS $$
BEGIN
	TRUNCATE incs;
	INSERT INTO incs SELECT g % 1000, g % 3 = 0, NULLIF(g % 9, 0), g / 7.0, g * 1000003::int8
	  FROM generate_series(1, rows) g;
	REINDEX INDEX incs_i;
	RETURN QUERY SELECT rows, pg_relation_size('incs_i') / 8192,
		eytzgpu_verify('incs_i', true);
END
$$;
SELECT (incs_size(n)).* FROM unnest(ARRAY[1018, 1019, 1020, 2038, 2039, 4076, 4077, 8152, 8153, 65216, 65217]) n;

-- types that are not stored: ERROR 0A000 naming the column
CREATE TABLE incbad (k int4, t text, n numeric, u uuid, a int4[], c char(1), m money);
SELECT am_error(format('CREATE INDEX ON incbad USING eytzgpu (k) INCLUDE (%s)', c))
  FROM unnest(ARRAY['t', 'n', 'u', 'a', 'c', 'm']) c;
SELECT am_error('CREATE INDEX ON incbad USING eytzgpu (k) INCLUDE (k, k, k, k, k, k, k, k, k, k, k, k, k, k, k, k, k)');
CREATE UNLOGGED TABLE incbad_u (k int4, t text);
SELECT am_error('CREATE INDEX ON incbad_u USING eytzgpu (k) INCLUDE (t)');

-- 65217 rows of 4 included columns: far beyond 1MB (about 70 bytes a pair
-- in memory), so spilled
SELECT * FROM build_both('incs', 'v1, v2, v4, v8');

-- index-only scans: the key (for the types that decode exactly) and the
-- included values come from the index; the visibility map decides, as for
-- btree.  ios_check(q, btree) runs q as an index-only scan and with a
-- sequential scan and compares the rows as text (so -0 is not 0); given a
-- btree definition with the same INCLUDE, it also runs q as that btree's
-- index-only scan (built in a subtransaction, instead of the eytzgpu
-- index) and compares the heap fetches: after VACUUM both indexes hold the
-- same entries and the heap the same visibility map, whatever a concurrent
-- snapshot let VACUUM do.
SET eytzgpu.enable_join = off;
CREATE FUNCTION ios_check(q text, btree text DEFAULT NULL) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	plan text;
	btree_plan text;
	eytz_index text;
	fetches text;
	missing int8;
	extra int8;
	n int8;
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || q INTO plan;
	IF plan NOT LIKE '%"Node Type": "Index Only Scan"%' THEN
		RETURN 'no index-only scan: ' || substring(plan FROM '"Node Type": "([^"]*)"');
	END IF;
	fetches := substring(plan FROM '"Heap Fetches": ([0-9]+)');
	IF btree IS NOT NULL THEN
		eytz_index := substring(plan FROM '"Index Name": "([^"]*)"');
		BEGIN
			EXECUTE format('DROP INDEX %I', eytz_index);
			EXECUTE btree;
			EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || q
			   INTO btree_plan;
			RAISE EXCEPTION 'roll back the btree';
		EXCEPTION WHEN raise_exception THEN
			NULL;
		END;
		fetches := CASE WHEN btree_plan NOT LIKE '%"Node Type": "Index Only Scan"%' THEN 'no btree index-only scan'
						WHEN substring(btree_plan FROM '"Heap Fetches": ([0-9]+)') = fetches THEN 'as btree'
						ELSE fetches || ', btree ' || substring(btree_plan FROM '"Heap Fetches": ([0-9]+)') END;
	ELSE
		fetches := CASE WHEN fetches::int8 > 0 THEN 'some' ELSE 'none' END;
	END IF;
	EXECUTE format('CREATE TEMP TABLE ios_got AS SELECT t::text AS r FROM (%s) t', q);
	PERFORM set_config('enable_seqscan', 'on', true);
	PERFORM set_config('enable_indexscan', 'off', true);
	EXECUTE format('CREATE TEMP TABLE ios_ref AS SELECT t::text AS r FROM (%s) t', q);
	PERFORM set_config('enable_indexscan', 'on', true);
	SELECT count(*) INTO missing FROM (SELECT r FROM ios_ref EXCEPT ALL SELECT r FROM ios_got) x;
	SELECT count(*) INTO extra FROM (SELECT r FROM ios_got EXCEPT ALL SELECT r FROM ios_ref) x;
	SELECT count(*) INTO n FROM ios_ref;
	DROP TABLE ios_got, ios_ref;
	RETURN format('%s rows, %s missing, %s extra, heap fetches %s', n, missing, extra, fetches);
END
$$;

CREATE TABLE ios (k int8, a int4, b float8, c bool, d timestamptz);
INSERT INTO ios
SELECT CASE WHEN g % 101 = 0 THEN NULL ELSE (random() * 5000)::int8 END,
	   CASE WHEN g % 7 = 0 THEN NULL ELSE (random() * 1e6)::int4 END,
	   CASE WHEN g % 11 = 0 THEN NULL WHEN g % 13 = 0 THEN '-0' ELSE random() END,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE g % 2 = 0 END,
	   timestamptz '2020-01-01 UTC' + g * interval '1 minute'
  FROM generate_series(1, 30000) g;
INSERT INTO ios VALUES (-9223372036854775808, 1, 'NaN', true, '-infinity'),
	(9223372036854775807, -1, '-Infinity', false, 'infinity');
CREATE INDEX ios_i ON ios USING eytzgpu (k) INCLUDE (a, b, c, d);
VACUUM ANALYZE ios;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT k, a FROM ios WHERE k BETWEEN 100 AND 200;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT ios_check(q, 'CREATE INDEX ON ios (k) INCLUDE (a, b, c, d)') FROM unnest(ARRAY[
	'SELECT k, a FROM ios WHERE k BETWEEN 100 AND 200',
	'SELECT k, a, b, c, d FROM ios WHERE k < 1000',
	'SELECT b, d FROM ios WHERE k IN (1, 2, 3, 4999)',
	'SELECT k FROM ios WHERE k >= 4990',
	'SELECT * FROM ios WHERE k IN (-9223372036854775808, 9223372036854775807)',
	'SELECT count(*), sum(a), count(b), count(c) FROM ios WHERE k > 2500']) q;

-- VACUUM without index cleanup sets the visibility map of the new rows'
-- pages and leaves the pending entries: index-only scans read their values
INSERT INTO ios SELECT k, a + 7, b, c, d FROM ios WHERE k BETWEEN 2000 AND 2100;
VACUUM (INDEX_CLEANUP off) ios;
SELECT pending > 0 AS pending FROM eytzgpu_info('ios_i');
SELECT ios_check(q, 'CREATE INDEX ON ios (k) INCLUDE (a, b, c, d)') FROM unnest(ARRAY[
	'SELECT k, a, b, c, d FROM ios WHERE k BETWEEN 1900 AND 2200',
	'SELECT k, a FROM ios WHERE k > 4000']) q;

-- without VACUUM: updated and deleted rows need the heap, the new values
-- come from pending entries, and every result is still PostgreSQL's own
UPDATE ios SET a = a + 1, b = -b WHERE k % 10 = 3;
DELETE FROM ios WHERE k % 10 = 7;
INSERT INTO ios SELECT k + 1, a, b, NOT c, d FROM ios WHERE k BETWEEN 1000 AND 1100;
SELECT ios_check(q) FROM unnest(ARRAY[
	'SELECT k, a, b FROM ios WHERE k BETWEEN 0 AND 1200',
	'SELECT k, c FROM ios WHERE k < 100']) q;
VACUUM ios;
SELECT pending, dead FROM eytzgpu_info('ios_i');
SELECT ios_check('SELECT k, a, b, c, d FROM ios WHERE k BETWEEN 0 AND 2500',
				 'CREATE INDEX ON ios (k) INCLUDE (a, b, c, d)');
SELECT eytzgpu_verify('ios_i', true);

-- the inner side of a nested loop: rescans
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT ios_check('SELECT s.x, i.k, i.a FROM generate_series(1, 300, 7) s(x) JOIN ios i ON i.k = s.x',
				 'CREATE INDEX ON ios (k) INCLUDE (a)');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- while an index-only scan holds TIDs the executor may not have checked
-- against the visibility map, it holds the page lock that VACUUM's
-- ambulkdelete takes exclusively (else VACUUM could remove a tuple and its
-- page turn all-visible in between); merges, which remove nothing from the
-- heap, and inserts go on
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
DECLARE ios_cur CURSOR FOR SELECT k, a FROM ios WHERE k BETWEEN 0 AND 2500;
FETCH 2 FROM ios_cur \g /dev/null
SELECT page, mode, granted FROM pg_locks
 WHERE locktype = 'page' AND relation = 'ios_i'::regclass AND pid = pg_backend_pid();
INSERT INTO ios VALUES (1, 1, 1, true, now());
SELECT eytzgpu_merge('ios_i') > 0 AS merged;
FETCH ALL FROM ios_cur \g /dev/null
CLOSE ios_cur;
SELECT count(*) AS page_locks FROM pg_locks
 WHERE locktype = 'page' AND relation = 'ios_i'::regclass AND pid = pg_backend_pid();
ROLLBACK;

-- every key type that decodes exactly returns its key; float keys do not
-- (-0 is stored as 0): those plans read the heap
CREATE TABLE iosk_types (typ text, expr text, qual text);
INSERT INTO iosk_types VALUES
	('int2', '(g % 300 - 150)::int2', 'k >= -32768'),
	('int4', 'CASE WHEN g = 1 THEN -2147483648 WHEN g = 2 THEN 2147483647 ELSE g % 97 END', 'k <= 2147483647'),
	('int8', 'g::int8 * 1000003 - 1500000000', 'k > -9223372036854775808'),
	('oid', '(g::int8 * 1431655)::oid', 'k >= 0'),
	('date', 'date ''2000-02-29'' + g * 3', 'k >= ''-infinity'''),
	('timestamp', 'timestamp ''1999-12-31 23:59:59.999999'' + g * interval ''1 hour 1 microsecond''', 'k <= ''infinity'''),
	('timestamptz', 'CASE WHEN g = 1 THEN ''-infinity''::timestamptz ELSE timestamptz ''2024-02-29 12:00 UTC'' + g * interval ''1 day'' END', 'k >= ''-infinity''');
SELECT format('CREATE TABLE %I (k %s, v int4)', 'iosk_' || typ, typ),
	   format('INSERT INTO %I SELECT %s, g FROM generate_series(1, 3000) g', 'iosk_' || typ, expr),
	   format('CREATE INDEX ON %I USING eytzgpu (k) INCLUDE (v)', 'iosk_' || typ),
	   format('VACUUM ANALYZE %I', 'iosk_' || typ)
  FROM iosk_types \gexec
SELECT typ, ios_check(format('SELECT k, v FROM %I WHERE %s', 'iosk_' || typ, qual),
					 format('CREATE INDEX ON %I (k) INCLUDE (v)', 'iosk_' || typ))
  FROM iosk_types;

CREATE TABLE iosf (k float8, v int4);
INSERT INTO iosf VALUES ('-0', 1), (0, 2), ('NaN', 3), (1.5, 4);
CREATE INDEX iosf_i ON iosf USING eytzgpu (k) INCLUDE (v);
VACUUM ANALYZE iosf;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT k, v FROM iosf WHERE k <= 0;
SELECT k, v FROM iosf WHERE k <= 0 ORDER BY v;
EXPLAIN (COSTS OFF) SELECT v FROM iosf WHERE k <= 0;
SELECT v FROM iosf WHERE k <= 0 ORDER BY v;
RESET enable_seqscan;
RESET enable_bitmapscan;
