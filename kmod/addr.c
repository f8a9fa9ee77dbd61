// SPDX-License-Identifier: GPL-2.0
/*
 * The page cache of regular files (address_space_operations): reads and
 * readahead, write_begin/write_end, and writeback turning contiguous dirty
 * folios into one CHUNK_WRITE each, sent from the folios themselves
 * (stripe.c carries the requests).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/uio.h>
#include <linux/writeback.h>

#include "stripe.h"

/* Writeback batches (one CHUNK_WRITE each) in flight per writepages. */
#define PFS_WB_INFLIGHT		8

/* ---- page cache: reads ---- */

/*
 * Reads the content of a locked folio: bytes up to i_size from the
 * targets, zeroes beyond. The folio stays locked and is not marked.
 */
static int pfs_fill_folio(struct inode *inode, struct folio *folio)
{
	loff_t pos = folio_pos(folio);
	loff_t size = i_size_read(inode);
	size_t len = folio_size(folio);
	size_t want = pos < size ? min_t(u64, len, size - pos) : 0;

	if (want) {
		struct iov_iter it;
		ssize_t n;

		iov_iter_xarray(&it, ITER_DEST, &inode->i_mapping->i_pages,
				pos, want);
		n = pfs_stripe_batch(inode, PFS_MSG_CHUNK_READ, pos, &it, want,
				     NULL);
		if (n < 0)
			return n;
		if (n < want)
			return -EIO;
	}
	if (want < len)
		folio_zero_segment(folio, want, len);
	return 0;
}

static int pfs_read_folio(struct file *file, struct folio *folio)
{
	int rc = pfs_fill_folio(folio->mapping->host, folio);

	if (!rc)
		folio_mark_uptodate(folio);
	folio_unlock(folio);
	return rc;
}

/*
 * A window being read: its folios, in file order, and how many of them
 * (a prefix) are already marked uptodate and unlocked.
 */
struct pfs_window {
	struct pfs_stripe_progress progress;
	loff_t pos;
	struct folio **folios;
	unsigned int nr;
	unsigned int released;
};

/*
 * The window's first done bytes have arrived: their folios go to the
 * reader now, so it consumes them (and, reaching the readahead mark, asks
 * for the next window) while the rest is on its way. The last folio stays
 * locked until the end: it keeps the inode from eviction.
 */
static void pfs_window_moved(struct pfs_stripe_progress *p, size_t done)
{
	struct pfs_window *w = container_of(p, struct pfs_window, progress);
	loff_t end = w->pos + done;

	while (w->released + 1 < w->nr) {
		struct folio *folio = w->folios[w->released];

		if (folio_pos(folio) + folio_size(folio) > end)
			break;
		folio_mark_uptodate(folio);
		folio_unlock(folio);
		w->released++;
	}
}

/*
 * One striped read for the window [pos, pos + len) of mapping, its pieces
 * on all targets in flight together, straight into the window's locked
 * folios; each folio that got its data is marked uptodate and unlocked as
 * soon as the pieces before its end are in, the others at the end (those
 * left without data are read again by read_folio).
 */
static void pfs_read_window(struct inode *inode, loff_t pos, size_t len,
			    struct folio **folios, unsigned int nr)
{
	struct address_space *mapping = inode->i_mapping;
	loff_t size = i_size_read(inode);
	size_t want = pos < size ? min_t(u64, len, size - pos) : 0;
	loff_t good_end = pos + len;	/* folios before it are complete */
	struct pfs_window w = {
		.progress.moved = pfs_window_moved,
		.pos = pos, .folios = folios, .nr = nr,
	};
	struct iov_iter it;
	unsigned int i;

	if (want) {
		ssize_t n;

		iov_iter_xarray(&it, ITER_DEST, &mapping->i_pages, pos, want);
		n = pfs_stripe_read_progress(inode, pos, &it, want,
					     &w.progress);
		if (n < (ssize_t)want)
			good_end = pos + max_t(ssize_t, n, 0);
	}
	if (want < len && good_end == pos + len) {
		iov_iter_xarray(&it, ITER_DEST, &mapping->i_pages, pos + want,
				len - want);
		iov_iter_zero(len - want, &it);
	}
	/* After the last unlock the inode may go: touch nothing after it. */
	for (i = w.released; i < nr; i++) {
		if (folio_pos(folios[i]) + folio_size(folios[i]) <= good_end)
			folio_mark_uptodate(folios[i]);
		folio_unlock(folios[i]);
	}
}

