// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma shared receive queues: create, modify, query and destroy,
 * post_srq_recv for kernel consumers, and srdma_srq_take(), with which the
 * responder of any QP created with the SRQ takes its oldest receive.
 *
 * A kernel SRQ is a ring in kernel memory that post_srq_recv fills. A user
 * SRQ is a ring mapped into the process (layout in srdma-abi.h), which the
 * process fills without a system call; the kernel reads it directly, one
 * entry per take, in softirq: the producer index once, bounded by the ring
 * and the consumer index, then each field of the entry once, validated.
 * Garbage there puts the SRQ in error (IB_EVENT_SRQ_ERR), never the kernel.
 *
 * The limit (srq_limit, armed by modify_srq with IB_SRQ_LIMIT) raises
 * IB_EVENT_SRQ_LIMIT_REACHED once, at the first take that leaves fewer
 * receives posted than the limit, and disarms itself.
 *
 * An XRC SRQ belongs to an XRC domain, not to QPs: a request to any XRC
 * target QP of the domain names it by its number in its XRCETH, and it
 * completes receives on its own CQ. Its number indexes the device's
 * xsrq_xa, where packets look it up under RCU and take a reference for as
 * long as they use it; destroy_srq unpublishes it and waits for those.
 * XRC domains themselves are the core's: srdma keeps nothing for them.
 */
#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "srdma.h"

/* An SRQ is named by its restrack id (the srqn of rdma resource). */
#define srdma_dbg_srq(srq, fmt, ...) do {				\
	const struct srdma_srq *__s = (srq);				\
									\
	ibdev_dbg_ratelimited(__s->ibsrq.device, "srq %u: " fmt,	\
			      __s->ibsrq.res.id, ##__VA_ARGS__);	\
} while (0)

/* Raise asynchronous event @type on @srq. Any context, no SRQ lock. */
static void srdma_srq_event(struct srdma_srq *srq, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = type,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

/* Can srdma make an SRQ of @init? The caller's mistakes are debug lines. */
static int srdma_srq_check_init(struct srdma_dev *sdev,
				const struct ib_srq_init_attr *init)
{
	const struct ib_srq_attr *a = &init->attr;

	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC) {
		srdma_dbg(sdev, "create_srq: type %d not supported\n",
			  init->srq_type);
		return -EOPNOTSUPP;
	}
	if (!a->max_wr || a->max_wr > SRDMA_MAX_QP_WR ||
	    a->max_sge > SRDMA_MAX_SGE) {
		srdma_dbg(sdev, "create_srq: max_wr %u max_sge %u out of range\n",
			  a->max_wr, a->max_sge);
		return -EINVAL;
	}
	return 0;
}

/* A kernel SRQ's ring, charged to the creator's memory cgroup. */
static int srdma_ksrq_alloc(struct srdma_srq *srq)
{
	srq->rq.buf = __vmalloc(array_size(srq->rq.mask + 1,
					   srq->rq.slot_size),
				GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN);
	return srq->rq.buf ? 0 : -ENOMEM;
}

/* A user SRQ's mapped ring, and the response that tells the provider. */
static int srdma_usrq_create(struct srdma_srq *srq, struct ib_udata *udata)
{
	struct srdma_ucontext *uctx = rdma_udata_to_drv_context(udata,
							struct srdma_ucontext, ibuc);
	struct srdma_create_srq_resp resp = {};
	int err;

	err = srdma_uring_create(&uctx->ibuc, &srq->urq, srq->rq.mask + 1,
				 sizeof(struct srdma_urecv_wqe) +
				 srq->rq.max_sge * sizeof(struct srdma_usge),
				 &resp.rq);
	if (err)
		return err;
	resp.rq.max_wr = srq->rq.max_wr;
	resp.rq.max_sge = srq->rq.max_sge;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		srdma_uring_destroy(&srq->urq);
	return err;
}

