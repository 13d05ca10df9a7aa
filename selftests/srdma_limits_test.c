// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The per-device object limits (module parameters max_pd, max_cq, max_qp,
 * max_mr, max_ah and max_srq): ibv_query_device reports them, exactly that many objects can
 * be created, one more fails with ENOMEM, and freeing one makes room for
 * one again. The limit is per device, not per context: the objects are
 * spread over two contexts.
 *
 * Run in the test VM on a device created after
 * `modprobe srdma max_pd=N max_cq=N max_qp=N max_mr=N max_ah=N max_srq=N`,
 * with SRDMA_LIMIT=N
 * in the environment (selftests/tests/hardening.sh does this); without
 * SRDMA_LIMIT every test is skipped. No other process may hold objects on
 * the device meanwhile. The kernel's own objects count against the limits
 * too (the MAD layer holds a PD, a CQ and the GSI QP on every device):
 * SRDMA_LIMIT_HELD, as `rdma resource show` counts them before the test
 * ("pd 1 cq 1 qp 1 mr 0"), says how many, and the test expects that many
 * fewer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

enum lim_kind { LIM_PD, LIM_CQ, LIM_QP, LIM_MR, LIM_AH, LIM_SRQ };

static const char * const lim_name[] = {
	[LIM_PD] = "PD", [LIM_CQ] = "CQ", [LIM_QP] = "QP", [LIM_MR] = "MR",
	[LIM_AH] = "AH", [LIM_SRQ] = "SRQ",
};

/*
 * Two contexts on the device under test and what the objects of one kind
 * need in each: a PD for MRs, QPs and AHs, a CQ for QPs; AHs go to the
 * device's IPv4 GID. These count against
 * max_pd and max_cq, but never against the limit being tested.
 */
struct lim_env {
	struct ibv_context *ctx[2];
	struct ibv_pd *pd[2];
	struct ibv_cq *cq[2];
	char *buf;
	union ibv_gid gid;
	int gidx;
};

/* An AH on @pd to our own IPv4 GID. */
static struct ibv_ah *lim_ah(struct ibv_pd *pd, const union ibv_gid *gid,
			     int gidx)
{
	struct ibv_ah_attr aa;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = *gid;
	aa.grh.sgid_index = gidx;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	return ibv_create_ah(pd, &aa);
}

static void *lim_create(struct lim_env *e, enum lim_kind k, int c)
{
	switch (k) {
	case LIM_PD:
		return ibv_alloc_pd(e->ctx[c]);
	case LIM_CQ:
		return ibv_create_cq(e->ctx[c], 4, NULL, NULL, 0);
	case LIM_QP:
		return srdma_test_rc_qp(e->pd[c], e->cq[c], 4, 4, 1);
	case LIM_MR:
		return ibv_reg_mr(e->pd[c], e->buf, 4096,
				  IBV_ACCESS_LOCAL_WRITE);
	case LIM_AH:
		return lim_ah(e->pd[c], &e->gid, e->gidx);
	case LIM_SRQ: {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4,
							  .max_sge = 1 } };

		return ibv_create_srq(e->pd[c], &sa);
	}
	}
	return NULL;
}

static int lim_destroy(enum lim_kind k, void *obj)
{
	switch (k) {
	case LIM_PD:
		return ibv_dealloc_pd(obj);
	case LIM_CQ:
		return ibv_destroy_cq(obj);
	case LIM_QP:
		return ibv_destroy_qp(obj);
	case LIM_MR:
		return ibv_dereg_mr(obj);
	case LIM_AH:
		return ibv_destroy_ah(obj);
	case LIM_SRQ:
		return ibv_destroy_srq(obj);
	}
	return EINVAL;
}

static uint32_t lim_reported(const struct ibv_device_attr *a, enum lim_kind k)
{
	switch (k) {
	case LIM_PD:
		return a->max_pd;
	case LIM_CQ:
		return a->max_cq;
	case LIM_QP:
		return a->max_qp;
	case LIM_MR:
		return a->max_mr;
	case LIM_AH:
		return a->max_ah;
	case LIM_SRQ:
		return a->max_srq;
	}
	return 0;
}

/* $SRDMA_LIMIT, or 0 if it is not set to a number from 2 to 4096. */
static unsigned long lim_wanted(void)
{
	const char *s = getenv("SRDMA_LIMIT");
	unsigned long v;
	char *end;

	if (!s || !*s)
		return 0;
	v = strtoul(s, &end, 0);
	return *end || v < 2 || v > 4096 ? 0 : v;
}

/*
 * How many objects of kind @k the kernel held before the test, from
 * $SRDMA_LIMIT_HELD ("pd 1 cq 1 qp 1 mr 0"): 0 if it does not say.
 */
static unsigned long lim_held(enum lim_kind k)
{
	const char *s = getenv("SRDMA_LIMIT_HELD");
	char name[8], want[8];
	unsigned long n;
	int used, i;

	if (!s)
		return 0;
	for (i = 0; i < 7 && lim_name[k][i]; i++)
		want[i] = lim_name[k][i] | 0x20;	/* lower case */
	want[i] = '\0';
	while (sscanf(s, "%7s %lu%n", name, &n, &used) == 2) {
		if (!strcmp(name, want))
			return n;
		s += used;
	}
	return 0;
}

