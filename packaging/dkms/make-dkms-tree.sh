#!/usr/bin/env bash
# Assembles the DKMS source tree of the PFS client module, the directory a
# package installs as /usr/src/pfs-<version>/:
#
#   Kbuild Makefile *.c *.h   from kmod/ (sources only, no build outputs)
#   net/ probe/ ...           kmod/'s subdirectories, likewise
#   proto/                    common/proto/: the wire protocol; kmod/Kbuild
#                             takes it from proto/ when there is one
#   dkms.conf                 packaging/dkms.conf with PACKAGE_VERSION set
#
#   packaging/dkms/make-dkms-tree.sh [--src REPO] [--version VER] DEST
#
# REPO: the checkout to take the sources from (default: this script's).
# VER: default REPO/VERSION (written to DEST/VERSION for kbuild). DEST must not
# exist or be empty. Then, as root: dkms add DEST && dkms build pfs/VER
# (or by hand: make -C /lib/modules/$(uname -r)/build M=DEST modules).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
version=
dest=

die() { echo "make-dkms-tree: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --src) src=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    -h|--help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) [ -z "$dest" ] || die "more than one DEST"; dest=$1; shift ;;
  esac
done
[ -n "$dest" ] || die "no DEST (see --help)"
[ -f "$src/kmod/Kbuild" ] || die "$src/kmod/Kbuild missing: --src must name a PFS checkout"
[ -f "$src/common/proto/pfs_proto.h" ] || die "$src/common/proto/pfs_proto.h missing"
# dkms.conf comes with the sources when they have one, else with this script.
conf=$src/packaging/dkms.conf
[ -f "$conf" ] || conf=$here/../dkms.conf
[ -f "$conf" ] || die "no dkms.conf"

if [ -z "$version" ]; then
  version=$(head -n 1 "$src/VERSION" 2>/dev/null || true)
  [ -n "$version" ] || die "cannot read the version from $src/VERSION: give --version"
fi
case $version in
  *[!A-Za-z0-9.+~-]*|'') die "bad version '$version'" ;;
esac

if [ -e "$dest" ] && [ -n "$(ls -A "$dest")" ]; then
  die "$dest exists and is not empty"
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

# Sources only: a kmod/ that was built in place also holds objects, .cmd
# files, the generated pfs_config.h, *.mod.c and the probe cache (.probe/).
copy_sources() {
  local from=$1 to=$2
  (cd "$from" && find . -name '.?*' -prune -o -type f \
      \( -name Kbuild -o -name Makefile -o -name '*.c' -o -name '*.h' \) \
      ! -name '*.mod.c' ! -path ./pfs_config.h -print0) |
    (cd "$from" && xargs -0 -r cp --parents -t "$to")
}

copy_sources "$src/kmod" "$dest"
mkdir -p "$dest/proto"
cp "$src"/common/proto/*.[ch] "$dest/proto/"
[ -f "$dest/proto/pfs_proto.h" ] || die "no protocol headers copied"
echo "$version" > "$dest/VERSION"
sed "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$version\"/" "$conf" > "$dest/dkms.conf"
grep -q "^PACKAGE_VERSION=\"$version\"$" "$dest/dkms.conf" || die "$conf has no PACKAGE_VERSION line"
echo "$dest"
