// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The extended verbs of the srdma provider on srdma0 in loopback (its own
 * IPv4 RoCEv2 GID): ibv_create_cq_ex() and its polling API (start_poll,
 * next_poll, end_poll and the read_* accessors, every field of every
 * completion of RC SEND, SEND with immediate, WRITE with immediate and
 * READ and of a UD SEND), what it refuses; ibv_create_qp_ex() with and
 * without create flags, and the ibv_qp_ex posting API (wr_start, wr_send,
 * wr_rdma_*, wr_set_*, wr_complete, wr_abort), good and bad batches.
 * Run in the test VM with the device bound to a veth (selftests/run.sh).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rdma/srdma-abi.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define GRH		40
#define UD_QKEY		0x11111111U
#define RECV_OFF	32768		/* receive buffers from here */
#define WRITE_OFF	49152		/* RDMA WRITE targets from here */
#define IMM1		0x12345678U
#define IMM2		0x9abcdef0U

/*
 * ibv_create_qp_ex() of @type with IBV_QP_INIT_ATTR_CREATE_FLAGS 0 and
 * @ops as send_ops_flags (none if 0), both queues on @cq.
 */
static struct ibv_qp *cqex_qp(struct ibv_context *ctx, struct ibv_pd *pd,
			      struct ibv_cq *cq, enum ibv_qp_type type,
			      uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = type,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_CREATE_FLAGS,
		.pd = pd,
		.create_flags = 0,
	};

	if (ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = ops;
	}
	return ibv_create_qp_ex(ctx, &a);
}

/* The completion with @wr_id in @wc[0..n), or NULL. */
static const struct srdma_test_wc *cqex_find(const struct srdma_test_wc *wc,
					     int n, uint64_t wr_id)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].wr_id == wr_id)
			return &wc[i];
	return NULL;
}

/* Every field of a completion, as srdma must report it. */
static void cqex_check(struct __test_metadata *_metadata,
		       const struct srdma_test_wc *wc,
		       enum ibv_wc_opcode opcode, uint32_t byte_len,
		       unsigned int flags, uint32_t imm, uint32_t qp_num,
		       uint32_t src_qp)
{
	ASSERT_NE(NULL, wc);
	EXPECT_EQ(IBV_WC_SUCCESS, wc->status);
	EXPECT_EQ(opcode, wc->opcode);
	EXPECT_EQ(0, wc->vendor_err);
	EXPECT_EQ(byte_len, wc->byte_len);
	EXPECT_EQ(flags, wc->wc_flags);
	if (flags & IBV_WC_WITH_IMM)
		EXPECT_EQ(htonl(imm), wc->imm_data);
	EXPECT_EQ(qp_num, wc->qp_num);
	EXPECT_EQ(src_qp, wc->src_qp);
	EXPECT_EQ(0, wc->slid);
	/* A UD receive (the only one with a GRH; over IPv4 here) has the
	 * L3 header type in sl.
	 */
	EXPECT_EQ(flags & IBV_WC_GRH ? SRDMA_UWC_SL_IPV4 : 0, wc->sl);
	EXPECT_EQ(0, wc->dlid_path_bits);
}

FIXTURE(cqex) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;		/* the same CQ */
	struct ibv_mr *mr;
	struct ibv_qp *qp;		/* RC, send ops, connected to itself */
	struct ibv_qp_ex *qpx;
	union ibv_gid gid;
	int gidx;
	char *buf;
};

FIXTURE_SETUP(cqex)
{
	self->qp = NULL;
	self->cqx = NULL;
	self->mr = NULL;
	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s: %s",
					  srdma_test_devname(),
					  strerror(errno));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->buf = calloc(1, SRDMA_TEST_BUF_SIZE);
	ASSERT_NE(NULL, self->buf);
	self->mr = ibv_reg_mr(self->pd, self->buf, SRDMA_TEST_BUF_SIZE,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, self->mr);
	self->cqx = srdma_test_cq_ex(self->ctx, SRDMA_TEST_CQE);
	ASSERT_NE(NULL, self->cqx) TH_LOG("create_cq_ex: %s",
					  strerror(errno));
	self->cq = ibv_cq_ex_to_cq(self->cqx);
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
	self->qp = cqex_qp(self->ctx, self->pd, self->cq, IBV_QPT_RC,
			   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			   IBV_QP_EX_WITH_RDMA_WRITE |
			   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			   IBV_QP_EX_WITH_RDMA_READ);
	ASSERT_NE(NULL, self->qp) TH_LOG("create_qp_ex: %s",
					 strerror(errno));
	self->qpx = ibv_qp_to_qp_ex(self->qp);
	ASSERT_NE(NULL, self->qpx);
	ASSERT_EQ(0, srdma_test_connect_self(self->qp, self->gidx,
					     &self->gid));
}

FIXTURE_TEARDOWN(cqex)
{
	if (self->qp)
		ibv_destroy_qp(self->qp);
	if (self->cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(self->cqx));
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->buf);
}

/*
 * An empty CQ: start_poll says ENOENT and keeps no lock (a second call
 * does not hang); a comp_mask in the poll attributes is EINVAL.
 */
TEST_F(cqex, empty_is_enoent)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	struct ibv_wc wc;

	EXPECT_EQ(ENOENT, ibv_start_poll(self->cqx, &attr));
	/* an end_poll the caller should not make (pyverbs does) is ignored */
	ibv_end_poll(self->cqx);
	EXPECT_EQ(ENOENT, ibv_start_poll(self->cqx, &attr));
	attr.comp_mask = 1;
	EXPECT_EQ(EINVAL, ibv_start_poll(self->cqx, &attr));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	attr.comp_mask = 0;
	EXPECT_EQ(ENOENT, ibv_start_poll(self->cqx, &attr));
}

/*
 * RC SEND, SEND with immediate, WRITE with immediate and READ posted with
 * ibv_post_send(), every field of the eight completions read through the
 * ibv_cq_ex API in one start_poll ... end_poll, then the CQ is empty.
 */
