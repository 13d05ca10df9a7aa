// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma requester: post_send, packetizing SEND, WRITE and READ work
 * requests at the path MTU, the send window and the retransmit timer.
 *
 * Runs under the QP lock in process context (post_send, modify_qp), in
 * softirq when ACKs open the window (completer) and from the timer.
 */
#include <linux/skbuff.h>
#include <rdma/ib_addr.h>

#include "srdma.h"

/* rnr_retry 7 (IBTA 9.7.5.2.8): retry for ever, the count never runs out. */
#define SRDMA_RNR_RETRY_INFINITE	7
/* The local ACK timeout is 4.096 us * 2^timeout, timeout a 5-bit field. */
#define SRDMA_ACK_TIMEOUT_UNIT_NS	4096ULL
#define SRDMA_ACK_TIMEOUT_MAX		31
/*
 * RFC 6298: RTO = SRTT + K * RTTVAR; each sample moves SRTT by 1/8 and
 * RTTVAR by 1/4 of the difference.
 */
#define SRDMA_RTO_K			4
#define SRDMA_SRTT_DIV			8
#define SRDMA_RTTVAR_DIV		4
/* A tail-loss probe goes out after this many smoothed round trips. */
#define SRDMA_TLP_RTTS			2
/* The congestion window grows by this many packets per window acked. */
#define SRDMA_CWND_GROWTH		4
/* Ask for an ACK at least this many times per congestion window. */
#define SRDMA_ACKREQ_PER_CWND		4
/* RTT samples per epoch of the minimum RTT (srdma_min_rtt_sample()). */
#define SRDMA_MIN_RTT_EPOCH		256
/* The delay signal's margin above the minimum RTT is never below this. */
#define SRDMA_DELAY_MARGIN_MIN_US	10

/* RNR NAK timer field (IBTA table 45) in microseconds. */
static const u32 srdma_rnr_usecs[SRDMA_AETH_VALUE_MASK + 1] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* The QP's local ACK timeout in jiffies: 4.096 us * 2^timeout. */
static unsigned long srdma_ack_timeout(struct srdma_qp *qp)
{
	u64 ns = SRDMA_ACK_TIMEOUT_UNIT_NS <<
		 min_t(u8, qp->attr.timeout, SRDMA_ACK_TIMEOUT_MAX);

	return max_t(unsigned long, nsecs_to_jiffies(ns),
		     SRDMA_RTO_MIN_JIFFIES);
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
	rto = usecs_to_jiffies(qp->srtt_us + SRDMA_RTO_K * qp->rttvar_us);
	rto = max_t(unsigned long, rto, SRDMA_RTO_MIN_JIFFIES) <<
	      min_t(u8, qp->rto_backoff, SRDMA_RTO_BACKOFF_MAX);
	return min(rto, full);
}

/*
 * Arm the retransmit timer; 0 in the QP's timeout means never. Once per
 * stretch without progress it first fires as a tail-loss probe, after
 * about two round trips, if that comes before the retransmission timeout.
 */
static void srdma_arm_timer(struct srdma_qp *qp)
{
	unsigned long rto, pto;

	if (!srdma_qp_sq_running(qp) || !qp->attr.timeout)
		return;
	rto = srdma_rto(qp);
	qp->tlp_armed = false;
	if (qp->srtt_us && !qp->tlp_sent) {
		pto = max_t(unsigned long,
			    usecs_to_jiffies(SRDMA_TLP_RTTS * qp->srtt_us),
			    SRDMA_RTO_MIN_JIFFIES);
		if (pto < rto) {
			rto = pto;
			qp->tlp_armed = true;
		}
	}
	mod_timer(&qp->retrans_timer, jiffies + rto);
}

/*
 * Packet @psn, standing for @npkts PSNs (a READ request for its
 * responses), went out, asking for an ACK or not (@ackreq): time it if it
 * is a first transmission that asked, nothing is timed and it surely left
 * (@timed). Only a packet that asks is answered at once: one that waits
 * for a later AckReq would time the packets sent after it too, and with
 * pacing (srdma_pace_hold()) the delays the RTT itself sets. sent_psn,
 * which bounds the answers taken (srdma_comp_rcv()), moves past it.
 */
static void srdma_rtt_start(struct srdma_qp *qp, u32 psn, u32 npkts,
			    bool ackreq, bool timed)
{
	if (ackreq)	/* its answer covers it all: srdma_req_answer_due() */
		qp->ackreq_psn = srdma_psn_add(psn, npkts - 1);
	if (srdma_psn_diff(psn, qp->sent_psn) < 0) {
		/* A resend: counted, no sample from it. */
		srdma_count(qp->sdev, SRDMA_CNT_TX_RESENT);
		return;
	}
	if (ackreq && timed && !qp->rtt_pending) {
		qp->rtt_pending = true;
		qp->rtt_psn = psn;
		qp->rtt_start = ktime_get();
	}
	qp->sent_psn = srdma_psn_add(psn, npkts);
}

/*
 * Keep the least RTT of the current and the previous epoch of
 * SRDMA_MIN_RTT_EPOCH samples: a queue that builds up shows as samples
 * above it, and a path that became slower for good is learnt within two
 * epochs.
 */
static void srdma_min_rtt_sample(struct srdma_qp *qp, u32 m)
{
	/* Not from local delivery, whose RTT says nothing of a wire. */
	if (READ_ONCE(qp->dst_local))
		return;
	qp->last_rtt_us = m;
	if (!qp->epoch_samples || m < qp->epoch_min_rtt_us)
		qp->epoch_min_rtt_us = m;
	if (++qp->epoch_samples >= SRDMA_MIN_RTT_EPOCH) {
		qp->prev_min_rtt_us = qp->epoch_min_rtt_us;
		qp->epoch_samples = 0;
	}
}

/* The least RTT of the current and the previous epoch; 0: no sample. */
static u32 srdma_min_rtt(struct srdma_qp *qp)
{
	u32 m = qp->epoch_min_rtt_us;

	if (qp->prev_min_rtt_us && qp->prev_min_rtt_us < m)
		m = qp->prev_min_rtt_us;
	return m;
}

/**
 * srdma_req_forget_min_rtt() - start the delay signal's RTT over
 * @qp: the QP
 *
 * For a new send window or a new path (modify_qp with an address
 * vector): the least RTT of the old one says nothing of the new.
 *
 * Context: QP lock held.
 */
void srdma_req_forget_min_rtt(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	qp->last_rtt_us = 0;
	qp->epoch_min_rtt_us = 0;
	qp->prev_min_rtt_us = 0;
	qp->epoch_samples = 0;
}

/* Una moved to @una: finish the RTT sample if it is covered. */
static void srdma_rtt_sample(struct srdma_qp *qp, u32 una)
{
	s32 m, err;

	if (!qp->rtt_pending || srdma_psn_diff(una, qp->rtt_psn) <= 0)
		return;
	qp->rtt_pending = false;
	m = (s32)min_t(s64, ktime_us_delta(ktime_get(), qp->rtt_start),
		       S32_MAX);
	if (m <= 0)
		m = 1;
	srdma_min_rtt_sample(qp, m);
	if (!qp->srtt_us) {
		qp->srtt_us = m;
		qp->rttvar_us = m / 2;
		return;
	}
	err = m - (s32)qp->srtt_us;
	qp->srtt_us = (u32)((s32)qp->srtt_us + err / SRDMA_SRTT_DIV);
	qp->rttvar_us = (u32)((s32)qp->rttvar_us +
			      ((err < 0 ? -err : err) - (s32)qp->rttvar_us) /
			      SRDMA_RTTVAR_DIV);
	if (!qp->srtt_us)
		qp->srtt_us = 1;
}

/**
 * srdma_req_init_window() - start the send window afresh
 * @qp: the QP
 * @psn: its new send PSN
 *
 * Used by modify_qp when it sets the send PSN: the window, the RTT
 * estimate and the congestion window start over.
 *
 * Context: QP lock held.
 */
void srdma_req_init_window(struct srdma_qp *qp, u32 psn)
{
	lockdep_assert_held(&qp->lock);
	qp->next_psn = psn;
	qp->una_psn = psn;
	qp->sent_psn = psn;
	qp->ackreq_psn = srdma_psn_prev(psn);	/* no answer due */
	qp->rtt_pending = false;
	qp->srtt_us = 0;
	qp->rttvar_us = 0;
	srdma_req_forget_min_rtt(qp);
	qp->cwnd = SRDMA_CWND_INIT;
	qp->cwnd_acc = 0;
	qp->cwnd_cut = false;
	qp->tlp_sent = false;
	qp->tlp_armed = false;
	qp->una_probe = false;
	qp->pace_next = 0;
	qp->rto_backoff = 0;
	qp->rd_gap_psn = U32_MAX;	/* never a valid PSN */
	qp->last_progress = jiffies;
}

/* What one packet of the QP's MTU counts in the congestion window. */
static u32 srdma_cwnd_scale(struct srdma_qp *qp)
{
	return max_t(u32, qp->mtu / SRDMA_CWND_UNIT, 1);
}

/*
 * The congestion window in packets: what a wire buffers is bytes, so at
 * MTU 4096 the window holds a quarter as many packets as at 1024. Never
 * below two, so that go-back-N still has a packet behind the one lost.
 */
static u32 srdma_cwnd_pkts(struct srdma_qp *qp)
{
	return max_t(u32, qp->cwnd / srdma_cwnd_scale(qp), 2);
}

/*
 * A loss was seen (sequence NAK, missing READ response, timeout): halve
 * the congestion window, once per window of packets, so that go-back-N
 * resends little more than what the path holds.
 */
static void srdma_cwnd_loss(struct srdma_qp *qp)
{
	if (qp->cwnd_cut && srdma_psn_diff(qp->una_psn, qp->recover_psn) < 0)
		return;
	qp->cwnd = max_t(u32, qp->cwnd / 2, SRDMA_CWND_MIN);
	qp->cwnd_acc = 0;
	qp->recover_psn = qp->next_psn;
	qp->cwnd_cut = true;
}

/*
 * Delay target, in percent of the path's RTT without a queue: while the
 * latest RTT sample is more than this above it, a queue is building on
 * the way and the window stops growing, before the queue overflows.
 */
static unsigned int delay_target_pct = 50;
module_param(delay_target_pct, uint, 0644);
MODULE_PARM_DESC(delay_target_pct,
		 "RC congestion window: no growth while the RTT is this many percent above its minimum (default 50, 0: off)");

/*
 * Is the latest RTT sample above the delay target? Never to a QP on this
 * host: local delivery has no wire buffer to overflow (as for pacing).
 */
static bool srdma_cwnd_queueing(struct srdma_qp *qp)
{
	u32 pct = READ_ONCE(delay_target_pct);
	u32 min = srdma_min_rtt(qp);
	u64 target;

	if (!pct || !min || READ_ONCE(qp->dst_local))
		return false;
	target = min + max_t(u64, div_u64((u64)min * pct, 100),
			     SRDMA_DELAY_MARGIN_MIN_US);
	return qp->last_rtt_us > target;
}

/*
 * @npkts more packets acknowledged: grow by four units per window, so
 * that a window cut by a burst of drops comes back within a few dozen
 * round trips; above the initial window, not while the RTT says that a
 * queue builds up (the window never stays below where it starts).
 */
static void srdma_cwnd_ack(struct srdma_qp *qp, u32 npkts)
{
	u32 step;

	if (qp->cwnd >= SRDMA_WINDOW)
		return;
	if (qp->cwnd >= SRDMA_CWND_INIT && srdma_cwnd_queueing(qp)) {
		qp->cwnd_acc = 0;
		srdma_count(qp->sdev, SRDMA_CNT_CWND_HOLDS);
		return;
	}
	qp->cwnd_acc += npkts * srdma_cwnd_scale(qp);
	step = max_t(u32, qp->cwnd / SRDMA_CWND_GROWTH, 1);
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
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case SRDMA_WR_ATOMIC_WRITE:
		return SRDMA_WC_ATOMIC_WRITE;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_WC_SEND;
	}
}

/* A work request the requester carries out alone, without a packet. */
static bool srdma_wr_is_local(u32 wr_opcode)
{
	return wr_opcode == IB_WR_REG_MR || wr_opcode == IB_WR_LOCAL_INV ||
	       wr_opcode == IB_WR_BIND_MW;
}

/**
 * srdma_req_complete() - retire the oldest send work request
 * @qp: the QP
 * @wqe: its oldest SQ entry
 * @status: how it ended
 *
 * Posts a completion if @wqe is signaled or failed. A failure other than a
 * flush moves the QP to ERR, or a UD or UC QP to SQE (srdma_qp_to_sqe()).
 *
 * Context: QP lock held.
 */
void srdma_req_complete(struct srdma_qp *qp, struct srdma_send_wqe *wqe,
			enum ib_wc_status status)
{
	struct ib_wc wc = {};

