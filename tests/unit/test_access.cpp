// The metadata server's permission decisions (access.hpp) and whose uid a
// request stands for (client_policy.hpp), against Linux's rules.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "access.hpp"
#include "client_policy.hpp"

using namespace pfs;
using namespace pfs::meta;

namespace {

Attr file(uint32_t mode, uint32_t uid = 1000, uint32_t gid = 100) {
    Attr a;
    a.mode = S_IFREG | mode;
    a.uid = uid;
    a.gid = gid;
    return a;
}

Attr dir(uint32_t mode, uint32_t uid = 1000, uint32_t gid = 100) {
    Attr a = file(mode, uid, gid);
    a.mode = S_IFDIR | mode;
    return a;
}

int code(const Status& s) { return s ? 0 : s.error().code; }

// A POSIX ACL xattr value: version 2, then (tag, perm, id) entries.
std::string acl(std::initializer_list<std::array<uint32_t, 3>> entries) {
    std::string v;
    auto put = [&v](uint32_t x, int bytes) {
        for (int i = 0; i < bytes; ++i) v.push_back(static_cast<char>(x >> (8 * i)));
    };
    put(2, 4);
    for (const auto& e : entries) {
        put(e[0], 2);
        put(e[1], 2);
        put(e[2], 4);
    }
    return v;
}

constexpr uint32_t kNone = 0xffffffffu;
constexpr uint32_t USER_OBJ = 1, USER = 2, GROUP_OBJ = 4, GROUP = 8, MASK = 16, OTHER = 32;

const Caller alice{1000, 100, {}};
const Caller bob{2000, 200, {100}};   // in alice's group through a supplementary group
const Caller carol{3000, 300, {}};
const Caller root = Caller::superuser();

}  // namespace

TEST_CASE("access: mode bits as Linux reads them, root's exceptions", "[access]") {
    Xattrs none;
    Attr f = file(0640);
    CHECK(code(may_access(f, none, alice, R_OK | W_OK)) == 0);
    CHECK(code(may_access(f, none, alice, X_OK)) == -EACCES);
    CHECK(code(may_access(f, none, bob, R_OK)) == 0);  // a supplementary group counts
    CHECK(code(may_access(f, none, bob, W_OK)) == -EACCES);
    CHECK(code(may_access(f, none, carol, R_OK)) == -EACCES);
    // The owner class decides even when others may do more.
    Attr g = file(0077);
    CHECK(code(may_access(g, none, alice, R_OK)) == -EACCES);
    CHECK(code(may_access(g, none, carol, R_OK | W_OK | X_OK)) == 0);
    CHECK(code(may_access(file(0600), none, root, R_OK | W_OK)) == 0);
    CHECK(code(may_access(file(0600), none, root, X_OK)) == -EACCES);
    CHECK(code(may_access(file(0001), none, root, X_OK)) == 0);
    CHECK(code(may_access(dir(0), none, root, R_OK | X_OK)) == 0);
    CHECK(code(may_access(f, none, alice, 8)) == -EINVAL);
}

TEST_CASE("access: a POSIX ACL decides, its mask limits named and group entries", "[access]") {
    Attr f = file(0640);
    Xattrs x;
    // owner rw, carol rw, owning group r, mask r, others none.
    x[kAclAccess] = acl({{USER_OBJ, 6, kNone}, {USER, 6, 3000}, {GROUP_OBJ, 4, kNone}, {MASK, 4, kNone},
                         {OTHER, 0, kNone}});
    CHECK(code(may_access(f, x, carol, R_OK)) == 0);
    CHECK(code(may_access(f, x, carol, W_OK)) == -EACCES);  // masked
    CHECK(code(may_access(f, x, alice, W_OK)) == 0);        // the owner is not masked
    CHECK(code(may_access(f, x, bob, R_OK)) == 0);
    CHECK(code(may_access(f, x, Caller{4000, 400, {}}, R_OK)) == -EACCES);
    // A named group grants; in a group entry that does not grant, others'
    // bits do not apply.
    x[kAclAccess] = acl({{USER_OBJ, 6, kNone}, {GROUP_OBJ, 0, kNone}, {GROUP, 6, 300}, {MASK, 6, kNone},
                         {OTHER, 4, kNone}});
    CHECK(code(may_access(f, x, carol, R_OK | W_OK)) == 0);
    CHECK(code(may_access(f, x, bob, R_OK)) == -EACCES);
    CHECK(code(may_access(f, x, Caller{4000, 400, {}}, R_OK)) == 0);
    CHECK(code(check_acl(x[kAclAccess], false)) == 0);
}

