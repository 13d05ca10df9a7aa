// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User-space unit tests of the srdma wire format (srdma_wire.c): parsing,
 * validation, header building, PSN arithmetic and the ICRC's pseudo
 * header, with the CRC run over it the way srdma_icrc.c does. The packet
 * vectors were built independently (Python's zlib.crc32 over the masked
 * headers as IBTA annex A17 describes) and are also checked against
 * rdma_rxe's packets on the wire by the interop selftests.
 */
#include <stdio.h>

#include "kselftest_harness.h"
#include "srdma_wire.h"

/* IPv4, RDMA WRITE ONLY, dqpn 0x1234, psn 7, AckReq, 5 bytes + 3 pad. */
static const u8 vec_ipv4_write_only[] = {
	0x45, 0x02, 0x00, 0x44, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xbe, 0xef,
	0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xc1, 0x23, 0x12, 0xb7,
	0x00, 0x30, 0x00, 0x00, 0x0a, 0xb0, 0xff, 0xff, 0x00, 0x00, 0x12, 0x34,
	0x80, 0x00, 0x00, 0x07, 0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x56, 0x78,
	0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x05, 0x01, 0x02, 0x03, 0x04,
	0x05, 0x00, 0x00, 0x00, 0xc4, 0x52, 0xd6, 0xa0,
};

/* IPv6, SEND ONLY with immediate, dqpn 0x11, psn 0xffffff, 8 bytes. */
static const u8 vec_ipv6_send_only_imm[] = {
	0x60, 0x20, 0x12, 0x34, 0x00, 0x24, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x02, 0xd0, 0x00, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00,
	0x05, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0xff,
	0xde, 0xad, 0xbe, 0xef, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
	0xb7, 0xa4, 0xbb, 0x52,
};

/*
 * The ICRC of a packet from its IP header on, as srdma_icrc.c computes it:
 * the masked IP, UDP and BTH headers from the seed, then the rest.
 */
static u32 icrc_of(const u8 *pkt, u32 len, bool ipv6)
{
	u32 hl = srdma_icrc_hdrs_len(ipv6);
	u8 hdrs[SRDMA_ICRC_HDRS_MAX];
	u32 crc;

	memcpy(hdrs, pkt, hl);
	srdma_icrc_mask(hdrs, ipv6);
	crc = srdma_crc32(SRDMA_ICRC_SEED, hdrs, hl);
	return srdma_crc32(crc, pkt + hl, len - hl - SRDMA_ICRC_LEN);
}

TEST(crc32_check_value)
{
	/* The standard check value of CRC-32/IEEE. */
	EXPECT_EQ(0xcbf43926U, ~srdma_crc32(~0U, "123456789", 9));
}

TEST(icrc_seed_is_masked_lrh)
{
	static const u8 lrh[8] = { 0xff, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0xff, 0xff };

	EXPECT_EQ(SRDMA_ICRC_SEED, srdma_crc32(~0U, lrh, 8));
}

TEST(icrc_ipv4_vector)
{
	u32 len = sizeof(vec_ipv4_write_only);
	u32 crc = icrc_of(vec_ipv4_write_only, len, false);

	EXPECT_EQ(srdma_icrc_load(vec_ipv4_write_only + len - 4), crc);
}

TEST(icrc_ipv6_vector)
{
	u32 len = sizeof(vec_ipv6_send_only_imm);
	u32 crc = icrc_of(vec_ipv6_send_only_imm, len, true);

	EXPECT_EQ(srdma_icrc_load(vec_ipv6_send_only_imm + len - 4), crc);
}

/* Variant fields (TTL, TOS, checksums, resv8a) do not change the ICRC. */
TEST(icrc_ignores_masked_fields)
{
	u8 p[sizeof(vec_ipv4_write_only)];
	u32 len = sizeof(p);

	memcpy(p, vec_ipv4_write_only, len);
	p[1] = 0x00;	/* TOS */
	p[8] = 1;	/* TTL */
	p[10] = 0x12;	/* IP checksum */
	p[26] = 0x55;	/* UDP checksum */
	p[32] = 0x40;	/* BTH resv8a (F/B bits) */
	EXPECT_EQ(srdma_icrc_load(p + len - 4), icrc_of(p, len, false));
	/* ...but any covered bit does. */
	p[12] ^= 1;	/* source address */
	EXPECT_NE(srdma_icrc_load(p + len - 4), icrc_of(p, len, false));
	p[12] ^= 1;
	p[len - 6] ^= 0x80;	/* payload */
	EXPECT_NE(srdma_icrc_load(p + len - 4), icrc_of(p, len, false));
}

TEST(icrc_store_load)
{
	u8 b[4];

	srdma_icrc_store(b, 0x12345678);
	EXPECT_EQ(0x87, b[0]);
	EXPECT_EQ(0xed, b[3]);
	EXPECT_EQ(0x12345678U, srdma_icrc_load(b));
}

