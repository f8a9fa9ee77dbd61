#!/bin/bash
# guest-timeout: 420
# libpfs (pfs-ctl) over RDMA: soft-RoCE rails, every server listening on
# RDMA beside TCP. The data of a file striped over 4 targets goes by RDMA
# READ (writes) and RDMA WRITE (reads) issued by the storage servers, not
# by SEND; the memory the client lent for each request is taken back when
# the request ends, also when a storage server dies under it; a client
# told to use RDMA only fails clearly when no rail works, and one left to
# choose falls back to TCP. libpfs multirail (--rails): 4 concurrent copies
# split over two rails; a rail that cannot connect backs off and is used
# once it can, in the same process; a rail whose link goes down in the
# middle of a copy leaves it whole, its requests resent on the other rail.
. "$(dirname "$0")/lib.sh"

# A field of the one-line JSON that pfs-ctl --transport-stats prints.
field() {  # FILE NAME
	grep -o "\"$2\":[0-9]*" "$1" | tail -n 1 | cut -d: -f2
}

# A counter of one rail in pfs-ctl --transport-stats' "rails" object.
rail_field() {  # FILE RAIL NAME
	python3 -c '
import json, sys
print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["rails"].get(sys.argv[2], {}).get(sys.argv[3], 0))' "$@"
}

# The sum over the storage servers of one RDMA counter (stats server --json).
storage_sum() {  # NAME
	pfs_ctl stats server --json --interval 0.2 | python3 -c '
import json, sys
nodes = json.load(sys.stdin)["nodes"]
print(sum(n["rdma"][sys.argv[1]] for n in nodes if n["type"] == "storage" and n["reachable"]))' "$1"
}

step "two soft-RoCE rails"
setup_rails 2
PFS_SERVER_CONF="rdma-interfaces = $(rail_servers 2)" start_cluster 2 2
grep -q "rdma=10.88.0.2,10.88.1.2" "$PFS_CLUSTER_DIR/log/storage1.log" ||
	fail "storage1 does not say it serves RDMA on both rails"
pfs_ctl mkdir /wide
pfs_ctl entry set --num-targets 4 --chunk-size 256K /wide

step "32 MiB in and out over RDMA, striped over 4 targets"
head -c $((32 << 20)) /dev/urandom > /tmp/in.bin
pfs_ctl --transport rdma --transport-stats cp /tmp/in.bin pfs:/wide/f 2> /tmp/in.stats ||
	fail "cp in over RDMA failed: $(cat /tmp/in.stats)"
pfs_ctl --transport rdma --transport-stats cp pfs:/wide/f /tmp/out.bin 2> /tmp/out.stats ||
	fail "cp out over RDMA failed: $(cat /tmp/out.stats)"
cmp /tmp/in.bin /tmp/out.bin || fail "the file read back over RDMA differs"
for f in /tmp/in.stats /tmp/out.stats; do
	[ "$(field $f rdma_connections)" -gt 0 ] || fail "no RDMA connection: $(cat $f)"
	[ "$(field $f remote_regions)" -gt 0 ] || fail "no memory lent for a request: $(cat $f)"
	[ "$(field $f remote_regions_now)" -eq 0 ] || fail "memory still lent after the run: $(cat $f)"
	# Requests and replies only: the data did not go by SEND.
	[ "$(field $f send_bytes)" -lt $((1 << 20)) ] || fail "data went by SEND: $(cat $f)"
	[ "$(field $f recv_bytes)" -lt $((1 << 20)) ] || fail "data came by SEND: $(cat $f)"
done
read_bytes=$(storage_sum read_bytes)
write_bytes=$(storage_sum write_bytes)
echo "storage servers: RDMA READ $read_bytes bytes, RDMA WRITE $write_bytes bytes"
[ "$read_bytes" -ge $((32 << 20)) ] || fail "the written data did not come by RDMA READ ($read_bytes bytes)"
[ "$write_bytes" -ge $((32 << 20)) ] || fail "the read data did not go by RDMA WRITE ($write_bytes bytes)"

