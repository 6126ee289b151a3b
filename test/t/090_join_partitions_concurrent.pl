# Copyright (c) eytzgpu authors
#
# The EytzGPU Join over a partitioned inner table while a partition is
# detached (concurrently, and not) and attached again, and entries are
# added and merged, under sessions joining all the while, some through
# prepared statements whose generic plans the partition changes invalidate:
# no join fails, and each answers either with the partition or without it
# (PostgreSQL's own two answers), never anything else.  Then the pinned
# views of many leaves within one budget.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('partitions');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 40\n");
$node->start;

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.7);
	-- range partitions on the join key (no default partition: DETACH
	-- CONCURRENTLY refuses one), the middle one hash-partitioned again,
	-- one leaf with its columns in another order
	CREATE TABLE p (k int4, v int4) PARTITION BY RANGE (k);
	CREATE TABLE p_a PARTITION OF p FOR VALUES FROM (MINVALUE) TO (10000);
	CREATE TABLE p_b PARTITION OF p FOR VALUES FROM (10000) TO (20000) PARTITION BY HASH (k);
	CREATE TABLE p_b0 PARTITION OF p_b FOR VALUES WITH (MODULUS 2, REMAINDER 0);
	CREATE TABLE p_b1 (v int4, k int4);
	ALTER TABLE p_b ATTACH PARTITION p_b1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
	CREATE TABLE p_x PARTITION OF p FOR VALUES FROM (20000) TO (30000);
	CREATE TABLE p_z PARTITION OF p FOR VALUES FROM (30000) TO (MAXVALUE);
	INSERT INTO p SELECT (random() * 40000)::int4, g FROM generate_series(1, 60000) g;
	INSERT INTO p VALUES (2147483647, -1), (-2147483648, -2);
	CREATE INDEX p_k ON p USING eytzgpu (k);
	INSERT INTO p SELECT (random() * 40000)::int4, -g FROM generate_series(3, 2000) g;
	-- outer: repeats, misses, NULLs, the extremes
	CREATE TABLE o (id int4 GENERATED ALWAYS AS IDENTITY, k int4);
	INSERT INTO o (k) SELECT CASE WHEN random() < 0.03 THEN NULL
		ELSE (random() * 45000)::int4 END FROM generate_series(1, 8000);
	INSERT INTO o (k) VALUES (2147483647), (-2147483648);
	ANALYZE p, o;
});

my $force = 'SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;';
my $answer = q{SELECT count(*) || ':' || coalesce(sum(o.id::int8 * 7 + t.v), 0) || ':' ||
	count(*) FILTER (WHERE t.v < 0) FROM o JOIN p t ON t.k = o.k};
# PostgreSQL's own answers, with and without p_x (rows with v < 0 are the
# pending entries: they never change)
my $with = $node->safe_psql('postgres', "SET eytzgpu.enable_join = off; $answer");
$node->safe_psql('postgres', 'ALTER TABLE p DETACH PARTITION p_x');
my $without = $node->safe_psql('postgres', "SET eytzgpu.enable_join = off; $answer");
$node->safe_psql('postgres', 'ALTER TABLE p ATTACH PARTITION p_x FOR VALUES FROM (20000) TO (30000)');
isnt($with, $without, 'the partition changes the answer');
like($node->safe_psql('postgres', "$force EXPLAIN (COSTS OFF) $answer"),
	qr/EytzGPU Join(.*\n)*.*Partitioned Table: p\n.*Leaves: 5/, 'one join over the five leaves');
is($node->safe_psql('postgres', "$force $answer"), $with, 'the join answers as PostgreSQL does');

# each transaction: the join, which must be one of the two answers
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $fh, '>', "$dir/join.sql") or die;
print $fh "$force\nSELECT ($answer) IN ('$with', '$without') AS good \\gset\n"
  . "\\if :good\n\\else\nSELECT 1 / 0 AS wrong_answer;\n\\endif\n";
close $fh;

sub pgbench_start
{
	my ($mode, $out, $err) = @_;
	return IPC::Run::start(
		[
			'pgbench', '-n', '-h', $node->host, '-p', $node->port,
			'-c', 4, '-j', 2, '-T', 12, '-M', $mode,
			'-f', "$dir/join.sql", 'postgres'
		],
		'>', $out, '2>', $err);
}

