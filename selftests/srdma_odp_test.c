// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * On-demand paging MRs (IBV_ACCESS_ON_DEMAND) on the device under test:
 * two RC QPs of one PD connected to each other, a (requester, CQ ca) and
 * b (target, CQ cb). The memory behind every on-demand MR is fresh: never
 * touched (anonymous), or a memfd whose pages sit in the page cache and
 * are not mapped into this process; so each transfer starts on pages that
 * are not present, on the responder's side, the requester's, or both.
 *
 * Checked: the bytes every WRITE, READ, SEND and atomic moved, every
 * field of every completion, the capabilities, the counters (misses,
 * faults, invalidations, RNR NAKs), that after an invalidation
 * (MADV_DONTNEED) no byte goes to or comes from the old page,
 * ibv_advise_mr() (prefetch, prefetch without faults, its refusals), an
 * access error for memory unmapped under an MR (also when its request was
 * given up, and kept apart from the same QP's requester), and the
 * refusals:
 * implicit MRs, ibv_rereg_mr(), memory windows.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define LEN		(64 * 1024)
#define ACCESS_QP	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)
#define ACCESS_ODP	(IBV_ACCESS_LOCAL_WRITE | ACCESS_QP | \
			 IBV_ACCESS_ON_DEMAND)

#define connect_to(qp, dqpn, gidx, gid) \
	srdma_test_connect_to(qp, dqpn, gidx, gid, ACCESS_QP)
/* One completion on @cq within about 10 s. */
#define wait_wc(cq, wc) srdma_test_wait_wc_for(cq, wc, 100000)

/* LEN fresh anonymous bytes, never touched: no page present. */
static char *fresh(void)
{
	void *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * LEN bytes of @pattern from a memfd, mapped shared: the pages are in
 * the page cache, not in this process's page tables until touched.
 */
static char *fresh_pattern(unsigned char pattern)
{
	unsigned char buf[4096];
	int fd = memfd_create("srdma_odp", 0), i;
	void *p;

	if (fd < 0)
		return NULL;
	for (i = 0; i < LEN / 4096; i++) {
		memset(buf, pattern + i, sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != sizeof(buf)) {
			close(fd);
			return NULL;
		}
	}
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* Does [p, +len) hold the pattern fresh_pattern(@pattern) put there? */
static int is_pattern(const unsigned char *p, size_t off, size_t len,
		      unsigned char pattern)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(pattern + (off + i) / 4096))
			return 0;
	return 1;
}

static int is_byte(const unsigned char *p, size_t len, unsigned char b)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != b)
			return 0;
	return 1;
}

FIXTURE(odp) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *ca, *cb;
	struct ibv_qp *qa, *qb;
	union ibv_gid gid;
	int gidx;
	struct ibv_mr *mrs[8];
	int nmr;
	char *maps[8];
	int nmap;
};

FIXTURE_SETUP(odp)
{
	struct ibv_device_attr_ex dx;

	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx);
	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &dx));
	if (!(dx.odp_caps.general_caps & IBV_ODP_SUPPORT))
		SRDMA_TEST_SETUP_SKIP("no on-demand paging");
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->ca = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	self->cb = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->ca);
	ASSERT_NE(NULL, self->cb);
	self->qa = srdma_test_rc_qp(self->pd, self->ca, 16, 16, 2);
	self->qb = srdma_test_rc_qp(self->pd, self->cb, 16, 16, 2);
	ASSERT_NE(NULL, self->qa);
	ASSERT_NE(NULL, self->qb);
	ASSERT_EQ(0, connect_to(self->qa, self->qb->qp_num, self->gidx,
				&self->gid));
	ASSERT_EQ(0, connect_to(self->qb, self->qa->qp_num, self->gidx,
				&self->gid));
}

