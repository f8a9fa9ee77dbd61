#!/bin/bash
# Guest test (run-guest.sh): pfs.ko over two metadata servers. New
# directories spread over both; the kernel client sends each request to the
# owner of the directory or inode it concerns: files written and read in
# directories of either server (and through libpfs), listings, rmdir of a
# directory on the other server (ENOTEMPTY first), a directory and a file
# renamed between servers (same inode, data and open handles kept; back
# home; unlinked there), pfs-ctl mkdir --meta-node, a striped directory
# (pfs-ctl mkdir --stripe 2: names on both servers, listed, stat'ed, renamed
# and removed through the mount; a second mount's cached absence of a name
# made in the other shard ends with the server's notice), fsck clean, and no
# kernel complaint.
# guest-timeout: 300
. "$(dirname "$0")/lib.sh"

MNT=/mnt/pfs

# The metadata node owning PATH (relative to the mount).
owner_of() {
	pfs_ctl --json stat "/$1" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["entry_id"]["owner_node"])'
}

# The shard of a striped directory of COUNT shards that keeps NAME
# (pfs_dir_shard: FNV-1a).
shard_of() {  # NAME COUNT
	python3 -c 'import sys
h = 2166136261
for b in sys.argv[1].encode():
    h = ((h ^ b) * 16777619) & 0xffffffff
print(h % int(sys.argv[2]))' "$1" "$2"
}

step "start 2 metadata servers and 1 storage server with 2 targets, load and mount"
start_cluster 1 2 2
load_module
mark=$(dmesg_mark)
mount_pfs "$MNT"

step "directories spread over both metadata servers"
for i in 1 2 3 4; do
	mkdir "$MNT/d$i"
done
owners=$(for i in 1 2 3 4; do owner_of "d$i"; done | sort -u | wc -l)
[ "$owners" -eq 2 ] || fail "4 directories on $owners metadata server(s), expected both"

step "files in each directory, read back through the mount and libpfs"
for i in 1 2 3 4; do
	head -c $((100000 * i + 7)) /dev/urandom > "/tmp/ref$i"
	cp "/tmp/ref$i" "$MNT/d$i/f"
	mkdir "$MNT/d$i/sub"
	echo "nested $i" > "$MNT/d$i/sub/g"
done
sync
echo 3 > /proc/sys/vm/drop_caches
for i in 1 2 3 4; do
	cmp "$MNT/d$i/f" "/tmp/ref$i" || fail "d$i/f differs"
	pfs_ctl cat "/d$i/f" | cmp - "/tmp/ref$i" || fail "d$i/f differs through libpfs"
	[ "$(cat "$MNT/d$i/sub/g")" = "nested $i" ] || fail "d$i/sub/g differs"
	[ "$(ls "$MNT/d$i" | tr '\n' ' ')" = "f sub " ] || fail "d$i lists $(ls "$MNT/d$i")"
	[ "$(owner_of "d$i/f")" = "$(owner_of "d$i")" ] || fail "d$i/f is not with its directory"
done

step "ls -l through the mount and pfs-ctl: entries of the other server too"
# A listing brings attributes only for the entries of the listing's own
# server (READDIR_PLUS); the others are looked up (pfs.ko) or stat'ed
# (pfs-ctl) apart.
sync; echo 3 > /proc/sys/vm/drop_caches
for i in 1 2 3 4; do
	[ "$(ls -l "$MNT" | awk -v n="d$i" '$NF == n { print substr($1, 1, 1) }')" = d ] ||
		fail "ls -l of the root: d$i is not a directory: $(ls -l "$MNT")"
	[ "$(pfs_ctl ls -l / | awk -v n="d$i" '$NF == n { print substr($1, 1, 1) }')" = d ] ||
		fail "pfs-ctl ls -l /: d$i is not a directory: $(pfs_ctl ls -l /)"
	[ "$(pfs_ctl ls -l "/d$i" | awk '$NF == "f" { print $5 }')" = $((100000 * i + 7)) ] ||
		fail "pfs-ctl ls -l /d$i: $(pfs_ctl ls -l "/d$i")"
done

step "rmdir of a directory on the other server"
other=""
root_owner=$(owner_of "")
for i in 1 2 3 4; do
	[ "$(owner_of "d$i")" != "$root_owner" ] && other=d$i
done
[ -n "$other" ] || fail "no directory on the second metadata server"
if rmdir "$MNT/$other" 2> /tmp/err; then fail "rmdir of a non-empty $other succeeded"; fi
grep -q "not empty" /tmp/err || fail "rmdir $other: $(cat /tmp/err)"
rm -r "$MNT/$other/sub" "$MNT/$other/f"
rmdir "$MNT/$other"
[ ! -e "$MNT/$other" ] || fail "$other still there after rmdir"

step "a directory and a file renamed between metadata servers"
pfs_ctl mkdir --meta-node "$root_owner" /here
mkdir "$MNT/here/tree"
cp /tmp/ref1 "$MNT/here/tree/f"
target=""
for i in 1 2 3 4; do
	[ -d "$MNT/d$i" ] && [ "$(owner_of "d$i")" != "$root_owner" ] && target=d$i
done
if [ -z "$target" ]; then
	mkdir "$MNT/other"
	target=other
	[ "$(owner_of other)" != "$root_owner" ] || fail "the placement did not alternate"
