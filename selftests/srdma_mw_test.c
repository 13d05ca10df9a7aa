// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory windows on the device under test: type 1 (ibv_bind_mw) and type
 * 2B (IBV_WR_BIND_MW, ibv_wr_bind_mw), between two pairs of connected RC
 * QPs of one PD: a to b, c to d; windows are bound through b. Checked: the bytes a WRITE through a window places, what a
 * READ and a fetch-and-add through it find, every field of every
 * completion, the keys, and every refusal: the old key after a rebind,
 * a range outside the window, a right the window lacks, a type 2 window
 * used or remotely invalidated through another QP, a window invalidated
 * (locally, by SEND with Invalidate) or deallocated, an MR that cannot
 * take windows, a type 2 window bound twice, deregistering an MR with a
 * window bound (EBUSY), and the counters; a window over 4 GiB. Also
 * ibv_rereg_mr(): new rights, range and PD under the same keys.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define BUF		65536
#define WIN_OFF		4096		/* the window: [buf + 4096, +8192) */
#define WIN_LEN		8192
#define ACCESS_QP	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)
#define ACCESS_MR	(IBV_ACCESS_LOCAL_WRITE | ACCESS_QP | IBV_ACCESS_MW_BIND)

/* RESET -> RTS, connected to QP @dqpn, with every remote right. */
#define connect_to(qp, dqpn, gidx, gid) \
	srdma_test_connect_to(qp, dqpn, gidx, gid, ACCESS_QP)
/* One completion within about 2 s. */
#define wait_wc(cq, wc) srdma_test_wait_wc_for(cq, wc, 20000)

FIXTURE(mw) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;		/* ACCESS_MR over buf */
	struct ibv_mr *lmr;		/* local buffer: sources, results */
	struct ibv_qp *qa, *qb;		/* a pair: windows bound through b */
	struct ibv_qp *qc, *qd;		/* another pair */
	struct ibv_mw *mw;
	char *buf;
	char *lbuf;
	union ibv_gid gid;
	int gidx;
};

/* Two new RC QPs of the PD, connected to each other. */
static int make_pair(FIXTURE_DATA(mw) *self, struct ibv_qp **x,
		     struct ibv_qp **y)
{
	*x = srdma_test_rc_qp(self->pd, self->cq, 16, 16, 1);
	*y = srdma_test_rc_qp(self->pd, self->cq, 16, 16, 1);
	if (!*x || !*y)
		return -1;
	return connect_to(*x, (*y)->qp_num, self->gidx, &self->gid) ||
	       connect_to(*y, (*x)->qp_num, self->gidx, &self->gid) ? -1 : 0;
}

FIXTURE_SETUP(mw)
{
	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx);
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	self->buf = aligned_alloc(4096, BUF);
	self->lbuf = aligned_alloc(4096, BUF);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->lbuf);
	memset(self->buf, 0, BUF);
	memset(self->lbuf, 0, BUF);
	self->mr = ibv_reg_mr(self->pd, self->buf, BUF, ACCESS_MR);
	ASSERT_NE(NULL, self->mr) TH_LOG("reg_mr with MW_BIND: %s",
					 strerror(errno));
	self->lmr = ibv_reg_mr(self->pd, self->lbuf, BUF,
			       IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, self->lmr);
	ASSERT_EQ(0, make_pair(self, &self->qa, &self->qb));
	ASSERT_EQ(0, make_pair(self, &self->qc, &self->qd));
}

FIXTURE_TEARDOWN(mw)
{
	struct ibv_qp *qps[] = { self->qa, self->qb, self->qc, self->qd };
	unsigned int i;

	for (i = 0; i < 4; i++)
		if (qps[i])
			ibv_destroy_qp(qps[i]);
	if (self->mw)
		ibv_dealloc_mw(self->mw);
	if (self->lmr)
		ibv_dereg_mr(self->lmr);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->buf);
	free(self->lbuf);
}

