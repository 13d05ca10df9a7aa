// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrdma: the rdma-core provider for the srdma kernel module.
 *
 * Claims srdma ib_devices, whatever their name, by their node description
 * and opens a verbs context through the uverbs commands. The data path runs
 * on rings shared with the kernel (layout in srdma-abi.h): poll_cq never
 * enters the kernel, post_recv only while the QP is in the error state,
 * post_srq_recv never, and post_send writes its work requests and rings
 * at most one doorbell per call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

#include "verbs_private.h"
#include "../../include/uapi/rdma/srdma-abi.h"

/* QPNs are 24 bits on the wire. */
#define SRDMA_QPN_MAX		0xffffffU
/* The kernel's message limits (srdma_msg_len_ok()) and default path MTU. */
#define SRDMA_MAX_MSG		(1ULL << 31)
#define SRDMA_MAX_MSG_PKTS	(1ULL << 21)
#define SRDMA_DEFAULT_MTU	256u

struct srdma_device {
	struct verbs_device vdev;
};

struct srdma_context {
	struct verbs_context vctx;
	uint64_t caps;			/* enum srdma_ucontext_caps */
	bool cmd_ioctl;			/* commands through ioctl (atomic) */
	unsigned int fork_gen;		/* srdma_fork_gen when made */
};

/*
 * Forks this process is a child of, counted by srdma_atfork_child(): a
 * context made before one is the parent's (srdma_cmd_write()).
 */
static unsigned int srdma_fork_gen;

/*
 * A PD, or a parent domain (ibv_alloc_parent_domain()): an ibv_pd of its
 * own with the handle of the PD it was made from, so that every command
 * that names it reaches the kernel as that PD. srdma has no thread
 * domains, and allocates no queue memory for the allocators to replace:
 * every ring is kernel memory the process maps. The allocators are kept,
 * never called.
 */
struct srdma_pd {
	struct ibv_pd ibpd;
	struct srdma_pd *protection;	/* a parent domain's PD; NULL for a PD */
	unsigned int parents;		/* a PD's parent domains (atomic) */
	void *pd_context;		/* as given, for the allocators */
};

struct srdma_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct srdma_alloc_ucontext_resp drv;
};

/* One mapped ring, as the provider sees it. */
struct srdma_uring {
	struct srdma_ring_hdr *hdr;
	char *slots;
	size_t len;
	uint32_t mask;
	uint32_t slot_size;
	uint32_t max_wr;
	uint32_t max_sge;
	/*
	 * Longest message an entry may carry. The kernel refuses more than
	 * 2^31 bytes or 2^21 packets at the QP's path MTU: an SQ's limit
	 * follows the path MTU (modify_qp, under the lock).
	 */
	uint64_t max_len;
	pthread_spinlock_t lock;	/* one poster or poller at a time */
};

/* One per thread; its address tells a thread's own poll batch apart. */
static __thread char srdma_thread_tag;

struct srdma_cq {
	struct verbs_cq vcq;		/* an ibv_cq, or an ibv_cq_ex */
	struct srdma_uring ring;
	/*
	 * ibv_cq_ex polling, from start_poll to end_poll, under ring.lock:
	 * a copy of the completion the read_* accessors report (the slot is
	 * read once), the next index to take, and prod as last loaded.
	 */
	struct ib_uverbs_wc cur;
	struct srdma_uwc_ts cur_ts;	/* with timestamps only */
	uint32_t next;
	uint32_t prod;
	/*
	 * start_poll found one, so a batch holds the lock: the address of
	 * srdma_thread_tag in the thread that opened it, else NULL (atomic).
	 */
	const char *poller;
	/*
	 * Under ring.lock: a resize succeeded but its new ring could not be
	 * mapped. The kernel writes completions there only, so every poll
	 * fails from then on rather than report an empty CQ.
	 */
	bool lost;
	/* Set at creation: slots of SRDMA_UWC_TS_SLOT bytes, with times. */
	bool timestamps;
};

struct srdma_qp {
	struct verbs_qp vqp;		/* first: ibv_qp_to_qp_ex() casts */
	struct srdma_uring sq;
	struct srdma_uring rq;
	uint32_t max_inline;		/* max_inline_data, as the kernel said */
	/*
	 * ibv_qp_ex posting, from wr_start to wr_complete or wr_abort, under
	 * sq.lock. Entries are written from wr_first on; prod is stored only
	 * by wr_complete, and only if the whole batch is good.
	 */
	struct srdma_usend_wqe *wr_cur;	/* the entry being built, or NULL */
	uint32_t wr_first;		/* the SQ's prod at wr_start */
	uint32_t wr_prod;		/* the next entry to write */
	int wr_err;			/* the batch's first error, or 0 */
	bool wr_need_ah;		/* wr_cur is UD: needs wr_set_ud_addr */
};

/*
 * An SRQ: its mapped ring, which the kernel takes receives from. Made by
 * create_srq_ex it is a verbs_srq, which an XRC SRQ's number is kept in.
 */
struct srdma_srq {
	union {
		struct ibv_srq ibsrq;
		struct verbs_srq vsrq;
	};
	struct srdma_uring rq;
};

struct srdma_xrcd {
	struct verbs_xrcd vxrcd;
};

struct srdma_create_srq_resp_all {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct srdma_create_srq_resp drv;
};

struct srdma_ah {
	struct ibv_ah ibah;
	uint32_t ah_num;		/* what UD send entries name */
};

struct srdma_create_ah_resp_all {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct srdma_create_ah_resp drv;
};

struct srdma_create_cq_resp_all {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct srdma_create_cq_resp drv;
};

/* The kernel's create_cq takes the same driver data from both commands. */
struct srdma_create_cq_ex_resp_all {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct srdma_create_cq_resp drv;
};

struct srdma_resize_cq_resp_all {
	struct ib_uverbs_resize_cq_resp ibv_resp;
	struct srdma_resize_cq_resp drv;
};

struct srdma_create_qp_resp_all {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct srdma_create_qp_resp drv;
};

static struct srdma_cq *to_scq(struct ibv_cq *ibcq)
{
	return (struct srdma_cq *)ibcq;
}

static struct srdma_cq *to_scq_ex(struct ibv_cq_ex *ibcq)
{
	return (struct srdma_cq *)ibcq;
}

/* The casts below and ibv_qp_to_qp_ex() need the verbs objects first. */
_Static_assert(offsetof(struct srdma_cq, vcq) == 0, "vcq first");
_Static_assert(offsetof(struct srdma_qp, vqp) == 0, "vqp first");

/* Longest message at path MTU @mtu. */
static uint64_t srdma_max_msg(uint32_t mtu)
{
	uint64_t n = SRDMA_MAX_MSG_PKTS * mtu;

	return n < SRDMA_MAX_MSG ? n : SRDMA_MAX_MSG;
}

static struct srdma_qp *to_sqp(struct ibv_qp *ibqp)
{
	return (struct srdma_qp *)ibqp;
}

static struct srdma_qp *to_sqp_ex(struct ibv_qp_ex *ibqp)
{
	return (struct srdma_qp *)ibqp;
}

static struct srdma_srq *to_ssrq(struct ibv_srq *ibsrq)
{
	return (struct srdma_srq *)ibsrq;
}

static struct srdma_ah *to_sah(struct ibv_ah *ibah)
{
	return (struct srdma_ah *)ibah;
}

static void *srdma_slot(struct srdma_uring *r, uint32_t idx)
{
	return r->slots + (size_t)(idx & r->mask) * r->slot_size;
}

static uint32_t srdma_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void srdma_store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/*
 * Map a ring the kernel created; its geometry must be what we expect.
 * The ring's lock is left alone.
 */
static int srdma_uring_mmap(struct ibv_context *ctx, struct srdma_uring *r,
			    uint64_t offset, uint64_t len, uint32_t slots,
			    uint32_t slot_size, size_t min_slot)
{
	void *p;

	if (!slots || (slots & (slots - 1)) || slot_size < min_slot ||
	    len < SRDMA_RING_HDR_SIZE + (uint64_t)slots * slot_size)
		return EPROTO;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		 offset);
	if (p == MAP_FAILED)
		return errno;
	r->hdr = p;
	r->slots = (char *)p + SRDMA_RING_HDR_SIZE;
	r->len = len;
	r->mask = slots - 1;
	r->slot_size = slot_size;
	return 0;
}

/* The same for a new ring, whose lock is made here. */
static int srdma_uring_map(struct ibv_context *ctx, struct srdma_uring *r,
			   uint64_t offset, uint64_t len, uint32_t slots,
			   uint32_t slot_size, size_t min_slot)
{
	int ret = srdma_uring_mmap(ctx, r, offset, len, slots, slot_size,
				   min_slot);

	if (!ret)
		pthread_spin_init(&r->lock, PTHREAD_PROCESS_PRIVATE);
	return ret;
}

static void srdma_uring_unmap(struct srdma_uring *r)
{
	if (r->hdr) {
		munmap(r->hdr, r->len);
		pthread_spin_destroy(&r->lock);
		r->hdr = NULL;
	}
}

static struct srdma_context *to_sctx(struct ibv_context *ctx)
{
	return (struct srdma_context *)((char *)ctx -
		offsetof(struct srdma_context, vctx.context));
}

