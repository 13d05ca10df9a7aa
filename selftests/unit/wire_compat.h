/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* User-space stand-ins for the kernel types srdma_wire.[ch] use. */
#ifndef SRDMA_WIRE_COMPAT_H
#define SRDMA_WIRE_COMPAT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

/*
 * CRC-32 (IEEE, reflected), no pre- or post-inversion, in crc32.c: what
 * srdma_icrc.c computes the ICRC with in the kernel.
 */
u32 srdma_crc32(u32 crc, const void *buf, u32 len);

#endif
