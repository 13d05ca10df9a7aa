// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_target: one RC (or with -u UC) QP on a verbs device, connected to a
 * peer that is
 * not a verbs device at all (selftests/hostile.py speaks RoCEv2 itself),
 * and driven line by line from stdin. The peer sends adversarial packet
 * sequences; this program shows what they did to the QP, its memory and
 * its completions.
 *
 *   srdma_target -d DEV -g GIDX -r PEER_IPV4 -q PEER_QPN [-u | -x] [-t T] [-o]
 *
 * -t sets the RC QP's local ACK timeout attribute (default 14: 67 ms).
 * -o registers the MR on demand (IBV_ACCESS_ON_DEMAND): none of its pages
 * is mapped for the device until a transfer faults it in.
 *
 * With -x the QP is an XRC receive QP (in RTR) of a domain with two XRC
 * SRQs, A and B, both on the one CQ; receives go to A ("recv N") or B
 * ("recvb N").
 *
 * Prints "qpn=N rkey=N addr=N len=N" (with -x, then "srqa=N srqb=N"),
 * then answers each command with one
 * line (or, for poll, several lines ending with "end"):
 *   recv N           post N receives of the whole MR (wr_id 0x100, 0x101...)
 *   poll             every completion: wr_id status opcode byte_len imm
 *                    wc_flags src_qp qp_num
 *   state            the QP state and the async events seen so far
 *   dump OFF LEN     the MR bytes [OFF, OFF+LEN) in hex
 *   fill             each 8-byte word of the MR: its offset XOR
 *                    FILL_MAGIC, little endian
 *   dereg            deregister the MR
 *   reuse KEY        register 4 KiB MRs at the old MR's iova until one
 *                    gets rkey KEY (a reused key), keep it: "ok" or "fail"
 *   reset            straight to RESET
 *   reconnect QPN    ERR -> RESET -> INIT -> RTR -> RTS towards PEER_QPN
 *                    QPN: "ok" once the QP answers the new peer only
 *   quit
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "srdma_test.h"

#define MR_LEN		(4u << 20)
#define RQ_PSN		0x1000
#define SQ_PSN		0x2000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *buf;
static union ibv_gid peer_gid;
static int gidx;
static bool uc;		/* -u: a UC QP, no READ, atomics, ACK timers */
static bool xrc;	/* -x: an XRC receive QP, receives on XRC SRQs */
static int ack_timeout = 14;	/* -t: the QP's local ACK timeout */
static bool odp;	/* -o: the MR is registered on demand */
static struct ibv_xrcd *xrcd;
static struct ibv_srq *srq_a, *srq_b;
static char events[256];

static int modify(enum ibv_qp_state state, uint32_t dqpn)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE;

	memset(&a, 0, sizeof(a));
	a.qp_state = state;
	switch (state) {
	case IBV_QPS_INIT:
		a.port_num = 1;
		a.qp_access_flags = uc ? IBV_ACCESS_REMOTE_WRITE :
				    IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		break;
	case IBV_QPS_RTR:
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = RQ_PSN;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = peer_gid;
		a.ah_attr.grh.sgid_index = gidx;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (!uc)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		break;
	case IBV_QPS_RTS:
		if (xrc)	/* an XRC receive QP answers in RTR */
			return 0;
		a.timeout = ack_timeout;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = SQ_PSN;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_SQ_PSN;
		if (!uc)
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	default:
		break;
	}
	return ibv_modify_qp(qp, &a, mask);
}

/* The UC QP of -u, with the caps of the RC one. */
static struct ibv_qp *uc_qp(void)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 64,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &init);
}

/* -x: the XRC domain, its SRQs A and B, and the receive QP. */
static struct ibv_qp *xrc_qp(void)
{
	char name[] = "/tmp/srdma_target_xrcd.XXXXXX";
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 64, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd,
		.cq = cq,
	};
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
	};

	xa.fd = mkstemp(name);
	if (xa.fd < 0)
		return NULL;
	unlink(name);
	xrcd = ibv_open_xrcd(ctx, &xa);
	if (!xrcd)
		return NULL;
	sa.xrcd = xrcd;
	srq_a = ibv_create_srq_ex(ctx, &sa);
	srq_b = ibv_create_srq_ex(ctx, &sa);
	if (!srq_a || !srq_b)
		return NULL;
	qa.xrcd = xrcd;
	return ibv_create_qp_ex(ctx, &qa);
}

