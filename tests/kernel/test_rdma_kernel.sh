#!/bin/bash
# guest-timeout: 600
# pfs.ko over RDMA (soft-RoCE rails): fio verify=crc32c, buffered and
# O_DIRECT, into a directory striped over 4 targets, with transport=rdma;
# the storage servers' counters show the data went by RDMA READ (writes)
# and RDMA WRITE (reads), the mount's show how much memory it registered,
# and none of it stays registered once a request ended; a storage server
# killed under RDMA I/O gives the errors TCP gives and leaves no
# registration behind; with every rail down, transport=rdma fails clearly
# and transport=auto goes on over TCP.
. "$(dirname "$0")/lib.sh"

mnt=/mnt/pfs
jobs=$PFS_SRC/tests/kernel/fio-verify.fio
size=16M

# The sum over the storage servers of one RDMA counter.
storage_sum() {  # NAME
	pfs_ctl stats server --json --interval 0.2 | python3 -c '
import json, sys
nodes = json.load(sys.stdin)["nodes"]
print(sum(n["rdma"][sys.argv[1]] for n in nodes if n["type"] == "storage" and n["reachable"]))' "$1"
}

run_fio() {  # WHAT [FIO OPTIONS]
	local what=$1 out=/tmp/fio-$RANDOM.out
	shift
	PFS_FIO_DIR=$mnt/rdma PFS_FIO_SIZE=$size fio --output-format=terse "$@" "$jobs" > "$out" 2>&1 || {
		cat "$out"
		fail "fio: $what failed"
	}
}

step "one soft-RoCE rail; servers on it and on TCP"
start_rdma_cluster 1
pfs_ctl mkdir /rdma
pfs_ctl entry set --num-targets 4 --chunk-size 64K /rdma
mark=$(dmesg_mark)
load_module
mount_pfs "$mnt" transport=rdma
grep -q "transport=rdma" /proc/mounts || fail "the mount does not show transport=rdma"

step "fio verify=crc32c, buffered and O_DIRECT, over RDMA"
reads_before=$(storage_sum read_bytes)
writes_before=$(storage_sum write_bytes)
run_fio "write and verify over RDMA"
umount_pfs "$mnt"
mount_pfs "$mnt" transport=rdma
run_fio "verify after remount over RDMA" --verify_only
read_bytes=$(($(storage_sum read_bytes) - reads_before))
write_bytes=$(($(storage_sum write_bytes) - writes_before))
echo "storage servers: RDMA READ $read_bytes bytes, RDMA WRITE $write_bytes bytes"
# 5 jobs of 16 MiB written, then read back at least once (after the remount).
[ "$read_bytes" -ge $((5 * (16 << 20))) ] || fail "written data did not come by RDMA READ ($read_bytes)"
[ "$write_bytes" -ge $((5 * (16 << 20))) ] || fail "read data did not go by RDMA WRITE ($write_bytes)"
grep -A 3 "fstype pfs" /proc/self/mountstats | grep transport
[ "$(mount_stat rdma registrations)" -gt 0 ] || fail "the mount registered no memory over RDMA"
[ "$(mount_stat rdma registered_now)" -eq 0 ] || fail "memory still registered with no request under way"
[ "$(mount_stat tcp bulk_received)" -eq 0 ] || fail "data came over TCP on a transport=rdma mount"
[ "$(mount_stat tcp conns)" -le 1 ] || fail "connections to servers over TCP on a transport=rdma mount (mgmtd aside)"

step "a storage server killed during RDMA I/O"
dd if=/dev/zero of="$mnt/rdma/big" bs=1M count=64 oflag=direct 2> /tmp/dd.err &
dd_pid=$!
wait_until "the write under way" eval '[ "$(storage_sum read_bytes)" -gt '"$((reads_before + read_bytes + (8 << 20)))"' ]'
kill -9 "$(cat "$PFS_CLUSTER_DIR/run/storage2.pid")"
rm -f "$PFS_CLUSTER_DIR/run/storage2.pid"
if wait "$dd_pid"; then fail "a direct write went through with a storage server killed under it"; fi
grep -q "Input/output error" /tmp/dd.err || fail "the write did not fail with EIO: $(cat /tmp/dd.err)"
[ "$(mount_stat rdma registered_now)" -eq 0 ] || fail "memory still registered after the failed write"
pfs_start_daemon storage2 server/storage/pfs-storage
wait_until "4 targets ONLINE again" pfs_all_online 4
cmp <(head -c $((1 << 20)) "$mnt/rdma/shared.dat") <(head -c $((1 << 20)) "$mnt/rdma/shared.dat") ||
	fail "cannot read after the storage server came back"
umount_pfs "$mnt"
[ "$(kernel_mrs)" -eq 0 ] || fail "registrations of pfs.ko left after umount: $(rdma res show mr)"

step "every rail down: transport=rdma fails clearly, transport=auto uses TCP"
rail_down 0
down=$(dmesg_mark)
mkdir -p "$mnt"
if mount -t pfs -o "secret_file=$PFS_SECRET,transport=rdma,connect_timeout=2000" "$PFS_MGMTD" "$mnt" 2> /tmp/rdma-down.err; then
	fail "a transport=rdma mount worked with every rail down"
fi
expect_dmesg "$down" "cannot connect over RDMA to 10\.88\.0\.2"
echo "transport=rdma, every rail down: $(cat /tmp/rdma-down.err); $(dmesg_since "$down" | grep -m 1 'over RDMA')"
mount_pfs "$mnt" transport=auto,connect_timeout=2000
PFS_FIO_DIR=$mnt/rdma PFS_FIO_SIZE=$size fio --output-format=terse --verify_only "$jobs" > /tmp/auto.out 2>&1 ||
	fail "transport=auto did not fall back to TCP: $(cat /tmp/auto.out)"
[ "$(mount_stat tcp requests)" -gt 0 ] || fail "transport=auto sent nothing over TCP"
umount_pfs "$mnt"
rail_up 0

unload_module
check_dmesg_clean "$mark"
stop_cluster
