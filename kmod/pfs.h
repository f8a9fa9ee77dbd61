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
#include <linux/xarray.h>

#include "pfs_config.h"
#include "pfs_proto.h"
#include "net/net.h"

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
	bool nordirplus;		/* listings without attributes */
	enum pfs_transport_choice transport;
	char rails[PFS_RAILS_MAX][PFS_RAIL_NAME_MAX];
	unsigned int nrails;
};

/* sb->s_fs_info */
/* CLOSEs waiting to go out together (file.c) */
struct pfs_close_batch {
	spinlock_t lock;
	struct delayed_work work;
	struct super_block *sb;
	unsigned int waiting;
	struct pfs_entry_id ids[PFS_CLOSE_MANY_MAX];
	u64 epochs[PFS_CLOSE_MANY_MAX];	/* each open's session epoch */
	struct pfs_close_many sending;	/* the worker's own */
	u64 sending_epochs[PFS_CLOSE_MANY_MAX];
};

/* CLOSEs, unlocks and size reports sent again until answered (resend.c) */
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

/* Our sessions on the metadata servers (session.c) */
struct pfs_sessions {
	struct xarray servers;		/* node id -> pfs_meta_session */
	struct delayed_work work;	/* renews them all */
	unsigned long renew;		/* jiffies between renewals */
	/* the shortest session timeout a server told (jiffies), 0: none */
	unsigned long timeout;
	/* connections lost: a session is suspect until renewed since */
	atomic_t disconnects;
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
	/*
	 * INVALIDATE notices taken (and lost ones): a listing primes the
	 * caches only if none came while it was on its way (dir.c)
	 */
	atomic_t notices;
	/*
	 * statahead workers under way, each holding a dentry; names looked up
	 * on the server, and pages listed ahead of them (statahead.c)
	 */
	atomic_t statahead_pending;
	atomic64_t statahead_lookups;
	atomic64_t statahead_pages;
	/* keeps our sessions (locks, opens) alive on the metadata servers */
	struct pfs_sessions sessions;
	struct pfs_close_batch closes;
	/* lock owners go on the wire hashed under it (lock.c) */
	siphash_key_t lock_key;
	struct pfs_resender resend;
	/* set by pfs_kill_sb: its sync of the file system asks no server */
	bool unmounting;
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
	/*
	 * NULL until known; then immutable, but for an inline file's, which
	 * is replaced once when its data moves to the storage targets (the
	 * old one kept in old_layout until the inode is freed: I/O under way
	 * may still use it)
	 */
	struct pfs_layout *layout;
	struct pfs_verfs *verfs;	/* per target, set with the layout */
	struct pfs_layout *old_layout;
	struct pfs_verfs *old_verfs;
	/* the largest size the metadata server has been told of */
	u64 reported_size;
	/*
	 * jiffies (never 0) of the first of the writeback failures in a row
	 * that are being retried; 0 when the last attempt succeeded
	 */
	unsigned long wb_fail_since;
	/* regular files: write-behind (addr.c) */
	atomic_long_t dirtied;		/* bytes written since the last kick */
	struct work_struct write_behind;
	unsigned long flags;		/* PFS_INO_* bits */
	struct timespec64 btime;	/* creation, from the server */
	struct timespec64 security_ctime;	/* PFS_INO_SECURITY_SET */
	/*
	 * directories: bumped when the server says names in it changed, or
	 * when a change of ours failed (it may have happened all the same)
	 */
	atomic_t names_gen;
	/*
	 * directories, statahead (statahead.c): names looked up on the server
	 * since the last page; where the next page starts; jiffies (never 0)
	 * when the last pass ended, 0 while one goes on
	 */
	atomic_t sa_misses;
	loff_t sa_pos;
	unsigned long sa_pass_end;
	/*
	 * striped directories (PFS_INO_STRIPED): every shard, this one first,
	 * as DIR_SHARDS gave them; NULL until first needed, then immutable
	 * (shard.c)
	 */
	struct pfs_dir_shards *shards;
	/*
	 * regular files: our opens the metadata server does not count
	 * (PFS_EPOCH_UNTRACKED), with the credentials of one of them; OPENs
	 * on their way that asked not to be counted; unlinks and renames of
	 * ours under way that may free the file; and whether one OPEN of
	 * ours (under held_epoch) counts them all while we may free it
	 * (pfs_untracked_hold)
	 */
	struct mutex untracked_lock;
	u32 untracked;
	u32 opening;
	u32 removing;
	const struct cred *untracked_cred;
	bool held;
	u64 held_epoch;
};

