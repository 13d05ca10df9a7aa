// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_xfer: RC data-integrity and error-path tests between two verbs
 * devices (srdma or any other, such as rdma_rxe), over one TCP control
 * connection.
 *
 *   server: srdma_xfer -d DEV [-g GIDX] [-p PORT] [-O] [-D]
 *   client: srdma_xfer -d DEV [-g GIDX] [-p PORT] [-t TEST] [-S PID] [-O] [-D]
 *                      [-m MAXSIZE] HOST
 *
 * The client runs the tests and prints one KTAP line per test; it exits 0
 * only if all pass. Every test connects a fresh QP pair. Data is a seeded
 * pseudo-random pattern, checked byte for byte on the side it lands on; the
 * server checks its memory on the client's request over TCP.
 *
 * Every completion either side polls is checked field by field against
 * what the verbs spec defines for it (expect_wc()), with a distinct 64-bit
 * wr_id for every work request; the server reports a mismatch it sees to
 * the client, which prints it.
 *
 * -S PID: SIGSTOP PID (the server) around the one_sided test.
 * -O: this side's MRs are on-demand paging MRs (IBV_ACCESS_ON_DEMAND) over
 *     memory not touched before (its pages come in as srdma needs them).
 * -D: this side's data buffer is a dma-buf (from udmabuf where the kernel
 *     has it, else a vgem buffer; the process maps it from the dma-buf),
 *     registered with ibv_reg_dmabuf_mr() at its mapped address as iova.
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
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "srdma_test.h"

#define BUF_SIZE	(4u << 20)	/* each side's registered buffer */
#define RO_SIZE		(64u << 10)	/* a read-only window on the server */
#define RECV_OFF	(2u << 20)	/* where the client receives SENDs */
#define MAX_SGE		4

enum cmd {
	CMD_FILL = 1,	/* fill [off, off+len) with pattern(seed) */
	CMD_CHECK,	/* check [off, off+len) against pattern(seed) */
	CMD_RECV,	/* post receive wr_id of len at off */
	CMD_RECV_WAIT,	/* wait for receive wr_id: check the completion, data */
	CMD_QUIT,
	CMD_RECV_LATER,	/* reply, then post receive wr_id after 300 ms */
	CMD_DESTROY_QP,	/* destroy the server's QP: the peer goes silent */
	CMD_SEND,	/* SEND pattern(seed) of len from off (with imm) */
};

struct ctl {
	uint32_t cmd;
	uint32_t seed;
	uint32_t off;
	uint32_t len;
	uint32_t imm;		/* the immediate, when with_imm */
	uint32_t opcode;	/* CMD_RECV_WAIT: the expected ibv_wc_opcode */
	int32_t status;		/* reply: 0 ok, else an error code */
	uint32_t with_imm;	/* an immediate is sent or expected */
	uint64_t wr_id;		/* CMD_RECV*: the receive's wr_id */
	char msg[400];		/* reply: what went wrong, when status != 0 */
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
	int drm, dmabuf;	/* -D: vgem and the buffer's dma-buf */
	uint32_t gem;
};

/* srdma_test_slow(): so that a slow machine is not taken for a lost peer. */
static int slow;

/* The RTS attributes of a connection that a test may choose. */
struct qp_params {
	uint8_t timeout;	/* local ACK timeout: 4.096 us * 2^timeout */
	uint8_t retry_cnt;	/* retries after a timeout */
	uint8_t rnr_retry;	/* retries after an RNR NAK; 7 is forever */
};

/* The server's and most tests': ACK timeout 67 ms, 7 retries, RNR forever. */
static const struct qp_params qp_default = { 14, 7, 7 };

static const char *devname = "srdma0";
static uint32_t max_size = 1u << 20;
static int gid_index = 1;
static const char *port = "18515";
static bool odp;		/* -O: on-demand paging MRs */
static bool dmabuf;		/* -D: the data buffer is a dma-buf */
static int verbose;
/*
 * The local device is srdma. Then the two RC receive completion fields
 * that the spec defines for UD only are asserted too: srdma reports the
 * peer's QPN in src_qp and never sets IBV_WC_GRH. rdma_rxe reports src_qp
 * 0 and sets IBV_WC_GRH on every RC receive, which the spec allows.
 */
static bool local_srdma;

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

/* Why the last check failed: printed as a KTAP comment, sent by the server. */
static char why[400];

static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("# %s\n", why);
	fflush(stdout);
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

/* ---- completions ---- */

/*
 * What one completion must say. Per the verbs spec (IBTA vol. 1, Poll for
 * Completion; ibv_poll_cq(3)): an error completion defines only wr_id,
 * status and qp_num. A successful one also defines the opcode; byte_len
 * for receives (the bytes received, or a WRITE with immediate's length)
 * and for RDMA READ (the length read), but not for SEND and RDMA WRITE,
 * where rdma_rxe reports the length and srdma 0; IBV_WC_WITH_IMM and
 * imm_data for receives, exactly when an immediate came. On the send side
 * IBV_WC_WITH_IMM is left to the device (rdma_rxe sets it for an
 * operation with immediate, srdma does not), and no other flag may be set.
 * src_qp and IBV_WC_GRH are defined for UD only: see local_srdma.
 */
