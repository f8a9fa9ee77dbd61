// SPDX-License-Identifier: GPL-2.0
/*
 * Names: lookup and the dentry cache's bounded staleness, and the
 * operations that change a directory (create, mkdir, symlink, link,
 * unlink, rmdir, rename). Every one is a single request to the metadata
 * server that owns the directory, or the shard of a striped directory
 * that keeps the name (shard.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/namei.h>
#include <linux/posix_acl.h>
#include <linux/xattr.h>

#include "pfs.h"

static int pfs_set_name(char *out, const struct qstr *name)
{
	if (name->len >= PFS_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(out, name->name, name->len);
	out[name->len] = '\0';
	return 0;
}

/* LOOKUP of name in dir: 0 with *attr, -ENOENT, or another error. */
static int pfs_lookup_name(struct inode *dir, const struct qstr *name,
			   struct pfs_attr *attr)
{
	struct pfs_name_req *m;
	int rc;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	rc = pfs_name_dir(dir, name, &m->dir);
	if (!rc)
		rc = pfs_set_name(m->name, name);
	if (!rc)
		rc = pfs_meta_attr_msg(dir->i_sb, &m->dir, PFS_MSG_LOOKUP,
				       pfs_x_name_req, m, attr, NULL);
	kfree(m);
	return rc;
}

/*
 * A dentry is trusted for name_ttl after it was verified, unless the
 * metadata server said in between that names in its directory changed
 * (pfs_notice bumps the directory's names_gen) or notices may have been
 * lost (the mount's names_epoch). Every request that verifies a name
 * makes the server watch the directory for this client (see
 * PFS_MSG_INVALIDATE), so silence means no change. gen: the sum of both
 * counters sampled before the request that verified the dentry; both only
 * grow, so the sum stays the same exactly while neither moves.
 */
unsigned int pfs_names_gen(struct inode *dir)
{
	return atomic_read(&PFS_I(dir)->names_gen) +
	       atomic_read(&PFS_SB(dir->i_sb)->names_epoch);
}

/*
 * After a change of ours to dir's names (rc: its outcome): dir's times
 * moved, its mode, owner and ACLs did not. A change that failed may have
 * been made all the same (a lost reply), or our dentries were wrong
 * (EEXIST, ENOENT): dir's names go back to the server.
 */
static void pfs_dir_touched(struct inode *dir, int rc)
{
	pfs_attr_expire_times(dir);
	if (rc)
		atomic_inc(&PFS_I(dir)->names_gen);
}

/*
 * As pfs_dir_touched, for a change that dir's own server made for us: once
 * it succeeded that server tells us of any change to dir (the author of a
 * change watches the entry, see PFS_MSG_INVALIDATE), so what we know of
 * dir's permissions holds for another attr_ttl, and a writer filling many
 * directories does not ask for each one's attributes again and again on
 * its way down to them. Not so for a striped directory: its names live on
 * its shards' servers.
 */
static void pfs_dir_changed(struct inode *dir, int rc)
{
	pfs_dir_touched(dir, rc);
	if (!rc && !test_bit(PFS_INO_STRIPED, &PFS_I(dir)->flags))
		pfs_perm_confirmed(dir);
}

static void pfs_dentry_stamp(struct dentry *dentry, unsigned int gen)
{
	WRITE_ONCE(dentry->d_fsdata, (void *)(unsigned long)gen);
	WRITE_ONCE(dentry->d_time, jiffies);
}

static bool pfs_dentry_fresh(struct dentry *dentry)
{
	unsigned long ttl = PFS_SB(dentry->d_sb)->name_ttl;
	unsigned long when = READ_ONCE(dentry->d_time);
	struct inode *dir;
	bool fresh;

	if (!when || !time_before(jiffies, when + ttl))
		return false;
	rcu_read_lock();
	dir = d_inode_rcu(READ_ONCE(dentry->d_parent));
	fresh = dir && (unsigned long)READ_ONCE(dentry->d_fsdata) ==
		       pfs_names_gen(dir);
	rcu_read_unlock();
	return fresh;
}

