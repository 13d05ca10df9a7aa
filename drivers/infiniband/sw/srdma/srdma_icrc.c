// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma ICRC engine: the CRC-32 (IEEE 802.3, reflected) behind the ICRC.
 *
 * Two kernel implementations compute it: the library's crc32_le()
 * (slice-by-8 tables) and the crypto API's "crc32" shash, which is
 * crc32-pclmul (carry-less multiply) where the CPU has it. Which one is
 * faster depends on the machine: PCLMULQDQ wins by a wide margin on real
 * x86 hardware, while under QEMU's TCG every PCLMULQDQ is emulated. So
 * at load time srdma times both on the same buffer, checks that they
 * agree, and uses the faster one; the result is logged.
 */
#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/jump_label.h>
#include <linux/ktime.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "srdma.h"

#define SRDMA_CRC_BENCH_LEN	16384
#define SRDMA_CRC_BENCH_ROUNDS	8

static struct crypto_shash *srdma_crc_tfm;
static DEFINE_STATIC_KEY_FALSE(srdma_crc_use_shash);

static u32 srdma_crc32_shash(u32 crc, const void *buf, u32 len)
{
	SHASH_DESC_ON_STACK(desc, srdma_crc_tfm);

	/* The descriptor's state is the running CRC: set it, run, read it. */
	desc->tfm = srdma_crc_tfm;
	if (crypto_shash_import(desc, &crc) ||
	    crypto_shash_update(desc, buf, len) ||
	    crypto_shash_export(desc, &crc))
		crc = crc32_le(crc, buf, len);	/* cannot happen for crc32 */
	return crc;
}

u32 srdma_crc32(u32 crc, const void *buf, u32 len)
{
	if (static_branch_unlikely(&srdma_crc_use_shash))
		return srdma_crc32_shash(crc, buf, len);
	return crc32_le(crc, buf, len);
}

/* Nanoseconds @fn takes for SRDMA_CRC_BENCH_ROUNDS passes over @buf. */
static u64 srdma_crc_time(u32 (*fn)(u32, const void *, u32), const u8 *buf,
			  u32 *out)
{
	u64 t0 = ktime_get_ns();
	u32 crc = ~0U;
	int i;

	for (i = 0; i < SRDMA_CRC_BENCH_ROUNDS; i++)
		crc = fn(crc, buf, SRDMA_CRC_BENCH_LEN);
	*out = crc;
	return max_t(u64, ktime_get_ns() - t0, 1);
}

static u32 srdma_crc32_lib(u32 crc, const void *buf, u32 len)
{
	return crc32_le(crc, buf, len);
}

void srdma_icrc_init(void)
{
	struct crypto_shash *tfm;
	u64 t_lib, t_shash;
	u32 c_lib, c_shash;
	u8 *buf;

	tfm = crypto_alloc_shash("crc32", 0, 0);
	if (IS_ERR(tfm)) {
		pr_info("srdma: ICRC with crc32_le (no crc32 shash: %ld)\n",
			PTR_ERR(tfm));
		return;
	}
	buf = kmalloc(SRDMA_CRC_BENCH_LEN, GFP_KERNEL);
	if (!buf)
		goto out_free_tfm;
	get_random_bytes(buf, SRDMA_CRC_BENCH_LEN);
	srdma_crc_tfm = tfm;
	t_lib = srdma_crc_time(srdma_crc32_lib, buf, &c_lib);
	t_shash = srdma_crc_time(srdma_crc32_shash, buf, &c_shash);
	kfree(buf);
	pr_info("srdma: ICRC: crc32_le %llu MB/s, %s %llu MB/s%s\n",
		div64_u64(1000ULL * SRDMA_CRC_BENCH_LEN *
			  SRDMA_CRC_BENCH_ROUNDS, t_lib),
		crypto_shash_driver_name(tfm),
		div64_u64(1000ULL * SRDMA_CRC_BENCH_LEN *
			  SRDMA_CRC_BENCH_ROUNDS, t_shash),
		c_lib != c_shash ? " (results differ: not used)" : "");
	if (c_lib == c_shash && t_shash < t_lib) {
		static_branch_enable(&srdma_crc_use_shash);
		pr_info("srdma: ICRC uses %s\n", crypto_shash_driver_name(tfm));
		return;
	}
	pr_info("srdma: ICRC uses crc32_le\n");
out_free_tfm:
	srdma_crc_tfm = NULL;
	crypto_free_shash(tfm);
}

void srdma_icrc_exit(void)
{
	static_branch_disable(&srdma_crc_use_shash);
	if (srdma_crc_tfm)
		crypto_free_shash(srdma_crc_tfm);
	srdma_crc_tfm = NULL;
}
