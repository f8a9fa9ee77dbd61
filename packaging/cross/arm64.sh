#!/bin/bash
# arm64.sh: PFS for aarch64 (arm64), cross-built on an amd64 Debian machine
# and tested under qemu-user.
#
#   arm64.sh subset BUILD_DIR   the wire protocol (common/proto, C, shared
#                               with pfs.ko) and its unit tests, built by
#                               aarch64-linux-gnu-gcc/g++ and run under
#                               qemu-aarch64: what `make test` runs
#   arm64.sh full BUILD_DIR     all of user space (daemons, pfs-ctl, libpfs,
#                               unit tests) with CMake for arm64 against
#                               Debian's arm64 libraries (multiarch), then
#                               every unit test under qemu-aarch64 (ctest):
#                               `make cross-arm64`
#
# Needs crossbuild-essential-arm64 and qemu-user (scripts/install-deps.sh;
# `full` adds the arm64 architecture and its -dev packages itself).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
sysroot=/usr/aarch64-linux-gnu
die() { echo "arm64.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || { sed -n '2,18s/^# \{0,1\}//p' "$0" >&2; exit 2; }
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
	for cpp in main test_proto; do
		[ "$obj/$cpp.o" -nt "$src/tests/unit/$cpp.cpp" ] ||
			aarch64-linux-gnu-g++ -std=c++20 "${flags[@]}" -c "$src/tests/unit/$cpp.cpp" -o "$obj/$cpp.o"
	done
	aarch64-linux-gnu-g++ "$obj"/*.o -o "$out/pfs-proto-tests"
	file -b "$out/pfs-proto-tests" | grep -q "ARM aarch64" || die "not an aarch64 executable: $(file -b "$out/pfs-proto-tests")"
	echo "arm64.sh: $(file -b "$out/pfs-proto-tests" | cut -d, -f1-2)"
	QEMU_LD_PREFIX=$sysroot qemu-aarch64 "$out/pfs-proto-tests"
}

full() {
	local libs=(libboost-dev:arm64 libboost-program-options-dev:arm64 liburing-dev:arm64 libssl-dev:arm64
		libibverbs-dev:arm64 librdmacm-dev:arm64 nlohmann-json3-dev catch2)
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
	# Each unit test on its own under qemu-aarch64 (the toolchain file's
	# emulator), with a time limit. qemu-user has no io_uring: the tests of
	# the chunk store, the journal and the metadata store fail there.
	(cd "$out/cmake" && ctest -R '^unit:' -j2 --timeout 60)
}

case $mode in
subset) subset ;;
full) full ;;
*) die "unknown mode '$mode' (subset, full)" ;;
esac
