/* eytzgpu--0.3.0.sql: the eytzgpu access method, its operator classes and functions */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION eytzgpu" to load this file. \quit

CREATE FUNCTION eytzgpu_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD eytzgpu TYPE INDEX HANDLER eytzgpu_handler;
COMMENT ON ACCESS METHOD eytzgpu IS 'static Eytzinger-ordered index (EBS/EKS), searched on the GPU or CPU';

CREATE FUNCTION eytzgpu_info(idx regclass,
	OUT layout text, OUT fanout int, OUT key_width int, OUT entries bigint,
	OUT pending bigint, OUT dead bigint, OUT levels int, OUT pages bigint,
	OUT bytes bigint, OUT generation bigint, OUT include text[])
	RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
COMMENT ON FUNCTION eytzgpu_info(regclass) IS 'layout, fan-out, sizes, generation and INCLUDE columns of an eytzgpu index';

CREATE FUNCTION eytzgpu_verify(idx regclass, heapallindexed boolean DEFAULT false) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
COMMENT ON FUNCTION eytzgpu_verify(regclass, boolean) IS 'check every invariant of an eytzgpu index (and with heapallindexed that every live table row has its entry); raises an error naming the first violation';

CREATE FUNCTION eytzgpu_merge(idx regclass) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
COMMENT ON FUNCTION eytzgpu_merge(regclass) IS 'merge the pending entries of an eytzgpu index into a new layout; returns the new generation';

CREATE FUNCTION eytzgpu_service_status(
	OUT state text, OUT device text, OUT detail text, OUT pid int,
	OUT resident_copies int, OUT resident_bytes bigint, OUT loads bigint,
	OUT hits bigint, OUT evictions bigint, OUT failures bigint,
	OUT slots_in_use int, OUT slots int)
	RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION eytzgpu_service_status() IS 'the eytzgpu service (shared_preload_libraries): state, device, resident bytes, loads, hits, evictions and slots in use; for pg_monitor';

CREATE FUNCTION eytzgpu_service_resident(
	OUT database oid, OUT index_oid oid, OUT index_name name, OUT relfilenode oid,
	OUT generation bigint, OUT entries bigint, OUT bytes bigint, OUT hits bigint,
	OUT last_used timestamptz, OUT gpu int)
	RETURNS SETOF record AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION eytzgpu_service_resident() IS 'the index generations resident in the eytzgpu service, most recently used first, and the device of each; for pg_monitor';

CREATE FUNCTION eytzgpu_service_gpus(
	OUT gpu int, OUT kind text, OUT name text, OUT state text, OUT copies int,
	OUT bytes bigint, OUT loads bigint, OUT hits bigint, OUT failures bigint)
	RETURNS SETOF record AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION eytzgpu_service_gpus() IS 'the devices of the eytzgpu service, one row each: what each holds and whether it failed; for pg_monitor';

CREATE FUNCTION eytzgpu_shared_images(
	OUT database oid, OUT index_oid oid, OUT index_name text, OUT relfilenode oid,
	OUT generation bigint, OUT entries bigint, OUT bytes bigint, OUT hits bigint,
	OUT attached boolean)
	RETURNS SETOF record AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION eytzgpu_shared_images() IS 'the CPU images shared by all backends (shared_preload_libraries), most recently used first: index, generation, bytes, hits and whether this backend has it attached; for pg_monitor';

-- integer_ops
CREATE OPERATOR FAMILY integer_ops USING eytzgpu;
CREATE OPERATOR CLASS int2_ops DEFAULT FOR TYPE int2 USING eytzgpu FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btint2cmp(int2, int2);
CREATE OPERATOR CLASS int4_ops DEFAULT FOR TYPE int4 USING eytzgpu FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btint4cmp(int4, int4);
CREATE OPERATOR CLASS int8_ops DEFAULT FOR TYPE int8 USING eytzgpu FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btint8cmp(int8, int8);
ALTER OPERATOR FAMILY integer_ops USING eytzgpu ADD
	OPERATOR 1 < (int2, int4),
	OPERATOR 2 <= (int2, int4),
	OPERATOR 3 = (int2, int4),
	OPERATOR 4 >= (int2, int4),
	OPERATOR 5 > (int2, int4),
	FUNCTION 1 (int2, int4) btint24cmp(int2, int4),
	OPERATOR 1 < (int2, int8),
	OPERATOR 2 <= (int2, int8),
	OPERATOR 3 = (int2, int8),
	OPERATOR 4 >= (int2, int8),
	OPERATOR 5 > (int2, int8),
	FUNCTION 1 (int2, int8) btint28cmp(int2, int8),
	OPERATOR 1 < (int4, int2),
	OPERATOR 2 <= (int4, int2),
	OPERATOR 3 = (int4, int2),
	OPERATOR 4 >= (int4, int2),
	OPERATOR 5 > (int4, int2),
	FUNCTION 1 (int4, int2) btint42cmp(int4, int2),
	OPERATOR 1 < (int4, int8),
	OPERATOR 2 <= (int4, int8),
	OPERATOR 3 = (int4, int8),
	OPERATOR 4 >= (int4, int8),
	OPERATOR 5 > (int4, int8),
	FUNCTION 1 (int4, int8) btint48cmp(int4, int8),
	OPERATOR 1 < (int8, int2),
	OPERATOR 2 <= (int8, int2),
	OPERATOR 3 = (int8, int2),
	OPERATOR 4 >= (int8, int2),
	OPERATOR 5 > (int8, int2),
	FUNCTION 1 (int8, int2) btint82cmp(int8, int2),
	OPERATOR 1 < (int8, int4),
	OPERATOR 2 <= (int8, int4),
	OPERATOR 3 = (int8, int4),
	OPERATOR 4 >= (int8, int4),
	OPERATOR 5 > (int8, int4),
	FUNCTION 1 (int8, int4) btint84cmp(int8, int4);

