#!/usr/bin/env bash
# Runs every test level registered with ctest (unit, system, integration,
# fuzz, then kernel) and ends with one summary line: "N passed, N failed".
#
# The kernel tests run their QEMU guests one at a time, and a TCG guest
# leaves part of the machine idle. The install test's Debian packages are
# built in that idle time: at the lowest priority, beside the kernel tests
# (not beside the others, some of which assert timings), and the install
# test waits for them (run-install-test.sh --packages-only; a lock file).
set -uo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp)
packager=''
# shellcheck disable=SC2317  # the EXIT trap calls it
finish() {
  [ -z "$packager" ] || kill -- -"$packager" 2> /dev/null || true
  rm -f "$log"
}
trap finish EXIT

run_ctest() {  # ctest arguments
  ctest --test-dir "$build" --output-on-failure --timeout 900 -j "$(nproc)" "$@" 2>&1 | tee -a "$log"
  return "${PIPESTATUS[0]}"
}

run_ctest -LE kernel
rc=$?
installs=$(ctest --test-dir "$build" -N -R '^kernel: install' | grep -c 'Test *#')
if [ "$(id -u)" = 0 ] && [ "$installs" -gt 0 ]; then
  "$top/scripts/install-deps.sh" --packaging > /dev/null
  mkdir -p "$build/install-test"
  set -m   # its own process group: killed whole if the tests end first
  nice -n 19 ionice -c 3 "$top/tests/kernel/install/run-install-test.sh" --packages-only \
    --work "$build/install-test" < /dev/null > "$build/install-test/packages.log" 2>&1 &
  packager=$!
  set +m
fi
run_ctest -L kernel || rc=$?

totals=$(sed -n 's/.*, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' "$log")
if [ "$(echo "$totals" | grep -c .)" != 2 ]; then
  echo "0 passed, 1 failed"
  exit 1
fi
echo "$totals" | awk '{ failed += $1; total += $2 } END { print total - failed " passed, " failed " failed" }'
exit "$rc"
