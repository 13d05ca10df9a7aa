// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma completer: the requester's receive side. Handles ACKs, NAKs and
 * READ responses in the softirq that received them, retires send work
 * requests and keeps the window moving.
 */
#include <linux/skbuff.h>

#include "srdma.h"

/* The first READ not yet fully answered; QP lock held. */
static struct srdma_send_wqe *srdma_pending_read(struct srdma_qp *qp)
{
	struct srdma_send_wqe *wqe;
	u32 i;

	for (i = qp->sq.cons; i != qp->sq.prod; i++) {
		wqe = srdma_ring_slot(&qp->sq, i);
		if (!wqe->started)
			break;
		if (wqe->opcode == IB_WR_RDMA_READ && !wqe->done)
			return wqe;
	}
	return NULL;
}

/*
 * Everything up to and including @psn is acknowledged: retire finished
 * work requests in order. A READ retires only once its data is placed.
 */
static void srdma_comp_ack(struct srdma_qp *qp, u32 psn)
{
	struct srdma_send_wqe *wqe;
	bool progress = false;
	u32 una = srdma_psn_add(psn, 1);

	while (qp->sq.cons != qp->sq.prod) {
		wqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
		if (!wqe->started)
			break;
		if (wqe->opcode == IB_WR_RDMA_READ) {
			if (!wqe->done)
				break;
		} else if (srdma_psn_diff(psn, wqe->last_psn) < 0) {
			break;
		}
		/* READs answered earlier may retire past @psn. */
		if (srdma_psn_diff(wqe->last_psn, una) >= 0)
			una = srdma_psn_add(wqe->last_psn, 1);
		srdma_req_complete(qp, wqe, IB_WC_SUCCESS);
		progress = true;
		if (qp->state == IB_QPS_ERR)
			return;
	}

	/*
	 * The oldest PSN still unacknowledged: never past the first missing
	 * READ response, and exactly that once its READ is the oldest work
	 * request (its responses may have run ahead of an older READ's).
	 */
	wqe = srdma_pending_read(qp);
	if (wqe && (srdma_psn_diff(una, wqe->rd_next_psn) > 0 ||
		    wqe == srdma_ring_slot(&qp->sq, qp->sq.cons)))
		una = wqe->rd_next_psn;
	if (srdma_psn_diff(una, qp->una_psn) > 0) {
		srdma_cwnd_ack(qp, (u32)srdma_psn_diff(una, qp->una_psn));
		qp->una_psn = una;
		srdma_rtt_sample(qp, una);
		progress = true;
	}
	if (progress) {
		qp->retry_left = qp->attr.retry_cnt;
		qp->rnr_left = qp->attr.rnr_retry;
		qp->rto_backoff = 0;
		qp->tlp_sent = false;
		qp->last_progress = jiffies;
		if (qp->una_psn == qp->next_psn && !qp->rnr_wait)
			del_timer(&qp->retrans_timer);
		else if (!qp->rnr_wait)
			srdma_arm_timer(qp);
	}
}

/* The WQE whose PSN range holds @psn, if started. */
static struct srdma_send_wqe *srdma_wqe_of_psn(struct srdma_qp *qp, u32 psn)
{
	struct srdma_send_wqe *wqe;
	u32 i;

	for (i = qp->sq.cons; i != qp->sq.prod; i++) {
		wqe = srdma_ring_slot(&qp->sq, i);
		if (!wqe->started)
			return NULL;
		if (srdma_psn_diff(psn, wqe->first_psn) >= 0 &&
		    srdma_psn_diff(psn, wqe->last_psn) <= 0)
			return wqe;
	}
	return NULL;
}

/*
 * A NAK for @psn: everything before it is acknowledged, and the request
 * holding @psn failed with @status. Older READs still waiting for
 * responses will never get them (the responder stopped): they are
 * flushed, in order, before the failed request takes the blame.
 */
static void srdma_comp_fail(struct srdma_qp *qp, u32 psn,
			    enum ib_wc_status status)
{
	struct srdma_send_wqe *wqe, *failed;

	srdma_comp_ack(qp, srdma_psn_prev(psn));
	if (qp->state == IB_QPS_ERR || qp->sq.cons == qp->sq.prod)
		return;
	failed = srdma_wqe_of_psn(qp, psn);
	for (;;) {
		wqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
		if (!wqe->started)
			return;
		if (!failed || wqe == failed) {
			srdma_req_complete(qp, wqe, status);
			return;
		}
		srdma_req_complete(qp, wqe, IB_WC_WR_FLUSH_ERR);
		if (qp->sq.cons == qp->sq.prod)
			return;
	}
}

