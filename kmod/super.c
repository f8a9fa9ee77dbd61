// SPDX-License-Identifier: GPL-2.0
/*
 * Mounting: the file system type, mount options, the super block and its
 * operations.
 *
 *	mount -t pfs -o secret_file=/etc/pfs/auth.secret 10.0.0.1:8008 /mnt/pfs
 *
 * The source names pfs-mgmtd by address (mount.pfs resolves host names);
 * everything else about the cluster comes from mgmtd's map.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/backing-dev.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/statfs.h>

#include "pfs.h"

#define PFS_DEFAULT_SECRET_FILE		"/etc/pfs/auth.secret"
#define PFS_DEFAULT_TIMEOUT_MS		30000
#define PFS_DEFAULT_CONNECT_TIMEOUT_MS	5000
#define PFS_DEFAULT_ATTR_TTL_MS		1000
/*
 * Names are trusted longer than attributes: the server's notices, which
 * cannot be lost unnoticed, end them when they change.
 */
#define PFS_DEFAULT_NAME_TTL_MS		30000
#define PFS_NAME_TTL_UNSET		U32_MAX
#define PFS_TTL_MAX_MS			3600000
#define PFS_DEFAULT_CONNS		2
#define PFS_MAX_CONNS			64
#define PFS_SECRET_MIN			16
#define PFS_SECRET_MAX			(64 * 1024)
/* Readahead window: enough to keep every target of a wide stripe busy. */
#define PFS_READAHEAD_BYTES		(8u << 20)

enum pfs_param {
	Opt_secret_file,
	Opt_timeout,
	Opt_connect_timeout,
	Opt_attr_ttl,
	Opt_name_ttl,
	Opt_conns,
	Opt_cache,
	Opt_data_mac,
	Opt_transport,
	Opt_rails,
	Opt_rdirplus,
};

static const struct constant_table pfs_cache_modes[] = {
	{ "buffered",	PFS_CACHE_BUFFERED },
	{ "none",	PFS_CACHE_NONE },
	{}
};

static const struct constant_table pfs_transports[] = {
	{ "auto",	PFS_XPRT_AUTO },
	{ "tcp",	PFS_XPRT_TCP },
	{ "rdma",	PFS_XPRT_RDMA },
	{}
};

static const struct fs_parameter_spec pfs_fs_parameters[] = {
	fsparam_string("secret_file", Opt_secret_file),
	fsparam_u32("timeout", Opt_timeout),
	fsparam_u32("connect_timeout", Opt_connect_timeout),
	fsparam_u32("attr_ttl", Opt_attr_ttl),
	fsparam_u32("name_ttl", Opt_name_ttl),
	fsparam_u32("conns", Opt_conns),
	fsparam_enum("cache", Opt_cache, pfs_cache_modes),
	fsparam_flag("data_mac", Opt_data_mac),
	fsparam_enum("transport", Opt_transport, pfs_transports),
	fsparam_string("rails", Opt_rails),
	fsparam_flag_no("rdirplus", Opt_rdirplus),
	{}
};

static void pfs_free_opts(struct pfs_mount_opts *opts)
{
	kfree(opts->source);
	kfree(opts->secret_file);
	opts->source = NULL;
	opts->secret_file = NULL;
}

/* rails=IF[:IF...]: the local interfaces to reach servers over RDMA through. */
static int pfs_parse_rails(struct fs_context *fc, struct pfs_mount_opts *opts,
			   char *list)
{
	char *name;

	opts->nrails = 0;
	while ((name = strsep(&list, ":")) != NULL) {
		if (!*name)
			return invalfc(fc, "rails: an empty interface name");
		if (opts->nrails == PFS_RAILS_MAX)
			return invalfc(fc, "rails: at most %d interfaces",
				       PFS_RAILS_MAX);
		if (strlen(name) >= PFS_RAIL_NAME_MAX)
			return invalfc(fc, "rails: \"%s\" is not an interface name",
				       name);
		strscpy(opts->rails[opts->nrails++], name, PFS_RAIL_NAME_MAX);
	}
	return 0;
}

