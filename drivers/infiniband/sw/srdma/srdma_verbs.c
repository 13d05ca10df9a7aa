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

/* Limits reported by query_device; the data path enforces them. */
#define SRDMA_MAX_QP		4096
#define SRDMA_MAX_QP_WR		16384
#define SRDMA_MAX_SGE		32
#define SRDMA_MAX_CQ		8192
#define SRDMA_MAX_CQE		65536
#define SRDMA_MAX_MR		65536
#define SRDMA_MAX_PD		4096
#define SRDMA_MAX_RD_ATOM	128
#define SRDMA_MAX_MR_SIZE	BIT_ULL(40)
#define SRDMA_MAX_MSG_SIZE	BIT(31)

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
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = SRDMA_FW_VER;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = SRDMA_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = 0;
	attr->vendor_part_id = 0;
	attr->hw_ver = 0;
	attr->max_qp = SRDMA_MAX_QP;
	attr->max_qp_wr = SRDMA_MAX_QP_WR;
	attr->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->max_send_sge = SRDMA_MAX_SGE;
	attr->max_recv_sge = SRDMA_MAX_SGE;
	attr->max_sge_rd = SRDMA_MAX_SGE;
	attr->max_cq = SRDMA_MAX_CQ;
	attr->max_cqe = SRDMA_MAX_CQE - 1;
	attr->max_mr = SRDMA_MAX_MR;
	attr->max_pd = SRDMA_MAX_PD;
	attr->max_qp_rd_atom = SRDMA_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = SRDMA_MAX_RD_ATOM;
	attr->max_res_rd_atom = SRDMA_MAX_RD_ATOM * SRDMA_MAX_QP;
	attr->atomic_cap = IB_ATOMIC_NONE;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
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
	attr->pkey_tbl_len = 1;
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
	if (index)
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
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
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
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%llu.%llu.%llu",
		 SRDMA_FW_VER >> 32, (SRDMA_FW_VER >> 16) & 0xffff,
		 SRDMA_FW_VER & 0xffff);
}

static int srdma_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibuc->device);
	struct srdma_alloc_ucontext_resp resp = {
		.abi_version = SRDMA_UVERBS_ABI_VERSION,
		.caps = SRDMA_CAP_CMD_DATAPATH,
	};
	int err;

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

static void srdma_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	srdma_dbg(to_sdev(ibuc->device), "ucontext closed\n");
}

/*
 * Called when the device goes away under an open ucontext (netdev removal,
 * `rdma link delete`, rmmod). The core then destroys every object of the
 * context; nothing of ours is mapped into the process yet.
 */
static void srdma_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static const struct ib_device_ops srdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SRDMA_UVERBS_ABI_VERSION,

	.alloc_ucontext = srdma_alloc_ucontext,
	.dealloc_driver = srdma_dealloc_driver,
	.dealloc_ucontext = srdma_dealloc_ucontext,
	.disassociate_ucontext = srdma_disassociate_ucontext,
	.get_dev_fw_str = srdma_get_dev_fw_str,
	.get_link_layer = srdma_get_link_layer,
	.get_port_immutable = srdma_get_port_immutable,
	.query_device = srdma_query_device,
	.query_pkey = srdma_query_pkey,
	.query_port = srdma_query_port,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, srdma_ucontext, ibuc),
};

void srdma_init_device(struct srdma_dev *sdev)
{
	ib_set_device_ops(&sdev->ibdev, &srdma_dev_ops);
}

int srdma_register_device(struct srdma_dev *sdev, const char *name)
{
	struct ib_device *ibdev = &sdev->ibdev;
	int err;

	strscpy(ibdev->node_desc, "srdma", sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->local_dma_lkey = 0;
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    sdev->ndev->dev_addr);

	err = ib_device_set_netdev(ibdev, sdev->ndev, 1);
	if (err)
		return err;

	/* NULL dma_device: the core uses virtual DMA addresses. */
	return ib_register_device(ibdev, name, NULL);
}
