"""packaging/repo/make-repo.sh (make repo): signed apt and yum repositories.

Packages of our own built here in seconds (a .deb by dpkg-deb, an .rpm by
rpmbuild) go through the script with a key it generates. apt, with a
private state directory and the sources line the script writes, takes the
repository only with that key: it installs nothing, but fetches the lists
and downloads the package; a Release changed after signing and a keyring of
another key are refused. On the yum side (no dnf on Debian) repomd.xml's
signature and the RPMs' signatures verify with the exported key, and the
metadata lists the package."""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "packaging", "repo", "make-repo.sh")
NAME = "pfs-repo-probe"


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


def build_deb(where):
    root = os.path.join(where, "deb-root")
    os.makedirs(os.path.join(root, "DEBIAN"))
    os.makedirs(os.path.join(root, "usr", "share", NAME))
    with open(os.path.join(root, "usr", "share", NAME, "hello"), "w") as f:
        f.write("hello from the repository\n")
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {NAME}\nVersion: 1.0\nArchitecture: all\n"
                "Maintainer: PFS developers <pfs-dev@example.org>\n"
                "Description: a package for the repository test\n")
    out = os.path.join(where, "debs")
    os.makedirs(out)
    r = run(["dpkg-deb", "--root-owner-group", "--build", root, os.path.join(out, f"{NAME}_1.0_all.deb")])
    assert r.returncode == 0, r.stderr
    return out


def build_rpm(where):
    top = os.path.join(where, "rpmbuild")
    spec = os.path.join(where, "probe.spec")
    with open(spec, "w") as f:
        f.write(f"Name: {NAME}\nVersion: 1.0\nRelease: 1\nSummary: a package for the repository test\n"
                "License: GPL-2.0-only\nBuildArch: noarch\n\n%description\nA package for the repository test.\n\n"
                f"%install\nmkdir -p %{{buildroot}}/usr/share/{NAME}\n"
                f"echo hello > %{{buildroot}}/usr/share/{NAME}/hello\n\n%files\n/usr/share/{NAME}/hello\n")
    r = run(["rpmbuild", "-bb", "--define", f"_topdir {top}", spec])
    assert r.returncode == 0, r.stderr
    return os.path.join(top, "RPMS")


