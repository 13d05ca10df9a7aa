// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_xfer: RC data-integrity and error-path tests between two verbs
 * devices (srdma or any other, such as rdma_rxe), over one TCP control
 * connection.
 *
 *   server: srdma_xfer -d DEV [-g GIDX] [-p PORT]
 *   client: srdma_xfer -d DEV [-g GIDX] [-p PORT] [-t TEST] [-S PID]
 *                      [-m MAXSIZE] HOST
 *
 * The client runs the tests and prints one KTAP line per test; it exits 0
 * only if all pass. Every test connects a fresh QP pair. Data is a seeded
 * pseudo-random pattern, checked byte for byte on the side it lands on; the
 * server checks its memory on the client's request over TCP.
 *
 * -S PID: SIGSTOP PID (the server) around the one_sided test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define BUF_SIZE	(4u << 20)	/* each side's registered buffer */
#define RO_SIZE		(64u << 10)	/* a read-only window on the server */
#define MAX_SGE		4

enum cmd {
	CMD_FILL = 1,	/* fill [off, off+len) with pattern(seed) */
	CMD_CHECK,	/* check [off, off+len) against pattern(seed) */
	CMD_RECV,	/* post one receive of len at off */
	CMD_RECV_WAIT,	/* wait for a receive: check opcode/len/imm/data */
	CMD_QUIT,
	CMD_RECV_LATER,	/* reply, then post a receive after 300 ms */
	CMD_DESTROY_QP,	/* destroy the server's QP: the peer goes silent */
};

struct ctl {
	uint32_t cmd;
	uint32_t seed;
	uint32_t off;
	uint32_t len;
	uint32_t imm;
	uint32_t opcode;
	int32_t status;		/* reply: 0 ok, else an error code */
	uint32_t pad;
};

struct qpinfo {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t ro_rkey;
	uint64_t addr;
	uint64_t ro_addr;
	union ibv_gid gid;
};

struct conn {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_mr *ro_mr;
	uint8_t *buf;
	uint8_t *ro_buf;
	struct qpinfo peer;
	int gidx;
	int sock;
};

static const char *devname = "srdma0";
/* QP attributes a test may change before it connects. */
static int qp_timeout = 14, qp_retry_cnt = 7, qp_rnr_retry = 7;
static uint32_t max_size = 1u << 20;
static int gid_index = 1;
static const char *port = "18515";
static int verbose;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "srdma_xfer: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

static void pattern(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1, i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = x >> 24;
	}
}

/* Index of the first byte that differs from pattern(seed), or -1. */
static long check_pattern(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint8_t *want = malloc(len ? len : 1);
	long bad = -1;
	uint32_t i;

	if (!want)
		die("no memory");
	pattern(want, len, seed);
	for (i = 0; i < len; i++)
		if (p[i] != want[i]) {
			bad = i;
			break;
		}
	free(want);
	return bad;
}

static void xwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("control write: %s", strerror(errno));
}

static int xread(int fd, void *p, size_t n)
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

static struct ibv_context *open_dev(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		die("no devices");
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		die("cannot open %s", devname);
	return ctx;
}

static void conn_setup(struct conn *c)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 64, .max_recv_wr = 64,
			.max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
		},
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_LOCAL_WRITE,
	};

	c->ctx = open_dev();
	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd)
		die("alloc_pd: %s", strerror(errno));
	c->buf = aligned_alloc(4096, BUF_SIZE);
	c->ro_buf = aligned_alloc(4096, RO_SIZE);
	if (!c->buf || !c->ro_buf)
		die("no memory");
	memset(c->buf, 0, BUF_SIZE);
	pattern(c->ro_buf, RO_SIZE, 4242);
	c->mr = ibv_reg_mr(c->pd, c->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	c->ro_mr = ibv_reg_mr(c->pd, c->ro_buf, RO_SIZE,
			      IBV_ACCESS_REMOTE_READ);
	if (!c->mr || !c->ro_mr)
		die("reg_mr: %s", strerror(errno));
	c->cq = ibv_create_cq(c->ctx, 256, NULL, NULL, 0);
	if (!c->cq)
		die("create_cq: %s", strerror(errno));
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	c->qp = ibv_create_qp(c->pd, &init);
	if (!c->qp)
		die("create_qp: %s", strerror(errno));
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify_qp INIT: %s", strerror(errno));
}

