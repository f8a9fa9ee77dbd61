// SPDX-License-Identifier: GPL-2.0
/* generic_file_splice_read (until 6.4; copy_splice_read replaces it). */
#include <linux/fs.h>

static const struct file_operations pfs_probe_fops __maybe_unused = {
	.splice_read = generic_file_splice_read,
};
