// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma mapped rings: the CQ, SQ and RQ memory a user process shares with
 * the kernel (layout in include/uapi/rdma/srdma-abi.h), and reading what
 * the process posted to a QP's rings.
 *
 * A ring is zeroed pages charged to the creating process's memory cgroup,
 * mapped contiguously in the kernel with vmap(VM_USERMAP) so that
 * remap_vmalloc_range() can hand them to user space; the ring is owned by
 * an rdma_user_mmap_entry. The
 * driver drops its use of the memory when the CQ or QP is destroyed; the
 * memory itself goes when the last mapping of it is gone (mmap_free).
 * The kernel never dereferences user virtual addresses here: it works on
 * its own vmalloc mapping of the same pages.
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "srdma.h"

struct srdma_umap {
	struct rdma_user_mmap_entry rentry;
	void *buf;			/* vmap() of pages[] */
	struct page **pages;
	unsigned int npages;
};

static void srdma_umap_free_pages(struct srdma_umap *map)
{
	unsigned int i;

	for (i = 0; i < map->npages; i++)
		__free_page(map->pages[i]);
	kvfree(map->pages);
}

/* Zeroed, accounted pages for @len bytes (page aligned), mapped in @map. */
static int srdma_umap_alloc(struct srdma_umap *map, size_t len)
{
	unsigned int n = len >> PAGE_SHIFT;

	map->pages = kvcalloc(n, sizeof(*map->pages),
			      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!map->pages)
		return -ENOMEM;
	for (map->npages = 0; map->npages < n; map->npages++) {
		map->pages[map->npages] = alloc_page(GFP_KERNEL_ACCOUNT |
						     __GFP_ZERO |
						     __GFP_NOWARN);
		if (!map->pages[map->npages])
			goto err_free_pages;
	}
	map->buf = vmap(map->pages, n, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	if (!map->buf)
		goto err_free_pages;
	return 0;

err_free_pages:
	srdma_umap_free_pages(map);
	return -ENOMEM;
}

static struct srdma_umap *to_umap(struct rdma_user_mmap_entry *rentry)
{
	return container_of(rentry, struct srdma_umap, rentry);
}

/**
 * srdma_uring_create() - Make a ring that a user process can map.
 * @uctx: the process's context
 * @ur: the kernel's view of the ring, filled in
 * @slots: how many slots, a power of two
 * @slot_size: bytes per slot
 * @uq: filled with the mmap() offset and length, for the provider
 *
 * Context: Process context; sleeps.
 * Return: 0, -EINVAL if the ring would be too large, or -ENOMEM.
 */
int srdma_uring_create(struct ib_ucontext *uctx, struct srdma_uring *ur,
		       u32 slots, u32 slot_size, struct srdma_uqueue *uq)
{
	struct srdma_umap *map;
	size_t len;
	int err;

	if (check_mul_overflow((size_t)slots, (size_t)slot_size, &len) ||
	    check_add_overflow(len, (size_t)SRDMA_RING_HDR_SIZE, &len))
		return -EINVAL;
	len = PAGE_ALIGN(len);
	if (len >> PAGE_SHIFT > UINT_MAX)
		return -EINVAL;

	map = kzalloc(sizeof(*map), GFP_KERNEL_ACCOUNT);
	if (!map)
		return -ENOMEM;
	err = srdma_umap_alloc(map, len);
	if (err)
		goto err_free_map;
	err = rdma_user_mmap_entry_insert(uctx, &map->rentry, len);
	if (err)
		goto err_free_buf;

	ur->map = map;
	ur->hdr = map->buf;
	ur->slots = map->buf + SRDMA_RING_HDR_SIZE;
	ur->slot_size = slot_size;
	ur->mask = slots - 1;
	uq->offset = rdma_user_mmap_get_offset(&map->rentry);
	uq->len = len;
	uq->slots = slots;
	uq->slot_size = slot_size;
	return 0;

err_free_buf:
	vunmap(map->buf);
	srdma_umap_free_pages(map);
err_free_map:
	kfree(map);
	return err;
}

/**
 * srdma_umap_create_at() - Zeroed memory a process maps at a fixed offset.
 * @uctx: the process's context
 * @len: bytes, page aligned
 * @pgoff: the page offset of the mapping, agreed with the provider
 *
 * For device memory (srdma_dm.c), whose offset the provider computes.
 *
 * Context: Process context; sleeps.
 * Return: the memory, or an ERR_PTR: -ENOMEM, or -EBUSY if something is
 * mapped at @pgoff already.
 */
struct srdma_umap *srdma_umap_create_at(struct ib_ucontext *uctx, size_t len,
					u32 pgoff)
{
	struct srdma_umap *map;
	int err;

	if (!len || len >> PAGE_SHIFT > U32_MAX - pgoff)
		return ERR_PTR(-EINVAL);
	map = kzalloc(sizeof(*map), GFP_KERNEL_ACCOUNT);
	if (!map)
		return ERR_PTR(-ENOMEM);
	err = srdma_umap_alloc(map, len);
	if (err)
		goto err_free_map;
	err = rdma_user_mmap_entry_insert_exact(uctx, &map->rentry, len, pgoff);
	if (err) {
		err = -EBUSY;
		goto err_free_buf;
	}
	return map;

err_free_buf:
	vunmap(map->buf);
	srdma_umap_free_pages(map);
err_free_map:
	kfree(map);
	return ERR_PTR(err);
}

/*
 * Stop using memory from srdma_umap_create_at(): it goes once no process
 * maps it and no MR holds its pages. Process context.
 */
void srdma_umap_remove(struct srdma_umap *map)
{
	rdma_user_mmap_entry_remove(&map->rentry);
}

/* Page @i of @map, or NULL past its end. */
struct page *srdma_umap_page(struct srdma_umap *map, unsigned long i)
{
	return i < map->npages ? map->pages[i] : NULL;
}

/**
 * srdma_uring_destroy() - Stop using a mapped ring.
 * @ur: the ring; nothing happens if it was never created
 *
 * The memory lives on while user space still maps it.
 *
 * Context: Process context.
 */
void srdma_uring_destroy(struct srdma_uring *ur)
{
	if (!ur->map)
		return;
	rdma_user_mmap_entry_remove(&ur->map->rentry);
	ur->map = NULL;
	ur->hdr = NULL;
	ur->slots = NULL;
}

/**
 * srdma_mmap() - ib_device_ops.mmap: map a ring into a process.
 * @uctx: the process's context
 * @vma: the mapping, whose offset names the ring
 *
 * Context: Process context, mmap lock held.
 * Return: 0, -EINVAL if no ring of @uctx has that offset and length (or the
 * mapping is not shared), or remap_vmalloc_range()'s error.
 */
int srdma_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	int err;

	/* Checks the offset, the length and that the mapping is shared. */
	rentry = rdma_user_mmap_entry_get(uctx, vma);
	if (!rentry) {
		ibdev_dbg(uctx->device, "mmap: no ring at page offset %lu\n",
			  vma->vm_pgoff);
		return -EINVAL;
	}
	err = remap_vmalloc_range(vma, to_umap(rentry)->buf, 0);
	rdma_user_mmap_entry_put(rentry);
	return err;
}

