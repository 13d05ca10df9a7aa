// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device, port, GID and context queries of an srdma device through
 * libibverbs and the srdma provider. Run in the test VM with the device
 * bound to a veth with 10.0.0.1/24 (see selftests/run.sh).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

TEST_HARNESS_MAIN
