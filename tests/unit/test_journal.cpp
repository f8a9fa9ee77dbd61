// The metadata journal: CRC-32C, records surviving a reopen, group commit,
// torn and damaged tails cut, sequence gaps refused, fail-stop on a failed
// write, and rotation to a new file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>

#include "crc32c.hpp"
#include "journal.hpp"
#include "journal_test_util.hpp"
#include "temp_dir.hpp"

using namespace pfs;
using namespace pfs::meta;
using namespace pfs::test;
namespace fs = std::filesystem;

namespace {

Bytes text(std::string_view s) { return Bytes(s.begin(), s.end()); }

// Payload i: its size and bytes vary with i (some empty).
Bytes payload(uint64_t i) {
    Bytes b(i * 7 % 61);
    for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<uint8_t>(i * 31 + k);
    return b;
}

struct Replayed {
    std::vector<uint64_t> seqs;
    std::vector<Bytes> payloads;

    Journal::ReplayFn fn() {
        return [this](uint64_t seq, std::span<const uint8_t> p) -> Status {
            seqs.push_back(seq);
            payloads.emplace_back(p.begin(), p.end());
            return ok_status();
        };
    }
    // Payloads 1..n, in order.
    bool is_first(uint64_t n) const {
        if (payloads.size() != n) return false;
        for (uint64_t i = 0; i < n; ++i)
            if (seqs[i] != i + 1 || payloads[i] != payload(i + 1)) return false;
        return true;
    }
};

struct Env {
    TempDir dir;
    asio::io_context io;
    std::unique_ptr<Uring> ring = make_ring();
    fs::path path = dir.path() / "journal.log";

    std::unique_ptr<Journal> create(const fs::path& p, uint64_t first = 1) {
        auto j = Journal::create(p, first, *ring, io.get_executor());
        REQUIRE(j);
        return std::move(*j);
    }
    Result<std::unique_ptr<Journal>> open(const fs::path& p, Replayed& into, uint64_t first = 1) {
        return Journal::open(p, first, *ring, io.get_executor(), into.fn());
    }
    // Appends payloads from..to (inclusive) one after another.
    void append(Journal& j, uint64_t from, uint64_t to) {
        run_coro(io, [&]() -> awaitable<void> {
            for (uint64_t i = from; i <= to; ++i) {
                Status st = co_await j.append(payload(i));
                REQUIRE(st);
            }
        });
    }
    // A journal file holding payloads 1..n and nothing after them (the
    // zeros written ahead cut off); returns the offset of each record.
    std::vector<uint64_t> make_file(uint64_t n) {
        auto j = create(path);
        std::vector<uint64_t> offsets;
        for (uint64_t i = 1; i <= n; ++i) {
            offsets.push_back(j->file_bytes());
            append(*j, i, i);
        }
        const uint64_t end = j->file_bytes();
        j.reset();
        fs::resize_file(path, end);
        return offsets;
    }
};

}  // namespace

TEST_CASE("crc32c: known answers", "[journal]") {
    CHECK(crc32c(text("123456789")) == 0xE3069283u);
    CHECK(crc32c({}) == 0u);
    // RFC 3720 (iSCSI) test vectors.
    CHECK(crc32c(Bytes(32, 0)) == 0x8A9136AAu);
    CHECK(crc32c(Bytes(32, 0xff)) == 0x62A8AB43u);
    Bytes ascending(32);
    for (size_t i = 0; i < 32; ++i) ascending[i] = static_cast<uint8_t>(i);
    CHECK(crc32c(ascending) == 0x46DD794Eu);
    // Extending piece by piece, at every split, equals the whole.
    const Bytes all = text("The quick brown fox jumps over the lazy dog, twice over.");
    for (size_t split = 0; split <= all.size(); ++split) {
        std::span<const uint8_t> s(all);
        CHECK(crc32c_extend(crc32c(s.first(split)), s.subspan(split)) == crc32c(all));
    }
}

