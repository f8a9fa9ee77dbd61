// SPDX-License-Identifier: GPL-2.0
/*
 * The cluster map: which servers exist, where they listen, which storage
 * node serves which target. It comes from mgmtd (GET_NODES, GET_TARGETS)
 * over a connection subscribed to MAP_CHANGED pushes; each push, and each
 * loss of that connection, refetches the whole map from a work item (never
 * from the receiving thread, which must keep reading replies).
 *
 * A refresh builds a new map and swaps it in; requests keep the nodes
 * they hold. A node whose id, type and address did not change is carried
 * over, connections and all.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <net/ipv6.h>

#include "net_int.h"

#define PFS_MAP_BACKOFF_MIN_MS	500
#define PFS_MAP_BACKOFF_MAX_MS	30000

struct pfs_map_target {
	u32 id;
	struct pfs_node *node;		/* referenced through nodes[] */
};

struct pfs_map {
	u32 nnodes;
	u32 ntargets;
	u32 root_meta;			/* lowest meta node id, 0: none */
	struct pfs_node **nodes;	/* sorted by id, referenced */
	struct pfs_map_target *targets;	/* sorted by id */
};

void pfs_map_free(struct pfs_map *map)
{
	u32 i;

	if (!map)
		return;
	for (i = 0; i < map->nnodes; i++)
		pfs_node_put(map->nodes[i]);
	kvfree(map->nodes);
	kvfree(map->targets);
	kfree(map);
}

