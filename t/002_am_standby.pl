# t/002_am_standby.pl: eytzgpu indexes on a streaming standby.
#
# Build, pending inserts, merges, VACUUM and REINDEX on the primary are
# replayed on a hot standby; there the index must pass eytzgpu_verify() and
# answer every query like the primary.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION eytzgpu');
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

my @queries = (
	'SELECT count(*), sum(v) FROM t WHERE k = 77',
	'SELECT count(*), sum(v) FROM t WHERE k BETWEEN -500 AND 500',
	'SELECT count(*), sum(v) FROM t WHERE k = ANY (ARRAY[1, 2, 3, 1999, -2000])',
	'SELECT count(*), sum(v) FROM t WHERE k < -1900',);

sub compare
{
	my ($what) = @_;
	$primary->wait_for_catchup($standby);
	foreach my $q (@queries)
	{
		my $ref = $primary->safe_psql('postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; $q");
		my $got = $standby->safe_psql('postgres', "SET enable_seqscan = off; $q");
		is($got, $ref, "$what: $q");
	}
	my $plan = $standby->safe_psql('postgres',
		"SET enable_seqscan = off; EXPLAIN (COSTS OFF) $queries[0]");
	like($plan, qr/t_idx/, "$what: the standby uses the index");
	is($standby->safe_psql('postgres', "SELECT eytzgpu_verify('t_idx')"),
		't', "$what: eytzgpu_verify on the standby");
	is( $standby->safe_psql(
			'postgres', "SELECT entries, pending, dead FROM eytzgpu_info('t_idx')"),
		$primary->safe_psql(
			'postgres', "SELECT entries, pending, dead FROM eytzgpu_info('t_idx')"),
		"$what: same counts");
}

$primary->safe_psql(
	'postgres', q{
	SELECT setseed(0.2);
	CREATE TABLE t (k int4, v int4);
	INSERT INTO t SELECT (random() * 4000)::int4 - 2000, g FROM generate_series(1, 30000) g;
	CREATE INDEX t_idx ON t USING eytzgpu (k) WITH (layout = eks, fanout = 9, pending_limit = 5000);
});
compare('after build');

$primary->safe_psql('postgres',
	'INSERT INTO t SELECT g % 4000 - 2000, -g FROM generate_series(1, 3000) g');
compare('after pending inserts');

# crosses pending_limit: an automatic merge inside the INSERT
$primary->safe_psql('postgres',
	'INSERT INTO t SELECT g % 4000 - 2000, g FROM generate_series(1, 2500) g');
compare('after an automatic merge');

$primary->safe_psql('postgres', 'DELETE FROM t WHERE v % 4 = 0');
$primary->safe_psql('postgres', 'VACUUM t');
compare('after delete and vacuum');

$primary->safe_psql('postgres', 'INSERT INTO t SELECT g, g FROM generate_series(1, 100) g');
$primary->safe_psql('postgres', "SELECT eytzgpu_merge('t_idx')");
compare('after an explicit merge');

# a merge on the standby is refused up front (read-only), before it reads
# or writes anything
my ($ret, $out, $err) = $standby->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT eytzgpu_merge('t_idx')");
like($err, qr/ERROR:\s+25006: cannot execute eytzgpu_merge\(\) during recovery/,
	'eytzgpu_merge on the standby: 25006');
compare('after a merge refused on the standby');

# merges and VACUUM that recycle retired generations and truncate the file
# replay on the standby
foreach my $round (1 .. 4)
{
	$primary->safe_psql('postgres',
		"INSERT INTO t SELECT g % 4000 - 2000, g FROM generate_series(1, 700) g");
	$primary->safe_psql('postgres', "SELECT eytzgpu_merge('t_idx')");
}
$primary->safe_psql('postgres', 'DELETE FROM t WHERE v % 3 = 0');
$primary->safe_psql('postgres', 'VACUUM t');
$primary->safe_psql('postgres', 'VACUUM t');
compare('after merges that recycle');

$primary->safe_psql('postgres', 'REINDEX INDEX t_idx');
compare('after reindex');

$standby->stop;
$primary->stop;
done_testing();
