// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma copy: payload bytes from a packet into memory, and between
 * memory and memory, on the data path.
 *
 * On x86 CPUs with ERMS the kernel's memcpy() is one "rep movsb". Real
 * hardware moves a cache line at a time for it; QEMU's TCG, which runs
 * the test guests, emulates it a byte at a time, each byte through its
 * software MMU: in a test guest about 330 MB/s, where a loop of 8-byte
 * loads and stores ran at 3.6-4.3 GB/s (performance.rst). On the receive
 * side the copy into the MR was then the largest single cost of a
 * packet. So, as for the ICRC, srdma times both at load on the same
 * buffers, checks that they agree, and uses the word loop only if it is
 * more than twice as fast: on real hardware the two are within tens of
 * percent, and memcpy() wins at the sizes that matter. The module
 * parameter copy_engine can force either and reads back the choice.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jump_label.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "srdma.h"

/* Copies of a page (the size of a packet at MTU 4096), ROUNDS a pass. */
#define SRDMA_COPY_BENCH_LEN	PAGE_SIZE
#define SRDMA_COPY_BENCH_ROUNDS	16
#define SRDMA_COPY_BENCH_PASSES	4
/* Bytes the self-check copies at most, at every alignment. */
#define SRDMA_COPY_CHECK_LEN	80

DEFINE_STATIC_KEY_FALSE(srdma_copy_use_words);

/*
 * Below 0: choose at load (default); 0: memcpy(); above 0: the 8-byte
 * word loop. Read at load; after it, 0 or 1, the one in use.
 */
static int copy_engine = -1;
module_param(copy_engine, int, 0444);
MODULE_PARM_DESC(copy_engine, "data copies: -1 timed at load (default), 0 memcpy(), 1 8-byte words; reads back the choice");

/**
 * srdma_copy_words() - copy @len bytes with 8-byte loads and stores
 * @dst: where to, not overlapping @src
 * @src: where from
 * @len: bytes
 *
 * Any alignment. The barrier in each loop keeps the compiler from
 * turning a loop back into a call of memcpy().
 *
 * Context: Any context.
 */
void srdma_copy_words(void *dst, const void *src, size_t len)
{
	const u8 *s = src;
	u8 *d = dst;
	u64 a, b, c, e;

	for (; len >= 32; len -= 32, s += 32, d += 32) {
		a = get_unaligned((const u64 *)s);
		b = get_unaligned((const u64 *)(s + 8));
		c = get_unaligned((const u64 *)(s + 16));
		e = get_unaligned((const u64 *)(s + 24));
		put_unaligned(a, (u64 *)d);
		put_unaligned(b, (u64 *)(d + 8));
		put_unaligned(c, (u64 *)(d + 16));
		put_unaligned(e, (u64 *)(d + 24));
		barrier();
	}
	for (; len >= 8; len -= 8, s += 8, d += 8) {
		put_unaligned(get_unaligned((const u64 *)s), (u64 *)d);
		barrier();
	}
	for (; len; len--) {
		*d++ = *s++;
		barrier();
	}
}

/**
 * __srdma_skb_copy_words() - srdma_skb_copy() with the word loop
 * @skb: the packet
 * @off: the first byte, from skb->data
 * @to: where to
 * @len: bytes
 *
 * The bytes in the head, in page fragments and in a fragment list one
 * level deep, through skb_seq_read(); a packet whose fragment list holds
 * fragment lists of its own (which the sequential reader does not walk)
 * goes to skb_copy_bits().
 *
 * Context: Any context.
 * Return: 0, or -EFAULT if @skb has fewer than @off + @len bytes.
 */
int __srdma_skb_copy_words(const struct sk_buff *skb, u32 off, void *to,
			   u32 len)
{
	struct skb_seq_state st;
	unsigned int done = 0, n;
	const struct sk_buff *seg;
	const u8 *p;

	if (off > skb->len || len > skb->len - off)
		return -EFAULT;
	skb_walk_frags(skb, seg)
		if (skb_has_frag_list(seg))
			return skb_copy_bits(skb, off, to, len);
	/* Reads only; the sequential reader's prototype is not const. */
	skb_prepare_seq_read((struct sk_buff *)skb, off, off + len, &st);
	while (done < len) {
		n = skb_seq_read(done, &p, &st);
		if (!n)		/* it has let go of its mapping */
			return -EFAULT;
		n = min(n, len - done);
		srdma_copy_words(to + done, p, n);
		done += n;
	}
	skb_abort_seq_read(&st);
	return 0;
}

/*
 * The kernel's memcpy() as the data path calls it: with a length the
 * compiler cannot see, which it would otherwise copy inline.
 */
