// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma queue pairs: creation, the IB state machine (modify/query),
 * destruction, flushing, and the QP number table.
 *
 * Life cycle: a QP holds one reference for its life, and each packet
 * being handled takes one more (srdma_qp_get()). The retransmit timer and
 * the send and read work take none: destroy_qp moves the QP to RESET under
 * its lock, after which none of them re-arms or queues itself, then stops
 * them synchronously. It also unpublishes the QPN, waits an RCU grace
 * period so that no lookup can find it any more, drops the life reference
 * and waits for the count to reach zero before the core frees the memory.
 *
 * modify_qp works as IBTA vol. 1 10.3 describes it: every attribute is
 * checked against the current state before anything changes, then the
 * attributes are applied and the QP moves to its new state, with one
 * helper per transition that has work of its own.
 */
#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/sched/isolation.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <net/route.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "srdma.h"

/* Largest values of the 3-bit retry counts and the 5-bit timer codes. */
#define SRDMA_MAX_RETRY_CNT	7
#define SRDMA_MAX_TIMER_CODE	31

/* QPN -> srdma_qp for every device: QPNs are unique module-wide. */
static DEFINE_XARRAY_ALLOC(srdma_qp_xa);
static u32 srdma_qp_next;		/* under srdma_qp_xa's lock */

/**
 * srdma_qp_get() - Find a QP by number and take a reference on it.
 * @qpn: the QP number, usually from a packet
 *
 * Context: Any context.
 * Return: the QP, to be released with srdma_qp_put(), or NULL if no QP has
 * that number or the one that has it is being destroyed.
 */
struct srdma_qp *srdma_qp_get(u32 qpn)
{
	struct srdma_qp *qp;

	rcu_read_lock();
	qp = xa_load(&srdma_qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}

/*
 * The GSI QPs, one per device and all numbered 1. srdma_gsi_mutex (process
 * context) serialises the writers of the list and of every device's gsi
 * pointer; the receive path walks the list under RCU.
 */
static LIST_HEAD(srdma_gsi_list);
static DEFINE_MUTEX(srdma_gsi_mutex);

/**
 * srdma_dev_has_gid() - is @gid one of @sdev's RoCEv2 GIDs?
 * @sdev: the device
 * @gid: the address, as a RoCEv2 GID
 * @ndev: only a GID of this netdev, or NULL: of any (its VLAN uppers')
 *
 * Context: Any context.
 */
bool srdma_dev_has_gid(struct srdma_dev *sdev, const union ib_gid *gid,
		       struct net_device *ndev)
{
	const struct ib_gid_attr *attr;

	attr = rdma_find_gid_by_port(&sdev->ibdev, gid,
				     IB_GID_TYPE_ROCE_UDP_ENCAP, SRDMA_PORT_NUM,
				     ndev);
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

/**
 * srdma_gsi_get() - Find the GSI QP a packet to QPN 1 is for.
 * @net_cookie: the network namespace the packet arrived in
 * @dgid: its destination address, as a RoCEv2 GID
 * @in: the netdev it came in through, NULL for srdma's local delivery
 *
 * That is the GSI QP of the device in that namespace whose GID table holds
 * @dgid (the MAD layer builds its reply from that GID, and could not
 * without it) and, for a packet from a wire, whose netdev it came in
 * through, directly or by a VLAN upper of it: Linux takes a packet to any
 * of its addresses on any interface, and two netdevs may share an address
 * (helper-78). A GID of a VLAN upper is taken from a wire only, through
 * that upper: the completion then carries its VLAN ID
 * (srdma_ud_recv_done()), without which the MAD layer finds no GID to
 * answer from; srdma's local delivery has none to give.
 *
 * Context: Any context.
 * Return: the QP with a reference, to be released with srdma_qp_put(), or
 * NULL.
 */
struct srdma_qp *srdma_gsi_get(u64 net_cookie, const union ib_gid *dgid,
			       struct net_device *in)
{
	struct srdma_qp *qp;

