// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ibv_resize_cq() on srdma0 in loopback (its own IPv4 RoCEv2 GID): the
 * sizes made and refused (0, negative, over max_cqe, fewer entries than
 * the completions not yet polled: EINVAL, the CQ unchanged), completions
 * pending across a resize kept in order with every field, growing and
 * shrinking many times while QPs complete work into the CQ (softirq),
 * from a second thread too, both poll APIs (ibv_poll_cq and start_poll /
 * next_poll / end_poll) before and after, no resize inside an open
 * start_poll batch, and a process that scribbles its ring's consumer index
 * during and after a resize. The test finds the CQ rings through
 * /proc/self/maps and maps them a second time to watch (and scribble on)
 * their indices. Run in the test VM with the device bound to a veth
 * (selftests/run.sh).
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <rdma/srdma-abi.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define RECV_OFF	32768		/* receive buffers from here */
#define WRITE_OFF	49152		/* RDMA WRITE targets from here */
#define IMM1		0x12345678U
#define IMM2		0x9abcdef0U
#define MAX_MAPS	64
#define RS_POLL_MAX	64		/* completions per rs_poll() */

/* One completion as the test expects it, every field. */
struct rs_wc {
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	unsigned int wc_flags;
	uint32_t imm;			/* host order, if IBV_WC_WITH_IMM */
	uint32_t qp_num;
	uint32_t src_qp;
};

/* A CQ ring mapped by the test itself, next to the provider's mapping. */
struct rs_ring {
	struct srdma_ring_hdr *hdr;
	size_t len;
	unsigned long off;
};

/*
 * The offsets mapped now, to be passed to rs_ring_new() after the CQ was
 * made or resized.
 */
struct rs_snap {
	struct srdma_test_map m[MAX_MAPS];
	int n;
};

static int rs_snap(struct rs_snap *s)
{
	s->n = srdma_test_uverbs_maps(s->m, MAX_MAPS);
	return s->n < 0 ? -1 : 0;
}

/*
 * Map the one uverbs mapping that is not in @before (the ring a create or
 * resize just gave the provider) a second time, read-write: 0, or -1 if
 * there is not exactly one.
 */
static int rs_ring_new(struct ibv_context *ctx, const struct rs_snap *before,
		       struct rs_ring *r)
{
	struct rs_snap now;
	int i, j, found = 0;
	void *p;

	if (rs_snap(&now))
		return -1;
	for (i = 0; i < now.n; i++) {
		for (j = 0; j < before->n; j++)
			if (before->m[j].off == now.m[i].off)
				break;
		if (j < before->n)
			continue;
		found++;
		r->off = now.m[i].off;
		r->len = now.m[i].len;
	}
	if (found != 1)
		return -1;
	p = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		 r->off);
	if (p == MAP_FAILED)
		return -1;
	r->hdr = p;
	return 0;
}

static void rs_ring_close(struct rs_ring *r)
{
	if (r->hdr)
		munmap(r->hdr, r->len);
	r->hdr = NULL;
}

/* Wait until @r holds @n unpolled completions: 0, or -1 after ~5 s. */
static int rs_wait_pending(const struct rs_ring *r, uint32_t n)
{
	int i;

	for (i = 0; i < 50000 * (srdma_test_slow() + 1); i++) {
		if (__atomic_load_n(&r->hdr->prod, __ATOMIC_ACQUIRE) -
		    __atomic_load_n(&r->hdr->cons, __ATOMIC_RELAXED) >= n)
			return 0;
		usleep(100);
	}
	return -1;
}

/* The CQ's size a request for @cqe entries makes: 2^k - 1 >= cqe. */
static int rs_size(int cqe)
{
	int s = 1;

	while (s - 1 < cqe)
		s <<= 1;
	return s - 1;
}

/* An RC QP, send completions to @scq and receive ones to @rcq. */
static struct ibv_qp *rs_qp(struct ibv_pd *pd, struct ibv_cq *scq,
			    struct ibv_cq *rcq, uint32_t depth)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &init);
}

