# t/030_join_include_concurrent.pl: the index-only EytzGPU Join over a
# covering eytzgpu index (INCLUDE) while its table changes.
#
# 1. A VACUUM in the middle of a scan whose matches came without TIDs (every
#    heap page all-visible): the chunks after it must be read from the heap.
# 2. A backend's cached CPU image that a VACUUM has since tombstoned entries
#    of (no merge: the generation stays) must not answer for the removed
#    rows, whose heap pages VACUUM then marks all-visible: a session inside a
#    transaction (so it has not processed the relcache invalidation yet)
#    runs the join again after DELETE + VACUUM and must get the table's
#    answer.
# 3. pgbench: writers update the included columns (new heap versions,
#    pending entries, merges) and VACUUM now and then, while readers compare
#    the join with PostgreSQL's sequential-scan answer in one REPEATABLE
#    READ snapshot.  Afterwards, VACUUM leaves no match that reads the heap.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('incl_join');
$node->init;
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.3);
	CREATE TABLE ji (k int4, v int8, f float8, w int4);
	INSERT INTO ji SELECT (random() * 4000)::int4, g, CASE WHEN g % 7 = 0 THEN NULL ELSE g / 4.0 END, g
	FROM generate_series(1, 40000) g;
	CREATE INDEX ji_k ON ji USING eytzgpu (k) INCLUDE (v, f) WITH (pending_limit = 200);
	CREATE TABLE jo (k int4, x int4);
	INSERT INTO jo SELECT (random() * 4200)::int4, g FROM generate_series(1, 3000) g;
	VACUUM ANALYZE ji, jo;
});

my $settings = q{
	SET eytzgpu.device = cpu;
	SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;
	SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off;
	SET max_parallel_workers_per_gather = 0;
};
my $join = 'SELECT count(*), sum(i.v), count(i.f), sum(i.f) FROM jo o JOIN ji i ON i.k = o.k';

like($node->safe_psql('postgres', "$settings EXPLAIN (COSTS OFF) $join"),
	qr/Index Only: true/, 'the join is index-only');

# ---- 1. a VACUUM between two chunks of one scan.  With every heap page
# all-visible the image's matches come as layout slots, without TIDs; once
# a VACUUM has removed entries the next chunk is not current, and its
# matches must be resolved to TIDs and read from the heap.
my $rows = 'SELECT o.x, i.v FROM jo o JOIN ji i ON i.k = o.k';
$node->safe_psql('postgres', 'DELETE FROM ji WHERE w % 700 = 1');
my $cursor = $node->background_psql('postgres');
$cursor->query_safe($settings);
like($cursor->query_safe("EXPLAIN (COSTS OFF) DECLARE c CURSOR FOR $rows"),
	qr/EytzGPU Join.*Index Only: true/s, 'the cursor is an index-only join');
$cursor->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$cursor->query_safe("DECLARE c CURSOR FOR $rows");
# the first of the first batch's chunks (1024 matches)
my @got = split /\n/, $cursor->query_safe('FETCH 200 FROM c');
is( $node->safe_psql('postgres',
		"SELECT dead FROM eytzgpu_info('ji_k')"),
	'0', 'no tombstones yet');
$node->safe_psql('postgres', 'VACUUM ji');
is( $node->safe_psql('postgres',
		"SELECT dead > 0 FROM eytzgpu_info('ji_k')"),
	't', 'VACUUM removed entries in the middle of the scan');
push @got, split /\n/, $cursor->query_safe('FETCH ALL FROM c');
my @expected = split /\n/, $cursor->query_safe(
	"SET LOCAL eytzgpu.enable_join = off; SET LOCAL enable_hashjoin = on; $rows");
is(join(',', sort @got), join(',', sort @expected),
	'the rows of the chunks after the VACUUM agree with the table');
$cursor->query_safe('COMMIT');
$cursor->quit;

# ---- 2. a cached image that VACUUM tombstoned since
my $reader = $node->background_psql('postgres');
$reader->query_safe($settings);
$reader->query_safe('BEGIN');
my $before = $reader->query_safe($join);
$node->safe_psql('postgres', 'DELETE FROM ji WHERE w % 500 = 0; VACUUM ji');
is( $node->safe_psql('postgres',
		"SELECT dead > 0 AND pending = 0 FROM eytzgpu_info('ji_k')"),
	't', 'VACUUM left tombstones and no merge');
my $after = $reader->query_safe($join);
like($reader->query_safe("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $join"),
	qr/Heap Fetches: 0\n/, 'a current image answers: no match reads the heap');
my $reference = $reader->query_safe(
	"SET LOCAL eytzgpu.enable_join = off; SET LOCAL enable_hashjoin = on; $join");
isnt($after, $before, 'the rows removed are gone from the join');
is($after, $reference, 'the join after VACUUM agrees with the table');
$reader->query_safe('COMMIT');
$reader->quit;

# ---- 3. concurrent writers, VACUUM and readers
$node->pgbench(
	'--no-vacuum --client=4 --jobs=2 --transactions=60',
	0,
	[qr{processed: 240/240}],
	[qr{^$}],
	'readers agree with the table while writers update the included columns',
	{
		'030_write' => q{
			\set k random(0, 4000)
			\set r random(0, 99)
			UPDATE ji SET v = v + 1, f = CASE WHEN f IS NULL THEN :r / 8.0 END WHERE k = :k;
			\if :r < 5
			DELETE FROM ji WHERE k = :k + 1;
			\elif :r < 15
			VACUUM ji;
			\endif
			INSERT INTO ji VALUES (:k, -:r, NULL, -1);
		},
		'030_read' => q{
			SET eytzgpu.device = cpu;
			SET enable_hashjoin = off;
			SET enable_mergejoin = off;
			SET enable_nestloop = off;
			SET enable_indexscan = off;
			SET enable_indexonlyscan = off;
			SET enable_bitmapscan = off;
			SET max_parallel_workers_per_gather = 0;
			BEGIN ISOLATION LEVEL REPEATABLE READ;
			SELECT count(*) AS n1, coalesce(sum(i.v), 0) AS v1, count(i.f) AS c1, coalesce(sum(i.f), 0) AS f1 FROM jo o JOIN ji i ON i.k = o.k \gset
			SET LOCAL eytzgpu.enable_join = off;
			SET LOCAL enable_hashjoin = on;
			SELECT count(*) AS n2, coalesce(sum(i.v), 0) AS v2, count(i.f) AS c2, coalesce(sum(i.f), 0) AS f2 FROM jo o JOIN ji i ON i.k = o.k \gset
			SELECT 1 / (:n1 = :n2 AND :v1 = :v2 AND :c1 = :c2 AND :f1 = :f2)::int;
			COMMIT;
		},
	});

is($node->safe_psql('postgres', "SELECT eytzgpu_verify('ji_k', true)"),
	't', 'the index passes verify after the run');
# INDEX_CLEANUP ON: with few pages holding dead items VACUUM may skip the
# index pass, and pages left with dead line pointers are not all-visible
$node->safe_psql('postgres', 'VACUUM (INDEX_CLEANUP ON) ji');
is( $node->safe_psql('postgres', "$settings $join"),
	$node->safe_psql('postgres',
		"$settings SET eytzgpu.enable_join = off; SET enable_hashjoin = on; $join"),
	'the join agrees with the table after the run');
like(
	$node->safe_psql('postgres',
		"$settings EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $join"),
	qr/Heap Fetches: 0\n/,
	'after VACUUM no match reads the heap');

$node->stop;
done_testing();
