// SPDX-License-Identifier: GPL-2.0
/*
 * A server, the paths to it and their pools of connections. A path is an
 * RDMA rail (one per local rail that reaches the server, or per RDMA
 * address it lists) or TCP. A request takes the RDMA path with the least
 * under way (bulk bytes, then requests), preferring rails on this CPU's
 * NUMA node; a rail that fails to connect or loses its connection is left
 * alone for a back-off (1 s doubling to 30 s) and its requests go to the
 * other rails, then to TCP unless transport=rdma. Within a path,
 * connections are opened lazily, up to conns_per_server: a request takes
 * the live connection with the fewest requests in flight and opens
 * another one only when all of them are busy. When TCP cannot connect,
 * requests fail fast with -EIO for a back-off (doubling up to a few
 * seconds) instead of each waiting out a connect timeout.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/in.h>
#include <linux/slab.h>
#include <linux/topology.h>

#include "net_int.h"
#include "../nvfs.h"

#define PFS_BACKOFF_MIN_MS	250
#define PFS_BACKOFF_MAX_MS	4000
/* An RDMA path (to one server) that failed to connect: at most 30 s. */
#define PFS_RDMA_BACKOFF_MIN_MS	1000
#define PFS_RDMA_BACKOFF_MAX_MS	30000

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

static bool pfs_same_subnet(const struct sockaddr_storage *a, __be32 mask,
			    const struct sockaddr_storage *b)
{
	const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

	return a->ss_family == AF_INET && b->ss_family == AF_INET &&
	       !((x->sin_addr.s_addr ^ y->sin_addr.s_addr) & mask);
}

/*
 * The ways to reach a node: with rails configured, one per rail that has
 * an RDMA address of the node in its subnet; without, one per RDMA address
 * the node lists; then TCP, unless the mount wants RDMA alone. Returns
 * how many there are, filled into paths unless it is NULL.
 */
static unsigned int pfs_node_paths(struct pfs_net *net,
				   const struct sockaddr_storage *addr,
				   const struct sockaddr_storage *rdma, u8 nrdma,
				   struct pfs_route *paths)
{
	unsigned int n = 0, i, j;

#if IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
	if (net->nrails) {
		for (i = 0; i < net->nrails; i++) {
			for (j = 0; j < nrdma; j++) {
				if (!pfs_same_subnet(&net->rails[i].addr,
						     net->rails[i].mask,
						     &rdma[j]))
					continue;
				if (paths)
					paths[n] = (struct pfs_route){
						.ops = &pfs_rdma_ops,
						.src = net->rails[i].addr,
						.dst = rdma[j], .rail = i };
				n++;
				break;
			}
		}
	} else {
		for (j = 0; j < nrdma; j++, n++)
			if (paths)
				paths[n] = (struct pfs_route){
					.ops = &pfs_rdma_ops,
					.src.ss_family = AF_UNSPEC,
					.dst = rdma[j], .rail = -1 };
	}
#endif
	if (net->cfg.transport != PFS_XPRT_RDMA) {
		if (paths)
			paths[n] = (struct pfs_route){
				.ops = &pfs_tcp_ops,
				.src.ss_family = AF_UNSPEC,
				.dst = *addr, .rail = -1 };
		n++;
	}
	return n;
}