TEST_F(cqex, rc_fields)
{
	uint32_t qpn = self->qp->qp_num;
	char *rb = self->buf + RECV_OFF;
	struct srdma_test_wc wc[7];
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int i;

	for (i = 0; i < 4096; i++)
		self->buf[i] = (char)(i * 7 + 3);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr,
						  rb + i * 1024, 1024,
						  101 + i));
	ASSERT_EQ(0, srdma_test_post(self->qp, self->mr, IBV_WR_SEND, 1,
				     self->buf, 100, NULL, 0));
	ASSERT_EQ(0, srdma_test_post(self->qp, self->mr, IBV_WR_SEND_WITH_IMM,
				     2, self->buf + 100, 200, NULL, IMM1));
	ASSERT_EQ(0, srdma_test_post(self->qp, self->mr,
				     IBV_WR_RDMA_WRITE_WITH_IMM, 3,
				     self->buf + 300, 300,
				     self->buf + WRITE_OFF, IMM2));
	ASSERT_EQ(0, srdma_test_post(self->qp, self->mr, IBV_WR_RDMA_READ, 4,
				     self->buf + WRITE_OFF + 4096, 300,
				     self->buf + WRITE_OFF, 0));
	ASSERT_EQ(7, srdma_test_poll_ex(self->cqx, wc, 7, 2000));
	/* The sender's side: byte_len only for a READ. */
	cqex_check(_metadata, cqex_find(wc, 7, 1), IBV_WC_SEND, 0, 0, 0,
		   qpn, 0);
	cqex_check(_metadata, cqex_find(wc, 7, 2), IBV_WC_SEND, 0, 0, 0,
		   qpn, 0);
	cqex_check(_metadata, cqex_find(wc, 7, 3), IBV_WC_RDMA_WRITE, 0, 0, 0,
		   qpn, 0);
	cqex_check(_metadata, cqex_find(wc, 7, 4), IBV_WC_RDMA_READ, 300, 0,
		   0, qpn, 0);
	/* The receiver's: an RC QP's source QP is its peer, itself here. */
	cqex_check(_metadata, cqex_find(wc, 7, 101), IBV_WC_RECV, 100, 0, 0,
		   qpn, qpn);
	cqex_check(_metadata, cqex_find(wc, 7, 102), IBV_WC_RECV, 200,
		   IBV_WC_WITH_IMM, IMM1, qpn, qpn);
	cqex_check(_metadata, cqex_find(wc, 7, 103), IBV_WC_RECV_RDMA_WITH_IMM,
		   300, IBV_WC_WITH_IMM, IMM2, qpn, qpn);
	/* The WRITE with immediate took the receive, not its buffer. */
	EXPECT_EQ(0, memcmp(rb, self->buf, 100));
	EXPECT_EQ(0, memcmp(rb + 1024, self->buf + 100, 200));
	EXPECT_EQ(0, rb[2048]);
	EXPECT_EQ(0, memcmp(self->buf + WRITE_OFF, self->buf + 300, 300));
	EXPECT_EQ(0, memcmp(self->buf + WRITE_OFF + 4096, self->buf + 300,
			    300));
	EXPECT_EQ(ENOENT, ibv_start_poll(self->cqx, &attr));
}

/*
 * The two poll APIs on one CQ take turns and see each completion once,
 * in order; end_poll returns the slots: a CQ of 8 slots carries 60
 * completions polled through start_poll/next_poll/end_poll without
 * overflowing (each round fills 6 of them).
 */
TEST_F(cqex, slots_returned_and_shared_with_poll_cq)
{
	struct ibv_cq_ex *small;
	struct ibv_qp *qp;
	struct ibv_wc w;
	struct srdma_test_wc wc[8];
	uint64_t next = 1;
	int round, i, n;

	small = srdma_test_cq_ex(self->ctx, 4);
	ASSERT_NE(NULL, small);
	EXPECT_EQ(7, ibv_cq_ex_to_cq(small)->cqe);
	qp = cqex_qp(self->ctx, self->pd, ibv_cq_ex_to_cq(small), IBV_QPT_RC,
		     0);
	ASSERT_NE(NULL, qp);
	EXPECT_EQ(NULL, ibv_qp_to_qp_ex(qp));	/* no send ops asked for */
	ASSERT_EQ(0, srdma_test_connect_self(qp, self->gidx, &self->gid));
	for (round = 0; round < 10; round++) {
		for (i = 0; i < 6; i++)
			ASSERT_EQ(0, srdma_test_post(qp, self->mr,
						     IBV_WR_RDMA_WRITE,
						     next + i, self->buf, 64,
						     self->buf + WRITE_OFF, 0));
		if (round & 1) {
			/* the first with ibv_poll_cq, the rest with cq_ex */
			ASSERT_EQ(1, srdma_test_wait_wc(ibv_cq_ex_to_cq(small),
							&w));
			EXPECT_EQ(next, w.wr_id);
			EXPECT_EQ(IBV_WC_SUCCESS, w.status);
			next++;
			n = 5;
		} else {
			n = 6;
		}
		ASSERT_EQ(n, srdma_test_poll_ex(small, wc, n, 2000));
		for (i = 0; i < n; i++) {
			EXPECT_EQ(next + i, wc[i].wr_id);
			cqex_check(_metadata, &wc[i], IBV_WC_RDMA_WRITE, 0, 0,
				   0, qp->qp_num, 0);
		}
		next += n;
		EXPECT_EQ(0, ibv_poll_cq(ibv_cq_ex_to_cq(small), 1, &w));
	}
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));
	ibv_destroy_qp(qp);
	ibv_destroy_cq(ibv_cq_ex_to_cq(small));
}

