/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The RDMA transport's insides, shared by rdma.c (connection, messages)
 * and rdma_bulk.c (memory registered for one request).
 *
 * Messages are the same as user space's (common/cpp/rdma/rdma_channel.hpp):
 * each SEND carries an 8-byte head (credits granted, flags: the frame goes
 * on in the next message) and up to msg_size - 8 bytes of a frame; a side
 * sends only into receive buffers the peer announced, keeps one credit
 * for announcing its own, and the connection's private data carries each
 * side's receive depth and message size.
 */
#ifndef PFS_NET_RDMA_H
#define PFS_NET_RDMA_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "xprt.h"

#define PFS_RDMA_HEAD		8
#define PFS_RDMA_MORE		1u	/* head flag: the frame goes on */
#define PFS_RDMA_HELLO_LEN	12	/* "PFSR", version, depth, msg size */
#define PFS_RDMA_DEPTH		16	/* receive buffers we post */
#define PFS_RDMA_MSG_SIZE	16384	/* bytes in one message, head included */
#define PFS_RDMA_MIN_MSG	4096
#define PFS_RDMA_MAX_DEPTH	1024
/* Registrations and invalidations in flight on the registration queue. */
#define PFS_RDMA_REG_WRS	256

struct pfs_rdma_buf {
	struct ib_cqe cqe;
	struct pfs_rdma *r;
	u32 slot;
};

/* One fast-registration MR, registering part of a request's pages. */
struct pfs_rdma_mr {
	struct list_head link;		/* in its request's list, or orphans */
	struct pfs_rdma *r;
	struct ib_mr *mr;
	bool registered;		/* REG_MR posted: invalidate before reuse */
	bool reg_seen;			/* its REG_MR's completion was waited for */
	struct ib_cqe reg_cqe, inv_cqe;
	struct completion reg_done, inv_done;
	int reg_status, inv_status;
};

struct pfs_rdma {
	struct pfs_xprt xprt;
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;

	/* connecting: the CM handler reports here */
	struct completion cm_done;
	int cm_status;
	u16 peer_depth;
	u32 peer_msg;

	wait_queue_head_t wq;		/* arrivals, credits, slots, death */
	spinlock_t lock;		/* everything below */
	bool dead;

	/* receiving: a ring of buffers, and the messages that arrived */
	u8 *recv_buf;
	u64 recv_dma;
	struct pfs_rdma_buf *recvs;
	u32 *arrived;			/* slots in arrival order (ring) */
	u32 *msg_len;			/* per slot: its message's length */
	u32 arr_head, arr_count;
	u32 front_off;			/* read position in the front message */

	/* sending */
	u8 *send_buf;
	u64 send_dma;
	struct pfs_rdma_buf *sends;
	u32 *free_send;			/* stack of free slots */
	u32 nfree;
	u32 peer_credits;
	u32 to_grant;			/* reposted, not yet announced */
	u32 sq_used, sq_max;
	long send_timeout;		/* jiffies a send may wait for credits */

	/* the port going down stops the connection at once (a rail failed) */
	struct ib_event_handler port_events;
	struct work_struct port_down;
	bool events_registered;
	struct list_head live;		/* in the list the netdev watch walks */
	bool iface_down;		/* its interface went down under it */
	struct work_struct reap;	/* destroyed once that is down */

	/*
	 * fast registration, on a queue pair of its own that never transmits
	 * (rdma_bulk.c says why); it outlives a broken connection, so that
	 * invalidations still run
	 */
	struct ib_qp *reg_qp;
	u32 reg_used, reg_max;
	bool reg_ready;			/* in RTS: drained before it goes */
	bool reg_dead;
	u32 mr_pages;			/* pages one MR can map */
	struct list_head orphans;	/* MRs whose completion may still come */
};

/* rdma.c */
void pfs_rdma_fail(struct pfs_rdma *r, const char *why);
/* Fails the connection and puts its queue pair in the error state. */
void pfs_rdma_stop(struct pfs_rdma *r, const char *why);

/* The device GPU memory is mapped for (pfs_rdma_ops.dma_device). */
struct device *pfs_rdma_dma_device(struct pfs_xprt *x, bool *virt);

/* rdma_link.c: the port and interface watch over a live connection. */
void pfs_rdma_watch(struct pfs_rdma *r);
void pfs_rdma_unwatch(struct pfs_rdma *r);
/* Tears r down once its interface is down (rdma_link.c says why). */
void pfs_rdma_destroy_later(struct pfs_rdma *r);
void pfs_rdma_teardown(struct pfs_rdma *r);

/* rdma_bulk.c */
int pfs_rdma_setup_reg_qp(struct pfs_rdma *r);
int pfs_rdma_bulk_map(struct pfs_xprt *x, struct pfs_rpc *rpc,
		      struct pfs_bulk *b);
void pfs_rdma_bulk_unmap(struct pfs_xprt *x, struct pfs_rpc *rpc);
int pfs_rdma_bulk_placed(struct pfs_xprt *x, struct pfs_rpc *rpc, u32 len);
void pfs_rdma_free_orphans(struct pfs_rdma *r);

#endif /* PFS_NET_RDMA_H */
