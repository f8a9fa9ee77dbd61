"""Operations against real daemons (mgmtd, 1 meta, storage s1 with 2 targets
and direct-io, s2 with 1 target): `pfs-ctl stats server` while copies run
into a pool of s1's targets only (s1 busy, s2 idle, --json parses), files
byte-exact through an O_DIRECT storage server, and a server that stops
answering shown as unreachable."""
import hashlib
import os
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
MIB = 1 << 20


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


class Ops(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = c = Cluster(BIN_DIR)
        cls.local = tempfile.mkdtemp(prefix="pfs-ops-", dir=c.dir)
        cls.failed = False
        try:
            c.start_mgmtd()
            c.start_server("meta", "m1")
            s1 = c.start_server("storage", "s1", c.target_dirs("s1", 2), extra=["--direct-io"])
            c.start_server("storage", "s2", c.target_dirs("s2", 1))
            wait_for("3 targets ONLINE", lambda: (lambda t: len(t) == 3 and all(
                x["reachability"] == "ONLINE" for x in t))(c.ctl_json("target", "list")["targets"]))
            wait_for("the metadata server to answer", lambda: c.ctl("stat", "/", check=False).returncode == 0,
                     timeout=30)
            wait_for("s1 to use O_DIRECT", lambda: "O_DIRECT" in s1.log_text())
            # A pool of s1's targets: everything under /load goes to s1 alone.
            targets = c.ctl_json("target", "list")["targets"]
            s1_targets = [str(t["target_id"]) for t in targets if t["node_alias"] == "s1"]
            c.ctl("pool", "create", "busy")
            c.ctl("pool", "assign", "busy", *s1_targets)
            c.ctl("mkdir", "/load")
            c.ctl("entry", "set", "--pool", "busy", "--num-targets", "2", "--chunk-size", "256K", "/load")
        except BaseException:
            c.dump_logs()
            c.close()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.failed:
            cls.c.dump_logs()
        cls.c.close()

    def run(self, result=None):
        result = super().run(result)
        if result and (result.failures or result.errors):
            type(self).failed = True
        return result

    def local_file(self, name, size):
        path = os.path.join(self.local, name)
        with open(path, "wb") as f:
            f.write(os.urandom(size))
        return path

    def stats(self, *args):
        return self.c.ctl_json("stats", "server", *args)

    def test_1_direct_io_round_trip(self):
        # Sizes that make every kind of chunk write: aligned, unaligned heads
        # and tails, pieces larger than the registered buffers.
        for size in (0, 1, 4095, 4096, MIB + 123, 20 * MIB + 4097):
            with self.subTest(size=size):
                src = self.local_file(f"in-{size}", size)
                dst = os.path.join(self.local, f"out-{size}")
                self.c.ctl("cp", src, f"pfs:/load/d{size}")
                self.c.ctl("cp", f"pfs:/load/d{size}", dst)
                self.assertEqual(os.path.getsize(dst), size)
                self.assertEqual(sha256(dst), sha256(src))
        chunks = [f for t in self.c.target_dirs("s1", 2) for _, _, files in os.walk(os.path.join(t, "chunks"))
                  for f in files]
        self.assertGreater(len(chunks), 0, "no chunk files on s1's targets")

    def test_2_stats_under_load(self):
        src = self.local_file("load", 24 * MIB)
        out = os.path.join(self.local, "load-out")
        stop = threading.Event()
        copies = []

        def load():
            i = 0
            while not stop.is_set():
                r = self.c.ctl("cp", src, f"pfs:/load/f{i % 2}", check=False)
                copies.append(r.returncode)
                r = self.c.ctl("cp", f"pfs:/load/f{i % 2}", out, check=False)
                copies.append(r.returncode)
                i += 1

        loader = threading.Thread(target=load)
        loader.start()
        try:
            wait_for("a first copy", lambda: len(copies) > 0, timeout=60)
            doc = self.stats("--interval", "2", "--by-type")
        finally:
            stop.set()
            loader.join()
        self.assertTrue(all(rc == 0 for rc in copies), copies)
        self.assertEqual(doc["interval_s"], 2)
        nodes = {n["alias"]: n for n in doc["nodes"]}
        self.assertEqual(set(nodes), {"mgmtd", "m1", "s1", "s2"})
        for n in nodes.values():
            self.assertTrue(n["reachable"], n)
            self.assertGreater(n["seconds"], 1.5)
        s1, s2 = nodes["s1"], nodes["s2"]
        moved = s1["bytes_in_per_s"] + s1["bytes_out_per_s"]
        self.assertGreater(moved, 1e6, s1)
        self.assertGreater(s1["ops_per_s"], 1, s1)
        types = {t["message"]: t for t in s1["by_type"]}
        self.assertTrue({"CHUNK_WRITE", "CHUNK_READ"} & set(types), types)
        for t in types.values():
            self.assertTrue(t["message"].startswith("CHUNK_"), t)
        # The idle server: nothing but what watching it costs, which is not counted.
        self.assertLess(s2["ops_per_s"], 0.5, s2)
        self.assertEqual(s2["bytes_in_per_s"] + s2["bytes_out_per_s"], 0, s2)
        self.assertEqual(s2["by_type"], [])
        # The metadata server saw the opens and closes of the copies, and
        # counts them by type since it started.
        m1 = nodes["m1"]
        self.assertGreater(m1["requests_total"], 0)
        self.assertEqual(sum(m1["requests_by_type"].values()), m1["requests_total"], m1)
        closes = m1["requests_by_type"].get("CLOSE", 0) + m1["requests_by_type"].get("CLOSE_MANY", 0)
        self.assertGreater(closes, 0, m1)

        table = self.c.ctl("stats", "server", "--interval", "0.2").stdout
        self.assertIn("READ-MB/S", table.splitlines()[0])
        self.assertEqual(len(table.splitlines()), 5, table)  # header, mgmtd, m1, s1, s2

    def test_3_unreachable_server_is_shown(self):
        self.c.daemons["s2"].kill9()
        doc = self.stats("--interval", "0.2")
        nodes = {n["alias"]: n for n in doc["nodes"]}
        self.assertFalse(nodes["s2"]["reachable"])
        self.assertIn("unreachable", nodes["s2"]["error"])
        self.assertTrue(nodes["s1"]["reachable"])
        bad = self.c.ctl("stats", "server", "--interval", "0", check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--interval", bad.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
