// SPDX-License-Identifier: GPL-2.0
/*
 * File operations of regular files: OPEN/CLOSE with the metadata server,
 * buffered I/O through the page cache (addr.c), O_DIRECT and cache=none
 * straight against the storage targets, fsync and size reporting.
 *
 * Like libpfs, data goes to the storage targets and the metadata server
 * learns how far the file grew only at fsync and close (SETATTR with
 * PFS_SET_SIZE_EXTEND, which never shrinks a file another client grew).
 * Close-to-open consistency: flush (close(2)) writes back and reports, so
 * a client that opens the file afterwards sees data and size.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/splice.h>
#include <linux/timekeeping.h>
#include <linux/uio.h>

#include "pfs.h"
#include "stripe.h"

static struct pfs_file_info *pfs_fi(const struct file *file)
{
	return file->private_data;
}

static bool pfs_cache_none(const struct inode *inode)
{
	return PFS_SB(inode->i_sb)->opts.cache == PFS_CACHE_NONE;
}

/* Attributes, size included, as fresh as the mount's caching promises. */
static int pfs_revalidate_size(struct inode *inode)
{
	return pfs_revalidate_inode(inode, pfs_cache_none(inode));
}

/*
 * Sends SETATTR(size = max(size, i_size), mtime = now) when this client
 * wrote past what the server knows, or when data was written (written),
 * as cred. lazy (close): the server answers before its journal has the
 * report on disk, as close(2) promises no durability; a later report that
 * is not lazy (fsync) goes out even with nothing new, so that it is on
 * disk when fsync returns. A report that gets no answer (the server
 * unreachable, a timeout, the writer killed while it waited) is sent again
 * from the background until the server has it (resend.c): other clients
 * would see the file shorter than it is until the next report, which may
 * never come.
 */
static int pfs_send_size(struct inode *inode, bool written, bool lazy,
			 const struct cred *cred)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	struct pfs_setattr req = {};
	struct pfs_attr attr;
	u64 size = i_size_read(inode);
	bool unsynced = false;
	u64 reported;
	void *buf;
	u32 len = 0;
	int rc;

	spin_lock(&inode->i_lock);
	reported = pi->reported_size;
	spin_unlock(&inode->i_lock);
	if (!lazy)
		unsynced = test_and_clear_bit(PFS_INO_SIZE_LAZY, &pi->flags);
	if (size <= reported && !written && !unsynced)
		return 0;
	if (test_bit(PFS_INO_GONE, &pi->flags))
		return -ESTALE;

	req.id = pi->id;
	req.valid = PFS_SET_SIZE_EXTEND;
	/* "now" on the server's clock: whoever may write may set it. */
	if (written || size > reported)
		req.valid |= PFS_SET_MTIME | PFS_SET_MTIME_NOW;
	if (lazy)
		req.valid |= PFS_SET_LAZY;
	req.size = size;
	buf = pfs_encode(pfs_x_setattr, &req, &len);
	if (IS_ERR(buf)) {
		rc = PTR_ERR(buf);
		goto failed;
	}
	rc = pfs_meta_attr_call(inode->i_sb, &pi->id, PFS_MSG_SETATTR, buf,
				len, &attr, NULL);
	kfree(buf);
	if (rc) {
		pfs_resend_size(inode->i_sb, &pi->id, size, cred, rc);
		goto failed;
	}
	if (lazy)
		set_bit(PFS_INO_SIZE_LAZY, &pi->flags);
	spin_lock(&inode->i_lock);
	if (size > pi->reported_size)
		pi->reported_size = size;
	spin_unlock(&inode->i_lock);
	return pfs_inode_update(inode, &attr);
failed:
	if (unsynced)
		set_bit(PFS_INO_SIZE_LAZY, &pi->flags);
	return rc;
}

int pfs_report_size(struct inode *inode)
{
	if (!S_ISREG(inode->i_mode))
		return 0;
	return pfs_send_size(inode, false, false, current_cred());
}