/**
 * srdma_create_srq() - ib_device_ops.create_srq: make a basic or XRC SRQ.
 * @ibsrq: the SRQ, allocated by the core
 * @init: the attributes asked for; max_wr and max_sge are updated to what
 *	  was made (at least one SGE). A nonzero srq_limit arms the limit.
 * @udata: the provider's command and response, NULL for a kernel SRQ
 *
 * A user SRQ is a ring mapped into the process.
 *
 * Context: Process context; sleeps.
 * An XRC SRQ (of @init->ext.xrc.xrcd, completing on @init->ext.cq) gets a
 * number for XRCETHs, in ibsrq->ext.xrc.srq_num, and is published under
 * it only once complete.
 *
 * Return: 0; -EOPNOTSUPP for a tag-matching SRQ; -EINVAL for max_wr 0 or
 * over max_srq_wr, max_sge over max_srq_sge, or a short response buffer;
 * -ENOMEM, also when the device has its limit of SRQs; -EBUSY when no XRC
 * SRQ number is free.
 */
int srdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibsrq->device);
	struct srdma_srq *srq = to_ssrq(ibsrq);
	int err;

	err = srdma_udata_no_input(sdev, udata, "create_srq") ?:
	      srdma_srq_check_init(sdev, init);
	if (err)
		return err;
	if (udata && udata->outlen < sizeof(struct srdma_create_srq_resp)) {
		srdma_dbg(sdev, "create_srq: response of %zu bytes, need %zu\n",
			  udata->outlen, sizeof(struct srdma_create_srq_resp));
		return -EINVAL;
	}
	err = srdma_res_get(sdev, SRDMA_RES_SRQ);
	if (err)
		return err;
	srq->sdev = sdev;
	spin_lock_init(&srq->lock);
	refcount_set(&srq->ref, 1);
	init_completion(&srq->released);
	srq->serial = srdma_mr_new_serial();
	srq->rq.max_wr = init->attr.max_wr;
	srq->rq.max_sge = max(init->attr.max_sge, 1U);
	srq->rq.slot_size = sizeof(struct srdma_recv_wqe) +
			    srq->rq.max_sge * sizeof(struct srdma_sge);
	srq->rq.mask = roundup_pow_of_two(srq->rq.max_wr + 1) - 1;
	/*
	 * ibv_create_srq(3) calls the limit irrelevant at creation: armed
	 * as rxe does if it makes sense, else ignored, never an error.
	 */
	srq->limit = init->attr.srq_limit <= init->attr.max_wr ?
		     init->attr.srq_limit : 0;
	if (init->srq_type == IB_SRQT_XRC) {
		/* Reserved now, published once the SRQ is complete. */
		err = xa_alloc_cyclic(&sdev->xsrq_xa,
				      &ibsrq->ext.xrc.srq_num, NULL,
				      XA_LIMIT(1, SRDMA_QPN_MASK),
				      &sdev->xsrq_next, GFP_KERNEL);
		if (err < 0) {
			err = err == -EBUSY ? -EBUSY : -ENOMEM;
			goto err_put_res;
		}
	}
	err = udata ? srdma_usrq_create(srq, udata) : srdma_ksrq_alloc(srq);
	if (err)
		goto err_erase_num;
	init->attr.max_wr = srq->rq.max_wr;
	init->attr.max_sge = srq->rq.max_sge;
	if (init->srq_type == IB_SRQT_XRC)
		xa_store(&sdev->xsrq_xa, ibsrq->ext.xrc.srq_num, srq,
			 GFP_KERNEL);	/* reserved: allocates nothing */
	srdma_dbg(sdev, "%s %sSRQ created, %u x %u sge, limit %u\n",
		  udata ? "user" : "kernel",
		  init->srq_type == IB_SRQT_XRC ? "XRC " : "",
		  srq->rq.max_wr, srq->rq.max_sge, srq->limit);
	return 0;

err_erase_num:
	if (init->srq_type == IB_SRQT_XRC)
		xa_erase(&sdev->xsrq_xa, ibsrq->ext.xrc.srq_num);
err_put_res:
	srdma_res_put(sdev, SRDMA_RES_SRQ);
	return err;
}