TEST(parse_ipv4_write_only)
{
	const u8 *bth = vec_ipv4_write_only + 28;
	u32 udp_paylen = sizeof(vec_ipv4_write_only) - 28;
	struct srdma_pkt pkt;

	ASSERT_EQ(0, srdma_parse(bth, udp_paylen, udp_paylen, &pkt));
	EXPECT_EQ(SRDMA_OP_WRITE_ONLY, pkt.opcode);
	EXPECT_EQ(1, pkt.se);
	EXPECT_EQ(3, pkt.pad);
	EXPECT_EQ(0xffff, pkt.pkey);
	EXPECT_EQ(0x1234U, pkt.dqpn);
	EXPECT_EQ(1, pkt.ackreq);
	EXPECT_EQ(7U, pkt.psn);
	EXPECT_EQ(0x00007f0012345678ULL, pkt.va);
	EXPECT_EQ(0x00abcdefU, pkt.rkey);
	EXPECT_EQ(5U, pkt.dmalen);
	EXPECT_EQ(28U, pkt.hdr_len);
	EXPECT_EQ(5U, pkt.paylen);
	EXPECT_TRUE(pkt.flags & SRDMA_F_WRITE);
	EXPECT_EQ(SRDMA_F_ONLY, pkt.flags & SRDMA_F_ONLY);
}

TEST(parse_ipv6_send_only_imm)
{
	const u8 *bth = vec_ipv6_send_only_imm + 48;
	u32 udp_paylen = sizeof(vec_ipv6_send_only_imm) - 48;
	struct srdma_pkt pkt;
	const u8 *imm;

	ASSERT_EQ(0, srdma_parse(bth, udp_paylen, udp_paylen, &pkt));
	EXPECT_EQ(SRDMA_OP_SEND_ONLY_IMM, pkt.opcode);
	EXPECT_EQ(0x11U, pkt.dqpn);
	EXPECT_EQ(0xffffffU, pkt.psn);
	EXPECT_EQ(8U, pkt.paylen);
	imm = (const u8 *)&pkt.imm;
	EXPECT_EQ(0xde, imm[0]);
	EXPECT_EQ(0xef, imm[3]);
}

/* Every opcode survives build -> parse with its fields. */
TEST(build_parse_roundtrip)
{
	u8 buf[SRDMA_MAX_HDR_LEN + 64 + SRDMA_ICRC_LEN];
	static const u32 ud_ops[] = {
		SRDMA_OP_UD_SEND_ONLY, SRDMA_OP_UD_SEND_ONLY_IMM,
		SRDMA_OP_ATOMIC_ACK, SRDMA_OP_COMPARE_SWAP,
		SRDMA_OP_FETCH_ADD,
		SRDMA_OP_SEND_LAST_INV, SRDMA_OP_SEND_ONLY_INV,
		SRDMA_OP_ATOMIC_WRITE,
	};
	struct srdma_pkt in, out;
	u32 i, op, hl, pay;

	for (i = 0; i <= SRDMA_OP_ACK + ARRAY_SIZE(ud_ops); i++) {
		op = i <= SRDMA_OP_ACK ? i : ud_ops[i - SRDMA_OP_ACK - 1];
		memset(&in, 0, sizeof(in));
		in.opcode = op;
		in.flags = srdma_op_flags(op);
		ASSERT_NE(0U, in.flags);
		in.se = 1;
		in.pkey = 0xffff;
		in.dqpn = 0xabcdef;
		in.psn = 0x123456;
		in.ackreq = 1;
		in.va = 0x1122334455667788ULL;
		in.rkey = 0xdeadbeef;
		in.dmalen = 4096;
		in.syndrome = SRDMA_AETH_NAK | SRDMA_NAK_REMOTE_ACCESS;
		in.msn = 0x654321;
		in.imm = 0x01020304;
		in.qkey = 0x80010000;
		in.sqpn = 0x000001;
		in.swap_add = 0x8070605040302010ULL;
		in.compare = 0xfedcba9876543210ULL;
		in.orig = 0x0123456789abcdefULL;
		in.inv_rkey = 0x00abcd5a;
		pay = in.flags & SRDMA_F_PAYLOAD ? 64 : 0;
		hl = srdma_build_hdr(buf, &in);
		EXPECT_EQ(srdma_hdr_len(op), hl);
		ASSERT_EQ(0, srdma_parse(buf, hl, hl + pay + SRDMA_ICRC_LEN,
					 &out));
		EXPECT_EQ(op, out.opcode);
		EXPECT_EQ(in.dqpn, out.dqpn);
		EXPECT_EQ(in.psn, out.psn);
		EXPECT_EQ(1, out.ackreq);
		EXPECT_EQ(1, out.se);
		EXPECT_EQ(pay, out.paylen);
		if (in.flags & SRDMA_F_RETH) {
			EXPECT_EQ(in.va, out.va);
			EXPECT_EQ(in.rkey, out.rkey);
			EXPECT_EQ(in.dmalen, out.dmalen);
		}
		if (in.flags & SRDMA_F_AETH) {
			EXPECT_EQ(in.syndrome, out.syndrome);
			EXPECT_EQ(in.msn, out.msn);
		}
		if (in.flags & SRDMA_F_DETH) {
			EXPECT_EQ(in.qkey, out.qkey);
			EXPECT_EQ(in.sqpn, out.sqpn);
		}
		if (in.flags & SRDMA_F_IMM)
			EXPECT_EQ(in.imm, out.imm);
		if (in.flags & SRDMA_F_ATOMIC) {
			EXPECT_EQ(in.va, out.va);
			EXPECT_EQ(in.rkey, out.rkey);
			EXPECT_EQ(in.swap_add, out.swap_add);
			EXPECT_EQ(in.compare, out.compare);
			EXPECT_EQ(0U, out.dmalen);
		} else {
			EXPECT_EQ(0ULL, out.swap_add);
			EXPECT_EQ(0ULL, out.compare);
		}
		EXPECT_EQ(in.flags & SRDMA_F_AACK ? in.orig : 0ULL, out.orig);
		if (in.flags & SRDMA_F_IETH) {
			EXPECT_EQ(in.inv_rkey, out.inv_rkey);
		} else {
			EXPECT_EQ(0U, out.inv_rkey);
		}
	}
}

