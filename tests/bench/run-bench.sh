#!/usr/bin/env bash
# make bench: a throw-away local PFS (utils/pfs-local) and pfs-bench against
# it, with the local comparison on the same file system as the targets.
# Results: a table on stdout and build/bench-results.json.
#
#   tests/bench/run-bench.sh [BUILD] [PFS-BENCH OPTIONS...]
#
# The storage servers use O_DIRECT chunk files (direct-io = true; set
# PFS_BENCH_DIRECT_IO=false for the page cache). Without options pfs-bench
# runs three rounds (each figure their median), the metadata workload with
# 32 concurrent workers and, as root, drops the kernel's caches before every
# read and stat phase (data sets larger than memory); options given replace
# those.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
export PFS_LOCAL_DIR=${PFS_BENCH_DIR:-/tmp/pfs-bench}
export PFS_BUILD=$build
export PFS_LOCAL_DIRECT_IO=${PFS_BENCH_DIRECT_IO:-true}
args=("${@:2}")
if [ ${#args[@]} -eq 0 ]; then
  args=(--meta-threads 32 --rounds 3)
  [ "$(id -u)" -ne 0 ] || args+=(--drop-caches)
fi
"$top/utils/pfs-local" stop > /dev/null 2>&1 || true
rm -rf "$PFS_LOCAL_DIR"
trap '"$top/utils/pfs-local" stop > /dev/null 2>&1 || true' EXIT
"$top/utils/pfs-local" start > /dev/null
"$build/tests/bench/pfs-bench" --config /dev/null --auth-file "$PFS_LOCAL_DIR/etc/auth.secret" \
  --mgmtd 127.0.0.1 --local-dir "$PFS_LOCAL_DIR/localfs" --json-out "$build/bench-results.json" \
  --note "storage direct-io = $PFS_LOCAL_DIRECT_IO" "${args[@]}"
echo "results: $build/bench-results.json"
