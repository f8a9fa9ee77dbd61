// SPDX-License-Identifier: GPL-2.0
/*
 * The data path against the storage targets: striped chunk reads and
 * writes (CHUNK_READ, CHUNK_WRITE, CHUNK_SYNC), the page cache
 * (address_space_operations); direct.c hands it O_DIRECT's user memory.
 *
 * A transfer is cut into pieces that each stay inside one chunk and within
 * PFS_MAX_IO (with a single target the chunk file is the file, so only
 * PFS_MAX_IO cuts), exactly as libpfs's plan_io does. All pieces of a batch
 * are started before the first wait, so every target touched works at the
 * same time. The transport copies straight between the socket and the
 * caller's memory (page cache folios, pinned user pages): no bounce
 * buffers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/uio.h>
#include <linux/writeback.h>

#include "pfs.h"

/* Requests of one striped transfer in flight together. */
#define PFS_IO_BATCH		64
/* Writeback batches (one CHUNK_WRITE each) in flight per writepages. */
#define PFS_WB_INFLIGHT		8
/* Times a chunk request that lost its way is sent again at once. */
#define PFS_CHUNK_RESENDS	2
/* Room for an encoded pfs_chunk_io (32 bytes) or pfs_chunk_ref (20). */
#define PFS_CHUNK_HDR_MAX	48

/* One chunk request and the part of the caller's buffer it moves. */
struct pfs_chunk_req {
	struct pfs_rpc rpc;
	struct pfs_node *node;
	struct inode *inode;
	u32 target_index;	/* in the layout: whose write verifier */
	u32 target_id;
	struct iov_iter data;	/* the piece's bytes, left untouched */
	struct iov_iter wire;	/* the copy the transport consumes */
	loff_t pos;		/* file offset of the piece */
	u32 len;
	u8 hdr[PFS_CHUNK_HDR_MAX];
};

/* The layout of a regular file, NULL when unknown or unusable. */
static const struct pfs_layout *pfs_layout_of(struct inode *inode)
{
	/* Published once by pfs_inode_set_layout, immutable afterwards. */
	const struct pfs_layout *lo = smp_load_acquire(&PFS_I(inode)->layout);

	if (!lo || pfs_stripe_check(lo->chunk_size, lo->count))
		return NULL;
	return lo;
}

/* Length of the piece of a transfer of left bytes that starts at pos. */
static u32 pfs_piece_len(const struct pfs_layout *lo, loff_t pos, u64 left)
{
	u64 len = min_t(u64, left, PFS_MAX_IO);

	if (lo->count > 1)
		len = min_t(u64, len,
			    lo->chunk_size - (pos & (lo->chunk_size - 1)));
	return len;
}

/* Most pieces a transfer of count bytes can be cut into. */
static unsigned int pfs_max_pieces(const struct pfs_layout *lo, size_t count)
{
	u32 unit = lo->count > 1 ? min(lo->chunk_size, PFS_MAX_IO) : PFS_MAX_IO;

	return min_t(u64, PFS_IO_BATCH, div_u64(count, unit) + 2);
}

/* Sends r (header encoded, data iterators set) to the target's server. */
static int pfs_chunk_send(struct inode *inode, struct pfs_chunk_req *r,
			  u32 target_id)
{
	int rc;

	/* Freed on the server with an open our session lost (file.c). */
	if (test_bit(PFS_INO_GONE, &PFS_I(inode)->flags))
		return -ESTALE;
	r->target_id = target_id;
	r->node = pfs_net_target_node(pfs_inode_net(inode), target_id);
	if (IS_ERR_OR_NULL(r->node)) {
		rc = r->node ? PTR_ERR(r->node) : -ENODEV;
		r->node = NULL;
		return rc;
	}
	rc = pfs_rpc_start(r->node, &r->rpc);
	if (rc) {
		pfs_rpc_release(&r->rpc);
		pfs_node_put(r->node);
		r->node = NULL;
	}
	return rc;
}

/*
 * Starts a CHUNK_READ or CHUNK_WRITE of len bytes at file offset pos; the
 * bytes are the first len of data (which is not advanced).
 */
