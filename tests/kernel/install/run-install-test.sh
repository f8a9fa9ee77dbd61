#!/usr/bin/env bash
# The install test: PFS installed the way an operator installs it, into a
# node that boots Debian's kernel with systemd.
#
#   tests/kernel/install/run-install-test.sh [--full] [--work DIR] [--dir GUEST_CACHE]
#
# On this machine:
#   1. dpkg-buildpackage builds the packages of this checkout (VERSION) and,
#      from the same tree with VERSION.1, the next version; lintian checks
#      the first set and its report goes into this test's log.
#   2. packaging/repo/make-repo.sh publishes two signed apt repositories: the
#      first version alone, and both.
#   3. A node's root is prepared the way apt prepares it: an overlay over
#      this machine's / (its packages stand for the node's base system), with
#      the guest kernel's modules as if its linux-image were installed, and
#      the first repository added (signed-by keyring). In a chroot of it,
#      `apt-get install pfs-mgmtd pfs-meta pfs-storage pfs-utils
#      pfs-client-dkms` runs, and DKMS builds pfs.ko for the guest kernel.
#      This happens here, not in the guest: a DKMS build takes ~4 min under
#      TCG against ~15 s here.
# In a QEMU guest booting that root with systemd as PID 1
# (guest-install.sh): modprobe, pfs-setup, the daemons from their units,
# `mount -a` of an fstab line, files in and out, an upgrade to the next
# version from the second repository (daemons restarted, data kept), and
# `apt-get purge` leaving nothing behind but data.
#
# --full also upgrades pfs-client-dkms in the guest, so DKMS rebuilds pfs.ko
# there (about 4 more minutes): `make test-install`. WORK: build/install-test
# (the packages are rebuilt only when the checkout changed).
# --packages-only does step 1 alone: scripts/run-tests.sh runs it beforehand,
# at low priority, beside the other kernel tests; a lock file in WORK makes
# the install test wait for it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
# shellcheck source=SCRIPTDIR/node-root.sh
. "$here/node-root.sh"
work=$top/build/install-test
guest_dir=$top/build/kernel-guest
full=0
packages_only=0

die() { echo "install-test: $*" >&2; exit 1; }
say() { echo "install-test: $*" >&2; }

while [ $# -gt 0 ]; do
	case $1 in
	--full) full=1; shift ;;
	--packages-only) packages_only=1; shift ;;
	--work) work=$2; shift 2 ;;
	--dir) guest_dir=$2; shift 2 ;;
	-h | --help) sed -n '2,32s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root (dpkg in a chroot, mounts)"
export PATH=$PATH:/usr/sbin:/sbin
"$top/scripts/install-deps.sh" --packaging > /dev/null
mkdir -p "$work"
work=$(realpath "$work")
jobs=$(nproc)

version=$(head -n 1 "$top/VERSION")
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "VERSION '$version' is not MAJOR.MINOR.PATCH"
next=$version.1

# ---- 1. packages -------------------------------------------------------------

# The checkout's files as git sees them (uncommitted edits included).
files() { (cd "$top" && git ls-files -z -c -o --exclude-standard | xargs -0 -r ls -d 2> /dev/null); }
# What goes into no package (the tests that run from the checkout, the
# cross build, the README) does not count for the cache.
stamp=$({ files | grep -v -E '^(tests/(kernel|integration|unit|fuzz)/|packaging/cross/|README\.md$)' |
	(cd "$top" && xargs -d '\n' sha256sum); echo "$next"; } | sha256sum | cut -d' ' -f1)
debs=$work/debs
# The packages carry no debug information: nothing here debugs them, and it
# is a third of their compile time.
export DEB_CFLAGS_APPEND=-g0 DEB_CXXFLAGS_APPEND=-g0
exec 9> "$work/packages.lock"
flock 9
if [ "$(cat "$debs/.stamp" 2> /dev/null)" = "$stamp" ]; then
	say "the packages of this checkout are built ($debs, log: $debs/build-$version.log)"
