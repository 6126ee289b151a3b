-- am_include: covering eytzgpu indexes (INCLUDE).  Every allowed type is
-- stored; anything else is refused naming the column.  The values are
-- checked against the heap by eytzgpu_verify(idx, true) after builds (in
-- memory and spilled: the same pages), inserts (pending entries), merges,
-- DELETE + VACUUM and REINDEX; scans answer like a sequential scan.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pageinspect;
\set ECHO none
\i sql/am_harness.inc
\set ECHO all
SELECT setseed(0.31);

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
-- in-memory build's pages
SET maintenance_work_mem = '1GB';
CREATE INDEX inc_mem ON inc USING eytzgpu (k) INCLUDE (i2, f8, b, ts);
SET maintenance_work_mem = '1MB';
CREATE INDEX inc_spill ON inc USING eytzgpu (k) INCLUDE (i2, f8, b, ts);
RESET maintenance_work_mem;
SELECT inc_digest('inc_mem') = inc_digest('inc_spill') AS identical,
	   eytzgpu_verify('inc_spill', true) AS verified;
DROP INDEX inc_mem, inc_spill;

-- edge sizes: 0 and 1 entries, and a page boundary of each width
CREATE TABLE incs (k int8, v1 bool, v2 int2, v4 float4, v8 int8);
CREATE INDEX incs_i ON incs USING eytzgpu (k) INCLUDE (v1, v2, v4, v8);
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
SET maintenance_work_mem = '1GB';
CREATE INDEX incs_mem ON incs USING eytzgpu (k) INCLUDE (v1, v2, v4, v8);
SET maintenance_work_mem = '1MB';
CREATE INDEX incs_spill ON incs USING eytzgpu (k) INCLUDE (v1, v2, v4, v8);
RESET maintenance_work_mem;
SELECT inc_digest('incs_mem') = inc_digest('incs_spill') AS identical,
	   eytzgpu_verify('incs_spill', true) AS verified;
