// SPDX-License-Identifier: GPL-2.0
/*
 * Inodes: finding them by entry id, keeping their attributes fresh within
 * the attribute TTL, getattr/setattr, symlinks.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/posix_acl.h>
#include <linux/writeback.h>

#include "pfs.h"

static struct timespec64 pfs_ts(const struct pfs_timespec *t)
{
	return (struct timespec64){ .tv_sec = t->sec, .tv_nsec = t->nsec };
}

static struct pfs_timespec pfs_wire_ts(struct timespec64 t)
{
	return (struct pfs_timespec){ .sec = t.tv_sec, .nsec = t.tv_nsec };
}

#ifdef PFS_HAVE_INODE_SET_MTIME_TO_TS
static struct timespec64 pfs_get_mtime(const struct inode *inode)
{
	return inode_get_mtime(inode);
}

static void pfs_set_am_times(struct inode *inode, struct timespec64 atime,
			     struct timespec64 mtime)
{
	inode_set_atime_to_ts(inode, atime);
	inode_set_mtime_to_ts(inode, mtime);
}

static void pfs_set_mtime(struct inode *inode, struct timespec64 mtime)
{
	inode_set_mtime_to_ts(inode, mtime);
}
#else
static struct timespec64 pfs_get_mtime(const struct inode *inode)
{
	return inode->i_mtime;
}

static void pfs_set_am_times(struct inode *inode, struct timespec64 atime,
			     struct timespec64 mtime)
{
	inode->i_atime = atime;
	inode->i_mtime = mtime;
}

static void pfs_set_mtime(struct inode *inode, struct timespec64 mtime)
{
	inode->i_mtime = mtime;
}
#endif

/* Local state the servers do not know yet: keep our size. */
static bool pfs_has_local_writes(struct inode *inode)
{
	return atomic_read(&inode->i_writecount) > 0 ||
	       mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY) ||
	       mapping_tagged(inode->i_mapping, PAGECACHE_TAG_WRITEBACK);
}

/*
 * "No ACL" goes only where nothing is cached: a reply that left the
 * server before our own SETXATTR must not replace the ACL pfs_set_acl
 * cached. One that says there is an ACL drops a cached "none".
 */
static void pfs_acl_known(struct inode *inode, struct posix_acl **slot,
			  int type, bool present)
{
	if (!present)
		cmpxchg(slot, (struct posix_acl *)ACL_NOT_CACHED, NULL);
	else if (!READ_ONCE(*slot))
		forget_cached_acl(inode, type);
}

/*
 * ls -l asks every file for its ACL and security label, and permission
 * checks for the ACL: what the server says the entry lacks is answered
 * here. Attributes as old as a security xattr we set (its ctime) are
 * silent on security xattrs.
 */
static void pfs_xattrs_known(struct inode *inode, u32 xattrs,
			     const struct timespec64 *ctime)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	bool stale = false;

	if (test_bit(PFS_INO_SECURITY_SET, &pi->flags)) {
		spin_lock(&inode->i_lock);
		stale = timespec64_equal(ctime, &pi->security_ctime);
		spin_unlock(&inode->i_lock);
		if (!stale)
			clear_bit(PFS_INO_SECURITY_SET, &pi->flags);
	}
	if (xattrs & PFS_ATTR_SECURITY)
		clear_bit(PFS_INO_NO_SECURITY, &pi->flags);
	else if (!stale)
		set_bit(PFS_INO_NO_SECURITY, &pi->flags);
	if (!IS_POSIXACL(inode))
		return;
	pfs_acl_known(inode, &inode->i_acl, ACL_TYPE_ACCESS,
		      xattrs & PFS_ATTR_ACL_ACCESS);
	if (S_ISDIR(inode->i_mode))
		pfs_acl_known(inode, &inode->i_default_acl, ACL_TYPE_DEFAULT,
			      xattrs & PFS_ATTR_ACL_DEFAULT);
}

/*
 * What the inline store recorded with a write of ours (pfs_inline_written):
 * the file's mtime and ctime, and the size it knows, so that the next
 * refresh does not take our own write for someone else's. Nothing more: the
 * reply may have left the server before the reply to a SETATTR of ours
 * that we applied already (a chmod, a chown), and a write raises i_size
 * itself.
 */
