// mount.pfs: command line, client.conf, source and option translation into
// the mount(2) call (utils/mount.pfs/mount_plan.hpp).
#include "client_config.hpp"
#include "mount_plan.hpp"

#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <cerrno>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <sys/mount.h>

using namespace pfs::mount;
using pfs::Result;
using pfs::test::TempDir;

namespace {

// Deterministic names for the planning tests; real getaddrinfo has its own test.
Result<std::string> fake_resolve(const std::string& host) {
    static const std::map<std::string, std::string> kHosts = {
        {"mgmt1", "10.0.0.1"}, {"v6only", "fd00::7"}, {"10.1.2.3", "10.1.2.3"},
        {"fd00::1", "fd00::1"},
    };
    auto it = kHosts.find(host);
    if (it == kHosts.end()) return pfs::Error{-EHOSTUNREACH, "cannot resolve '" + host + "'"};
    return it->second;
}

ClientConfig config_from(const std::string& text) {
    auto c = parse_client_config(text, "client.conf");
    if (!c) FAIL(c.error().message);
    return *c;
}

Result<MountCall> plan(const std::vector<std::string>& args, const ClientConfig& config = {}) {
    auto inv = parse_command_line(args);
    if (!inv) return inv.error();
    auto opts = parse_mount_options(inv->options);
    if (!opts) return opts.error();
    return plan_mount(*inv, *opts, config, fake_resolve);
}

MountCall plan_ok(const std::vector<std::string>& args, const ClientConfig& config = {}) {
    auto call = plan(args, config);
    if (!call) FAIL(call.error().message);
    return *call;
}

}  // namespace

TEST_CASE("mount.pfs: command line in mount(8)'s order and others", "[mount]") {
    auto inv = parse_command_line({"pfs", "/mnt/pfs", "-sfnv", "-N", "1234", "-o", "ro,_netdev"});
    REQUIRE(inv.ok());
    CHECK(inv->source == "pfs");
    CHECK(inv->target == "/mnt/pfs");
    CHECK(inv->fake);
    CHECK(inv->verbose);
    CHECK(inv->ns == std::optional<std::string>("1234"));
    CHECK(inv->options == "ro,_netdev");

    // Flags first, values glued to the flag, several -o joined.
    inv = parse_command_line({"-oro", "-v", "-o", "conns=4", "-t", "pfs", "h:1", "/m"});
    REQUIRE(inv.ok());
    CHECK(inv->options == "ro,conns=4");
    CHECK_FALSE(inv->fake);
    CHECK(inv->source == "h:1");

    CHECK(parse_command_line({"--help"})->help);
    CHECK_FALSE(parse_command_line({"src"}).ok());
    CHECK_FALSE(parse_command_line({"a", "b", "c"}).ok());
    CHECK_FALSE(parse_command_line({"a", "b", "-o"}).ok());
    CHECK_FALSE(parse_command_line({"a", "b", "-x"}).ok());
    CHECK_FALSE(parse_command_line({"a", "b", "-t", "nfs"}).ok());
    // After "--" a word that looks like a flag is a path.
    inv = parse_command_line({"--", "-odd-host", "/mnt"});
    REQUIRE(inv.ok());
    CHECK(inv->source == "-odd-host");
}

TEST_CASE("mount.pfs: source forms", "[mount]") {
    CHECK(*parse_source("pfs") == Source{"", std::nullopt, true});
    CHECK(*parse_source("none") == Source{"", std::nullopt, true});
    CHECK(*parse_source("mgmt1") == Source{"mgmt1", std::nullopt, false});
    CHECK(*parse_source("mgmt1:9000") == Source{"mgmt1", 9000, false});
    CHECK(*parse_source("pfs:8008") == Source{"pfs", 8008, false});  // a host called pfs
    CHECK(*parse_source("[fd00::1]:8010") == Source{"fd00::1", 8010, false});
    CHECK(*parse_source("[fd00::1]") == Source{"fd00::1", std::nullopt, false});
    CHECK(*parse_source("fd00::1") == Source{"fd00::1", std::nullopt, false});

    for (const char* bad : {"mgmt1:", "mgmt1:0", "mgmt1:65536", "mgmt1:80x", "[fd00::1", "[]:80",
                            "[fd00::1]8008", ":8008", "host:/export", "a,b"}) {
        INFO(bad);
        auto r = parse_source(bad);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message.find(bad) != std::string::npos);
    }
}

