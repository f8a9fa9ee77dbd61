// SPDX-License-Identifier: GPL-2.0
/* generic_fillattr(idmap, request_mask, inode, stat) (6.6+). */
#include <linux/fs.h>

static void __maybe_unused pfs_probe(struct mnt_idmap *idmap,
				     struct inode *inode, struct kstat *stat)
{
	generic_fillattr(idmap, STATX_BASIC_STATS, inode, stat);
}
