"""libpfsclient.so.0, libpfs's C interface (pfsclient.h), against real daemons (mgmtd,
1 meta, 2 storage servers): a C program creates, writes, reads back, lists,
renames, truncates and removes through it, and reads what pfs-ctl wrote;
pfs-ctl reads back what it wrote. The library exports the header's functions
and nothing else; the lib and dev install components give a header and a
pkg-config file a program compiles and links against."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster  # noqa: E402

BIN_DIR = os.path.abspath(os.environ.get("PFS_BIN_DIR", "build"))
SOURCE_DIR = os.environ.get("PFS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
LIB = os.path.join(BIN_DIR, "common", "libpfs", "shared", "libpfsclient.so.0")
HEADER = os.path.join(SOURCE_DIR, "common", "libpfs", "shared", "pfsclient.h")
MIB = 1 << 20
KEEP_SIZE = 5 * MIB + 7  # libpfs_c_test.c


def version():
    with open(os.path.join(SOURCE_DIR, "VERSION")) as f:
        return f.read().strip()


def pattern(n):
    return bytes(((i * 2654435761) & 0xFFFFFFFF) >> 13 & 0xFF for i in range(n))


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


class LibPfs(unittest.TestCase):
    def test_exports_the_header_functions_only(self):
        with open(HEADER) as f:
            declared = set(re.findall(r"\b(pfs_[a-z_]+)\(", f.read()))
        nm = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True, check=True)
        exported = {line.split()[-1].split("@")[0] for line in nm.stdout.splitlines() if " T " in line}
        self.assertEqual(exported, declared)
        soname = subprocess.run(["objdump", "-p", LIB], capture_output=True, text=True, check=True).stdout
        self.assertRegex(soname, r"SONAME\s+libpfsclient\.so\.0\b")

    def test_against_a_cluster(self):
        c = Cluster(BIN_DIR)
        try:
            c.start_small()
            c.ctl("entry", "set", "--num-targets", "4", "--chunk-size", "256K", "/")
            conf = os.path.join(c.dir, "lib.conf")
            with open(conf, "w") as f:
                f.write(f"mgmtd = 127.0.0.1:{c.mgmtd_port}\nauth-file = {c.secret}\ntimeout-ms = 10000\n")
            local = os.path.join(c.dir, "from-ctl.bin")
            data = os.urandom(2 * MIB + 99)
            with open(local, "wb") as f:
                f.write(data)
            c.ctl("cp", local, "pfs:/from-ctl")

            r = subprocess.run([os.path.join(BIN_DIR, "tests", "integration", "libpfs-c-test"), conf, version(),
                                "/from-ctl"], capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertRegex(r.stdout, r"ok \d+ checks")
            self.assertIn(f"from-ctl {fnv1a(data):016x} {len(data)}", r.stdout)

            back = os.path.join(c.dir, "keep.bin")
            c.ctl("cp", "pfs:/capi-keep", back)
            with open(back, "rb") as f:
                self.assertEqual(f.read(), pattern(KEEP_SIZE), "what libpfs wrote reads differently with pfs-ctl")
            self.assertNotEqual(c.ctl("stat", "/capi", check=False).returncode, 0, "/capi was removed")
        except BaseException:
            c.dump_logs()
            raise
        finally:
            c.close()

    def test_installed_header_and_pkg_config(self):
        with tempfile.TemporaryDirectory(prefix="pfs-libpfsclient-dev-") as d:
            prefix = os.path.join(d, "usr")
            for component in ("lib", "dev"):
                subprocess.run(["cmake", "--install", BIN_DIR, "--component", component, "--prefix", prefix],
                               capture_output=True, text=True, check=True)
            pcs = [os.path.join(root, n) for root, _, names in os.walk(prefix) for n in names if n == "pfsclient.pc"]
            self.assertEqual(len(pcs), 1, f"pfsclient.pc installed once: {pcs}")
            self.assertTrue(os.path.exists(os.path.join(prefix, "include", "pfsclient.h")))
            prog = os.path.join(d, "v.c")
            with open(prog, "w") as f:
                f.write('#include <stdio.h>\n#include <pfsclient.h>\n'
                        'int main(void) { pfs_client *c = NULL; printf("%s\\n", pfs_version());'
                        ' return pfs_client_close(c); }\n')
            env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
            flags = subprocess.run(["pkg-config", "--define-prefix", "--cflags", "--libs", "pfsclient"], env=env,
                                   capture_output=True, text=True, check=True).stdout.split()
            exe = os.path.join(d, "v")
            r = subprocess.run(["cc", "-Wall", "-Werror", prog, "-o", exe, *flags], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            libdir = [f[2:] for f in flags if f.startswith("-L")][0]
            r = subprocess.run([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir), capture_output=True, text=True)
            self.assertEqual((r.returncode, r.stdout.strip()), (0, version()), r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