struct wc_want {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	bool recv;		/* a receive completion */
	bool has_len;		/* byte_len is defined: receives, READ */
	uint32_t byte_len;
	bool imm;		/* an immediate was sent */
	uint32_t imm_data;	/* receives: its value, host order */
	uint32_t src_qp;	/* receives: the peer's QPN */
	uint32_t qp_num;	/* the local QP's number */
};

static const char *wc_opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "another opcode";
	}
}

static enum ibv_wc_opcode wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	default:
		return IBV_WC_SEND;
	}
}

static const char *wr_opcode_str(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ";
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	default: return "another opcode";
	}
}

/* A distinct wr_id for every work request, with the high bits in use. */
static uint64_t next_wr_id(void)
{
	static uint64_t seq;

	return 0xa5c3ull << 48 | ((uint64_t)getpid() & 0xffff) << 32 | ++seq;
}

/* Append printf(@fmt, ...) to the string in @buf of @size bytes. */
static void __attribute__((format(printf, 3, 4)))
append(char *buf, size_t size, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
}

/*
 * Does @wc say what @want says? If not, say() which fields differ, each
 * with the value found and the value wanted, after @what.
 */
static bool expect_wc(const struct ibv_wc *wc, const struct wc_want *want,
		      const char *what)
{
	unsigned int need, allow;
	char d[320] = "";

	if (wc->wr_id != want->wr_id)
		append(d, sizeof(d), " wr_id %#llx want %#llx;",
		       (unsigned long long)wc->wr_id,
		       (unsigned long long)want->wr_id);
	if (wc->status != want->status)
		append(d, sizeof(d), " status %s want %s;",
		       ibv_wc_status_str(wc->status),
		       ibv_wc_status_str(want->status));
	if (wc->qp_num != want->qp_num)
		append(d, sizeof(d), " qp_num %u want %u;", wc->qp_num,
		       want->qp_num);
	if (wc->status != IBV_WC_SUCCESS || want->status != IBV_WC_SUCCESS)
		goto out;
	if (wc->opcode != want->opcode)
		append(d, sizeof(d), " opcode %s (%d) want %s;",
		       wc_opcode_str(wc->opcode), wc->opcode,
		       wc_opcode_str(want->opcode));
	if (want->has_len && wc->byte_len != want->byte_len)
		append(d, sizeof(d), " byte_len %u want %u;", wc->byte_len,
		       want->byte_len);
	/* The flags that must be set, and those that may be. */
	if (want->recv) {
		need = want->imm ? IBV_WC_WITH_IMM : 0;
		allow = local_srdma ? 0 : IBV_WC_GRH;
	} else {
		need = 0;
		allow = want->imm ? IBV_WC_WITH_IMM : 0;
	}
	if ((wc->wc_flags & ~allow) != need)
		append(d, sizeof(d), " wc_flags %#x want %#x (%#x allowed);",
		       wc->wc_flags, need, allow);
	if (want->recv && want->imm && (wc->wc_flags & IBV_WC_WITH_IMM) &&
	    ntohl(wc->imm_data) != want->imm_data)
		append(d, sizeof(d), " imm_data %#x want %#x;",
		       ntohl(wc->imm_data), want->imm_data);
	if (want->recv && local_srdma && wc->src_qp != want->src_qp)
		append(d, sizeof(d), " src_qp %u want %u;", wc->src_qp,
		       want->src_qp);
out:
	if (!d[0])
		return true;
	say("%s: completion differs:%s", what, d);
	return false;
}

/* ---- connections ---- */

/*
 * Is @dev an srdma device? Its node description says so, as libsrdma
 * matches it: the name can be anything.
 */
static bool is_srdma(struct ibv_device *dev)
{
	char path[sizeof(dev->ibdev_path) + 16], desc[80] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/node_desc", dev->ibdev_path);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(desc, sizeof(desc), f))
		desc[0] = 0;
	fclose(f);
	desc[strcspn(desc, "\n")] = 0;
	return !strcmp(desc, "srdma");
}

