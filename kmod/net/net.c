// SPDX-License-Identifier: GPL-2.0
/*
 * The life of a mount's network: start (connect to mgmtd, authenticate,
 * fetch the map), abort (umount -f) and stop.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/nsproxy.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <net/net_namespace.h>

#include "net_int.h"

void pfs_net_get(struct pfs_net *net)
{
	kref_get(&net->ref);
}

static void pfs_net_release(struct kref *ref)
{
	struct pfs_net *net = container_of(ref, struct pfs_net, ref);

	WARN_ON_ONCE(!list_empty(&net->conns));
	put_net(net->netns);
	kfree_sensitive(net);
}

void pfs_net_put(struct pfs_net *net)
{
	kref_put(&net->ref, pfs_net_release);
}

bool pfs_net_transient(int err)
{
	switch (err) {
	case -ETIMEDOUT:
	case -EIO:		/* a lost connection (or a server's EIO) */
	case -ENOMEM:
	case -ENOBUFS:
	case -EAGAIN:
	case -ENODEV:		/* a target the map does not know (yet) */
	case -ENOTCONN:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ECONNABORTED:
	case -EPIPE:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
		return true;
	default:
		return false;
	}
}

struct pfs_xprt_stats *pfs_net_stats(struct pfs_net *net, const char *kind)
{
	if (!strcmp(kind, "tcp"))
		return &net->stats[PFS_STATS_TCP];
	if (!strcmp(kind, "rdma"))
		return &net->stats[PFS_STATS_RDMA];
	return NULL;
}

void pfs_net_show_stats(struct pfs_net *net, struct seq_file *m)
{
	static const char * const names[PFS_STATS_KINDS] = { "tcp", "rdma" };
	int i;

	for (i = 0; i < PFS_STATS_KINDS; i++) {
		const struct pfs_xprt_stats *s = &net->stats[i];

		seq_printf(m, "\n\ttransport %s: conns %lld requests %lld bulk_sent %lld bulk_received %lld registrations %lld registered_now %lld",
			   names[i], atomic64_read(&s->conns),
			   atomic64_read(&s->requests),
			   atomic64_read(&s->bulk_sent),
			   atomic64_read(&s->bulk_received),
			   atomic64_read(&s->registrations),
			   atomic64_read(&s->registered_now));
	}
}

int pfs_net_check(struct pfs_net *net)
{
	if (test_bit(PFS_NET_ABORTED, &net->flags))
		return -EIO;
	if (test_bit(PFS_NET_STOPPING, &net->flags))
		return -ESHUTDOWN;
	return 0;
}

static void pfs_net_kill_all(struct pfs_net *net, int err)
{
	struct pfs_conn *c;

	mutex_lock(&net->conns_lock);
	list_for_each_entry(c, &net->conns, link)
		pfs_conn_kill(c, err);
	mutex_unlock(&net->conns_lock);
}

struct pfs_net *pfs_net_start(const struct pfs_net_config *cfg)
{
	struct pfs_net *net;
	u32 nodes, targets;
	int err;

	net = kzalloc(sizeof(*net), GFP_KERNEL);
	if (!net)
		return ERR_PTR(-ENOMEM);
	kref_init(&net->ref);
	net->cfg = *cfg;
	if (!net->cfg.timeout_ms)
		net->cfg.timeout_ms = PFS_DEF_TIMEOUT_MS;
	if (!net->cfg.connect_timeout_ms)
		net->cfg.connect_timeout_ms = PFS_DEF_CONNECT_MS;
	net->cfg.conns_per_server = clamp_t(unsigned int,
					    net->cfg.conns_per_server, 1,
					    PFS_MAX_CONNS);
	net->netns = get_net(current->nsproxy->net_ns);
	mutex_init(&net->conns_lock);
	INIT_LIST_HEAD(&net->conns);
	mutex_init(&net->mgmt_lock);
	spin_lock_init(&net->map_lock);
	spin_lock_init(&net->work_lock);
	INIT_DELAYED_WORK(&net->map_work, pfs_map_work);
	snprintf(net->mgmt_name, sizeof(net->mgmt_name), "mgmtd (%pISpc)",
		 &net->cfg.mgmtd);

	err = pfs_map_refresh(net);
	if (err) {
		if (err != -EACCES && err != -EINTR)
			pr_err("cannot fetch the cluster map from %s: error %d\n",
			       net->mgmt_name, err);
		pfs_net_stop(net);
		return ERR_PTR(err);
	}
	pfs_map_counts(net, &nodes, &targets);
	pr_info("connected to %s: %u nodes, %u targets; servers over %s\n",
		net->mgmt_name, nodes, targets,
		net->cfg.transport == PFS_XPRT_TCP ? "tcp" :
		net->cfg.transport == PFS_XPRT_RDMA ? "rdma" :
		"rdma where offered, else tcp");
	return net;
}

void pfs_net_abort(struct pfs_net *net)
{
	set_bit(PFS_NET_ABORTED, &net->flags);
	pfs_net_kill_all(net, -EIO);
}

void pfs_net_stop(struct pfs_net *net)
{
	struct pfs_conn *mgmt;
	struct pfs_map *map;

	spin_lock(&net->work_lock);
	set_bit(PFS_NET_STOPPING, &net->flags);
	spin_unlock(&net->work_lock);
	/* Killing first cuts short a refresh the work may be waiting on. */
	pfs_net_kill_all(net, -ESHUTDOWN);
	cancel_delayed_work_sync(&net->map_work);

	mutex_lock(&net->mgmt_lock);
	mgmt = net->mgmt;
	net->mgmt = NULL;
	spin_lock(&net->map_lock);
	map = net->map;
	net->map = NULL;
	spin_unlock(&net->map_lock);
	mutex_unlock(&net->mgmt_lock);

	pfs_conn_put(mgmt);
	pfs_map_free(map);
	/* Nodes the VFS still holds keep the rest alive until dropped. */
	pfs_net_put(net);
}
