#!/bin/bash
# guest-timeout: 600
# pfs.ko over two soft-RoCE rails (rails=pfsr0c:pfsr1c): four concurrent
# streams split their bytes over both rails; a rail taken down in the middle
# of a fio verify run costs no error and no bad byte (its requests go to the
# other rail), and once it is back up it carries traffic again; with every
# rail down, transport=rdma fails with EIO at once (no hung task) while
# transport=auto goes on over TCP; no registration outlives the mount.
. "$(dirname "$0")/lib.sh"

mnt=/mnt/pfs
jobs=$PFS_SRC/tests/kernel/fio-verify.fio

show_rails() {
	grep -E "^[[:space:]]+rail " /proc/self/mountstats
}

step "two soft-RoCE rails; servers on both and on TCP"
start_rdma_cluster 2
pfs_ctl mkdir /mr
pfs_ctl entry set --num-targets 4 --chunk-size 64K /mr
mark=$(dmesg_mark)
load_module
mount_pfs "$mnt" transport=rdma,rails=pfsr0c:pfsr1c
grep -q "rails=pfsr0c:pfsr1c" /proc/mounts || fail "the mount does not show its rails"

step "4 concurrent streams split over both rails"
fio --output-format=terse --name=streams --directory="$mnt/mr" --numjobs=4 \
	--size=16M --bs=1M --rw=write --direct=1 --ioengine=psync \
	--verify=crc32c --verify_fatal=1 > /tmp/streams.out 2>&1 ||
	{ cat /tmp/streams.out; fail "fio: 4 streams over 2 rails failed"; }
show_rails
b0=$(rail_stat pfsr0c bytes) b1=$(rail_stat pfsr1c bytes)
total=$((b0 + b1))
echo "rail pfsr0c: $b0 bytes ($((100 * b0 / total))%), rail pfsr1c: $b1 bytes ($((100 * b1 / total))%)"
[ "$total" -ge $((4 * 2 * (16 << 20))) ] || fail "the rails carried $total bytes of 4 x 16 MiB written and read"
[ $((100 * b0)) -ge $((30 * total)) ] || fail "rail pfsr0c carried less than 30% of the bytes"
[ $((100 * b1)) -ge $((30 * total)) ] || fail "rail pfsr1c carried less than 30% of the bytes"
# pfs-ctl stats client shows the same counters.
pfs_ctl stats client "$mnt"
pfs_ctl stats client --json "$mnt" > /tmp/client.json
python3 - "$b0" "$b1" <<'PY' || fail "pfs-ctl stats client disagrees with mountstats: $(cat /tmp/client.json)"
import json, sys
m = json.load(open("/tmp/client.json"))["mounts"][0]
b0, b1 = int(sys.argv[1]), int(sys.argv[2])
assert m["rails"]["pfsr0c"]["bytes"] >= b0 and m["rails"]["pfsr1c"]["bytes"] >= b1, m
assert m["rails"]["pfsr0c"]["state"] == "up" and m["transports"]["rdma"]["requests"] > 0, m
PY

step "rail pfsr0c down in the middle of a fio verify run"
errors0=$(rail_stat pfsr0c errors)
PFS_FIO_DIR=$mnt/mr PFS_FIO_SIZE=16M fio --output-format=terse "$jobs" > /tmp/down.out 2>&1 &
fio_pid=$!
before=$(rail_stat pfsr0c bytes)
wait_until "rail pfsr0c carrying the run" eval '[ "$(rail_stat pfsr0c bytes)" -gt $((before + (8 << 20))) ]'
rail_down 0
echo "pfsr0c down after $(($(rail_stat pfsr0c bytes) - before)) bytes of the run over it"
wait "$fio_pid" || { cat /tmp/down.out; fail "fio verify failed with a rail taken down under it"; }
show_rails
[ "$(rail_stat pfsr0c errors)" -gt "$errors0" ] || fail "the rail taken down shows no error"
grep -q "state down" <(show_rails | grep pfsr0c) || fail "the rail taken down is not shown down"
expect_dmesg "$mark" "connection lost"

step "rail pfsr0c up again: used again"
rail_up 0
before=$(rail_stat pfsr0c bytes)
# Read until requests go through it again (its back-off is at most 30 s).
wait_until "traffic over pfsr0c again" eval \
	'echo 3 > /proc/sys/vm/drop_caches && cat "$mnt"/mr/streams.* > /dev/null && [ "$(rail_stat pfsr0c bytes)" -gt "$before" ]'
show_rails
grep -q "state up" <(show_rails | grep pfsr0c) || fail "the rail back up is not shown up"

step "the data written across the failover, read again from the servers"
umount_pfs "$mnt"
[ "$(kernel_mrs)" -eq 0 ] || fail "registrations of pfs.ko left after umount: $(rdma res show mr)"
mount_pfs "$mnt" transport=rdma,rails=pfsr0c:pfsr1c
PFS_FIO_DIR=$mnt/mr PFS_FIO_SIZE=16M fio --output-format=terse --verify_only "$jobs" > /tmp/again.out 2>&1 ||
	{ cat /tmp/again.out; fail "data written across a rail failure does not verify"; }
show_rails
[ "$(rail_stat pfsr0c bytes)" -gt 0 ] && [ "$(rail_stat pfsr1c bytes)" -gt 0 ] ||
	fail "a fresh mount does not use both rails"
umount_pfs "$mnt"

step "every rail down: transport=rdma fails with EIO, no hung task"
mount_pfs "$mnt" transport=rdma,rails=pfsr0c:pfsr1c,connect_timeout=2000
cat "$mnt/mr/streams.0.0" > /dev/null
rail_down 0
rail_down 1
echo 3 > /proc/sys/vm/drop_caches
SECONDS=0
if timeout 60 cat "$mnt/mr/streams.1.0" > /dev/null 2> /tmp/eio.err; then
	fail "a read went through with every rail down on a transport=rdma mount"
fi
echo "every rail down, transport=rdma: $(cat /tmp/eio.err) after $SECONDS s"
grep -q "Input/output error\|No route to host" /tmp/eio.err || fail "not EIO/EHOSTUNREACH: $(cat /tmp/eio.err)"
umount_pfs "$mnt"

step "every rail down: transport=auto goes on over TCP"
down=$(dmesg_mark)
mount_pfs "$mnt" transport=auto,rails=pfsr0c:pfsr1c,connect_timeout=2000
cmp "$mnt/mr/streams.2.0" "$mnt/mr/streams.2.0" || fail "transport=auto cannot read with every rail down"
PFS_FIO_DIR=$mnt/mr PFS_FIO_SIZE=16M fio --output-format=terse --verify_only "$jobs" > /tmp/auto.out 2>&1 ||
	{ cat /tmp/auto.out; fail "transport=auto did not fall back to TCP"; }
[ "$(mount_stat tcp bulk_received)" -gt 0 ] || fail "transport=auto moved no data over TCP"
expect_dmesg "$down" "every RDMA rail is down: over TCP meanwhile"
umount_pfs "$mnt"
rail_up 0
rail_up 1
[ "$(kernel_mrs)" -eq 0 ] || fail "registrations of pfs.ko left: $(rdma res show mr)"

unload_module
check_dmesg_clean "$mark"
stop_cluster
