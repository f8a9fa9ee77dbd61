// SPDX-License-Identifier: GPL-2.0
/*
 * A root-only knob that drives the transport without a mount, for tests
 * in the guest and for poking at a cluster:
 *
 *   echo 'start 127.0.0.1:8008 /etc/pfs/secret [timeout_ms [conns]]' \
 *	> /sys/module/pfs/parameters/net_debug
 *   echo 'ping NODE COUNT [WORKERS]' > ...	COUNT PINGs in flight at
 *					once, from each of WORKERS threads
 *   echo 'io TARGET COUNT' > ...	writes COUNT pages of a pattern to a
 *					test chunk, reads them back with
 *					COUNT CHUNK_READs in flight, checks
 *   echo 'getattr' > ...		GETATTR of / on the root meta node
 *   echo 'map' > ...			the map's size, as pushes left it
 *   echo 'refresh' | 'abort' | 'stop' > ...
 *   cat /sys/module/pfs/parameters/net_debug	result of the last command
 *
 * A failing command fails the write with its errno. The net is stopped
 * at module unload.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/inet.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "pfs.h"
#include "net_int.h"

#define PFS_DBG_SECRET_MAX	4096
#define PFS_DBG_MAX_COUNT	4096
#define PFS_DBG_MAX_WORKERS	16
#define PFS_DBG_TEST_INO	0x7e57c0deULL

static struct pfs_net *pfs_dbg_net;
static char pfs_dbg_result[256] = "idle";

static int pfs_dbg_parse_addr(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	const char *end;
	u16 port = PFS_DEFAULT_MGMTD_PORT;

	memset(ss, 0, sizeof(*ss));
	if (!in4_pton(s, -1, (u8 *)&sin->sin_addr.s_addr, ':', &end))
		return -EINVAL;
	if (*end == ':' && kstrtou16(end + 1, 10, &port))
		return -EINVAL;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	return 0;
}

static u8 *pfs_dbg_read_secret(const char *path, size_t *len)
{
	struct file *f = filp_open(path, O_RDONLY, 0);
	loff_t pos = 0;
	ssize_t n;
	u8 *buf;

	if (IS_ERR(f))
		return ERR_CAST(f);
	buf = kmalloc(PFS_DBG_SECRET_MAX, GFP_KERNEL);
	if (!buf) {
		filp_close(f, NULL);
		return ERR_PTR(-ENOMEM);
	}
	n = kernel_read(f, buf, PFS_DBG_SECRET_MAX, &pos);
	filp_close(f, NULL);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n <= 0) {
		kfree_sensitive(buf);
		return ERR_PTR(n < 0 ? n : -EINVAL);
	}
	*len = n;
	return buf;
}

static int pfs_dbg_start(char *args)
{
	struct pfs_net_config cfg = { .client_id = 0 };
	char *addr = strsep(&args, " ");
	char *path = strsep(&args, " ");
	char *opt;
	struct pfs_net *net;
	size_t len = 0;
	u8 *secret;
	int err;

	if (pfs_dbg_net)
		return -EBUSY;
	if (!addr || !path || pfs_dbg_parse_addr(addr, &cfg.mgmtd))
		return -EINVAL;
	opt = strsep(&args, " ");
	if (opt && kstrtouint(opt, 10, &cfg.timeout_ms))
		return -EINVAL;
	opt = strsep(&args, " ");
	cfg.conns_per_server = 2;
	if (opt && kstrtouint(opt, 10, &cfg.conns_per_server))
		return -EINVAL;
	secret = pfs_dbg_read_secret(path, &len);
	if (IS_ERR(secret))
		return PTR_ERR(secret);
	err = pfs_auth_client_key(secret, len, cfg.key);
	kfree_sensitive(secret);
	if (err)
		return err;
	get_random_bytes(cfg.token, sizeof(cfg.token));
	cfg.client_id = pfs_auth_client_id(cfg.token);
	net = pfs_net_start(&cfg);
	memzero_explicit(&cfg, sizeof(cfg));
	if (IS_ERR(net))
		return PTR_ERR(net);
	pfs_dbg_net = net;
	return 0;
}

struct pfs_dbg_ping {
	struct work_struct work;
	struct pfs_node *node;
	unsigned int count;
	int err;
};

/* count PINGs in flight at once; every reply must name the node. */
static void pfs_dbg_ping_work(struct work_struct *work)
{
	struct pfs_dbg_ping *p = container_of(work, struct pfs_dbg_ping, work);
	struct pfs_ping_reply pong;
	struct pfs_rpc *rpcs;
	unsigned int i, started;
	int err = 0;

	rpcs = kvcalloc(p->count, sizeof(*rpcs), GFP_KERNEL);
	if (!rpcs) {
		p->err = -ENOMEM;
		return;
	}
	for (started = 0; started < p->count; started++) {
		rpcs[started].type = PFS_MSG_PING;
		err = pfs_rpc_start(p->node, &rpcs[started]);
		if (err)
			break;
	}
	for (i = 0; i < started; i++) {
		int e = pfs_rpc_wait(&rpcs[i]);

		if (!e)
			e = pfs_decode(pfs_x_ping_reply, &pong, rpcs[i].reply,
				       rpcs[i].reply_len);
		if (!e && pong.node_id != p->node->id)
			e = -EBADMSG;
		if (e && !err)
			err = e;
		pfs_rpc_release(&rpcs[i]);
	}
	kvfree(rpcs);
	p->err = err;
}

