/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarations shared by the files of the PFS client module.
 */
#ifndef PFS_H
#define PFS_H

#include <linux/fs.h>

#include "pfs_config.h"
#include "pfs_proto.h"

#define PFS_MODULE_VERSION "0.1.0"

/*
 * The type of the first argument of inode_operations such as getattr and
 * setattr, and of generic_fillattr(): struct mnt_idmap * since 6.3,
 * struct user_namespace * since 5.12. Write
 *	static int pfs_getattr(pfs_idmap_t *idmap, const struct path *path, ...)
 */
#if defined(PFS_HAVE_IOPS_MNT_IDMAP)
typedef struct mnt_idmap pfs_idmap_t;
#elif defined(PFS_HAVE_IOPS_USER_NS)
typedef struct user_namespace pfs_idmap_t;
#endif

/* selftest.c */
int pfs_proto_selftest(void);

#endif /* PFS_H */
