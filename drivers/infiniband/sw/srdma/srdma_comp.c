// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma completer: the requester's receive side. Handles ACKs, NAKs and
 * READ responses in the softirq that received them, retires send work
 * requests and keeps the window moving.
 */
#include <linux/skbuff.h>

#include "srdma.h"

/* The first READ or atomic not yet fully answered; QP lock held. */
static struct srdma_send_wqe *srdma_pending_read(struct srdma_qp *qp)
{
	struct srdma_send_wqe *wqe;
	u32 i;

	lockdep_assert_held(&qp->lock);
	for (i = qp->sq.cons; i != qp->sq.prod; i++) {
		wqe = srdma_ring_slot(&qp->sq, i);
		if (!wqe->started)
			break;
		if (srdma_wr_is_rd_atomic(wqe->opcode) && !wqe->done)
			return wqe;
	}
	return NULL;
}

/*
 * Everything up to and including @psn is acknowledged: retire finished
 * work requests in order. A READ retires only once its data is placed,
 * an atomic once its result is.
 */
static void srdma_comp_ack(struct srdma_qp *qp, u32 psn)
{
	struct srdma_send_wqe *wqe;
	bool retired = false;
	u32 una = srdma_psn_add(psn, 1);

	while (qp->sq.cons != qp->sq.prod) {
		wqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
		if (!wqe->started)
			break;
		if (srdma_wr_is_rd_atomic(wqe->opcode)) {
			if (!wqe->done)
				break;
		} else if (srdma_psn_diff(psn, wqe->last_psn) < 0) {
			break;
		}
		/* READs answered earlier may retire past @psn. */
		if (srdma_psn_diff(wqe->last_psn, una) >= 0)
			una = srdma_psn_add(wqe->last_psn, 1);
		srdma_req_complete(qp, wqe, IB_WC_SUCCESS);
		retired = true;
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
	srdma_req_acked(qp, una, retired);
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
	bool blamed;

	srdma_comp_ack(qp, srdma_psn_prev(psn));
	if (qp->state == IB_QPS_ERR || qp->sq.cons == qp->sq.prod)
		return;
	failed = srdma_wqe_of_psn(qp, psn);
	do {
		wqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
		if (!wqe->started)
			return;
		blamed = !failed || wqe == failed;
		srdma_req_complete(qp, wqe,
				   blamed ? status : IB_WC_WR_FLUSH_ERR);
	} while (!blamed && qp->sq.cons != qp->sq.prod);
}

/*
 * Is a NAK (or RNR NAK) for @psn stale: for a PSN already retired, or one
 * no outstanding request holds? Such a NAK is a late copy (a response to
 * a duplicate, reordered by the wire); it must neither move the requester
 * back nor blame whichever request is now the oldest. Counted, dropped.
 */
static bool srdma_comp_nak_stale(struct srdma_qp *qp, u32 psn)
{
	if (srdma_psn_diff(psn, qp->una_psn) >= 0 && srdma_wqe_of_psn(qp, psn))
		return false;
	srdma_count(qp->sdev, SRDMA_CNT_STALE_NAK);
	srdma_dbg_qp(qp, "NAK for psn %u, before %u or of no request: dropped\n",
		     psn, qp->una_psn);
	return true;
}

/* An RNR NAK for @psn: wait and resend, or fail once out of retries. */
static void srdma_comp_rnr_nak(struct srdma_qp *qp, u32 psn, u8 timer)
{
	srdma_count(qp->sdev, SRDMA_CNT_RNR_NAK_RCVD);
	if (srdma_comp_nak_stale(qp, psn))
		return;
	qp->una_probe = false;	/* the NAK, not a timeout's probe, decides */
	srdma_comp_ack(qp, srdma_psn_prev(psn));
	if (qp->state == IB_QPS_ERR)
		return;
	if (!srdma_req_rnr(qp, psn, timer)) {
		srdma_dbg_qp(qp, "receiver not ready after %u retries\n",
			     qp->attr.rnr_retry);
		srdma_comp_fail(qp, psn, IB_WC_RNR_RETRY_EXC_ERR);
	}
}

/* A NAK with @code for @psn: a sequence error resends, the others fail. */
static void srdma_comp_nak(struct srdma_qp *qp, u32 psn, u8 code)
{
	srdma_count(qp->sdev, SRDMA_CNT_NAK_RCVD);
	if (srdma_comp_nak_stale(qp, psn))
		return;
	switch (code) {
	case SRDMA_NAK_PSN_SEQ:
		qp->una_probe = false;	/* the NAK goes back N itself */
		srdma_comp_ack(qp, srdma_psn_prev(psn));
		if (qp->state != IB_QPS_ERR)
			srdma_req_loss(qp, psn);
		break;
	case SRDMA_NAK_REMOTE_ACCESS:
		srdma_comp_fail(qp, psn, IB_WC_REM_ACCESS_ERR);
		break;
	case SRDMA_NAK_INVALID_REQ:
		srdma_comp_fail(qp, psn, IB_WC_REM_INV_REQ_ERR);
		break;
	default:
		srdma_comp_fail(qp, psn, IB_WC_REM_OP_ERR);
		break;
	}
}

static void srdma_comp_aeth(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	u8 syn = pkt->syndrome;

	switch (syn & SRDMA_AETH_KIND_MASK) {
	case SRDMA_AETH_ACK:
		/* Credits from plain ACKs; READ responses may carry none. */
		if (pkt->opcode == SRDMA_OP_ACK)
			srdma_req_credits(qp, pkt->msn, syn);
		srdma_comp_ack(qp, pkt->psn);
		break;
	case SRDMA_AETH_RNR_NAK:
		srdma_comp_rnr_nak(qp, pkt->psn, syn & SRDMA_AETH_VALUE_MASK);
		break;
	case SRDMA_AETH_NAK:
		srdma_comp_nak(qp, pkt->psn, syn & SRDMA_AETH_VALUE_MASK);
		break;
	default:
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		break;
	}
}

/*
 * A READ response beyond the next one @wqe expects: one was lost. Ask
 * again from the first missing, once per gap; the timer covers a lost
 * re-request.
 */
static void srdma_comp_read_gap(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	srdma_count(qp->sdev, SRDMA_CNT_RX_OUT_OF_SEQ);
	if (qp->rd_gap_psn == wqe->rd_next_psn)
		return;
	srdma_dbg_qp(qp, "READ response %u lost, asking again\n",
		     wqe->rd_next_psn);
	qp->rd_gap_psn = wqe->rd_next_psn;
	srdma_req_loss(qp, wqe->rd_next_psn);
}

/*
 * Is @pkt, the response @idx of READ @wqe, the right kind and size?
 * Responses to a READ asked in chunks, or asked again from the middle,
 * start and end at those points: only the end of the whole message and
 * the payload sizes are checked.
 */
static bool srdma_comp_read_resp_ok(struct srdma_qp *qp,
				    struct srdma_send_wqe *wqe,
				    struct srdma_pkt *pkt, u32 idx)
{
	bool first = idx == 0, last = pkt->psn == wqe->last_psn;
	u32 want = last ? wqe->length - idx * qp->mtu : qp->mtu;

	if ((last && !(pkt->flags & SRDMA_F_LAST)) || pkt->paylen != want ||
	    (first && !(pkt->flags & SRDMA_F_FIRST))) {
		srdma_dbg_qp(qp, "READ response psn %u: bad opcode %#x or length %u\n",
			     pkt->psn, pkt->opcode, pkt->paylen);
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		return false;
	}
	return true;
}

/*
 * Single-request @wqe (an atomic, an ATOMIC WRITE) was answered at @psn:
 * the responder holds it no more, and it retires with what the answer
 * acknowledges.
 */
static void srdma_comp_one_req_done(struct srdma_qp *qp,
				    struct srdma_send_wqe *wqe, u32 psn)
{
	wqe->done = true;
	if (wqe->rd_sent_off && qp->rd_reqs)
		qp->rd_reqs--;
	if (qp->rd_outstanding)
		qp->rd_outstanding--;
	srdma_comp_ack(qp, psn);
}

/*
 * The answer to ATOMIC WRITE @wqe: a READ response ONLY of no data at its
 * PSN (IBTA 1.5). It retires the request with what it acknowledges.
 */
static void srdma_comp_awrite_resp(struct srdma_qp *qp,
				   struct srdma_send_wqe *wqe,
				   struct srdma_pkt *pkt)
{
	if (wqe->done) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_DUP);
		return;
	}
	if ((pkt->flags & SRDMA_F_ONLY) != SRDMA_F_ONLY || pkt->paylen) {
		srdma_dbg_qp(qp, "ATOMIC WRITE psn %u answered by opcode %#x with %u bytes\n",
			     pkt->psn, pkt->opcode, pkt->paylen);
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		return;
	}
	srdma_comp_one_req_done(qp, wqe, pkt->psn);
}

