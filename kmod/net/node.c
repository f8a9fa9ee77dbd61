// SPDX-License-Identifier: GPL-2.0
/*
 * A server and its pool of connections. Connections are opened lazily,
 * up to conns_per_server: a request takes the live connection with the
 * fewest requests in flight and opens another one only when all of them
 * are busy. A dead connection is replaced by the next request; when
 * connecting fails, requests to that server fail fast with -EIO for a
 * back-off period (doubling up to a few seconds) instead of each waiting
 * out a connect timeout against a server that is down.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "net_int.h"

#define PFS_BACKOFF_MIN_MS	250
#define PFS_BACKOFF_MAX_MS	4000
/* transport=auto: after a failed RDMA connect, TCP for this long. */
#define PFS_RDMA_RETRY_MS	30000

static const char *pfs_node_type_name(u16 type)
{
	switch (type) {
	case PFS_NODE_MGMT:
		return "mgmtd";
	case PFS_NODE_META:
		return "meta";
	case PFS_NODE_STORAGE:
		return "storage";
	default:
		return "node";
	}
}

struct pfs_node *pfs_node_create(struct pfs_net *net, u32 id, u16 type,
				 const struct sockaddr_storage *addr,
				 const struct sockaddr_storage *rdma)
{
	unsigned int n = net->cfg.conns_per_server;
	struct pfs_node *node;

	node = kzalloc(struct_size(node, slots, n), GFP_NOFS);
	if (!node)
		return NULL;
	kref_init(&node->ref);
	spin_lock_init(&node->lock);
	mutex_init(&node->connect_lock);
	node->id = id;
	node->type = type;
	node->addr = *addr;
	node->rdma = *rdma;
	node->rdma_retry_at = jiffies;
	node->nslots = n;
	node->retry_at = jiffies;
	if (addr->ss_family == AF_UNSPEC)
		snprintf(node->name, sizeof(node->name), "%s %u",
			 pfs_node_type_name(type), id);
	else
		snprintf(node->name, sizeof(node->name), "%s %u (%pISpc)",
			 pfs_node_type_name(type), id, addr);
	pfs_net_get(net);
	node->net = net;
	return node;
}

static void pfs_node_release(struct kref *ref)
{
	struct pfs_node *node = container_of(ref, struct pfs_node, ref);
	unsigned int i;

	for (i = 0; i < node->nslots; i++)
		pfs_conn_put(node->slots[i]);
	pfs_net_put(node->net);
	kfree(node);
}

void pfs_node_put(struct pfs_node *node)
{
	if (node)
		kref_put(&node->ref, pfs_node_release);
}

/*
 * The live connection with the least in flight (referenced), or NULL;
 * *room tells whether a slot is empty or holds a dead connection.
 */
static struct pfs_conn *pfs_node_pick(struct pfs_node *node, bool *room)
{
	struct pfs_conn *best = NULL;
	unsigned int i;

	*room = false;
	spin_lock(&node->lock);
	for (i = 0; i < node->nslots; i++) {
		struct pfs_conn *c = node->slots[i];

		if (!c || pfs_conn_dead(c))
			*room = true;
		else if (!best || pfs_conn_load(c) < pfs_conn_load(best))
			best = c;
	}
	if (best)
		pfs_conn_get(best);
	spin_unlock(&node->lock);
	return best;
}

static bool pfs_node_backing_off(struct pfs_node *node)
{
	return time_before(jiffies, READ_ONCE(node->retry_at));
}

/*
 * A new connection to node: over RDMA where it offers RDMA and the mount
 * allows it, else (or, with transport=auto, when RDMA fails) over TCP.
 */
static struct pfs_conn *pfs_node_open(struct pfs_node *node)
{
	struct pfs_net *net = node->net;
	enum pfs_conn_kind kind = node->type == PFS_NODE_META ?
				  PFS_CONN_META : PFS_CONN_STORAGE;
	struct pfs_conn *c;

#if IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
	if (node->rdma.ss_family != AF_UNSPEC &&
	    (net->cfg.transport == PFS_XPRT_RDMA ||
	     !time_before(jiffies, READ_ONCE(node->rdma_retry_at)))) {
		c = pfs_conn_open(net, &pfs_rdma_ops, &node->rdma, node->name,
				  kind);
		if (!IS_ERR(c) || PTR_ERR(c) == -EINTR)
			return c;
		if (net->cfg.transport == PFS_XPRT_RDMA) {
			pr_warn_ratelimited("%s: cannot connect over RDMA to %pISpc (%ld); transport=rdma allows nothing else\n",
					    node->name, &node->rdma, PTR_ERR(c));
			return c;
		}
		pr_warn_ratelimited("%s: no RDMA connection to %pISpc (%ld): using TCP\n",
				    node->name, &node->rdma, PTR_ERR(c));
		/* Tried again by the first connection after a while. */
		WRITE_ONCE(node->rdma_retry_at,
			   jiffies + msecs_to_jiffies(PFS_RDMA_RETRY_MS));
	}
#endif
	if (net->cfg.transport == PFS_XPRT_RDMA)
		return ERR_PTR(-EHOSTUNREACH);	/* no RDMA address offered */
	return pfs_conn_open(net, &pfs_tcp_ops, &node->addr, node->name,
			     kind);
}

