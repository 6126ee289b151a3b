# t/002_am_standby.pl: eytzgpu indexes on a streaming standby.
#
# Build, pending inserts, merges, VACUUM and REINDEX on the primary are
# replayed on a hot standby; there the index must pass eytzgpu_verify() and
# answer every query like the primary.  An index with INCLUDE columns follows
# the same steps: its pages on the standby are the primary's, byte for byte,
# its index-only scans answer like the primary's sequential scans, and it
# passes eytzgpu_verify(idx, true).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION eytzgpu');
$primary->safe_psql('postgres', 'CREATE EXTENSION pageinspect');
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

my @queries = (
	'SELECT count(*), sum(v) FROM t WHERE k = 77',
	'SELECT count(*), sum(v) FROM t WHERE k BETWEEN -500 AND 500',
	'SELECT count(*), sum(v) FROM t WHERE k = ANY (ARRAY[1, 2, 3, 1999, -2000])',
	'SELECT count(*), sum(v) FROM t WHERE k < -1900',);

# index-only scans of the INCLUDE index u_idx, rows as text
my @include_queries = (
	'SELECT string_agg(u::text, \',\' ORDER BY u::text) FROM (SELECT k, v, b, c FROM u WHERE k BETWEEN -100 AND 100) u',
	'SELECT count(*), sum(v), sum(b::numeric), count(c) FROM u WHERE k < -1000',);

# each query with the settings that make it use the index
my @checks = (
	(map { [ $_, 'SET enable_seqscan = off;' ] } @queries),
	(map { [ $_, 'SET enable_seqscan = off; SET enable_bitmapscan = off;' ] }
		  @include_queries));

# the index's pages after the LSN and checksum
my $pages = q{SELECT string_agg(md5(substr(get_raw_page('u_idx', b::int8), 11)), ',' ORDER BY b)
  FROM generate_series(0, pg_relation_size('u_idx') / 8192 - 1) b};

sub compare
{
	my ($what) = @_;
	$primary->wait_for_catchup($standby);
	foreach my $check (@checks)
	{
		my ($q, $settings) = @$check;
		my $ref = $primary->safe_psql('postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; $q");
		my $got = $standby->safe_psql('postgres', "$settings $q");
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
	like(
		$standby->safe_psql(
			'postgres',
			"SET enable_seqscan = off; SET enable_bitmapscan = off; EXPLAIN (COSTS OFF) $include_queries[0]"
		),
		qr/Index Only Scan using u_idx/,
		"$what: index-only scan on the standby");
	is($standby->safe_psql('postgres', $pages),
		$primary->safe_psql('postgres', $pages),
		"$what: the INCLUDE index's pages are the primary's");
	is($standby->safe_psql('postgres', "SELECT eytzgpu_verify('u_idx', true)"),
		't', "$what: eytzgpu_verify of the INCLUDE index on the standby");
}

# the same statement on t and on u (u's b and c follow from v)
sub both
{
	my ($sql) = @_;
	$primary->safe_psql('postgres', $sql);
	$sql =~ s/\bt\b/u/g;
	$primary->safe_psql('postgres', $sql);
}

$primary->safe_psql(
	'postgres', q{
	SELECT setseed(0.2);
	CREATE TABLE t (k int4, v int4);
	INSERT INTO t SELECT (random() * 4000)::int4 - 2000, g FROM generate_series(1, 30000) g;
	CREATE INDEX t_idx ON t USING eytzgpu (k) WITH (layout = eks, fanout = 9, pending_limit = 5000);
	CREATE TABLE u (k int4, v int4,
		b float8 GENERATED ALWAYS AS (CASE WHEN v % 7 = 0 THEN NULL ELSE v / 3.0 END) STORED,
		c bool GENERATED ALWAYS AS (CASE WHEN v % 5 = 0 THEN NULL ELSE v % 2 = 0 END) STORED);
	INSERT INTO u SELECT k, v FROM t;
	CREATE INDEX u_idx ON u USING eytzgpu (k) INCLUDE (v, b, c) WITH (layout = eks, fanout = 9, pending_limit = 5000);
	VACUUM u;
});
compare('after build');

both('INSERT INTO t SELECT g % 4000 - 2000, -g FROM generate_series(1, 3000) g');
compare('after pending inserts');

# crosses pending_limit: an automatic merge inside the INSERT
both('INSERT INTO t SELECT g % 4000 - 2000, g FROM generate_series(1, 2500) g');
compare('after an automatic merge');

both('DELETE FROM t WHERE v % 4 = 0');
both('VACUUM t');
compare('after delete and vacuum');

both('INSERT INTO t SELECT g, g FROM generate_series(1, 100) g');
$primary->safe_psql('postgres', "SELECT eytzgpu_merge('t_idx')");
$primary->safe_psql('postgres', "SELECT eytzgpu_merge('u_idx')");
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
	both("INSERT INTO t SELECT g % 4000 - 2000, g FROM generate_series(1, 700) g");
	$primary->safe_psql('postgres', "SELECT eytzgpu_merge('t_idx')");
	$primary->safe_psql('postgres', "SELECT eytzgpu_merge('u_idx')");
}
both('DELETE FROM t WHERE v % 3 = 0');
both('VACUUM t');
both('VACUUM t');
compare('after merges that recycle');

$primary->safe_psql('postgres', 'REINDEX INDEX t_idx');
$primary->safe_psql('postgres', 'REINDEX INDEX u_idx');
compare('after reindex');

$standby->stop;
$primary->stop;
done_testing();
