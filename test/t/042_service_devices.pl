# t/042_service_devices.pl: the eytzgpu service with several devices
# (issue 25) and many requests in flight (issue 27), without a GPU: with
# eytzgpu.service_device = cpu and eytzgpu.service_cpu_devices = 3 the
# service places its copies on three CPU devices exactly as it places them
# on three GPUs (each bounded by eytzgpu.gpu_memory_limit, the one with the
# most room first), and takes the requests of several slots in one round.
#
# Checked against PostgreSQL's own answer (the same join with the
# extension's plans off): joins against four indexes from 8 concurrent
# sessions (pgbench, each transaction checking its own answer), with and
# without included columns, batch_size = 1 (a request per outer row), and
# small windows (a batch in several requests); the copies spread over the
# devices, one device each while they fit; an index larger than any
# device's limit in key-range slices on several (points, ranges, LEFT, ANTI,
# SEMI, included values, tombstones); one larger than all of them together
# runs on the CPU with the reason in EXPLAIN; LRU eviction
# per device; eytzgpu_service_gpus() and the device column of
# eytzgpu_service_resident(); a partitioned inner table's leaves on three
# devices, looked up at once, each leaf's device in EXPLAIN VERBOSE.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('service_devices');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'eytzgpu'
eytzgpu.service_device = 'cpu'
eytzgpu.service_cpu_devices = 3
eytzgpu.service_slot_buffer = '64kB'
eytzgpu.gpu_memory_limit = '3MB'
max_connections = 40
});
$node->start;

# four tables of about 150k rows (1.8 MB per copy: one per device), one of
# 400k (4.8 MB: more than a device's limit); keys with duplicates, NULLs,
# the extremes; one index with an included column
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.25);
	CREATE TABLE o (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO o (k) SELECT CASE WHEN random() < 0.03 THEN NULL
		ELSE (random() * 120000)::int4 END FROM generate_series(1, 6000);
	INSERT INTO o (k) VALUES (2147483647), (-2147483648), (0);
	CREATE TABLE t1 (id int8 GENERATED ALWAYS AS IDENTITY, k int4, v int4);
	CREATE TABLE t2 (LIKE t1 INCLUDING ALL);
	CREATE TABLE t3 (LIKE t1 INCLUDING ALL);
	CREATE TABLE t4 (LIKE t1 INCLUDING ALL);
	CREATE TABLE big (LIKE t1 INCLUDING ALL);
	INSERT INTO t1 (k, v) SELECT CASE WHEN random() < 0.02 THEN NULL
		ELSE (random() * 100000)::int4 END, g FROM generate_series(1, 150000) g;
	INSERT INTO t1 (k, v) VALUES (2147483647, -1), (-2147483648, -2), (0, 0);
	INSERT INTO t2 (k, v) SELECT (random() * 100000)::int4, g FROM generate_series(1, 150000) g;
	INSERT INTO t3 (k, v) SELECT (random() * 100000)::int4, g FROM generate_series(1, 150000) g;
	INSERT INTO t4 (k, v) SELECT (random() * 100000)::int4, g FROM generate_series(1, 150000) g;
	INSERT INTO big (k, v) SELECT CASE WHEN random() < 0.02 THEN NULL
		ELSE (random() * 100000)::int4 END, g FROM generate_series(1, 400000) g;
	INSERT INTO big (k, v) VALUES (2147483647, -1), (-2147483648, -2), (0, 0);
	CREATE TABLE big2 (LIKE t1 INCLUDING ALL);
	INSERT INTO big2 (k, v) SELECT (random() * 50000)::int4, CASE WHEN g % 50 = 0 THEN NULL ELSE g END
		FROM generate_series(1, 300000) g;
	CREATE TABLE huge (LIKE t1 INCLUDING ALL);
	INSERT INTO huge (k, v) SELECT (random() * 100000)::int4, g FROM generate_series(1, 1000000) g;
	CREATE INDEX t1_k ON t1 USING eytzgpu (k);
	CREATE INDEX t2_k ON t2 USING eytzgpu (k) INCLUDE (v);
	CREATE INDEX t3_k ON t3 USING eytzgpu (k);
	CREATE INDEX t4_k ON t4 USING eytzgpu (k);
	CREATE INDEX big_k ON big USING eytzgpu (k);
	CREATE INDEX big2_k ON big2 USING eytzgpu (k) INCLUDE (v);
	CREATE INDEX huge_k ON huge USING eytzgpu (k);
	ANALYZE o, t1, t2, t3, t4, big, big2, huge;
});

