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
# end the session. Then a writer is killed (-9) while its close waits for
# pfs-meta (stopped again) to take its size report: once pfs-meta runs
# again the report arrives all the same (pfs-ctl sees the size written;
# it stayed 0 when a report that got no answer was dropped).
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

step "a writer killed while its close waits to report the size"
holder_start w
[ "$(holder w open F $MNT2/grown rw)" = ok ] || fail "cannot create grown"
[ "$(holder w fill F 1048576)" = ok ] || fail "cannot write grown"
sync	# the data stored, the size not reported: close(2) reports it
wpid=$(cat /tmp/holder-w/pid)
kill -STOP "$mpid"
holder_send w close F
wait_until "the writer waiting in close(2)" \
	grep -q pfs_file_flush "/proc/$wpid/stack"
kill -KILL "$wpid"
wait "$wpid" 2> /dev/null || true
kill -CONT "$mpid"
size_reported() {
	pfs_ctl stat /grown --json | grep -qE '"size": 1048576(,|$)'
}
PFS_WAIT=60 wait_until "the killed writer's size report arriving" size_reported
echo "pfs-ctl sees the size written"

step "unmount and unload"
umount_pfs $MNT2
umount_pfs $MNT
unload_module
check_dmesg_clean "$mark"
stop_cluster
step "passed"
