// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * XRC on the device under test, in loopback: an XRC send QP (ini, CQ cs)
 * connected to an XRC receive QP (tgt) of domain X, which has two XRC
 * SRQs: a (PD p, CQ ca) and b (PD p2, CQ cb); domain Y has SRQ y.
 *
 * Checked: the device says it has XRC; each request lands in the SRQ its
 * work request names, completes on that SRQ's CQ, every field of every
 * completion (qp_num the receive QP's, src_qp the send QP's); messages of
 * many packets; WRITE, READ and atomics checked against the PD of the SRQ
 * named (another PD's MR: REM_ACCESS_ERR); an SRQ number that does not
 * exist, or is another domain's: REM_INV_REQ_ERR; an SRQ destroyed under
 * a receive QP; the receive QP takes no work requests (EINVAL), opens by
 * number in its domain; ibv_get_srq_num() on a basic SRQ is EINVAL.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define LEN		(64 * 1024)
#define NRECV		8
#define ACCESS_MR	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* A fresh XRC domain, of a file of its own. */
static struct ibv_xrcd *xrcd_open(struct ibv_context *ctx, int *fd)
{
	char name[] = "/tmp/srdma_xrcd.XXXXXX";
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};

	*fd = mkstemp(name);
	if (*fd < 0)
		return NULL;
	unlink(name);
	a.fd = *fd;
	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *xsrq(struct ibv_context *ctx, struct ibv_pd *pd,
			    struct ibv_xrcd *xrcd, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 16, .max_sge = 2 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd,
		.xrcd = xrcd,
		.cq = cq,
	};

	return ibv_create_srq_ex(ctx, &a);
}

/* RESET -> RTS of the send QP towards receive QP @dqpn. */
static int ini_up(struct ibv_qp *qp, uint32_t dqpn, int gidx,
		  const union ibv_gid *gid)
{
	struct ibv_qp_attr a;

	if (srdma_test_qp_init_access(qp, 0))
		return -1;
	srdma_test_rtr_attr(&a, dqpn, gidx, gid, IBV_MTU_1024);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		return -1;
	return srdma_test_qp_rts(qp);
}

/* RESET -> RTR of the receive QP, answering send QP @dqpn. */
static int tgt_up(struct ibv_qp *qp, uint32_t dqpn, int gidx,
		  const union ibv_gid *gid)
{
	if (srdma_test_qp_init_access(qp, IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_REMOTE_ATOMIC))
		return -1;
	return srdma_test_qp_rtr_to(qp, dqpn, gidx, gid, IBV_MTU_1024);
}

FIXTURE(xrc) {
	struct ibv_context *ctx;
	struct ibv_pd *p, *p2;
	struct ibv_xrcd *x, *y;
	int xfd, yfd;
	struct ibv_cq *cs, *ca, *cb;
	struct ibv_srq *a, *b, *sy;
	struct ibv_qp *ini, *tgt;
	unsigned char *buf, *buf2;	/* of p and of p2 */
	struct ibv_mr *mr, *mr2;
	union ibv_gid gid;
	int gidx;
};

FIXTURE_SETUP(xrc)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
	};
	struct ibv_device_attr dattr;

	self->xfd = self->yfd = -1;
	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &dattr));
	if (!(dattr.device_cap_flags & IBV_DEVICE_XRC))
		SRDMA_TEST_SETUP_SKIP("no XRC");
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
	self->p = ibv_alloc_pd(self->ctx);
	self->p2 = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->p);
	ASSERT_NE(NULL, self->p2);
	self->x = xrcd_open(self->ctx, &self->xfd);
	ASSERT_NE(NULL, self->x) TH_LOG("open_xrcd: %s", strerror(errno));
	self->y = xrcd_open(self->ctx, &self->yfd);
	ASSERT_NE(NULL, self->y);
	self->cs = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	self->ca = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	self->cb = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cs);
	ASSERT_NE(NULL, self->ca);
	ASSERT_NE(NULL, self->cb);
	self->a = xsrq(self->ctx, self->p, self->x, self->ca);
	ASSERT_NE(NULL, self->a) TH_LOG("XRC SRQ: %s", strerror(errno));
	self->b = xsrq(self->ctx, self->p2, self->x, self->cb);
	ASSERT_NE(NULL, self->b);
	self->sy = xsrq(self->ctx, self->p, self->y, self->ca);
	ASSERT_NE(NULL, self->sy);

	qa.xrcd = self->x;
	self->tgt = ibv_create_qp_ex(self->ctx, &qa);
	ASSERT_NE(NULL, self->tgt) TH_LOG("XRC_RECV: %s", strerror(errno));
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = self->p;
	qa.send_cq = self->cs;
	qa.cap.max_send_wr = 16;
	qa.cap.max_send_sge = 1;
	self->ini = ibv_create_qp_ex(self->ctx, &qa);
	ASSERT_NE(NULL, self->ini) TH_LOG("XRC_SEND: %s", strerror(errno));
	ASSERT_EQ(0, tgt_up(self->tgt, self->ini->qp_num, self->gidx,
			    &self->gid));
	ASSERT_EQ(0, ini_up(self->ini, self->tgt->qp_num, self->gidx,
			    &self->gid));

	self->buf = aligned_alloc(4096, 2 * LEN);
	self->buf2 = aligned_alloc(4096, 2 * LEN);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->buf2);
	memset(self->buf, 0, 2 * LEN);
	memset(self->buf2, 0, 2 * LEN);
	self->mr = ibv_reg_mr(self->p, self->buf, 2 * LEN, ACCESS_MR);
	self->mr2 = ibv_reg_mr(self->p2, self->buf2, 2 * LEN, ACCESS_MR);
	ASSERT_NE(NULL, self->mr);
	ASSERT_NE(NULL, self->mr2);
}