	lockdep_assert_held(&qp->lock);
	if (srdma_wr_is_rd_atomic(wqe->opcode) && wqe->started &&
	    !wqe->done && qp->rd_outstanding)
		qp->rd_outstanding--;
	/* The slot is free by the time the completion can be seen. */
	qp->sq.cons++;
	srdma_uring_consumed(&qp->usq, qp->sq.cons);
	if (status != IB_WC_SUCCESS || qp->sig_all ||
	    (wqe->send_flags & IB_SEND_SIGNALED)) {
		wc.wr_id = wqe->wr_id;
		wc.status = status;
		wc.opcode = srdma_wc_opcode(wqe->opcode);
		wc.byte_len = srdma_wr_is_rd_atomic(wqe->opcode) ?
			      wqe->length : 0;
		wc.qp = &qp->ibqp;
		wc.port_num = SRDMA_PORT_NUM;
		srdma_cq_post(to_scq(qp->ibqp.send_cq), &wc, false);
	}
	if (qp->sq_next - qp->sq.cons > qp->sq.prod - qp->sq.cons) {
		qp->sq_next = qp->sq.cons;
		qp->sq_next_off = 0;
	}
	if (status != IB_WC_SUCCESS && status != IB_WC_WR_FLUSH_ERR) {
		srdma_dbg_qp(qp, "wr %llu failed: %s\n", wqe->wr_id,
			     ib_wc_status_msg(status));
		srdma_qp_to_sqe(qp);
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
		if (srdma_wr_is_one_req(wqe->opcode)) {
			/* One request, held until its response arrives. */
			if (!wqe->done && wqe->rd_sent_off && qp->rd_reqs)
				qp->rd_reqs--;
			wqe->rd_sent_off = 0;
			continue;
		}
		if (wqe->opcode != IB_WR_RDMA_READ)
			continue;
		if (!wqe->length) {
			/* As one request, held until its one response. */
			if (!wqe->done && wqe->rd_zero_asked && qp->rd_reqs)
				qp->rd_reqs--;
			wqe->rd_zero_asked = false;
			continue;
		}
		qp->rd_reqs -= min(qp->rd_reqs, srdma_rd_chunks_out(qp, wqe));
		wqe->rd_sent_off = min(wqe->rd_sent_off, off);
	}
}