static int srdma_query_device_ex(struct ibv_context *ctx,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int srdma_query_port(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static void srdma_free_context(struct ibv_context *ibctx)
{
	struct srdma_context *ctx = to_sctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

/* ibpd is the first member: an ibv_pd of srdma's is a struct srdma_pd. */
static struct srdma_pd *to_spd(struct ibv_pd *pd)
{
	return (struct srdma_pd *)pd;
}

/* The PD behind @pd: itself, or a parent domain's PD. */
static const struct ibv_pd *srdma_pd_base(const struct ibv_pd *pd)
{
	const struct srdma_pd *spd = (const struct srdma_pd *)pd;

	return spd->protection ? &spd->protection->ibpd : pd;
}

/* Do @a and @b, PDs or parent domains or NULL, name the same PD? */
static bool srdma_same_pd(const struct ibv_pd *a, const struct ibv_pd *b)
{
	return a && b && srdma_pd_base(a) == srdma_pd_base(b);
}

static struct ibv_pd *srdma_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct srdma_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ret = ibv_cmd_alloc_pd(ctx, &pd->ibpd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return &pd->ibpd;
}

/*
 * ibv_import_pd(): the PD of @pd_handle in an imported context. Nothing
 * to ask the kernel: it checks the handle in every command that names it.
 */
static struct ibv_pd *srdma_import_pd(struct ibv_context *ctx,
				      uint32_t pd_handle)
{
	struct srdma_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return NULL;
	pd->ibpd.context = ctx;
	pd->ibpd.handle = pd_handle;
	return &pd->ibpd;
}

/* ibv_unimport_pd(): forget it; the kernel's PD stays. */
static void srdma_unimport_pd(struct ibv_pd *pd)
{
	free(to_spd(pd));
}

/*
 * ibv_alloc_parent_domain(): on a PD of this context (not on another
 * parent domain), with allocators and a pd_context or not; EINVAL for
 * anything else, a thread domain included (srdma has none).
 */
static struct ibv_pd *
srdma_alloc_parent_domain(struct ibv_context *ctx,
			  struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct srdma_pd *base, *pd;

	if (!attr->pd || attr->pd->context != ctx || attr->td ||
	    (attr->comp_mask & ~known) ||
	    to_spd(attr->pd)->protection ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free))) {
		errno = EINVAL;
		return NULL;
	}
	base = to_spd(attr->pd);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->ibpd.context = ctx;
	pd->ibpd.handle = base->ibpd.handle;
	pd->protection = base;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	__atomic_add_fetch(&base->parents, 1, __ATOMIC_SEQ_CST);
	return &pd->ibpd;
}

/*
 * A parent domain goes without a command; a PD only once no parent domain
 * is left on it (EBUSY before, as for the kernel's objects on it).
 */
static int srdma_dealloc_pd(struct ibv_pd *ibpd)
{
	struct srdma_pd *pd = to_spd(ibpd);
	int ret;

	if (pd->protection) {
		__atomic_sub_fetch(&pd->protection->parents, 1,
				   __ATOMIC_SEQ_CST);
		free(pd);
		return 0;
	}
	if (__atomic_load_n(&pd->parents, __ATOMIC_SEQ_CST))
		return EBUSY;
	ret = ibv_cmd_dealloc_pd(ibpd);
	if (!ret)
		free(pd);
	return ret;
}

static struct ibv_mr *srdma_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * Device memory (SRDMA_CAP_DM): kernel pages mapped here at the offset the
 * ABI derives from the DM's handle. Copies to and from it start at a
 * multiple of 4 bytes and are of a multiple of 4, as hardware DM wants,
 * and stay inside it.
 */
struct srdma_dm {
	struct verbs_dm vdm;
	char *addr;			/* the mapping */
	size_t len;			/* what was allocated */
	size_t map_len;			/* len, in whole pages */
};

static struct srdma_dm *to_sdm(struct ibv_dm *dm)
{
	return (struct srdma_dm *)dm;	/* vdm.dm is the first member */
}

/*
 * 0, EINVAL for an offset or length not a multiple of 4, EFAULT outside
 * the DM.
 */
static int srdma_dm_range(struct srdma_dm *dm, uint64_t off, size_t len)
{
	if ((off | len) & 3)
		return EINVAL;
	if (off > dm->len || len > dm->len - off)
		return EFAULT;
	return 0;
}

static int srdma_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t off,
			      const void *host, size_t len)
{
	struct srdma_dm *dm = to_sdm(ibdm);
	int ret = srdma_dm_range(dm, off, len);

	if (!ret)
		memcpy(dm->addr + off, host, len);
	return ret;
}

static int srdma_memcpy_from_dm(void *host, struct ibv_dm *ibdm, uint64_t off,
				size_t len)
{
	struct srdma_dm *dm = to_sdm(ibdm);
	int ret = srdma_dm_range(dm, off, len);

	if (!ret)
		memcpy(host, dm->addr + off, len);
	return ret;
}

static struct ibv_dm *srdma_alloc_dm(struct ibv_context *ctx,
				     struct ibv_alloc_dm_attr *attr)
{
	long page = sysconf(_SC_PAGESIZE);
	struct srdma_dm *dm;
	off_t off;
	int ret;

	if (!(to_sctx(ctx)->caps & SRDMA_CAP_DM)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask || !attr->length || page <= 0) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return NULL;
	ret = ibv_cmd_alloc_dm(ctx, attr, &dm->vdm, NULL);
	if (ret)
		goto err_free;
	dm->len = attr->length;
	dm->map_len = (attr->length + page - 1) / page * page;
	off = ((off_t)SRDMA_DM_PGOFF_BASE +
	       (off_t)dm->vdm.handle * SRDMA_DM_PGOFF_STRIDE) * page;
	dm->addr = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			ctx->cmd_fd, off);
	if (dm->addr == MAP_FAILED) {
		ret = errno;
		ibv_cmd_free_dm(&dm->vdm);
		goto err_free;
	}
	dm->vdm.dm.memcpy_to_dm = srdma_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = srdma_memcpy_from_dm;
	dm->vdm.dm.handle = dm->vdm.handle;
	dm->vdm.dm.comp_mask = IBV_DM_MASK_HANDLE;
	return &dm->vdm.dm;

err_free:
	free(dm);
	errno = ret;
	return NULL;
}

/* EBUSY (from the kernel) while an MR of it exists: it stays usable. */
static int srdma_free_dm(struct ibv_dm *ibdm)
{
	struct srdma_dm *dm = to_sdm(ibdm);
	int ret;

	ret = ibv_cmd_free_dm(&dm->vdm);
	if (ret)
		return ret;
	munmap(dm->addr, dm->map_len);
	free(dm);
	return 0;
}

/* An MR of @dm_offset..+@length of the DM: zero-based (the kernel checks). */
static struct ibv_mr *srdma_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
				      uint64_t dm_offset, size_t length,
				      unsigned int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_dm_mr(pd, &to_sdm(ibdm)->vdm, dm_offset, length,
				access, vmr, NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * ibv_reg_dmabuf_mr(): an MR of @length bytes at @offset of the dma-buf
 * @fd, whose first byte users name @iova. The kernel checks the range
 * and maps the buffer.
 */
static struct ibv_mr *srdma_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					  size_t length, uint64_t iova, int fd,
					  int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* ibv_import_mr(): the MR of @mr_handle, its keys and length asked. */
static struct ibv_mr *srdma_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct verbs_mr *vmr = calloc(1, sizeof(*vmr));
	int ret;

	if (!vmr)
		return NULL;
	ret = ibv_cmd_query_mr(pd, vmr, mr_handle);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* ibv_unimport_mr(): forget it; the registration stays. */
static void srdma_unimport_mr(struct ibv_mr *mr)
{
	free((struct verbs_mr *)mr);
}

/*
 * ibv_advise_mr(): prefetch the pages of on-demand paging MRs. The kernel
 * checks the SGEs and always finishes before it returns. A parent domain
 * carries its protection domain's handle.
 */
static int srdma_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			   uint32_t flags, struct ibv_sge *sg_list,
			   uint32_t num_sges)
{
	return ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sges);
}

/*
 * ibv_rereg_mr() (libibverbs checked the flags): the kernel registers the
 * memory again under the same keys. Returns an errno value, as libibverbs
 * expects of the provider.
 */
static int srdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			  void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

static int srdma_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(vmr);
	return ret;
}

static_assert(sizeof(struct ib_uverbs_wc) == SRDMA_UWC_SIZE,
	      "srdma_uwc_ts follows the completion");

/* The smallest slot that holds what @cq's completions carry. */
static size_t srdma_cq_min_slot(const struct srdma_cq *cq)
{
	return cq->timestamps ? SRDMA_UWC_TS_SLOT : SRDMA_UWC_SIZE;
}

/* Map the ring of a CQ the kernel just made. */
static int srdma_cq_map(struct ibv_context *ctx, struct srdma_cq *cq,
			const struct srdma_create_cq_resp *drv)
{
	return srdma_uring_map(ctx, &cq->ring, drv->offset, drv->len,
			       drv->slots, drv->slot_size,
			       srdma_cq_min_slot(cq));
}

static struct ibv_cq *srdma_create_cq(struct ibv_context *ctx, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct srdma_create_cq_resp_all resp;
	struct ibv_create_cq cmd;
	struct srdma_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err_free_cq;
	ret = srdma_cq_map(ctx, cq, &resp.drv);
	if (ret)
		goto err_destroy_cq;
	return &cq->vcq.cq;

err_destroy_cq:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free_cq:
	free(cq);
	errno = ret;
	return NULL;
}

static int srdma_destroy_cq(struct ibv_cq *ibcq)
{
	struct srdma_cq *cq = to_scq(ibcq);
	int ret = ibv_cmd_destroy_cq(ibcq);

	if (ret)
		return ret;
	srdma_uring_unmap(&cq->ring);
	free(cq);
	return 0;
}

/* The kernel writes wc_flags in libibverbs' values, for a plain copy. */
static_assert((int)SRDMA_UWC_GRH == (int)IBV_WC_GRH &&
	      (int)SRDMA_UWC_WITH_IMM == (int)IBV_WC_WITH_IMM &&
	      (int)SRDMA_UWC_WITH_INV == (int)IBV_WC_WITH_INV,
	      "srdma_uwc_flags");

static int srdma_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct srdma_uring *r = &to_scq(ibcq)->ring;
	const struct ib_uverbs_wc *u;
	uint32_t cons, prod;
	int n = 0;

	pthread_spin_lock(&r->lock);
	if (to_scq(ibcq)->lost) {
		pthread_spin_unlock(&r->lock);
		return -1;
	}
	cons = r->hdr->cons;
	prod = srdma_load(&r->hdr->prod);
	for (; n < num && cons != prod; n++, cons++) {
		u = srdma_slot(r, cons);
		wc[n].wr_id = u->wr_id;
		wc[n].status = u->status;
		wc[n].opcode = u->opcode;
		wc[n].vendor_err = u->vendor_err;
		wc[n].byte_len = u->byte_len;
		wc[n].imm_data = u->ex.imm_data;
		wc[n].qp_num = u->qp_num;
		wc[n].src_qp = u->src_qp;
		wc[n].wc_flags = u->wc_flags;
		wc[n].pkey_index = u->pkey_index;
		wc[n].slid = u->slid;
		wc[n].sl = u->sl;
		wc[n].dlid_path_bits = u->dlid_path_bits;
	}
	if (n)
		srdma_store(&r->hdr->cons, cons);
	pthread_spin_unlock(&r->lock);
	return n;
}

/*
 * The extended CQ (ibv_create_cq_ex): the same ring as srdma_poll_cq()'s,
 * polled one completion at a time. start_poll takes the ring lock and the
 * first completion; next_poll takes the next; end_poll hands the slots
 * taken back to the kernel (cons) and drops the lock. Each completion is
 * copied out of its slot once, and the read_* accessors report the copy.
 * The indices are read as srdma_poll_cq() reads them: cons is ours, prod
 * is loaded with acquire order and every slot index is masked.
 */

/* Take entry cq->next into cq->cur; ENOENT if the kernel has not made it. */
static int srdma_cq_take(struct srdma_cq *cq)
{
	struct srdma_uring *r = &cq->ring;
	char *slot;

	if (cq->next == cq->prod) {
		cq->prod = srdma_load(&r->hdr->prod);
		if (cq->next == cq->prod)
			return ENOENT;
	}
	slot = srdma_slot(r, cq->next);
	memcpy(&cq->cur, slot, sizeof(cq->cur));
	if (cq->timestamps)
		memcpy(&cq->cur_ts, slot + SRDMA_UWC_SIZE, sizeof(cq->cur_ts));
	cq->next++;
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	cq->vcq.cq_ex.status = cq->cur.status;
	return 0;
}

static int srdma_start_poll(struct ibv_cq_ex *ibcq,
			    struct ibv_poll_cq_attr *attr)
{
	struct srdma_cq *cq = to_scq_ex(ibcq);
	struct srdma_uring *r = &cq->ring;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&r->lock);
	if (cq->lost) {
		pthread_spin_unlock(&r->lock);
		return EIO;
	}
	cq->next = r->hdr->cons;
	cq->prod = cq->next;
	if (srdma_cq_take(cq)) {
		/*
		 * Empty: the caller should not call end_poll, and if it
		 * does anyway (pyverbs does), end_poll does nothing.
		 */
		pthread_spin_unlock(&r->lock);
		return ENOENT;
	}
	__atomic_store_n(&cq->poller, &srdma_thread_tag, __ATOMIC_RELAXED);
	return 0;
}

