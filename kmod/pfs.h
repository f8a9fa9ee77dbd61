/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarations shared by the files of the PFS client module.
 */
#ifndef PFS_H
#define PFS_H

#include <linux/err.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "pfs_config.h"
#include "pfs_proto.h"
#include "net/net.h"

#define PFS_MODULE_VERSION "0.1.0"
#define PFS_SUPER_MAGIC 0x50465331	/* "PFS1" */

/*
 * The type of the first argument of inode_operations such as getattr and
 * setattr, and of generic_fillattr(): struct mnt_idmap * since 6.3,
 * struct user_namespace * since 5.12. Write
 *	static int pfs_getattr(pfs_idmap_t *idmap, const struct path *path, ...)
 */
#if defined(PFS_HAVE_IOPS_MNT_IDMAP)
typedef struct mnt_idmap pfs_idmap_t;
#define PFS_NOP_IDMAP (&nop_mnt_idmap)
#elif defined(PFS_HAVE_IOPS_USER_NS)
typedef struct user_namespace pfs_idmap_t;
#define PFS_NOP_IDMAP (&init_user_ns)
#endif

enum pfs_cache_mode {
	PFS_CACHE_BUFFERED = 0,	/* page cache, attributes cached attr_ttl */
	PFS_CACHE_NONE = 1,	/* every read and write goes to the servers */
};

/* Mount options (super.c parses, show_options prints). */
struct pfs_mount_opts {
	struct sockaddr_storage mgmtd;	/* from the source "HOST[:PORT]" */
	char *source;
	char *secret_file;
	unsigned int timeout_ms;
	unsigned int connect_timeout_ms;
	unsigned int attr_ttl_ms;	/* attribute cache */
	unsigned int name_ttl_ms;	/* dentry cache; PFS_NAME_TTL_UNSET */
	unsigned int conns_per_server;
	enum pfs_cache_mode cache;
	bool data_mac;			/* frame MACs on storage traffic */
};

/* sb->s_fs_info */
/* CLOSEs waiting to go out together (file.c) */
struct pfs_close_batch {
	spinlock_t lock;
	struct delayed_work work;
	struct super_block *sb;
	unsigned int waiting;
	struct pfs_entry_id ids[PFS_CLOSE_MANY_MAX];
	struct pfs_close_many sending;	/* the worker's own */
};

/* CLOSEs and unlocks sent again until answered (resend.c) */
struct pfs_resender {
	spinlock_t lock;
	struct list_head items;
	unsigned int count;		/* items, in a pass's hands too */
	bool stopping;			/* umount: no more are queued */
	struct mutex send_lock;		/* a pass at a time, in order */
	struct delayed_work work;
	unsigned int backoff_ms;	/* the work's own */
	struct super_block *sb;
};

struct pfs_sb_info {
	struct super_block *sb;
	struct pfs_mount_opts opts;
	struct pfs_net *net;
	struct pfs_entry_id root;
	u8 token[PFS_CLIENT_TOKEN_LEN];	/* proves client_id to the servers */
	u64 client_id;
	unsigned long attr_ttl;		/* jiffies */
	unsigned long name_ttl;		/* jiffies */
	/*
	 * Bumped whenever notices may have been lost (a connection ended,
	 * INVALIDATE_ALL): added to every directory's names_gen, so every
	 * dentry stamped before goes back to the server.
	 */
	atomic_t names_epoch;
	/* keeps our session (locks, opens) alive on the metadata server */
	struct delayed_work session_work;
	unsigned long session_renew;	/* jiffies between renewals */
	struct pfs_close_batch closes;
	/* lock owners go on the wire hashed under it (lock.c) */
	siphash_key_t lock_key;
	struct pfs_resender resend;
};

static inline struct pfs_sb_info *PFS_SB(const struct super_block *sb)
{
	return sb->s_fs_info;
}

