// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma queue pairs: creation, the IB state machine (modify/query),
 * destruction, flushing, and the QP number table.
 *
 * Life cycle: a QP holds one reference for its life. Packets (via
 * srdma_qp_get()), the retransmit timer and the read work take more.
 * destroy_qp unpublishes the QPN, waits an RCU grace period so that no
 * lookup can find it any more, stops the timer and the work, drops the life
 * reference and waits for the count to reach zero before the core frees
 * the memory.
 */
#include <linux/log2.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "srdma.h"

/* QPN -> srdma_qp for every device: QPNs are unique module-wide. */
static DEFINE_XARRAY_ALLOC(srdma_qp_xa);
static u32 srdma_qp_next;		/* under srdma_qp_xa's lock */

struct srdma_qp *srdma_qp_get(u32 qpn)
{
	struct srdma_qp *qp;

	rcu_read_lock();
	qp = xa_load(&srdma_qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}

void srdma_qp_put(struct srdma_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

void srdma_qp_event(struct srdma_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

static int srdma_ring_init(struct srdma_ring *r, u32 max_wr, u32 max_sge,
			   size_t hdr)
{
	u32 slots = roundup_pow_of_two(max(max_wr, 1U) + 1);

	r->max_wr = max_wr;
	r->max_sge = max_sge;
	r->slot_size = hdr + max_sge * sizeof(struct srdma_sge);
	r->mask = slots - 1;
	r->prod = 0;
	r->cons = 0;
	/*
	 * Charged to the creator's memory cgroup, like the mapped rings;
	 * sized by the caller, so failing is its ENOMEM, not a log entry.
	 */
	r->buf = __vmalloc(array_size(slots, r->slot_size),
			   GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN);
	return r->buf ? 0 : -ENOMEM;
}

/* Map the SQ and RQ of a user QP and tell the provider where they are. */
static int srdma_create_uqp(struct srdma_qp *qp, struct ib_udata *udata)
{
	struct srdma_ucontext *uctx = rdma_udata_to_drv_context(udata,
							struct srdma_ucontext, ibuc);
	struct srdma_create_qp_resp resp = {};
	int err;

	if (udata->outlen < sizeof(resp)) {
		srdma_err_qp(qp, "create_qp: response of %zu bytes, need %zu\n",
			     udata->outlen, sizeof(resp));
		return -EINVAL;
	}
	err = srdma_uring_create(&uctx->ibuc, &qp->usq, qp->sq.mask + 1,
				 sizeof(struct srdma_usend_wqe) +
				 qp->sq.max_sge * sizeof(struct srdma_usge),
				 &resp.sq);
	if (err)
		return err;
	err = srdma_uring_create(&uctx->ibuc, &qp->urq, qp->rq.mask + 1,
				 sizeof(struct srdma_urecv_wqe) +
				 qp->rq.max_sge * sizeof(struct srdma_usge),
				 &resp.rq);
	if (err)
		goto err_destroy_usq;
	resp.sq.max_wr = qp->sq.max_wr;
	resp.sq.max_sge = qp->sq.max_sge;
	resp.rq.max_wr = qp->rq.max_wr;
	resp.rq.max_sge = qp->rq.max_sge;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err_destroy_urq;
	return 0;

err_destroy_urq:
	srdma_uring_destroy(&qp->urq);
err_destroy_usq:
	srdma_uring_destroy(&qp->usq);
	return err;
}

int srdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibqp->device);
	struct srdma_qp *qp = to_sqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	u32 qpn;
	int err;

	if (init->qp_type != IB_QPT_RC) {
		srdma_dbg(sdev, "create_qp: type %d not supported\n",
			  init->qp_type);
		return -EOPNOTSUPP;
	}
	if (init->srq || init->create_flags) {
		srdma_err(sdev, "create_qp: SRQ and create flags not supported\n");
		return -EOPNOTSUPP;
	}
	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (cap->max_send_wr > SRDMA_MAX_QP_WR ||
	    cap->max_recv_wr > SRDMA_MAX_QP_WR ||
	    cap->max_send_sge > SRDMA_MAX_SGE ||
	    cap->max_recv_sge > SRDMA_MAX_SGE || cap->max_inline_data) {
		srdma_err(sdev, "create_qp: caps wr %u/%u sge %u/%u inline %u exceed the limits\n",
			  cap->max_send_wr, cap->max_recv_wr, cap->max_send_sge,
			  cap->max_recv_sge, cap->max_inline_data);
		return -EINVAL;
	}

	err = srdma_res_get(sdev, SRDMA_RES_QP);
	if (err)
		return err;
	qp->sdev = sdev;
	qp->is_user = !!udata;
	spin_lock_init(&qp->lock);
	spin_lock_init(&qp->dst_lock);
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	refcount_set(&qp->ref, 1);
	init_completion(&qp->released);
	timer_setup(&qp->retrans_timer, srdma_retrans_timer, 0);
	INIT_WORK(&qp->read_work, srdma_read_work);
	qp->state = IB_QPS_RESET;
	qp->mtu = 256;
	qp->resp_opcode = SRDMA_OP_ACK;	/* no message in progress */
	qp->rd_gap_psn = U32_MAX;		/* never a valid PSN */

	cap->max_send_sge = max(cap->max_send_sge, 1U);
	cap->max_recv_sge = max(cap->max_recv_sge, 1U);
	err = srdma_ring_init(&qp->sq, cap->max_send_wr, cap->max_send_sge,
			      sizeof(struct srdma_send_wqe));
	if (err)
		goto err_put_res;
	err = srdma_ring_init(&qp->rq, cap->max_recv_wr, cap->max_recv_sge,
			      sizeof(struct srdma_recv_wqe));
	if (err)
		goto err_free_sq;

	err = xa_alloc_cyclic(&srdma_qp_xa, &qpn, NULL,
			      XA_LIMIT(SRDMA_MIN_QPN, SRDMA_QPN_MASK),
			      &srdma_qp_next, GFP_KERNEL);
	if (err < 0)
		goto err_free_rq;
	ibqp->qp_num = qpn;
	/* Source port from the QPN, in the 0xc000-0xffff range. */
	qp->sport = htons(0xc000 | (hash_32(qpn, 14) & 0x3fff));
	cap->max_inline_data = 0;

	if (udata) {
		err = srdma_create_uqp(qp, udata);
		if (err)
			goto err_erase_qpn;
	}

	/* Publish only now that the QP is complete. */
	xa_store(&srdma_qp_xa, qpn, qp, GFP_KERNEL);
	srdma_dbg_qp(qp, "created, sq %u x %u sge, rq %u x %u sge\n",
		     cap->max_send_wr, cap->max_send_sge, cap->max_recv_wr,
		     cap->max_recv_sge);
	return 0;

err_erase_qpn:
	xa_erase(&srdma_qp_xa, qpn);
err_free_rq:
	vfree(qp->rq.buf);
err_free_sq:
	vfree(qp->sq.buf);
err_put_res:
	srdma_res_put(sdev, SRDMA_RES_QP);
	return err;
}

/* Complete every posted receive and every unfinished send as flushed. */
void srdma_qp_flush(struct srdma_qp *qp)
{
	struct srdma_cq *rcq = to_scq(qp->ibqp.recv_cq);
	struct srdma_send_wqe *swqe;
	struct srdma_recv_wqe *rwqe;
	struct ib_wc wc;

	lockdep_assert_held(&qp->lock);
	if (qp->usq.map) {
		/*
		 * From now on the provider rings a doorbell for everything it
		 * posts. Flag first, then a full barrier (pairing with the
		 * provider's prod store and fence), then take what was posted
		 * so far, to flush it too.
		 */
		WRITE_ONCE(qp->usq.hdr->flags, SRDMA_RING_F_QP_ERR);
		WRITE_ONCE(qp->urq.hdr->flags, SRDMA_RING_F_QP_ERR);
		WRITE_ONCE(qp->usq.hdr->no_doorbell, 0);
		smp_mb();	/* flags before reading prod */
		srdma_sq_pull(qp);
		srdma_rq_pull(qp);
	}
	qp->recv_active = false;
	/* Signed distances: a bad index can never make these loops run long. */
	while ((s32)(qp->rq.prod - qp->rq.cons) > 0) {
		rwqe = srdma_ring_slot(&qp->rq, qp->rq.cons);
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = rwqe->wr_id;
		wc.status = IB_WC_WR_FLUSH_ERR;
		wc.opcode = IB_WC_RECV;
		wc.qp = &qp->ibqp;
		srdma_cq_post(rcq, &wc, false);
		qp->rq.cons++;
	}
	qp->rq.cons = qp->rq.prod;
	srdma_uring_consumed(&qp->urq, qp->rq.cons);
	while ((s32)(qp->sq.prod - qp->sq.cons) > 0) {
		swqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
		srdma_req_complete(qp, swqe, IB_WC_WR_FLUSH_ERR);
	}
	qp->sq.cons = qp->sq.prod;
	qp->sq_next = qp->sq.cons;
	qp->sq_next_off = 0;
	qp->rd_outstanding = 0;
	qp->write_left = 0;
	srdma_rd_queue_reset(qp);
}

/*
 * Move to ERR (from any state but RESET), flush, and raise @type; QP lock
 * held.
 */
void srdma_qp_error_event(struct srdma_qp *qp, enum ib_event_type type)
{
	lockdep_assert_held(&qp->lock);
	if (qp->state == IB_QPS_ERR || qp->state == IB_QPS_RESET)
		return;
	srdma_dbg_qp(qp, "state %d -> ERR\n", qp->state);
	qp->state = IB_QPS_ERR;
	qp->attr.qp_state = IB_QPS_ERR;
	del_timer(&qp->retrans_timer);
	srdma_qp_flush(qp);
	srdma_qp_event(qp, type);
}

void srdma_qp_error(struct srdma_qp *qp)
{
	srdma_qp_error_event(qp, IB_EVENT_QP_FATAL);
}

static void srdma_qp_reset(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	qp->sq.prod = 0;
	qp->rq.prod = 0;
	if (qp->usq.map) {
		/*
		 * Everything posted is dropped: user space goes on from its
		 * own producer indices, whatever they are.
		 */
		qp->sq.prod = READ_ONCE(qp->usq.hdr->prod);
		qp->rq.prod = READ_ONCE(qp->urq.hdr->prod);
		WRITE_ONCE(qp->usq.hdr->flags, 0);
		WRITE_ONCE(qp->urq.hdr->flags, 0);
		WRITE_ONCE(qp->usq.hdr->no_doorbell, 0);
		qp->uring_bad = false;
	}
	qp->sq.cons = qp->sq.prod;
	qp->rq.cons = qp->rq.prod;
	srdma_uring_consumed(&qp->usq, qp->sq.cons);
	srdma_uring_consumed(&qp->urq, qp->rq.cons);
	qp->sq_next = qp->sq.prod;
	qp->sq_next_off = 0;
	qp->rd_outstanding = 0;
	qp->rd_reqs = 0;
	srdma_rd_queue_reset(qp);
	if (qp->rd_hist)	/* READs of an earlier life are never repeated */
		memset(qp->rd_hist, 0,
		       (qp->rd_hist_mask + 1) * sizeof(*qp->rd_hist));
	/* The timer of an earlier life must not fire into this one. */
	del_timer(&qp->retrans_timer);
	qp->recv_active = false;
	qp->write_left = 0;
	qp->nak_sent = false;
	qp->sq_error = false;
	qp->rnr_wait = false;
	qp->msn = 0;
	qp->resp_opcode = SRDMA_OP_ACK;
}

/*
 * Resolve the AV of @attr into @av and a route (*@dstp, *@cookie), without
 * touching the QP: the caller publishes all of it at once. Process context.
 */
static int srdma_resolve_av(struct srdma_qp *qp, struct ib_qp_attr *attr,
			    struct srdma_av *av, struct dst_entry **dstp,
			    u32 *cookie)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid;
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa, da;
	int err;