/*
 * A COMPARE SWAP request written out by hand from IBTA 9.2 and 9.3.3.3:
 * BTH, then AtomicETH (VA, R_Key, swap data, compare data), no payload.
 */
TEST(parse_compare_swap)
{
	static const u8 p[] = {
		0x13, 0x00, 0xff, 0xff, 0x00, 0x00, 0x12, 0x34,	/* BTH */
		0x80, 0x00, 0x00, 0x09,
		0x00, 0x00, 0x7f, 0xaa, 0xbb, 0xcc, 0xdd, 0xe8,	/* VA */
		0x00, 0x01, 0x02, 0x03,				/* R_Key */
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,	/* swap */
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,	/* compare */
		0, 0, 0, 0,					/* ICRC */
	};
	struct srdma_pkt out;

	ASSERT_EQ(40U, srdma_hdr_len(SRDMA_OP_COMPARE_SWAP));
	ASSERT_EQ(0, srdma_parse(p, 40, sizeof(p), &out));
	EXPECT_EQ(SRDMA_OP_COMPARE_SWAP, out.opcode);
	EXPECT_TRUE(out.flags & SRDMA_F_ATOMIC);
	EXPECT_TRUE(out.flags & SRDMA_F_REQ);
	EXPECT_FALSE(out.flags & (SRDMA_F_RETH | SRDMA_F_AETH |
				  SRDMA_F_PAYLOAD | SRDMA_F_READ));
	EXPECT_EQ(SRDMA_F_ONLY, out.flags & SRDMA_F_ONLY);
	EXPECT_EQ(0x1234U, out.dqpn);
	EXPECT_EQ(9U, out.psn);
	EXPECT_EQ(1, out.ackreq);
	EXPECT_EQ(0x00007faabbccdde8ULL, out.va);
	EXPECT_EQ(0x00010203U, out.rkey);
	EXPECT_EQ(0x1112131415161718ULL, out.swap_add);
	EXPECT_EQ(0x2122232425262728ULL, out.compare);
	EXPECT_EQ(40U, out.hdr_len);
	EXPECT_EQ(0U, out.paylen);
	/* FETCH ADD: the same header, the add data where swap is */
	{
		u8 q[sizeof(p)];

		memcpy(q, p, sizeof(q));
		q[0] = SRDMA_OP_FETCH_ADD;
		ASSERT_EQ(0, srdma_parse(q, 40, sizeof(q), &out));
		EXPECT_EQ(SRDMA_OP_FETCH_ADD, out.opcode);
		EXPECT_EQ(0x1112131415161718ULL, out.swap_add);
	}
	/* never with payload or pad, never cut short */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 40, sizeof(p) + 4, &out));
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 39, sizeof(p) - 1, &out));
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 39, sizeof(p), &out));
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 40, 40 + 3, &out));
}

/*
 * An ATOMIC ACKNOWLEDGE written out by hand from IBTA 9.3.3.4: BTH, AETH
 * (ACK, MSN), AtomicAckETH (the original data).
 */
TEST(parse_atomic_ack)
{
	static const u8 p[] = {
		0x12, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x77,	/* BTH */
		0x00, 0xab, 0xcd, 0xef,
		0x1f, 0x00, 0x00, 0x05,				/* AETH */
		0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04,	/* orig */
		0, 0, 0, 0,					/* ICRC */
	};
	struct srdma_pkt out, in;
	u8 buf[SRDMA_MAX_HDR_LEN];

	ASSERT_EQ(24U, srdma_hdr_len(SRDMA_OP_ATOMIC_ACK));
	ASSERT_EQ(0, srdma_parse(p, 24, sizeof(p), &out));
	EXPECT_EQ(SRDMA_OP_ATOMIC_ACK, out.opcode);
	EXPECT_TRUE(out.flags & SRDMA_F_AACK);
	EXPECT_TRUE(out.flags & SRDMA_F_AETH);
	EXPECT_FALSE(out.flags & (SRDMA_F_REQ | SRDMA_F_ACK |
				  SRDMA_F_RRESP | SRDMA_F_PAYLOAD));
	EXPECT_EQ(0x77U, out.dqpn);
	EXPECT_EQ(0xabcdefU, out.psn);
	EXPECT_EQ(0x1f, out.syndrome);
	EXPECT_EQ(5U, out.msn);
	EXPECT_EQ(0xdeadbeef01020304ULL, out.orig);
	EXPECT_EQ(0U, out.paylen);
	/* building it gives the same bytes */
	memset(&in, 0, sizeof(in));
	in.opcode = SRDMA_OP_ATOMIC_ACK;
	in.pkey = 0xffff;
	in.dqpn = 0x77;
	in.psn = 0xabcdef;
	in.syndrome = 0x1f;
	in.msn = 5;
	in.orig = 0xdeadbeef01020304ULL;
	ASSERT_EQ(24U, srdma_build_hdr(buf, &in));
	EXPECT_EQ(0, memcmp(buf, p, 24));
	/* cut inside the AtomicAckETH; with payload */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 20, 20 + 4, &out));
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 24, sizeof(p) + 8, &out));
}

