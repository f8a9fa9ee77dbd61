#!/bin/bash
# guest-timeout: 420
# Guest test (run-guest.sh): a CLOSE and an unlock that get no answer are
# sent again until the metadata server has them. pfs-meta is stopped
# (SIGSTOP) and every connection to it cut (ss -K), so that what pfs.ko
# sends meanwhile cannot arrive; then a file that was open and unlinked is
# closed and a process holding a flock on another file exits. Once pfs-meta
# runs again (its session with the client still alive), the close must
# arrive (the unlinked file's chunks are freed) and the lock must be
# released (a second mount takes it), long before the umount that would
# end the session.
. "$(dirname "$0")/lib.sh"
MNT=/mnt/pfs
MNT2=/mnt/pfs2

chunk_files() {
	find "$PFS_SCRATCH/pfs-targets" -path '*/chunks/*' -type f | wc -l
}
locked_on_mnt2() { ! flock -n $MNT2/g true; }

start_cluster 2 2
load_module
mark=$(dmesg_mark)
mount_pfs $MNT timeout=3000,connect_timeout=1000
mount_pfs $MNT2
before=$(chunk_files)

step "an open file, unlinked, and a flock held on $MNT"
head -c 1M /dev/urandom > $MNT/f
exec 3< $MNT/f
rm $MNT/f
[ "$(chunk_files)" -gt "$before" ] || fail "the open, unlinked file has no chunks"
: > $MNT/g
python3 - $MNT/g > /tmp/holder.log 2>&1 <<-'EOF' &
	import fcntl, os, sys, time
	fd = os.open(sys.argv[1], os.O_RDWR)
	fcntl.flock(fd, fcntl.LOCK_EX)
	print("locked", flush=True)
	while not os.path.exists("/tmp/holder.go"):
	    time.sleep(0.1)
	os.close(fd)
EOF
holder=$!
wait_until "the holder's flock" grep -q locked /tmp/holder.log
locked_on_mnt2 || fail "$MNT2 took a lock $MNT holds"

step "pfs-meta stopped and cut off: the close and the unlock get no answer"
mpid=$(cat "$PFS_CLUSTER_DIR/run/meta1.pid")
kill -STOP "$mpid"
ss -K dport = :8005 > /dev/null
ss -K sport = :8005 > /dev/null
m=$(dmesg_mark)
exec 3<&-
touch /tmp/holder.go
wait "$holder" || fail "the holder failed: $(cat /tmp/holder.log)"
wait_until "the CLOSE failing" eval 'dmesg_since $m | grep -q "CLOSE of "'
dmesg_since "$m" | grep -E "CLOSE of|unlock of" || true
kill -CONT "$mpid"

step "pfs-meta answers again: the close arrives and the lock is released"
t0=$SECONDS
PFS_WAIT=90 wait_until "the chunks of the closed, unlinked file freed" \
	eval '[ "$(chunk_files)" -eq "$before" ]'
PFS_WAIT=30 wait_until "$MNT2 taking the lock" eval '! locked_on_mnt2'
echo "both arrived within $((SECONDS - t0)) s of the server's return"

step "unmount and unload"
umount_pfs $MNT2
umount_pfs $MNT
unload_module
check_dmesg_clean "$mark"
stop_cluster
step "passed"
