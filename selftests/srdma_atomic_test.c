// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RC atomics: compare and swap, fetch and add, from QPs of a requester
 * device to QPs of a target device ($SRDMA_DEV, default srdma0, and
 * $SRDMA_ATOMIC_PEER, default the same device in loopback). Either may be
 * an rdma_rxe device: the interop runs in selftests/tests/atomic.sh.
 *
 * Checked: the values found and left, every field of every completion, a
 * counter fetched-and-added by two QPs that ends exactly right with every
 * value handed out once (which under loss shows that the responder's
 * replay cache answered the duplicates, never carrying one out twice),
 * unsignaled atomics, the ibv_qp_ex posting API, and the errors: a
 * misaligned address, a result SGE that is not 8 bytes, an MR or a QP
 * without remote atomic access, a bad R_Key or L_Key. ATOMIC WRITE (IBTA
 * 1.5, ibv_wr_atomic_write()) where the requester device advertises it:
 * the 8 bytes stored, the completion, the errors (misaligned, no remote
 * write right) and what srdma's provider refuses when posting.
 *
 * $SRDMA_ATOMIC_ITERS: fetch-and-adds per QP in the counter test (500).
 * $SRDMA_ATOMIC_TESTS: comma-separated test names to run, the others
 * skip (the loss runs take only those whose outcome loss cannot change).
 */
#include <stdint.h>
#include <stdio.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define BUF_SIZE	4096		/* 512 words; the tests use words 3 to 500 */
#define DEPTH		4		/* atomics in flight per QP */
#define NQP		2
#define PSN0		0x123
#define ACCESS_ALL	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/* IB_UVERBS_DEVICE_ATOMIC_WRITE: rdma-core 44's headers do not name it. */
#define DEVICE_ATOMIC_WRITE	(1ULL << 40)

static const char *peer_name(void)
{
	const char *p = getenv("SRDMA_ATOMIC_PEER");

	return p && *p ? p : srdma_test_devname();
}

static bool is_rxe(const char *name)
{
	return !strncmp(name, "rxe", 3);
}

/* Is test @name selected by $SRDMA_ATOMIC_TESTS (all if unset)? */
static bool wanted(const char *name)
{
	const char *list = getenv("SRDMA_ATOMIC_TESTS");
	size_t n = strlen(name);
	const char *p;

	if (!list || !*list)
		return true;
	for (p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

#define SELECTED() do {							\
	if (!wanted(_metadata->name))					\
		SKIP(return, "not in SRDMA_ATOMIC_TESTS");		\
} while (0)

/* One side: a device, a PD, a CQ, a page-aligned buffer and its MR. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint64_t *buf;
	union ibv_gid gid;
	int gidx;
	bool awrite;		/* the device advertises ATOMIC WRITE */
	struct ibv_qp *qp[NQP];
};

/* Up to @n completions within 20 s (longer when slow); how many came. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	return srdma_test_poll_n(cq, wc, n, 20000 * (srdma_test_slow() + 1));
}

/* INIT -> RTR -> RTS of @qp towards @rqpn at @rgid. */
static int qp_connect(struct ibv_qp *qp, const struct side *me,
		      uint32_t rqpn, const union ibv_gid *rgid)
{
	struct ibv_qp_attr a;

	srdma_test_rtr_attr(&a, rqpn, me->gidx, rgid, IBV_MTU_1024);
	a.rq_psn = PSN0;
	a.max_dest_rd_atomic = DEPTH;
	if (ibv_modify_qp(qp, &a, SRDMA_TEST_RTR_MASK))
		return -1;
	srdma_test_rts_attr(&a);
	a.timeout = 14 + srdma_test_slow();
	a.sq_psn = PSN0;
	a.max_rd_atomic = DEPTH;
	return ibv_modify_qp(qp, &a, SRDMA_TEST_RTS_MASK);
}

/* Requester QP 1 is an extended QP with the atomic posting API. */
static struct ibv_qp *make_qp(struct side *s, bool ex)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC,
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = { .max_send_wr = 32, .max_recv_wr = 4,
			 .max_send_sge = 2, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = s->pd,
	};

	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				   IBV_QP_EX_WITH_RDMA_READ;
		if (s->awrite)
			a.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_WRITE |
					    IBV_QP_EX_WITH_RDMA_WRITE;
	}
	return ibv_create_qp_ex(s->ctx, &a);
}

static int side_open(struct side *s, const char *name, int access)
{
	struct ibv_device_attr_ex dx;

	s->ctx = srdma_test_open_name(name);
	if (!s->ctx)
		return -1;
	s->awrite = !ibv_query_device_ex(s->ctx, NULL, &dx) &&
		    (dx.device_cap_flags_ex & DEVICE_ATOMIC_WRITE);
	s->gidx = srdma_test_ipv4_gid(s->ctx, &s->gid);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	if (s->gidx < 0 || !s->pd || !s->cq ||
	    posix_memalign((void **)&s->buf, BUF_SIZE, BUF_SIZE))
		return -1;
	memset(s->buf, 0, BUF_SIZE);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE, access);
	return s->mr ? 0 : -1;
}

static void side_close(struct side *s)
{
	int i;

	for (i = 0; i < NQP; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->buf);
}

/* Post one atomic from @qp with the result going to @res in @mr. */
static int post_atomic(struct ibv_qp *qp, uint64_t wr_id,
		       enum ibv_wr_opcode op, struct ibv_sge *sge, int nsge,
		       uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
		       uint64_t swap, unsigned int flags)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.send_flags = flags;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(qp, &wr, &bad);
}

static struct ibv_sge sge_of(struct ibv_mr *mr, void *addr, uint32_t len)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey,
	};

	return s;
}