static int post_bind(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
		     struct ibv_mr *mr, void *addr, uint64_t len,
		     unsigned int access, uint64_t id)
{
	struct ibv_send_wr wr = {
		.wr_id = id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return ibv_post_send(qp, &wr, &bad);
}

/* Post @op with one SGE of @len bytes at lbuf + @loff. */
static int post_op(FIXTURE_DATA(mw) *self, struct ibv_qp *qp,
		   enum ibv_wr_opcode op, uint32_t loff, uint32_t len,
		   uint32_t rkey, void *remote, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->lbuf + loff,
		.length = len,
		.lkey = self->lmr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)remote;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
	} else if (op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV) {
		wr.invalidate_rkey = rkey;
		if (op == IBV_WR_LOCAL_INV)
			wr.num_sge = 0;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)remote;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(FIXTURE_DATA(mw) *self, struct ibv_qp *qp,
		     uint32_t loff, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->lbuf + loff,
		.length = len,
		.lkey = self->lmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* Bind a new type 2 window over the window range through b; its key. */
static uint32_t bind2(struct __test_metadata *_metadata,
		      FIXTURE_DATA(mw) *self, unsigned int access)
{
	struct ibv_wc wc;
	uint32_t key;

	self->mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	if (!self->mw)
		return 0;
	key = ibv_inc_rkey(self->mw->rkey);
	if (post_bind(self->qb, self->mw, key, self->mr,
		      self->buf + WIN_OFF, WIN_LEN, access, 0xb1))
		return 0;
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 0xb1, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0, self->qb);
	return wc.status == IBV_WC_SUCCESS ? key : 0;
}

/* A WRITE of lbuf's first 64 bytes to @remote with @rkey: its status. */
static enum ibv_wc_status write_status(struct __test_metadata *_metadata,
				       FIXTURE_DATA(mw) *self,
				       struct ibv_qp *qp, uint32_t rkey,
				       void *remote)
{
	struct ibv_wc wc;

	EXPECT_EQ(0, post_op(self, qp, IBV_WR_RDMA_WRITE, 0, 64, rkey,
			     remote, 0x77));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 0x77, wc.status, IBV_WC_RDMA_WRITE, 0, qp);
	return wc.status;
}

TEST_F(mw, alloc_types)
{
	struct ibv_mw *mw;

	mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	ASSERT_NE(NULL, mw) TH_LOG("type 1: %s", strerror(errno));
	EXPECT_EQ(IBV_MW_TYPE_1, mw->type);
	EXPECT_NE(self->mr->rkey >> 8, mw->rkey >> 8);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, mw) TH_LOG("type 2: %s", strerror(errno));
	EXPECT_EQ(IBV_MW_TYPE_2, mw->type);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	errno = 0;
	mw = ibv_alloc_mw(self->pd, (enum ibv_mw_type)3);
	EXPECT_EQ(NULL, mw);
	EXPECT_NE(0, errno);
	if (mw)
		ibv_dealloc_mw(mw);
}

TEST_F(mw, type2_write_read_atomic)
{
	long long binds = srdma_test_counter("mw_bind");
	uint32_t key = bind2(_metadata, self, ACCESS_QP);
	char *win = self->buf + WIN_OFF;
	struct ibv_wc wc;
	int i;

	ASSERT_NE(0u, key);
	EXPECT_EQ(binds + 1, srdma_test_counter("mw_bind"));
	for (i = 0; i < 4096; i++)
		self->lbuf[i] = (char)(i * 7 + 1);
	/* 4 KiB to the window's end: four packets at MTU 1024. */
	ASSERT_EQ(0, post_op(self, self->qa, IBV_WR_RDMA_WRITE, 0, 4096, key,
			     win + WIN_LEN - 4096, 1));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, self->qa);
	EXPECT_EQ(0, memcmp(win + WIN_LEN - 4096, self->lbuf, 4096));
	EXPECT_EQ(0, self->buf[WIN_OFF + WIN_LEN]);	/* nothing past it */
	/* READ it back through the window. */
	ASSERT_EQ(0, post_op(self, self->qa, IBV_WR_RDMA_READ, 8192, 4096,
			     key, win + WIN_LEN - 4096, 2));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 4096,
		       self->qa);
	EXPECT_EQ(0, memcmp(self->lbuf + 8192, self->lbuf, 4096));
	/* Fetch and add 5 on the window's first word. */
	*(uint64_t *)win = 100;
	ASSERT_EQ(0, post_op(self, self->qa, IBV_WR_ATOMIC_FETCH_AND_ADD,
			     16384, 8, key, win, 3));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8, self->qa);
	EXPECT_EQ(100u, *(uint64_t *)(self->lbuf + 16384));
	EXPECT_EQ(105u, *(uint64_t *)win);
	/* The MR cannot go while the window is bound; then it can. */
	EXPECT_EQ(EBUSY, ibv_dereg_mr(self->mr));
	EXPECT_EQ(0, ibv_dealloc_mw(self->mw));
	self->mw = NULL;
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
}