static struct ibv_context *open_dev(void)
{
	static bool told;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		die("no devices");
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname)) {
			ctx = ibv_open_device(list[i]);
			local_srdma = is_srdma(list[i]);
		}
	ibv_free_device_list(list);
	if (!ctx)
		die("cannot open %s", devname);
	if (!told) {
		printf("# %s: %s\n", devname, local_srdma ?
		       "srdma, RC receive src_qp and wc_flags asserted" :
		       "not srdma, RC receive src_qp and IBV_WC_GRH not asserted");
		fflush(stdout);
		told = true;
	}
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

	c->ctx = open_dev();
	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd)
		die("alloc_pd: %s", strerror(errno));
	/*
	 * Fresh anonymous memory: zero, and with -O not present yet; with
	 * -D a new udmabuf (a zeroed memfd) or vgem buffer (zeroed too,
	 * 1024 x 1024 pixels of 32 bits).
	 */
	c->drm = c->dmabuf = -1;
	if (dmabuf) {
		errno = srdma_test_udmabuf(BUF_SIZE, &c->dmabuf);
		if (errno && errno != ENODEV)
			die("udmabuf: %s", strerror(errno));
		if (errno) {
			c->drm = srdma_test_vgem_open();
			if (c->drm < 0)
				die("no udmabuf or vgem device (modprobe vgem)");
			errno = srdma_test_vgem_buf(c->drm, 1024,
						    BUF_SIZE / 4096, 1,
						    &c->gem, &c->dmabuf);
			if (errno)
				die("vgem buffer: %s", strerror(errno));
		}
		printf("# data buffer: a dma-buf from %s\n",
		       c->drm < 0 ? "udmabuf" : "vgem");
		c->buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
			      MAP_SHARED, c->dmabuf, 0);
	} else {
		c->buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	c->ro_buf = mmap(NULL, RO_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->buf == MAP_FAILED || c->ro_buf == MAP_FAILED)
		die("no memory");
	pattern(c->ro_buf, RO_SIZE, 4242);
	if (dmabuf)
		c->mr = ibv_reg_dmabuf_mr(c->pd, 0, BUF_SIZE, (uintptr_t)c->buf,
					  c->dmabuf, IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_REMOTE_READ);
	else
		c->mr = ibv_reg_mr(c->pd, c->buf, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   (odp ? IBV_ACCESS_ON_DEMAND : 0));
	c->ro_mr = ibv_reg_mr(c->pd, c->ro_buf, RO_SIZE,
			      IBV_ACCESS_REMOTE_READ |
			      (odp ? IBV_ACCESS_ON_DEMAND : 0));
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
	if (srdma_test_qp_init_access(c->qp, IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_LOCAL_WRITE))
		die("modify_qp INIT: %s", strerror(errno));
}

static void conn_connect(struct conn *c, const struct qp_params *qp)
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
	if (srdma_test_read_full(c->sock, &c->peer, sizeof(c->peer)))
		die("peer closed during the exchange");
	if (ibv_query_port(c->ctx, 1, &pa))
		die("query_port");

	srdma_test_rtr_attr(&a, c->peer.qpn, gid_index, &c->peer.gid,
			    pa.active_mtu);
	a.rq_psn = c->peer.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	if (ibv_modify_qp(c->qp, &a, SRDMA_TEST_RTR_MASK))
		die("modify_qp RTR: %s", strerror(errno));
	srdma_test_rts_attr(&a);
	a.timeout = qp->timeout ? qp->timeout + slow : 0;
	a.retry_cnt = qp->retry_cnt;
	a.rnr_retry = qp->rnr_retry;
	a.sq_psn = me.psn;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(c->qp, &a, SRDMA_TEST_RTS_MASK))
		die("modify_qp RTS: %s", strerror(errno));
	/* Both sides ready before any traffic. */
	xwrite(c->sock, &me.qpn, 4);
	if (srdma_test_read_full(c->sock, &me.qpn, 4))
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
	munmap(c->buf, BUF_SIZE);
	munmap(c->ro_buf, RO_SIZE);
	if (c->dmabuf >= 0)
		close(c->dmabuf);
	if (c->drm >= 0) {
		srdma_test_vgem_close(c->drm, c->gem);
		close(c->drm);
	}
	close(c->sock);
}

/* How long to wait for a completion, in seconds. */
static int wait_secs(void)
{
	return 20 * (1 + slow);
}

/* Wait up to wait_secs() for one completion. */
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
		if (t.tv_sec - t0.tv_sec > wait_secs())
			return -1;
		usleep(50);
	}
}

/* Nothing more on the CQ: no completion doubled or made up. */
static bool cq_empty(struct conn *c, const char *what)
{
	struct ibv_wc wc;
	int n;

	n = ibv_poll_cq(c->cq, 1, &wc);
	if (!n)
		return true;
	if (n < 0)
		say("%s: poll_cq failed (%d)", what, n);
	else
		say("%s: then an unexpected completion: wr_id %#llx status %s"
		    " opcode %s qp_num %u", what, (unsigned long long)wc.wr_id,
		    ibv_wc_status_str(wc.status), wc_opcode_str(wc.opcode),
		    wc.qp_num);
	return false;
}

/* ---- work requests, for both sides ---- */

static int post_one_recv(struct conn *c, uint32_t off, uint32_t len,
			 uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf + off, .length = len,
			       .lkey = c->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = wr_id, .sg_list = &sge,
				   .num_sge = 1 }, *bad;

	return ibv_post_recv(c->qp, &rwr, &bad);
}

/*
 * Wait for the receive @wr_id into [@off, @off + @len) of pattern(@seed),
 * completed as @opcode (with immediate @imm if @with_imm), and check it and
 * the data. @len is also the byte_len it must report: the bytes a SEND
 * brought, or the length of a WRITE with immediate.
 */
