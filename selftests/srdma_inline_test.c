// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Inline data and UC QPs on srdma0 in loopback (its own IPv4 RoCEv2 GID).
 *
 * Inline data (IBV_SEND_INLINE): the caps written back by create_qp and
 * query_qp, EINVAL over the limit; on RC, UC and UD, messages of 0, 1 and
 * max_inline_data bytes from buffers with no MR (the lkey is not looked
 * at) that are overwritten right after the post, as SEND, SEND with
 * immediate, WRITE and WRITE with immediate, through post_send and the
 * ibv_qp_ex API; the bytes that arrived and every completion field.
 *
 * UC QPs: SEND, SEND with immediate, WRITE and WRITE with immediate over
 * several packets, every completion field; READ refused; a message with
 * no receive posted, too long for its receive or to a refused R_Key is
 * dropped and counted (rx_uc_msg_dropped), the QP stays in RTS and the
 * next message arrives. Loss is tested across two devices by
 * srdma_uc_loss (selftests/tests/uc.sh).
 */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define QKEY		0x22222222U
#define GRH		40
#define RECV_OFF	32768		/* receive buffers from here */
#define WRITE_OFF	49152		/* WRITE targets from here */
#define MAX_INLINE	1024		/* SRDMA_MAX_INLINE_DATA */
#define BAD_LKEY	0xdeadbeefU

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *scq,
			      struct ibv_cq *rcq, enum ibv_qp_type type,
			      uint32_t max_inline, struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr init = {
		.qp_type = type, .send_cq = scq, .recv_cq = rcq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = max_inline },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (qp && cap)
		*cap = init.cap;
	return qp;
}

/* RESET -> RTS for an RC or UC QP towards @dqpn on our own GID. */
static int conn_qp(struct ibv_qp *qp, uint32_t dqpn, int gidx,
		   const union ibv_gid *gid, enum ibv_mtu mtu)
{
	int rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr a;

	if (srdma_test_qp_init_access(qp, IBV_ACCESS_REMOTE_WRITE |
				      (rc ? IBV_ACCESS_REMOTE_READ : 0)))
		return -1;
	srdma_test_rtr_attr(&a, dqpn, gidx, gid, mtu);
	a.rq_psn = 0x700;
	if (ibv_modify_qp(qp, &a, SRDMA_TEST_RTR_MASK &
			  ~(rc ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER)))
		return -1;
	if (rc) {
		srdma_test_rts_attr(&a);
		a.sq_psn = 0x700;
		return ibv_modify_qp(qp, &a, SRDMA_TEST_RTS_MASK);
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x700;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* The pattern of message @seed: never all zeroes, never the same twice. */
static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + 1);
}

static int check(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + 1))
			return -1;
	return 0;
}

FIXTURE(inl) {
	SRDMA_TEST_FIXTURE_OBJS;	/* ctx, pd, cq (send), mr, qp, buf */
	struct ibv_cq *rcq;
	struct ibv_qp *a, *b;		/* a sends to b */
	struct ibv_ah *ah;		/* UD: to our own GID */
	union ibv_gid gid;
	int gidx;
	struct ibv_qp_cap cap;		/* a's caps as created */
};

FIXTURE_SETUP(inl)
{
	SRDMA_TEST_FIXTURE_OPEN(self);
	self->rcq = ibv_create_cq(self->ctx, SRDMA_TEST_CQE, NULL, NULL, 0);
	ASSERT_NE(NULL, self->rcq);
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
}

FIXTURE_TEARDOWN(inl)
{
	if (self->ah)
		ibv_destroy_ah(self->ah);
	if (self->a)
		ibv_destroy_qp(self->a);
	if (self->b)
		ibv_destroy_qp(self->b);
	if (self->rcq)
		ibv_destroy_cq(self->rcq);
	SRDMA_TEST_FIXTURE_CLOSE(self);
}

/*
 * A pair a -> b of @type with @max_inline on a, connected (RC, UC) at
 * path MTU 256, so that max_inline_data takes several packets, or up with
 * an AH to our own GID (UD).
 */
