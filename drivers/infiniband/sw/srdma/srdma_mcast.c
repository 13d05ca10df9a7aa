// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma multicast: UD QPs attached to multicast groups (attach_mcast and
 * detach_mcast), the table in which the receive path looks a group up,
 * and the group's membership at the IP level of the device's netdev.
 *
 * A group (srdma_mcg) is one multicast GID on one device; an attachment
 * (srdma_mca) puts one UD QP in one group. A group lives as long as it
 * has attachments: the first attach makes it, the last detach frees it,
 * and destroying a QP detaches it from every group it is still in.
 *
 * Groups of every device are in one hash table, keyed by the device's
 * netdev and the GID, because the receive path knows the netdev a
 * datagram arrived on (skb->dev) and nothing else. srdma_mcast_mutex
 * (process context) serialises every writer: the table, each group's
 * list of attachments and count, each QP's list of attachments and each
 * device's counts. The receive path reads the table and the groups'
 * lists under RCU and takes a reference on each QP it finds, as
 * srdma_qp_get() does. Groups and attachments are freed after an RCU
 * grace period; a QP is unlinked from its groups before destroy_qp waits
 * for its own grace period and references.
 *
 * The first attachment to a group also joins the group on the netdev at
 * the IP level (IGMP for an IPv4-mapped GID, MLD for an IPv6 one), and
 * the last detach leaves it. srdma receives through the IP stack (a UDP
 * socket): the stack delivers a multicast datagram only for a group the
 * netdev joined, and joining also programs the netdev's L2 filter with
 * the group's MAC (dev_mc_add() from the IP layer). rdma_cm joins an
 * IPv4 group itself (cma_igmp_send()), but not an IPv6 one, and a verbs
 * user who calls ibv_attach_mcast() has nobody else to join for it; the
 * IP layer counts its members, so rdma_cm's join and ours coexist. The
 * join happens under rtnl, taken inside srdma_mcast_mutex: nothing takes
 * the mutex under rtnl.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hashtable.h>
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/jhash.h>
#include <linux/random.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>

#include "srdma.h"

/* A multicast group of one device. */
struct srdma_mcg {
	struct hlist_node node;		/* in srdma_mcg_hash */
	struct srdma_dev *sdev;
	union ib_gid mgid;
	/* Its srdma_mca: RCU readers, srdma_mcast_mutex writers. */
	struct list_head qps;
	u32 nqps;			/* attachments, under the mutex */
	/*
	 * The IP layer the group was joined on, counted; NULL if the netdev
	 * had none. Left only if still the netdev's: a netdev that lost its
	 * IP layer (unregistering, or an MTU too small for IPv6) lost the
	 * membership with it.
	 */
	struct in_device *in_dev;
	struct inet6_dev *in6_dev;
	struct rcu_head rcu;
};

/* One UD QP attached to one group. */
struct srdma_mca {
	struct list_head grp_node;	/* on mcg->qps */
	struct list_head qp_node;	/* on qp->mcast_list */
	struct srdma_qp *qp;
	struct srdma_mcg *mcg;
	struct rcu_head rcu;
};

#define SRDMA_MCG_HASH_BITS	10
/* Every device's groups: RCU readers, srdma_mcast_mutex writers. */
static DEFINE_HASHTABLE(srdma_mcg_hash, SRDMA_MCG_HASH_BITS);
/*
 * Serialises the writers of srdma_mcg_hash, of every group and of every
 * QP's mcast_list and device's mcg_count and mca_count. Process context;
 * rtnl nests inside it.
 */
static DEFINE_MUTEX(srdma_mcast_mutex);
/* Keeps local users from filling one bucket with groups on purpose. */
static u32 srdma_mcg_seed __read_mostly;

/**
 * srdma_mcast_init() - Seed the group table's hash.
 *
 * Context: Process context (module load).
 */
void srdma_mcast_init(void)
{
	srdma_mcg_seed = get_random_u32();
}

static u32 srdma_mcg_key(const struct net_device *ndev,
			 const union ib_gid *mgid)
{
	return jhash(mgid->raw, sizeof(mgid->raw),
		     srdma_mcg_seed ^ hash_ptr(ndev, 32));
}

