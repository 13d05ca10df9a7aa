// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * UD QPs and address handles on srdma0 in loopback (its own IPv4 RoCEv2
 * GID): two UD QPs, SEND and SEND with immediate, every completion field
 * on both sides, the GRH area, the Q_Key rules, a receive buffer too
 * small and a datagram over the MTU from a peer (dropped, the QP stays
 * in RTS), a message over the MTU, no receive posted, a UD datagram to an
 * RC QP, and a reply through an AH made from a receive completion.
 * Multicast: attach and detach rules, datagrams to IPv4 and IPv6 groups
 * through the IP stack's loopback, receivers' drops, a full group, and a
 * process that exits attached.
 */
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/srdma-abi.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define UD_QKEY		0x11111111U
#define GRH		40
#define RECV_OFF	32768		/* receive buffers from here */

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};

	return ibv_create_qp(pd, &init);
}

static int ud_post_send(struct ibv_qp *qp, struct ibv_mr *mr, void *at,
			uint32_t len, uint64_t wr_id, struct ibv_ah *ah,
			uint32_t qpn, uint32_t qkey, int imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)at, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(0xcafe0000U | (uint32_t)len),
	}, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* The Internet checksum of @len bytes: 0 over a header with a valid one. */
static uint16_t ud_csum(const void *p, int len)
{
	const uint16_t *w = p;
	uint32_t sum = 0;

	while (len > 1) {
		sum += *w++;
		len -= 2;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

FIXTURE(ud) {
	SRDMA_TEST_FIXTURE_OBJS;
	struct ibv_qp *b;
	struct ibv_ah *ah;
	union ibv_gid gid;
	int gidx;
};

FIXTURE_SETUP(ud)
{

	self->qp = NULL;
	self->b = NULL;
	self->ah = NULL;
	SRDMA_TEST_FIXTURE_OPEN(self);
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
	self->qp = ud_qp(self->pd, self->cq);
	ASSERT_NE(NULL, self->qp) TH_LOG("UD QP: %s", strerror(errno));
	self->b = ud_qp(self->pd, self->cq);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, srdma_test_ud_up(self->qp, UD_QKEY));
	ASSERT_EQ(0, srdma_test_ud_up(self->b, UD_QKEY));
	self->ah = srdma_test_ah(self->pd, self->gidx, &self->gid);
	ASSERT_NE(NULL, self->ah) TH_LOG("create_ah: %s", strerror(errno));
}

FIXTURE_TEARDOWN(ud)
{
	if (self->ah)
		ibv_destroy_ah(self->ah);
	if (self->b)
		ibv_destroy_qp(self->b);
	SRDMA_TEST_FIXTURE_CLOSE(self);
}

/* Every field of a send completion of @qp. */
static void ud_check_send_wc(struct __test_metadata *_metadata,
			     const struct ibv_wc *wc, struct ibv_qp *qp,
			     uint64_t wr_id)
{
	EXPECT_EQ(wr_id, wc->wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc->status);
	EXPECT_EQ(IBV_WC_SEND, wc->opcode);
	EXPECT_EQ(qp->qp_num, wc->qp_num);
	EXPECT_EQ(0, wc->wc_flags);
}

/*
 * Every field of a successful UD receive completion; @sl is the L3 header
 * type (SRDMA_UWC_SL_IPV4 or _IPV6), which srdma reports there as mlx5
 * does, for UCX's ud_verbs.
 */
static void ud_check_recv_wc_sl(struct __test_metadata *_metadata,
				const struct ibv_wc *wc, struct ibv_qp *qp,
				uint64_t wr_id, uint32_t len, uint32_t src_qp,
				int imm, int sl)
{
	EXPECT_EQ(wr_id, wc->wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc->status);
	EXPECT_EQ(IBV_WC_RECV, wc->opcode);
	EXPECT_EQ(len + GRH, wc->byte_len);
	EXPECT_EQ(qp->qp_num, wc->qp_num);
	EXPECT_EQ(src_qp, wc->src_qp);
	EXPECT_EQ(IBV_WC_GRH | (imm ? IBV_WC_WITH_IMM : 0),
		  (int)wc->wc_flags);
	if (imm)
		EXPECT_EQ(htonl(0xcafe0000U | len), wc->imm_data);
	EXPECT_EQ(0, wc->pkey_index);
	EXPECT_EQ(0, wc->slid);
	EXPECT_EQ(sl, wc->sl);
	EXPECT_EQ(0, wc->dlid_path_bits);
}

/* The same for a datagram that came over IPv4. */
#define ud_check_recv_wc(_m, wc, qp, wr_id, len, src_qp, imm) \
	ud_check_recv_wc_sl(_m, wc, qp, wr_id, len, src_qp, imm, \
			    SRDMA_UWC_SL_IPV4)

/* The GRH area of a receive of @len bytes from our own IPv4 GID. */
static void ud_check_grh4(struct __test_metadata *_metadata,
			  const uint8_t *grh, const union ibv_gid *gid,
			  uint32_t len, int imm)
{
	const struct iphdr *ip = (const struct iphdr *)(grh + 20);
	uint32_t udp = 8 + 12 + 8 + (imm ? 4 : 0) + len + (-len & 3) + 4;
	static const uint8_t zero[20];

	EXPECT_EQ(0, memcmp(grh, zero, 20));
	EXPECT_EQ(4, (int)ip->version);
	EXPECT_EQ(5, (int)ip->ihl);
	EXPECT_EQ(IPPROTO_UDP, ip->protocol);
	EXPECT_EQ(20 + udp, ntohs(ip->tot_len));
	EXPECT_EQ(64, ip->ttl);
	EXPECT_EQ(0, memcmp(&ip->saddr, gid->raw + 12, 4));
	EXPECT_EQ(0, memcmp(&ip->daddr, gid->raw + 12, 4));
	EXPECT_EQ(0, ud_csum(ip, 20));
}

TEST_F(ud, send_and_imm)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	char *rb = self->buf + RECV_OFF;
	struct ibv_wc wc[4];
	int i, n, sends = 0, recvs = 0;

	ASSERT_EQ(0, ibv_query_qp(self->b, &qa, IBV_QP_STATE | IBV_QP_QKEY,
				  &init));
	EXPECT_EQ(IBV_QPS_RTS, qa.qp_state);
	EXPECT_EQ(UD_QKEY, qa.qkey);
	EXPECT_EQ(IBV_QPT_UD, init.qp_type);

	for (i = 0; i < 2048; i++)
		self->buf[i] = (char)(i * 7 + 3);
	memset(rb, 0xee, 2 * 2048);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, 2048, 11));
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb + 2048, 2048,
					  12));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 100, 1,
				  self->ah, self->b->qp_num, UD_QKEY, 0));
	/* the full MTU (netdev MTU 1500) with immediate data */
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf + 100, 1024,
				  2, self->ah, self->b->qp_num, UD_QKEY, 1));
	n = srdma_test_poll_n(self->cq, wc, 4, 2000);
	ASSERT_EQ(4, n);
	for (i = 0; i < n; i++) {
		if (wc[i].qp_num == self->qp->qp_num) {
			ud_check_send_wc(_metadata, &wc[i], self->qp,
					 ++sends);
		} else {
			recvs++;
			ud_check_recv_wc(_metadata, &wc[i], self->b,
					 10 + recvs, recvs == 1 ? 100 : 1024,
					 self->qp->qp_num, recvs == 2);
		}
	}
	EXPECT_EQ(2, sends);
	EXPECT_EQ(2, recvs);
	EXPECT_EQ(0, memcmp(rb + GRH, self->buf, 100));
	EXPECT_EQ((char)0xee, rb[GRH + 100]);
	EXPECT_EQ(0, memcmp(rb + 2048 + GRH, self->buf + 100, 1024));
	ud_check_grh4(_metadata, (uint8_t *)rb, &self->gid, 100, 0);
	ud_check_grh4(_metadata, (uint8_t *)rb + 2048, &self->gid, 1024, 1);
}

