#!/usr/bin/env bash
# make bench-kernel: boots the QEMU guest (run-guest.sh) and runs
# bench-guest.sh there: pfs-bench on pfs.ko, in-guest NFSv4.2 and the local
# file system, side by side. A benchmark, not a test (not in ctest).
# Results: the table on the console and BUILD/kernel-bench-results.json.
#
#   tests/kernel/bench.sh [BUILD] [--systems pfs,nfs,local] [PFS-BENCH OPTIONS...]
#
# BUILD: the user-space build directory (default <repo>/build; it must hold
# pfs-bench and the daemons). PFS_BENCH_TIMEOUT bounds the guest run (seconds,
# 3600); PFS_BENCH_SIZES replaces the workload sizes (bench-guest.sh --sizes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$top/build
if [ $# -gt 0 ] && [[ $1 != -* ]]; then
  build=$1
  shift
fi
build=$(realpath -m "$build")
[ -x "$build/tests/bench/pfs-bench" ] ||
  { echo "bench.sh: $build/tests/bench/pfs-bench missing (cmake --build $build --target pfs-bench)" >&2; exit 2; }

out=$build/kernel-bench
rm -rf "$out"
# The guest gets only the environment run-guest.sh sets: sizes go as options.
sizes=()
[ -z "${PFS_BENCH_SIZES:-}" ] || sizes=(--sizes "$PFS_BENCH_SIZES")
PFS_BUILD=$build "$here/run-guest.sh" --timeout "${PFS_BENCH_TIMEOUT:-3600}" --out "$out" \
  "$here/bench-guest.sh" "${sizes[@]}" "$@"
[ -s "$out/kernel-bench-results.json" ] ||
  { echo "bench.sh: the guest wrote no results" >&2; exit 1; }
cp "$out/kernel-bench-results.json" "$build/kernel-bench-results.json"
echo "results: $build/kernel-bench-results.json"
if [ -s "$out/kernel-bench-transport.json" ]; then
  cp "$out/kernel-bench-transport.json" "$build/kernel-bench-transport.json"
  echo "TCP vs RDMA: $build/kernel-bench-transport.json"
fi