TEST_F(mw, type2_old_key)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);
	long long errs = srdma_test_counter("remote_access_errors");

	ASSERT_NE(0u, key);
	/* The key from before the bind names no binding. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, self->mw->rkey,
			       self->buf + WIN_OFF));
	EXPECT_EQ(errs + 1, srdma_test_counter("remote_access_errors"));
	EXPECT_EQ(0, self->buf[WIN_OFF]);
}

TEST_F(mw, type2_other_qp)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);

	ASSERT_NE(0u, key);
	/* c to d: a type 2 window serves only b, the QP that bound it. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qc, key,
			       self->buf + WIN_OFF));
	EXPECT_EQ(0, self->buf[WIN_OFF]);
	/* a to b: it does serve b. */
	memset(self->lbuf, 0x21, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, key,
			       self->buf + WIN_OFF));
	EXPECT_EQ(0, memcmp(self->buf + WIN_OFF, self->lbuf, 64));
}

TEST_F(mw, type2_outside)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);

	ASSERT_NE(0u, key);
	/* 64 bytes that end 1 byte past the window, inside the MR. */
	memset(self->lbuf, 0x22, 64);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, key,
			       self->buf + WIN_OFF + WIN_LEN - 63));
	EXPECT_EQ(0, self->buf[WIN_OFF + WIN_LEN - 63]);
}

TEST_F(mw, type2_missing_right)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);
	struct ibv_wc wc;

	ASSERT_NE(0u, key);
	/* The MR may be read (c to d, by its own key)... */
	ASSERT_EQ(0, post_op(self, self->qc, IBV_WR_RDMA_READ, 0, 64,
			     self->mr->rkey, self->buf, 9));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 9, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 64,
		       self->qc);
	/* ...the window, bound without the right, may not. */
	ASSERT_EQ(0, post_op(self, self->qa, IBV_WR_RDMA_READ, 0, 64, key,
			     self->buf + WIN_OFF, 10));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 10, IBV_WC_REM_ACCESS_ERR, 0, 0, self->qa);
}

TEST_F(mw, type2_local_invalidate)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);
	long long inv = srdma_test_counter("local_invalidate");
	char *win = self->buf + WIN_OFF;
	struct ibv_wc wc;

	ASSERT_NE(0u, key);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, key, win));
	ASSERT_EQ(0, post_op(self, self->qb, IBV_WR_LOCAL_INV, 0, 0, key,
			     NULL, 4));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 4, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, 0, self->qb);
	EXPECT_EQ(inv + 1, srdma_test_counter("local_invalidate"));
	/* Invalidated: the MR is free to go, the key gives nothing. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, key, win));
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
}

TEST_F(mw, type2_bind_twice)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);
	struct ibv_wc wc;

	ASSERT_NE(0u, key);
	/* Bound: a second bind is refused, and b fails. */
	ASSERT_EQ(0, post_bind(self->qb, self->mw, ibv_inc_rkey(key),
			       self->mr, self->buf, 64,
			       IBV_ACCESS_REMOTE_WRITE, 5));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 5, IBV_WC_MW_BIND_ERR, 0, 0, self->qb);
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qb));
	/* Destroying b leaves the window bound to the MR. */
	EXPECT_EQ(0, ibv_destroy_qp(self->qb));
	self->qb = NULL;
	EXPECT_EQ(EBUSY, ibv_dereg_mr(self->mr));
}