FIXTURE_TEARDOWN(odp)
{
	int i;

	if (self->qa)
		ibv_destroy_qp(self->qa);
	if (self->qb)
		ibv_destroy_qp(self->qb);
	for (i = 0; i < self->nmr; i++)
		ibv_dereg_mr(self->mrs[i]);
	for (i = 0; i < self->nmap; i++)
		munmap(self->maps[i], LEN);
	if (self->ca)
		ibv_destroy_cq(self->ca);
	if (self->cb)
		ibv_destroy_cq(self->cb);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/* Register @buf (LEN bytes) with @access; kept for the teardown. */
static struct ibv_mr *reg(FIXTURE_DATA(odp) *self, char *buf,
			  unsigned int access)
{
	struct ibv_mr *mr = ibv_reg_mr(self->pd, buf, LEN, access);

	if (mr)
		self->mrs[self->nmr++] = mr;
	return mr;
}

static char *keep(FIXTURE_DATA(odp) *self, char *p)
{
	if (p)
		self->maps[self->nmap++] = p;
	return p;
}

/* Post one signaled @op from @lmr at @local to @rmr at @remote. */
static int post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		struct ibv_mr *lmr, void *local, uint32_t len,
		struct ibv_mr *rmr, void *remote)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)local, .length = len, .lkey = lmr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)remote;
		wr.wr.atomic.rkey = rmr->rkey;
		wr.wr.atomic.compare_add = 5;
	} else if (rmr) {
		wr.wr.rdma.remote_addr = (uintptr_t)remote;
		wr.wr.rdma.rkey = rmr->rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/*
 * Every field of the requester's completion of @id: @op, success,
 * byte_len @len (the length of a READ or atomic, else 0).
 */
#define EXPECT_REQ_WC(id, op, len) do {					\
	struct ibv_wc __w;						\
									\
	wait_wc(self->ca, &__w);					\
	EXPECT_SEND_WC(__w, id, IBV_WC_SUCCESS, op, len, self->qa);	\
} while (0)

TEST_F(odp, caps)
{
	struct ibv_device_attr_ex dx;
	uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		      IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &dx));
	EXPECT_EQ(IBV_ODP_SUPPORT, dx.odp_caps.general_caps);
	EXPECT_EQ(rc, dx.odp_caps.per_transport_caps.rc_odp_caps);
	EXPECT_EQ(0, dx.odp_caps.per_transport_caps.uc_odp_caps);
	EXPECT_EQ(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		  IBV_ODP_SUPPORT_SRQ_RECV,
		  dx.odp_caps.per_transport_caps.ud_odp_caps);
}

/* WRITE from pages not present into pages not present. */
TEST_F(odp, write)
{
	char *src = keep(self, fresh_pattern(0x10));
	char *dst = keep(self, fresh());
	long long miss = srdma_test_counter("odp_misses");
	long long faults = srdma_test_counter("odp_faults");
	long long rnr = srdma_test_counter("rnr_nak_sent");
	struct ibv_mr *smr, *dmr;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	smr = reg(self, src, ACCESS_ODP);
	dmr = reg(self, dst, ACCESS_ODP);
	ASSERT_NE(NULL, smr) TH_LOG("reg_mr: %s", strerror(errno));
	ASSERT_NE(NULL, dmr);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 1, smr, src, LEN,
			  dmr, dst));
	EXPECT_REQ_WC(1, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(is_pattern((unsigned char *)dst, 0, LEN, 0x10));
	EXPECT_LT(miss, srdma_test_counter("odp_misses"));
	EXPECT_LT(faults, srdma_test_counter("odp_faults"));
	EXPECT_LT(rnr, srdma_test_counter("rnr_nak_sent"));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qa));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qb));
}

