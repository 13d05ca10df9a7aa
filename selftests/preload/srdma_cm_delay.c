// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_cm_delay.so: LD_PRELOAD for perftest's -R clients in the tests
 * (selftests/lib.sh, perftest_cm_race). perftest 4.5-0.17 (Debian 12's)
 * creates its server's rdma_cm listener only after a TCP handshake with
 * the client, and the client connects right after that handshake; a
 * connect request that arrives before the listener is rejected, and the
 * client then crashes in its retry path. Each rdma_resolve_addr() of the
 * client waits SRDMA_CM_DELAY_MS milliseconds (default 500) first, time
 * enough for the server to listen. Nothing else changes.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

/* librdmacm's, opaque here (no librdmacm-dev needed). */
struct rdma_cm_id;

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms);

typedef int (*resolve_addr_fn)(struct rdma_cm_id *, struct sockaddr *,
			       struct sockaddr *, int);

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	static resolve_addr_fn real;
	const char *s = getenv("SRDMA_CM_DELAY_MS");
	long ms = s ? strtol(s, NULL, 10) : 500;
	struct timespec ts;

	if (!real)
		real = (resolve_addr_fn)dlsym(RTLD_NEXT, "rdma_resolve_addr");
	if (!real)
		return -1;
	if (ms > 0 && ms < 10000) {
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * 1000000L;
		nanosleep(&ts, NULL);
	}
	return real(id, src_addr, dst_addr, timeout_ms);
}
