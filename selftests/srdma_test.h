/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers shared by the srdma selftests (user space, run in the test VM).
 */
#ifndef SRDMA_TEST_H
#define SRDMA_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <linux/udmabuf.h>

/*
 * SKIP from a FIXTURE_SETUP. 6.1's kselftest harness runs a case even after
 * its setup skipped (it stops only on a failed one), so this ends the
 * case's process with the status the harness reads as a skip (255). For
 * use in harness programs only, after kselftest_harness.h.
 */
#define SRDMA_TEST_SETUP_SKIP(fmt, ...) do {				\
	SKIP(, fmt, ##__VA_ARGS__);					\
	_exit(255);							\
} while (0)

/* The device under test: $SRDMA_DEV, default srdma0. */
/*
 * SRDMA_TEST_SLOW=N, 0 to 4 (selftests/lib.sh sets it on the debug kernel,
 * where KASAN under emulation makes every packet several times slower):
 * data-path tests make their ACK timeouts 2^N times longer and their
 * completion and stall bounds N+1 times longer.
 */
static inline int srdma_test_slow(void)
{
	const char *v = getenv("SRDMA_TEST_SLOW");
	int n = v ? atoi(v) : 0;

	return n < 0 ? 0 : n > 4 ? 4 : n;
}

static inline const char *srdma_test_devname(void)
{
	const char *name = getenv("SRDMA_DEV");

	return name && *name ? name : "srdma0";
}

/* The next async event within @ms ms into @ev (acked); 0, or -1 if none. */
static inline int srdma_test_next_event(struct ibv_context *ctx, int ms,
					struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	if (ibv_get_async_event(ctx, ev))
		return -1;
	ibv_ack_async_event(ev);
	return 0;
}

/* Open device @name, or NULL if it is not listed. */
static inline struct ibv_context *srdma_test_open_name(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

/* Open the device under test, or NULL if it is not listed. */
static inline struct ibv_context *srdma_test_open(void)
{
	return srdma_test_open_name(srdma_test_devname());
}

/* The mask of RESET -> INIT with access flags. */
#define SRDMA_TEST_INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | \
			      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)

/* RESET -> INIT on port 1 with @access; ibv_modify_qp()'s result. */
static inline int srdma_test_qp_init_access(struct ibv_qp *qp,
					    unsigned int access)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	return ibv_modify_qp(qp, &a, SRDMA_TEST_INIT_MASK);
}

/* RESET -> INIT with remote WRITE and READ; ibv_modify_qp()'s result. */
static inline int srdma_test_qp_init(struct ibv_qp *qp)
{
	return srdma_test_qp_init_access(qp, IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_READ);
}

/* The attributes INIT -> RTR of a connected QP requires, and their mask. */
#define SRDMA_TEST_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | \
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | \
			     IBV_QP_MIN_RNR_TIMER)

/*
 * Towards QP @dqpn behind GID @gid (reached through our GID @gidx) at
 * @mtu; first PSN 0x100, 4 READs and atomics in, RNR timer 0.01 ms.
 */
static inline void srdma_test_rtr_attr(struct ibv_qp_attr *a, uint32_t dqpn,
				       int gidx, const union ibv_gid *gid,
				       enum ibv_mtu mtu)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = mtu;
	a->dest_qp_num = dqpn;
	a->rq_psn = 0x100;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 1;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = *gid;
	a->ah_attr.grh.sgid_index = gidx;
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.port_num = 1;
}

/*
 * INIT -> RTR towards QP @dqpn behind GID @gid at @mtu; ibv_modify_qp()'s
 * result.
 */
static inline int srdma_test_qp_rtr_to(struct ibv_qp *qp, uint32_t dqpn,
				       int gidx, const union ibv_gid *gid,
				       enum ibv_mtu mtu)
{
	struct ibv_qp_attr a;

	srdma_test_rtr_attr(&a, dqpn, gidx, gid, mtu);
	return ibv_modify_qp(qp, &a, SRDMA_TEST_RTR_MASK);
}

/* INIT -> RTR towards the QP itself at @mtu; ibv_modify_qp()'s result. */
static inline int srdma_test_qp_rtr(struct ibv_qp *qp, int gidx,
				    const union ibv_gid *gid, enum ibv_mtu mtu)
{
	return srdma_test_qp_rtr_to(qp, qp->qp_num, gidx, gid, mtu);
}

