// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma responder: post_recv, and SEND, WRITE, READ and atomic requests
 * arriving in softirq. SEND and WRITE payloads go straight from the skb
 * into the target memory; READ requests are queued (up to
 * max_dest_rd_atomic) and answered by a work item, which may sleep between
 * packets. Atomics are carried out at once; their ACKs wait behind the
 * READ responses queued before them.
 */
#include <linux/sched/clock.h>
#include <linux/sizes.h>
#include <linux/skbuff.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_mad.h>

#include "srdma.h"

/**
 * srdma_rq_pull() - take what a user process posted to its mapped RQ
 * @qp: the QP, a user QP with a mapped RQ
 *
 * Copies the receives between the kernel's producer index and the
 * process's into the kernel's ring, reading each field once and
 * validating it.
 *
 * Context: QP lock held.
 * Return: 0, or -EINVAL if an index or entry was bad: the ring is marked
 * bad and the caller stops the QP.
 */
int srdma_rq_pull(struct srdma_qp *qp)
{
	struct srdma_urecv_wqe *u;
	struct srdma_recv_wqe *wqe;
	u32 uprod, n;
	int err;

	lockdep_assert_held(&qp->lock);
	err = srdma_uring_new(qp, &qp->urq, &qp->rq, &uprod);
	while (!err && qp->rq.prod != uprod) {
		u = srdma_uring_slot(&qp->urq, qp->rq.prod);
		wqe = srdma_ring_slot(&qp->rq, qp->rq.prod);
		n = READ_ONCE(u->num_sge);
		err = srdma_usges_read(qp, &qp->urq, wqe->sge, u->sge, n,
				       qp->rq.max_sge, &wqe->length);
		if (err)
			return err;
		wqe->wr_id = READ_ONCE(u->wr_id);
		wqe->num_sge = n;
		qp->rq.prod++;
	}
	return err;
}

/*
 * Take one receive from the QP's SRQ into its one-slot RQ, where it stays
 * until a message completes it or the QP is flushed. An empty SRQ is
 * counted; one in error gives nothing, and the QP that needed a receive
 * goes to ERR, as with a bad mapped RQ. QP lock held.
 */
static void srdma_rq_from_srq(struct srdma_qp *qp, struct srdma_srq *srq)
{
	int err;

	lockdep_assert_held(&qp->lock);
	err = srdma_srq_take(srq, srdma_ring_slot(&qp->rq, qp->rq.prod));
	if (!err) {
		qp->rq.prod++;
		if (srdma_qp_is_xrc_tgt(qp)) {
			qp->xrc_rq_srqn = srq->ibsrq.ext.xrc.srq_num;
			qp->xrc_rq_serial = srq->serial;
		}
	} else if (err == -EAGAIN) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_SRQ_EMPTY);
	} else {
		srdma_dbg_qp(qp, "its SRQ is in error\n");
		srdma_qp_error(qp);
	}
}

/*
 * Is a receive posted? For a user QP this takes what was written to the
 * mapped RQ; a bad entry there moves the QP to ERR. A QP with an SRQ takes
 * one from the SRQ. QP lock held.
 */
static bool srdma_rq_ready(struct srdma_qp *qp)
{
	struct srdma_srq *srq = srdma_qp_srq(qp);

	lockdep_assert_held(&qp->lock);
	if (qp->rq.cons == qp->rq.prod && srq)
		srdma_rq_from_srq(qp, srq);
	else if (qp->rq.cons == qp->rq.prod && qp->urq.map &&
		 srdma_rq_pull(qp))
		srdma_qp_error(qp);
	return (s32)(qp->rq.prod - qp->rq.cons) > 0;
}

/* The doorbell of a user QP in ERR: flush what the mapped RQ holds. */
static int srdma_post_recv_user(struct srdma_qp *qp,
				const struct ib_recv_wr *wr,
				const struct ib_recv_wr **bad_wr)
{
	int err = 0;

	spin_lock_bh(&qp->lock);
	if (wr) {
		srdma_dbg_qp(qp, "post_recv: a user QP posts through its ring\n");
		*bad_wr = wr;
		err = -EINVAL;
	} else if (qp->urq.bad) {
		/* Nothing is taken from it until a reset: not lost unsaid. */
		srdma_dbg_qp(qp, "post_recv: the receive ring held garbage\n");
		err = -EINVAL;
	} else if (qp->state == IB_QPS_ERR) {
		srdma_qp_flush(qp);
	} else if (srdma_qp_rq_postable(qp) && srdma_rq_pull(qp)) {
		srdma_qp_error(qp);
		err = -EINVAL;
	}
	spin_unlock_bh(&qp->lock);
	return err;
}

/**
 * srdma_post_recv() - the post_recv verb
 * @ibqp: the QP
 * @wr: the list of receives; for a user QP, NULL (a doorbell)
 * @bad_wr: set to the first receive not posted
 *
 * Queues each receive; in ERR they are flushed. A user QP posts through
 * its mapped RQ: this only rings the doorbell, which in ERR flushes it.
 *
 * Context: any context, also with IRQs off; does not sleep; takes the QP
 * lock.
 * Return: 0, -EINVAL for a bad receive, a QP in RESET, a QP with an SRQ
 * or an XRC QP, -ENOMEM if the RQ is full.
 */
int srdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	struct srdma_recv_wqe *wqe;
	bool irqs_off;
	int err = 0;
	u32 len;

	if (srdma_qp_srq(qp) || srdma_qp_is_xrc(qp)) {
		/*
		 * Its receives are posted to the SRQ (an XRC target's to its
		 * XRC SRQs; an XRC initiator has none); a doorbell is moot.
		 */
		srdma_dbg_qp(qp, "post_recv on a QP with an SRQ or of XRC\n");
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->urq.map)
		return srdma_post_recv_user(qp, wr, bad_wr);
	irqs_off = srdma_qp_lock_post(qp);
	if (!srdma_qp_rq_postable(qp)) {
		srdma_dbg_qp(qp, "post_recv in RESET\n");
		*bad_wr = wr;
		err = -EINVAL;
		goto out_unlock;
	}
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > qp->rq.max_sge) {
			srdma_dbg_qp(qp, "post_recv: %d SGEs, max %u\n",
				     wr->num_sge, qp->rq.max_sge);
			err = -EINVAL;
		} else if (qp->rq.prod - qp->rq.cons >= qp->rq.max_wr) {
			err = -ENOMEM;
		}
		wqe = srdma_ring_slot(&qp->rq, qp->rq.prod);
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
		qp->rq.prod++;
	}
	if (qp->state == IB_QPS_ERR)
		srdma_qp_flush(qp);
out_unlock:
	srdma_qp_unlock_post(qp, irqs_off);
	return err;
}

/* An ACK or NAK for @psn with MSN @msn (see srdma_send_ack()). */
static void srdma_send_ack_msn(struct srdma_qp *qp, u8 syndrome, u32 psn,
			       u32 msn)
{
	struct srdma_pkt pkt = {
		.opcode = SRDMA_OP_ACK,
		.pkey = SRDMA_DEFAULT_PKEY,
		.dqpn = qp->attr.dest_qp_num,
		.psn = psn,
		.syndrome = syndrome,
		.msn = msn,
	};
	struct sk_buff *skb;
	u8 *payload;

	lockdep_assert_held(&qp->lock);
	if (qp->direct_sink) {
		/* A request placed directly (srdma_recv.c): no packet. */
		qp->direct_sink->valid = true;
		qp->direct_sink->syndrome = syndrome;
		qp->direct_sink->psn = psn;
		qp->direct_sink->msn = msn;
		return;
	}
	skb = srdma_alloc_pkt(qp, &pkt, &payload);
	if (skb)
		srdma_xmit(qp, skb);
}

/**
 * srdma_send_ack() - send an ACK or NAK
 * @qp: the QP that sends it
 * @syndrome: its AETH syndrome
 * @psn: the PSN it is for
 *
 * It carries the QP's current MSN. A packet that cannot be allocated is
 * not sent: the requester asks again.
 *
 * Context: softirq or process context, QP lock held.
 */
void srdma_send_ack(struct srdma_qp *qp, u8 syndrome, u32 psn)
{
	srdma_send_ack_msn(qp, syndrome, psn, qp->msn);
}

/*
 * The AETH syndrome of a positive ACK: with the credit count (IBTA
 * 9.7.7.2) of an RC QP with its own RQ, the receives it holds from rq.cons
 * on, for the messages after the last one completed (whose count the ACK's
 * MSN is). A mapped RQ counts what the process has posted, as its
 * producer index says, when that index is in range; the count only steers
 * the peer's requester, which an RNR NAK corrects. An SRQ's receives
 * belong to no QP: no count (invalid), as from a peer that does not count.
 */
static u8 srdma_ack_syndrome(struct srdma_qp *qp)
{
	u32 n, uprod;

	lockdep_assert_held(&qp->lock);
	if (qp->ibqp.qp_type != IB_QPT_RC || srdma_qp_srq(qp))
		return SRDMA_AETH_ACK | SRDMA_AETH_CREDIT_INVALID;
	n = qp->rq.prod - qp->rq.cons;
	if (qp->urq.map) {
		uprod = READ_ONCE(qp->urq.hdr->prod);
		if (uprod - qp->rq.cons <= qp->rq.max_wr)
			n = max(n, uprod - qp->rq.cons);
	}
	return SRDMA_AETH_ACK | srdma_credits_encode(min(n, qp->rq.max_wr));
}

/*
 * A positive ACK for everything up to @psn: at once, or, while READ
 * responses accepted before @psn are still queued, once they are out. An
 * ACK ahead of them would tell the requester that they were lost (rdma_rxe
 * sends the READ again). The read work sends the latest one deferred, for
 * its own PSN and MSN: never for a PSN past it, which could name a READ or
 * atomic accepted later whose own response the wire may still lose (a
 * plain ACK at its last PSN completes it at rdma_rxe's requester).
 */
