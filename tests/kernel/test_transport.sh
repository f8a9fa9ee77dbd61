#!/bin/bash
# guest-timeout: 900
# Guest test (run-guest.sh): the kernel transport of pfs.ko (kmod/net/)
# against the real daemons, driven through the module's net_debug knob, no
# mount: a wrong secret is refused, the map comes from mgmtd, many requests
# are in flight at once over a pool of connections and answered out of
# order, reads land in pages; a server that stops answering times out, one
# that dies fails what is in flight at once and later requests fast, and a
# restarted one is reconnected; mgmtd restarting and then pushing a new
# target; umount -f (abort); stop and unload leave nothing behind.
. "$(dirname "$0")/lib.sh"

KNOB=/sys/module/pfs/parameters/net_debug
TIMEOUT_MS=8000

knob() { echo "$*" > "$KNOB" || fail "net_debug '$*' failed: $(cat "$KNOB")"; }

# knob_fails ERROR-TEXT COMMAND: the command fails with that error.
knob_fails() {
	local want=$1 out
	shift
	if out=$( (echo "$*" > "$KNOB") 2>&1); then
		fail "net_debug '$*' succeeded, expected '$want'"
	fi
	[[ $out == *"$want"* ]] || fail "net_debug '$*': '$out', expected '$want'"
}

result() { cat "$KNOB"; }

expect_result() {
	[[ $(result) =~ $1 ]] || fail "net_debug says '$(result)', expected /$1/"
}

py_json() {  # PYTHON-EXPRESSION over j, the JSON on stdin
	python3 -c "import json, sys; j = json.load(sys.stdin); print($1)"
}

node_id() {  # ALIAS
	pfs_ctl node list --json |
		py_json "[n['node_id'] for n in j['nodes'] if n['alias'] == '$1'][0]"
}

target_of() {  # ALIAS of a storage node: its (first) target id
	pfs_ctl target list --json |
		py_json "[t['target_id'] for t in j['targets'] if t['node_alias'] == '$1'][0]"
}

# Established TCP connections of the kernel (no process owns the socket)
# to port PORT.
conns_to() {
	ss -Htnp state established "( dport = :$1 )" | grep -vc users: || true
}

# Bytes queued unread on the server side of port PORT.
unread_at() {
	ss -Htn state established "( sport = :$1 )" |
		awk '{ s += $1 } END { print s + 0 }'
}

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

restart_daemon() {  # NAME BINARY
	local pid
	pid=$(cat "$PFS_CLUSTER_DIR/run/$1.pid")
	kill -KILL "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	pfs_start_daemon "$1" "$2"
}

step "cluster: mgmtd, meta and 2 storage servers with one target each"
start_cluster 2 1
load_module
mark=$(dmesg_mark)
meta=$(node_id meta1)
t1=$(target_of storage1)
t2=$(target_of storage2)
nodes=$(pfs_ctl node list --json | py_json "len(j['nodes'])")

step "a wrong secret is refused with EACCES"
(umask 077 && head -c 32 /dev/urandom | base64 > /tmp/wrong.secret)
knob_fails "Permission denied" start "$PFS_MGMTD" /tmp/wrong.secret
expect_dmesg "$mark" "refused the shared secret"
knob_fails "Connection refused" start 127.0.0.1:7 "$PFS_SECRET"

step "the map: $nodes nodes, 2 targets"
knob start "$PFS_MGMTD" "$PFS_SECRET" "$TIMEOUT_MS" 4
expect_result "^started: $nodes nodes, 2 targets"
knob getattr
expect_result "^getattr / on meta $meta .*mode 40"

step "4 threads with 256 PINGs in flight each, over a pool of 4 connections"
knob ping "$meta" 256 4
result
[ "$(conns_to 8005)" -eq 4 ] ||
	fail "$(conns_to 8005) connections to meta, expected the pool's 4"

step "64 pages written, then 64 CHUNK_READs in flight into pages, checked"
knob io "$t1" 64
result
knob io "$t2" 64

step "a server that stops answering: ETIMEDOUT after the timeout"
spid=$(cat "$PFS_CLUSTER_DIR/run/storage1.pid")
kill -STOP "$spid"
t0=$(date +%s%N)
knob_fails "Connection timed out" io "$t1" 1
took=$(ms_since "$t0")
echo "timed out after $took ms"
[ "$took" -ge $((TIMEOUT_MS - 500)) ] || fail "timed out early ($took ms)"
[ "$took" -lt $((TIMEOUT_MS * 3)) ] || fail "timed out late ($took ms)"

step "killed with requests in flight: EIO at once, not after the timeout"
before=$(unread_at 8003)
(echo "io $t1 4" > "$KNOB") 2> /tmp/inflight.err &
writer=$!
wait_until "the request queued at the stopped server" \
	eval '[ "$(unread_at 8003)" -gt "$before" ]'
t0=$(date +%s%N)
kill -KILL "$spid"
wait "$spid" 2> /dev/null || true
if wait "$writer"; then
	fail "io to a killed server succeeded"
fi
took=$(ms_since "$t0")
echo "failed after $took ms: $(cat /tmp/inflight.err)"
grep -q "Input/output error" /tmp/inflight.err || fail "expected EIO"
[ "$took" -lt $((TIMEOUT_MS / 2)) ] ||
	fail "in-flight requests failed only after $took ms"

step "requests to the dead server fail fast with EIO"
t0=$(date +%s%N)
knob_fails "Input/output error" io "$t1" 1
took=$(ms_since "$t0")
echo "failed after $took ms"
[ "$took" -lt $((TIMEOUT_MS / 2)) ] || fail "took $took ms to fail"
knob io "$t2" 4

