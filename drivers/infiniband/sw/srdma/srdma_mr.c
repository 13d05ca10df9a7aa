// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma memory: protection domains, memory regions, and moving data
 * between them and work requests' SGE lists.
 *
 * A user MR pins its pages with ib_umem_get() and keeps them in an array;
 * data is moved with kmap_local_page(), never page_address(). Keys are
 * (index << 8 | random byte); the index finds the MR in the device's
 * xarray. Packets and the requester hold a reference on an MR while they
 * copy; deregistration waits for those to drain.
 */
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/skbuff.h>
#include <rdma/ib_umem.h>

#include "srdma.h"

#define SRDMA_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ)

/* Registrations so far, module-wide: tells a reused key from the original. */
static atomic64_t srdma_mr_serial = ATOMIC64_INIT(0);

int srdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return srdma_res_get(to_sdev(ibpd->device), SRDMA_RES_PD);
}

int srdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	srdma_res_put(to_sdev(ibpd->device), SRDMA_RES_PD);
	return 0;
}

/* Give @mr its keys and publish it. */
static int srdma_mr_add(struct srdma_dev *sdev, struct srdma_mr *mr)
{
	u32 index;
	u8 key;
	int err;

	/* Reserve the index; lookups see the MR only once it is whole. */
	err = xa_alloc_cyclic(&sdev->mr_xa, &index, NULL,
			      XA_LIMIT(1, sdev->res_max[SRDMA_RES_MR]),
			      &sdev->mr_next,
			      GFP_KERNEL_ACCOUNT);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	mr->serial = atomic64_inc_return(&srdma_mr_serial);
	get_random_bytes(&key, sizeof(key));
	mr->ibmr.lkey = index << 8 | key;
	mr->ibmr.rkey = mr->ibmr.lkey;
	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	xa_store(&sdev->mr_xa, index, mr, GFP_KERNEL_ACCOUNT);	/* no alloc */
	return 0;
}

/* A new MR counted against the device's limit, or an ERR_PTR. */
static struct srdma_mr *srdma_mr_alloc(struct ib_pd *ibpd, int access)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct srdma_mr *mr;
	int err;

	if (access & ~(SRDMA_MR_ACCESS | IB_ACCESS_RELAXED_ORDERING |
		       IB_ACCESS_OPTIONAL))
		return ERR_PTR(-EOPNOTSUPP);
	/* Remote write needs local write (IBTA C10-10). */
	if ((access & IB_ACCESS_REMOTE_WRITE) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return ERR_PTR(-EINVAL);

	err = srdma_res_get(sdev, SRDMA_RES_MR);
	if (err)
		return ERR_PTR(err);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr) {
		srdma_res_put(sdev, SRDMA_RES_MR);
		return ERR_PTR(-ENOMEM);
	}
	mr->access = access & SRDMA_MR_ACCESS;
	return mr;
}

struct ib_mr *srdma_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct srdma_mr *mr;
	int err;

	mr = srdma_mr_alloc(ibpd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->type = SRDMA_MR_DMA;
	mr->iova = 0;
	mr->length = U64_MAX;
	err = srdma_mr_add(sdev, mr);
	if (err) {
		kfree(mr);
		srdma_res_put(sdev, SRDMA_RES_MR);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

struct ib_mr *srdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct sg_page_iter iter;
	struct srdma_mr *mr;
	unsigned long i = 0;
	u64 end;
	int err;

	if (!length || length > SRDMA_MAX_MR_SIZE ||
	    check_add_overflow(iova, length, &end) ||
	    check_add_overflow(start, length, &end)) {
		srdma_err(sdev, "reg_mr: bad range %#llx+%#llx\n", start,
			  length);
		return ERR_PTR(-EINVAL);
	}
	/* iova and start must share their offset in a page. */
	if ((iova ^ start) & ~PAGE_MASK) {
		srdma_err(sdev, "reg_mr: iova %#llx and address %#llx differ in page offset\n",
			  iova, start);
		return ERR_PTR(-EINVAL);
	}

	mr = srdma_mr_alloc(ibpd, access);
	if (IS_ERR(mr)) {
		srdma_err(sdev, "reg_mr: access %#x refused: %ld\n", access,
			  PTR_ERR(mr));
		return ERR_CAST(mr);
	}
	mr->type = SRDMA_MR_USER;
	mr->iova = iova;
	mr->length = length;

	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free_mr;
	}
	mr->page_off = ib_umem_offset(mr->umem);
	mr->npages = ib_umem_num_pages(mr->umem);
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_release_umem;
	}
	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &iter, 0) {
		if (i >= mr->npages)
			break;
		mr->pages[i++] = sg_page_iter_page(&iter);
	}
	if (i != mr->npages) {
		err = -EFAULT;
		goto err_free_pages;
	}

	err = srdma_mr_add(sdev, mr);
	if (err)
		goto err_free_pages;
	return &mr->ibmr;

