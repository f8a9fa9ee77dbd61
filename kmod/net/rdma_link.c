// SPDX-License-Identifier: GPL-2.0
/*
 * The links under RDMA connections: a port that goes down (an IB event)
 * or an interface going down (a netdev notifier) stops the connections on
 * it at once, so that their requests go to other rails instead of waiting
 * out the queue pair's retransmissions.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "net_int.h"
#include "rdma.h"

static void pfs_rdma_port_down_work(struct work_struct *work)
{
	struct pfs_rdma *r = container_of(work, struct pfs_rdma, port_down);

	pfs_rdma_stop(r, "port down");
}

/*
 * A rail that goes down would otherwise be noticed only when the queue
 * pair's retransmissions give up, many seconds later: its requests go to
 * other rails at once instead. (Called in any context: the stop sleeps.)
 */
static void pfs_rdma_ib_event(struct ib_event_handler *h, struct ib_event *ev)
{
	struct pfs_rdma *r = container_of(h, struct pfs_rdma, port_events);

	if ((ev->event == IB_EVENT_PORT_ERR ||
	     ev->event == IB_EVENT_DEVICE_FATAL) &&
	    (ev->event == IB_EVENT_DEVICE_FATAL ||
	     ev->element.port_num == r->id->port_num))
		schedule_work(&r->port_down);
}

/*
 * Live connections, for the netdev watch: an interface going down is
 * told to us before it stops sending, the port event only after. Soft-RoCE
 * on this kernel retries a packet its interface refused at once, forever,
 * starving the machine until the queue pair gives up: a rail taken down
 * would stall every CPU for tens of seconds. Stopped first, the queue
 * pairs on it send nothing; their requests go to other rails at once.
 */
static LIST_HEAD(pfs_rdma_live);
static DEFINE_MUTEX(pfs_rdma_live_lock);

static bool pfs_rdma_on(struct pfs_rdma *r, struct net_device *dev)
{
	const struct rdma_dev_addr *a = &r->id->route.addr.dev_addr;

	return a->bound_dev_if == dev->ifindex &&
	       net_eq(a->net, dev_net(dev));
}

/*
 * Interfaces told going down and not up again since: rails on them are not
 * used, and no connection is started through them (its request to connect
 * would meet the same retries), from the first moment, before the
 * interface stops running.
 */
#define PFS_RDMA_FAILING_MAX	32

static struct {
	const struct net *net;
	int ifindex;
	bool settled;		/* down now: its routes are gone */
} pfs_rdma_failing[PFS_RDMA_FAILING_MAX];
static DEFINE_SPINLOCK(pfs_rdma_failing_lock);

static void pfs_rdma_iface_mark(struct net_device *dev, bool failing,
				bool settled)
{
	const struct net *net = dev_net(dev);
	int i, free = -1;

	spin_lock(&pfs_rdma_failing_lock);
	for (i = 0; i < PFS_RDMA_FAILING_MAX; i++) {
		if (pfs_rdma_failing[i].ifindex == dev->ifindex &&
		    pfs_rdma_failing[i].net == net) {
			if (!failing)
				pfs_rdma_failing[i].ifindex = 0;
			pfs_rdma_failing[i].settled |= settled;
			goto out;
		}
		if (!pfs_rdma_failing[i].ifindex && free < 0)
			free = i;
	}
	/* Full: the rail is noticed when its connection breaks instead. */
	if (failing && free >= 0) {
		pfs_rdma_failing[free].net = net;
		pfs_rdma_failing[free].ifindex = dev->ifindex;
		pfs_rdma_failing[free].settled = settled;
	}
out:
	spin_unlock(&pfs_rdma_failing_lock);
}

/* 0: not failing; 1: going down; 2: down. */
static int pfs_rdma_iface_state(const struct net *net, int ifindex)
{
	int i, state = 0;

	spin_lock(&pfs_rdma_failing_lock);
	for (i = 0; i < PFS_RDMA_FAILING_MAX && !state; i++)
		if (pfs_rdma_failing[i].ifindex == ifindex &&
		    pfs_rdma_failing[i].net == net)
			state = pfs_rdma_failing[i].settled ? 2 : 1;
	spin_unlock(&pfs_rdma_failing_lock);
	return state;
}

