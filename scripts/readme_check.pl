#!/usr/bin/env perl
# scripts/readme_check.pl README.md [docs/*.md ...] test/sql/readme.sql: every
# ```sql block of the README and the docs must appear verbatim in the
# regression test that runs them (the last argument), so the examples stay
# the ones the test suite runs.
use strict;
use warnings;

sub slurp
{
	my ($file) = @_;
	open(my $fh, '<', $file) or die "$file: $!\n";
	local $/;
	return <$fh>;
}

my $test_file = pop @ARGV;
my $test = slurp($test_file);
my ($blocks, $missing) = (0, 0);
foreach my $doc (@ARGV)
{
	my $text = slurp($doc);
	while ($text =~ /^```sql\n(.*?)^```$/gms)
	{
		my $block = $1;
		$blocks++;
		next if index($test, $block) >= 0;
		$missing++;
		print STDERR "$test_file lacks this block of $doc:\n$block\n";
	}
}
die "no ```sql blocks in @ARGV\n" if $blocks == 0;
exit($missing ? 1 : 0);
