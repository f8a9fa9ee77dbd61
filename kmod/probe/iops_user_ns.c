// SPDX-License-Identifier: GPL-2.0
/* inode_operations take a struct user_namespace * (5.12 - 6.2). */
#include <linux/fs.h>

static int pfs_probe_getattr(struct user_namespace *userns,
			     const struct path *path, struct kstat *stat,
			     u32 mask, unsigned int flags)
{
	return 0;
}

static int pfs_probe_setattr(struct user_namespace *userns,
			     struct dentry *dentry, struct iattr *attr)
{
	return 0;
}

static const struct inode_operations pfs_probe_iops __maybe_unused = {
	.getattr = pfs_probe_getattr,
	.setattr = pfs_probe_setattr,
};