/* The group @mgid of @ndev's device. RCU read side or the mutex held. */
static struct srdma_mcg *srdma_mcg_find(const struct net_device *ndev,
					const union ib_gid *mgid)
{
	struct srdma_mcg *mcg;

	hash_for_each_possible_rcu(srdma_mcg_hash, mcg, node,
				   srdma_mcg_key(ndev, mgid),
				   lockdep_is_held(&srdma_mcast_mutex)) {
		if (mcg->sdev->ndev == ndev &&
		    !memcmp(mcg->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return mcg;
	}
	return NULL;
}

/* @qp's attachment to @mcg, or NULL. Mutex held. */
static struct srdma_mca *srdma_mca_find(struct srdma_mcg *mcg,
					struct srdma_qp *qp)
{
	struct srdma_mca *mca;

	lockdep_assert_held(&srdma_mcast_mutex);
	list_for_each_entry(mca, &mcg->qps, grp_node)
		if (mca->qp == qp)
			return mca;
	return NULL;
}

/*
 * Join @mcg at the IP level of its device's netdev. The IP layer counts
 * its members and sends the IGMP or MLD reports. Mutex held; takes rtnl.
 */
static int srdma_mcg_ip_join(struct srdma_mcg *mcg)
{
	struct in6_addr *addr = (struct in6_addr *)mcg->mgid.raw;
	struct net_device *ndev = mcg->sdev->ndev;
	struct inet6_dev *in6_dev;
	int err = 0;

	lockdep_assert_held(&srdma_mcast_mutex);
	if (rtnl_lock_killable())
		return -EINTR;
	if (ipv6_addr_v4mapped(addr)) {
		mcg->in_dev = __in_dev_get_rtnl(ndev);
		if (mcg->in_dev) {
			in_dev_hold(mcg->in_dev);
			ip_mc_inc_group(mcg->in_dev, addr->s6_addr32[3]);
		} else {
			err = -ENODEV;
		}
	} else if (IS_ENABLED(CONFIG_IPV6)) {
		in6_dev = __in6_dev_get(ndev);
		err = in6_dev ? ipv6_dev_mc_inc(ndev, addr) : -ENODEV;
		if (!err) {
			in6_dev_hold(in6_dev);
			mcg->in6_dev = in6_dev;
		}
	} else {
		err = -EAFNOSUPPORT;
	}
	rtnl_unlock();
	return err;
}

/* Leave what srdma_mcg_ip_join() joined. Mutex held; takes rtnl. */
static void srdma_mcg_ip_leave(struct srdma_mcg *mcg)
{
	struct in6_addr *addr = (struct in6_addr *)mcg->mgid.raw;
	struct net_device *ndev = mcg->sdev->ndev;

	lockdep_assert_held(&srdma_mcast_mutex);
	rtnl_lock();
	if (mcg->in_dev) {
		if (__in_dev_get_rtnl(ndev) == mcg->in_dev)
			ip_mc_dec_group(mcg->in_dev, addr->s6_addr32[3]);
		in_dev_put(mcg->in_dev);
	}
	if (IS_ENABLED(CONFIG_IPV6) && mcg->in6_dev) {
		if (__in6_dev_get(ndev) == mcg->in6_dev)
			ipv6_dev_mc_dec(ndev, addr);
		in6_dev_put(mcg->in6_dev);
	}
	rtnl_unlock();
}

/*
 * A new group @mgid of @sdev, joined at the IP level but not yet in the
 * table. Mutex held.
 */
static struct srdma_mcg *srdma_mcg_new(struct srdma_dev *sdev,
				       const union ib_gid *mgid)
{
	struct srdma_mcg *mcg;
	int err;

	lockdep_assert_held(&srdma_mcast_mutex);
	mcg = kzalloc(sizeof(*mcg), GFP_KERNEL_ACCOUNT);
	if (!mcg)
		return ERR_PTR(-ENOMEM);
	mcg->sdev = sdev;
	mcg->mgid = *mgid;
	INIT_LIST_HEAD(&mcg->qps);
	err = srdma_mcg_ip_join(mcg);
	if (err) {
		srdma_dbg(sdev, "cannot join %pI6c on %s: %d\n", mgid->raw,
			  sdev->ndev->name, err);
		kfree(mcg);
		return ERR_PTR(err);
	}
	return mcg;
}

/*
 * Unlink @mca, and free its group with the last one. Readers may still
 * see both until a grace period has passed. Mutex held.
 */
static void srdma_mca_unlink(struct srdma_mca *mca)
{
	struct srdma_mcg *mcg = mca->mcg;
	struct srdma_dev *sdev = mcg->sdev;

	lockdep_assert_held(&srdma_mcast_mutex);
	list_del_rcu(&mca->grp_node);
	list_del(&mca->qp_node);
	kfree_rcu(mca, rcu);
	sdev->mca_count--;
	if (--mcg->nqps)
		return;
	hash_del_rcu(&mcg->node);
	sdev->mcg_count--;
	srdma_mcg_ip_leave(mcg);
	kfree_rcu(mcg, rcu);
}

/* Attach requests srdma refuses whatever the state of the groups. */
static int srdma_mcast_check(struct srdma_qp *qp, const union ib_gid *mgid)
{
	if (qp->ibqp.qp_type != IB_QPT_UD) {
		srdma_dbg_qp(qp, "multicast: not a UD QP\n");
		return -EINVAL;
	}
	if (!rdma_is_multicast_addr((struct in6_addr *)mgid->raw)) {
		srdma_dbg_qp(qp, "multicast: %pI6c is not a multicast GID\n",
			     mgid->raw);
		return -EINVAL;
	}
	return 0;
}

/*
 * A process may only make the netdev join groups in its own network
 * namespace, as a socket would, unless it may configure that one.
 * Kernel consumers (rdma_cm) made their own checks.
 */
static int srdma_mcast_may_join(struct srdma_qp *qp)
{
	struct net *net = dev_net(qp->sdev->ndev);

	if (qp->ibqp.uobject && !net_eq(current->nsproxy->net_ns, net) &&
	    !ns_capable(net->user_ns, CAP_NET_RAW)) {
		srdma_dbg_qp(qp, "multicast: the netdev is in another namespace\n");
		return -EPERM;
	}
	return 0;
}

/*
 * May @qp join @mcg (NULL: a new group)? Not twice, and within the
 * device's limits. Mutex held.
 */
static int srdma_mca_allowed(struct srdma_qp *qp, struct srdma_mcg *mcg)
{
	struct srdma_dev *sdev = qp->sdev;

	lockdep_assert_held(&srdma_mcast_mutex);
	if (mcg && srdma_mca_find(mcg, qp))
		return -EEXIST;
	if (sdev->mca_count >= SRDMA_MAX_MCAST_ATTACH) {
		srdma_dbg_qp(qp, "multicast: device has %u attachments\n",
			     sdev->mca_count);
		return -ENOMEM;
	}
	if (mcg && mcg->nqps >= SRDMA_MAX_MCAST_QP_ATTACH) {
		srdma_dbg_qp(qp, "multicast: group %pI6c has %u QPs\n",
			     mcg->mgid.raw, mcg->nqps);
		return -ENOMEM;
	}
	if (!mcg && sdev->mcg_count >= SRDMA_MAX_MCAST_GRP) {
		srdma_dbg_qp(qp, "multicast: device has %u groups\n",
			     sdev->mcg_count);
		return -ENOMEM;
	}
	return 0;
}

/**
 * srdma_attach_mcast() - ib_device_ops.attach_mcast: put a UD QP in a group.
 * @ibqp: the QP
 * @mgid: the group: an IPv4-mapped (224.0.0.0/4) or IPv6 (ff00::/8)
 *	  multicast GID
 * @mlid: ignored (RoCE has no LIDs)
 *
 * From now on the QP receives the datagrams to @mgid and the multicast
 * QPN that arrive on the device's netdev, in any state that receives.
 * The first QP in a group joins the group on the netdev (IGMP or MLD).
 * The uverbs layer never passes a group a QP is already in (it answers 0
 * itself); a kernel caller gets -EEXIST, so that its every successful
 * attach is one the core counts and one detach undoes.
 *
 * Context: Process context; sleeps; takes rtnl.
 * Return: 0; -EINVAL for a QP that is not UD or a GID that is not
 * multicast; -EEXIST if the QP is in the group; -ENOMEM when out of
 * memory or over max_mcast_grp, max_mcast_qp_attach or
 * max_total_mcast_qp_attach; -ENODEV or -EAFNOSUPPORT when the netdev
 * has no IP layer of the group's family; -EPERM for a process outside the
 * netdev's namespace without CAP_NET_RAW there; -EINTR when killed.
 */
int srdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	struct srdma_dev *sdev = qp->sdev;
	struct srdma_mcg *mcg, *new = NULL;
	struct srdma_mca *mca;
	int err;

	err = srdma_mcast_check(qp, mgid) ?: srdma_mcast_may_join(qp);
	if (err)
		return err;
	mca = kzalloc(sizeof(*mca), GFP_KERNEL_ACCOUNT);
	if (!mca)
		return -ENOMEM;
	/* Killable: the holder may wait long for rtnl. */
	err = mutex_lock_killable(&srdma_mcast_mutex);
	if (err)
		goto err_free;
	mcg = srdma_mcg_find(sdev->ndev, mgid);
	err = srdma_mca_allowed(qp, mcg);
	if (err)
		goto err_unlock;
	if (!mcg) {
		new = srdma_mcg_new(sdev, mgid);
		if (IS_ERR(new)) {
			err = PTR_ERR(new);
			goto err_unlock;
		}
		mcg = new;
	}
	mca->qp = qp;
	mca->mcg = mcg;
	list_add_tail_rcu(&mca->grp_node, &mcg->qps);
	list_add_tail(&mca->qp_node, &qp->mcast_list);
	mcg->nqps++;
	sdev->mca_count++;
	if (new) {
		/* Published complete, with its first QP. */
		hash_add_rcu(srdma_mcg_hash, &new->node,
			     srdma_mcg_key(sdev->ndev, mgid));
		sdev->mcg_count++;
	}
	mutex_unlock(&srdma_mcast_mutex);
	srdma_dbg_qp(qp, "attached to %pI6c\n", mgid->raw);
	return 0;

err_unlock:
	mutex_unlock(&srdma_mcast_mutex);
err_free:
	kfree(mca);
	return err;
}

/**
 * srdma_detach_mcast() - ib_device_ops.detach_mcast: take a UD QP out of
 * a group.
 * @ibqp: the QP
 * @mgid: the group
 * @mlid: ignored
 *
 * The last QP to leave a group leaves it on the netdev too. A datagram
 * being delivered at that moment may still complete a receive.
 *
 * Context: Process context; sleeps; takes rtnl.
 * Return: 0; -EINVAL for a QP that is not UD, a GID that is not
 * multicast, or a group the QP is not in (as the uverbs layer answers
 * for a group it has no record of).
 */
int srdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	struct srdma_mca *mca = NULL;
	struct srdma_mcg *mcg;
	int err;

	err = srdma_mcast_check(qp, mgid);
	if (err)
		return err;
	mutex_lock(&srdma_mcast_mutex);
	mcg = srdma_mcg_find(qp->sdev->ndev, mgid);
	if (mcg)
		mca = srdma_mca_find(mcg, qp);
	if (mca)
		srdma_mca_unlink(mca);
	mutex_unlock(&srdma_mcast_mutex);
	if (!mca) {
		srdma_dbg_qp(qp, "multicast: not attached to %pI6c\n",
			     mgid->raw);
		return -EINVAL;
	}
	srdma_dbg_qp(qp, "detached from %pI6c\n", mgid->raw);
	return 0;
}