TEST_CASE("mount.pfs: resolves localhost with getaddrinfo, IPv4 first", "[mount]") {
    auto addr = resolve_host("localhost");
    REQUIRE(addr.ok());
    CHECK(*addr == "127.0.0.1");
    CHECK(*resolve_host("::1") == "::1");
    CHECK(*resolve_host("192.0.2.9") == "192.0.2.9");

    // The real resolver inside a plan: the kernel gets a literal address.
    auto inv = parse_command_line({"localhost:8123", "/mnt"});
    REQUIRE(inv.ok());
    auto call = plan_mount(*inv, MountOptions{}, ClientConfig{}, resolve_host);
    REQUIRE(call.ok());
    CHECK(call->source == "127.0.0.1:8123");
    call = plan_mount(*parse_command_line({"[::1]", "/mnt"}), MountOptions{}, ClientConfig{},
                      resolve_host);
    REQUIRE(call.ok());
    CHECK(call->source == "[::1]:8008");
}

TEST_CASE("mount.pfs: source resolution and ports", "[mount]") {
    CHECK(plan_ok({"mgmt1", "/mnt"}).source == "10.0.0.1:8008");
    CHECK(plan_ok({"mgmt1:9000", "/mnt"}).source == "10.0.0.1:9000");
    CHECK(plan_ok({"v6only:9000", "/mnt"}).source == "[fd00::7]:9000");
    CHECK(plan_ok({"fd00::1", "/mnt"}).source == "[fd00::1]:8008");

    // "pfs" takes host and port from the config; an explicit port beats mgmtd-port.
    auto config = config_from("mgmtd-host = mgmt1\nmgmtd-port = 7000\n");
    auto call = plan_ok({"pfs", "/mnt"}, config);
    CHECK(call.source == "10.0.0.1:7000");
    CHECK(call.mgmtd_host == "mgmt1");
    CHECK(plan_ok({"mgmt1", "/mnt"}, config).source == "10.0.0.1:7000");
    CHECK(plan_ok({"mgmt1:1", "/mnt"}, config).source == "10.0.0.1:1");
    CHECK(plan_ok({"none", "/mnt"}, config_from("mgmtd-host = [fd00::1]")).source ==
          "[fd00::1]:8008");

    auto no_host = plan({"pfs", "/mnt"});
    REQUIRE_FALSE(no_host.ok());
    CHECK(no_host.error().message.find("mgmtd-host") != std::string::npos);

    auto unknown = plan({"nosuchhost", "/mnt"});
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().code == -EHOSTUNREACH);
}

TEST_CASE("mount.pfs: generic options become MS_* flags, last atime mode wins", "[mount]") {
    auto flags = [](const char* o) {
        auto r = parse_mount_options(o);
        if (!r) FAIL(r.error().message);
        return r->flags;
    };
    CHECK(flags("ro") == MS_RDONLY);
    CHECK(flags("ro,rw") == 0);
    CHECK(flags("nosuid,nodev,noexec,sync,dirsync") ==
          (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SYNCHRONOUS | MS_DIRSYNC));
    CHECK(flags("nosuid,suid,nodev,dev,noexec,exec,sync,async") == 0);
    CHECK(flags("noatime") == MS_NOATIME);
    CHECK(flags("noatime,relatime") == MS_RELATIME);
    CHECK(flags("relatime,noatime") == MS_NOATIME);
    CHECK(flags("noatime,strictatime") == MS_STRICTATIME);
    CHECK(flags("noatime,atime") == 0);
    CHECK(flags("nodiratime,lazytime") == (MS_NODIRATIME | MS_LAZYTIME));
    CHECK(flags("remount,ro") == (MS_REMOUNT | MS_RDONLY));

    CHECK(format_flags(0) == "0");
    CHECK(format_flags(MS_RDONLY | MS_NOATIME) == "MS_RDONLY|MS_NOATIME");
    CHECK(format_flags(MS_NOSUID | (1ul << 30)) == "MS_NOSUID|0x40000000");

    for (const char* bad : {"bind", "rbind", "move", "rshared", "ro,private"}) {
        INFO(bad);
        CHECK_FALSE(parse_mount_options(bad).ok());
    }
}

TEST_CASE("mount.pfs: user-space-only options never reach the kernel", "[mount]") {
    auto opts = parse_mount_options(
        "_netdev,nofail,noauto,auto,user,users,nouser,owner,group,defaults,x-systemd.automount,"
        "X-mount.mkdir,comment=systemd.automount,user=alice,config=/tmp/c.conf,conns=3,mystery");
    REQUIRE(opts.ok());
    CHECK(opts->flags == 0);
    CHECK(opts->config_path == std::optional<std::string>("/tmp/c.conf"));
    CHECK(opts->dropped.size() == 14);
    CHECK(opts->kernel == std::vector<KernelOption>{{"conns", "3"}, {"mystery", std::nullopt}});

    auto call = plan_ok({"mgmt1", "/mnt", "-o", "_netdev,x-systemd.requires=a,config=/x,ro"});
    CHECK(call.data == "secret_file=/etc/pfs/auth.secret");
    CHECK(call.flags == MS_RDONLY);
    CHECK_FALSE(parse_mount_options("config=").ok());
}

