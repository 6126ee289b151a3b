#!/usr/bin/env bash
# scripts/sanitize_check.sh: does any process of a server die of eytzgpu, or
# trip a sanitizer, with the service preloaded?  (Issue 30, item 3: an
# autovacuum launcher once died of SIGSEGV at shutdown on the GPU machine.)
#
# Builds the C sources with gcc's sanitizers (make SANITIZE=..., kept CUDA
# objects are reused), installs into the PostgreSQL of PG_CONFIG, and runs
# the whole TAP suite with every test cluster preloading eytzgpu and its
# service on DEVICE (TEMP_CONFIG; tests that set their own configuration
# override it), so that every cluster's processes (postmaster children that
# inherit the library: autovacuum, checkpointer, walsender, backends, the
# service) start and stop with it many times, under crashes, standbys,
# restores and cancels.  Then it reads every server log for a process that
# died of a signal other than the tests' own SIGKILL/SIGQUIT, and the
# sanitizer's logs for reports.  Exits 1 on either.
#
#   PG_CONFIG=... DEVICE=cpu|gpu SANITIZE=undefined OUT=dir bash scripts/sanitize_check.sh [make args]
#
# On the GPU machine: source .gpu/pgenv.sh first, set PERL5LIB to a copy of
# IPC::Run, and give PREBUILT an eytzgpu.so built here with CUDA and
# SANITIZE (the kernels take minutes to compile): it is installed as it is.
set -uo pipefail
source "$(dirname "$0")/common.sh"
SANITIZE=${SANITIZE:-undefined}
DEVICE=${DEVICE:-cpu}
OUT=${OUT:-/tmp/eytzgpu-sanitize}
mkdir -p "$OUT/sanitizer" && chmod -R a+rwX "$OUT"

WORK=$(mktemp -d /tmp/eytzgpu-sanitize.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp -a "$REPO/." "$WORK/src"
if [ -n "${PREBUILT:-}" ]; then
	install -m 755 "$PREBUILT" "$("$PG_CONFIG" --pkglibdir)/eytzgpu.so" &&
		cp "$REPO"/eytzgpu.control "$REPO"/eytzgpu--*.sql "$("$PG_CONFIG" --sharedir)/extension/" ||
		exit 1
else
	rm -f "$WORK"/src/src/*/*.o "$WORK"/src/src/*/*.bc "$WORK"/src/eytzgpu.so
	make -C "$WORK/src" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" SANITIZE="$SANITIZE" with_llvm=no "$@" ||
		exit 1
	make -C "$WORK/src" -s install PG_CONFIG="$PG_CONFIG" SANITIZE="$SANITIZE" with_llvm=no "$@" >/dev/null ||
		exit 1
fi
[ "$(id -u)" = 0 ] && chown -R postgres: "$WORK"

cat >"$WORK/preload.conf" <<EOF
shared_preload_libraries = 'eytzgpu'
eytzgpu.service_device = '$DEVICE'
EOF
# one report file per process; recovered (not aborting) so that a report
# and the test that caused it are both seen
SAN_OPTS="print_stacktrace=1:log_path=$OUT/sanitizer/report"
echo "== TAP suite, eytzgpu built with -fsanitize=$SANITIZE, service preloaded on $DEVICE"
as_pguser env TEMP_CONFIG="$WORK/preload.conf" UBSAN_OPTIONS="$SAN_OPTS" \
	ASAN_OPTIONS="$SAN_OPTS:detect_leaks=0:protect_shadow_gap=0" PERL5LIB="${PERL5LIB:-}" \
	LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
	make -C "$WORK/src" -s prove_installcheck PG_CONFIG="$PG_CONFIG" SANITIZE="$SANITIZE" "$@" \
	>"$OUT/prove.log" 2>&1
tap=$?
tail -5 "$OUT/prove.log"
cp -a "$WORK/src/tmp_check/log" "$OUT/tap_logs" 2>/dev/null

status=0
# SIGKILL (9) and SIGQUIT (3) are the tests' own (crash recovery, immediate stops)
died=$(grep -HE "terminated by signal ([0-24-8]|1[0-9]|[2-9][0-9])\b" "$OUT"/tap_logs/*.log 2>/dev/null)
if [ -n "$died" ]; then
	echo "== processes that died of a signal:"
	echo "$died"
	status=1
else
	echo "== no server process died of a signal (SIGKILL/SIGQUIT of the tests aside)"
fi
reports=$(cat "$OUT"/sanitizer/report* 2>/dev/null | grep -E "runtime error|ERROR: AddressSanitizer" | sort | uniq -c)
if [ -n "$reports" ]; then
	echo "== sanitizer reports ($OUT/sanitizer):"
	echo "$reports"
	status=1
else
	echo "== no sanitizer report"
fi
[ $tap = 0 ] || echo "== the TAP suite failed with the preloaded service: $OUT/prove.log"
exit $((status | (tap != 0)))