/**
 * srdma_modify_srq() - ib_device_ops.modify_srq: arm or disarm the limit.
 * @ibsrq: the SRQ
 * @attr: the new attributes
 * @mask: IB_SRQ_LIMIT (srq_limit, 0 disarms); IB_SRQ_MAX_WR is refused
 * @udata: the provider's command, which must carry no private data
 *
 * Context: Any context; takes the SRQ lock.
 * Return: 0; -EOPNOTSUPP for a resize (IB_SRQ_MAX_WR) or private data;
 * -EINVAL for other mask bits or a limit over max_wr.
 */
int srdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct srdma_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;

	if (udata && udata->inlen)
		return -EOPNOTSUPP;
	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT)) {
		srdma_dbg_srq(srq, "modify_srq: mask %#x\n", mask);
		return -EINVAL;
	}
	if (mask & IB_SRQ_MAX_WR) {
		srdma_dbg_srq(srq, "modify_srq: resizing is not supported\n");
		return -EOPNOTSUPP;
	}
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->rq.max_wr) {
		srdma_dbg_srq(srq, "modify_srq: limit %u over max_wr %u\n",
			      attr->srq_limit, srq->rq.max_wr);
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	srq->limit = attr->srq_limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

/**
 * srdma_query_srq() - ib_device_ops.query_srq
 * @ibsrq: the SRQ
 * @attr: filled with max_wr, max_sge and the armed limit (0 once the limit
 *	  event was raised)
 *
 * Context: Any context; takes the SRQ lock.
 * Return: 0.
 */
int srdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct srdma_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;

	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	spin_lock_irqsave(&srq->lock, flags);
	attr->srq_limit = srq->limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

/**
 * srdma_destroy_srq() - ib_device_ops.destroy_srq
 * @ibsrq: the SRQ
 * @udata: the provider's command, unused
 *
 * The core refuses (EBUSY) to destroy an SRQ that a QP still uses, and a
 * QP's destroy_qp waits for every packet that could take from the SRQ:
 * nothing reaches the SRQ any more. An XRC SRQ, which no QP holds, is
 * unpublished first; then destroy_srq waits for the packets that found it
 * before. A mapped ring's memory stays while the process maps it.
 *
 * Context: Process context; sleeps.
 * Return: 0.
 */
int srdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct srdma_srq *srq = to_ssrq(ibsrq);

	if (ibsrq->srq_type == IB_SRQT_XRC) {
		xa_erase(&srq->sdev->xsrq_xa, ibsrq->ext.xrc.srq_num);
		/* Lookups that found it have counted it by now. */
		synchronize_rcu();
		srdma_srq_put(srq);
		wait_for_completion(&srq->released);
	}

	srdma_uring_destroy(&srq->urq);
	vfree(srq->rq.buf);
	srdma_res_put(srq->sdev, SRDMA_RES_SRQ);
	srdma_dbg_srq(srq, "destroyed\n");
	return 0;
}

/**
 * srdma_post_srq_recv() - ib_device_ops.post_srq_recv, for kernel SRQs
 * @ibsrq: the SRQ
 * @wr: the list of receives
 * @bad_wr: set to the first receive not posted
 *
 * A user SRQ is posted to through its mapped ring only.
 *
 * Context: Any context, also with IRQs off; does not sleep; takes the
 * SRQ lock.
 * Return: 0; -EINVAL for a user SRQ, more SGEs than max_sge or lengths
 * that overflow 32 bits; -ENOMEM if the SRQ is full.
 */
int srdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct srdma_srq *srq = to_ssrq(ibsrq);
	struct srdma_recv_wqe *wqe;
	unsigned long flags;
	int err = 0;
	u32 len;

	if (srq->urq.map) {
		srdma_dbg_srq(srq, "post_srq_recv: a user SRQ posts through its ring\n");
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > srq->rq.max_sge) {
			srdma_dbg_srq(srq, "post_srq_recv: %d SGEs, max %u\n",
				      wr->num_sge, srq->rq.max_sge);
			err = -EINVAL;
		} else if (srq->rq.prod - srq->rq.cons >= srq->rq.max_wr) {
			err = -ENOMEM;
		}
		wqe = srdma_ring_slot(&srq->rq, srq->rq.prod);
		if (!err)
			err = srdma_sges_from_wr(wqe->sge, wr->sg_list,
						 wr->num_sge, &len);
		if (err) {
			*bad_wr = wr;
			break;
		}
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->length = len;
		srq->rq.prod++;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}

