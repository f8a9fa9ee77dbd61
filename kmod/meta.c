// SPDX-License-Identifier: GPL-2.0
/*
 * Requests to metadata servers. Every entry lives on the metadata node
 * named in its id (owner_node), so a request about an entry, or about a
 * name in a directory, goes to that entry's or directory's owner.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

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

/*
 * The content an open's reply ends with (PFS_FLAG_INLINE_CONTENT): a
 * length, then as many bytes, no more than PFS_INLINE_MAX. The reply
 * buffer moves to content.
 */
static int pfs_take_content(struct pfs_xdr *x, struct pfs_rpc *rpc,
			    struct pfs_open_content *content)
{
	u32 len = 0;

	if (pfs_x_u32(x, &len))
		return -EIO;
	if (len > PFS_INLINE_MAX || len != pfs_xdr_remaining(x))
		return -EIO;
	content->data = (const u8 *)rpc->reply + x->pos;
	content->len = len;
	content->buf = rpc->reply;
	rpc->reply = NULL;
	x->pos += len;
	return 0;
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
		.flags = content ? PFS_FLAG_INLINE_CONTENT : 0,
		.req = req,
		.req_len = req_len,
		.reply_max = (64 << 10) + (content ? PFS_INLINE_MAX + 4 : 0),
	};
	struct pfs_xdr x;
	int rc;

	if (content)
		content->buf = NULL;
	rc = pfs_meta_call(sb, owner, &rpc);
	if (epoch)
		*epoch = rpc.session_epoch;
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
	rc = 0;
	if (content && layout && pfs_xdr_remaining(&x))
		rc = pfs_take_content(&x, &rpc, content);
	rc = rc ?: (pfs_xdr_finish(&x) ? -EIO : 0);
	if (rc)
		pr_warn_ratelimited("malformed %s reply\n", pfs_msg_name(type));
	else
		rc = pfs_attr_check(type, attr);
	if (rc && content)
		pfs_open_content_free(content);
	if (made)
		*made = created.made;
out:
	pfs_rpc_release(&rpc);
	return rc;
}
