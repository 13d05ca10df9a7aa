// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libFuzzer target for the srdma wire-format parser (srdma_wire.c).
 *
 * The input is one UDP payload as it would arrive on port 4791. The parser
 * must never read outside it, and whatever it accepts must be consistent:
 * the lengths add up to the datagram, and building the headers back from
 * the parsed fields gives a packet that parses to the same fields.
 */
#include <stdio.h>
#include <stdlib.h>

#include "srdma_wire.h"

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	u8 hdr[SRDMA_MAX_HDR_LEN], again[SRDMA_MAX_HDR_LEN];
	struct srdma_pkt pkt, pkt2;
	u8 iphdrs[SRDMA_IPV4_HDR_LEN + SRDMA_UDP_HDR_LEN + SRDMA_BTH_LEN] = {
		0x45
	};
	u32 avail, hl;

	if (size > 65535)
		return 0;
	avail = size < SRDMA_MAX_HDR_LEN ? size : SRDMA_MAX_HDR_LEN;
	/* Copy, as the kernel does with skb_header_pointer(). */
	memcpy(hdr, data, avail);
	if (srdma_parse(hdr, avail, size, &pkt))
		return 0;

	if (pkt.hdr_len + pkt.paylen + pkt.pad + SRDMA_ICRC_LEN != size)
		abort();
	if (pkt.hdr_len != srdma_hdr_len(pkt.opcode) || pkt.hdr_len > avail)
		abort();
	if (pkt.pad > 3 || ((pkt.paylen + pkt.pad) & 3))
		abort();
	/* UD: exactly the one-packet SENDs, always with a DETH. */
	if (!!(pkt.flags & SRDMA_F_UD) != !!(pkt.flags & SRDMA_F_DETH) ||
	    ((pkt.flags & SRDMA_F_UD) &&
	     (pkt.flags & SRDMA_F_ONLY) != SRDMA_F_ONLY))
		abort();

	/* UC: SEND and WRITE of RC, never UD, never an ACK or READ. */
	if ((pkt.flags & SRDMA_F_UC) &&
	    ((pkt.flags & (SRDMA_F_UD | SRDMA_F_DETH | SRDMA_F_AETH |
			   SRDMA_F_READ | SRDMA_F_RRESP)) ||
	     !(pkt.flags & (SRDMA_F_SEND | SRDMA_F_WRITE)) ||
	     (pkt.opcode & SRDMA_OP_TRANSPORT_MASK) != SRDMA_OP_UC))
		abort();

	/* The ICRC over the packet must be computable without overruns. */
	memcpy(iphdrs + SRDMA_IPV4_HDR_LEN + SRDMA_UDP_HDR_LEN, data,
	       SRDMA_BTH_LEN);
	srdma_icrc_mask(iphdrs, false);
	srdma_crc32(srdma_crc32(SRDMA_ICRC_SEED, iphdrs, sizeof(iphdrs)),
		    data + SRDMA_BTH_LEN, size - SRDMA_BTH_LEN - SRDMA_ICRC_LEN);

	hl = srdma_build_hdr(again, &pkt);
	if (hl != pkt.hdr_len)
		abort();
	if (srdma_parse(again, hl, size, &pkt2))
		abort();
	if (pkt2.opcode != pkt.opcode || pkt2.psn != pkt.psn ||
	    pkt2.dqpn != pkt.dqpn || pkt2.va != pkt.va ||
	    pkt2.rkey != pkt.rkey || pkt2.dmalen != pkt.dmalen ||
	    pkt2.msn != pkt.msn || pkt2.syndrome != pkt.syndrome ||
	    pkt2.imm != pkt.imm || pkt2.qkey != pkt.qkey ||
	    pkt2.sqpn != pkt.sqpn || pkt2.paylen != pkt.paylen ||
	    pkt2.se != pkt.se || pkt2.ackreq != pkt.ackreq ||
	    pkt2.swap_add != pkt.swap_add || pkt2.compare != pkt.compare ||
	    pkt2.orig != pkt.orig || pkt2.inv_rkey != pkt.inv_rkey ||
	    pkt2.xrc_srqn != pkt.xrc_srqn)
		abort();
	/*
	 * XRC: RC's opcodes in the XRC group, never UD or UC; an XRCETH on
	 * the requests and on nothing else.
	 */
	if (!!(pkt.flags & SRDMA_F_XRC) !=
	    ((pkt.opcode & SRDMA_OP_TRANSPORT_MASK) == SRDMA_OP_XRC) ||
	    ((pkt.flags & SRDMA_F_XRC) &&
	     ((pkt.flags & (SRDMA_F_UD | SRDMA_F_UC | SRDMA_F_DETH |
			    SRDMA_F_AWRITE)) ||
	      !!(pkt.flags & SRDMA_F_XRCETH) != !!(pkt.flags & SRDMA_F_REQ))) ||
	    (!(pkt.flags & SRDMA_F_XRC) &&
	     ((pkt.flags & SRDMA_F_XRCETH) || pkt.xrc_srqn)))
		abort();
	/* Atomic requests and ACKs: one packet, never any payload. */
	if ((pkt.flags & (SRDMA_F_ATOMIC | SRDMA_F_AACK)) &&
	    (pkt.paylen || pkt.pad ||
	     (pkt.flags & SRDMA_F_ONLY) != SRDMA_F_ONLY))
		abort();
	/* The IETH ends an RC SEND, with no other extension header. */
	if ((pkt.flags & SRDMA_F_IETH) &&
	    (!(pkt.flags & SRDMA_F_SEND) || !(pkt.flags & SRDMA_F_LAST) ||
	     (pkt.flags & (SRDMA_F_IMM | SRDMA_F_RETH | SRDMA_F_DETH |
			   SRDMA_F_AETH | SRDMA_F_UD | SRDMA_F_UC |
			   SRDMA_F_ATOMIC | SRDMA_F_AACK)) ||
	     pkt.hdr_len != SRDMA_BTH_LEN + SRDMA_IETH_LEN +
			     (pkt.flags & SRDMA_F_XRCETH ? SRDMA_XRCETH_LEN : 0)))
		abort();
	if (!(pkt.flags & SRDMA_F_IETH) && pkt.inv_rkey)
		abort();
	return 0;
}