/*
 * ATOMIC WRITE (IBTA 1.5), written out by hand: BTH (opcode 0x1d, AckReq),
 * RETH (VA 0x0000123400005678, R_Key 0x00abcdef, length 8), 8 bytes of
 * payload, no pad. A WRITE ONLY to the responder's checks, plus its flag.
 */
TEST(parse_atomic_write)
{
	static const u8 p[] = {
		0x1d, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x02,	/* BTH */
		0x80, 0x00, 0x10, 0x00,
		0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0x56, 0x78,	/* RETH */
		0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x08,
		1, 2, 3, 4, 5, 6, 7, 8,				/* data */
		0, 0, 0, 0,					/* ICRC */
	};
	u8 q[SRDMA_MAX_HDR_LEN];
	struct srdma_pkt out;

	ASSERT_EQ(0, srdma_parse(p, 28, sizeof(p), &out));
	EXPECT_EQ(SRDMA_OP_ATOMIC_WRITE, out.opcode);
	EXPECT_EQ(SRDMA_F_ONLY, out.flags & SRDMA_F_ONLY);
	EXPECT_TRUE(out.flags & SRDMA_F_WRITE);
	EXPECT_TRUE(out.flags & SRDMA_F_RETH);
	EXPECT_TRUE(out.flags & SRDMA_F_AWRITE);
	EXPECT_FALSE(out.flags & (SRDMA_F_IMM | SRDMA_F_ATOMIC | SRDMA_F_UC |
				  SRDMA_F_UD | SRDMA_F_IETH));
	EXPECT_EQ(1, out.ackreq);
	EXPECT_EQ(0x102U, out.dqpn);
	EXPECT_EQ(0x1000U, out.psn);
	EXPECT_EQ(0x0000123400005678ULL, out.va);
	EXPECT_EQ(0x00abcdefU, out.rkey);
	EXPECT_EQ(8U, out.dmalen);
	EXPECT_EQ(28U, out.hdr_len);
	EXPECT_EQ(8U, out.paylen);
	EXPECT_EQ(28U, srdma_build_hdr(q, &out));
	EXPECT_EQ(0, memcmp(q, p, 28));
	/* cut inside the RETH */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 20, 24, &out));
	/* UC has no ATOMIC WRITE */
	q[0] = SRDMA_OP_UC | SRDMA_OP_ATOMIC_WRITE;
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(q, 28, sizeof(p), &out));
}

/*
 * SEND ONLY and SEND LAST with Invalidate, written out by hand from IBTA
 * 9.2 and 9.3.7: BTH, IETH (R_Key 0x00123456), 5 bytes of payload and 3
 * of pad.
 */
TEST(parse_send_with_inv)
{
	static const u8 p[] = {
		0x17, 0xb0, 0xff, 0xff, 0x00, 0x00, 0x00, 0x42,	/* BTH */
		0x80, 0x00, 0x00, 0x09,
		0x00, 0x12, 0x34, 0x56,				/* IETH */
		1, 2, 3, 4, 5, 0, 0, 0,				/* data, pad */
		0, 0, 0, 0,					/* ICRC */
	};
	u8 q[sizeof(p)];
	struct srdma_pkt out;

	ASSERT_EQ(0, srdma_parse(p, 16, sizeof(p), &out));
	EXPECT_EQ(SRDMA_OP_SEND_ONLY_INV, out.opcode);
	EXPECT_EQ(SRDMA_F_ONLY, out.flags & SRDMA_F_ONLY);
	EXPECT_TRUE(out.flags & SRDMA_F_SEND);
	EXPECT_TRUE(out.flags & SRDMA_F_IETH);
	EXPECT_FALSE(out.flags & (SRDMA_F_IMM | SRDMA_F_RETH | SRDMA_F_UD));
	EXPECT_EQ(1, out.se);
	EXPECT_EQ(1, out.ackreq);
	EXPECT_EQ(0x42U, out.dqpn);
	EXPECT_EQ(9U, out.psn);
	EXPECT_EQ(0x00123456U, out.inv_rkey);
	EXPECT_EQ(16U, out.hdr_len);
	EXPECT_EQ(5U, out.paylen);
	EXPECT_EQ(3, out.pad);
	EXPECT_EQ(0U, out.imm);

	/* SEND LAST with Invalidate: the end of a message, not its start */
	memcpy(q, p, sizeof(q));
	q[0] = 0x16;
	ASSERT_EQ(0, srdma_parse(q, 16, sizeof(q), &out));
	EXPECT_EQ(SRDMA_OP_SEND_LAST_INV, out.opcode);
	EXPECT_EQ(SRDMA_F_LAST, out.flags & SRDMA_F_ONLY);
	EXPECT_EQ(0x00123456U, out.inv_rkey);

	/* an empty SEND with Invalidate (no pad) is valid */
	q[0] = 0x17;
	q[1] = 0x80;
	ASSERT_EQ(0, srdma_parse(q, 16, 16 + 4, &out));
	EXPECT_EQ(0U, out.paylen);
	EXPECT_EQ(0x00123456U, out.inv_rkey);
	/* the datagram ends inside the IETH */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 14, 14, &out));
	/* room for the IETH but not the ICRC */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 16, 16 + 3, &out));
	/* fewer header bytes available than the IETH needs */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(p, 15, sizeof(p), &out));
	/* the same opcode bits in the UC and RD ranges name nothing */
	q[0] = 0x36;
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(q, 16, sizeof(q), &out));
	q[0] = 0x57;
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(q, 16, sizeof(q), &out));
	/* built back, the same bytes */
	memset(q, 0, sizeof(q));
	ASSERT_EQ(0, srdma_parse(p, 16, sizeof(p), &out));
	EXPECT_EQ(16U, srdma_build_hdr(q, &out));
	EXPECT_EQ(0, memcmp(p, q, 16));
}

