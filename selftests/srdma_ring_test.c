// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The mapped rings under a hostile owner: the process scribbles over its
 * own CQ, SQ and RQ rings (found through /proc/self/maps) and the kernel
 * must refuse what it reads there with an errno and a QP or CQ error,
 * never crash, and the device must keep working. Run in the test VM with
 * the device bound to a veth (see selftests/run.sh); the runner checks the
 * kernel log for WARN/BUG/oops after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <grp.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/srdma-abi.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define MAX_SGE 2
#define SQ_SLOT (sizeof(struct srdma_usend_wqe) + \
		 MAX_SGE * sizeof(struct srdma_usge))
#define RQ_SLOT (sizeof(struct srdma_urecv_wqe) + \
		 MAX_SGE * sizeof(struct srdma_usge))

FIXTURE(ring) {
	SRDMA_TEST_FIXTURE_OBJS;	/* ctx, pd, cq, mr, qp, buf */
	struct srdma_test_map m[3];	/* CQ, SQ, RQ */
	struct srdma_ring_hdr *cqh, *sqh, *rqh;
	bool mtu_changed;		/* the veth's MTU, to set back */
	struct ibv_comp_channel *chan;	/* the CQ's, new_evented_qp()'s */
};

/*
 * A fresh self-connected QP at path MTU @mtu with @send_wr send work
 * requests on the fixture's CQ (the old one destroyed), and the rings as
 * they are mapped now: 0 when all went well.
 */
static int new_qp_sq(FIXTURE_DATA(ring) *self, enum ibv_mtu mtu,
		     uint32_t send_wr)
{
	union ibv_gid gid;
	int gidx;

	if (self->qp)
		ibv_destroy_qp(self->qp);
	self->qp = srdma_test_rc_qp(self->pd, self->cq, send_wr, 16, MAX_SGE);
	gidx = srdma_test_ipv4_gid(self->ctx, &gid);
	if (!self->qp || gidx < 0 ||
	    srdma_test_connect_self_mtu(self->qp, gidx, &gid, mtu) ||
	    srdma_test_uverbs_maps(self->m, 3) != 3)
		return -1;
	self->cqh = (struct srdma_ring_hdr *)self->m[0].addr;
	self->sqh = (struct srdma_ring_hdr *)self->m[1].addr;
	self->rqh = (struct srdma_ring_hdr *)self->m[2].addr;
	return 0;
}

static int new_qp_mtu(FIXTURE_DATA(ring) *self, enum ibv_mtu mtu)
{
	return new_qp_sq(self, mtu, 16);
}

static int new_qp(FIXTURE_DATA(ring) *self)
{
	return new_qp_mtu(self, IBV_MTU_1024);
}

FIXTURE_SETUP(ring)
{
	SRDMA_TEST_FIXTURE_OPEN(self);
	ASSERT_EQ(0, new_qp(self));
}

/* The netdev the device is bound to: v0 (selftests/run.sh). */
#define RING_NDEV "v0"

FIXTURE_TEARDOWN(ring)
{
	/* A channel goes after its CQ and before the context. */
	if (self->chan) {
		if (self->qp)
			ibv_destroy_qp(self->qp);
		self->qp = NULL;
		if (self->cq)
			ibv_destroy_cq(self->cq);
		self->cq = NULL;
		ibv_destroy_comp_channel(self->chan);
	}
	SRDMA_TEST_FIXTURE_CLOSE(self);
	if (self->mtu_changed &&
	    system("ip link set " RING_NDEV " mtu 1500"))
		TH_LOG("could not set %s's MTU back to 1500", RING_NDEV);
}

/* Post one signaled WRITE of @len bytes from buf to buf + 32 KiB. */
static int post_write(FIXTURE_DATA(ring) *self, uint32_t len)
{
	return srdma_test_post_rdma(self->qp, self->mr, IBV_WR_RDMA_WRITE,
				    self->buf, len, self->buf + 32768);
}

/* Post one receive of 64 bytes into buf. */
static int post_recv64(FIXTURE_DATA(ring) *self)
{
	return srdma_test_post_recv(self->qp, self->mr, self->buf, 64, 0);
}