/*
 * Readahead in the background, as block devices do it with bios: the
 * window's folios stay locked (and so in the page cache, and the inode
 * unevicted) while a worker fetches them; a reader waits only on the
 * folio it needs, so it consumes one window while the next is on its way.
 */
struct pfs_ra_work {
	struct work_struct work;
	struct inode *inode;
	loff_t pos;
	size_t len;
	unsigned int nr;
	struct folio *folios[];
};

static struct workqueue_struct *pfs_ra_wq;

static void pfs_ra_worker(struct work_struct *work)
{
	struct pfs_ra_work *w = container_of(work, struct pfs_ra_work, work);
	/* As in the reader's context: reclaim must not re-enter the fs. */
	unsigned int nofs = memalloc_nofs_save();

	pfs_read_window(w->inode, w->pos, w->len, w->folios, w->nr);
	memalloc_nofs_restore(nofs);
	kvfree(w);
}

/*
 * Whether the reader asked for the window's first byte and waits for it (a
 * cache miss: synchronous readahead) rather than for bytes before the
 * window (asynchronous readahead, triggered ahead of the reader). The
 * reader then fetches the window itself: a worker would only add two
 * wake-ups to its wait. The file's last read ended at prev_pos; a reader
 * that jumped ahead of it looks asynchronous, and is served as before.
 */
static bool pfs_ra_reader_waits(struct readahead_control *ractl, loff_t pos)
{
	return ractl->ra && pos <= ractl->ra->prev_pos + 1;
}

static void pfs_readahead(struct readahead_control *ractl)
{
	unsigned int max = readahead_count(ractl);	/* pages: >= folios */
	struct pfs_ra_work *w;
	struct folio *folio;

	w = kvmalloc(struct_size(w, folios, max), GFP_KERNEL);
	if (!w)
		return;	/* read_folio reads each folio when it is needed */
	w->inode = ractl->mapping->host;
	w->pos = readahead_pos(ractl);
	w->len = readahead_length(ractl);
	w->nr = 0;
	while (w->nr < max && (folio = readahead_folio(ractl)))
		w->folios[w->nr++] = folio;
	if (pfs_ra_reader_waits(ractl, w->pos)) {
		pfs_ra_worker(&w->work);
		return;
	}
	INIT_WORK(&w->work, pfs_ra_worker);
	queue_work(pfs_ra_wq, &w->work);
}

/*
 * Write-behind: once a writer has dirtied PFS_WRITE_BEHIND bytes of a file
 * since the last kick, a worker starts their writeback, so the data travels
 * while the writer goes on filling the page cache. Left to the flusher, a
 * stream would sit in memory until the machine's dirty threshold (10% of
 * memory: gigabytes) or the closing fsync, and then go out with the writer
 * waiting for all of it. The worker writes whatever is dirty and not yet
 * under writeback (WB_SYNC_NONE), so kicks that come while it runs are
 * served by one more pass.
 */
#define PFS_WRITE_BEHIND	(4l << 20)

static struct workqueue_struct *pfs_wb_wq;

static void pfs_write_behind_worker(struct work_struct *work)
{
	struct pfs_inode_info *pi = container_of(work, struct pfs_inode_info,
						 write_behind);

	filemap_flush(pi->vfs_inode.i_mapping);
}

void pfs_write_behind_init(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);

	atomic_long_set(&pi->dirtied, 0);
	INIT_WORK(&pi->write_behind, pfs_write_behind_worker);
}

void pfs_write_behind(struct inode *inode, size_t written)
{
	struct pfs_inode_info *pi = PFS_I(inode);

	if (atomic_long_add_return(written, &pi->dirtied) < PFS_WRITE_BEHIND)
		return;
	atomic_long_set(&pi->dirtied, 0);
	queue_work(pfs_wb_wq, &pi->write_behind);
}

/* Eviction: no worker may touch the mapping any more. */
void pfs_write_behind_cancel(struct inode *inode)
{
	cancel_work_sync(&PFS_I(inode)->write_behind);
}