void pfs_inode_written(struct inode *inode, const struct pfs_attr *attr)
{
	struct pfs_inode_info *pi = PFS_I(inode);

	if (memcmp(&attr->id, &pi->id, sizeof(attr->id)) ||
	    pfs_attr_check(PFS_MSG_CHUNK_WRITE, attr))
		return;
	spin_lock(&inode->i_lock);
	pfs_set_mtime(inode, pfs_ts(&attr->mtime));
	inode_set_ctime_to_ts(inode, pfs_ts(&attr->ctime));
	if (attr->size > pi->reported_size)
		pi->reported_size = attr->size;
	spin_unlock(&inode->i_lock);
	set_bit(PFS_INO_BLOCKS_STALE, &pi->flags);
}

int pfs_inode_update(struct inode *inode, const struct pfs_attr *attr)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	struct timespec64 mtime = pfs_ts(&attr->mtime);
	struct timespec64 ctime = pfs_ts(&attr->ctime);
	struct timespec64 old_ctime = inode_get_ctime(inode);
	struct timespec64 old_mtime = pfs_get_mtime(inode);
	loff_t old_size, size = attr->size;
	bool local = S_ISREG(inode->i_mode) && pfs_has_local_writes(inode);
	/* Not the first fill of a new inode: changes are news. */
	bool known = test_bit(PFS_INO_ATTR_KNOWN, &pi->flags);
	/* The metadata server's st_blocks, when nothing of ours is missing. */
	bool counted = S_ISREG(inode->i_mode) && !local &&
		       attr->blocks != PFS_BLOCKS_UNKNOWN;

	/* An answer about another entry, or of another type: not ours. */
	if (memcmp(&attr->id, &pi->id, sizeof(attr->id)) ||
	    ((attr->mode ^ inode->i_mode) & S_IFMT)) {
		pr_warn_ratelimited("attributes of entry %llu@%u (mode 0%o) came for entry %llu@%u (mode 0%o): ignored\n",
				    attr->id.ino, attr->id.owner_node,
				    attr->mode, pi->id.ino, pi->id.owner_node,
				    inode->i_mode);
		return -EIO;
	}
	if (known && !timespec64_equal(&ctime, &old_ctime)) {
		forget_all_cached_acls(inode);
		/* Its xattrs may have changed: the next write checks again. */
		inode_set_flags(inode, 0, S_NOSEC);
	}
	pfs_xattrs_known(inode, attr->xattrs, &ctime);
	/* A directory is striped from its mkdir on, or never. */
	if (S_ISDIR(inode->i_mode) && (attr->xattrs & PFS_ATTR_STRIPED))
		set_bit(PFS_INO_STRIPED, &pi->flags);
	/*
	 * Writers extend i_size under i_lock too (pfs_i_size_extend), without
	 * the inode lock held here: reading and setting the size in one
	 * i_lock section keeps a refresh from undoing an append that
	 * finished while the reply was on its way.
	 */
	spin_lock(&inode->i_lock);
	inode->i_mode = (inode->i_mode & S_IFMT) | (attr->mode & ~S_IFMT);
	inode->i_uid = make_kuid(&init_user_ns, attr->uid);
	inode->i_gid = make_kgid(&init_user_ns, attr->gid);
	set_nlink(inode, attr->nlink);
	pfs_set_am_times(inode, pfs_ts(&attr->atime), mtime);
	inode_set_ctime_to_ts(inode, ctime);
	old_size = i_size_read(inode);
	if (local && size < old_size)
		size = old_size;
	i_size_write(inode, size);
	/*
	 * Regular files the server has no count of: an estimate until the
	 * targets are asked, at the next stat after a change
	 * (pfs_refresh_blocks).
	 */
	if (counted)
		inode->i_blocks = attr->blocks;
	else if (!S_ISREG(inode->i_mode) || !known)
		inode->i_blocks = (size + 511) >> 9;
	pi->btime = pfs_ts(&attr->btime);
	spin_unlock(&inode->i_lock);
	if (counted)
		clear_bit(PFS_INO_BLOCKS_STALE, &pi->flags);
	else if (S_ISREG(inode->i_mode) &&
		 (!known || size != old_size ||
		  !timespec64_equal(&mtime, &old_mtime)))
		set_bit(PFS_INO_BLOCKS_STALE, &pi->flags);

	if (S_ISREG(inode->i_mode) && !local && known &&
	    (size != old_size || !timespec64_equal(&mtime, &old_mtime)))
		/*
		 * Someone else changed the file: what we cached goes before
		 * the next use (pfs_revalidate_mapping), not here, where the
		 * caller may hold a folio lock.
		 */
		set_bit(PFS_INO_INVALID_DATA, &pi->flags);
	pi->reported_size = attr->size;
	pi->attr_time = jiffies;
	WRITE_ONCE(pi->perm_time, pi->attr_time);
	set_bit(PFS_INO_ATTR_KNOWN, &pi->flags);
	return 0;
}

