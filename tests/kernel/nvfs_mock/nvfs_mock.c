// SPDX-License-Identifier: GPL-2.0
/*
 * A test double of nvidia-fs (NVIDIA/gds-nvidia-fs), for machines without
 * a GPU: it finds pfs.ko the way nvidia-fs does, by __symbol_get() of
 * pfs_v1_register_nvfs_dma_ops when its device is opened, and hands over
 * DMA operations for which the pages of its own device's mappings are
 * "GPU" pages.
 *
 * /dev/pfs_nvfs_mock: mmap() gives zeroed pages of "GPU" number
 * offset / PAGE_SIZE (as cuFile's buffers are nvidia-fs' mappings); writing
 * "unregister" makes it unregister (nvidia-fs does when its last user
 * goes), which waits for pfs.ko's transfers in flight; "probe" looks for
 * pfs.ko again.
 *
 * Parameters: near (rw): the device name (dev_name) nearest every GPU, of
 * priority 0, others 100; cpu_pages (load time, default 1): tell pfs.ko
 * that the "GPU" pages are CPU memory (PFS_NVFS_FT_CPU_PAGES), so that
 * soft-RoCE may carry them (0: like nvidia-fs); registered, maps, unmaps,
 * live (ro): whether pfs.ko took the operations, scatterlists of GPU pages
 * mapped and unmapped, and mapped now. Each live mapping holds a reference
 * on this module, so it cannot be unloaded while pfs.ko might still unmap.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "nvfs.h"

#define MOCK_REGISTER	"pfs_v1_register_nvfs_dma_ops"
#define MOCK_UNREGISTER	"pfs_v1_unregister_nvfs_dma_ops"
#define MOCK_FAR	100

/* pfn -> xa_mk_value(GPU number), for every page mapped from the device */
static DEFINE_XARRAY(mock_gpu_pages);
/* scatterlists mapped for DMA, until unmapped: what unmap undoes */
static DEFINE_XARRAY(mock_mapped);

static bool cpu_pages = true;
module_param(cpu_pages, bool, 0444);
MODULE_PARM_DESC(cpu_pages, "say that the \"GPU\" pages are CPU memory (soft-RoCE may carry them)");

static DEFINE_SPINLOCK(mock_near_lock);
static char mock_near[32];

static atomic64_t mock_maps, mock_unmaps;

static DEFINE_MUTEX(mock_reg_lock);
static int (*mock_reg)(struct nvfs_dma_rw_ops *ops);
static void (*mock_unreg)(void);

/* ---- the DMA operations ---- */

static bool mock_is_gpu_page(struct page *page)
{
	return xa_load(&mock_gpu_pages, page_to_pfn(page));
}

static unsigned int mock_gpu_index(struct page *page)
{
	void *v = xa_load(&mock_gpu_pages, page_to_pfn(page));

	return v ? xa_to_value(v) : 0;
}

static unsigned int mock_device_priority(struct device *dev,
					 unsigned int gpu_index)
{
	unsigned int prio;

	spin_lock(&mock_near_lock);
	prio = mock_near[0] && !strcmp(dev_name(dev), mock_near) ? 0 :
								   MOCK_FAR;
	spin_unlock(&mock_near_lock);
	return prio;
}

/* GPU entries in sgl: their count, or PFS_NVFS_IO_ERR when mixed. */
static int mock_classify(struct scatterlist *sgl, int nents)
{
	struct scatterlist *sg;
	int i, gpu = 0;

	for_each_sg(sgl, sg, nents, i)
		gpu += mock_is_gpu_page(sg_page(sg));
	return gpu && gpu != nents ? PFS_NVFS_IO_ERR : gpu;
}

/* A device that really DMAs gets its DMA API; a virtual one, addresses. */
static bool mock_real_dma(struct device *dev)
{
	return dev->dma_mask && *dev->dma_mask;
}

static int mock_map_sg(struct device *dev, struct scatterlist *sgl,
		       int nents, enum dma_data_direction dir,
		       unsigned long attrs)
{
	struct scatterlist *sg;
	int i, gpu = mock_classify(sgl, nents);

	if (gpu <= 0)
		return gpu ? gpu : PFS_NVFS_BAD_REQ;
	if (xa_err(xa_store(&mock_mapped, (unsigned long)sgl, xa_mk_value(1),
			    GFP_KERNEL)))
		return PFS_NVFS_IO_ERR;
	for_each_sg(sgl, sg, nents, i) {
		if (mock_real_dma(dev)) {
			sg_dma_address(sg) = dma_map_page_attrs(dev,
					sg_page(sg), sg->offset, sg->length,
					dir, attrs);
			if (dma_mapping_error(dev, sg_dma_address(sg)))
				goto undo;
		} else {
			sg_dma_address(sg) = (uintptr_t)sg_virt(sg);
		}
		sg_dma_len(sg) = sg->length;
	}
	__module_get(THIS_MODULE);
	atomic64_inc(&mock_maps);
	return nents;
undo:
	while (i--) {
		sg = &sgl[i];
		dma_unmap_page_attrs(dev, sg_dma_address(sg), sg_dma_len(sg),
				     dir, attrs);
	}
	xa_erase(&mock_mapped, (unsigned long)sgl);
	return PFS_NVFS_IO_ERR;
}

