#!/bin/bash
# Guest test (run-guest.sh): the data path of pfs.ko against real daemons.
# Files of sizes around page, chunk and stripe boundaries and beyond one
# request (PFS_MAX_IO) are written through the mount and read back through
# the page cache, after dropping it (from the storage targets), and through
# pfs-ctl (libpfs, the servers' view); then a sparse file past 4 GiB,
# O_DIRECT at unaligned offsets, shared mmap writes, fsync's size report,
# O_APPEND, partial overwrites, reads past EOF, a cache=none mount,
# closes sent together, and st_blocks answered by the metadata server.
. "$(dirname "$0")/lib.sh"

MNT=/mnt/pfs
MNT2=/mnt/pfs-nocache
REF=/tmp/pfs-ref
CHUNK=65536

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# The size the metadata server reports for PATH (relative to the mount).
server_size() {
	pfs_ctl --json stat "/$1" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["size"])'
}

# check_file PATH REFFILE [libpfs]: the file at MNT/PATH holds exactly
# REFFILE, seen through the page cache and from the storage targets, and the
# metadata server has its size; with "libpfs" pfs-ctl reads it too, which
# proves the chunks lie where the user-space client expects them.
check_file() {
	local path=$1 ref=$2 how=${3:-} size got
	size=$(stat -c %s "$ref")
	[ "$(stat -c %s "$MNT/$path")" -eq "$size" ] ||
		fail "$path: size $(stat -c %s "$MNT/$path"), expected $size"
	cmp "$MNT/$path" "$ref" || fail "$path differs (page cache)"
	drop_caches
	cmp "$MNT/$path" "$ref" || fail "$path differs (read from the targets)"
	got=$(server_size "$path")
	[ "$got" -eq "$size" ] ||
		fail "$path: the metadata server says $got bytes, expected $size"
	[ "$how" = libpfs ] || return 0
	# A request of 8 MiB takes seconds under TCG: more than the default.
	pfs_ctl --timeout-ms 60000 cat "/$path" | cmp - "$ref" ||
		fail "$path differs when read through libpfs"
}

step "start 2 storage servers with 2 targets each, load and mount"
start_cluster 2 2
load_module
mark=$(dmesg_mark)
mount_pfs "$MNT"
mkdir "$MNT/dp" "$MNT/dp1" "$REF"
# Small chunks over all 4 targets: chunk and stripe boundaries come early
# (no file inline: the targets' data path is under test).
pfs_ctl entry set --chunk-size 64K --num-targets 4 --inline-max 0 /dp
# One target: the chunk file is the file, only PFS_MAX_IO cuts requests.
pfs_ctl entry set --chunk-size 64K --num-targets 1 --inline-max 0 /dp1

step "sizes around page, chunk, stripe and request boundaries"
stripe=$((4 * CHUNK))
for size in 0 1 4095 4096 4097 $((CHUNK - 1)) $CHUNK $((CHUNK + 1)) \
	$((stripe - 1)) $stripe $((3 * stripe + 12345)) $((9 * 1048576 + 1)); do
	head -c "$size" /dev/urandom > "$REF/$size"
	cp "$REF/$size" "$MNT/dp/f$size"
	how=
	[ "$size" -le $((CHUNK + 1)) ] || how=libpfs
	check_file "dp/f$size" "$REF/$size" $how
done
head -c $((17 * 1048576 + 3)) /dev/urandom > "$REF/big"
dd if="$REF/big" of="$MNT/dp1/big" bs=3M status=none
check_file dp1/big "$REF/big" libpfs
cp "$REF/big" "$MNT/dp/big"
check_file dp/big "$REF/big"

step "partial overwrites inside the file and reads past EOF"
python3 - "$MNT/dp/over" <<-'EOF'
	import os, sys
	path = sys.argv[1]
	data = bytearray(os.urandom(300000))
	with open(path, "wb") as f:
	    f.write(data)
	os.system("sync; echo 3 > /proc/sys/vm/drop_caches")
	fd = os.open(path, os.O_RDWR)
	# Partial folios inside i_size must be read before they are written.
	for off, n in ((5000, 100), (65530, 20), (131071, 70000), (299990, 30)):
	    patch = os.urandom(n)
	    os.pwrite(fd, patch, off)
	    data[off:off + n] = patch
	assert os.pread(fd, 10, len(data) + 10) == b"", "read past EOF returned data"
	assert os.pread(fd, 100, len(data) - 40) == bytes(data[-40:]), "short read at EOF"
	os.close(fd)
	os.system("sync; echo 3 > /proc/sys/vm/drop_caches")
	with open(path, "rb") as f:
	    assert f.read() == bytes(data), "overwritten file differs"
	open(path + ".ref", "wb").write(data)
