// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma completion queues: a ring with free-running producer and consumer
 * indices, completion events, and overflow reported as a CQ error. A
 * kernel CQ is a ring of ib_wc polled through poll_cq; a user CQ is a ring
 * of ib_uverbs_wc mapped into the process, which polls it without a
 * system call.
 */
#include <linux/log2.h>
#include <linux/time_namespace.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "srdma.h"

/*
 * Make @ur, a user CQ ring of @slots entries, and tell the provider where
 * to map it: create_cq's and resize_cq's responses have the same layout.
 * On failure nothing is left made. @verb names the verb in messages.
 */
static int srdma_ucq_ring(struct srdma_cq *cq, struct srdma_uring *ur,
			  u32 slots, struct ib_udata *udata, const char *verb)
{
	struct srdma_ucontext *uctx = rdma_udata_to_drv_context(udata,
							struct srdma_ucontext, ibuc);
	struct srdma_create_cq_resp resp = {};
	struct srdma_uqueue uq = {};
	int err;

	BUILD_BUG_ON(sizeof(struct srdma_resize_cq_resp) != sizeof(resp));
	BUILD_BUG_ON(offsetof(struct srdma_resize_cq_resp, offset) !=
		     offsetof(struct srdma_create_cq_resp, offset));
	BUILD_BUG_ON(offsetof(struct srdma_resize_cq_resp, len) !=
		     offsetof(struct srdma_create_cq_resp, len));
	BUILD_BUG_ON(offsetof(struct srdma_resize_cq_resp, slots) !=
		     offsetof(struct srdma_create_cq_resp, slots));
	BUILD_BUG_ON(offsetof(struct srdma_resize_cq_resp, slot_size) !=
		     offsetof(struct srdma_create_cq_resp, slot_size));

	if (udata->outlen < sizeof(resp)) {
		srdma_dbg(to_sdev(cq->ibcq.device),
			  "%s: response of %zu bytes, need %zu\n", verb,
			  udata->outlen, sizeof(resp));
		return -EINVAL;
	}
	BUILD_BUG_ON(sizeof(struct ib_uverbs_wc) != SRDMA_UWC_SIZE);
	err = srdma_uring_create(&uctx->ibuc, ur, slots,
				 cq->timestamps ? SRDMA_UWC_TS_SLOT :
						  SRDMA_UWC_SIZE, &uq);
	if (err)
		return err;
	resp.offset = uq.offset;
	resp.len = uq.len;
	resp.slots = uq.slots;
	resp.slot_size = uq.slot_size;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		srdma_uring_destroy(ur);
	return err;
}

/**
 * srdma_create_cq() - ib_device_ops.create_cq: make a CQ.
 * @ibcq: the CQ, allocated by the core
 * @attr: its size and flags; @ibcq->cqe is set to the size made
 * @attrs: the uverbs command's attributes, or on kernels before 6.9 its
 *	driver udata (srdma_compat.h); NULL for a kernel CQ
 *
 * A user CQ's entries live in a ring mapped into the process. A user CQ
 * may ask for completion timestamps (struct srdma_uwc_ts after each
 * entry); a kernel CQ for no flag.
 *
 * Context: Process context; sleeps.
 * Return: 0; -EOPNOTSUPP for flags; -EINVAL for a size out of range, a
 * completion vector the device lacks or a short response buffer; -ENOMEM,
 * also when the device has its limit of CQs.
 */
int srdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct srdma_create_cq_attrs *attrs)
{
	struct ib_udata *udata = srdma_create_cq_udata(attrs);
	struct srdma_dev *sdev = to_sdev(ibcq->device);
	struct srdma_cq *cq = to_scq(ibcq);
	u32 slots;
	int err;

	err = srdma_udata_no_input(sdev, udata, "create_cq");
	if (err)
		return err;
	/* Only user CQs have room for a timestamp (struct ib_wc has none). */
	if (attr->flags & ~(udata ? IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION :
			    0)) {
		srdma_dbg(sdev, "create_cq: flags %#x not supported\n",
			  attr->flags);
		return -EOPNOTSUPP;
	}
	if (attr->cqe < 1 || attr->cqe >= SRDMA_MAX_CQE) {
		srdma_dbg(sdev, "create_cq: %u entries out of range\n",
			  attr->cqe);
		return -EINVAL;
	}
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;

	err = srdma_res_get(sdev, SRDMA_RES_CQ);
	if (err)
		return err;
	slots = roundup_pow_of_two(attr->cqe + 1);
	spin_lock_init(&cq->lock);
	cq->mask = slots - 1;
	ibcq->cqe = slots - 1;
	cq->user = !!udata;
	cq->timestamps = attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
	if (cq->timestamps) {
		/*
		 * The creator reads CLOCK_MONOTONIC through its time
		 * namespace: stamp completions on the clock it sees.
		 */
		struct timespec64 off = {};

		timens_add_monotonic(&off);
		cq->mono_off = timespec64_to_ns(&off);
	}
	if (udata) {
		err = srdma_ucq_ring(cq, &cq->uring, slots, udata,
				     "create_cq");
	} else {
		cq->ring = __vcalloc(slots, sizeof(*cq->ring),
				     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		err = cq->ring ? 0 : -ENOMEM;
	}
	if (err)
		srdma_res_put(sdev, SRDMA_RES_CQ);
	return err;
}

/**
 * srdma_destroy_cq() - ib_device_ops.destroy_cq: free a CQ.
 * @ibcq: the CQ, which no QP uses any more
 * @udata: the provider's command, unused
 *
 * Context: Process context.
 * Return: 0.
 */
int srdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct srdma_cq *cq = to_scq(ibcq);

	/* The core guarantees no QP uses the CQ any more. */
	srdma_uring_destroy(&cq->uring);
	vfree(cq->ring);
	srdma_res_put(to_sdev(ibcq->device), SRDMA_RES_CQ);
	return 0;
}

/* The CQ entries consumed so far: user CQs publish it in their ring. */
static u32 srdma_cq_cons(struct srdma_cq *cq)
{
	return cq->uring.hdr ? READ_ONCE(cq->uring.hdr->cons) : cq->cons;
}

/**
 * srdma_poll_cq() - ib_device_ops.poll_cq: take completions of a kernel CQ.
 * @ibcq: the CQ
 * @num: at most this many
 * @wc: where to put them
 *
 * Context: Any context; does not sleep.
 * Return: how many were taken, or -EOPNOTSUPP for a user CQ, which the
 * process polls in its own mapping.
 */
int srdma_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct srdma_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;

	if (cq->user)
		return -EOPNOTSUPP;	/* user CQs are polled in user space */
	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && cq->cons != cq->prod) {
		wc[n++] = cq->ring[cq->cons & cq->mask];
		cq->cons++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/**
 * srdma_req_notify_cq() - ib_device_ops.req_notify_cq: arm a CQ.
 * @ibcq: the CQ
 * @flags: IB_CQ_NEXT_COMP or IB_CQ_SOLICITED, maybe with
 *	   IB_CQ_REPORT_MISSED_EVENTS
 *
 * Context: Any context; does not sleep.
 * Return: 1 if IB_CQ_REPORT_MISSED_EVENTS was asked for and the CQ holds
 * unpolled completions, else 0.
 */
int srdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct srdma_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* NEXT_COMP overrides SOLICITED, never the other way round. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    srdma_cq_cons(cq) != cq->prod)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/*
 * The SL of a user completion. A RoCE port has no SLs to report, and
 * struct ib_uverbs_wc no network header type: for a UD receive the SL
 * carries the L3 header type, 1 for IPv6 and 2 for IPv4, as mlx5 reports
 * it (its CQE's packet type). UCX's ud_verbs reads it there to find the
 * destination address in the GRH area; with 0 it reads an IPv4 header
 * as a GRH and drops every datagram as not addressed to it.
 */
static u8 srdma_ucq_sl(const struct ib_wc *wc)
{
	if (!(wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE))
		return wc->sl;
	switch (wc->network_hdr_type) {
	case RDMA_NETWORK_IPV4:
		return SRDMA_UWC_SL_IPV4;
	case RDMA_NETWORK_IPV6:
		return SRDMA_UWC_SL_IPV6;
	default:
		return wc->sl;
	}
}