/*
 * The state of target QP @qp once it has had time to fail: srdma moves
 * its QP to ERR before its NAK leaves, rdma_rxe 6.12 at times only after
 * the requester has seen the NAK's completion, so an rxe target gets up
 * to 2 s.
 */
static enum ibv_qp_state tgt_state(struct ibv_qp *qp, bool rxe)
{
	enum ibv_qp_state st = srdma_test_qp_state(qp);
	int i;

	for (i = 0; rxe && st != IBV_QPS_ERR && i < 200; i++) {
		usleep(10000);
		st = srdma_test_qp_state(qp);
	}
	return st;
}

FIXTURE(atomic) {
	struct side req;	/* posts the atomics, gets the results */
	struct side tgt;	/* holds the words they act on */
	bool same;		/* one device, in loopback */
	bool req_srdma;		/* the requester is srdma (not rxe) */
	bool tgt_rxe;
};

FIXTURE_SETUP(atomic)
{
	const char *rn = srdma_test_devname(), *tn = peer_name();
	int i;

	memset(&self->req, 0, sizeof(self->req));
	memset(&self->tgt, 0, sizeof(self->tgt));
	self->same = !strcmp(rn, tn);
	self->req_srdma = !is_rxe(rn);
	self->tgt_rxe = is_rxe(tn);
	ASSERT_EQ(0, side_open(&self->req, rn, IBV_ACCESS_LOCAL_WRITE))
		TH_LOG("cannot set up %s: %s", rn, strerror(errno));
	ASSERT_EQ(0, side_open(&self->tgt, tn, ACCESS_ALL))
		TH_LOG("cannot set up %s: %s", tn, strerror(errno));
	for (i = 0; i < NQP; i++) {
		self->req.qp[i] = make_qp(&self->req, i == 1);
		self->tgt.qp[i] = make_qp(&self->tgt, false);
		ASSERT_NE(NULL, self->req.qp[i]) TH_LOG("qp: %s",
							strerror(errno));
		ASSERT_NE(NULL, self->tgt.qp[i]);
		ASSERT_EQ(0, srdma_test_qp_init_access(self->req.qp[i],
						       IBV_ACCESS_LOCAL_WRITE));
		ASSERT_EQ(0, srdma_test_qp_init_access(self->tgt.qp[i],
						       ACCESS_ALL));
	}
	for (i = 0; i < NQP; i++) {
		ASSERT_EQ(0, qp_connect(self->req.qp[i], &self->req,
					self->tgt.qp[i]->qp_num,
					&self->tgt.gid));
		ASSERT_EQ(0, qp_connect(self->tgt.qp[i], &self->tgt,
					self->req.qp[i]->qp_num,
					&self->req.gid));
	}
}

FIXTURE_TEARDOWN(atomic)
{
	side_close(&self->req);
	side_close(&self->tgt);
}

/* Every field a send completion has, for a successful atomic. */
static void check_wc(struct __test_metadata *_metadata,
		     const struct ibv_wc *wc, uint64_t wr_id,
		     enum ibv_wc_opcode op, const struct ibv_qp *qp)
{
	EXPECT_EQ(wr_id, wc->wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc->status) TH_LOG("wr %llu: %s",
		(unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status));
	EXPECT_EQ(op, wc->opcode);
	EXPECT_EQ(8U, wc->byte_len);
	EXPECT_EQ(qp->qp_num, wc->qp_num);
	EXPECT_EQ(0U, wc->wc_flags);
	EXPECT_EQ(0U, wc->imm_data);
	EXPECT_EQ(0U, wc->vendor_err);
}

/* The requester and target devices advertise atomics. */
TEST_F(atomic, caps)
{
	struct ibv_device_attr a;

	SELECTED();
	ASSERT_EQ(0, ibv_query_device(self->req.ctx, &a));
	EXPECT_NE(IBV_ATOMIC_NONE, a.atomic_cap);
	EXPECT_LE(DEPTH, a.max_qp_init_rd_atom);
	if (self->req_srdma) {
		EXPECT_EQ(IBV_ATOMIC_GLOB, a.atomic_cap);
		EXPECT_EQ(128, a.max_qp_rd_atom);
		EXPECT_EQ(128, a.max_qp_init_rd_atom);
	}
	ASSERT_EQ(0, ibv_query_device(self->tgt.ctx, &a));
	EXPECT_NE(IBV_ATOMIC_NONE, a.atomic_cap);
	EXPECT_LE(DEPTH, a.max_qp_rd_atom);
}

/* Compare and swap, matching and not, with full 64-bit values. */
TEST_F(atomic, cas)
{
	uint64_t *w = &self->tgt.buf[3], *res = self->req.buf;
	struct ibv_qp *qp = self->req.qp[0];
	struct ibv_sge s;
	struct ibv_wc wc[2];

	SELECTED();
	*w = 0x0123456789abcdefULL;
	res[0] = res[1] = 0x5555555555555555ULL;
	s = sge_of(self->req.mr, &res[0], 8);
	ASSERT_EQ(0, post_atomic(qp, 11, IBV_WR_ATOMIC_CMP_AND_SWP, &s, 1,
				 (uintptr_t)w, self->tgt.mr->rkey,
				 0x0123456789abcdefULL, 0xfedcba9876543210ULL,
				 IBV_SEND_SIGNALED));
	ASSERT_EQ(1, poll_n(self->req.cq, wc, 1));
	check_wc(_metadata, &wc[0], 11, IBV_WC_COMP_SWAP, qp);
	EXPECT_EQ(0x0123456789abcdefULL, res[0]);
	EXPECT_EQ(0xfedcba9876543210ULL, *w);

	/* the compare value differs only in the top byte: no swap */
	s = sge_of(self->req.mr, &res[1], 8);
	ASSERT_EQ(0, post_atomic(qp, 12, IBV_WR_ATOMIC_CMP_AND_SWP, &s, 1,
				 (uintptr_t)w, self->tgt.mr->rkey,
				 0x00dcba9876543210ULL, 42, IBV_SEND_SIGNALED));
	ASSERT_EQ(1, poll_n(self->req.cq, wc, 1));
	check_wc(_metadata, &wc[0], 12, IBV_WC_COMP_SWAP, qp);
	EXPECT_EQ(0xfedcba9876543210ULL, res[1]);
	EXPECT_EQ(0xfedcba9876543210ULL, *w);
	/* the neighbours are untouched */
	EXPECT_EQ(0ULL, self->tgt.buf[2]);
	EXPECT_EQ(0ULL, self->tgt.buf[4]);
	EXPECT_EQ(0ULL, res[2]);
}