fi
ino=$(stat -c %i "$MNT/here/tree")
mv "$MNT/here/tree" "$MNT/$target/"
[ "$(stat -c %i "$MNT/$target/tree")" = "$ino" ] || fail "the moved directory is another inode"
[ ! -e "$MNT/here/tree" ] || fail "mv left the source"
echo 3 > /proc/sys/vm/drop_caches
cmp "$MNT/$target/tree/f" /tmp/ref1 || fail "file in the moved directory differs"
# A file of the root's server named in the other's directory, written
# through a handle opened before the move, and moved home again.
echo "moved file" > "$MNT/here/g"
exec 7>> "$MNT/here/g"
mv "$MNT/here/g" "$MNT/$target/g"
echo "appended after the move" >&7
exec 7>&-
echo 3 > /proc/sys/vm/drop_caches
[ "$(cat "$MNT/$target/g")" = "$(printf 'moved file\nappended after the move')" ] ||
	fail "moved file reads $(cat "$MNT/$target/g")"
pfs_ctl cat "/$target/g" | grep -q "appended after the move" || fail "moved file differs through libpfs"
mv "$MNT/$target/g" "$MNT/here/g2"
[ "$(head -1 "$MNT/here/g2")" = "moved file" ] || fail "file moved home differs"
mv "$MNT/here/g2" "$MNT/$target/g3"
rm "$MNT/$target/g3"
[ ! -e "$MNT/$target/g3" ] || fail "unlinked moved file still there"
mv "$MNT/$target/tree" "$MNT/here/tree2"
cmp "$MNT/here/tree2/f" /tmp/ref1 || fail "directory moved home differs"

step "a striped directory: its names on both servers, one directory through the mount"
pfs_ctl mkdir --stripe 2 /flat
pfs_ctl entry info /flat | grep -q "Striped over: 2 metadata servers" ||
	fail "entry info /flat: $(pfs_ctl entry info /flat)"
far=""
for i in $(seq 60); do
	[ -z "$far" ] && [ "$(shard_of "n$i" 2)" = 1 ] && far=n$i
done
[ -n "$far" ] || fail "no name of the second shard among n1..n60"
# A second client looks the name up first: it caches its absence.
MNT2=/mnt/pfs2
mount_pfs "$MNT2"
[ ! -e "$MNT2/flat/$far" ] || fail "$far exists before it was made"
for i in $(seq 60); do echo "$i" > "$MNT/flat/n$i"; done
mkdir "$MNT/flat/sub"
echo deep > "$MNT/flat/sub/deep"
owners=$(for i in $(seq 8); do owner_of "flat/n$i"; done | sort -u | wc -l)
[ "$owners" -eq 2 ] || fail "8 files of the striped directory on $owners metadata server(s)"
[ "$(ls "$MNT/flat" | wc -l)" -eq 61 ] || fail "the striped directory lists $(ls "$MNT/flat" | wc -l) entries"
[ "$(cat "$MNT2/flat/$far")" = "${far#n}" ] || fail "the second mount does not see $far"
[ "$(ls "$MNT2/flat" | wc -l)" -eq 61 ] || fail "the second mount lists $(ls "$MNT2/flat" | wc -l) entries"
sync; echo 3 > /proc/sys/vm/drop_caches
[ "$(ls -l "$MNT/flat" | grep -c '^-')" -eq 60 ] || fail "ls -l of the striped directory: $(ls -l "$MNT/flat")"
for i in 1 17 42 60; do
	[ "$(cat "$MNT/flat/n$i")" = "$i" ] || fail "flat/n$i reads $(cat "$MNT/flat/n$i")"
done
[ "$(cat "$MNT/flat/sub/deep")" = deep ] || fail "flat/sub/deep differs"
[ "$(pfs_ctl cat /flat/n42)" = 42 ] || fail "flat/n42 differs through libpfs"
for i in $(seq 10); do mv "$MNT/flat/n$i" "$MNT/flat/m$i"; done
[ ! -e "$MNT/flat/n3" ] && [ "$(cat "$MNT/flat/m3")" = 3 ] || fail "rename within the striped directory"
mv "$MNT/flat/m1" "$MNT/here/m1"
mv "$MNT/here/m1" "$MNT/flat/back"
[ "$(cat "$MNT/flat/back")" = 1 ] || fail "a file moved out and back reads $(cat "$MNT/flat/back")"
# fsync of the striped directory asks each of its servers (a SETATTR each).
read -r m1_before m2_before <<< "$(meta_requests SETATTR)"
fsync_path "$MNT/flat" ||
	fail "fsync of the striped directory failed"
read -r m1_after m2_after <<< "$(meta_requests SETATTR)"
[ "$m1_after" -gt "$m1_before" ] && [ "$m2_after" -gt "$m2_before" ] ||
	fail "fsync of the striped directory: SETATTRs $m1_before -> $m1_after and $m2_before -> $m2_after"
if rmdir "$MNT/flat" 2> /tmp/err; then fail "rmdir of a non-empty striped directory succeeded"; fi
grep -q "not empty" /tmp/err || fail "rmdir flat: $(cat /tmp/err)"
rm -r "$MNT/flat"
[ ! -e "$MNT/flat" ] && [ ! -e "$MNT2/flat" ] || fail "the striped directory is still there"
umount_pfs "$MNT2"

step "fsck is clean"
pfs_ctl fsck --readonly || fail "fsck found problems"

step "unmount and unload"
umount_pfs "$MNT"
check_dmesg_clean "$mark"
unload_module
stop_cluster
step "passed"
