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
  evil        also a metadata server (node 5, the root's) whose namespace
              holds what no client may take (see EVIL): directories
              listing "../../x", "a/b", "", ".." amid entries and an
              unknown d_type, files of size 2^63 and 2^62 + 1 and one of
              an unknown file type; "good" is a sane directory, its two
              files may be opened (one target, 1). UNLINK and RMDIR are
              answered OK and printed ("UNLINK NAME"), so are LOCKs
              ("LOCK ino=I kind=K type=T owner=0x...")

stall prints "stalled" when it goes quiet.

Usage: fake_server.py --port P --secret FILE --mode MODE [--batch N]
(--port 0: any free port; the first line of output, "listening on
127.0.0.1:P", names it)
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
VERSION = 12
BLOCKS_UNKNOWN = (1 << 64) - 1  # pfs_attr.blocks: the server has no count
HEADER = struct.Struct("<IHHIIQIIQQ")
FLAG_REPLY, FLAG_NOTIFY, FLAG_GROUPS, FLAG_BULK = 1, 2, 4, 8
BULK = struct.Struct("<BII")  # an inline bulk block: place, in_len, out_len
AUTH_CHALLENGE, AUTH_RESPONSE, PING, BIND_CLIENT = 1, 2, 3, 5
AUTH_FRAME_MAC, AUTH_DATA_MAC, FRAME_MAC_LEN = 1, 2, 16
GET_NODES, GET_TARGETS, SUBSCRIBE = 103, 104, 109
LOOKUP, GETATTR, UNLINK, RMDIR, READDIR = 200, 201, 207, 208, 211
OPEN, CLOSE, LISTXATTR, STATFS = 212, 213, 216, 218
LOCK, GETLK, SESSION_RENEW, SESSION_END = 221, 222, 223, 224
OPEN_NAME, CLOSE_MANY, READDIR_PLUS = 226, 236, 240
CHUNK_WRITE, CHUNK_READ = 300, 301
E_AUTH, E_UNKNOWN_MSG = 1001, 1003
ENOENT, ENOTDIR = 2, 20
NODE_ID, NODE_STORAGE, TARGET_ID = 7, 3, 1
WRITE_VERIFIER = 0x5eed
META_ID, NODE_META = 5, 2
S_IFDIR, S_IFREG = 0o040000, 0o100000
DT_DIR, DT_REG = 4, 8

# Mode evil's namespace: ino -> (mode, size, entries); entries are (name,
# ino, d_type) after "." and "..". The root is ino 1, "fine" (ino 20) an
# ordinary file. LOOKUP also knows "." and ".." and the root's unlisted
# "x": the path "../../x" leads somewhere for a client that follows it.
EVIL = {
    1: (S_IFDIR | 0o755, 4096, [("good", 10, DT_DIR), ("names", 11, DT_DIR),
                               ("slash", 12, DT_DIR), ("empty", 13, DT_DIR),
                               ("dots", 14, DT_DIR), ("dtype", 15, DT_DIR),
                               ("huge", 30, DT_REG), ("past", 31, DT_REG),
                               ("weird", 32, DT_REG)]),
    10: (S_IFDIR | 0o755, 4096, [("fine", 20, DT_REG), ("fine2", 22, DT_REG)]),
    11: (S_IFDIR | 0o755, 4096, [("../../x", 21, DT_REG),
                                 ("fine", 20, DT_REG)]),
    12: (S_IFDIR | 0o755, 4096, [("a/b", 21, DT_REG)]),
    13: (S_IFDIR | 0o755, 4096, [("", 21, DT_REG)]),
    14: (S_IFDIR | 0o755, 4096, [("fine", 20, DT_REG), ("..", 10, DT_DIR)]),
    15: (S_IFDIR | 0o755, 4096, [("f", 21, 3)]),
    20: (S_IFREG | 0o644, 6, None),
    21: (S_IFREG | 0o644, 6, None),
    22: (S_IFREG | 0o644, 6, None),
    30: (S_IFREG | 0o644, 1 << 63, None),
    31: (S_IFREG | 0o644, (1 << 62) + 1, None),
    32: (0o170644, 6, None),
}


def pstr(s):
    b = s.encode()
    return struct.pack("<H", len(b)) + b


def capacity():
    return struct.pack("<QQQQ", 1 << 30, 1 << 29, 1000, 500)


def ok(body=b""):
    return struct.pack("<i", 0) + body


def failed(status, message):
    return struct.pack("<i", status) + pstr(message)


ROLES = {1: b"client", 2: b"admin", 3: b"server"}


def role_key(secret, role):
    """A role's key: a "pfs-key-v1 ROLE HEX" file's, or derived from the
    cluster secret."""
    if secret.startswith(b"pfs-key-v1 "):
        return bytes.fromhex(secret.split(b" ")[2].decode())
    return hmac.new(secret, b"pfs-role-v1 " + ROLES.get(role, b"?"), hashlib.sha256).digest()


def entry_id(ino):
    return struct.pack("<QII", ino, META_ID, 1)


def attr(ino):
    mode, size, entries = EVIL[ino]
    nlink = 2 if entries is not None else 1
    times = struct.pack("<qI", 1700000000, 0) * 3
    rdev_btime = struct.pack("<IqI", 0, 1700000000, 0)
    blocks_xattrs = struct.pack("<QI", BLOCKS_UNKNOWN, 0)
    return (entry_id(ino) + struct.pack("<IIIIQ", mode, 0, 0, nlink, size) + times + rdev_btime +
            blocks_xattrs)


def layout():
    return struct.pack("<IIII", 64 << 10, 1, 1, TARGET_ID)


def read_str(p, at):
    n = struct.unpack_from("<H", p, at)[0]
    return p[at + 2:at + 2 + n].decode(errors="replace"), at + 2 + n


class Conn:
    def __init__(self, sock, args, store):
        self.sock, self.args, self.store = sock, args, store
        self.reads = []  # CHUNK_READs held back (mode good)
        self.session = None  # frame MACs on: their key
        self.data_mac = False  # they cover bulk data too
        self.tx_seq = self.rx_seq = 0

    def mac(self, direction, seq, raw):
        return hmac.new(self.session, direction + struct.pack("<Q", seq) + raw,
                        hashlib.sha256).digest()[:FRAME_MAC_LEN]

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            got = self.sock.recv(n - len(buf))
            if not got:
                raise EOFError
            buf += got
        return buf

    def read_header(self):
        raw = self.recv_exact(HEADER.size)
        return raw, HEADER.unpack(raw)

    def read_payload(self, raw, h):
        """The payload of the frame whose header was raw (and h), its MAC
        checked when frames carry them."""
        p = self.recv_exact(h[4])
        if self.session:
            tag = self.recv_exact(FRAME_MAC_LEN)
            covered = len(p)
            if h[3] & FLAG_BULK and not self.data_mac:  # the data is not under it
                covered -= BULK.unpack_from(p)[1]
            if not hmac.compare_digest(tag, self.mac(b"C", self.rx_seq, raw + p[:covered])):
                raise EOFError("bad frame MAC")
            self.rx_seq += 1
        return p

    def read_frame(self):
        raw, h = self.read_header()
        return h, self.read_payload(raw, h)

    def sealed(self, raw, data_len=0):
        """raw (a whole frame ending with data_len bytes of bulk data) with
        its MAC when frames carry them."""
        if not self.session:
            return raw
        tag = self.mac(b"S", self.tx_seq, raw if self.data_mac else raw[:len(raw) - data_len])
        self.tx_seq += 1
        return raw + tag

    def send(self, type_, flags, rid, payload, magic=MAGIC, length=None, data_len=0):
        length = len(payload) if length is None else length
        self.sock.sendall(self.sealed(HEADER.pack(magic, VERSION, type_, flags, length,
                                                  rid, 0, 0, 0, 0) + payload, data_len))

    def reply(self, h, payload, data=b"", **kw):
        """A reply of status and body; to a bulk request with its bulk data."""
        if h[3] & FLAG_BULK:
            kw.setdefault("flags", FLAG_REPLY | FLAG_BULK)
            payload = struct.pack("<I", len(data)) + payload + data
            kw["data_len"] = len(data)
        self.send(h[2], kw.pop("flags", FLAG_REPLY), h[5], payload, **kw)

    def handshake(self):
        sn = os.urandom(32)
        self.send(AUTH_CHALLENGE, 0, 0, sn)
        h, p = self.read_frame()
        cn, mac, tail = p[:32], p[32:64], p[64:66]
        key = role_key(self.args.secret_bytes, tail[0] if tail else 0)
        want = hmac.new(key, b"pfs-auth-v2 client" + sn + cn + tail,
                        hashlib.sha256).digest()
        if h[2] != AUTH_RESPONSE or not hmac.compare_digest(mac, want):
            self.reply(h, failed(E_AUTH, "authentication refused"))
            return False
        flags = tail[1] & (AUTH_FRAME_MAC | AUTH_DATA_MAC)
        proof = hmac.new(key, b"pfs-auth-v2 server" + cn + sn + tail[:1] + bytes([flags]),
                         hashlib.sha256).digest()
        if self.args.mode == "badproof":
            proof = os.urandom(32)
        self.reply(h, ok(proof + bytes([flags])))
        if flags:
            self.session = hmac.new(key, b"pfs-session-v2" + sn + cn, hashlib.sha256).digest()
            self.data_mac = bool(flags & AUTH_DATA_MAC)
        return True

    def serve(self):
        if self.args.mode == "silent":
            threading.Event().wait()  # never a challenge
        if not self.handshake():
            return
        while True:
            raw, h = self.read_header()
            if self.args.mode == "sink" and h[2] == CHUNK_WRITE:
                print("sinking", flush=True)
                threading.Event().wait()  # never reads again
            p = self.read_payload(raw, h)
            self.bulk = b""
            if h[3] & FLAG_BULK:  # the bulk block first; its data ends the payload
                _, in_len, _ = BULK.unpack_from(p)
                p = p[BULK.size:]
                self.bulk = p[len(p) - in_len:]
                p = p[:len(p) - in_len]
            if h[3] & FLAG_GROUPS:  # the caller's groups, in front of the body
                p = p[4 + 4 * struct.unpack_from("<I", p)[0]:]
            self.dispatch(h, p)

    def dispatch(self, h, p):
        mode, port = self.args.mode, self.args.port
        if mode == "staleid":
            self.send(h[2], FLAG_REPLY, 987654321, ok(b"x" * 1000))
        t = h[2]
        if t == BIND_CLIENT:
            cid = hashlib.sha256(b"pfs-client-id-v1" + p).digest()[:8]
            self.reply(h, ok(struct.pack("<Q", struct.unpack("<Q", cid)[0] or 1)))
        elif t == SUBSCRIBE:
            self.reply(h, ok(struct.pack("<Q", 1)))
        elif t == GET_NODES:
            if mode == "badcount":
                self.reply(h, ok(struct.pack("<I", 65536)))
                return
            nodes = [(NODE_ID, NODE_STORAGE)]
            if mode == "evil":
                nodes.append((META_ID, NODE_META))
            body = struct.pack("<I", len(nodes))
            for node_id, node_type in nodes:
                body += (struct.pack("<IHHB", node_id, node_type, port, 0) +
                         pstr("fake") + pstr("127.0.0.1") +
                         struct.pack("<Q", 0) + capacity() + b"\0")  # no more addresses
            self.reply(h, ok(body))
        elif t == GET_TARGETS:
            target = (struct.pack("<IIIBBBB", TARGET_ID, NODE_ID, 1, 0, 0, 0, 0) +
                      pstr("/fake") + struct.pack("<Q", 0) + capacity())
            self.reply(h, ok(struct.pack("<I", 1) + target))
        elif t == PING:
            self.reply(h, ok(struct.pack("<IH", NODE_ID, NODE_STORAGE)))
        elif t == CHUNK_WRITE:
            offset, length = struct.unpack_from("<QI", p, 20)
            data = self.bulk[:length]
            with self.store["lock"]:
                buf = self.store["data"]
                if len(buf) < offset + length:
                    buf.extend(bytes(offset + length - len(buf)))
                buf[offset:offset + length] = data
            self.reply(h, ok(struct.pack("<IQ", length, WRITE_VERIFIER)))
        elif t == CHUNK_READ:
            self.chunk_read(h, p)
        elif mode == "evil" and 200 <= t < 300:
            self.evil_meta(h, p)
        else:
            self.reply(h, failed(E_UNKNOWN_MSG, "not served by the fake"))

    def evil_meta(self, h, p):
        t = h[2]
        if t == GETATTR:
            ino = struct.unpack_from("<Q", p)[0]
            if ino in EVIL:
                self.reply(h, ok(attr(ino)))
            else:
                self.reply(h, failed(ENOENT, "no such entry"))
        elif t == LOOKUP:
            ino = struct.unpack_from("<Q", p)[0]
            name = read_str(p, 16)[0]
            entries = EVIL.get(ino, (0, 0, None))[2]
            found = [e for e in entries or [] if e[0] == name]
            if name in (".", "..") or (ino == 1 and name == "x"):
                found = [(name, {".": ino, "..": 1, "x": 21}[name], 0)]
            if entries is None:
                self.reply(h, failed(ENOTDIR, "not a directory"))
            elif found:
                self.reply(h, ok(attr(found[0][1])))
            else:
                self.reply(h, failed(ENOENT, "no such entry"))
        elif t in (READDIR, READDIR_PLUS):
            # READDIR_PLUS: every entry the fake knows comes with its
            # attributes, the impossible ones included.
            ino, _, _, cookie = struct.unpack_from("<QIIQ", p)
            entries = [(".", ino, DT_DIR), ("..", 1, DT_DIR)]
            entries += EVIL.get(ino, (0, 0, []))[2] or []
            body = b""
            count = 0
            for c, (name, e_ino, dtype) in enumerate(entries, 1):
                if c <= cookie:
                    continue
                body += (entry_id(e_ino) + struct.pack("<QB", c, dtype) +
                         pstr(name))
                if t == READDIR_PLUS:
                    known = c > 2 and e_ino in EVIL
                    body += struct.pack("<B", known) + (attr(e_ino) if known else b"")
                count += 1
            page = struct.pack("<QBI", len(entries), 1, count)
            self.reply(h, ok(page + body))
        elif t in (UNLINK, RMDIR):
            name = read_str(p, 16)[0]
            print(("UNLINK " if t == UNLINK else "RMDIR ") + name, flush=True)
            self.reply(h, ok())
        elif t in (OPEN, OPEN_NAME):
            ino = struct.unpack_from("<Q", p)[0]
            if t == OPEN_NAME:
                name = read_str(p, 16)[0]
                entries = EVIL.get(ino, (0, 0, None))[2] or []
                found = [e[1] for e in entries if e[0] == name]
                ino = found[0] if found else 0
            if ino not in EVIL:
                self.reply(h, failed(ENOENT, "no such entry"))
            elif EVIL[ino][2] is None:
                self.reply(h, ok(attr(ino) + layout()))
            else:
                self.reply(h, ok(attr(ino)))  # only looked up
        elif t in (CLOSE, CLOSE_MANY):
            self.reply(h, ok())
        elif t == LOCK:
            ino, _, _, kind, ltype, start, end, owner, pid = struct.unpack_from(
                "<QIIBBQQQI", p)
            print(f"LOCK ino={ino} kind={kind} type={ltype} owner={owner:#018x}",
                  flush=True)
            self.reply(h, ok())
        elif t == GETLK:
            self.reply(h, ok(struct.pack("<BQQIQ", 3, 0, 0, 0, 0)))
        elif t == SESSION_RENEW:
            self.reply(h, ok(struct.pack("<I", 30000)))
        elif t == SESSION_END:
            self.reply(h, ok())
        elif t == STATFS:
            self.reply(h, ok(capacity() + struct.pack("<QQ", 10, 1000)))
        elif t == LISTXATTR:
            self.reply(h, ok())
        else:
            self.reply(h, failed(E_UNKNOWN_MSG, "not served by the fake"))

    def chunk_read(self, h, p):
        mode = self.args.mode
        offset, length = struct.unpack_from("<QI", p, 20)
        with self.store["lock"]:
            data = bytes(self.store["data"][offset:offset + length])
        if mode == "good":
            self.reads.append((h, data))
            if len(self.reads) >= self.args.batch:
                for rh, rdata in reversed(self.reads):
                    self.reply(rh, ok(), rdata)
                self.reads = []
        elif mode == "oversize":
            self.reply(h, ok(), data + b"!")
        elif mode == "badmagic":
            self.reply(h, ok(), data, magic=0xdeadbeef)
        elif mode == "hugelen":
            self.reply(h, ok(), data, length=0xffffffff)
        elif mode == "wrongtype":
            self.send(PING, FLAG_REPLY, h[5], ok(struct.pack("<IH", 1, 3)))
        elif mode == "request":
            self.send(CHUNK_READ, 0, h[5], p)
        elif mode == "stall":
            payload = struct.pack("<I", len(data)) + ok() + data
            whole = self.sealed(HEADER.pack(MAGIC, VERSION, h[2], FLAG_REPLY | FLAG_BULK,
                                            len(payload), h[5], 0, 0, 0, 0) + payload, len(data))
            self.sock.sendall(whole[:len(whole) // 2])
            print("stalled", flush=True)
            threading.Event().wait()  # quiet for ever
        elif mode == "enoent":
            self.reply(h, failed(2, "no chunk here (fake)"))
        else:
            self.reply(h, ok(), data)


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
    if args.mode == "sink":
        # A small receive window: a sender blocks after a few KiB at once,
        # however large the buffers could grow.
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    srv.bind(("127.0.0.1", args.port))
    args.port = srv.getsockname()[1]  # the node map names it
    srv.listen(0 if args.mode == "deaf" else 16)
    # --port 0: the kernel picks a free port, and the log names it (no
    # window in which another process takes a port probed beforehand).
    print("listening on 127.0.0.1:%d" % args.port, flush=True)
    if args.mode == "deaf":
        threading.Event().wait()  # never accepts
    while True:
        sock, _ = srv.accept()
        threading.Thread(target=handle, args=(sock, args, store),
                         daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
