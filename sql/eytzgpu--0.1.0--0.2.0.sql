/* eytzgpu--0.1.0--0.2.0.sql: from 0.1.0 to 0.2.0 (ALTER EXTENSION eytzgpu UPDATE) */

\echo Use "ALTER EXTENSION eytzgpu UPDATE TO '0.2.0'" to load this file. \quit

-- eytzgpu_info() shows the INCLUDE columns: a new OUT column
DROP FUNCTION eytzgpu_info(regclass);
CREATE FUNCTION eytzgpu_info(idx regclass,
	OUT layout text, OUT fanout int, OUT key_width int, OUT entries bigint,
	OUT pending bigint, OUT dead bigint, OUT levels int, OUT pages bigint,
	OUT bytes bigint, OUT generation bigint, OUT include text[])
	RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
COMMENT ON FUNCTION eytzgpu_info(regclass) IS 'layout, fan-out, sizes, generation and INCLUDE columns of an eytzgpu index';