/* Fetch and add, with a carry across the halves and a wrap. */
TEST_F(atomic, faa)
{
	uint64_t *w = &self->tgt.buf[100], *res = self->req.buf;
	struct ibv_qp *qp = self->req.qp[0];
	struct ibv_sge s;
	struct ibv_wc wc;

	SELECTED();
	*w = 0x00000000ffffffffULL;
	s = sge_of(self->req.mr, &res[5], 8);
	ASSERT_EQ(0, post_atomic(qp, 21, IBV_WR_ATOMIC_FETCH_AND_ADD, &s, 1,
				 (uintptr_t)w, self->tgt.mr->rkey, 1,
				 0x7777777777777777ULL, IBV_SEND_SIGNALED));
	ASSERT_EQ(1, poll_n(self->req.cq, &wc, 1));
	check_wc(_metadata, &wc, 21, IBV_WC_FETCH_ADD, qp);
	EXPECT_EQ(0x00000000ffffffffULL, res[5]);
	EXPECT_EQ(0x0000000100000000ULL, *w);

	*w = 0xfffffffffffffffeULL;
	s = sge_of(self->req.mr, &res[6], 8);
	ASSERT_EQ(0, post_atomic(qp, 22, IBV_WR_ATOMIC_FETCH_AND_ADD, &s, 1,
				 (uintptr_t)w, self->tgt.mr->rkey, 5, 0,
				 IBV_SEND_SIGNALED));
	ASSERT_EQ(1, poll_n(self->req.cq, &wc, 1));
	check_wc(_metadata, &wc, 22, IBV_WC_FETCH_ADD, qp);
	EXPECT_EQ(0xfffffffffffffffeULL, res[6]);
	EXPECT_EQ(3ULL, *w);
}

/*
 * READs and an atomic through one responder queue: a 16 KiB READ (queued
 * for the read work), a FETCH ADD whose reply waits behind it, then 30
 * more 16 KiB READs, more than the queue's slots, so READs reuse the slot
 * the atomic's reply used. Every READ completes with the remote bytes (a
 * READ that inherited the atomic's reply got an ATOMIC ACKNOWLEDGE and no
 * data), the FETCH ADD with the word's old value.
 */
TEST_F(atomic, reads_around_atomic)
{
	const uint32_t rlen = 16384, nread = 31, lbufs = 4;
	uint64_t *w = &self->tgt.buf[300], *res = self->req.buf;
	struct ibv_send_wr wr, *bad;
	struct ibv_qp *qp = self->req.qp[0];
	struct ibv_mr *rmr, *lmr;
	unsigned char *rbuf, *lbuf;
	struct ibv_wc wc[32];
	struct ibv_sge s;
	uint32_t i, j;
	int n;

	SELECTED();
	rbuf = malloc(rlen);
	lbuf = calloc(lbufs, rlen);
	ASSERT_NE(NULL, rbuf);
	ASSERT_NE(NULL, lbuf);
	for (i = 0; i < rlen; i++)
		rbuf[i] = (unsigned char)(i * 7 + 3);
	rmr = ibv_reg_mr(self->tgt.pd, rbuf, rlen, ACCESS_ALL);
	lmr = ibv_reg_mr(self->req.pd, lbuf, lbufs * rlen,
			 IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, rmr);
	ASSERT_NE(NULL, lmr);
	*w = 41;
	for (i = 0; i <= nread; i++) {
		if (i == 1) {
			s = sge_of(self->req.mr, &res[7], 8);
			ASSERT_EQ(0, post_atomic(qp, 1000,
						 IBV_WR_ATOMIC_FETCH_AND_ADD,
						 &s, 1, (uintptr_t)w,
						 self->tgt.mr->rkey, 1, 0,
						 IBV_SEND_SIGNALED));
			continue;
		}
		s = sge_of(lmr, lbuf + (i % lbufs) * rlen, rlen);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)rbuf;
		wr.wr.rdma.rkey = rmr->rkey;
		ASSERT_EQ(0, ibv_post_send(qp, &wr, &bad));
	}
	n = poll_n(self->req.cq, wc, nread + 1);
	ASSERT_EQ((int)nread + 1, n);
	for (j = 0; j < nread + 1; j++) {
		EXPECT_EQ(IBV_WC_SUCCESS, wc[j].status)
			TH_LOG("wr %llu: %s", (unsigned long long)wc[j].wr_id,
			       ibv_wc_status_str(wc[j].status));
		EXPECT_EQ(qp->qp_num, wc[j].qp_num);
		EXPECT_EQ(0U, wc[j].wc_flags);
		EXPECT_EQ(0U, wc[j].vendor_err);
		if (j == 1) {
			check_wc(_metadata, &wc[j], 1000, IBV_WC_FETCH_ADD,
				 qp);
			continue;
		}
		/* completions come in the order posted */
		EXPECT_EQ(j, wc[j].wr_id);
		EXPECT_EQ(IBV_WC_RDMA_READ, wc[j].opcode);
		EXPECT_EQ(rlen, wc[j].byte_len);
	}
	EXPECT_EQ(41ULL, res[7]);
	EXPECT_EQ(42ULL, *w);
	for (i = 0; i < lbufs; i++)
		EXPECT_EQ(0, memcmp(lbuf + i * rlen, rbuf, rlen));
	EXPECT_EQ(0, ibv_dereg_mr(lmr));
	EXPECT_EQ(0, ibv_dereg_mr(rmr));
	free(lbuf);
	free(rbuf);
}

