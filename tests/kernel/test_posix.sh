#!/bin/bash
# guest-timeout: 1800
# Guest test (run-guest.sh): the POSIX behaviour suite (tests/kernel/posix)
# against two mounts of one PFS, so that cross-mount visibility and locks
# between the mounts (two clients as far as the servers can tell) are
# checked too. Runs as root; the suite drops privileges for its non-root
# cases.
. "$(dirname "$0")/lib.sh"

SUITE=${1:-$PFS_BUILD/tests/kernel/posix/pfs-posix-suite}
shift || true
[ -x "$SUITE" ] || fail "$SUITE missing: build user space ('make')"
mark=$(dmesg_mark)
load_module
start_cluster 2 2
mkdir -p /mnt
chmod 755 /mnt
mount_pfs /mnt/pfs
mount_pfs /mnt/pfs2
chmod 755 /mnt/pfs
step "POSIX suite"
rc=0
"$SUITE" -w "$PFS_WAIT" -t 900 "$@" /mnt/pfs /mnt/pfs2 || rc=$?
umount_pfs /mnt/pfs2
umount_pfs /mnt/pfs
unload_module
stop_cluster
check_dmesg_clean "$mark"
[ "$rc" -eq 0 ] || fail "the POSIX suite failed (exit $rc)"
step "passed"
