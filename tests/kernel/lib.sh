# shellcheck shell=bash
# Shell library for kernel tests that run inside the QEMU guest
# (tests/kernel/run-guest.sh). Source it first thing in a test script:
#
#   . "$(dirname "$0")/lib.sh"
#
# It turns on `set -euo pipefail` and installs an EXIT trap that prints the
# daemons' logs when the test fails (call pfs_on_exit from your own trap if
# you replace it). Environment from run-guest.sh: PFS_SRC, PFS_BUILD,
# PFS_KMOD, PFS_SCRATCH. Tunables: PFS_WAIT (deadline in seconds for every
# wait, 120: the guest runs ~20x slower than the host), PFS_CLUSTER_DIR
# (/tmp/pfs-cluster: configs, secret, logs, state), PFS_MGMTD_PORT (8008).
#
#   start_cluster [N_STORAGE] [TARGETS_PER_STORAGE]   (2 2) mgmtd, meta, storage
#   stop_cluster                 SIGTERM all; fails if one died or exits badly
#   pfs_ctl ARGS...              pfs-ctl for this cluster
#   load_module [PARAMS...] / unload_module
#   mount_pfs MOUNTPOINT [OPTIONS] / umount_pfs MOUNTPOINT
#   setup_rails N; rail_down I; rail_up I; start_rdma_cluster N   soft-RoCE rails
#   mount_stat TRANSPORT KEY; rail_stat RAIL KEY; kernel_mrs        RDMA counters
#   dmesg_mark; dmesg_since MARK; expect_dmesg MARK ERE; check_dmesg_clean MARK
#   wait_until DESCRIPTION COMMAND...   poll COMMAND until it succeeds
#   wait_exit PID SECONDS        a background job's status; 124 and its
#                                threads' kernel stacks if it runs on
#   show_threads PID             what each thread of PID waits for (stderr)
#   fail MESSAGE; step MESSAGE; fsync_path PATH
#   server_requests KIND TYPE    each meta or storage server's count of TYPE
#                                requests so far (by alias, one line);
#   meta_requests TYPE           the same for the metadata servers
#   holder_start NAME; holder NAME COMMAND...; holder_send NAME COMMAND...
#                                files held open and locked (holder.py)
set -euo pipefail

: "${PFS_SRC:?lib.sh runs in the guest: use tests/kernel/run-guest.sh}"
: "${PFS_BUILD:=$PFS_SRC/build}"
: "${PFS_KMOD:=$PFS_SRC/kmod/pfs.ko}"
: "${PFS_WAIT:=120}"
: "${PFS_CLUSTER_DIR:=/tmp/pfs-cluster}"
: "${PFS_MGMTD_PORT:=8008}"
PFS_SECRET=$PFS_CLUSTER_DIR/etc/auth.secret
PFS_MGMTD=127.0.0.1:$PFS_MGMTD_PORT

fail() {
	echo "FAIL: $*" >&2
	# A test may define what to show when it fails.
	if declare -F pfs_on_fail > /dev/null; then pfs_on_fail >&2 || true; fi
	exit 1
}

# Progress line with the guest's uptime: shows where the (slow) time goes.
step() { echo "== [$(cut -d' ' -f1 /proc/uptime)s] $*"; }
# fsync(2) of a file or directory (coreutils' sync opens directories for writing).
fsync_path() { python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))' "$1"; }
server_requests() {
	pfs_ctl --json stats server --by-type --interval 0.1 | python3 -c '
import json, sys
nodes = [n for n in json.load(sys.stdin)["nodes"] if n["type"] == sys.argv[1]]
print(" ".join(str(n["requests_by_type"].get(sys.argv[2], 0)) for n in sorted(nodes, key=lambda n: n["alias"])))' "$1" "$2"
}
meta_requests() { server_requests meta "$1"; }