TEST_CASE("journal: records come back after a reopen, and appends go on after them", "[journal]") {
    Env env;
    auto j = env.create(env.path);
    env.append(*j, 1, 100);
    CHECK(j->last_seq() == 100);
    CHECK(j->durable_seq() == 100);
    j.reset();

    Replayed got;
    auto reopened = env.open(env.path, got);
    REQUIRE(reopened);
    CHECK(got.is_first(100));
    CHECK((*reopened)->recovery().cut_bytes == 0);
    // The zeros written ahead of the appends are kept, not cut.
    CHECK((*reopened)->recovery().zero_bytes > 0);
    CHECK((*reopened)->recovery().valid_bytes + (*reopened)->recovery().zero_bytes == fs::file_size(env.path));
    CHECK(fs::file_size(env.path) % kJournalZeroAhead == 0);
    env.append(**reopened, 101, 120);
    reopened->reset();

    Replayed again;
    REQUIRE(env.open(env.path, again));
    CHECK(again.is_first(120));
}

TEST_CASE("journal: a lazy record starts no batch; the next record that must be durable takes it along",
          "[journal]") {
    Env env;
    auto j = env.create(env.path);
    env.append(*j, 1, 1);
    const uint64_t batches = j->stats().batches;
    auto lazy = j->submit(payload(2), true);
    REQUIRE(lazy);
    // The loop runs dry with nothing written: no batch was started for it.
    env.io.restart();
    env.io.run();
    CHECK(j->stats().batches == batches);
    CHECK(j->durable_seq() == 1);
    // A record that must be durable: one batch, both records.
    env.append(*j, 3, 3);
    CHECK(j->stats().batches == batches + 1);
    CHECK(j->durable_seq() == 3);
    // A wait on a lazy record alone flushes it.
    auto alone = j->submit(payload(4), true);
    REQUIRE(alone);
    run_coro(env.io, [&]() -> awaitable<void> { REQUIRE(co_await j->wait(*alone)); });
    CHECK(j->stats().batches == batches + 2);
    j.reset();
    Replayed got;
    REQUIRE(env.open(env.path, got));
    REQUIRE(got.payloads.size() == 4);
    CHECK(got.payloads[1] == payload(2));
    CHECK(got.payloads[3] == payload(4));
}

TEST_CASE("journal: write_out puts records in the file ahead of their batch, never past the zeros ahead",
          "[journal]") {
    Env env;
    auto j = env.create(env.path);
    // A new file has no zeros ahead yet: its first batch writes them.
    REQUIRE(j->submit(payload(1)));
    CHECK_FALSE(j->write_out());
    run_coro(env.io, [&]() -> awaitable<void> { REQUIRE(co_await j->sync()); });
    // The loop does not run: no batch writes these two, write_out does.
    REQUIRE(j->submit(payload(2)));
    REQUIRE(j->submit(payload(3), true));
    CHECK(j->write_out());
    CHECK(j->durable_seq() == 1);
    {
        Replayed got;
        auto seen = env.open(env.path, got);
        REQUIRE(seen);
        CHECK(got.is_first(3));
    }
    // A record that reaches past the zeros is its batch's to write.
    REQUIRE(j->submit(Bytes(kJournalZeroAhead, 0x5a)));
    CHECK_FALSE(j->write_out());
    // Its batch writes all of them once the loop runs.
    run_coro(env.io, [&]() -> awaitable<void> { REQUIRE(co_await j->sync()); });
    CHECK(j->durable_seq() == 4);
    j.reset();
    Replayed got;
    REQUIRE(env.open(env.path, got));
    CHECK(got.payloads.size() == 4);
}

