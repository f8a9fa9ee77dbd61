// A hostile RDMA peer for the guest tests: it connects to a PFS server over
// rdma_cm and breaks the RDMA transport's rules on purpose. Exit status 0
// means the server did what it must: dropped this connection (and nothing
// else broke; the test checks the server with a well-behaved client after).
//
//   pfs-rdma-peer MODE HOST PORT [AUTH_FILE TARGET]
//
//   garbage     messages of random bytes right after the connection
//   credits     a message granting 60000 credits
//   nohead      a message shorter than the transport's head
//   flood       far more messages than the server granted credits for
//   outside     authenticated, a chunk of TARGET written honestly, then
//               CHUNK_READ and CHUNK_WRITE whose bulk segments point past
//               the memory registered for them
//   badkey      the same with an rkey nobody registered
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <poll.h>
#include <netdb.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "handshake.hpp"
#include "log.hpp"
#include "rdma/rdma_channel.hpp"
#include "rdma/rdma_transport.hpp"

using namespace pfs;

namespace {

int usage() {
    std::fputs("usage: pfs-rdma-peer garbage|credits|nohead|flood|outside|badkey HOST PORT [AUTH_FILE TARGET]\n",
               stderr);
    return 2;
}

// Blocks until the next CM event of id's channel; its type.
rdma_cm_event_type next_event(rdma_event_channel* ch, std::optional<rdma::Params>* hello = nullptr) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ch, &ev)) return RDMA_CM_EVENT_CONNECT_ERROR;
    auto type = ev->event;
    if (hello) *hello = rdma::decode_hello(ev->param.conn.private_data, ev->param.conn.private_data_len);
    rdma_ack_cm_event(ev);
    return type;
}

// The raw modes: a queue pair of our own, messages we make up.
int raw(const std::string& mode, const std::string& host, uint16_t port) {
    rdma_event_channel* ch = rdma_create_event_channel();
    rdma_cm_id* id = nullptr;
    if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP)) return 3;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), nullptr, &res)) return 3;
    if (rdma_resolve_addr(id, nullptr, res->ai_addr, 5000) || next_event(ch) != RDMA_CM_EVENT_ADDR_RESOLVED) return 3;
    if (rdma_resolve_route(id, 5000) || next_event(ch) != RDMA_CM_EVENT_ROUTE_RESOLVED) return 3;
    ibv_pd* pd = ibv_alloc_pd(id->verbs);
    ibv_cq* cq = ibv_create_cq(id->verbs, 4096, nullptr, nullptr, 0);
    ibv_qp_init_attr attr{};
    attr.send_cq = attr.recv_cq = cq;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = 2048;
    attr.cap.max_recv_wr = 16;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    if (!pd || !cq || rdma_create_qp(id, pd, &attr)) return 3;
    static uint8_t buf[64 << 10];
    ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    auto hello = rdma::encode_hello(rdma::default_params());
    rdma_conn_param param{};
    param.private_data = hello.data();
    param.private_data_len = static_cast<uint8_t>(hello.size());
    param.retry_count = 7;
    param.rnr_retry_count = 1;  // do not retry for ever against a full receive queue
    if (!mr || rdma_connect(id, &param) || next_event(ch) != RDMA_CM_EVENT_ESTABLISHED) {
        std::fputs("pfs-rdma-peer: cannot connect\n", stderr);
        return 3;
    }
    std::mt19937 rng(42);
    auto send = [&](uint32_t len) {
        ibv_sge sge{reinterpret_cast<uint64_t>(buf), len, mr->lkey};
        ibv_send_wr wr{}, *bad = nullptr;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        return ibv_post_send(id->qp, &wr, &bad) == 0;
    };
    int messages = 1;
    if (mode == "garbage") {
        for (auto& b : buf) b = static_cast<uint8_t>(rng());
        messages = 4;
    } else if (mode == "credits") {
        std::memset(buf, 0, 64);
        buf[0] = 0x60;  // 60000 credits, little-endian
        buf[1] = 0xea;
    } else if (mode == "nohead") {
        buf[0] = 1;
    } else if (mode == "flood") {
        std::memset(buf, 0, sizeof buf);
        messages = 1000;  // a valid head, a frame that never ends
        buf[2] = 1;       // more: the frame goes on
    } else {
        return usage();
    }
    const uint32_t len = mode == "nohead" ? 3 : mode == "flood" ? 512 : 1024;
    int posted = 0;
    for (int i = 0; i < messages; ++i) posted += send(len) ? 1 : 0;
    // The server drops us: our sends fail (RNR, retries exceeded) or the
    // connection reports DISCONNECTED; either within a few seconds.
    bool dropped = false;
    for (int waited = 0; waited < 300 && !dropped; ++waited) {
        ibv_wc wc[64];
        int n = ibv_poll_cq(cq, 64, wc);
        for (int i = 0; i < n; ++i)
            if (wc[i].status != IBV_WC_SUCCESS) dropped = true;
        pollfd p{ch->fd, POLLIN, 0};
        if (!dropped && poll(&p, 1, 100) > 0 && next_event(ch) == RDMA_CM_EVENT_DISCONNECTED) dropped = true;
    }
    std::printf("%s: posted %d messages, %s\n", mode.c_str(), posted, dropped ? "dropped" : "still connected");
    return dropped ? 0 : 1;
}