int pfs_revalidate_mapping(struct inode *inode)
{
	unsigned long *flags = &PFS_I(inode)->flags;
	int rc;

	if (!test_and_clear_bit(PFS_INO_INVALID_DATA, flags))
		return 0;
	/*
	 * Unlike invalidate_mapping_pages(), this also drops folios that
	 * are mapped or still sit in a per-CPU LRU batch.
	 */
	rc = invalidate_inode_pages2(inode->i_mapping);
	if (rc)
		set_bit(PFS_INO_INVALID_DATA, flags);
	return rc == -EBUSY ? 0 : rc;
}

void pfs_inode_take_content(struct inode *inode, const struct pfs_attr *attr,
			    struct pfs_open_content *c)
{
	struct address_space *mapping = inode->i_mapping;
	struct timespec64 mtime = pfs_ts(&attr->mtime);
	struct timespec64 have_mtime;
	gfp_t gfp = readahead_gfp_mask(mapping);
	pgoff_t index, end;

	/* All of the file came, or it is not taken. */
	if (!c->len || c->len != attr->size ||
	    DIV_ROUND_UP(c->len, PAGE_SIZE) > c->npages)
		return;
	/* No write or truncate of ours runs meanwhile. */
	inode_lock_shared(inode);
	have_mtime = pfs_get_mtime(inode);
	if (pfs_has_local_writes(inode) || pfs_revalidate_mapping(inode) ||
	    mapping->nrpages || i_size_read(inode) != attr->size ||
	    !timespec64_equal(&mtime, &have_mtime))
		goto out;
	/* The last page's bytes past the end read as zeros. */
	if (offset_in_page(c->len))
		zero_user_segment(c->bvec[(c->len - 1) >> PAGE_SHIFT].bv_page,
				  offset_in_page(c->len), PAGE_SIZE);
	end = DIV_ROUND_UP(c->len, PAGE_SIZE);
	for (index = 0; index < end; index++) {
		struct folio *folio = page_folio(c->bvec[index].bv_page);

		/* A reader of ours got there first: its folio stays. */
		if (filemap_add_folio(mapping, folio, index, gfp))
			continue;
		/* The page cache's now. */
		c->bvec[index].bv_page = NULL;
		folio_mark_uptodate(folio);
		folio_unlock(folio);
		folio_put(folio);
	}
out:
	inode_unlock_shared(inode);
}

void pfs_i_size_extend(struct inode *inode, loff_t end)
{
	if (end <= i_size_read(inode))
		return;
	spin_lock(&inode->i_lock);
	if (end > i_size_read(inode))
		i_size_write(inode, end);
	spin_unlock(&inode->i_lock);
}

static int pfs_inode_test(struct inode *inode, void *data)
{
	const struct pfs_entry_id *id = data;
	const struct pfs_entry_id *have = &PFS_I(inode)->id;

	return have->ino == id->ino && have->owner_node == id->owner_node &&
	       have->generation == id->generation;
}

/*
 * Runs in the transport's receive thread: no sleeping lookups and no
 * inode references (an iput here could evict), so the inode cache is
 * searched under RCU (inodes are freed after a grace period). The net
 * stops before the super block goes away, so sb stays valid here.
 */