/* A UD SEND: both completions, every field, through the ibv_cq_ex API. */
TEST_F(cqex, ud_fields)
{
	struct ibv_qp *a, *b;
	struct ibv_ah *ah, *ah2;
	struct ibv_pd *pd2;
	struct ibv_qp_ex *ax;
	char *rb = self->buf + RECV_OFF;
	struct srdma_test_wc wc[4];
	int i;

	a = cqex_qp(self->ctx, self->pd, self->cq, IBV_QPT_UD,
		    IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	ASSERT_NE(NULL, a) TH_LOG("UD create_qp_ex: %s", strerror(errno));
	b = cqex_qp(self->ctx, self->pd, self->cq, IBV_QPT_UD, 0);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, srdma_test_ud_up(a, UD_QKEY));
	ASSERT_EQ(0, srdma_test_ud_up(b, UD_QKEY));
	ah = srdma_test_ah(self->pd, self->gidx, &self->gid);
	ASSERT_NE(NULL, ah);
	for (i = 0; i < 1024; i++)
		self->buf[i] = (char)(i * 11 + 1);
	memset(rb, 0xee, 4096);
	ASSERT_EQ(0, srdma_test_post_recv(b, self->mr, rb, 2048, 21));
	ASSERT_EQ(0, srdma_test_post_recv(b, self->mr, rb + 2048, 2048, 22));

	/* one SEND through ibv_post_send() ... */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)self->buf,
				       .length = 100, .lkey = self->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 11, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = b->qp_num;
		wr.wr.ud.remote_qkey = UD_QKEY;
		ASSERT_EQ(0, ibv_post_send(a, &wr, &bad));
	}
	ASSERT_EQ(2, srdma_test_poll_ex(self->cqx, wc, 2, 2000));
	cqex_check(_metadata, cqex_find(wc, 2, 11), IBV_WC_SEND, 0, 0, 0,
		   a->qp_num, 0);
	cqex_check(_metadata, cqex_find(wc, 2, 21), IBV_WC_RECV, 100 + GRH,
		   IBV_WC_GRH, 0, b->qp_num, a->qp_num);
	EXPECT_EQ(0, memcmp(rb + GRH, self->buf, 100));

	/* ... and one SEND with immediate through the ibv_qp_ex API */
	ax = ibv_qp_to_qp_ex(a);
	ASSERT_NE(NULL, ax);
	ibv_wr_start(ax);
	ax->wr_id = 12;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(ax, htonl(IMM1));
	ibv_wr_set_sge(ax, self->mr->lkey, (uintptr_t)self->buf + 100, 1000);
	ibv_wr_set_ud_addr(ax, ah, b->qp_num, UD_QKEY);
	ASSERT_EQ(0, ibv_wr_complete(ax));
	ASSERT_EQ(2, srdma_test_poll_ex(self->cqx, wc, 2, 2000));
	cqex_check(_metadata, cqex_find(wc, 2, 12), IBV_WC_SEND, 0, 0, 0,
		   a->qp_num, 0);
	cqex_check(_metadata, cqex_find(wc, 2, 22), IBV_WC_RECV, 1000 + GRH,
		   IBV_WC_GRH | IBV_WC_WITH_IMM, IMM1, b->qp_num, a->qp_num);
	EXPECT_EQ(0, memcmp(rb + 2048 + GRH, self->buf + 100, 1000));

	/* A UD send without its address is refused, nothing is posted. */
	ibv_wr_start(ax);
	ax->wr_id = 13;
	ibv_wr_send(ax);
	ibv_wr_set_sge(ax, self->mr->lkey, (uintptr_t)self->buf, 10);
	EXPECT_EQ(EINVAL, ibv_wr_complete(ax));
	/* nor one to a QPN over 24 bits or through an AH of another PD */
	ibv_wr_start(ax);
	ibv_wr_send(ax);
	ibv_wr_set_ud_addr(ax, ah, 1U << 24, UD_QKEY);
	EXPECT_EQ(EINVAL, ibv_wr_complete(ax));
	pd2 = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, pd2);
	ah2 = srdma_test_ah(pd2, self->gidx, &self->gid);
	ASSERT_NE(NULL, ah2);
	ibv_wr_start(ax);
	ibv_wr_send(ax);
	ibv_wr_set_ud_addr(ax, ah2, b->qp_num, UD_QKEY);
	EXPECT_EQ(EINVAL, ibv_wr_complete(ax));
	ibv_destroy_ah(ah2);
	ibv_dealloc_pd(pd2);
	usleep(100000);
	EXPECT_EQ(0, srdma_test_poll_ex(self->cqx, wc, 1, 1));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(a));

	ibv_destroy_ah(ah);
	ibv_destroy_qp(b);
	ibv_destroy_qp(a);
}

/*
 * What create_cq_ex refuses: completion fields srdma does not report
 * (CVLAN, flow tag, tag matching) and unknown ones with
 * EOPNOTSUPP, the IGNORE_OVERRUN flag likewise, a plain PD as the parent
 * domain and a size over max_cqe with EINVAL; SINGLE_THREADED is taken
 * (a real parent domain: the parent_domain case). Only the
 * accessors of the fields asked for are set.
 */
TEST_F(cqex, create_cq_ex_refuses)
{
	static const uint64_t bad_wc[] = {
		IBV_WC_EX_WITH_CVLAN,
		IBV_WC_EX_WITH_FLOW_TAG,
		IBV_WC_EX_WITH_TM_INFO,
		1ULL << 40,
	};
	struct ibv_device_attr da;
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *cq;
	size_t i;

	for (i = 0; i < sizeof(bad_wc) / sizeof(bad_wc[0]); i++) {
		memset(&a, 0, sizeof(a));
		a.cqe = 8;
		a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | bad_wc[i];
		errno = 0;
		EXPECT_EQ(NULL, ibv_create_cq_ex(self->ctx, &a));
		EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("wc_flags %#llx",
						    (unsigned long long)bad_wc[i]);
	}
	memset(&a, 0, sizeof(a));
	a.cqe = 8;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = self->pd;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq_ex(self->ctx, &a));
	EXPECT_EQ(EINVAL, errno);
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.parent_domain = NULL;
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
	cq = ibv_create_cq_ex(self->ctx, &a);
	ASSERT_NE(NULL, cq) TH_LOG("SINGLE_THREADED: %s", strerror(errno));
	EXPECT_NE(NULL, cq->read_byte_len);
	EXPECT_NE(NULL, cq->read_opcode);
	EXPECT_NE(NULL, cq->read_wc_flags);
	EXPECT_EQ(NULL, cq->read_qp_num);
	EXPECT_EQ(NULL, cq->read_imm_data);
	EXPECT_EQ(NULL, cq->read_completion_ts);
	EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));

	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	memset(&a, 0, sizeof(a));
	a.cqe = da.max_cqe + 1;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq_ex(self->ctx, &a));
	EXPECT_EQ(EINVAL, errno);
}

