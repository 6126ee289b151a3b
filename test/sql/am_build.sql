-- am_build: CREATE INDEX beyond maintenance_work_mem.  The same data is
-- built in memory (radix sort) and spilled (tuplesort, the layout written by
-- levels in one pass); both must give the same pages byte for byte (the
-- page LSN and checksum aside) and answer like a sequential scan.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pageinspect;
\set ECHO none
\i test/sql/am_harness.inc
\set ECHO all
SELECT setseed(0.77);

-- the index's pages after the LSN and checksum (10 bytes), as one md5
CREATE FUNCTION page_digest(idx regclass) RETURNS text LANGUAGE sql AS $$
	SELECT md5(string_agg(md5(substr(get_raw_page(idx::text, b::int8), 11)), '' ORDER BY b))
	  FROM generate_series(0, pg_relation_size(idx) / current_setting('block_size')::int - 1) b
$$;

-- builds idx_mem and idx_spill on tbl(col) WITH (opts), and says whether
-- the spilled build was needed and gave the same pages
CREATE FUNCTION build_both(tbl text, col text, opts text) RETURNS TABLE (
	entries int8, spilled bool, identical bool, verified bool) LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('DROP INDEX IF EXISTS %I, %I', tbl || '_mem', tbl || '_spill');
	PERFORM set_config('maintenance_work_mem', '1GB', true);
	EXECUTE format('CREATE INDEX %I ON %I USING eytzgpu (%I) WITH (%s)', tbl || '_mem', tbl, col, opts);
	PERFORM set_config('maintenance_work_mem', '1MB', true);
	EXECUTE format('CREATE INDEX %I ON %I USING eytzgpu (%I) WITH (%s)', tbl || '_spill', tbl, col, opts);
	RETURN QUERY SELECT i.entries,
		-- 1MB holds 32768 pairs of the in-memory sort (32 bytes each)
		i.entries > 32768,
		page_digest((tbl || '_mem')::regclass) = page_digest((tbl || '_spill')::regclass),
		eytzgpu_verify((tbl || '_mem')::regclass) AND eytzgpu_verify((tbl || '_spill')::regclass)
	  FROM eytzgpu_info((tbl || '_spill')::regclass) i;
END
$$;

-- int8: duplicates, NULLs, both extremes, negative and positive keys
CREATE TABLE b8 (k int8, v int4);
INSERT INTO b8
SELECT CASE WHEN g % 50 = 0 THEN NULL
			WHEN g % 7 = 0 THEN g % 100
			ELSE ((random() - 0.5) * 2e6)::int8 END, g
  FROM generate_series(1, 70000) g;
INSERT INTO b8 VALUES (9223372036854775807, -1), (-9223372036854775808, -2),
	(9223372036854775807, -3), (0, -4);
SELECT * FROM build_both('b8', 'k', 'layout = ebs');
SELECT * FROM build_both('b8', 'k', 'layout = eks, fanout = 17');
-- exactly full trees (2^16 - 1, 9^5 - 1 entries) and one entry more
CREATE FUNCTION trim_to(n int8) RETURNS void LANGUAGE sql AS $$
	DELETE FROM b8 WHERE v IN (SELECT v FROM b8 WHERE k IS NOT NULL ORDER BY v DESC
								LIMIT (SELECT count(k) FROM b8) - n)
$$;
SELECT trim_to(65536);
SELECT * FROM build_both('b8', 'k', 'layout = ebs');
SELECT trim_to(65535);
SELECT * FROM build_both('b8', 'k', 'layout = ebs');
SELECT trim_to(59049);
SELECT * FROM build_both('b8', 'k', 'layout = eks, fanout = 9');
SELECT trim_to(59048);
SELECT * FROM build_both('b8', 'k', 'layout = eks, fanout = 9');
SELECT levels FROM eytzgpu_info('b8_spill');
-- with statistics, a table too big for the in-memory sort spills from the start
VACUUM ANALYZE b8;
SELECT reltuples > 32768 AS known_big FROM pg_class WHERE relname = 'b8';
SELECT * FROM build_both('b8', 'k', 'layout = ebs');
DROP INDEX b8_mem;
SELECT * FROM am_check('b8_spill', am_battery('b8_spill', ARRAY['9223372036854775807', '0'], true));

-- int4 and float8 (4- and 8-byte keys from the other encodings), default layout
CREATE TABLE b4 (k int4, f float8);
INSERT INTO b4 SELECT CASE WHEN g % 30 = 0 THEN NULL ELSE (random() * 4294967295 - 2147483648)::int8::int4 END,
	CASE WHEN g % 11 = 0 THEN 'NaN' WHEN g % 13 = 0 THEN '-Infinity' WHEN g % 17 = 0 THEN -0.0 ELSE random() - 0.5 END
  FROM generate_series(1, 50000) g;
INSERT INTO b4 VALUES (2147483647, 'Infinity'), (-2147483648, 0);
SELECT * FROM build_both('b4', 'k', 'layout = auto');
DROP INDEX b4_mem;
SELECT * FROM am_check('b4_spill', am_battery('b4_spill', '{}', true));
DROP INDEX b4_spill;
CREATE TEMP TABLE bf AS SELECT f FROM b4;
SELECT * FROM build_both('bf', 'f', 'layout = eks, fanout = 3');
DROP INDEX bf_mem;
SELECT * FROM am_check('bf_spill', am_battery('bf_spill', ARRAY['''NaN''::float8', '''-0''::float8'], true));

-- a spilled index takes inserts and merges like any other
INSERT INTO b8 SELECT g % 1000, -g FROM generate_series(1, 500) g;
SELECT eytzgpu_merge('b8_spill') > 1 AS merged;
SELECT eytzgpu_verify('b8_spill');
SELECT * FROM am_check('b8_spill', ARRAY['k = 17', 'k BETWEEN -5 AND 500']);

-- REINDEX under the smallest maintenance_work_mem there is
SET maintenance_work_mem = '1MB';
REINDEX INDEX b8_spill;
SELECT eytzgpu_verify('b8_spill'), entries = (SELECT count(k) FROM b8) AS all_entries
  FROM eytzgpu_info('b8_spill');
RESET maintenance_work_mem;