static int srdma_next_poll(struct ibv_cq_ex *ibcq)
{
	return srdma_cq_take(to_scq_ex(ibcq));
}

static void srdma_end_poll(struct ibv_cq_ex *ibcq)
{
	struct srdma_cq *cq = to_scq_ex(ibcq);
	struct srdma_uring *r = &cq->ring;

	/* Racy only for a caller that breaks the rules anyway. */
	if (!__atomic_load_n(&cq->poller, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&cq->poller, NULL, __ATOMIC_RELAXED);
	srdma_store(&r->hdr->cons, cq->next);
	pthread_spin_unlock(&r->lock);
}

/*
 * ibv_resize_cq(), for both kinds of CQ. Under the ring lock, so that no
 * poll runs meanwhile: the kernel moves the completions not yet consumed
 * into a new ring, with their indices, and the old ring is swapped for the
 * new one. Refused with EINVAL while this thread has a start_poll ...
 * end_poll batch open on the CQ (the batch holds the lock: this would
 * never return); another thread's batch is waited for, and the resize
 * happens between batches. The kernel says EINVAL for
 * 0, more than max_cqe, or fewer entries than the completions not polled.
 */
static int srdma_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct srdma_resize_cq_resp_all resp;
	struct srdma_cq *cq = to_scq(ibcq);
	struct srdma_uring *r = &cq->ring;
	struct ibv_resize_cq cmd;
	struct srdma_uring nr;
	int ret;

	/* Only this thread stores this address: no stale match. */
	if (__atomic_load_n(&cq->poller, __ATOMIC_RELAXED) == &srdma_thread_tag)
		return EINVAL;
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	pthread_spin_lock(&r->lock);
	if (cq->lost) {
		ret = EIO;
		goto out_unlock;
	}
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto out_unlock;
	ret = srdma_uring_mmap(ibcq->context, &nr, resp.drv.offset,
			       resp.drv.len, resp.drv.slots,
			       resp.drv.slot_size, srdma_cq_min_slot(cq));
	if (ret) {
		cq->lost = true;
		goto out_unlock;
	}
	munmap(r->hdr, r->len);
	r->hdr = nr.hdr;
	r->slots = nr.slots;
	r->len = nr.len;
	r->mask = nr.mask;
	r->slot_size = nr.slot_size;
out_unlock:
	pthread_spin_unlock(&r->lock);
	return ret;
}

static enum ibv_wc_opcode srdma_wc_read_opcode(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.opcode;
}

static uint32_t srdma_wc_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.vendor_err;
}

static uint32_t srdma_wc_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.byte_len;
}

/* Also the invalidated rkey (ibv_wc_read_invalidated_rkey()): a union. */
static __be32 srdma_wc_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return (__be32)to_scq_ex(ibcq)->cur.ex.imm_data;
}

static uint32_t srdma_wc_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.qp_num;
}

static uint32_t srdma_wc_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.src_qp;
}

static unsigned int srdma_wc_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.wc_flags;
}

static uint32_t srdma_wc_read_slid(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.slid;
}

static uint8_t srdma_wc_read_sl(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.sl;
}

static uint8_t srdma_wc_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur.dlid_path_bits;
}

static uint64_t srdma_wc_read_completion_ts(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur_ts.completion_ns;
}

static uint64_t srdma_wc_read_completion_wallclock_ns(struct ibv_cq_ex *ibcq)
{
	return to_scq_ex(ibcq)->cur_ts.wallclock_ns;
}

#define SRDMA_WC_EX_TIMESTAMPS	(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
				 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

/*
 * The completion fields srdma reports: those of struct ibv_wc, and the
 * kernel's timestamps where it takes them (SRDMA_CAP_CQ_TIMESTAMP). No
 * CVLAN, flow tag or tag matching.
 */
static uint64_t srdma_wc_ex_flags(struct ibv_context *ctx)
{
	return IBV_WC_STANDARD_FLAGS |
	       (to_sctx(ctx)->caps & SRDMA_CAP_CQ_TIMESTAMP ?
		SRDMA_WC_EX_TIMESTAMPS : 0);
}

/*
 * ibv_query_rt_values_ex(): the device's clock (IBV_VALUES_MASK_RAW_CLOCK)
 * is the kernel's CLOCK_MONOTONIC, which stamps completions, in ticks of
 * a nanosecond; like other providers, srdma reports ticks in tv_nsec and
 * 0 in tv_sec. comp_mask comes back with what was filled in.
 */
static int srdma_query_rt_values(struct ibv_context *ctx,
				 struct ibv_values_ex *values)
{
	struct timespec now;

	/* 64-bit ticks need a 64-bit tv_nsec. */
	if (!(to_sctx(ctx)->caps & SRDMA_CAP_CQ_TIMESTAMP) ||
	    sizeof(values->raw_clock.tv_nsec) < sizeof(int64_t))
		return EOPNOTSUPP;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		if (clock_gettime(CLOCK_MONOTONIC, &now))
			return errno;
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (int64_t)now.tv_sec * 1000000000 +
					    now.tv_nsec;
	}
	values->comp_mask &= IBV_VALUES_MASK_RAW_CLOCK;
	return 0;
}

/*
 * ibv_create_cq_ex(): libibverbs has already refused wc_flags it does not
 * know (EOPNOTSUPP), and initialises the ibv_cq part afterwards. Refused
 * here with EOPNOTSUPP: wc_flags srdma does not report, comp_mask bits but
 * IBV_CQ_INIT_ATTR_MASK_FLAGS and _PD, and flags but
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED (a promise srdma does not need). A
 * parent domain (IBV_CQ_INIT_ATTR_MASK_PD) must be one of this context
 * (EINVAL otherwise); it changes nothing (see struct srdma_pd). Only the
 * accessors of the fields asked for are set, as the API
 * says reading another field is undefined.
 */
static struct ibv_cq_ex *srdma_create_cq_ex(struct ibv_context *ctx,
					    struct ibv_cq_init_attr_ex *attr)
{
	struct srdma_create_cq_ex_resp_all resp;
	struct ibv_create_cq_ex cmd;
	struct ibv_cq_ex *ex;
	struct srdma_cq *cq;
	int ret;

	struct ibv_cq_init_attr_ex a = *attr;

	if ((attr->wc_flags & ~srdma_wc_ex_flags(ctx)) ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					   IBV_CQ_INIT_ATTR_MASK_PD)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || attr->parent_domain->context != ctx ||
	     !to_spd(attr->parent_domain)->protection)) {
		errno = EINVAL;
		return NULL;
	}
	a.comp_mask &= ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = NULL;
	/* libibverbs asks the kernel for timestamps for this flag only. */
	if (attr->wc_flags & SRDMA_WC_EX_TIMESTAMPS)
		a.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->timestamps = attr->wc_flags & SRDMA_WC_EX_TIMESTAMPS;
	memset(&resp, 0, sizeof(resp));
	memset(&cmd, 0, sizeof(cmd));
	ret = ibv_cmd_create_cq_ex(ctx, &a, &cq->vcq, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp), 0);
	if (ret)
		goto err_free_cq;
	ret = srdma_cq_map(ctx, cq, &resp.drv);
	if (ret)
		goto err_destroy_cq;

	ex = &cq->vcq.cq_ex;
	ex->start_poll = srdma_start_poll;
	ex->next_poll = srdma_next_poll;
	ex->end_poll = srdma_end_poll;
	ex->read_opcode = srdma_wc_read_opcode;
	ex->read_vendor_err = srdma_wc_read_vendor_err;
	ex->read_wc_flags = srdma_wc_read_wc_flags;
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ex->read_byte_len = srdma_wc_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		ex->read_imm_data = srdma_wc_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ex->read_qp_num = srdma_wc_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ex->read_src_qp = srdma_wc_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		ex->read_slid = srdma_wc_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		ex->read_sl = srdma_wc_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ex->read_dlid_path_bits = srdma_wc_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		ex->read_completion_ts = srdma_wc_read_completion_ts;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		ex->read_completion_wallclock_ns =
			srdma_wc_read_completion_wallclock_ns;
	return ex;

err_destroy_cq:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free_cq:
	free(cq);
	errno = ret;
	return NULL;
}

/*
 * Map the rings of a QP the kernel just made: the SQ, a slot of which
 * holds the SGEs or @max_inline bytes of inline data (the caps the kernel
 * wrote back), and the RQ unless the QP takes its receives from an SRQ
 * (@has_srq), which the kernel tells with an RQ of no slots.
 */
static int srdma_qp_map(struct ibv_context *ctx, struct srdma_qp *qp,
			const struct srdma_create_qp_resp *drv,
			uint32_t max_inline, bool has_srq)
{
	size_t data = (size_t)drv->sq.max_sge * sizeof(struct srdma_usge);
	int ret;

	if (data < max_inline)
		data = max_inline;
	ret = srdma_uring_map(ctx, &qp->sq, drv->sq.offset, drv->sq.len,
			      drv->sq.slots, drv->sq.slot_size,
			      sizeof(struct srdma_usend_wqe) + data);
	if (ret)
		return ret;
	qp->sq.max_wr = drv->sq.max_wr;
	qp->sq.max_sge = drv->sq.max_sge;
	qp->sq.max_len = srdma_max_msg(SRDMA_DEFAULT_MTU);
	qp->max_inline = max_inline;
	if (has_srq) {
		if (!drv->rq.slots)
			return 0;
		srdma_uring_unmap(&qp->sq);
		return EPROTO;
	}
	ret = srdma_uring_map(ctx, &qp->rq, drv->rq.offset, drv->rq.len,
			      drv->rq.slots, drv->rq.slot_size,
			      sizeof(struct srdma_urecv_wqe) +
			      drv->rq.max_sge * sizeof(struct srdma_usge));
	if (ret) {
		srdma_uring_unmap(&qp->sq);
		return ret;
	}
	qp->rq.max_wr = drv->rq.max_wr;
	qp->rq.max_sge = drv->rq.max_sge;
	qp->rq.max_len = SRDMA_MAX_MSG;
	return 0;
}

static struct ibv_qp *srdma_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct srdma_create_qp_resp_all resp;
	struct ibv_create_qp cmd;
	struct srdma_qp *qp;
	int ret;

	if (attr->qp_type == IBV_QPT_XRC_SEND &&
	    !(to_sctx(pd->context)->caps & SRDMA_CAP_XRC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free_qp;
	ret = srdma_qp_map(pd->context, qp, &resp.drv,
			   attr->cap.max_inline_data,
			   attr->srq != NULL || attr->qp_type == IBV_QPT_XRC_SEND);
	if (ret)
		goto err_destroy_qp;
	return &qp->vqp.qp;

err_destroy_qp:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free_qp:
	free(qp);
	errno = ret;
	return NULL;
}

/*
 * The kernel resolves the address vector (RoCEv2 GIDs to IP addresses)
 * and numbers the AH; UD send entries carry that number.
 */
static struct ibv_ah *srdma_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct srdma_create_ah_resp_all resp;
	struct srdma_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_ah(pd, &ah->ibah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_num = resp.drv.ah_num;
	return &ah->ibah;
}

static int srdma_destroy_ah(struct ibv_ah *ibah)
{
	int ret = ibv_cmd_destroy_ah(ibah);

	if (!ret)
		free(to_sah(ibah));
	return ret;
}

/*
 * Copy an SGE list into a ring entry; the lengths must sum to at most
 * @max_len (srdma_uring.max_len).
 */
static int srdma_put_sges(struct srdma_usge *dst, const struct ibv_sge *src,
			  int num_sge, uint64_t max_len)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < num_sge; i++) {
		total += src[i].length;
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
	return total > max_len ? EINVAL : 0;
}

