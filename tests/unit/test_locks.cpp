// The metadata server's advisory lock table (flock and POSIX ranges, as Linux
// keeps them, per client and owner), client sessions, and the wire forms of
// LOCK, GETLK and SESSION_RENEW.
#include <catch2/catch.hpp>

#include <array>
#include <random>

#include "lock_table.hpp"
#include "sessions.hpp"
#include "wire.hpp"

using namespace pfs;
using namespace pfs::meta;

namespace {

constexpr uint64_t kEof = PFS_LOCK_EOF;
constexpr uint8_t R = PFS_LOCK_READ;
constexpr uint8_t W = PFS_LOCK_WRITE;
constexpr uint8_t U = PFS_LOCK_UNLOCK;

const pfs_entry_id kFile{77, 2, 1};
const pfs_entry_id kOther{78, 2, 1};

LockOwner who(uint64_t client, uint64_t owner = 1) { return LockOwner{client, owner}; }

LockRequest posix(LockOwner o, uint8_t type, uint64_t start, uint64_t end, pfs_entry_id file = kFile) {
    return LockRequest{file, PFS_LOCK_POSIX, type, start, end, o, static_cast<uint32_t>(o.client * 100 + o.owner)};
}

LockRequest flock(LockOwner o, uint8_t type, pfs_entry_id file = kFile) {
    return LockRequest{file, PFS_LOCK_FLOCK, type, 0, kEof, o, 0};
}

int err(const Status& st) { return st ? 0 : st.error().code; }

struct Range {
    uint8_t type;
    uint64_t start, end;
    bool operator==(const Range&) const = default;
};

// One owner's POSIX locks on kFile, in order.
std::vector<Range> ranges(const LockTable& t, LockOwner o) {
    std::vector<Range> out;
    for (const auto& l : t.held(kFile, PFS_LOCK_POSIX))
        if (l.who == o) out.push_back(Range{l.type, l.start, l.end});
    return out;
}

}  // namespace

TEST_CASE("posix locks of different clients conflict where they overlap and one writes", "[locks]") {
    LockTable t;
    REQUIRE(t.set(posix(who(1), W, 0, 99)));
    CHECK(err(t.set(posix(who(2), R, 50, 60))) == -EAGAIN);
    CHECK(err(t.set(posix(who(2), W, 99, 99))) == -EAGAIN);
    CHECK(t.set(posix(who(2), W, 100, 199)));  // disjoint
    auto c = t.conflict(posix(who(3), R, 90, 150));
    REQUIRE(c);
    CHECK(c->who == who(1));  // the lowest start first
    CHECK(c->type == W);
    CHECK(c->start == 0);
    CHECK(c->end == 99);
    CHECK(c->pid == 101);
    CHECK_FALSE(t.conflict(posix(who(3), R, 200, kEof)));
    CHECK_FALSE(t.conflict(posix(who(1), W, 0, 99)));  // one's own lock never conflicts
    CHECK_FALSE(t.conflict(posix(who(2), U, 0, kEof)));

    SECTION("readers share") {
        LockTable s;
        REQUIRE(s.set(posix(who(1), R, 0, kEof)));
        CHECK(s.set(posix(who(2), R, 10, 20)));
        CHECK(err(s.set(posix(who(3), W, 15, 15))) == -EAGAIN);
        CHECK(err(s.set(posix(who(1), W, 0, 30))) == -EAGAIN);  // upgrade blocked by client 2
        CHECK(ranges(s, who(1)) == std::vector<Range>{{R, 0, kEof}});  // nothing changed
    }
    SECTION("same client, other owner conflicts; same owner never") {
        CHECK(err(t.set(posix(who(1, 2), R, 0, 0))) == -EAGAIN);
        CHECK(t.set(posix(who(1, 1), R, 0, 0)));
    }
    SECTION("a conflict message names the holder") {
        auto st = t.set(posix(who(9), W, 5, 5));
        REQUIRE_FALSE(st);
        CHECK(st.error().message.find("0000000000000001") != std::string::npos);
    }
}

