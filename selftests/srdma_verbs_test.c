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
#include <sched.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>

#include <rdma/ib_user_verbs.h>

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

/*
 * ibv_import_device() over a dup of a context's command file, then its PD
 * and MR imported: the keys and length are the MR's, a QP of the imported
 * context (its own mapped rings) WRITEs through the imported MR, a bad
 * MR handle is refused, and unimporting leaves the objects registered.
 */
TEST(import_context_pd_mr)
{
	struct ibv_context *c1, *c2;
	struct ibv_pd *pd1, *pd2;
	struct ibv_mr *mr1, *mr2;
	unsigned char *buf;
	union ibv_gid gid;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int gidx, i;

	c1 = srdma_test_open();
	ASSERT_NE(NULL, c1);
	pd1 = ibv_alloc_pd(c1);
	ASSERT_NE(NULL, pd1);
	buf = calloc(1, 65536);
	ASSERT_NE(NULL, buf);
	mr1 = ibv_reg_mr(pd1, buf, 65536, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr1);

	c2 = ibv_import_device(dup(c1->cmd_fd));
	ASSERT_NE(NULL, c2) TH_LOG("import_device: %s", strerror(errno));
	pd2 = ibv_import_pd(c2, pd1->handle);
	ASSERT_NE(NULL, pd2) TH_LOG("import_pd: %s", strerror(errno));
	EXPECT_EQ(pd1->handle, pd2->handle);
	mr2 = ibv_import_mr(pd2, mr1->handle);
	ASSERT_NE(NULL, mr2) TH_LOG("import_mr: %s", strerror(errno));
	EXPECT_EQ(mr1->lkey, mr2->lkey);
	EXPECT_EQ(mr1->rkey, mr2->rkey);
	EXPECT_EQ(65536, mr2->length);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_mr(pd2, mr1->handle + 1000));
	EXPECT_NE(0, errno);

	gidx = srdma_test_ipv4_gid(c2, &gid);
	ASSERT_GE(gidx, 0);
	cq = ibv_create_cq(c2, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	qp = srdma_test_rc_qp(pd2, cq, 16, 16, 1);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, srdma_test_connect_self(qp, gidx, &gid));
	for (i = 0; i < 4096; i++)
		buf[i] = (unsigned char)(i * 13 + 1);
	ASSERT_EQ(0, srdma_test_post(qp, mr2, IBV_WR_RDMA_WRITE, 7, buf, 4096,
				     buf + 32768, 0));
	srdma_test_wait_wc_for(cq, &wc, 50000);
	EXPECT_SEND_WC(wc, 7, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, qp);
	EXPECT_EQ(0, memcmp(buf, buf + 32768, 4096));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	ibv_unimport_mr(mr2);
	ibv_unimport_pd(pd2);
	EXPECT_EQ(0, ibv_close_device(c2));

	/* Still registered, in the first context. */
	EXPECT_EQ(0, ibv_dereg_mr(mr1));
	EXPECT_EQ(0, ibv_dealloc_pd(pd1));
	EXPECT_EQ(0, ibv_close_device(c1));
	free(buf);
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
	SRDMA_TEST_FIXTURE_OBJS;	/* ctx, pd, cq, mr, qp, buf */
	int gidx;
	char trap_dev[64];	/* set while av_change_atomic's trap is up */
};

static void trap_remove(const char *ndev);

FIXTURE_SETUP(qp)
{
	SRDMA_TEST_FIXTURE_OPEN(self);
	self->qp = srdma_test_rc_qp(self->pd, self->cq, 16, 16, 2);
	ASSERT_NE(NULL, self->qp);
}

FIXTURE_TEARDOWN(qp)
{
	if (self->trap_dev[0])
		trap_remove(self->trap_dev);
	SRDMA_TEST_FIXTURE_CLOSE(self);
}

/*
 * One write() command: the core's command @cmd (@clen bytes, its first
 * field the response address, set here) followed by 8 bytes of driver
 * input, all zeros or, if @dirty, one of them 1; a 256-byte response
 * (the core's and the driver's) in @resp. 0 or -errno.
 */