/* CLOCK_MONOTONIC or CLOCK_REALTIME now, in ns. */
static uint64_t clock_ns(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/*
 * Two completions of one start_poll batch on @cq into @wc, with their
 * times in @ts and @wall; how many came (the batch ended early if fewer).
 */
static int poll_two_ts(struct ibv_cq_ex *cq, struct srdma_test_wc *wc,
		       uint64_t *ts, uint64_t *wall)
{
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	int n = 0;

	if (ibv_start_poll(cq, &pa))
		return 0;
	do {
		srdma_test_read_ex(cq, &wc[n]);
		ts[n] = ibv_wc_read_completion_ts(cq);
		wall[n] = ibv_wc_read_completion_wallclock_ns(cq);
		n++;
	} while (n < 2 && !ibv_next_poll(cq));
	if (n == 2 && ibv_next_poll(cq) != ENOENT)
		n++;			/* one too many */
	ibv_end_poll(cq);
	return n;
}

/*
 * Completion timestamps: the device's clock is CLOCK_MONOTONIC in ns
 * (hca_core_clock 1 GHz, a 64-bit mask; ibv_query_rt_values_ex() reads
 * it), and the wall clock CLOCK_REALTIME. Every completion of a SEND and
 * of its receive carries both, taken between the post and the poll, and
 * 64 bytes of other fields, all checked. Completions not yet polled keep
 * their times through a resize (the slots of such a CQ are larger), and
 * when another QP's completions are taken out by its RESET.
 * Each clock alone may be asked for; a CQ without them has no accessor.
 */
TEST_F(cqex, timestamps)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = 8,
		.wc_flags = IBV_WC_STANDARD_FLAGS |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	uint64_t t0, w0, t1, w1, ts[2], wall[2];
	struct srdma_test_wc wc[2];
	struct ibv_device_attr_ex dx;
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	int round, n, i;
	struct ibv_cq_ex *cq;
	struct ibv_qp *qp, *qp2;

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &dx));
	EXPECT_EQ(1000000, dx.hca_core_clock);
	EXPECT_EQ(UINT64_MAX, dx.completion_timestamp_mask);
	t0 = clock_ns(CLOCK_MONOTONIC);
	ASSERT_EQ(0, ibv_query_rt_values_ex(self->ctx, &v));
	EXPECT_EQ(IBV_VALUES_MASK_RAW_CLOCK, v.comp_mask);
	EXPECT_EQ(0, v.raw_clock.tv_sec);
	EXPECT_LE(t0, (uint64_t)v.raw_clock.tv_nsec);
	EXPECT_GE(clock_ns(CLOCK_MONOTONIC), (uint64_t)v.raw_clock.tv_nsec);
	v.comp_mask = 1U << 20;		/* unknown: nothing filled in */
	ASSERT_EQ(0, ibv_query_rt_values_ex(self->ctx, &v));
	EXPECT_EQ(0, v.comp_mask);

	cq = ibv_create_cq_ex(self->ctx, &a);
	ASSERT_NE(NULL, cq) TH_LOG("create_cq_ex: %s", strerror(errno));
	ASSERT_NE(NULL, cq->read_completion_ts);
	ASSERT_NE(NULL, cq->read_completion_wallclock_ns);
	qp = cqex_qp(self->ctx, self->pd, ibv_cq_ex_to_cq(cq), IBV_QPT_RC, 0);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, srdma_test_connect_self(qp, self->gidx, &self->gid));
	for (round = 0; round < 2; round++) {
		t0 = clock_ns(CLOCK_MONOTONIC);
		w0 = clock_ns(CLOCK_REALTIME);
		ASSERT_EQ(0, srdma_test_post_recv(qp, self->mr,
						  self->buf + RECV_OFF, 1024,
						  10 + round));
		ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_SEND,
					     20 + round, self->buf, 64 + round,
					     NULL, 0));
		usleep(200000);		/* both complete, unpolled */
		if (round == 1)		/* the times move with the slots */
			ASSERT_EQ(0, ibv_resize_cq(ibv_cq_ex_to_cq(cq), 64));
		n = poll_two_ts(cq, wc, ts, wall);
		t1 = clock_ns(CLOCK_MONOTONIC);
		w1 = clock_ns(CLOCK_REALTIME);
		ASSERT_EQ(2, n);
		for (i = 0; i < 2; i++) {
			const struct srdma_test_wc *w = &wc[i];

			if (w->wr_id == 20u + round) {
				cqex_check(_metadata, w, IBV_WC_SEND, 0, 0, 0,
					   qp->qp_num, 0);
			} else {
				EXPECT_EQ(10u + round, w->wr_id);
				cqex_check(_metadata, w, IBV_WC_RECV,
					   64 + round, 0, 0, qp->qp_num,
					   qp->qp_num);
			}
			EXPECT_LE(t0, ts[i]);
			EXPECT_GE(t1, ts[i]);
			EXPECT_LE(w0, wall[i]);
			EXPECT_GE(w1, wall[i]);
			/* Taken together: the clocks' offset, within 0.1 s. */
			EXPECT_GT(100000000LL,
				  llabs((long long)(wall[i] - ts[i]) -
					(long long)(w0 - t0)));
		}
		EXPECT_NE(wc[0].wr_id, wc[1].wr_id);
	}

	/*
	 * A QP moved to RESET takes its completions out of the CQ, and the
	 * older ones kept move over them with their own times.
	 */
	qp2 = cqex_qp(self->ctx, self->pd, ibv_cq_ex_to_cq(cq), IBV_QPT_RC, 0);
	ASSERT_NE(NULL, qp2);
	ASSERT_EQ(0, srdma_test_connect_self(qp2, self->gidx, &self->gid));
	t0 = clock_ns(CLOCK_MONOTONIC);
	ASSERT_EQ(0, srdma_test_post_recv(qp, self->mr, self->buf + RECV_OFF,
					  1024, 30));
	ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_SEND, 31, self->buf,
				     8, NULL, 0));
	usleep(200000);
	t1 = clock_ns(CLOCK_MONOTONIC);
	ASSERT_EQ(0, srdma_test_post_recv(qp2, self->mr,
					  self->buf + RECV_OFF + 1024, 1024,
					  40));
	ASSERT_EQ(0, srdma_test_post(qp2, self->mr, IBV_WR_SEND, 41,
				     self->buf, 8, NULL, 0));
	usleep(200000);
	ASSERT_EQ(0, ibv_modify_qp(qp2, &reset, IBV_QP_STATE));
	ASSERT_EQ(2, poll_two_ts(cq, wc, ts, wall));
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(qp->qp_num, wc[i].qp_num);
		EXPECT_TRUE(wc[i].wr_id == 30 || wc[i].wr_id == 31)
			TH_LOG("wr_id %llu", (unsigned long long)wc[i].wr_id);
		EXPECT_LE(t0, ts[i]);
		EXPECT_GE(t1, ts[i]);
	}
	EXPECT_EQ(0, ibv_destroy_qp(qp2));
	EXPECT_EQ(ENOENT, ibv_start_poll(cq, &pa));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));

	/* Each clock alone. */
	a.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	cq = ibv_create_cq_ex(self->ctx, &a);
	ASSERT_NE(NULL, cq) TH_LOG("wallclock alone: %s", strerror(errno));
	EXPECT_EQ(NULL, cq->read_completion_ts);
	EXPECT_NE(NULL, cq->read_completion_wallclock_ns);
	EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
	a.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	cq = ibv_create_cq_ex(self->ctx, &a);
	ASSERT_NE(NULL, cq) TH_LOG("timestamp alone: %s", strerror(errno));
	EXPECT_NE(NULL, cq->read_completion_ts);
	EXPECT_EQ(NULL, cq->read_completion_wallclock_ns);
	EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
}

