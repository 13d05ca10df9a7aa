// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma completion queues: a ring of ib_wc with free-running producer and
 * consumer indices, completion events, and overflow reported as a CQ error.
 */
#include <linux/log2.h>
#include <linux/vmalloc.h>

#include "srdma.h"

int srdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibcq->device);
	struct srdma_cq *cq = to_scq(ibcq);
	u32 slots;

	if (attr->flags) {
		srdma_err(sdev, "create_cq: flags %#x not supported\n",
			  attr->flags);
		return -EOPNOTSUPP;
	}
	if (attr->cqe < 1 || attr->cqe >= SRDMA_MAX_CQE) {
		srdma_err(sdev, "create_cq: %u entries out of range\n",
			  attr->cqe);
		return -EINVAL;
	}
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;

	slots = roundup_pow_of_two(attr->cqe + 1);
	cq->ring = vcalloc(slots, sizeof(*cq->ring));
	if (!cq->ring)
		return -ENOMEM;
	spin_lock_init(&cq->lock);
	cq->mask = slots - 1;
	ibcq->cqe = slots - 1;
	return 0;
}

int srdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct srdma_cq *cq = to_scq(ibcq);

	/* The core guarantees no QP uses the CQ any more. */
	vfree(cq->ring);
	return 0;
}

int srdma_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct srdma_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && cq->cons != cq->prod) {
		wc[n++] = cq->ring[cq->cons & cq->mask];
		cq->cons++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int srdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct srdma_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* NEXT_COMP overrides SOLICITED, never the other way round. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->cons != cq->prod)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/*
 * Add a completion. Called with the owning QP's lock held, in process or
 * softirq context. Raises the completion event if the CQ is armed for it.
 */
void srdma_cq_post(struct srdma_cq *cq, const struct ib_wc *wc, bool solicited)
{
	struct ib_event ev;
	unsigned long flags;
	bool fire = false, overflow = false;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->prod - cq->cons > cq->mask) {
		overflow = !cq->overflowed;
		cq->overflowed = true;
	} else {
		cq->ring[cq->prod & cq->mask] = *wc;
		cq->prod++;
		if (cq->notify == IB_CQ_NEXT_COMP ||
		    (cq->notify == IB_CQ_SOLICITED &&
		     (solicited || wc->status != IB_WC_SUCCESS))) {
			cq->notify = 0;
			fire = true;
		}
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow) {
		ibdev_err_ratelimited(cq->ibcq.device,
				      "cq %p overflowed, completion lost\n",
				      cq);
		if (cq->ibcq.event_handler) {
			ev.device = cq->ibcq.device;
			ev.element.cq = &cq->ibcq;
			ev.event = IB_EVENT_CQ_ERR;
			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
	}
	if (fire && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}
