// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User-space srdma_crc32() for the wire-format tests and the fuzzer: the
 * kernel's, in srdma_icrc.c, is crc32_le() or the crypto API's crc32.
 * CRC-32 (IEEE, reflected), no pre- or post-inversion, table driven.
 */
#include "srdma_wire.h"

static u32 crc_table[256];

static void crc_init(void)
{
	u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

u32 srdma_crc32(u32 crc, const void *buf, u32 len)
{
	const u8 *p = buf;

	if (!crc_table[1])
		crc_init();
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
