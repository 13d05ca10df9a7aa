// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma_stress: object lifetimes under traffic, bounded in time.
 *
 * usage: srdma_stress [-a DEV_A] [-b DEV_B] [-t SECS] [-n THREADS] [-r]
 *                     [-m MAXLEN] [-o MAXOPS] [-w BOUND] [-s SEED] [-v]
 *
 * One process opens two srdma devices (default srdma0 and srdma1; RDMA
 * devices are visible from every network namespace). N threads each run
 * sessions until the deadline. A session creates, on each device, a PD, a
 * CQ, a local and a remote MR (over buffers at a random page offset) and
 * an RC QP, connects the two QPs with random PSNs and MTU, and posts from
 * both sides a batch of RDMA WRITEs, WRITEs with immediate, READs and
 * SENDs (their RECVs first) of random sizes (1 B to MAXLEN, 1 to 3 SGEs).
 * Then, at a random point of the transfer (after a random number of
 * completions or a random delay), it injects one fault:
 *
 *   none           every work request must succeed
 *   dereg_remote   deregister the MR that the peer's WRITEs/READs target,
 *                  then WRITE to it again with the old rkey
 *   dereg_local    deregister a side's local MR, then SEND from it again
 *   qp_err         move a QP to ERR, then post to it again
 *   qp_reset       move a QP from RTS straight to RESET, then post to it
 *   destroy_qp     destroy a QP
 *   destroy_all    destroy every object of the session, in a random order
 *
 * After qp_err, qp_reset and destroy_qp both QPs are reset (or replaced by
 * new ones), connected again and must carry a second, clean batch.
 *
 * Checks:
 *   - every posted work request comes back as a completion: a side that
 *     makes no progress for 5 s is moved to ERR, and its work requests must
 *     then complete (flushed) within BOUND s; one that does not is "hung".
 *     Work requests of a QP that is reset or destroyed are "discarded"; a
 *     completion for one of them afterwards is "late".
 *   - every completion is for a posted, not yet completed work request;
 *     successful ones carry the right opcode, QP number, length and
 *     immediate data, and the data arrived intact (pattern check);
 *     a successful SEND's receive did not fail.
 *   - nothing is written outside the destination of a work request, no
 *     source is modified, and nothing at all is written into a buffer after
 *     its MR was deregistered or its QP was moved to ERR, reset or
 *     destroyed ("writes after freeze").
 *   - work requests posted to fail (with a stale key, to a QP in ERR) do
 *     not succeed; a post to a QP in RESET is refused with an errno; a CQ
 *     or PD still in use cannot be destroyed (EBUSY).
 *   - verbs either work or fail with an errno.
 *
 * With -r a device may disappear during the run (rdma link delete, netdev
 * or namespace removal): the verbs then fail with EIO, pending work
 * requests of the device are "lost", threads go on with the remaining
 * device (in loopback) and stop when none is left. Without -r a device
 * that disappears is an error.
 *
 * A watchdog ends the process (exit 3) if the threads do not finish in
 * time; it prints what each thread is doing. Exit status: 0 when every
 * check passed, 1 when one failed, 2 on a setup error, 3 on the watchdog.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

#include "srdma_test.h"

#define MAX_THREADS	64
#define MAX_SGE		3
#define MAX_CHAIN	8
#define MAX_REPORTS	60
#define WR_MAGIC	0x5352u
#define SPARE_LEN	64

static struct {
	const char *dev[2];
	int secs;
	int threads;
	int maxops;
	int bound;	/* s a QP in ERR has to flush everything */
	int stall;	/* s without progress before a side is moved to ERR */
	int cap;	/* s a batch may take at most before it is */
	uint32_t maxlen;
	uint64_t seed;
	unsigned int kinds;	/* bit mask of enum kind to post */
	unsigned int faults;	/* bit mask of enum fault to inject */
	bool removal;
	bool verbose;
	int slow;	/* SRDMA_TEST_SLOW: see main() */
} opt = {
	.dev = { "srdma0", "srdma1" },
	.secs = 30,
	.threads = 4,
	.maxops = 12,
	.bound = 10,
	.stall = 5,
	.cap = 15,
	.maxlen = 256 * 1024,
	.kinds = ~0u,
	.faults = ~0u,
};

enum kind { K_WRITE, K_WRITE_IMM, K_READ, K_SEND, K_RECV, K_NUM };
static const char * const kind_name[K_NUM] = {
	"write", "write_imm", "read", "send", "recv",
};

enum fault {
	F_NONE, F_DEREG_REMOTE, F_DEREG_LOCAL, F_QP_ERR, F_QP_RESET,
	F_DESTROY_QP, F_DESTROY_ALL, F_NUM
};
static const char * const fault_name[F_NUM] = {
	"none", "dereg_remote", "dereg_local", "qp_err", "qp_reset",
	"destroy_qp", "destroy_all",
};

/* What became of a work request. */
enum wstate { W_PLANNED, W_NOTPOSTED, W_PENDING, W_DONE, W_DISCARDED,
	      W_LOST, W_HUNG };

/* Where a QP is, as far as this program knows. */
enum qstate { Q_NONE, Q_RTS, Q_ERR, Q_RESET };

/* ---- counters ---------------------------------------------------------- */

#define NSTATUS 32
static struct {
	long sessions, batches, clean_batches, loopback_sessions;
	long faults[F_NUM];
	long pds, cqs, qps, mrs;
	long posted[K_NUM], post_failed, post_refused_ok;
	long bytes_checked;
	long wc[NSTATUS];
	long discarded, lost, hung, late, dup, bogus;
	long data_err, field_err, unexpected, inconsistent, must_fail_ok;
	long unexpected_removal;
	long freeze_writes, post_reset_accepted;
	long verb_fail, busy_refused, busy_accepted, dev_errors;
	long async_events, async_fatal;
} st;

#define ADD(f, n) __atomic_add_fetch(&st.f, (n), __ATOMIC_RELAXED)

static int nreports;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double t_start, t_deadline, t_hard;

/* A failed check or an event worth telling; the first MAX_REPORTS only. */
static void __attribute__((format(printf, 1, 2))) report(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_add_fetch(&nreports, 1, __ATOMIC_RELAXED) > MAX_REPORTS)
		return;
	pthread_mutex_lock(&print_lock);
	printf("[%7.2f] ", now() - t_start);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
}

#define VERBOSE(...) do { if (opt.verbose) report(__VA_ARGS__); } while (0)

/* ---- random numbers and data patterns ---------------------------------- */

static uint64_t rnd64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)((rnd64(s) >> 32) % n) : 0;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Byte @i of the pattern of @seed. */
static uint8_t pat_byte(uint32_t seed, size_t i)
{
	return mix64((uint64_t)seed << 40 ^ (i >> 3)) >> (i & 7) * 8;
}

/* Write bytes @from..@from+@len of pattern @seed to @p. */
static void pat_fill(uint8_t *p, size_t from, size_t len, uint32_t seed)
{
	size_t i = from, end = from + len;
	uint64_t w;
	int k;

	for (; i < end && (i & 7); i++)
		*p++ = pat_byte(seed, i);
	for (; i + 8 <= end; i += 8) {
		w = mix64((uint64_t)seed << 40 ^ (i >> 3));
		for (k = 0; k < 8; k++)
			*p++ = w >> k * 8;
	}
	for (; i < end; i++)
		*p++ = pat_byte(seed, i);
}

/* -1 if @p holds bytes @from.. of pattern @seed, else the first bad index. */
static long pat_check(const uint8_t *p, size_t from, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		/* A word at a time where aligned. */
		if (!((from + i) & 7) && i + 8 <= len) {
			uint64_t w = mix64((uint64_t)seed << 40 ^ ((from + i) >> 3));
			int k;

			for (k = 0; k < 8; k++)
				if (p[i + k] != (uint8_t)(w >> k * 8))
					return i + k;
			i += 7;
			continue;
		}
		if (p[i] != pat_byte(seed, from + i))
			return i;
	}
	return -1;
}

/* ---- devices ------------------------------------------------------------ */

struct dev {
	const char *name;
	struct ibv_context *ctx;
	union ibv_gid gid;
	int gidx;
	enum ibv_mtu mtu;
	int refs;
	bool dead;	/* an EIO, or DEVICE_FATAL: no new users */
	bool gone;	/* no longer listed */
	bool reported;
	pthread_mutex_t ev_lock;	/* one async event reader at a time */
};

static struct dev devs[2];
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

static bool dev_errno(int err)
{
	return err == EIO || err == ENODEV || err == ENXIO;
}

