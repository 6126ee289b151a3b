#!/usr/bin/env bash
# scripts/callgraph_check.sh: no circle of calls among eytzgpu's C files.
#
# A file A calls a file B when A's object leaves a symbol undefined that B's
# object defines (nm).  The files and these edges must form no cycle: no file
# reaches back, through the functions it calls, to a file that calls it
# (issue 14).  Run after a build; exits non-zero and names the loop if there
# is one.  Only objects of src/*.c that exist today are read (a stale object
# of a removed file is ignored); files are named by their subsystem folder.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/../src"

defs=$(mktemp)
edges=$(mktemp)
trap 'rm -f "$defs" "$edges"' EXIT
objs=()
for c in */*.c; do
	o=${c%.c}.o
	[ -f "$o" ] || { echo "callgraph_check: $o missing: build first" >&2; exit 1; }
	objs+=("$o")
	nm --defined-only -g "$o" | awk -v f="${c%.c}" 'NF == 3 { print $3, f }' >>"$defs"
done
for o in "${objs[@]}"; do
	f=${o%.o}
	# every file is a node, also one that calls no other
	echo "$f $f" >>"$edges"
	nm -u "$o" | awk '{ print $NF }' | sort -u |
		join - <(sort -u "$defs") | awk -v f="$f" '$2 != f { print f, $2 }' >>"$edges"
done
if ! out=$(tsort "$edges" 2>&1 >/dev/null) || [ -n "$out" ]; then
	echo "callgraph_check: a circle of calls among the C files:" >&2
	echo "$out" >&2
	exit 1
fi
echo "callgraph_check: $(sort -u "$edges" | awk '$1 != $2' | wc -l) calls between ${#objs[@]} files, no circle"
