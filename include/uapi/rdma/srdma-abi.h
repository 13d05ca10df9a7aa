/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * srdma user/kernel ABI: the private data exchanged between the srdma
 * kernel module and its rdma-core provider (libsrdma-rdmav34.so).
 *
 * This is the one header both sides include. Every structure is made of
 * fixed-width fields, naturally aligned, with explicit padding.
 */
#ifndef SRDMA_ABI_USER_H
#define SRDMA_ABI_USER_H

#include <linux/types.h>

/* uverbs driver ABI version, reported in sysfs and matched by the provider */
#define SRDMA_UVERBS_ABI_VERSION	1

/* Name prefix of every srdma ib_device; the provider matches on it. */
#define SRDMA_IBDEV_PREFIX		"srdma"

/* Bits of srdma_alloc_ucontext_resp.caps */
enum srdma_ucontext_caps {
	SRDMA_CAP_CMD_DATAPATH = 1 << 0, /* post/poll through uverbs commands */
};

struct srdma_alloc_ucontext_resp {
	__u32 abi_version;	/* SRDMA_UVERBS_ABI_VERSION */
	__u32 reserved;
	__aligned_u64 caps;	/* enum srdma_ucontext_caps */
};

#endif /* SRDMA_ABI_USER_H */