/*
 * The epoch of an open the metadata server did not count, having given us
 * the whole file (PFS_FLAG_UNTRACKED): it is never closed nor reopened.
 */
#define PFS_EPOCH_UNTRACKED	U64_MAX

enum {
	/* another client changed the data: drop cached pages before use */
	PFS_INO_INVALID_DATA,
	/* attributes were filled once (attr_time 0 only means expired) */
	PFS_INO_ATTR_KNOWN,
	/*
	 * freed on the server with an open our session lost: its data is
	 * neither read nor written any more (ESTALE)
	 */
	PFS_INO_GONE,
	/* regular files: i_blocks is to be asked of the targets (space.c) */
	PFS_INO_BLOCKS_STALE,
	/*
	 * the attributes said: no security.* xattrs (pfs_attr.xattrs); taken
	 * as the answer while they are fresh
	 */
	PFS_INO_NO_SECURITY,
	/*
	 * we set a security.* xattr at security_ctime: attributes of that
	 * ctime predate it and say nothing of security xattrs
	 */
	PFS_INO_SECURITY_SET,
	/*
	 * a size report went out PFS_SET_LAZY (close), or this client made
	 * the file (CREATE is answered before it is durable): the server may
	 * not have it on disk yet, and the next fsync reports again
	 */
	PFS_INO_SIZE_LAZY,
	/* directories: striped over metadata servers (PFS_ATTR_STRIPED) */
	PFS_INO_STRIPED,
	/* directories: a statahead page is on its way (statahead.c) */
	PFS_INO_STATAHEAD,
};

/* file->private_data of a regular file (file.c, lock.c) */
struct pfs_file_info {
	unsigned long flags;		/* PFS_FILE_* bits */
	struct mutex reopen_lock;
	/*
	 * The session epochs (on the inode's metadata server) our OPEN and
	 * the last flock and POSIX lock taken through this file were
	 * granted under; 0: none, or not known. Another epoch there now
	 * means they are gone (pfs_session_lost). An open the server did
	 * not count: PFS_EPOCH_UNTRACKED.
	 */
	u64 open_epoch;
	u64 flock_epoch;
	u64 posix_epoch;
};

enum {
	/* written through this file since the last report: send an mtime */
	PFS_FILE_WRITTEN,
	/* the open was lost with our session, and the file is gone */
	PFS_FILE_GONE,
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

/*
 * session.c: our sessions on the metadata servers, and their epochs (the
 * epoch a reply carried tags what it granted: an open, a lock).
 */
struct pfs_meta_session;
void pfs_sessions_init(struct pfs_sessions *ss, struct super_block *sb);
void pfs_sessions_worker(struct work_struct *work);
/* Renews on every metadata server now, then every third of the timeout. */
void pfs_sessions_start(struct super_block *sb);
/* umount: no more renewals, SESSION_END to every metadata server. */
void pfs_sessions_end(struct super_block *sb);
/* After the net stopped. */
void pfs_sessions_free(struct pfs_sessions *ss);
/* The transport lost a connection: every session is suspect. */
void pfs_sessions_suspect(struct pfs_sb_info *sbi);
/* Our session on node (created on first use); NULL without memory. */
struct pfs_meta_session *pfs_session_get(struct super_block *sb, u32 node);
/* Its epoch as last seen (0: none yet, or s NULL). */
u64 pfs_session_epoch(struct pfs_meta_session *s);
/*
 * A reply to a request sent while the epoch was sent carried epoch (0:
 * none): a new epoch is taken, and the session before is lost.
 */
void pfs_session_seen(struct pfs_meta_session *s, u64 sent, u64 epoch);
/* Whether what was granted under epoch held on node is gone. */
bool pfs_session_lost(struct super_block *sb, u32 node, u64 held);
/*
 * When a connection was lost since node last answered a renewal, or that
 * renewal started a session timeout ago: renews there now, so that its
 * epoch is current. 0, or why it could not.
 */
int pfs_session_verify(struct super_block *sb, u32 node);

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
/*
 * Room for the content of an inline file in the reply to a read-only open
 * (PFS_FLAG_INLINE_CONTENT): pages the reply's bulk data lands in, which
 * then go into the page cache as they are. len: the bytes that came (all
 * of the file when they are as many as its size). room: at most this
 * many bytes are asked for (0: PFS_OPEN_CONTENT_MAX).
 */
#define PFS_OPEN_CONTENT_MAX	(128u << 10)
struct pfs_open_content {
	u32 room;
	u32 npages;
	u32 len;
	struct bio_vec *bvec;	/* bv_page NULL: taken into the cache */
	/*
	 * in: the open asks to send no CLOSE (PFS_FLAG_UNTRACKED); out: the
	 * server gave all of the file and did not count the open
	 */
	bool untracked;
};

/* meta.c: the pages of c not taken into the page cache, freed. */
void pfs_open_content_free(struct pfs_open_content *c);

/*
 * The same for requests that open (OPEN, OPEN_NAME, CREATE): *epoch gets
 * the session epoch the open was granted under (see session.c). made:
 * NULL, or the reply starts with struct pfs_create_made (CREATE with
 * PFS_CREATE_FIND), whose answer goes there. content: NULL, or the
 * request asks for the content of an inline file, which goes there.
 */
int pfs_meta_open_call(struct super_block *sb, const struct pfs_entry_id *owner,
		       u16 type, const void *req, u32 req_len,
		       struct pfs_attr *attr, struct pfs_layout *layout,
		       u64 *epoch, bool *made,
		       struct pfs_open_content *content);
/* pfs_meta_open_call of msg, encoded with its XDR function xfn. */
#define pfs_meta_open_msg(sb, owner, type, xfn, msg, attr, layout, epoch, \
			  made, content)				\