static void conn_connect(struct conn *c)
{
	struct qpinfo me = {
		.qpn = c->qp->qp_num,
		.psn = (uint32_t)rand() & 0xffffff,
		.rkey = c->mr->rkey,
		.ro_rkey = c->ro_mr->rkey,
		.addr = (uintptr_t)c->buf,
		.ro_addr = (uintptr_t)c->ro_buf,
	};
	struct ibv_port_attr pa;
	struct ibv_qp_attr a;

	if (ibv_query_gid(c->ctx, 1, gid_index, &me.gid))
		die("query_gid %d", gid_index);
	xwrite(c->sock, &me, sizeof(me));
	if (xread(c->sock, &c->peer, sizeof(c->peer)))
		die("peer closed during the exchange");
	if (ibv_query_port(c->ctx, 1, &pa))
		die("query_port");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = c->peer.qpn;
	a.rq_psn = c->peer.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = c->peer.gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify_qp RTR: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = qp_timeout;
	a.retry_cnt = qp_retry_cnt;
	a.rnr_retry = qp_rnr_retry;
	a.sq_psn = me.psn;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify_qp RTS: %s", strerror(errno));
	/* Both sides ready before any traffic. */
	xwrite(c->sock, &me.qpn, 4);
	if (xread(c->sock, &me.qpn, 4))
		die("peer closed");
}

static void conn_close(struct conn *c)
{
	if (c->qp)
		ibv_destroy_qp(c->qp);
	ibv_destroy_cq(c->cq);
	ibv_dereg_mr(c->mr);
	ibv_dereg_mr(c->ro_mr);
	ibv_dealloc_pd(c->pd);
	ibv_close_device(c->ctx);
	free(c->buf);
	free(c->ro_buf);
	close(c->sock);
}

/* Wait up to 20 s for one completion. */
static int poll_one(struct conn *c, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(c->cq, 1, wc);
		if (n < 0)
			return -1;
		if (n == 1)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 20)
			return -1;
		usleep(50);
	}
}

/* ---- server ---- */

static int post_one_recv(struct conn *c, uint32_t off, uint32_t len,
			 uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf + off, .length = len,
			       .lkey = c->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = wr_id, .sg_list = &sge,
				   .num_sge = 1 }, *bad;

	return ibv_post_recv(c->qp, &rwr, &bad);
}

static void serve_one(struct conn *c)
{
	struct ibv_wc wc;
	struct ctl m;

	while (!xread(c->sock, &m, sizeof(m))) {
		m.status = 0;
		if ((uint64_t)m.off + m.len > BUF_SIZE) {
			m.status = EINVAL;
			xwrite(c->sock, &m, sizeof(m));
			continue;
		}
		switch (m.cmd) {
		case CMD_FILL:
			pattern(c->buf + m.off, m.len, m.seed);
			break;
		case CMD_CHECK:
			if (check_pattern(c->buf + m.off, m.len, m.seed) >= 0)
				m.status = EIO;
			break;
		case CMD_RECV:
			if (post_one_recv(c, m.off, m.len, m.seed))
				m.status = errno ? errno : EIO;
			break;
		case CMD_RECV_WAIT:
			if (poll_one(c, &wc)) {
				m.status = ETIMEDOUT;
				break;
			}
			m.status = wc.status ? 1000 + wc.status : 0;
			if (!m.status && wc.byte_len != m.len)
				m.status = EMSGSIZE;
			if (!m.status && wc.opcode != m.opcode)
				m.status = EPROTO;
			if (!m.status && (wc.wc_flags & IBV_WC_WITH_IMM) &&
			    ntohl(wc.imm_data) != m.imm)
				m.status = EBADMSG;
			if (!m.status && m.imm && !(wc.wc_flags & IBV_WC_WITH_IMM))
				m.status = EBADMSG;
			/* The data: a SEND's, or the WRITE's it announces. */
			if (!m.status &&
			    check_pattern(c->buf + m.off, m.len, m.seed) >= 0)
				m.status = EIO;
			break;
		case CMD_RECV_LATER:
			xwrite(c->sock, &m, sizeof(m));
			usleep(300000);
			post_one_recv(c, m.off, m.len, m.seed);
			continue;
		case CMD_DESTROY_QP:
			ibv_destroy_qp(c->qp);
			c->qp = NULL;
			break;
		case CMD_QUIT:
			xwrite(c->sock, &m, sizeof(m));
			return;
		default:
			m.status = EINVAL;
		}
		xwrite(c->sock, &m, sizeof(m));
	}
}

