// SPDX-License-Identifier: GPL-2.0
/*
 * Bulk data over RDMA: the pages a request names (page-cache folios,
 * pinned user pages, kernel buffers) are registered for that request only,
 * by fast registration (IB_WR_REG_MR) on the connection's queue pair, with
 * remote read access for the data the server fetches and remote write
 * access for the data it puts; their segments (iova, length, rkey) go in
 * the request's bulk block. When the request ends, however it ends, every
 * registration is invalidated (IB_WR_LOCAL_INV) before the pages are the
 * caller's again; should that fail, the MR is deregistered instead. An MR
 * whose key a server saw never comes back valid: each registration is a
 * new MR.
 *
 * Registrations and invalidations go on a queue pair of their own, in the
 * connection's protection domain, which never transmits: a retransmission
 * on the connection's queue pair then never runs a registration twice
 * (soft-RoCE rewinds its send queue over completed local operations, and
 * registering a valid MR again kills the connection), and an invalidation
 * never waits behind data or on a connection that broke. The request is
 * sent once its registrations completed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#include <linux/pagemap.h>

#include "net_int.h"
#include "rdma.h"
#include "../nvfs.h"

/* The pages of one direction of a request, mapped for the device. */
struct pfs_rdma_map {
	struct scatterlist *sg;
	int nents;
	enum dma_data_direction dir;
	struct pfs_gpu_io gpu;		/* GPU pages: nvidia-fs mapped them */
};

/* What a request holds: its mappings and the MRs registering them. */
struct pfs_rdma_req {
	struct list_head mrs;
	struct pfs_rdma_map maps[2];	/* its data, its reply's */
	int nmaps;
	u32 out_len;			/* bytes the server may put */
	struct pfs_xprt_stats *stats;	/* the mount's RDMA counters */
};

static struct pfs_rdma *pfs_rdma_of(struct pfs_xprt *x)
{
	return container_of(x, struct pfs_rdma, xprt);
}

/* ---- the registration queue pair ---- */

/*
 * The registration queue pair: connected to itself, because the state
 * machine wants a peer, though no packet ever leaves it (so it never
 * retransmits; no ACK timeout either). Reliable-connected: soft-RoCE
 * registers only there. Its path is the connection's (queried: the
 * connection is established).
 */