/*
 * A UD SEND ONLY with immediate, written out by hand from IBTA 9.2-9.3:
 * BTH, DETH (Q_Key 0x11111111, source QPN 0x000123), ImmDt, 6 bytes of
 * payload and 2 of pad.
 */
TEST(parse_ud_send_only_imm)
{
	static const u8 p[] = {
		0x65, 0x20, 0xff, 0xff, 0x00, 0x00, 0x00, 0x42,	/* BTH */
		0x00, 0x00, 0x00, 0x07,
		0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x01, 0x23,	/* DETH */
		0xca, 0xfe, 0xba, 0xbe,				/* ImmDt */
		1, 2, 3, 4, 5, 6, 0, 0,				/* data, pad */
		0, 0, 0, 0,					/* ICRC */
	};
	struct srdma_pkt out;

	ASSERT_EQ(0, srdma_parse(p, 24, sizeof(p), &out));
	EXPECT_EQ(SRDMA_OP_UD_SEND_ONLY_IMM, out.opcode);
	EXPECT_TRUE(out.flags & SRDMA_F_UD);
	EXPECT_TRUE(out.flags & SRDMA_F_DETH);
	EXPECT_TRUE(out.flags & SRDMA_F_IMM);
	EXPECT_EQ(0x42U, out.dqpn);
	EXPECT_EQ(7U, out.psn);
	EXPECT_EQ(0x11111111U, out.qkey);
	EXPECT_EQ(0x123U, out.sqpn);
	EXPECT_EQ(24U, out.hdr_len);
	EXPECT_EQ(6U, out.paylen);
	EXPECT_EQ(2, out.pad);
	EXPECT_EQ(0, memcmp(&out.imm, p + 20, 4));
	/* without ImmDt the payload starts after the DETH */
	ASSERT_EQ(0, srdma_parse((const u8[]){ 0x64, 0, 0xff, 0xff, 0, 0, 0,
			0x42, 0, 0, 0, 7, 0x11, 0x11, 0x11, 0x11, 0, 0, 1,
			0x23 }, 20, 20 + 8 + 4, &out));
	EXPECT_EQ(20U, out.hdr_len);
	EXPECT_EQ(8U, out.paylen);
	EXPECT_EQ(0x123U, out.sqpn);
}

/* A DETH cut short, in the datagram or in what is available of it. */
TEST(parse_ud_truncated_deth)
{
	struct srdma_pkt in = {
		.opcode = SRDMA_OP_UD_SEND_ONLY, .pkey = 0xffff,
		.qkey = 0x1234, .sqpn = 99,
	};
	struct srdma_pkt out;
	u8 buf[64];
	u32 hl;

	hl = srdma_build_hdr(buf, &in);
	ASSERT_EQ(SRDMA_BTH_LEN + SRDMA_DETH_LEN, hl);
	/* the datagram ends inside the DETH */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(buf, SRDMA_BTH_LEN + 4,
					 SRDMA_BTH_LEN + 4, &out));
	/* room for the DETH but not the ICRC */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(buf, hl, hl + 3, &out));
	/* fewer header bytes available than the opcode needs */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(buf, hl - 1, hl + 4, &out));
	/* the full header: an empty UD SEND is valid */
	EXPECT_EQ(0, srdma_parse(buf, hl, hl + 4, &out));
	EXPECT_EQ(0x1234U, out.qkey);
	EXPECT_EQ(0U, out.paylen);
	/* other UD opcodes (RDMA-less UD has only SEND ONLY) are refused */
	buf[0] = 0x66;
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(buf, hl, hl + 4, &out));
	buf[0] = 0x60;
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(buf, hl, hl + 4, &out));
}

TEST(parse_rejects_malformed)
{
	u8 buf[64];
	struct srdma_pkt in = { .opcode = SRDMA_OP_SEND_ONLY, .pkey = 0xffff };
	struct srdma_pkt out;
	u32 hl;

	hl = srdma_build_hdr(buf, &in);
	/* too short for a BTH */
	EXPECT_EQ(-EINVAL, srdma_parse(buf, 8, 8, &out));
	/* no room for the ICRC */
	EXPECT_EQ(-EMSGSIZE, srdma_parse(buf, hl, hl + 2, &out));
	/* more bytes available than the datagram holds */
	EXPECT_EQ(-EINVAL, srdma_parse(buf, hl + 8, hl + 4, &out));
	/* unknown and unsupported opcodes (RESYNC, UC, CNP) */
	buf[0] = 0x15;
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(buf, hl, hl + 4, &out));
	buf[0] = 0x2c;	/* UC has no READ */
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(buf, hl, hl + 4, &out));
	buf[0] = 0x31;	/* nor ACK, nor anything past WRITE ONLY with ImmDt */
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(buf, hl, hl + 4, &out));
	buf[0] = 0x81;
	EXPECT_EQ(-EOPNOTSUPP, srdma_parse(buf, hl, hl + 4, &out));
	buf[0] = SRDMA_OP_SEND_ONLY;
	/* transport version 1 */
	buf[1] |= 1;
	EXPECT_EQ(-EPROTO, srdma_parse(buf, hl, hl + 4, &out));
	buf[1] &= ~1;
	/* pad larger than the payload */
	buf[1] |= 3 << 4;
	EXPECT_EQ(-EMSGSIZE, srdma_parse(buf, hl, hl + 2 + 4, &out));
	/* payload + pad not a multiple of 4 */
	EXPECT_EQ(-EPROTO, srdma_parse(buf, hl, hl + 5 + 4, &out));
	buf[1] &= ~(3 << 4);
	/* pad on a middle packet */
	buf[0] = SRDMA_OP_SEND_MIDDLE;
	buf[1] |= 1 << 4;
	EXPECT_EQ(-EPROTO, srdma_parse(buf, hl, hl + 8 + 4, &out));
	buf[1] &= ~(3 << 4);
	/* empty middle packet */
	EXPECT_EQ(-EPROTO, srdma_parse(buf, hl, hl + 4, &out));
	/* READ request with payload */
	in.opcode = SRDMA_OP_READ_REQ;
	hl = srdma_build_hdr(buf, &in);
	EXPECT_EQ(-EMSGSIZE, srdma_parse(buf, hl, hl + 4 + 4, &out));
	EXPECT_EQ(0, srdma_parse(buf, hl, hl + 4, &out));
	/* ACK cut inside its AETH */
	in.opcode = SRDMA_OP_ACK;
	hl = srdma_build_hdr(buf, &in);
	EXPECT_EQ(-EMSGSIZE, srdma_parse(buf, hl - 1, hl - 1, &out));
}

