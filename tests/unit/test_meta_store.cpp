// The metadata store: random namespace ops committed and recovered byte for
// byte, checkpoints, fallback from a damaged snapshot, holes refused, and
// copies of the directory taken mid-flight as crash images.
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <random>

#include "journal_test_util.hpp"
#include "meta_store.hpp"
#include "namespace_test_util.hpp"
#include "temp_dir.hpp"

using namespace pfs;
using namespace pfs::meta;
using namespace pfs::test;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kNode = 7;

Bytes snapshot_of(const Namespace& ns) {
    auto snap = ns.snapshot();
    REQUIRE(snap);
    return *snap;
}

// Random mutations over a few names, so that they collide (many fail).
class Workload {
public:
    explicit Workload(uint64_t seed) : rng_(seed) {}

    void step(Namespace& ns) {
        if (dirs_.empty()) dirs_ = nodes_ = {ns.root()};
        const Timespec now = at(++clock_);
        const pfs_entry_id dir = pick(dirs_);
        const pfs_entry_id node = pick(nodes_);
        const std::string name = some_name();
        switch (below(10)) {
            case 0:
            case 1:
                if (auto r = ns.create(dir, name, 0644, 1000, 100, now, first_targets()))
                    nodes_.push_back(r->attr.id);
                break;
            case 2:
                if (auto r = ns.mkdir(dir, name, 0755, 0, 0, now)) {
                    dirs_.push_back(r->id);
                    nodes_.push_back(r->id);
                }
                break;
            case 3: (void)ns.rename(dir, name, pick(dirs_), some_name(), 0, now); break;
            case 4: (void)ns.unlink(dir, name, now); break;
            case 5: (void)ns.rmdir(dir, name, now); break;
            case 6: {
                AttrChanges c;
                c.mode = static_cast<uint32_t>(below(01000));
                if (below(2)) c.size = below(1u << 20);
                (void)ns.setattr(node, c, now);
                break;
            }
            case 7:
                (void)ns.set_xattr(node, below(2) ? "user.a" : "user.b", std::string(below(30), 'x'), 0, now);
                break;
            case 8: (void)ns.remove_xattr(node, "user.a", now); break;
            default: (void)ns.link(node, dir, name, now); break;
        }
    }

private:
    uint64_t below(uint64_t n) { return rng_() % n; }
    std::string some_name() { return std::string(1, static_cast<char>('a' + below(6))); }
    pfs_entry_id pick(const std::vector<pfs_entry_id>& v) { return v[below(v.size())]; }

    std::mt19937_64 rng_;
    int64_t clock_ = 100;
    std::vector<pfs_entry_id> dirs_, nodes_;
};

// Copies state_dir/meta as a crash would leave it, though file by file while
// the kernel may be writing: the newest journal first, since a record in a
// journal is written only once the journals before it are complete. Temp
// files, and old files removed meanwhile, are left out.
void copy_state(const fs::path& from, const fs::path& to) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(from / "meta"))
        if (e.path().extension() != ".tmp") files.push_back(e.path());
    std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
        return a.filename().string() > b.filename().string();  // journal- after snapshot-, newest first
    });
    fs::create_directories(to / "meta");
    for (const auto& f : files) {
        std::error_code ec;
        fs::copy_file(f, to / "meta" / f.filename(), ec);
        REQUIRE((!ec || ec == std::errc::no_such_file_or_directory));
    }
}

std::vector<fs::path> files_of(const fs::path& state, std::string_view prefix) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(state / "meta"))
        if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

void flip_byte(const fs::path& path, size_t at) {
    Bytes bytes = read_bytes(path);
    REQUIRE(at < bytes.size());
    bytes[at] ^= 0x40;
    write_bytes(path, bytes);
}

// Built outside coroutines: GCC 12 destroys an aggregate temporary twice
// when it sits in a co_await expression.
Op peer_mkdir(const pfs_entry_id& root) {
    return MkdirOp{root, "peer", pfs_entry_id{1u << 20, kNode, 1}, 0700, 5, 6, {}, at(9)};
}

struct StoreEnv {
    TempDir dir;
    asio::io_context io;
    std::unique_ptr<Uring> ring = make_ring();
    MetaStoreOptions options;

