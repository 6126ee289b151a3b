# t/001_am_crash.pl: crash recovery of eytzgpu indexes.
#
# Kill -9 the server after a build, after pending inserts, after a merge and
# after a VACUUM; after every restart the index must pass eytzgpu_verify()
# and answer like a sequential scan.  An index with INCLUDE columns goes
# through the same: its values must pass eytzgpu_verify(idx, true) and its
# index-only scans answer like a sequential scan.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION eytzgpu');

# queries whose answers must not depend on the index
my @queries = (
	'SELECT count(*), sum(v) FROM t WHERE k = 7',
	'SELECT count(*), sum(v) FROM t WHERE k BETWEEN 100 AND 900',
	'SELECT count(*), sum(v) FROM t WHERE k = ANY(ARRAY[1, 5, 50, 5000, -3])',
	'SELECT count(*), sum(v) FROM t WHERE k > 1990',);

# index-only scans of the INCLUDE index, rows as text
my @include_queries = (
	'SELECT string_agg(u::text, \',\' ORDER BY u::text) FROM (SELECT k, a, b, c FROM u WHERE k BETWEEN 10 AND 60) u',
	'SELECT count(*), sum(a), sum(b::numeric), count(c), bool_and(c) FROM u WHERE k > 1500',);

# each query with the settings that make it use the index
my @checks = (
	(map { [ $_, 'SET enable_seqscan = off;' ] } @queries),
	(map { [ $_, 'SET enable_seqscan = off; SET enable_bitmapscan = off;' ] }
		  @include_queries));

sub compare_with_seqscan
{
	my ($what) = @_;
	foreach my $check (@checks)
	{
		my ($q, $settings) = @$check;
		my $ref = $node->safe_psql('postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; $q");
		my $got = $node->safe_psql('postgres', "$settings $q");
		is($got, $ref, "$what: $q");
	}
	is($node->safe_psql('postgres', "SELECT eytzgpu_verify('t_idx')"),
		't', "$what: eytzgpu_verify");
	like(
		$node->safe_psql(
			'postgres',
			"SET enable_seqscan = off; SET enable_bitmapscan = off; EXPLAIN (COSTS OFF) $include_queries[0]"
		),
		qr/Index Only Scan using u_idx/,
		"$what: index-only scan");
	is($node->safe_psql('postgres', "SELECT eytzgpu_verify('u_idx', true)"),
		't', "$what: eytzgpu_verify of the INCLUDE index");
}

sub crash_restart
{
	$node->stop('immediate');
	$node->start;
}

$node->safe_psql(
	'postgres', q{
	SELECT setseed(0.1);
	CREATE TABLE t (k int4, v int4);
	INSERT INTO t SELECT (random() * 2000)::int4, g FROM generate_series(1, 20000) g;
	CREATE INDEX t_idx ON t USING eytzgpu (k) WITH (layout = 'eks', fanout = 5, pending_limit = 100000);
	CREATE TABLE u (k int4, a int8, b float8, c bool);
	INSERT INTO u SELECT k, v::int8 * 1000003, CASE WHEN v % 9 = 0 THEN NULL ELSE v / 7.0 END,
		CASE WHEN v % 4 = 0 THEN NULL ELSE v % 3 = 0 END FROM t;
	CREATE INDEX u_idx ON u USING eytzgpu (k) INCLUDE (a, b, c) WITH (pending_limit = 100000);
	VACUUM u;
});
crash_restart();
compare_with_seqscan('after build');

$node->safe_psql('postgres',
	'INSERT INTO t SELECT g % 2000, -g FROM generate_series(1, 3000) g');
$node->safe_psql('postgres',
	'INSERT INTO u SELECT g % 2000, -g, NULLIF(g % 5, 0) * 0.5, g % 2 = 0 FROM generate_series(1, 3000) g'
);
is($node->safe_psql('postgres', "SELECT pending FROM eytzgpu_info('t_idx')"),
	'3000', 'inserts are pending');
crash_restart();
is($node->safe_psql('postgres', "SELECT pending FROM eytzgpu_info('t_idx')"),
	'3000', 'pending entries survive the crash');
compare_with_seqscan('after pending inserts');

$node->safe_psql('postgres', "SELECT eytzgpu_merge('t_idx')");
$node->safe_psql('postgres', "SELECT eytzgpu_merge('u_idx')");
crash_restart();
is($node->safe_psql('postgres', "SELECT pending FROM eytzgpu_info('t_idx')"),
	'0', 'merge survives the crash');
compare_with_seqscan('after merge');

$node->safe_psql('postgres', 'DELETE FROM t WHERE v % 3 = 0');
$node->safe_psql('postgres',
	'INSERT INTO t SELECT g % 2000, g FROM generate_series(1, 500) g');
$node->safe_psql('postgres', 'VACUUM t');
$node->safe_psql('postgres', 'DELETE FROM u WHERE a % 3 = 0');
$node->safe_psql('postgres',
	'INSERT INTO u SELECT g % 2000, g, g, NULL FROM generate_series(1, 500) g');
$node->safe_psql('postgres', 'VACUUM u');
crash_restart();
compare_with_seqscan('after delete, insert and vacuum');

# a crash in the middle of a transaction that inserted (aborted entries)
$node->safe_psql('postgres',
	'INSERT INTO t SELECT g % 2000, g FROM generate_series(1, 400) g');
$node->safe_psql('postgres',
	'INSERT INTO u SELECT g % 2000, g, -g, true FROM generate_series(1, 400) g');
crash_restart();
compare_with_seqscan('after a second batch of pending inserts');

$node->stop;
done_testing();
