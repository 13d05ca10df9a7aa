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
#define SRDMA_UVERBS_ABI_VERSION	4

/*
 * node_desc of every srdma ib_device. An srdma device may have any name and
 * its driver_id is RDMA_DRIVER_UNKNOWN, so the provider recognises srdma
 * devices by this node description (sysfs node_desc), which srdma does not
 * let anyone change (it has no modify_device).
 */
#define SRDMA_NODE_DESC			"srdma"

/* Bits of srdma_alloc_ucontext_resp.caps */
enum srdma_ucontext_caps {
	SRDMA_CAP_MAPPED_RINGS = 1 << 1, /* CQ, SQ and RQ mapped, see below */
	SRDMA_CAP_UD = 1 << 2,		/* UD QPs and address handles */
	SRDMA_CAP_SRQ = 1 << 3,		/* SRQs, mapped, see below */
	SRDMA_CAP_ATOMIC_WRITE = 1 << 4, /* IB_UVERBS_WR_ATOMIC_WRITE, below */
	SRDMA_CAP_DM = 1 << 5,		/* device memory, mapped, see below */
	SRDMA_CAP_XRC = 1 << 6,		/* XRC, see srdma_usend_wqe */
	SRDMA_CAP_CQ_TIMESTAMP = 1 << 7, /* srdma_uwc_ts, below */
	SRDMA_CAP_BIG_MW = 1 << 8,	/* windows of 4 GiB and more */
};

struct srdma_alloc_ucontext_resp {
	__u32 abi_version;	/* SRDMA_UVERBS_ABI_VERSION */
	__u32 reserved;
	__aligned_u64 caps;	/* enum srdma_ucontext_caps */
};

/*
 * Mapped rings. Every CQ, SQ, RQ and SRQ of a user process is a ring the
 * process maps with mmap() on its uverbs file at the offset given in the
 * create response: a header, then a power-of-two number of fixed-size
 * slots. Indices are free-running 32-bit counters; slot i is at
 * SRDMA_RING_HDR_SIZE + (i & (slots - 1)) * slot_size.
 *
 * Each index has one writer: the producer writes prod after filling the
 * slots (release order), the consumer writes cons after reading them. The
 * kernel produces CQ entries and consumes SQ, RQ and SRQ entries. It reads
 * everything user space writes once, validates it, and treats a bad index
 * or entry as an error of that queue, never of the kernel.
 */
#define SRDMA_RING_HDR_SIZE	128

/*
 * Device memory (ibv_alloc_dm(), SRDMA_CAP_DM): kernel memory a process
 * maps to copy to and from. The DM of handle H (the handle ibv_alloc_dm
 * returned) is mapped at page offset SRDMA_DM_PGOFF_BASE +
 * H * SRDMA_DM_PGOFF_STRIDE of the uverbs file, for its length rounded up
 * to whole pages; a DM holds SRDMA_DM_PGOFF_STRIDE pages at most.
 */
#define SRDMA_DM_PGOFF_BASE	(1U << 31)
#define SRDMA_DM_PGOFF_STRIDE	256U

struct srdma_ring_hdr {
	__u32 prod;
	__u32 reserved0[15];	/* prod and cons on their own cache lines */
	__u32 cons;
	__u32 flags;		/* enum srdma_ring_flags, kernel-written */
	/*
	 * SQ only, kernel-written: nonzero while the kernel will read the
	 * ring again by itself (packets are in flight, and their ACKs or the
	 * retransmit timer run the requester). The provider then skips the
	 * doorbell. Both sides store their index or flag, then fence, then
	 * load the other's, so one of them always sees new work.
	 */
	__u32 no_doorbell;
	__u32 reserved1[13];
};

enum srdma_ring_flags {
	/*
	 * The QP is in the error state: work posted now is only flushed
	 * once user space rings the doorbell (a post_send or post_recv
	 * command without work requests).
	 */
	SRDMA_RING_F_QP_ERR = 1 << 0,
};

