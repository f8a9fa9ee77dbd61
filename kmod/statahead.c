// SPDX-License-Identifier: GPL-2.0
/*
 * Statahead: a process that stats or looks up the names of one directory
 * one by one, in its own order (a training job's stat of every file of its
 * data set, a build probing its sources), would pay one LOOKUP each. Once
 * PFS_SA_MISSES names of a directory went to the server since its last
 * statahead page, the directory's next page is listed with READDIR_PLUS
 * (dir.c), which primes the dentry and inode caches, and the names that
 * follow are found there. At most one page per PFS_SA_MISSES
 * lookups, so a process that looks up a few names of a huge directory
 * pays little for it; once a pass has listed the whole directory, names it
 * has not primed (new ones, or ones that do not exist) are looked up one
 * by one for a name_ttl, as the primed ones stay fresh that long. A page
 * is listed as the process that looked up, so a directory it may not read
 * is not listed (and not tried again for a name_ttl).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/slab.h>

#include "pfs.h"

#define PFS_SA_MISSES	8

struct pfs_sa_work {
	struct work_struct work;
	struct dentry *dir;
	const struct cred *cred;
};

static struct workqueue_struct *pfs_sa_wq;

static void pfs_sa_done(struct pfs_sb_info *sbi)
{
	if (atomic_dec_and_test(&sbi->statahead_pending))
		wake_up_var(&sbi->statahead_pending);
}

/*
 * The next page of parent's directory, primed but for skip; the caller
 * holds the directory's lock shared at least and PFS_INO_STATAHEAD, which
 * this drops.
 */
static void pfs_sa_page(struct dentry *parent, const struct qstr *skip)
{
	struct inode *dir = d_inode(parent);
	struct pfs_inode_info *pi = PFS_I(dir);
	struct pfs_sb_info *sbi = PFS_SB(dir->i_sb);
	struct pfs_dirent_plus *ent;
	loff_t pos = pi->sa_pos;
	int rc = -ENOMEM;

	ent = kmalloc(sizeof(*ent), GFP_KERNEL);
	if (ent) {
		rc = pfs_list_page(parent, &pos, NULL, ent, skip);
		kfree(ent);
	}
	if (rc >= 0)
		atomic64_inc(&sbi->statahead_pages);
	if (rc > 0) {
		pi->sa_pos = pos;
	} else {
		/* The end, or an error: the next pass starts over, later. */
		pi->sa_pos = 0;
		WRITE_ONCE(pi->sa_pass_end, jiffies | 1);
	}
	atomic_set(&pi->sa_misses, 0);
	clear_bit(PFS_INO_STATAHEAD, &pi->flags);
}

static void pfs_sa_worker(struct work_struct *work)
{
	struct pfs_sa_work *w = container_of(work, struct pfs_sa_work, work);
	struct inode *dir = d_inode(w->dir);
	struct pfs_sb_info *sbi = PFS_SB(dir->i_sb);
	const struct cred *old = override_creds(w->cred);

	/* Held as readdir holds it (d_alloc_parallel). */
	inode_lock_shared(dir);
	pfs_sa_page(w->dir, NULL);
	inode_unlock_shared(dir);
	revert_creds(old);
	put_cred(w->cred);
	dput(w->dir);
	kfree(w);
	pfs_sa_done(sbi);
}

/*
 * A name of parent's directory was just looked up on the server: by
 * ->lookup for looking, still in lookup, under the directory's lock, and
 * then the page is listed right here (a worker would come too late for a
 * process that stats as fast as it can: it would have looked up most of
 * the page's names itself by then); or by a revalidation (looking NULL),
 * which holds no lock, and a worker lists. One page at a time per
 * directory (PFS_INO_STATAHEAD): a page waits for the names others are
 * looking up (d_alloc_parallel), never for one that waits for a page.
 */
void pfs_statahead_miss(struct dentry *parent, struct dentry *looking)
{
	struct inode *dir = d_inode(parent);
	struct pfs_inode_info *pi = PFS_I(dir);
	struct pfs_sb_info *sbi = PFS_SB(dir->i_sb);
	unsigned long pass_end = READ_ONCE(pi->sa_pass_end);
	struct pfs_sa_work *w;

	atomic64_inc(&sbi->statahead_lookups);
	if (!pfs_readdir_plus(dir) || !sbi->name_ttl)
		return;
	if (pass_end && time_before(jiffies, pass_end + sbi->name_ttl))
		return;
	if (atomic_inc_return(&pi->sa_misses) < PFS_SA_MISSES ||
	    test_and_set_bit(PFS_INO_STATAHEAD, &pi->flags))
		return;
	WRITE_ONCE(pi->sa_pass_end, 0);
	if (looking) {
		pfs_sa_page(parent, &looking->d_name);
		return;
	}
	w = kmalloc(sizeof(*w), GFP_KERNEL);
	if (!w) {
		clear_bit(PFS_INO_STATAHEAD, &pi->flags);
		return;
	}
	INIT_WORK(&w->work, pfs_sa_worker);
	w->dir = dget(parent);
	w->cred = get_current_cred();
	atomic_inc(&sbi->statahead_pending);
	queue_work(pfs_sa_wq, &w->work);
}

/* Before the dentries go at unmount: no worker holds one any more. */
void pfs_statahead_drain(struct super_block *sb)
{
	struct pfs_sb_info *sbi = PFS_SB(sb);

	wait_var_event(&sbi->statahead_pending,
		       !atomic_read(&sbi->statahead_pending));
}

int pfs_statahead_init(void)
{
	pfs_sa_wq = alloc_workqueue("pfs_statahead", WQ_UNBOUND, 0);
	return pfs_sa_wq ? 0 : -ENOMEM;
}

void pfs_statahead_exit(void)
{
	destroy_workqueue(pfs_sa_wq);
}
