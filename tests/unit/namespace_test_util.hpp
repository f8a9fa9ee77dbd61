// Helpers for the metadata namespace tests: a namespace with a test clock,
// a target chooser, and shorthands that REQUIRE success.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "namespace.hpp"

namespace pfs::test {

using namespace pfs::meta;

inline Timespec at(int64_t sec, uint32_t nsec = 0) { return Timespec{sec, nsec}; }

// Targets 1..num_targets, as a target chooser with every target online would.
inline ChooseTargets first_targets() {
    return [](const StripePattern& p) -> Result<std::vector<uint32_t>> {
        std::vector<uint32_t> targets;
        for (uint32_t t = 1; t <= p.num_targets; ++t) targets.push_back(t);
        return targets;
    };
}

// The errno of a failed result, 0 on success.
template <class R>
int err(const R& r) {
    return r ? 0 : r.error().code;
}

struct Fs {
    static constexpr uint32_t kNode = 7;

    Namespace ns{kNode, at(1)};
    int64_t clock = 100;

    Timespec tick() { return at(++clock); }
    pfs_entry_id root() const { return ns.root(); }

    pfs_entry_id file(const pfs_entry_id& dir, const std::string& name, uint32_t mode = 0644) {
        auto r = ns.create(dir, name, mode, 1000, 100, tick(), first_targets());
        REQUIRE(r);
        return r->attr.id;
    }
    pfs_entry_id dir(const pfs_entry_id& parent, const std::string& name, uint32_t mode = 0755) {
        auto r = ns.mkdir(parent, name, mode, 1000, 100, tick());
        REQUIRE(r);
        return r->id;
    }
    Attr stat(const pfs_entry_id& id) const {
        auto r = ns.getattr(id);
        REQUIRE(r);
        return *r;
    }
    Attr stat(const pfs_entry_id& dir, const std::string& name) const {
        auto r = ns.lookup(dir, name);
        REQUIRE(r);
        return *r;
    }
    // Every name in a directory, by readdir pages of `page` entries.
    std::vector<std::string> names(const pfs_entry_id& dir, uint32_t page = 1000) const {
        std::vector<std::string> out;
        uint64_t cookie = 0;
        for (bool eof = false; !eof;) {
            auto r = ns.readdir(dir, cookie, page);
            REQUIRE(r);
            for (const auto& e : r->entries) out.push_back(e.name);
            cookie = r->next_cookie;
            eof = r->eof;
        }
        return out;
    }
};

// Another metadata server than Fs's, and an id of its inodes.
inline constexpr uint32_t kOtherNode = Fs::kNode + 1;
inline pfs_entry_id other_id(uint64_t ino) { return pfs_entry_id{ino, kOtherNode, 1}; }

}  // namespace pfs::test
