// SPDX-License-Identifier: GPL-2.0
/*
 * Directory listing. The metadata server hands out entries, "." and ".."
 * first, with cookies that stay valid while the directory changes; the
 * file position is the cookie to resume after. Entries come with their
 * attributes (READDIR_PLUS) unless the mount says nordirplus or caches
 * nothing: they prime the dentry and inode caches, so that ls -l, find or
 * a training job's stat of every file costs one request per page; a
 * process that looks names up one by one without listing them has them
 * listed ahead (statahead.c).
 *
 * Nothing the server sends reaches the reader unchecked: a name that is
 * not a plain name, a type the VFS does not know, "." or ".." anywhere
 * but at the start, or a cookie that does not move forward fails the
 * listing with -EIO.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "pfs.h"

#define PFS_DIR_POS_EOF		((loff_t)PFS_MAX_FILE_OFFSET)
#define PFS_READDIR_BATCH	512
#define PFS_READDIR_REPLY_MAX \
	(64 + PFS_READDIR_BATCH * (PFS_DIRENT_PLUS_MIN_SIZE + PFS_NAME_MAX + \
				   sizeof(struct pfs_attr)))

static bool pfs_dt_known(u8 type)
{
	switch (type) {
	case DT_UNKNOWN:
	case DT_FIFO:
	case DT_CHR:
	case DT_DIR:
	case DT_BLK:
	case DT_REG:
	case DT_LNK:
	case DT_SOCK:
		return true;
	default:
		return false;
	}
}

/*
 * Whether an entry of len name bytes may follow position pos: not empty,
 * no '/' (the decoder refuses NULs), a known type, a cookie past pos. "."
 * and ".." are directories that only start a listing: the server numbers
 * them 1 and 2, its entries from 3 on.
 */
static bool pfs_dirent_ok(const struct pfs_dirent *ent, size_t len, loff_t pos)
{
	if (!len || memchr(ent->name, '/', len) || !pfs_dt_known(ent->type) ||
	    ent->cookie <= pos || ent->cookie >= PFS_DIR_POS_EOF)
		return false;
	if (len == 1 && ent->name[0] == '.')
		return pos == 0 && ent->type == DT_DIR;
	if (len == 2 && ent->name[0] == '.' && ent->name[1] == '.')
		return pos <= 1 && ent->type == DT_DIR;
	return true;
}

/*
 * Every entry listed with attributes is one the server watches for us, in
 * a table of 2^20 shared by all its clients that is forgotten whole when
 * full (INVALIDATE_ALL to everyone): a directory larger than a quarter of
 * that is listed by name, and its stats look each name up.
 */
#define PFS_READDIR_PLUS_MAX_ENTRIES	(1u << 18)

bool pfs_readdir_plus(struct inode *dir)
{
	struct pfs_sb_info *sbi = PFS_SB(dir->i_sb);

	return !sbi->opts.nordirplus && (sbi->attr_ttl || sbi->name_ttl) &&
	       i_size_read(dir) <= PFS_READDIR_PLUS_MAX_ENTRIES;
}

/*
 * One READDIR round trip from the cookie *pos, which moves on: what fits is
 * emitted to ctx, or with ctx NULL (statahead.c) only primed into the
 * caches, which needs attributes, but for skip (pfs_prime_dentry). Returns
 * 1 when the caller should ask again, 0 when done (end, or the reader is
 * full).
 */
int pfs_list_page(struct dentry *dentry, loff_t *pos, struct dir_context *ctx,
		  struct pfs_dirent_plus *plus, const struct qstr *skip)
{
	struct inode *inode = d_inode(dentry);
	struct pfs_dirent *ent = &plus->ent;
	bool with_attrs = pfs_readdir_plus(inode);
	unsigned int gen = pfs_names_gen(inode);
	unsigned int notices = atomic_read(&PFS_SB(inode->i_sb)->notices);
	struct pfs_readdir m = {
		.cookie = *pos,
		.max_entries = PFS_READDIR_BATCH,
	};
	struct pfs_rpc rpc = {
		.type = with_attrs ? PFS_MSG_READDIR_PLUS : PFS_MSG_READDIR,
		.reply_max = PFS_READDIR_REPLY_MAX,
	};
	struct pfs_dir_page page;
	struct pfs_xdr x;
	u32 len = 0, i;
	void *req;
	int rc;

