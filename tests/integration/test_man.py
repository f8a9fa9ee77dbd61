"""The manual pages (packaging/man, built into BUILD/man) render without a
warning, and say what the code does: every option of each program's --help,
every mount option pfs.ko parses, every key of client.conf, and every page
the systemd units point to."""
import os
import pathlib
import re
import subprocess
import unittest

TOP = pathlib.Path(__file__).resolve().parents[2]
BIN_DIR = pathlib.Path(os.environ.get("PFS_BIN_DIR", TOP / "build"))
MAN = BIN_DIR / "man"
PROGRAMS = {"pfs-mgmtd": "server/mgmtd", "pfs-meta": "server/meta", "pfs-storage": "server/storage",
            "pfs-ctl": "utils/ctl", "pfs-bench": "tests/bench", "pfs-setup": "utils", "pfs-nvidia-fs-dkms": "utils"}


def render(page):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True)
    return r.returncode, r.stderr


def text(page):
    r = subprocess.run(["groff", "-man", "-Tascii", "-rHY=0", "-rLL=300n", "-P-cbou", str(page)], capture_output=True, text=True)
    return re.sub(r"\s+", " ", r.stdout.replace("\u2010", "-").replace("-\n", "-"))


class ManualPages(unittest.TestCase):
    def test_render_cleanly(self):
        pages = sorted(MAN.glob("*.[58]"))
        self.assertEqual({p.name for p in pages},
                         {"pfs-mgmtd.8", "pfs-meta.8", "pfs-storage.8", "pfs-ctl.8", "pfs-bench.8", "pfs-setup.8", "mount.pfs.8",
                          "pfs-nvidia-fs-dkms.8", "pfs.conf.5"})
        for page in pages:
            with self.subTest(page=page.name):
                rc, err = render(page)
                self.assertEqual((rc, err), (0, ""))

    def test_every_program_option_documented(self):
        for name, sub in PROGRAMS.items():
            help_text = subprocess.run([str(BIN_DIR / sub / name), "--help"], capture_output=True,
                                       text=True, timeout=30).stdout
            options = set(re.findall(r"--([a-z][a-z0-9-]+)", help_text))
            self.assertIn("help", options)
            page = text(MAN / f"{name}.8")
            for option in sorted(options):
                with self.subTest(program=name, option=option):
                    self.assertIn(f"--{option}", page)

    def test_every_mount_option_documented(self):
        source = (TOP / "kmod" / "super.c").read_text()
        options = re.findall(r'fsparam_\w+\("([a-z_]+)"', source)
        self.assertIn("secret_file", options)
        page = text(MAN / "mount.pfs.8")
        for option in options:
            with self.subTest(option=option):
                self.assertRegex(page, rf"\b{option}\b")

    def test_every_client_conf_key_documented(self):
        source = (TOP / "utils" / "mount.pfs" / "client_config.cpp").read_text()
        keys = re.findall(r'\{"([a-z-]+)", Kind::', source)
        self.assertIn("mgmtd-host", keys)
        page = text(MAN / "pfs.conf.5")
        for key in keys:
            with self.subTest(key=key):
                self.assertIn(key, page)

    def test_completion_knows_every_command(self):
        """packaging/bash-completion/pfs-ctl offers every noun and verb of `pfs-ctl help`."""
        help_text = subprocess.run([str(BIN_DIR / "utils/ctl/pfs-ctl"), "help"], capture_output=True,
                                   text=True, timeout=30).stdout
        commands = help_text.split("Commands:", 1)[1]
        words = set()
        for line in commands.splitlines():
            m = re.match(r"^  ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?\b", line)
            if m:
                words.update(w for w in m.groups() if w)
        self.assertIn("fsck", words)
        script = (TOP / "packaging" / "bash-completion" / "pfs-ctl").read_text()
        offered = set(re.findall(r"[a-z][a-z-]*", " ".join(re.findall(r'compgen -W "([^"$]*)', script))))
        for word in sorted(words):
            with self.subTest(word=word):
                self.assertIn(word, offered)

    def test_units_point_to_pages(self):
        for unit in (TOP / "packaging" / "systemd").glob("*.service"):
            for name, section in re.findall(r"man:([\w.-]+)\((\d)\)", unit.read_text()):
                with self.subTest(unit=unit.name, page=name):
                    self.assertTrue((MAN / f"{name}.{section}").is_file())


if __name__ == "__main__":
    unittest.main(verbosity=2)
