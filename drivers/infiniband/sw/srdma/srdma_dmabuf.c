// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma MRs of dma-buf memory (ibv_reg_dmabuf_mr).
 *
 * A hardware device imports a dma-buf by attaching to it and mapping it
 * for its own DMA. srdma moves every byte with the CPU and has no DMA
 * device to map for, so it attaches without mapping, asks the exporter
 * for a kernel mapping of the whole buffer (dma_buf_vmap), takes a
 * reference on each page behind it, and lists those pages in the MR like
 * the pinned pages of a user MR: the data path does not know the
 * difference, except that such pages are always copied into packets,
 * never attached to them (srdma_mr_attach()).
 *
 * What the memory must be, and why:
 *  - Held in place for the MR's life. A dynamic exporter (one with
 *    pin/unpin: TTM-based GPU drivers) may move a buffer that is only
 *    mapped, and pinning it takes a dynamic attachment, which a mismatch
 *    with such exporters would map for DMA at once: refused. A static
 *    exporter keeps the buffer while attached (the DRM PRIME helpers pin
 *    the object at attach; i915 moves it to system memory then).
 *  - Ordinary refcounted pages of RAM: not I/O memory (is_iomem), not a
 *    page without a struct page or of ZONE_DEVICE, not a tail page of a
 *    non-compound allocation (its count is 0: folio_try_get() refuses
 *    it). A page of a huge page is taken, its reference on the huge page
 *    (helper-84: before, every such page was refused). A page-aligned
 *    mapping.
 *  - Writable through the file descriptor (FMODE_WRITE) for an MR that
 *    lets anyone write: a read-only export stays read-only.
 *
 * The attachment, the mapping, the page references and a reference on the
 * dma-buf are held until the MR is deregistered, so the memory stays
 * whatever the process does with its file descriptor. Such an MR cannot
 * be registered again (rereg_mr).
 */
#include <linux/dma-buf.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "srdma.h"

MODULE_IMPORT_NS(DMA_BUF);

/*
 * The page behind byte @off of the buffer's kernel mapping, with a
 * reference, or NULL if it is not an ordinary page of RAM.
 */
static struct page *srdma_dmabuf_page(void *vaddr, unsigned long off)
{
	void *va = vaddr + off;
	struct folio *folio;
	unsigned long pfn;
	struct page *pg;

	if (is_vmalloc_addr(va))
		pfn = vmalloc_to_pfn(va);
	else if (virt_addr_valid(va))
		pfn = PHYS_PFN(__pa(va));
	else
		return NULL;
	if (!pfn_valid(pfn))
		return NULL;
	pg = pfn_to_page(pfn);
	if (is_zone_device_page(pg))
		return NULL;
	/*
	 * The reference goes on the page's folio: a page of a huge page (a
	 * THP of shmem, a hugetlb page behind a udmabuf) has no count of its
	 * own, its head's counts for all (put_page() drops it there). A
	 * folio split meanwhile is seen and refused.
	 */
	folio = page_folio(pg);
	if (!folio_try_get(folio))
		return NULL;
	if (unlikely(page_folio(pg) != folio)) {
		folio_put(folio);
		return NULL;
	}
	return pg;
}

/*
 * Does @next, the page mapped after @prev, follow it as it must where both
 * are of one huge page? Within a folio, byte k of the buffer is byte k of
 * the folio. Some exporters' kernel mappings repeat a huge page's first
 * page for all of its pages (udmabuf's vmap in 6.12 before upstream
 * a26fd92b): an MR over that would read and write the first 4 KiB of
 * each huge page in place of the rest, so it is refused (helper-86).
 */
static bool srdma_dmabuf_pages_follow(struct page *prev, struct page *next)
{
	return page_folio(prev) != page_folio(next) ||
	       next == nth_page(prev, 1);
}

/* Undo srdma_dmabuf_import(): page references, mapping, attachment, buffer. */
void srdma_dmabuf_release(struct srdma_mr *mr)
{
	srdma_mr_put_pages(mr);
	srdma_dma_buf_vunmap(mr->dmabuf, &mr->dmabuf_map);
	dma_buf_detach(mr->dmabuf, mr->dmabuf_attach);
	dma_buf_put(mr->dmabuf);
	mr->dmabuf_attach = NULL;
	mr->dmabuf = NULL;
}

