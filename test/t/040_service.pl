# t/040_service.pl: the eytzgpu service (issue 11) with
# shared_preload_libraries = 'eytzgpu'.  By default it answers from its CPU
# images (eytzgpu.service_device = cpu), so that the shared slots, the
# latches, generations, eviction and restarts are tested without a GPU;
# EYTZ_SERVICE_DEVICE=gpu runs the same on a GPU machine.
#
# Every join is compared with PostgreSQL's own answer (the hash join) on
# random data with duplicates, NULLs, extremes, misses and pending entries:
# alone, from 8 concurrent sessions while another merges new generations,
# while the service is terminated twice (no failed query, no wrong row, a
# new service within seconds), and after a kill -9 of it (crash recovery).
# Also: the status functions and who may call them, LRU eviction under a
# small eytzgpu.gpu_memory_limit, cancelled joins leave no slot held, and
# without a GPU at 'auto' or without preloading the backends answer
# themselves.
use strict;
use warnings;
use IPC::Run;
use Time::HiRes qw(time usleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# one GPU: the eviction checks below fill one device's eytzgpu.gpu_memory_limit
# (t/042 places copies over several devices)
$ENV{CUDA_VISIBLE_DEVICES} = (split /,/, ($ENV{CUDA_VISIBLE_DEVICES} // '0'))[0];

my $device = $ENV{EYTZ_SERVICE_DEVICE} // 'cpu';
my $node = PostgreSQL::Test::Cluster->new('service');
$node->init;
# small windows: a batch takes several requests, an upload several pieces
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'eytzgpu'
eytzgpu.service_device = '$device'
eytzgpu.service_slot_buffer = '256kB'
eytzgpu.service_slots = 24
max_connections = 40
restart_after_crash = on
});
$node->start;

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.4);
	-- inner: duplicates, NULLs and the extremes of int4
	CREATE TABLE t (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO t (k) SELECT CASE WHEN random() < 0.02 THEN NULL
		ELSE (random() * 150000)::int4 END FROM generate_series(1, 200000);
	INSERT INTO t (k) VALUES (2147483647), (-2147483648), (0), (0);
	CREATE INDEX t_k ON t USING eytzgpu (k);
	-- pending entries that match too
	INSERT INTO t (k) SELECT (random() * 150000)::int4 FROM generate_series(1, 3000);
	-- outer: repeats, misses (keys above 150000), NULLs, the extremes
	CREATE TABLE o (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO o (k) SELECT CASE WHEN random() < 0.03 THEN NULL
		ELSE (random() * 180000)::int4 END FROM generate_series(1, 30000);
	INSERT INTO o (k) VALUES (2147483647), (-2147483648), (0);
	-- a second index (int8 keys) for eviction
	CREATE TABLE t8 (id int8 GENERATED ALWAYS AS IDENTITY, k int8);
	INSERT INTO t8 (k) SELECT (random() * 1e12)::int8 FROM generate_series(1, 200000);
	INSERT INTO t8 (k) SELECT k FROM o WHERE k IS NOT NULL LIMIT 5000;
	CREATE INDEX t8_k ON t8 USING eytzgpu (k);
	ANALYZE t, o, t8;
	SET eytzgpu.enable_join = off;
	CREATE TABLE expected AS SELECT o.id AS oid, t.id AS tid FROM o JOIN t ON t.k = o.k;
	CREATE TABLE expected8 AS SELECT o.id AS oid, t8.id AS tid FROM o JOIN t8 ON t8.k = o.k;
});

my $force = 'SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;';
# rows of the eytzgpu join that PostgreSQL's answer lacks, and the reverse
my $diff = q{SELECT count(*) FROM (
	(SELECT o.id, t.id FROM o JOIN t ON t.k = o.k EXCEPT ALL SELECT * FROM expected)
	UNION ALL
	(SELECT * FROM expected EXCEPT ALL SELECT o.id, t.id FROM o JOIN t ON t.k = o.k)) d};
my $diff8 = $diff =~ s/\bt\b/t8/gr =~ s/expected/expected8/gr;
my $service_device = $device eq 'gpu' ? 'gpu \(service\)' : 'cpu \(service\)';

sub status
{
	my ($cols) = @_;
	return $node->safe_psql('postgres', "SELECT $cols FROM eytzgpu_service_status()");
}

sub explain_join
{
	my ($table) = @_;
	return $node->safe_psql('postgres',
		"$force EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
		  . "SELECT count(*) FROM o JOIN $table ON $table.k = o.k");
}