/* Go back to resend from @psn (go-back-N). QP lock held. */
static void srdma_req_rewind(struct srdma_qp *qp, u32 psn)
{
	struct srdma_send_wqe *wqe;
	u32 i;

	lockdep_assert_held(&qp->lock);
	qp->rtt_pending = false;	/* no samples from resent packets */
	qp->una_probe = false;		/* all of it goes again */
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

/**
 * srdma_req_acked() - the completer saw the peer acknowledge more
 * @qp: the QP
 * @una: the oldest PSN still unacknowledged, as the ACKs and READ
 *	 responses received tell
 * @retired: work requests were retired, whether @una moved or not
 *
 * Grows the congestion window and takes an RTT sample for what @una
 * covers. On any progress, the retry counts start over and the retransmit
 * timer restarts, or stops if nothing is left in flight.
 *
 * Context: softirq, or a doorbell with BHs off; QP lock held.
 */
void srdma_req_acked(struct srdma_qp *qp, u32 una, bool retired)
{
	bool progress = retired;

	lockdep_assert_held(&qp->lock);
	if (srdma_psn_diff(una, qp->una_psn) > 0) {
		/* The sample first: the growth is judged on the newest. */
		srdma_rtt_sample(qp, una);
		srdma_cwnd_ack(qp, (u32)srdma_psn_diff(una, qp->una_psn));
		qp->una_psn = una;
		progress = true;
	}
	if (!progress)
		return;
	if (qp->una_probe) {
		/*
		 * The first ACK after a timeout's probe. Covering exactly
		 * the probe, with more sent: that was all that arrived, the
		 * rest was lost; go back N now. Covering more: the packets
		 * were late, not lost, and nothing is sent again.
		 */
		qp->una_probe = false;
		if (una == srdma_psn_add(qp->una_probe_psn, 1) &&
		    srdma_psn_diff(qp->sent_psn, una) > 0)
			srdma_req_loss(qp, una);
	}
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

/**
 * srdma_req_loss() - the completer saw a packet from @psn on get lost
 * @qp: the QP
 * @psn: the first PSN to send again
 *
 * Counts a retransmission, halves the congestion window (once per window)
 * and goes back to send again from @psn (go-back-N). The requester sends
 * when it runs next.
 *
 * Context: softirq, or a doorbell with BHs off; QP lock held.
 */
void srdma_req_loss(struct srdma_qp *qp, u32 psn)
{
	lockdep_assert_held(&qp->lock);
	srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
	srdma_cwnd_loss(qp);
	srdma_req_rewind(qp, psn);
}

/**
 * srdma_req_rnr() - the responder was not ready for @psn (RNR NAK)
 * @qp: the QP
 * @psn: the PSN the RNR NAK is for
 * @timer: the RNR timer it carries (IBTA table 45)
 *
 * Uses up an RNR retry (none if rnr_retry is 7, infinite), goes back to
 * @psn and waits out @timer before sending again.
 *
 * Context: softirq, or a doorbell with BHs off; QP lock held.
 * Return: true, or false with nothing done if no RNR retry is left.
 */
bool srdma_req_rnr(struct srdma_qp *qp, u32 psn, u8 timer)
{
	lockdep_assert_held(&qp->lock);
	if (!qp->rnr_left)
		return false;
	if (qp->attr.rnr_retry != SRDMA_RNR_RETRY_INFINITE)
		qp->rnr_left--;
	srdma_req_rewind(qp, psn);
	qp->rnr_wait = true;
	/*
	 * The wait is timed to the microsecond: the usual timers (0.01 to
	 * 1.92 ms) are shorter than a jiffy, and a sender that meets its
	 * receiver's empty queue would otherwise idle a whole jiffy each
	 * time. The ACK timer stops meanwhile; the pace timer that ends the
	 * wait arms it again if something is still outstanding.
	 */
	del_timer(&qp->retrans_timer);
	qp->rnr_until = ktime_add_us(ktime_get(),
				     srdma_rnr_usecs[timer & SRDMA_AETH_VALUE_MASK]);
	hrtimer_start(&qp->pace_timer, qp->rnr_until, HRTIMER_MODE_ABS_SOFT);
	return true;
}

static u8 srdma_req_opcode(struct srdma_send_wqe *wqe, bool first, bool last)
{
	bool imm = wqe->opcode == IB_WR_SEND_WITH_IMM ||
		   wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM;

	if (wqe->opcode == SRDMA_WR_ATOMIC_WRITE)
		return SRDMA_OP_ATOMIC_WRITE;	/* 8 bytes: one packet */
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
	if (wqe->opcode == IB_WR_SEND_WITH_INV && last)
		return first ? SRDMA_OP_SEND_ONLY_INV : SRDMA_OP_SEND_LAST_INV;
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

/* Does a message of @opcode take a receive WQE at the responder? */
static bool srdma_wr_takes_recv(u32 opcode)
{
	return opcode == IB_WR_SEND || opcode == IB_WR_SEND_WITH_IMM ||
	       opcode == IB_WR_SEND_WITH_INV ||
	       opcode == IB_WR_RDMA_WRITE_WITH_IMM;
}

/* Do the peer's credits cover @wqe, the next message to start? */
static bool srdma_req_credits_cover(struct srdma_qp *qp,
				    struct srdma_send_wqe *wqe)
{
	return !qp->credits_on || !srdma_wr_takes_recv(wqe->opcode) ||
	       srdma_psn_diff(srdma_psn_add(qp->ssn, 1), qp->lsn) <= 0;
}

/*
 * Is an answer on its way: a packet sent with AckReq (or a READ request)
 * and not yet acknowledged? Its ACK runs the requester again.
 */
static bool srdma_req_answer_due(struct srdma_qp *qp)
{
	return srdma_psn_diff(qp->ackreq_psn, qp->una_psn) >= 0 &&
	       srdma_psn_diff(qp->ackreq_psn, qp->next_psn) < 0;
}

/*
 * May @wqe, not started, start as far as the peer's credits go? Within
 * them; beyond them only when no answer is due, since the peer tells of
 * receives posted later only in its next ACK: the message then draws one
 * with a fresh count (or an RNR NAK), and a held one never waits for an
 * ACK that nothing asked for.
 */
static bool srdma_req_credit_ok(struct srdma_qp *qp,
				struct srdma_send_wqe *wqe)
{
	return srdma_req_credits_cover(qp, wqe) || !srdma_req_answer_due(qp);
}

/**
 * srdma_req_credits() - an ACK told the peer's receive credits
 * @qp: the QP
 * @msn: the ACK's MSN
 * @code: its credit count (IBTA 9.7.7.2), or SRDMA_AETH_CREDIT_INVALID
 *
 * Messages up to @msn plus the count may take receives; an invalid count
 * (an SRQ, or a peer that does not count) lifts the limit. The limit never
 * moves back while counts come: they are rounded down, and an ACK may
 * carry an older MSN (one deferred behind READ responses, or reordered).
 *
 * Context: softirq, or a doorbell with BHs off; QP lock held.
 */
void srdma_req_credits(struct srdma_qp *qp, u32 msn, u8 code)
{
	u32 lsn;

	lockdep_assert_held(&qp->lock);
	if (qp->ibqp.qp_type != IB_QPT_RC)
		return;
	code &= SRDMA_AETH_VALUE_MASK;
	if (code == SRDMA_AETH_CREDIT_INVALID) {
		qp->credits_on = false;
		return;
	}
	lsn = srdma_psn_add(msn, srdma_credits_decode(code));
	if (!qp->credits_on || srdma_psn_diff(lsn, qp->lsn) > 0)
		qp->lsn = lsn;
	qp->credits_on = true;
}

/*
 * Will another SEND or WRITE packet follow the current work request's
 * last one right away? Not if nothing is posted behind it, or if what is
 * waits for this one's ACK (a fence, a READ over the limit, SQD), or is a
 * local operation (which sends nothing).
 */
static bool srdma_more_follows(struct srdma_qp *qp)
{
	struct srdma_send_wqe *next;

	if (qp->sq_next + 1 == qp->sq.prod || qp->state != IB_QPS_RTS)
		return false;
	next = srdma_ring_slot(&qp->sq, qp->sq_next + 1);
	if (srdma_wr_is_local(next->opcode))
		return false;
	/* Beyond the credits: this packet must draw the ACK that brings more. */
	if (!next->started && !srdma_req_credits_cover(qp, next))
		return false;
	return (next->started && !next->done) ||
	       (!srdma_wr_is_rd_atomic(next->opcode) &&
		!(next->send_flags & IB_SEND_FENCE));
}

/* Fill @len bytes of payload from @src: into @skb's fragments, or @buf. */
int srdma_payload_fill(struct srdma_qp *qp,
		       const struct srdma_payload_src *src,
		       struct sk_buff *skb, u8 *buf, u32 len)
{
	int err;

	if (!len)
		return 0;	/* a READ of nothing has no MR */
	if (src->inline_data) {	/* always copied: @buf */
		if (!buf)
			return -EOPNOTSUPP;	/* the caller copies */
		srdma_memcpy(buf, src->inline_data + src->off, len);
		return 0;
	}
	if (!src->mr)
		return srdma_sge_copy(qp, src->sge, src->num_sge, src->off,
				      buf, skb, 0, len, false,
				      SRDMA_ODP_KICK_RUN);
	if (skb)
		return srdma_mr_attach(src->mr, src->serial, src->iova, skb,
				       len);
	/* A READ response: the read work faults on-demand pages in. */
	err = srdma_mr_copy(src->mr, src->serial, src->iova, buf, len, false);
	return err == -EFAULT ? -EACCES : err;
}

/**
 * srdma_data_pkt() - build a packet whose payload comes from memory
 * @qp: the QP that sends it
 * @pkt: its headers, with pkt->paylen bytes of payload
 * @src: where the payload comes from
 *
 * Payloads of at least SRDMA_ZCOPY_MIN bytes go out from the memory's own
 * pages, attached to the skb, unless @src asks for a copy or the route's
 * device cannot take fragments (srdma_qp_note_dst()); smaller ones
 * are copied, and so are large ones whose pages cannot be attached (a DMA MR, too many pieces, no
 * memory for the pad).
 *
 * Context: QP lock held.
 * Return: the packet, ready for srdma_xmit(); ERR_PTR(-ENOMEM) if none
 * could be allocated, or the error of the copy: -EACCES or -EINVAL if the
 * memory is out of reach (a bad key, right or range).
 */
struct sk_buff *srdma_data_pkt(struct srdma_qp *qp, struct srdma_pkt *pkt,
			       const struct srdma_payload_src *src)
{
	bool zcopy = pkt->paylen >= SRDMA_ZCOPY_MIN && !src->copy &&
		     READ_ONCE(qp->dst_frags);
	struct sk_buff *skb;
	u8 *payload;
	int err;

	lockdep_assert_held(&qp->lock);
	for (;;) {
		skb = srdma_alloc_pkt(qp, pkt, zcopy ? NULL : &payload);
		if (!skb)
			return ERR_PTR(-ENOMEM);
		if (zcopy) {
			err = srdma_payload_fill(qp, src, skb, NULL,
						 pkt->paylen);
			if (!err)
				err = srdma_pkt_seal(skb, pkt);
		} else {
			err = srdma_payload_fill(qp, src, NULL, payload,
						 pkt->paylen);
		}
		if (!err)
			return skb;
		kfree_skb(skb);
		if (!zcopy || err == -EACCES || err == -EINVAL ||
		    err == -EAGAIN)
			return ERR_PTR(err);
		zcopy = false;	/* DMA MR, too many pieces, memory */
	}
}

/*
 * Can the pages of @src be attached (srdma_mr_attachable())? Not a kernel
 * QP's memory, which only kernel MRs hold, nor a READ's MR that is not a
 * plain user MR: such payloads go alone, copied, without a try that would
 * fail. A user QP's SGEs may still name an on-demand or dma-buf MR:
 * srdma_batch_data() then finds out.
 */
static bool srdma_batch_attachable(struct srdma_qp *qp,
				   const struct srdma_payload_src *src)
{
	return src->mr ? srdma_mr_attachable(src->mr) : qp->is_user;
}

/*
 * Send the QP's full batch to make room for the next packet. If the batch
 * was dropped on this host, so is that packet, as if sent: counted, and
 * the error returned for it.
 */
static int srdma_batch_make_room(struct srdma_qp *qp)
{
	int err = srdma_batch_flush(qp);

	if (err)
		srdma_count(qp->sdev, SRDMA_CNT_TX_ERR);
	return err;
}

/*
 * Put data packet @pkt, its payload from @src, in the QP's local delivery
 * batch (srdma_batch_add()), in a new one if this one has no room. The
 * payload is attached as srdma_data_pkt() would, or copied into the
 * batch. 0; -ENOSPC if it could not go in a batch (a payload to copy
 * that is too big, pages that cannot be attached, no memory): the caller
 * sends it alone. Else the error of the payload, as srdma_data_pkt(), or
 * that of a full batch sent to make room, as srdma_xmit(): dropped on
 * this host, and this packet with it.
 */
static int srdma_batch_data(struct srdma_qp *qp, struct srdma_pkt *pkt,
			    const struct srdma_payload_src *src)
{
	bool copy = pkt->paylen < SRDMA_ZCOPY_MIN || src->copy;
	bool fresh = !qp->batch;
	u32 ent_len, len;
	u8 *payload;
	int err;

	if (!copy && !srdma_batch_attachable(qp, src))
		return -ENOSPC;
	for (;;) {
		payload = srdma_batch_add(qp, pkt, copy ? pkt->paylen : 0,
					  &ent_len);
		if (payload)
			break;
		if (fresh)
			return -ENOSPC;
		err = srdma_batch_make_room(qp);
		if (err)
			return err;
		fresh = true;
	}
	len = qp->batch->len;
	if (copy)
		err = srdma_payload_fill(qp, src, NULL, payload, pkt->paylen);
	else
		err = srdma_payload_fill(qp, src, qp->batch, NULL,
					 pkt->paylen);
	if (!err) {
		srdma_batch_commit(qp, ent_len);
		return 0;
	}
	/* Leave the packet out: drop the fragments it added. */
	if (!copy && WARN_ON_ONCE(pskb_trim(qp->batch, len))) {
		/*
		 * Never for an skb of our own (not cloned). If it did, the
		 * batch is lost, as on a wire: a NAK or the timer resends.
		 */
		srdma_count_add(qp->sdev, SRDMA_CNT_TX_ERR,
				srdma_loop_cb(qp->batch)->nsub);
		kfree_skb(qp->batch);
		qp->batch = NULL;
	}
	if (err == -EACCES || err == -EINVAL || err == -EAGAIN)
		return err;
	if (err == -EMSGSIZE && !fresh) {
		/* Out of fragments: a new batch has them all. */
		return srdma_batch_make_room(qp) ?:
		       srdma_batch_data(qp, pkt, src);
	}
	return -ENOSPC;
}

/**
 * srdma_data_xmit() - send a SEND, WRITE or READ response packet
 * @qp: the QP that sends it
 * @pkt: its headers, with pkt->paylen bytes of payload
 * @src: where the payload comes from
 * @alone: likely the only packet this run sends: no batch for it alone
 *
 * Into the QP's local delivery batch while it gathers one, else alone.
 *
 * Context: QP lock held.
 * Return: 0, or an error of srdma_data_pkt() or srdma_xmit().
 */
int srdma_data_xmit(struct srdma_qp *qp, struct srdma_pkt *pkt,
		    const struct srdma_payload_src *src, bool alone)
{
	struct sk_buff *skb;
	int err;

	lockdep_assert_held(&qp->lock);
	err = srdma_rcv_direct(qp, pkt, src);
	if (err != -EOPNOTSUPP)
		return err;
	if (qp->batching && (qp->batch || !alone)) {
		err = srdma_batch_data(qp, pkt, src);
		if (err != -ENOSPC)
			return err;
	}
	skb = srdma_data_pkt(qp, pkt, src);
	if (IS_ERR(skb))
		return PTR_ERR(skb);
	return srdma_xmit(qp, skb);
}

/*
 * Send the READ request of @wqe from qp->sq_next_off. Large READs go out
 * as a series of requests of at most SRDMA_READ_CHUNK packets. A request
 * asked again from the middle of one ends where the original ended: the
 * responder accepted exactly that PSN range.
 */
static int srdma_req_read_packet(struct srdma_qp *qp,
				 struct srdma_send_wqe *wqe,
				 struct srdma_pkt *pkt)
{
	u32 off = qp->sq_next_off, mtu = qp->mtu, idx = off / mtu;
	struct sk_buff *skb;
	u8 *payload;

	pkt->opcode = SRDMA_OP_READ_REQ;
	pkt->va = wqe->remote_addr + off;
	pkt->rkey = wqe->rkey;
	pkt->dmalen = min(wqe->length - off,
			  (SRDMA_READ_CHUNK - idx % SRDMA_READ_CHUNK) * mtu);
	pkt->ackreq = 1;
	skb = srdma_alloc_pkt(qp, pkt, &payload);
	if (!skb)
		return -ENOMEM;
	/*
	 * Counted once per request the responder holds. A READ of no data
	 * is one request, sent again after a rewind only once forgotten
	 * (srdma_rd_forget()): counted each time it left, every resend of
	 * one took a slot of the initiator depth for good (helper-77).
	 */
	if (!wqe->length) {
		if (!wqe->rd_zero_asked)
			qp->rd_reqs++;
		wqe->rd_zero_asked = true;
	} else if (off >= wqe->rd_sent_off) {
		qp->rd_reqs++;
		wqe->rd_sent_off = off + pkt->dmalen;
	}
	qp->sq_next_off = off + pkt->dmalen;
	qp->pkts_since_ackreq = 0;
	return srdma_xmit(qp, skb);
}

/*
 * Single-request @wqe (an atomic, an ATOMIC WRITE) went out: the responder
 * holds it, as it holds a READ request, until it answers. Counted once,
 * until a rewind forgets it (srdma_rd_forget()).
 */
static void srdma_req_one_sent(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	if (!wqe->rd_sent_off) {
		qp->rd_reqs++;
		wqe->rd_sent_off = wqe->length;
	}
}

/*
 * May the 8-byte local SGE of atomic @wqe take its result? Checked before
 * the request goes out, so that the responder never carries out an
 * atomic whose result has nowhere to go, and again when the result comes
 * back (srdma_sge_copy()). 0 or -EACCES.
 */
static int srdma_req_atomic_sge_ok(struct srdma_qp *qp,
				   struct srdma_send_wqe *wqe)
{
	struct srdma_sge *sge = &wqe->sge[0];
	struct srdma_mr *mr;
	u64 serial = 0;
	int err;

	if (wqe->num_sge != 1 || sge->length != sizeof(u64))
		return -EINVAL;
	mr = srdma_mr_get(qp->sdev, sge->lkey, false);
	if (!mr)
		return -EACCES;
	/* As srdma_sge_copy(): a user QP's SGEs name user MRs only. */
	if (mr->type != SRDMA_MR_USER && qp->is_user)
		err = -EACCES;
	else
		err = srdma_mr_check(mr, qp, sge->lkey, sge->addr,
				     sge->length, IB_ACCESS_LOCAL_WRITE,
				     &serial);
	srdma_mr_put(mr);
	return err ? -EACCES : 0;
}

/*
 * Send the COMPARE SWAP or FETCH ADD request of @wqe (again, after a
 * loss: the responder answers a duplicate from its replay cache and never
 * carries it out twice). It counts against max_rd_atomic like a READ
 * request until its ATOMIC ACKNOWLEDGE arrives.
 */
static int srdma_req_atomic_packet(struct srdma_qp *qp,
				   struct srdma_send_wqe *wqe,
				   struct srdma_pkt *pkt)
{
	bool cas = wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP;
	struct sk_buff *skb;
	u8 *payload;
	int err;

	err = srdma_req_atomic_sge_ok(qp, wqe);
	if (err)
		return err;
	pkt->opcode = cas ? SRDMA_OP_COMPARE_SWAP : SRDMA_OP_FETCH_ADD;
	pkt->va = wqe->remote_addr;
	pkt->rkey = wqe->rkey;
	pkt->swap_add = cas ? wqe->swap : wqe->compare_add;
	pkt->compare = cas ? wqe->compare_add : 0;
	pkt->ackreq = 1;
	skb = srdma_alloc_pkt(qp, pkt, &payload);
	if (!skb)
		return -ENOMEM;
	srdma_req_one_sent(qp, wqe);
	qp->sq_next_off = wqe->length;
	qp->pkts_since_ackreq = 0;
	return srdma_xmit(qp, skb);
}

/*
 * Does the next SEND or WRITE packet, the end of what can be sent now
 * (@end) or not, ask for an ACK? ACKs are coalesced: ask for one at the
 * end, and at least four times per window to keep it moving.
 */
static bool srdma_req_ackreq(struct srdma_qp *qp, bool end)
{
	u32 every = min_t(u32, SRDMA_ACKREQ_EVERY,
			  max_t(u32, srdma_cwnd_pkts(qp) / SRDMA_ACKREQ_PER_CWND,
				1));

	qp->pkts_since_ackreq++;
	if (end || qp->pkts_since_ackreq >= every) {
		qp->pkts_since_ackreq = 0;
		return true;
	}
	return false;
}

/*
 * Was the packet that srdma_req_packet() tried made and handed to
 * srdma_xmit(), given its result @err? Not for a bad local SGE (-EACCES,
 * -EINVAL), on-demand pages not present (-EAGAIN) or no memory (-ENOMEM);
 * srdma_xmit()'s own errors may be an earlier batch's or train's, with
 * this packet sent after all.
 */
static bool srdma_req_pkt_made(int err)
{
	return err != -EACCES && err != -EINVAL && err != -EAGAIN &&
	       err != -ENOMEM;
}

/* Send the SEND or WRITE packet of @wqe at qp->sq_next_off. */
static int srdma_req_data_packet(struct srdma_qp *qp,
				 struct srdma_send_wqe *wqe,
				 struct srdma_pkt *pkt)
{
	u32 off = qp->sq_next_off;
	const struct srdma_payload_src src = {
		.sge = wqe->sge,
		.num_sge = wqe->num_sge,
		.off = off,
		.inline_data = srdma_wqe_inline(wqe),
		.copy = !!srdma_wqe_inline(wqe),
	};
	struct sk_buff *skb;
	bool last, end;
	int err;

	pkt->paylen = min(qp->mtu, wqe->length - off);
	last = off + pkt->paylen >= wqe->length;
	pkt->opcode = srdma_req_opcode(wqe, off == 0, last);
	if (srdma_op_flags(pkt->opcode) & SRDMA_F_RETH) {
		pkt->va = wqe->remote_addr;
		pkt->rkey = wqe->rkey;
		pkt->dmalen = wqe->length;
	}
	pkt->imm = (__force u32)wqe->imm;
	if (wqe->opcode == IB_WR_SEND_WITH_INV)
		pkt->inv_rkey = wqe->rkey;
	pkt->se = last && (wqe->send_flags & IB_SEND_SOLICITED);
	if (wqe->opcode == SRDMA_WR_ATOMIC_WRITE) {
		pkt->ackreq = 1;	/* answered anyway: a READ response */
		qp->pkts_since_ackreq = 0;
		skb = srdma_data_pkt(qp, pkt, &src);
		if (IS_ERR(skb))
			return PTR_ERR(skb);
		srdma_req_one_sent(qp, wqe);
		qp->sq_next_off = off + pkt->paylen;
		return srdma_xmit(qp, skb);
	}
	/* The last packet of its message, with nothing right behind it. */
	end = last && !srdma_more_follows(qp);
	pkt->ackreq = srdma_req_ackreq(qp, end);
	err = srdma_data_xmit(qp, pkt, &src, end);
	/* Not made (its memory), or made and dropped on this host. */
	if (!srdma_req_pkt_made(err))
		return err;
	qp->sq_next_off = off + pkt->paylen;
	return err;
}

/*
 * Send the next packet of @wqe at qp->sq_next_off. 0, or -EACCES and
 * -EINVAL for bad local SGEs, or why the packet was dropped on this host:
 * no memory (-ENOMEM), no route (-EHOSTUNREACH), the local delivery queue
 * full (-ENOBUFS), the IP stack refusing it (-EIO). Those stop the run and
 * the timer sends the packet again, even on a QP with no ACK timeout; a
 * packet the wire loses later is the ACK timeout's. QP lock held.
 */
static int srdma_req_packet(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	struct srdma_pkt pkt = {
		.pkey = SRDMA_DEFAULT_PKEY,
		.dqpn = qp->attr.dest_qp_num,
		.psn = srdma_psn_add(wqe->first_psn,
				     qp->sq_next_off / qp->mtu),
		.xrc_srqn = wqe->xrc_srqn,	/* XRC initiators only */
	};
	bool placed;
	int err;

	lockdep_assert_held(&qp->lock);
	if (wqe->opcode == IB_WR_RDMA_READ)
		err = srdma_req_read_packet(qp, wqe, &pkt);
	else if (srdma_wr_is_atomic(wqe->opcode))
		err = srdma_req_atomic_packet(qp, wqe, &pkt);
	else
		err = srdma_req_data_packet(qp, wqe, &pkt);
	/*
	 * Made: it counts as sent (a drop on this host is a loss like the
	 * wire's), and is timed only if all went well (helper-81) and it
	 * went as a packet (a placement is answered before this).
	 */
	placed = qp->direct_placed;
	qp->direct_placed = false;
	if (srdma_req_pkt_made(err))
		srdma_rtt_start(qp, pkt.psn,
				wqe->opcode == IB_WR_RDMA_READ ?
				srdma_npkts(pkt.dmalen, qp->mtu) : 1,
				pkt.ackreq, !err && !placed);
	return err;
}

/*
 * May @wqe, the next work request not started, start now? Not in SQD, not
 * a READ or atomic while the responder holds all the READs and atomics it
 * takes, not a fenced one while READs or atomics are outstanding, not
 * beyond the congestion window.
 */
static bool srdma_req_may_start(struct srdma_qp *qp,
				struct srdma_send_wqe *wqe)
{
	/* SQD: finish what was started, start nothing new. */
	if (qp->state == IB_QPS_SQD)
		return false;
	if (srdma_wr_is_rd_atomic(wqe->opcode) &&
	    (qp->rd_outstanding >= max_t(u8, qp->attr.max_rd_atomic, 1) ||
	     srdma_rd_full(qp)))
		return false;
	if ((wqe->send_flags & IB_SEND_FENCE) && qp->rd_outstanding)
		return false;
	if (!srdma_req_credit_ok(qp, wqe)) {
		if (!qp->credit_wait)
			srdma_count(qp->sdev, SRDMA_CNT_CREDIT_WAIT);
		qp->credit_wait = true;
		return false;
	}
	return srdma_psn_diff(qp->next_psn, qp->una_psn) <
	       (s32)srdma_cwnd_pkts(qp);
}

/*
 * Start @wqe: give it its PSNs from qp->next_psn on. -EMSGSIZE if it
 * takes more packets than a message may.
 */
static int srdma_req_start(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	wqe->npkts = srdma_npkts(wqe->length, qp->mtu);
	if (wqe->npkts > SRDMA_MAX_MSG_PKTS) {
		/* Posted before the path MTU shrank. */
		srdma_dbg_qp(qp, "wr %llu: %u packets, max %lu\n",
			     wqe->wr_id, wqe->npkts, SRDMA_MAX_MSG_PKTS);
		return -EMSGSIZE;
	}
	wqe->first_psn = qp->next_psn;
	wqe->last_psn = srdma_psn_add(qp->next_psn, wqe->npkts - 1);
	wqe->rd_next_psn = wqe->first_psn;
	wqe->rd_sent_off = 0;
	wqe->rd_zero_asked = false;
	wqe->started = true;
	wqe->done = false;
	qp->next_psn = srdma_psn_add(qp->next_psn, wqe->npkts);
	/*
	 * Message numbers as the responder's MSN counts them (24 bits, like
	 * PSNs): a READ goes as one request per SRDMA_READ_CHUNK responses.
	 */
	qp->ssn = srdma_psn_add(qp->ssn, wqe->opcode == IB_WR_RDMA_READ ?
				DIV_ROUND_UP(wqe->npkts, SRDMA_READ_CHUNK) : 1);
	qp->credit_wait = false;
	qp->sq_next_off = 0;
	if (srdma_wr_is_rd_atomic(wqe->opcode))
		qp->rd_outstanding++;
	return 0;
}

/*
 * Where started @wqe goes on: qp->sq_next_off, for a READ never before
 * the responses already placed (they are not asked for again).
 */
static u32 srdma_req_resume_off(struct srdma_qp *qp,
				struct srdma_send_wqe *wqe)
{
	u32 off;

	if (wqe->opcode != IB_WR_RDMA_READ)
		return qp->sq_next_off;
	off = (u32)srdma_psn_diff(wqe->rd_next_psn, wqe->first_psn) * qp->mtu;
	return max(qp->sq_next_off, off);
}

/*
 * May started @wqe go on at @off? Not a READ while the responder holds
 * all the READs it takes, nor beyond the congestion window.
 */
static bool srdma_req_may_resume(struct srdma_qp *qp,
				 struct srdma_send_wqe *wqe, u32 off)
{
	u32 psn;

	if (wqe->opcode == IB_WR_RDMA_READ && srdma_rd_full(qp))
		return false;
	/* An atomic sent again after a rewind counts anew. */
	if (srdma_wr_is_one_req(wqe->opcode) && !wqe->rd_sent_off &&
	    srdma_rd_full(qp))
		return false;
	psn = srdma_psn_add(wqe->first_psn, off / qp->mtu);
	return srdma_psn_diff(psn, qp->una_psn) < (s32)srdma_cwnd_pkts(qp);
}

/* Move to where started @wqe goes on, and say whether it may. */
static bool srdma_req_resume(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	qp->sq_next_off = srdma_req_resume_off(qp, wqe);
	return srdma_req_may_resume(qp, wqe, qp->sq_next_off);
}

/*
 * @wqe, at qp->sq_next, failed with @status: the older work requests are
 * flushed, @wqe completes with @status and the QP goes to ERR.
 */
static void srdma_req_fail_status(struct srdma_qp *qp,
				  struct srdma_send_wqe *wqe,
				  enum ib_wc_status status)
{
	struct srdma_send_wqe *old;

	qp->sq_error = true;
	while ((s32)(qp->sq_next - qp->sq.cons) > 0) {
		old = srdma_ring_slot(&qp->sq, qp->sq.cons);
		srdma_req_complete(qp, old, IB_WC_WR_FLUSH_ERR);
	}
	srdma_req_complete(qp, wqe, status);
}

/* @wqe cannot be sent (@err): a local error, as srdma_req_fail_status(). */
static void srdma_req_fail(struct srdma_qp *qp, struct srdma_send_wqe *wqe,
			   int err)
{
	srdma_req_fail_status(qp, wqe, err == -EACCES || err == -EINVAL ?
			      IB_WC_LOC_PROT_ERR : IB_WC_LOC_LEN_ERR);
}

/* The transmit position moves on to the next work request. */
static void srdma_req_next_wqe(struct srdma_qp *qp)
{
	qp->sq_next++;
	qp->sq_next_off = 0;
}

/*
 * Carry out local @wqe (REG_MR, LOCAL_INV, BIND_MW) at qp->sq_next, in
 * order with the work requests around it: when it is reached, after what
 * the fence makes it wait for. It takes no PSN; its last PSN is the one
 * before it, so it retires as soon as the work requests before it have
 * (at once if they have already). False if it failed: the QP is in ERR.
 */
static bool srdma_req_local(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	bool reg = wqe->opcode == IB_WR_REG_MR;
	bool bind = wqe->opcode == IB_WR_BIND_MW;
	int err;

	if (reg)
		err = srdma_fr_register(qp, wqe->reg_mr, wqe->rkey,
					wqe->reg_access, wqe->remote_addr,
					wqe->reg_len);
	else if (bind)
		err = srdma_mw_bind(qp, wqe);
	else
		err = srdma_invalidate(qp, wqe->rkey, false);
	wqe->npkts = 0;
	wqe->first_psn = srdma_psn_prev(qp->next_psn);
	wqe->last_psn = wqe->first_psn;
	wqe->rd_next_psn = wqe->first_psn;
	wqe->rd_sent_off = 0;
	wqe->rd_zero_asked = false;
	wqe->started = true;
	wqe->done = true;
	if (err) {
		srdma_count(qp->sdev, bind ? SRDMA_CNT_MW_BIND_ERR :
					     SRDMA_CNT_FAST_REG_ERR);
		srdma_dbg_qp(qp, "wr %llu: %s of key %#x failed\n", wqe->wr_id,
			     reg ? "REG_MR" : bind ? "BIND_MW" : "LOCAL_INV",
			     wqe->rkey);
		srdma_req_fail_status(qp, wqe, bind ? IB_WC_MW_BIND_ERR :
						      IB_WC_LOC_QP_OP_ERR);
		return false;
	}
	srdma_count(qp->sdev, reg ? SRDMA_CNT_FAST_REG :
			      bind ? SRDMA_CNT_MW_BIND : SRDMA_CNT_LOCAL_INV);
	if (qp->sq.cons == qp->sq_next)
		srdma_req_complete(qp, wqe, IB_WC_SUCCESS);	/* moves on */
	else
		srdma_req_next_wqe(qp);
	return true;
}

/*
 * Work one run of the RC requester does under the QP lock: packets sent
 * and local work requests (REG_MR, LOCAL_INV, BIND_MW) carried out. A run
 * comes from post_send (for a kernel consumer often inside its completion
 * handler), from an ACK in softirq or from the timer, and the window may
 * allow SRDMA_WINDOW packets, each copied or mapped, checksummed and
 * handed to the IP stack: the rest goes out from send_work, a budget at a
 * time, so that no run holds the CPU for long.
 */
#define SRDMA_RC_BUDGET		64

/*
 * Pacing. Between two hosts a whole congestion window sent at once
 * overflows the buffers on the way (the QEMU wire between test guests
 * drops bursts of more than about a hundred packets) and go-back-N then
 * resends the rest of the window. So after a burst of SRDMA_PACE_BURST
 * packets the requester spaces its packets to send one congestion window
 * per smoothed RTT, times pace_gain_pct / 100: a little faster than the
 * window alone allows, so that the window, not the pacing, is what
 * limits. The RTT is sampled only from packets that ask for their ACK
 * (srdma_rtt_start()), so the pacing delays do not feed the rate. No
 * pacing before the first sample, nor to a QP on this host, and never
 * more than SRDMA_PACE_MAX_GAP_NS between two packets (an RTT sample
 * taken across a stall must not slow the QP to a crawl). A READ request
 * counts its responses.
 */
#define SRDMA_PACE_BURST	16
#define SRDMA_PACE_MAX_GAP_NS	(100 * NSEC_PER_USEC)

static unsigned int pace_gain_pct = 125;
module_param(pace_gain_pct, uint, 0444);
MODULE_PARM_DESC(pace_gain_pct,
		 "RC pacing rate in percent of a congestion window per RTT (default 125, 0: no pacing)");

/* Nanoseconds between two packets of the QP's MTU; 0: no pacing. */
static u64 srdma_pace_gap(struct srdma_qp *qp)
{
	if (!pace_gain_pct || !qp->srtt_us || READ_ONCE(qp->dst_local))
		return 0;
	return min_t(u64, div64_u64((u64)qp->srtt_us * NSEC_PER_USEC * 100,
				    (u64)srdma_cwnd_pkts(qp) * pace_gain_pct),
		     SRDMA_PACE_MAX_GAP_NS);
}

/*
 * May the next packet of the requester, paced @gap ns apart
 * (srdma_pace_gap()), leave now? If not, the pace timer runs the
 * requester when it may.
 */
static bool srdma_pace_hold(struct srdma_qp *qp, u64 gap)
{
	ktime_t now, credit;

	if (!gap)
		return false;
	now = ktime_get();
	/* After a pause, no more than a burst at once. */
	credit = ktime_sub_ns(now, gap * SRDMA_PACE_BURST);
	if (ktime_before(qp->pace_next, credit))
		qp->pace_next = credit;
	if (!ktime_after(qp->pace_next, now))
		return false;
	hrtimer_start(&qp->pace_timer, qp->pace_next, HRTIMER_MODE_ABS_SOFT);
	return true;
}

/**
 * srdma_pace_timer() - a paced QP may send again, or its RNR wait is over
 * @t: the QP's pace_timer
 *
 * Context: softirq (HRTIMER_MODE_ABS_SOFT); takes the QP lock.
 * destroy_qp moves the QP to RESET, where the requester sends nothing and
 * arms nothing, before it cancels this timer.
 */
enum hrtimer_restart srdma_pace_timer(struct hrtimer *t)
{
	struct srdma_qp *qp = container_of(t, struct srdma_qp, pace_timer);
	bool rnr_over = false;

	spin_lock_bh(&qp->lock);
	/*
	 * An RNR NAK that came while this run waited for the lock re-armed
	 * the timer for a later time: that run ends the wait, not this one.
	 */
	if (qp->rnr_wait) {
		if (ktime_before(ktime_get(), qp->rnr_until))
			goto out_unlock;
		qp->rnr_wait = false;
		rnr_over = true;
	}
	srdma_req_kick(qp);
	/*
	 * The RNR wait stopped the ACK timer (srdma_req_rnr()). Requests
	 * before the NAK's PSN may still be outstanding (READ responses not
	 * all in), and if the window or the initiator depth lets nothing go
	 * now, only that timer brings the requester back: without it the QP
	 * waited for ever (helper-77). Armed only while the SQ runs
	 * (srdma_arm_timer()), so never after destroy_qp's RESET.
	 */
	if (rnr_over && qp->una_psn != qp->next_psn &&
	    !timer_pending(&qp->retrans_timer))
		srdma_arm_timer(qp);
out_unlock:
	spin_unlock_bh(&qp->lock);
	return HRTIMER_NORESTART;
}

/*
 * Send what the window allows from qp->sq_next on, counting the packets in
 * @sent and those and the local work requests in @work, up to
 * SRDMA_RC_BUDGET of the latter: a process may post local work requests
 * as fast as they complete, and they cost no window. Each packet tried
 * sets @err: 0, or why it was dropped on this host (srdma_req_packet()),
 * which stops the sending. False if a work request failed: the QP is in
 * ERR.
 */
static bool srdma_req_push(struct srdma_qp *qp, u32 *sent, u32 *work,
			   int *err)
{
	/* Nothing in a run changes the RTT or the window: one gap for all. */
	u64 gap = srdma_pace_gap(qp);
	struct srdma_send_wqe *wqe;
	u32 off;
	int ret;

	while (qp->sq_next != qp->sq.prod && *work < SRDMA_RC_BUDGET) {
		wqe = srdma_ring_slot(&qp->sq, qp->sq_next);
		if (!wqe->started) {
			if (!srdma_req_may_start(qp, wqe))
				break;
			if (srdma_wr_is_local(wqe->opcode)) {
				if (!srdma_req_local(qp, wqe))
					return false;
				(*work)++;
				continue;
			}
			if (srdma_pace_hold(qp, gap))
				break;
			ret = srdma_req_start(qp, wqe);
			if (ret) {
				srdma_req_fail(qp, wqe, ret);
				return false;
			}
		} else if (wqe->done) {
			srdma_req_next_wqe(qp);
			continue;
		} else if (!srdma_req_resume(qp, wqe) ||
			   srdma_pace_hold(qp, gap)) {
			break;
		}

		off = qp->sq_next_off;
		*err = srdma_req_packet(qp, wqe);
		if (*err == -EACCES || *err == -EINVAL) {
			/* Bad lkey, range or right in the local SGEs. */
			srdma_dbg_qp(qp, "wr %llu: local protection error\n",
				     wqe->wr_id);
			srdma_req_fail(qp, wqe, *err);
			return false;
		}
		if (*err) {
			/*
			 * No memory or route: the timer retries. A packet made
			 * and dropped on this host moved the send position, as
			 * if sent; past the request's last one, the next run
			 * must not send from its end (an empty LAST, a READ of
			 * nothing): the request is done sending, as below.
			 */
			if (qp->sq_next_off != off &&
			    qp->sq_next_off >= wqe->length)
				srdma_req_next_wqe(qp);
			break;
		}
		/*
		 * The next may leave a gap later per packet; a READ request
		 * per response it brings.
		 */
		qp->pace_next = ktime_add_ns(qp->pace_next, gap *
			(wqe->opcode == IB_WR_RDMA_READ ?
			 srdma_npkts(qp->sq_next_off - off, qp->mtu) : 1));
		(*sent)++;
		(*work)++;
		if (qp->sq_next_off >= wqe->length)
			srdma_req_next_wqe(qp);
	}
	return true;
}

/*
 * UD datagram of @wqe: BTH, DETH (a remote_qkey with bit 31 set stands
 * for the QP's own Q_Key, IBTA 10.2.4), ImmDt, payload. A message over
 * the port's MTU is not sent and not an error (IBTA C10-93.1.1); neither
 * is a datagram the network (no memory, no route) drops. 0, or -EACCES
 * and -EINVAL for bad local SGEs.
 */
static int srdma_ud_send(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	u32 mtu = srdma_active_mtu(qp->sdev);
	struct srdma_pkt pkt = {
		.opcode = wqe->opcode == IB_WR_SEND_WITH_IMM ?
			  SRDMA_OP_UD_SEND_ONLY_IMM : SRDMA_OP_UD_SEND_ONLY,
		.se = !!(wqe->send_flags & IB_SEND_SOLICITED),
		.pkey = SRDMA_DEFAULT_PKEY,
		.dqpn = wqe->ud.dqpn,
		.psn = qp->next_psn,
		.qkey = wqe->ud.qkey & SRDMA_QKEY_PRIV ? qp->attr.qkey :
			wqe->ud.qkey,
		.sqpn = qp->ibqp.qp_num,
		.imm = (__force u32)wqe->imm,
		.paylen = wqe->length,
	};
	const struct srdma_payload_src src = {
		.sge = wqe->sge,
		.num_sge = wqe->num_sge,
		.inline_data = srdma_wqe_inline(wqe),
		.copy = true,
	};
	struct sk_buff *skb;

	if (!mtu || wqe->length > mtu) {
		srdma_count(qp->sdev, SRDMA_CNT_TX_UD_TOO_LONG);
		srdma_dbg_qp(qp, "wr %llu: %u bytes exceed the MTU, not sent\n",
			     wqe->wr_id, wqe->length);
		return 0;
	}
	skb = srdma_data_pkt(qp, &pkt, &src);
	if (IS_ERR(skb)) {
		if (PTR_ERR(skb) != -ENOMEM)
			return PTR_ERR(skb);
		srdma_count(qp->sdev, SRDMA_CNT_TX_ERR);
		return 0;
	}
	qp->next_psn = srdma_psn_add(qp->next_psn, 1);
	srdma_xmit_ud(qp, &wqe->ud.av, skb);	/* counts its failures */
	return 0;
}

/*
 * Datagrams one run of the UD requester sends under the QP lock. A
 * doorbell may bring a full SQ (SRDMA_MAX_QP_WR work requests, each a
 * route lookup, a copy and ip_local_out()): the rest goes out from
 * send_work, a budget at a time, without another doorbell.
 */
#define SRDMA_UD_BUDGET		64

/*
 * The requester of a UD QP: each work request is one datagram, sent at
 * once and completed once sent; no window, no ACK, no retransmission.
 */
static void srdma_ud_run(struct srdma_qp *qp)
{
	struct srdma_send_wqe *wqe;
	u32 budget = SRDMA_UD_BUDGET;
	int err;

	lockdep_assert_held(&qp->lock);
	while (qp->sq.cons != qp->sq.prod && qp->state == IB_QPS_RTS) {
		if (!budget--) {
			srdma_queue_send_work(qp);
			break;
		}
		wqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
		err = srdma_ud_send(qp, wqe);
		if (err == -EAGAIN)
			break;	/* on-demand pages: run again once in */
		if (err) {
			srdma_dbg_qp(qp, "wr %llu: local protection error\n",
				     wqe->wr_id);
			srdma_req_complete(qp, wqe, IB_WC_LOC_PROT_ERR);
			return;
		}
		srdma_req_complete(qp, wqe, IB_WC_SUCCESS);
	}
	qp->sq_next = qp->sq.cons;
}

/*
 * Packets one run of the UC requester sends under the QP lock; the rest
 * goes out from send_work, a budget at a time, as for UD.
 */
#define SRDMA_UC_BUDGET		64

/*
 * Send the next packet of UC work request @wqe, from qp->sq_next_off on,
 * as PSN qp->next_psn: the SEND and WRITE opcodes of RC in the UC group.
 * The payload is always copied: the work request completes once its last
 * packet is sent, and its buffer may change after that. A packet the
 * network stack does not take (no memory, no route) is lost like one a
 * link drops: its PSN is used up all the same, so that the responder sees
 * the gap and drops the message rather than place the rest of it at the
 * wrong offset. 0, or -EACCES and -EINVAL for bad local SGEs.
 */
static int srdma_uc_packet(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	u32 off = qp->sq_next_off;
	const struct srdma_payload_src src = {
		.sge = wqe->sge,
		.num_sge = wqe->num_sge,
		.off = off,
		.inline_data = srdma_wqe_inline(wqe),
		.copy = true,
	};
	struct srdma_pkt pkt = {
		.pkey = SRDMA_DEFAULT_PKEY,
		.dqpn = qp->attr.dest_qp_num,
		.psn = qp->next_psn,
		.imm = (__force u32)wqe->imm,
	};
	struct sk_buff *skb;
	bool last;
	u8 op;

	pkt.paylen = min(qp->mtu, wqe->length - off);
	last = off + pkt.paylen >= wqe->length;
	op = srdma_req_opcode(wqe, off == 0, last);
	if (op == SRDMA_OP_WRITE_FIRST || op == SRDMA_OP_WRITE_ONLY ||
	    op == SRDMA_OP_WRITE_ONLY_IMM) {
		pkt.va = wqe->remote_addr;
		pkt.rkey = wqe->rkey;
		pkt.dmalen = wqe->length;
	}
	pkt.opcode = SRDMA_OP_UC | op;
	pkt.se = last && (wqe->send_flags & IB_SEND_SOLICITED);
	skb = srdma_data_pkt(qp, &pkt, &src);
	if (IS_ERR(skb) && PTR_ERR(skb) != -ENOMEM)
		return PTR_ERR(skb);
	qp->next_psn = srdma_psn_add(qp->next_psn, 1);
	qp->sq_next_off = off + pkt.paylen;
	if (IS_ERR(skb)) {
		srdma_count(qp->sdev, SRDMA_CNT_TX_ERR);
		return 0;
	}
	srdma_xmit(qp, skb);	/* counts its failures */
	return 0;
}

/*
 * The requester of a UC QP: the messages in order, each packet sent once
 * and the work request completed when its last packet is sent; no ACK, no
 * window, no retransmission (IBTA 9.8). In SQD the message in progress is
 * finished and no other is started.
 */
static void srdma_uc_run(struct srdma_qp *qp)
{
	u32 budget = SRDMA_UC_BUDGET;
	struct srdma_send_wqe *wqe;
	bool retired = false;
	int err;

	lockdep_assert_held(&qp->lock);
	while (qp->sq.cons != qp->sq.prod) {
		wqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
		if (!wqe->started && qp->state != IB_QPS_RTS)
			break;
		/* Started only once a packet of it goes out (SQD). */
		if (!budget--) {
			srdma_queue_send_work(qp);
			return;
		}
		if (!wqe->started) {
			if (srdma_npkts(wqe->length, qp->mtu) >
			    SRDMA_MAX_MSG_PKTS) {
				/* Posted before the path MTU shrank. */
				srdma_req_complete(qp, wqe, IB_WC_LOC_LEN_ERR);
				return;
			}
			wqe->started = true;
			qp->sq_next_off = 0;
		}
		err = srdma_uc_packet(qp, wqe);
		if (err == -EAGAIN)
			return;	/* on-demand pages: run again once in */
		if (err) {
			srdma_dbg_qp(qp, "wr %llu: local protection error\n",
				     wqe->wr_id);
			srdma_req_complete(qp, wqe, IB_WC_LOC_PROT_ERR);
			return;
		}
		if (qp->sq_next_off >= wqe->length) {
			/* Resets sq_next and sq_next_off to the next one. */
			srdma_req_complete(qp, wqe, IB_WC_SUCCESS);
			retired = true;
		}
	}
	if (retired)
		srdma_sq_drained_event(qp);
}

/**
 * srdma_send_work() - run the requester from process context
 * @work: the QP's send_work
 *
 * For what a requester run left over (it sends another budget and queues
 * this work again if more is left), and for work requests a kernel
 * consumer posted with IRQs off, which could not be sent from there.
 * Sends nothing once the QP is in neither RTS nor SQD; destroy_qp moves
 * it to RESET before it cancels this work.
 *
 * Context: process context (srdma_tx_wq); takes the QP lock.
 */
void srdma_send_work(struct work_struct *work)
{
	struct srdma_qp *qp = container_of(work, struct srdma_qp,
					   send_work);

	spin_lock_bh(&qp->lock);
	srdma_req_run(qp);
	spin_unlock_bh(&qp->lock);
}

/*
 * Towards another host, the requester runs an ACK or the pace timer starts
 * go to send_work (tx_work, the default) instead of running in softirq.
 * Each run copies, checksums and hands to the IP stack up to
 * SRDMA_RC_BUDGET packets; in softirq that pushes the network's softirq
 * work into ksoftirqd, which the scheduler then shares fairly with any
 * process that polls a CQ on that CPU, and the requester gets half of it
 * (performance.rst, two guests). srdma_tx_wq's workers run at high
 * priority. Local delivery (one host) keeps its runs in softirq, and so
 * does a kernel QP: its ULP (nvme-rdma, NFS) polls its CQ from softirq or
 * a work item and never spins, so the work item only adds a wakeup
 * (NVMe-oF 128 KiB sequential reads across two guests: 9.04 and 9.51
 * MiB/s with it, 11.81 and 10.93 without).
 */
static unsigned int tx_work = 1;
module_param(tx_work, uint, 0644);
MODULE_PARM_DESC(tx_work,
		 "towards another host, run the requester after an ACK in a high-priority work item (default 1) or in softirq (0)");

/*
 * Would a requester run send something now, or has it other work to do?
 * Asked before send_work is queued from softirq: most READ responses and
 * ACKs of a window-limited QP open neither the window far enough nor the
 * responder's READ queue, and a worker woken for each of them finds
 * nothing to send. The answer is no only in RTS with packets in flight
 * and the next work request held by the window, the READ queue or the
 * peer's credits, where such a run would do nothing but set the mapped
 * SQ's no_doorbell (set already when they went out; after an RNR wait a
 * run may have cleared it, and the process then rings a few doorbells
 * more until the next run, which is harmless). Each of those holds ends
 * with an ACK or READ response, which asks again. Pacing is left to the
 * run, which arms the pace timer. @ring_new: the process posted to its
 * mapped SQ since the last pull.
 *
 * Context: QP lock held.
 */
static bool srdma_req_ready(struct srdma_qp *qp, bool ring_new)
{
	struct srdma_send_wqe *wqe;

	if (ring_new || qp->state != IB_QPS_RTS ||
	    qp->una_psn == qp->next_psn || qp->sq_next == qp->sq.prod)
		return true;
	wqe = srdma_ring_slot(&qp->sq, qp->sq_next);
	if (!wqe->started)
		return srdma_req_may_start(qp, wqe);
	if (wqe->done)
		return true;
	return srdma_req_may_resume(qp, wqe, srdma_req_resume_off(qp, wqe));
}

/**
 * srdma_qp_tx_pinned() - must @qp's packets leave from qp->tx_cpu?
 * @qp: the QP
 *
 * A user QP towards another host, with tx_work (the default): its
 * requester's runs after an ACK or a timer go to send_work, and its READ
 * answers to read_work, both on qp->tx_cpu. Packets of one QP sent from
 * two CPUs while some are in flight can arrive out of order: a veth
 * queues each on the backlog of the CPU that sent it, and the CPUs drain
 * their backlogs in either order. Kernel QPs and local delivery send
 * from where they run.
 *
 * Context: any; reads only.
 */
static bool srdma_qp_tx_pinned(const struct srdma_qp *qp)
{
	return READ_ONCE(tx_work) && qp->is_user && !READ_ONCE(qp->dst_local);
}

/**
 * srdma_qp_off_tx_cpu() - would @qp send from the wrong CPU here?
 * @qp: the QP
 *
 * True if srdma_qp_tx_pinned() and this is not qp->tx_cpu: its runs and
 * answers then go to the work items on that CPU.
 *
 * Context: BHs or preemption off (the QP lock held).
 */
bool srdma_qp_off_tx_cpu(const struct srdma_qp *qp)
{
	return srdma_qp_tx_pinned(qp) && smp_processor_id() != qp->tx_cpu;
}

/**
 * srdma_req_run_pinned() - run the requester here or on the QP's CPU
 * @qp: the QP
 *
 * For the runs that go back N from a timer (the timer fires on the CPU
 * that armed it, often the one that took the last ACK or READ response)
 * or from the ODP fault work (any CPU): run at once on qp->tx_cpu, else
 * queue send_work there if srdma_qp_tx_pinned(). READ requests asked
 * again from two CPUs reached the responder out of order, which then
 * dropped the later one's answer (srdma_rd_drop_stale()).
 *
 * Context: softirq or process context, QP lock held.
 */
void srdma_req_run_pinned(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	/*
	 * Only while the SQ runs: destroy_qp cancels send_work before it
	 * waits for the references (the ODP fault work holds one), and a
	 * work queued after that would run on a freed QP (helper-81).
	 */
	if (srdma_qp_sq_running(qp) && srdma_qp_off_tx_cpu(qp)) {
		srdma_queue_send_work(qp);
		return;
	}
	srdma_req_run(qp);
}

/**
 * srdma_req_kick() - run the requester after an ACK or the pace timer
 * @qp: the QP
 *
 * Runs it at once, or queues send_work (see tx_work above) if, for a user
 * QP in softirq towards another host, there is something to send: a work
 * request posted and not all sent, or one a process posted to its mapped
 * SQ since.
 *
 * Context: softirq or process context, QP lock held.
 */
void srdma_req_kick(struct srdma_qp *qp)
{
	bool ring_new;

	lockdep_assert_held(&qp->lock);
	if (!srdma_qp_tx_pinned(qp) || !in_serving_softirq() ||
	    qp->rnr_wait || !srdma_qp_sq_running(qp))
		goto run;
	/* The producer index the process writes, read once. */
	ring_new = qp->usq.map && READ_ONCE(qp->usq.hdr->prod) != qp->sq.prod;
	if (qp->sq_next == qp->sq.prod && !ring_new)
		goto run;
	if (srdma_req_ready(qp, ring_new))
		srdma_queue_send_work(qp);
	return;
run:
	srdma_req_run(qp);
}

/**
 * srdma_req_run() - transmit what the window allows
 * @qp: the QP
 *
 * Resent packets first (after a rewind), then new work requests, taking
 * those a user process posted to its mapped SQ, up to a budget of packets
 * and local work requests (the rest from send_work). A work request that cannot be sent moves the
 * QP to ERR.
 *
 * Context: process context or softirq (ACKs, the timer), QP lock held.
 */
void srdma_req_run(struct srdma_qp *qp)
{
	u32 sent = 0, work = 0, prod;
	bool outer;
	int err = 0;

	lockdep_assert_held(&qp->lock);
	if (qp->state == IB_QPS_SQE) {
		/* Posted since the SQ failed: flushed until back in RTS. */
		srdma_qp_flush_sq(qp);
		return;
	}
	if (!srdma_qp_sq_running(qp) || qp->rnr_wait || qp->sq_error) {
		srdma_req_doorbell(qp, false);
		return;
	}
	/* A user process may have posted without a doorbell. */
	if (qp->usq.map && srdma_sq_pull(qp)) {
		srdma_qp_error(qp);
		return;
	}
	if (srdma_qp_is_ud(qp)) {
		srdma_ud_run(qp);
		return;
	}
	if (srdma_qp_is_uc(qp)) {
		srdma_uc_run(qp);
		return;
	}
	outer = srdma_batch_begin(qp);
	for (;;) {
		if (!srdma_req_push(qp, &sent, &work, &err)) {
			srdma_batch_end(qp, outer);
			return;
		}
		/*
		 * Something went out, or a started request could not (no
		 * memory, no route): in both cases only the timer brings the
		 * requester back if nothing else is in flight. With no ACK
		 * timeout (0: infinite) a failed send is still retried after
		 * a short while.
		 */
		if ((sent || err) && !timer_pending(&qp->retrans_timer)) {
			qp->last_progress = jiffies;
			srdma_arm_timer(qp);
			if (err && !timer_pending(&qp->retrans_timer))
				mod_timer(&qp->retrans_timer,
					  jiffies + SRDMA_RTO_MIN_JIFFIES);
		}
		if (work >= SRDMA_RC_BUDGET) {
			/* The rest from send_work, which pulls the ring too. */
			srdma_queue_send_work(qp);
			srdma_req_doorbell(qp, qp->state == IB_QPS_RTS);
			break;
		}
		if (!qp->usq.map || qp->una_psn != qp->next_psn ||
		    qp->state != IB_QPS_RTS) {
			srdma_req_doorbell(qp, qp->state == IB_QPS_RTS);
			break;
		}
		/* Idle now: ask for doorbells again, then look once more. */
		srdma_req_doorbell(qp, false);
		prod = qp->sq.prod;
		if (srdma_sq_pull(qp)) {
			srdma_batch_end(qp, outer);
			srdma_qp_error(qp);
			return;
		}
		if (qp->sq.prod == prod)
			break;
		/* Posted meanwhile, without a doorbell: send it too. */
	}
	/* A batch dropped on this host: retried soon, as in the loop. */
	if (srdma_batch_end(qp, outer) && !timer_pending(&qp->retrans_timer))
		mod_timer(&qp->retrans_timer, jiffies + SRDMA_RTO_MIN_JIFFIES);
	srdma_sq_drained_event(qp);
}

/**
 * srdma_sq_drained() - has everything the SQ started finished?
 * @qp: the QP
 *
 * In SQD the requester starts no work request: the SQ is drained once
 * every one it started is done, for RC and XRC once acknowledged. Work
 * requests posted but not started do not count (IBTA 10.3.1, SQD).
 *
 * Context: QP lock held.
 */
bool srdma_sq_drained(struct srdma_qp *qp)
{
	const struct srdma_send_wqe *wqe;

	lockdep_assert_held(&qp->lock);
	if (!srdma_qp_is_ud(qp) && !srdma_qp_is_uc(qp) &&
	    qp->una_psn != qp->next_psn)
		return false;
	if (qp->sq_next == qp->sq.prod)
		return true;
	wqe = srdma_ring_slot(&qp->sq, qp->sq_next);
	return !wqe->started;
}

/**
 * srdma_sq_drained_event() - tell the SQ drained, once per stay in SQD
 * @qp: the QP
 *
 * IB_EVENT_SQ_DRAINED, if the QP entered SQD with en_sqd_async_notify and
 * its SQ is drained (srdma_sq_drained()), once until it enters SQD again.
 *
 * Context: QP lock held.
 */
void srdma_sq_drained_event(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	if (qp->state != IB_QPS_SQD || !qp->attr.en_sqd_async_notify ||
	    qp->sqd_told || !srdma_sq_drained(qp))
		return;
	qp->sqd_told = true;
	srdma_qp_event(qp, IB_EVENT_SQ_DRAINED);
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
		srdma_req_run_pinned(qp);
		return;
	}
	qp->pkts_since_ackreq = SRDMA_ACKREQ_EVERY;
	srdma_req_packet(qp, wqe);
restore:
	qp->sq_next = next;
	qp->sq_next_off = off;
}

/**
 * srdma_req_resend_now() - send again from the oldest PSN unacknowledged
 * @qp: the QP
 *
 * For a READ response or atomic result dropped because its on-demand
 * pages were not present: asked for again once they are; with nothing
 * unacknowledged, just run.
 *
 * Context: process context, QP lock held.
 */
void srdma_req_resend_now(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	if (!srdma_qp_sq_running(qp))
		return;
	if (!srdma_qp_is_ud(qp) && !srdma_qp_is_uc(qp) &&
	    qp->una_psn != qp->next_psn)
		srdma_req_rewind(qp, qp->una_psn);
	/* Also what waited for a page since (its miss merged into this). */
	srdma_req_run_pinned(qp);
}

/* Go back to the oldest PSN unacknowledged, send again, rearm the timer. */
static void srdma_req_resend(struct srdma_qp *qp)
{
	srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
	srdma_req_rewind(qp, qp->una_psn);
	/*
	 * Armed first: a resend is no progress, whether it runs here or
	 * from send_work (the run starts the QP's own timeout over only
	 * when it finds the timer idle).
	 */
	srdma_arm_timer(qp);
	srdma_req_run_pinned(qp);
}

/*
 * An early timeout: nothing acknowledged for longer than the adaptive
 * timeout, but not yet the QP's own. When a host stalls the path for a
 * while (a busy hypervisor), the packets are late, not lost, and going
 * back N would send the whole window twice. So only the oldest packet
 * unacknowledged goes again, with AckReq, leaving the transmit position
 * alone; its ACK tells late from lost (srdma_req_acked()). A NAK goes
 * back N as before; the next early timeout, twice as long, probes again;
 * the QP's own ACK timeout goes back N. Only for a SEND or WRITE packet:
 * false for anything else (a READ or atomic is asked again whole).
 */
static bool srdma_req_probe_una(struct srdma_qp *qp)
{
	u32 next = qp->sq_next, off = qp->sq_next_off, i;
	struct srdma_send_wqe *wqe = NULL;

	for (i = qp->sq.cons; i != qp->sq.prod; i++) {
		wqe = srdma_ring_slot(&qp->sq, i);
		if (!wqe->started)
			return false;
		if (srdma_psn_diff(qp->una_psn, wqe->last_psn) <= 0)
			break;
	}
	if (i == qp->sq.prod || wqe->done ||
	    srdma_wr_is_rd_atomic(wqe->opcode) ||
	    srdma_psn_diff(qp->una_psn, wqe->first_psn) < 0 ||
	    srdma_psn_diff(qp->sent_psn, qp->una_psn) <= 0)
		return false;
	qp->sq_next = i;
	qp->sq_next_off = (u32)srdma_psn_diff(qp->una_psn, wqe->first_psn) *
			  qp->mtu;
	qp->rtt_pending = false;	/* no samples from resent packets */
	qp->pkts_since_ackreq = SRDMA_ACKREQ_EVERY;
	srdma_req_packet(qp, wqe);	/* a failure: the next timeout */
	qp->sq_next = next;
	qp->sq_next_off = off;
	qp->una_probe = true;
	qp->una_probe_psn = qp->una_psn;
	qp->tlp_sent = true;		/* no tail-loss probe on top of it */
	return true;
}

/*
 * The retransmit timer expired with @wqe, the oldest work request, sent
 * and not acknowledged: probe, resend early or use up a retry.
 */
static void srdma_req_timeout(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	if (qp->tlp_armed) {
		/*
		 * Tail-loss probe: nothing came back for two round trips.
		 * Resend the last packet with AckReq; its ACK or the NAK it
		 * draws ends the wait sooner than the timeout would.
		 */
		qp->tlp_sent = true;
		srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
		srdma_count(qp->sdev, SRDMA_CNT_TLP);
		srdma_arm_timer(qp);	/* first, as in srdma_req_resend() */
		srdma_req_probe(qp);
		return;
	}
	srdma_cwnd_loss(qp);
	if (time_before(jiffies, qp->last_progress + srdma_ack_timeout(qp))) {
		/*
		 * Early: the adaptive timeout expired, the QP's own has not.
		 * Resend without using up a retry; back off the next one.
		 */
		if (qp->rto_backoff < SRDMA_RTO_BACKOFF_MAX)
			qp->rto_backoff++;
		srdma_count(qp->sdev, SRDMA_CNT_EARLY_RTO);
		if (srdma_req_probe_una(qp)) {
			srdma_count(qp->sdev, SRDMA_CNT_RETRANSMITS);
			srdma_arm_timer(qp);
			return;
		}
		srdma_req_resend(qp);
		return;
	}

	srdma_count(qp->sdev, SRDMA_CNT_TIMEOUTS);
	if (!qp->retry_left) {
		srdma_err_qp(qp, "no ACK after %u retries\n",
			     qp->attr.retry_cnt);
		srdma_req_complete(qp, wqe, IB_WC_RETRY_EXC_ERR);
		return;
	}
	qp->retry_left--;
	qp->last_progress = jiffies;
	srdma_req_resend(qp);
}

/**
 * srdma_retrans_timer() - the retransmit timer of a QP expired
 * @t: the QP's retrans_timer
 *
 * Resends what is unacknowledged: a tail-loss probe, an early
 * retransmission or a retry of the QP's own ACK timeout.
 *
 * Context: timer (softirq); takes the QP lock.
 */
void srdma_retrans_timer(struct timer_list *t)
{
	struct srdma_qp *qp = from_timer(qp, t, retrans_timer);
	struct srdma_send_wqe *wqe;

	spin_lock_bh(&qp->lock);
	if (!srdma_qp_sq_running(qp))
		goto out_unlock;
	/* The pace timer ends an RNR wait (srdma_req_rnr()). */
	if (qp->rnr_wait)
		goto out_unlock;
	if (qp->sq.cons == qp->sq.prod)
		goto out_unlock;	/* nothing outstanding */
	wqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
	if (!wqe->started)
		goto out_unlock;
	if (!qp->attr.timeout) {
		/* No ACK timeout: only a send that failed arms the timer. */
		srdma_req_rewind(qp, qp->una_psn);
		srdma_req_run_pinned(qp);
		goto out_unlock;
	}
	srdma_dbg_qp(qp, "timer: una %u next %u sq %u/%u/%u: op %u psn %u-%u rd %u retries %u\n",
		     qp->una_psn, qp->next_psn, qp->sq.cons, qp->sq_next,
		     qp->sq.prod, wqe->opcode, wqe->first_psn, wqe->last_psn,
		     wqe->rd_next_psn, qp->retry_left);
	srdma_req_timeout(qp, wqe);
out_unlock:
	spin_unlock_bh(&qp->lock);
}

/*
 * What a QP can post: UD only SENDs, UC no READs or atomics (nor ATOMIC
 * WRITE, which user RC QPs alone post); invalidation
 * on RC QPs, fast registration on kernel RC QPs only (user PDs have no
 * fast-registration MRs), memory window binds on user RC QPs only (the
 * kernel has no bind work request); UC has no SEND with Invalidate, and
 * its requester no local operations.
 */
static bool srdma_opcode_ok(struct srdma_qp *qp, u32 opcode)
{
	switch (opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		return true;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return !srdma_qp_is_ud(qp);
	/*
	 * UC has no READ and no atomics (IBTA table 38); XRC has RC's
	 * opcodes up to SEND with Invalidate, not ATOMIC WRITE.
	 */
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		return qp->ibqp.qp_type == IB_QPT_RC ||
		       qp->ibqp.qp_type == IB_QPT_XRC_INI;
	case IB_WR_REG_MR:
		return qp->ibqp.qp_type == IB_QPT_RC && !qp->is_user;
	case IB_WR_BIND_MW:
		return qp->ibqp.qp_type == IB_QPT_RC && qp->is_user;
	/* Its 8 bytes come in the mapped SQ entry: user QPs only. */
	case SRDMA_WR_ATOMIC_WRITE:
		return qp->ibqp.qp_type == IB_QPT_RC && qp->is_user;
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
	return len <= SRDMA_MAX_MSG_SIZE &&
	       srdma_npkts(len, qp->mtu) <= SRDMA_MAX_MSG_PKTS;
}

static int srdma_check_wr(struct srdma_qp *qp, const struct ib_send_wr *wr)
{
	if (!srdma_opcode_ok(qp, wr->opcode)) {
		srdma_dbg_qp(qp, "post_send: opcode %d not supported\n",
			     wr->opcode);
		return -EINVAL;
	}
	if (srdma_wr_is_local(wr->opcode) &&
	    (wr->send_flags & IB_SEND_INLINE)) {
		srdma_dbg_qp(qp, "post_send: a local operation with inline data\n");
		return -EINVAL;
	}
	if (srdma_wr_is_local(wr->opcode))	/* no SGEs */
		return wr->opcode == IB_WR_REG_MR ?
		       srdma_fr_check_wr(qp, reg_wr(wr)) : 0;
	if (wr->num_sge < 0 || wr->num_sge > qp->sq.max_sge) {
		srdma_dbg_qp(qp, "post_send: %d SGEs, max %u\n",
			     wr->num_sge, qp->sq.max_sge);
		return -EINVAL;
	}
	if ((wr->send_flags & IB_SEND_INLINE) &&
	    (wr->opcode == IB_WR_RDMA_READ || srdma_wr_is_atomic(wr->opcode))) {
		srdma_dbg_qp(qp, "post_send: a READ or atomic with inline data\n");
		return -EINVAL;
	}
	/* An atomic's result goes to one SGE of exactly 8 bytes. */
	if (srdma_wr_is_atomic(wr->opcode) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length != sizeof(u64))) {
		srdma_dbg_qp(qp, "post_send: atomic needs one 8-byte SGE\n");
		return -EINVAL;
	}
	if (srdma_qp_is_ud(qp) &&
	    (!ud_wr(wr)->ah || ud_wr(wr)->ah->pd != qp->ibqp.pd ||
	     ud_wr(wr)->remote_qpn > SRDMA_QPN_MASK)) {
		srdma_dbg_qp(qp, "post_send: no AH of this PD, or a bad QPN\n");
		return -EINVAL;
	}
	return 0;
}

/* The destination of a kernel consumer's UD work request @wr. */
static void srdma_wr_ud(struct srdma_qp *qp, struct srdma_send_wqe *wqe,
			const struct ib_send_wr *wr)
{
	if (!srdma_qp_is_ud(qp))
		return;
	wqe->ud.av = to_sah(ud_wr(wr)->ah)->av;
	wqe->ud.dqpn = ud_wr(wr)->remote_qpn;
	wqe->ud.qkey = ud_wr(wr)->remote_qkey;
}

/*
 * The destination of UD ring entry @u, each field read once: the AH must
 * be one of the QP's PD. A bad one marks the ring bad: -EINVAL.
 */
static int srdma_sq_read_ud(struct srdma_qp *qp, struct srdma_usend_wqe *u,
			    struct srdma_send_wqe *wqe)
{
	u32 ah = READ_ONCE(u->ud.ah);

	wqe->ud.dqpn = READ_ONCE(u->ud.remote_qpn);
	wqe->ud.qkey = READ_ONCE(u->remote_qkey);
	if (wqe->ud.dqpn > SRDMA_QPN_MASK ||
	    srdma_ah_lookup(qp, ah, &wqe->ud.av)) {
		srdma_err_qp(qp, "send ring entry %u: AH %u, QPN %#x refused\n",
			     qp->sq.prod, ah, wqe->ud.dqpn);
		qp->usq.bad = true;
		return -EINVAL;
	}
	return 0;
}

/*
 * Copy the data of inline work request @wr into @wqe, in place of the
 * SGEs, now: the caller's buffers (kernel virtual addresses, maybe on its
 * stack) need not outlive post_send. Their lengths go into @len: -EINVAL
 * if they add up to more than the QP's max_inline_data.
 */
static int srdma_wr_inline(struct srdma_qp *qp, struct srdma_send_wqe *wqe,
			   const struct ib_send_wr *wr, u32 *len)
{
	u8 *data = (u8 *)wqe->sge;
	u32 n;
	int i;

	*len = 0;
	for (i = 0; i < wr->num_sge; i++) {
		n = wr->sg_list[i].length;
		if (n > qp->max_inline - *len) {
			srdma_dbg_qp(qp, "post_send: inline data over %u bytes\n",
				     qp->max_inline);
			return -EINVAL;
		}
		srdma_memcpy(data + *len, (void *)(uintptr_t)wr->sg_list[i].addr,
			     n);
		*len += n;
	}
	return 0;
}

/*
 * Copy the SGEs of @wr, or its inline data, into @wqe and sum their
 * lengths into @len: -EINVAL if the sum overflows, is over the inline
 * limit or the message is too long.
 */
static int srdma_wr_sges(struct srdma_qp *qp, struct srdma_send_wqe *wqe,
			 const struct ib_send_wr *wr, u32 *len)
{
	*len = 0;
	if (srdma_wr_is_local(wr->opcode))
		return 0;
	if (wr->send_flags & IB_SEND_INLINE) {
		if (srdma_wr_inline(qp, wqe, wr, len))
			return -EINVAL;
	} else if (srdma_sges_from_wr(wqe->sge, wr->sg_list, wr->num_sge,
				      len)) {
		return -EINVAL;
	}
	if (!srdma_msg_len_ok(qp, *len)) {
		srdma_dbg_qp(qp, "post_send: message of %u bytes too long for MTU %u\n",
			     *len, qp->mtu);
		return -EINVAL;
	}
	return 0;
}

/*
 * The key, address and rights of @wr that @wqe keeps: only RDMA operations
 * and atomics (with their operands) have a remote address; invalidations
 * name a key; REG_MR the MR, its new
 * key, rights and range (as the MR holds it now: its user may have moved
 * the iova since map_mr_sg).
 */
static void srdma_wr_keys(struct srdma_send_wqe *wqe,
			  const struct ib_send_wr *wr)
{
	wqe->remote_addr = 0;
	wqe->rkey = 0;
	wqe->reg_mr = NULL;
	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		wqe->rkey = wr->ex.invalidate_rkey;
		break;
	case IB_WR_REG_MR:
		wqe->reg_mr = to_smr(reg_wr(wr)->mr);
		wqe->rkey = reg_wr(wr)->key;
		wqe->reg_access = reg_wr(wr)->access;
		wqe->remote_addr = reg_wr(wr)->mr->iova;
		wqe->reg_len = reg_wr(wr)->mr->length;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = atomic_wr(wr)->remote_addr;
		wqe->rkey = atomic_wr(wr)->rkey;
		wqe->compare_add = atomic_wr(wr)->compare_add;
		wqe->swap = atomic_wr(wr)->swap;
		break;
	default:
		wqe->remote_addr = rdma_wr(wr)->remote_addr;
		wqe->rkey = rdma_wr(wr)->rkey;
		break;
	}
}

/*
 * Fill send WQE @wqe, the next free slot of the SQ, from @wr, its SGEs
 * (@len bytes in all) already in place, and post it.
 */
static void srdma_sq_push(struct srdma_qp *qp, struct srdma_send_wqe *wqe,
			  const struct ib_send_wr *wr, u32 len)
{
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	wqe->imm = wr->ex.imm_data;
	wqe->length = len;
	wqe->num_sge = wr->send_flags & IB_SEND_INLINE ||
		       srdma_wr_is_local(wr->opcode) ? 0 : wr->num_sge;
	wqe->started = false;
	wqe->done = false;
	srdma_wr_keys(wqe, wr);
	qp->sq.prod++;
}

/*
 * The inline data of mapped SQ entry @u: its length read once and bounded
 * by the QP's max_inline_data and by the slot, then the data copied out of
 * the ring into @wqe, where nothing the process writes can change it; only
 * that copy is used. A length over the limit marks the ring bad: -EINVAL.
 */
static int srdma_sq_read_inline(struct srdma_qp *qp, struct srdma_usend_wqe *u,
				struct srdma_send_wqe *wqe, u32 *len)
{
	u32 room = qp->usq.slot_size - offsetof(struct srdma_usend_wqe, sge);

	*len = READ_ONCE(u->inline_len);
	if (*len > qp->max_inline || *len > room) {
		srdma_err_qp(qp, "send ring entry %u: %u bytes of inline data, max %u\n",
			     qp->sq.prod, *len, qp->max_inline);
		qp->usq.bad = true;
		return -EINVAL;
	}
	memcpy(wqe->sge, u->sge, *len);
	return 0;
}

/*
 * The operands of atomic ring entry @u, each read once, into @w, which
 * is the rdma member of the caller's union with an ib_atomic_wr. The
 * result goes to one SGE of 8 bytes; anything else marks the ring bad:
 * -EINVAL.
 */
static int srdma_sq_read_atomic(struct srdma_qp *qp,
				struct srdma_usend_wqe *u,
				struct srdma_send_wqe *wqe, struct ib_rdma_wr *w)
{
	struct ib_atomic_wr *a = container_of(&w->wr, struct ib_atomic_wr,
					      wr);

	if (w->wr.num_sge != 1 || wqe->sge[0].length != sizeof(u64)) {
		srdma_err_qp(qp, "send ring entry %u: atomic with %d SGEs, not one of 8 bytes\n",
			     qp->sq.prod, w->wr.num_sge);
		qp->usq.bad = true;
		return -EINVAL;
	}
	a->remote_addr = READ_ONCE(u->remote_addr);
	a->rkey = READ_ONCE(u->rkey);
	a->compare_add = READ_ONCE(u->compare_add);
	a->swap = READ_ONCE(u->swap);
	return 0;
}

/*
 * The remote address and key of RC/UC ring entry @u (not an atomic), each
 * read once, into @w; a bind's operands into @wqe, checked when it runs
 * (srdma_mw_bind()). SEND with Invalidate and LOCAL_INV have their key in
 * ex (imm_data), SENDs nothing more.
 */
static void srdma_sq_read_keys(struct srdma_usend_wqe *u,
			       struct srdma_send_wqe *wqe,
			       struct ib_rdma_wr *w)
{
	u32 op = w->wr.opcode;

	if (op == IB_WR_SEND || op == IB_WR_SEND_WITH_IMM ||
	    op == IB_WR_SEND_WITH_INV || op == IB_WR_LOCAL_INV)
		return;
	w->remote_addr = READ_ONCE(u->remote_addr);
	w->rkey = READ_ONCE(u->rkey);
	if (op == IB_WR_BIND_MW) {
		wqe->reg_len = READ_ONCE(u->bind.length);
		wqe->bind_lkey = READ_ONCE(u->bind.mr_lkey);
		wqe->reg_access = READ_ONCE(u->bind.access);
	}
}

/*
 * The 8 bytes of ATOMIC WRITE entry @u, read once, become @wqe's inline
 * data: the packet carries them as an inline WRITE's payload. An entry
 * with SGEs or inline data marks the ring bad: -EINVAL.
 */
static int srdma_sq_read_atomic_write(struct srdma_qp *qp,
				      struct srdma_usend_wqe *u,
				      struct srdma_send_wqe *wqe, u32 n,
				      u32 *flags, u32 *len)
{
	u64 data;

	if (n || (*flags & IB_SEND_INLINE)) {
		srdma_err_qp(qp, "send ring entry %u: ATOMIC WRITE with SGEs or inline data\n",
			     qp->sq.prod);
		qp->usq.bad = true;
		return -EINVAL;
	}
	data = READ_ONCE(u->compare_add);
	/* An SQ slot has room for one SGE at least: 16 bytes. */
	memcpy(wqe->sge, &data, sizeof(data));
	*flags |= IB_SEND_INLINE;
	*len = sizeof(data);
	return 0;
}

/*
 * Read mapped SQ entry @u, each field once, into @wqe's SGEs (or inline
 * data) and @w, and validate it. A bad entry marks the ring bad: -EINVAL.
 */
static int srdma_sq_read_entry(struct srdma_qp *qp, struct srdma_usend_wqe *u,
			       struct srdma_send_wqe *wqe,
			       struct ib_rdma_wr *w, u32 *len)
{
	const u32 flags_ok = IB_SEND_FENCE | IB_SEND_SIGNALED |
			     IB_SEND_SOLICITED | IB_SEND_INLINE;
	u32 n, op, flags;
	int err;

	n = READ_ONCE(u->num_sge);
	op = READ_ONCE(u->opcode);
	flags = READ_ONCE(u->send_flags);
	if (!srdma_opcode_ok(qp, op) || (flags & ~flags_ok) ||
	    ((flags & IB_SEND_INLINE) &&
	     (op == IB_WR_RDMA_READ || srdma_wr_is_atomic(op) ||
	      srdma_wr_is_local(op))) ||
	    (srdma_wr_is_local(op) && n)) {
		srdma_err_qp(qp, "send ring entry %u: opcode %u, flags %#x refused\n",
			     qp->sq.prod, op, flags);
		qp->usq.bad = true;
		return -EINVAL;
	}
	if (op == SRDMA_WR_ATOMIC_WRITE) {
		err = srdma_sq_read_atomic_write(qp, u, wqe, n, &flags, len);
		n = 0;
	} else if (flags & IB_SEND_INLINE) {
		n = 0;
		err = srdma_sq_read_inline(qp, u, wqe, len);
	} else {
		err = srdma_usges_read(qp, &qp->usq, wqe->sge, u->sge, n,
				       qp->sq.max_sge, len);
	}
	if (err)
		return err;
	if (!srdma_msg_len_ok(qp, *len)) {
		srdma_err_qp(qp, "send ring entry %u: message of %u bytes too long for MTU %u\n",
			     qp->sq.prod, *len, qp->mtu);
		qp->usq.bad = true;
		return -EINVAL;
	}
	w->wr.wr_id = READ_ONCE(u->wr_id);
	w->wr.opcode = op;
	w->wr.send_flags = flags;
	w->wr.ex.imm_data = (__force __be32)READ_ONCE(u->imm_data);
	w->wr.num_sge = n;
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI) {
		wqe->xrc_srqn = READ_ONCE(u->xrc_srqn);
		if (wqe->xrc_srqn > SRDMA_QPN_MASK) {
			srdma_err_qp(qp, "send ring entry %u: XRC SRQ %#x\n",
				     qp->sq.prod, wqe->xrc_srqn);
			qp->usq.bad = true;
			return -EINVAL;
		}
	}
	if (srdma_qp_is_ud(qp))
		return srdma_sq_read_ud(qp, u, wqe);
	if (srdma_wr_is_atomic(op))
		return srdma_sq_read_atomic(qp, u, wqe, w);
	srdma_sq_read_keys(u, wqe, w);
	return 0;
}