/**
 * srdma_mcast_qp_destroy() - Detach a QP being destroyed from every group.
 * @qp: the QP, no longer reachable by its number
 *
 * The core detaches user QPs before it destroys them and refuses to
 * destroy a kernel QP that is still attached, so this finds nothing
 * unless a caller went around the core. The caller waits for an RCU
 * grace period afterwards: then the receive path cannot find @qp in a
 * group any more.
 *
 * Context: Process context; sleeps; may take rtnl.
 */
void srdma_mcast_qp_destroy(struct srdma_qp *qp)
{
	struct srdma_mca *mca, *tmp;

	/*
	 * Nothing attaches or detaches a QP while it is destroyed, so an
	 * empty list stays empty: the usual QP goes without the mutex, which
	 * rtnl nests in, and so may be destroyed with rtnl held.
	 */
	if (list_empty(&qp->mcast_list))
		return;
	mutex_lock(&srdma_mcast_mutex);
	list_for_each_entry_safe(mca, tmp, &qp->mcast_list, qp_node)
		srdma_mca_unlink(mca);
	mutex_unlock(&srdma_mcast_mutex);
}

/**
 * srdma_mcast_get() - The QPs a multicast datagram is for.
 * @ndev: the netdev it arrived on
 * @net_cookie: the namespace of the socket it arrived on
 * @mgid: its destination address, as a GID
 * @qps: filled with up to SRDMA_MAX_MCAST_QP_ATTACH QPs, each with a
 *	 reference to be dropped with srdma_qp_put()
 *
 * The QPs attached to group @mgid of the device bound to @ndev, if that
 * device lives in namespace @net_cookie. A QP being destroyed is left
 * out. A walk that races with a detach and an attach may see a QP twice,
 * or one more QP than a group can hold: never more than @qps holds.
 *
 * Context: Any context (softirq).
 * Return: the number of QPs in @qps.
 */
int srdma_mcast_get(const struct net_device *ndev, u64 net_cookie,
		    const union ib_gid *mgid, struct srdma_qp **qps)
{
	struct srdma_mcg *mcg;
	struct srdma_mca *mca;
	int n = 0;

	rcu_read_lock();
	mcg = srdma_mcg_find(ndev, mgid);
	if (!mcg || dev_net(ndev)->net_cookie != net_cookie)
		goto out_unlock;
	list_for_each_entry_rcu(mca, &mcg->qps, grp_node) {
		if (n == SRDMA_MAX_MCAST_QP_ATTACH)
			break;
		if (refcount_inc_not_zero(&mca->qp->ref))
			qps[n++] = mca->qp;
	}
out_unlock:
	rcu_read_unlock();
	return n;
}
