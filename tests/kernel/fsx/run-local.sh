#!/bin/sh
# Runs pfs-fsx against a file on the host's disk (PFS_FSX_TMP, default
# /var/tmp: on disk, where O_DIRECT and fallocate work), with a fixed seed
# and a random one, every operation on.
#   run-local.sh PFS_FSX [OPTIONS...]
set -eu
fsx=$1
shift
dir=$(mktemp -d "${PFS_FSX_TMP:-/var/tmp}/pfs-fsx.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for ops in "$(dirname "$0")"/replay/*.ops; do
	"$fsx" -r "$ops" "$@" "$dir/f"
done
"$fsx" -S 1 -N 3000 -T 60 "$@" "$dir/f"
"$fsx" -N 3000 -T 60 "$@" "$dir/f"
