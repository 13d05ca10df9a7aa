// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma fast registration, for kernel consumers: ib_alloc_mr() and
 * ib_map_mr_sg(), and the work requests that change such an MR, REG_MR
 * and LOCAL_INV, as the requester carries them out, and SEND with
 * Invalidate as the responder honours it.
 *
 * An MR from ib_alloc_mr() starts FREE. map_mr_sg stages a page list;
 * REG_MR copies it in and makes the MR VALID with the key, rights, iova
 * and length of the work request; an invalidation, local or remote, makes
 * it FREE again. Every change, and every copy to or from the MR's pages
 * (srdma_mr.c), is made under the MR's lock. The pages are the kernel
 * virtual addresses the core hands out as DMA addresses, srdma having no
 * DMA device.
 */
#include <linux/log2.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>

#include "srdma.h"

/* The page sizes map_mr_sg takes: from 4 KiB up to 1 GiB. */
#define SRDMA_FR_MIN_PAGE_SHIFT	12
#define SRDMA_FR_MAX_PAGE_SHIFT	30
/* The rights REG_MR may give. */
#define SRDMA_FR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)
/* Any of these lets the peer invalidate a registration (SEND with Inv). */
#define SRDMA_FR_REMOTE (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_ATOMIC)

static u64 *srdma_fr_alloc_pages(u32 n)
{
	return kvcalloc(n, sizeof(u64), GFP_KERNEL | __GFP_NOWARN);
}

/**
 * srdma_alloc_mr() - ib_device_ops.alloc_mr: an MR for fast registration.
 * @ibpd: the PD, a kernel consumer's
 * @type: IB_MR_TYPE_MEM_REG; srdma has no SG_GAPS or integrity MRs
 * @max_num_sg: the most pages one registration maps
 *
 * The MR starts FREE: no access until a REG_MR makes it VALID.
 *
 * Context: Process context.
 * Return: the MR, or an ERR_PTR: -EINVAL for a user PD, -EOPNOTSUPP for
 * another @type, -EINVAL for @max_num_sg 0 or over
 * SRDMA_MAX_FAST_REG_PAGES, -ENOMEM, also when
 * the device has its limit of MRs.
 */
struct ib_mr *srdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct srdma_mr *mr;
	int err;

	/*
	 * Kernel consumers only: remote invalidation relies on user PDs
	 * having no fast-registration MRs.
	 */
	if (ibpd->uobject) {
		srdma_dbg(sdev, "alloc_mr: a user PD\n");
		return ERR_PTR(-EINVAL);
	}
	if (type != IB_MR_TYPE_MEM_REG) {
		srdma_dbg(sdev, "alloc_mr: type %d not supported\n", type);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!max_num_sg || max_num_sg > SRDMA_MAX_FAST_REG_PAGES) {
		srdma_dbg(sdev, "alloc_mr: %u pages, max %u\n", max_num_sg,
			  SRDMA_MAX_FAST_REG_PAGES);
		return ERR_PTR(-EINVAL);
	}
	mr = srdma_mr_alloc(ibpd, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->type = SRDMA_MR_FAST;
	mr->state = SRDMA_MR_FREE;
	mr->max_pages = max_num_sg;
	mr->fr.shift = PAGE_SHIFT;
	mr->fr_map.shift = PAGE_SHIFT;
	mr->fr.addr = srdma_fr_alloc_pages(max_num_sg);
	mr->fr_map.addr = srdma_fr_alloc_pages(max_num_sg);
	err = -ENOMEM;
	if (!mr->fr.addr || !mr->fr_map.addr)
		goto err_free_mr;
	err = srdma_mr_add(sdev, mr);
	if (err)
		goto err_free_mr;
	srdma_dbg_mr(mr, "fast registration MR of %u pages\n", max_num_sg);
	return &mr->ibmr;

err_free_mr:
	kvfree(mr->fr.addr);
	kvfree(mr->fr_map.addr);
	kfree(mr);
	srdma_res_put(sdev, SRDMA_RES_MR);
	return ERR_PTR(err);
}