static bool recv_wait(struct conn *c, uint64_t wr_id,
		      enum ibv_wc_opcode opcode, uint32_t off, uint32_t len,
		      uint32_t seed, bool with_imm, uint32_t imm)
{
	struct wc_want want = {
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = opcode,
		.recv = true,
		.has_len = true,
		.byte_len = len,
		.imm = with_imm,
		.imm_data = imm,
		.src_qp = c->peer.qpn,
		.qp_num = c->qp->qp_num,
	};
	struct ibv_wc wc;
	char what[64];
	long bad;

	snprintf(what, sizeof(what), "%s of %u bytes%s", wc_opcode_str(opcode),
		 len, with_imm ? " with immediate" : "");
	if (poll_one(c, &wc)) {
		say("%s: no completion in %d s", what, wait_secs());
		return false;
	}
	if (!expect_wc(&wc, &want, what))
		return false;
	/* The data: a SEND's, or the WRITE's it announces. */
	bad = check_pattern(c->buf + off, len, seed);
	if (bad >= 0) {
		say("%s: data differs at byte %ld", what, bad);
		return false;
	}
	return cq_empty(c, what);
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

/*
 * Post one signaled RDMA or SEND work request over up to MAX_SGE SGEs and
 * wait for its completion, which must have @status and, if that is
 * success, every field a send-side completion defines; then nothing else
 * may be on the CQ. False, with the reason said, if not.
 */
static bool do_op(struct conn *c, enum ibv_wr_opcode op, uint32_t loff,
		  uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm,
		  int nsge, uint32_t lkey, enum ibv_wc_status status)
{
	struct wc_want want = {
		.wr_id = next_wr_id(),
		.status = status,
		.opcode = wc_opcode_of(op),
		.has_len = op == IBV_WR_RDMA_READ,
		.byte_len = len,
		.imm = op == IBV_WR_SEND_WITH_IMM ||
		       op == IBV_WR_RDMA_WRITE_WITH_IMM,
		.qp_num = c->qp->qp_num,
	};
	struct ibv_sge sge[MAX_SGE];
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_wc wc;
	char what[80];

	snprintf(what, sizeof(what), "%s of %u bytes (%d SGEs)",
		 wr_opcode_str(op), len, nsge);
	sge_layout(c, loff, len, nsge, lkey, sge);
	wr.wr_id = want.wr_id;
	wr.opcode = op;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(c->qp, &wr, &bad)) {
		say("%s: post_send: %s", what, strerror(errno));
		return false;
	}
	if (poll_one(c, &wc)) {
		say("%s: no completion in %d s", what, wait_secs());
		return false;
	}
	if (!expect_wc(&wc, &want, what))
		return false;
	return status != IBV_WC_SUCCESS || cq_empty(c, what);
}

/* Scatter pattern(seed) over the SGE layout do_op uses, or check it. */
static void local_fill(struct conn *c, uint32_t loff, uint32_t len, int nsge,
		       uint32_t seed)
{
	uint8_t *tmp = malloc(len ? len : 1);
	struct ibv_sge sge[MAX_SGE];
	uint32_t i, done = 0;

	if (!tmp)
		die("no memory");
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

	if (!tmp)
		die("no memory");
	sge_layout(c, loff, len, nsge, 0, sge);
	for (i = 0; i < (uint32_t)nsge; done += sge[i++].length)
		memcpy(tmp + done, (void *)(uintptr_t)sge[i].addr, sge[i].length);
	bad = check_pattern(tmp, len, seed);
	free(tmp);
	if (bad >= 0)
		printf("# data differs at byte %ld of %u\n", bad, len);
	return bad < 0;
}

/* ---- server ---- */

static void serve_one(struct conn *c)
{
	struct ctl m;
	long bad;

	while (!srdma_test_read_full(c->sock, &m, sizeof(m))) {
		m.status = 0;
		why[0] = 0;
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
			bad = check_pattern(c->buf + m.off, m.len, m.seed);
			if (bad >= 0) {
				say("%u bytes at %u: byte %ld differs",
				    m.len, m.off, bad);
				m.status = EIO;
			}
			break;
		case CMD_RECV:
			m.status = post_one_recv(c, m.off, m.len, m.wr_id);
			if (m.status)
				say("post_recv: %s", strerror(m.status));
			break;
		case CMD_RECV_WAIT:
			if (!recv_wait(c, m.wr_id, m.opcode, m.off, m.len,
				       m.seed, m.with_imm, m.imm))
				m.status = EPROTO;
			break;
		case CMD_RECV_LATER:
			xwrite(c->sock, &m, sizeof(m));
			usleep(300000);
			post_one_recv(c, m.off, m.len, m.wr_id);
			continue;
		case CMD_SEND:
			local_fill(c, m.off, m.len, 1, m.seed);
			if (!do_op(c, m.with_imm ? IBV_WR_SEND_WITH_IMM :
				   IBV_WR_SEND, m.off, m.len, 0, 0, m.imm, 1,
				   c->mr->lkey, IBV_WC_SUCCESS))
				m.status = EPROTO;
			break;
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
		snprintf(m.msg, sizeof(m.msg), "%s", m.status ? why : "");
		xwrite(c->sock, &m, sizeof(m));
	}
}