/*
 * A WRITE of 3000 bytes filled with (i * @mul + @add) from buf to buf + 32
 * KiB through the rings: its completion, every field, and the bytes.
 */
static void write_3000_checked(struct __test_metadata *_metadata,
			       FIXTURE_DATA(ring) *self, int mul, int add)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 3000; i++)
		self->buf[i] = (char)(i * mul + add);
	ASSERT_EQ(0, post_write(self, 3000));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc));
	/* srdma_test_post_rdma() posts wr_id 0; no length for a WRITE. */
	EXPECT_SEND_WC(wc, 0, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, self->qp);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 32768, 3000));
}

/* The ring works as such: data arrives, one completion, indices move. */
TEST_F(ring, write_through_ring)
{
	write_3000_checked(_metadata, self, 13, 1);
	EXPECT_EQ(1, self->sqh->prod);
	EXPECT_EQ(1, self->sqh->cons);
	EXPECT_EQ(1, self->cqh->prod);
	EXPECT_EQ(1, self->cqh->cons);
}

/* A send ring producer index beyond the ring: EINVAL, QP to ERR. */
TEST_F(ring, sq_producer_out_of_range)
{
	/* Fool the provider's own space check with a matching cons. */
	self->sqh->prod = 0x80000000u;
	self->sqh->cons = 0x80000000u;
	EXPECT_EQ(EINVAL, post_write(self, 64));
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qp));
}

/*
 * Garbage send entries ahead of a good one: EINVAL, QP to ERR. Inline
 * data (the QP's max_inline_data is the room of its MAX_SGE SGEs, 32
 * bytes): a length one past it, a length of 4 GiB - 1, a READ. An ATOMIC
 * WRITE with an SGE or with inline data (its 8 bytes are in the entry).
 */
TEST_F(ring, sq_bad_entries)
{
	struct srdma_usend_wqe *u;
	struct ibv_wc wc;
	int kind;

	for (kind = 0; kind < 9; kind++) {
		/* A fresh QP for each kind of garbage. */
		if (kind)
			ASSERT_EQ(0, new_qp(self)) TH_LOG("kind %d", kind);
		u = (struct srdma_usend_wqe *)(self->m[1].addr +
					       SRDMA_RING_HDR_SIZE);
		memset(u, 0, SQ_SLOT);
		u->opcode = IBV_WR_RDMA_WRITE;
		u->num_sge = 1;
		u->sge[0].length = 8;
		u->sge[0].lkey = self->mr->lkey;
		u->sge[0].addr = (uintptr_t)self->buf;
		switch (kind) {
		case 0:
			u->num_sge = 1000;		/* past max_sge */
			break;
		case 1:
			u->opcode = 77;			/* no such opcode */
			break;
		case 2:
			u->num_sge = 2;			/* lengths overflow */
			u->sge[0].length = 0xffffffffu;
			u->sge[1].length = 0xffffffffu;
			break;
		case 3:
			u->send_flags = 0x80000000u;	/* unknown flag */
			break;
		case 4:
			u->send_flags = IBV_SEND_INLINE;
			u->inline_len = MAX_SGE * sizeof(struct srdma_usge) + 1;
			break;
		case 5:
			u->send_flags = IBV_SEND_INLINE;
			u->inline_len = 0xffffffffu;
			break;
		case 6:
			u->send_flags = IBV_SEND_INLINE;
			u->opcode = IBV_WR_RDMA_READ;
			u->inline_len = 8;
			break;
		case 7:				/* ATOMIC WRITE with an SGE */
			u->opcode = IBV_WR_ATOMIC_WRITE;
			u->remote_addr = (uintptr_t)self->buf;
			u->rkey = self->mr->rkey;
			break;
		case 8:				/* ... or inline data */
			u->opcode = IBV_WR_ATOMIC_WRITE;
			u->num_sge = 0;
			u->send_flags = IBV_SEND_INLINE;
			u->inline_len = 8;
			break;
		}
		self->sqh->prod = 1;		/* publish it by hand */
		EXPECT_EQ(EINVAL, post_write(self, 64));
		EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qp));
		/* The kernel took neither the garbage nor what follows. */
		EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	}
}