static int raw_cmd(int fd, uint32_t command, void *cmd, size_t clen,
		   int dirty, void *resp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		uint8_t body[256];
	} c;
	uint64_t r = (uintptr_t)resp;

	if (clen + 8 > sizeof(c.body) || clen % 4)
		return -E2BIG;
	memset(&c, 0, sizeof(c));
	memset(resp, 0, 256);
	c.hdr.command = command;
	c.hdr.in_words = (sizeof(c.hdr) + clen + 8) / 4;
	c.hdr.out_words = 256 / 4;
	memcpy(c.body, cmd, clen);
	memcpy(c.body, &r, sizeof(r));
	if (dirty)
		c.body[clen + 5] = 1;
	return write(fd, &c, c.hdr.in_words * 4) < 0 ? -errno : 0;
}

/*
 * Core command @c sent with 8 bytes of driver input: one of them non-zero
 * is refused (EINVAL), all zeros make the object (its response in @resp).
 */
#define EXPECT_INPUT_RULE(fd, command, c, resp) do {			\
	EXPECT_EQ(-EINVAL, raw_cmd(fd, command, &(c), sizeof(c), 1, resp)); \
	EXPECT_EQ(0, raw_cmd(fd, command, &(c), sizeof(c), 0, resp));	\
} while (0)

/*
 * No srdma command takes driver input: bytes after the core's command
 * are accepted if all zeros (an object is made) and refused with EINVAL
 * otherwise, for get_context, alloc_pd, reg_mr, alloc_mw, create_cq,
 * resize_cq, create_srq and create_qp (as create_ah in srdma_ud_test).
 * Objects made here go with the context.
 */
TEST_F(qp, driver_input)
{
	struct ib_uverbs_get_context get_context = {};
	struct ib_uverbs_alloc_pd alloc_pd = {};
	struct ib_uverbs_reg_mr reg_mr = {
		.start = (uintptr_t)self->buf,
		.length = 4096,
		.hca_va = (uintptr_t)self->buf,
		.access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	struct ib_uverbs_alloc_mw alloc_mw = { .mw_type = IBV_MW_TYPE_2 };
	struct ib_uverbs_create_cq create_cq = { .cqe = 8, .comp_channel = -1 };
	struct ib_uverbs_resize_cq resize_cq = { .cqe = 30 };
	struct ib_uverbs_create_srq create_srq = { .max_wr = 8, .max_sge = 1 };
	struct ib_uverbs_create_qp create_qp = {
		.max_send_wr = 4,
		.max_recv_wr = 4,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.qp_type = IBV_QPT_RC,
	};
	int fd = self->ctx->cmd_fd, dirty, ufd;
	uint32_t resp[64];
	char path[96];

	/* get_context, on a command file of its own each time. */
	snprintf(path, sizeof(path), "/dev/infiniband/%s",
		 strrchr(self->ctx->device->dev_path, '/') + 1);
	for (dirty = 1; dirty >= 0; dirty--) {
		ufd = open(path, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, ufd) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_EQ(dirty ? -EINVAL : 0,
			  raw_cmd(ufd, IB_USER_VERBS_CMD_GET_CONTEXT,
				  &get_context, sizeof(get_context), dirty,
				  resp));
		close(ufd);
	}
	EXPECT_INPUT_RULE(fd, IB_USER_VERBS_CMD_ALLOC_PD, alloc_pd, resp);
	reg_mr.pd_handle = alloc_mw.pd_handle = create_srq.pd_handle =
		create_qp.pd_handle = resp[0];
	EXPECT_INPUT_RULE(fd, IB_USER_VERBS_CMD_REG_MR, reg_mr, resp);
	EXPECT_INPUT_RULE(fd, IB_USER_VERBS_CMD_ALLOC_MW, alloc_mw, resp);
	EXPECT_INPUT_RULE(fd, IB_USER_VERBS_CMD_CREATE_CQ, create_cq, resp);
	resize_cq.cq_handle = create_qp.send_cq_handle =
		create_qp.recv_cq_handle = resp[0];
	EXPECT_INPUT_RULE(fd, IB_USER_VERBS_CMD_RESIZE_CQ, resize_cq, resp);
	EXPECT_LE(30u, resp[0]);	/* the new size, at least what was asked */
	EXPECT_INPUT_RULE(fd, IB_USER_VERBS_CMD_CREATE_SRQ, create_srq, resp);
	EXPECT_INPUT_RULE(fd, IB_USER_VERBS_CMD_CREATE_QP, create_qp, resp);
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
	/* over SRDMA_MAX_INLINE_DATA (1024), see srdma_inline_test */
	init.cap.max_inline_data = 1025;
	EXPECT_EQ(NULL, ibv_create_qp(self->pd, &init));
	EXPECT_EQ(EINVAL, errno);
	init.cap.max_inline_data = 0;
	/* RC, UC and UD are supported (srdma_ud_test, srdma_inline_test). */
	init.qp_type = IBV_QPT_RAW_PACKET;
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

/*
 * post_send in RESET, inline, an atomic whose result SGE is not 8 bytes:
 * errors, nothing queued.
 */
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
	/* inline data over max_inline_data (2 SGEs: 32 bytes), or on a READ */
	wr.send_flags = IBV_SEND_INLINE;
	sge.length = 33;
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	sge.length = 8;
	wr.opcode = IBV_WR_RDMA_READ;
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	wr.send_flags = 0;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	sge.length = 4;
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, &wr, &bad));
	sge.length = 8;
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
	/* srdma_test_post_rdma() posts wr_id 0; srdma reports no WRITE length */
	EXPECT_SEND_WC(wc, 0, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, self->qp);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 8192, 5000));
	ASSERT_EQ(0, srdma_test_post_rdma(self->qp, self->mr, IBV_WR_RDMA_READ,
					  self->buf + 16384, 5000,
					  self->buf + 8192));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, wc.wr_id);
	EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
	EXPECT_EQ(5000, wc.byte_len);
	EXPECT_EQ(0, wc.wc_flags);
	EXPECT_EQ(self->qp->qp_num, wc.qp_num);
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));	/* nothing more */
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 16384, 5000));
}

