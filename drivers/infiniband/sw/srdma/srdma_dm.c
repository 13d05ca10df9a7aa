// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma device memory (ibv_alloc_dm): a software device has no memory of
 * its own, so a DM is zeroed kernel pages, charged to the allocating
 * process's memory cgroup, that the process maps (the provider copies to
 * and from them: ibv_memcpy_to_dm/from_dm) and that MRs of it
 * (ibv_reg_dm_mr, zero-based) name to the data path like any user MR.
 *
 * The provider finds the mapping at an offset computed from the DM's
 * handle (SRDMA_DM_PGOFF_BASE, include/uapi/rdma/srdma-abi.h): the core
 * has assigned the handle before alloc_dm runs. An MR of a DM takes a
 * reference on each of its pages, so that they outlive the DM and its
 * mapping for as long as the MR does.
 */
#include <linux/mm.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/uverbs_std_types.h>

#include "srdma.h"

struct srdma_dm {
	struct ib_dm ibdm;
	struct srdma_umap *map;
	u64 len;
};

static struct srdma_dm *to_sdm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct srdma_dm, ibdm);
}

/**
 * srdma_alloc_dm() - ib_device_ops.alloc_dm: allocate device memory.
 * @ibdev: the device
 * @uctx: the process's context
 * @attr: the length (at most SRDMA_MAX_DM_SIZE) and the log2 alignment
 * @attrs: the command, whose new DM handle names the mapping
 *
 * Context: Process context; sleeps.
 * Return: the DM, or an ERR_PTR: -EINVAL for a length of 0 or over the
 * maximum, or an alignment over a page; -ENOMEM, also when the device has
 * its limit of DMs or the handle is beyond what the offsets reach.
 */
struct ib_dm *srdma_alloc_dm(struct ib_device *ibdev, struct ib_ucontext *uctx,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs)
{
	struct srdma_dev *sdev = to_sdev(ibdev);
	struct ib_uobject *uobj;
	struct srdma_dm *dm;
	u32 id;
	int err;

	if (!attr->length || attr->length > SRDMA_MAX_DM_SIZE ||
	    attr->alignment > PAGE_SHIFT) {
		srdma_dbg(sdev, "alloc_dm: length %llu, alignment 2^%u refused\n",
			  attr->length, attr->alignment);
		return ERR_PTR(-EINVAL);
	}
	uobj = uverbs_attr_get_uobject(attrs, UVERBS_ATTR_ALLOC_DM_HANDLE);
	if (IS_ERR(uobj))
		return ERR_CAST(uobj);
	id = uobj->id;
	if (id >= (U32_MAX - SRDMA_DM_PGOFF_BASE) / SRDMA_DM_PGOFF_STRIDE)
		return ERR_PTR(-ENOMEM);
	err = srdma_res_get(sdev, SRDMA_RES_DM);
	if (err)
		return ERR_PTR(err);
	dm = kzalloc(sizeof(*dm), GFP_KERNEL_ACCOUNT);
	if (!dm) {
		err = -ENOMEM;
		goto err_uncount;
	}
	dm->len = attr->length;
	dm->map = srdma_umap_create_at(uctx, PAGE_ALIGN(attr->length),
				       SRDMA_DM_PGOFF_BASE +
				       id * SRDMA_DM_PGOFF_STRIDE);
	if (IS_ERR(dm->map)) {
		err = PTR_ERR(dm->map);
		goto err_free_dm;
	}
	srdma_dbg(sdev, "DM %u: %llu bytes\n", id, attr->length);
	return &dm->ibdm;

err_free_dm:
	kfree(dm);
err_uncount:
	srdma_res_put(sdev, SRDMA_RES_DM);
	return ERR_PTR(err);
}

/**
 * srdma_dealloc_dm() - ib_device_ops.dealloc_dm: free device memory.
 * @ibdm: the DM, with no MR of it left (the core checks)
 * @attrs: the command, unused
 *
 * The pages go once the process no longer maps them.
 *
 * Context: Process context.
 * Return: 0.
 */
int srdma_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct srdma_dm *dm = to_sdm(ibdm);

	srdma_umap_remove(dm->map);
	srdma_res_put(to_sdev(ibdm->device), SRDMA_RES_DM);
	kfree(dm);
	return 0;
}

/**
 * srdma_reg_dm_mr() - ib_device_ops.reg_dm_mr: an MR of device memory.
 * @ibpd: the PD
 * @ibdm: the DM
 * @attr: offset and length in the DM (the core checked both against its
 *	  length), and the rights, with IB_ZERO_BASED (the core checked)
 * @attrs: the command, unused
 *
 * A user MR whose iova 0 is byte @attr->offset of the DM; it holds a
 * reference on each page.
 *
 * Context: Process context.
 * Return: the MR, or an ERR_PTR: -EINVAL for a range outside the DM,
 * -EOPNOTSUPP for @access (on-demand paging among it), -ENOMEM, also at
 * the device's limit of MRs.
 */
struct ib_mr *srdma_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct srdma_dm *dm = to_sdm(ibdm);
	unsigned long first, i;
	struct srdma_mr *mr;
	u64 end;
	int err;

	if (check_add_overflow(attr->offset, attr->length, &end) ||
	    end > dm->len)
		return ERR_PTR(-EINVAL);
	if (attr->access_flags & (IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB))
		return ERR_PTR(-EOPNOTSUPP);
	mr = srdma_mr_alloc(ibpd, attr->access_flags & ~IB_ZERO_BASED);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->type = SRDMA_MR_USER;
	mr->iova = 0;
	mr->length = attr->length;
	mr->page_off = attr->offset & ~PAGE_MASK;
	first = attr->offset >> PAGE_SHIFT;
	/*
	 * An MR of no bytes (allowed, also at the DM's end) has no page:
	 * srdma_mr_chunk() finds no byte in it before it looks at pages[].
	 */
	mr->npages = attr->length ? (PAGE_ALIGN(end) >> PAGE_SHIFT) - first : 0;
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_free_mr;
	}
	for (i = 0; i < mr->npages; i++) {
		mr->pages[i] = srdma_umap_page(dm->map, first + i);
		if (!mr->pages[i]) {	/* cannot happen: end <= dm->len */
			err = -EINVAL;
			goto err_put_pages;
		}
		get_page(mr->pages[i]);
	}
	mr->dm_pages = true;
	err = srdma_mr_add(sdev, mr);
	if (err)
		goto err_put_pages;
	srdma_dbg_mr(mr, "DM MR: %llu bytes at %llu, access %#x\n",
		     attr->length, attr->offset, attr->access_flags);
	return &mr->ibmr;

err_put_pages:
	mr->npages = i;		/* the pages referenced so far */
	srdma_mr_put_pages(mr);
err_free_mr:
	kfree(mr);
	srdma_res_put(sdev, SRDMA_RES_MR);
	return ERR_PTR(err);
}