static void dev_dead(struct dev *d, const char *what, int err)
{
	bool first;

	pthread_mutex_lock(&dev_lock);
	first = !d->dead;
	d->dead = true;
	pthread_mutex_unlock(&dev_lock);
	ADD(dev_errors, 1);
	if (first)
		report("%s: device gone (%s: %s)\n", d->name, what,
		       strerror(err));
}

/* Open @d if it is listed; dev_lock held. */
static int dev_open_locked(struct dev *d)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int i, n, flags;

	list = ibv_get_device_list(&n);
	if (!list)
		return -1;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), d->name))
			break;
	d->ctx = i < n ? ibv_open_device(list[i]) : NULL;
	ibv_free_device_list(list);
	if (!d->ctx)
		goto err_gone;
	d->gidx = srdma_test_ipv4_gid(d->ctx, &d->gid);
	if (d->gidx < 0 || ibv_query_port(d->ctx, 1, &pa))
		goto err_close;
	d->mtu = pa.active_mtu;
	flags = fcntl(d->ctx->async_fd, F_GETFL);
	fcntl(d->ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	d->dead = false;
	return 0;

err_close:
	ibv_close_device(d->ctx);
	d->ctx = NULL;
err_gone:
	d->gone = true;
	return -1;
}

/* A reference on @d's context, opening it if needed; NULL if unusable. */
static struct dev *dev_get(struct dev *d)
{
	struct dev *ret = NULL;

	pthread_mutex_lock(&dev_lock);
	if (!d->gone && !d->dead && (d->ctx || !dev_open_locked(d))) {
		d->refs++;
		ret = d;
	}
	pthread_mutex_unlock(&dev_lock);
	return ret;
}

static void dev_put(struct dev *d)
{
	pthread_mutex_lock(&dev_lock);
	if (!--d->refs && d->dead) {
		/* The last user of a dead context closes it. */
		ibv_close_device(d->ctx);
		d->ctx = NULL;
		d->gone = true;
	}
	pthread_mutex_unlock(&dev_lock);
}

/* Read (and acknowledge) pending async events; false if @d is dead. */
static bool dev_probe(struct dev *d)
{
	struct ibv_async_event ev;
	struct ibv_port_attr pa;
	int ret;

	if (d->dead)
		return false;
	pthread_mutex_lock(&d->ev_lock);
	while (!ibv_get_async_event(d->ctx, &ev)) {
		ADD(async_events, 1);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL) {
			ADD(async_fatal, 1);
			dev_dead(d, "async event", EIO);
		}
		ibv_ack_async_event(&ev);
	}
	pthread_mutex_unlock(&d->ev_lock);
	ret = ibv_query_port(d->ctx, 1, &pa);
	if (ret && dev_errno(ret))
		dev_dead(d, "ibv_query_port", ret);
	return !d->dead;
}

/* ---- a session ---------------------------------------------------------- */

enum role { R_SRC, R_DST };

struct slice {
	size_t off;
	uint32_t len;
	uint8_t role;
	int wr;		/* R_DST: the operation whose data lands here */
	uint32_t seed;	/* R_SRC */
};

struct buf {
	uint8_t *map;
	size_t maplen;
	uint8_t *p;
	size_t len;
	size_t used;		/* bump allocator */
	size_t b2;		/* where the second batch's slices start */
	bool has_b2;
	uint32_t bgseed;
	struct slice *sl;
	int nsl, capsl;
	uint8_t *snap;		/* contents when frozen */
	const char *snap_why;
	double snap_at;
};

struct side {
	struct dev *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *lmr, *rmr;
	uint32_t old_lkey, old_rkey;
	struct buf lb, rb;	/* local: sources, READ and RECV targets; remote */
	enum qstate qs;
	uint32_t qpn, qpn0;	/* now, first */
	uint32_t sq_psn;
	uint8_t dest_rd;	/* READs it takes as responder */
	uint8_t init_rd;	/* READs it sends at most */
	double err_at;		/* when the QP went to ERR (0: not known) */
	int pending;
	int cqe, sq_wr, rq_wr;
	size_t spare_src, spare_recv;
	uint32_t spare_seed;
};

struct wr {
	uint8_t kind, side, batch, state, nsge;
	bool must_fail;		/* posted to fail: success is an error */
	bool bad;		/* data error already counted */
	int status;
	uint32_t len;		/* RECV: buffer length */
	uint32_t seed;
	size_t loff, roff;
	int pair;		/* a consuming op's RECV, a RECV's op */
};

struct sess {
	int tid;
	uint64_t *rng;
	uint16_t tag;
	struct side s[2];
	struct wr *w;
	int nw, capw;
	enum fault fault;
	int fx;			/* the side the fault is injected on */
	bool clean;		/* the current batch must fully succeed */
	bool loopback;
	int told;		/* session parameters reported */
	enum ibv_mtu mtu;
};

struct thr {
	int id;
	pthread_t th;
	uint64_t rng;
	const char *doing;	/* the watchdog reads these two */
	long since_ms;
	struct sess S;
};

static struct thr thr[MAX_THREADS];

static void doing(struct sess *S, const char *what)
{
	__atomic_store_n(&thr[S->tid].since_ms, (long)(now() * 1000),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&thr[S->tid].doing, what, __ATOMIC_RELEASE);
}

static bool side_dead(struct sess *S, int x)
{
	return S->s[x].dev->dead;
}

static bool any_dead(struct sess *S)
{
	return side_dead(S, 0) || side_dead(S, 1);
}

/* A verb failed with @err: a dead device, or a failure to count. */
static void verb_failed(struct sess *S, int x, const char *what, int err)
{
	if (dev_errno(err)) {
		dev_dead(S->s[x].dev, what, err);
		return;
	}
	ADD(verb_fail, 1);
	report("t%d %s side %c: %s failed: %s\n", S->tid,
	       S->s[x].dev->name, 'A' + x, what, strerror(err));
}

static int new_wr(struct sess *S, enum kind k, int side, int batch)
{
	struct wr *w;

	if (S->nw == S->capw) {
		S->capw = S->capw ? 2 * S->capw : 64;
		S->w = realloc(S->w, S->capw * sizeof(*S->w));
		if (!S->w) {
			perror("realloc");
			exit(2);
		}
	}
	w = &S->w[S->nw];
	memset(w, 0, sizeof(*w));
	w->kind = k;
	w->side = side;
	w->batch = batch;
	w->pair = -1;
	w->seed = (uint32_t)rnd64(S->rng) | 1;
	w->state = W_PLANNED;
	return S->nw++;
}

static size_t buf_alloc(struct sess *S, struct buf *b, uint32_t len, int role,
			int wr, uint32_t seed)
{
	struct slice *s;
	size_t off = b->used + rnd(S->rng, 64);

	b->used = off + len;
	if (role < 0)
		return off;	/* a gap: must keep the background */
	if (b->nsl == b->capsl) {
		b->capsl = b->capsl ? 2 * b->capsl : 32;
		b->sl = realloc(b->sl, b->capsl * sizeof(*b->sl));
		if (!b->sl) {
			perror("realloc");
			exit(2);
		}
	}
	s = &b->sl[b->nsl++];
	s->off = off;
	s->len = len;
	s->role = role;
	s->wr = wr;
	s->seed = seed;
	return off;
}

static uint32_t rand_len(struct sess *S)
{
	uint32_t bits, len;

	if (!rnd(S->rng, 10))
		return opt.maxlen;
	bits = rnd(S->rng, 19);
	len = 1 + rnd(S->rng, 1u << bits);
	return len > opt.maxlen ? opt.maxlen : len;
}

/* Plan one batch of operations from both sides, with their RECVs. */
static void plan_batch(struct sess *S, int batch)
{
	static const uint8_t kinds[] = {
		K_WRITE, K_WRITE, K_WRITE, K_READ, K_READ, K_READ,
		K_SEND, K_SEND, K_SEND, K_WRITE_IMM, K_WRITE_IMM,
	};
	int x, k, n, i, r;

	for (x = 0; x < 2; x++) {
		struct side *me = &S->s[x], *peer = &S->s[!x];

		n = 1 + rnd(S->rng, opt.maxops);
		for (k = 0; k < n; k++) {
			enum kind kind;
			uint32_t len = rand_len(S);
			struct wr *w;

			do
				kind = kinds[rnd(S->rng, sizeof(kinds))];
			while (!(opt.kinds & 1u << kind));

			i = new_wr(S, kind, x, batch);
			w = &S->w[i];
			w->len = len;
			w->nsge = 1 + rnd(S->rng, len < MAX_SGE ? len : MAX_SGE);
			switch (kind) {
			case K_WRITE:
			case K_WRITE_IMM:
				w->loff = buf_alloc(S, &me->lb, len, R_SRC, i,
						    w->seed);
				w->roff = buf_alloc(S, &peer->rb, len, R_DST, i,
						    0);
				break;
			case K_READ:
				w->loff = buf_alloc(S, &me->lb, len, R_DST, i, 0);
				w->roff = buf_alloc(S, &peer->rb, len, R_SRC, i,
						    w->seed);
				break;
			default:
				w->loff = buf_alloc(S, &me->lb, len, R_SRC, i,
						    w->seed);
				break;
			}
			if (kind != K_SEND && kind != K_WRITE_IMM)
				continue;
			r = new_wr(S, K_RECV, !x, batch);
			w = &S->w[i];
			w->pair = r;
			S->w[r].pair = i;
			S->w[r].nsge = 1;
			if (kind == K_SEND) {
				/* Room to spare, which must stay untouched. */
				uint32_t slack = rnd(S->rng, 65);

				S->w[r].len = len + slack;
				S->w[r].nsge = 1 + rnd(S->rng, len < MAX_SGE ?
							len : MAX_SGE);
				S->w[r].loff = buf_alloc(S, &peer->lb, len,
							 R_DST, i, 0);
				peer->lb.used += slack;
			} else {
				S->w[r].len = 16;
				S->w[r].loff = buf_alloc(S, &peer->lb, 16, -1,
							 0, 0);
			}
		}
	}
}