int pfs_addr_init(void)
{
	/* Unbound: windows of many files and readers in flight at once. */
	pfs_ra_wq = alloc_workqueue("pfs_readahead", WQ_UNBOUND, 0);
	if (!pfs_ra_wq)
		return -ENOMEM;
	/* Writeback frees memory: it must run under memory pressure too. */
	pfs_wb_wq = alloc_workqueue("pfs_write_behind",
				    WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!pfs_wb_wq) {
		destroy_workqueue(pfs_ra_wq);
		return -ENOMEM;
	}
	return 0;
}

void pfs_addr_exit(void)
{
	destroy_workqueue(pfs_wb_wq);
	destroy_workqueue(pfs_ra_wq);
}

/* ---- page cache: writes ---- */

static int pfs_write_begin(struct file *file, struct address_space *mapping,
			   loff_t pos, unsigned int len, struct page **pagep,
			   void **fsdata)
{
	struct inode *inode = mapping->host;
	struct folio *folio;
	struct page *page;
	size_t from;
	int rc;

	page = grab_cache_page_write_begin(mapping, pos >> PAGE_SHIFT);
	if (!page)
		return -ENOMEM;
	folio = page_folio(page);
	*pagep = page;
	if (folio_test_uptodate(folio))
		return 0;

	from = offset_in_folio(folio, pos);
	/* Overwritten whole: nothing to read (write_end retries if short). */
	if (from == 0 && len == folio_size(folio))
		return 0;
	/* Nothing is stored past the end of the file: zeroes around it. */
	if (folio_pos(folio) >= i_size_read(inode)) {
		folio_zero_segments(folio, 0, from, from + len,
				    folio_size(folio));
		return 0;
	}
	rc = pfs_fill_folio(inode, folio);
	if (rc) {
		folio_unlock(folio);
		folio_put(folio);
		return rc;
	}
	folio_mark_uptodate(folio);
	return 0;
}

static int pfs_write_end(struct file *file, struct address_space *mapping,
			 loff_t pos, unsigned int len, unsigned int copied,
			 struct page *page, void *fsdata)
{
	struct folio *folio = page_folio(page);
	struct inode *inode = mapping->host;

	if (!folio_test_uptodate(folio)) {
		if (copied < len) {
			/* A whole-folio overwrite that fell short: retry. */
			if (len == folio_size(folio)) {
				copied = 0;
				goto out;
			}
			/* write_begin zeroed the rest; this is past EOF. */
			folio_zero_range(folio, offset_in_folio(folio, pos) +
					 copied, len - copied);
		}
		folio_mark_uptodate(folio);
	}
	if (copied) {
		/* Before the unlock: writeback must see the new size. */
		pfs_i_size_extend(inode, pos + copied);
		folio_mark_dirty(folio);
	}
out:
	folio_unlock(folio);
	folio_put(folio);
	return copied;
}

/*
 * Writeback errors. A transient one (a server down, slow or unreachable, a
 * lost connection, no memory, or the task that ran writeback killed) leaves
 * the folios dirty in the page cache, to be written again: by the flusher
 * in its next round, or at once by a sync writeback (fsync, close, sync,
 * umount), which retries with backoff until the data is stored or lost for
 * good, and only a fatal signal cuts short. A file's retries end
 * PFS_WB_RETRY_TIMEOUTS request timeouts after its first failure in a row;
 * then, or at once for a permanent error (no space, quota, file too large,
 * read-only, the file gone, the mount aborted), the error is recorded in
 * the mapping for fsync and close of every writer to report (errseq) and
 * the folios are dropped.
 */
#define PFS_WB_RETRY_TIMEOUTS	4
#define PFS_WB_BACKOFF_MIN_MS	100
#define PFS_WB_BACKOFF_MAX_MS	2000

/*
 * What a failed attempt to write inode's data back (err) comes to: 0 when
 * the folios stay dirty, to be written again, or the error to record.
 */