/*
 * Send entries too long for one message, each ahead of a good one, each
 * on a fresh QP: EINVAL at the doorbell, QP to ERR, nothing taken, and a
 * message in the kernel log. The lengths are never backed by memory: the
 * kernel must refuse them when it reads the ring, before any packet.
 *  - above SRDMA_MAX_MSG_SIZE (2 GiB) without wrapping 32 bits: 3 GiB as
 *    two SGEs, and 2 GiB + 1;
 *  - at path MTU 256, more than 2^21 packets (SRDMA_MAX_MSG_PKTS):
 *    exactly 2 GiB (2^23 packets, within the size limit) and 512 MiB + 1
 *    (2^21 + 1 packets).
 */
TEST_F(ring, sq_msg_too_long)
{
	static const struct {
		enum ibv_mtu mtu;
		uint32_t len0, len1;
	} c[] = {
		{ IBV_MTU_1024, 0x60000000u, 0x60000000u },
		{ IBV_MTU_1024, 0x80000000u, 1 },
		{ IBV_MTU_256, 0x40000000u, 0x40000000u },
		{ IBV_MTU_256, 0x20000000u, 1 },
	};
	struct srdma_usend_wqe *u;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;
	unsigned int i;
	int kfd;

	kfd = srdma_test_kmsg_open();
	ASSERT_GE(kfd, 0) TH_LOG("/dev/kmsg: %s", strerror(errno));
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		ASSERT_EQ(0, new_qp_mtu(self, c[i].mtu)) TH_LOG("case %u", i);
		ASSERT_EQ(0, ibv_query_qp(self->qp, &a, IBV_QP_PATH_MTU, &ia));
		ASSERT_EQ(c[i].mtu, a.path_mtu);
		u = (struct srdma_usend_wqe *)(self->m[1].addr +
					       SRDMA_RING_HDR_SIZE);
		memset(u, 0, SQ_SLOT);
		u->wr_id = 100 + i;
		u->opcode = IBV_WR_RDMA_WRITE;
		u->send_flags = IBV_SEND_SIGNALED;
		u->num_sge = 2;
		u->sge[0].addr = (uintptr_t)self->buf;
		u->sge[0].length = c[i].len0;
		u->sge[0].lkey = self->mr->lkey;
		u->sge[1].addr = (uintptr_t)self->buf;
		u->sge[1].length = c[i].len1;
		u->sge[1].lkey = self->mr->lkey;
		u->remote_addr = (uintptr_t)self->buf + 32768;
		u->rkey = self->mr->rkey;
		self->sqh->prod = 1;		/* publish it by hand */
		EXPECT_EQ(EINVAL, post_write(self, 64)) TH_LOG("case %u", i);
		EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qp)) TH_LOG("case %u", i);
		EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc)) TH_LOG("case %u", i);
	}
	/* Rate-limited, but four are within the burst. */
	EXPECT_EQ(4, srdma_test_kmsg_count(kfd, "too long for MTU"));
	close(kfd);
}

/*
 * The provider limits a message by the path MTU the kernel took, not the
 * one asked for: at a netdev MTU of 1000 a QP asked for 1024 gets 512,
 * and messages of 1 GiB at most (2^21 packets). One byte more is refused
 * by ibv_post_send() with EINVAL and bad_wr set, nothing written to the
 * ring, the QP still in RTS (the kernel would refuse it and stop the QP),
 * and a WRITE then goes through at 512 bytes a packet.
 */
TEST_F(ring, msg_len_at_clamped_mtu)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->buf, .length = (1u << 30) + 1,
		.lkey = self->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 5, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_wc wc;

	ASSERT_EQ(0, system("ip link set " RING_NDEV " mtu 1000"));
	self->mtu_changed = true;
	ASSERT_EQ(0, new_qp_mtu(self, IBV_MTU_1024));
	ASSERT_EQ(0, ibv_query_qp(self->qp, &a, IBV_QP_PATH_MTU, &ia));
	ASSERT_EQ(IBV_MTU_512, a.path_mtu);
	wr.wr.rdma.remote_addr = (uintptr_t)self->buf + 32768;
	wr.wr.rdma.rkey = self->mr->rkey;
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	EXPECT_EQ(0, self->sqh->prod);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));
	write_3000_checked(_metadata, self, 7, 3);
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
}

