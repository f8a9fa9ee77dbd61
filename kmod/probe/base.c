// SPDX-License-Identifier: GPL-2.0
/* Must always compile: proves that the probe compiler works. */
#include <linux/module.h>
#include <linux/fs.h>

static int __maybe_unused pfs_probe(struct inode *inode)
{
	return inode->i_sb != NULL;
}
