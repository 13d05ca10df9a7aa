// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma on-demand paging: user MRs registered with IB_ACCESS_ON_DEMAND,
 * whose pages are not pinned.
 *
 * The RDMA core's ib_umem_odp tracks the range with an MMU interval
 * notifier and maps pages through hmm_range_fault(). srdma keeps its own
 * view in mr->pages[], one entry per PAGE_SIZE page of the registration:
 * a page while it is present with the access the MR needs, NULL when not.
 * Every copy to or from an on-demand MR looks its pages up and moves the
 * bytes under mr->lock (srdma_mr.c), so that it can run in softirq, where
 * the umem's own mutex cannot be taken.
 *
 * - A fault (process context) maps the range with the umem mutex held,
 *   then fills pages[] under mr->lock, then drops the mutex.
 * - An invalidation (the notifier) takes the umem mutex, clears pages[]
 *   under mr->lock, and only then unmaps: once it returns, no copy can
 *   reach an old page, and none is in progress.
 * - A copy that finds a page missing moves nothing it has not already
 *   moved and fails with -EAGAIN; its caller schedules a fault
 *   (srdma_odp_fault_later()) and retries: the responder answers the
 *   request with an RNR NAK, so that the requester sends it again after
 *   its RNR timer; the requester stops and is run again, or sends again,
 *   once the fault is done (enum srdma_odp_kick). READ responses are built
 *   in the read work, which stops and is run again after the fault.
 * - A fault that fails (memory not mapped, not writable) is recorded on
 *   the QP it was queued for, for the role (requester or responder) that
 *   missed; that role's next miss there is an access error instead of
 *   another fault (srdma_odp_fault_later()).
 * - Each QP has at most one fault queued for its requester (its odp_work)
 *   and one for its responder in its current life (a few over its lives):
 *   a flood of misses, from any number of QPs, queues no more than that
 *   per QP, so none can keep another QP's fault from being queued. A
 *   responder's fault does not hold its QP: the QP may be destroyed while
 *   the fault waits on its memory (a file system that does not answer),
 *   and the fault finds it again by number when it is done. The read work
 *   stops for a READ response's missing pages and is run again when the
 *   responder's fault is done (srdma_read_kick()).
 *
 * Lock order: umem_mutex, then the QP lock is never taken inside it;
 * mr->lock nests inside both.
 */
#include <linux/hmm.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <rdma/ib_umem_odp.h>

#include "srdma.h"

/*
 * A failed fault is reported within this long or forgotten: longer than
 * the longest RNR timer (655 ms) a requester waits before it sends again.
 */
#define SRDMA_ODP_FAIL_TTL	(2 * HZ)
/*
 * Responder faults of one QP queued or running at most, over its lives: a
 * reset lets the QP queue a new one without waiting for one that hangs
 * (memory of a file system that does not answer), a few times.
 */
#define SRDMA_ODP_QP_FAULTS	4
/* A fault brings in at least this much around the missing bytes. */
#define SRDMA_ODP_FAULT_SPAN	(256UL << 10)
/*
 * Faults map at most this much at a time, and lists are filled or cleared
 * this many pages at a time under the MR lock, so that a large MR never
 * keeps bottom halves off for long.
 */
#define SRDMA_ODP_FAULT_CHUNK	(4UL << 20)
#define SRDMA_ODP_LOCK_PAGES	1024

static unsigned int odp_max_mb = 16384;
module_param(odp_max_mb, uint, 0444);
MODULE_PARM_DESC(odp_max_mb,
		 "MiB registered on demand per device at most (default 16384)");

/* The user address of the first page of @mr's registration. */
static u64 srdma_odp_base(struct srdma_mr *mr)
{
	return mr->odp->umem.address & PAGE_MASK;
}

/*
 * Forget the pages of [@start, @end) (user addresses): no copy finds them
 * from now on. umem_mutex held: the pages stay mapped until the caller
 * unmaps them, after this returns, so the lock may be dropped between
 * batches.
 */
