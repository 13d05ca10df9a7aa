// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_atomic_pair: one 8-byte counter in a server's memory, incremented
 * by several client processes over RC atomics from another host (two
 * guests: selftests/wire/peer.sh). Any verbs device on either side
 * (srdma, rdma_rxe).
 *
 *   server: srdma_atomic_pair -d DEV [-p PORT] [-c CLIENTS]
 *   client: srdma_atomic_pair -d DEV [-p PORT] [-c CLIENTS] [-n FAA]
 *                             [-k CAS] HOST
 *
 * The client forks CLIENTS processes (default 2), each with its own
 * device context and RC QP to one QP of the server's; the server starts
 * them all at once when all have connected. Each fetches-and-adds 1 FAA
 * times (default 1000), DEPTH at a time, then increments the counter CAS
 * more times (default 100) by compare-and-swap, one at a time, retrying a
 * CAS that found another value. Every increment that took effect returns
 * the value it replaced. Each client checks every completion (wr_id in
 * posting order, status, opcode, byte_len 8, qp_num, no flags) and that
 * it saw no value twice, then sends its values to the server, which checks
 * that the counter ends at exactly CLIENTS * (FAA + CAS), that the values
 * of all clients together are each of 0 .. that total - 1 exactly once,
 * and that no other byte of its buffer changed. Its verdict goes back to
 * every client. Under loss this is what shows that the responder answered
 * each duplicate request from its atomic replay cache and never carried
 * one out twice: a FETCH ADD done twice leaves the counter one too high,
 * a COMPARE SWAP done twice returns the new value, so the client tries
 * again and one value is never handed out.
 *
 * The client exits 0 only if every process's checks and the server's
 * verdict passed; the server exits 0 if its checks passed.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "srdma_test.h"

#define DEPTH		8		/* FETCH ADDs in flight per client */
#define MAX_CLIENTS	8
#define MAX_OPS		100000		/* increments per client */
#define BUF_WORDS	512		/* the server's buffer: 4 KiB */
#define COUNTER		37		/* the counter's word in it */
#define GUARD(i)	(0x5a5a000000000000ull | (uint64_t)(i))
#define PSN		0x4242

/* Server to client, once connected. */
struct hello {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t clients;	/* the server's -c, -n and -k */
	uint32_t faa;
	uint32_t cas;
	uint64_t addr;		/* the counter */
	union ibv_gid gid;
};

/* Client to server, once connected. */
struct reply {
	uint32_t qpn;
	uint32_t psn;
	union ibv_gid gid;
};

/* Server to each client at the end. */
struct verdict {
	int32_t status;		/* 0: every check held */
	char msg[240];
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint64_t *buf;
	union ibv_gid gid;
	int gidx;
};

static const char *port = "18600";
static int nclients = 2;
static uint32_t n_faa = 1000, n_cas = 100;
static int slow;
static int me = -1;		/* the client process's number */

static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	va_list ap;

	if (me >= 0)
		printf("# client %d: ", me);
	else
		printf("# server: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

#define die(...) do { say(__VA_ARGS__); exit(2); } while (0)

static void xwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("control write: %s", strerror(errno));
}

static void side_open(struct side *s, size_t words, int access)
{
	s->ctx = srdma_test_open();
	if (!s->ctx)
		die("cannot open %s", srdma_test_devname());
	s->gidx = srdma_test_ipv4_gid(s->ctx, &s->gid);
	if (s->gidx < 0)
		die("no RoCEv2 IPv4 GID on %s", srdma_test_devname());
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	if (!s->pd || !s->cq)
		die("pd/cq: %s", strerror(errno));
	if (posix_memalign((void **)&s->buf, 4096, words * 8))
		die("no memory");
	memset(s->buf, 0, words * 8);
	s->mr = ibv_reg_mr(s->pd, s->buf, words * 8, access);
	if (!s->mr)
		die("reg_mr: %s", strerror(errno));
}

/* An RC QP of @s, in INIT with @access. */
static struct ibv_qp *qp_make(struct side *s, int access)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;

	qp = ibv_create_qp(s->pd, &init);
	if (!qp)
		die("create_qp: %s", strerror(errno));
	if (srdma_test_qp_init_access(qp, access))
		die("modify_qp INIT: %s", strerror(errno));
	return qp;
}