({									\
	u32 __len = 0;							\
	void *__req = pfs_encode(xfn, (msg), &__len);			\
	int __rc = PTR_ERR_OR_ZERO(__req);				\
	if (!__rc) {							\
		__rc = pfs_meta_open_call((sb), (owner), (type), __req,	\
					  __len, (attr), (layout),	\
					  (epoch), (made), (content));	\
		kfree(__req);						\
	}								\
	__rc;								\
})
/* 0 for attributes the VFS can take, else -EIO (logged, naming type). */
int pfs_attr_check(u16 type, const struct pfs_attr *attr);
/* pfs_meta_attr_call of msg, encoded with its XDR function xfn. */
#define pfs_meta_attr_msg(sb, owner, type, xfn, msg, attr, layout)	\
	pfs_meta_open_msg(sb, owner, type, xfn, msg, attr, layout, NULL, NULL, \
			  NULL)

/*
 * shard.c: striped directories. The directory (its shard) whose server
 * keeps name, or that a READDIR from cookie goes to: dir itself unless it
 * is striped. 0 or -errno (the shards could not be asked).
 */
int pfs_name_dir(struct inode *dir, const struct qstr *name,
		 struct pfs_entry_id *out);
int pfs_cookie_dir(struct inode *dir, u64 cookie, struct pfs_entry_id *out);
/*
 * Every shard of dir, the directory itself first (dir alone unless it is
 * striped): valid while dir is.
 */
int pfs_dir_shard_ids(struct inode *dir, const struct pfs_entry_id **ids,
		      u32 *count);

/* inode.c */
extern struct kmem_cache *pfs_inode_cachep;
struct inode *pfs_iget(struct super_block *sb, const struct pfs_attr *attr);
/* -EIO (nothing changed) when attr is of another entry or type. */
int pfs_inode_update(struct inode *inode, const struct pfs_attr *attr);
void pfs_inode_written(struct inode *inode, const struct pfs_attr *attr);
/*
 * Puts the content an open's reply carried (an inline file's, c) in the
 * page cache, so that reading the file needs no more requests: only into
 * an empty mapping, and only while the inode is still as attr, from the
 * same reply, describes it (a change since shows in its size or mtime).
 * The pages it takes leave c. Nothing here fails: reads fetch what is
 * not cached.
 */
void pfs_inode_take_content(struct inode *inode, const struct pfs_attr *attr,
			    struct pfs_open_content *c);
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
void pfs_perm_confirmed(struct inode *inode);
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
/*
 * An inline file's data moved to its storage targets (a chunk request was
 * answered PFS_E_MOVED, -EREMCHG here): its layout fetched again
 * (GET_LAYOUT) and put in place. 0 when the inode has a layout that is not
 * inline afterwards.
 */
