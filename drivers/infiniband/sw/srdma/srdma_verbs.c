// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma verbs: the ib_device_ops glue between the RDMA core and srdma.
 */
#include <linux/module.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "srdma.h"

/* One P_Key, the default, in the one table entry. */
#define SRDMA_PKEY_TBL_LEN	1
/*
 * Local CA ACK delay as an exponent, 4.096 us * 2^15 = 134 ms: the time a
 * peer should allow this device to ACK, as rdma_rxe reports it too.
 */
#define SRDMA_LOCAL_ACK_DELAY	15

/*
 * Object limits per device, reported by query_device and enforced at
 * creation. Lower them to contain what one device can pin or allocate; a
 * value of 0 or above the built-in maximum means the built-in maximum.
 * Read when a device is created.
 */
static unsigned int max_pd = SRDMA_MAX_PD;
module_param(max_pd, uint, 0444);
MODULE_PARM_DESC(max_pd, "protection domains per device (default and max 4096)");
static unsigned int max_cq = SRDMA_MAX_CQ;
module_param(max_cq, uint, 0444);
MODULE_PARM_DESC(max_cq, "completion queues per device (default and max 8192)");
static unsigned int max_qp = SRDMA_MAX_QP;
module_param(max_qp, uint, 0444);
MODULE_PARM_DESC(max_qp, "queue pairs per device (default and max 4096)");
static unsigned int max_mr = SRDMA_MAX_MR;
module_param(max_mr, uint, 0444);
MODULE_PARM_DESC(max_mr, "memory regions per device (default and max 65536)");
static unsigned int max_ah = SRDMA_MAX_AH;
module_param(max_ah, uint, 0444);
MODULE_PARM_DESC(max_ah, "user address handles per device (default and max 65536)");
static unsigned int max_mw = SRDMA_MAX_MW;
module_param(max_mw, uint, 0444);
MODULE_PARM_DESC(max_mw, "memory windows per device (default and max 65536)");
static unsigned int max_srq = SRDMA_MAX_SRQ;
module_param(max_srq, uint, 0444);
MODULE_PARM_DESC(max_srq, "shared receive queues per device (default and max 4096)");

static u32 srdma_limit(unsigned int param, u32 hard)
{
	return param && param < hard ? param : hard;
}

/**
 * srdma_port_state() - The state of a device's port, from its netdev's.
 * @sdev: the device
 *
 * Context: Any context.
 * Return: IB_PORT_ACTIVE if the netdev is up with a carrier, else
 * IB_PORT_DOWN.
 */
enum ib_port_state srdma_port_state(struct srdma_dev *sdev)
{
	struct net_device *ndev = sdev->ndev;

	return netif_running(ndev) && netif_carrier_ok(ndev) ?
	       IB_PORT_ACTIVE : IB_PORT_DOWN;
}

static int srdma_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibdev);

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = SRDMA_FW_VER;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = SRDMA_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = SRDMA_VENDOR_ID;
	attr->vendor_part_id = 0;
	attr->hw_ver = 0;
	attr->max_qp = sdev->res_max[SRDMA_RES_QP];
	attr->max_qp_wr = SRDMA_MAX_QP_WR;
	/*
	 * Fast registration for kernel consumers: srdma_fr.c; memory
	 * windows for user space, type 1 and 2B: srdma_mw.c. ATOMIC WRITE
	 * for user QPs (srdma_resp_atomic_write()).
	 */
	attr->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_XRC |
				 SRDMA_DEVICE_ATOMIC_WRITE;
	attr->max_fast_reg_page_list_len = SRDMA_MAX_FAST_REG_PAGES;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->max_send_sge = SRDMA_MAX_SGE;
	attr->max_recv_sge = SRDMA_MAX_SGE;
	attr->max_sge_rd = SRDMA_MAX_SGE;
	attr->max_cq = sdev->res_max[SRDMA_RES_CQ];
	attr->max_cqe = SRDMA_MAX_CQE - 1;
	attr->max_mr = sdev->res_max[SRDMA_RES_MR];
	attr->max_mw = sdev->res_max[SRDMA_RES_MW];
	attr->max_pd = sdev->res_max[SRDMA_RES_PD];
	attr->max_ah = sdev->res_max[SRDMA_RES_AH];
	attr->max_srq = sdev->res_max[SRDMA_RES_SRQ];
	attr->max_srq_wr = SRDMA_MAX_QP_WR;
	attr->max_srq_sge = SRDMA_MAX_SGE;
	attr->max_qp_rd_atom = SRDMA_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = SRDMA_MAX_RD_ATOM;
	attr->max_res_rd_atom = SRDMA_MAX_RD_ATOM * attr->max_qp;
	/*
	 * Atomics are locked cmpxchg on the target's pinned page (see
	 * srdma_mr_atomic()): atomic with respect to every srdma device's
	 * atomics and to the CPUs' atomic instructions.
	 */
	attr->atomic_cap = IB_ATOMIC_GLOB;
	attr->max_pkeys = SRDMA_PKEY_TBL_LEN;
	attr->max_mcast_grp = SRDMA_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = SRDMA_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = SRDMA_MAX_MCAST_ATTACH;
	attr->local_ca_ack_delay = SRDMA_LOCAL_ACK_DELAY;
	attr->max_dm_size = SRDMA_MAX_DM_SIZE;
	/*
	 * Completion timestamps (user CQs, srdma_ucq_fill()): the device's
	 * clock is CLOCK_MONOTONIC, one tick a nanosecond (1 GHz, in kHz).
	 */
	attr->timestamp_mask = U64_MAX;
	attr->hca_core_clock = SRDMA_CORE_CLOCK_KHZ;
	srdma_odp_query(attr);
	return 0;
}

