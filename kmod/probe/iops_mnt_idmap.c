// SPDX-License-Identifier: GPL-2.0
/* inode_operations take a struct mnt_idmap * (6.3+). */
#include <linux/fs.h>

static int pfs_probe_getattr(struct mnt_idmap *idmap, const struct path *path,
			     struct kstat *stat, u32 mask, unsigned int flags)
{
	return 0;
}

static int pfs_probe_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			     struct iattr *attr)
{
	return 0;
}

static const struct inode_operations pfs_probe_iops __maybe_unused = {
	.getattr = pfs_probe_getattr,
	.setattr = pfs_probe_setattr,
};
