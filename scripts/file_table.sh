#!/usr/bin/env bash
# scripts/file_table.sh: the table of source files in docs/development.md,
# made from each file's purpose comment (its first sentence) and its length,
# so that the table says what the files say of themselves.
#
#   bash scripts/file_table.sh [DIR ...]      (default: src cuda)
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(src cuda)
echo "| file | what it holds | lines |"
echo "|---|---|---:|"
for d in "${dirs[@]}"; do
	for f in $(git ls-files "$d" | grep -E '\.(c|h|cu|cuh)$' | grep -v '/test/\|/bench/'); do
		# the lines after the file's name up to the first blank comment line
		what=$(awk 'NR == 1 { next } NR == 2 { next } /^ \*\s*$/ || /^ \*\// { exit }
			{ sub(/^ \*[ \t]*/, ""); printf "%s ", $0 }' "$f" |
			sed -E 's/ +$//; s/^(([^.]|\.[^ ])*\.)( .*)?$/\1/')
		echo "| \`$f\` | $what | $(wc -l <"$f") |"
	done
done