TEST_CASE("mount.pfs: command-line options override the client config", "[mount]") {
    auto config = config_from(
        "auth-file = /etc/pfs/cluster.secret\n"
        "timeout-ms = 10000\n"
        "cache = none\n"
        "conns-per-server = 4\n");
    // Config order, secret_file first; unknown kernel options appended for the
    // kernel to judge; the last of a repeated option wins.
    CHECK(plan_ok({"mgmt1", "/mnt"}, config).data ==
          "secret_file=/etc/pfs/cluster.secret,timeout=10000,cache=none,conns=4");
    auto call = plan_ok({"mgmt1", "/mnt", "-o",
                         "conns=8,secret_file=/root/s,cache=buffered,frob=1,conns=16,attr_ttl=0"},
                        config);
    CHECK(call.data ==
          "secret_file=/root/s,timeout=10000,cache=buffered,conns=16,frob=1,attr_ttl=0");
    CHECK(call.auth_file == "/root/s");

    // Without a config the helper names only the secret file: the kernel's
    // defaults rule the rest.
    CHECK(plan_ok({"mgmt1", "/mnt", "-o", "noatime"}).data == "secret_file=/etc/pfs/auth.secret");
}

TEST_CASE("mount.pfs: remount sends flags and command-line options only", "[mount]") {
    // The source is not resolved (the kernel ignores it on remount).
    auto call = plan_ok({"nosuchhost:1", "/mnt", "-o", "remount,ro,_netdev"},
                        config_from("timeout-ms = 100"));
    CHECK(call.source == "nosuchhost:1");
    CHECK(call.flags == (MS_REMOUNT | MS_RDONLY));
    CHECK(call.data.empty());
}

TEST_CASE("mount.pfs: the printed mount(2) call", "[mount]") {
    auto call = plan_ok({"mgmt1", "/mnt/my \"pfs\"", "-o", "ro,noexec,cache=none"});
    CHECK(format_mount_call(call) ==
          "mount(\"10.0.0.1:8008\", \"/mnt/my \\\"pfs\\\"\", \"pfs\", MS_RDONLY|MS_NOEXEC, "
          "\"secret_file=/etc/pfs/auth.secret,cache=none\")");
}

TEST_CASE("mount.pfs: mount(2) errors become advice and mount(8) exit codes", "[mount]") {
    auto call = plan_ok({"mgmt1:9000", "/mnt/pfs"});
    auto says = [&](int err, const char* text) {
        Failure f = explain_mount_error(err, call);
        INFO(f.message);
        CHECK(f.message.find(text) != std::string::npos);
        return f.exit_code;
    };
    CHECK(says(ENODEV, "modprobe pfs") == kExitFailure);
    CHECK(says(EACCES, "/etc/pfs/auth.secret") == kExitFailure);
    CHECK(says(EACCES, "authentication failed") == kExitFailure);
    for (int err : {ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH}) {
        CHECK(says(err, "cannot reach pfs-mgmtd at 10.0.0.1:9000 (mgmt1 port 9000)") ==
              kExitFailure);
    }
    CHECK(says(EINVAL, "see dmesg") == kExitFailure);
    CHECK(says(ENOENT, "/mnt/pfs") == kExitFailure);
    CHECK(says(EPERM, "root") == kExitUsage);
    CHECK(says(ENOMEM, "Cannot allocate memory") == kExitFailure);
}