static struct dentry *pfs_lookup(struct inode *dir, struct dentry *dentry,
				 unsigned int flags)
{
	unsigned int gen = pfs_names_gen(dir);
	struct inode *inode = NULL;
	struct pfs_attr attr;
	int rc;

	if (dentry->d_name.len >= PFS_NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	/*
	 * O_CREAT|O_EXCL: the create that follows finds out whether the
	 * name exists, so the lookup round trip is not needed.
	 */
	if ((flags & (LOOKUP_CREATE | LOOKUP_EXCL)) ==
	    (LOOKUP_CREATE | LOOKUP_EXCL)) {
		dentry->d_time = 0;	/* unverified: revalidate next time */
		return d_splice_alias(NULL, dentry);
	}
	rc = pfs_lookup_name(dir, &dentry->d_name, &attr);
	if (rc && rc != -ENOENT)
		return ERR_PTR(rc);
	pfs_statahead_miss(dentry->d_parent, dentry);
	if (!rc) {
		inode = pfs_iget(dir->i_sb, &attr);
		if (IS_ERR(inode))
			return ERR_CAST(inode);
	}
	pfs_dentry_stamp(dentry, gen);
	return d_splice_alias(inode, dentry);
}

/*
 * A cached name is trusted for attr_ttl; after that one LOOKUP decides
 * whether it still names the same entry.
 */
static int pfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct inode *inode;
	struct dentry *parent;
	struct pfs_attr attr;
	unsigned int gen;
	int rc;

	/* LOOKUP_REVAL: the VFS retries after ESTALE and wants the truth. */
	if (!(flags & LOOKUP_REVAL) && pfs_dentry_fresh(dentry))
		return 1;
	if (flags & LOOKUP_RCU)
		return -ECHILD;
	/*
	 * An open retried after ESTALE (its inode was replaced by a rename
	 * and freed between lookup and OPEN) goes by name, through
	 * ->atomic_open: the server resolves the name and opens what it
	 * names in one step, so no rename can slip in between again.
	 */
	if ((flags & (LOOKUP_REVAL | LOOKUP_OPEN)) == (LOOKUP_REVAL | LOOKUP_OPEN) &&
	    d_really_is_positive(dentry) && !d_is_dir(dentry))
		return 0;

	parent = dget_parent(dentry);
	gen = pfs_names_gen(d_inode(parent));
	rc = pfs_lookup_name(d_inode(parent), &dentry->d_name, &attr);
	if (!rc || rc == -ENOENT)
		pfs_statahead_miss(parent, NULL);
	dput(parent);
	inode = d_inode(dentry);
	if (rc == -ENOENT) {
		if (inode)
			return 0;
		pfs_dentry_stamp(dentry, gen);
		return 1;
	}
	if (rc)
		return rc;
	if (!inode || memcmp(&attr.id, &PFS_I(inode)->id, sizeof(attr.id)) ||
	    ((attr.mode ^ inode->i_mode) & S_IFMT))
		return 0;
	pfs_inode_update(inode, &attr);
	pfs_dentry_stamp(dentry, gen);
	return 1;
}

/*
 * A READDIR_PLUS entry (len name bytes, checked by the caller) with
 * attributes: its dentry and inode go into the caches as a LOOKUP would
 * put them, so a stat or open of each listed name needs no request. gen:
 * pfs_names_gen(parent) and notices: the mount's notice count, both
 * sampled before the READDIR_PLUS; after any notice since, the page may
 * be older than what the notice expired, and nothing is primed. A cached
 * dentry that names another entry, or none, is left alone: the server's
 * notice of that change is on its way, and the dentry's next revalidation
 * settles it. skip: the name the caller itself is looking up (its dentry
 * in lookup would wait for itself), or NULL.
 */