static int pfs_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct pfs_mount_opts *opts = fc->fs_private;
	struct fs_parse_result result;
	int opt;

	opt = fs_parse(fc, pfs_fs_parameters, param, &result);
	if (opt < 0)
		return opt;

	switch (opt) {
	case Opt_secret_file:
		if (param->string[0] != '/')
			return invalfc(fc, "secret_file must be an absolute path");
		kfree(opts->secret_file);
		opts->secret_file = param->string;
		param->string = NULL;
		break;
	case Opt_timeout:
		if (result.uint_32 < 100 || result.uint_32 > 3600000)
			return invalfc(fc, "timeout must be 100..3600000 ms");
		opts->timeout_ms = result.uint_32;
		break;
	case Opt_connect_timeout:
		if (result.uint_32 < 100 || result.uint_32 > 600000)
			return invalfc(fc, "connect_timeout must be 100..600000 ms");
		opts->connect_timeout_ms = result.uint_32;
		break;
	case Opt_attr_ttl:
	case Opt_name_ttl:
		if (result.uint_32 > PFS_TTL_MAX_MS)
			return invalfc(fc, "%s must be 0..%u ms", param->key,
				       PFS_TTL_MAX_MS);
		*(opt == Opt_attr_ttl ? &opts->attr_ttl_ms :
		  &opts->name_ttl_ms) = result.uint_32;
		break;
	case Opt_conns:
		if (result.uint_32 < 1 || result.uint_32 > PFS_MAX_CONNS)
			return invalfc(fc, "conns must be 1..%d", PFS_MAX_CONNS);
		opts->conns_per_server = result.uint_32;
		break;
	case Opt_cache:
		opts->cache = result.uint_32;
		break;
	case Opt_data_mac:
		opts->data_mac = true;
		break;
	case Opt_rails:
		return pfs_parse_rails(fc, opts, param->string);
	case Opt_rdirplus:
		opts->nordirplus = result.negated;
		break;
	case Opt_transport:
#if !IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
		if (result.uint_32 == PFS_XPRT_RDMA)
			return invalfc(fc, "transport=rdma: this kernel has no RDMA support");
#endif
		opts->transport = result.uint_32;
		break;
	}
	return 0;
}

/*
 * The source is "ADDR[:PORT]", ADDR an IPv4 address or a bracketed IPv6
 * one ("[fd00::1]:8008"). Host names are mount.pfs's job.
 */
static int pfs_parse_source(struct fs_context *fc, const char *source,
			    struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	const char *end = NULL;
	const char *port_str = NULL;
	unsigned int port = PFS_DEFAULT_MGMTD_PORT;

	memset(ss, 0, sizeof(*ss));
	if (source[0] == '[') {
		if (!in6_pton(source + 1, -1, sin6->sin6_addr.s6_addr, ']', &end))
			goto bad;
		end++;		/* past ']' */
		sin6->sin6_family = AF_INET6;
	} else {
		if (!in4_pton(source, -1, (u8 *)&sin->sin_addr.s_addr, -1, &end) &&
		    !in4_pton(source, -1, (u8 *)&sin->sin_addr.s_addr, ':', &end))
			goto bad;
		sin->sin_family = AF_INET;
	}
	if (*end == ':')
		port_str = end + 1;
	else if (*end != '\0')
		goto bad;
	if (port_str && (kstrtouint(port_str, 10, &port) || port == 0 ||
			 port > 65535))
		return invalfc(fc, "bad port in source \"%s\"", source);
	if (ss->ss_family == AF_INET6)
		sin6->sin6_port = htons(port);
	else
		sin->sin_port = htons(port);
	return 0;
bad:
	return invalfc(fc,
		       "source \"%s\" is not ADDR[:PORT] of pfs-mgmtd (host names are resolved by mount.pfs)",
		       source);
}

/*
 * Reads the shared secret as the user-space daemons do: a regular file
 * that others cannot read, one trailing newline not part of the secret.
 */
