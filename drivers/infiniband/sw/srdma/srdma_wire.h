/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * srdma wire format: RoCEv2 transport headers (IBTA vol. 1 ch. 9, annex
 * A17), their parsing and validation, PSN arithmetic and the ICRC's
 * pseudo header.
 *
 * Plain C: this file and srdma_wire.c also build in user space
 * (selftests/unit), where they are unit-tested and fuzzed.
 */
#ifndef SRDMA_WIRE_H
#define SRDMA_WIRE_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#else
#include "wire_compat.h"
#endif

#define SRDMA_BTH_LEN		12
#define SRDMA_RETH_LEN		16
#define SRDMA_AETH_LEN		4
#define SRDMA_IMM_LEN		4
#define SRDMA_DETH_LEN		8
#define SRDMA_IETH_LEN		4
#define SRDMA_ICRC_LEN		4
/* AtomicETH (IBTA 9.3.3.3): VA, R_Key, swap or add data, compare data. */
#define SRDMA_ATOMIC_ETH_LEN	28
/* AtomicAckETH (IBTA 9.3.3.4): the original data at the address. */
#define SRDMA_ATOMIC_ACK_ETH_LEN 8
/* XRCETH (IBTA 9.3.8): a reserved byte and the 24-bit XRC SRQ number. */
#define SRDMA_XRCETH_LEN	4
/*
 * The longest headers: BTH, XRCETH and AtomicETH (BTH, XRCETH, RETH,
 * ImmDt is 36).
 */
#define SRDMA_MAX_HDR_LEN	(SRDMA_BTH_LEN + SRDMA_XRCETH_LEN + \
				 SRDMA_ATOMIC_ETH_LEN)

/* The transport bits of a BTH opcode: 000b RC, 001b UC, 011b UD. */
#define SRDMA_OP_TRANSPORT_MASK	0xe0
#define SRDMA_OP_CODE_MASK	0x1f

#define SRDMA_PSN_MASK		0xffffffU
#define SRDMA_QPN_MASK		0xffffffU
/* The destination QPN of every multicast packet (IBTA vol. 1 ch. 9). */
#define SRDMA_MCAST_QPN		0xffffffU
#define SRDMA_MSN_MASK		0xffffffU
#define SRDMA_DEFAULT_PKEY	0xffffU
/*
 * Q_Keys with bit 31 set are privileged (IBTA 10.2.4); in a UD work
 * request's remote_qkey the bit means "use the QP's own Q_Key".
 */
#define SRDMA_QKEY_PRIV		0x80000000U
/* P_Key bit 15 is the membership (full or limited), 14:0 the partition. */
#define SRDMA_PKEY_PART_MASK	0x7fffU
/* Payloads are padded to a multiple of 4 bytes (BTH PadCnt). */
#define SRDMA_PAD_MASK		3U

/* What RoCEv2 travels in: IPv4 without options, IPv6 without extensions. */
#define SRDMA_IPV4_HDR_LEN	20
#define SRDMA_IPV6_HDR_LEN	40
#define SRDMA_UDP_HDR_LEN	8

/*
 * RC opcodes (transport 000b) and the UD ones (transport 011b) used by
 * srdma. UC (transport 001b) has the RC SEND and WRITE opcodes, with the
 * transport bits set: SRDMA_OP_UC | the RC opcode (IBTA 9.2.1, table 38).
 */