void pfs_file_mark_written(struct file *file)
{
	set_bit(PFS_FILE_WRITTEN, &pfs_fi(file)->flags);
	set_bit(PFS_INO_BLOCKS_STALE, &PFS_I(file_inode(file))->flags);
}

/* lazy: for close(2), which promises no durability (pfs_send_size). */
static int pfs_file_report(struct file *file, bool lazy)
{
	struct inode *inode = file_inode(file);
	unsigned long *flags = &pfs_fi(file)->flags;
	bool written = test_and_clear_bit(PFS_FILE_WRITTEN, flags);
	/* After the flag: a write that then found the data moved counts. */
	const struct pfs_layout *lo = pfs_layout_of(inode);
	int rc;

	/*
	 * Inline still, so every write went to the inline store (a file never
	 * moves back), which recorded its size and mtime (stripe.c,
	 * pfs_chunk_write_done): only a size grown otherwise is left to tell.
	 */
	if (lo && pfs_layout_inline(lo))
		written = false;
	/* As the opener: the resent report is not the flusher's. */
	rc = pfs_send_size(inode, written, lazy, file->f_cred);

	if (rc && written)
		set_bit(PFS_FILE_WRITTEN, flags);
	return rc;
}

static int pfs_send_close(struct super_block *sb, const struct pfs_entry_id *id)
{
	struct pfs_entry_id copy = *id;

	return pfs_meta_simple(sb, &copy, PFS_MSG_CLOSE, pfs_x_entry_id,
			       &copy);
}

/*
 * CLOSE goes out in the background: nobody waits for its answer, which
 * saves a round trip at every close(2). Closes also wait up to
 * PFS_CLOSE_DELAY for others, and go out together, one CLOSE_MANY per
 * metadata server: a reader that opens and closes thousands of small
 * files (a training epoch) costs the server one request per file, not
 * two. A server counts the file open a little longer, which only delays
 * freeing an unlinked file's chunks. A CLOSE that gets no answer is sent
 * again until it does (resend.c). pfs_kill_sb drains what waits before
 * the session ends.
 */
#define PFS_CLOSE_DELAY		msecs_to_jiffies(20)
/* This many waiting go out at once. */
#define PFS_CLOSE_SOON		(PFS_CLOSE_MANY_MAX / 2)

static struct workqueue_struct *pfs_close_wq;

/* What became of closes: unanswered ones are sent again (resend.c). */
static void pfs_closes_done(struct super_block *sb,
			    const struct pfs_entry_id *ids, const u64 *epochs,
			    unsigned int n, int rc)
{
	if (!rc)
		return;
	if (pfs_resend_unanswered(rc))
		pfs_resend_close(sb, ids, epochs, n, rc);
	else
		pr_warn_ratelimited("CLOSE of %u inodes (inode %llu first) failed: %d\n",
				    n, ids[0].ino, rc);
}

/* Sends the closes of m (opened under epochs), all of one server's. */
static void pfs_send_closes(struct super_block *sb, struct pfs_close_many *m,
			    const u64 *epochs)
{
	unsigned int i, n = m->count;
	int rc = -EOPNOTSUPP;

	if (n > 1)
		rc = pfs_meta_simple(sb, &m->ids[0], PFS_MSG_CLOSE_MANY,
				     pfs_x_close_many, m);
	/*
	 * One CLOSE each: for a single close, to a server without CLOSE_MANY
	 * (an older one), or without the memory to encode the batch.
	 */
	if (rc == -EOPNOTSUPP || rc == -ENOMEM) {
		for (i = 0; i < n; i++)
			pfs_closes_done(sb, &m->ids[i], &epochs[i], 1,
					pfs_send_close(sb, &m->ids[i]));
		return;
	}
	pfs_closes_done(sb, m->ids, epochs, n, rc);
}

