-- am_diff: differential tests of eytzgpu scans.  For random tables of many
-- shapes (sizes around powers of the fan-outs and page boundaries, uniform
-- keys, heavy duplicates, NULLs, negatives, type extremes) and every layout,
-- each qual gives the same rows through the index (index scan and bitmap
-- scan, forced) as through a sequential scan; eytzgpu_verify() passes on
-- every index and eytzgpu_info() counts the non-NULL rows.
SET client_min_messages = warning;
\set ECHO none
\i test/sql/am_harness.inc
\set ECHO all

-- am_sweep: for every size, fill am_t (k typ, v int) with n rows of keys
-- given by the SQL expression dist (over g and random()), then for every
-- WITH-clause in configs build an eytzgpu index, verify it and check quals.
-- Logs problems, then one summary line, into am_log (a procedure that
-- commits after each index: DDL piling up in one transaction gets slow).
-- light: a short battery of quals, through index scans only (bitmap scans
-- share the search code).
CREATE TABLE am_log (id serial, line text);
CREATE PROCEDURE am_sweep(typ text, dist text, sizes int[], configs text[],
						  extra text[] DEFAULT '{}', light bool DEFAULT true)
LANGUAGE plpgsql AS $$
DECLARE
	n int;
	cfg text;
	line text;
	nidx int := 0;
	nquals int := 0;
	entries bigint;
	expect bigint;
BEGIN
	FOREACH n IN ARRAY sizes LOOP
		DROP TABLE IF EXISTS am_t;
		EXECUTE format('CREATE TABLE am_t (k %s, v int)', typ);
		EXECUTE format('INSERT INTO am_t SELECT %s, g FROM generate_series(1, %s) g',
					   dist, n);
		SELECT count(k) INTO expect FROM am_t;
		FOREACH cfg IN ARRAY configs LOOP
			EXECUTE format('CREATE INDEX am_t_idx ON am_t USING eytzgpu (k) WITH (%s)', cfg);
			PERFORM eytzgpu_verify('am_t_idx');
			SELECT i.entries INTO entries FROM eytzgpu_info('am_t_idx') i;
			IF entries <> expect THEN
				INSERT INTO am_log (line)
					VALUES (format('n=%s %s: %s entries, expected %s', n, cfg, entries, expect));
			END IF;
			FOR line IN SELECT * FROM am_check('am_t_idx', am_battery('am_t_idx', extra, light),
											   CASE WHEN light THEN ARRAY['Index Scan']
											   ELSE ARRAY['Index Scan', 'Bitmap Index Scan'] END) LOOP
				IF line LIKE 'ok: %' THEN
					nquals := nquals + split_part(line, ' ', 2)::int;
				ELSE
					INSERT INTO am_log (line) VALUES (format('n=%s %s: %s', n, cfg, line));
				END IF;
			END LOOP;
			nidx := nidx + 1;
			DROP INDEX am_t_idx;
			COMMIT;
		END LOOP;
	END LOOP;
	DROP TABLE IF EXISTS am_t;
	INSERT INTO am_log (line) VALUES (format('%s indexes, %s quals checked', nidx, nquals));
END
$$;
CREATE FUNCTION am_report() RETURNS SETOF text LANGUAGE sql AS $$
	WITH d AS (DELETE FROM am_log RETURNING id, line) SELECT line FROM d ORDER BY id
$$;

SELECT setseed(0.5);
-- uniform int4 keys, sizes around k^m - 1 for k = 2, 3, 9, 33, and around
-- the 1358 TIDs and 2038 int4 keys of a page
CALL am_sweep('int4', '(random() * 4e9 - 2e9)::int4',
	ARRAY[0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 80, 81, 82,
		  255, 256, 257, 728, 729, 730, 1088, 1089, 1090, 1358, 1359, 2038, 2039, 2717,
		  4095, 4096, 4097, 6560, 6561, 6562],
	ARRAY['layout = ebs', 'layout = eks, fanout = 3', 'layout = eks, fanout = 9',
		  'layout = eks, fanout = 33'],
	ARRAY['-2147483648', '2147483647', '0']);
SELECT * FROM am_report();
-- fan-outs 5 and 17 around their powers
CALL am_sweep('int4', '(random() * 1000)::int4',
	ARRAY[4, 5, 24, 25, 26, 124, 125, 126, 288, 289, 290, 624, 625, 626, 4912, 4913, 4914],
	ARRAY['layout = eks, fanout = 5', 'layout = eks, fanout = 17', 'layout = auto']);
SELECT * FROM am_report();

-- heavy duplicates: a handful of distinct keys, and one key only
CALL am_sweep('int4', '(random() * 4)::int4 - 2', ARRAY[1, 2, 100, 2039, 5000],
	ARRAY['layout = ebs', 'layout = eks, fanout = 9'], ARRAY['-3', '3'], false);
SELECT * FROM am_report();
CALL am_sweep('int4', '7', ARRAY[1, 3000],
	ARRAY['layout = ebs', 'layout = eks, fanout = 17'], ARRAY['6', '8'], false);
SELECT * FROM am_report();

-- int8 with 30% NULLs and negative keys
CALL am_sweep('int8',
	'CASE WHEN random() < 0.3 THEN NULL ELSE (random() * 2e12 - 1e12)::int8 END',
	ARRAY[0, 1, 3, 1000, 4097],
	ARRAY['layout = ebs', 'layout = eks, fanout = 17'],
	ARRAY['-9223372036854775808', '9223372036854775807', '-1'], false);
SELECT * FROM am_report();
-- only NULLs
CALL am_sweep('int4', 'NULL::int4', ARRAY[0, 5, 3000],
	ARRAY['layout = ebs', 'layout = eks, fanout = 9'], ARRAY['1']);
SELECT * FROM am_report();

-- type extremes: most keys at the ends of the int4 and int8 domains
CALL am_sweep('int4',
	'(ARRAY[-2147483648, -2147483647, 2147483646, 2147483647, 0, -1, 1])[1 + (random() * 6)::int]',
	ARRAY[7, 1500, 4097], ARRAY['layout = ebs', 'layout = eks, fanout = 5'],
	ARRAY['-2147483648', '2147483647', '-2147483649::int8', '2147483648::int8'], false);
SELECT * FROM am_report();
CALL am_sweep('int8',
	'(ARRAY[-9223372036854775808, -9223372036854775807, 9223372036854775806, 9223372036854775807, 0])[1 + (random() * 4)::int]',
	ARRAY[5, 3000], ARRAY['layout = ebs', 'layout = eks, fanout = 33'],
	ARRAY['-9223372036854775808', '9223372036854775807'], false);
SELECT * FROM am_report();

-- a larger table, full battery: several levels and many pages
CALL am_sweep('int4', '(random() * 100000)::int4', ARRAY[30001],
	ARRAY['layout = ebs', 'layout = eks, fanout = 9'], ARRAY['-1', '100001'], false);
SELECT * FROM am_report();
DROP TABLE am_log;
DROP PROCEDURE am_sweep;
DROP FUNCTION am_report;
DROP FUNCTION am_check, am_battery, am_error;
