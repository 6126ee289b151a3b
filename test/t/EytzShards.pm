# t/EytzShards.pm: the shard clusters of the sharding tests (t/070, t/080).
#
# N shard clusters with eytzgpu, each logging every plan it runs
# (auto_explain, so that a test can read which plans the coordinator's
# queries ran there), a coordinator with postgres_fdw and a foreign server
# and user mapping per shard, and the tests' data once in local tables of
# the coordinator: inner keys with duplicates, NULLs and extremes, outer
# keys with repeats, misses (negative keys are on no shard), NULLs and
# extremes.  What each test shards and checks stays in the test.
package EytzShards;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;

# shard0..shard<n-1>, started, with the extension
sub start_shards
{
	my ($n) = @_;
	my @shards;
	for my $s (0 .. $n - 1)
	{
		my $node = PostgreSQL::Test::Cluster->new("shard$s");
		$node->init;
		$node->append_conf('postgresql.conf', qq{
session_preload_libraries = 'auto_explain'
auto_explain.log_min_duration = 0
autovacuum = off
});
		$node->start;
		$node->safe_psql('postgres', 'CREATE EXTENSION eytzgpu');
		push @shards, $node;
	}
	return @shards;
}

# The coordinator, started with conf appended and the extensions created
sub start_coordinator
{
	my ($conf, @extensions) = @_;
	my $coord = PostgreSQL::Test::Cluster->new('coordinator');
	$coord->init;
	$coord->append_conf('postgresql.conf', $conf);
	$coord->start;
	$coord->safe_psql('postgres',
		join('; ', map { "CREATE EXTENSION $_" } @extensions));
	return $coord;
}

# A postgres_fdw server shard<s> per shard (with the server options given)
# and the coordinator's user mapping for it
sub create_servers
{
	my ($coord, $shards, $options) = @_;
	for my $s (0 .. $#$shards)
	{
		my ($host, $port) = ($shards->[$s]->host, $shards->[$s]->port);
		$coord->safe_psql('postgres', qq{
CREATE SERVER shard$s FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '$host', port '$port', dbname 'postgres', $options);
CREATE USER MAPPING FOR CURRENT_USER SERVER shard$s;
});
	}
	return;
}

# inner_local (k, v) and outer_local (k, w) on the coordinator: %d
# holds seed, inner_rows and outer_rows, and inner_keys and outer_keys,
# the SQL of the range random keys are drawn from
sub create_local_data
{
	my ($coord, %d) = @_;
	$coord->safe_psql('postgres', qq{
SELECT setseed($d{seed});
CREATE TABLE inner_local AS
SELECT CASE WHEN g % 211 = 0 THEN NULL
			WHEN g % 1009 = 0 THEN 2147483647
			ELSE (random() * ($d{inner_keys}))::int4 END AS k, g AS v
  FROM generate_series(1, $d{inner_rows}) g;
CREATE TABLE outer_local AS
SELECT CASE WHEN g % 97 = 0 THEN NULL
			WHEN g % 19 = 0 THEN -1 - g
			WHEN g % 503 = 0 THEN 2147483647
			ELSE (random() * ($d{outer_keys}))::int4 END AS k, g AS w
  FROM generate_series(1, $d{outer_rows}) g;
});
	return;
}

1;
