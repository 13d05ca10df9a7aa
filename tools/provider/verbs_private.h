/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The parts of libibverbs' private provider interface (IBVERBS_PRIVATE_34,
 * rdma-core 44) that the srdma provider uses. Debian ships no driver.h, so
 * the layouts are declared here and pinned with static asserts; a mismatch
 * fails the build instead of corrupting memory at run time.
 */
#ifndef SRDMA_VERBS_PRIVATE_H
#define SRDMA_VERBS_PRIVATE_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#define SRDMA_PABI_VERSION 34

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

#define SRDMA_MATCH_MODALIAS 2

struct srdma_list_node {
	struct srdma_list_node *next, *prev;
};

/*
 * One uverbs device found by libibverbs, handed to match_device and
 * alloc_device. srdma reads driver_id; the library reads the rest.
 */
struct verbs_sysfs_dev {
	struct srdma_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;		/* enum rdma_driver_id, from netlink */
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;		/* uverbs driver ABI (abi_version) */
	struct timespec time_created;
};

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct verbs_device {
	struct ibv_device device;	/* must be first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct srdma_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type;
	int access;
};

/* Device memory: the DM and its kernel handle. */
struct verbs_dm {
	struct ibv_dm dm;
	uint32_t handle;
};

/* An XRC domain: the kernel's handle. */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

/* Every SRQ made by create_srq_ex: an XRC SRQ's number and domain. */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/* libibverbs' ioctl command buffer: only ever passed as NULL here. */
struct ibv_command_buffer;

/*
 * A CQ made by create_cq_ex: ibv_cq_ex begins with the fields of ibv_cq,
 * so one object serves both APIs (ibv_cq_ex_to_cq() is a cast).
 */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/*
 * Every QP: ibv_qp_to_qp_ex() (in libibverbs) casts any ibv_qp to this and
 * reads comp_mask, so a provider's QP must begin with one, comp_mask 0
 * unless the QP has the ibv_qp_ex posting API.
 */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;		/* enum srdma_verbs_qp_mask */
	struct verbs_xrcd *xrcd;	/* XRC QPs, with SRDMA_VERBS_QP_XRCD */
};

enum srdma_verbs_qp_mask {
	SRDMA_VERBS_QP_XRCD = 1 << 0,
	SRDMA_VERBS_QP_EX = 1 << 1,	/* qp_ex is valid */
};

static_assert(offsetof(struct ibv_cq_ex, async_events_completed) ==
	      offsetof(struct ibv_cq, async_events_completed) &&
	      offsetof(struct ibv_cq_ex, comp_mask) == sizeof(struct ibv_cq) &&
	      sizeof(struct verbs_cq) == sizeof(struct ibv_cq_ex),
	      "verbs_cq layout");
static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0 &&
	      offsetof(struct verbs_qp, comp_mask) ==
	      sizeof(struct ibv_qp_ex), "verbs_qp layout");

