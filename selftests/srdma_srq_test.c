// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues on srdma0 in loopback (its own IPv4 RoCEv2 GID):
 * the SRQ verbs and their limits, RC and UD QPs taking their receives
 * from one SRQ (every field of every completion, qp_num naming the QP
 * that received), the limit event (once, through ibv_get_async_event),
 * RNR NAKs while the SRQ is empty, Last WQE Reached, many QPs on two
 * threads sharing one SRQ, destroy ordering; and the SRQ's mapped ring
 * under a hostile owner (a producer index far past the consumer or
 * behind it, garbage num_sge, SGE lengths that overflow, a bad lkey,
 * random bytes): the SRQ goes to error, never the kernel.
 * Run in the test VM with the device bound to a veth (selftests/run.sh).
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <rdma/srdma-abi.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define BUF_SIZE	(1 << 20)
#define RECV_OFF	(BUF_SIZE / 2)	/* receive buffers from here */
#define SLOT		4096		/* bytes per message and receive */
#define SRQ_WR		64
#define SRQ_SGE		2
#define NPAIR		8
#define UD_QKEY		0x11111111U
#define GRH		40

FIXTURE(srq) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq;		/* senders' completions */
	struct ibv_cq *rcq;		/* receivers' completions */
	struct ibv_mr *mr;
	struct ibv_srq *srq;
	char *buf;
	union ibv_gid gid;
	int gidx;
	struct ibv_qp *snd[NPAIR];	/* plain RC QPs */
	struct ibv_qp *rcv[NPAIR];	/* RC QPs on the SRQ */
	int npair;
};

static struct ibv_srq *make_srq(struct ibv_pd *pd, uint32_t max_wr)
{
	struct ibv_srq_init_attr a;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = max_wr;
	a.attr.max_sge = SRQ_SGE;
	return ibv_create_srq(pd, &a);
}

static struct ibv_qp *make_qp(FIXTURE_DATA(srq) *self, enum ibv_qp_type type,
			      struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.qp_type = type,
		.send_cq = self->scq,
		.recv_cq = self->rcq,
		.srq = srq,
		.cap = { .max_send_wr = 64, .max_recv_wr = srq ? 0 : 16,
			 .max_send_sge = 2, .max_recv_sge = srq ? 0 : 2 },
	};

	return ibv_create_qp(self->pd, &init);
}

/* RC @a, INIT -> RTR (towards @dqpn) -> RTS; 0 or ibv_modify_qp()'s error. */
static int rc_connect(FIXTURE_DATA(srq) *self, struct ibv_qp *a, uint32_t dqpn,
		      uint8_t rnr_retry, uint8_t timeout, uint8_t retry)
{
	struct ibv_qp_attr at;
	int ret;

	ret = srdma_test_qp_init(a);
	if (ret)
		return ret;
	ret = srdma_test_qp_rtr_to(a, dqpn, self->gidx, &self->gid,
				   IBV_MTU_1024);
	if (ret)
		return ret;
	srdma_test_rts_attr(&at);
	at.rnr_retry = rnr_retry;
	at.timeout = timeout;
	at.retry_cnt = retry;
	return ibv_modify_qp(a, &at, SRDMA_TEST_RTS_MASK);
}

/* @n pairs: snd[i] (own RQ) connected to rcv[i] (on @srq), both ways. */
static int make_pairs(FIXTURE_DATA(srq) *self, struct ibv_srq *srq, int n,
		      uint8_t rnr_retry)
{
	int i;

	for (i = 0; i < n; i++) {
		self->snd[i] = make_qp(self, IBV_QPT_RC, NULL);
		self->rcv[i] = make_qp(self, IBV_QPT_RC, srq);
		if (!self->snd[i] || !self->rcv[i])
			return -1;
		self->npair = i + 1;
		if (rc_connect(self, self->snd[i], self->rcv[i]->qp_num,
			       rnr_retry, 14, 7) ||
		    rc_connect(self, self->rcv[i], self->snd[i]->qp_num,
			       7, 14, 7))
			return -1;
	}
	return 0;
}

/* One receive of @len bytes at receive slot @k, on @srq. */
static int post_srq(FIXTURE_DATA(srq) *self, struct ibv_srq *srq,
		    uint64_t wr_id, int k, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(self->buf + RECV_OFF + (size_t)k * SLOT),
		.length = len, .lkey = self->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* Post @op of @len bytes from send slot @k on @qp (imm in network order). */
static int post_op(FIXTURE_DATA(srq) *self, struct ibv_qp *qp,
		   enum ibv_wr_opcode op, uint64_t wr_id, int k, uint32_t len,
		   uint32_t imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(self->buf + (size_t)k * SLOT),
		.length = len, .lkey = self->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm),
	}, *bad;

	/* WRITE with immediate: into the sender's slot + RECV_OFF. */
	wr.wr.rdma.remote_addr = (uintptr_t)(self->buf + RECV_OFF +
					     (size_t)k * SLOT);
	wr.wr.rdma.rkey = self->mr->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* Fill send slot @k with a pattern of @seed. */
static void fill(FIXTURE_DATA(srq) *self, int k, uint32_t len, int seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		self->buf[(size_t)k * SLOT + i] = (char)(seed * 31 + i * 7 + 1);
}

/* Does receive slot @r hold the pattern of @seed? */
static int holds(FIXTURE_DATA(srq) *self, int r, uint32_t len, int seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (self->buf[RECV_OFF + (size_t)r * SLOT + i] !=
		    (char)(seed * 31 + i * 7 + 1))
			return 0;
	return 1;
}