/*
 * Fill the SGEs of entry @prod of ring @r (at @sge_off in the slot) and
 * return the slot, or NULL with *err: EINVAL for a bad SGE list, ENOMEM
 * if the ring is full.
 */
static void *srdma_ring_fill(struct srdma_uring *r, uint32_t prod,
			     const struct ibv_sge *sg, int num_sge,
			     size_t sge_off, int *err)
{
	char *slot;

	if (num_sge < 0 || (uint32_t)num_sge > r->max_sge) {
		*err = EINVAL;
		return NULL;
	}
	if (prod - srdma_load(&r->hdr->cons) >= r->max_wr) {
		*err = ENOMEM;
		return NULL;
	}
	slot = srdma_slot(r, prod);
	*err = srdma_put_sges((struct srdma_usge *)(slot + sge_off), sg,
			      num_sge, r->max_len);
	return *err ? NULL : slot;
}

/*
 * Make the ring's entries up to @prod visible to the kernel: store prod,
 * then a full fence, so that the caller's next load of a flag the kernel
 * sets (no_doorbell, SRDMA_RING_F_QP_ERR) is ordered after it. The kernel
 * does the mirror image: it stores the flag, fences, then reads prod. One
 * of the two sides always sees the other's store.
 */
static void srdma_ring_publish(struct srdma_uring *r, uint32_t prod)
{
	srdma_store(&r->hdr->prod, prod);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The send flags the kernel takes: no checksum offload. */
#define SRDMA_SEND_FLAGS	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
				 IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/* The two atomic operations: compare and swap, fetch and add. */
static bool srdma_wr_is_atomic(uint32_t opcode)
{
	return opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* An atomic's result goes to exactly one SGE of 8 bytes. */
static bool srdma_atomic_sges_ok(const struct ibv_sge *sg, int num_sge)
{
	return num_sge == 1 && sg[0].length == sizeof(uint64_t);
}

/* Does a UD send to @ah and @remote_qpn on @qp name a valid destination? */
static bool srdma_ud_dest_ok(const struct ibv_qp *qp, const struct ibv_ah *ah,
			     uint32_t remote_qpn)
{
	return ah && srdma_same_pd(ah->pd, qp->pd) && remote_qpn <= SRDMA_QPN_MAX;
}

/* The operations each QP type can post, as IBV_QP_EX_WITH_* bits. */
static uint64_t srdma_send_ops(enum ibv_qp_type type)
{
	const uint64_t send = IBV_QP_EX_WITH_SEND |
			      IBV_QP_EX_WITH_SEND_WITH_IMM;
	const uint64_t write = IBV_QP_EX_WITH_RDMA_WRITE |
			       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;

	switch (type) {
	case IBV_QPT_RC:
		return send | write | IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
		       IBV_QP_EX_WITH_SEND_WITH_INV |
		       IBV_QP_EX_WITH_ATOMIC_WRITE;
	case IBV_QPT_XRC_SEND:	/* RC's but ATOMIC WRITE and binds */
		return send | write | IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_LOCAL_INV |
		       IBV_QP_EX_WITH_SEND_WITH_INV;
	case IBV_QPT_UC:
		return send | write;
	case IBV_QPT_UD:
		return send;
	default:
		return 0;
	}
}

/* The IBV_QP_EX_WITH_* bit of a work request opcode srdma knows, or 0. */
static uint64_t srdma_wr_op_bit(enum ibv_wr_opcode opcode)
{
	switch (opcode) {
	case IBV_WR_SEND:
		return IBV_QP_EX_WITH_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return IBV_QP_EX_WITH_SEND_WITH_IMM;
	case IBV_WR_RDMA_WRITE:
		return IBV_QP_EX_WITH_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	case IBV_WR_RDMA_READ:
		return IBV_QP_EX_WITH_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	case IBV_WR_LOCAL_INV:
		return IBV_QP_EX_WITH_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_QP_EX_WITH_BIND_MW;
	case IBV_WR_SEND_WITH_INV:
		return IBV_QP_EX_WITH_SEND_WITH_INV;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_QP_EX_WITH_ATOMIC_WRITE;
	default:
		return 0;
	}
}

/* Work requests that only change a key: no SGEs, no inline data. */
static bool srdma_wr_is_local(uint32_t opcode)
{
	return opcode == IBV_WR_LOCAL_INV || opcode == IBV_WR_BIND_MW;
}

/*
 * Work requests that take neither SGEs nor inline data: the local ones,
 * and ATOMIC WRITE, whose 8 bytes are in the entry.
 */
static bool srdma_wr_no_data(uint32_t opcode)
{
	return srdma_wr_is_local(opcode) || opcode == IBV_WR_ATOMIC_WRITE;
}

/* The rights a window takes: remote ones; local write is ignored. */
#define SRDMA_MW_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/*
 * Can window @mw of @type be bound on @qp under key @rkey as @info says?
 * EINVAL for a window of another type or PD, a key of another window
 * (the kernel finds the window by the key's index), rights the kernel
 * does not take (no zero-based windows), a window of 4 GiB or more from a
 * kernel without SRDMA_CAP_BIG_MW, or a range without an MR of the QP's
 * PD (a type 2 window always needs one).
 * What the MR allows is for the kernel to check when the bind runs: a
 * bind it refuses completes with IBV_WC_MW_BIND_ERR.
 */
static int srdma_bind_check(const struct ibv_qp *qp, const struct ibv_mw *mw,
			    enum ibv_mw_type type, uint32_t rkey,
			    const struct ibv_mw_bind_info *info)
{
	if (!mw || mw->type != type || !srdma_same_pd(mw->pd, qp->pd) ||
	    (rkey ^ mw->rkey) >> 8 ||
	    (info->length > UINT32_MAX &&
	     !(to_sctx(qp->context)->caps & SRDMA_CAP_BIG_MW)))
		return EINVAL;
	if (info->mw_access_flags & ~SRDMA_MW_ACCESS)
		return EINVAL;
	if ((info->length || type == IBV_MW_TYPE_2) &&
	    (!info->mr || !srdma_same_pd(info->mr->pd, qp->pd)))
		return EINVAL;
	return 0;
}

/* Fill send ring entry @u as a bind of a window to @info, key @rkey. */
static void srdma_put_bind(struct srdma_usend_wqe *u, uint32_t rkey,
			   const struct ibv_mw_bind_info *info)
{
	u->opcode = IBV_WR_BIND_MW;
	u->num_sge = 0;
	u->inline_len = 0;
	u->imm_data = 0;
	u->rkey = rkey;
	u->remote_addr = info->addr;
	u->bind.length = info->length;
	u->bind.mr_lkey = info->mr ? info->mr->lkey : 0;
	u->bind.access = info->mw_access_flags;
}

/*
 * Can the kernel take @wr on @qp? EINVAL for an opcode the QP type does
 * not do (UD only SENDs, UC no READs or atomics; binds and invalidations
 * RC only), a flag the kernel does not take, inline data on a READ,
 * atomic or local operation, an atomic without one 8-byte SGE, a bind
 * srdma_bind_check() refuses, or a UD send without an AH of the QP's PD
 * or with a remote QPN over 24 bits: the kernel would refuse the ring
 * entry and move the QP to ERR. ATOMIC WRITE is ibv_wr_atomic_write()'s
 * alone: ibv_send_wr has no place for its 8 bytes.
 */
static int srdma_send_wr_check(const struct ibv_qp *qp,
			       const struct ibv_send_wr *wr)
{
	uint64_t bit = srdma_wr_op_bit(wr->opcode);

	if (!bit || !(srdma_send_ops(qp->qp_type) & bit) ||
	    wr->opcode == IBV_WR_ATOMIC_WRITE)
		return EINVAL;
	if (qp->qp_type == IBV_QPT_UD &&
	    !srdma_ud_dest_ok(qp, wr->wr.ud.ah, wr->wr.ud.remote_qpn))
		return EINVAL;
	if (qp->qp_type == IBV_QPT_XRC_SEND &&
	    wr->qp_type.xrc.remote_srqn > SRDMA_QPN_MAX)
		return EINVAL;
	if (srdma_wr_is_atomic(wr->opcode) &&
	    !srdma_atomic_sges_ok(wr->sg_list, wr->num_sge))
		return EINVAL;
	if (wr->send_flags & ~SRDMA_SEND_FLAGS)
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    (wr->opcode == IBV_WR_RDMA_READ || srdma_wr_is_atomic(wr->opcode) ||
	     srdma_wr_is_local(wr->opcode)))
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW)
		return srdma_bind_check(qp, wr->bind_mw.mw, IBV_MW_TYPE_2,
					wr->bind_mw.rkey,
					&wr->bind_mw.bind_info);
	return 0;
}

/*
 * Copy the buffers of an inline work request into @data, the SGE area of
 * a send ring entry, and their total length into *@len: EINVAL if it is
 * over @max (the QP's max_inline_data).
 */
static int srdma_put_inline(void *data, uint32_t max,
			    const struct ibv_data_buf *bufs, size_t num,
			    uint32_t *len)
{
	size_t i, total = 0;

	for (i = 0; i < num; i++) {
		if (bufs[i].length > max - total)
			return EINVAL;
		memcpy((char *)data + total, bufs[i].addr, bufs[i].length);
		total += bufs[i].length;
	}
	*len = (uint32_t)total;
	return 0;
}

/*
 * The inline data of @wr into send ring entry @prod: the SGEs name plain
 * buffers, no lkey is looked at. The slot, or NULL with *@err: EINVAL for
 * a bad list or too much data, ENOMEM if the ring is full.
 */
static struct srdma_usend_wqe *srdma_sq_fill_inline(struct srdma_qp *qp,
						    uint32_t prod,
						    const struct ibv_send_wr *wr,
						    int *err)
{
	struct srdma_uring *r = &qp->sq;
	struct srdma_usend_wqe *u;
	uint32_t n, total = 0;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > r->max_sge) {
		*err = EINVAL;
		return NULL;
	}
	if (prod - srdma_load(&r->hdr->cons) >= r->max_wr) {
		*err = ENOMEM;
		return NULL;
	}
	u = srdma_slot(r, prod);
	for (i = 0; i < wr->num_sge; i++) {
		n = wr->sg_list[i].length;
		if (n > qp->max_inline - total) {
			*err = EINVAL;
			return NULL;
		}
		memcpy((char *)u->sge + total,
		       (const void *)(uintptr_t)wr->sg_list[i].addr, n);
		total += n;
	}
	u->inline_len = total;
	*err = 0;
	return u;
}

