// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma address handles: the destination of UD work requests, and the
 * conversion of an address vector (rdma_ah_attr, RoCEv2 GIDs) into the IP
 * addresses srdma sends to, which RC QPs use too.
 *
 * A kernel consumer passes its AH by pointer in every UD work request. A
 * user process cannot: it writes the AH's number, from the create_ah
 * response, into its mapped SQ. The kernel looks that number up in the
 * device's ah_xa and accepts it only if the AH belongs to the QP's PD;
 * it then copies the address vector into its own SQ entry, under the
 * xarray's lock. Nothing refers to the AH after that copy: destroy_ah
 * erases the number under the same lock, and the AH can go at once, even
 * with work requests that named it still queued.
 */
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "srdma.h"

/**
 * srdma_av_from_attr() - the IP addresses of an address vector
 * @sdev: the device
 * @attr: the address vector, with a GRH and a RoCEv2 source GID
 * @av: filled with the source and destination addresses, TOS and TTL
 *
 * Context: Any context; does not sleep.
 * Return: 0, or -EINVAL for a vector without a GRH, a source GID that is
 * not RoCEv2, or source and destination of different families.
 */
int srdma_av_from_attr(struct srdma_dev *sdev,
		       const struct rdma_ah_attr *attr, struct srdma_av *av)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid;
	struct net_device *ndev;
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa, da;

	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH)) {
		srdma_dbg(sdev, "address vector without GRH\n");
		return -EINVAL;
	}
	grh = rdma_ah_read_grh(attr);
	sgid = grh->sgid_attr;
	if (!sgid || sgid->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP) {
		srdma_dbg(sdev, "source GID %u is not RoCEv2\n",
			  grh->sgid_index);
		return -EINVAL;
	}
	rdma_gid2ip((struct sockaddr *)&sa, &sgid->gid);
	rdma_gid2ip((struct sockaddr *)&da, &grh->dgid);
	if (sa.in.sin_family != da.in.sin_family) {
		srdma_dbg(sdev, "source and destination GIDs differ in family\n");
		return -EINVAL;
	}
	memset(av, 0, sizeof(*av));
	av->ipv6 = sa.in.sin_family == AF_INET6;
	if (av->ipv6) {
		av->saddr.v6 = sa.in6.sin6_addr;
		av->daddr.v6 = da.in6.sin6_addr;
	} else {
		av->saddr.v4 = sa.in.sin_addr.s_addr;
		av->daddr.v4 = da.in.sin_addr.s_addr;
	}
	av->tos = grh->traffic_class;
	av->ttl = grh->hop_limit ? grh->hop_limit : SRDMA_DEFAULT_TTL;
	/*
	 * Packets leave by the source GID's netdev: a GID of a VLAN upper
	 * must be sent tagged, through the upper. Only of one over the
	 * device's netdev, in its namespace, where the route is looked up
	 * (the core also gives the device the GIDs of its netdev's VLANs in
	 * other namespaces, whose ifindex means another device here;
	 * helper-89). Else 0: the device's netdev.
	 */
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid);
	if (!IS_ERR(ndev) && ndev != sdev->ndev &&
	    net_eq(dev_net(ndev), dev_net(sdev->ndev)) &&
	    srdma_ndev_or_vlan_over(ndev, sdev->ndev))
		av->ifindex = ndev->ifindex;
	rcu_read_unlock();
	return 0;
}

/*
 * Number a user AH and tell the provider its number. The provider sends
 * no command of its own: input is refused unless it is all zeros, so
 * that a field added later is never ignored by this kernel.
 */
static int srdma_create_uah(struct srdma_dev *sdev, struct srdma_ah *ah,
			    struct ib_udata *udata)
{
	struct srdma_create_ah_resp resp = {};
	int err;

