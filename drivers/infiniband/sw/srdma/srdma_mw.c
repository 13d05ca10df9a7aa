// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma memory windows, for user space: ibv_alloc_mw(), the BIND_MW work
 * request that binds a window to a range of a user MR (ibv_bind_mw() for
 * type 1, posted by the provider; IBV_WR_BIND_MW for type 2), and the
 * invalidations of type 2 windows, local (LOCAL_INV) and remote (SEND
 * with Invalidate).
 *
 * A window is an srdma_mr of type SRDMA_MR_WINDOW in the device's MR
 * table, so an rkey lookup finds MRs and windows alike. It starts FREE
 * (no access); a bind makes it VALID with a new key (the same index, the
 * low 8 bits the process's choice), rights, range and registration
 * serial, and takes a reference on the MR it is bound to, counted in that
 * MR's mw_binds so that the MR cannot be deregistered under it. A type 2
 * window serves only the QP it was bound through (type 2B); a type 1
 * window any QP of its PD. Every check and every copy through a window is
 * made under the window's lock, with its serial checked again, so nothing
 * moves through a binding once an invalidation, a rebind or the
 * deallocation has returned.
 */
#include "srdma.h"

/* The rights a window may give; a window is never zero-based here. */
#define SRDMA_MW_ACCESS (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_ATOMIC)

/**
 * srdma_alloc_mw() - ib_device_ops.alloc_mw: a new memory window.
 * @ibmw: the window, allocated by the core, with its PD and type set
 * @udata: the provider's command, unused
 *
 * The window gets its key (an index shared with the MRs, and a random
 * variant) and starts FREE, bound to nothing.
 *
 * Context: Process context.
 * Return: 0, -EOPNOTSUPP for a type other than 1 and 2, -ENOMEM, also when
 * the device has its limit of windows.
 */
int srdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct srdma_dev *sdev = to_sdev(ibmw->device);
	struct srdma_mw *mw = to_smw(ibmw);
	struct srdma_mr *win;
	int err;

	err = srdma_udata_no_input(sdev, udata, "alloc_mw");
	if (err)
		return err;
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2) {
		srdma_dbg(sdev, "alloc_mw: type %d not supported\n",
			  ibmw->type);
		return -EOPNOTSUPP;
	}
	err = srdma_res_get(sdev, SRDMA_RES_MW);
	if (err)
		return err;
	win = kzalloc(sizeof(*win), GFP_KERNEL_ACCOUNT);
	if (!win) {
		err = -ENOMEM;
		goto err_uncount;
	}
	win->type = SRDMA_MR_WINDOW;
	win->state = SRDMA_MR_FREE;
	win->mw_type = ibmw->type;
	win->ibmr.device = ibmw->device;
	win->ibmr.pd = ibmw->pd;
	spin_lock_init(&win->lock);
	err = srdma_mr_add(sdev, win);
	if (err)
		goto err_free_win;
	mw->win = win;
	ibmw->rkey = win->key;
	srdma_dbg(sdev, "memory window %#x of type %d\n", win->key,
		  ibmw->type);
	return 0;

err_free_win:
	kfree(win);
err_uncount:
	srdma_res_put(sdev, SRDMA_RES_MW);
	return err;
}

/* Undo a bind's hold on user MR @base: one window fewer, the reference. */
static void srdma_mw_unbind_base(struct srdma_mr *base)
{
	spin_lock_bh(&base->lock);
	base->mw_binds--;
	spin_unlock_bh(&base->lock);
	srdma_mr_put(base);
}

/*
 * Take window @win's binding away: @state (FREE or INVALID) with a new
 * serial, so that nothing checked against the binding gets through. The
 * MR it was bound to, or NULL, for srdma_mw_unbind_base() once the
 * window's lock is dropped. Window lock held.
 */
static struct srdma_mr *srdma_mw_clear(struct srdma_mr *win,
				       enum srdma_mr_state state)
{
	struct srdma_mr *base = win->base;

	lockdep_assert_held(&win->lock);
	win->state = state;
	WRITE_ONCE(win->serial, srdma_mr_new_serial());
	win->base = NULL;
	return base;
}

/**
 * srdma_dealloc_mw() - ib_device_ops.dealloc_mw: deallocate a window.
 * @ibmw: the window
 *
 * Unpublishes its key and makes it INVALID, so no packet gets through it
 * from now on; lets go of its MR; waits for the packets that still hold
 * the window, then frees it after a grace period (lookups may still be
 * reading it).
 *
 * Context: Process context; sleeps.
 * Return: 0.
 */