static int pfs_read_secret(struct fs_context *fc, const char *path, u8 **out,
			   size_t *out_len)
{
	struct file *file;
	loff_t size, pos = 0;
	ssize_t n;
	u8 *buf;
	int rc;

	file = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(file))
		return invalfc(fc, "cannot open secret_file %s: %ld", path,
			       PTR_ERR(file));
	rc = -EINVAL;
	if (!S_ISREG(file_inode(file)->i_mode)) {
		errorfc(fc, "secret_file %s is not a regular file", path);
		goto out_close;
	}
	if (file_inode(file)->i_mode & 0077) {
		errorfc(fc, "secret_file %s is accessible by its group or others (chmod 600 it)",
			path);
		rc = -EACCES;
		goto out_close;
	}
	size = i_size_read(file_inode(file));
	if (size < PFS_SECRET_MIN || size > PFS_SECRET_MAX + 2) {
		errorfc(fc, "secret_file %s must hold %d..%d bytes", path,
			PFS_SECRET_MIN, PFS_SECRET_MAX);
		goto out_close;
	}
	rc = -ENOMEM;
	buf = kmalloc(size, GFP_KERNEL);
	if (!buf)
		goto out_close;
	n = kernel_read(file, buf, size, &pos);
	if (n != size) {
		errorfc(fc, "cannot read secret_file %s", path);
		rc = n < 0 ? n : -EIO;
		kfree_sensitive(buf);
		goto out_close;
	}
	if (n > 0 && buf[n - 1] == '\n') {
		n--;
		if (n > 0 && buf[n - 1] == '\r')
			n--;
	}
	if (n < PFS_SECRET_MIN) {
		errorfc(fc, "secret in %s is shorter than %d bytes", path,
			PFS_SECRET_MIN);
		rc = -EINVAL;
		kfree_sensitive(buf);
		goto out_close;
	}
	*out = buf;
	*out_len = n;
	rc = 0;
out_close:
	fput(file);
	return rc;
}

static struct inode *pfs_alloc_inode(struct super_block *sb)
{
	struct pfs_inode_info *pi;

	pi = alloc_inode_sb(sb, pfs_inode_cachep, GFP_KERNEL);
	if (!pi)
		return NULL;
	memset(&pi->id, 0, sizeof(pi->id));
	pi->attr_time = 0;
	pi->perm_time = 0;
	pi->layout = NULL;
	pi->verfs = NULL;
	pi->old_layout = NULL;
	pi->old_verfs = NULL;
	pi->reported_size = 0;
	pi->wb_fail_since = 0;
	pfs_write_behind_init(&pi->vfs_inode);
	pi->flags = 0;
	atomic_set(&pi->names_gen, 0);
	atomic_set(&pi->sa_misses, 0);
	pi->sa_pos = 0;
	pi->sa_pass_end = 0;
	pi->shards = NULL;
	pi->untracked = 0;
	pi->opening = 0;
	pi->removing = 0;
	pi->untracked_cred = NULL;
	pi->held = false;
	pi->held_epoch = 0;
	return &pi->vfs_inode;
}

static void pfs_free_inode(struct inode *inode)
{
	struct pfs_inode_info *pi = PFS_I(inode);

	kfree(pi->layout);
	pi->layout = NULL;
	pfs_verfs_free(pi->verfs);
	pi->verfs = NULL;
	kfree(pi->old_layout);
	pi->old_layout = NULL;
	pfs_verfs_free(pi->old_verfs);
	pi->old_verfs = NULL;
	kfree(pi->shards);
	pi->shards = NULL;
	kmem_cache_free(pfs_inode_cachep, pi);
}

static void pfs_evict_inode(struct inode *inode)
{
	/*
	 * Writeback keeps dirty data until it is stored or its loss recorded;
	 * only a umount whose sync was killed leaves some: never silently.
	 */
	if (inode->i_nlink && mapping_tagged(&inode->i_data,
					     PAGECACHE_TAG_DIRTY))
		pr_warn_ratelimited("inode %llu dropped with data not written back\n",
				    PFS_I(inode)->id.ino);
	pfs_write_behind_cancel(inode);
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
}

