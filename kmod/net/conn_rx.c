// SPDX-License-Identifier: GPL-2.0
/*
 * The receiving side of a connection (conn.c): one kernel thread per
 * connection reads whole frames, hands each reply to the request with its
 * id (copying bulk data straight into the request's memory), passes
 * notices on, and kills the connection on anything malformed. A frame's
 * payload is read under the request timeout, so a server that stalls half
 * way cannot hold a waiter.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "net_int.h"
#include "../nvfs.h"

#define PFS_NOTIFY_MAX		(64u << 10)
/* The s32 status and, when it is not OK, its u16-counted message. */
#define PFS_STATUS_WIRE_MAX	(4 + 2 + PFS_STATUS_MSG_MAX)

/* What is left of the time the current frame's payload may take. */
static long pfs_conn_timeo(struct pfs_conn *c)
{
	long left = (long)(c->rx_deadline - jiffies);

	return left > 0 ? left : 0;
}

static int pfs_conn_recv(struct pfs_conn *c, void *buf, size_t len)
{
	int err = pfs_xprt_recv_buf(c->xprt, buf, len, pfs_conn_timeo(c));

	if (!err && c->mac)
		err = pfs_mac_rx_update(c->mac, buf, len);
	return err;
}

/* The end of a frame: its MAC, -EBADMSG when it is not the frame's. */
static int pfs_conn_rx_tag(struct pfs_conn *c)
{
	u8 tag[PFS_FRAME_MAC_LEN];
	int err;

	if (!c->mac)
		return 0;
	err = pfs_xprt_recv_buf(c->xprt, tag, sizeof(tag), pfs_conn_timeo(c));
	if (!err)
		err = pfs_mac_rx_check(c->mac, tag);
	if (err == -EBADMSG)
		pr_warn_ratelimited("%s: frame MAC does not verify: dropping the connection\n",
				    c->peer);
	return err;
}

/* len bytes dropped; mac: they count in the frame's MAC. */
static int pfs_conn_drop(struct pfs_conn *c, u32 len, bool mac)
{
	int err = 0;

	while (len && !err) {
		u32 n = min_t(u32, len, PFS_SCRATCH_SIZE);

		err = mac ? pfs_conn_recv(c, c->scratch, n) :
		      pfs_xprt_recv_buf(c->xprt, c->scratch, n,
					pfs_conn_timeo(c));
		len -= n;
	}
	return err;
}

static int pfs_conn_discard(struct pfs_conn *c, u32 len)
{
	return pfs_conn_drop(c, len, true);
}

/*
 * The rest of a frame nobody takes, and its MAC. Data that ends a bulk
 * reply in the frame (the transport has no bulk_placed) is under the MAC
 * only with data MACs.
 */
static int pfs_conn_skip(struct pfs_conn *c, const struct pfs_header *h)
{
	u32 rest = h->payload_len, data_len;
	int err;

	if (!c->mac || c->data_mac || !(h->flags & PFS_FLAG_BULK) ||
	    c->xprt->ops->bulk_placed)
		return pfs_conn_discard(c, rest) ?: pfs_conn_rx_tag(c);
	if (rest < 4)
		return -EBADMSG;
	err = pfs_conn_recv(c, c->scratch, 4);
	if (err)
		return err;
	data_len = le32_to_cpup((__le32 *)c->scratch);
	if (data_len > rest - 4)
		return -EBADMSG;
	return pfs_conn_discard(c, rest - 4 - data_len) ?:
	       pfs_conn_drop(c, data_len, false) ?: pfs_conn_rx_tag(c);
}

/*
 * The receiving helpers below return an error only when the byte stream is
 * lost (the connection dies); what the request itself gets is in *res.
 */

/* A non-OK status whose 4 bytes are in scratch; rest bytes follow. */
static int pfs_conn_rx_status(struct pfs_conn *c, struct pfs_rpc *rpc,
			      u32 rest, int *res)
{
	/* The decoded status lives in the upper half of scratch. */
	struct pfs_reply_status *st = (void *)(c->scratch +
					       PFS_SCRATCH_SIZE / 2);
	struct pfs_xdr x;
	int err;

	BUILD_BUG_ON(PFS_STATUS_WIRE_MAX > PFS_SCRATCH_SIZE / 2 ||
		     sizeof(*st) > PFS_SCRATCH_SIZE / 2);
	if (rest > PFS_STATUS_WIRE_MAX - 4)
		return -EMSGSIZE;
	err = pfs_conn_recv(c, c->scratch + 4, rest);
	if (err)
		return err;
	pfs_xdr_init_decode(&x, c->scratch, 4 + rest);
	pfs_x_reply_status(&x, st);
	if (pfs_xdr_finish(&x)) {
		pr_warn_ratelimited("%s: malformed %s reply status\n", c->peer,
				    pfs_msg_name(rpc->type));
		*res = -EIO;
		return 0;
	}
	pr_debug("%s: %s: %s (%s)\n", c->peer, pfs_msg_name(rpc->type),
		 pfs_status_name(st->status), st->message);
	rpc->status = pfs_status_to_errno(st->status);
	*res = 0;
	return 0;
}