/*
 * A CQ slot is a struct ib_uverbs_wc (rdma/ib_user_verbs.h). Its wc_flags
 * take libibverbs' values (enum ibv_wc_flags), which the kernel's
 * IB_WC_* do not all share: a receive of a SEND with Invalidate has
 * SRDMA_UWC_WITH_INV, and the invalidated rkey in ex.invalidate_rkey.
 */
enum srdma_uwc_flags {
	SRDMA_UWC_GRH = 1 << 0,
	SRDMA_UWC_WITH_IMM = 1 << 1,
	SRDMA_UWC_WITH_INV = 1 << 3,
};

/*
 * A CQ made with IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
 * (SRDMA_CAP_CQ_TIMESTAMP) has slots of SRDMA_UWC_TS_SLOT bytes: the
 * struct ib_uverbs_wc, then this, when the kernel wrote the completion.
 * completion_ns is the device's clock (ibv_query_device_ex()'s
 * hca_core_clock, 1 GHz; ibv_query_rt_values_ex()'s raw_clock):
 * CLOCK_MONOTONIC in nanoseconds, as the process that made the CQ sees
 * it (through its time namespace). wallclock_ns is CLOCK_REALTIME.
 */
struct srdma_uwc_ts {
	__aligned_u64 completion_ns;
	__aligned_u64 wallclock_ns;
};

#define SRDMA_UWC_SIZE		48	/* sizeof(struct ib_uverbs_wc) */
#define SRDMA_UWC_TS_SLOT	(SRDMA_UWC_SIZE + 16)

/*
 * A UD receive's sl: the L3 header type of the datagram (a RoCE port has
 * no SLs), as mlx5 reports it; UCX's ud_verbs reads it. Other completions
 * have sl 0.
 */
enum srdma_uwc_sl {
	SRDMA_UWC_SL_IPV6 = 1,
	SRDMA_UWC_SL_IPV4 = 2,
};

struct srdma_usge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * SQ slot: fixed part, then num_sge (at most the SQ's max_sge) SGEs. On a
 * UD QP the remote address and key name the destination instead: the AH
 * number from srdma_create_ah_resp, the remote QPN and the Q_Key (bit 31
 * set: the QP's own Q_Key). An atomic (IB_UVERBS_WR_ATOMIC_CMP_AND_SWP,
 * _FETCH_AND_ADD) has its target in remote_addr and rkey, its operands in
 * compare_add (the compare value, or what is added) and swap, and exactly
 * one SGE of 8 bytes for the result. An ATOMIC WRITE
 * (IB_UVERBS_WR_ATOMIC_WRITE, RC only, SRDMA_CAP_ATOMIC_WRITE) has its
 * target, 8-byte aligned, in remote_addr and rkey, the 8 bytes to store
 * there in compare_add (copied as they are in memory, not as a number),
 * no SGEs and no IB_UVERBS_SEND_INLINE.
 *
 * Inline data (IB_UVERBS_SEND_INLINE in send_flags): the inline_len bytes
 * of data take the place of the SGEs, from offsetof(sge) on; num_sge is
 * ignored. inline_len is at most the QP's max_inline_data as create_qp
 * reported it; the slot has room for max(max_sge SGEs, max_inline_data
 * bytes) after the fixed part. Without the flag inline_len is ignored.
 *
 * SEND with Invalidate and LOCAL_INV (RC only) carry the key to
 * invalidate in imm_data, as ibv_send_wr's union has it; LOCAL_INV has no
 * SGEs. A memory window bind (IB_UVERBS_WR_BIND_MW, RC only, no SGEs) has
 * the window's new key in rkey, its address in remote_addr, and the
 * length, the lkey of the MR it goes on and its IB_UVERBS_ACCESS_* rights
 * in bind; ibv_bind_mw() of a type 1 window posts the same entry.
 *
 * On an XRC initiator QP (IB_QPT_XRC_INI, SRDMA_CAP_XRC) every entry names
 * the XRC SRQ of the target it is for in xrc_srqn (24 bits); other QPs
 * ignore it. XRC has RC's operations but ATOMIC WRITE and memory window
 * binds.
 */
struct srdma_usend_wqe {
	__aligned_u64 wr_id;
	union {
		__aligned_u64 remote_addr;	/* RDMA WRITE and READ */
		struct {
			__u32 ah;		/* UD */
			__u32 remote_qpn;
		} ud;
	};
	union {
		__u32 rkey;
		__u32 remote_qkey;		/* UD */
	};
	__u32 opcode;		/* enum ib_uverbs_wr_opcode */
	__u32 send_flags;	/* enum ib_uverbs_send_flags */
	__u32 imm_data;		/* network order */
	__u32 num_sge;
	__u32 inline_len;	/* bytes of inline data, see above */
	__u32 xrc_srqn;		/* XRC initiators, see above */
	__u32 reserved;
	union {
		struct {
			__aligned_u64 compare_add;	/* atomics */
			__aligned_u64 swap;	/* compare and swap */
		};
		struct {
			__aligned_u64 length;
			__u32 mr_lkey;
			__u32 access;
		} bind;			/* BIND_MW */
	};
	struct srdma_usge sge[];
};

/*
 * RQ and SRQ slot: fixed part, then num_sge (at most the queue's max_sge)
 * SGEs.
 */
struct srdma_urecv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	struct srdma_usge sge[];
};