struct pfs_node *pfs_node_create(struct pfs_net *net, u32 id, u16 type,
				 const struct sockaddr_storage *addr,
				 const struct sockaddr_storage *rdma, u8 nrdma)
{
	unsigned int n = net->cfg.conns_per_server, np, i;
	struct pfs_node *node;

	np = pfs_node_paths(net, addr, rdma, nrdma, NULL);
	node = kzalloc(struct_size(node, paths, np), GFP_NOFS);
	if (!node)
		return NULL;
	pfs_node_paths(net, addr, rdma, nrdma, node->paths);
	for (i = 0; i < np; i++) {
		node->paths[i].retry_at = jiffies;
		node->paths[i].slots = kcalloc(n, sizeof(*node->paths[i].slots),
					       GFP_NOFS);
		if (!node->paths[i].slots)
			goto nomem;
		node->npaths++;
	}
	kref_init(&node->ref);
	spin_lock_init(&node->lock);
	mutex_init(&node->connect_lock);
	node->id = id;
	node->type = type;
	node->addr = *addr;
	node->nrdma = nrdma;
	memcpy(node->rdma, rdma, nrdma * sizeof(*rdma));
	node->nslots = n;
	if (addr->ss_family == AF_UNSPEC)
		snprintf(node->name, sizeof(node->name), "%s %u",
			 pfs_node_type_name(type), id);
	else
		snprintf(node->name, sizeof(node->name), "%s %u (%pISpc)",
			 pfs_node_type_name(type), id, addr);
	pfs_net_get(net);
	node->net = net;
	return node;
nomem:
	for (i = 0; i < node->npaths; i++)
		kfree(node->paths[i].slots);
	kfree(node);
	return NULL;
}

static void pfs_node_release(struct kref *ref)
{
	struct pfs_node *node = container_of(ref, struct pfs_node, ref);
	unsigned int i, j;

	for (i = 0; i < node->npaths; i++) {
		for (j = 0; j < node->nslots; j++)
			pfs_conn_put(node->paths[i].slots[j]);
		kfree(node->paths[i].slots);
		put_device(node->paths[i].dma_dev);
	}
	pfs_net_put(node->net);
	kfree(node);
}

void pfs_node_put(struct pfs_node *node)
{
	if (node)
		kref_put(&node->ref, pfs_node_release);
}

static bool pfs_route_rdma(const struct pfs_route *p)
{
	return p->ops != &pfs_tcp_ops;
}

static bool pfs_route_backing_off(const struct pfs_route *p)
{
	return time_before(jiffies, READ_ONCE(p->retry_at));
}

/*
 * The live connection of path p with the least in flight (referenced), or
 * NULL; *room tells whether a slot is empty or holds a dead connection.
 * node->lock held.
 */
static struct pfs_conn *pfs_route_pick(struct pfs_node *node,
				      struct pfs_route *p, bool *room)
{
	struct pfs_conn *best = NULL;
	unsigned int i;

	*room = false;
	for (i = 0; i < node->nslots; i++) {
		struct pfs_conn *c = p->slots[i];

		if (!c || pfs_conn_dead(c))
			*room = true;
		else if (!best || pfs_conn_load(c) < pfs_conn_load(best))
			best = c;
	}
	if (best)
		pfs_conn_get(best);
	return best;
}

/* What is under way on path p: bulk bytes, then requests. node->lock held. */
static u64 pfs_route_load(struct pfs_node *node, struct pfs_route *p)
{
	u64 bytes = 0, reqs = 0;
	unsigned int i;

	for (i = 0; i < node->nslots; i++) {
		struct pfs_conn *c = p->slots[i];

		if (c && !pfs_conn_dead(c)) {
			bytes += atomic64_read(&c->bulk_inflight);
			reqs += pfs_conn_load(c);
		}
	}
	return bytes + reqs;	/* a request counts as a byte: ties broken */
}

/* An RDMA path neither backing off nor on a rail that is down. */
static bool pfs_route_usable_rdma(struct pfs_node *node, struct pfs_route *p)
{
	return pfs_route_rdma(p) && !pfs_route_backing_off(p) &&
	       (p->rail < 0 || pfs_rail_usable(node->net, p->rail));
}

/*
 * The path a request takes: the RDMA path with the least under way, among
 * those not backing off and, when any is, on this CPU's NUMA node; else
 * TCP (never with transport=rdma). NULL: none to use now.
 */