static void server(void)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	int ls, one = 1;

	if (getaddrinfo(NULL, port, &hints, &ai))
		die("getaddrinfo");
	ls = socket(ai->ai_family, ai->ai_socktype, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, 4))
		die("bind/listen: %s", strerror(errno));
	freeaddrinfo(ai);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct conn c = {};

		c.sock = accept(ls, NULL, NULL);
		if (c.sock < 0)
			die("accept");
		conn_setup(&c);
		conn_connect(&c);
		serve_one(&c);
		conn_close(&c);
	}
}

/* ---- client ---- */

static int ctl(struct conn *c, uint32_t cmd, uint32_t seed, uint32_t off,
	       uint32_t len, uint32_t imm, uint32_t opcode)
{
	struct ctl m = { .cmd = cmd, .seed = seed, .off = off, .len = len,
			 .imm = imm, .opcode = opcode };

	xwrite(c->sock, &m, sizeof(m));
	if (xread(c->sock, &m, sizeof(m)))
		die("server went away");
	return m.status;
}

static int client_connect(struct conn *c, const char *host)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	int i;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo %s", host);
	for (i = 0; i < 100; i++) {
		c->sock = socket(ai->ai_family, ai->ai_socktype, 0);
		if (!connect(c->sock, ai->ai_addr, ai->ai_addrlen))
			break;
		close(c->sock);
		c->sock = -1;
		usleep(200000);
	}
	freeaddrinfo(ai);
	if (c->sock < 0)
		die("cannot connect to %s", host);
	conn_setup(c);
	conn_connect(c);
	return 0;
}

/*
 * The local layout of @len bytes at @loff over @nsge SGEs: equal pieces
 * (the last takes the rest) with a 64-byte gap between them.
 */
static void sge_layout(struct conn *c, uint32_t loff, uint32_t len, int nsge,
		       uint32_t lkey, struct ibv_sge *sge)
{
	uint32_t i, part, done = 0;

	for (i = 0; i < (uint32_t)nsge; i++) {
		part = i == (uint32_t)nsge - 1 ? len - done : len / nsge;
		sge[i].addr = (uintptr_t)c->buf + loff + done + i * 64;
		sge[i].length = part;
		sge[i].lkey = lkey;
		done += part;
	}
}

/* Post one RDMA/SEND work request over up to 3 SGEs; wait for it. */
static int do_op(struct conn *c, enum ibv_wr_opcode op, uint32_t loff,
		 uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm,
		 int nsge, uint32_t lkey, struct ibv_wc *wc)
{
	struct ibv_sge sge[MAX_SGE];
	struct ibv_send_wr wr = {}, *bad;

	sge_layout(c, loff, len, nsge, lkey, sge);
	wr.wr_id = 7;
	wr.opcode = op;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(c->qp, &wr, &bad))
		return -errno;
	if (poll_one(c, wc))
		return -ETIMEDOUT;
	return 0;
}

/* Scatter pattern(seed) over the SGE layout do_op uses, or check it. */
static void local_fill(struct conn *c, uint32_t loff, uint32_t len, int nsge,
		       uint32_t seed)
{
	uint8_t *tmp = malloc(len ? len : 1);
	struct ibv_sge sge[MAX_SGE];
	uint32_t i, done = 0;

	pattern(tmp, len, seed);
	sge_layout(c, loff, len, nsge, 0, sge);
	for (i = 0; i < (uint32_t)nsge; done += sge[i++].length)
		memcpy((void *)(uintptr_t)sge[i].addr, tmp + done, sge[i].length);
	free(tmp);
}