static int srdma_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct srdma_dev *sdev = to_sdev(ibdev);
	/* The core zeroed *attr. */
	attr->state = srdma_port_state(sdev);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
			   IB_PORT_PHYS_STATE_LINK_UP :
			   IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = iboe_get_mtu(READ_ONCE(sdev->ndev->mtu));
	attr->gid_tbl_len = SRDMA_GID_TBL_LEN;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = SRDMA_MAX_MSG_SIZE;
	attr->pkey_tbl_len = SRDMA_PKEY_TBL_LEN;
	attr->max_vl_num = 1;

	/* Fails while the netdev is going away: report a default then. */
	if (ib_get_eth_speed(ibdev, port, &attr->active_speed,
			     &attr->active_width)) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static int srdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (index >= SRDMA_PKEY_TBL_LEN)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int srdma_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr = {};
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;

	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	/*
	 * RoCEv2 only (no RoCEv1 GIDs), with the GSI QP that the MAD layer
	 * opens on QP1, so the IB CM and rdma_cm run over it.
	 */
	immutable->core_cap_flags = RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP |
				    RDMA_CORE_CAP_IB_MAD |
				    RDMA_CORE_CAP_IB_CM |
				    RDMA_CORE_CAP_AF_IB |
				    RDMA_CORE_CAP_ETH_AH;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer srdma_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static void srdma_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u", SRDMA_FW_MAJOR,
		 SRDMA_FW_MINOR, SRDMA_FW_SUBMINOR);
}

/* What every ucontext of srdma can do (srdma-abi.h). */
#define SRDMA_UCONTEXT_CAPS (SRDMA_CAP_MAPPED_RINGS | SRDMA_CAP_UD | \
			     SRDMA_CAP_SRQ | SRDMA_CAP_ATOMIC_WRITE | \
			     SRDMA_CAP_DM | SRDMA_CAP_XRC | \
			     SRDMA_CAP_CQ_TIMESTAMP | SRDMA_CAP_BIG_MW)

/*
 * The ABI version and capabilities alloc_ucontext returns, also in the
 * device's sysfs directory: a process that imports a context from another
 * one's command file (ibv_import_device()) has no alloc_ucontext
 * response, and its provider reads them there.
 */
static ssize_t abi_version_show(struct device *device,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", SRDMA_UVERBS_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static ssize_t caps_show(struct device *device, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%#llx\n", (u64)SRDMA_UCONTEXT_CAPS);
}
static DEVICE_ATTR_RO(caps);

static struct attribute *srdma_dev_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_caps.attr,
	NULL,
};

static const struct attribute_group srdma_dev_attr_group = {
	.attrs = srdma_dev_attrs,
};

/**
 * srdma_udata_no_input() - Refuse driver input srdma does not define.
 * @sdev: the device, for the message
 * @udata: the command's driver data; NULL for a kernel caller
 * @verb: the verb, for the message
 *
 * No srdma command takes input of its own. What a provider sends after
 * the core's command is accepted only if it is all zeros, so that a field
 * a later provider adds is refused by this kernel, never ignored.
 *
 * Context: Process context (reads user memory).
 * Return: 0, or -EINVAL.
 */