static void pfs_close_worker(struct work_struct *work)
{
	struct pfs_close_batch *b = container_of(to_delayed_work(work),
						 struct pfs_close_batch, work);
	struct pfs_close_many *m = &b->sending;
	u64 *epochs = b->sending_epochs;
	unsigned int i, n, left = 0;

	spin_lock(&b->lock);
	n = b->waiting;
	memcpy(m->ids, b->ids, n * sizeof(m->ids[0]));
	memcpy(epochs, b->epochs, n * sizeof(epochs[0]));
	b->waiting = 0;
	spin_unlock(&b->lock);
	/*
	 * An open our session lost is closed on the server already; the
	 * session we have there now may hold another open of the file.
	 */
	for (i = 0; i < n; i++) {
		if (pfs_session_lost(b->sb, m->ids[i].owner_node, epochs[i]))
			continue;
		m->ids[left] = m->ids[i];
		epochs[left++] = epochs[i];
	}
	while (left) {
		/* Those of the first one's server to the front, sent. */
		m->count = 0;
		for (i = 0; i < left; i++) {
			if (m->ids[i].owner_node != m->ids[0].owner_node)
				continue;
			swap(m->ids[i], m->ids[m->count]);
			swap(epochs[i], epochs[m->count]);
			m->count++;
		}
		pfs_send_closes(b->sb, m, epochs);
		left -= m->count;
		memmove(m->ids, m->ids + m->count, left * sizeof(m->ids[0]));
		memmove(epochs, epochs + m->count, left * sizeof(epochs[0]));
	}
}

void pfs_close_batch_init(struct pfs_close_batch *b, struct super_block *sb)
{
	spin_lock_init(&b->lock);
	INIT_DELAYED_WORK(&b->work, pfs_close_worker);
	b->sb = sb;
	b->waiting = 0;
}

void pfs_close_later(struct super_block *sb, const struct pfs_entry_id *id,
		     u64 epoch)
{
	struct pfs_close_batch *b = &PFS_SB(sb)->closes;
	unsigned int waiting;

	if (epoch == PFS_EPOCH_UNTRACKED)
		return;		/* the server did not count it */
	spin_lock(&b->lock);
	waiting = b->waiting;
	if (waiting < PFS_CLOSE_MANY_MAX) {
		b->epochs[b->waiting] = epoch;
		b->ids[b->waiting++] = *id;
	}
	spin_unlock(&b->lock);
	if (waiting == PFS_CLOSE_MANY_MAX) {
		/* The worker is behind (a slow server): no closer waits. */
		pfs_resend_close_later(sb, id, epoch);
	} else if (waiting + 1 >= PFS_CLOSE_SOON) {
		mod_delayed_work(pfs_close_wq, &b->work, 0);
	} else if (!waiting) {
		queue_delayed_work(pfs_close_wq, &b->work, PFS_CLOSE_DELAY);
	}
}

void pfs_drain_closes(struct super_block *sb)
{
	struct pfs_close_batch *b = &PFS_SB(sb)->closes;

	/* flush_delayed_work runs a waiting batch now, and waits for it. */
	do {
		flush_delayed_work(&b->work);
	} while (READ_ONCE(b->waiting));
}

int pfs_file_init(void)
{
	/* Unbound: a CLOSE waiting on a slow server holds up no other. */
	pfs_close_wq = alloc_workqueue("pfs_close", WQ_UNBOUND, 0);
	return pfs_close_wq ? 0 : -ENOMEM;
}

void pfs_file_exit(void)
{
	destroy_workqueue(pfs_close_wq);
}

/* An OPEN of inode by its id (flags: the access mode), counted under *epoch. */
static int pfs_open_by_id(struct inode *inode, unsigned int flags, u64 *epoch)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	struct pfs_open req = { .id = pi->id, .flags = flags };
	struct pfs_layout *layout;
	struct pfs_attr attr;
	int rc;

	layout = kzalloc(sizeof(*layout), GFP_KERNEL);
	if (!layout)
		return -ENOMEM;
	rc = pfs_meta_open_msg(inode->i_sb, &pi->id, PFS_MSG_OPEN, pfs_x_open,
			       &req, &attr, layout, epoch, NULL, NULL);
	kfree(layout);
	return rc;
}

