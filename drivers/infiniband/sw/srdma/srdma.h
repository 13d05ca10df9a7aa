/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * srdma: a software RDMA device speaking RoCEv2 over any Ethernet netdev.
 *
 * Core objects and helpers shared by every file of the driver.
 */
#ifndef SRDMA_H
#define SRDMA_H

#include <linux/if_vlan.h>
#include <linux/iosys-map.h>
#include <linux/jump_label.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/refcount.h>
#include <linux/atomic.h>
#include <net/net_namespace.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/dst.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_verbs.h>
#include <rdma/srdma-abi.h>

#include "srdma_compat.h"
#include "srdma_wire.h"

#define SRDMA_UDP_PORT		4791
/*
 * UDP source port of a QP: SRDMA_SPORT_BITS hashed from its QPN on top of
 * SRDMA_SPORT_BASE, so that it stays in the range RoCEv2 (IBTA Annex A17)
 * gives, 0xc000-0xffff, and ECMP spreads the flows.
 */
#define SRDMA_SPORT_BASE	0xc000
#define SRDMA_SPORT_BITS	14
/* IP TTL / hop limit when the address vector's GRH gives none. */
#define SRDMA_DEFAULT_TTL	64
/* Path MTU in bytes of a new QP, until RTR sets one: IB_MTU_256. */
#define SRDMA_DEFAULT_PATH_MTU	256
#define SRDMA_GID_TBL_LEN	128
#define SRDMA_PORT_NUM		1	/* the one port of every device */
/* query_device's vendor_id: not the IEEE OUI of any hardware vendor. */
#define SRDMA_VENDOR_ID		0xffffff
/* Firmware version reported as major.minor.subminor (0.1.0). */
#define SRDMA_FW_MAJOR		0
#define SRDMA_FW_MINOR		1
#define SRDMA_FW_SUBMINOR	0
#define SRDMA_FW_VER		((u64)SRDMA_FW_MAJOR << 32 | \
				 SRDMA_FW_MINOR << 16 | SRDMA_FW_SUBMINOR)

/* Limits reported by query_device and enforced by the verbs. */
#define SRDMA_MAX_QP		4096
#define SRDMA_MAX_QP_WR		16384
#define SRDMA_MAX_SGE		32
/*
 * Inline data a send work request may carry, at most. It is kept in the
 * SQ entry in place of the SGEs (and in the mapped SQ slot of a user QP),
 * so an SQ entry has room for max(max_send_sge SGEs, max_inline_data).
 */
#define SRDMA_MAX_INLINE_DATA	1024
#define SRDMA_MAX_CQ		8192
#define SRDMA_MAX_CQE		65536
#define SRDMA_CORE_CLOCK_KHZ	1000000	/* completion timestamps: ns */
#define SRDMA_MAX_MR		65536
#define SRDMA_MAX_MW		65536
#define SRDMA_MAX_PD		4096
#define SRDMA_MAX_AH		65536
#define SRDMA_MAX_SRQ		4096
/* Device memory (srdma_dm.c): DMs per device, bytes per DM. */
#define SRDMA_MAX_DM		1024
#define SRDMA_MAX_DM_SIZE	((u64)SRDMA_DM_PGOFF_STRIDE << PAGE_SHIFT)
#define SRDMA_MAX_RD_ATOM	128
/*
 * Multicast, per device: groups, QPs attached to one group, and
 * attachments in all. A datagram to a group is copied into each of its
 * QPs from the softirq that received it, so the QPs of one group bound
 * the work one packet costs: SRDMA_MAX_MCAST_QP_ATTACH copies of at most
 * the MTU, each under its own QP lock.
 */
#define SRDMA_MAX_MCAST_GRP	1024
#define SRDMA_MAX_MCAST_QP_ATTACH 32
#define SRDMA_MAX_MCAST_ATTACH	8192
#define SRDMA_MAX_MR_SIZE	BIT_ULL(40)
/*
 * Pages one fast-registration MR maps at most (max_fast_reg_page_list_len):
 * 2 MiB in 4 KiB pages, more than nvme-rdma's 256 + 1 and xprtrdma's 256.
 */
#define SRDMA_MAX_FAST_REG_PAGES 512
/*
 * The low bits of an MR key are random, the others the MR's index. The
 * user of a fast-registration MR sets the low 8, the key variant (IBTA
 * 10.6.3.1), with each REG_MR (ib_update_fast_reg_key()).
 */
#define SRDMA_MR_KEY_BITS	8
#define SRDMA_MAX_MSG_SIZE	BIT(31)
/*
 * Packets one message may take. PSN distances are signed 24-bit numbers,
 * so a message must span far less than 2^23 PSNs: at path MTU 256 and 512
 * this caps a message below SRDMA_MAX_MSG_SIZE (512 MiB and 1 GiB).
 */
#define SRDMA_MAX_MSG_PKTS	BIT(21)
/* Smallest netdev MTU that carries a 256-byte RoCE payload. */
#define SRDMA_MIN_NETDEV_MTU	(256 + 96)
/*
 * A UD receive buffer starts with this much room for the GRH (IBTA
 * 11.4.1.2): on RoCEv2 the IPv6 header, or the IPv4 header in its last
 * 20 bytes.
 */
#define SRDMA_GRH_LEN		40

/*
 * QPNs 0 and 1 are special; srdma hands out [SRDMA_MIN_QPN, 2^24 - 1):
 * 0xFFFFFF is the multicast QPN. Each device's GSI QP is QPN 1.
 */
#define SRDMA_GSI_QPN		1
#define SRDMA_MIN_QPN		16
/* Unacknowledged packets a requester may have in flight, at most. */
#define SRDMA_WINDOW		512
/*
 * The congestion window, in units of SRDMA_CWND_UNIT bytes of payload
 * (packets up to MTU 1024 count one each), starts here and never shrinks
 * below the min.
 */
#define SRDMA_CWND_UNIT		1024
#define SRDMA_CWND_INIT		64
#define SRDMA_CWND_MIN		8
/* Response packets one READ request asks for at most. */
#define SRDMA_READ_CHUNK	16
/* READs of at most this many packets are answered in the softirq. */
#define SRDMA_READ_INLINE_PKTS	4
/* Floor of the adaptive retransmission timeout, in jiffies. */
#define SRDMA_RTO_MIN_JIFFIES	2
/* Early retransmissions double the timeout at most this many times. */
#define SRDMA_RTO_BACKOFF_MAX	10
/* Payloads of at least this many bytes go out from the MR's pages. */
#define SRDMA_ZCOPY_MIN		1024
/* Ask for an ACK at least every this many packets. */
#define SRDMA_ACKREQ_EVERY	16

/*
 * The UDP sockets (IPv4 and IPv6, port 4791) of one network namespace,
 * shared by every srdma device whose netdev lives there.
 */
struct srdma_sockset {
	struct list_head list;		/* on srdma_socksets, srdma_net_mutex */
	refcount_t refcnt;		/* one per device using it */
	struct net *net;		/* not a counted reference, see net.c */
	struct socket *sk4;		/* NULL once the namespace is gone */
	struct socket __rcu *sk6;	/* NULL if IPv6 is unavailable */
	atomic64_t rx_dropped;		/* packets the stub receive dropped */
	/* Datagrams to the multicast QPN that reached no group. */
	atomic64_t rx_mcast_dropped;
};

/* Objects whose number per device is limited (query_device's max_*). */
enum srdma_res {
	SRDMA_RES_PD,
	SRDMA_RES_CQ,
	SRDMA_RES_QP,
	SRDMA_RES_MR,
	SRDMA_RES_AH,
	SRDMA_RES_SRQ,
	SRDMA_RES_MW,
	SRDMA_RES_DM,
	SRDMA_NUM_RES
};