/* RESET -> RTS towards @dqpn with a 4.3 s ACK timeout; 0 or -1. */
static int connect_slow_timeout(struct ibv_qp *qp, uint32_t dqpn, int gidx,
				union ibv_gid *gid)
{
	struct ibv_qp_attr a;

	if (srdma_test_qp_init_access(qp, 0) ||
	    srdma_test_qp_rtr_to(qp, dqpn, gidx, gid, IBV_MTU_1024))
		return -1;
	srdma_test_rts_attr(&a);
	a.timeout = 20;			/* 4.096 us x 2^20 */
	return ibv_modify_qp(qp, &a, SRDMA_TEST_RTS_MASK) ? -1 : 0;
}

/*
 * Packets to QP b still in RESET (a WRITE from the fixture's QP), then
 * in INIT (one from QP c): never connected, so with no peer address,
 * both are dropped and counted as for a QP in the wrong state
 * (rx_bad_qp_state), never as bad headers. The senders' ACK timeout is
 * 4.3 s, so that they resend nothing meanwhile; the fixture's QP is
 * then flushed, and once b is connected to c, c's WRITE is resent and
 * lands.
 */
TEST_F(qp, packets_to_unconnected_qp)
{
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	long long hdr0, st0, st1;
	struct ibv_qp *b, *c;
	union ibv_gid gid;
	struct ibv_wc wc;

	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	b = srdma_test_rc_qp(self->pd, self->cq, 16, 16, 2);
	c = srdma_test_rc_qp(self->pd, self->cq, 16, 16, 2);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, c);
	hdr0 = srdma_test_counter("rx_bad_header");
	st0 = srdma_test_counter("rx_bad_qp_state");
	ASSERT_EQ(0, connect_slow_timeout(self->qp, b->qp_num, self->gidx,
					  &gid));
	ASSERT_EQ(0, connect_slow_timeout(c, b->qp_num, self->gidx, &gid));
	memset(self->buf, 0x5a, 128);
	ASSERT_EQ(0, srdma_test_post(self->qp, self->mr, IBV_WR_RDMA_WRITE, 1,
				     self->buf, 64, self->buf + 4096, 0));
	st1 = srdma_test_counter("rx_bad_qp_state");
	EXPECT_LT(st0, st1);				/* RESET */
	/*
	 * An RC packet names no sender QP: had the fixture's QP resent its
	 * WRITE (same PSN as c's) after b is connected, b would take it.
	 * Its WRITE is flushed instead.
	 */
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &err, IBV_QP_STATE));
	srdma_test_wait_wc_for(self->cq, &wc, 10000);
	EXPECT_SEND_WC(wc, 1, IBV_WC_WR_FLUSH_ERR, 0, 0, self->qp);
	ASSERT_EQ(0, srdma_test_qp_init_access(b, IBV_ACCESS_REMOTE_WRITE));
	ASSERT_EQ(0, srdma_test_post(c, self->mr, IBV_WR_RDMA_WRITE, 2,
				     self->buf + 64, 64, self->buf + 4160, 0));
	EXPECT_LT(st1, srdma_test_counter("rx_bad_qp_state"));	/* INIT */
	EXPECT_EQ(hdr0, srdma_test_counter("rx_bad_header"));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	/* b connected to c: c's WRITE is resent at its timeout, and lands. */
	ASSERT_EQ(0, srdma_test_qp_rtr_to(b, c->qp_num, self->gidx, &gid,
					  IBV_MTU_1024));
	srdma_test_wait_wc_for(self->cq, &wc, 300000);
	EXPECT_SEND_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, c);
	EXPECT_EQ(0, memcmp(self->buf + 64, self->buf + 4160, 64));
	EXPECT_NE(0x5a, self->buf[4096]);	/* the fixture QP's never lands */
	EXPECT_EQ(hdr0, srdma_test_counter("rx_bad_header"));
	EXPECT_EQ(0, ibv_destroy_qp(c));
	EXPECT_EQ(0, ibv_destroy_qp(b));
}

