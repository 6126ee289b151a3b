# t/004_am_corruption.pl: eytzgpu on damaged pages.
#
# With the server stopped, one field of the index file is overwritten (the
# metapage's keys_per_page or key_width, a key, a page type, a TID offset in
# the layout or in a pending entry, a cycle in the pending list).  Then every
# scan must either answer like a sequential scan or fail with XX001/XX002
# (never XX000, a wrong answer or a crash), and so must the EytzGPU Join over
# it, through the index pages (few outer rows) and through the CPU image
# (many); eytzgpu_verify() must report the
# damage, and eytzgpu_merge() must refuse to turn it into a valid-looking
# index.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('corrupt');
# without data checksums (18's initdb turns them on; 15's knows no such
# parameter and has them off): the damage must reach eytzgpu's own checks
$node->init(no_data_checksums => 1);
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.3);
	CREATE TABLE t (k int4, v int4);
	INSERT INTO t SELECT (random() * 2000)::int4, g FROM generate_series(1, 20000) g;
	CREATE INDEX t_idx ON t USING eytzgpu (k) WITH (layout = eks, fanout = 5, pending_limit = 100000);
	INSERT INTO t SELECT (random() * 2000)::int4, -g FROM generate_series(1, 1500) g;
	CREATE TABLE o_few (k int4);
	INSERT INTO o_few VALUES (NULL), (7), (1999), (2050);
	CREATE TABLE o_many (k int4);
	INSERT INTO o_many SELECT (random() * 2100)::int4 FROM generate_series(1, 40000) g;
	ANALYZE;
});
my $file = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('t_idx')");
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('t_idx', true)"),
	't', 'the intact index passes');

my @queries = (
	'SELECT count(*), sum(v) FROM t WHERE k = 7',
	'SELECT count(*), sum(v) FROM t WHERE k BETWEEN 100 AND 900',
	'SELECT count(*), sum(v) FROM t WHERE k = ANY (ARRAY[1, 5, 50, 1999, -3])',
	'SELECT count(*), sum(v) FROM t WHERE k > 1990',);
my %reference;
$reference{$_} = $node->safe_psql('postgres',
	"SET enable_indexscan = off; SET enable_bitmapscan = off; $_")
  foreach @queries;

# the join over the index, answered through the pages, through the image and
# through the pages pinned in shared buffers
my $join_settings = 'SET enable_hashjoin = off; SET enable_mergejoin = off; '
  . 'SET enable_nestloop = off; SET max_parallel_workers_per_gather = 0; '
  . 'SET eytzgpu.device = cpu; SET eytzgpu.image_cache_limit = 0;';
my %joins = (
	'cpu (index pages)' =>
	  'SELECT count(*), sum(t.v) FROM o_few o JOIN t ON t.k = o.k',
	'cpu' => 'SELECT count(*), sum(t.v) FROM o_many o JOIN t ON t.k = o.k',
	'cpu (pinned pages)' =>
	  'SELECT count(*), sum(t.v) FROM o_many o JOIN t ON t.k = o.k',);
my %view = (
	'cpu (index pages)' => 'SET eytzgpu.cpu_view = image;',
	'cpu' => 'SET eytzgpu.cpu_view = image;',
	'cpu (pinned pages)' => 'SET eytzgpu.cpu_view = pinned;',);
foreach my $device (sort keys %joins)
{
	my $q = $joins{$device};
	my $plan = $node->safe_psql('postgres',
		"$join_settings $view{$device} EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $q");
	like($plan, qr/Device: \Q$device\E\n/, "the join reads the index as $device");
	$reference{$q} = $node->safe_psql('postgres',
		"SET eytzgpu.enable_join = off; $q");
}

$node->stop;
my $pristine = slurp_file($file);

# the metapage's fields (EytzMetaPageData after the 24-byte page header)
my $PAGE = 8192;
my $META = 24;
sub meta_u32
{
	my ($off) = @_;
	return unpack('L<', substr($pristine, $META + $off, 4));
}
my $keys_start = meta_u32(48);
my $tids_start = meta_u32(56);
my $pending_head = meta_u32(64);
my $pending_tail = meta_u32(68);
ok($pending_head != $pending_tail, 'the pending list has several pages');