my $force = 'SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;';

# the join's (count, checksum), and PostgreSQL's
sub answer
{
	my ($t, $settings) = @_;
	my $q = "SELECT count(*), sum((o.id * 1000003) # $t.id + coalesce($t.v, 7)) "
	  . "FROM o JOIN $t ON $t.k = o.k";
	return (
		$node->safe_psql('postgres', "$force $settings $q"),
		$node->safe_psql('postgres', "SET eytzgpu.enable_join = off; $q"));
}

# each query through the join (with settings) and PostgreSQL's answer to it
sub same_as_postgres
{
	my ($label, $settings, @queries) = @_;
	for my $q (@queries)
	{
		is( $node->safe_psql('postgres', "$force $settings $q"),
			$node->safe_psql('postgres', "SET eytzgpu.enable_join = off; $q"),
			"$label: $q");
	}
}

sub explain_join
{
	my ($t) = @_;
	return $node->safe_psql('postgres',
		"$force EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
		  . "SELECT count(*) FROM o JOIN $t ON $t.k = o.k");
}

is( $node->safe_psql('postgres',
		'SELECT string_agg(gpu || kind || state || copies, \',\' ORDER BY gpu) FROM eytzgpu_service_gpus()'),
	'0cpuok0,1cpuok0,2cpuok0',
	'three devices, empty');

for my $t (qw(t1 t2 t3))
{
	like(explain_join($t), qr/Device: cpu \d \(service\)/, "$t: the join asks the service (EXPLAIN names the device)");
	my ($got, $want) = answer($t, '');
	is($got, $want, "$t: its answer is PostgreSQL's");
}
is( $node->safe_psql('postgres',
		'SELECT count(DISTINCT gpu) || \' \' || count(*) FROM eytzgpu_service_resident()'),
	'3 3',
	'three copies, one on each device (the one with the most room first)');
is( $node->safe_psql('postgres',
		'SELECT string_agg(copies::text, \',\' ORDER BY gpu) FROM eytzgpu_service_gpus()'),
	'1,1,1', 'eytzgpu_service_gpus shows a copy on each');

# a fourth: a device evicts its least recently used copy (t1's)
my ($got, $want) = answer('t4', '');
is($got, $want, "t4: its answer is PostgreSQL's");
is( $node->safe_psql('postgres',
		'SELECT string_agg(index_name, \',\' ORDER BY index_name) FROM eytzgpu_service_resident()'),
	't2_k,t3_k,t4_k', 'the least recently used copy was evicted');
is($node->safe_psql('postgres', 'SELECT evictions FROM eytzgpu_service_status()'),
	'1', 'one eviction');

# larger than any device's limit: key-range slices on several devices, each
# its own layout; a point goes to the slice its key falls in (both where
# equal keys straddle a boundary), a range to every slice it meets, the
# answers merged (small windows: many requests, answers cut short)
my $plan = explain_join('big');
like($plan, qr/Device: cpu \(service, in slices\)/, 'an index larger than any device is answered by the service, in slices');
like( $node->safe_psql('postgres',
		"SELECT count(*) || ' ' || count(DISTINCT gpu) || ' ' || "
		  . "(sum(entries) = (SELECT entries FROM eytzgpu_info('big_k'))) "
		  . "FROM eytzgpu_service_resident() WHERE index_name = 'big_k'"),
	qr/^([23]) \1 true$/, 'big: in slices on as many devices, every entry in one');
