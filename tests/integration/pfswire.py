"""A second, independent implementation of the PFS framing and handshake,
for tests: it speaks to the daemons the way a foreign peer would."""
import hashlib
import hmac
import os
import pathlib
import socket
import struct

HEADER = struct.Struct("<IHHIIQIIQQ")
MAGIC = 0x31534650
VERSION = 1
FLAG_REPLY, FLAG_NOTIFY = 1, 2
MSG = {"AUTH_CHALLENGE": 1, "AUTH_RESPONSE": 2, "PING": 3, "REGISTER_NODE": 100, "REGISTER_TARGET": 101,
       "HEARTBEAT": 102, "GET_NODES": 103, "GET_TARGETS": 104, "GET_POOLS": 105, "SUBSCRIBE": 109,
       "MAP_CHANGED": 110, "CHUNK_WRITE": 300, "CHUNK_READ": 301, "CHUNK_TRUNCATE": 302, "CHUNK_SYNC": 303,
       "CHUNK_UNLINK": 304, "CHUNK_STAT": 305, "CHUNK_UNLINK_MANY": 307, "CLOSE_MANY": 236}
E_PROTO, E_AUTH, E_UNKNOWN_TARGET = 1000, 1001, 1005
MAX_IO = 8 << 20  # bytes in one chunk read or write
CHUNK_REF = struct.Struct("<QIII")  # entry id (ino, owner node, generation), target id
CHUNK_STAT = struct.Struct("<QQ")   # size, allocated


def header(msg_type, payload_len, request_id=0, flags=0):
    return HEADER.pack(MAGIC, VERSION, msg_type, flags, payload_len, request_id, 0, 0, 0, 0)


def read_secret(path):
    data = pathlib.Path(path).read_bytes()
    if data.endswith(b"\r\n"):
        return data[:-2]
    return data[:-1] if data.endswith(b"\n") else data


class Conn:
    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.next_id = 1

    def close(self):
        self.sock.close()

    def recv_exact(self, n):
        buf = bytearray()  # appends in place: megabyte replies stay linear
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError("closed by peer")
            buf += chunk
        return bytes(buf)

    def read_frame(self):
        magic, version, msg_type, flags, length, request_id, *_ = HEADER.unpack(self.recv_exact(HEADER.size))
        assert magic == MAGIC and version == VERSION, "bad frame from server"
        return msg_type, flags, request_id, self.recv_exact(length)

    def send(self, msg_type, payload=b"", request_id=None, flags=0):
        if request_id is None:
            request_id, self.next_id = self.next_id, self.next_id + 1
        self.sock.sendall(header(msg_type, len(payload), request_id, flags) + payload)
        return request_id

    def authenticate(self, secret):
        """Returns the reply status of the handshake (0 = accepted)."""
        msg_type, _, _, server_nonce = self.read_frame()
        assert msg_type == MSG["AUTH_CHALLENGE"] and len(server_nonce) == 32
        client_nonce = os.urandom(32)
        mac = hmac.new(secret, b"pfs-auth-v1 client" + server_nonce + client_nonce, hashlib.sha256).digest()
        self.send(MSG["AUTH_RESPONSE"], client_nonce + mac)
        msg_type, flags, _, payload = self.read_frame()
        assert msg_type == MSG["AUTH_RESPONSE"] and flags & FLAG_REPLY
        status = struct.unpack_from("<i", payload)[0]
        if status == 0:
            expect = hmac.new(secret, b"pfs-auth-v1 server" + client_nonce + server_nonce, hashlib.sha256).digest()
            assert payload[4:] == expect, "server proof does not verify"
        return status

    def call(self, msg_type, payload=b""):
        """Returns (status, body) of the reply, skipping notifications."""
        request_id = self.send(msg_type, payload)
        while True:
            got_type, flags, got_id, body = self.read_frame()
            if flags & FLAG_NOTIFY:
                continue
            assert got_type == msg_type and got_id == request_id and flags & FLAG_REPLY
            return struct.unpack_from("<i", body)[0], body[4:]

    def replies(self, request_ids):
        """Reads the replies to request_ids in the order they come: {id: (status, body)}."""
        want, got = set(request_ids), {}
        while want:
            _, flags, got_id, body = self.read_frame()
            if flags & FLAG_NOTIFY:
                continue
            assert flags & FLAG_REPLY and got_id in want, f"unexpected reply {got_id}"
            want.discard(got_id)
            got[got_id] = struct.unpack_from("<i", body)[0], body[4:]
        return got

    def wait_notification(self):
        while True:
            msg_type, flags, _, body = self.read_frame()
            if flags & FLAG_NOTIFY:
                return msg_type, body


def chunk_ref(target, ino, owner=1, generation=0):
    return CHUNK_REF.pack(ino, owner, generation, target)


def chunk_unlink_many(target, inos, owner=1, generation=0, count=None):
    """A CHUNK_UNLINK_MANY body; count: what the header claims (default: len(inos))."""
    ids = b"".join(struct.pack("<QII", ino, owner, generation) for ino in inos)
    return struct.pack("<II", target, len(inos) if count is None else count) + ids


def close_many(inos, owner=1, generation=0, count=None):
    """A CLOSE_MANY body; count: what it claims (default: len(inos))."""
    ids = b"".join(struct.pack("<QII", ino, owner, generation) for ino in inos)
    return struct.pack("<I", len(inos) if count is None else count) + ids


def chunk_io(target, ino, offset, length, owner=1, generation=0):
    """A CHUNK_READ body; a CHUNK_WRITE's, when the data follows."""
    return chunk_ref(target, ino, owner, generation) + struct.pack("<QI", offset, length)


def chunk_truncate(target, ino, size, owner=1, generation=0):
    return chunk_ref(target, ino, owner, generation) + struct.pack("<Q", size)


def connect_authenticated(port, secret_path):
    c = Conn(port)
    status = c.authenticate(read_secret(secret_path))
    assert status == 0, f"handshake refused with status {status}"
    return c