/*
 * A garbage send entry stops only the SQ: the receives already in the
 * mapped RQ, which the kernel had not taken yet, and one posted after the
 * QP went to ERR (a drain's marker) each complete as flushed, in order,
 * with every field. The SQ takes nothing more until the QP is reset.
 */
TEST_F(ring, sq_bad_entry_rq_flushes)
{
	struct srdma_usend_wqe *u;
	struct ibv_wc wc;
	int i;

	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, self->buf, 64, 11));
	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, self->buf, 64, 12));
	u = (struct srdma_usend_wqe *)(self->m[1].addr + SRDMA_RING_HDR_SIZE);
	memset(u, 0, SQ_SLOT);
	u->wr_id = 99;
	u->opcode = IBV_WR_RDMA_WRITE;
	u->num_sge = 1000;			/* past max_sge */
	self->sqh->prod = 1;			/* publish it by hand */
	EXPECT_EQ(EINVAL, post_write(self, 64));
	ASSERT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qp));
	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, self->buf, 64, 13));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc)) TH_LOG("receive %d", i);
		EXPECT_EQ(11u + i, wc.wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
		EXPECT_EQ(IBV_WC_RECV, wc.opcode);
		EXPECT_EQ(0u, wc.byte_len);
		EXPECT_EQ(0u, wc.wc_flags);
		EXPECT_EQ(0u, wc.imm_data);
		EXPECT_EQ(self->qp->qp_num, wc.qp_num);
		EXPECT_EQ(0u, wc.src_qp);
	}
	/* Neither the garbage nor the WRITE behind it, nor a third. */
	EXPECT_EQ(EINVAL, post_write(self, 64));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	EXPECT_EQ(3, self->rqh->cons);
	EXPECT_EQ(0, self->sqh->cons);
}

/*
 * A garbage receive entry met by an incoming SEND: QP to ERR. The SQ goes
 * on flushing: a SEND posted after that completes as flushed. A receive
 * posted then is refused with EINVAL.
 */
TEST_F(ring, rq_bad_entry)
{
	struct srdma_urecv_wqe *u;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	u = (struct srdma_urecv_wqe *)(self->m[2].addr + SRDMA_RING_HDR_SIZE);
	memset(u, 0, RQ_SLOT);
	u->wr_id = 42;
	u->num_sge = 0x10000;
	self->rqh->prod = 1;
	sge.addr = (uintptr_t)self->buf;
	sge.length = 16;
	sge.lkey = self->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(self->qp, &wr, &bad));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc));
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_NE(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qp));
	wr.wr_id = 8;
	ASSERT_EQ(0, ibv_post_send(self->qp, &wr, &bad));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc));
	EXPECT_SEND_WC(wc, 8, IBV_WC_WR_FLUSH_ERR, 0, 0, self->qp);
	/* The RQ takes nothing more: a receive now is refused, not lost. */
	EXPECT_EQ(EINVAL, srdma_test_post_recv(self->qp, self->mr, self->buf,
					       16, 9));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
}

/* A CQ consumer index out of range reads as a full CQ: CQ error event. */
TEST_F(ring, cq_consumer_garbage)
{
	struct ibv_async_event ev;
	struct pollfd pfd;
	struct ibv_wc wc;

	self->cqh->cons = 0x12345678;
	ASSERT_EQ(0, post_write(self, 64));
	pfd.fd = self->ctx->async_fd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ(0, ibv_get_async_event(self->ctx, &ev));
	EXPECT_EQ(IBV_EVENT_CQ_ERR, ev.event_type);
	EXPECT_EQ(self->cq, ev.element.cq);
	ibv_ack_async_event(&ev);
	EXPECT_EQ(0, self->cqh->prod);	/* the completion was not written */
	self->cqh->cons = 0;
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
}

/*
 * Random bytes over every ring, then the verbs in a loop: whatever the
 * verbs return, the kernel survives, and a new QP works afterwards.
 */