TEST_CASE("posix locks of one owner merge, split and change type in place", "[locks]") {
    LockTable t;
    auto me = who(1);
    REQUIRE(t.set(posix(me, W, 0, 9)));
    REQUIRE(t.set(posix(me, W, 10, 19)));  // adjacent, same type: one lock
    CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 19}});
    REQUIRE(t.set(posix(me, W, 5, 25)));  // overlapping: extends
    CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 25}});
    REQUIRE(t.set(posix(me, R, 26, 30)));  // adjacent, other type: stays apart
    CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 25}, {R, 26, 30}});
    CHECK(t.count(1) == 2);

    SECTION("an unlock in the middle splits") {
        REQUIRE(t.set(posix(me, U, 10, 14)));
        CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 9}, {W, 15, 25}, {R, 26, 30}});
        CHECK(t.set(posix(who(2), W, 10, 14)));  // the hole is free for others
        CHECK(err(t.set(posix(who(2), W, 9, 10))) == -EAGAIN);
    }
    SECTION("downgrade and upgrade of a sub-range") {
        REQUIRE(t.set(posix(me, R, 10, 14)));
        CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 9}, {R, 10, 14}, {W, 15, 25}, {R, 26, 30}});
        CHECK(t.set(posix(who(2), R, 12, 12)));
        CHECK(err(t.set(posix(who(2), R, 9, 9))) == -EAGAIN);
        REQUIRE(t.set(posix(who(2), U, 0, kEof)));
        REQUIRE(t.set(posix(me, W, 10, 30)));  // upgrade: merges with its neighbours
        CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 30}});
        CHECK(t.count(1) == 1);
    }
    SECTION("unlock of everything, and of what is not held") {
        REQUIRE(t.set(posix(me, U, 0, kEof)));
        CHECK(ranges(t, me).empty());
        CHECK(t.count(1) == 0);
        CHECK(t.total() == 0);
        CHECK(t.set(posix(me, U, 0, kEof)));
        CHECK(t.set(posix(who(5), U, 3, 4, kOther)));
    }
    SECTION("ranges to the end of file") {
        REQUIRE(t.set(posix(me, W, 100, kEof)));
        CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 25}, {R, 26, 30}, {W, 100, kEof}});
        CHECK(err(t.set(posix(who(2), R, kEof, kEof))) == -EAGAIN);
        REQUIRE(t.set(posix(me, W, 0, kEof)));  // no overflow at the end
        CHECK(ranges(t, me) == std::vector<Range>{{W, 0, kEof}});
        REQUIRE(t.set(posix(me, U, 0, kEof - 1)));
        CHECK(ranges(t, me) == std::vector<Range>{{W, kEof, kEof}});
    }
}

TEST_CASE("flock locks are whole-file, convert, and ignore posix locks", "[locks]") {
    LockTable t;
    REQUIRE(t.set(flock(who(1), R)));
    REQUIRE(t.set(flock(who(2), R)));
    CHECK(err(t.set(flock(who(3), W))) == -EAGAIN);
    CHECK(err(t.set(flock(who(1), W))) == -EAGAIN);  // conversion blocked by the other reader
    REQUIRE(t.set(flock(who(2), U)));
    REQUIRE(t.set(flock(who(1), W)));  // now it converts
    CHECK(t.held(kFile, PFS_LOCK_FLOCK).size() == 1);
    CHECK(t.count(1) == 1);
    auto c = t.conflict(flock(who(2), R));
    REQUIRE(c);
    CHECK(c->who == who(1));
    CHECK(c->type == W);
    // flock and POSIX locks never conflict with each other (as on Linux).
    CHECK(t.set(posix(who(2), W, 0, kEof)));
    CHECK_FALSE(t.conflict(posix(who(3), R, 0, kEof, kOther)));
    CHECK(err(t.set(posix(who(3), R, 7, 7))) == -EAGAIN);
    // Another file is another lock.
    CHECK(t.set(flock(who(2), W, kOther)));
    REQUIRE(t.set(flock(who(1), R)));  // downgrade
    CHECK(t.set(flock(who(3), R)));
}

