#!/bin/bash
# arm64.sh: PFS for aarch64 (arm64), cross-built on an amd64 Debian machine
# and tested under qemu-user and in arm64 guests.
#
#   arm64.sh subset BUILD_DIR   the wire protocol (common/proto, C, shared
#                               with pfs.ko) and its unit tests, built by
#                               aarch64-linux-gnu-gcc/g++ and run under
#                               qemu-aarch64: what `make test` runs
#   arm64.sh full BUILD_DIR     all of user space (daemons, pfs-ctl, libpfs,
#                               unit tests) with CMake for arm64 against
#                               Debian's arm64 libraries (multiarch), the
#                               unit tests qemu-aarch64 can run, then every
#                               unit test in an arm64 guest booting Debian's
#                               arm64 kernel (TCG): `make cross-arm64`
#   arm64.sh deb BUILD_DIR      the Debian packages for arm64
#                               (dpkg-buildpackage -a arm64), checked and
#                               linted: `make cross-arm64`
#   arm64.sh kmod BUILD_DIR     pfs.ko for arm64: the DKMS source tree built
#                               against Debian's arm64 headers of the release
#                               of the host's amd64 headers, then loaded and
#                               unloaded in an arm64 QEMU guest booting
#                               Debian's arm64 kernel (TCG), where its
#                               load-time protocol self-check runs: `make test`
#
# Needs crossbuild-essential-arm64, qemu-user and, for full and kmod,
# qemu-system-arm (scripts/install-deps.sh; `full` and `deb` add the arm64
# architecture and its -dev packages itself; the guests' kernel and busybox
# are downloaded with private apt lists, dpkg's architectures left alone).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
sysroot=/usr/aarch64-linux-gnu
die() { echo "arm64.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || { sed -n '2,29s/^# \{0,1\}//p' "$0" >&2; exit 2; }
mode=$1
out=$2
for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ qemu-aarch64; do
	command -v "$tool" > /dev/null || die "$tool is missing (scripts/install-deps.sh installs it)"
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

subset() {
	local obj=$out/obj
	mkdir -p "$obj" "$out/include/catch2"
	# Catch2 v2 is one header; the host's copy, not its other headers.
	cp /usr/include/catch2/catch.hpp "$out/include/catch2/"
	local flags=(-O1 -g -Wall -Wextra -I"$src/common/proto" -isystem "$out/include")
	for c in pfs_xdr pfs_msg; do
		aarch64-linux-gnu-gcc -std=gnu11 "${flags[@]}" -c "$src/common/proto/$c.c" -o "$obj/$c.o"
	done
	# Built again when it or a protocol header changed (main.o: Catch2's
	# runner, the slow one, depends on neither).
	local newest
	newest=$(ls -t "$src"/common/proto/*.h | head -n 1)
	for cpp in main test_proto; do
		[ "$obj/$cpp.o" -nt "$src/tests/unit/$cpp.cpp" ] && { [ $cpp = main ] || [ "$obj/$cpp.o" -nt "$newest" ]; } ||
			aarch64-linux-gnu-g++ -std=c++20 "${flags[@]}" -c "$src/tests/unit/$cpp.cpp" -o "$obj/$cpp.o"
	done
	aarch64-linux-gnu-g++ "$obj"/*.o -o "$out/pfs-proto-tests"
	file -b "$out/pfs-proto-tests" | grep -q "ARM aarch64" || die "not an aarch64 executable: $(file -b "$out/pfs-proto-tests")"
	echo "arm64.sh: $(file -b "$out/pfs-proto-tests" | cut -d, -f1-2)"
	QEMU_LD_PREFIX=$sysroot qemu-aarch64 "$out/pfs-proto-tests"
}

# The arm64 architecture in dpkg and the arm64 -dev packages the build
# needs (multiarch, beside the amd64 ones).
arm64_dev_packages() {
	local libs=(libboost-dev:arm64 libboost-program-options-dev:arm64 liburing-dev:arm64 libssl-dev:arm64
		libibverbs-dev:arm64 librdmacm-dev:arm64 nlohmann-json3-dev catch2 pkgconf:arm64)
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		echo "arm64.sh: adding the arm64 architecture to dpkg" >&2
		dpkg --add-architecture arm64
		apt-get update -q
	fi
	local missing=()
	for p in "${libs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

full() {
	arm64_dev_packages
	cmake -S "$src" -B "$out/cmake" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$here/aarch64-linux-gnu.cmake" \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build "$out/cmake" --target pfs-mgmtd pfs-meta pfs-storage pfs-ctl mount.pfs pfs_shared pfs-unit-tests
	local bin
	for bin in server/mgmtd/pfs-mgmtd server/meta/pfs-meta server/storage/pfs-storage utils/ctl/pfs-ctl \
		common/libpfs/shared/libpfsclient.so.0; do
		file -bL "$out/cmake/$bin" | grep -q "ARM aarch64" || die "$bin is not for aarch64"
		echo "arm64.sh: $bin: $(file -bL "$out/cmake/$bin" | cut -d, -f1-2)"
	done
	QEMU_LD_PREFIX=$sysroot qemu-aarch64 "$out/cmake/utils/ctl/pfs-ctl" --version
	# Under qemu-user, the unit tests that need neither io_uring (which it
	# does not emulate) nor loopback RPC (which spins under it), nor event
	# loops woken from other threads (worker loops: they wait for ever
	# under it). The arm64 guest below runs them all.
	QEMU_LD_PREFIX=$sysroot qemu-aarch64 "$out/cmake/tests/pfs-unit-tests" --durations no \
		'~[uring]' '~[chunks]' '~[journal]' '~[rpc]' '~[loops]' '~a random history replays to the same namespace'
	guest_units "$out/cmake/tests/pfs-unit-tests"
}

# apt-get for arm64 packages without making arm64 a dpkg architecture: lists
# and downloads of its own under $out/kmod/apt.
apt_arm64() {
	local dir=$out/kmod/apt
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	apt-get -q -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
		-o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o APT::Sandbox::User=root "$@"
}

# Unpacks Debian's arm64 headers, kernel image and static busybox of release
# $1 into $out/kmod/root once (stamped), depmod included.
unpack_arm64() {
	local kver=$1 root=$out/kmod/root debs=$out/kmod/debs
	[ -e "$root/.unpacked-$kver" ] && return
	rm -rf "$root" "$debs"
	mkdir -p "$debs"
	echo "arm64.sh: downloading Debian's arm64 kernel $kver, its headers and busybox-static" >&2
	apt_arm64 update > "$debs/apt.log" 2>&1 || { cat "$debs/apt.log" >&2; die "apt-get update (arm64 lists) failed"; }
	(cd "$debs" && apt_arm64 download "linux-image-$kver" "linux-headers-$kver" busybox-static) \
		>> "$debs/apt.log" 2>&1 ||
		{ cat "$debs/apt.log" >&2; die "cannot download linux-image-$kver/linux-headers-$kver for arm64"; }
	local deb
	for deb in "$debs"/*.deb; do dpkg -x "$deb" "$root"; done
	# The headers' scripts/ and tools/ point at ../../lib/linux-kbuild-*:
	# Debian's kbuild is Multi-Arch: foreign, the host's amd64 one serves.
	local kbuild
	kbuild=$(readlink "$root/usr/src/linux-headers-$kver/scripts" | sed -n 's|.*lib/\(linux-kbuild-[^/]*\)/.*|\1|p')
	[ -n "$kbuild" ] && [ -d "/usr/lib/$kbuild" ] ||
		die "the host has no /usr/lib/${kbuild:-linux-kbuild-*} (install linux-headers-amd64)"
	ln -sfn "/usr/lib/$kbuild" "$root/usr/lib/$kbuild"
	depmod -b "$root" "$kver"
	rm -rf "$debs"
	touch "$root/.unpacked-$kver"
}

# Debian's arm64 kernel of the release of the host's amd64 headers (KDIR):
# sets kver and unpacks it, its headers and busybox under $out/kmod/root.
arm64_kernel() {
	command -v qemu-system-aarch64 > /dev/null || die "qemu-system-aarch64 is missing (scripts/install-deps.sh installs qemu-system-arm)"
	export PATH=$PATH:/usr/sbin:/sbin
	local kdir amd64_kver
	kdir=${KDIR:-$(make -s --no-print-directory -C "$src" print-kdir)}
	amd64_kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kdir/include/generated/utsrelease.h" 2> /dev/null || true)
	case $amd64_kver in
	*-amd64) kver=${amd64_kver%-amd64}-arm64 ;;
	*) die "cannot tell the Debian kernel release of KDIR='$kdir' ('$amd64_kver')" ;;
	esac
	unpack_arm64 "$kver"
}

# A busybox initramfs in directory $1 (its modules/ already there) whose
# /init mounts devtmpfs, proc and sysfs, insmods modules/list in order and
# then runs the script on stdin; that script's status goes to the console as
# PFS-ARM64-EXIT=N and the guest powers off.
arm64_initrd() {
	local ird=$1
	mkdir -p "$ird"/{bin,dev,proc,sys}
	cp "$out/kmod/root/bin/busybox" "$ird/bin/busybox"
	{
		cat <<-'INIT'
		#!/bin/busybox sh
		/bin/busybox mount -t devtmpfs devtmpfs /dev
		exec < /dev/console > /dev/console 2>&1
		/bin/busybox --install -s /bin
		export PATH=/bin
		mount -t proc proc /proc
		mount -t sysfs sysfs /sys
		job() {
		while read -r ko; do
			insmod "/modules/$ko" || { echo "arm64 guest: insmod $ko failed"; return 1; }
		done < /modules/list
		INIT
		cat
		printf '%s\n' '}' 'job' 'echo "PFS-ARM64-EXIT=$?" > /dev/kmsg' 'poweroff -f'
	} > "$ird/init"
	chmod 0755 "$ird/init"
	(cd "$ird" && find . -print0 | LC_ALL=C sort -z | cpio --quiet -o -0 -H newc -R 0:0) | gzip -1 > "$ird.img"
}

# Boots Debian's arm64 kernel on initramfs $1.img (TCG) for at most $2
# seconds, console to $3, more QEMU arguments after; fails with the console
# unless the job exited 0 without an Oops or a warning.
arm64_boot() {
	local ird=$1 limit=$2 console=$3
	shift 3
	timeout "$limit" qemu-system-aarch64 -M virt -cpu max -smp 2 -m 2G -accel tcg,thread=multi \
		-nographic -no-reboot -kernel "$out/kmod/root/boot/vmlinuz-$kver" -initrd "$ird.img" \
		-append "console=ttyAMA0 panic=-1 loglevel=7" "$@" > "$console" 2>&1 || true
	if ! grep -q 'PFS-ARM64-EXIT=0' "$console" ||
		grep -qE 'Oops|BUG:|WARNING:|Call trace:|Kernel panic' "$console"; then
		cat "$console" >&2
		return 1
	fi
}

# Into the initramfs directory $1: the modules after it, and what they
# depend on, as modprobe would load them from the unpacked arm64 root.
arm64_modules() {
	local ird=$1
	shift
	local m mods=()
	for m in "$@"; do
		mapfile -t -O "${#mods[@]}" mods < <(modprobe -d "$out/kmod/root" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }')
	done
	# shellcheck disable=SC2046  # one path per word
	"$src/tests/kernel/initrd-modules.sh" "$ird/modules" $(printf '%s\n' "${mods[@]}" | awk '!seen[$0]++')
}

# Every unit test in an arm64 guest: a real arm64 kernel (io_uring, sockets)
# under TCG, this machine's root over 9p read-only (its multiarch arm64
# libraries and loader serve the binary), /tmp on a fresh ext4 disk (the
# chunk store's direct-io needs O_DIRECT, which tmpfs lacks before 6.6).
guest_units() {
	local unit=$1
	arm64_kernel
	local ird=$out/units-initrd console=$out/units-console.log
	rm -rf "$ird"
	arm64_modules "$ird" 9p 9pnet_virtio virtio_pci virtio_blk ext4
	local disk=$out/units-tmp.img
	rm -f "$disk"
	truncate -s 4G "$disk"
	mkfs.ext4 -q -F "$disk"
	arm64_initrd "$ird" <<-JOB
	mkdir -p /host
	mount -t 9p -o trans=virtio,version=9p2000.L,cache=loose,ro hostroot /host || return 1
	mount -t proc proc /host/proc && mount -t sysfs sysfs /host/sys && mount -t devtmpfs devtmpfs /host/dev &&
		mkdir -p /host/dev/shm && mount -t tmpfs shm /host/dev/shm &&
		mount -t ext4 /dev/vda /host/tmp && chmod 1777 /host/tmp && mount -t tmpfs run /host/run || return 1
	ip link set lo up
	echo "arm64 guest: \$(uname -srm), \$(nproc) CPUs"
	chroot /host "$unit" --durations no --use-colour no
	JOB
	echo "arm64.sh: every unit test in an arm64 guest (TCG; console: $console)"
	# shellcheck disable=SC2054  # commas belong to QEMU's option syntax
	arm64_boot "$ird" 3000 "$console" \
		-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
		-drive file="$disk",format=raw,if=virtio ||
		die "unit tests failed in the arm64 guest (console above)"
	rm -f "$disk"
	tr -d "\r" < "$console" | grep -E "^arm64 guest|^All tests passed|^test cases:"
}

# The Debian packages for arm64: dpkg-buildpackage -a arm64 of the checkout
# (uncommitted edits included) in $out/deb, each package's architecture and
# executables checked, lintian as for amd64.
deb() {
	arm64_dev_packages
	local tree=$out/deb/src log=$out/deb/build.log
	rm -rf "$out/deb"
	mkdir -p "$tree"
	(cd "$src" && git ls-files -z -c -o --exclude-standard | xargs -0 -r ls -d 2> /dev/null | tar -c -T - -f -) |
		tar -x -C "$tree"
	(cd "$tree" && dpkg-checkbuilddeps -a arm64) || die "build dependencies for arm64 are missing (above)"
	echo "arm64.sh: dpkg-buildpackage -a arm64 (log: $log)"
	(cd "$tree" && DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$(nproc)" dpkg-buildpackage -a arm64 -us -uc -b) \
		> "$log" 2>&1 || { tail -n 40 "$log" >&2; die "dpkg-buildpackage -a arm64 failed"; }
	local deb arch x=$out/deb/x elf n total=0
	for deb in "$out"/deb/*.deb; do
		arch=$(dpkg-deb -f "$deb" Architecture)
		rm -rf "$x"
		dpkg-deb -x "$deb" "$x"
		elf=$(find "$x" -type f -exec file {} + | grep ELF || true)
		n=$(grep -c . <<< "$elf" || true)
		case $arch in
		arm64) ;;
		all) [ -z "$elf" ] || die "$(basename "$deb") is for all architectures but holds ELF files" ;;
		*) die "$(basename "$deb") is for $arch" ;;
		esac
		! grep -v "ARM aarch64" <<< "$elf" | grep -q . || die "$(basename "$deb") holds non-arm64 code: $(grep -v 'ARM aarch64' <<< "$elf")"
		echo "arm64.sh: $(basename "$deb"): $arch, $n aarch64 ELF files"
		total=$((total + n))
	done
	rm -rf "$x"
	[ "$total" -ge 6 ] || die "the arm64 packages hold $total executables and libraries, not the daemons, pfs-ctl, mount.pfs, pfs-bench and libpfsclient"
	lintian --fail-on error,warning "$out"/deb/pfs_*_arm64.changes 2>&1 | sed 's/^/  lintian: /' ||
		die "lintian found errors or warnings (above)"
	echo "arm64.sh: the arm64 packages are built, lintian: no error, no warning"
}

kmod() {
	arm64_kernel
	local root=$out/kmod/root tree=$out/kmod/src log=$out/kmod/build.log
	# The arm64 headers include the -common ones by absolute path: the
	# host's, installed with its amd64 headers of the same release.
	local common
	common=$(sed -n 's|^include \(.*\)/Makefile$|\1|p' "$root/usr/src/linux-headers-$kver/Makefile")
	[ -d "$common" ] || die "$common is missing: the host's kernel headers are not of release ${kver%-arm64}"

	rm -rf "$tree"
	"$src/packaging/dkms/make-dkms-tree.sh" --src "$src" "$tree" > /dev/null
	make -C "$root/usr/src/linux-headers-$kver" M="$tree" ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- \
		-j"$(nproc)" modules > "$log" 2>&1 || { cat "$log" >&2; die "building pfs.ko for arm64 failed"; }
	if grep -E 'warning:|error:' "$log" >&2; then
		die "building pfs.ko for arm64 warned (above)"
	fi
	local ko=$tree/pfs.ko
	file -b "$ko" | grep -q "ARM aarch64" || die "pfs.ko is not for aarch64: $(file -b "$ko")"
	modinfo -F vermagic "$ko" | grep -q "^$kver .*aarch64" || die "pfs.ko's vermagic: $(modinfo -F vermagic "$ko")"
	echo "arm64.sh: pfs.ko $(modinfo -F version "$ko"): $(file -b "$ko" | cut -d, -f1-2), vermagic $(modinfo -F vermagic "$ko")"

	# The guest: Debian's arm64 kernel, an initramfs of busybox, pfs.ko
	# and the modules it depends on (modprobe's order).
	mkdir -p "$root/lib/modules/$kver/extra"
	cp "$ko" "$root/lib/modules/$kver/extra/pfs.ko"
	depmod -b "$root" "$kver"
	local ird=$out/kmod/initrd console=$out/kmod/console.log
	rm -rf "$ird"
	arm64_modules "$ird" pfs
	arm64_initrd "$ird" <<-'JOB'
	echo "arm64 guest: $(uname -m), pfs $(cat /sys/module/pfs/version 2> /dev/null || echo 'not loaded')"
	rmmod pfs || { echo "arm64 guest: rmmod pfs failed"; return 1; }
	[ ! -d /sys/module/pfs ]
	JOB
	arm64_boot "$ird" 300 "$console" || die "pfs.ko did not load and unload cleanly in the arm64 guest (console above)"
	grep -E 'pfs:|arm64 guest' "$console" | grep -v 'Command line' || true
	grep -q 'pfs: protocol v[0-9]* ready' "$console" || die "pfs.ko's self-check did not report in the arm64 guest"
	echo "arm64.sh: pfs.ko loaded (protocol self-check passed) and unloaded in an arm64 guest ($kver)"
}

case $mode in
subset) subset ;;
full) full ;;
deb) deb ;;
kmod) kmod ;;
*) die "unknown mode '$mode' (subset, full, deb, kmod)" ;;
esac