void pfs_prime_dentry(struct dentry *parent, const struct pfs_dirent_plus *e,
		      size_t len, unsigned int gen, unsigned int notices,
		      const struct qstr *skip)
{
	DECLARE_WAIT_QUEUE_HEAD_ONSTACK(wq);
	struct qstr name = QSTR_INIT(e->ent.name, len);
	struct dentry *dentry, *alias;
	struct inode *inode;

	if (!e->has_attr || (len <= 2 && !memcmp(e->ent.name, "..", len)) ||
	    memcmp(&e->attr.id, &e->ent.id, sizeof(e->attr.id)) ||
	    ((e->attr.mode & S_IFMT) >> 12) != e->ent.type ||
	    pfs_attr_check(PFS_MSG_READDIR_PLUS, &e->attr) ||
	    atomic_read(&PFS_SB(parent->d_sb)->notices) != notices ||
	    (skip && skip->len == len && !memcmp(skip->name, e->ent.name, len)))
		return;
	name.hash = full_name_hash(parent, name.name, name.len);
	dentry = d_lookup(parent, &name);
	if (!dentry) {
		dentry = d_alloc_parallel(parent, &name, &wq);
		if (IS_ERR(dentry))
			return;
	}
	if (d_in_lookup(dentry)) {
		inode = pfs_iget(parent->d_sb, &e->attr);
		/* Stamped before it is hashed, as pfs_lookup does. */
		pfs_dentry_stamp(dentry, gen);
		alias = d_splice_alias(inode, dentry);
		d_lookup_done(dentry);
		if (IS_ERR(alias))
			goto out;
		if (alias) {
			dput(dentry);
			dentry = alias;
			pfs_dentry_stamp(dentry, gen);
		}
	} else if (d_really_is_positive(dentry) &&
		   !memcmp(&PFS_I(d_inode(dentry))->id, &e->attr.id,
			   sizeof(e->attr.id)) &&
		   !((d_inode(dentry)->i_mode ^ e->attr.mode) & S_IFMT)) {
		pfs_inode_update(d_inode(dentry), &e->attr);
		pfs_dentry_stamp(dentry, gen);
	}
out:
	dput(dentry);
}

const struct dentry_operations pfs_dentry_ops = {
	.d_revalidate	= pfs_d_revalidate,
};

/* Default ACLs of the parent become the new entry's (after creation). */
static int pfs_apply_acls(struct inode *inode, struct posix_acl *default_acl,
			  struct posix_acl *acl)
{
	int rc = 0;

	if (default_acl)
		rc = pfs_set_acl(PFS_NOP_IDMAP, inode, default_acl,
				 ACL_TYPE_DEFAULT);
	if (!rc && acl)
		rc = pfs_set_acl(PFS_NOP_IDMAP, inode, acl, ACL_TYPE_ACCESS);
	return rc;
}

/*
 * The inode of an entry the server just made (attr; layout of a regular
 * file, or NULL) with the ACLs posix_acl_create chose for it. ours: this
 * request made it (the server may also have found one someone else made):
 * a file of ours has no security.capability to remove, so its first write
 * asks the server for none (file_remove_privs).
 */
static struct inode *pfs_new_inode(struct inode *dir,
				   const struct pfs_attr *attr,
				   struct pfs_layout *layout,
				   struct posix_acl *default_acl,
				   struct posix_acl *acl, bool ours)
{
	struct inode *inode = pfs_iget(dir->i_sb, attr);
	int rc;

	if (IS_ERR(inode))
		return inode;
	rc = layout ? pfs_inode_set_layout(inode, layout) : 0;
	if (!rc)
		rc = pfs_apply_acls(inode, default_acl, acl);
	if (rc) {
		iput(inode);
		return ERR_PTR(rc);
	}
	if (ours && S_ISREG(inode->i_mode) && !is_sxid(inode->i_mode))
		inode_set_flags(inode, S_NOSEC, S_NOSEC);
	/* A create is answered before it is durable: fsync waits for it. */
	if (ours && S_ISREG(inode->i_mode))
		set_bit(PFS_INO_SIZE_LAZY, &PFS_I(inode)->flags);
	return inode;
}

/*
 * The CREATE or MKDIR of dentry in dir, mode as posix_acl_create leaves it
 * (the ACLs it gives the new entry in *default_acl and *acl, which the
 * caller releases whatever the outcome).
 */
static struct pfs_create *pfs_create_req(struct inode *dir,
					 struct dentry *dentry, umode_t mode,
					 u32 flags,
					 struct posix_acl **default_acl,
					 struct posix_acl **acl)
{
	struct pfs_create *m;
	int rc;

	rc = posix_acl_create(dir, &mode, default_acl, acl);
	if (rc)
		return ERR_PTR(rc);
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->dir = PFS_I(dir)->id;
	m->mode = mode & 07777;
	m->flags = flags;
	rc = 0;
	if (!(flags & PFS_CREATE_TMPFILE)) {
		rc = pfs_name_dir(dir, &dentry->d_name, &m->dir);
		if (!rc)
			rc = pfs_set_name(m->name, &dentry->d_name);
	}
	if (rc) {
		kfree(m);
		return ERR_PTR(rc);
	}
	return m;
}

/*
 * CREATE or MKDIR of dentry in dir, instantiating it on success; a CREATE
 * that opens (PFS_CREATE_OPEN) stores the open's session epoch in *epoch;
 * with PFS_CREATE_TMPFILE, an O_TMPFILE's unnamed file for dentry
 * (d_tmpfile).
 */