static int mock_unmap_sg(struct device *dev, struct scatterlist *sgl,
			 int nents, enum dma_data_direction dir)
{
	struct scatterlist *sg;
	int i;

	/* Ours whatever became of the buffer since (its pages are pinned). */
	if (!xa_erase(&mock_mapped, (unsigned long)sgl))
		return mock_classify(sgl, nents) ? PFS_NVFS_IO_ERR : 0;
	if (mock_real_dma(dev))
		for_each_sg(sgl, sg, nents, i)
			dma_unmap_page(dev, sg_dma_address(sg), sg_dma_len(sg),
				       dir);
	atomic64_inc(&mock_unmaps);
	module_put(THIS_MODULE);
	return nents;
}

static int mock_blk_rq_map_sg(struct request_queue *q, struct request *req,
			      struct scatterlist *sgl)
{
	return PFS_NVFS_IO_ERR;		/* block devices: not ours to test */
}

static int mock_rdma_info(struct scatterlist *sgl, int nents,
			  struct nvfs_rdma_info *info)
{
	return PFS_NVFS_IO_ERR;
}

static struct nvfs_dma_rw_ops mock_ops = {
	.ft_bmap = PFS_NVFS_FT_PREP_SGLIST | PFS_NVFS_FT_MAP_SGLIST |
		   PFS_NVFS_FT_IS_GPU_PAGE | PFS_NVFS_FT_DEVICE_PRIORITY |
		   PFS_NVFS_FT_GPU_SGLIST_RDMA_INFO,
	.nvfs_blk_rq_map_sg = mock_blk_rq_map_sg,
	.nvfs_dma_map_sg_attrs = mock_map_sg,
	.nvfs_dma_unmap_sg = mock_unmap_sg,
	.nvfs_is_gpu_page = mock_is_gpu_page,
	.nvfs_gpu_index = mock_gpu_index,
	.nvfs_device_priority = mock_device_priority,
	.nvfs_get_gpu_sglist_rdma_info = mock_rdma_info,
};

/* ---- finding pfs.ko, as nvidia-fs' probe_module_list does ---- */

static void mock_probe(void)
{
	int err;

	mutex_lock(&mock_reg_lock);
	if (mock_reg)
		goto out;
	mock_reg = __symbol_get(MOCK_REGISTER);
	if (!mock_reg)
		goto out;		/* pfs.ko not loaded (yet) */
	mock_unreg = __symbol_get(MOCK_UNREGISTER);
	if (!mock_unreg) {
		__symbol_put(MOCK_REGISTER);
		mock_reg = NULL;
		goto out;
	}
	err = mock_reg(&mock_ops);
	if (err) {
		pr_warn("pfs refused the DMA operations: %d\n", err);
		__symbol_put(MOCK_UNREGISTER);
		__symbol_put(MOCK_REGISTER);
		mock_reg = NULL;
		mock_unreg = NULL;
		goto out;
	}
	pr_info("registered with pfs\n");
out:
	mutex_unlock(&mock_reg_lock);
}

static void mock_unregister(void)
{
	mutex_lock(&mock_reg_lock);
	if (mock_reg) {
		mock_unreg();
		__symbol_put(MOCK_UNREGISTER);
		__symbol_put(MOCK_REGISTER);
		mock_reg = NULL;
		mock_unreg = NULL;
		pr_info("unregistered from pfs\n");
	}
	mutex_unlock(&mock_reg_lock);
}

/* ---- the device: "GPU" buffers ---- */

/* A buffer, shared by its vma and the vmas copied or split from it. */
struct mock_buffer {
	struct kref ref;
	struct page **pages;
	unsigned long npages;
};

static void mock_buffer_free(struct mock_buffer *b)
{
	unsigned long i;

	for (i = 0; i < b->npages; i++) {
		xa_erase(&mock_gpu_pages, page_to_pfn(b->pages[i]));
		put_page(b->pages[i]);	/* pinned ones live on until unpinned */
	}
	kvfree(b->pages);
	kfree(b);
}

static void mock_buffer_release(struct kref *ref)
{
	mock_buffer_free(container_of(ref, struct mock_buffer, ref));
}

static void mock_vma_open(struct vm_area_struct *vma)
{
	struct mock_buffer *b = vma->vm_private_data;

	kref_get(&b->ref);
}