/*
 * Whether an OPEN of inode may ask not to be counted (PFS_FLAG_UNTRACKED):
 * not while an unlink or rename of ours that may free it is under way. If
 * so, the OPEN counts as on its way until pfs_untracked_end.
 */
static bool pfs_untracked_begin(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	bool may;

	mutex_lock(&pi->untracked_lock);
	may = !pi->removing;
	if (may && !pi->opening++ && !pi->untracked_cred)
		pi->untracked_cred = get_cred(current_cred());
	mutex_unlock(&pi->untracked_lock);
	return may;
}

/*
 * Called with untracked_lock held: with no uncounted open left, nor one on
 * its way, the credentials and the hold are let go (the caller puts the
 * one and closes the other).
 */
static u64 pfs_untracked_unneeded(struct pfs_inode_info *pi,
				  const struct cred **cred)
{
	*cred = NULL;
	if (pi->untracked || pi->opening)
		return 0;
	*cred = pi->untracked_cred;
	pi->untracked_cred = NULL;
	if (!pi->held)
		return 0;
	pi->held = false;
	return pi->held_epoch;
}

static void pfs_untracked_let_go(struct inode *inode, const struct cred *cred,
				 u64 close)
{
	if (cred)
		put_cred(cred);
	if (close)
		pfs_close_later(inode->i_sb, &PFS_I(inode)->id, close);
}

static void pfs_untracked_end(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	const struct cred *cred;
	u64 close;

	mutex_lock(&pi->untracked_lock);
	pi->opening--;
	close = pfs_untracked_unneeded(pi, &cred);
	mutex_unlock(&pi->untracked_lock);
	pfs_untracked_let_go(inode, cred, close);
}

/*
 * The open (under session epoch) is file's; one the metadata server did
 * not count is counted on the inode (pfs_untracked_hold), with its
 * credentials kept for the OPEN that may have to count it on the server.
 */
void pfs_file_opened(struct file *file, u64 epoch)
{
	struct pfs_inode_info *pi = PFS_I(file_inode(file));

	pfs_fi(file)->open_epoch = epoch;
	if (epoch != PFS_EPOCH_UNTRACKED)
		return;
	mutex_lock(&pi->untracked_lock);
	pi->untracked++;
	if (!pi->untracked_cred)
		pi->untracked_cred = get_cred(file->f_cred);
	mutex_unlock(&pi->untracked_lock);
}

static void pfs_untracked_put(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	const struct cred *cred = NULL;
	u64 close = 0;

	mutex_lock(&pi->untracked_lock);
	if (pi->untracked && !--pi->untracked)
		close = pfs_untracked_unneeded(pi, &cred);
	mutex_unlock(&pi->untracked_lock);
	pfs_untracked_let_go(inode, cred, close);
}

/*
 * The OPEN goes with the credentials of one of the untracked opens (who
 * may read the file) and without untracked_lock held: the callers hold
 * the inode lock, so holds of an inode never overlap, and opens and
 * closes of it need not wait for the server. Without the server the file
 * may be freed under our untracked opens, whose reads past the cached
 * pages then fail (ESTALE), as when another client removes it.
 */