TEST_CASE("mount.pfs: client.conf keys and values", "[mount]") {
    auto c = config_from(
        "# comment line\n"
        "\n"
        "  mgmtd-host =  mgmt1   # trailing comment\n"
        "mgmtd-port=9001\n"
        "auth-file = /etc/pfs/x.secret\n"
        "timeout-ms = 5000\n"
        "connect-timeout-ms = 700\n"
        "attr-ttl-ms = 0\n"
        "conns-per-server = 3\n"
        "cache = buffered\r\n"
        "transport = rdma\n"
        "rdma-interfaces = ib0, ib1\n");
    CHECK(c.mgmtd_host == std::optional<std::string>("mgmt1"));
    CHECK(c.mgmtd_port == 9001);
    CHECK(c.auth_file == "/etc/pfs/x.secret");
    CHECK(c.kernel_options == std::vector<KernelOption>{{"timeout", "5000"},
                                                        {"connect_timeout", "700"},
                                                        {"attr_ttl", "0"},
                                                        {"conns", "3"},
                                                        {"cache", "buffered"},
                                                        {"transport", "rdma"},
                                                        {"rails", "ib0:ib1"}});
    ClientConfig empty = config_from("");
    CHECK(empty.mgmtd_port == 8008);
    CHECK(empty.auth_file == "/etc/pfs/auth.secret");
    CHECK_FALSE(empty.mgmtd_host);
}

TEST_CASE("mount.pfs: client.conf mistakes name their line", "[mount]") {
    struct Case {
        const char* text;
        const char* where;
        const char* what;
    };
    for (const Case& t : std::vector<Case>{
             {"mgmtd-host = a\nmgmtd-hots = b\n", "c.conf:2:", "did you mean 'mgmtd-host'"},
             {"\n\n\nfrobnicate = 1\n", "c.conf:4:", "unknown key 'frobnicate'"},
             {"cache = fast\n", "c.conf:1:", "cache"},
             {"transport = ib\n", "c.conf:1:", "'auto', 'tcp' or 'rdma'"},
             {"rdma-interfaces = ib0,,ib1\n", "c.conf:1:", "empty interface name"},
             {"rdma-interfaces = ib0:1\n", "c.conf:1:", "not an interface name"},
             {"rdma-interfaces = a,b,c,d,e,f,g,h,i\n", "c.conf:1:", "at most 8"},
             {"# x\ntimeout-ms = 10s\n", "c.conf:2:", "timeout-ms"},
             {"conns-per-server = -1\n", "c.conf:1:", "conns-per-server"},
             {"attr-ttl-ms = 99999999999\n", "c.conf:1:", "attr-ttl-ms"},
             {"mgmtd-port = 0\n", "c.conf:1:", "mgmtd-port"},
             {"mgmtd-port = 70000\n", "c.conf:1:", "mgmtd-port"},
             {"mgmtd-host = mgmt1:8008\n", "c.conf:1:", "mgmtd-port"},
             {"mgmtd-host =\n", "c.conf:1:", "mgmtd-host"},
             {"auth-file = secret\n", "c.conf:1:", "absolute"},
             {"auth-file = /a,b\n", "c.conf:1:", "','"},
             {"x\nmgmtd-host\n", "c.conf:1:", "key = value"},
             {"[client]\n", "c.conf:1:", "sections"},
             {"= 3\n", "c.conf:1:", "missing key"},
             {"cache = none\n\ncache = buffered\n", "c.conf:3:", "first on line 1"},
         }) {
        INFO(t.text);
        auto r = parse_client_config(t.text, "c.conf");
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message.find(t.where) == 0);
        CHECK(r.error().message.find(t.what) != std::string::npos);
    }
}

TEST_CASE("mount.pfs: which client.conf is read", "[mount]") {
    MountOptions none;
    MountOptions named;
    named.config_path = "/srv/c.conf";
    CHECK(choose_config(none, nullptr).path == "/etc/pfs/client.conf");
    CHECK_FALSE(choose_config(none, nullptr).must_exist);
    CHECK(choose_config(none, "").path == "/etc/pfs/client.conf");
    CHECK(choose_config(none, "/env.conf").path == "/env.conf");
    CHECK(choose_config(none, "/env.conf").must_exist);
    CHECK(choose_config(named, "/env.conf").path == "/srv/c.conf");

    TempDir dir;
    const std::string missing = (dir.path() / "missing.conf").string();
    auto absent = load_client_config(missing, false);
    REQUIRE(absent.ok());
    CHECK(absent->path.empty());
    auto required = load_client_config(missing, true);
    REQUIRE_FALSE(required.ok());
    CHECK(required.error().code == -ENOENT);
    CHECK(required.error().message.find(missing) != std::string::npos);

    const std::string file = (dir.path() / "client.conf").string();
    std::ofstream(file) << "mgmtd-host = mgmt1\nbogus = 1\n";
    auto bad = load_client_config(file, false);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find(file + ":2:") == 0);
    std::ofstream(file, std::ios::trunc) << "mgmtd-host = mgmt1\n";
    auto good = load_client_config(file, true);
    REQUIRE(good.ok());
    CHECK(good->path == file);
    CHECK(good->mgmtd_host == std::optional<std::string>("mgmt1"));
}
