// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport: one reliable-connected queue pair per connection,
 * set up through the in-kernel rdma_cm, carrying frames as SEND messages
 * with credit-based flow control (rdma.h), and bulk data by the server's
 * RDMA READ and WRITE against memory registered for one request
 * (rdma_bulk.c).
 *
 * The receiving thread reads frame bytes out of the receive buffers in
 * arrival order; a buffer it empties is reposted and its credit announced
 * with the next frame sent, or in a message of its own once half the
 * depth waits. Senders wait (killable, bounded by the send timeout) for a
 * credit and a send buffer; one credit is always kept for announcing
 * ours. Completions run on the CQ's workqueue and only take the lock.
 * Whatever goes wrong (a failed completion, a disconnect, a peer breaking
 * the message rules) kills the connection: every waiter wakes and fails.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/uio.h>
#include <asm/unaligned.h>

#include "net_int.h"
#include "rdma.h"

#define PFS_RDMA_RESOLVE_MS	5000
#define PFS_RDMA_ACK_TIMEOUT	19

static struct pfs_rdma *pfs_rdma(struct pfs_xprt *x)
{
	return container_of(x, struct pfs_rdma, xprt);
}

void pfs_rdma_fail(struct pfs_rdma *r, const char *why)
{
	unsigned long flags;
	bool first;

	spin_lock_irqsave(&r->lock, flags);
	first = !r->dead;
	r->dead = true;
	spin_unlock_irqrestore(&r->lock, flags);
	if (first)
		pr_debug("rdma connection failed: %s\n", why);
	wake_up_all(&r->wq);
}

void pfs_rdma_stop(struct pfs_rdma *r, const char *why)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	pfs_rdma_fail(r, why);
	if (r->qp)
		ib_modify_qp(r->qp, &attr, IB_QP_STATE);
}

static bool pfs_rdma_is_dead(struct pfs_rdma *r)
{
	return READ_ONCE(r->dead);
}

/* ---- connection manager ---- */

static void pfs_rdma_hello(u8 *p, u16 depth, u32 msg)
{
	memcpy(p, "PFSR", 4);
	put_unaligned_le16(1, p + 4);
	put_unaligned_le16(depth, p + 6);
	put_unaligned_le32(msg, p + 8);
}

static int pfs_rdma_cm_handler(struct rdma_cm_id *id,
			       struct rdma_cm_event *ev)
{
	struct pfs_rdma *r = id->context;
	const u8 *p = ev->param.conn.private_data;
	int err;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		err = rdma_resolve_route(id, PFS_RDMA_RESOLVE_MS);
		if (err) {
			r->cm_status = err;
			complete(&r->cm_done);
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		r->cm_status = 0;
		complete(&r->cm_done);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		/* The server's depth and message size, no larger than ours. */
		r->cm_status = -EPROTO;
		if (p && ev->param.conn.private_data_len >= PFS_RDMA_HELLO_LEN &&
		    !memcmp(p, "PFSR", 4) && get_unaligned_le16(p + 4) == 1) {
			r->peer_depth = get_unaligned_le16(p + 6);
			r->peer_msg = get_unaligned_le32(p + 8);
			if (r->peer_depth >= 2 &&
			    r->peer_depth <= PFS_RDMA_DEPTH &&
			    r->peer_msg >= PFS_RDMA_MIN_MSG &&
			    r->peer_msg <= PFS_RDMA_MSG_SIZE)
				r->cm_status = 0;
		}
		complete(&r->cm_done);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		r->cm_status = -EHOSTUNREACH;
		complete(&r->cm_done);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_REJECTED:
		r->cm_status = -ECONNREFUSED;
		complete(&r->cm_done);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		/* The owner tears down; the id must not go from here. */
		pfs_rdma_fail(r, rdma_event_msg(ev->event));
		break;
	default:
		break;
	}
	return 0;
}

/* ---- receiving ---- */

