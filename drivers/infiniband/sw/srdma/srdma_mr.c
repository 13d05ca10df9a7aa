// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma memory: protection domains, memory regions, and moving data
 * between them and work requests' SGE lists.
 *
 * A user MR pins its pages with ib_umem_get() and keeps them in an array;
 * data is moved with kmap_local_page(), never page_address(). Keys are
 * (index << 8 | random byte); the index finds the MR in the device's
 * xarray. Packets and the requester hold a reference on an MR while they
 * copy; deregistration waits for those to drain. A fast-registration MR
 * (srdma_fr.c) is checked and copied under its lock, since REG_MR and
 * invalidations change it while packets use it; so is a memory window
 * (srdma_mw.c), whose keys share the index space and the xarray.
 */
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/skbuff.h>
#include <rdma/ib_umem.h>

#include "srdma.h"

/* The rights an MR may grant: memory windows may be bound to user MRs. */
#define SRDMA_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND)
/* Index 0 is never used: its keys would include local_dma_lkey 0. */
#define SRDMA_MR_MIN_INDEX	1

/* Registrations so far, module-wide: tells a reused key from the original. */
static atomic64_t srdma_mr_serial = ATOMIC64_INIT(0);

static u32 srdma_mr_index(u32 key)
{
	return key >> SRDMA_MR_KEY_BITS;
}

/**
 * srdma_alloc_pd() - ib_device_ops.alloc_pd: count a new PD.
 * @ibpd: the PD, allocated by the core
 * @udata: the provider's command, unused
 *
 * Context: Process context.
 * Return: 0, or -ENOMEM if the device has its limit of PDs.
 */
int srdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);

	return srdma_udata_no_input(sdev, udata, "alloc_pd") ?:
	       srdma_res_get(sdev, SRDMA_RES_PD);
}

/**
 * srdma_dealloc_pd() - ib_device_ops.dealloc_pd: uncount a PD.
 * @ibpd: the PD
 * @udata: the provider's command, unused
 *
 * Context: Process context.
 * Return: 0.
 */
int srdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	srdma_res_put(to_sdev(ibpd->device), SRDMA_RES_PD);
	return 0;
}

/**
 * srdma_mr_new_serial() - A registration number never used before.
 *
 * Context: Any context.
 * Return: the number, never 0.
 */
u64 srdma_mr_new_serial(void)
{
	return atomic64_inc_return(&srdma_mr_serial);
}

/**
 * srdma_mr_add() - Give an MR its keys and publish it.
 * @sdev: the device
 * @mr: the MR, from srdma_mr_alloc(), filled in
 *
 * Context: Process context.
 * Return: 0, -ENOMEM if no index is free, or xa_alloc_cyclic()'s error.
 */
int srdma_mr_add(struct srdma_dev *sdev, struct srdma_mr *mr)
{
	u32 index, max_mr = sdev->res_max[SRDMA_RES_MR];
	bool win = mr->type == SRDMA_MR_WINDOW;
	u8 key;
	int err;

	/*
	 * Reserve the index; lookups see the MR only once it is whole. MRs
	 * and windows share the table, each in its own range of indices, so
	 * that the MRs' is as small as their limit.
	 */
	err = xa_alloc_cyclic(&sdev->mr_xa, &index, NULL,
			      win ? XA_LIMIT(max_mr + 1,
					     max_mr +
					     sdev->res_max[SRDMA_RES_MW]) :
				    XA_LIMIT(SRDMA_MR_MIN_INDEX, max_mr),
			      win ? &sdev->mw_next : &sdev->mr_next,
			      GFP_KERNEL_ACCOUNT);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	mr->serial = srdma_mr_new_serial();
	get_random_bytes(&key, sizeof(key));
	mr->key = index << SRDMA_MR_KEY_BITS | key;
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	xa_store(&sdev->mr_xa, index, mr, GFP_KERNEL_ACCOUNT);	/* no alloc */
	return 0;
}

/**
 * srdma_mr_alloc() - A new MR, counted against the device's limit.
 * @ibpd: the PD
 * @access: IB_ACCESS_* flags
 *
 * VALID, with @access; srdma_mr_add() publishes it.
 *
 * Context: Process context.
 * Return: the MR, or an ERR_PTR: -EOPNOTSUPP or -EINVAL for @access,
 * -ENOMEM.
 */
struct srdma_mr *srdma_mr_alloc(struct ib_pd *ibpd, int access)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct srdma_mr *mr;
	int err;

	if (access & ~(SRDMA_MR_ACCESS | IB_ACCESS_RELAXED_ORDERING |
		       IB_ACCESS_OPTIONAL | IB_ACCESS_ON_DEMAND |
		       IB_ACCESS_HUGETLB))
		return ERR_PTR(-EOPNOTSUPP);
	/* Remote write and atomics need local write (IBTA C10-10). */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
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
	mr->state = SRDMA_MR_VALID;
	spin_lock_init(&mr->lock);
	/* The core sets them too, on return; messages need them before. */
	mr->ibmr.device = ibpd->device;
	mr->ibmr.pd = ibpd;
	return mr;
}