int pfs_inode_relayout(struct inode *inode);
/* GET_LAYOUT of a regular file into *layout. */
int pfs_fetch_layout(struct inode *inode, struct pfs_layout *layout);

/*
 * The server of a target of inode's layout (PFS_INLINE_TARGET: the file's
 * metadata server), referenced, or an ERR_PTR or NULL as
 * pfs_net_target_node.
 */
struct pfs_node *pfs_inode_target_node(struct inode *inode, u32 target_id);

/* An inline file's layout: its data is with its metadata server. */
static inline bool pfs_layout_inline(const struct pfs_layout *lo)
{
	return lo->count == 1 && lo->targets[0] == PFS_INLINE_TARGET;
}
extern const struct inode_operations pfs_file_iops;
extern const struct inode_operations pfs_symlink_iops;

/* namei.c */
extern const struct inode_operations pfs_dir_iops;
extern const struct dentry_operations pfs_dentry_ops;
unsigned int pfs_names_gen(struct inode *dir);
void pfs_prime_dentry(struct dentry *parent, const struct pfs_dirent_plus *e,
		      size_t len, unsigned int gen, unsigned int notices,
		      const struct qstr *skip);

/* dir.c */
extern const struct file_operations pfs_dir_fops;
bool pfs_readdir_plus(struct inode *dir);
int pfs_list_page(struct dentry *dentry, loff_t *pos, struct dir_context *ctx,
		  struct pfs_dirent_plus *plus, const struct qstr *skip);

/* statahead.c */
void pfs_statahead_miss(struct dentry *parent, struct dentry *looking);
void pfs_statahead_drain(struct super_block *sb);
int pfs_statahead_init(void);
void pfs_statahead_exit(void);

/* file.c: open/release, read/write, fsync, mmap, locks */
extern const struct file_operations pfs_file_fops;
/* Tells the metadata server how far the file has been written. */
int pfs_report_size(struct inode *inode);
/* Data was written through file: size and mtime go out at flush/fsync. */
void pfs_file_mark_written(struct file *file);
/* ->open of a file whose OPEN the server has done (finish_open's open). */
int pfs_file_open_counted(struct inode *inode, struct file *file);
/* The open of file is ours under session epoch (or PFS_EPOCH_UNTRACKED). */
void pfs_file_opened(struct file *file, u64 epoch);
/*
 * An open (f_flags) that reads through the page cache only: it may take
 * an inline file's content there.
 */
bool pfs_open_caches(struct super_block *sb, unsigned int flags);
/*
 * Before a file's data is used: 0 when its open lives in our session (it
 * is opened again if the session was lost), -ESTALE when the file is gone
 * with the session, or why it could not be told.
 */
int pfs_file_check(struct file *file);
/*
 * CLOSE of id (opened under session epoch) in the background, unless that
 * session is lost; pfs_drain_closes waits for all of them.
 */
void pfs_close_batch_init(struct pfs_close_batch *b, struct super_block *sb);
void pfs_close_later(struct super_block *sb, const struct pfs_entry_id *id,
		     u64 epoch);
void pfs_drain_closes(struct super_block *sb);
/*
 * Before an unlink or a rename of ours that may free inode (under its
 * inode lock): our opens of it that the server does not count, and those
 * on their way, are counted by one OPEN, closed when the last of them is
 * released (the file's data stays readable to them); no open asks not to
 * be counted until pfs_untracked_removed.
 */
void pfs_untracked_hold(struct inode *inode);
void pfs_untracked_removed(struct inode *inode);
/* The CLOSE workqueue, for module init and exit. */
int pfs_file_init(void);
void pfs_file_exit(void);

/*
 * resend.c: CLOSEs, unlocks and size reports sent again until the server
 * answers. CLOSEs and unlocks carry the session epoch of the open or lock
 * they end: one the session lost is dropped, not sent to the next session.
 */
void pfs_resend_init(struct pfs_resender *r, struct super_block *sb);
void pfs_resend_worker(struct work_struct *work);
/* Whether a request's error means the server may not have it. */
bool pfs_resend_unanswered(int err);
/* Queues what got no answer (err) for sending again; others are done. */
void pfs_resend_close(struct super_block *sb, const struct pfs_entry_id *ids,
		      const u64 *epochs, unsigned int n, int err);
