// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device, port, GID and context queries of an srdma device through
 * libibverbs and the srdma provider. Run in the test VM with the device
 * bound to a veth with 10.0.0.1/24 (see selftests/run.sh).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <stdio.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

FIXTURE(dev) {
	struct ibv_context *ctx;
};

FIXTURE_SETUP(dev)
{
	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s: %s",
					  srdma_test_devname(),
					  strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F(dev, query_device)
{
	struct ibv_device_attr attr;

	memset(&attr, 0xa5, sizeof(attr));
	ASSERT_EQ(0, ibv_query_device(self->ctx, &attr));
	EXPECT_EQ(1, attr.phys_port_cnt);
	EXPECT_STREQ("0.1.0", attr.fw_ver);
	EXPECT_GE(attr.max_qp, 1024);
	EXPECT_GE(attr.max_qp_wr, 1024);
	EXPECT_GE(attr.max_cq, 1024);
	EXPECT_GE(attr.max_cqe, 4096);
	EXPECT_GE(attr.max_mr, 1024);
	EXPECT_GE(attr.max_pd, 1024);
	EXPECT_GE(attr.max_sge, 1);
	EXPECT_GE(attr.max_qp_rd_atom, 1);
	EXPECT_GE(attr.max_qp_init_rd_atom, 1);
	EXPECT_GE(attr.max_mr_size, 1ULL << 32);
	EXPECT_EQ(1, attr.max_pkeys);
	EXPECT_NE(0ULL, attr.node_guid);
	EXPECT_EQ(attr.node_guid, attr.sys_image_guid);
}

TEST_F(dev, query_device_ex)
{
	struct ibv_device_attr_ex ex;

	memset(&ex, 0, sizeof(ex));
	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &ex));
	EXPECT_EQ(1, ex.orig_attr.phys_port_cnt);
	EXPECT_STREQ("0.1.0", ex.orig_attr.fw_ver);
}

TEST_F(dev, query_port)
{
	struct ibv_port_attr pa;

	memset(&pa, 0, sizeof(pa));
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_ACTIVE, pa.state);
	EXPECT_EQ(IBV_LINK_LAYER_ETHERNET, pa.link_layer);
	EXPECT_EQ(IBV_MTU_4096, pa.max_mtu);
	/* veth MTU 1500 leaves room for a 1024-byte IB MTU. */
	EXPECT_EQ(IBV_MTU_1024, pa.active_mtu);
	EXPECT_GE(pa.gid_tbl_len, 16);
	EXPECT_EQ(1, pa.pkey_tbl_len);
	EXPECT_NE(0, pa.port_cap_flags & IBV_PORT_CM_SUP);
}

TEST_F(dev, query_bad_port)
{
	struct ibv_port_attr pa;

	EXPECT_NE(0, ibv_query_port(self->ctx, 2, &pa));
	EXPECT_NE(0, ibv_query_port(self->ctx, 0, &pa));
}

/* The core derives a RoCEv2 GID from the veth's IPv4 address. */
TEST_F(dev, ipv4_gid)
{
	struct ibv_gid_entry ent;
	union ibv_gid want;
	struct ibv_port_attr pa;
	int i, found = -1;

	memset(&want, 0, sizeof(want));
	want.raw[10] = 0xff;
	want.raw[11] = 0xff;
	ASSERT_EQ(1, inet_pton(AF_INET, "10.0.0.1", &want.raw[12]));
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &pa));
	for (i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(self->ctx, 1, i, &ent, 0))
			continue;	/* empty slot */
		if (memcmp(&ent.gid, &want, sizeof(want)))
			continue;
		if (ent.gid_type == IBV_GID_TYPE_ROCE_V2)
			found = i;
	}
	EXPECT_GE(found, 0) TH_LOG("no RoCEv2 GID ::ffff:10.0.0.1");
}

TEST_F(dev, pkey)
{
	__be16 pkey = 0;

	ASSERT_EQ(0, ibv_query_pkey(self->ctx, 1, 0, &pkey));
	EXPECT_EQ(0xffff, ntohs(pkey));
}

TEST(context_open_close_loop)
{
	struct ibv_context *ctx[4];
	int i, j;

	for (i = 0; i < 50; i++) {
		for (j = 0; j < 4; j++) {
			ctx[j] = srdma_test_open();
			ASSERT_NE(NULL, ctx[j]);
		}
		for (j = 0; j < 4; j++)
			ASSERT_EQ(0, ibv_close_device(ctx[j]));
	}
}

/* The async event fd opened with the context is usable and quiet. */
TEST_F(dev, async_fd_quiet)
{
	int fl;

	ASSERT_GE(self->ctx->async_fd, 0);
	fl = fcntl(self->ctx->async_fd, F_GETFL);
	ASSERT_EQ(0, fcntl(self->ctx->async_fd, F_SETFL, fl | O_NONBLOCK));
	{
		struct ibv_async_event ev;

		EXPECT_NE(0, ibv_get_async_event(self->ctx, &ev));
		EXPECT_EQ(EAGAIN, errno);
	}
}

FIXTURE(qp) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	char *buf;
	int gidx;
};

FIXTURE_SETUP(qp)
{
	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->buf = calloc(1, 1 << 16);
	self->mr = ibv_reg_mr(self->pd, self->buf, 1 << 16,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, self->mr);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	self->qp = srdma_test_rc_qp(self->pd, self->cq, 16, 16, 2);
	ASSERT_NE(NULL, self->qp);
}

