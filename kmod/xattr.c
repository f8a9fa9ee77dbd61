// SPDX-License-Identifier: GPL-2.0
/*
 * Extended attributes (user., trusted., security.) and POSIX ACLs, which
 * the metadata server keeps as the system.posix_acl_* xattrs in the
 * kernel's own binary format.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/xattr.h>

#include "pfs.h"

static struct pfs_xattr_req *pfs_xattr_req(struct inode *inode,
					   const char *prefix,
					   const char *name, u32 flags)
{
	struct pfs_xattr_req *m;

	if (strlen(prefix) + strlen(name) >= PFS_NAME_MAX)
		return ERR_PTR(-ERANGE);
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->id = PFS_I(inode)->id;
	m->flags = flags;
	snprintf(m->name, sizeof(m->name), "%s%s", prefix, name);
	return m;
}

/* GETXATTR: the value's size, copied into value when size allows. */
static int pfs_getxattr(struct inode *inode, const char *prefix,
			const char *name, void *value, size_t size)
{
	struct pfs_rpc rpc = {
		.type = PFS_MSG_GETXATTR,
		.reply_max = PFS_XATTR_VALUE_MAX + 64,
	};
	struct pfs_xattr_req *m;
	u32 len = 0;
	void *req;
	int rc;

	m = pfs_xattr_req(inode, prefix, name, 0);
	if (IS_ERR(m))
		return PTR_ERR(m);
	req = pfs_encode(pfs_x_xattr_req, m, &len);
	kfree(m);
	if (IS_ERR(req))
		return PTR_ERR(req);
	rpc.req = req;
	rpc.req_len = len;
	rc = pfs_meta_call(inode->i_sb, &PFS_I(inode)->id, &rpc);
	kfree(req);
	if (!rc) {
		rc = rpc.reply_len;
		if (size && rpc.reply_len > size)
			rc = -ERANGE;
		else if (size && rpc.reply_len)
			memcpy(value, rpc.reply, rpc.reply_len);
	}
	pfs_rpc_release(&rpc);
	return rc;
}

/* SETXATTR, or REMOVEXATTR when value is NULL. */
static int pfs_setxattr(struct inode *inode, const char *prefix,
			const char *name, const void *value, size_t size,
			int flags)
{
	struct pfs_rpc rpc = {
		.type = value ? PFS_MSG_SETXATTR : PFS_MSG_REMOVEXATTR,
	};
	struct pfs_xattr_req *m;
	struct iov_iter data;
	struct kvec vec = { .iov_base = (void *)value, .iov_len = size };
	u32 len = 0;
	void *req;
	int rc;

	if (size > PFS_XATTR_VALUE_MAX)
		return -E2BIG;
	m = pfs_xattr_req(inode, prefix, name, flags);
	if (IS_ERR(m))
		return PTR_ERR(m);
	req = pfs_encode(pfs_x_xattr_req, m, &len);
	kfree(m);
	if (IS_ERR(req))
		return PTR_ERR(req);
	rpc.req = req;
	rpc.req_len = len;
	if (value && size) {
		iov_iter_kvec(&data, ITER_SOURCE, &vec, 1, size);
		rpc.req_data = &data;
	}
	rc = pfs_meta_call(inode->i_sb, &PFS_I(inode)->id, &rpc);
	kfree(req);
	pfs_rpc_release(&rpc);
	if (!rc)
		pfs_attr_expire(inode);	/* ctime moved */
	return rc;
}

/*
 * Keeps the names the caller may see: trusted.* only for CAP_SYS_ADMIN,
 * as local file systems do. Returns the bytes kept.
 */
static size_t pfs_filter_xattr_names(char *names, size_t len)
{
	bool trusted = capable(CAP_SYS_ADMIN);
	size_t in = 0, out = 0;

	while (in < len) {
		size_t n = strnlen(names + in, len - in) + 1;

		if (trusted || strncmp(names + in, XATTR_TRUSTED_PREFIX,
				       XATTR_TRUSTED_PREFIX_LEN)) {
			memmove(names + out, names + in, n);
			out += n;
		}
		in += n;
	}
	return out;
}

ssize_t pfs_listxattr(struct dentry *dentry, char *list, size_t size)
{
	struct inode *inode = d_inode(dentry);
	struct pfs_rpc rpc = {
		.type = PFS_MSG_LISTXATTR,
		.reply_max = XATTR_LIST_MAX + 64,
	};
	size_t kept;
	u32 len = 0;
	void *req;
	ssize_t rc;

	req = pfs_encode(pfs_x_entry_id, &PFS_I(inode)->id, &len);
	if (IS_ERR(req))
		return PTR_ERR(req);
	rpc.req = req;
	rpc.req_len = len;
	rc = pfs_meta_call(inode->i_sb, &PFS_I(inode)->id, &rpc);
	kfree(req);
	if (rc)
		goto out;
	rc = -EIO;	/* names are NUL-terminated */
	if (rpc.reply_len &&
	    ((const char *)rpc.reply)[rpc.reply_len - 1] != '\0')
		goto out;
	kept = rpc.reply_len ? pfs_filter_xattr_names(rpc.reply,
						      rpc.reply_len) : 0;
	rc = kept;
	if (size && kept > size)
		rc = -ERANGE;
	else if (size && kept)
		memcpy(list, rpc.reply, kept);
out:
	pfs_rpc_release(&rpc);
	return rc;
}