/* Every field of @wc against @want (slid, sl, path bits: always 0). */
static void rs_check(struct __test_metadata *_metadata,
		     const struct ibv_wc *wc, const struct rs_wc *want)
{
	EXPECT_EQ(want->wr_id, wc->wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc->status);
	EXPECT_EQ(want->opcode, wc->opcode);
	EXPECT_EQ(0, wc->vendor_err);
	EXPECT_EQ(want->byte_len, wc->byte_len);
	EXPECT_EQ(want->wc_flags, wc->wc_flags);
	if (want->wc_flags & IBV_WC_WITH_IMM)
		EXPECT_EQ(htonl(want->imm), wc->imm_data);
	EXPECT_EQ(want->qp_num, wc->qp_num);
	EXPECT_EQ(want->src_qp, wc->src_qp);
	EXPECT_EQ(0, wc->slid);
	EXPECT_EQ(0, wc->sl);
	EXPECT_EQ(0, wc->dlid_path_bits);
}

/* @x, read through the ibv_cq_ex accessors, as an ibv_wc. */
static void rs_wc_of(const struct srdma_test_wc *x, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = x->wr_id;
	wc->status = x->status;
	wc->opcode = x->opcode;
	wc->vendor_err = x->vendor_err;
	wc->byte_len = x->byte_len;
	wc->imm_data = x->imm_data;
	wc->qp_num = x->qp_num;
	wc->src_qp = x->src_qp;
	wc->wc_flags = x->wc_flags;
	wc->slid = x->slid;
	wc->sl = x->sl;
	wc->dlid_path_bits = x->dlid_path_bits;
}

/* The current completion of an open start_poll batch, as an ibv_wc. */
static void rs_read_ex(struct ibv_cq_ex *cq, struct ibv_wc *wc)
{
	struct srdma_test_wc x;

	srdma_test_read_ex(cq, &x);
	rs_wc_of(&x, wc);
}

/*
 * Collect @n (at most RS_POLL_MAX) completions within about 5 s, with
 * ibv_poll_cq() (@cqx NULL) or the start_poll API of @cqx; how many came,
 * or -errno.
 */
static int rs_poll(struct ibv_cq *cq, struct ibv_cq_ex *cqx,
		   struct ibv_wc *wc, int n)
{
	struct srdma_test_wc x[RS_POLL_MAX];
	int ms = 5000 * (srdma_test_slow() + 1);
	int got, i;

	if (!cqx)
		return srdma_test_poll_n(cq, wc, n, ms);
	if (n > RS_POLL_MAX)
		return -EINVAL;
	got = srdma_test_poll_ex(cqx, x, n, ms);
	for (i = 0; i < got; i++)
		rs_wc_of(&x[i], &wc[i]);
	return got;
}

/* Nothing more within @ms ms: 1, else 0. */
static int rs_empty(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;

	usleep(ms * 1000);
	return ibv_poll_cq(cq, 1, &wc) == 0;
}

FIXTURE(resize) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	union ibv_gid gid;
	int gidx;
	int max_cqe;
	char *buf;
};

FIXTURE_SETUP(resize)
{
	struct ibv_device_attr da;

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
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	self->max_cqe = da.max_cqe;
}

FIXTURE_TEARDOWN(resize)
{
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->buf);
}

/* A self-connected RC QP on @scq and @rcq. */
static struct ibv_qp *rs_connected(FIXTURE_DATA(resize) *self,
				   struct ibv_cq *scq, struct ibv_cq *rcq,
				   uint32_t depth)
{
	struct ibv_qp *qp = rs_qp(self->pd, scq, rcq, depth);

	if (qp && srdma_test_connect_self(qp, self->gidx, &self->gid)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/*
 * The sizes made (2^k - 1, at least what was asked for, shrinking and
 * growing, up to max_cqe) and refused with EINVAL, the CQ unchanged (0,
 * negative, over max_cqe). The CQ still completes work afterwards.
 */
TEST_F(resize, sizes)
{
	static const int sizes[] = { 1, 7, 3, 64, 2, 1000, 1, 15, 16, 5 };
	struct ibv_wc wc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct rs_wc want;
	size_t i;

	cq = ibv_create_cq(self->ctx, 3, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	EXPECT_EQ(3, cq->cqe);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		EXPECT_EQ(0, ibv_resize_cq(cq, sizes[i]));
		EXPECT_EQ(rs_size(sizes[i]), cq->cqe) TH_LOG("to %d", sizes[i]);
	}
	EXPECT_EQ(0, ibv_resize_cq(cq, self->max_cqe));
	EXPECT_EQ(self->max_cqe, cq->cqe);
	EXPECT_EQ(0, ibv_resize_cq(cq, 5));
	EXPECT_EQ(7, cq->cqe);
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 0));
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, -1));
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, self->max_cqe + 1));
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 1 << 30));
	EXPECT_EQ(7, cq->cqe);

	qp = rs_connected(self, cq, cq, 4);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_RDMA_READ, 42,
				     self->buf, 123, self->buf + WRITE_OFF, 0));
	ASSERT_EQ(1, srdma_test_wait_wc(cq, &wc));
	want = (struct rs_wc){ .wr_id = 42, .opcode = IBV_WC_RDMA_READ,
			       .byte_len = 123, .qp_num = qp->qp_num };
	rs_check(_metadata, &wc, &want);
	EXPECT_EQ(1, rs_empty(cq, 50));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/*
 * Completions of every kind pending across resizes: refused below their
 * number (EINVAL, the CQ and its completions unchanged), taken at exactly
 * their number and above; then polled in order with every field, the send
 * CQ (ibv_create_cq) with ibv_poll_cq and the receive CQ (ibv_create_cq_ex)
 * with start_poll. Shrunk to 1 when empty, both still work.
 */