TEST_CASE("access: malformed ACLs are refused", "[access]") {
    CHECK(code(check_acl(acl({{USER_OBJ, 7, kNone}, {GROUP_OBJ, 5, kNone}, {OTHER, 5, kNone}}), false)) == 0);
    CHECK(code(check_acl(acl({}), true)) == 0);  // an empty default ACL
    CHECK(code(check_acl(acl({}), false)) == -EINVAL);
    CHECK(code(check_acl(acl({{GROUP_OBJ, 5, kNone}, {USER_OBJ, 7, kNone}, {OTHER, 5, kNone}}), false)) == -EINVAL);
    // Named entries need a mask.
    CHECK(code(check_acl(acl({{USER_OBJ, 7, kNone}, {USER, 7, 5}, {GROUP_OBJ, 5, kNone}, {OTHER, 5, kNone}}),
                         false)) == -EINVAL);
    CHECK(code(check_acl(acl({{USER_OBJ, 8, kNone}, {GROUP_OBJ, 5, kNone}, {OTHER, 5, kNone}}), false)) == -EINVAL);
    CHECK(code(check_acl(acl({{USER_OBJ, 7, kNone}, {GROUP_OBJ, 5, kNone}}), false)) == -EINVAL);
    CHECK(code(check_acl("\x02\x00\x00\x00\x01", false)) == -EINVAL);
    CHECK(code(check_acl(std::string("\x01\x00\x00\x00", 4), true)) == -EINVAL);
}

TEST_CASE("access: sticky directories keep others' entries", "[access]") {
    Attr tmp = dir(01777, 0, 0);
    CHECK(code(may_unlink_from(tmp, 1000, alice)) == 0);
    CHECK(code(may_unlink_from(tmp, 1000, carol)) == -EPERM);
    CHECK(code(may_unlink_from(tmp, 1000, root)) == 0);
    CHECK(code(may_unlink_from(dir(01777, 3000), 1000, carol)) == 0);  // the directory's owner
    CHECK(code(may_unlink_from(dir(0777), 1000, carol)) == 0);
}

TEST_CASE("access: setattr as chmod, chown, chgrp, truncate and utimes allow it", "[access]") {
    Xattrs none;
    Attr f = file(0644);
    auto with = [](auto fill) {
        AttrChanges c;
        fill(c);
        return c;
    };
    // A hostile client: give alice's file to root, set-user-ID.
    auto c = with([](AttrChanges& c) { c.uid = 0; c.mode = 04755; });
    CHECK(code(may_setattr(f, none, carol, c, true)) == -EPERM);
    CHECK(code(may_setattr(f, none, alice, c, true)) == -EPERM);  // not even the owner gives files away
    c = with([](AttrChanges& c) { c.mode = 04755; });
    CHECK(code(may_setattr(f, none, carol, c, true)) == -EPERM);
    CHECK(code(may_setattr(f, none, alice, c, true)) == 0);
    CHECK(*c.mode == 04755);
    // chgrp: to one of the owner's groups only.
    c = with([](AttrChanges& c) { c.gid = 300; });
    CHECK(code(may_setattr(f, none, alice, c, true)) == -EPERM);
    c = with([](AttrChanges& c) { c.gid = 100; });
    CHECK(code(may_setattr(f, none, alice, c, true)) == 0);
    // chown by root drops set-user-ID, and set-group-ID with group execute.
    Attr suid = file(06755);
    c = with([](AttrChanges& c) { c.uid = 3000; });
    CHECK(code(may_setattr(suid, none, root, c, true)) == 0);
    REQUIRE(c.mode);
    CHECK(*c.mode == 0755);
    Attr sgid_no_x = file(02644);
    c = with([](AttrChanges& c) { c.gid = 0; });
    CHECK(code(may_setattr(sgid_no_x, none, root, c, true)) == 0);
    CHECK_FALSE(c.mode);  // no group execute: kept (mandatory locking mark)
    // chmod by an owner outside the file's group drops set-group-ID.
    Attr other_group = file(0644, 1000, 999);
    c = with([](AttrChanges& c) { c.mode = 02755; });
    CHECK(code(may_setattr(other_group, none, alice, c, true)) == 0);
    CHECK(*c.mode == 0755);
    // A writer (not the owner) may drop the set-ID bits, nothing more.
    Attr shared = file(06766);
    c = with([](AttrChanges& c) { c.mode = 0766; });
    CHECK(code(may_setattr(shared, none, carol, c, true)) == 0);
    c = with([](AttrChanges& c) { c.mode = 0777; });
    CHECK(code(may_setattr(shared, none, carol, c, true)) == -EPERM);
    // Truncate: write permission, or the owner.
    c = with([](AttrChanges& c) { c.size = 0; });
    CHECK(code(may_setattr(file(0444), none, alice, c, true)) == 0);
    CHECK(code(may_setattr(file(0644), none, carol, c, true)) == -EACCES);
    CHECK(code(may_setattr(file(0666), none, carol, c, true)) == 0);
    // Times: "now" for writers, explicit ones for the owner.
    c = with([](AttrChanges& c) { c.mtime = Timespec{5, 0}; });
    CHECK(code(may_setattr(file(0666), none, carol, c, false)) == -EPERM);
    CHECK(code(may_setattr(file(0666), none, carol, c, true)) == 0);
    CHECK(code(may_setattr(file(0644), none, carol, c, true)) == -EACCES);
    CHECK(code(may_setattr(file(0644), none, alice, c, false)) == 0);
}

