// SPDX-License-Identifier: GPL-2.0
/*
 * GPUDirect Storage: nvidia-fs registers its DMA operations here, and an
 * O_DIRECT transfer whose pages are GPU pages (nvidia-fs' shadow buffers)
 * has them mapped by nvidia-fs for the RDMA device of the rail nearest its
 * GPU, so that the storage server's RDMA READ and WRITE go straight to GPU
 * memory: no bounce buffer, no copy on this node.
 *
 * Either module may load first: nvidia-fs looks for pfs_v1_* whenever it
 * is opened, and its symbol references keep pfs.ko loaded while it is
 * registered. Transfers in flight are counted per CPU; unregistering
 * waits until none is left, so nvidia-fs' code and mappings outlive every
 * transfer that uses them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/scatterlist.h>
#include <linux/wait.h>

#include "nvfs.h"

static const struct nvfs_dma_rw_ops __rcu *pfs_nvfs_ops;
static DEFINE_MUTEX(pfs_nvfs_lock);		/* registering, unregistering */
static DEFINE_PER_CPU(long, pfs_gpu_inflight);	/* begun, not ended */
static DECLARE_WAIT_QUEUE_HEAD(pfs_gpu_idle);
static bool pfs_nvfs_leaving;			/* an unregister waits */

int pfs_v1_register_nvfs_dma_ops(struct nvfs_dma_rw_ops *ops)
{
	int err = 0;

	if (!ops)
		return -EINVAL;
	if ((ops->ft_bmap & PFS_NVFS_FT_NEEDED) != PFS_NVFS_FT_NEEDED ||
	    !ops->nvfs_dma_map_sg_attrs || !ops->nvfs_dma_unmap_sg ||
	    !ops->nvfs_is_gpu_page || !ops->nvfs_gpu_index ||
	    !ops->nvfs_device_priority) {
		pr_warn("nvidia-fs offers features %#llx, pfs needs %#llx: GPU buffers stay unsupported\n",
			ops->ft_bmap, PFS_NVFS_FT_NEEDED);
		return -EOPNOTSUPP;
	}
	mutex_lock(&pfs_nvfs_lock);
	if (rcu_access_pointer(pfs_nvfs_ops))
		err = -EBUSY;
	else
		rcu_assign_pointer(pfs_nvfs_ops, ops);
	mutex_unlock(&pfs_nvfs_lock);
	if (!err)
		pr_info("nvidia-fs registered (features %#llx): GPU buffers go by RDMA\n",
			ops->ft_bmap);
	return err;
}
EXPORT_SYMBOL_GPL(pfs_v1_register_nvfs_dma_ops);

static long pfs_gpu_inflight_sum(void)
{
	long sum = 0;
	int cpu;

	/*
	 * Once no transfer can begin, counts only fall: a sum read while
	 * they do is never below the true one, so 0 means none is left.
	 */
	for_each_possible_cpu(cpu)
		sum += per_cpu(pfs_gpu_inflight, cpu);
	return sum;
}

void pfs_v1_unregister_nvfs_dma_ops(void)
{
	unsigned int waited = 0;

	mutex_lock(&pfs_nvfs_lock);
	if (!rcu_access_pointer(pfs_nvfs_ops)) {
		mutex_unlock(&pfs_nvfs_lock);
		return;
	}
	WRITE_ONCE(pfs_nvfs_leaving, true);
	RCU_INIT_POINTER(pfs_nvfs_ops, NULL);
	/* Every begin that saw the operations has counted itself now. */
	synchronize_rcu();
	while (!wait_event_timeout(pfs_gpu_idle, pfs_gpu_inflight_sum() <= 0,
				   HZ)) {
		if (!waited++)
			pr_info("nvidia-fs unregisters: waiting for %ld GPU transfers\n",
				pfs_gpu_inflight_sum());
	}
	/* What the transfers did with the operations comes before our return. */
	smp_mb();
	WRITE_ONCE(pfs_nvfs_leaving, false);
	mutex_unlock(&pfs_nvfs_lock);
	pr_info("nvidia-fs unregistered%s\n",
		waited ? " after its last transfer" : "");
}
EXPORT_SYMBOL_GPL(pfs_v1_unregister_nvfs_dma_ops);

bool pfs_gpu_registered(void)
{
	return rcu_access_pointer(pfs_nvfs_ops);
}

bool pfs_gpu_virtual_ok(const struct pfs_gpu_io *g)
{
	return g->ops->ft_bmap & PFS_NVFS_FT_CPU_PAGES;
}

int pfs_gpu_begin(struct page **pages, unsigned int n, int kind,
		  struct pfs_gpu_io *g)
{
	const struct nvfs_dma_rw_ops *ops;
	unsigned int i, gpus = 0;
	int got;

	rcu_read_lock();
	ops = rcu_dereference(pfs_nvfs_ops);
	if (ops)
		this_cpu_inc(pfs_gpu_inflight);
	rcu_read_unlock();
	g->ops = ops;
	for (i = 0; ops && i < n; i++)
		gpus += ops->nvfs_is_gpu_page(pages[i]);
	got = !gpus ? 0 : gpus == n ? 1 : -EINVAL;
	if (got >= 0 && kind >= 0 && got != kind)
		got = -EINVAL;		/* unlike the transfer's first pages */
	if (got == 1) {
		/* One buffer is one GPU's: nvidia-fs maps it as a whole. */
		g->gpu = ops->nvfs_gpu_index(pages[0]);
		return 1;
	}
	if (got < 0)
		pr_warn_ratelimited("an O_DIRECT buffer mixes GPU and CPU pages: EINVAL\n");
	pfs_gpu_end(g);
	return got;
}

void pfs_gpu_end(struct pfs_gpu_io *g)
{
	if (!g->ops)
		return;
	g->ops = NULL;
	/* Every use of nvidia-fs' operations happens before the count falls. */
	smp_mb();
	this_cpu_dec(pfs_gpu_inflight);
	/* Pairs with the unregister's wait: it sees the count or is woken. */
	smp_mb();
	if (READ_ONCE(pfs_nvfs_leaving))
		wake_up_all(&pfs_gpu_idle);
}

unsigned int pfs_gpu_priority(const struct pfs_gpu_io *g, struct device *dev)
{
	return g->ops->nvfs_device_priority(dev, g->gpu);
}

int pfs_gpu_map(const struct pfs_gpu_io *g, struct device *dev,
		struct scatterlist *sg, int n, enum dma_data_direction dir)
{
	int mapped = g->ops->nvfs_dma_map_sg_attrs(dev, sg, n, dir, 0);

	if (mapped > 0 && mapped <= n)
		return mapped;
	pr_warn_ratelimited("nvidia-fs could not map %d GPU pages for %s (%d)\n",
			    n, dev_name(dev), mapped);
	/* Not -EIO: a request that fails so is not sent again elsewhere. */
	return mapped == PFS_NVFS_BAD_REQ ? -EINVAL : -EFAULT;
}

void pfs_gpu_unmap(const struct pfs_gpu_io *g, struct device *dev,
		   struct scatterlist *sg, int n, enum dma_data_direction dir)
{
	if (g->ops->nvfs_dma_unmap_sg(dev, sg, n, dir) != n)
		pr_warn_ratelimited("nvidia-fs did not unmap %d GPU pages for %s\n",
				    n, dev_name(dev));
}
