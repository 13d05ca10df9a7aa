// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_ktest_inline: inline data from a kernel consumer, on RC, UC and UD
 * QPs of the srdma device named by the module parameter dev (default
 * srdma0), in loopback to its own IPv4 RoCEv2 GID.
 *
 * Loading it runs the test: create_qp's caps written back (-EINVAL over
 * the limit), then messages of 0, 1 and max_inline_data bytes, SEND and
 * SEND with immediate, from a buffer on the stack that is overwritten
 * right after ib_post_send() and carries no lkey; the bytes that arrived, every completion field, and -EINVAL
 * with bad_wr for too much data. It logs "srdma_ktest_inline: PASS" and
 * loads, or logs each failure and "FAIL" and refuses to load (-EIO).
 * selftests/tests/kinline.sh runs it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>

#include "srdma_ktest.h"

#define KT_QKEY		0x33333333U
#define KT_PSN		0x321
#define KT_MAX_INLINE	1024		/* SRDMA_MAX_INLINE_DATA */
#define KT_GRH		40
#define KT_BUF		(KT_MAX_INLINE + KT_GRH)
#define KT_WAIT_MS	2000

struct kt {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_qp *a, *b;		/* a sends to b */
	struct ib_ah *ah;		/* UD */
	union ib_gid gid;
	u32 gidx;
	u8 *rbuf;			/* receives, and WRITE targets */
	u32 max_inline;			/* a's, as created */
	int failed;
	int checks;
};

static void kt_ah_attr(struct kt *t, struct rdma_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah, 1);
	rdma_ah_set_grh(ah, &t->gid, 0, t->gidx, 64, 0);
}

static struct ib_qp *kt_qp(struct kt *t, enum ib_qp_type type, u32 inl,
			   u32 *max_inline)
{
	struct ib_qp_init_attr init = {
		.qp_type = type,
		.send_cq = t->scq,
		.recv_cq = t->rcq,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = inl },
	};
	struct ib_qp *qp = ib_create_qp(t->pd, &init);

	if (!IS_ERR(qp) && max_inline)
		*max_inline = init.cap.max_inline_data;
	return qp;
}

/* RESET -> RTS of @qp towards @dqpn (RC, UC) or with Q_Key (UD). */
static int kt_up(struct kt *t, struct ib_qp *qp, u32 dqpn)
{
	bool rc = qp->qp_type == IB_QPT_RC, ud = qp->qp_type == IB_QPT_UD;
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qkey = KT_QKEY;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT |
			   (ud ? IB_QP_QKEY : IB_QP_ACCESS_FLAGS));
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	if (!ud) {
		kt_ah_attr(t, &a.ah_attr);
		a.path_mtu = IB_MTU_256;	/* several packets */
		a.dest_qp_num = dqpn;
		a.rq_psn = KT_PSN;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
	}
	err = ib_modify_qp(qp, &a, IB_QP_STATE |
			   (ud ? 0 : IB_QP_AV | IB_QP_PATH_MTU |
				     IB_QP_DEST_QPN | IB_QP_RQ_PSN) |
			   (rc ? IB_QP_MAX_DEST_RD_ATOMIC |
				 IB_QP_MIN_RNR_TIMER : 0));
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = KT_PSN;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN |
			    (rc ? IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
				  IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC :
				  0));
}