static void mock_vma_close(struct vm_area_struct *vma)
{
	struct mock_buffer *b = vma->vm_private_data;

	kref_put(&b->ref, mock_buffer_release);
}

static const struct vm_operations_struct mock_vm_ops = {
	.open = mock_vma_open,
	.close = mock_vma_close,
};

static int mock_mmap(struct file *file, struct vm_area_struct *vma)
{
	unsigned long n = vma_pages(vma), i;
	unsigned long gpu = vma->vm_pgoff;
	struct mock_buffer *b;
	int err = -ENOMEM;

	/* GPU memory is shared: a private copy of it would be CPU memory. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	kref_init(&b->ref);
	b->pages = kvcalloc(n, sizeof(*b->pages), GFP_KERNEL);
	if (!b->pages)
		goto fail;
	for (i = 0; i < n; i++) {
		struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);

		if (!page)
			goto fail;
		b->pages[b->npages++] = page;
		err = xa_err(xa_store(&mock_gpu_pages, page_to_pfn(page),
				      xa_mk_value(gpu), GFP_KERNEL));
		if (err)
			goto fail;
		err = vm_insert_page(vma, vma->vm_start + i * PAGE_SIZE, page);
		if (err)
			goto fail;
	}
	vma->vm_private_data = b;
	vma->vm_ops = &mock_vm_ops;
	return 0;
fail:
	/* The vma goes without a close call: the pages inserted go with it. */
	mock_buffer_free(b);
	return err;
}

static int mock_open(struct inode *inode, struct file *file)
{
	mock_probe();		/* nvidia-fs looks for file systems on open */
	return 0;
}

static ssize_t mock_write(struct file *file, const char __user *buf,
			  size_t len, loff_t *pos)
{
	char cmd[16] = {};

	if (copy_from_user(cmd, buf, min(len, sizeof(cmd) - 1)))
		return -EFAULT;
	strim(cmd);
	if (!strcmp(cmd, "unregister"))
		mock_unregister();
	else if (!strcmp(cmd, "probe"))
		mock_probe();
	else
		return -EINVAL;
	return len;
}

static const struct file_operations mock_fops = {
	.owner = THIS_MODULE,
	.open = mock_open,
	.mmap = mock_mmap,
	.write = mock_write,
};

static struct miscdevice mock_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "pfs_nvfs_mock",
	.fops = &mock_fops,
};

/* ---- parameters ---- */

static int mock_near_set(const char *val, const struct kernel_param *kp)
{
	spin_lock(&mock_near_lock);
	strscpy(mock_near, val, sizeof(mock_near));
	strim(mock_near);
	spin_unlock(&mock_near_lock);
	return 0;
}

static int mock_near_get(char *buf, const struct kernel_param *kp)
{
	int n;

	spin_lock(&mock_near_lock);
	n = sysfs_emit(buf, "%s\n", mock_near);
	spin_unlock(&mock_near_lock);
	return n;
}

static const struct kernel_param_ops mock_near_ops = {
	.set = mock_near_set,
	.get = mock_near_get,
};
module_param_cb(near, &mock_near_ops, NULL, 0644);
MODULE_PARM_DESC(near, "device name (dev_name) nearest every GPU");

static int mock_count_get(char *buf, const struct kernel_param *kp)
{
	long long maps = atomic64_read(&mock_maps);
	long long unmaps = atomic64_read(&mock_unmaps);
	const char *what = kp->arg;

	if (!strcmp(what, "registered"))
		return sysfs_emit(buf, "%d\n", READ_ONCE(mock_reg) != NULL);
	if (!strcmp(what, "maps"))
		return sysfs_emit(buf, "%lld\n", maps);
	if (!strcmp(what, "unmaps"))
		return sysfs_emit(buf, "%lld\n", unmaps);
	return sysfs_emit(buf, "%lld\n", maps - unmaps);
}

static const struct kernel_param_ops mock_count_ops = {
	.get = mock_count_get,
};
module_param_cb(registered, &mock_count_ops, "registered", 0444);
module_param_cb(maps, &mock_count_ops, "maps", 0444);
module_param_cb(unmaps, &mock_count_ops, "unmaps", 0444);
module_param_cb(live, &mock_count_ops, "live", 0444);

static int __init mock_init(void)
{
	int err;

	if (cpu_pages)
		mock_ops.ft_bmap |= PFS_NVFS_FT_CPU_PAGES;
	err = misc_register(&mock_dev);
	if (err)
		return err;
	mock_probe();
	return 0;
}

static void __exit mock_exit(void)
{
	/* No mapping is live (each holds the module), no device is open. */
	mock_unregister();
	misc_deregister(&mock_dev);
	xa_destroy(&mock_gpu_pages);
	xa_destroy(&mock_mapped);
}

module_init(mock_init);
module_exit(mock_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("test double of nvidia-fs for PFS's GPUDirect Storage tests");
