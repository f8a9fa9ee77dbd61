#!/bin/bash
# guest-timeout: 300
# Guest test (run-guest.sh): pfs.ko mounted from a hostile metadata server
# (tests/kernel/fake_server.py, mode evil) takes nothing it cannot trust.
# Listings with "../../x", "a/b", an empty name, ".." amid the entries or
# an unknown d_type fail with EIO (the plain names before the bad one may
# be shown; getdents itself refuses '/' and empty names, pfs.ko refuses
# them first, for every reader, and logs them); attributes of a size of
# 2^63 (negative as loff_t) or past the largest file, or of an unknown file
# type, fail stat with EIO; each refusal is logged, and nothing oopses or
# WARNs. A sane directory of the same server lists and stats as usual.
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
[ "$(ls $MNT/good)" = fine ] || fail "ls of /good: $(ls $MNT/good 2>&1)"
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
expect_dmesg "$mark" 'READDIR of .*refusing entry "\.\./\.\./x"'
expect_dmesg "$mark" 'refusing entry "a/b"'
expect_dmesg "$mark" 'refusing entry "" '
expect_dmesg "$mark" 'refusing entry "\.\." \(type 4, cookie 4 after 3\)'
expect_dmesg "$mark" 'refusing entry "f" \(type 3'
expect_dmesg "$mark" "LOOKUP reply: entry 30@5 has an impossible size"
expect_dmesg "$mark" "LOOKUP reply: entry 32@5 has an impossible file type"

step "unmount and unload"
umount $MNT || fail "umount failed"
unload_module
check_dmesg_clean "$mark"
kill $fake
wait $fake 2> /dev/null || true
step "passed"
