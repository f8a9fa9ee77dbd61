"""A hostile peer that holds a key (the client key, or even the cluster
secret) against real daemons: what its role may not send is refused, it
cannot act for another client's id, frames changed on the way are caught,
and floods of idle handshakes or claimed payloads neither lock out other
clients nor grow a server past its configured budget."""
import json
import os
import resource
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import pfswire  # noqa: E402
from cluster import Cluster, LogsOnFailure, wait_for  # noqa: E402
from pfswire import MSG  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
EAGAIN = 11
LOCK_POSIX, LOCK_WRITE = 2, 2
STORAGE_BUDGET_MIB = 64


def entry_id(e):
    return struct.pack("<QII", e["ino"], e["owner_node"], e["generation"])


def setattr_req(eid, mode=None, uid=None, gid=None, size=None):
    valid, m, u, g, sz = 0, 0, 0, 0, 0
    if mode is not None:
        valid, m = valid | 1, mode
    if uid is not None:
        valid, u = valid | 2, uid
    if gid is not None:
        valid, g = valid | 4, gid
    if size is not None:
        valid, sz = valid | 8, size
    return eid + struct.pack("<IIIIQqIqI", valid, m, u, g, sz, 0, 0, 0, 0)


def name_req(dir_eid, name):
    return dir_eid + struct.pack("<H", len(name)) + name.encode()


def create_req(dir_eid, name, mode=0o644, flags=1):
    return name_req(dir_eid, name) + struct.pack("<II", mode, flags)


def lock_req(eid, owner, kind=LOCK_POSIX, type_=LOCK_WRITE, start=0, end=(1 << 64) - 1, pid=1):
    return eid + struct.pack("<BBQQQI", kind, type_, start, end, owner, pid)