is(status('state, device'), "running|$device", 'the service runs');
ok($node->safe_psql('postgres', 'SELECT count(*) > 1000 FROM expected'), 'the join has rows');
like(explain_join('t'), qr/Device: $service_device/, 'the join asks the service');
is($node->safe_psql('postgres', "$force $diff"), '0', 'its answer is PostgreSQL\'s');
is($node->safe_psql('postgres', "$force $diff8"), '0', 'also over an int8 index');

# range batches (lo and hi sent) as well as the point batches above (no hi:
# the service reads the batch's shape from lo and rows alone)
my $range = q{SELECT o.id, t.id FROM o JOIN t ON t.k BETWEEN o.k AND o.k + 3
	WHERE o.k < 2000000000 AND o.id % 10 = 0};
$node->safe_psql(
	'postgres', q{
	SET eytzgpu.enable_join = off;
	CREATE TABLE expected_range AS SELECT o.id AS oid, t.id AS tid
	FROM o, generate_series(0, 3) d, t
	WHERE t.k = o.k + d AND o.k < 2000000000 AND o.id % 10 = 0;
});
like(
	$node->safe_psql('postgres',
		"$force EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $range"),
	qr/Device: $service_device/,
	'a range join asks the service');
is( $node->safe_psql(
		'postgres', "$force SELECT count(*) FROM (($range EXCEPT ALL "
		  . "SELECT * FROM expected_range) UNION ALL (SELECT * FROM expected_range "
		  . "EXCEPT ALL $range)) d"),
	'0',
	'its answer is PostgreSQL\'s');
like(
	$node->safe_psql(
		'postgres',
		"SELECT index_name || ' ' || (generation > 0) || ' ' || (bytes > 0) || ' ' || (hits > 0) "
		  . "FROM eytzgpu_service_resident() ORDER BY index_name"),
	qr/^t8?_k true true true\nt8?_k true true true$/,
	'both indexes are resident, with bytes and hits');
is(status('slots_in_use'), '0', 'no slot held between queries');

# the pipeline (eytzgpu.lookup_overlap, where work_mem holds two batches):
# each batch's first request is posted, the next batch read, then the
# answer taken
my $pipe = "$force SET work_mem = '64MB'; SET eytzgpu.batch_size = 3000;";
like(
	$node->safe_psql('postgres',
		"$pipe EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
		  . "SELECT count(*) FROM o JOIN t ON t.k = o.k"),
	qr/Device: $service_device.*Lookup Overlap: (?:[2-9]|\d\d+) batches/s,
	'the join reads its next batch while the service answers');
is($node->safe_psql('postgres', "$pipe $diff"), '0', 'its answer is PostgreSQL\'s');
is( $node->safe_psql(
		'postgres', "$pipe SELECT count(*) FROM (($range EXCEPT ALL "
		  . "SELECT * FROM expected_range) UNION ALL (SELECT * FROM expected_range "
		  . "EXCEPT ALL $range)) d"),
	'0',
	'also for ranges');
is(status('slots_in_use'), '0', 'no slot held after pipelined joins');

# index-only joins through the service: its answers carry the included
# values (int8, float8 with NULLs and extremes, bool, date), so that
# all-visible heap pages are not read; pending entries, and entries whose
# copy misses tombstones a VACUUM made since, read the heap
$node->safe_psql(
	'postgres', q{
	CREATE TABLE ti (id int8, k int4, f float8, b bool, d date);
	INSERT INTO ti SELECT g, CASE WHEN random() < 0.02 THEN NULL ELSE (random() * 50000)::int4 END,
		CASE WHEN random() < 0.1 THEN NULL ELSE random() * 1e6 END, random() < 0.5,
		date '2000-01-01' + (random() * 10000)::int4 FROM generate_series(1, 100000) g;
	INSERT INTO ti VALUES (100001, 2147483647, 'Infinity', NULL, NULL),
		(100002, -2147483648, '-0', true, 'infinity'), (100003, 0, 'NaN', false, '-infinity');
	CREATE INDEX ti_k ON ti USING eytzgpu (k) INCLUDE (id, f, b, d);
	VACUUM ANALYZE ti;
});
my $qi = 'SELECT o.id AS oid, ti.id, ti.f, ti.b, ti.d FROM o JOIN ti ON ti.k = o.k';
my $diffi = "SELECT count(*) FROM (($qi EXCEPT ALL SELECT * FROM expected_i)
	UNION ALL (SELECT * FROM expected_i EXCEPT ALL $qi)) d";
sub expect_i
{
	$node->safe_psql('postgres',
		"DROP TABLE IF EXISTS expected_i; SET eytzgpu.enable_join = off; CREATE TABLE expected_i AS $qi");
}
expect_i();
my $plan = $node->safe_psql('postgres',
	"$force EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $qi");