static int pfs_wb_verdict(struct inode *inode, int err)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	unsigned long since, limit;

	if (pfs_net_check(pfs_inode_net(inode)))
		return -EIO;		/* umount -f, or the mount ends */
	if (err == -EINTR || err == -ERESTARTSYS)
		return 0;		/* killed: not the servers' failure */
	if (!pfs_net_transient(err))
		return err;
	since = READ_ONCE(pi->wb_fail_since);
	if (!since) {
		since = jiffies ?: 1;
		WRITE_ONCE(pi->wb_fail_since, since);
	}
	limit = PFS_WB_RETRY_TIMEOUTS *
		msecs_to_jiffies(PFS_SB(inode->i_sb)->opts.timeout_ms);
	if (time_before(jiffies, since + limit))
		return 0;
	/*
	 * Given up, on everything that fails until an attempt stores all it
	 * tries (pfs_wb_succeeded): data written after that gets retries of
	 * its own.
	 */
	return -EIO;
}

/* An attempt stored all it tried: the failures in a row end. */
static void pfs_wb_succeeded(struct inode *inode)
{
	if (READ_ONCE(PFS_I(inode)->wb_fail_since))
		WRITE_ONCE(PFS_I(inode)->wb_fail_since, 0);
}

/*
 * Writeback: contiguous dirty folios inside one chunk become one
 * CHUNK_WRITE (up to PFS_MAX_IO) sent from the folios themselves; up to
 * PFS_WB_INFLIGHT of them are in flight while the next is gathered.
 */
struct pfs_wb_batch {
	struct list_head list;
	struct pfs_chunk_req req;
	loff_t pos;
	u32 len;
	unsigned int nr;
	struct bio_vec bvec[];
};

struct pfs_wb {
	struct inode *inode;
	struct writeback_control *wbc;
	const struct pfs_layout *lo;
	unsigned int cap;		/* folios per batch */
	struct pfs_wb_batch *cur;	/* being gathered */
	struct list_head inflight;
	unsigned int ninflight;
	struct list_head spare;		/* finished batches, for reuse */
	int again;			/* transient error: redirtied */
	bool lost;			/* a permanent one: folios dropped */
	bool stored;			/* a batch was stored */
};

/*
 * An inline file's data moved to the storage targets (PFS_E_MOVED): the
 * batch follows it at once, cut as the new layout wants, its folios still
 * under writeback. Left dirty for a later pass instead, they would look
 * stored to an fsync that found them under writeback when it began: it
 * waits for the writeback to end, not for the data.
 */
static int pfs_wb_follow(struct pfs_wb *wb, struct pfs_wb_batch *b)
{
	const struct pfs_layout *lo = pfs_layout_of(wb->inode);
	struct iov_iter it;

	if (lo && pfs_layout_inline(lo)) {
		int rc = pfs_inode_relayout(wb->inode);

		if (rc)
			return rc;
	}
	iov_iter_bvec(&it, ITER_SOURCE, b->bvec, b->nr, b->len);
	return pfs_stripe_write_all(wb->inode, b->pos, &it, b->len);
}

static void pfs_wb_end(struct pfs_wb *wb, struct pfs_wb_batch *b, int rc)
{
	struct inode *inode = wb->inode;
	unsigned int i;
	int err = 0;

	if (rc == -EREMCHG)
		rc = pfs_wb_follow(wb, b);
	if (!rc) {
		wb->stored = true;
	} else {
		err = pfs_wb_verdict(inode, rc);
		if (err) {
			pr_warn_ratelimited("writeback of %u bytes at %lld of inode %llu failed: %d\n",
					    b->len, b->pos,
					    PFS_I(inode)->id.ino, rc);
			mapping_set_error(inode->i_mapping, err);
			wb->lost = true;
		} else {
			if (rc != -EINTR && rc != -ERESTARTSYS)
				pr_info_ratelimited("writeback of %u bytes at %lld of inode %llu failed (%d), to be retried\n",
						    b->len, b->pos,
						    PFS_I(inode)->id.ino, rc);
			if (!wb->again)
				wb->again = rc;
		}
	}
	for (i = 0; i < b->nr; i++) {
		struct folio *folio = page_folio(b->bvec[i].bv_page);

		/*
		 * Dirty again before the writeback ends: nobody sees it clean.
		 * Truncation waits for the end of writeback under the folio
		 * lock, so the folio stays in its mapping meanwhile.
		 */
		if (rc && !err)
			folio_redirty_for_writepage(wb->wbc, folio);
		else if (err)
			folio_set_error(folio);
		folio_end_writeback(folio);
	}
	list_add(&b->list, &wb->spare);
}