/* Post one receive of 64 bytes of the buffer; ibv_post_recv()'s result. */
static int post_recv64(FIXTURE_DATA(qp) *self, struct ibv_qp *qp,
		       uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)self->buf, .length = 64,
			       .lkey = self->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/*
 * A QP moved to RESET leaves no completion of its own in its CQs (its
 * flushed receive here); the other QPs' stay, in order.
 */
TEST_F(qp, reset_cleans_the_cq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp *qp2;
	union ibv_gid gid;
	struct ibv_wc wc[4];

	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	qp2 = srdma_test_rc_qp(self->pd, self->cq, 16, 16, 2);
	ASSERT_NE(NULL, qp2);
	ASSERT_EQ(0, srdma_test_connect_self(self->qp, self->gidx, &gid));
	ASSERT_EQ(0, srdma_test_connect_self(qp2, self->gidx, &gid));
	/* In ERR, a posted receive is flushed into the CQ... */
	ASSERT_EQ(0, post_recv64(self, self->qp, 76));
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc[0]));
	EXPECT_EQ(76u, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
	EXPECT_EQ(self->qp->qp_num, wc[0].qp_num);
	a.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	ASSERT_EQ(0, srdma_test_connect_self(self->qp, self->gidx, &gid));
	a.qp_state = IBV_QPS_ERR;
	/* ...so here: qp2's WRITE, qp's flushed receive, qp2's READ. */
	ASSERT_EQ(0, srdma_test_post_rdma(qp2, self->mr, IBV_WR_RDMA_WRITE,
					  self->buf, 64, self->buf + 8192));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc[0]));
	ASSERT_EQ(0, post_recv64(self, self->qp, 77));
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	usleep(100000);
	ASSERT_EQ(0, srdma_test_post_rdma(qp2, self->mr, IBV_WR_RDMA_READ,
					  self->buf, 64, self->buf + 8192));
	usleep(200000);
	/* Not polled yet: RESET takes qp's flushed receive away. */
	a.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	ASSERT_EQ(1, ibv_poll_cq(self->cq, 4, wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(IBV_WC_RDMA_READ, wc[0].opcode);
	EXPECT_EQ(64u, wc[0].byte_len);
	EXPECT_EQ(qp2->qp_num, wc[0].qp_num);
	EXPECT_EQ(0, ibv_destroy_qp(qp2));
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

/*
 * A signaled WRITE of @len bytes from buf + @from to buf + @to with
 * @wr_id; then its completion, every field of it, and the bytes.
 */
static void write_checked(struct __test_metadata *_metadata,
			  FIXTURE_DATA(qp) *self, uint64_t wr_id,
			  uint32_t from, uint32_t to, uint32_t len)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t i;

	for (i = 0; i < len; i++)
		self->buf[from + i] = (char)(i * 11 + wr_id);
	memset(self->buf + to, 0, len);
	sge.addr = (uintptr_t)self->buf + from;
	sge.length = len;
	sge.lkey = self->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)self->buf + to;
	wr.wr.rdma.rkey = self->mr->rkey;
	ASSERT_EQ(0, ibv_post_send(self->qp, &wr, &bad));
	memset(&wc, 0xa5, sizeof(wc));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc))
		TH_LOG("no completion for wr %llu", (unsigned long long)wr_id);
	EXPECT_EQ(wr_id, wc.wr_id);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("wr %llu: %s", (unsigned long long)wr_id,
		       ibv_wc_status_str(wc.status));
	EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
	EXPECT_EQ(0, wc.byte_len);	/* srdma: only READs report one */
	EXPECT_EQ(0, wc.wc_flags);
	EXPECT_EQ(self->qp->qp_num, wc.qp_num);
	EXPECT_EQ(0, memcmp(self->buf + from, self->buf + to, len));
}