/* ib_sg_to_pages()' callback: one more page to stage. MR lock held. */
static int srdma_fr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct srdma_mr *mr = to_smr(ibmr);

	lockdep_assert_held(&mr->lock);
	if (mr->fr_map.npages >= mr->max_pages)
		return -ENOMEM;
	mr->fr_map.addr[mr->fr_map.npages++] = addr;
	return 0;
}

/**
 * srdma_map_mr_sg() - ib_device_ops.map_mr_sg: stage an MR's page list.
 * @ibmr: a fast-registration MR
 * @sg: the DMA-mapped scatterlist (kernel virtual addresses)
 * @sg_nents: its entries
 * @sg_offset: where the first starts, or NULL
 *
 * The core set ibmr->page_size; ib_sg_to_pages() sets ibmr->iova and
 * ->length and splits the list into pages, at most max_num_sg of them.
 * The staged list takes effect with the next REG_MR, not before: the MR
 * may still be VALID with its last registration.
 *
 * Context: Process or softirq context, not with IRQs off.
 * Return: the number of @sg entries mapped, or -EINVAL for a page size
 * that is not a power of two from 4 KiB to 1 GiB.
 */
int srdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct srdma_mr *mr = to_smr(ibmr);
	u32 psz = ibmr->page_size;
	int n;

	if (!is_power_of_2(psz) || psz < BIT(SRDMA_FR_MIN_PAGE_SHIFT) ||
	    psz > BIT(SRDMA_FR_MAX_PAGE_SHIFT)) {
		srdma_dbg_mr(mr, "map_mr_sg: page size %u not supported\n",
			     psz);
		return -EINVAL;
	}
	spin_lock_bh(&mr->lock);
	mr->fr_map.npages = 0;
	mr->fr_map.shift = ilog2(psz);
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, srdma_fr_set_page);
	spin_unlock_bh(&mr->lock);
	return n;
}

/**
 * srdma_fr_check_wr() - May a kernel consumer post this REG_MR?
 * @qp: the QP it is posted to
 * @wr: the work request
 *
 * The MR must be a fast-registration MR of the QP's PD, the key one of
 * its keys (only the key variant, the low 8 bits, may change), the
 * rights those REG_MR gives, remote write and atomics with local write.
 * Whether the MR is FREE is for the requester to find when it runs the
 * work request.
 *
 * Context: Any context (post_send).
 * Return: 0, or -EINVAL.
 */
int srdma_fr_check_wr(struct srdma_qp *qp, const struct ib_reg_wr *wr)
{
	int access = wr->access;

	if (!wr->mr || wr->mr->device != qp->ibqp.device ||
	    wr->mr->pd != qp->ibqp.pd ||
	    to_smr(wr->mr)->type != SRDMA_MR_FAST) {
		srdma_dbg_qp(qp, "post_send: REG_MR of no fast registration MR of this PD\n");
		return -EINVAL;
	}
	if ((wr->key ^ wr->mr->lkey) >> SRDMA_MR_KEY_BITS) {
		srdma_dbg_qp(qp, "post_send: REG_MR key %#x is not MR %#x's\n",
			     wr->key, wr->mr->lkey);
		return -EINVAL;
	}
	if ((access & ~SRDMA_FR_ACCESS) ||
	    ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IB_ACCESS_LOCAL_WRITE))) {
		srdma_dbg_qp(qp, "post_send: REG_MR access %#x refused\n",
			     access);
		return -EINVAL;
	}
	return 0;
}

/*
 * Can the staged page list hold [@iova, +@length)? The first byte is at
 * @iova's offset in the first page (as ib_sg_to_pages() put it).
 */
static bool srdma_fr_fits(const struct srdma_mr *mr, u64 iova, u64 length)
{
	u64 end, span = (u64)mr->fr_map.npages << mr->fr_map.shift;

	return length && !check_add_overflow(iova, length, &end) &&
	       (iova & (BIT_ULL(mr->fr_map.shift) - 1)) + length <= span;
}