/*
 * UC (IBTA 9.2.1, table 38): transport 001b, the twelve SEND and WRITE
 * opcodes of RC, with the same headers and flags plus SRDMA_F_UC.
 */
TEST(uc_opcodes)
{
	u8 buf[SRDMA_MAX_HDR_LEN + 64 + SRDMA_ICRC_LEN];
	struct srdma_pkt in, out;
	u32 op, rc, f, hl, pay;

	/* no RC or UD opcode is taken for UC (atomics and their ACK) */
	for (op = 0; op <= 0xff; op++)
		if ((op & SRDMA_OP_TRANSPORT_MASK) != SRDMA_OP_UC)
			EXPECT_FALSE(srdma_op_flags(op) & SRDMA_F_UC);
	for (op = 0x20; op <= 0x3f; op++) {
		rc = op & 0x1f;
		f = srdma_op_flags(op);
		if (rc > SRDMA_OP_WRITE_ONLY_IMM) {
			EXPECT_EQ(0U, f);
			continue;
		}
		EXPECT_EQ(srdma_op_flags(rc) | SRDMA_F_UC, f);
		EXPECT_FALSE(f & (SRDMA_F_UD | SRDMA_F_DETH | SRDMA_F_AETH |
				  SRDMA_F_READ | SRDMA_F_RRESP |
				  SRDMA_F_ATOMIC | SRDMA_F_AACK |
				  SRDMA_F_IETH));
		/* the UC bit is apart from every flag of the table */
		EXPECT_FALSE(srdma_op_flags(rc) & SRDMA_F_UC);
		EXPECT_EQ(srdma_hdr_len(rc), srdma_hdr_len(op));
		memset(&in, 0, sizeof(in));
		in.opcode = op;
		in.pkey = 0xffff;
		in.dqpn = 0x123456;
		in.psn = 0xfffffe;
		in.va = 0x0102030405060708ULL;
		in.rkey = 0x55aa55aa;
		in.dmalen = 300;
		in.imm = 0xa1b2c3d4;
		pay = f & SRDMA_F_PAYLOAD ? 64 : 0;
		hl = srdma_build_hdr(buf, &in);
		EXPECT_EQ(op, buf[0]);
		ASSERT_EQ(0, srdma_parse(buf, hl, hl + pay + SRDMA_ICRC_LEN,
					 &out));
		EXPECT_EQ(op, out.opcode);
		EXPECT_EQ(f, out.flags);
		EXPECT_EQ(0x123456U, out.dqpn);
		EXPECT_EQ(0xfffffeU, out.psn);
		if (f & SRDMA_F_RETH) {
			EXPECT_EQ(in.va, out.va);
			EXPECT_EQ(in.rkey, out.rkey);
			EXPECT_EQ(300U, out.dmalen);
		}
		if (f & SRDMA_F_IMM)
			EXPECT_EQ(in.imm, out.imm);
	}
	/* UC SEND ONLY with ImmDt, written out by hand: 0x25 */
	{
		static const u8 p[] = {
			0x25, 0x10, 0xff, 0xff, 0x00, 0x00, 0x00, 0x42,
			0x00, 0x00, 0x00, 0x09,
			0xca, 0xfe, 0xba, 0xbe,			/* ImmDt */
			1, 2, 3, 0,				/* data, pad */
			0, 0, 0, 0,				/* ICRC */
		};

		ASSERT_EQ(0, srdma_parse(p, 16, sizeof(p), &out));
		EXPECT_EQ(SRDMA_F_UC | SRDMA_F_SEND | SRDMA_F_ONLY |
			  SRDMA_F_IMM | SRDMA_F_PAYLOAD, out.flags);
		EXPECT_EQ(3U, out.paylen);
		EXPECT_EQ(1, out.pad);
		EXPECT_EQ(9U, out.psn);
		EXPECT_EQ(0, memcmp(&out.imm, p + 12, 4));
	}
	/* a UC WRITE FIRST cut inside its RETH */
	EXPECT_EQ(-EMSGSIZE, srdma_parse((const u8[]){ 0x26, 0, 0xff, 0xff,
			0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0 }, 16, 16 + 4,
			&out));
	/* pad on a UC SEND MIDDLE */
	EXPECT_EQ(-EPROTO, srdma_parse((const u8[]){ 0x21, 0x10, 0xff, 0xff,
			0, 0, 0, 1, 0, 0, 0, 1 }, 12, 12 + 8 + 4, &out));
}