TEST_F(ring, random_scribble)
{
	struct ibv_wc wc[8];
	unsigned int seed = 1234;
	size_t i;
	int r, k;

	for (r = 0; r < 20; r++) {
		for (k = 0; k < 3; k++)
			for (i = 0; i < self->m[k].len; i++)
				self->m[k].addr[i] = (char)rand_r(&seed);
		post_write(self, 64);
		post_recv64(self);
		ibv_poll_cq(self->cq, 8, wc);
		usleep(2000);
	}
	ibv_destroy_qp(self->qp);
	self->qp = NULL;
	ibv_destroy_cq(self->cq);

	/* The device still moves data. */
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	ASSERT_EQ(0, new_qp(self));
	for (i = 0; i < 2000; i++)
		self->buf[i] = (char)(i * 5 + 2);
	ASSERT_EQ(0, post_write(self, 2000));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 32768, 2000));
}

/*
 * The process unmaps its rings while the kernel still produces into and
 * consumes from them: the kernel works on its own mapping, nothing breaks.
 */
TEST_F(ring, unmapped_rings)
{
	struct ibv_qp_attr a;
	int k;

	ASSERT_EQ(0, post_recv64(self));
	ASSERT_EQ(0, post_write(self, 4096));
	for (k = 0; k < 3; k++)
		ASSERT_EQ(0, munmap(self->m[k].addr, self->m[k].len));
	usleep(200000);
	/* ERR flushes the receive into the unmapped CQ ring. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	EXPECT_EQ(0, ibv_modify_qp(self->qp, &a, IBV_QP_STATE));
	EXPECT_EQ(IBV_QPS_ERR, srdma_test_qp_state(self->qp));
}

/*
 * The local work request storm: one thread of the process keeps writing
 * unsignaled BIND_MWs of a type 1 window (each valid, each done at once
 * and its slot handed back) into its SQ ring without a doorbell, while
 * another rings the doorbell again and again. One run of the requester
 * carries out a budget of them and leaves the rest to the QP's send work:
 * no doorbell may hold the CPU, in the kernel with the QP lock held, for
 * as long as the writer goes on. Before the budget counted local work
 * requests, a doorbell returned only when the writer stopped.
 */
#define STORM_MS	2000
#define STORM_WR	4096	/* the SQ's max_send_wr */
#define STORM_SLOTS	8192	/* roundup_pow_of_two(STORM_WR + 1) */

struct storm {
	struct srdma_ring_hdr *sqh;
	char *slots;
	uint32_t rkey;
	atomic_int go, stop;
	unsigned long written;
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000ull + t.tv_nsec / 1000000;
}

static void *storm_writer(void *arg)
{
	struct storm *st = arg;
	struct srdma_usend_wqe *u;
	uint32_t prod = 0;

	while (!atomic_load(&st->go))
		;
	while (!atomic_load(&st->stop)) {
		/* At most max_send_wr outstanding, as the kernel wants. */
		if (prod - __atomic_load_n(&st->sqh->cons, __ATOMIC_ACQUIRE) >=
		    STORM_WR)
			continue;
		u = (struct srdma_usend_wqe *)(st->slots +
					       (prod % STORM_SLOTS) * SQ_SLOT);
		memset(u, 0, SQ_SLOT);
		u->wr_id = prod;
		u->opcode = IBV_WR_BIND_MW;	/* unsignaled, length 0 */
		u->rkey = st->rkey;
		__atomic_store_n(&st->sqh->prod, ++prod, __ATOMIC_RELEASE);
		st->written++;
	}
	return NULL;
}

/* The provider's doorbell by hand: a post_send command without WRs. */
static int raw_doorbell(struct ibv_qp *qp)
{
	struct ib_uverbs_post_send_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} c = {
		.hdr = { .command = IB_USER_VERBS_CMD_POST_SEND,
			 .in_words = sizeof(c) / 4,
			 .out_words = sizeof(resp) / 4 },
		.cmd = { .response = (uintptr_t)&resp,
			 .qp_handle = qp->handle,
			 .wqe_size = sizeof(struct ib_uverbs_send_wr) },
	};

	return write(qp->context->cmd_fd, &c, sizeof(c)) == sizeof(c) ? 0 :
	       errno;
}

