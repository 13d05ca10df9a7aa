// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * UC under loss: one process, a UC QP on each of two devices (-d sends,
 * -D receives) joined by a lossy wire (selftests/tests/uc.sh puts netem on
 * a veth pair across namespaces). It sends -n messages of one to three
 * packets, SEND and WRITE with immediate alternately, then markers until
 * one arrives, and checks that:
 *   - every send work request completes successfully, in order;
 *   - every message that arrives is whole and correct: its index (the
 *     immediate) above the last one's, its byte_len, every byte, every
 *     completion field;
 *   - with -l (loss expected), some messages were lost, the receiving
 *     device counted PSN gaps (rx_out_of_sequence) and dropped messages
 *     (rx_uc_msg_dropped), and at least -p percent (default 50) arrived.
 * Exit status 0 if all held.
 */
#include <endian.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#include "srdma_test.h"

#define MTU_BYTES	1024
#define MAX_LEN		(3 * MTU_BYTES)
#define SLOT		4096
#define RQ_DEPTH	64
#define BATCH		16
#define WSLOTS		64		/* WRITE targets, one per index mod 64 */
#define MARKERS		200

static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL: " __VA_ARGS__);			\
		fputc('\n', stderr);					\
		failures++;						\
	}								\
} while (0)

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
	size_t len;
	union ibv_gid gid;
	int gidx;
	const char *name;
};

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static int side_open(struct side *s, const char *name, size_t len)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = 2 * BATCH, .max_recv_wr = RQ_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	s->name = name;
	s->ctx = open_dev(name);
	if (!s->ctx)
		return -1;
	s->gidx = srdma_test_ipv4_gid(s->ctx, &s->gid);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 4 * RQ_DEPTH, NULL, NULL, 0);
	s->len = len;
	s->buf = calloc(1, len);
	if (s->gidx < 0 || !s->pd || !s->cq || !s->buf)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->buf, len, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	s->qp = s->mr ? ibv_create_qp(s->pd, &init) : NULL;
	return s->qp ? 0 : -1;
}

/* RESET -> RTS of @s's UC QP towards @peer's. */
static int uc_connect(struct side *s, struct side *peer)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 0xfffff0;		/* the PSNs wrap during the run */
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = s->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0xfffff0;
	return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static uint32_t msg_len(uint32_t idx)
{
	return 1 + (idx * 977) % MAX_LEN;
}

static uint8_t pat(uint32_t idx, uint32_t i)
{
	return (uint8_t)(idx * 131 + i * 7 + 1);
}

static int post_recv(struct side *r, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->buf + (size_t)slot * SLOT),
		.length = SLOT, .lkey = r->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = slot, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(r->qp, &wr, &bad);
}

/* Message @idx from send slot @slot: SEND (even) or WRITE, with imm. */
static int post_msg(struct side *s, struct side *r, uint32_t idx,
		    uint32_t slot)
{
	uint8_t *src = s->buf + (size_t)slot * SLOT;
	uint32_t len = msg_len(idx), i;
	struct ibv_sge sge = {
		.addr = (uintptr_t)src, .length = len, .lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = idx, .sg_list = &sge, .num_sge = 1,
		.opcode = idx & 1 ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(idx),
	}, *bad;

	for (i = 0; i < len; i++)
		src[i] = pat(idx, i);
	if (idx & 1) {
		wr.wr.rdma.remote_addr = (uintptr_t)(r->buf + (size_t)
			(RQ_DEPTH + idx % WSLOTS) * SLOT);
		wr.wr.rdma.rkey = r->mr->rkey;
	} else {
		wr.opcode = IBV_WR_SEND_WITH_IMM;	/* the index */
	}
	return ibv_post_send(s->qp, &wr, &bad);
}

struct state {
	uint32_t sent_done;	/* send completions seen */
	int64_t last;		/* index of the last message received */
	uint32_t received;
};

/* Take the send completions: all successful, in order. */
static void poll_send(struct side *s, struct state *st)
{
	struct ibv_wc wc[BATCH];
	int n, i;

	while ((n = ibv_poll_cq(s->cq, BATCH, wc)) > 0) {
		for (i = 0; i < n; i++) {
			CHECK(wc[i].status == IBV_WC_SUCCESS &&
			      wc[i].wr_id == st->sent_done &&
			      wc[i].qp_num == s->qp->qp_num &&
			      wc[i].opcode == (st->sent_done & 1 ?
					       IBV_WC_RDMA_WRITE : IBV_WC_SEND),
			      "send wc %u: wr_id %llu status %d opcode %d",
			      st->sent_done,
			      (unsigned long long)wc[i].wr_id, wc[i].status,
			      wc[i].opcode);
			st->sent_done++;
		}
	}
}