/*
 * The flags past the u16 opcode table (UC, IETH) are apart from each
 * other and from every bit the table holds; only the two SEND with
 * Invalidate opcodes carry the IETH, and only the UC group SRDMA_F_UC.
 */
TEST(opflag_bits)
{
	static const u32 bits[] = {
		SRDMA_F_SEND, SRDMA_F_WRITE, SRDMA_F_READ, SRDMA_F_RRESP,
		SRDMA_F_FIRST, SRDMA_F_MIDDLE, SRDMA_F_LAST, SRDMA_F_RETH,
		SRDMA_F_AETH, SRDMA_F_IMM, SRDMA_F_PAYLOAD, SRDMA_F_ACK,
		SRDMA_F_DETH, SRDMA_F_UD, SRDMA_F_ATOMIC, SRDMA_F_AACK,
		SRDMA_F_UC, SRDMA_F_IETH, SRDMA_F_AWRITE, SRDMA_F_XRC,
		SRDMA_F_XRCETH,
	};
	u32 seen = 0, i, f;

	for (i = 0; i < ARRAY_SIZE(bits); i++) {
		EXPECT_EQ(0U, bits[i] & (bits[i] - 1));	/* one bit */
		EXPECT_EQ(0U, seen & bits[i]);		/* not taken */
		seen |= bits[i];
	}
	EXPECT_EQ(1U << 14, (u32)SRDMA_F_ATOMIC);
	EXPECT_EQ(1U << 15, (u32)SRDMA_F_AACK);
	EXPECT_TRUE(SRDMA_F_UC > 0xffff && SRDMA_F_IETH > 0xffff &&
		    SRDMA_F_AWRITE > 0xffff);
	for (i = 0; i <= 0xff; i++) {
		f = srdma_op_flags(i);
		EXPECT_EQ(i == SRDMA_OP_SEND_LAST_INV ||
			  i == SRDMA_OP_SEND_ONLY_INV ||
			  i == (SRDMA_OP_XRC | SRDMA_OP_SEND_LAST_INV) ||
			  i == (SRDMA_OP_XRC | SRDMA_OP_SEND_ONLY_INV),
			  !!(f & SRDMA_F_IETH));
		EXPECT_FALSE((f & SRDMA_F_IETH) &&
			     (f & (SRDMA_F_UC | SRDMA_F_UD | SRDMA_F_IMM |
				   SRDMA_F_ATOMIC | SRDMA_F_AACK)));
		EXPECT_FALSE((f & SRDMA_F_ATOMIC) && (f & SRDMA_F_UC));
		/* ATOMIC WRITE: RC 0x1d alone, never in the UC group */
		EXPECT_EQ(i == SRDMA_OP_ATOMIC_WRITE, !!(f & SRDMA_F_AWRITE));
	}
}

/*
 * XRC: RC's opcodes up to SEND ONLY with Invalidate in the XRC group
 * (0xa0), never ATOMIC WRITE; requests carry an XRCETH right after the
 * BTH, answers do not. Every one built and parsed back; one of each kind
 * written out by hand.
 */
