// SPDX-License-Identifier: GPL-2.0
/*
 * The space of regular files: fallocate(2) (FALLOCATE to the metadata
 * server, which applies it to the chunk files), SEEK_DATA and SEEK_HOLE
 * answered by the storage targets (CHUNK_SEEK), st_blocks from the chunk
 * files (CHUNK_STAT) and copy_file_range(2) (CHUNK_COPY where a piece's
 * source and destination lie on the same target, a striped read and write
 * otherwise).
 *
 * Each target's chunk file maps its bytes to file offsets in order, so a
 * question about a file range is one question per target, in its chunk
 * file's offsets (pfs_stripe_target_from), and its answer maps back with
 * pfs_stripe_file_offset: the first data (or hole) of the file is the
 * least of the targets' answers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/uio.h>

#include "pfs.h"

/* One request to a storage target, started before the others are waited. */
struct pfs_tcall {
	struct pfs_rpc rpc;
	struct pfs_node *node;
	u8 req[64];		/* the largest body here: pfs_chunk_copy */
};

/* Bytes moved by one striped read and write of copy_file_range. */
#define PFS_COPY_BOUNCE		(1u << 20)

static_assert(PFS_FALLOC_KEEP_SIZE == FALLOC_FL_KEEP_SIZE);
static_assert(PFS_FALLOC_PUNCH_HOLE == FALLOC_FL_PUNCH_HOLE);
static_assert(PFS_FALLOC_ZERO_RANGE == FALLOC_FL_ZERO_RANGE);
static_assert(PFS_SEEK_DATA == SEEK_DATA && PFS_SEEK_HOLE == SEEK_HOLE);

/* The layout of a regular file, asked for (GET_LAYOUT) when unknown. */
static const struct pfs_layout *pfs_need_layout(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	/* Pairs with the release that publishes it (pfs_inode_set_layout). */
	const struct pfs_layout *lo = smp_load_acquire(&pi->layout);
	struct pfs_layout *got;
	int rc;

	if (lo)
		return lo;
	got = kzalloc(sizeof(*got), GFP_KERNEL);
	if (!got)
		return ERR_PTR(-ENOMEM);
	rc = pfs_fetch_layout(inode, got);
	if (!rc)
		rc = pfs_inode_set_layout(inode, got);
	kfree(got);
	if (rc)
		return ERR_PTR(rc);
	/* Published once, by us or by a racing caller. */
	lo = smp_load_acquire(&pi->layout);
	return lo ? lo : ERR_PTR(-EIO);
}

/*
 * Starts the request type with the body msg (encoded by xfn) to the
 * server of target_id; pfs_tcall_end waits for it (when started) and
 * frees it.
 */
#define pfs_tcall_start(inode, c, target_id, type_, xfn, msg)		\
({									\
	struct pfs_xdr __x;						\
	int __rc;							\
	memset(&(c)->rpc, 0, sizeof((c)->rpc));				\
	(c)->node = NULL;						\
	pfs_xdr_init_encode(&__x, (c)->req, sizeof((c)->req));		\
	__rc = xfn(&__x, (msg)) ? -EINVAL : 0;				\
	if (!__rc) {							\
		(c)->rpc.type = (type_);				\
		(c)->rpc.req = (c)->req;				\
		(c)->rpc.req_len = __x.pos;				\
		__rc = pfs_tcall_send((inode), (c), (target_id));	\
	}								\
	__rc;								\
})

static int pfs_tcall_send(struct inode *inode, struct pfs_tcall *c,
			  u32 target_id)
{
	struct pfs_node *node;
	int rc;

	node = pfs_inode_target_node(inode, target_id);
	if (IS_ERR_OR_NULL(node))
		return node ? PTR_ERR(node) : -ENODEV;
	rc = pfs_rpc_start(node, &c->rpc);
	if (rc) {
		pfs_rpc_release(&c->rpc);
		pfs_node_put(node);
		return rc;
	}
	c->node = node;
	return 0;
}

/* Waits for a started call: 0 or -errno; the reply stays until _put. */
static int pfs_tcall_wait(struct pfs_tcall *c)
{
	return c->node ? pfs_rpc_wait(&c->rpc) : -EIO;
}