    Result<std::unique_ptr<MetaStore>> try_open(const fs::path& state, uint32_t node = kNode) {
        std::optional<Result<std::unique_ptr<MetaStore>>> out;
        run_coro(io, [&]() -> awaitable<void> {
            auto opened = co_await MetaStore::open(state, node, at(1), *ring, options);
            out.emplace(std::move(opened));
        });
        return std::move(*out);
    }
    std::unique_ptr<MetaStore> open(const fs::path& state) {
        auto store = try_open(state);
        if (!store) FAIL(store.error().message);
        return std::move(*store);
    }
    std::unique_ptr<MetaStore> open() { return open(dir.path()); }

    // n steps, each durable before the next, checkpointing when the store
    // asks to; between() runs after each.
    void steps(MetaStore& store, Workload& w, int n, const std::function<void()>& between = {}) {
        run_coro(io, [&]() -> awaitable<void> {
            for (int i = 0; i < n; ++i) {
                w.step(store.ns());
                Status st = co_await store.sync();
                REQUIRE(st);
                if (store.wants_checkpoint()) st = co_await store.checkpoint();
                REQUIRE(st);
                if (between) between();
            }
        });
    }
    void checkpoint(MetaStore& store) {
        run_coro(io, [&]() -> awaitable<void> {
            Status st = co_await store.checkpoint();
            REQUIRE(st);
        });
    }
};

}  // namespace

TEST_CASE("meta store: committed ops come back after a reopen, byte for byte", "[journal]") {
    StoreEnv env;
    Workload w(1);
    auto store = env.open();
    CHECK(store->last_seq() == 0);
    const Bytes empty = snapshot_of(store->ns());
    store = env.open();  // a first start that stopped at once
    CHECK(snapshot_of(store->ns()) == empty);
    for (int round = 0; round < 3; ++round) {
        env.steps(*store, w, 200);
        const Bytes before = snapshot_of(store->ns());
        const uint64_t last = store->last_seq();
        CHECK(store->durable_seq() == last);
        store.reset();
        store = env.open();
        CHECK(store->last_seq() == last);
        CHECK(snapshot_of(store->ns()) == before);
    }
    CHECK(store->last_seq() > 200);

    // An op planned elsewhere (a peer's), committed as it is.
    const Op op = peer_mkdir(store->ns().root());
    run_coro(env.io, [&]() -> awaitable<void> {
        auto done = co_await store->commit(op);
        REQUIRE(done);
        CHECK(done->attr.uid == 5);
    });
    const Bytes with_peer = snapshot_of(store->ns());
    store = env.open();
    CHECK(snapshot_of(store->ns()) == with_peer);
    CHECK(store->ns().lookup(store->ns().root(), "peer"));
}

TEST_CASE("meta store: checkpoints keep the state and prune old files", "[journal]") {
    StoreEnv env;
    env.options.checkpoint_bytes = 2048;
    Workload w(2);
    auto store = env.open();
    uint64_t checkpoints = 0, seen = store->snapshot_seq();
    env.steps(*store, w, 500, [&] { checkpoints += std::exchange(seen, store->snapshot_seq()) != seen; });
    CHECK(checkpoints >= 5);
    // The newest snapshot and the previous one (the fallback), each with its journal.
    CHECK(files_of(env.dir.path(), "snapshot-").size() == 2);
    CHECK(files_of(env.dir.path(), "journal-").size() == 2);
    const Bytes before = snapshot_of(store->ns());
    store = env.open();
    CHECK(snapshot_of(store->ns()) == before);

    // An explicit checkpoint in the middle, then more ops.
    env.options.checkpoint_bytes = 64ull << 20;
    store = env.open();
    env.steps(*store, w, 50);
    env.checkpoint(*store);
    CHECK(store->snapshot_seq() == store->last_seq());
    env.checkpoint(*store);  // nothing new: nothing to do
    env.steps(*store, w, 50);
    const Bytes after = snapshot_of(store->ns());
    store = env.open();
    CHECK(snapshot_of(store->ns()) == after);
}