static u8 *pfs_rdma_recv_msg(struct pfs_rdma *r, u32 slot)
{
	return r->recv_buf + (size_t)slot * PFS_RDMA_MSG_SIZE;
}

static int pfs_rdma_post_recv(struct pfs_rdma *r, u32 slot)
{
	struct ib_sge sge = {
		.addr = r->recv_dma + (u64)slot * PFS_RDMA_MSG_SIZE,
		.length = PFS_RDMA_MSG_SIZE,
		.lkey = r->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &r->recvs[slot].cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(r->id->device, sge.addr, sge.length,
				      DMA_FROM_DEVICE);
	return ib_post_recv(r->qp, &wr, NULL);
}

static void pfs_rdma_maybe_grant(struct pfs_rdma *r);

/* A buffer emptied by the reader (or holding credits alone) goes back. */
static void pfs_rdma_repost(struct pfs_rdma *r, u32 slot)
{
	unsigned long flags;

	if (pfs_rdma_is_dead(r))
		return;
	if (pfs_rdma_post_recv(r, slot)) {
		pfs_rdma_fail(r, "ib_post_recv failed");
		return;
	}
	spin_lock_irqsave(&r->lock, flags);
	r->to_grant++;
	spin_unlock_irqrestore(&r->lock, flags);
	pfs_rdma_maybe_grant(r);
}

static void pfs_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct pfs_rdma_buf *b = container_of(wc->wr_cqe, struct pfs_rdma_buf,
					      cqe);
	struct pfs_rdma *r = b->r;
	unsigned long flags;
	u16 credits, mflags;
	u8 *msg;

	if (wc->status != IB_WC_SUCCESS) {
		pfs_rdma_fail(r, ib_wc_status_msg(wc->status));
		return;
	}
	ib_dma_sync_single_for_cpu(r->id->device,
				   r->recv_dma + (u64)b->slot * PFS_RDMA_MSG_SIZE,
				   PFS_RDMA_MSG_SIZE, DMA_FROM_DEVICE);
	msg = pfs_rdma_recv_msg(r, b->slot);
	if (wc->byte_len < PFS_RDMA_HEAD) {
		pfs_rdma_fail(r, "message shorter than its head");
		return;
	}
	credits = get_unaligned_le16(msg);
	mflags = get_unaligned_le16(msg + 2);
	spin_lock_irqsave(&r->lock, flags);
	r->peer_credits += credits;
	if (r->peer_credits > r->peer_depth || (mflags & ~PFS_RDMA_MORE) ||
	    (wc->byte_len == PFS_RDMA_HEAD && (mflags & PFS_RDMA_MORE)) ||
	    r->arr_count >= PFS_RDMA_DEPTH) {
		spin_unlock_irqrestore(&r->lock, flags);
		pfs_rdma_fail(r, "peer breaks the message rules");
		return;
	}
	if (wc->byte_len > PFS_RDMA_HEAD) {
		r->msg_len[b->slot] = wc->byte_len;
		r->arrived[(r->arr_head + r->arr_count) % PFS_RDMA_DEPTH] =
			b->slot;
		if (!r->arr_count)
			r->front_off = PFS_RDMA_HEAD;
		r->arr_count++;
	}
	spin_unlock_irqrestore(&r->lock, flags);
	if (wc->byte_len == PFS_RDMA_HEAD)
		pfs_rdma_repost(r, b->slot);	/* credits alone */
	wake_up_all(&r->wq);
}

static bool pfs_rdma_readable(struct pfs_rdma *r)
{
	return READ_ONCE(r->arr_count) || pfs_rdma_is_dead(r);
}