static bool local_check(struct conn *c, uint32_t loff, uint32_t len,
			int nsge, uint32_t seed)
{
	uint8_t *tmp = malloc(len ? len : 1);
	struct ibv_sge sge[MAX_SGE];
	uint32_t i, done = 0;
	long bad;

	sge_layout(c, loff, len, nsge, 0, sge);
	for (i = 0; i < (uint32_t)nsge; done += sge[i++].length)
		memcpy(tmp + done, (void *)(uintptr_t)sge[i].addr, sge[i].length);
	bad = check_pattern(tmp, len, seed);
	free(tmp);
	if (bad >= 0)
		printf("# data differs at byte %ld of %u\n", bad, len);
	return bad < 0;
}

static const uint32_t sizes[] = {
	1, 2, 3, 63, 64, 255, 1000, 1024, 1025, 4095, 4096, 5000, 65536,
	100000, 262144, 1048576,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int ntest, nfail;
static pid_t stop_pid;

static void result(bool ok, const char *name)
{
	ntest++;
	if (!ok)
		nfail++;
	printf("%sok %d %s\n", ok ? "" : "not ", ntest, name);
	fflush(stdout);
}

#define EXPECT(cond, ...) do {						\
	if (!(cond)) {							\
		printf("# %s:%d: ", __func__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		return false;						\
	}								\
} while (0)

static bool t_write(struct conn *c)
{
	struct ibv_wc wc;
	uint32_t i, seed, roff;
	int nsge;

	for (i = 0; i < NSIZES && sizes[i] <= max_size; i++) {
		seed = 100 + i;
		nsge = sizes[i] >= 3 ? 1 + i % 3 : 1;
		roff = (i * 4099) % 4096;
		local_fill(c, 0, sizes[i], nsge, seed);
		EXPECT(!do_op(c, IBV_WR_RDMA_WRITE, 0, sizes[i],
			      c->peer.addr + roff, c->peer.rkey, 0, nsge,
			      c->mr->lkey, &wc), "post/poll failed");
		EXPECT(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE,
		       "size %u: status %s", sizes[i],
		       ibv_wc_status_str(wc.status));
		EXPECT(!ctl(c, CMD_CHECK, seed, roff, sizes[i], 0, 0),
		       "size %u (%d SGEs): remote data differs", sizes[i], nsge);
	}
	return true;
}

static bool t_read(struct conn *c)
{
	struct ibv_wc wc;
	uint32_t i, seed, roff;
	int nsge;

	for (i = 0; i < NSIZES && sizes[i] <= max_size; i++) {
		seed = 200 + i;
		nsge = sizes[i] >= 3 ? 1 + (i + 1) % 3 : 1;
		roff = (i * 977) % 4096;
		EXPECT(!ctl(c, CMD_FILL, seed, roff, sizes[i], 0, 0), "fill");
		memset(c->buf, 0, sizes[i] + 4 * 64);
		EXPECT(!do_op(c, IBV_WR_RDMA_READ, 0, sizes[i],
			      c->peer.addr + roff, c->peer.rkey, 0, nsge,
			      c->mr->lkey, &wc), "post/poll failed");
		EXPECT(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ &&
		       wc.byte_len == sizes[i], "size %u: status %s len %u",
		       sizes[i], ibv_wc_status_str(wc.status), wc.byte_len);
		EXPECT(local_check(c, 0, sizes[i], nsge, seed),
		       "size %u (%d SGEs): read data differs", sizes[i], nsge);
	}
	return true;
}

static bool t_send(struct conn *c)
{
	struct ibv_wc wc;
	uint32_t i, seed;
	int nsge;

	for (i = 0; i < NSIZES && sizes[i] <= max_size; i++) {
		seed = 300 + i;
		nsge = sizes[i] >= 3 ? 1 + i % 3 : 1;
		EXPECT(!ctl(c, CMD_RECV, 1, 8192, sizes[i] + 100, 0, 0), "recv");
		local_fill(c, 0, sizes[i], nsge, seed);
		EXPECT(!do_op(c, IBV_WR_SEND, 0, sizes[i], 0, 0, 0, nsge,
			      c->mr->lkey, &wc), "post/poll failed");
		EXPECT(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
		       "size %u: status %s", sizes[i],
		       ibv_wc_status_str(wc.status));
		EXPECT(!ctl(c, CMD_RECV_WAIT, seed, 8192, sizes[i], 0,
			    IBV_WC_RECV), "size %u: receive side check failed",
		       sizes[i]);
	}
	/* SEND with immediate */
	EXPECT(!ctl(c, CMD_RECV, 1, 8192, 5000, 0, 0), "recv");
	local_fill(c, 0, 3000, 1, 77);
	EXPECT(!do_op(c, IBV_WR_SEND_WITH_IMM, 0, 3000, 0, 0, 0xabcd1234, 1,
		      c->mr->lkey, &wc) && wc.status == IBV_WC_SUCCESS,
	       "send with imm");
	EXPECT(!ctl(c, CMD_RECV_WAIT, 77, 8192, 3000, 0xabcd1234, IBV_WC_RECV),
	       "send imm: receive side check failed");
	return true;
}

static bool t_write_imm(struct conn *c)
{
	struct ibv_wc wc;
	uint32_t len[] = { 0, 17, 4096, 70000 };
	uint32_t i;

	for (i = 0; i < 4; i++) {
		EXPECT(!ctl(c, CMD_RECV, 9, 0, 0, 0, 0), "recv");
		local_fill(c, 0, len[i], 1, 400 + i);
		EXPECT(!do_op(c, IBV_WR_RDMA_WRITE_WITH_IMM, 0, len[i],
			      c->peer.addr + 4096, c->peer.rkey, 0x5eed0000 + i,
			      1, c->mr->lkey, &wc), "post/poll");
		EXPECT(wc.status == IBV_WC_SUCCESS, "status %s",
		       ibv_wc_status_str(wc.status));
		EXPECT(!ctl(c, CMD_RECV_WAIT, 400 + i, 4096, len[i],
			    0x5eed0000 + i, IBV_WC_RECV_RDMA_WITH_IMM),
		       "len %u: immediate or data wrong on the target", len[i]);
	}
	return true;
}

/* The server keeps pattern 555 in [0, 64K); errors must not touch it. */
static bool remote_error(struct conn *c, enum ibv_wr_opcode op,
			 uint64_t raddr, uint32_t rkey, const char *what)
{
	struct ibv_wc wc;

	EXPECT(!ctl(c, CMD_FILL, 555, 0, 65536, 0, 0), "fill");
	local_fill(c, 0, 4096, 1, 556);
	EXPECT(!do_op(c, op, 0, 4096, raddr, rkey, 0, 1, c->mr->lkey, &wc),
	       "%s: post/poll failed", what);
	EXPECT(wc.status == IBV_WC_REM_ACCESS_ERR,
	       "%s: status %s, want remote access error", what,
	       ibv_wc_status_str(wc.status));
	EXPECT(!ctl(c, CMD_CHECK, 555, 0, 65536, 0, 0),
	       "%s: target memory changed", what);
	return true;
}

static bool t_bad_rkey(struct conn *c)
{
	return remote_error(c, IBV_WR_RDMA_WRITE, c->peer.addr,
			    c->peer.rkey ^ 0x80, "write, bad rkey");
}

static bool t_bad_rkey_read(struct conn *c)
{
	return remote_error(c, IBV_WR_RDMA_READ, c->peer.addr,
			    c->peer.rkey + 0x100, "read, bad rkey");
}

static bool t_out_of_range(struct conn *c)
{
	return remote_error(c, IBV_WR_RDMA_WRITE,
			    c->peer.addr + BUF_SIZE - 100, c->peer.rkey,
			    "write past the end");
}

static bool t_no_write_access(struct conn *c)
{
	struct ibv_wc wc;

	EXPECT(remote_error(c, IBV_WR_RDMA_WRITE, c->peer.ro_addr,
			    c->peer.ro_rkey, "write to a read-only MR"),
	       "write to read-only");
	(void)wc;
	return true;
}

static bool t_ro_read_ok(struct conn *c)
{
	struct ibv_wc wc;

	EXPECT(!do_op(c, IBV_WR_RDMA_READ, 0, RO_SIZE, c->peer.ro_addr,
		      c->peer.ro_rkey, 0, 1, c->mr->lkey, &wc) &&
	       wc.status == IBV_WC_SUCCESS, "read of the read-only MR: %s",
	       ibv_wc_status_str(wc.status));
	EXPECT(local_check(c, 0, RO_SIZE, 1, 4242), "read-only MR data");
	return true;
}

static bool t_local_prot(struct conn *c)
{
	struct ibv_wc wc, wc2;
	struct ibv_recv_wr rwr = {}, *bad;
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf, .length = 64,
			       .lkey = c->mr->lkey };

	/* A receive that must be flushed when the QP fails. */
	rwr.wr_id = 99;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	EXPECT(!ibv_post_recv(c->qp, &rwr, &bad), "post_recv");
	EXPECT(!do_op(c, IBV_WR_RDMA_WRITE, 0, 4096, c->peer.addr,
		      c->peer.rkey, 0, 1, c->mr->lkey ^ 0x40, &wc),
	       "post/poll failed");
	EXPECT(wc.status == IBV_WC_LOC_PROT_ERR, "status %s, want local protection error",
	       ibv_wc_status_str(wc.status));
	EXPECT(!poll_one(c, &wc2) && wc2.wr_id == 99 &&
	       wc2.status == IBV_WC_WR_FLUSH_ERR, "receive not flushed");
	return true;
}

