// SPDX-License-Identifier: GPL-2.0
/*
 * The transfers of O_DIRECT (and of cache=none) from and to user memory:
 * it is pinned one window at a time and handed to the striped data path
 * (stripe.c) as bvecs, which the transport fills or sends from its own
 * context: no bounce buffer.
 *
 * Pages of GPU memory (nvidia-fs' buffers, nvfs.c) go the same way, only
 * by RDMA: nvidia-fs maps them for the rail nearest their GPU and the
 * storage server moves the bytes straight to or from the GPU. A window
 * mixing CPU and GPU pages fails with EINVAL.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "pfs.h"
#include "nvfs.h"

/* User memory pinned at once by one direct transfer. */
#define PFS_IO_WINDOW		(64u << 20)

/* User pages pinned for a direct transfer, described by bvecs. */
struct pfs_pinned {
	struct page **pages;
	struct bio_vec *bvec;
	unsigned int npages;
};

/*
 * Takes references on up to max bytes of iter's memory (advancing iter), so
 * that the transport can fill or send them from its own context. Returns
 * the bytes pinned (maybe fewer when the memory is fragmented) or -errno.
 */
static ssize_t pfs_pin(struct iov_iter *iter, size_t max, struct pfs_pinned *p)
{
	unsigned int cap = DIV_ROUND_UP(max, PAGE_SIZE) + 1;
	size_t total = 0;

	p->npages = 0;
	p->pages = kvmalloc_array(cap, sizeof(*p->pages), GFP_KERNEL);
	p->bvec = kvmalloc_array(cap, sizeof(*p->bvec), GFP_KERNEL);
	if (!p->pages || !p->bvec)
		goto nomem;

	while (total < max && p->npages < cap && iov_iter_count(iter)) {
		size_t start, left;
		ssize_t n = iov_iter_get_pages2(iter, p->pages + p->npages,
						max - total, cap - p->npages,
						&start);

		if (n <= 0) {
			if (total)
				break;
			kvfree(p->pages);
			kvfree(p->bvec);
			return n ? n : -EFAULT;
		}
		for (left = n; left; start = 0) {
			size_t seg = min_t(size_t, left, PAGE_SIZE - start);

			bvec_set_page(&p->bvec[p->npages],
				      p->pages[p->npages], seg, start);
			p->npages++;
			left -= seg;
		}
		total += n;
	}
	return total;
nomem:
	kvfree(p->pages);
	kvfree(p->bvec);
	return -ENOMEM;
}

static void pfs_unpin(struct pfs_pinned *p, bool dirty)
{
	unsigned int i;

	for (i = 0; i < p->npages; i++) {
		if (dirty)
			set_page_dirty_lock(p->pages[i]);
		put_page(p->pages[i]);
	}
	kvfree(p->pages);
	kvfree(p->bvec);
}

/*
 * Whether a pinned window is GPU memory (1, *gpu begun) or not (0), as the
 * transfer's first window was (*kind: -1 before it); -EINVAL when a window
 * mixes CPU and GPU pages or differs from the first.
 */
static int pfs_window_kind(struct inode *inode, struct pfs_pinned *pin,
			   int *kind, struct pfs_gpu_io *gpu)
{
	int k = pfs_gpu_begin(pin->pages, pin->npages, *kind, gpu);

	if (k < 0)
		atomic64_inc(&pfs_net_gpu_stats(pfs_inode_net(inode))->errors);
	else
		*kind = k;
	return k;
}

static void pfs_gpu_account(struct inode *inode, ssize_t rc, size_t want)
{
	struct pfs_gpu_stats *st = pfs_net_gpu_stats(pfs_inode_net(inode));

	if (rc > 0)
		atomic64_add(rc, &st->bytes);
	if (rc < (ssize_t)want)
		atomic64_inc(&st->errors);
}

static ssize_t pfs_stripe_io(struct inode *inode, u16 type, loff_t pos,
			     struct iov_iter *iter)
{
	bool to_user = type == PFS_MSG_CHUNK_READ && user_backed_iter(iter);
	size_t total = 0;
	ssize_t rc = 0;
	int kind = -1;

	if (iov_iter_is_bvec(iter) || iov_iter_is_kvec(iter) ||
	    iov_iter_is_xarray(iter) || iov_iter_is_discard(iter))
		return pfs_stripe_batch(inode, type, pos, iter,
					iov_iter_count(iter), NULL);

	/* User memory (or a pipe): pinned one window at a time. */
	while (iov_iter_count(iter)) {
		struct pfs_gpu_io gpu;
		struct pfs_pinned pin;
		struct iov_iter bv;
		ssize_t pinned;

		pinned = pfs_pin(iter, min_t(size_t, iov_iter_count(iter),
					     PFS_IO_WINDOW), &pin);
		if (pinned < 0) {
			rc = pinned;
			break;
		}
		rc = pfs_window_kind(inode, &pin, &kind, &gpu);
		if (rc < 0) {
			pfs_unpin(&pin, false);
			iov_iter_revert(iter, pinned);
			break;
		}
		iov_iter_bvec(&bv, iov_iter_rw(iter), pin.bvec, pin.npages,
			      pinned);
		rc = pfs_stripe_batch(inode, type, pos + total, &bv, pinned,
				      kind ? &gpu : NULL);
		if (kind) {
			pfs_gpu_account(inode, rc, pinned);
			pfs_gpu_end(&gpu);
		}
		pfs_unpin(&pin, to_user);
		if (rc < pinned)
			iov_iter_revert(iter, pinned - max_t(ssize_t, rc, 0));
		if (rc <= 0)
			break;
		total += rc;
		if (rc < pinned)
			break;
	}
	return total ? total : rc;
}

ssize_t pfs_stripe_read(struct inode *inode, loff_t pos, struct iov_iter *to)
{
	return pfs_stripe_io(inode, PFS_MSG_CHUNK_READ, pos, to);
}

ssize_t pfs_stripe_write(struct inode *inode, loff_t pos,
			 struct iov_iter *from)
{
	return pfs_stripe_io(inode, PFS_MSG_CHUNK_WRITE, pos, from);
}
