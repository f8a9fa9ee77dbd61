#include "rdma/verbs.hpp"

#include <cstring>
#include <mutex>

#include <nlohmann/json.hpp>

namespace pfs::rdma {

Counters& counters() {
    static Counters c;
    return c;
}

pfs_transport_stats counters_snapshot() {
    const Counters& c = counters();
    return pfs_transport_stats{c.connections, c.sends,       c.send_bytes,   c.recvs,
                               c.recv_bytes,  c.reads,       c.read_bytes,   c.writes,
                               c.write_bytes, c.bounce_bytes, c.remote_regions,
                               static_cast<uint64_t>(std::max<int64_t>(0, c.remote_regions_now))};
}

std::string counters_json() {
    const pfs_transport_stats s = counters_snapshot();
    nlohmann::json j{{"rdma_connections", s.rdma_connections}, {"sends", s.sends},
                     {"send_bytes", s.send_bytes},           {"recvs", s.recvs},
                     {"recv_bytes", s.recv_bytes},           {"rdma_reads", s.reads},
                     {"rdma_read_bytes", s.read_bytes},      {"rdma_writes", s.writes},
                     {"rdma_write_bytes", s.write_bytes},    {"bounce_bytes", s.bounce_bytes},
                     {"remote_regions", s.remote_regions},   {"remote_regions_now", s.remote_regions_now}};
    return j.dump();
}

Error verbs_error(const std::string& what, int err) {
    return Error{err ? -err : -EIO, what + ": " + std::strerror(err ? err : EIO)};
}

Result<EventChannel> make_event_channel() {
    EventChannel ch(rdma_create_event_channel());
    if (!ch) return verbs_error("rdma_create_event_channel");
    return ch;
}

void CmIdDeleter::operator()(rdma_cm_id* id) const {
    if (id->qp) rdma_destroy_qp(id);
    rdma_destroy_id(id);
}

Result<std::shared_ptr<ibv_pd>> protection_domain(ibv_context* device) {
    // Contexts of one process are per device and live as long as it does
    // (librdmacm opens each device once): a weak cache by context.
    static std::mutex lock;
    static std::map<ibv_context*, std::weak_ptr<ibv_pd>> domains;
    std::lock_guard guard(lock);
    if (auto pd = domains[device].lock()) return pd;
    ibv_pd* raw = ibv_alloc_pd(device);
    if (!raw) return verbs_error("ibv_alloc_pd");
    std::shared_ptr<ibv_pd> pd(raw, [](ibv_pd* p) { ibv_dealloc_pd(p); });
    domains[device] = pd;
    return pd;
}

Result<std::unique_ptr<LocalBuffer>> LocalBuffer::create(std::shared_ptr<ibv_pd> pd, size_t size) {
    std::unique_ptr<LocalBuffer> b(new LocalBuffer());
    b->data_ = std::make_unique<uint8_t[]>(size);
    b->size_ = size;
    b->mr_.reset(ibv_reg_mr(pd.get(), b->data_.get(), size, IBV_ACCESS_LOCAL_WRITE));
    if (!b->mr_) return verbs_error("ibv_reg_mr of " + std::to_string(size) + " local bytes");
    b->pd_ = std::move(pd);
    return b;
}

Result<std::shared_ptr<LocalBuffer>> StagingPool::take(size_t n) {
    size_t cls = 64u << 10;
    while (cls < n) cls <<= 1;
    std::unique_ptr<LocalBuffer> buf;
    if (auto& spare = (*free_)[cls]; !spare.empty()) {
        buf = std::move(spare.back());
        spare.pop_back();
    } else {
        auto made = LocalBuffer::create(pd_, cls);
        if (!made) return made.error();
        buf = std::move(*made);
    }
    std::weak_ptr<std::map<size_t, std::vector<std::unique_ptr<LocalBuffer>>>> home = free_;
    return std::shared_ptr<LocalBuffer>(buf.release(), [home, cls](LocalBuffer* b) {
        std::unique_ptr<LocalBuffer> owned(b);
        if (auto pool = home.lock(); pool && (*pool)[cls].size() < kKeep) (*pool)[cls].push_back(std::move(owned));
    });
}

Result<RemoteRegion> RemoteRegion::open(ibv_pd* pd, std::span<const uint8_t> bytes, bool peer_writes) {
    RemoteRegion r;
    const int access = peer_writes ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
    r.mr_.reset(ibv_reg_mr(pd, const_cast<uint8_t*>(bytes.data()), bytes.size(), access));
    if (!r.mr_) return verbs_error("ibv_reg_mr of " + std::to_string(bytes.size()) + " bytes for a request");
    counters().remote_regions++;
    counters().remote_regions_now++;
    return r;
}

RemoteRegion::~RemoteRegion() {
    if (mr_) counters().remote_regions_now--;
}

}  // namespace pfs::rdma
