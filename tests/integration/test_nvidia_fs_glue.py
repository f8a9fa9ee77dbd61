"""packaging/nvidia-fs/pfs-nvidia-fs-dkms adds PFS's entry to nvidia-fs'
probe table as a DKMS patch of the nvidia-fs source NVIDIA's package
installed, once, and has DKMS rebuild it. Here the source is a stand-in
laid out like nvidia-fs' (dkms.conf, nvfs-dma.c with its module table) and
`dkms` a recorder on PATH: no NVIDIA driver or GPU exists on this machine.
The patch itself was checked against every nvidia-fs release from 2.3 to
2.28.4 (NVIDIA/gds-nvidia-fs)."""
import os
import pathlib
import subprocess
import tempfile
import unittest

TOP = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = TOP / "packaging" / "nvidia-fs" / "pfs-nvidia-fs-dkms"
PATCH = TOP / "packaging" / "nvidia-fs" / "pfs-v1.patch"

# The shape of nvidia-fs' table around the entry the patch follows.
TABLE_HEAD = "struct module_entry modules_list[] = {\n" + "\t{\n\t\t1,\n\t\t0,\n\t\t\"nvme\",\n\t},\n" * 3
BEEGFS = """\t{
\t\t1,
\t\t0,
\t\tNVFS_PROC_MOD_NTAP_BEEGFS_KEY,
\t\t0,
\t\t"beegfs_v1_register_nvfs_dma_ops",
\t\t0,
\t\t"beegfs_v1_unregister_nvfs_dma_ops",
\t\t0,
\t\t&nvfs_dev_dma_rw_ops
\t},

\t{
\t\t1,
\t\t1,
\t\t"wekafsio",
\t},
};
"""


class NvidiaFsGlue(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = pathlib.Path(self.tmp.name)
        self.src = root / "nvidia-fs-2.28"
        self.src.mkdir()
        (self.src / "dkms.conf").write_text('PACKAGE_NAME="nvidia-fs"\nPACKAGE_VERSION="2.28"\nAUTOINSTALL="yes"\n')
        (self.src / "nvfs-dma.c").write_text(TABLE_HEAD + BEEGFS)
        self.bin = root / "bin"
        self.bin.mkdir()
        self.log = root / "dkms.log"
        dkms = self.bin / "dkms"
        dkms.write_text(f'#!/bin/sh\necho "$*" >> {self.log}\n')
        dkms.chmod(0o755)

    def tearDown(self):
        self.tmp.cleanup()

    def run_glue(self, *args, path=True):
        env = dict(os.environ)
        env["PATH"] = (f"{self.bin}:" if path else "") + "/usr/bin:/bin"
        return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)

    def test_check_changes_nothing(self):
        r = self.run_glue("--check", str(self.src))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pfs-v1.patch applies to nvidia-fs 2.28", r.stdout)
        self.assertNotIn("PATCH", (self.src / "dkms.conf").read_text())
        self.assertFalse(self.log.exists())

    def test_adds_the_patch_once_and_rebuilds(self):
        for _ in range(2):
            r = self.run_glue("--kernel", "6.1.0-test", str(self.src))
            self.assertEqual(r.returncode, 0, r.stderr)
        conf = (self.src / "dkms.conf").read_text()
        self.assertEqual(conf.count('PATCH[0]="pfs-v1.patch"'), 1, conf)
        self.assertEqual((self.src / "patches" / "pfs-v1.patch").read_bytes(), PATCH.read_bytes())
        self.assertEqual(self.log.read_text().splitlines(),
                         ["build -m nvidia-fs -v 2.28 -k 6.1.0-test --force",
                          "install -m nvidia-fs -v 2.28 -k 6.1.0-test --force"] * 2)
        # What DKMS then does with it: the table gains PFS's entry.
        subprocess.run(["patch", "-p1", "-s", "-d", str(self.src), "-i", str(PATCH)], check=True)
        table = (self.src / "nvfs-dma.c").read_text()
        self.assertIn('"pfs_v1_register_nvfs_dma_ops",\n\t\t0,\n\t\t"pfs_v1_unregister_nvfs_dma_ops"', table)
        self.assertLess(table.index("beegfs_v1_unregister"), table.index("pfs_v1_register"))

    def test_refusals_leave_the_source_alone(self):
        before = (self.src / "dkms.conf").read_text()
        r = self.run_glue(str(self.src), path=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("dkms is not installed", r.stderr)
        (self.src / "nvfs-dma.c").write_text("/* another table */\n")
        r = self.run_glue(str(self.src))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("does not apply to nvidia-fs 2.28", r.stderr)
        self.assertEqual((self.src / "dkms.conf").read_text(), before)
        r = self.run_glue(str(self.src / "nowhere"))
        self.assertIn("is not an nvidia-fs DKMS source", r.stderr)
        self.assertFalse(self.log.exists())


if __name__ == "__main__":
    unittest.main()
