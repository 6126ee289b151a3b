# t/020_lookup_cancel.pl: a join whose CPU image load is cancelled (here by
# statement_timeout) frees what the load had read: with
# eytzgpu.image_cache_limit = 0 nothing stays cached, so after many cancelled
# joins the backend holds no image memory (issue 12, item 7: before the fix
# each cancelled load left its arrays under TopMemoryContext).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	CREATE TABLE big (k int4, v int4);
	INSERT INTO big SELECT (g::int8 * 7919) % 1000003, g FROM generate_series(1, 1000000) g;
	CREATE INDEX big_k ON big USING eytzgpu (k);
	CREATE TABLE o AS SELECT (g * 31) % 1000003 AS k FROM generate_series(1, 20000) g;
	ANALYZE big, o;
});

like(
	$node->safe_psql(
		'postgres', q{
		SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;
		EXPLAIN (COSTS OFF) SELECT count(*) FROM o JOIN big b ON b.k = o.k;
	}),
	qr/EytzGPU Join/,
	'the join is the eytzgpu join');

# one session: many joins, each cancelled after 1 to 40 ms, then its memory
my $script = q{
	SET eytzgpu.image_cache_limit = 0;
	SET eytzgpu.device = cpu;
	SET enable_hashjoin = off;
	SET enable_mergejoin = off;
	SET enable_nestloop = off;
};
for my $i (1 .. 60)
{
	my $ms = 1 + ($i * 7) % 40;
	$script .= "SET statement_timeout = '${ms}ms';\n"
	  . "SELECT count(*) FROM o JOIN big b ON b.k = o.k;\n";
}
$script .= q{
	RESET statement_timeout;
	SELECT 'image bytes ' || coalesce(sum(total_bytes), 0)
	FROM pg_backend_memory_contexts
	WHERE name IN ('eytzgpu layout images', 'eytzgpu layout image');
};
my ($stdout, $stderr);
$node->psql('postgres', $script, stdout => \$stdout, stderr => \$stderr,
	on_error_stop => 0);

my $cancelled = () = $stderr =~ /canceling statement due to statement timeout/g;
ok($cancelled >= 10, "joins were cancelled ($cancelled of 60)");
like($stdout, qr/^image bytes (\d+)$/m, 'memory contexts read');
my ($bytes) = $stdout =~ /^image bytes (\d+)$/m;
# an empty context of the image cache (or none) and no image: a few kB
cmp_ok($bytes, '<', 64 * 1024, "no image memory left after the cancels ($bytes bytes)");

# the same join completes and is right
is( $node->safe_psql(
		'postgres', q{
		SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;
		SELECT count(*) FROM o JOIN big b ON b.k = o.k;
	}),
	$node->safe_psql('postgres',
		'SET eytzgpu.enable_join = off; SELECT count(*) FROM o JOIN big b ON b.k = o.k'),
	'the join agrees with the join off');

$node->stop;
done_testing();
