#!/bin/bash
# guest-timeout: 300
# Guest test (run-guest.sh): pfs.ko mounted from a hostile metadata server
# (tests/kernel/fake_server.py, mode evil) takes nothing it cannot trust.
# Listings with "../../x", "a/b", an empty name, ".." amid the entries or
# an unknown d_type fail with EIO (the plain names before the bad one may
# be shown; getdents itself refuses '/' and empty names, pfs.ko refuses
# them first, for every reader, and logs them); attributes of a size of
# 2^63 (negative as loff_t) or past the largest file, or of an unknown file
# type, fail stat with EIO, whether they come with a LOOKUP or a listing
# (READDIR_PLUS); each refusal is logged, and nothing oopses or
# WARNs. A sane directory of the same server lists and stats as usual, and
# the lock owners it sees are opaque ids, not kernel addresses, one for
# each owner (an open file for flock, a process for POSIX locks).
. "$(dirname "$0")/lib.sh"

SECRET=/tmp/hostile.secret
PORT=9201
MNT=/mnt/evil

(umask 077 && head -c 32 /dev/urandom | base64 > "$SECRET")
python3 "$PFS_SRC/tests/kernel/fake_server.py" --port $PORT \
	--secret "$SECRET" --mode evil > /tmp/fake-evil.log 2>&1 &
fake=$!
wait_until "the fake server listening" grep -q listening /tmp/fake-evil.log
load_module
mark=$(dmesg_mark)
mkdir -p $MNT
mount -i -t pfs -o "secret_file=$SECRET,timeout=5000" 127.0.0.1:$PORT $MNT ||
	fail "mount of the fake server failed"

step "a sane directory lists and stats"
[ "$(ls $MNT/good | tr '\n' ' ')" = "fine fine2 " ] ||
	fail "ls of /good: $(ls $MNT/good 2>&1)"
[ "$(stat -c %s $MNT/good/fine)" = 6 ] || fail "stat of /good/fine"
ls $MNT > /dev/null || fail "ls of the root failed"

# fails_eio WHAT COMMAND...: COMMAND fails, saying "Input/output error"
# (what did not is collected in $taken, reported at the end).
taken=''
fails_eio() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1) || [[ $out != *"Input/output error"* ]]; then
		taken+="
$what: $(tr '\n' ' ' <<< "$out")"
		return
	fi
	echo "$what: refused ($(tail -n 1 <<< "$out"))"
}

step "listings with names no directory can hold fail with EIO"
for d in names slash empty dots dtype; do
	fails_eio "ls /$d" ls -a $MNT/$d
done

step "impossible sizes and file types fail with EIO"
fails_eio "stat of a 2^63-byte file" stat $MNT/huge
fails_eio "stat of a file past the largest size" stat $MNT/past
fails_eio "stat of an unknown file type" stat $MNT/weird
[ -z "$taken" ] || fail "pfs.ko took what it must refuse:$taken"

step "each refusal logged"
expect_dmesg "$mark" 'READDIR(_PLUS)? of .*refusing entry "\.\./\.\./x"'
expect_dmesg "$mark" 'refusing entry "a/b"'
expect_dmesg "$mark" 'refusing entry "" '
expect_dmesg "$mark" 'refusing entry "\.\." \(type 4, cookie 4 after 3\)'
expect_dmesg "$mark" 'refusing entry "f" \(type 3'
expect_dmesg "$mark" "LOOKUP reply: entry 30@5 has an impossible size"
# The root's listing brought them too (READDIR_PLUS): not taken either.
expect_dmesg "$mark" "READDIR_PLUS reply: entry 30@5 has an impossible size"
expect_dmesg "$mark" "READDIR_PLUS reply: entry 31@5 has an impossible size"
expect_dmesg "$mark" "LOOKUP reply: entry 32@5 has an impossible file type"

step "lock owners on the wire are opaque ids, one for each owner"
# flock: the open file is the owner; POSIX: the process (its files).
python3 - $MNT/good/fine $MNT/good/fine2 <<-'EOF'
	import fcntl, os, sys
	a, b = (os.open(path, os.O_RDWR) for path in sys.argv[1:3])
	for fd in (a, b):
	    fcntl.flock(fd, fcntl.LOCK_EX)
	    fcntl.flock(fd, fcntl.LOCK_UN)
	for fd in (a, b):
	    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)
	os.close(a)
	os.close(b)
EOF
grep "^LOCK" /tmp/fake-evil.log
python3 - /tmp/fake-evil.log <<-'EOF'
	import re, sys
	locks = [dict(re.findall(r"(\w+)=(\S+)", line))
	         for line in open(sys.argv[1]) if line.startswith("LOCK ")]
	owners = {(l["kind"], l["ino"]): set() for l in locks}
	for l in locks:
	    owners[(l["kind"], l["ino"])].add(int(l["owner"], 16))
	flock_a, flock_b = owners[("1", "20")], owners[("1", "22")]
	posix = owners[("2", "20")] | owners[("2", "22")]
	assert len(locks) == 8, f"{len(locks)} LOCKs, expected 8"
	assert len(flock_a) == len(flock_b) == len(posix) == 1, \
	    "an owner went out under different ids"
	ids = flock_a | flock_b | posix
	assert len(ids) == 3, "different owners went out under one id"
	# x86_64 kernel addresses have the top 16 bits set; hashed ids all
	# look so with probability 2^-48.
	assert not all(i >> 48 == 0xffff for i in ids), \
	    "lock owners look like kernel addresses: " + \
	    ", ".join(f"{i:#x}" for i in sorted(ids))
EOF

step "unmount and unload"
umount $MNT || fail "umount failed"
unload_module
check_dmesg_clean "$mark"
kill $fake
wait $fake 2> /dev/null || true
step "passed"
