# t/050_join_parallel_image.pl: the parallel EytzGPU Join's workers search
# the leader's image in place (eytzgpu.parallel_image), which the leader
# keeps in dynamic shared memory carved from the main shared memory
# (min_dynamic_shared_memory; pg_regress runs without it).
#
# The workers alone run the join (parallel_leader_participation = off) after
# the leader cached the image in a serial join of the same session.  Each
# join's answer is compared with PostgreSQL's own (eytzgpu.enable_join =
# off) by a count and a sum of hashes of the result rows; EXPLAIN ANALYZE
# says how each worker took up the image:
# 1. parallel_image = in_place: in place (the leader's kept image, see 3),
#    for a plain index, a range join and an index-only join over a covering
#    index (its included values are shared too); and after DELETE + VACUUM
#    (tombstones) in another session while the leader's transaction held
#    the image.
# 2. auto (huge_pages is not on here) and copy: copied (the leader copies
#    its image into the query's shared memory, the workers into their own),
#    on an outer side large enough to pay for the copies.
# 3. The leader's kept image: a parallel join moves the leader's cached image
#    into a segment of the main shared memory that outlives the query (EXPLAIN
#    ANALYZE: "Image Shared: kept" and the queries it served); later parallel
#    joins pass the workers the same segment, with no copy; a merge (new
#    generation), a REINDEX (new relfilenode) and a VACUUM's tombstones are
#    never answered from the old image.
# 4. Without min_dynamic_shared_memory a segment is one of its own (small
#    pages): copied even with in_place ("Image Shared: copied").
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('parallel_image');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
min_dynamic_shared_memory = 64MB
max_worker_processes = 8
});
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.5);
	CREATE TABLE pi (k int4, v int4, f float8);
	INSERT INTO pi SELECT CASE WHEN g % 101 = 0 THEN NULL ELSE (random() * 30000)::int4 END,
		g, CASE WHEN g % 7 = 0 THEN NULL ELSE g / 4.0 END
	FROM generate_series(1, 100000) g;
	INSERT INTO pi VALUES (-2147483648, -1, 0), (2147483647, -2, 0);
	CREATE INDEX pi_k ON pi USING eytzgpu (k);
	CREATE TABLE pc (k int4, v int4, f float8);
	INSERT INTO pc SELECT * FROM pi;
	CREATE INDEX pc_k ON pc USING eytzgpu (k) INCLUDE (v, f);
	CREATE TABLE po (k int4, lo int4, hi int4, x int4);
	INSERT INTO po SELECT CASE WHEN g % 53 = 0 THEN NULL ELSE (random() * 31000)::int4 - 500 END,
		g % 30000, g % 30000 + g % 3, g
	FROM generate_series(1, 20000) g;
	INSERT INTO po VALUES (-2147483648, NULL, 5, -1), (2147483647, 2147483647, 2147483647, -2);
	VACUUM ANALYZE pi, pc, po;
});

# (the image: eytzgpu.cpu_view = auto would search the pinned pages, 5. below)
my $settings = q{
	SET eytzgpu.device = cpu;
	SET eytzgpu.cpu_view = image;
	SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;
	SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
	SET min_parallel_table_scan_size = 0;
	SET eytzgpu.batch_size = 500;
};
my %joins = (
	plain => 'SELECT o.x, i.v FROM po o JOIN pi i ON i.k = o.k',
	left_range => 'SELECT o.x, i.v FROM po o LEFT JOIN pi i ON i.k BETWEEN o.lo AND o.hi',
	covering => 'SELECT o.x, i.v, i.f FROM po o JOIN pc i ON i.k = o.k',);

# the join's rows as a count and a sum of hashes (a multiset fingerprint)
sub digest
{
	my ($q) = @_;
	return "SELECT count(*), sum(hashtext(j::text)::int8) FROM ($q) j;";
}

