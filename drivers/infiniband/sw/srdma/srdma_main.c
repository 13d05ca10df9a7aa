// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma device and link setup: module init and exit, `rdma link add/delete`,
 * and following the bound netdev's life through the netdev notifier.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/delay.h>
#include <linux/if_arp.h>
#include <rdma/ib_addr.h>
#include <rdma/rdma_netlink.h>

#include "srdma.h"

MODULE_AUTHOR("The srdma authors");
MODULE_DESCRIPTION("Software RDMA device (RoCEv2) over any Ethernet netdev");
MODULE_LICENSE("Dual BSD/GPL");

/*
 * Guards srdma_dev_list, srdma_released_list and the ndev_gone/registered
 * flags of every device.
 * Never held across ib_register_device() or ib_unregister_device(): those
 * take rtnl, and the netdev notifier takes this mutex under rtnl.
 */
static DEFINE_MUTEX(srdma_dev_mutex);

/* Runs on-demand paging faults and other deferred transport work. */
struct workqueue_struct *srdma_wq;
/*
 * Runs requesters (send_work) at high priority, each QP's on its own CPU
 * (srdma_queue_send_work(); bound, not WQ_UNBOUND: see qp->tx_cpu): what
 * one run left over, what was posted with IRQs off, and, towards another
 * host, the runs an ACK or the pace timer starts (srdma_req_kick()). And
 * the READ responders (read_work), on the same CPU: a READ's responses
 * are its responder's sends. A run of either sends a budget of packets,
 * then queues itself again.
 */
struct workqueue_struct *srdma_tx_wq;
static LIST_HEAD(srdma_dev_list);
/*
 * Devices whose release (srdma_dealloc_driver()) has unlisted them, each
 * with a reference on its struct device, until srdma_reap_released()
 * makes sure that release is over. Under srdma_dev_mutex.
 */
static LIST_HEAD(srdma_released_list);

static struct srdma_dev *srdma_find_by_ndev(struct net_device *ndev)
{
	struct srdma_dev *sdev;

	lockdep_assert_held(&srdma_dev_mutex);
	list_for_each_entry(sdev, &srdma_dev_list, list)
		if (sdev->ndev == ndev)
			return sdev;
	return NULL;
}

/*
 * A test aid: milliseconds a device's release sleeps at its very end,
 * after it has left srdma's list of devices (at most 2000; 0, the
 * default, none), to widen the window in which module unload must wait
 * for it (tests/link.sh, unload_during_release).
 */
static unsigned int dealloc_delay_ms;
module_param(dealloc_delay_ms, uint, 0644);
MODULE_PARM_DESC(dealloc_delay_ms, "test aid: ms a device's release sleeps last, unlisted (max 2000, default 0)");

/**
 * srdma_dealloc_driver() - ib_device_ops.dealloc_driver: release a device.
 * @ibdev: the device, unregistered or never registered
 *
 * Releases what srdma_newlink() took. Runs for partially set up devices
 * too, via ib_dealloc_device().
 *
 * Context: Process context; takes srdma_dev_mutex.
 */
void srdma_dealloc_driver(struct ib_device *ibdev)
{
	struct srdma_dev *sdev = to_sdev(ibdev);
	unsigned int delay = min(READ_ONCE(dealloc_delay_ms), 2000U);

	/* Destroying the QPs detached them from every group. */
	WARN_ON_ONCE(sdev->mcg_count || sdev->mca_count);
	if (sdev->sockset)
		srdma_sockset_put(sdev->sockset);
	xa_destroy(&sdev->mr_xa);
	xa_destroy(&sdev->ah_xa);
	xa_destroy(&sdev->xsrq_xa);

	/*
	 * Off the live list, onto the released one, with a reference that
	 * keeps the device's memory. The release is not over when it leaves
	 * the live list: the rest of this function is module code, and a
	 * module unload that found no device (helper-72: the list left
	 * first, before the sockets closed) or that raced this function's
	 * last instructions (helper-73, under full preemption) would free
	 * the module under it. srdma_reap_released() waits for the core's
	 * unregistration, which holds its lock across this call, before
	 * module unload goes on. The netdev goes under the same lock:
	 * srdma_find_by_ndev() never matches a device whose netdev may be
	 * freed (and its address taken by a new one).
	 */
	mutex_lock(&srdma_dev_mutex);
	if (sdev->ndev)
		netdev_put(sdev->ndev, &sdev->ndev_tracker);
	sdev->ndev = NULL;
	get_device(&sdev->ibdev.dev);
	list_move_tail(&sdev->list, &srdma_released_list);
	mutex_unlock(&srdma_dev_mutex);
	if (delay) {
		/* The test waits for this line: the device is unlisted. */
		pr_info("%s: released, sleeping %u ms (dealloc_delay_ms)\n",
			dev_name(&ibdev->dev), delay);
		msleep(delay);
	}
}