static int pair_up(FIXTURE_DATA(inl) *self, enum ibv_qp_type type,
		   uint32_t max_inline)
{
	self->a = make_qp(self->pd, self->cq, self->rcq, type, max_inline,
			  &self->cap);
	self->b = make_qp(self->pd, self->cq, self->rcq, type, 0, NULL);
	if (!self->a || !self->b)
		return -1;
	if (type == IBV_QPT_UD) {
		self->ah = srdma_test_ah(self->pd, self->gidx, &self->gid);
		return !self->ah || srdma_test_ud_up(self->a, QKEY) ||
			srdma_test_ud_up(self->b, QKEY) ? -1 : 0;
	}
	return conn_qp(self->a, self->b->qp_num, self->gidx, &self->gid,
		       IBV_MTU_256) ||
	       conn_qp(self->b, self->a->qp_num, self->gidx, &self->gid,
		       IBV_MTU_256) ? -1 : 0;
}

/*
 * Post on a one inline work request of @len bytes of pattern @seed, from
 * two stack buffers without an MR, then overwrite them: the data must
 * have been taken at the post. ibv_post_send()'s result; *@bad_ok is set
 * if bad_wr was right on failure.
 */
static int post_inline(FIXTURE_DATA(inl) *self, enum ibv_wr_opcode op,
		       uint32_t len, uint32_t seed, uint64_t wr_id,
		       int *bad_ok)
{
	uint8_t data[2 * MAX_INLINE];
	struct ibv_sge sge[2];
	struct ibv_send_wr wr, *bad = NULL;
	uint32_t half = len / 2;
	int ret;

	fill(data, len, seed);
	sge[0].addr = (uintptr_t)data;
	sge[0].length = half;
	sge[0].lkey = BAD_LKEY;
	sge[1].addr = (uintptr_t)(data + half);
	sge[1].length = len - half;
	sge[1].lkey = 0;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = 2;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(0xc0de0000 | seed);
	if (self->a->qp_type == IBV_QPT_UD) {
		wr.wr.ud.ah = self->ah;
		wr.wr.ud.remote_qpn = self->b->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)(self->buf + WRITE_OFF);
		wr.wr.rdma.rkey = self->mr->rkey;
	}
	ret = ibv_post_send(self->a, &wr, &bad);
	memset(data, 0, sizeof(data));
	if (bad_ok)
		*bad_ok = bad == &wr;
	return ret;
}

