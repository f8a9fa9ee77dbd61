"""Hostile input to every daemon's port: random bytes, truncated frames,
1 GiB length prefixes (before and after authentication), malformed bodies.
Each daemon must stay up, keep serving, not grow its memory, and log the
dropped connections."""
import os
import random
import socket
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import pfswire  # noqa: E402
from cluster import Cluster, wait_for  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
ROUNDS = 40
RSS_GROWTH_LIMIT_KIB = 16 * 1024


def send_and_drain(port, data, half_close=True):
    """Sends data and reads until the server closes the connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except (ConnectionError, OSError):
        pass  # the server dropping us is the expected outcome
    finally:
        s.close()


class HostileInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        c = cls.c = Cluster(BIN_DIR)
        c.start_mgmtd()
        meta = c.start_server("meta", "m1")
        storage = c.start_server("storage", "s1", c.target_dirs("s1", 1))
        cls.ports = {"mgmtd": c.mgmtd_port, "m1": meta.port, "s1": storage.port}
        wait_for("both servers registered", lambda: len(c.ctl_json("node", "list")["nodes"]) == 2)
        # Registered is not serving: pfs-meta answers EAGAIN until its namespace is open.
        wait_for("the metadata server to answer", lambda: c.ctl("stat", "/", check=False).returncode == 0)
        cls.secret = pfswire.read_secret(c.secret)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def attack(self, name, port):
        rng = random.Random(1234)
        big = struct.pack("<IHHIIQIIQQ", pfswire.MAGIC, pfswire.VERSION, pfswire.MSG["PING"], 0, 1 << 30, 7, 0, 0, 0, 0)
        for _ in range(ROUNDS):
            send_and_drain(port, bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096))))
            send_and_drain(port, pfswire.header(pfswire.MSG["AUTH_RESPONSE"], 100, 1) + b"x" * 10)
            send_and_drain(port, big)
            # The same after a successful handshake.
            conn = pfswire.connect_authenticated(port, self.c.secret)
            conn.sock.sendall(big + b"y" * 1000)
            with self.assertRaises((ConnectionError, OSError)):
                conn.read_frame()
            conn.close()
            conn = pfswire.connect_authenticated(port, self.c.secret)
            conn.sock.sendall(pfswire.header(pfswire.MSG["GET_NODES"], 5000, 9) + b"z" * 100)
            conn.close()
            # Wrong magic after authentication.
            conn = pfswire.connect_authenticated(port, self.c.secret)
            conn.sock.sendall(b"\xde\xad\xbe\xef" + bytes(44))
            with self.assertRaises((ConnectionError, OSError)):
                conn.read_frame()
            conn.close()

    def test_every_daemon_survives(self):
        for name, port in self.ports.items():
            with self.subTest(daemon=name):
                d = self.c.daemons[name]
                # Warm the allocator with one normal exchange first.
                warm = pfswire.connect_authenticated(port, self.c.secret)
                warm.call(pfswire.MSG["PING"])
                warm.close()
                rss_before = d.rss_kib()
                self.attack(name, port)
                self.assertTrue(d.alive(), f"{name} died")
                conn = pfswire.connect_authenticated(port, self.c.secret)
                status, body = conn.call(pfswire.MSG["PING"])
                self.assertEqual(status, 0)
                # An unknown message type is answered, not fatal.
                status, _ = conn.call(4242)
                self.assertEqual(status, 1003)
                status, _ = conn.call(pfswire.MSG["PING"])
                self.assertEqual(status, 0)
                conn.close()
                growth = d.rss_kib() - rss_before
                self.assertLess(growth, RSS_GROWTH_LIMIT_KIB, f"{name} grew by {growth} KiB")
                log = d.log_text()
                self.assertIn("refusing connection", log)
                self.assertIn("dropping connection", log)
                self.assertIn("over the limit", log)

    def test_malformed_body_is_dropped(self):
        conn = pfswire.connect_authenticated(self.ports["mgmtd"], self.c.secret)
        # REGISTER_NODE with a string length running past the end.
        status, _ = conn.call(pfswire.MSG["REGISTER_NODE"], struct.pack("<IHH", 0, 3, 1) + b"\xff\xff" + b"a")
        self.assertEqual(status, 1000)
        with self.assertRaises((ConnectionError, OSError)):
            conn.read_frame()
        conn.close()
        self.assertTrue(self.c.daemons["mgmtd"].alive())

    def test_close_many_is_bounds_checked(self):
        bad = {"no entries": pfswire.close_many([]),
               "more than 64": pfswire.close_many(range(100, 165)),
               "count past the end": pfswire.close_many([100, 101], count=3),
               "bytes after the last": pfswire.close_many([100]) + b"\0"}
        for what, body in bad.items():
            with self.subTest(body=what):
                conn = pfswire.connect_authenticated(self.ports["m1"], self.c.secret)
                status, _ = conn.call(pfswire.MSG["CLOSE_MANY"], body)
                self.assertEqual(status, 1000)
                conn.close()
        # Well formed, but nothing of it is open: an error, and the
        # connection serves on.
        conn = pfswire.connect_authenticated(self.ports["m1"], self.c.secret)
        status, _ = conn.call(pfswire.MSG["CLOSE_MANY"], pfswire.close_many(range(100, 164)))
        self.assertNotEqual(status, 0)
        status, _ = conn.call(pfswire.MSG["PING"])
        self.assertEqual(status, 0)
        conn.close()
        self.assertTrue(self.c.daemons["m1"].alive())


if __name__ == "__main__":
    unittest.main(verbosity=2)
