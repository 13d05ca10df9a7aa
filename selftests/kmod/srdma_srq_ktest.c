// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_srq_ktest: shared receive queues as a kernel consumer uses them,
 * on one srdma device in loopback to its own IPv4 RoCEv2 GID. Everything
 * runs at load time (`insmod srdma_srq_ktest.ko dev=srdma0`): the load
 * fails with -EINVAL if any check failed, each failure logged as
 * "srdma_srq_ktest: FAIL ...", and succeeds after logging
 * "srdma_srq_ktest: PASS: N checks"; all objects are gone by then, so the
 * module holds nothing and can be removed at once. Used by
 * selftests/tests/srq.sh.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>

#include "srdma_ktest.h"

MODULE_DESCRIPTION("srdma selftest: SRQs for kernel consumers");
MODULE_LICENSE("Dual BSD/GPL");

#define KT_SRQ_WR	8
#define KT_MSG		512		/* bytes per receive buffer */
#define KT_RECV_OFF	8192		/* receive buffers from here */
#define KT_BUF		(KT_RECV_OFF + 2 * KT_SRQ_WR * KT_MSG)

struct kt {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_srq *srq;
	struct ib_qp *snd, *rcv;
	u8 *buf;
	u64 dma;			/* buf, as the device addresses it */
	union ib_gid gid;
	int gidx;
	atomic_t limit_events;
	atomic_t last_wqe_events;
	atomic_t srq_err_events;
	int checks, failed;
};

static void kt_srq_event(struct ib_event *ev, void *ctx)
{
	struct kt *kt = ctx;

	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED)
		atomic_inc(&kt->limit_events);
	else if (ev->event == IB_EVENT_SRQ_ERR)
		atomic_inc(&kt->srq_err_events);
}

static void kt_qp_event(struct ib_event *ev, void *ctx)
{
	struct kt *kt = ctx;

	if (ev->event == IB_EVENT_QP_LAST_WQE_REACHED)
		atomic_inc(&kt->last_wqe_events);
}

static struct ib_qp *kt_qp(struct kt *kt, struct ib_srq *srq)
{
	struct ib_qp_init_attr init = {
		.event_handler = kt_qp_event,
		.qp_context = kt,
		.send_cq = kt->scq,
		.recv_cq = kt->rcq,
		.srq = srq,
		.cap = { .max_send_wr = 16, .max_recv_wr = srq ? 0 : 4,
			 .max_send_sge = 1, .max_recv_sge = srq ? 0 : 1 },
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
	};

	return ib_create_qp(kt->pd, &init);
}

/* Post receive @i (buffer @i of the receive area) to the SRQ. */
static int kt_post_srq(struct kt *kt, u64 wr_id, int i)
{
	struct ib_sge sge = {
		.addr = kt->dma + KT_RECV_OFF + i * KT_MSG,
		.length = KT_MSG,
		.lkey = kt->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	};
	const struct ib_recv_wr *bad;

	return ib_post_srq_recv(kt->srq, &wr, &bad);
}

/* SEND with immediate @imm of @len bytes (pattern @seed) from the sender. */
static int kt_send(struct kt *kt, u64 wr_id, u32 len, u8 seed, u32 imm)
{
	struct ib_sge sge = {
		.addr = kt->dma, .length = len, .lkey = kt->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND_WITH_IMM, .send_flags = IB_SEND_SIGNALED,
		.ex.imm_data = cpu_to_be32(imm),
	};
	const struct ib_send_wr *bad;
	u32 i;

	for (i = 0; i < len; i++)
		kt->buf[i] = seed + i;
	return ib_post_send(kt->snd, &wr, &bad);
}

/* One completion from @cq within about @ms ms: 1, or 0 if none came. */
static int kt_poll(struct ib_cq *cq, struct ib_wc *wc, int ms)
{
	int i;

	for (i = 0; i < ms; i++) {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return 1;
		usleep_range(1000, 2000);
	}
	return 0;
}

/* Does receive buffer @i hold @len bytes of pattern @seed? */
static bool kt_holds(struct kt *kt, int i, u32 len, u8 seed)
{
	u32 k;

	for (k = 0; k < len; k++)
		if (kt->buf[KT_RECV_OFF + i * KT_MSG + k] != (u8)(seed + k))
			return false;
	return true;
}