/* READ from pages not present into pages not present, short and long. */
TEST_F(odp, read)
{
	char *src = keep(self, fresh_pattern(0x30));
	char *dst = keep(self, fresh());
	struct ibv_mr *smr, *dmr;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	smr = reg(self, src, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
	dmr = reg(self, dst, ACCESS_ODP);
	ASSERT_NE(NULL, smr) TH_LOG("read-only ODP MR: %s", strerror(errno));
	ASSERT_NE(NULL, dmr);
	/* Short: answered at once, unless the pages must come in first. */
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 1, dmr, dst, 512,
			  smr, src));
	EXPECT_REQ_WC(1, IBV_WC_RDMA_READ, 512);
	EXPECT_TRUE(is_pattern((unsigned char *)dst, 0, 512, 0x30));
	/* Long: answered by the read work, the rest of the pages missing. */
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 2, dmr, dst, LEN,
			  smr, src));
	EXPECT_REQ_WC(2, IBV_WC_RDMA_READ, LEN);
	EXPECT_TRUE(is_pattern((unsigned char *)dst, 0, LEN, 0x30));
	/* Resident now: the same again, at an offset. */
	memset(dst, 0, LEN);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 3, dmr, dst + 100,
			  5000, smr, src + 8000));
	EXPECT_REQ_WC(3, IBV_WC_RDMA_READ, 5000);
	EXPECT_TRUE(is_pattern((unsigned char *)dst + 100, 8000, 5000, 0x30));
	EXPECT_TRUE(is_byte((unsigned char *)dst, 100, 0));
}

/* SEND from pages not present into a receive buffer not present. */
TEST_F(odp, send_recv)
{
	char *src = keep(self, fresh_pattern(0x50));
	char *dst = keep(self, fresh());
	struct ibv_mr *smr, *dmr;
	struct ibv_wc wc;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	smr = reg(self, src, IBV_ACCESS_ON_DEMAND);
	dmr = reg(self, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	ASSERT_NE(NULL, smr);
	ASSERT_NE(NULL, dmr);
	ASSERT_EQ(0, srdma_test_post_recv(self->qb, dmr, dst, LEN, 0x77));
	ASSERT_EQ(0, post(self->qa, IBV_WR_SEND, 4, smr, src, 40000, NULL,
			  NULL));
	EXPECT_REQ_WC(4, IBV_WC_SEND, 0);
	wait_wc(self->cb, &wc);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x77, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(40000, wc.byte_len);
	EXPECT_EQ(self->qb->qp_num, wc.qp_num);
	EXPECT_EQ(self->qa->qp_num, wc.src_qp);
	EXPECT_EQ(0, wc.wc_flags);
	EXPECT_TRUE(is_pattern((unsigned char *)dst, 0, 40000, 0x50));
	EXPECT_TRUE(is_byte((unsigned char *)dst + 40000, LEN - 40000, 0));
}

/* FETCH ADD on a target not present, its result into a page not present. */
TEST_F(odp, atomic)
{
	char *tgt = keep(self, fresh());
	char *res = keep(self, fresh());
	struct ibv_mr *tmr, *rmr;
	uint64_t v;

	ASSERT_NE(NULL, tgt);
	ASSERT_NE(NULL, res);
	tmr = reg(self, tgt, ACCESS_ODP);
	rmr = reg(self, res, ACCESS_ODP);
	ASSERT_NE(NULL, tmr);
	ASSERT_NE(NULL, rmr);
	ASSERT_EQ(0, post(self->qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, rmr,
			  res + 8192, 8, tmr, tgt + 4096));
	EXPECT_REQ_WC(5, IBV_WC_FETCH_ADD, 8);
	memcpy(&v, res + 8192, 8);
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, post(self->qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 6, rmr,
			  res + 8192, 8, tmr, tgt + 4096));
	EXPECT_REQ_WC(6, IBV_WC_FETCH_ADD, 8);
	memcpy(&v, res + 8192, 8);
	EXPECT_EQ(5, v);
	memcpy(&v, tgt + 4096, 8);
	EXPECT_EQ(10, v);
}

/*
 * After MADV_DONTNEED the old pages are gone from the process: a WRITE
 * must land in the new ones (the process sees it), and a READ must find
 * what the process sees (zeros), never the old bytes.
 */