static bool t_flush(struct conn *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_recv_wr rwr[8], *bad;
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf, .length = 64,
			       .lkey = c->mr->lkey };
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 8; i++) {
		memset(&rwr[i], 0, sizeof(rwr[i]));
		rwr[i].wr_id = 1000 + i;
		rwr[i].sg_list = &sge;
		rwr[i].num_sge = 1;
		rwr[i].next = i < 7 ? &rwr[i + 1] : NULL;
	}
	EXPECT(!ibv_post_recv(c->qp, rwr, &bad), "post_recv");
	EXPECT(!ibv_modify_qp(c->qp, &a, IBV_QP_STATE), "modify to ERR");
	for (i = 0; i < 8; i++) {
		EXPECT(!poll_one(c, &wc), "flush completion %d missing", i);
		EXPECT(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 1000u + i,
		       "completion %d: %s wr_id %llu", i,
		       ibv_wc_status_str(wc.status),
		       (unsigned long long)wc.wr_id);
	}
	/* Posting in ERR completes at once, flushed. */
	rwr[0].next = NULL;
	EXPECT(!ibv_post_recv(c->qp, rwr, &bad), "post_recv in ERR");
	EXPECT(!poll_one(c, &wc) && wc.status == IBV_WC_WR_FLUSH_ERR,
	       "post in ERR not flushed");
	return true;
}