static void srdma_odp_forget(struct srdma_mr *mr, u64 start, u64 end)
{
	u64 base = srdma_odp_base(mr), addr;
	unsigned long i, n = 0;

	start = max(start & PAGE_MASK, base);
	spin_lock_bh(&mr->lock);
	for (addr = start; addr < end; addr += PAGE_SIZE) {
		i = (addr - base) >> PAGE_SHIFT;
		if (i >= mr->npages)
			break;
		mr->pages[i] = NULL;
		if (++n % SRDMA_ODP_LOCK_PAGES == 0) {
			spin_unlock_bh(&mr->lock);
			cond_resched();
			spin_lock_bh(&mr->lock);
		}
	}
	spin_unlock_bh(&mr->lock);
}

/*
 * The MMU notifier: the kernel is about to change or unmap part of the
 * range. Nothing may touch those pages once this returns.
 */
static bool srdma_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp,
					       notifier);
	struct srdma_mr *mr;
	u64 start, end;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(odp), range->start);
	end = min_t(u64, ib_umem_end(odp), range->end);
	mr = odp->private;	/* set under umem_mutex once pages[] exists */
	if (mr && start < end) {
		srdma_odp_forget(mr, start, end);
		srdma_count(to_sdev(mr->ibmr.device), SRDMA_CNT_ODP_INVAL);
	}
	ib_umem_odp_unmap_dma_pages(odp, start, end);
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops srdma_odp_ops = {
	.invalidate = srdma_odp_invalidate,
};

/**
 * srdma_odp_reg() - Set up an on-demand paging MR.
 * @mr: the MR, its iova and length set
 * @start: the user address of the memory
 * @length: its length
 * @access: IB_ACCESS_* flags, with IB_ACCESS_ON_DEMAND
 *
 * No page is mapped: each comes in on first use, or through
 * ibv_advise_mr(). An implicit MR (the whole address space) is not
 * supported. The lists of pages (the RDMA core's and srdma's, 24 bytes a
 * page) are kernel memory that nothing pins: a device takes odp_max_mb of
 * registrations at most.
 *
 * Context: Process context; sleeps.
 * Return: 0, -EOPNOTSUPP if the kernel has no on-demand paging or for an
 * implicit MR, -ENOMEM (also over odp_max_mb), or the umem's error.
 */
int srdma_odp_reg(struct srdma_mr *mr, u64 start, u64 length, int access)
{
	struct srdma_dev *sdev = to_sdev(mr->ibmr.device);
	struct ib_umem_odp *odp;
	int err;

	if (!IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING))
		return -EOPNOTSUPP;
	if (!start && length == U64_MAX)
		return -EOPNOTSUPP;	/* implicit */
	if (atomic64_add_return(length, &sdev->odp_bytes) >
	    (s64)odp_max_mb << 20) {
		srdma_dbg(sdev, "reg_mr: over odp_max_mb (%u MiB on demand)\n",
			  odp_max_mb);
		err = -ENOMEM;
		goto err_uncount;
	}
	odp = ib_umem_odp_get(mr->ibmr.device, start, length, access,
			      &srdma_odp_ops);
	if (IS_ERR(odp)) {
		err = PTR_ERR(odp);
		goto err_uncount;
	}
	mr->odp = odp;
	mr->umem = &odp->umem;
	mr->page_off = start & ~PAGE_MASK;
	mr->npages = (PAGE_ALIGN(start + length) - (start & PAGE_MASK)) >>
		     PAGE_SHIFT;
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_release;
	}
	mutex_lock(&odp->umem_mutex);
	odp->private = mr;
	mutex_unlock(&odp->umem_mutex);
	return 0;

err_release:
	ib_umem_odp_release(odp);
	mr->odp = NULL;
	mr->umem = NULL;
err_uncount:
	atomic64_sub(length, &sdev->odp_bytes);
	return err;
}

/**
 * srdma_odp_release() - Tear down what srdma_odp_reg() set up.
 * @mr: the MR, with no user left (deregistration waited for them)
 *
 * Context: Process context; sleeps.
 */
void srdma_odp_release(struct srdma_mr *mr)
{
	/* Removes the notifier: no invalidation runs after this. */
	ib_umem_odp_release(mr->odp);
	kvfree(mr->pages);
	mr->pages = NULL;
	mr->odp = NULL;
	mr->umem = NULL;
	atomic64_sub(mr->length, &to_sdev(mr->ibmr.device)->odp_bytes);
}

/*
 * Map the user range [@start, @end), within the umem and aligned to its
 * pages, and list its pages in pages[]. umem_mutex is held from the
 * mapping to the end of the listing: no invalidation comes between.
 */