	if (!(rdma_ah_get_ah_flags(&attr->ah_attr) & IB_AH_GRH)) {
		srdma_err_qp(qp, "address vector without GRH\n");
		return -EINVAL;
	}
	grh = rdma_ah_read_grh(&attr->ah_attr);
	sgid = grh->sgid_attr;
	if (!sgid || sgid->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP) {
		srdma_err_qp(qp, "source GID %u is not RoCEv2\n",
			     grh->sgid_index);
		return -EINVAL;
	}
	rdma_gid2ip((struct sockaddr *)&sa, &sgid->gid);
	rdma_gid2ip((struct sockaddr *)&da, &grh->dgid);
	if (sa.in.sin_family != da.in.sin_family) {
		srdma_err_qp(qp, "source and destination GIDs differ in family\n");
		return -EINVAL;
	}
	memset(av, 0, sizeof(*av));
	av->ipv6 = sa.in.sin_family == AF_INET6;
	if (av->ipv6) {
		av->saddr.v6 = sa.in6.sin6_addr;
		av->daddr.v6 = da.in6.sin6_addr;
	} else {
		av->saddr.v4 = sa.in.sin_addr.s_addr;
		av->daddr.v4 = da.in.sin_addr.s_addr;
	}
	av->tos = grh->traffic_class;
	av->ttl = grh->hop_limit ? grh->hop_limit : 64;
	err = srdma_route_lookup(qp->sdev, av, dstp, cookie);
	if (err)
		srdma_err_qp(qp, "no route to the destination: %d\n", err);
	return err;
}