/*
 * Write @wr into send ring entry @prod. 0, or EINVAL for a work request
 * the kernel cannot take, ENOMEM if the ring is full (see
 * srdma_ring_fill()).
 */
static int srdma_sq_put(struct srdma_qp *sqp, uint32_t prod,
			const struct ibv_send_wr *wr)
{
	const struct ibv_qp *qp = &sqp->vqp.qp;
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	struct srdma_usend_wqe *u;
	int ret;

	ret = srdma_send_wr_check(qp, wr);
	if (ret)
		return ret;
	if (inl) {
		u = srdma_sq_fill_inline(sqp, prod, wr, &ret);
	} else if (srdma_wr_is_local(wr->opcode)) {
		u = srdma_ring_fill(&sqp->sq, prod, NULL, 0,
				    offsetof(struct srdma_usend_wqe, sge), &ret);
		if (u)
			u->inline_len = 0;
	} else {
		u = srdma_ring_fill(&sqp->sq, prod, wr->sg_list, wr->num_sge,
				    offsetof(struct srdma_usend_wqe, sge), &ret);
		if (u)
			u->inline_len = 0;
	}
	if (!u)
		return ret;
	u->wr_id = wr->wr_id;
	u->opcode = wr->opcode;
	u->send_flags = wr->send_flags;
	/* SEND with Invalidate, LOCAL_INV: invalidate_rkey, the same bits. */
	u->imm_data = wr->imm_data;
	u->num_sge = inl || srdma_wr_is_local(wr->opcode) ? 0 : wr->num_sge;
	u->xrc_srqn = qp->qp_type == IBV_QPT_XRC_SEND ?
		      wr->qp_type.xrc.remote_srqn : 0;
	u->reserved = 0;
	u->compare_add = 0;
	u->swap = 0;
	if (wr->opcode == IBV_WR_BIND_MW) {
		srdma_put_bind(u, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
	} else if (qp->qp_type == IBV_QPT_UD) {
		u->ud.ah = to_sah(wr->wr.ud.ah)->ah_num;
		u->ud.remote_qpn = wr->wr.ud.remote_qpn;
		u->remote_qkey = wr->wr.ud.remote_qkey;
	} else if (srdma_wr_is_atomic(wr->opcode)) {
		u->remote_addr = wr->wr.atomic.remote_addr;
		u->rkey = wr->wr.atomic.rkey;
		u->compare_add = wr->wr.atomic.compare_add;
		u->swap = wr->wr.atomic.swap;
	} else {
		u->remote_addr = wr->wr.rdma.remote_addr;
		u->rkey = wr->wr.rdma.rkey;
	}
	return 0;
}

/* Write @wr into receive ring entry @prod; 0, EINVAL or ENOMEM. */
static int srdma_rq_put(struct srdma_uring *r, uint32_t prod,
			const struct ibv_recv_wr *wr)
{
	struct srdma_urecv_wqe *u;
	int ret;

	u = srdma_ring_fill(r, prod, wr->sg_list, wr->num_sge,
			    offsetof(struct srdma_urecv_wqe, sge), &ret);
	if (!u)
		return ret;
	u->wr_id = wr->wr_id;
	u->num_sge = wr->num_sge;
	u->reserved = 0;
	return 0;
}

/*
 * Send a uverbs command of the write interface, @cmd (header first, @len
 * bytes), as a plain write() to @ibctx's command file. libibverbs sends
 * the same commands through ioctl (UVERBS_METHOD_INVOKE_WRITE), whose
 * attribute parsing cost 2-2.5 us more per command in the test guest
 * (2-byte ib_write_lat 14.5-14.9 against 12.0-12.4 us; performance.rst).
 * The kernel refuses write() (EACCES, ib_safe_file_access(), with a line
 * in its log once per boot) from a process whose credentials are not
 * those that opened the file: after setuid() or setgroups(), in a forked
 * child (a copy of the credentials), for an imported context. Such a
 * context uses ioctl from then on; a child's and an imported context do
 * from the start. True when the command went, with *@ret its result (0 or
 * an errno); false when the caller must send it through libibverbs.
 */
static bool srdma_cmd_write(struct ibv_context *ibctx, void *cmd, size_t len,
			    int *ret)
{
	struct srdma_context *ctx = to_sctx(ibctx);
	ssize_t n;

	if (__atomic_load_n(&ctx->cmd_ioctl, __ATOMIC_RELAXED) ||
	    ctx->fork_gen != __atomic_load_n(&srdma_fork_gen,
					     __ATOMIC_RELAXED))
		return false;
	n = write(ibctx->cmd_fd, cmd, len);
	if (n == (ssize_t)len) {
		*ret = 0;
		return true;
	}
	/* uverbs takes a command whole or fails it: a short count is EIO. */
	if (n >= 0 || errno != EACCES) {
		*ret = n >= 0 ? EIO : errno;
		return true;
	}
	__atomic_store_n(&ctx->cmd_ioctl, true, __ATOMIC_RELAXED);
	return false;
}

/*
 * Ring @ibqp's send doorbell: uverbs' post_send command with no work
 * requests, by srdma_cmd_write(). 0 or an errno.
 */
static int srdma_sq_doorbell(struct ibv_qp *ibqp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} db;
	struct ib_uverbs_post_send_resp resp;
	struct ibv_send_wr *dummy;
	int ret;

	memset(&db, 0, sizeof(db));
	db.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	db.hdr.in_words = sizeof(db) / 4;
	db.hdr.out_words = sizeof(resp) / 4;
	db.cmd.response = (uintptr_t)&resp;
	db.cmd.qp_handle = ibqp->handle;
	db.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	if (srdma_cmd_write(ibqp->context, &db, sizeof(db), &ret))
		return ret;
	return ibv_cmd_post_send(ibqp, NULL, &dummy);
}

/*
 * Arm @ibcq for its next completion (@solicited_only: the next solicited
 * one), by srdma_cmd_write(): event-driven applications arm once per
 * event. 0 or an errno.
 */
static int srdma_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_req_notify_cq cmd;
	} rn;
	int ret;

	memset(&rn, 0, sizeof(rn));
	rn.hdr.command = IB_USER_VERBS_CMD_REQ_NOTIFY_CQ;
	rn.hdr.in_words = sizeof(rn) / 4;
	rn.cmd.cq_handle = ibcq->handle;
	rn.cmd.solicited_only = !!solicited_only;
	if (srdma_cmd_write(ibcq->context, &rn, sizeof(rn), &ret))
		return ret;
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

/*
 * Hand SQ entries [@first, @prod) to the kernel: store prod, then ring
 * the doorbell, a post_send command without work requests, unless the
 * kernel will look at the ring anyway. 0, or the doorbell's error. For
 * a QP in a state that cannot post, the kernel took none of them and
 * prod is put back. A doorbell that moved the QP to the error state
 * (an entry the kernel refused, which the checks here should make
 * impossible) may have taken some: prod stays, and what the kernel took
 * is flushed.
 * SQ lock held.
 */
static int srdma_sq_post(struct srdma_uring *r, struct ibv_qp *ibqp,
			 uint32_t first, uint32_t prod)
{
	int ret;

	if (prod == first)
		return 0;
	srdma_ring_publish(r, prod);
	if (__atomic_load_n(&r->hdr->no_doorbell, __ATOMIC_RELAXED))
		return 0;
	ret = srdma_sq_doorbell(ibqp);
	if (ret && !(srdma_load(&r->hdr->flags) & SRDMA_RING_F_QP_ERR))
		srdma_store(&r->hdr->prod, first);
	return ret;
}

/*
 * A QP in RESET takes no work requests, not even receives (IBTA vol. 1
 * C10-97.2.1): refused at once with EINVAL. libibverbs keeps ibqp->state
 * from the caller's own modify_qp; the kernel never moves a QP to RESET
 * by itself.
 */
static bool srdma_qp_in_reset(const struct ibv_qp *ibqp)
{
	return ibqp->state == IBV_QPS_RESET;
}

static int srdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct srdma_uring *r = &to_sqp(ibqp)->sq;
	struct ibv_send_wr *head = wr;
	uint32_t prod, first;
	int ret = 0, err;

	/* An XRC receive QP (or one opened) has no SQ. */
	if (srdma_qp_in_reset(ibqp) || !r->hdr) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&r->lock);
	first = prod = r->hdr->prod;
	for (; wr; wr = wr->next) {
		ret = srdma_sq_put(to_sqp(ibqp), prod, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		prod++;
	}
	err = srdma_sq_post(r, ibqp, first, prod);
	if (err) {
		ret = err;
		*bad_wr = head;
	}
	pthread_spin_unlock(&r->lock);
	return ret;
}

/*
 * ibv_bind_mw(), for a type 1 window (libibverbs checked the type and the
 * MR's PD): a BIND_MW entry on the SQ with the next key variant, which
 * becomes the window's key once the entry is posted. The bind itself
 * happens when the kernel reaches the entry, in order with the work
 * requests before it; its completion says whether it did.
 */
static int srdma_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
			 struct ibv_mw_bind *mw_bind)
{
	struct srdma_uring *r = &to_sqp(ibqp)->sq;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct srdma_usend_wqe *u;
	uint32_t prod;
	int ret;

	if (ibqp->qp_type != IBV_QPT_RC || srdma_qp_in_reset(ibqp) ||
	    (mw_bind->send_flags & ~(unsigned int)(IBV_SEND_FENCE |
						   IBV_SEND_SIGNALED |
						   IBV_SEND_SOLICITED)))
		return EINVAL;
	ret = srdma_bind_check(ibqp, mw, IBV_MW_TYPE_1, rkey,
			       &mw_bind->bind_info);
	if (ret)
		return ret;
	pthread_spin_lock(&r->lock);
	prod = r->hdr->prod;
	u = srdma_ring_fill(r, prod, NULL, 0,
			    offsetof(struct srdma_usend_wqe, sge), &ret);
	if (u) {
		u->wr_id = mw_bind->wr_id;
		u->send_flags = mw_bind->send_flags;
		srdma_put_bind(u, rkey, &mw_bind->bind_info);
		ret = srdma_sq_post(r, ibqp, prod, prod + 1);
	}
	if (!ret)
		mw->rkey = rkey;
	pthread_spin_unlock(&r->lock);
	return ret;
}

static struct ibv_mw *srdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int srdma_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (!ret)
		free(mw);
	return ret;
}

static int srdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct srdma_uring *r = &to_sqp(ibqp)->rq;
	struct ibv_recv_wr *dummy, *head = wr;
	uint32_t prod, first;
	int ret = 0, err;

	/*
	 * A QP with an SRQ has no RQ: receives go to the SRQ. Neither has
	 * an XRC QP (its receives go to XRC SRQs).
	 */
	if (srdma_qp_in_reset(ibqp) || ibqp->srq || !r->hdr) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&r->lock);
	first = prod = r->hdr->prod;
	for (; wr; wr = wr->next) {
		ret = srdma_rq_put(r, prod, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		prod++;
	}
	if (prod != first) {
		/*
		 * In the error state the kernel flushes only when asked. It
		 * refuses a ring that held garbage (EINVAL): then none of
		 * these will complete, which the caller must hear.
		 */
		srdma_ring_publish(r, prod);
		if (srdma_load(&r->hdr->flags) & SRDMA_RING_F_QP_ERR) {
			err = ibv_cmd_post_recv(ibqp, NULL, &dummy);
			if (err && !ret) {
				ret = err;
				*bad_wr = head;
			}
		}
	}
	pthread_spin_unlock(&r->lock);
	return ret;
}