/* WRITE and READ complete while the server process is stopped. */
static bool t_one_sided(struct conn *c)
{
	struct ibv_wc wc;
	bool ok = true;

	EXPECT(stop_pid > 0, "needs -S PID");
	EXPECT(!ctl(c, CMD_FILL, 600, 0, 65536, 0, 0), "fill");
	EXPECT(!kill(stop_pid, SIGSTOP), "SIGSTOP: %s", strerror(errno));
	usleep(100000);
	local_fill(c, 0, 65536, 1, 601);
	if (do_op(c, IBV_WR_RDMA_WRITE, 0, 65536, c->peer.addr + 65536,
		  c->peer.rkey, 0, 1, c->mr->lkey, &wc) ||
	    wc.status != IBV_WC_SUCCESS) {
		printf("# write to a stopped process failed\n");
		ok = false;
	}
	memset(c->buf, 0, 2 * 65536);
	if (ok && (do_op(c, IBV_WR_RDMA_READ, 65536, 65536, c->peer.addr,
			 c->peer.rkey, 0, 1, c->mr->lkey, &wc) ||
		   wc.status != IBV_WC_SUCCESS ||
		   !local_check(c, 65536, 65536, 1, 600))) {
		printf("# read from a stopped process failed\n");
		ok = false;
	}
	kill(stop_pid, SIGCONT);
	EXPECT(ok, "one-sided operations");
	EXPECT(!ctl(c, CMD_CHECK, 601, 65536, 65536, 0, 0),
	       "data written while stopped is wrong");
	return true;
}

/* A SEND that arrives before its receive is posted completes after RNR. */
static bool t_rnr(struct conn *c)
{
	struct ibv_wc wc;

	EXPECT(!ctl(c, CMD_RECV_LATER, 31, 8192, 4096, 0, 0), "recv later");
	local_fill(c, 0, 2000, 1, 31);
	EXPECT(!do_op(c, IBV_WR_SEND, 0, 2000, 0, 0, 0, 1, c->mr->lkey, &wc),
	       "post/poll failed");
	EXPECT(wc.status == IBV_WC_SUCCESS, "status %s",
	       ibv_wc_status_str(wc.status));
	EXPECT(!ctl(c, CMD_RECV_WAIT, 31, 8192, 2000, 0, IBV_WC_RECV),
	       "receive side check failed");
	return true;
}

