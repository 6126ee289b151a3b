# t/070_shards_colocated.pl: co-located shards through postgres_fdw.
#
# Two tables sharded alike (hash partitions on the join key, each pair of
# partitions a postgres_fdw foreign table on the same shard server): with
# enable_partitionwise_join, the coordinator pushes each pair's join to its
# shard (partitionwise join + postgres_fdw's join pushdown), and each
# shard's planner runs it as its own EytzGPU Join over its eytzgpu index.
# Every join type is compared with the same data held in local tables of the
# coordinator; auto_explain on the shards shows the plan each shard ran.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use EytzShards;

my $nshards = 2;
my $inner_rows = 400000;	# per shard
my $outer_rows = 10000;	# per shard

my @shards = EytzShards::start_shards($nshards);
my $coord = EytzShards::start_coordinator("autovacuum = off\n", 'postgres_fdw');

# the data, once, in local tables of the coordinator
EytzShards::create_local_data($coord, seed => 0.6,
	inner_rows => $inner_rows * $nshards, inner_keys => "$inner_rows * $nshards / 2",
	outer_rows => $outer_rows * $nshards, outer_keys => "$inner_rows * $nshards / 2");

# each shard holds partition s of both tables, with an eytzgpu index on the
# inner one; the coordinator's partitions are foreign tables on the shard
for my $s (0 .. $nshards - 1)
{
	my $node = $shards[$s];
	$node->safe_psql('postgres', qq{
CREATE TABLE inner_p$s (k int4, v int4);
CREATE TABLE outer_p$s (k int4, w int4);
});
}
EytzShards::create_servers($coord, \@shards, "batch_size '1000', use_remote_estimate 'true'");
$coord->safe_psql('postgres', q{
CREATE TABLE inner_dist (k int4, v int4) PARTITION BY HASH (k);
CREATE TABLE outer_dist (k int4, w int4) PARTITION BY HASH (k);
}
	. join('', map { qq{
CREATE FOREIGN TABLE inner_f$_ PARTITION OF inner_dist FOR VALUES WITH (MODULUS $nshards, REMAINDER $_)
	SERVER shard$_ OPTIONS (table_name 'inner_p$_');
CREATE FOREIGN TABLE outer_f$_ PARTITION OF outer_dist FOR VALUES WITH (MODULUS $nshards, REMAINDER $_)
	SERVER shard$_ OPTIONS (table_name 'outer_p$_');
} } 0 .. $nshards - 1)
	. q{
INSERT INTO inner_dist SELECT * FROM inner_local;
INSERT INTO outer_dist SELECT * FROM outer_local;
});
for my $node (@shards)
{
	my $n = $node->name;
	$n =~ s/shard//;
	$node->safe_psql('postgres', qq{
CREATE INDEX inner_p${n}_k ON inner_p$n USING eytzgpu (k);
VACUUM ANALYZE inner_p$n;
VACUUM ANALYZE outer_p$n;
});
}
$coord->safe_psql('postgres', 'ANALYZE inner_dist; ANALYZE outer_dist');

# [join, pushed down to the shards on every version]: postgres_fdw pushes
# inner and outer joins down; semi and anti joins only from PostgreSQL 17 on
my @joins = (
	[ 'SELECT count(*), sum(i.v::int8), sum(o.w::int8) FROM %s o JOIN %s i ON i.k = o.k', 1 ],
	[ 'SELECT count(*), count(i.v), sum(o.w::int8) FROM %s o LEFT JOIN %s i ON i.k = o.k', 1 ],
	[ 'SELECT count(*), sum(o.w::int8) FROM %s o WHERE EXISTS (SELECT FROM %s i WHERE i.k = o.k)', 0 ],
	[ 'SELECT count(*), sum(o.w::int8) FROM %s o WHERE NOT EXISTS (SELECT FROM %s i WHERE i.k = o.k)', 0 ],
	[ 'SELECT count(*), sum(i.v::int8) FROM %s o JOIN %s i ON i.k = o.k AND i.v % 3 <> o.w % 3', 1 ],);

my $pw = 'SET enable_partitionwise_join = on;';
my $pushed_joins = 0;
foreach my $jp (@joins)
{
	my ($j, $always) = @$jp;
	my $dist = sprintf($j, 'outer_dist', 'inner_dist');
	my $ref = $coord->safe_psql('postgres',
		sprintf($j, 'outer_local', 'inner_local'));
	my $plan = $coord->safe_psql('postgres', "$pw EXPLAIN (VERBOSE, COSTS OFF) $dist");
	my $pushed = () = $plan =~ /Relations: .*JOIN/g;
	if ($always)
	{
		is($pushed, $nshards, "each shard runs its pair's join: $j");
	}
	else
	{
		ok($pushed == 0 || $pushed == $nshards, "pushed to every shard or to none: $j");
	}
	$pushed_joins++ if $pushed;
	my $got = $coord->safe_psql('postgres', "$pw $dist");
	is($got, $ref, "the sharded join answers as the local one: $j");
}

# the shards ran the pushed-down joins as EytzGPU Joins over their indexes:
# every plan auto_explain logged for a join the coordinator's cursors ran
# (not the EXPLAINs of use_remote_estimate): a cursor over both tables, a
# JOIN, or from 17 on an EXISTS for a semi or anti join
for my $s (0 .. $nshards - 1)
{
	my @plans = grep { /\A\s*Query Text: DECLARE c\d+ CURSOR FOR\n\s*SELECT[^\n]*public\.outer_p$s\b[^\n]*public\.inner_p$s\b/ }
	  split(/ plan:\n/, slurp_file($shards[$s]->logfile));
	is(scalar(@plans), $pushed_joins, "shard$s ran $pushed_joins pushed-down joins");
	is(scalar(grep { /Custom Scan \(EytzGPU Join\).*Index: inner_p${s}_k/s } @plans),
		$pushed_joins, "shard$s ran each as an EytzGPU Join over its own index");
}

# a snapshot taken on the shards at the first query holds for the
# transaction: rows the shards get meanwhile are not seen (postgres_fdw's
# REPEATABLE READ remote transactions)
my $j0 = sprintf($joins[0][0], 'outer_dist', 'inner_dist');
my $session = $coord->background_psql('postgres');
$session->query_safe("BEGIN; $pw");
my $before = $session->query_safe($j0);
$shards[0]->safe_psql('postgres',
	'INSERT INTO inner_p0 SELECT k, v + 10000000 FROM inner_p0 LIMIT 1000');
is($session->query_safe($j0), $before, 'the coordinator transaction keeps its shard snapshots');
$session->query_safe('COMMIT');
isnt($coord->safe_psql('postgres', "$pw $j0"), $before, 'a new transaction sees the shard rows');
$session->quit;

$coord->stop;
$_->stop for @shards;
done_testing();
