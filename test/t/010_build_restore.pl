# t/010_build_restore.pl: pg_dump -Fc and pg_restore keep eytzgpu indexes.
#
# The server runs with maintenance_work_mem = 1MB, far less than the
# in-memory sort of these indexes needs, so their builds on restore take the
# spilled path (tuplesort); pg_restore must report no error, and the
# restored indexes must be valid, pass eytzgpu_verify(), keep their options
# and answer every query like a sequential scan.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('restore');
$node->init;
$node->append_conf('postgresql.conf', 'maintenance_work_mem = 1MB');
$node->start;

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION eytzgpu;
	SELECT setseed(0.3);
	CREATE TABLE t (k int4, d timestamptz, v int4);
	INSERT INTO t SELECT CASE WHEN g % 40 = 0 THEN NULL ELSE (random() * 200000)::int4 - 100000 END,
		'2020-01-01'::timestamptz + random() * interval '1000 days', g
	  FROM generate_series(1, 120000) g;
	CREATE INDEX t_k ON t USING eytzgpu (k);
	CREATE INDEX t_d ON t USING eytzgpu (d) WITH (layout = eks, fanout = 17, pending_limit = 1000);
	INSERT INTO t SELECT g, now(), -g FROM generate_series(1, 100) g;
});

my $dump = $node->basedir . '/t.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
my $ok = $node->run_log(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), $dump ]);
ok($ok, 'pg_restore without errors');

is( $node->safe_psql(
		'restored', q{SELECT string_agg(c.relname || ':' || i.indisvalid, ',' ORDER BY c.relname)
		  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		 WHERE i.indrelid = 't'::regclass}),
	't_d:true,t_k:true',
	'both indexes restored and valid');

foreach my $idx ('t_k', 't_d')
{
	is($node->safe_psql('restored', "SELECT eytzgpu_verify('$idx')"),
		't', "$idx: eytzgpu_verify");
	is( $node->safe_psql(
			'restored', "SELECT layout, fanout, entries, pending FROM eytzgpu_info('$idx')"),
		$node->safe_psql(
			'postgres', "SELECT layout, fanout, entries + pending, 0 FROM eytzgpu_info('$idx')"),
		"$idx: options kept, every entry in the layout");
}
is( $node->safe_psql(
		'restored', "SELECT entries > 32768 FROM eytzgpu_info('t_k')"),
	't', 'the build needed more than maintenance_work_mem');

my @queries = (
	'SELECT count(*), sum(v) FROM t WHERE k = 77',
	'SELECT count(*), sum(v) FROM t WHERE k BETWEEN -500 AND 500',
	'SELECT count(*), sum(v) FROM t WHERE k = ANY (ARRAY[1, 2, 3, 99999, -100000])',
	"SELECT count(*), sum(v) FROM t WHERE d < '2020-03-01'",
	"SELECT count(*), sum(v) FROM t WHERE d BETWEEN '2021-01-01' AND '2021-01-31'",);
foreach my $q (@queries)
{
	my $ref = $node->safe_psql('restored',
		"SET enable_indexscan = off; SET enable_bitmapscan = off; $q");
	my $got = $node->safe_psql('restored', "SET enable_seqscan = off; $q");
	is($got, $ref, "restored: $q");
	like(
		$node->safe_psql(
			'restored', "SET enable_seqscan = off; EXPLAIN (COSTS OFF) $q"),
		qr/t_[kd]/,
		"restored: the index answers $q");
}

$node->stop;
done_testing();