/*
 * A datagram of @len bytes from buf + @off, sent by @from (wr_id @send_id)
 * to @to, which has a receive (wr_id @recv_id) posted: both completions,
 * every field of each.
 */
static void ud_send_checked(struct __test_metadata *_metadata,
			    FIXTURE_DATA(ud) *self, struct ibv_qp *from,
			    struct ibv_qp *to, size_t off, uint32_t len,
			    uint64_t send_id, uint64_t recv_id, int imm)
{
	struct ibv_wc wc[2];
	int i, n;

	ASSERT_EQ(0, ud_post_send(from, self->mr, self->buf + off, len,
				  send_id, self->ah, to->qp_num, UD_QKEY, imm));
	n = srdma_test_poll_n(self->cq, wc, 2, 2000);
	ASSERT_EQ(2, n);
	for (i = 0; i < n; i++) {
		if (wc[i].qp_num == from->qp_num)
			ud_check_send_wc(_metadata, &wc[i], from, send_id);
		else
			ud_check_recv_wc(_metadata, &wc[i], to, recv_id, len,
					 from->qp_num, imm);
	}
}

/*
 * A send that fails (a bad lkey: local protection error) moves a UD QP to
 * SQE, not ERR (IBTA 10.3.1): a send posted then completes as flushed,
 * while its RQ goes on receiving; SQE to RTS (as the MAD layer does for
 * QP1) makes it send again. Every field of every completion.
 */
TEST_F(ud, send_error_sqe)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS,
				 .cur_qp_state = IBV_QPS_SQE };
	char *rb = self->buf + RECV_OFF;
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->buf, .length = 64,
		.lkey = self->mr->lkey ^ 1,	/* a key of no MR */
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc[2];
	int i;

	for (i = 0; i < 512; i++)
		self->buf[i] = (char)(i * 5 + 1);
	memset(rb, 0xee, 4096);
	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, rb, 2048, 31));
	wr.wr.ud.ah = self->ah;
	wr.wr.ud.remote_qpn = self->b->qp_num;
	wr.wr.ud.remote_qkey = UD_QKEY;
	ASSERT_EQ(0, ibv_post_send(self->qp, &wr, &bad));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, wc, 1, 2000));
	EXPECT_EQ(1, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc[0].status)
		TH_LOG("status %s", ibv_wc_status_str(wc[0].status));
	EXPECT_EQ(self->qp->qp_num, wc[0].qp_num);
	ASSERT_EQ(IBV_QPS_SQE, srdma_test_qp_state(self->qp));

	/* A send now: flushed. */
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 64, 2,
				  self->ah, self->b->qp_num, UD_QKEY, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, wc, 1, 2000));
	EXPECT_EQ(2, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
	EXPECT_EQ(self->qp->qp_num, wc[0].qp_num);

	/* Its RQ still takes datagrams. */
	ud_send_checked(_metadata, self, self->b, self->qp, 100, 200, 3, 31, 1);
	EXPECT_EQ(0, memcmp(rb + GRH, self->buf + 100, 200));
	EXPECT_EQ((char)0xee, rb[GRH + 200]);
	EXPECT_EQ(IBV_QPS_SQE, srdma_test_qp_state(self->qp));

	/* Back to RTS: it sends again. */
	ASSERT_EQ(0, ibv_modify_qp(self->qp, &a,
				   IBV_QP_STATE | IBV_QP_CUR_STATE));
	ASSERT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb + 2048, 2048,
					  41));
	ud_send_checked(_metadata, self, self->qp, self->b, 300, 150, 4, 41, 0);
	EXPECT_EQ(0, memcmp(rb + 2048 + GRH, self->buf + 300, 150));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, wc));
}

/* A wrong Q_Key is dropped and counted; bit 31 means the QP's own. */
TEST_F(ud, qkey_rules)
{
	long long before = srdma_test_counter("rx_qkey_violations");
	struct ibv_wc wc[2];

	ASSERT_LE(0, before);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr,
					  self->buf + RECV_OFF, 2048, 21));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 64, 1,
				  self->ah, self->b->qp_num, 0x1234, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, wc, 2, 300));
	ud_check_send_wc(_metadata, &wc[0], self->qp, 1);
	EXPECT_EQ(before + 1, srdma_test_counter("rx_qkey_violations"));

	/* a privileged-looking Q_Key: use the sender QP's, which matches */
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 64, 2,
				  self->ah, self->b->qp_num, 0x80000000U, 0));
	ASSERT_EQ(2, srdma_test_poll_n(self->cq, wc, 2, 2000));
	ud_check_send_wc(_metadata,
			 wc[0].qp_num == self->qp->qp_num ? &wc[0] : &wc[1],
			 self->qp, 2);
	ud_check_recv_wc(_metadata,
			 wc[0].qp_num == self->b->qp_num ? &wc[0] : &wc[1],
			 self->b, 21, 64, self->qp->qp_num, 0);
	EXPECT_EQ(before + 1, srdma_test_counter("rx_qkey_violations"));
}

/*
 * GRH + payload larger than the oldest receive: the datagram is dropped
 * and counted, the receive stays posted and the QP in RTS (a remote peer
 * must not be able to stop a UD QP); the next datagram that fits takes
 * that receive, intact.
 */
TEST_F(ud, short_recv_buffer)
{
	long long dropped = srdma_test_counter("rx_ud_short_buffer");
	char *rb = self->buf + RECV_OFF;
	struct ibv_wc wc[4], *r = NULL;
	int i, n, sends = 0;

	ASSERT_LE(0, dropped);
	for (i = 0; i < 256; i++)
		self->buf[i] = (char)(i * 13 + 5);
	memset(rb, 0xee, 512);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, GRH + 100,
					  31));
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb + 256,
					  GRH + 100, 32));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 101, 1,
				  self->ah, self->b->qp_num, UD_QKEY, 0));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf + 101, 100,
				  2, self->ah, self->b->qp_num, UD_QKEY, 0));
	n = srdma_test_poll_n(self->cq, wc, 3, 2000);
	ASSERT_EQ(3, n);
	for (i = 0; i < n; i++) {
		if (wc[i].qp_num == self->qp->qp_num) {
			ud_check_send_wc(_metadata, &wc[i], self->qp,
					 ++sends);
		} else {
			ASSERT_EQ(NULL, r) TH_LOG("two receives completed");
			r = &wc[i];
		}
	}
	EXPECT_EQ(2, sends);
	ASSERT_NE(NULL, r);
	ud_check_recv_wc(_metadata, r, self->b, 31, 100, self->qp->qp_num,
			 0);
	EXPECT_EQ(GRH + 100, r->byte_len);
	EXPECT_EQ(0, memcmp(rb + GRH, self->buf + 101, 100));
	EXPECT_EQ((char)0xee, rb[GRH + 100]);
	ud_check_grh4(_metadata, (uint8_t *)rb, &self->gid, 100, 0);
	EXPECT_EQ((char)0xee, rb[256]);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->b));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));
	/* the second receive is still posted: nothing completes it */
	EXPECT_EQ(0, srdma_test_poll_n(self->cq, wc, 1, 200));
	/* after that wait: the core caches hw counters for 10 ms */
	EXPECT_EQ(dropped + 1, srdma_test_counter("rx_ud_short_buffer"));
}