FIXTURE_SETUP(srq)
{
	int flags;

	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s: %s",
					  srdma_test_devname(),
					  strerror(errno));
	/* Async events are waited for with poll(). */
	flags = fcntl(self->ctx->async_fd, F_GETFL);
	ASSERT_EQ(0, fcntl(self->ctx->async_fd, F_SETFL, flags | O_NONBLOCK));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->buf = calloc(1, BUF_SIZE);
	ASSERT_NE(NULL, self->buf);
	self->mr = ibv_reg_mr(self->pd, self->buf, BUF_SIZE,
			      IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, self->mr);
	self->scq = ibv_create_cq(self->ctx, 1024, NULL, NULL, 0);
	ASSERT_NE(NULL, self->scq);
	self->rcq = ibv_create_cq(self->ctx, 1024, NULL, NULL, 0);
	ASSERT_NE(NULL, self->rcq);
	self->srq = make_srq(self->pd, SRQ_WR);
	ASSERT_NE(NULL, self->srq) TH_LOG("create_srq: %s", strerror(errno));
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx) TH_LOG("no IPv4 GID");
}

FIXTURE_TEARDOWN(srq)
{
	int i;

	for (i = 0; i < self->npair; i++) {
		if (self->snd[i])
			ibv_destroy_qp(self->snd[i]);
		if (self->rcv[i])
			ibv_destroy_qp(self->rcv[i]);
	}
	if (self->srq)
		ibv_destroy_srq(self->srq);
	if (self->rcq)
		ibv_destroy_cq(self->rcq);
	if (self->scq)
		ibv_destroy_cq(self->scq);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->buf);
}

/* What query_device advertises, what create and query report, bad sizes. */
TEST_F(srq, caps_and_query)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr ia;
	struct ibv_srq_attr sa;
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;
	struct ibv_srq *s;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	EXPECT_LE(1, da.max_srq);
	EXPECT_EQ(16384, da.max_srq_wr);
	EXPECT_EQ(32, da.max_srq_sge);

	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = 100;
	ia.attr.max_sge = 0;		/* one SGE at least */
	s = ibv_create_srq(self->pd, &ia);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(100, ia.attr.max_wr);
	EXPECT_EQ(1, ia.attr.max_sge);
	ASSERT_EQ(0, ibv_query_srq(s, &sa));
	EXPECT_EQ(100, sa.max_wr);
	EXPECT_EQ(1, sa.max_sge);
	EXPECT_EQ(0, sa.srq_limit);
	EXPECT_EQ(0, ibv_destroy_srq(s));

	ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
	EXPECT_EQ(SRQ_WR, sa.max_wr);
	EXPECT_EQ(SRQ_SGE, sa.max_sge);

	/* Out of range: EINVAL, nothing created. */
	ia.attr.max_wr = 0;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq(self->pd, &ia));
	EXPECT_EQ(EINVAL, errno);
	ia.attr.max_wr = da.max_srq_wr + 1;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq(self->pd, &ia));
	EXPECT_EQ(EINVAL, errno);
	ia.attr.max_wr = 8;
	ia.attr.max_sge = da.max_srq_sge + 1;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq(self->pd, &ia));
	EXPECT_EQ(EINVAL, errno);
	ia.attr.max_sge = 1;
	/* a limit over max_wr at creation is ignored (ibv_create_srq(3)) */
	ia.attr.srq_limit = 9;
	{
		struct ibv_srq *srq = ibv_create_srq(self->pd, &ia);
		struct ibv_srq_attr qa;

		ASSERT_NE(NULL, srq);
		ASSERT_EQ(0, ibv_query_srq(srq, &qa));
		EXPECT_EQ(0, qa.srq_limit);
		EXPECT_EQ(0, ibv_destroy_srq(srq));
	}
	ia.attr.srq_limit = 0;

	/* An SRQ of another PD: EINVAL. */
	{
		struct ibv_pd *pd2 = ibv_alloc_pd(self->ctx);
		struct ibv_qp_init_attr init = {
			.qp_type = IBV_QPT_RC, .send_cq = self->scq,
			.recv_cq = self->rcq, .srq = self->srq,
			.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		};

		ASSERT_NE(NULL, pd2);
		errno = 0;
		EXPECT_EQ(NULL, ibv_create_qp(pd2, &init));
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(0, ibv_dealloc_pd(pd2));
	}

	/* A QP on the SRQ has no RQ of its own. */
	ASSERT_EQ(0, make_pairs(self, self->srq, 1, 7));
	ASSERT_EQ(0, ibv_query_qp(self->rcv[0], &qa, IBV_QP_CAP, &qi));
	EXPECT_EQ(0, qa.cap.max_recv_wr);
	EXPECT_EQ(0, qa.cap.max_recv_sge);
	EXPECT_EQ(64, qa.cap.max_send_wr);
}

/*
 * ibv_create_srq_ex: basic SRQs; an XRC SRQ without its domain EINVAL; tag
 * matching EOPNOTSUPP.
 */
TEST_F(srq, create_srq_ex)
{
	struct ibv_srq_init_attr_ex ax;
	struct ibv_srq *s;

	memset(&ax, 0, sizeof(ax));
	ax.attr.max_wr = 8;
	ax.attr.max_sge = 1;
	ax.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	ax.pd = self->pd;
	ax.srq_type = IBV_SRQT_BASIC;
	s = ibv_create_srq_ex(self->ctx, &ax);
	ASSERT_NE(NULL, s) TH_LOG("basic: %s", strerror(errno));
	EXPECT_EQ(8, ax.attr.max_wr);
	EXPECT_EQ(0, ibv_destroy_srq(s));

	/* XRC SRQs work (srdma_xrc_test), but not without a domain. */
	ax.srq_type = IBV_SRQT_XRC;
	ax.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	ax.cq = self->rcq;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq_ex(self->ctx, &ax));
	EXPECT_EQ(EINVAL, errno);
	ax.srq_type = IBV_SRQT_TM;
	ax.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
	ax.tm_cap.max_num_tags = 8;
	ax.tm_cap.max_ops = 8;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq_ex(self->ctx, &ax));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