static int pfs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct super_block *sb = dentry->d_sb;
	struct pfs_sb_info *sbi = PFS_SB(sb);
	struct pfs_rpc rpc = { .type = PFS_MSG_STATFS };
	struct pfs_statfs st;
	int rc;

	rc = pfs_meta_call(sb, &sbi->root, &rpc);
	if (!rc)
		rc = pfs_decode(pfs_x_statfs, &st, rpc.reply, rpc.reply_len);
	pfs_rpc_release(&rpc);
	if (rc)
		return rc;

	buf->f_type = PFS_SUPER_MAGIC;
	buf->f_bsize = PAGE_SIZE;
	buf->f_frsize = PAGE_SIZE;
	buf->f_blocks = st.storage.bytes_total >> PAGE_SHIFT;
	buf->f_bfree = st.storage.bytes_free >> PAGE_SHIFT;
	buf->f_bavail = buf->f_bfree;
	buf->f_files = st.inodes_used + st.inodes_free;
	buf->f_ffree = st.inodes_free;
	buf->f_namelen = PFS_NAME_MAX - 1;
	buf->f_fsid = u64_to_fsid(sbi->client_id);
	return 0;
}

static int pfs_show_options(struct seq_file *m, struct dentry *root)
{
	const struct pfs_mount_opts *opts = &PFS_SB(root->d_sb)->opts;
	unsigned int i;

	seq_show_option(m, "secret_file", opts->secret_file);
	seq_printf(m, ",timeout=%u,connect_timeout=%u,attr_ttl=%u,name_ttl=%u,conns=%u",
		   opts->timeout_ms, opts->connect_timeout_ms,
		   opts->attr_ttl_ms, opts->name_ttl_ms,
		   opts->conns_per_server);
	seq_printf(m, ",cache=%s",
		   opts->cache == PFS_CACHE_NONE ? "none" : "buffered");
	if (opts->data_mac)
		seq_puts(m, ",data_mac");
	if (opts->nordirplus)
		seq_puts(m, ",nordirplus");
	seq_printf(m, ",transport=%s",
		   opts->transport == PFS_XPRT_TCP ? "tcp" :
		   opts->transport == PFS_XPRT_RDMA ? "rdma" : "auto");
	for (i = 0; i < opts->nrails; i++)
		seq_printf(m, "%s%s", i ? ":" : ",rails=", opts->rails[i]);
	return 0;
}

/* /proc/self/mountstats: what each transport carried. */
static int pfs_show_stats(struct seq_file *m, struct dentry *root)
{
	struct pfs_sb_info *sbi = PFS_SB(root->d_sb);

	if (sbi->net)
		pfs_net_show_stats(sbi->net, m);
	seq_printf(m, "\n\tnames statahead: lookups %lld pages %lld notices %d",
		   (long long)atomic64_read(&sbi->statahead_lookups),
		   (long long)atomic64_read(&sbi->statahead_pages),
		   atomic_read(&sbi->notices));
	seq_putc(m, '\n');
	return 0;
}

struct pfs_sync_call {
	u32 node_id;
	struct pfs_node *node;
	struct pfs_rpc rpc;
	int rc;
};

static void pfs_sync_start(struct pfs_net *net, u32 node_id,
			   struct pfs_sync_call *c)
{
	c->node_id = node_id;
	c->rpc = (struct pfs_rpc){ .type = PFS_MSG_SYNC_ALL, .reply_max = 64 };
	c->node = pfs_net_any_node(net, node_id);
	if (IS_ERR(c->node)) {
		c->rc = PTR_ERR(c->node);
		c->node = NULL;
		return;
	}
	c->rc = pfs_rpc_start(c->node, &c->rpc);
}

static int pfs_sync_finish(struct pfs_sync_call *c)
{
	if (c->node && !c->rc)
		c->rc = pfs_rpc_wait(&c->rpc);
	pfs_rpc_release(&c->rpc);
	if (c->node)
		pfs_node_put(c->node);
	if (c->rc)
		pr_warn_ratelimited("syncfs: node %u: %d\n", c->node_id, c->rc);
	return c->rc;
}