# wait_until DESCRIPTION COMMAND...: polls until COMMAND succeeds, at most
# PFS_WAIT seconds.
wait_until() {
	local what=$1 deadline=$((SECONDS + PFS_WAIT))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] ||
			fail "$what did not happen within ${PFS_WAIT}s"
		sleep 0.2
	done
}

# show_threads PID: what each thread of PID waits for in the kernel (wchan
# and stack), on stderr.
show_threads() {
	local t
	for t in /proc/"$1"/task/*; do
		[ -d "$t" ] || continue
		echo "$t $(cat "$t/comm" 2> /dev/null): wchan $(cat "$t/wchan" 2> /dev/null)" >&2
		cat "$t/stack" >&2 2> /dev/null || true
	done
}

# wait_exit PID SECONDS: the exit status of the background job PID, waited
# for at most SECONDS; when it is still running then, its threads
# (show_threads) and the status 124.
wait_exit() {
	local pid=$1 deadline=$((SECONDS + $2))
	while kill -0 "$pid" 2> /dev/null; do
		if [ $SECONDS -ge $deadline ]; then
			echo "pid $pid still runs after $2 s; its threads:" >&2
			show_threads "$pid"
			return 124
		fi
		sleep 0.2
	done
	wait "$pid"
}

# ---- a process holding files (holder.py) ---------------------------------

# holder_start NAME: starts tests/kernel/holder.py, which opens, locks,
# reads, ... files as it is told; its pid is in /tmp/holder-NAME/pid.
holder_start() {
	local d=/tmp/holder-$1 fd
	mkdir -p "$d"
	rm -f "$d/in" "$d/out"
	mkfifo "$d/in"
	python3 "$PFS_SRC/tests/kernel/holder.py" < "$d/in" > "$d/out" 2>&1 &
	echo $! > "$d/pid"
	exec {fd}> "$d/in"
	echo "$fd" > "$d/fd"
	echo 0 > "$d/asked"
}

# holder_send NAME COMMAND...: tells the holder, does not wait.
holder_send() {
	local d=/tmp/holder-$1 n
	shift
	n=$(($(cat "$d/asked") + 1))
	echo "$n" > "$d/asked"
	echo "$*" >&"$(cat "$d/fd")"
}

# holder NAME COMMAND...: tells the holder and prints its answer.
holder() {
	local name=$1 d=/tmp/holder-$1 n
	holder_send "$@"
	n=$(cat "$d/asked")
	wait_until "holder $name answering '${*:2}'" \
		eval '[ "$(wc -l < '"$d/out"')" -ge '"$n"' ]'
	sed -n "${n}p" "$d/out"
}

# ---- kernel log ---------------------------------------------------------

# Writes a unique mark into the kernel log and prints its name (used as
# mark=$(dmesg_mark), in a subshell: hence no counter).
dmesg_mark() {
	local mark
	mark="pfs-test-mark-$(cat /proc/sys/kernel/random/uuid)"
	echo "$mark" > /dev/kmsg
	echo "$mark"
}

# The kernel log from MARK on.
dmesg_since() {
	dmesg | sed -n "/ $1\$/,\$p"
}

expect_dmesg() {  # MARK ERE
	dmesg_since "$1" | grep -q -E -- "$2" ||
		fail "the kernel log lacks /$2/ since $1:
$(dmesg_since "$1" | tail -n 20)"
}

# Fails on any oops, WARN, lockdep report, ... (kernel-problems) since MARK.
check_dmesg_clean() {
	local found
	found=$(dmesg_since "$1" |
		grep -E -f <(sed '/^#/d;/^$/d' "$PFS_SRC/tests/kernel/kernel-problems") ||
		true)
	[ -z "$found" ] || fail "kernel problems since $1:
$found"
}

# ---- the module -------------------------------------------------------------

load_module() {
	[ -f "$PFS_KMOD" ] || fail "$PFS_KMOD missing: build it with 'make kmod'"
	local magic dep
	magic=$(modinfo -F vermagic "$PFS_KMOD" | cut -d' ' -f1)
	[ "$magic" = "$(uname -r)" ] ||
		fail "$PFS_KMOD is built for $magic, the guest runs $(uname -r)"
	# insmod does not resolve dependencies: load them from the guest
	# kernel's modules first.
	for dep in $(modinfo -F depends "$PFS_KMOD" | tr , ' '); do
		modprobe "$dep" || fail "cannot load $dep, which pfs.ko needs"
	done
	insmod "$PFS_KMOD" "$@" || fail "insmod $PFS_KMOD failed"
	[ -d /sys/module/pfs ] || fail "pfs is not in /sys/module after insmod"
}

unload_module() {
	if ! rmmod pfs; then
		echo "pfs module: $(grep '^pfs ' /proc/modules)" >&2
		grep ' pfs ' /proc/mounts >&2 || true
		fail "rmmod pfs failed"
	fi
	[ ! -d /sys/module/pfs ] || fail "pfs is still in /sys/module after rmmod"
}

# mount_pfs MOUNTPOINT [OPTIONS]: mounts this cluster (source: mgmtd's
# HOST:PORT, secret_file: the shared secret; more options: timeout=MS,
# attr_ttl=MS, cache=buffered|none, conns=N).
mount_pfs() {
	local mnt=$1 opts=${2:-}
	mkdir -p "$mnt"
	mount -t pfs -o "secret_file=$PFS_SECRET${opts:+,$opts}" "$PFS_MGMTD" "$mnt" ||
		fail "mount -t pfs $PFS_MGMTD $mnt failed"
}

umount_pfs() {
	umount "$1" || fail "umount $1 failed"
}

# ---- the daemons --------------------------------------------------------------

pfs_ctl() {
	"$PFS_BUILD/utils/ctl/pfs-ctl" --config "$PFS_CLUSTER_DIR/etc/ctl.conf" "$@"
}

# True while PID runs (a zombie, one that exited but was not reaped, does not).
# (No subshell: every fork costs under TCG.)
pfs_running() {
	local stat
	{ read -r stat < "/proc/$1/stat"; } 2> /dev/null || return 1
	stat=${stat##*) }
	[ "${stat:0:1}" != Z ]
}

pfs_start_daemon() {  # NAME BINARY
	local name=$1 exe=$PFS_BUILD/$2
	[ -x "$exe" ] || fail "$exe missing: build user space ('make')"
	setsid "$exe" --config "$PFS_CLUSTER_DIR/etc/$name.conf" \
		>> "$PFS_CLUSTER_DIR/log/$name.log" 2>&1 < /dev/null &
	echo $! > "$PFS_CLUSTER_DIR/run/$name.pid"
}

# Counted with grep on pfs-ctl's JSON (one key per line): starting python3
# for every poll costs seconds under TCG.
pfs_online_targets() {
	local json
	json=$(pfs_ctl target list --json 2> /dev/null) || { echo 0; return; }
	grep -c '"reachability": "ONLINE"' <<< "$json" || true
}

pfs_all_online() { [ "$(pfs_online_targets)" -eq "$1" ]; }

# The node id of the metadata server named ALIAS (meta1, meta2, ...).
pfs_meta_id() {  # ALIAS
	pfs_ctl node list --type meta --json | python3 -c '
import json, sys
print([n["node_id"] for n in json.load(sys.stdin)["nodes"] if n["alias"] == sys.argv[1]][0])' "$1"
}

# start_cluster [N_STORAGE] [TARGETS_PER_STORAGE] [N_META]: pfs-mgmtd,
# N_META pfs-meta (default 1) and N_STORAGE pfs-storage servers on loopback,
# configured through config files under PFS_CLUSTER_DIR/etc, targets on the
# scratch disk; returns once every target is ONLINE and pfs-meta serves the
# namespace (every metadata server ONLINE too). PFS_STORAGE_DIRECT_IO (auto):
# O_DIRECT chunk files. PFS_META_CONF: more lines for every pfs-meta's
# config file (e.g. "session-timeout = 2"); PFS_SERVER_CONF: for every
# pfs-meta's and pfs-storage's (e.g. "rdma-interfaces = pfsr0s").
start_cluster() {
	local nstor=${1:-2} ntgt=${2:-2} nmeta=${3:-1} d=$PFS_CLUSTER_DIR n t targets
	local tdir=${PFS_SCRATCH:-$d}/pfs-targets
	# The daemons' state (the metadata journal included): PFS_STATE_DIR,
	# for a benchmark that puts it on the disk its rivals use.
	local sdir=${PFS_STATE_DIR:-$d}
	mkdir -p "$d/etc" "$d/log" "$d/run"
	(umask 077 && head -c 32 /dev/urandom | base64 > "$PFS_SECRET")
	cat > "$d/etc/mgmtd.conf" <<-CONF
		auth-file = $PFS_SECRET
		data-dir = $sdir/mgmtd
		listen = 127.0.0.1
		port = $PFS_MGMTD_PORT
	CONF
	cat > "$d/etc/ctl.conf" <<-CONF
		auth-file = $PFS_SECRET
		mgmtd = $PFS_MGMTD
	CONF
	for n in $(seq "$nmeta"); do
		cat > "$d/etc/meta$n.conf" <<-CONF
			auth-file = $PFS_SECRET
			mgmtd = $PFS_MGMTD
			listen = 127.0.0.1
			port = $((8005 + 10 * (n - 1)))
			alias = meta$n
			state-dir = $sdir/meta$n
			heartbeat-ms = 1000
		CONF
		[ -z "${PFS_META_CONF:-}" ] || echo "$PFS_META_CONF" >> "$d/etc/meta$n.conf"
		[ -z "${PFS_SERVER_CONF:-}" ] || echo "$PFS_SERVER_CONF" >> "$d/etc/meta$n.conf"
	done
	for n in $(seq "$nstor"); do
		targets=
		for t in $(seq "$ntgt"); do
			mkdir -p "$tdir/storage$n/t$t"
			targets+=${targets:+,}$tdir/storage$n/t$t
		done
		cat > "$d/etc/storage$n.conf" <<-CONF
			auth-file = $PFS_SECRET
			mgmtd = $PFS_MGMTD
			listen = 127.0.0.1
			port = $((8003 + 10 * (n - 1)))
			alias = storage$n
			state-dir = $sdir/storage$n
			targets = $targets
			heartbeat-ms = 1000
			direct-io = ${PFS_STORAGE_DIRECT_IO:-auto}
		CONF
		[ -z "${PFS_SERVER_CONF:-}" ] || echo "$PFS_SERVER_CONF" >> "$d/etc/storage$n.conf"
	done

	pfs_start_daemon mgmtd server/mgmtd/pfs-mgmtd
	wait_until "pfs-mgmtd answering" eval 'pfs_ctl node list > /dev/null 2>&1'
	pfs_start_daemon meta1 server/meta/pfs-meta
	# The first registered holds the root: the others start after it.
	[ "$nmeta" -eq 1 ] || wait_until "meta1 registered" eval \
		'pfs_ctl node list --type meta 2> /dev/null | grep -q meta1'
	for n in $(seq 2 "$nmeta"); do
		pfs_start_daemon "meta$n" server/meta/pfs-meta
	done
	for n in $(seq "$nstor"); do
		pfs_start_daemon "storage$n" server/storage/pfs-storage
	done
	wait_until "$((nstor * ntgt)) targets ONLINE" pfs_all_online $((nstor * ntgt))
	wait_until "pfs-meta serving the namespace" eval 'pfs_ctl stat / > /dev/null 2>&1'
	[ "$nmeta" -eq 1 ] || wait_until "$nmeta metadata servers ONLINE" eval \
		'[ "$(pfs_ctl node list --type meta --json 2> /dev/null | grep -c "\"ONLINE\"")" -eq '"$nmeta"' ]'
}

# ---- RDMA rails (soft-RoCE) -----------------------------------------------------

# setup_rails N: N RDMA rails, each a veth pair with an rxe device on both
# ends: rail i's client end is pfsr<i>c (10.88.<i>.1, rxe device
# rxe<i>c), its server end pfsr<i>s (10.88.<i>.2, rxe<i>s). rxe cannot
# cross network namespaces on this kernel, so both ends stay in this one,
# and policy routing sends what goes from one end's address to the other
# over the veth wire instead of through the local table: traffic that
# arrives on a rail is looked up in the local table first, traffic to
# a rail address leaves by the rail's other end (or, that end down, is
# unreachable), and the local table comes after both. A rail goes down
# with rail_down I (`ip link set pfsr<i>c down`) and up with rail_up I.
setup_rails() {
	local n=$1 i c s
	modprobe rdma_rxe && modprobe ib_uverbs && modprobe rdma_ucm && modprobe veth ||
		fail "cannot load the soft-RoCE modules"
	for i in $(seq 0 $((n - 1))); do
		c=pfsr${i}c s=pfsr${i}s
		ip link add "$c" type veth peer name "$s"
		ip addr add "10.88.$i.1/24" dev "$c"
		ip addr add "10.88.$i.2/24" dev "$s"
		ip link set "$c" up
		ip link set "$s" up
		sysctl -qw "net.ipv4.conf.$c.accept_local=1" "net.ipv4.conf.$s.accept_local=1" \
			"net.ipv4.conf.$c.rp_filter=0" "net.ipv4.conf.$s.rp_filter=0"
		ip rule add pref 100 iif "$c" lookup local
		ip rule add pref 100 iif "$s" lookup local
		ip rule add pref 200 to "10.88.$i.2" lookup $((1000 + 2 * i))
		ip route add "10.88.$i.2" dev "$c" src "10.88.$i.1" table $((1000 + 2 * i))
		ip rule add pref 200 to "10.88.$i.1" lookup $((1001 + 2 * i))
		ip route add "10.88.$i.1" dev "$s" src "10.88.$i.2" table $((1001 + 2 * i))
		rdma link add "rxe${i}c" type rxe netdev "$c" || fail "rdma link add on $c failed"
		rdma link add "rxe${i}s" type rxe netdev "$s" || fail "rdma link add on $s failed"
	done
	sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.all.rp_filter=0
	# Soft-RoCE packets that a busy guest drops (a full backlog) make
	# rxe retransmit, seconds later: room for the bursts TCG makes.
	sysctl -qw net.core.netdev_max_backlog=100000
	# A rail whose wire is down must not be bypassed through the local
	# table: what this host sends to a rail address goes by the rail or
	# nowhere.
	ip rule add pref 250 to 10.88.0.0/16 unreachable
	if ip rule show pref 0 | grep -q 'lookup local'; then
		ip rule del pref 0 lookup local
		ip rule add pref 300 lookup local
	fi
}

# rail_down I / rail_up I: rail I's client end down, or up again with the
# route the interface lost when it went down.
#
# While it is down, the server end sends into a queue, as into a wire: the
# packets the server still sends to the client end are lost, and its queue
# pairs resend them on their timeout. Without the queue, veth refuses each
# one at once, and soft-RoCE on this kernel resends a refused packet at
# once, forever: a storm (millions of drops on the server end) that starved
# the guest for 20-40 s, stalled the other rails' connections and expired
# the client's session; with the queue the interface is down within 20 ms.
# (Not kept while the rail is up: with a queue there, soft-RoCE ran 2-4x
# slower, test_rdma_multirail 197-245 s instead of 81-90 s.)
rail_down() {
	tc qdisc replace dev "pfsr${1}s" root pfifo limit 10000
	ip link set "pfsr${1}c" down
}

rail_up() {
	local i=$1
	ip link set "pfsr${i}c" up
	tc qdisc del dev "pfsr${i}s" root 2> /dev/null || true
	ip route replace "10.88.$i.2" dev "pfsr${i}c" src "10.88.$i.1" table $((1000 + 2 * i))
}

# start_rdma_cluster N: N rails (setup_rails), then start_cluster 2 2 with
# every server on them too and the rails' client addresses trusted.
start_rdma_cluster() {
	setup_rails "$1"
	PFS_META_CONF="trusted-clients = 127.0.0.0/8,10.88.0.0/16" \
		PFS_SERVER_CONF="rdma-interfaces = $(rail_servers "$1")" start_cluster 2 2
}

# A counter of pfs.ko's /proc/self/mountstats, from its "KIND NAME: key N
# key N ..." lines: mount_stat tcp requests, rail_stat pfsr0c bytes.
mountstats_field() {  # KIND NAME KEY
	awk -v k="$1" -v n="$2:" -v f="$3" '$1 == k && $2 == n {
		for (i = 3; i < NF; i += 2) if ($i == f) print $(i + 1) }' /proc/self/mountstats | tail -n 1
}
mount_stat() { mountstats_field transport "$1" "$2"; }
rail_stat() { mountstats_field rail "$1" "$2"; }

# Registrations of pfs.ko's own ("comm [pfs]"): memory servers could reach now.
kernel_mrs() {
	rdma res show mr 2> /dev/null | grep -c 'comm \[pfs\]' || true
}

# The server ends of N rails, for rdma-interfaces: pfsr0s,pfsr1s,...
rail_servers() {
	local i out=
	for i in $(seq 0 $(($1 - 1))); do out+=${out:+,}pfsr${i}s; done
	echo "$out"
}

# Stops every daemon with SIGTERM, all at once (SIGKILL after PFS_WAIT).
# Fails if one had died before or does not exit with status 0: a server
# crash during a kernel test is a bug too.
stop_cluster() {
	local f name pid rc bad='' names=() pids=()
	local deadline=$((SECONDS + PFS_WAIT))
	for f in "$PFS_CLUSTER_DIR"/run/*.pid; do
		[ -f "$f" ] || continue
		name=$(basename "$f" .pid)
		pid=$(cat "$f")
		rm -f "$f"
		if pfs_running "$pid"; then
			kill -TERM "$pid" 2> /dev/null || true
		else
			bad+=" $name(died before stop_cluster)"
		fi
		names+=("$name")
		pids+=("$pid")
	done
	for i in "${!pids[@]}"; do
		name=${names[$i]} pid=${pids[$i]}
		while pfs_running "$pid" && [ $SECONDS -lt $deadline ]; do
			sleep 0.1
		done
		if pfs_running "$pid"; then
			kill -KILL "$pid" 2> /dev/null || true
			bad+=" $name(ignored SIGTERM for ${PFS_WAIT}s)"
		fi
		# Reap it and learn its status (127: not our child, unknown).
		rc=0
		wait "$pid" 2> /dev/null || rc=$?
		[ "$rc" -eq 0 ] || [ "$rc" -eq 127 ] || bad+=" $name(exit status $rc)"
	done
	if [ -n "$bad" ]; then
		pfs_show_logs
		fail "daemons misbehaved:$bad"
	fi
}

pfs_show_logs() {
	local f
	for f in "$PFS_CLUSTER_DIR"/log/*.log; do
		[ -f "$f" ] || continue
		echo "----- $(basename "$f") (last 30 lines) -----" >&2
		tail -n 30 "$f" >&2
	done
}

pfs_on_exit() {
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		pfs_show_logs
	fi
	return "$rc"
}
trap pfs_on_exit EXIT