my ($simple_out, $simple_err, $prep_out, $prep_err) = ('', '', '', '');
my $simple = pgbench_start('simple', \$simple_out, \$simple_err);
my $prepared = pgbench_start('prepared', \$prep_out, \$prep_err);
my $toggles = 0;
my $start = time;
while (time - $start < 10)
{
	my $concurrently = $toggles % 2 ? ' CONCURRENTLY' : '';
	$node->safe_psql('postgres', "ALTER TABLE p DETACH PARTITION p_x$concurrently");
	$node->safe_psql('postgres',
		'ALTER TABLE p ATTACH PARTITION p_x FOR VALUES FROM (20000) TO (30000)');
	# entries that match no outer key, merged: new generations meanwhile
	$node->safe_psql('postgres',
		"INSERT INTO p SELECT 1000000 + g, 0 FROM generate_series(1, 50) g;
		 SELECT eytzgpu_merge(indexrelid) FROM pg_index i
		   JOIN pg_partition_tree('p') t ON t.relid = i.indrelid
		  WHERE t.relid = 'p_z'::regclass");
	$toggles++;
}
ok($simple->finish, 'simple protocol: no join failed, each answered right')
  or diag("pgbench: $simple_out\n$simple_err");
ok($prepared->finish, 'prepared statements: no join failed, each answered right')
  or diag("pgbench: $prep_out\n$prep_err");
cmp_ok($toggles, '>=', 2, "the partition went and came back $toggles times");
like($simple_out, qr/number of transactions actually processed: [1-9]/, 'joins ran (simple)');
like($prep_out, qr/number of transactions actually processed: [1-9]/, 'joins ran (prepared)');
like($simple_out, qr/number of failed transactions: 0/, 'none failed (simple)');
like($prep_out, qr/number of failed transactions: 0/, 'none failed (prepared)');
is($node->safe_psql('postgres', "$force $answer"), $with, 'the answer after the changes');

# Pinned views of many leaves share one budget: eight leaves whose indexes
# each fit a third of shared_buffers but together exceed all of it (the
# join pinned them all and failed with "no unpinned buffers available")
$node->append_conf('postgresql.conf', "shared_buffers = 2MB\n");
$node->restart;
$node->safe_psql(
	'postgres', q{
	CREATE TABLE h (k int4, v int4) PARTITION BY HASH (k);
	SELECT format('CREATE TABLE h_%s PARTITION OF h FOR VALUES WITH (MODULUS 8, REMAINDER %s)', r, r)
	  FROM generate_series(0, 7) r \gexec
	INSERT INTO h SELECT g, g FROM generate_series(1, 320000) g;
	CREATE INDEX ON h USING eytzgpu (k);
	CREATE TABLE ho AS SELECT (g * 37) % 330000 AS k FROM generate_series(1, 40000) g;
	VACUUM ANALYZE h, ho;
});
my $hq = 'SELECT count(*), sum(h.v::int8) FROM ho JOIN h ON h.k = ho.k';
# the CPU views' pin budget: on the CPU, also on a machine with a GPU
my $pinned = 'SET eytzgpu.device = cpu; SET eytzgpu.cpu_view = pinned; SET max_parallel_workers_per_gather = 0;';
like($node->safe_psql('postgres', "$force $pinned EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) $hq"),
	qr/Leaf h_0: .*Device: cpu \(pinned pages\)(.*\n)*.*Leaf h_7: .*Device: cpu\n/,
	'the first leaf pinned, the leaves beyond the budget loaded');
is($node->safe_psql('postgres', "$force $pinned $hq"),
	$node->safe_psql('postgres', "SET eytzgpu.enable_join = off; $hq"),
	'and the join answers right');
# With cpu_view = auto a leaf's layout stays pinned only where every leaf's
# heap and index fit shared_buffers together (each leaf's alone fits here):
# a batch reads them all, and pinned layouts pushed out would be read again
# by every batch
my $auto = 'SET eytzgpu.device = cpu; SET eytzgpu.cpu_view = auto; SET max_parallel_workers_per_gather = 0;';
my $auto_plan = $node->safe_psql('postgres', "$force $auto EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) $hq");
like($auto_plan, qr/Leaf h_7: .*Device: cpu\n/, 'auto: the leaves load their images');
unlike($auto_plan, qr/pinned pages/, 'auto: no leaf pinned beside the other leaves\' pages');
is($node->safe_psql('postgres', "$force $auto $hq"),
	$node->safe_psql('postgres', "SET eytzgpu.enable_join = off; $hq"),
	'and that join answers right');

# eytzgpu.join_heap_order = auto sorts the matches where the batches would
# read a heap that shared_buffers (256 buffers here) does not keep beside its
# index: a heap of ~150 pages with its index fits and stays pipelined (it was
# sorted while the rule asked for half of shared_buffers: the 2M-row demo
# join at the defaults was costed above PostgreSQL's hash join), one of ~450
# does not
$node->safe_psql(
	'postgres', q{
	CREATE TABLE hb_fits AS SELECT (g * 7919) % 40000 AS k, g AS v FROM generate_series(1, 34000) g;
	CREATE TABLE hb_big AS SELECT (g * 7919) % 120000 AS k, g AS v FROM generate_series(1, 100000) g;
	CREATE INDEX ON hb_fits USING eytzgpu (k);
	CREATE INDEX ON hb_big USING eytzgpu (k);
	CREATE TABLE hb_outer AS SELECT (g * 104729) % 130000 AS k FROM generate_series(1, 20000) g;
	VACUUM ANALYZE hb_fits, hb_big, hb_outer;
});
my $ho = 'SET eytzgpu.device = cpu; SET max_parallel_workers_per_gather = 0; SET work_mem = \'64kB\';';
for my $t (['hb_fits', 0], ['hb_big', 1])
{
	my ($tbl, $sorted) = @$t;
	my $pages = $node->safe_psql('postgres',
		"SELECT pg_relation_size('$tbl') / 8192 + pg_relation_size('${tbl}_k_idx') / 8192");
	my $q = "SELECT count(*), sum(i.v::int8) FROM hb_outer o JOIN $tbl i ON i.k = o.k";
	my $plan = $node->safe_psql('postgres', "$force $ho EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $q");
	like($plan, qr/Batches: (\d{2,})/, "$tbl: many batches");
	if ($sorted)
	{
		cmp_ok($pages, '>', 256, "$tbl: heap and index ($pages pages) exceed shared_buffers");
		like($plan, qr/Heap Order: one pass/, "$tbl: auto sorts the matches");
	}
	else
	{
		cmp_ok($pages, '<=', 256, "$tbl: heap and index ($pages pages) fit shared_buffers");
		unlike($plan, qr/Heap Order: one pass/, "$tbl: auto keeps the pipelined mode");
	}
	is($node->safe_psql('postgres', "$force $ho $q"),
		$node->safe_psql('postgres', "SET eytzgpu.enable_join = off; $q"),
		"$tbl: the join answers right");
}

# One table whose heap alone is larger than shared_buffers: cpu_view = auto
# pins its layout in a serial join (the heap is read again by every pass
# anyway, and a new backend loads no image); heap order reads that heap
# through a ring
$node->safe_psql(
	'postgres', q{
	CREATE TABLE hb_wide AS SELECT (g * 7919) % 40000 AS k, g AS v, repeat('w', 200) AS pad
	  FROM generate_series(1, 30000) g;
	CREATE INDEX ON hb_wide USING eytzgpu (k);
	CREATE TABLE hb_few AS SELECT (g * 104729) % 40000 AS k FROM generate_series(1, 2500) g;
	VACUUM ANALYZE hb_wide, hb_few;
});
my ($heap_pages, $index_pages) = split /\|/, $node->safe_psql('postgres',
	"SELECT pg_relation_size('hb_wide') / 8192, pg_relation_size('hb_wide_k_idx') / 8192");
cmp_ok($heap_pages, '>=', 256, "hb_wide: the heap ($heap_pages pages) exceeds shared_buffers");
# few keys: the image's load would cost more than searching the pinned pages
my $wq = 'SELECT count(*), sum(i.v::int8) FROM hb_few o JOIN hb_wide i ON i.k = o.k';
my $wplan = $node->safe_psql('postgres', "$force $ho EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $wq");
like($wplan, qr/Device: cpu \(pinned pages\)/, 'hb_wide: auto pins the layout in a serial join');
like($wplan, qr/Heap Order: one pass/, 'hb_wide: and sorts the matches');
is($node->safe_psql('postgres', "$force $ho $wq"),
	$node->safe_psql('postgres', "SET eytzgpu.enable_join = off; $wq"),
	'hb_wide: the join answers right');

$node->stop;
done_testing();
