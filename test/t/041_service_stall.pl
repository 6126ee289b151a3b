# t/041_service_stall.pl: an eytzgpu service that stops answering (issue
# 30).  SIGSTOP on the service process stands in for a hung GPU call or a
# service stuck on a lock: the process is there, its requests get no
# answer.  A join waiting on it must not wait for statement_timeout (or
# forever): after eytzgpu.service_timeout without progress it continues on
# the CPU with a WARNING and PostgreSQL's answer, eytzgpu_service_status()
# says "not answering", later joins run on the CPU without waiting, and once
# the process runs again (SIGCONT) it answers again, its late answer read
# by nobody and no slot left held.  Stopped mid-join (a batch's request
# taken or waiting) and stopped idle (the first request of a join whose
# index is resident).
use strict;
use warnings;
use IPC::Run;
use Time::HiRes qw(usleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $device = $ENV{EYTZ_SERVICE_DEVICE} // 'cpu';
my $node = PostgreSQL::Test::Cluster->new('stall');
$node->init;
# small windows: a batch takes several requests
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'eytzgpu'
eytzgpu.service_device = '$device'
eytzgpu.service_slot_buffer = '64kB'
eytzgpu.service_timeout = '2s'
autovacuum = off
});
$node->start;

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.7);
	-- inner: duplicates, NULLs and the extremes of int4
	CREATE TABLE t (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO t (k) SELECT CASE WHEN random() < 0.02 THEN NULL
		ELSE (random() * 100000)::int4 END FROM generate_series(1, 150000);
	INSERT INTO t (k) VALUES (2147483647), (-2147483648), (0), (0);
	CREATE INDEX t_k ON t USING eytzgpu (k);
	-- outer: repeats, misses, NULLs, the extremes
	CREATE TABLE o (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO o (k) SELECT CASE WHEN random() < 0.03 THEN NULL
		ELSE (random() * 120000)::int4 END FROM generate_series(1, 20000);
	INSERT INTO o (k) VALUES (2147483647), (-2147483648), (0);
	ANALYZE t, o;
	-- an outer side that pauses every 500 rows: the join spans seconds
	CREATE FUNCTION slow_key(k int4, id int8) RETURNS int4 LANGUAGE plpgsql VOLATILE AS $$
	BEGIN
		IF id % 500 = 0 THEN PERFORM pg_sleep(0.1); END IF;
		RETURN k;
	END $$;
	SET eytzgpu.enable_join = off;
	CREATE TABLE expected AS SELECT o.id AS oid, t.id AS tid FROM o JOIN t ON t.k = o.k;
});

my $force = 'SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;';
my $slow_join = 'SELECT o.id AS oid, t.id AS tid '
  . 'FROM (SELECT id, slow_key(k, id) AS k FROM o) o JOIN t ON t.k = o.k';
# rows of a join's answer (table got) that PostgreSQL's lacks, and the reverse
my $diff_got = q{SELECT count(*) FROM (
	(SELECT * FROM got EXCEPT ALL SELECT * FROM expected)
	UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM got)) d};
my $diff = q{SELECT count(*) FROM (
	(SELECT o.id, t.id FROM o JOIN t ON t.k = o.k EXCEPT ALL SELECT * FROM expected)
	UNION ALL
	(SELECT * FROM expected EXCEPT ALL SELECT o.id, t.id FROM o JOIN t ON t.k = o.k)) d};
my $service_device = $device eq 'gpu' ? 'gpu \(service\)' : 'cpu \(service\)';

sub status
{
	my ($cols) = @_;
	return $node->safe_psql('postgres', "SELECT $cols FROM eytzgpu_service_status()");
}

sub explain_join
{
	my $sql = "$force EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
	  . "SELECT count(*) FROM o JOIN t ON t.k = o.k";
	my ($stdout, $stderr);
	$node->psql(
		'postgres', "SET statement_timeout = '60s'; $sql",
		stdout => \$stdout,
		stderr => \$stderr);
	return ($stdout, $stderr);
}