static int has_imm(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static int is_send(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

/*
 * Send @len bytes of pattern @seed as @op from a to b (inline if @inl, a
 * posted receive at RECV_OFF if one is consumed) and check the bytes and
 * every field of both completions.
 */
static void xfer_check(struct __test_metadata *_metadata,
		       FIXTURE_DATA(inl) *self, enum ibv_wr_opcode op,
		       uint32_t len, uint32_t seed)
{
	int ud = self->a->qp_type == IBV_QPT_UD;
	uint32_t grh = ud ? GRH : 0;
	uint8_t *dst = (uint8_t *)self->buf +
		       (is_send(op) ? RECV_OFF + grh : WRITE_OFF);
	int consumes = is_send(op) || has_imm(op);
	struct ibv_wc wc[2];

	memset(self->buf + RECV_OFF, 0, SRDMA_TEST_BUF_SIZE - RECV_OFF);
	if (consumes)
		ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr,
						  self->buf + RECV_OFF,
						  MAX_INLINE + grh,
						  0x5000 + seed));
	ASSERT_EQ(0, post_inline(self, op, len, seed, 0x1000 + seed, NULL));

	ASSERT_EQ(1, srdma_test_poll_n(self->cq, wc, 1, 2000))
		TH_LOG("no send completion");
	EXPECT_EQ(0x1000 + seed, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(is_send(op) ? IBV_WC_SEND : IBV_WC_RDMA_WRITE, wc[0].opcode);
	EXPECT_EQ(self->a->qp_num, wc[0].qp_num);
	EXPECT_EQ(0U, wc[0].wc_flags);
	if (consumes) {
		ASSERT_EQ(1, srdma_test_poll_n(self->rcq, wc, 1, 2000))
			TH_LOG("no receive completion, op %d len %u", op, len);
		EXPECT_EQ(0x5000 + seed, wc[0].wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
		EXPECT_EQ(is_send(op) ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM,
			  wc[0].opcode);
		EXPECT_EQ(len + grh, wc[0].byte_len);
		EXPECT_EQ(self->b->qp_num, wc[0].qp_num);
		EXPECT_EQ(self->a->qp_num, wc[0].src_qp);
		EXPECT_EQ((has_imm(op) ? IBV_WC_WITH_IMM : 0U) |
			  (ud ? IBV_WC_GRH : 0U),
			  wc[0].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_GRH));
		if (has_imm(op))
			EXPECT_EQ(htobe32(0xc0de0000 | seed), wc[0].imm_data);
	} else {
		usleep(20000);	/* a WRITE consumes nothing: wait for it */
	}
	EXPECT_EQ(0, check(dst, len, seed)) TH_LOG("op %d len %u: bytes", op,
						   len);
	EXPECT_EQ(0, dst[len]) TH_LOG("op %d len %u: written past", op, len);
	EXPECT_EQ(0, srdma_test_poll_n(self->cq, wc, 1, 1));
	EXPECT_EQ(0, srdma_test_poll_n(self->rcq, wc, 1, 1));
}

/* The caps create_qp and query_qp write back; EINVAL over the limit. */
TEST_F(inl, caps_written_back)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
	};
	static const uint32_t asks[] = { 0, 1, 60, 200, 500, MAX_INLINE };
	struct ibv_qp_init_attr qia;
	struct ibv_qp_attr qa;
	struct ibv_qp_cap cap;
	struct ibv_qp *qp;
	unsigned int t, i;

	for (t = 0; t < 3; t++) {
		for (i = 0; i < sizeof(asks) / sizeof(asks[0]); i++) {
			qp = make_qp(self->pd, self->cq, self->rcq, types[t],
				     asks[i], &cap);
			ASSERT_NE(NULL, qp) TH_LOG("type %d inline %u: %s",
						   types[t], asks[i],
						   strerror(errno));
			EXPECT_LE(asks[i], cap.max_inline_data);
			EXPECT_GE(MAX_INLINE, cap.max_inline_data);
			/* at least the room of the SGEs, 2 of 16 bytes */
			EXPECT_LE(32U, cap.max_inline_data);
			memset(&qia, 0, sizeof(qia));
			ASSERT_EQ(0, ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia));
			EXPECT_EQ(cap.max_inline_data, qa.cap.max_inline_data);
			EXPECT_EQ(cap.max_inline_data,
				  qia.cap.max_inline_data);
			EXPECT_EQ(cap.max_send_sge, qa.cap.max_send_sge);
			EXPECT_EQ(types[t], qia.qp_type);
			ibv_destroy_qp(qp);
		}
		errno = 0;
		EXPECT_EQ(NULL, make_qp(self->pd, self->cq, self->rcq,
					types[t], MAX_INLINE + 1, NULL));
		EXPECT_EQ(EINVAL, errno);
	}
}

/* Over the limit, or on a READ, inline data is EINVAL at the post. */
static void over_limit(struct __test_metadata *_metadata,
		       FIXTURE_DATA(inl) *self, enum ibv_qp_type type)
{
	struct ibv_wc wc;
	int bad_ok = 0;

	ASSERT_EQ(0, pair_up(self, type, 100));
	ASSERT_EQ(112U, self->cap.max_inline_data);	/* 100 rounded up */
	EXPECT_EQ(EINVAL, post_inline(self, IBV_WR_SEND, 113, 1, 1, &bad_ok));
	EXPECT_TRUE(bad_ok);
	if (type == IBV_QPT_RC) {
		EXPECT_EQ(EINVAL, post_inline(self, IBV_WR_RDMA_READ, 8, 1, 1,
					      &bad_ok));
		EXPECT_TRUE(bad_ok);
	}
	/* nothing went out, and the QP still works */
	EXPECT_EQ(0, srdma_test_poll_n(self->cq, &wc, 1, 50));
	xfer_check(_metadata, self, IBV_WR_SEND, 112, 2);
}