TEST_F(odp, invalidate)
{
	char *src = keep(self, fresh_pattern(0x70));
	char *dst = keep(self, fresh());
	char *back = keep(self, fresh());
	long long inval = srdma_test_counter("odp_invalidations");
	struct ibv_mr *smr, *dmr, *bmr;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, back);
	smr = reg(self, src, ACCESS_ODP);
	dmr = reg(self, dst, ACCESS_ODP);
	bmr = reg(self, back, ACCESS_ODP);
	ASSERT_NE(NULL, smr);
	ASSERT_NE(NULL, dmr);
	ASSERT_NE(NULL, bmr);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 7, smr, src, LEN,
			  dmr, dst));
	EXPECT_REQ_WC(7, IBV_WC_RDMA_WRITE, 0);
	ASSERT_TRUE(is_pattern((unsigned char *)dst, 0, LEN, 0x70));

	ASSERT_EQ(0, madvise(dst, LEN, MADV_DONTNEED));
	EXPECT_TRUE(is_byte((unsigned char *)dst, LEN, 0));
	EXPECT_LT(inval, srdma_test_counter("odp_invalidations"));
	/* READ it back: zeros, not the bytes of the old pages. */
	memset(back, 0xee, LEN);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 8, bmr, back, LEN,
			  dmr, dst));
	EXPECT_REQ_WC(8, IBV_WC_RDMA_READ, LEN);
	EXPECT_TRUE(is_byte((unsigned char *)back, LEN, 0));

	/* WRITE again: the process sees it in its new pages. */
	ASSERT_EQ(0, madvise(dst, LEN, MADV_DONTNEED));
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 9, smr, src + 4096,
			  8192, dmr, dst + 12288));
	EXPECT_REQ_WC(9, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(is_pattern((unsigned char *)dst + 12288, 4096, 8192,
			       0x70));
	EXPECT_TRUE(is_byte((unsigned char *)dst, 12288, 0));
}

/*
 * ibv_advise_mr(): a prefetch makes the next WRITE miss nothing; a
 * prefetch without faults maps only pages already present.
 */