/*
 * Drop the references of srdma_released_list, each once its device's
 * release is over. A release runs inside the core's unregistration, which
 * holds the device's unregistration lock across it (or, for a device that
 * never registered, inside srdma_newlink(), which module unload waits for
 * in rdma_link_unregister()), and ib_unregister_device() takes that lock:
 * it returns at once on a device already unregistered, after the other
 * caller is out of srdma's code. May sleep that long.
 *
 * Context: Process context, no srdma or RDMA core lock held.
 */
static void srdma_reap_released(void)
{
	struct srdma_dev *sdev;

	for (;;) {
		mutex_lock(&srdma_dev_mutex);
		sdev = list_first_entry_or_null(&srdma_released_list,
						struct srdma_dev, list);
		if (sdev)
			list_del_init(&sdev->list);
		mutex_unlock(&srdma_dev_mutex);
		if (!sdev)
			return;
		ib_unregister_device(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);
	}
}

/*
 * Can @ndev carry a device named @ibdev_name? The netlink request has no
 * room for a reason, so each refusal says why in the log, at error level:
 * the administrator asked for something srdma cannot do.
 */
static int srdma_link_check(const char *ibdev_name, struct net_device *ndev)
{
	if (ndev->type != ARPHRD_ETHER || (ndev->flags & IFF_LOOPBACK)) {
		pr_err("%s: %s is not an Ethernet device\n", ibdev_name,
		       ndev->name);
		return -EINVAL;
	}
	/*
	 * The core gives a RoCE device the addresses of its netdev and of
	 * that netdev's VLAN uppers as GIDs, but none of a VLAN device's own
	 * (it takes the VLAN's real device for the port's): bound to a VLAN,
	 * the device would have no IP GID and rdma_cm could not use it.
	 * Bound to the real device, it has the VLANs' addresses too.
	 */
	if (is_vlan_dev(ndev)) {
		pr_err("%s: %s is a VLAN device; bind %s, whose VLANs' addresses are GIDs too\n",
		       ibdev_name, ndev->name, vlan_dev_real_dev(ndev)->name);
		return -EINVAL;
	}
	/*
	 * rdma-core's rxe provider claims every device named rxe*, and the
	 * provider that loads first wins: such a name would work or not by
	 * chance. Any other name works with the stock tools.
	 */
	if (str_has_prefix(ibdev_name, "rxe")) {
		pr_err("%s: names starting with rxe belong to rdma_rxe's provider; choose another\n",
		       ibdev_name);
		return -EINVAL;
	}
	if (!iboe_get_mtu(READ_ONCE(ndev->mtu))) {
		pr_err("%s: %s has MTU %u, RoCE needs at least %u\n",
		       ibdev_name, ndev->name, READ_ONCE(ndev->mtu),
		       SRDMA_MIN_NETDEV_MTU);
		return -EINVAL;
	}
	return 0;
}

/*
 * Bind @sdev to @ndev and list it, unless @ndev has a device already or is
 * going away. Takes srdma_dev_mutex.
 */
static int srdma_dev_bind(struct srdma_dev *sdev, const char *ibdev_name,
			  struct net_device *ndev)
{
	int err = 0;

