/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Chunk requests to the storage targets (stripe.c), shared with the page
 * cache's writeback (addr.c), which sends its batches as such requests.
 */
#ifndef PFS_KMOD_STRIPE_H
#define PFS_KMOD_STRIPE_H

#include "pfs.h"

/* Room for an encoded pfs_chunk_io (32 bytes) or pfs_chunk_ref (20). */
#define PFS_CHUNK_HDR_MAX	48

/* One chunk request and the part of the caller's buffer it moves. */
struct pfs_chunk_req {
	struct pfs_rpc rpc;
	struct pfs_node *node;
	struct inode *inode;
	u32 target_index;	/* in the layout: whose write verifier */
	u32 target_id;
	struct iov_iter data;	/* the piece's bytes, left untouched */
	struct iov_iter wire;	/* the copy the transport consumes */
	loff_t pos;		/* file offset of the piece */
	u32 len;
	u8 hdr[PFS_CHUNK_HDR_MAX];
};

/* The layout of a regular file, NULL when unknown or unusable. */
const struct pfs_layout *pfs_layout_of(struct inode *inode);
/*
 * Starts a CHUNK_READ or CHUNK_WRITE of len bytes at file offset pos; the
 * bytes are the first len of data (which is not advanced).
 */
int pfs_chunk_start_io(struct inode *inode, const struct pfs_layout *lo,
		       struct pfs_chunk_req *r, u16 type, loff_t pos, u32 len,
		       const struct iov_iter *data, const struct pfs_gpu_io *gpu);
/* Waits for a started request and checks its reply; frees its resources. */
int pfs_chunk_finish(struct pfs_chunk_req *r);

#endif /* PFS_KMOD_STRIPE_H */