/* The inode of an entry; i_ino is id.ino folded to unsigned long. */
struct pfs_inode_info {
	struct inode vfs_inode;
	struct pfs_entry_id id;
	/* jiffies when attributes were fetched; 0: expired */
	unsigned long attr_time;
	/*
	 * The same for mode, owner and ACLs alone, which our own changes of
	 * names in a directory leave alone: its permission checks need no
	 * new GETATTR after each create or unlink.
	 */
	unsigned long perm_time;
	/* regular files: the stripe layout, from the first CREATE or OPEN */
	struct mutex layout_lock;
	struct pfs_layout *layout;	/* NULL until known; then immutable */
	struct pfs_verfs *verfs;	/* per target, set with the layout */
	/* the largest size the metadata server has been told of */
	u64 reported_size;
	/*
	 * jiffies (never 0) of the first of the writeback failures in a row
	 * that are being retried; 0 when the last attempt succeeded
	 */
	unsigned long wb_fail_since;
	unsigned long flags;		/* PFS_INO_* bits */
	/*
	 * directories: bumped when the server says names in it changed, or
	 * when a change of ours failed (it may have happened all the same)
	 */
	atomic_t names_gen;
};

enum {
	/* another client changed the data: drop cached pages before use */
	PFS_INO_INVALID_DATA,
	/* attributes were filled once (attr_time 0 only means expired) */
	PFS_INO_ATTR_KNOWN,
};

static inline struct pfs_inode_info *PFS_I(const struct inode *inode)
{
	return container_of(inode, struct pfs_inode_info, vfs_inode);
}

/* The VFS inode number of an entry (readdir reports the same). */
static inline unsigned long pfs_ino_of(const struct pfs_entry_id *id)
{
	return (unsigned long)(id->ino ^ ((u64)id->owner_node << 48));
}

static inline struct pfs_net *pfs_inode_net(const struct inode *inode)
{
	return PFS_SB(inode->i_sb)->net;
}

/*
 * Encodes *msg with its XDR function (pfs_x_...) into a new kmalloc'ed
 * buffer; evaluates to the buffer or an ERR_PTR, and stores the length in
 * *lenp. kfree the buffer.
 */
#define pfs_encode(xfn, msg, lenp)					\
({									\
	struct pfs_xdr __x;						\
	void *__buf;							\
	pfs_xdr_init_size(&__x);					\
	xfn(&__x, (msg));						\
	__buf = __x.err ? ERR_PTR(__x.err) :				\
		kmalloc(__x.pos ? __x.pos : 1, GFP_NOFS);		\
	if (!__buf) {							\
		__buf = ERR_PTR(-ENOMEM);				\
	} else if (!IS_ERR(__buf)) {					\
		__u32 __n = __x.pos;					\
		pfs_xdr_init_encode(&__x, __buf, __n);			\
		if (xfn(&__x, (msg)) < 0) {				\
			kfree(__buf);					\
			__buf = ERR_PTR(-EINVAL);			\
		} else {						\
			*(lenp) = __n;					\
		}							\
	}								\
	__buf;								\
})

/* Decodes a whole reply body that is exactly one message: 0 or -EIO. */
#define pfs_decode(xfn, msg, buf, len)					\
({									\
	struct pfs_xdr __x;						\
	pfs_xdr_init_decode(&__x, (buf), (len));			\
	xfn(&__x, (msg));						\
	pfs_xdr_finish(&__x) ? -EIO : 0;				\
})

/* verf.c: write verifiers per target of a file */
struct pfs_verfs;
struct pfs_verfs *pfs_verfs_alloc(u32 count);
void pfs_verfs_free(struct pfs_verfs *v);
/* A write to target index was acknowledged under verifier. */
void pfs_verfs_seen(struct pfs_verfs *v, u32 index, u64 verifier);
/* Its sync answered verifier: 0, or -EIO when a write may be lost. */
int pfs_verfs_synced(struct pfs_verfs *v, u32 index, u64 verifier);

/* super.c */
extern struct file_system_type pfs_fs_type;

/* meta.c: requests to the metadata server that owns an entry */
int pfs_meta_call(struct super_block *sb, const struct pfs_entry_id *owner,
		  struct pfs_rpc *rpc);