/*
 * The QP's idea of its current state (IB_QP_CUR_STATE) is only a claim:
 * a false one is refused and changes nothing, a true one works.
 */
TEST_F(qp, cur_state_claim)
{
	struct ibv_qp_attr a;
	union ibv_gid gid;

	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	ASSERT_EQ(0, srdma_test_qp_init(self->qp));

	/* In INIT, claiming RTR to go straight to RTS. */
	srdma_test_rts_attr(&a);
	a.cur_qp_state = IBV_QPS_RTR;
	EXPECT_EQ(EINVAL, ibv_modify_qp(self->qp, &a,
					SRDMA_TEST_RTS_MASK | IBV_QP_CUR_STATE));
	EXPECT_EQ(IBV_QPS_INIT, srdma_test_qp_state(self->qp));

	ASSERT_EQ(0, srdma_test_qp_rtr(self->qp, self->gidx, &gid, IBV_MTU_1024));
	/* In RTR, claiming SQD (SQD -> RTS needs no attributes). */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.cur_qp_state = IBV_QPS_SQD;
	EXPECT_EQ(EINVAL, ibv_modify_qp(self->qp, &a,
					IBV_QP_STATE | IBV_QP_CUR_STATE));
	EXPECT_EQ(IBV_QPS_RTR, srdma_test_qp_state(self->qp));

	/* The truth works: RTR -> RTS claiming RTR. */
	srdma_test_rts_attr(&a);
	a.cur_qp_state = IBV_QPS_RTR;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, SRDMA_TEST_RTS_MASK | IBV_QP_CUR_STATE));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));

	/* In RTS, a false claim of SQD is refused, a true one of RTS not. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.cur_qp_state = IBV_QPS_SQD;
	EXPECT_EQ(EINVAL, ibv_modify_qp(self->qp, &a,
					IBV_QP_STATE | IBV_QP_CUR_STATE));
	a.cur_qp_state = IBV_QPS_RTS;
	EXPECT_EQ(0, ibv_modify_qp(self->qp, &a,
				   IBV_QP_STATE | IBV_QP_CUR_STATE));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));

	/* And the QP moves data. */
	write_checked(_metadata, self, 0x1234, 0, 8192, 3000);
}

/*
 * With the netdev's MTU below 352 (set by tests/hardening.sh, which sets
 * SRDMA_SMALL_MTU=1), no path MTU fits: RTR fails with EINVAL and the QP
 * stays in INIT. Skipped otherwise.
 */
TEST_F(qp, rtr_small_mtu)
{
	const char *on = getenv("SRDMA_SMALL_MTU");
	union ibv_gid gid;

	if (!on || strcmp(on, "1"))
		SKIP(return,
		     "rtr_small_mtu: needs a netdev MTU below 352 (hardening.sh)");
	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	errno = 0;
	EXPECT_EQ(-1, srdma_test_connect_self(self->qp, self->gidx, &gid));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(IBV_QPS_INIT, srdma_test_qp_state(self->qp));
	/* Nor with the smallest path MTU there is. */
	EXPECT_EQ(EINVAL, srdma_test_qp_rtr(self->qp, self->gidx, &gid, IBV_MTU_256));
	EXPECT_EQ(IBV_QPS_INIT, srdma_test_qp_state(self->qp));
}

/* system() of a formatted command; 0 if it ran and exited 0. */
static int run_cmd(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

/* An address only srdma's own route lookup cannot reach; see below. */
#define TRAP_ADDR "2001:db8::99"

static void trap_remove(const char *ndev)
{
	run_cmd("ip -6 rule del to " TRAP_ADDR "/128 ipproto udp prohibit pref 99 2>/dev/null");
	run_cmd("ip -6 neigh del " TRAP_ADDR " dev %s 2>/dev/null", ndev);
	run_cmd("ip -6 route del " TRAP_ADDR "/128 dev %s 2>/dev/null", ndev);
}

/* The RoCEv2 GID of the IPv6 link-local address, waiting out DAD (5 s). */
static int ll6_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	struct ibv_gid_entry ent;
	int i, tries;

	for (tries = 0; tries < 50; tries++) {
		for (i = 0; i < 16; i++) {
			if (ibv_query_gid_ex(ctx, 1, i, &ent, 0))
				continue;
			if (ent.gid_type == IBV_GID_TYPE_ROCE_V2 &&
			    ent.gid.raw[0] == 0xfe && ent.gid.raw[1] == 0x80) {
				*gid = ent.gid;
				return i;
			}
		}
		usleep(100000);
	}
	return -1;
}

