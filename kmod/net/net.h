/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client's view of the network: one struct pfs_net per mount holds the
 * link to the management daemon, the cluster map it pushes (metadata
 * nodes, storage nodes, targets) and a pool of authenticated connections
 * per server. The VFS code only sees nodes and requests (struct pfs_rpc);
 * whether a request travels over TCP or, later, RDMA is the transport's
 * business (struct pfs_xprt_ops in xprt.h).
 */
#ifndef PFS_NET_H
#define PFS_NET_H

#include <linux/completion.h>
#include <linux/socket.h>
#include <linux/types.h>
#include <linux/uio.h>

struct seq_file;
struct net;

#include "pfs_proto.h"

struct pfs_net;
struct pfs_node;
struct pfs_conn;
struct pfs_gpu_io;

/* Which transport reaches the servers that offer RDMA. */
enum pfs_transport_choice {
	PFS_XPRT_AUTO,		/* RDMA where offered and reachable, else TCP */
	PFS_XPRT_TCP,
	PFS_XPRT_RDMA,		/* RDMA or nothing */
};

#define PFS_RAILS_MAX		8
#define PFS_RAIL_NAME_MAX	16	/* IFNAMSIZ */

struct pfs_net_config {
	struct sockaddr_storage mgmtd;	/* address and port of pfs-mgmtd */
	enum pfs_transport_choice transport;
	/*
	 * The local interfaces to reach servers over RDMA through (rails=);
	 * none: every RDMA address a server lists, from wherever routing
	 * says.
	 */
	char rails[PFS_RAILS_MAX][PFS_RAIL_NAME_MAX];
	unsigned int nrails;
	u8 key[PFS_AUTH_MAC_LEN];	/* the client role's key */
	u8 token[PFS_CLIENT_TOKEN_LEN];	/* client_id's (BIND_CLIENT) */
	bool data_mac;			/* frame MACs to storage servers too */
	unsigned int timeout_ms;	/* one request, send to reply */
	unsigned int connect_timeout_ms; /* TCP connect plus handshake */
	unsigned int conns_per_server;	/* connections in each server's pool */
	/* of token: header.client_id of every request */
	u64 client_id;
	/*
	 * Unsolicited frames (PFS_FLAG_NOTIFY) other than MAP_CHANGED, which
	 * the transport handles itself. Called from the receiving context
	 * (may sleep, must not block for long, must not drop the last
	 * reference of a node); payload is valid only during the call. May
	 * be NULL.
	 */
	void (*notify)(void *ctx, u16 type, const void *payload, u32 len);
	/*
	 * A connection ended other than by pfs_net_stop: the notices it
	 * would have carried are lost (same context rules). May be NULL.
	 */
	void (*lost)(void *ctx);
	void *notify_ctx;
};

/*
 * Connects to mgmtd, authenticates, fetches nodes and targets, subscribes
 * to map changes. Returns ERR_PTR(-errno) when mgmtd cannot be reached or
 * refuses the secret (-EACCES) within connect_timeout_ms.
 */
struct pfs_net *pfs_net_start(const struct pfs_net_config *cfg);
/* Closes every connection; requests still waiting fail with -ESHUTDOWN. */
void pfs_net_stop(struct pfs_net *net);
/*
 * umount -f: every request in flight and every later one fails at once
 * with -EIO; the net stays allocated until pfs_net_stop.
 */
void pfs_net_abort(struct pfs_net *net);
/* -EIO when aborted, -ESHUTDOWN when stopping, else 0. */
int pfs_net_check(struct pfs_net *net);

/* Metadata node that owns the root directory (the first one registered). */
int pfs_net_root_meta(struct pfs_net *net, u32 *node_id);
/*
 * The ids of the map's nodes of a type (PFS_NODE_META, PFS_NODE_STORAGE),
 * in a new kmalloc'ed array (*ids; kfree it): their number, 0 with none
 * (*ids NULL), or -ENOMEM.
 */
int pfs_net_node_ids(struct pfs_net *net, u16 type, u32 **ids);
/*
 * A server by metadata node id, or the storage node that serves a target.
 * Unknown ids refresh the map once before failing with -ENODEV. The
 * returned node is referenced: drop it with pfs_node_put.
 */
struct pfs_node *pfs_net_meta_node(struct pfs_net *net, u32 node_id);
struct pfs_node *pfs_net_target_node(struct pfs_net *net, u32 target_id);
/* Like pfs_net_meta_node for a node of any type. */
struct pfs_node *pfs_net_any_node(struct pfs_net *net, u32 node_id);
/* May sleep: the last reference closes the node's connections. */
void pfs_node_put(struct pfs_node *node);

/*
 * One request and its reply. The caller fills the "in" fields, zeroes the
 * rest (e.g. `struct pfs_rpc rpc = { .type = ... }`), and after the reply
 * reads the "out" fields, then calls pfs_rpc_release.
 */