static struct pfs_route *pfs_node_choose(struct pfs_node *node)
{
	struct pfs_net *net = node->net;
	struct pfs_route *best = NULL, *tcp = NULL;
	bool best_local = false, was_tcp, any_rdma = false;
	u64 best_load = 0;
	unsigned int i;

	spin_lock(&node->lock);
	for (i = 0; i < node->npaths; i++) {
		struct pfs_route *p = &node->paths[i];
		bool local;
		u64 load;

		if (!pfs_route_rdma(p)) {
			tcp = p;
			continue;
		}
		any_rdma = true;
		if (!pfs_route_usable_rdma(node, p))
			continue;
		local = p->rail >= 0 &&
			net->rails[p->rail].numa == numa_node_id();
		load = pfs_route_load(node, p);
		if (!best || (local && !best_local) ||
		    (local == best_local && load < best_load)) {
			best = p;
			best_local = local;
			best_load = load;
		}
	}
	was_tcp = node->over_tcp;
	node->over_tcp = any_rdma && !best && tcp;
	spin_unlock(&node->lock);
	/* Said once each way, not per request. */
	if (node->over_tcp && !was_tcp)
		pr_warn("%s: every RDMA rail is down: over TCP meanwhile\n",
			node->name);
	else if (!node->over_tcp && was_tcp && best)
		pr_info("%s: back on RDMA\n", node->name);
	return best ?: tcp;
}

/* Path p's device can DMA to g's memory (or copy, for a test double's). */
static bool pfs_route_reaches_gpu(const struct pfs_route *p,
				  const struct pfs_gpu_io *g)
{
	return p->dma_dev && (!p->dma_virt || pfs_gpu_virtual_ok(g));
}

/*
 * The path a transfer on GPU memory takes: the usable RDMA path whose
 * device nvidia-fs ranks nearest the GPU, the least busy among equals;
 * NULL when none is usable (TCP never: the CPU cannot reach GPU memory,
 * nor a device that cannot DMA). A path not connected yet ranks last.
 */
static struct pfs_route *pfs_node_choose_gpu(struct pfs_node *node,
					     const struct pfs_gpu_io *gpu)
{
	struct pfs_route *best = NULL;
	unsigned int best_rank = 0, i;
	u64 best_load = 0;

	spin_lock(&node->lock);
	for (i = 0; i < node->npaths; i++) {
		struct pfs_route *p = &node->paths[i];
		unsigned int rank;
		u64 load;

		if (!pfs_route_usable_rdma(node, p) ||
		    (p->dev_known && !pfs_route_reaches_gpu(p, gpu)))
			continue;
		rank = p->dma_dev ? pfs_gpu_priority(gpu, p->dma_dev) :
				    UINT_MAX;
		load = pfs_route_load(node, p);
		if (!best || rank < best_rank ||
		    (rank == best_rank && load < best_load)) {
			best = p;
			best_rank = rank;
			best_load = load;
		}
	}
	spin_unlock(&node->lock);
	return best;
}

/* A path failed to connect (or lost its connection): back off. */
static void pfs_route_failed(struct pfs_node *node, struct pfs_route *p,
			    int err)
{
	struct pfs_net *net = node->net;
	bool rdma = pfs_route_rdma(p);

	p->backoff_ms = clamp_t(unsigned int, p->backoff_ms * 2,
				rdma ? PFS_RDMA_BACKOFF_MIN_MS :
				       PFS_BACKOFF_MIN_MS,
				rdma ? PFS_RDMA_BACKOFF_MAX_MS :
				       PFS_BACKOFF_MAX_MS);
	WRITE_ONCE(p->retry_at, jiffies + msecs_to_jiffies(p->backoff_ms));
	if (p->rail >= 0)
		pfs_rail_failed(net, p->rail);
	if (!rdma)
		pr_warn_ratelimited("cannot connect to %s (%d); failing its requests for %u ms\n",
				    node->name, err, p->backoff_ms);
	else if (net->cfg.transport == PFS_XPRT_RDMA)
		pr_warn_ratelimited("%s: cannot connect over RDMA to %pISpc (%d); transport=rdma allows nothing else\n",
				    node->name, &p->dst, err);
	else
		pr_warn_ratelimited("%s: no RDMA connection to %pISpc%s%s (%d): trying again in %u ms, meanwhile %s\n",
				    node->name, &p->dst,
				    p->rail >= 0 ? " through " : "",
				    p->rail >= 0 ? net->rails[p->rail].name : "",
				    err, p->backoff_ms,
				    node->npaths > 2 ? "other rails or TCP" :
						       "TCP");
}