enum srdma_opcode {
	SRDMA_OP_SEND_FIRST		= 0x00,
	SRDMA_OP_SEND_MIDDLE		= 0x01,
	SRDMA_OP_SEND_LAST		= 0x02,
	SRDMA_OP_SEND_LAST_IMM		= 0x03,
	SRDMA_OP_SEND_ONLY		= 0x04,
	SRDMA_OP_SEND_ONLY_IMM		= 0x05,
	SRDMA_OP_WRITE_FIRST		= 0x06,
	SRDMA_OP_WRITE_MIDDLE		= 0x07,
	SRDMA_OP_WRITE_LAST		= 0x08,
	SRDMA_OP_WRITE_LAST_IMM		= 0x09,
	SRDMA_OP_WRITE_ONLY		= 0x0a,
	SRDMA_OP_WRITE_ONLY_IMM		= 0x0b,
	SRDMA_OP_READ_REQ		= 0x0c,
	SRDMA_OP_READ_RESP_FIRST	= 0x0d,
	SRDMA_OP_READ_RESP_MIDDLE	= 0x0e,
	SRDMA_OP_READ_RESP_LAST		= 0x0f,
	SRDMA_OP_READ_RESP_ONLY		= 0x10,
	SRDMA_OP_ACK			= 0x11,
	SRDMA_OP_ATOMIC_ACK		= 0x12,
	SRDMA_OP_COMPARE_SWAP		= 0x13,
	SRDMA_OP_FETCH_ADD		= 0x14,
	/* SEND with Invalidate: the IETH names an R_Key to invalidate. */
	SRDMA_OP_SEND_LAST_INV		= 0x16,
	SRDMA_OP_SEND_ONLY_INV		= 0x17,
	/*
	 * ATOMIC WRITE (IBTA 1.5): a RETH naming 8 aligned bytes, and those
	 * 8 bytes as payload, stored at once; answered by a READ response
	 * ONLY of no data.
	 */
	SRDMA_OP_ATOMIC_WRITE		= 0x1d,
	SRDMA_OP_UC			= 0x20,	/* the UC group */
	SRDMA_OP_UC_WRITE_ONLY_IMM	= 0x2b,	/* the last UC opcode */
	SRDMA_OP_UD_SEND_ONLY		= 0x64,
	/*
	 * XRC (IBTA 9.2.1): the RC opcodes in the XRC group, up to SEND
	 * ONLY with Invalidate; requests carry an XRCETH, answers do not.
	 */
	SRDMA_OP_XRC			= 0xa0,
	SRDMA_OP_XRC_LAST		= 0xb7,
	SRDMA_OP_UD_SEND_ONLY_IMM	= 0x65,
};

/* What an opcode carries and where it sits in a message. */
enum srdma_opflags {
	SRDMA_F_RETH	= 1 << 0,
	SRDMA_F_AETH	= 1 << 1,
	SRDMA_F_IMM	= 1 << 2,
	SRDMA_F_PAYLOAD	= 1 << 3,	/* may carry payload */
	SRDMA_F_FIRST	= 1 << 4,
	SRDMA_F_MIDDLE	= 1 << 5,
	SRDMA_F_LAST	= 1 << 6,
	SRDMA_F_SEND	= 1 << 7,
	SRDMA_F_WRITE	= 1 << 8,
	SRDMA_F_READ	= 1 << 9,	/* READ request */
	SRDMA_F_RRESP	= 1 << 10,	/* READ response */
	SRDMA_F_ACK	= 1 << 11,
	SRDMA_F_DETH	= 1 << 12,
	SRDMA_F_UD	= 1 << 13,	/* an Unreliable Datagram opcode */
	SRDMA_F_ATOMIC	= 1 << 14,	/* atomic request, with AtomicETH */
	SRDMA_F_AACK	= 1 << 15,	/* atomic ACK, with AtomicAckETH */
	/*
	 * Never in the (u16) opcode table: srdma_op_flags() adds it from
	 * the opcode's transport bits.
	 */
	SRDMA_F_UC	= 1 << 16,	/* an Unreliable Connected opcode */
	/* IETH (IBTA 9.3.7): out of the others' way, past the u16 table */
	SRDMA_F_IETH	= 1 << 20,
	SRDMA_F_AWRITE	= 1 << 21,	/* ATOMIC WRITE, also a WRITE ONLY */
	SRDMA_F_XRC	= 1 << 22,	/* an XRC opcode */
	SRDMA_F_XRCETH	= 1 << 23,	/* XRCETH: an XRC request */
	SRDMA_F_REQ	= SRDMA_F_SEND | SRDMA_F_WRITE | SRDMA_F_READ |
			  SRDMA_F_ATOMIC,
	SRDMA_F_ONLY	= SRDMA_F_FIRST | SRDMA_F_LAST,
};

/*
 * AETH syndromes: bit 7 reserved, bits 6:5 the kind, 4:0 the value (RNR
 * timer, NAK code or credit count).
 */
#define SRDMA_AETH_ACK		0x00
#define SRDMA_AETH_RNR_NAK	0x20
#define SRDMA_AETH_NAK		0x60
#define SRDMA_AETH_KIND_MASK	0x60
#define SRDMA_AETH_VALUE_MASK	0x1f
#define SRDMA_AETH_CREDIT_INVALID 0x1f
#define SRDMA_NAK_PSN_SEQ	0
#define SRDMA_NAK_INVALID_REQ	1
#define SRDMA_NAK_REMOTE_ACCESS	2
#define SRDMA_NAK_REMOTE_OP	3