EOF
mv "$MNT/dp/over.ref" "$REF/over"
check_file dp/over "$REF/over" libpfs

step "sparse file with data past 4 GiB"
python3 - "$MNT/dp/sparse" <<-'EOF'
	import os, sys
	path = sys.argv[1]
	far = 5 * 2**30 + 12345
	data = os.urandom(200000)
	fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
	os.pwrite(fd, b"head", 0)
	os.pwrite(fd, data, far)
	os.close(fd)
	assert os.stat(path).st_size == far + len(data)
	os.system("sync; echo 3 > /proc/sys/vm/drop_caches")
	fd = os.open(path, os.O_RDONLY)
	assert os.pread(fd, 4, 0) == b"head"
	for off in (4096, 2**31, 2**32 - 65536, 2**32 + 3, far - 100000):
	    assert os.pread(fd, 65536, off) == bytes(65536), f"hole at {off} not zero"
	assert os.pread(fd, len(data), far) == data, "data past 4 GiB differs"
	assert os.pread(fd, 100, far + len(data)) == b""
	os.close(fd)
	fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
	assert os.pread(fd, len(data) + 100, far - 100) == bytes(100) + data, \
	    "O_DIRECT read past 4 GiB differs"
	os.close(fd)
EOF
[ "$(server_size dp/sparse)" -eq $((5 * 1073741824 + 12345 + 200000)) ] ||
	fail "sparse file: the metadata server has size $(server_size dp/sparse)"

step "O_DIRECT: unaligned offsets and buffers, coherence with the page cache"
python3 - "$MNT/dp/direct" <<-'EOF'
	import mmap, os, sys
	path = sys.argv[1]
	data = bytearray(os.urandom(3 * 2**20 + 777))
	fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644)
	# bytes objects are not page-aligned: PFS takes any alignment.
	assert os.pwrite(fd, bytes(data), 100) == len(data)
	assert os.pread(fd, len(data), 100) == bytes(data)
	assert os.pread(fd, 1000, 99) == b"\0" + bytes(data[:999])
	# An aligned buffer too, the way applications use O_DIRECT.
	buf = mmap.mmap(-1, 2**20)
	assert os.preadv(fd, [buf], 2**20) == 2**20
	assert bytes(buf) == bytes(data[2**20 - 100:2**21 - 100])
	# Cached writes through another descriptor are seen by direct reads...
	bfd = os.open(path, os.O_RDWR)
	os.pwrite(bfd, b"cached", 5000)
	assert os.pread(fd, 6, 5000) == b"cached"
	data[4900:4906] = b"cached"
	# ... and direct writes by cached reads (the cached page is dropped).
	assert os.pread(bfd, 6, 70000) == bytes(data[69900:69906])
	os.pwrite(fd, b"direct", 70000)
	data[69900:69906] = b"direct"
	assert os.pread(bfd, 6, 70000) == b"direct"
	os.close(bfd)
	os.close(fd)
	with open(path + ".ref", "wb") as f:
	    f.write(bytes(100) + data)
EOF
mv "$MNT/dp/direct.ref" "$REF/direct"
check_file dp/direct "$REF/direct" libpfs
head -c $((10 * 1048576)) /dev/urandom > "$REF/dd"
dd if="$REF/dd" of="$MNT/dp/dd" bs=1M oflag=direct status=none
dd if="$MNT/dp/dd" of=/tmp/dd.back bs=4M iflag=direct status=none
cmp /tmp/dd.back "$REF/dd" || fail "dd O_DIRECT read back differs"
check_file dp/dd "$REF/dd"

step "shared mmap writes reach the servers and read()"
python3 - "$MNT/dp/mmap" <<-'EOF'
	import mmap, os, sys
	path = sys.argv[1]
	size = 5 * 65536 + 1000
	data = bytearray(os.urandom(size))
	with open(path, "wb") as f:
	    f.write(data)
	fd = os.open(path, os.O_RDWR)
	m = mmap.mmap(fd, size, mmap.MAP_SHARED)
	for off in (0, 4095, 65536 + 17, 3 * 65536 - 3, size - 10):
	    m[off:off + 10] = b"MMAPWRITE!"
	    data[off:off + 10] = b"MMAPWRITE!"
	rfd = os.open(path, os.O_RDONLY)
	assert os.pread(rfd, size, 0) == bytes(data), "read() misses mmap writes"
	os.close(rfd)
	m.flush()
	m.close()
	os.close(fd)
	with open(path + ".ref", "wb") as f:
	    f.write(data)
EOF
mv "$MNT/dp/mmap.ref" "$REF/mmap"
check_file dp/mmap "$REF/mmap" libpfs

