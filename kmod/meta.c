// SPDX-License-Identifier: GPL-2.0
/*
 * Requests to metadata servers. Every entry lives on the metadata node
 * named in its id (owner_node), so a request about an entry, or about a
 * name in a directory, goes to that entry's or directory's owner.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/uio.h>

#include "pfs.h"

/*
 * Attributes the VFS can take from a server: a known file type, no mode
 * bits beyond it and the permissions, and a size within the largest file
 * (one past 2^63 would be negative as loff_t).
 */
int pfs_attr_check(u16 type, const struct pfs_attr *attr)
{
	const char *what = NULL;

	switch (attr->mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		if (attr->mode & ~(u32)(S_IFMT | 07777))
			what = "mode";
		break;
	default:
		what = "file type";
	}
	if (!what && attr->size > PFS_MAX_FILE_OFFSET)
		what = "size";
	if (!what)
		return 0;
	pr_warn_ratelimited("%s reply: entry %llu@%u has an impossible %s (mode 0%o, size %llu): refused\n",
			    pfs_msg_name(type), attr->id.ino,
			    attr->id.owner_node, what, attr->mode, attr->size);
	return -EIO;
}

int pfs_meta_call(struct super_block *sb, const struct pfs_entry_id *owner,
		  struct pfs_rpc *rpc)
{
	struct pfs_meta_session *s;
	struct pfs_node *node;
	u64 sent;
	int rc;

	node = pfs_net_meta_node(PFS_SB(sb)->net, owner->owner_node);
	if (IS_ERR(node))
		return PTR_ERR(node);
	/* Every reply tells our session's epoch on that server. */
	s = pfs_session_get(sb, owner->owner_node);
	sent = pfs_session_epoch(s);
	rc = pfs_rpc_call(node, rpc);
	pfs_session_seen(s, sent, rpc->session_epoch);
	pfs_node_put(node);
	return rc;
}

int pfs_meta_attr_call(struct super_block *sb, const struct pfs_entry_id *owner,
		       u16 type, const void *req, u32 req_len,
		       struct pfs_attr *attr, struct pfs_layout *layout)
{
	return pfs_meta_open_call(sb, owner, type, req, req_len, attr, layout,
				  NULL, NULL, NULL);
}

void pfs_open_content_free(struct pfs_open_content *c)
{
	u32 i;

	for (i = 0; i < c->npages; i++)
		if (c->bvec[i].bv_page)
			put_page(c->bvec[i].bv_page);
	kfree(c->bvec);
	c->bvec = NULL;
	c->npages = 0;
	c->len = 0;
}

/*
 * Pages for c->room bytes of content, as the reply's bulk data iterator
 * *to; false when memory is short (the open then goes without).
 */
static bool pfs_open_content_pages(struct pfs_open_content *c,
				   struct iov_iter *to)
{
	u32 n = DIV_ROUND_UP(c->room ?: PFS_OPEN_CONTENT_MAX, PAGE_SIZE);
	u32 i;

	c->npages = 0;
	c->len = 0;
	c->bvec = kcalloc(n, sizeof(*c->bvec), GFP_KERNEL);
	if (!c->bvec)
		return false;
	for (i = 0; i < n; i++) {
		struct page *page = alloc_page(GFP_KERNEL | __GFP_NOWARN);

		if (!page)
			goto fail;
		bvec_set_page(&c->bvec[i], page, PAGE_SIZE, 0);
		c->npages++;
	}
	iov_iter_bvec(to, ITER_DEST, c->bvec, n, (size_t)n * PAGE_SIZE);
	return true;
fail:
	pfs_open_content_free(c);
	return false;
}

int pfs_meta_open_call(struct super_block *sb, const struct pfs_entry_id *owner,
		       u16 type, const void *req, u32 req_len,
		       struct pfs_attr *attr, struct pfs_layout *layout,
		       u64 *epoch, bool *made,
		       struct pfs_open_content *content)
{
	struct pfs_create_made created = {};
	struct pfs_rpc rpc = {
		.type = type,
		.req = req,
		.req_len = req_len,
		.reply_max = 64 << 10,
	};
	struct iov_iter to;
	struct pfs_xdr x;
	int rc;

	/* The content comes as the reply's bulk data, into the pages. */
	if (content && pfs_open_content_pages(content, &to)) {
		rpc.flags = PFS_FLAG_INLINE_CONTENT;
		if (content->untracked)
			rpc.flags |= PFS_FLAG_UNTRACKED;
		rpc.bulk = true;
		rpc.reply_data = &to;
	}
	if (content)
		content->untracked = false;
	rc = pfs_meta_call(sb, owner, &rpc);
	if (rpc.reply_data && !rc) {
		content->len = rpc.data_len;
		content->untracked = rpc.reply_flags & PFS_FLAG_UNTRACKED;
	}
	if (epoch)
		*epoch = content && content->untracked ?
			 PFS_EPOCH_UNTRACKED : rpc.session_epoch;
	if (rc)
		goto out;
	pfs_xdr_init_decode(&x, rpc.reply, rpc.reply_len);
	if (made)
		pfs_x_create_made(&x, &created);
	pfs_x_attr(&x, attr);
	/* A layout follows the attributes of files (CREATE, OPEN). */
	if (layout && pfs_xdr_remaining(&x))
		pfs_x_layout(&x, layout);
	else if (layout)
		layout->count = 0;
	rc = pfs_xdr_finish(&x) ? -EIO : 0;
	if (rc)
		pr_warn_ratelimited("malformed %s reply\n", pfs_msg_name(type));
	else
		rc = pfs_attr_check(type, attr);
	if (made)
		*made = created.made;
out:
	if (rc && content)
		pfs_open_content_free(content);
	pfs_rpc_release(&rpc);
	return rc;
}
