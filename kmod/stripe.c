// SPDX-License-Identifier: GPL-2.0
/*
 * Striped chunk I/O against the storage targets (CHUNK_READ, CHUNK_WRITE,
 * CHUNK_SYNC), for the page cache (addr.c), O_DIRECT (direct.c) and
 * GPUDirect Storage (nvfs.c).
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

#include "stripe.h"

/* Requests of one striped transfer in flight together. */
#define PFS_IO_BATCH		64
/* Times a chunk request that lost its way is sent again at once. */
#define PFS_CHUNK_RESENDS	2

/* The layout of a regular file, NULL when unknown or unusable. */
const struct pfs_layout *pfs_layout_of(struct inode *inode)
{
	/* Published once by pfs_inode_set_layout, immutable afterwards. */
	const struct pfs_layout *lo = smp_load_acquire(&PFS_I(inode)->layout);

	if (!lo || pfs_stripe_check(lo->chunk_size, lo->count))
		return NULL;
	return lo;
}

struct pfs_node *pfs_inode_target_node(struct inode *inode, u32 target_id)
{
	struct pfs_net *net = pfs_inode_net(inode);

	if (target_id == PFS_INLINE_TARGET)
		return pfs_net_meta_node(net, PFS_I(inode)->id.owner_node);
	return pfs_net_target_node(net, target_id);
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
	r->node = pfs_inode_target_node(inode, target_id);
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
int pfs_chunk_start_io(struct inode *inode, const struct pfs_layout *lo,
		       struct pfs_chunk_req *r, u16 type, loff_t pos, u32 len,
		       const struct iov_iter *data, const struct pfs_gpu_io *gpu)
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
	bool inl = r->target_id == PFS_INLINE_TARGET;
	struct pfs_inline_written iw;
	struct pfs_chunk_written *w = &iw.written;
	int rc;

	if (inl)
		rc = pfs_decode(pfs_x_inline_written, &iw, r->rpc.reply,
				r->rpc.reply_len);
	else
		rc = pfs_decode(pfs_x_chunk_written, w, r->rpc.reply,
				r->rpc.reply_len);
	if (rc)
		return -EIO;
	if (w->length != r->len) {
		pr_warn_ratelimited("storage target wrote %u of %u bytes\n",
				    w->length, r->len);
		return -EIO;
	}
	/*
	 * The inline store recorded the size and mtime (no size report is
	 * owed for it: pfs_file_report) and sent the attributes they made.
	 * Its verifier is not kept: what it acknowledged is synced to the
	 * storage targets when the data moves there, and only then is the
	 * layout's verifier table replaced.
	 */
	if (inl)
		pfs_inode_written(r->inode, &iw.attr);
	else
		pfs_verfs_seen(PFS_I(r->inode)->verfs, r->target_index,
			       w->verifier);
	return 0;
}

/* The data written since the last sync is durable, or may be lost. */
static int pfs_chunk_sync_done(struct pfs_chunk_req *r)
{
	struct pfs_chunk_synced s;
	int rc;

	if (pfs_decode(pfs_x_chunk_synced, &s, r->rpc.reply, r->rpc.reply_len))
		return -EIO;
	if (r->target_id == PFS_INLINE_TARGET)
		return 0;
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
int pfs_chunk_finish(struct pfs_chunk_req *r)
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

/*
 * Moves what it can of the range: returns the bytes moved (a prefix) and
 * sets *errp to what stopped it short, if anything did.
 */
static size_t pfs_stripe_run(struct inode *inode, u16 type, loff_t pos,
			     struct iov_iter *iter, size_t count,
			     const struct pfs_gpu_io *gpu,
			     struct pfs_stripe_progress *progress, int *errp)
{
	const struct pfs_layout *lo = pfs_layout_of(inode);
	struct pfs_chunk_req *reqs;
	unsigned int max, n, i;
	bool moved = false;
	size_t done = 0;
	int err = 0;

	*errp = 0;
	if (!lo) {
		*errp = -EIO;
		return 0;
	}
	count = min(count, iov_iter_count(iter));
	if (!count)
		return 0;
	max = pfs_max_pieces(lo, count);
	reqs = pfs_reqs_alloc(max);
	if (!reqs) {
		*errp = -ENOMEM;
		return 0;
	}

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
			if (err)
				continue;
			done += reqs[i].len;
			if (progress && done < count)
				progress->moved(progress, done);
		}
		if (!err)
			err = start_err;
		/* The data moved off the metadata server: after it, once. */
		if (err == -EREMCHG && !moved) {
			moved = true;
			err = pfs_inode_relayout(inode);
			lo = err ? NULL : pfs_layout_of(inode);
			if (!err && !lo)
				err = -EIO;
		}
	}
	kvfree(reqs);
	iov_iter_advance(iter, done);
	if (err == -EREMCHG)
		err = -EIO;	/* moved again: the server contradicts itself */
	*errp = err;
	return done;
}

ssize_t pfs_stripe_batch(struct inode *inode, u16 type, loff_t pos,
			 struct iov_iter *iter, size_t count,
			 const struct pfs_gpu_io *gpu)
{
	int err;
	size_t done = pfs_stripe_run(inode, type, pos, iter, count, gpu, NULL,
				     &err);

	return done ? done : err;
}

ssize_t pfs_stripe_read_progress(struct inode *inode, loff_t pos,
				 struct iov_iter *iter, size_t count,
				 struct pfs_stripe_progress *progress)
{
	int err;
	size_t done = pfs_stripe_run(inode, PFS_MSG_CHUNK_READ, pos, iter,
				     count, NULL, progress, &err);

	return done ? done : err;
}

/*
 * Writeback wants the whole range stored or the error that stopped it: a
 * target that failed over amid the range is retried, not taken for lost.
 */
int pfs_stripe_write_all(struct inode *inode, loff_t pos,
			 struct iov_iter *iter, size_t count)
{
	int err;
	size_t done = pfs_stripe_run(inode, PFS_MSG_CHUNK_WRITE, pos, iter,
				     count, NULL, NULL, &err);

	if (done == count)
		return 0;
	return err ?: -EIO;
}

/*
 * CHUNK_SYNC to every target that holds a byte of the file's first i_size
 * bytes (a target never written answers as well: its chunk file is absent).
 */
static int pfs_stripe_sync_once(struct inode *inode)
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

int pfs_stripe_sync(struct inode *inode)
{
	int rc = pfs_stripe_sync_once(inode);

	/* The data moved off the metadata server: sync it where it is. */
	if (rc == -EREMCHG) {
		rc = pfs_inode_relayout(inode);
		if (!rc)
			rc = pfs_stripe_sync_once(inode);
	}
	return rc == -EREMCHG ? -EIO : rc;
}
