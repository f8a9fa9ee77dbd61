#!/bin/bash
# guest-timeout: 600
# Guest test (run-guest.sh): servers failing under a mounted pfs.ko. A
# storage server killed while a direct writer and a buffered writer run:
# both get a clear error (EIO) within a bounded time, reads of striped data
# fail the same way, fsync'd data written before the fault is intact, and
# the namespace keeps working; after its restart the data is there. A
# storage server that stops answering: requests fail with ETIMEDOUT after
# the mount's timeout; umount -f fails what waits at once, umount -l
# detaches a mount still in use; kill -9 ends within a second a reader
# waiting for its reply and a direct writer blocked in send (the server
# reads nothing). When it answers again, a new mount reads the old data
# and writes new data. No oops, no hung task (run-guest.sh fails the run
# on either).
. "$(dirname "$0")/lib.sh"
MNT=/mnt/pfs
MNT2=/mnt/pfs2
TIMEOUT_MS=6000

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
pid_of() { cat "$PFS_CLUSTER_DIR/run/$1.pid"; }
file_size() { stat -c %s "$1" 2> /dev/null || echo 0; }
# From /proc/mounts: mountpoint(1) stats the root, which an aborted mount fails.
is_mounted() { grep -q " $1 pfs " /proc/mounts; }
# expect_failure WHAT ERRFILE PID [ERRNO-TEXT]: PID exits non-zero and its
# error output names the error; prints how long it took.
expect_failure() {
	local what=$1 err=$2 pid=$3 want=${4:-Input/output error} t0
	t0=$(date +%s%N)
	if wait "$pid"; then
		fail "$what succeeded with a storage server gone"
	fi
	echo "$what failed $(ms_since "$t0") ms after the fault: $(tail -n 1 "$err")"
	grep -q "$want" "$err" || fail "$what: expected '$want', got: $(cat "$err")"
}

step "cluster, and a directory striped over all 4 targets in 64 KiB chunks"
start_cluster 2 2
pfs_ctl mkdir /d
pfs_ctl entry set --num-targets 4 --chunk-size 64K --inline-max 0 /d
load_module
mark=$(dmesg_mark)
mount_pfs $MNT "timeout=$TIMEOUT_MS"

step "4 MiB written and fsync'd before the fault"
head -c 4M /dev/urandom > /tmp/before
dd if=/tmp/before of=$MNT/d/before bs=1M conv=fsync status=none

step "kill -9 storage2 while a direct and a buffered writer run"
dd if=/dev/zero of=$MNT/d/direct bs=64K count=100000 oflag=direct \
	status=none 2> /tmp/direct.err &
direct=$!
wait_until "the direct writer past 1 MiB" \
	eval '[ "$(file_size $MNT/d/direct)" -ge 1048576 ]'
spid=$(pid_of storage2)
kill -KILL "$spid"
wait "$spid" 2> /dev/null || true
expect_failure "the direct writer" /tmp/direct.err "$direct"
# Buffered writes land in the page cache; the loss shows at fsync, once
# pfs.ko's retries (4 timeouts) are over.
dd if=/dev/zero of=$MNT/d/buffered bs=1M count=8 conv=fsync \
	status=none 2> /tmp/buffered.err &
expect_failure "the buffered writer's fsync" /tmp/buffered.err $!

step "reads of striped data fail with EIO; the namespace keeps working"
drop_caches
cat $MNT/d/before > /dev/null 2> /tmp/read.err &
expect_failure "a read" /tmp/read.err $!
mkdir $MNT/d/still-there
ls -l $MNT/d > /dev/null
stat $MNT/d/before > /dev/null
rmdir $MNT/d/still-there

step "storage2 restarted: the data fsync'd before the fault is intact"
pfs_start_daemon storage2 server/storage/pfs-storage
wait_until "4 targets ONLINE" pfs_all_online 4
# The client retries a dead server only after a backoff.
wait_until "reads through the restarted storage2" \
	eval 'dd if=$MNT/d/before of=/dev/null bs=4M iflag=direct status=none 2> /dev/null'
drop_caches
cmp $MNT/d/before /tmp/before || fail "fsync'd data changed across the fault"

step "a storage server that stops answering: ETIMEDOUT after the timeout"
# A second mount, connected to every server before one stops (a server
# that is stopped would hold a new connection in its handshake).
mount_pfs $MNT2 timeout=120000,conns=1
dd if=$MNT2/d/before of=/dev/null bs=4M iflag=direct status=none
# The server holding the first chunk of 'before' (entry info names it).
stopped=$(pfs_ctl --json entry info /d/before | python3 -c \
	'import json, sys; print(json.load(sys.stdin)["layout"]["targets"][0]["node_alias"])')