/* Take what arrived: each message whole and correct, in order. */
static void poll_recv(struct side *r, struct side *s, struct state *st)
{
	struct ibv_wc wc;
	uint32_t idx, len, i;
	const uint8_t *p;

	while (ibv_poll_cq(r->cq, 1, &wc) > 0) {
		idx = be32toh(wc.imm_data);
		len = msg_len(idx);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id < RQ_DEPTH &&
		      (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      wc.qp_num == r->qp->qp_num &&
		      wc.src_qp == s->qp->qp_num,
		      "recv wc: status %d wr_id %llu flags %#x qp %u src %u",
		      wc.status, (unsigned long long)wc.wr_id, wc.wc_flags,
		      wc.qp_num, wc.src_qp);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id >= RQ_DEPTH)
			continue;
		CHECK((int64_t)idx > st->last, "message %u after %lld", idx,
		      (long long)st->last);
		CHECK(wc.opcode == (idx & 1 ? IBV_WC_RECV_RDMA_WITH_IMM :
				    IBV_WC_RECV),
		      "message %u: opcode %d", idx, wc.opcode);
		CHECK(wc.byte_len == len, "message %u: byte_len %u, sent %u",
		      idx, wc.byte_len, len);
		p = r->buf + (size_t)(idx & 1 ? RQ_DEPTH + idx % WSLOTS :
				      wc.wr_id) * SLOT;
		for (i = 0; i < len; i++)
			if (p[i] != pat(idx, i))
				break;
		CHECK(i == len, "message %u: byte %u of %u wrong", idx, i, len);
		st->last = idx;
		st->received++;
		CHECK(!post_recv(r, (uint32_t)wc.wr_id), "repost");
	}
}

int main(int argc, char **argv)
{
	const char *d0 = "srdma0", *d1 = "srdma1";
	long long oos0, drop0, oos, drop;
	struct state st = { .last = -1 };
	struct side s = {}, r = {};
	uint32_t n = 2000, i, k, lost;
	int opt, expect_loss = 0, pct = 50;

	while ((opt = getopt(argc, argv, "d:D:n:lp:")) != -1) {
		switch (opt) {
		case 'd': d0 = optarg; break;
		case 'D': d1 = optarg; break;
		case 'n': n = (uint32_t)atoi(optarg); break;
		case 'l': expect_loss = 1; break;
		case 'p': pct = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-D DEV] [-n N] [-l] [-p PCT]\n",
				argv[0]);
			return 2;
		}
	}
	if (side_open(&s, d0, 2 * BATCH * SLOT) ||
	    side_open(&r, d1, (RQ_DEPTH + WSLOTS) * SLOT) ||
	    uc_connect(&s, &r) || uc_connect(&r, &s)) {
		fprintf(stderr, "FAIL: setup of %s -> %s: %s\n", d0, d1,
			strerror(errno));
		return 1;
	}
	for (i = 0; i < RQ_DEPTH; i++)
		if (post_recv(&r, i))
			return 1;
	oos0 = srdma_test_dev_counter(d1, "rx_out_of_sequence");
	drop0 = srdma_test_dev_counter(d1, "rx_uc_msg_dropped");

	/* Batches of BATCH, at most 2 * BATCH outstanding at the sender. */
	for (i = 0; i < n;) {
		for (k = 0; k < BATCH && i < n; k++, i++)
			CHECK(!post_msg(&s, &r, i, i % (2 * BATCH)),
			      "post %u", i);
		for (k = 0; k < 2000 && st.sent_done < i; k++) {
			poll_send(&s, &st);
			usleep(100);
		}
		CHECK(st.sent_done == i, "sends: %u of %u completed",
		      st.sent_done, i);
		/*
		 * UC has no flow control: let the receiver catch up with
		 * the batch (or give up on its last message after 0.5 s,
		 * when it was lost), so that its RQ never runs dry and no
		 * WRITE slot is reused before it was checked. A slow
		 * (debug) kernel then loses nothing that the wire carried.
		 */
		for (k = 0; k < 500 && st.last < (int64_t)i - 1; k++) {
			usleep(1000);
			poll_recv(&r, &s, &st);
		}
		if (failures > 20)
			return 1;
	}
	/* Markers until one arrives: tail losses show up as a PSN gap. */
	for (k = 0; k < MARKERS && st.last < (int64_t)n; k++, i++) {
		CHECK(!post_msg(&s, &r, i, i % (2 * BATCH)), "marker %u", i);
		usleep(5000);
		poll_send(&s, &st);
		poll_recv(&r, &s, &st);
	}
	CHECK(st.last >= (int64_t)n, "no marker arrived in %d", MARKERS);
	for (k = 0; k < 100 && st.sent_done < i; k++) {
		usleep(1000);
		poll_send(&s, &st);
	}
	CHECK(st.sent_done == i, "sends: %u of %u completed", st.sent_done, i);

	oos = srdma_test_dev_counter(d1, "rx_out_of_sequence") - oos0;
	drop = srdma_test_dev_counter(d1, "rx_uc_msg_dropped") - drop0;
	lost = i - st.received;
	printf("# uc: %u messages sent, %u arrived whole, %u lost; %s counted %lld PSN gaps, %lld dropped messages\n",
	       i, st.received, lost, d1, oos, drop);
	if (lost)
		CHECK(oos >= 1, "%u messages lost, no PSN gap counted", lost);
	if (expect_loss) {
		CHECK(lost >= 1, "no message lost under loss");
		CHECK(drop >= 1, "no dropped message counted");
		CHECK(st.received * 100ULL >= (uint64_t)n * pct,
		      "only %u of %u arrived", st.received, n);
	} else {
		CHECK(lost == 0 && drop == 0, "lost %u, dropped %lld without loss",
		      lost, drop);
	}
	ibv_destroy_qp(s.qp);
	ibv_destroy_qp(r.qp);
	printf("%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
