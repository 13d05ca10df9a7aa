// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_resize_ktest: ib_resize_cq() as a kernel consumer uses it, on one
 * srdma device in loopback to its own IPv4 RoCEv2 GID (one RC QP connected
 * to itself, send and receive completions on two CQs). Everything runs at
 * load time (`insmod srdma_resize_ktest.ko dev=srdma0`): the load fails
 * with -EINVAL if any check failed, each failure logged as
 * "srdma_resize_ktest: FAIL ...", and succeeds after logging
 * "srdma_resize_ktest: PASS: N checks"; all objects are gone by then.
 * Used by selftests/tests/resize.sh.
 *
 * The CQs count their completions through completion events: the handler
 * re-arms at once, and srdma calls it under the QP's lock, which every
 * completion of this one QP takes, so no completion slips by unarmed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/log2.h>

#include "srdma_ktest.h"

MODULE_DESCRIPTION("srdma selftest: resizing CQs for kernel consumers");
MODULE_LICENSE("Dual BSD/GPL");

#define KT_N		6		/* messages per round */
#define KT_MSG		512		/* bytes per receive buffer */
#define KT_RECV_OFF	4096		/* receive buffers from here */
#define KT_BUF		(KT_RECV_OFF + KT_N * KT_MSG)

struct kt {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_qp *qp;
	u8 *buf;
	u64 dma;			/* buf, as the device addresses it */
	union ib_gid gid;
	int gidx;
	atomic_t scq_events, rcq_events;
	int checks, failed;
};

/* Count the completion and re-arm (see the top of the file). */
static void kt_comp(struct ib_cq *cq, void *ctx)
{
	struct kt *kt = ctx;

	atomic_inc(cq == kt->scq ? &kt->scq_events : &kt->rcq_events);
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
}

/* Round @r: KT_N receives, then KT_N SENDs with immediate to them. */
static int kt_post_round(struct kt *kt, int r)
{
	const struct ib_send_wr *sbad;
	const struct ib_recv_wr *rbad;
	struct ib_sge sge;
	int i, err;

	for (i = 0; i < KT_N; i++) {
		struct ib_recv_wr wr = {
			.wr_id = 100 * r + i, .sg_list = &sge, .num_sge = 1,
		};

		sge.addr = kt->dma + KT_RECV_OFF + i * KT_MSG;
		sge.length = KT_MSG;
		sge.lkey = kt->pd->local_dma_lkey;
		err = ib_post_recv(kt->qp, &wr, &rbad);
		if (err)
			return err;
	}
	for (i = 0; i < KT_N; i++) {
		struct ib_send_wr wr = {
			.wr_id = 100 * r + 50 + i, .sg_list = &sge,
			.num_sge = 1, .opcode = IB_WR_SEND_WITH_IMM,
			.send_flags = IB_SEND_SIGNALED,
			.ex.imm_data = cpu_to_be32(0x1000 * r + i),
		};

		sge.addr = kt->dma + 64 * i;
		sge.length = 10 * r + i + 1;
		sge.lkey = kt->pd->local_dma_lkey;
		err = ib_post_send(kt->qp, &wr, &sbad);
		if (err)
			return err;
	}
	return 0;
}

/* Wait for @n completion events in @cnt: true if they came within ~2 s. */
static bool kt_wait(atomic_t *cnt, int n)
{
	int i;

	for (i = 0; i < 2000 && atomic_read(cnt) < n; i++)
		usleep_range(1000, 2000);
	return atomic_read(cnt) >= n;
}

