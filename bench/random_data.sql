-- bench/random_data.sql: the "random" data set of bench/join_bench.sh for
-- the parallel benchmarks (psql variables N, the inner rows, and M, the
-- outer rows): inner_r(k int4, v int4), keys hashint4(1..N), random and
-- uncorrelated with heap order; outer_r of M keys drawn at random from
-- them with repeats, ~5% of them misses.
CREATE UNLOGGED TABLE inner_r (k int4, v int4);
INSERT INTO inner_r SELECT hashint4(g), g FROM generate_series(1, :N) g;
CREATE UNLOGGED TABLE outer_r (k int4);
SELECT setseed(0.42);
INSERT INTO outer_r SELECT hashint4(CASE WHEN random() < 0.05 THEN :N + 1 + g ELSE 1 + floor(random() * :N)::int4 END) FROM generate_series(1, :M) g;