static void server(void)
{
	int ls = srdma_test_tcp_listen(port, 4);

	if (ls < 0)
		die("listen on port %s: %s", port, strerror(errno));
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct conn c = {};

		c.sock = accept(ls, NULL, NULL);
		if (c.sock < 0)
			die("accept");
		conn_setup(&c);
		conn_connect(&c, &qp_default);
		serve_one(&c);
		conn_close(&c);
	}
}

/* ---- client ---- */

/* One request to the server; its status, with its reason said if not 0. */
static int ctl_msg(struct conn *c, struct ctl *m)
{
	xwrite(c->sock, m, sizeof(*m));
	if (srdma_test_read_full(c->sock, m, sizeof(*m)))
		die("server went away");
	m->msg[sizeof(m->msg) - 1] = 0;
	if (m->status)
		printf("# server: %s\n", m->msg[0] ? m->msg :
		       strerror(m->status));
	return m->status;
}

static int ctl(struct conn *c, uint32_t cmd, uint32_t seed, uint32_t off,
	       uint32_t len)
{
	struct ctl m = { .cmd = cmd, .seed = seed, .off = off, .len = len };

	return ctl_msg(c, &m);
}

/* The server posts receive @wr_id of @len bytes at @off (CMD_RECV*). */
static int srv_recv(struct conn *c, uint32_t cmd, uint64_t wr_id,
		    uint32_t off, uint32_t len)
{
	struct ctl m = { .cmd = cmd, .off = off, .len = len, .wr_id = wr_id };

	return ctl_msg(c, &m);
}

/* The server waits for receive @wr_id and checks it: see recv_wait(). */
static int srv_recv_wait(struct conn *c, uint64_t wr_id,
			 enum ibv_wc_opcode opcode, uint32_t off, uint32_t len,
			 uint32_t seed, bool with_imm, uint32_t imm)
{
	struct ctl m = { .cmd = CMD_RECV_WAIT, .seed = seed, .off = off,
			 .len = len, .imm = imm, .opcode = opcode,
			 .with_imm = with_imm, .wr_id = wr_id };

	return ctl_msg(c, &m);
}

static int client_connect(struct conn *c, const char *host,
			  const struct qp_params *qp)
{
	c->sock = srdma_test_tcp_connect(host, port, 100);
	if (c->sock < 0)
		die("cannot connect to %s", host);
	conn_setup(c);
	conn_connect(c, qp);
	return 0;
}

static const uint32_t sizes[] = {
	1, 2, 3, 63, 64, 255, 1000, 1024, 1025, 4095, 4096, 5000, 65536,
	100000, 262144, 1048576,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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
	uint32_t i, seed, roff;
	int nsge;

	for (i = 0; i < NSIZES && sizes[i] <= max_size; i++) {
		seed = 100 + i;
		nsge = sizes[i] >= 3 ? 1 + i % 3 : 1;
		roff = (i * 4099) % 4096;
		local_fill(c, 0, sizes[i], nsge, seed);
		EXPECT(do_op(c, IBV_WR_RDMA_WRITE, 0, sizes[i],
			     c->peer.addr + roff, c->peer.rkey, 0, nsge,
			     c->mr->lkey, IBV_WC_SUCCESS), "size %u", sizes[i]);
		EXPECT(!ctl(c, CMD_CHECK, seed, roff, sizes[i]),
		       "size %u (%d SGEs): remote data differs", sizes[i], nsge);
	}
	return true;
}

static bool t_read(struct conn *c)
{
	uint32_t i, seed, roff;
	int nsge;

	for (i = 0; i < NSIZES && sizes[i] <= max_size; i++) {
		seed = 200 + i;
		nsge = sizes[i] >= 3 ? 1 + (i + 1) % 3 : 1;
		roff = (i * 977) % 4096;
		EXPECT(!ctl(c, CMD_FILL, seed, roff, sizes[i]), "fill");
		memset(c->buf, 0, sizes[i] + 4 * 64);
		EXPECT(do_op(c, IBV_WR_RDMA_READ, 0, sizes[i],
			     c->peer.addr + roff, c->peer.rkey, 0, nsge,
			     c->mr->lkey, IBV_WC_SUCCESS), "size %u", sizes[i]);
		EXPECT(local_check(c, 0, sizes[i], nsge, seed),
		       "size %u (%d SGEs): read data differs", sizes[i], nsge);
	}
	return true;
}

/*
 * The client SENDs @len bytes (over @nsge SGEs, with immediate @imm if
 * @with_imm) into a receive larger than that on the server; both sides
 * check their completion, the server the data.
 */