/* The attributes RTR -> RTS requires, and their mask. */
#define SRDMA_TEST_RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | \
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

static inline void srdma_test_rts_attr(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->sq_psn = 0x100;
	a->max_rd_atomic = 4;
}

/* RTR -> RTS; ibv_modify_qp()'s result. */
static inline int srdma_test_qp_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	srdma_test_rts_attr(&a);
	return ibv_modify_qp(qp, &a, SRDMA_TEST_RTS_MASK);
}

/* The QP's state as ibv_query_qp() reports it, or -1. */
static inline enum ibv_qp_state srdma_test_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

/* An RC QP connected to itself through GID @gidx at path MTU @mtu. */
static inline int srdma_test_connect_self_mtu(struct ibv_qp *qp, int gidx,
					      const union ibv_gid *gid,
					      enum ibv_mtu mtu)
{
	return srdma_test_qp_init(qp) || srdma_test_qp_rtr(qp, gidx, gid, mtu) ||
	       srdma_test_qp_rts(qp) ? -1 : 0;
}

/* The same at path MTU 1024, what most tests use. */
static inline int srdma_test_connect_self(struct ibv_qp *qp, int gidx, union ibv_gid *gid)
{
	return srdma_test_connect_self_mtu(qp, gidx, gid, IBV_MTU_1024);
}

/*
 * Index of the first RoCEv2 GID that is an IPv4-mapped address
 * (::ffff:a.b.c.d), -1 if none. All twelve leading bytes are checked: the
 * default GID fe80::/64 built from the MAC has byte 11 0xff always and
 * byte 10 from the MAC, so two bytes alone match it once in 256 MACs.
 */
static inline int srdma_test_ipv4_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_gid_entry ent;
	int i;

	for (i = 0; i < 16; i++) {
		if (ibv_query_gid_ex(ctx, 1, i, &ent, 0))
			continue;
		if (ent.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(ent.gid.raw, v4mapped, sizeof(v4mapped))) {
			*gid = ent.gid;
			return i;
		}
	}
	return -1;
}

/* An RC QP on @pd with @cq for both queues, @sge SGEs per work request. */
static inline struct ibv_qp *srdma_test_rc_qp(struct ibv_pd *pd,
					      struct ibv_cq *cq,
					      uint32_t send_wr,
					      uint32_t recv_wr, uint32_t sge)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr,
			 .max_send_sge = sge, .max_recv_sge = sge },
	};

	return ibv_create_qp(pd, &init);
}

/* Poll @cq for up to about 2 s for one completion; 1 if one came. */
static inline int srdma_test_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int i, n;

	for (i = 0; i < 20000; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep(100);
	}
	return 0;
}

/*
 * One completion on @cq within @polls polls 100 us apart (as many again
 * per step of srdma_test_slow()); else *@wc zeroed with status -1, which
 * no completion has.
 */
static inline void srdma_test_wait_wc_for(struct ibv_cq *cq,
					  struct ibv_wc *wc, int polls)
{
	int i;

	for (i = 0; i < polls * (srdma_test_slow() + 1); i++) {
		if (ibv_poll_cq(cq, 1, wc) == 1)
			return;
		usleep(100);
	}
	memset(wc, 0, sizeof(*wc));
	wc->status = (enum ibv_wc_status)-1;
}

/*
 * RESET -> RTS of an RC QP with remote rights @access, towards QP @dqpn
 * behind GID @gid at a 1 KiB path MTU; -1 if a step failed.
 */
static inline int srdma_test_connect_to(struct ibv_qp *qp, uint32_t dqpn,
					int gidx, const union ibv_gid *gid,
					unsigned int access)
{
	if (srdma_test_qp_init_access(qp, access))
		return -1;
	return srdma_test_qp_rtr_to(qp, dqpn, gidx, gid, IBV_MTU_1024) ||
	       srdma_test_qp_rts(qp) ? -1 : 0;
}