TEST_F(odp, prefetch)
{
	char *src = keep(self, fresh_pattern(0x20));
	char *dst = keep(self, fresh());
	struct ibv_mr *smr, *dmr;
	struct ibv_sge sge;
	long long miss;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	smr = reg(self, src, ACCESS_ODP);
	dmr = reg(self, dst, ACCESS_ODP);
	ASSERT_NE(NULL, smr);
	ASSERT_NE(NULL, dmr);

	sge = (struct ibv_sge){ (uintptr_t)src, LEN, smr->lkey };
	ASSERT_EQ(0, ibv_advise_mr(self->pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	sge = (struct ibv_sge){ (uintptr_t)dst, LEN, dmr->lkey };
	ASSERT_EQ(0, ibv_advise_mr(self->pd,
				   IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	miss = srdma_test_counter("odp_misses");
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 10, smr, src, LEN,
			  dmr, dst));
	EXPECT_REQ_WC(10, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(is_pattern((unsigned char *)dst, 0, LEN, 0x20));
	EXPECT_EQ(miss, srdma_test_counter("odp_misses"));

	/* Gone again; touched by the process; mapped without a fault. */
	ASSERT_EQ(0, madvise(dst, LEN, MADV_DONTNEED));
	memset(dst, 1, LEN);
	ASSERT_EQ(0, ibv_advise_mr(self->pd,
				   IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	miss = srdma_test_counter("odp_misses");
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 11, smr, src, LEN,
			  dmr, dst));
	EXPECT_REQ_WC(11, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(is_pattern((unsigned char *)dst, 0, LEN, 0x20));
	EXPECT_EQ(miss, srdma_test_counter("odp_misses"));
}

/* ibv_advise_mr() refuses what it cannot prefetch. */
TEST_F(odp, prefetch_refused)
{
	char *buf = keep(self, fresh());
	struct ibv_mr *omr, *pmr;
	struct ibv_sge sge;
	char *plain;

	ASSERT_NE(NULL, buf);
	plain = aligned_alloc(4096, LEN);
	ASSERT_NE(NULL, plain);
	omr = reg(self, buf, ACCESS_ODP);
	pmr = reg(self, plain, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, omr);
	ASSERT_NE(NULL, pmr);
	/* An lkey that names no MR. */
	sge = (struct ibv_sge){ (uintptr_t)buf, 4096, omr->lkey ^ 0xff00 };
	EXPECT_EQ(EINVAL, ibv_advise_mr(self->pd,
					IBV_ADVISE_MR_ADVICE_PREFETCH,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	/* An MR that is not on demand. */
	sge = (struct ibv_sge){ (uintptr_t)plain, 4096, pmr->lkey };
	EXPECT_EQ(EINVAL, ibv_advise_mr(self->pd,
					IBV_ADVISE_MR_ADVICE_PREFETCH,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	/* A range past the MR's end. */
	sge = (struct ibv_sge){ (uintptr_t)buf + LEN - 4096, 8192,
				omr->lkey };
	EXPECT_EQ(EINVAL, ibv_advise_mr(self->pd,
					IBV_ADVISE_MR_ADVICE_PREFETCH,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	ibv_dereg_mr(pmr);
	self->nmr--;
	free(plain);
}

/*
 * qa and qb through RESET and connected again, their CQs emptied of what
 * the reset flushed; 0 or -1.
 */
static int reconnect(FIXTURE_DATA(odp) *self)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	if (ibv_modify_qp(self->qa, &a, IBV_QP_STATE) ||
	    ibv_modify_qp(self->qb, &a, IBV_QP_STATE))
		return -1;
	while (ibv_poll_cq(self->ca, 1, &wc) > 0 ||
	       ibv_poll_cq(self->cb, 1, &wc) > 0)
		;
	if (connect_to(self->qa, self->qb->qp_num, self->gidx, &self->gid) ||
	    connect_to(self->qb, self->qa->qp_num, self->gidx, &self->gid))
		return -1;
	return 0;
}

/*
 * Memory unmapped under an MR: a WRITE into it is a remote access error
 * (the fault fails), not an endless RNR wait; the target QP fails. Once
 * mapped again, the MR works again (the failure is not remembered), also
 * when the requester's RNR retries had queued several faults and the
 * later ones failed after the error was reported: the pause before the
 * mapping lets them.
 */
TEST_F(odp, unmapped)
{
	char *src = keep(self, fresh_pattern(0x40));
	char *dst = fresh();
	struct ibv_mr *smr, *dmr;
	struct ibv_wc wc;
	int round;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	smr = reg(self, src, ACCESS_ODP);
	dmr = reg(self, dst, ACCESS_ODP);
	ASSERT_NE(NULL, smr);
	ASSERT_NE(NULL, dmr);
	for (round = 0; round < 6; round++) {
		ASSERT_EQ(0, munmap(dst, LEN));
		ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 12, smr, src,
				  4096, dmr, dst + 8192));
		wait_wc(self->ca, &wc);
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status)
			TH_LOG("round %d: status %s", round,
			       ibv_wc_status_str(wc.status));
		EXPECT_EQ(12, wc.wr_id);
		EXPECT_EQ(self->qa->qp_num, wc.qp_num);
		EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qb));
		usleep(20000 * round);

		/* Mapped again: the same MR works on a new connection. */
		ASSERT_EQ(dst, mmap(dst, LEN, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				    -1, 0));
		if (!round)
			keep(self, dst);
		ASSERT_EQ(0, reconnect(self));
		ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 14, smr, src,
				  4096, dmr, dst + 8192));
		EXPECT_REQ_WC(14, IBV_WC_RDMA_WRITE, 0);
		EXPECT_TRUE(is_pattern((unsigned char *)dst + 8192, 0, 4096,
				       0x40)) TH_LOG("round %d", round);
		if (!_metadata->passed)
			break;
	}
}

/*
 * Connect qa to qb again without RNR retries, and WRITE 4 KiB from @src
 * into dst + 4096, unmapped: given up (RNR_RETRY_EXC) before qb's fault
 * fails, which it does in the 200 ms that follow; then map @dst again.
 * 0, or -1 with what went wrong on stderr.
 */
static int give_up_write(FIXTURE_DATA(odp) *self, struct ibv_mr *smr,
			 char *src, struct ibv_mr *dmr, char *dst,
			 uint64_t wr_id)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	if (ibv_modify_qp(self->qa, &a, IBV_QP_STATE) ||
	    srdma_test_qp_init_access(self->qa, ACCESS_QP) ||
	    srdma_test_qp_rtr_to(self->qa, self->qb->qp_num, self->gidx,
				 &self->gid, IBV_MTU_1024))
		return -1;
	srdma_test_rts_attr(&a);
	a.rnr_retry = 0;
	if (ibv_modify_qp(self->qa, &a, SRDMA_TEST_RTS_MASK) ||
	    post(self->qa, IBV_WR_RDMA_WRITE, wr_id, smr, src, 4096, dmr,
		 dst + 4096))
		return -1;
	wait_wc(self->ca, &wc);
	if (wc.status != IBV_WC_RNR_RETRY_EXC_ERR || wc.wr_id != wr_id ||
	    wc.qp_num != self->qa->qp_num) {
		fprintf(stderr, "given up WRITE: status %s wr_id %llu qp %u\n",
			ibv_wc_status_str(wc.status),
			(unsigned long long)wc.wr_id, wc.qp_num);
		return -1;
	}
	usleep(200000);
	if (mmap(dst, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != dst)
		return -1;
	return 0;
}

/*
 * A failed fault whose request was given up (no RNR retries: the WRITE
 * fails with RNR_RETRY_EXC before its fault does) is never reported. It is
 * the target QP's: once the memory is mapped again, a WRITE through
 * another QP pair works at once, and so does one on the first pair after
 * a reset.
 */
TEST_F(odp, unmapped_given_up)
{
	char *src = keep(self, fresh_pattern(0x50));
	char *dst = fresh();
	struct ibv_mr *smr, *dmr;
	struct ibv_qp *qc, *qd;
	struct ibv_wc wc;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	smr = reg(self, src, ACCESS_ODP);
	dmr = reg(self, dst, ACCESS_ODP);
	ASSERT_NE(NULL, smr);
	ASSERT_NE(NULL, dmr);
	ASSERT_EQ(0, munmap(dst, LEN));
	ASSERT_EQ(0, give_up_write(self, smr, src, dmr, dst, 15));
	keep(self, dst);

	/* Another pair, at once: qb's failure is not its. */
	qc = srdma_test_rc_qp(self->pd, self->ca, 16, 16, 2);
	qd = srdma_test_rc_qp(self->pd, self->cb, 16, 16, 2);
	ASSERT_NE(NULL, qc);
	ASSERT_NE(NULL, qd);
	ASSERT_EQ(0, connect_to(qc, qd->qp_num, self->gidx, &self->gid));
	ASSERT_EQ(0, connect_to(qd, qc->qp_num, self->gidx, &self->gid));
	ASSERT_EQ(0, post(qc, IBV_WR_RDMA_WRITE, 16, smr, src, 4096, dmr,
			  dst + 4096));
	wait_wc(self->ca, &wc);
	EXPECT_SEND_WC(wc, 16, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, qc);
	EXPECT_TRUE(is_pattern((unsigned char *)dst + 4096, 0, 4096, 0x50));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(qd));
	ASSERT_EQ(0, ibv_destroy_qp(qc));
	ASSERT_EQ(0, ibv_destroy_qp(qd));

	/* The first pair after a reset, at once. */
	ASSERT_EQ(0, madvise(dst, LEN, MADV_DONTNEED));
	ASSERT_EQ(0, reconnect(self));
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 17, smr, src, 4096,
			  dmr, dst + 4096));
	EXPECT_REQ_WC(17, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(is_pattern((unsigned char *)dst + 4096, 0, 4096, 0x50));
}

