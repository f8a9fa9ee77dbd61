"""pfs-ctl's file commands against real daemons (mgmtd, 1 meta, 2 storage
servers with 2 targets each): mkdir, ls, stat, entry info/set, cp in and out
(byte-exact, streamed), cat, mv, rm, and their exit statuses."""
import hashlib
import os
import signal
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import pfswire  # noqa: E402
from cluster import Cluster, wait_for  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
MIB = 1 << 20


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_random(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 * MIB)
            f.write(os.urandom(n))
            left -= n


class CtlFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = c = Cluster(BIN_DIR)
        cls.local = tempfile.mkdtemp(prefix="pfs-ctl-files-", dir=c.dir)
        try:
            c.start_small()
        except BaseException:
            c.dump_logs()
            c.close()
            raise
        cls.failed = False

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

    # ---- helpers ----

    def ctl(self, *args, **kw):
        return self.c.ctl(*args, **kw)

    def json(self, *args):
        return self.c.ctl_json(*args)

    def fails(self, status, *args, secret=None):
        r = self.c.ctl(*args, secret=secret, check=False)
        self.assertEqual(r.returncode, status, f"pfs-ctl {' '.join(args)}: {r.stdout} {r.stderr}")
        return r.stderr

    def local_file(self, name, size):
        path = os.path.join(self.local, name)
        write_random(path, size)
        return path

    def cat_bytes(self, path):
        argv = [self.c.binary("pfs-ctl"), "--config", "/dev/null", "--mgmtd", f"127.0.0.1:{self.c.mgmtd_port}",
                "--auth-file", self.c.secret, "cat", path]
        r = subprocess.run(argv, capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    # ---- tests ----

    def test_mkdir_ls_stat(self):
        self.ctl("mkdir", "-p", "/tree/a/b/c")
        self.ctl("mkdir", "-p", "/tree/a/b/c")  # exists: fine with -p
        self.assertEqual(self.json("mkdir", "-p", "/tree/a/d")["created"], ["/tree/a/d"])
        self.assertIn("File exists", self.fails(1, "mkdir", "/tree/a"))
        self.assertIn("/nope/x: No such file or directory", self.fails(1, "mkdir", "/nope/x"))
        self.ctl("mkdir", "/tree/e")

        self.assertEqual(self.ctl("ls", "/tree/a").stdout, "b\nd\n")
        listing = self.json("ls", "/tree")
        self.assertEqual(listing["path"], "/tree")
        self.assertEqual([(e["name"], e["type"]) for e in listing["entries"]], [("a", "directory"), ("e", "directory")])
        self.assertEqual(set(listing["entries"][0]["entry_id"]), {"ino", "owner_node", "generation"})
        root = {e["name"] for e in self.json("ls", "/")["entries"]}
        self.assertIn("tree", root)

        long_text = self.ctl("ls", "-l", "/tree").stdout.splitlines()
        self.assertTrue(long_text[0].startswith("MODE"), long_text)
        self.assertTrue(long_text[1].startswith("drwxr-xr-x"), long_text)
        self.assertTrue(long_text[1].endswith(" a"), long_text)
        long_json = self.json("ls", "-l", "/tree")["entries"]
        self.assertEqual(long_json[0]["mode_string"], "drwxr-xr-x")
        self.assertEqual(long_json[0]["nlink"] >= 2, True)

        st = self.json("stat", "/tree/a")
        self.assertEqual(st["path"], "/tree/a")
        self.assertEqual(st["type"], "directory")
        self.assertEqual(st["mode"] & 0o170000, 0o040000)
        for key in ("entry_id", "size", "uid", "gid", "nlink", "atime", "mtime", "ctime"):
            self.assertIn(key, st)
        text = self.ctl("stat", "/tree/a").stdout
        self.assertIn("Type:", text)
        self.assertIn("drwxr-xr-x (0755)", text)

        err = self.fails(1, "stat", "/tree/missing")
        self.assertIn("pfs-ctl: /tree/missing: No such file or directory", err)
        self.fails(2, "stat", "relative/path")
        self.fails(2, "ls", "-l", "-p", "/tree")  # -p is mkdir's

    def test_pattern_and_layout(self):
        pools = self.json("pool", "list")["pools"]
        default = pools[0]
        # A new file system keeps files up to 128 KiB inline; directories
        # inherit that.
        self.assertEqual(self.json("entry", "info", "/")["pattern"]["inline_max"], 128 << 10)
        self.ctl("mkdir", "/striped")
        out = self.json("entry", "set", "--chunk-size", "1M", "--num-targets", "2", "/striped")
        self.assertEqual(out["pattern"]["chunk_size"], MIB)
        info = self.json("entry", "info", "/striped")
        self.assertEqual(info["type"], "directory")
        self.assertEqual(info["pattern"], {"chunk_size": MIB, "num_targets": 2, "pool_id": default["pool_id"],
                                           "pool_name": default["name"], "inline_max": 128 << 10,
                                           "dir_stripes": 0})
        # Files on the targets however small: the opt-out.
        self.ctl("entry", "set", "--inline-max", "0", "/striped")
        self.assertEqual(self.json("entry", "info", "/striped")["pattern"]["inline_max"], 0)
        self.ctl("cp", self.local_file("tiny.bin", 100), "pfs:/striped/tiny")
        self.assertNotIn("inline", self.json("entry", "info", "/striped/tiny")["layout"])
        # A chunk size below the inline max brings the inline max down.
        self.ctl("mkdir", "/fine")
        out = self.json("entry", "set", "--chunk-size", "64K", "/fine")
        self.assertEqual((out["pattern"]["chunk_size"], out["pattern"]["inline_max"]), (64 << 10, 64 << 10))
        # Any subset; the pool by name.
        self.ctl("entry", "set", "--pool", default["name"], "/striped")
        self.assertEqual(self.json("entry", "info", "/striped")["pattern"]["chunk_size"], MIB)

        src = self.local_file("striped.bin", 3 * MIB + 5)
        self.ctl("cp", src, "pfs:/striped/f")
        info = self.json("entry", "info", "/striped/f")
        self.assertEqual(info["type"], "file")
        self.assertEqual(info["size"], 3 * MIB + 5)
        layout = info["layout"]
        self.assertEqual(layout["chunk_size"], MIB)
        self.assertEqual(layout["pool_id"], default["pool_id"])
        self.assertEqual(len(layout["targets"]), 2)
        targets = {t["target_id"]: t for t in self.json("target", "list")["targets"]}
        for t in layout["targets"]:
            self.assertEqual(t["node_id"], targets[t["target_id"]]["node_id"])
            self.assertIn(t["node_alias"], ("s1", "s2"))
        self.assertEqual(len({t["target_id"] for t in layout["targets"]}), 2)
        text = self.ctl("entry", "info", "/striped/f").stdout
        self.assertIn("Chunk size:", text)
        self.assertIn("1M", text)
        self.assertIn("Metadata node:", text)

        # Inline files: small ones stay with the metadata server.
        self.ctl("mkdir", "/small")
        self.ctl("entry", "set", "--inline-max", "64K", "/small")
        self.assertEqual(self.json("entry", "info", "/small")["pattern"]["inline_max"], 64 << 10)
        self.ctl("cp", self.local_file("small.bin", 5000), "pfs:/small/f")
        self.assertTrue(self.json("entry", "info", "/small/f")["layout"]["inline"])
        self.assertIn("Data: ", self.ctl("entry", "info", "/small/f").stdout)
        self.assertEqual(self.ctl("entry", "set", "--inline-max", "2M", "/small", check=False).returncode, 2)

        # Striped directories need as many metadata servers online.
        self.assertIn("1 online", self.fails(1, "mkdir", "--stripe", "2", "/two"))
        self.fails(2, "mkdir", "--stripe", "0", "/two")
        self.fails(2, "mkdir", "--stripe", "65", "/two")
        self.ctl("entry", "set", "--dir-stripes", "2", "/small")
        self.assertEqual(self.json("entry", "info", "/small")["pattern"]["dir_stripes"], 2)
        self.ctl("mkdir", "/small/sub")  # as striped as the servers allow: not
        self.assertNotIn("shards", self.json("entry", "info", "/small/sub"))
        self.assertEqual(self.json("entry", "info", "/small/sub")["pattern"]["dir_stripes"], 2)
        self.fails(2, "entry", "set", "--dir-stripes", "65", "/small")

        # A wide pattern spreads over both servers.
        self.ctl("mkdir", "/wide")
        self.ctl("entry", "set", "--chunk-size", "512K", "--num-targets", "4", "/wide")
        self.ctl("cp", src, "pfs:/wide/f")
        wide = self.json("entry", "info", "/wide/f")["layout"]
        self.assertEqual(wide["chunk_size"], 512 << 10)
        self.assertEqual({t["node_alias"] for t in wide["targets"]}, {"s1", "s2"})
        back = os.path.join(self.local, "wide.back")
        self.ctl("cp", "pfs:/wide/f", back)
        self.assertEqual(sha256(back), sha256(src))

        self.fails(2, "entry", "set", "/striped")                            # nothing to set
        self.fails(2, "entry", "set", "--chunk-size", "1000", "/striped")    # not a power of two
        self.fails(2, "entry", "set", "--chunk-size", "12X", "/striped")
        self.fails(2, "entry", "set", "--num-targets", "0", "/striped")
        self.assertIn("no pool named", self.fails(1, "entry", "set", "--pool", "nosuch", "/striped"))
        self.fails(1, "entry", "set", "--chunk-size", "1M", "/missing")

    def test_copy_roundtrip_and_cat(self):
        self.ctl("mkdir", "/rt")
        for size in (0, 1, MIB + 3, 20 * MIB):
            src = self.local_file(f"in-{size}", size)
            out = self.json("cp", src, f"pfs:/rt/f{size}")
            self.assertEqual((out["files"], out["bytes"]), (1, size))
            self.assertEqual(self.json("stat", f"/rt/f{size}")["size"], size)
            back = os.path.join(self.local, f"out-{size}")
            text = self.ctl("cp", f"pfs:/rt/f{size}", back).stdout
            self.assertRegex(text, rf"^copied 1 file, {size} bytes in [0-9.]+ s, [0-9.]+ MB/s\n$")
            self.assertEqual(os.path.getsize(back), size)
            self.assertEqual(sha256(back), sha256(src), size)
            if size == 20 * MIB:
                print(f"\n  cp in: {out['mb_per_s']:.1f} MB/s, out: {text.strip()}", file=sys.stderr)
            if size <= MIB + 3:
                with open(src, "rb") as f:
                    self.assertEqual(self.cat_bytes(f"/rt/f{size}"), f.read())

        # Overwriting truncates; a directory as destination takes the source's name.
        small = self.local_file("small", 10)
        self.ctl("cp", small, "pfs:/rt/f20971520")
        self.assertEqual(self.json("stat", "/rt/f20971520")["size"], 10)
        self.ctl("cp", small, "pfs:/rt")
        self.assertEqual(self.json("stat", "/rt/small")["size"], 10)
        outdir = os.path.join(self.local, "outdir")
        os.mkdir(outdir)
        self.ctl("cp", "pfs:/rt/small", outdir)
        self.assertEqual(sha256(os.path.join(outdir, "small")), sha256(small))

        self.fails(2, "cp", small, small)                 # both local
        self.fails(2, "cp", "pfs:/a", "pfs:/b")           # both in PFS
        self.fails(2, "cat", "--json", "/rt/small")
        self.assertIn("No such file or directory", self.fails(1, "cp", "pfs:/rt/none", outdir))
        self.assertIn("No such file or directory", self.fails(1, "cp", os.path.join(self.local, "none"), "pfs:/rt/x"))
        self.assertIn("Is a directory", self.fails(1, "cat", "/rt"))
        self.assertIn("Is a directory", self.fails(1, "cp", "pfs:/rt", outdir))

    def test_copy_tree(self):
        tree = os.path.join(self.local, "tree-in")
        os.makedirs(os.path.join(tree, "sub", "deeper"))
        files = {"top": 100, "sub/mid": MIB + 7, "sub/deeper/leaf": 0}
        for name, size in files.items():
            write_random(os.path.join(tree, name), size)
        out = self.json("cp", "-r", tree, "pfs:/copied")
        self.assertEqual((out["files"], out["bytes"]), (3, sum(files.values())))
        self.assertEqual(self.json("stat", "/copied/sub/mid")["size"], MIB + 7)
        back = os.path.join(self.local, "tree-out")
        self.ctl("cp", "-r", "pfs:/copied", back)
        for name in files:
            self.assertEqual(sha256(os.path.join(back, name)), sha256(os.path.join(tree, name)), name)

    def mknod(self, path, mode, major=0, minor=0, uid=0, status=0):
        """MKNOD as pfs.ko sends it (pfs-ctl makes no special files)."""
        parent, name = os.path.split(path)
        e = self.json("stat", parent)["entry_id"]
        rdev = (minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12)
        body = (struct.pack("<QII", e["ino"], e["owner_node"], e["generation"]) +
                struct.pack("<H", len(name)) + name.encode() + struct.pack("<II", mode, rdev))
        conn = pfswire.connect_authenticated(self.c.daemons["m1"].port, self.c.secret, "client")
        try:
            got, _ = conn.call(pfswire.MSG["MKNOD"], body, uid=uid, gid=uid)
        finally:
            conn.close()
        self.assertEqual(got, status)

    def test_special_files(self):
        self.ctl("mkdir", "/special")
        self.mknod("/special/tty", 0o020620, 4, 1)
        self.mknod("/special/big", 0o060600, 4000, 300000)
        self.mknod("/special/fifo", 0o010644)
        # devices are root's to make, whoever asks (the server checks)
        self.mknod("/special/nope", 0o020600, 1, 3, uid=1000, status=pfswire.EPERM)
        src = self.local_file("plain", 10)
        self.ctl("cp", src, "pfs:/special/plain")
        rows = {line.split()[-1]: line for line in self.ctl("ls", "-l", "/special").stdout.splitlines()[1:]}
        self.assertTrue(rows["tty"].startswith("crw--w----"), rows["tty"])
        self.assertIn(" 4, 1 ", rows["tty"])
        self.assertIn(" 4000, 300000 ", rows["big"])
        self.assertTrue(rows["fifo"].startswith("prw-r--r--"), rows["fifo"])
        entries = {e["name"]: e for e in self.json("ls", "-l", "/special")["entries"]}
        self.assertEqual(entries["big"]["type"], "block-device")
        self.assertEqual(entries["big"]["rdev"], {"major": 4000, "minor": 300000})
        self.assertNotIn("rdev", entries["fifo"])
        self.assertGreater(entries["fifo"]["btime"], 1.6e9)
        info = self.ctl("entry", "info", "/special/tty").stdout
        self.assertRegex(info, r"Device:\s+4, 1")
        self.assertRegex(info, r"Born:\s+\d{4}-")
        # cp -r copies the data, skips what has none
        back = os.path.join(self.local, "special-out")
        out = self.json("cp", "-r", "pfs:/special", back)
        self.assertEqual(out["files"], 1)
        self.assertEqual(sorted(os.listdir(back)), ["plain"])

    def test_mv_rm(self):
        self.ctl("mkdir", "-p", "/mv/dir")
        src = self.local_file("mv-src", 1000)
        self.ctl("cp", src, "pfs:/mv/a")
        self.ctl("mv", "/mv/a", "/mv/b")
        self.fails(1, "stat", "/mv/a")
        self.assertEqual(self.json("stat", "/mv/b")["size"], 1000)
        self.assertEqual(self.json("mv", "/mv/b", "/mv/dir"), {"from": "/mv/b", "to": "/mv/dir/b"})
        with open(src, "rb") as f:
            self.assertEqual(self.cat_bytes("/mv/dir/b"), f.read())
        self.assertIn("No such file or directory", self.fails(1, "mv", "/mv/none", "/mv/x"))

        self.ctl("rm", "/mv/dir/b")
        self.fails(1, "stat", "/mv/dir/b")
        self.assertIn("Is a directory", self.fails(1, "rm", "/mv/dir"))
        self.fails(1, "rm", "/")
        self.assertIn("No such file or directory", self.fails(1, "rm", "/mv/none"))

        self.ctl("mkdir", "-p", "/rmtree/x/y")
        for i, path in enumerate(("/rmtree/f", "/rmtree/x/f", "/rmtree/x/y/f")):
            self.ctl("cp", src, "pfs:" + path)
        out = self.json("rm", "-r", "/rmtree")
        self.assertEqual(out, {"removed_files": 3, "removed_directories": 3})
        self.fails(1, "stat", "/rmtree")
        self.assertNotIn("rmtree", {e["name"] for e in self.json("ls", "/")["entries"]})

    def test_unreachable_and_wrong_secret(self):
        wrong = os.path.join(self.c.dir, "wrong.secret")
        Cluster.write_secret(wrong, "not-the-secret-" + os.urandom(16).hex())
        self.assertIn("authentication", self.fails(3, "stat", "/", secret=wrong))
        self.fails(3, "ls", "/", secret=wrong)
        argv = [self.c.binary("pfs-ctl"), "--config", "/dev/null", "--mgmtd", "127.0.0.1:1",
                "--auth-file", self.c.secret, "--timeout-ms", "1000", "stat", "/"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("cannot reach pfs-mgmtd", r.stderr)

        # A metadata server that does not answer.
        meta = self.c.daemons["m1"].proc.pid
        os.kill(meta, signal.SIGSTOP)
        try:
            err = self.fails(3, "--timeout-ms", "1000", "stat", "/")
        finally:
            os.kill(meta, signal.SIGCONT)
        self.assertIn("pfs-ctl: /: ", err)
        wait_for("the metadata server to answer again", lambda: self.ctl("stat", "/", check=False).returncode == 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