static int srdma_odp_map(struct srdma_mr *mr, u64 start, u64 end, bool fault)
{
	struct ib_umem_odp *odp = mr->odp;
	u64 base = srdma_odp_base(mr), addr, access = ODP_READ_ALLOWED_BIT;
	u64 uend = PAGE_ALIGN(odp->umem.address + mr->length);
	bool writable = odp->umem.writable;
	unsigned long i, pfn_idx, dma_idx, n = 0;
	dma_addr_t dma;
	int ret;

	if (writable)
		access |= ODP_WRITE_ALLOWED_BIT;
	ret = ib_umem_odp_map_dma_and_lock(odp, start, end - start, access,
					   fault);
	if (ret < 0)
		return ret;
	spin_lock_bh(&mr->lock);
	for (addr = max(start, base); addr < end && addr < uend;
	     addr += PAGE_SIZE) {
		i = (addr - base) >> PAGE_SHIFT;
		pfn_idx = (addr - ib_umem_start(odp)) >> PAGE_SHIFT;
		dma_idx = (addr - ib_umem_start(odp)) >> odp->page_shift;
		if (i >= mr->npages)
			break;
		dma = odp->dma_list[dma_idx];
		/* Only with the access the MR needs: never a read-only page. */
		if (dma && (!writable || (dma & ODP_WRITE_ALLOWED_BIT)) &&
		    (odp->pfn_list[pfn_idx] & HMM_PFN_VALID))
			mr->pages[i] = hmm_pfn_to_page(odp->pfn_list[pfn_idx]);
		if (++n % SRDMA_ODP_LOCK_PAGES == 0) {
			spin_unlock_bh(&mr->lock);
			cond_resched();
			spin_lock_bh(&mr->lock);
		}
	}
	spin_unlock_bh(&mr->lock);
	mutex_unlock(&odp->umem_mutex);
	return 0;
}

/**
 * srdma_odp_fault() - Bring part of an on-demand paging MR in.
 * @mr: the MR, with a reference
 * @iova: the start of the range, in the MR's iova space
 * @len: its length, clipped to the MR
 * @fault: fault pages in; else map only those already present
 *
 * A page enters pages[] only with the access the MR needs: writable if
 * the MR has local write (a read-only mapping, such as the shared zero
 * page or a page shared after fork, is never written through the MR).
 * Large ranges are mapped a piece at a time.
 *
 * Context: Process context; sleeps. No spinlock held.
 * Return: 0, -EFAULT if the range is not in the MR, -EINTR if a fatal
 * signal came, or the error of faulting (-EFAULT for memory that is not
 * mapped, -EPERM for memory that cannot be written, -EBUSY if the range
 * kept changing).
 */
int srdma_odp_fault(struct srdma_mr *mr, u64 iova, u64 len, bool fault)
{
	struct ib_umem_odp *odp = mr->odp;
	u64 ustart = odp->umem.address, start, end, piece, next;
	int ret;

	if (iova < mr->iova || iova - mr->iova >= mr->length)
		return -EFAULT;
	len = min(len, mr->length - (iova - mr->iova));
	start = ustart + (iova - mr->iova);
	end = start + len;
	/* The umem's pages may be huge: map whole ones of them. */
	start = max_t(u64, ALIGN_DOWN(start, 1UL << odp->page_shift),
		      ib_umem_start(odp));
	end = min_t(u64, ALIGN(end, 1UL << odp->page_shift), ib_umem_end(odp));
	piece = max(SRDMA_ODP_FAULT_CHUNK, 1UL << odp->page_shift);
	for (; start < end; start = next) {
		next = end - start > piece ? start + piece : end;
		ret = srdma_odp_map(mr, start, next, fault);
		if (ret)
			return ret;
		if (next < end) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
	}
	srdma_count(to_sdev(mr->ibmr.device), SRDMA_CNT_ODP_FAULT);
	return 0;
}

/*
 * Fault in what a copy missed at [@iova, +@len) of @mr, and a span around
 * it: the next bytes are likely next. If that fails, the missing bytes
 * alone. Process context.
 * Return: 0, or the error of the fault of the missing bytes.
 */
