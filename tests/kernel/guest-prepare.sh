#!/usr/bin/env bash
# Prepares what tests/kernel/run-guest.sh boots: Debian's own kernel image for
# the release the module is built against (the top Makefile's KDIR), its
# modules with depmod data, and a busybox initramfs whose /init
# (tests/kernel/guest-init) mounts the host's / over 9p and chroots into it.
#
#   tests/kernel/guest-prepare.sh [--dir CACHE] [--kver KVER] [--quiet]
#
# CACHE: $PFS_GUEST_DIR, else <repo>/build/kernel-guest. KVER: the release of
# $KDIR, else of the headers the top Makefile picks. Idempotent and cached:
# the image is downloaded (apt-get download) and unpacked once per KVER, the
# initramfs is rebuilt only when its inputs change. Prints CACHE/KVER.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${PFS_GUEST_DIR:-$top/build/kernel-guest}
kver=${PFS_GUEST_KVER:-}
quiet=0

die() { echo "guest-prepare: $*" >&2; exit 1; }
say() { [ "$quiet" = 1 ] || echo "guest-prepare: $*" >&2; }

while [ $# -gt 0 ]; do
  case $1 in
    --dir) cache=$2; shift 2 ;;
    --kver) kver=$2; shift 2 ;;
    --quiet) quiet=1; shift ;;
    -h|--help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# The sbin tools (depmod, modprobe) are not on a normal user's PATH.
export PATH=$PATH:/usr/sbin:/sbin

if [ -z "$kver" ]; then
  kdir=${KDIR:-$(make -s --no-print-directory -C "$top" print-kdir)}
  [ -d "$kdir" ] || die "no kernel headers (KDIR='$kdir'): install linux-headers-amd64 (scripts/install-deps.sh)"
  # UTS_RELEASE is what the module's vermagic carries (Debian's
  # include/config/kernel.release holds the upstream version instead).
  kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kdir/include/generated/utsrelease.h" 2> /dev/null || true)
fi
[ -n "$kver" ] || die "cannot tell the kernel release of the headers"

for tool in apt-get dpkg depmod modprobe cpio gzip; do
  command -v "$tool" > /dev/null || die "'$tool' missing: run scripts/install-deps.sh"
done
busybox=/bin/busybox
[ -x "$busybox" ] || die "$busybox missing: install busybox-static (scripts/install-deps.sh)"
# The initramfs has no C library: only a static busybox runs there.
if ldd "$busybox" > /dev/null 2>&1; then
  die "$busybox is dynamically linked: install busybox-static instead of busybox"
fi

kdir_out=$cache/$kver
mkdir -p "$kdir_out"
# One preparation at a time per cache (ctest may start several guests).
exec 9> "$kdir_out/.lock"
flock 9

# ---- the kernel image and its modules --------------------------------------

download_image() {  # prints the path of the downloaded .deb
  local debs=$kdir_out/debs pkg attempt
  mkdir -p "$debs"
  for attempt in 1 2; do
    for pkg in "linux-image-$kver" "linux-image-$kver-unsigned"; do
      if (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "$pkg") >&2 2> "$debs/apt.log"; then
        ls -t "$debs/$pkg"_*.deb | head -n 1
        return
      fi
    done
    # A fresh machine may have stale package lists: refresh once as root.
    [ "$attempt" = 1 ] && [ "$(id -u)" = 0 ] || break
    say "refreshing apt's package lists"
    apt-get update -q >&2 || break
  done
  cat "$debs/apt.log" >&2
  die "cannot download linux-image-$kver (nor -unsigned) from Debian's archive.
  The kernel headers ($kver) must match an image the archive still carries:
  run 'apt-get update && apt-get install linux-headers-amd64' to move both to
  the current release, or set KDIR=/usr/src/linux-headers-<release> /
  PFS_GUEST_KVER=<release> to one that is available."
}