static noinline void srdma_copy_libc(void *dst, const void *src, size_t len)
{
	OPTIMIZER_HIDE_VAR(len);
	memcpy(dst, src, len);
}

/* Nanoseconds @fn takes for SRDMA_COPY_BENCH_ROUNDS copies, preemption off. */
static u64 srdma_copy_pass(void (*fn)(void *, const void *, size_t),
			   u8 *dst, const u8 *src)
{
	u64 t0;
	int i;

	preempt_disable();
	t0 = ktime_get_ns();
	for (i = 0; i < SRDMA_COPY_BENCH_ROUNDS; i++)
		fn(dst, src + (i & 7), SRDMA_COPY_BENCH_LEN - 8);
	t0 = ktime_get_ns() - t0;
	preempt_enable();
	return max_t(u64, t0, 1);
}

/*
 * The least time of SRDMA_COPY_BENCH_PASSES passes of each engine, the
 * two taking turns, after one untimed pass each (under TCG, code that has
 * not run yet is translated first, which a first pass would pay).
 */
static void srdma_copy_time(u8 *dst, const u8 *src, u64 *t_lib, u64 *t_words)
{
	int pass;

	*t_lib = U64_MAX;
	*t_words = U64_MAX;
	srdma_copy_pass(srdma_copy_libc, dst, src);
	srdma_copy_pass(srdma_copy_words, dst, src);
	for (pass = 0; pass < SRDMA_COPY_BENCH_PASSES; pass++) {
		*t_lib = min(*t_lib, srdma_copy_pass(srdma_copy_libc, dst, src));
		*t_words = min(*t_words,
			       srdma_copy_pass(srdma_copy_words, dst, src));
	}
}

/* Does the word loop copy every length and alignment as memcpy() does? */
static bool srdma_copy_agrees(u8 *a, u8 *b, const u8 *src)
{
	u32 len, soff, doff;

	for (len = 0; len <= SRDMA_COPY_CHECK_LEN; len++) {
		for (soff = 0; soff < 8; soff++) {
			for (doff = 0; doff < 8; doff++) {
				memset(a, 0x5a, len + 16);
				memset(b, 0x5a, len + 16);
				memcpy(a + doff, src + soff, len);
				srdma_copy_words(b + doff, src + soff, len);
				if (memcmp(a, b, len + 16))
					return false;
			}
		}
	}
	return true;
}

/**
 * srdma_copy_init() - choose how the data path copies
 *
 * Unless copy_engine forces a choice, times memcpy() and
 * srdma_copy_words() on the same buffers, a page at a time, and uses the
 * word loop if it is more than twice as fast; in any case only if it
 * copies exactly as memcpy() does. Falls back on memcpy() on any failure.
 *
 * Context: Process context (module load), may sleep.
 */
void srdma_copy_init(void)
{
	u64 t_lib = 0, t_words = 0;
	bool words = false;
	u8 *buf;

	buf = kmalloc(3 * SRDMA_COPY_BENCH_LEN, GFP_KERNEL);
	if (!buf)
		goto out;
	get_random_bytes(buf, 3 * SRDMA_COPY_BENCH_LEN);
	if (!srdma_copy_agrees(buf, buf + SRDMA_COPY_BENCH_LEN,
			       buf + 2 * SRDMA_COPY_BENCH_LEN)) {
		pr_warn("8-byte copy differs from memcpy(): not used\n");
		kfree(buf);
		goto out;
	}
	if (copy_engine < 0) {
		srdma_copy_time(buf, buf + SRDMA_COPY_BENCH_LEN, &t_lib,
				&t_words);
		words = 2 * t_words < t_lib;
		pr_debug("copy: memcpy %llu MB/s, 8-byte words %llu MB/s\n",
			 div64_u64(1000ULL * (SRDMA_COPY_BENCH_LEN - 8) *
				   SRDMA_COPY_BENCH_ROUNDS, t_lib),
			 div64_u64(1000ULL * (SRDMA_COPY_BENCH_LEN - 8) *
				   SRDMA_COPY_BENCH_ROUNDS, t_words));
	} else {
		words = copy_engine > 0;
	}
	kfree(buf);
out:
	if (words)
		static_branch_enable(&srdma_copy_use_words);
	copy_engine = words;
	pr_debug("copy uses %s\n", words ? "8-byte words" : "memcpy()");
}

/**
 * srdma_copy_exit() - back to memcpy()
 *
 * Context: Process context (module unload or failed load), with no
 * packet left to copy.
 */
void srdma_copy_exit(void)
{
	static_branch_disable(&srdma_copy_use_words);
}