static int srdma_odp_fault_missed(struct srdma_mr *mr, u64 iova, u32 len)
{
	u64 start, end;
	int err;

	/* Both within the MR: no overflow. srdma_odp_fault() clips. */
	start = max(ALIGN_DOWN(iova, SRDMA_ODP_FAULT_SPAN), mr->iova);
	end = iova + len;
	if (end - start < SRDMA_ODP_FAULT_SPAN)
		end = start + SRDMA_ODP_FAULT_SPAN;
	if (end < start)
		end = U64_MAX;
	err = srdma_odp_fault(mr, start, end - start, true);
	if (err && (start != iova || end - start != len))
		err = srdma_odp_fault(mr, iova, len, true);
	return err;
}

/*
 * The fault of [@iova, +@len) of @mr, queued for @role of @qp in its life
 * @epoch, ended with @err. A failure (memory not mapped, not writable) is
 * recorded for that role's next miss there; a success clears a failure
 * of the role recorded over those bytes; neither if the QP was reset
 * since. Errors that say nothing of the memory (busy, no memory, killed)
 * record nothing: the next miss faults again. QP lock held.
 */
static void srdma_odp_fault_done(struct srdma_qp *qp,
				 enum srdma_odp_role role, u32 epoch,
				 struct srdma_mr *mr, u64 iova, u32 len,
				 int err)
{
	struct srdma_odp_fail *fail = &qp->odp_fail[role];

	lockdep_assert_held(&qp->lock);
	if (err == -EBUSY || err == -ENOMEM || err == -EINTR)
		return;
	if (epoch != qp->odp_epoch)
		return;		/* an earlier life's: nothing of this one */
	if (!err) {
		if (fail->serial == mr->serial &&
		    iova < fail->end && iova + len > fail->start)
			fail->serial = 0;
	} else {
		fail->serial = mr->serial;
		fail->start = iova;
		fail->end = iova + len;
		fail->at = get_jiffies_64();
		srdma_dbg_qp(qp, "%s fault of %#llx+%u in MR %#x: %d\n",
			     role == SRDMA_ODP_REQ ? "requester" : "responder",
			     iova, len, mr->ibmr.lkey, err);
	}
}

/**
 * srdma_odp_qp_reset() - Forget the QP's failed faults.
 * @qp: the QP, moving to RESET
 *
 * A fault still queued for the QP's earlier life records nothing, and
 * the responder may queue one for its new life.
 *
 * Context: QP lock held.
 */
void srdma_odp_qp_reset(struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	qp->odp_fail[SRDMA_ODP_REQ].serial = 0;
	qp->odp_fail[SRDMA_ODP_RSP].serial = 0;
	qp->odp_rsp_queued = false;
	qp->odp_epoch++;
}

/*
 * A responder's fault, queued by srdma_odp_fault_later(). It holds no
 * reference on the QP, only its number and uid, by which it finds the
 * same QP again if it still exists.
 */
struct srdma_odp_work {
	struct work_struct work;
	struct srdma_mr *mr;		/* with a reference */
	u64 qp_uid;
	u64 iova;
	u32 qpn;
	u32 len;
	u32 epoch;			/* qp->odp_epoch when queued */
};

static void srdma_odp_work(struct work_struct *work)
{
	struct srdma_odp_work *w = container_of(work, struct srdma_odp_work,
						work);
	struct srdma_mr *mr = w->mr;
	struct srdma_qp *qp;
	int err;

	err = srdma_odp_fault_missed(mr, w->iova, w->len);
	qp = srdma_qp_get(w->qpn);
	if (qp) {
		if (qp->uid == w->qp_uid) {
			spin_lock_bh(&qp->lock);
			qp->odp_rsp_faults--;
			if (w->epoch == qp->odp_epoch)
				qp->odp_rsp_queued = false;
			srdma_odp_fault_done(qp, SRDMA_ODP_RSP, w->epoch, mr,
					     w->iova, w->len, err);
			/* A READ response may wait for this or any fault. */
			srdma_read_kick(qp);
			spin_unlock_bh(&qp->lock);
		}
		srdma_qp_put(qp);
	}
	srdma_mr_put(mr);
	kfree(w);
}

/**
 * srdma_odp_qp_work() - The fault a QP's requester queued, and its kick.
 * @work: the QP's odp_work
 *
 * Context: process context (srdma_wq); takes the QP lock.
 */
