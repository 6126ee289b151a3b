#!/usr/bin/env bash
# scripts/test.sh: build eytzgpu and run its whole test suite.
#
# Works as root or as a user with the packages installed, with or without
# CUDA/a GPU: installs missing Debian packages, builds, installs, runs the
# layout and CPU-reference checks, then pg_regress and the TAP tests against a
# throwaway cluster run by the "postgres" OS user.  GPU kernel tests run only
# where a GPU is present.  Exits non-zero on any failure.
set -euo pipefail
source "$(dirname "$0")/common.sh"

install_deps
echo "== testing against $("$PG_CONFIG" --version) ($PG_CONFIG)"
build_install "$@"

echo "== no circle of calls among the C files"
bash "$REPO/scripts/callgraph_check.sh"
echo "== layout math (CPU)"
make -C "$REPO" -s layoutcheck "$@"
echo "== README's SQL blocks are in test/sql/readme.sql"
make -C "$REPO" -s readmecheck "$@"
if grep -q '^cputest:' "$REPO/cuda/Makefile" 2>/dev/null; then
	echo "== kernel CPU reference"
	make -C "$REPO/cuda" -s cputest
fi
if grep -q '^gputest:' "$REPO/cuda/Makefile" 2>/dev/null && command -v nvidia-smi >/dev/null &&
	nvidia-smi -L >/dev/null 2>&1; then
	echo "== kernels on the GPU"
	make -C "$REPO/cuda" -s gputest
else
	echo "== kernels on the GPU: skipped (no GPU)"
fi

# pg_regress and prove write into the tree: run them in a copy the
# cluster's user owns
WORK=$(mktemp -d /tmp/eytzgpu-test.XXXXXX)
# a straggler of a TAP test's clusters may still be writing there: the
# copy's removal must not fail the run (the trap runs under set -e)
trap 'stop_cluster "$WORK/pg"; rm -rf "$WORK" 2>/dev/null || { sleep 5; rm -rf "$WORK" 2>/dev/null || true; }' EXIT
cp -a "$REPO/." "$WORK/src"
[ "$(id -u)" = 0 ] && chown -R postgres: "$WORK"
# no autovacuum: tests that VACUUM and then read the visibility map or the
# table's size need no concurrent snapshot or lock of its making
PG_OPTS="${PG_OPTS:-} -c autovacuum=off" start_cluster "$WORK/pg" "${EYTZ_TEST_PORT:-54329}"

echo "== pg_regress"
as_pguser make -C "$WORK/src" -s installcheck "$@" || {
	[ -f "$WORK/src/regression.diffs" ] && cat "$WORK/src/regression.diffs"
	exit 1
}
echo "== TAP tests"
as_pguser make -C "$WORK/src" -s prove_installcheck "$@" || {
	for f in "$WORK"/src/tmp_check/log/regress_log_*; do
		[ -f "$f" ] && { echo "--- $f"; tail -50 "$f"; }
	done
	exit 1
}
echo "== all eytzgpu tests passed"