/*
 * Two QPs fetch-and-add 1 to one word, DEPTH at a time each: it ends at
 * exactly twice the iterations, and every value from 0 up was handed out
 * exactly once. Under 5% loss on the debug kernel, with rdma_rxe as the
 * requester, its thousand rounds took longer than the harness's default
 * 30 s: it has 300 (each completion still has its own bound, poll_n()).
 */
TEST_F_TIMEOUT(atomic, counter, 300)
{
	const char *it = getenv("SRDMA_ATOMIC_ITERS");
	uint32_t iters = it ? (uint32_t)atoi(it) : 500;
	uint64_t *w = &self->tgt.buf[200], *res = self->req.buf;
	uint32_t posted[NQP] = { 0 }, done = 0, total = NQP * iters;
	unsigned char *seen = calloc(total ? total : 1, 1);
	struct ibv_wc wc[16];
	struct ibv_sge s;
	uint64_t v;
	int q, i, n, slot;

	SELECTED();
	ASSERT_NE(NULL, seen);
	ASSERT_GE(total, 2U);
	*w = 0;
	/* Fill both pipelines; wr_id = qp * DEPTH + slot. */
	for (q = 0; q < NQP; q++)
		for (slot = 0; slot < DEPTH && posted[q] < iters; slot++) {
			s = sge_of(self->req.mr, &res[q * DEPTH + slot], 8);
			ASSERT_EQ(0, post_atomic(self->req.qp[q],
						 q * DEPTH + slot,
						 IBV_WR_ATOMIC_FETCH_AND_ADD,
						 &s, 1, (uintptr_t)w,
						 self->tgt.mr->rkey, 1, 0,
						 IBV_SEND_SIGNALED));
			posted[q]++;
		}
	while (done < total) {
		n = poll_n(self->req.cq, wc, 1);
		ASSERT_EQ(1, n) TH_LOG("stalled after %u of %u", done, total);
		n = ibv_poll_cq(self->req.cq, 15, wc + 1) + 1;
		for (i = 0; i < n; i++) {
			q = (int)(wc[i].wr_id / DEPTH);
			slot = (int)(wc[i].wr_id % DEPTH);
			ASSERT_LT(q, NQP);
			check_wc(_metadata, &wc[i], wc[i].wr_id,
				 IBV_WC_FETCH_ADD, self->req.qp[q]);
			ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status);
			v = res[q * DEPTH + slot];
			ASSERT_LT(v, (uint64_t)total)
				TH_LOG("value %llu handed out", (unsigned long long)v);
			ASSERT_EQ(0, seen[v])
				TH_LOG("value %llu handed out twice", (unsigned long long)v);
			seen[v] = 1;
			res[q * DEPTH + slot] = UINT64_MAX;
			done++;
			if (posted[q] == iters)
				continue;
			s = sge_of(self->req.mr, &res[q * DEPTH + slot], 8);
			ASSERT_EQ(0, post_atomic(self->req.qp[q], wc[i].wr_id,
						 IBV_WR_ATOMIC_FETCH_AND_ADD,
						 &s, 1, (uintptr_t)w,
						 self->tgt.mr->rkey, 1, 0,
						 IBV_SEND_SIGNALED));
			posted[q]++;
		}
	}
	EXPECT_EQ((uint64_t)total, *w);
	for (v = 0; v < total; v++)
		EXPECT_EQ(1, seen[v]);
	free(seen);
}

/* Unsignaled atomics place their results too; only the signaled one completes. */
TEST_F(atomic, unsignaled)
{
	uint64_t *w = &self->tgt.buf[300], *res = self->req.buf + 16;
	struct ibv_qp *qp = self->req.qp[0];
	struct ibv_sge s;
	struct ibv_wc wc[2];
	int i;

	SELECTED();
	*w = 1000;
	for (i = 0; i < 4; i++) {
		res[i] = UINT64_MAX;
		s = sge_of(self->req.mr, &res[i], 8);
		ASSERT_EQ(0, post_atomic(qp, 40 + i,
					 IBV_WR_ATOMIC_FETCH_AND_ADD, &s, 1,
					 (uintptr_t)w, self->tgt.mr->rkey, 10,
					 0, i == 3 ? IBV_SEND_SIGNALED : 0));
	}
	ASSERT_EQ(1, poll_n(self->req.cq, wc, 1));
	check_wc(_metadata, &wc[0], 43, IBV_WC_FETCH_ADD, qp);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(1000ULL + 10 * i, res[i]);
	EXPECT_EQ(1040ULL, *w);
	usleep(100000);
	EXPECT_EQ(0, ibv_poll_cq(self->req.cq, 2, wc));
}

