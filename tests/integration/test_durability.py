"""What pfs-meta does when its journal cannot be written: it stops (no
reply from a namespace ahead of its disk, reads included) and exits; after
the space is freed and it restarts, every acknowledged change is there and
nothing else. The journal lives on a real, small file system (tmpfs)."""
import os
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import pfswire  # noqa: E402
from cluster import Cluster, wait_for  # noqa: E402
from pfswire import MSG  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
ENOSPC, EIO = 28, 5


def entry_id(e):
    return struct.pack("<QII", e["ino"], e["owner_node"], e["generation"])


def mkdir_req(dir_eid, name, mode=0o755):
    return dir_eid + struct.pack("<H", len(name)) + name.encode() + struct.pack("<II", mode, 0)


class JournalFull(unittest.TestCase):
    def setUp(self):
        self.c = Cluster(BIN_DIR)
        self.state = os.path.join(self.c.dir, "m1")
        os.makedirs(self.state)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", self.state], capture_output=True)
        if r.returncode != 0:
            self.c.close()
            self.skipTest(f"cannot mount a tmpfs for the journal: {r.stderr.decode().strip()}")

    def tearDown(self):
        self.c.close(keep=False) if hasattr(self, "c") else None
        subprocess.run(["umount", "-l", self.state], capture_output=True)

    def serving(self):
        return self.c.ctl("ls", "/", check=False).returncode == 0

    def test_a_full_journal_disk_stops_pfs_meta_and_loses_nothing_acknowledged(self):
        c = self.c
        c.start_mgmtd()
        meta = c.start_server("meta", "m1")
        c.start_server("storage", "s1", c.target_dirs("s1", 1))
        wait_for("pfs-meta serving", self.serving)
        # Leave the journal a few pages.
        st = os.statvfs(self.state)
        filler = os.path.join(self.state, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - (24 << 10)))
            f.flush()
            os.fsync(f.fileno())

        conn = pfswire.connect_authenticated(meta.port, c.secret, "client")
        root = entry_id(c.ctl_json("stat", "/")["entry_id"])
        acknowledged, failed = [], None
        for i in range(5000):
            name = f"d{i:05d}-" + "x" * 180
            status, _ = conn.call(MSG["MKDIR"], mkdir_req(root, name))
            if status != 0:
                failed = (name, status)
                break
            acknowledged.append(name)
        self.assertIsNotNone(failed, "the journal never filled up")
        self.assertIn(failed[1], (ENOSPC, EIO))
        self.assertGreater(len(acknowledged), 0)
        # Nothing of the namespace in memory is served any more: not the
        # directory that failed, not even what is durable.
        try:
            status, _ = conn.call(MSG["LOOKUP"], root + struct.pack("<H", len(failed[0])) + failed[0].encode())
            self.assertNotEqual(status, 0)
            status, _ = conn.call(MSG["LOOKUP"], root + struct.pack("<H", len(acknowledged[0])) +
                                  acknowledged[0].encode())
            self.assertEqual(status, EIO)
        except (ConnectionError, OSError):
            pass  # or it went away already
        conn.close()
        wait_for("pfs-meta to exit", lambda: not meta.alive(), timeout=20)
        self.assertEqual(meta.proc.returncode, 1)
        self.assertIn("the journal cannot be written", meta.log_text())

        # Space back, a restart: exactly what was acknowledged.
        os.unlink(filler)
        c.start_server("meta", "m1", port=meta.port)
        wait_for("pfs-meta serving again", self.serving)
        names = {e["name"] for e in c.ctl_json("ls", "/")["entries"]}
        self.assertEqual(names, set(acknowledged))


if __name__ == "__main__":
    unittest.main(verbosity=2)
