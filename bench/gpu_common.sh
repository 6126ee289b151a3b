# bench/gpu_common.sh: sourced by bench/service_gpu.sh and
# bench/parallel_gpu.sh on the GPU machine: the carried PostgreSQL bundle's
# environment, no server left from a previous call, the carried eytzgpu.so
# installed (see bench/gpu_run.sh), $OUT made, and the helpers sql and
# restart (pg_ctl restart with the given server options).
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
for f in .gpu/pgenv.sh ../../.gpu/pgenv.sh; do [ -f "$f" ] && { source "$f"; break; }; done
pg_stop >/dev/null 2>&1; rm -rf /tmp/pgdata
cp eytzgpu.so "$($PG_CONFIG --pkglibdir)/" &&
	cp eytzgpu.control eytzgpu--*.sql "$($PG_CONFIG --sharedir)/extension/" || exit 1
nvidia-smi -L >"$OUT/gpu.txt" 2>&1
PSQL="psql -X -q -v ON_ERROR_STOP=1"
sql() { $PSQL -At -c "$1"; }
restart() {
	su postgres -s /bin/bash -c "env PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH TZ=UTC pg_ctl -D /tmp/pgdata -l /tmp/pg.log -o '-k /tmp/pgsock -c listen_addresses= $*' -w restart" >/dev/null
}
