// SPDX-License-Identifier: GPL-2.0
/*
 * The life of a mount's network: start (connect to mgmtd, authenticate,
 * fetch the map), abort (umount -f) and stop.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <linux/nsproxy.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <net/net_namespace.h>

#include "net_int.h"
#include "../nvfs.h"

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

/* A rail's interface in namespace ns: its IPv4 address and mask. */
static int pfs_rail_resolve(struct net *ns, const char *name,
			    struct pfs_rail *rail)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&rail->addr;
	const struct in_ifaddr *ifa;
	struct net_device *dev;
	struct in_device *in;
	int err = -EADDRNOTAVAIL;

	memset(rail, 0, sizeof(*rail));
	strscpy(rail->name, name, sizeof(rail->name));
	dev = dev_get_by_name(ns, name);
	if (!dev)
		return -ENODEV;
	rcu_read_lock();
	in = __in_dev_get_rcu(dev);
	if (in) {
		in_dev_for_each_ifa_rcu(ifa, in) {
			sin->sin_family = AF_INET;
			sin->sin_addr.s_addr = ifa->ifa_local;
			rail->mask = ifa->ifa_mask;
			err = 0;
			break;
		}
	}
	rcu_read_unlock();
	rail->ifindex = dev->ifindex;
	rail->numa = dev->dev.parent ? dev_to_node(dev->dev.parent) :
				       NUMA_NO_NODE;
	dev_put(dev);
	return err;
}

/* A rail that failed is left alone at first this long, at most 30 s. */
#define PFS_RAIL_BACKOFF_MIN_MS	1000
#define PFS_RAIL_BACKOFF_MAX_MS	30000

bool pfs_rail_usable(struct pfs_net *net, int r)
{
	struct pfs_rail *rail = &net->rails[r];
	struct net_device *dev;
	bool up;

	if (time_before(jiffies, READ_ONCE(rail->retry_at)))
		return false;
	rcu_read_lock();
	dev = dev_get_by_index_rcu(net->netns, rail->ifindex);
	up = dev && netif_running(dev) && netif_carrier_ok(dev);
	rcu_read_unlock();
	return up && !pfs_rdma_iface_failing(net->netns, rail->ifindex);
}

void pfs_rail_failed(struct pfs_net *net, int r)
{
	struct pfs_rail *rail = &net->rails[r];
	unsigned int ms;

	atomic64_inc(&rail->errors);
	WRITE_ONCE(rail->down, true);
	/* Its other connections failing as well is the same failure. */
	if (time_before(jiffies, READ_ONCE(rail->retry_at)))
		return;
	ms = clamp_t(unsigned int, READ_ONCE(rail->backoff_ms) * 2,
		     PFS_RAIL_BACKOFF_MIN_MS, PFS_RAIL_BACKOFF_MAX_MS);
	WRITE_ONCE(rail->backoff_ms, ms);
	WRITE_ONCE(rail->retry_at, jiffies + msecs_to_jiffies(ms));
}

void pfs_rail_works(struct pfs_net *net, int r)
{
	WRITE_ONCE(net->rails[r].backoff_ms, 0);
	WRITE_ONCE(net->rails[r].down, false);
}

int pfs_net_check_rails(const struct pfs_net_config *cfg, const char **bad)
{
	struct pfs_rail rail;
	unsigned int i;
	int err;

	for (i = 0; i < cfg->nrails; i++) {
		err = pfs_rail_resolve(current->nsproxy->net_ns, cfg->rails[i],
				       &rail);
		if (err) {
			*bad = cfg->rails[i];
			return err;
		}
	}
	return 0;
}

struct pfs_xprt_stats *pfs_net_stats(struct pfs_net *net, const char *kind)
{
	if (!strcmp(kind, "tcp"))
		return &net->stats[PFS_STATS_TCP];
	if (!strcmp(kind, "rdma"))
		return &net->stats[PFS_STATS_RDMA];
	return NULL;
}

struct pfs_gpu_stats *pfs_net_gpu_stats(struct pfs_net *net)
{
	return &net->gpu_stats;
}

void pfs_net_show_stats(struct pfs_net *net, struct seq_file *m)
{
	static const char * const names[PFS_STATS_KINDS] = { "tcp", "rdma" };
	unsigned int r;
	int i;

	for (r = 0; r < net->nrails; r++) {
		const struct pfs_rail *rail = &net->rails[r];

		seq_printf(m, "\n\trail %s: state %s requests %lld bytes %lld errors %lld",
			   rail->name,
			   READ_ONCE(rail->down) || !pfs_rail_usable(net, r) ?
			   "down" : "up",
			   atomic64_read(&rail->requests),
			   atomic64_read(&rail->bytes),
			   atomic64_read(&rail->errors));
	}

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
	seq_printf(m, "\n\tgpu nvfs: state %s requests %lld bytes %lld errors %lld copies %lld",
		   pfs_gpu_registered() ? "registered" : "unregistered",
		   atomic64_read(&net->gpu_stats.requests),
		   atomic64_read(&net->gpu_stats.bytes),
		   atomic64_read(&net->gpu_stats.errors),
		   atomic64_read(&net->gpu_stats.copies));
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
	for (net->nrails = 0; net->nrails < min_t(unsigned int, cfg->nrails,
						  PFS_RAILS_MAX);
	     net->nrails++) {
		err = pfs_rail_resolve(net->netns, cfg->rails[net->nrails],
				       &net->rails[net->nrails]);
		if (err) {
			put_net(net->netns);
			kfree_sensitive(net);
			return ERR_PTR(err);
		}
	}
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