/*
 * A READ of memory unmapped under the responder's MR, short (answered in
 * the softirq, then by the read work) and long (the read work): the read
 * work stops for the fault, which fails, and the READ is a remote access
 * error. Mapped again, READs of it work on a new connection.
 */
TEST_F(odp, unmapped_read)
{
	static const uint32_t lens[] = { 2048, LEN };
	char *dst = keep(self, fresh());
	char *src = fresh();
	struct ibv_mr *smr, *dmr;
	struct ibv_wc wc;
	unsigned int i;

	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, src);
	dmr = reg(self, dst, ACCESS_ODP);
	smr = reg(self, src, ACCESS_ODP);
	ASSERT_NE(NULL, smr);
	ASSERT_NE(NULL, dmr);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, munmap(src, LEN));
		ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 20 + i, dmr, dst,
				  lens[i], smr, src));
		wait_wc(self->ca, &wc);
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status)
			TH_LOG("%u bytes: status %s", lens[i],
			       ibv_wc_status_str(wc.status));
		EXPECT_EQ(20 + i, wc.wr_id);
		EXPECT_EQ(self->qa->qp_num, wc.qp_num);
		EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qb));

		ASSERT_EQ(src, mmap(src, LEN, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				    -1, 0));
		if (!i)
			keep(self, src);
		memset(src, 0x31 + i, LEN);
		memset(dst, 0, LEN);
		ASSERT_EQ(0, reconnect(self));
		ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 22 + i, dmr, dst,
				  lens[i], smr, src));
		EXPECT_REQ_WC(22 + i, IBV_WC_RDMA_READ, lens[i]);
		EXPECT_TRUE(is_byte((unsigned char *)dst, lens[i], 0x31 + i))
			TH_LOG("%u bytes", lens[i]);
		if (!_metadata->passed)
			break;
	}
}