TEST_F(mw, type2_remote_invalidate)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);
	long long rinv = srdma_test_counter("remote_invalidate");
	struct ibv_wc wc;
	int i;

	ASSERT_NE(0u, key);
	ASSERT_EQ(0, post_recv(self, self->qb, 1024, 64, 20));
	memset(self->lbuf, 0x5a, 32);
	ASSERT_EQ(0, post_op(self, self->qa, IBV_WR_SEND_WITH_INV, 0, 32, key,
			     NULL, 21));
	for (i = 0; i < 2; i++) {
		wait_wc(self->cq, &wc);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("wr %llu: %s", (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
		if (wc.wr_id == 20) {
			EXPECT_EQ(IBV_WC_RECV, wc.opcode);
			EXPECT_EQ(32u, wc.byte_len);
			EXPECT_EQ(IBV_WC_WITH_INV, wc.wc_flags);
			EXPECT_EQ(key, wc.invalidated_rkey);
			EXPECT_EQ(self->qb->qp_num, wc.qp_num);
			EXPECT_EQ(self->qa->qp_num, wc.src_qp);
		} else {
			EXPECT_SEND_WC(wc, 21, IBV_WC_SUCCESS, IBV_WC_SEND, 0,
				       self->qa);
		}
	}
	EXPECT_EQ(0, memcmp(self->lbuf + 1024, self->lbuf, 32));
	EXPECT_EQ(rinv + 1, srdma_test_counter("remote_invalidate"));
	memset(self->lbuf, 0x23, 64);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, key,
			       self->buf + WIN_OFF));
	EXPECT_EQ(0, self->buf[WIN_OFF]);
}

TEST_F(mw, type2_remote_invalidate_other_qp)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);
	long long rerr = srdma_test_counter("remote_invalidate_errors");
	struct ibv_wc wc;
	int i, send_err = 0, recv_err = 0;

	ASSERT_NE(0u, key);
	/* d may not invalidate b's window: c's SEND fails, d's receive too. */
	ASSERT_EQ(0, post_recv(self, self->qd, 1024, 64, 30));
	ASSERT_EQ(0, post_op(self, self->qc, IBV_WR_SEND_WITH_INV, 0, 32,
			     key, NULL, 31));
	for (i = 0; i < 2; i++) {
		wait_wc(self->cq, &wc);
		if (wc.wr_id == 31) {
			send_err++;
			EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status)
				TH_LOG("send: %s", ibv_wc_status_str(wc.status));
			EXPECT_EQ(self->qc->qp_num, wc.qp_num);
		} else {
			recv_err++;
			EXPECT_EQ(30u, wc.wr_id);
			EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status)
				TH_LOG("recv: %s", ibv_wc_status_str(wc.status));
			EXPECT_EQ(self->qd->qp_num, wc.qp_num);
		}
	}
	EXPECT_EQ(1, send_err);
	EXPECT_EQ(1, recv_err);
	EXPECT_EQ(rerr + 1, srdma_test_counter("remote_invalidate_errors"));
	/* The window is still bound and serves b. */
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, key,
			       self->buf + WIN_OFF));
}

TEST_F(mw, type2_dealloc_while_bound)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);

	ASSERT_NE(0u, key);
	EXPECT_EQ(0, ibv_dealloc_mw(self->mw));
	self->mw = NULL;
	memset(self->lbuf, 0x24, 64);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, key,
			       self->buf + WIN_OFF));
	EXPECT_EQ(0, self->buf[WIN_OFF]);
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
}

/*
 * A window of 4 GiB and more (the device's max_mr_size is 2^40): one
 * over a 4 GiB + 16 MiB MR, whose memory is one 16 MiB memfd mapped 257
 * times in a row (a guest without that much RAM can register it). A
 * WRITE through the window 4 GiB + 3 pages in lands in the memfd at that
 * offset modulo 16 MiB;
 * a READ of the window's last 64 bytes finds what its first mapping
 * holds there. A driver that took windows of 32-bit lengths only refused
 * the bind (MW_BIND_ERR).
 */