step "metadata over RDMA too, and TCP when asked"
pfs_ctl --transport rdma ls -l /wide | grep -q " f$" || fail "ls over RDMA does not show the file"
pfs_ctl --transport tcp --transport-stats cp pfs:/wide/f /tmp/tcp.bin 2> /tmp/tcp.stats
cmp /tmp/in.bin /tmp/tcp.bin || fail "the file read back over TCP differs"
[ "$(field /tmp/tcp.stats rdma_connections)" -eq 0 ] || fail "--transport tcp used RDMA"

step "libpfs multirail: 4 concurrent streams split over both rails"
rails=pfsr0c,pfsr1c
for i in 1 2 3 4; do
	head -c $((16 << 20)) /dev/urandom > "/tmp/stream$i.bin"
done
pids=()
for i in 1 2 3 4; do
	pfs_ctl --rails $rails --transport rdma --transport-stats cp "/tmp/stream$i.bin" "pfs:/wide/s$i" \
		2> "/tmp/stream$i.stats" &
	pids+=($!)
done
for i in 1 2 3 4; do
	wait "${pids[$((i - 1))]}" || fail "stream $i failed: $(cat "/tmp/stream$i.stats")"
done
total0=0 total1=0
for i in 1 2 3 4; do
	pfs_ctl --rails $rails --transport rdma cp "pfs:/wide/s$i" "/tmp/back$i.bin"
	cmp "/tmp/stream$i.bin" "/tmp/back$i.bin" || fail "stream $i read back differs"
	total0=$((total0 + $(rail_field "/tmp/stream$i.stats" pfsr0c bytes)))
	total1=$((total1 + $(rail_field "/tmp/stream$i.stats" pfsr1c bytes)))
	[ "$(field "/tmp/stream$i.stats" remote_regions_now)" -eq 0 ] || fail "memory still lent: $(cat "/tmp/stream$i.stats")"
done
echo "rail pfsr0c: $total0 bytes, rail pfsr1c: $total1 bytes"
[ $((total0 * 100)) -ge $(((total0 + total1) * 30)) ] || fail "rail pfsr0c carried under 30% ($total0 of $((total0 + total1)))"
[ $((total1 * 100)) -ge $(((total0 + total1) * 30)) ] || fail "rail pfsr1c carried under 30% ($total1 of $((total0 + total1)))"

step "a storage server killed during RDMA I/O"
head -c $((128 << 20)) /dev/urandom > /tmp/big.bin
pfs_ctl --transport rdma --transport-stats --timeout-ms 3000 cp /tmp/big.bin pfs:/wide/big \
	2> /tmp/kill.stats &
cp_pid=$!
wait_until "the copy under way" eval '[ "$(storage_sum read_bytes)" -gt '"$((read_bytes + (8 << 20)))"' ]'
kill -9 "$(cat "$PFS_CLUSTER_DIR/run/storage2.pid")"
rm -f "$PFS_CLUSTER_DIR/run/storage2.pid"
if wait "$cp_pid"; then fail "cp succeeded with a storage server killed under it"; fi
grep -q "pfs-ctl: " /tmp/kill.stats || fail "the failed cp says nothing: $(cat /tmp/kill.stats)"
[ "$(field /tmp/kill.stats remote_regions_now)" -eq 0 ] ||
	fail "memory still lent after the failed run: $(cat /tmp/kill.stats)"
pfs_start_daemon storage2 server/storage/pfs-storage
wait_until "4 targets ONLINE again" pfs_all_online 4

pfs_on_fail() {
	echo "--- pfs-ctl cp (pid $cp_pid) said:"
	cat /tmp/rail.stats
	show_threads "$cp_pid"
}