static int connect_to(uint32_t dqpn)
{
	return modify(IBV_QPS_INIT, 0) || modify(IBV_QPS_RTR, dqpn) ||
	       modify(IBV_QPS_RTS, 0);
}

/* Collect async events without blocking. */
static void drain_events(void)
{
	struct ibv_async_event ev;
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	size_t n;

	while (poll(&p, 1, 0) == 1 && !ibv_get_async_event(ctx, &ev)) {
		n = strlen(events);
		snprintf(events + n, sizeof(events) - n, "%s%s", n ? "," : "",
			 ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

/* N receives of the whole MR: on the QP, or with -x on SRQ @srq. */
static void cmd_recv(int n, struct ibv_srq *srq)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MR_LEN,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	static uint64_t next = 0x100;
	int i;

	for (i = 0; i < n; i++) {
		wr.wr_id = next++;
		if (srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		    ibv_post_recv(qp, &wr, &bad)) {
			printf("fail errno=%d\n", errno);
			return;
		}
	}
	printf("ok\n");
}

/*
 * One signaled work request of @len bytes from the MR's start: a SEND, or
 * a READ of the peer's (address 0x1000, rkey 0x1234).
 */
static void cmd_post(enum ibv_wr_opcode op, uint64_t wr_id, unsigned int len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = 0x1000;
		wr.wr.rdma.rkey = 0x1234;
	}
	printf(ibv_post_send(qp, &wr, &bad) ? "fail\n" : "ok\n");
}

static void cmd_poll(void)
{
	struct ibv_wc wc;

	while (ibv_poll_cq(cq, 1, &wc) == 1)
		printf("wc wr_id=%llu status=%d opcode=%d byte_len=%u imm=%u wc_flags=%u src_qp=%u qp_num=%u\n",
		       (unsigned long long)wc.wr_id, wc.status, wc.opcode,
		       wc.byte_len, ntohl(wc.imm_data), wc.wc_flags,
		       wc.src_qp, wc.qp_num);
	printf("end\n");
}

static void cmd_state(void)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	drain_events();
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		printf("fail errno=%d\n", errno);
	else
		printf("state=%d events=%s\n", a.qp_state,
		       events[0] ? events : "none");
}

static void cmd_dump(unsigned int off, unsigned int len)
{
	unsigned int i;

	if (off > MR_LEN || len > MR_LEN - off) {
		printf("fail\n");
		return;
	}
	for (i = 0; i < len; i++)
		printf("%02x", buf[off + i]);
	printf("\n");
}

#define FILL_MAGIC	0x5352444d00000000ull

static void cmd_fill(void)
{
	uint64_t off, v;

	for (off = 0; off < MR_LEN; off += 8) {
		v = htole64(off ^ FILL_MAGIC);
		memcpy(buf + off, &v, 8);
	}
	printf("ok\n");
}

static void cmd_reuse(uint32_t key)
{
	struct ibv_mr *m;
	int i;

	for (i = 0; i < 100000; i++) {
		m = ibv_reg_mr_iova(pd, buf, 4096, (uintptr_t)buf,
				    IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ);
		if (!m) {
			printf("fail errno=%d\n", errno);
			return;
		}
		if (m->rkey == key) {
			mr = m;
			printf("ok tries=%d\n", i + 1);
			return;
		}
		ibv_dereg_mr(m);
	}
	printf("fail tries=%d\n", i);
}

