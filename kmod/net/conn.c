// SPDX-License-Identifier: GPL-2.0
/*
 * One authenticated connection to a server. Any number of requests are in
 * flight on it at once: each gets a request id in the connection's table,
 * senders take turns writing whole frames, and a kernel thread reads
 * frames and hands every reply to the request with its id, in whatever
 * order the server answers.
 *
 * Who finishes a request: whoever takes it out of the table (the receiving
 * thread with its reply, a kill with an error, or the waiter giving up).
 * Only the taker writes to the request and completes it, so a reply that
 * arrives after its waiter timed out finds no entry and is dropped, never
 * touching freed memory. A waiter that finds its request already taken
 * waits for the taker, which is bounded: a reply's payload is read under
 * the request timeout, and a kill shuts the socket down. A waiter with a
 * fatal signal gives a reply under way a moment, then kills the connection
 * (pfs_rpc_wait_taken): nothing on the network can hold a task that must
 * die.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/kthread.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uidgid.h>

#include "net_int.h"
#include "../nvfs.h"

#define PFS_CONN_HEAD_MAX	4	/* header, bulk block, groups, body */
#define PFS_GROUPS_BLOCK_MAX	(4 + 4 * PFS_GROUPS_MAX)
/* How long a killed waiter lets a reply under way finish. */
#define PFS_KILLED_GRACE	(HZ / 10)

void pfs_frame_header(struct pfs_net *net, u16 type, u32 flags,
		      u64 request_id, u32 payload_len, u8 *out)
{
	struct pfs_header h = {
		.magic = PFS_PROTO_MAGIC,
		.version = PFS_PROTO_VERSION,
		.type = type,
		.flags = flags,
		.payload_len = payload_len,
		.request_id = request_id,
		.uid = from_kuid_munged(&init_user_ns, current_fsuid()),
		.gid = from_kgid_munged(&init_user_ns, current_fsgid()),
		.client_id = net->cfg.client_id,
		.client_seq = atomic64_inc_return(&net->client_seq),
	};

	pfs_header_encode(&h, out);
}

/*
 * The caller's supplementary groups, which a metadata server checks
 * permissions with (PFS_FLAG_GROUPS): encoded into buf, their length
 * returned (0: none, no block).
 */
static u32 pfs_groups_block(u8 *buf, u32 size)
{
	const struct group_info *gi = current_cred()->group_info;
	struct pfs_xdr x;
	u32 count, i;

	if (!gi || !gi->ngroups)
		return 0;
	/* As struct pfs_groups encodes: the count, then the gids. */
	count = min_t(u32, gi->ngroups, PFS_GROUPS_MAX);
	pfs_xdr_init_encode(&x, buf, size);
	pfs_x_u32(&x, &count);
	for (i = 0; i < count; i++) {
		u32 gid = from_kgid_munged(&init_user_ns, gi->gid[i]);

		pfs_x_u32(&x, &gid);
	}
	return x.err ? 0 : x.pos;
}

/* Takes rpc out of the table if it is still there: the caller owns it. */
static bool pfs_conn_unlink(struct pfs_conn *c, struct pfs_rpc *rpc)
{
	if (xa_cmpxchg(&c->reqs, (unsigned long)rpc->request_id, rpc, NULL,
		       0) != rpc)
		return false;
	atomic_dec(&c->in_flight);
	return true;
}

struct pfs_rpc *pfs_conn_take(struct pfs_conn *c, u64 id)
{
	struct pfs_rpc *rpc;

	if (id < 2 || id > U32_MAX)
		return NULL;
	rpc = xa_erase(&c->reqs, (unsigned long)id);
	if (rpc)
		atomic_dec(&c->in_flight);
	return rpc;
}

/* The last touch of a taken request: its waiter may free it right after. */
void pfs_rpc_finish(struct pfs_rpc *rpc, int err)
{
	rpc->error = err;
	complete(&rpc->done);
}

