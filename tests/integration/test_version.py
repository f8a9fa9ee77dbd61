"""One version for everything: the VERSION file at the top of the
repository is what every program's --version, pfs.ko's modinfo and the DKMS
tree say, next to the protocol version of common/proto."""
import os
import pathlib
import re
import subprocess
import tempfile
import unittest

TOP = pathlib.Path(__file__).resolve().parents[2]
BIN_DIR = pathlib.Path(os.environ.get("PFS_BIN_DIR", TOP / "build"))
VERSION = (TOP / "VERSION").read_text().splitlines()[0]
PROTOCOL = re.search(r"#define PFS_PROTO_VERSION\s+(\d+)",
                     (TOP / "common" / "proto" / "pfs_proto.h").read_text()).group(1)
PROGRAMS = {"pfs-mgmtd": "server/mgmtd", "pfs-meta": "server/meta", "pfs-storage": "server/storage",
            "pfs-ctl": "utils/ctl", "pfs-bench": "tests/bench", "mount.pfs": "utils/mount.pfs"}


class OneVersion(unittest.TestCase):
    def test_version_file(self):
        self.assertRegex(VERSION, r"^\d+\.\d+\.\d+([~+][A-Za-z0-9.]+)?$")

    def test_programs(self):
        for name, sub in PROGRAMS.items():
            for flag in ("--version", "-V"):
                with self.subTest(program=name, flag=flag):
                    r = subprocess.run([str(BIN_DIR / sub / name), flag], capture_output=True,
                                       text=True, timeout=30)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stdout, f"{name} {VERSION} (protocol {PROTOCOL})\n")

    def test_module(self):
        ko = TOP / "kmod" / "pfs.ko"
        if not ko.is_file():
            self.skipTest("kmod/pfs.ko not built")
        r = subprocess.run(["/sbin/modinfo", "-F", "version", str(ko)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), VERSION)

    def test_dkms_tree(self):
        with tempfile.TemporaryDirectory() as d:
            tree = pathlib.Path(d) / "tree"
            r = subprocess.run([str(TOP / "packaging" / "dkms" / "make-dkms-tree.sh"), str(tree)],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual((tree / "VERSION").read_text(), VERSION + "\n")
            self.assertIn(f'PACKAGE_VERSION="{VERSION}"\n', (tree / "dkms.conf").read_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