/* The ibv_qp_ex posting API: one batch of CAS, FAA, FAA; bad batches. */
TEST_F(atomic, qpex)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(self->req.qp[1]);
	uint64_t *w = &self->tgt.buf[400], *res = self->req.buf + 32;
	struct ibv_wc wc[3];
	int i;

	SELECTED();
	ASSERT_NE(NULL, x);
	*w = 7;
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 51;
	ibv_wr_atomic_cmp_swp(x, self->tgt.mr->rkey, (uintptr_t)w, 7, 100);
	ibv_wr_set_sge(x, self->req.mr->lkey, (uintptr_t)&res[0], 8);
	x->wr_id = 52;
	ibv_wr_atomic_fetch_add(x, self->tgt.mr->rkey, (uintptr_t)w, 11);
	ibv_wr_set_sge(x, self->req.mr->lkey, (uintptr_t)&res[1], 8);
	x->wr_id = 53;
	ibv_wr_atomic_cmp_swp(x, self->tgt.mr->rkey, (uintptr_t)w, 7, 200);
	ibv_wr_set_sge(x, self->req.mr->lkey, (uintptr_t)&res[2], 8);
	ASSERT_EQ(0, ibv_wr_complete(x));
	ASSERT_EQ(3, poll_n(self->req.cq, wc, 3));
	check_wc(_metadata, &wc[0], 51, IBV_WC_COMP_SWAP, self->req.qp[1]);
	check_wc(_metadata, &wc[1], 52, IBV_WC_FETCH_ADD, self->req.qp[1]);
	check_wc(_metadata, &wc[2], 53, IBV_WC_COMP_SWAP, self->req.qp[1]);
	EXPECT_EQ(7ULL, res[0]);
	EXPECT_EQ(100ULL, res[1]);
	EXPECT_EQ(111ULL, res[2]);
	EXPECT_EQ(111ULL, *w);

	if (!self->req_srdma)
		return;
	/* srdma refuses an atomic without one 8-byte SGE: nothing posted */
	for (i = 0; i < 3; i++) {
		ibv_wr_start(x);
		x->wr_id = 60 + i;
		ibv_wr_atomic_fetch_add(x, self->tgt.mr->rkey, (uintptr_t)w, 1);
		if (i == 0)
			ibv_wr_set_sge(x, self->req.mr->lkey,
				       (uintptr_t)&res[3], 4);
		if (i == 1) {
			struct ibv_sge two[2] = {
				sge_of(self->req.mr, &res[3], 4),
				sge_of(self->req.mr, (char *)&res[3] + 4, 4),
			};

			ibv_wr_set_sge_list(x, 2, two);
		}
		/* i == 2: no SGE at all */
		EXPECT_EQ(EINVAL, ibv_wr_complete(x));
	}
	usleep(100000);
	EXPECT_EQ(0, ibv_poll_cq(self->req.cq, 3, wc));
	EXPECT_EQ(111ULL, *w);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->req.qp[1]));
}

/* A result SGE that is not one of 8 bytes: post_send says EINVAL. */
TEST_F(atomic, wrong_size)
{
	uint64_t *w = &self->tgt.buf[500], *res = self->req.buf + 48;
	struct ibv_qp *qp = self->req.qp[0];
	struct ibv_sge s[2];
	struct ibv_wc wc;

	SELECTED();
	if (!self->req_srdma)
		SKIP(return, "the requester is not srdma");
	*w = 5;
	s[0] = sge_of(self->req.mr, &res[0], 4);
	EXPECT_EQ(EINVAL, post_atomic(qp, 70, IBV_WR_ATOMIC_FETCH_AND_ADD, s,
				      1, (uintptr_t)w, self->tgt.mr->rkey, 1,
				      0, IBV_SEND_SIGNALED));
	s[0] = sge_of(self->req.mr, &res[0], 16);
	EXPECT_EQ(EINVAL, post_atomic(qp, 71, IBV_WR_ATOMIC_CMP_AND_SWP, s, 1,
				      (uintptr_t)w, self->tgt.mr->rkey, 5, 6,
				      IBV_SEND_SIGNALED));
	s[0] = sge_of(self->req.mr, &res[0], 4);
	s[1] = sge_of(self->req.mr, (char *)&res[0] + 4, 4);
	EXPECT_EQ(EINVAL, post_atomic(qp, 72, IBV_WR_ATOMIC_FETCH_AND_ADD, s,
				      2, (uintptr_t)w, self->tgt.mr->rkey, 1,
				      0, IBV_SEND_SIGNALED));
	EXPECT_EQ(EINVAL, post_atomic(qp, 73, IBV_WR_ATOMIC_FETCH_AND_ADD, s,
				      0, (uintptr_t)w, self->tgt.mr->rkey, 1,
				      0, IBV_SEND_SIGNALED));
	usleep(100000);
	EXPECT_EQ(0, ibv_poll_cq(self->req.cq, 1, &wc));
	EXPECT_EQ(5ULL, *w);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));
	/* and the QP still works */
	s[0] = sge_of(self->req.mr, &res[1], 8);
	ASSERT_EQ(0, post_atomic(qp, 74, IBV_WR_ATOMIC_FETCH_AND_ADD, s, 1,
				 (uintptr_t)w, self->tgt.mr->rkey, 1, 0,
				 IBV_SEND_SIGNALED));
	ASSERT_EQ(1, poll_n(self->req.cq, &wc, 1));
	check_wc(_metadata, &wc, 74, IBV_WC_FETCH_ADD, qp);
	EXPECT_EQ(5ULL, res[1]);
	EXPECT_EQ(6ULL, *w);
}

/*
 * An atomic that fails with @status after posting: the completion's
 * wr_id, status and qp_num, the word unchanged, both QPs in ERR when the
 * responder refused it (@resp_err), else only the requester's.
 */
static void expect_fail(struct __test_metadata *_metadata,
			FIXTURE_DATA(atomic) *self, struct ibv_sge *s,
			uint64_t *w, uint32_t rkey,
			enum ibv_wc_status status, bool resp_err)
{
	struct ibv_qp *qp = self->req.qp[0];
	struct ibv_sge s1;
	struct ibv_wc wc;