/*
 * create_qp_ex: IBV_QP_INIT_ATTR_CREATE_FLAGS with no flag makes a QP
 * (the caps written back); a flag, XRC, RSS, a TSO header, send ops the
 * QP type cannot do (ATOMIC WRITE, MW binding; RDMA and atomics on UD)
 * are EOPNOTSUPP; no PD is EINVAL.
 */
TEST_F(cqex, create_qp_ex_flags)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.send_cq = self->cq;
	a.recv_cq = self->cq;
	a.cap.max_send_wr = 10;
	a.cap.max_recv_wr = 10;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.pd = self->pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = ibv_create_qp_ex(self->ctx, &a);
	ASSERT_NE(NULL, qp) TH_LOG("create_flags 0: %s", strerror(errno));
	EXPECT_LE(10, a.cap.max_send_wr);
	EXPECT_LE(10, a.cap.max_recv_wr);
	EXPECT_EQ(IBV_QPS_RESET, srdma_test_qp_state(qp));
	EXPECT_EQ(self->pd, qp->pd);
	EXPECT_EQ(self->cq, qp->send_cq);
	EXPECT_EQ(IBV_QPT_RC, qp->qp_type);
	EXPECT_EQ(NULL, ibv_qp_to_qp_ex(qp));
	/* A QP in RESET takes no receive and no send. */
	EXPECT_EQ(EINVAL, srdma_test_post_recv(qp, self->mr, self->buf, 64, 1));
	EXPECT_EQ(EINVAL, srdma_test_post(qp, self->mr, IBV_WR_SEND, 1,
					  self->buf, 64, NULL, 0));
	EXPECT_EQ(0, ibv_destroy_qp(qp));

	a.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.create_flags = 0;

	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
	a.max_tso_header = 64;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.max_tso_header = 0;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_RX_HASH;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);

	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	/* Windows are bound through RC QPs only (srdma_mw_test). */
	a.qp_type = IBV_QPT_UC;
	a.send_ops_flags = IBV_QP_EX_WITH_BIND_MW;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.qp_type = IBV_QPT_UD;
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND |
			   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qp = ibv_create_qp_ex(self->ctx, &a);
	ASSERT_NE(NULL, qp) TH_LOG("UD with SEND: %s", strerror(errno));
	EXPECT_NE(NULL, ibv_qp_to_qp_ex(qp));
	EXPECT_EQ(NULL, ibv_qp_to_qp_ex(qp)->wr_rdma_write);
	EXPECT_EQ(NULL, ibv_qp_to_qp_ex(qp)->wr_send_imm);
	EXPECT_NE(NULL, ibv_qp_to_qp_ex(qp)->wr_send);
	EXPECT_EQ(0, ibv_destroy_qp(qp));

	a.qp_type = IBV_QPT_RC;
	a.comp_mask = IBV_QP_INIT_ATTR_CREATE_FLAGS;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->ctx, &a));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * The ibv_qp_ex posting API on RC: SEND, SEND with immediate, WRITE,
 * WRITE with immediate and READ in one batch, one doorbell; every
 * completion and the bytes moved.
 */