TEST_F(resize, pending_every_field)
{
	struct rs_snap snap;
	struct rs_ring sr = {}, rr = {};
	struct ibv_cq *scq, *rcq;
	struct ibv_cq_ex *rcqx;
	struct ibv_wc wc[8];
	struct ibv_qp *qp;
	char *rb = self->buf + RECV_OFF;
	uint32_t qpn;
	int i;

	ASSERT_EQ(0, rs_snap(&snap));
	scq = ibv_create_cq(self->ctx, 7, NULL, NULL, 0);
	ASSERT_NE(NULL, scq);
	ASSERT_EQ(0, rs_ring_new(self->ctx, &snap, &sr));
	ASSERT_EQ(0, rs_snap(&snap));
	rcqx = srdma_test_cq_ex(self->ctx, 3);
	ASSERT_NE(NULL, rcqx);
	rcq = ibv_cq_ex_to_cq(rcqx);
	ASSERT_EQ(0, rs_ring_new(self->ctx, &snap, &rr));
	EXPECT_EQ(7, scq->cqe);
	EXPECT_EQ(3, rcq->cqe);
	qp = rs_connected(self, scq, rcq, 8);
	ASSERT_NE(NULL, qp);
	qpn = qp->qp_num;

	for (i = 0; i < 8192; i++)
		self->buf[i] = (char)(i * 7 + 3);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, srdma_test_post_recv(qp, self->mr, rb + i * 1024,
						  1024, 101 + i));
	ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_SEND, 1, self->buf,
				     100, NULL, 0));
	ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_SEND_WITH_IMM, 2,
				     self->buf + 100, 200, NULL, IMM1));
	ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_RDMA_WRITE, 3,
				     self->buf + 300, 300,
				     self->buf + WRITE_OFF, 0));
	ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_RDMA_WRITE_WITH_IMM,
				     4, self->buf + 600, 400,
				     self->buf + WRITE_OFF + 1024, IMM2));
	ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_RDMA_READ, 5,
				     self->buf + WRITE_OFF + 4096, 500,
				     self->buf + 1000, 0));
	ASSERT_EQ(0, rs_wait_pending(&sr, 5));
	ASSERT_EQ(0, rs_wait_pending(&rr, 3));

	/* below the pending count: refused, nothing changes */
	EXPECT_EQ(EINVAL, ibv_resize_cq(scq, 4));
	EXPECT_EQ(EINVAL, ibv_resize_cq(scq, 1));
	EXPECT_EQ(7, scq->cqe);
	EXPECT_EQ(EINVAL, ibv_resize_cq(rcq, 2));
	EXPECT_EQ(3, rcq->cqe);
	/* at and above it */
	EXPECT_EQ(0, ibv_resize_cq(scq, 5));
	EXPECT_EQ(7, scq->cqe);
	EXPECT_EQ(0, ibv_resize_cq(scq, 100));
	EXPECT_EQ(127, scq->cqe);
	EXPECT_EQ(0, ibv_resize_cq(rcq, 3));
	EXPECT_EQ(3, rcq->cqe);
	EXPECT_EQ(0, ibv_resize_cq(rcq, 20));
	EXPECT_EQ(31, rcq->cqe);
	EXPECT_EQ(EINVAL, ibv_resize_cq(rcq, 2));
	EXPECT_EQ(31, rcq->cqe);
	/* the kernel writes the old rings no more */
	EXPECT_EQ(5, sr.hdr->prod);
	EXPECT_EQ(3, rr.hdr->prod);

	ASSERT_EQ(5, rs_poll(scq, NULL, wc, 5));
	{
		const struct rs_wc want[5] = {
			{ 1, IBV_WC_SEND, 0, 0, 0, qpn, 0 },
			{ 2, IBV_WC_SEND, 0, 0, 0, qpn, 0 },
			{ 3, IBV_WC_RDMA_WRITE, 0, 0, 0, qpn, 0 },
			{ 4, IBV_WC_RDMA_WRITE, 0, 0, 0, qpn, 0 },
			{ 5, IBV_WC_RDMA_READ, 500, 0, 0, qpn, 0 },
		};

		for (i = 0; i < 5; i++)
			rs_check(_metadata, &wc[i], &want[i]);
	}
	ASSERT_EQ(3, rs_poll(rcq, rcqx, wc, 3));
	{
		const struct rs_wc want[3] = {
			{ 101, IBV_WC_RECV, 100, 0, 0, qpn, qpn },
			{ 102, IBV_WC_RECV, 200, IBV_WC_WITH_IMM, IMM1, qpn,
			  qpn },
			{ 103, IBV_WC_RECV_RDMA_WITH_IMM, 400, IBV_WC_WITH_IMM,
			  IMM2, qpn, qpn },
		};

		for (i = 0; i < 3; i++)
			rs_check(_metadata, &wc[i], &want[i]);
	}
	EXPECT_EQ(0, memcmp(rb, self->buf, 100));
	EXPECT_EQ(0, memcmp(rb + 1024, self->buf + 100, 200));
	EXPECT_EQ(0, memcmp(self->buf + WRITE_OFF, self->buf + 300, 300));
	EXPECT_EQ(0, memcmp(self->buf + WRITE_OFF + 1024, self->buf + 600,
			    400));
	EXPECT_EQ(0, memcmp(self->buf + WRITE_OFF + 4096, self->buf + 1000,
			    500));
	EXPECT_EQ(1, rs_empty(scq, 20));
	EXPECT_EQ(1, rs_empty(rcq, 20));

	/* empty: down to 1 each, and both still complete */
	EXPECT_EQ(0, ibv_resize_cq(scq, 1));
	EXPECT_EQ(1, scq->cqe);
	EXPECT_EQ(0, ibv_resize_cq(rcq, 1));
	EXPECT_EQ(1, rcq->cqe);
	ASSERT_EQ(0, srdma_test_post_recv(qp, self->mr, rb, 1024, 104));
	ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_SEND_WITH_IMM, 6,
				     self->buf + 2000, 77, NULL, IMM2));
	ASSERT_EQ(1, rs_poll(scq, NULL, wc, 1));
	{
		const struct rs_wc want = { 6, IBV_WC_SEND, 0, 0, 0, qpn, 0 };

		rs_check(_metadata, &wc[0], &want);
	}
	ASSERT_EQ(1, rs_poll(rcq, rcqx, wc, 1));
	{
		const struct rs_wc want = { 104, IBV_WC_RECV, 77,
					    IBV_WC_WITH_IMM, IMM2, qpn, qpn };

		rs_check(_metadata, &wc[0], &want);
	}
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));
	EXPECT_EQ(5, sr.hdr->prod);
	rs_ring_close(&sr);
	rs_ring_close(&rr);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(scq));
	EXPECT_EQ(0, ibv_destroy_cq(rcq));
}

