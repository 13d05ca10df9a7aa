// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma wire format: header tables, parsing and validation, header
 * building and the ICRC's pseudo header. Plain C, shared with the
 * user-space unit tests.
 */
#include "srdma_wire.h"

/* BTH (IBTA 9.2): byte offsets and bit fields. */
#define SRDMA_BTH_OPCODE	0
#define SRDMA_BTH_FLAGS		1	/* SE, MigReq, PadCnt, TVer */
#define SRDMA_BTH_PKEY		2
#define SRDMA_BTH_RESV8A	4
#define SRDMA_BTH_DQPN		5
#define SRDMA_BTH_ACKREQ	8	/* AckReq, resv7 */
#define SRDMA_BTH_PSN		9
#define SRDMA_BTH_SE_BIT	0x80
#define SRDMA_BTH_PAD_SHIFT	4
#define SRDMA_BTH_TVER_MASK	0x0f	/* transport version: 0 */
#define SRDMA_BTH_ACKREQ_BIT	0x80

/* RETH (IBTA 9.3.2) and AETH (9.3.3) byte offsets. */
#define SRDMA_RETH_VA		0
#define SRDMA_RETH_RKEY		8
#define SRDMA_RETH_DMALEN	12
#define SRDMA_AETH_SYNDROME	0
#define SRDMA_AETH_MSN		1
/* DETH (IBTA 9.3.4): Q_Key, a reserved byte, the source QPN. */
#define SRDMA_DETH_QKEY		0
#define SRDMA_DETH_RESV8	4
#define SRDMA_DETH_SQPN		5
/* AtomicETH (IBTA 9.3.3.3) and AtomicAckETH (9.3.3.4) byte offsets. */
#define SRDMA_ATOMIC_ETH_VA	0
#define SRDMA_ATOMIC_ETH_RKEY	8
#define SRDMA_ATOMIC_ETH_SWAP	12
#define SRDMA_ATOMIC_ETH_CMP	20
/* IETH (IBTA 9.3.7): one R_Key. */
#define SRDMA_IETH_RKEY		0
/* XRCETH (IBTA 9.3.8): a reserved byte, the XRC SRQ number. */
#define SRDMA_XRCETH_SRQN	1

/*
 * Variant fields of the IP and UDP headers, which the ICRC covers as ones
 * (IBTA annex A17.8.2), as byte offsets in their header.
 */
#define SRDMA_IPV4_TOS		1
#define SRDMA_IPV4_TTL		8
#define SRDMA_IPV4_CSUM		10	/* 2 bytes */
#define SRDMA_IPV6_TC_FLOW	0	/* low nibble, then 3 bytes */
#define SRDMA_IPV6_HOP_LIMIT	7
#define SRDMA_UDP_CSUM		6	/* 2 bytes */

#define PL	SRDMA_F_PAYLOAD