# run NAME MODE: the join in workers after a serial run cached the leader's
# image; returns (workers' image uses, answer, PostgreSQL's answer, plan)
sub run
{
	my ($name, $mode) = @_;
	my $q = $joins{$name};
	my $out = $node->safe_psql(
		'postgres', qq{
		$settings
		SET eytzgpu.parallel_image = $mode;
		SET max_parallel_workers_per_gather = 0;
		@{[ digest($q) ]}
		SET max_parallel_workers_per_gather = 2;
		SET parallel_leader_participation = off;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $q;
		@{[ digest($q) ]}
		SET eytzgpu.enable_join = off;
		@{[ digest($q) ]}
	});
	my @lines = split /\n/, $out;
	my @uses = map { /Shared Image: (.*)/ ? $1 : () } @lines;
	my ($serial, $parallel, $reference) = grep { /^\d+\|-?\d+$/ } @lines;
	is($serial, $reference, "$name: the serial join is right");
	like($out, qr/Parallel Custom Scan \(EytzGPU Join\)/, "$name: parallel plan");
	like($out, qr/Workers Launched: 2/, "$name: two workers");
	return (join(',', @uses), $parallel, $reference, $out);
}

# ---- 1. in place
for my $name (sort keys %joins)
{
	my ($uses, $parallel, $reference, $plan) = run($name, 'in_place');
	is($uses, 'in place,in place', "$name: workers search the image in place")
	  or diag($plan);
	is($parallel, $reference, "$name: parallel answer is PostgreSQL's");
	like($plan, qr/Index Only: true/, "$name: index-only") if $name eq 'covering';
}

# tombstones since the leader's load: a session inside a transaction that
# cached the image before another session's DELETE + VACUUM; whatever it
# holds by then (its relcache invalidation drops the image), the workers
# must answer for the current index
for my $name ('plain', 'covering')
{
	my $q = $joins{$name};
	my $table = $name eq 'plain' ? 'pi' : 'pc';
	my $leader = $node->background_psql('postgres');
	$leader->query_safe($settings);
	$leader->query_safe('SET eytzgpu.parallel_image = in_place');
	$leader->query_safe('SET max_parallel_workers_per_gather = 0');
	$leader->query_safe('BEGIN');
	$leader->query_safe(digest($q));
	$node->safe_psql('postgres', "DELETE FROM $table WHERE v % 5 = 0; VACUUM $table");
	is( $node->safe_psql('postgres',
			"SELECT dead > 0 AND pending = 0 FROM eytzgpu_info('${table}_k')"),
		't', "$name: VACUUM left tombstones and no merge");
	$leader->query_safe('SET max_parallel_workers_per_gather = 2');
	$leader->query_safe('SET parallel_leader_participation = off');
	my $parallel = $leader->query_safe(digest($q));
	$leader->query_safe('SET eytzgpu.enable_join = off');
	is($parallel, $leader->query_safe(digest($q)),
		"$name after VACUUM: parallel answer is PostgreSQL's");
	$leader->query_safe('COMMIT');
	$leader->quit;
}

# ---- 2. auto without huge pages, and copy
# (each worker's copy is charged its page faults, measured on the machine:
# tens of microseconds a page on some virtual machines; enough outer rows
# that the parallel plan pays for the copies on any of them)
$node->safe_psql('postgres',
	'CREATE TABLE po_many AS SELECT po.* FROM po, generate_series(1, 20); ANALYZE po_many');
$joins{covering_many} = 'SELECT o.x, i.v, i.f FROM po_many o JOIN pc i ON i.k = o.k';
for my $mode ('auto', 'copy')
{
	my ($uses, $parallel, $reference) = run('covering_many', $mode);
	is($uses, 'copied,copied', "$mode: workers copy the image");
	is($parallel, $reference, "$mode: parallel answer is PostgreSQL's");
}

