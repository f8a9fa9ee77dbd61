#!/bin/bash
# guest-timeout: 420
# Guest test (run-guest.sh): a session lost with a restart of its metadata
# server becomes visible to pfs.ko. A mount holds a flock and a POSIX lock
# on a file in a directory of the second metadata server and keeps a file
# there open after unlinking it; the server is killed (-9) and restarted
# (locks and sessions live in its memory; the unlinked file is purged and
# its chunks deleted). Then a read of the unlinked file fails with ESTALE
# instead of reading the zeros its deleted chunks give; the lock holder's
# next flock and POSIX unlock fail with ENOLCK; F_GETLK and the other mount
# see the locks free; afterwards locks are served as usual; nothing
# oopses. The mount trusts attributes for a minute (attr_ttl=60000), so
# only the session can tell it that the file is gone.
. "$(dirname "$0")/lib.sh"
MNT=/mnt/pfs
MNT2=/mnt/pfs2
SIZE=300000


chunk_files() {
	find "$PFS_SCRATCH/pfs-targets" -path '*/chunks/*' -type f | wc -l
}

expect() {  # WHAT WANT GOT
	[ "$2" = "$3" ] || fail "$1: got '$3', want '$2'"
}

step "2 metadata servers, two mounts"
start_cluster 1 2 2
load_module
mark=$(dmesg_mark)
mount_pfs $MNT attr_ttl=60000
mount_pfs $MNT2
pfs_ctl mkdir --meta-node "$(pfs_meta_id meta2)" /d2

step "$MNT locks d2/locked (flock, POSIX) and keeps d2/gone open, unlinked"
head -c $SIZE /dev/urandom > /tmp/ref
want="ok $(sha256sum < /tmp/ref | cut -d' ' -f1) $SIZE"
: > $MNT/d2/locked
before=$(chunk_files)
cp /tmp/ref $MNT/d2/gone
holder_start h1
expect "open d2/locked" ok "$(holder h1 open L $MNT/d2/locked rw)"
expect "flock d2/locked" ok "$(holder h1 flock L ex)"
expect "F_SETLK d2/locked" ok "$(holder h1 posix L w 0 0)"
expect "open d2/gone" ok "$(holder h1 open G $MNT/d2/gone r)"
rm $MNT/d2/gone
expect "d2/gone read" "$want" "$(holder h1 read G $SIZE)"
[ "$(chunk_files)" -gt "$before" ] || fail "the open, unlinked file has no chunks"
if flock -n $MNT2/d2/locked true; then fail "$MNT2 took the flock $MNT holds"; fi

step "meta2 killed and restarted: the unlinked file is purged, its chunks deleted"
m=$(dmesg_mark)
pid=$(cat "$PFS_CLUSTER_DIR/run/meta2.pid")
kill -KILL "$pid"
wait "$pid" 2> /dev/null || true
pfs_start_daemon meta2 server/meta/pfs-meta
wait_until "meta2 serving d2 again" eval 'pfs_ctl ls /d2 > /dev/null 2>&1'
wait_until "the chunks of the purged file deleted" \
	eval '[ "$(chunk_files)" -eq "$before" ]'

step "the lost file fails with ESTALE, the lost locks with ENOLCK, once"
echo 3 > /proc/sys/vm/drop_caches
expect "read of the lost, unlinked file" "err ESTALE" "$(holder h1 read G $SIZE)"
expect "read of it again" "err ESTALE" "$(holder h1 read G $SIZE)"
expect "flock unlock of the lost flock" "err ENOLCK" "$(holder h1 flock L un)"
expect "F_GETLK" "ok unlocked" "$(holder h1 getlk L w 0 0)"
expect "POSIX unlock of the lost lock" "err ENOLCK" "$(holder h1 posix L u 0 0)"
expect_dmesg "$m" "lost our session"

step "the other mount takes the locks; then locks are served as usual"
flock -n $MNT2/d2/locked true || fail "$MNT2 cannot take the flock that was lost"
holder_start h2
expect "open on $MNT2" ok "$(holder h2 open L $MNT2/d2/locked rw)"
expect "F_SETLK on $MNT2" ok "$(holder h2 posix L w 0 0)"
expect "F_GETLK shows $MNT2's lock" "ok locked" "$(holder h1 getlk L w 0 0)"
expect "F_SETLK over $MNT2's lock" "err EAGAIN" "$(holder h1 posix L w 0 0)"
expect "unlock on $MNT2" ok "$(holder h2 posix L u 0 0)"
expect "F_SETLK again" ok "$(holder h1 posix L w 0 0)"
expect "flock again" ok "$(holder h1 flock L ex)"
if flock -n $MNT2/d2/locked true; then fail "$MNT2 took the new flock"; fi
expect "close of the lost file" ok "$(holder h1 close G)"
expect "close" ok "$(holder h1 close L)"

step "unmount and unload"
holder h1 quit > /dev/null
holder h2 quit > /dev/null
umount_pfs $MNT2
umount_pfs $MNT
unload_module
check_dmesg_clean "$mark"
stop_cluster
step "passed"