FIXTURE_TEARDOWN(xrc)
{
	if (self->ini)
		ibv_destroy_qp(self->ini);
	if (self->tgt)
		ibv_destroy_qp(self->tgt);
	if (self->a)
		ibv_destroy_srq(self->a);
	if (self->b)
		ibv_destroy_srq(self->b);
	if (self->sy)
		ibv_destroy_srq(self->sy);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->mr2)
		ibv_dereg_mr(self->mr2);
	if (self->cs)
		ibv_destroy_cq(self->cs);
	if (self->ca)
		ibv_destroy_cq(self->ca);
	if (self->cb)
		ibv_destroy_cq(self->cb);
	if (self->x)
		ibv_close_xrcd(self->x);
	if (self->y)
		ibv_close_xrcd(self->y);
	if (self->xfd >= 0)
		close(self->xfd);
	if (self->yfd >= 0)
		close(self->yfd);
	if (self->p)
		ibv_dealloc_pd(self->p);
	if (self->p2)
		ibv_dealloc_pd(self->p2);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->buf);
	free(self->buf2);
}

#define fill srdma_test_fill
#define filled srdma_test_filled
/* One completion within about 10 s. */
#define wait_wc(cq, wc) srdma_test_wait_wc_for(cq, wc, 100000)

static int srq_recv(struct ibv_srq *srq, struct ibv_mr *mr, void *at,
		    uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)at, .length = len, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/*
 * One signaled work request @op on the send QP for XRC SRQ @srqn: @len
 * bytes at @local (in the send QP's PD), remote @remote/@rkey, immediate
 * @imm (host order), atomics' operands @add and @swap.
 */
static int xpost(struct ibv_qp *qp, struct ibv_mr *mr, enum ibv_wr_opcode op,
		 uint64_t wr_id, uint32_t srqn, void *local, uint32_t len,
		 void *remote, uint32_t rkey, uint32_t imm, uint64_t add,
		 uint64_t swap)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)local, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm),
	}, *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = (uintptr_t)remote;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)remote;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static uint32_t srqn(struct ibv_srq *srq)
{
	uint32_t n = 0;

	if (ibv_get_srq_num(srq, &n))
		return 0;
	return n;
}

/* Every field of the completion of a SEND's receive on an XRC SRQ's CQ. */
#define EXPECT_XRECV_WC(wc, id, len, imm, flags) do {			\
	EXPECT_EQ((uint64_t)(id), (wc).wr_id);				\
	EXPECT_EQ(IBV_WC_SUCCESS, (wc).status) TH_LOG("status %s",	\
					ibv_wc_status_str((wc).status)); \
	EXPECT_EQ(IBV_WC_RECV, (wc).opcode);				\
	EXPECT_EQ((uint32_t)(len), (wc).byte_len);			\
	EXPECT_EQ((unsigned int)(flags), (wc).wc_flags);		\
	EXPECT_EQ((flags) & IBV_WC_WITH_IMM ? htonl(imm) : 0u,		\
		  (wc).imm_data);					\
	EXPECT_EQ(self->tgt->qp_num, (wc).qp_num);			\
	EXPECT_EQ(self->ini->qp_num, (wc).src_qp);			\
} while (0)

TEST_F(xrc, caps)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *basic;
	uint32_t n = 7;

	EXPECT_NE(0u, srqn(self->a));
	EXPECT_NE(0u, srqn(self->b));
	EXPECT_NE(srqn(self->a), srqn(self->b));
	basic = ibv_create_srq(self->p, &sa);
	ASSERT_NE(NULL, basic);
	EXPECT_EQ(EINVAL, ibv_get_srq_num(basic, &n));
	EXPECT_EQ(7u, n);
	EXPECT_EQ(0, ibv_destroy_srq(basic));
}