like($plan, qr/Index Only: true/, 'index-only join over the covering index');
like($plan, qr/Device: $service_device/, 'asking the service');
like($plan, qr/Heap Fetches: 0\n/, 'no heap fetch: the values came from the service');
is($node->safe_psql('postgres', "$force $diffi"), '0', 'its answer is PostgreSQL\'s');
# the parallel join: the leader and each worker through the service (no
# image of their own), plain and index-only, against PostgreSQL's answer
my $par = 'SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; '
  . 'SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; ';
$plan = $node->safe_psql('postgres',
	"$force $par EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $qi");
# (one worker where the machine has two cores: the join plans a process per core)
like($plan, qr/Workers Launched: [12].*Parallel Custom Scan \(EytzGPU Join\)/s, 'a parallel join');
my ($launched) = $plan =~ /Workers Launched: (\d+)/;
$launched //= 0;
is(scalar(() = $plan =~ /Device: $service_device/g), $launched + 1, 'the leader and each worker ask the service');
cmp_ok(scalar(() = $plan =~ /Heap Fetches: 0\n/g), '>=', $launched + 1, 'none reads the heap');
unlike($plan, qr/Heap Fetches: [1-9]/, 'none at all');
is($node->safe_psql('postgres', "$force $par $diffi"), '0', 'the parallel index-only join is right');
is($node->safe_psql('postgres', "$force $par $diff"), '0', 'and the plain one');
is(status('slots_in_use'), '0', 'the workers freed their slots');
# pending entries (their values come from the heap), then tombstones
$node->safe_psql('postgres',
	"INSERT INTO ti SELECT 200000 + g, (random() * 50000)::int4, random(), true, 'today' FROM generate_series(1, 3000) g; VACUUM ti"
);
expect_i();
is($node->safe_psql('postgres', "$force $diffi"), '0', 'right with pending entries');
$node->safe_psql('postgres', "DELETE FROM ti WHERE id % 7 = 0; VACUUM ti");
expect_i();
is($node->safe_psql('postgres', "$force $diffi"), '0', 'right after a VACUUM removed entries');

# privileges: pg_monitor or superuser
$node->safe_psql('postgres',
	'CREATE ROLE nobody LOGIN; CREATE ROLE monitor LOGIN IN ROLE pg_monitor');
my ($ret, $out, $err) = $node->psql('postgres',
	'SET ROLE nobody; SELECT * FROM eytzgpu_service_status()');
like($err, qr/permission denied for function eytzgpu_service_status/, 'not for anybody');
($ret, $out, $err) = $node->psql('postgres',
	'SET ROLE nobody; SELECT * FROM eytzgpu_service_resident()');
like($err, qr/permission denied for function eytzgpu_service_resident/, 'neither the copies');
is($node->safe_psql('postgres', 'SET ROLE monitor; SELECT state FROM eytzgpu_service_status()'),
	'running', 'pg_monitor may look');

# 8 sessions compare the join with PostgreSQL's answer; one more inserts
# entries that match nothing and merges them, so that the sessions move
# from generation to generation
my $dir = PostgreSQL::Test::Utils::tempdir;
my $bad_if = "\\if :bad > 0\nSELECT 1 / 0 AS wrong_rows;\n\\endif\n";
my $bad = $diff =~ s/^SELECT count\(\*\)/SELECT count(*) AS bad/r;
my $bad8 = $diff8 =~ s/^SELECT count\(\*\)/SELECT count(*) AS bad/r;
open(my $fh, '>', "$dir/join.sql") or die;
print $fh "$force\n$bad \\gset\n$bad_if$bad8 \\gset\n$bad_if";
close $fh;
open($fh, '>', "$dir/merge.sql") or die;
print $fh "INSERT INTO t (k) SELECT 10000000 + g FROM generate_series(1, 200) g;\n";
print $fh "SELECT eytzgpu_merge('t_k');\n";
close $fh;

sub pgbench_start
{
	my ($clients, $transactions, $out, $err) = @_;
	return IPC::Run::start(
		[
			'pgbench', '-n', '-h', $node->host, '-p', $node->port,
			'-c', $clients, '-j', 2, '-t', $transactions,
			'-f', "$dir/join.sql\@4", '-f', "$dir/merge.sql\@1", 'postgres'
		],
		'>', $out, '2>', $err);
}

my ($bench_out, $bench_err) = ('', '');
my $gen_before = $node->safe_psql('postgres', "SELECT generation FROM eytzgpu_info('t_k')");
my $h = pgbench_start(9, 6, \$bench_out, \$bench_err);
ok($h->finish, 'concurrent sessions: no query failed, no wrong row')
  or diag("pgbench: $bench_out\n$bench_err");
