// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrdma: the rdma-core provider for the srdma kernel module.
 *
 * Claims srdma ib_devices, whatever their name, by their node description
 * and opens a verbs context through the uverbs commands. The data path runs
 * on rings shared with the kernel (layout in srdma-abi.h): poll_cq never
 * enters the kernel, post_recv only while the QP is in the error state,
 * and post_send writes its work requests and rings at most one doorbell
 * per call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "verbs_private.h"
#include "../../include/uapi/rdma/srdma-abi.h"

/* QPNs are 24 bits on the wire. */
#define SRDMA_QPN_MAX		0xffffffU

struct srdma_device {
	struct verbs_device vdev;
};

struct srdma_context {
	struct verbs_context vctx;
	uint64_t caps;			/* enum srdma_ucontext_caps */
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
	pthread_spinlock_t lock;	/* one poster or poller at a time */
};

struct srdma_cq {
	struct verbs_cq vcq;		/* an ibv_cq, or an ibv_cq_ex */
	struct srdma_uring ring;
	/*
	 * ibv_cq_ex polling, from start_poll to end_poll, under ring.lock:
	 * a copy of the completion the read_* accessors report (the slot is
	 * read once), the next index to take, and prod as last loaded.
	 */
	struct ib_uverbs_wc cur;
	uint32_t next;
	uint32_t prod;
};