TEST_CASE("a client's locks are released all at once, and a file's when it is gone", "[locks]") {
    LockTable t;
    REQUIRE(t.set(posix(who(1, 1), W, 0, 9)));
    REQUIRE(t.set(posix(who(1, 2), W, 20, 29)));
    REQUIRE(t.set(flock(who(1, 1), W, kOther)));
    REQUIRE(t.set(posix(who(2), R, 10, 19)));
    CHECK(t.count(1) == 3);
    CHECK(t.total() == 4);
    CHECK(t.release_client(1) == 3);
    CHECK(t.count(1) == 0);
    CHECK(t.total() == 1);
    CHECK(t.set(posix(who(3), W, 0, 9)));
    CHECK(t.set(flock(who(3), W, kOther)));
    CHECK(err(t.set(posix(who(3), W, 15, 15))) == -EAGAIN);
    CHECK(t.release_client(1) == 0);

    t.release_file(kFile);
    CHECK(t.held(kFile, PFS_LOCK_POSIX).empty());
    CHECK(t.count(2) == 0);
    CHECK(t.count(3) == 1);  // its flock on the other file
    CHECK(t.release_client(3) == 1);
    CHECK(t.total() == 0);
}

TEST_CASE("one client cannot make the table hold more than its share", "[locks]") {
    LockTable t(3);
    auto me = who(1);
    REQUIRE(t.set(posix(me, W, 0, 0)));
    REQUIRE(t.set(posix(me, W, 2, 2)));
    REQUIRE(t.set(flock(me, R)));
    CHECK(err(t.set(posix(me, W, 4, 4))) == -ENOLCK);
    CHECK(err(t.set(flock(me, R, kOther))) == -ENOLCK);
    CHECK(t.set(posix(me, W, 1, 1)));  // merges into one: fewer, not more
    CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 2}});
    CHECK(t.set(flock(me, W)));  // a conversion adds nothing
    REQUIRE(t.set(posix(me, W, 10, 10)));
    CHECK(err(t.set(posix(me, U, 1, 1))) == -ENOLCK);  // the split would add one
    CHECK(ranges(t, me) == std::vector<Range>{{W, 0, 2}, {W, 10, 10}});
    CHECK(t.set(posix(who(2), W, 4, 4)));  // others have their own share

    LockTable small(10, 4);
    REQUIRE(small.set(posix(who(1), W, 0, 0)));
    REQUIRE(small.set(posix(who(2), W, 2, 2)));
    REQUIRE(small.set(flock(who(3), R)));
    REQUIRE(small.set(flock(who(4), R)));
    CHECK(err(small.set(flock(who(5), R))) == -ENOLCK);  // the whole table is bounded too
    CHECK(small.release_client(3) == 1);
    CHECK(small.total() == 3);
    CHECK(small.set(flock(who(5), R)));
    small.release_file(kFile);
    CHECK(small.total() == 0);
}

TEST_CASE("malformed lock requests are refused", "[locks]") {
    LockTable t;
    CHECK(err(t.set(posix(who(1), W, 10, 9))) == -EINVAL);
    auto bad = posix(who(1), W, 0, 1);
    bad.kind = 0;
    CHECK(err(t.set(bad)) == -EINVAL);
    bad = posix(who(1), 0, 0, 1);
    CHECK(err(t.set(bad)) == -EINVAL);
    CHECK(t.total() == 0);
}