# offset of a page's special space (EytzPageOpaqueData: next, count, flags)
my $SPECIAL = $PAGE - 16;

my @cases = (
	[ 'keys_per_page = 0', $META + 44, pack('L<', 0) ],
	[ 'key_width = 1', $META + 8, pack('S<', 1) ],
	[ 'fan-out 4', $META + 12, pack('L<', 4) ],
	[ 'region past the end', $META + 56, pack('L<', 100000) ],
	[ 'pending head 0', $META + 64, pack('L<', 0) ],
	[ 'root key set to the maximum', $keys_start * $PAGE + 24, pack('L<', 0xFFFFFFFF) ],
	[ 'key page typed free', $keys_start * $PAGE + $SPECIAL + 6, pack('S<', 5) ],
	[ 'TID page typed pending', $tids_start * $PAGE + $SPECIAL + 6, pack('S<', 4) ],
	[ 'TID offset 32767 in the layout', $tids_start * $PAGE + 24 + 4, pack('S<', 32767) ],
	[ 'TID offset 0 in a pending entry', $pending_head * $PAGE + 24 + 12, pack('S<', 0) ],
	[ 'pending entry count too large', $pending_head * $PAGE + $SPECIAL + 4, pack('S<', 9999) ],
	[ 'cycle in the pending list', $pending_tail * $PAGE + $SPECIAL, pack('L<', $pending_head) ],);

# SQLSTATE of the error a statement raises, or '' with its output
sub run
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ($1, $out) if $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ('', $out);
}

foreach my $case (@cases)
{
	my ($what, $off, $bytes) = @$case;
	my $damaged = $pristine;
	substr($damaged, $off, length($bytes)) = $bytes;
	open(my $fh, '>', $file) or die "open $file: $!";
	binmode $fh;
	print $fh $damaged;
	close $fh;
	$node->start;

	foreach my $q (@queries)
	{
		foreach my $mode ('enable_bitmapscan = off', 'enable_indexscan = off')
		{
			my ($state, $out) = run("SET enable_seqscan = off; SET $mode; $q");
			ok( $state eq ''
				? $out eq $reference{$q}
				: $state =~ /^XX00[12]$/,
				"$what: $mode: $q answers right or reports corruption ($state)");
		}
	}
	foreach my $device (sort keys %joins)
	{
		my $q = $joins{$device};
		my ($state, $out) = run("$join_settings $view{$device} $q");
		ok( $state eq ''
			? $out eq $reference{$q}
			: $state =~ /^XX00[12]$/,
			"$what: the join through $device answers right or reports corruption ($state)");
	}
	my ($state) = run("SELECT eytzgpu_verify('t_idx')");
	is($state, 'XX002', "$what: eytzgpu_verify reports it");
	($state) = run("SELECT eytzgpu_merge('t_idx')");
	like($state, qr/^XX00[12]$/, "$what: eytzgpu_merge refuses");
	($state) = run("SELECT eytzgpu_verify('t_idx')");
	is($state, 'XX002', "$what: still reported after the merge attempt");
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "$what: the server is up");
	$node->stop;
}

# the intact file again: all is well
open(my $fh, '>', $file) or die "open $file: $!";
binmode $fh;
print $fh $pristine;
close $fh;
$node->start;
is($node->safe_psql('postgres', "SELECT eytzgpu_verify('t_idx', true)"),
	't', 'the restored index passes');

# heapallindexed: an entry that lost its heap tuple's key is found missing
$node->safe_psql('postgres', 'CREATE TABLE h (k int4)');
$node->safe_psql('postgres',
	'INSERT INTO h SELECT g FROM generate_series(1, 3000) g');
$node->safe_psql('postgres',
	'CREATE INDEX h_idx ON h USING eytzgpu (k) WITH (layout = ebs)');