static void srdma_comp_read_resp(struct srdma_qp *qp, struct srdma_pkt *pkt,
				 struct sk_buff *skb, int payoff)
{
	struct srdma_send_wqe *wqe = srdma_wqe_of_psn(qp, pkt->psn);
	bool last;
	u32 idx;
	int err;

	if (wqe && wqe->opcode == SRDMA_WR_ATOMIC_WRITE) {
		srdma_comp_awrite_resp(qp, wqe, pkt);
		return;
	}
	if (!wqe || wqe->opcode != IB_WR_RDMA_READ || wqe->done ||
	    srdma_psn_diff(pkt->psn, wqe->rd_next_psn) < 0) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_DUP);
		return;
	}
	if (pkt->psn != wqe->rd_next_psn) {
		srdma_comp_read_gap(qp, wqe);
		return;
	}
	idx = (u32)srdma_psn_diff(pkt->psn, wqe->first_psn);
	if (!srdma_comp_read_resp_ok(qp, wqe, pkt, idx))
		return;

	err = srdma_sge_copy(qp, wqe->sge, wqe->num_sge, idx * qp->mtu, NULL,
			     skb, payoff, pkt->paylen, true,
			     SRDMA_ODP_KICK_RESEND);
	if (err == -EAGAIN)
		return;	/* dropped: asked for again once the pages are in */
	if (err) {
		srdma_dbg_qp(qp, "READ response: local protection error\n");
		srdma_comp_fail(qp, wqe->first_psn, IB_WC_LOC_PROT_ERR);
		return;
	}
	wqe->rd_next_psn = srdma_psn_add(pkt->psn, 1);
	last = pkt->psn == wqe->last_psn;
	/*
	 * The end of a chunk: the responder is done with that request. A
	 * READ of no data is counted only while rd_zero_asked: a late answer
	 * to a request a rewind forgot must not uncount another's (helper-79).
	 */
	if (!wqe->length) {
		if (wqe->rd_zero_asked && qp->rd_reqs)
			qp->rd_reqs--;
		wqe->rd_zero_asked = false;
	} else if ((last || (idx + 1) % SRDMA_READ_CHUNK == 0) && qp->rd_reqs) {
		qp->rd_reqs--;
	}
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