/*
 * SQ drained (IBTA 10.3.1): in SQD a QP starts no work request, and its
 * SQ is drained once those it started are done. A self-connected QP
 * with en_sqd_async_notify enters SQD idle: one SQ_DRAINED, sq_draining
 * 0. A WRITE posted in SQD is not started: the SQ stays drained
 * (sq_draining 0; srdma said 1 before, and never told a QP drained that
 * entered SQD with such a request), no second event comes and nothing
 * completes. Back in RTS the WRITE goes and completes, every field and
 * byte checked; entering SQD again tells it again.
 */
TEST_F(qp, sq_drained)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_async_event ev;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_sge sge;
	union ibv_gid gid;
	struct ibv_wc wc;
	int flags, i;

	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	flags = fcntl(self->ctx->async_fd, F_GETFL);
	ASSERT_EQ(0, fcntl(self->ctx->async_fd, F_SETFL, flags | O_NONBLOCK));
	ASSERT_EQ(0, srdma_test_connect_self(self->qp, self->gidx, &gid));
	write_checked(_metadata, self, 1, 0, 8192, 4000);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a,
				   IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY));
	memset(&ev, 0, sizeof(ev));
	ASSERT_EQ(0, srdma_test_next_event(self->ctx, 2000, &ev))
		TH_LOG("no event on entering SQD idle");
	EXPECT_EQ(IBV_EVENT_SQ_DRAINED, ev.event_type);
	EXPECT_EQ(self->qp, ev.element.qp);
	ASSERT_EQ(0, ibv_query_qp(self->qp, &a, IBV_QP_STATE, &ia));
	EXPECT_EQ(IBV_QPS_SQD, a.qp_state);
	EXPECT_EQ(0, a.sq_draining);

	/* Posted in SQD: queued, not started. */
	for (i = 0; i < 4000; i++)
		self->buf[i] = (char)(i * 7 + 2);
	memset(self->buf + 16384, 0, 4000);
	sge.addr = (uintptr_t)self->buf;
	sge.length = 4000;
	sge.lkey = self->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)self->buf + 16384;
	wr.wr.rdma.rkey = self->mr->rkey;
	ASSERT_EQ(0, ibv_post_send(self->qp, &wr, &bad));
	usleep(200000);
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc)) TH_LOG("a completion in SQD");
	ASSERT_EQ(0, ibv_query_qp(self->qp, &a, IBV_QP_STATE, &ia));
	EXPECT_EQ(IBV_QPS_SQD, a.qp_state);
	EXPECT_EQ(0, a.sq_draining)
		TH_LOG("a request not started counted as draining");
	memset(&ev, 0, sizeof(ev));
	EXPECT_EQ(-1, srdma_test_next_event(self->ctx, 200, &ev))
		TH_LOG("a second event in SQD: %s",
		       ibv_event_type_str(ev.event_type));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	memset(&wc, 0xa5, sizeof(wc));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc))
		TH_LOG("no completion once back in RTS");
	EXPECT_EQ(2, wc.wr_id);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
	EXPECT_EQ(0, wc.byte_len);
	EXPECT_EQ(0, wc.wc_flags);
	EXPECT_EQ(self->qp->qp_num, wc.qp_num);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 16384, 4000));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	memset(&ev, 0, sizeof(ev));
	ASSERT_EQ(0, srdma_test_next_event(self->ctx, 2000, &ev))
		TH_LOG("no event on entering SQD a second time");
	EXPECT_EQ(IBV_EVENT_SQ_DRAINED, ev.event_type);
	EXPECT_EQ(self->qp, ev.element.qp);
}

