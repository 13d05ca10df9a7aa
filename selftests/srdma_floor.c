// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_floor: what a ping-pong between two processes of one host costs
 * before any device does any work (make bench, tools/bench/bench-guest).
 *
 *   srdma_floor DEV
 *
 * Prints, in microseconds, the median and the mean of 20,000 of each:
 *   null_syscall   getppid()
 *   doorbell       an empty doorbell: the uverbs post_send command with no
 *                  work request, on an RC QP of DEV in RTS connected to
 *                  itself with nothing posted (the system call a
 *                  provider with mapped rings makes per ibv_post_send(),
 *                  rdma_rxe's and srdma's alike), through uverbs to the
 *                  driver and back
 *   pingpong_half  half a round trip of a flag between two threads on
 *                  CPUs 0 and 1, as perftest's latency tests poll memory
 * as lines "FLOOR DEV WHAT MEDIAN MEAN". Exits 1 if anything fails.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <rdma/ib_user_verbs.h>

#include "srdma_test.h"

#define N 20000

static double samples[N];
static volatile unsigned int flag;

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *dev, const char *what)
{
	double sum = 0;
	int i;

	qsort(samples, N, sizeof(samples[0]), cmp);
	for (i = 0; i < N; i++)
		sum += samples[i];
	printf("FLOOR %s %s %.3f %.3f\n", dev, what, samples[N / 2], sum / N);
}

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static void *peer(void *arg)
{
	unsigned int i;

	(void)arg;
	pin(1);
	for (i = 0; i < N; i++) {
		while (flag != 2 * i + 1)
			;
		flag = 2 * i + 2;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} db;
	struct ib_uverbs_post_send_resp resp;
	struct ibv_context *ctx;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	union ibv_gid gid;
	pthread_t th;
	unsigned int i;
	double t;
	int gidx;

	if (argc != 2) {
		fprintf(stderr, "usage: srdma_floor DEV\n");
		return 1;
	}
	ctx = srdma_test_open_name(argv[1]);
	if (!ctx)
		return 1;
	gidx = srdma_test_ipv4_gid(ctx, &gid);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	qp = cq ? srdma_test_rc_qp(pd, cq, 16, 16, 1) : NULL;
	if (gidx < 0 || !qp || srdma_test_connect_self(qp, gidx, &gid)) {
		fprintf(stderr, "%s: no RC QP in RTS: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	if (pin(0)) {
		perror("sched_setaffinity");
		return 1;
	}

	for (i = 0; i < N; i++) {
		t = now_us();
		syscall(SYS_getppid);
		samples[i] = now_us() - t;
	}
	report(argv[1], "null_syscall");

	memset(&db, 0, sizeof(db));
	db.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	db.hdr.in_words = sizeof(db) / 4;
	db.hdr.out_words = sizeof(resp) / 4;
	db.cmd.response = (uintptr_t)&resp;
	db.cmd.qp_handle = qp->handle;
	db.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	for (i = 0; i < N; i++) {
		t = now_us();
		if (write(ctx->cmd_fd, &db, sizeof(db)) != sizeof(db)) {
			perror("doorbell");
			return 1;
		}
		samples[i] = now_us() - t;
	}
	report(argv[1], "doorbell");

	flag = 0;
	if (pthread_create(&th, NULL, peer, NULL)) {
		perror("pthread_create");
		return 1;
	}
	for (i = 0; i < N; i++) {
		t = now_us();
		flag = 2 * i + 1;
		while (flag != 2 * i + 2)
			;
		samples[i] = (now_us() - t) / 2;
	}
	pthread_join(th, NULL);
	report(argv[1], "pingpong_half");
	return 0;
}