#define BIG_PIECE	(16ull << 20)
#define BIG_LEN		((4ull << 30) + BIG_PIECE)
/* Pinning a million pages takes minutes on the debug kernel. */
TEST_F_TIMEOUT(mw, type2_over_4g, 600)
{
	uint64_t off = (4ull << 30) + 12288, i;	/* 4 GiB + 3 pages */
	struct ibv_mr *big;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t key;
	char *va, *p;
	int fd;

	fd = memfd_create("srdma_mw_big", 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, BIG_PIECE));
	va = mmap(NULL, BIG_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		  MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, va);
	for (i = 0; i < BIG_LEN / BIG_PIECE; i++) {
		p = mmap(va + i * BIG_PIECE, BIG_PIECE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0);
		ASSERT_EQ(va + i * BIG_PIECE, p);
	}
	memset(va, 0, BIG_PIECE);
	big = ibv_reg_mr(self->pd, va, BIG_LEN, ACCESS_MR);
	ASSERT_NE(NULL, big) TH_LOG("reg_mr of 4 GiB + 16 MiB: %s",
				    strerror(errno));
	mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, mw);
	key = ibv_inc_rkey(mw->rkey);
	ASSERT_EQ(0, post_bind(self->qb, mw, key, big, va, BIG_LEN,
			       ACCESS_QP, 0xb4));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 0xb4, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0, self->qb);
	for (i = 0; i < 64; i++)
		self->lbuf[i] = (char)(i * 5 + 3);
	ASSERT_EQ(0, post_op(self, self->qa, IBV_WR_RDMA_WRITE, 0, 64, key,
			     va + off, 1));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, self->qa);
	EXPECT_EQ(0, memcmp(va + off % BIG_PIECE, self->lbuf, 64));
	/* The window's last 64 bytes: the first mapping's last 64. */
	memset(va + BIG_PIECE - 64, 0x5c, 64);
	ASSERT_EQ(0, post_op(self, self->qa, IBV_WR_RDMA_READ, 4096, 64, key,
			     va + BIG_LEN - 64, 2));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 64, self->qa);
	EXPECT_EQ(0, memcmp(self->lbuf + 4096, va + BIG_PIECE - 64, 64));
	/* 64 bytes that end one byte past the window (and the MR). */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, key,
			       va + BIG_LEN - 63));
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dereg_mr(big));
	munmap(va, BIG_LEN);
	close(fd);
}

TEST_F(mw, bind_refused)
{
	long long errs = srdma_test_counter("mw_bind_errors");
	struct ibv_mr *nobind;
	struct ibv_wc wc;
	uint32_t key;

	self->mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, self->mw);
	key = ibv_inc_rkey(self->mw->rkey);
	/* Zero-based windows: refused at post. */
	EXPECT_EQ(EINVAL, post_bind(self->qb, self->mw, key, self->mr,
				    self->buf, 64, IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_ZERO_BASED, 40));
	/* An MR registered without MW_BIND: the bind fails. */
	nobind = ibv_reg_mr(self->pd, self->lbuf + 32768, 4096,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, nobind);
	ASSERT_EQ(0, post_bind(self->qb, self->mw, key, nobind,
			       self->lbuf + 32768, 64,
			       IBV_ACCESS_REMOTE_WRITE, 41));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 41, IBV_WC_MW_BIND_ERR, 0, 0, self->qb);
	EXPECT_EQ(errs + 1, srdma_test_counter("mw_bind_errors"));
	EXPECT_EQ(0, ibv_dereg_mr(nobind));
	/* A range past the MR's end, through d. */
	ASSERT_EQ(0, post_bind(self->qd, self->mw, key, self->mr,
			       self->buf + BUF - 32, 64,
			       IBV_ACCESS_REMOTE_WRITE, 42));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 42, IBV_WC_MW_BIND_ERR, 0, 0, self->qd);
	EXPECT_EQ(errs + 2, srdma_test_counter("mw_bind_errors"));
	/* Nothing bound: the MR goes. */
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
}

TEST_F(mw, bind_remote_write_needs_local_write)
{
	struct ibv_mr *ro;
	struct ibv_wc wc;

	self->mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, self->mw);
	ro = ibv_reg_mr(self->pd, self->lbuf + 32768, 4096,
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, post_bind(self->qb, self->mw,
			       ibv_inc_rkey(self->mw->rkey), ro,
			       self->lbuf + 32768, 64,
			       IBV_ACCESS_REMOTE_WRITE, 43));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 43, IBV_WC_MW_BIND_ERR, 0, 0, self->qb);
	EXPECT_EQ(0, ibv_dereg_mr(ro));
}