/* SENDs of 1 B to 64 KiB, alternately to SRQ a (PD p) and b (PD p2). */
TEST_F(xrc, send_two_srqs)
{
	static const uint32_t lens[] = { 1, 1024, 1025, 4096, 65536 };
	unsigned int i;
	struct ibv_wc wc;

	fill(self->buf, LEN, 1);
	for (i = 0; i < NRECV; i++) {
		ASSERT_EQ(0, srq_recv(self->a, self->mr, self->buf + LEN, LEN,
				      0xa0 + i));
		ASSERT_EQ(0, srq_recv(self->b, self->mr2, self->buf2 + LEN,
				      LEN, 0xb0 + i));
	}
	for (i = 0; i < 2 * ARRAY_SIZE(lens); i++) {
		bool to_a = !(i & 1);
		uint32_t len = lens[i / 2];
		bool imm = i % 3 == 0;

		memset(to_a ? self->buf + LEN : self->buf2 + LEN, 0, LEN);
		ASSERT_EQ(0, xpost(self->ini, self->mr,
				   imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				   0x100 + i, srqn(to_a ? self->a : self->b),
				   self->buf, len, NULL, 0, 0x5000 + i, 0, 0));
		wait_wc(self->cs, &wc);
		EXPECT_SEND_WC(wc, 0x100 + i, IBV_WC_SUCCESS, IBV_WC_SEND, 0,
			       self->ini);
		wait_wc(to_a ? self->ca : self->cb, &wc);
		EXPECT_XRECV_WC(wc, (to_a ? 0xa0 : 0xb0) + i / 2, len,
				0x5000 + i, imm ? IBV_WC_WITH_IMM : 0);
		EXPECT_TRUE(filled(to_a ? self->buf + LEN : self->buf2 + LEN,
				   len, 1));
		/* Nothing on the other SRQ's CQ. */
		EXPECT_EQ(0, ibv_poll_cq(to_a ? self->cb : self->ca, 1, &wc));
	}
}

/*
 * WRITE (with immediate too), READ and atomics are checked against the PD
 * of the SRQ named: p2's MR through b works, through a does not.
 */
TEST_F(xrc, rdma_pd_of_srq)
{
	uint64_t *word = (uint64_t *)(self->buf2 + LEN);
	struct ibv_wc wc;

	fill(self->buf, LEN, 3);
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_RDMA_WRITE, 1,
			   srqn(self->b), self->buf, LEN, self->buf2,
			   self->mr2->rkey, 0, 0, 0));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0,
		       self->ini);
	EXPECT_TRUE(filled(self->buf2, LEN, 3));

	fill(self->buf2, LEN, 9);
	memset(self->buf, 0, LEN);
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_RDMA_READ, 2,
			   srqn(self->b), self->buf, LEN, self->buf2,
			   self->mr2->rkey, 0, 0, 0));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, LEN,
		       self->ini);
	EXPECT_TRUE(filled(self->buf, LEN, 9));

	*word = 40;
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_ATOMIC_FETCH_AND_ADD, 3,
			   srqn(self->b), self->buf, 8, word, self->mr2->rkey,
			   0, 2, 0));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8, self->ini);
	EXPECT_EQ(40u, *(uint64_t *)self->buf);
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_ATOMIC_CMP_AND_SWP, 4,
			   srqn(self->b), self->buf, 8, word, self->mr2->rkey,
			   0, 42, 7));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 4, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8, self->ini);
	EXPECT_EQ(42u, *(uint64_t *)self->buf);
	EXPECT_EQ(7u, *word);

	/* A WRITE with immediate consumes a receive of the SRQ named. */
	ASSERT_EQ(0, srq_recv(self->b, self->mr2, self->buf2 + LEN, 16, 0xb7));
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_RDMA_WRITE_WITH_IMM, 5,
			   srqn(self->b), self->buf, 4096, self->buf2,
			   self->mr2->rkey, 0x77, 0, 0));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 5, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0,
		       self->ini);
	wait_wc(self->cb, &wc);
	EXPECT_EQ(0xb7u, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc.opcode);
	EXPECT_EQ(4096u, wc.byte_len);
	EXPECT_EQ((unsigned int)IBV_WC_WITH_IMM, wc.wc_flags);
	EXPECT_EQ(htonl(0x77), wc.imm_data);
	EXPECT_EQ(self->tgt->qp_num, wc.qp_num);
	EXPECT_EQ(self->ini->qp_num, wc.src_qp);

	/* p2's MR through SRQ a (PD p): a remote access error. */
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_RDMA_WRITE, 6,
			   srqn(self->a), self->buf, 64, self->buf2,
			   self->mr2->rkey, 0, 0, 0));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 6, IBV_WC_REM_ACCESS_ERR, 0, 0, self->ini);
}