static int pfs_make_entry(struct inode *dir, struct dentry *dentry, u16 type,
			  umode_t mode, u32 flags, u64 *epoch,
			  struct file *tmpfile)
{
	struct posix_acl *default_acl = NULL, *acl = NULL;
	unsigned int gen = pfs_names_gen(dir);
	struct pfs_layout *layout = NULL;
	struct pfs_create *m;
	struct pfs_attr attr;
	struct inode *inode;
	bool made = true;
	int rc;

	/*
	 * O_CREAT of a name our cache had as negative: another client may
	 * have made it since, and its file must not get our ACLs.
	 */
	if (type == PFS_MSG_CREATE &&
	    !(flags & (PFS_CREATE_EXCL | PFS_CREATE_TMPFILE)))
		flags |= PFS_CREATE_FIND;
	m = pfs_create_req(dir, dentry, mode, flags, &default_acl, &acl);
	rc = PTR_ERR_OR_ZERO(m);
	if (rc) {
		m = NULL;
		goto out;
	}
	if (type == PFS_MSG_CREATE) {
		layout = kzalloc(sizeof(*layout), GFP_KERNEL);
		rc = layout ? 0 : -ENOMEM;
		if (rc)
			goto out;
	}
	rc = pfs_meta_open_msg(dir->i_sb, &m->dir, type, pfs_x_create, m,
			       &attr, layout, epoch,
			       flags & PFS_CREATE_FIND ? &made : NULL, NULL);
	pfs_dir_changed(dir, rc);
	if (rc)
		goto out;
	if (made)
		inode = pfs_new_inode(dir, &attr, layout, default_acl, acl,
				      type == PFS_MSG_CREATE);
	else
		inode = pfs_new_inode(dir, &attr, layout, NULL, NULL, false);
	rc = PTR_ERR_OR_ZERO(inode);
	if (rc)
		goto out_opened;
	if (flags & PFS_CREATE_TMPFILE) {
		/* nlink 0 on the server; d_tmpfile() drops the one it wants */
		set_nlink(inode, 1);
		d_tmpfile(tmpfile, inode);
		goto out;
	}
	d_instantiate(dentry, inode);
	pfs_dentry_stamp(dentry, gen);
	goto out;
out_opened:
	if (flags & PFS_CREATE_OPEN)
		pfs_close_later(dir->i_sb, &attr.id, *epoch);
out:
	posix_acl_release(default_acl);
	posix_acl_release(acl);
	kfree(layout);
	kfree(m);
	return rc;
}

static int pfs_create(pfs_idmap_t *idmap, struct inode *dir,
		      struct dentry *dentry, umode_t mode, bool excl)
{
	u64 epoch;

	return pfs_make_entry(dir, dentry, PFS_MSG_CREATE, mode,
			      excl ? PFS_CREATE_EXCL : 0, &epoch, NULL);
}

/*
 * OPEN_NAME of dentry's name in dir: *attr; *layout for regular files, the
 * session epoch of the open in *epoch, and an inline file's content in
 * *content (when its open caches).
 */
static int pfs_open_name(struct inode *dir, struct dentry *dentry,
			 unsigned int flags, struct pfs_attr *attr,
			 struct pfs_layout *layout, u64 *epoch,
			 struct pfs_open_content *content)
{
	bool wants = pfs_open_caches(dir->i_sb, flags);
	struct pfs_open_name *m;
	int rc;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->flags = flags;
	rc = pfs_name_dir(dir, &dentry->d_name, &m->dir);
	if (!rc)
		rc = pfs_set_name(m->name, &dentry->d_name);
	if (!rc)
		rc = pfs_meta_open_msg(dir->i_sb, &m->dir, PFS_MSG_OPEN_NAME,
				       pfs_x_open_name, m, attr, layout, epoch,
				       NULL, wants ? content : NULL);
	kfree(m);
	return rc;
}

/*
 * finish_open with the open the server has counted, which is closed again
 * when the VFS fails the open before it is ours to release.
 */
static int pfs_finish_counted(struct file *file, struct dentry *dentry,
			      const struct pfs_entry_id *id, u64 epoch)
{
	int rc = finish_open(file, dentry, pfs_file_open_counted);

	if (rc && !(file->f_mode & FMODE_OPENED))
		pfs_close_later(dentry->d_sb, id, epoch);
	else if (!rc)
		pfs_file_opened(file, epoch);
	return rc;
}