/*
 * An address vector change either happens whole or not at all. A
 * self-connected QP in RTS writes, drains to SQD, and is given (SQD ->
 * SQD) an IPv6 path whose route lookup fails in srdma; then, back in RTS,
 * it must still write over its old path.
 *
 * The core resolves the AV itself first (route and neighbour, without a
 * protocol), and a plain unroutable address would be refused there, never
 * reaching srdma; and IPv4 lookups with an output device never fail. So
 * the trap is IPv6: TRAP_ADDR has a route and a permanent neighbour on the
 * netdev, which satisfies the core, and a rule prohibits UDP to it, which
 * fails srdma's lookup (it asks for UDP). Before the fix, srdma kept the
 * new addresses with the old route and the second WRITE never arrived.
 */
TEST_F(qp, av_change_atomic)
{
	char path[256], ndev[64];
	struct ibv_qp_init_attr ia;
	union ibv_gid gid, gid6;
	struct ibv_qp_attr a;
	int gidx6, i, kfd;
	ssize_t n;
	FILE *f;

	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	gidx6 = ll6_gid(self->ctx, &gid6);
	if (gidx6 < 0)
		SKIP(return, "av_change_atomic: no IPv6 link-local RoCEv2 GID");
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/%d",
		 srdma_test_devname(), self->gidx);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	n = fscanf(f, "%63s", ndev);
	fclose(f);
	ASSERT_EQ(1, n);
	kfd = srdma_test_kmsg_open();
	ASSERT_GE(kfd, 0) TH_LOG("/dev/kmsg: %s", strerror(errno));

	strcpy(self->trap_dev, ndev);
	trap_remove(ndev);		/* left over from a killed run */
	ASSERT_EQ(0, run_cmd("ip -6 route replace " TRAP_ADDR "/128 dev %s", ndev));
	ASSERT_EQ(0, run_cmd("ip -6 neigh replace " TRAP_ADDR
			     " lladdr 02:00:00:00:00:99 dev %s nud permanent",
			     ndev));
	ASSERT_EQ(0, run_cmd("ip -6 rule add to " TRAP_ADDR
			     "/128 ipproto udp prohibit pref 99"));

	ASSERT_EQ(0, srdma_test_connect_self(self->qp, self->gidx, &gid));
	write_checked(_metadata, self, 1, 0, 8192, 4000);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, ibv_query_qp(self->qp, &a, IBV_QP_STATE, &ia));
		if (a.qp_state == IBV_QPS_SQD && !a.sq_draining)
			break;
		usleep(10000);
	}
	ASSERT_EQ(IBV_QPS_SQD, a.qp_state);
	ASSERT_EQ(0, a.sq_draining);

	memset(&a, 0, sizeof(a));
	a.ah_attr.is_global = 1;
	ASSERT_EQ(1, inet_pton(AF_INET6, TRAP_ADDR, a.ah_attr.grh.dgid.raw));
	a.ah_attr.grh.sgid_index = gidx6;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	EXPECT_NE(0, ibv_modify_qp(self->qp, &a, IBV_QP_AV));
	/* srdma itself refused it, not the core's resolver. */
	EXPECT_TRUE(0 < srdma_test_kmsg_count(kfd, "no route to the destination"));
	close(kfd);
	ASSERT_EQ(0, ibv_query_qp(self->qp, &a, IBV_QP_STATE | IBV_QP_AV, &ia));
	EXPECT_EQ(IBV_QPS_SQD, a.qp_state);
	EXPECT_EQ(0, memcmp(&gid, &a.ah_attr.grh.dgid, sizeof(gid)));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	write_checked(_metadata, self, 2, 16384, 24576, 4000);
}

/*
 * A larger max_dest_rd_atomic in SQD -> SQD while READs are queued at the
 * responder: they are still answered. QP A reads 4 MiB from QP B in four
 * READs; B goes to SQD (its SQ is empty: drained at once) and is given a
 * limit of 16 while they are answered, then goes back to RTS. Every READ
 * completes (every field) with the bytes of B's buffer. Before the fix
 * the new queue started empty: the queued READs were dropped, and their
 * resends matched nothing in the (new, empty) history, so A's READs
 * failed with IBV_WC_RETRY_EXC_ERR (helper-88 F4).
 */
#define RD_GROW_N	4
#define RD_GROW_LEN	(1u << 20)