my $pid = status('pid');
# a failed test must not leave the service stopped (the cluster could not stop)
my $stopped = 0;
END { kill 'CONT', $pid if $stopped; }

like(
	$node->safe_psql('postgres',
		"$force EXPLAIN (COSTS OFF) CREATE TABLE got AS $slow_join"),
	qr/EytzGPU Join/,
	'the slow join is an EytzGPU Join');
my ($plan) = explain_join();
like($plan, qr/Device: $service_device/, 'joins ask the service');
is($node->safe_psql('postgres', "$force $diff"), '0', 'and get PostgreSQL\'s answer');

# --- stopped mid-join ---
my $hits0 = status('hits');
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		'-c', "$force SET eytzgpu.batch_size = 1000; SET statement_timeout = '60s'; "
		  . "CREATE TABLE got AS $slow_join"
	],
	'>', \$out, '2>', \$err);
# a few batches answered, then the service stops
$node->poll_query_until('postgres',
	"SELECT hits >= $hits0 + 3 FROM eytzgpu_service_status()")
  or die 'the slow join asked the service nothing';
kill 'STOP', $pid;
$stopped = 1;
my $finished = $h->finish;
ok($finished, 'the join finished with the service stopped') or diag("psql: $err");
like(
	$err,
	qr/WARNING:  eytzgpu join on index "t_k" continues on the CPU: the eytzgpu service is not answering/,
	'with a WARNING');
is($node->safe_psql('postgres', $diff_got), '0', 'its answer is PostgreSQL\'s');
is(status('state'), 'not answering', 'the status says the service is not answering');
is(status('pid'), $pid, 'of the same process');

# joins now run on the CPU without waiting for it
my $stderr;
($plan, $stderr) = explain_join();
like($plan, qr/Device: cpu( \((?:pinned pages|shared image)\))?\n/, 'a new join runs on the CPU');
like($plan, qr/CPU Reason: the eytzgpu service is not answering/, 'EXPLAIN says why');
is($stderr, '', 'no WARNING: it did not wait');
is($node->safe_psql('postgres', "$force SET statement_timeout = '60s'; $diff"),
	'0', 'its answer is PostgreSQL\'s');

# the service runs again: its late answer is dropped, its slot freed
kill 'CONT', $pid;
$stopped = 0;
$node->poll_query_until('postgres',
	"SELECT state = 'running' AND slots_in_use = 0 FROM eytzgpu_service_status()")
  or die 'the service did not answer again';
ok(1, 'running again, no slot held');
is(status('pid'), $pid, 'the same process');
($plan) = explain_join();
like($plan, qr/Device: $service_device/, 'joins ask the service again');
unlike($plan, qr/CPU Reason/, 'and it answers them');
is($node->safe_psql('postgres', "$force $diff"), '0', 'with PostgreSQL\'s answer');

# --- stopped idle: the first request of a join (the index is resident) ---
kill 'STOP', $pid;
$stopped = 1;
($plan, $stderr) = explain_join();
like(
	$stderr,
	qr/WARNING:  eytzgpu join on index "t_k" continues on the CPU: the eytzgpu service is not answering/,
	'stopped idle: the join continues on the CPU with a WARNING');
like($plan, qr/Device: cpu( \((?:pinned pages|shared image)\))?\n/, 'as EXPLAIN says');
is(status('state'), 'not answering', 'the status says so');
is($node->safe_psql('postgres', "$force SET statement_timeout = '60s'; $diff"),
	'0', 'joins meanwhile get PostgreSQL\'s answer');
kill 'CONT', $pid;
$stopped = 0;
$node->poll_query_until('postgres',
	"SELECT state = 'running' AND slots_in_use = 0 FROM eytzgpu_service_status()")
  or die 'the service did not answer again';
($plan) = explain_join();
like($plan, qr/Device: $service_device/, 'it answers again');
is($node->safe_psql('postgres', "$force $diff"), '0', 'right');
is(status('pid'), $pid, 'never restarted');

$node->stop;
done_testing();