	*w = 77;
	ASSERT_EQ(0, post_atomic(qp, 90, IBV_WR_ATOMIC_FETCH_AND_ADD, s, 1,
				 (uintptr_t)w, rkey, 1, 0, IBV_SEND_SIGNALED));
	ASSERT_EQ(1, poll_n(self->req.cq, &wc, 1));
	EXPECT_EQ(90U, wc.wr_id);
	EXPECT_EQ(status, wc.status) TH_LOG("got %s, expected %s",
					    ibv_wc_status_str(wc.status),
					    ibv_wc_status_str(status));
	EXPECT_EQ(qp->qp_num, wc.qp_num);
	EXPECT_EQ(77ULL, *w);
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(qp));
	if (resp_err)
		EXPECT_EQ(IBV_QPS_ERR, tgt_state(self->tgt.qp[0],
						 self->tgt_rxe));
	/* the other connection carries on */
	s1 = sge_of(self->req.mr, self->req.buf + 60, 8);
	ASSERT_EQ(0, post_atomic(self->req.qp[1], 91,
				 IBV_WR_ATOMIC_FETCH_AND_ADD, &s1, 1,
				 (uintptr_t)w, self->tgt.mr->rkey, 1, 0,
				 IBV_SEND_SIGNALED));
	ASSERT_EQ(1, poll_n(self->req.cq, &wc, 1));
	check_wc(_metadata, &wc, 91, IBV_WC_FETCH_ADD, self->req.qp[1]);
	EXPECT_EQ(77ULL, self->req.buf[60]);
	EXPECT_EQ(78ULL, *w);
}

/*
 * An address not 8-byte aligned: the srdma requester sends it and the
 * responder NAKs it as an invalid request. (rdma_rxe's requester refuses
 * it in post_send with EINVAL instead.)
 */
TEST_F(atomic, misaligned)
{
	struct ibv_sge s = sge_of(self->req.mr, self->req.buf, 8);
	uint64_t *w = &self->tgt.buf[440];
	int ret;

	SELECTED();
	*w = 77;
	ret = post_atomic(self->req.qp[0], 90, IBV_WR_ATOMIC_FETCH_AND_ADD, &s,
			  1, (uintptr_t)w + 4, self->tgt.mr->rkey, 1, 0,
			  IBV_SEND_SIGNALED);
	if (!self->req_srdma && ret == EINVAL)
		SKIP(return, "the rxe requester refuses it in post_send");
	ASSERT_EQ(0, ret);
	{
		struct ibv_wc wc;

		ASSERT_EQ(1, poll_n(self->req.cq, &wc, 1));
		EXPECT_EQ(90U, wc.wr_id);
		EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status)
			TH_LOG("got %s", ibv_wc_status_str(wc.status));
		EXPECT_EQ(self->req.qp[0]->qp_num, wc.qp_num);
	}
	EXPECT_EQ(77ULL, *w);
	EXPECT_EQ(0ULL, self->tgt.buf[441]);
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->req.qp[0]));
	EXPECT_EQ(IBV_QPS_ERR, tgt_state(self->tgt.qp[0], self->tgt_rxe));
}

/* An MR without remote atomic access: NAK remote access error. */
TEST_F(atomic, mr_no_access)
{
	struct ibv_sge s = sge_of(self->req.mr, self->req.buf, 8);
	uint64_t *w = &self->tgt.buf[448];
	struct ibv_mr *mr;

	SELECTED();
	mr = ibv_reg_mr(self->tgt.pd, w, 64, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr);
	expect_fail(_metadata, self, &s, w, mr->rkey, IBV_WC_REM_ACCESS_ERR,
		    true);
	ibv_dereg_mr(mr);
}

/* An R_Key that names no MR: NAK remote access error. */
TEST_F(atomic, bad_rkey)
{
	struct ibv_sge s = sge_of(self->req.mr, self->req.buf, 8);

	SELECTED();
	expect_fail(_metadata, self, &s, &self->tgt.buf[456],
		    self->tgt.mr->rkey ^ 0x80, IBV_WC_REM_ACCESS_ERR, true);
}

/*
 * A target QP without remote atomic access: srdma NAKs it as a remote
 * access error, as it does READ and WRITE; rdma_rxe as an invalid request.
 */
TEST_F(atomic, qp_no_access)
{
	struct ibv_sge s = sge_of(self->req.mr, self->req.buf, 8);
	struct ibv_qp_attr a = {
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};

	SELECTED();
	ASSERT_EQ(0, ibv_modify_qp(self->tgt.qp[0], &a, IBV_QP_ACCESS_FLAGS));
	expect_fail(_metadata, self, &s, &self->tgt.buf[464],
		    self->tgt.mr->rkey, self->tgt_rxe ?
		    IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_ACCESS_ERR, true);
}

/*
 * A bad L_Key, or an MR without local write, for the result: a local
 * protection error. srdma checks before sending, so the word is never
 * touched; rdma_rxe finds out when the result comes back.
 */
TEST_F(atomic, bad_lkey)
{
	struct ibv_sge s = sge_of(self->req.mr, self->req.buf, 8);

	SELECTED();
	if (!self->req_srdma)
		SKIP(return, "the requester is not srdma");
	s.lkey ^= 0x80;
	expect_fail(_metadata, self, &s, &self->tgt.buf[472],
		    self->tgt.mr->rkey, IBV_WC_LOC_PROT_ERR, false);
}

/* The same with a result MR the requester may only read. */
TEST_F(atomic, readonly_result)
{
	struct ibv_mr *ro;
	struct ibv_sge s;

	SELECTED();
	if (!self->req_srdma)
		SKIP(return, "the requester is not srdma");
	ro = ibv_reg_mr(self->req.pd, self->req.buf + 256, 64, 0);
	ASSERT_NE(NULL, ro);
	s = sge_of(ro, self->req.buf + 256, 8);
	expect_fail(_metadata, self, &s, &self->tgt.buf[480],
		    self->tgt.mr->rkey, IBV_WC_LOC_PROT_ERR, false);
	ibv_dereg_mr(ro);
}