static int pfs_chunk_start_io(struct inode *inode, const struct pfs_layout *lo,
			      struct pfs_chunk_req *r, u16 type, loff_t pos,
			      u32 len, const struct iov_iter *data,
			      const struct pfs_gpu_io *gpu)
{
	struct pfs_stripe_pos sp;
	struct pfs_chunk_io io = {};
	struct pfs_xdr x;

	pfs_stripe_locate(lo->chunk_size, lo->count, pos, &sp);
	io.chunk.file = PFS_I(inode)->id;
	io.chunk.target_id = lo->targets[sp.target_index];
	io.offset = sp.chunk_file_offset;
	io.length = len;
	pfs_xdr_init_encode(&x, r->hdr, sizeof(r->hdr));
	if (pfs_x_chunk_io(&x, &io))
		return -EINVAL;

	memset(&r->rpc, 0, sizeof(r->rpc));
	r->rpc.type = type;
	r->rpc.req = r->hdr;
	r->rpc.req_len = x.pos;
	r->inode = inode;
	r->target_index = sp.target_index;
	r->pos = pos;
	r->len = len;
	r->data = *data;
	iov_iter_truncate(&r->data, len);
	r->wire = r->data;
	r->rpc.bulk = true;
	r->rpc.gpu = gpu;
	if (gpu)
		atomic64_inc(&pfs_net_gpu_stats(pfs_inode_net(inode))->requests);
	if (type == PFS_MSG_CHUNK_WRITE)
		r->rpc.req_data = &r->wire;
	else
		r->rpc.reply_data = &r->wire;
	return pfs_chunk_send(inode, r, io.chunk.target_id);
}

static int pfs_chunk_start_sync(struct inode *inode, struct pfs_chunk_req *r,
				u32 target_index, u32 target_id)
{
	struct pfs_chunk_ref ref = { .file = PFS_I(inode)->id,
				     .target_id = target_id };
	struct pfs_xdr x;

	pfs_xdr_init_encode(&x, r->hdr, sizeof(r->hdr));
	if (pfs_x_chunk_ref(&x, &ref))
		return -EINVAL;
	memset(&r->rpc, 0, sizeof(r->rpc));
	r->rpc.type = PFS_MSG_CHUNK_SYNC;
	r->rpc.req = r->hdr;
	r->rpc.req_len = x.pos;
	r->inode = inode;
	r->target_index = target_index;
	r->len = 0;
	return pfs_chunk_send(inode, r, target_id);
}

/* A CHUNK_READ answered with fewer bytes hit the chunk file's end: zeroes. */
static int pfs_chunk_read_done(struct pfs_chunk_req *r)
{
	u32 got = r->rpc.data_len;

	if (got > r->len || r->rpc.reply_len) {
		pr_warn_ratelimited("storage target sent %u bytes for a read of %u\n",
				    got + r->rpc.reply_len, r->len);
		return -EIO;
	}
	if (got < r->len && r->rpc.gpu) {
		/* Asked to send zeros (PFS_FLAG_ZERO_FILL): the CPU cannot. */
		pr_warn_ratelimited("storage target sent %u of %u bytes into GPU memory\n",
				    got, r->len);
		return -EIO;
	}
	if (got < r->len) {
		iov_iter_advance(&r->data, got);
		if (iov_iter_zero(r->len - got, &r->data) != r->len - got)
			return -EFAULT;
	}
	return 0;
}

static int pfs_chunk_write_done(struct pfs_chunk_req *r)
{
	struct pfs_chunk_written w;

	if (pfs_decode(pfs_x_chunk_written, &w, r->rpc.reply,
		       r->rpc.reply_len))
		return -EIO;
	if (w.length != r->len) {
		pr_warn_ratelimited("storage target wrote %u of %u bytes\n",
				    w.length, r->len);
		return -EIO;
	}
	pfs_verfs_seen(PFS_I(r->inode)->verfs, r->target_index, w.verifier);
	return 0;
}

/* The data written since the last sync is durable, or may be lost. */
static int pfs_chunk_sync_done(struct pfs_chunk_req *r)
{
	struct pfs_chunk_synced s;
	int rc;

	if (pfs_decode(pfs_x_chunk_synced, &s, r->rpc.reply, r->rpc.reply_len))
		return -EIO;
	rc = pfs_verfs_synced(PFS_I(r->inode)->verfs, r->target_index,
			      s.verifier);
	if (rc)
		pr_warn_ratelimited("inode %llu: a storage target restarted before data written to it was synced: reporting EIO\n",
				    PFS_I(r->inode)->id.ino);
	return rc;
}

/*
 * The same request once more, from scratch (its header is still in
 * r->hdr): chunk requests are idempotent, and the node sends it by another
 * rail when the one it went by failed.
 */