stopped_port=$((8003 + 10 * (${stopped#storage} - 1)))
# A file whose one target (8 MiB chunks) is on $stopped: each request of a
# direct write to it carries 8 MiB, and 64 MiB of them in flight are far
# more than the socket buffers of the connections to it hold (no O_TRUNC:
# pfs-meta would wait for the stopped server to cut the chunk).
pfs_ctl mkdir /big
pfs_ctl entry set --num-targets 1 --chunk-size 8M --inline-max 0 /big
big=
for i in 1 2 3 4 5 6 7 8; do
	: > $MNT/big/f$i
	if pfs_ctl --json entry info /big/f$i |
		grep -q "\"node_alias\": \"$stopped\""; then
		big=$MNT/big/f$i
		break
	fi
done
[ -n "$big" ] || fail "no file of /big got its target on $stopped"
spid=$(pid_of "$stopped")
kill -STOP "$spid"
t0=$(date +%s%N)
if dd if=$MNT/d/before of=/dev/null bs=64K count=1 iflag=direct \
	status=none 2> /tmp/stopped.err; then
	fail "a read from a stopped server succeeded"
fi
took=$(ms_since "$t0")
echo "$stopped stopped: the read failed after $took ms: $(cat /tmp/stopped.err)"
grep -q "Connection timed out" /tmp/stopped.err || fail "expected ETIMEDOUT"
[ "$took" -ge $((TIMEOUT_MS - 500)) ] || fail "timed out early ($took ms)"
[ "$took" -lt $((TIMEOUT_MS * 3)) ] || fail "timed out late ($took ms)"

# The request of a read waiting at the stopped server sits unread there.
unread() {
	ss -Htn state established "( sport = :$stopped_port )" |
		awk '{ s += $1 } END { print s + 0 }'
}
# start_reader: a direct read of the first chunk through $MNT2, in the
# background ($reader), once its request is queued at the stopped server.
start_reader() {
	local before
	before=$(unread)
	dd if=$MNT2/d/before of=/dev/null bs=64K count=1 iflag=direct \
		status=none 2> /tmp/reader.err &
	reader=$!
	wait_until "the reader's request queued at $stopped" \
		eval '[ "$(unread)" -gt "$before" ]'
}

# kill_fast WHAT PID: SIGKILL ends PID within a second (timed by bash
# itself: a fork costs up to a second under TCG).
kill_fast() {
	local t0=${EPOCHREALTIME/./} took
	kill -KILL "$2"
	wait "$2" 2> /dev/null && fail "$1 exited 0 after kill -9"
	took=$(((${EPOCHREALTIME/./} - t0) / 1000))
	echo "$1 died $took ms after kill -9"
	[ "$took" -lt 1000 ] || fail "kill -9 took $took ms to end $1"
}

step "kill -9 ends a read waiting on the stopped server"
start_reader
kill_fast "the reader" "$reader"

step "kill -9 ends a direct write blocked in send to the stopped server"
dd if=/dev/zero of="$big" bs=64M count=1 oflag=direct conv=notrunc status=none 2> /dev/null &
writer=$!
wait_until "the writer blocked in send" \
	grep -q sk_stream_wait_memory "/proc/$writer/stack"
kill_fast "the writer" "$writer"

step "umount -f fails a read waiting on the stopped server at once"
start_reader
t0=$(date +%s%N)
umount -f $MNT2 2> /dev/null || true   # busy while the reader holds it
if wait "$reader"; then
	fail "the read succeeded although the mount was aborted"
fi
took=$(ms_since "$t0")
echo "the reader failed $took ms after umount -f: $(cat /tmp/reader.err)"
[ "$took" -lt 60000 ] || fail "umount -f did not end the wait ($took ms)"
if is_mounted $MNT2; then
	umount $MNT2 || fail "umount after umount -f failed"
fi
is_mounted $MNT2 && fail "$MNT2 is still mounted"

step "umount -l detaches a mount that is still in use"
exec 3< $MNT/d/before
umount -l $MNT || fail "umount -l failed"
is_mounted $MNT && fail "$MNT is still mounted after umount -l"
exec 3<&-

step "$stopped answers again: a new mount reads the old data and writes new data"
kill -CONT "$spid"
mount_pfs $MNT "timeout=$TIMEOUT_MS"
cmp $MNT/d/before /tmp/before || fail "fsync'd data changed across the fault"
head -c 3M /dev/urandom > /tmp/after
dd if=/tmp/after of=$MNT/d/after bs=1M conv=fsync status=none
drop_caches
cmp $MNT/d/after /tmp/after || fail "data written after the restart differs"
rm -r $MNT/d/direct $MNT/d/buffered $MNT/big

step "unmount and unload"
umount_pfs $MNT
unload_module
check_dmesg_clean "$mark"
stop_cluster
step "passed"