static bool fault_recovers(enum fault f)
{
	return f == F_QP_ERR || f == F_QP_RESET || f == F_DESTROY_QP;
}

static int buf_map(struct sess *S, struct buf *b)
{
	size_t pgoff = rnd(S->rng, 4096);

	b->len = b->used + 64;
	b->maplen = (pgoff + b->len + 4095) & ~4095UL;
	b->map = mmap(NULL, b->maplen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->map == MAP_FAILED) {
		b->map = NULL;
		return -1;
	}
	b->p = b->map + pgoff;
	b->bgseed = (uint32_t)rnd64(S->rng) | 1;
	pat_fill(b->p, 0, b->len, b->bgseed);
	for (int i = 0; i < b->nsl; i++)
		if (b->sl[i].role == R_SRC)
			pat_fill(b->p + b->sl[i].off, 0, b->sl[i].len,
				 b->sl[i].seed);
	return 0;
}

static void freeze(struct sess *S, struct buf *b, const char *why)
{
	if (b->snap || !b->p)
		return;
	b->snap = malloc(b->len);
	if (!b->snap) {
		perror("malloc");
		exit(2);
	}
	memcpy(b->snap, b->p, b->len);
	b->snap_why = why;
	b->snap_at = now();
}

/* ---- completions -------------------------------------------------------- */

static uint64_t mkid(struct sess *S, int i)
{
	return (uint64_t)WR_MAGIC << 48 | (uint64_t)S->tag << 32 | (uint32_t)i;
}

static const char *stname(int s)
{
	return ibv_wc_status_str((enum ibv_wc_status)s);
}

static const char *wstate_name(int s)
{
	static const char * const n[] = {
		"planned", "not posted", "pending", "done", "discarded",
		"lost", "hung",
	};

	return s >= 0 && s <= W_HUNG ? n[s] : "?";
}

/* How many leading bytes of @p hold pattern @seed. */
static long pat_prefix(const uint8_t *p, size_t len, uint32_t seed)
{
	long at = pat_check(p, 0, len, seed);

	return at < 0 ? (long)len : at;
}

static void data_error(struct sess *S, struct wr *w, const char *what,
		       long at)
{
	if (w->bad)
		return;
	w->bad = true;
	ADD(data_err, 1);
	report("t%d DATA ERROR: %s %u B from side %c (batch %d, fault %s): %s at byte %ld\n",
	       S->tid, kind_name[w->kind], w->len, 'A' + w->side, w->batch,
	       fault_name[S->fault], what, at);
}

static void check_success(struct sess *S, int x, struct wr *w,
			  const struct ibv_wc *wc)
{
	struct side *me = &S->s[x], *peer = &S->s[!x];
	struct wr *p;
	long at;
	enum ibv_wc_opcode want;

	if (w->must_fail) {
		ADD(must_fail_ok, 1);
		report("t%d %s succeeded although posted to fail (side %c, fault %s)\n",
		       S->tid, kind_name[w->kind], 'A' + x,
		       fault_name[S->fault]);
		return;
	}
	if (wc->qp_num != me->qpn) {
		ADD(field_err, 1);
		report("t%d %s completion with qp_num %u, QP is %u\n", S->tid,
		       kind_name[w->kind], wc->qp_num, me->qpn);
	}
	switch (w->kind) {
	case K_WRITE:
	case K_WRITE_IMM:
		want = IBV_WC_RDMA_WRITE;
		at = pat_check(peer->rb.p + w->roff, 0, w->len, w->seed);
		if (at >= 0)
			data_error(S, w, "WRITE target", at);
		break;
	case K_READ:
		want = IBV_WC_RDMA_READ;
		at = pat_check(me->lb.p + w->loff, 0, w->len, w->seed);
		if (at >= 0)
			data_error(S, w, "READ target", at);
		break;
	case K_SEND:
		want = IBV_WC_SEND;
		break;
	default:
		p = w->pair >= 0 ? &S->w[w->pair] : NULL;
		if (!p) {
			ADD(field_err, 1);
			report("t%d a RECV without a sender succeeded\n",
			       S->tid);
			return;
		}
		want = p->kind == K_SEND ? IBV_WC_RECV :
					   IBV_WC_RECV_RDMA_WITH_IMM;
		if (wc->byte_len != p->len) {
			ADD(field_err, 1);
			report("t%d RECV of a %u B %s: byte_len %u\n", S->tid,
			       p->len, kind_name[p->kind], wc->byte_len);
		}
		if (p->kind == K_WRITE_IMM &&
		    (!(wc->wc_flags & IBV_WC_WITH_IMM) ||
		     wc->imm_data != htonl(p->seed))) {
			ADD(field_err, 1);
			report("t%d RECV of WRITE_IMM: flags %#x imm %#x, want %#x\n",
			       S->tid, wc->wc_flags, ntohl(wc->imm_data),
			       p->seed);
		}
		if (p->kind == K_SEND)
			at = pat_check(me->lb.p + w->loff, 0, p->len, p->seed);
		else
			at = pat_check(me->rb.p + p->roff, 0, p->len, p->seed);
		if (at >= 0)
			data_error(S, p, "RECV target", at);
		break;
	}
	if (wc->opcode != want) {
		ADD(field_err, 1);
		report("t%d %s completion with opcode %d, want %d\n", S->tid,
		       kind_name[w->kind], wc->opcode, want);
	}
	if (w->kind != K_RECV && w->kind != K_SEND)
		ADD(bytes_checked, w->len);
	else if (w->kind == K_RECV && w->pair >= 0)
		ADD(bytes_checked, S->w[w->pair].len);
}

static void handle_wc(struct sess *S, int x, const struct ibv_wc *wc)
{
	struct side *me = &S->s[x];
	uint32_t idx = (uint32_t)wc->wr_id;
	struct wr *w;

	if (wc->wr_id >> 48 != WR_MAGIC ||
	    (uint16_t)(wc->wr_id >> 32) != S->tag || idx >= (uint32_t)S->nw ||
	    S->w[idx].side != x) {
		if (!dev_probe(me->dev))
			return;	/* rings of a dead device: noise */
		ADD(bogus, 1);
		report("t%d side %c: completion with unknown wr_id %#" PRIx64 " status %s\n",
		       S->tid, 'A' + x, (uint64_t)wc->wr_id,
		       stname(wc->status));
		return;
	}
	w = &S->w[idx];
	switch (w->state) {
	case W_PENDING:
		break;
	case W_DONE:
		ADD(dup, 1);
		report("t%d side %c: second completion for %s #%u (%s, then %s)\n",
		       S->tid, 'A' + x, kind_name[w->kind], idx,
		       stname(w->status), stname(wc->status));
		return;
	case W_DISCARDED:
		ADD(late, 1);
		report("t%d side %c: completion (%s) for %s #%u after its QP was reset or destroyed (fault %s)\n",
		       S->tid, 'A' + x, stname(wc->status),
		       kind_name[w->kind], idx, fault_name[S->fault]);
		w->state = W_DONE;
		return;
	case W_HUNG:
		report("t%d side %c: hung %s #%u completed at last (%s)\n",
		       S->tid, 'A' + x, kind_name[w->kind], idx,
		       stname(wc->status));
		w->state = W_DONE;
		return;
	default:
		if (!dev_probe(me->dev))
			return;
		ADD(bogus, 1);
		report("t%d side %c: completion for %s #%u in state %d\n",
		       S->tid, 'A' + x, kind_name[w->kind], idx, w->state);
		return;
	}
	w->state = W_DONE;
	w->status = wc->status;
	me->pending--;
	ADD(wc[wc->status < NSTATUS ? wc->status : NSTATUS - 1], 1);
	if (wc->status == IBV_WC_SUCCESS) {
		check_success(S, x, w, wc);
		return;
	}
	/* An error completion: the QP is in ERR now. */
	if (me->qs == Q_RTS)
		me->qs = Q_ERR;
	if (!me->err_at)
		me->err_at = now();
	if (S->clean && dev_probe(S->s[0].dev) && dev_probe(S->s[1].dev)) {
		/* With -r a netdev going away may be the cause. */
		if (opt.removal)
			ADD(unexpected_removal, 1);
		else
			ADD(unexpected, 1);
		if (!S->told++)
			report("t%d session: QPs %u (%s) <-> %u (%s), MTU %d, READs taken A %u B %u, sent at most A %u B %u\n",
			       S->tid, S->s[0].qpn, S->s[0].dev->name,
			       S->s[1].qpn, S->s[1].dev->name,
			       128 << S->mtu, S->s[0].dest_rd, S->s[1].dest_rd,
			       S->s[0].init_rd, S->s[1].init_rd);
		report("t%d side %c: %s #%u of %u B failed in a clean batch: %s (vendor_err %#x)\n",
		       S->tid, 'A' + x, kind_name[w->kind], idx, w->len,
		       stname(wc->status), wc->vendor_err);
	}
}