/* Skip unless both devices advertise ATOMIC WRITE (rxe since 6.2). */
#define NEED_AWRITE() do {						\
	SELECTED();							\
	if (!self->req.awrite || !self->tgt.awrite)			\
		SKIP(return, "no ATOMIC WRITE on both devices");	\
} while (0)

/*
 * srdma advertises ATOMIC WRITE, and its provider takes it in
 * create_qp_ex on RC QPs only.
 */
TEST_F(atomic, awrite_caps)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_UC,
		.send_cq = self->req.cq,
		.recv_cq = self->req.cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = self->req.pd,
		.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE,
	};

	SELECTED();
	if (!self->req_srdma)
		SKIP(return, "the requester is not srdma");
	EXPECT_TRUE(self->req.awrite);
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->req.ctx, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

/* Post one ATOMIC WRITE of @val from @x, signaled, as wr @wr_id. */
static int post_awrite(struct ibv_qp_ex *x, uint64_t wr_id, uint32_t rkey,
		       uint64_t raddr, uint64_t val)
{
	uint64_t data = val;

	ibv_wr_start(x);
	x->wr_id = wr_id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, rkey, raddr, &data);
	data = 0;	/* the provider copied the 8 bytes at the call */
	return ibv_wr_complete(x);
}

/*
 * ATOMIC WRITE: a batch of an unsignaled one and a signaled one to two
 * words, each value stored whole, the neighbours untouched; then one
 * behind an RDMA WRITE to the same word, in order. The completions:
 * wr_id, status, opcode IBV_WC_ATOMIC_WRITE, qp_num, no flags, no
 * immediate, byte_len 8 from srdma.
 */
TEST_F(atomic, awrite)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(self->req.qp[1]);
	uint64_t *w = &self->tgt.buf[502], *src = self->req.buf + 64;
	uint64_t a = 0x1122334455667788ULL, b = 0x8877665544332211ULL;
	struct ibv_wc wc[2];
	int i;

	NEED_AWRITE();
	ASSERT_NE(NULL, x);
	w[-1] = w[2] = 0x5a5a5a5a5a5a5a5aULL;
	w[0] = w[1] = 0;
	ibv_wr_start(x);
	x->wr_id = 201;
	x->wr_flags = 0;
	ibv_wr_atomic_write(x, self->tgt.mr->rkey, (uintptr_t)&w[0], &a);
	x->wr_id = 202;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, self->tgt.mr->rkey, (uintptr_t)&w[1], &b);
	a = b = 0;
	ASSERT_EQ(0, ibv_wr_complete(x));
	ASSERT_EQ(1, poll_n(self->req.cq, wc, 1));
	EXPECT_EQ(202U, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status)
		TH_LOG("%s", ibv_wc_status_str(wc[0].status));
	EXPECT_EQ(IBV_WC_ATOMIC_WRITE, wc[0].opcode);
	EXPECT_EQ(self->req.qp[1]->qp_num, wc[0].qp_num);
	EXPECT_EQ(0U, wc[0].wc_flags);
	EXPECT_EQ(0U, wc[0].imm_data);
	EXPECT_EQ(0U, wc[0].vendor_err);
	if (self->req_srdma)	/* rxe's is not defined here */
		EXPECT_EQ(8U, wc[0].byte_len);
	EXPECT_EQ(0x1122334455667788ULL, w[0]);
	EXPECT_EQ(0x8877665544332211ULL, w[1]);
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, w[-1]);
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, w[2]);

	/* An RDMA WRITE, then an ATOMIC WRITE to the same word: the latter wins. */
	src[0] = 0x0101010101010101ULL;
	ibv_wr_start(x);
	x->wr_id = 203;
	x->wr_flags = 0;
	ibv_wr_rdma_write(x, self->tgt.mr->rkey, (uintptr_t)&w[0]);
	ibv_wr_set_sge(x, self->req.mr->lkey, (uintptr_t)src, 8);
	ASSERT_EQ(0, ibv_wr_complete(x));
	ASSERT_EQ(0, post_awrite(x, 204, self->tgt.mr->rkey,
				 (uintptr_t)&w[0], 0x0202020202020202ULL));
	ASSERT_EQ(1, poll_n(self->req.cq, wc, 1));
	EXPECT_EQ(204U, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(IBV_WC_ATOMIC_WRITE, wc[0].opcode);
	EXPECT_EQ(0x0202020202020202ULL, w[0]);

	/* 20 more, each a new value, all signaled: every one lands. */
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, post_awrite(x, 300 + i, self->tgt.mr->rkey,
					 (uintptr_t)&w[1], 1000 + i));
		ASSERT_EQ(1, poll_n(self->req.cq, wc, 1));
		EXPECT_EQ(300U + i, wc[0].wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
		EXPECT_EQ(1000ULL + i, w[1]);
	}
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->req.qp[1]));
}

/*
 * An ATOMIC WRITE behind a 64 KiB READ, which the responder answers from
 * its READ queue: the ATOMIC WRITE's answer waits behind the READ's
 * responses, both complete in order, the READ with the bytes as they were
 * before the ATOMIC WRITE changed the first word of the range.
 */
