#!/bin/bash
# guest-timeout: 540
# GPUDirect Storage with a test double of nvidia-fs (tests/kernel/nvfs_mock:
# it registers with pfs.ko the way nvidia-fs does, and the pages of its
# device's mappings are its "GPU" pages). O_DIRECT reads and writes of
# 1..64 MiB through "GPU" buffers, on a mount with two soft-RoCE rails:
# the data is what libpfs reads back, every byte went by RDMA on the rail
# the double ranks nearest (and on the other once that one is ranked
# nearest), none through CPU memory; when the nearest rail goes down in the
# middle of a transfer, the rest goes by the other. A buffer mixing CPU and
# GPU pages fails with EINVAL; a GPU buffer on a TCP mount with EOPNOTSUPP.
# The double unregisters while a transfer is in flight: that waits for it,
# and it completes. Both load orders work, pfs.ko cannot be unloaded while
# the double is registered, and no registration of memory is left behind.
# A file's holes reach GPU memory as zeros the servers write. Soft-RoCE
# cannot DMA: GPU transfers use it only when the double says its "GPU"
# pages are CPU memory (cpu_pages=1, its default); nvidia-fs' are refused.
. "$(dirname "$0")/lib.sh"

mnt=/mnt/pfs
tcp_mnt=/mnt/pfs-tcp
mock_ko=$PFS_SRC/tests/kernel/nvfs_mock/pfs_nvfs_mock.ko
mock_dev=/dev/pfs_nvfs_mock
mock_par=/sys/module/pfs_nvfs_mock/parameters
gpu_io=$PFS_BUILD/tests/kernel/nvfs_mock/pfs-gpu-io

gpu_stat() { mountstats_field gpu nvfs "$1"; }
# The GPU errors of the TCP mount (gpu_stat reads the last mount's).
tcp_gpu_errors() {
	awk -v m="$tcp_mnt" '$1 == "device" { on = $5 == m } on && $1 == "gpu" { print $10 }' /proc/self/mountstats
}

load_mock() {
	[ -f "$mock_ko" ] || fail "$mock_ko missing: build it with 'make kmod'"
	insmod "$mock_ko" || fail "insmod $mock_ko failed"
}

# Counters before a transfer, compared by transferred.
snapshot() {
	before=("$(gpu_stat bytes)" "$(gpu_stat requests)" "$(rail_stat pfsr0c bytes)"
		"$(rail_stat pfsr1c bytes)" "$(mount_stat tcp bulk_sent)"
		"$(mount_stat tcp bulk_received)" "$(cat $mock_par/maps)")
}

# Where snapshot keeps a rail's bytes.
rail_slot() { if [ "$1" = pfsr0c ]; then echo 2; else echo 3; fi; }

# transferred SIZE NEAR_RAIL OTHER_RAIL: SIZE bytes moved on GPU memory by
# RDMA, all on NEAR_RAIL, none by TCP, no copy, every mapping undone.
transferred() {
	local size=$1 near=$2 other=$3 gpu_bytes requests near_b other_b
	gpu_bytes=$(($(gpu_stat bytes) - before[0]))
	requests=$(($(gpu_stat requests) - before[1]))
	near_b=$(($(rail_stat "$near" bytes) - before[$(rail_slot "$near")]))
	other_b=$(($(rail_stat "$other" bytes) - before[$(rail_slot "$other")]))
	echo "  $size bytes: gpu bytes +$gpu_bytes in $requests requests, $near +$near_b, $other +$other_b, maps +$(($(cat $mock_par/maps) - before[6]))"
	[ "$gpu_bytes" -eq "$size" ] || fail "GPU bytes counted: $gpu_bytes, not $size"
	[ "$requests" -gt 0 ] || fail "no GPU request counted"
	[ "$near_b" -eq "$size" ] || fail "rail $near (nearest the GPU) carried $near_b of $size bytes"
	[ "$other_b" -eq 0 ] || fail "rail $other (farther from the GPU) carried $other_b bytes"
	[ "$(mount_stat tcp bulk_sent)" -eq "${before[4]}" ] &&
		[ "$(mount_stat tcp bulk_received)" -eq "${before[5]}" ] ||
		fail "GPU data went over TCP"
	[ "$(gpu_stat copies)" -eq 0 ] || fail "GPU data was copied through CPU memory"
	[ "$(cat $mock_par/maps)" -gt "${before[6]}" ] || fail "nvidia-fs mapped nothing"
	[ "$(cat $mock_par/live)" -eq 0 ] || fail "GPU mappings left: $(cat $mock_par/live)"
}