/**
 * srdma_sq_pull() - take what a user process posted to its mapped SQ
 * @qp: the QP, a user QP with a mapped SQ
 *
 * Copies the work requests between the kernel's producer index and the
 * process's into the kernel's ring, reading each field once and
 * validating it.
 *
 * Context: QP lock held.
 * Return: 0, or -EINVAL if an index or entry was bad: the ring is marked
 * bad and the caller stops the QP.
 */
int srdma_sq_pull(struct srdma_qp *qp)
{
	struct srdma_usend_wqe *u;
	struct srdma_send_wqe *wqe;
	/* Both start with the ib_send_wr: atomics read into the second. */
	union {
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
	} w = {};
	u32 uprod, len;
	int err;

	lockdep_assert_held(&qp->lock);
	err = srdma_uring_new(qp, &qp->usq, &qp->sq, &uprod);
	while (!err && qp->sq.prod != uprod) {
		u = srdma_uring_slot(&qp->usq, qp->sq.prod);
		wqe = srdma_ring_slot(&qp->sq, qp->sq.prod);
		err = srdma_sq_read_entry(qp, u, wqe, &w.rdma, &len);
		if (err)
			return err;
		srdma_sq_push(qp, wqe, &w.rdma.wr, len);
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
		srdma_dbg_qp(qp, "post_send: a user QP posts through its ring\n");
		err = -EINVAL;
	} else if (!srdma_qp_sq_postable(qp)) {
		srdma_dbg_qp(qp, "post_send in state %d\n", qp->state);
		err = -EINVAL;
	} else if (qp->usq.bad) {
		/* Nothing is taken from it until a reset: not lost unsaid. */
		srdma_dbg_qp(qp, "post_send: the send ring held garbage\n");
		err = -EINVAL;
	} else if (qp->state != IB_QPS_ERR && srdma_sq_pull(qp)) {
		err = -EINVAL;
		srdma_qp_error(qp);
	}
	if (err)
		*bad_wr = wr;
	if (qp->state == IB_QPS_ERR) {
		srdma_qp_flush(qp);
	} else {
		/* A doorbell's run may place directly (srdma_recv.c). */
		WARN_ON_ONCE(qp->direct_ack.valid);	/* used up in its hold */
		qp->direct_ack.valid = false;
		qp->direct_run = true;
		srdma_req_run(qp);
		qp->direct_run = false;
		srdma_rcv_direct_ack(qp);
	}
	spin_unlock_bh(&qp->lock);
	return err;
}