/* CRC-32 (IEEE 802.3, reflected), as zlib's crc32(0, ...). */
static uint32_t ud_crc32(const uint8_t *p, size_t n)
{
	uint32_t crc = ~0U;
	int k;

	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320U & -(crc & 1));
	}
	return ~crc;
}

#define INJ_SQPN	0x4242

/* The IPv4 header checksum of the 20 bytes at @h. */
static uint16_t ud_ip_csum(const uint8_t *h)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* The MAC address of netdev @name into @mac. 0, or -1. */
static int ud_mac(const char *name, uint8_t *mac)
{
	unsigned int m[6];
	char path[64];
	FILE *f;
	int n, i;

	snprintf(path, sizeof(path), "/sys/class/net/%s/address", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4],
		   &m[5]);
	fclose(f);
	for (i = 0; i < 6; i++)
		mac[i] = m[i];
	return n == 6 ? 0 : -1;
}

/*
 * A peer that ignores the MTU: a UD SEND ONLY of @len bytes of @fill from
 * QPN INJ_SQPN to @dqpn, built here (ICRC included) and sent to our own
 * IPv4 address from 10.0.0.2 (our /24's .2) as an Ethernet frame out of
 * v1, so that it comes in through v0, the device's netdev, as from a
 * wire: srdma drops what comes in through lo (any local socket could
 * send it). 0, or -1.
 */
static int ud_inject(const union ibv_gid *gid, uint32_t dqpn, uint32_t qkey,
		     uint32_t len, uint8_t fill)
{
	uint32_t pad = -len & 3, ulen = 8 + 12 + 8 + len + pad + 4;
	uint32_t tot = 20 + ulen, crc, v;
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_IP),
		.sll_halen = 6,
	};
	uint8_t frame[14 + 2048], m[8 + 2048], *pkt = frame + 14;
	uint16_t csum;
	int fd, ret;

	if (tot > sizeof(frame) - 14)
		return -1;
	memset(frame, 0, 14 + tot);
	if (ud_mac("v0", frame) || ud_mac("v1", frame + 6))
		return -1;
	frame[12] = ETH_P_IP >> 8;
	frame[13] = ETH_P_IP & 0xff;
	memcpy(to.sll_addr, frame, 6);
	to.sll_ifindex = if_nametoindex("v1");
	if (!to.sll_ifindex)
		return -1;
	pkt[0] = 0x45;				/* IPv4 */
	pkt[2] = tot >> 8;
	pkt[3] = tot;
	pkt[4] = 0x47;				/* id, non-zero: ours */
	pkt[5] = 0x91;
	pkt[6] = 0x40;				/* DF */
	pkt[8] = 64;
	pkt[9] = IPPROTO_UDP;
	memcpy(pkt + 12, gid->raw + 12, 3);
	pkt[15] = 2;
	memcpy(pkt + 16, gid->raw + 12, 4);
	pkt[20] = 0xc1;				/* UDP source port */
	pkt[21] = 0x23;
	pkt[22] = 4791 >> 8;
	pkt[23] = 4791 & 0xff;
	pkt[24] = ulen >> 8;
	pkt[25] = ulen;
	pkt[28] = 0x64;				/* BTH: UD SEND ONLY */
	pkt[29] = pad << 4;
	pkt[30] = pkt[31] = 0xff;		/* default P_Key */
	v = htonl(dqpn & 0xffffff);
	memcpy(pkt + 32, &v, 4);
	v = htonl(qkey);			/* DETH */
	memcpy(pkt + 40, &v, 4);
	v = htonl(INJ_SQPN);
	memcpy(pkt + 44, &v, 4);
	memset(pkt + 48, fill, len);

	/* ICRC: masked IP TOS, TTL, checksum, UDP checksum, BTH resv8a. */
	memset(m, 0xff, 8);
	memcpy(m + 8, pkt, tot - 4);
	m[8 + 1] = m[8 + 8] = m[8 + 10] = m[8 + 11] = 0xff;
	m[8 + 26] = m[8 + 27] = 0xff;
	m[8 + 32] = 0xff;
	crc = ud_crc32(m, 8 + tot - 4);
	pkt[tot - 4] = crc;
	pkt[tot - 3] = crc >> 8;
	pkt[tot - 2] = crc >> 16;
	pkt[tot - 1] = crc >> 24;

	csum = ud_ip_csum(pkt);
	pkt[10] = csum >> 8;
	pkt[11] = csum;
	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	if (fd < 0)
		return -1;
	ret = sendto(fd, frame, 14 + tot, 0, (struct sockaddr *)&to,
		     sizeof(to));
	close(fd);
	return ret == (int)(14 + tot) ? 0 : -1;
}

/*
 * A datagram over the port's active MTU (1024 at netdev MTU 1500), which
 * srdma itself never sends, is dropped and counted even though the
 * receive could hold it; one at the MTU from the same peer arrives.
 */
TEST_F(ud, rx_over_mtu)
{
	long long over = srdma_test_counter("rx_ud_over_mtu");
	uint8_t *rb = (uint8_t *)self->buf + RECV_OFF;
	struct ibv_wc wc[2];
	int i;

	ASSERT_LE(0, over);
	memset(rb, 0, 4096);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, 4096, 71));
	ASSERT_EQ(0, ud_inject(&self->gid, self->b->qp_num, UD_QKEY, 1100,
			       0x5a)) TH_LOG("raw socket: %s", strerror(errno));
	ASSERT_EQ(0, ud_inject(&self->gid, self->b->qp_num, UD_QKEY, 1024,
			       0xa5));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, wc, 2, 2000));
	ud_check_recv_wc(_metadata, &wc[0], self->b, 71, 1024, INJ_SQPN, 0);
	for (i = 0; i < 1024; i++)
		if (rb[GRH + i] != 0xa5)
			break;
	EXPECT_EQ(1024, i);
	EXPECT_EQ(0, rb[GRH + 1024]);
	EXPECT_EQ(over + 1, srdma_test_counter("rx_ud_over_mtu"));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->b));
}

/*
 * Over the MTU: nothing is sent and the send succeeds (IBTA C10-93.1.1);
 * with no receive posted a datagram is dropped (UD has no RNR).
 */