class Repo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pfs-repo-")
        cls.out = os.path.join(cls.tmp, "repo")
        r = run([SCRIPT, "--debs", build_deb(cls.tmp), "--rpms", build_rpm(cls.tmp), "--out", cls.out])
        if r.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError(f"make-repo.sh failed: {r.stderr}")
        cls.said = r.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def apt(self, sources_line, *args, name="apt"):
        """apt-get/apt-cache with a private state: the system's is untouched."""
        d = os.path.join(self.tmp, name)
        for sub in ("state/lists/partial", "cache/archives/partial", "etc"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        with open(os.path.join(d, "etc", "sources.list"), "w") as f:
            f.write(sources_line + "\n")
        opts = ["-o", f"Dir::State={d}/state", "-o", f"Dir::Cache={d}/cache",
                "-o", f"Dir::Etc::SourceList={d}/etc/sources.list", "-o", "Dir::Etc::SourceParts=/nonexistent",
                "-o", "Dir::State::status=/var/lib/dpkg/status", "-o", "APT::Sandbox::User=root",
                "-o", "Debug::NoLocking=1"]
        tool = args[0]
        return run([tool, *opts, *args[1:]], cwd=d)

    def sources_line(self, keyring):
        with open(os.path.join(self.out, "pfs.list")) as f:
            line = f.read().strip()
        self.assertIn("signed-by=/etc/apt/keyrings/pfs-archive-keyring.gpg", line)
        # Where the operator would put the key, here: the test's own copy.
        return line.replace("/etc/apt/keyrings/pfs-archive-keyring.gpg", keyring)

    def test_apt_takes_the_signed_repository(self):
        line = self.sources_line(os.path.join(self.out, "pfs-archive-keyring.gpg"))
        r = self.apt(line, "apt-get", "update")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotRegex(r.stdout + r.stderr, r"(?i)not signed|NO_PUBKEY|BADSIG|insecure|^W:")
        r = self.apt(line, "apt-cache", "policy", NAME)
        self.assertRegex(r.stdout, r"Candidate: 1\.0", r.stdout + r.stderr)
        r = self.apt(line, "apt-get", "download", NAME)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "apt", f"{NAME}_1.0_all.deb")))

    def test_apt_refuses_a_release_changed_after_signing(self):
        bad = os.path.join(self.tmp, "tampered")
        shutil.copytree(os.path.join(self.out, "apt"), bad)
        with open(os.path.join(bad, "InRelease")) as f:
            text = f.read()
        with open(os.path.join(bad, "InRelease"), "w") as f:
            f.write(text.replace("Suite: stable", "Suite: stab1e"))
        os.remove(os.path.join(bad, "Release.gpg"))
        line = self.sources_line(os.path.join(self.out, "pfs-archive-keyring.gpg")).replace(
            os.path.join(self.out, "apt"), bad)
        r = self.apt(line, "apt-get", "update", name="apt-tampered")
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr, r"BADSIG|signatures were invalid|not signed")

    def test_apt_refuses_another_key(self):
        other = os.path.join(self.tmp, "other-gnupg")
        os.makedirs(other, mode=0o700)
        env = dict(os.environ, GNUPGHOME=other)
        r = run(["gpg", "--batch", "--passphrase", "", "--quick-generate-key", "someone else <x@example.org>",
                 "ed25519", "sign", "1y"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        keyring = os.path.join(self.tmp, "other.gpg")
        with open(keyring, "wb") as f:
            f.write(subprocess.run(["gpg", "--batch", "--export"], env=env, capture_output=True, check=True).stdout)
        r = self.apt(self.sources_line(keyring), "apt-get", "update", name="apt-other")
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr, r"NO_PUBKEY|not signed|signatures couldn't be verified")

    def test_yum_metadata_and_packages_are_signed(self):
        yum = os.path.join(self.out, "yum")
        with open(os.path.join(self.out, "pfs.repo")) as f:
            repo = f.read()
        for want in (f"baseurl=file://{yum}", "gpgcheck=1", "repo_gpgcheck=1",
                     f"gpgkey=file://{self.out}/RPM-GPG-KEY-pfs"):
            self.assertIn(want, repo)
        home = os.path.join(self.tmp, "verify-gnupg")
        os.makedirs(home, mode=0o700)
        env = dict(os.environ, GNUPGHOME=home)
        run(["gpg", "--batch", "--import", os.path.join(self.out, "RPM-GPG-KEY-pfs")], env=env)
        repomd = os.path.join(yum, "repodata", "repomd.xml")
        r = run(["gpg", "--batch", "--verify", repomd + ".asc", repomd], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        primary = [n for n in os.listdir(os.path.join(yum, "repodata")) if n.endswith("primary.xml.gz")]
        self.assertEqual(len(primary), 1)
        with gzip.open(os.path.join(yum, "repodata", primary[0]), "rt") as f:
            self.assertIn(f"<name>{NAME}</name>", f.read())
        # The RPM's own signature, against an rpm database that knows only our key.
        db = os.path.join(self.tmp, "rpmdb")
        os.makedirs(db)
        r = run(["rpmkeys", "--dbpath", db, "--import", os.path.join(self.out, "RPM-GPG-KEY-pfs")])
        self.assertEqual(r.returncode, 0, r.stderr)
        rpm = [n for n in os.listdir(yum) if n.endswith(".rpm")][0]
        r = run(["rpmkeys", "--dbpath", db, "--checksig", "-v", os.path.join(yum, rpm)])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"(?i)signature.*OK")
        self.assertNotIn("NOKEY", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