void pfs_conn_kill(struct pfs_conn *c, int err)
{
	struct pfs_rpc *rpc;
	unsigned long id;

	xa_lock(&c->reqs);
	if (c->dead) {
		xa_unlock(&c->reqs);
		return;
	}
	c->dead = true;
	xa_unlock(&c->reqs);
	c->xprt->ops->shutdown(c->xprt);
	xa_for_each(&c->reqs, id, rpc) {
		if (pfs_conn_unlink(c, rpc))
			pfs_rpc_finish(rpc, err);
	}
}

/*
 * One frame: head[0] the header, then the rest of head, then data, then
 * (frame MACs on) its tag. The tag covers data unless it is a bulk
 * frame's bulk data (bulk) and the MACs leave that out. It is sealed
 * under send_lock: the order of the tags' sequence numbers is the order
 * on the wire.
 */
static int pfs_conn_send_locked(struct pfs_conn *c, struct kvec *head,
				unsigned int nhead, struct iov_iter *data,
				bool bulk)
{
	u8 tag[PFS_FRAME_MAC_LEN];
	struct kvec tail = { .iov_base = tag, .iov_len = sizeof(tag) };
	bool covered = !bulk || c->data_mac;
	int err;

	if (!c->mac)
		return c->xprt->ops->send(c->xprt, head, nhead, data, NULL);
	err = pfs_mac_seal(c->mac, head, nhead, covered ? data : NULL, tag);
	if (err)
		return err;
	return c->xprt->ops->send(c->xprt, head, nhead, data, &tail);
}

static int pfs_conn_send(struct pfs_conn *c, struct kvec *head,
			 unsigned int nhead, struct iov_iter *data, bool bulk)
{
	int err;

	if (mutex_lock_killable(&c->send_lock))
		return -EINTR;
	if (pfs_conn_dead(c))
		err = -ENOTCONN;
	else
		err = pfs_conn_send_locked(c, head, nhead, data, bulk);
	mutex_unlock(&c->send_lock);
	return err;
}

static void pfs_rpc_detach(struct pfs_rpc *rpc)
{
	struct pfs_conn *c = rpc->conn;

	atomic64_sub(rpc->bulk_bytes, &c->bulk_inflight);
	rpc->bulk_bytes = 0;
	rpc->conn = NULL;
	pfs_conn_put(c);
}

/*
 * The bulk block of a request, as its transport fills it: encoded into buf
 * (its length returned, 0 on failure); *inline_data tells whether the
 * request's data travels in the frame.
 */
static u32 pfs_bulk_block(struct pfs_conn *c, struct pfs_rpc *rpc, u8 *buf,
			  u32 size, bool *inline_data, int *err)
{
	struct pfs_bulk *b;
	struct pfs_xdr x;
	u32 len = 0;

	b = kzalloc(sizeof(*b), GFP_NOFS);
	if (!b) {
		*err = -ENOMEM;
		return 0;
	}
	b->in_len = rpc->req_data ? iov_iter_count(rpc->req_data) : 0;
	b->out_len = rpc->reply_data ? iov_iter_count(rpc->reply_data) : 0;
	*err = c->xprt->ops->bulk_map(c->xprt, rpc, b);
	if (*err >= 0) {
		*inline_data = *err == 1;
		rpc->bulk_inline = *inline_data;
		pfs_xdr_init_encode(&x, buf, size);
		*err = pfs_x_bulk(&x, b);
		if (!*err)
			len = x.pos;
	}
	kfree(b);
	return len;
}

/* c's device can DMA to GPU memory (or copy, for a test double's pages). */
static bool pfs_conn_reaches_gpu(struct pfs_conn *c,
				 const struct pfs_gpu_io *gpu)
{
	bool virt;

	if (!c->xprt->ops->dma_device ||
	    !c->xprt->ops->dma_device(c->xprt, &virt))
		return false;
	return !virt || pfs_gpu_virtual_ok(gpu);
}