void pfs_untracked_hold(struct inode *inode)
{
	struct super_block *sb = inode->i_sb;
	struct pfs_inode_info *pi = PFS_I(inode);
	const struct cred *cred = NULL, *old;
	u64 epoch = 0, close = 0;
	int rc;

	if (!S_ISREG(inode->i_mode))
		return;
	mutex_lock(&pi->untracked_lock);
	pi->removing++;
	/* A hold our lost session took with it counts nothing. */
	if (pi->held && pfs_session_lost(sb, pi->id.owner_node,
					 pi->held_epoch))
		pi->held = false;
	if ((pi->untracked || pi->opening) && !pi->held)
		cred = get_cred(pi->untracked_cred ?: current_cred());
	mutex_unlock(&pi->untracked_lock);
	if (!cred)
		return;
	old = override_creds(cred);
	rc = pfs_open_by_id(inode, O_RDONLY, &epoch);
	revert_creds(old);
	put_cred(cred);
	if (rc)
		return;
	mutex_lock(&pi->untracked_lock);
	if (pi->untracked || pi->opening) {
		pi->held = true;
		pi->held_epoch = epoch;
	} else {
		close = epoch;	/* released meanwhile */
	}
	mutex_unlock(&pi->untracked_lock);
	if (close)
		pfs_close_later(sb, &pi->id, close);
}

void pfs_untracked_removed(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);

	if (!S_ISREG(inode->i_mode))
		return;
	mutex_lock(&pi->untracked_lock);
	pi->removing--;
	mutex_unlock(&pi->untracked_lock);
}

/* The local half of an open the metadata server has counted. */
static int pfs_file_setup(struct inode *inode, struct file *file)
{
	struct pfs_file_info *fi;
	int rc;

	rc = pfs_revalidate_mapping(inode);
	if (rc)
		return rc;
	fi = kzalloc(sizeof(*fi), GFP_KERNEL);
	if (!fi)
		return -ENOMEM;
	mutex_init(&fi->reopen_lock);
	file->private_data = fi;
#ifdef FMODE_CAN_ODIRECT
	file->f_mode |= FMODE_CAN_ODIRECT;
#endif
	return 0;
}

int pfs_file_open_counted(struct inode *inode, struct file *file)
{
	int rc = generic_file_open(inode, file);

	return rc ? rc : pfs_file_setup(inode, file);
}

/*
 * Our open lives in our session on the inode's metadata server. That
 * session was lost (it expired, or the server restarted): the file is
 * opened again, by its id. A file that is gone meanwhile was unlinked and
 * freed with our open: its chunks are deleted (reads would see zeros, or
 * another file's data once its id is reused), so every later use of it
 * fails with ESTALE, and writeback drops what it still has.
 */
static int pfs_file_reopen(struct file *file)
{
	struct inode *inode = file_inode(file);
	struct pfs_inode_info *pi = PFS_I(inode);
	struct pfs_file_info *fi = pfs_fi(file);
	u64 epoch = 0;
	int rc;

	if (mutex_lock_killable(&fi->reopen_lock))
		return -EINTR;
	rc = -ESTALE;
	if (test_bit(PFS_FILE_GONE, &fi->flags))
		goto out;
	rc = 0;
	if (!pfs_session_lost(inode->i_sb, pi->id.owner_node,
			      READ_ONCE(fi->open_epoch)))
		goto out;	/* another task of ours did it */
	rc = pfs_open_by_id(inode, file->f_flags & O_ACCMODE, &epoch);
	if (!rc) {
		WRITE_ONCE(fi->open_epoch, epoch);
		pr_info_ratelimited("inode %llu opened again: metadata node %u had lost our session\n",
				    pi->id.ino, pi->id.owner_node);
	} else if (rc == -ENOENT || rc == -ESTALE) {
		set_bit(PFS_FILE_GONE, &fi->flags);
		set_bit(PFS_INO_GONE, &pi->flags);
		pr_warn_ratelimited("inode %llu is gone with our session on metadata node %u: its open files fail with ESTALE\n",
				    pi->id.ino, pi->id.owner_node);
		rc = -ESTALE;
	}
out:
	mutex_unlock(&fi->reopen_lock);
	return rc;
}