TEST_F(ud, too_long_and_no_receive)
{
	long long too_long = srdma_test_counter("tx_ud_too_long");
	long long no_recv = srdma_test_counter("rx_ud_no_receive");
	struct ibv_wc wc[2];

	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 1025, 1,
				  self->ah, self->b->qp_num, UD_QKEY, 0));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 8, 2,
				  self->ah, self->b->qp_num, UD_QKEY, 0));
	ASSERT_EQ(2, srdma_test_poll_n(self->cq, wc, 2, 2000));
	ud_check_send_wc(_metadata, &wc[0], self->qp, 1);
	ud_check_send_wc(_metadata, &wc[1], self->qp, 2);
	usleep(200000);
	EXPECT_EQ(too_long + 1, srdma_test_counter("tx_ud_too_long"));
	EXPECT_EQ(no_recv + 1, srdma_test_counter("rx_ud_no_receive"));
	/* neither arrives later */
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr,
					  self->buf + RECV_OFF, 2048, 41));
	EXPECT_EQ(0, srdma_test_poll_n(self->cq, wc, 1, 300));
}

/* A UD datagram to an RC QP is dropped and counted. */
TEST_F(ud, to_rc_qp)
{
	long long bad = srdma_test_counter("rx_bad_header");
	struct ibv_qp *rc = srdma_test_rc_qp(self->pd, self->cq, 4, 4, 1);
	struct ibv_wc wc[2];

	ASSERT_NE(NULL, rc);
	ASSERT_EQ(0, srdma_test_connect_self(rc, self->gidx, &self->gid));
	ASSERT_EQ(0, srdma_test_post_recv(rc, self->mr, self->buf + RECV_OFF,
					  2048, 51));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 8, 1,
				  self->ah, rc->qp_num, UD_QKEY, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, wc, 2, 300));
	ud_check_send_wc(_metadata, &wc[0], self->qp, 1);
	EXPECT_EQ(bad + 1, srdma_test_counter("rx_bad_header"));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(rc));
	ibv_destroy_qp(rc);
}

/* Reply through an AH built from the receive completion and its GRH. */
TEST_F(ud, reply_from_wc)
{
	char *rb = self->buf + RECV_OFF;
	struct ibv_wc wc[2], got;
	struct ibv_ah *reply;
	int i;

	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, 2048, 61));
	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, rb + 2048, 2048,
					  62));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 32, 1,
				  self->ah, self->b->qp_num, UD_QKEY, 1));
	ASSERT_EQ(2, srdma_test_poll_n(self->cq, wc, 2, 2000));
	got = wc[0].qp_num == self->b->qp_num ? wc[0] : wc[1];
	ud_check_recv_wc(_metadata, &got, self->b, 61, 32, self->qp->qp_num,
			 1);

	reply = ibv_create_ah_from_wc(self->pd, &got, (struct ibv_grh *)rb, 1);
	ASSERT_NE(NULL, reply) TH_LOG("create_ah_from_wc: %s",
				      strerror(errno));
	for (i = 0; i < 16; i++)
		self->buf[4096 + i] = (char)(0xa0 + i);
	ASSERT_EQ(0, ud_post_send(self->b, self->mr, self->buf + 4096, 16, 7,
				  reply, got.src_qp, UD_QKEY, 0));
	ASSERT_EQ(2, srdma_test_poll_n(self->cq, wc, 2, 2000));
	got = wc[0].qp_num == self->qp->qp_num ? wc[0] : wc[1];
	ud_check_recv_wc(_metadata, &got, self->qp, 62, 16, self->b->qp_num,
			 0);
	ud_check_send_wc(_metadata, got.wr_id == wc[0].wr_id ? &wc[1] : &wc[0],
			 self->b, 7);
	EXPECT_EQ(0, memcmp(rb + 2048 + GRH, self->buf + 4096, 16));
	EXPECT_EQ(0, ibv_destroy_ah(reply));
}

/* A send work request of @len bytes at @at, alone, for @ah and @qpn. */
static void ud_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		  struct ibv_mr *mr, void *at, uint32_t len, uint64_t wr_id,
		  struct ibv_ah *ah, uint32_t qpn)
{
	sge->addr = (uintptr_t)at;
	sge->length = len;
	sge->lkey = mr->lkey;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = qpn;
	wr->wr.ud.remote_qkey = UD_QKEY;
}

/*
 * The provider refuses a UD work request the kernel would refuse in the
 * ring (and stop the QP for): a remote QPN over 24 bits, an AH of
 * another PD. EINVAL, bad_wr at it, the work requests before it posted,
 * the QP in RTS and sending as before.
 */
TEST_F(ud, provider_refuses_bad_wr)
{
	struct ibv_send_wr wr[2], *bad = NULL;
	char *rb = self->buf + RECV_OFF;
	struct ibv_sge sge[2];
	struct ibv_wc wc[4];
	struct ibv_ah *ah2;
	struct ibv_pd *pd2;
	int i, n, sends = 0, recvs = 0;

	pd2 = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, pd2);
	ah2 = srdma_test_ah(pd2, self->gidx, &self->gid);
	ASSERT_NE(NULL, ah2);
	for (i = 0; i < 64; i++)
		self->buf[i] = (char)(0x30 + i);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, 2048, 81));
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb + 2048, 2048,
					  82));

	/* a good one, then a QPN over 24 bits */
	ud_wr(&wr[0], &sge[0], self->mr, self->buf, 16, 1, self->ah,
	      self->b->qp_num);
	ud_wr(&wr[1], &sge[1], self->mr, self->buf, 16, 2, self->ah,
	      0x1000000 | self->b->qp_num);
	wr[0].next = &wr[1];
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, wr, &bad));
	EXPECT_EQ(&wr[1], bad);
	/* an AH of another PD */
	ud_wr(&wr[0], &sge[0], self->mr, self->buf, 16, 3, ah2,
	      self->b->qp_num);
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(self->qp, wr, &bad));
	EXPECT_EQ(&wr[0], bad);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));

	/* the QP still sends: the good one and one more arrive */
	ud_wr(&wr[0], &sge[0], self->mr, self->buf + 16, 32, 4, self->ah,
	      self->b->qp_num);
	ASSERT_EQ(0, ibv_post_send(self->qp, wr, &bad));
	n = srdma_test_poll_n(self->cq, wc, 4, 2000);
	ASSERT_EQ(4, n);
	for (i = 0; i < n; i++) {
		if (wc[i].qp_num == self->qp->qp_num) {
			ud_check_send_wc(_metadata, &wc[i], self->qp,
					 sends++ ? 4 : 1);
		} else {
			ud_check_recv_wc(_metadata, &wc[i], self->b,
					 81 + recvs, recvs ? 32 : 16,
					 self->qp->qp_num, 0);
			recvs++;
		}
	}
	EXPECT_EQ(2, sends);
	EXPECT_EQ(2, recvs);
	EXPECT_EQ(0, memcmp(rb + GRH, self->buf, 16));
	EXPECT_EQ(0, memcmp(rb + 2048 + GRH, self->buf + 16, 32));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->qp));
	EXPECT_EQ(0, ibv_destroy_ah(ah2));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/*
 * create_ah through the write() command, as libibverbs sends it, with
 * @inlen bytes of driver input @in after the core's. 0 and the AH's
 * handle in *@handle, or -errno.
 */