/* A SEND through the SRQ: both completions, every field that matters. */
static void kt_exchange(struct kt *kt, int n, int buf_idx)
{
	struct ib_wc wc;
	u32 len = 100 + n;

	KT_CHECK(kt, !kt_send(kt, 500 + n, len, n, 0x1000 + n), "send %d", n);
	KT_CHECK(kt, kt_poll(kt->rcq, &wc, 2000), "recv %d", n);
	KT_CHECK(kt, wc.status == IB_WC_SUCCESS, "status %d", wc.status);
	KT_CHECK(kt, wc.wr_id == 100 + n, "wr_id %llu", wc.wr_id);
	KT_CHECK(kt, wc.opcode == IB_WC_RECV, "opcode %d", wc.opcode);
	KT_CHECK(kt, wc.byte_len == len, "byte_len %u", wc.byte_len);
	KT_CHECK(kt, wc.wc_flags == IB_WC_WITH_IMM, "wc_flags %#x",
		 wc.wc_flags);
	KT_CHECK(kt, be32_to_cpu(wc.ex.imm_data) == 0x1000 + n, "imm %#x",
		 be32_to_cpu(wc.ex.imm_data));
	KT_CHECK(kt, wc.qp == kt->rcv, "completion of another QP");
	KT_CHECK(kt, wc.src_qp == kt->snd->qp_num, "src_qp %u", wc.src_qp);
	KT_CHECK(kt, kt_holds(kt, buf_idx, len, n), "payload %d", n);
	KT_CHECK(kt, kt_poll(kt->scq, &wc, 2000), "send completion %d", n);
	KT_CHECK(kt, wc.status == IB_WC_SUCCESS && wc.wr_id == 500 + n,
		 "send status %d wr_id %llu", wc.status, wc.wr_id);
}

/* The verbs' answers to bad input, with the QPs made. */
static void kt_refusals(struct kt *kt)
{
	struct ib_srq_init_attr sa = { .attr = { .max_wr = 0, .max_sge = 1 } };
	struct ib_srq_attr attr = {};
	struct ib_sge sge[2] = {};
	struct ib_recv_wr wr = { .sg_list = sge, .num_sge = 2 };
	const struct ib_recv_wr *bad = NULL;
	struct ib_srq *s;

	s = ib_create_srq(kt->pd, &sa);
	KT_CHECK(kt, PTR_ERR_OR_ZERO(s) == -EINVAL, "max_wr 0: %d",
		 PTR_ERR_OR_ZERO(s));
	if (!IS_ERR(s))
		ib_destroy_srq(s);
	KT_CHECK(kt, ib_post_recv(kt->rcv, &wr, &bad) == -EINVAL,
		 "post_recv on a QP with an SRQ");
	KT_CHECK(kt, bad == &wr, "bad_wr");
	KT_CHECK(kt, ib_post_srq_recv(kt->srq, &wr, &bad) == -EINVAL,
		 "two SGEs, max_sge 1");
	attr.srq_limit = KT_SRQ_WR + 1;
	KT_CHECK(kt, ib_modify_srq(kt->srq, &attr, IB_SRQ_LIMIT) == -EINVAL,
		 "limit over max_wr");
	attr.max_wr = 2 * KT_SRQ_WR;
	KT_CHECK(kt, ib_modify_srq(kt->srq, &attr, IB_SRQ_MAX_WR) ==
		 -EOPNOTSUPP, "resize");
	KT_CHECK(kt, ib_destroy_srq_user(kt->srq, NULL) == -EBUSY,
		 "destroy of an SRQ in use");
}

static void kt_run(struct kt *kt)
{
	struct ib_srq_attr attr = {};
	unsigned long flags;
	struct ib_wc wc;
	int i, err;

	kt_refusals(kt);

	/* Full: max_wr receives, the next is ENOMEM; posted with IRQs off. */
	local_irq_save(flags);
	for (i = 0, err = 0; i < KT_SRQ_WR && !err; i++)
		err = kt_post_srq(kt, 100 + i, i);
	KT_CHECK(kt, !err, "post_srq_recv %d: %d", i, err);
	KT_CHECK(kt, kt_post_srq(kt, 999, 0) == -ENOMEM, "one too many");
	local_irq_restore(flags);

	attr.srq_limit = 6;
	KT_CHECK(kt, !ib_modify_srq(kt->srq, &attr, IB_SRQ_LIMIT), "arm");
	memset(&attr, 0, sizeof(attr));
	KT_CHECK(kt, !ib_query_srq(kt->srq, &attr), "query");
	KT_CHECK(kt, attr.srq_limit == 6 && attr.max_wr == KT_SRQ_WR &&
		 attr.max_sge == 1, "query: limit %u max_wr %u max_sge %u",
		 attr.srq_limit, attr.max_wr, attr.max_sge);

	/* 7 and 6 left: no event; 5 left: one, and the limit is disarmed. */
	for (i = 0; i < 3; i++) {
		kt_exchange(kt, i, i);
		KT_CHECK(kt, atomic_read(&kt->limit_events) == (i == 2),
			 "after %d takes: %d limit events", i + 1,
			 atomic_read(&kt->limit_events));
	}
	KT_CHECK(kt, !ib_query_srq(kt->srq, &attr) && attr.srq_limit == 0,
		 "limit after the event: %u", attr.srq_limit);
	for (; i < KT_SRQ_WR; i++)
		kt_exchange(kt, i, i);
	KT_CHECK(kt, atomic_read(&kt->limit_events) == 1, "%d limit events",
		 atomic_read(&kt->limit_events));

	/* Empty: RNR NAKs until a receive comes. */
	KT_CHECK(kt, !kt_send(kt, 500 + i, 100 + i, i, 0x1000 + i), "send");
	msleep(100);
	KT_CHECK(kt, ib_poll_cq(kt->rcq, 1, &wc) == 0, "received with none");
	KT_CHECK(kt, ib_poll_cq(kt->scq, 1, &wc) == 0, "sent with none");
	KT_CHECK(kt, !kt_post_srq(kt, 100 + i, i), "post after RNR");
	KT_CHECK(kt, kt_poll(kt->rcq, &wc, 2000), "no receive after RNR");
	KT_CHECK(kt, wc.status == IB_WC_SUCCESS && wc.wr_id == 100 + i &&
		 wc.qp == kt->rcv && wc.byte_len == 100 + i,
		 "after RNR: status %d wr_id %llu", wc.status, wc.wr_id);
	KT_CHECK(kt, kt_holds(kt, i, 100 + i, i), "payload after RNR");
	KT_CHECK(kt, kt_poll(kt->scq, &wc, 2000), "no send after RNR");
	KT_CHECK(kt, wc.status == IB_WC_SUCCESS && wc.wr_id == 500 + i,
		 "send after RNR: status %d", wc.status);
	i++;

	/* Two receives, one taken; ERR: Last WQE Reached, nothing flushed. */
	KT_CHECK(kt, !kt_post_srq(kt, 100 + i, i), "post");
	KT_CHECK(kt, !kt_post_srq(kt, 200, i + 1), "post");
	kt_exchange(kt, i, i);
	{
		struct ib_qp_attr qa = { .qp_state = IB_QPS_ERR };

		KT_CHECK(kt, !ib_modify_qp(kt->rcv, &qa, IB_QP_STATE), "to ERR");
	}
	KT_CHECK(kt, atomic_read(&kt->last_wqe_events) == 1,
		 "%d Last WQE Reached events",
		 atomic_read(&kt->last_wqe_events));
	KT_CHECK(kt, ib_poll_cq(kt->rcq, 1, &wc) == 0,
		 "an SRQ receive was flushed");
	KT_CHECK(kt, atomic_read(&kt->srq_err_events) == 0, "SRQ_ERR");
}