int main(int argc, char **argv)
{
	uint32_t peer_qpn = 0, n1, n2;
	const char *peer = NULL;
	char line[256];
	int opt;

	while ((opt = getopt(argc, argv, "d:g:r:q:uxt:o")) != -1) {
		switch (opt) {
		case 'd': setenv("SRDMA_DEV", optarg, 1); break;
		case 'g': gidx = atoi(optarg); break;
		case 'r': peer = optarg; break;
		case 'q': peer_qpn = strtoul(optarg, NULL, 0); break;
		case 'u': uc = true; break;
		case 'x': xrc = true; break;
		case 't': ack_timeout = atoi(optarg); break;
		case 'o': odp = true; break;
		default: return 2;
		}
	}
	if (!peer || !peer_qpn)
		return 2;
	memset(&peer_gid, 0, sizeof(peer_gid));
	peer_gid.raw[10] = peer_gid.raw[11] = 0xff;
	if (inet_pton(AF_INET, peer, &peer_gid.raw[12]) != 1)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);

	ctx = srdma_test_open();
	if (!ctx) {
		fprintf(stderr, "no device %s\n", srdma_test_devname());
		return 1;
	}
	buf = aligned_alloc(4096, MR_LEN);
	memset(buf, 0, MR_LEN);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 256, NULL, NULL, 0) : NULL;
	mr = pd ? ibv_reg_mr(pd, buf, MR_LEN, IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC |
			     (odp ? IBV_ACCESS_ON_DEMAND : 0)) : NULL;
	qp = !cq ? NULL : uc ? uc_qp() : xrc ? xrc_qp() :
	     srdma_test_rc_qp(pd, cq, 16, 64, 1);
	if (!mr || !qp || connect_to(peer_qpn)) {
		fprintf(stderr, "setup failed: %s\n", strerror(errno));
		return 1;
	}
	printf("qpn=%u rkey=%u addr=%llu len=%u", qp->qp_num, mr->rkey,
	       (unsigned long long)(uintptr_t)buf, MR_LEN);
	if (xrc) {
		if (ibv_get_srq_num(srq_a, &n1) || ibv_get_srq_num(srq_b, &n2))
			return 1;
		printf(" srqa=%u srqb=%u", n1, n2);
	}
	printf("\n");

	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "recv %u", &n1) == 1) {
			cmd_recv(n1, srq_a);
		} else if (sscanf(line, "recvb %u", &n1) == 1 && xrc) {
			cmd_recv(n1, srq_b);
		} else if (!strncmp(line, "poll", 4)) {
			cmd_poll();
		} else if (!strncmp(line, "state", 5)) {
			cmd_state();
		} else if (sscanf(line, "dump %u %u", &n1, &n2) == 2) {
			cmd_dump(n1, n2);
		} else if (!strncmp(line, "fill", 4)) {
			cmd_fill();
		} else if (!strncmp(line, "dereg", 5)) {
			printf(ibv_dereg_mr(mr) ? "fail\n" : "ok\n");
			mr = NULL;
		} else if (sscanf(line, "access %u", &n1) == 1) {
			struct ibv_qp_attr a = { .qp_access_flags = n1 };

			printf(ibv_modify_qp(qp, &a, IBV_QP_ACCESS_FLAGS) ?
			       "fail\n" : "ok\n");
		} else if (sscanf(line, "reuse %u", &n1) == 1) {
			cmd_reuse(n1);
		} else if (!strncmp(line, "reset", 5)) {
			printf(modify(IBV_QPS_RESET, 0) ? "fail\n" : "ok\n");
		} else if (sscanf(line, "reconnect %u", &n1) == 1) {
			printf(modify(IBV_QPS_ERR, 0) ||
			       modify(IBV_QPS_RESET, 0) || connect_to(n1) ?
			       "fail\n" : "ok\n");
		} else if (sscanf(line, "send %u", &n1) == 1) {
			cmd_post(IBV_WR_SEND, 0x200, n1);
		} else if (sscanf(line, "read %u", &n1) == 1) {
			if (n1 > MR_LEN)
				printf("fail\n");
			else
				cmd_post(IBV_WR_RDMA_READ, 0x400, n1);
		} else if (sscanf(line, "rdwr %u", &n1) == 1) {
			struct ibv_sge sge = { .addr = (uintptr_t)buf,
					       .length = n1, .lkey = mr->lkey };
			struct ibv_send_wr w2 = { .wr_id = 0x301, .sg_list = &sge,
						  .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE,
						  .send_flags = IBV_SEND_SIGNALED,
						  .wr.rdma = { 0x1000, 0x1234 } };
			struct ibv_send_wr w1 = { .wr_id = 0x300, .sg_list = &sge,
						  .num_sge = 1, .next = &w2,
						  .opcode = IBV_WR_RDMA_READ,
						  .send_flags = IBV_SEND_SIGNALED,
						  .wr.rdma = { 0x1000, 0x1234 } },
					   *bad;
			printf(ibv_post_send(qp, &w1, &bad) ? "fail\n" : "ok\n");
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("unknown command\n");
		}
	}
	ibv_destroy_qp(qp);
	if (srq_a)
		ibv_destroy_srq(srq_a);
	if (srq_b)
		ibv_destroy_srq(srq_b);
	if (xrcd)
		ibv_close_xrcd(xrcd);
	if (mr)
		ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return 0;
}