/* modify_srq: a limit over max_wr is EINVAL, resizing EOPNOTSUPP. */
TEST_F(srq, bad_limit)
{
	struct ibv_srq_attr sa;

	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = SRQ_WR + 1;
	EXPECT_EQ(EINVAL, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
	EXPECT_EQ(0, sa.srq_limit);
	sa.max_wr = 2 * SRQ_WR;
	EXPECT_EQ(EOPNOTSUPP, ibv_modify_srq(self->srq, &sa, IBV_SRQ_MAX_WR));
	sa.srq_limit = SRQ_WR;
	EXPECT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
	EXPECT_EQ(SRQ_WR, sa.srq_limit);
	EXPECT_EQ(SRQ_WR, sa.max_wr);
	sa.srq_limit = 0;		/* disarm */
	EXPECT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
	EXPECT_EQ(0, sa.srq_limit);
	/* More receives than max_wr: ENOMEM for the one too many. */
	for (int k = 0; k < SRQ_WR; k++)
		ASSERT_EQ(0, post_srq(self, self->srq, k, k % 64, 64));
	EXPECT_EQ(ENOMEM, post_srq(self, self->srq, 999, 0, 64));
	/* More SGEs than max_sge: EINVAL. */
	{
		struct ibv_sge sge[SRQ_SGE + 1];
		struct ibv_recv_wr wr = { .sg_list = sge,
					  .num_sge = SRQ_SGE + 1 }, *bad;

		memset(sge, 0, sizeof(sge));
		EXPECT_EQ(EINVAL, ibv_post_srq_recv(self->srq, &wr, &bad));
		EXPECT_EQ(&wr, bad);
	}
}

/* post_recv on a QP that takes its receives from an SRQ: EINVAL. */
TEST_F(srq, post_recv_einval)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->buf, .length = 64,
		.lkey = self->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	ASSERT_EQ(0, make_pairs(self, self->srq, 1, 7));
	EXPECT_EQ(EINVAL, ibv_post_recv(self->rcv[0], &wr, &bad));
	EXPECT_EQ(&wr, bad);
	/* The SRQ still serves the QP. */
	ASSERT_EQ(0, post_srq(self, self->srq, 5, 0, 64));
	fill(self, 0, 40, 3);
	ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 9, 0, 40, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, (struct ibv_wc[1]){}, 1,
				       2000));
}

/*
 * Four QPs on one SRQ, each sent a SEND with immediate by its own peer,
 * then a WRITE with immediate: every field of every receive completion,
 * qp_num naming the QP that received, receives taken from the SRQ in the
 * order posted, the bytes where the receive pointed.
 */
TEST_F(srq, completion_fields)
{
	struct ibv_wc wc[8], swc[8];
	int i, j, seen[4] = { 0 };
	uint32_t len;

	ASSERT_EQ(0, make_pairs(self, self->srq, 4, 7));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, post_srq(self, self->srq, 1000 + i, i, SLOT));

	/* One at a time, so that the order the SRQ hands out is known. */
	for (i = 0; i < 4; i++) {
		len = 100 + 300 * i;
		fill(self, i, len, 10 + i);
		ASSERT_EQ(0, post_op(self, self->snd[3 - i],
				     IBV_WR_SEND_WITH_IMM, 500 + i, i, len,
				     0xabc00 + i));
		ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc[i], 1, 2000))
			TH_LOG("send %d", i);
		ASSERT_EQ(1, srdma_test_poll_n(self->scq, &swc[i], 1, 2000));
		EXPECT_EQ(IBV_WC_SUCCESS, swc[i].status);
		EXPECT_EQ(500 + i, swc[i].wr_id);
		EXPECT_EQ(IBV_WC_SEND, swc[i].opcode);
		EXPECT_EQ(self->snd[3 - i]->qp_num, swc[i].qp_num);

		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
		EXPECT_EQ(1000 + i, wc[i].wr_id);	/* FIFO */
		EXPECT_EQ(IBV_WC_RECV, wc[i].opcode);
		EXPECT_EQ(len, wc[i].byte_len);
		EXPECT_EQ(IBV_WC_WITH_IMM, wc[i].wc_flags);
		EXPECT_EQ(htonl(0xabc00 + i), wc[i].imm_data);
		EXPECT_EQ(self->rcv[3 - i]->qp_num, wc[i].qp_num);
		EXPECT_EQ(self->snd[3 - i]->qp_num, wc[i].src_qp);
		EXPECT_EQ(0, wc[i].vendor_err);
		EXPECT_EQ(0, wc[i].pkey_index);
		EXPECT_EQ(0, wc[i].slid);
		EXPECT_EQ(0, wc[i].sl);
		EXPECT_EQ(0, wc[i].dlid_path_bits);
		EXPECT_TRUE(holds(self, i, len, 10 + i));
	}

	/* All four at once: each receive goes to the QP that got a message. */
	for (i = 0; i < 4; i++) {
		fill(self, 4 + i, 64, 20 + i);
		ASSERT_EQ(0, post_op(self, self->snd[i], IBV_WR_SEND, 600 + i,
				     4 + i, 64, 0));
	}
	ASSERT_EQ(4, srdma_test_poll_n(self->rcq, wc, 4, 4000));
	ASSERT_EQ(4, srdma_test_poll_n(self->scq, swc, 4, 4000));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
		EXPECT_EQ(IBV_WC_RECV, wc[i].opcode);
		EXPECT_EQ(64, wc[i].byte_len);
		EXPECT_EQ(0, wc[i].wc_flags);
		ASSERT_LE(1004, wc[i].wr_id);
		ASSERT_GE(1007, wc[i].wr_id);
		for (j = 0; j < 4 && self->rcv[j]->qp_num != wc[i].qp_num; j++)
			;
		ASSERT_GT(4, j) TH_LOG("qp_num %u is none of ours", wc[i].qp_num);
		EXPECT_EQ(self->snd[j]->qp_num, wc[i].src_qp);
		seen[j]++;
		/* The receive it took holds what that QP's peer sent. */
		EXPECT_TRUE(holds(self, (int)(wc[i].wr_id - 1000), 64, 20 + j));
	}
	for (j = 0; j < 4; j++)
		EXPECT_EQ(1, seen[j]);

	/* WRITE with immediate consumes a receive too: byte_len is the WRITE's. */
	ASSERT_EQ(0, post_srq(self, self->srq, 2000, 20, SLOT));
	fill(self, 9, 3000, 77);
	ASSERT_EQ(0, post_op(self, self->snd[1], IBV_WR_RDMA_WRITE_WITH_IMM,
			     700, 9, 3000, 0x5150));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(2000, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc[0].opcode);
	EXPECT_EQ(3000, wc[0].byte_len);
	EXPECT_EQ(IBV_WC_WITH_IMM, wc[0].wc_flags);
	EXPECT_EQ(htonl(0x5150), wc[0].imm_data);
	EXPECT_EQ(self->rcv[1]->qp_num, wc[0].qp_num);
	EXPECT_EQ(self->snd[1]->qp_num, wc[0].src_qp);
	EXPECT_TRUE(holds(self, 9, 3000, 77));	/* WRITE target */
	ASSERT_EQ(1, srdma_test_poll_n(self->scq, swc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, swc[0].status);
	EXPECT_EQ(IBV_WC_RDMA_WRITE, swc[0].opcode);
	/* Nothing else arrived. */
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 1, wc));
}