static int pfs_dbg_ping(struct pfs_net *net, char *args)
{
	unsigned int id, count, workers = 1, i;
	struct pfs_dbg_ping *p;
	struct pfs_node *node;
	ktime_t t0 = ktime_get();
	int err = 0;

	if (sscanf(args, "%u %u %u", &id, &count, &workers) < 2 ||
	    !count || count > PFS_DBG_MAX_COUNT || !workers ||
	    workers > PFS_DBG_MAX_WORKERS)
		return -EINVAL;
	node = pfs_net_any_node(net, id);
	if (IS_ERR(node))
		return PTR_ERR(node);
	p = kcalloc(workers, sizeof(*p), GFP_KERNEL);
	if (!p) {
		pfs_node_put(node);
		return -ENOMEM;
	}
	for (i = 0; i < workers; i++) {
		INIT_WORK(&p[i].work, pfs_dbg_ping_work);
		p[i].node = node;
		p[i].count = count;
		queue_work(system_unbound_wq, &p[i].work);
	}
	for (i = 0; i < workers; i++) {
		flush_work(&p[i].work);
		if (p[i].err && !err)
			err = p[i].err;
	}
	snprintf(pfs_dbg_result, sizeof(pfs_dbg_result),
		 "ping %s: %u x %u requests, %lld us, error %d", node->name,
		 workers, count, ktime_us_delta(ktime_get(), t0), err);
	kfree(p);
	pfs_node_put(node);
	return err;
}

static u8 pfs_dbg_pattern(size_t pos)
{
	return (u8)(pos * 7 + (pos >> 12) * 13 + 1);
}

/* One CHUNK_WRITE of count pages of the pattern at offset 0. */
static int pfs_dbg_write(struct pfs_node *node, struct pfs_chunk_io *io,
			 u8 *data, size_t len)
{
	struct pfs_chunk_written written;
	struct kvec kv = { .iov_base = data, .iov_len = len };
	struct pfs_rpc rpc = { .type = PFS_MSG_CHUNK_WRITE };
	struct iov_iter iter;
	u32 req_len;
	void *req;
	int err;

	io->offset = 0;
	io->length = len;
	req = pfs_encode(pfs_x_chunk_io, io, &req_len);
	if (IS_ERR(req))
		return PTR_ERR(req);
	iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, len);
	rpc.req = req;
	rpc.req_len = req_len;
	rpc.req_data = &iter;
	rpc.bulk = true;
	err = pfs_rpc_call(node, &rpc);
	if (!err)
		err = pfs_decode(pfs_x_chunk_written, &written, rpc.reply,
				 rpc.reply_len);
	if (!err && written.length != len)
		err = -EIO;
	pfs_rpc_release(&rpc);
	kfree(req);
	return err;
}