/* @len bytes of the pattern of @seed at @p. */
static inline void srdma_test_fill(unsigned char *p, size_t len,
				   unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

/* 1 if the @len bytes at @p are the pattern of @seed. */
static inline int srdma_test_filled(const unsigned char *p, size_t len,
				    unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(seed + i * 7 + (i >> 8)))
			return 0;
	return 1;
}

/* An AH on @pd from our GID @gidx to @dgid. */
static inline struct ibv_ah *srdma_test_ah(struct ibv_pd *pd, int gidx,
					   const union ibv_gid *dgid)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = *dgid, .sgid_index = gidx, .hop_limit = 64 },
	};

	return ibv_create_ah(pd, &aa);
}

/* Up to @n completions within about @ms ms; how many came, or < 0. */
static inline int srdma_test_poll_n(struct ibv_cq *cq, struct ibv_wc *wc,
				    int n, int ms)
{
	int got = 0, i, r;

	for (i = 0; i < ms * 10 && got < n; i++) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return r;
		got += r;
		if (got < n)
			usleep(100);
	}
	return got;
}

/* RESET -> INIT -> RTR -> RTS of a UD QP with Q_Key @qkey, SQ PSN 0x42. */
static inline int srdma_test_ud_up(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x42;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* Post one receive of @len bytes at @at in @mr; ibv_post_recv()'s result. */
static inline int srdma_test_post_recv(struct ibv_qp *qp, struct ibv_mr *mr,
				       void *at, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)at, .length = len, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/*
 * Post one signaled work request @op of @len bytes from @local, with
 * immediate @imm (host order) and, for RDMA, the remote side at @remote;
 * both in @mr. ibv_post_send()'s result.
 */
static inline int srdma_test_post(struct ibv_qp *qp, struct ibv_mr *mr,
				  enum ibv_wr_opcode op, uint64_t wr_id,
				  void *local, uint32_t len, void *remote,
				  uint32_t imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)local, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm),
	}, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)remote;
	wr.wr.rdma.rkey = mr->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/*
 * Post one signaled RDMA WRITE or READ of @len bytes between @local and
 * @remote, both inside @mr; ibv_post_send()'s result.
 */
static inline int srdma_test_post_rdma(struct ibv_qp *qp, struct ibv_mr *mr,
				       enum ibv_wr_opcode op, void *local,
				       uint32_t len, void *remote)
{
	return srdma_test_post(qp, mr, op, 0, local, len, remote, 0);
}

/*
 * Post one signaled work request @op of @len bytes at @local in @lmr (its
 * addresses, iovas); for RDMA and atomics the remote side at @remote in
 * @rmr, a fetch and add adding @add. ibv_post_send()'s result.
 */
static inline int srdma_test_post_mr(struct ibv_qp *qp, enum ibv_wr_opcode op,
				     uint64_t wr_id, struct ibv_mr *lmr,
				     uint64_t local, uint32_t len,
				     struct ibv_mr *rmr, uint64_t remote,
				     uint64_t add)
{
	struct ibv_sge sge = {
		.addr = local, .length = len, .lkey = lmr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = remote;
		wr.wr.atomic.rkey = rmr->rkey;
		wr.wr.atomic.compare_add = add;
	} else if (rmr) {
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = rmr->rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/* An extended CQ of @cqe entries with the standard completion fields. */
static inline struct ibv_cq_ex *srdma_test_cq_ex(struct ibv_context *ctx,
						 uint32_t cqe)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};

	return ibv_create_cq_ex(ctx, &a);
}

/*
 * One completion, every field read through the ibv_cq_ex accessors at the
 * width they return (struct ibv_wc's slid has only 16 bits).
 */
struct srdma_test_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	__be32 imm_data;
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint32_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/* The current completion of an open start_poll batch on @cq. */
static inline void srdma_test_read_ex(struct ibv_cq_ex *cq,
				      struct srdma_test_wc *wc)
{
	wc->wr_id = cq->wr_id;
	wc->status = cq->status;
	wc->opcode = ibv_wc_read_opcode(cq);
	wc->vendor_err = ibv_wc_read_vendor_err(cq);
	wc->byte_len = ibv_wc_read_byte_len(cq);
	wc->imm_data = ibv_wc_read_imm_data(cq);
	wc->qp_num = ibv_wc_read_qp_num(cq);
	wc->src_qp = ibv_wc_read_src_qp(cq);
	wc->wc_flags = ibv_wc_read_wc_flags(cq);
	wc->slid = ibv_wc_read_slid(cq);
	wc->sl = ibv_wc_read_sl(cq);
	wc->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
}