static void pfs_tcall_put(struct pfs_tcall *c)
{
	if (!c->node)
		return;
	pfs_rpc_release(&c->rpc);
	pfs_node_put(c->node);
	c->node = NULL;
}

/* ---- st_blocks ---- */

/*
 * st_blocks is the sum of what the file's chunk files take on the targets'
 * disks. The metadata server counts it after a change and sends it with
 * the attributes (pfs_inode_update); when it has no count yet, or this
 * client has writes the server does not know of, the targets are asked
 * here at the first stat after the file changed as far as this client
 * knows (its own writes, truncates and fallocates, or a size or mtime from
 * the server that moved); other stats answer the value cached. Dirty
 * pages are written back first, so that they count.
 */
int pfs_refresh_blocks(struct inode *inode)
{
	unsigned long *flags = &PFS_I(inode)->flags;
	const struct pfs_layout *lo;
	struct pfs_tcall *calls;
	u64 total = 0;
	u32 i, started = 0;
	int rc = 0;

	if (!test_and_clear_bit(PFS_INO_BLOCKS_STALE, flags))
		return 0;
	rc = pfs_write_and_wait(inode->i_mapping, 0, LLONG_MAX);
	lo = rc ? ERR_PTR(rc) : pfs_need_layout(inode);
	if (IS_ERR(lo)) {
		rc = PTR_ERR(lo);
		goto out;
	}
	calls = kvcalloc(lo->count, sizeof(*calls), GFP_KERNEL);
	if (!calls) {
		rc = -ENOMEM;
		goto out;
	}
	for (; started < lo->count; started++) {
		struct pfs_chunk_ref ref = {
			.file = PFS_I(inode)->id,
			.target_id = lo->targets[started],
		};

		rc = pfs_tcall_start(inode, &calls[started], ref.target_id,
				     PFS_MSG_CHUNK_STAT, pfs_x_chunk_ref, &ref);
		if (rc)
			break;
	}
	for (i = 0; i < started; i++) {
		struct pfs_chunk_stat st;
		int err = pfs_tcall_wait(&calls[i]);

		if (!err)
			err = pfs_decode(pfs_x_chunk_stat, &st,
					 calls[i].rpc.reply,
					 calls[i].rpc.reply_len);
		if (!err)
			total += st.allocated;
		if (!rc)
			rc = err;
		pfs_tcall_put(&calls[i]);
	}
	kvfree(calls);
	if (!rc) {
		spin_lock(&inode->i_lock);
		inode->i_blocks = total >> 9;
		spin_unlock(&inode->i_lock);
	}
out:
	if (rc == -EREMCHG && !pfs_inode_relayout(inode)) {
		/* An inline file's data moved: counted where it is next time. */
		set_bit(PFS_INO_BLOCKS_STALE, flags);
		return 0;
	}
	if (rc) {
		set_bit(PFS_INO_BLOCKS_STALE, flags);
		pr_warn_ratelimited("ino %llu: st_blocks not refreshed: %d\n",
				    PFS_I(inode)->id.ino, rc);
	}
	return rc;
}

/* ---- SEEK_DATA, SEEK_HOLE ---- */

/*
 * The first file offset at or after offset where data (or a hole) starts,
 * by the targets; U64_MAX when no target has data there.
 */
static int pfs_seek_targets(struct inode *inode, const struct pfs_layout *lo,
			    u8 what, u64 offset, u64 *found)
{
	struct pfs_tcall *calls;
	u32 i, started = 0;
	int rc = 0;

	calls = kvcalloc(lo->count, sizeof(*calls), GFP_KERNEL);
	if (!calls)
		return -ENOMEM;
	*found = U64_MAX;
	for (; started < lo->count; started++) {
		struct pfs_chunk_seek m = {
			.chunk = { .file = PFS_I(inode)->id,
				   .target_id = lo->targets[started] },
			.offset = pfs_stripe_target_from(lo->chunk_size,
							 lo->count, started,
							 offset),
			.what = what,
		};

		rc = pfs_tcall_start(inode, &calls[started],
				     m.chunk.target_id, PFS_MSG_CHUNK_SEEK,
				     pfs_x_chunk_seek, &m);
		if (rc)
			break;
	}
	for (i = 0; i < started; i++) {
		struct pfs_chunk_seek_reply r;
		int err = pfs_tcall_wait(&calls[i]);

		if (!err)
			err = pfs_decode(pfs_x_chunk_seek_reply, &r,
					 calls[i].rpc.reply,
					 calls[i].rpc.reply_len);
		if (!err && r.found) {
			u64 at = pfs_stripe_file_offset(lo->chunk_size,
							lo->count, i,
							r.offset);

			if (at < offset)
				err = -EIO;	/* it sought backwards */
			else
				*found = min(*found, at);
		}
		if (!rc)
			rc = err;
		pfs_tcall_put(&calls[i]);
	}
	kvfree(calls);
	return rc;
}