// Random requests of four owners against a byte map: the table grants
// exactly when no other owner holds a conflicting byte, holds exactly the
// bytes the map says, and keeps each owner's locks disjoint and merged.
// Byte 64 stands for 64..EOF (requests start below 64).
TEST_CASE("posix locks agree with a byte-map model", "[locks]") {
    constexpr int kBytes = 65;
    constexpr int kOwners = 4;
    std::mt19937_64 rng(GENERATE(1, 2, 3, 4, 5));
    LockTable t;
    std::array<std::array<uint8_t, kBytes>, kOwners> model{};  // 0: none
    auto owner_of = [](int i) { return who(1 + i / 2, 1 + i % 2); };  // two clients, two owners each
    auto model_end = [](uint64_t end) { return end == kEof ? kBytes - 1 : static_cast<int>(end); };
    for (int step = 0; step < 3000; ++step) {
        int o = static_cast<int>(rng() % kOwners);
        uint8_t type = static_cast<uint8_t>(1 + rng() % 3);
        uint64_t start = rng() % 64;
        uint64_t end = rng() % 4 == 0 ? kEof : start + rng() % (64 - start);
        int s = static_cast<int>(start), e = model_end(end);
        bool blocked = false;
        for (int j = 0; j < kOwners && type != U; ++j)
            for (int b = s; b <= e && j != o; ++b)
                if (model[j][b] && (model[j][b] == W || type == W)) blocked = true;
        auto req = posix(owner_of(o), type, start, end);
        CHECK(t.conflict(req).has_value() == blocked);
        auto st = t.set(req);
        REQUIRE(bool(st) == !blocked);
        if (!blocked)
            for (int b = s; b <= e; ++b) model[o][b] = type == U ? 0 : type;
        // The table's view, owner by owner.
        for (int j = 0; j < kOwners; ++j) {
            std::array<uint8_t, kBytes> bytes{};
            auto mine = ranges(t, owner_of(j));
            for (size_t k = 0; k < mine.size(); ++k) {
                const auto& r = mine[k];
                REQUIRE(r.start <= r.end);
                if (k > 0) {
                    REQUIRE(mine[k - 1].end < r.start);  // disjoint, ordered
                    if (mine[k - 1].end + 1 == r.start) REQUIRE(mine[k - 1].type != r.type);  // merged
                }
                for (int b = static_cast<int>(r.start); b <= model_end(r.end); ++b) bytes[b] = r.type;
            }
            REQUIRE(bytes == model[j]);
        }
    }
}

TEST_CASE("sessions expire unless renewed and hand back what they held open", "[locks][sessions]") {
    using namespace std::chrono_literals;
    Sessions s(2000ms, 3);
    auto t0 = Sessions::Clock::time_point{} + 100s;
    REQUIRE(s.touch(1, t0));
    REQUIRE(s.touch(2, t0));
    s.add_open(1, kFile);
    s.add_open(1, kFile);
    s.add_open(1, kOther);
    s.add_open(9, kFile);  // no session: nothing recorded
    CHECK(s.opens(1, kFile) == 2);
    CHECK(s.opens(9, kFile) == 0);
    CHECK(s.remove_open(1, kOther));
    CHECK_FALSE(s.remove_open(1, kOther));
    CHECK_FALSE(s.remove_open(2, kFile));

    CHECK(s.expire(t0 + 2000ms).empty());  // exactly the timeout: still alive
    REQUIRE(s.touch(2, t0 + 1500ms));       // renewed
    auto gone = s.expire(t0 + 2001ms);
    REQUIRE(gone.size() == 1);
    CHECK(gone[0].client == 1);
    REQUIRE(gone[0].opens.size() == 1);
    CHECK(gone[0].opens[0].first.ino == kFile.ino);
    CHECK(gone[0].opens[0].second == 2);
    CHECK_FALSE(s.has(1));
    CHECK(s.has(2));
    CHECK(s.opens(1, kFile) == 0);
    CHECK(s.expire(t0 + 3500ms).empty());
    CHECK(s.expire(t0 + 3501ms).size() == 1);
    CHECK(s.size() == 0);

    SECTION("a touch with an older time does not move last-seen back") {
        REQUIRE(s.touch(5, t0 + 10s));
        REQUIRE(s.touch(5, t0));
        CHECK(s.expire(t0 + 11s).empty());
    }
    SECTION("end hands back the opens now") {
        REQUIRE(s.touch(4, t0));
        s.add_open(4, kOther);
        auto e = s.end(4);
        REQUIRE(e);
        CHECK(e->opens.size() == 1);
        CHECK_FALSE(s.end(4));
    }
    SECTION("the table is bounded") {
        REQUIRE(s.touch(11, t0));
        REQUIRE(s.touch(12, t0));
        REQUIRE(s.touch(13, t0));
        auto full = s.touch(14, t0);
        REQUIRE_FALSE(full);
        CHECK(full.error().code == -EUSERS);
        CHECK(s.touch(12, t0 + 1s));  // renewing a known one still works
    }
}