/* Per-device counters, exposed through rdma statistic (hw counters). */
enum srdma_counter {
	SRDMA_CNT_TX_PKTS,
	SRDMA_CNT_RX_PKTS,
	SRDMA_CNT_RX_BAD_HDR,
	SRDMA_CNT_RX_BAD_ICRC,
	SRDMA_CNT_RX_SOCK_DROPPED,	/* read from the socket set */
	SRDMA_CNT_RX_BAD_STATE,
	SRDMA_CNT_RX_DUP,
	SRDMA_CNT_RX_OUT_OF_SEQ,
	SRDMA_CNT_RETRANSMITS,
	SRDMA_CNT_TIMEOUTS,
	SRDMA_CNT_NAK_SENT,
	SRDMA_CNT_NAK_RCVD,
	SRDMA_CNT_RNR_NAK_SENT,
	SRDMA_CNT_RNR_NAK_RCVD,
	SRDMA_CNT_REM_ACCESS_ERR,
	SRDMA_CNT_TX_ERR,
	SRDMA_CNT_RX_QKEY_VIOL,		/* UD: Q_Key mismatch, dropped */
	SRDMA_CNT_RX_UD_NO_RECV,	/* UD: no receive posted, dropped */
	SRDMA_CNT_TX_UD_TOO_LONG,	/* UD: over the MTU, not sent */
	SRDMA_CNT_RX_UD_OVER_MTU,	/* UD: over the MTU, dropped */
	SRDMA_CNT_RX_UD_SHORT_BUF,	/* UD: receive too small, dropped */
	SRDMA_CNT_RX_MCAST_NO_GROUP,	/* read from the socket set */
	SRDMA_CNT_RX_UC_MSG_DROPPED,	/* UC: a message dropped, see resp */
	SRDMA_CNT_ATOMIC_REPLAYS,	/* duplicate atomics answered again */
	SRDMA_CNT_ATOMIC_REPLAY_MISS,	/* duplicate atomics not in the cache */
	SRDMA_CNT_RX_SRQ_EMPTY,		/* SRQ empty: RNR NAK (RC), drop (UD) */
	SRDMA_CNT_FAST_REG,		/* IB_WR_REG_MR executed */
	SRDMA_CNT_LOCAL_INV,		/* IB_WR_LOCAL_INV executed */
	SRDMA_CNT_REMOTE_INV,		/* SEND with Invalidate honoured */
	SRDMA_CNT_REMOTE_INV_ERR,	/* SEND with Invalidate refused */
	SRDMA_CNT_FAST_REG_ERR,		/* REG_MR or LOCAL_INV failed */
	SRDMA_CNT_MW_BIND,		/* memory window bound */
	SRDMA_CNT_MW_BIND_ERR,		/* memory window bind failed */
	SRDMA_CNT_DUP_READ_DROPPED,	/* duplicate READ dropped, no NAK */
	SRDMA_CNT_STALE_NAK,		/* NAK for a PSN already retired */
	SRDMA_CNT_ODP_MISS,		/* ODP: a page not present when used */
	SRDMA_CNT_ODP_FAULT,		/* ODP: ranges faulted in */
	SRDMA_CNT_ODP_INVAL,		/* ODP: invalidations that hit an MR */
	SRDMA_CNT_TLP,			/* tail-loss probes sent */
	SRDMA_CNT_EARLY_RTO,		/* adaptive timeouts (not the QP's) */
	SRDMA_CNT_TX_RESENT,		/* RC request packets sent again */
	SRDMA_CNT_CREDIT_WAIT,		/* RC sends held for the peer's credits */
	SRDMA_CNT_TX_BATCH,		/* local delivery batches queued */
	SRDMA_CNT_CWND_HOLDS,		/* ACKs that did not grow the window */
	SRDMA_CNT_TX_TRAINS,		/* packet trains sent as one GSO skb */
	SRDMA_CNT_READ_RESTS,		/* read work rested after its slice */
	SRDMA_CNT_TX_DIRECT,		/* placed locally without a packet */
	SRDMA_NUM_COUNTERS
};

struct srdma_dev {
	struct ib_device ibdev;
	/* MR and memory window index -> srdma_mr, own lock */
	struct xarray mr_xa;
	u32 mr_next;			/* next MR index, under mr_xa's lock */
	u32 mw_next;			/* next window index, the same */
	/*
	 * User AH number -> srdma_ah. Its lock (BH) also guards reading an
	 * AH found there: lookups copy the address vector under it, so an
	 * AH erased from it is no longer reachable.
	 */
	struct xarray ah_xa;
	u32 ah_next;			/* next AH number, under ah_xa's lock */
	/*
	 * XRC SRQ number -> srdma_srq, for the XRCETH of arriving packets;
	 * its lock guards it (lookups: RCU and a reference, srdma_srq.c).
	 */
	struct xarray xsrq_xa;
	u32 xsrq_next;			/* next XRC SRQ number, the same */
	atomic64_t counters[SRDMA_NUM_COUNTERS];
	/* Bytes registered on demand, against odp_max_mb (srdma_odp.c). */
	atomic64_t odp_bytes;
	atomic_t res_used[SRDMA_NUM_RES];	/* objects that exist */
	u32 res_max[SRDMA_NUM_RES];		/* set at creation, then fixed */
	struct net_device *ndev;	/* counted, see ndev_tracker */
	netdevice_tracker ndev_tracker;
	struct srdma_sockset *sockset;	/* counted reference */
	/* On srdma_dev_list, or srdma_released_list; srdma_dev_mutex. */
	struct list_head list;
	/*
	 * Set under srdma_dev_mutex once the netdev started unregistering;
	 * a registration that races with it then removes the device itself.
	 */
	bool ndev_gone;
	bool registered;		/* ib_register_device() succeeded */
	struct srdma_qp *gsi;		/* QP1, under srdma_qp.c's gsi mutex */
	/* Multicast groups and attachments, under srdma_mcast_mutex. */
	u32 mcg_count;
	u32 mca_count;
};

struct srdma_ucontext {
	struct ib_ucontext ibuc;
};

struct srdma_pd {
	struct ib_pd ibpd;
};

/* An XRC domain: the core keeps its QPs and users; srdma has nothing. */
struct srdma_xrcd {
	struct ib_xrcd ibxrcd;
};

/*
 * What to do for a QP once the pages it missed in an on-demand paging MR
 * are faulted in (srdma_odp_fault_later()): nothing (the responder sent an
 * RNR NAK, the requester sends again), run its requester (a payload it
 * could not read), or send again from the oldest unacknowledged PSN (a
 * READ response or atomic result it could not place, and dropped).
 */
enum srdma_odp_kick {
	SRDMA_ODP_KICK_NONE,
	SRDMA_ODP_KICK_RUN,
	SRDMA_ODP_KICK_RESEND,
};

/* The two roles of a QP whose on-demand faults are recorded apart. */
enum srdma_odp_role {
	SRDMA_ODP_REQ,			/* its requester's own reads and writes */
	SRDMA_ODP_RSP,			/* its responder, for the remote side */
	SRDMA_ODP_ROLES,
};

/*
 * A fault that failed (memory not mapped, or not writable): the bytes
 * [start, end) of the registration serial (0: none), at jiffies64 at.
 */
struct srdma_odp_fail {
	u64 serial;
	u64 start, end;
	u64 at;
};

enum srdma_mr_type {
	SRDMA_MR_USER,			/* pinned user pages */
	SRDMA_MR_DMA,			/* kernel virtual addresses */
	SRDMA_MR_FAST,			/* ib_alloc_mr(): kernel pages by REG_MR */
	SRDMA_MR_WINDOW,		/* a memory window on a user MR */
};

/*
 * The states of a fast-registration MR or a memory window (IBTA 10.6.1,
 * 10.6.7). User and DMA MRs are VALID from registration to
 * deregistration.
 */
enum srdma_mr_state {
	SRDMA_MR_INVALID,		/* being deregistered or deallocated */
	SRDMA_MR_FREE,			/* allocated or invalidated: no access */
	SRDMA_MR_VALID,			/* registered by REG_MR, or bound */
};

/*
 * The page list of a fast-registration MR: kernel virtual addresses (the
 * core's DMA addresses, srdma having no DMA device) of 1 << shift bytes.
 */
struct srdma_fr_pages {
	u64 *addr;			/* max_num_sg entries */
	u32 npages;
	u32 shift;
};