/* Write @wc as the user CQ's next entry. CQ lock held. */
static void srdma_ucq_fill(struct srdma_cq *cq, const struct ib_wc *wc)
{
	struct ib_uverbs_wc *u = srdma_uring_slot(&cq->uring, cq->prod);

	lockdep_assert_held(&cq->lock);
	u->wr_id = wc->wr_id;
	u->status = wc->status;
	u->opcode = wc->opcode;
	u->vendor_err = wc->vendor_err;
	u->byte_len = wc->byte_len;
	u->ex.imm_data = wc->ex.imm_data;
	u->qp_num = wc->qp ? wc->qp->qp_num : 0;
	u->src_qp = wc->src_qp;
	/*
	 * In user space's values (srdma-abi.h); kernel-only flags (network
	 * header type) have other uses there.
	 */
	u->wc_flags = (wc->wc_flags & IB_WC_GRH ? SRDMA_UWC_GRH : 0) |
		      (wc->wc_flags & IB_WC_WITH_IMM ? SRDMA_UWC_WITH_IMM : 0) |
		      (wc->wc_flags & IB_WC_WITH_INVALIDATE ?
		       SRDMA_UWC_WITH_INV : 0);
	u->pkey_index = wc->pkey_index;
	u->slid = 0;
	u->sl = srdma_ucq_sl(wc);
	u->dlid_path_bits = 0;
	u->port_num = wc->port_num;
	u->reserved = 0;
	if (cq->timestamps) {
		struct srdma_uwc_ts *ts = (void *)(u + 1);

		ts->completion_ns = ktime_get_ns() + cq->mono_off;
		ts->wallclock_ns = ktime_get_real_ns();
	}
}

/*
 * The CQ overflowed and a completion was lost: raise IB_EVENT_CQ_ERR. The
 * consumer caused it by not polling; only a kernel consumer's is an error.
 */