TEST(xrc_opcodes)
{
	u8 buf[SRDMA_MAX_HDR_LEN + 64 + SRDMA_ICRC_LEN];
	struct srdma_pkt in, out;
	u32 op, rc, f, hl, pay;

	for (op = 0; op <= 0xff; op++)
		if ((op & SRDMA_OP_TRANSPORT_MASK) != SRDMA_OP_XRC)
			EXPECT_FALSE(srdma_op_flags(op) &
				     (SRDMA_F_XRC | SRDMA_F_XRCETH));
	for (op = SRDMA_OP_XRC; op <= SRDMA_OP_XRC + 0x1f; op++) {
		rc = op & 0x1f;
		f = srdma_op_flags(op);
		if (rc > 0x17 || !srdma_op_flags(rc)) {
			EXPECT_EQ(0U, f);
			continue;
		}
		EXPECT_EQ(srdma_op_flags(rc) | SRDMA_F_XRC |
			  (srdma_op_flags(rc) & SRDMA_F_REQ ?
			   SRDMA_F_XRCETH : 0), f);
		EXPECT_EQ(srdma_hdr_len(rc) +
			  (f & SRDMA_F_XRCETH ? SRDMA_XRCETH_LEN : 0),
			  srdma_hdr_len(op));
		ASSERT_GE(SRDMA_MAX_HDR_LEN, srdma_hdr_len(op));
		memset(&in, 0, sizeof(in));
		in.opcode = op;
		in.pkey = 0xffff;
		in.dqpn = 0x000042;
		in.psn = 0x7;
		in.va = 0x0102030405060708ULL;
		in.rkey = 0x55aa55aa;
		in.dmalen = 300;
		in.imm = 0xa1b2c3d4;
		in.swap_add = 0x11;
		in.compare = 0x22;
		in.syndrome = SRDMA_AETH_ACK;
		in.msn = 0x3;
		in.inv_rkey = 0x99;
		in.xrc_srqn = 0xabcdef;
		pay = f & SRDMA_F_PAYLOAD ? 64 : 0;
		hl = srdma_build_hdr(buf, &in);
		EXPECT_EQ(srdma_hdr_len(op), hl);
		ASSERT_EQ(0, srdma_parse(buf, hl, hl + pay + SRDMA_ICRC_LEN,
					 &out));
		EXPECT_EQ(f, out.flags);
		EXPECT_EQ(f & SRDMA_F_XRCETH ? 0xabcdefU : 0U, out.xrc_srqn);
		if (f & (SRDMA_F_RETH | SRDMA_F_ATOMIC)) {
			EXPECT_EQ(in.va, out.va);
			EXPECT_EQ(in.rkey, out.rkey);
		}
		if (f & SRDMA_F_IMM)
			EXPECT_EQ(in.imm, out.imm);
		if (f & SRDMA_F_IETH)
			EXPECT_EQ(in.inv_rkey, out.inv_rkey);
		if (f & SRDMA_F_AETH)
			EXPECT_EQ(in.msn, out.msn);
	}
	/* XRC SEND ONLY (0xa4) to XRC SRQ 0x010203, by hand */
	{
		static const u8 p[] = {
			0xa4, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x42,
			0x80, 0x00, 0x00, 0x09,
			0xee, 0x01, 0x02, 0x03,			/* XRCETH */
			1, 2, 3, 4,				/* data */
			0, 0, 0, 0,				/* ICRC */
		};

		ASSERT_EQ(0, srdma_parse(p, 16, sizeof(p), &out));
		EXPECT_EQ(SRDMA_F_XRC | SRDMA_F_XRCETH | SRDMA_F_SEND |
			  SRDMA_F_ONLY | SRDMA_F_PAYLOAD, out.flags);
		EXPECT_EQ(0x010203U, out.xrc_srqn);	/* resv8 ignored */
		EXPECT_EQ(4U, out.paylen);
		EXPECT_EQ(1, out.ackreq);
	}
	/* XRC RDMA WRITE FIRST: BTH, XRCETH, RETH */
	{
		static const u8 p[] = {
			0xa6, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x42,
			0x00, 0x00, 0x00, 0x01,
			0x00, 0x00, 0x00, 0x07,			/* XRCETH */
			0, 0, 0, 0, 0, 0, 0x10, 0x00,		/* RETH VA */
			0x12, 0x34, 0x56, 0x78,			/* R_Key */
			0x00, 0x00, 0x08, 0x00,			/* DMA len */
			9, 9, 9, 9,				/* data */
			0, 0, 0, 0,				/* ICRC */
		};

		ASSERT_EQ(32U, srdma_hdr_len(0xa6));
		ASSERT_EQ(0, srdma_parse(p, 32, sizeof(p), &out));
		EXPECT_EQ(7U, out.xrc_srqn);
		EXPECT_EQ(0x1000ULL, out.va);
		EXPECT_EQ(0x12345678U, out.rkey);
		EXPECT_EQ(0x800U, out.dmalen);
		EXPECT_EQ(4U, out.paylen);
		/* and with no payload: a FIRST must carry some */
		EXPECT_EQ(-EPROTO, srdma_parse(p, 32, sizeof(p) - 4, &out));
	}
	/* XRC ACK (0xb1): no XRCETH; ATOMIC WRITE (0xbd) is not taken */
	EXPECT_EQ(SRDMA_BTH_LEN + SRDMA_AETH_LEN, srdma_hdr_len(0xb1));
	EXPECT_EQ(0U, srdma_op_flags(0xbd));
	/* an XRC SEND ONLY cut inside its XRCETH */
	EXPECT_EQ(-EMSGSIZE, srdma_parse((const u8[]){ 0xa4, 0, 0xff, 0xff,
			0, 0, 0, 1, 0, 0, 0, 1, 0, 0 }, 14, 14 + 4, &out));
}

TEST(psn_arithmetic)
{
	EXPECT_EQ(0, srdma_psn_diff(5, 5));
	EXPECT_EQ(1, srdma_psn_diff(0, 0xffffff));
	EXPECT_EQ(-1, srdma_psn_diff(0xffffff, 0));
	EXPECT_EQ(0x7fffff, srdma_psn_diff(0x7fffff, 0));
	EXPECT_EQ(-0x800000, srdma_psn_diff(0x800000, 0));
	EXPECT_EQ(2U, srdma_psn_add(0xffffff, 3));
	EXPECT_EQ(0U, srdma_psn_add(0xfffffe, 2));
}

/* AETH credit counts (IBTA 9.7.7.2): each code and the boundaries round down. */
TEST(credit_counts)
{
	static const u32 wqes[31] = {
		0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
		12288, 16384, 24576, 32768,
	};
	u32 c;

	for (c = 0; c < 31; c++) {
		EXPECT_EQ(wqes[c], srdma_credits_decode(c));
		EXPECT_EQ(c, srdma_credits_encode(wqes[c]));
		/* One short of the next step still encodes as this one. */
		if (c < 30)
			EXPECT_EQ(c, srdma_credits_encode(wqes[c + 1] - 1));
	}
	EXPECT_EQ(0U, srdma_credits_decode(SRDMA_AETH_CREDIT_INVALID));
	/* Only the low five bits count. */
	EXPECT_EQ(8U, srdma_credits_decode(0xe6));
	EXPECT_EQ(30, srdma_credits_encode(32769));
	EXPECT_EQ(30, srdma_credits_encode(0xffffffff));
	EXPECT_EQ(5, srdma_credits_encode(7));
}

TEST_HARNESS_MAIN