struct srdma_mr {
	struct ib_mr ibmr;
	struct rcu_head rcu;
	refcount_t ref;			/* registration + in-flight users */
	u64 serial;			/* unique per registration, never reused */
	struct completion released;	/* ref reached zero */
	enum srdma_mr_type type;
	/*
	 * The key lookups match (lkey and rkey are the same). The core's
	 * ibmr.lkey/rkey of a fast-registration MR change when its user
	 * calls ib_update_fast_reg_key(); this one only when REG_MR runs.
	 */
	u32 key;
	/*
	 * Fast-registration MRs and memory windows: guards state, key,
	 * serial, access, iova, length, both page lists and the window's
	 * base, mw_qp_uid, and is held across every copy to or from the pages,
	 * so that no byte moves once an invalidation has returned. User
	 * MRs: guards state and mw_binds only, for binding windows; their
	 * other fields are fixed after registration and copies do not take
	 * it, except on an on-demand paging MR: there it also guards
	 * pages[], which faults fill and invalidations clear, and every copy
	 * to or from those pages holds it. BH; nests inside a QP lock and
	 * inside the umem's umem_mutex (srdma_odp.c). A bind takes its MR's lock inside
	 * the window's (windows have their own lock class); nothing takes a
	 * window's lock inside an MR's.
	 */
	spinlock_t lock;
	enum srdma_mr_state state;
	int access;			/* IB_ACCESS_* */
	u64 iova;
	u64 length;
	u32 max_pages;			/* fast reg: max_num_sg */
	struct srdma_fr_pages fr;	/* fast reg: what REG_MR made valid */
	struct srdma_fr_pages fr_map;	/* fast reg: staged by map_mr_sg */
	struct ib_umem *umem;
	struct page **pages;		/* the pinned pages, in order */
	bool dm_pages;			/* pages[] of a DM, each referenced */
	/*
	 * A dma-buf MR (srdma_dmabuf.c): the buffer, with a reference, the
	 * attachment that keeps it in place, and its kernel mapping; pages[]
	 * then holds a reference on each page.
	 */
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *dmabuf_attach;
	struct iosys_map dmabuf_map;
	/*
	 * On-demand paging (srdma_odp.c): the umem, whose pages are not
	 * pinned. pages[] then holds a page only while it is present and
	 * mapped for the access the MR needs, NULL otherwise.
	 */
	struct ib_umem_odp *odp;
	unsigned long npages;
	unsigned int page_off;		/* offset of iova in pages[0] */
	/*
	 * Memory windows (srdma_mw.c): the user MR bound, with a reference
	 * and counted in its mw_binds, or NULL; the window's type, and the
	 * QP (its uid) a type 2 window was bound through, the only one it
	 * serves.
	 */
	struct srdma_mr *base;
	u64 mw_qp_uid;
	u8 mw_type;			/* IB_MW_TYPE_1 or _2 */
	u32 mw_binds;			/* user MRs: windows bound to it */
};

/*
 * A memory window. The key lookups find its window, an srdma_mr of type
 * SRDMA_MR_WINDOW, freed after an RCU grace period as MRs are (the core
 * frees the srdma_mw itself at once).
 */
struct srdma_mw {
	struct ib_mw ibmw;
	struct srdma_mr *win;
};

struct srdma_umap;

/* The kernel's view of a ring mapped by a user process. */
struct srdma_uring {
	struct srdma_umap *map;		/* NULL: not mapped (kernel user) */
	struct srdma_ring_hdr *hdr;	/* user-writable: read once */
	void *slots;
	u32 slot_size;
	u32 mask;			/* slots - 1 */
	/*
	 * An SQ or RQ ring held garbage: nothing more is taken from it
	 * until the QP is reset. Each ring its own, so that the other one
	 * still flushes. Under the QP lock.
	 */
	bool bad;
};

static inline void *srdma_uring_slot(struct srdma_uring *ur, u32 idx)
{
	return ur->slots + (size_t)(idx & ur->mask) * ur->slot_size;
}

struct srdma_cq {
	struct ib_cq ibcq;
	bool user;			/* a user CQ; set at creation */
	bool timestamps;		/* slots of srdma_uwc_ts; likewise */
	s64 mono_off;			/* the creator's time namespace's */
	spinlock_t lock;		/* guards everything below */
	/*
	 * The ring and its size are replaced by srdma_resize_cq(), under the
	 * lock: every use of uring, ring and mask holds it.
	 */
	struct srdma_uring uring;	/* user CQs: the entries live here */
	struct ib_wc *ring;		/* kernel CQs: the entries live here */
	u32 mask;			/* ring size - 1, a power of two */
	u32 prod;			/* free-running producer index */
	u32 cons;			/* free-running consumer index */
	u32 notify;			/* armed IB_CQ_* flags, 0 if unarmed */
	bool overflowed;
};

struct srdma_sge {
	u64 addr;
	u32 length;
	u32 lkey;
};

/* Where the payload of a packet comes from (srdma_data_pkt()). */
struct srdma_payload_src {
	struct srdma_mr *mr;		/* a checked MR, or NULL: the SGEs */
	u64 serial;			/* the registration of @mr checked */
	u64 iova;			/* in @mr */
	struct srdma_sge *sge;		/* a local SGE list, lkeys unchecked */
	u32 num_sge;
	u32 off;			/* byte offset in the SGE list */
	/* Inline data in the WQE (then no @mr, no @sge), from @off on. */
	const u8 *inline_data;
	/*
	 * Copy, never attach the pages: the work request completes before
	 * the packet is freed (UD), and its buffer may change after that.
	 */
	bool copy;
};

/* Where a QP's packets go: resolved into a local, published whole. */
struct srdma_av {
	bool ipv6;
	union {
		__be32 v4;
		struct in6_addr v6;
	} saddr, daddr;
	/* The source GID's netdev: the device's own, or a VLAN upper of it. */
	int ifindex;
	u8 tos;
	u8 ttl;
};

/*
 * An address handle. User AHs have a number (ah_xa) that the provider
 * writes into UD send ring entries; kernel AHs are passed by pointer.
 */
struct srdma_ah {
	struct ib_ah ibah;
	struct srdma_av av;		/* fixed after creation */
	u32 ah_num;			/* 0: a kernel AH, not in ah_xa */
	/* As created, for query_ah; without its sgid_attr reference. */
	struct rdma_ah_attr attr;
};

/* The destination of a UD send work request, copied from its AH. */
struct srdma_ud_dest {
	struct srdma_av av;
	u32 dqpn;
	u32 qkey;			/* as posted: bit 31 is the QP's Q_Key */
};

/* A send work request as srdma keeps it in the SQ ring. */
struct srdma_send_wqe {
	u64 wr_id;
	u64 remote_addr;
	u32 rkey;
	u32 opcode;			/* enum ib_wr_opcode */
	u32 send_flags;
	__be32 imm;
	u32 length;			/* sum of the SGE lengths */
	u32 num_sge;			/* 0 with IB_SEND_INLINE */
	u32 xrc_srqn;			/* XRC INI QPs: the XRCETH's SRQ */
	/* Transport progress, guarded by the QP lock. */
	u32 first_psn;
	u32 last_psn;
	u32 npkts;
	bool started;			/* first_psn/last_psn valid */
	bool done;			/* READ: all responses placed */
	/*
	 * READ of no data: its one request is counted in rd_reqs (which
	 * rd_sent_off, 0 either way, cannot say).
	 */
	bool rd_zero_asked;
	u32 rd_next_psn;		/* READ: next response expected */
	u32 rd_sent_off;		/* READ: requests sent up to here */
	u64 compare_add;		/* atomics: compare or add operand */
	u64 swap;			/* compare and swap: the new value */
	struct srdma_ud_dest ud;	/* UD QPs only */
	/*
	 * IB_WR_REG_MR: the MR, its access and length; the new key is in
	 * rkey, the iova in remote_addr. IB_WR_BIND_MW: the same for the
	 * window, with the lkey of the MR it goes on in bind_lkey, as the
	 * process posted them (checked when the bind runs). LOCAL_INV and
	 * SEND_WITH_INV keep the key to invalidate in rkey.
	 */
	struct srdma_mr *reg_mr;
	u64 reg_len;
	u32 reg_access;
	u32 bind_lkey;
	/* The SGEs, or with IB_SEND_INLINE @length bytes of data. */
	struct srdma_sge sge[];
};

struct srdma_recv_wqe {
	u64 wr_id;
	u32 length;
	u32 num_sge;
	struct srdma_sge sge[];
};

struct srdma_ring {
	void *buf;
	u32 slot_size;
	u32 mask;			/* slots - 1, a power of two */
	u32 max_wr;			/* usable slots, as created */
	u32 max_sge;
	u32 prod;			/* free-running: posted */
	u32 cons;			/* free-running: retired */
};

/*
 * A shared receive queue. QPs created with it take their receives from it,
 * one at a time, when a message needs one (srdma_srq_take()): the receive
 * is copied into the QP's own one-slot RQ, and completes, or is flushed,
 * through that QP like any other.
 */