/* The OK reply's body of len bytes, into a new buffer. */
static int pfs_conn_rx_body(struct pfs_conn *c, struct pfs_rpc *rpc, u32 len,
			    int *res)
{
	void *buf;
	int err;

	*res = 0;
	if (!len)
		return 0;
	if (len > (rpc->reply_max ?: PFS_MAX_PAYLOAD))
		return -EMSGSIZE;
	buf = kvmalloc(len, GFP_NOFS);
	if (!buf) {
		*res = -ENOMEM;
		return pfs_conn_discard(c, len);
	}
	err = pfs_conn_recv(c, buf, len);
	if (err) {
		kvfree(buf);
		return err;
	}
	rpc->reply = buf;
	rpc->reply_len = len;
	return 0;
}

static void pfs_conn_count_received(struct pfs_conn *c, u32 len)
{
	struct pfs_xprt_stats *st = pfs_net_stats(c->net, c->xprt->ops->name);

	if (st)
		atomic64_add(len, &st->bulk_received);
}

/*
 * A bulk reply's len data bytes: read into reply_data when they travel
 * inline, already there when the transport placed them.
 */
static int pfs_conn_rx_data(struct pfs_conn *c, struct pfs_rpc *rpc, u32 len)
{
	struct iov_iter *to = rpc->reply_data;
	struct iov_iter start;
	size_t room;
	int err;

	if (!len)
		return 0;
	if (!rpc->bulk_inline) {
		err = c->xprt->ops->bulk_placed(c->xprt, rpc, len);
		if (!err) {
			rpc->data_len = len;
			pfs_conn_count_received(c, len);
		}
		return err;
	}
	room = to ? iov_iter_count(to) : 0;
	if (len > room)
		return -EMSGSIZE;
	iov_iter_truncate(to, len);
	start = *to;
	err = c->xprt->ops->recv(c->xprt, to, pfs_conn_timeo(c));
	iov_iter_reexpand(to, iov_iter_count(to) + room - len);
	if (!err && c->mac && c->data_mac)
		err = pfs_mac_rx_update_iter(c->mac, &start, len);
	if (!err) {
		rpc->data_len = len;
		pfs_conn_count_received(c, len);
	}
	return err;
}

/*
 * A bulk reply opens with the count of its data bytes, which end it when
 * they travel inline; *rest (the payload) loses the count and the inline
 * data. The stream is lost (the connection dies) when the count cannot be
 * right.
 */
static int pfs_conn_rx_bulk_count(struct pfs_conn *c, struct pfs_rpc *rpc,
				  u32 *rest, u32 *data_len)
{
	int err;

	if (*rest < 4)
		return -EBADMSG;
	err = pfs_conn_recv(c, c->scratch, 4);
	if (err)
		return err;
	*data_len = le32_to_cpup((__le32 *)c->scratch);
	*rest -= 4;
	if (*data_len > (rpc->reply_data ? iov_iter_count(rpc->reply_data) : 0))
		return -EMSGSIZE;
	/* Inline, the data ends the payload; placed, it is not in it. */
	if (rpc->bulk_inline) {
		if (*data_len > *rest)
			return -EMSGSIZE;
		*rest -= *data_len;
	}
	return 0;
}

