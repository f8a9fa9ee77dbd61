"""pfs-setup prepares nodes the way an operator would, and what it writes is
what the daemons, pfs-ctl and mount.pfs run with: a mgmtd, a metadata and a
storage server configured by pfs-setup alone (the test adds only the state
directories and addresses a shared machine needs), a file copied in and
out, a client config that mount.pfs turns into the right mount(2) call; bad
invocations get clear errors."""
import getpass
import os
import pathlib
import stat
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, Daemon, LogsOnFailure, free_port, wait_for  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
SETUP = os.path.join(BIN_DIR, "utils", "pfs-setup")
USER = getpass.getuser()


def setup(*args, check=True):
    r = subprocess.run([SETUP, *args], capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"pfs-setup {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


def conf(path):
    out = {}
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


class PfsSetup(LogsOnFailure, unittest.TestCase):
    def setUp(self):
        self.c = Cluster(BIN_DIR)
        self.etc = os.path.join(self.c.dir, "etc")
        self.common = ["--etc", self.etc, "--user", USER, "--no-enable"]

    def tearDown(self):
        super().tearDown()
        self.c.close()

    def start(self, name, program, *extra):
        argv = [self.c.binary(program), "--config", os.path.join(self.etc, f"{name}.conf"),
                "--listen", "127.0.0.1", *extra]
        d = self.c.daemons[name] = Daemon(name, argv, os.path.join(self.c.dir, f"{name}.log")).start()
        return d

    def test_cluster_from_setup(self):
        mport, meta_port, storage_port = free_port(), free_port(), free_port()
        secret = os.path.join(self.etc, "auth.secret")

        r = setup("mgmtd", "--port", str(mport), *self.common)
        self.assertIn("created a new cluster secret", r.stdout)
        st = os.stat(secret)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(st.st_uid, os.getuid())
        self.assertGreaterEqual(len(pathlib.Path(secret).read_text().strip()), 32)
        first = pathlib.Path(secret).read_bytes()
        setup("mgmtd", "--port", str(mport), *self.common)  # again: the secret stays
        self.assertEqual(pathlib.Path(secret).read_bytes(), first)
        self.assertEqual(conf(os.path.join(self.etc, "mgmtd.conf")),
                         {"auth-file": secret, "port": str(mport)})

        targets = [os.path.join(self.c.dir, "nvme0", "pfs"), os.path.join(self.c.dir, "nvme1", "pfs")]
        setup("meta", "--mgmtd", f"127.0.0.1:{mport}", "--alias", "meta01", "--port", str(meta_port),
              *self.common)
        setup("storage", "--mgmtd", f"127.0.0.1:{mport}", "--alias", "storage01", "--port",
              str(storage_port), "--target", targets[0], "--target", targets[1], *self.common)
        for t in targets:
            self.assertEqual(stat.S_IMODE(os.stat(t).st_mode), 0o750)
        self.assertEqual(conf(os.path.join(self.etc, "storage.conf"))["targets"], ",".join(targets))

        self.c.mgmtd_port = mport
        self.start("mgmtd", "pfs-mgmtd", "--data-dir", os.path.join(self.c.dir, "mgmtd-state"))
        self.start("meta", "pfs-meta", "--state-dir", os.path.join(self.c.dir, "meta-state"))
        self.start("storage", "pfs-storage", "--state-dir", os.path.join(self.c.dir, "storage-state"))
        self.c.secret = secret

        def registered():
            nodes = self.c.ctl_json("node", "list")["nodes"]
            return {n["alias"] for n in nodes} >= {"meta01", "storage01"}
        wait_for("the servers to register", registered)
        wait_for("2 storage targets", lambda: len(self.c.ctl_json("target", "list")["targets"]) == 2)

        data = os.urandom(3 << 20)
        src = os.path.join(self.c.dir, "in.bin")
        pathlib.Path(src).write_bytes(data)
        wait_for("a copy in to succeed", lambda: self.c.ctl("cp", src, "pfs:/f", check=False).returncode == 0)
        out = os.path.join(self.c.dir, "out.bin")
        self.c.ctl("cp", "pfs:/f", out)
        self.assertEqual(pathlib.Path(out).read_bytes(), data)
        chunks = [p for t in targets for p in pathlib.Path(t).rglob("*") if p.is_file()]
        self.assertTrue(chunks, "no chunk files in the targets pfs-setup prepared")

        # A client node: the client key, client.conf, and the mount(2) call.
        key = os.path.join(self.c.dir, "client.key")
        with open(key, "w") as f:
            f.write(self.c.ctl("auth", "key", "client").stdout)
        os.chmod(key, 0o600)
        cetc = os.path.join(self.c.dir, "client-etc")
        setup("client", "--mgmtd", f"127.0.0.1:{mport}", "--secret", key, "--etc", cetc,
              "--user", USER)
        self.assertEqual(conf(os.path.join(cetc, "client.conf")),
                         {"mgmtd-host": "127.0.0.1", "mgmtd-port": str(mport),
                          "auth-file": os.path.join(cetc, "auth.secret")})
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(cetc, "auth.secret")).st_mode), 0o600)
        r = subprocess.run([os.path.join(BIN_DIR, "utils", "mount.pfs", "mount.pfs"), "pfs", "/mnt/pfs",
                            "-f", "-v"], capture_output=True, text=True, timeout=30,
                           env={**os.environ, "PFS_CLIENT_CONF": os.path.join(cetc, "client.conf")})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"127.0.0.1 port {mport}", r.stdout)
        self.assertIn(f"secret_file={os.path.join(cetc, 'auth.secret')}", r.stdout)

    def test_keeps_the_rest_of_the_config(self):
        os.makedirs(self.etc)
        path = os.path.join(self.etc, "meta.conf")
        pathlib.Path(path).write_text("# my notes\nmgmtd = old-host\n# alias = meta01\nsession-timeout = 7\n")
        pathlib.Path(self.etc, "auth.secret").write_text("x" * 40 + "\n")
        os.chmod(os.path.join(self.etc, "auth.secret"), 0o644)
        setup("meta", "--mgmtd", "new-host:9000", "--alias", "m7", *self.common)
        text = pathlib.Path(path).read_text()
        self.assertIn("# my notes\n", text)
        self.assertEqual(conf(path), {"mgmtd": "new-host:9000", "alias": "m7", "session-timeout": "7",
                                      "auth-file": os.path.join(self.etc, "auth.secret")})
        # A secret others could read is made private.
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.etc, "auth.secret")).st_mode), 0o600)

    def test_bad_invocations(self):
        cases = [
            ((), 2, "which service"),
            (("storage", "--mgmtd", "h"), 2, "--target"),
            (("meta",), 2, "--mgmtd"),
            (("meta", "storage"), 2, "one service at a time"),
            (("mgmtd", "--port", "70000"), 2, "1..65535"),
            (("mgmtd", "--bogus"), 2, "unknown argument"),
            (("meta", "--mgmtd", "h", "--target", "/x"), 2, "--target is for storage only"),
            (("meta", "--mgmtd", "h"), 1, "needs the cluster secret"),
            (("mgmtd", "--user", "no-such-user-pfs"), 1, "no user"),
        ]
        for args, rc, message in cases:
            with self.subTest(args=args):
                extra = [] if "--user" in args else ["--user", USER]
                r = setup(*args, "--etc", self.etc, *extra, "--no-enable", check=False)
                self.assertEqual(r.returncode, rc, r.stderr)
                self.assertIn(message, r.stderr)
        r = setup("--version")
        self.assertRegex(r.stdout, r"^pfs-setup \d+\.\d+\.\d+")


if __name__ == "__main__":
    unittest.main(verbosity=2)