static int srdma_check_attr(struct srdma_qp *qp, struct ib_qp_attr *attr,
			    int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SRDMA_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SRDMA_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SRDMA_QPN_MASK)
		return -EINVAL;
	if ((mask & IB_QP_RQ_PSN) && attr->rq_psn > SRDMA_PSN_MASK)
		return -EINVAL;
	if ((mask & IB_QP_SQ_PSN) && attr->sq_psn > SRDMA_PSN_MASK)
		return -EINVAL;
	return 0;
}

int srdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	struct srdma_read_job *jobs = NULL, *old_jobs = NULL;
	struct dst_entry *dst = NULL;
	enum ib_qp_state cur, new;
	enum ib_mtu mtu = 0;
	struct srdma_av av;
	u32 njobs = 0, cookie = 0;
	int err;

	if (udata && udata->inlen)
		return -EOPNOTSUPP;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	err = srdma_check_attr(qp, attr, mask);
	if (err) {
		srdma_err_qp(qp, "modify_qp: bad attribute (mask %#x)\n", mask);
		return err;
	}

	spin_lock_bh(&qp->lock);
	cur = qp->state;
	spin_unlock_bh(&qp->lock);
	/*
	 * The caller's idea of the current state is only a claim: it must be
	 * the QP's real state, or the checks below are checks of a fiction.
	 */
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		srdma_err_qp(qp, "modify_qp: claims state %d, is in %d\n",
			     attr->cur_qp_state, cur);
		return -EINVAL;
	}
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;

	if (!ib_modify_qp_is_ok(cur, new, IB_QPT_RC, mask)) {
		srdma_err_qp(qp, "modify_qp: %d -> %d with mask %#x not allowed\n",
			     cur, new, mask);
		return -EINVAL;
	}
	if (mask & IB_QP_PATH_MTU) {
		/* Never above what the netdev carries without fragments. */
		mtu = min_t(enum ib_mtu, attr->path_mtu,
			    iboe_get_mtu(READ_ONCE(qp->sdev->ndev->mtu)));
		if (!mtu) {
			srdma_err_qp(qp, "modify_qp: %s's MTU %u is too small for RoCE\n",
				     qp->sdev->ndev->name,
				     READ_ONCE(qp->sdev->ndev->mtu));
			return -EINVAL;
		}
	}

	/* Sleeping work first, into locals: route lookup, read-job ring. */
	if (mask & IB_QP_AV) {
		err = srdma_resolve_av(qp, attr, &av, &dst, &cookie);
		if (err)
			return err;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		/* Room for twice the limit, see srdma_resp_read(). */
		njobs = roundup_pow_of_two(2 * max_t(u32,
						     attr->max_dest_rd_atomic,
						     1) + 1);
		/* The queue, then the history of twice its size. */
		jobs = kcalloc(3 * njobs, sizeof(*jobs), GFP_KERNEL_ACCOUNT);
		if (!jobs) {
			err = -ENOMEM;
			goto err_release_dst;
		}
	}

	spin_lock_bh(&qp->lock);
	if (qp->state != cur) {
		/*
		 * The QP changed state (went to ERR) under us. A move to ERR
		 * or RESET still makes sense from there; anything else was
		 * asked of a state the QP is no longer in.
		 */
		if ((new != IB_QPS_ERR && new != IB_QPS_RESET) ||
		    (mask & ~IB_QP_STATE) ||
		    !ib_modify_qp_is_ok(qp->state, new, IB_QPT_RC, mask)) {
			spin_unlock_bh(&qp->lock);
			kfree(jobs);
			err = -EINVAL;
			goto err_release_dst;
		}
		cur = qp->state;
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU) {
		qp->attr.path_mtu = mtu;
		qp->mtu = ib_mtu_enum_to_int(mtu);
	}
	if (mask & IB_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
		old_jobs = qp->rd_jobs;
		qp->rd_jobs = jobs;
		qp->rd_mask = njobs - 1;
		qp->rd_hist = jobs + njobs;
		qp->rd_hist_mask = 2 * njobs - 1;
		qp->rd_hist_next = 0;
		srdma_rd_queue_reset(qp);
	}
	if (mask & IB_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_RQ_PSN) {
		qp->attr.rq_psn = attr->rq_psn;
		qp->epsn = attr->rq_psn;
	}
	if (mask & IB_QP_SQ_PSN) {
		qp->attr.sq_psn = attr->sq_psn;
		srdma_req_init_window(qp, attr->sq_psn);
	}
	if (mask & IB_QP_AV) {
		/* Keep the addresses; the core owns the sgid_attr ref. */
		qp->attr.ah_attr = attr->ah_attr;
		qp->attr.ah_attr.grh.sgid_attr = NULL;
		/* Addresses and route together: no packet sees half of it. */
		spin_lock(&qp->dst_lock);
		qp->av = av;
		swap(qp->dst, dst);
		qp->dst_cookie = cookie;
		spin_unlock(&qp->dst_lock);
	}
	if (mask & IB_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = attr->en_sqd_async_notify;

	if (mask & IB_QP_STATE) {
		switch (new) {
		case IB_QPS_RESET:
			srdma_qp_reset(qp);
			break;
		case IB_QPS_RTS:
			if (cur == IB_QPS_RTR) {
				qp->retry_left = qp->attr.retry_cnt;
				qp->rnr_left = qp->attr.rnr_retry;
			}
			break;
		case IB_QPS_ERR:
			qp->state = new;
			qp->attr.qp_state = new;
			srdma_qp_flush(qp);
			break;
		case IB_QPS_SQD:
			if (qp->attr.en_sqd_async_notify &&
			    qp->sq_next == qp->sq.prod)
				srdma_qp_event(qp, IB_EVENT_SQ_DRAINED);
			break;
		default:
			break;
		}
		qp->state = new;
		qp->attr.qp_state = new;
		srdma_dbg_qp(qp, "state %d -> %d\n", cur, new);
	}
	/* Resume sending when leaving SQD for RTS. */
	if (qp->state == IB_QPS_RTS)
		srdma_req_run(qp);
	spin_unlock_bh(&qp->lock);
	kfree(old_jobs);
	if (dst)		/* the route replaced */
		dst_release(dst);
	return 0;

err_release_dst:
	if (dst)
		dst_release(dst);
	return err;
}

int srdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct srdma_qp *qp = to_sqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	spin_lock_bh(&qp->lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->sq_psn = qp->next_psn;
	attr->rq_psn = qp->epsn;
	attr->sq_draining = qp->state == IB_QPS_SQD &&
			    qp->sq_next != qp->sq.prod;
	spin_unlock_bh(&qp->lock);

	attr->ah_attr.grh.sgid_attr = NULL;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->port_num = 1;
	attr->cap.max_send_wr = qp->sq.max_wr;
	attr->cap.max_recv_wr = qp->rq.max_wr;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = 0;

	init->qp_type = IB_QPT_RC;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	return 0;
}

int srdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct srdma_qp *qp = to_sqp(ibqp);

	xa_erase(&srdma_qp_xa, ibqp->qp_num);
	synchronize_rcu();		/* no lookup finds it from here on */

	spin_lock_bh(&qp->lock);
	qp->state = IB_QPS_RESET;	/* stop the requester and responder */
	spin_unlock_bh(&qp->lock);
	del_timer_sync(&qp->retrans_timer);
	cancel_work_sync(&qp->read_work);

	srdma_qp_put(qp);
	wait_for_completion(&qp->released);

	if (qp->dst)
		dst_release(qp->dst);
	kfree(qp->rd_jobs);
	srdma_uring_destroy(&qp->urq);
	srdma_uring_destroy(&qp->usq);
	vfree(qp->rq.buf);
	vfree(qp->sq.buf);
	srdma_res_put(qp->sdev, SRDMA_RES_QP);
	srdma_dbg(qp->sdev, "qp %u destroyed\n", ibqp->qp_num);
	return 0;
}