TEST_F(inl, rc_over_limit) { over_limit(_metadata, self, IBV_QPT_RC); }
TEST_F(inl, uc_over_limit) { over_limit(_metadata, self, IBV_QPT_UC); }
TEST_F(inl, ud_over_limit) { over_limit(_metadata, self, IBV_QPT_UD); }

/* Sizes 0, 1, a few packets and max_inline_data, each operation. */
static void inline_ops(struct __test_metadata *_metadata,
		       FIXTURE_DATA(inl) *self, enum ibv_qp_type type)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM,
	};
	uint32_t sizes[] = { 0, 1, 257, MAX_INLINE };
	unsigned int o, s, nops = type == IBV_QPT_UD ? 2 : 4;

	ASSERT_EQ(0, pair_up(self, type, MAX_INLINE));
	ASSERT_EQ(MAX_INLINE, self->cap.max_inline_data);
	for (o = 0; o < nops; o++)
		for (s = 0; s < 4; s++)
			xfer_check(_metadata, self, ops[o], sizes[s],
				   o * 4 + s);
}

TEST_F(inl, rc_inline) { inline_ops(_metadata, self, IBV_QPT_RC); }
TEST_F(inl, uc_inline) { inline_ops(_metadata, self, IBV_QPT_UC); }
TEST_F(inl, ud_inline) { inline_ops(_metadata, self, IBV_QPT_UD); }

/* The ibv_qp_ex API: wr_set_inline_data and wr_set_inline_data_list. */
TEST_F(inl, qp_ex_inline)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_UC, .send_cq = self->cq,
		.recv_cq = self->rcq, .pd = self->pd,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 300 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	};
	uint8_t d1[300], d2[100], d3[200];
	struct ibv_data_buf bufs[2] = {
		{ .addr = d2, .length = sizeof(d2) },
		{ .addr = d3, .length = sizeof(d3) },
	};
	struct ibv_qp_ex *qx;
	struct ibv_wc wc[2];

	self->a = ibv_create_qp_ex(self->ctx, &ia);
	ASSERT_NE(NULL, self->a) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(304U, ia.cap.max_inline_data);
	self->b = make_qp(self->pd, self->cq, self->rcq, IBV_QPT_UC, 0, NULL);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, conn_qp(self->a, self->b->qp_num, self->gidx, &self->gid,
			     IBV_MTU_256));
	ASSERT_EQ(0, conn_qp(self->b, self->a->qp_num, self->gidx, &self->gid,
			     IBV_MTU_256));
	qx = ibv_qp_to_qp_ex(self->a);
	ASSERT_NE(NULL, qx);
	fill(d1, sizeof(d1), 21);
	fill(d2, sizeof(d2), 22);
	fill(d3, sizeof(d3), 23);
	memset(self->buf + RECV_OFF, 0, SRDMA_TEST_BUF_SIZE - RECV_OFF);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr,
					  self->buf + RECV_OFF, 512, 77));
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr,
					  self->buf + RECV_OFF + 512, 512, 78));

	ibv_wr_start(qx);
	qx->wr_id = 11;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, d1, sizeof(d1));
	qx->wr_id = 12;
	ibv_wr_rdma_write_imm(qx, self->mr->rkey,
			      (uintptr_t)(self->buf + WRITE_OFF),
			      htobe32(0xabcd));
	ibv_wr_set_inline_data_list(qx, 2, bufs);
	ASSERT_EQ(0, ibv_wr_complete(qx));
	memset(d1, 0, sizeof(d1));
	memset(d2, 0, sizeof(d2));
	memset(d3, 0, sizeof(d3));

	ASSERT_EQ(2, srdma_test_poll_n(self->cq, wc, 2, 2000));
	EXPECT_EQ(11U, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(IBV_WC_SEND, wc[0].opcode);
	EXPECT_EQ(12U, wc[1].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[1].status);
	EXPECT_EQ(IBV_WC_RDMA_WRITE, wc[1].opcode);
	ASSERT_EQ(2, srdma_test_poll_n(self->rcq, wc, 2, 2000));
	EXPECT_EQ(77U, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc[0].opcode);
	EXPECT_EQ(300U, wc[0].byte_len);
	EXPECT_EQ(0U, wc[0].wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(78U, wc[1].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[1].status);
	EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc[1].opcode);
	EXPECT_EQ(300U, wc[1].byte_len);
	EXPECT_EQ(htobe32(0xabcd), wc[1].imm_data);
	EXPECT_EQ(self->a->qp_num, wc[1].src_qp);
	EXPECT_EQ(0, check((uint8_t *)self->buf + RECV_OFF, 300, 21));
	EXPECT_EQ(0, check((uint8_t *)self->buf + WRITE_OFF, 100, 22));
	EXPECT_EQ(0, check((uint8_t *)self->buf + WRITE_OFF + 100, 200, 23));

	/* over max_inline_data: the batch fails, nothing is posted */
	ibv_wr_start(qx);
	qx->wr_id = 13;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, d1, 305);
	EXPECT_EQ(EINVAL, ibv_wr_complete(qx));
	EXPECT_EQ(0, srdma_test_poll_n(self->cq, wc, 1, 50));
}