TEST_F(cqex, wr_api_rc)
{
	uint32_t qpn = self->qp->qp_num;
	struct ibv_qp_ex *x = self->qpx;
	char *rb = self->buf + RECV_OFF;
	char *wb = self->buf + WRITE_OFF;
	struct ibv_sge two[2];
	struct srdma_test_wc wc[8];
	int i;

	for (i = 0; i < 8192; i++)
		self->buf[i] = (char)(i * 13 + 5);
	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, rb, 2048, 201));
	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, rb + 2048, 2048,
					  202));
	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, rb + 4096, 2048,
					  203));

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 1;
	ibv_wr_send(x);
	/* two SGEs: 100 bytes from 0 and 50 from 1000 */
	two[0].addr = (uintptr_t)self->buf;
	two[0].length = 100;
	two[0].lkey = self->mr->lkey;
	two[1].addr = (uintptr_t)self->buf + 1000;
	two[1].length = 50;
	two[1].lkey = self->mr->lkey;
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 2;
	ibv_wr_send_imm(x, htonl(IMM1));
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf + 200, 300);
	x->wr_id = 3;
	ibv_wr_rdma_write(x, self->mr->rkey, (uintptr_t)wb);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf + 500, 1500);
	x->wr_id = 4;
	ibv_wr_rdma_write_imm(x, self->mr->rkey, (uintptr_t)wb + 2048,
			      htonl(IMM2));
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf + 2000, 700);
	x->wr_id = 5;
	ibv_wr_rdma_read(x, self->mr->rkey, (uintptr_t)self->buf + 4000);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)wb + 4096, 900);
	ASSERT_EQ(0, ibv_wr_complete(x));

	ASSERT_EQ(8, srdma_test_poll_ex(self->cqx, wc, 8, 3000));
	cqex_check(_metadata, cqex_find(wc, 8, 1), IBV_WC_SEND, 0, 0, 0,
		   qpn, 0);
	cqex_check(_metadata, cqex_find(wc, 8, 2), IBV_WC_SEND, 0, 0, 0,
		   qpn, 0);
	cqex_check(_metadata, cqex_find(wc, 8, 3), IBV_WC_RDMA_WRITE, 0, 0, 0,
		   qpn, 0);
	cqex_check(_metadata, cqex_find(wc, 8, 4), IBV_WC_RDMA_WRITE, 0, 0, 0,
		   qpn, 0);
	cqex_check(_metadata, cqex_find(wc, 8, 5), IBV_WC_RDMA_READ, 900, 0,
		   0, qpn, 0);
	cqex_check(_metadata, cqex_find(wc, 8, 201), IBV_WC_RECV, 150, 0, 0,
		   qpn, qpn);
	cqex_check(_metadata, cqex_find(wc, 8, 202), IBV_WC_RECV, 300,
		   IBV_WC_WITH_IMM, IMM1, qpn, qpn);
	cqex_check(_metadata, cqex_find(wc, 8, 203), IBV_WC_RECV_RDMA_WITH_IMM,
		   700, IBV_WC_WITH_IMM, IMM2, qpn, qpn);
	EXPECT_EQ(0, memcmp(rb, self->buf, 100));
	EXPECT_EQ(0, memcmp(rb + 100, self->buf + 1000, 50));
	EXPECT_EQ(0, memcmp(rb + 2048, self->buf + 200, 300));
	EXPECT_EQ(0, memcmp(wb, self->buf + 500, 1500));
	EXPECT_EQ(0, memcmp(wb + 2048, self->buf + 2000, 700));
	EXPECT_EQ(0, memcmp(wb + 4096, self->buf + 4000, 900));
}

/*
 * Bad batches post nothing and leave the QP in RTS: too much inline data,
 * inline data on a READ, a send flag srdma lacks, too many SGEs, a setter
 * before any operation, a UD address on an RC QP, a full SQ (ENOMEM);
 * wr_abort drops a good batch. A good batch afterwards completes with its
 * own wr_id only.
 */
TEST_F(cqex, wr_api_bad_batches)
{
	struct ibv_qp_ex *x = self->qpx;
	struct ibv_sge three[3];
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct srdma_test_wc wc[64];
	uint32_t i, max_wr;

	/* inline data over max_inline_data (2 SGEs: 32 bytes) */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 1;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, self->buf, 33);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));

	/* inline data on a READ */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	x->wr_id = 2;
	ibv_wr_rdma_read(x, self->mr->rkey, (uintptr_t)self->buf + WRITE_OFF);
	ibv_wr_set_inline_data(x, self->buf, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));

	/* a send flag srdma lacks */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM;
	x->wr_id = 2;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 3;
	ibv_wr_send(x);
	for (i = 0; i < 3; i++) {
		three[i].addr = (uintptr_t)self->buf;
		three[i].length = 8;
		three[i].lkey = self->mr->lkey;
	}
	ibv_wr_set_sge_list(x, 3, three);	/* the QP has 2 */
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));

	ibv_wr_start(x);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));

	ibv_wr_start(x);
	x->wr_id = 4;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, NULL, 1, UD_QKEY);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));

	/* one more than the SQ holds, in one batch: ENOMEM, none posted */
	ASSERT_EQ(0, ibv_query_qp(self->qp, &qa, IBV_QP_CAP, &qi));
	max_wr = qa.cap.max_send_wr;
	ASSERT_LT(0, max_wr);
	ASSERT_GE(64, max_wr);		/* asked for 16; the CQ holds 64 */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	for (i = 0; i <= max_wr; i++) {
		x->wr_id = 1000 + i;
		ibv_wr_rdma_write(x, self->mr->rkey,
				  (uintptr_t)self->buf + WRITE_OFF);
		ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 8);
	}
	EXPECT_EQ(ENOMEM, ibv_wr_complete(x));

	ibv_wr_start(x);
	x->wr_id = 5;
	ibv_wr_rdma_write(x, self->mr->rkey, (uintptr_t)self->buf + WRITE_OFF);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 8);
	ibv_wr_abort(x);

	usleep(100000);
	EXPECT_EQ(0, srdma_test_poll_ex(self->cqx, wc, 1, 1));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));

	/* exactly max_wr fit */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	for (i = 0; i < max_wr; i++) {
		x->wr_id = 2000 + i;
		ibv_wr_rdma_write(x, self->mr->rkey,
				  (uintptr_t)self->buf + WRITE_OFF);
		ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 8);
	}
	EXPECT_EQ(0, ibv_wr_complete(x));
	ASSERT_EQ((int)max_wr, srdma_test_poll_ex(self->cqx, wc, max_wr, 3000));
	for (i = 0; i < max_wr; i++) {
		EXPECT_EQ(2000 + i, wc[i].wr_id);
		cqex_check(_metadata, &wc[i], IBV_WC_RDMA_WRITE, 0, 0, 0,
			   self->qp->qp_num, 0);
	}

	/* In RESET: wr_complete says EINVAL, post_recv too. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &qa, IBV_QP_STATE));
	ibv_wr_start(x);
	x->wr_id = 6;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));
	EXPECT_EQ(EINVAL, srdma_test_post_recv(self->qp, self->mr, self->buf,
					       64, 7));
	usleep(100000);
	EXPECT_EQ(0, srdma_test_poll_ex(self->cqx, wc, 1, 1));
}

/*
 * A message longer than the kernel takes at the QP's path MTU (2^21
 * packets: 512 MiB at 256 bytes) is refused by the provider, through
 * either API, with nothing posted: the kernel would refuse the entry and
 * stop the QP after taking the batch's earlier entries.
 */
