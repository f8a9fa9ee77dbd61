#!/bin/bash
# guest-timeout: 420
# Guest test (run-guest.sh): pfs.ko keeps its session alive on every
# metadata server, not only on the root's. Two metadata servers whose
# sessions end after 2 s of silence (session-timeout = 2); a mount takes a
# flock and a POSIX lock on a file in a directory of the second server and
# keeps a file there open after unlinking it; after both mounts were idle
# for 10 s (five timeouts) the locks still exclude the other mount (flock
# -n fails, F_SETLK fails with EAGAIN) and the unlinked file still reads
# its data. (When only the root's server was renewed, the second one ended
# the session: it released the locks and freed the file.)
. "$(dirname "$0")/lib.sh"
MNT=/mnt/pfs
MNT2=/mnt/pfs2
SIZE=300000

excluded() {
	local got
	if flock -n "$MNT2/d2/locked" true; then
		fail "flock -n on $MNT2 took the flock $MNT holds"
	fi
	got=$(holder h2 posix L w 0 0)
	[ "$got" = "err EAGAIN" ] || fail "F_SETLK on $MNT2 over $MNT's lock: $got"
}

step "2 metadata servers with session-timeout = 2, two mounts"
PFS_META_CONF="session-timeout = 2" start_cluster 1 2 2
load_module
mark=$(dmesg_mark)
mount_pfs $MNT
mount_pfs $MNT2
pfs_ctl mkdir --meta-node "$(pfs_meta_id meta2)" /d2

step "$MNT locks d2/locked (flock, POSIX) and keeps d2/gone open, unlinked"
head -c $SIZE /dev/urandom > /tmp/ref
want="ok $(sha256sum < /tmp/ref | cut -d' ' -f1) $SIZE"
cp /tmp/ref $MNT/d2/gone
: > $MNT/d2/locked
holder_start h1
[ "$(holder h1 open L $MNT/d2/locked rw)" = ok ] || fail "open d2/locked"
[ "$(holder h1 flock L ex)" = ok ] || fail "flock d2/locked"
[ "$(holder h1 posix L w 0 0)" = ok ] || fail "F_SETLK d2/locked"
[ "$(holder h1 open G $MNT/d2/gone r)" = ok ] || fail "open d2/gone"
rm $MNT/d2/gone
[ "$(holder h1 read G $SIZE)" = "$want" ] || fail "d2/gone reads other data"
holder_start h2
[ "$(holder h2 open L $MNT2/d2/locked rw)" = ok ] || fail "open on $MNT2"
excluded

step "both mounts idle for 10 s: five session timeouts"
sleep 10

step "the locks still exclude $MNT2, the unlinked file reads its data"
excluded
echo 3 > /proc/sys/vm/drop_caches
got=$(holder h1 read G $SIZE)
[ "$got" = "$want" ] || fail "d2/gone after 10 s idle: $got (want $want)"

step "unmount and unload"
holder h1 quit > /dev/null
holder h2 quit > /dev/null
umount_pfs $MNT2
umount_pfs $MNT
unload_module
check_dmesg_clean "$mark"
stop_cluster
step "passed"
