/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to kmod/net/: the objects behind the opaque types of net.h and
 * the calls between the files of the transport.
 *
 * Lifetimes: struct pfs_net is reference counted; the mount holds one
 * reference (dropped by pfs_net_stop), every node and every connection
 * one more, so nothing outlives the net and the net outlives everything
 * that points at it. The map references its nodes; a node references the
 * connections of its pool; a started request references its connection.
 * A connection's receiving thread holds no reference: the connection's
 * release stops the thread before freeing anything.
 */
#ifndef PFS_NET_INT_H
#define PFS_NET_INT_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "pfs_proto.h"
#include "net.h"
#include "xprt.h"

#define PFS_PEER_MAX		64	/* "meta 12 (addr:port)" */
#define PFS_MAX_CONNS		64	/* most conns_per_server */
#define PFS_DEF_TIMEOUT_MS	30000
#define PFS_DEF_CONNECT_MS	5000

enum pfs_net_flags {
	PFS_NET_ABORTED,	/* umount -f: everything fails with -EIO */
	PFS_NET_STOPPING,	/* pfs_net_stop: everything fails -ESHUTDOWN */
};

struct pfs_map;

/* A local interface requests reach servers through (rails=), and its use. */
struct pfs_rail {
	char name[PFS_RAIL_NAME_MAX];
	struct sockaddr_storage addr;	/* its IPv4 address, port 0 */
	__be32 mask;
	int ifindex;
	int numa;			/* its device's node, NUMA_NO_NODE */
	bool down;			/* the last connection through it failed */
	unsigned long retry_at;		/* left alone until then (jiffies) */
	unsigned int backoff_ms;
	atomic64_t requests;
	atomic64_t bytes;		/* bulk bytes either way */
	atomic64_t errors;		/* failed connects, lost connections */
};

struct pfs_net {
	struct kref ref;
	struct pfs_net_config cfg;
	struct net *netns;		/* of the mounting task */
	unsigned long flags;		/* enum pfs_net_flags */
	atomic64_t client_seq;
	struct pfs_xprt_stats stats[PFS_STATS_KINDS];
	struct pfs_gpu_stats gpu_stats;
	struct pfs_rail rails[PFS_RAILS_MAX];
	unsigned int nrails;

	/* every open connection, so that abort and stop can reach them */
	struct mutex conns_lock;
	struct list_head conns;

	/* the link to mgmtd; the map is only replaced under mgmt_lock */
	struct mutex mgmt_lock;
	struct pfs_conn *mgmt;
	char mgmt_name[PFS_PEER_MAX];
	spinlock_t map_lock;		/* readers of map and map_gen */
	struct pfs_map *map;
	u64 map_gen;			/* bumped by every refresh */
	/* map_work is queued only when not stopping */
	spinlock_t work_lock;
	struct delayed_work map_work;
	unsigned int map_backoff_ms;	/* only touched by map_work */
};

struct pfs_conn {
	struct kref ref;
	struct pfs_net *net;
	struct pfs_xprt *xprt;
	struct task_struct *rx;		/* receiving thread, pinned */
	struct mutex send_lock;		/* one whole frame at a time */
	struct xarray reqs;		/* request id -> struct pfs_rpc */
	u32 next_id;			/* for xa_alloc_cyclic */
	atomic_t in_flight;		/* entries in reqs */
	bool dead;			/* under xa_lock(&reqs) */
	atomic64_t bulk_inflight;	/* bulk bytes of requests under way */
	int rail;			/* the path's rail, -1: none */
	bool closing;			/* release has begun */
	bool mgmt;			/* the link to mgmtd */
	struct list_head link;		/* in net->conns */
	u8 *scratch;			/* rx thread only */
	struct pfs_frame_mac *mac;	/* NULL: frames carry no MAC */
	bool data_mac;			/* the MACs cover bulk data too */
	unsigned long rx_deadline;	/* rx thread: current frame's end */
	char peer[PFS_PEER_MAX];
};

/*
 * One way to reach a node: an RDMA rail (from a local rail's address, or
 * wherever routing says, to one of the node's RDMA addresses) or TCP, and
 * its pool of connections. A path that failed is skipped (RDMA) or fails
 * fast (TCP) until retry_at.
 */
struct pfs_route {
	const struct pfs_xprt_ops *ops;
	struct sockaddr_storage src;	/* AF_UNSPEC: routing chooses */
	struct sockaddr_storage dst;
	int rail;			/* in net->rails; -1: none configured */
	unsigned long retry_at;		/* jiffies */
	unsigned int backoff_ms;
	struct pfs_conn **slots;	/* nslots of them */
	/*
	 * the DMA device of its last connection (held), for GPU memory; NULL
	 * when it had no connection yet (!dev_known) or cannot DMA at all;
	 * dma_virt: a device that copies with the CPU (soft-RoCE)
	 */
	struct device *dma_dev;
	bool dev_known;
	bool dma_virt;
};

struct pfs_node {
	struct kref ref;
	struct pfs_net *net;
	u32 id;
	u16 type;			/* enum pfs_node_type */
	struct sockaddr_storage addr;	/* TCP; AF_UNSPEC: not reachable */
	u8 nrdma;
	struct sockaddr_storage rdma[PFS_NODE_ADDRS_MAX];
	char name[PFS_PEER_MAX];
	spinlock_t lock;		/* slots */
	struct mutex connect_lock;	/* fills empty or dead slots */
	unsigned int nslots;
	unsigned int npaths;		/* RDMA paths first, TCP last */
	bool over_tcp;			/* RDMA paths, none usable: on TCP */
	struct pfs_route paths[];
};

