/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GPUDirect Storage through nvidia-fs.
 *
 * nvidia-fs does not look for file systems: it __symbol_get()s a fixed list
 * of registration functions (pfs_v1_* is added by the patch in
 * packaging/nvidia-fs/) and hands each the table of DMA operations below.
 * The table is nvidia-fs' ABI (struct nvfs_dma_rw_ops in its nvfs-dma.h):
 * the field order and the feature bits must stay as they are. It is
 * declared here so that neither pfs.ko nor the test double of nvidia-fs
 * (tests/kernel/nvfs_mock/) needs NVIDIA's headers.
 */
#ifndef PFS_NVFS_H
#define PFS_NVFS_H

#include <linux/build_bug.h>
#include <linux/dma-direction.h>
#include <linux/stddef.h>
#include <linux/types.h>

struct device;
struct page;
struct request;
struct request_queue;
struct scatterlist;
struct nvfs_rdma_info;

/* Feature bits of ft_bmap. */
#define PFS_NVFS_FT_PREP_SGLIST		(1ULL << 0)
#define PFS_NVFS_FT_MAP_SGLIST		(1ULL << 1)
#define PFS_NVFS_FT_IS_GPU_PAGE		(1ULL << 2)
#define PFS_NVFS_FT_DEVICE_PRIORITY	(1ULL << 3)
#define PFS_NVFS_FT_GPU_SGLIST_RDMA_INFO (1ULL << 4)
/*
 * Not nvidia-fs': a test double whose "GPU" pages are CPU memory says so,
 * and RDMA devices without DMA (soft-RoCE, which copies with the CPU at
 * kernel virtual addresses) may then carry them. Real GPU memory has no
 * such addresses: without this bit, only devices that DMA are used.
 */
#define PFS_NVFS_FT_CPU_PAGES		(1ULL << 63)

/* What pfs.ko calls: mapping scatterlists, telling GPU pages and their GPU. */
#define PFS_NVFS_FT_NEEDED (PFS_NVFS_FT_MAP_SGLIST | PFS_NVFS_FT_IS_GPU_PAGE | \
			    PFS_NVFS_FT_DEVICE_PRIORITY)

/* nvfs_dma_map_sg_attrs' and nvfs_dma_unmap_sg's failures. */
#define PFS_NVFS_IO_ERR		(-1)	/* mapping failed, or CPU and GPU mixed */
#define PFS_NVFS_BAD_REQ	(-2)	/* not GPU pages */

struct nvfs_dma_rw_ops {
	unsigned long long ft_bmap;
	int (*nvfs_blk_rq_map_sg)(struct request_queue *q, struct request *req,
				  struct scatterlist *sglist);
	/* The number of entries mapped, PFS_NVFS_IO_ERR or PFS_NVFS_BAD_REQ. */
	int (*nvfs_dma_map_sg_attrs)(struct device *device,
				     struct scatterlist *sglist, int nents,
				     enum dma_data_direction dma_dir,
				     unsigned long attrs);
	/* The number of GPU entries unmapped, or PFS_NVFS_IO_ERR. */
	int (*nvfs_dma_unmap_sg)(struct device *device,
				 struct scatterlist *sglist, int nents,
				 enum dma_data_direction dma_dir);
	bool (*nvfs_is_gpu_page)(struct page *page);
	unsigned int (*nvfs_gpu_index)(struct page *page);
	/* Lower is nearer the GPU. */
	unsigned int (*nvfs_device_priority)(struct device *dev,
					     unsigned int gpu_index);
	int (*nvfs_get_gpu_sglist_rdma_info)(struct scatterlist *sglist,
					     int nents,
					     struct nvfs_rdma_info *rdma_infop);
};

/* The layout nvidia-fs compiles against (64-bit: u64, then 7 pointers). */
static_assert(offsetof(struct nvfs_dma_rw_ops, nvfs_blk_rq_map_sg) == 8);
static_assert(offsetof(struct nvfs_dma_rw_ops, nvfs_is_gpu_page) ==
	      8 + 3 * sizeof(void *));
static_assert(offsetof(struct nvfs_dma_rw_ops,
		       nvfs_get_gpu_sglist_rdma_info) ==
	      8 + 6 * sizeof(void *));
static_assert(sizeof(struct nvfs_dma_rw_ops) == 8 + 7 * sizeof(void *));

/* Exported for nvidia-fs (GPL: newer kernels refuse others to symbol_get). */
int pfs_v1_register_nvfs_dma_ops(struct nvfs_dma_rw_ops *ops);
void pfs_v1_unregister_nvfs_dma_ops(void);

/*
 * One transfer on GPU memory: the operations it uses stay registered until
 * pfs_gpu_end (unregistering waits for it).
 */
struct pfs_gpu_io {
	const struct nvfs_dma_rw_ops *ops;
	unsigned int gpu;		/* the GPU its pages belong to */
};

/*
 * Whether the n pinned pages of a transfer are GPU memory: 1 (g set,
 * counted in flight until pfs_gpu_end), 0 (CPU memory, or nvidia-fs not
 * registered), -EINVAL (CPU and GPU pages mixed, or not the kind, 1 or 0,
 * of the transfer's earlier pages; kind -1: none yet).
 */
int pfs_gpu_begin(struct page **pages, unsigned int n, int kind,
		  struct pfs_gpu_io *g);
void pfs_gpu_end(struct pfs_gpu_io *g);
/* How near dev (an RDMA device's DMA device) is to g's GPU; lower: nearer. */
unsigned int pfs_gpu_priority(const struct pfs_gpu_io *g, struct device *dev);
/*
 * Maps n entries of GPU pages for dev (nvidia-fs fills their DMA
 * addresses): the entries mapped, -EINVAL (not GPU pages) or -EFAULT.
 */
int pfs_gpu_map(const struct pfs_gpu_io *g, struct device *dev,
		struct scatterlist *sg, int n, enum dma_data_direction dir);
void pfs_gpu_unmap(const struct pfs_gpu_io *g, struct device *dev,
		   struct scatterlist *sg, int n, enum dma_data_direction dir);
/* nvidia-fs' operations are registered now. */
bool pfs_gpu_registered(void);
/* An RDMA device without DMA (soft-RoCE) may carry g (PFS_NVFS_FT_CPU_PAGES). */
bool pfs_gpu_virtual_ok(const struct pfs_gpu_io *g);

#endif /* PFS_NVFS_H */