step "the restarted server is reconnected"
pfs_start_daemon storage1 server/storage/pfs-storage
wait_until "io to the restarted storage1" \
	eval 'echo "io $t1 8" > "$KNOB" 2> /dev/null'
result

step "mgmtd restarts; the map follows a new target by push"
restart_daemon mgmtd server/mgmtd/pfs-mgmtd
wait_until "pfs-mgmtd answering again" eval 'pfs_ctl node list > /dev/null 2>&1'
# Reconnected (and so resubscribed): from now on only a push can tell the
# kernel about the new target.
wait_until "the kernel back on mgmtd" eval '[ "$(conns_to 8008)" -eq 1 ]'
mkdir -p "$PFS_SCRATCH/pfs-targets/storage3/t1"
sed -e "s/^port = .*/port = 8023/" -e "s/storage1/storage3/g" \
	"$PFS_CLUSTER_DIR/etc/storage1.conf" > "$PFS_CLUSTER_DIR/etc/storage3.conf"
pfs_start_daemon storage3 server/storage/pfs-storage
wait_until "3 targets ONLINE" pfs_all_online 3
wait_until "the kernel's map has 3 targets (pushed)" \
	eval 'knob map; [[ $(result) == *", 3 targets" ]]'
knob io "$(target_of storage3)" 4
knob ping "$meta" 16

step "abort (umount -f): everything fails with EIO"
knob abort
knob_fails "Input/output error" ping "$meta" 1
knob_fails "Input/output error" io "$t2" 1

step "stop: no thread or connection left"
knob stop
[ -z "$(pgrep -x pfs-rx)" ] || fail "pfs-rx threads left after stop"
[ "$(conns_to 8005)" -eq 0 ] || fail "connections to meta left after stop"
[ "$(conns_to 8008)" -eq 0 ] || fail "connections to mgmtd left after stop"

# ---- a server that breaks the protocol (fake_server.py) ----

fake_pid=
fake_port=9000
# fake MODE: a fake server misbehaving as MODE on a fresh port, and a
# kernel log mark (fmark) for what it makes the kernel say.
fake() {
	fake_port=$((fake_port + 1))
	python3 "$PFS_SRC/tests/kernel/fake_server.py" --port "$fake_port" \
		--secret "$PFS_SECRET" --mode "$1" > "/tmp/fake-$1.log" 2>&1 &
	fake_pid=$!
	wait_until "fake server ($1) listening" \
		eval "grep -q listening /tmp/fake-$1.log"
	fmark=$(dmesg_mark)
}

fake_done() {
	echo stop > "$KNOB" 2> /dev/null || true
	kill "$fake_pid" 2> /dev/null || true
	wait "$fake_pid" 2> /dev/null || true
}

step "fake server: 16 CHUNK_READs answered in reverse order"
fake good
knob start "127.0.0.1:$fake_port" "$PFS_SECRET" 4000 1
knob io 1 16
result
fake_done

step "fake server: a reply for an unknown request id is skipped"
fake staleid
knob start "127.0.0.1:$fake_port" "$PFS_SECRET" 4000 1
knob io 1 8
fake_done

step "fake server: a status with a message maps to its errno"
fake enoent
knob start "127.0.0.1:$fake_port" "$PFS_SECRET" 4000 1
knob_fails "No such file or directory" io 1 2
knob ping 7 4
fake_done

for broken in "oversize:larger than asked for" \
	"badmagic:malformed frame header \(-74\)" \
	"hugelen:malformed frame header \(-90\)" \
	"request:server sent a request" \
	"wrongtype:malformed reply to"; do
	step "fake server: ${broken%%:*} fails the request with EIO"
	fake "${broken%%:*}"
	knob start "127.0.0.1:$fake_port" "$PFS_SECRET" 4000 1
	knob_fails "Input/output error" io 1 4
	expect_dmesg "$fmark" "${broken#*:}"
	fake_done
done

step "fake server: a reply that stops half way is bounded by the timeout"
fake stall
knob start "127.0.0.1:$fake_port" "$PFS_SECRET" 4000 1
t0=$(date +%s%N)
if out=$( (echo "io 1 4" > "$KNOB") 2>&1); then
	fail "io against a stalled reply succeeded"
fi
took=$(ms_since "$t0")
echo "failed after $took ms: $out"
[[ $out == *"Input/output error"* || $out == *"timed out"* ]] ||
	fail "unexpected error: $out"
[ "$took" -lt 12000 ] || fail "took $took ms with a 4000 ms timeout"
expect_dmesg "$fmark" "connection lost \(-110\)"
fake_done

step "fake server: a wrong server proof is refused with EACCES"
fake badproof
knob_fails "Permission denied" start "127.0.0.1:$fake_port" "$PFS_SECRET"
expect_dmesg "$fmark" "could not prove it knows the shared secret"
fake_done

step "fake server: a hostile node count fails the start with EIO"
fake badcount
knob_fails "Input/output error" start "127.0.0.1:$fake_port" "$PFS_SECRET"
fake_done

step "unload with a started net: the module stops it"
knob start "$PFS_MGMTD" "$PFS_SECRET" "$TIMEOUT_MS" 2
knob ping "$meta" 64 2
unload_module
[ -z "$(pgrep -x pfs-rx)" ] || fail "pfs-rx threads left after rmmod"
[ "$(conns_to 8005)" -eq 0 ] || fail "connections to meta left after rmmod"
check_dmesg_clean "$mark"

stop_cluster
step "passed"
