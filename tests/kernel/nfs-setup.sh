#!/bin/bash
# In-guest NFS peer for benchmarks (tests/kernel/bench-guest.sh): exports a
# directory over the guest kernel's own nfsd (NFSv4.2) and mounts it over
# loopback, following DESIGN.md's verified recipe. Runs in the guest as root
# (tests/kernel/run-guest.sh), whose PID 1 exec-chroots into the host root:
# nfsd's kernel threads resolve export paths in PID 1's root, so the export
# is only found because of that.
#
#   nfs-setup.sh start EXPORT_DIR MOUNTPOINT   export, start the daemons, mount
#   nfs-setup.sh stop MOUNTPOINT               unmount, stop nfsd and daemons
#
# EXPORT_DIR should be on a real disk (the scratch disk): nfsd cannot export
# the guest's overlay root. The export is the NFSv4 pseudo-root (fsid=0), so
# 127.0.0.1:/ is EXPORT_DIR. `start` returns once a file can be created
# through the mount, i.e. after the server's grace period, which it ends at
# once (there are no clients to reclaim state) or else waits out.
. "$(dirname "$0")/lib.sh"

pipefs=/var/lib/nfs/rpc_pipefs
exports=/etc/exports.d/pfs-bench.exports
piddir=/run/pfs-nfs

mounted() { findmnt -rn -M "$1" > /dev/null; }

# Runs a daemon in the foreground of a background job, so `stop` can end it
# by its pid.
nfs_daemon() {  # NAME COMMAND...
	local name=$1
	shift
	mkdir -p "$piddir"
	setsid "$@" > "$piddir/$name.log" 2>&1 < /dev/null &
	echo $! > "$piddir/$name.pid"
}

nfs_start() {
	local dir mnt
	dir=$(realpath -e "$1") || fail "no export directory $1"
	mnt=$2
	[ "$(id -u)" -eq 0 ] || fail "nfs-setup.sh needs root"
	for tool in rpcbind exportfs rpc.mountd rpc.nfsd mount.nfs; do
		command -v "$tool" > /dev/null ||
			fail "$tool missing: install nfs-kernel-server and rpcbind on the host (scripts/install-deps.sh)"
	done
	modprobe nfsd || fail "cannot load nfsd"
	modprobe nfsv4 || fail "cannot load nfsv4"
	mounted /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		fail "cannot mount nfsd on /proc/fs/nfsd"
	mkdir -p "$pipefs"
	mounted "$pipefs" || mount -t rpc_pipefs sunrpc "$pipefs" ||
		fail "cannot mount rpc_pipefs on $pipefs"

	# sync: the honest default (a write is stable when the server says so);
	# no_root_squash: the benchmark runs as root and creates files.
	mkdir -p "$(dirname "$exports")"
	echo "$dir 127.0.0.1(rw,sync,fsid=0,no_subtree_check,no_root_squash,insecure)" > "$exports"
	mkdir -p /run/rpcbind
	nfs_daemon rpcbind rpcbind -w -f
	wait_until "rpcbind answering" eval 'rpcinfo -p 127.0.0.1 > /dev/null 2>&1'
	exportfs -ra || fail "exportfs -ra failed"
	grep -q -- "^$dir" <<< "$(exportfs)" || fail "$dir is not exported: $(exportfs -v)"
	nfs_daemon mountd rpc.mountd -N 3 -F
	wait_until "rpc.mountd registered" eval 'grep -qw mountd <<< "$(rpcinfo -p 127.0.0.1 2> /dev/null)"'
	# 10 s grace and lease instead of 90: nothing to reclaim here.
	rpc.nfsd -N 3 -G 10 -L 10 8 || fail "rpc.nfsd failed"

	# New opens wait for the grace period to end. With no clients to wait
	# for, end it now (v4_end_grace, Linux >= 4.20); the probe create below
	# proves it either way.
	if [ -w /proc/fs/nfsd/v4_end_grace ]; then
		echo Y > /proc/fs/nfsd/v4_end_grace ||
			echo "nfs-setup: could not end the grace period, waiting it out"
	fi

	mkdir -p "$mnt"
	mount -t nfs -o vers=4.2,proto=tcp 127.0.0.1:/ "$mnt" ||
		fail "mount -t nfs 127.0.0.1:/ $mnt failed"
	# The kernel client does not return NFS4ERR_GRACE to the caller, it
	# retries: bound every attempt, retry until the deadline.
	wait_until "a create on $mnt (NFS grace period over)" \
		timeout 15 sh -c "echo probe > '$mnt/.nfs-setup-probe'"
	rm -f "$mnt/.nfs-setup-probe"
	[ "$(findmnt -rn -o FSTYPE -M "$mnt")" = nfs4 ] ||
		fail "$mnt is not an NFSv4 mount: $(findmnt -M "$mnt")"
	echo "nfs-setup: $dir exported and mounted on $mnt ($(findmnt -rn -o OPTIONS -M "$mnt" | cut -d, -f1-3))"
}

nfs_stop() {
	local mnt=$1
	if mounted "$mnt"; then
		umount "$mnt" || fail "umount $mnt failed"
	fi
	if mounted /proc/fs/nfsd; then
		rpc.nfsd 0 || fail "rpc.nfsd 0 failed"
		exportfs -ua || true
	fi
	rm -f "$exports"
	local f
	for f in "$piddir"/*.pid; do
		[ -f "$f" ] || continue
		kill "$(cat "$f")" 2> /dev/null || true
		rm -f "$f"
	done
}

case ${1:-} in
start) [ $# -eq 3 ] || fail "usage: nfs-setup.sh start EXPORT_DIR MOUNTPOINT"; nfs_start "$2" "$3" ;;
stop) [ $# -eq 2 ] || fail "usage: nfs-setup.sh stop MOUNTPOINT"; nfs_stop "$2" ;;
*) fail "usage: nfs-setup.sh start EXPORT_DIR MOUNTPOINT | stop MOUNTPOINT" ;;
esac