int srdma_udata_no_input(struct srdma_dev *sdev, struct ib_udata *udata,
			 const char *verb)
{
	if (!udata || !udata->inlen ||
	    ib_is_udata_cleared(udata, 0, udata->inlen))
		return 0;
	srdma_dbg(sdev, "%s: %zu bytes of unknown input\n", verb,
		  udata->inlen);
	return -EINVAL;
}

static int srdma_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibuc->device);
	struct srdma_alloc_ucontext_resp resp = {
		.abi_version = SRDMA_UVERBS_ABI_VERSION,
		.caps = SRDMA_UCONTEXT_CAPS,
	};
	int err;

	err = srdma_udata_no_input(sdev, udata, "alloc_ucontext");
	if (err)
		return err;
	if (udata->outlen) {
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			return err;
	}
	srdma_dbg(sdev, "ucontext opened by pid %d\n",
		  task_pid_nr(current));
	return 0;
}

/*
 * The core's QUERY_CONTEXT (what ibv_import_device() asks) needs the
 * driver to take part; srdma has nothing to add to the core's answer
 * (the provider reads abi_version and caps from sysfs).
 */
static int srdma_query_ucontext(struct ib_ucontext *ibuc,
				struct uverbs_attr_bundle *attrs)
{
	return 0;
}

static void srdma_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	srdma_dbg(to_sdev(ibuc->device), "ucontext closed\n");
}

/*
 * Called when the device goes away under an open ucontext (netdev removal,
 * `rdma link delete`, rmmod). The core then destroys every object of the
 * context, which removes the rings' mmap entries; there is nothing else to
 * release here. The core zaps only mappings made with rdma_user_mmap_io():
 * a process keeps the ring pages it mapped (remap_vmalloc_range() took a
 * reference on each) until it unmaps them, but the kernel no longer reads
 * or writes them.
 */
static void srdma_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static const struct rdma_stat_desc srdma_counter_desc[SRDMA_NUM_COUNTERS] = {
	[SRDMA_CNT_TX_PKTS].name = "tx_packets",
	[SRDMA_CNT_RX_PKTS].name = "rx_packets",
	[SRDMA_CNT_RX_BAD_HDR].name = "rx_bad_header",
	[SRDMA_CNT_RX_BAD_ICRC].name = "rx_bad_icrc",
	[SRDMA_CNT_RX_SOCK_DROPPED].name = "rx_sock_dropped",
	[SRDMA_CNT_RX_BAD_STATE].name = "rx_bad_qp_state",
	[SRDMA_CNT_RX_DUP].name = "rx_duplicates",
	[SRDMA_CNT_RX_OUT_OF_SEQ].name = "rx_out_of_sequence",
	[SRDMA_CNT_RETRANSMITS].name = "retransmits",
	[SRDMA_CNT_TIMEOUTS].name = "ack_timeouts",
	[SRDMA_CNT_NAK_SENT].name = "nak_sent",
	[SRDMA_CNT_NAK_RCVD].name = "nak_received",
	[SRDMA_CNT_RNR_NAK_SENT].name = "rnr_nak_sent",
	[SRDMA_CNT_RNR_NAK_RCVD].name = "rnr_nak_received",
	[SRDMA_CNT_REM_ACCESS_ERR].name = "remote_access_errors",
	[SRDMA_CNT_TX_ERR].name = "tx_errors",
	[SRDMA_CNT_RX_QKEY_VIOL].name = "rx_qkey_violations",
	[SRDMA_CNT_RX_UD_NO_RECV].name = "rx_ud_no_receive",
	[SRDMA_CNT_TX_UD_TOO_LONG].name = "tx_ud_too_long",
	[SRDMA_CNT_RX_UD_OVER_MTU].name = "rx_ud_over_mtu",
	[SRDMA_CNT_RX_UD_SHORT_BUF].name = "rx_ud_short_buffer",
	[SRDMA_CNT_RX_MCAST_NO_GROUP].name = "rx_mcast_no_group",
	[SRDMA_CNT_RX_UC_MSG_DROPPED].name = "rx_uc_msg_dropped",
	[SRDMA_CNT_ATOMIC_REPLAYS].name = "atomic_replays",
	[SRDMA_CNT_ATOMIC_REPLAY_MISS].name = "atomic_replay_misses",

	[SRDMA_CNT_RX_SRQ_EMPTY].name = "rx_srq_empty",
	[SRDMA_CNT_FAST_REG].name = "fast_reg",
	[SRDMA_CNT_LOCAL_INV].name = "local_invalidate",
	[SRDMA_CNT_REMOTE_INV].name = "remote_invalidate",
	[SRDMA_CNT_REMOTE_INV_ERR].name = "remote_invalidate_errors",
	[SRDMA_CNT_FAST_REG_ERR].name = "fast_reg_errors",
	[SRDMA_CNT_MW_BIND].name = "mw_bind",
	[SRDMA_CNT_MW_BIND_ERR].name = "mw_bind_errors",
	[SRDMA_CNT_DUP_READ_DROPPED].name = "dup_read_dropped",
	[SRDMA_CNT_STALE_NAK].name = "stale_naks",
	[SRDMA_CNT_ODP_MISS].name = "odp_misses",
	[SRDMA_CNT_ODP_FAULT].name = "odp_faults",
	[SRDMA_CNT_ODP_INVAL].name = "odp_invalidations",
	[SRDMA_CNT_TLP].name = "tail_loss_probes",
	[SRDMA_CNT_EARLY_RTO].name = "early_timeouts",
	[SRDMA_CNT_TX_RESENT].name = "tx_resent_packets",
	[SRDMA_CNT_CREDIT_WAIT].name = "tx_credit_waits",
	[SRDMA_CNT_TX_BATCH].name = "tx_local_batches",
	[SRDMA_CNT_CWND_HOLDS].name = "cwnd_delay_holds",
	[SRDMA_CNT_TX_TRAINS].name = "tx_trains",
	[SRDMA_CNT_READ_RESTS].name = "read_work_rests",
	[SRDMA_CNT_TX_DIRECT].name = "tx_direct",
};