loff_t pfs_seek_data_hole(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);
	u8 what = whence == SEEK_DATA ? PFS_SEEK_DATA : PFS_SEEK_HOLE;
	const struct pfs_layout *lo;
	u64 found;
	loff_t size;
	int rc;

	/* What is cached dirty must be on the targets to be seen there. */
	rc = pfs_file_check(file) ?:
	     pfs_write_and_wait(inode->i_mapping, 0, LLONG_MAX) ?:
	     pfs_revalidate_inode(inode, false);
	if (rc)
		return rc;
	size = i_size_read(inode);
	if (offset < 0 || offset >= size)
		return -ENXIO;
	lo = pfs_need_layout(inode);
	if (IS_ERR(lo))
		return PTR_ERR(lo);
	rc = pfs_seek_targets(inode, lo, what, offset, &found);
	if (rc == -EREMCHG) {
		/* An inline file's data moved meanwhile: ask where it is. */
		rc = pfs_inode_relayout(inode);
		lo = rc ? ERR_PTR(rc) : pfs_need_layout(inode);
		rc = IS_ERR(lo) ? PTR_ERR(lo) :
		     pfs_seek_targets(inode, lo, what, offset, &found);
		if (rc == -EREMCHG)
			rc = -EIO;	/* moved again: contradictory */
	}
	if (rc)
		return rc;
	if (whence == SEEK_DATA && found >= size)
		return -ENXIO;
	/* The end of the file is a hole, whatever lies past it. */
	if (found > size)
		found = size;
	return vfs_setpos(file, found, inode->i_sb->s_maxbytes);
}

/* ---- fallocate ---- */

static int pfs_send_fallocate(struct inode *inode, int mode, loff_t offset,
			      loff_t len)
{
	struct pfs_fallocate m = { .id = PFS_I(inode)->id, .mode = mode,
				   .offset = offset, .length = len };
	struct pfs_attr attr;
	int rc;

	rc = pfs_meta_attr_msg(inode->i_sb, &m.id, PFS_MSG_FALLOCATE,
			       pfs_x_fallocate, &m, &attr, NULL);
	return rc ? rc : pfs_inode_update(inode, &attr);
}

long pfs_fallocate(struct file *file, int mode, loff_t offset, loff_t len)
{
	struct inode *inode = file_inode(file);
	struct address_space *mapping = inode->i_mapping;
	bool drops = mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE);
	loff_t end = offset + len;
	long rc;

	if (!S_ISREG(inode->i_mode))
		return -ENODEV;
	/* COLLAPSE_RANGE, INSERT_RANGE, UNSHARE_RANGE: not in PFS. */
	if (pfs_falloc_mode_check(mode))
		return -EOPNOTSUPP;
	if (offset < 0 || len <= 0 || end > PFS_MAX_FILE_OFFSET)
		return offset < 0 || len <= 0 ? -EINVAL : -EFBIG;
	/* An open our session lost, on a file now gone: ESTALE. */
	rc = pfs_file_check(file);
	if (rc)
		return rc;

	inode_lock(inode);
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > i_size_read(inode)) {
		rc = inode_newsize_ok(inode, end);
		if (rc)
			goto out;
	}
	rc = file_remove_privs(file);
	if (rc)
		goto out;
	/* No page faults bring the range back while it changes. */
	filemap_invalidate_lock(mapping);
	if (drops) {
		/*
		 * Dirty pages of the range go to the targets first, or their
		 * writeback would put the old data back over the hole; then
		 * the cache forgets the range.
		 */
		rc = pfs_write_and_wait(mapping, offset, end - 1);
		if (rc)
			goto out_unlock;
		truncate_pagecache_range(inode, offset, end - 1);
	}
	/* The server compares with the size: ours, written, must be known. */
	rc = pfs_report_size(inode);
	if (!rc)
		rc = pfs_send_fallocate(inode, mode, offset, len);
	if (drops)
		truncate_pagecache_range(inode, offset, end - 1);
	set_bit(PFS_INO_BLOCKS_STALE, &PFS_I(inode)->flags);