TEST_CASE("journal: concurrent appends share fdatasyncs", "[journal]") {
    Env env;
    auto j = env.create(env.path);
    constexpr int kAppends = 500;
    int ok = 0;
    for (int i = 1; i <= kAppends; ++i)
        asio::co_spawn(env.io, [&, i]() -> awaitable<void> {
            Status st = co_await j->append(payload(i));
            ok += st.ok();
        }, asio::detached);
    run_coro(env.io, [&]() -> awaitable<void> {
        while (ok < kAppends && !j->failure()) {
            asio::steady_timer t(env.io, std::chrono::milliseconds(1));
            co_await t.async_wait(asio::use_awaitable);
        }
    });
    CHECK(ok == kAppends);
    CHECK(j->stats().records == kAppends);
    CHECK(j->stats().syncs <= 50);  // run with -s to see the count

    // Waves: 50 writers appending 10 records each, one after another, so
    // records keep arriving while flushes are in flight.
    const uint64_t syncs_before = j->stats().syncs;
    int writers_done = 0;
    for (int w = 0; w < 50; ++w)
        asio::co_spawn(env.io, [&, w]() -> awaitable<void> {
            for (int k = 0; k < 10; ++k) {
                Status st = co_await j->append(payload(1000 + w * 10 + k));
                REQUIRE(st);
            }
            ++writers_done;
        }, asio::detached);
    run_coro(env.io, [&]() -> awaitable<void> {
        while (writers_done < 50) {
            asio::steady_timer t(env.io, std::chrono::milliseconds(1));
            co_await t.async_wait(asio::use_awaitable);
        }
    });
    CHECK(j->stats().syncs - syncs_before <= 100);
    j.reset();
    Replayed got;
    REQUIRE(env.open(env.path, got));
    CHECK(got.payloads.size() == 1000);
}

TEST_CASE("journal: a torn last record is cut at every byte offset", "[journal]") {
    Env env;
    const auto offsets = env.make_file(5);
    const Bytes whole = read_bytes(env.path);
    const uint64_t last = offsets.back();
    REQUIRE(whole.size() - last > kJournalHeaderSize);
    const fs::path torn = env.dir.path() / "torn.log";
    for (uint64_t cut = last; cut < whole.size(); ++cut) {
        INFO("cut at " << cut);
        write_bytes(torn, std::span<const uint8_t>(whole).first(cut));
        Replayed got;
        auto j = env.open(torn, got);
        REQUIRE(j);
        CHECK(got.is_first(4));
        CHECK((*j)->recovery().cut_bytes == cut - last);
        CHECK((*j)->recovery().valid_bytes == last);
        CHECK(fs::file_size(torn) == last);
        if (cut == last + 3) {  // appends continue where the intact records end
            env.append(**j, 5, 5);
            j->reset();
            Replayed again;
            REQUIRE(env.open(torn, again));
            CHECK(again.is_first(5));
        }
    }
}

TEST_CASE("journal: a damaged record is cut with everything after it", "[journal]") {
    Env env;
    const auto offsets = env.make_file(6);
    const Bytes whole = read_bytes(env.path);
    const fs::path damaged = env.dir.path() / "damaged.log";
    // Every byte of record 3, header and payload.
    for (uint64_t at = offsets[2]; at < offsets[3]; ++at) {
        INFO("byte " << at);
        Bytes bytes = whole;
        bytes[at] ^= 0x20;
        write_bytes(damaged, bytes);
        Replayed got;
        auto j = env.open(damaged, got);
        REQUIRE(j);
        CHECK(got.is_first(2));
        CHECK((*j)->recovery().cut_bytes == whole.size() - offsets[2]);
        CHECK(!(*j)->recovery().cut_reason.empty());
        CHECK(fs::file_size(damaged) == offsets[2]);
    }
}

