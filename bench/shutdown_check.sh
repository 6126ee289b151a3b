#!/usr/bin/env bash
# bench/shutdown_check.sh: issue 30, item 3.  Does any process of a server
# that preloads eytzgpu die of a signal when it shuts down?  Once, on the
# H100 machine, pg_ctl stop -m fast after a long differential run that was
# cut off mid-join logged "autovacuum launcher process ... was terminated by
# signal 11".  Each round starts the server (shared_preload_libraries =
# 'eytzgpu', the service on DEVICE, autovacuum every second), runs for
# SECONDS: sessions that join through the service at small batch sizes
# (many requests), sessions that CREATE and DROP eytzgpu indexes and change
# rows (invalidations and autovacuum work for every process), one long join
# whose client is killed (cut off mid-join), then stops the server with
# pg_ctl stop -m fast while the joins run, and looks in the server log for
# a process that died of a signal.
#
#   bench/shutdown_check.sh [ROUNDS [SECONDS]]        (default 5 20)
#
# DEVICE=gpu|cpu (default gpu where nvidia-smi lists one, else cpu).
# GDB=1 attaches gdb (when found) to the autovacuum launcher and the service
# before each stop and prints their stacks if one gets a signal.  Core
# files are allowed (ulimit -c): one found in the data directory is
# described with gdb when there is one, and kept in $OUT.
# VALGRIND=1 runs the server under valgrind memcheck (slow; no GPU: CUDA
# does not run under it) and lists the errors with a frame in eytzgpu.so.
# On the GPU machine, through the device tool, from the repository root with
# .gpu (the PostgreSQL bundle) and eytzgpu.so (built with CUDA) carried:
#   source .gpu/pgenv.sh && cp eytzgpu.so $($PG_CONFIG --pkglibdir)/ &&
#   cp eytzgpu.control eytzgpu--*.sql $($PG_CONFIG --sharedir)/extension/ &&
#   GDB=1 bash bench/shutdown_check.sh 10 30
# Before each stop it also lists the processes that have the CUDA driver
# (libcuda) mapped: only the service, and backends that built an index on
# the GPU, should; the postmaster never (its children would inherit the
# state).
# Exits 1 when a process died of a signal (or valgrind found errors).
set -uo pipefail
ROUNDS=${1:-5}
SECONDS_PER_ROUND=${2:-20}
OUT=${OUT:-/tmp/shutdown_check}
PORT=${PORT:-54377}
if [ -z "${DEVICE:-}" ]; then
	DEVICE=cpu
	command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && DEVICE=gpu
fi
BIN=$(pg_config --bindir)
rm -rf "$OUT" && mkdir -p "$OUT/sock" && chmod -R 777 "$OUT"
# as the server's OS user, core files allowed (runuser's PAM resets the limit)
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- env PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
			bash -c 'ulimit -c unlimited 2>/dev/null; exec "$@"' as_pg "$@"
	else
		bash -c 'ulimit -c unlimited 2>/dev/null; exec "$@"' as_pg "$@"
	fi
}
export PGHOST=$OUT/sock PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
PSQL="psql -X -q -v ON_ERROR_STOP=1"
DATA=$OUT/data
as_pg "$BIN/initdb" -D "$DATA" -U postgres -A trust --no-sync >"$OUT/initdb.log" 2>&1 ||
	{ cat "$OUT/initdb.log"; exit 1; }
cat >>"$DATA/postgresql.conf" <<EOF
port = $PORT
unix_socket_directories = '$OUT/sock'
listen_addresses = ''
fsync = off
max_connections = 60
shared_preload_libraries = 'eytzgpu'
eytzgpu.service_device = '$DEVICE'
eytzgpu.service_slot_buffer = '64kB'
autovacuum = on
autovacuum_naptime = 1s
autovacuum_vacuum_threshold = 50
autovacuum_analyze_threshold = 50
log_autovacuum_min_duration = 0
log_line_prefix = '%m [%p] %b '
EOF

echo "core_pattern: $(cat /proc/sys/kernel/core_pattern 2>/dev/null)" >"$OUT/cores.txt"

start() {
	if [ "${VALGRIND:-0}" = 1 ]; then
		as_pg bash -c "valgrind --quiet --trace-children=yes --track-origins=no --error-limit=no \
			--log-file=$OUT/vg.%p $BIN/postgres -D $DATA >>$OUT/server.log 2>&1 &"
		for _ in $(seq 1 240); do $BIN/pg_isready -q && return 0; sleep 1; done
		return 1
	fi
	as_pg "$BIN/pg_ctl" -D "$DATA" -l "$OUT/server.log" -w start >/dev/null
}

