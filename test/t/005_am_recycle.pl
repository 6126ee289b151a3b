# t/005_am_recycle.pl: eytzgpu's retired generations and crash consistency.
#
# A scan held open (a cursor in a REPEATABLE READ transaction) across many
# merges still returns PostgreSQL's answer, since a merge never reuses pages
# a running transaction may read; once it ends the pages are recycled and
# the file shrinks.  The index stays small after deletes + VACUUM and after
# rounds of inserts + merges (sizes against REINDEX are printed).  A crash in
# the middle of VACUUM's index phase leaves an index that passes verify.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('recycle');
$node->init;
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION eytzgpu');

# ---- a cursor across merges
$node->safe_psql(
	'postgres', q{
	SELECT setseed(0.5);
	CREATE TABLE r (k int4, v int4);
	INSERT INTO r SELECT (random() * 1000)::int4, g FROM generate_series(1, 6000) g;
	CREATE INDEX r_idx ON r USING eytzgpu (k) WITH (layout = eks, fanout = 5, pending_limit = 16);
});
my $pages_before = $node->safe_psql('postgres', "SELECT pages FROM eytzgpu_info('r_idx')");

my $bg = $node->background_psql('postgres');
$bg->query_safe(
	q{BEGIN ISOLATION LEVEL REPEATABLE READ;
	  SET enable_seqscan = off; SET enable_bitmapscan = off;
	  DECLARE c CURSOR FOR SELECT v FROM r WHERE k BETWEEN 100 AND 700;});
my @got = split /\n/, $bg->query_safe('FETCH 50 FROM c');
is(scalar(@got), 50, 'the cursor started');

foreach my $round (1 .. 30)
{
	$node->safe_psql('postgres',
		"INSERT INTO r SELECT (random() * 1000)::int4, -g FROM generate_series(1, 40) g");
	$node->safe_psql('postgres', "SELECT eytzgpu_merge('r_idx')");
	$node->safe_psql('postgres', 'DELETE FROM r WHERE v % 50 = ' . ($round % 50))
	  if $round % 10 == 0;
	$node->safe_psql('postgres', 'VACUUM r') if $round % 10 == 0;
}
cmp_ok($node->safe_psql('postgres', "SELECT generation FROM eytzgpu_info('r_idx')"),
	'>', 30, 'merges ran while the cursor was open');

push @got, split /\n/, $bg->query_safe('FETCH ALL FROM c');
my $ref = $bg->query_safe(
	'SET enable_indexscan = off; SET enable_seqscan = on;
	 SELECT v FROM r WHERE k BETWEEN 100 AND 700 ORDER BY v');
is(join(',', sort { $a <=> $b } @got), join(',', split /\n/, $ref),
	"the cursor's rows are its snapshot's rows");
$bg->query_safe('COMMIT');
$bg->quit;

# the retired generations are readable no more: the next merges recycle them
$node->safe_psql('postgres', "SELECT eytzgpu_merge('r_idx')") foreach 1 .. 2;
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('r_idx', true)"),
	't', 'verify after the merges');
my $pages_held = $node->safe_psql('postgres', "SELECT pages FROM eytzgpu_info('r_idx')");
cmp_ok($pages_held, '<=', 4 * $pages_before,
	"file shrank after the cursor ended ($pages_before -> $pages_held pages)");
my $q = 'SELECT count(*), sum(v) FROM r WHERE k BETWEEN 100 AND 700';
is( $node->safe_psql('postgres', "SET enable_seqscan = off; $q"),
	$node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $q"),
	'the index agrees with a sequential scan');

# ---- privileges are checked before any lock: a caller without rights
# gets 42501 at once, even while another session holds the index
$node->safe_psql('postgres', 'CREATE ROLE regress_nobody LOGIN');
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; ALTER INDEX r_idx SET (pending_limit = 32)');
foreach my $call ("eytzgpu_merge('r_idx')", "eytzgpu_info('r_idx')",
	"eytzgpu_verify('r_idx', true)")
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET lock_timeout = '5s'; SET ROLE regress_nobody; SELECT $call");
	like($err, qr/permission denied|must be owner/,
		"$call without rights fails before waiting for a lock");
}
# verify takes the merge lock in share mode, as inserts do: it waits for
# the lock holder like any reader, but an insert never waits for a verify
$locker->query_safe('COMMIT');
$locker->query_safe(
	q{BEGIN; INSERT INTO r VALUES (1, 1);
	  SELECT eytzgpu_verify('r_idx', true);});
my ($ret, $out, $err) = $node->psql('postgres',
	"SET lock_timeout = '5s'; INSERT INTO r VALUES (2, 2); SELECT eytzgpu_verify('r_idx')");
is($out, 't', 'verify and inserts run beside an open transaction that verified and inserted');
$locker->query_safe('COMMIT');
$locker->quit;

# ---- sizes against REINDEX
sub pages
{
	my ($idx) = @_;
	return $node->safe_psql('postgres', "SELECT pages FROM eytzgpu_info('$idx')");
}