class Hostile(LogsOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        c = cls.c = Cluster(BIN_DIR)
        c.start_mgmtd()
        cls.meta = c.start_server("meta", "m1")
        cls.storage = c.start_server("storage", "s1", c.target_dirs("s1", 2),
                                     extra=["--request-memory-mib", str(STORAGE_BUDGET_MIB),
                                            "--frame-timeout-ms", "3000"])
        wait_for("servers registered", lambda: len(c.ctl_json("node", "list")["nodes"]) == 2)
        wait_for("pfs-meta serving", lambda: c.ctl("ls", "/", check=False).returncode == 0)
        cls.client_key = os.path.join(c.dir, "client.key")
        c.write_secret(cls.client_key, c.ctl("auth", "key", "client").stdout.strip())
        src = os.path.join(c.dir, "data")
        with open(src, "wb") as f:
            f.write(os.urandom(4096))
        c.ctl("cp", src, "pfs:/victim")
        cls.victim = json.loads(c.ctl("stat", "/victim", "--json").stdout)["entry_id"]

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def client(self, port, key=None):
        return pfswire.connect_authenticated(port, key or self.client_key, "client")

    def target_states(self):
        return {t["target_id"]: t["consistency"] for t in self.c.ctl_json("target", "list", "--state")["targets"]}

    def test_a_client_key_proves_the_client_role_only(self):
        secret = pfswire.read_secret(self.client_key)
        for role in ("admin", "server"):
            with self.subTest(role=role):
                conn = pfswire.Conn(self.c.mgmtd_port)
                # The key file names its role: claim another with its bytes.
                forged = "pfs-key-v1 " + role + " " + secret.decode().split(" ")[2]
                self.assertEqual(conn.authenticate(forged.encode(), role), pfswire.E_AUTH)
                conn.close()
        # pfs-ctl with the client key reads the map but cannot change it.
        nodes = self.c.ctl("node", "list", "--json", secret=self.client_key)
        self.assertEqual(len(json.loads(nodes.stdout)["nodes"]), 2)
        r = self.c.ctl("target", "set-state", "1", "bad", secret=self.client_key, check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("SET_TARGET_STATE is not allowed for the client role", r.stderr)
        self.assertEqual(self.c.ctl("auth", "key", "client", secret=self.client_key, check=False).returncode, 1)

    def test_what_a_client_may_not_send_is_refused(self):
        before = self.target_states()
        mgmtd = self.client(self.c.mgmtd_port)
        refused = {"SET_TARGET_STATE": struct.pack("<IB", 1, 2),
                   "CREATE_POOL": struct.pack("<I", 0) + struct.pack("<H", 4) + b"evil",
                   "HEARTBEAT": struct.pack("<II", 1, 0),
                   "REGISTER_TARGET": struct.pack("<II", 1, 0) + struct.pack("<H", 4) + b"/evi"}
        for msg, body in refused.items():
            with self.subTest(msg=msg):
                status, text = mgmtd.call(MSG[msg], body)
                self.assertEqual(status, pfswire.EPERM, text)
        # Registering as a storage server would draw other clients' data.
        node = (struct.pack("<IHH", 0, 3, 9999) + struct.pack("<H", 4) + b"evil" + struct.pack("<H", 9) + b"127.0.0.1"
                + b"\0")  # no more addresses
        status, text = mgmtd.call(MSG["REGISTER_NODE"], node)
        self.assertEqual(status, pfswire.EPERM, text)
        mgmtd.close()
        self.assertEqual(self.target_states(), before)
        self.assertEqual(len(self.c.ctl_json("node", "list")["nodes"]), 2)

        meta = self.client(self.meta.port)
        eid = entry_id(self.victim)
        server_only = {"MKDIR_DETACHED": eid + struct.pack("<IIIIII", 0o755, 0, 0, 1 << 19, 1, 1),
                       "RMDIR_DETACHED": eid + struct.pack("<B", 2),
                       "MOVE": eid * 3 + struct.pack("<B", 1),
                       "ENTRY_DROP": eid}
        for msg, body in server_only.items():
            with self.subTest(msg=msg):
                status, text = meta.call(MSG[msg], body)
                self.assertEqual(status, pfswire.EPERM, text)
                self.assertIn(b"is not allowed for the client role", text)
        status, _ = meta.call(MSG["GETATTR"], eid)  # the connection serves on
        self.assertEqual(status, 0)
        meta.close()
        self.assertEqual(self.c.ctl("stat", "/victim").returncode, 0)

    def test_sync_all_is_answered_by_every_server_and_a_payload_on_it_refused(self):
        for port in (self.meta.port, self.storage.port):
            conn = self.client(port)
            for _ in range(3):
                self.assertEqual(conn.call(MSG["SYNC_ALL"])[0], 0)
            self.assertEqual(conn.call(MSG["SYNC_ALL"], b"\0\0\0\0")[0], 1000)  # PFS_E_PROTO
            conn.close()
        for server in (self.meta, self.storage):
            self.assertTrue(server.alive(), f"{server.name} died")

    def test_the_server_checks_permissions_whatever_the_client_says(self):
        meta = self.client(self.meta.port)
        root = self.c.ctl_json("stat", "/")["entry_id"]
        # Root (trusted loopback) makes a file and gives it to uid 1000.
        status, body = meta.call(MSG["CREATE"], create_req(entry_id(root), "owned", 0o644))
        self.assertEqual(status, 0, body)
        owned = json.loads(self.c.ctl("stat", "/owned", "--json").stdout)["entry_id"]
        eid = entry_id(owned)
        self.assertEqual(meta.call(MSG["SETATTR"], setattr_req(eid, uid=1000, gid=1000))[0], 0)
        # Another user claims the file for root, set-user-ID: refused.
        for hostile in (setattr_req(eid, uid=0, mode=0o4755), setattr_req(eid, mode=0o4777),
                        setattr_req(eid, uid=2000)):
            status, text = meta.call(MSG["SETATTR"], hostile, uid=2000, gid=2000)
            self.assertEqual(status, pfswire.EPERM, text)
        status, text = meta.call(MSG["SETATTR"], setattr_req(eid, size=0), uid=2000, gid=2000)
        self.assertEqual(status, 13, text)  # EACCES: no write permission
        # Not even the owner gives it away.
        status, _ = meta.call(MSG["SETATTR"], setattr_req(eid, uid=0), uid=1000, gid=1000)
        self.assertEqual(status, pfswire.EPERM)
        # Names: a user who may not write the directory creates nothing there.
        status, _ = meta.call(MSG["CREATE"], create_req(entry_id(root), "intruder"), uid=2000, gid=2000)
        self.assertEqual(status, 13)
        status, _ = meta.call(MSG["UNLINK"], name_req(entry_id(root), "owned"), uid=1000, gid=1000)
        self.assertEqual(status, 13)
        st = json.loads(self.c.ctl("stat", "/owned", "--json").stdout)
        self.assertEqual((st["uid"], st["mode"] & 0o7777), (1000, 0o644))
        # trusted.* xattrs are root's.
        xattr = eid + struct.pack("<H", 9) + b"trusted.x" + struct.pack("<I", 0) + b"v"
        status, _ = meta.call(MSG["SETXATTR"], xattr, uid=1000, gid=1000)
        self.assertEqual(status, pfswire.EPERM)
        meta.close()

    def test_nobody_acts_for_another_client_id(self):
        eid = entry_id(self.victim)
        a, b = self.client(self.meta.port), self.client(self.meta.port)
        token_a, token_b = os.urandom(32), os.urandom(32)
        id_a, id_b = a.bind(token_a), b.bind(token_b)
        self.assertEqual(id_a, pfswire.client_id_of(token_a))
        status, _ = a.call(MSG["LOCK"], lock_req(eid, owner=1), client_id=id_a)
        self.assertEqual(status, 0)
        # GETLK tells b who holds the lock...
        status, body = b.call(MSG["GETLK"], lock_req(eid, owner=2), client_id=id_b)
        self.assertEqual(status, 0)
        holder = struct.unpack_from("<Q", body, len(body) - 8)[0]
        self.assertEqual(holder, id_a)
        # ... but b cannot end a's session, take its locks or act as it.
        for msg, body in {"SESSION_END": b"", "LOCK": lock_req(eid, owner=1, type_=3)}.items():
            with self.subTest(msg=msg):
                status, text = b.call(MSG[msg], body, client_id=holder)
                self.assertEqual(status, pfswire.EPERM, text)
                self.assertIn(b"not bound to this connection", text)
        # Nor can a connection that guessed a token: the id is its hash.
        status, _ = b.call(MSG["SESSION_END"], client_id=pfswire.client_id_of(os.urandom(32)))
        self.assertEqual(status, pfswire.EPERM)
        status, _ = b.call(MSG["LOCK"], lock_req(eid, owner=2), client_id=id_b)
        self.assertEqual(status, EAGAIN)  # a still holds it
        # a's own second connection binds the same token and may end it.
        a2 = self.client(self.meta.port)
        self.assertEqual(a2.bind(token_a), id_a)
        status, _ = a2.call(MSG["SESSION_END"], client_id=id_a)
        self.assertEqual(status, 0)
        status, _ = b.call(MSG["LOCK"], lock_req(eid, owner=2), client_id=id_b)
        self.assertEqual(status, 0)
        status, _ = b.call(MSG["SESSION_END"], client_id=id_b)
        for c in (a, a2, b):
            c.close()

    def test_a_frame_changed_on_the_way_is_caught(self):
        # pfs-meta requires frame MACs, asked for or not.
        conn = self.client(self.meta.port)
        self.assertIsNotNone(conn.session)
        eid = entry_id(self.victim)
        self.assertEqual(conn.call(MSG["GETATTR"], eid)[0], 0)
        conn.sock.sendall(conn.frame(MSG["GETATTR"], eid, request_id=77, tamper=True))
        with self.assertRaises((ConnectionError, OSError)):
            conn.read_frame()
        conn.close()
        # A payload changed after sealing: the same.
        conn = self.client(self.meta.port)
        raw = bytearray(conn.frame(MSG["GETATTR"], eid, request_id=78))
        raw[pfswire.HEADER.size] ^= 1
        conn.sock.sendall(bytes(raw))
        with self.assertRaises((ConnectionError, OSError)):
            conn.read_frame()
        conn.close()
        # A frame replayed (its sequence number is the previous one's).
        conn = self.client(self.meta.port)
        first = conn.frame(MSG["GETATTR"], eid, request_id=79)
        conn.sock.sendall(first)
        self.assertEqual(conn.read_frame()[2], 79)
        conn.sock.sendall(first)
        with self.assertRaises((ConnectionError, OSError)):
            conn.read_frame()
        conn.close()
        wait_for("the MAC failures logged", lambda: self.meta.log_text().count("frame MAC does not verify") >= 3)
        # Storage traffic carries MACs only when the client asks.
        data = self.client(self.storage.port)
        self.assertIsNone(data.session)
        data.close()
        data = pfswire.connect_authenticated(self.storage.port, self.client_key, "client", want_mac=True)
        self.assertIsNotNone(data.session)
        self.assertEqual(data.call(MSG["PING"])[0], 0)
        data.close()

    def test_macs_cover_file_data_when_asked(self):
        data = os.urandom(4096)
        io = pfswire.chunk_io(1, 4244, 0, len(data))

        def write_frame(conn, request_id):
            return bytearray(conn.frame(MSG["CHUNK_WRITE"], pfswire.bulk_block(len(data), 0) + io + data, request_id,
                                        pfswire.FLAG_BULK, data_len=len(data)))

        # Asked for, the MACs cover a write's data: one byte of it changed
        # on the way drops the connection.
        conn = pfswire.connect_authenticated(self.storage.port, self.client_key, "client", want_data_mac=True)
        self.assertTrue(conn.data_mac)
        self.assertEqual(conn.call(MSG["CHUNK_WRITE"], io + data)[0], 0)
        raw = write_frame(conn, 90)
        raw[-pfswire.FRAME_MAC_LEN - 1] ^= 1
        conn.sock.sendall(bytes(raw))
        with self.assertRaises((ConnectionError, OSError)):
            conn.read_frame()
        conn.close()
        # Frame MACs alone cover what RDMA carries in frames: a write sealed
        # without its data goes through, one whose body changed does not.
        conn = pfswire.connect_authenticated(self.storage.port, self.client_key, "client", want_mac=True)
        self.assertIsNotNone(conn.session)
        self.assertFalse(conn.data_mac)
        status, body = conn.call(MSG["CHUNK_WRITE"], io + data)
        self.assertEqual((status, struct.unpack_from("<I", body)[0]), (0, len(data)))
        raw = write_frame(conn, 91)
        raw[pfswire.HEADER.size + len(pfswire.bulk_block(0, 0))] ^= 1  # the chunk's target id
        conn.sock.sendall(bytes(raw))
        with self.assertRaises((ConnectionError, OSError)):
            conn.read_frame()
        conn.close()
        wait_for("the MAC failures logged", lambda: self.storage.log_text().count("frame MAC does not verify") >= 2)

    def test_idle_handshakes_do_not_lock_anyone_out(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 20000), hard))
        idle = []
        try:
            for _ in range(5000):
                try:
                    s = socket.socket()
                    s.setblocking(False)
                    s.connect_ex(("127.0.0.1", self.c.mgmtd_port))
                    idle.append(s)
                except OSError:
                    break
            self.assertGreaterEqual(len(idle), 4000)
            started = time.monotonic()
            nodes = self.c.ctl_json("node", "list")["nodes"]
            self.assertEqual(len(nodes), 2)
            self.assertLess(time.monotonic() - started, 10)
            for _ in range(3):  # heartbeats go on: the servers stay ONLINE
                states = self.c.ctl_json("target", "list", "--state")["targets"]
                self.assertTrue(all(t["reachability"] == "ONLINE" for t in states), states)
        finally:
            for s in idle:
                s.close()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        self.assertIn("unauthenticated connections", self.c.daemons["mgmtd"].log_text())

    def test_claimed_payloads_are_bounded_by_the_budget(self):
        storage = self.c.daemons["s1"]
        rss_before = storage.rss_kib()
        conns = []
        claim = 16 << 20
        io = pfswire.chunk_io(1, 4242, 0, claim - 32)
        try:
            for i in range(500):
                c = self.client(self.storage.port)
                raw = pfswire.header(MSG["CHUNK_WRITE"], claim, request_id=1 + i) + io + b"x" * 100
                c.sock.sendall(raw)  # then trickles nothing more
                conns.append(c)
            growth = storage.rss_kib() - rss_before
            self.assertLess(growth, (STORAGE_BUDGET_MIB + 32) * 1024, f"grew by {growth} KiB")
            # The claims time out (frame timeout 3 s, waiting for memory
            # included): the server drops every one of them...
            for c in conns:
                c.sock.settimeout(30)
                with self.assertRaises((ConnectionError, OSError)):
                    c.read_frame()
            # ... and a real write goes through.
            good = self.client(self.storage.port)
            data = os.urandom(1 << 20)
            status, body = good.call(MSG["CHUNK_WRITE"], pfswire.chunk_io(1, 4243, 0, len(data)) + data)
            self.assertEqual((status, struct.unpack_from("<I", body)[0]), (0, len(data)))
            good.close()
        finally:
            for c in conns:
                c.close()
        self.assertTrue(storage.alive())
        self.assertLess(storage.rss_kib() - rss_before, (STORAGE_BUDGET_MIB + 32) * 1024)
        self.assertIn("frame payload not received within", storage.log_text())