# rail_copy UNTIL ACTION SRC DST: pfs-ctl cp SRC DST over both rails in the
# background; once the shell condition UNTIL holds, ACTION; the copy must
# then finish. What it said (back-offs and resends, then --transport-stats)
# is in /tmp/rail.stats.
rail_copy() {
	local until=$1 action=$2
	: > /tmp/rail.stats
	(
		export PFS_LOG_LEVEL=info
		# A request's timeout is not what is tested: under TCG the kernel
		# stalled for seconds now and then when a soft-RoCE port went
		# down (14 s seen; lib.sh's rail_down says why and what stops it),
		# and requests on the rail left timed out with it.
		exec "$PFS_BUILD/utils/ctl/pfs-ctl" --config "$PFS_CLUSTER_DIR/etc/ctl.conf" --timeout-ms 30000 \
			--rails $rails --transport rdma --transport-stats cp "$3" "$4" 2> /tmp/rail.stats
	) &
	cp_pid=$!
	wait_until "$until" eval "$until"
	$action
	echo "$action: once $until"
	local rc=0
	wait_exit "$cp_pid" 120 || rc=$?
	if [ $rc -eq 124 ] && [ "$action" = "rail_down 0" ] && dmesg | grep -q "cm_destroy_id_wait_timeout"; then
		# Soft-RoCE on this kernel can keep a disconnect request (DREQ)
		# posted on a port that went down from completing until the
		# port is up again, and the kernel's rdma_destroy_id waits for
		# it (cm_destroy_id_wait_timeout, every 10 s in dmesg): the
		# process is stuck in the kernel, not in libpfs. The copy must
		# still end, whole, once the port is back.
		echo "pfs-ctl stuck in the kernel's RDMA teardown on the down port: rail 0 up again"
		rail_up 0
		rc=0
		wait_exit "$cp_pid" 90 || rc=$?
		rail_down 0
	fi
	[ $rc -eq 0 ] || fail "the copy failed around '$action' (status $rc)"
	tail -n 1 /tmp/rail.stats
	[ "$(rail_field /tmp/rail.stats pfsr0c errors)" -gt 0 ] || fail "rail pfsr0c shows no error"
	[ "$(rail_field /tmp/rail.stats pfsr1c bytes)" -gt 0 ] || fail "rail pfsr1c not used"
	[ "$(field /tmp/rail.stats remote_regions_now)" -eq 0 ] || fail "memory still lent after the copy"
}

# Rail 0 cannot reach the servers (its link stays up, every packet it sends
# is lost): its connects fail, it backs off and is probed again; the way
# opens in the middle of a copy.
step "libpfs multirail: a rail that cannot connect backs off, and is used once it can"
head -c $((160 << 20)) /dev/urandom > /tmp/rail.bin
modprobe sch_netem
tc qdisc add dev pfsr0c root netem loss 100%
rail_copy 'grep -q "RDMA path backs off.*rdma from 10.88.0.1" /tmp/rail.stats' \
	"tc qdisc del dev pfsr0c root" /tmp/rail.bin pfs:/wide/rail
# Probed 1 s after its first failure, it carries a good share of the rest.
[ "$(rail_field /tmp/rail.stats pfsr0c bytes)" -ge $((16 << 20)) ] || fail "rail pfsr0c not used once it could connect"

step "libpfs multirail: a rail taken down in the middle of a copy"
written_before=$(storage_sum write_bytes)
rail_copy '[ "$(storage_sum write_bytes)" -gt '"$((written_before + (24 << 20)))"' ]' \
	"rail_down 0" pfs:/wide/rail /tmp/rail.back
grep -q "interface pfsr0c is down" /tmp/rail.stats || fail "pfs-ctl did not see rail pfsr0c go down"
cmp /tmp/rail.bin /tmp/rail.back || fail "the file read while a rail went down differs"
unset -f pfs_on_fail
rm -f /tmp/rail.bin /tmp/rail.back /tmp/stream*.bin /tmp/back*.bin

step "every rail down: RDMA only fails clearly, auto falls back to TCP"
rail_down 1  # rail 0 is down already
if pfs_ctl --transport rdma --timeout-ms 2000 cp pfs:/wide/f /tmp/none.bin 2> /tmp/none.err; then
	fail "cp over RDMA worked with every rail down"
fi
grep -E -q "RDMA|rdma" /tmp/none.err || fail "the error does not say RDMA failed: $(cat /tmp/none.err)"
echo "RDMA only, every rail down: $(cat /tmp/none.err)"
pfs_ctl --transport auto --timeout-ms 2000 cp pfs:/wide/f /tmp/auto.bin 2> /tmp/auto.err ||
	fail "cp with --transport auto failed with the rails down: $(cat /tmp/auto.err)"
cmp /tmp/in.bin /tmp/auto.bin || fail "the file read back over the TCP fallback differs"

stop_cluster