int pfs_conn_start(struct pfs_conn *c, struct pfs_rpc *rpc)
{
	size_t data_len = rpc->req_data ? iov_iter_count(rpc->req_data) : 0;
	u8 hdr[PFS_HEADER_SIZE];
	u8 *bulk = NULL;
	u8 groups[PFS_GROUPS_BLOCK_MAX];
	struct kvec head[PFS_CONN_HEAD_MAX];
	unsigned int nhead = 0;
	u32 ngroups = 0, nbulk = 0, id = 0;
	bool inline_data = true;
	int err;

	init_completion(&rpc->done);
	rpc->status = 0;
	rpc->error = 0;
	rpc->reply = NULL;
	rpc->reply_len = 0;
	rpc->data_len = 0;
	rpc->conn = NULL;
	rpc->rail = -1;
	/* The receiving thread cannot write to a user's address space. */
	if (rpc->reply_data && user_backed_iter(rpc->reply_data))
		return -EINVAL;
	if (rpc->reply_data && !rpc->bulk)
		return -EINVAL;
	/* The CPU cannot reach GPU memory: it never goes into frames. */
	if (rpc->gpu && !pfs_conn_reaches_gpu(c, rpc->gpu))
		return -EOPNOTSUPP;
	if (rpc->bulk && (data_len > PFS_MAX_IO ||
			  (rpc->reply_data &&
			   iov_iter_count(rpc->reply_data) > PFS_MAX_IO)))
		return -EMSGSIZE;
	if (rpc->req_len > PFS_MAX_PAYLOAD - PFS_GROUPS_BLOCK_MAX -
			   PFS_BULK_MAX_SIZE ||
	    data_len > PFS_MAX_PAYLOAD - PFS_GROUPS_BLOCK_MAX -
		       PFS_BULK_MAX_SIZE - rpc->req_len)
		return -EMSGSIZE;

	xa_lock(&c->reqs);
	err = -ENOTCONN;
	if (!c->dead) {
		err = __xa_alloc_cyclic(&c->reqs, &id, rpc,
					XA_LIMIT(2, U32_MAX), &c->next_id,
					GFP_NOFS);
		/* Allocating may drop the lock: a kill may have swept by. */
		if (err >= 0 && c->dead) {
			__xa_erase(&c->reqs, id);
			err = -ENOTCONN;
		}
	}
	if (err >= 0) {
		atomic_inc(&c->in_flight);
		err = 0;
	}
	xa_unlock(&c->reqs);
	if (err)
		return err;
	pfs_conn_get(c);
	rpc->conn = c;
	rpc->request_id = id;
	/* What the request moves, for picking the least loaded rail. */
	rpc->bulk_bytes = !rpc->bulk ? 0 : data_len +
			  (rpc->reply_data ? iov_iter_count(rpc->reply_data) : 0);
	atomic64_add(rpc->bulk_bytes, &c->bulk_inflight);
	if (!rpc->timeout_ms)
		rpc->timeout_ms = c->net->cfg.timeout_ms;
	rpc->deadline = jiffies + msecs_to_jiffies(rpc->timeout_ms);
	if (rpc->bulk) {
		/* Mapped before the frame goes: the block names the memory. */
		bulk = kmalloc(PFS_BULK_MAX_SIZE, GFP_NOFS);
		err = bulk ? 0 : -ENOMEM;
		if (bulk)
			nbulk = pfs_bulk_block(c, rpc, bulk, PFS_BULK_MAX_SIZE,
					       &inline_data, &err);
		if (!nbulk) {
			kfree(bulk);
			if (pfs_conn_unlink(c, rpc)) {
				c->xprt->ops->bulk_unmap(c->xprt, rpc);
				pfs_rpc_detach(rpc);
				return err ?: -EINVAL;
			}
			return 0;	/* a kill took it: pfs_rpc_wait reports */
		}
		if (!inline_data)
			data_len = 0;
	}

	/* Metadata servers check permissions: they get our groups too. */
	if (rpc->type >= PFS_MSG_LOOKUP && rpc->type < PFS_MSG_CHUNK_WRITE)
		ngroups = pfs_groups_block(groups, sizeof(groups));
	/* The CPU cannot zero what a read leaves out of GPU memory. */
	/* We follow inline files' layouts (PFS_E_MOVED: stripe.c). */
	pfs_frame_header(c->net, rpc->type,
			 PFS_FLAG_INLINE_LAYOUTS | rpc->flags |
			 (ngroups ? PFS_FLAG_GROUPS : 0) |
			 (nbulk ? PFS_FLAG_BULK : 0) |
			 (rpc->gpu && rpc->reply_data ? PFS_FLAG_ZERO_FILL : 0),
			 id,
			 nbulk + ngroups + rpc->req_len + data_len, hdr);
	head[nhead++] = (struct kvec){ .iov_base = hdr, .iov_len = sizeof(hdr) };
	if (nbulk)
		head[nhead++] = (struct kvec){ .iov_base = bulk,
					       .iov_len = nbulk };
	if (ngroups)
		head[nhead++] = (struct kvec){ .iov_base = groups,
					       .iov_len = ngroups };
	if (rpc->req_len)
		head[nhead++] = (struct kvec){ .iov_base = (void *)rpc->req,
					       .iov_len = rpc->req_len };
	err = pfs_conn_send(c, head, nhead, inline_data ? rpc->req_data : NULL,
			    nbulk);
	kfree(bulk);
	if (!err) {
		struct pfs_xprt_stats *st = pfs_net_stats(c->net,
						c->xprt->ops->name);

		if (st) {
			atomic64_inc(&st->requests);
			if (rpc->bulk && rpc->req_data)
				atomic64_add(iov_iter_count(rpc->req_data),
					     &st->bulk_sent);
		}
		return 0;
	}
	if (!pfs_conn_unlink(c, rpc)) {
		/* A kill took it and completes it: pfs_rpc_wait reports. */
		return 0;
	}
	if (rpc->bulk)
		c->xprt->ops->bulk_unmap(c->xprt, rpc);
	pfs_rpc_detach(rpc);
	if (err == -EINTR || err == -ENOTCONN)
		return err;
	/* Part of a frame may be on the wire: nobody can use the stream. */
	pr_warn_ratelimited("%s: send failed (%d), dropping connection\n",
			    c->peer, err);
	pfs_conn_kill(c, -EIO);
	return -EIO;
}