void pfs_notice(void *ctx, u16 type, const void *payload, u32 len)
{
	struct pfs_sb_info *sbi = ctx;
	struct pfs_invalidate m;
	struct inode *inode;
	u32 i;

	if (type == PFS_MSG_INVALIDATE_ALL) {
		pfs_notices_lost(ctx);
		return;
	}
	if (type != PFS_MSG_INVALIDATE)
		return;
	atomic_inc(&sbi->notices);
	if (pfs_decode(pfs_x_invalidate, &m, payload, len)) {
		pr_warn_ratelimited("pfs: malformed INVALIDATE notice\n");
		return;
	}
	rcu_read_lock();
	for (i = 0; i < m.count; i++) {
		inode = find_inode_rcu(sbi->sb, pfs_ino_of(&m.ids[i]),
				       pfs_inode_test, &m.ids[i]);
		if (!inode)
			continue;
		pfs_attr_expire(inode);
		/* security.capability may be set: writes look again. */
		inode_set_flags(inode, 0, S_NOSEC);
		if (S_ISDIR(inode->i_mode))
			atomic_inc(&PFS_I(inode)->names_gen);
	}
	rcu_read_unlock();
}

void pfs_notices_lost(void *ctx)
{
	struct pfs_sb_info *sbi = ctx;

	atomic_inc(&sbi->names_epoch);
	atomic_inc(&sbi->notices);
	/* A server that restarted or ended our session says so first. */
	pfs_sessions_suspect(sbi);
}

static int pfs_inode_set(struct inode *inode, void *data)
{
	const struct pfs_entry_id *id = data;

	PFS_I(inode)->id = *id;
	inode->i_ino = pfs_ino_of(id);
	return 0;
}

static void pfs_init_ops(struct inode *inode, u32 rdev)
{
	switch (inode->i_mode & S_IFMT) {
	case S_IFREG:
		inode->i_op = &pfs_file_iops;
		inode->i_fop = &pfs_file_fops;
		inode->i_mapping->a_ops = &pfs_aops;
		break;
	case S_IFDIR:
		inode->i_op = &pfs_dir_iops;
		inode->i_fop = &pfs_dir_fops;
		break;
	case S_IFLNK:
		inode->i_op = &pfs_symlink_iops;
		inode_nohighmem(inode);
		break;
	default:
		/* FIFOs, sockets, devices: their I/O stays on this host */
		inode->i_op = &pfs_file_iops;
		init_special_inode(inode, inode->i_mode, new_decode_dev(rdev));
		break;
	}
}

struct inode *pfs_iget(struct super_block *sb, const struct pfs_attr *attr)
{
	struct pfs_entry_id id = attr->id;
	struct inode *inode;

	inode = iget5_locked(sb, pfs_ino_of(&id), pfs_inode_test,
			     pfs_inode_set, &id);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (inode->i_state & I_NEW) {
		inode->i_mode = attr->mode;
		pfs_init_ops(inode, attr->rdev);
		if (pfs_inode_update(inode, attr)) {
			iget_failed(inode);
			return ERR_PTR(-EIO);
		}
		unlock_new_inode(inode);
		return inode;
	}
	if ((inode->i_mode ^ attr->mode) & S_IFMT) {
		/* Same id, other type: the server's bug, not ours to trust. */
		pr_warn_ratelimited("entry %llu@%u changed type, ignoring\n",
				    id.ino, id.owner_node);
		iput(inode);
		return ERR_PTR(-EIO);
	}
	pfs_inode_update(inode, attr);	/* same id and type: succeeds */
	return inode;
}

int pfs_inode_set_layout(struct inode *inode, const struct pfs_layout *layout)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	struct pfs_layout *copy;

	if (!layout->count)
		return 0;
	if (pfs_stripe_check(layout->chunk_size, layout->count))
		return -EIO;
	mutex_lock(&pi->layout_lock);
	if (!pi->layout) {
		copy = kmemdup(layout, sizeof(*layout), GFP_NOFS);
		pi->verfs = copy ? pfs_verfs_alloc(layout->count) : NULL;
		if (!pi->verfs) {
			kfree(copy);
			mutex_unlock(&pi->layout_lock);
			return -ENOMEM;
		}
		/* Readers look without the lock: publish a complete copy. */
		smp_store_release(&pi->layout, copy);
	}
	mutex_unlock(&pi->layout_lock);
	return 0;
}