/*
 * verbs_context_ops: 76 slots in rdma-core 44, sorted by name. Slots srdma
 * fills are typed; the others are placeholders of the same size.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	void *alloc_null_mr;
	void *alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	void *alloc_td;
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	void *attach_counters_point_flow;
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	void *create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *attr);
	void *create_flow, *create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	void *create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	void *create_wq;
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	void *dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	void *destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	void *destroy_flow, *destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	void *destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	void *destroy_wq;
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	void *import_dm;
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	void *modify_cq, *modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	void *modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	void *modify_wq;
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	void *post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	void *query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	void *query_qp_data_in_order;
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
	void *read_counters;
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	void *set_ece, *unimport_dm;
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

#define SRDMA_OPS_SLOT(name, idx)					\
	static_assert(offsetof(struct verbs_context_ops, name) ==	\
		      (idx) * sizeof(void *), "verbs_context_ops." #name)
static_assert(sizeof(struct verbs_context_ops) == 76 * sizeof(void *),
	      "verbs_context_ops must have 76 slots (rdma-core 44)");
SRDMA_OPS_SLOT(alloc_mw, 2);
SRDMA_OPS_SLOT(alloc_pd, 5);
SRDMA_OPS_SLOT(async_event, 7);
SRDMA_OPS_SLOT(attach_mcast, 9);
SRDMA_OPS_SLOT(bind_mw, 10);
SRDMA_OPS_SLOT(close_xrcd, 11);
SRDMA_OPS_SLOT(cq_event, 12);
SRDMA_OPS_SLOT(advise_mr, 0);
SRDMA_OPS_SLOT(alloc_dm, 1);
SRDMA_OPS_SLOT(create_ah, 13);
SRDMA_OPS_SLOT(create_cq, 15);
SRDMA_OPS_SLOT(create_cq_ex, 16);
SRDMA_OPS_SLOT(create_qp, 19);
SRDMA_OPS_SLOT(create_qp_ex, 20);
SRDMA_OPS_SLOT(create_srq, 22);
SRDMA_OPS_SLOT(create_srq_ex, 23);
SRDMA_OPS_SLOT(dealloc_mw, 25);
SRDMA_OPS_SLOT(dealloc_pd, 26);
SRDMA_OPS_SLOT(dereg_mr, 28);
SRDMA_OPS_SLOT(destroy_ah, 29);
SRDMA_OPS_SLOT(destroy_cq, 31);
SRDMA_OPS_SLOT(destroy_qp, 34);
SRDMA_OPS_SLOT(destroy_srq, 36);
SRDMA_OPS_SLOT(detach_mcast, 38);
SRDMA_OPS_SLOT(free_context, 39);
SRDMA_OPS_SLOT(free_dm, 40);
SRDMA_OPS_SLOT(get_srq_num, 41);
SRDMA_OPS_SLOT(modify_qp, 47);
SRDMA_OPS_SLOT(modify_srq, 49);
SRDMA_OPS_SLOT(open_qp, 51);
SRDMA_OPS_SLOT(open_xrcd, 52);
SRDMA_OPS_SLOT(poll_cq, 53);
SRDMA_OPS_SLOT(post_recv, 54);
SRDMA_OPS_SLOT(post_send, 55);
SRDMA_OPS_SLOT(post_srq_recv, 57);
SRDMA_OPS_SLOT(query_device_ex, 58);
SRDMA_OPS_SLOT(query_port, 60);
SRDMA_OPS_SLOT(query_qp, 61);
SRDMA_OPS_SLOT(query_rt_values, 63);
SRDMA_OPS_SLOT(query_srq, 64);
SRDMA_OPS_SLOT(reg_dm_mr, 66);
SRDMA_OPS_SLOT(reg_mr, 68);
SRDMA_OPS_SLOT(req_notify_cq, 69);
SRDMA_OPS_SLOT(rereg_mr, 70);
SRDMA_OPS_SLOT(resize_cq, 71);
SRDMA_OPS_SLOT(import_mr, 43);
SRDMA_OPS_SLOT(import_pd, 44);
SRDMA_OPS_SLOT(unimport_mr, 74);
SRDMA_OPS_SLOT(unimport_pd, 75);

static_assert(offsetof(struct verbs_device, ops) ==
	      sizeof(struct ibv_device), "verbs_device layout");
static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent size");
static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops size");
static_assert(offsetof(struct verbs_device_ops, match_device) == 32,
	      "verbs_device_ops.match_device");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_name) == 112,
	      "verbs_sysfs_dev.ibdev_name");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_path) == 176,
	      "verbs_sysfs_dev.ibdev_path");
static_assert(offsetof(struct verbs_sysfs_dev, driver_id) == 952,
	      "verbs_sysfs_dev.driver_id");
static_assert(offsetof(struct verbs_sysfs_dev, abi_ver) == 968,
	      "verbs_sysfs_dev.abi_ver");
static_assert(sizeof(struct verbs_sysfs_dev) == 992, "verbs_sysfs_dev size");

/* Command buffers of the write() ABI: header, then the kernel's struct. */
struct ibv_get_context {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_get_context core_payload;
};

struct ibv_query_port {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_query_port core_payload;
};

#define SRDMA_DECLARE_CMD(name, kstruct)				\
	struct name {							\
		struct ib_uverbs_cmd_hdr hdr;				\
		struct kstruct core_payload;				\
	}

SRDMA_DECLARE_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
SRDMA_DECLARE_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw);
SRDMA_DECLARE_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
SRDMA_DECLARE_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr);
SRDMA_DECLARE_CMD(ibv_create_cq, ib_uverbs_create_cq);
SRDMA_DECLARE_CMD(ibv_resize_cq, ib_uverbs_resize_cq);
SRDMA_DECLARE_CMD(ibv_create_qp, ib_uverbs_create_qp);
SRDMA_DECLARE_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
SRDMA_DECLARE_CMD(ibv_query_qp, ib_uverbs_query_qp);
SRDMA_DECLARE_CMD(ibv_create_srq, ib_uverbs_create_srq);
SRDMA_DECLARE_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
SRDMA_DECLARE_CMD(ibv_query_srq, ib_uverbs_query_srq);
SRDMA_DECLARE_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq);
SRDMA_DECLARE_CMD(ibv_open_xrcd, ib_uverbs_open_xrcd);
SRDMA_DECLARE_CMD(ibv_open_qp, ib_uverbs_open_qp);

/* An extended command: both headers, then the kernel's struct. */
struct ibv_create_cq_ex {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
	struct ib_uverbs_ex_create_cq core_payload;
};

/* Exported by libibverbs.so.1 under IBVERBS_PRIVATE_34. */
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_alloc_dm(struct ibv_context *ctx,
		     const struct ibv_alloc_dm_attr *dm_attr,
		     struct verbs_dm *dm, struct ibv_command_buffer *link);
int ibv_cmd_free_dm(struct verbs_dm *dm);
int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm,
		      uint64_t offset, size_t length, unsigned int access,
		      struct verbs_mr *vmr, struct ibv_command_buffer *link);
/* rdma-core 44's form: later releases add a driver command buffer. */
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
			  uint64_t iova, int fd, int access,
			  struct verbs_mr *vmr);
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
		      size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
void verbs_register_driver_34(const struct verbs_device_ops *ops);
/* Reads <ibdev_path>/<file> into buf, minus its trailing newline. */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
/* The MR of @mr_handle in the context: keys and length (import_mr). */
int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr,
		     uint32_t mr_handle);
/* num_comp_vectors and the core's support flags of an imported context. */
int ibv_cmd_query_context(struct ibv_context *ctx, void *driver);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);

#endif /* SRDMA_VERBS_PRIVATE_H */