/**
 * srdma_get_dma_mr() - ib_device_ops.get_dma_mr: an MR of kernel memory.
 * @ibpd: the PD
 * @access: IB_ACCESS_* flags
 *
 * The MR covers every kernel virtual address, for local access only.
 *
 * Context: Process context.
 * Return: the MR, or an ERR_PTR: -EOPNOTSUPP or -EINVAL for @access,
 * -ENOMEM, also when the device has its limit of MRs.
 */
struct ib_mr *srdma_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct srdma_mr *mr;
	int err;

	if (access & (IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB))
		return ERR_PTR(-EOPNOTSUPP);
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
	srdma_dbg_mr(mr, "DMA MR, access %#x\n", access);
	return &mr->ibmr;
}

/*
 * Can [@start, +@length) be registered at @iova? A caller's mistake if not.
 * @start is a user address, or for a dma-buf MR the offset in the buffer.
 */
int srdma_umr_check_range(struct srdma_dev *sdev, u64 start, u64 length,
			  u64 iova)
{
	u64 end;

	if (!length || length > SRDMA_MAX_MR_SIZE ||
	    check_add_overflow(iova, length, &end) ||
	    check_add_overflow(start, length, &end)) {
		srdma_dbg(sdev, "reg_mr: bad range %#llx+%#llx\n", start,
			  length);
		return -EINVAL;
	}
	/* iova and start must share their offset in a page. */
	if ((iova ^ start) & ~PAGE_MASK) {
		srdma_dbg(sdev, "reg_mr: iova %#llx and address %#llx differ in page offset\n",
			  iova, start);
		return -EINVAL;
	}
	return 0;
}

/* Pin the user pages of [@start, +@length) and list them in @mr. */
static int srdma_umr_pin(struct srdma_mr *mr, struct ib_device *ibdev,
			 u64 start, u64 length, int access)
{
	struct sg_page_iter iter;
	unsigned long i = 0;
	int err;

	mr->umem = ib_umem_get(ibdev, start, length, access);
	if (IS_ERR(mr->umem))
		return PTR_ERR(mr->umem);
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
	return 0;

err_free_pages:
	kvfree(mr->pages);
err_release_umem:
	ib_umem_release(mr->umem);
	return err;
}

/**
 * srdma_reg_user_mr() - ib_device_ops.reg_user_mr: register user memory.
 * @ibpd: the PD
 * @start: the user virtual address of the memory
 * @length: its length in bytes
 * @iova: the address the MR's users give for @start
 * @access: IB_ACCESS_* flags
 * @udata: the provider's command, unused
 *
 * Pins the pages for the MR's life.
 *
 * Context: Process context; sleeps.
 * Return: the MR, or an ERR_PTR: -EINVAL for a bad range or @access,
 * -EOPNOTSUPP for @access, -ENOMEM, also when the device has its limit of
 * MRs, or the error of pinning the pages.
 */
