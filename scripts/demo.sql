-- scripts/demo.sql: the demo run by scripts/setup-demo.sh (psql variable :rows).
-- Builds an eytzgpu and a btree index on the same column, then times a range
-- query and a join over each, beside the plan PostgreSQL picks by itself
-- (a parallel hash join for this join), and prints a summary table.
\timing off
\pset footer off
\pset pager off
CREATE EXTENSION eytzgpu;
SET client_min_messages = warning;

\echo == building tables: :rows inner rows, 10% as many outer keys
CREATE TABLE inner_t (k int4, v int4);
INSERT INTO inner_t SELECT g, g % 1000 FROM generate_series(1, :rows) g ORDER BY random();
CREATE TABLE outer_t AS SELECT (1 + floor(random() * :rows))::int4 AS k
  FROM generate_series(1, :rows / 10);
VACUUM ANALYZE inner_t;
VACUUM ANALYZE outer_t;

\echo == CREATE INDEX USING eytzgpu, then USING btree on the same column
\timing on
CREATE INDEX inner_k ON inner_t USING eytzgpu (k);
CREATE INDEX inner_k_btree ON inner_t USING btree (k);
\timing off
SELECT layout, fanout, entries, levels, pg_size_pretty(bytes) AS size,
       pg_size_pretty(pg_relation_size('inner_k_btree')) AS btree_size
  FROM eytzgpu_info('inner_k');

-- demo_run(label, settings, query[, hide]): runs EXPLAIN ANALYZE of the
-- query under the settings (local to this call), without the index hide if
-- given, records its execution time and plan in demo_runs and returns them
-- as one line
CREATE TABLE demo_runs (n serial, label text, ms numeric, plan text);
CREATE FUNCTION demo_run(label text, settings text[], q text,
						 hide regclass DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	s text;
	j json;
	nodes text := '';
	node json;
	ms numeric;
BEGIN
	FOREACH s IN ARRAY settings LOOP
		PERFORM set_config(split_part(s, '=', 1), split_part(s, '=', 2), true);
	END LOOP;
	q := 'EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, FORMAT JSON) ' || q;
	IF hide IS NULL THEN
		EXECUTE q INTO j;
	ELSE
		-- drop the index for this run only: the exception rolls the drop back
		BEGIN
			EXECUTE format('DROP INDEX %s', hide);
			EXECUTE q INTO j;
			RAISE EXCEPTION 'undo' USING DETAIL = j::text;
		EXCEPTION WHEN raise_exception THEN
			GET STACKED DIAGNOSTICS s = PG_EXCEPTION_DETAIL;
			j := s::json;
		END;
	END IF;
	-- the plan's nodes from the top, down the first child
	node := j->0->'Plan';
	WHILE node IS NOT NULL LOOP
		nodes := nodes || CASE WHEN nodes = '' THEN '' ELSE ' > ' END ||
			coalesce(node->>'Custom Plan Provider', node->>'Node Type') ||
			coalesce(' on ' || (node->>'Index Name'), '') ||
			coalesce(' (' || (node->>'Device') || ')', '') ||
			coalesce(' (' || (node->>'Workers Launched') || ' workers)', '');
		node := CASE WHEN node->>'Node Type' LIKE '%Scan'
						  AND node->>'Node Type' <> 'Bitmap Heap Scan' THEN NULL
					 ELSE node->'Plans'->0 END;
	END LOOP;
	ms := round((j->0->>'Execution Time')::numeric, 1);
	INSERT INTO demo_runs (label, ms, plan) VALUES (label, ms, nodes);
	RETURN format('%10s ms  %s', ms, label);
END
$$;

\set range 'SELECT count(*), sum(v) FROM inner_t WHERE k BETWEEN 1000 AND 1000 + ' :rows ' / 100'
\set join 'SELECT count(*), sum(i.v) FROM outer_t o JOIN inner_t i ON i.k = o.k'
\set nojoin 'eytzgpu.enable_join=off'
\set nohash '{enable_hashjoin=off,enable_mergejoin=off}'
\pset tuples_only on
\pset format unaligned

\echo '== range query (BETWEEN, 1% of the rows), on each index'
\echo '   (the other index is dropped for the run, and the drop rolled back)'
-- the heap pages the range touches read into shared buffers (and mapped in
-- this backend) once before either run, so that neither pays it for the other
:range
\g /dev/null
SELECT demo_run('range: eytzgpu index (per-level range scan)', '{}', :'range',
	'inner_k_btree');
SELECT demo_run('range: btree index', '{}', :'range', 'inner_k');

\echo
\echo '== the join, as the planner picks it with eytzgpu installed'
EXPLAIN (COSTS OFF) :join;

\echo '== the EytzGPU Join (batched lookups), in a new backend, then again'
\c
SET client_min_messages = warning;
SELECT demo_run('join: EytzGPU Join, first run in a backend (loads the index)',
	:'nohash', :'join');
SELECT demo_run('join: EytzGPU Join, index already loaded', :'nohash', :'join');
\pset tuples_only off
\pset format aligned
\echo 'The EytzGPU Join in detail (hash and merge joins off); Device says whether the GPU or the CPU ran it:'
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) :join;
RESET enable_hashjoin;
RESET enable_mergejoin;
\pset tuples_only on
\pset format unaligned

\echo '== PostgreSQL''s own plans for the same join'
SELECT demo_run('join: PostgreSQL''s default plan (eytzgpu.enable_join = off)',
	ARRAY[:'nojoin'], :'join');
SELECT demo_run('join: nested loop over btree', ARRAY[:'nojoin',
	'enable_hashjoin=off', 'enable_mergejoin=off'], :'join');
\pset tuples_only off
\pset format aligned

\echo '== summary: execution times (EXPLAIN ANALYZE, TIMING OFF), and against eytzgpu'
SELECT label, ms,
	   round(ms / nullif((SELECT ms FROM demo_runs
						   WHERE label LIKE split_part(r.label, ':', 1) || ': eytzgpu%'
							  OR label LIKE split_part(r.label, ':', 1) || ': EytzGPU Join, index already loaded'),
						 0), 2) AS "x eytzgpu",
	   plan
  FROM demo_runs r ORDER BY n;