/* The oldest receive of a kernel SRQ into @wqe. SRQ lock held. */
static int srdma_ksrq_take(struct srdma_srq *srq, struct srdma_recv_wqe *wqe,
			   u32 *left)
{
	struct srdma_recv_wqe *src;

	lockdep_assert_held(&srq->lock);
	if (srq->rq.prod == srq->rq.cons)
		return -EAGAIN;
	src = srdma_ring_slot(&srq->rq, srq->rq.cons);
	/* num_sge was checked against max_sge by post_srq_recv. */
	memcpy(wqe, src, struct_size(src, sge, src->num_sge));
	srq->rq.cons++;
	*left = srq->rq.prod - srq->rq.cons;
	return 0;
}

/* The mapped ring of a user SRQ held garbage: it gives no more. -EINVAL. */
static int srdma_usrq_bad(struct srdma_srq *srq)
{
	lockdep_assert_held(&srq->lock);
	srq->error = true;
	return -EINVAL;
}

/*
 * The oldest receive of a user SRQ's mapped ring into @wqe, each field
 * read once and only the copy used. SRQ lock held.
 */
static int srdma_usrq_take(struct srdma_srq *srq, struct srdma_recv_wqe *wqe,
			   u32 *left)
{
	struct srdma_urecv_wqe *u;
	u32 prod, n, i;

	lockdep_assert_held(&srq->lock);
	/* Read once; the entries written before it are visible after it. */
	prod = smp_load_acquire(&srq->urq.hdr->prod);
	/* At most max_wr ahead of what was taken (wraps if behind it). */
	if (prod - srq->rq.cons > srq->rq.max_wr) {
		srdma_dbg_srq(srq, "ring: producer %u out of range (taken %u, depth %u)\n",
			      prod, srq->rq.cons, srq->rq.max_wr);
		return srdma_usrq_bad(srq);
	}
	if (prod == srq->rq.cons)
		return -EAGAIN;
	u = srdma_uring_slot(&srq->urq, srq->rq.cons);
	n = READ_ONCE(u->num_sge);
	if (n > srq->rq.max_sge) {
		srdma_dbg_srq(srq, "ring entry %u: %u SGEs, max %u\n",
			      srq->rq.cons, n, srq->rq.max_sge);
		return srdma_usrq_bad(srq);
	}
	wqe->length = 0;
	for (i = 0; i < n; i++) {
		wqe->sge[i].addr = READ_ONCE(u->sge[i].addr);
		wqe->sge[i].length = READ_ONCE(u->sge[i].length);
		wqe->sge[i].lkey = READ_ONCE(u->sge[i].lkey);
		if (check_add_overflow(wqe->length, wqe->sge[i].length,
				       &wqe->length)) {
			srdma_dbg_srq(srq, "ring entry %u: SGE lengths overflow\n",
				      srq->rq.cons);
			return srdma_usrq_bad(srq);
		}
	}
	wqe->num_sge = n;
	wqe->wr_id = READ_ONCE(u->wr_id);
	srq->rq.cons++;
	srdma_uring_consumed(&srq->urq, srq->rq.cons);
	*left = prod - srq->rq.cons;
	return 0;
}

/**
 * srdma_srq_take() - Take the oldest receive of an SRQ for one of its QPs.
 * @srq: the SRQ
 * @wqe: where the receive goes, with room for the SRQ's max_sge SGEs (a
 *	 slot of the QP's one-slot RQ)
 *
 * The lkeys are not checked here: the QP checks them when it places data.
 * A take that leaves fewer receives than the armed limit raises
 * IB_EVENT_SRQ_LIMIT_REACHED and disarms it; a user ring found bad raises
 * IB_EVENT_SRQ_ERR, once. Both are raised after the SRQ lock is dropped,
 * so a kernel consumer may re-arm or post to the SRQ from its handler;
 * the taking QP's lock is still held, as for every QP event, so the
 * handler must not post to that QP.
 *
 * Context: softirq or process context, the QP's lock held (BHs off).
 * Return: 0 if a receive was taken, -EAGAIN if the SRQ is empty, -EIO if
 * the SRQ is in error.
 */
