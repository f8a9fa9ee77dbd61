#!/bin/bash
# Guest half of the install test (run-install-test.sh prepared the node's
# root with the packages of VERSION installed by apt and DKMS): runs under
# systemd as PID 1 and does what an operator does on a one-node PFS.
#
#   guest-install.sh NEW_REPO VERSION NEXT FULL
#
# NEW_REPO: the signed apt repository holding VERSION and NEXT. FULL=1 also
# upgrades pfs-client-dkms (DKMS rebuilds pfs.ko here, under TCG). What the
# install wrote into the node's root is at /run/pfs-layer (guest-init).
. "$PFS_SRC/tests/kernel/lib.sh"

repo_new=$1 version=$2 next=$3 full=$4
kver=$(uname -r)
units=(pfs-mgmtd pfs-meta pfs-storage)
packages=(pfs-common pfs-mgmtd pfs-meta pfs-storage pfs-utils pfs-client-dkms)
mnt=/mnt/pfs
export DEBIAN_FRONTEND=noninteractive
PFS_WAIT=180

pfs_on_fail() {
	grep ' pfs ' /proc/[0-9]*/mountinfo | head -n 5 || true
	grep '^pfs ' /proc/modules || true
	pfs-ctl target list || true
	grep -v '^#' /etc/pfs/ctl.conf || true
	systemctl --no-pager -l status "${units[@]}" || true
	journalctl --no-pager -n 80 -u pfs-mgmtd -u pfs-meta -u pfs-storage || true
}

installed_version() {  # PACKAGE
	dpkg-query -W -f='${db:Status-Status} ${Version}' "$1" 2> /dev/null | sed -n 's/^installed //p'
}

targets_online() {  # N
	[ "$(pfs-ctl target list --json 2> /dev/null | grep -c '"reachability": "ONLINE"')" -eq "$1" ]
}

# The main PID of each unit, one line per unit.
main_pids() {
	local u
	for u in "${units[@]}"; do systemctl show -P MainPID "$u"; done
}

# apt with only the PFS source: the node has no other network, and under
# TCG building apt's cache of this machine's full Debian lists takes about
# half a minute per run. What the packages depend on is installed already.
apt_pfs() {
	local tool=$1
	shift
	"$tool" -q -o Dir::Etc::sourcelist=sources.list.d/pfs.list -o Dir::Etc::sourceparts=- \
		-o APT::Get::List-Cleanup=0 "$@" < /dev/null
}

# Services started while the file system was mounted (the D-Bus services
# apt's hooks wake up) hold a copy of the mount in their own namespaces
# that no umount here reaches, which keeps pfs.ko in use: stop them, as an
# operator who unloads the module has to.
release_mount_copies() {
	local pids units
	pids=$(grep -l -- ' - pfs ' /proc/[0-9]*/mountinfo 2> /dev/null | cut -d/ -f3 || true)
	[ -n "$pids" ] || return 0
	# shellcheck disable=SC2086  # one pid per word
	units=$(ps -o unit= -p $pids | sort -u | grep -v -x -- '-' || true)
	echo "stopping what holds a copy of the mount: ${units//$'\n'/ }"
	# shellcheck disable=SC2086
	[ -z "$units" ] || systemctl stop $units
}

# Files written before the upgrade and read back after it and after a
# remount: one larger than a chunk, small ones, and a directory tree.
write_files() {
	mkdir -p $mnt/data/a/b
	head -c $((9 * 1024 * 1024 + 4321)) /dev/urandom > $mnt/data/big
	local i
	for i in $(seq 20); do head -c $((i * 517)) /dev/urandom > "$mnt/data/a/b/small$i"; done
	echo "written by $version" > $mnt/data/a/note
	(cd $mnt/data && find . -type f -print0 | sort -z | xargs -0 sha256sum) > /root/sums
}

check_files() {  # WHEN
	sync
	echo 3 > /proc/sys/vm/drop_caches
	(cd $mnt/data && sha256sum --quiet -c /root/sums) || fail "files differ $1"
	[ "$(cd $mnt/data && find . -type f | wc -l)" -eq "$(wc -l < /root/sums)" ] || fail "file count differs $1"
}

# This machine's root is a Docker image's: its policy-rc.d forbids
# maintainer scripts to start or restart services. A node has none.
rm -f /usr/sbin/policy-rc.d
# Nor is a server node a desktop: apt's PackageKit hook would start
# packagekitd, polkit and logind (logind then holds a copy of the mount), and
# man-db would reindex every manual page after each apt run (Debian's
# man-db/auto-update=false removes this flag). Under TCG the two cost the
# upgrade and the purge about 20 s each.
systemctl mask --runtime --quiet packagekit.service
rm -f /var/lib/man-db/auto-update