step "fsync reports the size while the file is open; O_APPEND"
python3 - "$MNT/dp/fsync" "$PFS_BUILD/utils/ctl/pfs-ctl" \
	"$PFS_CLUSTER_DIR/etc/ctl.conf" <<-'EOF'
	import json, os, subprocess, sys
	path, ctl, conf = sys.argv[1:4]
	def server_size():
	    out = subprocess.run([ctl, "--config", conf, "--json", "stat", "/dp/fsync"],
	                         check=True, capture_output=True).stdout
	    return json.loads(out)["size"]
	fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
	os.write(fd, os.urandom(200000))
	os.fsync(fd)
	assert server_size() == 200000, f"after fsync the server has {server_size()}"
	os.close(fd)
	fd = os.open(path, os.O_WRONLY | os.O_APPEND)
	os.write(fd, b"tail1")
	os.write(fd, b"tail2")
	os.close(fd)
	assert os.stat(path).st_size == 200010
	assert server_size() == 200010
	with open(path, "rb") as f:
	    f.seek(-10, 2)
	    assert f.read() == b"tail1tail2"
EOF

step "cache=none mount: every read and write goes to the servers"
mount_pfs "$MNT2" cache=none
head -c 300001 /dev/urandom > "$REF/nc"
cp "$REF/nc" "$MNT2/dp/nc"
cmp "$MNT2/dp/nc" "$REF/nc" || fail "cache=none read back differs"
check_file dp/nc "$REF/nc" libpfs
# What one mount writes and closes, the other reads at once.
head -c 70000 /dev/urandom > "$REF/nc2"
cp "$REF/nc2" "$MNT/dp/nc"
cmp "$MNT2/dp/nc" "$REF/nc2" ||
	fail "cache=none mount does not see the buffered mount's write"
umount_pfs "$MNT2"

step "closes go out together (CLOSE_MANY), and each one counts"
# pfs.ko holds a close up to 20 ms and sends those of many files in one
# CLOSE_MANY; umount sends what still waits. A close that never reached the
# server would leave the file open there: after the unlink an orphan, its
# chunk files kept.
chunk_files() { find "$PFS_SCRATCH/pfs-targets" -path '*/chunks/*' -type f | wc -l; }
before=$(chunk_files)
mkdir "$MNT/dp/closes"
for i in $(seq 40); do echo "file $i" > "$MNT/dp/closes/f$i"; done
drop_caches
for i in $(seq 40); do read -r line < "$MNT/dp/closes/f$i"; done
[ "$(chunk_files)" -ge $((before + 40)) ] ||
	fail "40 written files made $(($(chunk_files) - before)) chunk files"
rm -r "$MNT/dp/closes"
wait_until "the chunks of 40 closed and unlinked files freed" \
	eval '[ "$(chunk_files)" -eq "$before" ]'
mount_pfs "$MNT2"
echo last > "$MNT2/dp/last"
rm "$MNT2/dp/last"
umount_pfs "$MNT2"
wait_until "the chunks of a file closed just before umount freed" \
	eval '[ "$(chunk_files)" -eq "$before" ]'

step "st_blocks comes with the attributes: a cold stat is one request"
# The metadata server counts what a file's chunk files take when a stat
# finds it changed, and answers it with the attributes from then on: a stat
# after the caches were dropped costs at most a LOOKUP (none when the glob's
# listing brought the attributes), not also a GET_LAYOUT and one
# CHUNK_STAT per target (6 requests a file here, 120 for these 20).
mkdir "$MNT/dp/blocks"
for i in $(seq 20); do head -c 100000 /dev/urandom > "$MNT/dp/blocks/f$i"; done
truncate -s 10M "$MNT/dp/blocks/f1"  # a hole: the count is not the size
cold_stat_requests() {
	local before
	drop_caches
	before=$(mount_stat tcp requests)
	stat -c '%n %b' "$MNT/dp/blocks"/f* > /tmp/blocks.txt
	echo $(($(mount_stat tcp requests) - before))
}
wait_until "cold stats of 20 files in at most 40 requests" eval '[ "$(cold_stat_requests)" -le 40 ]'
echo "a cold stat of 20 files: $(cold_stat_requests) requests"
while read -r name blocks; do
	# 100000 bytes: 196 blocks of 512 and more; the hole of f1 takes none.
	[ "$blocks" -ge 196 ] && [ "$blocks" -lt 1024 ] || fail "$name: st_blocks $blocks"
done < /tmp/blocks.txt
[ "$(wc -l < /tmp/blocks.txt)" -eq 20 ] || fail "stat saw $(wc -l < /tmp/blocks.txt) files"
rm -r "$MNT/dp/blocks"