TEST_CASE("meta store: a damaged newest snapshot falls back to the previous one", "[journal]") {
    StoreEnv env;
    Workload w(3);
    auto store = env.open();
    env.steps(*store, w, 100);
    env.checkpoint(*store);
    const uint64_t previous = store->snapshot_seq();
    env.steps(*store, w, 100);
    env.checkpoint(*store);
    env.steps(*store, w, 50);
    const Bytes expected = snapshot_of(store->ns());
    const uint64_t last = store->last_seq();
    store.reset();
    const fs::path newest = files_of(env.dir.path(), "snapshot-").back();
    const size_t size = fs::file_size(newest);
    for (size_t at : {size_t{0}, size / 2, size - 30, size - 1, size}) {
        INFO("damage at " << at);
        const fs::path copy = env.dir.path() / ("copy-" + std::to_string(at));
        copy_state(env.dir.path(), copy);
        const fs::path damaged = copy / "meta" / newest.filename();
        if (at == size) fs::resize_file(damaged, size - 10);
        else flip_byte(damaged, at);
        auto reopened = env.open(copy);
        CHECK(reopened->snapshot_seq() == previous);
        CHECK(snapshot_of(reopened->ns()) == expected);
    }

    SECTION("with the previous snapshot damaged too, it refuses to start") {
        flip_byte(newest, 0);
        flip_byte(files_of(env.dir.path(), "snapshot-").front(), 10);
        auto refused = env.try_open(env.dir.path());
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == -EUCLEAN);
        CHECK_THAT(refused.error().message, Catch::Contains("no usable metadata snapshot"));
    }
    SECTION("without the previous snapshot's journal, it refuses to start") {
        flip_byte(newest, 0);
        fs::remove(files_of(env.dir.path(), "journal-").front());
        auto refused = env.try_open(env.dir.path());
        REQUIRE_FALSE(refused);
        CHECK_THAT(refused.error().message, Catch::Contains("is missing"));
    }
    SECTION("when the journals from the previous snapshot fall short of the newest, it refuses to start") {
        flip_byte(newest, 0);
        const auto journals = files_of(env.dir.path(), "journal-");
        fs::remove(journals.back());
        fs::resize_file(journals.front(), records_end(read_bytes(journals.front())) - 1);
        auto refused = env.try_open(env.dir.path());
        REQUIRE_FALSE(refused);
        CHECK_THAT(refused.error().message, Catch::Contains("reach only seq"));
    }
    SECTION("a journal beyond the end of the chain refuses to start, unless it is empty") {
        char name[64];
        std::snprintf(name, sizeof name, "journal-%020llu.log", static_cast<unsigned long long>(last + 10));
        const fs::path stray = env.dir.path() / "meta" / name;
        write_bytes(stray, {});  // a rotation that a crash interrupted: removed
        CHECK(snapshot_of(env.open(env.dir.path())->ns()) == expected);
        CHECK_FALSE(fs::exists(stray));
        // Its first batch lost but the zeros written ahead of it kept: the same.
        write_bytes(stray, Bytes(kJournalZeroAhead, 0));
        CHECK(snapshot_of(env.open(env.dir.path())->ns()) == expected);
        CHECK_FALSE(fs::exists(stray));
        Bytes record;
        append_journal_record(record, last + 11, Bytes{1});
        write_bytes(stray, record);
        auto refused = env.try_open(env.dir.path());
        REQUIRE_FALSE(refused);
        CHECK_THAT(refused.error().message, Catch::Contains("cannot be reached"));
    }
}

TEST_CASE("meta store: the only snapshot damaged refuses to start", "[journal]") {
    StoreEnv env;
    Workload w(4);
    auto store = env.open();
    env.steps(*store, w, 20);
    store.reset();
    flip_byte(files_of(env.dir.path(), "snapshot-").front(), 5);
    auto refused = env.try_open(env.dir.path());
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Contains("no usable metadata snapshot"));
}

TEST_CASE("meta store: a journaled op that does not decode or apply is refused", "[journal]") {
    StoreEnv env;
    Workload w(5);
    auto store = env.open();
    env.steps(*store, w, 30);
    const uint64_t next = store->last_seq() + 1;
    store.reset();
    const fs::path journal = files_of(env.dir.path(), "journal-").back();
    Bytes intact = read_bytes(journal);
    intact.resize(records_end(intact));
    auto bad_op = encode_op(RmdirOp{pfs_entry_id{kRootIno, kNode, 1}, "no-such-dir", at(5)});
    REQUIRE(bad_op);
    const std::pair<Bytes, std::string> cases[] = {{*bad_op, "does not apply"},
                                                   {Bytes{1, 2, 3}, "undecodable"}};
    for (const auto& [payload, why] : cases) {
        Bytes bytes = intact;
        append_journal_record(bytes, next, payload);
        write_bytes(journal, bytes);
        auto refused = env.try_open(env.dir.path());
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == -EUCLEAN);
        CHECK_THAT(refused.error().message, Catch::Contains(why));
    }
}

