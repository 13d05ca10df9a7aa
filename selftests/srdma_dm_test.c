// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device memory (ibv_alloc_dm) on the device under test: two RC QPs of
 * one PD connected to each other, a (requester, CQ ca) and b (CQ cb).
 *
 * Checked: the size reported, allocation and its refusals (no length,
 * over the maximum, a comp_mask), copies to and from a DM and their
 * refusals (an offset or length not a multiple of 4: EINVAL; outside:
 * EFAULT), MRs of a DM (zero-based only, inside the DM, of no bytes too)
 * and the bytes WRITE, READ,
 * SEND and fetch and add move through them, with every field of every
 * completion, and that a DM with an MR cannot be freed (EBUSY).
 */
#include <stdint.h>
#include <stdio.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define DM_LEN		(64 * 1024)
#define ACCESS_QP	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)
#define ACCESS_DM	(IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | \
			 ACCESS_QP)

#define connect_to(qp, dqpn, gidx, gid) \
	srdma_test_connect_to(qp, dqpn, gidx, gid, ACCESS_QP)
#define fill srdma_test_fill
#define filled srdma_test_filled
/* One completion within about 5 s. */
#define wait_wc(cq, wc) srdma_test_wait_wc_for(cq, wc, 50000)

FIXTURE(dm) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *ca, *cb;
	struct ibv_qp *qa, *qb;
	struct ibv_dm *dm;
	struct ibv_mr *dmr;		/* ACCESS_DM over the whole DM */
	struct ibv_mr *hmr;		/* host buffer */
	unsigned char *host;
	union ibv_gid gid;
	int gidx;
	uint64_t max;
};

FIXTURE_SETUP(dm)
{
	struct ibv_alloc_dm_attr da = { .length = DM_LEN };
	struct ibv_device_attr_ex dx;

	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx);
	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &dx));
	self->max = dx.max_dm_size;
	if (!self->max)
		SRDMA_TEST_SETUP_SKIP("no device memory");
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->ca = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	self->cb = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->ca);
	ASSERT_NE(NULL, self->cb);
	self->qa = srdma_test_rc_qp(self->pd, self->ca, 16, 16, 1);
	self->qb = srdma_test_rc_qp(self->pd, self->cb, 16, 16, 1);
	ASSERT_NE(NULL, self->qa);
	ASSERT_NE(NULL, self->qb);
	ASSERT_EQ(0, connect_to(self->qa, self->qb->qp_num, self->gidx,
				&self->gid));
	ASSERT_EQ(0, connect_to(self->qb, self->qa->qp_num, self->gidx,
				&self->gid));
	self->dm = ibv_alloc_dm(self->ctx, &da);
	ASSERT_NE(NULL, self->dm) TH_LOG("alloc_dm: %s", strerror(errno));
	self->dmr = ibv_reg_dm_mr(self->pd, self->dm, 0, DM_LEN, ACCESS_DM);
	ASSERT_NE(NULL, self->dmr) TH_LOG("reg_dm_mr: %s", strerror(errno));
	self->host = aligned_alloc(4096, DM_LEN);
	ASSERT_NE(NULL, self->host);
	memset(self->host, 0, DM_LEN);
	self->hmr = ibv_reg_mr(self->pd, self->host, DM_LEN,
			       IBV_ACCESS_LOCAL_WRITE | ACCESS_QP);
	ASSERT_NE(NULL, self->hmr);
}

FIXTURE_TEARDOWN(dm)
{
	if (self->qa)
		ibv_destroy_qp(self->qa);
	if (self->qb)
		ibv_destroy_qp(self->qb);
	if (self->hmr)
		ibv_dereg_mr(self->hmr);
	if (self->dmr)
		ibv_dereg_mr(self->dmr);
	if (self->dm)
		ibv_free_dm(self->dm);
	if (self->ca)
		ibv_destroy_cq(self->ca);
	if (self->cb)
		ibv_destroy_cq(self->cb);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->host);
}

/* Fetch and add adds 3. */
#define post(qp, op, id, lmr, local, len, rmr, remote) \
	srdma_test_post_mr(qp, op, id, lmr, local, len, rmr, remote, 3)

#define EXPECT_REQ_WC(id, op, len) do {					\
	struct ibv_wc __w;						\
									\
	wait_wc(self->ca, &__w);					\
	EXPECT_SEND_WC(__w, id, IBV_WC_SUCCESS, op, len, self->qa);	\
} while (0)

TEST_F(dm, alloc)
{
	struct ibv_alloc_dm_attr da = { .length = 0 };
	struct ibv_dm *dm;

	EXPECT_EQ(1024 * 1024, self->max);
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->ctx, &da));
	EXPECT_EQ(EINVAL, errno);
	da.length = self->max + 1;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->ctx, &da));
	EXPECT_EQ(EINVAL, errno);
	da.length = 4096;
	da.comp_mask = 1;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->ctx, &da));
	EXPECT_EQ(EINVAL, errno);
	/* The largest, log2 alignment 6: zeroed. */
	da.length = self->max;
	da.comp_mask = 0;
	da.log_align_req = 6;
	dm = ibv_alloc_dm(self->ctx, &da);
	ASSERT_NE(NULL, dm) TH_LOG("alloc_dm: %s", strerror(errno));
	ASSERT_EQ(0, ibv_memcpy_from_dm(self->host, dm, self->max - 4096,
					4096));
	EXPECT_EQ(0, self->host[0]);
	EXPECT_EQ(0, memcmp(self->host, self->host + 1, 4095));
	EXPECT_EQ(0, ibv_free_dm(dm));
}

