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
VERSION = 12
FLAG_REPLY, FLAG_NOTIFY, FLAG_GROUPS, FLAG_BULK, FLAG_ZERO_FILL = 1, 2, 4, 8, 16
BULK_INLINE = 0
MSG = {"AUTH_CHALLENGE": 1, "AUTH_RESPONSE": 2, "PING": 3, "GET_STATS": 4, "BIND_CLIENT": 5, "SYNC_ALL": 6,
       "REGISTER_NODE": 100, "REGISTER_TARGET": 101, "HEARTBEAT": 102, "GET_NODES": 103, "GET_TARGETS": 104,
       "GET_POOLS": 105, "CREATE_POOL": 106, "ASSIGN_POOL": 107, "SET_TARGET_STATE": 108, "SUBSCRIBE": 109,
       "MAP_CHANGED": 110, "LOOKUP": 200, "GETATTR": 201, "CREATE": 202, "MKDIR": 203, "UNLINK": 207,
       "SETATTR": 210, "OPEN": 212, "GETXATTR": 214, "SETXATTR": 215, "LOCK": 221, "GETLK": 222,
       "SESSION_RENEW": 223, "SESSION_END": 224, "MKDIR_DETACHED": 228, "RMDIR_DETACHED": 229,
       "ENTRY_CHECK": 230, "LIST_DETACHED": 231, "MOVE": 232, "REMOTE_LINK": 233, "ENTRY_DROP": 234,
       "CLOSE_MANY": 236, "CHUNK_WRITE": 300, "CHUNK_READ": 301, "CHUNK_TRUNCATE": 302, "CHUNK_SYNC": 303,
       "CHUNK_UNLINK": 304, "CHUNK_STAT": 305, "CHUNK_LIST": 306, "CHUNK_UNLINK_MANY": 307,
       "FALLOCATE": 237, "GET_LAYOUT": 238, "MKNOD": 239, "CHUNK_FALLOCATE": 308, "CHUNK_SEEK": 309, "CHUNK_COPY": 310}
FALLOC_KEEP_SIZE, FALLOC_PUNCH_HOLE, FALLOC_ZERO_RANGE = 0x01, 0x02, 0x10
SEEK_DATA, SEEK_HOLE = 3, 4
ROLES = {"client": 1, "admin": 2, "server": 3}
AUTH_FRAME_MAC = 1
AUTH_DATA_MAC = 2  # the MACs cover bulk data too
FRAME_MAC_LEN = 16
EPERM = 1
E_PROTO, E_AUTH, E_UNKNOWN_TARGET = 1000, 1001, 1005
MAX_IO = 8 << 20  # bytes in one chunk read or write
CHUNK_REF = struct.Struct("<QIII")  # entry id (ino, owner node, generation), target id
CHUNK_STAT = struct.Struct("<QQ")   # size, allocated
CHUNK_IO = struct.Struct("<QIIIQI")  # chunk ref, offset, length


def bulk_block(in_len, out_len, place=BULK_INLINE):
    """The block that opens a bulk request's payload (inline data: no segments)."""
    return struct.pack("<BII", place, in_len, out_len)


def header(msg_type, payload_len, request_id=0, flags=0, uid=0, gid=0, client_id=0):
    return HEADER.pack(MAGIC, VERSION, msg_type, flags, payload_len, request_id, uid, gid, client_id, 0)


def read_secret(path):
    data = pathlib.Path(path).read_bytes()
    if data.endswith(b"\r\n"):
        return data[:-2]
    return data[:-1] if data.endswith(b"\n") else data


def role_key(secret, role):
    """The key a role proves itself with: the cluster secret's derivation,
    or the key of a "pfs-key-v1 ROLE HEX" file's content."""
    if secret.startswith(b"pfs-key-v1 "):
        _, file_role, hexkey = secret.decode().split(" ")
        assert file_role == role, f"a {file_role} key cannot prove {role}"
        return bytes.fromhex(hexkey)
    return hmac.new(secret, b"pfs-role-v1 " + role.encode(), hashlib.sha256).digest()


def client_id_of(token):
    return struct.unpack("<Q", hashlib.sha256(b"pfs-client-id-v1" + token).digest()[:8])[0] or 1