TEST_F(mw, type1_bind_rebind_unbind)
{
	struct ibv_mw_bind bind = {
		.wr_id = 50,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {
			.mr = self->mr,
			.addr = (uintptr_t)self->buf + WIN_OFF,
			.length = WIN_LEN,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
		},
	};
	char *win = self->buf + WIN_OFF;
	uint32_t k0, k1, k2;
	struct ibv_wc wc;

	self->mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	ASSERT_NE(NULL, self->mw);
	k0 = self->mw->rkey;
	/* Before any bind, the window gives nothing (c fails). */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qc, k0, win));
	ASSERT_EQ(0, ibv_bind_mw(self->qb, self->mw, &bind));
	k1 = self->mw->rkey;
	EXPECT_EQ(ibv_inc_rkey(k0), k1);
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 50, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0, self->qb);
	memset(self->lbuf, 0x3c, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, k1, win));
	EXPECT_EQ(0, memcmp(win, self->lbuf, 64));
	/* Rebind to the window's second half: the old key is dead. */
	bind.wr_id = 51;
	bind.bind_info.addr += WIN_LEN / 2;
	bind.bind_info.length = WIN_LEN / 2;
	ASSERT_EQ(0, ibv_bind_mw(self->qb, self->mw, &bind));
	k2 = self->mw->rkey;
	EXPECT_EQ(ibv_inc_rkey(k1), k2);
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 51, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0, self->qb);
	memset(self->lbuf, 0x4d, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, k2,
			       win + WIN_LEN / 2));
	EXPECT_EQ(0, memcmp(win + WIN_LEN / 2, self->lbuf, 64));
	/* A type 1 window cannot be invalidated by LOCAL_INV: b fails. */
	ASSERT_EQ(0, post_op(self, self->qb, IBV_WR_LOCAL_INV, 0, 0, k2, NULL,
			     52));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 52, IBV_WC_LOC_QP_OP_ERR, 0, 0, self->qb);
	/* Still bound (a works on, b's peer); unbind through a. */
	EXPECT_EQ(EBUSY, ibv_dereg_mr(self->mr));
	bind.wr_id = 53;
	bind.bind_info.mr = NULL;
	bind.bind_info.addr = 0;
	bind.bind_info.length = 0;
	ASSERT_EQ(0, ibv_bind_mw(self->qa, self->mw, &bind));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 53, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0, self->qa);
	/* Unbound: the MR goes, with the window still allocated. */
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
}

TEST_F(mw, type1_any_qp)
{
	struct ibv_mw_bind bind = {
		.wr_id = 60,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {
			.mr = self->mr,
			.addr = (uintptr_t)self->buf,
			.length = 128,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
		},
	};
	struct ibv_wc wc;

	self->mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	ASSERT_NE(NULL, self->mw);
	ASSERT_EQ(0, ibv_bind_mw(self->qb, self->mw, &bind));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 60, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0, self->qb);
	/* Bound through b, it serves d too. */
	memset(self->lbuf, 0x61, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qc, self->mw->rkey,
			       self->buf + 64));
	EXPECT_EQ(0, memcmp(self->buf + 64, self->lbuf, 64));
	/* A type 1 window through the type 2 work request: refused. */
	EXPECT_EQ(EINVAL, post_bind(self->qb, self->mw,
				    ibv_inc_rkey(self->mw->rkey), self->mr,
				    self->buf, 64, IBV_ACCESS_REMOTE_WRITE,
				    61));
}