int srdma_dealloc_mw(struct ib_mw *ibmw)
{
	struct srdma_dev *sdev = to_sdev(ibmw->device);
	struct srdma_mr *win = to_smw(ibmw)->win;
	struct srdma_mr *base;

	xa_erase(&sdev->mr_xa, win->key >> SRDMA_MR_KEY_BITS);
	spin_lock_bh(&win->lock);
	base = srdma_mw_clear(win, SRDMA_MR_INVALID);
	spin_unlock_bh(&win->lock);
	if (base)
		srdma_mw_unbind_base(base);
	srdma_mr_put(win);
	wait_for_completion(&win->released);
	kfree_rcu(win, rcu);
	srdma_res_put(sdev, SRDMA_RES_MW);
	return 0;
}

/*
 * The window whose index @key has (any variant), with a reference, or
 * NULL if the index names no window.
 */
static struct srdma_mr *srdma_mw_get(struct srdma_dev *sdev, u32 key)
{
	struct srdma_mr *win;

	rcu_read_lock();
	win = xa_load(&sdev->mr_xa, key >> SRDMA_MR_KEY_BITS);
	if (win && (win->type != SRDMA_MR_WINDOW ||
		    !refcount_inc_not_zero(&win->ref)))
		win = NULL;
	rcu_read_unlock();
	return win;
}

/*
 * The user MR of @lkey that @qp binds a window to, for [@addr, +@len)
 * with @access: of the QP's PD, registered with the right to bind
 * windows, holding the range, with local write for remote write and
 * atomics (IBTA 10.6.7.2.2); returned with a reference, not yet counted
 * (srdma_mw_count_base()). NULL if not.
 */
static struct srdma_mr *srdma_mw_find_base(struct srdma_qp *qp, u32 lkey,
					   u64 addr, u64 len, int access)
{
	struct srdma_mr *base = srdma_mr_get(qp->sdev, lkey, false);

	if (!base)
		return NULL;
	/* Not on an on-demand paging MR: its copies fault through the MR. */
	if (base->type == SRDMA_MR_USER && !base->odp &&
	    base->ibmr.pd == qp->ibqp.pd &&
	    (base->access & IB_ACCESS_MW_BIND) &&
	    !srdma_mr_range_ok(base, addr, len, 0) &&
	    (!(access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) ||
	     (base->access & IB_ACCESS_LOCAL_WRITE)))
		return base;
	srdma_dbg_qp(qp, "BIND_MW: MR %#x refused for %#llx+%#llx, access %#x\n",
		     lkey, addr, len, access);
	srdma_mr_put(base);
	return NULL;
}

/*
 * Count a bind in user MR @base's mw_binds, unless it is being
 * deregistered or registered again. Taken inside the window's lock, so
 * that a bind the window refuses is never counted. False if not.
 */
static bool srdma_mw_count_base(struct srdma_mr *base)
{
	bool ok;

	spin_lock_bh(&base->lock);
	ok = base->state == SRDMA_MR_VALID;
	if (ok)
		base->mw_binds++;
	spin_unlock_bh(&base->lock);
	return ok;
}

/**
 * srdma_mw_bind() - Carry out a BIND_MW work request.
 * @qp: the QP that runs it, a user RC QP
 * @wqe: the work request: the window's new key in rkey, its address in
 *	 remote_addr, length in reg_len, rights in reg_access, the MR's
 *	 lkey in bind_lkey, all as the process posted them
 *
 * The window (found by the index of the new key) must be of the QP's PD;
 * a type 2 window must be FREE, a type 1 window may be bound again, and
 * a type 1 bind of length 0 unbinds it (FREE). The rights may include
 * local write, which a window ignores, but not zero-based addressing.
 * The binding replaces the old one at once: packets checked against the
 * old one fail their next check or copy.
 *
 * Context: QP lock held (the requester); takes the window's lock, and the
 * MR's inside it.
 * Return: 0, or -EINVAL for a bind that is refused.
 */