static int ud_raw_create_ah(struct ibv_pd *pd, const union ibv_gid *gid,
			    int gidx, const void *in, size_t inlen,
			    uint32_t *handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_ah cmd;
		uint8_t drv[16];
	} c;
	uint32_t resp[16];

	if (inlen > sizeof(c.drv) || inlen % 4)
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	memset(resp, 0, sizeof(resp));
	c.hdr.command = IB_USER_VERBS_CMD_CREATE_AH;
	c.hdr.in_words = (sizeof(c.hdr) + sizeof(c.cmd) + inlen) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.cmd.response = (uintptr_t)resp;
	c.cmd.pd_handle = pd->handle;
	c.cmd.attr.is_global = 1;
	memcpy(c.cmd.attr.grh.dgid, gid->raw, 16);
	c.cmd.attr.grh.sgid_index = gidx;
	c.cmd.attr.grh.hop_limit = 64;
	c.cmd.attr.port_num = 1;
	memcpy(c.drv, in, inlen);
	if (write(pd->context->cmd_fd, &c, c.hdr.in_words * 4) < 0)
		return -errno;
	*handle = resp[0];
	return 0;
}

static int ud_raw_destroy_ah(struct ibv_context *ctx, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_ah cmd;
	} c = {
		.hdr = { .command = IB_USER_VERBS_CMD_DESTROY_AH,
			 .in_words = sizeof(c) / 4 },
		.cmd = { .ah_handle = handle },
	};

	return write(ctx->cmd_fd, &c, sizeof(c)) < 0 ? -errno : 0;
}

/* create_ah takes driver input only if it is all zeros. */
TEST_F(ud, create_ah_input)
{
	uint8_t in[8] = {};
	uint32_t h;
	int ret;

	ASSERT_EQ(0, ud_raw_create_ah(self->pd, &self->gid, self->gidx, in,
				      0, &h));
	EXPECT_EQ(0, ud_raw_destroy_ah(self->ctx, h));
	ASSERT_EQ(0, ud_raw_create_ah(self->pd, &self->gid, self->gidx, in,
				      sizeof(in), &h));
	EXPECT_EQ(0, ud_raw_destroy_ah(self->ctx, h));
	in[5] = 1;
	ret = ud_raw_create_ah(self->pd, &self->gid, self->gidx, in,
			       sizeof(in), &h);
	EXPECT_EQ(-EINVAL, ret);
	if (!ret)
		ud_raw_destroy_ah(self->ctx, h);
}

#define MANY		1000
#define MANY_SLOT	256		/* bytes per send and per receive */

/* The payload of datagram @i: its number, then a pattern; 4-203 bytes. */
static uint32_t many_len(uint32_t i)
{
	return 4 + i % 200;
}

static uint8_t many_byte(uint32_t i, uint32_t j)
{
	return (uint8_t)(i * 7 + j * 13 + 1);
}

/* Post MANY sends from @buf to @dst in one ibv_post_send: one doorbell. */
static int many_post(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf,
		     struct ibv_ah *ah, uint32_t dst)
{
	struct ibv_send_wr *wr = calloc(MANY, sizeof(*wr)), *bad;
	struct ibv_sge *sge = calloc(MANY, sizeof(*sge));
	uint32_t i, j;
	int ret = -1;

	if (!wr || !sge)
		goto out;
	for (i = 0; i < MANY; i++) {
		uint8_t *p = buf + i * MANY_SLOT;

		memcpy(p, &i, 4);
		for (j = 4; j < many_len(i); j++)
			p[j] = many_byte(i, j);
		ud_wr(&wr[i], &sge[i], mr, p, many_len(i), i, ah, dst);
		wr[i].next = i + 1 < MANY ? &wr[i + 1] : NULL;
	}
	ret = ibv_post_send(qp, wr, &bad);
out:
	free(wr);
	free(sge);
	return ret;
}

/* Datagram @wc into receive slot @rb: the one it names, intact. -1 if not. */
static int many_check(const struct ibv_wc *wc, const uint8_t *rb,
		      uint32_t src_qp)
{
	const uint8_t *p = rb + wc->wr_id * MANY_SLOT + GRH;
	uint32_t i, j;

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV ||
	    wc->src_qp != src_qp || wc->wc_flags != IBV_WC_GRH)
		return -1;
	memcpy(&i, p, 4);
	if (i >= MANY || wc->byte_len != GRH + many_len(i))
		return -1;
	for (j = 4; j < many_len(i); j++)
		if (p[j] != many_byte(i, j))
			return -1;
	return i;
}

/*
 * A thousand sends behind one doorbell: one run of the requester sends
 * a budget of them, the rest go out without another doorbell. Every
 * send completes, in order, and every datagram arrives once, intact.
 */
TEST_F(ud, many_in_one_doorbell)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = MANY, .max_recv_wr = MANY,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	uint32_t sends = 0, recvs = 0, i, k;
	unsigned long long bytes = 0, want = 0;
	struct ibv_qp *s, *r;
	struct ibv_wc wc[64];
	uint8_t *buf, *seen;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	int n, idx;

	buf = calloc(2, MANY * MANY_SLOT);
	seen = calloc(MANY, 1);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, seen);
	mr = ibv_reg_mr(self->pd, buf, 2 * MANY * MANY_SLOT,
			IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	cq = ibv_create_cq(self->ctx, 2 * MANY + 16, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	init.send_cq = init.recv_cq = cq;
	s = ibv_create_qp(self->pd, &init);
	ASSERT_NE(NULL, s);
	r = ibv_create_qp(self->pd, &init);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, srdma_test_ud_up(s, UD_QKEY));
	ASSERT_EQ(0, srdma_test_ud_up(r, UD_QKEY));
	for (i = 0; i < MANY; i++)
		ASSERT_EQ(0, srdma_test_post_recv(r, mr,
						  buf + (MANY + i) * MANY_SLOT,
						  MANY_SLOT, MANY + i));
	ASSERT_EQ(0, many_post(s, mr, buf, self->ah, r->qp_num));

	for (k = 0; k < 200 && sends + recvs < 2 * MANY; k++) {
		n = srdma_test_poll_n(cq, wc, 64, 100);
		ASSERT_LE(0, n);
		for (i = 0; i < (uint32_t)n; i++) {
			if (wc[i].qp_num == s->qp_num) {
				ud_check_send_wc(_metadata, &wc[i], s, sends);
				sends++;
				continue;
			}
			wc[i].wr_id -= MANY;
			idx = many_check(&wc[i], buf + MANY * MANY_SLOT,
					 s->qp_num);
			ASSERT_LE(0, idx) TH_LOG("receive %llu bad",
						 (unsigned long long)wc[i].wr_id);
			ASSERT_EQ(0, seen[idx]) TH_LOG("%d twice", idx);
			seen[idx] = 1;
			bytes += wc[i].byte_len - GRH;
			recvs++;
		}
	}
	for (i = 0; i < MANY; i++)
		want += many_len(i);
	EXPECT_EQ(MANY, sends);
	EXPECT_EQ(MANY, recvs);
	EXPECT_EQ(want, bytes);
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(s));
	EXPECT_EQ(0, ibv_destroy_qp(s));
	EXPECT_EQ(0, ibv_destroy_qp(r));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	free(seen);
	free(buf);
}

/* Multicast: the multicast QPN, and what the limits are. */
#define MC_QPN		0xffffffU
#define MC_MAX_QP	32

