// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * An MPI program that checks what it moves, for Open MPI over srdma
 * (selftests/tests/ucx.sh, Documentation/hpc.rst). Every rank checks
 * every byte it receives or reads:
 *
 *  p2p       ring exchange (MPI_Sendrecv) of every power of two from
 *            1 B to SRDMA_MPI_MAX (default 4 MiB), and each size +- 1
 *  many      non-blocking many-to-many: each rank to each, 8 messages of
 *            different sizes, MPI_Waitall
 *  coll      MPI_Allreduce (sum), MPI_Bcast from each root, MPI_Alltoall
 *  rma       MPI_Put, MPI_Get, MPI_Accumulate (sum) and MPI_Fetch_and_op
 *            into a window on each rank, with fences
 *
 * usage: mpirun ... srdma_mpi_check [PARTS]   (PARTS: p2p,many,coll,rma;
 * default all). Prints "ok PART" lines from rank 0; exits 1 from
 * MPI_Abort on the first wrong byte.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "rank %d: ", rank);		\
			fprintf(stderr, __VA_ARGS__);			\
			fprintf(stderr, "\n");				\
			MPI_Abort(MPI_COMM_WORLD, 1);			\
		}							\
	} while (0)

/* The byte at @i of a message from @src of @len bytes, tag @tag. */
static uint8_t pat(int src, size_t len, int tag, size_t i)
{
	return (uint8_t)(src * 131 + len * 7 + tag * 31 + i * 13 + (i >> 8));
}

static void fill(uint8_t *b, int src, size_t len, int tag)
{
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pat(src, len, tag, i);
}

static void check(const uint8_t *b, int src, size_t len, int tag,
		  const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(b[i] == pat(src, len, tag, i),
		      "%s: %zu bytes from %d tag %d: byte %zu is %#x, not %#x",
		      what, len, src, tag, i, b[i], pat(src, len, tag, i));
}

static void test_p2p(size_t max)
{
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	uint8_t *s = malloc(max + 1), *r = malloc(max + 1);
	size_t p, len;
	int d, tag = 0;
	MPI_Status st;
	int got;

	CHECK(s && r, "no memory");
	for (p = 1; p <= max; p <<= 1) {
		for (d = -1; d <= 1; d++) {
			len = p + d;
			if (len > max || (d == -1 && p == 1))
				continue;
			tag++;
			fill(s, rank, len, tag);
			memset(r, 0xee, len + 1);
			MPI_Sendrecv(s, len, MPI_BYTE, next, tag, r, len + 1,
				     MPI_BYTE, prev, tag, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &got);
			CHECK((size_t)got == len, "p2p: %d bytes, not %zu",
			      got, len);
			CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == tag,
			      "p2p: source %d tag %d", st.MPI_SOURCE,
			      st.MPI_TAG);
			check(r, prev, len, tag, "p2p");
			CHECK(r[len] == 0xee, "p2p: byte past %zu written",
			      len);
		}
	}
	free(s);
	free(r);
}

static size_t many_len(int k)
{
	static const size_t lens[] = { 0, 1, 100, 4096, 8191, 65536,
				       300000, 1048576 };
	return lens[k];
}

static void test_many(void)
{
	const int K = 8;
	int n = nranks * K, peer, k, i = 0;
	MPI_Request *rq = calloc(2 * n, sizeof(*rq));
	uint8_t **sb = calloc(n, sizeof(*sb)), **rb = calloc(n, sizeof(*rb));

	CHECK(rq && sb && rb, "no memory");
	for (peer = 0; peer < nranks; peer++) {
		for (k = 0; k < K; k++, i++) {
			size_t len = many_len(k);

			sb[i] = malloc(len + 1);
			rb[i] = malloc(len + 1);
			CHECK(sb[i] && rb[i], "no memory");
			fill(sb[i], rank, len, 1000 + k);
			MPI_Irecv(rb[i], len, MPI_BYTE, peer, 1000 + k,
				  MPI_COMM_WORLD, &rq[2 * i]);
			MPI_Isend(sb[i], len, MPI_BYTE, peer, 1000 + k,
				  MPI_COMM_WORLD, &rq[2 * i + 1]);
		}
	}
	MPI_Waitall(2 * n, rq, MPI_STATUSES_IGNORE);
	for (i = 0, peer = 0; peer < nranks; peer++) {
		for (k = 0; k < K; k++, i++) {
			check(rb[i], peer, many_len(k), 1000 + k, "many");
			free(sb[i]);
			free(rb[i]);
		}
	}
	free(sb);
	free(rb);
	free(rq);
}

