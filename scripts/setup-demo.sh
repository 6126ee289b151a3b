#!/usr/bin/env bash
# scripts/setup-demo.sh: install what is missing, build and install eytzgpu,
# start a throwaway PostgreSQL cluster (Debian's 15, or the one PG_CONFIG
# names), and run a demo (scripts/demo.sql): a range query and a join over an
# eytzgpu index, beside their btree equivalents and the plan PostgreSQL picks
# by itself, with what ran (GPU or CPU) and how long it took.
#
#   bash scripts/setup-demo.sh [ROWS]      (default 2,000,000 inner rows)
#
# Works as root (the server runs as the OS user "postgres") and without a GPU.
# PGBIN (the server's bin directory), PG_CONFIG, NO_CUDA and CUDA_HOME are
# taken from the environment.  The cluster is stopped and removed at the end.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ROWS=${1:-2000000}

install_deps
build_install
report_cuda

DEMO=$(mktemp -d /tmp/eytzgpu-demo.XXXXXX)
trap 'stop_cluster "$DEMO"; rm -rf "$DEMO"' EXIT
PG_OPTS="-c shared_buffers=1GB -c maintenance_work_mem=1GB -c max_wal_size=4GB" \
	start_cluster "$DEMO" 54339
echo "== cluster running in $DEMO (port 54339)"

as_pguser psql -X -q -v ON_ERROR_STOP=1 -v rows="$ROWS" -f "$REPO/scripts/demo.sql"