static const u16 srdma_opflags_tbl[SRDMA_OP_FETCH_ADD + 1] = {
	[SRDMA_OP_SEND_FIRST]	= SRDMA_F_SEND | SRDMA_F_FIRST | PL,
	[SRDMA_OP_SEND_MIDDLE]	= SRDMA_F_SEND | SRDMA_F_MIDDLE | PL,
	[SRDMA_OP_SEND_LAST]	= SRDMA_F_SEND | SRDMA_F_LAST | PL,
	[SRDMA_OP_SEND_LAST_IMM] = SRDMA_F_SEND | SRDMA_F_LAST | SRDMA_F_IMM | PL,
	[SRDMA_OP_SEND_ONLY]	= SRDMA_F_SEND | SRDMA_F_ONLY | PL,
	[SRDMA_OP_SEND_ONLY_IMM] = SRDMA_F_SEND | SRDMA_F_ONLY | SRDMA_F_IMM | PL,
	[SRDMA_OP_WRITE_FIRST]	= SRDMA_F_WRITE | SRDMA_F_FIRST | SRDMA_F_RETH | PL,
	[SRDMA_OP_WRITE_MIDDLE]	= SRDMA_F_WRITE | SRDMA_F_MIDDLE | PL,
	[SRDMA_OP_WRITE_LAST]	= SRDMA_F_WRITE | SRDMA_F_LAST | PL,
	[SRDMA_OP_WRITE_LAST_IMM] = SRDMA_F_WRITE | SRDMA_F_LAST | SRDMA_F_IMM | PL,
	[SRDMA_OP_WRITE_ONLY]	= SRDMA_F_WRITE | SRDMA_F_ONLY | SRDMA_F_RETH | PL,
	[SRDMA_OP_WRITE_ONLY_IMM] = SRDMA_F_WRITE | SRDMA_F_ONLY | SRDMA_F_RETH |
				    SRDMA_F_IMM | PL,
	[SRDMA_OP_READ_REQ]	= SRDMA_F_READ | SRDMA_F_ONLY | SRDMA_F_RETH,
	[SRDMA_OP_READ_RESP_FIRST] = SRDMA_F_RRESP | SRDMA_F_FIRST | SRDMA_F_AETH | PL,
	[SRDMA_OP_READ_RESP_MIDDLE] = SRDMA_F_RRESP | SRDMA_F_MIDDLE | PL,
	[SRDMA_OP_READ_RESP_LAST] = SRDMA_F_RRESP | SRDMA_F_LAST | SRDMA_F_AETH | PL,
	[SRDMA_OP_READ_RESP_ONLY] = SRDMA_F_RRESP | SRDMA_F_ONLY | SRDMA_F_AETH | PL,
	[SRDMA_OP_ACK]		= SRDMA_F_ACK | SRDMA_F_ONLY | SRDMA_F_AETH,
	[SRDMA_OP_ATOMIC_ACK]	= SRDMA_F_AACK | SRDMA_F_ONLY | SRDMA_F_AETH,
	[SRDMA_OP_COMPARE_SWAP]	= SRDMA_F_ATOMIC | SRDMA_F_ONLY,
	[SRDMA_OP_FETCH_ADD]	= SRDMA_F_ATOMIC | SRDMA_F_ONLY,
};

/* UD has single-packet messages only: SEND ONLY, with or without ImmDt. */
#define SRDMA_F_UD_SEND	(SRDMA_F_UD | SRDMA_F_SEND | SRDMA_F_ONLY | \
			 SRDMA_F_DETH | SRDMA_F_PAYLOAD)

/*
 * SEND with Invalidate ends a SEND: LAST or ONLY, never with ImmDt (the
 * IETH takes its place).
 */
#define SRDMA_F_SEND_INV (SRDMA_F_SEND | SRDMA_F_LAST | SRDMA_F_IETH | \
			  SRDMA_F_PAYLOAD)

/*
 * ATOMIC WRITE is a one-packet WRITE to the responder's checks (RETH,
 * payload, R_Key with remote write rights), with its own placement.
 */
#define SRDMA_F_ATOMIC_WRITE (SRDMA_F_WRITE | SRDMA_F_ONLY | SRDMA_F_RETH | \
			      SRDMA_F_AWRITE | SRDMA_F_PAYLOAD)

#undef PL

/**
 * srdma_op_flags() - what an opcode carries and where it sits in a message
 * @opcode: a BTH opcode
 *
 * Context: Any context.
 * Return: the opcode's enum srdma_opflags, 0 if srdma does not handle it.
 */
u32 srdma_op_flags(u8 opcode)
{
	u32 f;

	/*
	 * XRC: RC's opcodes up to SEND ONLY with Invalidate (not ATOMIC
	 * WRITE), in the XRC group; its requests carry an XRCETH.
	 */
	if ((opcode & SRDMA_OP_TRANSPORT_MASK) == SRDMA_OP_XRC) {
		if (opcode > SRDMA_OP_XRC_LAST)
			return 0;
		f = srdma_op_flags(opcode - SRDMA_OP_XRC);
		if (!f)
			return 0;
		return f | SRDMA_F_XRC | (f & SRDMA_F_REQ ? SRDMA_F_XRCETH : 0);
	}
	/* UC: the SEND and WRITE opcodes of RC, in the UC group. */
	if ((opcode & SRDMA_OP_TRANSPORT_MASK) == SRDMA_OP_UC)
		return opcode <= SRDMA_OP_UC_WRITE_ONLY_IMM ?
		       srdma_opflags_tbl[opcode & SRDMA_OP_CODE_MASK] |
		       SRDMA_F_UC : 0;
	if (opcode == SRDMA_OP_UD_SEND_ONLY)
		return SRDMA_F_UD_SEND;
	if (opcode == SRDMA_OP_UD_SEND_ONLY_IMM)
		return SRDMA_F_UD_SEND | SRDMA_F_IMM;
	if (opcode == SRDMA_OP_SEND_LAST_INV)
		return SRDMA_F_SEND_INV;
	if (opcode == SRDMA_OP_SEND_ONLY_INV)
		return SRDMA_F_SEND_INV | SRDMA_F_FIRST;
	if (opcode == SRDMA_OP_ATOMIC_WRITE)
		return SRDMA_F_ATOMIC_WRITE;
	return opcode <= SRDMA_OP_FETCH_ADD ? srdma_opflags_tbl[opcode] : 0;
}

