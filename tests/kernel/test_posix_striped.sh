#!/bin/bash
# guest-timeout: 1800
# Guest test (run-guest.sh): the POSIX behaviour suite (tests/kernel/posix)
# in a directory striped over two metadata servers (pfs-ctl mkdir --stripe
# 2), and so in striped subdirectories (they inherit it), against two
# mounts: names of every case spread over both servers' shards, renames
# between shards, listings merged from both; then fsck is clean.
#
# Skipped (-x), as the names their cases use land on both servers: what
# PFS does not do across metadata servers yet (README, "Several metadata
# servers"): hard links, RENAME_EXCHANGE, and the move of a file with
# several links.
. "$(dirname "$0")/lib.sh"

ACROSS_SERVERS="rename: RENAME_EXCHANGE swaps|rename: to itself (or another link of it) is a no-op"
ACROSS_SERVERS+="|links: hard link counts go 1, 2, 1|xattr: xattrs belong to the inode"
ACROSS_SERVERS+="|cross: link, symlink, nlink on the other"
ACROSS_SERVERS+="|special: link, rename over and under, unlink"

SUITE=${1:-$PFS_BUILD/tests/kernel/posix/pfs-posix-suite}
shift || true
[ -x "$SUITE" ] || fail "$SUITE missing: build user space ('make')"
mark=$(dmesg_mark)
load_module
start_cluster 2 2 2
mkdir -p /mnt
chmod 755 /mnt
mount_pfs /mnt/pfs
mount_pfs /mnt/pfs2
chmod 755 /mnt/pfs
pfs_ctl mkdir --stripe 2 /striped
chmod 755 /mnt/pfs/striped
pfs_ctl entry info /striped | grep -q "Striped over: 2 metadata servers" || fail "/striped is not striped"
step "POSIX suite in a striped directory"
rc=0
"$SUITE" -w "$PFS_WAIT" -t 900 -x "$ACROSS_SERVERS" "$@" /mnt/pfs/striped /mnt/pfs2/striped || rc=$?
step "fsck"
pfs_ctl fsck --readonly || rc=1
umount_pfs /mnt/pfs2
umount_pfs /mnt/pfs
unload_module
stop_cluster
check_dmesg_clean "$mark"
[ "$rc" -eq 0 ] || fail "the POSIX suite failed in a striped directory (exit $rc)"
step "passed"
