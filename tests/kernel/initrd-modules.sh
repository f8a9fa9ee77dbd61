#!/usr/bin/env bash
# Puts kernel modules into an initramfs being built: each MODULE (a path,
# .ko, .ko.xz or .ko.zst) becomes DEST/NN-<name>.ko, uncompressed (the
# initramfs's busybox insmod takes plain modules), and DEST/list names them
# in the order given (modprobe --show-depends order: dependencies first).
#
#   tests/kernel/initrd-modules.sh DEST MODULE...
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,7s/^# \{0,1\}//p' "$0" >&2; exit 2; }
dest=$1
shift
mkdir -p "$dest"
n=0
for ko in "$@"; do
	n=$((n + 1))
	name=$(printf '%02d-%s.ko' "$n" "$(basename "${ko%%.ko*}")")
	case $ko in
	*.ko) cp "$ko" "$dest/$name" ;;
	*.ko.xz) xz -dc "$ko" > "$dest/$name" ;;
	*.ko.zst) zstd -qdc "$ko" > "$dest/$name" ;;
	*) echo "initrd-modules.sh: cannot unpack module $ko" >&2; exit 1 ;;
	esac
	echo "$name" >> "$dest/list"
done
