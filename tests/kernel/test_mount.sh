#!/bin/bash
# Guest test (run-guest.sh): mount -t pfs against real daemons. Bad mounts
# fail cleanly (wrong secret, unknown option, no server); a good mount shows
# its options and capacity, serves the namespace (mkdir, create, write and
# read back, rename, link, symlink, xattrs, unlink, rmdir); changes made
# through pfs-ctl (libpfs, another client) show up after the attribute TTL;
# another mount's changes show up through notices long before the TTLs, and
# a metadata server's restart ends every name a mount trusted; umount and
# rmmod leave nothing behind.
. "$(dirname "$0")/lib.sh"

MNT=/mnt/pfs
MNT2=/mnt/pfs-long-ttl
mark=$(dmesg_mark)
load_module
start_cluster 2 2

step "bad mounts fail with a clear error"
mkdir -p $MNT
(umask 077 && head -c 32 /dev/urandom | base64 > /tmp/wrong.secret)
if mount -t pfs -o secret_file=/tmp/wrong.secret "$PFS_MGMTD" $MNT 2> /tmp/err; then
	fail "mount with a wrong secret succeeded"
fi
cat /tmp/err
dmesg | grep -q "refused the shared secret" ||
	fail "no log line for the wrong secret"
if mount -t pfs -o "secret_file=$PFS_SECRET,bogus=1" "$PFS_MGMTD" $MNT 2> /dev/null; then
	fail "mount with an unknown option succeeded"
fi
if mount -t pfs -o "secret_file=$PFS_SECRET,conns=0" "$PFS_MGMTD" $MNT 2> /dev/null; then
	fail "mount with conns=0 succeeded"
fi
if mount -t pfs -o "secret_file=$PFS_SECRET,connect_timeout=500" 127.0.0.1:9 $MNT 2> /dev/null; then
	fail "mount of a port nobody listens on succeeded"
fi
if mount -t pfs -o "secret_file=$PFS_SECRET" not-an-address $MNT 2> /dev/null; then
	fail "mount of a host name (mount.pfs's job) succeeded in the kernel"
fi
mountpoint -q $MNT && fail "a failed mount left $MNT mounted"

step "mount"
mount_pfs $MNT attr_ttl=500
grep " $MNT pfs " /proc/mounts || fail "$MNT not in /proc/mounts"
grep " $MNT pfs " /proc/mounts | grep -q "attr_ttl=500" ||
	fail "show_options does not show attr_ttl=500"
df -k $MNT
blocks=$(stat -f -c %b $MNT)
[ "$blocks" -gt 0 ] || fail "statfs reports $blocks blocks"

step "namespace"
mkdir $MNT/dir
[ -d $MNT/dir ] || fail "mkdir did not make a directory"
echo "hello pfs" > $MNT/dir/file
[ "$(cat $MNT/dir/file)" = "hello pfs" ] || fail "read back differs"
[ "$(stat -c %s $MNT/dir/file)" -eq 10 ] || fail "size is not 10"
mv $MNT/dir/file $MNT/dir/renamed
[ ! -e $MNT/dir/file ] || fail "old name still there after rename"
[ "$(cat $MNT/dir/renamed)" = "hello pfs" ] || fail "renamed file differs"
ln $MNT/dir/renamed $MNT/dir/hard
[ "$(stat -c %h $MNT/dir/renamed)" -eq 2 ] || fail "nlink is not 2 after link"
ln -s renamed $MNT/dir/soft
[ "$(readlink $MNT/dir/soft)" = renamed ] || fail "readlink differs"
[ "$(cat $MNT/dir/soft)" = "hello pfs" ] || fail "reading through the symlink differs"
python3 - "$MNT/dir/renamed" <<-'PY'
	import os, sys
	p = sys.argv[1]
	os.setxattr(p, "user.colour", b"blue")
	assert os.getxattr(p, "user.colour") == b"blue"
	assert "user.colour" in os.listxattr(p)
	os.removexattr(p, "user.colour")
	assert "user.colour" not in os.listxattr(p)
PY
ls -la $MNT/dir
[ "$(ls $MNT/dir | wc -l)" -eq 3 ] || fail "ls shows $(ls $MNT/dir | wc -l) entries, not 3"
rmdir $MNT/dir 2> /dev/null && fail "rmdir of a non-empty directory succeeded"
rm $MNT/dir/renamed $MNT/dir/hard $MNT/dir/soft
rmdir $MNT/dir
[ ! -e $MNT/dir ] || fail "rmdir left the directory"