static void kt_pair_down(struct kt *t)
{
	if (t->ah)
		rdma_destroy_ah(t->ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (t->a)
		ib_destroy_qp(t->a);
	if (t->b)
		ib_destroy_qp(t->b);
	t->ah = NULL;
	t->a = NULL;
	t->b = NULL;
}

static int kt_pair_up(struct kt *t, enum ib_qp_type type)
{
	struct rdma_ah_attr ah;
	struct ib_qp *qp;
	int err;

	qp = kt_qp(t, type, KT_MAX_INLINE, &t->max_inline);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	t->a = qp;
	qp = kt_qp(t, type, 0, NULL);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	t->b = qp;
	if (type == IB_QPT_UD) {
		kt_ah_attr(t, &ah);
		t->ah = rdma_create_ah(t->pd, &ah, RDMA_CREATE_AH_SLEEPABLE);
		if (IS_ERR(t->ah)) {
			err = PTR_ERR(t->ah);
			t->ah = NULL;
			return err;
		}
	}
	err = kt_up(t, t->a, t->b->qp_num);
	return err ?: kt_up(t, t->b, t->a->qp_num);
}

/* One completion from @cq within KT_WAIT_MS; 1 if one came. */
static int kt_poll(struct ib_cq *cq, struct ib_wc *wc, int ms)
{
	int i;

	for (i = 0; i < ms; i++) {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return 1;
		usleep_range(500, 1000);
	}
	return 0;
}

static u8 kt_pat(u32 seed, u32 i)
{
	return (u8)(seed * 131 + i * 7 + 1);
}

/*
 * Post on a one inline work request of @len bytes of pattern @seed from
 * two pieces of a stack buffer, with lkeys that name nothing, and wipe the
 * buffer at once. ib_post_send()'s result; *@bad_ok says whether bad_wr
 * named it on failure.
 */
static noinline int kt_post_inline(struct kt *t, enum ib_wr_opcode op,
				   u32 len, u32 seed, bool *bad_ok)
{
	u8 data[KT_MAX_INLINE + 16];
	const struct ib_send_wr *bad = NULL;
	struct ib_ud_wr ud = {};
	struct ib_send_wr *wr = &ud.wr;
	struct ib_sge sge[2];
	u32 half = len / 2, i;
	int err;

	for (i = 0; i < len; i++)
		data[i] = kt_pat(seed, i);
	sge[0].addr = (uintptr_t)data;
	sge[0].length = half;
	sge[0].lkey = 0xdeadbeef;
	sge[1].addr = (uintptr_t)(data + half);
	sge[1].length = len - half;
	sge[1].lkey = 0;
	if (t->a->qp_type == IB_QPT_UD) {
		ud.ah = t->ah;
		ud.remote_qpn = t->b->qp_num;
		ud.remote_qkey = KT_QKEY;
	}
	wr->wr_id = 0x1000 + seed;
	wr->sg_list = sge;
	wr->num_sge = 2;
	wr->opcode = op;
	wr->send_flags = IB_SEND_INLINE | IB_SEND_SIGNALED;
	wr->ex.imm_data = cpu_to_be32(0xc0de0000 | seed);
	err = ib_post_send(t->a, wr, &bad);
	memset(data, 0, sizeof(data));
	*bad_ok = bad == wr;
	return err;
}

/* @len bytes as @op from a to b, checked end to end. */
static void kt_xfer(struct kt *t, enum ib_wr_opcode op, u32 len, u32 seed)
{
	bool ud = t->a->qp_type == IB_QPT_UD, imm = op == IB_WR_SEND_WITH_IMM;
	u32 grh = ud ? KT_GRH : 0, i;
	const u8 *dst = t->rbuf + grh;
	struct ib_sge sge = {
		.addr = (uintptr_t)t->rbuf,
		.length = KT_MAX_INLINE + grh,
		.lkey = t->pd->local_dma_lkey,
	};
	struct ib_recv_wr rwr = {
		.wr_id = 0x5000 + seed, .sg_list = &sge, .num_sge = 1,
	};
	const struct ib_recv_wr *rbad;
	struct ib_wc wc;
	bool bad_ok;
	int err;

	memset(t->rbuf, 0, KT_BUF);
	err = ib_post_recv(t->b, &rwr, &rbad);
	KT_CHECK(t, !err, "post_recv: %d", err);
	err = kt_post_inline(t, op, len, seed, &bad_ok);
	KT_CHECK(t, !err, "type %d op %d len %u: post_send %d",
		 t->a->qp_type, op, len, err);
	if (err)
		return;

	KT_CHECK(t, kt_poll(t->scq, &wc, KT_WAIT_MS), "no send completion");
	KT_CHECK(t, wc.wr_id == 0x1000 + seed && wc.status == IB_WC_SUCCESS &&
		 wc.opcode == IB_WC_SEND &&
		 wc.qp == t->a,
		 "send wc: wr_id %#llx status %d opcode %d", wc.wr_id,
		 wc.status, wc.opcode);
	if (!kt_poll(t->rcq, &wc, KT_WAIT_MS)) {
		KT_CHECK(t, 0, "type %d op %d len %u: no receive completion",
			 t->a->qp_type, op, len);
		return;
	}
	KT_CHECK(t, wc.wr_id == 0x5000 + seed && wc.status == IB_WC_SUCCESS &&
		 wc.opcode == IB_WC_RECV &&
		 wc.byte_len == len + grh && wc.qp == t->b &&
		 wc.src_qp == t->a->qp_num &&
		 !!(wc.wc_flags & IB_WC_WITH_IMM) == imm &&
		 (!imm || wc.ex.imm_data == cpu_to_be32(0xc0de0000 | seed)) &&
		 !!(wc.wc_flags & IB_WC_GRH) == ud,
		 "type %d op %d len %u: recv wc wr_id %#llx status %d opcode %d byte_len %u src_qp %u flags %#x",
		 t->a->qp_type, op, len, wc.wr_id, wc.status, wc.opcode,
		 wc.byte_len, wc.src_qp, wc.wc_flags);
	for (i = 0; i < len; i++)
		if (dst[i] != kt_pat(seed, i))
			break;
	KT_CHECK(t, i == len && !dst[len], "type %d op %d len %u: byte %u",
		 t->a->qp_type, op, len, i);
}

static void kt_type(struct kt *t, enum ib_qp_type type)
{
	u32 sizes[3], s, seed = type * 16;
	struct ib_wc wc;
	bool bad_ok;
	int err;

	err = kt_pair_up(t, type);
	KT_CHECK(t, !err, "type %d: QPs: %d", type, err);
	if (err)
		goto out;
	KT_CHECK(t, t->max_inline == KT_MAX_INLINE, "type %d: max_inline %u",
		 type, t->max_inline);
	sizes[0] = 0;
	sizes[1] = 1;
	sizes[2] = t->max_inline;
	for (s = 0; s < 3; s++) {
		kt_xfer(t, IB_WR_SEND_WITH_IMM, sizes[s], seed++);
		kt_xfer(t, IB_WR_SEND, sizes[s], seed++);
	}
	/* one byte too many: -EINVAL, bad_wr set, nothing sent */
	err = kt_post_inline(t, IB_WR_SEND, t->max_inline + 1, 1, &bad_ok);
	KT_CHECK(t, err == -EINVAL && bad_ok, "type %d: over the limit: %d",
		 type, err);
	KT_CHECK(t, !kt_poll(t->scq, &wc, 20), "type %d: a completion", type);
out:
	kt_pair_down(t);
}

/* The caps create_qp writes back; -EINVAL over the limit. */
static void kt_caps(struct kt *t)
{
	static const enum ib_qp_type types[] = {
		IB_QPT_RC, IB_QPT_UC, IB_QPT_UD,
	};
	struct ib_qp_init_attr qia;
	struct ib_qp_attr qa;
	struct ib_qp *qp;
	u32 max, i;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		qp = kt_qp(t, types[i], 100, &max);
		KT_CHECK(t, !IS_ERR(qp), "type %d: %d", types[i],
			 PTR_ERR_OR_ZERO(qp));
		if (IS_ERR(qp))
			continue;
		KT_CHECK(t, max == 112, "type %d: 100 -> %u", types[i], max);
		KT_CHECK(t, !ib_query_qp(qp, &qa, IB_QP_CAP, &qia) &&
			 qa.cap.max_inline_data == 112 &&
			 qia.cap.max_inline_data == 112,
			 "type %d: query_qp %u/%u", types[i],
			 qa.cap.max_inline_data, qia.cap.max_inline_data);
		ib_destroy_qp(qp);
		qp = kt_qp(t, types[i], KT_MAX_INLINE + 1, NULL);
		KT_CHECK(t, PTR_ERR_OR_ZERO(qp) == -EINVAL, "type %d: 1025: %d",
			 types[i], PTR_ERR_OR_ZERO(qp));
		if (!IS_ERR(qp))
			ib_destroy_qp(qp);
	}
}

