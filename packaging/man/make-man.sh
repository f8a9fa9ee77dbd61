#!/usr/bin/env bash
# A program's manual page from its --help and --version (help2man) and the
# hand-written sections of packaging/man/PROGRAM.h2m.
#
#   packaging/man/make-man.sh PROGRAM-BINARY SECTION OUT
#
# PFS_MAN_EMULATOR: a command that runs the binary (qemu-aarch64 -L ... for
# a cross build); help2man then runs it through a wrapper of that name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 3 ] || { echo "usage: make-man.sh PROGRAM-BINARY SECTION OUT" >&2; exit 2; }
bin=$1 section=$2 out=$3
name=$(basename "$bin")
if [ -n "${PFS_MAN_EMULATOR:-}" ]; then
  wrap=$(dirname "$out")/.emulated/$name
  mkdir -p "$(dirname "$wrap")"
  printf '#!/bin/sh\nexec %s %q "$@"\n' "$PFS_MAN_EMULATOR" "$(realpath "$bin")" > "$wrap"
  chmod +x "$wrap"
  bin=$wrap
fi
# Defaults taken from the build machine (its host name as --alias) would
# end up in the page: name them instead.
host=$(hostname)
help2man --no-info --no-discard-stderr --section "$section" \
  --include "$here/$name.h2m" --source "pfs" --manual "System Administration" \
  --version-option --version --help-option --help "$bin" |
  sed "s/(=$host)/(=the host name)/g" > "$out.tmp"
mv "$out.tmp" "$out"