static void srdma_send_ack_ok(struct srdma_qp *qp, u32 psn)
{
	lockdep_assert_held(&qp->lock);
	if (srdma_rd_queued(qp)) {
		qp->ack_deferred = true;
		qp->ack_deferred_psn = psn;
		qp->ack_deferred_msn = qp->msn;
		return;
	}
	srdma_send_ack(qp, srdma_ack_syndrome(qp), psn);
}

static void srdma_send_nak(struct srdma_qp *qp, u8 code, u32 psn)
{
	srdma_count(qp->sdev, SRDMA_CNT_NAK_SENT);
	srdma_send_ack(qp, SRDMA_AETH_NAK | code, psn);
}

/* No receive posted: RNR NAK with the QP's minimum RNR timer. */
static int srdma_send_rnr(struct srdma_qp *qp, u32 psn)
{
	srdma_count(qp->sdev, SRDMA_CNT_RNR_NAK_SENT);
	srdma_send_ack(qp, SRDMA_AETH_RNR_NAK | qp->attr.min_rnr_timer, psn);
	return -EAGAIN;
}

static void srdma_uc_drop(struct srdma_qp *qp);

/*
 * @pkt needs a page of an on-demand paging MR that is not present (its
 * fault is queued): RNR NAK it, so that the requester sends it again once
 * the page may be in (UC: the message is dropped). -EAGAIN.
 */
static int srdma_resp_odp_miss(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	if (srdma_qp_is_uc(qp)) {
		srdma_uc_drop(qp);
		return -EAGAIN;
	}
	srdma_dbg_qp(qp, "psn %u: on-demand page not present, RNR NAK\n",
		     pkt->psn);
	return srdma_send_rnr(qp, pkt->psn);
}

/*
 * Consume the receive at rq.cons (in the kernel ring and, for a user QP,
 * in the mapped one) and post @wc, its completion: on the QP's receive
 * CQ, or for an XRC target QP on the CQ of the XRC SRQ the receive came
 * from (none if that SRQ was destroyed since). QP lock held.
 */
static void srdma_rq_complete(struct srdma_qp *qp, const struct ib_wc *wc,
			      bool solicited)
{
	struct srdma_srq *srq;

	lockdep_assert_held(&qp->lock);
	qp->rq.cons++;
	srdma_uring_consumed(&qp->urq, qp->rq.cons);
	if (!srdma_qp_is_xrc_tgt(qp)) {
		srdma_cq_post(to_scq(qp->ibqp.recv_cq), wc, solicited);
		return;
	}
	srq = srdma_qp_held_srq(qp);
	if (srq) {
		srdma_cq_post(to_scq(srq->ibsrq.ext.cq), wc, solicited);
		srdma_srq_put(srq);
	}
	qp->xrc_rq_srqn = 0;
}

/* Complete the receive in progress with @status; QP lock held. */
static void srdma_recv_done(struct srdma_qp *qp, struct srdma_pkt *pkt,
			    enum ib_wc_status status, enum ib_wc_opcode op,
			    u32 byte_len)
{
	struct srdma_recv_wqe *wqe = srdma_ring_slot(&qp->rq, qp->rq.cons);
	struct ib_wc wc = {
		.wr_id = wqe->wr_id,
		.status = status,
		.opcode = op,
		.byte_len = byte_len,
		.qp = &qp->ibqp,
		.src_qp = qp->attr.dest_qp_num,
		.port_num = SRDMA_PORT_NUM,
	};

	lockdep_assert_held(&qp->lock);
	if (status == IB_WC_SUCCESS && (pkt->flags & SRDMA_F_IMM)) {
		wc.wc_flags = IB_WC_WITH_IMM;
		wc.ex.imm_data = (__force __be32)pkt->imm;
	}
	if (status == IB_WC_SUCCESS && (pkt->flags & SRDMA_F_IETH)) {
		wc.wc_flags = IB_WC_WITH_INVALIDATE;
		wc.ex.invalidate_rkey = pkt->inv_rkey;
	}
	qp->recv_active = false;
	srdma_rq_complete(qp, &wc, pkt->se);
}

/*
 * A responder error that ends the connection. IBTA vol. 1 9.9.3 (responder
 * error behaviour) for RC: an invalid request (class B), a remote access
 * error (class C) and a remote operational error (class D) are NAKed and
 * put the responder QP in the error state; sequence errors and RNR only
 * NAK (see Documentation/reliability.rst). QP lock held.
 */
static void srdma_resp_error(struct srdma_qp *qp, u8 nak, u32 psn)
{
	static const enum ib_event_type event[] = {
		[SRDMA_NAK_INVALID_REQ] = IB_EVENT_QP_REQ_ERR,
		[SRDMA_NAK_REMOTE_ACCESS] = IB_EVENT_QP_ACCESS_ERR,
		[SRDMA_NAK_REMOTE_OP] = IB_EVENT_QP_FATAL,
	};

	lockdep_assert_held(&qp->lock);
	srdma_send_nak(qp, nak, psn);
	srdma_qp_error_event(qp, nak < ARRAY_SIZE(event) && event[nak] ?
			     event[nak] : IB_EVENT_QP_FATAL);
}

/*
 * UC: drop the message in progress, or the one the packet at hand begins.
 * A UC responder never NAKs, and nothing its peer sends fails the QP: a
 * message it cannot take (a packet lost, no receive posted, a refused
 * R_Key, too long for the receive) is dropped, counted once, and its other
 * packets are dropped until a FIRST or ONLY begins the next message. A
 * receive the message had taken stays posted for the next one, which
 * overwrites what was placed. QP lock held.
 */
static void srdma_uc_drop(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	if (!qp->uc_dropping)
		srdma_count(qp->sdev, SRDMA_CNT_RX_UC_MSG_DROPPED);
	qp->uc_dropping = true;
	qp->recv_active = false;
	qp->write_left = 0;
	qp->resp_opcode = SRDMA_OP_ACK;		/* no message in progress */
}

/*
 * The same for request @pkt, completing the receive in progress. On UC,
 * only the local user's own error (a bad receive buffer) completes the
 * receive and moves the QP to ERR, without a NAK; anything else drops the
 * message.
 */
static void srdma_resp_fatal(struct srdma_qp *qp, struct srdma_pkt *pkt,
			     u8 nak, enum ib_wc_status status)
{
	if (srdma_qp_is_uc(qp) && status != IB_WC_LOC_PROT_ERR) {
		srdma_uc_drop(qp);
		return;
	}
	if (qp->recv_active)
		srdma_recv_done(qp, pkt, status, IB_WC_RECV, 0);
	if (srdma_qp_is_uc(qp))
		srdma_qp_error(qp);
	else
		srdma_resp_error(qp, nak, pkt->psn);
}

/* The MSN once the message in progress is done. */
static u32 srdma_resp_msn_next(const struct srdma_qp *qp)
{
	return (qp->msn + 1) & SRDMA_MSN_MASK;
}

/* A message is done: count it in the MSN that ACKs carry. */
static void srdma_resp_msg_done(struct srdma_qp *qp)
{
	qp->msn = srdma_resp_msn_next(qp);
}

/* Check the opcode against the message in progress. */
static bool srdma_resp_seq_ok(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	u32 prev = srdma_op_flags(qp->resp_opcode);
	bool in_msg = qp->resp_opcode != SRDMA_OP_ACK &&
		      !(prev & SRDMA_F_LAST);

	if (!in_msg)
		return !!(pkt->flags & SRDMA_F_FIRST);
	/* continuing: same kind, MIDDLE or LAST */
	return !(pkt->flags & SRDMA_F_FIRST) &&
	       (prev & (SRDMA_F_SEND | SRDMA_F_WRITE)) ==
	       (pkt->flags & (SRDMA_F_SEND | SRDMA_F_WRITE));
}

/*
 * A message that will consume a receive (SEND, WRITE with immediate) needs
 * one posted before the packet that consumes it is accepted: RNR NAK
 * otherwise (UC: the message is dropped), -EIO if looking made the QP
 * fail. QP lock held.
 */
static int srdma_resp_need_recv(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	lockdep_assert_held(&qp->lock);
	if (srdma_rq_ready(qp))
		return 0;
	if (qp->state == IB_QPS_ERR)
		return -EIO;
	if (srdma_qp_is_uc(qp)) {
		srdma_uc_drop(qp);
		return -EAGAIN;
	}
	return srdma_send_rnr(qp, pkt->psn);
}

/*
 * SEND with Invalidate @pkt, its payload placed: invalidate the R_Key its
 * IETH names before the receive completes. Refused (not a fast
 * registration of the QP's PD with remote rights, nor a type 2 window
 * bound through this QP; not valid), the receive completes in error and
 * the QP fails (IBTA 9.9.3, class J): -EINVAL.
 */
static int srdma_resp_invalidate(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	if (!srdma_invalidate(qp, pkt->inv_rkey, true)) {
		srdma_count(qp->sdev, SRDMA_CNT_REMOTE_INV);
		return 0;
	}
	srdma_count(qp->sdev, SRDMA_CNT_REMOTE_INV_ERR);
	srdma_dbg_qp(qp, "SEND with Invalidate of R_Key %#x refused\n",
		     pkt->inv_rkey);
	srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
			 IB_WC_REM_INV_REQ_ERR);
	return -EINVAL;
}

static int srdma_resp_send(struct srdma_qp *qp, struct srdma_pkt *pkt,
			   struct sk_buff *skb, int payoff)
{
	struct srdma_recv_wqe *wqe;
	int err;