int pfs_fetch_layout(struct inode *inode, struct pfs_layout *layout)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	struct pfs_rpc rpc = { .type = PFS_MSG_GET_LAYOUT };
	u32 len = 0;
	void *buf;
	int rc;

	buf = pfs_encode(pfs_x_entry_id, &pi->id, &len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	rpc.req = buf;
	rpc.req_len = len;
	rc = pfs_meta_call(inode->i_sb, &pi->id, &rpc);
	if (!rc)
		rc = pfs_decode(pfs_x_layout, layout, rpc.reply,
				rpc.reply_len);
	pfs_rpc_release(&rpc);
	kfree(buf);
	return rc;
}

int pfs_inode_relayout(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	struct pfs_layout *got;
	struct pfs_verfs *verfs;
	int rc;

	got = kzalloc(sizeof(*got), GFP_NOFS);
	if (!got)
		return -ENOMEM;
	rc = pfs_fetch_layout(inode, got);
	if (!rc && (pfs_layout_inline(got) ||
		    pfs_stripe_check(got->chunk_size, got->count)))
		rc = -EIO;	/* moved, yet inline still: no way on */
	verfs = rc ? NULL : pfs_verfs_alloc(got->count);
	if (!rc && !verfs)
		rc = -ENOMEM;
	if (rc) {
		kfree(got);
		return rc;
	}
	mutex_lock(&pi->layout_lock);
	if (pi->layout && pfs_layout_inline(pi->layout) && !pi->old_layout) {
		pi->old_layout = pi->layout;
		pi->old_verfs = pi->verfs;
		/* Who sees the new layout sees its verifiers (pfs_layout_of). */
		pi->verfs = verfs;
		smp_store_release(&pi->layout, got);
		got = NULL;
		verfs = NULL;
	}
	mutex_unlock(&pi->layout_lock);
	kfree(got);
	pfs_verfs_free(verfs);
	return 0;
}

static int pfs_getattr_call(struct inode *inode, struct pfs_attr *attr)
{
	struct pfs_entry_id *id = &PFS_I(inode)->id;

	return pfs_meta_attr_msg(inode->i_sb, id, PFS_MSG_GETATTR,
				 pfs_x_entry_id, id, attr, NULL);
}

static bool pfs_ttl_fresh(struct inode *inode, unsigned long when)
{
	return when && time_before(jiffies, when + PFS_SB(inode->i_sb)->attr_ttl);
}

bool pfs_attr_fresh(struct inode *inode)
{
	return pfs_ttl_fresh(inode, READ_ONCE(PFS_I(inode)->attr_time));
}

bool pfs_perm_fresh(struct inode *inode)
{
	return pfs_ttl_fresh(inode, READ_ONCE(PFS_I(inode)->perm_time));
}

/*
 * The server confirmed what we know of inode's mode, owner and ACLs (they
 * held for a change it made for us, and it tells us of the next): only a
 * check made while they were still fresh gets that far, so no notice
 * expired them in between.
 */
void pfs_perm_confirmed(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	unsigned long when = READ_ONCE(pi->perm_time);

	/* Not over a notice's expiry that lands meanwhile. */
	if (pfs_ttl_fresh(inode, when))
		cmpxchg(&pi->perm_time, when, jiffies);
}

void pfs_attr_expire(struct inode *inode)
{
	WRITE_ONCE(PFS_I(inode)->attr_time, 0);
	WRITE_ONCE(PFS_I(inode)->perm_time, 0);
}

void pfs_attr_expire_times(struct inode *inode)
{
	WRITE_ONCE(PFS_I(inode)->attr_time, 0);
}