/*
 * The ibv_qp_ex posting API on the mapped SQ. wr_start takes the SQ lock;
 * each operation (wr_send, wr_rdma_write, ...) begins a new entry in the
 * ring past prod, from the caller's qp_ex->wr_id and wr_flags; the
 * setters (wr_set_sge, wr_set_sge_list, wr_set_ud_addr) fill in the entry
 * begun last. These calls return nothing, so the first error is kept and
 * the rest of the batch ignored: wr_complete then posts nothing and
 * returns it, as wr_abort would. Otherwise wr_complete hands the batch to
 * the kernel as post_send does (srdma_sq_post()). The checks are
 * post_send's, the kernel's own (srdma_sq_read_entry()), so the kernel
 * never sees an entry it would refuse.
 */

static void srdma_wr_fail(struct srdma_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/* The entry built last, if atomic, must have its one 8-byte SGE. */
static void srdma_wr_check_atomic(struct srdma_qp *qp)
{
	const struct srdma_usend_wqe *u = qp->wr_cur;

	if (u && srdma_wr_is_atomic(u->opcode) &&
	    (u->num_sge != 1 || u->sge[0].length != sizeof(uint64_t)))
		srdma_wr_fail(qp, EINVAL);
}

/* Begin entry wr_prod as @opcode; NULL if the batch has failed. */
static struct srdma_usend_wqe *srdma_wr_begin(struct ibv_qp_ex *ibqp,
					      uint32_t opcode)
{
	struct srdma_qp *qp = to_sqp_ex(ibqp);
	struct srdma_uring *r = &qp->sq;
	struct srdma_usend_wqe *u;

	srdma_wr_check_atomic(qp);
	if (qp->wr_need_ah)		/* the last UD entry has no AH */
		srdma_wr_fail(qp, EINVAL);
	if ((ibqp->wr_flags & ~SRDMA_SEND_FLAGS) ||
	    !(srdma_send_ops(qp->vqp.qp.qp_type) &
	      srdma_wr_op_bit((enum ibv_wr_opcode)opcode)))
		srdma_wr_fail(qp, EINVAL);
	else if (qp->wr_prod - srdma_load(&r->hdr->cons) >= r->max_wr)
		srdma_wr_fail(qp, ENOMEM);
	if (qp->wr_err) {
		qp->wr_cur = NULL;
		return NULL;
	}
	u = srdma_slot(r, qp->wr_prod++);
	memset(u, 0, sizeof(*u));
	u->wr_id = ibqp->wr_id;
	u->opcode = opcode;
	/* Inline data only once wr_set_inline_data*() gave some. */
	u->send_flags = ibqp->wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	qp->wr_cur = u;
	qp->wr_need_ah = qp->vqp.qp.qp_type == IBV_QPT_UD;
	return u;
}

static void srdma_wr_start(struct ibv_qp_ex *ibqp)
{
	struct srdma_qp *qp = to_sqp_ex(ibqp);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_first = qp->wr_prod = qp->sq.hdr->prod;
	qp->wr_cur = NULL;
	qp->wr_need_ah = false;
	qp->wr_err = srdma_qp_in_reset(&qp->vqp.qp) ? EINVAL : 0;
}

static int srdma_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct srdma_qp *qp = to_sqp_ex(ibqp);
	int ret;

	srdma_wr_check_atomic(qp);
	if (qp->wr_need_ah)
		srdma_wr_fail(qp, EINVAL);
	ret = qp->wr_err;
	if (!ret)
		ret = srdma_sq_post(&qp->sq, &qp->vqp.qp, qp->wr_first,
				    qp->wr_prod);
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

/* Nothing was stored to prod: the entries written are simply dropped. */
static void srdma_wr_abort(struct ibv_qp_ex *ibqp)
{
	pthread_spin_unlock(&to_sqp_ex(ibqp)->sq.lock);
}

static void srdma_wr_send(struct ibv_qp_ex *ibqp)
{
	srdma_wr_begin(ibqp, IBV_WR_SEND);
}

static void srdma_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	struct srdma_usend_wqe *u = srdma_wr_begin(ibqp, IBV_WR_SEND_WITH_IMM);

	if (u)
		u->imm_data = (uint32_t)imm_data;
}

static void srdma_wr_rdma(struct ibv_qp_ex *ibqp, uint32_t opcode,
			  uint32_t rkey, uint64_t remote_addr, __be32 imm_data)
{
	struct srdma_usend_wqe *u = srdma_wr_begin(ibqp, opcode);

	if (!u)
		return;
	u->remote_addr = remote_addr;
	u->rkey = rkey;
	u->imm_data = (uint32_t)imm_data;
}

static void srdma_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				uint64_t remote_addr)
{
	srdma_wr_rdma(ibqp, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void srdma_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	srdma_wr_rdma(ibqp, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
		      imm_data);
}

static void srdma_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			       uint64_t remote_addr)
{
	srdma_wr_rdma(ibqp, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void srdma_wr_atomic(struct ibv_qp_ex *ibqp, uint32_t opcode,
			    uint32_t rkey, uint64_t remote_addr,
			    uint64_t compare_add, uint64_t swap)
{
	struct srdma_usend_wqe *u = srdma_wr_begin(ibqp, opcode);

	if (!u)
		return;
	u->remote_addr = remote_addr;
	u->rkey = rkey;
	u->compare_add = compare_add;
	u->swap = swap;
}

static void srdma_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	srdma_wr_atomic(ibqp, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			compare, swap);
}

static void srdma_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	srdma_wr_atomic(ibqp, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
			add, 0);
}

/*
 * The 8 bytes at @data go into the entry now, as they are: the buffer
 * need not outlive the call. The remote address must be 8-byte aligned,
 * which the responder checks (IBV_WC_REM_INV_REQ_ERR otherwise).
 */
static void srdma_wr_atomic_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				  uint64_t remote_addr, const void *data)
{
	struct srdma_usend_wqe *u = srdma_wr_begin(ibqp, IBV_WR_ATOMIC_WRITE);

	if (!u)
		return;
	u->remote_addr = remote_addr;
	u->rkey = rkey;
	memcpy(&u->compare_add, data, sizeof(u->compare_add));
}

static void srdma_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t rkey)
{
	struct srdma_usend_wqe *u = srdma_wr_begin(ibqp, IBV_WR_LOCAL_INV);

	if (u)
		u->imm_data = rkey;
}

static void srdma_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t rkey)
{
	struct srdma_usend_wqe *u = srdma_wr_begin(ibqp, IBV_WR_SEND_WITH_INV);

	if (u)
		u->imm_data = rkey;
}

static void srdma_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *info)
{
	struct srdma_qp *qp = to_sqp_ex(ibqp);
	struct srdma_usend_wqe *u;
	int ret;

	ret = srdma_bind_check(&qp->vqp.qp, mw, IBV_MW_TYPE_2, rkey, info);
	if (ret) {
		srdma_wr_fail(qp, ret);
		return;
	}
	u = srdma_wr_begin(ibqp, IBV_WR_BIND_MW);
	if (u)
		srdma_put_bind(u, rkey, info);
}

static void srdma_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct srdma_qp *qp = to_sqp_ex(ibqp);
	struct srdma_usend_wqe *u = qp->wr_cur;

	if (!u || qp->vqp.qp.qp_type != IBV_QPT_UD ||
	    !srdma_ud_dest_ok(&qp->vqp.qp, ah, remote_qpn)) {
		srdma_wr_fail(qp, EINVAL);
		return;
	}
	u->ud.ah = to_sah(ah)->ah_num;
	u->ud.remote_qpn = remote_qpn;
	u->remote_qkey = remote_qkey;
	qp->wr_need_ah = false;
}

/* The XRC SRQ the entry being built is for (XRC send QPs). */
static void srdma_wr_set_xrc_srqn(struct ibv_qp_ex *ibqp,
				  uint32_t remote_srqn)
{
	struct srdma_qp *qp = to_sqp_ex(ibqp);

	if (!qp->wr_cur)
		return;
	if (remote_srqn > SRDMA_QPN_MAX)
		srdma_wr_fail(qp, EINVAL);
	else
		qp->wr_cur->xrc_srqn = remote_srqn;
}

static void srdma_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct srdma_qp *qp = to_sqp_ex(ibqp);
	struct srdma_usend_wqe *u = qp->wr_cur;
	int ret;

	if (!u || num_sge > qp->sq.max_sge || srdma_wr_no_data(u->opcode)) {
		srdma_wr_fail(qp, EINVAL);
		return;
	}
	ret = srdma_put_sges(u->sge, sg_list, (int)num_sge, qp->sq.max_len);
	if (ret) {
		srdma_wr_fail(qp, ret);
		return;
	}
	u->num_sge = num_sge;
	u->inline_len = 0;
	u->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void srdma_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	srdma_wr_set_sge_list(ibqp, 1, &sge);
}

/*
 * The data of the entry begun last, copied into the ring now: the buffers
 * need not outlive the call. EINVAL (for the batch) on a READ or over the
 * QP's max_inline_data.
 */
static void srdma_wr_set_inline_data_list(struct ibv_qp_ex *ibqp,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct srdma_qp *qp = to_sqp_ex(ibqp);
	struct srdma_usend_wqe *u = qp->wr_cur;
	uint32_t len;
	int ret;

	if (!u || u->opcode == IBV_WR_RDMA_READ ||
	    srdma_wr_is_atomic(u->opcode) || srdma_wr_no_data(u->opcode)) {
		srdma_wr_fail(qp, EINVAL);
		return;
	}
	ret = srdma_put_inline(u->sge, qp->max_inline, buf_list, num_buf,
			       &len);
	if (ret) {
		srdma_wr_fail(qp, ret);
		return;
	}
	u->inline_len = len;
	u->num_sge = 0;
	u->send_flags |= IBV_SEND_INLINE;
}

static void srdma_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	srdma_wr_set_inline_data_list(ibqp, 1, &buf);
}

/* Fill in @qp's ibv_qp_ex for the operations in @ops. */
static void srdma_qp_ex_init(struct srdma_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *ex = &qp->vqp.qp_ex;

	qp->vqp.comp_mask |= SRDMA_VERBS_QP_EX;
	ex->wr_start = srdma_wr_start;
	ex->wr_complete = srdma_wr_complete;
	ex->wr_abort = srdma_wr_abort;
	ex->wr_set_ud_addr = srdma_wr_set_ud_addr;
	if (qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND)
		ex->wr_set_xrc_srqn = srdma_wr_set_xrc_srqn;
	ex->wr_set_sge = srdma_wr_set_sge;
	ex->wr_set_sge_list = srdma_wr_set_sge_list;
	ex->wr_set_inline_data = srdma_wr_set_inline_data;
	ex->wr_set_inline_data_list = srdma_wr_set_inline_data_list;
	if (ops & IBV_QP_EX_WITH_SEND)
		ex->wr_send = srdma_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		ex->wr_send_imm = srdma_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		ex->wr_rdma_write = srdma_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		ex->wr_rdma_write_imm = srdma_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		ex->wr_rdma_read = srdma_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		ex->wr_atomic_cmp_swp = srdma_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		ex->wr_atomic_fetch_add = srdma_wr_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		ex->wr_local_inv = srdma_wr_local_inv;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		ex->wr_bind_mw = srdma_wr_bind_mw;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		ex->wr_send_inv = srdma_wr_send_inv;
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		ex->wr_atomic_write = srdma_wr_atomic_write;
}