static void test_coll(void)
{
	const int N = 1 << 18;
	int64_t *a = malloc(N * sizeof(*a)), *b = malloc(N * sizeof(*b));
	uint8_t *s, *r;
	int i, root, blk = 65536;

	CHECK(a && b, "no memory");
	for (i = 0; i < N; i++)
		a[i] = (int64_t)i * (rank + 1) - rank;
	MPI_Allreduce(a, b, N, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < N; i++) {
		int64_t want = (int64_t)i * nranks * (nranks + 1) / 2 -
			       (int64_t)nranks * (nranks - 1) / 2;
		CHECK(b[i] == want, "allreduce[%d] = %lld, not %lld", i,
		      (long long)b[i], (long long)want);
	}
	free(a);
	free(b);

	s = malloc(1 << 20);
	CHECK(s, "no memory");
	for (root = 0; root < nranks; root++) {
		if (rank == root)
			fill(s, root, 1 << 20, 2000);
		else
			memset(s, 0, 1 << 20);
		MPI_Bcast(s, 1 << 20, MPI_BYTE, root, MPI_COMM_WORLD);
		check(s, root, 1 << 20, 2000, "bcast");
	}
	free(s);

	s = malloc((size_t)blk * nranks);
	r = malloc((size_t)blk * nranks);
	CHECK(s && r, "no memory");
	for (i = 0; i < nranks; i++)
		fill(s + (size_t)i * blk, rank, blk, 3000 + i);
	MPI_Alltoall(s, blk, MPI_BYTE, r, blk, MPI_BYTE, MPI_COMM_WORLD);
	for (i = 0; i < nranks; i++)
		check(r + (size_t)i * blk, i, blk, 3000 + rank, "alltoall");
	free(s);
	free(r);
}

/*
 * A window of W int64 per rank. Each rank puts its block into the next
 * rank's window, gets the previous rank's, accumulates into every rank's
 * second half, and fetch-and-adds a counter on rank 0.
 */
static void test_rma(void)
{
	const int W = 1 << 16, H = W / 2;
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	int64_t *base, *src, *got, one = 1, old, sum;
	int i, peer;
	MPI_Win win;

	MPI_Alloc_mem(W * sizeof(int64_t), MPI_INFO_NULL, &base);
	src = malloc(W * sizeof(*src));
	got = malloc(W * sizeof(*got));
	CHECK(src && got, "no memory");
	for (i = 0; i < W; i++) {
		base[i] = i < H ? -1 : 0;
		src[i] = ((int64_t)rank << 32) | i;
	}
	MPI_Win_create(base, W * sizeof(int64_t), sizeof(int64_t),
		       MPI_INFO_NULL, MPI_COMM_WORLD, &win);

	MPI_Win_fence(0, win);
	MPI_Put(src, H, MPI_INT64_T, next, 0, H, MPI_INT64_T, win);
	MPI_Win_fence(0, win);
	for (i = 0; i < H; i++)
		CHECK(base[i] == (((int64_t)prev << 32) | i),
		      "put: [%d] = %llx", i, (unsigned long long)base[i]);

	MPI_Get(got, H, MPI_INT64_T, prev, 0, H, MPI_INT64_T, win);
	MPI_Win_fence(0, win);
	for (i = 0; i < H; i++) {
		int pp = (prev + nranks - 1) % nranks;

		CHECK(got[i] == (((int64_t)pp << 32) | i),
		      "get: [%d] = %llx", i, (unsigned long long)got[i]);
	}

	for (peer = 0; peer < nranks; peer++)
		MPI_Accumulate(src, H, MPI_INT64_T, peer, H, H, MPI_INT64_T,
			       MPI_SUM, win);
	MPI_Win_fence(0, win);
	for (i = 0; i < H; i++) {
		sum = 0;
		for (peer = 0; peer < nranks; peer++)
			sum += ((int64_t)peer << 32) | i;
		CHECK(base[H + i] == sum, "accumulate: [%d] = %llx, not %llx",
		      H + i, (unsigned long long)base[H + i],
		      (unsigned long long)sum);
	}
	MPI_Win_fence(0, win);

	/* Counter: base[0] of rank 0, reset; 100 fetch-and-adds per rank. */
	if (rank == 0)
		base[0] = 0;
	MPI_Win_fence(0, win);
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	for (i = 0; i < 100; i++) {
		MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
		MPI_Win_flush(0, win);
		CHECK(old >= 0 && old < 100 * nranks, "fetch_and_op: %lld",
		      (long long)old);
	}
	MPI_Win_unlock(0, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_fence(0, win);
	if (rank == 0)
		CHECK(base[0] == 100 * nranks, "fetch_and_op total %lld",
		      (long long)base[0]);
	MPI_Win_fence(0, win);
	MPI_Win_free(&win);
	MPI_Free_mem(base);
	free(src);
	free(got);
}

static int want(const char *parts, const char *p)
{
	return !parts || strstr(parts, p);
}

static void done(const char *what)
{
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("ok %s (%d ranks)\n", what, nranks);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	const char *parts = argc > 1 ? argv[1] : NULL;
	const char *m = getenv("SRDMA_MPI_MAX");
	size_t max = m ? strtoull(m, NULL, 0) : 4 << 20;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (want(parts, "p2p")) {
		test_p2p(max);
		done("p2p");
	}
	if (want(parts, "many")) {
		test_many();
		done("many");
	}
	if (want(parts, "coll")) {
		test_coll();
		done("coll");
	}
	if (want(parts, "rma")) {
		test_rma();
		done("rma");
	}
	MPI_Finalize();
	return 0;
}