static void srdma_cq_overflow(struct srdma_cq *cq)
{
	struct ib_event ev;

	if (cq->user)
		srdma_dbg_cq(cq, "overflowed, completion lost\n");
	else
		srdma_err_cq(cq, "overflowed, completion lost\n");
	if (cq->ibcq.event_handler) {
		ev.device = cq->ibcq.device;
		ev.element.cq = &cq->ibcq;
		ev.event = IB_EVENT_CQ_ERR;
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
}

/**
 * srdma_cq_post() - Add a completion to a CQ.
 * @cq: the CQ
 * @wc: the completion; @wc->qp is the QP it belongs to
 * @solicited: it completes a solicited receive
 *
 * Raises the completion event if the CQ is armed for it, and the CQ error
 * event if the CQ is full (the completion is then lost).
 *
 * Context: Process or softirq context, @wc->qp's lock held.
 */
void srdma_cq_post(struct srdma_cq *cq, const struct ib_wc *wc, bool solicited)
{
	unsigned long flags;
	bool fire = false, overflow = false;

	lockdep_assert_held(&to_sqp(wc->qp)->lock);
	spin_lock_irqsave(&cq->lock, flags);
	/* A user's consumer index out of range also reads as full. */
	if (cq->prod - srdma_cq_cons(cq) > cq->mask) {
		overflow = !cq->overflowed;
		cq->overflowed = true;
	} else {
		if (cq->uring.map)
			srdma_ucq_fill(cq, wc);
		else
			cq->ring[cq->prod & cq->mask] = *wc;
		cq->prod++;
		if (cq->uring.map)	/* entry before index */
			smp_store_release(&cq->uring.hdr->prod, cq->prod);
		if (cq->notify == IB_CQ_NEXT_COMP ||
		    (cq->notify == IB_CQ_SOLICITED &&
		     (solicited || wc->status != IB_WC_SUCCESS))) {
			cq->notify = 0;
			fire = true;
		}
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow)
		srdma_cq_overflow(cq);
	if (fire && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/*
 * Move the unpolled completions of @cq into a ring of @slots entries (@ur
 * for a user CQ, else *@ring) and make it the CQ's, unless there are more
 * of them than the @cqe asked for; the old ring is then
 * left in @ur or *@ring. The completions keep their free-running indices,
 * so the consumer goes on where it was. A user CQ's consumer index is read
 * once, here, and must lie within what the old ring holds. CQ lock held.
 */
static int srdma_cq_switch(struct srdma_cq *cq, struct srdma_uring *ur,
			   struct ib_wc **ring, u32 cqe, u32 slots)
{
	u32 cons, used, i;

	lockdep_assert_held(&cq->lock);
	cons = cq->user ? READ_ONCE(cq->uring.hdr->cons) : cq->cons;
	used = cq->prod - cons;
	if (used > cq->mask + 1) {	/* srdma_cq_post() fills every slot */
		srdma_dbg_cq(cq, "resize_cq: consumer %u out of range (%u, %u)\n",
			     cons, cq->prod, cq->mask);
		return -EINVAL;
	}
	if (used > cqe) {	/* what was asked for, not what it rounds to */
		srdma_dbg_cq(cq, "resize_cq: %u entries, %u unpolled completions\n",
			     cqe, used);
		return -EINVAL;
	}
	/* Both rings have the CQ's slot size (cq->timestamps is fixed). */
	for (i = cons; i != cq->prod; i++) {
		if (cq->user)
			memcpy(srdma_uring_slot(ur, i),
			       srdma_uring_slot(&cq->uring, i),
			       ur->slot_size);
		else
			(*ring)[i & (slots - 1)] = cq->ring[i & cq->mask];
	}
	if (cq->user) {
		WRITE_ONCE(ur->hdr->cons, cons);
		smp_store_release(&ur->hdr->prod, cq->prod);	/* entries first */
		swap(cq->uring, *ur);
	} else {
		swap(cq->ring, *ring);
	}
	cq->mask = slots - 1;
	cq->ibcq.cqe = slots - 1;
	return 0;
}

/**
 * srdma_resize_cq() - ib_device_ops.resize_cq: change the size of a CQ.
 * @ibcq: the CQ
 * @cqe: how many completions it must hold at least; @ibcq->cqe is set to
 *	 the size made
 * @attrs: the uverbs command's attributes, or on kernels before 6.9 its
 *	driver udata (srdma_compat.h); NULL for a kernel CQ
 *
 * The CQ gets a new ring, and the completions not yet polled move into it
 * in order, under the CQ lock, so that QPs completing work meanwhile (in
 * softirq) write either to the old ring before the move or to the new one
 * after it. A user CQ's new ring is a new mapping: its mmap() offset and
 * length are in the response, and the provider maps it in place of the old
 * one. The old ring's memory lives on while the process still maps it;
 * the kernel neither reads nor writes it any more. Concurrent resizes of
 * one CQ (possible from user space) are each atomic under the lock.
 *
 * Context: Process context; sleeps.
 * Return: 0; -EINVAL for a size out of range or below the number of
 * unpolled completions, a user consumer index out of range, or a short
 * response buffer; -ENOMEM.
 */
int srdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct srdma_cq *cq = to_scq(ibcq);
	struct srdma_uring ur = {};
	struct ib_wc *ring = NULL;
	unsigned long flags;
	u32 slots;
	int err;

	err = srdma_udata_no_input(to_sdev(ibcq->device), udata, "resize_cq");
	if (err)
		return err;
	if (cqe < 1 || cqe >= SRDMA_MAX_CQE) {
		srdma_dbg_cq(cq, "resize_cq: %d entries out of range\n", cqe);
		return -EINVAL;
	}
	if (cq->user != !!udata)	/* a user CQ is the process's alone */
		return -EINVAL;
	slots = roundup_pow_of_two(cqe + 1);
	if (cq->user) {
		/*
		 * Made and announced before the switch, which may still
		 * fail: the provider maps it only after a success.
		 */
		err = srdma_ucq_ring(cq, &ur, slots, udata, "resize_cq");
	} else {
		ring = __vcalloc(slots, sizeof(*ring),
				 GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		err = ring ? 0 : -ENOMEM;
	}
	if (err)
		return err;

	spin_lock_irqsave(&cq->lock, flags);
	err = srdma_cq_switch(cq, &ur, &ring, cqe, slots);
	spin_unlock_irqrestore(&cq->lock, flags);

	/* The ring not in use: the old one, or the new one on failure. */
	srdma_uring_destroy(&ur);
	vfree(ring);
	return err;
}