static int __init kt_init(void)
{
	struct kt *t;
	int err;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	err = -ENODEV;
	t->ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!t->ibdev) {
		pr_err("no device %s\n", dev);
		goto err_free;
	}
	err = srdma_ktest_find_gid(t->ibdev, &t->gid);
	if (err < 0) {
		pr_err("%s has no IPv4 RoCEv2 GID\n", dev);
		goto err_put_dev;
	}
	t->gidx = err;
	t->rbuf = kzalloc(KT_BUF + 1, GFP_KERNEL);
	t->pd = ib_alloc_pd(t->ibdev, 0);
	err = t->rbuf ? PTR_ERR_OR_ZERO(t->pd) : -ENOMEM;
	if (err) {
		t->pd = NULL;
		goto err_free_objs;
	}
	t->scq = ib_alloc_cq(t->ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	t->rcq = ib_alloc_cq(t->ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(t->scq) || IS_ERR(t->rcq)) {
		err = -ENOMEM;
		goto err_free_objs;
	}

	kt_caps(t);
	kt_type(t, IB_QPT_RC);
	kt_type(t, IB_QPT_UC);
	kt_type(t, IB_QPT_UD);
	err = t->failed ? -EIO : 0;
	if (err)
		pr_err("FAIL: %d of %d checks failed\n", t->failed,
		       t->checks);
	else
		pr_info("PASS: %d checks\n", t->checks);

err_free_objs:
	if (!IS_ERR_OR_NULL(t->rcq))
		ib_free_cq(t->rcq);
	if (!IS_ERR_OR_NULL(t->scq))
		ib_free_cq(t->scq);
	if (t->pd)
		ib_dealloc_pd(t->pd);
	kfree(t->rbuf);
err_put_dev:
	ib_device_put(t->ibdev);
err_free:
	kfree(t);
	return err;
}

static void __exit kt_exit(void)
{
}

module_init(kt_init);
module_exit(kt_exit);
MODULE_DESCRIPTION("srdma selftest: inline data from a kernel consumer");
MODULE_LICENSE("Dual BSD/GPL");