	if (pkt->flags & SRDMA_F_FIRST) {
		err = srdma_resp_need_recv(qp, pkt);
		if (err)
			return err;
		qp->recv_active = true;
		qp->recv_off = 0;
	} else if (!qp->recv_active) {
		/* Never complete a receive that was not taken. */
		srdma_dbg_qp(qp, "SEND continues a message with no receive\n");
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EINVAL;
	}
	wqe = srdma_ring_slot(&qp->rq, qp->rq.cons);
	if (pkt->paylen > wqe->length - qp->recv_off) {
		srdma_dbg_qp(qp, "SEND of more than the %u-byte receive buffer\n",
			     wqe->length);
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
				 IB_WC_LOC_LEN_ERR);
		return -EINVAL;
	}
	err = srdma_sge_copy(qp, wqe->sge, wqe->num_sge, qp->recv_off, NULL,
			     skb, payoff, pkt->paylen, true,
			     SRDMA_ODP_KICK_NONE);
	if (err == -EAGAIN) {
		/* The receive stays posted; the packet comes again. */
		if (pkt->flags & SRDMA_F_FIRST)
			qp->recv_active = false;
		return srdma_resp_odp_miss(qp, pkt);
	}
	if (err) {
		srdma_dbg_qp(qp, "receive buffer: local protection error\n");
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_REMOTE_OP,
				 IB_WC_LOC_PROT_ERR);
		return err;
	}
	qp->recv_off += pkt->paylen;
	if (pkt->flags & SRDMA_F_IETH) {
		err = srdma_resp_invalidate(qp, pkt);
		if (err)
			return err;
	}
	if (pkt->flags & SRDMA_F_LAST) {
		srdma_resp_msg_done(qp);
		srdma_recv_done(qp, pkt, IB_WC_SUCCESS, IB_WC_RECV,
				qp->recv_off);
	}
	return 0;
}

/*
 * The MR that rkey @rkey names, if [va, va + len) lies in it with @access
 * and the QP allows @access; with a reference. A *@serial other than 0 must
 * match: the key must still name the registration that the message started
 * with. *@serial is set to the registration checked, under the MR lock
 * (srdma_mr_check()), for the copy to check again.
 */
static struct srdma_mr *srdma_resp_mr(struct srdma_qp *qp, u32 rkey, u64 va,
				      u32 len, int access, u64 *serial)
{
	struct srdma_mr *mr;

	if (!(qp->attr.qp_access_flags & access))
		return NULL;
	mr = srdma_mr_get(qp->sdev, rkey, true);
	if (mr && srdma_mr_check(mr, qp, rkey, va, len, access,
				 serial)) {
		srdma_mr_put(mr);
		mr = NULL;
	}
	return mr;
}

/* A remote access error: count, log, NAK, QP to ERR. -EACCES. */
static int srdma_resp_access_err(struct srdma_qp *qp, struct srdma_pkt *pkt,
				 u64 va, u32 len, u32 rkey, bool read)
{
	srdma_count(qp->sdev, SRDMA_CNT_REM_ACCESS_ERR);
	srdma_dbg_qp(qp, "%s of %#llx+%u rkey %#x refused\n",
		     read ? "READ" : "WRITE", va, len, rkey);
	srdma_resp_fatal(qp, pkt, SRDMA_NAK_REMOTE_ACCESS,
			 IB_WC_REM_ACCESS_ERR);
	return -EACCES;
}

/*
 * The length of a WRITE or READ request: at most the message limit, and
 * few enough packets at this path MTU for PSN arithmetic. Else an invalid
 * request: -EINVAL.
 */
static int srdma_resp_dmalen(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	if (pkt->dmalen <= SRDMA_MAX_MSG_SIZE &&
	    srdma_npkts(pkt->dmalen, qp->mtu) <= SRDMA_MAX_MSG_PKTS)
		return 0;
	srdma_dbg_qp(qp, "request of %u bytes exceeds the message limit\n",
		     pkt->dmalen);
	srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
			 IB_WC_REM_INV_REQ_ERR);
	return -EINVAL;
}

/*
 * The FIRST (or ONLY) packet of a WRITE: check its length and, if it
 * carries data, the MR and the rights; remember where the WRITE goes and
 * the MR it was checked against.
 */
static int srdma_resp_write_first(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	struct srdma_mr *mr;
	u64 serial;
	int err;

	err = srdma_resp_dmalen(qp, pkt);
	if (err)
		return err;
	serial = 0;
	if (pkt->dmalen) {
		mr = srdma_resp_mr(qp, pkt->rkey, pkt->va, pkt->dmalen,
				   IB_ACCESS_REMOTE_WRITE, &serial);
		if (!mr)
			return srdma_resp_access_err(qp, pkt, pkt->va,
						     pkt->dmalen, pkt->rkey,
						     false);
		srdma_mr_put(mr);
	}
	qp->write_mr_serial = serial;
	qp->write_va = pkt->va;
	qp->write_rkey = pkt->rkey;
	qp->write_left = pkt->dmalen;
	qp->write_len = pkt->dmalen;
	return 0;
}

/*
 * Place the payload of WRITE packet @pkt. Every packet is checked again:
 * the MR may have been deregistered, and its key given to another, since
 * the first packet of the message.
 */
static int srdma_resp_write_place(struct srdma_qp *qp, struct srdma_pkt *pkt,
				  struct sk_buff *skb, int payoff)
{
	u64 serial = qp->write_mr_serial;
	struct srdma_mr *mr;
	int err;

	mr = srdma_resp_mr(qp, qp->write_rkey, qp->write_va, pkt->paylen,
			   IB_ACCESS_REMOTE_WRITE, &serial);
	if (!mr)
		return srdma_resp_access_err(qp, pkt, qp->write_va,
					     pkt->paylen, qp->write_rkey,
					     false);
	err = srdma_mr_copy_skb(mr, serial, qp->write_va, skb, payoff,
				pkt->paylen);
	if (err == -EAGAIN)
		err = srdma_odp_fault_later(qp, mr, qp->write_va, pkt->paylen,
					    SRDMA_ODP_KICK_NONE);
	srdma_mr_put(mr);
	if (err == -EAGAIN)
		return srdma_resp_odp_miss(qp, pkt);
	if (err)
		return srdma_resp_access_err(qp, pkt, qp->write_va,
					     pkt->paylen, qp->write_rkey,
					     false);
	return 0;
}

static int srdma_resp_write(struct srdma_qp *qp, struct srdma_pkt *pkt,
			    struct sk_buff *skb, int payoff)
{
	int err;

	/* WRITE with immediate consumes a receive with its last packet. */
	if (pkt->flags & SRDMA_F_IMM) {
		err = srdma_resp_need_recv(qp, pkt);
		if (err)
			return err;
	}
	if (pkt->flags & SRDMA_F_FIRST) {
		err = srdma_resp_write_first(qp, pkt);
		if (err)
			return err;
	}
	if (pkt->paylen > qp->write_left ||
	    ((pkt->flags & SRDMA_F_LAST) && pkt->paylen != qp->write_left) ||
	    (!(pkt->flags & SRDMA_F_LAST) && pkt->paylen != qp->mtu)) {
		srdma_dbg_qp(qp, "WRITE packet of %u bytes, %u left\n",
			     pkt->paylen, qp->write_left);
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EINVAL;
	}
	if (pkt->paylen) {
		err = srdma_resp_write_place(qp, pkt, skb, payoff);
		if (err)
			return err;
	}
	qp->write_va += pkt->paylen;
	qp->write_left -= pkt->paylen;
	if (pkt->flags & SRDMA_F_LAST) {
		srdma_resp_msg_done(qp);
		if (pkt->flags & SRDMA_F_IMM) {
			qp->recv_active = true;
			srdma_recv_done(qp, pkt, IB_WC_SUCCESS,
					IB_WC_RECV_RDMA_WITH_IMM,
					qp->write_len);
		}
	}
	return 0;
}

/* The opcode of response @idx of @npkts to a READ. */
static u8 srdma_read_resp_opcode(u32 idx, u32 npkts)
{
	if (npkts == 1)
		return SRDMA_OP_READ_RESP_ONLY;
	if (idx == 0)
		return SRDMA_OP_READ_RESP_FIRST;
	if (idx == npkts - 1)
		return SRDMA_OP_READ_RESP_LAST;
	return SRDMA_OP_READ_RESP_MIDDLE;
}

/*
 * Build and send one READ response packet. QP lock held: the read work
 * holds it for every packet it sends (SRDMA_READ_BURST at a time), so
 * that neither a reset nor the peer of a reconnection through RESET can
 * see the rest of an old READ.
 */
static int srdma_read_resp_pkt(struct srdma_qp *qp, struct srdma_read_job *job,
			       u32 off, u32 npkts, u32 msn)
{
	u32 idx = off / job->mtu;
	struct srdma_pkt pkt = {
		.opcode = srdma_read_resp_opcode(idx, npkts),
		.pkey = SRDMA_DEFAULT_PKEY,
		.dqpn = qp->attr.dest_qp_num,
		.psn = srdma_psn_add(job->psn, idx),
		.syndrome = SRDMA_AETH_ACK | SRDMA_AETH_CREDIT_INVALID,
		.msn = msn,
		.paylen = min(job->mtu, job->len - off),
	};
	struct srdma_payload_src src = {
		.iova = job->va + off,
		.serial = job->serial,
	};
	int err;

	lockdep_assert_held(&qp->lock);
	if (srdma_qp_is_xrc_tgt(qp))
		qp->xrc_pd = job->pd;	/* its XRC SRQ's, when accepted */
	if (pkt.paylen) {
		/* The MR the READ was accepted for, not one with its key. */
		src.mr = srdma_resp_mr(qp, job->rkey, src.iova, pkt.paylen,
				       IB_ACCESS_REMOTE_READ, &src.serial);
		if (!src.mr)
			return -EACCES;
	}
	err = srdma_data_xmit(qp, &pkt, &src, npkts == 1);
	if (src.mr)
		srdma_mr_put(src.mr);
	return err;
}

/*
 * A READ asked again (@dup) whose memory is no longer within reach: drop
 * it, with no NAK, and keep the QP. Most often it is a late copy of a
 * request the requester no longer needs: it got the responses, completed
 * the READ and sent a SEND with Invalidate for that rkey, which overtook
 * the copy (NVMe-oF does this for every write command); failing the QP
 * would kill a healthy connection. But the memory is ours to deregister
 * or invalidate at any time: a requester that really still waits gets no
 * answer, and fails on its retry limit (RETRY_EXC_ERR, not
 * REM_ACCESS_ERR; never, with an ACK timeout of 0). True if dropped.
 */
static bool srdma_read_refused(struct srdma_qp *qp, bool dup, u32 psn)
{
	if (!dup)
		return false;
	srdma_count(qp->sdev, SRDMA_CNT_DUP_READ_DROPPED);
	srdma_dbg_qp(qp, "READ psn %u asked again, memory gone: dropped\n",
		     psn);
	return true;
}