/**
 * srdma_hdr_len() - length of BTH and the extension headers of an opcode
 * @opcode: a BTH opcode that srdma handles
 *
 * Context: Any context.
 * Return: the header length in bytes.
 */
u32 srdma_hdr_len(u8 opcode)
{
	u32 f = srdma_op_flags(opcode);

	return SRDMA_BTH_LEN + (f & SRDMA_F_XRCETH ? SRDMA_XRCETH_LEN : 0) +
	       (f & SRDMA_F_RETH ? SRDMA_RETH_LEN : 0) +
	       (f & SRDMA_F_DETH ? SRDMA_DETH_LEN : 0) +
	       (f & SRDMA_F_AETH ? SRDMA_AETH_LEN : 0) +
	       (f & SRDMA_F_IMM ? SRDMA_IMM_LEN : 0) +
	       (f & SRDMA_F_ATOMIC ? SRDMA_ATOMIC_ETH_LEN : 0) +
	       (f & SRDMA_F_AACK ? SRDMA_ATOMIC_ACK_ETH_LEN : 0) +
	       (f & SRDMA_F_IETH ? SRDMA_IETH_LEN : 0);
}

static u64 srdma_get_be64(const u8 *p)
{
	return (u64)srdma_get_be32(p) << 32 | srdma_get_be32(p + 4);
}

static void srdma_put_be64(u8 *p, u64 v)
{
	srdma_put_be32(p, (u32)(v >> 32));
	srdma_put_be32(p + 4, (u32)v);
}

/* The BTH fields of @hdr into @pkt: opcode, flags, P_Key, QPN, PSN. */
static int srdma_parse_bth(const u8 *hdr, struct srdma_pkt *pkt)
{
	u8 flags = hdr[SRDMA_BTH_FLAGS];

	memset(pkt, 0, sizeof(*pkt));
	pkt->opcode = hdr[SRDMA_BTH_OPCODE];
	pkt->flags = srdma_op_flags(pkt->opcode);
	if (!pkt->flags)
		return -EOPNOTSUPP;
	pkt->se = !!(flags & SRDMA_BTH_SE_BIT);
	pkt->pad = (flags >> SRDMA_BTH_PAD_SHIFT) & SRDMA_PAD_MASK;
	if (flags & SRDMA_BTH_TVER_MASK)
		return -EPROTO;
	pkt->pkey = (u16)(hdr[SRDMA_BTH_PKEY] << 8 | hdr[SRDMA_BTH_PKEY + 1]);
	pkt->dqpn = srdma_get_be24(hdr + SRDMA_BTH_DQPN);
	pkt->ackreq = !!(hdr[SRDMA_BTH_ACKREQ] & SRDMA_BTH_ACKREQ_BIT);
	pkt->psn = srdma_get_be24(hdr + SRDMA_BTH_PSN);
	return 0;
}

/* Header and payload lengths, from the opcode, the pad and the datagram. */
static int srdma_parse_lengths(struct srdma_pkt *pkt, u32 avail,
			       u32 udp_paylen)
{
	u32 min;

	pkt->hdr_len = srdma_hdr_len(pkt->opcode);
	min = pkt->hdr_len + SRDMA_ICRC_LEN;
	if (udp_paylen < min || avail < pkt->hdr_len)
		return -EMSGSIZE;
	if ((udp_paylen - min) < pkt->pad)
		return -EMSGSIZE;
	pkt->paylen = udp_paylen - min - pkt->pad;
	return 0;
}

