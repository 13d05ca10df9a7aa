// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma ICRC: the invariant CRC that ends every RoCEv2 packet (IBTA vol. 1
 * annex A17.8), generated on transmit and checked on receive.
 *
 * It is a CRC-32 over a pseudo header, then the rest of the packet up to
 * the ICRC (extension headers, payload, pad). The pseudo header is 8 bytes
 * of ones standing for the LRH (folded into SRDMA_ICRC_SEED), then the IP,
 * UDP and BTH headers with the fields that may change on the way set to
 * ones. Which fields those are is wire format, in srdma_wire.c
 * (srdma_icrc_mask()): plain C, unit-tested in user space against packets
 * built independently.
 *
 * The CRC-32 (IEEE 802.3, reflected) has two kernel implementations: the
 * library's crc32_le() (slice-by-8 tables) and the crypto API's "crc32"
 * shash, which is crc32-pclmul (carry-less multiply) where the CPU has it.
 * Which one is faster depends on the machine: PCLMULQDQ wins by a wide
 * margin on real x86 hardware, while under QEMU's TCG every PCLMULQDQ is
 * emulated. So at load time srdma times both on the same buffer, checks
 * that they agree, and uses the faster one; the choice is logged at debug
 * level.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jump_label.h>
#include <linux/ktime.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/udp.h>

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

/* CRC-32 (IEEE, reflected) of @len bytes at @buf, no inversion. */
static u32 srdma_crc32(u32 crc, const void *buf, u32 len)
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

/**
 * srdma_icrc_init() - choose the CRC-32 implementation the ICRC uses
 *
 * Times crc32_le() and the crypto API's "crc32" shash on the same random
 * buffer and enables the shash if it gives the same result faster. Falls
 * back on crc32_le() on any failure.
 *
 * Context: Process context (module load), may sleep.
 */
