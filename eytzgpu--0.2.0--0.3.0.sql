/* eytzgpu--0.2.0--0.3.0.sql: from 0.2.0 to 0.3.0 (ALTER EXTENSION eytzgpu UPDATE) */

\echo Use "ALTER EXTENSION eytzgpu UPDATE TO '0.3.0'" to load this file. \quit

-- the service on several GPUs: the device of each resident copy
DROP FUNCTION eytzgpu_service_resident();
CREATE FUNCTION eytzgpu_service_resident(
	OUT database oid, OUT index_oid oid, OUT index_name name, OUT relfilenode oid,
	OUT generation bigint, OUT entries bigint, OUT bytes bigint, OUT hits bigint,
	OUT last_used timestamptz, OUT gpu int)
	RETURNS SETOF record AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION eytzgpu_service_resident() IS 'the index generations resident in the eytzgpu service, most recently used first, and the device of each; for pg_monitor';

-- and a row per device
CREATE FUNCTION eytzgpu_service_gpus(
	OUT gpu int, OUT kind text, OUT name text, OUT state text, OUT copies int,
	OUT bytes bigint, OUT loads bigint, OUT hits bigint, OUT failures bigint)
	RETURNS SETOF record AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION eytzgpu_service_gpus() IS 'the devices of the eytzgpu service, one row each: what each holds and whether it failed; for pg_monitor';

-- the CPU images all backends share
CREATE FUNCTION eytzgpu_shared_images(
	OUT database oid, OUT index_oid oid, OUT index_name text, OUT relfilenode oid,
	OUT generation bigint, OUT entries bigint, OUT bytes bigint, OUT hits bigint,
	OUT attached boolean)
	RETURNS SETOF record AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION eytzgpu_shared_images() IS 'the CPU images shared by all backends (shared_preload_libraries), most recently used first: index, generation, bytes, hits and whether this backend has it attached; for pg_monitor';
