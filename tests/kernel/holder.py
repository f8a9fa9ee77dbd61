#!/usr/bin/env python3
"""A process that holds files open and locked for kernel tests, driven by
commands on stdin, one per line; it answers each with one line on stdout
("ok ...", or "err ERRNO_NAME"). Starting python3 costs seconds in the TCG
guest: one holder serves a whole test.

  open NAME PATH [r|w|rw]     open (rw: O_RDWR|O_CREAT) and keep as NAME
  flock NAME sh|ex|un         flock(2), never waiting
  posix NAME r|w|u START LEN  fcntl F_SETLK (LEN 0: to the end)
  getlk NAME r|w START LEN    fcntl F_GETLK: "ok unlocked" or "ok locked"
  read NAME LEN               pread from 0: "ok SHA256-HEX BYTES"
  write NAME DATA             pwrite of DATA at 0
  fill NAME BYTES             pwrite of BYTES bytes ('x') at 0
  fsync NAME
  close NAME
  quit
"""
import errno
import fcntl
import hashlib
import os
import struct
import sys

LOCK_TYPES = {"r": fcntl.F_RDLCK, "w": fcntl.F_WRLCK, "u": fcntl.F_UNLCK}
FLOCKS = {"sh": fcntl.LOCK_SH | fcntl.LOCK_NB, "ex": fcntl.LOCK_EX | fcntl.LOCK_NB,
          "un": fcntl.LOCK_UN}
FLAGS = {"r": os.O_RDONLY, "w": os.O_WRONLY, "rw": os.O_RDWR | os.O_CREAT}


def flock_struct(kind, start, length):
    # struct flock on x86_64: short type, short whence, off_t start, off_t len, pid_t pid
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0)


def run(files, words):
    cmd, args = words[0], words[1:]
    if cmd == "open":
        mode = args[2] if len(args) > 2 else "rw"
        files[args[0]] = os.open(args[1], FLAGS[mode], 0o644)
        return "ok"
    if cmd == "flock":
        fcntl.flock(files[args[0]], FLOCKS[args[1]])
        return "ok"
    if cmd == "posix":
        fcntl.fcntl(files[args[0]], fcntl.F_SETLK,
                    flock_struct(LOCK_TYPES[args[1]], int(args[2]), int(args[3])))
        return "ok"
    if cmd == "getlk":
        out = fcntl.fcntl(files[args[0]], fcntl.F_GETLK,
                          flock_struct(LOCK_TYPES[args[1]], int(args[2]), int(args[3])))
        kind = struct.unpack("hhqqi4x", out)[0]
        return "ok unlocked" if kind == fcntl.F_UNLCK else "ok locked"
    if cmd == "read":
        data = os.pread(files[args[0]], int(args[1]), 0)
        return "ok %s %d" % (hashlib.sha256(data).hexdigest(), len(data))
    if cmd == "write":
        os.pwrite(files[args[0]], args[1].encode(), 0)
        return "ok"
    if cmd == "fill":
        os.pwrite(files[args[0]], b"x" * int(args[1]), 0)
        return "ok"
    if cmd == "fsync":
        os.fsync(files[args[0]])
        return "ok"
    if cmd == "close":
        fd = files.pop(args[0])
        os.close(fd)
        return "ok"
    raise ValueError("unknown command " + cmd)


def main():
    files = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            print("ok", flush=True)
            break
        try:
            answer = run(files, words)
        except OSError as e:
            answer = "err " + errno.errorcode.get(e.errno, str(e.errno))
        print(answer, flush=True)


if __name__ == "__main__":
    main()
