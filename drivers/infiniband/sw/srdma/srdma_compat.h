/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * srdma_compat.h - the differences between the kernels srdma builds for.
 *
 * srdma is written against Debian 12's 6.1. Every interface of the RDMA
 * core or the network stack that changed since, up to 6.12 (Debian 12's
 * bookworm-backports kernel, the one of Debian 13), is bridged here and
 * nowhere else: the rest of the driver uses the names below and has no
 * version checks of its own.
 */
#ifndef SRDMA_COMPAT_H
#define SRDMA_COMPAT_H

#include <linux/version.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * ib_device_ops.create_cq: since 6.9 ("RDMA: Pass uverbs_attr_bundle as
 * part of '.create_cq' API") it gets the whole attribute bundle of the
 * uverbs command, NULL for a kernel CQ, instead of its driver udata.
 * srdma_create_cq() takes a struct srdma_create_cq_attrs (the one or the
 * other) and finds its udata with srdma_create_cq_udata().
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
#define srdma_create_cq_attrs uverbs_attr_bundle

static inline struct ib_udata *
srdma_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define srdma_create_cq_attrs ib_udata

static inline struct ib_udata *srdma_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * RDMA ATOMIC WRITE (IBTA 1.5): its work request and completion opcodes
 * and its device capability bit entered the RDMA core in 6.2. They are
 * the uverbs ABI's numbers, which srdma uses on 6.1 as well: there only
 * user QPs (the mapped SQ) post it, and 6.1 has no kernel consumer that
 * could. On 6.1 completion opcode 9 is IB_WC_MASKED_COMP_SWAP, which no
 * srdma work request produces.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define SRDMA_WR_ATOMIC_WRITE		IB_WR_ATOMIC_WRITE
#define SRDMA_WC_ATOMIC_WRITE		IB_WC_ATOMIC_WRITE
#define SRDMA_DEVICE_ATOMIC_WRITE	IB_DEVICE_ATOMIC_WRITE
#else
#define SRDMA_WR_ATOMIC_WRITE		15	/* IB_UVERBS_WR_ATOMIC_WRITE */
#define SRDMA_WC_ATOMIC_WRITE		((enum ib_wc_opcode)9)
#define SRDMA_DEVICE_ATOMIC_WRITE	BIT_ULL(40)
#endif

/*
 * ib_device_ops.reg_user_mr_dmabuf: since 6.12 ("RDMA: Pass
 * uverbs_attr_bundle as part of '.reg_user_mr_dmabuf' API") it gets the
 * command's attribute bundle instead of its driver udata; srdma uses
 * neither.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#define srdma_reg_dmabuf_attrs uverbs_attr_bundle
#else
#define srdma_reg_dmabuf_attrs ib_udata
#endif

/*
 * A kernel mapping of a whole dma-buf: since 6.2 dma_buf_vmap() wants the
 * buffer's reservation lock held and dma_buf_vmap_unlocked() takes it;
 * 6.1's dma_buf_vmap() takes the lock it needs by itself.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define srdma_dma_buf_vmap	dma_buf_vmap_unlocked
#define srdma_dma_buf_vunmap	dma_buf_vunmap_unlocked
#else
#define srdma_dma_buf_vmap	dma_buf_vmap
#define srdma_dma_buf_vunmap	dma_buf_vunmap
#endif

/* get_unaligned()/put_unaligned(): <linux/unaligned.h> since 6.12. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#endif /* SRDMA_COMPAT_H */