like($bench_out, qr/number of transactions actually processed: 54\/54/, 'every transaction ran');
cmp_ok($node->safe_psql('postgres', "SELECT generation FROM eytzgpu_info('t_k')"),
	'>', $gen_before, 'merges made new generations meanwhile');
is($node->safe_psql('postgres', "$force $diff"), '0', 'the newest generation answers right');
is(status('slots_in_use'), '0', 'no slot held after the sessions');
cmp_ok(status('hits'), '>', 50, 'the service answered them');

# LRU eviction: a limit that holds one of the two indexes only, from the
# sizes of their copies (whole MB, the setting's unit)
$node->safe_psql('postgres', "$force SELECT count(*) FROM o JOIN t ON t.k = o.k");
$node->safe_psql('postgres', "$force $diff8");
my ($big, $sum) = split /\|/, $node->safe_psql('postgres',
	"SELECT max(bytes), sum(bytes) FROM eytzgpu_service_resident() WHERE index_name IN ('t_k', 't8_k')");
# A GPU upload needs more than the copy keeps (the build's scratch): the
# smallest whole-MB limit under which each copy loads alone (on the CPU
# the first)
my $limit_mb = int(($big + 1048575) / 1048576);
for (;; $limit_mb++)
{
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET eytzgpu.gpu_memory_limit = '${limit_mb}MB'; SELECT pg_reload_conf()");
	usleep(500_000);
	my $both = 1;
	for my $table ('t8', 't')
	{
		$node->safe_psql('postgres', "$force SELECT count(*) FROM o JOIN $table ON $table.k = o.k");
		$both &&= $node->safe_psql('postgres',
			"SELECT count(*) FROM eytzgpu_service_resident() WHERE index_name = '${table}_k'") eq '1';
	}
	last if $both || $limit_mb * 1048576 >= $sum;
}
cmp_ok($sum, '>', $limit_mb * 1048576, "one copy fits ${limit_mb}MB, not both");
$node->safe_psql('postgres', "$force SELECT count(*) FROM o JOIN t ON t.k = o.k");
my $ev0 = status('evictions');
is($node->safe_psql('postgres', "$force $diff8"), '0', 't8 joins right under the limit');
cmp_ok(status('evictions'), '>', $ev0, 'and evicted t_k');
is($node->safe_psql('postgres', 'SELECT string_agg(index_name, \',\') FROM eytzgpu_service_resident()'),
	't8_k', 'only t8_k is resident');
my $ev1 = status('evictions');
is($node->safe_psql('postgres', "$force $diff"), '0', 't joins right again');
cmp_ok(status('evictions'), '>', $ev1, 'evicting t8_k');
is($node->safe_psql('postgres', 'SELECT string_agg(index_name, \',\') FROM eytzgpu_service_resident()'),
	't_k', 'the least recently used went');
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET eytzgpu.gpu_memory_limit; SELECT pg_reload_conf()");
usleep(500_000);

# cancelled joins (statement_timeout, some during the upload of a new
# generation, most while waiting for an answer) leave no slot held
my $script = "$force\n";
for my $i (1 .. 40)
{
	my $ms = 1 + ($i * 7) % 30;
	# the second half with the pipeline: cancelled with a request posted
	$script .= "SET work_mem = '64MB'; SET eytzgpu.batch_size = 3000;\n" if $i == 21;
	$script .= "INSERT INTO t (k) VALUES (20000000); SELECT eytzgpu_merge('t_k');\n" if $i % 8 == 0;
	$script .= "SET statement_timeout = '${ms}ms';\n"
	  . "SELECT count(*) FROM o JOIN t ON t.k = o.k JOIN t8 ON t8.k = o.k;\n"
	  . "RESET statement_timeout;\n";
}
$script .= q{
	DO $$ BEGIN
	FOR i IN 1 .. 100 LOOP
		EXIT WHEN (SELECT slots_in_use FROM eytzgpu_service_status()) = 0;
		PERFORM pg_sleep(0.05);
	END LOOP; END $$;
	SELECT 'slots in use ' || slots_in_use FROM eytzgpu_service_status();
};
my ($stdout, $stderr);
$node->psql('postgres', $script, stdout => \$stdout, stderr => \$stderr, on_error_stop => 0);
my $cancelled = () = $stderr =~ /canceling statement due to statement timeout/g;
ok($cancelled >= 5, "joins were cancelled ($cancelled of 40)");
like($stdout, qr/^slots in use 0$/m, 'no slot is held after the cancels, the session still open');
is($node->safe_psql('postgres', "$force $diff"), '0', 'the join is right after the cancels');