void srdma_odp_qp_work(struct work_struct *work)
{
	struct srdma_qp *qp = container_of(work, struct srdma_qp, odp_work);
	enum srdma_odp_kick kick;
	struct srdma_mr *mr;
	u32 len, epoch;
	u64 iova;
	int err;

	spin_lock_bh(&qp->lock);
	mr = qp->odp_mr;
	iova = qp->odp_iova;
	len = qp->odp_len;
	epoch = qp->odp_epoch_queued;
	kick = qp->odp_kick;
	qp->odp_mr = NULL;
	qp->odp_queued = false;
	spin_unlock_bh(&qp->lock);

	err = srdma_odp_fault_missed(mr, iova, len);
	spin_lock_bh(&qp->lock);
	srdma_odp_fault_done(qp, SRDMA_ODP_REQ, epoch, mr, iova, len, err);
	if (kick == SRDMA_ODP_KICK_RESEND)
		srdma_req_resend_now(qp);
	else
		srdma_req_run_pinned(qp);
	spin_unlock_bh(&qp->lock);
	srdma_mr_put(mr);
	srdma_qp_put(qp);	/* the queue's: @qp may go now */
}

/*
 * The requester of @qp missed [@iova, +@len) of @mr: queue its fault work,
 * unless it is queued already (then it is run again or sends again after
 * that fault, and misses again if this range is still missing). QP lock
 * held.
 */
static void srdma_odp_qp_fault(struct srdma_qp *qp, struct srdma_mr *mr,
			       u64 iova, u32 len, enum srdma_odp_kick kick)
{
	lockdep_assert_held(&qp->lock);
	if (qp->odp_queued) {
		if (kick == SRDMA_ODP_KICK_RESEND)
			qp->odp_kick = kick;
		return;
	}
	if (!refcount_inc_not_zero(&mr->ref))
		return;
	if (!refcount_inc_not_zero(&qp->ref)) {
		srdma_mr_put(mr);
		return;
	}
	qp->odp_mr = mr;
	qp->odp_iova = iova;
	qp->odp_len = len;
	qp->odp_epoch_queued = qp->odp_epoch;
	qp->odp_kick = kick;
	qp->odp_queued = true;
	queue_work(srdma_wq, &qp->odp_work);
}

/*
 * Did the last fault for @role of @qp fail from byte @iova of @mr on,
 * lately? Then that is reported now, once: the memory may be mapped again
 * later. Only a miss at the same byte reports it: a request sent again
 * misses where it missed before (a WRITE's packet, a READ's response, an
 * atomic), and another request of the same role whose first missing byte
 * lies elsewhere in that range (its own pages may come in) faults for
 * itself. QP lock held.
 */
static bool srdma_odp_failed(struct srdma_qp *qp, enum srdma_odp_role role,
			     struct srdma_mr *mr, u64 iova)
{
	struct srdma_odp_fail *fail = &qp->odp_fail[role];

	lockdep_assert_held(&qp->lock);
	if (!fail->serial)
		return false;
	if (time_after64(get_jiffies_64(), fail->at + SRDMA_ODP_FAIL_TTL)) {
		fail->serial = 0;
		return false;
	}
	if (fail->serial != mr->serial || iova != fail->start)
		return false;
	fail->serial = 0;
	return true;
}

/**
 * srdma_odp_fault_later() - Queue a fault for bytes a copy found missing.
 * @qp: the QP that missed them
 * @mr: the on-demand paging MR (a reference is taken)
 * @iova: the first byte missed
 * @len: how many
 * @kick: what to do for @qp once the fault is done
 *
 * If the last fault for this role of @qp failed in @iova (not mapped, not
 * writable), nothing is queued: the miss is an access error. Else a fault
 * is queued. A requester (@kick other than SRDMA_ODP_KICK_NONE) stopped,
 * and only its fault work starts it again: that work is the QP's own,
 * queued once at a time. A responder answered with an RNR NAK and its
 * requester sends again: nothing is queued while a fault for the
 * responder is queued or running in this life of @qp (or
 * SRDMA_ODP_QP_FAULTS of any), or if there is no memory; a miss after
 * that queues one.
 *
 * Context: Any context; the QP lock held.
 * Return: -EFAULT for an access error, else -EAGAIN (try again once the
 * fault is done).
 */