TEST_F(mw, qp_ex_bind_and_invalidate)
{
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = self->cq,
		.recv_cq = self->cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = self->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_BIND_MW |
				  IBV_QP_EX_WITH_LOCAL_INV,
	};
	/* Local write in a window's rights is ignored (pyverbs does it). */
	struct ibv_mw_bind_info info = {
		.mr = self->mr,
		.addr = (uintptr_t)self->buf + WIN_OFF,
		.length = WIN_LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_LOCAL_WRITE,
	};
	struct ibv_qp *qx, *peer;
	struct ibv_qp_ex *qpx;
	struct ibv_wc wc;
	uint32_t key;

	qx = ibv_create_qp_ex(self->ctx, &init);
	ASSERT_NE(NULL, qx) TH_LOG("create_qp_ex: %s", strerror(errno));
	peer = srdma_test_rc_qp(self->pd, self->cq, 16, 16, 1);
	ASSERT_NE(NULL, peer);
	ASSERT_EQ(0, connect_to(qx, peer->qp_num, self->gidx, &self->gid));
	ASSERT_EQ(0, connect_to(peer, qx->qp_num, self->gidx, &self->gid));
	qpx = ibv_qp_to_qp_ex(qx);
	self->mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, self->mw);
	key = ibv_inc_rkey(self->mw->rkey);
	ibv_wr_start(qpx);
	qpx->wr_id = 70;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qpx, self->mw, key, &info);
	ASSERT_EQ(0, ibv_wr_complete(qpx));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 70, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0, qx);
	memset(self->lbuf, 0x70, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, peer, key,
			       self->buf + WIN_OFF));
	EXPECT_EQ(0, memcmp(self->buf + WIN_OFF, self->lbuf, 64));
	ibv_wr_start(qpx);
	qpx->wr_id = 71;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(qpx, key);
	ASSERT_EQ(0, ibv_wr_complete(qpx));
	wait_wc(self->cq, &wc);
	EXPECT_SEND_WC(wc, 71, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, 0, qx);
	memset(self->lbuf, 0x71, 64);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, peer, key,
			       self->buf + WIN_OFF));
	EXPECT_EQ(0x70, self->buf[WIN_OFF]);
	EXPECT_EQ(0, ibv_destroy_qp(peer));
	EXPECT_EQ(0, ibv_destroy_qp(qx));
}

TEST_F(mw, provider_refusals)
{
	struct ibv_mw *other = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = self->cq,
		.recv_cq = self->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = self->pd,
		.send_ops_flags = IBV_QP_EX_WITH_LOCAL_INV |
				  IBV_QP_EX_WITH_BIND_MW,
	};
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qx;
	struct ibv_wc wc;

	ASSERT_NE(NULL, other);
	self->mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, self->mw);
	/* A key of another window. */
	EXPECT_EQ(EINVAL, post_bind(self->qb, self->mw,
				    ibv_inc_rkey(other->rkey), self->mr,
				    self->buf, 64, IBV_ACCESS_REMOTE_WRITE, 1));
	EXPECT_EQ(0, ibv_dealloc_mw(other));
	/* No SGEs or inline data on a local operation (ibv_qp_ex). */
	qx = ibv_create_qp_ex(self->ctx, &init);
	ASSERT_NE(NULL, qx);
	ASSERT_EQ(0, connect_to(qx, self->qa->qp_num, self->gidx, &self->gid));
	qpx = ibv_qp_to_qp_ex(qx);
	ibv_wr_start(qpx);
	qpx->wr_id = 3;
	ibv_wr_local_inv(qpx, self->mw->rkey);
	ibv_wr_set_sge(qpx, self->lmr->lkey, (uintptr_t)self->lbuf, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(qpx));
	ibv_wr_start(qpx);
	qpx->wr_id = 4;
	ibv_wr_local_inv(qpx, self->mw->rkey);
	ibv_wr_set_inline_data(qpx, self->lbuf, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(qpx));
	/* Nothing was posted; the QP still works. */
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qx));
	EXPECT_EQ(0, ibv_destroy_qp(qx));
}

/*
 * A process that exits with a window bound to an MR it registered after
 * the window: the core's clean-up meets EBUSY on the MR first and must
 * retry after the window, without a warning.
 */
TEST_F(mw, exit_with_window_bound)
{
	int kmsg = srdma_test_kmsg_open();
	pid_t pid;
	int status;

	ASSERT_LE(0, kmsg);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* A context of its own, closed by the exit. */
		struct ibv_context *ctx = srdma_test_open();
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) :
				    NULL;
		struct ibv_qp *qp = cq ? srdma_test_rc_qp(pd, cq, 4, 4, 1) :
				    NULL;
		struct ibv_mw *mw = pd ? ibv_alloc_mw(pd, IBV_MW_TYPE_1) :
				    NULL;
		struct ibv_mr *mr = pd ? ibv_reg_mr(pd, self->lbuf + 32768,
						    4096, ACCESS_MR) : NULL;
		struct ibv_mw_bind bind = {
			.wr_id = 1,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_info = {
				.mr = mr,
				.addr = (uintptr_t)self->lbuf + 32768,
				.length = 4096,
				.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
			},
		};
		struct ibv_wc wc;

		if (!qp || !mw || !mr ||
		    connect_to(qp, qp->qp_num, self->gidx, &self->gid) ||
		    ibv_bind_mw(qp, mw, &bind))
			_exit(2);
		wait_wc(cq, &wc);
		_exit(wc.status == IBV_WC_SUCCESS &&
		      ibv_dereg_mr(mr) == EBUSY ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The clean-up is done by the time the process is reaped. */
	memset(self->lbuf, 0x7e, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, self->mr->rkey,
			       self->buf));
	EXPECT_EQ(0x7e, self->buf[0]);
	EXPECT_EQ(0, srdma_test_kmsg_count(kmsg, "WARNING"));
	close(kmsg);
}