struct pfs_rpc {
	/* in */
	u16 type;			/* PFS_MSG_* */
	u16 flags;			/* header flags it asks for */
	const void *req;		/* encoded request body */
	u32 req_len;
	/* bytes sent right after the body (bulk: the request's bulk data) */
	struct iov_iter *req_data;
	/*
	 * bulk only: the reply's bulk data goes here (it is advanced past
	 * them); never user-backed: a kernel thread fills it
	 */
	struct iov_iter *reply_data;
	/*
	 * req_data and reply_data are bulk data beside the body
	 * (PFS_FLAG_BULK): the transport moves them
	 */
	bool bulk;
	/*
	 * the bulk data is GPU memory (nvfs.c): it goes by RDMA only, on the
	 * rail nearest its GPU
	 */
	const struct pfs_gpu_io *gpu;
	/* largest reply accepted; 0: any frame up to PFS_MAX_PAYLOAD */
	u32 reply_max;
	u32 timeout_ms;			/* 0: the mount's timeout */
	/* out */
	int status;			/* the server's status as -errno */
	/* reply body after the status (kvmalloc'ed, NULL when empty) */
	void *reply;
	u32 reply_len;
	u32 data_len;			/* bulk bytes placed in reply_data */
	/*
	 * a metadata server's reply: the epoch of our session there
	 * (header.client_seq), whatever the status; 0: none
	 */
	u64 session_epoch;
	u32 reply_flags;		/* the reply's header flags */
	int rail;			/* the rail it went by; -1: none */

	/* transport-private */
	bool bulk_inline;		/* the bulk data travels in frames */
	u64 bulk_bytes;			/* counted in its connection's load */
	void *bulk_priv;		/* the transport's registration */
	struct completion done;
	struct pfs_conn *conn;
	u64 request_id;
	unsigned long deadline;		/* jiffies: started + timeout */
	int error;
	struct list_head list;
};

/*
 * Sends rpc to node (picks a connection from its pool, reconnecting when
 * needed) and returns without waiting for the reply. Header uid/gid are
 * the caller's fsuid/fsgid. Returns 0 or a negative errno; on error the
 * request is finished and pfs_rpc_wait must not be called.
 */
int pfs_rpc_start(struct pfs_node *node, struct pfs_rpc *rpc);
/*
 * Waits (killable) for the reply of a started request, at most the
 * configured timeout. Returns 0 when the server answered PFS_OK, its
 * status as -errno otherwise (also in rpc->status), -ETIMEDOUT, -EIO
 * for a lost connection or a malformed reply, -EINTR when killed.
 */
int pfs_rpc_wait(struct pfs_rpc *rpc);
/* pfs_rpc_start then pfs_rpc_wait. */
int pfs_rpc_call(struct pfs_node *node, struct pfs_rpc *rpc);
/*
 * A request to node timed out: if it went by a rail, that rail is left
 * alone for node a while, and true tells that another way to node is open
 * now (an idempotent request may go again); false: it went the only way.
 */
bool pfs_node_failover(struct pfs_node *node, const struct pfs_rpc *rpc);
/* Frees the reply; rpc may be reused after it. */
void pfs_rpc_release(struct pfs_rpc *rpc);

/*
 * Resolves the configured rails in the caller's network namespace: -ENODEV
 * (no such interface) or -EADDRNOTAVAIL (no IPv4 address), with the name
 * in *bad.
 */
int pfs_net_check_rails(const struct pfs_net_config *cfg, const char **bad);

/* What one transport carried for a mount (/proc/self/mountstats). */
struct pfs_xprt_stats {
	atomic64_t conns;		/* connections opened */
	atomic64_t requests;		/* requests started on them */
	atomic64_t bulk_sent;		/* bulk bytes the servers took */
	atomic64_t bulk_received;	/* bulk bytes the servers put */
	atomic64_t registrations;	/* memory registered for a request */
	atomic64_t registered_now;	/* ... and not yet invalidated */
};

enum { PFS_STATS_TCP, PFS_STATS_RDMA, PFS_STATS_KINDS };

/* A mount's transfers on GPU memory (GPUDirect Storage, nvfs.c). */
struct pfs_gpu_stats {
	atomic64_t requests;		/* chunk requests on GPU memory */
	atomic64_t bytes;		/* moved by RDMA straight to or from it */
	atomic64_t errors;		/* transfers that failed */
	/* bytes copied through CPU memory: none, by design */
	atomic64_t copies;
};

struct pfs_gpu_stats *pfs_net_gpu_stats(struct pfs_net *net);

/* The counters of the transport kind named (NULL for other names). */
struct pfs_xprt_stats *pfs_net_stats(struct pfs_net *net, const char *kind);
/* Prints every transport's counters, a line each. */
void pfs_net_show_stats(struct pfs_net *net, struct seq_file *m);

/*
 * A failure of the network or of a server that may pass (a timeout, a lost
 * or refused connection, no memory, a target the map does not know yet):
 * worth trying again, unlike an answer the server gave.
 */
bool pfs_net_transient(int err);

/*
 * net/auth.c. The client key from an auth file's content: the cluster
 * secret's derivation, or the key of a "pfs-key-v1 client HEX" file
 * (-EINVAL: another role's key, or malformed).
 */
int pfs_auth_client_key(const u8 *file, size_t len, u8 *key);
/* The client id a token stands for (auth::client_id_of in user space). */
u64 pfs_auth_client_id(const u8 *token);

/* Watching the interfaces under RDMA connections, for module init and exit. */
#if IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
int pfs_rdma_init(void);
void pfs_rdma_exit(void);
/* An interface told going down, not up again since (rdma_link.c). */
bool pfs_rdma_iface_failing(const struct net *net, int ifindex);
#else
static inline int pfs_rdma_init(void) { return 0; }
static inline void pfs_rdma_exit(void) {}
static inline bool pfs_rdma_iface_failing(const struct net *net, int ifindex)
{
	return false;
}
#endif

#endif /* PFS_NET_H */
