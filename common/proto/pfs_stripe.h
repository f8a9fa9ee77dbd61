/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * RAID0 stripe math shared by client and servers. A file is cut into
 * chunk_size pieces dealt round-robin over an ordered list of targets;
 * each target stores its pieces back to back in one chunk file.
 */
#ifndef PFS_STRIPE_H
#define PFS_STRIPE_H

#include "pfs_types.h"

#define PFS_CHUNK_SIZE_MIN	(64u << 10)
#define PFS_CHUNK_SIZE_MAX	(1u << 30)
#define PFS_STRIPE_TARGETS_MAX	256

struct pfs_stripe_pos {
	__u32 target_index;	/* into the layout's target list */
	__u32 offset_in_chunk;
	__u64 chunk_file_offset;	/* offset in that target's chunk file */
};

/* 0 if usable: a power of two within limits and 1..MAX targets. */
static inline int pfs_stripe_check(__u32 chunk_size, __u32 num_targets)
{
	if (chunk_size < PFS_CHUNK_SIZE_MIN || chunk_size > PFS_CHUNK_SIZE_MAX ||
	    (chunk_size & (chunk_size - 1)))
		return -EINVAL;
	if (num_targets == 0 || num_targets > PFS_STRIPE_TARGETS_MAX)
		return -EINVAL;
	return 0;
}

/* Where file_offset lives. The layout must have passed pfs_stripe_check. */
static inline void pfs_stripe_locate(__u32 chunk_size, __u32 num_targets,
				     __u64 file_offset,
				     struct pfs_stripe_pos *pos)
{
	__u32 shift = (__u32)__builtin_ctz(chunk_size);
	__u64 stripe = file_offset >> shift;
	__u32 index;
	__u64 round = PFS_DIV_U64_REM(stripe, num_targets, &index);

	pos->target_index = index;
	pos->offset_in_chunk = (__u32)(file_offset & (chunk_size - 1));
	pos->chunk_file_offset = (round << shift) + pos->offset_in_chunk;
}

/*
 * Bytes of a file of file_size that the target at target_index stores:
 * the length its chunk file must have.
 */
static inline __u64 pfs_stripe_target_size(__u32 chunk_size,
					   __u32 num_targets,
					   __u32 target_index,
					   __u64 file_size)
{
	struct pfs_stripe_pos end;

	if (file_size == 0)
		return 0;
	pfs_stripe_locate(chunk_size, num_targets, file_size - 1, &end);
	if (end.target_index == target_index)
		return end.chunk_file_offset + 1;
	if (target_index < end.target_index)
		return end.chunk_file_offset - end.offset_in_chunk + chunk_size;
	return end.chunk_file_offset - end.offset_in_chunk;
}

/*
 * The first offset of target_index's chunk file that holds a byte of the
 * file at or after file_offset. Each target's chunk file maps its bytes
 * to file offsets in order, so the bytes of a file range
 * [start, end) on one target are the chunk file's range
 * [pfs_stripe_target_from(start), pfs_stripe_target_from(end)).
 */
static inline __u64 pfs_stripe_target_from(__u32 chunk_size,
					   __u32 num_targets,
					   __u32 target_index,
					   __u64 file_offset)
{
	struct pfs_stripe_pos pos;
	__u64 round_start;

	pfs_stripe_locate(chunk_size, num_targets, file_offset, &pos);
	round_start = pos.chunk_file_offset - pos.offset_in_chunk;
	if (target_index == pos.target_index)
		return pos.chunk_file_offset;
	if (target_index > pos.target_index)
		return round_start;
	return round_start + chunk_size;
}

/* The file offset of byte chunk_offset of target_index's chunk file. */
static inline __u64 pfs_stripe_file_offset(__u32 chunk_size,
					   __u32 num_targets,
					   __u32 target_index,
					   __u64 chunk_offset)
{
	__u32 shift = (__u32)__builtin_ctz(chunk_size);
	__u64 round = chunk_offset >> shift;

	return ((round * num_targets + target_index) << shift) +
	       (chunk_offset & (chunk_size - 1));
}

#endif /* PFS_STRIPE_H */