/* A parsed and validated transport header. */
struct srdma_pkt {
	u8 opcode;
	u8 se;
	u8 pad;
	u8 ackreq;
	u16 pkey;
	u32 flags;		/* enum srdma_opflags */
	u32 dqpn;
	u32 psn;
	u64 va;			/* RETH */
	u32 rkey;
	u32 dmalen;
	u8 syndrome;		/* AETH */
	u32 msn;
	u32 qkey;		/* DETH */
	u32 sqpn;
	u32 imm;		/* ImmDt, kept in wire (big-endian) order */
	u64 swap_add;		/* AtomicETH; its VA and R_Key go to va, rkey */
	u64 compare;
	u64 orig;		/* AtomicAckETH */
	u32 inv_rkey;		/* IETH: the R_Key to invalidate */
	u32 xrc_srqn;		/* XRCETH: the XRC SRQ the request is for */
	u32 hdr_len;		/* BTH + extension headers */
	u32 paylen;		/* payload bytes, without pad and ICRC */
};

u32 srdma_op_flags(u8 opcode);
int srdma_parse(const u8 *hdr, u32 avail, u32 udp_paylen,
		struct srdma_pkt *pkt);
u32 srdma_hdr_len(u8 opcode);
u32 srdma_build_hdr(u8 *buf, const struct srdma_pkt *pkt);

/* 24-bit PSN arithmetic: signed distance a - b in (-2^23, 2^23]. */
static inline int srdma_psn_diff(u32 a, u32 b)
{
	return (int)((a - b) << 8) >> 8;
}

static inline u32 srdma_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SRDMA_PSN_MASK;
}

static inline u32 srdma_psn_prev(u32 psn)
{
	return (psn - 1) & SRDMA_PSN_MASK;
}

/* Packets a message of @len bytes takes at @mtu; at least one. */
static inline u32 srdma_npkts(u32 len, u32 mtu)
{
	return len ? (len - 1) / mtu + 1 : 1;
}

/* CRC state after the 8 bytes of 0xff that stand for the masked LRH. */
#define SRDMA_ICRC_SEED		0xdebb20e3U

/* IP, UDP and BTH: the headers the ICRC covers with variant fields masked. */
#define SRDMA_ICRC_HDRS_MAX	(SRDMA_IPV6_HDR_LEN + SRDMA_UDP_HDR_LEN + \
				 SRDMA_BTH_LEN)

static inline u32 srdma_icrc_hdrs_len(bool ipv6)
{
	return (ipv6 ? SRDMA_IPV6_HDR_LEN : SRDMA_IPV4_HDR_LEN) +
	       SRDMA_UDP_HDR_LEN + SRDMA_BTH_LEN;
}

/*
 * The ICRC itself is computed in srdma_icrc.c. Its pseudo header, the
 * masking below, is plain C so that the user-space tests check it against
 * independently built packets.
 */
void srdma_icrc_mask(u8 *hdrs, bool ipv6);
u32 srdma_credits_decode(u8 code);
u8 srdma_credits_encode(u32 wqes);

/* The ICRC on the wire is the complement of the CRC, little-endian. */
static inline void srdma_icrc_store(u8 *p, u32 crc)
{
	crc = ~crc;
	p[0] = crc & 0xff;
	p[1] = (crc >> 8) & 0xff;
	p[2] = (crc >> 16) & 0xff;
	p[3] = crc >> 24;
}

static inline u32 srdma_icrc_load(const u8 *p)
{
	return ~((u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 |
		 (u32)p[3] << 24);
}

/* Pad bytes after a payload of @len bytes. */
static inline u8 srdma_pad_len(u32 len)
{
	return (-len) & SRDMA_PAD_MASK;
}

/* Whether @pkey names the default partition, as a full or limited member. */
static inline bool srdma_pkey_is_default(u16 pkey)
{
	return (pkey & SRDMA_PKEY_PART_MASK) ==
	       (SRDMA_DEFAULT_PKEY & SRDMA_PKEY_PART_MASK);
}

/* Big-endian field accessors on byte buffers. */
static inline u32 srdma_get_be24(const u8 *p)
{
	return (u32)p[0] << 16 | (u32)p[1] << 8 | p[2];
}

static inline u32 srdma_get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static inline void srdma_put_be24(u8 *p, u32 v)
{
	p[0] = (v >> 16) & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = v & 0xff;
}

static inline void srdma_put_be32(u8 *p, u32 v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

#endif /* SRDMA_WIRE_H */