/*
 * syncfs(2) and sync(1): the VFS has written the dirty pages out, which
 * the servers acknowledged from their page caches, and what a metadata
 * server answered before its journal synced it (creates, unlinks, sizes
 * reported at close) may not be on disk either. Every server of the map
 * is asked to make all it acknowledged durable (SYNC_ALL), all at once;
 * the first error is the answer. Not at umount, which leaves durability
 * to the servers (as NFS's does): a dead server would hold it up.
 */
static int pfs_sync_fs(struct super_block *sb, int wait)
{
	struct pfs_sb_info *sbi = PFS_SB(sb);
	u32 *meta = NULL, *storage = NULL;
	struct pfs_sync_call *calls;
	int nmeta, nstorage, i, err, rc = 0;

	if (!wait || !sbi->net || sbi->unmounting)
		return 0;
	nmeta = pfs_net_node_ids(sbi->net, PFS_NODE_META, &meta);
	nstorage = pfs_net_node_ids(sbi->net, PFS_NODE_STORAGE, &storage);
	if (nmeta < 0 || nstorage < 0) {
		rc = -ENOMEM;
		goto out;
	}
	if (!nmeta && !nstorage)
		goto out;
	calls = kvcalloc(nmeta + nstorage, sizeof(*calls), GFP_KERNEL);
	if (!calls) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nmeta + nstorage; i++)
		pfs_sync_start(sbi->net, i < nmeta ? meta[i] : storage[i - nmeta],
			       &calls[i]);
	for (i = 0; i < nmeta + nstorage; i++) {
		err = pfs_sync_finish(&calls[i]);
		if (err && !rc)
			rc = err;
	}
	kvfree(calls);
out:
	kfree(meta);
	kfree(storage);
	return rc;
}

/* umount -f: whoever waits on a server gives up now. */
static void pfs_umount_begin(struct super_block *sb)
{
	struct pfs_sb_info *sbi = PFS_SB(sb);

	if (sbi->net)
		pfs_net_abort(sbi->net);
}

static const struct super_operations pfs_super_ops = {
	.alloc_inode	= pfs_alloc_inode,
	.free_inode	= pfs_free_inode,
	.evict_inode	= pfs_evict_inode,
	.statfs		= pfs_statfs,
	.sync_fs	= pfs_sync_fs,
	.show_options	= pfs_show_options,
	.show_stats	= pfs_show_stats,
	.umount_begin	= pfs_umount_begin,
};

static int pfs_start_net(struct fs_context *fc, struct pfs_sb_info *sbi)
{
	struct pfs_net_config cfg = {
		.mgmtd = sbi->opts.mgmtd,
		.transport = sbi->opts.transport,
		.timeout_ms = sbi->opts.timeout_ms,
		.connect_timeout_ms = sbi->opts.connect_timeout_ms,
		.conns_per_server = sbi->opts.conns_per_server,
		.client_id = sbi->client_id,
		.notify = pfs_notice,
		.lost = pfs_notices_lost,
		.notify_ctx = sbi,
	};
	u8 *secret = NULL;
	size_t secret_len = 0;
	struct pfs_net *net;
	int rc;

	rc = pfs_read_secret(fc, sbi->opts.secret_file, &secret, &secret_len);
	if (rc)
		return rc;
	rc = pfs_auth_client_key(secret, secret_len, cfg.key);
	kfree_sensitive(secret);
	if (rc) {
		errorfc(fc, "secret_file %s holds neither the cluster secret nor a client key (\"pfs-key-v1 client HEX\")",
			sbi->opts.secret_file);
		return rc;
	}
	memcpy(cfg.token, sbi->token, sizeof(cfg.token));
	cfg.data_mac = sbi->opts.data_mac;
	memcpy(cfg.rails, sbi->opts.rails, sizeof(cfg.rails));
	cfg.nrails = sbi->opts.nrails;
	if (cfg.nrails) {
		const char *bad = "";

		rc = pfs_net_check_rails(&cfg, &bad);
		if (rc) {
			memzero_explicit(&cfg, sizeof(cfg));
			return invalfc(fc, rc == -ENODEV ?
				       "rails: no interface \"%s\"" :
				       "rails: interface \"%s\" has no IPv4 address",
				       bad);
		}
	}
	net = pfs_net_start(&cfg);
	memzero_explicit(&cfg, sizeof(cfg));
	if (IS_ERR(net)) {
		rc = PTR_ERR(net);
		if (rc == -EACCES)
			errorfc(fc, "%s refused the shared secret in %s",
				sbi->opts.source, sbi->opts.secret_file);
		else
			errorfc(fc, "cannot reach pfs-mgmtd at %s: %d",
				sbi->opts.source, rc);
		return rc;
	}
	sbi->net = net;
	return 0;
}