/* The comp_mask bits create_qp_ex takes, see srdma_create_qp_ex(). */
#define SRDMA_QP_INIT_ATTR_MASK	(IBV_QP_INIT_ATTR_PD |			\
				 IBV_QP_INIT_ATTR_CREATE_FLAGS |	\
				 IBV_QP_INIT_ATTR_MAX_TSO_HEADER |	\
				 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

/*
 * An XRC receive QP (SRDMA_CAP_XRC): of an XRC domain, no PD, no queue
 * and nothing mapped; it only answers the requests for the domain's XRC
 * SRQs. The kernel makes it with no private data.
 */
static struct ibv_qp *srdma_create_xrc_recv(struct ibv_context *ctx,
					    struct ibv_qp_init_attr_ex *attr)
{
	struct srdma_create_qp_resp_all resp;
	struct ibv_qp_init_attr_ex a;
	struct ibv_create_qp cmd;
	struct srdma_qp *qp;
	int ret;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
	    (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	a = *attr;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_qp_ex(ctx, &qp->vqp, &a, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	attr->cap = a.cap;
	return &qp->vqp.qp;
}

/*
 * ibv_create_qp_ex(). libibverbs calls create_qp itself when comp_mask is
 * just IBV_QP_INIT_ATTR_PD. An XRC receive QP has an XRC domain and
 * nothing else (srdma_create_xrc_recv()); for the others, taken here: a
 * PD (required; an XRC send QP's SQ is as an RC QP's), create
 * flags and a TSO header size if they are 0 (srdma has no such feature
 * to turn on), and send_ops_flags naming operations of srdma_send_ops()
 * for the QP type (ATOMIC WRITE if the kernel takes it:
 * SRDMA_CAP_ATOMIC_WRITE), which get the ibv_qp_ex posting API. Anything
 * else is EOPNOTSUPP, a missing PD EINVAL.
 */
static struct ibv_qp *srdma_create_qp_ex(struct ibv_context *ctx,
					 struct ibv_qp_init_attr_ex *attr)
{
	struct srdma_create_qp_resp_all resp;
	struct ibv_qp_init_attr_ex a;
	struct ibv_create_qp cmd;
	struct srdma_qp *qp;
	uint32_t mask = attr->comp_mask;
	int ret;

	if ((attr->qp_type == IBV_QPT_XRC_SEND ||
	     attr->qp_type == IBV_QPT_XRC_RECV) &&
	    !(to_sctx(ctx)->caps & SRDMA_CAP_XRC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return srdma_create_xrc_recv(ctx, attr);
	if (!(mask & IBV_QP_INIT_ATTR_PD)) {
		errno = EINVAL;
		return NULL;
	}
	if ((mask & ~(uint32_t)SRDMA_QP_INIT_ATTR_MASK) ||
	    ((mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) &&
	     attr->max_tso_header) ||
	    ((mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     ((attr->send_ops_flags & ~srdma_send_ops(attr->qp_type)) ||
	      ((attr->send_ops_flags & IBV_QP_EX_WITH_ATOMIC_WRITE) &&
	       !(to_sctx(ctx)->caps & SRDMA_CAP_ATOMIC_WRITE))))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	/* What is left for the kernel: a PD and the QP's caps. */
	a = *attr;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_qp_ex(ctx, &qp->vqp, &a, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free_qp;
	/* An XRC send QP has no RQ, as a QP with an SRQ. */
	ret = srdma_qp_map(ctx, qp, &resp.drv, a.cap.max_inline_data,
			   a.srq != NULL || a.qp_type == IBV_QPT_XRC_SEND);
	if (ret)
		goto err_destroy_qp;
	attr->cap = a.cap;
	if (mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		srdma_qp_ex_init(qp, attr->send_ops_flags);
	return &qp->vqp.qp;

err_destroy_qp:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free_qp:
	free(qp);
	errno = ret;
	return NULL;
}

/*
 * ibv_open_qp(): another handle on an XRC receive QP of a domain this
 * process has opened too; like the QP itself, it has no queue.
 */
static struct ibv_qp *srdma_open_qp(struct ibv_context *ctx,
				    struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_open_qp cmd;
	struct srdma_qp *qp;
	int ret;

	if (!(to_sctx(ctx)->caps & SRDMA_CAP_XRC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = ibv_cmd_open_qp(ctx, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

static int srdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int mask, struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

/*
 * Remove the completions of QP @qpn from @cq, as a QP moved to RESET
 * leaves none behind (the verbs consumers' expectation, which libmlx5
 * meets the same way). Not when a QP is destroyed: after its device went
 * away, libibverbs takes the kernel's EIO for a destroyed CQ as success,
 * so the CQ may already be freed. Slots [cons, prod) hold finished entries
 * the kernel never rewrites while cons stays where it is: sweep them from
 * the newest down, moving each one kept over the ones removed after it,
 * then move cons past the removed ones. Under the ring lock, so no poll
 * (nor an ibv_cq_ex batch) is in progress.
 */
static void srdma_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct srdma_uring *r = &to_scq(ibcq)->ring;
	uint32_t cons, prod, i, freed = 0;
	struct ib_uverbs_wc *u;

	pthread_spin_lock(&r->lock);
	cons = r->hdr->cons;
	prod = srdma_load(&r->hdr->prod);
	if (prod - cons <= r->mask + 1) {
		for (i = prod; i != cons; ) {
			u = srdma_slot(r, --i);
			if (u->qp_num == qpn)
				freed++;
			else if (freed)
				memcpy(srdma_slot(r, i + freed), u,
				       r->slot_size);	/* with any times */
		}
	}
	if (freed)
		srdma_store(&r->hdr->cons, cons + freed);
	pthread_spin_unlock(&r->lock);
}

/* The completions of @qp, which the kernel will add to no more, go. */
static void srdma_qp_clean_cqs(struct ibv_qp *qp)
{
	if (qp->recv_cq)
		srdma_cq_clean(qp->recv_cq, qp->qp_num);
	if (qp->send_cq && qp->send_cq != qp->recv_cq)
		srdma_cq_clean(qp->send_cq, qp->qp_num);
}

/*
 * The path MTU the kernel took for @ibqp: the one asked for, or less where
 * the netdev carries less (a netdev MTU of 1000 gives 512). @asked if the
 * query fails. Messages are limited by the MTU the packets go with.
 */
static enum ibv_mtu srdma_qp_path_mtu(struct ibv_qp *ibqp, enum ibv_mtu asked)
{
	struct ibv_qp_init_attr init;
	struct ibv_query_qp cmd;
	struct ibv_qp_attr attr;

	if (ibv_cmd_query_qp(ibqp, &attr, IBV_QP_PATH_MTU, &init, &cmd,
			     sizeof(cmd)) ||
	    attr.path_mtu < IBV_MTU_256 || attr.path_mtu > asked)
		return asked;
	return attr.path_mtu;
}

static int srdma_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			   int mask)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	struct ibv_modify_qp cmd;
	enum ibv_mtu mtu;
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (!ret && (mask & IBV_QP_PATH_MTU) && qp->sq.hdr) {
		/*
		 * The kernel's limit, or an entry this side let through
		 * would be refused there and stop the QP.
		 */
		mtu = srdma_qp_path_mtu(ibqp, attr->path_mtu);
		pthread_spin_lock(&qp->sq.lock);
		qp->sq.max_len = srdma_max_msg(128u << mtu);
		pthread_spin_unlock(&qp->sq.lock);
	}
	if (!ret && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET)
		srdma_qp_clean_cqs(ibqp);
	return ret;
}

static int srdma_destroy_qp(struct ibv_qp *ibqp)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	int ret = ibv_cmd_destroy_qp(ibqp);

	if (ret)
		return ret;
	srdma_uring_unmap(&qp->rq);
	srdma_uring_unmap(&qp->sq);
	free(qp);
	return 0;
}

/*
 * SRQs. The kernel maps the SRQ's ring (slots as the RQ's); post_srq_recv
 * writes entries and stores prod, and the kernel takes them when a message
 * needs a receive, without a doorbell. Basic SRQs only: XRC and tag
 * matching are EOPNOTSUPP, and so is resizing (modify_srq with
 * IBV_SRQ_MAX_WR), which the kernel refuses.
 */
/* Map the ring of an SRQ the kernel just made, as @q describes it. */
static int srdma_srq_map(struct ibv_context *ctx, struct srdma_srq *srq,
			 const struct srdma_uqueue *q)
{
	int ret;

	/* The ring never holds more than max_wr: one slot stays free. */
	if (!q->max_wr || q->max_wr >= q->slots)
		return EPROTO;
	ret = srdma_uring_map(ctx, &srq->rq, q->offset, q->len, q->slots,
			      q->slot_size, sizeof(struct srdma_urecv_wqe) +
			      q->max_sge * sizeof(struct srdma_usge));
	if (ret)
		return ret;
	srq->rq.max_wr = q->max_wr;
	srq->rq.max_sge = q->max_sge;
	srq->rq.max_len = SRDMA_MAX_MSG;
	return 0;
}

static struct ibv_srq *srdma_create_srq(struct ibv_pd *pd,
					struct ibv_srq_init_attr *attr)
{
	struct srdma_create_srq_resp_all resp;
	struct ibv_create_srq cmd;
	struct srdma_srq *srq;
	int ret;

	if (!(to_sctx(pd->context)->caps & SRDMA_CAP_SRQ)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_srq(pd, &srq->ibsrq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free_srq;
	ret = srdma_srq_map(pd->context, srq, &resp.drv.rq);
	if (ret)
		goto err_destroy_srq;
	return &srq->ibsrq;

err_destroy_srq:
	ibv_cmd_destroy_srq(&srq->ibsrq);
err_free_srq:
	free(srq);
	errno = ret;
	return NULL;
}

/*
 * An XRC SRQ (SRDMA_CAP_XRC): of a PD, an XRC domain and a CQ, which its
 * receives complete on; its number (ibv_get_srq_num()) is what XRC
 * senders name in each work request.
 */
static struct ibv_srq *srdma_create_xsrq(struct ibv_context *ctx,
					 struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct srdma_create_srq_resp_all resp;
	struct ibv_create_xsrq cmd;
	struct srdma_srq *srq;
	int ret;

	if (!(to_sctx(ctx)->caps & SRDMA_CAP_XRC) ||
	    (attr->comp_mask & ~need)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & need) != need || !attr->pd || !attr->xrcd ||
	    !attr->cq) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_srq_ex(ctx, &srq->vsrq, attr, &cmd, sizeof(cmd),
				    &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free_srq;
	ret = srdma_srq_map(ctx, srq, &resp.drv.rq);
	if (ret)
		goto err_destroy_srq;
	return &srq->ibsrq;

err_destroy_srq:
	ibv_cmd_destroy_srq(&srq->ibsrq);
err_free_srq:
	free(srq);
	errno = ret;
	return NULL;
}

/* ibv_get_srq_num(): an XRC SRQ's number; EINVAL for another SRQ. */
static int srdma_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct srdma_srq *srq = to_ssrq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

/*
 * ibv_open_xrcd(): an XRC domain, shared between the processes that open
 * it through the same file (the kernel's; srdma keeps nothing for it).
 */
static struct ibv_xrcd *srdma_open_xrcd(struct ibv_context *ctx,
					struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp;
	struct ibv_open_xrcd cmd;
	struct srdma_xrcd *xrcd;
	int ret;

	if (!(to_sctx(ctx)->caps & SRDMA_CAP_XRC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;
	ret = ibv_cmd_open_xrcd(ctx, &xrcd->vxrcd, sizeof(xrcd->vxrcd), attr,
				&cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->vxrcd.xrcd;
}

static int srdma_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct srdma_xrcd *xrcd = (struct srdma_xrcd *)ibxrcd;	/* first */
	int ret = ibv_cmd_close_xrcd(&xrcd->vxrcd);

	if (ret)
		return ret;
	free(xrcd);
	return 0;
}

/*
 * ibv_create_srq_ex(): libibverbs calls create_srq itself for a basic SRQ
 * with nothing but a PD and the type, so this sees the rest: XRC SRQs,
 * tag matching SRQs or other comp_mask bits (EOPNOTSUPP); a basic SRQ
 * that merely comes this way is made as create_srq makes it.
 */
static struct ibv_srq *srdma_create_srq_ex(struct ibv_context *ctx,
					   struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	struct ibv_srq_init_attr init;
	struct ibv_srq *srq;

	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type == IBV_SRQT_XRC)
		return srdma_create_xsrq(ctx, attr);
	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	memset(&init, 0, sizeof(init));
	init.srq_context = attr->srq_context;
	init.attr = attr->attr;
	srq = srdma_create_srq(attr->pd, &init);
	if (!srq)
		return NULL;
	/* What libibverbs does after create_srq, and not after this. */
	srq->srq_context = attr->srq_context;
	srq->events_completed = 0;
	attr->attr = init.attr;
	return srq;
}

static int srdma_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int mask)
{
	struct ibv_modify_srq cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

static int srdma_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

/* EBUSY (from the kernel) while a QP still uses it. */
static int srdma_destroy_srq(struct ibv_srq *ibsrq)
{
	struct srdma_srq *srq = to_ssrq(ibsrq);
	int ret = ibv_cmd_destroy_srq(ibsrq);

	if (ret)
		return ret;
	srdma_uring_unmap(&srq->rq);
	free(srq);
	return 0;
}

/*
 * Write the receives into the SRQ's ring and store prod; the receives up
 * to the first bad one are posted. No doorbell: the kernel reads the ring
 * whenever a message to one of the SRQ's QPs needs a receive, and an RC
 * sender that met an empty SRQ (RNR NAK) tries again by itself.
 */
static int srdma_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	struct srdma_uring *r = &to_ssrq(ibsrq)->rq;
	uint32_t prod, first;
	int ret = 0;

	pthread_spin_lock(&r->lock);
	first = prod = r->hdr->prod;
	for (; wr; wr = wr->next) {
		ret = srdma_rq_put(r, prod, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		prod++;
	}
	if (prod != first)
		srdma_store(&r->hdr->prod, prod);
	pthread_spin_unlock(&r->lock);
	return ret;
}

static const struct verbs_context_ops srdma_ctx_ops = {
	.advise_mr = srdma_advise_mr,
	.alloc_dm = srdma_alloc_dm,
	.alloc_mw = srdma_alloc_mw,
	.alloc_parent_domain = srdma_alloc_parent_domain,
	.alloc_pd = srdma_alloc_pd,
	.attach_mcast = ibv_cmd_attach_mcast,
	.bind_mw = srdma_bind_mw,
	.close_xrcd = srdma_close_xrcd,
	.create_ah = srdma_create_ah,
	.create_cq = srdma_create_cq,
	.create_cq_ex = srdma_create_cq_ex,
	.query_rt_values = srdma_query_rt_values,
	.create_qp = srdma_create_qp,
	.create_qp_ex = srdma_create_qp_ex,
	.create_srq = srdma_create_srq,
	.create_srq_ex = srdma_create_srq_ex,
	.dealloc_mw = srdma_dealloc_mw,
	.dealloc_pd = srdma_dealloc_pd,
	.dereg_mr = srdma_dereg_mr,
	.free_dm = srdma_free_dm,
	.get_srq_num = srdma_get_srq_num,
	.import_mr = srdma_import_mr,
	.import_pd = srdma_import_pd,
	.destroy_ah = srdma_destroy_ah,
	.destroy_cq = srdma_destroy_cq,
	.destroy_qp = srdma_destroy_qp,
	.destroy_srq = srdma_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = srdma_free_context,
	.modify_qp = srdma_modify_qp,
	.modify_srq = srdma_modify_srq,
	.open_qp = srdma_open_qp,
	.open_xrcd = srdma_open_xrcd,
	.poll_cq = srdma_poll_cq,
	.post_recv = srdma_post_recv,
	.post_send = srdma_post_send,
	.post_srq_recv = srdma_post_srq_recv,
	.query_device_ex = srdma_query_device_ex,
	.query_port = srdma_query_port,
	.query_qp = srdma_query_qp,
	.query_srq = srdma_query_srq,
	.reg_dm_mr = srdma_reg_dm_mr,
	.reg_dmabuf_mr = srdma_reg_dmabuf_mr,
	.reg_mr = srdma_reg_mr,
	.rereg_mr = srdma_rereg_mr,
	.req_notify_cq = srdma_req_notify_cq,
	.resize_cq = srdma_resize_cq,
	.unimport_mr = srdma_unimport_mr,
	.unimport_pd = srdma_unimport_pd,
};

/*
 * Check what the kernel's ucontexts are (@abi, @caps) and set the
 * context's operations: 0, or -1 with errno EPROTO.
 */
static int srdma_context_setup(struct srdma_context *ctx, uint32_t abi,
			       uint64_t caps)
{
	if (abi != SRDMA_UVERBS_ABI_VERSION) {
		fprintf(stderr, "libsrdma: kernel ABI %u, provider ABI %u\n",
			abi, SRDMA_UVERBS_ABI_VERSION);
		errno = EPROTO;
		return -1;
	}
	ctx->caps = caps;
	if (!(ctx->caps & SRDMA_CAP_MAPPED_RINGS)) {
		fprintf(stderr, "libsrdma: kernel without mapped rings\n");
		errno = EPROTO;
		return -1;
	}
	verbs_set_ops(&ctx->vctx, &srdma_ctx_ops);
	return 0;
}

static struct verbs_context *srdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct srdma_get_context_resp resp;
	struct ibv_get_context cmd;
	struct srdma_context *ctx;

	(void)private_data;
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    &((struct srdma_context *)NULL)->vctx,
					    RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	memset(&resp, 0, sizeof(resp));
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)))
		goto err_uninit_context;
	if (srdma_context_setup(ctx, resp.drv.abi_version, resp.drv.caps))
		goto err_uninit_context;
	ctx->fork_gen = __atomic_load_n(&srdma_fork_gen, __ATOMIC_RELAXED);
	return &ctx->vctx;

err_uninit_context:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	return NULL;
}

/*
 * ibv_import_device(): a context over another process's (or this one's)
 * command file, whose ucontext exists already. Its ABI version and
 * capabilities, which alloc_ucontext would have returned, are in the
 * device's sysfs directory (abi_version, caps).
 */
static struct verbs_context *srdma_import_context(struct ibv_device *ibdev,
						  int cmd_fd)
{
	struct verbs_sysfs_dev *sysfs = ((struct verbs_device *)ibdev)->sysfs;
	struct srdma_context *ctx;
	unsigned long long caps;
	unsigned int abi;
	char buf[32];
	int err;

	if (ibv_read_ibdev_sysfs_file(buf, sizeof(buf), sysfs,
				      "abi_version") <= 0 ||
	    sscanf(buf, "%u", &abi) != 1 ||
	    ibv_read_ibdev_sysfs_file(buf, sizeof(buf), sysfs, "caps") <= 0 ||
	    sscanf(buf, "%llx", &caps) != 1) {
		errno = EPROTO;
		return NULL;
	}
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    &((struct srdma_context *)NULL)->vctx,
					    RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	if (srdma_context_setup(ctx, abi, caps)) {
		err = errno;
		goto err_uninit_context;
	}
	err = ibv_cmd_query_context(&ctx->vctx.context, NULL);
	if (err)
		goto err_uninit_context;
	ctx->cmd_ioctl = true;	/* another process's file, most likely */
	return &ctx->vctx;

err_uninit_context:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = err;
	return NULL;
}

static struct verbs_device *srdma_alloc_device(struct verbs_sysfs_dev *sdev)
{
	struct srdma_device *dev;

	(void)sdev;
	dev = calloc(1, sizeof(*dev));
	return dev ? &dev->vdev : NULL;
}

static void srdma_uninit_device(struct verbs_device *vdev)
{
	free((struct srdma_device *)vdev);
}

/*
 * srdma is out of tree: its driver_id is RDMA_DRIVER_UNKNOWN, so there is no
 * driver-id entry to match, and `rdma link add NAME type srdma` accepts any
 * NAME, so the name says nothing either. Every device is therefore a
 * candidate in the table, and srdma_match_device(), which libibverbs calls
 * after the table, keeps only the devices whose node_desc is srdma's.
 * Devices with a driver_id are claimed by their own provider before any
 * provider is tried by name, and are refused here too. (librxe also claims
 * any device named rxe*, whoever loads first winning, so srdma refuses such
 * names at rdma link add: see Documentation/abi.rst.)
 */
static const struct verbs_match_ent srdma_match_table[] = {
	{ .u.modalias = "rdma_device:*", .kind = SRDMA_MATCH_MODALIAS },
	{}
};

static bool srdma_match_device(struct verbs_sysfs_dev *sdev)
{
	char desc[80];	/* node_desc: up to 64 characters and a newline */

	if (sdev->driver_id != RDMA_DRIVER_UNKNOWN)
		return false;
	if (ibv_read_ibdev_sysfs_file(desc, sizeof(desc), sdev,
				      "node_desc") <= 0)
		return false;
	return strcmp(desc, SRDMA_NODE_DESC) == 0;
}

static const struct verbs_device_ops srdma_dev_ops = {
	.name = "srdma",
	.match_min_abi_version = SRDMA_UVERBS_ABI_VERSION,
	.match_max_abi_version = SRDMA_UVERBS_ABI_VERSION,
	.match_table = srdma_match_table,
	.match_device = srdma_match_device,
	.alloc_device = srdma_alloc_device,
	.uninit_device = srdma_uninit_device,
	.alloc_context = srdma_alloc_context,
	.import_context = srdma_import_context,
};

/* In the child of a fork: every context so far is the parent's. */
static void srdma_atfork_child(void)
{
	__atomic_add_fetch(&srdma_fork_gen, 1, __ATOMIC_RELAXED);
}

static void __attribute__((constructor)) srdma_register(void)
{
	/* Without it a child's first command fails over (and is logged). */
	pthread_atfork(NULL, NULL, srdma_atfork_child);
	verbs_register_driver_34(&srdma_dev_ops);
}