static void srdma_comp_aeth(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	u8 syn = pkt->syndrome;

	switch (syn & SRDMA_AETH_KIND_MASK) {
	case SRDMA_AETH_ACK:
		srdma_comp_ack(qp, pkt->psn);
		break;
	case SRDMA_AETH_RNR_NAK:
		srdma_count(qp->sdev, SRDMA_CNT_RNR_NAK_RCVD);
		srdma_comp_ack(qp, srdma_psn_prev(pkt->psn));
		if (qp->state == IB_QPS_ERR)
			break;
		if (!qp->rnr_left) {
			srdma_err_qp(qp, "receiver not ready after %u retries\n",
				     qp->attr.rnr_retry);
			srdma_comp_fail(qp, pkt->psn, IB_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		if (qp->attr.rnr_retry != 7)
			qp->rnr_left--;
		srdma_req_rewind(qp, pkt->psn);
		srdma_req_rnr_wait(qp, syn & 0x1f);
		break;
	case SRDMA_AETH_NAK:
		srdma_count(qp->sdev, SRDMA_CNT_NAK_RCVD);
		switch (syn & 0x1f) {
		case SRDMA_NAK_PSN_SEQ:
			srdma_comp_ack(qp, srdma_psn_prev(pkt->psn));
			if (qp->state == IB_QPS_ERR)
				break;
			srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
			srdma_cwnd_loss(qp);
			srdma_req_rewind(qp, pkt->psn);
			break;
		case SRDMA_NAK_REMOTE_ACCESS:
			srdma_comp_fail(qp, pkt->psn, IB_WC_REM_ACCESS_ERR);
			break;
		case SRDMA_NAK_INVALID_REQ:
			srdma_comp_fail(qp, pkt->psn, IB_WC_REM_INV_REQ_ERR);
			break;
		default:
			srdma_comp_fail(qp, pkt->psn, IB_WC_REM_OP_ERR);
			break;
		}
		break;
	default:
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		break;
	}
}

static void srdma_comp_read_resp(struct srdma_qp *qp, struct srdma_pkt *pkt,
				 struct sk_buff *skb, int payoff)
{
	struct srdma_send_wqe *wqe = srdma_wqe_of_psn(qp, pkt->psn);
	u32 idx, off, want;
	bool first, last;
	int err;

	if (!wqe || wqe->opcode != IB_WR_RDMA_READ || wqe->done) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_DUP);
		return;
	}
	if (pkt->psn != wqe->rd_next_psn) {
		if (srdma_psn_diff(pkt->psn, wqe->rd_next_psn) < 0) {
			srdma_count(qp->sdev, SRDMA_CNT_RX_DUP);
			return;
		}
		/* A response was lost: ask again from the first missing,
		 * once per gap; the timer covers a lost re-request.
		 */
		srdma_count(qp->sdev, SRDMA_CNT_RX_OUT_OF_SEQ);
		if (qp->rd_gap_psn != wqe->rd_next_psn) {
			srdma_dbg_qp(qp, "READ response %u lost, asking again\n",
				     wqe->rd_next_psn);
			qp->rd_gap_psn = wqe->rd_next_psn;
			srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
			srdma_cwnd_loss(qp);
			srdma_req_rewind(qp, wqe->rd_next_psn);
		}
		return;
	}

	idx = (u32)srdma_psn_diff(pkt->psn, wqe->first_psn);
	first = idx == 0;
	last = pkt->psn == wqe->last_psn;
	off = idx * qp->mtu;
	want = last ? wqe->length - off : qp->mtu;
	/*
	 * Responses to a READ asked in chunks, or asked again from the
	 * middle, start and end at those points: only the end of the whole
	 * message and the payload sizes are checked.
	 */
	if ((last && !(pkt->flags & SRDMA_F_LAST)) || pkt->paylen != want ||
	    (first && !(pkt->flags & SRDMA_F_FIRST))) {
		srdma_err_qp(qp, "READ response psn %u: bad opcode %#x or length %u\n",
			     pkt->psn, pkt->opcode, pkt->paylen);
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		return;
	}

	err = srdma_sge_copy(qp, wqe->sge, wqe->num_sge, off, NULL, skb, payoff,
			     pkt->paylen, true);
	if (err) {
		srdma_err_qp(qp, "READ response: local protection error\n");
		srdma_comp_fail(qp, wqe->first_psn, IB_WC_LOC_PROT_ERR);
		return;
	}
	wqe->rd_next_psn = srdma_psn_add(pkt->psn, 1);
	/* The end of a chunk: the responder is done with that request. */
	if ((last || (idx + 1) % SRDMA_READ_CHUNK == 0) && qp->rd_reqs)
		qp->rd_reqs--;
	if (last) {
		wqe->done = true;
		if (qp->rd_outstanding)
			qp->rd_outstanding--;
	}
	/*
	 * A READ response acknowledges everything before it, and is progress
	 * in itself: una moves to the next response expected.
	 */
	srdma_comp_ack(qp, pkt->psn);
}

/* An ACK or READ response for @qp, QP lock held (srdma_rcv() takes it). */
void srdma_comp_rcv(struct srdma_qp *qp, struct srdma_pkt *pkt,
		    struct sk_buff *skb, int payoff)
{
	lockdep_assert_held(&qp->lock);
	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD &&
	    qp->state != IB_QPS_SQE) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_STATE);
		return;
	}
	/* Ignore anything outside what we have sent. */
	if (srdma_psn_diff(pkt->psn, qp->next_psn) >= 0 ||
	    srdma_psn_diff(pkt->psn, qp->una_psn) < -SRDMA_WINDOW) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_DUP);
		return;
	}

	if (pkt->flags & SRDMA_F_RRESP) {
		if (pkt->flags & SRDMA_F_AETH &&
		    (pkt->syndrome & SRDMA_AETH_KIND_MASK) != SRDMA_AETH_ACK) {
			srdma_comp_aeth(qp, pkt);
			goto out_run;
		}
		srdma_comp_read_resp(qp, pkt, skb, payoff);
	} else {
		srdma_comp_aeth(qp, pkt);
	}
out_run:
	srdma_req_run(qp);
}