/*
 * A QP's responder and requester keep their failed faults apart: the
 * responder of qb fails a fault in bytes of dmr (a WRITE into them,
 * unmapped, given up); once they are mapped again, qb's own requester
 * reads those bytes at once, without a reset of qb, and its WRITE works.
 */
TEST_F(odp, unmapped_roles)
{
	char *src = keep(self, fresh_pattern(0x60));
	char *dst = fresh();
	char *sink = keep(self, fresh());
	struct ibv_mr *smr, *dmr, *kmr;
	struct ibv_qp_attr a = {};
	struct ibv_wc wc;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, sink);
	smr = reg(self, src, ACCESS_ODP);
	dmr = reg(self, dst, ACCESS_ODP);
	kmr = reg(self, sink, ACCESS_ODP);
	ASSERT_NE(NULL, smr);
	ASSERT_NE(NULL, dmr);
	ASSERT_NE(NULL, kmr);
	ASSERT_EQ(0, munmap(dst, LEN));
	/* qa's WRITE is given up, qb stays in RTS. */
	ASSERT_EQ(0, give_up_write(self, smr, src, dmr, dst, 18));
	keep(self, dst);
	memset(dst + 4096, 0x7a, 4096);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qb));

	/* qa again (qb keeps its state), then qb writes from those bytes. */
	a.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(self->qa, &a, IBV_QP_STATE));
	while (ibv_poll_cq(self->ca, 1, &wc) > 0)
		;
	ASSERT_EQ(0, connect_to(self->qa, self->qb->qp_num, self->gidx,
				&self->gid));
	ASSERT_EQ(0, post(self->qb, IBV_WR_RDMA_WRITE, 19, dmr, dst + 4096,
			  4096, kmr, sink + 8192));
	wait_wc(self->cb, &wc);
	EXPECT_SEND_WC(wc, 19, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0,
		       self->qb);
	EXPECT_TRUE(is_byte((unsigned char *)sink + 8192, 4096, 0x7a));
	EXPECT_TRUE(is_byte((unsigned char *)sink, 8192, 0));
}

/* The invalidator of the race below: drops the mappings until told. */
struct dropper {
	char *bufs[2];
	volatile int stop;
	long rounds;
};

static void *drop_loop(void *arg)
{
	struct dropper *d = arg;

	/*
	 * With a pause: an invalidation (of pages mapped or not) during a
	 * fault makes the fault start over, so back to back they would keep
	 * every fault retrying, under emulation, and nothing would move.
	 */
	while (!d->stop) {
		madvise(d->bufs[d->rounds & 1], LEN, MADV_DONTNEED);
		d->rounds++;
		usleep(10000);
	}
	return NULL;
}

