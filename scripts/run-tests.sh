#!/usr/bin/env bash
# Runs every test level registered with ctest (unit, integration, fuzz) and
# ends with one summary line: "N passed, N failed".
set -uo pipefail
build=${1:-build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

ctest --test-dir "$build" --output-on-failure --timeout 900 -j "$(nproc)" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n 1)
failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -n 1)
if [ -z "$total" ]; then
  echo "0 passed, 1 failed"
  exit 1
fi
echo "$((total - failed)) passed, ${failed} failed"
exit "$rc"