/*
 * The limit: armed at 6 with 8 receives posted, it fires at the take that
 * leaves 5, once, through the async event queue; query then says 0 (not
 * armed), and later takes raise nothing.
 */
TEST_F(srq, limit_event_once)
{
	struct ibv_async_event ev;
	struct ibv_srq_attr sa;
	struct ibv_wc wc;
	int i;

	ASSERT_EQ(0, make_pairs(self, self->srq, 1, 7));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, post_srq(self, self->srq, i, i, SLOT));
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 6;
	ASSERT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, i, 0,
				     16, 0));
		ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(i, wc.wr_id);
		ASSERT_EQ(1, srdma_test_poll_n(self->scq, &wc, 1, 2000));
		if (i < 2) {
			/* 7, then 6 left: not below the limit. */
			EXPECT_EQ(-1, srdma_test_next_event(self->ctx, 100, &ev))
				TH_LOG("event %d after %d takes", ev.event_type,
				       i + 1);
			ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
			EXPECT_EQ(6, sa.srq_limit);
		} else if (i == 2) {
			/* 5 left: the event, once, for our SRQ. */
			ASSERT_EQ(0, srdma_test_next_event(self->ctx, 2000, &ev));
			EXPECT_EQ(IBV_EVENT_SRQ_LIMIT_REACHED, ev.event_type);
			EXPECT_EQ(self->srq, ev.element.srq);
			ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
			EXPECT_EQ(0, sa.srq_limit);
		} else {
			EXPECT_EQ(-1, srdma_test_next_event(self->ctx, 100, &ev))
				TH_LOG("event %d after %d takes", ev.event_type,
				       i + 1);
		}
	}
	/* Re-armed, it fires again at the next take below the limit. */
	sa.srq_limit = 3;		/* 2 left now */
	ASSERT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 9, 0, 16, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	ASSERT_EQ(0, srdma_test_next_event(self->ctx, 2000, &ev));
	EXPECT_EQ(IBV_EVENT_SRQ_LIMIT_REACHED, ev.event_type);
	EXPECT_EQ(-1, srdma_test_next_event(self->ctx, 100, &ev));
}

/*
 * An empty SRQ: the SEND draws RNR NAKs (counted, as an empty SRQ) and
 * completes once a receive is posted; with rnr_retry 0 the sender fails
 * with IBV_WC_RNR_RETRY_EXC_ERR and the receiver stays usable.
 */
