-- am_types: every eytzgpu operator class, its special values and the
-- cross-type operators of its family, compared with a sequential scan
-- (am_check: index scan and bitmap scan, exactness included); = ANY with
-- NULLs and duplicates, NULL comparisons, BETWEEN, several quals, and
-- prepared statements with generic plans.
SET client_min_messages = warning;
\set ECHO none
\i test/sql/am_harness.inc
\set ECHO all
SELECT setseed(0.25);

-- int2: both ends of the domain, against int2, int4 and int8 constants,
-- some of them outside the int2 range
CREATE TABLE ty_int2 (k int2, v serial);
INSERT INTO ty_int2 (k) SELECT (random() * 65535 - 32768)::int4::int2 FROM generate_series(1, 3000);
INSERT INTO ty_int2 (k) VALUES (-32768), (-32768), (-32767), (32767), (32766), (0), (NULL);
CREATE INDEX ty_int2_idx ON ty_int2 USING eytzgpu (k) WITH (layout = eks, fanout = 3);
SELECT eytzgpu_verify('ty_int2_idx');
SELECT * FROM am_check('ty_int2_idx', am_battery('ty_int2_idx',
	ARRAY['(-32768)::int2', '32767::int2', '-32768', '-32769', '32767', '32768',
		  '(-32769)::int8', '32768::int8', '-9223372036854775808', '9223372036854775807',
		  '0::int8', '(-1)::int4']));

-- int4 against int2 and int8 constants, in and out of range
CREATE TABLE ty_int4 (k int4, v serial);
INSERT INTO ty_int4 (k) SELECT (random() * 4294967295 - 2147483648)::int8::int4 FROM generate_series(1, 3000);
INSERT INTO ty_int4 (k) VALUES (-2147483648), (2147483647), (32767), (32768), (-32768), (-32769), (NULL);
CREATE INDEX ty_int4_idx ON ty_int4 USING eytzgpu (k);
SELECT eytzgpu_verify('ty_int4_idx');
SELECT * FROM am_check('ty_int4_idx', am_battery('ty_int4_idx',
	ARRAY['32767::int2', '(-32768)::int2', '0::int2', '2147483648::int8', '(-2147483649)::int8',
		  '2147483647::int8', '(-2147483648)::int8', '9223372036854775807', '32768::int8']));

-- int8 against int2 and int4 constants
CREATE TABLE ty_int8 (k int8, v serial);
INSERT INTO ty_int8 (k) SELECT (random() * 1.8e19 - 9e18)::numeric::int8 FROM generate_series(1, 3000);
INSERT INTO ty_int8 (k) SELECT (random() * 100000 - 50000)::int8 FROM generate_series(1, 500);
INSERT INTO ty_int8 (k) VALUES (-9223372036854775808), (9223372036854775807), (2147483647), (2147483648), (NULL);
CREATE INDEX ty_int8_idx ON ty_int8 USING eytzgpu (k) WITH (layout = eks, fanout = 17);
SELECT eytzgpu_verify('ty_int8_idx');
SELECT * FROM am_check('ty_int8_idx', am_battery('ty_int8_idx',
	ARRAY['2147483647::int4', '(-2147483648)::int4', '32767::int2', '(-32768)::int2', '0::int4',
		  '2147483648']));

-- oid, including values above 2^31 (unsigned order)
CREATE TABLE ty_oid (k oid, v serial);
INSERT INTO ty_oid (k) SELECT (random() * 4294967295)::int8::oid FROM generate_series(1, 3000);
INSERT INTO ty_oid (k) VALUES (0), (1), (2147483647), (2147483648), (4294967295), (4294967295), (NULL);
CREATE INDEX ty_oid_idx ON ty_oid USING eytzgpu (k) WITH (layout = eks, fanout = 5);
SELECT eytzgpu_verify('ty_oid_idx');
SELECT * FROM am_check('ty_oid_idx', am_battery('ty_oid_idx',
	ARRAY['0::oid', '4294967295::oid', '2147483648::oid', '2147483647::oid', '3000000000::oid']));
SELECT count(*) AS above_2_31 FROM ty_oid WHERE k > 2147483648::oid;