TEST_CASE("access: xattr namespaces", "[access]") {
    Xattrs none;
    Attr f = file(0644);
    CHECK(code(may_xattr(f, none, carol, "user.x", false)) == 0);
    CHECK(code(may_xattr(f, none, carol, "user.x", true)) == -EACCES);
    CHECK(code(may_xattr(f, none, alice, "user.x", true)) == 0);
    CHECK(code(may_xattr(f, none, alice, "trusted.x", false)) == -EPERM);
    CHECK(code(may_xattr(f, none, root, "trusted.x", true)) == 0);
    CHECK(code(may_xattr(f, none, alice, "security.selinux", true)) == -EPERM);
    CHECK(code(may_xattr(f, none, alice, "security.selinux", false)) == 0);
    CHECK(code(may_xattr(f, none, carol, kAclAccess, true)) == -EPERM);
    CHECK(code(may_xattr(f, none, alice, kAclAccess, true)) == 0);
    CHECK(code(may_xattr(f, none, alice, kAclDefault, true)) == -EACCES);  // directories only
    CHECK(code(may_xattr(dir(01777), none, carol, "user.x", true)) == -EPERM);
    CHECK_FALSE(lists_xattr("trusted.x", alice));
    CHECK(lists_xattr("trusted.x", root));
    CHECK(lists_xattr("user.x", alice));
}

TEST_CASE("client policy: root is squashed outside the trusted networks", "[access]") {
    auto policy = ClientPolicy::create(ClientPolicySettings{});
    REQUIRE(policy);
    auto c = policy->caller(0, 0, {0, 5}, "127.0.0.1", auth::Role::client);
    CHECK((c.uid == 0 && c.gid == 0));
    c = policy->caller(0, 0, {0, 5}, "10.1.2.3", auth::Role::client);
    CHECK((c.uid == 65534 && c.gid == 65534));
    CHECK(c.groups == std::vector<uint32_t>{65534, 5});
    c = policy->caller(1000, 0, {0}, "10.1.2.3", auth::Role::client);
    CHECK((c.uid == 1000 && c.gid == 65534));
    c = policy->caller(1000, 100, {7}, "10.1.2.3", auth::Role::client);
    CHECK((c.uid == 1000 && c.gid == 100 && c.groups == std::vector<uint32_t>{7}));
    // Servers and admins act as they say.
    c = policy->caller(0, 0, {}, "10.1.2.3", auth::Role::admin);
    CHECK(c.uid == 0);
    c = policy->caller(0, 0, {}, "::ffff:127.0.0.1", auth::Role::client);
    CHECK(c.uid == 0);  // IPv4-mapped loopback is loopback

    ClientPolicySettings s;
    s.trusted = "10.0.0.0/8, fd00::/16";
    s.all_squash = "192.168.7.0/24";
    s.anon_uid = 99;
    s.anon_gid = 98;
    policy = ClientPolicy::create(s);
    REQUIRE(policy);
    CHECK(policy->caller(0, 0, {}, "10.200.1.1", auth::Role::client).uid == 0);
    CHECK(policy->caller(0, 0, {}, "127.0.0.1", auth::Role::client).uid == 99);
    CHECK(policy->caller(0, 0, {}, "fd00::5", auth::Role::client).uid == 0);
    c = policy->caller(1000, 100, {7}, "192.168.7.20", auth::Role::client);
    CHECK((c.uid == 99 && c.gid == 98 && c.groups.empty()));
    s.root_squash = false;
    s.trusted = "";
    policy = ClientPolicy::create(s);
    CHECK(policy->caller(0, 0, {}, "172.16.0.1", auth::Role::client).uid == 0);
    for (const char* bad : {"10.0.0.0/33", "nonsense", "10.0.0.0/", "::1/129"}) {
        s.trusted = bad;
        INFO(bad);
        CHECK_FALSE(ClientPolicy::create(s));
    }
}
