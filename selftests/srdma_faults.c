// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_faults: systematic allocation-failure injection (debug kernel with
 * failslab and fail_page_alloc). For n = 1, 2, ... it asks the kernel to
 * fail the n-th allocation this thread makes (/proc/thread-self/fail-nth)
 * and runs one verbs sequence: PD, MR, CQ, a QP connected to itself, one
 * RDMA WRITE, teardown. Every step must succeed or fail with an errno; the
 * objects created must go away; the sequence is repeated with n + STEP until
 * it runs through without reaching the n-th allocation, or up to MAXN (a
 * debug kernel's own bookkeeping allocates thousands of times per
 * sequence; the verbs' allocations come first). Then one more clean run
 * must succeed and move the data.
 *
 *   srdma_faults [-m MAXN] [-s STEP]    (defaults 2000 and 1)
 *
 * Prints how many failures were injected and at which step each landed.
 * The program's memory is locked first, so that the failures land in the
 * verbs' kernel work, not in page faults of the program itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "srdma_test.h"

enum step { S_PD, S_MR, S_CQ, S_QP, S_CONNECT, S_POST, S_WC, S_DATA, S_NUM };
static const char * const step_name[S_NUM] = {
	"alloc_pd", "reg_mr", "create_cq", "create_qp", "connect",
	"post_send", "completion", "data",
};

static int nth_fd = -1;

static void fail_nth(int n)
{
	char b[16];
	int len = snprintf(b, sizeof(b), "%d", n);

	if (nth_fd < 0)		/* the clean run before injection */
		return;
	if (pwrite(nth_fd, b, len, 0) != len) {
		perror("fail-nth");
		exit(4);
	}
}

/* 0 if the n-th allocation was reached (the fault fired). */
static int nth_left(void)
{
	char b[16] = "";

	if (pread(nth_fd, b, sizeof(b) - 1, 0) < 0)
		return -1;
	return atoi(b);
}

/*
 * One sequence on @ctx; returns the step that failed, S_NUM if none, and
 * releases whatever it created. *@err gets the errno of the failure.
 */
static enum step run(struct ibv_context *ctx, int gidx, union ibv_gid *gid,
		     char *buf, int n, int *err)
{
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_wc wc;
	enum step s;
	int i;

	memset(buf, 0, 16384);
	for (i = 0; i < 4096; i++)
		buf[i] = (char)(i * 5 + 1);
	errno = 0;
	if (n)
		fail_nth(n);
	s = S_PD;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		goto out;
	s = S_MR;
	mr = ibv_reg_mr(pd, buf, 16384, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		goto out;
	s = S_CQ;
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!cq)
		goto out;
	s = S_QP;
	qp = srdma_test_rc_qp(pd, cq, 4, 4, 1);
	if (!qp)
		goto out;
	s = S_CONNECT;
	if (srdma_test_connect_self(qp, gidx, gid))
		goto out;
	s = S_POST;
	errno = srdma_test_post_rdma(qp, mr, IBV_WR_RDMA_WRITE, buf, 4096,
				     buf + 8192);
	if (errno)
		goto out;
	s = S_WC;
	errno = 0;
	if (srdma_test_wait_wc(cq, &wc) != 1 || wc.status != IBV_WC_SUCCESS ||
	    wc.opcode != IBV_WC_RDMA_WRITE || wc.qp_num != qp->qp_num) {
		errno = EIO;
		goto out;
	}
	s = S_DATA;
	if (memcmp(buf, buf + 8192, 4096)) {
		errno = EIO;
		goto out;
	}
	s = S_NUM;
out:
	*err = errno;
	fail_nth(0);	/* teardown runs without injected failures */
	if (qp && ibv_destroy_qp(qp))
		fprintf(stderr, "n=%d: destroy_qp: %s\n", n, strerror(errno));
	if (cq && ibv_destroy_cq(cq))
		fprintf(stderr, "n=%d: destroy_cq: %s\n", n, strerror(errno));
	if (mr && ibv_dereg_mr(mr))
		fprintf(stderr, "n=%d: dereg_mr: %s\n", n, strerror(errno));
	if (pd && ibv_dealloc_pd(pd))
		fprintf(stderr, "n=%d: dealloc_pd: %s\n", n, strerror(errno));
	return s;
}

int main(int argc, char **argv)
{
	int hits[S_NUM + 1] = { 0 }, n, err, injected = 0, bad = 0;
	int maxn = 2000, step = 1, opt;
	struct ibv_context *ctx;
	union ibv_gid gid;
	enum step s;
	char *buf;
	int gidx;

	while ((opt = getopt(argc, argv, "m:s:")) != -1) {
		if (opt == 'm')
			maxn = atoi(optarg);
		else if (opt == 's')
			step = atoi(optarg) > 0 ? atoi(optarg) : 1;
		else
			return 2;
	}
	ctx = srdma_test_open();
	if (!ctx) {
		fprintf(stderr, "no device %s\n", srdma_test_devname());
		return 1;
	}
	gidx = srdma_test_ipv4_gid(ctx, &gid);
	buf = aligned_alloc(4096, 16384);
	if (gidx < 0 || !buf)
		return 1;
	/* A clean run first: the sequence works, and its pages are touched. */
	if (run(ctx, gidx, &gid, buf, 0, &err) != S_NUM) {
		fprintf(stderr, "clean run failed: %s\n", strerror(err));
		return 1;
	}
	if (mlockall(MCL_CURRENT)) {
		perror("mlockall");
		return 1;
	}
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0) {
		perror("/proc/thread-self/fail-nth");
		return 4;
	}
	for (n = 1; n <= maxn; n += step) {
		s = run(ctx, gidx, &gid, buf, n, &err);
		if (nth_left() != 0) {
			/* Never reached: every allocation point was covered. */
			if (s != S_NUM) {
				fprintf(stderr, "n=%d: %s failed (%s) with no fault injected\n",
					n, step_name[s], strerror(err));
				bad++;
			}
			break;
		}
		injected++;
		hits[s]++;
		if (s < S_POST && !err) {
			fprintf(stderr, "n=%d: %s failed without an errno\n", n,
				step_name[s]);
			bad++;
		}
	}
	if (run(ctx, gidx, &gid, buf, 0, &err) != S_NUM) {
		fprintf(stderr, "run after the faults failed: %s\n",
			strerror(err));
		bad++;
	}
	printf("faults injected: %d (sequence covered: %s)\n", injected,
	       n <= maxn ? "yes" : "no, hit -m");
	for (s = 0; s <= S_NUM; s++)
		if (hits[s])
			printf("  landed in %s: %d\n",
			       s == S_NUM ? "nothing visible" : step_name[s],
			       hits[s]);
	ibv_close_device(ctx);
	printf("%s\n", bad ? "FAIL" : "PASS");
	return bad ? 1 : 0;
}