/*
 * The memory of READ @job went out of reach at byte @off while answering
 * it: NAK the PSN of that response (the QP fails), unless @job was asked
 * again. True if it was dropped instead, the QP going on.
 */
static bool srdma_read_access_err(struct srdma_qp *qp,
				  const struct srdma_read_job *job, u32 off)
{
	u32 psn = srdma_psn_add(job->psn, off / job->mtu);

	if (srdma_read_refused(qp, job->dup, psn))
		return true;
	srdma_count(qp->sdev, SRDMA_CNT_REM_ACCESS_ERR);
	srdma_resp_error(qp, SRDMA_NAK_REMOTE_ACCESS, psn);
	return false;
}

/**
 * srdma_rd_queue_reset() - drop every queued READ
 * @qp: the QP
 *
 * Also stops the READ being answered: the read work sees the generation
 * change and sends nothing more of it.
 *
 * Context: QP lock held.
 */
void srdma_rd_queue_reset(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	qp->rd_prod = 0;
	qp->rd_cons = 0;
	qp->rd_gen++;
	qp->rd_fault_at = false;
	qp->rd_next_at = false;
	qp->ack_deferred = false;
}

/* READ jobs queued and not yet answered; never negative. QP lock held. */
u32 srdma_rd_queued(struct srdma_qp *qp)
{
	s32 n;

	lockdep_assert_held(&qp->lock);
	n = (s32)(qp->rd_prod - qp->rd_cons);
	return n > 0 ? n : 0;
}

/*
 * READs queued at most: twice max_dest_rd_atomic. A READ asked again
 * (after a timeout) may still be queued when late responses to the
 * original let the requester send its next READ. A new READ or atomic
 * that finds the queue full drops one asked again (srdma_rd_evict_dup());
 * only a queue full of requests that came new is a peer ignoring the
 * limit.
 */
u32 srdma_rd_queue_max(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	return 2 * max_t(u32, qp->attr.max_dest_rd_atomic, 1);
}

/* The READ being answered (of generation @gen) is done. QP lock held. */
static void srdma_rd_queue_pop(struct srdma_qp *qp, u32 gen)
{
	lockdep_assert_held(&qp->lock);
	if (qp->rd_gen == gen && srdma_rd_queued(qp)) {
		qp->rd_cons++;
		qp->rd_fault_at = false;	/* where it stopped */
		qp->rd_next_at = false;
	}
}

/*
 * A READ behind the expected PSN is a duplicate only if it asks again for
 * part of a READ this QP accepted: same R_Key, from some response of it
 * (the VA at that response's offset) to at most its end. The MR serial of
 * the original goes into @serial. Anything else is dropped: it is not
 * ours to answer, and must never cost the connection. QP lock held.
 */
static bool srdma_rd_dup_ok(struct srdma_qp *qp, struct srdma_pkt *pkt,
			    u64 *serial)
{
	const struct srdma_read_job *h;
	u64 off;
	u32 i;
	int idx;

	lockdep_assert_held(&qp->lock);
	for (i = 0; qp->rd_hist && i <= qp->rd_hist_mask; i++) {
		h = &qp->rd_hist[i];
		if (!h->mtu || h->atomic_op || h->rkey != pkt->rkey)
			continue;
		idx = srdma_psn_diff(pkt->psn, h->psn);
		if (idx < 0 || (u32)idx >= srdma_npkts(h->len, h->mtu))
			continue;
		off = (u64)idx * h->mtu;
		if (pkt->va != h->va + off || pkt->dmalen > h->len - off)
			continue;
		*serial = h->serial;
		return true;
	}
	return false;
}

/* Remember READ @job, accepted new, for duplicates of it. QP lock held. */
static void srdma_rd_remember(struct srdma_qp *qp,
			      const struct srdma_read_job *job)
{
	lockdep_assert_held(&qp->lock);
	qp->rd_hist[qp->rd_hist_next++ & qp->rd_hist_mask] = *job;
}

/*
 * May READ request @pkt (@dup: behind the expected PSN) be answered? A
 * duplicate must ask again for part of a READ accepted, a new one needs
 * max_dest_rd_atomic and a length within the limits; the MR, if any bytes
 * are asked for, must allow remote reads, the QP in any case. The serial
 * of the MR goes to @serial. 0 or an error, the QP failed if the peer is
 * at fault.
 */
static int srdma_resp_read_check(struct srdma_qp *qp, struct srdma_pkt *pkt,
				 bool dup, u64 *serial)
{
	struct srdma_mr *mr;
	int err;

	if (dup && !srdma_rd_dup_ok(qp, pkt, serial)) {
		srdma_dbg_qp(qp, "READ psn %u matches no READ accepted\n",
			     pkt->psn);
		return -EINVAL;
	}
	if (!dup && !qp->rd_jobs) {
		srdma_dbg_qp(qp, "READ but max_dest_rd_atomic is 0\n");
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EINVAL;
	}
	if (!dup) {
		err = srdma_resp_dmalen(qp, pkt);
		if (err)
			return err;
	}
	if (!pkt->dmalen) {
		if (qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ)
			return 0;
		/* Revoked since (modify_qp): the same as memory gone. */
		if (srdma_read_refused(qp, dup, pkt->psn))
			return -EACCES;
		return srdma_resp_access_err(qp, pkt, pkt->va, 0, pkt->rkey,
					     true);
	}
	mr = srdma_resp_mr(qp, pkt->rkey, pkt->va, pkt->dmalen,
			   IB_ACCESS_REMOTE_READ, serial);
	if (!mr && srdma_read_refused(qp, dup, pkt->psn))
		return -EACCES;
	if (!mr)
		return srdma_resp_access_err(qp, pkt, pkt->va, pkt->dmalen,
					     pkt->rkey, true);
	srdma_mr_put(mr);
	return 0;
}

/*
 * Make room in a full READ queue for a new READ or atomic: drop the
 * oldest READ asked again that the read work is not answering (the one at
 * rd_cons). Such late copies can fill the queue between them, each of a
 * READ the requester has since completed, although it keeps within its
 * max_rd_atomic. The queue is in PSN order (srdma_rd_drop_stale()) and
 * the requester completes in that order, so it still waits on at most
 * max_rd_atomic - 1 of them, the newest: the oldest are stale. If it does
 * wait on the one dropped, it asks again. Counted in dup_read_dropped.
 * True if one went. QP lock held.
 */
static bool srdma_rd_evict_dup(struct srdma_qp *qp)
{
	u32 n = srdma_rd_queued(qp), i, j, psn;
	struct srdma_read_job *job;

	lockdep_assert_held(&qp->lock);
	for (i = 1; i < n; i++) {
		job = &qp->rd_jobs[(qp->rd_cons + i) & qp->rd_mask];
		if (!job->dup || job->atomic_op)
			continue;
		psn = job->psn;
		for (j = qp->rd_cons + i; j + 1 != qp->rd_prod; j++)
			qp->rd_jobs[j & qp->rd_mask] =
				qp->rd_jobs[(j + 1) & qp->rd_mask];
		qp->rd_prod--;
		srdma_count(qp->sdev, SRDMA_CNT_DUP_READ_DROPPED);
		srdma_dbg_qp(qp, "READ queue full: READ psn %u asked again dropped\n",
			     psn);
		return true;
	}
	return false;
}

/*
 * READ @pkt was asked again: the requester went back to its first missing
 * response and will ask again for everything after it, so queued requests
 * reaching that far are stale. Older ones are still wanted.
 */
static void srdma_rd_drop_stale(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	struct srdma_read_job *job;
	u32 last;

	lockdep_assert_held(&qp->lock);
	while (srdma_rd_queued(qp)) {
		job = &qp->rd_jobs[(qp->rd_prod - 1) & qp->rd_mask];
		last = srdma_psn_add(job->psn,
				     srdma_npkts(job->len, job->mtu) - 1);
		if (srdma_psn_diff(last, pkt->psn) < 0)
			break;
		qp->rd_prod--;
	}
	if (!srdma_rd_queued(qp))
		srdma_rd_queue_reset(qp);	/* stop the one answered */
	srdma_dbg_qp(qp, "READ psn %u asked again (epsn %u)\n", pkt->psn,
		     qp->epsn);
}

/*
 * Answer READ @job, a new one (not asked again), at once, in softirq. QP
 * lock held.
 */
static int srdma_resp_read_now(struct srdma_qp *qp, struct srdma_read_job *job)
{
	u32 npkts = srdma_npkts(job->len, job->mtu), msn, off, i;
	bool outer;
	int err;

	lockdep_assert_held(&qp->lock);
	/* The MSN counts this READ, never one asked again here, as done. */
	msn = srdma_resp_msn_next(qp);
	outer = srdma_batch_begin(qp);
	for (off = 0, i = 0; i < npkts; i++, off += job->mtu) {
		err = srdma_read_resp_pkt(qp, job, off, npkts, msn);
		if (err == -EAGAIN) {
			srdma_batch_end(qp, outer);
			/*
			 * On-demand pages not present: the read work faults
			 * them in and answers it whole (a response already
			 * sent goes again, a duplicate to the requester).
			 */
			qp->rd_prod++;
			srdma_queue_read_work(qp);
			return 0;
		}
		if (err == -EACCES) {
			srdma_batch_end(qp, outer);
			srdma_read_access_err(qp, job, off);
			return -EACCES;
		}
	}
	srdma_batch_end(qp, outer);
	return 0;
}

/*
 * Answer a READ request: short ones at once, in this softirq, when no
 * older READ is still being answered, it is not asked again, and the
 * QP's packets may leave from this CPU; others through the read work.
 * QP lock held.
 */
