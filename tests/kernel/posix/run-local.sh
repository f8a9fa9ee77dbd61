#!/bin/sh
# Runs the POSIX suite against a fresh directory on the host's disk.
#   run-local.sh SUITE [SUITE ARGS...]
# PFS_POSIX_TMP picks the parent directory (default /var/tmp: on disk, unlike
# a tmpfs /tmp, and reachable by the unprivileged users the suite becomes).
# As root, a private mount namespace adds a bind mount of the directory as
# the second mount, so the cross-mount cases run too (a bind mount shares
# one cache, so it proves the suite, not a client's coherence).
set -eu
suite=$1
shift
dir=$(mktemp -d "${PFS_POSIX_TMP:-/var/tmp}/pfs-posix.XXXXXX")
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir "$dir/fs" "$dir/second"
chmod 755 "$dir/fs" "$dir/second"
if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
	unshare --mount --propagation private sh -c \
		'mount --bind "$1/fs" "$1/second" && shift && exec "$@"' \
		sh "$dir" "$suite" "$@" "$dir/fs" "$dir/second"
else
	echo "# no private mount namespace: running without a second mount"
	"$suite" "$@" "$dir/fs"
fi