struct ib_mr *srdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct srdma_mr *mr;
	int err;

	err = srdma_udata_no_input(sdev, udata, "reg_mr");
	if (err)
		return ERR_PTR(err);
	if ((access & IB_ACCESS_ON_DEMAND) && !start && length == U64_MAX) {
		srdma_dbg(sdev, "reg_mr: implicit on-demand MRs are not supported\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	err = srdma_umr_check_range(sdev, start, length, iova);
	if (err)
		return ERR_PTR(err);
	mr = srdma_mr_alloc(ibpd, access);
	if (IS_ERR(mr)) {
		srdma_dbg(sdev, "reg_mr: access %#x refused: %ld\n", access,
			  PTR_ERR(mr));
		return ERR_CAST(mr);
	}
	mr->type = SRDMA_MR_USER;
	mr->iova = iova;
	mr->length = length;

	if (access & IB_ACCESS_ON_DEMAND)
		err = srdma_odp_reg(mr, start, length, access);
	else
		err = srdma_umr_pin(mr, ibpd->device, start, length, access);
	if (err)
		goto err_free_mr;
	err = srdma_mr_add(sdev, mr);
	if (err)
		goto err_unpin;
	srdma_dbg_mr(mr, "registered %#llx+%#llx, access %#x\n", iova, length,
		     access);
	return &mr->ibmr;

err_unpin:
	if (mr->odp) {
		srdma_odp_release(mr);
	} else {
		kvfree(mr->pages);
		ib_umem_release(mr->umem);
	}
err_free_mr:
	kfree(mr);
	srdma_res_put(sdev, SRDMA_RES_MR);
	return ERR_PTR(err);
}

/*
 * Put @mr, pinned and filled in, in the place of @old: the same key, a new
 * registration serial. Lookups find @mr from now on; packets checked
 * against @old fail their next check (another serial). @old's
 * deregistration then leaves the slot to @mr.
 */
static void srdma_mr_replace(struct srdma_dev *sdev, struct srdma_mr *old,
			     struct srdma_mr *mr)
{
	mr->key = old->key;
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	mr->serial = srdma_mr_new_serial();
	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	/* The slot exists: no allocation, and the store cannot fail. */
	xa_store(&sdev->mr_xa, srdma_mr_index(mr->key), mr, GFP_KERNEL);
}

/*
 * A user MR without windows bound is kept from getting any while it is
 * registered again (INVALID for binds; srdma_rereg_user_mr() makes it
 * VALID again if that fails). -EINVAL for another MR, -EBUSY with
 * windows bound.
 */
static int srdma_mr_hold_for_rereg(struct srdma_mr *old)
{
	u32 binds;

	if (old->type != SRDMA_MR_USER) {
		srdma_dbg_mr(old, "rereg_mr: not a user MR\n");
		return -EINVAL;
	}
	spin_lock_bh(&old->lock);
	binds = old->mw_binds;
	if (!binds)
		old->state = SRDMA_MR_INVALID;
	spin_unlock_bh(&old->lock);
	if (binds) {
		srdma_dbg_mr(old, "rereg_mr: memory windows still bound\n");
		return -EBUSY;
	}
	return 0;
}

/**
 * srdma_rereg_user_mr() - ib_device_ops.rereg_user_mr: change a user MR.
 * @ibmr: the MR
 * @flags: IB_MR_REREG_TRANS, IB_MR_REREG_PD, IB_MR_REREG_ACCESS
 * @start: with IB_MR_REREG_TRANS, the new user address
 * @length: with IB_MR_REREG_TRANS, the new length
 * @iova: with IB_MR_REREG_TRANS, the new iova
 * @access: with IB_MR_REREG_ACCESS, the new rights
 * @pd: the PD, new with IB_MR_REREG_PD (the core passes the MR's own
 *	otherwise)
 * @udata: the provider's command, unused
 *
 * Registers the memory again as a new MR with the same keys, which takes
 * the old one's place at once; the core then deregisters the old one.
 * What @flags does not change is taken from the old MR (the same pages
 * are pinned again). Refused while memory windows are bound to the MR.
 *
 * Context: Process context; sleeps.
 * Return: the new MR, or an ERR_PTR: -EINVAL for a DMA or fast-registration
 * MR, a bad range or bad @access, -EBUSY while windows are bound,
 * -EOPNOTSUPP for @access or a dma-buf MR, -ENOMEM, also when the device
 * has its limit of MRs, or the error of pinning the pages.
 */
struct ib_mr *srdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibmr->device);
	struct srdma_mr *old = to_smr(ibmr), *mr;
	int err;

	err = srdma_udata_no_input(sdev, udata, "rereg_mr");
	if (err)
		return ERR_PTR(err);
	if (old->type == SRDMA_MR_USER && !old->umem && !old->odp) {
		/* A DM MR (the core refuses those) or a dma-buf MR. */
		srdma_dbg_mr(old, "rereg_mr: not of a dma-buf or device memory\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (old->odp || ((flags & IB_MR_REREG_ACCESS) &&
			 (access & IB_ACCESS_ON_DEMAND))) {
		srdma_dbg_mr(old, "rereg_mr: not with on-demand paging\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	err = srdma_mr_hold_for_rereg(old);
	if (err)
		return ERR_PTR(err);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->umem->address;
		length = old->length;
		iova = old->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;
	err = srdma_umr_check_range(sdev, start, length, iova);
	if (err)
		goto err_revalidate;
	mr = srdma_mr_alloc(pd, access);
	if (IS_ERR(mr)) {
		err = PTR_ERR(mr);
		srdma_dbg_mr(old, "rereg_mr: access %#x refused: %d\n",
			     access, err);
		goto err_revalidate;
	}
	mr->type = SRDMA_MR_USER;
	mr->iova = iova;
	mr->length = length;
	mr->ibmr.device = pd->device;
	mr->ibmr.pd = pd;
	err = srdma_umr_pin(mr, pd->device, start, length, access);
	if (err)
		goto err_free_mr;
	srdma_mr_replace(sdev, old, mr);
	srdma_dbg_mr(mr, "registered again: %#llx+%#llx, access %#x\n", iova,
		     length, access);
	return &mr->ibmr;

err_free_mr:
	kfree(mr);
	srdma_res_put(sdev, SRDMA_RES_MR);
err_revalidate:
	/* The old MR stays as it was: windows may be bound to it again. */
	spin_lock_bh(&old->lock);
	old->state = SRDMA_MR_VALID;
	spin_unlock_bh(&old->lock);
	return ERR_PTR(err);
}

/*
 * Drop the reference each page of pages[] holds (DM and dma-buf MRs, whose
 * pages nobody pinned), then the list.
 */
void srdma_mr_put_pages(struct srdma_mr *mr)
{
	while (mr->npages)
		put_page(mr->pages[--mr->npages]);
	kvfree(mr->pages);
	mr->pages = NULL;
}

/**
 * srdma_dereg_mr() - ib_device_ops.dereg_mr: deregister an MR.
 * @ibmr: the MR
 * @udata: the provider's command, unused
 *
 * Refused while memory windows are bound to the MR (IBTA 10.6.7.2.6: the
 * process deallocates or invalidates them first; the core retries at
 * close, after the windows). Otherwise unpublishes the keys, waits for
 * the packets still copying, then unpins and frees.
 *
 * Context: Process context; sleeps.
 * Return: 0, or -EBUSY if windows are bound to the MR.
 */
int srdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibmr->device);
	struct srdma_mr *mr = to_smr(ibmr);

	/*
	 * No new binds, and copies in progress to a fast-registration MR
	 * stop at once, not at the last put.
	 */
	spin_lock_bh(&mr->lock);
	if (mr->mw_binds) {
		spin_unlock_bh(&mr->lock);
		srdma_dbg_mr(mr, "dereg_mr: memory windows still bound\n");
		return -EBUSY;
	}
	mr->state = SRDMA_MR_INVALID;
	spin_unlock_bh(&mr->lock);
	/*
	 * No new lookups (unless a re-registration took the slot), then
	 * wait for the packets still copying.
	 */
	xa_cmpxchg(&sdev->mr_xa, srdma_mr_index(mr->key), mr, NULL, 0);
	srdma_mr_put(mr);
	wait_for_completion(&mr->released);

	if (mr->odp) {
		srdma_odp_release(mr);
	} else if (mr->umem) {
		kvfree(mr->pages);
		ib_umem_release(mr->umem);
	} else if (mr->dm_pages) {
		srdma_mr_put_pages(mr);
	} else if (mr->dmabuf) {
		srdma_dmabuf_release(mr);
	}
	kvfree(mr->fr.addr);
	kvfree(mr->fr_map.addr);
	kfree_rcu(mr, rcu);
	srdma_res_put(sdev, SRDMA_RES_MR);
	return 0;
}