/*
 * Collect up to @n completions within about @ms ms through start_poll /
 * next_poll / end_poll; how many came, or -errno on a poll error.
 */
static inline int srdma_test_poll_ex(struct ibv_cq_ex *cq,
				     struct srdma_test_wc *wc, int n, int ms)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int got = 0, i, ret;

	for (i = 0; i < ms * 10 && got < n; i++) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT) {
			usleep(100);
			continue;
		}
		if (ret)
			return -ret;
		srdma_test_read_ex(cq, &wc[got++]);
		while (got < n) {
			ret = ibv_next_poll(cq);
			if (ret)
				break;
			srdma_test_read_ex(cq, &wc[got++]);
		}
		ibv_end_poll(cq);
		if (ret && ret != ENOENT)
			return -ret;
	}
	return got;
}

#ifdef EXPECT_EQ	/* kselftest_harness.h programs */
/* Every field of a send completion on RC QP @qp. */
#define EXPECT_SEND_WC(wc, id, st, op, len, qp) do {			\
	EXPECT_EQ((uint64_t)(id), (wc).wr_id);				\
	EXPECT_EQ((st), (wc).status) TH_LOG("status %s",		\
				ibv_wc_status_str((wc).status));	\
	if ((st) == IBV_WC_SUCCESS) {					\
		EXPECT_EQ((op), (wc).opcode);				\
		EXPECT_EQ((uint32_t)(len), (wc).byte_len);		\
		EXPECT_EQ(0u, (wc).wc_flags);				\
		EXPECT_EQ(0u, (wc).imm_data);				\
	}								\
	EXPECT_EQ((qp)->qp_num, (wc).qp_num);				\
} while (0)
#endif

/* One uverbs mapping of this process (a ring of the provider's). */
struct srdma_test_map {
	char *addr;
	size_t len;
	unsigned long off;		/* its mmap offset */
};

/*
 * The uverbs mappings of this process from /proc/self/maps, at most @max,
 * in order of their mmap offsets (creation order: CQ, then SQ and RQ of a
 * QP); how many, or -1.
 */
static inline int srdma_test_uverbs_maps(struct srdma_test_map *m, int max)
{
	unsigned long start, end, off;
	char line[512], path[256];
	struct srdma_test_map t;
	int n = 0, i, j;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && n < max) {
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %255s", &start, &end,
			   &off, path) < 3 || !strstr(path, "infiniband/uverbs"))
			continue;
		m[n].addr = (char *)start;
		m[n].len = end - start;
		m[n].off = off;
		n++;
	}
	fclose(f);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (m[j].off < m[i].off) {
				t = m[i];
				m[i] = m[j];
				m[j] = t;
			}
	return n;
}

/*
 * The TCP control connection of the two-host programs (srdma_xfer,
 * srdma_atomic_pair), IPv4.
 */

/* Read all @n bytes into @p: 0, or -1 if the peer closed or it failed. */
static inline int srdma_test_read_full(int fd, void *p, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = read(fd, (char *)p + got, n - got);
		if (r <= 0)
			return -1;
		got += r;
	}
	return 0;
}

/* A socket listening on TCP @port, @backlog deep: its fd, or -1 (errno). */
static inline int srdma_test_tcp_listen(const char *port, int backlog)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	int ls, one = 1, err = 0;

	if (getaddrinfo(NULL, port, &hints, &ai))
		return -1;
	ls = socket(ai->ai_family, ai->ai_socktype, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, backlog))
		err = errno;
	freeaddrinfo(ai);
	if (err) {
		if (ls >= 0)
			close(ls);
		errno = err;	/* the caller says why */
		return -1;
	}
	return ls;
}

/*
 * A TCP connection to @host:@port, tried @tries times 200 ms apart (the
 * server may not listen yet): its fd, or -1.
 */
static inline int srdma_test_tcp_connect(const char *host, const char *port,
					 int tries)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	int fd = -1, i;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	for (i = 0; i < tries; i++) {
		fd = socket(ai->ai_family, ai->ai_socktype, 0);
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		fd = -1;
		usleep(200000);
	}
	freeaddrinfo(ai);
	return fd;
}

