#!/bin/bash
# guest-timeout: 420
# libpfs (pfs-ctl) over RDMA: soft-RoCE rails, every server listening on
# RDMA beside TCP. The data of a file striped over 4 targets goes by RDMA
# READ (writes) and RDMA WRITE (reads) issued by the storage servers, not
# by SEND; the memory the client lent for each request is taken back when
# the request ends, also when a storage server dies under it; a client
# told to use RDMA only fails clearly when no rail works, and one left to
# choose falls back to TCP.
. "$(dirname "$0")/lib.sh"

# A field of the one-line JSON that pfs-ctl --transport-stats prints.
field() {  # FILE NAME
	grep -o "\"$2\":[0-9]*" "$1" | tail -n 1 | cut -d: -f2
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

step "every rail down: RDMA only fails clearly, auto falls back to TCP"
rail_down 0
rail_down 1
if pfs_ctl --transport rdma --timeout-ms 2000 cp pfs:/wide/f /tmp/none.bin 2> /tmp/none.err; then
	fail "cp over RDMA worked with every rail down"
fi
grep -E -q "RDMA|rdma" /tmp/none.err || fail "the error does not say RDMA failed: $(cat /tmp/none.err)"
echo "RDMA only, every rail down: $(cat /tmp/none.err)"
pfs_ctl --transport auto --timeout-ms 2000 cp pfs:/wide/f /tmp/auto.bin 2> /tmp/auto.err ||
	fail "cp with --transport auto failed with the rails down: $(cat /tmp/auto.err)"
cmp /tmp/in.bin /tmp/auto.bin || fail "the file read back over the TCP fallback differs"

stop_cluster