/*
 * Grow and shrink, 60 rounds: each round posts 1 to 16 WRITEs and READs,
 * resizes at once (the completions still coming in from softirq), polls
 * part of them, resizes again, polls the rest; the two poll APIs take
 * turns. Every completion arrives once, in order, with every field.
 */
TEST_F(resize, grow_shrink_repeatedly)
{
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq, *rcq;
	struct ibv_wc wc[16];
	struct ibv_qp *qp;
	struct rs_wc want;
	uint64_t next = 1000;
	int round, k, i, half, s1, s2, got;

	cqx = srdma_test_cq_ex(self->ctx, 16);
	ASSERT_NE(NULL, cqx);
	cq = ibv_cq_ex_to_cq(cqx);
	rcq = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);
	ASSERT_NE(NULL, rcq);
	qp = rs_connected(self, cq, rcq, 16);
	ASSERT_NE(NULL, qp);
	for (round = 0; round < 60; round++) {
		k = 1 + round % 16;
		for (i = 0; i < k; i++)
			ASSERT_EQ(0, srdma_test_post(qp, self->mr,
						     (next + i) % 3 ?
						     IBV_WR_RDMA_WRITE :
						     IBV_WR_RDMA_READ,
						     next + i,
						     self->buf + 64 * i, 1 + i,
						     self->buf + WRITE_OFF +
						     64 * i, 0));
		s1 = k + (round * 7) % 40;	/* never below what is pending */
		ASSERT_EQ(0, ibv_resize_cq(cq, s1));
		EXPECT_EQ(rs_size(s1), cq->cqe);
		half = k / 2;
		got = rs_poll(cq, round & 1 ? cqx : NULL, wc, half);
		ASSERT_EQ(half, got);
		s2 = k - half + (round * 13) % 20;
		/* The next round posts before it resizes: room for it. */
		if (s2 < 1 + (round + 1) % 16)
			s2 = 1 + (round + 1) % 16;
		ASSERT_EQ(0, ibv_resize_cq(cq, s2));
		EXPECT_EQ(rs_size(s2), cq->cqe);
		got += rs_poll(cq, round & 2 ? cqx : NULL, wc + half, k - half);
		ASSERT_EQ(k, got);
		for (i = 0; i < k; i++) {
			want = (struct rs_wc){
				.wr_id = next + i,
				.opcode = (next + i) % 3 ? IBV_WC_RDMA_WRITE :
					  IBV_WC_RDMA_READ,
				.byte_len = (next + i) % 3 ? 0 : 1 + i,
				.qp_num = qp->qp_num,
			};
			rs_check(_metadata, &wc[i], &want);
		}
		next += k;
	}
	EXPECT_EQ(1, rs_empty(cq, 20));
	EXPECT_EQ(1, rs_empty(rcq, 1));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, ibv_destroy_cq(rcq));
}

