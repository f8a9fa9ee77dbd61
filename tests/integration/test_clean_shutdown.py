"""Every daemon stops on SIGTERM without touching freed memory: mgmtd, meta
and storage run under valgrind's memcheck while files are created, copied in
and out and removed (so the metadata server holds connections to storage
servers and deletes chunks), then get SIGTERM. Each must exit 0 with no
memcheck error. (A daemon that destroyed its sockets after its event loop
corrupted its heap at exit only now and then; memcheck sees it every time.)
The metadata server sends the chunk deletions it still holds back (they
linger to be batched) before it exits: no chunk file of the removed file
is left behind."""
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
MEMCHECK_FAILED = 99
# Under memcheck everything runs tens of times slower.
SLOW = 60.0


@unittest.skipUnless(shutil.which("valgrind"), "valgrind is not installed (scripts/install-deps.sh)")
class CleanShutdown(unittest.TestCase):
    def test_daemons_exit_cleanly_on_sigterm(self):
        c = Cluster(BIN_DIR, probably_offline_ms=20000, offline_ms=60000, heartbeat_ms=1000,
                    wrapper=["valgrind", "--quiet", f"--error-exitcode={MEMCHECK_FAILED}",
                             "--errors-for-leak-kinds=none"])
        ok = False
        try:
            c.start_mgmtd(timeout=SLOW)
            c.start_server("meta", "m1")
            c.start_server("storage", "s1", c.target_dirs("s1", 2))
            wait_for("2 targets ONLINE", lambda: (lambda t: len(t) == 2 and all(
                x["reachability"] == "ONLINE" for x in t))(c.ctl_json("target", "list")["targets"]), timeout=SLOW)
            wait_for("the metadata server to answer", lambda: c.ctl("stat", "/", check=False).returncode == 0,
                     timeout=SLOW)

            local = tempfile.mkdtemp(dir=c.dir)
            src, back = os.path.join(local, "in"), os.path.join(local, "out")
            data = os.urandom(3 << 20)
            with open(src, "wb") as f:
                f.write(data)
            c.ctl("mkdir", "/d")
            c.ctl("entry", "set", "--num-targets", "2", "--chunk-size", "64K", "/d")
            c.ctl("cp", src, "pfs:/d/f")
            c.ctl("cp", "pfs:/d/f", back)
            with open(back, "rb") as f:
                self.assertEqual(f.read(), data)
            c.ctl("rm", "/d/f")

            # Metadata first: it holds client connections to the others.
            for name in ("m1", "s1", "mgmtd"):
                d = c.daemons[name]
                rc = d.stop(timeout=SLOW)
                errors = re.findall(r"==\d+== (Invalid .*|.*uninitialised.*)", d.log_text())
                self.assertEqual(rc, 0, f"{name} exited with {rc} on SIGTERM: {errors[:5]}")
                if name == "m1":
                    left = [os.path.join(root, f) for t in c.target_dirs("s1", 2)
                            for root, _, files in os.walk(os.path.join(t, "chunks")) for f in files]
                    self.assertEqual(left, [], "chunk files of the removed file outlived the metadata server")
            ok = True
        finally:
            if not ok:
                c.dump_logs()
            c.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