/* Encodes msg, sends it as type to owner's metadata server, releases it. */
#define pfs_meta_simple(sb, owner, type_, xfn, msg)			\
({									\
	struct pfs_rpc __rpc = { .type = (type_) };			\
	u32 __len = 0;							\
	void *__req = pfs_encode(xfn, (msg), &__len);			\
	int __rc = PTR_ERR_OR_ZERO(__req);				\
	if (!__rc) {							\
		__rpc.req = __req;					\
		__rpc.req_len = __len;					\
		__rc = pfs_meta_call((sb), (owner), &__rpc);		\
		pfs_rpc_release(&__rpc);				\
		kfree(__req);						\
	}								\
	__rc;								\
})
/*
 * Like pfs_meta_simple for requests answered with a pfs_attr: decodes it
 * into *attr (which may be the only thing in the reply, or be followed by
 * a pfs_layout, decoded into *layout when layout is not NULL).
 */
int pfs_meta_attr_call(struct super_block *sb, const struct pfs_entry_id *owner,
		       u16 type, const void *req, u32 req_len,
		       struct pfs_attr *attr, struct pfs_layout *layout);
/* pfs_meta_attr_call of msg, encoded with its XDR function xfn. */
#define pfs_meta_attr_msg(sb, owner, type, xfn, msg, attr, layout)	\
({									\
	u32 __len = 0;							\
	void *__req = pfs_encode(xfn, (msg), &__len);			\
	int __rc = PTR_ERR_OR_ZERO(__req);				\
	if (!__rc) {							\
		__rc = pfs_meta_attr_call((sb), (owner), (type), __req,	\
					  __len, (attr), (layout));	\
		kfree(__req);						\
	}								\
	__rc;								\
})

/* inode.c */
extern struct kmem_cache *pfs_inode_cachep;
struct inode *pfs_iget(struct super_block *sb, const struct pfs_attr *attr);
/* -EIO (nothing changed) when attr is of another entry or type. */
int pfs_inode_update(struct inode *inode, const struct pfs_attr *attr);
/* Raises i_size to end if it is less (writers; safe against refreshes). */
void pfs_i_size_extend(struct inode *inode, loff_t end);
/*
 * Drops the cached pages of a file another client changed (see
 * PFS_INO_INVALID_DATA); call before the page cache is used.
 */
int pfs_revalidate_mapping(struct inode *inode);
/* Refetches attributes when older than the attribute TTL (or force). */
int pfs_revalidate_inode(struct inode *inode, bool force);
/* Attributes younger than the attribute TTL; expire forces a refetch. */
bool pfs_attr_fresh(struct inode *inode);
void pfs_attr_expire(struct inode *inode);
/* Only times, size and link count changed: permission checks stay cached. */
void pfs_attr_expire_times(struct inode *inode);
/* Mode, owner and ACLs younger than the attribute TTL. */
bool pfs_perm_fresh(struct inode *inode);
/* ->permission of files and directories: revalidates stale permissions. */
int pfs_permission(pfs_idmap_t *idmap, struct inode *inode, int mask);
int pfs_getattr(pfs_idmap_t *idmap, const struct path *path,
		struct kstat *stat, u32 request_mask, unsigned int flags);
int pfs_setattr(pfs_idmap_t *idmap, struct dentry *dentry,
		struct iattr *attr);
/* Sends the changes in ia (already permitted) and updates the inode. */
int pfs_apply_setattr(struct inode *inode, struct iattr *ia);
/*
 * The transport's notify callback (ctx: the pfs_sb_info): INVALIDATE
 * notices expire the attributes and dentries of the entries named,
 * INVALIDATE_ALL every dentry.
 */
void pfs_notice(void *ctx, u16 type, const void *payload, u32 len);
/* Its lost callback: a connection's notices are gone, so is every dentry. */
void pfs_notices_lost(void *ctx);
/* Stores the layout of a regular file if none is known yet. */
int pfs_inode_set_layout(struct inode *inode, const struct pfs_layout *layout);
extern const struct inode_operations pfs_file_iops;
extern const struct inode_operations pfs_symlink_iops;