/* O_CREAT|O_EXCL: one CREATE that also opens the new file. */
static int pfs_create_open(struct inode *dir, struct dentry *dentry,
			   struct file *file, umode_t mode)
{
	struct dentry *res;
	u64 epoch = 0;
	int rc;

	/* A dentry still in lookup is hashed (negative) before it gets an inode. */
	if (d_in_lookup(dentry)) {
		res = pfs_lookup(dir, dentry,
				 LOOKUP_OPEN | LOOKUP_CREATE | LOOKUP_EXCL);
		if (IS_ERR(res))
			return PTR_ERR(res);
		if (WARN_ON_ONCE(res)) {	/* only directories have aliases */
			dput(res);
			return -EIO;
		}
	}
	if (d_really_is_positive(dentry))
		return -EEXIST;
	rc = pfs_make_entry(dir, dentry, PFS_MSG_CREATE, mode,
			    PFS_CREATE_EXCL | PFS_CREATE_OPEN, &epoch, NULL);
	if (rc)
		return rc;
	file->f_mode |= FMODE_CREATED;
	return pfs_finish_counted(file, dentry, &PFS_I(d_inode(dentry))->id,
				  epoch);
}

/*
 * Puts inode, which the server opened under epoch, in dentry's place and
 * ends the open with it; a failure closes the server's open again.
 */
static int pfs_splice_opened(struct inode *dir, struct dentry *dentry,
			     struct file *file, struct inode *inode,
			     const struct pfs_entry_id *id, u64 epoch,
			     unsigned int gen)
{
	struct dentry *res;
	int rc;

	pfs_dentry_stamp(dentry, gen);
	res = d_splice_alias(inode, dentry);
	if (IS_ERR(res)) {
		pfs_close_later(dir->i_sb, id, epoch);
		return PTR_ERR(res);
	}
	rc = pfs_finish_counted(file, res ?: dentry, id, epoch);
	dput(res);
	return rc;
}

/*
 * An open by name whose server answered with the entry (attr): opened
 * there if it is a regular file with its layout (its content, if the
 * reply had it, cached), else only looked up, for the VFS to go on with
 * (->open for a file of another metadata server, a symlink followed, a
 * directory refused to O_CREAT).
 */
static int pfs_open_found(struct inode *dir, struct dentry *dentry,
			  struct file *file, const struct pfs_attr *attr,
			  struct pfs_layout *layout, u64 epoch,
			  unsigned int gen,
			  struct pfs_open_content *content)
{
	bool opened = S_ISREG(attr->mode) && layout->count;
	struct inode *inode;
	struct dentry *res;
	int rc;

	inode = pfs_iget(dir->i_sb, attr);
	if (IS_ERR(inode)) {
		rc = PTR_ERR(inode);
		goto out_close;
	}
	if (!opened) {
		pfs_dentry_stamp(dentry, gen);
		res = d_splice_alias(inode, dentry);
		return IS_ERR(res) ? PTR_ERR(res) : finish_no_open(file, res);
	}
	rc = pfs_inode_set_layout(inode, layout);
	if (rc) {
		iput(inode);
		goto out_close;
	}
	if (content)
		pfs_inode_take_content(inode, attr, content);
	return pfs_splice_opened(dir, dentry, file, inode, &attr->id, epoch,
				 gen);
out_close:
	if (opened)
		pfs_close_later(dir->i_sb, &attr->id, epoch);
	return rc;
}

/*
 * O_CREAT without O_EXCL of a name the dentry cache does not know: one
 * CREATE (PFS_CREATE_FIND) makes and opens the file, or finds the name as
 * OPEN_NAME does (pfs_open_found), instead of a lookup and then a create
 * and an open.
 */
static int pfs_create_find(struct inode *dir, struct dentry *dentry,
			   struct file *file, umode_t mode)
{
	struct posix_acl *default_acl = NULL, *acl = NULL;
	unsigned int gen = pfs_names_gen(dir);
	struct pfs_layout *layout = NULL;
	struct pfs_create *m;
	struct pfs_attr attr;
	struct inode *inode;
	bool made = false;
	u64 epoch = 0;
	int rc;