/*
 * No resize inside an open start_poll batch (it holds the CQ): EINVAL,
 * the batch goes on undisturbed; between batches it works, and the
 * completions left continue after it.
 */
TEST_F(resize, not_inside_a_batch)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	struct rs_snap snap;
	struct rs_ring r = {};
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	struct rs_wc want;
	int i;

	ASSERT_EQ(0, rs_snap(&snap));
	cqx = srdma_test_cq_ex(self->ctx, 7);
	ASSERT_NE(NULL, cqx);
	cq = ibv_cq_ex_to_cq(cqx);
	ASSERT_EQ(0, rs_ring_new(self->ctx, &snap, &r));
	qp = rs_connected(self, cq, cq, 8);
	ASSERT_NE(NULL, qp);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_RDMA_READ,
					     1 + i, self->buf + WRITE_OFF,
					     10 + i, self->buf, 0));
	ASSERT_EQ(0, rs_wait_pending(&r, 4));
	want = (struct rs_wc){ .opcode = IBV_WC_RDMA_READ,
			       .qp_num = qp->qp_num };

	ASSERT_EQ(0, ibv_start_poll(cqx, &attr));
	rs_read_ex(cqx, &wc);
	want.wr_id = 1;
	want.byte_len = 10;
	rs_check(_metadata, &wc, &want);
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 100));
	EXPECT_EQ(7, cq->cqe);
	ASSERT_EQ(0, ibv_next_poll(cqx));
	rs_read_ex(cqx, &wc);
	want.wr_id = 2;
	want.byte_len = 11;
	rs_check(_metadata, &wc, &want);
	ibv_end_poll(cqx);

	EXPECT_EQ(0, ibv_resize_cq(cq, 100));
	EXPECT_EQ(127, cq->cqe);
	ASSERT_EQ(0, ibv_start_poll(cqx, &attr));
	rs_read_ex(cqx, &wc);
	want.wr_id = 3;
	want.byte_len = 12;
	rs_check(_metadata, &wc, &want);
	ibv_end_poll(cqx);
	ASSERT_EQ(1, ibv_poll_cq(cq, 1, &wc));
	want.wr_id = 4;
	want.byte_len = 13;
	rs_check(_metadata, &wc, &want);
	EXPECT_EQ(ENOENT, ibv_start_poll(cqx, &attr));
	rs_ring_close(&r);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

