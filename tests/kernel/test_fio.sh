#!/bin/bash
# guest-timeout: 900
# Guest test (run-guest.sh), data integrity: fio writes through pfs.ko with
# buffered and direct I/O, several jobs at once, block sizes from 1 KiB to
# 1 MiB, into a directory striped over all 4 targets (2 storage servers x 2)
# in 64 KiB chunks, and checks every block with CRC32C
# (tests/kernel/fio-verify.fio); then remounts and checks everything again
# without writing (fio --verify_only), so the second reads come from the
# servers, not from pages the client kept. Last, one byte of one chunk file
# on a target is flipped behind the file system's back: the check must now
# fail, which shows that it reads what the servers hold.
#
#   test_fio.sh [SIZE]    bytes per job (fio syntax; 32M by default)
. "$(dirname "$0")/lib.sh"

size=${1:-32M}
mnt=/mnt/pfs
jobs=$PFS_SRC/tests/kernel/fio-verify.fio
command -v fio > /dev/null || fail "fio missing: scripts/install-deps.sh"

step "start mgmtd, meta and 2 storage servers with 2 targets each"
start_cluster 2 2
pfs_ctl mkdir /fio
# 64 KiB chunks: every 1 MiB request and most files cross many chunk and
# target boundaries.
pfs_ctl entry set --num-targets 4 --chunk-size 64K /fio

mark=$(dmesg_mark)
load_module
mount_pfs "$mnt"
export PFS_FIO_DIR=$mnt/fio PFS_FIO_SIZE=$size
# fio leaves verify state files in its working directory on failure.
work=$(mktemp -d)
cd "$work" || fail "cannot enter $work"
size_kib=$(($(numfmt --from=iec "$size") / 1024))

# run_fio WHAT [FIO OPTIONS]: fio with the job file; fails unless every one
# of the 5 jobs read back its whole region. One line per job on success, all
# of fio's output on failure.
run_fio() {
	local what=$1 out
	shift
	out=$work/fio-$(tr ' ' - <<< "$what").out
	fio --output-format=terse "$@" "$jobs" > "$out" 2>&1 || {
		cat "$out"
		fail "fio: $what failed"
	}
	awk -F';' -v kib="$size_kib" '
		NF > 47 { n++; print "  " $3 ": error " $5 ", read " $6 " KiB, written " $47 " KiB"
		          if ($5 != 0 || $6 != kib) bad = 1 }
		END { exit !(n == 5 && !bad) }' "$out" ||
		fail "fio: $what did not check all 5 x $size: $(cat "$out")"
}

step "fio: write and verify ($size per job)"
run_fio "write and verify"

step "every file striped over 4 targets in 64 KiB chunks"
files=0
for f in "$mnt"/fio/*; do
	name=/fio/$(basename "$f")
	layout=$(pfs_ctl entry info --json "$name" | python3 -c '
import json, sys
l = json.load(sys.stdin)["layout"]
print(len({t["target_id"] for t in l["targets"]}), l["chunk_size"])') ||
		fail "pfs-ctl entry info $name failed"
	[ "$layout" = "4 65536" ] ||
		fail "$name: (distinct targets, chunk size) = ($layout), not (4 65536)"
	files=$((files + 1))
done
[ "$files" -eq 4 ] || fail "fio left $files files in $mnt/fio, not 4"

step "remount, verify again without writing"
umount_pfs "$mnt"
mount_pfs "$mnt"
run_fio "verify after remount" --verify_only

step "flip one byte in a chunk file on a target: the check must fail"
umount_pfs "$mnt"
# The first 64 KiB of chunk data (not a hole) in any chunk file.
python3 - "$PFS_SCRATCH/pfs-targets" <<'PY' || fail "no chunk data found to corrupt"
import os, sys
for root, _, files in sorted(os.walk(sys.argv[1])):
    for name in sorted(files):
        path = os.path.join(root, name)
        if "/chunks/" not in path:
            continue
        with open(path, "r+b") as f:
            off = 0
            while block := f.read(65536):
                if block.count(0) < len(block) // 2:
                    f.seek(off + 100)
                    f.write(bytes([block[100] ^ 0xFF]))
                    os.fsync(f.fileno())
                    print(f"flipped byte {off + 100} of {path}")
                    sys.exit(0)
                off += len(block)
sys.exit(1)
PY
mount_pfs "$mnt"
if fio --output-format=terse --verify_only "$jobs" > fio-corrupt.out 2>&1; then
	fail "fio --verify_only passed on a corrupted chunk file"
fi
grep -E "verify failed|bad (magic )?header" fio-corrupt.out ||
	fail "fio failed, but not on verification: $(tail -n 20 fio-corrupt.out)"

umount_pfs "$mnt"
unload_module
check_dmesg_clean "$mark"
stop_cluster
step "passed"