	mutex_lock(&srdma_dev_mutex);
	if (srdma_find_by_ndev(ndev)) {
		pr_err("%s: %s already has an srdma device\n", ibdev_name,
		       ndev->name);
		err = -EEXIST;
		goto out_unlock;
	}
	if (ndev->reg_state != NETREG_REGISTERED) {
		pr_err("%s: %s is going away\n", ibdev_name, ndev->name);
		err = -ENODEV;
		goto out_unlock;
	}
	sdev->ndev = ndev;
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);
	list_add_tail(&sdev->list, &srdma_dev_list);
out_unlock:
	mutex_unlock(&srdma_dev_mutex);
	return err;
}

/**
 * srdma_enable_driver() - ib_device_ops.enable_driver: registration is done.
 * @ibdev: the device being registered
 *
 * From now on the netdev notifier takes care of the device. If the netdev
 * started unregistering meanwhile, registration fails with -ENODEV. The
 * core also calls this when the device moves to another network namespace
 * (exclusive mode); only the first call does anything. The core
 * calls this inside ib_register_device() while it holds a reference on the
 * device, so a concurrent `rdma link delete` cannot free it under us (it
 * could between ib_register_device() returning and srdma_newlink() touching
 * the device again).
 *
 * Context: Process context; takes srdma_dev_mutex.
 * Return: 0, or -ENODEV if the netdev is going away.
 */
int srdma_enable_driver(struct ib_device *ibdev)
{
	struct srdma_dev *sdev = to_sdev(ibdev);
	bool again, gone;

	mutex_lock(&srdma_dev_mutex);
	again = sdev->registered;
	sdev->registered = true;
	gone = sdev->ndev_gone;
	mutex_unlock(&srdma_dev_mutex);
	if (again)
		return 0;	/* re-enabled after a namespace change */
	if (gone) {
		/* ib_register_device() unwinds; srdma_newlink() frees. */
		ibdev_err(&sdev->ibdev, "%s went away during link add\n",
			  sdev->ndev->name);
		return -ENODEV;
	}
	ibdev_info(&sdev->ibdev, "bound to %s\n", sdev->ndev->name);
	return 0;
}

/* rdma_link_ops.newlink: `rdma link add NAME type srdma netdev NDEV`. */
static int srdma_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct srdma_sockset *ss;
	struct srdma_dev *sdev;
	int err;

	/* Released devices wait here or for module unload to be freed. */
	srdma_reap_released();
	err = srdma_link_check(ibdev_name, ndev);
	if (err)
		return err;
	sdev = ib_alloc_device(srdma_dev, ibdev);
	if (!sdev)
		return -ENOMEM;
	INIT_LIST_HEAD(&sdev->list);
	srdma_init_device(sdev);

	err = srdma_dev_bind(sdev, ibdev_name, ndev);
	if (err)
		goto err_dealloc_device;
	ss = srdma_sockset_get(dev_net(ndev));
	if (IS_ERR(ss)) {
		err = PTR_ERR(ss);
		pr_err("%s: no UDP socket on %s: %d\n", ibdev_name, ndev->name,
		       err);
		goto err_dealloc_device;
	}
	sdev->sockset = ss;

	err = srdma_register_device(sdev, ibdev_name);
	if (err) {
		pr_err("%s: registering on %s failed: %d\n", ibdev_name,
		       ndev->name, err);
		goto err_dealloc_device;
	}
	return 0;	/* srdma_enable_driver() did the rest */

err_dealloc_device:
	/* Calls srdma_dealloc_driver(), which undoes the rest. */
	ib_dealloc_device(&sdev->ibdev);
	return err;
}

static struct rdma_link_ops srdma_link_ops = {
	.type = "srdma",
	.newlink = srdma_newlink,
};

static void srdma_port_event(struct srdma_dev *sdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &sdev->ibdev,
		.element.port_num = SRDMA_PORT_NUM,
		.event = type,
	};

	ib_dispatch_event(&ev);
}

