// rdma-core objects as owned values, and what every RDMA connection of a
// process shares: one protection domain per device, the counters that tell
// which bytes went how, and locally registered buffers for bulk data.
//
// Memory a peer may touch (remote access) is only ever registered by a
// requester for one request (RemoteRegion, dropped with the request's
// ticket); everything registered here for the long run is local-only.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "result.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::rdma {

// What moved how, in this process (GET_STATS, pfs-ctl stats).
struct Counters {
    std::atomic<uint64_t> connections{0};      // established, ever
    std::atomic<uint64_t> sends{0}, send_bytes{0};
    std::atomic<uint64_t> recvs{0}, recv_bytes{0};
    std::atomic<uint64_t> reads{0}, read_bytes{0};    // RDMA READ we issued
    std::atomic<uint64_t> writes{0}, write_bytes{0};  // RDMA WRITE we issued
    std::atomic<uint64_t> remote_regions{0};          // registered for a request, ever
    std::atomic<int64_t> remote_regions_now{0};       // ... and not yet deregistered
    std::atomic<uint64_t> bounce_bytes{0};            // copied to reach registered memory
};
Counters& counters();
// The counters as GET_STATS sends them.
pfs_transport_stats counters_snapshot();
// ... and as pfs-ctl --transport-stats prints them (JSON).
std::string counters_json();

// "what: strerror(errno)" as an Error.
Error verbs_error(const std::string& what, int err = errno);

struct EventChannelDeleter {
    void operator()(rdma_event_channel* c) const { rdma_destroy_event_channel(c); }
};
using EventChannel = std::unique_ptr<rdma_event_channel, EventChannelDeleter>;
Result<EventChannel> make_event_channel();

struct CmIdDeleter {
    void operator()(rdma_cm_id* id) const;  // its QP first, if any
};
using CmId = std::unique_ptr<rdma_cm_id, CmIdDeleter>;

struct CompChannelDeleter {
    void operator()(ibv_comp_channel* c) const { ibv_destroy_comp_channel(c); }
};
using CompChannel = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;

struct CqDeleter {
    void operator()(ibv_cq* cq) const { ibv_destroy_cq(cq); }
};
using CompletionQueue = std::unique_ptr<ibv_cq, CqDeleter>;

struct MrDeleter {
    void operator()(ibv_mr* mr) const { ibv_dereg_mr(mr); }
};
using MemoryRegion = std::unique_ptr<ibv_mr, MrDeleter>;

// The protection domain of a device, shared by this process's connections
// on it (kept for as long as any of them lives).
Result<std::shared_ptr<ibv_pd>> protection_domain(ibv_context* device);

// A buffer registered for local access only: staging for bulk data, and the
// send and receive rings of a connection.
class LocalBuffer {
public:
    static Result<std::unique_ptr<LocalBuffer>> create(std::shared_ptr<ibv_pd> pd, size_t size);
    std::span<uint8_t> bytes() { return {data_.get(), size_}; }
    uint32_t lkey() const { return mr_->lkey; }
    size_t size() const { return size_; }

private:
    LocalBuffer() = default;
    std::shared_ptr<ibv_pd> pd_;
    std::unique_ptr<uint8_t[]> data_;
    size_t size_ = 0;
    MemoryRegion mr_;
};

// Local buffers for bulk data by size class, reused (a registration costs
// far more than the copy into a cached buffer): at most kKeep per class.
class StagingPool {
public:
    explicit StagingPool(std::shared_ptr<ibv_pd> pd) : pd_(std::move(pd)) {}
    // A buffer of at least n bytes, back in the pool when the last
    // reference goes (the pool must outlive it only weakly).
    Result<std::shared_ptr<LocalBuffer>> take(size_t n);

private:
    static constexpr size_t kKeep = 8;
    std::shared_ptr<ibv_pd> pd_;
    std::shared_ptr<std::map<size_t, std::vector<std::unique_ptr<LocalBuffer>>>> free_ =
        std::make_shared<std::map<size_t, std::vector<std::unique_ptr<LocalBuffer>>>>();
};

// A requester's memory, open to the peer for one request: RDMA READ of its
// data (REMOTE_READ) or RDMA WRITE of the reply's (REMOTE_WRITE).
class RemoteRegion {
public:
    static Result<RemoteRegion> open(ibv_pd* pd, std::span<const uint8_t> bytes, bool peer_writes);
    RemoteRegion() = default;
    RemoteRegion(RemoteRegion&&) = default;
    RemoteRegion& operator=(RemoteRegion&&) = default;
    ~RemoteRegion();
    uint64_t addr() const { return mr_ ? reinterpret_cast<uint64_t>(mr_->addr) : 0; }
    uint32_t rkey() const { return mr_ ? mr_->rkey : 0; }
    uint32_t length() const { return mr_ ? static_cast<uint32_t>(mr_->length) : 0; }

private:
    MemoryRegion mr_;
};

}  // namespace pfs::rdma