struct pfs_dbg_read {
	struct pfs_rpc rpc;
	struct bio_vec bv;
	struct iov_iter iter;
	struct page *page;
	void *req;
};

/* count single-page CHUNK_READs in flight at once, started last first. */
static int pfs_dbg_read(struct pfs_node *node, struct pfs_chunk_io *io,
			unsigned int count)
{
	struct pfs_dbg_read *r;
	unsigned int i, started = 0;
	u32 req_len;
	int err = 0;

	r = kvcalloc(count, sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	for (i = count; i-- > 0 && !err; started++) {
		r[i].page = alloc_page(GFP_KERNEL);
		io->offset = (u64)i * PAGE_SIZE;
		io->length = PAGE_SIZE;
		r[i].req = pfs_encode(pfs_x_chunk_io, io, &req_len);
		if (!r[i].page || IS_ERR(r[i].req)) {
			err = -ENOMEM;
			break;
		}
		r[i].bv = (struct bio_vec){ .bv_page = r[i].page,
					    .bv_len = PAGE_SIZE };
		iov_iter_bvec(&r[i].iter, ITER_DEST, &r[i].bv, 1, PAGE_SIZE);
		r[i].rpc = (struct pfs_rpc){ .type = PFS_MSG_CHUNK_READ,
					     .req = r[i].req,
					     .req_len = req_len,
					     .reply_data = &r[i].iter,
					     .bulk = true };
		err = pfs_rpc_start(node, &r[i].rpc);
		if (err)
			break;
	}
	for (i = count - started; i < count; i++) {
		int e = pfs_rpc_wait(&r[i].rpc);
		u8 *p = page_address(r[i].page);
		size_t k;

		if (!e && r[i].rpc.data_len != PAGE_SIZE)
			e = -EIO;
		for (k = 0; !e && k < PAGE_SIZE; k++)
			if (p[k] != pfs_dbg_pattern(i * PAGE_SIZE + k))
				e = -EBADMSG;
		if (e && !err)
			err = e;
		pfs_rpc_release(&r[i].rpc);
	}
	for (i = 0; i < count; i++) {
		if (r[i].page)
			__free_page(r[i].page);
		if (!IS_ERR(r[i].req))
			kfree(r[i].req);
	}
	kvfree(r);
	return err;
}

static int pfs_dbg_io(struct pfs_net *net, char *args)
{
	struct pfs_chunk_io io = {};
	unsigned int target, count;
	struct pfs_node *node;
	ktime_t t0 = ktime_get();
	size_t len, k;
	u8 *data;
	int err;

	if (sscanf(args, "%u %u", &target, &count) != 2 || !count ||
	    count > PFS_MAX_IO / PAGE_SIZE)
		return -EINVAL;
	node = pfs_net_target_node(net, target);
	if (IS_ERR(node))
		return PTR_ERR(node);
	len = (size_t)count * PAGE_SIZE;
	data = vmalloc(len);
	if (!data) {
		pfs_node_put(node);
		return -ENOMEM;
	}
	for (k = 0; k < len; k++)
		data[k] = pfs_dbg_pattern(k);
	io.chunk.file.ino = PFS_DBG_TEST_INO;
	io.chunk.file.owner_node = 1;
	io.chunk.file.generation = 1;
	io.chunk.target_id = target;
	err = pfs_dbg_write(node, &io, data, len);
	if (!err)
		err = pfs_dbg_read(node, &io, count);
	vfree(data);
	snprintf(pfs_dbg_result, sizeof(pfs_dbg_result),
		 "io %s target %u: %u pages, %lld us, error %d", node->name,
		 target, count, ktime_us_delta(ktime_get(), t0), err);
	pfs_node_put(node);
	return err;
}

static int pfs_dbg_getattr(struct pfs_net *net)
{
	struct pfs_entry_id root = { .ino = PFS_ROOT_INO,
				     .generation = PFS_ROOT_GENERATION };
	struct pfs_rpc rpc = { .type = PFS_MSG_GETATTR };
	struct pfs_node *node;
	struct pfs_attr *attr;
	u32 len;
	int err;

	err = pfs_net_root_meta(net, &root.owner_node);
	if (err)
		return err;
	node = pfs_net_meta_node(net, root.owner_node);
	if (IS_ERR(node))
		return PTR_ERR(node);
	attr = kmalloc(sizeof(*attr), GFP_KERNEL);
	rpc.req = pfs_encode(pfs_x_entry_id, &root, &len);
	rpc.req_len = len;
	err = !attr ? -ENOMEM : PTR_ERR_OR_ZERO(rpc.req);
	if (!err)
		err = pfs_rpc_call(node, &rpc);
	if (!err)
		err = pfs_decode(pfs_x_attr, attr, rpc.reply, rpc.reply_len);
	if (!err)
		snprintf(pfs_dbg_result, sizeof(pfs_dbg_result),
			 "getattr / on %s: mode %o nlink %u", node->name,
			 attr->mode, attr->nlink);
	pfs_rpc_release(&rpc);
	if (!IS_ERR(rpc.req))
		kfree(rpc.req);
	kfree(attr);
	pfs_node_put(node);
	return err;
}

static int pfs_dbg_run(char *cmd)
{
	char *verb = strsep(&cmd, " ");
	struct pfs_net *net = pfs_dbg_net;
	u32 nodes, targets;
	int err;

	if (!strcmp(verb, "start"))
		return pfs_dbg_start(cmd);
	if (!net)
		return -ENOTCONN;
	if (!strcmp(verb, "stop")) {
		pfs_dbg_net = NULL;
		pfs_net_stop(net);
		return 0;
	}
	if (!strcmp(verb, "abort")) {
		pfs_net_abort(net);
		return 0;
	}
	if (!strcmp(verb, "refresh") || !strcmp(verb, "map")) {
		err = verb[0] == 'r' ? pfs_map_refresh(net) : 0;
		pfs_map_counts(net, &nodes, &targets);
		snprintf(pfs_dbg_result, sizeof(pfs_dbg_result),
			 "map: %u nodes, %u targets", nodes, targets);
		return err;
	}
	if (!strcmp(verb, "getattr"))
		return pfs_dbg_getattr(net);
	if (!cmd)
		return -EINVAL;
	if (!strcmp(verb, "ping"))
		return pfs_dbg_ping(net, cmd);
	if (!strcmp(verb, "io"))
		return pfs_dbg_io(net, cmd);
	return -EINVAL;
}

/* Serialised by the module's parameter lock. */
static int pfs_dbg_set(const char *val, const struct kernel_param *kp)
{
	char *cmd = kstrdup(val, GFP_KERNEL);
	u32 nodes, targets;
	int err;

	if (!cmd)
		return -ENOMEM;
	err = pfs_dbg_run(strim(cmd));
	if (err)
		snprintf(pfs_dbg_result, sizeof(pfs_dbg_result),
			 "%s: error %d", strim(cmd), err);
	else if (!strncmp(cmd, "start", 5) && pfs_dbg_net) {
		pfs_map_counts(pfs_dbg_net, &nodes, &targets);
		snprintf(pfs_dbg_result, sizeof(pfs_dbg_result),
			 "started: %u nodes, %u targets", nodes, targets);
	}
	kfree(cmd);
	return err;
}

static int pfs_dbg_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", pfs_dbg_result);
}

/* Called when the module is removed. */
static void pfs_dbg_free(void *arg)
{
	if (pfs_dbg_net)
		pfs_net_stop(pfs_dbg_net);
	pfs_dbg_net = NULL;
}

static const struct kernel_param_ops pfs_dbg_ops = {
	.set = pfs_dbg_set,
	.get = pfs_dbg_get,
	.free = pfs_dbg_free,
};

module_param_cb(net_debug, &pfs_dbg_ops, NULL, 0600);
MODULE_PARM_DESC(net_debug, "transport test commands (see kmod/net/debug.c)");
