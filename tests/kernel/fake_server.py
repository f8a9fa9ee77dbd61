#!/usr/bin/env python3
"""A PFS server that misbehaves on purpose, for the kernel transport test.

It speaks the real handshake and serves, on one port, what the kernel asks
of mgmtd (SUBSCRIBE, GET_NODES, GET_TARGETS: one storage node, itself, with
target 1) and of a storage server (PING, CHUNK_WRITE kept in memory,
CHUNK_READ). --mode picks how it breaks the protocol:

  good        correct, but CHUNK_READs are answered only once --batch of
              them are waiting, in reverse order (replies out of order)
  oversize    a CHUNK_READ reply carries one byte more than asked for
  badmagic    a CHUNK_READ reply's header has the wrong magic
  hugelen     a CHUNK_READ reply's header claims a 4 GiB payload
  staleid     every reply is preceded by one for a request id never used
  wrongtype   a CHUNK_READ is answered with a PING reply
  request     a server-to-client request instead of a reply
  stall       a CHUNK_READ reply stops half way and the server goes quiet
  enoent      CHUNK_READs fail with ENOENT and a status message
  badproof    the handshake's server proof is wrong
  badcount    GET_NODES claims 65536 nodes and sends none
  silent      accepts connections and never sends the handshake's challenge
  deaf        listens with a backlog of 0 and never accepts: once one
              connection fills the queue, connects hang in SYN_SENT
  sink        serves the map, then stops reading at the first CHUNK_WRITE
              header (the sender's socket buffer fills; prints "sinking")

stall prints "stalled" when it goes quiet.

Usage: fake_server.py --port P --secret FILE --mode MODE [--batch N]
"""
import argparse
import hashlib
import hmac
import os
import socket
import struct
import sys
import threading

MAGIC = 0x31534650
VERSION = 1
HEADER = struct.Struct("<IHHIIQIIQQ")
FLAG_REPLY, FLAG_NOTIFY = 1, 2
AUTH_CHALLENGE, AUTH_RESPONSE, PING = 1, 2, 3
GET_NODES, GET_TARGETS, SUBSCRIBE = 103, 104, 109
CHUNK_WRITE, CHUNK_READ = 300, 301
E_AUTH = 1001
NODE_ID, NODE_STORAGE, TARGET_ID = 7, 3, 1


def pstr(s):
    b = s.encode()
    return struct.pack("<H", len(b)) + b


def capacity():
    return struct.pack("<QQQQ", 1 << 30, 1 << 29, 1000, 500)


def ok(body=b""):
    return struct.pack("<i", 0) + body


def failed(status, message):
    return struct.pack("<i", status) + pstr(message)