static int pfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct pfs_sb_info *sbi = sb->s_fs_info;
	struct pfs_attr *attr;
	struct inode *root;
	u32 root_node;
	u32 len = 0;
	void *req;
	int rc;

	/* Before the net starts: notices look inodes up in sb. */
	sbi->sb = sb;
	pfs_sessions_init(&sbi->sessions, sb);
	pfs_close_batch_init(&sbi->closes, sb);
	pfs_resend_init(&sbi->resend, sb);
	sb->s_magic = PFS_SUPER_MAGIC;
	sb->s_op = &pfs_super_ops;
	sb->s_d_op = &pfs_dentry_ops;
	sb->s_xattr = pfs_xattr_handlers;
	sb->s_maxbytes = PFS_MAX_FILE_OFFSET;
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_time_gran = 1;
	/*
	 * The VFS remembers (S_NOSEC) that a file has no security.capability
	 * to remove at write; a change from another client clears it
	 * (pfs_notice, pfs_inode_update).
	 */
	sb->s_flags |= SB_POSIXACL | SB_NOSEC;

	rc = super_setup_bdi(sb);
	if (rc)
		return rc;
	sb->s_bdi->ra_pages = PFS_READAHEAD_BYTES >> PAGE_SHIFT;
	sb->s_bdi->io_pages = PFS_READAHEAD_BYTES >> PAGE_SHIFT;

	rc = pfs_start_net(fc, sbi);
	if (rc)
		return rc;
	rc = pfs_net_root_meta(sbi->net, &root_node);
	if (rc) {
		errorfc(fc, "no metadata server is registered with %s",
			sbi->opts.source);
		return rc;
	}
	sbi->root.ino = PFS_ROOT_INO;
	sbi->root.owner_node = root_node;
	sbi->root.generation = PFS_ROOT_GENERATION;

	attr = kzalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	req = pfs_encode(pfs_x_entry_id, &sbi->root, &len);
	if (IS_ERR(req)) {
		kfree(attr);
		return PTR_ERR(req);
	}
	rc = pfs_meta_attr_call(sb, &sbi->root, PFS_MSG_GETATTR, req, len,
				attr, NULL);
	kfree(req);
	if (rc) {
		kfree(attr);
		errorfc(fc, "cannot stat the root directory: %d", rc);
		return rc;
	}
	root = pfs_iget(sb, attr);
	kfree(attr);
	if (IS_ERR(root))
		return PTR_ERR(root);
	sb->s_root = d_make_root(root);
	if (!sb->s_root)
		return -ENOMEM;
	pfs_sessions_start(sb);
	return 0;
}

