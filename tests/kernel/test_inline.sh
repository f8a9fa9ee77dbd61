#!/bin/bash
# guest-timeout: 900
# Guest test (run-guest.sh): inline files through pfs.ko. In a directory
# with `pfs-ctl entry set --inline-max 64K`, small files written through
# pfs.ko keep their data with pfs-meta (chunk files in its inline store, none
# on the storage targets) and read back after the caches are dropped, from
# another mount too; a file that grows past 64K (an append, a truncate)
# moves to the storage targets, and another mount that holds it open with
# its old inline layout reads the new data (PFS_E_MOVED: pfs.ko fetches the
# layout again); a read-only open brings the whole content of an inline
# file into the page cache (reading it then sends no request) and is not
# counted by pfs-meta (no CLOSE; our own rm counts it first; after
# another mount's rm it still reads what it has cached); a write's
# size reaches pfs-meta with the data, before the writer closes; pfs-fsx
# runs on an inline file from two mounts (reads, writes, mmap, O_DIRECT,
# truncates, fallocate, copy_file_range across the move). pfs-meta's state
# is on the scratch disk (ext4), so its inline store runs with O_DIRECT
# (inline-direct-io = auto), as on a server; the other guest tests keep
# their state on tmpfs, where it falls back to the page cache. No oops, no
# warning.
. "$(dirname "$0")/lib.sh"

FSX=$PFS_BUILD/tests/kernel/fsx/pfs-fsx
[ -x "$FSX" ] || fail "$FSX missing: build user space ('make')"
M1=/mnt/pfs
M2=/mnt/pfs2
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# Chunk files in pfs-meta's inline store, and on the storage targets.
state=${PFS_SCRATCH:-$PFS_CLUSTER_DIR}/pfs-state
inline_chunks() { find "$state/meta1/inline" -path '*/chunks/*' -type f | wc -l; }
target_chunks() {
	find "${PFS_SCRATCH:-$PFS_CLUSTER_DIR}/pfs-targets" -path '*/chunks/*' -type f | wc -l
}

step "cluster of 2 storage servers, pfs.ko mounted twice; /in inline up to 64K"
mark=$(dmesg_mark)
load_module
PFS_STATE_DIR=$state start_cluster 2 2
if [ -n "${PFS_SCRATCH:-}" ] && grep -q "has no O_DIRECT" "$PFS_CLUSTER_DIR/log/meta1.log"; then
	fail "the inline store on the scratch disk (ext4) fell back to the page cache"
fi
mount_pfs $M1
mount_pfs $M2
mkdir $M1/in
pfs_ctl entry set --inline-max 64K /in
pfs_ctl entry info /in | grep -q "Inline max: *64K" || fail "the pattern does not show inline-max 64K"

step "40 files of 10 KiB written through pfs.ko stay with pfs-meta"
src=/tmp/inline-src
mkdir -p $src
for i in $(seq 1 40); do
	head -c 10240 /dev/urandom > $src/f$i
	cp $src/f$i $M1/in/f$i