TEST_F(ring, local_wr_storm)
{
	struct storm st = { 0 };
	uint64_t start, t0, t, longest = 0;
	unsigned long rings = 0;
	pthread_t th;
	struct ibv_mw *mw;
	struct ibv_wc wc;

	/* A deep SQ, so that the writer can stay ahead of the kernel. */
	ASSERT_EQ(0, new_qp_sq(self, IBV_MTU_1024, STORM_WR));
	mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	ASSERT_NE(NULL, mw);
	ASSERT_GE(self->m[1].len, SRDMA_RING_HDR_SIZE + STORM_SLOTS * SQ_SLOT);
	st.sqh = self->sqh;
	st.slots = self->m[1].addr + SRDMA_RING_HDR_SIZE;
	st.rkey = mw->rkey;
	ASSERT_EQ(0, pthread_create(&th, NULL, storm_writer, &st));
	atomic_store(&st.go, 1);
	start = now_ms();
	while ((t0 = now_ms()) - start < STORM_MS) {
		if (raw_doorbell(self->qp))
			break;
		t = now_ms() - t0;
		if (t > longest)
			longest = t;
		rings++;
	}
	atomic_store(&st.stop, 1);
	pthread_join(th, NULL);
	TH_LOG("%lu BIND_MWs written, %lu doorbells, the longest %llu ms",
	       st.written, rings, (unsigned long long)longest);
	/* Every doorbell came back, and soon, while the writer went on. */
	EXPECT_LT(longest, 500);
	EXPECT_LT(100, st.written);
	/* The kernel caught up and took every entry, none failed. */
	usleep(200000);
	EXPECT_EQ(0, raw_doorbell(self->qp));
	usleep(200000);
	EXPECT_EQ(st.sqh->prod, __atomic_load_n(&st.sqh->cons,
						__ATOMIC_ACQUIRE));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	/* The QP still moves data, the provider posting after the storm. */
	for (t = 0; t < 1000; t++)
		self->buf[t] = (char)(t * 7 + 3);
	ASSERT_EQ(0, post_write(self, 1000));
	ASSERT_EQ(1, srdma_test_wait_wc(self->cq, &wc));
	/* srdma_test_post_rdma() posts wr_id 0; no length for a WRITE. */
	EXPECT_SEND_WC(wc, 0, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, self->qp);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 32768, 1000));
	ASSERT_EQ(0, ibv_dealloc_mw(mw));
}

/*
 * New credentials with the same values (setgroups() with this process's
 * groups): a new struct cred all the same, so the kernel refuses the
 * command file's write() from now on. 0, or an errno (EPERM without
 * CAP_SETGID).
 */
static int same_groups_again(void)
{
	gid_t *groups;
	int n, rc = 0;

	n = getgroups(0, NULL);
	if (n < 0)
		return errno;
	groups = calloc(n + 1, sizeof(*groups));
	if (!groups)
		return ENOMEM;
	if (getgroups(n, groups) != n || setgroups(n, groups))
		rc = errno;
	free(groups);
	return rc;
}

/* The completion of post_write() (wr_id 0, no length): every field. */
static bool wc_is_write(const struct ibv_wc *wc, const struct ibv_qp *qp)
{
	return wc->wr_id == 0 && wc->status == IBV_WC_SUCCESS &&
	       wc->opcode == IBV_WC_RDMA_WRITE && wc->byte_len == 0 &&
	       wc->wc_flags == 0 && wc->imm_data == 0 &&
	       wc->qp_num == qp->qp_num;
}