TEST_F(srq, rnr_when_empty)
{
	long long empty0 = srdma_test_counter("rx_srq_empty");
	long long rnr0 = srdma_test_counter("rnr_nak_sent");
	struct ibv_wc wc;

	ASSERT_LE(0, empty0);
	ASSERT_EQ(0, make_pairs(self, self->srq, 2, 7));
	fill(self, 0, 200, 5);
	ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 42, 0, 200, 0));
	usleep(300000);
	EXPECT_EQ(0, ibv_poll_cq(self->scq, 1, &wc));
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 1, &wc));
	EXPECT_LT(empty0, srdma_test_counter("rx_srq_empty"));
	EXPECT_LT(rnr0, srdma_test_counter("rnr_nak_sent"));

	ASSERT_EQ(0, post_srq(self, self->srq, 77, 3, SLOT));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 4000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(77, wc.wr_id);
	EXPECT_EQ(200, wc.byte_len);
	EXPECT_EQ(self->rcv[0]->qp_num, wc.qp_num);
	EXPECT_TRUE(holds(self, 3, 200, 5));
	ASSERT_EQ(1, srdma_test_poll_n(self->scq, &wc, 1, 4000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(42, wc.wr_id);

	/* No retries allowed: RNR retry exceeded at once. */
	ibv_destroy_qp(self->snd[1]);
	self->snd[1] = make_qp(self, IBV_QPT_RC, NULL);
	ASSERT_NE(NULL, self->snd[1]);
	ibv_destroy_qp(self->rcv[1]);
	self->rcv[1] = make_qp(self, IBV_QPT_RC, self->srq);
	ASSERT_NE(NULL, self->rcv[1]);
	ASSERT_EQ(0, rc_connect(self, self->snd[1], self->rcv[1]->qp_num,
				0, 14, 7));
	ASSERT_EQ(0, rc_connect(self, self->rcv[1], self->snd[1]->qp_num,
				7, 14, 7));
	ASSERT_EQ(0, post_op(self, self->snd[1], IBV_WR_SEND, 43, 0, 200, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->scq, &wc, 1, 4000));
	EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
	EXPECT_EQ(43, wc.wr_id);
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 1, &wc));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->rcv[1]));
}

/*
 * A QP on an SRQ moved to ERR: Last WQE Reached, after nothing of the
 * SRQ's was flushed: its receives stay for the other QPs.
 */
TEST_F(srq, last_wqe_reached)
{
	struct ibv_async_event ev;
	struct ibv_qp_attr a;
	struct ibv_wc wc;

	ASSERT_EQ(0, make_pairs(self, self->srq, 2, 7));
	ASSERT_EQ(0, post_srq(self, self->srq, 1, 0, SLOT));
	ASSERT_EQ(0, post_srq(self, self->srq, 2, 1, SLOT));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	ASSERT_EQ(0, ibv_modify_qp(self->rcv[0], &a, IBV_QP_STATE));
	ASSERT_EQ(0, srdma_test_next_event(self->ctx, 2000, &ev));
	EXPECT_EQ(IBV_EVENT_QP_LAST_WQE_REACHED, ev.event_type);
	EXPECT_EQ(self->rcv[0], ev.element.qp);
	/* ERR again: no second event. */
	ASSERT_EQ(0, ibv_modify_qp(self->rcv[0], &a, IBV_QP_STATE));
	EXPECT_EQ(-1, srdma_test_next_event(self->ctx, 100, &ev));
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 1, &wc));
	/* The other QP gets both receives. */
	ASSERT_EQ(0, post_op(self, self->snd[1], IBV_WR_SEND, 5, 0, 8, 0));
	ASSERT_EQ(0, post_op(self, self->snd[1], IBV_WR_SEND, 6, 0, 8, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(self->rcv[1]->qp_num, wc.qp_num);
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(self->rcv[1]->qp_num, wc.qp_num);
}

/*
 * A receive a QP took and did not complete is flushed through that QP
 * when it goes to ERR: a WRITE with immediate whose target is refused
 * (remote access error) takes a receive and fails the QP.
 */
TEST_F(srq, taken_receive_flushed)
{
	struct ibv_async_event ev;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int got_last = 0, i;

	ASSERT_EQ(0, make_pairs(self, self->srq, 1, 7));
	ASSERT_EQ(0, post_srq(self, self->srq, 31, 0, SLOT));
	ASSERT_EQ(0, post_srq(self, self->srq, 32, 1, SLOT));
	sge.addr = (uintptr_t)self->buf;
	sge.length = 16;
	sge.lkey = self->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)self->buf;
	wr.wr.rdma.rkey = self->mr->rkey ^ 0x5a5a00;	/* no such MR */
	ASSERT_EQ(0, ibv_post_send(self->snd[0], &wr, &bad));
	ASSERT_EQ(1, srdma_test_poll_n(self->scq, &wc, 1, 4000));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	/* The receive it took comes back flushed, through that QP. */
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
	EXPECT_EQ(31, wc.wr_id);
	EXPECT_EQ(self->rcv[0]->qp_num, wc.qp_num);
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 1, &wc));
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->rcv[0]));
	/* QP_ACCESS_ERR, then Last WQE Reached. */
	for (i = 0; i < 3 && !srdma_test_next_event(self->ctx, 1000, &ev); i++) {
		if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
		    ev.element.qp == self->rcv[0])
			got_last++;
	}
	EXPECT_EQ(1, got_last);
}