/*
 * The extension headers pkt->flags announce, in their wire order: XRCETH,
 * RETH, DETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH (which no opcode
 * srdma takes carries with any of the others). The reserved bytes of DETH
 * and XRCETH are ignored on receive.
 */
static void srdma_parse_ext(const u8 *hdr, struct srdma_pkt *pkt)
{
	u32 off = SRDMA_BTH_LEN;

	if (pkt->flags & SRDMA_F_XRCETH) {
		pkt->xrc_srqn = srdma_get_be24(hdr + off + SRDMA_XRCETH_SRQN);
		off += SRDMA_XRCETH_LEN;
	}
	if (pkt->flags & SRDMA_F_RETH) {
		pkt->va = (u64)srdma_get_be32(hdr + off + SRDMA_RETH_VA) << 32 |
			  srdma_get_be32(hdr + off + SRDMA_RETH_VA + 4);
		pkt->rkey = srdma_get_be32(hdr + off + SRDMA_RETH_RKEY);
		pkt->dmalen = srdma_get_be32(hdr + off + SRDMA_RETH_DMALEN);
		off += SRDMA_RETH_LEN;
	}
	if (pkt->flags & SRDMA_F_DETH) {
		pkt->qkey = srdma_get_be32(hdr + off + SRDMA_DETH_QKEY);
		pkt->sqpn = srdma_get_be24(hdr + off + SRDMA_DETH_SQPN);
		off += SRDMA_DETH_LEN;
	}
	if (pkt->flags & SRDMA_F_ATOMIC) {
		pkt->va = srdma_get_be64(hdr + off + SRDMA_ATOMIC_ETH_VA);
		pkt->rkey = srdma_get_be32(hdr + off + SRDMA_ATOMIC_ETH_RKEY);
		pkt->swap_add = srdma_get_be64(hdr + off +
					       SRDMA_ATOMIC_ETH_SWAP);
		pkt->compare = srdma_get_be64(hdr + off + SRDMA_ATOMIC_ETH_CMP);
		off += SRDMA_ATOMIC_ETH_LEN;
	}
	if (pkt->flags & SRDMA_F_AETH) {
		pkt->syndrome = hdr[off + SRDMA_AETH_SYNDROME];
		pkt->msn = srdma_get_be24(hdr + off + SRDMA_AETH_MSN);
		off += SRDMA_AETH_LEN;
	}
	if (pkt->flags & SRDMA_F_AACK) {
		pkt->orig = srdma_get_be64(hdr + off);
		off += SRDMA_ATOMIC_ACK_ETH_LEN;
	}
	if (pkt->flags & SRDMA_F_IMM) {
		memcpy(&pkt->imm, hdr + off, SRDMA_IMM_LEN);
		off += SRDMA_IMM_LEN;
	}
	if (pkt->flags & SRDMA_F_IETH)
		pkt->inv_rkey = srdma_get_be32(hdr + off + SRDMA_IETH_RKEY);
}

/* Where a packet sits in its message decides the payload it may carry. */
static int srdma_check_payload(const struct srdma_pkt *pkt)
{
	/* Packets without payload carry no pad either. */
	if (!(pkt->flags & SRDMA_F_PAYLOAD) && (pkt->paylen || pkt->pad))
		return -EMSGSIZE;
	/* Only the last packet of a message may be short or padded. */
	if (pkt->pad && !(pkt->flags & SRDMA_F_LAST))
		return -EPROTO;
	if ((pkt->paylen + pkt->pad) & SRDMA_PAD_MASK)
		return -EPROTO;
	/* First and middle packets carry a full, non-empty MTU. */
	if ((pkt->flags & (SRDMA_F_FIRST | SRDMA_F_MIDDLE)) &&
	    !(pkt->flags & SRDMA_F_LAST) && !pkt->paylen)
		return -EPROTO;
	return 0;
}

