#!/bin/bash
# Guest side of `make bench-kernel` (tests/kernel/bench.sh boots it through
# run-guest.sh): pfs-bench through plain POSIX calls on PFS mounted with
# pfs.ko, on NFSv4.2 from the guest's own kernel over loopback, and on the
# local file system, all three backed by the same scratch disk (PFS's
# targets and every daemon's state, the metadata journal included, as NFS's
# export), PFS with its default server and mount options, side by side with
# ratios to the local file system. The kernel's caches are dropped
# before every read and stat phase (pfs-bench --drop-caches), so reads reach
# each file system instead of the page cache. A small warm-up round on every
# system comes first (TCG's code translation), its figures discarded. Then
# three rounds, the systems interleaved, and each figure's median: one run
# of a workload lasts about a second here, and a single slow spell of the
# host moved a ratio by 0.3.
#
#   bench-guest.sh [--systems pfs,nfs,local] [--sizes OPTIONS] [PFS-BENCH OPTIONS...]
#
# --systems: which of them to run (all three by default; the local file
# system is the baseline and always runs). --sizes: pfs-bench's size options
# in one word, replacing the defaults sized for a TCG guest. Further options
# go to pfs-bench as they are.
# Results: the table on the console and $PFS_GUEST_OUT/kernel-bench-results.json;
# then pfs.ko over TCP against RDMA (bench-transport.sh):
# $PFS_GUEST_OUT/kernel-bench-transport.json.
. "$(dirname "$0")/lib.sh"

systems=pfs,nfs,local
# Two streams of 256 MiB (buffered, then O_DIRECT) and 2,000 files of
# 100 KiB, as a user would try it; the metadata workload is small (the guest
# runs CPU-bound work ~20x slower than the host).
sizes="--threads 2 --seq-mib 256 --dl-files 2000 --meta-files 300"
while [ $# -gt 0 ]; do
	case $1 in
	--systems) systems=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	*) break ;;
	esac
done
has() { [[ ,$systems, == *,$1,* ]]; }
bench=$PFS_BUILD/tests/bench/pfs-bench
[ -x "$bench" ] || fail "$bench missing: cmake --build $PFS_BUILD --target pfs-bench"
[ -n "${PFS_SCRATCH:-}" ] || fail "no scratch disk (run-guest.sh without --no-disk)"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$PFS_SCRATCH/local"

cleanup() {
	local rc=$?
	if has nfs; then "$here/nfs-setup.sh" stop /mnt/nfs || rc=1; fi
	if has pfs && findmnt -rn -M /mnt/pfs > /dev/null; then umount_pfs /mnt/pfs || rc=1; fi
	pfs_on_exit
	exit "$rc"
}
trap cleanup EXIT

if has pfs; then
	step "PFS: mgmtd, meta, 2 storage servers x 2 targets, all on $PFS_SCRATCH; pfs.ko on /mnt/pfs"
	PFS_STATE_DIR=$PFS_SCRATCH/pfs-state start_cluster 2 2
	load_module
	mount_pfs /mnt/pfs
fi
if has nfs; then
	step "NFSv4.2 over loopback: $PFS_SCRATCH/nfs-export on /mnt/nfs"
	mkdir -p "$PFS_SCRATCH/nfs-export"
	"$here/nfs-setup.sh" start "$PFS_SCRATCH/nfs-export" /mnt/nfs
fi

args=()
if has pfs; then args+=(--posix pfs=/mnt/pfs); fi
if has nfs; then args+=(--posix nfs=/mnt/nfs); fi
args+=(--posix "local=$PFS_SCRATCH/local")

# TCG translates guest code the first time it runs: without a warm-up the
# first read of each system pays that (a fresh pfs.ko mount read its first
# 64 MiB at 39 MB/s and the next at 82 MB/s). A small round of every
# workload on every system first, its figures thrown away.
step "warm-up: pfs-bench ${args[*]} at small sizes"
"$bench" --config /dev/null "${args[@]}" --baseline local --drop-caches \
	--threads 2 --seq-mib 4 --dl-files 40 --meta-files 40 > /dev/null

step "pfs-bench ${args[*]} $sizes $*"
cores=$(nproc)
# shellcheck disable=SC2086 # $sizes is a list of options
"$bench" --config /dev/null "${args[@]}" --baseline local --drop-caches \
	--note "QEMU TCG guest ($cores vCPUs, $(free -m | awk '/^Mem:/ {print $2}') MiB), all on one ext4 scratch disk (virtio)" \
	--json-out "$PFS_GUEST_OUT/kernel-bench-results.json" --rounds 3 $sizes "$@"

if has pfs; then
	umount_pfs /mnt/pfs
	stop_cluster
	# TCP against RDMA, on one soft-RoCE rail (bench-transport.sh). Apart
	# from the comparison above: its default mount would use the rail.
	step "PFS over TCP and over RDMA (soft-RoCE)"
	PFS_STORAGE_DIRECT_IO=true start_rdma_cluster 1
	"$here/bench-transport.sh" /mnt/pfs "${PFS_TRANSPORT_MIB:-64}" 3
	unload_module
	stop_cluster
fi
step "done"
