// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma wire format: header tables, parsing and validation, header
 * building and the ICRC. Plain C, shared with the user-space unit tests.
 */
#include "srdma_wire.h"

#define PL	SRDMA_F_PAYLOAD

static const u16 srdma_opflags_tbl[SRDMA_OP_ACK + 1] = {
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
};

#undef PL

/* Flags of @opcode, 0 if srdma does not handle it. */
u32 srdma_op_flags(u8 opcode)
{
	return opcode <= SRDMA_OP_ACK ? srdma_opflags_tbl[opcode] : 0;
}

u32 srdma_hdr_len(u8 opcode)
{
	u32 f = srdma_op_flags(opcode);

	return SRDMA_BTH_LEN + (f & SRDMA_F_RETH ? SRDMA_RETH_LEN : 0) +
	       (f & SRDMA_F_AETH ? SRDMA_AETH_LEN : 0) +
	       (f & SRDMA_F_IMM ? SRDMA_IMM_LEN : 0);
}

/*
 * Parse and validate the transport headers of one RoCEv2 packet.
 * @hdr holds the first @avail bytes of the UDP payload (at least the
 * headers, at most the whole payload), @udp_paylen is the whole UDP payload
 * length. Checks only what needs no QP state: opcode, version, pad, lengths.
 * Returns 0 or a negative errno; on error *pkt is undefined.
 */
int srdma_parse(const u8 *hdr, u32 avail, u32 udp_paylen,
		struct srdma_pkt *pkt)
{
	u32 off, min;

	if (avail < SRDMA_BTH_LEN || avail > udp_paylen)
		return -EINVAL;

	memset(pkt, 0, sizeof(*pkt));
	pkt->opcode = hdr[0];
	pkt->flags = srdma_op_flags(pkt->opcode);
	if (!pkt->flags)
		return -EOPNOTSUPP;
	pkt->se = hdr[1] >> 7;
	pkt->pad = (hdr[1] >> 4) & 3;
	if (hdr[1] & 0xf)		/* TVer must be 0 */
		return -EPROTO;
	pkt->pkey = (u16)(hdr[2] << 8 | hdr[3]);
	pkt->dqpn = srdma_get_be24(hdr + 5);
	pkt->ackreq = hdr[8] >> 7;
	pkt->psn = srdma_get_be24(hdr + 9);

	pkt->hdr_len = srdma_hdr_len(pkt->opcode);
	min = pkt->hdr_len + SRDMA_ICRC_LEN;
	if (udp_paylen < min || avail < pkt->hdr_len)
		return -EMSGSIZE;
	if ((udp_paylen - min) < pkt->pad)
		return -EMSGSIZE;
	pkt->paylen = udp_paylen - min - pkt->pad;

	off = SRDMA_BTH_LEN;
	if (pkt->flags & SRDMA_F_RETH) {
		pkt->va = (u64)srdma_get_be32(hdr + off) << 32 |
			  srdma_get_be32(hdr + off + 4);
		pkt->rkey = srdma_get_be32(hdr + off + 8);
		pkt->dmalen = srdma_get_be32(hdr + off + 12);
		off += SRDMA_RETH_LEN;
	}
	if (pkt->flags & SRDMA_F_AETH) {
		pkt->syndrome = hdr[off];
		pkt->msn = srdma_get_be24(hdr + off + 1);
		off += SRDMA_AETH_LEN;
	}
	if (pkt->flags & SRDMA_F_IMM) {
		memcpy(&pkt->imm, hdr + off, SRDMA_IMM_LEN);
		off += SRDMA_IMM_LEN;
	}

	/* Packets without payload carry no pad either. */
	if (!(pkt->flags & SRDMA_F_PAYLOAD) && (pkt->paylen || pkt->pad))
		return -EMSGSIZE;
	/* Only the last packet of a message may be short or padded. */
	if (pkt->pad && !(pkt->flags & SRDMA_F_LAST))
		return -EPROTO;
	if ((pkt->paylen + pkt->pad) & 3)
		return -EPROTO;
	/* First and middle packets carry a full, non-empty MTU. */
	if ((pkt->flags & (SRDMA_F_FIRST | SRDMA_F_MIDDLE)) &&
	    !(pkt->flags & SRDMA_F_LAST) && !pkt->paylen)
		return -EPROTO;
	return 0;
}

/*
 * Build BTH and the extension headers for pkt->opcode into @buf (at least
 * SRDMA_MAX_HDR_LEN bytes). The pad is taken from pkt->pad. Returns the
 * header length.
 */
u32 srdma_build_hdr(u8 *buf, const struct srdma_pkt *pkt)
{
	u32 f = srdma_op_flags(pkt->opcode);
	u32 off = SRDMA_BTH_LEN;

	buf[0] = pkt->opcode;
	buf[1] = (u8)((pkt->se ? 0x80 : 0) | (pkt->pad & 3) << 4);
	buf[2] = pkt->pkey >> 8;
	buf[3] = pkt->pkey & 0xff;
	buf[4] = 0;
	srdma_put_be24(buf + 5, pkt->dqpn & SRDMA_QPN_MASK);
	buf[8] = pkt->ackreq ? 0x80 : 0;
	srdma_put_be24(buf + 9, pkt->psn & SRDMA_PSN_MASK);

	if (f & SRDMA_F_RETH) {
		srdma_put_be32(buf + off, (u32)(pkt->va >> 32));
		srdma_put_be32(buf + off + 4, (u32)pkt->va);
		srdma_put_be32(buf + off + 8, pkt->rkey);
		srdma_put_be32(buf + off + 12, pkt->dmalen);
		off += SRDMA_RETH_LEN;
	}
	if (f & SRDMA_F_AETH) {
		buf[off] = pkt->syndrome;
		srdma_put_be24(buf + off + 1, pkt->msn & SRDMA_MSN_MASK);
		off += SRDMA_AETH_LEN;
	}
	if (f & SRDMA_F_IMM) {
		memcpy(buf + off, &pkt->imm, SRDMA_IMM_LEN);
		off += SRDMA_IMM_LEN;
	}
	return off;
}

u32 srdma_icrc_hdrs(const u8 *iphdr, u32 hdrs_len, bool ipv6)
{
	u8 tmp[40 + 8 + SRDMA_BTH_LEN];
	u32 iplen = ipv6 ? 40 : 20;
	u8 *udp;

	if (hdrs_len != iplen + 8 + SRDMA_BTH_LEN)
		return 0;
	memcpy(tmp, iphdr, hdrs_len);
	if (ipv6) {
		/* version stays; traffic class and flow label are masked */
		tmp[0] |= 0x0f;
		tmp[1] = 0xff;
		tmp[2] = 0xff;
		tmp[3] = 0xff;
		tmp[7] = 0xff;		/* hop limit */
	} else {
		tmp[1] = 0xff;		/* TOS */
		tmp[8] = 0xff;		/* TTL */
		tmp[10] = 0xff;		/* header checksum */
		tmp[11] = 0xff;
	}
	udp = tmp + iplen;
	udp[6] = 0xff;			/* UDP checksum */
	udp[7] = 0xff;
	udp[8 + 4] = 0xff;		/* BTH resv8a */
	return srdma_crc32(SRDMA_ICRC_SEED, tmp, hdrs_len);
}