/*
 * Invalidations racing with transfers: a thread drops the mappings of a
 * memfd's pages (shared: the page cache keeps the bytes) in a loop while
 * READs copy out of one and WRITEs into the other. Every READ must bring
 * the file's bytes, every WRITE must reach the file: a copy through a
 * page the invalidation took would show stale or lost bytes (and, on the
 * debug kernel, a use-after-free).
 */
TEST_F_TIMEOUT(odp, invalidate_race, 300)
{
	char *src = keep(self, fresh_pattern(0x60));
	char *dst = keep(self, fresh_pattern(0));
	char *plain = keep(self, fresh());
	struct dropper d = { .bufs = { src, dst } };
	long long inval = srdma_test_counter("odp_invalidations");
	struct ibv_mr *smr, *dmr, *pmr;
	struct timespec t0, t;
	pthread_t th;
	int i, bad = 0;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, plain);
	smr = reg(self, src, ACCESS_ODP);
	dmr = reg(self, dst, ACCESS_ODP);
	pmr = reg(self, plain, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, smr);
	ASSERT_NE(NULL, dmr);
	ASSERT_NE(NULL, pmr);
	ASSERT_EQ(0, pthread_create(&th, NULL, drop_loop, &d));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 200; i++) {
		memset(plain, 0, LEN);
		ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 100 + i, pmr,
				  plain, LEN, smr, src));
		EXPECT_REQ_WC(100 + i, IBV_WC_RDMA_READ, LEN);
		if (!is_pattern((unsigned char *)plain, 0, LEN, 0x60))
			bad++;
		/* Then WRITE pattern i into the other file, and look. */
		memset(plain, i, LEN);
		ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 1000 + i, pmr,
				  plain, LEN, dmr, dst));
		EXPECT_REQ_WC(1000 + i, IBV_WC_RDMA_WRITE, 0);
		if (!is_byte((unsigned char *)dst, LEN, (unsigned char)i))
			bad++;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10 * (srdma_test_slow() + 1))
			break;
	}
	d.stop = 1;
	pthread_join(th, NULL);
	EXPECT_EQ(0, bad);
	TH_LOG("%d rounds of READ and WRITE, %ld invalidations by the thread, %lld counted",
	       i, d.rounds, srdma_test_counter("odp_invalidations") - inval);
	EXPECT_LE(5, i);
	EXPECT_LT(inval, srdma_test_counter("odp_invalidations"));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qa));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qb));
}

/* What on-demand MRs refuse, with the errno. */
TEST_F(odp, refused)
{
	char *buf = keep(self, fresh());
	struct ibv_mw *mw;
	struct ibv_mr *mr;

	ASSERT_NE(NULL, buf);
	/* Implicit (the whole address space): not supported. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_mr(self->pd, NULL, SIZE_MAX,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_ON_DEMAND));
	EXPECT_EQ(EOPNOTSUPP, errno);

	mr = reg(self, buf, ACCESS_ODP | IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, mr);
	/* Registered again: not supported. */
	EXPECT_EQ(IBV_REREG_MR_ERR_CMD,
		  ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			       IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EOPNOTSUPP, errno);
	/* A memory window on it: refused at the bind. */
	mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	ASSERT_NE(NULL, mw);
	{
		struct ibv_mw_bind bind = {
			.wr_id = 13,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_info = {
				.mr = mr, .addr = (uintptr_t)buf,
				.length = 4096,
				.mw_access_flags = IBV_ACCESS_REMOTE_READ,
			},
		};
		struct ibv_wc wc;

		if (ibv_bind_mw(self->qa, mw, &bind) == 0) {
			wait_wc(self->ca, &wc);
			EXPECT_EQ(IBV_WC_MW_BIND_ERR, wc.status)
				TH_LOG("status %s",
				       ibv_wc_status_str(wc.status));
			EXPECT_EQ(13, wc.wr_id);
		}
	}
	ibv_dealloc_mw(mw);
}

TEST_HARNESS_MAIN