/*
 * Waits for the receiving thread, which took rpc out of the table and is
 * reading its reply into rpc's buffers: bounded by the timeout, but a
 * fatal signal must not wait that long (the reply may stall half way).
 * After a short grace the connection is cut, which makes the thread let
 * go of rpc at once; the other requests on it fail with -EIO.
 */
static void pfs_rpc_wait_taken(struct pfs_conn *c, struct pfs_rpc *rpc)
{
	if (!wait_for_completion_killable(&rpc->done))
		return;
	if (wait_for_completion_timeout(&rpc->done, PFS_KILLED_GRACE))
		return;
	pr_warn_ratelimited("%s: killed while the reply to %s arrives, dropping the connection\n",
			    c->peer, pfs_msg_name(rpc->type));
	pfs_conn_kill(c, -EIO);
	wait_for_completion(&rpc->done);
}

int pfs_rpc_wait(struct pfs_rpc *rpc)
{
	struct pfs_conn *c = rpc->conn;
	long left;
	int err;

	if (WARN_ON_ONCE(!c))
		return -EINVAL;
	left = (long)(rpc->deadline - jiffies);
	left = wait_for_completion_killable_timeout(&rpc->done,
						    left > 0 ? left : 0);
	if (left <= 0) {
		err = left ? -EINTR : -ETIMEDOUT;
		if (pfs_conn_unlink(c, rpc)) {
			rpc->error = err;
			if (err == -ETIMEDOUT)
				pr_warn_ratelimited("%s: %s timed out after %u ms\n",
						    c->peer,
						    pfs_msg_name(rpc->type),
						    rpc->timeout_ms);
		} else {
			pfs_rpc_wait_taken(c, rpc);
		}
	}
	/* Before the caller may touch its pages again. */
	if (rpc->bulk)
		c->xprt->ops->bulk_unmap(c->xprt, rpc);
	rpc->rail = c->rail;
	pfs_rpc_detach(rpc);
	rpc->status = rpc->error ?: rpc->status;
	return rpc->status;
}