static int srdma_resp_read(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	bool dup = srdma_psn_diff(pkt->psn, qp->epsn) < 0;
	struct srdma_read_job *job;
	u64 serial = 0;
	int err;

	lockdep_assert_held(&qp->lock);
	err = srdma_resp_read_check(qp, pkt, dup, &serial);
	if (err)
		return err;
	if (dup)
		srdma_rd_drop_stale(qp, pkt);
	if (srdma_rd_queued(qp) >= srdma_rd_queue_max(qp) &&
	    (dup || !srdma_rd_evict_dup(qp))) {
		if (dup)	/* older ones still queued: it asks again later */
			return -EBUSY;
		srdma_dbg_qp(qp, "more than %u READs outstanding\n",
			     srdma_rd_queue_max(qp));
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EBUSY;
	}
	/*
	 * Every field: the slot may have held an atomic reply (atomic_op,
	 * orig), which a READ must not inherit.
	 */
	job = &qp->rd_jobs[qp->rd_prod & qp->rd_mask];
	*job = (struct srdma_read_job){
		.va = pkt->va,
		.rkey = pkt->rkey,
		.len = pkt->dmalen,
		.psn = pkt->psn,
		.mtu = qp->mtu,
		.serial = serial,
		.dup = dup,
		.pd = srdma_qp_pd(qp),
	};
	if (!dup)
		srdma_rd_remember(qp, job);
	/*
	 * Not a READ asked again, and for a QP whose packets leave from its
	 * CPU only there: the read work's last answers (to this READ's
	 * previous chunk, or the answer a duplicate restarts) may still be
	 * in flight from that CPU (a veth's backlog), and answered on the
	 * CPU of the request this one could overtake them.
	 */
	if (!dup && !srdma_rd_queued(qp) &&
	    !srdma_qp_off_tx_cpu(qp) &&
	    srdma_npkts(job->len, job->mtu) <= SRDMA_READ_INLINE_PKTS)
		return srdma_resp_read_now(qp, job);
	qp->rd_prod++;
	srdma_queue_read_work(qp);
	return 0;
}

/*
 * Send the answer to atomic @job with @msn: an ATOMIC ACKNOWLEDGE, or for
 * an ATOMIC WRITE a READ response ONLY of no data (IBTA 1.5). QP lock held.
 */
static void srdma_send_atomic_ack(struct srdma_qp *qp,
				  const struct srdma_read_job *job, u32 msn)
{
	struct srdma_pkt pkt = {
		.opcode = job->atomic_op == SRDMA_OP_ATOMIC_WRITE ?
			  SRDMA_OP_READ_RESP_ONLY : SRDMA_OP_ATOMIC_ACK,
		.pkey = SRDMA_DEFAULT_PKEY,
		.dqpn = qp->attr.dest_qp_num,
		.psn = job->psn,
		.syndrome = SRDMA_AETH_ACK | SRDMA_AETH_CREDIT_INVALID,
		.msn = msn,
		.orig = job->orig,
	};
	struct sk_buff *skb;
	u8 *payload;

	lockdep_assert_held(&qp->lock);
	/* Lost for want of memory: the requester asks again. */
	skb = srdma_alloc_pkt(qp, &pkt, &payload);
	if (skb)
		srdma_xmit(qp, skb);
}

/*
 * Answer atomic @job: at once, with @msn, unless READ responses queued
 * before it are still to go; then it waits its turn in the READ queue
 * (-EBUSY if that is full). QP lock held.
 */
static int srdma_atomic_reply(struct srdma_qp *qp,
			      const struct srdma_read_job *job, u32 msn)
{
	lockdep_assert_held(&qp->lock);
	if (!srdma_rd_queued(qp)) {
		srdma_send_atomic_ack(qp, job, msn);
		return 0;
	}
	if (srdma_rd_queued(qp) >= srdma_rd_queue_max(qp))
		return -EBUSY;
	qp->rd_jobs[qp->rd_prod++ & qp->rd_mask] = *job;
	srdma_queue_read_work(qp);
	return 0;
}

/* The replay cache entry of atomic or ATOMIC WRITE request @pkt. */
static struct srdma_read_job srdma_atomic_job(const struct srdma_qp *qp,
					      const struct srdma_pkt *pkt)
{
	struct srdma_read_job job = {
		.va = pkt->va,
		.rkey = pkt->rkey,
		.len = sizeof(u64),
		.psn = pkt->psn,
		.mtu = qp->mtu,
		.atomic_op = pkt->opcode,
	};

	return job;
}

/*
 * A new atomic request in sequence: refused as an invalid request without
 * responder resources, with a misaligned address or more READs and
 * atomics outstanding than the queue takes; as a remote access error if
 * the QP or the MR (its R_Key, PD, range of 8 bytes) does not allow
 * remote atomics. Otherwise it is carried out once, its result kept in
 * the replay cache (the READ history) and sent back. QP lock held.
 */
static int srdma_resp_atomic(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	struct srdma_read_job job = srdma_atomic_job(qp, pkt);
	struct srdma_mr *mr;
	u64 serial = 0;
	int err;

	lockdep_assert_held(&qp->lock);
	if (!qp->rd_jobs || !IS_ALIGNED(pkt->va, sizeof(u64)) ||
	    (srdma_rd_queued(qp) >= srdma_rd_queue_max(qp) &&
	     !srdma_rd_evict_dup(qp))) {
		srdma_dbg_qp(qp, "atomic psn %u at %#llx refused: %s\n",
			     pkt->psn, pkt->va,
			     !qp->rd_jobs ? "no responder resources" :
			     !IS_ALIGNED(pkt->va, sizeof(u64)) ?
			     "misaligned" : "too many outstanding");
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EINVAL;
	}
	mr = srdma_resp_mr(qp, pkt->rkey, pkt->va, sizeof(u64),
			   IB_ACCESS_REMOTE_ATOMIC, &serial);
	err = mr ? srdma_mr_atomic(mr, serial, pkt->va, pkt->opcode,
				   pkt->swap_add, pkt->compare, &job.orig) :
		   -EACCES;
	if (err == -EAGAIN)
		err = srdma_odp_fault_later(qp, mr, pkt->va, sizeof(u64),
					    SRDMA_ODP_KICK_NONE);
	if (mr) {
		job.serial = serial;
		srdma_mr_put(mr);
	}
	if (err == -EAGAIN)
		return srdma_resp_odp_miss(qp, pkt);
	if (err) {
		srdma_count(qp->sdev, SRDMA_CNT_REM_ACCESS_ERR);
		srdma_dbg_qp(qp, "atomic at %#llx rkey %#x refused\n",
			     pkt->va, pkt->rkey);
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_REMOTE_ACCESS,
				 IB_WC_REM_ACCESS_ERR);
		return -EACCES;
	}
	srdma_rd_remember(qp, &job);
	/* Room was checked above: this cannot fail. */
	return srdma_atomic_reply(qp, &job, srdma_resp_msn_next(qp));
}

/*
 * An ATOMIC WRITE in sequence (IBTA 1.5): checked as a WRITE ONLY of 8
 * bytes (R_Key, PD, the QP's and the MR's remote write right, range),
 * refused as an invalid request for any other length, a misaligned
 * address, no responder resources or a full READ queue; then its payload
 * is stored with one 64-bit exchange (srdma_mr_atomic()), and it is answered
 * as an atomic is, through the replay cache, with a READ response of no
 * data. A user MR alone takes it (a remote access error otherwise).
 */
static int srdma_resp_atomic_write(struct srdma_qp *qp, struct srdma_pkt *pkt,
				   struct sk_buff *skb, int payoff)
{
	struct srdma_read_job job = srdma_atomic_job(qp, pkt);
	struct srdma_mr *mr;
	u64 serial = 0, data;	/* serial: any MR, srdma_mr_check() sets it */
	int err;

	lockdep_assert_held(&qp->lock);
	if (!qp->rd_jobs || pkt->dmalen != sizeof(u64) ||
	    pkt->paylen != sizeof(u64) || !IS_ALIGNED(pkt->va, sizeof(u64)) ||
	    (srdma_rd_queued(qp) >= srdma_rd_queue_max(qp) &&
	     !srdma_rd_evict_dup(qp))) {
		srdma_dbg_qp(qp, "ATOMIC WRITE psn %u of %u bytes (%u carried) at %#llx refused\n",
			     pkt->psn, pkt->dmalen, pkt->paylen, pkt->va);
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EINVAL;
	}
	mr = srdma_resp_mr(qp, pkt->rkey, pkt->va, sizeof(u64),
			   IB_ACCESS_REMOTE_WRITE, &serial);
	if (!mr)
		return srdma_resp_access_err(qp, pkt, pkt->va, sizeof(u64),
					     pkt->rkey, false);
	err = skb_copy_bits(skb, payoff, &data, sizeof(data));
	if (!err)
		err = srdma_mr_atomic(mr, serial, pkt->va,
				      SRDMA_OP_ATOMIC_WRITE, data, 0,
				      &job.orig);
	if (err == -EAGAIN)
		err = srdma_odp_fault_later(qp, mr, pkt->va, sizeof(u64),
					    SRDMA_ODP_KICK_NONE);
	job.serial = serial;
	srdma_mr_put(mr);
	if (err == -EAGAIN)
		return srdma_resp_odp_miss(qp, pkt);
	if (err)
		return srdma_resp_access_err(qp, pkt, pkt->va, sizeof(u64),
					     pkt->rkey, false);
	srdma_rd_remember(qp, &job);
	/* Room was checked above: this cannot fail. */
	return srdma_atomic_reply(qp, &job, srdma_resp_msn_next(qp));
}

/*
 * An atomic request or ATOMIC WRITE behind the expected PSN: the
 * requester sent it again. It is never carried out twice. If the replay
 * cache holds it (the same PSN, opcode, R_Key and address), its answer
 * (for an atomic, with the value found the first time) goes back again,
 * after whatever older READ responses are still queued; anything newer in
 * the queue is stale (the requester went back to this PSN). Otherwise it
 * is dropped. QP lock held.
 */