TEST_F(qp, sqd_rd_limit_grows)
{
	size_t size = 2 * RD_GROW_N * (size_t)RD_GROW_LEN;
	struct ibv_send_wr wr, *bad;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc[RD_GROW_N];
	struct ibv_qp_attr a;
	struct ibv_qp *b;
	struct ibv_mr *mr;
	struct ibv_sge sge;
	struct sched_param sp = { .sched_priority = 1 };
	unsigned char *buf;
	int i, done = 0, before, n, rt;
	union ibv_gid gid;

	self->gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	ASSERT_GE(self->gidx, 0);
	buf = malloc(size);
	ASSERT_NE(NULL, buf);
	srdma_test_fill(buf, size / 2, 0x5a);
	memset(buf + size / 2, 0, size / 2);
	mr = ibv_reg_mr(self->pd, buf, size, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr);
	b = srdma_test_rc_qp(self->pd, self->cq, 4, 4, 1);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, srdma_test_connect_to(self->qp, b->qp_num, self->gidx,
					   &gid, IBV_ACCESS_REMOTE_READ));
	ASSERT_EQ(0, srdma_test_connect_to(b, self->qp->qp_num, self->gidx,
					   &gid, IBV_ACCESS_REMOTE_READ));

	/*
	 * Keep the CPU from posting to the limit's change: on a one-vCPU
	 * guest the read work (a high-priority kworker) otherwise ran as
	 * soon as the first doorbell returned and answered all four READs
	 * before this process ran again (6.12, 2026-12-06). Nothing here
	 * sleeps until the change is made.
	 */
	rt = sched_setscheduler(0, SCHED_FIFO, &sp);
	for (i = 0; i < RD_GROW_N; i++) {
		sge.addr = (uintptr_t)buf + size / 2 + i * (size_t)RD_GROW_LEN;
		sge.length = RD_GROW_LEN;
		sge.lkey = mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x700 + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)buf + i * (size_t)RD_GROW_LEN;
		wr.wr.rdma.rkey = mr->rkey;
		ASSERT_EQ(0, ibv_post_send(self->qp, &wr, &bad));
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	ASSERT_EQ(0, ibv_modify_qp(b, &a, IBV_QP_STATE));
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, ibv_query_qp(b, &a, IBV_QP_STATE, &ia));
		if (a.qp_state == IBV_QPS_SQD && !a.sq_draining)
			break;
		usleep(1000);
	}
	ASSERT_EQ(IBV_QPS_SQD, a.qp_state);
	n = ibv_poll_cq(self->cq, RD_GROW_N, wc);
	ASSERT_GE(n, 0);
	done = before = n;
	/* Otherwise the change met no READ, and the test proves nothing. */
	ASSERT_LT(before, RD_GROW_N) TH_LOG("all READs done before SQD");
	memset(&a, 0, sizeof(a));
	a.max_dest_rd_atomic = 16;
	ASSERT_EQ(0, ibv_modify_qp(b, &a, IBV_QP_MAX_DEST_RD_ATOMIC));
	ASSERT_EQ(0, ibv_query_qp(b, &a, IBV_QP_MAX_DEST_RD_ATOMIC, &ia));
	EXPECT_EQ(16, a.max_dest_rd_atomic);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	ASSERT_EQ(0, ibv_modify_qp(b, &a, IBV_QP_STATE));
	if (!rt) {
		sp.sched_priority = 0;
		ASSERT_EQ(0, sched_setscheduler(0, SCHED_OTHER, &sp));
	}

	while (done < RD_GROW_N) {
		srdma_test_wait_wc_for(self->cq, &wc[done], 50000);
		ASSERT_NE(-1, (int)wc[done].status)
			TH_LOG("READ %d of %d: no completion in 5 s", done + 1,
			       RD_GROW_N);
		done++;
	}
	for (i = 0; i < RD_GROW_N; i++) {
		EXPECT_EQ(0x700u + i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status)
			TH_LOG("READ %d: %s", i, ibv_wc_status_str(wc[i].status));
		EXPECT_EQ(IBV_WC_RDMA_READ, wc[i].opcode);
		EXPECT_EQ(RD_GROW_LEN, wc[i].byte_len);
		EXPECT_EQ(0, wc[i].wc_flags);
		EXPECT_EQ(self->qp->qp_num, wc[i].qp_num);
	}
	EXPECT_TRUE(srdma_test_filled(buf + size / 2, size / 2, 0x5a));
	TH_LOG("READs done before the change: %d of %d (%s)", before,
	       RD_GROW_N, rt ? "SCHED_FIFO refused" : "under SCHED_FIFO");
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(b));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));
	ASSERT_EQ(0, ibv_destroy_qp(b));
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	free(buf);
}

TEST_HARNESS_MAIN