step "another client's changes show up after the attribute TTL"
pfs_ctl mkdir /from-ctl
wait_until "pfs-ctl's directory visible in the mount" test -d $MNT/from-ctl
printf 'written by libpfs' > /tmp/src
pfs_ctl cp /tmp/src pfs:/from-ctl/f
wait_until "pfs-ctl's file visible with its size" \
	eval "[ \"\$(stat -c %s $MNT/from-ctl/f 2> /dev/null)\" = 17 ]"
[ "$(cat $MNT/from-ctl/f)" = "written by libpfs" ] || fail "libpfs's data differs"
pfs_ctl rm /from-ctl/f
wait_until "pfs-ctl's removal visible" eval "[ ! -e $MNT/from-ctl/f ]"

step "the servers' notices end cached names and attributes long before the TTL"
# A second mount is another client; it would trust what it caches for 10
# minutes, far beyond PFS_WAIT: only INVALIDATE notices make these pass.
mount_pfs $MNT2 attr_ttl=600000
mkdir $MNT/n
echo one > $MNT/n/f
stat $MNT2/n/f > /dev/null
[ -e $MNT2/n/absent ] && fail "absent name exists"
mv $MNT/n $MNT/n.old
mkdir $MNT/n
echo two > $MNT/n/absent
wait_until "the renamed directory's name to lead to the new one" \
	eval "[ ! -e $MNT2/n/f ]"
wait_until "a name cached as absent to show" test -e $MNT2/n/absent
stat $MNT2/n.old/f > /dev/null
chmod 600 $MNT/n.old/f
wait_until "the other mount's chmod to show" \
	eval "[ \"\$(stat -c %a $MNT2/n.old/f)\" = 600 ]"
echo more >> $MNT/n.old/f
wait_until "the other mount's append to show" \
	eval "[ \"\$(cat $MNT2/n.old/f)\" = \"\$(printf 'one\\nmore')\" ]"
umount_pfs $MNT2
rm -r $MNT/n $MNT/n.old

step "names a client changed itself stay watched; a lost connection ends every trusted name"
# name_ttl: names outlive attr_ttl (1 s) on the strength of the notices.
mount_pfs $MNT2 name_ttl=600000
grep " $MNT2 pfs " /proc/mounts | grep -q "attr_ttl=1000,name_ttl=600000" ||
	fail "show_options does not show name_ttl=600000"
mkdir $MNT/w
echo one > $MNT/w/f
stat $MNT2/w/f > /dev/null
# The notice for x ends $MNT2's watch of w; its own create of h must
# start a new one, or the removal of h would go untold.
echo x > $MNT/w/x
wait_until "the other mount's create to show" test -e $MNT2/w/x
echo h > $MNT2/w/h
rm $MNT/w/h
wait_until "the removal of a name this mount created to show" \
	eval "[ ! -e $MNT2/w/h ]"
# A restarted server knows no watches: $MNT2 saw its connection go, and
# must ask again about w/f at once, not after name_ttl.
stat $MNT2/w/f > /dev/null
pid=$(cat "$PFS_CLUSTER_DIR/run/meta1.pid")
kill -KILL "$pid"
wait "$pid" 2> /dev/null || true
pfs_start_daemon meta1 server/meta/pfs-meta
wait_until "pfs-meta serving the namespace again" eval 'pfs_ctl stat / > /dev/null 2>&1'
mv $MNT/w/f $MNT/w/g
[ -e $MNT2/w/f ] && fail "a name cached before the server restarted outlived it"
[ "$(cat $MNT2/w/g)" = one ] || fail "the renamed file does not read back"
umount_pfs $MNT2
rm -r $MNT/w

step "a directory a client keeps creating in loses its trust at another client's chmod"
# Each create of its own renews what $MNT2 trusts of p's permissions: only
# the notice of the chmod ends it, however often it creates.
mount_pfs $MNT2
mkdir -m 777 $MNT/p
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_user touch $MNT2/p/first || fail "a user cannot create in a mode 777 directory"
chmod 755 $MNT/p
n=0
creates_refused() { n=$((n + 1)); ! as_user touch $MNT2/p/f$n 2> /dev/null; }
wait_until "the other mount's chmod to refuse this one's creates" creates_refused
as_user touch $MNT2/p/again 2> /dev/null && fail "a create after the chmod succeeded"
umount_pfs $MNT2
rm -r $MNT/p

step "umount and unload"
umount_pfs $MNT
mountpoint -q $MNT && fail "$MNT still mounted"
unload_module
stop_cluster
check_dmesg_clean "$mark"
step "passed"
