# shellcheck shell=bash
# The node's root of the install tests (sourced by run-install-test.sh and
# rpm-install.sh): an overlay over this machine's / (its packages stand for
# the node's base system), with the guest kernel's modules as if its
# linux-image were installed.

# node_layer LAYER GUEST_KDIR KVER: the overlay's directories under LAYER
# (root/ the upper layer, work/, merged/) and the guest kernel's modules,
# linked (not copied) from the unpacked image, where /lib/modules really
# is (a directory /lib in the layer would hide a merged-/usr system's
# /lib -> usr/lib).
node_layer() {
	local layer=$1 kdir=$2 kver=$3 modules
	rm -rf "$layer"
	modules=$layer/root$(realpath -m /lib/modules)/$kver
	mkdir -p "$modules" "$layer/work" "$layer/merged"
	cp -al "$kdir/root/lib/modules/$kver/kernel" "$modules/"
	cp "$kdir/root/lib/modules/$kver"/modules.* "$modules/"
}

# in_node_root LAYER [ARGS...] < SCRIPT: the bash script on stdin, run with
# ARGS in a chroot of the overlay, in a mount namespace of its own. /proc,
# /sys and /dev are this machine's; /run is empty, so maintainer scripts
# see no running systemd and start nothing here. (/tmp stays: a checkout,
# and so the repository, may be there.)
in_node_root() {
	local layer=$1
	shift
	# shellcheck disable=SC2016  # expanded by the inner bash
	unshare -m --propagation private bash -euo pipefail -c '
		m=$1/merged
		shift
		mount -t overlay -o "lowerdir=/,upperdir=${m%/merged}/root,workdir=${m%/merged}/work" node "$m"
		mount -t proc proc "$m/proc"
		mount --rbind /sys "$m/sys"
		mount --rbind /dev "$m/dev"
		mount -t tmpfs tmpfs "$m/run"
		exec chroot "$m" /bin/bash -euo pipefail -s -- "$@"' in-node-root "$layer" "$@"
}