TEST_CASE("a session keeps its epoch while it lives, and a new one has another", "[locks][sessions]") {
    using namespace std::chrono_literals;
    Sessions s(2000ms);
    auto t0 = Sessions::Clock::time_point{} + 100s;
    CHECK(s.epoch(1) == 0);
    auto first = s.touch(1, t0);
    REQUIRE(first);
    CHECK(*first != 0);
    CHECK(s.epoch(1) == *first);
    auto again = s.touch(1, t0 + 1s);
    REQUIRE(again);
    CHECK(*again == *first);  // renewed: the same session
    auto other = s.touch(2, t0);
    REQUIRE(other);
    CHECK(*other != *first);

    SECTION("expired, the next request starts a session of another epoch") {
        REQUIRE(s.expire(t0 + 3001ms).size() == 2);
        CHECK(s.epoch(1) == 0);
        auto next = s.touch(1, t0 + 4s);
        REQUIRE(next);
        CHECK(*next != *first);
    }
    SECTION("ended, likewise") {
        REQUIRE(s.end(1));
        auto next = s.touch(1, t0 + 2s);
        REQUIRE(next);
        CHECK(*next != *first);
    }
    SECTION("another table (a restarted server) gives other epochs") {
        Sessions restarted(2000ms);
        auto after = restarted.touch(1, t0);
        REQUIRE(after);
        CHECK(*after != *first);
    }
}

TEST_CASE("lock messages round trip and refuse bad enumerations and ranges", "[locks][proto]") {
    pfs_lock_req m{kFile, PFS_LOCK_POSIX, PFS_LOCK_WRITE, 100, kEof, 0xffff888012345678ull, 4242};
    auto bytes = encode(pfs_x_lock_req, m);
    REQUIRE(bytes);
    CHECK(bytes->size() == 16 + 1 + 1 + 8 + 8 + 8 + 4);
    auto back = decode(*bytes, pfs_x_lock_req);
    REQUIRE(back);
    CHECK(back->kind == m.kind);
    CHECK(back->type == m.type);
    CHECK(back->start == m.start);
    CHECK(back->end == m.end);
    CHECK(back->owner == m.owner);
    CHECK(back->pid == m.pid);
    for (size_t n = 0; n < bytes->size(); ++n)
        CHECK_FALSE(decode(std::span(bytes->data(), n), pfs_x_lock_req));
    auto with = [&](size_t at, uint8_t v) {
        Bytes b = *bytes;
        b[at] = v;
        return decode(b, pfs_x_lock_req).ok();
    };
    CHECK_FALSE(with(16, 0));  // kind
    CHECK_FALSE(with(16, 3));
    CHECK(with(16, PFS_LOCK_FLOCK));
    CHECK_FALSE(with(17, 0));  // type
    CHECK_FALSE(with(17, 4));
    CHECK(with(17, PFS_LOCK_UNLOCK));
    m.start = 10;
    m.end = 9;
    CHECK_FALSE(decode(*encode(pfs_x_lock_req, m), pfs_x_lock_req));

    pfs_lock_conflict c{PFS_LOCK_READ, 0, 4095, 7, 0x1234abcd5678ef00ull};
    auto cb = encode(pfs_x_lock_conflict, c);
    REQUIRE(cb);
    auto cback = decode(*cb, pfs_x_lock_conflict);
    REQUIRE(cback);
    CHECK(cback->client_id == c.client_id);
    CHECK(cback->end == 4095);
    c.type = 0;
    CHECK_FALSE(decode(*encode(pfs_x_lock_conflict, c), pfs_x_lock_conflict));

    auto sb = encode(pfs_x_session, pfs_session{30000});
    REQUIRE(sb);
    CHECK(decode(*sb, pfs_x_session)->timeout_ms == 30000);
    CHECK(std::string(pfs_msg_name(PFS_MSG_LOCK)) == "LOCK");
    CHECK(std::string(pfs_msg_name(PFS_MSG_SESSION_END)) == "SESSION_END");
}