int srdma_srq_take(struct srdma_srq *srq, struct srdma_recv_wqe *wqe)
{
	bool limit_reached = false;
	unsigned long flags;
	u32 left = 0;
	int err;

	/* One lock for every QP that takes, on any CPU: the consumer side. */
	spin_lock_irqsave(&srq->lock, flags);
	if (srq->error)
		err = -EIO;
	else if (srq->urq.map)
		err = srdma_usrq_take(srq, wqe, &left);
	else
		err = srdma_ksrq_take(srq, wqe, &left);
	if (!err && srq->limit && left < srq->limit) {
		srq->limit = 0;
		limit_reached = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (limit_reached)
		srdma_srq_event(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	if (err == -EINVAL) {		/* found bad just now */
		srdma_srq_event(srq, IB_EVENT_SRQ_ERR);
		err = -EIO;
	}
	return err;
}

/**
 * srdma_xsrq_get() - Find an XRC SRQ by the number an XRCETH names.
 * @sdev: the device the packet came to
 * @srqn: the number, from the wire
 * @xrcd: the XRC domain of the target QP the packet is for
 *
 * Context: Any context.
 * Return: the SRQ, counted (srdma_srq_put()), if it exists and is of
 * @xrcd; else NULL.
 */
struct srdma_srq *srdma_xsrq_get(struct srdma_dev *sdev, u32 srqn,
				 const struct ib_xrcd *xrcd)
{
	struct srdma_srq *srq;

	rcu_read_lock();
	srq = srqn ? xa_load(&sdev->xsrq_xa, srqn) : NULL;
	if (srq && !refcount_inc_not_zero(&srq->ref))
		srq = NULL;
	rcu_read_unlock();
	if (srq && srq->ibsrq.ext.xrc.xrcd != xrcd) {
		srdma_srq_put(srq);
		srq = NULL;
	}
	return srq;
}

/**
 * srdma_qp_held_srq() - The XRC SRQ the receive an XRC target QP holds
 * came from.
 * @qp: the XRC target QP, locked
 *
 * Found by the number and checked by the serial the QP kept when it took
 * the receive: an SRQ destroyed since, even one whose number a new SRQ of
 * the domain got, is gone.
 *
 * Context: QP lock held.
 * Return: the SRQ, counted (srdma_srq_put()), or NULL if the QP holds no
 * receive or its SRQ is gone.
 */
struct srdma_srq *srdma_qp_held_srq(struct srdma_qp *qp)
{
	struct srdma_srq *srq;

	lockdep_assert_held(&qp->lock);
	if (!qp->xrc_rq_srqn)
		return NULL;
	srq = srdma_xsrq_get(qp->sdev, qp->xrc_rq_srqn, qp->ibqp.xrcd);
	if (srq && srq->serial != qp->xrc_rq_serial) {
		srdma_srq_put(srq);
		srq = NULL;
	}
	return srq;
}

/**
 * srdma_srq_put() - Drop a reference srdma_xsrq_get() took.
 * @srq: the SRQ
 *
 * Context: Any context.
 */
void srdma_srq_put(struct srdma_srq *srq)
{
	if (refcount_dec_and_test(&srq->ref))
		complete(&srq->released);
}

/**
 * srdma_alloc_xrcd() - ib_device_ops.alloc_xrcd
 * @ibxrcd: the XRC domain, allocated by the core
 * @udata: the provider's command, unused
 *
 * The core keeps an XRC domain's target QPs and counts its users; its
 * SRQs point to it. srdma needs nothing more.
 *
 * Context: Process context.
 * Return: 0.
 */
int srdma_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return srdma_udata_no_input(to_sdev(ibxrcd->device), udata,
				    "alloc_xrcd");
}

/**
 * srdma_dealloc_xrcd() - ib_device_ops.dealloc_xrcd
 * @ibxrcd: the XRC domain, which nothing uses any more (the core counts)
 * @udata: the provider's command, unused
 *
 * Context: Process context.
 * Return: 0.
 */
int srdma_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}
