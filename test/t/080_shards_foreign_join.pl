# t/080_shards_foreign_join.pl: the EytzGPU Foreign Join, batched key
# access over postgres_fdw.
#
# A coordinator and 3 shard clusters: the inner table is partitioned on the
# join key (by hash over the 3 shards, by range with one shard holding no
# rows) or is one foreign table; each leaf is a postgres_fdw foreign table
# over a shard table with an eytzgpu index.  Every join type is compared
# with the same data held in local tables of the coordinator; the plans
# sent to the shards are checked with auto_explain; so are the round trips
# (one query per shard per batch), repeatable-read snapshots across the
# shards, a shard stopped in the middle of a join, and a cancel.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use EytzShards;

my $nshards = 3;
my $inner_rows = 60000;
my $outer_rows = 15000;

my @shards = EytzShards::start_shards($nshards);
my $coord = EytzShards::start_coordinator(qq{
autovacuum = off
session_preload_libraries = 'eytzgpu'
}, 'eytzgpu', 'postgres_fdw');

# the data, once, in local tables of the coordinator
EytzShards::create_local_data($coord, seed => 0.8,
	inner_rows => $inner_rows, inner_keys => "$inner_rows / 2",
	outer_rows => $outer_rows, outer_keys => "$inner_rows * 0.6");
