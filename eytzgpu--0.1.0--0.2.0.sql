/* eytzgpu--0.1.0--0.2.0.sql: from 0.1.0 to 0.2.0 (ALTER EXTENSION eytzgpu UPDATE) */

\echo Use "ALTER EXTENSION eytzgpu UPDATE TO '0.2.0'" to load this file. \quit

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
	OUT last_used timestamptz)
	RETURNS SETOF record AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION eytzgpu_service_resident() IS 'the index generations resident in the eytzgpu service, most recently used first; for pg_monitor';

-- eytzgpu_info() shows the INCLUDE columns: a new OUT column
DROP FUNCTION eytzgpu_info(regclass);
CREATE FUNCTION eytzgpu_info(idx regclass,
	OUT layout text, OUT fanout int, OUT key_width int, OUT entries bigint,
	OUT pending bigint, OUT dead bigint, OUT levels int, OUT pages bigint,
	OUT bytes bigint, OUT generation bigint, OUT include text[])
	RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
COMMENT ON FUNCTION eytzgpu_info(regclass) IS 'layout, fan-out, sizes, generation and INCLUDE columns of an eytzgpu index';