static int pfs_xattr_get(const struct xattr_handler *handler,
			 struct dentry *dentry, struct inode *inode,
			 const char *name, void *value, size_t size)
{
	return pfs_getxattr(inode, handler->prefix, name, value, size);
}

static int pfs_xattr_set(const struct xattr_handler *handler,
			 pfs_idmap_t *idmap, struct dentry *dentry,
			 struct inode *inode, const char *name,
			 const void *value, size_t size, int flags)
{
	return pfs_setxattr(inode, handler->prefix, name, value, size, flags);
}

static const struct xattr_handler pfs_user_xattr_handler = {
	.prefix	= XATTR_USER_PREFIX,
	.get	= pfs_xattr_get,
	.set	= pfs_xattr_set,
};

static const struct xattr_handler pfs_trusted_xattr_handler = {
	.prefix	= XATTR_TRUSTED_PREFIX,
	.get	= pfs_xattr_get,
	.set	= pfs_xattr_set,
};

/*
 * ls -l asks every file for its security label: while the attributes are
 * fresh and said it has no security.* xattrs, that is the answer.
 */
static int pfs_security_get(const struct xattr_handler *handler,
			    struct dentry *dentry, struct inode *inode,
			    const char *name, void *value, size_t size)
{
	if (test_bit(PFS_INO_NO_SECURITY, &PFS_I(inode)->flags) &&
	    pfs_attr_fresh(inode))
		return -ENODATA;
	return pfs_getxattr(inode, handler->prefix, name, value, size);
}

static int pfs_security_set(const struct xattr_handler *handler,
			    pfs_idmap_t *idmap, struct dentry *dentry,
			    struct inode *inode, const char *name,
			    const void *value, size_t size, int flags)
{
	struct pfs_inode_info *pi = PFS_I(inode);
	int rc;

	spin_lock(&inode->i_lock);
	pi->security_ctime = inode_get_ctime(inode);
	spin_unlock(&inode->i_lock);
	set_bit(PFS_INO_SECURITY_SET, &pi->flags);
	clear_bit(PFS_INO_NO_SECURITY, &pi->flags);
	rc = pfs_setxattr(inode, handler->prefix, name, value, size, flags);
	pfs_attr_expire_times(inode);
	return rc;
}

static const struct xattr_handler pfs_security_xattr_handler = {
	.prefix	= XATTR_SECURITY_PREFIX,
	.get	= pfs_security_get,
	.set	= pfs_security_set,
};

const struct xattr_handler *pfs_xattr_handlers[] = {
	&pfs_user_xattr_handler,
	&pfs_trusted_xattr_handler,
	&pfs_security_xattr_handler,
	&posix_acl_access_xattr_handler,
	&posix_acl_default_xattr_handler,
	NULL,
};

static const char *pfs_acl_name(int type)
{
	return type == ACL_TYPE_ACCESS ? XATTR_NAME_POSIX_ACL_ACCESS :
					 XATTR_NAME_POSIX_ACL_DEFAULT;
}

struct posix_acl *pfs_get_acl(struct inode *inode, int type, bool rcu)
{
	struct posix_acl *acl;
	void *value;
	int size;

	if (rcu)
		return ERR_PTR(-ECHILD);
	value = kmalloc(PFS_XATTR_VALUE_MAX, GFP_KERNEL);
	if (!value)
		return ERR_PTR(-ENOMEM);
	size = pfs_getxattr(inode, "", pfs_acl_name(type), value,
			    PFS_XATTR_VALUE_MAX);
	if (size == -ENODATA || size == 0)
		acl = NULL;
	else if (size < 0)
		acl = ERR_PTR(size);
	else
		acl = posix_acl_from_xattr(&init_user_ns, value, size);
	kfree(value);
	return acl;
}

int pfs_set_acl(pfs_idmap_t *idmap, struct inode *inode,
		struct posix_acl *acl, int type)
{
	umode_t mode = inode->i_mode;
	void *value = NULL;
	int size = 0;
	int rc;

	if (type == ACL_TYPE_ACCESS && acl) {
		rc = posix_acl_update_mode(idmap, inode, &mode, &acl);
		if (rc)
			return rc;
		if (mode != inode->i_mode) {
			struct iattr ia = {
				.ia_valid = ATTR_MODE,
				.ia_mode = mode,
			};

			rc = pfs_apply_setattr(inode, &ia);
			if (rc)
				return rc;
		}
	}
	if (type == ACL_TYPE_DEFAULT && !S_ISDIR(inode->i_mode))
		return acl ? -EACCES : 0;
	if (acl) {
		size = posix_acl_xattr_size(acl->a_count);
		value = kmalloc(size, GFP_KERNEL);
		if (!value)
			return -ENOMEM;
		rc = posix_acl_to_xattr(&init_user_ns, acl, value, size);
		if (rc < 0) {
			kfree(value);
			return rc;
		}
	}
	rc = pfs_setxattr(inode, "", pfs_acl_name(type), value, size, 0);
	kfree(value);
	if (rc == -ENODATA && !acl)
		rc = 0;
	if (!rc)
		set_cached_acl(inode, type, acl);
	return rc;
}