static bool send_to_server(struct conn *c, uint32_t len, int nsge,
			   uint32_t seed, bool with_imm, uint32_t imm)
{
	uint64_t rid = next_wr_id();

	EXPECT(!srv_recv(c, CMD_RECV, rid, 8192, len + 100), "server recv");
	local_fill(c, 0, len, nsge, seed);
	EXPECT(do_op(c, with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, 0, len,
		     0, 0, imm, nsge, c->mr->lkey, IBV_WC_SUCCESS),
	       "send of %u bytes", len);
	EXPECT(!srv_recv_wait(c, rid, IBV_WC_RECV, 8192, len, seed, with_imm,
			      imm), "send of %u bytes: receive side", len);
	return true;
}

/* The same from the server to the client. */
static bool send_to_client(struct conn *c, uint32_t len, uint32_t seed,
			   bool with_imm, uint32_t imm)
{
	struct ctl m = { .cmd = CMD_SEND, .seed = seed, .off = 0, .len = len,
			 .imm = imm, .with_imm = with_imm };
	uint64_t rid = next_wr_id();
	int ret;

	memset(c->buf + RECV_OFF, 0, len + 100);
	ret = post_one_recv(c, RECV_OFF, len + 100, rid);
	EXPECT(!ret, "post_recv: %s", strerror(ret));
	EXPECT(!ctl_msg(c, &m), "server's send of %u bytes", len);
	EXPECT(recv_wait(c, rid, IBV_WC_RECV, RECV_OFF, len, seed, with_imm,
			 imm), "server's send of %u bytes: receive side", len);
	return true;
}

static bool t_send(struct conn *c)
{
	static const uint32_t imm_lens[] = { 0, 3000, 65536 };
	static const uint32_t back_lens[] = { 0, 1, 4096, 65536 };
	uint32_t i;
	int nsge;

	for (i = 0; i < NSIZES && sizes[i] <= max_size; i++) {
		nsge = sizes[i] >= 3 ? 1 + i % 3 : 1;
		EXPECT(send_to_server(c, sizes[i], nsge, 300 + i, false, 0),
		       "size %u", sizes[i]);
	}
	/* SEND with immediate, of one and of many packets. */
	for (i = 0; i < ARRAY_SIZE(imm_lens) && imm_lens[i] <= max_size; i++)
		EXPECT(send_to_server(c, imm_lens[i], 1, 77 + i, true,
				      0xabcd1234 + i), "imm, size %u",
		       imm_lens[i]);
	/* The other way: the client's receive completions. */
	for (i = 0; i < ARRAY_SIZE(back_lens) && back_lens[i] <= max_size; i++)
		EXPECT(send_to_client(c, back_lens[i], 350 + i, i & 1,
				      0x600d0000 + i), "back, size %u",
		       back_lens[i]);
	return true;
}

/*
 * WRITE with immediate, of one packet and of many: each consumes the next
 * of the receives posted ahead on the server, whose completion reports
 * that receive's wr_id, the WRITE's length and the immediate. (A
 * multi-packet one once completed on srdma with wr_id 0: a receive taken
 * unchecked from the kernel's ring.) The 64 KiB one goes first, on the
 * fresh QP, as in that bug report.
 */
static bool t_write_imm(struct conn *c)
{
	static const uint32_t lens[] = { 65536, 0, 17, 4096, 70000, 1048576 };
	uint32_t len[ARRAY_SIZE(lens)], i, n = 0, imm;
	uint64_t rid[ARRAY_SIZE(lens)];
	int nsge;

	for (i = 0; i < ARRAY_SIZE(lens); i++)
		if (lens[i] <= max_size)
			len[n++] = lens[i];
	for (i = 0; i < n; i++) {
		rid[i] = next_wr_id();
		/* The receive's own size plays no part: 0 or 64 bytes. */
		EXPECT(!srv_recv(c, CMD_RECV, rid[i], (3u << 20) + i * 64,
				 i & 1 ? 64 : 0), "server recv");
	}
	for (i = 0; i < n; i++) {
		nsge = len[i] >= 3 ? 1 + i % 3 : 1;
		imm = 0x5eed0000 + i;
		local_fill(c, 0, len[i], nsge, 400 + i);
		EXPECT(do_op(c, IBV_WR_RDMA_WRITE_WITH_IMM, 0, len[i],
			     c->peer.addr + 4096, c->peer.rkey, imm, nsge,
			     c->mr->lkey, IBV_WC_SUCCESS), "len %u", len[i]);
		EXPECT(!srv_recv_wait(c, rid[i], IBV_WC_RECV_RDMA_WITH_IMM,
				      4096, len[i], 400 + i, true, imm),
		       "len %u: receive side", len[i]);
	}
	return true;
}

/*
 * The server keeps pattern 555 in [0, 64K); errors must not touch it.
 * (The responder QP goes to the error state after the NAK; nothing here
 * uses it again.)
 */