/*
 * The objects the harness fixtures of srdma_verbs_test and srdma_ring_test
 * share, for a FIXTURE() to declare first: a context on the device under
 * test, a PD, a zeroed buffer of SRDMA_TEST_BUF_SIZE bytes, the MR over it
 * (local write, remote write and read), a CQ of SRDMA_TEST_CQE entries,
 * and an RC QP that each fixture creates its own way.
 */
#define SRDMA_TEST_BUF_SIZE	(1 << 16)
#define SRDMA_TEST_CQE		64

#define SRDMA_TEST_FIXTURE_OBJS		\
	struct ibv_context *ctx;	\
	struct ibv_pd *pd;		\
	struct ibv_cq *cq;		\
	struct ibv_mr *mr;		\
	struct ibv_qp *qp;		\
	char *buf

/* In FIXTURE_SETUP(): all of them but the QP, each one asserted. */
#define SRDMA_TEST_FIXTURE_OPEN(self) do {				\
	(self)->ctx = srdma_test_open();				\
	ASSERT_NE(NULL, (self)->ctx) TH_LOG("cannot open %s: %s",	\
					    srdma_test_devname(),	\
					    strerror(errno));		\
	(self)->pd = ibv_alloc_pd((self)->ctx);				\
	ASSERT_NE(NULL, (self)->pd);					\
	(self)->buf = calloc(1, SRDMA_TEST_BUF_SIZE);			\
	(self)->mr = ibv_reg_mr((self)->pd, (self)->buf,		\
				SRDMA_TEST_BUF_SIZE,			\
				IBV_ACCESS_LOCAL_WRITE |		\
				IBV_ACCESS_REMOTE_WRITE |		\
				IBV_ACCESS_REMOTE_READ);		\
	ASSERT_NE(NULL, (self)->mr);					\
	(self)->cq = ibv_create_cq((self)->ctx, SRDMA_TEST_CQE, NULL,	\
				   NULL, 0);				\
	ASSERT_NE(NULL, (self)->cq);					\
} while (0)

/* In FIXTURE_TEARDOWN(): free whatever exists, the QP first. */
#define SRDMA_TEST_FIXTURE_CLOSE(self) do {				\
	if ((self)->qp)							\
		ibv_destroy_qp((self)->qp);				\
	if ((self)->cq)							\
		ibv_destroy_cq((self)->cq);				\
	if ((self)->mr)							\
		ibv_dereg_mr((self)->mr);				\
	if ((self)->pd)							\
		ibv_dealloc_pd((self)->pd);				\
	if ((self)->ctx)						\
		ibv_close_device((self)->ctx);				\
	free((self)->buf);						\
} while (0)

/*
 * Hw counter @name of device @dev (rdma statistic), or -1. The core
 * caches the values it read for RDMA_HW_STATS_DEFAULT_LIFESPAN (10 ms,
 * rounded up to jiffies): wait that out, or a read right after another
 * one returns the old values.
 */
static inline long long srdma_test_dev_counter(const char *dev,
					       const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	usleep(25000);

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Hw counter @name of the device under test, or -1. */
static inline long long srdma_test_counter(const char *name)
{
	return srdma_test_dev_counter(srdma_test_devname(), name);
}

/* The kernel log from now on: /dev/kmsg, non-blocking, at its end. */
static inline int srdma_test_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/* How many records logged since srdma_test_kmsg_open() hold @needle. */
static inline int srdma_test_kmsg_count(int fd, const char *needle)
{
	char rec[2048];
	int found = 0;
	ssize_t n;

	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* records overwritten: go on */
		if (n <= 0)
			return found;
		rec[n] = 0;
		if (strstr(rec, needle))
			found++;
	}
}

/*
 * dma-buf memory from vgem, the kernel's virtual GEM driver: the DRM uapi
 * needed (include/uapi/drm/drm.h, drm_mode.h), the vgem device, and a
 * dumb buffer exported with PRIME.
 */
struct srdma_test_drm_version {
	int major, minor, patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};

struct srdma_test_drm_create_dumb {
	uint32_t height, width, bpp, flags;
	uint32_t handle, pitch;
	uint64_t size;
};

