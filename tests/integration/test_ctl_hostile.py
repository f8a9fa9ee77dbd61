"""pfs-ctl against a hostile metadata server (tests/kernel/fake_server.py,
mode evil), whose directories list names such as "../../x", "a/b", "" and
".." amid the entries: `cp -r` out of PFS and `rm -r` refuse the listing
before they do anything, so nothing is written outside (or inside) the
destination and nothing is removed; a sane directory of the same server is
listed and removed as usual."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import wait_for  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
FAKE = os.path.join(os.path.dirname(__file__), "..", "kernel", "fake_server.py")
HOSTILE = ["names", "slash", "empty", "dots"]


def read(path):
    with open(path) as f:
        return f.read()


def files_under(top):
    found = set()
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), top))
    return found


class CtlHostile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pfs-ctl-hostile-")
        secret = os.path.join(self.dir, "secret")
        with open(secret, "w") as f:
            f.write("a-secret-of-sufficient-length-for-pfs\n")
        os.chmod(secret, 0o600)
        self.log = os.path.join(self.dir, "fake.log")
        with open(self.log, "w") as log:
            self.fake = subprocess.Popen([sys.executable, FAKE, "--port", "0", "--secret", secret,
                                          "--mode", "evil"], stdout=log, stderr=subprocess.STDOUT)
        # The port the kernel gave it: "listening on 127.0.0.1:PORT".
        listening = wait_for("the fake server listening",
                             lambda: re.search(r"listening on (\S+)\n", read(self.log)))
        self.conf = os.path.join(self.dir, "ctl.conf")
        with open(self.conf, "w") as f:
            f.write(f"auth-file = {secret}\nmgmtd = {listening.group(1)}\n")
        # Everything a command could write lands below work/ (dest/ is the destination).
        self.work = os.path.join(self.dir, "work", "a", "b")
        self.dest = os.path.join(self.work, "dest")
        os.makedirs(self.dest)

    def tearDown(self):
        self.fake.kill()
        self.fake.wait()
        subprocess.run(["rm", "-rf", self.dir], check=False)

    def ctl(self, *args):
        return subprocess.run([os.path.join(BIN_DIR, "utils/ctl/pfs-ctl"), "--config", self.conf, *args],
                              capture_output=True, text=True, timeout=60)

    def removals(self):
        return [line for line in read(self.log).splitlines() if line.startswith(("UNLINK", "RMDIR"))]

    def test_sane_directory(self):
        r = self.ctl("ls", "/good")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["fine", "fine2"])
        r = self.ctl("rm", "-r", "/good")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.removals(), ["UNLINK fine", "UNLINK fine2", "RMDIR good"])

    def test_cp_r_out_stays_in_destination(self):
        for d in HOSTILE:
            with self.subTest(directory=d):
                r = self.ctl("cp", "-r", f"pfs:/{d}", self.dest)
                # At most the copies of the directories themselves were made, empty.
                self.assertLessEqual(files_under(os.path.join(self.dir, "work")),
                                     {"a", "a/b", "a/b/dest"} | {f"a/b/dest/{x}" for x in HOSTILE})
                self.assertNotEqual(r.returncode, 0, f"cp -r of /{d} succeeded: {r.stdout}")
                self.assertIn("not a plain name", r.stderr)

    def test_rm_r_removes_nothing(self):
        for d in HOSTILE:
            with self.subTest(directory=d):
                r = self.ctl("rm", "-r", f"/{d}")
                self.assertEqual(self.removals(), [])
                self.assertNotEqual(r.returncode, 0, f"rm -r of /{d} succeeded")
                self.assertIn("not a plain name", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