struct srdma_qp {
	struct ibv_qp ibqp;
	struct srdma_uring sq;
	struct srdma_uring rq;
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

static struct srdma_qp *to_sqp(struct ibv_qp *ibqp)
{
	return (struct srdma_qp *)ibqp;
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

/* Map a ring the kernel created; its geometry must be what we expect. */
static int srdma_uring_map(struct ibv_context *ctx, struct srdma_uring *r,
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
	pthread_spin_init(&r->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
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

static struct ibv_pd *srdma_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ret = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int srdma_dealloc_pd(struct ibv_pd *pd)
{
	int ret = ibv_cmd_dealloc_pd(pd);

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

static int srdma_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(vmr);
	return ret;
}

/* Map the ring of a CQ the kernel just made. */
static int srdma_cq_map(struct ibv_context *ctx, struct srdma_cq *cq,
			const struct srdma_create_cq_resp *drv)
{
	return srdma_uring_map(ctx, &cq->ring, drv->offset, drv->len,
			       drv->slots, drv->slot_size,
			       sizeof(struct ib_uverbs_wc));
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

static int srdma_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct srdma_uring *r = &to_scq(ibcq)->ring;
	const struct ib_uverbs_wc *u;
	uint32_t cons, prod;
	int n = 0;

	pthread_spin_lock(&r->lock);
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

	if (cq->next == cq->prod) {
		cq->prod = srdma_load(&r->hdr->prod);
		if (cq->next == cq->prod)
			return ENOENT;
	}
	memcpy(&cq->cur, srdma_slot(r, cq->next), sizeof(cq->cur));
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
	cq->next = r->hdr->cons;
	cq->prod = cq->next;
	if (srdma_cq_take(cq)) {
		/* Empty: the caller does not call end_poll. */
		pthread_spin_unlock(&r->lock);
		return ENOENT;
	}
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

	srdma_store(&r->hdr->cons, cq->next);
	pthread_spin_unlock(&r->lock);
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

/*
 * The completion fields srdma reports: those of struct ibv_wc. No
 * timestamps (the kernel takes none), no CVLAN, flow tag or tag matching.
 */
#define SRDMA_WC_EX_FLAGS	IBV_WC_STANDARD_FLAGS

/*
 * ibv_create_cq_ex(): libibverbs has already refused wc_flags it does not
 * know (EOPNOTSUPP), and initialises the ibv_cq part afterwards. Refused
 * here with EOPNOTSUPP: wc_flags srdma does not report, comp_mask bits but
 * IBV_CQ_INIT_ATTR_MASK_FLAGS (a parent domain needs parent domains), and
 * flags but IBV_CREATE_CQ_ATTR_SINGLE_THREADED (a promise srdma does not
 * need). Only the accessors of the fields asked for are set, as the API
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

	if ((attr->wc_flags & ~(uint64_t)SRDMA_WC_EX_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	memset(&resp, 0, sizeof(resp));
	memset(&cmd, 0, sizeof(cmd));
	ret = ibv_cmd_create_cq_ex(ctx, attr, &cq->vcq, &cmd, sizeof(cmd),
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
	return ex;

err_destroy_cq:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free_cq:
	free(cq);
	errno = ret;
	return NULL;
}

static struct ibv_qp *srdma_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct srdma_create_qp_resp_all resp;
	struct ibv_create_qp cmd;
	struct srdma_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_qp(pd, &qp->ibqp, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free_qp;
	ret = srdma_uring_map(pd->context, &qp->sq, resp.drv.sq.offset,
			      resp.drv.sq.len, resp.drv.sq.slots,
			      resp.drv.sq.slot_size,
			      sizeof(struct srdma_usend_wqe) +
			      resp.drv.sq.max_sge * sizeof(struct srdma_usge));
	if (ret)
		goto err_destroy_qp;
	ret = srdma_uring_map(pd->context, &qp->rq, resp.drv.rq.offset,
			      resp.drv.rq.len, resp.drv.rq.slots,
			      resp.drv.rq.slot_size,
			      sizeof(struct srdma_urecv_wqe) +
			      resp.drv.rq.max_sge * sizeof(struct srdma_usge));
	if (ret)
		goto err_unmap_sq;
	qp->sq.max_wr = resp.drv.sq.max_wr;
	qp->sq.max_sge = resp.drv.sq.max_sge;
	qp->rq.max_wr = resp.drv.rq.max_wr;
	qp->rq.max_sge = resp.drv.rq.max_sge;
	return &qp->ibqp;

err_unmap_sq:
	srdma_uring_unmap(&qp->sq);
err_destroy_qp:
	ibv_cmd_destroy_qp(&qp->ibqp);
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

/* Copy an SGE list into a ring entry; the lengths must sum to 32 bits. */
static int srdma_put_sges(struct srdma_usge *dst, const struct ibv_sge *src,
			  int num_sge)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < num_sge; i++) {
		total += src[i].length;
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
	return total > (1ULL << 31) ? EINVAL : 0;
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
			      num_sge);
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

/*
 * Can the kernel take @wr on @qp? EINVAL for an opcode or flag it does
 * not do, or a UD send without an AH of the QP's PD or with a remote QPN
 * over 24 bits: the kernel would refuse the ring entry and move the QP
 * to ERR.
 */
static int srdma_send_wr_check(const struct ibv_qp *qp,
			       const struct ibv_send_wr *wr)
{
	if (qp->qp_type == IBV_QPT_UD &&
	    ((wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM) ||
	     !wr->wr.ud.ah || wr->wr.ud.ah->pd != qp->pd ||
	     wr->wr.ud.remote_qpn > SRDMA_QPN_MAX))
		return EINVAL;
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		break;
	default:
		return EINVAL;
	}
	if (wr->send_flags & ~(IBV_SEND_FENCE | IBV_SEND_SIGNALED |
			       IBV_SEND_SOLICITED))
		return EINVAL;
	return 0;
}

/*
 * Write @wr into send ring entry @prod. 0, or EINVAL for a work request
 * the kernel cannot take, ENOMEM if the ring is full (see
 * srdma_ring_fill()).
 */
static int srdma_sq_put(struct srdma_uring *r, const struct ibv_qp *qp,
			uint32_t prod, const struct ibv_send_wr *wr)
{
	struct srdma_usend_wqe *u;
	int ret;

	ret = srdma_send_wr_check(qp, wr);
	if (ret)
		return ret;
	u = srdma_ring_fill(r, prod, wr->sg_list, wr->num_sge,
			    offsetof(struct srdma_usend_wqe, sge), &ret);
	if (!u)
		return ret;
	u->wr_id = wr->wr_id;
	u->opcode = wr->opcode;
	u->send_flags = wr->send_flags;
	u->imm_data = wr->imm_data;
	u->num_sge = wr->num_sge;
	u->reserved = 0;
	if (qp->qp_type == IBV_QPT_UD) {
		u->ud.ah = to_sah(wr->wr.ud.ah)->ah_num;
		u->ud.remote_qpn = wr->wr.ud.remote_qpn;
		u->remote_qkey = wr->wr.ud.remote_qkey;
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

static int srdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct srdma_uring *r = &to_sqp(ibqp)->sq;
	struct ibv_send_wr *dummy, *head = wr;
	uint32_t prod, first;
	int ret = 0;

	pthread_spin_lock(&r->lock);
	first = prod = r->hdr->prod;
	for (; wr; wr = wr->next) {
		ret = srdma_sq_put(r, ibqp, prod, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		prod++;
	}
	if (prod != first) {
		/*
		 * The doorbell, a post_send command without work requests, is
		 * needed unless the kernel will look at the ring anyway.
		 */
		srdma_ring_publish(r, prod);
		if (__atomic_load_n(&r->hdr->no_doorbell, __ATOMIC_RELAXED))
			goto out_unlock;
		if (ibv_cmd_post_send(ibqp, NULL, &dummy)) {
			/* Wrong state: the kernel took none of them. */
			srdma_store(&r->hdr->prod, first);
			ret = errno ? errno : EINVAL;
			*bad_wr = head;
		}
	}
out_unlock:
	pthread_spin_unlock(&r->lock);
	return ret;
}

static int srdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct srdma_uring *r = &to_sqp(ibqp)->rq;
	struct ibv_recv_wr *dummy;
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
	if (prod != first) {
		/* In the error state the kernel flushes only when asked. */
		srdma_ring_publish(r, prod);
		if (srdma_load(&r->hdr->flags) & SRDMA_RING_F_QP_ERR)
			ibv_cmd_post_recv(ibqp, NULL, &dummy);
	}
	pthread_spin_unlock(&r->lock);
	return ret;
}

static int srdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int mask, struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

static int srdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int mask)
{
	struct ibv_modify_qp cmd;

	return ibv_cmd_modify_qp(qp, attr, mask, &cmd, sizeof(cmd));
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

static const struct verbs_context_ops srdma_ctx_ops = {
	.alloc_pd = srdma_alloc_pd,
	.create_ah = srdma_create_ah,
	.create_cq = srdma_create_cq,
	.create_cq_ex = srdma_create_cq_ex,
	.create_qp = srdma_create_qp,
	.dealloc_pd = srdma_dealloc_pd,
	.dereg_mr = srdma_dereg_mr,
	.destroy_ah = srdma_destroy_ah,
	.destroy_cq = srdma_destroy_cq,
	.destroy_qp = srdma_destroy_qp,
	.free_context = srdma_free_context,
	.modify_qp = srdma_modify_qp,
	.poll_cq = srdma_poll_cq,
	.post_recv = srdma_post_recv,
	.post_send = srdma_post_send,
	.query_device_ex = srdma_query_device_ex,
	.query_port = srdma_query_port,
	.query_qp = srdma_query_qp,
	.reg_mr = srdma_reg_mr,
	.req_notify_cq = ibv_cmd_req_notify_cq,
};

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
	if (resp.drv.abi_version != SRDMA_UVERBS_ABI_VERSION) {
		fprintf(stderr, "libsrdma: kernel ABI %u, provider ABI %u\n",
			resp.drv.abi_version, SRDMA_UVERBS_ABI_VERSION);
		errno = EPROTO;
		goto err_uninit_context;
	}
	ctx->caps = resp.drv.caps;
	if (!(ctx->caps & SRDMA_CAP_MAPPED_RINGS)) {
		fprintf(stderr, "libsrdma: kernel without mapped rings\n");
		errno = EPROTO;
		goto err_uninit_context;
	}

	verbs_set_ops(&ctx->vctx, &srdma_ctx_ops);
	return &ctx->vctx;

err_uninit_context:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
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
};

static void __attribute__((constructor)) srdma_register(void)
{
	verbs_register_driver_34(&srdma_dev_ops);
}