/**
 * srdma_parse() - parse and validate the transport headers of a packet
 * @hdr: the first @avail bytes of the UDP payload
 * @avail: at least the headers, at most the whole payload
 * @udp_paylen: the whole UDP payload length
 * @pkt: the parsed fields
 *
 * Checks only what needs no QP state: opcode, version, pad, lengths.
 *
 * Context: Any context.
 * Return: 0 or a negative errno; on error *@pkt is undefined.
 */
int srdma_parse(const u8 *hdr, u32 avail, u32 udp_paylen,
		struct srdma_pkt *pkt)
{
	int err;

	if (avail < SRDMA_BTH_LEN || avail > udp_paylen)
		return -EINVAL;
	err = srdma_parse_bth(hdr, pkt);
	if (err)
		return err;
	err = srdma_parse_lengths(pkt, avail, udp_paylen);
	if (err)
		return err;
	srdma_parse_ext(hdr, pkt);
	return srdma_check_payload(pkt);
}

/**
 * srdma_build_hdr() - build BTH and the extension headers of a packet
 * @buf: at least SRDMA_MAX_HDR_LEN bytes
 * @pkt: the fields; pkt->opcode says which headers, pkt->pad is the pad
 *
 * Context: Any context.
 * Return: the header length.
 */
u32 srdma_build_hdr(u8 *buf, const struct srdma_pkt *pkt)
{
	u32 f = srdma_op_flags(pkt->opcode);
	u32 off = SRDMA_BTH_LEN;

	buf[SRDMA_BTH_OPCODE] = pkt->opcode;
	buf[SRDMA_BTH_FLAGS] = (u8)((pkt->se ? SRDMA_BTH_SE_BIT : 0) |
			(pkt->pad & SRDMA_PAD_MASK) << SRDMA_BTH_PAD_SHIFT);
	buf[SRDMA_BTH_PKEY] = pkt->pkey >> 8;
	buf[SRDMA_BTH_PKEY + 1] = pkt->pkey & 0xff;
	buf[SRDMA_BTH_RESV8A] = 0;
	srdma_put_be24(buf + SRDMA_BTH_DQPN, pkt->dqpn & SRDMA_QPN_MASK);
	buf[SRDMA_BTH_ACKREQ] = pkt->ackreq ? SRDMA_BTH_ACKREQ_BIT : 0;
	srdma_put_be24(buf + SRDMA_BTH_PSN, pkt->psn & SRDMA_PSN_MASK);

	if (f & SRDMA_F_XRCETH) {
		buf[off] = 0;
		srdma_put_be24(buf + off + SRDMA_XRCETH_SRQN,
			       pkt->xrc_srqn & SRDMA_QPN_MASK);
		off += SRDMA_XRCETH_LEN;
	}
	if (f & SRDMA_F_RETH) {
		srdma_put_be32(buf + off + SRDMA_RETH_VA, (u32)(pkt->va >> 32));
		srdma_put_be32(buf + off + SRDMA_RETH_VA + 4, (u32)pkt->va);
		srdma_put_be32(buf + off + SRDMA_RETH_RKEY, pkt->rkey);
		srdma_put_be32(buf + off + SRDMA_RETH_DMALEN, pkt->dmalen);
		off += SRDMA_RETH_LEN;
	}
	if (f & SRDMA_F_DETH) {
		srdma_put_be32(buf + off + SRDMA_DETH_QKEY, pkt->qkey);
		buf[off + SRDMA_DETH_RESV8] = 0;
		srdma_put_be24(buf + off + SRDMA_DETH_SQPN,
			       pkt->sqpn & SRDMA_QPN_MASK);
		off += SRDMA_DETH_LEN;
	}
	if (f & SRDMA_F_ATOMIC) {
		srdma_put_be64(buf + off + SRDMA_ATOMIC_ETH_VA, pkt->va);
		srdma_put_be32(buf + off + SRDMA_ATOMIC_ETH_RKEY, pkt->rkey);
		srdma_put_be64(buf + off + SRDMA_ATOMIC_ETH_SWAP, pkt->swap_add);
		srdma_put_be64(buf + off + SRDMA_ATOMIC_ETH_CMP, pkt->compare);
		off += SRDMA_ATOMIC_ETH_LEN;
	}
	if (f & SRDMA_F_AETH) {
		buf[off + SRDMA_AETH_SYNDROME] = pkt->syndrome;
		srdma_put_be24(buf + off + SRDMA_AETH_MSN,
			       pkt->msn & SRDMA_MSN_MASK);
		off += SRDMA_AETH_LEN;
	}
	if (f & SRDMA_F_AACK) {
		srdma_put_be64(buf + off, pkt->orig);
		off += SRDMA_ATOMIC_ACK_ETH_LEN;
	}
	if (f & SRDMA_F_IMM) {
		memcpy(buf + off, &pkt->imm, SRDMA_IMM_LEN);
		off += SRDMA_IMM_LEN;
	}
	if (f & SRDMA_F_IETH) {
		srdma_put_be32(buf + off + SRDMA_IETH_RKEY, pkt->inv_rkey);
		off += SRDMA_IETH_LEN;
	}
	return off;
}

