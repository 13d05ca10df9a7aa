// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MPI ping-pong between ranks 0 and 1, for make bench (tools/bench/hpc-run):
 * for each size from 1 B to 4 MiB (powers of four), rank 0 sends, rank 1
 * sends the message back, ITERS times after a few rounds of warm-up. The
 * last message of each size is checked byte by byte on both ranks.
 *
 * usage: mpirun -np 2 ... srdma_mpi_pingpong LABEL [ITERS]
 * Rank 0 prints, per size:
 *   RESULT mpi LABEL SIZE LATENCY_US MB_PER_S
 * where the latency is half the mean round trip and the bandwidth is
 * SIZE over that half round trip (10^6 bytes per second).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_SIZE	(4u << 20)
#define WARMUP		5

static uint8_t pat(size_t size, size_t i)
{
	return (uint8_t)(size * 7 + i * 13 + (i >> 8));
}

/* Every byte of @b as rank 0 filled it; else abort. */
static void check(const uint8_t *b, size_t size, int rank)
{
	size_t i;

	for (i = 0; i < size; i++) {
		if (b[i] != pat(size, i)) {
			fprintf(stderr, "rank %d: %zu bytes: byte %zu is %#x, not %#x\n",
				rank, size, i, b[i], pat(size, i));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

int main(int argc, char **argv)
{
	int rank, nranks, iters, it, peer;
	const char *label;
	uint8_t *buf;
	size_t size, i;
	double t0, t;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (argc < 2 || nranks != 2) {
		if (!rank)
			fprintf(stderr, "usage: mpirun -np 2 %s LABEL [ITERS]\n",
				argv[0]);
		MPI_Finalize();
		return 2;
	}
	label = argv[1];
	iters = argc > 2 ? atoi(argv[2]) : 50;
	if (iters < 1)
		iters = 1;
	peer = !rank;
	buf = malloc(MAX_SIZE);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size = 1; size <= MAX_SIZE; size *= 4) {
		/* Fewer rounds for the large sizes: seconds, not minutes. */
		int n = size >= (1u << 20) ? (iters + 4) / 5 : iters;

		for (i = 0; i < size; i++)
			buf[i] = rank ? 0 : pat(size, i);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = 0;
		for (it = 0; it < n + WARMUP; it++) {
			if (it == WARMUP)
				t0 = MPI_Wtime();
			if (!rank) {
				MPI_Send(buf, size, MPI_BYTE, peer, 1,
					 MPI_COMM_WORLD);
				MPI_Recv(buf, size, MPI_BYTE, peer, 1,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(buf, size, MPI_BYTE, peer, 1,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, size, MPI_BYTE, peer, 1,
					 MPI_COMM_WORLD);
			}
		}
		t = (MPI_Wtime() - t0) / n / 2;
		check(buf, size, rank);
		if (!rank)
			printf("RESULT mpi %s %zu %.2f %.2f\n", label, size,
			       t * 1e6, size / t / 1e6);
		fflush(stdout);
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