int pfs_rdma_setup_reg_qp(struct pfs_rdma *r)
{
	struct ib_qp_init_attr init = {}, qinit;
	struct ib_qp_attr conn = {}, attr = {};
	int err;

	init.send_cq = r->cq;
	init.recv_cq = r->cq;
	init.qp_type = IB_QPT_RC;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.cap.max_send_wr = r->reg_max + 1;
	init.cap.max_recv_wr = 1;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	r->reg_qp = ib_create_qp(r->pd, &init);
	if (IS_ERR(r->reg_qp)) {
		err = PTR_ERR(r->reg_qp);
		r->reg_qp = NULL;
		return err;
	}
	err = ib_query_qp(r->qp, &conn, IB_QP_AV | IB_QP_PATH_MTU |
			  IB_QP_PKEY_INDEX | IB_QP_PORT, &qinit);
	if (err)
		return err;
	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = conn.pkey_index;
	attr.port_num = conn.port_num;
	err = ib_modify_qp(r->reg_qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.ah_attr = conn.ah_attr;
	attr.path_mtu = conn.path_mtu;
	attr.dest_qp_num = r->reg_qp->qp_num;
	attr.min_rnr_timer = 1;
	err = ib_modify_qp(r->reg_qp, &attr, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	err = ib_modify_qp(r->reg_qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN |
			   IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			   IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
	r->reg_ready = !err;
	return err;
}

/* A registration or invalidation work request, once the queue has room. */
static int pfs_rdma_post_reg_wr(struct pfs_rdma *r, struct ib_send_wr *wr)
{
	bool inval = wr->opcode == IB_WR_LOCAL_INV;
	unsigned long flags;
	bool room = false, dead = false;
	long got;
	int err;

	got = wait_event_timeout(r->wq, ({
		spin_lock_irqsave(&r->lock, flags);
		dead = r->reg_dead || (!inval && r->dead);
		room = !dead && r->reg_used < r->reg_max;
		if (room)
			r->reg_used++;
		spin_unlock_irqrestore(&r->lock, flags);
		room || dead; }), r->send_timeout);
	if (!room)
		return got ? -ECONNRESET : -ETIMEDOUT;
	err = ib_post_send(r->reg_qp, wr, NULL);
	if (err) {
		spin_lock_irqsave(&r->lock, flags);
		r->reg_used--;
		spin_unlock_irqrestore(&r->lock, flags);
	}
	return err;
}

static void pfs_rdma_reg_wr_done(struct pfs_rdma *r, bool ok, const char *why)
{
	unsigned long flags;

	spin_lock_irqsave(&r->lock, flags);
	r->reg_used--;
	if (!ok)
		r->reg_dead = true;
	spin_unlock_irqrestore(&r->lock, flags);
	/* No request can be served without registrations. */
	if (!ok)
		pfs_rdma_fail(r, why);
	wake_up_all(&r->wq);
}

static void pfs_rdma_stop_reg(struct pfs_rdma *r, const char *why)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	unsigned long flags;

	spin_lock_irqsave(&r->lock, flags);
	r->reg_dead = true;
	spin_unlock_irqrestore(&r->lock, flags);
	pfs_rdma_stop(r, why);
	if (r->reg_qp)
		ib_modify_qp(r->reg_qp, &attr, IB_QP_STATE);
}

/* ---- registering a request's memory ---- */

static void pfs_rdma_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct pfs_rdma_mr *m = container_of(wc->wr_cqe, struct pfs_rdma_mr,
					     reg_cqe);

	m->reg_status = wc->status == IB_WC_SUCCESS ? 0 : -EIO;
	pfs_rdma_reg_wr_done(m->r, !m->reg_status,
			     ib_wc_status_msg(wc->status));
	complete(&m->reg_done);
}

static void pfs_rdma_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct pfs_rdma_mr *m = container_of(wc->wr_cqe, struct pfs_rdma_mr,
					     inv_cqe);

	m->inv_status = wc->status == IB_WC_SUCCESS ? 0 : -EIO;
	pfs_rdma_reg_wr_done(m->r, !m->inv_status,
			     ib_wc_status_msg(wc->status));
	complete(&m->inv_done);
}

/*
 * A new MR for one registration. (A pool of invalidated MRs is what real
 * NICs would rather have; allocation is cheap on soft-RoCE.)
 */
static struct pfs_rdma_mr *pfs_rdma_get_mr(struct pfs_rdma *r)
{
	struct pfs_rdma_mr *m;

	m = kzalloc(sizeof(*m), GFP_NOFS);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->mr = ib_alloc_mr(r->pd, IB_MR_TYPE_MEM_REG, r->mr_pages);
	if (IS_ERR(m->mr)) {
		int err = PTR_ERR(m->mr);

		kfree(m);
		return ERR_PTR(err);
	}
	m->r = r;
	INIT_LIST_HEAD(&m->link);
	m->reg_cqe.done = pfs_rdma_reg_done;
	m->inv_cqe.done = pfs_rdma_inv_done;
	init_completion(&m->reg_done);
	init_completion(&m->inv_done);
	return m;
}

static void pfs_rdma_drop_mr(struct pfs_rdma_mr *m)
{
	ib_dereg_mr(m->mr);
	kfree(m);
}

/*
 * The first len bytes of iter as a scatterlist of at most page-sized
 * entries (a new array in *sgp, its length returned, or -errno): bvec,
 * kvec and xarray iterators, the kinds the data path hands the transport.
 */