static int poll_side(struct sess *S, int x)
{
	struct side *me = &S->s[x];
	struct ibv_wc wc[16];
	int i, n;

	if (!me->cq || side_dead(S, x))
		return 0;
	n = ibv_poll_cq(me->cq, 16, wc);
	if (n < 0) {
		verb_failed(S, x, "ibv_poll_cq", EIO);
		return 0;
	}
	for (i = 0; i < n; i++)
		handle_wc(S, x, &wc[i]);
	return n;
}

/* Mark what side @x still has pending as @state. */
static void settle_pending(struct sess *S, int x, enum wstate state)
{
	struct side *me = &S->s[x];
	int i;

	for (i = 0; i < S->nw; i++) {
		struct wr *w = &S->w[i];

		if (w->side != x || w->state != W_PENDING)
			continue;
		w->state = state;
		me->pending--;
		if (state == W_DISCARDED)
			ADD(discarded, 1);
		else if (state == W_LOST)
			ADD(lost, 1);
		else if (state == W_HUNG) {
			ADD(hung, 1);
			report("t%d HUNG: side %c %s #%d of %u B (batch %d, fault %s): no completion %d s after its QP went to ERR\n",
			       S->tid, 'A' + x, kind_name[w->kind], i, w->len,
			       w->batch, fault_name[S->fault], opt.bound);
		}
	}
}

/* The QP of @x was reset or destroyed: take what completed, drop the rest. */
static void discard_side(struct sess *S, int x)
{
	while (poll_side(S, x))
		;
	settle_pending(S, x, W_DISCARDED);
}

static int modify_state(struct sess *S, int x, enum ibv_qp_state qs)
{
	struct ibv_qp_attr a = { .qp_state = qs };
	int ret, tries;

	/* A QP may go to ERR by itself meanwhile; then ask again. */
	for (tries = 0; tries < 3; tries++) {
		ret = ibv_modify_qp(S->s[x].qp, &a, IBV_QP_STATE);
		if (ret != EINVAL)
			break;
	}
	if (ret)
		verb_failed(S, x, qs == IBV_QPS_ERR ? "modify_qp(ERR)" :
			    "modify_qp(RESET)", ret);
	return ret;
}

/* Move side @x's QP to ERR: its work requests must then flush. */
static void force_err(struct sess *S, int x, const char *why)
{
	struct side *me = &S->s[x];

	if (!me->qp)
		return;
	doing(S, "modify_qp(ERR)");
	/* If that fails, the bound runs all the same. */
	if (!modify_state(S, x, IBV_QPS_ERR)) {
		freeze(S, &me->lb, why);
		freeze(S, &me->rb, why);
	}
	me->qs = Q_ERR;
	me->err_at = now();
	VERBOSE("t%d side %c to ERR: %s\n", S->tid, 'A' + x, why);
}

/*
 * Poll both CQs until no work request is pending. A side without progress
 * for opt.stall s (or after opt.cap s) is moved to ERR; what it has not
 * completed opt.bound s after it went to ERR is hung.
 */
static void drain(struct sess *S)
{
	double t0 = now(), progress = t0, probe = t0 + 0.25, t;
	int x, got;

	doing(S, "polling");
	for (;;) {
		got = poll_side(S, 0) + poll_side(S, 1);
		t = now();
		if (got)
			progress = t;
		if (!S->s[0].pending && !S->s[1].pending)
			return;
		if (t >= probe) {
			probe = t + 0.25;
			for (x = 0; x < 2; x++)
				if (!dev_probe(S->s[x].dev))
					settle_pending(S, x, W_LOST);
		}
		for (x = 0; x < 2; x++) {
			struct side *me = &S->s[x];

			if (!me->pending)
				continue;
			if (me->qs == Q_RTS &&
			    (side_dead(S, !x) || t - progress > opt.stall ||
			     t - t0 > opt.cap)) {
				force_err(S, x, side_dead(S, !x) ?
					  "peer device gone" : "stalled");
				doing(S, "polling");
			}
			if (me->err_at && t - me->err_at > opt.bound)
				settle_pending(S, x, W_HUNG);
			else if (me->qs != Q_RTS && me->qs != Q_ERR &&
				 me->pending)
				settle_pending(S, x, W_DISCARDED);
		}
		if (!got)
			usleep(300);
	}
}

/* Poll until @n completions or @secs have passed. */
static void poll_for(struct sess *S, int n, double secs)
{
	double end = now() + secs;
	int got = 0, g;

	doing(S, "polling");
	while (got < n && now() < end && (S->s[0].pending || S->s[1].pending)) {
		g = poll_side(S, 0) + poll_side(S, 1);
		got += g;
		if (!g)
			usleep(200);
	}
}

/* ---- posting ------------------------------------------------------------ */

static void split_sges(struct ibv_sge *sg, int n, uint8_t *p, uint32_t len,
		       uint32_t lkey, uint64_t *rng)
{
	uint32_t left = len, l;
	int i;

	for (i = 0; i < n; i++) {
		l = i == n - 1 ? left : 1 + rnd(rng, left - (n - 1 - i));
		sg[i].addr = (uintptr_t)p;
		sg[i].length = l;
		sg[i].lkey = lkey;
		p += l;
		left -= l;
	}
}

/* Post @n work requests of side @x (indices @idx) as one chain. */
static int post_chain(struct sess *S, int x, const int *idx, int n)
{
	struct side *me = &S->s[x], *peer = &S->s[!x];
	struct ibv_send_wr swr[MAX_CHAIN], *sbad = NULL;
	struct ibv_recv_wr rwr[MAX_CHAIN], *rbad = NULL;
	struct ibv_sge sg[MAX_CHAIN][MAX_SGE];
	bool recv = S->w[idx[0]].kind == K_RECV;
	int i, ret, first_bad = n;

	memset(swr, 0, sizeof(swr));
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < n; i++) {
		struct wr *w = &S->w[idx[i]];
		/* The keys of deregistered MRs stay in use: must fail. */
		uint32_t lkey = me->lmr ? me->lmr->lkey : me->old_lkey;
		uint32_t rkey = peer->rmr ? peer->rmr->rkey : peer->old_rkey;

		split_sges(sg[i], w->nsge, me->lb.p + w->loff, w->len, lkey,
			   S->rng);
		if (recv) {
			rwr[i].wr_id = mkid(S, idx[i]);
			rwr[i].sg_list = sg[i];
			rwr[i].num_sge = w->nsge;
			rwr[i].next = i + 1 < n ? &rwr[i + 1] : NULL;
			continue;
		}
		swr[i].wr_id = mkid(S, idx[i]);
		swr[i].sg_list = sg[i];
		swr[i].num_sge = w->nsge;
		swr[i].send_flags = IBV_SEND_SIGNALED;
		swr[i].next = i + 1 < n ? &swr[i + 1] : NULL;
		swr[i].wr.rdma.remote_addr = (uintptr_t)(peer->rb.p + w->roff);
		swr[i].wr.rdma.rkey = rkey;
		switch (w->kind) {
		case K_WRITE:
			swr[i].opcode = IBV_WR_RDMA_WRITE;
			break;
		case K_WRITE_IMM:
			swr[i].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			swr[i].imm_data = htonl(w->seed);
			break;
		case K_READ:
			swr[i].opcode = IBV_WR_RDMA_READ;
			break;
		default:
			swr[i].opcode = IBV_WR_SEND;
			swr[i].wr.rdma.remote_addr = 0;
			swr[i].wr.rdma.rkey = 0;
			break;
		}
	}
	doing(S, recv ? "ibv_post_recv" : "ibv_post_send");
	if (recv)
		ret = ibv_post_recv(me->qp, rwr, &rbad);
	else
		ret = ibv_post_send(me->qp, swr, &sbad);
	if (ret) {
		/* Those before *bad were posted; none if bad is not set. */
		for (i = 0; i < n; i++)
			if ((recv && rbad == &rwr[i]) ||
			    (!recv && sbad == &swr[i]))
				first_bad = i;
		if (first_bad == n)
			first_bad = 0;
	}
	for (i = 0; i < n; i++) {
		struct wr *w = &S->w[idx[i]];

		if (i >= first_bad) {
			w->state = W_NOTPOSTED;
			continue;
		}
		w->state = W_PENDING;
		me->pending++;
		ADD(posted[w->kind], 1);
	}
	if (ret) {
		ADD(post_failed, n - first_bad);
		if (dev_errno(ret))
			dev_dead(me->dev, recv ? "ibv_post_recv" :
				 "ibv_post_send", ret);
		else if (S->clean || me->qs == Q_RTS)
			verb_failed(S, x, recv ? "ibv_post_recv" :
				    "ibv_post_send", ret);
	}
	return ret;
}