void srdma_icrc_init(void)
{
	struct crypto_shash *tfm;
	u64 t_lib, t_shash;
	u32 c_lib, c_shash;
	u8 *buf;

	tfm = crypto_alloc_shash("crc32", 0, 0);
	if (IS_ERR(tfm)) {
		pr_debug("ICRC with crc32_le (no crc32 shash: %ld)\n",
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
	pr_debug("ICRC: crc32_le %llu MB/s, %s %llu MB/s%s\n",
		 div64_u64(1000ULL * SRDMA_CRC_BENCH_LEN *
			   SRDMA_CRC_BENCH_ROUNDS, t_lib),
		 crypto_shash_driver_name(tfm),
		 div64_u64(1000ULL * SRDMA_CRC_BENCH_LEN *
			   SRDMA_CRC_BENCH_ROUNDS, t_shash),
		 c_lib != c_shash ? " (results differ: not used)" : "");
	if (c_lib == c_shash && t_shash < t_lib) {
		static_branch_enable(&srdma_crc_use_shash);
		pr_debug("ICRC uses %s\n", crypto_shash_driver_name(tfm));
		return;
	}
	pr_debug("ICRC uses crc32_le\n");
out_free_tfm:
	srdma_crc_tfm = NULL;
	crypto_free_shash(tfm);
}

/**
 * srdma_icrc_exit() - release the CRC-32 implementation
 *
 * Context: Process context (module unload or failed load), with no packet
 * left to send or receive.
 */
void srdma_icrc_exit(void)
{
	static_branch_disable(&srdma_crc_use_shash);
	if (srdma_crc_tfm)
		crypto_free_shash(srdma_crc_tfm);
	srdma_crc_tfm = NULL;
}

/* CRC-32 of @len bytes of @skb from @off, wherever they live. */
static u32 srdma_icrc_skb(struct sk_buff *skb, int off, u32 len, u32 crc)
{
	struct skb_seq_state st;
	unsigned int done = 0, n;
	const u8 *data;

	skb_prepare_seq_read(skb, off, off + len, &st);
	while (done < len && (n = skb_seq_read(done, &data, &st)) != 0) {
		/* A block may run past the end of the range asked for. */
		n = min(n, len - done);
		crc = srdma_crc32(crc, data, n);
		done += n;
	}
	skb_abort_seq_read(&st);
	return crc;
}

/* CRC-32 of the pseudo header: the LRH's ones, then IP, UDP, BTH masked. */
static u32 srdma_icrc_hdrs(const void *iph, const void *udph, const u8 *bth,
			   bool ipv6)
{
	u32 iplen = ipv6 ? SRDMA_IPV6_HDR_LEN : SRDMA_IPV4_HDR_LEN;
	u8 hdrs[SRDMA_ICRC_HDRS_MAX];

	BUILD_BUG_ON(sizeof(struct iphdr) != SRDMA_IPV4_HDR_LEN);
	BUILD_BUG_ON(sizeof(struct ipv6hdr) != SRDMA_IPV6_HDR_LEN);
	BUILD_BUG_ON(sizeof(struct udphdr) != SRDMA_UDP_HDR_LEN);
	memcpy(hdrs, iph, iplen);
	memcpy(hdrs + iplen, udph, SRDMA_UDP_HDR_LEN);
	memcpy(hdrs + iplen + SRDMA_UDP_HDR_LEN, bth, SRDMA_BTH_LEN);
	srdma_icrc_mask(hdrs, ipv6);
	return srdma_crc32(SRDMA_ICRC_SEED, hdrs, srdma_icrc_hdrs_len(ipv6));
}

/**
 * srdma_icrc_generate() - compute the ICRC of an outgoing packet and store it
 * @skb: the packet, from its IP header on: IP at the network header, UDP
 *	 at the transport header, both linear and followed by BTH; the last
 *	 SRDMA_ICRC_LEN bytes are the ICRC's room. The payload may be in
 *	 fragments.
 * @ipv6: the IP header is IPv6, else IPv4
 *
 * Context: Any context.
 */
void srdma_icrc_generate(struct sk_buff *skb, bool ipv6)
{
	int payoff = skb_transport_offset(skb) + sizeof(struct udphdr);
	u8 icrc[SRDMA_ICRC_LEN];
	u32 crc;

	crc = srdma_icrc_hdrs(skb_network_header(skb),
			      skb_transport_header(skb),
			      skb_transport_header(skb) + sizeof(struct udphdr),
			      ipv6);
	crc = srdma_icrc_skb(skb, payoff + SRDMA_BTH_LEN,
			     skb->len - payoff - SRDMA_BTH_LEN - SRDMA_ICRC_LEN,
			     crc);
	srdma_icrc_store(icrc, crc);
	skb_store_bits(skb, skb->len - SRDMA_ICRC_LEN, icrc, SRDMA_ICRC_LEN);
}

/**
 * srdma_icrc_check() - check the ICRC of a received packet
 * @skb: the packet: IP at the network header, UDP at the transport header
 * @payoff: offset in @skb of the UDP payload (BTH)
 * @udp_paylen: UDP payload length, from BTH to the ICRC; at least the
 *		transport headers and the ICRC (srdma_parse() checked it)
 * @ipv6: the IP header is IPv6, else IPv4
 *
 * Context: Any context; softirq on the receive path.
 * Return: true if the ICRC at the end of the UDP payload is right.
 */
bool srdma_icrc_check(struct sk_buff *skb, int payoff, u32 udp_paylen,
		      bool ipv6)
{
	u8 bthbuf[SRDMA_BTH_LEN], icrc[SRDMA_ICRC_LEN];
	const u8 *bth;
	u32 crc;

	bth = skb_header_pointer(skb, payoff, SRDMA_BTH_LEN, bthbuf);
	if (!bth)
		return false;
	crc = srdma_icrc_hdrs(skb_network_header(skb),
			      skb_transport_header(skb), bth, ipv6);
	crc = srdma_icrc_skb(skb, payoff + SRDMA_BTH_LEN,
			     udp_paylen - SRDMA_BTH_LEN - SRDMA_ICRC_LEN, crc);
	if (skb_copy_bits(skb, payoff + udp_paylen - SRDMA_ICRC_LEN, icrc,
			  SRDMA_ICRC_LEN))
		return false;
	return srdma_icrc_load(icrc) == crc;
}
