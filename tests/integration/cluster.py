"""Starts real PFS daemons on loopback in a temporary directory and waits for
conditions with deadlines (never fixed sleeps)."""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


_given_ports = set()


def free_port():
    """A port nobody has bound now, not handed out before by this process,
    below the kernel's ephemeral range (32768 and up by default): a port
    bind(0) picked can come back from the next bind(0) before its daemon
    listens on it, and one in the ephemeral range can become the local end
    of any connect()."""
    rng = random.SystemRandom()
    for _ in range(10000):
        port = rng.randrange(20000, 32000)
        if port in _given_ports:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given_ports.add(port)
        return port
    raise RuntimeError("no free TCP port in 20000-31999 on 127.0.0.1")


def wait_for(what, predicate, timeout=20.0, interval=0.05):
    """Polls predicate() until it returns a truthy value; fails after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as e:  # the condition may not be checkable yet
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class Daemon:
    def __init__(self, name, argv, log_path):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT)
        return self

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self, timeout=10):
        """SIGTERM, SIGKILL after timeout seconds; returns the exit status."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()
            return self.proc.returncode
        return None

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")


class Cluster:
    """mgmtd + meta + storage daemons with short timeouts, for tests."""

    def __init__(self, bin_dir, probably_offline_ms=1500, offline_ms=4000, heartbeat_ms=250, wrapper=()):
        self.bin_dir = bin_dir
        self.wrapper = list(wrapper)  # runs the daemons under it (valgrind ...)
        self.dir = tempfile.mkdtemp(prefix="pfs-it-")
        self.secret = os.path.join(self.dir, "auth.secret")
        self.write_secret(self.secret, os.urandom(24).hex())
        self.mgmtd_port = free_port()
        self.timeouts = (probably_offline_ms, offline_ms)
        self.heartbeat_ms = heartbeat_ms
        self.daemons = {}

    @staticmethod
    def write_secret(path, text):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, text.encode() + b"\n")
        os.close(fd)

    def binary(self, name):
        sub = {"pfs-mgmtd": "server/mgmtd", "pfs-meta": "server/meta", "pfs-storage": "server/storage",
               "pfs-ctl": "utils/ctl"}[name]
        return os.path.join(self.bin_dir, sub, name)

    def common(self, secret=None):
        return ["--config", "/dev/null", "--auth-file", secret or self.secret, "--log-level", "debug"]

    def start_mgmtd(self, timeout=20.0):
        argv = [*self.wrapper, self.binary("pfs-mgmtd"), *self.common(), "--listen", "127.0.0.1", "--port", str(self.mgmtd_port),
                "--data-dir", os.path.join(self.dir, "mgmtd"),
                "--probably-offline-ms", str(self.timeouts[0]), "--offline-ms", str(self.timeouts[1])]
        d = self.daemons["mgmtd"] = Daemon("mgmtd", argv, os.path.join(self.dir, "mgmtd.log")).start()
        wait_for("mgmtd to listen", lambda: socket.create_connection(("127.0.0.1", self.mgmtd_port), 1).close() or True,
                 timeout=timeout)
        return d

    def start_server(self, kind, alias, targets=(), port=None, secret=None, extra=()):
        port = port or free_port()
        argv = [*self.wrapper, self.binary("pfs-" + kind), *self.common(secret), "--listen", "127.0.0.1", "--port", str(port),
                "--mgmtd", f"127.0.0.1:{self.mgmtd_port}", "--alias", alias,
                "--state-dir", os.path.join(self.dir, alias), "--heartbeat-ms", str(self.heartbeat_ms), *extra]
        for t in targets:
            os.makedirs(t, exist_ok=True)
            argv += ["--targets", t]
        d = Daemon(alias, argv, os.path.join(self.dir, alias + ".log"))
        d.port = port
        self.daemons[alias] = d.start()
        return d

    def start_small(self):
        """mgmtd, metadata server m1, storage servers s1 and s2 with 2 targets
        each; returns once the targets are ONLINE and m1 answers."""
        self.start_mgmtd()
        self.start_server("meta", "m1")
        self.start_server("storage", "s1", self.target_dirs("s1", 2))
        self.start_server("storage", "s2", self.target_dirs("s2", 2))
        wait_for("4 targets ONLINE", lambda: (lambda t: len(t) == 4 and all(
            x["reachability"] == "ONLINE" for x in t))(self.ctl_json("target", "list")["targets"]))
        # The metadata server answers once it has the storage map.
        wait_for("the metadata server to answer", lambda: self.ctl("stat", "/", check=False).returncode == 0,
                 timeout=30)

    def target_dirs(self, alias, n):
        return [os.path.join(self.dir, f"{alias}-t{i}") for i in range(n)]

    def ctl(self, *args, secret=None, check=True):
        argv = [self.binary("pfs-ctl"), "--config", "/dev/null", "--mgmtd", f"127.0.0.1:{self.mgmtd_port}",
                "--auth-file", secret or self.secret, *args]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"pfs-ctl {' '.join(args)} failed ({r.returncode}): {r.stderr}")
        return r

    def ctl_json(self, *args):
        return json.loads(self.ctl(*args, "--json").stdout)

    def close(self, keep=False):
        for d in self.daemons.values():
            d.stop()
        if keep:
            print(f"logs kept in {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def dump_logs(self):
        for name, d in self.daemons.items():
            print(f"----- {name} log -----\n{d.log_text()[-6000:]}", file=sys.stderr)


class LogsOnFailure:
    """unittest mixin: a failed test prints the daemons' logs (self.c)."""

    def tearDown(self):
        failed = any(e for _, e in getattr(self._outcome, "errors", []) if e) or \
            not getattr(self._outcome, "success", True)
        if failed:
            self.c.dump_logs()