done
sync
[ "$(inline_chunks)" -eq 40 ] || fail "$(inline_chunks) chunk files in the inline store, not 40"
[ "$(target_chunks)" -eq 0 ] || fail "$(target_chunks) chunk files on the storage targets, not 0"
pfs_ctl entry info /in/f1 | grep -q "Data: *inline" || fail "entry info does not say the data is inline"
if [ -n "${PFS_SCRATCH:-}" ]; then
	# The descriptors pfs-meta keeps open on them: O_DIRECT (octal 040000).
	meta_pid=$(cat "$PFS_CLUSTER_DIR/run/meta1.pid")
	direct=0 buffered=0
	for fd in /proc/$meta_pid/fd/*; do
		case $(readlink "$fd") in "$state"/meta1/inline/chunks/*) ;; *) continue ;; esac
		flags=$(awk '/^flags:/ {print $2}' "/proc/$meta_pid/fdinfo/${fd##*/}")
		if (( 8#$flags & 8#040000 )); then direct=$((direct + 1)); else buffered=$((buffered + 1)); fi
	done
	[ "$direct" -gt 0 ] || fail "no inline chunk file open with O_DIRECT ($buffered without)"
fi

step "read back after dropping the caches, on both mounts"
drop_caches
for i in $(seq 1 40); do
	cmp $src/f$i $M1/in/f$i || fail "f$i differs on $M1"
	cmp $src/f$i $M2/in/f$i || fail "f$i differs on $M2"
done

step "a write takes its size to pfs-meta: the other mount sees it before the writer closes"
# The inline store records each write's size and mtime (no size report
# owed at close); sync writes the pages back without closing.
exec 4> $M1/in/w
head -c 5000 /dev/urandom >&4
sync
size=$(stat -c %s $M2/in/w)
[ "$size" -eq 5000 ] || fail "$M2 sees $size bytes of a 5000-byte write still open on $M1"
exec 4>&-
rm $M1/in/w

step "a read-only open brings an inline file's content: reads through it send nothing"
# Opens PATH read-only, reads it whole (no fstat, which may ask the
# targets for st_blocks), compares it with SRC; prints how many requests
# MOUNT sent meanwhile (its transports' counts in mountstats).
read_counted() {
	python3 - "$@" <<'PY'
import os, sys
mount, path, src = sys.argv[1:]
def sent():
    n, on = 0, False
    for line in open("/proc/self/mountstats"):
        w = line.split()
        if w and w[0] == "device":
            on = len(w) > 4 and w[4] == mount
        elif on and w and w[0] == "transport":
            n += int(w[w.index("requests") + 1])
    return n
fd = os.open(path, os.O_RDONLY)
before, data = sent(), b""
while chunk := os.read(fd, 1 << 16):
    data += chunk
after = sent()
os.close(fd)
if data != open(src, "rb").read():
    sys.exit(f"{path} differs from {src}")
print(after - before)
PY
}
head -c 30000 /dev/urandom > $src/c1
cp $src/c1 $M1/in/c1
truncate -s 20000 $M1/in/c2	# nothing written: all zeros
truncate -s 20000 $src/c2
sync
# An expired attribute (1 s) or a session renewal may fall in between.
quiet=
for try in 1 2 3; do
	for f in c1 c2; do
		drop_caches
		n=$(read_counted $M2 $M2/in/$f $src/$f) || fail "$f read wrong"
		[ "$n" -eq 0 ] && quiet="$quiet $f"
	done
	[ "$quiet" = " c1 c2" ] && break
	quiet=
done
[ -n "$quiet" ] || fail "reading inline files opened read-only still sent requests"
# A write on another mount since the open: the next open brings the new data.
exec 3< $M2/in/c1
head -c 30000 /dev/urandom > $src/c1
cp $src/c1 $M1/in/c1
cmp $src/c1 $M2/in/c1 || fail "c1 read on $M2 is not what $M1 wrote after $M2's earlier open"
exec 3<&-
rm $M1/in/c1 $M1/in/c2
wait_until "c1's and c2's inline data deleted" eval '[ "$(inline_chunks)" -eq 40 ]'

step "an append past 64K moves the file; the other mount, holding it open, follows"
exec 3< $M2/in/f1
head -c 1 <&3 > /dev/null	# its layout (inline) is known on $M2
head -c 100000 /dev/urandom >> $src/f1
tail -c 100000 $src/f1 >> $M1/in/f1
sync
[ "$(inline_chunks)" -eq 39 ] || fail "f1 still in the inline store ($(inline_chunks) files there)"
[ "$(target_chunks)" -ge 1 ] || fail "f1 not on the storage targets"
cmp $src/f1 $M1/in/f1 || fail "f1 differs on $M1 after the move"
echo 1 > /proc/sys/vm/drop_caches	# pages only: $M2's inode stays, with its inline layout
cmp $src/f1 /proc/self/fd/3 || fail "f1 differs through $M2's handle opened before the move"
exec 3<&-

step "a truncate past 64K moves a file too; one within it does not"
truncate -s 5000 $M1/in/f2
truncate -s 5000 $src/f2
truncate -s 300000 $M1/in/f3
truncate -s 300000 $src/f3
sync
[ "$(inline_chunks)" -eq 38 ] || fail "$(inline_chunks) files in the inline store, not 38"
drop_caches
cmp $src/f2 $M2/in/f2 || fail "f2 differs after the truncate"
cmp $src/f3 $M2/in/f3 || fail "f3 differs after the truncate past inline-max"

step "rm frees inline data"
rm $M1/in/f4
wait_until "f4's inline data deleted" eval '[ "$(inline_chunks)" -eq 37 ]'

step "read-only opens of inline files send no CLOSE; our rm keeps the data for them"
# The CLOSE and CLOSE_MANY requests pfs-meta has answered since it started.
closes() {
	pfs_ctl --json stats server --by-type --interval 0.1 | python3 -c '
import json, sys
meta = [n for n in json.load(sys.stdin)["nodes"] if n["type"] == "meta"]
counts = meta[0]["requests_by_type"]
print(counts.get("CLOSE", 0) + counts.get("CLOSE_MANY", 0))'
}
umount_pfs $M2	# its closes sent (pfs_drain_closes), its caches gone
mount_pfs $M2
before=$(closes)
# The writes and reads so far closed their files: the count works.
[ "$before" -gt 0 ] || fail "pfs-meta counted no CLOSE at all ($before)"
for i in $(seq 5 14); do
	cmp $src/f$i $M2/in/f$i || fail "f$i differs on $M2"
done
umount_pfs $M2	# a CLOSE still batched goes out now
mount_pfs $M2
after=$(closes)
echo "CLOSE and CLOSE_MANY requests: $before before 10 read-only opens, $after after"
[ "$after" -eq "$before" ] ||
	fail "$((after - before)) CLOSE requests for 10 read-only opens of inline files"
# An open the server does not count, then our own rm: pfs.ko counts the
# open first (one OPEN), so pfs-meta keeps the data until the close.
exec 3< $M2/in/f5
head -c 1 <&3 > /dev/null
rm $M2/in/f5
echo 1 > /proc/sys/vm/drop_caches	# the pages: the next read asks pfs-meta
python3 -c '
import os, sys
os.lseek(3, 0, os.SEEK_SET)
data = b""
while chunk := os.read(3, 1 << 16):
    data += chunk
sys.exit(data != open(sys.argv[1], "rb").read())' $src/f5 ||
	fail "f5 unreadable through an open made before our rm"
[ "$(inline_chunks)" -eq 37 ] || fail "f5's inline data deleted while still open"
exec 3<&-
wait_until "f5's inline data deleted after the close" eval '[ "$(inline_chunks)" -eq 36 ]'

step "another mount's rm frees a file open uncounted: the open still reads what it has"
# pfs-meta counted no open of M3's, so the rm frees f6 at once. M3 asks for
# the attributes at every read (attr_ttl=0), finds the file gone and goes
# on reading the pages its open brought, at nlink 0.
M3=/mnt/pfs3
mount_pfs $M3 attr_ttl=0
exec 4< $M3/in/f6
rm $M1/in/f6
wait_until "f6's inline data deleted" eval '[ "$(inline_chunks)" -eq 35 ]'
python3 -c '
import os, sys
data = b""
while chunk := os.read(4, 1 << 16):
    data += chunk
if data != open(sys.argv[1], "rb").read():
    sys.exit("the data read differs")
if os.fstat(4).st_nlink != 0:
    sys.exit("nlink %d, not 0" % os.fstat(4).st_nlink)' $src/f6 ||
	fail "f6 not read whole through an open made before another mount's rm"
exec 4<&-
umount_pfs $M3

# -l 64K: the file never outgrows inline-max, so every operation is on
# the inline store; then one that does (up to 512 KiB), moved early on.
step "pfs-fsx from both mounts on a file that stays inline (fixed seed)"
"$FSX" -S 7 -N "${PFS_FSX_OPS:-1500}" -T "${PFS_FSX_SECONDS:-120}" -A 512 -t 120 -l 65536 -o 16384 \
	$M1/in/fsx1 $M2/in/fsx1 || fail "pfs-fsx found a difference on an inline file"
pfs_ctl entry info /in/fsx1 | grep -q "Data: *inline" || fail "fsx1 is not inline after pfs-fsx"
step "pfs-fsx from both mounts on a file that moves out (fixed seed)"
"$FSX" -S 8 -N "${PFS_FSX_OPS:-1500}" -T "${PFS_FSX_SECONDS:-120}" -A 512 -t 120 \
	$M1/in/fsx2 $M2/in/fsx2 || fail "pfs-fsx found a difference on a file that moved out"
pfs_ctl entry info /in/fsx2 | grep -q "Data: *inline" && fail "fsx2 is still inline after pfs-fsx"

step "fsync of a file just made asks its server once, even with nothing written"
# A create is answered before its record is durable: the first fsync of
# the new file waits for it (a SETATTR), a second has nothing to wait for.
before=$(meta_requests SETATTR)
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.fsync(fd)' $M1/in/made || fail "fsync of a file just made failed"
once=$(meta_requests SETATTR)
fsync_path $M1/in/made || fail "a second fsync of the file just made failed"
twice=$(meta_requests SETATTR)
[ "$once" -eq $((before + 1)) ] && [ "$twice" -eq "$once" ] ||
	fail "fsync of a file just made: SETATTRs $before -> $once -> $twice"

step "syncfs asks every server to make what it answered durable, once"
read -r -a meta_before <<< "$(server_requests meta SYNC_ALL)"
read -r -a storage_before <<< "$(server_requests storage SYNC_ALL)"
sync -f $M1/in/made || fail "syncfs of the mount failed"
read -r -a meta_after <<< "$(server_requests meta SYNC_ALL)"
read -r -a storage_after <<< "$(server_requests storage SYNC_ALL)"
[ "${#storage_after[@]}" -eq 2 ] || fail "stats list ${#storage_after[@]} storage servers, not 2"
for i in "${!meta_after[@]}"; do
	[ "${meta_after[$i]}" -eq $((meta_before[i] + 1)) ] ||
		fail "syncfs: metadata server $i got ${meta_before[$i]} -> ${meta_after[$i]} SYNC_ALLs"
done
for i in "${!storage_after[@]}"; do
	[ "${storage_after[$i]}" -eq $((storage_before[i] + 1)) ] ||
		fail "syncfs: storage server $i got ${storage_before[$i]} -> ${storage_after[$i]} SYNC_ALLs"
done

step "rm, then fsync of the directory: none of it comes back after kill -9 of pfs-meta"
# An unlink is answered before its journal record is on disk; fsync of the
# directory waits for it (and frees the files' inline data).
mkdir $M1/in/gone
for i in $(seq 8); do head -c 5000 /dev/urandom > $M1/in/gone/g$i; done
sync
rm $M1/in/gone/g*
fsync_path $M1/in/gone ||
	fail "fsync of a directory failed"
kill -KILL "$(cat "$PFS_CLUSTER_DIR/run/meta1.pid")"
wait_until "pfs-meta gone" eval '! pfs_running "$(cat "$PFS_CLUSTER_DIR/run/meta1.pid")"'
pfs_start_daemon meta1 server/meta/pfs-meta
wait_until "pfs-meta serving the namespace again" eval 'pfs_ctl stat /in/gone > /dev/null 2>&1'
for i in $(seq 8); do
	pfs_ctl stat /in/gone/g$i > /dev/null 2>&1 && fail "gone/g$i came back after the kill"
done
[ -z "$(ls $M2/in/gone)" ] || fail "the other mount lists $(ls $M2/in/gone) after the kill"
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.rmdir(sys.argv[1])
os.fsync(fd)' $M1/in/gone || fail "fsync of a directory removed while open failed"

umount_pfs $M2
umount_pfs $M1
unload_module
stop_cluster
check_dmesg_clean "$mark"
step "passed"
