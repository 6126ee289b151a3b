# t/060_anyarray_vacuum.pl: an index-only scan of "k = ANY(array)" (batched
# lookups, eytzarrayscan.c) with a VACUUM in its middle.  The scan's CPU
# image was pinned before the VACUUM removed the entries of rows deleted
# before the scan's snapshot; the chunks read after it are not current and
# must be resolved against the index pages, or they would return the
# removed rows' keys and included values on heap pages VACUUM has since
# marked all-visible.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('anyarray_vacuum');
$node->init;
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.6);
	CREATE TABLE av (k int4, v int8);
	INSERT INTO av SELECT (random() * 4000)::int4, g FROM generate_series(1, 40000) g;
	CREATE INDEX av_k ON av USING eytzgpu (k) INCLUDE (v) WITH (pending_limit = 100000);
	CREATE TABLE keys AS SELECT array_agg(g * 2) AS a FROM generate_series(0, 1500) g;
	VACUUM ANALYZE av;
	DELETE FROM av WHERE v % 3 = 0;
});

my $rows = 'SELECT k, v FROM av WHERE k = ANY((SELECT a FROM keys)::int4[])';
my $cursor = $node->background_psql('postgres');
$cursor->query_safe(
	'SET eytzgpu.device = cpu; SET max_parallel_workers_per_gather = 0; '
	  . 'BEGIN ISOLATION LEVEL REPEATABLE READ');
my @expected = split /\n/, $cursor->query_safe(
	"SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off; "
	  . "SET LOCAL enable_bitmapscan = off; $rows");
$cursor->query_safe(
	'SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = on; '
	  . 'SET LOCAL enable_indexonlyscan = on; SET LOCAL enable_bitmapscan = off');
like($cursor->query_safe("EXPLAIN (COSTS OFF) $rows"),
	qr/Index Only Scan using av_k/, 'the scan is index-only');
$cursor->query_safe("DECLARE c CURSOR FOR $rows");
# within the first chunk (1024 matches): the scan holds the lock that
# VACUUM's index pass waits for
my @got = split /\n/, $cursor->query_safe('FETCH 200 FROM c');

my $vac = $node->background_psql('postgres');
$vac->query_until(qr/vacuum starts/, "\\echo vacuum starts\nVACUUM av;\n\\echo vacuum done\n");
my $waiting = 0;
foreach my $try (1 .. 500)
{
	$waiting = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_locks WHERE locktype = 'page' AND NOT granted");
	last if $waiting > 0;
	usleep(20_000);
}
is($waiting, '1', 'VACUUM waits for the scan to leave its chunk');
# into the next chunk: VACUUM's index pass goes first, then this chunk is
# read from the image pinned before it
push @got, split /\n/, $cursor->query_safe('FETCH 1000 FROM c');
$vac->query_until(qr/vacuum done/, '');
$vac->quit;
is( $node->safe_psql('postgres', "SELECT generation > 1 OR dead > 0 FROM eytzgpu_info('av_k')"),
	't', 'VACUUM removed entries in the middle of the scan');
# the rest: heap pages are now all-visible where VACUUM removed the rows
push @got, split /\n/, $cursor->query_safe('FETCH ALL FROM c');
is(scalar(@got), scalar(@expected), 'as many rows as a sequential scan');
ok(join(',', sort @got) eq join(',', sort @expected),
	'the rows after the VACUUM agree with a sequential scan');
$cursor->query_safe('COMMIT');
$cursor->quit;

$node->stop;
done_testing();