out_unlock:
	filemap_invalidate_unlock(mapping);
out:
	inode_unlock(inode);
	return rc;
}

/* ---- copy_file_range ---- */

/* Without a copy of our own, the VFS's: splice through the page cache. */
static ssize_t pfs_generic_copy(struct file *in, loff_t pos_in,
				struct file *out, loff_t pos_out, size_t len,
				unsigned int flags)
{
#ifdef PFS_HAVE_GENERIC_COPY_FILE_RANGE
	return generic_copy_file_range(in, pos_in, out, pos_out, len, flags);
#else
	return splice_copy_file_range(in, pos_in, out, pos_out, len);
#endif
}

/* A piece whose source and destination lie on one target: copied there. */
static int pfs_copy_on_target(struct inode *src, struct inode *dst,
			      u32 target_id, u32 dst_index,
			      const struct pfs_stripe_pos *from,
			      const struct pfs_stripe_pos *to, u32 len)
{
	struct pfs_chunk_copy m = {
		.src = { .file = PFS_I(src)->id, .target_id = target_id },
		.dst = PFS_I(dst)->id,
		.src_offset = from->chunk_file_offset,
		.dst_offset = to->chunk_file_offset,
		.length = len,
	};
	struct pfs_chunk_written w;
	struct pfs_tcall c;
	int rc;

	rc = pfs_tcall_start(dst, &c, target_id, PFS_MSG_CHUNK_COPY,
			     pfs_x_chunk_copy, &m);
	if (rc)
		return rc;
	rc = pfs_tcall_wait(&c);
	if (!rc)
		rc = pfs_decode(pfs_x_chunk_written, &w, c.rpc.reply,
				c.rpc.reply_len);
	if (!rc && w.length != len)
		rc = -EIO;
	if (!rc)
		pfs_verfs_seen(PFS_I(dst)->verfs, dst_index, w.verifier);
	pfs_tcall_put(&c);
	return rc;
}

/* Pages of the bounce buffer of a copy between targets. */
struct pfs_bounce {
	struct bio_vec bvec[PFS_COPY_BOUNCE / PAGE_SIZE];
	unsigned int npages;
};

static void pfs_bounce_free(struct pfs_bounce *b)
{
	while (b->npages)
		__free_page(b->bvec[--b->npages].bv_page);
	kfree(b);
}

static struct pfs_bounce *pfs_bounce_alloc(void)
{
	struct pfs_bounce *b = kzalloc(sizeof(*b), GFP_KERNEL);

	if (!b)
		return NULL;
	for (; b->npages < ARRAY_SIZE(b->bvec); b->npages++) {
		struct page *page = alloc_page(GFP_KERNEL);

		if (!page) {
			pfs_bounce_free(b);
			return NULL;
		}
		bvec_set_page(&b->bvec[b->npages], page, PAGE_SIZE, 0);
	}
	return b;
}

/* A piece read from the source's targets and written to the destination's. */
static int pfs_copy_through(struct inode *src, struct inode *dst,
			    struct pfs_bounce **bounce, loff_t pos_in,
			    loff_t pos_out, u32 len)
{
	struct iov_iter it;
	ssize_t n;

	if (!*bounce) {
		*bounce = pfs_bounce_alloc();
		if (!*bounce)
			return -ENOMEM;
	}
	iov_iter_bvec(&it, READ, (*bounce)->bvec, (*bounce)->npages, len);
	n = pfs_stripe_read(src, pos_in, &it);
	if (n != len)
		return n < 0 ? n : -EIO;
	iov_iter_bvec(&it, WRITE, (*bounce)->bvec, (*bounce)->npages, len);
	n = pfs_stripe_write(dst, pos_out, &it);
	if (n != len)
		return n < 0 ? n : -EIO;
	return 0;
}

