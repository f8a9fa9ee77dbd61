// SPDX-License-Identifier: GPL-2.0 OR MIT
#include "pfs_xdr.h"

void pfs_xdr_init_encode(struct pfs_xdr *x, void *buf, __u32 cap)
{
	x->buf = buf;
	x->cap = cap;
	x->pos = 0;
	x->op = PFS_XDR_ENCODE;
	x->err = 0;
}

void pfs_xdr_init_decode(struct pfs_xdr *x, const void *buf, __u32 len)
{
	/* Decoding never writes through buf. */
	x->buf = (__u8 *)buf;
	x->cap = len;
	x->pos = 0;
	x->op = PFS_XDR_DECODE;
	x->err = 0;
}

void pfs_xdr_init_size(struct pfs_xdr *x)
{
	x->buf = NULL;
	x->cap = 0;
	x->pos = 0;
	x->op = PFS_XDR_SIZE;
	x->err = 0;
}

/*
 * Reserves n bytes at the cursor. Returns the place to read or write, or
 * NULL when sizing or on error (then x->err is set).
 */
static __u8 *pfs_xdr_take(struct pfs_xdr *x, __u32 n)
{
	__u8 *p;

	if (x->err)
		return NULL;
	if (x->op == PFS_XDR_SIZE) {
		if (n > 0xffffffffu - x->pos) {
			x->err = -EMSGSIZE;
			return NULL;
		}
		x->pos += n;
		return NULL;
	}
	if (n > x->cap - x->pos) {
		x->err = x->op == PFS_XDR_DECODE ? -EBADMSG : -EMSGSIZE;
		return NULL;
	}
	p = x->buf + x->pos;
	x->pos += n;
	return p;
}

static int pfs_x_uint(struct pfs_xdr *x, __u64 *v, unsigned int width)
{
	__u8 *p = pfs_xdr_take(x, width);
	unsigned int i;
	__u64 r = 0;

	if (!p)
		return x->err;
	if (x->op == PFS_XDR_ENCODE) {
		for (i = 0; i < width; i++)
			p[i] = (__u8)(*v >> (8 * i));
	} else {
		for (i = 0; i < width; i++)
			r |= (__u64)p[i] << (8 * i);
		*v = r;
	}
	return 0;
}

int pfs_x_u8(struct pfs_xdr *x, __u8 *v)
{
	__u64 t = *v;
	int rc = pfs_x_uint(x, &t, 1);

	if (!rc && pfs_xdr_decoding(x))
		*v = (__u8)t;
	return rc;
}

int pfs_x_u16(struct pfs_xdr *x, __u16 *v)
{
	__u64 t = *v;
	int rc = pfs_x_uint(x, &t, 2);

	if (!rc && pfs_xdr_decoding(x))
		*v = (__u16)t;
	return rc;
}

int pfs_x_u32(struct pfs_xdr *x, __u32 *v)
{
	__u64 t = *v;
	int rc = pfs_x_uint(x, &t, 4);

	if (!rc && pfs_xdr_decoding(x))
		*v = (__u32)t;
	return rc;
}

int pfs_x_u64(struct pfs_xdr *x, __u64 *v)
{
	return pfs_x_uint(x, v, 8);
}

int pfs_x_s32(struct pfs_xdr *x, __s32 *v)
{
	return pfs_x_u32(x, (__u32 *)v);
}

int pfs_x_s64(struct pfs_xdr *x, __s64 *v)
{
	return pfs_x_u64(x, (__u64 *)v);
}

int pfs_x_bytes(struct pfs_xdr *x, void *p, __u32 n)
{
	__u8 *at = pfs_xdr_take(x, n);

	if (!at)
		return x->err;
	if (x->op == PFS_XDR_ENCODE)
		memcpy(at, p, n);
	else
		memcpy(p, at, n);
	return 0;
}

int pfs_x_str(struct pfs_xdr *x, char *s, __u32 cap)
{
	__u16 len = 0;
	__u8 *at;

	if (x->err)
		return x->err;
	if (cap == 0 || cap > 0x10000u) {
		x->err = -EINVAL;
		return x->err;
	}
	if (x->op != PFS_XDR_DECODE) {
		size_t n = strnlen(s, cap);

		if (n >= cap) {	/* not terminated inside its buffer */
			x->err = -EINVAL;
			return x->err;
		}
		len = (__u16)n;
	}
	if (pfs_x_u16(x, &len))
		return x->err;
	if (pfs_xdr_decoding(x) && len >= cap) {
		x->err = -EBADMSG;
		return x->err;
	}
	at = pfs_xdr_take(x, len);
	if (x->err)
		return x->err;
	if (x->op == PFS_XDR_SIZE || len == 0) {
		if (pfs_xdr_decoding(x))
			s[0] = '\0';
		return 0;
	}
	if (x->op == PFS_XDR_ENCODE) {
		memcpy(at, s, len);
		return 0;
	}
	if (memchr(at, 0, len)) {
		x->err = -EBADMSG;
		return x->err;
	}
	memcpy(s, at, len);
	s[len] = '\0';
	return 0;
}

int pfs_x_count(struct pfs_xdr *x, __u32 *n, __u32 max, __u32 min_elem_size)
{
	if (!pfs_xdr_decoding(x) && *n > max && !x->err)
		x->err = -EMSGSIZE;
	if (pfs_x_u32(x, n))
		return x->err;
	if (!pfs_xdr_decoding(x))
		return 0;
	if (*n > max ||
	    (min_elem_size && *n > pfs_xdr_remaining(x) / min_elem_size)) {
		x->err = -EBADMSG;
		return x->err;
	}
	return 0;
}

int pfs_xdr_finish(struct pfs_xdr *x)
{
	if (!x->err && pfs_xdr_decoding(x) && x->pos != x->cap)
		x->err = -EBADMSG;
	return x->err;
}