/**
 * srdma_post_send() - the post_send verb
 * @ibqp: the QP
 * @wr: the list of work requests; for a user QP, NULL (a doorbell)
 * @bad_wr: set to the first work request not posted
 *
 * Queues each work request and runs the requester (from send_work if IRQs
 * are off); in ERR they are flushed. A user QP posts through its mapped
 * SQ: this only rings the doorbell.
 *
 * Context: any context, also with IRQs off; does not sleep; takes the QP
 * lock.
 * Return: 0, -EINVAL for a bad work request, a QP not yet in RTS or an
 * XRC target QP, -ENOMEM if the SQ is full.
 */
int srdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	struct srdma_send_wqe *wqe;
	bool irqs_off;
	int err = 0;
	u32 len;

	if (qp->usq.map)
		return srdma_post_send_user(qp, wr, bad_wr);
	if (srdma_qp_is_xrc_tgt(qp)) {
		srdma_dbg_qp(qp, "post_send on an XRC target QP\n");
		*bad_wr = wr;
		return -EINVAL;
	}
	irqs_off = srdma_qp_lock_post(qp);
	if (!srdma_qp_sq_postable(qp)) {
		srdma_dbg_qp(qp, "post_send in state %d\n", qp->state);
		err = -EINVAL;
		*bad_wr = wr;
		goto out_unlock;
	}
	for (; wr; wr = wr->next) {
		err = srdma_check_wr(qp, wr);
		if (!err && qp->sq.prod - qp->sq.cons >= qp->sq.max_wr)
			err = -ENOMEM;
		wqe = srdma_ring_slot(&qp->sq, qp->sq.prod);
		if (!err)
			err = srdma_wr_sges(qp, wqe, wr, &len);
		if (err) {
			*bad_wr = wr;
			break;
		}
		srdma_wr_ud(qp, wqe, wr);
		srdma_sq_push(qp, wqe, wr, len);
	}
	if (qp->state == IB_QPS_ERR)
		srdma_qp_flush(qp);
	else if (irqs_off)
		srdma_queue_send_work(qp);
	else
		srdma_req_run(qp);
out_unlock:
	srdma_qp_unlock_post(qp, irqs_off);
	return err;
}