/* ibv_rereg_mr(): the keys stay, the registration changes at once. */
TEST_F(mw, rereg_access)
{
	uint32_t lkey = self->mr->lkey, rkey = self->mr->rkey;

	memset(self->lbuf, 0x31, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, rkey, self->buf));
	EXPECT_EQ(0, memcmp(self->buf, self->lbuf, 64));
	/* Take remote write away: the same key is refused. */
	ASSERT_EQ(0, ibv_rereg_mr(self->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				  NULL, 0, IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(lkey, self->mr->lkey);
	EXPECT_EQ(rkey, self->mr->rkey);
	memset(self->lbuf, 0x32, 64);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, rkey, self->buf));
	EXPECT_EQ(0x31, self->buf[0]);
	/* And back, on the other pair. */
	ASSERT_EQ(0, ibv_rereg_mr(self->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				  NULL, 0, ACCESS_MR));
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qc, rkey, self->buf));
	EXPECT_EQ(0x32, self->buf[0]);
	/* Remote write without local write: refused, the MR unchanged. */
	EXPECT_NE(0, ibv_rereg_mr(self->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				  NULL, 0, IBV_ACCESS_REMOTE_WRITE));
	memset(self->lbuf, 0x33, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qc, rkey, self->buf));
	EXPECT_EQ(0x33, self->buf[0]);
}

TEST_F(mw, rereg_translation)
{
	uint32_t rkey = self->mr->rkey;
	char *other = aligned_alloc(4096, 8192);

	ASSERT_NE(NULL, other);
	memset(other, 0, 8192);
	ASSERT_EQ(0, ibv_rereg_mr(self->mr, IBV_REREG_MR_CHANGE_TRANSLATION,
				  NULL, other, 8192, 0));
	EXPECT_EQ(rkey, self->mr->rkey);
	EXPECT_EQ(other, self->mr->addr);
	EXPECT_EQ(8192u, self->mr->length);
	memset(self->lbuf, 0x41, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, rkey, other + 4096));
	EXPECT_EQ(0, memcmp(other + 4096, self->lbuf, 64));
	EXPECT_EQ(0, self->buf[4096]);
	/* The old range is not the MR's any more. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, rkey,
			       self->buf + 16384));
	EXPECT_EQ(0, self->buf[16384]);
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
	free(other);
}

TEST_F(mw, rereg_pd)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(self->ctx);
	uint32_t rkey = self->mr->rkey;

	ASSERT_NE(NULL, pd2);
	ASSERT_EQ(0, ibv_rereg_mr(self->mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL,
				  0, 0));
	EXPECT_EQ(pd2, self->mr->pd);
	/* The QPs are of the first PD: the MR is not theirs now. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  write_status(_metadata, self, self->qa, rkey, self->buf));
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(pd2));
	ASSERT_EQ(0, ibv_rereg_mr(self->mr, IBV_REREG_MR_CHANGE_PD, self->pd,
				  NULL, 0, 0));
	memset(self->lbuf, 0x51, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qc, rkey, self->buf));
	EXPECT_EQ(0x51, self->buf[0]);
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

TEST_F(mw, rereg_with_window_bound)
{
	uint32_t key = bind2(_metadata, self, IBV_ACCESS_REMOTE_WRITE);

	ASSERT_NE(0u, key);
	EXPECT_NE(0, ibv_rereg_mr(self->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				  NULL, 0, IBV_ACCESS_LOCAL_WRITE));
	/* Nothing changed: the window still works. */
	memset(self->lbuf, 0x61, 64);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  write_status(_metadata, self, self->qa, key,
			       self->buf + WIN_OFF));
	EXPECT_EQ(0x61, self->buf[WIN_OFF]);
}

TEST_HARNESS_MAIN