static struct rdma_hw_stats *srdma_alloc_hw_port_stats(struct ib_device *ibdev,
						       u32 port)
{
	return rdma_alloc_hw_stats_struct(srdma_counter_desc,
					  SRDMA_NUM_COUNTERS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int srdma_get_hw_stats(struct ib_device *ibdev,
			      struct rdma_hw_stats *stats, u32 port, int index)
{
	struct srdma_dev *sdev = to_sdev(ibdev);
	int i;

	for (i = 0; i < SRDMA_NUM_COUNTERS; i++)
		stats->value[i] = atomic64_read(&sdev->counters[i]);
	/* Drops before a QP was found are counted per socket set. */
	stats->value[SRDMA_CNT_RX_SOCK_DROPPED] =
		atomic64_read(&sdev->sockset->rx_dropped);
	stats->value[SRDMA_CNT_RX_MCAST_NO_GROUP] =
		atomic64_read(&sdev->sockset->rx_mcast_dropped);
	return SRDMA_NUM_COUNTERS;
}

static const struct ib_device_ops srdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SRDMA_UVERBS_ABI_VERSION,

	.alloc_ucontext = srdma_alloc_ucontext,
	.device_group = &srdma_dev_attr_group,
	.query_ucontext = srdma_query_ucontext,
	.dealloc_driver = srdma_dealloc_driver,
	.enable_driver = srdma_enable_driver,
	.dealloc_ucontext = srdma_dealloc_ucontext,
	.disassociate_ucontext = srdma_disassociate_ucontext,
	.get_dev_fw_str = srdma_get_dev_fw_str,
	.get_link_layer = srdma_get_link_layer,
	.get_port_immutable = srdma_get_port_immutable,
	.query_device = srdma_query_device,
	.query_pkey = srdma_query_pkey,
	.query_port = srdma_query_port,

	.alloc_pd = srdma_alloc_pd,
	.dealloc_pd = srdma_dealloc_pd,
	.alloc_xrcd = srdma_alloc_xrcd,
	.dealloc_xrcd = srdma_dealloc_xrcd,
	.get_dma_mr = srdma_get_dma_mr,
	.alloc_mr = srdma_alloc_mr,
	.map_mr_sg = srdma_map_mr_sg,
	.reg_dm_mr = srdma_reg_dm_mr,
	.reg_user_mr = srdma_reg_user_mr,
	.reg_user_mr_dmabuf = srdma_reg_user_mr_dmabuf,
	.advise_mr = srdma_advise_mr,
	.alloc_dm = srdma_alloc_dm,
	.dealloc_dm = srdma_dealloc_dm,
	.dereg_mr = srdma_dereg_mr,
	.rereg_user_mr = srdma_rereg_user_mr,
	.alloc_mw = srdma_alloc_mw,
	.dealloc_mw = srdma_dealloc_mw,
	.create_cq = srdma_create_cq,
	.destroy_cq = srdma_destroy_cq,
	.poll_cq = srdma_poll_cq,
	.req_notify_cq = srdma_req_notify_cq,
	.resize_cq = srdma_resize_cq,
	.create_ah = srdma_create_ah,
	.create_user_ah = srdma_create_ah,
	.destroy_ah = srdma_destroy_ah,
	.query_ah = srdma_query_ah,
	.create_qp = srdma_create_qp,
	.create_srq = srdma_create_srq,
	.modify_srq = srdma_modify_srq,
	.query_srq = srdma_query_srq,
	.destroy_srq = srdma_destroy_srq,
	.post_srq_recv = srdma_post_srq_recv,
	.modify_qp = srdma_modify_qp,
	.query_qp = srdma_query_qp,
	.destroy_qp = srdma_destroy_qp,
	.attach_mcast = srdma_attach_mcast,
	.detach_mcast = srdma_detach_mcast,
	.post_send = srdma_post_send,
	.post_recv = srdma_post_recv,
	.alloc_hw_port_stats = srdma_alloc_hw_port_stats,
	.get_hw_stats = srdma_get_hw_stats,
	.mmap = srdma_mmap,
	.mmap_free = srdma_mmap_free,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, srdma_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_pd, srdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_ah, srdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, srdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_qp, srdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, srdma_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_mw, srdma_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, srdma_xrcd, ibxrcd),
};