void pfs_rpc_release(struct pfs_rpc *rpc)
{
	/* Started but never waited for: take it back or let it finish. */
	if (rpc->conn) {
		if (!pfs_conn_unlink(rpc->conn, rpc))
			pfs_rpc_wait_taken(rpc->conn, rpc);
		if (rpc->bulk)
			rpc->conn->xprt->ops->bulk_unmap(rpc->conn->xprt, rpc);
		pfs_rpc_detach(rpc);
	}
	kvfree(rpc->reply);
	rpc->reply = NULL;
	rpc->reply_len = 0;
	rpc->data_len = 0;
	rpc->session_epoch = 0;
	rpc->reply_flags = 0;
}

static int pfs_conn_register(struct pfs_conn *c)
{
	struct pfs_net *net = c->net;
	int err;

	mutex_lock(&net->conns_lock);
	/* Checked under the lock abort and stop walk the list under. */
	err = pfs_net_check(net);
	if (!err)
		list_add_tail(&c->link, &net->conns);
	mutex_unlock(&net->conns_lock);
	return err;
}

/*
 * The connection acts for our client id from now on: the token it hashes
 * from, shown once per connection (BIND_CLIENT), before anything else.
 */
static int pfs_conn_bind(struct pfs_conn *c)
{
	struct pfs_client_token t;
	struct pfs_client_bound b;
	struct pfs_rpc rpc = { .type = PFS_MSG_BIND_CLIENT, .reply_max = 64 };
	u8 buf[PFS_CLIENT_TOKEN_LEN];
	struct pfs_xdr x;
	int err;

	memcpy(t.token, c->net->cfg.token, sizeof(t.token));
	pfs_xdr_init_encode(&x, buf, sizeof(buf));
	err = pfs_x_client_token(&x, &t);
	memzero_explicit(&t, sizeof(t));
	if (err)
		return err;
	rpc.req = buf;
	rpc.req_len = x.pos;
	err = pfs_conn_start(c, &rpc);
	memzero_explicit(buf, sizeof(buf));
	if (err)
		return err;
	err = pfs_rpc_wait(&rpc);
	if (!err) {
		pfs_xdr_init_decode(&x, rpc.reply, rpc.reply_len);
		pfs_x_client_bound(&x, &b);
		if (pfs_xdr_finish(&x) || b.client_id != c->net->cfg.client_id)
			err = -EPROTO;
	}
	if (err)
		pr_warn_ratelimited("%s: cannot bind our client id (%d)\n",
				    c->peer, err);
	pfs_rpc_release(&rpc);
	return err;
}

static struct pfs_conn *pfs_conn_open_nofs(struct pfs_net *net,
					   const struct pfs_xprt_ops *ops,
					   const struct sockaddr_storage *src,
					   const struct sockaddr_storage *addr,
					   const char *peer,
					   enum pfs_conn_kind kind)
{
	/* Metadata and management frames always carry MACs; data on asking. */
	u8 want = net->cfg.data_mac ?
		  PFS_AUTH_FRAME_MAC | PFS_AUTH_DATA_MAC :
		  kind != PFS_CONN_STORAGE ? PFS_AUTH_FRAME_MAC : 0;
	u8 session[PFS_AUTH_MAC_LEN];
	const struct pfs_net_config *cfg = &net->cfg;
	unsigned long deadline = jiffies +
				 msecs_to_jiffies(cfg->connect_timeout_ms);
	struct pfs_xprt *x;
	struct pfs_conn *c;
	int err;

