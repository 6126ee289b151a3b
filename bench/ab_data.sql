-- bench/ab_data.sql: the two data sets of bench/ab_gpu.sh and bench/ab_cpu.sh
-- (psql variables N, the inner rows, and M, the outer rows): random
-- (bench/random_data.sql: inner_r, outer_r) and friendly, bench/join_bench.sh's
-- (inner_t: keys g * 48271 mod (2^31 - 1), unique and scattered over int4;
-- outer_t: M distinct keys drawn from them).
\ir random_data.sql
CREATE UNLOGGED TABLE inner_t (k int4, v int4);
INSERT INTO inner_t SELECT ((g::int8 * 48271) % 2147483647)::int4, g FROM generate_series(1, :N) g;
CREATE UNLOGGED TABLE outer_t (k int4);
INSERT INTO outer_t SELECT (((((g::int8 * 7919) % :N) + 1) * 48271) % 2147483647)::int4 FROM generate_series(1, :M) g;