static int srdma_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct srdma_dev *sdev;

	mutex_lock(&srdma_dev_mutex);
	sdev = srdma_find_by_ndev(ndev);
	if (!sdev || !sdev->registered) {
		if (sdev && event == NETDEV_UNREGISTER)
			sdev->ndev_gone = true;
		goto out_unlock;
	}

	/*
	 * A registration that failed after enable_driver, or an unregistration
	 * under way, has dropped the core's reference: leave that device
	 * alone. Holding one keeps the core from tearing it down while we
	 * queue work on it.
	 */
	if (!ib_device_try_get(&sdev->ibdev)) {
		if (event == NETDEV_UNREGISTER)
			sdev->ndev_gone = true;
		goto out_unlock;
	}
	switch (event) {
	case NETDEV_UNREGISTER:
		if (!sdev->ndev_gone)
			ibdev_info(&sdev->ibdev, "%s is going away\n",
				   ndev->name);
		sdev->ndev_gone = true;
		/*
		 * Each time: one that came while the core had the device
		 * disabled (a move to another rdma namespace) queued nothing,
		 * and the netdev, whose reference we hold, waits for it; it
		 * says it again every second. Queued twice, it runs once.
		 */
		ib_unregister_device_queued(&sdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		srdma_port_event(sdev,
				 srdma_port_state(sdev) == IB_PORT_ACTIVE ?
				 IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
		break;
	default:
		break;
	}
	ib_device_put(&sdev->ibdev);
out_unlock:
	mutex_unlock(&srdma_dev_mutex);
	return NOTIFY_DONE;
}

static struct notifier_block srdma_netdev_nb = {
	.notifier_call = srdma_netdev_event,
};

/*
 * Unregister every device we still have, waiting for any unregistration
 * already queued by the notifier or by `rdma link delete`, then for every
 * release to be over (srdma_reap_released()).
 */
static void srdma_remove_all(void)
{
	struct srdma_dev *sdev;

	for (;;) {
		mutex_lock(&srdma_dev_mutex);
		sdev = list_first_entry_or_null(&srdma_dev_list,
						struct srdma_dev, list);
		if (sdev)
			get_device(&sdev->ibdev.dev);
		mutex_unlock(&srdma_dev_mutex);
		if (!sdev)
			break;
		/* Returns once dealloc_driver has taken it off the list. */
		ib_unregister_device(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);
	}
	srdma_reap_released();
}

static int __init srdma_init(void)
{
	int err;

	srdma_tx_wq = alloc_workqueue("srdma_tx", WQ_HIGHPRI, 0);
	if (!srdma_tx_wq)
		return -ENOMEM;
	/* After srdma_tx_wq: its work may queue send_work. */
	srdma_wq = alloc_workqueue("srdma", WQ_UNBOUND, 0);
	if (!srdma_wq) {
		err = -ENOMEM;
		goto err_destroy_tx_wq;
	}
	srdma_loop_init();
	srdma_icrc_init();
	srdma_copy_init();
	srdma_mcast_init();
	err = srdma_direct_init();
	if (err)
		goto err_icrc_exit;

	err = srdma_net_init();
	if (err)
		goto err_direct_exit;

	err = register_netdevice_notifier(&srdma_netdev_nb);
	if (err)
		goto err_net_exit;

	rdma_link_register(&srdma_link_ops);
	return 0;

err_net_exit:
	srdma_net_exit();
err_direct_exit:
	srdma_direct_exit();
err_icrc_exit:
	srdma_copy_exit();
	srdma_icrc_exit();
	destroy_workqueue(srdma_wq);
err_destroy_tx_wq:
	destroy_workqueue(srdma_tx_wq);
	return err;
}

static void __exit srdma_exit(void)
{
	rdma_link_unregister(&srdma_link_ops);
	srdma_remove_all();
	unregister_netdevice_notifier(&srdma_netdev_nb);
	srdma_net_exit();
	srdma_loop_exit();
	srdma_direct_exit();
	srdma_copy_exit();
	srdma_icrc_exit();
	destroy_workqueue(srdma_wq);
	destroy_workqueue(srdma_tx_wq);
}

module_init(srdma_init);
module_exit(srdma_exit);
MODULE_ALIAS_RDMA_LINK("srdma");
MODULE_VERSION(SRDMA_VERSION);
