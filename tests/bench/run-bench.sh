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
# those. Without options it then compares the servers with one thread and
# with one per core (--threads), the cluster started afresh for each run,
# three rounds interleaved: pfs-storage under the sequential streams of 4
# workers x 256 MiB (build/bench-threads-storage.json), pfs-meta under the
# metadata workload of 32 workers x 500 files (build/bench-threads-meta.json).
# Last, one directory grown to 10k, 100k and 1M entries (pfs-bench
# --growth; build/bench-growth.json).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
export PFS_LOCAL_DIR=${PFS_BENCH_DIR:-/tmp/pfs-bench}
export PFS_BUILD=$build
export PFS_LOCAL_DIRECT_IO=${PFS_BENCH_DIRECT_IO:-true}
args=("${@:2}")
defaults=0
drop=()
[ "$(id -u)" -ne 0 ] || drop=(--drop-caches)
if [ ${#args[@]} -eq 0 ]; then
  defaults=1
  args=(--meta-threads 32 --rounds 3 "${drop[@]}")
fi

fresh_cluster() {
  "$top/utils/pfs-local" stop > /dev/null 2>&1 || true
  rm -rf "$PFS_LOCAL_DIR"
  "$top/utils/pfs-local" start > /dev/null
}
pfs_bench() {
  "$build/tests/bench/pfs-bench" --config /dev/null --auth-file "$PFS_LOCAL_DIR/etc/auth.secret" \
    --mgmtd 127.0.0.1 "$@"
}
bench() { pfs_bench --local-dir "$PFS_LOCAL_DIR/localfs" "$@"; }
trap '"$top/utils/pfs-local" stop > /dev/null 2>&1 || true' EXIT
fresh_cluster
bench --json-out "$build/bench-results.json" --note "storage direct-io = $PFS_LOCAL_DIRECT_IO" "${args[@]}"
echo "results: $build/bench-results.json"
[ "$defaults" = 1 ] || exit 0

cores=$(nproc)
# compare NAME ENV-VAR ROWS... -- PFS-BENCH OPTIONS...: the cluster started
# afresh with ENV-VAR=1 and =cores in turn, three rounds interleaved;
# build/bench-threads-NAME.json.
compare() {
  local name=$1 var=$2 rows=() runs=$build/bench-threads-$1
  shift 2
  while [ "$1" != -- ]; do rows+=("$1"); shift; done
  shift
  rm -rf "$runs" && mkdir -p "$runs"
  for round in 1 2 3; do
    for threads in 1 "$cores"; do
      echo "$name threads $threads, round $round of 3" >&2
      (export "$var=$threads"; fresh_cluster)
      bench "$@" --note "$name threads = $threads" --json-out "$runs/t$threads-r$round.json" > /dev/null
    done
  done
  python3 - "$runs" "$cores" "$build/bench-threads-$name.json" "$name" "${rows[@]}" <<'PY'
import json, pathlib, statistics, sys
runs, cores, out, name, rows = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
def median(threads, row, system):
    return statistics.median(json.loads(p.read_text())["results"][row][system]
                             for p in sorted(runs.glob(f"t{threads}-r*.json")))
summary = {f"{name}_threads": [1, cores], "rows": {}}
print(f"{name} threads (median of 3 interleaved rounds)")
print(f"{'workload':<22} {'1 thread':>10} {f'{cores} threads':>11} {'ratio':>7} {'local':>8} {'N/local':>8}")
for row in rows:
    one, many, local = median(1, row, "pfs"), median(cores, row, "pfs"), median(cores, row, "local")
    summary["rows"][row] = {"1": one, str(cores): many, "local": local}
    print(f"{row:<22} {one:>10.0f} {many:>11.0f} {many / one:>6.2f}x {local:>8.0f} {many / local:>7.2f}x")
pathlib.Path(out).write_text(json.dumps(summary, indent=2) + "\n")
print(f"results: {out}")
PY
}
if [ "$cores" -lt 2 ]; then
  echo "server threads: one core here, nothing to compare"
else
  compare storage PFS_LOCAL_STORAGE_THREADS seq_write seq_read -- \
    --seq-only --threads 4 --seq-mib 256 "${drop[@]}"
  compare meta PFS_LOCAL_META_THREADS create_shared_dir stat_shared_dir unlink_shared_dir create_dir_per_worker -- \
    --meta-only --meta-threads 32 --meta-files 500 "${drop[@]}"
fi

# One directory grown to a million entries by 32 workers (one metadata
# server, an unstriped directory): creates/s over each stretch and
# pfs-meta's memory per entry; build/bench-growth.json.
echo "growth of one directory to 1M entries" >&2
fresh_cluster
pfs_bench --pfs-dir /growth --meta-threads 32 --growth 10k,100k,1M \
  --server-pid "$(cat "$PFS_LOCAL_DIR/run/meta1.pid")" --json-out "$build/bench-growth.json"
echo "results: $build/bench-growth.json"