/* Poll round @r's completions from both CQs: every field, in order. */
static void kt_check_round(struct kt *kt, int r)
{
	struct ib_wc wc[KT_N];
	int i, n, k;

	for (n = 0, k = 0; n < KT_N && k < 2000; k++) {
		n += ib_poll_cq(kt->scq, KT_N - n, wc + n);
		if (n < KT_N)
			usleep_range(1000, 2000);
	}
	KT_CHECK(kt, n == KT_N, "round %d: %d send completions", r, n);
	for (i = 0; i < n; i++) {
		KT_CHECK(kt, wc[i].wr_id == 100 * r + 50 + i,
			 "round %d send %d: wr_id %llu", r, i, wc[i].wr_id);
		KT_CHECK(kt, wc[i].status == IB_WC_SUCCESS, "status %d",
			 wc[i].status);
		KT_CHECK(kt, wc[i].opcode == IB_WC_SEND, "opcode %d",
			 wc[i].opcode);
		KT_CHECK(kt, wc[i].qp == kt->qp, "another QP");
		KT_CHECK(kt, wc[i].byte_len == 0, "byte_len %u",
			 wc[i].byte_len);
		KT_CHECK(kt, !(wc[i].wc_flags & (IB_WC_WITH_IMM | IB_WC_GRH)),
			 "wc_flags %#x", wc[i].wc_flags);
	}
	for (n = 0, k = 0; n < KT_N && k < 2000; k++) {
		n += ib_poll_cq(kt->rcq, KT_N - n, wc + n);
		if (n < KT_N)
			usleep_range(1000, 2000);
	}
	KT_CHECK(kt, n == KT_N, "round %d: %d receive completions", r, n);
	for (i = 0; i < n; i++) {
		KT_CHECK(kt, wc[i].wr_id == 100 * r + i,
			 "round %d recv %d: wr_id %llu", r, i, wc[i].wr_id);
		KT_CHECK(kt, wc[i].status == IB_WC_SUCCESS, "status %d",
			 wc[i].status);
		KT_CHECK(kt, wc[i].opcode == IB_WC_RECV, "opcode %d",
			 wc[i].opcode);
		KT_CHECK(kt, wc[i].qp == kt->qp, "another QP");
		KT_CHECK(kt, wc[i].byte_len == 10 * r + i + 1, "byte_len %u",
			 wc[i].byte_len);
		KT_CHECK(kt, (wc[i].wc_flags & (IB_WC_WITH_IMM | IB_WC_GRH)) ==
			 IB_WC_WITH_IMM, "wc_flags %#x", wc[i].wc_flags);
		KT_CHECK(kt, be32_to_cpu(wc[i].ex.imm_data) == 0x1000 * r + i,
			 "imm %#x", be32_to_cpu(wc[i].ex.imm_data));
		KT_CHECK(kt, wc[i].src_qp == kt->qp->qp_num, "src_qp %u",
			 wc[i].src_qp);
		KT_CHECK(kt, !memcmp(kt->buf + KT_RECV_OFF + i * KT_MSG,
				     kt->buf + 64 * i, 10 * r + i + 1),
			 "round %d payload %d", r, i);
	}
	KT_CHECK(kt, ib_poll_cq(kt->scq, 1, wc) == 0, "a send completion more");
	KT_CHECK(kt, ib_poll_cq(kt->rcq, 1, wc) == 0, "a receive more");
}

/* The size a resize to @cqe makes: 2^k - 1 >= @cqe. */
static int kt_size(int cqe)
{
	return roundup_pow_of_two(cqe + 1) - 1;
}

/* Resize @_cq to @_n entries: the result @_want, and the size then @_size. */
#define KT_RESIZE(kt, _cq, _n, _want, _size) do {			\
	int __e = ib_resize_cq(_cq, _n);				\
									\
	KT_CHECK(kt, __e == (_want), "resize to %d: %d", (int)(_n), __e); \
	KT_CHECK(kt, (_cq)->cqe == (_size), "size %d after resize to %d", \
		 (_cq)->cqe, (int)(_n));				\
} while (0)

