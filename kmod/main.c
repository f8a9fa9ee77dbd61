// SPDX-License-Identifier: GPL-2.0
/*
 * PFS client module: initialisation and teardown.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>

#include "pfs.h"

static int __init pfs_init(void)
{
	int rc;

	rc = pfs_proto_selftest();
	if (rc)
		return rc;
	pr_info("protocol v%u ready\n", PFS_PROTO_VERSION);
	return 0;
}

static void __exit pfs_exit(void)
{
}

module_init(pfs_init);
module_exit(pfs_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("PFS parallel file system client");
MODULE_VERSION(PFS_MODULE_VERSION);
MODULE_AUTHOR("PFS developers");