static void kt_teardown(struct kt *kt)
{
	if (!IS_ERR_OR_NULL(kt->rcv))
		ib_destroy_qp(kt->rcv);
	if (!IS_ERR_OR_NULL(kt->snd))
		ib_destroy_qp(kt->snd);
	/* With no QP left the SRQ goes, receives still posted or not. */
	if (!IS_ERR_OR_NULL(kt->srq))
		KT_CHECK(kt, !ib_destroy_srq_user(kt->srq, NULL), "destroy");
	if (!IS_ERR_OR_NULL(kt->rcq))
		ib_destroy_cq(kt->rcq);
	if (!IS_ERR_OR_NULL(kt->scq))
		ib_destroy_cq(kt->scq);
	srdma_ktest_unmap(kt->ibdev, KT_BUF, kt->pd, kt->dma);
}

static int kt_setup(struct kt *kt)
{
	struct ib_cq_init_attr ca = { .cqe = 64 };
	struct ib_srq_init_attr sa = {
		.event_handler = kt_srq_event,
		.srq_context = kt,
		.attr = { .max_wr = KT_SRQ_WR, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	int err;

	KT_CHECK(kt, kt->ibdev->attrs.max_srq > 0, "max_srq 0");
	KT_CHECK(kt, kt->ibdev->attrs.max_srq_wr >= KT_SRQ_WR, "max_srq_wr");
	kt->gidx = srdma_ktest_find_gid(kt->ibdev, &kt->gid);
	if (kt->gidx < 0)
		return kt->gidx;
	err = srdma_ktest_map(kt->ibdev, kt->buf, KT_BUF, &kt->pd, &kt->dma);
	if (err)
		return err;
	kt->scq = ib_create_cq(kt->ibdev, NULL, NULL, kt, &ca);
	if (IS_ERR(kt->scq))
		return PTR_ERR(kt->scq);
	kt->rcq = ib_create_cq(kt->ibdev, NULL, NULL, kt, &ca);
	if (IS_ERR(kt->rcq))
		return PTR_ERR(kt->rcq);
	kt->srq = ib_create_srq(kt->pd, &sa);
	if (IS_ERR(kt->srq))
		return PTR_ERR(kt->srq);
	KT_CHECK(kt, sa.attr.max_wr == KT_SRQ_WR && sa.attr.max_sge == 1,
		 "created max_wr %u max_sge %u", sa.attr.max_wr,
		 sa.attr.max_sge);
	kt->snd = kt_qp(kt, NULL);
	if (IS_ERR(kt->snd))
		return PTR_ERR(kt->snd);
	kt->rcv = kt_qp(kt, kt->srq);
	if (IS_ERR(kt->rcv))
		return PTR_ERR(kt->rcv);
	return srdma_ktest_connect(kt->snd, kt->rcv->qp_num, &kt->gid,
				   kt->gidx, 7) ?:
	       srdma_ktest_connect(kt->rcv, kt->snd->qp_num, &kt->gid,
				   kt->gidx, 7);
}

SRDMA_KTEST_MAIN();
