#!/bin/bash
# guest-timeout: 420
# Guest test (run-guest.sh): a task that pfs.ko blocks on the network dies
# within a second of SIGKILL, wherever it waits, although every wait is
# otherwise bounded only by a 60 s timeout: in the reply wait while the
# reply stalls half way (the receiving thread holds the request), in a send
# to a server that stops reading (full socket buffer), in the handshake
# with a server that never sends its challenge, and in a TCP connect that
# is never accepted. The servers are tests/kernel/fake_server.py; the
# first two cases drive the transport through the module's net_debug knob,
# the last two are mounts. No hung task (run-guest.sh fails the run on
# one), and the module unloads afterwards. Arguments: the cases to run
# (1 reply, 2 send, 3 handshake, 4 connect; default: all).
. "$(dirname "$0")/lib.sh"
CASES=" ${*:-1 2 3 4} "
want() { [[ $CASES == *" $1 "* ]]; }

KNOB=/sys/module/pfs/parameters/net_debug
LONG_MS=60000		# every timeout: only SIGKILL can end these waits
SECRET=/tmp/kill.secret
MNT=/mnt/pfs

fake_pid=
fake_port=9100
# fake MODE: a fake server misbehaving as MODE on a fresh port.
fake() {
	fake_port=$((fake_port + 1))
	fake_log=/tmp/fake-$1.log
	python3 "$PFS_SRC/tests/kernel/fake_server.py" --port "$fake_port" \
		--secret "$SECRET" --mode "$1" > "$fake_log" 2>&1 &
	fake_pid=$!
	wait_until "fake server ($1) listening" grep -q listening "$fake_log"
}

fake_done() {
	kill "$fake_pid" 2> /dev/null || true
	wait "$fake_pid" 2> /dev/null || true
}

# blocked_in PID FUNCTION: the task's kernel stack shows FUNCTION (ERE;
# scheduler functions such as wait_for_completion never show there).
blocked_in() { grep -Eq "$2" "/proc/$1/stack" 2> /dev/null; }

# kill_fast WHAT PID: SIGKILL, and PID must be gone within a second.
# (Timed with bash's own clock: a fork costs up to a second under TCG.)
kill_fast() {
	local what=$1 pid=$2 t0 took
	echo "$what: $(tr '\n' ' ' < "/proc/$pid/stack" | cut -c1-300)"
	t0=${EPOCHREALTIME/./}
	kill -KILL "$pid"
	wait "$pid" 2> /dev/null || true
	took=$(((${EPOCHREALTIME/./} - t0) / 1000))
	echo "$what: gone $took ms after kill -9"
	[ "$took" -lt 1000 ] || slow+="
$what took $took ms to die after kill -9"
}
slow=''

(umask 077 && head -c 32 /dev/urandom | base64 > "$SECRET")
mkdir -p $MNT
load_module
mark=$(dmesg_mark)

if want 1; then
	step "a reply that stalls half way: the waiter dies at once"
	fake stall
	echo "start 127.0.0.1:$fake_port $SECRET $LONG_MS 1" > "$KNOB"
	(echo "io 1 1" > "$KNOB") 2> /dev/null &
	waiter=$!
	wait_until "the reply stalled" grep -q stalled "$fake_log"
	wait_until "the waiter waiting" blocked_in $waiter pfs_rpc_wait
	kill_fast "a task waiting for a stalled reply" $waiter
	echo stop > "$KNOB"
	fake_done
fi

if want 2; then
	step "a server that stops reading: a sender blocked in send dies at once"
	fake sink
	echo "start 127.0.0.1:$fake_port $SECRET $LONG_MS 1" > "$KNOB"
	# One 8 MiB CHUNK_WRITE: far more than the socket buffers hold.
	(echo "io 1 2048" > "$KNOB") 2> /dev/null &
	sender=$!
	wait_until "the server sinking the write" grep -q sinking "$fake_log"
	wait_until "the sender blocked in send" blocked_in $sender sk_stream_wait_memory
	kill_fast "a task blocked in send" $sender
	echo stop > "$KNOB"
	fake_done
fi

if want 3; then
	step "a server that never sends its challenge: a mount in the handshake dies at once"
	fake silent
	mount -i -t pfs -o "secret_file=$SECRET,connect_timeout=$LONG_MS,timeout=$LONG_MS" \
		"127.0.0.1:$fake_port" $MNT 2> /dev/null &
	mounter=$!
	wait_until "the mount waiting for the challenge" blocked_in $mounter tcp_recvmsg
	kill_fast "a mount in the handshake" $mounter
	grep -q " $MNT pfs " /proc/mounts && fail "the killed mount is mounted"
	fake_done
fi

if want 4; then
	step "a connect that is never accepted: a mount in connect dies at once"
	fake deaf
	# The only place in the accept queue (backlog 0) taken: SYNs go unanswered.
	exec 5<> "/dev/tcp/127.0.0.1/$fake_port"
	mount -i -t pfs -o "secret_file=$SECRET,connect_timeout=$LONG_MS,timeout=$LONG_MS" \
		"127.0.0.1:$fake_port" $MNT 2> /dev/null &
	mounter=$!
	wait_until "the mount waiting in connect" blocked_in $mounter "inet_wait_for_connect|inet_stream_connect"
	kill_fast "a mount in connect" $mounter
	grep -q " $MNT pfs " /proc/mounts && fail "the killed mount is mounted"
	exec 5>&-
	fake_done
fi

[ -z "$slow" ] || fail "killed tasks lingered:$slow"
step "unload"
unload_module
[ -z "$(pgrep -x pfs-rx)" ] || fail "pfs-rx threads left after rmmod"
check_dmesg_clean "$mark"
step "passed"