/* Group @addr (dotted IPv4 or IPv6) as a GID, IPv4 mapped. -1 if bad. */
static int mc_gid(const char *addr, union ibv_gid *g)
{
	struct in_addr a4;

	memset(g, 0, sizeof(*g));
	if (inet_pton(AF_INET, addr, &a4) == 1) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(g->raw + 12, &a4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, addr, g->raw) == 1 ? 0 : -1;
}

/* The netdev of the device under test, into @buf. -1 if unknown. */
static int mc_netdev(char *buf, size_t len)
{
	char path[256];
	FILE *f;
	int ret = -1;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0",
		 srdma_test_devname());
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, len, f)) {
		buf[strcspn(buf, "\n")] = 0;
		ret = buf[0] ? 0 : -1;
	}
	fclose(f);
	return ret;
}

/* Has that netdev joined group @addr at the IP level? 1, 0, or -1. */
static int mc_joined(const char *addr)
{
	char ndev[64], cmd[128], line[256], kind[16], a[64];
	int found = 0;
	FILE *f;

	if (mc_netdev(ndev, sizeof(ndev)))
		return -1;
	snprintf(cmd, sizeof(cmd), "ip maddr show dev %s", ndev);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " %15s %63s", kind, a) == 2 &&
		    (!strcmp(kind, "inet") || !strcmp(kind, "inet6")) &&
		    !strcmp(a, addr))
			found = 1;
	return pclose(f) ? -1 : found;
}

/* mc_joined(@addr) == @want within about 2 s. */
static int mc_wait_joined(const char *addr, int want)
{
	int i;

	for (i = 0; i < 200; i++) {
		if (mc_joined(addr) == want)
			return 0;
		usleep(10000);
	}
	return -1;
}

/* query_device's multicast limits, as enforced below. */
TEST_F(ud, mcast_caps)
{
	struct ibv_device_attr da;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	EXPECT_EQ(1024, da.max_mcast_grp);
	EXPECT_EQ(MC_MAX_QP, da.max_mcast_qp_attach);
	EXPECT_EQ(8192, da.max_total_mcast_qp_attach);
}

/*
 * Which attaches and detaches fail, and how; the netdev is in the group
 * while a QP is; an attached QP cannot be destroyed.
 */
TEST_F(ud, mcast_attach_rules)
{
	union ibv_gid g, bc, uni = self->gid;
	struct ibv_qp *rc;

	ASSERT_EQ(0, mc_gid("239.1.2.3", &g));
	EXPECT_EQ(0, mc_joined("239.1.2.3"));
	EXPECT_EQ(EINVAL, ibv_attach_mcast(self->b, &uni, 0));
	rc = srdma_test_rc_qp(self->pd, self->cq, 4, 4, 1);
	ASSERT_NE(NULL, rc);
	EXPECT_EQ(EINVAL, ibv_attach_mcast(rc, &g, 0));
	/* nor may an RC QP's peer be a group */
	ASSERT_EQ(0, srdma_test_qp_init(rc));
	EXPECT_EQ(EINVAL, srdma_test_qp_rtr(rc, self->gidx, &g, IBV_MTU_1024));
	/* nor an IPv4 broadcast address */
	ASSERT_EQ(0, mc_gid("255.255.255.255", &bc));
	EXPECT_EQ(EINVAL, srdma_test_qp_rtr(rc, self->gidx, &bc, IBV_MTU_1024));
	EXPECT_EQ(0, ibv_destroy_qp(rc));
	EXPECT_EQ(EINVAL, ibv_detach_mcast(self->b, &g, 0));

	ASSERT_EQ(0, ibv_attach_mcast(self->b, &g, 0));
	EXPECT_EQ(1, mc_joined("239.1.2.3"));
	/* again: uverbs answers 0 and keeps one attachment */
	EXPECT_EQ(0, ibv_attach_mcast(self->b, &g, 0));
	ASSERT_EQ(0, ibv_attach_mcast(self->qp, &g, 0));
	EXPECT_EQ(EBUSY, ibv_destroy_qp(self->b));
	EXPECT_EQ(0, ibv_detach_mcast(self->b, &g, 0));
	EXPECT_EQ(EINVAL, ibv_detach_mcast(self->b, &g, 0));
	/* self->qp is still in it */
	EXPECT_EQ(1, mc_joined("239.1.2.3"));
	EXPECT_EQ(0, ibv_detach_mcast(self->qp, &g, 0));
	EXPECT_EQ(0, mc_joined("239.1.2.3"));
}

/*
 * In a child in a new network namespace: attach @qp to @g with or without
 * CAP_NET_RAW (dropped from the effective set) and detach again. The exit
 * status is the attach's errno.
 */
static int mc_attach_elsewhere(struct ibv_qp *qp, union ibv_gid *g,
			       bool net_raw)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];
	int status, err;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (unshare(CLONE_NEWNET) ||
		    syscall(SYS_capget, &hdr, data))
			_exit(100);
		if (!net_raw)
			data[0].effective &= ~(1u << CAP_NET_RAW);
		if (syscall(SYS_capset, &hdr, data))
			_exit(101);
		err = ibv_attach_mcast(qp, g, 0);
		if (!err && ibv_detach_mcast(qp, g, 0))
			_exit(102);
		_exit(err);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * A process outside the netdev's namespace may attach (and so make the
 * netdev join a group) only with CAP_NET_RAW there.
 */
TEST_F(ud, mcast_other_netns)
{
	union ibv_gid g;

	ASSERT_EQ(0, mc_gid("239.1.2.4", &g));
	EXPECT_EQ(EPERM, mc_attach_elsewhere(self->b, &g, false));
	EXPECT_EQ(0, mc_joined("239.1.2.4"));
	EXPECT_EQ(0, mc_attach_elsewhere(self->b, &g, true));
	EXPECT_EQ(0, mc_wait_joined("239.1.2.4", 0));
	/* here, in the netdev's namespace, as before */
	ASSERT_EQ(0, ibv_attach_mcast(self->b, &g, 0));
	EXPECT_EQ(1, mc_joined("239.1.2.4"));
	EXPECT_EQ(0, ibv_detach_mcast(self->b, &g, 0));
}

/* Receive completion of a multicast datagram: the one for @qp in @wc. */
static struct ibv_wc *mc_find_wc(struct ibv_wc *wc, int n, struct ibv_qp *qp)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].qp_num == qp->qp_num)
			return &wc[i];
	return NULL;
}

/*
 * A datagram to an IPv4 group reaches every attached QP of this host
 * through the IP stack's multicast loopback, intact, with the group as
 * the GRH's destination; not the unattached sender; no longer a QP that
 * detached.
 */
