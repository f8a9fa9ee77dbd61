"""mount.pfs as mount(8) runs it: `mount.pfs SOURCE DIR [-sfnv] [-o OPTS]`.
With -f it prints the mount(2) call it would make; these tests check that
call, the client config handling (the shipped example included) and the
exit codes. Without -f it really calls mount(2): on a host without pfs.ko
that must fail with advice to load the module."""
import os
import pathlib
import re
import subprocess
import tempfile
import unittest

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
HELPER = os.path.join(BIN_DIR, "utils", "mount.pfs", "mount.pfs")
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "packaging" / "etc" / "client.conf"


def run(*args, env_conf=None):
    env = dict(os.environ)
    env.pop("PFS_CLIENT_CONF", None)
    if env_conf is not None:
        env["PFS_CLIENT_CONF"] = str(env_conf)
    return subprocess.run([HELPER, *args], capture_output=True, text=True, timeout=30, env=env)


def mount_line(stdout):
    calls = [line for line in stdout.splitlines() if line.startswith("mount(")]
    assert len(calls) == 1, stdout
    return calls[0]


class MountHelper(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.conf = self.dir / "client.conf"

    def tearDown(self):
        self.tmp.cleanup()

    def write_conf(self, text):
        self.conf.write_text(text)
        return self.conf

    def test_fake_verbose_prints_the_call(self):
        conf = self.write_conf("mgmtd-host = localhost\nmgmtd-port = 8123\n"
                               "auth-file = /etc/pfs/test.secret\ntimeout-ms = 9000\n")
        r = run("pfs", "/mnt/pfs", "-fv", "-o",
                f"ro,noatime,nosuid,_netdev,nofail,x-systemd.automount,conns=4,config={conf}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(mount_line(r.stdout),
                         'mount("127.0.0.1:8123", "/mnt/pfs", "pfs", MS_RDONLY|MS_NOSUID|MS_NOATIME, '
                         '"secret_file=/etc/pfs/test.secret,timeout=9000,conns=4")')
        self.assertIn(f"config: {conf}", r.stdout)
        self.assertIn("pfs-mgmtd localhost port 8123 -> 127.0.0.1:8123", r.stdout)
        self.assertIn("not for the kernel: _netdev,nofail,x-systemd.automount", r.stdout)
        self.assertEqual(r.stderr, "")

    def test_mount_8_argument_order_and_ignored_flags(self):
        # mount(8) puts the two words first and may add -s, -n, -v.
        r = run("[::1]:9000", "/mnt/x", "-s", "-n", "-f", "-o", "cache=none", env_conf="/dev/null")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(mount_line(r.stdout),
                         'mount("[::1]:9000", "/mnt/x", "pfs", 0, '
                         '"secret_file=/etc/pfs/auth.secret,cache=none")')
        self.assertNotIn("mount.pfs:", r.stdout)  # no verbose lines without -v

    def test_shipped_example_config(self):
        r = run("127.0.0.1", "/mnt", "-f", "-o", f"config={EXAMPLE}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"127.0.0.1:8008"', mount_line(r.stdout))
        self.assertIn('"secret_file=/etc/pfs/auth.secret")', mount_line(r.stdout))
        # The commented-out tunables are valid too, with the kernel's defaults.
        text = re.sub(r"^# ([a-z-]+ = )", r"\1", EXAMPLE.read_text(), flags=re.M)
        self.assertNotEqual(text, EXAMPLE.read_text())
        r = run("127.0.0.1", "/mnt", "-f", env_conf=self.write_conf(text))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"secret_file=/etc/pfs/auth.secret,timeout=30000,connect_timeout=5000,'
                      'attr_ttl=1000,conns=2,cache=buffered,transport=auto,rails=ib0:ib1")',
                      mount_line(r.stdout))

    def test_config_option_beats_environment(self):
        env_conf = self.write_conf("mgmtd-port = 1111\n")
        opt_conf = self.dir / "other.conf"
        opt_conf.write_text("mgmtd-port = 2222\n")
        r = run("localhost", "/mnt", "-f", env_conf=env_conf)
        self.assertIn('"127.0.0.1:1111"', mount_line(r.stdout))
        r = run("localhost", "/mnt", "-f", "-o", f"config={opt_conf}", env_conf=env_conf)
        self.assertIn('"127.0.0.1:2222"', mount_line(r.stdout))

    def test_config_errors_are_usage_errors_with_line(self):
        conf = self.write_conf("mgmtd-host = localhost\n# note\nconns-per-srever = 2\n")
        r = run("pfs", "/mnt", "-f", env_conf=conf)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{conf}:3: unknown key 'conns-per-srever'", r.stderr)
        self.assertIn("did you mean 'conns-per-server'", r.stderr)
        self.assertEqual(r.stdout, "")

        r = run("localhost", "/mnt", "-f", env_conf=self.dir / "missing.conf")
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing.conf", r.stderr)

    def test_usage_and_resolution_failures(self):
        for args in ([], ["src"], ["a", "b", "c"], ["a", "b", "-q"], ["a", "/m", "-o", "bind"]):
            with self.subTest(args=args):
                r = run(*args, env_conf="/dev/null")
                self.assertEqual(r.returncode, 1, r.stdout)
                self.assertTrue(r.stderr.startswith("mount.pfs: "), r.stderr)
        r = run("pfs", "/mnt", "-f", env_conf="/dev/null")
        self.assertEqual(r.returncode, 1)
        self.assertIn("mgmtd-host", r.stderr)
        # An empty label makes glibc refuse the name without asking DNS.
        r = run("bad..name", "/mnt", "-f", env_conf="/dev/null")
        self.assertEqual(r.returncode, 32)
        self.assertIn("cannot resolve 'bad..name'", r.stderr)

    def test_namespace_flag(self):
        r = run("localhost", "/mnt", "-f", "-N", "1", env_conf="/dev/null")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('setns(open("/proc/1/ns/mnt"), CLONE_NEWNS)', r.stdout)

    def test_real_mount_without_module(self):
        with open("/proc/filesystems") as f:
            if any(line.split()[-1] == "pfs" for line in f if line.strip()):
                self.skipTest("pfs is registered here: this test must not mount it")
        target = self.dir / "mnt"
        target.mkdir()
        r = run("localhost", str(target), env_conf="/dev/null")
        if os.geteuid() == 0:
            self.assertEqual(r.returncode, 32, r.stderr)
            self.assertIn("the pfs kernel module is not loaded: modprobe pfs", r.stderr)
        else:
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("only root can mount", r.stderr)
        self.assertFalse(os.path.ismount(target))


if __name__ == "__main__":
    unittest.main(verbosity=2)