TEST_F(cqex, too_long_for_path_mtu)
{
	struct ibv_sge sge = { .addr = (uintptr_t)self->buf,
			       .length = 0x30000000, .lkey = self->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct ibv_qp_ex *x;
	struct srdma_test_wc wc[2];
	struct ibv_qp *qp;

	qp = cqex_qp(self->ctx, self->pd, self->cq, IBV_QPT_RC,
		     IBV_QP_EX_WITH_RDMA_WRITE);
	ASSERT_NE(NULL, qp);
	x = ibv_qp_to_qp_ex(qp);
	ASSERT_EQ(0, srdma_test_connect_self_mtu(qp, self->gidx, &self->gid,
						 IBV_MTU_256));
	wr.wr.rdma.remote_addr = (uintptr_t)self->buf + WRITE_OFF;
	wr.wr.rdma.rkey = self->mr->rkey;
	EXPECT_EQ(EINVAL, ibv_post_send(qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 2;
	ibv_wr_rdma_write(x, self->mr->rkey, (uintptr_t)self->buf + WRITE_OFF);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 8);
	x->wr_id = 3;
	ibv_wr_rdma_write(x, self->mr->rkey, (uintptr_t)self->buf + WRITE_OFF);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 0x30000000);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));
	usleep(100000);
	EXPECT_EQ(0, srdma_test_poll_ex(self->cqx, wc, 1, 1));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));

	/* the QP and its ring are as before: a good batch goes through */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 4;
	ibv_wr_rdma_write(x, self->mr->rkey, (uintptr_t)self->buf + WRITE_OFF);
	ibv_wr_set_sge(x, self->mr->lkey, (uintptr_t)self->buf, 8);
	EXPECT_EQ(0, ibv_wr_complete(x));
	ASSERT_EQ(1, srdma_test_poll_ex(self->cqx, wc, 1, 3000));
	EXPECT_EQ(4, wc[0].wr_id);
	cqex_check(_metadata, &wc[0], IBV_WC_RDMA_WRITE, 0, 0, 0, qp->qp_num,
		   0);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

