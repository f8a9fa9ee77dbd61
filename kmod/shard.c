// SPDX-License-Identifier: GPL-2.0
/*
 * Striped directories: a directory whose entries are spread over several
 * metadata servers, each name in the shard pfs_dir_shard() picks. Names
 * go straight to their shard; a listing goes shard by shard, the cookie
 * naming the shard (pfs_cookie_shard). The list of shards is asked once,
 * with DIR_SHARDS, and never changes while the directory exists.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "pfs.h"

#define PFS_DIR_SHARDS_REPLY_MAX	(64 + PFS_DIR_SHARDS_MAX * 16)

static struct pfs_dir_shards *pfs_fetch_shards(struct inode *dir)
{
	struct pfs_inode_info *pi = PFS_I(dir);
	struct pfs_rpc rpc = {
		.type = PFS_MSG_DIR_SHARDS,
		.reply_max = PFS_DIR_SHARDS_REPLY_MAX,
	};
	struct pfs_dir_shards *s;
	struct pfs_xdr x;
	u32 len = 0;
	void *req;
	int rc;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	req = pfs_encode(pfs_x_entry_id, &pi->id, &len);
	if (IS_ERR(req)) {
		kfree(s);
		return req;
	}
	rpc.req = req;
	rpc.req_len = len;
	rc = pfs_meta_call(dir->i_sb, &pi->id, &rpc);
	kfree(req);
	if (!rc) {
		pfs_xdr_init_decode(&x, rpc.reply, rpc.reply_len);
		/* The directory itself comes first; every shard is a directory id. */
		if (pfs_x_dir_shards(&x, s) || pfs_xdr_finish(&x) ||
		    memcmp(&s->ids[0], &pi->id, sizeof(pi->id)))
			rc = -EIO;
	}
	pfs_rpc_release(&rpc);
	if (rc) {
		pr_warn_ratelimited("DIR_SHARDS of %llu@%u failed: %d\n",
				    pi->id.ino, pi->id.owner_node, rc);
		kfree(s);
		return ERR_PTR(rc);
	}
	return s;
}

static const struct pfs_dir_shards *pfs_shards(struct inode *dir)
{
	struct pfs_inode_info *pi = PFS_I(dir);
	struct pfs_dir_shards *s = smp_load_acquire(&pi->shards);
	struct pfs_dir_shards *old;

	if (s)
		return s;
	s = pfs_fetch_shards(dir);
	if (IS_ERR(s))
		return s;
	/* Two lookups may have asked at once: one list stays. */
	old = cmpxchg_release(&pi->shards, NULL, s);
	if (old) {
		kfree(s);
		return old;
	}
	return s;
}

int pfs_name_dir(struct inode *dir, const struct qstr *name,
		 struct pfs_entry_id *out)
{
	const struct pfs_dir_shards *s;

	*out = PFS_I(dir)->id;
	if (!test_bit(PFS_INO_STRIPED, &PFS_I(dir)->flags) ||
	    (name->len <= 2 && name->name[0] == '.' &&
	     (name->len == 1 || name->name[1] == '.')))
		return 0;
	s = pfs_shards(dir);
	if (IS_ERR(s))
		return PTR_ERR(s);
	*out = s->ids[pfs_dir_shard((const char *)name->name, name->len,
				    s->count)];
	return 0;
}

int pfs_cookie_dir(struct inode *dir, u64 cookie, struct pfs_entry_id *out)
{
	u32 shard = pfs_cookie_shard(cookie);
	const struct pfs_dir_shards *s;

	*out = PFS_I(dir)->id;
	if (!shard)
		return 0;
	/* Only a striped directory's listing leads past its first shard. */
	s = pfs_shards(dir);
	if (IS_ERR(s))
		return PTR_ERR(s);
	if (shard >= s->count)
		return -EIO;
	*out = s->ids[shard];
	return 0;
}

int pfs_dir_shard_ids(struct inode *dir, const struct pfs_entry_id **ids,
		      u32 *count)
{
	const struct pfs_dir_shards *s;

	*ids = &PFS_I(dir)->id;
	*count = 1;
	if (!test_bit(PFS_INO_STRIPED, &PFS_I(dir)->flags))
		return 0;
	s = pfs_shards(dir);
	if (IS_ERR(s))
		return PTR_ERR(s);
	*ids = s->ids;
	*count = s->count;
	return 0;
}