my $hfile = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('h_idx')");
$node->stop;
my $h = slurp_file($hfile);
my $htids = unpack('L<', substr($h, $META + 56, 4));
# swap the offsets of the first two layout TIDs: both still point at live
# tuples, but under each other's keys
my $a = substr($h, $htids * $PAGE + 24 + 4, 2);
my $b = substr($h, $htids * $PAGE + 24 + 6 + 4, 2);
substr($h, $htids * $PAGE + 24 + 4, 2) = $b;
substr($h, $htids * $PAGE + 24 + 6 + 4, 2) = $a;
open($fh, '>', $hfile) or die "open $hfile: $!";
binmode $fh;
print $fh $h;
close $fh;
$node->start;
my ($state) = run("SELECT eytzgpu_verify('h_idx', true)");
is($state, 'XX002', 'heapallindexed finds the tuples whose entries are wrong');

# INCLUDE columns: a changed value, a value page of the wrong type, a NULL
# bit over a value
$node->safe_psql('postgres', 'CREATE TABLE hi (k int4, v int8)');
$node->safe_psql('postgres',
	'INSERT INTO hi SELECT g, g * 7 + 1 FROM generate_series(1, 3000) g');
$node->safe_psql('postgres',
	'CREATE INDEX hi_idx ON hi USING eytzgpu (k) INCLUDE (v) WITH (layout = ebs)');
$node->safe_psql('postgres', 'VACUUM hi');
my $ios_settings = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $ios = "$ios_settings SELECT sum(v) FROM hi WHERE k BETWEEN 1 AND 3000";
my $ios_sum = $node->safe_psql('postgres', $ios);
is($ios_sum, '31513500', 'the index-only scan of the INCLUDE index');
like(
	$node->safe_psql(
		'postgres',
		"$ios_settings EXPLAIN (COSTS OFF) SELECT sum(v) FROM hi WHERE k BETWEEN 1 AND 3000"),
	qr/Index Only Scan using hi_idx/,
	'it is an index-only scan');
my $hifile = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('hi_idx')");
$node->stop;
my $hi = slurp_file($hifile);
# the region: keys, TIDs, then the values of v and its NULL bitmap
my $values_start = unpack('L<', substr($hi, $META + 56, 4)) +
  unpack('L<', substr($hi, $META + 60, 4));
my $nulls_start = $values_start + 3;    # 3000 int8 values: 1019 a page
# what a case damages: a value only the heap can tell wrong, a page every
# scan checks, or a bit only eytzgpu_verify() can tell (a value under a NULL)
my @include_cases = (
	[ 'an INCLUDE value changed', $values_start * $PAGE + 24, pack('q<', 12345), 'heap' ],
	[ 'an INCLUDE value page typed TID', $values_start * $PAGE + $SPECIAL + 6, pack('S<', 3), 'scan' ],
	[ 'a NULL bit over a value', $nulls_start * $PAGE + 24, pack('C', 1), 'verify' ],);
foreach my $case (@include_cases)
{
	my ($what, $off, $bytes, $found_by) = @$case;
	my $heap_only = $found_by eq 'heap';
	my $damaged = $hi;
	substr($damaged, $off, length($bytes)) = $bytes;
	open($fh, '>', $hifile) or die "open $hifile: $!";
	binmode $fh;
	print $fh $damaged;
	close $fh;
	$node->start;
	($state) = run("SELECT eytzgpu_verify('hi_idx', true)");
	is($state, 'XX002', "$what: eytzgpu_verify(heapallindexed) reports it");
	($state) = run("SELECT eytzgpu_verify('hi_idx')");
	is($state, $heap_only ? '' : 'XX002',
		"$what: eytzgpu_verify without the heap " . ($heap_only ? 'cannot know' : 'reports it'));
	if ($found_by eq 'scan')
	{
		my ($qstate, $out) = run($ios);
		ok( $qstate eq '' ? $out eq $ios_sum : $qstate eq 'XX002',
			"$what: the index-only scan answers right or reports corruption ($qstate)");
	}
	$node->stop;
}

done_testing();