/*
 * An ATOMIC ACKNOWLEDGE for atomic @pkt->psn: place the original value in
 * the request's 8-byte SGE and retire it with what it acknowledges. One
 * for a request already done (a replay, after a resend) is a duplicate.
 */
static void srdma_comp_atomic_ack(struct srdma_qp *qp, struct srdma_pkt *pkt)
{
	struct srdma_send_wqe *wqe = srdma_wqe_of_psn(qp, pkt->psn);
	u64 orig = pkt->orig;
	int err;

	if (!wqe || !srdma_wr_is_atomic(wqe->opcode) || wqe->done) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_DUP);
		return;
	}
	err = srdma_sge_copy(qp, wqe->sge, wqe->num_sge, 0, &orig, NULL, 0,
			     sizeof(orig), true, SRDMA_ODP_KICK_RESEND);
	if (err == -EAGAIN)
		return;	/* dropped: sent again once the page is in */
	if (err) {
		srdma_dbg_qp(qp, "atomic result: local protection error\n");
		srdma_comp_fail(qp, wqe->first_psn, IB_WC_LOC_PROT_ERR);
		return;
	}
	srdma_comp_one_req_done(qp, wqe, pkt->psn);
}

/**
 * srdma_comp_rcv() - take an ACK, NAK, READ response or ATOMIC ACKNOWLEDGE
 * @qp: the QP it is for
 * @pkt: the packet, parsed and checked by srdma_rcv()
 * @skb: the packet's skb
 * @payoff: where its payload starts in @skb
 *
 * Retires the work requests it completes, hands acknowledgements, losses
 * and RNR NAKs to the requester, places READ payloads and atomic results,
 * then runs the requester. Anything outside what was sent is counted and dropped.
 *
 * Context: softirq, QP lock held (srdma_rcv() takes it); or a doorbell
 * with BHs off, for the answer to a direct placement
 * (srdma_rcv_direct_ack()).
 */
void srdma_comp_rcv(struct srdma_qp *qp, struct srdma_pkt *pkt,
		    struct sk_buff *skb, int payoff)
{
	lockdep_assert_held(&qp->lock);
	if (!srdma_qp_comp_running(qp)) {
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_STATE);
		return;
	}
	/*
	 * Ignore anything outside what we have sent: PSNs up to next_psn are
	 * only assigned (a long message's, a READ's later chunks), sent_psn
	 * is one past the highest handed to the network (helper-77).
	 */
	if (srdma_psn_diff(pkt->psn, qp->sent_psn) >= 0 ||
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
	} else if ((pkt->flags & SRDMA_F_AACK) &&
		   (pkt->syndrome & SRDMA_AETH_KIND_MASK) == SRDMA_AETH_ACK) {
		srdma_comp_atomic_ack(qp, pkt);
	} else {
		srdma_comp_aeth(qp, pkt);
	}
out_run:
	srdma_req_kick(qp);
}