/* namei.c */
extern const struct inode_operations pfs_dir_iops;
extern const struct dentry_operations pfs_dentry_ops;

/* dir.c */
extern const struct file_operations pfs_dir_fops;

/* file.c: open/release, read/write, fsync, mmap, locks */
extern const struct file_operations pfs_file_fops;
/* Tells the metadata server how far the file has been written. */
int pfs_report_size(struct inode *inode);
/* ->open of a file whose OPEN the server has done (finish_open's open). */
int pfs_file_open_counted(struct inode *inode, struct file *file);
/* CLOSE of id in the background; pfs_drain_closes waits for all of them. */
void pfs_close_batch_init(struct pfs_close_batch *b, struct super_block *sb);
void pfs_close_later(struct super_block *sb, const struct pfs_entry_id *id);
void pfs_drain_closes(struct super_block *sb);
/* The CLOSE workqueue, for module init and exit. */
int pfs_file_init(void);
void pfs_file_exit(void);

/* resend.c: CLOSEs and unlocks sent again until the server answers */
void pfs_resend_init(struct pfs_resender *r, struct super_block *sb);
void pfs_resend_worker(struct work_struct *work);
/* Whether a request's error means the server may not have it. */
bool pfs_resend_unanswered(int err);
/* Queues what got no answer (err) for sending again; others are done. */
void pfs_resend_close(struct super_block *sb, const struct pfs_entry_id *ids,
		      unsigned int n, int err);
void pfs_resend_unlock(struct super_block *sb, const struct pfs_lock_req *m,
		       int err);
/* A CLOSE sent from the background at once (the closer does not wait). */
void pfs_resend_close_later(struct super_block *sb,
			    const struct pfs_entry_id *id);
/* Sends the unlocks waiting for (id, owner): before a LOCK of theirs. */
int pfs_resend_flush_lock(struct super_block *sb,
			  const struct pfs_entry_id *id, u64 owner);
/* umount: one last attempt for everything, then nothing is kept. */
void pfs_resend_drain(struct super_block *sb);

/* lock.c: flock and POSIX locks (file_operations .flock and .lock) */
int pfs_lock(struct file *file, int cmd, struct file_lock *fl);
int pfs_flock(struct file *file, int cmd, struct file_lock *fl);

/* addr.c: page cache and direct I/O against the storage targets */
extern const struct address_space_operations pfs_aops;
/* The readahead workqueue, for module init and exit. */
int pfs_addr_init(void);
void pfs_addr_exit(void);
/*
 * Striped transfers of a regular file with a known layout: every target
 * touched gets its request in flight before the first wait. Return bytes
 * moved or -errno; reads past the end of a chunk file return zeroes.
 */
ssize_t pfs_stripe_read(struct inode *inode, loff_t pos, struct iov_iter *to);
ssize_t pfs_stripe_write(struct inode *inode, loff_t pos,
			 struct iov_iter *from);
/* CHUNK_SYNC on every target holding data of the file's first i_size bytes. */
int pfs_stripe_sync(struct inode *inode);

/* xattr.c: user., trusted., security. and POSIX ACLs */
extern const struct xattr_handler *pfs_xattr_handlers[];
ssize_t pfs_listxattr(struct dentry *dentry, char *list, size_t size);
/*
 * The inode_operations ACL members, whose shape differs between kernels:
 * put PFS_ACL_IOPS in every inode_operations table.
 */
struct posix_acl *pfs_get_acl(struct inode *inode, int type, bool rcu);
int pfs_set_acl(pfs_idmap_t *idmap, struct inode *inode,
		struct posix_acl *acl, int type);
#define PFS_ACL_IOPS .get_acl = pfs_get_acl, .set_acl = pfs_set_acl

/* selftest.c */
int pfs_proto_selftest(void);

#endif /* PFS_H */