TEST_F(ud, mcast_ipv4_loopback)
{
	uint8_t *rb = (uint8_t *)self->buf + RECV_OFF;
	const struct iphdr *ip;
	struct ibv_wc wc[8], *w;
	struct in_addr grp;
	union ibv_gid g;
	struct ibv_qp *c;
	struct ibv_ah *ah;
	int i;

	ASSERT_EQ(0, mc_gid("239.1.2.4", &g));
	inet_pton(AF_INET, "239.1.2.4", &grp);
	c = ud_qp(self->pd, self->cq);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, srdma_test_ud_up(c, UD_QKEY));
	ASSERT_EQ(0, ibv_attach_mcast(self->b, &g, 0));
	ASSERT_EQ(0, ibv_attach_mcast(c, &g, 0));
	ah = srdma_test_ah(self->pd, self->gidx, &g);
	ASSERT_NE(NULL, ah) TH_LOG("create_ah: %s", strerror(errno));
	for (i = 0; i < 300; i++)
		self->buf[i] = (char)(i * 11 + 7);
	memset(rb, 0xee, 3 * 2048);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, 2048, 91));
	ASSERT_EQ(0, srdma_test_post_recv(c, self->mr, rb + 2048, 2048, 92));
	ASSERT_EQ(0, srdma_test_post_recv(self->qp, self->mr, rb + 4096, 2048,
					  93));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 300, 1, ah,
				  MC_QPN, UD_QKEY, 1));
	ASSERT_EQ(3, srdma_test_poll_n(self->cq, wc, 3, 2000));
	w = mc_find_wc(wc, 3, self->qp);
	ASSERT_NE(NULL, w);
	ud_check_send_wc(_metadata, w, self->qp, 1);
	w = mc_find_wc(wc, 3, self->b);
	ASSERT_NE(NULL, w);
	ud_check_recv_wc(_metadata, w, self->b, 91, 300, self->qp->qp_num, 1);
	w = mc_find_wc(wc, 3, c);
	ASSERT_NE(NULL, w);
	ud_check_recv_wc(_metadata, w, c, 92, 300, self->qp->qp_num, 1);
	EXPECT_EQ(0, memcmp(rb + GRH, self->buf, 300));
	EXPECT_EQ(0, memcmp(rb + 2048 + GRH, self->buf, 300));
	EXPECT_EQ(0xee, rb[GRH + 300]);
	ip = (const struct iphdr *)(rb + 20);
	EXPECT_EQ(4, (int)ip->version);
	EXPECT_EQ(64, ip->ttl);
	EXPECT_EQ(0, memcmp(&ip->saddr, self->gid.raw + 12, 4));
	EXPECT_EQ(grp.s_addr, ip->daddr);
	EXPECT_EQ(0, ud_csum(ip, 20));
	/* the sender is not attached: its receive stays posted */
	EXPECT_EQ(0, srdma_test_poll_n(self->cq, wc, 1, 300));

	/* c leaves: only b receives */
	ASSERT_EQ(0, ibv_detach_mcast(c, &g, 0));
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, 2048, 94));
	ASSERT_EQ(0, srdma_test_post_recv(c, self->mr, rb + 2048, 2048, 95));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 16, 2, ah,
				  MC_QPN, UD_QKEY, 0));
	ASSERT_EQ(2, srdma_test_poll_n(self->cq, wc, 3, 2000));
	w = mc_find_wc(wc, 2, self->b);
	ASSERT_NE(NULL, w);
	ud_check_recv_wc(_metadata, w, self->b, 94, 16, self->qp->qp_num, 0);
	EXPECT_EQ(0, srdma_test_poll_n(self->cq, wc, 1, 300));

	/* b leaves too: the netdev leaves the group, nobody receives */
	ASSERT_EQ(0, ibv_detach_mcast(self->b, &g, 0));
	EXPECT_EQ(0, mc_joined("239.1.2.4"));
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, 2048, 96));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 16, 3, ah,
				  MC_QPN, UD_QKEY, 0));
	ASSERT_EQ(1, srdma_test_poll_n(self->cq, wc, 2, 500));
	ud_check_send_wc(_metadata, &wc[0], self->qp, 3);
	EXPECT_EQ(0, ibv_destroy_ah(ah));
	EXPECT_EQ(0, ibv_destroy_qp(c));
}

/*
 * What receivers drop, and count: a wrong Q_Key (each attached QP), a
 * group's datagram to another QPN, the multicast QPN to a unicast
 * address or to a group the host joined but no QP (224.0.0.1). The QP
 * stays in RTS and takes the next good datagram.
 */
TEST_F(ud, mcast_drops)
{
	long long qkey = srdma_test_counter("rx_qkey_violations");
	long long hdr = srdma_test_counter("rx_bad_header");
	long long nogrp = srdma_test_counter("rx_mcast_no_group");
	struct ibv_ah *ah, *all;
	struct ibv_wc wc[4];
	union ibv_gid g, a;

	ASSERT_LE(0, nogrp);
	ASSERT_EQ(0, mc_gid("239.1.2.5", &g));
	ASSERT_EQ(0, mc_gid("224.0.0.1", &a));
	ASSERT_EQ(0, ibv_attach_mcast(self->b, &g, 0));
	ah = srdma_test_ah(self->pd, self->gidx, &g);
	all = srdma_test_ah(self->pd, self->gidx, &a);
	ASSERT_NE(NULL, ah);
	ASSERT_NE(NULL, all);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr,
					  self->buf + RECV_OFF, 2048, 97));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 8, 1, ah,
				  MC_QPN, 0x1234, 0));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 8, 2, ah,
				  self->b->qp_num, UD_QKEY, 0));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 8, 3, all,
				  MC_QPN, UD_QKEY, 0));
	ASSERT_EQ(0, ud_inject(&self->gid, MC_QPN, UD_QKEY, 8, 0x11));
	ASSERT_EQ(3, srdma_test_poll_n(self->cq, wc, 4, 2000));
	EXPECT_EQ(0, srdma_test_poll_n(self->cq, wc, 1, 300));
	EXPECT_EQ(qkey + 1, srdma_test_counter("rx_qkey_violations"));
	EXPECT_EQ(hdr + 1, srdma_test_counter("rx_bad_header"));
	EXPECT_EQ(nogrp + 2, srdma_test_counter("rx_mcast_no_group"));
	EXPECT_EQ(IBV_QPS_RTS, srdma_test_qp_state(self->b));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 8, 4, ah,
				  MC_QPN, UD_QKEY, 0));
	ASSERT_EQ(2, srdma_test_poll_n(self->cq, wc, 2, 2000));
	EXPECT_NE(NULL, mc_find_wc(wc, 2, self->b));
	EXPECT_EQ(0, ibv_detach_mcast(self->b, &g, 0));
	EXPECT_EQ(0, ibv_destroy_ah(all));
	EXPECT_EQ(0, ibv_destroy_ah(ah));
}

/*
 * A group holds max_mcast_qp_attach QPs (ENOMEM for one more), and one
 * datagram reaches each of them.
 */
