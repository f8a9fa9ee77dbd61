#!/bin/bash
# Part of `make bench-kernel` (bench-guest.sh runs it with the cluster up on
# one soft-RoCE rail): pfs.ko over TCP and over RDMA in the same guest,
# sequential O_DIRECT writes and reads of 2 x SIZE MiB (fio, 1 MiB blocks,
# 2 jobs), rounds interleaved, medians. Two figures per transport: MB/s,
# and client CPU seconds per GiB moved: the guest's busy CPU time during
# the run less what the PFS daemons used, i.e. the client (fio, pfs.ko's
# threads) and both ends' network stacks. With soft-RoCE the NIC is
# software too (rxe runs in softirq on these CPUs), so neither figure is
# what hardware gives: the ratio between the transports is the figure.
#
#   bench-transport.sh MOUNTPOINT SIZE_MIB ROUNDS
# Prints a table; writes $PFS_GUEST_OUT/kernel-bench-transport.json.
. "$(dirname "$0")/lib.sh"

mnt=$1 size=$2 rounds=$3
hz=$(getconf CLK_TCK)

busy_ticks() {  # all CPUs: user nice system irq softirq steal
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

daemon_ticks() {  # utime + stime of every PFS daemon
	local f sum=0 t
	for f in "$PFS_CLUSTER_DIR"/run/*.pid; do
		t=$(awk '{ print $14 + $15 }' "/proc/$(cat "$f")/stat" 2> /dev/null || echo 0)
		sum=$((sum + t))
	done
	echo "$sum"
}

# One run: "MB/s cpu_s_per_gib" of TRANSPORT doing RW (write|read).
run_once() {  # TRANSPORT RW
	local transport=$1 rw=$2 b0 d0 b1 d1 t0 t1 ns
	mount_pfs "$mnt" "transport=$transport"
	mkdir -p "$mnt/bench-transport"
	echo 3 > /proc/sys/vm/drop_caches
	b0=$(busy_ticks) d0=$(daemon_ticks) t0=$(date +%s%N)
	fio --name=seq --directory="$mnt/bench-transport" --numjobs=2 --size="${size}M" \
		--bs=1M --rw="$rw" --direct=1 --ioengine=psync --group_reporting \
		--output=/dev/null
	t1=$(date +%s%N) b1=$(busy_ticks) d1=$(daemon_ticks)
	umount_pfs "$mnt"
	ns=$((t1 - t0))
	awk -v bytes=$((2 * size << 20)) -v ns="$ns" -v ticks=$(((b1 - b0) - (d1 - d0))) -v hz="$hz" \
		'BEGIN { printf "%.1f %.2f\n", bytes / 1e6 / (ns / 1e9), (ticks / hz) / (bytes / 2^30) }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A mbs cpu
for round in $(seq 1 "$rounds"); do
	for rw in write read; do
		for transport in tcp rdma; do
			read -r m c < <(run_once "$transport" "$rw")
			echo "round $round: $transport $rw: $m MB/s, $c client CPU s/GiB"
			mbs[$transport.$rw]+="$m "
			cpu[$transport.$rw]+="$c "
		done
	done
done

step "pfs.ko, TCP vs RDMA (soft-RoCE), O_DIRECT, 2 x $size MiB, medians of $rounds rounds"
printf '%-6s %-6s %10s %18s\n' transport rw MB/s "client CPU s/GiB"
json="{\"size_mib\": $size, \"jobs\": 2, \"rounds\": $rounds, \"results\": ["
sep=
for rw in write read; do
	for transport in tcp rdma; do
		m=$(tr ' ' '\n' <<< "${mbs[$transport.$rw]}" | grep . | median)
		c=$(tr ' ' '\n' <<< "${cpu[$transport.$rw]}" | grep . | median)
		printf '%-9s %-6s %10s %18s\n' "$transport" "$rw" "$m" "$c"
		json+="$sep{\"transport\": \"$transport\", \"rw\": \"$rw\", \"mb_s\": $m, \"client_cpu_s_per_gib\": $c}"
		sep=", "
	done
done
echo "$json]}" > "$PFS_GUEST_OUT/kernel-bench-transport.json"