static int pfs_rdma_iter_sg(const struct iov_iter *iter, size_t len,
			    struct scatterlist **sgp)
{
	struct iov_iter it = *iter;
	struct scatterlist *sg;
	size_t max = DIV_ROUND_UP(len, PAGE_SIZE) + 1;
	int n = 0;

	if (!iov_iter_is_bvec(&it) && !iov_iter_is_kvec(&it) &&
	    !iov_iter_is_xarray(&it))
		return -EOPNOTSUPP;
	/* A page-sized piece per entry: at most one more than the pages. */
	sg = kvmalloc_array(max + 1, sizeof(*sg), GFP_NOFS);
	if (!sg)
		return -ENOMEM;
	sg_init_table(sg, max + 1);
	iov_iter_truncate(&it, len);
	while (iov_iter_count(&it)) {
		struct page *page;
		size_t off, seg;

		if (n == max + 1)
			goto too_many;
		if (iov_iter_is_bvec(&it)) {
			const struct bio_vec *bv = it.bvec;
			size_t at = bv->bv_offset + it.iov_offset;

			page = nth_page(bv->bv_page, at / PAGE_SIZE);
			off = at % PAGE_SIZE;
			seg = min3(bv->bv_len - it.iov_offset, PAGE_SIZE - off,
				   iov_iter_count(&it));
		} else if (iov_iter_is_xarray(&it)) {
			/* Page-cache folios, held locked by the caller. */
			loff_t pos = it.xarray_start + it.iov_offset;
			struct folio *folio;

			rcu_read_lock();
			folio = xa_load(it.xarray, pos >> PAGE_SHIFT);
			rcu_read_unlock();
			if (!folio || xa_is_value(folio))
				goto bad;
			page = folio_page(folio, (pos - folio_pos(folio)) >>
					  PAGE_SHIFT);
			off = offset_in_page(pos);
			seg = min_t(size_t, PAGE_SIZE - off,
				    iov_iter_count(&it));
		} else {
			const u8 *p = (const u8 *)it.kvec->iov_base +
				      it.iov_offset;

			page = is_vmalloc_addr(p) ? vmalloc_to_page(p) :
						    virt_to_page(p);
			off = offset_in_page(p);
			seg = min3(it.kvec->iov_len - it.iov_offset,
				   PAGE_SIZE - off, iov_iter_count(&it));
		}
		sg_set_page(&sg[n++], page, seg, off);
		iov_iter_advance(&it, seg);
	}
	sg_mark_end(&sg[n - 1]);
	*sgp = sg;
	return n;
too_many:
	kvfree(sg);
	return -EMSGSIZE;
bad:
	kvfree(sg);
	return -EFAULT;
}

/*
 * Registers len bytes of iter for the peer (access) as up to
 * PFS_BULK_SEGS_MAX - *nsegs segments appended to segs. The mapping and
 * the MRs go on req, whatever happens: bulk_unmap takes them back.
 */
static int pfs_rdma_register(struct pfs_rdma *r, struct pfs_rdma_req *req,
			     const struct pfs_gpu_io *gpu,
			     const struct iov_iter *iter, size_t len,
			     enum dma_data_direction dir, int access,
			     struct pfs_bulk_seg *segs, __u8 *nsegs)
{
	struct ib_device *dev = r->id->device;
	struct pfs_rdma_map *map = &req->maps[req->nmaps];
	unsigned int off = 0;
	int n, mapped, i = 0;

