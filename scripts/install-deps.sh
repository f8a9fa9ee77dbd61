#!/usr/bin/env bash
# Installs every package PFS needs to build and test, from Debian's archive.
# Idempotent: does nothing when all are present. --check only reports;
# --packaging (kept for make deb; its packages are in the default set now),
# --rpm adds what `make rpm` needs (make repo needs both).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config python3
  libboost-dev libboost-program-options-dev liburing-dev nlohmann-json3-dev
  libssl-dev catch2
  rdma-core ibverbs-providers libibverbs-dev librdmacm-dev  # RDMA (soft-RoCE in the guest tests)
  clang libclang-rt-14-dev          # libFuzzer
  linux-headers-amd64 kmod          # the kernel module (kbuild)
  qemu-system-x86 busybox-static cpio e2fsprogs fio  # kernel tests in a QEMU guest (tests/kernel)
  nfs-kernel-server rpcbind         # the NFS peer of make bench-kernel (tests/kernel/nfs-setup.sh)
  valgrind                          # daemons checked for memory errors at shutdown (tests/integration)
  help2man groff-base               # manual pages from the programs' --help (packaging/man)
  apt-utils createrepo-c gnupg rpm  # signed apt/yum repositories (packaging/repo, its test)
  crossbuild-essential-arm64 qemu-user qemu-system-arm file  # arm64 builds run under qemu (packaging/cross)
  debhelper dh-dkms dkms lintian fakeroot  # make deb and the install test (tests/kernel/install)
)

PACKAGING=()  # all in PACKAGES now that make test builds the packages
RPM=(rpm rpmlint git)

check_only=0
for arg in "$@"; do
  case $arg in
    --check) check_only=1 ;;
    --packaging) PACKAGES+=("${PACKAGING[@]}") ;;
    --rpm) PACKAGES+=("${RPM[@]}") ;;
    *) echo "install-deps.sh: unknown option '$arg' (--check, --packaging, --rpm)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "$check_only" = 1 ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing packages: ${missing[*]}" >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