if [ ! -e "$kdir_out/root/.unpacked" ]; then
  deb=$(ls -t "$kdir_out"/debs/linux-image-"$kver"*.deb 2> /dev/null | head -n 1 || true)
  if [ -z "$deb" ]; then
    say "downloading linux-image-$kver"
    deb=$(download_image)
  fi
  say "unpacking $(basename "$deb")"
  rm -rf "$kdir_out/root" "$kdir_out/root.tmp"
  dpkg -x "$deb" "$kdir_out/root.tmp"
  [ -f "$kdir_out/root.tmp/boot/vmlinuz-$kver" ] || die "$deb has no boot/vmlinuz-$kver"
  [ -d "$kdir_out/root.tmp/lib/modules/$kver" ] || die "$deb has no lib/modules/$kver"
  depmod -b "$kdir_out/root.tmp" "$kver"
  touch "$kdir_out/root.tmp/.unpacked"
  mv "$kdir_out/root.tmp" "$kdir_out/root"
  rm -rf "$kdir_out/debs"   # unpacked and stamped: the archive is not needed again
fi

# Under TCG the bzImage's own XZ decompressor takes 10-20 s of every boot.
# A kernel built with CONFIG_PVH boots as the uncompressed ELF vmlinux
# straight into 64-bit code: unpack it once here.
if [ ! -s "$kdir_out/vmlinux" ] && grep -q '^CONFIG_PVH=y' "$kdir_out/root/boot/config-$kver"; then
  vmlinuz=$kdir_out/root/boot/vmlinuz-$kver
  offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | head -n 1 | cut -d: -f1 || true)
  if [ -n "$offset" ] &&
     xz -dc --single-stream < <(tail -c +$((offset + 1)) "$vmlinuz") > "$kdir_out/vmlinux.tmp" 2> /dev/null &&
     [ "$(head -c 4 "$kdir_out/vmlinux.tmp" | od -An -c | tr -d ' ')" = '177ELF' ]; then
    mv "$kdir_out/vmlinux.tmp" "$kdir_out/vmlinux"
  else
    rm -f "$kdir_out/vmlinux.tmp"
    say "cannot unpack vmlinux from the bzImage: booting the bzImage (slower)"
  fi
fi
if [ -s "$kdir_out/vmlinux" ]; then
  ln -sfn vmlinux "$kdir_out/kernel"
else
  ln -sfn "root/boot/vmlinuz-$kver" "$kdir_out/kernel"
fi

# ---- the initramfs ------------------------------------------------------------

# Drivers /init needs before it can reach the host's root: virtio PCI, the
# scratch disk, the entropy source, 9p over virtio, and overlayfs (the
# writable layer over the read-only host root); ext4 for the scratch disk
# (from the initramfs it loads in a fraction of what modprobe over 9p takes).
# modprobe gives the order.
init_modules="virtio_pci virtio_blk virtio_rng 9pnet_virtio 9p overlay ext4"
module_paths=$(
  for m in $init_modules; do
    modprobe -d "$kdir_out/root" -S "$kver" --show-depends "$m" \
      || die "module $m not found in linux-image-$kver"
  done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
)

stamp=$( { cat "$here/guest-init" "$0" "$here/initrd-modules.sh" "$busybox"; echo "$module_paths"; } | sha256sum | cut -d' ' -f1)
if [ -s "$kdir_out/initrd.img" ] && [ "$(cat "$kdir_out/initrd.stamp" 2> /dev/null)" = "$stamp" ]; then
  echo "$kdir_out"
  exit 0
fi

say "building the initramfs"
stage=$(mktemp -d "$kdir_out/initrd.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,lower,rw,newroot,modules}
cp "$busybox" "$stage/bin/busybox"
install -m 0755 "$here/guest-init" "$stage/init"
# shellcheck disable=SC2086  # one path per word
"$here/initrd-modules.sh" "$stage/modules" $module_paths || die "cannot put the modules into the initramfs"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z | cpio --quiet -o -0 -H newc -R 0:0) \
  | gzip -1 > "$kdir_out/initrd.img.tmp"
mv "$kdir_out/initrd.img.tmp" "$kdir_out/initrd.img"
echo "$stamp" > "$kdir_out/initrd.stamp"
echo "$kdir_out"
