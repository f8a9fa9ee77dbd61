// SPDX-License-Identifier: GPL-2.0
/*
 * Directory listing. The metadata server hands out entries, "." and ".."
 * first, with cookies that stay valid while the directory changes; the
 * file position is the cookie to resume after.
 */
#include "pfs.h"

#define PFS_DIR_POS_EOF		((loff_t)PFS_MAX_FILE_OFFSET)
#define PFS_READDIR_BATCH	512
#define PFS_READDIR_REPLY_MAX \
	(64 + PFS_READDIR_BATCH * (PFS_DIRENT_MIN_SIZE + PFS_NAME_MAX))

/*
 * One READDIR round trip from cookie; emits what fits. Returns 1 when the
 * caller should ask again, 0 when done (end, or the reader is full).
 */
static int pfs_readdir_page(struct file *file, struct dir_context *ctx,
			    struct pfs_dirent *ent)
{
	struct inode *inode = file_inode(file);
	struct pfs_readdir m = {
		.dir = PFS_I(inode)->id,
		.cookie = ctx->pos,
		.max_entries = PFS_READDIR_BATCH,
	};
	struct pfs_rpc rpc = {
		.type = PFS_MSG_READDIR,
		.reply_max = PFS_READDIR_REPLY_MAX,
	};
	struct pfs_dir_page page;
	struct pfs_xdr x;
	u32 len = 0, i;
	void *req;
	int rc;

	req = pfs_encode(pfs_x_readdir, &m, &len);
	if (IS_ERR(req))
		return PTR_ERR(req);
	rpc.req = req;
	rpc.req_len = len;
	rc = pfs_meta_call(inode->i_sb, &m.dir, &rpc);
	kfree(req);
	if (rc)
		goto out;

	pfs_xdr_init_decode(&x, rpc.reply, rpc.reply_len);
	rc = -EIO;
	if (pfs_x_dir_page(&x, &page) || page.count > PFS_READDIR_BATCH)
		goto out;
	for (i = 0; i < page.count; i++) {
		if (pfs_x_dirent(&x, ent))
			goto out;
		if (ent->cookie >= PFS_DIR_POS_EOF)
			goto out;
		if (!dir_emit(ctx, ent->name, strlen(ent->name),
			      pfs_ino_of(&ent->id), ent->type)) {
			rc = 0;
			goto out;
		}
		ctx->pos = ent->cookie;
	}
	if (pfs_xdr_finish(&x))
		goto out;
	if (page.eof) {
		ctx->pos = PFS_DIR_POS_EOF;
		rc = 0;
	} else {
		/* An empty page that is not the end still moves forward. */
		if (!page.count)
			ctx->pos = page.next_cookie;
		rc = 1;
	}
out:
	if (rc < 0)
		pr_warn_ratelimited("pfs: READDIR of %llu@%u failed: %d\n",
				    m.dir.ino, m.dir.owner_node, rc);
	pfs_rpc_release(&rpc);
	return rc;
}

static int pfs_readdir(struct file *file, struct dir_context *ctx)
{
	struct pfs_dirent *ent;
	int rc;

	if (ctx->pos >= PFS_DIR_POS_EOF)
		return 0;
	ent = kmalloc(sizeof(*ent), GFP_KERNEL);
	if (!ent)
		return -ENOMEM;
	do {
		rc = pfs_readdir_page(file, ctx, ent);
	} while (rc > 0);
	kfree(ent);
	return rc;
}

const struct file_operations pfs_dir_fops = {
	.llseek		= generic_file_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= pfs_readdir,
	.fsync		= noop_fsync,
};