/*
 * UC without inline: each operation over several packets (path MTU 256)
 * and of 0 bytes, from and into MRs, every completion field.
 */
TEST_F(inl, uc_ops)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM,
	};
	static const uint32_t sizes[] = { 0, 1, 256, 1000, 4096 };
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	unsigned int o, s;
	uint32_t seed, len;
	uint8_t *dst;

	ASSERT_EQ(0, pair_up(self, IBV_QPT_UC, 0));
	for (o = 0; o < 4; o++) {
		for (s = 0; s < 5; s++) {
			seed = 100 + o * 5 + s;
			len = sizes[s];
			memset(self->buf + RECV_OFF, 0,
			       SRDMA_TEST_BUF_SIZE - RECV_OFF);
			fill((uint8_t *)self->buf, len, seed);
			if (is_send(ops[o]) || has_imm(ops[o]))
				ASSERT_EQ(0, srdma_test_post_recv(
					self->b, self->mr, self->buf + RECV_OFF,
					8192, seed));
			sge.addr = (uintptr_t)self->buf;
			sge.length = len;
			sge.lkey = self->mr->lkey;
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = seed + 1000;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = ops[o];
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.imm_data = htobe32(seed);
			wr.wr.rdma.remote_addr =
				(uintptr_t)(self->buf + WRITE_OFF);
			wr.wr.rdma.rkey = self->mr->rkey;
			ASSERT_EQ(0, ibv_post_send(self->a, &wr, &bad));
			ASSERT_EQ(1, srdma_test_poll_n(self->cq, &wc, 1, 2000));
			EXPECT_EQ(seed + 1000, wc.wr_id);
			EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
			EXPECT_EQ(is_send(ops[o]) ? IBV_WC_SEND :
				  IBV_WC_RDMA_WRITE, wc.opcode);
			EXPECT_EQ(self->a->qp_num, wc.qp_num);
			if (is_send(ops[o]) || has_imm(ops[o])) {
				ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc,
							       1, 2000))
					TH_LOG("op %d len %u", ops[o], len);
				EXPECT_EQ(seed, wc.wr_id);
				EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
				EXPECT_EQ(is_send(ops[o]) ? IBV_WC_RECV :
					  IBV_WC_RECV_RDMA_WITH_IMM,
					  wc.opcode);
				EXPECT_EQ(len, wc.byte_len);
				EXPECT_EQ(self->b->qp_num, wc.qp_num);
				EXPECT_EQ(self->a->qp_num, wc.src_qp);
				EXPECT_EQ(has_imm(ops[o]) ? IBV_WC_WITH_IMM :
					  0U, wc.wc_flags & IBV_WC_WITH_IMM);
				if (has_imm(ops[o]))
					EXPECT_EQ(htobe32(seed), wc.imm_data);
			} else {
				usleep(20000);
			}
			dst = (uint8_t *)self->buf +
			      (is_send(ops[o]) ? RECV_OFF : WRITE_OFF);
			EXPECT_EQ(0, check(dst, len, seed))
				TH_LOG("op %d len %u: bytes", ops[o], len);
			EXPECT_EQ(0, dst[len]);
		}
	}
	/* UC has no READ */
	fill((uint8_t *)self->buf, 8, 1);
	EXPECT_EQ(EINVAL, srdma_test_post_rdma(self->a, self->mr,
					       IBV_WR_RDMA_READ, self->buf, 8,
					       self->buf + WRITE_OFF));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->a));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->b));
}