int pfs_revalidate_inode(struct inode *inode, bool force)
{
	struct pfs_attr attr;
	int rc;

	if (!force && pfs_attr_fresh(inode))
		return 0;
	rc = pfs_getattr_call(inode, &attr);
	/*
	 * Gone from the server after we removed its last name ourselves (an
	 * unlinked or replaced directory, symlink or special file someone
	 * still holds open), or after another client removed a file we hold
	 * open uncounted: what we have is all there is, at nlink 0 (reads
	 * past the cached pages fail).
	 */
	if ((rc == -ENOENT || rc == -ESTALE) &&
	    (!inode->i_nlink || READ_ONCE(PFS_I(inode)->untracked))) {
		spin_lock(&inode->i_lock);
		clear_nlink(inode);
		spin_unlock(&inode->i_lock);
		return 0;
	}
	if (rc == -ENOENT)
		rc = -ESTALE;
	if (rc)
		return rc;
	if ((attr.mode ^ inode->i_mode) & S_IFMT)
		return -ESTALE;
	return pfs_inode_update(inode, &attr);
}

/*
 * Another client may have taken access away (chmod, chown, ACLs): the mode,
 * owner and ACLs a check relies on are at most attr_ttl old, unless the
 * server's notice expired them earlier.
 */
int pfs_permission(pfs_idmap_t *idmap, struct inode *inode, int mask)
{
	if (!pfs_perm_fresh(inode)) {
		int rc;

		if (mask & MAY_NOT_BLOCK)
			return -ECHILD;
		rc = pfs_revalidate_inode(inode, true);
		if (rc)
			return rc;
	}
	return generic_permission(idmap, inode, mask);
}

int pfs_getattr(pfs_idmap_t *idmap, const struct path *path,
		struct kstat *stat, u32 request_mask, unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	int rc;

	if (!(flags & AT_STATX_DONT_SYNC)) {
		rc = pfs_revalidate_inode(inode, flags & AT_STATX_FORCE_SYNC);
		if (rc)
			return rc;
		/* A target that cannot answer leaves the last value. */
		if (S_ISREG(inode->i_mode) && (request_mask & STATX_BLOCKS))
			pfs_refresh_blocks(inode);
	}
#ifdef PFS_HAVE_GENERIC_FILLATTR_REQUEST_MASK
	generic_fillattr(idmap, request_mask, inode, stat);
#else
	generic_fillattr(idmap, inode, stat);
#endif
	spin_lock(&inode->i_lock);
	stat->btime = PFS_I(inode)->btime;
	spin_unlock(&inode->i_lock);
	if (stat->btime.tv_sec || stat->btime.tv_nsec)
		stat->result_mask |= STATX_BTIME;
	return 0;
}

static void pfs_fill_setattr(struct inode *inode, const struct iattr *ia,
			     struct pfs_setattr *m)
{
	unsigned int valid = ia->ia_valid;
	struct timespec64 now = current_time(inode);

	m->id = PFS_I(inode)->id;
	if (valid & ATTR_MODE) {
		m->valid |= PFS_SET_MODE;
		m->mode = ia->ia_mode & 07777;
	}
	if (valid & ATTR_UID) {
		m->valid |= PFS_SET_UID;
		m->uid = from_kuid(&init_user_ns, ia->ia_uid);
	}
	if (valid & ATTR_GID) {
		m->valid |= PFS_SET_GID;
		m->gid = from_kgid(&init_user_ns, ia->ia_gid);
	}
	if ((valid & ATTR_SIZE) && S_ISREG(inode->i_mode)) {
		m->valid |= PFS_SET_SIZE;
		m->size = ia->ia_size;
		/*
		 * truncate(2) asks for no times: a size change moves mtime
		 * (ctime follows on the server). Our size, not the server's:
		 * it may not know of writes not yet reported.
		 */
		if (!(valid & ATTR_MTIME) && ia->ia_size != i_size_read(inode)) {
			valid |= ATTR_MTIME;
			valid &= ~ATTR_MTIME_SET;
		}
	}
	/* Without _SET the time is "now": the server stamps its own clock. */
	if (valid & ATTR_ATIME) {
		m->valid |= PFS_SET_ATIME;
		if (!(valid & ATTR_ATIME_SET))
			m->valid |= PFS_SET_ATIME_NOW;
		m->atime = pfs_wire_ts(valid & ATTR_ATIME_SET ? ia->ia_atime : now);
	}
	if (valid & ATTR_MTIME) {
		m->valid |= PFS_SET_MTIME;
		if (!(valid & ATTR_MTIME_SET))
			m->valid |= PFS_SET_MTIME_NOW;
		m->mtime = pfs_wire_ts(valid & ATTR_MTIME_SET ? ia->ia_mtime : now);
	}
}