bool pfs_rdma_iface_failing(const struct net *net, int ifindex)
{
	return pfs_rdma_iface_state(net, ifindex) != 0;
}

/*
 * A connection through an interface going down is destroyed once it is
 * down, in the background: destroying it sends a disconnect request, which
 * soft-RoCE would retry at once, forever, while the interface goes down,
 * keeping it from ever getting there (for as long as the disconnect is
 * retried). The wait is bounded; module exit waits for these.
 */
#define PFS_RDMA_SETTLE_MS	60000

static atomic_t pfs_rdma_reaping = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(pfs_rdma_reaped);

static void pfs_rdma_reap_work(struct work_struct *work)
{
	struct pfs_rdma *r = container_of(work, struct pfs_rdma, reap);
	const struct rdma_dev_addr *a = &r->id->route.addr.dev_addr;
	int waited;

	for (waited = 0; waited < PFS_RDMA_SETTLE_MS &&
	     pfs_rdma_iface_state(a->net, a->bound_dev_if) == 1; waited += 50)
		msleep(50);
	pfs_rdma_teardown(r);
	if (atomic_dec_and_test(&pfs_rdma_reaping))
		wake_up_all(&pfs_rdma_reaped);
}

void pfs_rdma_destroy_later(struct pfs_rdma *r)
{
	atomic_inc(&pfs_rdma_reaping);
	INIT_WORK(&r->reap, pfs_rdma_reap_work);
	queue_work(system_long_wq, &r->reap);
}

static int pfs_rdma_netdev_event(struct notifier_block *nb,
				 unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct pfs_rdma *r;

	if (event == NETDEV_UP ||
	    (event == NETDEV_CHANGE && netif_carrier_ok(dev))) {
		pfs_rdma_iface_mark(dev, false, false);
		return NOTIFY_DONE;
	}
	if (event == NETDEV_DOWN) {
		pfs_rdma_iface_mark(dev, true, true);
		return NOTIFY_DONE;
	}
	if (event != NETDEV_GOING_DOWN && event != NETDEV_UNREGISTER &&
	    !(event == NETDEV_CHANGE && !netif_carrier_ok(dev)))
		return NOTIFY_DONE;
	/* A carrier lost leaves the interface up: nothing to wait for. */
	pfs_rdma_iface_mark(dev, true, event != NETDEV_GOING_DOWN);
	mutex_lock(&pfs_rdma_live_lock);
	list_for_each_entry(r, &pfs_rdma_live, live) {
		if (pfs_rdma_on(r, dev)) {
			WRITE_ONCE(r->iface_down, true);
			pfs_rdma_stop(r, "interface going down");
		}
	}
	mutex_unlock(&pfs_rdma_live_lock);
	return NOTIFY_DONE;
}

static struct notifier_block pfs_rdma_netdev_nb = {
	.notifier_call = pfs_rdma_netdev_event,
};

int pfs_rdma_init(void)
{
	return register_netdevice_notifier(&pfs_rdma_netdev_nb);
}

void pfs_rdma_exit(void)
{
	/* They wait for the notifier to tell the interface is down. */
	wait_event(pfs_rdma_reaped, !atomic_read(&pfs_rdma_reaping));
	unregister_netdevice_notifier(&pfs_rdma_netdev_nb);
}

void pfs_rdma_watch(struct pfs_rdma *r)
{
	INIT_WORK(&r->port_down, pfs_rdma_port_down_work);
	INIT_IB_EVENT_HANDLER(&r->port_events, r->id->device,
			      pfs_rdma_ib_event);
	ib_register_event_handler(&r->port_events);
	r->events_registered = true;
	mutex_lock(&pfs_rdma_live_lock);
	list_add(&r->live, &pfs_rdma_live);
	mutex_unlock(&pfs_rdma_live_lock);
}

void pfs_rdma_unwatch(struct pfs_rdma *r)
{
	if (r->events_registered) {
		ib_unregister_event_handler(&r->port_events);
		cancel_work_sync(&r->port_down);
		r->events_registered = false;
	}
	mutex_lock(&pfs_rdma_live_lock);
	if (!list_empty(&r->live))
		list_del_init(&r->live);
	mutex_unlock(&pfs_rdma_live_lock);
}