class Conn:
    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.next_id = 1
        self.session = None  # the session key once frames carry MACs
        self.data_mac = False  # they cover bulk data too
        self.tx_seq = self.rx_seq = 0

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

    def frame_mac(self, direction, seq, raw):
        return hmac.new(self.session, direction + struct.pack("<Q", seq) + raw, hashlib.sha256).digest()[:FRAME_MAC_LEN]

    def read_frame(self):
        """A frame's type, flags, request id and payload; a bulk reply's payload
        as status, body and data, its count of data bytes taken off."""
        raw_header = self.recv_exact(HEADER.size)
        magic, version, msg_type, flags, length, request_id, *_ = HEADER.unpack(raw_header)
        assert magic == MAGIC and version == VERSION, "bad frame from server"
        payload = self.recv_exact(length)
        if self.session:
            tag = self.recv_exact(FRAME_MAC_LEN)
            covered = len(payload)
            if flags & FLAG_BULK and flags & FLAG_REPLY and not self.data_mac:
                covered -= min(struct.unpack_from("<I", payload)[0], len(payload) - 4)
            assert hmac.compare_digest(tag, self.frame_mac(b"S", self.rx_seq, raw_header + payload[:covered])), \
                "bad frame MAC"
            self.rx_seq += 1
        if flags & FLAG_BULK and flags & FLAG_REPLY:
            count = struct.unpack_from("<I", payload)[0]
            assert count <= len(payload) - 4, "bulk reply count past its frame"
            payload = payload[4:]
        return msg_type, flags, request_id, payload

    def frame(self, msg_type, payload=b"", request_id=0, flags=0, client_id=0, uid=0, gid=0, tamper=False,
              data_len=0):
        """The bytes of one frame as this connection sends it (its MAC too,
        over all but the data_len bytes of bulk data it ends with unless
        the MACs cover data)."""
        raw = header(msg_type, len(payload), request_id, flags, uid, gid, client_id) + payload
        if self.session:
            tag = self.frame_mac(b"C", self.tx_seq, raw if self.data_mac else raw[:len(raw) - data_len])
            self.tx_seq += 1
            if tamper:
                tag = bytes([tag[0] ^ 1]) + tag[1:]
            raw += tag
        return raw

    def send(self, msg_type, payload=b"", request_id=None, flags=0, client_id=0, uid=0, gid=0, bulk=None):
        """bulk: (data, out_len) sent as bulk data beside the payload. CHUNK_WRITE
        and CHUNK_READ go as clients send them unless bulk is False: a write's
        data after its pfs_chunk_io and a read's length become its bulk block."""
        if request_id is None:
            request_id, self.next_id = self.next_id, self.next_id + 1
        if bulk is None and msg_type == MSG["CHUNK_WRITE"] and len(payload) >= CHUNK_IO.size:
            bulk = (payload[CHUNK_IO.size:], 0)
            payload = payload[:CHUNK_IO.size]
        elif bulk is None and msg_type == MSG["CHUNK_READ"] and len(payload) >= CHUNK_IO.size:
            bulk = (b"", CHUNK_IO.unpack_from(payload)[-1])
        data_len = 0
        if bulk:
            data, out_len = bulk
            payload = bulk_block(len(data), out_len) + payload + data
            flags |= FLAG_BULK
            data_len = len(data)
        self.sock.sendall(self.frame(msg_type, payload, request_id, flags, client_id, uid, gid, data_len=data_len))
        return request_id

    def authenticate(self, secret, role="client", want_mac=False, want_data_mac=False):
        """Returns the reply status of the handshake (0 = accepted); with
        frame MACs on (asked for, or required by the server) later frames
        carry them; want_data_mac: over bulk data too."""
        key = role_key(secret, role)
        msg_type, _, _, server_nonce = self.read_frame()
        assert msg_type == MSG["AUTH_CHALLENGE"] and len(server_nonce) == 32
        client_nonce = os.urandom(32)
        flags = (AUTH_FRAME_MAC if want_mac else 0) | (AUTH_FRAME_MAC | AUTH_DATA_MAC if want_data_mac else 0)
        tail = bytes([ROLES[role], flags])
        mac = hmac.new(key, b"pfs-auth-v2 client" + server_nonce + client_nonce + tail, hashlib.sha256).digest()
        self.send(MSG["AUTH_RESPONSE"], client_nonce + mac + tail)
        msg_type, reply_flags, _, payload = self.read_frame()
        assert msg_type == MSG["AUTH_RESPONSE"] and reply_flags & FLAG_REPLY
        status = struct.unpack_from("<i", payload)[0]
        if status == 0:
            proof, final = payload[4:36], payload[36]
            expect = hmac.new(key, b"pfs-auth-v2 server" + client_nonce + server_nonce + bytes([ROLES[role], final]),
                              hashlib.sha256).digest()
            assert proof == expect, "server proof does not verify"
            if final & AUTH_FRAME_MAC:
                self.session = hmac.new(key, b"pfs-session-v2" + server_nonce + client_nonce, hashlib.sha256).digest()
                self.data_mac = bool(final & AUTH_DATA_MAC)
        return status

    def bind(self, token):
        """BIND_CLIENT: the connection acts for the token's client id."""
        status, body = self.call(MSG["BIND_CLIENT"], token)
        assert status == 0, f"BIND_CLIENT refused: {status}"
        return struct.unpack("<Q", body)[0]

    def call(self, msg_type, payload=b"", client_id=0, uid=0, gid=0, bulk=None, flags=0):
        """Returns (status, body) of the reply, skipping notifications (a bulk
        reply's body is followed by its data)."""
        request_id = self.send(msg_type, payload, flags=flags, client_id=client_id, uid=uid, gid=gid, bulk=bulk)
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
    """A CHUNK_READ body; a CHUNK_WRITE's, when the data follows (Conn.send
    moves it beside the body)."""
    return chunk_ref(target, ino, owner, generation) + struct.pack("<QI", offset, length)


def chunk_truncate(target, ino, size, owner=1, generation=0):
    return chunk_ref(target, ino, owner, generation) + struct.pack("<Q", size)


def chunk_falloc(target, ino, mode, offset, length, owner=1, generation=0):
    return chunk_ref(target, ino, owner, generation) + struct.pack("<IQQ", mode, offset, length)


def chunk_seek(target, ino, offset, what, owner=1, generation=0):
    return chunk_ref(target, ino, owner, generation) + struct.pack("<QB", offset, what)


def connect_authenticated(port, secret_path, role="client", want_mac=False, want_data_mac=False):
    c = Conn(port)
    status = c.authenticate(read_secret(secret_path), role, want_mac, want_data_mac)
    assert status == 0, f"handshake refused with status {status}"
    return c