/* The longest piece at pos that stays in one chunk of the layout. */
static u64 pfs_copy_piece(const struct pfs_layout *lo,
			  const struct pfs_stripe_pos *p, u64 left)
{
	if (lo->count > 1)
		left = min_t(u64, left, lo->chunk_size - p->offset_in_chunk);
	return left;
}

/* Copies len bytes between the storage targets; returns the bytes copied. */
static ssize_t pfs_copy_chunks(struct inode *src, struct inode *dst,
			       loff_t pos_in, loff_t pos_out, size_t len)
{
	const struct pfs_layout *li = pfs_need_layout(src);
	const struct pfs_layout *lo = pfs_need_layout(dst);
	struct pfs_bounce *bounce = NULL;
	size_t done = 0;
	int rc = 0;

	if (IS_ERR(li) || IS_ERR(lo))
		return IS_ERR(li) ? PTR_ERR(li) : PTR_ERR(lo);
	while (done < len) {
		struct pfs_stripe_pos from, to;
		u32 sid, did;
		u64 n;

		pfs_stripe_locate(li->chunk_size, li->count, pos_in + done,
				  &from);
		pfs_stripe_locate(lo->chunk_size, lo->count, pos_out + done,
				  &to);
		n = pfs_copy_piece(li, &from, len - done);
		n = pfs_copy_piece(lo, &to, n);
		sid = li->targets[from.target_index];
		did = lo->targets[to.target_index];
		/* The inline store copies nothing: its files move out. */
		if (sid == did && sid != PFS_INLINE_TARGET) {
			n = min_t(u64, n, PFS_MAX_IO);
			rc = pfs_copy_on_target(src, dst, sid, to.target_index,
						&from, &to, n);
		} else {
			n = min_t(u64, n, PFS_COPY_BOUNCE);
			rc = pfs_copy_through(src, dst, &bounce, pos_in + done,
					      pos_out + done, n);
		}
		if (rc)
			break;
		done += n;
	}
	if (bounce)
		pfs_bounce_free(bounce);
	return done ? done : rc;
}

ssize_t pfs_copy_file_range(struct file *in, loff_t pos_in,
			    struct file *out, loff_t pos_out, size_t len,
			    unsigned int flags)
{
	struct inode *src = file_inode(in);
	struct inode *dst = file_inode(out);
	loff_t size;
	ssize_t rc;

	if (flags || src->i_sb != dst->i_sb ||
	    in->f_op != out->f_op)
		return pfs_generic_copy(in, pos_in, out, pos_out, len, flags);
	rc = pfs_file_check(in) ?: pfs_file_check(out) ?:
	     pfs_revalidate_inode(src, false);
	if (rc)
		return rc;
	lock_two_nondirectories(src, dst);
	/* The source's own dirty pages count: from the targets on. */
	rc = pfs_write_and_wait(src->i_mapping, pos_in, pos_in + len - 1);
	size = i_size_read(src);
	if (rc || pos_in >= size)
		goto out;
	len = min_t(u64, len, size - pos_in);
	rc = file_remove_privs(out) ?: file_update_time(out);
	if (rc)
		goto out;
	/* Then the destination's range, dirty or clean, leaves its cache. */
	rc = pfs_write_and_wait(dst->i_mapping, pos_out, pos_out + len - 1);
	if (rc)
		goto out;
	invalidate_inode_pages2_range(dst->i_mapping, pos_out >> PAGE_SHIFT,
				      (pos_out + len - 1) >> PAGE_SHIFT);
	pfs_file_mark_written(out);
	rc = pfs_copy_chunks(src, dst, pos_in, pos_out, len);
	if (rc > 0) {
		pfs_i_size_extend(dst, pos_out + rc);
		invalidate_inode_pages2_range(dst->i_mapping,
					      pos_out >> PAGE_SHIFT,
					      (pos_out + rc - 1) >> PAGE_SHIFT);
	}
	set_bit(PFS_INO_BLOCKS_STALE, &PFS_I(dst)->flags);
out:
	unlock_two_nondirectories(src, dst);
	return rc;
}