	n = pfs_rdma_iter_sg(iter, len, &map->sg);
	if (n < 0)
		return n;
	/* GPU memory: nvidia-fs gives the bus addresses the NIC uses. */
	if (gpu)
		mapped = pfs_gpu_map(gpu, pfs_rdma_dma_device(&r->xprt, NULL),
				     map->sg, n, dir);
	else
		mapped = ib_dma_map_sg(dev, map->sg, n, dir) ?: -EIO;
	if (mapped < 0) {
		kvfree(map->sg);
		map->sg = NULL;
		return mapped;
	}
	if (gpu)
		map->gpu = *gpu;
	map->nents = n;
	map->dir = dir;
	req->nmaps++;
	while (i < mapped) {
		struct ib_reg_wr reg = {};
		struct pfs_rdma_mr *m;
		unsigned int o = off;
		int k, err;

		if (*nsegs == PFS_BULK_SEGS_MAX)
			return -EMSGSIZE;
		m = pfs_rdma_get_mr(r);
		if (IS_ERR(m))
			return PTR_ERR(m);
		list_add_tail(&m->link, &req->mrs);
		k = ib_map_mr_sg(m->mr, &map->sg[i], mapped - i, &o, PAGE_SIZE);
		if (k < 0 || (k == 0 && o == off))
			return k < 0 ? k : -EIO;
		ib_update_fast_reg_key(m->mr, ib_inc_rkey(m->mr->rkey));
		reg.wr.opcode = IB_WR_REG_MR;
		reg.wr.wr_cqe = &m->reg_cqe;
		reg.wr.send_flags = IB_SEND_SIGNALED;
		reg.mr = m->mr;
		reg.key = m->mr->rkey;
		reg.access = access;
		reinit_completion(&m->reg_done);
		err = pfs_rdma_post_reg_wr(r, &reg.wr);
		if (err)
			return err;
		m->registered = true;
		atomic64_inc(&req->stats->registrations);
		atomic64_inc(&req->stats->registered_now);
		segs[*nsegs] = (struct pfs_bulk_seg){
			.addr = m->mr->iova,
			.rkey = m->mr->rkey,
			.length = m->mr->length,
		};
		(*nsegs)++;
		i += k;
		off = o;
	}
	return 0;
}

/*
 * m's registration completed: 0, or -errno (it failed, or did not come in
 * time: then the registration queue pair is stopped, its work flushes).
 */
static int pfs_rdma_reg_wait(struct pfs_rdma *r, struct pfs_rdma_mr *m)
{
	if (!m->reg_seen) {
		if (!wait_for_completion_timeout(&m->reg_done,
						 r->send_timeout)) {
			pfs_rdma_stop_reg(r, "registration not completed");
			return -ETIMEDOUT;
		}
		m->reg_seen = true;
	}
	return m->reg_status;
}

int pfs_rdma_bulk_map(struct pfs_xprt *x, struct pfs_rpc *rpc,
		      struct pfs_bulk *b)
{
	struct pfs_rdma *r = pfs_rdma_of(x);
	struct pfs_rdma_req *req;
	int err = 0;

	req = kzalloc(sizeof(*req), GFP_NOFS);
	if (!req)
		return -ENOMEM;
	INIT_LIST_HEAD(&req->mrs);
	req->stats = pfs_net_stats(rpc->conn->net, "rdma");
	rpc->bulk_priv = req;
	b->place = PFS_BULK_RDMA;
	if (b->in_len)
		err = pfs_rdma_register(r, req, rpc->gpu, rpc->req_data,
					b->in_len,
					DMA_TO_DEVICE, IB_ACCESS_REMOTE_READ,
					b->in, &b->nin);
	if (!err && b->out_len)
		err = pfs_rdma_register(r, req, rpc->gpu, rpc->reply_data,
					b->out_len,
					DMA_FROM_DEVICE,
					IB_ACCESS_LOCAL_WRITE |
					IB_ACCESS_REMOTE_WRITE,
					b->out, &b->nout);
	req->out_len = b->out_len;
	if (!err) {
		struct pfs_rdma_mr *m;

		/* The server may use the keys once the request is sent. */
		list_for_each_entry(m, &req->mrs, link) {
			err = pfs_rdma_reg_wait(r, m);
			if (err)
				break;
		}
	}
	return err;	/* on error, bulk_unmap cleans up what was made */
}