($got, $want) = answer('big', '');
is($got, $want, "big: its answer is PostgreSQL's");
($got, $want) = answer('big', 'SET eytzgpu.batch_size = 7;');
is($got, $want, "big, batch_size = 7: its answer is PostgreSQL's");
same_as_postgres(
	'big', '',
	'SELECT count(*), sum((o.id * 1000003) # big.id) FROM o JOIN big ON big.k BETWEEN o.k::int8 - 30 AND o.k::int8 + 30',
	'SELECT count(*), sum(o.id * 3 + coalesce(big.id, 5)) FROM o LEFT JOIN big ON big.k = o.k',
	'SELECT count(*), sum(o.id) FROM o WHERE NOT EXISTS (SELECT 1 FROM big WHERE big.k = o.k)',
	'SELECT count(*), sum(o.id) FROM o WHERE EXISTS (SELECT 1 FROM big WHERE big.k BETWEEN o.k AND o.k::int8 + 2)');
# included values staged by each slice (index-only), a tombstone in a slice
$node->safe_psql('postgres',
	'DELETE FROM big2 WHERE v % 97 = 0; VACUUM big2; INSERT INTO big2 (k, v) VALUES (5, NULL)');
$plan = explain_join('big2');
like($plan, qr/Device: cpu \(service, in slices\)/, 'big2 (INCLUDE) is answered by the service, in slices');
($got, $want) = answer('big2', '');
is($got, $want, "big2: its answer is PostgreSQL's, the included values the slices'");
($got, $want) = answer('big2', 'SET eytzgpu.batch_size = 30;');
is($got, $want, "big2, batch_size = 30: its answer is PostgreSQL's");
is( $node->safe_psql('postgres',
		"SELECT count(*) > 1 FROM eytzgpu_service_resident() WHERE index_name = 'big2_k'"),
	't', 'big2: in slices');

