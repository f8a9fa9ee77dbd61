"""packaging/dkms/make-dkms-tree.sh: the tree a package installs as
/usr/src/pfs-<version>/ holds kmod/'s sources (subdirectories included, no
build outputs), the protocol in proto/ and dkms.conf, and builds with kbuild
on its own, far from the checkout's common/proto."""
import os
import pathlib
import re
import subprocess
import tempfile
import unittest

TOP = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = TOP / "packaging" / "dkms" / "make-dkms-tree.sh"


def kdir():
    if os.environ.get("KDIR"):
        return os.environ["KDIR"]
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(TOP), "print-kdir"],
                       capture_output=True, text=True)
    return r.stdout.strip()


class DkmsTree(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.tree = self.dir / "pfs-9.8.7"

    def tearDown(self):
        self.tmp.cleanup()

    def make_tree(self, *extra):
        r = subprocess.run([str(SCRIPT), "--version", "9.8.7", *extra, str(self.tree)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return sorted(str(p.relative_to(self.tree)) for p in self.tree.rglob("*") if p.is_file())

    def test_layout(self):
        files = self.make_tree()
        kmod = TOP / "kmod"
        expected = sorted(
            str(p.relative_to(kmod)) for p in kmod.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(kmod).parts)
            and (p.name in ("Kbuild", "Makefile") or p.suffix in (".c", ".h"))
            and not p.name.endswith(".mod.c") and p.name != "pfs_config.h")
        proto = sorted("proto/" + p.name for p in (TOP / "common" / "proto").glob("*.[ch]"))
        self.assertEqual(files, sorted(expected + proto + ["dkms.conf", "VERSION"]))
        self.assertEqual((self.tree / "VERSION").read_text(), "9.8.7\n")
        self.assertIn("Kbuild", files)
        self.assertIn("proto/pfs_proto.h", files)
        self.assertTrue(any(f.startswith("probe/") for f in files))
        for f in files:  # nothing a build in place leaves behind
            self.assertIsNone(re.search(r"\.(o|ko|mod|cmd|symvers|order)$|pfs_config\.h|\.mod\.c$", f), f)
        conf = (self.tree / "dkms.conf").read_text()
        self.assertIn('PACKAGE_VERSION="9.8.7"\n', conf)
        self.assertIn('BUILT_MODULE_NAME[0]="pfs"', conf)
        # kbuild takes the protocol from proto/ when the tree has one.
        self.assertIn("$(src)/proto/pfs_proto.h", (self.tree / "Kbuild").read_text())

    def test_refuses_bad_input(self):
        self.tree.mkdir()
        (self.tree / "junk").write_text("x")
        r = subprocess.run([str(SCRIPT), str(self.tree)], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not empty", r.stderr)
        r = subprocess.run([str(SCRIPT), "--src", str(self.dir), str(self.dir / "t")],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Kbuild missing", r.stderr)

    def test_builds_with_kbuild(self):
        headers = kdir()
        if not headers or not os.path.isdir(headers):
            self.skipTest("no kernel headers")
        self.make_tree()
        # The tree stands alone: no ../common/proto to fall back on.
        self.assertFalse((self.tree.parent / "common").exists())
        r = subprocess.run(["make", "-C", headers, f"M={self.tree}", f"-j{os.cpu_count()}",
                            "modules"], capture_output=True, text=True, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr[-4000:])
        self.assertTrue((self.tree / "pfs.ko").is_file())
        cmd = (self.tree / ".proto.o.cmd").read_text()
        self.assertIn(f"-I{self.tree}/proto", cmd)
        info = subprocess.run(["/sbin/modinfo", "-F", "version", str(self.tree / "pfs.ko")],
                              capture_output=True, text=True)
        self.assertEqual(info.stdout.strip(), "9.8.7", info.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