static int pfs_chunk_resend(struct pfs_chunk_req *r)
{
	struct pfs_rpc old = r->rpc;

	pfs_rpc_release(&r->rpc);
	pfs_node_put(r->node);
	r->node = NULL;
	memset(&r->rpc, 0, sizeof(r->rpc));
	r->rpc.type = old.type;
	r->rpc.req = old.req;
	r->rpc.req_len = old.req_len;
	r->rpc.bulk = old.bulk;
	r->rpc.gpu = old.gpu;
	r->wire = r->data;
	if (old.req_data)
		r->rpc.req_data = &r->wire;
	if (old.reply_data)
		r->rpc.reply_data = &r->wire;
	return pfs_chunk_send(r->inode, r, r->target_id);
}

/* Waits for a started request and checks its reply; frees its resources. */
static int pfs_chunk_finish(struct pfs_chunk_req *r)
{
	int tries = PFS_CHUNK_RESENDS;
	int rc = pfs_rpc_wait(&r->rpc);

	/*
	 * The way there failed (a rail went down, a connection was lost), not
	 * the server: once or twice more, by whatever way works now. After a
	 * timeout only when it went by a rail and another way is open: a
	 * server that does not answer on its only way gets the mount's
	 * timeout once, not once per try.
	 */
	while (rc && r->rpc.error && pfs_net_transient(rc) &&
	       (rc != -ETIMEDOUT || pfs_node_failover(r->node, &r->rpc)) &&
	       tries-- &&
	       !fatal_signal_pending(current) &&
	       !pfs_net_check(pfs_inode_net(r->inode))) {
		rc = pfs_chunk_resend(r);
		if (rc)
			return rc;	/* the send cleaned up */
		rc = pfs_rpc_wait(&r->rpc);
	}

	if (!rc && r->rpc.type == PFS_MSG_CHUNK_READ)
		rc = pfs_chunk_read_done(r);
	else if (!rc && r->rpc.type == PFS_MSG_CHUNK_WRITE)
		rc = pfs_chunk_write_done(r);
	else if (!rc && r->rpc.type == PFS_MSG_CHUNK_SYNC)
		rc = pfs_chunk_sync_done(r);
	pfs_rpc_release(&r->rpc);
	pfs_node_put(r->node);
	r->node = NULL;
	return rc;
}

/*
 * Room for n requests (tens of KiB at most). Callers hold folio locks or
 * run in writeback: no recursion into file system reclaim.
 */
static struct pfs_chunk_req *pfs_reqs_alloc(unsigned int n)
{
	unsigned int nofs = memalloc_nofs_save();
	struct pfs_chunk_req *reqs;

	reqs = kvmalloc_array(n, sizeof(*reqs), GFP_KERNEL);
	memalloc_nofs_restore(nofs);
	return reqs;
}

ssize_t pfs_stripe_batch(struct inode *inode, u16 type, loff_t pos,
			 struct iov_iter *iter, size_t count,
			 const struct pfs_gpu_io *gpu)
{
	const struct pfs_layout *lo = pfs_layout_of(inode);
	struct pfs_chunk_req *reqs;
	unsigned int max, n, i;
	size_t done = 0;
	int err = 0;

	if (!lo)
		return -EIO;
	count = min(count, iov_iter_count(iter));
	if (!count)
		return 0;
	max = pfs_max_pieces(lo, count);
	reqs = pfs_reqs_alloc(max);
	if (!reqs)
		return -ENOMEM;

	while (!err && done < count) {
		struct iov_iter cur = *iter;
		size_t off = done;
		int start_err = 0;

		iov_iter_advance(&cur, done);
		for (n = 0; n < max && off < count; n++) {
			u32 len = pfs_piece_len(lo, pos + off, count - off);

			start_err = pfs_chunk_start_io(inode, lo, &reqs[n],
						       type, pos + off, len,
						       &cur, gpu);
			if (start_err)
				break;
			iov_iter_advance(&cur, len);
			off += len;
		}
		/* Only a prefix counts: a later piece cannot fill a gap. */
		for (i = 0; i < n; i++) {
			int rc = pfs_chunk_finish(&reqs[i]);

			if (rc && !err)
				err = rc;
			if (!err)
				done += reqs[i].len;
		}
		if (!err)
			err = start_err;
	}
	kvfree(reqs);
	iov_iter_advance(iter, done);
	return done ? done : err;
}