$coord->safe_psql('postgres',
	q{CREATE FUNCTION local_odd(int4) RETURNS bool IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 2 = 1'});

# shard s holds inner_p<s> (hash partition s), inner_r<s> (range partition
# s: shard 2's range holds no row) and shard 0 the whole table inner_all
for my $s (0 .. $nshards - 1)
{
	my $node = $shards[$s];
	$node->safe_psql('postgres', qq{
CREATE TABLE inner_p$s (k int4, v int4);
CREATE TABLE inner_r$s (k int4, v int4);
CREATE TABLE inner_all (k int4, v int4);
CREATE TABLE inner_m$s (k int4, v int4);
});
}
EytzShards::create_servers($coord, \@shards, "fetch_size '1000'");
$coord->safe_psql('postgres', q{
CREATE TABLE inner_dist (k int4, v int4) PARTITION BY HASH (k);
CREATE TABLE inner_range (k int4, v int4) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE inner_r0 PARTITION OF inner_range FOR VALUES FROM (0) TO (15000)
	SERVER shard0 OPTIONS (table_name 'inner_r0');
CREATE FOREIGN TABLE inner_r1 PARTITION OF inner_range FOR VALUES FROM (15000) TO (2147483647)
	SERVER shard1 OPTIONS (table_name 'inner_r1');
CREATE FOREIGN TABLE inner_r2 PARTITION OF inner_range FOR VALUES FROM (2147483647) TO (MAXVALUE)
	SERVER shard2 OPTIONS (table_name 'inner_r2');
CREATE FOREIGN TABLE inner_single (k int4, v int4) SERVER shard0 OPTIONS (table_name 'inner_all');
}
	. join('', map { qq{
CREATE FOREIGN TABLE inner_f$_ PARTITION OF inner_dist FOR VALUES WITH (MODULUS $nshards, REMAINDER $_)
	SERVER shard$_ OPTIONS (table_name 'inner_p$_');
} } 0 .. $nshards - 1)
	. q{
-- shards beside local leaves: two foreign leaves, two local ones (one with
-- a covering index, answering from the index), one of them partitioned again
CREATE TABLE inner_mixed (k int4, v int4) PARTITION BY HASH (k);
CREATE FOREIGN TABLE inner_mixed0 PARTITION OF inner_mixed FOR VALUES WITH (MODULUS 4, REMAINDER 0)
	SERVER shard0 OPTIONS (table_name 'inner_m0');
CREATE FOREIGN TABLE inner_mixed1 PARTITION OF inner_mixed FOR VALUES WITH (MODULUS 4, REMAINDER 1)
	SERVER shard1 OPTIONS (table_name 'inner_m1');
CREATE TABLE inner_mixed2 PARTITION OF inner_mixed FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE inner_mixed3 PARTITION OF inner_mixed FOR VALUES WITH (MODULUS 4, REMAINDER 3)
	PARTITION BY RANGE (k);
CREATE TABLE inner_mixed3a PARTITION OF inner_mixed3 FOR VALUES FROM (MINVALUE) TO (20000);
CREATE TABLE inner_mixed3b PARTITION OF inner_mixed3 FOR VALUES FROM (20000) TO (MAXVALUE);
INSERT INTO inner_mixed SELECT * FROM inner_local;
CREATE INDEX inner_mixed2_k ON inner_mixed2 USING eytzgpu (k);
CREATE INDEX inner_mixed3_k ON inner_mixed3 USING eytzgpu (k) INCLUDE (v);
VACUUM ANALYZE inner_mixed2;
VACUUM ANALYZE inner_mixed3;
INSERT INTO inner_dist SELECT * FROM inner_local;
CREATE TABLE inner_range_local AS SELECT * FROM inner_local WHERE k >= 0 AND k < 2147483647;
INSERT INTO inner_range SELECT * FROM inner_range_local;
INSERT INTO inner_single SELECT * FROM inner_local;
});
for my $s (0 .. $nshards - 1)
{
	$shards[$s]->safe_psql('postgres', qq{
CREATE INDEX inner_p${s}_k ON inner_p$s USING eytzgpu (k);
CREATE INDEX inner_r${s}_k ON inner_r$s USING eytzgpu (k);
CREATE INDEX inner_all_k ON inner_all USING eytzgpu (k);
VACUUM ANALYZE inner_p$s;
VACUUM ANALYZE inner_r$s;
VACUUM ANALYZE inner_all;
CREATE INDEX inner_m${s}_k ON inner_m$s USING eytzgpu (k);
VACUUM ANALYZE inner_m$s;
});
}
is($shards[2]->safe_psql('postgres', 'SELECT count(*) FROM inner_r2'), '0', 'shard 2 holds no row of inner_range');
$coord->safe_psql('postgres', 'ANALYZE inner_local; ANALYZE outer_local; ANALYZE inner_f0, inner_f1, inner_f2, inner_r0, inner_r1, inner_r2, inner_single, inner_mixed0, inner_mixed1');

# PostgreSQL's join methods off: the foreign join is the one left
my $force = 'SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;';
my @joins = (
	'SELECT count(*), sum(i.v::int8), sum(o.w::int8), count(i.k) FROM outer_local o JOIN %s i ON i.k = o.k',
	'SELECT count(*), count(i.v), sum(i.v::int8), sum(o.w::int8) FROM outer_local o LEFT JOIN %s i ON i.k = o.k',
	'SELECT count(*), sum(o.w::int8) FROM outer_local o WHERE EXISTS (SELECT FROM %s i WHERE i.k = o.k)',
	'SELECT count(*), sum(o.w::int8) FROM outer_local o WHERE NOT EXISTS (SELECT FROM %s i WHERE i.k = o.k)',
	'SELECT count(*), sum(i.v::int8) FROM outer_local o JOIN %s i ON i.k = o.k AND i.v %% 3 <> o.w %% 3',
	# an inner qual postgres_fdw does not ship: evaluated by the coordinator
	'SELECT count(*), sum(i.v::int8), sum(o.w::int8) FROM outer_local o JOIN %s i ON i.k = o.k WHERE local_odd(i.v)',
	# a LEFT join's qual on the inner side above it, and one within it
	'SELECT count(*), count(i.v), sum(o.w::int8) FROM outer_local o LEFT JOIN %s i ON i.k = o.k AND i.v %% 5 = 0',
	'SELECT count(*), sum(o.w::int8) FROM outer_local o LEFT JOIN %s i ON i.k = o.k WHERE i.v IS NULL OR i.v %% 7 = 1',
	'SELECT count(*), sum(o.w::int8) FROM outer_local o WHERE NOT EXISTS (SELECT FROM %s i WHERE i.k = o.k AND local_odd(i.v + o.w))',
	# outer values by reference (text), copied into the batch and read at each match
	q{SELECT count(*), sum(length(o.t)), md5(string_agg(o.t || ':' || i.v, ',' ORDER BY o.t, i.v)) FROM (SELECT k, repeat('ab', w %% 40) || w AS t FROM outer_local) o JOIN %s i ON i.k = o.k AND o.t <> i.v::text},
	q{SELECT count(*), count(i.v), md5(string_agg(o.t || ':' || coalesce(i.v::text, '-'), ',' ORDER BY o.t, i.v)) FROM (SELECT k, CASE WHEN w %% 9 = 0 THEN NULL ELSE repeat('yz', w %% 30) || w END AS t FROM outer_local) o LEFT JOIN %s i ON i.k = o.k},);

my %reference = (inner_dist => 'inner_local', inner_range => 'inner_range_local',
	inner_single => 'inner_local', inner_mixed => 'inner_local');
foreach my $inner ('inner_dist', 'inner_range', 'inner_single', 'inner_mixed')
{
	foreach my $batch (97, 65536)
	{
		foreach my $j (@joins)
		{
			my $ref = $coord->safe_psql('postgres', sprintf($j, $reference{$inner}));
			my $q = sprintf($j, $inner);
			my $set = "$force SET eytzgpu.foreign_batch_size = $batch;";
			my $plan = $coord->safe_psql('postgres', "$set EXPLAIN (COSTS OFF) $q");
			like($plan, qr/EytzGPU Foreign Join/, "foreign join planned ($inner, batch $batch): $j");
			is($coord->safe_psql('postgres', "$set $q"), $ref,
				"foreign join answers as the local one ($inner, batch $batch): $j");
		}
	}
}

# keys of a type whose equal values may differ in their bits (float8: 0
# and -0, NaNs) are hashed and compared by the type's own functions in the
# batch (int4's, equal exactly when their bits are, by their Datums)
$shards[0]->safe_psql('postgres', q{
CREATE TABLE fk (k float8, v int4);
INSERT INTO fk SELECT ('{0,-0,NaN,1.5,-Infinity,NULL,2.25}'::float8[])[1 + g % 7], g
  FROM generate_series(1, 70) g;
CREATE INDEX fk_k ON fk USING eytzgpu (k);
VACUUM ANALYZE fk;
});
$coord->safe_psql('postgres', q{
CREATE FOREIGN TABLE fk_f (k float8, v int4) SERVER shard0 OPTIONS (table_name 'fk');
CREATE TABLE fk_local AS SELECT * FROM fk_f;
CREATE TABLE fk_outer AS SELECT ('{-0,0,NaN,1.5,3,NULL,Infinity}'::float8[])[1 + g % 7] AS k, g AS w
  FROM generate_series(1, 50) g;
ANALYZE fk_f; ANALYZE fk_local; ANALYZE fk_outer;
});
# The inner, LEFT, semi and anti joins of outer table $outer with foreign
# table $foreign (after settings $set), each planned as the foreign join and
# answering as the same join with the local copy $local
sub joins_as_local
{
	my ($outer, $foreign, $local, $set, $what) = @_;
	foreach my $j (@joins[0 .. 3])
	{
		my $q = sprintf($j =~ s/outer_local/$outer/r, $foreign);
		my $ref = $coord->safe_psql('postgres', sprintf($j =~ s/outer_local/$outer/r, $local));
		like($coord->safe_psql('postgres', "$force $set EXPLAIN (COSTS OFF) $q"),
			qr/EytzGPU Foreign Join/, "foreign join planned on $what: $j");
		is($coord->safe_psql('postgres', "$force $set $q"), $ref,
			"foreign join on $what answers as the local one: $j");
	}
}
joins_as_local('fk_outer', 'fk_f', 'fk_local', '', 'float8 keys (0 = -0, NaN)');

# int8 keys a * (2^32 + 1) all have the same hash in the batch's table (its
# Datum's halves folded): every probe passes other keys of that hash
$shards[1]->safe_psql('postgres', q{
CREATE TABLE ck (k int8, v int4);
INSERT INTO ck SELECT CASE WHEN g % 41 = 0 THEN NULL ELSE (g % 300) * 4294967297 END, g
  FROM generate_series(1, 900) g;
CREATE INDEX ck_k ON ck USING eytzgpu (k);
VACUUM ANALYZE ck;
});
$coord->safe_psql('postgres', q{
CREATE FOREIGN TABLE ck_f (k int8, v int4) SERVER shard1 OPTIONS (table_name 'ck');
CREATE TABLE ck_local AS SELECT * FROM ck_f;
CREATE TABLE ck_outer AS SELECT CASE WHEN g % 37 = 0 THEN NULL ELSE (g % 330 - 10) * 4294967297 END AS k, g AS w
  FROM generate_series(1, 700) g;
ANALYZE ck_f; ANALYZE ck_local; ANALYZE ck_outer;
});
joins_as_local('ck_outer', 'ck_f', 'ck_local', 'SET eytzgpu.foreign_batch_size = 200;',
	'int8 keys of one hash');

# one remote query per shard per batch, keys routed by the partition key;
# the range-partitioned table routes no key to the empty shard's range
# except 2147483647 (the outer keys' extreme)
my $analyze = $coord->safe_psql('postgres', "$force SET eytzgpu.foreign_batch_size = 1000;"
	  . ' EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) '
	  . sprintf($joins[0], 'inner_dist'));
my ($batches) = $analyze =~ /Batches: (\d+)/;
is($batches, int(($outer_rows + 999) / 1000), 'batches of eytzgpu.foreign_batch_size outer rows');
like($analyze, qr/Key Routing: partition key/, 'keys routed by the hash partition key');
my ($ndistinct) = $analyze =~ /Distinct Keys: (\d+)/;
my ($keys_sent, $shard_lines) = (0, 0);
while ($analyze =~ /Shard shard\d\.inner_f\d: round trips=(\d+) keys sent=(\d+) rows=\d+/g)
{
	is($1, $batches, 'one round trip per shard per batch');
	$keys_sent += $2;
	$shard_lines++;
}
is($shard_lines, $nshards, 'EXPLAIN ANALYZE shows every shard');
is($keys_sent, $ndistinct, 'each distinct key sent to one shard');
like($analyze, qr/Async Foreign Scan/, 'the shards are queried asynchronously');

# shards beside local leaves: every leaf scanned once a batch, the local
# ones through their eytzgpu indexes (one index-only), each key to one leaf
$analyze = $coord->safe_psql('postgres', "$force SET eytzgpu.foreign_batch_size = 1000;"
	  . ' EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) '
	  . sprintf($joins[0], 'inner_mixed'));
($ndistinct) = $analyze =~ /Distinct Keys: (\d+)/;
my %leaf_scans;
$keys_sent = 0;
while ($analyze =~ /(Shard shard\d\.inner_mixed\d|Local Leaf inner_mixed\d\w?): (?:round trips|scans)=(\d+) keys sent=(\d+) rows=\d+/g)
{
	$leaf_scans{$1} = $2;
	$keys_sent += $3;
}
is(join(',', map { "$_=$leaf_scans{$_}" } sort keys %leaf_scans),
	join(',', map { "$_=$batches" } ('Local Leaf inner_mixed2', 'Local Leaf inner_mixed3a',
		'Local Leaf inner_mixed3b', 'Shard shard0.inner_mixed0', 'Shard shard1.inner_mixed1')),
	'shards and local leaves: one query or scan each per batch');
is($keys_sent, $ndistinct, 'each distinct key sent to one leaf of the mixed table');
like($analyze, qr/Index Only Scan using inner_mixed3a_k_v_idx/, 'a covering local leaf answers from its index');
like($analyze, qr/Index Cond: \((?:i_\d+\.)?k = ANY \(\$\d+\)\)/,
	'a local leaf takes its batch as the array of an index condition');
# with timing, each leaf's wait for its rows
$analyze = $coord->safe_psql('postgres', "$force EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) "
	  . sprintf($joins[0], 'inner_mixed'));
is(scalar(() = $analyze =~ /(?:Shard|Local Leaf) \S+: (?:round trips|scans)=\d+ keys sent=\d+ rows=\d+ wait=\d+\.\d{3} ms/g),
	5, 'EXPLAIN ANALYZE shows each leaf\'s wait');
# a local leaf with no index for the key: PostgreSQL's plans, and DEBUG1 says why
$coord->safe_psql('postgres', 'DROP INDEX inner_mixed2_k');
my ($ret, $stdout, $stderr) = $coord->psql('postgres',
	"$force SET client_min_messages = debug1; EXPLAIN (COSTS OFF) " . sprintf($joins[0], 'inner_mixed'));
unlike($stdout, qr/EytzGPU Foreign Join/, 'no foreign join when a local leaf has no index for the key');
like($stderr, qr/its leaf "inner_mixed2" has no index for "k = ANY\(\.\.\.\)"/, 'DEBUG1 names the leaf without an index');
$coord->safe_psql('postgres', 'CREATE INDEX inner_mixed2_k ON inner_mixed2 USING btree (k)');
is($coord->safe_psql('postgres', "$force SET eytzgpu.foreign_batch_size = 333; " . sprintf($joins[1], 'inner_mixed')),
	$coord->safe_psql('postgres', sprintf($joins[1], 'inner_local')),
	'a local leaf with a btree index instead answers as the local join');

# each shard answered its key arrays with its eytzgpu index (the shards'
# tables are small enough here for a sequential scan to be cheaper: their
# planners are told not to take one)
$_->safe_psql('postgres', 'ALTER DATABASE postgres SET enable_seqscan = off') for @shards;
my @log_start = map { -s $_->logfile } @shards;
$coord->safe_psql('postgres', "$force SET eytzgpu.foreign_batch_size = 200; "
	  . sprintf($joins[0], 'inner_dist'));
for my $s (0 .. $nshards - 1)
{
	my $log = substr(slurp_file($shards[$s]->logfile), $log_start[$s]);
	my @plans = grep { /\A\s*Query Text: DECLARE c\d+ CURSOR FOR\n\s*SELECT[^\n]*public\.inner_p$s WHERE \(\(k = ANY \(\$1::integer\[\]\)\)\)/ }
	  split(/ plan:\n/, $log);
	ok(scalar(@plans) > 0, "shard$s received the batches as key arrays");
	is(scalar(grep { /inner_p${s}_k/ } @plans), scalar(@plans),
		"shard$s answered each array with its eytzgpu index");
}

$_->safe_psql('postgres', 'ALTER DATABASE postgres RESET enable_seqscan') for @shards;

# a snapshot taken on the shards at the first query holds for the
# transaction (postgres_fdw's REPEATABLE READ remote transactions)
my $j0 = sprintf($joins[0], 'inner_dist');
my $session = $coord->background_psql('postgres', on_error_stop => 0);
$session->query_safe("$force SET eytzgpu.foreign_batch_size = 500;");
$session->query_safe('BEGIN');
my $before = $session->query_safe($j0);
$shards[1]->safe_psql('postgres',
	'INSERT INTO inner_p1 SELECT k, v + 10000000 FROM inner_p1 WHERE k IS NOT NULL LIMIT 1000');
is($session->query_safe($j0), $before, 'the coordinator transaction keeps its shard snapshots');
$session->query_safe('COMMIT');
isnt($session->query_safe($j0), $before, 'a new transaction sees the shard rows');
$shards[1]->safe_psql('postgres', 'DELETE FROM inner_p1 WHERE v > 10000000');
is($session->query_safe($j0), $before, 'back to the data');

# a shard stopped in the middle of a join: postgres_fdw's error, no rows,
# and the session goes on; the outer side sleeps so that the join takes a
# few seconds
my $slow = 'SELECT count(*), sum(i.v::int8) FROM (SELECT * FROM outer_local WHERE pg_sleep(0.0003) IS NOT NULL) o JOIN inner_dist i ON i.k = o.k';
$session->query_until(qr/started/, "\\echo started\n$slow;\n");
sleep(1);
$shards[1]->stop('immediate');
my $out = $session->query("SELECT 'alive'");
like($session->{stderr}, qr/ERROR:.*(server closed the connection|could not connect|connection|terminat)/i,
	"a shard stopped mid-join: postgres_fdw's error");
$session->{stderr} = '';
is($out, 'alive', 'no partial result, and the session is usable');
$shards[1]->start;
is($session->query_safe($j0), $before, 'the join runs again once the shard is back');

# a cancel stops the join, and the shards are left with nothing running
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/, "\\echo started\n$slow;\n");
sleep(1);
$coord->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$out = $session->query("SELECT 'alive'");
like($session->{stderr}, qr/canceling statement due to user request/, 'the join is canceled');
$session->{stderr} = '';
is($out, 'alive', 'the session is usable after the cancel');
for my $s (0 .. $nshards - 1)
{
	ok($shards[$s]->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'postgres_fdw' AND state NOT IN ('idle')"),
		"shard$s runs nothing for the canceled join");
}
is($session->query_safe($j0), $before, 'the join runs again after the cancel');
$session->quit;

$coord->stop;
$_->stop for @shards;
done_testing();
