// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Hold an srdma device open while the device or the module goes away.
 *
 * Opens $SRDMA_DEV, prints "ready", then waits for a line on stdin. It then
 * queries the device again: the query must fail, because the device is
 * gone and the context was disassociated. Exits 0 if it did, 1 if not.
 *
 * With "-6 LOCAL,PEER" (IPv6 addresses) it first makes an RC QP in RTS
 * from LOCAL's GID towards QP 0x123 at PEER, so that the device holds a
 * route of LOCAL's namespace while it is held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "srdma_test.h"

/* An RC QP in RTS from the GID of @local to PEER; 0 or -1. */
static int rc_qp_ipv6(struct ibv_context *ctx, const char *spec)
{
	char local[64], *peer;
	union ibv_gid lg, pg, g;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	int i;

	if (strlen(spec) >= sizeof(local))
		return -1;
	strcpy(local, spec);
	peer = strchr(local, ',');
	if (!peer)
		return -1;
	*peer++ = 0;
	if (inet_pton(AF_INET6, local, lg.raw) != 1 ||
	    inet_pton(AF_INET6, peer, pg.raw) != 1)
		return -1;
	for (i = 0; i < 16; i++)
		if (!ibv_query_gid(ctx, 1, i, &g) && !memcmp(&g, &lg, 16))
			break;
	if (i == 16) {
		fprintf(stderr, "no GID %s\n", local);
		return -1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	qp = cq ? srdma_test_rc_qp(pd, cq, 4, 4, 1) : NULL;
	if (!qp || srdma_test_qp_init(qp) ||
	    srdma_test_qp_rtr_to(qp, 0x123, i, &pg, IBV_MTU_1024) ||
	    srdma_test_qp_rts(qp)) {
		perror("RC QP over IPv6");
		return -1;
	}
	return 0;	/* held until the device goes */
}

int main(int argc, char **argv)
{
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	char line[64];
	int ret;

	ctx = srdma_test_open();
	if (!ctx) {
		perror("open");
		return 2;
	}
	if (ibv_query_device(ctx, &attr)) {
		perror("query before removal");
		return 2;
	}
	if (argc == 3 && !strcmp(argv[1], "-6") && rc_qp_ipv6(ctx, argv[2]))
		return 2;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;

	ret = ibv_query_device(ctx, &attr);
	printf("query after removal: %d (%s)\n", ret, strerror(ret));
	ibv_close_device(ctx);
	return ret ? 0 : 1;
}