step "systemd is PID 1; apt installed $version and DKMS built pfs.ko for $kver"
[ "$(cat /proc/1/comm)" = systemd ] || fail "PID 1 is $(cat /proc/1/comm), not systemd"
for p in "${packages[@]}"; do
	[ "$(installed_version "$p")" = "$version" ] || fail "$p: '$(installed_version "$p")', not $version"
done
dkms=$(dkms status pfs)
echo "$dkms"
grep -q "^pfs/$version, $kver, [^:]*: installed" <<< "$dkms" || fail "dkms status does not show pfs/$version installed for $kver"
ko=$(modinfo -n pfs)
[[ $ko == /lib/modules/$kver/updates/dkms/pfs.ko* ]] || fail "modprobe would load $ko, not DKMS's module"
[ "$(modinfo -F version pfs)" = "$version" ] || fail "pfs.ko is version $(modinfo -F version pfs)"

step "systemd-analyze verify of the packaged units"
mapfile -t unit_files < <(dpkg -L pfs-mgmtd pfs-meta pfs-storage | grep -E '^/(usr/)?lib/systemd/system/.*\.service$')
[ ${#unit_files[@]} -eq 3 ] || fail "expected 3 unit files, found: ${unit_files[*]}"
systemd-analyze verify "${unit_files[@]}" > /tmp/verify.log 2>&1 || { cat /tmp/verify.log; fail "systemd-analyze verify failed"; }
[ ! -s /tmp/verify.log ] || { cat /tmp/verify.log; fail "systemd-analyze verify reported the above"; }
echo "clean: ${unit_files[*]}"

step "modprobe pfs"
modprobe pfs || fail "modprobe pfs failed"
grep -q '^pfs ' /proc/modules || fail "pfs is not loaded"
dmesg | grep 'pfs: protocol' | tail -n 1

step "pfs-setup mgmtd, meta, storage (two targets on the scratch disk), client"
pfs-setup mgmtd
pfs-setup meta --mgmtd localhost --alias meta01
pfs-setup storage --mgmtd localhost --alias storage01 --target /scratch/pfs/t1 --target /scratch/pfs/t2
pfs-setup client --mgmtd localhost
[ "$(stat -c '%U %a' /etc/pfs/auth.secret)" = "pfs 600" ] || fail "auth.secret is $(stat -c '%U %a' /etc/pfs/auth.secret)"
# The admin's own edit of pfs-ctl's conffile.
sed -i 's/^mgmtd = .*/mgmtd = localhost:8008/' /etc/pfs/ctl.conf
for u in "${units[@]}"; do
	[ "$(systemctl is-enabled "$u")" = enabled ] || fail "pfs-setup did not enable $u"
done

step "systemctl start ${units[*]}"
systemctl start "${units[@]}" || fail "systemctl start failed"
wait_until "both targets ONLINE" targets_online 2
wait_until "pfs-meta serving the namespace" eval 'pfs-ctl stat / > /dev/null 2>&1'
for u in "${units[@]}"; do
	[ "$(systemctl show -P User "$u")" = pfs ] ||
		fail "$u does not run as the user pfs"
done
systemctl --no-pager --lines=0 status "${units[@]}" | grep -E '●|Active:'

step "mount -a with the fstab line 'pfs $mnt pfs _netdev,nofail 0 0'"
mkdir -p $mnt
echo "pfs $mnt pfs _netdev,nofail 0 0" >> /etc/fstab
systemctl daemon-reload
mount -a || fail "mount -a failed"
findmnt -n -t pfs $mnt || fail "$mnt is not a pfs mount after mount -a"
write_files
check_files "after writing"
echo "$(wc -l < /root/sums) files, $(du -sh $mnt/data | cut -f1)"

step "upgrade to $next from the second repository"
cp "$repo_new/pfs.list" /etc/apt/sources.list.d/pfs.list
apt_pfs apt-get update > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get update failed"; }
mapfile -t pids_before < <(main_pids)
upgrade=(pfs-common pfs-mgmtd pfs-meta pfs-storage pfs-utils)
if [ "$full" = 1 ]; then
	upgrade+=(pfs-client-dkms)
else
	# pfs-utils recommends it, so apt would upgrade it too: its DKMS build
	# takes 4 minutes under TCG (make test-install does it).
	apt_pfs apt-mark hold pfs-client-dkms
fi
apt_pfs apt-get install -y "${upgrade[@]}" > /tmp/apt.log 2>&1 ||
	{ cat /tmp/apt.log; fail "apt-get install of $next failed"; }
grep -E '^(Unpacking|Setting up|Building|Done)' /tmp/apt.log || true
for p in "${upgrade[@]}"; do
	[ "$(installed_version "$p")" = "$next" ] || fail "$p: '$(installed_version "$p")' after the upgrade"
done
if [ "$full" = 0 ]; then
	[ "$(installed_version pfs-client-dkms)" = "$version" ] || fail "the held pfs-client-dkms was upgraded"
	apt_pfs apt-mark unhold pfs-client-dkms
fi
mapfile -t pids_after < <(main_pids)
for i in "${!units[@]}"; do
	[ "$(systemctl is-active "${units[i]}")" = active ] || fail "${units[i]} is not active after the upgrade"
	[ "${pids_after[i]}" != "${pids_before[i]}" ] && [ "${pids_after[i]}" != 0 ] ||
		fail "${units[i]} was not restarted by the upgrade (pid ${pids_before[i]} -> ${pids_after[i]})"
	echo "${units[i]}: restarted (pid ${pids_before[i]} -> ${pids_after[i]})"
done
[ "$(pfs-ctl --version | awk '{ print $2 }')" = "$next" ] || fail "pfs-ctl says $(pfs-ctl --version)"
wait_until "both targets ONLINE after the upgrade" targets_online 2
check_files "through the mount that lived across the upgrade"
umount $mnt
mount -a || fail "mount -a after the upgrade failed"
check_files "after a remount"
if [ "$full" = 1 ]; then
	grep -q "^pfs/$next, $kver, [^:]*: installed" <<< "$(dkms status pfs)" || fail "DKMS did not rebuild pfs.ko as $next"
	[ "$(modinfo -F version pfs)" = "$next" ] || fail "the installed pfs.ko is $(modinfo -F version pfs)"
	umount $mnt
	release_mount_copies
	wait_until "pfs.ko unused after umount" rmmod pfs
	modprobe pfs || fail "modprobe of the rebuilt pfs.ko failed"
	[ "$(cat /sys/module/pfs/version)" = "$next" ] || fail "loaded pfs is $(cat /sys/module/pfs/version)"
	mount -a || fail "mount -a with the rebuilt pfs.ko failed"
	check_files "with the rebuilt pfs.ko"
	echo "pfs.ko rebuilt by DKMS and loaded: $next"
fi

step "apt-get purge leaves nothing behind but data"
umount $mnt
release_mount_copies
wait_until "pfs.ko unused after umount" rmmod pfs
mapfile -t owned < <(dpkg -L "${packages[@]}" | sort -u)
apt_pfs apt-get purge -y "${packages[@]}" > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get purge failed"; }
for p in "${packages[@]}"; do
	[ -z "$(installed_version "$p")" ] || fail "$p is still known to dpkg: $(installed_version "$p")"
done
for f in "${owned[@]}"; do
	[ -d "$f" ] && continue   # shared directories (/usr/sbin, /lib -> usr/lib, ...) stay
	[ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f is left after the purge"
done
# Everything the install and this run added to the node, less what is data
# or belongs to the operator, the package manager or the boot.
leftover=$(
	for top in /run/pfs-upper /run/pfs-layer; do
		(cd $top && find . -path './usr/lib/modules/*/kernel' -prune -o ! -type d -print)
	done | sed 's|^\.||' | sort -u |
	while read -r f; do
		[ -e "$f" ] || [ -L "$f" ] || continue       # gone (or a whiteout)
		[ -e "/run/pfs-host$f" ] && [ ! -L "$f" ] && cmp -s "$f" "/run/pfs-host$f" && continue
		echo "$f"
	done | grep -v -E '^/(var/lib/pfs/|scratch/|var/log/|var/lib/(dpkg|apt|systemd|ucf|dhcp|PackageKit)/|var/lib/dkms/mok\.(key|pub)$|var/cache/|etc/apt/|etc/(fstab|passwd|group|shadow|gshadow|subuid|subgid|ld\.so\.cache|machine-id|mtab)-?$|etc/(passwd|group|shadow|gshadow)-$|(usr/)?lib/modules/[^/]+/modules\.|root/|tmp/|var/tmp/|mnt/|etc/systemd/system/pfs-guest|run/|dev/|proc/|sys/)' || true
)
[ -z "$leftover" ] || fail "left after the purge: $(echo "$leftover" | head -n 20)"
[ ! -e /etc/pfs ] || fail "/etc/pfs is left: $(ls -A /etc/pfs)"
[ -n "$(ls -A /var/lib/pfs 2> /dev/null)" ] || fail "the purge removed the data under /var/lib/pfs"
echo "left: data under /var/lib/pfs ($(du -sh /var/lib/pfs | cut -f1)) and /scratch/pfs; the user pfs"
step "done"