static void pfs_wb_reap(struct pfs_wb *wb)
{
	struct pfs_wb_batch *b;

	b = list_first_entry(&wb->inflight, struct pfs_wb_batch, list);
	list_del(&b->list);
	wb->ninflight--;
	pfs_wb_end(wb, b, pfs_chunk_finish(&b->req));
}

static void pfs_wb_send(struct pfs_wb *wb)
{
	struct pfs_wb_batch *b = wb->cur;
	struct iov_iter it;
	int rc;

	wb->cur = NULL;
	/* Moved during this pass: after the data, not to pfs-meta first. */
	if (pfs_layout_of(wb->inode) != wb->lo) {
		pfs_wb_end(wb, b, -EREMCHG);
		return;
	}
	iov_iter_bvec(&it, ITER_SOURCE, b->bvec, b->nr, b->len);
	rc = pfs_chunk_start_io(wb->inode, wb->lo, &b->req,
				PFS_MSG_CHUNK_WRITE, b->pos, b->len, &it, NULL);
	if (rc) {
		pfs_wb_end(wb, b, rc);
		return;
	}
	list_add_tail(&b->list, &wb->inflight);
	if (++wb->ninflight >= PFS_WB_INFLIGHT)
		pfs_wb_reap(wb);
}

/* Can the folio at pos (len bytes of it to write) extend the batch? */
static bool pfs_wb_fits(const struct pfs_wb *wb, loff_t pos, size_t len)
{
	const struct pfs_wb_batch *b = wb->cur;
	u64 chunk_mask = ~(u64)(wb->lo->chunk_size - 1);

	if (b->nr >= wb->cap || pos != b->pos + b->len ||
	    b->len + len > PFS_MAX_IO)
		return false;
	return wb->lo->count == 1 ||
	       (pos & chunk_mask) == (b->pos & chunk_mask);
}

static int pfs_wb_folio(struct page *page, struct writeback_control *wbc,
			void *data)
{
	struct pfs_wb *wb = data;
	struct folio *folio = page_folio(page);
	loff_t size = i_size_read(wb->inode);
	loff_t pos = folio_pos(folio);
	size_t len;

	/*
	 * A server failed (or the task was killed) in this pass: the rest
	 * waits for the next one instead of piling up more requests.
	 */
	if (wb->again) {
		folio_redirty_for_writepage(wbc, folio);
		folio_unlock(folio);
		return 0;
	}
	/* Entirely past EOF: truncated meanwhile, nothing to store. */
	if (pos >= size) {
		folio_unlock(folio);
		return 0;
	}
	len = min_t(u64, folio_size(folio), size - pos);
	if (wb->cur && !pfs_wb_fits(wb, pos, len))
		pfs_wb_send(wb);
	if (!wb->cur) {
		struct pfs_wb_batch *b;

		b = list_first_entry_or_null(&wb->spare, struct pfs_wb_batch,
					     list);
		if (b) {
			list_del(&b->list);
		} else {
			b = kvmalloc(struct_size(b, bvec, wb->cap), GFP_KERNEL);
			if (!b) {
				folio_redirty_for_writepage(wbc, folio);
				folio_unlock(folio);
				if (!wb->again)
					wb->again = -ENOMEM;
				return -ENOMEM;
			}
		}
		b->pos = pos;
		b->len = 0;
		b->nr = 0;
		wb->cur = b;
	}
	bvec_set_page(&wb->cur->bvec[wb->cur->nr++], page, len, 0);
	wb->cur->len += len;
	folio_start_writeback(folio);
	folio_unlock(folio);
	return 0;
}

/*
 * One pass over the dirty folios wbc asks for. Returns what
 * write_cache_pages returned; wb->again tells whether folios were left
 * dirty after a transient error.
 */
static int pfs_writepages_pass(struct pfs_wb *wb)
{
	struct pfs_wb_batch *b, *tmp;
	unsigned int nofs;
	int rc;

	wb->cur = NULL;
	wb->ninflight = 0;
	wb->again = 0;
	wb->lost = false;
	wb->stored = false;
	INIT_LIST_HEAD(&wb->inflight);
	INIT_LIST_HEAD(&wb->spare);

	/* Batch allocations must not recurse into file system reclaim. */
	nofs = memalloc_nofs_save();
	rc = write_cache_pages(wb->inode->i_mapping, wb->wbc, pfs_wb_folio, wb);
	if (wb->cur)
		pfs_wb_send(wb);
	while (wb->ninflight)
		pfs_wb_reap(wb);
	memalloc_nofs_restore(nofs);
	list_for_each_entry_safe(b, tmp, &wb->spare, list)
		kvfree(b);
	if (wb->stored && !wb->again && !wb->lost)
		pfs_wb_succeeded(wb->inode);
	return rc == -ENOMEM ? 0 : rc;
}