static void kt_run(struct kt *kt)
{
	int max = kt->ibdev->attrs.max_cqe;
	int r, i, c;

	/* Sizes, empty: made 2^k - 1, refused with the CQ unchanged. */
	KT_CHECK(kt, kt->scq->cqe == 3, "created with %d", kt->scq->cqe);
	KT_RESIZE(kt, kt->scq, 0, -EINVAL, 3);
	KT_RESIZE(kt, kt->scq, -1, -EINVAL, 3);
	KT_RESIZE(kt, kt->scq, max + 1, -EINVAL, 3);
	KT_RESIZE(kt, kt->scq, 1, 0, 1);
	KT_RESIZE(kt, kt->scq, 64, 0, 127);
	KT_RESIZE(kt, kt->scq, max, 0, max);
	KT_RESIZE(kt, kt->scq, 7, 0, 7);
	KT_RESIZE(kt, kt->rcq, 7, 0, 7);

	/* Round 1: all pending, then resized below, at and over that. */
	KT_CHECK(kt, !ib_req_notify_cq(kt->scq, IB_CQ_NEXT_COMP), "arm");
	KT_CHECK(kt, !ib_req_notify_cq(kt->rcq, IB_CQ_NEXT_COMP), "arm");
	KT_CHECK(kt, !kt_post_round(kt, 1), "post round 1");
	KT_CHECK(kt, kt_wait(&kt->scq_events, KT_N), "%d send completions",
		 atomic_read(&kt->scq_events));
	KT_CHECK(kt, kt_wait(&kt->rcq_events, KT_N), "%d receive completions",
		 atomic_read(&kt->rcq_events));
	KT_RESIZE(kt, kt->scq, KT_N - 1, -EINVAL, 7);
	KT_RESIZE(kt, kt->scq, 1, -EINVAL, 7);
	KT_RESIZE(kt, kt->rcq, 3, -EINVAL, 7);
	KT_RESIZE(kt, kt->scq, KT_N, 0, 7);
	KT_RESIZE(kt, kt->scq, 1000, 0, 1023);
	KT_RESIZE(kt, kt->rcq, 20, 0, 31);
	KT_RESIZE(kt, kt->rcq, KT_N, 0, 7);
	kt_check_round(kt, 1);

	/* Rounds 2 to 9: resized over and over while completions come in. */
	for (r = 2; r < 10; r++) {
		KT_CHECK(kt, !kt_post_round(kt, r), "post round %d", r);
		for (i = 0; i < 20; i++) {
			c = KT_N + i * r % 57;
			KT_RESIZE(kt, kt->scq, c, 0, kt_size(c));
			c = KT_N + i * (r + 1) % 33;
			KT_RESIZE(kt, kt->rcq, c, 0, kt_size(c));
		}
		kt_check_round(kt, r);
	}

	/* Empty: down to 1 each, back up, and both still complete. */
	KT_RESIZE(kt, kt->scq, 1, 0, 1);
	KT_RESIZE(kt, kt->rcq, 1, 0, 1);
	KT_RESIZE(kt, kt->scq, KT_N, 0, 7);
	KT_RESIZE(kt, kt->rcq, KT_N, 0, 7);
	KT_CHECK(kt, !kt_post_round(kt, 10), "post round 10");
	kt_check_round(kt, 10);
}

static void kt_teardown(struct kt *kt)
{
	if (!IS_ERR_OR_NULL(kt->qp))
		ib_destroy_qp(kt->qp);
	if (!IS_ERR_OR_NULL(kt->rcq))
		ib_destroy_cq(kt->rcq);
	if (!IS_ERR_OR_NULL(kt->scq))
		ib_destroy_cq(kt->scq);
	srdma_ktest_unmap(kt->ibdev, KT_BUF, kt->pd, kt->dma);
}

static int kt_setup(struct kt *kt)
{
	struct ib_cq_init_attr ca = { .cqe = 3 };
	struct ib_qp_init_attr init = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
	};
	int i, err;

	kt->gidx = srdma_ktest_find_gid(kt->ibdev, &kt->gid);
	if (kt->gidx < 0)
		return kt->gidx;
	for (i = 0; i < KT_RECV_OFF; i++)
		kt->buf[i] = (u8)(i * 7 + 3);
	err = srdma_ktest_map(kt->ibdev, kt->buf, KT_BUF, &kt->pd, &kt->dma);
	if (err)
		return err;
	kt->scq = ib_create_cq(kt->ibdev, kt_comp, NULL, kt, &ca);
	if (IS_ERR(kt->scq))
		return PTR_ERR(kt->scq);
	kt->rcq = ib_create_cq(kt->ibdev, kt_comp, NULL, kt, &ca);
	if (IS_ERR(kt->rcq))
		return PTR_ERR(kt->rcq);
	init.send_cq = kt->scq;
	init.recv_cq = kt->rcq;
	kt->qp = ib_create_qp(kt->pd, &init);
	if (IS_ERR(kt->qp))
		return PTR_ERR(kt->qp);
	return srdma_ktest_connect(kt->qp, kt->qp->qp_num, &kt->gid, kt->gidx,
				   7);
}

SRDMA_KTEST_MAIN();
