#!/usr/bin/env perl
# scripts/readme_check.pl README.md sql/readme.sql: every ```sql block of the
# README must appear verbatim in the regression test that runs them, so the
# README's examples stay the ones the test suite runs.
use strict;
use warnings;

sub slurp
{
	my ($file) = @_;
	open(my $fh, '<', $file) or die "$file: $!\n";
	local $/;
	return <$fh>;
}

my ($readme, $test) = map { slurp($_) } @ARGV[0, 1];
my ($blocks, $missing) = (0, 0);
while ($readme =~ /^```sql\n(.*?)^```$/gms)
{
	my $block = $1;
	$blocks++;
	next if index($test, $block) >= 0;
	$missing++;
	print STDERR "$ARGV[1] lacks this block of $ARGV[0]:\n$block\n";
}
die "no ```sql blocks in $ARGV[0]\n" if $blocks == 0;
exit($missing ? 1 : 0);
