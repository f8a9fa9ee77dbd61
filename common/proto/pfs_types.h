/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Integer types and helpers shared by the kernel client and user space.
 * <linux/types.h> exists in both worlds (uapi), so the protocol is written
 * once against __u8..__u64.
 */
#ifndef PFS_TYPES_H
#define PFS_TYPES_H

#include <linux/types.h>

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/math64.h>
#define PFS_DIV_U64_REM(dividend, divisor, rem) \
	div_u64_rem((dividend), (divisor), (rem))
#else
#include <errno.h>
#include <stddef.h>
#include <string.h>
static inline __u64 pfs_div_u64_rem(__u64 dividend, __u32 divisor, __u32 *rem)
{
	*rem = (__u32)(dividend % divisor);
	return dividend / divisor;
}
#define PFS_DIV_U64_REM(dividend, divisor, rem) \
	pfs_div_u64_rem((dividend), (divisor), (rem))
#endif

#endif /* PFS_TYPES_H */