/* Opens a connection on p and puts it into a free slot; connect_lock held. */
static struct pfs_conn *pfs_route_grow(struct pfs_node *node,
				      struct pfs_route *p)
{
	enum pfs_conn_kind kind = node->type == PFS_NODE_META ?
				  PFS_CONN_META : PFS_CONN_STORAGE;
	struct pfs_conn *c, *old = NULL;
	struct device *dev;
	bool virt = false;
	unsigned int i;

	c = pfs_conn_open(node->net, p->ops, &p->src, &p->dst, node->name,
			  kind);
	if (IS_ERR(c)) {
		int err = PTR_ERR(c);

		if (err == -EINTR || err == -EIO || err == -ESHUTDOWN)
			return c;	/* killed, aborted or stopping */
		pfs_route_failed(node, p, err);
		return ERR_PTR(-EIO);
	}
	c->rail = p->rail;
	p->backoff_ms = 0;
	if (p->rail >= 0)
		pfs_rail_works(node->net, p->rail);
	pfs_conn_get(c);		/* the caller's; the slot keeps one */
	dev = p->ops->dma_device ?
	      get_device(p->ops->dma_device(c->xprt, &virt)) : NULL;
	spin_lock(&node->lock);
	swap(p->dma_dev, dev);
	p->dma_virt = virt;
	p->dev_known = true;
	for (i = 0; i < node->nslots; i++) {
		if (!p->slots[i] || pfs_conn_dead(p->slots[i])) {
			old = p->slots[i];
			p->slots[i] = c;
			break;
		}
	}
	spin_unlock(&node->lock);
	/* Slots only fill under connect_lock, and the caller saw room. */
	if (WARN_ON_ONCE(i == node->nslots))
		pfs_conn_put(c);
	pfs_conn_put(old);
	put_device(dev);		/* the one it replaced */
	return c;
}

static struct pfs_conn *pfs_route_pick_locked(struct pfs_node *node,
					     struct pfs_route *p, bool *room)
{
	struct pfs_conn *c;

	spin_lock(&node->lock);
	c = pfs_route_pick(node, p, room);
	spin_unlock(&node->lock);
	return c;
}

/* A referenced live connection on path p, opened if needed. */
static struct pfs_conn *pfs_route_conn(struct pfs_node *node,
				      struct pfs_route *p)
{
	struct pfs_conn *c, *fresh;
	bool room;