/*
 * What a UC responder cannot take is dropped and counted, never NAKed and
 * never an error: the QPs stay in RTS, and the receive a dropped message
 * had taken is used by the next one.
 */
TEST_F(inl, uc_drops)
{
	long long d0 = srdma_test_counter("rx_uc_msg_dropped");
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	ASSERT_LE(0, d0);
	ASSERT_EQ(0, pair_up(self, IBV_QPT_UC, 0));
	fill((uint8_t *)self->buf, 1000, 7);
	sge.addr = (uintptr_t)self->buf;
	sge.length = 1000;
	sge.lkey = self->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;

	/* no receive posted: the sender completes, the message is gone */
	ASSERT_EQ(0, ibv_post_send(self->a, &wr, &bad));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	usleep(20000);
	EXPECT_EQ(d0 + 1, srdma_test_counter("rx_uc_msg_dropped"));

	/* a receive too short for it: dropped, the receive stays posted */
	memset(self->buf + RECV_OFF, 0, 2048);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr,
					  self->buf + RECV_OFF, 500, 42));
	wr.wr_id = 2;
	ASSERT_EQ(0, ibv_post_send(self->a, &wr, &bad));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, &wc, 1, 2000));
	EXPECT_EQ(2U, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	usleep(20000);
	EXPECT_EQ(0, srdma_test_poll_n(self->rcq, &wc, 1, 1));
	EXPECT_EQ(d0 + 2, srdma_test_counter("rx_uc_msg_dropped"));

	/* a WRITE to a refused R_Key: dropped */
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.rdma.remote_addr = (uintptr_t)(self->buf + WRITE_OFF);
	wr.wr.rdma.rkey = self->mr->rkey ^ 0x100;
	ASSERT_EQ(0, ibv_post_send(self->a, &wr, &bad));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, &wc, 1, 2000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	usleep(20000);
	EXPECT_EQ(0, srdma_test_poll_n(self->rcq, &wc, 1, 1));
	EXPECT_EQ(d0 + 3, srdma_test_counter("rx_uc_msg_dropped"));

	/* a message that fits takes the receive left posted */
	fill((uint8_t *)self->buf, 400, 8);
	sge.length = 400;
	wr.wr_id = 4;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(99);
	ASSERT_EQ(0, ibv_post_send(self->a, &wr, &bad));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, &wc, 1, 2000));
	EXPECT_EQ(4U, wc.wr_id);
	ASSERT_EQ(1, srdma_test_poll_n(self->rcq, &wc, 1, 2000));
	EXPECT_EQ(42U, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(400U, wc.byte_len);
	EXPECT_EQ(htobe32(99), wc.imm_data);
	EXPECT_EQ(0, check((uint8_t *)self->buf + RECV_OFF, 400, 8));
	EXPECT_EQ(d0 + 3, srdma_test_counter("rx_uc_msg_dropped"));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->a));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->b));
}

TEST_HARNESS_MAIN
