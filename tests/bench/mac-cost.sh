#!/usr/bin/env bash
# What frame MACs cost pfs-meta: the metadata workload of pfs-bench (create,
# stat, unlink, 32 workers) against a local PFS with the MACs pfs-meta
# requires by default, and with them off, in interleaved rounds. Prints per
# round the operations per second and pfs-meta's CPU time for the whole
# run (user + system, from /proc; the same work either way), which a busy
# machine disturbs less than the rates.
#
#   tests/bench/mac-cost.sh [BUILD] [ROUNDS]   (builds pfs-bench if missing)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
rounds=${2:-3}
[ -x "$build/tests/bench/pfs-bench" ] || cmake --build "$build" --target pfs-bench > /dev/null
export PFS_LOCAL_DIR=${PFS_BENCH_DIR:-/tmp/pfs-mac-cost}
export PFS_BUILD=$build
trap '"$top/utils/pfs-local" stop > /dev/null 2>&1 || true' EXIT

cpu_ms() {  # PID: user + system time in ms
  awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"
}

printf '%-6s %-5s %10s %10s %10s %14s\n' round macs create/s stat/s unlink/s "meta cpu ms"
for round in $(seq "$rounds"); do
  for macs in true false; do
    "$top/utils/pfs-local" stop > /dev/null 2>&1 || true
    rm -rf "$PFS_LOCAL_DIR"
    PFS_LOCAL_FRAME_MACS=$macs "$top/utils/pfs-local" start > /dev/null
    meta=$(cat "$PFS_LOCAL_DIR/run/meta1.pid")
    before=$(cpu_ms "$meta")
    "$build/tests/bench/pfs-bench" --config /dev/null --auth-file "$PFS_LOCAL_DIR/etc/auth.secret" \
      --mgmtd 127.0.0.1 --local-dir "$PFS_LOCAL_DIR/localfs" --threads 1 --seq-mib 1 --dl-files 1 \
      --meta-threads 32 --meta-files 500 --json-out "$PFS_LOCAL_DIR/result.json" > /dev/null
    after=$(cpu_ms "$meta")
    python3 - "$PFS_LOCAL_DIR/result.json" "$round" "$macs" $((after - before)) <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(f'{sys.argv[2]:<6} {sys.argv[3]:<5} {r["create_shared_dir"]["pfs"]:10.0f} {r["stat_shared_dir"]["pfs"]:10.0f} '
      f'{r["unlink_shared_dir"]["pfs"]:10.0f} {int(sys.argv[4]):14d}')
PY
  done
done
