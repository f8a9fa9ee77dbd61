// SPDX-License-Identifier: GPL-2.0
/*
 * Load-time self-check of the shared protocol codec: encodes a frame
 * header and a REGISTER_NODE body, decodes them back and compares, so that
 * a codec that misbehaves in the kernel build never gets to talk to a
 * server.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "pfs.h"

static int pfs_selftest_header(void)
{
	static const struct pfs_header in = {
		.magic = PFS_PROTO_MAGIC,
		.version = PFS_PROTO_VERSION,
		.type = PFS_MSG_REGISTER_NODE,
		.flags = PFS_FLAG_REPLY,
		.payload_len = 4242,
		.request_id = 0x0102030405060708ULL,
		.uid = 1000,
		.gid = 100,
		.client_id = 0x1122334455667788ULL,
		.client_seq = 0xfedcba9876543210ULL,
	};
	struct pfs_header out = {};
	__u8 buf[PFS_HEADER_SIZE];
	int rc;

	pfs_header_encode(&in, buf);
	/* Little endian on the wire: the magic reads "PFS1". */
	if (memcmp(buf, "PFS1", 4)) {
		pr_err("self-check: header magic encoded as %*ph\n", 4, buf);
		return -EINVAL;
	}
	rc = pfs_header_decode(&out, buf, sizeof(buf));
	if (rc) {
		pr_err("self-check: header decode failed: %d\n", rc);
		return -EINVAL;
	}
	if (out.magic != in.magic || out.version != in.version ||
	    out.type != in.type || out.flags != in.flags ||
	    out.payload_len != in.payload_len ||
	    out.request_id != in.request_id || out.uid != in.uid ||
	    out.gid != in.gid || out.client_id != in.client_id ||
	    out.client_seq != in.client_seq) {
		pr_err("self-check: header differs after round trip\n");
		return -EINVAL;
	}
	return 0;
}

static int pfs_selftest_register_node(void)
{
	struct pfs_register_node *in, *out;
	struct pfs_xdr x;
	__u8 *buf = NULL;
	__u32 len;
	int rc = -ENOMEM;

	in = kzalloc(sizeof(*in), GFP_KERNEL);
	out = kzalloc(sizeof(*out), GFP_KERNEL);
	if (!in || !out)
		goto out_free;
	in->node_id = 7;
	in->node_type = PFS_NODE_CLIENT;
	in->port = PFS_DEFAULT_META_PORT;
	strscpy(in->alias, "selftest", sizeof(in->alias));
	strscpy(in->host, "client.example.org", sizeof(in->host));

	pfs_xdr_init_size(&x);
	rc = pfs_x_register_node(&x, in);
	if (rc) {
		pr_err("self-check: sizing REGISTER_NODE failed: %d\n", rc);
		goto out_inval;
	}
	len = x.pos;
	buf = kmalloc(len, GFP_KERNEL);
	if (!buf) {
		rc = -ENOMEM;
		goto out_free;
	}
	pfs_xdr_init_encode(&x, buf, len);
	rc = pfs_x_register_node(&x, in);
	if (rc || x.pos != len) {
		pr_err("self-check: encoding REGISTER_NODE failed: %d\n", rc);
		goto out_inval;
	}
	pfs_xdr_init_decode(&x, buf, len);
	pfs_x_register_node(&x, out);
	rc = pfs_xdr_finish(&x);
	if (rc) {
		pr_err("self-check: decoding REGISTER_NODE failed: %d\n", rc);
		goto out_inval;
	}
	if (out->node_id != in->node_id || out->node_type != in->node_type ||
	    out->port != in->port || strcmp(out->alias, in->alias) ||
	    strcmp(out->host, in->host)) {
		pr_err("self-check: REGISTER_NODE differs after round trip\n");
		goto out_inval;
	}
	rc = 0;
	goto out_free;

out_inval:
	rc = -EINVAL;
out_free:
	kfree(buf);
	kfree(out);
	kfree(in);
	return rc;
}

int pfs_proto_selftest(void)
{
	int rc;

	rc = pfs_selftest_header();
	if (rc)
		return rc;
	return pfs_selftest_register_node();
}