/* The AH table's lock class (see srdma_init_device()). */
static struct lock_class_key srdma_ah_xa_key;

/**
 * srdma_init_device() - Set up a new device's limits, MR table and ops.
 * @sdev: the device, just allocated
 *
 * The limits are read from the module parameters now, once.
 *
 * Context: Process context.
 */
void srdma_init_device(struct srdma_dev *sdev)
{
	sdev->res_max[SRDMA_RES_PD] = srdma_limit(max_pd, SRDMA_MAX_PD);
	sdev->res_max[SRDMA_RES_CQ] = srdma_limit(max_cq, SRDMA_MAX_CQ);
	sdev->res_max[SRDMA_RES_QP] = srdma_limit(max_qp, SRDMA_MAX_QP);
	sdev->res_max[SRDMA_RES_MR] = srdma_limit(max_mr, SRDMA_MAX_MR);
	sdev->res_max[SRDMA_RES_AH] = srdma_limit(max_ah, SRDMA_MAX_AH);
	sdev->res_max[SRDMA_RES_SRQ] = srdma_limit(max_srq, SRDMA_MAX_SRQ);
	sdev->res_max[SRDMA_RES_MW] = srdma_limit(max_mw, SRDMA_MAX_MW);
	sdev->res_max[SRDMA_RES_DM] = SRDMA_MAX_DM;
	xa_init_flags(&sdev->mr_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&sdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
	xa_init_flags(&sdev->xsrq_xa, XA_FLAGS_ALLOC1);
	/*
	 * The xa_init_flags() calls above share one lock class (the key is
	 * per call site of the inline). The AH table's lock nests inside
	 * the QP lock, which softirq takes; the MR and XRC SRQ tables' are
	 * process context only (XRC SRQ lookups take RCU, not the lock) and
	 * never nest. Tell lockdep the AH table's is a different lock.
	 */
	lockdep_set_class(&sdev->ah_xa.xa_lock, &srdma_ah_xa_key);
	ib_set_device_ops(&sdev->ibdev, &srdma_dev_ops);
}

/**
 * srdma_register_device() - Register a device with the RDMA core.
 * @sdev: the device, bound to its netdev
 * @name: the device's name
 *
 * Context: Process context; sleeps; takes rtnl (through the core), so
 * srdma_dev_mutex must not be held.
 * Return: 0, or the error of ib_device_set_netdev() or
 * ib_register_device().
 */
int srdma_register_device(struct srdma_dev *sdev, const char *name)
{
	struct ib_device *ibdev = &sdev->ibdev;
	int err;

	/* The provider recognises srdma devices by it: never modifiable. */
	strscpy(ibdev->node_desc, SRDMA_NODE_DESC, sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->local_dma_lkey = 0;
	/* POST_SEND and POST_RECV without work requests are doorbells. */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    sdev->ndev->dev_addr);

	/*
	 * No parent device, as for rdma_rxe: with the NIC's PCI function as
	 * its parent, udev's persistent naming (rdma_rename NAME_FALLBACK)
	 * would rename srdma0 after the slot, and libibverbs could hand the
	 * device to the NIC's own provider by its modalias.
	 */
	err = ib_device_set_netdev(ibdev, sdev->ndev, SRDMA_PORT_NUM);
	if (err)
		return err;

	/* NULL dma_device: the core uses virtual DMA addresses. */
	return ib_register_device(ibdev, name, NULL);
}
