// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer target: every message body decoder. The first input byte picks
 * the message (modulo the number of messages), the rest is its encoding.
 * A body that decodes must size, encode and decode again to identical
 * contents, and its encoding must be the very bytes it was decoded from
 * (the encoding is canonical: every byte read is a field that is kept).
 *
 * List replies are a pfs_x_count followed by that many elements (GET_NODES,
 * GET_TARGETS, GET_POOLS); HEARTBEAT carries its count in its body.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfs_proto.h"
#include "fuzz_messages.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct msg {
	void *body;	/* desc->body_size bytes */
	__u32 count;	/* list elements */
	void *elems;	/* count * desc->elem_size bytes */
};

static void msg_free(struct msg *m)
{
	free(m->body);
	free(m->elems);
	memset(m, 0, sizeof(*m));
}

/* Encodes, decodes (allocating what it decodes into) or sizes a message. */
static int msg_x(const struct fuzz_msg_desc *d, struct pfs_xdr *x,
		 struct msg *m)
{
	__u32 i;

	if (pfs_xdr_decoding(x) && d->body_size) {
		m->body = calloc(1, d->body_size);
		if (!m->body)
			abort();
	}
	if (d->body && d->body(x, m->body))
		return x->err;
	if (!d->elem)
		return x->err;
	if (d->body_count)
		m->count = d->body_count(m->body);
	else if (pfs_x_count(x, &m->count, PFS_MAX_LIST, d->elem_min))
		return x->err;
	if (pfs_xdr_decoding(x)) {
		/* pfs_x_count bounded count by the bytes left. */
		if (m->count > pfs_xdr_remaining(x) / d->elem_min)
			abort();
		m->elems = calloc(m->count ? m->count : 1, d->elem_size);
		if (!m->elems)
			abort();
	}
	for (i = 0; i < m->count; i++)
		if (d->elem(x, (char *)m->elems + (size_t)i * d->elem_size))
			break;
	return x->err;
}

static int msg_decode(const struct fuzz_msg_desc *d, struct msg *m,
		      const __u8 *buf, __u32 len)
{
	struct pfs_xdr x;

	memset(m, 0, sizeof(*m));
	pfs_xdr_init_decode(&x, buf, len);
	msg_x(d, &x, m);
	return pfs_xdr_finish(&x);
}

static void fail(const struct fuzz_msg_desc *d, const char *what)
{
	fprintf(stderr, "fuzz_messages: %s: %s\n", d->name, what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_msg_desc *d;
	struct msg m1, m2;
	struct pfs_xdr x;
	__u32 len, elen;
	__u8 *buf;
	int rc;

	if (size < 1 || size - 1 > PFS_MAX_PAYLOAD)
		return 0;
	d = &fuzz_msgs[data[0] % FUZZ_NUM_MSGS];
	len = (__u32)(size - 1);

	rc = msg_decode(d, &m1, data + 1, len);
	if (rc) {
		if (rc != -EBADMSG)
			fail(d, "decode error other than EBADMSG");
		msg_free(&m1);
		return 0;
	}

	pfs_xdr_init_size(&x);
	if (msg_x(d, &x, &m1))
		fail(d, "size pass failed on decoded message");
	elen = x.pos;
	if (elen != len)
		fail(d, "size pass disagrees with decoded length");

	buf = malloc(elen ? elen : 1);
	if (!buf)
		abort();
	pfs_xdr_init_encode(&x, buf, elen);
	if (msg_x(d, &x, &m1) || x.pos != elen)
		fail(d, "encoding a decoded message failed");
	if (memcmp(buf, data + 1, elen))
		fail(d, "re-encoding differs from the input");

	rc = msg_decode(d, &m2, buf, elen);
	if (rc)
		fail(d, "second decode failed");
	if (d->body_size && memcmp(m1.body, m2.body, d->body_size))
		fail(d, "body differs after round trip");
	if (m1.count != m2.count)
		fail(d, "element count differs after round trip");
	if (d->elem &&
	    memcmp(m1.elems, m2.elems, (size_t)m1.count * d->elem_size))
		fail(d, "elements differ after round trip");

	free(buf);
	msg_free(&m1);
	msg_free(&m2);
	return 0;
}