	rcu_read_lock();
	list_for_each_entry_rcu(qp, &srdma_gsi_list, gsi_node) {
		if (dev_net(qp->sdev->ndev)->net_cookie != net_cookie ||
		    (in && !srdma_ndev_or_vlan_over(in, qp->sdev->ndev)))
			continue;
		/* A GID of the netdev it came in through (see above). */
		if (!srdma_dev_has_gid(qp->sdev, dgid, in ?: qp->sdev->ndev))
			continue;
		if (!refcount_inc_not_zero(&qp->ref))
			break;		/* being destroyed */
		rcu_read_unlock();
		return qp;
	}
	rcu_read_unlock();
	return NULL;
}

/**
 * srdma_qp_put() - Drop a reference taken on a QP.
 * @qp: the QP
 *
 * The last one lets srdma_destroy_qp() go on.
 *
 * Context: Any context.
 */
void srdma_qp_put(struct srdma_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

/**
 * srdma_qp_drop_routes() - forget the routes of the QPs of a socket set
 * @ss: the socket set of a namespace that is going away, closed
 *
 * An IPv6 route belongs to its namespace (its dst_ops are in struct net),
 * which can be freed before a QP that holds one is destroyed: when the
 * netdev is moved out of the namespace rather than deleted (a NIC, unlike
 * a veth), nothing waits for srdma's device to go, and a ULP's QPs may be
 * destroyed long after (helper-87). Each QP of a device of @ss drops its
 * route now. With the IPv6 socket gone none is looked up again (and
 * srdma_qp_apply_av() installs none); an IPv4 route is looked up again in
 * the netdev's new namespace.
 *
 * Context: process context (the namespace's exit); takes each QP's
 * dst_lock.
 */
void srdma_qp_drop_routes(struct srdma_sockset *ss)
{
	struct srdma_qp *qp;
	unsigned long i;

	rcu_read_lock();	/* a QP is freed a grace period after unpublishing */
	xa_for_each(&srdma_qp_xa, i, qp) {
		if (!refcount_inc_not_zero(&qp->ref))
			continue;
		rcu_read_unlock();
		if (qp->sdev->sockset == ss) {
			spin_lock_bh(&qp->dst_lock);
			if (qp->dst)
				ibdev_info_ratelimited(&qp->sdev->ibdev,
						       "qp %u: route dropped, its namespace is going away\n",
						       qp->ibqp.qp_num);
			dst_release(qp->dst);
			qp->dst = NULL;
			srdma_qp_note_dst(qp);
			spin_unlock_bh(&qp->dst_lock);
		}
		srdma_qp_put(qp);
		rcu_read_lock();
	}
	rcu_read_unlock();
}

/**
 * srdma_qp_event() - Raise an asynchronous event on a QP.
 * @qp: the QP
 * @type: the event
 *
 * Context: Any context; called with or without the QP lock.
 */
void srdma_qp_event(struct srdma_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * A ring of entries of @hdr bytes, then @data bytes of SGEs (at least
 * @max_sge) or inline data.
 */
static int srdma_ring_init(struct srdma_ring *r, u32 max_wr, u32 max_sge,
			   size_t hdr, u32 data)
{
	u32 slots = roundup_pow_of_two(max(max_wr, 1U) + 1);

	r->max_wr = max_wr;
	r->max_sge = max_sge;
	r->slot_size = hdr + max_t(u32, data,
				   max_sge * sizeof(struct srdma_sge));
	r->mask = slots - 1;
	r->prod = 0;
	r->cons = 0;
	/*
	 * Charged to the creator's memory cgroup, like the mapped rings;
	 * sized by the caller, so failing is its ENOMEM, not a log entry.
	 */
	r->buf = __vmalloc(array_size(slots, r->slot_size),
			   GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN);
	return r->buf ? 0 : -ENOMEM;
}

/* Map the SQ and RQ of a user QP and tell the provider where they are. */
static int srdma_create_uqp(struct srdma_qp *qp, struct ib_udata *udata)
{
	struct srdma_ucontext *uctx = rdma_udata_to_drv_context(udata,
							struct srdma_ucontext, ibuc);
	struct srdma_create_qp_resp resp = {};
	int err;

	if (udata->outlen < sizeof(resp)) {
		srdma_dbg_qp(qp, "create_qp: response of %zu bytes, need %zu\n",
			     udata->outlen, sizeof(resp));
		return -EINVAL;
	}
	/* SGEs or inline data after the fixed part, as in the kernel's SQ. */
	BUILD_BUG_ON(sizeof(struct srdma_usge) != sizeof(struct srdma_sge));
	err = srdma_uring_create(&uctx->ibuc, &qp->usq, qp->sq.mask + 1,
				 sizeof(struct srdma_usend_wqe) +
				 max_t(u32, qp->max_inline, qp->sq.max_sge *
				       sizeof(struct srdma_usge)),
				 &resp.sq);
	if (err)
		return err;
	/*
	 * A QP with an SRQ has no RQ of its own to map, nor has an XRC
	 * initiator: resp.rq stays 0.
	 */
	if (!srdma_qp_srq(qp) && qp->ibqp.qp_type != IB_QPT_XRC_INI) {
		err = srdma_uring_create(&uctx->ibuc, &qp->urq,
					 qp->rq.mask + 1,
					 sizeof(struct srdma_urecv_wqe) +
					 qp->rq.max_sge *
					 sizeof(struct srdma_usge),
					 &resp.rq);
		if (err)
			goto err_destroy_usq;
		resp.rq.max_wr = qp->rq.max_wr;
		resp.rq.max_sge = qp->rq.max_sge;
	}
	resp.sq.max_wr = qp->sq.max_wr;
	resp.sq.max_sge = qp->sq.max_sge;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err_destroy_urq;
	return 0;

err_destroy_urq:
	srdma_uring_destroy(&qp->urq);
err_destroy_usq:
	srdma_uring_destroy(&qp->usq);
	return err;
}

/* Can srdma make a QP of @init? The caller's mistakes are logged as debug. */
static int srdma_qp_check_init(struct srdma_dev *sdev,
			       const struct ib_qp_init_attr *init, bool is_user)
{
	const struct ib_qp_cap *cap = &init->cap;

	/*
	 * XRC: the initiator posts its XRC SRQ numbers through the mapped
	 * SQ only; the core makes every target QP with no udata, user or not.
	 */
	if (init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UC &&
	    init->qp_type != IB_QPT_UD &&
	    init->qp_type != IB_QPT_XRC_TGT &&
	    (init->qp_type != IB_QPT_XRC_INI || !is_user) &&
	    (init->qp_type != IB_QPT_GSI || is_user)) {
		srdma_dbg(sdev, "create_qp: type %d not supported\n",
			  init->qp_type);
		return -EOPNOTSUPP;
	}
	if (init->create_flags) {
		srdma_dbg(sdev, "create_qp: create flags not supported\n");
		return -EOPNOTSUPP;
	}
	if (init->srq && (init->qp_type == IB_QPT_GSI ||
			  init->srq->srq_type != IB_SRQT_BASIC)) {
		srdma_dbg(sdev, "create_qp: an SRQ for a type %d QP\n",
			  init->qp_type);
		return -EOPNOTSUPP;
	}
	if (init->qp_type == IB_QPT_XRC_TGT) {
		/* No queue of its own: the core gives it no PD or CQ. */
		if (!init->xrcd)
			return -EINVAL;
	} else if (!init->send_cq ||
		   (!init->recv_cq && init->qp_type != IB_QPT_XRC_INI)) {
		return -EINVAL;
	}
	if (cap->max_send_wr > SRDMA_MAX_QP_WR ||
	    cap->max_recv_wr > SRDMA_MAX_QP_WR ||
	    cap->max_send_sge > SRDMA_MAX_SGE ||
	    cap->max_recv_sge > SRDMA_MAX_SGE ||
	    cap->max_inline_data > SRDMA_MAX_INLINE_DATA) {
		srdma_dbg(sdev, "create_qp: caps wr %u/%u sge %u/%u inline %u exceed the limits\n",
			  cap->max_send_wr, cap->max_recv_wr, cap->max_send_sge,
			  cap->max_recv_sge, cap->max_inline_data);
		return -EINVAL;
	}
	return 0;
}

/*
 * The CPU for the QP numbered @qpn (qp->tx_cpu): the QPN picks one of the
 * online CPUs that take unbound work (not isolcpus or nohz_full ones), so
 * that QPs spread over them. A CPU may go offline meanwhile (nothing
 * holds hotplug off here): then the CPU this runs on, which is online.
 */
static unsigned int srdma_qp_pick_cpu(u32 qpn)
{
	const struct cpumask *hk = housekeeping_cpumask(HK_TYPE_WQ);
	unsigned int n = cpumask_weight_and(cpu_online_mask, hk), cpu;

	/* cpumask_nth_and() finds none (>= nr_cpu_ids) after a CPU left. */
	cpu = n ? cpumask_nth_and(qpn % n, cpu_online_mask, hk) : nr_cpu_ids;
	return cpu < nr_cpu_ids ? cpu : raw_smp_processor_id();
}

/* A new QP in RESET, before its rings and number. */
static void srdma_qp_init(struct srdma_qp *qp, struct srdma_dev *sdev,
			  const struct ib_qp_init_attr *init, bool is_user)
{
	qp->sdev = sdev;
	qp->is_user = is_user;
	spin_lock_init(&qp->lock);
	spin_lock_init(&qp->dst_lock);
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	refcount_set(&qp->ref, 1);
	init_completion(&qp->released);
	timer_setup(&qp->retrans_timer, srdma_retrans_timer, 0);
	qp->rx_req_at = jiffies - HZ;	/* none yet */
	hrtimer_init(&qp->pace_timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	qp->pace_timer.function = srdma_pace_timer;
	INIT_WORK(&qp->read_work, srdma_read_work);
	INIT_WORK(&qp->send_work, srdma_send_work);
	INIT_WORK(&qp->odp_work, srdma_odp_qp_work);
	INIT_LIST_HEAD(&qp->mcast_list);
	qp->state = IB_QPS_RESET;
	qp->mtu = SRDMA_DEFAULT_PATH_MTU;	/* until RTR sets one */
	qp->resp_opcode = SRDMA_OP_ACK;	/* no message in progress */
	qp->rd_gap_psn = U32_MAX;		/* never a valid PSN */
	qp->rd_end_psn = U32_MAX;		/* no READ or atomic yet */
}

/*
 * The kernel's SQ and RQ, sized by @cap (at least one SGE each). An SQ
 * entry holds the SGEs or the inline data: max_inline_data becomes all
 * the room there is, at least what was asked for (a multiple of an SGE's
 * size, at most SRDMA_MAX_INLINE_DATA).
 */
static int srdma_qp_alloc_rings(struct srdma_qp *qp, struct ib_qp_cap *cap)
{
	int err;

	cap->max_send_sge = max(cap->max_send_sge, 1U);
	cap->max_recv_sge = max(cap->max_recv_sge, 1U);
	qp->max_inline = max_t(u32, round_up(cap->max_inline_data,
					     sizeof(struct srdma_sge)),
			       cap->max_send_sge * sizeof(struct srdma_sge));
	err = srdma_ring_init(&qp->sq, cap->max_send_wr, cap->max_send_sge,
			      sizeof(struct srdma_send_wqe), qp->max_inline);
	if (err)
		return err;
	err = srdma_ring_init(&qp->rq, cap->max_recv_wr, cap->max_recv_sge,
			      sizeof(struct srdma_recv_wqe), 0);
	if (err)
		vfree(qp->sq.buf);
	return err;
}

/*
 * Reserve a QPN (not yet published) and derive the UDP source port. A
 * device has one GSI QP: -EBUSY for a second. The last QPN is every
 * multicast packet's, never a QP's.
 */
static int srdma_qp_alloc_qpn(struct srdma_qp *qp)
{
	u32 qpn = SRDMA_GSI_QPN;
	int err = 0;

	if (qp->ibqp.qp_type == IB_QPT_GSI) {
		mutex_lock(&srdma_gsi_mutex);
		if (qp->sdev->gsi)
			err = -EBUSY;
		else
			qp->sdev->gsi = qp;
		mutex_unlock(&srdma_gsi_mutex);
	} else {
		err = xa_alloc_cyclic(&srdma_qp_xa, &qpn, NULL,
				      XA_LIMIT(SRDMA_MIN_QPN,
					       SRDMA_MCAST_QPN - 1),
				      &srdma_qp_next, GFP_KERNEL);
	}
	if (err < 0)
		return err;
	qp->ibqp.qp_num = qpn;
	qp->tx_cpu = srdma_qp_pick_cpu(qpn);
	qp->sport = htons(SRDMA_SPORT_BASE |
			  hash_32(qpn, SRDMA_SPORT_BITS));
	return 0;
}

/* Let packets find the QP. */
static void srdma_qp_publish(struct srdma_qp *qp)
{
	if (qp->ibqp.qp_type != IB_QPT_GSI) {
		/* The entry was reserved: this allocates nothing. */
		xa_store(&srdma_qp_xa, qp->ibqp.qp_num, qp, GFP_KERNEL);
		return;
	}
	mutex_lock(&srdma_gsi_mutex);
	list_add_tail_rcu(&qp->gsi_node, &srdma_gsi_list);
	mutex_unlock(&srdma_gsi_mutex);
}

/*
 * Give the QPN back, published or only reserved. Lookups may still hold
 * the QP until an RCU grace period has passed.
 */
static void srdma_qp_free_qpn(struct srdma_qp *qp, bool published)
{
	if (qp->ibqp.qp_type != IB_QPT_GSI) {
		xa_erase(&srdma_qp_xa, qp->ibqp.qp_num);
		return;
	}
	mutex_lock(&srdma_gsi_mutex);
	if (published)
		list_del_rcu(&qp->gsi_node);
	qp->sdev->gsi = NULL;
	mutex_unlock(&srdma_gsi_mutex);
}

/*
 * A QP on an SRQ: receives come from the SRQ, one at a time, into an RQ
 * of one receive as large as the SRQ's; the caps asked for the RQ are
 * ignored, and reported as 0. The lkeys of a receive are checked against
 * the QP's PD: an SRQ of another PD would have its receives judged by the
 * wrong one.
 */
static int srdma_qp_srq_caps(struct srdma_dev *sdev, struct ib_qp *ibqp,
			     struct ib_qp_init_attr *init)
{
	if (!init->srq)
		return 0;
	if (init->srq->pd != ibqp->pd) {
		srdma_dbg(sdev, "create_qp: an SRQ of another PD\n");
		return -EINVAL;
	}
	init->cap.max_recv_wr = 1;
	init->cap.max_recv_sge = to_ssrq(init->srq)->rq.max_sge;
	return 0;
}

/*
 * The queues of the XRC QPs: an initiator sends only, its RQ is never
 * used; a target only answers, and takes each receive from the XRC SRQ a
 * request names, into an RQ of one receive as large as any SRQ's.
 */
static void srdma_qp_xrc_caps(struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;

	if (init->qp_type == IB_QPT_XRC_TGT) {
		*cap = (struct ib_qp_cap){
			.max_recv_wr = 1,
			.max_recv_sge = SRDMA_MAX_SGE,
		};
	} else if (init->qp_type == IB_QPT_XRC_INI) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
}

/**
 * srdma_create_qp() - ib_device_ops.create_qp: make an RC, UC, UD, GSI or
 * XRC QP in RESET.
 * @ibqp: the QP, allocated by the core
 * @init: the attributes asked for; the caps are updated to what was made
 * @udata: the provider's command and response, NULL for a kernel QP
 *
 * A user QP also gets its SQ and RQ mapped into the process. An RC, UC or UD
 * QP may take its receives from an SRQ (@init->srq): it then gets an RQ
 * of one receive of the SRQ's size, and none mapped. An XRC initiator is
 * a user QP with an SQ only; an XRC target has no queue for its user.
 *
 * Context: Process context; sleeps.
 * Return: 0; -EOPNOTSUPP for a type or feature srdma lacks; -EINVAL for
 * caps over the limits, an SRQ of another PD or a short response buffer;
 * -ENOMEM, also when the device has its limit of QPs; -EBUSY when no QPN
 * is free or the device has a GSI QP already.
 */
int srdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibqp->device);
	struct srdma_qp *qp = to_sqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	int err;

	err = srdma_udata_no_input(sdev, udata, "create_qp") ?:
	      srdma_qp_srq_caps(sdev, ibqp, init) ?:
	      srdma_qp_check_init(sdev, init, !!udata);
	if (err)
		return err;
	srdma_qp_xrc_caps(init);
	err = srdma_res_get(sdev, SRDMA_RES_QP);
	if (err)
		return err;
	/*
	 * XRC domains exist only in user space: every XRC target QP is a
	 * process's, though the core makes it without udata. Its receives
	 * then use user MRs only, as any user QP's.
	 */
	srdma_qp_init(qp, sdev, init,
		      !!udata || init->qp_type == IB_QPT_XRC_TGT);
	err = srdma_qp_alloc_rings(qp, cap);
	if (err)
		goto err_put_res;
	err = srdma_qp_alloc_qpn(qp);
	if (err)
		goto err_free_rings;
	qp->uid = srdma_mr_new_serial();
	cap->max_inline_data = qp->max_inline;
	if (init->srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (init->qp_type == IB_QPT_XRC_TGT)
		*cap = (struct ib_qp_cap){};

	if (udata) {
		err = srdma_create_uqp(qp, udata);
		if (err)
			goto err_erase_qpn;
	}

	/* Publish only now that the QP is complete. */
	srdma_qp_publish(qp);
	srdma_dbg_qp(qp, "created, sq %u x %u sge (inline %u), rq %u x %u sge\n",
		     cap->max_send_wr, cap->max_send_sge, qp->max_inline,
		     cap->max_recv_wr, cap->max_recv_sge);
	return 0;

err_erase_qpn:
	srdma_qp_free_qpn(qp, false);
err_free_rings:
	vfree(qp->rq.buf);
	vfree(qp->sq.buf);
err_put_res:
	srdma_res_put(sdev, SRDMA_RES_QP);
	return err;
}

/**
 * srdma_qp_flush_sq() - Complete everything posted to a QP's SQ as flushed.
 * @qp: the QP, in ERR or SQE
 *
 * Every unfinished send completes with IB_WC_WR_FLUSH_ERR. A mapped SQ is
 * flagged first, so that the provider rings the doorbell for whatever it
 * posts from then on, and what it holds is taken and flushed too.
 *
 * Context: QP lock held (BHs disabled).
 */
void srdma_qp_flush_sq(struct srdma_qp *qp)
{
	struct srdma_send_wqe *swqe;

	lockdep_assert_held(&qp->lock);
	if (qp->usq.map) {
		/*
		 * Flag first, then a full barrier (pairing with the
		 * provider's prod store and fence), then take what was
		 * posted so far.
		 */
		WRITE_ONCE(qp->usq.hdr->flags, SRDMA_RING_F_QP_ERR);
		WRITE_ONCE(qp->usq.hdr->no_doorbell, 0);
		smp_mb();	/* flags before reading prod */
		/*
		 * Garbage found in SQE is what it is in RTS: the QP to ERR
		 * (whose flush comes back here and flushes the rest).
		 */
		if (srdma_sq_pull(qp) && qp->state == IB_QPS_SQE) {
			srdma_qp_error(qp);
			return;
		}
	}
	/* Signed distance: a bad index can never make this loop run long. */
	while ((s32)(qp->sq.prod - qp->sq.cons) > 0) {
		swqe = srdma_ring_slot(&qp->sq, qp->sq.cons);
		srdma_req_complete(qp, swqe, IB_WC_WR_FLUSH_ERR);
	}
	qp->sq.cons = qp->sq.prod;
	qp->sq_next = qp->sq.cons;
	qp->sq_next_off = 0;
}

/**
 * srdma_qp_flush() - Complete everything posted to a QP as flushed.
 * @qp: the QP, in ERR
 *
 * Every posted receive and every unfinished send completes with
 * IB_WC_WR_FLUSH_ERR. A user QP's mapped rings are flagged first, so that
 * the provider rings the doorbell for whatever it posts from then on. The
 * receive an XRC target QP holds completes on the CQ of the XRC SRQ it
 * came from, if that still exists.
 *
 * Context: QP lock held (BHs disabled).
 */
void srdma_qp_flush(struct srdma_qp *qp)
{
	struct srdma_srq *xsrq = NULL;
	struct srdma_recv_wqe *rwqe;
	struct srdma_cq *rcq;
	struct ib_wc wc;

	lockdep_assert_held(&qp->lock);
	if (srdma_qp_is_xrc_tgt(qp)) {
		xsrq = srdma_qp_held_srq(qp);
		rcq = xsrq ? to_scq(xsrq->ibsrq.ext.cq) : NULL;
		qp->xrc_rq_srqn = 0;
		qp->xrc_srqn = 0;
	} else {
		rcq = to_scq(qp->ibqp.recv_cq);
	}
	if (qp->urq.map) {	/* none with an SRQ */
		/* As for the SQ in srdma_qp_flush_sq(). */
		WRITE_ONCE(qp->urq.hdr->flags, SRDMA_RING_F_QP_ERR);
		smp_mb();	/* flags before reading prod */
		srdma_rq_pull(qp);
	}
	qp->recv_active = false;
	/* Signed distances: a bad index can never make these loops run long. */
	while ((s32)(qp->rq.prod - qp->rq.cons) > 0) {
		rwqe = srdma_ring_slot(&qp->rq, qp->rq.cons);
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = rwqe->wr_id;
		wc.status = IB_WC_WR_FLUSH_ERR;
		wc.opcode = IB_WC_RECV;
		wc.qp = &qp->ibqp;
		if (rcq)
			srdma_cq_post(rcq, &wc, false);
		qp->rq.cons++;
	}
	if (xsrq)
		srdma_srq_put(xsrq);
	qp->rq.cons = qp->rq.prod;
	srdma_uring_consumed(&qp->urq, qp->rq.cons);
	srdma_qp_flush_sq(qp);
	qp->rd_outstanding = 0;
	qp->write_left = 0;
	srdma_rd_queue_reset(qp);
}

/*
 * A QP with an SRQ just went to ERR and was flushed: it takes no more
 * receives from the SRQ (IBTA vol. 1 11.6.3.3, Last WQE Reached), so its
 * consumer may destroy it. QP lock held.
 */
static void srdma_qp_last_wqe(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	/* Not an XRC target: no SRQ is its own, nor waits for it. */
	if (qp->ibqp.srq)
		srdma_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

/**
 * srdma_qp_error_event() - Move a QP to ERR by itself and say why.
 * @qp: the QP
 * @type: the asynchronous event to raise
 *
 * From any state but RESET and ERR: stop the retransmit timer, flush
 * everything posted, then raise @type (and IB_EVENT_QP_LAST_WQE_REACHED
 * for a QP with an SRQ).
 *
 * Context: QP lock held (BHs disabled).
 */
void srdma_qp_error_event(struct srdma_qp *qp, enum ib_event_type type)
{
	lockdep_assert_held(&qp->lock);
	if (qp->state == IB_QPS_ERR || qp->state == IB_QPS_RESET)
		return;
	srdma_dbg_qp(qp, "state %d -> ERR\n", qp->state);
	qp->state = IB_QPS_ERR;
	qp->attr.qp_state = IB_QPS_ERR;
	del_timer(&qp->retrans_timer);
	srdma_qp_flush(qp);
	srdma_qp_event(qp, type);
	srdma_qp_last_wqe(qp);
}

/**
 * srdma_qp_to_sqe() - A send of a UD or UC QP failed: to SQE.
 * @qp: the QP, whose failed work request has just completed
 *
 * IBTA 10.3.1 (Send Queue Error): a local error on a send of an
 * unreliable QP stops its SQ only. The rest of the SQ, and what is posted
 * to it until the consumer moves the QP back to RTS (SQE to RTS, as the
 * MAD layer does for QP1 after a failed send), completes as flushed,
 * while the RQ goes on receiving. From RTS and SQD; from any other state
 * but ERR and RESET, and for a connected QP, ERR.
 *
 * Context: QP lock held (BHs disabled).
 */
void srdma_qp_to_sqe(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	if (!(srdma_qp_is_ud(qp) || srdma_qp_is_uc(qp)) ||
	    (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD)) {
		srdma_qp_error(qp);
		return;
	}
	srdma_dbg_qp(qp, "state %d -> SQE\n", qp->state);
	qp->state = IB_QPS_SQE;
	qp->attr.qp_state = IB_QPS_SQE;
	srdma_qp_flush_sq(qp);
}

/**
 * srdma_qp_error() - Move a QP to ERR by itself, as a fatal error.
 * @qp: the QP
 *
 * srdma_qp_error_event() with IB_EVENT_QP_FATAL.
 *
 * Context: QP lock held (BHs disabled).
 */
void srdma_qp_error(struct srdma_qp *qp)
{
	srdma_qp_error_event(qp, IB_EVENT_QP_FATAL);
}

/*
 * Transition to RESET: drop everything posted and all transport state. The
 * receive an XRC target QP holds is its XRC SRQ's owner's, maybe another
 * process: it completes as flushed on the SRQ's CQ, not silently dropped.
 */
static void srdma_qp_to_reset(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	srdma_odp_qp_reset(qp);
	if (srdma_qp_is_xrc_tgt(qp))
		srdma_qp_flush(qp);
	qp->sq.prod = 0;
	qp->rq.prod = 0;
	if (qp->usq.map) {
		/*
		 * Everything posted is dropped: user space goes on from its
		 * own producer indices, whatever they are.
		 */
		qp->sq.prod = READ_ONCE(qp->usq.hdr->prod);
		WRITE_ONCE(qp->usq.hdr->flags, 0);
		WRITE_ONCE(qp->usq.hdr->no_doorbell, 0);
		qp->usq.bad = false;
	}
	if (qp->urq.map) {	/* none with an SRQ */
		qp->rq.prod = READ_ONCE(qp->urq.hdr->prod);
		WRITE_ONCE(qp->urq.hdr->flags, 0);
		qp->urq.bad = false;
	}
	qp->sq.cons = qp->sq.prod;
	qp->rq.cons = qp->rq.prod;
	srdma_uring_consumed(&qp->usq, qp->sq.cons);
	srdma_uring_consumed(&qp->urq, qp->rq.cons);
	qp->sq_next = qp->sq.prod;
	qp->sq_next_off = 0;
	qp->direct_ack.valid = false;	/* never left set, but never kept */
	qp->direct_placed = false;
	qp->rd_outstanding = 0;
	qp->rd_reqs = 0;
	srdma_rd_queue_reset(qp);
	if (qp->rd_hist)	/* READs of an earlier life are never repeated */
		memset(qp->rd_hist, 0,
		       (qp->rd_hist_mask + 1) * sizeof(*qp->rd_hist));
	/* The timer of an earlier life must not fire into this one. */
	del_timer(&qp->retrans_timer);
	qp->recv_active = false;
	qp->write_left = 0;
	qp->nak_sent = false;
	qp->sq_error = false;
	qp->rnr_wait = false;
	qp->credits_on = false;
	qp->credit_wait = false;
	qp->ssn = 0;
	qp->msn = 0;
	qp->resp_opcode = SRDMA_OP_ACK;
	qp->rd_end_psn = U32_MAX;
	qp->uc_dropping = false;
	qp->xrc_srqn = 0;
	qp->xrc_rq_srqn = 0;
}

/*
 * Transition to RTS: from RTR, arm the retry counters; from SQE (a UD or
 * UC QP, srdma_qp_to_sqe()), take sends again, and doorbells only where
 * needed.
 */
static void srdma_qp_to_rts(struct srdma_qp *qp, enum ib_qp_state cur)
{
	lockdep_assert_held(&qp->lock);
	if (cur == IB_QPS_RTR) {
		qp->retry_left = qp->attr.retry_cnt;
		qp->rnr_left = qp->attr.rnr_retry;
	}
	if (cur == IB_QPS_SQE) {
		qp->sq_error = false;
		if (qp->usq.map)
			WRITE_ONCE(qp->usq.hdr->flags, 0);
	}
}

/*
 * Transition to SQD (from @cur): if asked to, say once, as soon as it is
 * so, that the SQ is drained (srdma_sq_drained_event()). Within SQD
 * (SQD to SQD) nothing is said again.
 */
static void srdma_qp_to_sqd(struct srdma_qp *qp, enum ib_qp_state cur)
{
	lockdep_assert_held(&qp->lock);
	if (cur == IB_QPS_SQD)
		return;
	qp->sqd_told = false;
	qp->state = IB_QPS_SQD;		/* what the event looks at */
	srdma_sq_drained_event(qp);
}

/* Transition to ERR, asked for: flush everything posted. */
static void srdma_qp_to_err(struct srdma_qp *qp)
{
	bool was_err = qp->state == IB_QPS_ERR;

	lockdep_assert_held(&qp->lock);
	qp->state = IB_QPS_ERR;
	qp->attr.qp_state = IB_QPS_ERR;
	srdma_qp_flush(qp);
	if (!was_err)
		srdma_qp_last_wqe(qp);
}

/*
 * Resolve the AV of @attr into @av and a route (*@dstp, *@cookie), without
 * touching the QP: the caller publishes all of it at once. A connected
 * QP's peer is one QP, never a multicast group or an IPv4 broadcast.
 * Process context.
 */
static int srdma_resolve_av(struct srdma_qp *qp, struct ib_qp_attr *attr,
			    struct srdma_av *av, struct dst_entry **dstp,
			    u32 *cookie)
{
	struct rtable *rt;
	int err;

	err = srdma_av_from_attr(qp->sdev, &attr->ah_attr, av);
	if (err)
		return err;
	if (rdma_is_multicast_addr((struct in6_addr *)
				   rdma_ah_read_grh(&attr->ah_attr)->dgid.raw)) {
		srdma_dbg_qp(qp, "modify_qp: a multicast destination\n");
		return -EINVAL;
	}
	/* The host's routing, not the caller's input: worth an error. */
	err = srdma_route_lookup(qp->sdev, av, dstp, cookie);
	if (err) {
		srdma_err_qp(qp, "no route to the destination: %d\n", err);
		return err;
	}
	/* Nor a broadcast address, limited or directed. */
	rt = av->ipv6 ? NULL : container_of(*dstp, struct rtable, dst);
	if (rt && (ipv4_is_lbcast(av->daddr.v4) ||
		   rt->rt_type == RTN_BROADCAST)) {
		srdma_dbg_qp(qp, "modify_qp: a broadcast destination\n");
		dst_release(*dstp);
		*dstp = NULL;
		return -EINVAL;
	}
	return 0;
}

/* Is each attribute of @mask in its range, whatever the state? */
static int srdma_qp_check_attr(struct srdma_qp *qp, struct ib_qp_attr *attr,
			       int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != SRDMA_PORT_NUM)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > SRDMA_MAX_RETRY_CNT)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > SRDMA_MAX_RETRY_CNT)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > SRDMA_MAX_TIMER_CODE)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) &&
	    attr->min_rnr_timer > SRDMA_MAX_TIMER_CODE)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SRDMA_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SRDMA_MAX_RD_ATOM)
		return -EINVAL;
	/*
	 * Local write and on-demand paging mean nothing for a QP; accepted,
	 * as hardware drivers do (rdma-core's tests pass an ODP MR's flags).
	 */
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC |
				       IB_ACCESS_LOCAL_WRITE |
				       IB_ACCESS_ON_DEMAND)))
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SRDMA_QPN_MASK)
		return -EINVAL;
	if ((mask & IB_QP_RQ_PSN) && attr->rq_psn > SRDMA_PSN_MASK)
		return -EINVAL;
	if ((mask & IB_QP_SQ_PSN) && attr->sq_psn > SRDMA_PSN_MASK)
		return -EINVAL;
	return 0;
}