# gpu_round SIZE SEED NEAR OTHER: written from and read into GPU memory.
gpu_round() {
	local size=$1 seed=$2 f=$mnt/gpu/f$1
	"$gpu_io" pattern /tmp/want "$size" "$seed"
	snapshot
	"$gpu_io" write "$f" "$size" "$seed" || fail "GPU write of $size bytes failed"
	transferred "$size" "$3" "$4"
	pfs_ctl cp "pfs:/gpu/f$size" /tmp/libpfs.bin || fail "libpfs cannot read $f"
	cmp /tmp/want /tmp/libpfs.bin || fail "libpfs reads other bytes than the GPU wrote ($size)"
	echo 3 > /proc/sys/vm/drop_caches
	snapshot
	"$gpu_io" read "$f" "$size" /tmp/got || fail "GPU read of $size bytes failed"
	transferred "$size" "$3" "$4"
	cmp /tmp/want /tmp/got || fail "the GPU read other bytes than libpfs ($size)"
}

# A 4 MiB GPU write (every target) went all by rail $1 (snapshot first).
all_by() {
	snapshot
	"$gpu_io" write "$mnt/gpu/warm" $((4 << 20)) 9 || return 1
	[ $(($(rail_stat "$1" bytes) - before[$(rail_slot "$1")])) -eq $((4 << 20)) ]
}

# warm_up RAIL: connections on every rail, to every server, before the rail
# choice is asserted: soft-RoCE under TCG fails a first connect now and then
# (the rail then backs off 1 s and the transfer takes the other).
warm_up() {
	wait_until "a GPU transfer all by $1" all_by "$1"
}

storage_pids() { cat "$PFS_CLUSTER_DIR"/run/storage*.pid; }

