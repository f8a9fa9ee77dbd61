/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A transport moves whole PFS frames, and the bulk data of requests, between
 * this client and one server. Connections (conn.c) own the request table,
 * the receiving thread and the handshake; a transport opens a channel,
 * sends whole frames, lets the receiving thread read frame bytes, and
 * places bulk data (the pages a request names) its own way: TCP inline in
 * the frames (tcp.c), RDMA by the server's RDMA READ and WRITE against
 * memory registered for that one request (rdma.c).
 */
#ifndef PFS_NET_XPRT_H
#define PFS_NET_XPRT_H

#include <linux/socket.h>
#include <linux/types.h>
#include <linux/uio.h>

struct device;
struct net;
struct pfs_xprt;
struct pfs_rpc;
struct pfs_bulk;

struct pfs_xprt_ops {
	const char *name;
	/*
	 * Opens a channel to addr in network namespace ns within timeout_ms
	 * (-ETIMEDOUT after it), from src when given (an RDMA rail's
	 * address). Sends will give up after send_timeout_ms without
	 * progress.
	 */
	struct pfs_xprt *(*connect)(struct net *ns,
				    const struct sockaddr_storage *src,
				    const struct sockaddr_storage *addr,
				    unsigned int timeout_ms,
				    unsigned int send_timeout_ms);
	/*
	 * Sends one whole frame: the head vectors (header, blocks, body),
	 * then the bytes of data, then tail (the MAC; data and tail may be
	 * NULL; data is not advanced). Callers serialise sends. Returns 0,
	 * or -EINTR when a fatal signal stopped it before the first byte went
	 * out (the channel is still usable), or another negative errno after
	 * which the channel is broken.
	 */
	int (*send)(struct pfs_xprt *x, struct kvec *head, unsigned int nhead,
		    struct iov_iter *data, struct kvec *tail);
	/*
	 * Receives exactly iov_iter_count(to) bytes into to (advancing it),
	 * taking at most timeout jiffies in all (MAX_SCHEDULE_TIMEOUT: no
	 * limit).
	 * 0, -ETIMEDOUT, -ECONNRESET when the peer closed, or another
	 * negative errno. Only one receiver at a time. to must not be
	 * user-backed: receiving may run in a kernel thread.
	 */
	int (*recv)(struct pfs_xprt *x, struct iov_iter *to, long timeout);
	/*
	 * Bulk data (rpc->bulk): fills the request's bulk block (where its
	 * data travels, and for RDMA the segments registered for it) before
	 * the request is sent. Returns 1 when rpc->req_data travels in the
	 * frame (inline), 0 when it does not, or -errno.
	 */
	int (*bulk_map)(struct pfs_xprt *x, struct pfs_rpc *rpc,
			struct pfs_bulk *b);
	/*
	 * The request ended (replied, timed out, killed, connection lost):
	 * its memory is the caller's again, and the server can no longer
	 * reach it, when this returns. May sleep; idempotent.
	 */
	void (*bulk_unmap)(struct pfs_xprt *x, struct pfs_rpc *rpc);
	/*
	 * The len bytes of a bulk reply's data that did not travel inline:
	 * already in rpc->reply_data (RDMA WRITE); checks them and advances
	 * the iterator. NULL for transports whose bulk data is inline.
	 */
	int (*bulk_placed)(struct pfs_xprt *x, struct pfs_rpc *rpc, u32 len);
	/*
	 * Makes every blocked and later send and recv fail at once. Any
	 * context that may sleep; may race with send and recv.
	 */
	void (*shutdown)(struct pfs_xprt *x);
	/* Frees the channel; no send or recv may be running. */
	void (*destroy)(struct pfs_xprt *x);
	/*
	 * The device that DMAs for the channel (GPU memory is mapped for
	 * it), valid while the channel lives; *virt (unless NULL): it does
	 * not DMA but copies with the CPU (soft-RoCE). No such operation: the channel
	 * cannot reach GPU memory.
	 */
	struct device *(*dma_device)(struct pfs_xprt *x, bool *virt);
};

struct pfs_xprt {
	const struct pfs_xprt_ops *ops;
};

extern const struct pfs_xprt_ops pfs_tcp_ops;
#if IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
extern const struct pfs_xprt_ops pfs_rdma_ops;
#endif

#endif /* PFS_NET_XPRT_H */
