#!/bin/bash
# guest-timeout: 900
# Guest test (run-guest.sh): data the application was told is durable is,
# and data that may be lost is reported. A storage target on its own ext4
# loses power between writeback and fsync (simulated: EXT4_IOC_SHUTDOWN
# without flushing the log, its server killed, the file system mounted
# again, the server restarted): the writer's fsync fails with EIO, never 0
# over zeros. A truncate down and up before such a loss brings no cut
# bytes back.
. "$(dirname "$0")/lib.sh"

LOSSY=/mnt/lossy
mark=$(dmesg_mark)
load_module
step "a storage target on a file system that can lose power"
truncate -s 512M "$PFS_SCRATCH/lossy.img"
mkfs.ext4 -q -F "$PFS_SCRATCH/lossy.img" || fail "mkfs.ext4 failed"
modprobe loop || fail "modprobe loop failed"
dev=$(losetup -f --show "$PFS_SCRATCH/lossy.img") || fail "losetup failed"
mkdir -p $LOSSY
mount "$dev" $LOSSY || fail "cannot mount the lossy file system"
PFS_SCRATCH=$LOSSY start_cluster 1 1
mount_pfs /mnt/pfs

# power_loss: the target's file system stops as a power cut stops it,
# pfs-storage with it; both come back.
power_loss() {
	python3 -c '
import fcntl, os, struct
fd = os.open("'$LOSSY'", os.O_RDONLY)
fcntl.ioctl(fd, 0x8004587D, struct.pack("I", 2))  # EXT4_IOC_SHUTDOWN, NOLOGFLUSH
' || fail "EXT4_IOC_SHUTDOWN failed"
	kill -KILL "$(cat "$PFS_CLUSTER_DIR/run/storage1.pid")"
	wait_until "pfs-storage gone" eval '! pfs_running "$(cat "$PFS_CLUSTER_DIR/run/storage1.pid")"'
	umount $LOSSY || umount -l $LOSSY || fail "cannot unmount the lossy file system"
	mount "$dev" $LOSSY || fail "cannot mount the lossy file system again"
	pfs_start_daemon storage1 server/storage/pfs-storage
	wait_until "the target ONLINE again" pfs_all_online 1
}

# Until the writer has its data written back (or died: then why).
writer_ready() {
	wait_until "the writer's data written back" eval 'test -e /tmp/ready || ! kill -0 $writer 2> /dev/null'
	test -e /tmp/ready || fail "the writer failed: $(cat /tmp/writer.out)"
}

# The writer: writes, has it written back (no fsync), waits for the power
# loss, then fsyncs. Prints what fsync said.
cat > /tmp/writer.py <<'PY'
import ctypes, os, sys, time
path, ready, go = sys.argv[1:4]
fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, b"\x5a" * (8 << 20))
# sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER): written back, not synced.
libc = ctypes.CDLL(None, use_errno=True)
if libc.sync_file_range(fd, ctypes.c_longlong(0), ctypes.c_longlong(0), 7) != 0:
    raise OSError(ctypes.get_errno(), "sync_file_range")
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.1)
try:
    os.fsync(fd)
    print("fsync: 0")
except OSError as e:
    print("fsync: " + os.strerror(e.errno))
PY

step "power loss between writeback and fsync: fsync says EIO"
rm -f /tmp/ready /tmp/go
python3 /tmp/writer.py /mnt/pfs/f /tmp/ready /tmp/go > /tmp/writer.out 2>&1 &
writer=$!
writer_ready
power_loss
touch /tmp/go
wait "$writer" || fail "the writer failed: $(cat /tmp/writer.out)"
cat /tmp/writer.out
grep -q "fsync: Input/output error" /tmp/writer.out ||
	fail "fsync after the target lost power: $(cat /tmp/writer.out), expected EIO"
expect_dmesg "$mark" "restarted before data written to it was synced"

step "a clean restart of pfs-storage keeps the verifier: fsync says 0"
rm -f /tmp/ready /tmp/go
python3 /tmp/writer.py /mnt/pfs/g /tmp/ready /tmp/go > /tmp/writer.out 2>&1 &
writer=$!
writer_ready
kill -TERM "$(cat "$PFS_CLUSTER_DIR/run/storage1.pid")"
wait_until "pfs-storage stopped" eval '! pfs_running "$(cat "$PFS_CLUSTER_DIR/run/storage1.pid")"'
pfs_start_daemon storage1 server/storage/pfs-storage
wait_until "the target ONLINE again" pfs_all_online 1
touch /tmp/go
wait "$writer" || fail "the writer failed: $(cat /tmp/writer.out)"
grep -q "fsync: 0" /tmp/writer.out || fail "fsync after a clean restart: $(cat /tmp/writer.out), expected 0"
cmp <(head -c $((8 << 20)) /dev/zero | tr '\0' '\132') /mnt/pfs/g || fail "data lost over a clean restart"

step "truncate down and up, then power loss: no cut byte comes back"
python3 - <<'PY' || fail "truncate-then-extend failed"
import os
fd = os.open("/mnt/pfs/t", os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
os.write(fd, b"\x77" * (4 << 20))
os.fsync(fd)
os.ftruncate(fd, 1 << 20)
os.ftruncate(fd, 4 << 20)
os.close(fd)
PY
power_loss
echo 3 > /proc/sys/vm/drop_caches
python3 - <<'PY' || fail "cut bytes came back after the power loss"
import os
data = open("/mnt/pfs/t", "rb").read()
assert len(data) == 4 << 20, len(data)
assert data[: 1 << 20] == b"\x77" * (1 << 20), "kept part changed"
assert data[1 << 20:] == bytes(3 << 20), "bytes past the cut came back"
PY

umount_pfs /mnt/pfs
unload_module
stop_cluster
umount $LOSSY
losetup -d "$dev"
check_dmesg_clean "$mark"
step "passed"
