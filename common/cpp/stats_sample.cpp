#include "stats_sample.hpp"

#include "wire.hpp"

namespace pfs {

const pfs_msg_stats* StatsSample::type(uint16_t t) const {
    for (const auto& m : types)
        if (m.type == t) return &m;
    return nullptr;
}

uint64_t StatsSample::requests(uint16_t t) const {
    const pfs_msg_stats* row = type(t);
    return row ? row->requests : 0;
}

Result<StatsSample> decode_stats(std::span<const uint8_t> body) {
    StatsSample s;
    auto st = decode_payload(body, [&](pfs_xdr* x) {
        if (pfs_x_stats(x, &s.head)) return;
        s.types.resize(s.head.count);
        for (auto& t : s.types)
            if (pfs_x_msg_stats(x, &t)) return;
        pfs_x_transport_stats(x, &s.transport);
    });
    if (!st) return st.error();
    return s;
}

}  // namespace pfs