// An authenticated RDMA channel to host:port, or nothing.
awaitable<std::shared_ptr<rdma::RdmaChannel>> open_channel(asio::io_context& io, const std::string& host,
                                                          uint16_t port, const auth::Secret& secret) {
    auto ch = co_await rdma::connect(io.get_executor(), host, port, std::chrono::seconds(10));
    if (!ch) {
        std::fprintf(stderr, "pfs-rdma-peer: %s\n", ch.error().message.c_str());
        co_return nullptr;
    }
    auto auth = co_await client_handshake(*ch, secret, auth::Role::client, MacWish::if_required, std::chrono::seconds(10));
    if (!auth) {
        std::fprintf(stderr, "pfs-rdma-peer: %s\n", auth.error().message.c_str());
        co_return nullptr;
    }
    co_return std::dynamic_pointer_cast<rdma::RdmaChannel>(*ch);
}

// A chunk request whose bulk segment claims 1 MiB of 4 KiB registered (or
// names a key nobody registered): true when the server dropped the
// connection instead of answering.
awaitable<bool> lie(rdma::RdmaChannel& ch, const std::string& mode, uint16_t type, uint32_t target) {
    static uint8_t mem[4096];
    ibv_mr* mr = ibv_reg_mr(ch.cm_id()->pd, mem, sizeof mem,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
    if (!mr) co_return false;
    const uint32_t len = 1 << 20;
    pfs_bulk_seg seg{reinterpret_cast<uint64_t>(mem), mode == "badkey" ? mr->rkey ^ 0x5a5a5a : mr->rkey, len};
    pfs_bulk block{};
    block.place = PFS_BULK_RDMA;
    if (type == PFS_MSG_CHUNK_WRITE) {
        block.in_len = len;
        block.nin = 1;
        block.in[0] = seg;
    } else {
        block.out_len = len;
        block.nout = 1;
        block.out[0] = seg;
    }
    pfs_chunk_io body{pfs_chunk_ref{pfs_entry_id{77, 1, 0}, target}, 0, len};
    ch.send(make_header(type, PFS_FLAG_BULK, 7), encode_bulk(block), *encode(pfs_x_chunk_io, body));
    auto reply = co_await ch.read_frame();
    ibv_dereg_mr(mr);
    if (reply) {
        std::printf("%s: %s answered (flags %u), not dropped\n", mode.c_str(), pfs_msg_name(type),
                    reply->header.flags);
        co_return false;
    }
    std::printf("%s: %s: dropped (%s)\n", mode.c_str(), pfs_msg_name(type), reply.error().message.c_str());
    co_return true;
}

int bulk(const std::string& mode, const std::string& host, uint16_t port, const std::string& auth_file,
         uint32_t target) {
    auto secret = auth::Secret::load(auth_file);
    if (!secret) {
        std::fprintf(stderr, "pfs-rdma-peer: %s\n", secret.error().message.c_str());
        return 3;
    }
    asio::io_context io;
    int rc = 3;
    asio::co_spawn(io, [&]() -> awaitable<void> {
        // A chunk with data to read, written the honest way.
        auto ch = co_await open_channel(io, host, port, *secret);
        if (!ch) co_return;
        Bytes data(1 << 20, 0x5a);
        pfs_chunk_io body{pfs_chunk_ref{pfs_entry_id{77, 1, 0}, target}, 0, static_cast<uint32_t>(data.size())};
        auto ticket = ch->send_request(make_header(PFS_MSG_CHUNK_WRITE, 0, 5), {}, *encode(pfs_x_chunk_io, body),
                                       Bulk{data, {}});
        if (!ticket) co_return;
        auto written = co_await ch->read_frame();
        auto status = written ? decode_reply(written->payload) : Result<Reply>(written.error());
        if (!status || status->status != PFS_OK) {
            std::fprintf(stderr, "pfs-rdma-peer: the honest CHUNK_WRITE failed\n");
            co_return;
        }
        ticket->reset();
        rc = co_await lie(*ch, mode, PFS_MSG_CHUNK_READ, target) ? 0 : 1;
        if (rc) co_return;
        ch = co_await open_channel(io, host, port, *secret);
        if (!ch) {
            rc = 3;
            co_return;
        }
        rc = co_await lie(*ch, mode, PFS_MSG_CHUNK_WRITE, target) ? 0 : 1;
    }, asio::detached);
    io.run_for(std::chrono::seconds(60));
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    log::set_component("pfs-rdma-peer");
    if (argc < 4) return usage();
    const std::string mode = argv[1], host = argv[2];
    const auto port = static_cast<uint16_t>(std::stoi(argv[3]));
    if (mode == "outside" || mode == "badkey")
        return argc < 6 ? usage() : bulk(mode, host, port, argv[4], static_cast<uint32_t>(std::stoul(argv[5])));
    return raw(mode, host, port);
}