/* Lines of the kernel log that name a refused uverbs write(). */
static int write_refusals_logged(void)
{
	char line[512];
	FILE *f = popen("dmesg", "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "changed security contexts"))
			n++;
	pclose(f);
	return n;
}

/*
 * write() calls this thread has made (syscw of /proc/thread-self/io,
 * refused ones included), or -1. A forked child's commands must go
 * through ioctl, which it does not count.
 */
static long write_syscalls(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen("/proc/thread-self/io", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "syscw: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Wait up to 2 s for the kernel to want doorbells again; 0 once it does. */
static int doorbell_wanted(FIXTURE_DATA(ring) *self)
{
	int i;

	for (i = 0; i < 2000; i++) {
		if (!__atomic_load_n(&self->sqh->no_doorbell, __ATOMIC_ACQUIRE))
			return 0;
		usleep(1000);
	}
	return -1;
}

/*
 * The provider rings the send doorbell with write() on the command file
 * (srdma_sq_doorbell()), which the kernel refuses from a forked child (a
 * copy of the credentials) with a line in its log. A child uses the
 * ioctl path from the start: its WRITE completes (every field, the
 * bytes) without one write() (the child's syscw), and the kernel logs no
 * refusal (a write() from the child would log one, once per boot). Runs
 * before doorbell_after_cred_change, whose refusal is logged.
 */
TEST_F(ring, doorbell_in_forked_child)
{
	struct ibv_wc wc;
	int before, status, i;
	pid_t pid;

	before = write_refusals_logged();
	ASSERT_LE(0, before);
	ASSERT_EQ(0, doorbell_wanted(self));
	/*
	 * Filled here: the child's buf is a copy (the MR's pinned pages stay
	 * the parent's), so only the parent sees the bytes arrive.
	 */
	for (i = 0; i < 3000; i++)
		self->buf[i] = (char)(i * 11 + 4);
	memset(self->buf + 32768, 0, 3000);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		long w0 = write_syscalls();

		if (post_write(self, 3000) ||
		    srdma_test_wait_wc(self->cq, &wc) != 1)
			_exit(3);
		/* Not one write(), refused or not: ioctl from the start. */
		if (w0 < 0)
			_exit(5);
		if (write_syscalls() != w0)
			_exit(6);
		if (!wc_is_write(&wc, self->qp))
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 32768, 3000));
	EXPECT_EQ(before, write_refusals_logged());
}

/*
 * The fixture's CQ and QP made again, the CQ on a completion channel
 * (self->chan): 0 when all went well.
 */
static int new_evented_qp(FIXTURE_DATA(ring) *self)
{
	ibv_destroy_qp(self->qp);
	self->qp = NULL;
	ibv_destroy_cq(self->cq);
	self->cq = NULL;
	self->chan = ibv_create_comp_channel(self->ctx);
	if (!self->chan)
		return -1;
	self->cq = ibv_create_cq(self->ctx, 64, NULL, self->chan, 0);
	if (!self->cq)
		return -1;
	return new_qp(self);
}

/*
 * Arm the CQ, post a WRITE of @len bytes (post_write()), wait up to 5 s
 * for the channel's event and poll the completion into @wc: 0, or the
 * step that failed (a forked child's exit status). The event is for the
 * fixture's CQ, acknowledged, and the CQ holds exactly one completion.
 * *@got_event is set once an event was read: a forked child's, which the
 * parent must acknowledge (its CQ's destruction waits for that).
 */
static int evented_write(FIXTURE_DATA(ring) *self, uint32_t len,
			 struct ibv_wc *wc, volatile int *got_event)
{
	struct pollfd pfd = { .fd = self->chan->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (ibv_req_notify_cq(self->cq, 0))
		return 10;
	if (post_write(self, len))
		return 11;
	if (poll(&pfd, 1, 5000) != 1)
		return 12;
	if (ibv_get_cq_event(self->chan, &ev_cq, &ev_ctx))
		return 13;
	if (ev_cq != self->cq)
		return 14;
	*got_event = 1;
	ibv_ack_cq_events(self->cq, 1);
	if (ibv_poll_cq(self->cq, 1, wc) != 1)
		return 15;
	if (ibv_poll_cq(self->cq, 1, wc + 1) != 0)
		return 16;
	return 0;
}

/* evented_write() of 3000 bytes of (i * @mul + @add): fields, bytes. */
static void write_3000_evented(struct __test_metadata *_metadata,
			       FIXTURE_DATA(ring) *self, int mul, int add)
{
	struct ibv_wc wc[2];
	int i, got = 0;

	for (i = 0; i < 3000; i++)
		self->buf[i] = (char)(i * mul + add);
	ASSERT_EQ(0, evented_write(self, 3000, wc, &got));
	/* srdma_test_post_rdma() posts wr_id 0; no length for a WRITE. */
	EXPECT_SEND_WC(wc[0], 0, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0,
		       self->qp);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 32768, 3000));
}