struct srdma_srq {
	struct ib_srq ibsrq;
	struct srdma_dev *sdev;
	/*
	 * The consumer side: rq's indices, limit and error. QPs on any CPU
	 * take receives under it from softirq or process context, inside
	 * their QP lock; post_srq_recv, modify_srq and query_srq take it in
	 * any context, also with IRQs off: irqsave. Nothing is taken inside.
	 */
	spinlock_t lock;
	/*
	 * Kernel SRQs: the receives, rq.prod posted, rq.cons taken. User
	 * SRQs: no buffer; rq.cons is how far the kernel took from urq, and
	 * rq.max_wr and rq.max_sge its geometry.
	 */
	struct srdma_ring rq;
	struct srdma_uring urq;		/* user SRQs: the mapped ring */
	u32 limit;			/* armed srq_limit, 0: not armed */
	bool error;			/* urq held garbage: takes nothing */
	/*
	 * XRC SRQs: found by number (srq_num, in sdev->xsrq_xa) by packets
	 * for any XRC target QP of the domain, each lookup counted in ref
	 * (+ 1 while the SRQ exists); destroy_srq waits for released.
	 */
	refcount_t ref;
	struct completion released;
	/*
	 * Never reused, unlike the number: what an XRC target QP holding one
	 * of its receives remembers of it (xrc_rq_serial).
	 */
	u64 serial;
};

/*
 * A READ request accepted by the responder, answered by a work item; or
 * an atomic request carried out, whose ATOMIC ACKNOWLEDGE waits behind
 * READ responses. In the history, atomics are the replay cache.
 */
struct srdma_read_job {
	u64 va;
	u32 rkey;
	u32 len;			/* atomics: 8 */
	u32 psn;			/* PSN of the first response */
	u32 mtu;			/* path MTU when it was accepted */
	u64 serial;			/* the MR checked then; 0: no payload */
	u64 orig;			/* atomics: the value found */
	/* XRC target QPs: the PD of the XRC SRQ it named, compared only */
	struct ib_pd *pd;
	u8 atomic_op;			/* SRDMA_OP_COMPARE_SWAP, _FETCH_ADD,
					 * _ATOMIC_WRITE; 0 for a READ
					 */
	bool dup;			/* asked again: see srdma_read_refused() */
};