/* Post the RECVs, then the other operations, of @batch in chains. */
static void post_batch(struct sess *S, int batch)
{
	int idx[2][MAX_CHAIN], n[2] = { 0, 0 }, chain[2], pass, i, x;

	for (pass = 0; pass < 2; pass++) {
		for (x = 0; x < 2; x++)
			chain[x] = 1 + rnd(S->rng, 4);
		for (i = 0; i < S->nw; i++) {
			struct wr *w = &S->w[i];

			if (w->batch != batch || w->state != W_PLANNED ||
			    (w->kind == K_RECV) != !pass)
				continue;
			x = w->side;
			if (side_dead(S, x) || !S->s[x].qp) {
				w->state = W_NOTPOSTED;
				continue;
			}
			idx[x][n[x]++] = i;
			if (n[x] == chain[x]) {
				post_chain(S, x, idx[x], n[x]);
				n[x] = 0;
				chain[x] = 1 + rnd(S->rng, 4);
			}
		}
		for (x = 0; x < 2; x++)
			if (n[x])
				post_chain(S, x, idx[x], n[x]);
		n[0] = n[1] = 0;
	}
}

/* ---- objects ------------------------------------------------------------ */

static int connect_qp(struct sess *S, int x, enum ibv_mtu mtu)
{
	struct side *me = &S->s[x], *peer = &S->s[!x];
	struct ibv_qp_attr a;
	int ret;

	doing(S, "modify_qp(connect)");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_LOCAL_WRITE;
	ret = ibv_modify_qp(me->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		goto err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->sq_psn;
	a.max_dest_rd_atomic = me->dest_rd;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->dev->gid;
	a.ah_attr.grh.sgid_index = me->dev->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	ret = ibv_modify_qp(me->qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		goto err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 15 + opt.slow;	/* 134 ms, times 2^slow */
	a.retry_cnt = 7;
	a.rnr_retry = 6;
	a.sq_psn = me->sq_psn;
	/* No more than the peer takes (what rdma_cm would negotiate). */
	a.max_rd_atomic = 1 + rnd(S->rng, peer->dest_rd);
	me->init_rd = a.max_rd_atomic;
	ret = ibv_modify_qp(me->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		goto err;
	me->qs = Q_RTS;
	me->err_at = 0;
	return 0;
err:
	verb_failed(S, x, "modify_qp(connect)", ret);
	return -1;
}

static int create_qp(struct sess *S, int x)
{
	struct side *me = &S->s[x];
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = me->cq,
		.recv_cq = me->cq,
		.cap = {
			.max_send_wr = me->sq_wr,
			.max_recv_wr = me->rq_wr,
			.max_send_sge = MAX_SGE,
			.max_recv_sge = MAX_SGE,
		},
	};

	doing(S, "ibv_create_qp");
	me->qp = ibv_create_qp(me->pd, &init);
	if (!me->qp) {
		verb_failed(S, x, "ibv_create_qp", errno);
		return -1;
	}
	ADD(qps, 1);
	me->qpn = me->qp->qp_num;
	if (!me->qpn0)
		me->qpn0 = me->qpn;
	me->qs = Q_RESET;
	me->sq_psn = rnd(S->rng, 1u << 24);
	return 0;
}

static int destroy_qp(struct sess *S, int x)
{
	struct side *me = &S->s[x];
	int ret;

	if (!me->qp)
		return 0;
	doing(S, "ibv_destroy_qp");
	ret = ibv_destroy_qp(me->qp);
	if (ret) {
		verb_failed(S, x, "ibv_destroy_qp", ret);
		if (!side_dead(S, x))
			return ret;
	}
	me->qp = NULL;
	me->qs = Q_NONE;
	freeze(S, &me->lb, "QP destroyed");
	freeze(S, &me->rb, "QP destroyed");
	discard_side(S, x);
	return 0;
}

static struct ibv_mr *reg(struct sess *S, int x, struct buf *b, int access)
{
	struct ibv_mr *mr;

	doing(S, "ibv_reg_mr");
	mr = ibv_reg_mr(S->s[x].pd, b->p, b->len, access);
	if (!mr)
		verb_failed(S, x, "ibv_reg_mr", errno);
	else
		ADD(mrs, 1);
	return mr;
}

static int dereg(struct sess *S, int x, bool remote)
{
	struct side *me = &S->s[x];
	struct ibv_mr **mr = remote ? &me->rmr : &me->lmr;
	uint32_t key;
	int ret;

	if (!*mr)
		return 0;
	key = remote ? (*mr)->rkey : (*mr)->lkey;
	doing(S, "ibv_dereg_mr");
	ret = ibv_dereg_mr(*mr);
	if (ret) {
		verb_failed(S, x, "ibv_dereg_mr", ret);
		if (!side_dead(S, x))
			return ret;
	}
	*mr = NULL;
	if (remote)
		me->old_rkey = key;
	else
		me->old_lkey = key;
	freeze(S, remote ? &me->rb : &me->lb, "MR deregistered");
	return 0;
}

static int destroy_cq(struct sess *S, int x)
{
	struct side *me = &S->s[x];
	int ret;

	if (!me->cq)
		return 0;
	if (me->qp) {
		/* Still in use: must be refused, with EBUSY. */
		doing(S, "ibv_destroy_cq(busy)");
		ret = ibv_destroy_cq(me->cq);
		if (!ret) {
			/* rdma-core takes EIO for "already destroyed". */
			if (dev_probe(me->dev)) {
				ADD(busy_accepted, 1);
				report("t%d side %c: a CQ in use was destroyed\n",
				       S->tid, 'A' + x);
			}
			me->cq = NULL;
			return 0;
		}
		if (ret == EBUSY)
			ADD(busy_refused, 1);
		else
			verb_failed(S, x, "ibv_destroy_cq(busy)", ret);
		return ret;
	}
	while (poll_side(S, x))
		;
	doing(S, "ibv_destroy_cq");
	ret = ibv_destroy_cq(me->cq);
	if (ret) {
		verb_failed(S, x, "ibv_destroy_cq", ret);
		if (!side_dead(S, x))
			return ret;
	}
	me->cq = NULL;
	return 0;
}

static int dealloc_pd(struct sess *S, int x)
{
	struct side *me = &S->s[x];
	int ret;

	if (!me->pd)
		return 0;
	doing(S, "ibv_dealloc_pd");
	ret = ibv_dealloc_pd(me->pd);
	if (me->qp || me->lmr || me->rmr) {
		if (!ret) {
			if (dev_probe(me->dev)) {
				ADD(busy_accepted, 1);
				report("t%d side %c: a PD in use was freed\n",
				       S->tid, 'A' + x);
			}
			me->pd = NULL;
		} else if (ret == EBUSY) {
			ADD(busy_refused, 1);
		} else {
			verb_failed(S, x, "ibv_dealloc_pd(busy)", ret);
		}
		return ret;
	}
	if (ret) {
		verb_failed(S, x, "ibv_dealloc_pd", ret);
		if (!side_dead(S, x))
			return ret;
	}
	me->pd = NULL;
	return 0;
}

/*
 * Destroy every object in a random order that respects the dependencies;
 * sometimes try a CQ or PD still in use first, which must be refused.
 */
static void destroy_all(struct sess *S)
{
	enum { O_QP, O_LMR, O_RMR, O_CQ, O_PD, O_NUM };
	int order[2 * O_NUM], n = 2 * O_NUM, i, j, tmp, left;
	bool done[2 * O_NUM] = { false };

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = rnd(S->rng, i + 1);
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	if (!rnd(S->rng, 4)) {
		j = rnd(S->rng, 2);
		if (S->s[j].qp)
			destroy_cq(S, j);
		if (S->s[j].lmr || S->s[j].rmr || S->s[j].qp)
			dealloc_pd(S, j);
	}
	for (left = n; left > 0;) {
		int progress = 0;

		for (i = 0; i < n; i++) {
			int o = order[i], x = o / O_NUM;
			struct side *me = &S->s[x];

			if (done[o])
				continue;
			switch (o % O_NUM) {
			case O_QP:
				destroy_qp(S, x);
				break;
			case O_LMR:
				dereg(S, x, false);
				break;
			case O_RMR:
				dereg(S, x, true);
				break;
			case O_CQ:
				if (me->qp)
					continue;
				destroy_cq(S, x);
				break;
			case O_PD:
				if (me->qp || me->lmr || me->rmr)
					continue;
				dealloc_pd(S, x);
				break;
			}
			done[o] = true;
			left--;
			progress = 1;
		}
		if (!progress)
			break;
	}
}

/* ---- checks at the end of a session ------------------------------------- */

/* Was the data of operation @i placed (as far as completions tell)? */
static bool placed(struct sess *S, int i)
{
	struct wr *w = &S->w[i], *r;

	if (w->bad)
		return false;	/* counted already */
	if (w->kind != K_SEND && w->state == W_DONE && !w->status)
		return true;
	if (w->pair < 0)
		return false;
	r = &S->w[w->pair];
	return r->state == W_DONE && !r->status;
}

static void check_buf(struct sess *S, int x, struct buf *b, const char *name)
{
	size_t off = 0;
	long at;
	int i;

	if (!b->p)
		return;
	if (b->snap) {
		/* Nothing written since it was frozen, below the 2nd batch. */
		size_t end = b->has_b2 ? b->b2 : b->len;

		for (off = 0; off < end; off++)
			if (b->p[off] != b->snap[off])
				break;
		if (off < end) {
			size_t first = off, last = off, nchg = 0;

			for (; off < end; off++)
				if (b->p[off] != b->snap[off]) {
					last = off;
					nchg++;
				}
			ADD(freeze_writes, 1);
			report("t%d WRITE AFTER FREEZE: side %c %s buffer: %zu bytes changed in [%zu, %zu] after \"%s\" %.3f s before the check (fault %s, QPs %u/%u)\n",
			       S->tid, 'A' + x, name, nchg, first, last,
			       b->snap_why, now() - b->snap_at,
			       fault_name[S->fault], S->s[0].qpn0, S->s[1].qpn0);
			for (i = 0; i < b->nsl; i++) {
				struct slice *s = &b->sl[i];
				struct wr *w;
				uint32_t seed;

				if (first >= s->off + s->len || last < s->off)
					continue;
				w = s->wr >= 0 ? &S->w[s->wr] : NULL;
				seed = s->role == R_SRC ? s->seed : w->seed;
				report("t%d   slice [%zu, +%u] %s of %s #%d (side %c, batch %d, %s, %s): pattern bytes at freeze %ld, now %ld\n",
				       S->tid, s->off, s->len,
				       s->role == R_SRC ? "source" : "target",
				       w ? kind_name[w->kind] : "spare", s->wr,
				       w ? 'A' + w->side : '-', w ? w->batch : -1,
				       w ? wstate_name(w->state) : "-",
				       w && w->state == W_DONE ? stname(w->status) : "-",
				       pat_prefix(b->snap + s->off, s->len, seed),
				       pat_prefix(b->p + s->off, s->len, seed));
				if (w && w->pair >= 0)
					report("t%d   its %s #%d: %s, %s\n", S->tid,
					       kind_name[S->w[w->pair].kind], w->pair,
					       wstate_name(S->w[w->pair].state),
					       stname(S->w[w->pair].status));
			}
		}
		off = 0;
	}
	for (i = 0; i <= b->nsl; i++) {
		struct slice *s = i < b->nsl ? &b->sl[i] : NULL;
		size_t gap_end = s ? s->off : b->len;

		at = pat_check(b->p + off, off, gap_end - off, b->bgseed);
		if (at >= 0) {
			ADD(data_err, 1);
			report("t%d DATA ERROR: side %c %s buffer: written outside any target at offset %zu (fault %s)\n",
			       S->tid, 'A' + x, name, off + at,
			       fault_name[S->fault]);
			return;
		}
		if (!s)
			break;
		if (s->role == R_SRC) {
			at = pat_check(b->p + s->off, 0, s->len, s->seed);
			if (at >= 0) {
				ADD(data_err, 1);
				report("t%d DATA ERROR: side %c %s buffer: source of %u B changed at byte %ld (fault %s)\n",
				       S->tid, 'A' + x, name, s->len, at,
				       fault_name[S->fault]);
				return;
			}
		} else if (placed(S, s->wr)) {
			at = pat_check(b->p + s->off, 0, s->len,
				       S->w[s->wr].seed);
			if (at >= 0)
				data_error(S, &S->w[s->wr],
					   "target changed after completion",
					   at);
		}
		off = s->off + s->len;
	}
}

/* A SEND (or WRITE with immediate) succeeded: its RECV did not fail. */
static void check_pairs(struct sess *S)
{
	int i;

	for (i = 0; i < S->nw; i++) {
		struct wr *w = &S->w[i], *r;

		if (w->kind == K_RECV || w->pair < 0 || w->state != W_DONE ||
		    w->status)
			continue;
		r = &S->w[w->pair];
		if (r->state == W_DONE && r->status) {
			ADD(inconsistent, 1);
			report("t%d %s #%d of %u B succeeded, its RECV failed: %s (fault %s)\n",
			       S->tid, kind_name[w->kind], i, w->len,
			       stname(r->status), fault_name[S->fault]);
		}
	}
}

/* ---- the session -------------------------------------------------------- */

static int setup_side(struct sess *S, int x)
{
	struct side *me = &S->s[x];

	me->ctx = me->dev->ctx;
	doing(S, "ibv_alloc_pd");
	me->pd = ibv_alloc_pd(me->ctx);
	if (!me->pd) {
		verb_failed(S, x, "ibv_alloc_pd", errno);
		return -1;
	}
	ADD(pds, 1);
	doing(S, "ibv_create_cq");
	me->cq = ibv_create_cq(me->ctx, me->cqe, NULL, NULL, 0);
	if (!me->cq) {
		verb_failed(S, x, "ibv_create_cq", errno);
		return -1;
	}
	ADD(cqs, 1);
	me->lmr = reg(S, x, &me->lb, IBV_ACCESS_LOCAL_WRITE);
	if (!me->lmr)
		return -1;
	me->rmr = reg(S, x, &me->rb, IBV_ACCESS_LOCAL_WRITE |
		      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!me->rmr)
		return -1;
	return create_qp(S, x);
}

static enum ibv_mtu pick_mtu(struct sess *S)
{
	enum ibv_mtu m = IBV_MTU_256 + rnd(S->rng, 3);	/* 256..1024 */

	if (m > S->s[0].dev->mtu)
		m = S->s[0].dev->mtu;
	if (m > S->s[1].dev->mtu)
		m = S->s[1].dev->mtu;
	return m;
}

static int connect_both(struct sess *S)
{
	enum ibv_mtu mtu = pick_mtu(S);

	S->mtu = mtu;
	S->told = 0;
	S->s[0].dest_rd = 1 + rnd(S->rng, 16);
	S->s[1].dest_rd = 1 + rnd(S->rng, 16);
	return connect_qp(S, 0, mtu) || connect_qp(S, 1, mtu) ? -1 : 0;
}

/* Post an operation that must not succeed: after dereg or ERR. */
static void post_extra(struct sess *S, int x, enum kind k)
{
	struct side *me = &S->s[x];
	struct wr *w;
	int i;

	if (!me->qp || side_dead(S, x))
		return;
	i = new_wr(S, k, x, 2);
	w = &S->w[i];
	w->len = SPARE_LEN;
	w->nsge = 1;
	w->must_fail = true;
	w->loff = k == K_RECV ? me->spare_recv : me->spare_src;
	w->roff = 0;
	post_chain(S, x, &i, 1);
}

/* Inject the session's fault on side S->fx, at the current point. */
static void inject(struct sess *S)
{
	int x = S->fx, y = !x, ret, i;
	struct side *me = &S->s[x];

	ADD(faults[S->fault], 1);
	VERBOSE("t%d fault %s on side %c, %d + %d pending\n", S->tid,
		fault_name[S->fault], 'A' + x, S->s[0].pending,
		S->s[1].pending);
	switch (S->fault) {
	case F_NONE:
		break;
	case F_DEREG_REMOTE:
		if (!dereg(S, x, true))
			post_extra(S, y, K_WRITE);
		break;
	case F_DEREG_LOCAL:
		if (!dereg(S, x, false))
			post_extra(S, x, K_SEND);
		break;
	case F_QP_ERR:
		force_err(S, x, "moved to ERR");
		if (!rnd(S->rng, 3))
			force_err(S, y, "moved to ERR");
		if (me->qs == Q_ERR) {
			post_extra(S, x, K_RECV);
			post_extra(S, x, K_SEND);
		}
		break;
	case F_QP_RESET:
		doing(S, "modify_qp(RESET)");
		if (modify_state(S, x, IBV_QPS_RESET))
			break;
		me->qs = Q_RESET;
		me->err_at = 0;
		freeze(S, &me->lb, "QP reset");
		freeze(S, &me->rb, "QP reset");
		discard_side(S, x);
		/* Posting to a QP in RESET is refused. */
		i = new_wr(S, K_SEND, x, 2);
		S->w[i].len = SPARE_LEN;
		S->w[i].nsge = 1;
		S->w[i].loff = me->spare_src;
		S->w[i].must_fail = true;
		doing(S, "ibv_post_send(RESET)");
		{
			struct ibv_send_wr wr, *bad = NULL;
			struct ibv_sge sg = {
				.addr = (uintptr_t)(me->lb.p + me->spare_src),
				.length = SPARE_LEN,
				.lkey = me->lmr ? me->lmr->lkey : 0,
			};

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = mkid(S, i);
			wr.sg_list = &sg;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			ret = ibv_post_send(me->qp, &wr, &bad);
		}
		if (ret) {
			S->w[i].state = W_NOTPOSTED;
			ADD(post_refused_ok, 1);
			if (dev_errno(ret))
				dev_dead(me->dev, "ibv_post_send", ret);
		} else {
			/* It sits in the ring now: drop it with a reset. */
			ADD(post_reset_accepted, 1);
			report("t%d side %c: ibv_post_send to a QP in RESET succeeded\n",
			       S->tid, 'A' + x);
			S->w[i].state = W_DISCARDED;
			modify_state(S, x, IBV_QPS_RESET);
		}
		break;
	case F_DESTROY_QP:
		destroy_qp(S, x);
		break;
	case F_DESTROY_ALL:
		destroy_all(S);
		break;
	default:
		break;
	}
}

/* After qp_err/qp_reset/destroy_qp: reset or replace both QPs, go again. */
static void recover(struct sess *S)
{
	int x;

	for (x = 0; x < 2; x++) {
		struct side *me = &S->s[x];

		if (me->qp && !rnd(S->rng, 3)) {
			/* A new QP instead of the old one. */
			if (destroy_qp(S, x))
				return;
		}
		if (!me->qp) {
			if (create_qp(S, x))
				return;
			continue;
		}
		if (me->qs != Q_RESET) {
			doing(S, "modify_qp(RESET)");
			if (modify_state(S, x, IBV_QPS_RESET))
				return;
			me->qs = Q_RESET;
			discard_side(S, x);
		}
		me->sq_psn = rnd(S->rng, 1u << 24);
	}
	if (connect_both(S))
		return;
	S->clean = true;
	ADD(batches, 1);
	ADD(clean_batches, 1);
	post_batch(S, 1);
	drain(S);
}

static void teardown(struct sess *S)
{
	int x;

	if (S->fault != F_DESTROY_ALL || S->s[0].pd || S->s[1].pd) {
		/* Everything has completed; destroy in a random order. */
		for (x = 0; x < 2; x++)
			if (S->s[x].qp && S->s[x].pending)
				settle_pending(S, x, W_DISCARDED);
		destroy_all(S);
	}
	/* Whatever is still there could not be destroyed: leak it. */
}

static void free_buf(struct buf *b, bool unmap)
{
	if (b->map && unmap)
		munmap(b->map, b->maplen);
	free(b->sl);
	free(b->snap);
	memset(b, 0, sizeof(*b));
}

static void session(struct sess *S, struct dev *da, struct dev *db)
{
	int x, nrecv[2] = { 0, 0 }, nsend[2] = { 0, 0 }, i, total;
	static const uint8_t fault_pick[] = {
		F_NONE, F_NONE, F_DEREG_REMOTE, F_DEREG_LOCAL, F_QP_ERR,
		F_QP_RESET, F_DESTROY_QP, F_DESTROY_ALL,
	};

	S->s[0].dev = da;
	S->s[1].dev = db;
	S->loopback = da == db;
	S->tag++;
	do
		S->fault = fault_pick[rnd(S->rng, sizeof(fault_pick))];
	while (!(opt.faults & 1u << S->fault));
	S->fx = rnd(S->rng, 2);
	S->clean = S->fault == F_NONE;
	ADD(sessions, 1);
	if (S->loopback)
		ADD(loopback_sessions, 1);

	/* Plan: spares, batch 1, batch 2; then size everything. */
	for (x = 0; x < 2; x++) {
		struct side *me = &S->s[x];

		me->spare_seed = (uint32_t)rnd64(S->rng) | 1;
		me->spare_src = buf_alloc(S, &me->lb, SPARE_LEN, R_SRC, -1,
					  me->spare_seed);
		me->spare_recv = buf_alloc(S, &me->lb, SPARE_LEN, -1, 0, 0);
	}
	plan_batch(S, 0);
	if (fault_recovers(S->fault)) {
		for (x = 0; x < 2; x++) {
			S->s[x].lb.b2 = S->s[x].lb.used;
			S->s[x].rb.b2 = S->s[x].rb.used;
			S->s[x].lb.has_b2 = S->s[x].rb.has_b2 = true;
		}
		plan_batch(S, 1);
	}
	for (i = 0; i < S->nw; i++) {
		if (S->w[i].kind == K_RECV)
			nrecv[S->w[i].side]++;
		else
			nsend[S->w[i].side]++;
	}
	for (x = 0; x < 2; x++) {
		struct side *me = &S->s[x];

		me->sq_wr = nsend[x] + 4;
		me->rq_wr = nrecv[x] + 4;
		me->cqe = 2 * (me->sq_wr + me->rq_wr) + 16;
		if (buf_map(S, &me->lb) || buf_map(S, &me->rb)) {
			perror("mmap");
			exit(2);
		}
	}

	for (x = 0; x < 2; x++)
		if (setup_side(S, x))
			goto out_teardown;
	if (connect_both(S))
		goto out_teardown;

	ADD(batches, 1);
	if (S->clean)
		ADD(clean_batches, 1);
	post_batch(S, 0);
	total = S->s[0].pending + S->s[1].pending;
	/* The fault comes after a random number of completions or a delay. */
	if (rnd(S->rng, 2))
		poll_for(S, rnd(S->rng, total + 1), opt.stall);
	else
		poll_for(S, total + 1, rnd(S->rng, 30000) / 1e6);
	inject(S);
	if (S->fault != F_DESTROY_ALL)
		drain(S);
	if (fault_recovers(S->fault) && !any_dead(S))
		recover(S);
out_teardown:
	teardown(S);
	if (S->fault == F_DESTROY_ALL)
		usleep(50000);	/* time for packets still on their way */
	check_pairs(S);
	for (x = 0; x < 2; x++) {
		struct side *me = &S->s[x];
		/* A buffer whose MR could not be deregistered stays mapped. */
		bool lfree = !me->lmr || side_dead(S, x);
		bool rfree = !me->rmr || side_dead(S, x);

		check_buf(S, x, &me->lb, "local");
		check_buf(S, x, &me->rb, "remote");
		free_buf(&me->lb, lfree);
		free_buf(&me->rb, rfree);
	}
	for (x = 0; x < 2; x++) {
		struct dev *d = S->s[x].dev;

		memset(&S->s[x], 0, sizeof(S->s[x]));
		S->s[x].dev = d;
	}
	S->nw = 0;
}

static void *thread_main(void *arg)
{
	struct thr *t = arg;
	struct sess *S = &t->S;
	struct dev *da, *db;

	S->tid = t->id;
	S->rng = &t->rng;
	while (now() < t_deadline) {
		doing(S, "opening devices");
		da = dev_get(&devs[0]);
		db = dev_get(&devs[1]);
		if (!da && !db) {
			if (devs[0].gone && devs[1].gone)
				break;
			usleep(100000);
			continue;
		}
		if (!opt.removal && (!da || !db)) {
			report("t%d: a device went away\n", t->id);
			if (da)
				dev_put(da);
			if (db)
				dev_put(db);
			break;
		}
		/* A device is gone: go on in loopback on the other. */
		if (!da)
			da = dev_get(db);
		else if (!db)
			db = dev_get(da);
		if (!da || !db) {
			dev_put(da ? da : db);
			continue;
		}
		session(S, da, db);
		dev_put(da);
		dev_put(db);
	}
	free(S->w);
	doing(S, "done");
	return NULL;
}

static void print_stats(void)
{
	long posted = 0, wcs = 0;
	int k, f, s;

	for (k = 0; k < K_NUM; k++)
		posted += st.posted[k];
	for (s = 0; s < NSTATUS; s++)
		wcs += st.wc[s];
	pthread_mutex_lock(&print_lock);
	printf("srdma_stress: %.1f s, %d threads, %s and %s\n",
	       now() - t_start, opt.threads, opt.dev[0], opt.dev[1]);
	printf("sessions %ld (loopback %ld), batches %ld (clean %ld)\n",
	       st.sessions, st.loopback_sessions, st.batches,
	       st.clean_batches);
	printf("faults:");
	for (f = 0; f < F_NUM; f++)
		printf(" %s %ld", fault_name[f], st.faults[f]);
	printf("\nobjects created: qp %ld cq %ld mr %ld pd %ld\n", st.qps,
	       st.cqs, st.mrs, st.pds);
	printf("work requests posted: %ld (", posted);
	for (k = 0; k < K_NUM; k++)
		printf("%s%s %ld", k ? " " : "", kind_name[k], st.posted[k]);
	printf("), post failures %ld, refused in RESET %ld\n", st.post_failed,
	       st.post_refused_ok);
	printf("completions: %ld (", wcs);
	for (s = 0, k = 0; s < NSTATUS; s++)
		if (st.wc[s])
			printf("%s%s %ld", k++ ? ", " : "", stname(s),
			       st.wc[s]);
	printf(")\n");
	printf("without completion: discarded by reset/destroy %ld, lost with a device %ld, hung %ld\n",
	       st.discarded, st.lost, st.hung);
	printf("data verified: %ld bytes\n", st.bytes_checked);
	if (opt.removal)
		printf("errors in clean batches during removals: %ld\n",
		       st.unexpected_removal);
	printf("busy CQ/PD destroys refused %ld, async events %ld (device fatal %ld), device errors %ld\n",
	       st.busy_refused, st.async_events, st.async_fatal,
	       st.dev_errors);
	printf("errors: data %ld, fields %ld, hung %ld, late %ld, duplicate %ld, unknown %ld, unexpected %ld, inconsistent %ld, succeeded-though-invalid %ld, writes-after-freeze %ld, reset-post-accepted %ld, busy-destroy-accepted %ld, verb failures %ld\n",
	       st.data_err, st.field_err, st.hung, st.late, st.dup, st.bogus,
	       st.unexpected, st.inconsistent, st.must_fail_ok,
	       st.freeze_writes, st.post_reset_accepted, st.busy_accepted,
	       st.verb_fail);
	for (k = 0; k < 2; k++)
		if (devs[k].dead || devs[k].gone)
			printf("device removed: %s\n", devs[k].name);
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
}

static long failures(void)
{
	long n = st.data_err + st.field_err + st.hung + st.late + st.dup +
		 st.bogus + st.unexpected + st.inconsistent + st.must_fail_ok +
		 st.freeze_writes + st.post_reset_accepted + st.busy_accepted;

	/* Verbs that fail without a removed device. */
	if (!opt.removal)
		n += st.verb_fail + st.dev_errors;
	return n;
}

static void *watchdog(void *arg)
{
	int i;

	(void)arg;
	while (now() < t_hard)
		usleep(200000);
	pthread_mutex_lock(&print_lock);
	printf("srdma_stress: WATCHDOG: not done %.0f s after the deadline\n",
	       t_hard - t_deadline);
	for (i = 0; i < opt.threads; i++) {
		const char *what = __atomic_load_n(&thr[i].doing,
						   __ATOMIC_ACQUIRE);
		long since = __atomic_load_n(&thr[i].since_ms,
					     __ATOMIC_RELAXED);

		printf("  thread %d: %s for %.1f s\n", i, what ? what : "?",
		       now() - since / 1000.0);
	}
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
	print_stats();
	_exit(3);
}

/* A comma-separated list of @names: a bit mask, 0 if a name is unknown. */
static unsigned int parse_names(char *arg, const char * const *names, int n)
{
	unsigned int mask = 0;
	char *tok, *save;
	int i;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < n; i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == n)
			return 0;
		mask |= 1u << i;
	}
	return mask;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: srdma_stress [-a DEV_A] [-b DEV_B] [-t SECS] [-n THREADS] [-r]\n"
		"                    [-m MAXLEN] [-o MAXOPS] [-w BOUND] [-s SEED] [-v]\n"
		"                    [-k write,write_imm,read,send] [-f FAULT,...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	pthread_t wd;
	long fails;
	int c, i;

	opt.seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
	/*
	 * srdma_test_slow(): a slow machine is not a lost peer. Stall and
	 * hang bounds given on the command line still win.
	 */
	opt.slow = srdma_test_slow();
	opt.stall *= 1 + opt.slow;
	opt.cap *= 1 + opt.slow;
	opt.bound *= 1 + opt.slow;
	while ((c = getopt(argc, argv, "a:b:t:n:m:o:w:s:k:f:rv")) != -1) {
		switch (c) {
		case 'a':
			opt.dev[0] = optarg;
			break;
		case 'b':
			opt.dev[1] = optarg;
			break;
		case 't':
			opt.secs = atoi(optarg);
			break;
		case 'n':
			opt.threads = atoi(optarg);
			break;
		case 'm':
			opt.maxlen = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			opt.maxops = atoi(optarg);
			break;
		case 'w':
			opt.bound = atoi(optarg);
			break;
		case 's':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			/* RECVs come with SENDs and WRITEs with immediate. */
			opt.kinds = parse_names(optarg, kind_name, K_RECV);
			if (!opt.kinds)
				usage();
			break;
		case 'f':
			opt.faults = parse_names(optarg, fault_name, F_NUM);
			if (!opt.faults)
				usage();
			break;
		case 'r':
			opt.removal = true;
			break;
		case 'v':
			opt.verbose = true;
			break;
		default:
			usage();
		}
	}
	if (opt.threads < 1 || opt.threads > MAX_THREADS || opt.secs < 1 ||
	    opt.maxlen < 1 || opt.maxlen > (1u << 30) || opt.maxops < 1 ||
	    opt.bound < 1 || !strcmp(opt.dev[0], opt.dev[1]))
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (i = 0; i < 2; i++) {
		devs[i].name = opt.dev[i];
		pthread_mutex_init(&devs[i].ev_lock, NULL);
		if (!dev_get(&devs[i])) {
			fprintf(stderr, "srdma_stress: cannot open %s or it has no IPv4 RoCEv2 GID\n",
				opt.dev[i]);
			return 2;
		}
	}
	printf("srdma_stress: seed %#" PRIx64 ", %d s, %d threads, %s (gid %d) and %s (gid %d)%s\n",
	       opt.seed, opt.secs, opt.threads, devs[0].name, devs[0].gidx,
	       devs[1].name, devs[1].gidx,
	       opt.removal ? ", devices may go away" : "");

	t_start = now();
	t_deadline = t_start + opt.secs;
	/* The last session: a batch, a stall, the flush bound, a 2nd batch. */
	t_hard = t_deadline + 2 * (opt.cap + opt.bound) + 20;
	alarm((unsigned int)(t_hard - t_start) + 30);	/* the watchdog's own */
	if (pthread_create(&wd, NULL, watchdog, NULL)) {
		perror("pthread_create");
		return 2;
	}
	for (i = 0; i < opt.threads; i++) {
		thr[i].id = i;
		thr[i].rng = mix64(opt.seed + i + 1) | 1;
		thr[i].since_ms = (long)(now() * 1000);
		if (pthread_create(&thr[i].th, NULL, thread_main, &thr[i])) {
			perror("pthread_create");
			return 2;
		}
	}
	for (i = 0; i < 2; i++)
		dev_put(&devs[i]);
	for (i = 0; i < opt.threads; i++)
		pthread_join(thr[i].th, NULL);

	for (i = 0; i < 2; i++) {
		/* Read the last async events; close what is still open. */
		if (devs[i].ctx && !devs[i].dead)
			dev_probe(&devs[i]);
		if (devs[i].ctx && !devs[i].refs) {
			ibv_close_device(devs[i].ctx);
			devs[i].ctx = NULL;
		}
	}
	print_stats();
	fails = failures();
	printf("srdma_stress: %s (%ld failed checks)\n", fails ? "FAIL" : "PASS",
	       fails);
	return fails ? 1 : 0;
}
