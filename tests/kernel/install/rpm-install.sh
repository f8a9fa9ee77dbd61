#!/usr/bin/env bash
# The RPM half of the install test: the packages `make rpm` built, installed
# by rpm the way dnf runs it on a node, checked and erased again.
#
#   tests/kernel/install/rpm-install.sh --rpms DIR [--work DIR] [--dir GUEST_CACHE]
#
# The node's root is an overlay over this machine's / (as in
# run-install-test.sh), with the guest kernel's modules as if its kernel
# were installed. In a chroot of it:
#   1. `rpm -i` of every package (--nodeps: this rpm database knows none of
#      the Debian packages that stand for the node's base system); their
#      scriptlets run: the `pfs` user, ldconfig, and DKMS, which must build
#      pfs.ko for every kernel with headers, the guest kernel among them.
#   2. `rpm -V` finds every installed file as packaged; each program runs.
#   3. `rpm -e` of every package: DKMS forgets the module, and no file the
#      packages owned is left.
# Then what the whole run left in the root is listed: only rpm's and DKMS's
# state, the user and the module index may remain.
# WORK: build/rpm-install-test. Needs root (mounts, chroot).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
# shellcheck source=SCRIPTDIR/node-root.sh
. "$here/node-root.sh"
work=$top/build/rpm-install-test
guest_dir=$top/build/kernel-guest
rpms=

die() { echo "rpm-install: $*" >&2; exit 1; }
say() { echo "rpm-install: $*" >&2; }

while [ $# -gt 0 ]; do
	case $1 in
	--rpms) rpms=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--dir) guest_dir=$2; shift 2 ;;
	-h | --help) sed -n '2,19s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