/* INIT -> RTR -> RTS towards @rqpn at @rgid, whose first PSN is PSN. */
static void qp_connect(struct ibv_qp *qp, const struct side *s,
		       uint32_t rqpn, const union ibv_gid *rgid)
{
	struct ibv_qp_attr a;

	srdma_test_rtr_attr(&a, rqpn, s->gidx, rgid, IBV_MTU_1024);
	a.rq_psn = PSN;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	if (ibv_modify_qp(qp, &a, SRDMA_TEST_RTR_MASK))
		die("modify_qp RTR: %s", strerror(errno));
	srdma_test_rts_attr(&a);
	a.timeout = 14 + slow;		/* 67 ms, longer on the debug kernel */
	a.sq_psn = PSN;
	a.max_rd_atomic = DEPTH;
	if (ibv_modify_qp(qp, &a, SRDMA_TEST_RTS_MASK))
		die("modify_qp RTS: %s", strerror(errno));
}

/* ---- server ---- */

static void server(void)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	uint64_t total = (uint64_t)nclients * (n_faa + n_cas), v, *vals;
	struct ibv_qp *qp[MAX_CLIENTS];
	int sock[MAX_CLIENTS], ls, one = 1, i, bad = 0;
	struct verdict vd = {};
	volatile uint64_t *w;
	struct side s = {};
	unsigned char *seen;
	struct ibv_wc wc;
	uint32_t n, j;

	side_open(&s, BUF_WORDS, access);
	for (j = 0; j < BUF_WORDS; j++)
		s.buf[j] = GUARD(j);
	w = &s.buf[COUNTER];
	*w = 0;
	seen = calloc(total, 1);
	vals = calloc(MAX_OPS, sizeof(*vals));
	if (!seen || !vals)
		die("no memory");
	ls = srdma_test_tcp_listen(port, MAX_CLIENTS);
	if (ls < 0)
		die("listen on port %s: %s", port, strerror(errno));
	for (i = 0; i < nclients; i++) {
		struct hello h = { .psn = PSN, .rkey = s.mr->rkey,
				   .clients = nclients, .faa = n_faa,
				   .cas = n_cas, .addr = (uintptr_t)w,
				   .gid = s.gid };
		struct reply r;

		sock[i] = accept(ls, NULL, NULL);
		if (sock[i] < 0)
			die("accept: %s", strerror(errno));
		qp[i] = qp_make(&s, access);
		h.qpn = qp[i]->qp_num;
		xwrite(sock[i], &h, sizeof(h));
		if (srdma_test_read_full(sock[i], &r, sizeof(r)))
			die("client %d went away while connecting", i);
		qp_connect(qp[i], &s, r.qpn, &r.gid);
	}
	close(ls);
	/* All connected: go, all at once. */
	for (i = 0; i < nclients; i++)
		xwrite(sock[i], &one, sizeof(one));

	/* Each client's values: its count, then the values. */
	for (i = 0; i < nclients && !bad; i++) {
		if (srdma_test_read_full(sock[i], &n, sizeof(n)) ||
		    n > MAX_OPS ||
		    srdma_test_read_full(sock[i], vals, n * sizeof(*vals))) {
			snprintf(vd.msg, sizeof(vd.msg),
				 "client %d sent no values", i);
			bad = 1;
			break;
		}
		if (n != n_faa + n_cas) {
			snprintf(vd.msg, sizeof(vd.msg),
				 "client %d counted %u increments, not %u",
				 i, n, n_faa + n_cas);
			bad = 1;
		}
		for (j = 0; j < n && !bad; j++) {
			v = vals[j];
			if (v >= total) {
				snprintf(vd.msg, sizeof(vd.msg),
					 "client %d got value %llu, beyond the %llu increments",
					 i, (unsigned long long)v,
					 (unsigned long long)total);
				bad = 1;
			} else if (seen[v]) {
				snprintf(vd.msg, sizeof(vd.msg),
					 "value %llu handed out twice (client %d's increment %u)",
					 (unsigned long long)v, i, j);
				bad = 1;
			}
			if (!bad)
				seen[v] = 1;
		}
	}
	for (v = 0; v < total && !bad; v++)
		if (!seen[v]) {
			snprintf(vd.msg, sizeof(vd.msg),
				 "value %llu never handed out",
				 (unsigned long long)v);
			bad = 1;
		}
	if (!bad && *w != total) {
		snprintf(vd.msg, sizeof(vd.msg),
			 "the counter is %llu after %llu increments",
			 (unsigned long long)*w, (unsigned long long)total);
		bad = 1;
	}
	for (j = 0; j < BUF_WORDS && !bad; j++)
		if (j != COUNTER && s.buf[j] != GUARD(j)) {
			snprintf(vd.msg, sizeof(vd.msg),
				 "word %u next to the counter changed to %#llx",
				 j, (unsigned long long)s.buf[j]);
			bad = 1;
		}
	/* The responder side completes nothing. */
	if (!bad && ibv_poll_cq(s.cq, 1, &wc)) {
		snprintf(vd.msg, sizeof(vd.msg),
			 "a completion on the server: wr_id %#llx status %s",
			 (unsigned long long)wc.wr_id,
			 ibv_wc_status_str(wc.status));
		bad = 1;
	}
	vd.status = bad;
	if (!bad)
		snprintf(vd.msg, sizeof(vd.msg),
			 "counter %llu: %d clients x (%u FETCH ADD + %u COMPARE SWAP), every value once",
			 (unsigned long long)*w, nclients, n_faa, n_cas);
	say("%s", vd.msg);
	for (i = 0; i < nclients; i++) {
		if (write(sock[i], &vd, sizeof(vd)) != sizeof(vd))
			say("client %d did not take the verdict", i);
		close(sock[i]);
	}
	for (i = 0; i < nclients; i++)
		ibv_destroy_qp(qp[i]);
	exit(bad);
}