/* The two atomic work requests. */
static inline bool srdma_wr_is_atomic(u32 opcode)
{
	return opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * One request packet that the responder holds, as it holds a READ, until
 * its response: an atomic (answered by an ATOMIC ACKNOWLEDGE) or an
 * ATOMIC WRITE (by a READ response of no data, IBTA 1.5).
 */
static inline bool srdma_wr_is_one_req(u32 opcode)
{
	return srdma_wr_is_atomic(opcode) || opcode == SRDMA_WR_ATOMIC_WRITE;
}

/*
 * Work requests that wait for a response (READ responses, an ATOMIC
 * ACKNOWLEDGE, the READ response of an ATOMIC WRITE) and count against
 * the initiator depth (max_rd_atomic).
 */
static inline bool srdma_wr_is_rd_atomic(u32 opcode)
{
	return opcode == IB_WR_RDMA_READ || srdma_wr_is_one_req(opcode);
}

/* An ACK or NAK a responder gave a request placed directly. */
struct srdma_direct_ack {
	bool valid;
	u8 syndrome;
	u32 psn;
	u32 msn;
};

struct srdma_qp {
	struct ib_qp ibqp;
	struct srdma_dev *sdev;
	refcount_t ref;			/* lookups, timers, work + 1 for life */
	struct completion released;	/* ref reached zero */

	/*
	 * Guards the QP state, attributes, both rings, the requester and
	 * responder state and the read job queue. Taken in process context
	 * (verbs) and softirq (receive, timers) with BHs disabled. CQ locks
	 * nest inside it.
	 */
	spinlock_t lock;
	enum ib_qp_state state;
	struct ib_qp_attr attr;		/* as last set by modify_qp */
	u32 mtu;			/* path MTU in bytes */
	bool is_user;
	bool sig_all;			/* IB_SIGNAL_ALL_WR */
	u32 max_inline;			/* max_inline_data, fixed at creation */
	/*
	 * Never reused, unlike the QPN: what a type 2 memory window
	 * remembers of the QP it was bound through.
	 */
	u64 uid;

	/*
	 * Path, set at RTR: written under both the QP lock and dst_lock,
	 * read under either. Packets go out under the QP lock only.
	 */
	struct srdma_av av;
	spinlock_t dst_lock;		/* guards dst and what follows */
	struct dst_entry *dst;		/* counted, re-looked up if obsolete */
	u32 dst_cookie;
	/*
	 * The route's device takes page fragments (scatter-gather, or the
	 * loopback): written with dst, read without the lock as a hint.
	 */
	bool dst_frags;
	bool dst_local;			/* the route ends on this host */
	__be16 sport;
	/*
	 * A local delivery batch (srdma_net.c) being filled: only while a
	 * run that set batching holds the QP lock, never beyond it.
	 */
	struct sk_buff *batch;
	bool batching;
	/*
	 * A train of wire packets (srdma_net.c): linked by ->next from
	 * train to train_tail, in PSN order, sent as one GSO packet. Only
	 * while a run that set training holds the QP lock, as for batch.
	 */
	struct sk_buff *train;
	struct sk_buff *train_tail;
	u32 train_n;			/* packets in the train */
	u32 train_len;			/* their bytes after the UDP header */
	bool training;
	/*
	 * When (jiffies) a request last arrived for this QP: a QP whose
	 * peer sends to it too is in a ping-pong, and local delivery stays
	 * on its CPU (srdma_net.c). Written in receive, read as a hint.
	 */
	unsigned long rx_req_at;

	/*
	 * The kernel's rings. For a user QP they hold what was pulled, and
	 * validated, from the mapped rings usq and urq, slot for slot.
	 */
	struct srdma_ring sq;
	struct srdma_ring rq;
	struct srdma_uring usq;
	struct srdma_uring urq;

	/* Requester */
	u32 sq_next;			/* next SQ index to (re)transmit */
	u32 sq_next_off;		/* byte offset in it */
	/* SQ_DRAINED went out since the QP last entered SQD. */
	bool sqd_told;
	u32 next_psn;			/* PSN of the next new packet */
	u32 una_psn;			/* oldest unacknowledged PSN */
	/*
	 * Direct local placement (srdma_recv.c): allowed during this run
	 * (a doorbell's), and the answer of the request so placed, as the
	 * responder would have sent it, for the completer after the run.
	 */
	bool direct_run;
	bool direct_placed;		/* the packet just made was placed */
	struct srdma_direct_ack direct_ack;
	/* The queue place of this QP's last packet for local delivery. */
	unsigned long loop_seq;
	u32 resend_psn;			/* next PSN to resend, while rewound */
	u32 rd_outstanding;		/* READs sent and not complete */
	u32 rd_reqs;			/* READ requests (chunks) unanswered */
	u32 pkts_since_ackreq;
	u32 rd_gap_psn;			/* READ gap already asked again for */
	u8 retry_left;
	u8 rnr_left;
	bool rnr_wait;			/* waiting out an RNR NAK */
	/*
	 * End-to-end credits (IBTA 9.7.7.2), RC: ssn numbers the messages
	 * started as the responder's MSN counts them. While the peer counts
	 * its receives (credits_on), no message that takes one goes beyond
	 * message lsn, which its ACKs allowed, unless no answer is due
	 * (srdma_req_credit_ok()).
	 */
	bool credits_on;
	bool credit_wait;		/* held for credits since the last start */
	u32 ssn;
	u32 lsn;
	/* Last PSN of the last packet sent that asked for an answer. */
	u32 ackreq_psn;
	bool sq_error;			/* a WQE failed, flush the rest */
	struct timer_list retrans_timer;
	/*
	 * Pacing (srdma_pace_hold()): the earliest time the next packet
	 * may leave, and the timer that runs the requester then. The same
	 * timer ends an RNR wait, at rnr_until (srdma_req_rnr()).
	 */
	ktime_t pace_next;
	ktime_t rnr_until;
	struct hrtimer pace_timer;
	/* RTT estimate (RFC 6298 style), one sample in flight at a time. */
	u32 sent_psn;			/* one past the highest PSN sent */
	u32 rtt_psn;			/* PSN being timed */
	ktime_t rtt_start;
	bool rtt_pending;
	u32 srtt_us;			/* 0: no sample yet */
	u32 rttvar_us;
	/*
	 * Delay signal for the congestion window (srdma_cwnd_ack()): the
	 * latest sample and the least of the current and the last epoch of
	 * SRDMA_MIN_RTT_EPOCH samples (srdma_min_rtt()), the path's RTT
	 * without a queue.
	 */
	u32 last_rtt_us;
	u32 epoch_min_rtt_us;		/* 0: no sample yet */
	u32 prev_min_rtt_us;		/* 0: no epoch ended yet */
	u32 epoch_samples;
	u8 rto_backoff;			/* early retransmissions since progress */
	bool tlp_armed;			/* the timer is a tail-loss probe */
	bool tlp_sent;			/* probe sent since the last progress */
	bool una_probe;			/* una_probe_psn resent on a timeout */
	u32 una_probe_psn;
	/*
	 * Congestion window (AIMD), in SRDMA_CWND_UNITs: halved once per
	 * window on a loss (srdma_cwnd_pkts() gives it in packets).
	 */
	u32 cwnd;			/* units allowed in flight */
	u32 cwnd_acc;			/* units acked towards cwnd + 1 */
	u32 recover_psn;		/* next_psn at the last halving */
	bool cwnd_cut;			/* recover_psn is valid */
	unsigned long last_progress;	/* jiffies of the last ACK progress */

	/* Responder */
	u32 epsn;			/* expected PSN */
	/*
	 * While a request is placed directly, where the responder's ACK or
	 * NAK goes instead of the wire: the requester's direct_ack. Set and
	 * cleared under this QP's lock, by the requester holding its own.
	 */
	struct srdma_direct_ack *direct_sink;
	u32 msn;
	bool nak_sent;			/* seq NAK sent for the current gap */
	u32 nak_hi_psn;			/* highest PSN seen beyond the gap */
	u32 rd_end_psn;			/* last PSN of the latest READ/atomic */
	u32 resp_opcode;		/* last opcode of the message in progress */
	bool recv_active;		/* a SEND is being placed */
	u32 recv_off;
	u64 write_va;			/* WRITE in progress */
	u64 write_mr_serial;		/* the MR its FIRST packet checked */
	u32 write_rkey;
	u32 write_left;
	u32 write_len;
	bool uc_dropping;		/* UC: the message in progress is dropped */
	/*
	 * XRC target QPs. A request names the XRC SRQ it is for in its
	 * XRCETH: the SRQ gives its receives, its CQ and, for WRITE, READ
	 * and atomics too, the PD memory is checked against. The SRQ is
	 * looked up (and counted) for each packet and let go after it, so
	 * no QP keeps an SRQ from being destroyed; between packets only its
	 * number stays: of the message in progress (xrc_srqn) and of the
	 * receive taken and held in the one-slot RQ (xrc_rq_srqn, 0: none).
	 * xrc_pd is the PD of the packet being handled, or of the READ whose
	 * response the read work builds: only ever compared, never followed.
	 */
	struct srdma_srq *xrc_srq;	/* while a packet is handled */
	u32 xrc_srqn;
	u32 xrc_rq_srqn;
	u64 xrc_rq_serial;		/* the SRQ's serial, with xrc_rq_srqn */
	struct ib_pd *xrc_pd;
	struct srdma_read_job *rd_jobs;	/* ring: 2 * max_dest_rd_atomic + 1, pow2 */
	u32 rd_mask;
	/*
	 * The READs accepted lately (twice the queue), kept after they are
	 * answered: a READ behind the expected PSN is answered again only if
	 * it asks for part of one of these.
	 */
	struct srdma_read_job *rd_hist;	/* in the rd_jobs allocation */
	u32 rd_hist_mask;
	u32 rd_hist_next;
	u32 rd_prod;
	u32 rd_cons;
	u32 rd_gen;			/* bumped whenever the queue is reset */
	/*
	 * Where the read work stopped for on-demand pages a fault brings in
	 * (byte rd_fault_off of the READ at rd_cons): it goes on there when
	 * the fault is done, after rd_fault_tries faults there at most.
	 * Valid while rd_fault_at, which srdma_rd_queue_pop() and
	 * srdma_rd_queue_reset(), the only two that move rd_cons, clear.
	 */
	u32 rd_fault_off;
	u8 rd_fault_tries;
	bool rd_fault_at;
	/*
	 * Where the read work stopped at the end of its budget (byte
	 * rd_next_off of the READ at rd_cons), to go on there in its next
	 * run. Valid while rd_next_at, cleared with rd_fault_at.
	 */
	bool rd_next_at;
	u32 rd_next_off;
	/*
	 * The read work's own (it never runs twice at once): whether its
	 * last run queued it again at once (rd_busy), since when, in
	 * local_clock() ns, it has sent without a rest (rd_busy_since),
	 * and when its last run ended with nothing left (rd_idle_at).
	 */
	bool rd_busy;
	u64 rd_busy_since;
	u64 rd_idle_at;
	/*
	 * An ACK waits for the READ responses queued before it: sent by
	 * the read work once they are out (srdma_send_ack_ok()), for the
	 * PSN and with the MSN it had when it was due.
	 */
	bool ack_deferred;
	u32 ack_deferred_psn;
	u32 ack_deferred_msn;
	struct work_struct read_work;
	/*
	 * The CPU that runs the QP's send_work, and whose transmit queue
	 * its packets take where XPS maps CPUs to queues; set
	 * when the QP gets its number, spread over the CPUs by it. A QP's
	 * packets must reach the peer in order, and two CPUs sending them
	 * break that: a veth hands each packet to the backlog of the CPU that
	 * sent it, and two CPUs' backlogs drain in either order (on a veth
	 * pair, 64 KiB perftest streams drew about a thousand sequence NAKs
	 * in 2,000 messages); a multi-queue NIC drains its queues in
	 * either order too. A CPU gone offline still runs the work (the
	 * workqueue's unbound fallback). Never an isolated CPU.
	 */
	unsigned int tx_cpu;

	/*
	 * Runs the requester: what one UD run left, and what was posted
	 * with IRQs off (srdma_qp_lock_post()).
	 */
	struct work_struct send_work;
	/*
	 * On-demand paging (srdma_odp.c): the fault of the pages the
	 * requester missed, then its kick. Queued with a reference on the
	 * QP and one on odp_mr; the fields are under the QP lock.
	 */
	struct work_struct odp_work;
	struct srdma_mr *odp_mr;
	u64 odp_iova;
	u32 odp_len;
	u32 odp_epoch_queued;		/* odp_epoch when odp_work was queued */
	/*
	 * The last fault for each role of this QP that failed, under the
	 * QP lock: the next miss of that role in those bytes of that
	 * registration is an access error, not a fault to retry, reported
	 * once (srdma_odp_fault_later()). Kept on the QP, not the MR, so
	 * that no other QP's traffic reports or hides it, and by role, so
	 * that the requester's and the responder's do not either.
	 * odp_epoch counts resets: a fault queued before one records
	 * nothing. A failure not reported within SRDMA_ODP_FAIL_TTL is
	 * forgotten.
	 */
	struct srdma_odp_fail odp_fail[SRDMA_ODP_ROLES];
	u32 odp_epoch;
	enum srdma_odp_kick odp_kick;
	bool odp_queued;
	/*
	 * Faults queued or running for the responder, under the QP lock:
	 * odp_rsp_queued while one of this life (odp_epoch) is, which
	 * queues no other until it is done or the QP is reset;
	 * odp_rsp_faults counts those of every life (a reset does not wait
	 * for one that hangs), at most SRDMA_ODP_QP_FAULTS.
	 */
	bool odp_rsp_queued;
	u8 odp_rsp_faults;
	/* GSI: on srdma_gsi_list (RCU readers; srdma_gsi_mutex writers). */
	struct list_head gsi_node;
	/* UD: its srdma_mca attachments, under srdma_mcast_mutex. */
	struct list_head mcast_list;
};

/* The QP states in which each part of the data path works. */

/* The requester sends: RTS, and SQD to finish what it started. */
static inline bool srdma_qp_sq_running(const struct srdma_qp *qp)
{
	return qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD;
}

/* The completer takes ACKs and READ responses: RTS, SQD and SQE. */
static inline bool srdma_qp_comp_running(const struct srdma_qp *qp)
{
	return qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD ||
	       qp->state == IB_QPS_SQE;
}

/* The responder takes requests: RTR, RTS, SQD and SQE. */
static inline bool srdma_qp_rq_running(const struct srdma_qp *qp)
{
	return qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS ||
	       qp->state == IB_QPS_SQD || qp->state == IB_QPS_SQE;
}

/* post_send takes work requests from RTS on (ERR flushes them). */
static inline bool srdma_qp_sq_postable(const struct srdma_qp *qp)
{
	return qp->state != IB_QPS_RESET && qp->state != IB_QPS_INIT &&
	       qp->state != IB_QPS_RTR;
}

/* post_recv takes work requests in every state but RESET. */
static inline bool srdma_qp_rq_postable(const struct srdma_qp *qp)
{
	return qp->state != IB_QPS_RESET;
}

static inline struct srdma_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct srdma_dev, ibdev);
}