static void srdma_resp_atomic_dup(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	const struct srdma_read_job *h;
	struct srdma_read_job job;
	u32 i;

	lockdep_assert_held(&qp->lock);
	/* Newest first: an older entry of the same PSN is from before a wrap. */
	for (i = 1; qp->rd_hist && i <= qp->rd_hist_mask + 1; i++) {
		h = &qp->rd_hist[(qp->rd_hist_next - i) & qp->rd_hist_mask];
		if (h->atomic_op != pkt->opcode || h->psn != pkt->psn ||
		    h->rkey != pkt->rkey || h->va != pkt->va)
			continue;
		job = *h;
		srdma_count(qp->sdev, SRDMA_CNT_ATOMIC_REPLAYS);
		srdma_rd_drop_stale(qp, pkt);
		if (srdma_atomic_reply(qp, &job, qp->msn))
			srdma_dbg_qp(qp, "atomic psn %u: replay waits\n",
				     pkt->psn);
		return;
	}
	srdma_count(qp->sdev, SRDMA_CNT_ATOMIC_REPLAY_MISS);
	srdma_dbg_qp(qp, "atomic psn %u not in the replay cache\n", pkt->psn);
}

/*
 * A request beyond the expected PSN: a gap. NAK once and drop until the
 * missing PSN comes. A PSN at or below the highest seen since means the
 * requester went back and its resend missed the gap too: NAK again, once
 * per such round.
 */
static void srdma_resp_gap(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	srdma_count(qp->sdev, SRDMA_CNT_RX_OUT_OF_SEQ);
	if (!qp->nak_sent || srdma_psn_diff(pkt->psn, qp->nak_hi_psn) <= 0) {
		qp->nak_sent = true;
		srdma_send_nak(qp, SRDMA_NAK_PSN_SEQ, qp->epsn);
	}
	qp->nak_hi_psn = pkt->psn;
}

/*
 * The PSN to ACK a duplicate SEND or WRITE @pkt for: the last one carried
 * out, unless that ends a READ or atomic, whose response the wire may have
 * lost: a plain ACK at that PSN completes it at rdma_rxe's requester,
 * without the data. The duplicate's own PSN is done and names no READ.
 */
static u32 srdma_dup_ack_psn(struct srdma_qp *qp, const struct srdma_pkt *pkt)
{
	u32 last = srdma_psn_prev(qp->epsn);

	return last == qp->rd_end_psn ? pkt->psn : last;
}

/* A request behind the expected PSN: never execute SEND or WRITE again. */
static void srdma_resp_dup(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	srdma_count(qp->sdev, SRDMA_CNT_RX_DUP);
	if (pkt->flags & SRDMA_F_READ)
		srdma_resp_read(qp, pkt);
	else if (pkt->flags & (SRDMA_F_ATOMIC | SRDMA_F_AWRITE))
		srdma_resp_atomic_dup(qp, pkt);
	else if (pkt->ackreq)
		srdma_send_ack_ok(qp, srdma_dup_ack_psn(qp, pkt));
}

/*
 * Request @pkt was carried out: expect the PSN after it (after its
 * responses for a READ, which also completes the message, as an atomic
 * does) and ACK it if asked to (an atomic has its own ACK).
 */
static void srdma_resp_advance(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	qp->resp_opcode = pkt->opcode;
	if (pkt->flags & (SRDMA_F_ATOMIC | SRDMA_F_AWRITE)) {
		qp->rd_end_psn = qp->epsn;
		qp->epsn = srdma_psn_add(qp->epsn, 1);
		srdma_resp_msg_done(qp);
		return;
	}
	if (pkt->flags & SRDMA_F_READ) {
		qp->epsn = srdma_psn_add(qp->epsn,
					 srdma_npkts(pkt->dmalen, qp->mtu));
		qp->rd_end_psn = srdma_psn_prev(qp->epsn);
		srdma_resp_msg_done(qp);
		return;
	}
	qp->epsn = srdma_psn_add(qp->epsn, 1);
	if (pkt->ackreq)
		srdma_send_ack_ok(qp, pkt->psn);
}

/*
 * How far behind the expected PSN a UC packet is taken as late or
 * duplicated. Beyond that, a FIRST or ONLY begins a new message.
 */
#define SRDMA_UC_LATE_WINDOW	1024

/*
 * UC: drop packet @pkt alone, outside the message in progress: the
 * message it belongs to is counted once, and once its LAST went by the
 * next dropped packet belongs to another message. QP lock held.
 */
static void srdma_uc_drop_pkt(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	srdma_uc_drop(qp);
	if (pkt->flags & SRDMA_F_LAST)
		qp->uc_dropping = false;
}

/*
 * A UC request (IBTA 9.8.3). The expected PSN moves only with a packet at
 * that PSN, or with a FIRST or ONLY that begins a new message: a PSN up to
 * SRDMA_UC_LATE_WINDOW behind it is a packet that came late or twice,
 * dropped, so that messages are placed in order and at most once; at any
 * other PSN a FIRST or ONLY begins the next message there (packets were
 * lost; the message in progress is dropped), while a MIDDLE or LAST is
 * dropped alone. A stray or spoofed packet thus never moves the expected
 * PSN away from the peer's. No ACK, no NAK, no RNR NAK. QP lock held.
 */
static void srdma_uc_rcv(struct srdma_qp *qp, struct srdma_pkt *pkt,
			 struct sk_buff *skb, int payoff)
{
	bool in_msg = qp->resp_opcode != SRDMA_OP_ACK &&
		      !(srdma_op_flags(qp->resp_opcode) & SRDMA_F_LAST);
	int d = srdma_psn_diff(pkt->psn, qp->epsn);
	int err;

	lockdep_assert_held(&qp->lock);
	if (d < 0 && d >= -SRDMA_UC_LATE_WINDOW) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_DUP);
		return;
	}
	if (d) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_OUT_OF_SEQ);
		srdma_dbg_qp(qp, "UC psn %u, expected %u\n", pkt->psn,
			     qp->epsn);
		if (!(pkt->flags & SRDMA_F_FIRST)) {
			/* the message in progress, if any, is left alone */
			if (!in_msg)
				srdma_uc_drop_pkt(qp, pkt);
			return;
		}
	}
	qp->epsn = srdma_psn_add(pkt->psn, 1);
	if (in_msg && (d || (pkt->flags & SRDMA_F_FIRST))) {
		srdma_uc_drop(qp);		/* a packet of it went missing */
		in_msg = false;
	}
	if (pkt->flags & SRDMA_F_FIRST) {
		qp->uc_dropping = false;	/* a new message begins */
	} else if (!in_msg) {
		srdma_uc_drop_pkt(qp, pkt);	/* its beginning went missing */
		return;
	}
	if (!srdma_resp_seq_ok(qp, pkt)) {
		srdma_dbg_qp(qp, "UC opcode %#x out of sequence after %#x\n",
			     pkt->opcode, qp->resp_opcode);
		srdma_uc_drop_pkt(qp, pkt);
		return;
	}
	if (pkt->flags & SRDMA_F_SEND)
		err = srdma_resp_send(qp, pkt, skb, payoff);
	else
		err = srdma_resp_write(qp, pkt, skb, payoff);
	if (!err)
		qp->resp_opcode = pkt->opcode;
	else if (pkt->flags & SRDMA_F_LAST)
		qp->uc_dropping = false;	/* its message is over */
}

/*
 * An XRC request for target QP @qp: find the XRC SRQ its XRCETH names,
 * counted in qp->xrc_srq until srdma_resp_xrc_end(), with its PD in
 * qp->xrc_pd. The expected packet must name an SRQ of the QP's domain,
 * the one its message began with and the one of the receive the QP holds,
 * if any: else an invalid request, fatal. Other packets (duplicates,
 * beyond a gap) naming no such SRQ are dropped. True if @pkt goes on.
 */
static bool srdma_resp_xrc_begin(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	bool cur = !srdma_psn_diff(pkt->psn, qp->epsn);
	u32 srqn = pkt->xrc_srqn;
	struct srdma_srq *srq;

	lockdep_assert_held(&qp->lock);
	srq = srdma_xsrq_get(qp->sdev, srqn, qp->ibqp.xrcd);
	if (srq && cur &&
	    ((!(pkt->flags & SRDMA_F_FIRST) && srqn != qp->xrc_srqn) ||
	     (qp->xrc_rq_srqn && (srqn != qp->xrc_rq_srqn ||
				  srq->serial != qp->xrc_rq_serial)))) {
		srdma_dbg_qp(qp, "psn %u: XRC SRQ %u, but the message or its receive is SRQ %u's\n",
			     pkt->psn, srqn, qp->xrc_rq_srqn ?: qp->xrc_srqn);
		srdma_srq_put(srq);
		srq = NULL;
	} else if (!srq) {
		srdma_dbg_qp(qp, "psn %u: no XRC SRQ %u in the QP's domain\n",
			     pkt->psn, srqn);
	}
	if (!srq) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		if (cur)
			srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
					 IB_WC_REM_INV_REQ_ERR);
		return false;
	}
	if (cur && (pkt->flags & SRDMA_F_FIRST))
		qp->xrc_srqn = srqn;
	qp->xrc_srq = srq;
	qp->xrc_pd = srq->ibsrq.pd;
	return true;
}

/* Done with the packet srdma_resp_xrc_begin() took an XRC SRQ for. */
static void srdma_resp_xrc_end(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	srdma_srq_put(qp->xrc_srq);
	qp->xrc_srq = NULL;
	qp->xrc_pd = NULL;
}

static void srdma_resp_rc(struct srdma_qp *qp, struct srdma_pkt *pkt,
			  struct sk_buff *skb, int payoff);

/**
 * srdma_resp_rcv() - take a SEND, WRITE, READ or atomic request
 * @qp: the QP it is for
 * @pkt: the packet, parsed and checked by srdma_rcv()
 * @skb: the packet's skb
 * @payoff: where its payload starts in @skb
 *
 * A request in sequence is carried out and acknowledged if it asks; a gap
 * draws a sequence NAK, a duplicate an ACK (a READ is answered again, an
 * atomic from the replay cache). A
 * request the peer had no right to make draws a NAK and moves the QP to
 * ERR.
 *
 * An XRC target QP's request also names the XRC SRQ it is for.
 *
 * Context: softirq, QP lock held (srdma_rcv() takes it); or, for a direct
 * placement (srdma_rcv_direct()), a doorbell with BHs off.
 */