void pfs_resend_unlock(struct super_block *sb, const struct pfs_lock_req *m,
		       u64 epoch, int err);
/* A size report (SETATTR size-extend, mtime now) as cred. */
void pfs_resend_size(struct super_block *sb, const struct pfs_entry_id *id,
		     u64 size, const struct cred *cred, int err);
/* A CLOSE sent from the background at once (the closer does not wait). */
void pfs_resend_close_later(struct super_block *sb,
			    const struct pfs_entry_id *id, u64 epoch);
/* Sends the unlocks waiting for (id, owner): before a LOCK of theirs. */
int pfs_resend_flush_lock(struct super_block *sb,
			  const struct pfs_entry_id *id, u64 owner);
/* Sends the size reports waiting for id: before a truncate of it. */
int pfs_resend_flush_size(struct super_block *sb,
			  const struct pfs_entry_id *id);
/* umount: one last attempt for everything, then nothing is kept. */
void pfs_resend_drain(struct super_block *sb);

/* lock.c: flock and POSIX locks (file_operations .flock and .lock) */
int pfs_lock(struct file *file, int cmd, struct file_lock *fl);
int pfs_flock(struct file *file, int cmd, struct file_lock *fl);

/* addr.c: the page cache */
extern const struct address_space_operations pfs_aops;
/* The readahead and write-behind workqueues, for module init and exit. */
int pfs_addr_init(void);
void pfs_write_behind_init(struct inode *inode);
void pfs_write_behind(struct inode *inode, size_t written);
void pfs_write_behind_cancel(struct inode *inode);
void pfs_addr_exit(void);
/*
 * Striped transfers of a regular file with a known layout: every target
 * touched gets its request in flight before the first wait. Return bytes
 * moved or -errno; reads past the end of a chunk file return zeroes.
 */
/*
 * stripe.c: moves count bytes between file offset pos and iter, which must be
 * kernel memory the transport can reach from any context (bvec, kvec,
 * xarray), or GPU memory (gpu: pinned pages nvidia-fs maps). Returns the
 * bytes moved, a prefix of the range, or -errno when none moved; iter is
 * advanced by the return value.
 */
int pfs_write_and_wait(struct address_space *mapping, loff_t start,
		       loff_t end);
ssize_t pfs_stripe_batch(struct inode *inode, u16 type, loff_t pos,
			 struct iov_iter *iter, size_t count,
			 const struct pfs_gpu_io *gpu);
/*
 * A striped read that reports its progress: moved(p, done) each time the
 * first done bytes (a prefix, less than the whole) have arrived while later
 * pieces are still on their way.
 */
struct pfs_stripe_progress {
	void (*moved)(struct pfs_stripe_progress *p, size_t done);
};
ssize_t pfs_stripe_read_progress(struct inode *inode, loff_t pos,
				 struct iov_iter *iter, size_t count,
				 struct pfs_stripe_progress *progress);
/* The same for writeback: 0 once all count bytes are stored, or -errno. */
int pfs_stripe_write_all(struct inode *inode, loff_t pos,
			 struct iov_iter *iter, size_t count);
/* direct.c: the same from and to user memory (O_DIRECT, cache=none). */
ssize_t pfs_stripe_read(struct inode *inode, loff_t pos, struct iov_iter *to);
ssize_t pfs_stripe_write(struct inode *inode, loff_t pos,
			 struct iov_iter *from);
/* CHUNK_SYNC on every target holding data of the file's first i_size bytes. */
int pfs_stripe_sync(struct inode *inode);

/*
 * space.c: fallocate, SEEK_DATA/SEEK_HOLE, st_blocks and copy_file_range
 * against the storage targets
 */
long pfs_fallocate(struct file *file, int mode, loff_t offset, loff_t len);
loff_t pfs_seek_data_hole(struct file *file, loff_t offset, int whence);
ssize_t pfs_copy_file_range(struct file *in, loff_t pos_in,
			    struct file *out, loff_t pos_out, size_t len,
			    unsigned int flags);
/* i_blocks from the targets if PFS_INO_BLOCKS_STALE; 0 or -errno. */
int pfs_refresh_blocks(struct inode *inode);

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