/* A UD QP on the SRQ: the GRH and the payload; dropped when it is empty. */
TEST_F(srq, ud)
{
	long long drop0 = srdma_test_counter("rx_ud_no_receive");
	long long empty0 = srdma_test_counter("rx_srq_empty");
	struct ibv_qp_attr a;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	struct ibv_ah *ah;

	qp = make_qp(self, IBV_QPT_UD, self->srq);
	ASSERT_NE(NULL, qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = UD_QKEY;
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_QKEY));
	a.qp_state = IBV_QPS_RTR;
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	ah = srdma_test_ah(self->pd, self->gidx, &self->gid);
	ASSERT_NE(NULL, ah);

	ASSERT_EQ(0, post_srq(self, self->srq, 90, 2, SLOT));
	fill(self, 0, 500, 9);
	sge.addr = (uintptr_t)self->buf;
	sge.length = 500;
	sge.lkey = self->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 91;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0x77);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qp->qp_num;
	wr.wr.ud.remote_qkey = UD_QKEY;
	ASSERT_EQ(0, ibv_post_send(qp, &wr, &bad));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(90, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(500 + GRH, wc.byte_len);
	EXPECT_EQ(IBV_WC_GRH | IBV_WC_WITH_IMM, wc.wc_flags);
	EXPECT_EQ(htonl(0x77), wc.imm_data);
	EXPECT_EQ(qp->qp_num, wc.qp_num);
	EXPECT_EQ(qp->qp_num, wc.src_qp);
	EXPECT_EQ(0, memcmp(self->buf + RECV_OFF + 2 * SLOT + GRH, self->buf,
			    500));
	ASSERT_EQ(1, srdma_test_poll_n(self->scq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);

	/* Nothing posted: dropped and counted, nothing completes. */
	wr.wr_id = 92;
	ASSERT_EQ(0, ibv_post_send(qp, &wr, &bad));
	ASSERT_EQ(1, srdma_test_poll_n(self->scq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	usleep(100000);
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 1, &wc));
	EXPECT_EQ(drop0 + 1, srdma_test_counter("rx_ud_no_receive"));
	EXPECT_EQ(empty0 + 1, srdma_test_counter("rx_srq_empty"));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));

	EXPECT_EQ(0, ibv_destroy_ah(ah));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Destroy order: an SRQ in use is EBUSY; its receives outlive a QP. */
TEST_F(srq, destroy_order)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, make_pairs(self, self->srq, 1, 7));
	EXPECT_EQ(EBUSY, ibv_destroy_srq(self->srq));
	ASSERT_EQ(0, post_srq(self, self->srq, 1, 0, SLOT));
	ASSERT_EQ(0, post_srq(self, self->srq, 2, 1, SLOT));
	ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 3, 0, 8, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(1, wc.wr_id);
	ASSERT_EQ(1, srdma_test_poll_n(self->scq, &wc, 1, 2000));
	/* A destroyed QP took nothing more; a new one gets the rest. */
	ASSERT_EQ(0, ibv_destroy_qp(self->rcv[0]));
	ASSERT_EQ(0, ibv_destroy_qp(self->snd[0]));
	self->npair = 0;
	ASSERT_EQ(0, make_pairs(self, self->srq, 1, 7));
	ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 4, 0, 8, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(self->rcv[0]->qp_num, wc.qp_num);
	ASSERT_EQ(1, srdma_test_poll_n(self->scq, &wc, 1, 2000));
	/* QPs first, then the SRQ. */
	ASSERT_EQ(0, ibv_destroy_qp(self->rcv[0]));
	ASSERT_EQ(0, ibv_destroy_qp(self->snd[0]));
	self->npair = 0;
	EXPECT_EQ(0, ibv_destroy_srq(self->srq));
	self->srq = NULL;
}

/*
 * Eight QPs on one SRQ, their peers driven by two threads at once: every
 * message arrives once, in order per QP, in the receive the SRQ gave.
 */
#define MANY_MSGS	40

struct many_arg {
	FIXTURE_DATA(srq) *self;
	int first;			/* pairs first, first + 2, ... */
	int err;
};

static void *many_sender(void *p)
{
	struct many_arg *m = p;
	struct ibv_wc wc[16];
	int seq, i, n, done = 0, posted = 0;

	for (seq = 0; seq < MANY_MSGS; seq++)
		for (i = m->first; i < NPAIR; i += 2) {
			/* The payload names the pair and the sequence. */
			if (post_op(m->self, m->self->snd[i], IBV_WR_SEND_WITH_IMM,
				    i, 0, 64, (uint32_t)(i << 16 | seq))) {
				m->err = 1;
				return NULL;
			}
			posted++;
			while (posted - done >= 32) {
				n = ibv_poll_cq(m->self->scq, 16, wc);
				if (n < 0) {
					m->err = 2;
					return NULL;
				}
				done += n;
			}
		}
	(void)wc;
	return NULL;
}

TEST_F(srq, many_qps)
{
	struct many_arg arg[2];
	pthread_t th[2];
	struct ibv_wc wc[16];
	int next[NPAIR] = { 0 }, total = 0, posted = 0, n, i, k, idle = 0;
	uint32_t imm;

	ASSERT_EQ(0, make_pairs(self, self->srq, NPAIR, 7));
	for (k = 0; k < SRQ_WR; k++)
		ASSERT_EQ(0, post_srq(self, self->srq, posted, posted % 64, 64));
	posted = SRQ_WR;
	/* Both threads share the sender CQ: take the completions here. */
	for (i = 0; i < 2; i++) {
		arg[i].self = self;
		arg[i].first = i;
		arg[i].err = 0;
	}
	ASSERT_EQ(0, pthread_create(&th[0], NULL, many_sender, &arg[0]));
	ASSERT_EQ(0, pthread_create(&th[1], NULL, many_sender, &arg[1]));
	while (total < NPAIR * MANY_MSGS && idle < 50000) {
		n = ibv_poll_cq(self->rcq, 16, wc);
		ASSERT_LE(0, n);
		if (!n) {
			idle++;
			usleep(100);
			continue;
		}
		idle = 0;
		for (k = 0; k < n; k++) {
			ASSERT_EQ(IBV_WC_SUCCESS, wc[k].status)
				TH_LOG("wr_id %llu", (unsigned long long)wc[k].wr_id);
			imm = ntohl(wc[k].imm_data);
			i = imm >> 16;
			ASSERT_GT(NPAIR, i);
			EXPECT_EQ(self->rcv[i]->qp_num, wc[k].qp_num);
			EXPECT_EQ(self->snd[i]->qp_num, wc[k].src_qp);
			EXPECT_EQ(next[i], (int)(imm & 0xffff));
			next[i] = (imm & 0xffff) + 1;
			EXPECT_EQ(64, wc[k].byte_len);
			total++;
			/* Give the receive back for another message. */
			ASSERT_EQ(0, post_srq(self, self->srq, posted,
					      posted % 64, 64));
			posted++;
		}
	}
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	EXPECT_EQ(0, arg[0].err);
	EXPECT_EQ(0, arg[1].err);
	EXPECT_EQ(NPAIR * MANY_MSGS, total);
	for (i = 0; i < NPAIR; i++)
		EXPECT_EQ(MANY_MSGS, next[i]) TH_LOG("pair %d", i);
	/* Drain the sender CQ (some may still be there). */
	while (ibv_poll_cq(self->scq, 16, wc) > 0)
		;
}