TEST_CASE("journal: garbage after the records is cut", "[journal]") {
    Env env;
    env.make_file(3);
    const Bytes whole = read_bytes(env.path);
    std::mt19937 rng(7);
    std::vector<Bytes> tails{Bytes(1, 0xC5), Bytes(15, 0xff)};
    for (int n : {1, 16, 17, 100, 5000}) {
        Bytes random(static_cast<size_t>(n));
        for (auto& b : random) b = static_cast<uint8_t>(rng());
        tails.push_back(random);
    }
    // A plausible header: the right tag, a small length, the next seq, a wrong checksum.
    Bytes fake;
    append_journal_record(fake, 4, payload(4));
    fake[0] ^= 1;
    tails.push_back(fake);
    for (const Bytes& tail : tails) {
        INFO("tail of " << tail.size() << " bytes");
        Bytes bytes = whole;
        bytes.insert(bytes.end(), tail.begin(), tail.end());
        write_bytes(env.path, bytes);
        Replayed got;
        auto j = env.open(env.path, got);
        REQUIRE(j);
        CHECK(got.is_first(3));
        CHECK((*j)->recovery().cut_bytes == tail.size());
        CHECK(fs::file_size(env.path) == whole.size());
    }
}

TEST_CASE("journal: appends go over zeros written ahead; zeros end a file cleanly", "[journal]") {
    Env env;
    auto j = env.create(env.path);
    env.append(*j, 1, 10);
    CHECK(fs::file_size(env.path) == kJournalZeroAhead);
    // A record that reaches past the zeros writes the next ones with it.
    run_coro(env.io, [&]() -> awaitable<void> {
        const Bytes big(kJournalZeroAhead - 100, 0x5a);
        Status st = co_await j->append(big);
        REQUIRE(st);
        st = co_await j->append(payload(12));
        REQUIRE(st);
    });
    const uint64_t end = j->file_bytes();
    CHECK(end > kJournalZeroAhead);
    CHECK(fs::file_size(env.path) == 2 * kJournalZeroAhead);
    j.reset();
    const Bytes whole = read_bytes(env.path);
    CHECK(std::all_of(whole.begin() + static_cast<ptrdiff_t>(end), whole.end(), [](uint8_t b) { return b == 0; }));

    Replayed got;
    auto reopened = env.open(env.path, got);
    REQUIRE(reopened);
    CHECK(got.payloads.size() == 12);
    CHECK((*reopened)->recovery().cut_bytes == 0);
    CHECK((*reopened)->recovery().cut_reason.empty());
    CHECK((*reopened)->recovery().valid_bytes == end);
    CHECK((*reopened)->recovery().zero_bytes == 2 * kJournalZeroAhead - end);
    // Appends after the reopen go over the same zeros.
    env.append(**reopened, 13, 20);
    CHECK(fs::file_size(env.path) == 2 * kJournalZeroAhead);
    reopened->reset();

    SECTION("all come back") {
        Replayed again;
        REQUIRE(env.open(env.path, again));
        CHECK(again.payloads.size() == 20);
    }
    SECTION("anything but zeros after them is cut, the zeros with it") {
        Bytes bytes = read_bytes(env.path);
        bytes.back() = 1;
        write_bytes(env.path, bytes);
        Replayed again;
        auto j2 = env.open(env.path, again);
        REQUIRE(j2);
        CHECK(again.payloads.size() == 20);
        CHECK((*j2)->recovery().cut_bytes == 2 * kJournalZeroAhead - (*j2)->recovery().valid_bytes);
        CHECK((*j2)->recovery().zero_bytes == 0);
        CHECK(fs::file_size(env.path) == (*j2)->recovery().valid_bytes);
    }
}

TEST_CASE("journal: intact records out of sequence are corruption, not a torn tail", "[journal]") {
    Env env;
    auto file_of = [](std::initializer_list<uint64_t> seqs) {
        Bytes out;
        for (uint64_t s : seqs) append_journal_record(out, s, payload(s));
        return out;
    };
    for (const Bytes& bytes : {file_of({1, 2, 4}), file_of({2, 3}), file_of({1, 2, 2}), file_of({1, 3, 2})}) {
        write_bytes(env.path, bytes);
        Replayed got;
        auto j = env.open(env.path, got);
        REQUIRE_FALSE(j);
        CHECK(j.error().code == -EUCLEAN);
        CHECK_THAT(j.error().message, Catch::Contains("was expected"));
        CHECK(fs::file_size(env.path) == bytes.size());  // nothing cut
    }
    // A first record other than the one the caller expects.
    write_bytes(env.path, file_of({1, 2}));
    Replayed got;
    CHECK_FALSE(env.open(env.path, got, 5));
    CHECK(env.open(env.path, got, 1));
}

