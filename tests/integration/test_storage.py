"""The storage server over the wire: chunk writes and reads (byte-exact, sparse
beyond 4 GiB), truncate, stat, sync, idempotent unlink (one or many), unknown targets,
oversized and malformed writes, 64 pipelined requests on one connection,
the on-disk layout, a full disk, and CHUNK_FALLOCATE (punch) with CHUNK_SEEK."""
import os
import random
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import pfswire  # noqa: E402
from cluster import Cluster, LogsOnFailure, wait_for  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
MSG = pfswire.MSG
BEYOND_4G = (5 << 30) + 7
ENOSPC = 28
M64 = (1 << 64) - 1


def mix64(x):
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def chunk_file(target_dir, ino, owner=1, generation=0):
    """Where a chunk lives on disk: a second implementation of the layout."""
    fanout = mix64(ino ^ mix64((owner << 32) | generation)) >> 56
    return os.path.join(target_dir, "chunks", f"{fanout:02x}", f"{ino:x}-{owner:x}-{generation:x}")


class StorageServer(LogsOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        c = cls.c = Cluster(BIN_DIR)
        cls.rng = random.Random(4711)
        cls.next_ino = 1000
        try:
            c.start_mgmtd()
            cls.dirs = c.target_dirs("s1", 2)
            cls.server = c.start_server("storage", "s1", cls.dirs)
            targets = wait_for("both targets registered", lambda: (lambda t: len(t) == 2 and t)(
                c.ctl_json("target", "list")["targets"]))
            by_path = {os.path.normpath(t["path"]): t["target_id"] for t in targets}
            cls.targets = [by_path[os.path.normpath(d)] for d in cls.dirs]
            cls.conn = cls.connect()
            # The server learns its target ids from mgmtd's replies: wait until it knows both.
            wait_for("the server to serve both targets", lambda: all(
                cls.conn.call(MSG["CHUNK_STAT"], pfswire.chunk_ref(t, 1))[0] == 0 for t in cls.targets))
        except Exception:
            c.dump_logs()
            c.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.conn.close()
        cls.c.close()

    @classmethod
    def connect(cls, role="server"):
        """The chunk protocol as pfs-meta speaks it (server role), unless role says otherwise."""
        return pfswire.connect_authenticated(cls.server.port, cls.c.secret, role)

    def ino(self):
        StorageServer.next_ino += 1
        return StorageServer.next_ino

    def data(self, n):
        return self.rng.randbytes(n)

    def ok(self, msg, payload, conn=None):
        status, body = (conn or self.conn).call(MSG[msg], payload)
        self.assertEqual(status, 0, f"{msg} failed with status {status}: {body!r}")
        return body

    def write(self, target, ino, offset, data, conn=None):
        body = self.ok("CHUNK_WRITE", pfswire.chunk_io(target, ino, offset, len(data)) + data, conn)
        self.assertEqual(struct.unpack_from("<I", body)[0], len(data))

    def read(self, target, ino, offset, length):
        return self.ok("CHUNK_READ", pfswire.chunk_io(target, ino, offset, length))

    def stat(self, target, ino):
        return pfswire.CHUNK_STAT.unpack(self.ok("CHUNK_STAT", pfswire.chunk_ref(target, ino)))

    def assert_dropped(self, conn):
        """The server answered PFS_E_PROTO (or nothing) and closed the connection."""
        try:
            _, flags, _, body = conn.read_frame()
            self.assertEqual(struct.unpack_from("<i", body)[0], pfswire.E_PROTO)
            conn.read_frame()
            self.fail("connection still open after a malformed request")
        except (ConnectionError, OSError):
            pass
        conn.close()
        self.assertTrue(self.server.alive())
        fresh = self.connect()
        self.assertEqual(fresh.call(MSG["PING"])[0], 0, "server no longer serves")
        fresh.close()

    def test_round_trip(self):
        sizes = [0, 1, 4095, 1 << 20, pfswire.MAX_IO]
        for i, size in enumerate(sizes):
            for offset in (0, 3 * 4096 + 5, BEYOND_4G):
                with self.subTest(size=size, offset=offset):
                    target, ino, data = self.targets[i % 2], self.ino(), self.data(size)
                    self.write(target, ino, offset, data)
                    self.assertEqual(self.read(target, ino, offset, size), data)
                    # More than is there: short at the end of the chunk.
                    self.assertEqual(self.read(target, ino, offset, min(size + 100, pfswire.MAX_IO)), data)
                    if size:
                        path = chunk_file(self.dirs[i % 2], ino)
                        self.assertEqual(os.path.getsize(path), offset + size)
                        with open(path, "rb") as f:
                            f.seek(offset)
                            self.assertEqual(f.read(), data)

    def test_zero_fill_reads_the_whole_length(self):
        """PFS_FLAG_ZERO_FILL (reads into GPU memory, which the client's CPU
        cannot zero): a hole, the end of a chunk and a chunk never written
        come back as zeros instead of short."""
        t, ino, data = self.targets[0], self.ino(), self.data(1000)
        self.write(t, ino, 4096, data)
        self.assertEqual(self.read(t, ino, 0, 8192), bytes(4096) + data)  # short without the flag
        for target, chunk, length, want in ((t, ino, 8192, bytes(4096) + data + bytes(8192 - 5096)),
                                            (t, self.ino(), 4096, bytes(4096))):
            status, body = self.conn.call(MSG["CHUNK_READ"], pfswire.chunk_io(target, chunk, 0, length),
                                          flags=pfswire.FLAG_ZERO_FILL)
            self.assertEqual(status, 0)
            self.assertEqual(body, want)

    def test_never_written_chunk_is_empty(self):
        ino = self.ino()
        self.assertEqual(self.read(self.targets[0], ino, 0, 4096), b"")
        self.assertEqual(self.stat(self.targets[0], ino), (0, 0))
        self.assertFalse(os.path.exists(chunk_file(self.dirs[0], ino)))

    def test_truncate_and_stat(self):
        t, ino, data = self.targets[1], self.ino(), self.data(1 << 20)
        self.write(t, ino, 0, data)
        size, allocated = self.stat(t, ino)
        self.assertEqual(size, len(data))
        self.assertGreaterEqual(allocated, len(data) // 2)
        self.ok("CHUNK_TRUNCATE", pfswire.chunk_truncate(t, ino, 10 << 30))  # past the end: nothing to cut
        self.assertEqual(self.stat(t, ino)[0], len(data))
        self.ok("CHUNK_TRUNCATE", pfswire.chunk_truncate(t, ino, 100))  # down
        self.assertEqual(self.read(t, ino, 0, 4096), data[:100])
        self.assertEqual(self.stat(t, ino)[0], 100)
        # A chunk that does not exist: nothing to cut, nothing created.
        missing = self.ino()
        self.ok("CHUNK_TRUNCATE", pfswire.chunk_truncate(t, missing, 0))
        self.ok("CHUNK_TRUNCATE", pfswire.chunk_truncate(t, missing, BEYOND_4G))
        self.assertFalse(os.path.exists(chunk_file(self.dirs[1], missing)))

    def test_a_client_cannot_cut_or_delete_chunks(self):
        t, ino, data = self.targets[0], self.ino(), self.data(1 << 20)
        self.write(t, ino, 0, data)
        client = self.connect("client")
        try:
            refused = {"CHUNK_UNLINK_MANY": pfswire.chunk_unlink_many(t, [ino]),
                       "CHUNK_UNLINK": pfswire.chunk_ref(t, ino),
                       "CHUNK_TRUNCATE": pfswire.chunk_truncate(t, ino, 0),
                       "CHUNK_LIST": struct.pack("<IIQI", t, 0, 0, 16),
                       "CHUNK_FALLOCATE": pfswire.chunk_falloc(t, ino, pfswire.FALLOC_PUNCH_HOLE |
                                                               pfswire.FALLOC_KEEP_SIZE, 0, len(data))}
            for msg, body in refused.items():
                with self.subTest(msg=msg):
                    status, text = client.call(MSG[msg], body)
                    self.assertEqual(status, pfswire.EPERM, text)
                    self.assertIn(b"is not allowed for the client role", text)
            # The connection serves on, reads and writes as before; the data is all there.
            status, body = client.call(MSG["CHUNK_READ"], pfswire.chunk_io(t, ino, 0, len(data)))
            self.assertEqual((status, body), (0, data))
        finally:
            client.close()
        self.assertEqual(self.stat(t, ino)[0], len(data))

    def test_punch_and_seek(self):
        t, ino, data = self.targets[0], self.ino(), self.data(1 << 20)
        self.write(t, ino, 0, data)
        punch = pfswire.FALLOC_PUNCH_HOLE | pfswire.FALLOC_KEEP_SIZE
        self.ok("CHUNK_FALLOCATE", pfswire.chunk_falloc(t, ino, punch, 256 << 10, 512 << 10))
        self.assertEqual(self.read(t, ino, 0, len(data)),
                         data[:256 << 10] + bytes(512 << 10) + data[768 << 10:])
        self.assertEqual(self.stat(t, ino)[0], len(data))
        seek = lambda off, what: struct.unpack("<BQ", self.ok("CHUNK_SEEK", pfswire.chunk_seek(t, ino, off, what)))
        self.assertEqual(seek(0, pfswire.SEEK_HOLE), (1, 256 << 10))
        self.assertEqual(seek(256 << 10, pfswire.SEEK_DATA), (1, 768 << 10))
        self.assertEqual(seek(len(data), pfswire.SEEK_DATA)[0], 0)
        # Modes PFS does not speak, and a seek that is neither, are malformed:
        # answered PFS_E_PROTO, and the connection dropped.
        for msg, body in (("CHUNK_FALLOCATE", pfswire.chunk_falloc(t, ino, 0x08, 0, 4096)),
                          ("CHUNK_FALLOCATE", pfswire.chunk_falloc(t, ino, pfswire.FALLOC_PUNCH_HOLE, 0, 4096)),
                          ("CHUNK_FALLOCATE", pfswire.chunk_falloc(t, ino, 0, 0, 0)),
                          ("CHUNK_SEEK", pfswire.chunk_seek(t, ino, 0, 2))):
            with self.subTest(msg=msg, body=body):
                conn = self.connect()
                conn.send(MSG[msg], body)
                self.assert_dropped(conn)
        self.assertEqual(self.stat(t, ino)[0], len(data))

    def test_sync_and_unlink(self):
        t, ino, data = self.targets[0], self.ino(), self.data(5000)
        self.ok("CHUNK_SYNC", pfswire.chunk_ref(t, ino))  # nothing to sync yet
        self.write(t, ino, 0, data)
        self.ok("CHUNK_SYNC", pfswire.chunk_ref(t, ino))
        self.ok("CHUNK_UNLINK", pfswire.chunk_ref(t, ino))
        self.assertFalse(os.path.exists(chunk_file(self.dirs[0], ino)))
        self.assertEqual(self.read(t, ino, 0, 5000), b"")
        self.assertEqual(self.stat(t, ino), (0, 0))
        self.ok("CHUNK_UNLINK", pfswire.chunk_ref(t, ino))  # a retry succeeds too
        self.write(t, ino, 1, b"x")  # a new chunk, not the old one's cached descriptor
        self.assertEqual(self.read(t, ino, 0, 100), b"\0x")

    def test_unlink_many(self):
        t, data = self.targets[0], self.data(3000)
        inos = [self.ino() for _ in range(4)]
        for ino in inos[:3]:
            self.write(t, ino, 0, data)
        # The last one has no chunk here: missing chunks are no error.
        self.ok("CHUNK_UNLINK_MANY", pfswire.chunk_unlink_many(t, inos))
        for ino in inos:
            self.assertFalse(os.path.exists(chunk_file(self.dirs[0], ino)))
            self.assertEqual(self.stat(t, ino), (0, 0))

    def test_same_entry_on_two_targets_is_two_chunks(self):
        ino = self.ino()
        self.write(self.targets[0], ino, 0, b"zero")
        self.write(self.targets[1], ino, 0, b"one")
        self.assertEqual(self.read(self.targets[0], ino, 0, 10), b"zero")
        self.assertEqual(self.read(self.targets[1], ino, 0, 10), b"one")
        # The owner and generation are part of the name.
        t = self.targets[0]
        self.assertEqual(self.ok("CHUNK_READ", pfswire.chunk_io(t, ino, 0, 10, owner=2)), b"")
        self.assertEqual(self.ok("CHUNK_READ", pfswire.chunk_io(t, ino, 0, 10, generation=1)), b"")

    def test_unknown_target(self):
        unknown = max(self.targets) + 1000
        for msg, payload in (("CHUNK_READ", pfswire.chunk_io(unknown, 1, 0, 10)),
                             ("CHUNK_WRITE", pfswire.chunk_io(unknown, 1, 0, 3) + b"abc"),
                             ("CHUNK_TRUNCATE", pfswire.chunk_truncate(unknown, 1, 0)),
                             ("CHUNK_SYNC", pfswire.chunk_ref(unknown, 1)),
                             ("CHUNK_UNLINK", pfswire.chunk_ref(unknown, 1)),
                             ("CHUNK_UNLINK_MANY", pfswire.chunk_unlink_many(unknown, [1])),
                             ("CHUNK_STAT", pfswire.chunk_ref(unknown, 1))):
            with self.subTest(msg=msg):
                status, _ = self.conn.call(MSG[msg], payload)
                self.assertEqual(status, pfswire.E_UNKNOWN_TARGET)
        self.assertEqual(self.conn.call(MSG["PING"])[0], 0)  # the connection stays

    def test_oversized_write_drops_the_connection(self):
        conn = self.connect()
        n = pfswire.MAX_IO + 1
        conn.send(MSG["CHUNK_WRITE"], pfswire.chunk_io(self.targets[0], self.ino(), 0, n) + bytes(n))
        self.assert_dropped(conn)

    def test_malformed_requests_drop_the_connection(self):
        t = self.targets[0]
        bad = {
            "data shorter than its length": (MSG["CHUNK_WRITE"], pfswire.chunk_io(t, 1, 0, 10) + b"12345"),
            "data longer than its length": (MSG["CHUNK_WRITE"], pfswire.chunk_io(t, 1, 0, 1) + b"12"),
            "target 0": (MSG["CHUNK_READ"], pfswire.chunk_io(0, 1, 0, 10)),
            "read above PFS_MAX_IO": (MSG["CHUNK_READ"], pfswire.chunk_io(t, 1, 0, pfswire.MAX_IO + 1)),
            "trailing bytes": (MSG["CHUNK_STAT"], pfswire.chunk_ref(t, 1) + b"\0"),
            "truncated body": (MSG["CHUNK_TRUNCATE"], pfswire.chunk_truncate(t, 1, 0)[:-1]),
            "unlink of no chunks": (MSG["CHUNK_UNLINK_MANY"], pfswire.chunk_unlink_many(t, [])),
            "unlink of 65 chunks": (MSG["CHUNK_UNLINK_MANY"], pfswire.chunk_unlink_many(t, list(range(1, 66)))),
            "fewer ids than counted": (MSG["CHUNK_UNLINK_MANY"], pfswire.chunk_unlink_many(t, [1, 2], count=3)),
        }
        for what, (msg_type, payload) in bad.items():
            with self.subTest(what):
                conn = self.connect()
                conn.send(msg_type, payload)
                self.assert_dropped(conn)

    def test_pipelined_requests_on_one_connection(self):
        conn = self.connect()
        t, n, size = self.targets[1], 64, 64 << 10
        chunks = [(self.ino(), self.data(size)) for _ in range(n)]
        ids = [conn.send(MSG["CHUNK_WRITE"], pfswire.chunk_io(t, ino, BEYOND_4G, size) + data)
               for ino, data in chunks]
        for status, body in conn.replies(ids).values():
            self.assertEqual((status, struct.unpack_from("<I", body)[0]), (0, size))
        ids = {conn.send(MSG["CHUNK_READ"], pfswire.chunk_io(t, ino, BEYOND_4G, size)): data
               for ino, data in chunks}
        for request_id, (status, body) in conn.replies(list(ids)).items():
            self.assertEqual(status, 0)
            self.assertEqual(body, ids[request_id])
        conn.close()

    def test_full_disk_reports_enospc_and_reads_go_on(self):
        # No mount privileges needed: the chunk file is a symlink to
        # /dev/full, whose writes fail with ENOSPC exactly as a full disk's.
        if not os.access("/dev/full", os.W_OK):
            self.skipTest("no writable /dev/full to stand in for a full disk")
        t, d = self.targets[0], self.dirs[0]
        full, fine = self.ino(), self.ino()
        data = self.data(100000)
        self.write(t, fine, 0, data)
        path = chunk_file(d, full)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink("/dev/full", path)
        status, body = self.conn.call(MSG["CHUNK_WRITE"], pfswire.chunk_io(t, full, 0, 4096) + bytes(4096))
        self.assertEqual(status, ENOSPC, body)
        self.assertEqual(self.read(t, fine, 0, len(data)), data)  # reads go on
        self.write(t, fine, len(data), b"more")  # so does everything else
        wait_for("the full target to be logged", lambda: "storage target is full" in self.server.log_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