TEST_F(atomic, awrite_after_read)
{
	const uint32_t len = 65536;
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(self->req.qp[1]);
	uint64_t data = 0xa5a5a5a5a5a5a5a5ULL;
	unsigned char *rbuf, *lbuf;
	struct ibv_mr *rmr, *lmr;
	struct ibv_wc wc[2];
	uint32_t i;

	NEED_AWRITE();
	ASSERT_EQ(0, posix_memalign((void **)&rbuf, 4096, len));
	lbuf = calloc(1, len);
	ASSERT_NE(NULL, lbuf);
	for (i = 0; i < len; i++)
		rbuf[i] = (unsigned char)(i * 13 + 1);
	rmr = ibv_reg_mr(self->tgt.pd, rbuf, len, ACCESS_ALL);
	lmr = ibv_reg_mr(self->req.pd, lbuf, len, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, rmr);
	ASSERT_NE(NULL, lmr);
	ibv_wr_start(x);
	x->wr_id = 401;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, rmr->rkey, (uintptr_t)rbuf);
	ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf, len);
	x->wr_id = 402;
	ibv_wr_atomic_write(x, rmr->rkey, (uintptr_t)(rbuf + len - 8), &data);
	ASSERT_EQ(0, ibv_wr_complete(x));
	ASSERT_EQ(2, poll_n(self->req.cq, wc, 2));
	EXPECT_EQ(401U, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status)
		TH_LOG("%s", ibv_wc_status_str(wc[0].status));
	EXPECT_EQ(IBV_WC_RDMA_READ, wc[0].opcode);
	EXPECT_EQ(len, wc[0].byte_len);
	EXPECT_EQ(402U, wc[1].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[1].status)
		TH_LOG("%s", ibv_wc_status_str(wc[1].status));
	EXPECT_EQ(IBV_WC_ATOMIC_WRITE, wc[1].opcode);
	for (i = 0; i < len - 8; i++)
		if (lbuf[i] != (unsigned char)(i * 13 + 1))
			break;
	EXPECT_EQ(len - 8, i) TH_LOG("READ data differs at %u", i);
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5ULL, *(uint64_t *)(rbuf + len - 8));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->req.qp[1]));
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(lmr);
	free(rbuf);
	free(lbuf);
}

/*
 * An ATOMIC WRITE @off bytes into a fresh target word, under key @rkey
 * (0: the target MR's): it fails with @status, nothing is stored, both
 * QPs of the connection end in ERR.
 */
static void awrite_fail(struct __test_metadata *_metadata,
			FIXTURE_DATA(atomic) *self, uint64_t *w, int off,
			uint32_t rkey, enum ibv_wc_status status)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(self->req.qp[1]);
	struct ibv_wc wc;

	w[0] = w[1] = 77;
	ASSERT_EQ(0, post_awrite(x, 210, rkey ? rkey : self->tgt.mr->rkey,
				 (uintptr_t)w + off, 0xdeadbeefdeadbeefULL));
	ASSERT_EQ(1, poll_n(self->req.cq, &wc, 1));
	EXPECT_EQ(210U, wc.wr_id);
	EXPECT_EQ(status, wc.status) TH_LOG("got %s, expected %s",
					    ibv_wc_status_str(wc.status),
					    ibv_wc_status_str(status));
	EXPECT_EQ(self->req.qp[1]->qp_num, wc.qp_num);
	EXPECT_EQ(77ULL, w[0]);
	EXPECT_EQ(77ULL, w[1]);
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->req.qp[1]));
	EXPECT_EQ(IBV_QPS_ERR, tgt_state(self->tgt.qp[1], self->tgt_rxe));
}

/* Not 8-byte aligned: the responder NAKs an invalid request. */
TEST_F(atomic, awrite_misaligned)
{
	NEED_AWRITE();
	awrite_fail(_metadata, self, &self->tgt.buf[504], 4, 0,
		    IBV_WC_REM_INV_REQ_ERR);
}

/*
 * An MR with remote atomic and read rights but not remote write: ATOMIC
 * WRITE needs the write right, a remote access error.
 */
TEST_F(atomic, awrite_no_write_right)
{
	uint64_t *w = &self->tgt.buf[506];
	struct ibv_mr *mr;

	NEED_AWRITE();
	mr = ibv_reg_mr(self->tgt.pd, w, 16, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT_NE(NULL, mr);
	awrite_fail(_metadata, self, w, 0, mr->rkey, IBV_WC_REM_ACCESS_ERR);
	ibv_dereg_mr(mr);
}

/*
 * What srdma's provider refuses when posting, with nothing sent: an
 * ATOMIC WRITE given an SGE or inline data (its data is the 8 bytes of
 * the call), and ibv_post_send() of IBV_WR_ATOMIC_WRITE (ibv_send_wr has
 * no place for them).
 */
TEST_F(atomic, awrite_bad_posts)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(self->req.qp[1]);
	uint64_t *w = &self->tgt.buf[508], v = 5;
	struct ibv_sge s = sge_of(self->req.mr, self->req.buf, 8);
	struct ibv_send_wr wr = {
		.wr_id = 222, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct ibv_wc wc;

	NEED_AWRITE();
	if (!self->req_srdma)
		SKIP(return, "the requester is not srdma");
	*w = 9;
	ibv_wr_start(x);
	x->wr_id = 220;
	ibv_wr_atomic_write(x, self->tgt.mr->rkey, (uintptr_t)w, &v);
	ibv_wr_set_sge(x, self->req.mr->lkey, (uintptr_t)self->req.buf, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));
	ibv_wr_start(x);
	x->wr_id = 221;
	ibv_wr_atomic_write(x, self->tgt.mr->rkey, (uintptr_t)w, &v);
	ibv_wr_set_inline_data(x, &v, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(x));
	wr.wr.rdma.remote_addr = (uintptr_t)w;
	wr.wr.rdma.rkey = self->tgt.mr->rkey;
	EXPECT_EQ(EINVAL, ibv_post_send(self->req.qp[1], &wr, &bad));
	usleep(100000);
	EXPECT_EQ(0, ibv_poll_cq(self->req.cq, 1, &wc));
	EXPECT_EQ(9ULL, *w);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->req.qp[1]));
	/* and the QP still works */
	ASSERT_EQ(0, post_awrite(x, 223, self->tgt.mr->rkey, (uintptr_t)w, 6));
	ASSERT_EQ(1, poll_n(self->req.cq, &wc, 1));
	EXPECT_EQ(223U, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(6ULL, *w);
}

TEST_HARNESS_MAIN