static inline struct srdma_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct srdma_pd, ibpd);
}

static inline struct srdma_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct srdma_mw, ibmw);
}

static inline struct srdma_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct srdma_mr, ibmr);
}

/*
 * May packets carry @mr's pages as fragments (srdma_mr_attach())? Only a
 * user MR's pinned pages: not kernel memory (DMA and fast-registration
 * MRs, which may be slab memory), nor on-demand or dma-buf pages, which
 * may go while a packet still holds them.
 */
static inline bool srdma_mr_attachable(const struct srdma_mr *mr)
{
	return mr->type == SRDMA_MR_USER && !mr->odp && !mr->dmabuf;
}

static inline struct srdma_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct srdma_cq, ibcq);
}

static inline struct srdma_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct srdma_qp, ibqp);
}

static inline struct srdma_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct srdma_ah, ibah);
}

static inline struct srdma_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct srdma_srq, ibsrq);
}

static inline bool srdma_qp_is_xrc_tgt(const struct srdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

/* Either end of XRC: its packets carry XRC opcodes. */
static inline bool srdma_qp_is_xrc(const struct srdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_XRC_INI ||
	       qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

/*
 * The SRQ a QP takes its receives from, or NULL if it has its own RQ. An
 * XRC target QP's is the SRQ of the packet being handled, if any.
 */
static inline struct srdma_srq *srdma_qp_srq(const struct srdma_qp *qp)
{
	if (srdma_qp_is_xrc_tgt(qp))
		return qp->xrc_srq;
	return qp->ibqp.srq ? to_ssrq(qp->ibqp.srq) : NULL;
}

/*
 * The PD the QP's memory accesses are checked against: an XRC target
 * QP's is its current XRC SRQ's (NULL, which no MR has, if none).
 */
static inline struct ib_pd *srdma_qp_pd(const struct srdma_qp *qp)
{
	return srdma_qp_is_xrc_tgt(qp) ? qp->xrc_pd : qp->ibqp.pd;
}

/*
 * The QP lock for post_send and post_recv of a kernel QP. Kernel consumers
 * may post with hard IRQs off: the MAD layer and the IB CM do, under their
 * spin_lock_irqsave(). No softirq can run on this CPU then, so the lock is
 * taken without touching BHs (enabling BHs with IRQs off is a bug), and
 * the caller must not transmit (the network stack needs IRQs on): it
 * leaves that to the QP's send_work. True if IRQs are off.
 */
static inline bool srdma_qp_lock_post(struct srdma_qp *qp)
	__acquires(&qp->lock)
{
	bool irqs_off = irqs_disabled();

	if (irqs_off)
		spin_lock(&qp->lock);
	else
		spin_lock_bh(&qp->lock);
	return irqs_off;
}

static inline void srdma_qp_unlock_post(struct srdma_qp *qp, bool irqs_off)
	__releases(&qp->lock)
{
	if (irqs_off)
		spin_unlock(&qp->lock);
	else
		spin_unlock_bh(&qp->lock);
}

/*
 * Is @dev @ndev, or a VLAN upper of it (stacked ones too: 802.1ad over
 * 802.1Q)? @ndev is never a VLAN itself (srdma_link_check()).
 */
static inline bool srdma_ndev_or_vlan_over(struct net_device *dev,
					   const struct net_device *ndev)
{
	return dev == ndev || (is_vlan_dev(dev) && vlan_dev_real_dev(dev) == ndev);
}

static inline bool srdma_qp_is_uc(const struct srdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UC;
}

/* The inline data of send WQE @wqe, or NULL if it has SGEs. */
static inline const u8 *srdma_wqe_inline(const struct srdma_send_wqe *wqe)
{
	return wqe->send_flags & IB_SEND_INLINE ? (const u8 *)wqe->sge : NULL;
}

/* UD and the GSI QP, which is a UD QP numbered 1 with Q_Key 0x80010000. */
static inline bool srdma_qp_is_ud(const struct srdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD ||
	       qp->ibqp.qp_type == IB_QPT_GSI;
}

/*
 * The port's active MTU in bytes, as query_port reports it (the largest
 * IB MTU the netdev's MTU holds with the RoCEv2 headers): 0 if none does.
 * The largest UD message, both ways.
 */
static inline u32 srdma_active_mtu(struct srdma_dev *sdev)
{
	enum ib_mtu m = iboe_get_mtu(READ_ONCE(sdev->ndev->mtu));

	return m ? ib_mtu_enum_to_int(m) : 0;
}

static inline void srdma_count(struct srdma_dev *sdev, enum srdma_counter c)
{
	atomic64_inc(&sdev->counters[c]);
}

static inline void srdma_count_add(struct srdma_dev *sdev,
				   enum srdma_counter c, u32 n)
{
	atomic64_add(n, &sdev->counters[c]);
}

static inline void *srdma_ring_slot(struct srdma_ring *r, u32 idx)
{
	return r->buf + (size_t)(idx & r->mask) * r->slot_size;
}

/* Tell user space how far the kernel consumed a mapped SQ or RQ. */
static inline void srdma_uring_consumed(struct srdma_uring *ur, u32 cons)
{
	if (ur->hdr)	/* the provider reuses slots after seeing it */
		smp_store_release(&ur->hdr->cons, cons);
}

static inline struct srdma_ucontext *to_suc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct srdma_ucontext, ibuc);
}