# larger than the devices together: the CPU, and EXPLAIN says why
$plan = explain_join('huge');
like($plan, qr/Device: cpu(?! \d| \(service)/, 'an index larger than the devices together runs on the CPU');
like($plan, qr/CPU Reason: .*gpu_memory_limit leaves on all its devices/,
	'EXPLAIN says the devices have no room');
($got, $want) = answer('huge', '');
is($got, $want, "huge: its answer is PostgreSQL's");

# a request per outer row, and the included column's values from the service
($got, $want) = answer('t2', 'SET eytzgpu.batch_size = 1;');
is($got, $want, 'batch_size = 1: the answer is PostgreSQL\'s');
($got, $want) = answer('t3', 'SET eytzgpu.batch_size = 7;');
is($got, $want, 'batch_size = 7: the answer is PostgreSQL\'s');

# 8 sessions at once over the four indexes (two devices' copies evicted and
# loaded again as they take turns): each transaction checks its own answer
my $dir = PostgreSQL::Test::Utils::tempdir;
my $i = 0;
for my $t (qw(t1 t2 t3 t4))
{
	my ($n, $h) = split /\|/, $node->safe_psql('postgres',
		"SET eytzgpu.enable_join = off; SELECT count(*), sum((o.id * 1000003) # $t.id + coalesce($t.v, 7)) "
		  . "FROM o JOIN $t ON $t.k = o.k");
	open(my $fh, '>', "$dir/join$i.sql") or die;
	print $fh "$force\nSET eytzgpu.batch_size = " . (1 + 997 * $i) . ";\n";
	print $fh "SELECT (count(*) <> $n OR sum((o.id * 1000003) # $t.id + coalesce($t.v, 7)) <> $h)::int AS bad "
	  . "FROM o JOIN $t ON $t.k = o.k \\gset\n";
	print $fh "\\if :bad\nSELECT 1 / 0 AS wrong_answer;\n\\endif\n";
	close $fh;
	$i++;
}
my ($out, $err) = ('', '');
my $hits_before = $node->safe_psql('postgres', 'SELECT hits FROM eytzgpu_service_status()');
my $bench = IPC::Run::start(
	[
		'pgbench', '-n', '-h', $node->host, '-p', $node->port,
		'-c', 8, '-j', 2, '-t', 6,
		(map { ('-f', "$dir/join$_.sql") } 0 .. 3), 'postgres'
	],
	'>', \$out, '2>', \$err);
ok($bench->finish, '8 concurrent sessions: no query failed, no wrong answer')
  or diag("pgbench: $out\n$err");
like($out, qr/number of transactions actually processed: 48\/48/, 'every transaction ran');
cmp_ok($node->safe_psql('postgres', 'SELECT hits FROM eytzgpu_service_status()'),
	'>', $hits_before, 'the service answered them');
is($node->safe_psql('postgres', 'SELECT slots_in_use FROM eytzgpu_service_status()'),
	'0', 'no slot held afterwards');
is( $node->safe_psql('postgres',
		'SELECT bool_and(bytes <= 3 * 1024 * 1024) AND bool_and(state = \'ok\') FROM eytzgpu_service_gpus()'),
	't', 'every device within its limit');
is( $node->safe_psql('postgres',
		'SELECT count(*) FROM eytzgpu_service_resident() r JOIN eytzgpu_service_gpus() g USING (gpu)'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM eytzgpu_service_resident()'),
	'each copy lies on a device the service has');

# a partitioned inner table whose leaves' copies lie on different devices
# (a fresh service: the first copy goes to device 0, the next ones to the
# device with the most room): every leaf's share of a batch is posted before
# the first leaf's answer is taken, and EXPLAIN VERBOSE names each leaf's
# device
$node->restart;
$node->safe_psql(
	'postgres', q{
	CREATE TABLE p (id int8, k int4, v int4) PARTITION BY HASH (k);
	CREATE TABLE p0 PARTITION OF p FOR VALUES WITH (MODULUS 3, REMAINDER 0);
	CREATE TABLE p1 PARTITION OF p FOR VALUES WITH (MODULUS 3, REMAINDER 1);
	CREATE TABLE p2 PARTITION OF p FOR VALUES WITH (MODULUS 3, REMAINDER 2);
	INSERT INTO p SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE (random() * 100000)::int4 END, g
		FROM generate_series(1, 60000) g;
	CREATE INDEX p_k ON p USING eytzgpu (k);
	ANALYZE p;
});
$plan = $node->safe_psql('postgres',
	"$force SET eytzgpu.batch_size = 1000; EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
	  . "SELECT count(*) FROM o JOIN p ON p.k = o.k");
my %leaf_devices = map { $_ => 1 } ($plan =~ /Leaf p\d: .*Device: cpu (\d) \(service\)/g);
is(scalar(keys %leaf_devices), 3, 'the three leaves on three devices, each named by EXPLAIN VERBOSE')
  or diag($plan);
like($plan, qr/Lookup Overlap: (?:[4-9]|\d\d+) batches/, 'leaves looked up ahead');
same_as_postgres(
	'leaves on three devices', 'SET eytzgpu.batch_size = 1000;',
	'SELECT count(*), sum((o.id * 1000003) # p.id + p.v) FROM o JOIN p ON p.k = o.k',
	'SELECT count(*), sum(o.id + coalesce(p.v, 1)) FROM o LEFT JOIN p ON p.k = o.k',
	'SELECT count(*), sum(o.id) FROM o WHERE NOT EXISTS (SELECT 1 FROM p WHERE p.k = o.k)',
	'SELECT count(*), sum(p.v) FROM o JOIN p ON p.k BETWEEN o.k AND o.k::int8 + 5');

$node->stop;
done_testing();