static int pfs_get_tree(struct fs_context *fc)
{
	struct pfs_mount_opts *opts = fc->fs_private;
	struct pfs_sb_info *sbi;
	int rc;

	if (!fc->source)
		return invalfc(fc, "no source: give ADDR[:PORT] of pfs-mgmtd");
	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	rc = pfs_parse_source(fc, fc->source, &opts->mgmtd);
	if (rc) {
		kfree(sbi);
		return rc;
	}
	/* The options move into the super block: one owner from here on. */
	sbi->opts = *opts;
	sbi->opts.source = kstrdup(fc->source, GFP_KERNEL);
	opts->secret_file = NULL;
	if (!sbi->opts.secret_file)
		sbi->opts.secret_file = kstrdup(PFS_DEFAULT_SECRET_FILE,
						GFP_KERNEL);
	if (!sbi->opts.source || !sbi->opts.secret_file) {
		pfs_free_opts(&sbi->opts);
		kfree(sbi);
		return -ENOMEM;
	}
	/* attr_ttl=0 (always ask) covers names, unless name_ttl says. */
	if (sbi->opts.name_ttl_ms == PFS_NAME_TTL_UNSET)
		sbi->opts.name_ttl_ms = sbi->opts.attr_ttl_ms ?
			max(sbi->opts.attr_ttl_ms, PFS_DEFAULT_NAME_TTL_MS) : 0;
	sbi->attr_ttl = msecs_to_jiffies(sbi->opts.attr_ttl_ms);
	sbi->name_ttl = msecs_to_jiffies(sbi->opts.name_ttl_ms);
	atomic_set(&sbi->names_epoch, 0);
	atomic_set(&sbi->notices, 0);
	atomic_set(&sbi->statahead_pending, 0);
	atomic64_set(&sbi->statahead_lookups, 0);
	atomic64_set(&sbi->statahead_pages, 0);
	/* Only who knows the token can act as this client id (BIND_CLIENT). */
	get_random_bytes(sbi->token, sizeof(sbi->token));
	sbi->client_id = pfs_auth_client_id(sbi->token);
	get_random_bytes(&sbi->lock_key, sizeof(sbi->lock_key));

	fc->s_fs_info = sbi;
	return get_tree_nodev(fc, pfs_fill_super);
}

static void pfs_free_fc(struct fs_context *fc)
{
	struct pfs_mount_opts *opts = fc->fs_private;
	struct pfs_sb_info *sbi = fc->s_fs_info;

	if (opts) {
		pfs_free_opts(opts);
		kfree(opts);
	}
	/* Set only when get_tree failed before the super block took it. */
	if (sbi) {
		if (sbi->net)
			pfs_net_stop(sbi->net);
		pfs_free_opts(&sbi->opts);
		kfree(sbi);
	}
}

static int pfs_reconfigure(struct fs_context *fc)
{
	/* Options are fixed at mount; remount only changes VFS flags. */
	sync_filesystem(fc->root->d_sb);
	return 0;
}

static const struct fs_context_operations pfs_context_ops = {
	.parse_param	= pfs_parse_param,
	.get_tree	= pfs_get_tree,
	.reconfigure	= pfs_reconfigure,
	.free		= pfs_free_fc,
};

static int pfs_init_fs_context(struct fs_context *fc)
{
	struct pfs_mount_opts *opts;

	opts = kzalloc(sizeof(*opts), GFP_KERNEL);
	if (!opts)
		return -ENOMEM;
	opts->timeout_ms = PFS_DEFAULT_TIMEOUT_MS;
	opts->connect_timeout_ms = PFS_DEFAULT_CONNECT_TIMEOUT_MS;
	opts->attr_ttl_ms = PFS_DEFAULT_ATTR_TTL_MS;
	opts->name_ttl_ms = PFS_NAME_TTL_UNSET;
	opts->conns_per_server = PFS_DEFAULT_CONNS;
	opts->cache = PFS_CACHE_BUFFERED;
	fc->fs_private = opts;
	fc->ops = &pfs_context_ops;
	return 0;
}

static void pfs_kill_sb(struct super_block *sb)
{
	struct pfs_sb_info *sbi = PFS_SB(sb);

	if (sbi) {
		pfs_statahead_drain(sb);
		sbi->unmounting = true;
	}
	/* Evicts inodes and writes back dirty data: the net must live. */
	kill_anon_super(sb);
	if (sbi) {
		if (sbi->net) {
			/* Queued CLOSEs go out while the net and the session live. */
			pfs_drain_closes(sb);
			pfs_resend_drain(sb);
			pfs_sessions_end(sb);
			pfs_net_stop(sbi->net);
		}
		pfs_sessions_free(&sbi->sessions);
		pfs_free_opts(&sbi->opts);
		kfree(sbi);
	}
}

struct file_system_type pfs_fs_type = {
	.owner			= THIS_MODULE,
	.name			= "pfs",
	.init_fs_context	= pfs_init_fs_context,
	.parameters		= pfs_fs_parameters,
	.kill_sb		= pfs_kill_sb,
};
