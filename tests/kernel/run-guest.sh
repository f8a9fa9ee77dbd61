#!/usr/bin/env bash
# Boots Debian's kernel (the release pfs.ko is built for) in a QEMU TCG guest
# whose root is this machine's / (read-only, under a tmpfs overlay) and runs
# SCRIPT there as root, with a fresh ext4 scratch disk on /scratch.
#
#   tests/kernel/run-guest.sh [options] SCRIPT [ARGS...]
#
#   -t, --timeout SEC   bound on the whole run, boot included (300)
#   --build DIR         user-space build directory, $PFS_BUILD in the guest
#                       (default: $PFS_BUILD, else <repo>/build)
#   --kmod FILE         the module, $PFS_KMOD in the guest (<repo>/kmod/pfs.ko)
#   --dir DIR           guest cache (guest-prepare.sh; <repo>/build/kernel-guest)
#   --log FILE          console log (default DIR/logs/<script name>.log)
#   --out DIR           copy here what the guest wrote to $PFS_GUEST_OUT
#   --disk-size SIZE    scratch disk size (8G); --no-disk for none
#   --mem SIZE, --smp N guest memory (4G) and CPUs (2); PFS_GUEST_CPU: the
#                       CPU model (Nehalem)
#   --hung-secs N       hung-task report threshold in the guest (60)
#   --layer DIR         a root prepared on the host (packages installed into
#                       it), stacked over this machine's / in the guest; when
#                       it has lib/modules/<release>/kernel, those modules
#                       serve instead of the unpacked image's (guest-init)
#   --systemd           boot systemd as PID 1, which runs SCRIPT as a unit
#   -q, --quiet         do not stream the console; print it on failure
#
# The guest has fresh tmpfs over /tmp, /var/tmp, /run and /root; the
# repository, the build, the module, the cache and the script show through
# wherever they are (a checkout under /tmp too). The run fails (non-zero exit, console log printed) when
# SCRIPT fails (its exit code is passed out), the timeout hits, or the kernel
# logs an oops, BUG, WARNING, lockdep report, hung task, UBSAN or KASAN
# report, or gets tainted by one. The guest sees PFS_SRC (the repository),
# PFS_BUILD, PFS_KMOD, PFS_SCRATCH, PFS_GUEST_OUT and PFS_GUEST=1.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

timeout_s=${PFS_GUEST_TIMEOUT:-300}
build=${PFS_BUILD:-$top/build}
kmod=${PFS_KMOD:-$top/kmod/pfs.ko}
cache=${PFS_GUEST_DIR:-$top/build/kernel-guest}
log='' out='' layer='' init='' disk_size=8G mem=4G smp=2 cpu=${PFS_GUEST_CPU:-Nehalem} hung=60 quiet=0

die() { echo "run-guest: $*" >&2; exit 125; }

while [ $# -gt 0 ]; do
  case $1 in
    -t|--timeout) timeout_s=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --kmod) kmod=$2; shift 2 ;;
    --dir) cache=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --disk-size) disk_size=$2; shift 2 ;;
    --no-disk) disk_size=; shift ;;
    --mem) mem=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --hung-secs) hung=$2; shift 2 ;;
    --layer) layer=$(realpath -e "$2") || die "no such layer: $2"; shift 2 ;;
    --systemd) init=systemd; shift ;;
    -q|--quiet) quiet=1; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || die "usage: run-guest.sh [options] SCRIPT [ARGS...] (see --help)"
script=$(realpath -e "$1") || die "no such script: $1"
shift
[[ $timeout_s =~ ^[0-9]+$ ]] || die "--timeout wants seconds, not '$timeout_s'"
build=$(realpath -m "$build")
kmod=$(realpath -m "$kmod")
cache=$(realpath -m "$cache")