TEST_CASE("journal: a replay error aborts the open", "[journal]") {
    Env env;
    env.make_file(3);
    auto j = Journal::open(env.path, 1, *env.ring, env.io.get_executor(), [](uint64_t seq, auto) -> Status {
        if (seq == 2) return Error{-EINVAL, "bad op"};
        return ok_status();
    });
    REQUIRE_FALSE(j);
    CHECK_THAT(j.error().message, Catch::Contains("bad op") && Catch::Contains("seq 2"));
}

TEST_CASE("journal: a failed write fails its batch and stops the journal", "[journal]") {
    Env env;
    auto j = env.create(env.path);
    env.append(*j, 1, 10);
    DiskFull full(env.path);

    std::vector<int> codes;
    for (int i = 11; i <= 30; ++i)
        asio::co_spawn(env.io, [&, i]() -> awaitable<void> {
            auto st = co_await j->append(payload(i));
            codes.push_back(st ? 0 : st.error().code);
        }, asio::detached);
    run_coro(env.io, [&]() -> awaitable<void> {
        while (codes.size() < 20) {
            asio::steady_timer t(env.io, std::chrono::milliseconds(1));
            co_await t.async_wait(asio::use_awaitable);
        }
    });
    CHECK(codes == std::vector<int>(20, -ENOSPC));
    REQUIRE(j->failure());
    CHECK(j->durable_seq() == 10);

    // The file is back, but the journal stays stopped: nothing is retried.
    full.restore();
    run_coro(env.io, [&]() -> awaitable<void> {
        auto st = co_await j->append(payload(31));
        CHECK_FALSE(st);
    });
    CHECK_FALSE(j->submit(payload(32)));
    j.reset();
    Replayed got;
    REQUIRE(env.open(env.path, got));
    CHECK(got.is_first(10));
}

TEST_CASE("journal: rotation sends later records to a new file, written after the old", "[journal]") {
    Env env;
    auto j = env.create(env.path);
    const fs::path next = env.dir.path() / "journal-5.log";
    run_coro(env.io, [&]() -> awaitable<void> {
        for (uint64_t i = 1; i <= 5; ++i) REQUIRE(j->submit(payload(i)));
        REQUIRE(j->rotate(next));
        for (uint64_t i = 6; i <= 9; ++i) REQUIRE(j->submit(payload(i)));
        CHECK(j->durable_seq() == 0);  // nothing written yet: all in this turn
        Status synced = co_await j->sync();
        REQUIRE(synced);
        CHECK(j->durable_seq() == 9);
    });
    CHECK_FALSE(j->rotate(next));  // exists
    j.reset();
    Replayed first, second;
    REQUIRE(env.open(env.path, first));
    CHECK(first.is_first(5));
    REQUIRE(env.open(next, second, 6));
    CHECK(second.seqs == std::vector<uint64_t>{6, 7, 8, 9});
}

TEST_CASE("journal: oversized records and unknown seqs are refused without stopping it", "[journal]") {
    Env env;
    auto j = env.create(env.path);
    Bytes huge(kJournalMaxPayload + 1);
    auto seq = j->submit(huge);
    REQUIRE_FALSE(seq);
    CHECK(seq.error().code == -EMSGSIZE);
    run_coro(env.io, [&]() -> awaitable<void> {
        auto st = co_await j->wait(7);
        CHECK(st.error().code == -EINVAL);
        st = co_await j->append(payload(1));
        REQUIRE(st);
    });
    CHECK(j->durable_seq() == 1);
    CHECK_FALSE(j->failure());
}