pfs_on_fail() {
	grep -E "^[[:space:]]+(rail|transport|gpu) " /proc/self/mountstats || true
	grep -H . "$mock_par"/* 2> /dev/null || true
}

step "two soft-RoCE rails; pfs.ko first, then the nvidia-fs double"
start_rdma_cluster 2
# Files on the targets, however small: the rails' byte counts are under test.
pfs_ctl mkdir /gpu
pfs_ctl entry set --num-targets 4 --chunk-size 1M --inline-max 0 /gpu
mark=$(dmesg_mark)
load_module
mount_pfs "$mnt" rails=pfsr0c:pfsr1c
load_mock
[ "$(cat $mock_par/registered)" -eq 1 ] || fail "the double did not register with pfs.ko"
expect_dmesg "$mark" "nvidia-fs registered"
grep -q "gpu nvfs: state registered" /proc/self/mountstats || fail "mountstats does not show nvidia-fs registered"

step "GPU reads and writes, the double ranking rxe1c nearest"
echo rxe1c > $mock_par/near
warm_up pfsr1c
gpu_round $((1 << 20)) 1 pfsr1c pfsr0c
gpu_round $((8 << 20)) 2 pfsr1c pfsr0c
gpu_round $((64 << 20)) 3 pfsr1c pfsr0c

step "rxe0c ranked nearest: the other rail"
echo rxe0c > $mock_par/near
warm_up pfsr0c
gpu_round $((8 << 20)) 4 pfsr0c pfsr1c
pfs_ctl stats client "$mnt"

step "a GPU read of a file with holes: the servers send the zeros"
f=$mnt/gpu/holes
"$gpu_io" pattern /tmp/pat $((1 << 20)) 6
truncate -s $((8 << 20)) "$f"
dd if=/tmp/pat of="$f" bs=1M seek=3 conv=notrunc,fsync status=none
{ head -c $((3 << 20)) /dev/zero; cat /tmp/pat; head -c $((4 << 20)) /dev/zero; } > /tmp/want
echo 3 > /proc/sys/vm/drop_caches
snapshot
received=$(mount_stat rdma bulk_received)
# The buffer is filled with 0xa5 first: only what the servers wrote is zero.
"$gpu_io" read "$f" $((8 << 20)) /tmp/got || fail "GPU read of a file with holes failed"
transferred $((8 << 20)) pfsr0c pfsr1c
cmp /tmp/want /tmp/got || fail "a GPU read of holes did not read zeros"
[ $(($(mount_stat rdma bulk_received) - received)) -eq $((8 << 20)) ] ||
	fail "the servers did not write the holes' zeros: $(($(mount_stat rdma bulk_received) - received)) bytes"

step "the rail nearest the GPU goes down mid-transfer: the rest goes by the other"
"$gpu_io" pattern /tmp/want $((64 << 20)) 3
errors0=$(rail_stat pfsr0c errors)
bytes1=$(rail_stat pfsr1c bytes)
# The storage servers stopped: the transfer is in flight on rxe0c when it goes.
kill -STOP $(storage_pids)
"$gpu_io" read "$mnt/gpu/f$((64 << 20))" $((64 << 20)) /tmp/got 2> /tmp/down.err &
reader=$!
wait_until "GPU memory mapped for the transfer" eval '[ "$(cat $mock_par/live)" -gt 0 ]'
rail_down 0
kill -CONT $(storage_pids)
wait $reader || fail "the GPU read whose rail went down failed: $(cat /tmp/down.err)"
rail_up 0
cmp /tmp/want /tmp/got || fail "the GPU read whose rail went down read other bytes"
echo "  pfsr0c errors +$(($(rail_stat pfsr0c errors) - errors0)), pfsr1c +$(($(rail_stat pfsr1c bytes) - bytes1)) bytes"
[ "$(rail_stat pfsr0c errors)" -gt "$errors0" ] || fail "the rail taken down shows no error"
[ "$(rail_stat pfsr1c bytes)" -gt "$bytes1" ] || fail "nothing went by the other rail"
[ "$(gpu_stat copies)" -eq 0 ] || fail "GPU data was copied through CPU memory"
[ "$(cat $mock_par/live)" -eq 0 ] || fail "GPU mappings left: $(cat $mock_par/live)"

step "a buffer mixing CPU and GPU pages: EINVAL"
m2=$(dmesg_mark)
"$gpu_io" mixed "$mnt/gpu/f$((8 << 20))" || fail "mixed CPU and GPU pages: not EINVAL"
expect_dmesg "$m2" "mixes GPU and CPU pages"

step "the double unregisters with a transfer in flight: it waits, the transfer completes"
"$gpu_io" pattern /tmp/want $((64 << 20)) 3
echo 3 > /proc/sys/vm/drop_caches
m3=$(dmesg_mark)
# The storage servers stopped: the transfer stays in flight as long as needed.
kill -STOP $(storage_pids)
"$gpu_io" read "$mnt/gpu/f$((64 << 20))" $((64 << 20)) /tmp/got 2> /tmp/inflight.err &
reader=$!
wait_until "GPU memory mapped for the transfer" eval '[ "$(cat $mock_par/live)" -gt 0 ]'
echo unregister > $mock_dev &
unreg=$!
wait_until "the unregister waiting" eval 'dmesg_since $m3 | grep -q "waiting for .* GPU transfers"'
pfs_running $unreg || fail "unregister returned with a GPU transfer in flight"
kill -CONT $(storage_pids)
wait $unreg || fail "unregister failed"
wait $reader || fail "the GPU read in flight at unregister failed: $(cat /tmp/inflight.err)"
cmp /tmp/want /tmp/got || fail "the GPU read in flight at unregister read other bytes"
expect_dmesg "$m3" "nvidia-fs unregistered after its last transfer"
[ "$(cat $mock_par/registered)" -eq 0 ] || fail "the double is still registered"
[ "$(cat $mock_par/live)" -eq 0 ] || fail "GPU mappings left after unregister"
grep -q "gpu nvfs: state unregistered" /proc/self/mountstats || fail "mountstats does not show nvidia-fs gone"
rmmod pfs_nvfs_mock || fail "the double cannot be unloaded once unregistered"
umount_pfs "$mnt"
[ "$(kernel_mrs)" -eq 0 ] || fail "registrations of pfs.ko left: $(rdma res show mr)"
unload_module

step "the double first, then pfs.ko"
load_mock
[ "$(cat $mock_par/registered)" -eq 0 ] || fail "the double registered without pfs.ko"
load_module
mount_pfs "$mnt" rails=pfsr0c:pfsr1c
echo rxe1c > $mock_par/near
# nvidia-fs looks for file systems when it is opened: the transfer's open.
warm_up pfsr1c
[ "$(cat $mock_par/registered)" -eq 1 ] || fail "the double did not register once opened"
gpu_round $((8 << 20)) 5 pfsr1c pfsr0c
umount_pfs "$mnt"
if rmmod pfs 2> /tmp/rmmod.err; then
	fail "pfs.ko unloaded while nvidia-fs holds its registration"
fi
echo "rmmod pfs while registered: $(cat /tmp/rmmod.err)"
mount_pfs "$mnt" rails=pfsr0c:pfsr1c

step "a GPU buffer on a TCP mount: EOPNOTSUPP"
mount_pfs "$tcp_mnt" transport=tcp
errors=$(tcp_gpu_errors)
if "$gpu_io" read "$tcp_mnt/gpu/f$((8 << 20))" $((8 << 20)) /tmp/got 2> /tmp/tcp.err; then
	fail "a GPU read succeeded on a TCP mount"
fi
grep -q "Operation not supported" /tmp/tcp.err || fail "GPU read on TCP: $(cat /tmp/tcp.err)"
echo "GPU read on a TCP mount: $(cat /tmp/tcp.err)"
after=$(tcp_gpu_errors)
[ "$after" -gt "$errors" ] || fail "the TCP mount counted no GPU error"
expect_dmesg "$mark" "GPU memory moves by RDMA only, and this mount has no RDMA path"
umount_pfs "$tcp_mnt"

step "the double unloaded first, then pfs.ko"
rmmod pfs_nvfs_mock || fail "rmmod of the double failed"

step "a double whose GPU pages are not CPU memory (as nvidia-fs'): soft-RoCE refused"
m4=$(dmesg_mark)
insmod "$mock_ko" cpu_pages=0 || fail "insmod $mock_ko cpu_pages=0 failed"
[ "$(cat $mock_par/registered)" -eq 1 ] || fail "the double did not register with pfs.ko loaded"
if "$gpu_io" read "$mnt/gpu/f$((8 << 20))" $((8 << 20)) /tmp/got 2> /tmp/virt.err; then
	fail "GPU memory went over soft-RoCE, which cannot DMA"
fi
grep -q "Operation not supported" /tmp/virt.err || fail "GPU read over soft-RoCE: $(cat /tmp/virt.err)"
echo "GPU read over soft-RoCE from nvidia-fs-like pages: $(cat /tmp/virt.err)"
expect_dmesg "$m4" "no RDMA device that can DMA to it"
rmmod pfs_nvfs_mock || fail "rmmod of the double failed"
umount_pfs "$mnt"
[ "$(kernel_mrs)" -eq 0 ] || fail "registrations of pfs.ko left: $(rdma res show mr)"
unload_module
check_dmesg_clean "$mark"
stop_cluster
