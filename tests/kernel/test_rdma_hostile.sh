#!/bin/bash
# guest-timeout: 420
# A raw RDMA peer that breaks the transport's rules (tests/kernel/rdma_peer):
# garbage messages, a message without the transport's head, credits it
# never had, a flood beyond its credits, and authenticated chunk requests
# whose bulk segments point past the memory registered for them or name a
# key nobody registered. Each time the storage server drops that peer and
# nothing else: it keeps serving an honest client over RDMA, does not grow
# its memory, and the kernel stays clean.
. "$(dirname "$0")/lib.sh"

peer=$PFS_BUILD/tests/kernel/rdma_peer/pfs-rdma-peer
[ -x "$peer" ] || fail "$peer missing: build it ('make')"

rss_kib() {  # PID
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

honest_copy() {  # LABEL
	pfs_ctl --transport rdma cp pfs:/f /tmp/back.bin || fail "an honest client cannot read over RDMA after $1"
	cmp /tmp/in.bin /tmp/back.bin || fail "an honest client reads other bytes after $1"
}

step "one soft-RoCE rail, one storage server on it"
setup_rails 1
PFS_SERVER_CONF="rdma-interfaces = $(rail_servers 1)" start_cluster 1 2
mark=$(dmesg_mark)
storage_pid=$(cat "$PFS_CLUSTER_DIR/run/storage1.pid")
target=$(pfs_ctl target list --json | grep -o '"target_id": [0-9]*' | head -n 1 | grep -o '[0-9]*$')
head -c $((4 << 20)) /dev/urandom > /tmp/in.bin
pfs_ctl --transport rdma cp /tmp/in.bin pfs:/f
honest_copy "starting"
rss_before=$(rss_kib "$storage_pid")

for mode in garbage nohead credits flood; do
	step "peer: $mode"
	"$peer" "$mode" 10.88.0.2 8003 || fail "the storage server did not drop the '$mode' peer"
	pfs_running "$storage_pid" || fail "the storage server died of the '$mode' peer"
	honest_copy "the '$mode' peer"
done
for mode in outside badkey; do
	step "peer: $mode (authenticated, lying bulk segments)"
	"$peer" "$mode" 10.88.0.2 8003 "$PFS_SECRET" "$target" ||
		fail "the storage server served a '$mode' bulk segment"
	pfs_running "$storage_pid" || fail "the storage server died of the '$mode' peer"
	honest_copy "the '$mode' peer"
done
grep -q "RDMA bulk transfer failed" "$PFS_CLUSTER_DIR/log/storage1.log" ||
	grep -q "dropping connection" "$PFS_CLUSTER_DIR/log/storage1.log" ||
	echo "(the storage server dropped the lying peers quietly)"

step "many hostile peers in a row: memory stays bounded"
for i in $(seq 20); do
	"$peer" garbage 10.88.0.2 8003 > /dev/null || fail "peer $i was not dropped"
done
honest_copy "20 garbage peers"
rss_after=$(rss_kib "$storage_pid")
echo "storage server RSS: $rss_before KiB before the peers, $rss_after KiB after"
[ "$rss_after" -lt $((rss_before + 65536)) ] ||
	fail "the storage server grew by $((rss_after - rss_before)) KiB"
check_dmesg_clean "$mark"
stop_cluster