/* An SRQ number that names no SRQ, then one of another domain. */
TEST_F(xrc, bad_srqn)
{
	uint32_t bad[] = { 0xfffffe, 0 };
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = self->x,
	};
	struct ibv_wc wc;
	unsigned int i;

	bad[1] = srqn(self->sy);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ASSERT_EQ(0, srq_recv(self->sy, self->mr, self->buf + LEN, 64,
				      0xdead));
		ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_SEND, 10 + i,
				   bad[i], self->buf, 64, NULL, 0, 0, 0, 0));
		wait_wc(self->cs, &wc);
		EXPECT_SEND_WC(wc, 10 + i, IBV_WC_REM_INV_REQ_ERR, 0, 0,
			       self->ini);
		/* Both ends fail; new ones for the next round. */
		EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->tgt));
		EXPECT_EQ(0, ibv_poll_cq(self->ca, 1, &wc));
		ASSERT_EQ(0, ibv_destroy_qp(self->ini));
		self->ini = NULL;
		ASSERT_EQ(0, ibv_destroy_qp(self->tgt));
		self->tgt = ibv_create_qp_ex(self->ctx, &qa);
		ASSERT_NE(NULL, self->tgt);
		{
			struct ibv_qp_init_attr_ex ia = {
				.qp_type = IBV_QPT_XRC_SEND,
				.comp_mask = IBV_QP_INIT_ATTR_PD,
				.pd = self->p, .send_cq = self->cs,
				.cap = { .max_send_wr = 16, .max_send_sge = 1 },
			};

			self->ini = ibv_create_qp_ex(self->ctx, &ia);
			ASSERT_NE(NULL, self->ini);
		}
		ASSERT_EQ(0, tgt_up(self->tgt, self->ini->qp_num, self->gidx,
				    &self->gid));
		ASSERT_EQ(0, ini_up(self->ini, self->tgt->qp_num, self->gidx,
				    &self->gid));
	}
}

/* An SRQ destroyed: requests naming it fail, the others go on. */
TEST_F(xrc, srq_destroyed)
{
	uint32_t gone = srqn(self->b);
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_destroy_srq(self->b));
	self->b = NULL;
	ASSERT_EQ(0, srq_recv(self->a, self->mr, self->buf + LEN, 64, 0xa1));
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_SEND, 20, srqn(self->a),
			   self->buf, 64, NULL, 0, 0, 0, 0));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 20, IBV_WC_SUCCESS, IBV_WC_SEND, 0, self->ini);
	wait_wc(self->ca, &wc);
	EXPECT_XRECV_WC(wc, 0xa1, 64, 0, 0);
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_SEND, 21, gone,
			   self->buf, 64, NULL, 0, 0, 0, 0));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 21, IBV_WC_REM_INV_REQ_ERR, 0, 0, self->ini);
}

/*
 * The receive QP has no queue: post_send and post_recv are EINVAL. It
 * opens by number in its domain; the handle goes, the QP stays.
 */
TEST_F(xrc, recv_qp)
{
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = self->tgt->qp_num,
		.xrcd = self->x,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->buf, .length = 8,
		.lkey = self->mr->lkey,
	};
	struct ibv_send_wr swr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
	}, *sbad;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_qp *o;
	struct ibv_wc wc;

	EXPECT_EQ(EINVAL, ibv_post_send(self->tgt, &swr, &sbad));
	EXPECT_EQ(EINVAL, ibv_post_recv(self->tgt, &rwr, &rbad));
	EXPECT_EQ(EINVAL, ibv_post_recv(self->ini, &rwr, &rbad));
	o = ibv_open_qp(self->ctx, &oa);
	ASSERT_NE(NULL, o) TH_LOG("open_qp: %s", strerror(errno));
	EXPECT_EQ(self->tgt->qp_num, o->qp_num);
	EXPECT_EQ(0, ibv_destroy_qp(o));
	oa.xrcd = self->y;
	EXPECT_EQ(NULL, ibv_open_qp(self->ctx, &oa));
	/* Still answering. */
	ASSERT_EQ(0, srq_recv(self->a, self->mr, self->buf + LEN, 64, 0xa2));
	ASSERT_EQ(0, xpost(self->ini, self->mr, IBV_WR_SEND, 30, srqn(self->a),
			   self->buf, 64, NULL, 0, 0, 0, 0));
	wait_wc(self->cs, &wc);
	EXPECT_SEND_WC(wc, 30, IBV_WC_SUCCESS, IBV_WC_SEND, 0, self->ini);
	wait_wc(self->ca, &wc);
	EXPECT_XRECV_WC(wc, 0xa2, 64, 0, 0);
}

TEST_HARNESS_MAIN