TEST_CASE("meta store: first starts, interrupted ones, and another node's directory", "[journal]") {
    StoreEnv env;
    const fs::path meta = env.dir.path() / "meta";
    fs::create_directories(meta);
    write_bytes(meta / "journal-00000000000000000000.log", {});  // a crash before snapshot-0
    auto store = env.open();
    CHECK(store->last_seq() == 0);
    store.reset();
    CHECK_THAT(env.try_open(env.dir.path(), kNode + 1).error().message, Catch::Contains("node 7"));

    fs::remove_all(meta);
    fs::create_directories(meta);
    Bytes record;
    append_journal_record(record, 1, Bytes{1});
    write_bytes(meta / "journal-00000000000000000000.log", record);
    CHECK_FALSE(env.try_open(env.dir.path()));
}

TEST_CASE("meta store: a failed journal write stops the store", "[journal]") {
    StoreEnv env;
    Workload w(6);
    auto store = env.open();
    env.steps(*store, w, 20);
    const Bytes acknowledged = snapshot_of(store->ns());
    {
        DiskFull full(files_of(env.dir.path(), "journal-").back());
        run_coro(env.io, [&]() -> awaitable<void> {
            REQUIRE(store->ns().mkdir(store->ns().root(), "zz", 0755, 0, 0, at(999)));
            auto st = co_await store->sync();
            REQUIRE_FALSE(st);
            CHECK(st.error().code == -ENOSPC);
        });
    }
    REQUIRE(store->failure());
    run_coro(env.io, [&]() -> awaitable<void> {
        Status synced = co_await store->sync();
        CHECK_FALSE(synced);
        Status checkpointed = co_await store->checkpoint();
        CHECK_FALSE(checkpointed);
    });
    CHECK_FALSE(store->wants_checkpoint());
    store.reset();
    store = env.open();
    CHECK(snapshot_of(store->ns()) == acknowledged);
}

TEST_CASE("meta store: a copy taken between commits reopens to the last committed op", "[journal]") {
    StoreEnv env;
    env.options.checkpoint_bytes = 4096;
    Workload w(7);
    auto store = env.open();
    std::mt19937 rng(8);
    std::vector<std::pair<fs::path, Bytes>> copies;
    env.steps(*store, w, 400, [&] {
        if (rng() % 20) return;
        const fs::path copy = env.dir.path() / ("crash-" + std::to_string(copies.size()));
        copies.emplace_back(copy, snapshot_of(store->ns()));
        copy_state(env.dir.path(), copies.back().first);
    });
    REQUIRE(copies.size() >= 10);
    for (const auto& [copy, expected] : copies) {
        INFO(copy);
        CHECK(snapshot_of(env.open(copy)->ns()) == expected);
    }
}

TEST_CASE("meta store: a copy taken with commits in flight reopens between acknowledged and applied",
          "[journal]") {
    StoreEnv env;
    env.options.checkpoint_bytes = 8192;
    auto store = env.open();
    std::map<uint64_t, Bytes> states{{0, snapshot_of(store->ns())}};
    struct Copy {
        fs::path dir;
        uint64_t durable, applied;
    };
    std::vector<Copy> copies;
    constexpr int kWorkers = 8;
    int done = 0;
    for (int i = 0; i < kWorkers; ++i)
        asio::co_spawn(env.io, [&, i]() -> awaitable<void> {
            Workload w(100 + i);
            for (int k = 0; k < 60; ++k) {
                w.step(store->ns());
                states[store->last_seq()] = snapshot_of(store->ns());
                Status synced = co_await store->sync();
                REQUIRE(synced);
                if (store->wants_checkpoint()) {
                    auto st = co_await store->checkpoint();
                    REQUIRE((st || st.error().code == -EBUSY));
                }
            }
            ++done;
        }, asio::detached);
    run_coro(env.io, [&]() -> awaitable<void> {
        std::mt19937 rng(9);
        while (done < kWorkers) {
            for (uint32_t n = rng() % 120; n > 0; --n) co_await asio::post(env.io, asio::use_awaitable);
            const fs::path copy = env.dir.path() / ("crash-" + std::to_string(copies.size()));
            copies.push_back({copy, store->durable_seq(), store->last_seq()});
            copy_state(env.dir.path(), copies.back().dir);
        }
    });
    REQUIRE(copies.size() >= 10);
    int torn = 0;
    for (const auto& c : copies) {
        auto reopened = env.open(c.dir);
        const uint64_t k = reopened->last_seq();
        INFO(c.dir << ": acknowledged " << c.durable << ", applied " << c.applied << ", recovered " << k);
        CHECK(k >= c.durable);
        CHECK(k <= c.applied);
        REQUIRE(states.count(k));
        CHECK(snapshot_of(reopened->ns()) == states[k]);
        torn += k < c.applied;
    }
    CHECK(torn > 0);  // some copies did catch ops in flight
}