/* Frame bytes out of the messages that arrived, in order. */
static int pfs_rdma_recv(struct pfs_xprt *x, struct iov_iter *to, long timeout)
{
	struct pfs_rdma *r = pfs_rdma(x);
	unsigned long deadline = jiffies + timeout;

	while (iov_iter_count(to)) {
		unsigned long flags;
		u32 slot, len, off, n;
		bool emptied = false;
		long left;

		/* Idle receivers sleep interruptibly: not counted as load. */
		if (timeout == MAX_SCHEDULE_TIMEOUT) {
			if (wait_event_interruptible(r->wq,
						     pfs_rdma_readable(r)))
				return -EINTR;
		} else {
			left = (long)(deadline - jiffies);
			if (left <= 0)
				return -ETIMEDOUT;
			left = wait_event_interruptible_timeout(r->wq,
							pfs_rdma_readable(r), left);
			if (left < 0)
				return -EINTR;
			if (!left)
				return -ETIMEDOUT;
		}
		spin_lock_irqsave(&r->lock, flags);
		if (!r->arr_count) {
			spin_unlock_irqrestore(&r->lock, flags);
			return -ECONNRESET;
		}
		slot = r->arrived[r->arr_head];
		len = r->msg_len[slot];
		off = r->front_off;
		spin_unlock_irqrestore(&r->lock, flags);

		/* Only the reader moves the front: copied unlocked. */
		n = min_t(size_t, iov_iter_count(to), len - off);
		if (copy_to_iter(pfs_rdma_recv_msg(r, slot) + off, n, to) != n)
			return -EFAULT;
		spin_lock_irqsave(&r->lock, flags);
		r->front_off += n;
		if (r->front_off == len) {
			r->arr_head = (r->arr_head + 1) % PFS_RDMA_DEPTH;
			r->arr_count--;
			r->front_off = PFS_RDMA_HEAD;
			emptied = true;
		}
		spin_unlock_irqrestore(&r->lock, flags);
		if (emptied)
			pfs_rdma_repost(r, slot);
	}
	return 0;
}

/* ---- sending ---- */

static void pfs_rdma_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct pfs_rdma_buf *b = container_of(wc->wr_cqe, struct pfs_rdma_buf,
					      cqe);
	struct pfs_rdma *r = b->r;
	unsigned long flags;

	spin_lock_irqsave(&r->lock, flags);
	r->free_send[r->nfree++] = b->slot;
	r->sq_used--;
	spin_unlock_irqrestore(&r->lock, flags);
	if (wc->status != IB_WC_SUCCESS)
		pfs_rdma_fail(r, ib_wc_status_msg(wc->status));
	wake_up_all(&r->wq);
	pfs_rdma_maybe_grant(r);
}

/*
 * Posts one message from send slot `slot`, len bytes with its head in
 * place; the caller reserved the slot, a credit and room on the queue.
 */