# The guest reaches the host through 9p at the same paths; where it mounts
# fresh tmpfs, guest-init lays an overlay of each host path named in
# pfs_expose over it (the outermost ones: one shows all below it).
hidden() {
  case $1/ in
    /tmp/*|/var/tmp/*|/run/*|/root/*) return 0 ;;
  esac
  return 1
}
expose=()
for p in "$top" "$build" "$(dirname "$kmod")" "$cache" "$(dirname "$script")"; do
  hidden "$p" || continue
  [[ $p != *:* ]] || die "$p: a path the guest must see cannot hold ':'"
  expose+=("$p")
done
exposed=''
shown() {  # PATH: seen in the guest
  local q
  hidden "$1" || return 0
  for q in ${exposed//:/ }; do
    case $1/ in "$q"/*) return 0 ;; esac
  done
  return 1
}
while IFS= read -r p; do
  [ -n "$p" ] || continue
  shown "$p" || exposed+=":$p"
done < <(printf '%s\n' "${expose[@]}" | awk '{ print length, $0 }' | sort -n | cut -d' ' -f2-)
exposed=${exposed#:}
# Paths travel on the kernel command line: no blanks there.
[[ $cache$here$exposed != *[[:space:]]* ]] || die "the guest cache and the repository need paths without blanks"

command -v qemu-system-x86_64 > /dev/null || die "qemu-system-x86_64 missing: run scripts/install-deps.sh"
kdir=$("$here/guest-prepare.sh" --dir "$cache" --quiet) || die "guest-prepare.sh failed"
kver=$(basename "$kdir")

name=$(basename "$script"); name=${name%.*}
log=${log:-$cache/logs/$name.log}
mkdir -p "$(dirname "$log")" "$cache/runs"
log=$(realpath -m "$log")
job=$(mktemp -d "$cache/runs/$name.XXXXXX")
qpid='' tpid=''
cleanup() {
  [ -z "$qpid" ] || kill "$qpid" 2> /dev/null || true
  [ -z "$tpid" ] || kill "$tpid" 2> /dev/null || true
  rm -rf "$job"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The job: environment, working directory and the script with its arguments,
# quoted for bash.
cwd=$PWD
shown "$cwd" || cwd=$top
share=$job/share   # the guest's /run/pfs-job
mkdir -p "$share/out"
{
  echo "export PFS_GUEST=1 PFS_SRC=$(printf %q "$top") PFS_BUILD=$(printf %q "$build")"
  echo "export PFS_KMOD=$(printf %q "$kmod") PFS_GUEST_OUT=/run/pfs-job/out"
  [ -z "$disk_size" ] || echo "export PFS_SCRATCH=/scratch"
  echo "cd $(printf %q "$cwd")"
  printf 'exec'
  [ -x "$script" ] || printf ' bash'
  printf ' %q' "$script" "$@"
  echo
} > "$share/job.sh"

# The CPU: Nehalem, not max, because TCG runs AVX and AVX2 code through
# slow helpers (figures in tests/kernel/README.md); it keeps the SSE4.2
# that the initramfs's crc32c-intel needs.
# shellcheck disable=SC2054  # commas belong to QEMU's option syntax
qemu=(qemu-system-x86_64
  -accel tcg,thread=multi -cpu "$cpu" -smp "$smp" -m "$mem"
  -nodefaults -no-reboot -display none -monitor none -nic none
  -kernel "$kdir/kernel" -initrd "$kdir/initrd.img"
  -chardev "file,id=console,path=$log" -serial chardev:console
  -fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
  -device virtio-9p-pci,fsdev=root,mount_tag=pfsroot
  -fsdev "local,id=job,path=$share,security_model=none,multidevs=remap"
  -device virtio-9p-pci,fsdev=job,mount_tag=pfsjob
  -device virtio-rng-pci)
if [ -n "$disk_size" ]; then
  img=$job/scratch.img
  truncate -s "$disk_size" "$img"
  # cache=none (O_DIRECT) where the host file system has it: the guest's
  # flushes then reach the disk, as on a real server. (Probed before mkfs:
  # the probe writes the first block.)
  disk_cache=writeback
  if dd if=/dev/zero of="$img" bs=4096 count=1 conv=notrunc oflag=direct status=none 2> /dev/null; then
    disk_cache=none
  fi
  # Formatted here: mkfs.ext4 takes 0.1 s on the host and several seconds
  # under TCG. Lazy init is safe: the holes of the sparse image read as zeros.
  command -v mkfs.ext4 > /dev/null || PATH=$PATH:/usr/sbin:/sbin
  mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1,nodiscard "$img" ||
    die "mkfs.ext4 of the scratch image failed"
  qemu+=(-drive "file=$img,if=virtio,format=raw,cache=$disk_cache,aio=threads")
fi
# mitigations=off: page-table isolation and friends cost a lot under TCG and
# protect nothing in a throw-away guest. Stall detectors get more slack than
# on hardware, since a loaded host can stop a vCPU thread for seconds.
append="console=ttyS0,115200 panic=-1 mitigations=off printk.time=1 random.trust_cpu=on"
append+=" rcupdate.rcu_cpu_stall_timeout=60 watchdog_thresh=30"
modules=$kdir/root/lib/modules
[ -z "$layer" ] || [ ! -d "$layer$(realpath -m /lib/modules)/$kver/kernel" ] || modules=
append+=" pfs_stage2=$here/guest-stage2.sh pfs_modules=$modules pfs_hung=$hung"
if [ -n "$layer" ]; then
  # A share of its own: inside the host root's share it would overlap the
  # lower layer below it, which overlayfs refuses.
  qemu+=(-fsdev "local,id=layer,path=$layer,security_model=none,readonly=on,multidevs=remap"
    -device virtio-9p-pci,fsdev=layer,mount_tag=pfslayer)
  append+=" pfs_layer=1"
fi
[ -z "$init" ] || append+=" pfs_init=$init"
[ -z "$exposed" ] || append+=" pfs_expose=$exposed"
qemu+=(-append "$append")

[ "$quiet" = 1 ] || echo "run-guest: booting $kver for $(basename "$script") (timeout ${timeout_s}s, console: $log)" >&2
start=$SECONDS
: > "$log"
timeout -k 10 "$timeout_s" "${qemu[@]}" < /dev/null > "$job/qemu.out" 2>&1 &
qpid=$!
if [ "$quiet" = 0 ]; then
  # The boot is long and always the same: show the console from the job on
  # (all of it is in the log, and printed below if the boot fails).
  tail -n +1 -f --pid="$qpid" "$log" | sed -u -n 's/\r$//; /pfs-guest: booted in/,$p' &
  tpid=$!
fi
set +e
wait "$qpid"
rc=$?
set -e
qpid=
if [ -n "$tpid" ]; then wait "$tpid" 2> /dev/null || true; tpid=; fi
elapsed=$((SECONDS - start))
sed -i 's/\r$//' "$log"
if [ -n "$out" ]; then
  mkdir -p "$out"
  cp -a "$share/out/." "$out/"
fi

# ---- verdict --------------------------------------------------------------

problems=()
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || problems+=("timed out after ${timeout_s}s")
[ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] ||
  problems+=("qemu exited with status $rc: $(tail -n 5 "$job/qemu.out")")

exit_rc=$(grep -a -o 'PFS-GUEST-EXIT=[0-9]*' "$log" | tail -n 1 | cut -d= -f2 || true)
if [ -z "$exit_rc" ]; then
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || problems+=("the guest stopped without reporting an exit status")
elif [ "$exit_rc" -ne 0 ]; then
  problems+=("$(basename "$script") exited with status $exit_rc")
fi

# Only kernel messages count (they carry the printk timestamp), so a script
# that prints "WARNING:" itself does not fail the run.
splats=$(grep -a -n -E '\[ *[0-9]+\.[0-9]+\] ' "$log" |
  grep -a -E -f <(sed '/^#/d;/^$/d' "$here/kernel-problems") || true)
[ -z "$splats" ] || problems+=("kernel problems on the console:
$(head -n 10 <<< "$splats")")

# Taint flags catch what the console might have lost: B bad page (32), D died
# (128), W warning (512), L soft lockup (16384).
taint=$(grep -a -o 'PFS-GUEST-TAINT=[0-9]*' "$log" | tail -n 1 | cut -d= -f2 || true)
if [ -n "$taint" ] && [ $((taint & (32 | 128 | 512 | 16384))) -ne 0 ]; then
  problems+=("the kernel is tainted ($taint: see Documentation/admin-guide/tainted-kernels.rst)")
fi

if [ ${#problems[@]} -eq 0 ]; then
  echo "run-guest: $(basename "$script") passed in ${elapsed}s (console: $log)" >&2
  exit 0
fi

# The verdict first (a CI log may show only the top of a failure), then the
# console, then the verdict again below it.
verdict() {
  local p
  for p in "${problems[@]}"; do echo "run-guest: FAILED: $p" >&2; done
  grep -a -E '^(FAIL: |== \[)' "$log" | tail -n 3 | sed 's/^/run-guest: /' >&2 || true
  # What the test showed about its failure (pfs_on_fail), kernel lines aside:
  # a CI log that keeps only the top of the console still has it.
  sed -n '/^FAIL: /,$p' "$log" | grep -a -v -E '^\[ *[0-9]+\.[0-9]+\] ' | sed -n '2,26p' |
    cut -c1-400 | sed 's/^/run-guest: | /' >&2 || true
}
verdict
if [ "$quiet" = 1 ] || ! grep -q 'pfs-guest: booted in' "$log"; then
  lines=$(wc -l < "$log")
  if [ "$lines" -le 400 ]; then
    echo "----- console ($log) -----" >&2
    cat "$log" >&2
  else
    # The tail, and the first kernel problem with some context before it.
    from=$((lines - 150))
    first=$(head -n 1 <<< "$splats" | cut -d: -f1)
    if [ -n "$first" ] && [ $((first - 20)) -lt "$from" ]; then
      if [ $((lines - first)) -lt 400 ]; then
        from=$((first - 20))
      else
        echo "----- console ($log), from the first kernel problem (line $first) -----" >&2
        sed -n "$((first - 20)),$((first + 80))p" "$log" >&2
      fi
    fi
    echo "----- console ($log), lines $from to $lines -----" >&2
    sed -n "$from,\$p" "$log" >&2
  fi
  echo "----- end of console -----" >&2
fi
[ ! -s "$job/qemu.out" ] || { echo "----- qemu -----" >&2; cat "$job/qemu.out" >&2; }
verdict
echo "run-guest: console log: $log" >&2
if [ -n "$exit_rc" ] && [ "$exit_rc" -ne 0 ]; then exit "$exit_rc"; fi
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || exit 124
exit 1