-- date against timestamp and timestamptz (times of day, infinities, dates
-- beyond the timestamp range, BC)
CREATE TABLE ty_date (k date, v serial);
INSERT INTO ty_date (k) SELECT '2000-01-01'::date + (random() * 40000 - 20000)::int FROM generate_series(1, 2000);
INSERT INTO ty_date (k) SELECT '4713-01-01 BC'::date + (random() * 2400000)::int FROM generate_series(1, 500);
INSERT INTO ty_date (k) VALUES ('infinity'), ('-infinity'), ('4713-01-01 BC'), ('5874897-12-31'),
	('294276-12-31'), ('294277-01-01'), ('2000-01-01'), (NULL);
CREATE INDEX ty_date_idx ON ty_date USING eytzgpu (k);
SELECT eytzgpu_verify('ty_date_idx');
SELECT * FROM am_check('ty_date_idx', am_battery('ty_date_idx',
	ARRAY['''2000-01-01''::timestamp', '''2000-01-01 12:00''::timestamp',
		  '''1000-06-01 00:00:01''::timestamp', '''0100-01-01 BC''::timestamp',
		  '''infinity''::timestamp', '''-infinity''::timestamp', '''294276-12-31 23:59''::timestamp',
		  '''2000-01-01''::timestamptz', '''1999-12-31 23:30-08''::timestamptz',
		  '''2000-01-01 00:00+05''::timestamptz', '''infinity''::timestamptz',
		  '''-infinity''::timestamptz', '''4713-01-01 BC''::date']));

-- timestamp against date and timestamptz
CREATE TABLE ty_ts (k timestamp, v serial);
INSERT INTO ty_ts (k) SELECT '2000-01-01'::timestamp + random() * interval '20000 days' - interval '10000 days' FROM generate_series(1, 3000);
INSERT INTO ty_ts (k) SELECT date_trunc('day', '2000-01-01'::timestamp + random() * interval '100 days') FROM generate_series(1, 300);
INSERT INTO ty_ts (k) VALUES ('infinity'), ('-infinity'), ('4713-01-01 00:00 BC'), ('294276-12-31 23:59:59'),
	('2000-01-15'), (NULL);
CREATE INDEX ty_ts_idx ON ty_ts USING eytzgpu (k) WITH (layout = eks, fanout = 9);
SELECT eytzgpu_verify('ty_ts_idx');
SELECT * FROM am_check('ty_ts_idx', am_battery('ty_ts_idx',
	ARRAY['''2000-01-15''::date', '''infinity''::date', '''-infinity''::date', '''5874897-12-31''::date',
		  '''4713-01-01 BC''::date', '''2000-01-15 00:00-08''::timestamptz',
		  '''2000-01-15 07:00:00.5+00''::timestamptz', '''infinity''::timestamptz',
		  '''-infinity''::timestamptz']));

-- timestamptz against date and timestamp
CREATE TABLE ty_tstz (k timestamptz, v serial);
INSERT INTO ty_tstz (k) SELECT '2000-01-01 00:00+00'::timestamptz + random() * interval '20000 days' - interval '10000 days' FROM generate_series(1, 3000);
INSERT INTO ty_tstz (k) SELECT date_trunc('day', '2000-01-01'::timestamptz + random() * interval '100 days') FROM generate_series(1, 300);
INSERT INTO ty_tstz (k) VALUES ('infinity'), ('-infinity'), ('2000-01-15'), (NULL);
CREATE INDEX ty_tstz_idx ON ty_tstz USING eytzgpu (k) WITH (layout = ebs);
SELECT eytzgpu_verify('ty_tstz_idx');
SELECT * FROM am_check('ty_tstz_idx', am_battery('ty_tstz_idx',
	ARRAY['''2000-01-15''::date', '''infinity''::date', '''-infinity''::date', '''5874897-12-31''::date',
		  '''2000-01-15 00:00''::timestamp', '''2000-01-15 00:00:00.000001''::timestamp',
		  '''infinity''::timestamp', '''-infinity''::timestamp']));

-- float4: NaN, -0, +0, infinities, denormals; against float8 constants that
-- float4 cannot represent
CREATE TABLE ty_f4 (k float4, v serial);
INSERT INTO ty_f4 (k) SELECT (random() * 2e6 - 1e6)::float4 FROM generate_series(1, 2000);
INSERT INTO ty_f4 (k) SELECT (random() * 20 - 10)::int::float4 / 10 FROM generate_series(1, 500);
INSERT INTO ty_f4 (k) VALUES ('NaN'), ('NaN'), ('-0'), ('0'), ('-0'), ('Infinity'), ('-Infinity'),
	('1e-45'), ('-1e-45'), ('3.4028235e38'), ('-3.4028235e38'), (NULL);
CREATE INDEX ty_f4_idx ON ty_f4 USING eytzgpu (k) WITH (layout = eks, fanout = 33);
SELECT eytzgpu_verify('ty_f4_idx');
SELECT * FROM am_check('ty_f4_idx', am_battery('ty_f4_idx',
	ARRAY['''NaN''::float4', '''-0''::float4', '''0''::float4', '''Infinity''::float4',
		  '''-Infinity''::float4', '0.1::float8', '(-0.1)::float8', '0.1::float4::float8',
		  '''NaN''::float8', '''-0''::float8', '''Infinity''::float8', '''-Infinity''::float8',
		  '1e300::float8', '(-1e300)::float8', '1e-300::float8', '-1e-300::float8',
		  '3.4028235e38::float8', '1e-45::float4::float8']));
SELECT count(*) AS zeros FROM ty_f4 WHERE k = '-0'::float4;
SELECT count(*) AS nans FROM ty_f4 WHERE k = 'NaN'::float8;

-- float8 against float4 constants
CREATE TABLE ty_f8 (k float8, v serial);
INSERT INTO ty_f8 (k) SELECT random() * 2e6 - 1e6 FROM generate_series(1, 2000);
INSERT INTO ty_f8 (k) SELECT (random() * 20 - 10)::int::float8 / 10 FROM generate_series(1, 500);
INSERT INTO ty_f8 (k) SELECT (random() * 20 - 10)::int::float4 / 10 FROM generate_series(1, 500);
INSERT INTO ty_f8 (k) VALUES ('NaN'), ('-0'), ('0'), ('Infinity'), ('-Infinity'), ('5e-324'),
	('-5e-324'), ('1.7976931348623157e308'), (NULL);
CREATE INDEX ty_f8_idx ON ty_f8 USING eytzgpu (k);
SELECT eytzgpu_verify('ty_f8_idx');
SELECT * FROM am_check('ty_f8_idx', am_battery('ty_f8_idx',
	ARRAY['''NaN''::float8', '''-0''::float8', '''NaN''::float4', '''-0''::float4',
		  '''Infinity''::float4', '''-Infinity''::float4', '0.1::float4', '(-0.1)::float4',
		  '0.1::float8', '3.4028235e38::float4', '1e-45::float4']));

-- NULLs: never indexed; comparisons with NULL and arrays of NULLs match nothing
SET enable_seqscan = off;
SELECT count(*) FROM ty_int4 WHERE k = ANY (ARRAY[NULL, NULL]::int4[]);
SELECT count(*) FROM ty_int4 WHERE k = ANY (ARRAY[]::int4[]);
SELECT count(*) FROM ty_int4 WHERE k IN (NULL, 32767, 32767, NULL);
SELECT count(*) FROM ty_int4 WHERE k > 0 AND k = ANY ('{NULL,-32768,32768}'::int8[]);
RESET enable_seqscan;
SELECT * FROM am_check('ty_int4_idx', ARRAY[
	'k = ANY (''{NULL,-2147483648,-2147483648}''::int4[])',
	'k = ANY (''{2147483648,-32768,NULL,2147483647}''::int8[])',
	'k = ANY (''{32767,-32768}''::int2[]) AND k >= 0',
	'k < 0 AND k > -1000000000 AND k <> -32769 AND k >= -2000000000',
	'k BETWEEN 0 AND 2147483648::int8 AND k BETWEEN -5::int2 AND 2000000000',
	'k >= 10 AND k <= 9',
	'k > 2147483647',
	'k < -2147483648::int8']);

-- prepared statements, generic plans: parameters of several types and NULL
SET plan_cache_mode = force_generic_plan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
PREPARE p8(int8) AS SELECT count(*) FROM ty_int4 WHERE k < $1;
EXPLAIN (COSTS OFF) EXECUTE p8(0);
PREPARE pa(int8[]) AS SELECT count(*) FROM ty_int4 WHERE k = ANY ($1);
EXPLAIN (COSTS OFF) EXECUTE pa('{1}');
CREATE FUNCTION ty_generic_lt(p int8) RETURNS bigint LANGUAGE plpgsql AS
	$$ BEGIN RETURN (SELECT count(*) FROM ty_int4 WHERE k < p); END $$;
CREATE FUNCTION ty_generic_eq2(p int2) RETURNS bigint LANGUAGE plpgsql AS
	$$ BEGIN RETURN (SELECT count(*) FROM ty_int4 WHERE k = p); END $$;
CREATE FUNCTION ty_generic_any(p int8[]) RETURNS bigint LANGUAGE plpgsql AS
	$$ BEGIN RETURN (SELECT count(*) FROM ty_int4 WHERE k = ANY (p)); END $$;
CREATE FUNCTION ty_generic_ts(p timestamp) RETURNS bigint LANGUAGE plpgsql AS
	$$ BEGIN RETURN (SELECT count(*) FROM ty_date WHERE k >= p); END $$;
CREATE TEMP TABLE ty_params AS
	SELECT k::int8 AS p FROM ty_int4 WHERE v % 300 = 0
	UNION ALL VALUES (NULL::int8), (2147483648), (-2147483649), (-9223372036854775808), (32767), (-32768);
CREATE TEMP TABLE ty_ts_params AS
	SELECT k::timestamp + interval '1 hour' AS p FROM ty_date WHERE v % 200 = 0 AND k > '-infinity'
	UNION ALL VALUES (NULL::timestamp), ('infinity'), ('-infinity'), ('2000-01-01 00:00:01');
-- generic plans through the index
CREATE TEMP TABLE ty_got AS
	SELECT p, ty_generic_lt(p) AS lt, ty_generic_eq2(CASE WHEN p BETWEEN -32768 AND 32767 THEN p::int2 END) AS eq2,
		   ty_generic_any(ARRAY[p, NULL, p + 1, p]) AS anyp, NULL::bigint AS ts
	  FROM ty_params
	UNION ALL
	SELECT NULL, NULL, NULL, NULL, ty_generic_ts(p) FROM ty_ts_params;
-- the same without it
RESET enable_seqscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE ty_ref AS
	SELECT p, (SELECT count(*) FROM ty_int4 WHERE k < p) AS lt,
		   (SELECT count(*) FROM ty_int4 WHERE k = CASE WHEN p BETWEEN -32768 AND 32767 THEN p::int2 END) AS eq2,
		   (SELECT count(*) FROM ty_int4 WHERE k = ANY (ARRAY[p, NULL, p + 1, p])) AS anyp, NULL::bigint AS ts
	  FROM ty_params
	UNION ALL
	SELECT NULL, NULL, NULL, NULL, (SELECT count(*) FROM ty_date WHERE k >= p) FROM ty_ts_params;
RESET enable_indexscan;
RESET enable_bitmapscan;
RESET plan_cache_mode;
SELECT count(*) AS params, count(*) FILTER (WHERE lt > 0) AS nonempty FROM ty_ref;
SELECT count(*) AS differences
  FROM ((TABLE ty_ref EXCEPT ALL TABLE ty_got) UNION ALL (TABLE ty_got EXCEPT ALL TABLE ty_ref)) d;
DEALLOCATE p8;
DEALLOCATE pa;
DROP TABLE ty_int2, ty_int4, ty_int8, ty_oid, ty_date, ty_ts, ty_tstz, ty_f4, ty_f8;
DROP FUNCTION ty_generic_lt, ty_generic_eq2, ty_generic_any, ty_generic_ts;
DROP FUNCTION am_check, am_battery, am_error;