static int pfs_rdma_post_msg(struct pfs_rdma *r, u32 slot, u32 len)
{
	struct ib_sge sge = {
		.addr = r->send_dma + (u64)slot * PFS_RDMA_MSG_SIZE,
		.length = len,
		.lkey = r->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &r->sends[slot].cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	ib_dma_sync_single_for_device(r->id->device, sge.addr, len,
				      DMA_TO_DEVICE);
	return ib_post_send(r->qp, &wr, NULL);
}

/*
 * Takes a send slot, a credit and room on the send queue when they are
 * there: the slot, or -1. keep: credits that must stay (1 for frames, so
 * that announcing ours never lacks one; 0 for that announcement itself).
 * Called with the lock held; *grant gets the credits to announce.
 */
static int pfs_rdma_reserve(struct pfs_rdma *r, u32 keep, u16 *grant)
{
	if (r->dead || !r->nfree || r->peer_credits <= keep ||
	    r->sq_used >= r->sq_max)
		return -1;
	r->peer_credits--;
	r->sq_used++;
	*grant = min_t(u32, r->to_grant, U16_MAX);
	r->to_grant -= *grant;
	return r->free_send[--r->nfree];
}

static void pfs_rdma_unreserve(struct pfs_rdma *r, u32 slot, u16 grant)
{
	unsigned long flags;

	spin_lock_irqsave(&r->lock, flags);
	r->free_send[r->nfree++] = slot;
	r->peer_credits++;
	r->sq_used--;
	r->to_grant += grant;
	spin_unlock_irqrestore(&r->lock, flags);
}

/* Announces our credits in a message of their own once half the depth waits. */
static void pfs_rdma_maybe_grant(struct pfs_rdma *r)
{
	unsigned long flags;
	u16 grant = 0;
	int slot = -1;
	u8 *msg;

	spin_lock_irqsave(&r->lock, flags);
	if (r->to_grant >= PFS_RDMA_DEPTH / 2)
		slot = pfs_rdma_reserve(r, 0, &grant);
	spin_unlock_irqrestore(&r->lock, flags);
	if (slot < 0)
		return;
	msg = r->send_buf + (size_t)slot * PFS_RDMA_MSG_SIZE;
	put_unaligned_le16(grant, msg);
	put_unaligned_le16(0, msg + 2);
	put_unaligned_le32(0, msg + 4);
	if (pfs_rdma_post_msg(r, slot, PFS_RDMA_HEAD)) {
		pfs_rdma_unreserve(r, slot, grant);
		pfs_rdma_fail(r, "ib_post_send failed");
	}
}

/* The bytes of a frame, from its head vectors, its data, then its tail. */
struct pfs_rdma_cursor {
	struct iov_iter head, data, tail;
};

static size_t pfs_rdma_cursor_copy(struct pfs_rdma_cursor *c, u8 *to,
				   size_t room)
{
	size_t got = 0;

	got += copy_from_iter(to, room, &c->head);
	if (got < room)
		got += copy_from_iter(to + got, room - got, &c->data);
	if (got < room)
		got += copy_from_iter(to + got, room - got, &c->tail);
	return got;
}

static int pfs_rdma_send(struct pfs_xprt *x, struct kvec *head,
			 unsigned int nhead, struct iov_iter *data,
			 struct kvec *tail)
{
	struct pfs_rdma *r = pfs_rdma(x);
	const size_t room = r->peer_msg - PFS_RDMA_HEAD;
	struct pfs_rdma_cursor c;
	size_t left, hlen = 0;
	bool first = true;
	unsigned int i;

	for (i = 0; i < nhead; i++)
		hlen += head[i].iov_len;
	iov_iter_kvec(&c.head, ITER_SOURCE, head, nhead, hlen);
	if (data)
		c.data = *data;
	else
		iov_iter_kvec(&c.data, ITER_SOURCE, NULL, 0, 0);
	iov_iter_kvec(&c.tail, ITER_SOURCE, tail, tail ? 1 : 0,
		      tail ? tail->iov_len : 0);
	left = iov_iter_count(&c.head) + iov_iter_count(&c.data) +
	       iov_iter_count(&c.tail);

	while (left) {
		unsigned long flags;
		u16 grant = 0;
		size_t n;
		long got;
		int slot;
		u8 *msg;

		got = wait_event_killable_timeout(r->wq, ({
			spin_lock_irqsave(&r->lock, flags);
			slot = pfs_rdma_reserve(r, 1, &grant);
			spin_unlock_irqrestore(&r->lock, flags);
			slot >= 0 || pfs_rdma_is_dead(r); }), r->send_timeout);
		if (got <= 0 || slot < 0) {
			if (slot >= 0)
				pfs_rdma_unreserve(r, slot, grant);
			if (got < 0)
				return first ? -EINTR : -EPIPE;
			return pfs_rdma_is_dead(r) ? -ECONNRESET : -ETIMEDOUT;
		}
		msg = r->send_buf + (size_t)slot * PFS_RDMA_MSG_SIZE;
		n = pfs_rdma_cursor_copy(&c, msg + PFS_RDMA_HEAD,
					 min(room, left));
		left -= n;
		put_unaligned_le16(grant, msg);
		put_unaligned_le16(left ? PFS_RDMA_MORE : 0, msg + 2);
		put_unaligned_le32(0, msg + 4);
		if (pfs_rdma_post_msg(r, slot, PFS_RDMA_HEAD + n)) {
			pfs_rdma_unreserve(r, slot, grant);
			pfs_rdma_fail(r, "ib_post_send failed");
			return -EIO;
		}
		first = false;
	}
	return 0;
}

/* ---- setting up and tearing down ---- */

static void pfs_rdma_free_rings(struct pfs_rdma *r)
{
	struct ib_device *dev = r->id->device;

	if (r->recv_buf) {
		if (r->recv_dma)
			ib_dma_unmap_single(dev, r->recv_dma,
					    PFS_RDMA_DEPTH * PFS_RDMA_MSG_SIZE,
					    DMA_FROM_DEVICE);
		kvfree(r->recv_buf);
	}
	if (r->send_buf) {
		if (r->send_dma)
			ib_dma_unmap_single(dev, r->send_dma,
					    PFS_RDMA_DEPTH * PFS_RDMA_MSG_SIZE,
					    DMA_TO_DEVICE);
		kvfree(r->send_buf);
	}
	kfree(r->recvs);
	kfree(r->sends);
	kfree(r->arrived);
	kfree(r->msg_len);
	kfree(r->free_send);
}

/* Rings of depth buffers each way, DMA-mapped once. */
static int pfs_rdma_alloc_rings(struct pfs_rdma *r)
{
	struct ib_device *dev = r->id->device;
	size_t size = PFS_RDMA_DEPTH * PFS_RDMA_MSG_SIZE;
	u32 i;

	r->recv_buf = kmalloc(size, GFP_NOFS);
	r->send_buf = kmalloc(size, GFP_NOFS);
	r->recvs = kcalloc(PFS_RDMA_DEPTH, sizeof(*r->recvs), GFP_NOFS);
	r->sends = kcalloc(PFS_RDMA_DEPTH, sizeof(*r->sends), GFP_NOFS);
	r->arrived = kcalloc(PFS_RDMA_DEPTH, sizeof(u32), GFP_NOFS);
	r->msg_len = kcalloc(PFS_RDMA_DEPTH, sizeof(u32), GFP_NOFS);
	r->free_send = kcalloc(PFS_RDMA_DEPTH, sizeof(u32), GFP_NOFS);
	if (!r->recv_buf || !r->send_buf || !r->recvs || !r->sends ||
	    !r->arrived || !r->msg_len || !r->free_send)
		return -ENOMEM;
	r->recv_dma = ib_dma_map_single(dev, r->recv_buf, size,
					DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(dev, r->recv_dma)) {
		r->recv_dma = 0;
		return -ENOMEM;
	}
	r->send_dma = ib_dma_map_single(dev, r->send_buf, size, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(dev, r->send_dma)) {
		r->send_dma = 0;
		return -ENOMEM;
	}
	for (i = 0; i < PFS_RDMA_DEPTH; i++) {
		r->recvs[i] = (struct pfs_rdma_buf){
			.cqe.done = pfs_rdma_recv_done, .r = r, .slot = i };
		r->sends[i] = (struct pfs_rdma_buf){
			.cqe.done = pfs_rdma_send_done, .r = r, .slot = i };
		r->free_send[r->nfree++] = PFS_RDMA_DEPTH - 1 - i;
	}
	return 0;
}

/* Protection domain, completion queue, queue pair and posted receives. */
static int pfs_rdma_setup_qp(struct pfs_rdma *r)
{
	struct ib_device *dev = r->id->device;
	struct ib_qp_init_attr attr = {};
	u32 i;
	int err;

	r->mr_pages = min_t(u32, dev->attrs.max_fast_reg_page_list_len,
			    PFS_MAX_IO / PAGE_SIZE + 1);
	if (!(dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    !r->mr_pages)
		return -EOPNOTSUPP;	/* no fast registration */
	r->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(r->pd)) {
		err = PTR_ERR(r->pd);
		r->pd = NULL;
		return err;
	}
	r->sq_max = PFS_RDMA_DEPTH;
	r->reg_max = PFS_RDMA_REG_WRS;
	/* Both queue pairs' work requests, and a drain marker for each queue. */
	r->cq = ib_alloc_cq_any(dev, r, r->sq_max + PFS_RDMA_DEPTH +
				r->reg_max + 4, IB_POLL_WORKQUEUE);
	if (IS_ERR(r->cq)) {
		err = PTR_ERR(r->cq);
		r->cq = NULL;
		return err;
	}
	attr.send_cq = r->cq;
	attr.recv_cq = r->cq;
	attr.qp_type = IB_QPT_RC;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.cap.max_send_wr = r->sq_max + 1;
	attr.cap.max_recv_wr = PFS_RDMA_DEPTH + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	err = rdma_create_qp(r->id, r->pd, &attr);
	if (err)
		return err;
	r->qp = r->id->qp;
	err = pfs_rdma_alloc_rings(r);
	for (i = 0; !err && i < PFS_RDMA_DEPTH; i++)
		err = pfs_rdma_post_recv(r, i);
	return err;
}

void pfs_rdma_teardown(struct pfs_rdma *r)
{
	pfs_rdma_unwatch(r);
	if (r->qp) {
		/* Every work request completes (flushed) before anything goes. */
		ib_drain_qp(r->qp);
		rdma_destroy_qp(r->id);
		r->qp = NULL;
	}
	if (r->reg_qp) {
		/* Short of RTS, nothing was posted (nor could the drain be). */
		if (r->reg_ready)
			ib_drain_sq(r->reg_qp);
		ib_destroy_qp(r->reg_qp);
		r->reg_qp = NULL;
	}
	pfs_rdma_free_orphans(r);
	if (r->cq)
		ib_free_cq(r->cq);
	pfs_rdma_free_rings(r);
	if (r->pd)
		ib_dealloc_pd(r->pd);
	rdma_destroy_id(r->id);
	kfree(r);
}

/* Waits for the next step the CM handler reports: its status. */
static int pfs_rdma_cm_wait(struct pfs_rdma *r, unsigned long deadline)
{
	long left = (long)(deadline - jiffies);

	if (left <= 0)
		return -ETIMEDOUT;
	left = wait_for_completion_killable_timeout(&r->cm_done, left);
	if (left < 0)
		return -EINTR;
	if (!left)
		return -ETIMEDOUT;
	reinit_completion(&r->cm_done);
	return r->cm_status;
}

static struct pfs_xprt *pfs_rdma_connect(struct net *ns,
					 const struct sockaddr_storage *src,
					 const struct sockaddr_storage *addr,
					 unsigned int timeout_ms,
					 unsigned int send_timeout_ms)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	struct rdma_conn_param param = {};
	u8 hello[PFS_RDMA_HELLO_LEN];
	const char *step = "resolving the address";
	struct pfs_rdma *r;
	int err;

	r = kzalloc(sizeof(*r), GFP_NOFS);
	if (!r)
		return ERR_PTR(-ENOMEM);
	r->xprt.ops = &pfs_rdma_ops;
	init_completion(&r->cm_done);
	init_waitqueue_head(&r->wq);
	spin_lock_init(&r->lock);
	INIT_LIST_HEAD(&r->orphans);
	INIT_LIST_HEAD(&r->live);
	r->send_timeout = send_timeout_ms ? msecs_to_jiffies(send_timeout_ms) :
					    MAX_SCHEDULE_TIMEOUT;
	r->id = rdma_create_id(ns, pfs_rdma_cm_handler, r, RDMA_PS_TCP,
			       IB_QPT_RC);
	if (IS_ERR(r->id)) {
		err = PTR_ERR(r->id);
		kfree(r);
		return ERR_PTR(err);
	}
	err = rdma_resolve_addr(r->id,
				src && src->ss_family != AF_UNSPEC ?
				(struct sockaddr *)src : NULL,
				(struct sockaddr *)addr,
				min(timeout_ms, PFS_RDMA_RESOLVE_MS));
	if (!err)
		err = pfs_rdma_cm_wait(r, deadline);	/* route resolved */
	/*
	 * A generous ACK timeout (4.096 us << 19, about 2 s): soft-RoCE
	 * under TCG answers late, and each needless retransmission costs.
	 */
	/* Not through an interface going down: see rdma_link.c. */
	if (!err && pfs_rdma_iface_failing(r->id->route.addr.dev_addr.net,
					   r->id->route.addr.dev_addr.bound_dev_if))
		err = -ENETDOWN;
	if (!err)
		err = rdma_set_ack_timeout(r->id, PFS_RDMA_ACK_TIMEOUT);
	if (!err)
		err = pfs_rdma_setup_qp(r);
	if (!err)
		pfs_rdma_watch(r);
	if (!err) {
		step = "connecting";
		pfs_rdma_hello(hello, PFS_RDMA_DEPTH, PFS_RDMA_MSG_SIZE);
		param.private_data = hello;
		param.private_data_len = sizeof(hello);
		param.responder_resources =
			min_t(u32, r->id->device->attrs.max_qp_rd_atom, 16);
		param.initiator_depth = 1;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		err = rdma_connect(r->id, &param);
	}
	if (!err)
		err = pfs_rdma_cm_wait(r, deadline);	/* established */
	if (!err)
		err = pfs_rdma_setup_reg_qp(r);
	if (err) {
		pr_info_ratelimited("RDMA connection to %pISpc: %s failed (%d)\n",
				    addr, step, err);
		pfs_rdma_fail(r, "connect failed");
		if (r->qp)
			rdma_disconnect(r->id);
		pfs_rdma_teardown(r);
		return ERR_PTR(err);
	}
	r->peer_credits = r->peer_depth;
	return &r->xprt;
}