/**
 * srdma_mmap_free() - ib_device_ops.mmap_free: free a ring's memory.
 * @rentry: the ring's mmap entry, whose last reference went
 *
 * Pages still mapped by a process stay until it unmaps them.
 *
 * Context: Process context.
 */
void srdma_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	struct srdma_umap *map = to_umap(rentry);

	vunmap(map->buf);
	srdma_umap_free_pages(map);
	kfree(map);
}

/**
 * srdma_uring_new() - How far has user space filled a QP's mapped ring?
 * @qp: the QP
 * @ur: its mapped SQ or RQ
 * @r: the kernel ring that takes what @ur holds
 * @uprod: set to the user's producer index
 *
 * The index is read once, with acquire semantics: the entries below it are
 * visible. An index beyond what the queue holds marks the ring bad.
 *
 * Context: QP lock held.
 * Return: 0, or -EINVAL if the ring is, or now was found, bad.
 */
int srdma_uring_new(struct srdma_qp *qp, struct srdma_uring *ur,
		    struct srdma_ring *r, u32 *uprod)
{
	lockdep_assert_held(&qp->lock);
	if (ur->bad)
		return -EINVAL;
	/* Entries written before the index are visible after it. */
	*uprod = smp_load_acquire(&ur->hdr->prod);
	if (*uprod - r->prod > r->max_wr - (r->prod - r->cons)) {
		srdma_dbg_qp(qp, "%s ring: producer %u out of range (at %u/%u, depth %u)\n",
			     r == &qp->sq ? "send" : "receive", *uprod,
			     r->prod, r->cons, r->max_wr);
		ur->bad = true;
		return -EINVAL;
	}
	return 0;
}

/**
 * srdma_usges_read() - Read the SGE list of a mapped ring entry.
 * @qp: the QP
 * @ur: its mapped SQ or RQ, which holds the entry
 * @dst: the kernel WQE's SGEs
 * @src: the entry's SGEs, in memory user space writes at will
 * @num_sge: how many the entry says it has, as read once
 * @max_sge: the queue's max_sge
 * @total: set to the sum of the lengths
 *
 * Each field is read once, into @dst, and only @dst is used afterwards.
 * A bad list marks the ring bad.
 *
 * Context: QP lock held.
 * Return: 0, or -EINVAL if there are more than @max_sge or the lengths
 * overflow 32 bits.
 */
int srdma_usges_read(struct srdma_qp *qp, struct srdma_uring *ur,
		     struct srdma_sge *dst, const struct srdma_usge *src,
		     u32 num_sge, u32 max_sge, u32 *total)
{
	u32 i;

	lockdep_assert_held(&qp->lock);
	if (num_sge > max_sge) {
		srdma_dbg_qp(qp, "ring entry: %u SGEs, max %u\n", num_sge,
			     max_sge);
		ur->bad = true;
		return -EINVAL;
	}
	*total = 0;
	for (i = 0; i < num_sge; i++) {
		dst[i].addr = READ_ONCE(src[i].addr);
		dst[i].length = READ_ONCE(src[i].length);
		dst[i].lkey = READ_ONCE(src[i].lkey);
		if (check_add_overflow(*total, dst[i].length, total)) {
			srdma_dbg_qp(qp, "ring entry: SGE lengths overflow\n");
			ur->bad = true;
			return -EINVAL;
		}
	}
	return 0;
}