#define srdma_err(sdev, fmt, ...) \
	ibdev_err_ratelimited(&(sdev)->ibdev, fmt, ##__VA_ARGS__)
#define srdma_warn(sdev, fmt, ...) \
	ibdev_warn_ratelimited(&(sdev)->ibdev, fmt, ##__VA_ARGS__)
/*
 * Debug messages are rate-limited too: many report what a user or a peer
 * did, and enabling them must not let either flood the log.
 */
#define srdma_dbg(sdev, fmt, ...) \
	ibdev_dbg_ratelimited(&(sdev)->ibdev, fmt, ##__VA_ARGS__)
#define srdma_dbg_qp(qp, fmt, ...) do {					\
	const struct srdma_qp *__q = (qp);				\
									\
	ibdev_dbg_ratelimited(&__q->sdev->ibdev, "qp %u: " fmt,	\
			      __q->ibqp.qp_num, ##__VA_ARGS__);		\
} while (0)
#define srdma_err_qp(qp, fmt, ...) do {					\
	const struct srdma_qp *__q = (qp);				\
									\
	ibdev_err_ratelimited(&__q->sdev->ibdev, "qp %u: " fmt,	\
			      __q->ibqp.qp_num, ##__VA_ARGS__);		\
} while (0)
/* A CQ is named by its restrack id (the cqn of rdma resource), once created. */
#define srdma_dbg_cq(cq, fmt, ...) do {					\
	const struct srdma_cq *__c = (cq);				\
									\
	ibdev_dbg_ratelimited(__c->ibcq.device, "cq %u: " fmt,		\
			      __c->ibcq.res.id, ##__VA_ARGS__);		\
} while (0)
#define srdma_err_cq(cq, fmt, ...) do {					\
	const struct srdma_cq *__c = (cq);				\
									\
	ibdev_err_ratelimited(__c->ibcq.device, "cq %u: " fmt,		\
			      __c->ibcq.res.id, ##__VA_ARGS__);		\
} while (0)
/* An MR is named by its key (lkey and rkey are the same). */
#define srdma_dbg_mr(mr, fmt, ...) do {					\
	const struct srdma_mr *__m = (mr);				\
									\
	ibdev_dbg_ratelimited(__m->ibmr.device, "mr %#x: " fmt,	\
			      __m->ibmr.lkey, ##__VA_ARGS__);		\
} while (0)
#define srdma_err_mr(mr, fmt, ...) do {					\
	const struct srdma_mr *__m = (mr);				\
									\
	ibdev_err_ratelimited(__m->ibmr.device, "mr %#x: " fmt,	\
			      __m->ibmr.lkey, ##__VA_ARGS__);		\
} while (0)

/**
 * srdma_res_get() - Count one more object of a kind against the limit.
 * @sdev: the device
 * @res: the kind of object
 *
 * Context: Any context.
 * Return: 0, or -ENOMEM if the device already has its limit of @res; that
 * is logged at warning level (rate-limited), since the administrator set
 * the limit (module parameters max_pd, max_cq, max_qp, max_mr, max_ah,
 * max_srq, max_mw).
 */
static inline int srdma_res_get(struct srdma_dev *sdev, enum srdma_res res)
{
	static const char * const name[SRDMA_NUM_RES] = {
		[SRDMA_RES_PD] = "PD",
		[SRDMA_RES_CQ] = "CQ",
		[SRDMA_RES_QP] = "QP",
		[SRDMA_RES_MR] = "MR",
		[SRDMA_RES_AH] = "AH",
		[SRDMA_RES_SRQ] = "SRQ",
		[SRDMA_RES_MW] = "MW",
		[SRDMA_RES_DM] = "DM",
	};

	if (atomic_inc_return(&sdev->res_used[res]) <= sdev->res_max[res])
		return 0;
	atomic_dec(&sdev->res_used[res]);
	srdma_warn(sdev, "%s limit of %u reached\n", name[res],
		   sdev->res_max[res]);
	return -ENOMEM;
}

/**
 * srdma_res_put() - Uncount an object counted by srdma_res_get().
 * @sdev: the device
 * @res: the kind of object
 *
 * Context: Any context.
 */
static inline void srdma_res_put(struct srdma_dev *sdev, enum srdma_res res)
{
	atomic_dec(&sdev->res_used[res]);
}

/* srdma_srq.c */
int srdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int srdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int srdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int srdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int srdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
int srdma_srq_take(struct srdma_srq *srq, struct srdma_recv_wqe *wqe);
struct srdma_srq *srdma_xsrq_get(struct srdma_dev *sdev, u32 srqn,
				 const struct ib_xrcd *xrcd);
struct srdma_srq *srdma_qp_held_srq(struct srdma_qp *qp);
void srdma_srq_put(struct srdma_srq *srq);
int srdma_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int srdma_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);

/* srdma_net.c */
int srdma_net_init(void);
void srdma_net_exit(void);
struct srdma_sockset *srdma_sockset_get(struct net *net);
void srdma_sockset_put(struct srdma_sockset *ss);

int srdma_xmit(struct srdma_qp *qp, struct sk_buff *skb);
int srdma_xmit_ud(struct srdma_qp *qp, const struct srdma_av *av,
		  struct sk_buff *skb);
struct sk_buff *srdma_alloc_pkt(struct srdma_qp *qp, struct srdma_pkt *pkt,
				u8 **payload);
int srdma_pkt_seal(struct sk_buff *skb, struct srdma_pkt *pkt);
void srdma_qp_note_dst(struct srdma_qp *qp);
int srdma_route_lookup(struct srdma_dev *sdev, const struct srdma_av *av,
		       struct dst_entry **dstp, u32 *cookie);
void srdma_loop_init(void);
void srdma_loop_exit(void);
bool srdma_batch_begin(struct srdma_qp *qp);
int srdma_batch_end(struct srdma_qp *qp, bool outer);
int srdma_batch_flush(struct srdma_qp *qp);
u8 *srdma_batch_add(struct srdma_qp *qp, struct srdma_pkt *pkt, u32 copied,
		    u32 *ent_len);
void srdma_batch_commit(struct srdma_qp *qp, u32 ent_len);

/*
 * An entry of a local delivery batch (srdma_net.c), ahead of its packet's
 * transport headers. Never on a wire.
 */
struct srdma_batch_ent {
	u32 len;		/* as the UDP payload's: headers to ICRC */
	u32 copied;		/* the payload follows the headers, here */
};

/* What a local delivery queue entry carries in its skb's cb. */
struct srdma_loop_cb {
	u64 net_cookie;			/* the sender's network namespace */
	unsigned long seq;		/* its place in the queue, from 1 */
	u16 nsub;			/* a batch of this many packets, or 0 */
	u16 used;			/* bytes of the batch's entries */
};

static inline struct srdma_loop_cb *srdma_loop_cb(struct sk_buff *skb)
{
	return (struct srdma_loop_cb *)skb->cb;
}

extern struct workqueue_struct *srdma_wq;
extern struct workqueue_struct *srdma_tx_wq;

/* The QP's requester work, on its own CPU (qp->tx_cpu) */
static inline void srdma_queue_send_work(struct srdma_qp *qp)
{
	queue_work_on(qp->tx_cpu, srdma_tx_wq, &qp->send_work);
}

/*
 * The QP's READ responder work: on the same CPU and high-priority queue,
 * the sender of the READ responses as send_work is of the requests.
 */
static inline void srdma_queue_read_work(struct srdma_qp *qp)
{
	queue_work_on(qp->tx_cpu, srdma_tx_wq, &qp->read_work);
}

/* srdma_recv.c */
int srdma_udp_encap_recv(struct sock *sk, struct sk_buff *skb);
void srdma_rcv_local(struct sk_buff *skb);
bool srdma_loop_delivered(const struct srdma_qp *qp);
bool srdma_route_local(struct srdma_qp *qp);
bool srdma_loop_pingpong(const struct srdma_qp *qp);
int srdma_direct_init(void);
void srdma_direct_exit(void);
int srdma_rcv_direct(struct srdma_qp *qp, struct srdma_pkt *pkt,
		     const struct srdma_payload_src *src);
void srdma_rcv_direct_ack(struct srdma_qp *qp);

/* A request arrived for @qp: see srdma_qp.rx_req_at. */
static inline void srdma_qp_note_rx_req(struct srdma_qp *qp)
{
	unsigned long now = jiffies;

	if (READ_ONCE(qp->rx_req_at) != now)
		WRITE_ONCE(qp->rx_req_at, now);
}

/* srdma_mcast.c */
void srdma_mcast_init(void);
int srdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid);
int srdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid);
void srdma_mcast_qp_destroy(struct srdma_qp *qp);
int srdma_mcast_get(const struct net_device *ndev, u64 net_cookie,
		    const union ib_gid *mgid, struct srdma_qp **qps);

/* srdma_ah.c */
int srdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int srdma_destroy_ah(struct ib_ah *ibah, u32 flags);
int srdma_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int srdma_av_from_attr(struct srdma_dev *sdev,
		       const struct rdma_ah_attr *attr, struct srdma_av *av);
int srdma_ah_lookup(struct srdma_qp *qp, u32 ah_num, struct srdma_av *av);

/* srdma_mr.c */
int srdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int srdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *srdma_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *srdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
int srdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *srdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata);
struct srdma_mr *srdma_mr_alloc(struct ib_pd *ibpd, int access);
int srdma_umr_check_range(struct srdma_dev *sdev, u64 start, u64 length,
			  u64 iova);
void srdma_mr_put_pages(struct srdma_mr *mr);
int srdma_mr_add(struct srdma_dev *sdev, struct srdma_mr *mr);
u64 srdma_mr_new_serial(void);
struct srdma_mr *srdma_mr_get(struct srdma_dev *sdev, u32 key, bool remote);
struct srdma_mr *srdma_mr_get_fast(struct srdma_dev *sdev, u32 key);
int srdma_mr_range_ok(struct srdma_mr *mr, u64 iova, u64 len, int access);
void srdma_mr_put(struct srdma_mr *mr);
int srdma_mr_check(struct srdma_mr *mr, struct srdma_qp *qp, u32 key,
		   u64 iova, u32 len, int access, u64 *serial);
int srdma_mr_copy(struct srdma_mr *mr, u64 serial, u64 iova, void *buf,
		  u32 len, bool to_mr);
int srdma_mr_copy_skb(struct srdma_mr *mr, u64 serial, u64 iova,
		      const struct sk_buff *skb, int off, u32 len);
int srdma_mr_attach(struct srdma_mr *mr, u64 serial, u64 iova,
		    struct sk_buff *skb, u32 len);
int srdma_mr_atomic(struct srdma_mr *mr, u64 serial, u64 iova, u8 op,
		    u64 swap_add, u64 compare, u64 *orig);
int srdma_sges_from_wr(struct srdma_sge *dst, const struct ib_sge *src,
		       int num_sge, u32 *total);
int srdma_sge_copy(struct srdma_qp *qp, struct srdma_sge *sge, u32 num_sge,
		   u32 off, void *buf, struct sk_buff *skb, int skb_off,
		   u32 len, bool to_mr, enum srdma_odp_kick kick);

/* srdma_dm.c */
struct ib_dm *srdma_alloc_dm(struct ib_device *ibdev, struct ib_ucontext *uctx,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs);
int srdma_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
struct ib_mr *srdma_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs);