int pfs_file_check(struct file *file)
{
	struct inode *inode = file_inode(file);
	struct pfs_file_info *fi = pfs_fi(file);
	u32 node = PFS_I(inode)->id.owner_node;

	if (test_bit(PFS_FILE_GONE, &fi->flags))
		return -ESTALE;
	/* No open of ours on the server to lose. */
	if (fi->open_epoch == PFS_EPOCH_UNTRACKED)
		return 0;
	/* A server unreachable now: go on with what we know. */
	pfs_session_verify(inode->i_sb, node);
	if (!pfs_session_lost(inode->i_sb, node, READ_ONCE(fi->open_epoch)))
		return 0;
	return pfs_file_reopen(file);
}

bool pfs_open_caches(struct super_block *sb, unsigned int flags)
{
	return (flags & O_ACCMODE) == O_RDONLY &&
	       !(flags & (O_DIRECT | O_TRUNC)) &&
	       PFS_SB(sb)->opts.cache != PFS_CACHE_NONE;
}

/*
 * Every open is an OPEN on the metadata server (or an OPEN_NAME or a
 * CREATE that opens, see pfs_atomic_open): it counts the file as open (an
 * unlinked file lives on until the last close) and returns the layout, and
 * for a read-only open of an inline file with nothing cached, its content;
 * an open given all of it is not counted (PFS_EPOCH_UNTRACKED).
 */
static int pfs_file_open(struct inode *inode, struct file *file)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	struct pfs_open req = { .id = pi->id, .flags = file->f_flags };
	loff_t size = i_size_read(inode);
	/* Content fits in room at the size we know (it may have changed). */
	bool wants = pfs_open_caches(inode->i_sb, file->f_flags) &&
		     !inode->i_mapping->nrpages &&
		     size < PFS_OPEN_CONTENT_MAX;
	struct pfs_open_content content = { .room = wants ? (u32)size : 0 };
	struct pfs_layout *layout;
	struct pfs_attr attr;
	void *buf = NULL;
	bool begun = false;
	u64 epoch = 0;
	u32 len = 0;
	int rc;

	rc = generic_file_open(inode, file);
	if (rc)
		return rc;
	layout = kzalloc(sizeof(*layout), GFP_KERNEL);
	if (!layout)
		return -ENOMEM;
	buf = pfs_encode(pfs_x_open, &req, &len);
	if (IS_ERR(buf)) {
		rc = PTR_ERR(buf);
		buf = NULL;
		goto out;
	}
	content.untracked = wants && pfs_untracked_begin(inode);
	begun = content.untracked;
	rc = pfs_meta_open_call(inode->i_sb, &pi->id, PFS_MSG_OPEN, buf, len,
				&attr, layout, &epoch, NULL,
				wants ? &content : NULL);
	if (rc)
		goto out;
	if (pfs_stripe_check(layout->chunk_size, layout->count)) {
		pr_warn_ratelimited("OPEN of inode %llu returned no usable layout (chunk %u, %u targets)\n",
				    pi->id.ino, layout->chunk_size,
				    layout->count);
		rc = -EIO;
	} else {
		rc = pfs_inode_update(inode, &attr) ?:
		     pfs_inode_set_layout(inode, layout);
		if (!rc)
			rc = pfs_file_setup(inode, file);
		if (!rc)
			pfs_file_opened(file, epoch);
		if (!rc)
			pfs_inode_take_content(inode, &attr, &content);
	}
	if (rc)
		pfs_close_later(inode->i_sb, &pi->id, epoch);
	pfs_open_content_free(&content);
out:
	if (begun)
		pfs_untracked_end(inode);
	kfree(buf);
	kfree(layout);
	return rc;
}

/* close(2): written data and the size reach the servers, errors reported. */
static int pfs_file_flush(struct file *file, fl_owner_t id)
{
	int rc, err;

	if (!(file->f_mode & FMODE_WRITE))
		return 0;
	/* A file gone with our session: writeback drops what is left. */
	rc = pfs_file_check(file);
	if (rc == -ESTALE)
		return rc;
	rc = pfs_write_and_wait(file->f_mapping, 0, LLONG_MAX);
	err = file_check_and_advance_wb_err(file);
	if (!rc)
		rc = err;
	err = pfs_file_report(file, true);
	return rc ? rc : err;
}