/* Opens a connection and puts it into a free slot; connect_lock held. */
static struct pfs_conn *pfs_node_grow(struct pfs_node *node)
{
	struct pfs_conn *c, *old = NULL;
	unsigned int i;

	c = pfs_node_open(node);
	if (IS_ERR(c)) {
		int err = PTR_ERR(c);

		if (err == -EINTR || err == -EIO || err == -ESHUTDOWN)
			return c;	/* killed, aborted or stopping */
		node->backoff_ms = clamp_t(unsigned int, node->backoff_ms * 2,
					   PFS_BACKOFF_MIN_MS,
					   PFS_BACKOFF_MAX_MS);
		WRITE_ONCE(node->retry_at,
			   jiffies + msecs_to_jiffies(node->backoff_ms));
		pr_warn_ratelimited("cannot connect to %s (%d); failing its requests for %u ms\n",
				    node->name, err, node->backoff_ms);
		return ERR_PTR(-EIO);
	}
	node->backoff_ms = 0;
	pfs_conn_get(c);		/* the caller's; the slot keeps one */
	spin_lock(&node->lock);
	for (i = 0; i < node->nslots; i++) {
		if (!node->slots[i] || pfs_conn_dead(node->slots[i])) {
			old = node->slots[i];
			node->slots[i] = c;
			break;
		}
	}
	spin_unlock(&node->lock);
	/* Slots only fill under connect_lock, and the caller saw room. */
	if (WARN_ON_ONCE(i == node->nslots))
		pfs_conn_put(c);
	pfs_conn_put(old);
	return c;
}

/* A referenced live connection to node, opened if needed. */
static struct pfs_conn *pfs_node_conn(struct pfs_node *node)
{
	struct pfs_conn *c, *fresh;
	bool room;

	if (node->addr.ss_family == AF_UNSPEC)
		return ERR_PTR(-EIO);	/* no usable address in the map */
	c = pfs_node_pick(node, &room);
	if (c && (!room || !pfs_conn_load(c)))
		return c;
	if (c) {
		/* Busy but working: grow only when nobody else is at it. */
		if (pfs_node_backing_off(node) ||
		    !mutex_trylock(&node->connect_lock))
			return c;
	} else {
		if (pfs_node_backing_off(node))
			return ERR_PTR(-EIO);
		if (mutex_lock_killable(&node->connect_lock))
			return ERR_PTR(-EINTR);
	}
	/* Look again: whoever held the lock may have done our work. */
	pfs_conn_put(c);
	c = pfs_node_pick(node, &room);
	if (c && (!room || !pfs_conn_load(c)))
		goto out;
	if (pfs_node_backing_off(node)) {
		if (!c)
			c = ERR_PTR(-EIO);
		goto out;
	}
	fresh = pfs_node_grow(node);
	if (!IS_ERR(fresh)) {
		pfs_conn_put(c);
		c = fresh;
	} else if (!c) {
		c = fresh;
	}
out:
	mutex_unlock(&node->connect_lock);
	return c;
}

int pfs_rpc_start(struct pfs_node *node, struct pfs_rpc *rpc)
{
	struct pfs_conn *c;
	int tries = 2;
	int err;

	do {
		err = pfs_net_check(node->net);
		if (err)
			return err;
		c = pfs_node_conn(node);
		if (IS_ERR(c))
			return PTR_ERR(c);
		err = pfs_conn_start(c, rpc);
		pfs_conn_put(c);
		/* Died before anything was sent: a fresh one may work. */
	} while (err == -ENOTCONN && --tries);
	return err == -ENOTCONN ? -EIO : err;
}

int pfs_rpc_call(struct pfs_node *node, struct pfs_rpc *rpc)
{
	int err = pfs_rpc_start(node, rpc);

	if (err) {
		rpc->status = err;
		return err;
	}
	return pfs_rpc_wait(rpc);
}