/* srdma_dmabuf.c */
struct ib_mr *srdma_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd,
				       int access,
				       struct srdma_reg_dmabuf_attrs *attrs);
void srdma_dmabuf_release(struct srdma_mr *mr);

/* srdma_odp.c */
int srdma_odp_reg(struct srdma_mr *mr, u64 start, u64 length, int access);
void srdma_odp_release(struct srdma_mr *mr);
int srdma_odp_fault(struct srdma_mr *mr, u64 iova, u64 len, bool fault);
int srdma_odp_fault_later(struct srdma_qp *qp, struct srdma_mr *mr,
			  u64 iova, u32 len, enum srdma_odp_kick kick);
void srdma_odp_qp_reset(struct srdma_qp *qp);
int srdma_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);
void srdma_odp_query(struct ib_device_attr *attr);
void srdma_odp_qp_work(struct work_struct *work);

/* srdma_mw.c */
int srdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int srdma_dealloc_mw(struct ib_mw *ibmw);
int srdma_mw_bind(struct srdma_qp *qp, struct srdma_send_wqe *wqe);
int srdma_invalidate(struct srdma_qp *qp, u32 key, bool remote);

/* srdma_fr.c */
struct ib_mr *srdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int srdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int srdma_fr_check_wr(struct srdma_qp *qp, const struct ib_reg_wr *wr);
int srdma_fr_register(struct srdma_qp *qp, struct srdma_mr *mr, u32 key,
		      int access, u64 iova, u64 length);
int srdma_fr_invalidate(struct srdma_qp *qp, u32 key, bool remote);

/* srdma_copy.c */
DECLARE_STATIC_KEY_FALSE(srdma_copy_use_words);
void srdma_copy_init(void);
void srdma_copy_exit(void);
void srdma_copy_words(void *dst, const void *src, size_t len);
int __srdma_skb_copy_words(const struct sk_buff *skb, u32 off, void *to,
			   u32 len);

/*
 * skb_copy_bits() with the copy engine in use: @len bytes of @skb from
 * @off into @to, wherever they live. 0, or -EFAULT if @skb is too short.
 */
static inline int srdma_skb_copy(const struct sk_buff *skb, u32 off,
				 void *to, u32 len)
{
	if (static_branch_unlikely(&srdma_copy_use_words))
		return __srdma_skb_copy_words(skb, off, to, len);
	return skb_copy_bits(skb, off, to, len);
}

/*
 * memcpy() for payload bytes, or the 8-byte word loop where that is
 * faster (srdma_copy.c). Not for overlapping buffers.
 */
static inline void srdma_memcpy(void *dst, const void *src, size_t len)
{
	if (static_branch_unlikely(&srdma_copy_use_words))
		srdma_copy_words(dst, src, len);
	else
		memcpy(dst, src, len);
}

/* srdma_icrc.c */
void srdma_icrc_init(void);
void srdma_icrc_exit(void);
void srdma_icrc_generate(struct sk_buff *skb, bool ipv6);
bool srdma_icrc_check(struct sk_buff *skb, int payoff, u32 udp_paylen,
		      bool ipv6);

/* srdma_mmap.c */
int srdma_uring_create(struct ib_ucontext *uctx, struct srdma_uring *ur,
		       u32 slots, u32 slot_size, struct srdma_uqueue *uq);
void srdma_uring_destroy(struct srdma_uring *ur);
struct srdma_umap *srdma_umap_create_at(struct ib_ucontext *uctx, size_t len,
					u32 pgoff);
void srdma_umap_remove(struct srdma_umap *map);
struct page *srdma_umap_page(struct srdma_umap *map, unsigned long i);
int srdma_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void srdma_mmap_free(struct rdma_user_mmap_entry *rentry);
int srdma_uring_new(struct srdma_qp *qp, struct srdma_uring *ur,
		    struct srdma_ring *r, u32 *uprod);
int srdma_usges_read(struct srdma_qp *qp, struct srdma_uring *ur,
		     struct srdma_sge *dst,
		     const struct srdma_usge *src, u32 num_sge, u32 max_sge,
		     u32 *total);

/* srdma_cq.c */
int srdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct srdma_create_cq_attrs *attrs);
int srdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int srdma_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int srdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int srdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
void srdma_cq_post(struct srdma_cq *cq, const struct ib_wc *wc, bool solicited);

/* srdma_qp.c */
int srdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int srdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int srdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int srdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
struct srdma_qp *srdma_qp_get(u32 qpn);
bool srdma_dev_has_gid(struct srdma_dev *sdev, const union ib_gid *gid,
		       struct net_device *ndev);
struct srdma_qp *srdma_gsi_get(u64 net_cookie, const union ib_gid *dgid,
			       struct net_device *in);
void srdma_qp_put(struct srdma_qp *qp);
void srdma_qp_drop_routes(struct srdma_sockset *ss);
void srdma_qp_error(struct srdma_qp *qp);
void srdma_qp_error_event(struct srdma_qp *qp, enum ib_event_type type);
void srdma_qp_flush(struct srdma_qp *qp);
void srdma_qp_flush_sq(struct srdma_qp *qp);
void srdma_qp_to_sqe(struct srdma_qp *qp);
void srdma_qp_event(struct srdma_qp *qp, enum ib_event_type type);
bool srdma_sq_drained(struct srdma_qp *qp);
void srdma_sq_drained_event(struct srdma_qp *qp);

/* srdma_req.c */
int srdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
void srdma_req_run(struct srdma_qp *qp);
void srdma_req_kick(struct srdma_qp *qp);
void srdma_req_resend_now(struct srdma_qp *qp);
bool srdma_qp_off_tx_cpu(const struct srdma_qp *qp);
void srdma_req_run_pinned(struct srdma_qp *qp);
void srdma_send_work(struct work_struct *work);
void srdma_retrans_timer(struct timer_list *t);
enum hrtimer_restart srdma_pace_timer(struct hrtimer *t);
void srdma_req_complete(struct srdma_qp *qp, struct srdma_send_wqe *wqe,
			enum ib_wc_status status);
void srdma_req_acked(struct srdma_qp *qp, u32 una, bool retired);
void srdma_req_loss(struct srdma_qp *qp, u32 psn);
bool srdma_req_rnr(struct srdma_qp *qp, u32 psn, u8 timer);
void srdma_req_credits(struct srdma_qp *qp, u32 msn, u8 code);
struct sk_buff *srdma_data_pkt(struct srdma_qp *qp, struct srdma_pkt *pkt,
			       const struct srdma_payload_src *src);
int srdma_data_xmit(struct srdma_qp *qp, struct srdma_pkt *pkt,
		    const struct srdma_payload_src *src, bool alone);
int srdma_payload_fill(struct srdma_qp *qp,
		       const struct srdma_payload_src *src,
		       struct sk_buff *skb, u8 *buf, u32 len);
void srdma_req_init_window(struct srdma_qp *qp, u32 psn);
void srdma_req_forget_min_rtt(struct srdma_qp *qp);
int srdma_sq_pull(struct srdma_qp *qp);

/* srdma_resp.c */
int srdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
void srdma_resp_rcv(struct srdma_qp *qp, struct srdma_pkt *pkt,
		    struct sk_buff *skb, int payoff);
void srdma_rd_queue_reset(struct srdma_qp *qp);
u32 srdma_rd_queued(struct srdma_qp *qp);
u32 srdma_rd_queue_max(struct srdma_qp *qp);
void srdma_read_work(struct work_struct *work);
void srdma_read_kick(struct srdma_qp *qp);
int srdma_rq_pull(struct srdma_qp *qp);
void srdma_send_ack(struct srdma_qp *qp, u8 syndrome, u32 psn);
void srdma_ud_rcv(struct srdma_qp *qp, struct srdma_pkt *pkt,
		  struct sk_buff *skb, int payoff, bool ipv6);

/* srdma_comp.c */
void srdma_comp_rcv(struct srdma_qp *qp, struct srdma_pkt *pkt,
		    struct sk_buff *skb, int payoff);

/* srdma_main.c */
void srdma_dealloc_driver(struct ib_device *ibdev);
int srdma_enable_driver(struct ib_device *ibdev);

/* srdma_verbs.c */
void srdma_init_device(struct srdma_dev *sdev);
int srdma_register_device(struct srdma_dev *sdev, const char *name);
int srdma_udata_no_input(struct srdma_dev *sdev, struct ib_udata *udata,
			 const char *verb);
enum ib_port_state srdma_port_state(struct srdma_dev *sdev);

#endif /* SRDMA_H */