static bool remote_error(struct conn *c, enum ibv_wr_opcode op,
			 uint64_t raddr, uint32_t rkey, const char *what)
{
	EXPECT(!ctl(c, CMD_FILL, 555, 0, 65536), "fill");
	local_fill(c, 0, 4096, 1, 556);
	EXPECT(do_op(c, op, 0, 4096, raddr, rkey, 0, 1, c->mr->lkey,
		     IBV_WC_REM_ACCESS_ERR), "%s", what);
	EXPECT(!ctl(c, CMD_CHECK, 555, 0, 65536),
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
	return remote_error(c, IBV_WR_RDMA_WRITE, c->peer.ro_addr,
			    c->peer.ro_rkey, "write to a read-only MR");
}

static bool t_ro_read_ok(struct conn *c)
{
	EXPECT(do_op(c, IBV_WR_RDMA_READ, 0, RO_SIZE, c->peer.ro_addr,
		     c->peer.ro_rkey, 0, 1, c->mr->lkey, IBV_WC_SUCCESS),
	       "read of the read-only MR");
	EXPECT(local_check(c, 0, RO_SIZE, 1, 4242), "read-only MR data");
	return true;
}

/* A flushed completion of @wr_id: only wr_id, status, qp_num defined. */
static bool expect_flush(struct conn *c, uint64_t wr_id, const char *what)
{
	struct wc_want want = { .wr_id = wr_id,
				.status = IBV_WC_WR_FLUSH_ERR,
				.qp_num = c->qp->qp_num };
	struct ibv_wc wc;

	if (poll_one(c, &wc)) {
		say("%s: no completion in %d s", what, wait_secs());
		return false;
	}
	return expect_wc(&wc, &want, what);
}

static bool t_local_prot(struct conn *c)
{
	uint64_t rid = next_wr_id();
	int ret;

	/* A receive that must be flushed when the QP fails. */
	ret = post_one_recv(c, 0, 64, rid);
	EXPECT(!ret, "post_recv: %s", strerror(ret));
	EXPECT(do_op(c, IBV_WR_RDMA_WRITE, 0, 4096, c->peer.addr,
		     c->peer.rkey, 0, 1, c->mr->lkey ^ 0x40,
		     IBV_WC_LOC_PROT_ERR), "write with a bad lkey");
	EXPECT(expect_flush(c, rid, "the receive"), "receive not flushed");
	EXPECT(cq_empty(c, "flush"), "extra completion");
	return true;
}

static bool t_flush(struct conn *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_recv_wr rwr[8], *bad;
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf, .length = 64,
			       .lkey = c->mr->lkey };
	char what[32];
	int i;

	for (i = 0; i < 8; i++) {
		memset(&rwr[i], 0, sizeof(rwr[i]));
		rwr[i].wr_id = next_wr_id();
		rwr[i].sg_list = &sge;
		rwr[i].num_sge = 1;
		rwr[i].next = i < 7 ? &rwr[i + 1] : NULL;
	}
	EXPECT(!ibv_post_recv(c->qp, rwr, &bad), "post_recv");
	EXPECT(!ibv_modify_qp(c->qp, &a, IBV_QP_STATE), "modify to ERR");
	for (i = 0; i < 8; i++) {
		snprintf(what, sizeof(what), "flushed receive %d", i);
		EXPECT(expect_flush(c, rwr[i].wr_id, what), "%s", what);
	}
	EXPECT(cq_empty(c, "flush"), "extra completion");
	/* Posting in ERR completes at once, flushed. */
	rwr[0].next = NULL;
	rwr[0].wr_id = next_wr_id();
	EXPECT(!ibv_post_recv(c->qp, rwr, &bad), "post_recv in ERR");
	EXPECT(expect_flush(c, rwr[0].wr_id, "receive posted in ERR"),
	       "post in ERR not flushed");
	EXPECT(cq_empty(c, "flush in ERR"), "extra completion");
	return true;
}

/* WRITE and READ complete while the server process is stopped. */
static bool t_one_sided(struct conn *c)
{
	bool ok = true;

	EXPECT(stop_pid > 0, "needs -S PID");
	EXPECT(!ctl(c, CMD_FILL, 600, 0, 65536), "fill");
	EXPECT(!kill(stop_pid, SIGSTOP), "SIGSTOP: %s", strerror(errno));
	usleep(100000);
	local_fill(c, 0, 65536, 1, 601);
	if (!do_op(c, IBV_WR_RDMA_WRITE, 0, 65536, c->peer.addr + 65536,
		   c->peer.rkey, 0, 1, c->mr->lkey, IBV_WC_SUCCESS)) {
		printf("# write to a stopped process failed\n");
		ok = false;
	}
	memset(c->buf, 0, 2 * 65536);
	if (ok && (!do_op(c, IBV_WR_RDMA_READ, 65536, 65536, c->peer.addr,
			  c->peer.rkey, 0, 1, c->mr->lkey, IBV_WC_SUCCESS) ||
		   !local_check(c, 65536, 65536, 1, 600))) {
		printf("# read from a stopped process failed\n");
		ok = false;
	}
	kill(stop_pid, SIGCONT);
	EXPECT(ok, "one-sided operations");
	EXPECT(!ctl(c, CMD_CHECK, 601, 65536, 65536),
	       "data written while stopped is wrong");
	return true;
}