/*
 * A modify_qp in the making: what was checked and prepared without the QP
 * lock, applied under it. After the apply, @dst and @jobs hold what was
 * replaced, for the caller to release.
 */
struct srdma_qp_mod {
	enum ib_qp_state cur;		/* the state it was checked against */
	enum ib_qp_state new;
	enum ib_mtu mtu;		/* IB_QP_PATH_MTU, netdev permitting */
	struct srdma_av av;		/* IB_QP_AV, and its route: */
	struct dst_entry *dst;		/* counted */
	u32 cookie;
	struct srdma_read_job *jobs;	/* IB_QP_MAX_DEST_RD_ATOMIC */
	u32 njobs;			/* the queue's size; history is twice */
};

/*
 * Is @mask allowed from the QP's current state to the one asked for, and
 * can the netdev carry the path MTU? Fills in @m's states and MTU.
 */
static int srdma_qp_check_state(struct srdma_qp *qp, struct ib_qp_attr *attr,
				int mask, struct srdma_qp_mod *m)
{
	spin_lock_bh(&qp->lock);
	m->cur = qp->state;
	spin_unlock_bh(&qp->lock);
	/*
	 * The caller's idea of the current state is only a claim: it must be
	 * the QP's real state, or the checks below are checks of a fiction.
	 */
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != m->cur) {
		srdma_dbg_qp(qp, "modify_qp: claims state %d, is in %d\n",
			     attr->cur_qp_state, m->cur);
		return -EINVAL;
	}
	m->new = (mask & IB_QP_STATE) ? attr->qp_state : m->cur;

	if (!ib_modify_qp_is_ok(m->cur, m->new, qp->ibqp.qp_type, mask)) {
		srdma_dbg_qp(qp, "modify_qp: %d -> %d with mask %#x not allowed\n",
			     m->cur, m->new, mask);
		return -EINVAL;
	}
	if (mask & IB_QP_PATH_MTU) {
		/* Never above what the netdev carries without fragments. */
		m->mtu = min_t(enum ib_mtu, attr->path_mtu,
			       iboe_get_mtu(READ_ONCE(qp->sdev->ndev->mtu)));
		/* The netdev's configuration, not the caller's: an error. */
		if (!m->mtu) {
			srdma_err_qp(qp, "modify_qp: %s's MTU %u is too small for RoCE\n",
				     qp->sdev->ndev->name,
				     READ_ONCE(qp->sdev->ndev->mtu));
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The sleeping work, done before the QP lock is taken: resolve the AV and
 * its route, allocate the READ job queue. On failure nothing is left held.
 */
static int srdma_qp_prepare(struct srdma_qp *qp, struct ib_qp_attr *attr,
			    int mask, struct srdma_qp_mod *m)
{
	int err;

	if (mask & IB_QP_AV) {
		err = srdma_resolve_av(qp, attr, &m->av, &m->dst, &m->cookie);
		if (err)
			return err;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		/* Room for twice the limit, see srdma_resp_read(). */
		m->njobs = 2 * max_t(u32, attr->max_dest_rd_atomic, 1) + 1;
		m->njobs = roundup_pow_of_two(m->njobs);
		/*
		 * The queue, then the history of twice its size: up to
		 * 86 KB at the largest limit, so not necessarily contiguous.
		 */
		m->jobs = kvcalloc(3 * m->njobs, sizeof(*m->jobs),
				   GFP_KERNEL_ACCOUNT);
		if (!m->jobs) {
			if (m->dst)
				dst_release(m->dst);
			m->dst = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Under the QP lock: is the state still the one @m was checked against?
 * If the QP went to ERR by itself meanwhile, a move to ERR or RESET still
 * makes sense from there; anything else was asked of a state the QP is no
 * longer in.
 */
static int srdma_qp_recheck_state(struct srdma_qp *qp, int mask,
				  struct srdma_qp_mod *m)
{
	lockdep_assert_held(&qp->lock);
	if (qp->state == m->cur)
		return 0;
	if ((m->new != IB_QPS_ERR && m->new != IB_QPS_RESET) ||
	    (mask & ~IB_QP_STATE) ||
	    !ib_modify_qp_is_ok(qp->state, m->new, qp->ibqp.qp_type, mask))
		return -EINVAL;
	m->cur = qp->state;
	return 0;
}

/*
 * A new limit of READs and atomics the responder takes. The queue of @m
 * replaces a smaller one (@m keeps the old one to free); a queue as large
 * or larger stays, as admission goes by the limit (srdma_rd_queue_max(),
 * twice the limit).
 * What was accepted and not yet answered, and the history that duplicates
 * are answered from, move over at the same positions: an SQD -> SQD change
 * while READs are queued must not drop them (the requester's resend would
 * then match nothing and be dropped until its retries ran out). The read
 * work copies the job it sends, and goes on with it as long as rd_gen,
 * left alone here, says the queue was not reset.
 */
static void srdma_qp_apply_rd_jobs(struct srdma_qp *qp,
				   struct ib_qp_attr *attr,
				   struct srdma_qp_mod *m)
{
	struct srdma_read_job *hist;
	u32 i, j, n;

	lockdep_assert_held(&qp->lock);
	qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (qp->rd_jobs && m->njobs <= qp->rd_mask + 1) {
		/*
		 * More queued than the lower limit admits: admission would
		 * then fail or evict one at a time, and an atomic be carried
		 * out with no room for its answer (helper-90). Drop the
		 * queue; the history stays, so the requester's resends are
		 * answered again from it (READs) or replayed (atomics).
		 */
		if (srdma_rd_queued(qp) > srdma_rd_queue_max(qp))
			srdma_rd_queue_reset(qp);
		return;
	}
	hist = m->jobs + m->njobs;
	if (qp->rd_jobs) {
		/* At most the old size is queued, which the new one holds. */
		n = min_t(u32, srdma_rd_queued(qp), qp->rd_mask + 1);
		for (i = 0; i < n; i++) {
			j = qp->rd_cons + i;
			m->jobs[j & (m->njobs - 1)] = qp->rd_jobs[j & qp->rd_mask];
		}
		/* Oldest first; the new history is twice as large or more. */
		n = qp->rd_hist_mask + 1;
		for (i = 0; i < n; i++)
			hist[i] = qp->rd_hist[(qp->rd_hist_next + i) &
					      qp->rd_hist_mask];
		qp->rd_hist_next = n;
	} else {
		qp->rd_hist_next = 0;
		srdma_rd_queue_reset(qp);
	}
	swap(qp->rd_jobs, m->jobs);
	qp->rd_mask = m->njobs - 1;
	qp->rd_hist = hist;
	qp->rd_hist_mask = 2 * m->njobs - 1;
}

/* Swap in the path of @m; @m keeps the old route to release. */
static void srdma_qp_apply_av(struct srdma_qp *qp, struct ib_qp_attr *attr,
			      struct srdma_qp_mod *m)
{
	lockdep_assert_held(&qp->lock);
	/* Keep the addresses; the core owns the sgid_attr ref. */
	qp->attr.ah_attr = attr->ah_attr;
	qp->attr.ah_attr.grh.sgid_attr = NULL;
	/* Addresses and route together: no packet sees half of it. */
	spin_lock(&qp->dst_lock);
	if (m->dst && m->av.ipv6 &&
	    !rcu_access_pointer(qp->sdev->sockset->sk6)) {
		/* Its namespace is going away: srdma_qp_drop_routes(). */
		dst_release(m->dst);
		m->dst = NULL;
	}
	qp->av = m->av;
	swap(qp->dst, m->dst);
	qp->dst_cookie = m->cookie;
	srdma_qp_note_dst(qp);
	spin_unlock(&qp->dst_lock);
	srdma_req_forget_min_rtt(qp);
}

/* Apply the checked attributes of @mask, all but the state. */
static void srdma_qp_apply_attr(struct srdma_qp *qp, struct ib_qp_attr *attr,
				int mask, struct srdma_qp_mod *m)
{
	lockdep_assert_held(&qp->lock);
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU) {
		qp->attr.path_mtu = m->mtu;
		qp->mtu = ib_mtu_enum_to_int(m->mtu);
	}
	if (mask & IB_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		srdma_qp_apply_rd_jobs(qp, attr, m);
	if (mask & IB_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_RQ_PSN) {
		qp->attr.rq_psn = attr->rq_psn;
		qp->epsn = attr->rq_psn;
	}
	if (mask & IB_QP_SQ_PSN) {
		qp->attr.sq_psn = attr->sq_psn;
		srdma_req_init_window(qp, attr->sq_psn);
	}
	if (mask & IB_QP_AV)
		srdma_qp_apply_av(qp, attr, m);
	if (mask & IB_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IB_QP_QKEY)
		qp->attr.qkey = attr->qkey;
}

/* Move the QP from @m's current state to its new one. */
static void srdma_qp_apply_state(struct srdma_qp *qp, struct srdma_qp_mod *m)
{
	lockdep_assert_held(&qp->lock);
	switch (m->new) {
	case IB_QPS_RESET:
		srdma_qp_to_reset(qp);
		break;
	case IB_QPS_RTS:
		srdma_qp_to_rts(qp, m->cur);
		break;
	case IB_QPS_ERR:
		srdma_qp_to_err(qp);
		break;
	case IB_QPS_SQD:
		srdma_qp_to_sqd(qp, m->cur);
		break;
	default:	/* INIT, RTR: their attributes are all there is */
		break;
	}
	qp->state = m->new;
	qp->attr.qp_state = m->new;
	srdma_dbg_qp(qp, "state %d -> %d\n", m->cur, m->new);
}

/**
 * srdma_modify_qp() - ib_device_ops.modify_qp: set attributes, change state.
 * @ibqp: the QP
 * @attr: the attributes
 * @mask: which of @attr to apply (IB_QP_*)
 * @udata: the provider's command, which must carry no private data
 *
 * Every attribute is checked against the current state before anything
 * changes; then they are applied and the QP moves to its new state, all
 * under the QP lock. A QP that is RTS afterwards resumes sending.
 *
 * Context: Process context; sleeps (route lookup, allocation).
 * Return: 0; -EOPNOTSUPP for private data or unknown mask bits; -EINVAL
 * for an attribute out of range, a transition or attribute the state does
 * not allow, a claimed current state that is not the QP's, a netdev MTU
 * too small, or an address vector srdma cannot use; -ENOMEM; or the
 * route lookup's error.
 */
int srdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	struct srdma_qp_mod m = {};
	int err;

	if (udata && udata->inlen)
		return -EOPNOTSUPP;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	err = srdma_qp_check_attr(qp, attr, mask);
	if (err) {
		srdma_dbg_qp(qp, "modify_qp: bad attribute (mask %#x)\n", mask);
		return err;
	}
	err = srdma_qp_check_state(qp, attr, mask, &m);
	if (err)
		return err;
	err = srdma_qp_prepare(qp, attr, mask, &m);
	if (err)
		return err;

	spin_lock_bh(&qp->lock);
	err = srdma_qp_recheck_state(qp, mask, &m);
	if (!err) {
		srdma_qp_apply_attr(qp, attr, mask, &m);
		if (mask & IB_QP_STATE)
			srdma_qp_apply_state(qp, &m);
		/* Resume sending when leaving SQD for RTS. */
		if (qp->state == IB_QPS_RTS)
			srdma_req_run(qp);
	}
	spin_unlock_bh(&qp->lock);
	/* What was replaced, or on failure what was prepared. */
	kvfree(m.jobs);
	if (m.dst)
		dst_release(m.dst);
	return err;
}

/**
 * srdma_query_qp() - ib_device_ops.query_qp: report a QP's attributes.
 * @ibqp: the QP
 * @attr: filled with every attribute (@mask is not needed to pick them)
 * @mask: the attributes asked for
 * @init: filled with the creation attributes
 *
 * Context: Process context.
 * Return: 0.
 */
int srdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct srdma_qp *qp = to_sqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	spin_lock_bh(&qp->lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->sq_psn = qp->next_psn;
	attr->rq_psn = qp->epsn;
	attr->sq_draining = qp->state == IB_QPS_SQD && !srdma_sq_drained(qp);
	spin_unlock_bh(&qp->lock);

	attr->ah_attr.grh.sgid_attr = NULL;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->port_num = SRDMA_PORT_NUM;
	attr->cap.max_send_wr = qp->sq.max_wr;
	/* An SRQ's QP has no RQ of its own to report. */
	attr->cap.max_recv_wr = srdma_qp_srq(qp) ? 0 : qp->rq.max_wr;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_sge = srdma_qp_srq(qp) ? 0 : qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;
	if (srdma_qp_is_xrc_tgt(qp))	/* no queue of its own */
		attr->cap = (struct ib_qp_cap){};

	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	return 0;
}

/*
 * A test aid: milliseconds destroy_qp sleeps first, for a user QP (at most
 * 10000; 0, the default, none), so that a QP outlives what its teardown
 * races with (tests/link.sh, netns_moved_nic: its namespace).
 */
static unsigned int destroy_delay_ms;
module_param(destroy_delay_ms, uint, 0644);
MODULE_PARM_DESC(destroy_delay_ms, "test aid: ms destroy_qp of a user QP sleeps first (max 10000, default 0)");

/**
 * srdma_destroy_qp() - ib_device_ops.destroy_qp: tear a QP down.
 * @ibqp: the QP
 * @udata: the provider's command, unused
 *
 * Unpublishes the QPN, detaches the QP from its multicast groups, stops
 * the requester, the responder, the timer, the read work and the send
 * work, and waits for every reference to go before freeing.
 *
 * Context: Process context; sleeps.
 * Return: 0.
 */
int srdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct srdma_qp *qp = to_sqp(ibqp);
	unsigned int delay = min(READ_ONCE(destroy_delay_ms), 10000U);

	if (unlikely(delay) && qp->is_user) {
		ibdev_info(&qp->sdev->ibdev, "qp %u: destroy sleeps %u ms (destroy_delay_ms)\n",
			   qp->ibqp.qp_num, delay);
		msleep(delay);
	}
	srdma_qp_free_qpn(qp, true);
	srdma_mcast_qp_destroy(qp);
	synchronize_rcu();		/* no lookup finds it from here on */

	spin_lock_bh(&qp->lock);
	qp->state = IB_QPS_RESET;	/* stop the requester and responder */
	if (srdma_qp_is_xrc_tgt(qp))	/* its held receive: see to_reset */
		srdma_qp_flush(qp);
	spin_unlock_bh(&qp->lock);
	del_timer_sync(&qp->retrans_timer);
	hrtimer_cancel(&qp->pace_timer);
	cancel_work_sync(&qp->read_work);
	cancel_work_sync(&qp->send_work);

	srdma_qp_put(qp);
	wait_for_completion(&qp->released);
	/*
	 * Again, now that nothing holds the QP: a holder (a packet, the
	 * ODP fault work) may have queued them after the first cancel.
	 */
	cancel_work_sync(&qp->read_work);
	cancel_work_sync(&qp->send_work);

	if (qp->dst)
		dst_release(qp->dst);
	kvfree(qp->rd_jobs);
	srdma_uring_destroy(&qp->urq);
	srdma_uring_destroy(&qp->usq);
	vfree(qp->rq.buf);
	vfree(qp->sq.buf);
	srdma_res_put(qp->sdev, SRDMA_RES_QP);
	srdma_dbg_qp(qp, "destroyed\n");
	return 0;
}