[ -n "$rpms" ] || die "--rpms DIR is required (make rpm puts them in build/rpm/RPMS)"
[ "$(id -u)" = 0 ] || die "needs root (rpm in a chroot, mounts)"
export PATH=$PATH:/usr/sbin:/sbin
command -v rpm > /dev/null || die "rpm is missing (scripts/install-deps.sh --rpm)"
command -v dkms > /dev/null || die "dkms is missing (scripts/install-deps.sh --packaging)"
rpms=$(realpath "$rpms")
mapfile -t packages < <(find "$rpms" -name '*.rpm' ! -name '*-debug*' | sort)
[ ${#packages[@]} -ge 8 ] || die "$rpms holds ${#packages[@]} packages, not the 8 of pfs.spec"

kdir=$("$top/tests/kernel/guest-prepare.sh" --dir "$guest_dir" --quiet) || die "guest-prepare.sh failed"
kver=$(basename "$kdir")
[ -e "/lib/modules/$kver/build" ] || die "no headers for $kver here (/lib/modules/$kver/build)"

rm -rf "$work"
layer=$work/layer
node_layer "$layer" "$kdir" "$kver"
# The packages, where the node sees them as /tmp/rpms.
mkdir -p "$layer/root/tmp/rpms"
cp "${packages[@]}" "$layer/root/tmp/rpms/"

say "installing, verifying and erasing ${#packages[@]} RPMs in a node's root (log: $work/rpm.log)"
start=$SECONDS
in_node_root "$layer" "$kver" > "$work/rpm.log" 2>&1 <<'NODE' ||
kver=$1
export LC_ALL=C.UTF-8
fail() { echo "FAILED: $*"; exit 1; }
names=$(rpm -qp --qf '%{NAME}\n' /tmp/rpms/*.rpm | sort)
echo "packages:" $names

echo "== rpm -i"
rpm -i --nodeps /tmp/rpms/*.rpm
for n in $names; do rpm -q "$n" > /dev/null || fail "$n is not installed"; done

echo "== rpm -V"
# Nothing changed since packaging: no size, digest, mode or owner differs.
if bad=$(rpm -V --nodeps $names); then :; else echo "$bad"; fail "rpm -V"; fi

echo "== scriptlets"
getent passwd pfs | grep -q ':/var/lib/pfs:' || fail "no system user pfs"
dkms status -m pfs
ko=$(find "/lib/modules/$kver" -name 'pfs.ko*' | head -n 1)
[ -n "$ko" ] || fail "DKMS built no pfs.ko for $kver"
version=$(rpm -q --qf '%{VERSION}' pfs-client-dkms)
[ "$(modinfo -F version "$ko")" = "$version" ] || fail "$ko is version $(modinfo -F version "$ko"), not $version"
modinfo -F vermagic "$ko" | grep -q "^$kver " || fail "$ko is not built for $kver"
echo "$ko: $(modinfo -F version "$ko"), vermagic $(modinfo -F vermagic "$ko")"
# Where %{_libdir} is (lib64: Fedora's, not in this Debian root's ld.so.conf).
lib=$(rpm -ql pfs-libs | grep '/libpfsclient\.so\.0$')
[ -e "$lib" ] || fail "pfs-libs holds no libpfsclient.so.0 link"
readelf -d "$lib" | grep -q 'SONAME.*\[libpfsclient\.so\.0\]' || fail "$lib has not the SONAME libpfsclient.so.0"

echo "== programs"
for p in /usr/sbin/pfs-mgmtd /usr/sbin/pfs-meta /usr/sbin/pfs-storage /usr/bin/pfs-ctl /usr/bin/pfs-bench; do
	out=$("$p" --version) || fail "$p --version"
	echo "$p: $out"
	grep -q "$version" <<< "$out" || fail "$p says '$out', not $version"
done
/usr/sbin/mount.pfs -h 2>&1 | head -n 1
pkg-config --exists pfsclient || PKG_CONFIG_PATH=/usr/lib64/pkgconfig pkg-config --exists pfsclient ||
	fail "pkg-config finds no pfsclient"

echo "== rpm -e"
owned=$(rpm -ql $names | sort -u)
rpm -e $names
left=$(rpm -qa --qf '%{NAME}\n' | sort)
[ -z "$left" ] || fail "still installed: $left"
[ -z "$(dkms status -m pfs)" ] || fail "DKMS still knows pfs: $(dkms status -m pfs)"
[ -z "$(find "/lib/modules/$kver" -name 'pfs.ko*')" ] || fail "pfs.ko is still in /lib/modules/$kver"
# Every file the packages owned is gone, and their own directories (those
# of the base system, such as /usr/sbin, stay).
kept=
while read -r f; do
	if [ -d "$f" ]; then
		[[ $f != *pfs* ]] || kept+=" $f/"
	elif [ -e "$f" ] || [ -L "$f" ]; then
		kept+=" $f"
	fi
done <<< "$owned"
[ -z "$kept" ] || fail "files left after rpm -e:$kept"
echo "erased: $(wc -l <<< "$owned") paths gone"
rm -rf /tmp/rpms
NODE
	{ cat "$work/rpm.log" >&2; die "the RPMs failed in the node's root (above)"; }
sed 's/^/  node: /' "$work/rpm.log" >&2
# What the run left in the node's root besides the kernel's modules: rpm's
# database, DKMS's state, the user, the module index. Nothing of PFS's own.
moddir=$(realpath -m /lib/modules)
leftovers=$(find "$layer/root" -mindepth 1 \( -type f -o -type l \) -printf '/%P\n' |
	grep -v -E "^/(var/lib/rpm|var/lib/dkms|var/cache|var/log|root|tmp)/|^$moddir/$kver/" |
	grep -v -E "^/etc/(passwd|group|shadow|gshadow|subuid|subgid|\.pwd\.lock|ld\.so\.cache)-?$" || true)
pfs_left=$(grep -E 'pfs' <<< "$leftovers" || true)
[ -z "$pfs_left" ] || die "rpm -e left PFS files in the root: $pfs_left"
[ -z "$leftovers" ] || say "also left (not PFS's): $(tr '\n' ' ' <<< "$leftovers")"
say "RPMs installed (pfs.ko by DKMS for $kver), verified and erased in $((SECONDS - start)) s"
rm -rf "$layer"