/* A SEND that arrives before its receive is posted completes after RNR. */
static bool t_rnr(struct conn *c)
{
	uint64_t rid = next_wr_id();

	EXPECT(!srv_recv(c, CMD_RECV_LATER, rid, 8192, 4096), "recv later");
	local_fill(c, 0, 2000, 1, 31);
	EXPECT(do_op(c, IBV_WR_SEND, 0, 2000, 0, 0, 0, 1, c->mr->lkey,
		     IBV_WC_SUCCESS), "send");
	EXPECT(!srv_recv_wait(c, rid, IBV_WC_RECV, 8192, 2000, 31, false, 0),
	       "receive side check failed");
	return true;
}

/* rnr_retry 0: no receive ever comes, the SEND fails at once. */
static bool t_rnr_exhausted(struct conn *c)
{
	local_fill(c, 0, 100, 1, 32);
	EXPECT(do_op(c, IBV_WR_SEND, 0, 100, 0, 0, 0, 1, c->mr->lkey,
		     IBV_WC_RNR_RETRY_EXC_ERR), "send without a receive");
	return true;
}

/* The peer's QP disappears: retry_cnt timeouts, then an error. */
static bool t_retry_exceeded(struct conn *c)
{
	struct timespec t0, t1;
	double secs;
	bool ok;

	EXPECT(!ctl(c, CMD_DESTROY_QP, 0, 0, 0), "destroy peer QP");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok = do_op(c, IBV_WR_RDMA_WRITE, 0, 4096, c->peer.addr, c->peer.rkey,
		   0, 1, c->mr->lkey, IBV_WC_RETRY_EXC_ERR);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	EXPECT(ok, "write to a destroyed QP");
	/* timeout 10 is 4.2 ms: 4 tries take well under 2 s, even here. */
	EXPECT(secs < 2.0, "took %.2f s", secs);
	printf("# retry exceeded after %.3f s\n", secs);
	return true;
}

/*
 * Every test, in the order they run, with the RTS attributes of its
 * connection: retry_exceeded must fail fast (timeout 10 is 4.2 ms, 3
 * retries), rnr_exhausted must not retry an RNR NAK at all.
 */
static const struct xfer_test {
	const char *name;
	bool (*fn)(struct conn *c);
	struct qp_params qp;	/* timeout, retry_cnt, rnr_retry */
	bool needs_stop_pid;	/* skipped without -S PID */
} tests[] = {
	{ "write",		t_write,		{ 14, 7, 7 }, false },
	{ "read",		t_read,			{ 14, 7, 7 }, false },
	{ "send",		t_send,			{ 14, 7, 7 }, false },
	{ "write_imm",		t_write_imm,		{ 14, 7, 7 }, false },
	{ "bad_rkey_write",	t_bad_rkey,		{ 14, 7, 7 }, false },
	{ "bad_rkey_read",	t_bad_rkey_read,	{ 14, 7, 7 }, false },
	{ "out_of_range",	t_out_of_range,		{ 14, 7, 7 }, false },
	{ "no_write_access",	t_no_write_access,	{ 14, 7, 7 }, false },
	{ "read_only_mr_read",	t_ro_read_ok,		{ 14, 7, 7 }, false },
	{ "local_protection",	t_local_prot,		{ 14, 7, 7 }, false },
	{ "flush",		t_flush,		{ 14, 7, 7 }, false },
	{ "one_sided",		t_one_sided,		{ 14, 7, 7 }, true },
	{ "rnr",		t_rnr,			{ 14, 7, 7 }, false },
	{ "rnr_exhausted",	t_rnr_exhausted,	{ 14, 7, 0 }, false },
	{ "retry_exceeded",	t_retry_exceeded,	{ 10, 3, 7 }, false },
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
	const struct xfer_test *t;

	for (t = tests; t < tests + ARRAY_SIZE(tests); t++) {
		struct conn c = {};
		bool ok;

		if (only && !listed(only, t->name))
			continue;
		if (t->needs_stop_pid && !stop_pid)
			continue;
		client_connect(&c, host, &t->qp);
		ok = t->fn(&c);
		ctl(&c, CMD_QUIT, 0, 0, 0);
		conn_close(&c);
		result(ok, t->name);
	}
	printf("# %d tests, %d failed\n", ntest, nfail);
	return nfail ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int opt;

	srand(getpid() ^ time(NULL));
	slow = srdma_test_slow();
	while ((opt = getopt(argc, argv, "d:g:p:t:S:m:vOD")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 't': only = optarg; break;
		case 'S': stop_pid = atoi(optarg); break;
		case 'm': max_size = strtoul(optarg, NULL, 0); break;
		case 'v': verbose = 1; break;
		case 'O': odp = true; break;
		case 'D': dmabuf = true; break;
		default:
			fprintf(stderr, "usage: %s -d DEV [-g GIDX] [-p PORT] [-t TESTS] [-S PID] [-O] [-D] [HOST]\n",
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