struct rs_resizer {
	struct ibv_cq *cq;
	int stop;			/* set by the main thread (atomic) */
	int done, failed, err;
};

/* Resize between 64 and 255 entries until told to stop. */
static void *rs_resize_loop(void *arg)
{
	struct rs_resizer *z = arg;
	unsigned int seed = 7;
	int ret;

	while (!__atomic_load_n(&z->stop, __ATOMIC_RELAXED)) {
		ret = ibv_resize_cq(z->cq, 64 + rand_r(&seed) % 192);
		if (ret) {
			z->failed++;
			z->err = ret;
		} else {
			z->done++;
		}
		usleep(200);	/* the CQ lock is no fair lock */
	}
	return NULL;
}

/*
 * A second thread resizes the CQ in a loop while this one posts WRITEs
 * (at most 32 outstanding, the CQ always holds 64 or more) and polls them
 * with both APIs: every resize succeeds, every completion arrives exactly
 * once and in order.
 */
TEST_F(resize, concurrent_with_traffic)
{
	struct rs_resizer z = {};
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq, *rcq;
	struct ibv_wc wc[32];
	struct ibv_qp *qp;
	struct rs_wc want;
	uint64_t next = 1;
	pthread_t t;
	int round, i, n, rounds = 100 / (srdma_test_slow() + 1);

	cqx = srdma_test_cq_ex(self->ctx, 64);
	ASSERT_NE(NULL, cqx);
	cq = ibv_cq_ex_to_cq(cqx);
	rcq = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);
	ASSERT_NE(NULL, rcq);
	qp = rs_connected(self, cq, rcq, 32);
	ASSERT_NE(NULL, qp);
	z.cq = cq;
	ASSERT_EQ(0, pthread_create(&t, NULL, rs_resize_loop, &z));
	for (round = 0; round < rounds; round++) {
		n = 1 + round % 32;
		for (i = 0; i < n; i++)
			ASSERT_EQ(0, srdma_test_post(qp, self->mr,
						     IBV_WR_RDMA_WRITE,
						     next + i, self->buf + i, 8,
						     self->buf + WRITE_OFF + i,
						     0));
		ASSERT_EQ(n, rs_poll(cq, round & 1 ? cqx : NULL, wc, n));
		for (i = 0; i < n; i++) {
			want = (struct rs_wc){ .wr_id = next + i,
					       .opcode = IBV_WC_RDMA_WRITE,
					       .qp_num = qp->qp_num };
			rs_check(_metadata, &wc[i], &want);
		}
		next += n;
	}
	__atomic_store_n(&z.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	EXPECT_EQ(0, z.failed) TH_LOG("resize failed: %s", strerror(z.err));
	EXPECT_LT(0, z.done);
	TH_LOG("%d resizes during %d rounds", z.done, rounds);
	EXPECT_EQ(1, rs_empty(cq, 20));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, ibv_destroy_cq(rcq));
}

struct rs_scribbler {
	uint32_t *cons;			/* written atomically */
	int stop;			/* set by the main thread (atomic) */
	uint32_t base;
};