/**
 * srdma_fr_register() - Carry out a REG_MR work request.
 * @qp: the QP that runs it
 * @mr: the MR named in the work request, checked by srdma_fr_check_wr()
 *	when it was posted; it is looked up again, so an MR deregistered
 *	meanwhile is found missing, never used
 * @key: the new key
 * @access: the new rights
 * @iova: the address of the first byte, as the work request was posted
 * @length: the length in bytes
 *
 * The MR must be FREE; the staged page list becomes the registration.
 *
 * Context: QP lock held (the requester); takes the MR lock.
 * Return: 0, -EINVAL if the MR is gone, not FREE, of another PD, or if
 * the staged pages do not hold @length bytes from @iova.
 */
int srdma_fr_register(struct srdma_qp *qp, struct srdma_mr *mr, u32 key,
		      int access, u64 iova, u64 length)
{
	struct srdma_mr *found = srdma_mr_get_fast(qp->sdev, key);
	int err = -EINVAL;

	lockdep_assert_held(&qp->lock);
	if (found != mr)
		goto out_put;
	spin_lock_bh(&mr->lock);
	if (mr->state != SRDMA_MR_FREE || mr->ibmr.pd != qp->ibqp.pd) {
		srdma_dbg_mr(mr, "REG_MR: state %d, or another PD\n",
			     mr->state);
	} else if (!srdma_fr_fits(mr, iova, length)) {
		srdma_dbg_mr(mr, "REG_MR: %#llx+%#llx over %u pages of %lu\n",
			     iova, length, mr->fr_map.npages,
			     BIT(mr->fr_map.shift));
	} else {
		memcpy(mr->fr.addr, mr->fr_map.addr,
		       mr->fr_map.npages * sizeof(u64));
		mr->fr.npages = mr->fr_map.npages;
		mr->fr.shift = mr->fr_map.shift;
		mr->iova = iova;
		mr->length = length;
		mr->access = access;
		WRITE_ONCE(mr->key, key);
		WRITE_ONCE(mr->serial, srdma_mr_new_serial());
		mr->state = SRDMA_MR_VALID;
		err = 0;
	}
	spin_unlock_bh(&mr->lock);
out_put:
	if (found)
		srdma_mr_put(found);
	return err;
}

/**
 * srdma_fr_invalidate() - Invalidate a fast registration.
 * @qp: the QP whose LOCAL_INV runs, or that received a SEND with
 *	Invalidate
 * @key: the key to invalidate
 * @remote: a SEND with Invalidate from the QP's peer
 *
 * Only a fast-registration MR of @qp's PD whose key is @key; a peer may
 * invalidate only a VALID registration with remote rights. User MRs are
 * never invalidated, so a peer of a user QP can invalidate no MR (user
 * PDs have no fast-registration MRs; windows: srdma_invalidate()). Once
 * this returns, no packet reaches the MR's pages through the old
 * registration.
 *
 * Context: QP lock held; takes the MR lock.
 * Return: 0, -EINVAL if @key names no such MR, -EACCES if the peer may
 * not invalidate it.
 */
int srdma_fr_invalidate(struct srdma_qp *qp, u32 key, bool remote)
{
	struct srdma_mr *mr = srdma_mr_get_fast(qp->sdev, key);
	int err = 0;

	lockdep_assert_held(&qp->lock);
	if (!mr)
		return -EINVAL;
	spin_lock_bh(&mr->lock);
	if (mr->ibmr.pd != srdma_qp_pd(qp) || mr->key != key ||
	    mr->state == SRDMA_MR_INVALID)
		err = -EINVAL;
	else if (remote && (mr->state != SRDMA_MR_VALID ||
			    !(mr->access & SRDMA_FR_REMOTE)))
		err = -EACCES;
	if (!err) {
		mr->state = SRDMA_MR_FREE;
		WRITE_ONCE(mr->serial, srdma_mr_new_serial());
	}
	spin_unlock_bh(&mr->lock);
	if (err)
		srdma_dbg_qp(qp, "%s invalidation of key %#x refused\n",
			     remote ? "remote" : "local", key);
	srdma_mr_put(mr);
	return err;
}