else
	rm -rf "$work/pkg" "$debs"
	mkdir -p "$work/pkg/src" "$debs/$version" "$debs/$next"
	(cd "$top" && files | tar -c -T - -f -) | tar -x -C "$work/pkg/src"
	say "building the $version packages (dpkg-buildpackage, log: $work/pkg/build-$version.log)"
	start=$SECONDS
	(cd "$work/pkg/src" && DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$jobs" \
		dpkg-buildpackage -us -uc -b) > "$work/pkg/build-$version.log" 2>&1 ||
		{ tail -n 40 "$work/pkg/build-$version.log" >&2; die "dpkg-buildpackage failed"; }
	say "built in $((SECONDS - start)) s"
	mv "$work/pkg"/*.deb "$work/pkg"/*.changes "$work/pkg"/*.buildinfo "$debs/$version/"

	# The next version from the same tree: one VERSION, one changelog entry;
	# the build directory is kept, so only what the version reaches rebuilds.
	echo "$next" > "$work/pkg/src/VERSION"
	{
		printf 'pfs (%s) unstable; urgency=medium\n\n  * Upgrade test build.\n\n' "$next"
		printf ' -- PFS install test <pfs-dev@example.org>  %s\n\n' "$(date -R)"
		cat "$top/debian/changelog"
	} > "$work/pkg/src/debian/changelog"
	rm -f "$work/pkg/src/debian/debhelper-build-stamp" "$work/pkg/src"/debian/*.debhelper.log \
		"$work/pkg/src/debian/files"
	(cd "$work/pkg/src" && DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$jobs" \
		dpkg-buildpackage -us -uc -b -nc) > "$work/pkg/build-$next.log" 2>&1 ||
		{ tail -n 40 "$work/pkg/build-$next.log" >&2; die "dpkg-buildpackage of $next failed"; }
	mv "$work/pkg"/*.deb "$work/pkg"/*.changes "$work/pkg"/*.buildinfo "$debs/$next/"
	mv "$work/pkg"/build-*.log "$debs/"
	rm -rf "$work/pkg"
	echo "$stamp" > "$debs/.stamp"
fi
[ "$packages_only" = 0 ] || exit 0
say "lintian $debs/$version/pfs_${version}_*.changes:"
lintian --fail-on error,warning --display-info "$debs/$version/pfs_${version}_"*.changes 2>&1 |
	sed 's/^/  lintian: /' >&2 || die "lintian found errors or warnings (above)"
say "lintian: no error, no warning"

# ---- 2. repositories ------------------------------------------------------------

mkdir -p "$debs/both"
cp "$debs/$version"/*.deb "$debs/$next"/*.deb "$debs/both/"
"$top/packaging/repo/make-repo.sh" --debs "$debs/$version" --out "$work/repo-$version" --gnupg-home "$work/gnupg" 2> /dev/null
"$top/packaging/repo/make-repo.sh" --debs "$debs/both" --out "$work/repo-$next" --gnupg-home "$work/gnupg" 2> /dev/null
rm -rf "$debs/both"
exec 9>&-	# the packages are in the repositories: another build may go on

# ---- 3. the node's root -------------------------------------------------------------

kdir=$("$top/tests/kernel/guest-prepare.sh" --dir "$guest_dir" --quiet) || die "guest-prepare.sh failed"
kver=$(basename "$kdir")
[ -e "/lib/modules/$kver/build" ] || die "no headers for $kver here (/lib/modules/$kver/build)"
layer=$work/layer
node_layer "$layer" "$kdir" "$kver"

say "installing $version into the node's root (chroot; DKMS builds pfs.ko for $kver)"
start=$SECONDS
in_node_root "$layer" "$work/repo-$version" > "$work/install.log" 2>&1 <<'NODE' ||
repo=$1
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
install -D -m 0644 "$repo/pfs-archive-keyring.gpg" /etc/apt/keyrings/pfs-archive-keyring.gpg
install -m 0644 "$repo/pfs.list" /etc/apt/sources.list.d/pfs.list
cat /etc/apt/sources.list.d/pfs.list
# Only the new source is read (the node's other sources are as they were).
apt-get update -o Dir::Etc::sourcelist=sources.list.d/pfs.list -o Dir::Etc::sourceparts=- \
	-o APT::Get::List-Cleanup=0 < /dev/null
apt-get install -y pfs-mgmtd pfs-meta pfs-storage pfs-utils pfs-client-dkms < /dev/null
dkms status < /dev/null
NODE
	{ cat "$work/install.log" >&2; die "apt-get install in the node's root failed"; }
sed 's/^/  node: /' "$work/install.log" | grep -E 'Setting up|Building|dkms|pfs/|Done|signed-by|Get:' >&2 || true
say "installed in $((SECONDS - start)) s"
rmdir "$layer/merged"
rm -rf "$layer/work"

# ---- 4. the guest ---------------------------------------------------------------------

args=("$work/repo-$next" "$version" "$next" "$full")
timeout_s=600
[ "$full" = 0 ] || timeout_s=1200
exec "$top/tests/kernel/run-guest.sh" --quiet --systemd --layer "$layer/root" --dir "$guest_dir" \
	--timeout "$timeout_s" --log "$guest_dir/logs/install.log" "$here/guest-install.sh" "${args[@]}"
