#!/usr/bin/env bash
# make bench: a throw-away local PFS (utils/pfs-local) and pfs-bench against
# it, with the local comparison on the same file system as the targets.
# Results: a table on stdout and build/bench-results.json.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
export PFS_LOCAL_DIR=${PFS_BENCH_DIR:-/tmp/pfs-bench}
export PFS_BUILD=$build
"$top/utils/pfs-local" stop > /dev/null 2>&1 || true
rm -rf "$PFS_LOCAL_DIR"
trap '"$top/utils/pfs-local" stop > /dev/null 2>&1 || true' EXIT
"$top/utils/pfs-local" start > /dev/null
"$build/tests/bench/pfs-bench" --config /dev/null --auth-file "$PFS_LOCAL_DIR/etc/auth.secret" \
  --mgmtd 127.0.0.1 --local-dir "$PFS_LOCAL_DIR/localfs" --json-out "$build/bench-results.json" "${@:2}"
echo "results: $build/bench-results.json"