/*
 * CHUNK_SYNC to every target that holds a byte of the file's first i_size
 * bytes (a target never written answers as well: its chunk file is absent).
 */
int pfs_stripe_sync(struct inode *inode)
{
	const struct pfs_layout *lo = pfs_layout_of(inode);
	u64 size = i_size_read(inode);
	struct pfs_chunk_req *reqs;
	unsigned int next = 0, n, i;
	int err = 0;

	if (!lo)
		return -EIO;
	reqs = pfs_reqs_alloc(min_t(u32, lo->count, PFS_IO_BATCH));
	if (!reqs)
		return -ENOMEM;
	while (!err && next < lo->count) {
		for (n = 0; n < PFS_IO_BATCH && next < lo->count; next++) {
			if (!pfs_stripe_target_size(lo->chunk_size, lo->count,
						    next, size))
				continue;
			err = pfs_chunk_start_sync(inode, &reqs[n], next,
						   lo->targets[next]);
			if (err)
				break;
			n++;
		}
		for (i = 0; i < n; i++) {
			int rc = pfs_chunk_finish(&reqs[i]);

			if (!err)
				err = rc;
		}
	}
	kvfree(reqs);
	return err;
}

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
 * One striped read for the window [pos, pos + len) of mapping, its pieces
 * on all targets in flight together, straight into the window's locked
 * folios; then each folio that got its data is marked uptodate, and all
 * are unlocked (those left without data are read again by read_folio).
 */
static void pfs_read_window(struct inode *inode, loff_t pos, size_t len,
			    struct folio **folios, unsigned int nr)
{
	struct address_space *mapping = inode->i_mapping;
	loff_t size = i_size_read(inode);
	size_t want = pos < size ? min_t(u64, len, size - pos) : 0;
	loff_t good_end = pos + len;	/* folios before it are complete */
	struct iov_iter it;
	unsigned int i;

	if (want) {
		ssize_t n;

		iov_iter_xarray(&it, ITER_DEST, &mapping->i_pages, pos, want);
		n = pfs_stripe_batch(inode, PFS_MSG_CHUNK_READ, pos, &it, want,
				     NULL);
		if (n < (ssize_t)want)
			good_end = pos + max_t(ssize_t, n, 0);
	}
	if (want < len && good_end == pos + len) {
		iov_iter_xarray(&it, ITER_DEST, &mapping->i_pages, pos + want,
				len - want);
		iov_iter_zero(len - want, &it);
	}
	/* After the last unlock the inode may go: touch nothing after it. */
	for (i = 0; i < nr; i++) {
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

int pfs_addr_init(void)
{
	/* Unbound: windows of many files and readers in flight at once. */
	pfs_ra_wq = alloc_workqueue("pfs_readahead", WQ_UNBOUND, 0);
	return pfs_ra_wq ? 0 : -ENOMEM;
}

void pfs_addr_exit(void)
{
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

static void pfs_wb_end(struct pfs_wb *wb, struct pfs_wb_batch *b, int rc)
{
	struct inode *inode = wb->inode;
	unsigned int i;
	int err = 0;

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

	wb.lo = pfs_layout_of(wb.inode);
	if (!wb.lo)
		return -EIO;
	unit = wb.lo->count > 1 ? min(wb.lo->chunk_size, PFS_MAX_IO) :
				  PFS_MAX_IO;
	wb.cap = max_t(u32, unit >> PAGE_SHIFT, 1);

	for (;;) {
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

/* Writes a dirty folio out while it stays locked (invalidate_inode_pages2). */
static int pfs_launder_folio(struct folio *folio)
{
	struct inode *inode = folio->mapping->host;
	loff_t pos = folio_pos(folio);
	loff_t size = i_size_read(inode);
	size_t len;
	struct iov_iter it;
	ssize_t n;
	int rc = 0, err;

	if (!folio_clear_dirty_for_io(folio) || pos >= size)
		return 0;
	len = min_t(u64, folio_size(folio), size - pos);
	folio_start_writeback(folio);
	iov_iter_xarray(&it, ITER_SOURCE, &inode->i_mapping->i_pages, pos, len);
	n = pfs_stripe_batch(inode, PFS_MSG_CHUNK_WRITE, pos, &it, len,
			     NULL);
	if (n == len) {
		pfs_wb_succeeded(inode);
	} else {
		rc = n < 0 ? n : -EIO;
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
