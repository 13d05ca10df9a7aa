// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma copy: payload bytes from a packet into memory, and between
 * memory and memory, on the data path.
 *
 * On x86 CPUs with ERMS the kernel's memcpy() is one "rep movsb". Real
 * hardware moves a cache line at a time for it; QEMU's TCG, which runs
 * the test guests, emulates it a byte at a time, each byte through its
 * software MMU: about 200 MB/s, where a loop of 8-byte loads and stores
 * runs at 1.1-1.4 GB/s in the same guest (performance.rst). On the
 * receive side the copy into the MR was then the largest single cost of
 * a packet. So, as for the ICRC, srdma times both at load on the same
 * buffers, checks that they agree, and uses the faster; the module
 * parameter copy_engine can force either and reads back the choice.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jump_label.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <asm/unaligned.h>

#include "srdma.h"

#define SRDMA_COPY_BENCH_LEN	1024
#define SRDMA_COPY_BENCH_ROUNDS	64
#define SRDMA_COPY_BENCH_PASSES	3

DEFINE_STATIC_KEY_FALSE(srdma_copy_use_words);

/*
 * -1: choose at load (default); 0: memcpy(); 1: the 8-byte word loop.
 * Read at load; after it, says which one is in use.
 */
static int copy_engine = -1;
module_param(copy_engine, int, 0444);
MODULE_PARM_DESC(copy_engine, "data copies: -1 the faster, timed at load (default), 0 memcpy(), 1 8-byte words; reads back the choice");

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
 * srdma_skb_copy() - copy bytes of a packet to memory, as skb_copy_bits()
 * @skb: the packet
 * @off: the first byte, from skb->data
 * @to: where to
 * @len: bytes
 *
 * Wherever the bytes live (head, page fragments, fragment list), with
 * the copy engine in use.
 *
 * Context: Any context.
 * Return: 0, or -EFAULT if @skb has fewer than @off + @len bytes.
 */
int srdma_skb_copy(const struct sk_buff *skb, u32 off, void *to, u32 len)
{
	struct skb_seq_state st;
	unsigned int done = 0, n;
	const u8 *p;

	if (!static_branch_unlikely(&srdma_copy_use_words))
		return skb_copy_bits(skb, off, to, len);
	if (off > skb->len || len > skb->len - off)
		return -EFAULT;
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

/*
 * Nanoseconds @fn takes to copy SRDMA_COPY_BENCH_ROUNDS times: the least
 * of a few passes, after one untimed (under TCG, code that has not run
 * yet is translated first, which the first pass would pay).
 */
static u64 srdma_copy_time(void (*fn)(void *, const void *, size_t),
			   u8 *dst, const u8 *src)
{
	u64 t0, best = U64_MAX;
	int i, pass;

	for (pass = 0; pass <= SRDMA_COPY_BENCH_PASSES; pass++) {
		t0 = ktime_get_ns();
		for (i = 0; i < SRDMA_COPY_BENCH_ROUNDS; i++)
			fn(dst, src + (i & 7), SRDMA_COPY_BENCH_LEN);
		if (pass)
			best = min(best, ktime_get_ns() - t0);
	}
	return max_t(u64, best, 1);
}

/* Does the word loop copy every length and alignment as memcpy() does? */
static bool srdma_copy_agrees(u8 *a, u8 *b, const u8 *src)
{
	u32 len, soff, doff;

	for (len = 0; len <= 80; len++) {
		for (soff = 0; soff < 8; soff++) {
			for (doff = 0; doff < 8; doff += 3) {
				memset(a, 0x5a, SRDMA_COPY_BENCH_LEN);
				memset(b, 0x5a, SRDMA_COPY_BENCH_LEN);
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
 * Times memcpy() and srdma_copy_words() on the same buffers, 1 KiB at a
 * time, and uses the word loop if it is faster and copies exactly as
 * memcpy() does, unless copy_engine forces a choice. Falls back on
 * memcpy() on any failure.
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
		t_lib = srdma_copy_time(srdma_copy_libc, buf,
					buf + SRDMA_COPY_BENCH_LEN);
		t_words = srdma_copy_time(srdma_copy_words, buf,
					  buf + SRDMA_COPY_BENCH_LEN);
		words = t_words < t_lib;
		pr_debug("copy: memcpy %llu MB/s, 8-byte words %llu MB/s\n",
			 div64_u64(1000ULL * SRDMA_COPY_BENCH_LEN *
				   SRDMA_COPY_BENCH_ROUNDS, t_lib),
			 div64_u64(1000ULL * SRDMA_COPY_BENCH_LEN *
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