static int pfs_writepages(struct address_space *mapping,
			  struct writeback_control *wbc)
{
	struct pfs_wb wb = { .inode = mapping->host, .wbc = wbc };
	unsigned int delay_ms = PFS_WB_BACKOFF_MIN_MS;
	u32 unit;
	int rc;

	for (;;) {
		/*
		 * One layout for a whole pass, also after an inline file's
		 * data moves (pfs_wb_follow): batches gathered for one layout
		 * must not be sent by another's chunk boundaries.
		 */
		wb.lo = pfs_layout_of(wb.inode);
		if (!wb.lo)
			return -EIO;
		/*
		 * An inline file's data fits its first chunk: a batch past it
		 * only travels to pfs-meta to be refused (PFS_E_MOVED).
		 */
		unit = wb.lo->count > 1 || pfs_layout_inline(wb.lo) ?
		       min(wb.lo->chunk_size, PFS_MAX_IO) : PFS_MAX_IO;
		wb.cap = max_t(u32, unit >> PAGE_SHIFT, 1);
		rc = pfs_writepages_pass(&wb);
		/* Background writeback: the flusher's next round retries. */
		if (rc || !wb.again || wbc->sync_mode != WB_SYNC_ALL)
			return rc;
		/* Whoever waits for the data is told it is not stored. */
		if (fatal_signal_pending(current))
			return -EINTR;
		schedule_timeout_killable(msecs_to_jiffies(delay_ms));
		delay_ms = min(delay_ms * 2, PFS_WB_BACKOFF_MAX_MS);
	}
}

/*
 * filemap_write_and_wait_range, then again while a folio of the range is
 * dirty or under writeback (a few times: writers may dirty it meanwhile).
 * A background pass that fails for a while redirties its folios just
 * before they leave writeback, and a sync writeback that found them under
 * writeback when it began only waits for them: one flush alone could
 * return with their data on no server.
 */
int pfs_write_and_wait(struct address_space *mapping, loff_t start,
		       loff_t end)
{
	int tries = 3;
	int rc;

	do {
		rc = filemap_write_and_wait_range(mapping, start, end);
	} while (!rc && --tries &&
		 filemap_range_needs_writeback(mapping, start, end));
	return rc;
}

/* Writes a dirty folio out while it stays locked (invalidate_inode_pages2). */
static int pfs_launder_folio(struct folio *folio)
{
	struct inode *inode = folio->mapping->host;
	loff_t pos = folio_pos(folio);
	loff_t size = i_size_read(inode);
	size_t len;
	struct iov_iter it;
	int rc = 0, err;

	if (!folio_clear_dirty_for_io(folio) || pos >= size)
		return 0;
	len = min_t(u64, folio_size(folio), size - pos);
	folio_start_writeback(folio);
	iov_iter_xarray(&it, ITER_SOURCE, &inode->i_mapping->i_pages, pos, len);
	rc = pfs_stripe_write_all(inode, pos, &it, len);
	if (!rc) {
		pfs_wb_succeeded(inode);
	} else {
		err = pfs_wb_verdict(inode, rc);
		if (err)
			mapping_set_error(inode->i_mapping, err);
		else
			folio_mark_dirty(folio);	/* written later */
	}
	folio_end_writeback(folio);
	return rc;
}

const struct address_space_operations pfs_aops = {
	.read_folio = pfs_read_folio,
	.readahead = pfs_readahead,
	.writepages = pfs_writepages,
	.dirty_folio = filemap_dirty_folio,
	.write_begin = pfs_write_begin,
	.write_end = pfs_write_end,
	.launder_folio = pfs_launder_folio,
	.migrate_folio = filemap_migrate_folio,
	/*
	 * Lets O_DIRECT opens through; read_iter and write_iter do the
	 * direct transfers themselves and never call it.
	 */
	.direct_IO = noop_direct_IO,
};