/* May the buffer back an MR with @access at all? 0 or an errno. */
static int srdma_dmabuf_usable(struct srdma_dev *sdev, struct dma_buf *dmabuf,
			       u64 offset, u64 length, int access)
{
	u64 end;

	if (check_add_overflow(offset, length, &end) || end > dmabuf->size) {
		srdma_dbg(sdev, "reg_dmabuf_mr: %#llx+%#llx outside the dma-buf's %zu bytes\n",
			  offset, length, dmabuf->size);
		return -EINVAL;
	}
	if ((access & (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(dmabuf->file->f_mode & FMODE_WRITE)) {
		srdma_dbg(sdev, "reg_dmabuf_mr: access %#x to a read-only dma-buf\n",
			  access);
		return -EACCES;
	}
	if (dma_buf_is_dynamic(dmabuf)) {
		srdma_dbg(sdev, "reg_dmabuf_mr: the exporter (%s) may move the buffer\n",
			  dmabuf->exp_name);
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * Attach to the dma-buf of @fd, map it and list the pages of its bytes
 * [@offset, +@length) in @mr, each with a reference.
 */
static int srdma_dmabuf_import(struct srdma_dev *sdev, struct srdma_mr *mr,
			       int fd, u64 offset, u64 length, int access)
{
	struct dma_buf_attachment *attach;
	unsigned long first, i;
	struct dma_buf *dmabuf;
	void *vaddr;
	int err;

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf)) {
		srdma_dbg(sdev, "reg_dmabuf_mr: fd %d is no dma-buf\n", fd);
		return PTR_ERR(dmabuf);
	}
	err = srdma_dmabuf_usable(sdev, dmabuf, offset, length, access);
	if (err)
		goto err_put_buf;
	attach = dma_buf_attach(dmabuf, &sdev->ibdev.dev);
	if (IS_ERR(attach)) {
		err = PTR_ERR(attach);
		srdma_dbg(sdev, "reg_dmabuf_mr: the exporter (%s) refused an attachment: %d\n",
			  dmabuf->exp_name, err);
		goto err_put_buf;
	}
	err = srdma_dma_buf_vmap(dmabuf, &mr->dmabuf_map);
	if (err) {
		srdma_dbg(sdev, "reg_dmabuf_mr: the exporter (%s) gave no kernel mapping: %d\n",
			  dmabuf->exp_name, err);
		err = -EOPNOTSUPP;
		goto err_detach;
	}
	vaddr = mr->dmabuf_map.vaddr;
	if (mr->dmabuf_map.is_iomem || !PAGE_ALIGNED(vaddr)) {
		srdma_dbg(sdev, "reg_dmabuf_mr: the exporter (%s) maps I/O memory or not at a page\n",
			  dmabuf->exp_name);
		err = -EOPNOTSUPP;
		goto err_vunmap;
	}
	mr->page_off = offset & ~PAGE_MASK;
	first = offset >> PAGE_SHIFT;
	mr->npages = (PAGE_ALIGN(offset + length) >> PAGE_SHIFT) - first;
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_vunmap;
	}
	for (i = 0; i < mr->npages; i++) {
		mr->pages[i] = srdma_dmabuf_page(vaddr, (first + i) << PAGE_SHIFT);
		if (!mr->pages[i]) {
			srdma_dbg(sdev, "reg_dmabuf_mr: the exporter (%s) maps memory that is not ordinary pages\n",
				  dmabuf->exp_name);
			err = -EOPNOTSUPP;
			goto err_put_pages;
		}
		if (i && !srdma_dmabuf_pages_follow(mr->pages[i - 1],
						    mr->pages[i])) {
			srdma_dbg(sdev, "reg_dmabuf_mr: the exporter (%s) maps a huge page's pages out of order\n",
				  dmabuf->exp_name);
			i++;	/* this one's reference too */
			err = -EOPNOTSUPP;
			goto err_put_pages;
		}
	}
	mr->dmabuf = dmabuf;
	mr->dmabuf_attach = attach;
	return 0;

err_put_pages:
	mr->npages = i;		/* the pages referenced so far */
	srdma_mr_put_pages(mr);
err_vunmap:
	srdma_dma_buf_vunmap(dmabuf, &mr->dmabuf_map);
err_detach:
	dma_buf_detach(dmabuf, attach);
err_put_buf:
	dma_buf_put(dmabuf);
	return err;
}

/**
 * srdma_reg_user_mr_dmabuf() - ib_device_ops.reg_user_mr_dmabuf: an MR of
 *	dma-buf memory.
 * @ibpd: the PD
 * @offset: where the MR starts in the dma-buf
 * @length: its length in bytes
 * @iova: the address the MR's users give for byte @offset
 * @fd: the dma-buf's file descriptor, in the calling process
 * @access: IB_ACCESS_* flags
 * @attrs: the command (before 6.12 its driver udata), unused
 *
 * Context: Process context; sleeps.
 * Return: the MR, or an ERR_PTR: -EINVAL for a bad range or @access,
 * -EBADF or -EINVAL for an @fd that is no dma-buf, -EACCES for write
 * access to a read-only one, -EOPNOTSUPP for on-demand paging or a buffer
 * the exporter may move or whose memory is not ordinary pages (see the top
 * of this file), the exporter's error for an attachment, -ENOMEM, also
 * when the device has its limit of MRs.
 */
struct ib_mr *srdma_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd,
				       int access,
				       struct srdma_reg_dmabuf_attrs *attrs)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	struct srdma_mr *mr;
	int err;

	if (access & (IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB)) {
		srdma_dbg(sdev, "reg_dmabuf_mr: access %#x: no on-demand paging of a dma-buf\n",
			  access);
		return ERR_PTR(-EOPNOTSUPP);
	}
	/* A user MR's rules, the buffer offset in the user address's place. */
	err = srdma_umr_check_range(sdev, offset, length, iova);
	if (err)
		return ERR_PTR(err);
	mr = srdma_mr_alloc(ibpd, access);
	if (IS_ERR(mr)) {
		srdma_dbg(sdev, "reg_dmabuf_mr: access %#x refused: %ld\n",
			  access, PTR_ERR(mr));
		return ERR_CAST(mr);
	}
	mr->type = SRDMA_MR_USER;
	mr->iova = iova;
	mr->length = length;
	err = srdma_dmabuf_import(sdev, mr, fd, offset, length, access);
	if (err)
		goto err_free_mr;
	err = srdma_mr_add(sdev, mr);
	if (err)
		goto err_release_buf;
	srdma_dbg_mr(mr, "dma-buf MR: %#llx+%#llx at offset %#llx of %s's buffer, access %#x\n",
		     iova, length, offset, mr->dmabuf->exp_name, access);
	return &mr->ibmr;

err_release_buf:
	srdma_dmabuf_release(mr);
err_free_mr:
	kfree(mr);
	srdma_res_put(sdev, SRDMA_RES_MR);
	return ERR_PTR(err);
}