int pfs_apply_setattr(struct inode *inode, struct iattr *ia)
{
	struct pfs_setattr m = {};
	struct pfs_attr attr;
	int rc;

	pfs_fill_setattr(inode, ia, &m);
	if (!m.valid)
		return 0;
	if (m.valid & PFS_SET_SIZE) {
		/* Data written so far must land before the cut. */
		rc = pfs_write_and_wait(inode->i_mapping, 0, LLONG_MAX);
		/* So must size reports of ours still to be sent. */
		if (!rc)
			rc = pfs_resend_flush_size(inode->i_sb,
						   &PFS_I(inode)->id);
		if (rc)
			return rc;
	}
	rc = pfs_meta_attr_msg(inode->i_sb, &PFS_I(inode)->id,
			       PFS_MSG_SETATTR, pfs_x_setattr, &m, &attr, NULL);
	if (rc)
		return rc;
	if (m.valid & PFS_SET_SIZE)
		truncate_setsize(inode, m.size);
	rc = pfs_inode_update(inode, &attr);
	if (m.valid & PFS_SET_SIZE) {
		i_size_write(inode, m.size);
		PFS_I(inode)->reported_size = m.size;
	}
	return rc;
}

int pfs_setattr(pfs_idmap_t *idmap, struct dentry *dentry, struct iattr *ia)
{
	struct inode *inode = d_inode(dentry);
	int rc;

	rc = setattr_prepare(idmap, dentry, ia);
	if (rc)
		return rc;
	if ((ia->ia_valid & ATTR_SIZE) && !S_ISREG(inode->i_mode))
		return S_ISDIR(inode->i_mode) ? -EISDIR : -EINVAL;
	rc = pfs_apply_setattr(inode, ia);
	if (rc)
		return rc;
	if (ia->ia_valid & ATTR_MODE) {
#ifdef PFS_HAVE_POSIX_ACL_CHMOD_DENTRY
		rc = posix_acl_chmod(idmap, dentry, inode->i_mode);
#else
		rc = posix_acl_chmod(idmap, inode, inode->i_mode);
#endif
		if (rc && rc != -EOPNOTSUPP)
			return rc;
	}
	return 0;
}

static const char *pfs_get_link(struct dentry *dentry, struct inode *inode,
				struct delayed_call *done)
{
	struct pfs_rpc rpc = { .type = PFS_MSG_READLINK, .reply_max = 8192 };
	struct pfs_path *path;
	u32 len = 0;
	void *req;
	int rc;

	if (!dentry)
		return ERR_PTR(-ECHILD);
	req = pfs_encode(pfs_x_entry_id, &PFS_I(inode)->id, &len);
	if (IS_ERR(req))
		return req;
	rpc.req = req;
	rpc.req_len = len;
	rc = pfs_meta_call(inode->i_sb, &PFS_I(inode)->id, &rpc);
	kfree(req);
	path = kmalloc(sizeof(*path), GFP_KERNEL);
	if (!path)
		rc = rc ?: -ENOMEM;
	if (!rc)
		rc = pfs_decode(pfs_x_path, path, rpc.reply, rpc.reply_len);
	pfs_rpc_release(&rpc);
	if (rc) {
		kfree(path);
		return ERR_PTR(rc);
	}
	/* struct pfs_path is just the NUL-terminated string. */
	BUILD_BUG_ON(offsetof(struct pfs_path, path) != 0);
	set_delayed_call(done, kfree_link, path);
	return path->path;
}

const struct inode_operations pfs_file_iops = {
	.permission	= pfs_permission,
	.getattr	= pfs_getattr,
	.setattr	= pfs_setattr,
	.listxattr	= pfs_listxattr,
	PFS_ACL_IOPS,
};

const struct inode_operations pfs_symlink_iops = {
	.get_link	= pfs_get_link,
	.getattr	= pfs_getattr,
	.setattr	= pfs_setattr,
	.listxattr	= pfs_listxattr,
};