/* net.c */
void pfs_net_get(struct pfs_net *net);
void pfs_net_put(struct pfs_net *net);

/*
 * Rail health (net.c): a rail is used while its interface is up and it is
 * not backing off after a failure (a connect that failed, a connection
 * lost); a connection made through it ends the back-off.
 */
bool pfs_rail_usable(struct pfs_net *net, int rail);
void pfs_rail_failed(struct pfs_net *net, int rail);
void pfs_rail_works(struct pfs_net *net, int rail);

/* conn.c */
enum pfs_conn_kind {
	PFS_CONN_MGMT,		/* the link to mgmtd */
	PFS_CONN_META,
	PFS_CONN_STORAGE,
};
struct pfs_conn *pfs_conn_open(struct pfs_net *net,
			       const struct pfs_xprt_ops *ops,
			       const struct sockaddr_storage *src,
			       const struct sockaddr_storage *addr,
			       const char *peer, enum pfs_conn_kind kind);
void pfs_conn_put(struct pfs_conn *c);
/* Fails every request on c with err and makes later ones fail. */
void pfs_conn_kill(struct pfs_conn *c, int err);
/*
 * pfs_rpc_start on a given connection. -ENOTCONN when c was dead before
 * anything was sent (another connection may be tried).
 */
int pfs_conn_start(struct pfs_conn *c, struct pfs_rpc *rpc);
void pfs_frame_header(struct pfs_net *net, u16 type, u32 flags,
		      u64 request_id, u32 payload_len, u8 *out);
/* The request with id, taken out of c's table (NULL: none). */
struct pfs_rpc *pfs_conn_take(struct pfs_conn *c, u64 id);
/* The last touch of a taken request: its waiter may free it right after. */
void pfs_rpc_finish(struct pfs_rpc *rpc, int err);
/* The size of a connection's scratch buffer (rx thread, handshake). */
#define PFS_SCRATCH_SIZE	4096

/* conn_rx.c: a connection's receiving thread (arg: the connection) */
int pfs_conn_rx_thread(void *arg);

static inline void pfs_conn_get(struct pfs_conn *c)
{
	kref_get(&c->ref);
}

static inline bool pfs_conn_dead(struct pfs_conn *c)
{
	return READ_ONCE(c->dead);
}

static inline unsigned int pfs_conn_load(struct pfs_conn *c)
{
	return atomic_read(&c->in_flight);
}

/* Receives exactly len bytes into buf. */
static inline int pfs_xprt_recv_buf(struct pfs_xprt *x, void *buf, size_t len,
				    long timeout)
{
	struct kvec kv = { .iov_base = buf, .iov_len = len };
	struct iov_iter it;

	iov_iter_kvec(&it, ITER_DEST, &kv, 1, len);
	return x->ops->recv(x, &it, timeout);
}

/*
 * auth.c: proves both sides know the client key; -EACCES when they do not
 * or the server refuses what want (enum pfs_auth_flags) asks. Returns the
 * flags the connection uses: with PFS_AUTH_FRAME_MAC, frames carry MACs
 * from now on and session holds their key (PFS_AUTH_MAC_LEN bytes).
 */
int pfs_auth_handshake(struct pfs_net *net, struct pfs_xprt *x,
		       const char *peer, unsigned long deadline, u8 want,
		       u8 *session);

/* mac.c: frame MACs under a session key (NULL-safe destroy). */
struct pfs_frame_mac;
struct pfs_frame_mac *pfs_mac_create(const u8 *session);
void pfs_mac_destroy(struct pfs_frame_mac *m);
/* The tag of the next frame sent: head[0] the header, then the rest. */
int pfs_mac_seal(struct pfs_frame_mac *m, const struct kvec *head,
		 unsigned int nhead, const struct iov_iter *data, u8 *tag);
/* The next frame received: its header, its payload, then its tag. */
int pfs_mac_rx_begin(struct pfs_frame_mac *m, const u8 *hdr);
int pfs_mac_rx_update(struct pfs_frame_mac *m, const void *buf, size_t len);
int pfs_mac_rx_update_iter(struct pfs_frame_mac *m, const struct iov_iter *it,
			   size_t len);
/* -EBADMSG when tag is not the frame's. */
int pfs_mac_rx_check(struct pfs_frame_mac *m, const u8 *tag);

/* node.c */
struct pfs_node *pfs_node_create(struct pfs_net *net, u32 id, u16 type,
				 const struct sockaddr_storage *addr,
				 const struct sockaddr_storage *rdma, u8 nrdma);
static inline void pfs_node_get(struct pfs_node *node)
{
	kref_get(&node->ref);
}

/* map.c */
int pfs_map_refresh(struct pfs_net *net);
/* Queues a refresh after delay jiffies unless the net is stopping. */
void pfs_map_schedule(struct pfs_net *net, unsigned long delay);
void pfs_map_work(struct work_struct *work);
void pfs_map_free(struct pfs_map *map);
void pfs_map_counts(struct pfs_net *net, u32 *nodes, u32 *targets);

#endif /* PFS_NET_INT_H */