TEST_F(dm, copy)
{
	unsigned char buf[256];

	fill(self->host, 4096, 1);
	ASSERT_EQ(0, ibv_memcpy_to_dm(self->dm, 8192, self->host, 4096));
	ASSERT_EQ(0, ibv_memcpy_from_dm(self->host + 4096, self->dm, 8192,
					4096));
	EXPECT_TRUE(filled(self->host + 4096, 4096, 1));
	/* An offset not a multiple of 4; a range past the end. */
	EXPECT_EQ(EINVAL, ibv_memcpy_to_dm(self->dm, 2, buf, 16));
	EXPECT_EQ(EINVAL, ibv_memcpy_from_dm(buf, self->dm, 1, 16));
	EXPECT_EQ(EINVAL, ibv_memcpy_to_dm(self->dm, 4, buf, 1));
	EXPECT_EQ(EINVAL, ibv_memcpy_from_dm(buf, self->dm, 4, 6));
	EXPECT_EQ(EFAULT, ibv_memcpy_to_dm(self->dm, DM_LEN - 8, buf, 16));
	EXPECT_EQ(EFAULT, ibv_memcpy_from_dm(buf, self->dm, DM_LEN + 4, 4));
}

TEST_F(dm, mr_refused)
{
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->pd, self->dm, 0, 4096,
				      IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->pd, self->dm, DM_LEN - 4096,
				      8192, ACCESS_DM));
	EXPECT_EQ(EINVAL, errno);
	/* An MR of no bytes: allowed, and nothing is reachable through it. */
	{
		struct ibv_mr *none = ibv_reg_dm_mr(self->pd, self->dm, 4096,
						    0, ACCESS_DM);

		ASSERT_NE(NULL, none) TH_LOG("%s", strerror(errno));
		EXPECT_EQ(0, ibv_dereg_mr(none));
		/* At the very end of the DM too. */
		none = ibv_reg_dm_mr(self->pd, self->dm, DM_LEN, 0, ACCESS_DM);
		ASSERT_NE(NULL, none) TH_LOG("%s", strerror(errno));
		EXPECT_EQ(0, ibv_dereg_mr(none));
	}
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->pd, self->dm, 0, 4096,
				      ACCESS_DM | IBV_ACCESS_ON_DEMAND));
	EXPECT_EQ(EOPNOTSUPP, errno);
	/* With an MR of it, the DM stays. */
	EXPECT_EQ(EBUSY, ibv_free_dm(self->dm));
}

/* WRITE into the DM, READ it back out, at offsets, through its MR. */
TEST_F(dm, write_read)
{
	struct ibv_mr *part;

	fill(self->host, 20000, 9);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 1, self->hmr,
			  (uintptr_t)self->host, 20000, self->dmr, 1000));
	EXPECT_REQ_WC(1, IBV_WC_RDMA_WRITE, 0);
	memset(self->host + 32768, 0, 20000);
	ASSERT_EQ(0, ibv_memcpy_from_dm(self->host + 32768, self->dm, 1000,
					20000));
	EXPECT_TRUE(filled(self->host + 32768, 20000, 9));

	/* An MR of part of the DM: its iova 0 is the DM's byte 4096. */
	part = ibv_reg_dm_mr(self->pd, self->dm, 4096, 8192, ACCESS_DM);
	ASSERT_NE(NULL, part);
	memset(self->host + 32768, 0, 8192);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 2, self->hmr,
			  (uintptr_t)self->host + 32768, 8192, part, 0));
	EXPECT_REQ_WC(2, IBV_WC_RDMA_READ, 8192);
	EXPECT_EQ(0, memcmp(self->host + 32768, self->host + 3096, 8192));
	/* Past the part's end: a remote access error. */
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 3, self->hmr,
			  (uintptr_t)self->host, 16, part, 8190));
	{
		struct ibv_wc wc;

		wait_wc(self->ca, &wc);
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
		EXPECT_EQ(3, wc.wr_id);
	}
	EXPECT_EQ(0, ibv_dereg_mr(part));
}

/* SEND from the DM; fetch and add on a word of it. */
TEST_F(dm, send_atomic)
{
	struct ibv_wc wc;
	uint64_t v = 40;

	fill(self->host, 3000, 5);
	ASSERT_EQ(0, ibv_memcpy_to_dm(self->dm, 100, self->host, 3000));
	memset(self->host, 0, 8192);
	ASSERT_EQ(0, srdma_test_post_recv(self->qb, self->hmr, self->host,
					  8192, 0x55));
	ASSERT_EQ(0, post(self->qa, IBV_WR_SEND, 4, self->dmr, 100, 3000,
			  NULL, 0));
	EXPECT_REQ_WC(4, IBV_WC_SEND, 0);
	wait_wc(self->cb, &wc);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x55, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(3000, wc.byte_len);
	EXPECT_EQ(0, wc.wc_flags);
	EXPECT_EQ(self->qb->qp_num, wc.qp_num);
	EXPECT_EQ(self->qa->qp_num, wc.src_qp);
	EXPECT_TRUE(filled(self->host, 3000, 5));

	ASSERT_EQ(0, ibv_memcpy_to_dm(self->dm, 512, &v, 8));
	ASSERT_EQ(0, post(self->qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, self->hmr,
			  (uintptr_t)self->host + 4096, 8, self->dmr, 512));
	EXPECT_REQ_WC(5, IBV_WC_FETCH_ADD, 8);
	memcpy(&v, self->host + 4096, 8);
	EXPECT_EQ(40, v);
	ASSERT_EQ(0, ibv_memcpy_from_dm(&v, self->dm, 512, 8));
	EXPECT_EQ(43, v);
}

TEST_HARNESS_MAIN