/**
 * srdma_icrc_mask() - set the fields the ICRC does not cover to ones
 * @hdrs: a copy of the IP, UDP and BTH headers of a packet, back to back:
 *	  srdma_icrc_hdrs_len(@ipv6) bytes, changed in place
 * @ipv6: the IP header is IPv6, else IPv4
 *
 * These fields may change on the way (IBTA annex A17.8.2): IPv4 TOS, TTL
 * and header checksum; IPv6 traffic class, flow label and hop limit; the
 * UDP checksum; BTH resv8a. The CRC over the result, started from
 * SRDMA_ICRC_SEED, then runs on over the rest of the packet.
 *
 * Context: Any context.
 */
void srdma_icrc_mask(u8 *hdrs, bool ipv6)
{
	u8 *udp, *bth;

	if (ipv6) {
		/* version stays; traffic class and flow label are masked */
		hdrs[SRDMA_IPV6_TC_FLOW] |= 0x0f;
		memset(hdrs + SRDMA_IPV6_TC_FLOW + 1, 0xff, 3);
		hdrs[SRDMA_IPV6_HOP_LIMIT] = 0xff;
		udp = hdrs + SRDMA_IPV6_HDR_LEN;
	} else {
		hdrs[SRDMA_IPV4_TOS] = 0xff;
		hdrs[SRDMA_IPV4_TTL] = 0xff;
		memset(hdrs + SRDMA_IPV4_CSUM, 0xff, 2);
		udp = hdrs + SRDMA_IPV4_HDR_LEN;
	}
	memset(udp + SRDMA_UDP_CSUM, 0xff, 2);
	bth = udp + SRDMA_UDP_HDR_LEN;
	bth[SRDMA_BTH_RESV8A] = 0xff;
}

/*
 * The receive WQEs an AETH credit count of 0 to 30 stands for (IBTA
 * 9.7.7.2: a logarithmic scale, steps of 1.5x and 2x above 4); 31 says
 * nothing (SRDMA_AETH_CREDIT_INVALID).
 */
static const u16 srdma_credit_wqes[SRDMA_AETH_CREDIT_INVALID] = {
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
	512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
	24576, 32768,
};

/**
 * srdma_credits_decode() - receive WQEs an AETH credit count stands for
 * @code: the count (the low five bits are used), not
 *	  SRDMA_AETH_CREDIT_INVALID
 *
 * Context: Any context.
 * Return: the number of WQEs; 0 for SRDMA_AETH_CREDIT_INVALID, which the
 * caller must have told apart.
 */
u32 srdma_credits_decode(u8 code)
{
	code &= SRDMA_AETH_VALUE_MASK;
	return code < SRDMA_AETH_CREDIT_INVALID ? srdma_credit_wqes[code] : 0;
}

/**
 * srdma_credits_encode() - the AETH credit count for @wqes receive WQEs
 * @wqes: receive WQEs available
 *
 * Context: Any context.
 * Return: the largest count that stands for no more than @wqes (never
 * SRDMA_AETH_CREDIT_INVALID).
 */
u8 srdma_credits_encode(u32 wqes)
{
	u8 code = SRDMA_AETH_CREDIT_INVALID - 1;

	while (code && srdma_credit_wqes[code] > wqes)
		code--;
	return code;
}