err_free_pages:
	kvfree(mr->pages);
err_release_umem:
	ib_umem_release(mr->umem);
err_free_mr:
	kfree(mr);
	srdma_res_put(sdev, SRDMA_RES_MR);
	return ERR_PTR(err);
}

int srdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibmr->device);
	struct srdma_mr *mr = to_smr(ibmr);

	/* No new lookups, then wait for the packets still copying. */
	xa_erase(&sdev->mr_xa, ibmr->lkey >> 8);
	srdma_mr_put(mr);
	wait_for_completion(&mr->released);

	if (mr->umem) {
		kvfree(mr->pages);
		ib_umem_release(mr->umem);
	}
	kfree_rcu(mr, rcu);
	srdma_res_put(sdev, SRDMA_RES_MR);
	return 0;
}

/*
 * Find the MR of @key and take a reference. Kernel DMA keys work only for
 * local access; @remote lookups accept user MRs only.
 */
struct srdma_mr *srdma_mr_get(struct srdma_dev *sdev, u32 key, bool remote)
{
	struct srdma_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, key >> 8);
	if (mr && (mr->ibmr.lkey != key ||
		   (remote && mr->type != SRDMA_MR_USER) ||
		   !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

void srdma_mr_put(struct srdma_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->released);
}

/* 0 if [iova, iova + len) lies in @mr, of @pd, with @access allowed. */
int srdma_mr_check(struct srdma_mr *mr, struct ib_pd *pd, u64 iova, u32 len,
		   int access)
{
	u64 end;

	if (mr->ibmr.pd != pd)
		return -EACCES;
	if ((mr->access & access) != access)
		return -EACCES;
	if (check_add_overflow(iova, (u64)len, &end))
		return -EFAULT;
	if (mr->type == SRDMA_MR_DMA)
		return 0;
	if (iova < mr->iova || end > mr->iova + mr->length)
		return -EFAULT;
	return 0;
}

/*
 * The page holding byte @done of [iova, ...) in a user MR, the offset in
 * it, and how many of the @left remaining bytes it holds; 0 if that byte
 * is not in the MR. Callers check the range with srdma_mr_check() first;
 * this is the last line of defence before indexing the page array.
 */
static u32 srdma_mr_chunk(struct srdma_mr *mr, u64 iova, u32 done, u32 left,
			  struct page **pg, u32 *pgoff)
{
	u64 off;

	if (iova < mr->iova || check_add_overflow(iova - mr->iova, (u64)done,
						  &off) ||
	    off >= mr->length)
		return 0;
	left = min_t(u64, left, mr->length - off);
	off += mr->page_off;
	if (off >> PAGE_SHIFT >= mr->npages)
		return 0;
	*pg = mr->pages[off >> PAGE_SHIFT];
	*pgoff = off & ~PAGE_MASK;
	return min_t(u32, left, PAGE_SIZE - *pgoff);
}

/*
 * Copy between @buf and the MR; @to_mr picks the direction. -EFAULT if the
 * range leaves the MR.
 */
int srdma_mr_copy(struct srdma_mr *mr, u64 iova, void *buf, u32 len,
		  bool to_mr)
{
	struct page *pg;
	u32 n, done, pgoff;
	void *va;

	if (mr->type == SRDMA_MR_DMA) {
		if (to_mr)
			memcpy((void *)(uintptr_t)iova, buf, len);
		else
			memcpy(buf, (void *)(uintptr_t)iova, len);
		return 0;
	}
	for (done = 0; done < len; done += n) {
		n = srdma_mr_chunk(mr, iova, done, len - done, &pg, &pgoff);
		if (!n)
			return -EFAULT;
		va = kmap_local_page(pg);
		if (to_mr)
			memcpy(va + pgoff, buf + done, n);
		else
			memcpy(buf + done, va + pgoff, n);
		kunmap_local(va);
	}
	return 0;
}

/* Copy @len bytes at @off in @skb into the MR, from fragments in place. */
int srdma_mr_copy_skb(struct srdma_mr *mr, u64 iova,
		      const struct sk_buff *skb, int off, u32 len)
{
	struct page *pg;
	u32 n, done, pgoff;
	void *va;
	int err;

	if (mr->type == SRDMA_MR_DMA)
		return skb_copy_bits(skb, off, (void *)(uintptr_t)iova, len);

	for (done = 0; done < len; done += n) {
		n = srdma_mr_chunk(mr, iova, done, len - done, &pg, &pgoff);
		if (!n)
			return -EFAULT;
		va = kmap_local_page(pg);
		err = skb_copy_bits(skb, off + done, va + pgoff, n);
		kunmap_local(va);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Attach @len bytes of user MR @mr at @iova to @skb as page fragments,
 * taking a page reference for each (dropped when the skb is freed).
 * -EOPNOTSUPP for a DMA MR, -EMSGSIZE if the fragments run out; the
 * caller then copies instead.
 */
int srdma_mr_attach(struct srdma_mr *mr, u64 iova, struct sk_buff *skb,
		    u32 len)
{
	struct page *pg;
	u32 n, done, pgoff;
	int i;

	if (mr->type != SRDMA_MR_USER)
		return -EOPNOTSUPP;
	for (done = 0; done < len; done += n) {
		i = skb_shinfo(skb)->nr_frags;
		if (i >= MAX_SKB_FRAGS)
			return -EMSGSIZE;
		n = srdma_mr_chunk(mr, iova, done, len - done, &pg, &pgoff);
		if (!n)
			return -EFAULT;
		get_page(pg);
		skb_fill_page_desc(skb, i, pg, pgoff, n);
		skb->len += n;
		skb->data_len += n;
		skb->truesize += n;
	}
	return 0;
}

/*
 * Copy a work request's SGE list into a WQE and sum its lengths. Returns
 * -EINVAL if the total overflows 32 bits.
 */
int srdma_sges_from_wr(struct srdma_sge *dst, const struct ib_sge *src,
		       int num_sge, u32 *total)
{
	int i;

	*total = 0;
	for (i = 0; i < num_sge; i++) {
		if (check_add_overflow(*total, src[i].length, total))
			return -EINVAL;
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
	return 0;
}

/*
 * Copy @len bytes between the SGE list, at byte @off of the list, and
 * either @buf or @skb at @skb_off. @to_mr copies into the SGEs and requires
 * local write access. Returns 0, -EINVAL if the list is too short or
 * -EACCES for a bad lkey or missing right.
 */
int srdma_sge_copy(struct srdma_qp *qp, struct srdma_sge *sge, u32 num_sge,
		   u32 off, void *buf, struct sk_buff *skb, int skb_off,
		   u32 len, bool to_mr)
{
	struct srdma_mr *mr;
	u32 i, n, done = 0;
	int err = 0;

	for (i = 0; i < num_sge && done < len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(sge[i].length - off, len - done);
		mr = srdma_mr_get(qp->sdev, sge[i].lkey, false);
		if (!mr)
			return -EACCES;
		if (mr->type == SRDMA_MR_DMA && qp->is_user)
			err = -EACCES;
		else
			err = srdma_mr_check(mr, qp->ibqp.pd, sge[i].addr + off,
					     n, to_mr ? IB_ACCESS_LOCAL_WRITE :
					     0);
		if (!err) {
			if (skb && to_mr)
				err = srdma_mr_copy_skb(mr, sge[i].addr + off,
							skb, skb_off + done, n);
			else if (skb)
				err = srdma_mr_attach(mr, sge[i].addr + off,
						      skb, n);
			else
				err = srdma_mr_copy(mr, sge[i].addr + off,
						    buf + done, n, to_mr);
		}
		srdma_mr_put(mr);
		if (err)
			return err == -EFAULT ? -EACCES : err;
		done += n;
		off = 0;
	}
	return done == len ? 0 : -EINVAL;
}
