# t/021_lookup_pinned_concurrent.pl: the EytzGPU Join through the pinned view
# (eytzgpu.cpu_view = pinned: the index's key and TID pages pinned in shared
# buffers for the scan, TIDs read without a lock) while its table changes.
#
# 1. A cursor over the join holds its pins across FETCHes; a DELETE's rows
#    are VACUUMed in the middle of the scan (tombstones written into the TID
#    pages the scan has pinned, which VACUUM is not held back by): the rows
#    the cursor returns agree with PostgreSQL's answer in its snapshot.
# 2. pgbench: writers insert, delete and VACUUM (tombstones, pending
#    entries, merges) while readers compare the pinned join with
#    PostgreSQL's own join in one REPEATABLE READ snapshot.
# 3. A query that fails in the middle of a pinned scan leaves no pin behind
#    (the resource owner drops them; the next statements run clean).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('pinned_join');
$node->init;
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.8);
	CREATE TABLE pj (k int4, v int8, w int4);
	INSERT INTO pj SELECT CASE WHEN g % 211 = 0 THEN NULL ELSE (random() * 4000)::int4 END, g, g
	FROM generate_series(1, 60000) g;
	CREATE INDEX pj_k ON pj USING eytzgpu (k) WITH (pending_limit = 300);
	CREATE TABLE po (k int4, x int4);
	INSERT INTO po SELECT (random() * 4200)::int4, g FROM generate_series(1, 4000) g;
	VACUUM ANALYZE pj, po;
});

my $settings = q{
	SET eytzgpu.device = cpu;
	SET eytzgpu.cpu_view = pinned;
	SET eytzgpu.batch_size = 512;
	SET work_mem = '64kB';
	SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;
	SET max_parallel_workers_per_gather = 0;
};
my $rows = 'SELECT o.x, i.v FROM po o JOIN pj i ON i.k = o.k';

like(
	$node->safe_psql('postgres',
		"$settings EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $rows"),
	qr/Device: cpu \(pinned pages\)/,
	'the join searches the pinned pages');

# ---- 1. VACUUM's tombstones in the middle of a cursor's pinned scan
$node->safe_psql('postgres', 'DELETE FROM pj WHERE w % 300 = 7');
my $cursor = $node->background_psql('postgres');
$cursor->query_safe($settings);
$cursor->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$cursor->query_safe("DECLARE c CURSOR FOR $rows");
my @got = split /\n/, $cursor->query_safe('FETCH 300 FROM c');
is($node->safe_psql('postgres', "SELECT dead FROM eytzgpu_info('pj_k')"),
	'0', 'no tombstones yet');
$node->safe_psql('postgres', 'VACUUM pj');
is($node->safe_psql('postgres', "SELECT dead > 0 FROM eytzgpu_info('pj_k')"),
	't', 'VACUUM tombstoned entries while the cursor held its pins');
push @got, split /\n/, $cursor->query_safe('FETCH ALL FROM c');
my @expected = split /\n/, $cursor->query_safe(
	"SET LOCAL eytzgpu.enable_join = off; SET LOCAL enable_hashjoin = on; $rows");
is(join(',', sort @got), join(',', sort @expected),
	'the cursor\'s rows agree with the table in its snapshot');
$cursor->query_safe('COMMIT');
$cursor->quit;

# ---- 2. readers against writers
$node->pgbench(
	'--no-vacuum --client=4 --jobs=2 --transactions=50',
	0,
	[qr{processed: 200/200}],
	[qr{^$}],
	'pinned readers agree with the table while writers change it',
	{
		'080_write' => q{
			\set k random(0, 4000)
			\set r random(0, 99)
			INSERT INTO pj VALUES (:k, -:r, -1), (:k + 1, -:r, -1);
			\if :r < 20
			DELETE FROM pj WHERE k = :k + 2;
			\elif :r < 35
			VACUUM pj;
			\endif
		},
		'080_read' => q{
			SET eytzgpu.device = cpu;
			SET eytzgpu.cpu_view = pinned;
			SET eytzgpu.batch_size = 512;
			SET enable_hashjoin = off;
			SET enable_mergejoin = off;
			SET enable_nestloop = off;
			SET max_parallel_workers_per_gather = 0;
			BEGIN ISOLATION LEVEL REPEATABLE READ;
			SELECT count(*) AS n1, coalesce(sum(i.v), 0) AS v1 FROM po o JOIN pj i ON i.k = o.k \gset
			SET LOCAL eytzgpu.enable_join = off;
			SET LOCAL enable_hashjoin = on;
			SELECT count(*) AS n2, coalesce(sum(i.v), 0) AS v2 FROM po o JOIN pj i ON i.k = o.k \gset
			SELECT 1 / (:n1 = :n2 AND :v1 = :v2)::int;
			COMMIT;
		},
	});
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('pj_k', true)"),
	't', 'the index passes verify after the run');

# ---- 3. an error in the middle of a pinned scan, then a join in the
# same session
my $count = $node->safe_psql('postgres',
	"SET eytzgpu.enable_join = off; SELECT count(*) FROM ($rows) j");
my ($ret, $out, $err) = $node->psql('postgres',
	"$settings SELECT o.x, 1 / (i.v * 0) FROM po o JOIN pj i ON i.k = o.k; "
	  . "SELECT count(*) FROM ($rows) j;",
	on_error_stop => 0);
like($err, qr/division by zero/, 'a query fails in the middle of the join');
unlike($err, qr/WARNING|leak/i, 'and leaves no pin behind');
is($out, $count, 'the session after it joins as PostgreSQL does');

$node->stop;
done_testing();