	if (p->dst.ss_family == AF_UNSPEC)
		return ERR_PTR(-EIO);	/* no usable address in the map */
	c = pfs_route_pick_locked(node, p, &room);
	if (c && (!room || !pfs_conn_load(c)))
		return c;
	if (c) {
		/* Busy but working: grow only when nobody else is at it. */
		if (pfs_route_backing_off(p) ||
		    !mutex_trylock(&node->connect_lock))
			return c;
	} else {
		if (pfs_route_backing_off(p))
			return ERR_PTR(-EIO);
		if (mutex_lock_killable(&node->connect_lock))
			return ERR_PTR(-EINTR);
	}
	/* Look again: whoever held the lock may have done our work. */
	pfs_conn_put(c);
	c = pfs_route_pick_locked(node, p, &room);
	if (c && (!room || !pfs_conn_load(c)))
		goto out;
	if (pfs_route_backing_off(p)) {
		if (!c)
			c = ERR_PTR(-EIO);
		goto out;
	}
	fresh = pfs_route_grow(node, p);
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

/*
 * Connects the usable RDMA paths whose device is not known yet, so that
 * the first transfer on GPU memory already goes by the nearest rail.
 */
static void pfs_node_learn_devices(struct pfs_node *node)
{
	unsigned int i;

	for (i = 0; i < node->npaths; i++) {
		struct pfs_route *p = &node->paths[i];
		struct pfs_conn *c;

		if (READ_ONCE(p->dev_known) || !pfs_route_usable_rdma(node, p))
			continue;
		c = pfs_route_conn(node, p);
		if (!IS_ERR(c))
			pfs_conn_put(c);
	}
}

/* No path for a transfer on GPU memory: why, as an errno. */
static int pfs_node_no_gpu_path(struct pfs_node *node,
				 const struct pfs_gpu_io *gpu)
{
	bool rdma = false, gpu_path = false;
	unsigned int i;

	spin_lock(&node->lock);
	for (i = 0; i < node->npaths; i++) {
		struct pfs_route *p = &node->paths[i];

		if (!pfs_route_rdma(p))
			continue;
		rdma = true;
		if (!p->dev_known || pfs_route_reaches_gpu(p, gpu))
			gpu_path = true;
	}
	spin_unlock(&node->lock);
	if (gpu_path)
		return -EIO;	/* down or backing off: it may come back */
	pr_warn_ratelimited("%s: GPU memory moves by RDMA only, and this mount has %s: EOPNOTSUPP\n",
			    node->name, rdma ?
			    "no RDMA device that can DMA to it (soft-RoCE?)" :
			    "no RDMA path to it");
	return -EOPNOTSUPP;
}

int pfs_rpc_start(struct pfs_node *node, struct pfs_rpc *rpc)
{
	struct pfs_net *net = node->net;
	unsigned int tries = node->npaths + 1;
	struct pfs_conn *c;
	struct pfs_route *p;
	int err;

	if (rpc->gpu)
		pfs_node_learn_devices(node);
	do {
		err = pfs_net_check(net);
		if (err)
			return err;
		p = rpc->gpu ? pfs_node_choose_gpu(node, rpc->gpu) :
			       pfs_node_choose(node);
		if (!p && rpc->gpu)
			return pfs_node_no_gpu_path(node, rpc->gpu);
		if (!p)
			return -EIO;	/* transport=rdma, every rail down */
		c = pfs_route_conn(node, p);
		if (IS_ERR(c)) {
			err = PTR_ERR(c);
			/* A rail that cannot connect: another may. */
			if (err == -EIO && pfs_route_rdma(p))
				continue;
			return err;
		}
		err = pfs_conn_start(c, rpc);
		if (!err && c->rail >= 0) {
			atomic64_inc(&net->rails[c->rail].requests);
			atomic64_add(rpc->bulk_bytes,
				     &net->rails[c->rail].bytes);
		}
		pfs_conn_put(c);
		/* Died before anything was sent: a fresh one may work. */
	} while ((err == -ENOTCONN || err == -EIO) && --tries);
	return err == -ENOTCONN ? -EIO : err;
}

bool pfs_node_failover(struct pfs_node *node, const struct pfs_rpc *rpc)
{
	struct pfs_route *p, *next;
	unsigned int i;

	if (rpc->rail < 0)
		return false;
	for (i = 0; i < node->npaths; i++) {
		p = &node->paths[i];
		if (pfs_route_rdma(p) && p->rail == rpc->rail) {
			pfs_route_failed(node, p, -ETIMEDOUT);
			break;
		}
	}
	next = rpc->gpu ? pfs_node_choose_gpu(node, rpc->gpu) :
			  pfs_node_choose(node);
	return next && next->rail != rpc->rail;
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