/* Write consumer indices far out of range until told to stop. */
static void *rs_scribble(void *arg)
{
	struct rs_scribbler *s = arg;
	unsigned int seed = 11;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
		__atomic_store_n(s->cons, s->base + 0x40000000u +
				 rand_r(&seed) % 0x80000000u, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * A ring filled to its last slot (a CQ of 1 has two, and a QP may fill
 * both, as srdma_cq_post() allows) is not one the consumer overran: it
 * grows, and both completions come out in order with every field.
 */
TEST_F(resize, full_ring_grows)
{
	struct rs_snap snap;
	struct rs_ring r = {};
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_wc wc[2];
	struct rs_wc want;
	int i;

	ASSERT_EQ(0, rs_snap(&snap));
	cq = ibv_create_cq(self->ctx, 1, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	ASSERT_EQ(1, cq->cqe);
	ASSERT_EQ(0, rs_ring_new(self->ctx, &snap, &r));
	qp = rs_connected(self, cq, cq, 2);
	ASSERT_NE(NULL, qp);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_RDMA_WRITE,
					     1 + i, self->buf, 8,
					     self->buf + WRITE_OFF, 0));
	ASSERT_EQ(0, rs_wait_pending(&r, 2));
	EXPECT_EQ(2, r.hdr->prod - r.hdr->cons);
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 1));	/* below the 2 pending */
	ASSERT_EQ(0, ibv_resize_cq(cq, 15));
	EXPECT_EQ(15, cq->cqe);
	ASSERT_EQ(2, rs_poll(cq, NULL, wc, 2));
	for (i = 0; i < 2; i++) {
		want = (struct rs_wc){ .wr_id = 1 + i,
				       .opcode = IBV_WC_RDMA_WRITE,
				       .qp_num = qp->qp_num };
		rs_check(_metadata, &wc[i], &want);
	}
	EXPECT_EQ(1, rs_empty(cq, 20));
	rs_ring_close(&r);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/*
 * A process that writes its CQ ring's consumer index while it resizes:
 * an index out of range is refused (EINVAL, nothing changes), read once.
 * After a resize the old ring is the process's alone: scribbling on it
 * during further resizes and traffic changes nothing, the kernel writes
 * it no more, and its pages stay valid in the process's own mapping.
 */
TEST_F(resize, hostile_consumer_index)
{
	struct rs_scribbler s = {};
	struct rs_snap snap;
	struct rs_ring r = {};
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_wc wc[4];
	struct rs_wc want;
	uint32_t prod, cons;
	pthread_t t;
	int i;

	ASSERT_EQ(0, rs_snap(&snap));
	cq = ibv_create_cq(self->ctx, 7, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	ASSERT_EQ(0, rs_ring_new(self->ctx, &snap, &r));
	qp = rs_connected(self, cq, cq, 8);
	ASSERT_NE(NULL, qp);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_RDMA_WRITE,
					     1 + i, self->buf, 8,
					     self->buf + WRITE_OFF, 0));
	ASSERT_EQ(0, rs_wait_pending(&r, 2));
	prod = r.hdr->prod;
	cons = r.hdr->cons;
	EXPECT_EQ(2, prod - cons);

	/* out of range, one way or the other: refused */
	r.hdr->cons = prod + 1;
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 100));
	r.hdr->cons = prod - 9;		/* more than the ring holds */
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 100));
	r.hdr->cons = prod + 0x80000000u;
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 100));
	EXPECT_EQ(7, cq->cqe);
	/* and while a thread keeps changing it */
	s.cons = &r.hdr->cons;
	s.base = prod;
	ASSERT_EQ(0, pthread_create(&t, NULL, rs_scribble, &s));
	for (i = 0; i < 50; i++)
		EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 1 + i));
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	EXPECT_EQ(7, cq->cqe);

	/* put back: the resize goes through, the completions with it */
	r.hdr->cons = cons;
	ASSERT_EQ(0, ibv_resize_cq(cq, 30));
	EXPECT_EQ(31, cq->cqe);
	/* the old ring is the process's own now: scribble on it */
	__atomic_store_n(&s.stop, 0, __ATOMIC_RELAXED);
	ASSERT_EQ(0, pthread_create(&t, NULL, rs_scribble, &s));
	for (i = 0; i < 20; i++)
		EXPECT_EQ(0, ibv_resize_cq(cq, 2 + i * 5));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, srdma_test_post(qp, self->mr, IBV_WR_RDMA_READ,
					     3 + i, self->buf + WRITE_OFF + 64,
					     16, self->buf, 0));
	ASSERT_EQ(4, rs_poll(cq, NULL, wc, 4));
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	for (i = 0; i < 4; i++) {
		want = (struct rs_wc){ .wr_id = 1 + i,
				       .opcode = i < 2 ? IBV_WC_RDMA_WRITE :
						 IBV_WC_RDMA_READ,
				       .byte_len = i < 2 ? 0 : 16,
				       .qp_num = qp->qp_num };
		rs_check(_metadata, &wc[i], &want);
	}
	EXPECT_EQ(1, rs_empty(cq, 20));
	/* the kernel left the old ring alone (its offset may be reused) */
	EXPECT_EQ(prod, r.hdr->prod);
	rs_ring_close(&r);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qp));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

TEST_HARNESS_MAIN