	m = pfs_create_req(dir, dentry, mode, PFS_CREATE_OPEN |
			   PFS_CREATE_FIND | PFS_CREATE_ACCESS(file->f_flags),
			   &default_acl, &acl);
	rc = PTR_ERR_OR_ZERO(m);
	if (rc) {
		m = NULL;
		goto out;
	}
	layout = kzalloc(sizeof(*layout), GFP_KERNEL);
	rc = layout ? 0 : -ENOMEM;
	if (rc)
		goto out;
	rc = pfs_meta_open_msg(dir->i_sb, &m->dir, PFS_MSG_CREATE,
			       pfs_x_create, m, &attr, layout, &epoch, &made,
			       NULL);
	if (rc || made)
		pfs_dir_changed(dir, rc);
	if (rc)
		goto out;
	if (!made) {
		rc = pfs_open_found(dir, dentry, file, &attr, layout, epoch,
				    gen, NULL);
		goto out;
	}
	inode = pfs_new_inode(dir, &attr, layout, default_acl, acl, true);
	if (IS_ERR(inode)) {
		rc = PTR_ERR(inode);
		pfs_close_later(dir->i_sb, &attr.id, epoch);
		goto out;
	}
	file->f_mode |= FMODE_CREATED;
	rc = pfs_splice_opened(dir, dentry, file, inode, &attr.id, epoch, gen);
out:
	posix_acl_release(default_acl);
	posix_acl_release(acl);
	kfree(layout);
	kfree(m);
	return rc;
}

/*
 * Opens of names the dentry cache does not know take one round trip:
 * OPEN_NAME looks the name up and opens a regular file, CREATE creates and
 * opens (O_CREAT|O_EXCL), or finds and opens (O_CREAT). Everything else
 * goes the usual way: a lookup, then a create or the VFS's own open
 * (->open, OPEN).
 */
static int pfs_atomic_open(struct inode *dir, struct dentry *dentry,
			   struct file *file, unsigned int flags,
			   umode_t mode)
{
	unsigned int gen = pfs_names_gen(dir);
	unsigned int lookup_flags = LOOKUP_OPEN;
	struct pfs_open_content content = { .untracked = true };
	struct pfs_layout *layout;
	struct dentry *res = NULL;
	struct pfs_attr attr;
	u64 epoch = 0;
	int rc;

	if (dentry->d_name.len >= PFS_NAME_MAX)
		return -ENAMETOOLONG;
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return pfs_create_open(dir, dentry, file, mode);
	if (!(flags & O_DIRECTORY) && d_in_lookup(dentry)) {
		if (flags & O_CREAT)
			return pfs_create_find(dir, dentry, file, mode);
		goto open_name;
	}

	if (flags & O_CREAT)
		lookup_flags |= LOOKUP_CREATE;
	if (d_in_lookup(dentry)) {
		res = pfs_lookup(dir, dentry, lookup_flags);
		if (IS_ERR(res))
			return PTR_ERR(res);
		if (res)
			dentry = res;
	}
	if (!(flags & O_CREAT) || d_really_is_positive(dentry))
		return finish_no_open(file, res);
	rc = pfs_create(PFS_NOP_IDMAP, dir, dentry, mode, false);
	if (!rc) {
		file->f_mode |= FMODE_CREATED;
		rc = finish_open(file, dentry, NULL);
	}
	dput(res);
	return rc;

open_name:
	layout = kzalloc(sizeof(*layout), GFP_KERNEL);
	if (!layout)
		return -ENOMEM;
	rc = pfs_open_name(dir, dentry, file->f_flags, &attr, layout, &epoch,
			   &content);
	if (rc == -ENOENT) {
		pfs_dentry_stamp(dentry, gen);
		rc = finish_no_open(file, d_splice_alias(NULL, dentry));
	} else if (!rc) {
		rc = pfs_open_found(dir, dentry, file, &attr, layout, epoch,
				    gen, &content);
	}
	pfs_open_content_free(&content);
	kfree(layout);
	return rc;
}

static int pfs_mkdir(pfs_idmap_t *idmap, struct inode *dir,
		     struct dentry *dentry, umode_t mode)
{
	u64 epoch;

	return pfs_make_entry(dir, dentry, PFS_MSG_MKDIR, mode | S_IFDIR, 0,
			      &epoch, NULL);
}

/*
 * O_TMPFILE: an unnamed file, opened by the same CREATE; linkat() can name
 * it later (the VFS allows that unless O_EXCL), else its last close frees it.
 */