struct srdma_create_cq_resp {
	__aligned_u64 offset;	/* mmap() offset of the ring */
	__aligned_u64 len;	/* mmap() length */
	__u32 slots;
	__u32 slot_size;	/* SRDMA_UWC_SIZE, or SRDMA_UWC_TS_SLOT */
};

/*
 * After ib_uverbs_resize_cq_resp: the CQ's new ring, a new mapping at a
 * new offset. The kernel moved the completions not yet consumed (from the
 * old ring's cons, read once, to its prod) into it, with their indices:
 * the new ring's prod and cons continue the old ones. The provider maps
 * the new ring and unmaps the old one, whose slots the kernel no longer
 * reads or writes. Written also when the resize fails; then it is void.
 */
struct srdma_resize_cq_resp {
	__aligned_u64 offset;	/* mmap() offset of the new ring */
	__aligned_u64 len;	/* mmap() length */
	__u32 slots;
	__u32 slot_size;	/* as the CQ's srdma_create_cq_resp said */
};

struct srdma_uqueue {
	__aligned_u64 offset;
	__aligned_u64 len;
	__u32 slots;
	__u32 slot_size;
	__u32 max_wr;		/* entries that may be outstanding */
	__u32 max_sge;
};

/* After ib_uverbs_create_ah_resp: the number UD send entries name. */
struct srdma_create_ah_resp {
	__u32 ah_num;		/* never 0 */
	__u32 reserved;
};

/*
 * A QP created with an SRQ has no RQ of its own: rq is all zero, and
 * nothing is mapped for it.
 */
struct srdma_create_qp_resp {
	struct srdma_uqueue sq;
	struct srdma_uqueue rq;
};

/*
 * After ib_uverbs_create_srq_resp: the SRQ's ring, slots as the RQ's
 * (struct srdma_urecv_wqe). The kernel takes entries from it when a
 * message to any of the SRQ's QPs needs a receive, in softirq; the
 * provider posts by storing prod and never rings a doorbell. prod may run
 * at most max_wr ahead of cons. A bad index or entry puts the SRQ in
 * error (IB_EVENT_SRQ_ERR): it gives no more receives, and a QP that
 * needs one then goes to the error state.
 */
struct srdma_create_srq_resp {
	struct srdma_uqueue rq;
};

#endif /* SRDMA_ABI_USER_H */
