// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Hold an srdma device open while the device or the module goes away.
 *
 * Opens $SRDMA_DEV, prints "ready", then waits for a line on stdin. It then
 * queries the device again: the query must fail, because the device is
 * gone and the context was disassociated. Exits 0 if it did, 1 if not.
 */
#include <errno.h>
#include <stdio.h>

#include "srdma_test.h"

int main(void)
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
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;

	ret = ibv_query_device(ctx, &attr);
	printf("query after removal: %d (%s)\n", ret, strerror(ret));
	ibv_close_device(ctx);
	return ret ? 0 : 1;
}
