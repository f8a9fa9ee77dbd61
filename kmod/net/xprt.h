/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A transport moves whole PFS frames between this client and one server.
 * Connections (conn.c) own the request table, the receiving thread and the
 * handshake; a transport only knows how to open a channel, push a frame
 * out and pull bytes in. TCP implements it in tcp.c; RDMA plugs in beside
 * it without touching the connection or VFS code.
 */
#ifndef PFS_NET_XPRT_H
#define PFS_NET_XPRT_H

#include <linux/socket.h>
#include <linux/types.h>
#include <linux/uio.h>

struct net;
struct pfs_xprt;

struct pfs_xprt_ops {
	const char *name;
	/*
	 * Opens a channel to addr in network namespace ns within timeout_ms
	 * (-ETIMEDOUT after it). Sends will give up after send_timeout_ms
	 * without progress.
	 */
	struct pfs_xprt *(*connect)(struct net *ns,
				    const struct sockaddr_storage *addr,
				    unsigned int timeout_ms,
				    unsigned int send_timeout_ms);
	/*
	 * Sends one whole frame: the head vectors (header, body) then the
	 * bytes of data (may be NULL; not advanced). Callers serialise
	 * sends. Returns 0, or -EINTR when a fatal signal stopped it before
	 * the first byte went out (the channel is still usable), or another
	 * negative errno after which the channel's byte stream is broken.
	 */
	int (*send)(struct pfs_xprt *x, struct kvec *head, unsigned int nhead,
		    struct iov_iter *data);
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
	 * Makes every blocked and later send and recv fail at once. Any
	 * context that may sleep; may race with send and recv.
	 */
	void (*shutdown)(struct pfs_xprt *x);
	/* Frees the channel; no send or recv may be running. */
	void (*destroy)(struct pfs_xprt *x);
};

struct pfs_xprt {
	const struct pfs_xprt_ops *ops;
};

extern const struct pfs_xprt_ops pfs_tcp_ops;

#endif /* PFS_NET_XPRT_H */
