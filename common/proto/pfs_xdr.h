/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Bounds-checked little-endian serialisation, XDR style: one function per
 * field type serves encoding, decoding and size counting, so that every
 * message is described by a single function and its encoder and decoder
 * cannot disagree.
 *
 * Errors are sticky: after the first failure every further call is a no-op
 * and returns the same negative errno, so a message function can call the
 * primitives in sequence and return x->err at the end.
 */
#ifndef PFS_XDR_H
#define PFS_XDR_H

#include "pfs_types.h"

enum pfs_xdr_op {
	PFS_XDR_ENCODE = 1,
	PFS_XDR_DECODE = 2,
	PFS_XDR_SIZE = 3,	/* count the bytes an encoding would need */
};

struct pfs_xdr {
	__u8 *buf;
	__u32 cap;		/* bytes available in buf */
	__u32 pos;		/* bytes consumed or produced so far */
	int op;
	int err;		/* 0 or the first negative errno */
};

void pfs_xdr_init_encode(struct pfs_xdr *x, void *buf, __u32 cap);
void pfs_xdr_init_decode(struct pfs_xdr *x, const void *buf, __u32 len);
void pfs_xdr_init_size(struct pfs_xdr *x);

static inline int pfs_xdr_decoding(const struct pfs_xdr *x)
{
	return x->op == PFS_XDR_DECODE;
}

/* Bytes left to decode (0 when encoding or sizing). */
static inline __u32 pfs_xdr_remaining(const struct pfs_xdr *x)
{
	return x->op == PFS_XDR_DECODE ? x->cap - x->pos : 0;
}

int pfs_x_u8(struct pfs_xdr *x, __u8 *v);
int pfs_x_u16(struct pfs_xdr *x, __u16 *v);
int pfs_x_u32(struct pfs_xdr *x, __u32 *v);
int pfs_x_u64(struct pfs_xdr *x, __u64 *v);
int pfs_x_s32(struct pfs_xdr *x, __s32 *v);
int pfs_x_s64(struct pfs_xdr *x, __s64 *v);
/* Fixed number of raw bytes. */
int pfs_x_bytes(struct pfs_xdr *x, void *p, __u32 n);
/*
 * NUL-terminated string held in a char[cap]: a u16 length then the bytes.
 * Decoding rejects a length >= cap and embedded NUL bytes.
 */
int pfs_x_str(struct pfs_xdr *x, char *s, __u32 cap);
/*
 * Element count of a list that follows: decoding rejects counts above max
 * and counts whose elements (min_elem_size bytes each, at least) could not
 * fit in what is left, so a hostile count cannot make the caller allocate.
 */
int pfs_x_count(struct pfs_xdr *x, __u32 *n, __u32 max, __u32 min_elem_size);
/*
 * Ends a decode: trailing bytes are an error. Returns x->err otherwise.
 */
int pfs_xdr_finish(struct pfs_xdr *x);

#endif /* PFS_XDR_H */
