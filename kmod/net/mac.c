// SPDX-License-Identifier: GPL-2.0
/*
 * Frame MACs (the user-space twin is auth::FrameMac in
 * common/cpp/auth_crypto.cpp): once a handshake turned them on, every
 * frame either way is followed by PFS_FRAME_MAC_LEN bytes of
 *
 *   HMAC-SHA256(session key, direction || seq (u64 LE) || header || payload)
 *
 * where direction is 'C' for our frames and 'S' for the server's, and seq
 * counts each direction's frames from 0. A frame changed, dropped,
 * replayed or reflected on the way fails its check, and the connection
 * dies before anything of it is used.
 */
#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <linux/highmem.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "net_int.h"

struct pfs_frame_mac {
	struct crypto_shash *tfm;	/* keyed with the session key */
	struct shash_desc *tx;		/* under the connection's send_lock */
	struct shash_desc *rx;		/* the receiving thread's */
	u64 tx_seq;
	u64 rx_seq;
};

static struct shash_desc *pfs_mac_desc(struct crypto_shash *tfm)
{
	struct shash_desc *d;

	d = kzalloc(sizeof(*d) + crypto_shash_descsize(tfm), GFP_NOFS);
	if (d)
		d->tfm = tfm;
	return d;
}

struct pfs_frame_mac *pfs_mac_create(const u8 *session)
{
	struct pfs_frame_mac *m;
	int err;

	m = kzalloc(sizeof(*m), GFP_NOFS);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(m->tfm)) {
		err = PTR_ERR(m->tfm);
		kfree(m);
		return ERR_PTR(err);
	}
	err = crypto_shash_setkey(m->tfm, session, PFS_AUTH_MAC_LEN);
	m->tx = pfs_mac_desc(m->tfm);
	m->rx = pfs_mac_desc(m->tfm);
	if (!err && (!m->tx || !m->rx))
		err = -ENOMEM;
	if (err) {
		pfs_mac_destroy(m);
		return ERR_PTR(err);
	}
	return m;
}

void pfs_mac_destroy(struct pfs_frame_mac *m)
{
	if (IS_ERR_OR_NULL(m))
		return;
	kfree_sensitive(m->tx);
	kfree_sensitive(m->rx);
	crypto_free_shash(m->tfm);
	kfree(m);
}

static int pfs_mac_begin(struct shash_desc *d, char dir, u64 seq,
			 const u8 *hdr)
{
	u8 head[9];
	int i;

	head[0] = dir;
	for (i = 0; i < 8; i++)
		head[1 + i] = seq >> (8 * i);
	return crypto_shash_init(d) ?:
	       crypto_shash_update(d, head, sizeof(head)) ?:
	       crypto_shash_update(d, hdr, PFS_HEADER_SIZE);
}

/* Adds len bytes of it (not advanced) to the MAC, page by page. */
static int pfs_mac_update_iter(struct shash_desc *d, const struct iov_iter *it,
			       size_t len)
{
	struct iov_iter i = *it;
	struct page *pages[16];
	int err = 0;

	iov_iter_truncate(&i, len);
	if (iov_iter_is_kvec(&i)) {
		const struct kvec *v = i.kvec;
		size_t skip = i.iov_offset;

		for (; !err && len; v++, skip = 0) {
			size_t n = min(len, v->iov_len - skip);

			err = crypto_shash_update(d, v->iov_base + skip, n);
			len -= n;
		}
		return err;
	}
	while (!err && iov_iter_count(&i)) {
		size_t start, left;
		ssize_t got = iov_iter_get_pages2(&i, pages, iov_iter_count(&i),
						  ARRAY_SIZE(pages), &start);
		unsigned int p;

		if (got <= 0)
			return got ? got : -EFAULT;
		for (p = 0, left = got; left; p++, start = 0) {
			size_t n = min_t(size_t, left, PAGE_SIZE - start);
			void *addr = kmap_local_page(pages[p]);

			if (!err)
				err = crypto_shash_update(d, addr + start, n);
			kunmap_local(addr);
			put_page(pages[p]);
			left -= n;
		}
	}
	return err;
}

int pfs_mac_seal(struct pfs_frame_mac *m, const struct kvec *head,
		 unsigned int nhead, const struct iov_iter *data, u8 *tag)
{
	u8 full[PFS_AUTH_MAC_LEN];
	unsigned int i;
	int err;

	/* head[0] is the header. */
	err = pfs_mac_begin(m->tx, 'C', m->tx_seq++, head[0].iov_base);
	for (i = 1; !err && i < nhead; i++)
		err = crypto_shash_update(m->tx, head[i].iov_base,
					  head[i].iov_len);
	if (!err && data && iov_iter_count(data))
		err = pfs_mac_update_iter(m->tx, data, iov_iter_count(data));
	if (!err)
		err = crypto_shash_final(m->tx, full);
	if (!err)
		memcpy(tag, full, PFS_FRAME_MAC_LEN);
	memzero_explicit(full, sizeof(full));
	return err;
}

int pfs_mac_rx_begin(struct pfs_frame_mac *m, const u8 *hdr)
{
	return pfs_mac_begin(m->rx, 'S', m->rx_seq++, hdr);
}

int pfs_mac_rx_update(struct pfs_frame_mac *m, const void *buf, size_t len)
{
	return crypto_shash_update(m->rx, buf, len);
}

int pfs_mac_rx_update_iter(struct pfs_frame_mac *m, const struct iov_iter *it,
			   size_t len)
{
	return pfs_mac_update_iter(m->rx, it, len);
}

int pfs_mac_rx_check(struct pfs_frame_mac *m, const u8 *tag)
{
	u8 full[PFS_AUTH_MAC_LEN];
	int err = crypto_shash_final(m->rx, full);

	if (!err && crypto_memneq(full, tag, PFS_FRAME_MAC_LEN))
		err = -EBADMSG;
	memzero_explicit(full, sizeof(full));
	return err;
}
