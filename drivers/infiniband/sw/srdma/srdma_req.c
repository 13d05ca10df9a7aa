// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma requester: post_send, packetizing SEND, WRITE and READ work
 * requests at the path MTU, the send window and the retransmit timer.
 *
 * Runs under the QP lock in process context (post_send, modify_qp), in
 * softirq when ACKs open the window (completer) and from the timer.
 */
#include <linux/skbuff.h>

#include "srdma.h"

/* RNR NAK timer field (IBTA table 45) in microseconds. */
static const u32 srdma_rnr_usecs[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static bool srdma_sq_running(struct srdma_qp *qp)
{
	return qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD;
}

/* The QP's local ACK timeout in jiffies: 4.096 us * 2^timeout. */
static unsigned long srdma_ack_timeout(struct srdma_qp *qp)
{
	u64 ns = 4096ULL << min_t(u8, qp->attr.timeout, 31);

	return max_t(unsigned long, nsecs_to_jiffies(ns), 2);
}

/*
 * Retransmission timeout: smoothed RTT plus four deviations, backed off
 * after each early retransmission, with a floor, and never longer than the
 * local ACK timeout. Before the first sample it is the ACK timeout.
 */
static unsigned long srdma_rto(struct srdma_qp *qp)
{
	unsigned long full = srdma_ack_timeout(qp), rto;

	if (!qp->srtt_us)
		return full;
	rto = usecs_to_jiffies(qp->srtt_us + 4 * qp->rttvar_us);
	rto = max_t(unsigned long, rto, SRDMA_RTO_MIN_JIFFIES) <<
	      min_t(u8, qp->rto_backoff, 10);
	return min(rto, full);
}

/*
 * Arm the retransmit timer; 0 in the QP's timeout means never. Once per
 * stretch without progress it first fires as a tail-loss probe, after
 * about two round trips, if that comes before the retransmission timeout.
 */
void srdma_arm_timer(struct srdma_qp *qp)
{
	unsigned long rto, pto;

	if (!srdma_sq_running(qp) || !qp->attr.timeout)
		return;
	rto = srdma_rto(qp);
	qp->tlp_armed = false;
	if (qp->srtt_us && !qp->tlp_sent) {
		pto = max_t(unsigned long, usecs_to_jiffies(2 * qp->srtt_us),
			    SRDMA_RTO_MIN_JIFFIES);
		if (pto < rto) {
			rto = pto;
			qp->tlp_armed = true;
		}
	}
	mod_timer(&qp->retrans_timer, jiffies + rto);
}

/* Una moved to @una: finish the RTT sample if it is covered. */
void srdma_rtt_sample(struct srdma_qp *qp, u32 una)
{
	s32 m, err;

	if (!qp->rtt_pending || srdma_psn_diff(una, qp->rtt_psn) <= 0)
		return;
	qp->rtt_pending = false;
	m = (s32)min_t(s64, ktime_us_delta(ktime_get(), qp->rtt_start),
		       S32_MAX);
	if (m <= 0)
		m = 1;
	if (!qp->srtt_us) {
		qp->srtt_us = m;
		qp->rttvar_us = m / 2;
		return;
	}
	err = m - (s32)qp->srtt_us;
	qp->srtt_us = (u32)((s32)qp->srtt_us + err / 8);
	qp->rttvar_us = (u32)((s32)qp->rttvar_us +
			      ((err < 0 ? -err : err) - (s32)qp->rttvar_us) / 4);
	if (!qp->srtt_us)
		qp->srtt_us = 1;
}

/* A new send PSN (modify_qp to RTS): fresh window and estimates. */
void srdma_req_init_window(struct srdma_qp *qp, u32 psn)
{
	qp->next_psn = psn;
	qp->una_psn = psn;
	qp->sent_psn = psn;
	qp->rtt_pending = false;
	qp->srtt_us = 0;
	qp->rttvar_us = 0;
	qp->cwnd = SRDMA_CWND_INIT;
	qp->cwnd_acc = 0;
	qp->cwnd_cut = false;
	qp->tlp_sent = false;
	qp->tlp_armed = false;
	qp->rto_backoff = 0;
	qp->rd_gap_psn = U32_MAX;	/* never a valid PSN */
	qp->last_progress = jiffies;
}

/*
 * A loss was seen (sequence NAK, missing READ response, timeout): halve
 * the congestion window, once per window of packets, so that go-back-N
 * resends little more than what the path holds.
 */
void srdma_cwnd_loss(struct srdma_qp *qp)
{
	if (qp->cwnd_cut && srdma_psn_diff(qp->una_psn, qp->recover_psn) < 0)
		return;
	qp->cwnd = max_t(u32, qp->cwnd / 2, SRDMA_CWND_MIN);
	qp->cwnd_acc = 0;
	qp->recover_psn = qp->next_psn;
	qp->cwnd_cut = true;
}

/*
 * @npkts more packets acknowledged: grow by four packets per window, so
 * that a window cut by a burst of drops comes back within a few dozen
 * round trips.
 */
void srdma_cwnd_ack(struct srdma_qp *qp, u32 npkts)
{
	u32 step;

	if (qp->cwnd >= SRDMA_WINDOW)
		return;
	qp->cwnd_acc += npkts;
	step = max_t(u32, qp->cwnd / 4, 1);
	while (qp->cwnd_acc >= step && qp->cwnd < SRDMA_WINDOW) {
		qp->cwnd_acc -= step;
		qp->cwnd++;
	}
}

static enum ib_wc_opcode srdma_wc_opcode(u32 wr_opcode)
{
	switch (wr_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	default:
		return IB_WC_SEND;
	}
}

/*
 * Retire the oldest SQ entry @wqe with @status, posting a completion if it
 * is signaled or failed. A failure moves the QP to ERR. QP lock held.
 */
void srdma_req_complete(struct srdma_qp *qp, struct srdma_send_wqe *wqe,
			enum ib_wc_status status)
{
	struct ib_wc wc = {};

	lockdep_assert_held(&qp->lock);
	if (wqe->opcode == IB_WR_RDMA_READ && wqe->started && !wqe->done &&
	    qp->rd_outstanding)
		qp->rd_outstanding--;
	/* The slot is free by the time the completion can be seen. */
	qp->sq.cons++;
	srdma_uring_consumed(&qp->usq, qp->sq.cons);
	if (status != IB_WC_SUCCESS || qp->sig_all ||
	    (wqe->send_flags & IB_SEND_SIGNALED)) {
		wc.wr_id = wqe->wr_id;
		wc.status = status;
		wc.opcode = srdma_wc_opcode(wqe->opcode);
		wc.byte_len = wqe->opcode == IB_WR_RDMA_READ ? wqe->length : 0;
		wc.qp = &qp->ibqp;
		wc.port_num = 1;
		srdma_cq_post(to_scq(qp->ibqp.send_cq), &wc, false);
	}
	if (qp->sq_next - qp->sq.cons > qp->sq.prod - qp->sq.cons) {
		qp->sq_next = qp->sq.cons;
		qp->sq_next_off = 0;
	}
	if (status != IB_WC_SUCCESS && status != IB_WC_WR_FLUSH_ERR) {
		srdma_dbg_qp(qp, "wr %llu failed: %s\n", wqe->wr_id,
			     ib_wc_status_msg(status));
		srdma_qp_error(qp);
	}
}

/*
 * READ requests of @wqe the responder may still be answering: the chunks
 * from the one holding the first missing response up to what was asked.
 */
static u32 srdma_rd_chunks_out(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	u32 next_idx = (u32)srdma_psn_diff(wqe->rd_next_psn, wqe->first_psn);
	u32 sent_idx = DIV_ROUND_UP(wqe->rd_sent_off, qp->mtu);

	if (wqe->done || sent_idx <= next_idx)
		return 0;
	return DIV_ROUND_UP(sent_idx, SRDMA_READ_CHUNK) -
	       next_idx / SRDMA_READ_CHUNK;
}

/* Does the responder hold as many READ requests as it takes? */
static bool srdma_rd_full(struct srdma_qp *qp)
{
	return qp->rd_reqs >= max_t(u8, qp->attr.max_rd_atomic, 1);
}

/*
 * READ requests from @i on will be sent again, and the responder drops
 * what it still holds of them when the first arrives: stop counting them.
 */
static void srdma_rd_forget(struct srdma_qp *qp, u32 i, u32 off)
{
	struct srdma_send_wqe *wqe;

	for (; i != qp->sq.prod; i++, off = 0) {
		wqe = srdma_ring_slot(&qp->sq, i);
		if (!wqe->started)
			break;
		if (wqe->opcode != IB_WR_RDMA_READ)
			continue;
		qp->rd_reqs -= min(qp->rd_reqs, srdma_rd_chunks_out(qp, wqe));
		wqe->rd_sent_off = min(wqe->rd_sent_off, off);
	}
}

/* Go back to resend from @psn (go-back-N). QP lock held. */
void srdma_req_rewind(struct srdma_qp *qp, u32 psn)
{
	struct srdma_send_wqe *wqe;
	u32 i;

	lockdep_assert_held(&qp->lock);
	qp->rtt_pending = false;	/* no samples from resent packets */
	for (i = qp->sq.cons; i != qp->sq.prod; i++) {
		wqe = srdma_ring_slot(&qp->sq, i);
		if (!wqe->started)
			break;
		if (srdma_psn_diff(psn, wqe->last_psn) > 0)
			continue;
		if (srdma_psn_diff(psn, wqe->first_psn) < 0)
			psn = wqe->first_psn;
		if (wqe->opcode == IB_WR_RDMA_READ) {
			/* Ask only for the responses still missing. */
			if (srdma_psn_diff(psn, wqe->rd_next_psn) < 0)
				psn = wqe->rd_next_psn;
		}
		qp->sq_next = i;
		qp->sq_next_off = (u32)srdma_psn_diff(psn, wqe->first_psn) *
				  qp->mtu;
		srdma_rd_forget(qp, i, qp->sq_next_off);
		return;
	}
	qp->sq_next = i;
	qp->sq_next_off = 0;
}

static u8 srdma_req_opcode(struct srdma_send_wqe *wqe, bool first, bool last)
{
	bool imm = wqe->opcode == IB_WR_SEND_WITH_IMM ||
		   wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM;

	if (wqe->opcode == IB_WR_RDMA_WRITE ||
	    wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM) {
		if (first && last)
			return imm ? SRDMA_OP_WRITE_ONLY_IMM : SRDMA_OP_WRITE_ONLY;
		if (first)
			return SRDMA_OP_WRITE_FIRST;
		if (last)
			return imm ? SRDMA_OP_WRITE_LAST_IMM : SRDMA_OP_WRITE_LAST;
		return SRDMA_OP_WRITE_MIDDLE;
	}
	if (first && last)
		return imm ? SRDMA_OP_SEND_ONLY_IMM : SRDMA_OP_SEND_ONLY;
	if (first)
		return SRDMA_OP_SEND_FIRST;
	if (last)
		return imm ? SRDMA_OP_SEND_LAST_IMM : SRDMA_OP_SEND_LAST;
	return SRDMA_OP_SEND_MIDDLE;
}

/*
 * Tell a user process whether it must ring the doorbell after posting.
 * Not needed while packets are in flight: their ACKs, or the timer, run
 * the requester, which takes new work from the ring. Clearing is followed
 * by a full barrier and a last look at the ring (in srdma_req_run()),
 * pairing with the provider's store of prod, fence, load of this flag.
 */
static void srdma_req_doorbell(struct srdma_qp *qp, bool skip)
{
	if (!qp->usq.map)
		return;
	WRITE_ONCE(qp->usq.hdr->no_doorbell, skip);
	if (!skip)
		smp_mb();	/* flag before the provider's prod */
}

/*
 * Will another SEND or WRITE packet follow the current work request's
 * last one right away? Not if nothing is posted behind it, or if what is
 * waits for this one's ACK (a fence, a READ over the limit, SQD).
 */
static bool srdma_more_follows(struct srdma_qp *qp)
{
	struct srdma_send_wqe *next;

	if (qp->sq_next + 1 == qp->sq.prod || qp->state != IB_QPS_RTS)
		return false;
	next = srdma_ring_slot(&qp->sq, qp->sq_next + 1);
	return (next->started && !next->done) ||
	       (next->opcode != IB_WR_RDMA_READ &&
		!(next->send_flags & IB_SEND_FENCE));
}

/* Send the next packet of @wqe at qp->sq_next_off. QP lock held. */
static int srdma_req_packet(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	u32 off = qp->sq_next_off, mtu = qp->mtu, idx;
	struct srdma_pkt pkt = {};
	struct sk_buff *skb;
	bool first, last, zcopy;
	u8 *payload;
	int err;

	pkt.pkey = SRDMA_DEFAULT_PKEY;
	pkt.dqpn = qp->attr.dest_qp_num;
	pkt.psn = srdma_psn_add(wqe->first_psn, off / mtu);
	if (srdma_psn_diff(pkt.psn, qp->sent_psn) >= 0) {
		/* A first transmission: time it if nothing is timed. */
		if (!qp->rtt_pending) {
			qp->rtt_pending = true;
			qp->rtt_psn = pkt.psn;
			qp->rtt_start = ktime_get();
		}
		qp->sent_psn = srdma_psn_add(pkt.psn, 1);
	}

	if (wqe->opcode == IB_WR_RDMA_READ) {
		pkt.opcode = SRDMA_OP_READ_REQ;
		pkt.va = wqe->remote_addr + off;
		pkt.rkey = wqe->rkey;
		/*
		 * Large READs go out as a series of requests of at most
		 * SRDMA_READ_CHUNK packets. A request asked again from the
		 * middle of one ends where the original ended: the responder
		 * accepted exactly that PSN range.
		 */
		idx = off / mtu;
		pkt.dmalen = min(wqe->length - off,
				 (SRDMA_READ_CHUNK - idx % SRDMA_READ_CHUNK) * mtu);
		pkt.ackreq = 1;
		skb = srdma_alloc_pkt(qp, &pkt, &payload);
		if (!skb)
			return -ENOMEM;
		if (off >= wqe->rd_sent_off) {
			qp->rd_reqs++;
			wqe->rd_sent_off = off + pkt.dmalen;
		}
		qp->sq_next_off = off + pkt.dmalen;
		qp->pkts_since_ackreq = 0;
		return srdma_xmit(qp, skb) == -EHOSTUNREACH ? -EHOSTUNREACH : 0;
	}

	first = off == 0;
	pkt.paylen = min(mtu, wqe->length - off);
	last = off + pkt.paylen >= wqe->length;
	pkt.opcode = srdma_req_opcode(wqe, first, last);
	if (pkt.opcode == SRDMA_OP_WRITE_FIRST ||
	    pkt.opcode == SRDMA_OP_WRITE_ONLY ||
	    pkt.opcode == SRDMA_OP_WRITE_ONLY_IMM) {
		pkt.va = wqe->remote_addr;
		pkt.rkey = wqe->rkey;
		pkt.dmalen = wqe->length;
	}
	pkt.imm = (__force u32)wqe->imm;
	pkt.se = last && (wqe->send_flags & IB_SEND_SOLICITED);
	qp->pkts_since_ackreq++;
	/*
	 * ACKs are coalesced: ask for one at the end of what can be sent
	 * now, and at least four times per window to keep it moving.
	 */
	pkt.ackreq = (last && !srdma_more_follows(qp)) ||
		     qp->pkts_since_ackreq >= min_t(u32, SRDMA_ACKREQ_EVERY,
						    max_t(u32, qp->cwnd / 4, 1));
	if (pkt.ackreq)
		qp->pkts_since_ackreq = 0;

	/* Large payloads go out from the MR's pages; else copied. */
	zcopy = pkt.paylen >= SRDMA_ZCOPY_MIN;
again:
	skb = srdma_alloc_pkt(qp, &pkt, zcopy ? NULL : &payload);
	if (!skb)
		return -ENOMEM;
	err = srdma_sge_copy(qp, wqe->sge, wqe->num_sge, off,
			     zcopy ? NULL : payload, zcopy ? skb : NULL, 0,
			     pkt.paylen, false);
	if (!err && zcopy)
		err = srdma_pkt_seal(skb, &pkt);
	if (err) {
		kfree_skb(skb);
		if (zcopy && err != -EACCES && err != -EINVAL) {
			zcopy = false;	/* DMA MR, too many pieces, memory */
			goto again;
		}
		return err;
	}
	qp->sq_next_off = off + pkt.paylen;
	return srdma_xmit(qp, skb) == -EHOSTUNREACH ? -EHOSTUNREACH : 0;
}

/*
 * Transmit what the window allows: resent packets first (after a rewind),
 * then new work requests. QP lock held.
 */
void srdma_req_run(struct srdma_qp *qp)
{
	struct srdma_send_wqe *wqe;
	u32 psn, off, sent = 0;
	int err = 0;

	lockdep_assert_held(&qp->lock);
	if (!srdma_sq_running(qp) || qp->rnr_wait || qp->sq_error) {
		srdma_req_doorbell(qp, false);
		return;
	}
	/* A user process may have posted without a doorbell. */
	if (qp->usq.map && srdma_sq_pull(qp)) {
		srdma_qp_error(qp);
		return;
	}
again:
	while (qp->sq_next != qp->sq.prod) {
		wqe = srdma_ring_slot(&qp->sq, qp->sq_next);
		if (!wqe->started) {
			/* SQD: finish what was started, start nothing new. */
			if (qp->state == IB_QPS_SQD)
				break;
			if (wqe->opcode == IB_WR_RDMA_READ &&
			    (qp->rd_outstanding >=
			     max_t(u8, qp->attr.max_rd_atomic, 1) ||
			     srdma_rd_full(qp)))
				break;
			if ((wqe->send_flags & IB_SEND_FENCE) &&
			    qp->rd_outstanding)
				break;
			if (srdma_psn_diff(qp->next_psn, qp->una_psn) >=
			    (s32)qp->cwnd)
				break;
			wqe->npkts = srdma_npkts(wqe->length, qp->mtu);
			if (wqe->npkts > SRDMA_MAX_MSG_PKTS) {
				/* Posted before the path MTU shrank. */
				srdma_err_qp(qp, "wr %llu: %u packets, max %lu\n",
					     wqe->wr_id, wqe->npkts,
					     SRDMA_MAX_MSG_PKTS);
				err = -EMSGSIZE;
				goto fail_local;
			}
			wqe->first_psn = qp->next_psn;
			wqe->last_psn = srdma_psn_add(qp->next_psn,
						      wqe->npkts - 1);
			wqe->rd_next_psn = wqe->first_psn;
			wqe->rd_sent_off = 0;
			wqe->started = true;
			wqe->done = false;
			qp->next_psn = srdma_psn_add(qp->next_psn, wqe->npkts);
			qp->sq_next_off = 0;
			if (wqe->opcode == IB_WR_RDMA_READ)
				qp->rd_outstanding++;
		} else {
			if (wqe->done)
				goto next;
			if (wqe->opcode == IB_WR_RDMA_READ) {
				/* Never ask again for responses placed. */
				off = (u32)srdma_psn_diff(wqe->rd_next_psn,
							  wqe->first_psn) *
				      qp->mtu;
				qp->sq_next_off = max(qp->sq_next_off, off);
				if (srdma_rd_full(qp))
					break;
			}
			psn = srdma_psn_add(wqe->first_psn,
					    qp->sq_next_off / qp->mtu);
			if (srdma_psn_diff(psn, qp->una_psn) >= (s32)qp->cwnd)
				break;
		}

		err = srdma_req_packet(qp, wqe);
		if (err == -EACCES || err == -EINVAL) {
			/* Bad lkey, range or right in the local SGEs. */
			srdma_err_qp(qp, "wr %llu: local protection error\n",
				     wqe->wr_id);
			goto fail_local;
		}
		if (err)
			break;	/* no memory or route: the timer retries */
		sent++;
		if (qp->sq_next_off < wqe->length)
			continue;
next:
		qp->sq_next++;
		qp->sq_next_off = 0;
	}
	/*
	 * Something went out, or a started request could not (no memory, no
	 * route): in both cases only the timer brings the requester back if
	 * nothing else is in flight. With no ACK timeout (0: infinite) a
	 * failed send is still retried after a short while.
	 */
	if ((sent || err) && !timer_pending(&qp->retrans_timer)) {
		qp->last_progress = jiffies;
		srdma_arm_timer(qp);
		if (err && !timer_pending(&qp->retrans_timer))
			mod_timer(&qp->retrans_timer,
				  jiffies + SRDMA_RTO_MIN_JIFFIES);
	}
	/* Idle now: ask for doorbells again, then look once more. */
	if (qp->usq.map && qp->una_psn == qp->next_psn &&
	    qp->state == IB_QPS_RTS) {
		srdma_req_doorbell(qp, false);
		psn = qp->sq.prod;
		if (srdma_sq_pull(qp)) {
			srdma_qp_error(qp);
			return;
		}
		if (qp->sq.prod != psn)
			goto again;	/* posted meanwhile, no doorbell */
	} else {
		srdma_req_doorbell(qp, qp->state == IB_QPS_RTS);
	}
	if (qp->state == IB_QPS_SQD && qp->attr.en_sqd_async_notify &&
	    qp->sq_next == qp->sq.prod && qp->una_psn == qp->next_psn)
		srdma_qp_event(qp, IB_EVENT_SQ_DRAINED);
	return;

fail_local:
	/* Older work requests are flushed, this one fails, QP to ERR. */
	qp->sq_error = true;
	while ((s32)(qp->sq_next - qp->sq.cons) > 0) {
		struct srdma_send_wqe *old;

		old = srdma_ring_slot(&qp->sq, qp->sq.cons);
		srdma_req_complete(qp, old, IB_WC_WR_FLUSH_ERR);
	}
	srdma_req_complete(qp, wqe, err == -EACCES || err == -EINVAL ?
			   IB_WC_LOC_PROT_ERR : IB_WC_LOC_LEN_ERR);
}

/*
 * Resend the last packet sent, with AckReq, leaving the transmit position
 * alone. A READ is asked again from its first missing response like any
 * rewind would, since the responder drops the READs queued after it.
 */
static void srdma_req_probe(struct srdma_qp *qp)
{
	u32 next = qp->sq_next, off = qp->sq_next_off;
	struct srdma_send_wqe *wqe;

	srdma_req_rewind(qp, srdma_psn_prev(qp->sent_psn));
	if (qp->sq_next == qp->sq.prod)
		goto restore;
	wqe = srdma_ring_slot(&qp->sq, qp->sq_next);
	if (!wqe->started || wqe->done)
		goto restore;
	if (wqe->opcode == IB_WR_RDMA_READ) {
		srdma_req_rewind(qp, qp->una_psn);
		srdma_req_run(qp);
		return;
	}
	qp->pkts_since_ackreq = SRDMA_ACKREQ_EVERY;
	srdma_req_packet(qp, wqe);
restore:
	qp->sq_next = next;
	qp->sq_next_off = off;
}

void srdma_retrans_timer(struct timer_list *t)
{
	struct srdma_qp *qp = from_timer(qp, t, retrans_timer);
	struct srdma_send_wqe *wqe;

	spin_lock_bh(&qp->lock);
	if (!srdma_sq_running(qp))
		goto out_unlock;
	if (qp->rnr_wait) {
		qp->rnr_wait = false;
		srdma_req_run(qp);
		goto out_unlock;
	}
	if (qp->sq.cons == qp->sq.prod)
		goto out_unlock;	/* nothing outstanding */
	wqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
	if (!wqe->started)
		goto out_unlock;
	if (!qp->attr.timeout) {
		/* No ACK timeout: only a send that failed arms the timer. */
		srdma_req_rewind(qp, qp->una_psn);
		srdma_req_run(qp);
		goto out_unlock;
	}
	srdma_dbg_qp(qp, "timer: una %u next %u sq %u/%u/%u: op %u psn %u-%u rd %u retries %u\n",
		     qp->una_psn, qp->next_psn, qp->sq.cons, qp->sq_next,
		     qp->sq.prod, wqe->opcode, wqe->first_psn, wqe->last_psn,
		     wqe->rd_next_psn, qp->retry_left);

	if (qp->tlp_armed) {
		/*
		 * Tail-loss probe: nothing came back for two round trips.
		 * Resend the last packet with AckReq; its ACK or the NAK it
		 * draws ends the wait sooner than the timeout would.
		 */
		qp->tlp_sent = true;
		srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
		srdma_req_probe(qp);
		srdma_arm_timer(qp);
		goto out_unlock;
	}
	srdma_cwnd_loss(qp);
	if (time_before(jiffies, qp->last_progress + srdma_ack_timeout(qp))) {
		/*
		 * Early: the adaptive timeout expired, the QP's own has not.
		 * Resend without using up a retry; back off the next one.
		 */
		if (qp->rto_backoff < 10)
			qp->rto_backoff++;
		srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
		srdma_req_rewind(qp, qp->una_psn);
		srdma_req_run(qp);
		srdma_arm_timer(qp);
		goto out_unlock;
	}

	srdma_count(qp->sdev, SRDMA_CNT_TIMEOUTS);
	if (!qp->retry_left) {
		srdma_err_qp(qp, "no ACK after %u retries\n",
			     qp->attr.retry_cnt);
		srdma_req_complete(qp, wqe, IB_WC_RETRY_EXC_ERR);
		goto out_unlock;
	}
	qp->retry_left--;
	qp->last_progress = jiffies;
	srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
	srdma_req_rewind(qp, qp->una_psn);
	srdma_req_run(qp);
	srdma_arm_timer(qp);
out_unlock:
	spin_unlock_bh(&qp->lock);
}

/* Arm the RNR wait after an RNR NAK; QP lock held. */
void srdma_req_rnr_wait(struct srdma_qp *qp, u8 timer)
{
	qp->rnr_wait = true;
	mod_timer(&qp->retrans_timer,
		  jiffies + max_t(unsigned long,
				  usecs_to_jiffies(srdma_rnr_usecs[timer & 31]),
				  1));
}

static bool srdma_opcode_ok(u32 opcode)
{
	switch (opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		return true;
	default:
		return false;
	}
}

/*
 * A message of @len bytes: at most SRDMA_MAX_MSG_SIZE, and few enough
 * packets at the QP's path MTU for 24-bit PSN arithmetic.
 */
static bool srdma_msg_len_ok(struct srdma_qp *qp, u32 len)
{
	if (len <= SRDMA_MAX_MSG_SIZE &&
	    srdma_npkts(len, qp->mtu) <= SRDMA_MAX_MSG_PKTS)
		return true;
	srdma_err_qp(qp, "post_send: message of %u bytes too long for MTU %u\n",
		     len, qp->mtu);
	return false;
}

static int srdma_check_wr(struct srdma_qp *qp, const struct ib_send_wr *wr)
{
	if (!srdma_opcode_ok(wr->opcode)) {
		srdma_err_qp(qp, "post_send: opcode %d not supported\n",
			     wr->opcode);
		return -EINVAL;
	}
	if (wr->num_sge < 0 || wr->num_sge > qp->sq.max_sge) {
		srdma_err_qp(qp, "post_send: %d SGEs, max %u\n", wr->num_sge,
			     qp->sq.max_sge);
		return -EINVAL;
	}
	if (wr->send_flags & IB_SEND_INLINE) {
		srdma_err_qp(qp, "post_send: inline data not supported\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * Take the work requests a user process wrote to its mapped SQ into the
 * kernel's ring, reading each field once and validating it. A bad entry
 * stops the QP: -EINVAL. QP lock held.
 */
int srdma_sq_pull(struct srdma_qp *qp)
{
	const u32 flags_ok = IB_SEND_FENCE | IB_SEND_SIGNALED |
			     IB_SEND_SOLICITED;
	struct srdma_usend_wqe *u;
	struct srdma_send_wqe *wqe;
	u32 uprod, n, op, flags;
	int err;

	lockdep_assert_held(&qp->lock);
	err = srdma_uring_new(qp, &qp->usq, &qp->sq, &uprod);
	while (!err && qp->sq.prod != uprod) {
		u = srdma_uring_slot(&qp->usq, qp->sq.prod);
		wqe = srdma_ring_slot(&qp->sq, qp->sq.prod);
		n = READ_ONCE(u->num_sge);
		op = READ_ONCE(u->opcode);
		flags = READ_ONCE(u->send_flags);
		if (!srdma_opcode_ok(op) || (flags & ~flags_ok)) {
			srdma_err_qp(qp, "send ring entry %u: opcode %u, flags %#x refused\n",
				     qp->sq.prod, op, flags);
			qp->uring_bad = true;
			return -EINVAL;
		}
		err = srdma_usges_read(qp, wqe->sge, u->sge, n, qp->sq.max_sge,
				       &wqe->length);
		if (err)
			return err;
		if (!srdma_msg_len_ok(qp, wqe->length)) {
			qp->uring_bad = true;
			return -EINVAL;
		}
		wqe->wr_id = READ_ONCE(u->wr_id);
		wqe->opcode = op;
		wqe->send_flags = flags;
		wqe->imm = (__force __be32)READ_ONCE(u->imm_data);
		wqe->num_sge = n;
		wqe->started = false;
		wqe->done = false;
		if (op != IB_WR_SEND && op != IB_WR_SEND_WITH_IMM) {
			wqe->remote_addr = READ_ONCE(u->remote_addr);
			wqe->rkey = READ_ONCE(u->rkey);
		} else {
			wqe->remote_addr = 0;
			wqe->rkey = 0;
		}
		qp->sq.prod++;
	}
	return err;
}

/*
 * The doorbell of a user QP: a post_send without work requests. The work
 * requests are in the mapped SQ.
 */
static int srdma_post_send_user(struct srdma_qp *qp,
				const struct ib_send_wr *wr,
				const struct ib_send_wr **bad_wr)
{
	int err = 0;

	spin_lock_bh(&qp->lock);
	if (wr) {
		srdma_err_qp(qp, "post_send: a user QP posts through its ring\n");
		err = -EINVAL;
	} else if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_INIT ||
		   qp->state == IB_QPS_RTR) {
		srdma_err_qp(qp, "post_send in state %d\n", qp->state);
		err = -EINVAL;
	} else if (qp->state != IB_QPS_ERR && srdma_sq_pull(qp)) {
		err = -EINVAL;
		srdma_qp_error(qp);
	}
	if (err)
		*bad_wr = wr;
	if (qp->state == IB_QPS_ERR)
		srdma_qp_flush(qp);
	else
		srdma_req_run(qp);
	spin_unlock_bh(&qp->lock);
	return err;
}

int srdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	struct srdma_send_wqe *wqe;
	int err = 0;
	u32 len;

	if (qp->usq.map)
		return srdma_post_send_user(qp, wr, bad_wr);
	spin_lock_bh(&qp->lock);
	if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_INIT ||
	    qp->state == IB_QPS_RTR) {
		srdma_err_qp(qp, "post_send in state %d\n", qp->state);
		err = -EINVAL;
		*bad_wr = wr;
		goto out_unlock;
	}
	for (; wr; wr = wr->next) {
		err = srdma_check_wr(qp, wr);
		if (!err && qp->sq.prod - qp->sq.cons >= qp->sq.max_wr)
			err = -ENOMEM;
		wqe = srdma_ring_slot(&qp->sq, qp->sq.prod);
		if (!err && (srdma_sges_from_wr(wqe->sge, wr->sg_list,
						wr->num_sge, &len) ||
			     !srdma_msg_len_ok(qp, len)))
			err = -EINVAL;
		if (err) {
			*bad_wr = wr;
			break;
		}
		wqe->wr_id = wr->wr_id;
		wqe->opcode = wr->opcode;
		wqe->send_flags = wr->send_flags;
		wqe->imm = wr->ex.imm_data;
		wqe->length = len;
		wqe->num_sge = wr->num_sge;
		wqe->started = false;
		wqe->done = false;
		if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM) {
			wqe->remote_addr = rdma_wr(wr)->remote_addr;
			wqe->rkey = rdma_wr(wr)->rkey;
		} else {
			wqe->remote_addr = 0;
			wqe->rkey = 0;
		}
		qp->sq.prod++;
	}
	if (qp->state == IB_QPS_ERR)
		srdma_qp_flush(qp);
	else
		srdma_req_run(qp);
out_unlock:
	spin_unlock_bh(&qp->lock);
	return err;
}