int srdma_mw_bind(struct srdma_qp *qp, struct srdma_send_wqe *wqe)
{
	int access = wqe->reg_access & ~IB_ACCESS_LOCAL_WRITE;
	struct srdma_mr *win, *base = NULL, *old = NULL;
	u64 addr = wqe->remote_addr, len = wqe->reg_len;
	u32 key = wqe->rkey;
	int err = -EINVAL;

	lockdep_assert_held(&qp->lock);
	win = srdma_mw_get(qp->sdev, key);
	if (!win || win->ibmr.pd != qp->ibqp.pd) {
		srdma_dbg_qp(qp, "BIND_MW: key %#x names no window of this PD\n",
			     key);
		goto out_put_win;
	}
	if (access & ~SRDMA_MW_ACCESS) {
		srdma_dbg_qp(qp, "BIND_MW: access %#x not supported\n",
			     wqe->reg_access);
		goto out_put_win;
	}
	if (len || win->mw_type == IB_MW_TYPE_2) {
		base = srdma_mw_find_base(qp, wqe->bind_lkey, addr, len,
					  access);
		if (!base)
			goto out_put_win;
	}
	spin_lock_bh(&win->lock);
	if (win->state == SRDMA_MR_INVALID ||
	    (win->mw_type == IB_MW_TYPE_2 && win->state != SRDMA_MR_FREE)) {
		srdma_dbg_qp(qp, "BIND_MW: window %#x is %s\n", win->key,
			     win->state == SRDMA_MR_INVALID ? "going away" :
			     "bound");
	} else if (base && !srdma_mw_count_base(base)) {
		srdma_dbg_qp(qp, "BIND_MW: MR %#x is going away\n",
			     wqe->bind_lkey);
	} else {
		old = win->base;
		win->base = base;
		base = NULL;
		win->iova = addr;
		win->length = len;
		win->access = access;
		win->mw_qp_uid = qp->uid;
		WRITE_ONCE(win->key, key);
		WRITE_ONCE(win->serial, srdma_mr_new_serial());
		win->state = win->base ? SRDMA_MR_VALID : SRDMA_MR_FREE;
		err = 0;
	}
	spin_unlock_bh(&win->lock);
	if (old)
		srdma_mw_unbind_base(old);
	if (base)			/* refused: found, never counted */
		srdma_mr_put(base);
out_put_win:
	if (win)
		srdma_mr_put(win);
	return err;
}

/*
 * Invalidate window @win, found by @key: a type 2 window of @qp's PD,
 * VALID with key @key; a peer (@remote) may invalidate only a window
 * bound through @qp. Type 1 windows are unbound by binding them again,
 * never invalidated. 0, -EINVAL or -EACCES. Puts @win.
 */
static int srdma_mw_invalidate(struct srdma_qp *qp, struct srdma_mr *win,
			       u32 key, bool remote)
{
	struct srdma_mr *base = NULL;
	int err = 0;

	spin_lock_bh(&win->lock);
	if (win->ibmr.pd != srdma_qp_pd(qp) || win->key != key ||
	    win->mw_type != IB_MW_TYPE_2 || win->state != SRDMA_MR_VALID)
		err = -EINVAL;
	else if (remote && win->mw_qp_uid != qp->uid)
		err = -EACCES;
	if (!err)
		base = srdma_mw_clear(win, SRDMA_MR_FREE);
	spin_unlock_bh(&win->lock);
	if (base)
		srdma_mw_unbind_base(base);
	srdma_mr_put(win);
	return err;
}

/**
 * srdma_invalidate() - Invalidate a key: LOCAL_INV, or SEND with
 * Invalidate received.
 * @qp: the QP whose LOCAL_INV runs, or that received the SEND
 * @key: the key to invalidate
 * @remote: a SEND with Invalidate from the QP's peer
 *
 * A type 2 memory window (srdma_mw_invalidate()) or a fast-registration
 * MR (srdma_fr_invalidate()); user MRs are never invalidated.
 *
 * Context: QP lock held; takes the window's or MR's lock.
 * Return: 0, -EINVAL if @key names nothing that can be invalidated,
 * -EACCES if the peer may not invalidate it.
 */
int srdma_invalidate(struct srdma_qp *qp, u32 key, bool remote)
{
	struct srdma_mr *win = srdma_mw_get(qp->sdev, key);
	int err;

	lockdep_assert_held(&qp->lock);
	if (!win)
		return srdma_fr_invalidate(qp, key, remote);
	err = srdma_mw_invalidate(qp, win, key, remote);
	if (err)
		srdma_dbg_qp(qp, "%s invalidation of window %#x refused\n",
			     remote ? "remote" : "local", key);
	return err;
}