struct srdma_test_drm_prime_handle {
	uint32_t handle, flags;
	int32_t fd;
};

struct srdma_test_drm_gem_close {
	uint32_t handle, pad;
};

#define SRDMA_TEST_DRM_IOCTL_VERSION \
	_IOWR('d', 0x00, struct srdma_test_drm_version)
#define SRDMA_TEST_DRM_IOCTL_GEM_CLOSE \
	_IOW('d', 0x09, struct srdma_test_drm_gem_close)
#define SRDMA_TEST_DRM_IOCTL_PRIME_HANDLE_TO_FD \
	_IOWR('d', 0x2d, struct srdma_test_drm_prime_handle)
#define SRDMA_TEST_DRM_IOCTL_MODE_CREATE_DUMB \
	_IOWR('d', 0xb2, struct srdma_test_drm_create_dumb)

/* The DRM device of vgem, opened, or -1 (modprobe vgem). */
static inline int srdma_test_vgem_open(void)
{
	char path[300], name[16];
	struct dirent *e;
	DIR *d = opendir("/dev/dri");
	int fd = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		struct srdma_test_drm_version v = {
			.name_len = sizeof(name) - 1, .name = name,
		};

		if (strncmp(e->d_name, "card", 4))
			continue;
		snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (!ioctl(fd, SRDMA_TEST_DRM_IOCTL_VERSION, &v) &&
		    !strcmp(name, "vgem"))
			break;
		close(fd);
		fd = -1;
	}
	closedir(d);
	return fd;
}

/*
 * A zeroed vgem buffer of @width x @height pixels of 32 bits on @drm,
 * exported read-write (@rw) or read-only: 0 with its GEM handle and its
 * dma-buf's file descriptor, or an errno.
 */
static inline int srdma_test_vgem_buf(int drm, uint32_t width,
				      uint32_t height, int rw,
				      uint32_t *handle, int *fd)
{
	struct srdma_test_drm_create_dumb cd = {
		.height = height, .width = width, .bpp = 32,
	};
	struct srdma_test_drm_prime_handle ph = {
		.flags = O_CLOEXEC | (rw ? O_RDWR : 0),
	};
	struct srdma_test_drm_gem_close gc = { 0 };
	int err;

	if (ioctl(drm, SRDMA_TEST_DRM_IOCTL_MODE_CREATE_DUMB, &cd))
		return errno;
	ph.handle = cd.handle;
	if (ioctl(drm, SRDMA_TEST_DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph)) {
		err = errno;
		gc.handle = cd.handle;
		ioctl(drm, SRDMA_TEST_DRM_IOCTL_GEM_CLOSE, &gc);
		return err;
	}
	*handle = cd.handle;
	*fd = ph.fd;
	return 0;
}

/* Close GEM handle @handle on @drm. */
static inline void srdma_test_vgem_close(int drm, uint32_t handle)
{
	struct srdma_test_drm_gem_close gc = { .handle = handle };

	ioctl(drm, SRDMA_TEST_DRM_IOCTL_GEM_CLOSE, &gc);
}

/*
 * dma-buf memory from udmabuf (CONFIG_UDMABUF: Debian's 6.12, not its 6.1):
 * a zeroed memfd of @len bytes, sealed against shrinking, exported whole.
 * 0 with the dma-buf's file descriptor (the memfd is closed: the dma-buf
 * holds its pages), ENODEV without /dev/udmabuf, or an errno.
 */
static inline int srdma_test_udmabuf(size_t len, int *fd)
{
	struct udmabuf_create c = {
		.flags = UDMABUF_FLAGS_CLOEXEC, .offset = 0, .size = len,
	};
	int dev, mfd, err = 0;

	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return errno == ENOENT ? ENODEV : errno;
	mfd = memfd_create("srdma-test", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (mfd < 0) {
		err = errno;
		goto close_dev;
	}
	if (ftruncate(mfd, len) || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		err = errno;
		goto close_memfd;
	}
	c.memfd = mfd;
	*fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (*fd < 0)
		err = errno;
close_memfd:
	close(mfd);
close_dev:
	close(dev);
	return err;
}

#endif /* SRDMA_TEST_H */