static int pfs_file_release(struct inode *inode, struct file *file)
{
	struct pfs_file_info *fi = pfs_fi(file);
	u64 ino = PFS_I(inode)->id.ino;
	int rc;

	/* Normally flush did all of this; mmap writes can come later. */
	if ((file->f_mode & FMODE_WRITE) &&
	    !test_bit(PFS_FILE_GONE, &fi->flags)) {
		rc = pfs_write_and_wait(inode->i_mapping, 0, LLONG_MAX);
		if (rc)
			pr_warn_ratelimited("write-back of inode %llu at close failed: %d\n",
					    ino, rc);
		rc = pfs_file_report(file, true);
		if (rc)
			pr_warn_ratelimited("size report of inode %llu at close failed: %d\n",
					    ino, rc);
	}
	/* Not for an open our session lost: the worker drops it. */
	if (fi->open_epoch == PFS_EPOCH_UNTRACKED)
		pfs_untracked_put(inode);
	else
		pfs_close_later(inode->i_sb, &PFS_I(inode)->id,
				fi->open_epoch);
	kfree(fi);
	return 0;
}

static bool pfs_uncached(const struct kiocb *iocb)
{
	return (iocb->ki_flags & IOCB_DIRECT) ||
	       pfs_cache_none(file_inode(iocb->ki_filp));
}

static ssize_t pfs_direct_read(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	loff_t pos = iocb->ki_pos;
	size_t count, shorted;
	loff_t size;
	ssize_t n;
	int rc;

	if (iocb->ki_flags & IOCB_NOWAIT)
		return -EAGAIN;
	rc = pfs_revalidate_size(inode);
	if (rc)
		return rc;
	size = i_size_read(inode);
	if (pos >= size)
		return 0;
	count = min_t(u64, iov_iter_count(to), size - pos);
	/* Dirty cached data (mmap, earlier buffered writes) goes first. */
	rc = pfs_write_and_wait(file->f_mapping, pos, pos + count - 1);
	if (rc)
		return rc;
	shorted = iov_iter_count(to) - count;
	iov_iter_truncate(to, count);
	n = pfs_stripe_read(inode, pos, to);
	iov_iter_reexpand(to, iov_iter_count(to) + shorted);
	if (n > 0)
		iocb->ki_pos = pos + n;
	file_accessed(file);
	return n;
}

static ssize_t pfs_direct_write(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct address_space *mapping = file->f_mapping;
	loff_t pos, end;
	ssize_t rc;

	if (iocb->ki_flags & IOCB_NOWAIT)
		return -EAGAIN;
	/* O_APPEND writes at the end another client may have moved. */
	rc = pfs_revalidate_inode(inode, (iocb->ki_flags & IOCB_APPEND) ||
					 pfs_cache_none(inode));
	if (rc)
		return rc;
	inode_lock(inode);
	rc = generic_write_checks(iocb, from);
	if (rc <= 0)
		goto out;
	rc = file_remove_privs(file);
	if (!rc)
		rc = file_update_time(file);
	if (rc)
		goto out;
	pos = iocb->ki_pos;
	end = pos + iov_iter_count(from) - 1;
	rc = pfs_write_and_wait(mapping, pos, end);
	if (rc)
		goto out;
	/* Pages still mapped stay cached; they are retried after the write. */
	invalidate_inode_pages2_range(mapping, pos >> PAGE_SHIFT,
				      end >> PAGE_SHIFT);
	pfs_file_mark_written(file);
	rc = pfs_stripe_write(inode, pos, from);
	if (rc > 0) {
		iocb->ki_pos = pos + rc;
		pfs_i_size_extend(inode, iocb->ki_pos);
		invalidate_inode_pages2_range(mapping, pos >> PAGE_SHIFT,
					      end >> PAGE_SHIFT);
	}
out:
	inode_unlock(inode);
	if (rc > 0)
		rc = generic_write_sync(iocb, rc);
	return rc;
}