sub reindexed_pages
{
	$node->safe_psql('postgres',
		'CREATE INDEX s_fresh ON s USING eytzgpu (k) WITH (layout = eks)');
	my $p = pages('s_fresh');
	$node->safe_psql('postgres', 'DROP INDEX s_fresh');
	return $p;
}
$node->safe_psql(
	'postgres', q{
	CREATE TABLE s (k int4, v int4);
	INSERT INTO s SELECT (random() * 1e6)::int4, g FROM generate_series(1, 200000) g;
	CREATE INDEX s_idx ON s USING eytzgpu (k) WITH (layout = eks, pending_limit = 1000000);
});
$node->safe_psql('postgres', 'DELETE FROM s WHERE v % 10 = 0');
$node->safe_psql('postgres', 'VACUUM s');
my ($after, $fresh) = (pages('s_idx'), reindexed_pages());
my $ratio = sprintf('%.2f', $after / $fresh);
note "delete 10% + VACUUM: $after pages, REINDEX $fresh: ratio $ratio";
cmp_ok($ratio, '<=', 1.15, "delete 10% + VACUUM: <= 1.15x a REINDEX ($ratio)");
is($node->safe_psql('postgres', "SELECT dead > 0 FROM eytzgpu_info('s_idx')"),
	't', 'a few tombstones do not make VACUUM rewrite the layout');

foreach my $round (1 .. 20)
{
	$node->safe_psql('postgres',
		"INSERT INTO s SELECT (random() * 1e6)::int4, g FROM generate_series(1, 2000) g");
	$node->safe_psql('postgres', "SELECT eytzgpu_merge('s_idx')");
}
($after, $fresh) = (pages('s_idx'), reindexed_pages());
$ratio = sprintf('%.2f', $after / $fresh);
note "20 rounds of insert 1% + merge: $after pages, REINDEX $fresh: ratio $ratio";
cmp_ok($ratio, '<=', 1.3, "20 rounds of insert 1% + merge: <= 1.3x a REINDEX ($ratio)");
$node->safe_psql('postgres', 'VACUUM s');
($after, $fresh) = (pages('s_idx'), reindexed_pages());
$ratio = sprintf('%.2f', $after / $fresh);
note "then VACUUM: $after pages, REINDEX $fresh: ratio $ratio";
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('s_idx', true)"),
	't', 'verify after the rounds');

# ---- merges that each flush their own switch record (issue 12 item 2:
# flushing the insert position failed about once in 1,000 merges)
$node->safe_psql(
	'postgres', q{
	CREATE TABLE xm (k int4);
	INSERT INTO xm SELECT g FROM generate_series(1, 10) g;
	CREATE INDEX xm_k ON xm USING eytzgpu (k);
	CREATE TABLE pad (t text);
});
$node->safe_psql('postgres',
	join("\n",
		map { "INSERT INTO pad VALUES (repeat('x', (random() * 200)::int)); SELECT eytzgpu_merge('xm_k');" }
		  1 .. 1000));
cmp_ok($node->safe_psql('postgres', "SELECT generation FROM eytzgpu_info('xm_k')"),
	'>', 1000, '1,000 merges, each its own transaction');

# while another transaction has the index open, one transaction can keep at
# most 256 generations readable: the next explicit merge says so (automatic
# merges wait for a later insert)
my $reader = $node->background_psql('postgres');
$reader->query_safe(
	"BEGIN; SET enable_seqscan = off; SELECT count(*) FROM xm WHERE k = 1");
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nDO \$\$BEGIN FOR i IN 1 .. 300 LOOP PERFORM eytzgpu_merge('xm_k'); END LOOP; END\$\$");
like($err, qr/55000: cannot merge eytzgpu index "xm_k": 256 earlier generations are still readable/,
	'a transaction that merges too often is told why');
$reader->query_safe('COMMIT');
$reader->quit;
$node->safe_psql('postgres', "SELECT eytzgpu_merge('xm_k')") foreach 1 .. 2;
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('xm_k', true), pages < 10 FROM eytzgpu_info('xm_k')"),
	't|t', 'merges recycle again afterwards');

# ---- kill -9 in the middle of VACUUM's index phase
$node->safe_psql(
	'postgres', q{
	CREATE TABLE kv (k int4, v int4) WITH (autovacuum_enabled = off);
	INSERT INTO kv SELECT (random() * 1e5)::int4, g FROM generate_series(1, 300000) g;
	CREATE INDEX kv_idx ON kv USING eytzgpu (k) WITH (layout = eks, pending_limit = 1000000);
	DELETE FROM kv WHERE v % 2 = 0;
	CHECKPOINT;
});
my $vac = $node->background_psql('postgres', on_error_stop => 0);
$vac->query_until(qr/vacuum starts/,
	"SET vacuum_cost_delay = 1; SET vacuum_cost_limit = 1;\n\\echo vacuum starts\nVACUUM kv;\n");
my $phase = '';
foreach my $try (1 .. 3000)
{
	$phase = $node->safe_psql('postgres', 'SELECT phase FROM pg_stat_progress_vacuum');
	last if $phase eq 'vacuuming indexes';
	usleep(20_000);
}
is($phase, 'vacuuming indexes', 'VACUUM reached its index phase');
usleep(300_000);
$node->stop('immediate');
eval { $vac->quit };
$node->start;
my $dead = $node->safe_psql('postgres', "SELECT dead FROM eytzgpu_info('kv_idx')");
note "tombstones written before the crash: $dead";
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('kv_idx', true)"),
	't', 'verify after a crash during VACUUM');
$q = 'SELECT count(*), sum(v) FROM kv WHERE k BETWEEN 1000 AND 60000';
is( $node->safe_psql('postgres', "SET enable_seqscan = off; $q"),
	$node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $q"),
	'the index agrees with a sequential scan after the crash');
$node->safe_psql('postgres', 'VACUUM kv');
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('kv_idx')"),
	't', 'verify after the next VACUUM');

$node->stop;
done_testing();