static void *pd_alloc_cb(struct ibv_pd *pd, void *pd_context, size_t size,
			 size_t alignment, uint64_t resource_type)
{
	(void)pd; (void)size; (void)alignment; (void)resource_type;
	(*(int *)pd_context)++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static void pd_free_cb(struct ibv_pd *pd, void *pd_context, void *ptr,
		       uint64_t resource_type)
{
	(void)pd; (void)ptr; (void)resource_type;
	(*(int *)pd_context)++;
}

/*
 * Parent domains: made on a PD (with allocators and a pd_context, or
 * not), never on a parent domain, with a thread domain or an unknown
 * comp_mask bit (EINVAL). The PD cannot go while one is on it (EBUSY).
 * Objects made through one belong to its PD: an MR, an extended CQ that
 * names it (a plain PD there is EINVAL), an RC QP (a SEND and an RDMA
 * WRITE to itself, every completion field), a UD QP sending through an AH
 * made on the PD itself (one PD, so allowed). srdma allocates no queue
 * memory in user space: the allocators are never called.
 */
TEST_F(cqex, parent_domain)
{
	int calls = 0;
	struct ibv_parent_domain_init_attr pa = {
		.pd = self->pd,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = pd_alloc_cb,
		.free = pd_free_cb,
		.pd_context = &calls,
	};
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
	};
	struct ibv_pd *par, *bad;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp, *ud;
	struct ibv_ah *ah;
	struct srdma_test_wc wc[4];
	char *buf = calloc(1, 8192);
	int n;

	ASSERT_NE(NULL, buf);
	par = ibv_alloc_parent_domain(self->ctx, &pa);
	ASSERT_NE(NULL, par) TH_LOG("alloc_parent_domain: %s", strerror(errno));
	EXPECT_EQ(self->ctx, par->context);
	/* not on a parent domain, no thread domain, no unknown bit */
	pa.pd = par;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(self->ctx, &pa));
	EXPECT_EQ(EINVAL, errno);
	pa.pd = self->pd;
	pa.comp_mask |= 1 << 7;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(self->ctx, &pa));
	EXPECT_EQ(EINVAL, errno);
	pa.comp_mask = 0;
	pa.td = (struct ibv_td *)self->pd;	/* no thread domain exists */
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(self->ctx, &pa));
	EXPECT_EQ(EINVAL, errno);
	pa.td = NULL;
	bad = ibv_alloc_parent_domain(self->ctx, &pa);	/* no allocators */
	ASSERT_NE(NULL, bad);
	EXPECT_EQ(0, ibv_dealloc_pd(bad));

	/* a CQ naming the parent domain; a plain PD is refused */
	ca.parent_domain = self->pd;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq_ex(self->ctx, &ca));
	EXPECT_EQ(EINVAL, errno);
	ca.parent_domain = par;
	cqx = ibv_create_cq_ex(self->ctx, &ca);
	ASSERT_NE(NULL, cqx) TH_LOG("create_cq_ex: %s", strerror(errno));
	cq = ibv_cq_ex_to_cq(cqx);

	mr = ibv_reg_mr(par, buf, 8192, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	EXPECT_EQ(par, mr->pd);
	/* the PD stays while a parent domain is on it */
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd));

	qp = srdma_test_rc_qp(par, cq, 4, 4, 1);
	ASSERT_NE(NULL, qp) TH_LOG("create_qp: %s", strerror(errno));
	ASSERT_EQ(0, srdma_test_connect_self(qp, self->gidx, &self->gid));
	memset(buf, 'p', 64);
	ASSERT_EQ(0, srdma_test_post_recv(qp, mr, buf + 4096, 64, 71));
	ASSERT_EQ(0, srdma_test_post(qp, mr, IBV_WR_SEND, 72, buf, 64, NULL, 0));
	ASSERT_EQ(0, srdma_test_post_rdma(qp, mr, IBV_WR_RDMA_WRITE, buf, 64,
					  buf + 6144));
	n = srdma_test_poll_ex(cqx, wc, 3, 5000);
	ASSERT_EQ(3, n);
	/* an RC receive's source QP is the peer, itself here */
	cqex_check(_metadata, cqex_find(wc, n, 71), IBV_WC_RECV, 64, 0, 0,
		   qp->qp_num, qp->qp_num);
	cqex_check(_metadata, cqex_find(wc, n, 72), IBV_WC_SEND, 0, 0, 0,
		   qp->qp_num, 0);
	cqex_check(_metadata, cqex_find(wc, n, 0), IBV_WC_RDMA_WRITE, 0, 0, 0,
		   qp->qp_num, 0);
	EXPECT_EQ(0, memcmp(buf, buf + 4096, 64));
	EXPECT_EQ(0, memcmp(buf, buf + 6144, 64));

	/* UD on the parent domain, its AH on the PD itself */
	{
		struct ibv_qp_init_attr ui = {
			.qp_type = IBV_QPT_UD, .send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_sge sg = {
			.addr = (uintptr_t)buf, .length = 32, .lkey = mr->lkey,
		};
		struct ibv_send_wr sw = {
			.wr_id = 81, .sg_list = &sg, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bw;

		ud = ibv_create_qp(par, &ui);
		ASSERT_NE(NULL, ud);
		ASSERT_EQ(0, srdma_test_ud_up(ud, 0x1234));
		ah = srdma_test_ah(self->pd, self->gidx, &self->gid);
		ASSERT_NE(NULL, ah);
		ASSERT_EQ(0, srdma_test_post_recv(ud, mr, buf + 2048, 32 + 40,
						  82));
		sw.wr.ud.ah = ah;
		sw.wr.ud.remote_qpn = ud->qp_num;
		sw.wr.ud.remote_qkey = 0x1234;
		ASSERT_EQ(0, ibv_post_send(ud, &sw, &bw));
		n = srdma_test_poll_ex(cqx, wc, 2, 5000);
		ASSERT_EQ(2, n);
		cqex_check(_metadata, cqex_find(wc, n, 81), IBV_WC_SEND, 0, 0,
			   0, ud->qp_num, 0);
		cqex_check(_metadata, cqex_find(wc, n, 82), IBV_WC_RECV,
			   32 + 40, IBV_WC_GRH, 0, ud->qp_num, ud->qp_num);
		EXPECT_EQ(0, memcmp(buf, buf + 2048 + 40, 32));
		EXPECT_EQ(0, ibv_destroy_ah(ah));
		EXPECT_EQ(0, ibv_destroy_qp(ud));
	}

	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, ibv_dealloc_pd(par));
	EXPECT_EQ(0, calls);	/* nothing for the allocators to do */
	free(buf);
}

/*
 * A WRITE right behind a READ the responder answers from its queue (16
 * KiB: more than the 4 packets it answers at once): the WRITE's ACK must not overtake
 * the READ's responses (the requester would take them for lost: rdma_rxe
 * sends the READ again, srdma's own requester waited for a probe). Ten
 * rounds: both complete, in order, with the bytes; no duplicate reached
 * the responder and no ACK timed out.
 */
TEST_F(cqex, write_behind_queued_read)
{
	const uint32_t len = 16384;
	char *wdst = self->buf + 3 * len;
	long long dup0 = srdma_test_counter("rx_duplicates");
	long long to0 = srdma_test_counter("ack_timeouts");
	struct srdma_test_wc wc[2];
	int i, n;

	ASSERT_LE(0, dup0);
	for (i = 0; i < len; i++)
		self->buf[i] = (char)(i * 7 + 1);
	for (i = 0; i < 10; i++) {
		memset(self->buf + len, 0, len);
		memset(wdst, 0, 8);
		ASSERT_EQ(0, srdma_test_post(self->qp, self->mr, IBV_WR_RDMA_READ,
					     500 + i, self->buf + len, len,
					     self->buf, 0));
		ASSERT_EQ(0, srdma_test_post(self->qp, self->mr,
					     IBV_WR_RDMA_WRITE, 600 + i,
					     self->buf + i, 8, wdst, 0));
		n = srdma_test_poll_ex(self->cqx, wc, 2, 10000);
		ASSERT_EQ(2, n);
		EXPECT_EQ(500U + i, wc[0].wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
		EXPECT_EQ(IBV_WC_RDMA_READ, wc[0].opcode);
		EXPECT_EQ(len, wc[0].byte_len);
		EXPECT_EQ(600U + i, wc[1].wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc[1].status);
		EXPECT_EQ(IBV_WC_RDMA_WRITE, wc[1].opcode);
		EXPECT_EQ(0, memcmp(self->buf, self->buf + len, len));
		EXPECT_EQ(0, memcmp(self->buf + i, wdst, 8));
	}
	EXPECT_EQ(dup0, srdma_test_counter("rx_duplicates"));
	EXPECT_EQ(to0, srdma_test_counter("ack_timeouts"));
}

TEST_HARNESS_MAIN
