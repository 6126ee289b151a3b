# t/003_am_concurrency.pl: eytzgpu under concurrent inserts, scans and merges,
# unlogged indexes after a crash, and the build's progress phases.
#
# pgbench clients insert into and query one index whose small pending_limit
# makes merges happen while scans run (scans read the generation they started
# on, which merges do not reuse while they run); afterwards the index must
# pass eytzgpu_verify() and agree with a sequential scan.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION eytzgpu');
$node->safe_psql(
	'postgres', q{
	CREATE TABLE c (k int8, v int4);
	INSERT INTO c SELECT g % 5000, g FROM generate_series(1, 20000) g;
	CREATE INDEX c_idx ON c USING eytzgpu (k) WITH (layout = ebs, pending_limit = 64);
	-- a scan result that must not change: these keys are never inserted
	CREATE TABLE c_fixed AS SELECT count(*) AS n FROM c WHERE k BETWEEN 1000 AND 1099;
});

$node->pgbench(
	'--no-vacuum --client=4 --jobs=2 --transactions=300',
	0,
	[qr{processed: 1200/1200}],
	[qr{^$}],
	'concurrent inserts, scans, deletes and merges',
	{
		'003_insert' => q{
			\set k random(5000, 9999)
			INSERT INTO c SELECT :k, g FROM generate_series(1, 5) g;
		},
		'003_scan' => q{
			SET enable_seqscan = off;
			SET enable_bitmapscan = off;
			SELECT 1 / (count(*) = (SELECT n FROM c_fixed))::int
			  FROM c WHERE k BETWEEN 1000 AND 1099;
		},
		'003_delete' => q{
			\set k random(5000, 9999)
			DELETE FROM c WHERE k = :k;
		},
	});

is($node->safe_psql('postgres', "SELECT generation > 5 FROM eytzgpu_info('c_idx')"),
	't', 'merges happened during the run');
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('c_idx')"),
	't', 'eytzgpu_verify after the concurrent run');
my $q = 'SELECT count(*), sum(v) FROM c WHERE k >= 4990 AND k < 9000';
is( $node->safe_psql('postgres', "SET enable_seqscan = off; $q"),
	$node->safe_psql(
		'postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $q"),
	'index agrees with a sequential scan after the concurrent run');
$node->safe_psql('postgres', 'VACUUM c');
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('c_idx')"),
	't', 'eytzgpu_verify after VACUUM');
is( $node->safe_psql('postgres', "SET enable_seqscan = off; $q"),
	$node->safe_psql(
		'postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $q"),
	'index agrees with a sequential scan after VACUUM');

# unlogged: after a crash the index is reset from its init fork
$node->safe_psql(
	'postgres', q{
	CREATE UNLOGGED TABLE u (k int4);
	INSERT INTO u SELECT g FROM generate_series(1, 5000) g;
	CREATE INDEX u_idx ON u USING eytzgpu (k);
	INSERT INTO u SELECT g FROM generate_series(1, 100) g;
});
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('u_idx')"),
	't', 'unlogged index valid after a crash');
is($node->safe_psql('postgres', "SELECT entries, pending FROM eytzgpu_info('u_idx')"),
	'0|0', 'unlogged index empty after a crash');
$node->safe_psql('postgres', 'INSERT INTO u SELECT g FROM generate_series(1, 10) g');
is( $node->safe_psql(
		'postgres', 'SET enable_seqscan = off; SELECT count(*) FROM u WHERE k <= 5'),
	'5', 'unlogged index usable after a crash');

# progress of CREATE INDEX: the phases have names
my $phases = $node->safe_psql(
	'postgres', q{
	SELECT string_agg(coalesce(pg_indexam_progress_phasename(
		(SELECT oid FROM pg_am WHERE amname = 'eytzgpu'), p), '-'), ', ' ORDER BY p)
	  FROM generate_series(1, 5) p});
is($phases, 'initializing, loading tuples, sorting keys, writing Eytzinger layout, -',
	'build phases are named');

$node->stop;
done_testing();
