#!/bin/bash
# guest-timeout: 900
# Guest test (run-guest.sh): pfs-fsx (tests/kernel/fsx) on one file striped
# over 4 targets in 64 KiB chunks, from two processes and two mounts of the
# same PFS, checked against its model after every operation: first a fixed
# seed, then a random one (printed, so a failure can be repeated with
# tests/kernel/run-guest.sh tests/kernel/test_fsx.sh SEED).
#   PFS_FSX_OPS / PFS_FSX_SECONDS: bounds of each run (1500 ops, 150 s).
#   PFS_FSX_SKIP: operations left out (comma-separated; default none, so
#   fallocate's allocate, punch and zero and copy_file_range run too).
. "$(dirname "$0")/lib.sh"

FSX=$PFS_BUILD/tests/kernel/fsx/pfs-fsx
[ -x "$FSX" ] || fail "$FSX missing: build user space ('make')"
ops=${PFS_FSX_OPS:-1500}
secs=${PFS_FSX_SECONDS:-150}
skip=${PFS_FSX_SKIP-}
random_seed=${1:-0}

step "start 2 storage servers with 2 targets each, load and mount twice"
mark=$(dmesg_mark)
load_module
start_cluster 2 2
mount_pfs /mnt/pfs
mount_pfs /mnt/pfs2
mkdir /mnt/pfs/fsx
# Chunk and stripe boundaries inside the file (maxlen 512 KiB: 2 stripes).
pfs_ctl entry set --chunk-size 64K --num-targets 4 /fsx

rc=0
run_fsx() {  # SEED
	# O_DIRECT in 512-byte units: pfs.ko takes any alignment, sub-page
	# ones meet cached pages half way.
	"$FSX" -S "$1" -N "$ops" -T "$secs" -A 512 -t 120 ${skip:+-x "$skip"} \
		/mnt/pfs/fsx/file /mnt/pfs2/fsx/file || rc=1
}
step "pfs-fsx, known failures replayed"
for recorded in "$PFS_SRC"/tests/kernel/fsx/replay/*.ops; do
	"$FSX" -r "$recorded" -A 512 -t 120 /mnt/pfs/fsx/file /mnt/pfs2/fsx/file ||
		rc=1
done
step "pfs-fsx, fixed seed"
run_fsx 1
step "pfs-fsx, random seed"
run_fsx "$random_seed"

umount_pfs /mnt/pfs2
umount_pfs /mnt/pfs
unload_module
stop_cluster
check_dmesg_clean "$mark"
[ "$rc" -eq 0 ] || fail "pfs-fsx found a difference (seeds above)"
step "passed"