step "a listing brings the attributes: ls -l of 600 files is a few requests"
# READDIR_PLUS answers a page of up to 512 names with their attributes,
# which pfs.ko puts into its dentry and inode caches; the attributes also
# say the files have no ACL and no security label, which ls -l asks every
# file for. Without them, ls -l cost a LOOKUP and two GETXATTR per file.
make_files() {  # DIR N: empty files f0 ... f(N-1)
	python3 -c "
import os, sys
for i in range(int(sys.argv[2])):
    os.close(os.open(sys.argv[1] + '/f%d' % i, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
" "$1" "$2"
}
mkdir "$MNT/dp/many"
make_files "$MNT/dp/many" 600
head -c 5000 /dev/urandom > "$MNT/dp/many/f7"
ls_requests() {  # MOUNT
	local before
	drop_caches
	before=$(mount_stat tcp requests)
	ls -l "$1/dp/many" > /tmp/ls.txt
	echo $(($(mount_stat tcp requests) - before))
}
n=$(ls_requests "$MNT")
echo "ls -l of 600 files after dropping the caches: $n requests"
[ "$n" -le 12 ] || fail "ls -l of 600 files cost $n requests"
[ "$(grep -c ' f[0-9]*$' /tmp/ls.txt)" -eq 600 ] || fail "ls -l listed $(grep -c ' f[0-9]*$' /tmp/ls.txt) files"
[ "$(awk '$NF == "f7" { print $5 }' /tmp/ls.txt)" = 5000 ] || fail "ls -l: $(grep ' f7$' /tmp/ls.txt)"
# What a listing cached is watched like what a LOOKUP cached: another
# client's change shows at once, though attributes are trusted for 10 min.
mount_pfs "$MNT2" attr_ttl=600000
ls -l "$MNT2/dp/many" > /dev/null
head -c 3000 /dev/urandom >> "$MNT/dp/many/f7"
python3 -c "import os, sys; os.setxattr(sys.argv[1], 'security.pfs-test', b'1')" "$MNT/dp/many/f8"
wait_until "the size written through one mount seen through the other" \
	eval '[ "$(stat -c %s "$MNT2/dp/many/f7")" = 8000 ]'
label() { python3 -c "import os, sys; print(os.getxattr(sys.argv[1], 'security.pfs-test').decode())" "$1" 2> /dev/null; }
wait_until "a security xattr set through one mount seen through the other" \
	eval '[ "$(label "$MNT2/dp/many/f8")" = 1 ]'
umount_pfs "$MNT2"

step "names looked up one by one are listed ahead: 600 stats in a random order are a few dozen requests"
# A process that stats the names of a directory it never listed (a
# training job's stat of its data set): the 8th LOOKUP there lists the
# directory's next page with READDIR_PLUS, which primes the caches
# (statahead.c). Without it, one LOOKUP per name.
stat_requests() {  # DIR USER: 600 stats in a random order, one process
	local before
	drop_caches
	before=$(mount_stat tcp requests)
	setpriv --reuid "$2" --regid "$2" --clear-groups python3 -c "
import os, random, sys
names = ['f%d' % i for i in range(600)]
random.shuffle(names)
sizes = {n: os.stat(os.path.join(sys.argv[1], n)).st_size for n in names}
print(sizes['f7'], sum(sizes.values()))" "$1" > /tmp/stat.txt
	echo $(($(mount_stat tcp requests) - before))
}
n=$(stat_requests "$MNT/dp/many" 0)
echo "600 stats in a random order after dropping the caches: $n requests"
[ "$n" -le 150 ] || fail "600 stats cost $n requests"
[ "$(cat /tmp/stat.txt)" = "8000 8000" ] || fail "stats saw sizes $(cat /tmp/stat.txt)"
rm -r "$MNT/dp/many"
# Listed as the process that looked up: one that may search a directory
# but not read it has its names looked up one by one.
mkdir -m 711 "$MNT/dp/closed"
make_files "$MNT/dp/closed" 600
head -c 8000 /dev/urandom > "$MNT/dp/closed/f7"
n=$(stat_requests "$MNT/dp/closed" 65534)
echo "the same by a user who may not list the directory: $n requests"
[ "$n" -ge 600 ] || fail "600 stats of a directory its user may not list cost only $n requests"
[ "$(cat /tmp/stat.txt)" = "8000 8000" ] || fail "stats saw sizes $(cat /tmp/stat.txt)"
rm -r "$MNT/dp/closed"

step "unmount and unload"
umount_pfs "$MNT"
check_dmesg_clean "$mark"
unload_module
stop_cluster
step "passed"