/* rnr_retry 0: no receive ever comes, the SEND fails at once. */
static bool t_rnr_exhausted(struct conn *c)
{
	struct ibv_wc wc;

	local_fill(c, 0, 100, 1, 32);
	EXPECT(!do_op(c, IBV_WR_SEND, 0, 100, 0, 0, 0, 1, c->mr->lkey, &wc),
	       "post/poll failed");
	EXPECT(wc.status == IBV_WC_RNR_RETRY_EXC_ERR,
	       "status %s, want RNR retry exceeded",
	       ibv_wc_status_str(wc.status));
	return true;
}

/* The peer's QP disappears: retry_cnt timeouts, then an error. */
static bool t_retry_exceeded(struct conn *c)
{
	struct timespec t0, t1;
	struct ibv_wc wc;
	double secs;

	EXPECT(!ctl(c, CMD_DESTROY_QP, 0, 0, 0, 0, 0), "destroy peer QP");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT(!do_op(c, IBV_WR_RDMA_WRITE, 0, 4096, c->peer.addr,
		      c->peer.rkey, 0, 1, c->mr->lkey, &wc), "post/poll failed");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	EXPECT(wc.status == IBV_WC_RETRY_EXC_ERR,
	       "status %s, want retry exceeded", ibv_wc_status_str(wc.status));
	/* timeout 10 is 4.2 ms: 4 tries take well under 2 s, even here. */
	EXPECT(secs < 2.0, "took %.2f s", secs);
	printf("# retry exceeded after %.3f s\n", secs);
	return true;
}

static const struct {
	const char *name;
	bool (*fn)(struct conn *c);
} tests[] = {
	{ "write", t_write },
	{ "read", t_read },
	{ "send", t_send },
	{ "write_imm", t_write_imm },
	{ "bad_rkey_write", t_bad_rkey },
	{ "bad_rkey_read", t_bad_rkey_read },
	{ "out_of_range", t_out_of_range },
	{ "no_write_access", t_no_write_access },
	{ "read_only_mr_read", t_ro_read_ok },
	{ "local_protection", t_local_prot },
	{ "flush", t_flush },
	{ "one_sided", t_one_sided },
	{ "rnr", t_rnr },
	{ "rnr_exhausted", t_rnr_exhausted },
	{ "retry_exceeded", t_retry_exceeded },
};

/* Is @name one of the comma-separated names in @list? */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while ((p = strstr(p, name))) {
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
		p += n;
	}
	return false;
}

static int client(const char *host, const char *only)
{
	unsigned int i;
	char name[128];

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		struct conn c = {};
		bool ok;

		if (only && !listed(only, tests[i].name))
			continue;
		if (tests[i].fn == t_one_sided && !stop_pid)
			continue;
		qp_timeout = tests[i].fn == t_retry_exceeded ? 10 : 14;
		qp_retry_cnt = tests[i].fn == t_retry_exceeded ? 3 : 7;
		qp_rnr_retry = tests[i].fn == t_rnr_exhausted ? 0 : 7;
		client_connect(&c, host);
		ok = tests[i].fn(&c);
		ctl(&c, CMD_QUIT, 0, 0, 0, 0, 0);
		conn_close(&c);
		snprintf(name, sizeof(name), "%s", tests[i].name);
		result(ok, name);
	}
	printf("# %d tests, %d failed\n", ntest, nfail);
	return nfail ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int opt;

	srand(getpid() ^ time(NULL));
	while ((opt = getopt(argc, argv, "d:g:p:t:S:m:v")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 't': only = optarg; break;
		case 'S': stop_pid = atoi(optarg); break;
		case 'm': max_size = strtoul(optarg, NULL, 0); break;
		case 'v': verbose = 1; break;
		default:
			fprintf(stderr, "usage: %s -d DEV [-g GIDX] [-p PORT] [-t TESTS] [-S PID] [HOST]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind == argc) {
		server();
		return 0;
	}
	return client(argv[optind], only);
}