TEST_F(ud, mcast_group_full)
{
	struct ibv_qp *q[MC_MAX_QP + 1];
	struct ibv_wc wc[MC_MAX_QP + 1];
	int i, n, got = 0;
	struct ibv_ah *ah;
	struct ibv_cq *cq;
	union ibv_gid g;

	ASSERT_EQ(0, mc_gid("239.1.2.6", &g));
	cq = ibv_create_cq(self->ctx, 2 * MC_MAX_QP + 8, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	for (i = 0; i <= MC_MAX_QP; i++) {
		q[i] = ud_qp(self->pd, cq);
		ASSERT_NE(NULL, q[i]);
		ASSERT_EQ(0, srdma_test_ud_up(q[i], UD_QKEY));
	}
	for (i = 0; i < MC_MAX_QP; i++) {
		ASSERT_EQ(0, ibv_attach_mcast(q[i], &g, 0));
		ASSERT_EQ(0, srdma_test_post_recv(q[i], self->mr,
						  self->buf + RECV_OFF +
						  i * 256, 256, 100 + i));
	}
	EXPECT_EQ(ENOMEM, ibv_attach_mcast(q[MC_MAX_QP], &g, 0));
	ah = srdma_test_ah(self->pd, self->gidx, &g);
	ASSERT_NE(NULL, ah);
	for (i = 0; i < 64; i++)
		self->buf[i] = (char)(0x40 + i);
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 64, 1, ah,
				  MC_QPN, UD_QKEY, 0));
	for (i = 0; i < 20 && got < MC_MAX_QP; i++) {
		n = srdma_test_poll_n(cq, wc, MC_MAX_QP - got, 100);
		ASSERT_LE(0, n);
		got += n;
	}
	EXPECT_EQ(MC_MAX_QP, got);
	EXPECT_EQ(1, srdma_test_poll_n(self->cq, wc, 1, 2000));
	for (i = 0; i < MC_MAX_QP; i++)
		EXPECT_EQ(0, memcmp(self->buf + RECV_OFF + i * 256 + GRH,
				    self->buf, 64));
	for (i = 0; i < MC_MAX_QP; i++)
		EXPECT_EQ(0, ibv_detach_mcast(q[i], &g, 0));
	EXPECT_EQ(0, mc_joined("239.1.2.6"));
	for (i = 0; i <= MC_MAX_QP; i++)
		EXPECT_EQ(0, ibv_destroy_qp(q[i]));
	EXPECT_EQ(0, ibv_destroy_ah(ah));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/*
 * A process that exits with an attached QP leaves nothing behind: the
 * core detaches the QP before it destroys it, and the netdev leaves the
 * group with the last QP.
 */
TEST_F(ud, mcast_exit_detaches)
{
	int ready[2], status;
	union ibv_gid g;
	pid_t pid;
	char c;

	ASSERT_EQ(0, mc_gid("239.1.2.7", &g));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct ibv_context *ctx = srdma_test_open();
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL,
							0) : NULL;
		struct ibv_qp *qp = cq ? ud_qp(pd, cq) : NULL;

		c = qp && !ibv_attach_mcast(qp, &g, 0) ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		alarm(30);	/* should the parent fail before its kill */
		pause();
		_exit(0);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ('y', c);
	EXPECT_EQ(1, mc_joined("239.1.2.7"));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, mc_wait_joined("239.1.2.7", 0));
	close(ready[0]);
}

/* Our RoCEv2 GID of IPv6 address @addr, waiting up to 10 s; -1 if none. */
static int mc_gid_index(struct ibv_context *ctx, const union ibv_gid *want)
{
	struct ibv_gid_entry ent;
	int i, t;

	for (t = 0; t < 100; t++) {
		for (i = 0; i < 128; i++)
			if (!ibv_query_gid_ex(ctx, 1, i, &ent, 0) &&
			    ent.gid_type == IBV_GID_TYPE_ROCE_V2 &&
			    !memcmp(ent.gid.raw, want->raw, 16))
				return i;
		usleep(100000);
	}
	return -1;
}

/* The same over IPv6, which rdma_cm cannot do: verbs only. */
TEST_F(ud, mcast_ipv6_loopback)
{
	uint8_t *rb = (uint8_t *)self->buf + RECV_OFF;
	const struct ip6_hdr *ip6;
	char ndev[64], cmd[160];
	union ibv_gid g, src;
	struct ibv_wc wc[2], *w;
	struct ibv_ah *ah;
	int gidx;

	ASSERT_EQ(0, mc_netdev(ndev, sizeof(ndev)));
	snprintf(cmd, sizeof(cmd),
		 "ip -6 addr add fd00::5/64 dev %s nodad", ndev);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(0, mc_gid("fd00::5", &src));
	gidx = mc_gid_index(self->ctx, &src);
	ASSERT_LE(0, gidx) TH_LOG("no RoCEv2 GID for fd00::5");
	ASSERT_EQ(0, mc_gid("ff0e::1:5", &g));
	ASSERT_EQ(0, ibv_attach_mcast(self->b, &g, 0));
	EXPECT_EQ(1, mc_joined("ff0e::1:5"));
	ah = srdma_test_ah(self->pd, gidx, &g);
	ASSERT_NE(NULL, ah) TH_LOG("create_ah: %s", strerror(errno));
	memset(rb, 0xee, 2048);
	memcpy(self->buf, "multicast over IPv6", 20);
	ASSERT_EQ(0, srdma_test_post_recv(self->b, self->mr, rb, 2048, 98));
	ASSERT_EQ(0, ud_post_send(self->qp, self->mr, self->buf, 20, 1, ah,
				  MC_QPN, UD_QKEY, 0));
	ASSERT_EQ(2, srdma_test_poll_n(self->cq, wc, 2, 2000));
	w = mc_find_wc(wc, 2, self->b);
	ASSERT_NE(NULL, w);
	ud_check_recv_wc_sl(_metadata, w, self->b, 98, 20, self->qp->qp_num, 0,
			    SRDMA_UWC_SL_IPV6);
	EXPECT_EQ(0, memcmp(rb + GRH, self->buf, 20));
	ip6 = (const struct ip6_hdr *)rb;
	EXPECT_EQ(6, rb[0] >> 4);
	EXPECT_EQ(IPPROTO_UDP, ip6->ip6_nxt);
	EXPECT_EQ(64, ip6->ip6_hlim);
	EXPECT_EQ(0, memcmp(&ip6->ip6_src, src.raw, 16));
	EXPECT_EQ(0, memcmp(&ip6->ip6_dst, g.raw, 16));
	EXPECT_EQ(0, ibv_detach_mcast(self->b, &g, 0));
	EXPECT_EQ(0, mc_joined("ff0e::1:5"));
	EXPECT_EQ(0, ibv_destroy_ah(ah));
	snprintf(cmd, sizeof(cmd), "ip -6 addr del fd00::5/64 dev %s", ndev);
	EXPECT_EQ(0, system(cmd));
}

TEST_HARNESS_MAIN

/*
 * QP1, the GSI QP the MAD layer opened on the device: a datagram with a
 * Q_Key other than 0x80010000 is a Q_Key violation, and one that is not
 * exactly one MAD (256 bytes) is dropped as a bad header before the MAD
 * layer could read the tail of an earlier MAD from its reused buffer.
 */
TEST_F(ud, qp1_rules)
{
	long long bad = srdma_test_counter("rx_bad_header");
	long long qviol = srdma_test_counter("rx_qkey_violations");

	ASSERT_LE(0, bad);
	ASSERT_LE(0, qviol);
	ASSERT_EQ(0, ud_inject(&self->gid, 1, 0x80010000, 100, 0x11))
		TH_LOG("raw socket: %s", strerror(errno));
	ASSERT_EQ(0, ud_inject(&self->gid, 1, 0x80010000, 260, 0x11));
	ASSERT_EQ(0, ud_inject(&self->gid, 1, 0x12345678, 256, 0x11));
	usleep(300 * 1000);	/* the core caches hw counters for 10 ms */
	EXPECT_EQ(bad + 2, srdma_test_counter("rx_bad_header"));
	EXPECT_EQ(qviol + 1, srdma_test_counter("rx_qkey_violations"));
}
