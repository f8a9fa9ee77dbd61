#!/usr/bin/env bash
# make bench: a throw-away local PFS (utils/pfs-local) and pfs-bench against
# it, with the local comparison on the same file system as the targets.
# Results: a table on stdout and build/bench-results.json.
#
#   tests/bench/run-bench.sh [BUILD] [PFS-BENCH OPTIONS...]
#
# The storage servers run with their default direct-io = auto (O_DIRECT
# chunk files where the file system supports it; PFS_BENCH_DIRECT_IO=false
# for the page cache). Without options pfs-bench
# runs three rounds (each figure their median), the metadata workload with
# 32 concurrent workers and, as root, drops the kernel's caches before every
# read and stat phase (data sets larger than memory); options given replace
# those. Without options it then compares the servers with one thread and
# with one per core (--threads), the cluster started afresh for each run,
# three rounds interleaved: pfs-storage under the sequential streams of 4
# workers x 256 MiB (build/bench-threads-storage.json), pfs-meta under the
# metadata workload of 32 workers x 500 files (build/bench-threads-meta.json).
# Then one directory on one metadata server against one striped over two
# (build/bench-shards.json). Last, one directory grown to 10k, 100k and 1M
# entries, unstriped and striped over two servers (pfs-bench --growth;
# build/bench-growth.json, build/bench-growth-striped.json).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
export PFS_LOCAL_DIR=${PFS_BENCH_DIR:-/tmp/pfs-bench}
export PFS_BUILD=$build
export PFS_LOCAL_DIRECT_IO=${PFS_BENCH_DIRECT_IO:-auto}
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
# compare NAME OUT LABEL-A ENV-A LABEL-B ENV-B ROWS... -- PFS-BENCH OPTIONS...:
# the cluster started afresh with the environment ENV-A ("VAR=VALUE ...",
# and pfs-bench with its PFS_BENCH_ARGS) and then ENV-B, three rounds
# interleaved; OUT (JSON) gets each row's medians and their ratio.
compare() {
  local name=$1 out=$2 label_a=$3 env_a=$4 label_b=$5 env_b=$6 rows=() runs=$build/bench-runs-$1
  shift 6
  while [ "$1" != -- ]; do rows+=("$1"); shift; done
  shift
  rm -rf "$runs" && mkdir -p "$runs"
  for round in 1 2 3; do
    for side in a b; do
      local label=$label_a envs=$env_a
      [ "$side" = a ] || { label=$label_b; envs=$env_b; }
      echo "$name: $label, round $round of 3" >&2
      # shellcheck disable=SC2086  # envs is VAR=VALUE words
      (export $envs; fresh_cluster
       bench "$@" ${PFS_BENCH_ARGS:-} --note "$name: $label" --json-out "$runs/$side-r$round.json" > /dev/null)
    done
  done
  python3 - "$runs" "$out" "$name" "$label_a" "$label_b" "${rows[@]}" <<'PY'
import json, pathlib, statistics, sys
runs, out, name, label_a, label_b, rows = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
def median(side, row, system):
    return statistics.median(json.loads(p.read_text())["results"][row][system]
                             for p in sorted(runs.glob(f"{side}-r*.json")))
summary = {"compared": [label_a, label_b], "rows": {}}
print(f"{name} (median of 3 interleaved rounds)")
print(f"{'workload':<22} {label_a:>12} {label_b:>12} {'ratio':>7} {'local':>8} {'B/local':>8}")
for row in rows:
    a, b, local = median("a", row, "pfs"), median("b", row, "pfs"), median("b", row, "local")
    summary["rows"][row] = {label_a: a, label_b: b, "ratio": b / a, "local": local}
    print(f"{row:<22} {a:>12.0f} {b:>12.0f} {b / a:>6.2f}x {local:>8.0f} {b / local:>7.2f}x")
pathlib.Path(out).write_text(json.dumps(summary, indent=2) + "\n")
print(f"results: {out}")
PY
}
if [ "$cores" -lt 2 ]; then
  echo "server threads: one core here, nothing to compare"
else
  compare "storage threads" "$build/bench-threads-storage.json" \
    "1 thread" PFS_LOCAL_STORAGE_THREADS=1 "$cores threads" PFS_LOCAL_STORAGE_THREADS=$cores \
    seq_write seq_read -- --seq-only --threads 4 --seq-mib 256 "${drop[@]}"
  compare "meta threads" "$build/bench-threads-meta.json" \
    "1 thread" PFS_LOCAL_META_THREADS=1 "$cores threads" PFS_LOCAL_META_THREADS=$cores \
    create_shared_dir stat_shared_dir unlink_shared_dir create_dir_per_worker -- \
    --meta-only --meta-threads 32 --meta-files 500 "${drop[@]}"
fi
# One directory on one metadata server, and striped over two (the bench
# directory made with --stripe 2): the metadata workload of 32 workers;
# build/bench-shards.json.
compare "one directory over metadata servers" "$build/bench-shards.json" \
  "1 server" PFS_LOCAL_METAS=1 "2 striped" "PFS_LOCAL_METAS=2 PFS_BENCH_ARGS=--dir-stripes=2" \
  create_shared_dir stat_shared_dir unlink_shared_dir -- \
  --meta-only --meta-threads 32 --meta-files 500 "${drop[@]}"

# One directory grown to a million entries by 32 workers: on one metadata
# server, unstriped, and striped over two: creates/s over each stretch and
# the servers' memory per entry; build/bench-growth.json and
# build/bench-growth-striped.json.
echo "growth of one directory to 1M entries" >&2
fresh_cluster
pfs_bench --pfs-dir /growth --meta-threads 32 --growth 10k,100k,1M \
  --server-pid "$(cat "$PFS_LOCAL_DIR/run/meta1.pid")" --json-out "$build/bench-growth.json"
echo "results: $build/bench-growth.json"
echo "growth of one directory striped over 2 metadata servers to 1M entries" >&2
(export PFS_LOCAL_METAS=2; fresh_cluster)
pfs_bench --pfs-dir /growth --meta-threads 32 --growth 10k,100k,1M --dir-stripes 2 \
  --server-pid "$(cat "$PFS_LOCAL_DIR/run/meta1.pid"),$(cat "$PFS_LOCAL_DIR/run/meta2.pid")" \
  --json-out "$build/bench-growth-striped.json"
echo "results: $build/bench-growth-striped.json"