# the service terminated twice while 8 sessions join: the running batches
# finish on the CPU, nothing fails, a new service is back within seconds
my $pid = status('pid');
($bench_out, $bench_err) = ('', '');
$h = pgbench_start(8, 8, \$bench_out, \$bench_err);
usleep(700_000);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
my $t0 = time;
$node->poll_query_until('postgres',
	"SELECT state = 'running' AND pid <> $pid FROM eytzgpu_service_status()")
  or die 'the service did not come back';
my $back = time - $t0;
cmp_ok($back, '<', 10, sprintf('a new service within seconds (%.1f s)', $back));
usleep(300_000);
$pid = status('pid');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($h->finish, 'terminated services: no query failed, no wrong row')
  or diag("pgbench: $bench_out\n$bench_err");
like($bench_out, qr/number of transactions actually processed: 64\/64/, 'every transaction ran');
$node->poll_query_until('postgres',
	"SELECT state = 'running' AND pid <> $pid FROM eytzgpu_service_status()")
  or die 'the service did not come back';
like(explain_join('t'), qr/Device: $service_device/, 'the new service answers');
is($node->safe_psql('postgres', "$force $diff"), '0', 'and answers right');

# DROP DATABASE waits until every process has absorbed its procsignal
# barrier: the service too, also when it holds a copy of that database's
# index (it never absorbed one, and DROP DATABASE waited forever)
$node->safe_psql('postgres', 'CREATE DATABASE dropme');
$node->safe_psql(
	'dropme', q{
	CREATE EXTENSION eytzgpu;
	CREATE TABLE t AS SELECT g % 150000 AS k FROM generate_series(1, 200000) g;
	CREATE INDEX t_k ON t USING eytzgpu (k);
	CREATE TABLE o AS SELECT g * 5 AS k FROM generate_series(1, 30000) g;
	ANALYZE t, o;
});
like(
	$node->safe_psql('dropme',
		"$force EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
		  . "SELECT count(*) FROM o JOIN t ON t.k = o.k"),
	qr/Device: $service_device/,
	'a join in another database asks the service');
my ($drop_ret, $drop_out, $drop_err) =
  $node->psql('postgres', 'DROP DATABASE dropme', timeout => 60);
is($drop_ret, 0, 'DROP DATABASE does not wait for the service')
  or diag($drop_err);
is(status('state'), 'running', 'the service runs on');

# kill -9: the postmaster's crash recovery, then everything works
# (poll_query_until dies of EPIPE writing its query to a psql that exited at
# once because the postmaster was restarting: poll again until one returns)
sub poll_through_restart
{
	my ($query) = @_;
	for my $try (1 .. 100)
	{
		my $polled = eval { $node->poll_query_until('postgres', $query) };
		return $polled if defined $polled;
		note "polling through the restart: $@";
		usleep(100_000);
	}
	return 0;
}
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM t');
$pid = status('pid');
kill 'KILL', $pid;
poll_through_restart("SELECT state = 'running' AND pid <> $pid FROM eytzgpu_service_status()")
  or die 'no service after the crash';
ok(1, 'a service after crash recovery');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows, 'no row lost');
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('t_k', true)"), 't', 'the index verifies');
like(explain_join('t'), qr/Device: $service_device/, 'the join asks the service again');
is($node->safe_psql('postgres', "$force $diff"), '0', 'and is right');
is($node->safe_psql('postgres', "$force $diff8"), '0', 'also over t8');
$node->stop;

# at 'auto' on a machine without a GPU the service sleeps and the backends
# answer themselves, as without preloading
$node->append_conf('postgresql.conf', "eytzgpu.service_device = 'auto'");
$node->start;
# the worker starts after the server does (and a GPU takes seconds to open)
$node->poll_query_until('postgres',
	"SELECT state <> 'stopped' FROM eytzgpu_service_status()")
  or die 'the service did not start';
my $state = status('state');
like($state, qr/^(sleeping|running)$/, "at auto: $state");
like(explain_join('t'),
	$state eq 'sleeping' ? qr/Device: cpu( \((?:pinned pages|shared image)\))?\n/ : qr/Device: gpu \(service\)/,
	'the join runs where the state says');
is($node->safe_psql('postgres', "$force $diff"), '0', 'and is right');
$node->stop;

$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->start;
is(status('state'), 'not loaded', 'not preloaded: no service');
unlike(explain_join('t'), qr/service/, 'the join runs in the backend');
is($node->safe_psql('postgres', "$force $diff"), '0', 'and is right');
$node->stop;
done_testing();
