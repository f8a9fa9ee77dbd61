"""Management cluster life cycle with real daemons on loopback: registration,
capacity, heartbeat-driven reachability, push notifications, restarts,
pools, admin consistency override, wrong secrets and corrupt state."""
import os
import pathlib
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import pfswire  # noqa: E402
from cluster import Cluster, wait_for  # noqa: E402

BIN_DIR = os.environ.get("PFS_BIN_DIR", "build")
PROBABLY_OFFLINE_MS, OFFLINE_MS, HEARTBEAT_MS = 1500, 4000, 250
SLACK_S = 2.0  # scheduling slack on a loaded 2-core CI machine
STATES_CHANGED = 1 << 3


def by_id(items, key):
    return {item[key]: item for item in items}


class ClusterLifecycle(unittest.TestCase):
    def setUp(self):
        self.c = Cluster(BIN_DIR, PROBABLY_OFFLINE_MS, OFFLINE_MS, HEARTBEAT_MS)

    def tearDown(self):
        failed = any(e for _, e in getattr(self._outcome, "errors", []) if e) or \
            not getattr(self._outcome, "success", True)
        if failed:
            self.c.dump_logs()
        self.c.close()

    def targets(self):
        return self.c.ctl_json("target", "list")["targets"]

    def nodes(self):
        return self.c.ctl_json("node", "list")["nodes"]

    def start_servers(self):
        c = self.c
        c.start_server("meta", "m1")
        c.start_server("storage", "s1", c.target_dirs("s1", 2))
        c.start_server("storage", "s2", c.target_dirs("s2", 2))

    def wait_all_online(self, count=4):
        return wait_for(f"{count} targets ONLINE and GOOD", lambda: (lambda t: len(t) == count and all(
            x["reachability"] == "ONLINE" and x["consistency"] == "GOOD" for x in t) and t)(self.targets()))

    def test_lifecycle(self):
        c = self.c
        c.start_mgmtd()
        self.start_servers()
        self.wait_all_online()
        # A target's capacity comes with its server's first heartbeat after
        # the registration that made it ONLINE.
        targets = wait_for("target capacities reported", lambda: (lambda t: all(
            x["capacity"]["bytes_total"] > 0 for x in t) and t)(self.targets()))

        # Capacities are the target file systems' own figures.
        for t in targets:
            st = os.statvfs(t["path"])
            cap = t["capacity"]
            self.assertEqual(cap["bytes_total"], st.f_blocks * st.f_frsize, t)
            self.assertLessEqual(cap["bytes_free"], cap["bytes_total"])
            self.assertAlmostEqual(cap["bytes_free"], st.f_bavail * st.f_frsize, delta=1 << 30)
            self.assertEqual(cap["inodes_total"], st.f_files)
            self.assertEqual(t["space_class"] in ("normal", "low", "emergency"), True)
        nodes = wait_for("meta capacity reported", lambda: (lambda n: all(
            x["capacity"]["bytes_total"] > 0 for x in n if x["type"] == "meta") and n)(self.nodes()))
        self.assertEqual(sorted(n["type"] for n in nodes), ["meta", "storage", "storage"])
        self.assertTrue(all(n["reachability"] == "ONLINE" for n in nodes))
        alias_of = {n["node_id"]: n["alias"] for n in nodes}
        s2_id = next(n["node_id"] for n in nodes if n["alias"] == "s2")
        ids_before = {(t["node_id"], t["path"]): t["target_id"] for t in targets}
        self.assertEqual(len(set(ids_before.values())), 4)

        # A subscriber is pushed the state changes.
        sub = pfswire.connect_authenticated(c.mgmtd_port, c.secret)
        status, _ = sub.call(pfswire.MSG["SUBSCRIBE"])
        self.assertEqual(status, 0)

        # kill -9 one storage server: its targets go PROBABLY-OFFLINE, then OFFLINE.
        c.daemons["s2"].kill9()
        killed = time.monotonic()
        seen = {}
        while "OFFLINE" not in seen:
            self.assertLess(time.monotonic() - killed, OFFLINE_MS / 1000 + SLACK_S, f"states seen: {seen}")
            for t in self.targets():
                if t["node_id"] == s2_id:
                    seen.setdefault(t["reachability"], time.monotonic() - killed)
                else:
                    self.assertEqual(t["reachability"], "ONLINE", "a healthy server's target changed state")
            time.sleep(0.05)
        self.assertIn("PROBABLY-OFFLINE", seen)
        self.assertGreaterEqual(seen["PROBABLY-OFFLINE"], (PROBABLY_OFFLINE_MS - HEARTBEAT_MS) / 1000 - 0.2)
        self.assertLessEqual(seen["PROBABLY-OFFLINE"], PROBABLY_OFFLINE_MS / 1000 + SLACK_S)
        self.assertGreaterEqual(seen["OFFLINE"], (OFFLINE_MS - HEARTBEAT_MS) / 1000 - 0.2)
        sub.sock.settimeout(5)
        changes = 0
        while not changes & STATES_CHANGED:
            msg_type, body = sub.wait_notification()
            self.assertEqual(msg_type, pfswire.MSG["MAP_CHANGED"])
            _, changes = struct.unpack("<QI", body)
        sub.close()

        # Restarted, it comes back ONLINE under the same IDs.
        c.daemons["s2"].start()
        targets = self.wait_all_online()
        self.assertEqual({(t["node_id"], t["path"]): t["target_id"] for t in targets}, ids_before)

        # Pools and admin states.
        created = c.ctl_json("pool", "create", "fast")
        fast = created["pool_id"]
        s2_targets = sorted(t["target_id"] for t in targets if t["node_id"] == s2_id)
        c.ctl("pool", "assign", "fast", *map(str, s2_targets))
        resync = min(ids_before.values())
        c.ctl("target", "set-state", str(resync), "needs-resync")
        pools = by_id(c.ctl_json("pool", "list")["pools"], "pool_id")
        self.assertEqual(sorted(pools[fast]["targets"]), s2_targets)

        # mgmtd restart: IDs, pools, membership and consistency survive.
        c.daemons["mgmtd"].stop()
        c.start_mgmtd()
        after = wait_for("targets reported again", lambda: (lambda t: len(t) == 4 and t)(self.targets()))
        self.assertEqual({(t["node_id"], t["path"]): t["target_id"] for t in after}, ids_before)
        after = by_id(after, "target_id")
        for tid in s2_targets:
            self.assertEqual(after[tid]["pool_id"], fast)
        self.assertEqual(after[resync]["consistency"], "NEEDS-RESYNC")
        self.assertEqual({n["node_id"]: n["alias"] for n in self.nodes()}, alias_of)
        pools = by_id(c.ctl_json("pool", "list")["pools"], "pool_id")
        self.assertEqual(pools[fast]["name"], "fast")
        c.ctl("target", "set-state", str(resync), "good")
        wait_for("servers heartbeating to the new mgmtd", lambda: all(
            t["reachability"] == "ONLINE" and t["last_seen_ms"] < PROBABLY_OFFLINE_MS for t in self.targets()))

    def test_wrong_secret_is_refused(self):
        c = self.c
        c.start_mgmtd()
        wrong = os.path.join(c.dir, "wrong.secret")
        Cluster.write_secret(wrong, "not-the-cluster-secret-at-all")
        r = c.ctl("node", "list", secret=wrong, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("auth", r.stderr.lower())
        # A raw peer with the wrong secret gets a refusal and then nothing.
        conn = pfswire.Conn(c.mgmtd_port)
        self.assertEqual(conn.authenticate(b"not-the-cluster-secret-at-all"), pfswire.E_AUTH)
        with self.assertRaises((ConnectionError, OSError)):
            conn.call(pfswire.MSG["GET_NODES"], b"\0\0")
        conn.close()
        wait_for("the refusal logged", lambda: "refusing connection" in c.daemons["mgmtd"].log_text())
        # A storage server with the wrong secret never registers.
        srv = c.start_server("storage", "intruder", c.target_dirs("intruder", 1), secret=wrong)
        wait_for("the server to report the refusal", lambda: "authentication refused" in srv.log_text())
        self.assertEqual(self.nodes(), [])

    def test_corrupt_state_file_stops_startup(self):
        c = self.c
        c.start_mgmtd()
        c.ctl("pool", "create", "scratch")
        c.daemons["mgmtd"].stop()
        state = os.path.join(c.dir, "mgmtd", "mgmtd.json")
        state = pathlib.Path(state)
        original = state.read_bytes()
        state.write_bytes(original.replace(b"scratch", b"scratcH"))
        argv = c.daemons["mgmtd"].argv
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("corrupt", r.stderr)
        self.assertEqual(state.read_bytes(), original.replace(b"scratch", b"scratcH"), "file was rewritten")
        state.write_bytes(original)
        c.start_mgmtd()
        names = [p["name"] for p in c.ctl_json("pool", "list")["pools"]]
        self.assertEqual(sorted(names), ["default", "scratch"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