static int pfs_conn_rx_reply(struct pfs_conn *c, const struct pfs_header *h)
{
	struct pfs_rpc *rpc = pfs_conn_take(c, h->request_id);
	bool bulk = h->flags & PFS_FLAG_BULK;
	u32 rest = h->payload_len, data_len = 0;
	int res = -EIO;
	s32 status;
	int err;

	if (!rpc)			/* its waiter gave up on it */
		return pfs_conn_skip(c, h);
	if (h->type != rpc->type || bulk != rpc->bulk ||
	    h->payload_len < (bulk ? 8 : 4)) {
		pr_warn_ratelimited("%s: malformed reply to %s\n", c->peer,
				    pfs_msg_name(rpc->type));
		pfs_rpc_finish(rpc, -EIO);
		return pfs_conn_skip(c, h);
	}
	err = bulk ? pfs_conn_rx_bulk_count(c, rpc, &rest, &data_len) : 0;
	if (!err && rest < 4)
		err = -EBADMSG;
	if (!err)
		err = pfs_conn_recv(c, c->scratch, 4);
	if (!err) {
		status = (s32)le32_to_cpup((__le32 *)c->scratch);
		if (status != PFS_OK && data_len)
			err = -EBADMSG;
		else if (status != PFS_OK)
			err = pfs_conn_rx_status(c, rpc, rest - 4, &res);
		else
			err = pfs_conn_rx_body(c, rpc, rest - 4, &res) ?:
			      pfs_conn_rx_data(c, rpc, data_len);
	}
	if (err == -EMSGSIZE)
		pr_warn_ratelimited("%s: %s reply of %u bytes is larger than asked for\n",
				    c->peer, pfs_msg_name(rpc->type),
				    h->payload_len);
	else if (err == -EBADMSG)
		pr_warn_ratelimited("%s: malformed reply to %s\n", c->peer,
				    pfs_msg_name(rpc->type));
	/* Nothing of a reply is used before its MAC is checked. */
	if (!err)
		err = pfs_conn_rx_tag(c);
	/* Replies of metadata servers carry our session's epoch there. */
	if (!err && !res) {
		rpc->session_epoch = h->client_seq;
		rpc->reply_flags = h->flags;
	}
	pfs_rpc_finish(rpc, err ? -EIO : res);
	return err;
}

static int pfs_conn_rx_notify(struct pfs_conn *c, const struct pfs_header *h)
{
	const struct pfs_net_config *cfg = &c->net->cfg;
	void *buf;
	int err;

	if (h->payload_len > PFS_NOTIFY_MAX)
		return -EMSGSIZE;
	buf = kvmalloc(h->payload_len ?: 1, GFP_NOFS);
	if (!buf)
		return pfs_conn_discard(c, h->payload_len) ?:
		       pfs_conn_rx_tag(c);
	err = pfs_conn_recv(c, buf, h->payload_len) ?: pfs_conn_rx_tag(c);
	if (!err) {
		if (h->type == PFS_MSG_MAP_CHANGED)
			pfs_map_schedule(c->net, 0);
		else if (cfg->notify)
			cfg->notify(cfg->notify_ctx, h->type, buf,
				    h->payload_len);
	}
	kvfree(buf);
	return err;
}

static int pfs_conn_rx_frame(struct pfs_conn *c)
{
	u8 raw[PFS_HEADER_SIZE];
	struct pfs_header h;
	int err;

	/*
	 * An idle connection may stay silent for ever; once a frame has
	 * begun, all of it must come within the timeout.
	 */
	err = pfs_xprt_recv_buf(c->xprt, raw, 1, MAX_SCHEDULE_TIMEOUT);
	if (err)
		return err;
	c->rx_deadline = jiffies + msecs_to_jiffies(c->net->cfg.timeout_ms);
	/* Not through pfs_conn_recv: the MAC starts from the whole header. */
	err = pfs_xprt_recv_buf(c->xprt, raw + 1, sizeof(raw) - 1,
				pfs_conn_timeo(c));
	if (err)
		return err;
	err = pfs_header_decode(&h, raw, sizeof(raw));
	if (err) {
		pr_warn_ratelimited("%s: malformed frame header (%d)\n",
				    c->peer, err);
		return -EBADMSG;
	}
	if (c->mac) {
		err = pfs_mac_rx_begin(c->mac, raw);
		if (err)
			return err;
	}
	if (h.flags & PFS_FLAG_NOTIFY)
		return pfs_conn_rx_notify(c, &h);
	if (!(h.flags & PFS_FLAG_REPLY)) {
		pr_warn_ratelimited("%s: server sent a request (%s)\n",
				    c->peer, pfs_msg_name(h.type));
		return -EBADMSG;
	}
	return pfs_conn_rx_reply(c, &h);
}

int pfs_conn_rx_thread(void *arg)
{
	struct pfs_conn *c = arg;
	/* Replies finish page-cache writeback: never recurse into it. */
	unsigned int nofs = memalloc_nofs_save();
	int err = 0;

	while (!err && !kthread_should_stop())
		err = pfs_conn_rx_frame(c);
	if (!READ_ONCE(c->closing) && !pfs_conn_dead(c)) {
		pr_info_ratelimited("%s: connection lost (%d)\n", c->peer, err);
		/* Before its requests are failed: their retries go elsewhere. */
		if (c->rail >= 0)
			pfs_rail_failed(c->net, c->rail);
	}
	pfs_conn_kill(c, -EIO);
	if (!READ_ONCE(c->closing) && c->net->cfg.lost)
		c->net->cfg.lost(c->net->cfg.notify_ctx);
	/* Lost mgmtd: reconnect and resubscribe, the map may have changed. */
	if (c->mgmt && !READ_ONCE(c->closing))
		pfs_map_schedule(c->net, 0);
	memalloc_nofs_restore(nofs);
	return 0;
}