void srdma_resp_rcv(struct srdma_qp *qp, struct srdma_pkt *pkt,
		    struct sk_buff *skb, int payoff)
{
	lockdep_assert_held(&qp->lock);
	if (!srdma_qp_rq_running(qp)) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_STATE);
		return;
	}
	srdma_qp_note_rx_req(qp);
	if (pkt->paylen > qp->mtu) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		return;
	}
	if (srdma_qp_is_uc(qp)) {
		srdma_uc_rcv(qp, pkt, skb, payoff);
		return;
	}
	if (!srdma_qp_is_xrc_tgt(qp)) {
		srdma_resp_rc(qp, pkt, skb, payoff);
	} else if (srdma_resp_xrc_begin(qp, pkt)) {
		srdma_resp_rc(qp, pkt, skb, payoff);
		srdma_resp_xrc_end(qp);
	}
}

/* A request for an RC QP, or an XRC target QP with its SRQ found. */
static void srdma_resp_rc(struct srdma_qp *qp, struct srdma_pkt *pkt,
			  struct sk_buff *skb, int payoff)
{
	int d, err;

	d = srdma_psn_diff(pkt->psn, qp->epsn);
	if (d > 0) {
		srdma_resp_gap(qp, pkt);
		return;
	}
	if (d < 0) {
		srdma_resp_dup(qp, pkt);
		return;
	}
	qp->nak_sent = false;

	if (!srdma_resp_seq_ok(qp, pkt)) {
		srdma_dbg_qp(qp, "opcode %#x out of sequence after %#x\n",
			     pkt->opcode, qp->resp_opcode);
		srdma_resp_fatal(qp, pkt, SRDMA_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return;
	}
	if (pkt->flags & SRDMA_F_SEND)
		err = srdma_resp_send(qp, pkt, skb, payoff);
	else if (pkt->flags & SRDMA_F_AWRITE)
		err = srdma_resp_atomic_write(qp, pkt, skb, payoff);
	else if (pkt->flags & SRDMA_F_WRITE)
		err = srdma_resp_write(qp, pkt, skb, payoff);
	else if (pkt->flags & SRDMA_F_ATOMIC)
		err = srdma_resp_atomic(qp, pkt);
	else
		err = srdma_resp_read(qp, pkt);
	if (!err)
		srdma_resp_advance(qp, pkt);
}

/*
 * How often the read work faults in the on-demand pages of one READ
 * response before it gives up (a remote access error): each time, an
 * invalidation took them again before the response was built.
 */
#define SRDMA_READ_ODP_TRIES	32
/* READ responses the read work sends per hold of the QP lock. */
#define SRDMA_READ_BURST	16
/*
 * READ responses one run of the read work sends before it queues itself
 * again, behind the other work of its CPU (as SRDMA_RC_BUDGET).
 */
#define SRDMA_READ_BUDGET	64
/* How long the read work sleeps for softirq work left to ksoftirqd. */
#define SRDMA_READ_YIELD_US	50
/*
 * How long the read work sends without a break at most, and then rests:
 * the CPU's other tasks get about 5% of it, as real-time throttling
 * leaves them by default (sched_rt_runtime_us, 950 ms a second).
 */
#define SRDMA_READ_SLICE_NS	(19 * NSEC_PER_MSEC)
#define SRDMA_READ_REST_US	1000
/* How much of a READ the read work faults in at a time. */
#define SRDMA_READ_ODP_SPAN	SZ_1M

/*
 * READ @job (at rd_cons) found on-demand pages missing at
 * byte @off: queue their fault (a bounded span from there), in the MR it
 * was accepted for, and stop the read work, which the fault's end runs
 * again (srdma_read_kick()) to go on at @off. The fault is the
 * responder's, one at a time (srdma_odp_fault_later()): it holds no
 * reference on the QP, so that destroying the QP never waits for memory
 * that does not come. QP lock held.
 * If no fault could be queued (no memory, or the QP's faults all hang),
 * the READ waits for the requester to ask for it again.
 * Return: -EAGAIN (stop, the fault is queued or another one is), or
 * -EFAULT if the pages cannot come in (not mapped, not readable, gone,
 * or SRDMA_READ_ODP_TRIES faults there were each undone before the
 * response was built): an access error.
 */
static int srdma_read_fault(struct srdma_qp *qp,
			    const struct srdma_read_job *job, u32 off)
{
	struct srdma_mr *mr;
	bool same;
	int err = -EFAULT;

	lockdep_assert_held(&qp->lock);
	/* Another miss's fault is under way: its end runs the work again. */
	if (qp->odp_rsp_queued)
		return -EAGAIN;
	same = qp->rd_fault_at && qp->rd_fault_off == off;
	if (same && qp->rd_fault_tries >= SRDMA_READ_ODP_TRIES)
		return -EFAULT;
	mr = srdma_mr_get(qp->sdev, job->rkey, true);
	if (!mr)
		return -EFAULT;
	if (mr->odp && READ_ONCE(mr->serial) == job->serial)
		err = srdma_odp_fault_later(qp, mr, job->va + off,
					    min_t(u32, job->len - off,
						  SRDMA_READ_ODP_SPAN),
					    SRDMA_ODP_KICK_NONE);
	srdma_mr_put(mr);
	/* A try counts only for a fault queued for this response. */
	if (err == -EAGAIN && qp->odp_rsp_queued) {
		if (!same) {
			qp->rd_fault_at = true;
			qp->rd_fault_off = off;
			qp->rd_fault_tries = 0;
		}
		qp->rd_fault_tries++;
	}
	if (err == -EFAULT)
		srdma_dbg_qp(qp, "READ psn %u: fault of %#llx failed\n",
			     job->psn, job->va + off);
	return err;
}

/**
 * srdma_read_kick() - Run the read work again after a responder's fault.
 * @qp: the QP
 *
 * Context: QP lock held.
 */
void srdma_read_kick(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	if (srdma_qp_rq_running(qp) && srdma_rd_queued(qp))
		srdma_queue_read_work(qp);
}

/*
 * Give the CPU up between bursts of READ responses, unlocked. The read
 * work runs at high priority, and softirq work that local_bh_enable()
 * leaves to a runnable ksoftirqd (nice 0; Linux before 6.5 does) waits
 * for it: the responses a veth queues on this CPU's backlog, or a NIC's
 * transmit completions, pile up and are dropped, and timers (the QP's
 * own retransmit and pace timers among them) are late. Nothing else holds
 * READ responses back (no window): while softirq work of this CPU waits,
 * sleep, so that ksoftirqd runs. And a peer that keeps asking would keep
 * it busy, a nice-0 task on its CPU getting about 1%: after
 * SRDMA_READ_SLICE_NS of sending without a break it rests.
 */
static void srdma_read_yield(struct srdma_qp *qp)
{
	unsigned long pending;

	/* Signed: another CPU's clock (tx_cpu offline) may be behind. */
	if ((s64)(local_clock() - qp->rd_busy_since) >
	    (s64)SRDMA_READ_SLICE_NS) {
		srdma_count(qp->sdev, SRDMA_CNT_READ_RESTS);
		usleep_range(SRDMA_READ_REST_US, SRDMA_READ_REST_US + 100);
		qp->rd_busy_since = local_clock();
		return;
	}
	preempt_disable();
	pending = local_softirq_pending();
	preempt_enable();
	if (pending)
		usleep_range(SRDMA_READ_YIELD_US, 2 * SRDMA_READ_YIELD_US);
	else
		cond_resched();
}

/*
 * Where the read work starts READ @job at rd_cons: where it stopped for a
 * fault or at the end of its last run's budget, else at its first byte.
 * QP lock held.
 */
static u32 srdma_read_resume(struct srdma_qp *qp,
			     const struct srdma_read_job *job)
{
	lockdep_assert_held(&qp->lock);
	if (qp->rd_fault_at && qp->rd_fault_off < job->len &&
	    !(qp->rd_fault_off % job->mtu))
		return qp->rd_fault_off;
	if (qp->rd_next_at && qp->rd_next_off < job->len &&
	    !(qp->rd_next_off % job->mtu))
		return qp->rd_next_off;
	return 0;
}

/**
 * srdma_read_work() - answer the queued READs
 * @work: the QP's read_work
 *
 * SRDMA_READ_BURST packets at a time under the QP lock (one local
 * delivery batch), giving the CPU up in between, and SRDMA_READ_BUDGET a
 * run: then it queues itself again, to go on where it stopped (rd_next_off)
 * after the other work of its CPU. On-demand pages not
 * present stop it until their fault is done (srdma_read_fault()).
 * Stops as soon as the queue is reset (flush, RESET, a READ asked again, a
 * lower max_dest_rd_atomic than what is queued) or the QP leaves the states that
 * answer requests, so nothing of an old READ is ever sent after that, nor
 * to the peer of a reconnection through RESET (an address change SQD ->
 * SQD keeps the connection, and its READs go to the new address).
 *
 * Context: process context (srdma_tx_wq, on qp->tx_cpu); takes the QP
 * lock.
 */
void srdma_read_work(struct work_struct *work)
{
	struct srdma_qp *qp = container_of(work, struct srdma_qp, read_work);
	struct srdma_read_job job;
	u32 off, npkts, msn, gen, burst = 0, sent = 0;
	bool outer, again = false;
	int err;

	/*
	 * Queued again at once by the last run, or idle for less than a
	 * rest since (a peer asking for the next READ as soon as it has the
	 * last one would otherwise never see a rest): still busy since then.
	 */
	if (!qp->rd_busy &&
	    (s64)(local_clock() - qp->rd_idle_at) >=
	    (s64)SRDMA_READ_REST_US * NSEC_PER_USEC)
		qp->rd_busy_since = local_clock();
	spin_lock_bh(&qp->lock);
	outer = srdma_batch_begin(qp);
	while (srdma_qp_rq_running(qp) && srdma_rd_queued(qp)) {
		if (sent >= SRDMA_READ_BUDGET) {
			again = true;
			goto out_stop;
		}
		job = qp->rd_jobs[qp->rd_cons & qp->rd_mask];
		msn = qp->msn;
		gen = qp->rd_gen;
		if (job.atomic_op) {
			/* The READ responses before it have gone. */
			srdma_send_atomic_ack(qp, &job, msn);
			srdma_rd_queue_pop(qp, gen);
			continue;
		}
		srdma_dbg_qp(qp, "READ job psn %u len %u gen %u\n", job.psn,
			     job.len, gen);

		npkts = srdma_npkts(job.len, job.mtu);
		for (off = srdma_read_resume(qp, &job);; off += job.mtu) {
			err = srdma_read_resp_pkt(qp, &job, off, npkts, msn);
			/* On-demand pages not present: fault them, stop. */
			if (err == -EAGAIN &&
			    srdma_read_fault(qp, &job, off) == -EAGAIN)
				goto out_stop;
			if (err == -EACCES || err == -EAGAIN) {
				/* Dropped: on to the next one. */
				if (srdma_read_access_err(qp, &job, off))
					srdma_rd_queue_pop(qp, gen);
				break;
			}
			sent++;
			if (job.len - off <= job.mtu) {
				/*
				 * Retire it before the lock is dropped: the
				 * last response may reach the requester, and
				 * its next READ come back, in that window.
				 */
				srdma_rd_queue_pop(qp, gen);
				break;
			}
			if (sent >= SRDMA_READ_BUDGET) {
				/* The rest in the next run, from here. */
				qp->rd_next_off = off + job.mtu;
				qp->rd_next_at = true;
				qp->rd_fault_at = false;
				again = true;
				goto out_stop;
			}
			/* A batch's worth at a time under the lock. */
			if (++burst < SRDMA_READ_BURST)
				continue;
			burst = 0;
			srdma_batch_end(qp, outer);
			spin_unlock_bh(&qp->lock);
			srdma_read_yield(qp);
			spin_lock_bh(&qp->lock);
			outer = srdma_batch_begin(qp);
			if (qp->rd_gen != gen || !srdma_qp_rq_running(qp))
				break;
		}
	}
	/* The ACK that waited for these READ responses. */
	if (qp->ack_deferred && !srdma_rd_queued(qp) &&
	    srdma_qp_rq_running(qp)) {
		qp->ack_deferred = false;
		srdma_send_ack_msn(qp, srdma_ack_syndrome(qp),
				   qp->ack_deferred_psn, qp->ack_deferred_msn);
	}
out_stop:
	srdma_batch_end(qp, outer);
	spin_unlock_bh(&qp->lock);
	qp->rd_busy = again;
	if (!again) {
		qp->rd_idle_at = local_clock();
		return;
	}
	srdma_read_yield(qp);
	srdma_queue_read_work(qp);
}

/*
 * The GRH area of a UD receive (IBTA 11.4.1.2, and annex A17 for RoCEv2):
 * the IPv6 header as received, or 20 zero bytes and then the IPv4 header.
 * ib_init_ah_attr_from_wc() and ibv_init_ah_from_wc() build a reply AH
 * from it.
 */
static void srdma_ud_grh(struct sk_buff *skb, bool ipv6, u8 *grh)
{
	if (ipv6) {
		memcpy(grh, ipv6_hdr(skb), SRDMA_GRH_LEN);
		return;
	}
	memset(grh, 0, SRDMA_GRH_LEN - SRDMA_IPV4_HDR_LEN);
	memcpy(grh + SRDMA_GRH_LEN - SRDMA_IPV4_HDR_LEN, ip_hdr(skb),
	       SRDMA_IPV4_HDR_LEN);
}

/*
 * Complete the UD receive at rq.cons. A failure, the local user's own
 * (a bad lkey in its receive), moves the QP to ERR.
 */
static void srdma_ud_recv_done(struct srdma_qp *qp, struct srdma_pkt *pkt,
			       enum ib_wc_status status, u32 byte_len,
			       bool ipv6, const struct net_device *in)
{
	struct srdma_recv_wqe *wqe = srdma_ring_slot(&qp->rq, qp->rq.cons);
	struct ib_wc wc = {
		.wr_id = wqe->wr_id,
		.status = status,
		.opcode = IB_WC_RECV,
		.byte_len = byte_len,
		.qp = &qp->ibqp,
		.src_qp = pkt->sqpn,
		.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE,
		.network_hdr_type = ipv6 ? RDMA_NETWORK_IPV6 : RDMA_NETWORK_IPV4,
		.pkey_index = 0,
		.port_num = SRDMA_PORT_NUM,
	};

	lockdep_assert_held(&qp->lock);
	if (pkt->flags & SRDMA_F_IMM) {
		wc.wc_flags |= IB_WC_WITH_IMM;
		wc.ex.imm_data = (__force __be32)pkt->imm;
	}
	/*
	 * In through a VLAN upper of the device's netdev: its VLAN ID, with
	 * which ib_init_ah_attr_from_wc() finds the GID it was sent to (the
	 * MAD layer's replies, and rdma_cm over a VLAN).
	 */
	if (in && is_vlan_dev(in)) {
		wc.wc_flags |= IB_WC_WITH_VLAN;
		wc.vlan_id = vlan_dev_vlan_id(in);
	}
	if (status != IB_WC_SUCCESS) {
		wc.byte_len = 0;
		wc.wc_flags = 0;
	}
	srdma_rq_complete(qp, &wc, pkt->se);
	if (status != IB_WC_SUCCESS)
		srdma_qp_error(qp);
}

/*
 * Place a UD datagram into the receive at rq.cons, which is large enough
 * for both: the GRH area, then the payload. 0, -EAGAIN if a page of an
 * on-demand paging MR is not present (the datagram is dropped, the
 * receive stays), or -EACCES for a bad receive buffer.
 */
static int srdma_ud_place(struct srdma_qp *qp, struct srdma_pkt *pkt,
			  struct sk_buff *skb, int payoff, bool ipv6)
{
	struct srdma_recv_wqe *wqe = srdma_ring_slot(&qp->rq, qp->rq.cons);
	u8 grh[SRDMA_GRH_LEN];
	int err;