static ssize_t pfs_file_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	int rc;

	if (!iov_iter_count(to))
		return 0;
	rc = pfs_file_check(iocb->ki_filp);
	if (rc)
		return rc;
	if (pfs_uncached(iocb))
		return pfs_direct_read(iocb, to);
	/* Another client's growth becomes visible within attr_ttl. */
	rc = pfs_revalidate_inode(inode, false);
	if (!rc)
		rc = pfs_revalidate_mapping(inode);
	if (rc)
		return rc;
	return generic_file_read_iter(iocb, to);
}

static ssize_t pfs_file_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	int rc;

	rc = pfs_file_check(file);
	if (rc)
		return rc;
	if (pfs_uncached(iocb))
		return pfs_direct_write(iocb, from);
	/*
	 * A partial folio write within i_size reads the folio first: i_size
	 * must be recent, and exact for O_APPEND.
	 */
	rc = pfs_revalidate_inode(file_inode(file),
				  iocb->ki_flags & IOCB_APPEND);
	if (!rc)
		rc = pfs_revalidate_mapping(file_inode(file));
	if (rc)
		return rc;
	pfs_file_mark_written(file);
	rc = generic_file_write_iter(iocb, from);
	if (rc > 0)
		pfs_write_behind(file_inode(file), rc);
	return rc;
}

static int pfs_file_fsync(struct file *file, loff_t start, loff_t end,
			  int datasync)
{
	struct inode *inode = file_inode(file);
	int rc, err;

	rc = pfs_file_check(file);
	if (rc)
		return rc;
	rc = pfs_write_and_wait(file->f_mapping, start, end);
	err = file_check_and_advance_wb_err(file);
	if (rc || err)
		return rc ?: err;
	rc = pfs_stripe_sync(inode);
	if (rc)
		return rc;
	return pfs_file_report(file, false);
}

static loff_t pfs_file_llseek(struct file *file, loff_t offset, int whence)
{
	if (whence == SEEK_DATA || whence == SEEK_HOLE)
		return pfs_seek_data_hole(file, offset, whence);
	if (whence == SEEK_END) {
		int rc = pfs_revalidate_size(file_inode(file));

		if (rc)
			return rc;
	}
	return generic_file_llseek(file, offset, whence);
}

/* Shared mmap writes count as writes of the file that mapped it. */
static vm_fault_t pfs_page_mkwrite(struct vm_fault *vmf)
{
	pfs_file_mark_written(vmf->vma->vm_file);
	return filemap_page_mkwrite(vmf);
}

static const struct vm_operations_struct pfs_file_vm_ops = {
	.fault = filemap_fault,
	.map_pages = filemap_map_pages,
	.page_mkwrite = pfs_page_mkwrite,
};

static int pfs_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	int rc = pfs_file_check(file) ?:
		 pfs_revalidate_inode(file_inode(file), false);

	if (!rc)
		rc = pfs_revalidate_mapping(file_inode(file));
	if (rc)
		return rc;
	rc = generic_file_mmap(file, vma);
	if (!rc)
		vma->vm_ops = &pfs_file_vm_ops;
	return rc;
}

const struct file_operations pfs_file_fops = {
	.llseek = pfs_file_llseek,
	.read_iter = pfs_file_read_iter,
	.write_iter = pfs_file_write_iter,
	.mmap = pfs_file_mmap,
	.open = pfs_file_open,
	.flush = pfs_file_flush,
	.release = pfs_file_release,
	.fsync = pfs_file_fsync,
	.lock = pfs_lock,
	.flock = pfs_flock,
#ifdef PFS_HAVE_GENERIC_FILE_SPLICE_READ
	.splice_read = generic_file_splice_read,
#else
	.splice_read = copy_splice_read,
#endif
	.splice_write = iter_file_splice_write,
	.fallocate = pfs_fallocate,
	.copy_file_range = pfs_copy_file_range,
};
