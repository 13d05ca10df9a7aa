// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrdma: the rdma-core provider for the srdma kernel module.
 *
 * Matches srdma ib_devices by name, opens a verbs context through the
 * uverbs command path and forwards verbs to the kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "verbs_private.h"
#include "../../include/uapi/rdma/srdma-abi.h"

struct srdma_device {
	struct verbs_device vdev;
};

struct srdma_context {
	struct verbs_context vctx;
	uint64_t caps;			/* enum srdma_ucontext_caps */
};

struct srdma_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct srdma_alloc_ucontext_resp drv;
};

static struct srdma_context *to_sctx(struct ibv_context *ctx)
{
	return (struct srdma_context *)((char *)ctx -
		offsetof(struct srdma_context, vctx.context));
}

static int srdma_query_device_ex(struct ibv_context *ctx,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int srdma_query_port(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static void srdma_free_context(struct ibv_context *ibctx)
{
	struct srdma_context *ctx = to_sctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static struct ibv_pd *srdma_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ret = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int srdma_dealloc_pd(struct ibv_pd *pd)
{
	int ret = ibv_cmd_dealloc_pd(pd);

	if (!ret)
		free(pd);
	return ret;
}

static struct ibv_mr *srdma_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int srdma_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(vmr);
	return ret;
}

static struct ibv_cq *srdma_create_cq(struct ibv_context *ctx, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct ib_uverbs_create_cq_resp resp;
	struct ibv_create_cq cmd;
	struct ibv_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, cq, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	return cq;
}

static int srdma_destroy_cq(struct ibv_cq *cq)
{
	int ret = ibv_cmd_destroy_cq(cq);

	if (!ret)
		free(cq);
	return ret;
}

static struct ibv_qp *srdma_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_create_qp cmd;
	struct ibv_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = ibv_cmd_create_qp(pd, qp, attr, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	return qp;
}

static int srdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int mask, struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

static int srdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int mask)
{
	struct ibv_modify_qp cmd;

	return ibv_cmd_modify_qp(qp, attr, mask, &cmd, sizeof(cmd));
}

static int srdma_destroy_qp(struct ibv_qp *qp)
{
	int ret = ibv_cmd_destroy_qp(qp);

	if (!ret)
		free(qp);
	return ret;
}

static const struct verbs_context_ops srdma_ctx_ops = {
	.alloc_pd = srdma_alloc_pd,
	.create_cq = srdma_create_cq,
	.create_qp = srdma_create_qp,
	.dealloc_pd = srdma_dealloc_pd,
	.dereg_mr = srdma_dereg_mr,
	.destroy_cq = srdma_destroy_cq,
	.destroy_qp = srdma_destroy_qp,
	.free_context = srdma_free_context,
	.modify_qp = srdma_modify_qp,
	.poll_cq = ibv_cmd_poll_cq,
	.post_recv = ibv_cmd_post_recv,
	.post_send = ibv_cmd_post_send,
	.query_device_ex = srdma_query_device_ex,
	.query_port = srdma_query_port,
	.query_qp = srdma_query_qp,
	.reg_mr = srdma_reg_mr,
	.req_notify_cq = ibv_cmd_req_notify_cq,
};

static struct verbs_context *srdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct srdma_get_context_resp resp;
	struct ibv_get_context cmd;
	struct srdma_context *ctx;

	(void)private_data;
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    &((struct srdma_context *)NULL)->vctx,
					    RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	memset(&resp, 0, sizeof(resp));
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)))
		goto err_uninit_context;
	if (resp.drv.abi_version != SRDMA_UVERBS_ABI_VERSION) {
		fprintf(stderr, "libsrdma: kernel ABI %u, provider ABI %u\n",
			resp.drv.abi_version, SRDMA_UVERBS_ABI_VERSION);
		errno = EPROTO;
		goto err_uninit_context;
	}
	ctx->caps = resp.drv.caps;

	verbs_set_ops(&ctx->vctx, &srdma_ctx_ops);
	return &ctx->vctx;

err_uninit_context:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	return NULL;
}

static struct verbs_device *srdma_alloc_device(struct verbs_sysfs_dev *sdev)
{
	struct srdma_device *dev;

	(void)sdev;
	dev = calloc(1, sizeof(*dev));
	return dev ? &dev->vdev : NULL;
}

static void srdma_uninit_device(struct verbs_device *vdev)
{
	free((struct srdma_device *)vdev);
}

/* The kernel names every device "srdma<something>"; match on that. */
static const struct verbs_match_ent srdma_match_table[] = {
	{ .u.modalias = "rdma_device:*N" SRDMA_IBDEV_PREFIX "*",
	  .kind = SRDMA_MATCH_MODALIAS },
	{}
};

static const struct verbs_device_ops srdma_dev_ops = {
	.name = "srdma",
	.match_min_abi_version = SRDMA_UVERBS_ABI_VERSION,
	.match_max_abi_version = SRDMA_UVERBS_ABI_VERSION,
	.match_table = srdma_match_table,
	.alloc_device = srdma_alloc_device,
	.uninit_device = srdma_uninit_device,
	.alloc_context = srdma_alloc_context,
};

static void __attribute__((constructor)) srdma_register(void)
{
	verbs_register_driver_34(&srdma_dev_ops);
}
