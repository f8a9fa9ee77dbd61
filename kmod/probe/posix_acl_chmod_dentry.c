// SPDX-License-Identifier: GPL-2.0
/* posix_acl_chmod() takes the dentry instead of the inode (6.2+). */
#include <linux/fs.h>
#include <linux/posix_acl.h>

struct mnt_idmap;

static int __maybe_unused pfs_probe(void)
{
	return _Generic(&posix_acl_chmod,
			int (*)(struct mnt_idmap *, struct dentry *, umode_t): 0,
			int (*)(struct user_namespace *, struct dentry *,
				umode_t): 0);
}