static struct pfs_node *pfs_map_node(const struct pfs_map *map, u32 id)
{
	u32 lo = 0, hi = map ? map->nnodes : 0;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (map->nodes[mid]->id == id)
			return map->nodes[mid];
		if (map->nodes[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static struct pfs_node *pfs_map_target(const struct pfs_map *map, u32 id)
{
	u32 lo = 0, hi = map ? map->ntargets : 0;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (map->targets[mid].id == id)
			return map->targets[mid].node;
		if (map->targets[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The textual address mgmtd hands out: an IPv4 or IPv6 literal. */
static void pfs_parse_addr(const char *host, u16 port,
			   struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct in6_addr a6;

	memset(ss, 0, sizeof(*ss));
	ss->ss_family = AF_UNSPEC;
	if (!port)
		return;
	if (in4_pton(host, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL)) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
	} else if (in6_pton(host, -1, a6.s6_addr, -1, NULL)) {
		if (ipv6_addr_v4mapped(&a6)) {
			sin->sin_family = AF_INET;
			sin->sin_addr.s_addr = a6.s6_addr32[3];
			sin->sin_port = htons(port);
		} else {
			sin6->sin6_family = AF_INET6;
			sin6->sin6_addr = a6;
			sin6->sin6_port = htons(port);
		}
	}
}

static bool pfs_addr_equal(const struct sockaddr_storage *a,
			   const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	switch (a->ss_family) {
	case AF_INET:
		return a4->sin_port == b4->sin_port &&
		       a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	case AF_INET6:
		return a6->sin6_port == b6->sin6_port &&
		       ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr);
	default:
		return true;
	}
}

/* The RDMA addresses a node lists (none when this mount uses TCP alone). */
static u8 pfs_node_rdma_addrs(const struct pfs_net *net,
			      const struct pfs_node_info *info,
			      struct sockaddr_storage *rdma)
{
	u8 i, n = 0;

	if (net->cfg.transport == PFS_XPRT_TCP)
		return 0;
	for (i = 0; i < info->naddrs && i < PFS_NODE_ADDRS_MAX; i++) {
		if (info->addrs[i].transport != PFS_TRANSPORT_RDMA)
			continue;
		pfs_parse_addr(info->addrs[i].addr, info->addrs[i].port,
			       &rdma[n]);
		if (rdma[n].ss_family != AF_UNSPEC)
			n++;
	}
	return n;
}

static bool pfs_node_same(const struct pfs_node *node,
			  const struct pfs_node_info *info,
			  const struct sockaddr_storage *addr,
			  const struct sockaddr_storage *rdma, u8 nrdma)
{
	u8 i;

	if (node->type != info->node_type ||
	    !pfs_addr_equal(&node->addr, addr) || node->nrdma != nrdma)
		return false;
	for (i = 0; i < nrdma; i++)
		if (!pfs_addr_equal(&node->rdma[i], &rdma[i]))
			return false;
	return true;
}

/* The node for info: the old map's when unchanged, else a new one. */
static struct pfs_node *pfs_map_take_node(struct pfs_net *net,
					  const struct pfs_map *old,
					  const struct pfs_node_info *info,
					  struct sockaddr_storage *rdma)
{
	struct sockaddr_storage addr;
	struct pfs_node *node;
	u8 nrdma;

	pfs_parse_addr(info->host, info->port, &addr);
	nrdma = pfs_node_rdma_addrs(net, info, rdma);
	node = pfs_map_node(old, info->node_id);
	if (node && pfs_node_same(node, info, &addr, rdma, nrdma)) {
		pfs_node_get(node);
		return node;
	}
	if (addr.ss_family == AF_UNSPEC && info->node_type != PFS_NODE_CLIENT)
		pr_warn("%s %u: cannot use address \"%s\" port %u (only IP literals are supported)\n",
			info->node_type == PFS_NODE_META ? "meta" : "node",
			info->node_id, info->host, info->port);
	return pfs_node_create(net, info->node_id, info->node_type, &addr,
			       rdma, nrdma);
}

static int pfs_cmp_node(const void *a, const void *b)
{
	u32 x = (*(struct pfs_node * const *)a)->id;
	u32 y = (*(struct pfs_node * const *)b)->id;

	return x < y ? -1 : x > y;
}

static int pfs_cmp_target(const void *a, const void *b)
{
	u32 x = ((const struct pfs_map_target *)a)->id;
	u32 y = ((const struct pfs_map_target *)b)->id;

	return x < y ? -1 : x > y;
}

static int pfs_map_add_nodes(struct pfs_net *net, struct pfs_map *map,
			     const void *buf, u32 len)
{
	/* stable: only replaced under mgmt_lock, which the caller holds */
	const struct pfs_map *old = net->map;
	struct sockaddr_storage *rdma;
	struct pfs_node_info *info;
	struct pfs_xdr x;
	u32 n, i;

	info = kmalloc(sizeof(*info), GFP_NOFS);
	rdma = kcalloc(PFS_NODE_ADDRS_MAX, sizeof(*rdma), GFP_NOFS);
	if (!info || !rdma) {
		kfree(info);
		kfree(rdma);
		return -ENOMEM;
	}
	pfs_xdr_init_decode(&x, buf, len);
	pfs_x_count(&x, &n, PFS_MAX_LIST, PFS_NODE_INFO_MIN_SIZE);
	if (!x.err) {
		map->nodes = kvcalloc(n, sizeof(*map->nodes), GFP_NOFS);
		if (n && !map->nodes)
			x.err = -ENOMEM;
	}
	for (i = 0; !x.err && i < n; i++) {
		if (pfs_x_node_info(&x, info))
			break;
		map->nodes[i] = pfs_map_take_node(net, old, info, rdma);
		if (!map->nodes[i])
			x.err = -ENOMEM;
		else
			map->nnodes++;
	}
	kfree(info);
	kfree(rdma);
	if (pfs_xdr_finish(&x))
		return x.err == -ENOMEM ? -ENOMEM : -EIO;
	sort(map->nodes, map->nnodes, sizeof(*map->nodes), pfs_cmp_node, NULL);
	for (i = 0; i < map->nnodes; i++) {
		if (i && map->nodes[i]->id == map->nodes[i - 1]->id)
			return -EIO;
		if (!map->root_meta && map->nodes[i]->type == PFS_NODE_META)
			map->root_meta = map->nodes[i]->id;
	}
	return 0;
}

static int pfs_map_add_targets(struct pfs_map *map, const void *buf, u32 len)
{
	struct pfs_target_info *info;
	struct pfs_xdr x;
	u32 n, i;

	info = kmalloc(sizeof(*info), GFP_NOFS);
	if (!info)
		return -ENOMEM;
	pfs_xdr_init_decode(&x, buf, len);
	pfs_x_count(&x, &n, PFS_MAX_LIST, PFS_TARGET_INFO_MIN_SIZE);
	if (!x.err) {
		map->targets = kvcalloc(n, sizeof(*map->targets), GFP_NOFS);
		if (n && !map->targets)
			x.err = -ENOMEM;
	}
	for (i = 0; !x.err && i < n; i++) {
		struct pfs_node *node;

		if (pfs_x_target_info(&x, info))
			break;
		/* A target of a node that is not (yet) listed is unusable. */
		node = pfs_map_node(map, info->node_id);
		if (node && node->type == PFS_NODE_STORAGE) {
			map->targets[map->ntargets].id = info->target_id;
			map->targets[map->ntargets].node = node;
			map->ntargets++;
		}
	}
	kfree(info);
	if (pfs_xdr_finish(&x))
		return x.err == -ENOMEM ? -ENOMEM : -EIO;
	sort(map->targets, map->ntargets, sizeof(*map->targets),
	     pfs_cmp_target, NULL);
	for (i = 1; i < map->ntargets; i++)
		if (map->targets[i].id == map->targets[i - 1].id)
			return -EIO;
	return 0;
}

/* One request to mgmtd on its connection; the caller releases rpc. */
static int pfs_mgmt_call(struct pfs_conn *c, struct pfs_rpc *rpc, u16 type,
			 const void *req, u32 req_len)
{
	int err;

	*rpc = (struct pfs_rpc){ .type = type, .req = req, .req_len = req_len };
	err = pfs_conn_start(c, rpc);
	if (err)
		return err == -ENOTCONN ? -EIO : err;
	return pfs_rpc_wait(rpc);
}

/* A live, subscribed connection to mgmtd in net->mgmt; mgmt_lock held. */
static int pfs_mgmt_connect(struct pfs_net *net)
{
	struct pfs_rpc rpc;
	struct pfs_conn *c;
	int err;

	if (net->mgmt && !pfs_conn_dead(net->mgmt))
		return 0;
	pfs_conn_put(net->mgmt);
	net->mgmt = NULL;
	c = pfs_conn_open(net, &pfs_tcp_ops, NULL, &net->cfg.mgmtd,
			  net->mgmt_name, PFS_CONN_MGMT);
	if (IS_ERR(c))
		return PTR_ERR(c);
	/* Subscribe before fetching: no change can fall in between. */
	err = pfs_mgmt_call(c, &rpc, PFS_MSG_SUBSCRIBE, NULL, 0);
	pfs_rpc_release(&rpc);
	if (err) {
		pfs_conn_put(c);
		return err;
	}
	net->mgmt = c;
	return 0;
}

/* Fetches nodes and targets (both requests in flight at once). */
static int pfs_map_fetch(struct pfs_net *net)
{
	struct pfs_get_nodes all = { .node_type = 0 };
	struct pfs_rpc nodes = { .type = PFS_MSG_GET_NODES };
	struct pfs_rpc targets = { .type = PFS_MSG_GET_TARGETS };
	struct pfs_map *map, *old;
	struct pfs_xdr x;
	u8 req[8];
	int err, err2;

	pfs_xdr_init_encode(&x, req, sizeof(req));
	if (pfs_x_get_nodes(&x, &all))
		return -EINVAL;
	nodes.req = req;
	nodes.req_len = x.pos;
	err = pfs_conn_start(net->mgmt, &nodes);
	if (err)
		return err == -ENOTCONN ? -EIO : err;
	err2 = pfs_conn_start(net->mgmt, &targets);
	err = pfs_rpc_wait(&nodes);
	if (!err2)
		err2 = pfs_rpc_wait(&targets);
	err = err ?: (err2 == -ENOTCONN ? -EIO : err2);

	map = err ? NULL : kzalloc(sizeof(*map), GFP_NOFS);
	if (!err && !map)
		err = -ENOMEM;
	if (!err)
		err = pfs_map_add_nodes(net, map, nodes.reply, nodes.reply_len);
	if (!err)
		err = pfs_map_add_targets(map, targets.reply,
					  targets.reply_len);
	pfs_rpc_release(&nodes);
	pfs_rpc_release(&targets);
	if (err) {
		pfs_map_free(map);
		return err;
	}
	spin_lock(&net->map_lock);
	old = net->map;
	net->map = map;
	net->map_gen++;
	spin_unlock(&net->map_lock);
	pfs_map_free(old);
	pr_debug("%s: map has %u nodes, %u targets\n", net->mgmt_name,
		 map->nnodes, map->ntargets);
	return 0;
}

/* Refreshes unless the map changed since generation gen (if gen_valid). */
static int pfs_map_refresh_since(struct pfs_net *net, bool gen_valid, u64 gen)
{
	int err;

	if (mutex_lock_killable(&net->mgmt_lock))
		return -EINTR;
	err = pfs_net_check(net);
	if (!err && gen_valid && READ_ONCE(net->map_gen) != gen)
		goto out;
	if (!err)
		err = pfs_mgmt_connect(net);
	if (!err)
		err = pfs_map_fetch(net);
out:
	mutex_unlock(&net->mgmt_lock);
	return err;
}

int pfs_map_refresh(struct pfs_net *net)
{
	return pfs_map_refresh_since(net, false, 0);
}

void pfs_map_schedule(struct pfs_net *net, unsigned long delay)
{
	spin_lock(&net->work_lock);
	if (!test_bit(PFS_NET_STOPPING, &net->flags))
		mod_delayed_work(system_wq, &net->map_work, delay);
	spin_unlock(&net->work_lock);
}

void pfs_map_work(struct work_struct *work)
{
	struct pfs_net *net = container_of(to_delayed_work(work),
					   struct pfs_net, map_work);
	unsigned int nofs = memalloc_nofs_save();
	int err = pfs_map_refresh(net);

	memalloc_nofs_restore(nofs);
	if (!err || pfs_net_check(net)) {
		net->map_backoff_ms = 0;
		return;
	}
	net->map_backoff_ms = clamp_t(unsigned int, net->map_backoff_ms * 2,
				      PFS_MAP_BACKOFF_MIN_MS,
				      PFS_MAP_BACKOFF_MAX_MS);
	pr_warn_ratelimited("cannot refresh the cluster map from %s (%d); retrying in %u ms\n",
			    net->mgmt_name, err, net->map_backoff_ms);
	pfs_map_schedule(net, msecs_to_jiffies(net->map_backoff_ms));
}

void pfs_map_counts(struct pfs_net *net, u32 *nodes, u32 *targets)
{
	spin_lock(&net->map_lock);
	*nodes = net->map ? net->map->nnodes : 0;
	*targets = net->map ? net->map->ntargets : 0;
	spin_unlock(&net->map_lock);
}

enum pfs_lookup {
	PFS_LOOKUP_ANY,
	PFS_LOOKUP_META,
	PFS_LOOKUP_TARGET,
	PFS_LOOKUP_ROOT,
};

/* A referenced node, after one refresh when the map does not know it. */
static struct pfs_node *pfs_net_lookup(struct pfs_net *net,
				       enum pfs_lookup what, u32 id)
{
	struct pfs_node *node = NULL;
	bool refreshed = false;
	u64 gen;
	int err;

	for (;;) {
		spin_lock(&net->map_lock);
		gen = net->map_gen;
		if (what == PFS_LOOKUP_TARGET) {
			node = pfs_map_target(net->map, id);
		} else {
			if (what == PFS_LOOKUP_ROOT)
				id = net->map ? net->map->root_meta : 0;
			node = pfs_map_node(net->map, id);
			if (node && what != PFS_LOOKUP_ANY &&
			    node->type != PFS_NODE_META)
				node = NULL;
		}
		if (node)
			pfs_node_get(node);
		spin_unlock(&net->map_lock);
		if (node)
			return node;
		if (refreshed)
			return ERR_PTR(-ENODEV);
		err = pfs_map_refresh_since(net, true, gen);
		if (err)
			return ERR_PTR(err == -EINTR ? -EINTR : -EIO);
		refreshed = true;
	}
}

struct pfs_node *pfs_net_meta_node(struct pfs_net *net, u32 node_id)
{
	return pfs_net_lookup(net, PFS_LOOKUP_META, node_id);
}

struct pfs_node *pfs_net_any_node(struct pfs_net *net, u32 node_id)
{
	return pfs_net_lookup(net, PFS_LOOKUP_ANY, node_id);
}

struct pfs_node *pfs_net_target_node(struct pfs_net *net, u32 target_id)
{
	return pfs_net_lookup(net, PFS_LOOKUP_TARGET, target_id);
}

int pfs_net_root_meta(struct pfs_net *net, u32 *node_id)
{
	struct pfs_node *node = pfs_net_lookup(net, PFS_LOOKUP_ROOT, 0);

	if (IS_ERR(node))
		return PTR_ERR(node);
	*node_id = node->id;
	pfs_node_put(node);
	return 0;
}

int pfs_net_node_ids(struct pfs_net *net, u16 type, u32 **ids)
{
	u32 *out = NULL;
	u32 n = 0, have = 0, i;

	for (;;) {
		spin_lock(&net->map_lock);
		n = 0;
		for (i = 0; net->map && i < net->map->nnodes; i++) {
			if (net->map->nodes[i]->type != type)
				continue;
			if (n < have)
				out[n] = net->map->nodes[i]->id;
			n++;
		}
		spin_unlock(&net->map_lock);
		if (n <= have)
			break;
		/* The map grew (or this is the first look): room, again. */
		kfree(out);
		have = n;
		out = kmalloc_array(have, sizeof(*out), GFP_NOFS);
		if (!out)
			return -ENOMEM;
	}
	if (!n) {
		kfree(out);
		out = NULL;
	}
	*ids = out;
	return n;
}
