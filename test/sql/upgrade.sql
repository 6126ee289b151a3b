-- upgrade: an install of 0.1.0 brought up by ALTER EXTENSION ... UPDATE has
-- exactly the objects of a fresh install of the current version.
SET client_min_messages = warning;
-- the extension's member objects, with each function's signature and flags
CREATE FUNCTION pg_temp.eytzgpu_objects() RETURNS TABLE (obj text, detail text)
LANGUAGE sql AS $$
SELECT pg_describe_object(classid, objid, 0) AS obj,
       CASE WHEN classid = 'pg_proc'::regclass
            THEN pg_get_function_arguments(objid) || ' -> ' ||
                 pg_get_function_result(objid) ||
                 (SELECT format(' %s%s%s%s', provolatile, proparallel, prosecdef, proisstrict)
                  FROM pg_proc WHERE oid = objid) END AS detail
FROM pg_depend
WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'eytzgpu')
$$;
DROP EXTENSION eytzgpu CASCADE;
CREATE EXTENSION eytzgpu VERSION '0.1.0';
ALTER EXTENSION eytzgpu UPDATE;
SELECT extversion = default_version AS at_default_version
FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
WHERE e.extname = 'eytzgpu';
CREATE TEMP TABLE upgraded AS SELECT * FROM pg_temp.eytzgpu_objects();
DROP EXTENSION eytzgpu;
CREATE EXTENSION eytzgpu;
CREATE TEMP TABLE fresh AS SELECT * FROM pg_temp.eytzgpu_objects();
SELECT count(*) > 10 AS has_objects FROM fresh;
(SELECT 'only after upgrade' AS what, * FROM upgraded EXCEPT SELECT 'only after upgrade', * FROM fresh)
UNION ALL
(SELECT 'only in fresh', * FROM fresh EXCEPT SELECT 'only in fresh', * FROM upgraded)
ORDER BY 1, 2;
RESET client_min_messages;