-- oid_ops
CREATE OPERATOR FAMILY oid_ops USING eytzgpu;
CREATE OPERATOR CLASS oid_ops DEFAULT FOR TYPE oid USING eytzgpu FAMILY oid_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (oid, oid) btoidcmp(oid, oid);

-- datetime_ops
CREATE OPERATOR FAMILY datetime_ops USING eytzgpu;
CREATE OPERATOR CLASS date_ops DEFAULT FOR TYPE date USING eytzgpu FAMILY datetime_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (date, date) date_cmp(date, date);
CREATE OPERATOR CLASS timestamp_ops DEFAULT FOR TYPE timestamp USING eytzgpu FAMILY datetime_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (timestamp, timestamp) timestamp_cmp(timestamp, timestamp);
CREATE OPERATOR CLASS timestamptz_ops DEFAULT FOR TYPE timestamptz USING eytzgpu FAMILY datetime_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (timestamptz, timestamptz) timestamptz_cmp(timestamptz, timestamptz);
ALTER OPERATOR FAMILY datetime_ops USING eytzgpu ADD
	OPERATOR 1 < (date, timestamp),
	OPERATOR 2 <= (date, timestamp),
	OPERATOR 3 = (date, timestamp),
	OPERATOR 4 >= (date, timestamp),
	OPERATOR 5 > (date, timestamp),
	FUNCTION 1 (date, timestamp) date_cmp_timestamp(date, timestamp),
	OPERATOR 1 < (date, timestamptz),
	OPERATOR 2 <= (date, timestamptz),
	OPERATOR 3 = (date, timestamptz),
	OPERATOR 4 >= (date, timestamptz),
	OPERATOR 5 > (date, timestamptz),
	FUNCTION 1 (date, timestamptz) date_cmp_timestamptz(date, timestamptz),
	OPERATOR 1 < (timestamp, date),
	OPERATOR 2 <= (timestamp, date),
	OPERATOR 3 = (timestamp, date),
	OPERATOR 4 >= (timestamp, date),
	OPERATOR 5 > (timestamp, date),
	FUNCTION 1 (timestamp, date) timestamp_cmp_date(timestamp, date),
	OPERATOR 1 < (timestamp, timestamptz),
	OPERATOR 2 <= (timestamp, timestamptz),
	OPERATOR 3 = (timestamp, timestamptz),
	OPERATOR 4 >= (timestamp, timestamptz),
	OPERATOR 5 > (timestamp, timestamptz),
	FUNCTION 1 (timestamp, timestamptz) timestamp_cmp_timestamptz(timestamp, timestamptz),
	OPERATOR 1 < (timestamptz, date),
	OPERATOR 2 <= (timestamptz, date),
	OPERATOR 3 = (timestamptz, date),
	OPERATOR 4 >= (timestamptz, date),
	OPERATOR 5 > (timestamptz, date),
	FUNCTION 1 (timestamptz, date) timestamptz_cmp_date(timestamptz, date),
	OPERATOR 1 < (timestamptz, timestamp),
	OPERATOR 2 <= (timestamptz, timestamp),
	OPERATOR 3 = (timestamptz, timestamp),
	OPERATOR 4 >= (timestamptz, timestamp),
	OPERATOR 5 > (timestamptz, timestamp),
	FUNCTION 1 (timestamptz, timestamp) timestamptz_cmp_timestamp(timestamptz, timestamp);

-- float_ops
CREATE OPERATOR FAMILY float_ops USING eytzgpu;
CREATE OPERATOR CLASS float4_ops DEFAULT FOR TYPE float4 USING eytzgpu FAMILY float_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (float4, float4) btfloat4cmp(float4, float4);
CREATE OPERATOR CLASS float8_ops DEFAULT FOR TYPE float8 USING eytzgpu FAMILY float_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 (float8, float8) btfloat8cmp(float8, float8);
ALTER OPERATOR FAMILY float_ops USING eytzgpu ADD
	OPERATOR 1 < (float4, float8),
	OPERATOR 2 <= (float4, float8),
	OPERATOR 3 = (float4, float8),
	OPERATOR 4 >= (float4, float8),
	OPERATOR 5 > (float4, float8),
	FUNCTION 1 (float4, float8) btfloat48cmp(float4, float8),
	OPERATOR 1 < (float8, float4),
	OPERATOR 2 <= (float8, float4),
	OPERATOR 3 = (float8, float4),
	OPERATOR 4 >= (float8, float4),
	OPERATOR 5 > (float8, float4),
	FUNCTION 1 (float8, float4) btfloat84cmp(float8, float4);
