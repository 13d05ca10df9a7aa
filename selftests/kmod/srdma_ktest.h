/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the srdma test modules (selftests/kmod) share: the dev= parameter,
 * the check macro, the device's IPv4 RoCEv2 GID, an RC QP connected in
 * loopback, and the load-time runner. Each module is one .c file that
 * keeps its state in a struct kt with at least
 *
 *	struct ib_device *ibdev;	the device named by dev=
 *	u8 *buf;			KT_BUF bytes, zeroed
 *	int checks, failed;		counted by KT_CHECK()
 */
#ifndef SRDMA_KTEST_H
#define SRDMA_KTEST_H

#include <linux/module.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

/* The device under test: insmod ... dev=NAME. */
static char *dev = "srdma0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the srdma device to test (default srdma0)");

/* Count a check; log and count it as failed if @cond is false. */
#define KT_CHECK(kt, cond, fmt, ...) do {				\
	(kt)->checks++;							\
	if (!(cond)) {							\
		pr_err("FAIL %s line %d: %s: " fmt "\n", __func__,	\
		       __LINE__, #cond, ##__VA_ARGS__);			\
		(kt)->failed++;						\
	}								\
} while (0)

/*
 * @ibdev's RoCEv2 GID of an IPv4 address, into @gid: its index, or
 * -ENOENT.
 */
static inline int srdma_ktest_find_gid(struct ib_device *ibdev,
				       union ib_gid *gid)
{
	const struct ib_gid_attr *attr;
	int i;

	for (i = 0; i < 16; i++) {
		attr = rdma_get_gid_attr(ibdev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw)) {
			*gid = attr->gid;
			rdma_put_gid_attr(attr);
			return i;
		}
		rdma_put_gid_attr(attr);
	}
	return -ENOENT;
}

/*
 * RC @qp: RESET -> INIT -> RTR (towards @dqpn behind @gid, our GID @gidx,
 * path MTU 1024, PSN 0x10, one READ in flight) -> RTS with @rnr_retry;
 * 0 or ib_modify_qp()'s error.
 */
static inline int srdma_ktest_connect(struct ib_qp *qp, u32 dqpn,
				      union ib_gid *gid, int gidx, u8 rnr_retry)
{
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x10;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, gid, 0, gidx, 64, 0);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.sq_psn = 0x10;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/*
 * A PD on @ibdev into *@pd and @len bytes of @buf mapped for the device
 * into *@dma: 0, or an error with whatever was made left for
 * srdma_ktest_unmap().
 */
static inline int srdma_ktest_map(struct ib_device *ibdev, void *buf,
				  size_t len, struct ib_pd **pd, u64 *dma)
{
	*pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(*pd))
		return PTR_ERR(*pd);
	*dma = ib_dma_map_single(ibdev, buf, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ibdev, *dma)) {
		*dma = 0;
		return -ENOMEM;
	}
	return 0;
}

/* Undo srdma_ktest_map(), as far as it got. */
static inline void srdma_ktest_unmap(struct ib_device *ibdev, size_t len,
				     struct ib_pd *pd, u64 dma)
{
	if (dma)
		ib_dma_unmap_single(ibdev, dma, len, DMA_BIDIRECTIONAL);
	if (!IS_ERR_OR_NULL(pd))
		ib_dealloc_pd(pd);
}

/*
 * The module's init and exit, for a module whose kt_setup() makes its
 * objects (an error ends the test), kt_run() checks with KT_CHECK() and
 * kt_teardown() frees what kt_setup() made, as far as it got. Loading
 * runs the test: it fails with the setup's error, or -EINVAL if a check
 * failed (each logged as "FAIL ..."), and succeeds after logging
 * "PASS: N checks"; all objects are gone by then, so the module holds
 * nothing and can be removed at once.
 */
#define SRDMA_KTEST_MAIN()						\
static int __init kt_init(void)						\
{									\
	struct kt *kt;							\
	int err;							\
									\
	kt = kzalloc(sizeof(*kt), GFP_KERNEL);				\
	if (!kt)							\
		return -ENOMEM;						\
	kt->buf = kzalloc(KT_BUF, GFP_KERNEL);				\
	kt->ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);	\
	if (!kt->buf || !kt->ibdev) {					\
		pr_err("FAIL: no device %s or no memory\n", dev);	\
		err = -ENODEV;						\
		goto out_free;						\
	}								\
	err = kt_setup(kt);						\
	if (err)							\
		pr_err("FAIL: setup: %d\n", err);			\
	else								\
		kt_run(kt);						\
	kt_teardown(kt);						\
	if (!err && kt->failed)						\
		err = -EINVAL;						\
	if (!err)							\
		pr_info("PASS: %d checks\n", kt->checks);		\
out_free:								\
	if (kt->ibdev)							\
		ib_device_put(kt->ibdev);				\
	kfree(kt->buf);							\
	kfree(kt);							\
	return err;							\
}									\
									\
static void __exit kt_exit(void)					\
{									\
}									\
									\
module_init(kt_init);							\
module_exit(kt_exit)

#endif /* SRDMA_KTEST_H */