static int pfs_tmpfile(pfs_idmap_t *idmap, struct inode *dir,
		       struct file *file, umode_t mode)
{
	struct dentry *dentry = file->f_path.dentry;
	u64 epoch = 0;
	int rc;

	rc = pfs_make_entry(dir, dentry, PFS_MSG_CREATE, mode,
			    PFS_CREATE_TMPFILE | PFS_CREATE_OPEN |
			    PFS_CREATE_READ | PFS_CREATE_WRITE, &epoch, file);
	if (rc)
		return rc;
	return pfs_finish_counted(file, dentry, &PFS_I(d_inode(dentry))->id,
				  epoch);
}

static int pfs_symlink(pfs_idmap_t *idmap, struct inode *dir,
		       struct dentry *dentry, const char *target)
{
	unsigned int gen = pfs_names_gen(dir);
	struct pfs_symlink *m;
	struct pfs_attr attr;
	struct inode *inode;
	int rc;

	if (strlen(target) >= PFS_PATH_MAX)
		return -ENAMETOOLONG;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	strscpy(m->target, target, sizeof(m->target));
	rc = pfs_name_dir(dir, &dentry->d_name, &m->dir);
	if (!rc)
		rc = pfs_set_name(m->name, &dentry->d_name);
	if (rc)
		goto out;
	rc = pfs_meta_attr_msg(dir->i_sb, &m->dir, PFS_MSG_SYMLINK,
			       pfs_x_symlink, m, &attr, NULL);
	pfs_dir_changed(dir, rc);
	if (rc)
		goto out;
	inode = pfs_iget(dir->i_sb, &attr);
	rc = PTR_ERR_OR_ZERO(inode);
	if (rc)
		goto out;
	d_instantiate(dentry, inode);
	pfs_dentry_stamp(dentry, gen);
out:
	kfree(m);
	return rc;
}

/* FIFOs, sockets and devices: the server keeps the inode, I/O is local. */
static int pfs_mknod(pfs_idmap_t *idmap, struct inode *dir,
		     struct dentry *dentry, umode_t mode, dev_t rdev)
{
	struct posix_acl *default_acl = NULL, *acl = NULL;
	unsigned int gen = pfs_names_gen(dir);
	struct pfs_mknod *m;
	struct pfs_attr attr;
	struct inode *inode;
	int rc;

	if (!pfs_mknod_mode_valid(mode))
		return -EINVAL;
	rc = posix_acl_create(dir, &mode, &default_acl, &acl);
	if (rc)
		return rc;
	rc = -ENOMEM;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		goto out;
	m->mode = mode;
	m->rdev = (S_ISCHR(mode) || S_ISBLK(mode)) ? new_encode_dev(rdev) : 0;
	rc = pfs_name_dir(dir, &dentry->d_name, &m->dir);
	if (!rc)
		rc = pfs_set_name(m->name, &dentry->d_name);
	if (rc)
		goto out;
	rc = pfs_meta_attr_msg(dir->i_sb, &m->dir, PFS_MSG_MKNOD, pfs_x_mknod,
			       m, &attr, NULL);
	pfs_dir_changed(dir, rc);
	if (rc)
		goto out;
	inode = pfs_new_inode(dir, &attr, NULL, default_acl, acl, false);
	rc = PTR_ERR_OR_ZERO(inode);
	if (rc)
		goto out;
	d_instantiate(dentry, inode);
	pfs_dentry_stamp(dentry, gen);
out:
	posix_acl_release(default_acl);
	posix_acl_release(acl);
	kfree(m);
	return rc;
}

static int pfs_link(struct dentry *old_dentry, struct inode *dir,
		    struct dentry *dentry)
{
	struct inode *inode = d_inode(old_dentry);
	unsigned int gen = pfs_names_gen(dir);
	struct pfs_link *m;
	struct pfs_attr attr;
	int rc;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->id = PFS_I(inode)->id;
	rc = pfs_name_dir(dir, &dentry->d_name, &m->dir);
	if (!rc)
		rc = pfs_set_name(m->name, &dentry->d_name);
	if (rc)
		goto out;
	rc = pfs_meta_attr_msg(dir->i_sb, &m->dir, PFS_MSG_LINK, pfs_x_link,
			       m, &attr, NULL);
	pfs_dir_changed(dir, rc);
	if (!rc)
		rc = pfs_inode_update(inode, &attr);
	if (rc)
		goto out;
	ihold(inode);
	d_instantiate(dentry, inode);
	pfs_dentry_stamp(dentry, gen);
out:
	kfree(m);
	return rc;
}

