# t/095_shared_image.pl: the shared image registry (issue 27, no cold
# start).  With shared_preload_libraries = 'eytzgpu' (the service off) the
# first backend that loads an index generation's CPU image registers it in
# shared memory, and a fresh backend's first join searches it in place
# (EXPLAIN: "Device: cpu (shared image)"; eytzgpu_shared_images() counts the
# attach as a hit, not a load).
#
# Every join is compared with PostgreSQL's own answer (eytzgpu.enable_join =
# off) on random data with duplicates, NULLs, extremes and misses: after a
# merge (a new generation: the old one leaves the registry), REINDEX (a new
# relfilenode), DROP INDEX, a limit smaller than two images (the least
# recently used one leaves, answers stay right), a session that keeps an
# image attached while it leaves the registry and other backends exit, the
# limit 0 (no sharing), and a restart (the registry starts empty).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('shared_image');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'eytzgpu'
eytzgpu.service_device = off
autovacuum = off
});
$node->start;

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.95);
	CREATE TABLE t (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO t (k) SELECT CASE WHEN random() < 0.02 THEN NULL
		ELSE (random() * 150000)::int4 END FROM generate_series(1, 200000);
	INSERT INTO t (k) VALUES (2147483647), (-2147483648), (0), (0);
	CREATE INDEX t_k ON t USING eytzgpu (k);
	CREATE TABLE u (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO u (k) SELECT (random() * 150000)::int4 FROM generate_series(1, 200000);
	CREATE INDEX u_k ON u USING eytzgpu (k);
	CREATE TABLE o (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO o (k) SELECT CASE WHEN random() < 0.03 THEN NULL
		ELSE (random() * 180000)::int4 END FROM generate_series(1, 30000);
	INSERT INTO o (k) VALUES (2147483647), (-2147483648), (0);
	ANALYZE t, u, o;
});

my $settings = q{SET eytzgpu.device = cpu; SET eytzgpu.cpu_view = image;
	SET max_parallel_workers_per_gather = 0;
	SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;};

sub join_sql
{
	my ($table) = @_;
	return "SELECT count(*), sum(hashint8(o.id * 1000003 + $table.id)) "
	  . "FROM o JOIN $table ON $table.k = o.k";
}

# PostgreSQL's answer, in a session of its own
sub expected
{
	my ($table) = @_;
	return $node->safe_psql('postgres',
		'SET eytzgpu.enable_join = off; ' . join_sql($table));
}

# a fresh backend's first join: its Device line, and whether it is right
sub fresh_join
{
	my ($table, $extra) = @_;
	$extra //= '';
	my $plan = $node->safe_psql('postgres',
		"$settings $extra EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
		  . join_sql($table));
	my ($device) = $plan =~ /Device: ([^\n]*)/;
	my $got = $node->safe_psql('postgres', "$settings $extra " . join_sql($table));
	is($got, expected($table), "$table: the join agrees with PostgreSQL ($device)");
	return $device // '';
}

sub registry
{
	return $node->safe_psql('postgres',
		'SELECT index_name, generation, relfilenode, hits, bytes > 0 '
		  . 'FROM eytzgpu_shared_images() ORDER BY index_name, generation');
}

sub gen_of
{
	my ($index) = @_;
	return $node->safe_psql('postgres',
		"SELECT generation FROM eytzgpu_info('$index')");
}

sub file_of
{
	my ($index) = @_;
	return $node->safe_psql('postgres', "SELECT pg_relation_filenode('$index')");
}

is(registry(), '', 'the registry starts empty');

# ---- 1. session A loads and registers, fresh session B attaches
is(fresh_join('t'), 'cpu (shared image)', 'A: loads the image and registers it');
my $g = gen_of('t_k');
my $f = file_of('t_k');
like(registry(), qr/^t_k\|$g\|$f\|\d+\|t$/, 'the registry holds t_k\'s generation');
my ($hits) = registry() =~ /\|(\d+)\|t$/;
is(fresh_join('t'), 'cpu (shared image)', 'B: its first join uses the shared image');
my ($hits2) = registry() =~ /\|(\d+)\|t$/;
cmp_ok($hits2, '>', $hits, 'B attached the registered image instead of loading one');
is(fresh_join('t', 'SET eytzgpu.cpu_view = auto;'),
	'cpu (shared image)', 'auto takes the registered image');

# ---- 2. a session holds the image while it leaves the registry
my $held = $node->background_psql('postgres');
$held->query_safe($settings);
$held->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
my $before = $held->query_safe(join_sql('t'));
is($before, expected('t'), 'the held session\'s join is right');

# ---- 3. a merge: a new generation replaces the old one
$node->safe_psql('postgres', q{
	INSERT INTO t (k) SELECT (random() * 150000)::int4 FROM generate_series(1, 3000);
	DELETE FROM t WHERE id % 97 = 0;
	SELECT eytzgpu_merge('t_k');
});
my $g2 = gen_of('t_k');
isnt($g2, $g, 'the merge made a new generation');
is(fresh_join('t'), 'cpu (shared image)', 'after the merge: the new generation is shared');
like(registry(), qr/^t_k\|$g2\|$f\|\d+\|t$/, 'only the new generation is registered');
# the held session still searches the old generation, unregistered
is($held->query_safe(join_sql('t')), $before,
	'the held session answers as its snapshot sees the table');
# backends that used the new image exit; the held one is unaffected
for my $i (1 .. 3)
{
	is(fresh_join('t'), 'cpu (shared image)', "fresh backend $i after the merge");
}
$held->query_safe('COMMIT');
is($held->query_safe(join_sql('t')), expected('t'),
	'the held session\'s next transaction answers from the new generation');
$held->quit;

# ---- 4. REINDEX: a new relfilenode
$node->safe_psql('postgres', 'REINDEX INDEX t_k');
my $f2 = file_of('t_k');
isnt($f2, $f, 'REINDEX gave t_k a new relfilenode');
is(fresh_join('t'), 'cpu (shared image)', 'after REINDEX: shared');
my $g3 = gen_of('t_k');
like(registry(), qr/^t_k\|$g3\|$f2\|\d+\|t$/, 'only the new relfilenode is registered');

# ---- 5. DROP INDEX
is(fresh_join('u'), 'cpu (shared image)', 'u: shared');
like(registry(), qr/^u_k\|/m, 'u_k registered');
$node->safe_psql('postgres', 'DROP INDEX u_k');
unlike(registry(), qr/^u_k\|/m, 'DROP INDEX: u_k left the registry');
unlike(registry(), qr/^\|/m, 'no image of a dropped index is left');
$node->safe_psql('postgres', 'CREATE INDEX u_k ON u USING eytzgpu (k)');

# ---- 6. a limit smaller than two images: the least recently used leaves
$node->safe_psql('postgres',
	"ALTER SYSTEM SET eytzgpu.shared_image_limit = '4MB'; SELECT pg_reload_conf()");
$node->poll_query_until('postgres', 'SELECT current_setting(\'eytzgpu.shared_image_limit\') = \'4MB\'')
  or die 'the limit was not reloaded';
is(fresh_join('t'), 'cpu (shared image)', 'limit 4MB: t shared');
is(fresh_join('u'), 'cpu (shared image)', 'limit 4MB: u shared');
like(registry(), qr/^u_k\|[^\n]*$/, 'only u_k is left: t_k was evicted');
is(fresh_join('t'), 'cpu (shared image)', 'limit 4MB: t again');
like(registry(), qr/^t_k\|[^\n]*$/, 'and now only t_k');
is(fresh_join('u'), 'cpu (shared image)', 'limit 4MB: u again');

# ---- 7. limit 0: no sharing, each backend its own image
$node->safe_psql('postgres',
	"ALTER SYSTEM SET eytzgpu.shared_image_limit = 0; SELECT pg_reload_conf()");
$node->poll_query_until('postgres', 'SELECT current_setting(\'eytzgpu.shared_image_limit\') = \'0\'')
  or die 'the limit was not reloaded';
is(fresh_join('t'), 'cpu', 'limit 0: the backend loads its own image');
is(registry(), '', 'limit 0: the registered images left');
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET eytzgpu.shared_image_limit; SELECT pg_reload_conf()");
$node->poll_query_until('postgres', 'SELECT current_setting(\'eytzgpu.shared_image_limit\') = \'1GB\'')
  or die 'the limit was not reloaded';

# ---- 8. a restart: the registry starts empty, and fills again
$node->restart;
is(registry(), '', 'after a restart the registry is empty');
is(fresh_join('t'), 'cpu (shared image)', 'after the restart: t shared');
is(fresh_join('t'), 'cpu (shared image)', 'and attached by the next backend');
like(registry(), qr/^t_k\|[^\n]*\|t$/, 't_k registered again');

# ---- 9. who may list the images
$node->safe_psql('postgres', 'CREATE ROLE nobody LOGIN');
my ($rc, $out, $err) = $node->psql('postgres', 'SELECT * FROM eytzgpu_shared_images()',
	extra_params => [ '-U', 'nobody' ]);
like($err, qr/permission denied for function eytzgpu_shared_images/,
	'only pg_monitor may list the shared images');

$node->stop;
done_testing();