	err = srdma_udata_no_input(sdev, udata, "create_ah");
	if (err)
		return err;
	if (udata->outlen < sizeof(resp)) {
		srdma_dbg(sdev, "create_ah: response of %zu bytes, need %zu\n",
			  udata->outlen, sizeof(resp));
		return -EINVAL;
	}
	err = xa_alloc_cyclic_bh(&sdev->ah_xa, &ah->ah_num, ah,
				 XA_LIMIT(1, U32_MAX), &sdev->ah_next,
				 GFP_KERNEL_ACCOUNT);
	if (err < 0)
		return err;
	resp.ah_num = ah->ah_num;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err) {
		xa_erase_bh(&sdev->ah_xa, ah->ah_num);
		ah->ah_num = 0;
	}
	return err;
}

/**
 * srdma_create_ah() - ib_device_ops.create_ah and create_user_ah
 * @ibah: the AH, allocated by the core
 * @init: its address vector (the core resolved the destination MAC,
 *	  which srdma does not need: its packets go through the IP stack)
 * @udata: the provider's command and response, NULL for a kernel AH
 *
 * Context: Process context for a user AH; a kernel AH may be created in
 * atomic context (without RDMA_CREATE_AH_SLEEPABLE), and then nothing
 * here sleeps.
 * Return: 0; -EINVAL for an address vector srdma cannot use, a short
 * response buffer or input that is not all zeros; -ENOMEM, also when
 * the device has its limit of user AHs; -EBUSY when no AH number is free.
 */
int srdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibah->device);
	struct srdma_ah *ah = to_sah(ibah);
	int err;

	err = srdma_av_from_attr(sdev, init->ah_attr, &ah->av);
	if (err)
		return err;
	ah->attr = *init->ah_attr;
	ah->attr.grh.sgid_attr = NULL;
	ah->ah_num = 0;
	/*
	 * Only user AHs count against max_ah: the IB CM makes one for each
	 * MAD it sends, and a process that used up the limit would otherwise
	 * stop connection management on the device for everyone.
	 */
	if (!udata)
		return 0;
	err = srdma_res_get(sdev, SRDMA_RES_AH);
	if (err)
		return err;
	err = srdma_create_uah(sdev, ah, udata);
	if (err)
		srdma_res_put(sdev, SRDMA_RES_AH);
	return err;
}

/**
 * srdma_destroy_ah() - ib_device_ops.destroy_ah
 * @ibah: the AH
 * @flags: RDMA_DESTROY_AH_SLEEPABLE or 0
 *
 * A user AH's number is erased under the lock its lookups hold while they
 * copy the address vector, so nothing can reach the AH afterwards.
 *
 * Context: Any context; does not sleep.
 * Return: 0.
 */
int srdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct srdma_dev *sdev = to_sdev(ibah->device);
	struct srdma_ah *ah = to_sah(ibah);

	if (ah->ah_num) {
		xa_erase_bh(&sdev->ah_xa, ah->ah_num);
		srdma_res_put(sdev, SRDMA_RES_AH);
	}
	return 0;
}

/**
 * srdma_query_ah() - ib_device_ops.query_ah
 * @ibah: the AH
 * @attr: filled with its address vector as created (the core clears its
 *	  sgid_attr; the GID index says which)
 *
 * The MAD layer matches a response MAD to its request by it.
 *
 * Context: Any context; does not sleep.
 * Return: 0.
 */
int srdma_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = to_sah(ibah)->attr;
	return 0;
}

/**
 * srdma_ah_lookup() - the address vector of a user AH, for a UD QP
 * @qp: the QP whose ring entry names the AH
 * @ah_num: the number the entry gives, as read once
 * @av: filled with a copy of the AH's address vector
 *
 * The AH must exist and belong to the QP's PD (so to the same process).
 *
 * Context: QP lock held.
 * Return: 0, or -EINVAL if no AH of that PD has that number.
 */
int srdma_ah_lookup(struct srdma_qp *qp, u32 ah_num, struct srdma_av *av)
{
	struct srdma_dev *sdev = qp->sdev;
	struct srdma_ah *ah;
	int err = -EINVAL;

	lockdep_assert_held(&qp->lock);
	xa_lock_bh(&sdev->ah_xa);
	ah = xa_load(&sdev->ah_xa, ah_num);
	if (ah && ah->ibah.pd == qp->ibqp.pd) {
		*av = ah->av;
		err = 0;
	}
	xa_unlock_bh(&sdev->ah_xa);
	return err;
}