/*
 * The SRQ's mapped ring, found in /proc/self/maps: the one uverbs
 * mapping whose producer index moves when the provider posts a receive.
 */
static struct srdma_ring_hdr *srq_ring(FIXTURE_DATA(srq) *self,
				       struct ibv_srq *srq, size_t *len)
{
	struct srdma_test_map m[16];
	uint32_t before[16];
	int n, i, found = -1;

	n = srdma_test_uverbs_maps(m, 16);
	if (n < 0)
		return NULL;
	/* Every uverbs mapping of ours is a ring: read each one's prod. */
	for (i = 0; i < n; i++)
		before[i] = ((struct srdma_ring_hdr *)m[i].addr)->prod;
	if (post_srq(self, srq, 0xdead, 0, 64))
		return NULL;
	for (i = 0; i < n; i++) {
		if (((struct srdma_ring_hdr *)m[i].addr)->prod != before[i] + 1)
			continue;
		if (found >= 0)
			return NULL;	/* ambiguous */
		found = i;
	}
	if (found < 0)
		return NULL;
	/* Take the receive back: no message came to consume it. */
	((struct srdma_ring_hdr *)m[found].addr)->prod--;
	*len = m[found].len;
	return (struct srdma_ring_hdr *)m[found].addr;
}

#define SRQ_SLOT (sizeof(struct srdma_urecv_wqe) + \
		  SRQ_SGE * sizeof(struct srdma_usge))

/* Find the events of a bad SRQ ring: SRQ_ERR once, the receiver to ERR. */
static void expect_srq_err(struct __test_metadata *_metadata,
			   FIXTURE_DATA(srq) *self, struct ibv_qp *rcv,
			   int want_srq_err)
{
	struct ibv_async_event ev;
	int srq_err = 0, fatal = 0, last = 0, i;

	for (i = 0; i < 4 && !srdma_test_next_event(self->ctx, 1000, &ev); i++) {
		if (ev.event_type == IBV_EVENT_SRQ_ERR &&
		    ev.element.srq == self->srq)
			srq_err++;
		else if (ev.event_type == IBV_EVENT_QP_FATAL &&
			 ev.element.qp == rcv)
			fatal++;
		else if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
			 ev.element.qp == rcv)
			last++;
	}
	EXPECT_EQ(want_srq_err, srq_err);
	EXPECT_EQ(1, fatal);
	EXPECT_EQ(1, last);
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(rcv));
}

/*
 * A hostile SRQ ring: a producer index far past the consumer, one behind
 * it, num_sge past max_sge, SGE lengths that overflow 32 bits. Each puts
 * the SRQ in error (IB_EVENT_SRQ_ERR, once) and the QP that needed a
 * receive in ERR; nothing completes a receive; a second QP on the same
 * SRQ fails too, without a second SRQ_ERR; a new SRQ then works.
 */
TEST_F(srq, ring_hostile)
{
	struct srdma_urecv_wqe *u;
	struct srdma_ring_hdr *h;
	struct ibv_wc wc;
	size_t len;
	int kind;

	for (kind = 0; kind < 4; kind++) {
		if (kind) {	/* a fresh SRQ and pairs for each kind */
			for (int i = 0; i < self->npair; i++) {
				ibv_destroy_qp(self->snd[i]);
				ibv_destroy_qp(self->rcv[i]);
			}
			self->npair = 0;
			ASSERT_EQ(0, ibv_destroy_srq(self->srq));
			self->srq = make_srq(self->pd, SRQ_WR);
			ASSERT_NE(NULL, self->srq);
			while (ibv_poll_cq(self->scq, 1, &wc) > 0)
				;
		}
		ASSERT_EQ(0, make_pairs(self, self->srq, 2, 7));
		h = srq_ring(self, self->srq, &len);
		ASSERT_NE(NULL, h) TH_LOG("SRQ ring not found");
		ASSERT_EQ(0, h->prod);
		ASSERT_EQ(0, h->cons);
		u = (struct srdma_urecv_wqe *)((char *)h + SRDMA_RING_HDR_SIZE);
		memset(u, 0, SRQ_SLOT);
		u->wr_id = 50;
		u->num_sge = 1;
		u->sge[0].addr = (uintptr_t)(self->buf + RECV_OFF);
		u->sge[0].length = 64;
		u->sge[0].lkey = self->mr->lkey;
		switch (kind) {
		case 0:
			h->prod = 0x80000000u;		/* far past cons */
			break;
		case 1:
			h->prod = 0xffffffffu;		/* behind cons */
			break;
		case 2:
			u->num_sge = 1000;		/* past max_sge */
			h->prod = 1;
			break;
		case 3:
			u->num_sge = 2;			/* lengths overflow */
			u->sge[0].length = 0xffffffffu;
			u->sge[1].length = 0xffffffffu;
			h->prod = 1;
			break;
		}
		ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 1, 0, 8, 0));
		expect_srq_err(_metadata, self, self->rcv[0], 1);
		EXPECT_EQ(0, ibv_poll_cq(self->rcq, 1, &wc)) TH_LOG("kind %d", kind);
		EXPECT_EQ(0, h->cons) TH_LOG("kind %d", kind);
		/* The other QP finds the SRQ in error: no second SRQ_ERR. */
		ASSERT_EQ(0, post_op(self, self->snd[1], IBV_WR_SEND, 2, 0, 8, 0));
		expect_srq_err(_metadata, self, self->rcv[1], 0);
		EXPECT_EQ(0, ibv_poll_cq(self->rcq, 1, &wc)) TH_LOG("kind %d", kind);
	}
}