static void pfs_rdma_shutdown(struct pfs_xprt *x)
{
	struct pfs_rdma *r = pfs_rdma(x);

	pfs_rdma_fail(r, "shut down");
	/*
	 * Not through an interface going down: soft-RoCE would retry the
	 * disconnect request it cannot send until the interface is back, and
	 * destroying the connection would wait for that.
	 */
	if (!READ_ONCE(r->iface_down))
		rdma_disconnect(r->id);
}

static void pfs_rdma_destroy(struct pfs_xprt *x)
{
	struct pfs_rdma *r = pfs_rdma(x);

	pfs_rdma_shutdown(x);
	if (READ_ONCE(r->iface_down))
		pfs_rdma_destroy_later(r);
	else
		pfs_rdma_teardown(r);
}

struct device *pfs_rdma_dma_device(struct pfs_xprt *x, bool *virt)
{
	struct ib_device *dev = pfs_rdma(x)->id->device;

	/* Soft-RoCE: its own device stands for the DMA device it lacks. */
	if (virt)
		*virt = !dev->dma_device;
	return dev->dma_device ?: &dev->dev;
}

const struct pfs_xprt_ops pfs_rdma_ops = {
	.name = "rdma",
	.connect = pfs_rdma_connect,
	.send = pfs_rdma_send,
	.recv = pfs_rdma_recv,
	.bulk_map = pfs_rdma_bulk_map,
	.bulk_unmap = pfs_rdma_bulk_unmap,
	.bulk_placed = pfs_rdma_bulk_placed,
	.shutdown = pfs_rdma_shutdown,
	.destroy = pfs_rdma_destroy,
	.dma_device = pfs_rdma_dma_device,
};