/* ---- client ---- */

static int connect_to(const char *host)
{
	/* The server may not listen yet: retry for 120 s. */
	int fd = srdma_test_tcp_connect(host, port, 600);

	if (fd < 0)
		die("cannot connect to %s", host);
	return fd;
}

/* Wait up to 20 s (longer when slow) for at least one completion. */
static int poll_some(struct ibv_cq *cq, struct ibv_wc *wc, int max)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, max, wc);
		if (n)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 20 * (1 + slow))
			return 0;
		usleep(20);
	}
}

static int post_atomic(struct ibv_qp *qp, struct side *s, uint64_t wr_id,
		       enum ibv_wr_opcode op, const struct hello *h,
		       uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&s->buf[wr_id % DEPTH], .length = 8,
		.lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.atomic.remote_addr = h->addr;
	wr.wr.atomic.rkey = h->rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	s->buf[wr_id % DEPTH] = UINT64_MAX;
	return ibv_post_send(qp, &wr, &bad);
}

/* Every field of a successful atomic's completion. */
static bool check_wc(const struct ibv_wc *wc, uint64_t wr_id,
		     enum ibv_wc_opcode op, const struct ibv_qp *qp)
{
	if (wc->wr_id == wr_id && wc->status == IBV_WC_SUCCESS &&
	    wc->opcode == op && wc->byte_len == 8 &&
	    wc->qp_num == qp->qp_num && !wc->wc_flags)
		return true;
	say("completion wr_id %llu status %s opcode %d byte_len %u qp_num %u wc_flags %#x; want wr_id %llu success opcode %d byte_len 8 qp_num %u no flags",
	    (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
	    wc->opcode, wc->byte_len, wc->qp_num, wc->wc_flags,
	    (unsigned long long)wr_id, op, qp->qp_num);
	return false;
}

/*
 * Record value @v handed to this client; false if it cannot be one: a
 * value already seen here, or beyond every increment.
 */
static bool got(uint64_t *vals, uint32_t *nv, uint64_t v, uint64_t total)
{
	uint32_t i;

	if (v >= total) {
		say("value %llu: there are only %llu increments",
		    (unsigned long long)v, (unsigned long long)total);
		return false;
	}
	for (i = 0; i < *nv; i++)
		if (vals[i] == v) {
			say("value %llu handed out twice", (unsigned long long)v);
			return false;
		}
	vals[(*nv)++] = v;
	return true;
}

static int client_one(const char *host)
{
	uint64_t total = (uint64_t)nclients * (n_faa + n_cas);
	uint64_t *vals, next = 0, guess = 0, v, tries = 0;
	uint32_t nv = 0, posted = 0, n_ok = 0;
	struct ibv_wc wc[DEPTH];
	struct verdict vd;
	struct side s = {};
	struct ibv_qp *qp;
	struct hello h;
	struct reply r;
	int fd, go, i, n;

	vals = calloc(n_faa + n_cas, sizeof(*vals));
	if (!vals)
		die("no memory");
	fd = connect_to(host);
	side_open(&s, DEPTH, IBV_ACCESS_LOCAL_WRITE);
	qp = qp_make(&s, IBV_ACCESS_LOCAL_WRITE);
	if (srdma_test_read_full(fd, &h, sizeof(h)))
		die("server went away while connecting");
	if (h.clients != (uint32_t)nclients || h.faa != n_faa || h.cas != n_cas)
		die("the server has -c %u -n %u -k %u", h.clients, h.faa,
		    h.cas);
	r.qpn = qp->qp_num;
	r.psn = PSN;
	r.gid = s.gid;
	xwrite(fd, &r, sizeof(r));
	qp_connect(qp, &s, h.qpn, &h.gid);
	if (srdma_test_read_full(fd, &go, sizeof(go)))
		die("server went away before the start");

	/* FETCH ADD 1, DEPTH in flight; wr_id n for the n-th, in order. */
	while (n_ok < n_faa) {
		while (posted < n_faa && posted - n_ok < DEPTH) {
			if (post_atomic(qp, &s, posted,
					IBV_WR_ATOMIC_FETCH_AND_ADD, &h, 1, 0))
				die("post_send: %s", strerror(errno));
			posted++;
		}
		n = poll_some(s.cq, wc, DEPTH);
		if (n <= 0)
			die("stalled after %u of %u FETCH ADDs (poll %d)",
			    n_ok, n_faa, n);
		for (i = 0; i < n; i++, n_ok++) {
			if (!check_wc(&wc[i], n_ok, IBV_WC_FETCH_ADD, qp))
				exit(1);
			if (!got(vals, &nv, s.buf[n_ok % DEPTH], total))
				exit(1);
		}
	}
	/*
	 * COMPARE SWAP guess -> guess + 1, one at a time, until n_cas took
	 * effect; a CAS that found another value tries again with it.
	 */
	while (next < n_cas) {
		if (++tries > 100 * (total + 1))
			die("%llu COMPARE SWAPs for %llu increments",
			    (unsigned long long)tries,
			    (unsigned long long)next);
		if (post_atomic(qp, &s, posted, IBV_WR_ATOMIC_CMP_AND_SWP,
				&h, guess, guess + 1))
			die("post_send: %s", strerror(errno));
		n = poll_some(s.cq, wc, 1);
		if (n != 1)
			die("stalled after %llu of %u COMPARE SWAPs (poll %d)",
			    (unsigned long long)next, n_cas, n);
		if (!check_wc(&wc[0], posted, IBV_WC_COMP_SWAP, qp))
			exit(1);
		v = s.buf[posted % DEPTH];
		posted++;
		if (v == guess) {
			if (!got(vals, &nv, v, total))
				exit(1);
			next++;
			guess = v + 1;
		} else {
			guess = v;
		}
	}
	if (ibv_poll_cq(s.cq, 1, wc)) {
		say("an extra completion: wr_id %llu status %s",
		    (unsigned long long)wc[0].wr_id,
		    ibv_wc_status_str(wc[0].status));
		exit(1);
	}
	say("%u FETCH ADD, %u COMPARE SWAP in %llu tries", n_faa, n_cas,
	    (unsigned long long)tries);
	xwrite(fd, &nv, sizeof(nv));
	xwrite(fd, vals, nv * sizeof(*vals));
	if (srdma_test_read_full(fd, &vd, sizeof(vd)))
		die("no verdict from the server");
	vd.msg[sizeof(vd.msg) - 1] = 0;
	say("server says: %s", vd.msg);
	ibv_destroy_qp(qp);
	return vd.status ? 1 : 0;
}

static int client(const char *host)
{
	int i, st, rc = 0;
	pid_t pid;

	for (i = 0; i < nclients; i++) {
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (!pid) {
			me = i;
			exit(client_one(host));
		}
	}
	for (i = 0; i < nclients; i++) {
		if (wait(&st) < 0)
			die("wait: %s", strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	int opt;

	slow = srdma_test_slow();
	while ((opt = getopt(argc, argv, "d:p:c:n:k:")) != -1) {
		switch (opt) {
		case 'd': setenv("SRDMA_DEV", optarg, 1); break;
		case 'p': port = optarg; break;
		case 'c': nclients = atoi(optarg); break;
		case 'n': n_faa = strtoul(optarg, NULL, 0); break;
		case 'k': n_cas = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s -d DEV [-p PORT] [-c CLIENTS] [-n FAA] [-k CAS] [HOST]\n",
				argv[0]);
			return 2;
		}
	}
	if (nclients < 1 || nclients > MAX_CLIENTS ||
	    n_faa + n_cas > MAX_OPS || n_faa + n_cas < 1) {
		fprintf(stderr, "1 to %d clients of 1 to %d increments\n",
			MAX_CLIENTS, MAX_OPS);
		return 2;
	}
	if (optind == argc)
		server();
	return client(argv[optind]);
}