class Conn:
    def __init__(self, sock, args, store):
        self.sock, self.args, self.store = sock, args, store
        self.reads = []  # CHUNK_READs held back (mode good)

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            got = self.sock.recv(n - len(buf))
            if not got:
                raise EOFError
            buf += got
        return buf

    def read_frame(self):
        h = HEADER.unpack(self.recv_exact(HEADER.size))
        return h, self.recv_exact(h[4])

    def send(self, type_, flags, rid, payload, magic=MAGIC, length=None):
        length = len(payload) if length is None else length
        self.sock.sendall(HEADER.pack(magic, VERSION, type_, flags, length,
                                      rid, 0, 0, 0, 0) + payload)

    def reply(self, h, payload, **kw):
        self.send(h[2], FLAG_REPLY, h[5], payload, **kw)

    def handshake(self):
        secret = self.args.secret_bytes
        sn = os.urandom(32)
        self.send(AUTH_CHALLENGE, 0, 0, sn)
        h, p = self.read_frame()
        cn, mac = p[:32], p[32:64]
        want = hmac.new(secret, b"pfs-auth-v1 client" + sn + cn,
                        hashlib.sha256).digest()
        if h[2] != AUTH_RESPONSE or not hmac.compare_digest(mac, want):
            self.reply(h, failed(E_AUTH, "wrong shared secret"))
            return False
        proof = hmac.new(secret, b"pfs-auth-v1 server" + cn + sn,
                         hashlib.sha256).digest()
        if self.args.mode == "badproof":
            proof = os.urandom(32)
        self.reply(h, ok(proof))
        return True

    def serve(self):
        if self.args.mode == "silent":
            threading.Event().wait()  # never a challenge
        if not self.handshake():
            return
        while True:
            h = HEADER.unpack(self.recv_exact(HEADER.size))
            if self.args.mode == "sink" and h[2] == CHUNK_WRITE:
                print("sinking", flush=True)
                threading.Event().wait()  # never reads again
            self.dispatch(h, self.recv_exact(h[4]))

    def dispatch(self, h, p):
        mode, port = self.args.mode, self.args.port
        if mode == "staleid":
            self.send(h[2], FLAG_REPLY, 987654321, ok(b"x" * 1000))
        t = h[2]
        if t == SUBSCRIBE:
            self.reply(h, ok(struct.pack("<Q", 1)))
        elif t == GET_NODES:
            if mode == "badcount":
                self.reply(h, ok(struct.pack("<I", 65536)))
                return
            node = (struct.pack("<IHHB", NODE_ID, NODE_STORAGE, port, 0) +
                    pstr("fake") + pstr("127.0.0.1") + struct.pack("<Q", 0) +
                    capacity())
            self.reply(h, ok(struct.pack("<I", 1) + node))
        elif t == GET_TARGETS:
            target = (struct.pack("<IIIBBBB", TARGET_ID, NODE_ID, 1, 0, 0, 0, 0) +
                      pstr("/fake") + struct.pack("<Q", 0) + capacity())
            self.reply(h, ok(struct.pack("<I", 1) + target))
        elif t == PING:
            self.reply(h, ok(struct.pack("<IH", NODE_ID, NODE_STORAGE)))
        elif t == CHUNK_WRITE:
            offset, length = struct.unpack_from("<QI", p, 20)
            data = p[32:32 + length]
            with self.store["lock"]:
                buf = self.store["data"]
                if len(buf) < offset + length:
                    buf.extend(bytes(offset + length - len(buf)))
                buf[offset:offset + length] = data
            self.reply(h, ok(struct.pack("<I", length)))
        elif t == CHUNK_READ:
            self.chunk_read(h, p)
        else:
            self.reply(h, failed(1003, "not served by the fake"))

    def chunk_read(self, h, p):
        mode = self.args.mode
        offset, length = struct.unpack_from("<QI", p, 20)
        with self.store["lock"]:
            data = bytes(self.store["data"][offset:offset + length])
        if mode == "good":
            self.reads.append((h, data))
            if len(self.reads) >= self.args.batch:
                for rh, rdata in reversed(self.reads):
                    self.reply(rh, ok(rdata))
                self.reads = []
        elif mode == "oversize":
            self.reply(h, ok(data + b"!"))
        elif mode == "badmagic":
            self.reply(h, ok(data), magic=0xdeadbeef)
        elif mode == "hugelen":
            self.reply(h, ok(data), length=0xffffffff)
        elif mode == "wrongtype":
            self.send(PING, FLAG_REPLY, h[5], ok(struct.pack("<IH", 1, 3)))
        elif mode == "request":
            self.send(CHUNK_READ, 0, h[5], p)
        elif mode == "stall":
            whole = HEADER.pack(MAGIC, VERSION, h[2], FLAG_REPLY,
                                4 + len(data), h[5], 0, 0, 0, 0) + ok(data)
            self.sock.sendall(whole[:len(whole) // 2])
            print("stalled", flush=True)
            threading.Event().wait()  # quiet for ever
        elif mode == "enoent":
            self.reply(h, failed(2, "no chunk here (fake)"))
        else:
            self.reply(h, ok(data))


def handle(sock, args, store):
    try:
        Conn(sock, args, store).serve()
    except (EOFError, OSError):
        pass
    finally:
        sock.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--mode", default="good")
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    with open(args.secret, "rb") as f:
        args.secret_bytes = f.read().rstrip(b"\r\n")
    store = {"lock": threading.Lock(), "data": bytearray()}
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", args.port))
    srv.listen(0 if args.mode == "deaf" else 16)
    print("listening", flush=True)
    if args.mode == "deaf":
        threading.Event().wait()  # never accepts
    while True:
        sock, _ = srv.accept()
        threading.Thread(target=handle, args=(sock, args, store),
                         daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