	if (!ctx && !with_attrs)
		return -EOPNOTSUPP;
	/* A striped directory's cookie names the shard that goes on. */
	rc = pfs_cookie_dir(inode, *pos, &m.dir);
	if (rc)
		return rc;
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
		size_t n;

		if (with_attrs ? pfs_x_dirent_plus(&x, plus) :
				 pfs_x_dirent(&x, ent))
			goto out;
		n = strlen(ent->name);
		if (!pfs_dirent_ok(ent, n, *pos)) {
			pr_warn_ratelimited("%s of %llu@%u: refusing entry \"%*pE\" (type %u, cookie %llu after %lld)\n",
					    pfs_msg_name(rpc.type), m.dir.ino, m.dir.owner_node, (int)n,
					    ent->name, ent->type, ent->cookie,
					    *pos);
			goto out;
		}
		if (with_attrs)
			pfs_prime_dentry(dentry, plus, n, gen, notices, skip);
		if (ctx && !dir_emit(ctx, ent->name, n, pfs_ino_of(&ent->id),
				     ent->type)) {
			rc = 0;
			goto out;
		}
		*pos = ent->cookie;
	}
	if (pfs_xdr_finish(&x))
		goto out;
	if (page.eof) {
		*pos = PFS_DIR_POS_EOF;
		rc = 0;
	} else if (!page.count) {
		/* An empty page that is not the end still moves forward. */
		if (page.next_cookie <= *pos ||
		    page.next_cookie >= PFS_DIR_POS_EOF)
			goto out;
		*pos = page.next_cookie;
		rc = 1;
	} else {
		rc = 1;
	}
out:
	/* Statahead's own failures (EACCES: the user may not list) are its. */
	if (rc < 0 && (ctx || rc == -EIO))
		pr_warn_ratelimited("%s of %llu@%u failed: %d\n",
				    pfs_msg_name(rpc.type), m.dir.ino,
				    m.dir.owner_node, rc);
	pfs_rpc_release(&rpc);
	return rc;
}

static int pfs_readdir(struct file *file, struct dir_context *ctx)
{
	struct pfs_dirent_plus *ent;
	int rc;

	if (ctx->pos >= PFS_DIR_POS_EOF)
		return 0;
	ent = kmalloc(sizeof(*ent), GFP_KERNEL);
	if (!ent)
		return -ENOMEM;
	do {
		rc = pfs_list_page(file->f_path.dentry, &ctx->pos, ctx, ent,
				   NULL);
	} while (rc > 0);
	kfree(ent);
	return rc;
}

/*
 * A server answers an unlink once it applied it, its journal record on the
 * way to disk: fsync of the directory asks each server that keeps the
 * directory's names (every shard's) to answer once everything it answered
 * before is durable. A size report with nothing new does that and changes
 * nothing.
 */
static int pfs_dir_fsync(struct file *file, loff_t start, loff_t end,
			 int datasync)
{
	struct inode *dir = file_inode(file);
	struct pfs_setattr req = { .valid = PFS_SET_SIZE_EXTEND };
	const struct pfs_entry_id *shards;
	u32 count, i;
	int rc;

	rc = pfs_dir_shard_ids(dir, &shards, &count);
	for (i = 0; !rc && i < count; i++) {
		req.id = shards[i];
		rc = pfs_meta_simple(dir->i_sb, &req.id, PFS_MSG_SETATTR,
				     pfs_x_setattr, &req);
	}
	/*
	 * A directory removed meanwhile has nothing left to make durable:
	 * its rmdir waited for everything its server answered before.
	 */
	if (rc == -ENOENT || rc == -ESTALE)
		return 0;
	return rc;
}

const struct file_operations pfs_dir_fops = {
	.llseek		= generic_file_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= pfs_readdir,
	.fsync		= pfs_dir_fsync,
};
