#!/bin/bash
# Guest test (run-guest.sh): pfs.ko loads, announces the protocol, unloads
# without a trace, twice in a row (a second load catches what the first
# unload left behind: slab caches, sysfs or proc entries, registered
# file system types); then the real daemons run in the guest with targets
# on the scratch disk, so later tests can mount the file system.
. "$(dirname "$0")/lib.sh"

for round in 1 2; do
	step "load and unload pfs.ko, round $round"
	mark=$(dmesg_mark)
	load_module
	expect_dmesg "$mark" 'pfs: protocol v[0-9]+ ready'
	registered=0
	if grep -qw pfs /proc/filesystems; then
		registered=1
	fi
	unload_module
	if [ "$registered" = 1 ] && grep -qw pfs /proc/filesystems; then
		fail "pfs is still in /proc/filesystems after rmmod"
	fi
	check_dmesg_clean "$mark"
done

step "start mgmtd, meta and 2 storage servers with 2 targets each on $PFS_SCRATCH"
start_cluster 2 2
pfs_ctl target list --state
count=$(pfs_ctl target list --json | grep -c '"target_id":')
[ "$count" -eq 4 ] || fail "pfs-ctl target list shows $count targets, not 4"
stop_cluster
step "passed"