/*
 * Create the limit's worth of objects of kind @k, alternating between the
 * two contexts; check that one more fails with ENOMEM from either context,
 * that freeing one in one context lets the other create one, and that after
 * everything was freed the whole limit is available again.
 */
static void lim_check(struct __test_metadata *_metadata, enum lim_kind k)
{
	struct ibv_device_attr attr;
	struct lim_env e = {};
	unsigned long want, i;
	void **obj, *o;
	unsigned long limit;
	int c;

	limit = lim_wanted();
	if (!limit)
		SKIP(return, "%s limit: SRDMA_LIMIT is not set (see tests/hardening.sh)",
		     lim_name[k]);
	ASSERT_LT(lim_held(k), limit);
	want = limit - lim_held(k);
	obj = calloc(want, sizeof(*obj));
	e.buf = calloc(1, 4096);
	ASSERT_NE(NULL, obj);
	ASSERT_NE(NULL, e.buf);
	for (c = 0; c < 2; c++) {
		e.ctx[c] = srdma_test_open();
		ASSERT_NE(NULL, e.ctx[c]) TH_LOG("cannot open %s: %s",
						 srdma_test_devname(),
						 strerror(errno));
	}
	ASSERT_EQ(0, ibv_query_device(e.ctx[0], &attr));
	/* The module honours its parameter, and says so. */
	ASSERT_EQ(limit, lim_reported(&attr, k)) TH_LOG("max %s", lim_name[k]);
	if (k == LIM_AH) {
		e.gidx = srdma_test_ipv4_gid(e.ctx[0], &e.gid);
		ASSERT_LE(0, e.gidx) TH_LOG("no IPv4 GID");
	}
	if (k == LIM_MR || k == LIM_QP || k == LIM_AH || k == LIM_SRQ)
		for (c = 0; c < 2; c++) {
			e.pd[c] = ibv_alloc_pd(e.ctx[c]);
			ASSERT_NE(NULL, e.pd[c]);
		}
	if (k == LIM_QP)
		for (c = 0; c < 2; c++) {
			e.cq[c] = ibv_create_cq(e.ctx[c], 16, NULL, NULL, 0);
			ASSERT_NE(NULL, e.cq[c]);
		}

	for (i = 0; i < want; i++) {
		obj[i] = lim_create(&e, k, i % 2);
		ASSERT_NE(NULL, obj[i]) TH_LOG("%s %lu of %lu: %s", lim_name[k],
					       i + 1, want, strerror(errno));
	}
	/* One more fails, in either context. */
	errno = 0;
	o = lim_create(&e, k, 1);
	EXPECT_EQ(NULL, o) TH_LOG("%s %lu of %lu was created", lim_name[k],
				  want + 1, want);
	EXPECT_EQ(ENOMEM, errno);
	if (o)
		lim_destroy(k, o);

	/* Room for exactly one again, whichever context frees it. */
	ASSERT_EQ(0, lim_destroy(k, obj[0]));
	obj[0] = lim_create(&e, k, 1);
	ASSERT_NE(NULL, obj[0]) TH_LOG("no %s after freeing one: %s",
				       lim_name[k], strerror(errno));
	errno = 0;
	o = lim_create(&e, k, 0);
	EXPECT_EQ(NULL, o);
	EXPECT_EQ(ENOMEM, errno);
	if (o)
		lim_destroy(k, o);

	/* Everything back: nothing was lost on the way. */
	for (i = 0; i < want; i++)
		ASSERT_EQ(0, lim_destroy(k, obj[i]));
	for (i = 0; i < want; i++) {
		obj[i] = lim_create(&e, k, 0);
		ASSERT_NE(NULL, obj[i]) TH_LOG("%s %lu of %lu after freeing all: %s",
					       lim_name[k], i + 1, want,
					       strerror(errno));
	}
	for (i = 0; i < want; i++)
		ASSERT_EQ(0, lim_destroy(k, obj[i]));

	for (c = 0; c < 2; c++) {
		if (e.cq[c])
			ASSERT_EQ(0, ibv_destroy_cq(e.cq[c]));
		if (e.pd[c])
			ASSERT_EQ(0, ibv_dealloc_pd(e.pd[c]));
		ASSERT_EQ(0, ibv_close_device(e.ctx[c]));
	}
	free(e.buf);
	free(obj);
}

TEST(pd_limit)
{
	lim_check(_metadata, LIM_PD);
}

TEST(cq_limit)
{
	lim_check(_metadata, LIM_CQ);
}

TEST(qp_limit)
{
	lim_check(_metadata, LIM_QP);
}

TEST(mr_limit)
{
	lim_check(_metadata, LIM_MR);
}

TEST(ah_limit)
{
	lim_check(_metadata, LIM_AH);
}

TEST(srq_limit)
{
	lim_check(_metadata, LIM_SRQ);
}

TEST_HARNESS_MAIN
