"""The annotated example configs in packaging/etc/ must stay what the
daemons accept: each parses completely (the daemon gets as far as reading
the auth file), and a misspelt key is refused. The systemd units pass
`systemd-analyze verify` (with this build's programs and manual pages in
the places the units name)."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
ETC = pathlib.Path(__file__).resolve().parents[2] / "packaging" / "etc"
MISSING_SECRET = "/nonexistent/pfs-test-secret"


class ExampleConfigs(unittest.TestCase):
    def run_with(self, program, config):
        c = Cluster.__new__(Cluster)
        c.bin_dir = BIN_DIR
        argv = [c.binary(program), "--config", str(config), "--auth-file", MISSING_SECRET]
        if program == "pfs-ctl":
            argv += ["node", "list"]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    def test_examples_parse(self):
        for name in ("mgmtd", "meta", "storage", "ctl"):
            with self.subTest(config=name):
                r = self.run_with("pfs-" + name, ETC / f"{name}.conf")
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(MISSING_SECRET, r.stderr, "the config was not accepted as a whole")

    def test_misspelt_key_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            bad = pathlib.Path(d) / "mgmtd.conf"
            bad.write_text((ETC / "mgmtd.conf").read_text() + "ofline-ms = 5\n")
            r = self.run_with("pfs-mgmtd", bad)
            self.assertEqual(r.returncode, 2)
            self.assertIn("ofline-ms", r.stderr)
            self.assertNotIn(MISSING_SECRET, r.stderr)


class SystemdUnits(unittest.TestCase):
    def test_verify(self):
        if not shutil.which("systemd-analyze"):
            self.skipTest("no systemd-analyze")
        units = sorted((ETC.parent / "systemd").glob("*.service"))
        self.assertEqual([u.name for u in units], ["pfs-meta.service", "pfs-mgmtd.service", "pfs-storage.service"])
        c = Cluster.__new__(Cluster)
        c.bin_dir = BIN_DIR
        with tempfile.TemporaryDirectory() as d:
            man8 = pathlib.Path(d, "man", "man8")
            man8.mkdir(parents=True)
            for page in pathlib.Path(BIN_DIR, "man").glob("*.8"):
                shutil.copy(page, man8)
            for unit in units:
                with self.subTest(unit=unit.name):
                    program = unit.stem
                    text = unit.read_text()
                    self.assertIn(f"ExecStart=/usr/sbin/{program} ", text)
                    self.assertIn("User=pfs\n", text)
                    copy = pathlib.Path(d, unit.name)
                    copy.write_text(text.replace(f"/usr/sbin/{program}", os.path.abspath(c.binary(program))))
                    r = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True,
                                       env={**os.environ, "MANPATH": str(man8.parent)}, timeout=60)
                    self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))


if __name__ == "__main__":
    unittest.main(verbosity=2)