/*
 * The provider arms a CQ with write() too (srdma_req_notify_cq()); a
 * forked child arms its parent's CQ through ioctl: its event arrives, its
 * WRITE's completion is checked field by field (in the child), the bytes
 * in the parent; the child made no write() (syscw), and the kernel logs
 * no refusal. Runs before doorbell_after_cred_change, whose refusal is
 * logged (once per boot).
 */
TEST_F(ring, notify_in_forked_child)
{
	struct ibv_wc wc[2];
	int before, status, i, rc;
	volatile int *got;
	long w0;
	pid_t pid;

	ASSERT_EQ(0, new_evented_qp(self));
	write_3000_evented(_metadata, self, 9, 1);
	before = write_refusals_logged();
	ASSERT_LE(0, before);
	/* Shared with the child: whether it read an event. */
	got = mmap(NULL, sizeof(*got), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, got);
	*got = 0;
	for (i = 0; i < 3000; i++)
		self->buf[i] = (char)(i * 13 + 6);
	memset(self->buf + 32768, 0, 3000);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		w0 = write_syscalls();
		rc = evented_write(self, 3000, wc, got);
		if (rc)
			_exit(rc);
		/* Not one write(), refused or not: ioctl from the start. */
		if (w0 < 0)
			_exit(5);
		if (write_syscalls() != w0)
			_exit(6);
		if (!wc_is_write(&wc[0], self->qp))
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/*
	 * An event the child read counts against the CQ, whose destruction
	 * waits for every event read to be acknowledged: this process does
	 * it, before anything can end the test.
	 */
	if (*got)
		ibv_ack_cq_events(self->cq, 1);
	munmap((void *)got, sizeof(*got));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 32768, 3000));
	EXPECT_EQ(before, write_refusals_logged());
}

/*
 * After the process's credentials change, the kernel refuses its write()
 * (EACCES); the provider then rings through ioctl, and posting goes on:
 * every completion field and the bytes, before and after, and twice
 * after. Each post waits until the kernel wants a doorbell, so that each
 * rings one.
 */
TEST_F(ring, doorbell_after_cred_change)
{
	int rc;

	ASSERT_EQ(0, doorbell_wanted(self));
	write_3000_checked(_metadata, self, 3, 1);
	EXPECT_EQ(0, raw_doorbell(self->qp));
	rc = same_groups_again();
	if (rc == EPERM)
		SKIP(return, "setgroups() needs CAP_SETGID");
	ASSERT_EQ(0, rc);
	EXPECT_EQ(EACCES, raw_doorbell(self->qp));
	ASSERT_EQ(0, doorbell_wanted(self));
	write_3000_checked(_metadata, self, 5, 2);
	ASSERT_EQ(0, doorbell_wanted(self));
	write_3000_checked(_metadata, self, 7, 3);
	EXPECT_EQ(3, self->sqh->cons);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));
}

/*
 * After the credentials change, arming the CQ is the process's first
 * command: the kernel refuses its write(), the provider arms through
 * ioctl, and events go on arriving (every completion field, the bytes),
 * twice.
 */
TEST_F(ring, notify_after_cred_change)
{
	int rc;

	ASSERT_EQ(0, new_evented_qp(self));
	write_3000_evented(_metadata, self, 3, 2);
	rc = same_groups_again();
	if (rc == EPERM)
		SKIP(return, "setgroups() needs CAP_SETGID");
	ASSERT_EQ(0, rc);
	/* Refused now; a hand-made write() leaves the provider's flag be. */
	ASSERT_EQ(EACCES, raw_doorbell(self->qp));
	write_3000_evented(_metadata, self, 5, 3);
	write_3000_evented(_metadata, self, 7, 4);
	EXPECT_EQ(3, self->sqh->cons);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));
}

TEST_HARNESS_MAIN