int srdma_odp_fault_later(struct srdma_qp *qp, struct srdma_mr *mr,
			  u64 iova, u32 len, enum srdma_odp_kick kick)
{
	enum srdma_odp_role role = kick == SRDMA_ODP_KICK_NONE ?
				   SRDMA_ODP_RSP : SRDMA_ODP_REQ;
	struct srdma_odp_work *w;

	lockdep_assert_held(&qp->lock);
	srdma_count(to_sdev(mr->ibmr.device), SRDMA_CNT_ODP_MISS);
	if (!mr->odp)
		return -EAGAIN;
	if (srdma_odp_failed(qp, role, mr, iova))
		return -EFAULT;
	if (role == SRDMA_ODP_REQ) {
		srdma_odp_qp_fault(qp, mr, iova, len, kick);
		return -EAGAIN;
	}
	/* Only kernel MRs reach QP 1, never on demand: not found again. */
	if (WARN_ON_ONCE(qp->ibqp.qp_type == IB_QPT_GSI))
		return -EAGAIN;
	if (qp->odp_rsp_queued || qp->odp_rsp_faults >= SRDMA_ODP_QP_FAULTS)
		return -EAGAIN;
	w = kzalloc(sizeof(*w), GFP_ATOMIC);
	if (!w)
		return -EAGAIN;
	if (!refcount_inc_not_zero(&mr->ref))
		goto out_free;
	w->mr = mr;
	w->qp_uid = qp->uid;
	w->qpn = qp->ibqp.qp_num;
	w->iova = iova;
	w->len = len;
	w->epoch = qp->odp_epoch;
	qp->odp_rsp_queued = true;
	qp->odp_rsp_faults++;
	INIT_WORK(&w->work, srdma_odp_work);
	queue_work(srdma_wq, &w->work);
	return -EAGAIN;

out_free:
	kfree(w);
	return -EAGAIN;
}

/**
 * srdma_advise_mr() - ib_device_ops.advise_mr: prefetch on-demand pages.
 * @ibpd: the PD the SGEs' MRs must belong to
 * @advice: PREFETCH (read), PREFETCH_WRITE or PREFETCH_NO_FAULT (map only
 *	    what is present)
 * @flags: IB_UVERBS_ADVISE_MR_FLAG_FLUSH or 0; srdma always prefetches
 *	   before it returns
 * @sg_list: the ranges, by lkey
 * @num_sge: how many
 * @attrs: unused
 *
 * Context: Process context; sleeps.
 * Return: 0; -EINVAL for an unknown advice, or an SGE that names no
 * on-demand MR of @ibpd or a range outside it; -EFAULT for memory that
 * cannot be faulted in.
 */
int srdma_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct srdma_dev *sdev = to_sdev(ibpd->device);
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	struct srdma_mr *mr;
	int err = 0;
	u32 i;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EINVAL;
	for (i = 0; i < num_sge && !err; i++) {
		mr = srdma_mr_get(sdev, sg_list[i].lkey, false);
		if (!mr) {
			srdma_dbg(sdev, "advise_mr: no MR of lkey %#x\n",
				  sg_list[i].lkey);
			return -EINVAL;
		}
		if (!mr->odp || mr->ibmr.pd != ibpd ||
		    srdma_mr_range_ok(mr, sg_list[i].addr, sg_list[i].length,
				      0)) {
			srdma_dbg_mr(mr, "advise_mr: %#llx+%u refused\n",
				     sg_list[i].addr, sg_list[i].length);
			err = -EINVAL;
		} else if (sg_list[i].length) {
			err = srdma_odp_fault(mr, sg_list[i].addr,
					      sg_list[i].length, fault);
		}
		srdma_mr_put(mr);
	}
	return err;
}

/**
 * srdma_odp_query() - The on-demand paging capabilities, for query_device.
 * @attr: the attributes being filled in
 *
 * RC and XRC: SEND, RECV (also through an SRQ), WRITE, READ and atomics;
 * UD: SEND and RECV. No implicit MRs.
 */
void srdma_odp_query(struct ib_device_attr *attr)
{
	u32 rc = IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		 IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		 IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;

	if (!IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING))
		return;
	attr->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	attr->odp_caps.general_caps = IB_ODP_SUPPORT;
	attr->odp_caps.per_transport_caps.rc_odp_caps = rc;
	attr->odp_caps.per_transport_caps.xrc_odp_caps = rc;
	attr->odp_caps.per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND |
							 IB_ODP_SUPPORT_RECV |
							 IB_ODP_SUPPORT_SRQ_RECV;
}