# ---- 3. the leader's kept image, over queries of one session
{
	my $leader = $node->background_psql('postgres');
	$leader->query_safe($settings);
	$leader->query_safe('SET eytzgpu.parallel_image = in_place');
	$leader->query_safe('SET parallel_leader_participation = off');

	# join name in workers: checks the answer against PostgreSQL's and
	# returns how the leader shared its image ("kept N": the queries the
	# kept image served, this EXPLAIN ANALYZE included), the workers' use
	# of it, and the plan
	my $check = sub {
		my ($name, $what) = @_;
		my $q = $joins{$name};
		$leader->query_safe('SET max_parallel_workers_per_gather = 2');
		my $plan = $leader->query_safe(
			"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $q");
		my $parallel = $leader->query_safe(digest($q));
		$leader->query_safe('SET eytzgpu.enable_join = off');
		is($parallel, $leader->query_safe(digest($q)),
			"$what: parallel answer is PostgreSQL's");
		$leader->query_safe('RESET eytzgpu.enable_join');
		my ($kept) = $plan =~ /Image Shared: (.*)/;
		my ($queries) = $plan =~ /Image Shared Queries: (\d+)/;
		my $uses = join(',', $plan =~ /Shared Image: (.*)/g);
		return (($kept // 'none') . ' ' . ($queries // 0) . " $uses", $plan);
	};
	# the leader loads its image of join name's index in a serial join; the
	# next parallel join keeps it
	my $load_and_keep = sub {
		my ($name, $what) = @_;
		$leader->query_safe('SET max_parallel_workers_per_gather = 0');
		$leader->query_safe(digest($joins{$name}));
		my ($shared, $plan) = $check->($name, $what);
		is($shared, 'kept 1 in place,in place',
			"$what: the leader keeps its image, the workers search it in place")
		  or diag($plan);
	};

	$load_and_keep->('plain', 'plain');
	# the EXPLAIN ANALYZE and the answer: two queries
	my ($shared, $plan) = $check->('plain', 'plain again');
	is($shared, 'kept 3 in place,in place', 'later parallel joins reuse the kept image')
	  or diag($plan);

	# another session's change that makes the leader's image stale: the
	# next parallel join shares nothing (the leader has no image of the
	# index as it is now), the one after the leader's next load a new kept
	# image
	for my $change (
		[ 'after a merge',
			"INSERT INTO pi SELECT k + 1, -v, f FROM pi WHERE v % 10 = 0; SELECT eytzgpu_merge('pi_k')"
		],
		[ 'after REINDEX', 'REINDEX INDEX pi_k' ])
	{
		my ($what, $sql) = @$change;
		$node->safe_psql('postgres', $sql);
		($shared, $plan) = $check->('plain', $what);
		like($shared, qr/^none/, "$what: the old image is not shared") or diag($plan);
		$load_and_keep->('plain', "$what, reloaded");
	}

	# a VACUUM's tombstones (same generation) under a kept image
	$node->safe_psql('postgres', 'DELETE FROM pi WHERE v % 20 = 3; VACUUM pi');
	is( $node->safe_psql('postgres',
			"SELECT dead > 0 AND pending = 0 FROM eytzgpu_info('pi_k')"),
		't', 'plain: VACUUM left tombstones and no merge');
	$check->('plain', 'after VACUUM');

	# an index-only join over a kept image (the included columns kept too),
	# then a VACUUM that merges (pc has a quarter of tombstones already)
	$load_and_keep->('covering', 'covering');
	my $generation = "SELECT generation FROM eytzgpu_info('pc_k')";
	my $before = $node->safe_psql('postgres', $generation);
	$node->safe_psql('postgres', 'DELETE FROM pc WHERE v % 7 = 0; VACUUM pc');
	isnt($node->safe_psql('postgres', $generation), $before,
		'covering: VACUUM merged into a new generation');
	$check->('covering', 'covering after VACUUM');
	$leader->quit;
}

# ---- 4. a segment of its own
$node->append_conf('postgresql.conf', 'min_dynamic_shared_memory = 0');
$node->restart;
{
	my ($uses, $parallel, $reference, $plan) = run('plain', 'in_place');
	is($uses, 'copied,copied', 'without min_dynamic_shared_memory: copied');
	is($parallel, $reference, "without min_dynamic_shared_memory: parallel answer is PostgreSQL's");
	like($plan, qr/Image Shared: copied/, 'without min_dynamic_shared_memory: the leader copies its image');
}

# ---- 5. the pinned pages (eytzgpu.cpu_view = auto, nothing cached): the
# leader shares no image, each worker pins the index's pages itself
for my $name ('plain', 'left_range')
{
	my $q = $joins{$name};
	my $out = $node->safe_psql(
		'postgres', qq{
		$settings
		SET eytzgpu.cpu_view = auto;
		SET max_parallel_workers_per_gather = 2;
		SET parallel_leader_participation = off;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $q;
		@{[ digest($q) ]}
		SET eytzgpu.enable_join = off;
		@{[ digest($q) ]}
	});
	my ($parallel, $reference) = grep { /^\d+\|-?\d+$/ } split /\n/, $out;
	like($out, qr/Workers Launched: 2/, "pinned, $name: two workers");
	unlike($out, qr/Image Shared: copied|Shared Image: copied/, "pinned, $name: no copy of an image");
	like($out, qr/Device: cpu \(pinned pages\)/, "pinned, $name: the pinned pages answer");
	is($parallel, $reference, "pinned, $name: parallel answer is PostgreSQL's");
}

$node->stop;
done_testing();
