-- readme: the SQL blocks of README.md, in order and as written (make
-- readmecheck checks that each appears here verbatim), in a database of
-- their own since the README starts with CREATE EXTENSION.  Between them,
-- checks of what the README says about them.  Blocks whose output depends on
-- the machine (GPU or not, sizes, timings) run with their output discarded:
-- they must still run without an error.
SET client_min_messages = warning;
\set regress_db :DBNAME
CREATE DATABASE eytzgpu_readme;
\c eytzgpu_readme
SET client_min_messages = warning;
-- does the plan of a query use the given index, or a sequential scan?
-- the text of EXPLAIN (options) q
CREATE FUNCTION explain_text(options text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
	plan text := '';
BEGIN
	FOR line IN EXECUTE format('EXPLAIN (%s) %s', options, q) LOOP
		plan := plan || line || E'\n';
	END LOOP;
	RETURN plan;
END
$$;
CREATE FUNCTION plan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	plan text := explain_text('COSTS OFF', q);
BEGIN
	RETURN CASE WHEN plan ~ 'Index Scan using orders_customer' THEN 'index scan'
				WHEN plan ~ 'Bitmap Index Scan on orders_customer' THEN 'bitmap index scan'
				WHEN plan ~ 'EytzGPU Join' THEN 'EytzGPU Join'
				WHEN plan ~ 'Seq Scan on orders' THEN 'seq scan'
				ELSE plan END;
END
$$;

CREATE EXTENSION eytzgpu;

CREATE TABLE orders (id int8, customer int4, placed date);
INSERT INTO orders
SELECT g, 1 + (g * 7919) % 20000, date '2024-01-01' + (g % 365)
  FROM generate_series(1, 200000) g;
CREATE INDEX orders_customer ON orders USING eytzgpu (customer);
ANALYZE orders;

-- point, IN/ANY, range and cross-type predicates use the index
SELECT * FROM orders WHERE customer = 42;
SELECT * FROM orders WHERE customer = ANY ('{1,2,3}');
SELECT * FROM orders WHERE customer BETWEEN 1000 AND 1002;
SELECT * FROM orders WHERE customer < 3::int8;   -- int4 column, int8 constant

-- "Each of these plans a Bitmap Index Scan on orders_customer"
SELECT plan_of('SELECT * FROM orders WHERE customer = 42');
SELECT plan_of('SELECT * FROM orders WHERE customer = ANY (''{1,2,3}'')');
SELECT plan_of('SELECT * FROM orders WHERE customer BETWEEN 1000 AND 1002');
SELECT plan_of('SELECT * FROM orders WHERE customer < 3::int8');
SELECT plan_of('SELECT * FROM orders WHERE customer < 5000000000::int8');

\o /dev/null
-- joins whose inner side has an eytzgpu index can run as a batched
-- "EytzGPU Join" custom scan
CREATE TABLE lookups (customer int4);
INSERT INTO lookups SELECT 1 + (g * 104729) % 20000 FROM generate_series(1, 5000) g;
ANALYZE lookups;
SELECT count(*) FROM lookups l JOIN orders o ON o.customer = l.customer;
EXPLAIN (COSTS OFF) SELECT count(*) FROM lookups l JOIN orders o ON o.customer = l.customer;
\o
-- the answer, and "the planner takes the custom scan" (here, without a GPU
-- and with one alike)
SELECT count(*) FROM lookups l JOIN orders o ON o.customer = l.customer;
SELECT plan_of('SELECT count(*) FROM lookups l JOIN orders o ON o.customer = l.customer');
SET eytzgpu.enable_join = off;
SELECT count(*) FROM lookups l JOIN orders o ON o.customer = l.customer;
RESET eytzgpu.enable_join;

INSERT INTO orders SELECT g, g % 20000, date '2025-01-01' FROM generate_series(200001, 201000) g;
SELECT entries, pending FROM eytzgpu_info('orders_customer');
SELECT eytzgpu_merge('orders_customer') > 1 AS merged;   -- the new generation
SELECT entries, pending FROM eytzgpu_info('orders_customer');

\o /dev/null
CREATE INDEX orders_customer_cov ON orders USING eytzgpu (customer) INCLUDE (id, placed);
VACUUM orders;
-- an Index Only Scan (Heap Fetches: 0 after VACUUM)
SELECT customer, id, placed FROM orders WHERE customer BETWEEN 1000 AND 1002;
-- an index-only EytzGPU Join: sum(o.id) comes from the index
SELECT count(*), sum(o.id) FROM lookups l JOIN orders o ON o.customer = l.customer;
SELECT include FROM eytzgpu_info('orders_customer_cov');   -- {id,placed}
\o
-- the covering index's answers, PostgreSQL's own, and what the README says of them
CREATE FUNCTION explain_has(q text, pat text) RETURNS boolean LANGUAGE sql AS $$
SELECT explain_text('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF', q) ~ pat
$$;
SELECT include FROM eytzgpu_info('orders_customer_cov');
SELECT explain_has('SELECT customer, id, placed FROM orders WHERE customer BETWEEN 1000 AND 1002',
				   'Index Only Scan using orders_customer_cov.*\n.*\n\s*Heap Fetches: 0') AS index_only_scan;
SELECT explain_has('SELECT count(*), sum(o.id) FROM lookups l JOIN orders o ON o.customer = l.customer',
				   'Index Only: true(.|\n)*Heap Fetches: 0') AS index_only_join;
SELECT count(*), sum(o.id) FROM lookups l JOIN orders o ON o.customer = l.customer;
SET eytzgpu.enable_join = off;
SET enable_indexonlyscan = off;
SELECT count(*), sum(o.id) FROM lookups l JOIN orders o ON o.customer = l.customer;
SELECT count(*), sum(id), min(placed) FROM orders WHERE customer BETWEEN 1000 AND 1002;
RESET enable_indexonlyscan;
SELECT count(*), sum(id), min(placed) FROM orders WHERE customer BETWEEN 1000 AND 1002;
RESET eytzgpu.enable_join;
DROP INDEX orders_customer_cov;

CREATE INDEX orders_placed ON orders USING eytzgpu (placed) WITH (layout = 'eks', fanout = 17);
ALTER INDEX orders_customer SET (layout = 'eks', fanout = 5, pending_limit = 1000);
SELECT layout, fanout FROM eytzgpu_info('orders_customer');   -- still eks, 9
SELECT eytzgpu_merge('orders_customer') > 0 AS merged;
SELECT layout, fanout FROM eytzgpu_info('orders_customer');   -- eks, 5
ALTER INDEX orders_customer RESET (layout, fanout, pending_limit);
REINDEX INDEX orders_customer;

SET enable_partitionwise_join = on;
CREATE TABLE events (customer int4, amount int4) PARTITION BY HASH (customer);
CREATE TABLE events_0 PARTITION OF events FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE events_1 PARTITION OF events FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE visits (customer int4) PARTITION BY HASH (customer);
CREATE TABLE visits_0 PARTITION OF visits FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE visits_1 PARTITION OF visits FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO events SELECT g % 50000, g FROM generate_series(1, 200000) g;
INSERT INTO visits SELECT (g * 7) % 60000 FROM generate_series(1, 5000) g;
CREATE INDEX ON events USING eytzgpu (customer);   -- one index per partition
ANALYZE events, visits;
-- an Append of two EytzGPU Joins, one per pair of partitions
SELECT count(*), sum(e.amount) FROM visits v JOIN events e ON e.customer = v.customer;
RESET enable_partitionwise_join;
-- "an Append of two EytzGPU Joins": the plan, and PostgreSQL's own answer
SET enable_partitionwise_join = on;
SELECT count(*) FILTER (WHERE line ~ 'EytzGPU Join') AS batched_pairs,
	   count(*) FILTER (WHERE line ~ 'Append') AS appends
  FROM regexp_split_to_table(explain_text('COSTS OFF',
		'SELECT count(*), sum(e.amount) FROM visits v JOIN events e ON e.customer = v.customer'), E'\n') line;
SET eytzgpu.enable_join = off;
SELECT count(*), sum(e.amount) FROM visits v JOIN events e ON e.customer = v.customer;
RESET eytzgpu.enable_join;
RESET enable_partitionwise_join;
DROP TABLE events, visits;

ALTER EXTENSION eytzgpu UPDATE;

\o /dev/null
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF)
SELECT count(*) FROM lookups l JOIN orders o ON o.customer = l.customer;
\o

\o /dev/null
SET eytzgpu.enable_join = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM lookups l JOIN orders o ON o.customer = l.customer;
RESET eytzgpu.enable_join;
\o

\o /dev/null
SELECT layout, fanout, entries, pending, pages, pg_size_pretty(bytes) AS size
  FROM eytzgpu_info('orders_customer');
\o

\c :regress_db
DROP DATABASE eytzgpu_readme;