	srdma_ud_grh(skb, ipv6, grh);
	err = srdma_sge_copy(qp, wqe->sge, wqe->num_sge, 0, grh, NULL, 0,
			     SRDMA_GRH_LEN, true, SRDMA_ODP_KICK_NONE);
	if (!err)
		err = srdma_sge_copy(qp, wqe->sge, wqe->num_sge,
				     SRDMA_GRH_LEN, NULL, skb, payoff,
				     pkt->paylen, true, SRDMA_ODP_KICK_NONE);
	if (err == -EAGAIN) {
		srdma_dbg_qp(qp, "UD receive: on-demand page not present, datagram dropped\n");
		return err;
	}
	if (err) {
		srdma_dbg_qp(qp, "receive buffer: local protection error\n");
		return -EACCES;
	}
	return 0;
}

/*
 * May @qp take UD datagram @pkt at all? Not in a state that receives
 * nothing, with a payload over the port's active MTU (IP reassembly can
 * deliver up to 64 KB), with a Q_Key other than the QP's, or to the GSI
 * QP with a payload that is not one MAD. Each is dropped and counted,
 * before the receive queue is looked at.
 */
static bool srdma_ud_acceptable(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	if (!srdma_qp_rq_running(qp)) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_STATE);
		return false;
	}
	if (pkt->paylen > srdma_active_mtu(qp->sdev)) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_UD_OVER_MTU);
		srdma_dbg_qp(qp, "UD SEND of %u bytes from QPN %u over the MTU\n",
			     pkt->paylen, pkt->sqpn);
		return false;
	}
	if (pkt->qkey != qp->attr.qkey) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_QKEY_VIOL);
		srdma_dbg_qp(qp, "Q_Key %#x from QPN %u, expected %#x\n",
			     pkt->qkey, pkt->sqpn, qp->attr.qkey);
		return false;
	}
	/*
	 * A MAD is always 256 bytes. The MAD layer reuses its receive
	 * buffers and reads all 256: a shorter datagram would hand it the
	 * tail of an earlier MAD (and through umad, to user space).
	 */
	if (qp->ibqp.qp_type == IB_QPT_GSI && pkt->paylen != IB_MGMT_MAD_SIZE) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		srdma_dbg_qp(qp, "MAD of %u bytes from QPN %u\n",
			     pkt->paylen, pkt->sqpn);
		return false;
	}
	return true;
}

/**
 * srdma_ud_rcv() - take a UD datagram
 * @qp: the UD QP it is for
 * @pkt: the datagram's headers (SEND ONLY, with or without immediate)
 * @skb: the packet
 * @payoff: offset of the payload in @skb
 * @ipv6: it came over IPv6
 *
 * Dropped, and counted, in a state that receives nothing, with a Q_Key
 * other than the QP's, with a payload over the port's MTU, with no
 * receive posted (UD has no RNR), or when the oldest receive cannot hold
 * the GRH area and the payload: then the receive stays posted for the
 * next datagram, and the QP in RTS, as rdma_rxe does. Anyone who can
 * reach the port may send a UD QP anything; nothing a peer sends may
 * complete a receive in error or stop the QP. Otherwise the datagram
 * completes the oldest receive, with the GRH area and the payload.
 *
 * Context: softirq, QP lock held.
 */
void srdma_ud_rcv(struct srdma_qp *qp, struct srdma_pkt *pkt,
		  struct sk_buff *skb, int payoff, bool ipv6)
{
	struct srdma_recv_wqe *wqe;
	int err;

	lockdep_assert_held(&qp->lock);
	if (!srdma_ud_acceptable(qp, pkt))
		return;
	srdma_qp_note_rx_req(qp);
	if (!srdma_rq_ready(qp)) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_UD_NO_RECV);
		return;
	}
	/* paylen is at most the MTU here: no overflow. */
	wqe = srdma_ring_slot(&qp->rq, qp->rq.cons);
	if (pkt->paylen + SRDMA_GRH_LEN > wqe->length) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_UD_SHORT_BUF);
		srdma_dbg_qp(qp, "UD SEND of %u bytes, receive holds %u with the GRH\n",
			     pkt->paylen, wqe->length);
		return;
	}
	err = srdma_ud_place(qp, pkt, skb, payoff, ipv6);
	if (err == -EAGAIN)
		return;		/* unreliable: as if the wire lost it */
	srdma_ud_recv_done(qp, pkt, err ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS,
			   pkt->paylen + SRDMA_GRH_LEN, ipv6, skb->dev);
}