/**
 * srdma_mr_get() - Find the MR of a key and take a reference on it.
 * @sdev: the device
 * @key: the lkey or rkey
 * @remote: the key came from the wire (an rkey)
 *
 * Kernel DMA keys work only for local access; @remote lookups accept user
 * and fast-registration MRs and memory windows, local ones no windows. A
 * fast-registration MR's or window's key is that of its last REG_MR or
 * bind; srdma_mr_check() checks that it is still valid.
 *
 * Context: Any context.
 * Return: the MR, to be released with srdma_mr_put(), or NULL.
 */
struct srdma_mr *srdma_mr_get(struct srdma_dev *sdev, u32 key, bool remote)
{
	struct srdma_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, srdma_mr_index(key));
	if (mr && (READ_ONCE(mr->key) != key ||
		   (remote && mr->type == SRDMA_MR_DMA) ||
		   (!remote && mr->type == SRDMA_MR_WINDOW) ||
		   !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * srdma_mr_get_fast() - Find a fast-registration MR by the index of a key.
 * @sdev: the device
 * @key: a key of the MR, of any registration (the low 8 bits are not
 *	 compared)
 *
 * Context: Any context.
 * Return: the MR, to be released with srdma_mr_put(), or NULL if the
 * index names no fast-registration MR.
 */
struct srdma_mr *srdma_mr_get_fast(struct srdma_dev *sdev, u32 key)
{
	struct srdma_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, srdma_mr_index(key));
	if (mr && (mr->type != SRDMA_MR_FAST ||
		   !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * srdma_mr_put() - Drop a reference taken by srdma_mr_get().
 * @mr: the MR
 *
 * The last one lets srdma_dereg_mr() go on.
 *
 * Context: Any context.
 */
void srdma_mr_put(struct srdma_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->released);
}

/**
 * srdma_mr_range_ok() - The rights and range part of srdma_mr_check().
 * @mr: the MR or window
 * @iova: the start of the range
 * @len: its length
 * @access: the IB_ACCESS_* rights needed
 *
 * Context: Any context; a fast-registration MR's or a window's lock held.
 * Return: 0, -EACCES for a missing right, -EFAULT for a range outside.
 */
int srdma_mr_range_ok(struct srdma_mr *mr, u64 iova, u64 len, int access)
{
	u64 end;

	if ((mr->access & access) != access)
		return -EACCES;
	if (check_add_overflow(iova, len, &end))
		return -EFAULT;
	if (mr->type == SRDMA_MR_DMA)
		return 0;
	if (iova < mr->iova || end > mr->iova + mr->length)
		return -EFAULT;
	return 0;
}

/**
 * srdma_mw_lock() - Lock a window for a copy through it.
 * @win: the window
 * @serial: the binding srdma_mr_check() returned
 * @iova: the start of the range to copy
 * @len: its length
 *
 * Takes the window's lock, which the caller drops with srdma_mw_unlock()
 * in any case, once done with the MR returned.
 *
 * Context: Any context.
 * Return: the user MR the window is bound to, if the binding is still
 * @serial, VALID, and holds the range; else NULL.
 */
static struct srdma_mr *srdma_mw_lock(struct srdma_mr *win, u64 serial,
				      u64 iova, u32 len)
	__acquires(&win->lock)
{
	spin_lock_bh(&win->lock);
	if (win->state != SRDMA_MR_VALID || win->serial != serial ||
	    !win->base || WARN_ON_ONCE(win->base->type != SRDMA_MR_USER) ||
	    srdma_mr_range_ok(win, iova, len, 0))
		return NULL;
	return win->base;
}

/**
 * srdma_mw_unlock() - Drop the lock srdma_mw_lock() took.
 * @win: the window
 *
 * Context: Any context.
 */
static void srdma_mw_unlock(struct srdma_mr *win)
	__releases(&win->lock)
{
	spin_unlock_bh(&win->lock);
}

/**
 * srdma_mr_check() - May a range of an MR be used for an access?
 * @mr: the MR or window
 * @qp: the QP that asks: its PD, and for a type 2 window its number
 * @key: the lkey or rkey the MR was found by
 * @iova: the start of the range
 * @len: its length
 * @access: the IB_ACCESS_* rights needed
 * @serial: in, the registration the caller checked before (a later packet
 *	    of a message), or 0 for any; out, the registration checked
 *
 * A fast-registration MR or a window must also be VALID with key @key,
 * and a type 2 window bound through @qp; all of it is checked under its
 * lock, and the serial returned is the one checked, for srdma_mr_copy()
 * and srdma_mr_copy_skb() to check again under the lock around the copy.
 * Other MRs keep their key and serial for life.
 *
 * Context: Any context.
 * Return: 0 if [@iova, @iova + @len) lies in @mr, of @pd, with @access
 * allowed; -EACCES for another PD, key or registration, a missing right or
 * an MR not valid; -EFAULT for a range outside the MR.
 */
int srdma_mr_check(struct srdma_mr *mr, struct srdma_qp *qp, u32 key,
		   u64 iova, u32 len, int access, u64 *serial)
{
	int err;

	/* The PD is fixed for life, a window's too. */
	if (mr->ibmr.pd != srdma_qp_pd(qp))
		return -EACCES;
	if (mr->type != SRDMA_MR_FAST && mr->type != SRDMA_MR_WINDOW) {
		if (mr->key != key || (*serial && mr->serial != *serial))
			return -EACCES;
		*serial = mr->serial;
		return srdma_mr_range_ok(mr, iova, len, access);
	}
	spin_lock_bh(&mr->lock);
	if (mr->state != SRDMA_MR_VALID || mr->key != key ||
	    (mr->type == SRDMA_MR_WINDOW && mr->mw_type == IB_MW_TYPE_2 &&
	     mr->mw_qp_uid != qp->uid) ||
	    (*serial && mr->serial != *serial))
		err = -EACCES;
	else
		err = srdma_mr_range_ok(mr, iova, len, access);
	if (!err)
		*serial = mr->serial;
	spin_unlock_bh(&mr->lock);
	return err;
}

/*
 * An on-demand paging MR's pages[] changes under its lock (srdma_odp.c):
 * held across the lookup and the copy. Other user MRs' never changes.
 */
static void srdma_odp_lock(struct srdma_mr *mr)
	__acquires(&mr->lock)
{
	if (mr->odp)
		spin_lock_bh(&mr->lock);
	else
		__acquire(&mr->lock);
}

static void srdma_odp_unlock(struct srdma_mr *mr)
	__releases(&mr->lock)
{
	if (mr->odp)
		spin_unlock_bh(&mr->lock);
	else
		__release(&mr->lock);
}

/*
 * The error of a chunk srdma_mr_chunk() returned for byte @iova of @mr:
 * -EFAULT outside the MR, -EAGAIN for an on-demand page not present (the
 * caller queues a fault, srdma_odp_fault_later()).
 */
static int srdma_chunk_err(struct srdma_mr *mr, u64 iova, u32 n,
			   struct page *pg)
{
	if (!n)
		return -EFAULT;
	return pg ? 0 : -EAGAIN;
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
 * The kernel virtual address of byte @off of fast-registration MR @mr's
 * registration, and how many of the @left bytes from there are in the same
 * page; 0 if @off is not in the registration. MR lock held.
 */
static u32 srdma_fr_chunk(struct srdma_mr *mr, u64 off, u32 left, void **va)
{
	u64 pmask = (1ULL << mr->fr.shift) - 1, pos;

	lockdep_assert_held(&mr->lock);
	if (off >= mr->length)
		return 0;
	left = min_t(u64, left, mr->length - off);
	/* srdma_fr_register() checked that the pages hold the length. */
	pos = (mr->iova & pmask) + off;
	if (pos >> mr->fr.shift >= mr->fr.npages)
		return 0;
	*va = (void *)(uintptr_t)(mr->fr.addr[pos >> mr->fr.shift] +
				  (pos & pmask));
	return min_t(u64, left, pmask + 1 - (pos & pmask));
}

/*
 * srdma_mr_copy() and srdma_mr_copy_skb() for a fast-registration MR:
 * under its lock, only while it is VALID with registration @serial, the
 * one srdma_mr_check() checked, so nothing moves once an invalidation has
 * returned, and nothing reaches a later registration. Its pages are
 * kernel memory: srdma_memcpy().
 */
static int srdma_fr_copy(struct srdma_mr *mr, u64 serial, u64 iova, void *buf,
			 const struct sk_buff *skb, int skb_off, u32 len,
			 bool to_mr)
{
	u32 n, done;
	int err = 0;
	u64 off;
	void *va;

	spin_lock_bh(&mr->lock);
	if (mr->state != SRDMA_MR_VALID || mr->serial != serial ||
	    iova < mr->iova)
		err = -EFAULT;
	for (done = 0; !err && done < len; done += n) {
		if (check_add_overflow(iova - mr->iova, (u64)done, &off))
			n = 0;
		else
			n = srdma_fr_chunk(mr, off, len - done, &va);
		if (!n)
			err = -EFAULT;
		else if (skb)
			err = srdma_skb_copy(skb, skb_off + done, va, n);
		else if (to_mr)
			srdma_memcpy(va, buf + done, n);
		else
			srdma_memcpy(buf + done, va, n);
	}
	spin_unlock_bh(&mr->lock);
	return err;
}

/**
 * srdma_mr_copy() - Copy between a buffer and an MR.
 * @mr: the MR
 * @serial: the registration srdma_mr_check() returned
 * @iova: where in the MR
 * @buf: the kernel buffer
 * @len: bytes to copy
 * @to_mr: copy from @buf into the MR, else from the MR into @buf
 *
 * The caller checked the range with srdma_mr_check(). Through a window,
 * the copy is made to its MR under the window's lock.
 *
 * Context: Any context.
 * Return: 0, -EFAULT if the range leaves the MR or the registration is
 * no longer @serial, or -EAGAIN if a page of an on-demand paging MR is not
 * present (srdma_odp.c; the bytes before it may have been copied).
 */
int srdma_mr_copy(struct srdma_mr *mr, u64 serial, u64 iova, void *buf,
		  u32 len, bool to_mr)
{
	struct srdma_mr *base;
	struct page *pg;
	u32 n, done, pgoff;
	void *va;
	int err;

	if (mr->type == SRDMA_MR_WINDOW) {
		base = srdma_mw_lock(mr, serial, iova, len);
		err = base ? srdma_mr_copy(base, base->serial, iova, buf, len,
					   to_mr) : -EFAULT;
		srdma_mw_unlock(mr);
		return err;
	}
	if (mr->type == SRDMA_MR_DMA) {
		if (to_mr)
			srdma_memcpy((void *)(uintptr_t)iova, buf, len);
		else
			srdma_memcpy(buf, (void *)(uintptr_t)iova, len);
		return 0;
	}
	if (mr->type == SRDMA_MR_FAST)
		return srdma_fr_copy(mr, serial, iova, buf, NULL, 0, len,
				     to_mr);
	err = 0;
	srdma_odp_lock(mr);
	for (done = 0; !err && done < len; done += n) {
		n = srdma_mr_chunk(mr, iova, done, len - done, &pg, &pgoff);
		err = srdma_chunk_err(mr, iova + done, n, pg);
		if (err)
			break;
		va = kmap_local_page(pg);
		if (to_mr)
			srdma_memcpy(va + pgoff, buf + done, n);
		else
			srdma_memcpy(buf + done, va + pgoff, n);
		kunmap_local(va);
	}
	srdma_odp_unlock(mr);
	return err;
}

/**
 * srdma_mr_copy_skb() - Copy part of a packet into an MR.
 * @mr: the MR
 * @serial: the registration srdma_mr_check() returned
 * @iova: where in the MR
 * @skb: the packet
 * @off: where in @skb
 * @len: bytes to copy
 *
 * Copies from the fragments in place. The caller checked the range with
 * srdma_mr_check(). Through a window, as srdma_mr_copy().
 *
 * Context: Any context.
 * Return: 0, -EFAULT if the range leaves the MR or the registration is no
 * longer @serial, -EAGAIN as srdma_mr_copy(), or srdma_skb_copy()'s error
 * if @skb is too short.
 */
int srdma_mr_copy_skb(struct srdma_mr *mr, u64 serial, u64 iova,
		      const struct sk_buff *skb, int off, u32 len)
{
	struct srdma_mr *base;
	struct page *pg;
	u32 n, done, pgoff;
	void *va;
	int err;

	if (mr->type == SRDMA_MR_WINDOW) {
		base = srdma_mw_lock(mr, serial, iova, len);
		err = base ? srdma_mr_copy_skb(base, base->serial, iova, skb,
					       off, len) : -EFAULT;
		srdma_mw_unlock(mr);
		return err;
	}
	if (mr->type == SRDMA_MR_DMA)
		return srdma_skb_copy(skb, off, (void *)(uintptr_t)iova, len);
	if (mr->type == SRDMA_MR_FAST)
		return srdma_fr_copy(mr, serial, iova, NULL, skb, off, len,
				     true);

	err = 0;
	srdma_odp_lock(mr);
	for (done = 0; !err && done < len; done += n) {
		n = srdma_mr_chunk(mr, iova, done, len - done, &pg, &pgoff);
		err = srdma_chunk_err(mr, iova + done, n, pg);
		if (err)
			break;
		va = kmap_local_page(pg);
		err = srdma_skb_copy(skb, off + done, va + pgoff, n);
		kunmap_local(va);
	}
	srdma_odp_unlock(mr);
	return err;
}

/**
 * srdma_mr_atomic() - Carry out an atomic operation on 8 bytes of an MR.
 * @mr: the MR, a user MR
 * @serial: the registration srdma_mr_check() returned
 * @iova: the address of the 8 bytes, 8-byte aligned
 * @op: SRDMA_OP_COMPARE_SWAP, SRDMA_OP_FETCH_ADD or SRDMA_OP_ATOMIC_WRITE
 * @swap_add: the value swapped in, or added; for ATOMIC WRITE the 8 bytes
 *	stored, as they came in the packet
 * @compare: what compare and swap compares the value found with
 * @orig: set to the value found, in host byte order
 *
 * The operation is a locked cmpxchg on the pinned page (mapped with
 * kmap_local_page()): atomic with respect to every other atomic operation
 * of any srdma device, and to the CPUs' own atomic instructions on the
 * same word, but not to plain stores such as RDMA WRITE placement. ATOMIC
 * WRITE is one 8-byte exchange, ordered after every earlier store: the
 * other side sees the 8 bytes whole, never torn. The
 * caller checked the range and the rights with srdma_mr_check(). An
 * aligned iova shares its page offset with the user address (reg_mr
 * requires it), so the 8 bytes never straddle two pages. A user MR keeps
 * its registration for life; @serial is checked all the same, as
 * srdma_mr_copy() does. DMA and fast-registration MRs (kernel memory) are
 * refused. Through a window, the operation is on its MR, under the
 * window's lock.
 *
 * Context: Any context.
 * Return: 0; -EINVAL if @iova is not aligned or @mr is not a user MR;
 * -EFAULT if the 8 bytes are not all in @mr or the registration is no
 * longer @serial; -EAGAIN if they are in an on-demand page not present
 * (nothing done).
 */
int srdma_mr_atomic(struct srdma_mr *mr, u64 serial, u64 iova, u8 op,
		    u64 swap_add, u64 compare, u64 *orig)
{
	struct srdma_mr *base;
	struct page *pg;
	u64 *word, old;
	u32 pgoff;
	void *va;
	int err;

	if (mr->type == SRDMA_MR_WINDOW) {
		base = srdma_mw_lock(mr, serial, iova, sizeof(u64));
		err = base ? srdma_mr_atomic(base, base->serial, iova, op,
					     swap_add, compare, orig) :
			     -EFAULT;
		srdma_mw_unlock(mr);
		return err;
	}
	if (mr->type != SRDMA_MR_USER || !IS_ALIGNED(iova, sizeof(u64)))
		return -EINVAL;
	if (mr->serial != serial)
		return -EFAULT;
	srdma_odp_lock(mr);
	if (srdma_mr_chunk(mr, iova, 0, sizeof(u64), &pg, &pgoff) !=
	    sizeof(u64) || !IS_ALIGNED(pgoff, sizeof(u64))) {
		srdma_odp_unlock(mr);
		return -EFAULT;
	}
	if (!pg) {	/* on-demand, not present */
		srdma_odp_unlock(mr);
		return -EAGAIN;
	}
	va = kmap_local_page(pg);
	word = va + pgoff;
	if (op == SRDMA_OP_ATOMIC_WRITE) {
		/*
		 * A 64-bit exchange, on 32-bit machines too; a full barrier,
		 * so after this QP's earlier placements.
		 */
		old = READ_ONCE(*word);
		while (!try_cmpxchg64(word, &old, swap_add))
			;
	} else if (op == SRDMA_OP_COMPARE_SWAP) {
		old = cmpxchg64(word, compare, swap_add);
	} else {
		/* Retried only when another writer got in between. */
		old = READ_ONCE(*word);
		while (!try_cmpxchg64(word, &old, old + swap_add))
			;
	}
	kunmap_local(va);
	srdma_odp_unlock(mr);
	*orig = old;
	return 0;
}

/**
 * srdma_mr_attach() - Attach part of a user MR to a packet, without a copy.
 * @mr: the MR or window
 * @serial: the registration srdma_mr_check() returned
 * @iova: where in the MR
 * @skb: the packet
 * @len: bytes to attach
 *
 * The pages become @skb's fragments, each with a page reference that goes
 * when the skb is freed. Never through a window: its invalidation must stop
 * every byte, and attached pages are read after the lock is dropped.
 *
 * Context: Any context.
 * Return: 0; -EOPNOTSUPP for a DMA or fast-registration MR (kernel
 * memory, which may be slab memory and is copied, under the MR lock for
 * the latter), an on-demand or dma-buf MR, or a window (copied under its
 * lock) or -EMSGSIZE if the fragments run out, in which case the caller
 * copies instead; -EFAULT if the range leaves the MR.
 */
int srdma_mr_attach(struct srdma_mr *mr, u64 serial, u64 iova,
		    struct sk_buff *skb, u32 len)
{
	struct page *pg;
	u32 n, done, pgoff;
	int i;

	/*
	 * On-demand pages may go at any time: copied under the MR lock. A
	 * dma-buf's pages are its exporter's, to reuse once the MR is gone:
	 * no packet keeps them beyond that.
	 */
	if (!srdma_mr_attachable(mr))
		return -EOPNOTSUPP;
	for (done = 0; done < len; done += n) {
		n = srdma_mr_chunk(mr, iova, done, len - done, &pg, &pgoff);
		if (!n)
			return -EFAULT;
		i = skb_shinfo(skb)->nr_frags;
		if (skb_can_coalesce(skb, i, pg, pgoff)) {
			/* Right after the last one: its reference covers it. */
			skb_frag_size_add(&skb_shinfo(skb)->frags[i - 1], n);
		} else {
			if (i >= MAX_SKB_FRAGS)
				return -EMSGSIZE;
			get_page(pg);
			skb_fill_page_desc(skb, i, pg, pgoff, n);
		}
		skb->len += n;
		skb->data_len += n;
		skb->truesize += n;
	}
	return 0;
}

/**
 * srdma_sges_from_wr() - Copy a work request's SGE list into a WQE.
 * @dst: the WQE's SGEs
 * @src: the work request's SGEs
 * @num_sge: how many, checked by the caller against the queue's max_sge
 * @total: set to the sum of the lengths
 *
 * Context: Any context.
 * Return: 0, or -EINVAL if the total overflows 32 bits.
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

/**
 * srdma_sge_copy() - Move data between an SGE list and a buffer or packet.
 * @qp: the QP whose WQE the SGE list is (its PD, and user or kernel)
 * @sge: the SGE list
 * @num_sge: its length
 * @off: byte offset in the list where the data starts
 * @buf: the kernel buffer, if @skb is NULL
 * @skb: the packet, or NULL
 * @skb_off: where in @skb, if @to_mr
 * @len: bytes to move
 * @to_mr: into the SGEs (needs local write access), else out of them; out
 *	   of them into an @skb attaches the pages as fragments
 * @kick: for a page of an on-demand paging MR found missing: what to do
 *	  for @qp once srdma_odp_fault_later() brought it in
 *
 * Each SGE's lkey is looked up and checked against the QP's PD for the
 * access the direction needs; a user QP may use user MRs only.
 *
 * Context: Any context.
 * Return: 0; -EINVAL if the list is shorter than @off + @len; -EACCES for a
 * bad lkey, a missing right or a range outside the MR; -EOPNOTSUPP or
 * -EMSGSIZE from srdma_mr_attach(), for the caller to copy instead;
 * -EAGAIN for an on-demand page not present (a fault is queued; what was
 * moved before it may have been).
 */
int srdma_sge_copy(struct srdma_qp *qp, struct srdma_sge *sge, u32 num_sge,
		   u32 off, void *buf, struct sk_buff *skb, int skb_off,
		   u32 len, bool to_mr, enum srdma_odp_kick kick)
{
	struct srdma_mr *mr;
	u32 i, n, done = 0;
	u64 serial;
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
		serial = 0;
		if (mr->type != SRDMA_MR_USER && qp->is_user)
			err = -EACCES;
		else
			err = srdma_mr_check(mr, qp, sge[i].lkey,
					     sge[i].addr + off, n,
					     to_mr ? IB_ACCESS_LOCAL_WRITE : 0,
					     &serial);
		if (!err) {
			if (skb && to_mr)
				err = srdma_mr_copy_skb(mr, serial,
							sge[i].addr + off,
							skb, skb_off + done, n);
			else if (skb)
				err = srdma_mr_attach(mr, serial,
						      sge[i].addr + off, skb, n);
			else
				err = srdma_mr_copy(mr, serial,
						    sge[i].addr + off,
						    buf + done, n, to_mr);
		}
		if (err == -EAGAIN)
			err = srdma_odp_fault_later(qp, mr, sge[i].addr + off,
						    n, kick);
		srdma_mr_put(mr);
		if (err)
			return err == -EFAULT ? -EACCES : err;
		done += n;
		off = 0;
	}
	return done == len ? 0 : -EINVAL;
}