start || { tail -30 "$OUT/server.log"; exit 1; }
$PSQL <<'EOF' >"$OUT/load.log" 2>&1
CREATE EXTENSION eytzgpu;
SELECT setseed(0.3);
CREATE TABLE t (id int8 GENERATED ALWAYS AS IDENTITY, k int4);
INSERT INTO t (k) SELECT (random() * 100000)::int4 FROM generate_series(1, 200000);
CREATE INDEX t_k ON t USING eytzgpu (k);
CREATE TABLE o AS SELECT g AS id, (random() * 120000)::int4 AS k FROM generate_series(1, 30000) g;
ANALYZE t, o;
-- a session's round of changes: an index built and dropped, rows changed
CREATE FUNCTION ddl_round(c int, k int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE IF NOT EXISTS c_%s (k int4)', c);
	EXECUTE format('INSERT INTO c_%s SELECT %s + g FROM generate_series(1, 2000) g', c, k);
	EXECUTE format('CREATE INDEX IF NOT EXISTS c_%s_k ON c_%s USING eytzgpu (k)', c, c);
	EXECUTE format('DELETE FROM c_%s WHERE k %% 3 = 0', c);
	DELETE FROM t WHERE id IN (SELECT id FROM t ORDER BY random() LIMIT 20);
	INSERT INTO t (k) SELECT (random() * 100000)::int4 FROM generate_series(1, 20);
	EXECUTE format('DROP INDEX c_%s_k', c);
END $$;
EOF
cat >"$OUT/join.sql" <<'EOF'
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
\set b random(1, 4000)
SET eytzgpu.batch_size = :b;
SELECT count(*) FROM o JOIN t ON t.k = o.k;
EOF
cat >"$OUT/ddl.sql" <<'EOF'
\set k random(1, 100000)
SELECT ddl_round(:client_id, :k);
EOF

attach_gdb() {
	command -v gdb >/dev/null || return 0
	local p pm
	pm=$(head -1 "$DATA/postmaster.pid")
	for p in $(pgrep -P "$pm" -f "autovacuum launcher") $(pgrep -P "$pm" -f "eytzgpu service"); do
		gdb -q -batch -p "$p" -ex 'handle SIGURG SIGUSR1 SIGUSR2 SIGTERM SIGINT SIGHUP SIGQUIT SIGALRM SIGPIPE SIGCHLD nostop noprint pass' \
			-ex cont -ex 'info threads' -ex 'thread apply all bt' >"$OUT/gdb.$p.txt" 2>&1 &
	done
	sleep 2
}

fail=0
for round in $(seq 1 "$ROUNDS"); do
	[ "$round" = 1 ] || start || { tail -30 "$OUT/server.log"; exit 1; }
	before=$(wc -l <"$OUT/server.log")
	pgbench -n -c 6 -j 2 -T "$SECONDS_PER_ROUND" -f "$OUT/join.sql@3" -f "$OUT/ddl.sql@1" \
		>"$OUT/bench.$round.log" 2>&1 &
	bench=$!
	# a long join of many requests, its client killed: the backend runs on
	PGOPTIONS="-c enable_hashjoin=off -c enable_mergejoin=off -c enable_nestloop=off -c eytzgpu.batch_size=1" \
		$PSQL -c "SELECT count(*) FROM o a JOIN t ON t.k = a.k, generate_series(1, 50)" >/dev/null 2>&1 &
	long=$!
	sleep "$SECONDS_PER_ROUND"
	kill -9 "$long" 2>/dev/null
	hits=$($PSQL -At -c "SELECT state || ', ' || hits || ' requests answered' FROM eytzgpu_service_status()")
	pm=$(head -1 "$DATA/postmaster.pid")
	cuda_procs=$(for p in "$pm" $(pgrep -P "$pm"); do
		grep -q libcuda "/proc/$p/maps" 2>/dev/null && echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-60)"
	done)
	echo "round $round: with libcuda mapped: ${cuda_procs:-none}" >>"$OUT/cuda_procs.txt"
	grep -q libcuda "/proc/$pm/maps" 2>/dev/null && { echo "round $round: the postmaster has libcuda mapped"; fail=1; }
	[ "${GDB:-0}" = 1 ] && attach_gdb
	as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 300 stop >/dev/null
	wait "$bench" 2>/dev/null
	wait 2>/dev/null
	died=$(tail -n +"$before" "$OUT/server.log" | grep -E "terminated by signal|was terminated by exception")
	echo "round $round: service $hits; $([ -n "$died" ] && echo "DIED: $died" || echo "no process died")"
	[ -n "$died" ] && fail=1
done
grep -E "terminated by signal|PANIC|TRAP" "$OUT/server.log" && fail=1
if [ "${VALGRIND:-0}" = 1 ]; then
	for f in "$OUT"/vg.*; do
		[ -s "$f" ] || continue
		# PostgreSQL's own (WAL and relcache init file padding) and ld.so's are
		# known: an error counts when a frame of it is in eytzgpu.so (with
		# the CUDA runtime), or a process died
		if grep -qE "eytzgpu\.so|\(eytz[a-z]*\.c:|\.cu:|Process terminating" "$f"; then
			echo "--- $f"
			head -60 "$f"
			fail=1
		fi
	done
fi
for core in "$DATA"/core*; do
	[ -f "$core" ] || continue
	fail=1
	echo "--- $core" | tee -a "$OUT/cores.txt"
	command -v gdb >/dev/null &&
		gdb -q -batch -ex 'info threads' -ex 'thread apply all bt' "$BIN/postgres" "$core" 2>&1 | tee -a "$OUT/cores.txt"
	mv "$core" "$OUT/"
done
for f in "$OUT"/gdb.*.txt; do
	[ -f "$f" ] && grep -q "SIGSEGV\|SIGBUS\|SIGABRT" "$f" && { echo "--- $f"; cat "$f"; fail=1; }
done
echo "logs: $OUT ($([ $fail = 0 ] && echo 'no process died' || echo 'FAILED'))"
exit $fail