class RootSquash(unittest.TestCase):
    """A client outside the trusted networks: its root is nobody."""

    @classmethod
    def setUpClass(cls):
        c = cls.c = Cluster(BIN_DIR)
        c.start_mgmtd()
        cls.meta = c.start_server("meta", "m1", extra=["--trusted-clients", "127.0.0.2"])
        c.start_server("storage", "s1", c.target_dirs("s1", 1))
        wait_for("servers registered", lambda: len(c.ctl_json("node", "list")["nodes"]) == 2)
        wait_for("pfs-meta serving", lambda: c.ctl("ls", "/", check=False).returncode == 0)
        c.ctl("mkdir", "/shared")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_root_of_an_untrusted_client_is_nobody(self):
        conn = pfswire.connect_authenticated(self.meta.port, self.c.secret, "client")
        root = entry_id(self.c.ctl_json("stat", "/")["entry_id"])
        status, _ = conn.call(MSG["CREATE"], create_req(root, "as-root"), uid=0, gid=0)
        self.assertEqual(status, 13)  # EACCES: / is root's, 0755
        shared = entry_id(self.c.ctl_json("stat", "/shared")["entry_id"])
        status, _ = conn.call(MSG["SETATTR"], setattr_req(shared, mode=0o777), uid=0, gid=0)
        self.assertEqual(status, pfswire.EPERM)
        # pfs-ctl (the admin role) is not squashed: it opens the directory up.
        self.c.ctl("mkdir", "/shared/open")
        conn2 = pfswire.connect_authenticated(self.meta.port, self.c.secret, "admin")
        opened = entry_id(self.c.ctl_json("stat", "/shared/open")["entry_id"])
        self.assertEqual(conn2.call(MSG["SETATTR"], setattr_req(opened, mode=0o777))[0], 0)
        conn2.close()
        # Squashed root creates there, as nobody.
        status, body = conn.call(MSG["CREATE"], create_req(opened, "made"), uid=0, gid=0)
        self.assertEqual(status, 0, body)
        st = self.c.ctl_json("stat", "/shared/open/made")
        self.assertEqual((st["uid"], st["gid"]), (65534, 65534))
        conn.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