	c = kzalloc(sizeof(*c), GFP_NOFS);
	if (!c)
		return ERR_PTR(-ENOMEM);
	c->scratch = kmalloc(PFS_SCRATCH_SIZE, GFP_NOFS);
	if (!c->scratch) {
		kfree(c);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&c->ref);
	mutex_init(&c->send_lock);
	xa_init_flags(&c->reqs, XA_FLAGS_ALLOC);
	INIT_LIST_HEAD(&c->link);
	c->next_id = 2;		/* 1 is the handshake's */
	c->rail = -1;
	atomic64_set(&c->bulk_inflight, 0);
	c->mgmt = kind == PFS_CONN_MGMT;
	strscpy(c->peer, peer, sizeof(c->peer));
	pfs_net_get(net);
	c->net = net;

	x = ops->connect(net->netns, src, addr, cfg->connect_timeout_ms,
			 cfg->timeout_ms);
	if (IS_ERR(x)) {
		err = PTR_ERR(x);
		goto fail;
	}
	c->xprt = x;
	if (pfs_net_stats(net, ops->name))
		atomic64_inc(&pfs_net_stats(net, ops->name)->conns);
	err = pfs_auth_handshake(net, x, c->peer, deadline, want, session);
	if (err > 0 && (err & PFS_AUTH_FRAME_MAC)) {
		c->data_mac = err & PFS_AUTH_DATA_MAC;
		c->mac = pfs_mac_create(session);
		err = IS_ERR(c->mac) ? PTR_ERR(c->mac) : 0;
		if (err)
			c->mac = NULL;
	}
	memzero_explicit(session, sizeof(session));
	if (err < 0)
		goto fail;
	err = pfs_conn_register(c);
	if (err)
		goto fail;
	c->rx = kthread_create(pfs_conn_rx_thread, c, "pfs-rx");
	if (IS_ERR(c->rx)) {
		err = PTR_ERR(c->rx);
		c->rx = NULL;
		pfs_conn_put(c);
		return ERR_PTR(err);
	}
	get_task_struct(c->rx);
	wake_up_process(c->rx);
	err = pfs_conn_bind(c);
	if (err) {
		pfs_conn_put(c);
		return ERR_PTR(err);
	}
	return c;

fail:
	pfs_mac_destroy(c->mac);
	if (c->xprt)
		c->xprt->ops->destroy(c->xprt);
	pfs_net_put(c->net);
	xa_destroy(&c->reqs);
	kfree(c->scratch);
	kfree(c);
	return ERR_PTR(err);
}

/* Writeback may need a connection: no allocation may recurse into it. */
struct pfs_conn *pfs_conn_open(struct pfs_net *net,
			       const struct pfs_xprt_ops *ops,
			       const struct sockaddr_storage *src,
			       const struct sockaddr_storage *addr,
			       const char *peer, enum pfs_conn_kind kind)
{
	unsigned int nofs = memalloc_nofs_save();
	struct pfs_conn *c = pfs_conn_open_nofs(net, ops, src, addr, peer,
						kind);

	memalloc_nofs_restore(nofs);
	return c;
}

static void pfs_conn_release(struct kref *ref)
{
	struct pfs_conn *c = container_of(ref, struct pfs_conn, ref);
	struct pfs_net *net = c->net;

	WRITE_ONCE(c->closing, true);
	pfs_conn_kill(c, -ESHUTDOWN);
	if (c->rx) {
		kthread_stop(c->rx);
		put_task_struct(c->rx);
	}
	mutex_lock(&net->conns_lock);
	list_del(&c->link);
	mutex_unlock(&net->conns_lock);
	c->xprt->ops->destroy(c->xprt);
	pfs_mac_destroy(c->mac);
	WARN_ON_ONCE(!xa_empty(&c->reqs));
	xa_destroy(&c->reqs);
	kfree(c->scratch);
	kfree(c);
	pfs_net_put(net);
}

void pfs_conn_put(struct pfs_conn *c)
{
	if (c)
		kref_put(&c->ref, pfs_conn_release);
}