/*
 * A good entry with a bad lkey is the receiving QP's error, found when
 * data is placed: LOC_PROT_ERR on that receive, the QP to ERR, the SRQ
 * unharmed (no SRQ_ERR) for the other QP.
 */
TEST_F(srq, ring_bad_lkey)
{
	struct srdma_urecv_wqe *u;
	struct srdma_ring_hdr *h;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	size_t len;
	int i, srq_err = 0;

	ASSERT_EQ(0, make_pairs(self, self->srq, 2, 7));
	h = srq_ring(self, self->srq, &len);
	ASSERT_NE(NULL, h);
	u = (struct srdma_urecv_wqe *)((char *)h + SRDMA_RING_HDR_SIZE);
	memset(u, 0, SRQ_SLOT);
	u->wr_id = 60;
	u->num_sge = 1;
	u->sge[0].addr = (uintptr_t)(self->buf + RECV_OFF);
	u->sge[0].length = 64;
	u->sge[0].lkey = self->mr->lkey ^ 0x777700;
	h->prod = 1;
	ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 1, 0, 8, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(60, wc.wr_id);
	EXPECT_EQ(self->rcv[0]->qp_num, wc.qp_num);
	EXPECT_EQ(1, h->cons);
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->rcv[0]));
	for (i = 0; i < 3 && !srdma_test_next_event(self->ctx, 500, &ev); i++)
		srq_err += ev.event_type == IBV_EVENT_SRQ_ERR;
	EXPECT_EQ(0, srq_err);
	/* The SRQ goes on serving the other QP. */
	ASSERT_EQ(0, post_srq(self, self->srq, 61, 1, SLOT));
	ASSERT_EQ(0, post_op(self, self->snd[1], IBV_WR_SEND, 2, 0, 8, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(61, wc.wr_id);
	EXPECT_EQ(self->rcv[1]->qp_num, wc.qp_num);
}

/*
 * Random bytes over the SRQ ring while messages arrive: whatever happens,
 * the kernel survives, and a new SRQ moves data afterwards.
 */
TEST_F(srq, ring_random_scribble)
{
	struct srdma_ring_hdr *h;
	unsigned int seed = 4321;
	struct ibv_wc wc[16];
	size_t len, i;
	int r;

	ASSERT_EQ(0, make_pairs(self, self->srq, 2, 7));
	h = srq_ring(self, self->srq, &len);
	ASSERT_NE(NULL, h);
	for (r = 0; r < 20; r++) {
		for (i = 0; i < len; i++)
			((char *)h)[i] = (char)rand_r(&seed);
		post_op(self, self->snd[r % 2], IBV_WR_SEND, r, 0, 8, 0);
		ibv_poll_cq(self->rcq, 16, wc);
		ibv_poll_cq(self->scq, 16, wc);
		usleep(5000);
	}
	for (r = 0; r < self->npair; r++) {
		ibv_destroy_qp(self->snd[r]);
		ibv_destroy_qp(self->rcv[r]);
	}
	self->npair = 0;
	ASSERT_EQ(0, ibv_destroy_srq(self->srq));
	while (ibv_poll_cq(self->rcq, 16, wc) > 0 ||
	       ibv_poll_cq(self->scq, 16, wc) > 0)
		;

	self->srq = make_srq(self->pd, SRQ_WR);
	ASSERT_NE(NULL, self->srq);
	ASSERT_EQ(0, make_pairs(self, self->srq, 1, 7));
	ASSERT_EQ(0, post_srq(self, self->srq, 7, 5, SLOT));
	fill(self, 1, 1000, 44);
	ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 8, 1, 1000, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(7, wc[0].wr_id);
	EXPECT_TRUE(holds(self, 5, 1000, 44));
}

/* The process unmaps the SRQ ring: the kernel reads its own mapping. */
TEST_F(srq, ring_unmapped)
{
	struct srdma_ring_hdr *h;
	struct ibv_wc wc;
	size_t len;

	ASSERT_EQ(0, make_pairs(self, self->srq, 1, 7));
	ASSERT_EQ(0, post_srq(self, self->srq, 3, 0, SLOT));
	h = srq_ring(self, self->srq, &len);
	ASSERT_NE(NULL, h);
	ASSERT_EQ(0, munmap(h, len));
	ASSERT_EQ(0, post_op(self, self->snd[0], IBV_WR_SEND, 1, 0, 8, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(3, wc.wr_id);
	/* Destroying must not touch the unmapped ring from user space. */
	ibv_destroy_qp(self->snd[0]);
	ibv_destroy_qp(self->rcv[0]);
	self->npair = 0;
	/* The provider munmaps again: harmless (EINVAL is ignored). */
	EXPECT_EQ(0, ibv_destroy_srq(self->srq));
	self->srq = NULL;
}

TEST_HARNESS_MAIN
