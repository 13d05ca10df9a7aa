/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers shared by the srdma selftests (user space, run in the test VM).
 */
#ifndef SRDMA_TEST_H
#define SRDMA_TEST_H

#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

/* The device under test: $SRDMA_DEV, default srdma0. */
static inline const char *srdma_test_devname(void)
{
	const char *name = getenv("SRDMA_DEV");

	return name && *name ? name : "srdma0";
}

/* Open the device under test, or NULL if it is not listed. */
static inline struct ibv_context *srdma_test_open(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]),
			    srdma_test_devname()))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

#endif /* SRDMA_TEST_H */
