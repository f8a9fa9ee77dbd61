#!/bin/bash
# Second stage of the test guest's PID 1 (see guest-init), running in the
# host's root: enables hang detection, mounts the scratch disk, runs the job
# that run-guest.sh wrote into /run/pfs-job, reports its exit status and the
# kernel's taint flags on the console, and powers off.
#
# The markers go through /dev/kmsg: printk reaches the serial console
# synchronously, so they cannot be lost in the tty buffer at power-off.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

kmsg() { echo "$*" > /dev/kmsg; }

power_off() {
	# The host's busybox (busybox-static) powers off without an init daemon;
	# sysrq is the fallback. If both failed PID 1 would exit, the kernel
	# would panic and QEMU (-no-reboot) would stop all the same.
	/bin/busybox poweroff -f 2> /dev/null
	echo o > /proc/sysrq-trigger
	exec /bin/busybox sleep 3600
}

finish() {
	local rc=$1
	sync
	# Let what the job wrote to the console leave the tty buffer first
	# (stty sets attributes with TCSADRAIN).
	stty -F /dev/console "$(stty -F /dev/console -g)" 2> /dev/null
	kmsg "pfs-guest: finished after $(cut -d' ' -f1 /proc/uptime) s of uptime"
	kmsg "PFS-GUEST-TAINT=$(cat /proc/sys/kernel/tainted)"
	kmsg "PFS-GUEST-EXIT=$rc"
	power_off
}

fail() {
	echo "pfs-guest: $*"
	finish 125
}

# Hung tasks are reported (and fail the run) after this many seconds; a WARN
# must not panic: the host fails the run on it and keeps the whole log.
hung=${pfs_hung:-60}
if [ -w /proc/sys/kernel/hung_task_timeout_secs ]; then
	echo "$hung" > /proc/sys/kernel/hung_task_timeout_secs
fi
echo 0 > /proc/sys/kernel/panic_on_warn

# run-guest.sh formats the scratch disk on the host (mkfs.ext4 takes a
# tenth of a second there, several seconds under TCG).
if [ -b /dev/vda ]; then
	mkdir -p /scratch
	mount -o noatime,noinit_itable /dev/vda /scratch ||
		fail "cannot mount the scratch disk"
fi

job=/run/pfs-job/job.sh
[ -f "$job" ] || fail "no $job"
kmsg "pfs-guest: booted in $(cut -d' ' -f1 /proc/uptime) s, running the job"
bash "$job" < /dev/null
finish $?