FIXTURE_TEARDOWN(qp)
{
	if (self->qp)
		ibv_destroy_qp(self->qp);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->buf);
}

/* Bad QP capabilities are refused with EINVAL. */
TEST_F(qp, create_limits)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .send_cq = self->cq, .recv_cq = self->cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *q;

	init.cap.max_send_wr = 1 << 20;
	q = ibv_create_qp(self->pd, &init);
	EXPECT_EQ(NULL, q);
	EXPECT_EQ(EINVAL, errno);
	init.cap.max_send_wr = 1;
	init.cap.max_recv_sge = 1000;
	EXPECT_EQ(NULL, ibv_create_qp(self->pd, &init));
	EXPECT_EQ(EINVAL, errno);
	init.cap.max_recv_sge = 1;
	init.cap.max_inline_data = 64;
	EXPECT_EQ(NULL, ibv_create_qp(self->pd, &init));
	EXPECT_EQ(EINVAL, errno);
	init.cap.max_inline_data = 0;
	init.qp_type = IBV_QPT_UD;
	EXPECT_EQ(NULL, ibv_create_qp(self->pd, &init));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

/* The state machine refuses skipped states and out-of-range attributes. */
TEST_F(qp, modify_checks)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	EXPECT_EQ(EINVAL, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 2;
	EXPECT_EQ(EINVAL, ibv_modify_qp(self->qp, &a, IBV_QP_STATE |
					IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS));
	a.port_num = 1;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE |
				   IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS));
	ASSERT_EQ(0, ibv_query_qp(self->qp, &a, IBV_QP_STATE, &ia));
	EXPECT_EQ(IBV_QPS_INIT, a.qp_state);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.max_dest_rd_atomic = 200;	/* above max_qp_rd_atom */
	EXPECT_NE(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE |
				   IBV_QP_MAX_DEST_RD_ATOMIC));
	a.qp_state = IBV_QPS_ERR;
	EXPECT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RESET;
	EXPECT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
}

/* post_send in RESET, inline, atomics: errors, nothing queued. */
TEST_F(qp, post_send_checks)
{
	struct ibv_sge sge = { .addr = (uintptr_t)self->buf, .length = 8,
			       .lkey = self->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad = NULL;
	union ibv_gid gid;
	struct ibv_wc wc;

	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, &wr, &bad));
	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	ASSERT_EQ(0, srdma_test_connect_self(self->qp, self->gidx, &gid));
	wr.send_flags = IBV_SEND_INLINE;
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	wr.send_flags = 0;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, &wr, &bad));
	wr.opcode = IBV_WR_SEND;
	wr.num_sge = 3;			/* QP has 2 */
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, &wr, &bad));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
}

/* Bad MR arguments. */
TEST_F(qp, reg_mr_checks)
{
	EXPECT_EQ(NULL, ibv_reg_mr(self->pd, self->buf, 4096,
				   IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, ibv_reg_mr(self->pd, self->buf, 0,
				   IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(NULL, ibv_reg_mr(self->pd, (void *)-4096L, 8192,
				   IBV_ACCESS_LOCAL_WRITE));
}

/* A QP connected to itself: WRITE then READ back, data checked. */
TEST_F(qp, self_write_read)
{
	union ibv_gid gid;
	struct ibv_wc wc;
	int i;

	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	ASSERT_EQ(0, srdma_test_connect_self(self->qp, self->gidx, &gid));
	for (i = 0; i < 5000; i++)
		self->buf[i] = (char)(i * 7 + 3);
	ASSERT_EQ(0, srdma_test_post_rdma(self->qp, self->mr,
					  IBV_WR_RDMA_WRITE, self->buf, 5000,
					  self->buf + 8192));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 8192, 5000));
	ASSERT_EQ(0, srdma_test_post_rdma(self->qp, self->mr, IBV_WR_RDMA_READ,
					  self->buf + 16384, 5000,
					  self->buf + 8192));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
	EXPECT_EQ(5000, wc.byte_len);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 16384, 5000));
}

/* More completions than the CQ holds: IBV_EVENT_CQ_ERR on the async fd. */
TEST_F(qp, cq_overflow_event)
{
	struct ibv_async_event ev;
	struct ibv_cq *small;
	struct ibv_qp *q;
	struct pollfd pfd;
	union ibv_gid gid;
	int i;

	small = ibv_create_cq(self->ctx, 1, NULL, NULL, 0);
	ASSERT_NE(NULL, small);
	q = srdma_test_rc_qp(self->pd, small, 16, 1, 1);
	ASSERT_NE(NULL, q);
	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_EQ(0, srdma_test_connect_self(q, self->gidx, &gid));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, srdma_test_post_rdma(q, self->mr,
						  IBV_WR_RDMA_WRITE, self->buf,
						  64, self->buf + 4096));
	pfd.fd = self->ctx->async_fd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ(0, ibv_get_async_event(self->ctx, &ev));
	EXPECT_EQ(IBV_EVENT_CQ_ERR, ev.event_type);
	EXPECT_EQ(small, ev.element.cq);
	ibv_ack_async_event(&ev);
	ibv_destroy_qp(q);
	ibv_destroy_cq(small);
}

TEST_HARNESS_MAIN
