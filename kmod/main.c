// SPDX-License-Identifier: GPL-2.0
/*
 * PFS client module: initialisation and teardown.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>

#include "pfs.h"

struct kmem_cache *pfs_inode_cachep;

static void pfs_inode_init_once(void *obj)
{
	struct pfs_inode_info *pi = obj;

	mutex_init(&pi->layout_lock);
	mutex_init(&pi->untracked_lock);
	inode_init_once(&pi->vfs_inode);
}

static int __init pfs_init(void)
{
	int rc;

	rc = pfs_proto_selftest();
	if (rc)
		return rc;
	pfs_inode_cachep = kmem_cache_create("pfs_inode_cache",
					     sizeof(struct pfs_inode_info), 0,
					     SLAB_RECLAIM_ACCOUNT | SLAB_ACCOUNT,
					     pfs_inode_init_once);
	if (!pfs_inode_cachep)
		return -ENOMEM;
	rc = pfs_addr_init();
	if (rc)
		goto out_cache;
	rc = pfs_file_init();
	if (rc)
		goto out_addr;
	rc = pfs_statahead_init();
	if (rc)
		goto out_file;
	rc = pfs_rdma_init();
	if (rc)
		goto out_statahead;
	rc = register_filesystem(&pfs_fs_type);
	if (rc)
		goto out_rdma;
	pr_info("protocol v%u ready\n", PFS_PROTO_VERSION);
	return 0;
out_rdma:
	pfs_rdma_exit();
out_statahead:
	pfs_statahead_exit();
out_file:
	pfs_file_exit();
out_addr:
	pfs_addr_exit();
out_cache:
	kmem_cache_destroy(pfs_inode_cachep);
	return rc;
}

static void __exit pfs_exit(void)
{
	unregister_filesystem(&pfs_fs_type);
	pfs_rdma_exit();
	pfs_statahead_exit();
	pfs_file_exit();
	pfs_addr_exit();
	/* Inodes are freed after an RCU grace period: wait for them. */
	rcu_barrier();
	kmem_cache_destroy(pfs_inode_cachep);
}

module_init(pfs_init);
module_exit(pfs_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("PFS parallel file system client");
MODULE_VERSION(PFS_MODULE_VERSION);
MODULE_AUTHOR("PFS developers");
MODULE_ALIAS_FS("pfs");