/*
 * Makes m's key useless to the peer. 0: done, and no work request refers
 * to m any more (it may go). Otherwise the registration queue pair failed
 * or stopped answering: it is stopped for good, as is the connection
 * (nothing reaches the pages through it), and a completion referring to m
 * may still come: m must wait for the teardown (-EINPROGRESS) or may go
 * (-EIO).
 */
static int pfs_rdma_invalidate(struct pfs_rdma *r, struct pfs_rdma_mr *m)
{
	struct ib_send_wr inv = {
		.opcode = IB_WR_LOCAL_INV,
		.wr_cqe = &m->inv_cqe,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = m->mr->rkey,
	};
	int err;

	if (!m->registered)
		return 0;
	/* Its registration's completion refers to m: it comes first. */
	err = pfs_rdma_reg_wait(r, m);
	if (err == -ETIMEDOUT)
		return -EINPROGRESS;
	m->registered = false;
	if (err)
		return -EIO;	/* never registered: nothing to invalidate */
	reinit_completion(&m->inv_done);
	if (pfs_rdma_post_reg_wr(r, &inv)) {
		pfs_rdma_stop_reg(r, "cannot post an invalidation");
		return -EIO;
	}
	if (!wait_for_completion_timeout(&m->inv_done, r->send_timeout)) {
		pfs_rdma_stop_reg(r, "invalidation not completed");
		return -EINPROGRESS;
	}
	if (m->inv_status) {
		pr_warn_ratelimited("invalidating rkey %#x failed (%d): stopping the connection\n",
				    m->mr->rkey, m->inv_status);
		pfs_rdma_stop_reg(r, "invalidation failed");
		return -EIO;
	}
	return 0;
}

/* An MR whose completion may still come: freed after the queue pair drained. */
static void pfs_rdma_orphan_mr(struct pfs_rdma *r, struct pfs_rdma_mr *m)
{
	unsigned long flags;

	spin_lock_irqsave(&r->lock, flags);
	list_add(&m->link, &r->orphans);
	spin_unlock_irqrestore(&r->lock, flags);
}

void pfs_rdma_free_orphans(struct pfs_rdma *r)
{
	struct pfs_rdma_mr *m, *next;

	list_for_each_entry_safe(m, next, &r->orphans, link) {
		list_del(&m->link);
		pfs_rdma_drop_mr(m);
	}
}

void pfs_rdma_bulk_unmap(struct pfs_xprt *x, struct pfs_rpc *rpc)
{
	struct pfs_rdma *r = pfs_rdma_of(x);
	struct pfs_rdma_req *req = rpc->bulk_priv;
	struct pfs_rdma_mr *m, *next;
	int i;

	if (!req)
		return;
	rpc->bulk_priv = NULL;
	/* No key of the request works any more ... */
	list_for_each_entry_safe(m, next, &req->mrs, link) {
		bool was = m->registered;
		int err = pfs_rdma_invalidate(r, m);

		if (was)
			atomic64_dec(&req->stats->registered_now);

		list_del_init(&m->link);
		if (err == -EINPROGRESS)
			pfs_rdma_orphan_mr(r, m);
		else
			pfs_rdma_drop_mr(m);
	}
	/* ... before its pages are the caller's again. */
	for (i = 0; i < req->nmaps; i++) {
		struct pfs_rdma_map *map = &req->maps[i];

		if (map->gpu.ops)
			pfs_gpu_unmap(&map->gpu, pfs_rdma_dma_device(x, NULL),
				      map->sg, map->nents, map->dir);
		else
			ib_dma_unmap_sg(r->id->device, map->sg, map->nents,
					map->dir);
		kvfree(map->sg);
	}
	kfree(req);
}

int pfs_rdma_bulk_placed(struct pfs_xprt *x, struct pfs_rpc *rpc, u32 len)
{
	struct pfs_rdma_req *req = rpc->bulk_priv;

	if (!req || len > req->out_len || !rpc->reply_data ||
	    len > iov_iter_count(rpc->reply_data))
		return -EMSGSIZE;
	iov_iter_advance(rpc->reply_data, len);
	return 0;
}
