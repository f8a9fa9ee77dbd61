// SPDX-License-Identifier: GPL-2.0
/* address_space_operations have read_folio instead of readpage (5.19+). */
#include <linux/fs.h>

static int pfs_probe_read_folio(struct file *file, struct folio *folio)
{
	return 0;
}

static const struct address_space_operations pfs_probe_aops __maybe_unused = {
	.read_folio = pfs_probe_read_folio,
};