/* UNLINK or RMDIR of dentry's name in dir. */
static int pfs_remove(struct inode *dir, struct dentry *dentry, u16 type)
{
	struct inode *inode = d_inode(dentry);
	struct pfs_name_req *m;
	int rc;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	rc = pfs_name_dir(dir, &dentry->d_name, &m->dir);
	if (!rc)
		rc = pfs_set_name(m->name, &dentry->d_name);
	if (!rc)
		rc = pfs_meta_simple(dir->i_sb, &m->dir, type, pfs_x_name_req,
				     m);
	kfree(m);
	pfs_dir_changed(dir, rc);
	if (rc)
		return rc;
	if (type == PFS_MSG_RMDIR)
		clear_nlink(inode);
	else if (inode->i_nlink)
		drop_nlink(inode);
	pfs_attr_expire_times(inode);
	return 0;
}

static int pfs_unlink(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	int rc;

	pfs_untracked_hold(inode);
	rc = pfs_remove(dir, dentry, PFS_MSG_UNLINK);
	pfs_untracked_removed(inode);
	return rc;
}

static int pfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	return pfs_remove(dir, dentry, PFS_MSG_RMDIR);
}

static int pfs_rename(pfs_idmap_t *idmap, struct inode *old_dir,
		      struct dentry *old_dentry, struct inode *new_dir,
		      struct dentry *new_dentry, unsigned int flags)
{
	struct inode *target = d_inode(new_dentry);
	struct inode *replaced;
	unsigned int old_gen = pfs_names_gen(old_dir);
	unsigned int new_gen = pfs_names_gen(new_dir);
	struct pfs_rename *m;
	u32 src_node, dst_node;
	int rc;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->flags = flags;
	rc = pfs_name_dir(old_dir, &old_dentry->d_name, &m->src_dir);
	if (!rc)
		rc = pfs_name_dir(new_dir, &new_dentry->d_name, &m->dst_dir);
	if (rc) {
		kfree(m);
		return rc;
	}
	replaced = target && !(flags & RENAME_EXCHANGE) ? target : NULL;
	if (replaced)
		pfs_untracked_hold(replaced);
	src_node = m->src_dir.owner_node;
	dst_node = m->dst_dir.owner_node;
	rc = pfs_set_name(m->src_name, &old_dentry->d_name);
	if (!rc)
		rc = pfs_set_name(m->dst_name, &new_dentry->d_name);
	if (!rc)
		rc = pfs_meta_simple(old_dir->i_sb, &m->src_dir,
				     PFS_MSG_RENAME, pfs_x_rename, m);
	if (replaced)
		pfs_untracked_removed(replaced);
	kfree(m);
	/*
	 * Not confirmed: a rename into another server's directory is made
	 * there by our server, not for us.
	 */
	pfs_dir_touched(old_dir, rc);
	pfs_dir_touched(new_dir, rc);
	if (rc)
		return rc;
	pfs_attr_expire_times(d_inode(old_dentry));
	if (target) {
		if (!(flags & RENAME_EXCHANGE)) {
			if (S_ISDIR(target->i_mode))
				clear_nlink(target);
			else if (target->i_nlink)
				drop_nlink(target);
		}
		pfs_attr_expire_times(target);
	}
	/* d_move() swaps their places after this returns. */
	pfs_dentry_stamp(old_dentry, new_gen);
	pfs_dentry_stamp(new_dentry, old_gen);
	/*
	 * The source's server made the change; the target directory's server
	 * added the entry on its behalf and watches nothing for us there.
	 */
	if (src_node != dst_node)
		WRITE_ONCE(old_dentry->d_time, 0);
	return 0;
}

const struct inode_operations pfs_dir_iops = {
	.lookup		= pfs_lookup,
	.atomic_open	= pfs_atomic_open,
	.create		= pfs_create,
	.mkdir		= pfs_mkdir,
	.symlink	= pfs_symlink,
	.mknod		= pfs_mknod,
	.tmpfile	= pfs_tmpfile,
	.link		= pfs_link,
	.unlink		= pfs_unlink,
	.rmdir		= pfs_rmdir,
	.rename		= pfs_rename,
	.permission	= pfs_permission,
	.getattr	= pfs_getattr,
	.setattr	= pfs_setattr,
	.listxattr	= pfs_listxattr,
	PFS_ACL_IOPS,
};
